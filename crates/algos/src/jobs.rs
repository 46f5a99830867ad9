//! BSP jobs for the concurrent-jobs engine (GraphCP, graphcp-fcs24.md §3.6 and
//! Algorithm 5): bfs, sssp, wcc-lp (label propagation) and pagerank, each with its
//! own values, the one-pass union-find `wcc` (an edge-streaming job that shares the
//! first iteration's scan and finishes), and the `algo[:key=value,...]` job specs of
//! `outcore jobs`. The names are those of `outcore run`: `wcc` is union-find there
//! too.
//!
//! bfs, sssp, wcc-lp and pagerank are the edge programs of [`crate::programs`],
//! run as jobs by the engine's adapter ([`outcore_engine::program_job`]): the
//! relaxation programs relax in place and take future updates, PageRank is
//! synchronous (BSP, as LDBC Graphalytics defines it). The same definitions run
//! on the streaming, external and sort-reduce engines.

use crate::programs::{
    bfs_result, labels_result, ranks_result, refusal_message, sssp_result, Bfs, PageRank, Sssp,
    WccLp,
};
use crate::{Algo, AlgoError, Output, Result, Run};
use outcore_engine::{
    prefetch, prefetch_each, program_job, DescribeRefusal, Job, JobCtx, ProgramJob, Task,
};
use outcore_state::{AtomicBitmap, StateBudget, VertexArray};
use outcore_store::{IdMap, Store};
use std::sync::Arc;

/// A parsed job spec: `algo[:key=value,...]`.
#[derive(Debug, Clone, PartialEq)]
pub struct JobSpec {
    pub text: String,
    pub algo: Algo,
    /// `root=` in the user's ids.
    pub root: Option<u64>,
    pub iterations: Option<u64>,
    pub damping: f64,
}

impl JobSpec {
    /// The root in dense ids, or an error naming the spec when it is not a vertex.
    pub fn dense_root(&self, ids: &IdMap) -> Result<Option<u32>> {
        match self.root {
            Some(r) => Ok(Some(ids.to_dense(r).ok_or_else(|| {
                AlgoError::Invalid(format!(
                    "job spec {:?}: root {r} is not a vertex of the store",
                    self.text
                ))
            })?)),
            None => Ok(None),
        }
    }
    /// Bytes per vertex of the job's own vertex state ([`make_jobs`]): bfs and
    /// sssp a u64 (distance and parent), wcc and wcc-lp a u32, pagerank three f64
    /// (rank, contribution, sum; the out-degrees are the engine's, shared).
    pub fn state_bytes_per_vertex(&self) -> u64 {
        match self.algo {
            Algo::Bfs | Algo::Sssp => 8,
            Algo::Wcc | Algo::WccLp => 4,
            Algo::PageRank => 24,
            _ => 0,
        }
    }
}

/// The algorithms the jobs engine runs.
pub const JOB_ALGOS: [Algo; 5] = [
    Algo::Bfs,
    Algo::Sssp,
    Algo::Wcc,
    Algo::WccLp,
    Algo::PageRank,
];

impl std::str::FromStr for JobSpec {
    type Err = String;
    fn from_str(text: &str) -> std::result::Result<JobSpec, String> {
        let bad = |m: String| format!("job spec {text:?}: {m}");
        let (name, rest) = match text.split_once(':') {
            Some((n, r)) => (n, Some(r)),
            None => (text, None),
        };
        let algo = Algo::from_name(name)
            .filter(|a| JOB_ALGOS.contains(a))
            .ok_or_else(|| {
                bad(format!(
                    "unknown job algorithm {name:?} (bfs, sssp, wcc, wcc-lp, pagerank)"
                ))
            })?;
        let mut spec = JobSpec {
            text: text.to_string(),
            algo,
            root: None,
            iterations: None,
            damping: 0.85,
        };
        for kv in rest.into_iter().flat_map(|r| r.split(',')) {
            let (k, v) = kv
                .split_once('=')
                .ok_or_else(|| bad(format!("{kv:?} is not key=value")))?;
            match k {
                "root" if algo.needs_root() => {
                    spec.root = Some(
                        v.parse()
                            .map_err(|_| bad(format!("root {v:?} is not a vertex id")))?,
                    )
                }
                "iterations" if algo == Algo::PageRank => {
                    spec.iterations =
                        Some(v.parse().ok().filter(|&i: &u64| i > 0).ok_or_else(|| {
                            bad(format!("iterations {v:?} is not a positive integer"))
                        })?)
                }
                "damping" if algo == Algo::PageRank => {
                    spec.damping = v
                        .parse()
                        .ok()
                        .filter(|d: &f64| *d > 0.0 && *d < 1.0)
                        .ok_or_else(|| bad(format!("damping {v:?} is not between 0 and 1")))?
                }
                _ => return Err(bad(format!("{} takes no key {k:?}", name))),
            }
        }
        if algo.needs_root() && spec.root.is_none() {
            return Err(bad(format!("{name} needs root=ID")));
        }
        Ok(spec)
    }
}

/// A job that can also hand back its result.
pub trait BspJob: Job {
    fn into_run(self: Box<Self>, iterations: u64) -> Run;
}

/// Builds the job of `spec` on `store` (the root resolved to a dense id).
pub fn make_job(spec: &JobSpec, store: &Store) -> Result<Box<dyn BspJob>> {
    let ids = Arc::new(store.id_map()?);
    let budget = StateBudget::new(u64::MAX, store.dir().to_path_buf());
    let mut jobs = make_jobs(std::slice::from_ref(spec), store, &ids, &budget, None)?;
    Ok(jobs.pop().expect("one spec, one job"))
}

/// Builds the jobs of `specs` on `store`, resolving roots with `ids`. What the jobs
/// share — the id map, the out-degrees of PageRank — is read once for all of them.
/// Their vertex arrays come from `budget`: in memory while it lasts, mapped from
/// the work directory beyond (as `outcore run` does). `out_degrees`, when given
/// (those the engine keeps: [`outcore_engine::JobsEngine::with_out_degrees`]),
/// are used instead of reading them again.
pub fn make_jobs(
    specs: &[JobSpec],
    store: &Store,
    ids: &Arc<IdMap>,
    budget: &StateBudget,
    out_degrees: Option<Arc<VertexArray<u32>>>,
) -> Result<Vec<Box<dyn BspJob>>> {
    let n = store.vertices() as usize;
    let mut out_degrees = out_degrees;
    let mut jobs: Vec<Box<dyn BspJob>> = Vec::with_capacity(specs.len());
    for spec in specs {
        let root = spec.dense_root(ids)?;
        let degrees = || -> outcore_engine::Result<Arc<VertexArray<u32>>> {
            if let Some(d) = &out_degrees {
                return Ok(d.clone());
            }
            let mut d = budget.alloc("out-degree", n, 0u32)?;
            store.degrees_into("out", &mut d)?;
            Ok(out_degrees.insert(Arc::new(d)).clone())
        };
        let ids2 = ids.clone();
        let describe: DescribeRefusal = Box::new(move |e| refusal_message(&ids2, e));
        let (cap, root) = (None, root.unwrap_or(0));
        jobs.push(match spec.algo {
            Algo::Bfs => Programmed::boxed(
                program_job(Bfs { root, cap }, n, budget, degrees, describe)?,
                bfs_result,
            ),
            Algo::Sssp => Programmed::boxed(
                program_job(Sssp { root, cap }, n, budget, degrees, describe)?,
                sssp_result,
            ),
            Algo::WccLp => {
                let both_directions = store.manifest().directed;
                let prog = WccLp {
                    cap,
                    both_directions,
                };
                Programmed::boxed(
                    program_job(prog, n, budget, degrees, describe)?,
                    labels_result,
                )
            }
            Algo::PageRank => {
                let iterations = spec.iterations.unwrap_or(10);
                let prog = PageRank {
                    n: n as u64,
                    damping: spec.damping,
                    iterations,
                };
                let job = program_job(prog, n, budget, degrees, describe)?;
                Box::new(Programmed {
                    job,
                    finish: Box::new(move |r| ranks_result(r, iterations)),
                })
            }
            Algo::Wcc => Box::new(WccUf {
                parent: budget.alloc("wcc", n, 0)?,
            }),
            a => {
                return Err(AlgoError::Invalid(format!(
                    "{} is not a job algorithm",
                    a.name()
                )))
            }
        });
    }
    Ok(jobs)
}

/// Every vertex starts labelled with its own id (wcc's labels, union-find's
/// parents), and active.
fn own_ids(a: &mut VertexArray<u32>, active: &AtomicBitmap) {
    for (v, x) in a.iter_mut().enumerate() {
        *x = v as u32;
    }
    active.set_all();
}

/// One-pass weakly connected components with the lock-free disjoint-set forest of
/// [`crate::wcc`] (the streaming engine's `wcc`): an edge-streaming algorithm that
/// fits the shared scan (graphcp-fcs24.md §3.6 lists such jobs beside the BSP ones).
/// It reads every edge once, in the first iteration, and finishes; the other jobs go
/// on without it. Every root is its set's smallest id, so the labels do not depend
/// on the order of unions or the threads, and equal label propagation's.
struct WccUf {
    parent: VertexArray<u32>,
}

impl Job for WccUf {
    fn write_back(&self) -> std::io::Result<()> {
        self.parent.write_back()
    }
    fn init(&mut self, active: &AtomicBitmap) {
        own_ids(&mut self.parent, active);
    }
    fn ahead(&self, dsts: &[u32]) {
        prefetch_each(self.parent.atomic(), dsts);
    }
    fn ahead_source(&self, u: u32) {
        prefetch(self.parent.atomic(), u);
    }
    fn edges(&self, _: &JobCtx, u: u32, dsts: &[u32], _: Option<&[f32]>) {
        let a = self.parent.atomic();
        for &v in dsts {
            crate::wcc::union(a, u, v);
        }
    }
    fn end_iteration(&mut self, _: u64, _: &AtomicBitmap) -> std::result::Result<bool, String> {
        Ok(true)
    }
}

impl BspJob for WccUf {
    fn into_run(mut self: Box<Self>, iterations: u64) -> Run {
        let components = crate::wcc::flatten(&mut self.parent);
        Run {
            summary: format!("{components} components"),
            output: Output::Labels(self.parent),
            iterations,
        }
    }
}

/// An edge program's job, finished into an [`Output`] and its summary line.
struct Programmed<O: bytemuck::Pod> {
    job: Box<dyn ProgramJob<O>>,
    finish: Box<dyn Fn(VertexArray<O>) -> (Output, String) + Send + Sync>,
}

impl<O: bytemuck::Pod + Send + Sync + 'static> Programmed<O> {
    fn boxed(
        job: Box<dyn ProgramJob<O>>,
        finish: fn(VertexArray<O>) -> (Output, String),
    ) -> Box<dyn BspJob> {
        Box::new(Programmed {
            job,
            finish: Box::new(finish),
        })
    }
}

impl<O: bytemuck::Pod + Send + Sync> Job for Programmed<O> {
    fn weighted(&self) -> bool {
        self.job.weighted()
    }
    fn future_updates(&self) -> bool {
        self.job.future_updates()
    }
    fn init(&mut self, active: &AtomicBitmap) {
        self.job.init(active)
    }
    fn edges(&self, ctx: &JobCtx, u: u32, dsts: &[u32], ws: Option<&[f32]>) {
        self.job.edges(ctx, u, dsts, ws)
    }
    fn ahead(&self, dsts: &[u32]) {
        self.job.ahead(dsts)
    }
    fn ahead_source(&self, u: u32) {
        self.job.ahead_source(u)
    }
    fn exclusive_targets(&self) -> bool {
        self.job.exclusive_targets()
    }
    fn task(&self, ctx: &JobCtx, t: &Task) -> u64 {
        self.job.task(ctx, t)
    }
    fn write_back(&self) -> std::io::Result<()> {
        self.job.write_back()
    }
    fn end_iteration(
        &mut self,
        iteration: u64,
        next: &AtomicBitmap,
    ) -> std::result::Result<bool, String> {
        self.job.end_iteration(iteration, next)
    }
}

impl<O: bytemuck::Pod + Send + Sync> BspJob for Programmed<O> {
    fn into_run(self: Box<Self>, iterations: u64) -> Run {
        let (output, summary) = (self.finish)(self.job.into_output());
        Run {
            output,
            summary,
            iterations,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_specs() {
        let s: JobSpec = "bfs:root=17".parse().unwrap();
        assert_eq!((s.algo, s.root), (Algo::Bfs, Some(17)));
        let s: JobSpec = "pagerank:iterations=5,damping=0.9".parse().unwrap();
        assert_eq!(
            (s.algo, s.iterations, s.damping),
            (Algo::PageRank, Some(5), 0.9)
        );
        assert_eq!("wcc".parse::<JobSpec>().unwrap().algo, Algo::Wcc);
        assert_eq!("wcc-lp".parse::<JobSpec>().unwrap().algo, Algo::WccLp);
        for (bad, want) in [
            ("bfs", "needs root=ID"),
            ("bfs:root=x", "not a vertex id"),
            ("mis", "unknown job algorithm"),
            ("wcc:root=1", "takes no key \"root\""),
            ("pagerank:iterations=0", "not a positive integer"),
            ("sssp:root", "not key=value"),
        ] {
            let e = bad.parse::<JobSpec>().unwrap_err();
            assert!(e.contains(want) && e.contains(bad), "{bad}: {e}");
        }
    }
}
