//! BSP jobs for the concurrent-jobs engine (GraphCP, graphcp-fcs24.md §3.6 and
//! Algorithm 5): bfs, sssp, wcc-lp (label propagation) and pagerank, each with its
//! own values, the one-pass union-find `wcc` (an edge-streaming job that shares the
//! first iteration's scan and finishes), and the `algo[:key=value,...]` job specs of
//! `outcore jobs`. The names are those of `outcore run`: `wcc` is union-find there
//! too.
//!
//! bfs, sssp and wcc-lp relax with atomic minima on one array per job: a relaxation
//! that reads a value newer than the previous iteration's only converges sooner,
//! and the fixpoint — exact depths / distances with the smallest parent id among
//! the tied ones, or the smallest id of each component — is unique, so a job's
//! answer equals the streaming engine's and its own single-job run. bfs and sssp
//! load a target's value first and pay for the atomic minimum only when the
//! candidate is smaller (most relaxations fail). PageRank keeps
//! the previous iteration's shares and the next iteration's sums apart (BSP), as
//! LDBC Graphalytics defines it (see [`crate::pagerank`]).

use crate::{pagerank::dangling_sum, Algo, AlgoError, Output, Result, Run};
use outcore_engine::{prefetch, prefetch_each, Job, JobCtx, Task};
use outcore_state::{atomic_add_f64, AtomicBitmap, StateBudget, VertexArray};
use outcore_store::{IdMap, Store};
use rayon::prelude::*;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
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
        jobs.push(match spec.algo {
            Algo::Bfs => Box::new(Bfs {
                root: root.expect("checked"),
                st: budget.alloc("bfs", n, u64::MAX)?,
            }),
            Algo::Sssp => Box::new(Sssp {
                root: root.expect("checked"),
                st: budget.alloc("sssp", n, u64::MAX)?,
                bad: AtomicU64::new(u64::MAX),
                bad_w: AtomicU64::new(0),
                ids: ids.clone(),
            }),
            Algo::Wcc => Box::new(WccUf {
                parent: budget.alloc("wcc", n, 0)?,
            }),
            Algo::WccLp => Box::new(Wcc {
                label: budget.alloc("wcc-lp", n, 0)?,
                directed: store.manifest().directed,
                changed: AtomicBool::new(false),
            }),
            Algo::PageRank => {
                let deg = match &out_degrees {
                    Some(d) => d.clone(),
                    None => {
                        let mut d = budget.alloc("out-degree", n, 0u32)?;
                        store.degrees_into("out", &mut d)?;
                        out_degrees.insert(Arc::new(d)).clone()
                    }
                };
                Box::new(PageRank {
                    iterations: spec.iterations.unwrap_or(10),
                    damping: spec.damping,
                    deg,
                    rank: budget.alloc("rank", n, 1.0 / n as f64)?,
                    contrib: budget.alloc("contrib", n, 0.0)?,
                    sum: budget.alloc("sum", n, 0.0)?,
                })
            }
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

/// The root starts at distance 0 as its own parent, and active.
fn seed_root(st: &VertexArray<u64>, root: u32, active: &AtomicBitmap) {
    st.atomic()[root as usize].store(root as u64, Relaxed);
    active.set(root);
}

/// Every vertex starts labelled with its own id (wcc's labels, union-find's
/// parents), and active.
fn own_ids(a: &mut VertexArray<u32>, active: &AtomicBitmap) {
    for (v, x) in a.iter_mut().enumerate() {
        *x = v as u32;
    }
    active.set_all();
}

struct Bfs {
    root: u32,
    st: VertexArray<u64>,
}

impl Job for Bfs {
    fn write_back(&self) -> std::io::Result<()> {
        self.st.write_back()
    }
    fn future_updates(&self) -> bool {
        true
    }
    fn init(&mut self, active: &AtomicBitmap) {
        seed_root(&self.st, self.root, active);
    }
    fn ahead(&self, dsts: &[u32]) {
        prefetch_each(self.st.atomic(), dsts);
    }
    fn ahead_source(&self, u: u32) {
        prefetch(self.st.atomic(), u);
    }
    fn edges(&self, ctx: &JobCtx, u: u32, dsts: &[u32], _: Option<&[f32]>) {
        let a = self.st.atomic();
        let du = a[u as usize].load(Relaxed) >> 32;
        let cand = ((du + 1) << 32) | u as u64;
        for &v in dsts {
            // A plain load first: most relaxations fail, and only an improving one
            // pays for the locked read-modify-write.
            let x = &a[v as usize];
            if cand < x.load(Relaxed) && x.fetch_min(cand, Relaxed) >> 32 > cand >> 32 {
                ctx.activate(v);
            }
        }
    }
    fn end_iteration(&mut self, _: u64, next: &AtomicBitmap) -> std::result::Result<bool, String> {
        Ok(!next.any())
    }
}

impl BspJob for Bfs {
    fn into_run(self: Box<Self>, iterations: u64) -> Run {
        let reached = self.st.iter().filter(|&&x| x != u64::MAX).count();
        let depth = self
            .st
            .iter()
            .filter(|&&x| x != u64::MAX)
            .map(|x| x >> 32)
            .max()
            .unwrap_or(0);
        Run {
            summary: format!("{reached} vertices reached, maximum depth {depth}"),
            output: Output::Bfs(self.st),
            iterations,
        }
    }
}

struct Sssp {
    root: u32,
    st: VertexArray<u64>,
    bad: AtomicU64,
    bad_w: AtomicU64,
    ids: Arc<IdMap>,
}

impl Job for Sssp {
    fn write_back(&self) -> std::io::Result<()> {
        self.st.write_back()
    }
    fn future_updates(&self) -> bool {
        true
    }
    fn weighted(&self) -> bool {
        true
    }
    fn init(&mut self, active: &AtomicBitmap) {
        seed_root(&self.st, self.root, active);
    }
    fn ahead(&self, dsts: &[u32]) {
        prefetch_each(self.st.atomic(), dsts);
    }
    fn ahead_source(&self, u: u32) {
        prefetch(self.st.atomic(), u);
    }
    fn edges(&self, ctx: &JobCtx, u: u32, dsts: &[u32], ws: Option<&[f32]>) {
        let a = self.st.atomic();
        let du = f32::from_bits((a[u as usize].load(Relaxed) >> 32) as u32);
        let relax = |v: u32, w: f32| {
            let cand = (((du + w).to_bits() as u64) << 32) | u as u64;
            let x = &a[v as usize];
            if cand < x.load(Relaxed) && x.fetch_min(cand, Relaxed) >> 32 > cand >> 32 {
                ctx.activate(v);
            }
        };
        let Some(ws) = ws else {
            return dsts.iter().for_each(|&v| relax(v, 1.0));
        };
        // The run's weights are checked before any is used (one branch-free pass),
        // so a negative or NaN weight stops the job before it relaxes anything.
        if ws
            .iter()
            .fold(false, |bad, &w| bad | (w < 0.0) | w.is_nan())
        {
            let i = ws
                .iter()
                .position(|&w| w < 0.0 || w.is_nan())
                .expect("found above");
            self.bad.store(((u as u64) << 32) | dsts[i] as u64, Relaxed);
            self.bad_w.store(ws[i].to_bits() as u64, Relaxed);
            return;
        }
        dsts.iter().zip(ws).for_each(|(&v, &w)| relax(v, w));
    }
    fn end_iteration(&mut self, _: u64, next: &AtomicBitmap) -> std::result::Result<bool, String> {
        let b = self.bad.load(Relaxed);
        if b != u64::MAX {
            return Err(format!(
                "sssp needs non-negative weights, but edge ({}, {}) has weight {}",
                self.ids.to_user((b >> 32) as u32),
                self.ids.to_user(b as u32),
                f32::from_bits(self.bad_w.load(Relaxed) as u32)
            ));
        }
        Ok(!next.any())
    }
}

impl BspJob for Sssp {
    fn into_run(self: Box<Self>, iterations: u64) -> Run {
        let reached = self.st.iter().filter(|&&x| x != u64::MAX).count();
        let far = self
            .st
            .iter()
            .filter(|&&x| x != u64::MAX)
            .map(|x| f32::from_bits((x >> 32) as u32))
            .fold(0f32, f32::max);
        Run {
            summary: format!("{reached} vertices reached, largest distance {far}"),
            output: Output::Sssp(self.st),
            iterations,
        }
    }
}

struct Wcc {
    label: VertexArray<u32>,
    directed: bool,
    changed: AtomicBool,
}

impl Job for Wcc {
    fn write_back(&self) -> std::io::Result<()> {
        self.label.write_back()
    }
    fn future_updates(&self) -> bool {
        true
    }
    fn init(&mut self, active: &AtomicBitmap) {
        own_ids(&mut self.label, active);
    }
    fn ahead(&self, dsts: &[u32]) {
        prefetch_each(self.label.atomic(), dsts);
    }
    fn ahead_source(&self, u: u32) {
        prefetch(self.label.atomic(), u);
    }
    fn edges(&self, ctx: &JobCtx, u: u32, dsts: &[u32], _: Option<&[f32]>) {
        let a = self.label.atomic();
        for &v in dsts {
            let (lu, lv) = (a[u as usize].load(Relaxed), a[v as usize].load(Relaxed));
            if lu < lv {
                if a[v as usize].fetch_min(lu, Relaxed) > lu {
                    ctx.activate(v);
                    self.changed.store(true, Relaxed);
                }
            } else if lv < lu && self.directed && a[u as usize].fetch_min(lv, Relaxed) > lv {
                ctx.activate(u);
                self.changed.store(true, Relaxed);
            }
        }
    }
    fn end_iteration(&mut self, _: u64, next: &AtomicBitmap) -> std::result::Result<bool, String> {
        // On a directed store a label must also flow against the edges, so every
        // edge is seen again until no label changes.
        let changed = self.changed.swap(false, Relaxed);
        if changed && self.directed {
            next.set_all();
        }
        Ok(!changed)
    }
}

impl BspJob for Wcc {
    fn into_run(self: Box<Self>, iterations: u64) -> Run {
        let components = self
            .label
            .iter()
            .enumerate()
            .filter(|(v, &l)| *v as u32 == l)
            .count();
        Run {
            summary: format!("{components} components"),
            output: Output::Labels(self.label),
            iterations,
        }
    }
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

struct PageRank {
    iterations: u64,
    damping: f64,
    deg: Arc<VertexArray<u32>>,
    rank: VertexArray<f64>,
    contrib: VertexArray<f64>,
    sum: VertexArray<f64>,
}

impl PageRank {
    /// The previous iteration's shares, and the sums cleared for the next.
    fn prepare(&mut self, active: &AtomicBitmap) {
        self.update(None, true);
        active.set_all();
    }

    /// One parallel pass over the vertices (each element on its own, so the values
    /// do not depend on the threads): with `base`, the new ranks base + damping x
    /// sum first; then, with `shares`, the shares rank / out-degree and the sums
    /// cleared for the next iteration.
    fn update(&mut self, base: Option<f64>, shares: bool) {
        const CHUNK: usize = 1 << 14;
        let (d, deg) = (self.damping, &self.deg[..]);
        let (rank, contrib, sum) = (&mut self.rank[..], &mut self.contrib[..], &mut self.sum[..]);
        rank.par_chunks_mut(CHUNK)
            .zip(contrib.par_chunks_mut(CHUNK))
            .zip(sum.par_chunks_mut(CHUNK))
            .zip(deg.par_chunks(CHUNK))
            .for_each(|(((r, c), s), k)| {
                for i in 0..r.len() {
                    if let Some(base) = base {
                        r[i] = base + d * s[i];
                    }
                    if shares {
                        c[i] = if k[i] == 0 { 0.0 } else { r[i] / k[i] as f64 };
                        s[i] = 0.0;
                    }
                }
            });
    }
}

impl Job for PageRank {
    fn write_back(&self) -> std::io::Result<()> {
        self.rank.write_back()?;
        self.contrib.write_back()?;
        self.sum.write_back()
    }
    fn init(&mut self, active: &AtomicBitmap) {
        self.prepare(active);
    }
    fn ahead(&self, dsts: &[u32]) {
        prefetch_each(self.sum.atomic(), dsts);
    }
    fn ahead_source(&self, u: u32) {
        prefetch(&self.contrib, u);
    }
    fn exclusive_targets(&self) -> bool {
        true
    }
    fn edges(&self, _: &JobCtx, u: u32, dsts: &[u32], _: Option<&[f32]>) {
        let share = self.contrib[u as usize];
        let sum = self.sum.atomic();
        for &v in dsts {
            atomic_add_f64(&sum[v as usize], share);
        }
    }
    fn task(&self, ctx: &JobCtx, t: &Task) -> u64 {
        let sum = self.sum.atomic();
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
                let share = self.contrib[u as usize];
                for &v in dsts {
                    let x = &sum[v as usize];
                    x.store((f64::from_bits(x.load(Relaxed)) + share).to_bits(), Relaxed);
                }
            },
        )
    }
    fn end_iteration(
        &mut self,
        iteration: u64,
        next: &AtomicBitmap,
    ) -> std::result::Result<bool, String> {
        let n = self.rank.len() as f64;
        let d = self.damping;
        let base = (1.0 - d) / n + d * dangling_sum(&self.rank, &self.deg) / n;
        let last = iteration >= self.iterations;
        self.update(Some(base), !last);
        if last {
            return Ok(true);
        }
        next.set_all();
        Ok(false)
    }
}

impl BspJob for PageRank {
    fn into_run(self: Box<Self>, iterations: u64) -> Run {
        let total: f64 = self.rank.iter().sum();
        Run {
            summary: format!("{iterations} iterations, rank sum {total:.6}"),
            output: Output::Values(self.rank),
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
