//! Edge programs on the streaming engine (CLIP ATC'17): one vertex array per
//! value, edges streamed block by block.
//!
//! * Relaxation programs (bfs, sssp, label propagation) keep one word per vertex
//!   and relax in place ([`super::relax`]); a target lowered in a loaded block's
//!   source interval re-enters the block (§3.1), so later levels run in the same
//!   pass. A [`EdgeProgram::both_directions`] program also relaxes each edge's
//!   source from its target, and streams every edge again after an iteration
//!   that changed a value (a label must reach sources that are not active).
//! * Every other program is synchronous: the active sources' messages are
//!   computed before the pass into an array (`messages`, 8 bytes a vertex; or,
//!   for [`EdgeProgram::message_from_value`] programs, read from the value at
//!   each edge), the pass combines contributions into `sums` (8 bytes, atomic
//!   `combine`), then a
//!   vertex pass applies them, adds the aggregates in vertex order (compensated,
//!   chunk by chunk, so every thread count gives the same totals) and computes
//!   the next messages. No edge function activates, so no block is re-entered:
//!   each edge acts once per iteration. Out-degrees (4 bytes) are read when the
//!   program uses them ([`EdgeProgram::uses_degrees`]).

use super::relax::{self, Refused, Word};
use super::{word, Aggregates, EdgeProgram, Globals, ProgramRunner, Sums};
use crate::error::{EngineError, Result};
use crate::stream::{prefetch, Mode, StreamEngine};
use outcore_state::VertexArray;
use rayon::prelude::*;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// Vertices per chunk of the vertex passes (the unit aggregates are summed by).
const CHUNK: usize = 1 << 14;

impl ProgramRunner for StreamEngine<'_> {
    fn run_program<P: EdgeProgram>(&mut self, prog: &P) -> Result<VertexArray<P::Out>> {
        if prog.weighted() {
            self.with_weights(true);
        }
        if prog.relaxes() {
            match std::mem::size_of::<P::V>() {
                4 => relax_run::<P, u32>(self, prog),
                8 => relax_run::<P, u64>(self, prog),
                n => Err(EngineError::Invalid(format!(
                    "{}: a relaxation program's value is 4 or 8 bytes, not {n}",
                    prog.name()
                ))),
            }
        } else {
            sync_run(self, prog)
        }
    }
    fn iterations(&self) -> u64 {
        self.program_iterations
    }
    fn both_directions(&self) -> bool {
        true
    }
}

/// The bytes per vertex a program holds on the streaming engine: its value, and
/// for synchronous programs the messages, the sums and the out-degrees.
pub fn stream_bytes_per_vertex<P: EdgeProgram>(prog: &P) -> u64 {
    let v = std::mem::size_of::<P::V>() as u64;
    if prog.relaxes() {
        v
    } else {
        v + 8
            + if prog.message_from_value() { 0 } else { 8 }
            + if prog.uses_degrees() { 4 } else { 0 }
    }
}

fn relax_run<P: EdgeProgram, W: Word>(
    e: &mut StreamEngine,
    prog: &P,
) -> Result<VertexArray<P::Out>> {
    let st = e.alloc::<W>(prog.name(), W::from_u64(0))?;
    {
        let a = st.atomic();
        let eng = &*e;
        eng.vmap(|v| {
            let (x, act) = relax::init_word(prog, v);
            W::store(&a[v as usize], x);
            if act {
                eng.activate(v);
            }
        });
    }
    let both = prog.both_directions();
    let refused = Refused::default();
    let mut done = 0u64;
    while prog.proceed(done, &[0.0; 4], e.active_count()) {
        let a = st.atomic();
        e.exec_ahead(
            Mode::Multi,
            |v| prefetch(a, v),
            |ctx, u, v, w| {
                let m = relax::message::<P, W>(prog, a, u);
                if !relax::relax::<P, W>(prog, a, m, u, v, w, |x| ctx.activate(x)) {
                    refused.record(u, v, w);
                    return;
                }
                if both {
                    let m = relax::message::<P, W>(prog, a, v);
                    relax::relax::<P, W>(prog, a, m, v, u, w, |x| ctx.activate(x));
                }
            },
        )?;
        done += 1;
        refused.check(prog.name())?;
        if both && e.has_active() {
            e.activate_all();
        }
    }
    e.program_iterations = done;
    Ok(st.map_into(|x| {
        let mut val: P::V = bytemuck::Zeroable::zeroed();
        super::set_word(&mut val, word(x));
        prog.output(&val)
    }))
}

fn sync_run<P: EdgeProgram>(e: &mut StreamEngine, prog: &P) -> Result<VertexArray<P::Out>> {
    let deg = if prog.uses_degrees() {
        let mut d = e.alloc::<u32>("out-degree", 0)?;
        e.store().degrees_into("out", &mut d)?;
        Some(d)
    } else {
        None
    };
    let mut vals = e.alloc::<P::V>(prog.name(), bytemuck::Zeroable::zeroed())?;
    let msgs = if prog.message_from_value() {
        None
    } else {
        Some(e.alloc::<u64>("messages", 0)?)
    };
    let mut sums = e.alloc::<u64>("sums", 0)?;
    let refused = Refused::default();
    let d = |u: u32| deg.as_ref().map_or(0, |d| d[u as usize]);

    let (prev, mut active) = vertex_pass(e, prog, &mut vals, &mut sums, &msgs, &deg, None);
    let mut g = Globals { iteration: 0, prev };
    let mut done = 0u64;
    while prog.proceed(done, &g.prev, active) {
        g.iteration = done + 1;
        {
            let s = sums.atomic();
            let edge = |u: u32, v: u32, w: f32, m: u64| match prog.edge(m, u, w) {
                Some(c) => combine_atomic(prog, &s[v as usize], c),
                None => refused.record(u, v, w),
            };
            match &msgs {
                Some(m) => {
                    let m = m.atomic();
                    e.exec_ahead(
                        Mode::Multi,
                        |v| prefetch(s, v),
                        |_, u, v, w| edge(u, v, w, m[u as usize].load(Relaxed)),
                    )?
                }
                None => {
                    let vals = &vals;
                    e.exec_ahead(
                        Mode::Multi,
                        |v| prefetch(s, v),
                        |_, u, v, w| edge(u, v, w, prog.message(&vals[u as usize], d(u))),
                    )?
                }
            };
        }
        refused.check(prog.name())?;
        done += 1;
        (g.prev, active) = vertex_pass(e, prog, &mut vals, &mut sums, &msgs, &deg, Some(&g));
    }
    e.program_iterations = done;
    drop((msgs, sums, deg));
    Ok(vals.map_into(|x| prog.output(x)))
}

/// One parallel pass over the vertices: `init` (without `g`) or `apply` (with
/// the iteration's globals); the sums reset to the identity (written in order,
/// so the edge pass does not fault lazily zeroed pages in at random); the
/// messages of the active vertices computed (when the program keeps them) and
/// the vertices made active. Returns the aggregates, added chunk by chunk in
/// vertex order, and the active count.
fn vertex_pass<P: EdgeProgram>(
    e: &StreamEngine,
    prog: &P,
    vals: &mut [P::V],
    sums: &mut [u64],
    msgs: &Option<VertexArray<u64>>,
    deg: &Option<VertexArray<u32>>,
    g: Option<&Globals>,
) -> (Aggregates, u64) {
    let all = prog.all_active();
    let id = prog.identity();
    let msgs = msgs.as_ref().map(|m| m.atomic());
    let d = |v: usize| deg.as_ref().map_or(0, |d| d[v]);
    let parts: Vec<(Sums, u64)> = e.pool().install(|| {
        vals.par_chunks_mut(CHUNK)
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
                            e.activate(v as u32);
                        }
                    }
                }
                (s, count)
            })
            .collect()
    });
    merge(e, all, &parts)
}

/// The chunks' aggregates added in chunk order, and the active vertices counted
/// (all made active for an all-active program; the others were set by the pass).
fn merge(e: &StreamEngine, all: bool, parts: &[(Sums, u64)]) -> (Aggregates, u64) {
    let mut total = Sums::default();
    for (s, _) in parts {
        total.merge(s);
    }
    if all {
        e.activate_all();
    }
    (total.total(), parts.iter().map(|p| p.1).sum())
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
