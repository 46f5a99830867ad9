//! Weakly connected components in one pass with a disjoint-set forest (CLIP
//! ATC'17 §3.2 and §4.4, Algorithm 2): a beyond-neighborhood algorithm — the
//! union of `u` and `v` follows parent pointers to arbitrary vertices.
//!
//! CLIP's two locality rules are kept: the smaller root becomes the parent, and
//! blocks stream row-major. Unions are lock-free (compare-and-swap on the larger
//! root, finds with path halving), so the pass may run on many threads; every
//! root is its set's smallest id, so the labels are the same for any order or
//! thread count. Edge direction is ignored. A final sweep in ascending id order
//! flattens the forest (a parent always has a smaller id than its child).
//!
//! Afforest's skip (Sutton, Ben-Nun and Barak, IPDPS'18), adapted to a grid:
//! the pass streams the rows in three groups (1/16, 3/16, 3/4 of them); before
//! the second and the third the forest is flattened, the set holding most of
//! 1024 evenly spaced vertices is taken as the giant one and its vertices are
//! marked in a bitmap, and an edge with both ends marked is skipped — they are
//! in one set already, and sets only grow. Most edges of a small-world graph
//! lie inside the giant set (Kronecker 24: 33.7M of 268M edges unioned). The
//! grid is still read once, whole: the skip saves the finds, not the reads.

use crate::{Output, Params, Result, Run};
use outcore_engine::{prefetch, BlockOrder, Mode, StreamEngine};
use outcore_state::AtomicBitmap;
use std::sync::atomic::{AtomicU32, Ordering::Relaxed};

#[inline]
fn find(pa: &[AtomicU32], mut x: u32) -> u32 {
    loop {
        let p = pa[x as usize].load(Relaxed);
        if p == x {
            return x;
        }
        let g = pa[p as usize].load(Relaxed);
        if g != p {
            // Path halving: x skips to its grandparent. x is not a root (and never
            // will be again), and every value stored into a non-root is one of its
            // ancestors, so a plain store is safe even if another thread halved the
            // same path meanwhile: either value is a valid, smaller parent.
            pa[x as usize].store(g, Relaxed);
        }
        x = g;
    }
}

/// Joins the sets of `u` and `v`; the larger root points to the smaller.
#[inline]
pub fn union(pa: &[AtomicU32], u: u32, v: u32) {
    let (mut a, mut b) = (u, v);
    loop {
        a = find(pa, a);
        b = find(pa, b);
        if a == b {
            return;
        }
        let (hi, lo) = if a > b { (a, b) } else { (b, a) };
        if pa[hi as usize]
            .compare_exchange(hi, lo, Relaxed, Relaxed)
            .is_ok()
        {
            return;
        }
    }
}

/// Points every vertex at its root (its set's smallest id) and returns the number
/// of sets: in ascending order, a parent is smaller and already final.
pub fn flatten(pa: &mut [u32]) -> u64 {
    let mut components = 0u64;
    for v in 0..pa.len() {
        let p = pa[v] as usize;
        if p == v {
            components += 1;
        } else {
            pa[v] = pa[p];
        }
    }
    components
}

/// The grid rows after which the giant component is looked for, as fractions
/// of the rows (numerator, denominator): after 1/16 and after 1/4 of them.
const LOOKS: [(u32, u32); 2] = [(1, 16), (1, 4)];
/// Vertices sampled (evenly spaced) to find the giant component's root.
const SAMPLES: u32 = 1024;

/// Points every vertex at its root and marks in `giant` the vertices of the
/// largest set among [`SAMPLES`] evenly spaced vertices; no union runs
/// meanwhile. Returns how many vertices are marked.
fn look(e: &StreamEngine, pa: &[AtomicU32], giant: &AtomicBitmap) -> u64 {
    let n = e.vertices();
    e.vmap(|v| {
        let r = find(pa, v);
        pa[v as usize].store(r, Relaxed);
    });
    let k = SAMPLES.min(n);
    let mut roots: Vec<u32> = (0..k)
        .map(|i| pa[(i as u64 * n as u64 / k as u64) as usize].load(Relaxed))
        .collect();
    roots.sort_unstable();
    let Some(c) = roots
        .chunk_by(|a, b| a == b)
        .max_by_key(|run| run.len())
        .map(|run| run[0])
    else {
        return 0;
    };
    giant.clear_all();
    e.vmap(|v| {
        if pa[v as usize].load(Relaxed) == c {
            giant.set(v);
        }
    });
    giant.count()
}

/// One pass over the grid; before the rows at 1/16 and at 1/4 of them the
/// vertices of the largest set so far are marked (Afforest's
/// sampling, Sutton et al. IPDPS'18, with the first rows as the sample), and
/// an edge between two marked vertices is skipped: both ends already are in
/// one set, a set only grows. The labels do not depend on it. The mark bitmap
/// (1 bit a vertex) comes from the budget; without room, or with the blocks in
/// column-major order, the pass unions every edge.
pub fn run(e: &mut StreamEngine, _p: &Params) -> Result<Run> {
    let mut pa = e.alloc::<u32>("parent", 0)?;
    {
        let a = pa.atomic();
        e.vmap(|v| a[v as usize].store(v, Relaxed));
    }
    let n = e.vertices();
    let bitmap_bytes = (n as u64).div_ceil(64) * 8;
    // Rows in order (the configured block order may be column-major).
    let rows_in_order = e.config().order == BlockOrder::RowMajor;
    let giant =
        (rows_in_order && e.budget().take(bitmap_bytes)).then(|| AtomicBitmap::new(n as usize));
    e.activate_all();
    let mut marked = 0;
    {
        let a = pa.atomic();
        match &giant {
            Some(g) => {
                let p = e.store().partitions();
                let cuts: Vec<u32> = LOOKS.iter().map(|&(x, y)| p * x / y).collect();
                // Each target's parent slot is prefetched AHEAD edges early:
                // the targets are random within the block's column interval.
                e.exec_cuts(
                    Mode::Multi,
                    &cuts,
                    |v| prefetch(a, v),
                    |_, u, v, _| {
                        if !(g.get(u) && g.get(v)) {
                            union(a, u, v)
                        }
                    },
                    |e, _| {
                        marked = look(e, a, g);
                        Ok(())
                    },
                )?;
                e.budget().give_back(bitmap_bytes);
            }
            None => {
                e.exec_ahead(Mode::Multi, |v| prefetch(a, v), |_, u, v, _| union(a, u, v))?;
            }
        }
    }
    let components = flatten(&mut pa);
    Ok(Run {
        output: Output::Labels(pa),
        iterations: 1,
        summary: format!(
            "{components} components (edges among the {marked} vertices of the largest sampled set skipped)"
        ),
    })
}
