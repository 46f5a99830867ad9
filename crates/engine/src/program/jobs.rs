//! Edge programs as jobs of the concurrent-jobs engine (GraphCP FCS'24 §3.6):
//! each job its own vertex arrays, edges shared with the other jobs.
//!
//! * Relaxation programs relax in place ([`super::relax`]) and take future
//!   updates (§3.4): a relaxation that reads a value newer than the previous
//!   iteration's only converges sooner, and the fixed point is unique, so a job's
//!   answer equals the streaming engine's and its own single-job run.
//! * Every other program is synchronous (BSP, as LDBC Graphalytics defines
//!   PageRank): the messages of the previous iteration, the sums of this one
//!   (atomic `combine`, or a plain load and store when the engine runs a
//!   sub-block as one task of its own: [`Job::exclusive_targets`]), and at the
//!   end of the iteration a parallel pass that applies, adds the aggregates in
//!   vertex order and computes the next messages.

use super::relax::{self, Refused, Word};
use super::sync::{combine_atomic, vertex_pass, CHUNK};
use super::{set_word, word, Aggregates, EdgeProgram, Globals};
use crate::error::{EngineError, Result};
use crate::jobs::{Job, JobCtx, Task};
use crate::stream::{prefetch, prefetch_each};
use outcore_state::{AtomicBitmap, StateBudget, VertexArray};
use rayon::prelude::*;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::Arc;

/// A job running an edge program, which hands back its result at the end.
pub trait ProgramJob<Out: bytemuck::Pod>: Job {
    /// The result per vertex in dense order.
    fn into_output(self: Box<Self>) -> VertexArray<Out>;
}

/// Turns a refused edge into the job's error message (the caller names the
/// vertices in the user's ids).
pub type DescribeRefusal = Box<dyn Fn(&EngineError) -> String + Send + Sync>;

/// The job of `prog` on `n` vertices, its arrays from `budget`; `degrees` are
/// the store's out-degrees (read by synchronous programs only).
pub fn program_job<P: EdgeProgram + Send + 'static>(
    prog: P,
    n: usize,
    budget: &StateBudget,
    degrees: impl FnOnce() -> Result<Arc<VertexArray<u32>>>,
    describe: DescribeRefusal,
) -> Result<Box<dyn ProgramJob<P::Out>>> {
    super::needs_destination(&prog, "jobs")?;
    if !prog.relaxes() {
        let name = prog.name();
        return Ok(Box::new(SyncJob {
            deg: degrees()?,
            vals: budget.alloc(name, n, bytemuck::Zeroable::zeroed())?,
            msgs: budget.alloc("messages", n, 0)?,
            sums: budget.alloc("sums", n, prog.identity())?,
            globals: Globals::default(),
            refused: Refused::default(),
            describe,
            prog,
        }));
    }
    match std::mem::size_of::<P::V>() {
        4 => Ok(Box::new(RelaxJob::<P, u32> {
            words: budget.alloc(prog.name(), n, 0)?,
            refused: Refused::default(),
            describe,
            changed: AtomicBool::new(false),
            prog,
        })),
        8 => Ok(Box::new(RelaxJob::<P, u64> {
            words: budget.alloc(prog.name(), n, 0)?,
            refused: Refused::default(),
            describe,
            changed: AtomicBool::new(false),
            prog,
        })),
        k => Err(EngineError::Invalid(format!(
            "{}: a relaxation program's value is 4 or 8 bytes, not {k}",
            prog.name()
        ))),
    }
}

/// `f(v, w)` for every target of a run (weight 1 when the run has none).
#[inline(always)]
fn each_edge(dsts: &[u32], ws: Option<&[f32]>, mut f: impl FnMut(u32, f32)) {
    match ws {
        Some(ws) => dsts.iter().zip(ws).for_each(|(&v, &w)| f(v, w)),
        None => dsts.iter().for_each(|&v| f(v, 1.0)),
    }
}

/// The job's error when the program refused an edge this iteration.
fn refusal<P: EdgeProgram>(
    r: &Refused,
    p: &P,
    describe: &DescribeRefusal,
) -> std::result::Result<(), String> {
    r.check(p.name()).map_err(|e| describe(&e))
}

struct RelaxJob<P, W: Word> {
    prog: P,
    words: VertexArray<W>,
    refused: Refused,
    describe: DescribeRefusal,
    /// A value dropped this iteration (the engine may take a vertex activated
    /// and processed ahead out of `next`, so `next` alone cannot tell).
    changed: AtomicBool,
}

impl<P: EdgeProgram + Send, W: Word> Job for RelaxJob<P, W> {
    fn write_back(&self) -> std::io::Result<()> {
        self.words.write_back()
    }
    fn future_updates(&self) -> bool {
        true
    }
    fn weighted(&self) -> bool {
        self.prog.weighted()
    }
    fn init(&mut self, active: &AtomicBitmap) {
        let (prog, a) = (&self.prog, self.words.atomic());
        (0..a.len())
            .into_par_iter()
            .with_min_len(CHUNK)
            .for_each(|v| {
                let (x, act) = relax::init_word(prog, v as u32);
                W::store(&a[v], x);
                if act {
                    active.set(v as u32);
                }
            });
    }
    fn ahead(&self, dsts: &[u32]) {
        prefetch_each(self.words.atomic(), dsts);
    }
    fn ahead_source(&self, u: u32) {
        prefetch(self.words.atomic(), u);
    }
    fn edges(&self, ctx: &JobCtx, u: u32, dsts: &[u32], ws: Option<&[f32]>) {
        let (p, a) = (&self.prog, self.words.atomic());
        let m = relax::message::<P, W>(p, a, u);
        let both = p.both_directions();
        let activate = |x: u32| {
            ctx.activate(x);
            if both && !self.changed.load(Relaxed) {
                self.changed.store(true, Relaxed);
            }
        };
        let one = |v: u32, w: f32| {
            if !relax::relax::<P, W>(p, a, m, u, v, w, activate) {
                self.refused.record(u, v, w);
            } else if both {
                let mv = relax::message::<P, W>(p, a, v);
                relax::relax::<P, W>(p, a, mv, v, u, w, activate);
            }
        };
        each_edge(dsts, ws, one);
    }
    fn end_iteration(
        &mut self,
        iteration: u64,
        next: &AtomicBitmap,
    ) -> std::result::Result<bool, String> {
        refusal(&self.refused, &self.prog, &self.describe)?;
        let mut active = next.count();
        // A label must also reach sources that are not active: every edge again
        // after an iteration that changed one.
        if self.prog.both_directions() && self.changed.swap(false, Relaxed) {
            next.set_all();
            active = next.count();
        }
        Ok(!self.prog.proceed(iteration, &[0.0; 4], active))
    }
}

impl<P: EdgeProgram + Send, W: Word> ProgramJob<P::Out> for RelaxJob<P, W> {
    fn into_output(self: Box<Self>) -> VertexArray<P::Out> {
        let this = *self;
        let prog = this.prog;
        this.words.map_into(|x| {
            let mut val: P::V = bytemuck::Zeroable::zeroed();
            set_word(&mut val, word(x));
            prog.output(&val)
        })
    }
}

struct SyncJob<P: EdgeProgram> {
    prog: P,
    deg: Arc<VertexArray<u32>>,
    vals: VertexArray<P::V>,
    msgs: VertexArray<u64>,
    sums: VertexArray<u64>,
    globals: Globals,
    refused: Refused,
    describe: DescribeRefusal,
}

impl<P: EdgeProgram> SyncJob<P> {
    /// [`vertex_pass`] (`apply` after an iteration, else `init`), its active
    /// vertices set in `active`.
    fn pass(&mut self, apply: bool, active: &AtomicBitmap) -> (Aggregates, u64) {
        let g = apply.then_some(&self.globals);
        let (msgs, deg) = (Some(self.msgs.atomic()), Some(&self.deg[..]));
        let r = vertex_pass(
            &self.prog,
            &mut self.vals,
            &mut self.sums,
            msgs,
            deg,
            g,
            |v| {
                active.set(v);
            },
        );
        if self.prog.all_active() {
            active.set_all();
        }
        r
    }
}

impl<P: EdgeProgram + Send> Job for SyncJob<P> {
    fn write_back(&self) -> std::io::Result<()> {
        self.vals.write_back()?;
        self.msgs.write_back()?;
        self.sums.write_back()
    }
    fn weighted(&self) -> bool {
        self.prog.weighted()
    }
    fn init(&mut self, active: &AtomicBitmap) {
        let (prev, _) = self.pass(false, active);
        self.globals.prev = prev;
    }
    fn ahead(&self, dsts: &[u32]) {
        prefetch_each(self.sums.atomic(), dsts);
    }
    fn ahead_source(&self, u: u32) {
        prefetch(&self.msgs, u);
    }
    fn exclusive_targets(&self) -> bool {
        true
    }
    fn edges(&self, _: &JobCtx, u: u32, dsts: &[u32], ws: Option<&[f32]>) {
        let (p, s) = (&self.prog, self.sums.atomic());
        let m = self.msgs[u as usize];
        let one = |v: u32, w: f32| match p.edge(m, u, w) {
            Some(c) => combine_atomic(p, &s[v as usize], c),
            None => self.refused.record(u, v, w),
        };
        each_edge(dsts, ws, one);
    }
    fn task(&self, ctx: &JobCtx, t: &Task) -> u64 {
        let (p, s) = (&self.prog, self.sums.atomic());
        t.for_each(
            |u| self.ahead_source(u),
            |d| self.ahead(d),
            |u, dsts, ws| {
                if !t.exclusive {
                    return self.edges(ctx, u, dsts, ws);
                }
                // No other task adds to these targets meanwhile: a plain load and
                // store (still through the atomic type, so there is no data race)
                // instead of a compare-and-swap loop per edge.
                let m = self.msgs[u as usize];
                let one = |v: u32, w: f32| match p.edge(m, u, w) {
                    Some(c) => {
                        let x = &s[v as usize];
                        x.store(p.combine(x.load(Relaxed), c), Relaxed);
                    }
                    None => self.refused.record(u, v, w),
                };
                each_edge(dsts, ws, one);
            },
        )
    }
    fn end_iteration(
        &mut self,
        iteration: u64,
        next: &AtomicBitmap,
    ) -> std::result::Result<bool, String> {
        refusal(&self.refused, &self.prog, &self.describe)?;
        self.globals.iteration = iteration;
        // What the edge functions activated does not count: apply decides.
        next.clear_all();
        let (prev, active) = self.pass(true, next);
        self.globals.prev = prev;
        Ok(!self.prog.proceed(iteration, &prev, active))
    }
}

impl<P: EdgeProgram + Send> ProgramJob<P::Out> for SyncJob<P> {
    fn into_output(self: Box<Self>) -> VertexArray<P::Out> {
        let this = *self;
        let prog = this.prog;
        drop((this.msgs, this.sums));
        this.vals.map_into(|x| prog.output(x))
    }
}
