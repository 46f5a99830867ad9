//! What the engines holding every value in memory (the streaming and jobs
//! engines) share for synchronous programs: the vertex pass between edge
//! passes, and `combine` as an atomic update.

use super::{Aggregates, EdgeProgram, Globals, Sums};
use rayon::prelude::*;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// Vertices per chunk of the vertex passes (the unit aggregates are summed by).
pub(crate) const CHUNK: usize = 1 << 14;

/// One parallel pass over the vertices (in the current rayon pool): `init`
/// (without `g`) or `apply` (with the iteration's globals); the sums reset to
/// the identity (written in order, so the edge pass does not fault lazily
/// zeroed pages in at random); the messages of the active vertices computed
/// (when the program keeps them: `msgs`) and, unless every vertex is active
/// (the caller then activates all), `activate(v)` for each. Returns the
/// aggregates, added chunk by chunk in vertex order, so every thread count gives
/// the same totals, and the active count.
pub(crate) fn vertex_pass<P: EdgeProgram>(
    prog: &P,
    vals: &mut [P::V],
    sums: &mut [u64],
    msgs: Option<&[AtomicU64]>,
    deg: Option<&[u32]>,
    g: Option<&Globals>,
    activate: impl Fn(u32) + Sync,
) -> (Aggregates, u64) {
    let all = prog.all_active();
    let id = prog.identity();
    let d = |v: usize| deg.map_or(0, |d| d[v]);
    let parts: Vec<(Sums, u64)> = vals
        .par_chunks_mut(CHUNK)
        .zip(sums.par_chunks_mut(CHUNK))
        .enumerate()
        .map(|(c, (vs, ss))| {
            let v0 = c * CHUNK;
            let mut s = Sums::default();
            let mut count = 0u64;
            for i in 0..vs.len() {
                let v = v0 + i;
                let mut one: Aggregates = [0.0; 4];
                let act = match g {
                    Some(g) => prog.apply(g, &mut vs[i], ss[i], d(v), &mut one),
                    None => {
                        let (x, act) = prog.init(v as u32, d(v), &mut one);
                        vs[i] = x;
                        act
                    }
                };
                s.add(&one);
                ss[i] = id;
                if act || all {
                    if let Some(m) = msgs {
                        m[v].store(prog.message(&vs[i], d(v)), Relaxed);
                    }
                    count += 1;
                    if !all {
                        activate(v as u32);
                    }
                }
            }
            (s, count)
        })
        .collect();
    let mut total = Sums::default();
    for (s, _) in &parts {
        total.merge(s);
    }
    (total.total(), parts.iter().map(|p| p.1).sum())
}

/// `combine(*a, x)` stored into `a` by a thread that is the only one writing
/// `a` now ([`crate::Mode::Columns`]): a plain load and store, no
/// read-modify-write (nothing is written when the value does not change).
#[inline(always)]
pub(crate) fn combine_exclusive<P: EdgeProgram>(p: &P, a: &AtomicU64, x: u64) {
    let cur = a.load(Relaxed);
    let new = p.combine(cur, x);
    if new != cur {
        a.store(new, Relaxed);
    }
}

/// `combine(*a, x)` stored into `a` (compare-and-swap loop; nothing is written
/// when the value does not change).
#[inline(always)]
pub(crate) fn combine_atomic<P: EdgeProgram>(p: &P, a: &AtomicU64, x: u64) {
    let mut cur = a.load(Relaxed);
    loop {
        let new = p.combine(cur, x);
        if new == cur {
            return;
        }
        match a.compare_exchange_weak(cur, new, Relaxed, Relaxed) {
            Ok(_) => return,
            Err(c) => cur = c,
        }
    }
}
