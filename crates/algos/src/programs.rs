//! The algorithms as edge programs ([`outcore_engine::EdgeProgram`]), the
//! push-style model the fully-external engine runs (V-Part, FAST'19 §4), and
//! [`run_program`], which runs them and turns the result into an [`Output`].
//!
//! Each program computes the same answer as its streaming-engine module:
//! * [`Bfs`]: `depth << 32 | parent` lowered by `min`, so the parent is the
//!   smallest-id in-neighbour one level up (as [`crate::bfs`]);
//! * [`Sssp`]: `f32 distance bits << 32 | parent` lowered by `min`; a negative or
//!   NaN weight on an edge the search meets stops the run (as [`crate::sssp`]);
//! * [`WccLp`]: the smallest label among in-neighbours, on stores holding both
//!   directions (the push model moves labels along out-edges only);
//! * [`PageRank`]: LDBC Graphalytics, dangling rank spread uniformly, `f64`
//!   (as [`crate::pagerank`]);
//! * [`PageRankDelta`]: residual pushes above `tolerance / n`, the same rounds as
//!   [`crate::pagerank_delta`];
//! * [`Spmv`]: `y = A^T x` with `x = 1`, repeated `--iterations` times.
//!
//! Bytes per destination in memory on the external engine (value + 20):
//! bfs, sssp, wcc-lp, pagerank, spmv 28; pagerank-delta 44.

use crate::{Algo, AlgoError, Output, Params, Result, Run};
use outcore_engine::{Aggregates, EdgeProgram, EngineError, Globals, ProgramRunner};

/// Breadth-first search.
pub struct Bfs {
    pub root: u32,
    pub cap: Option<u64>,
}

impl EdgeProgram for Bfs {
    type V = u64;
    type Out = u64;
    fn name(&self) -> &'static str {
        "bfs"
    }
    fn narrow_messages(&self) -> bool {
        true
    }
    fn idle_without_messages(&self) -> bool {
        true
    }
    fn init(&self, v: u32, _: u32, _: &mut Aggregates) -> (u64, bool) {
        if v == self.root {
            (v as u64, true)
        } else {
            (u64::MAX, false)
        }
    }
    fn message(&self, val: &u64, _: u32) -> u64 {
        *val >> 32
    }
    fn identity(&self) -> u64 {
        u64::MAX
    }
    fn edge(&self, depth: u64, u: u32, _: f32) -> Option<u64> {
        Some(((depth + 1) << 32) | u as u64)
    }
    fn combine(&self, a: u64, b: u64) -> u64 {
        a.min(b)
    }
    fn apply(&self, _: &Globals, val: &mut u64, acc: u64, _: u32, _: &mut Aggregates) -> bool {
        // Activated only when the depth drops (as the streaming engine).
        if acc < *val {
            let deeper = acc >> 32 < *val >> 32;
            *val = acc;
            deeper
        } else {
            false
        }
    }
    fn proceed(&self, done: u64, _: &Aggregates, active: u64) -> bool {
        active > 0 && self.cap.is_none_or(|k| done < k)
    }
    fn output(&self, val: &u64) -> u64 {
        *val
    }
}

/// Single-source shortest paths (Bellman-Ford).
pub struct Sssp {
    pub root: u32,
    pub cap: Option<u64>,
}

impl EdgeProgram for Sssp {
    type V = u64;
    type Out = u64;
    fn name(&self) -> &'static str {
        "sssp"
    }
    fn narrow_messages(&self) -> bool {
        true
    }
    fn idle_without_messages(&self) -> bool {
        true
    }
    fn weighted(&self) -> bool {
        true
    }
    fn init(&self, v: u32, _: u32, _: &mut Aggregates) -> (u64, bool) {
        if v == self.root {
            (v as u64, true)
        } else {
            (u64::MAX, false)
        }
    }
    fn message(&self, val: &u64, _: u32) -> u64 {
        *val >> 32
    }
    fn identity(&self) -> u64 {
        u64::MAX
    }
    fn edge(&self, dist: u64, u: u32, w: f32) -> Option<u64> {
        if w < 0.0 || w.is_nan() {
            return None;
        }
        let d = f32::from_bits(dist as u32) + w;
        Some(((d.to_bits() as u64) << 32) | u as u64)
    }
    fn combine(&self, a: u64, b: u64) -> u64 {
        a.min(b)
    }
    fn apply(&self, _: &Globals, val: &mut u64, acc: u64, _: u32, _: &mut Aggregates) -> bool {
        // Only a smaller distance activates (a smaller parent at the same
        // distance is kept without re-sending, as the streaming engine does).
        if acc < *val {
            let more = acc >> 32 < *val >> 32;
            *val = acc;
            more
        } else {
            false
        }
    }
    fn proceed(&self, done: u64, _: &Aggregates, active: u64) -> bool {
        active > 0 && self.cap.is_none_or(|k| done < k)
    }
    fn output(&self, val: &u64) -> u64 {
        *val
    }
}

/// Connected components by label propagation (stores with both directions).
pub struct WccLp {
    pub cap: Option<u64>,
}

impl EdgeProgram for WccLp {
    type V = u64;
    type Out = u32;
    fn name(&self) -> &'static str {
        "wcc-lp"
    }
    fn narrow_messages(&self) -> bool {
        true
    }
    fn idle_without_messages(&self) -> bool {
        true
    }
    fn init(&self, v: u32, _: u32, _: &mut Aggregates) -> (u64, bool) {
        (v as u64, true)
    }
    fn message(&self, val: &u64, _: u32) -> u64 {
        *val
    }
    fn identity(&self) -> u64 {
        u64::MAX
    }
    fn edge(&self, label: u64, _: u32, _: f32) -> Option<u64> {
        Some(label)
    }
    fn combine(&self, a: u64, b: u64) -> u64 {
        a.min(b)
    }
    fn apply(&self, _: &Globals, val: &mut u64, acc: u64, _: u32, _: &mut Aggregates) -> bool {
        if acc < *val {
            *val = acc;
            true
        } else {
            false
        }
    }
    fn proceed(&self, done: u64, _: &Aggregates, active: u64) -> bool {
        active > 0 && self.cap.is_none_or(|k| done < k)
    }
    fn output(&self, val: &u64) -> u32 {
        *val as u32
    }
}

/// PageRank (LDBC Graphalytics). Aggregate 0: rank held by dangling vertices.
pub struct PageRank {
    pub n: u64,
    pub damping: f64,
    pub iterations: u64,
}

impl EdgeProgram for PageRank {
    type V = f64;
    type Out = f64;
    fn name(&self) -> &'static str {
        "pagerank"
    }
    fn all_active(&self) -> bool {
        true
    }
    fn init(&self, _: u32, deg: u32, agg: &mut Aggregates) -> (f64, bool) {
        let x = 1.0 / self.n as f64;
        if deg == 0 {
            agg[0] += x;
        }
        (x, true)
    }
    fn message(&self, val: &f64, deg: u32) -> u64 {
        if deg == 0 {
            0f64.to_bits()
        } else {
            (val / deg as f64).to_bits()
        }
    }
    fn identity(&self) -> u64 {
        0f64.to_bits()
    }
    fn edge(&self, msg: u64, _: u32, _: f32) -> Option<u64> {
        Some(msg)
    }
    fn combine(&self, a: u64, b: u64) -> u64 {
        (f64::from_bits(a) + f64::from_bits(b)).to_bits()
    }
    fn apply(&self, g: &Globals, val: &mut f64, acc: u64, deg: u32, agg: &mut Aggregates) -> bool {
        let n = self.n as f64;
        let d = self.damping;
        let base = (1.0 - d) / n + d * g.prev[0] / n;
        *val = base + d * f64::from_bits(acc);
        if deg == 0 {
            agg[0] += *val;
        }
        true
    }
    fn proceed(&self, done: u64, _: &Aggregates, _: u64) -> bool {
        done < self.iterations
    }
    fn output(&self, val: &f64) -> f64 {
        *val
    }
}

/// A vertex of delta PageRank: accumulated rank, pending residual, what it pushes.
#[derive(Clone, Copy, Default, bytemuck::Pod, bytemuck::Zeroable)]
#[repr(C)]
pub struct Delta {
    pub rank: f64,
    pub resid: f64,
    pub push: f64,
}

/// Delta PageRank to a tolerance. Aggregates: 0, residual pushed by dangling
/// vertices; 1, vertices that pushed.
pub struct PageRankDelta {
    pub n: u64,
    pub damping: f64,
    pub tolerance: f64,
    pub cap: Option<u64>,
}

impl PageRankDelta {
    /// The push step that opens an iteration (as `pagerank_delta`'s `vmap`).
    fn push(&self, x: &mut Delta, deg: u32, agg: &mut Aggregates) -> bool {
        let eps = self.tolerance / self.n as f64;
        if x.resid > eps {
            let r = x.resid;
            x.rank += r;
            x.resid = 0.0;
            x.push = if deg == 0 { r } else { r / deg as f64 };
            agg[1] += 1.0;
            if deg == 0 {
                agg[0] += x.push;
            }
            deg > 0
        } else {
            x.push = 0.0;
            false
        }
    }
}

impl EdgeProgram for PageRankDelta {
    type V = Delta;
    type Out = f64;
    fn name(&self) -> &'static str {
        "pagerank-delta"
    }
    fn init(&self, _: u32, deg: u32, agg: &mut Aggregates) -> (Delta, bool) {
        let mut x = Delta {
            rank: 0.0,
            resid: (1.0 - self.damping) / self.n as f64,
            push: 0.0,
        };
        if self.cap == Some(0) {
            return (x, false);
        }
        let act = self.push(&mut x, deg, agg);
        (x, act)
    }
    fn message(&self, val: &Delta, _: u32) -> u64 {
        val.push.to_bits()
    }
    fn identity(&self) -> u64 {
        0f64.to_bits()
    }
    fn edge(&self, msg: u64, _: u32, _: f32) -> Option<u64> {
        Some((self.damping * f64::from_bits(msg)).to_bits())
    }
    fn combine(&self, a: u64, b: u64) -> u64 {
        (f64::from_bits(a) + f64::from_bits(b)).to_bits()
    }
    fn apply(&self, g: &Globals, x: &mut Delta, acc: u64, deg: u32, agg: &mut Aggregates) -> bool {
        x.resid += f64::from_bits(acc);
        if g.prev[0] > 0.0 {
            x.resid += self.damping * g.prev[0] / self.n as f64;
        }
        if self.cap.is_some_and(|k| g.iteration >= k) {
            x.push = 0.0;
            return false;
        }
        self.push(x, deg, agg)
    }
    fn proceed(&self, done: u64, agg: &Aggregates, _: u64) -> bool {
        agg[1] > 0.0 && self.cap.is_none_or(|k| done < k)
    }
    fn output(&self, x: &Delta) -> f64 {
        x.rank + x.resid
    }
}

/// `y = A^T x`, `x = 1`, `iterations` times.
pub struct Spmv {
    pub iterations: u64,
}

impl EdgeProgram for Spmv {
    type V = f64;
    type Out = f64;
    fn name(&self) -> &'static str {
        "spmv"
    }
    fn weighted(&self) -> bool {
        true
    }
    fn all_active(&self) -> bool {
        true
    }
    fn init(&self, _: u32, _: u32, _: &mut Aggregates) -> (f64, bool) {
        (1.0, true)
    }
    fn message(&self, val: &f64, _: u32) -> u64 {
        val.to_bits()
    }
    fn identity(&self) -> u64 {
        0f64.to_bits()
    }
    fn edge(&self, msg: u64, _: u32, w: f32) -> Option<u64> {
        Some((w as f64 * f64::from_bits(msg)).to_bits())
    }
    fn combine(&self, a: u64, b: u64) -> u64 {
        (f64::from_bits(a) + f64::from_bits(b)).to_bits()
    }
    fn apply(&self, _: &Globals, val: &mut f64, acc: u64, _: u32, _: &mut Aggregates) -> bool {
        *val = f64::from_bits(acc);
        true
    }
    fn proceed(&self, done: u64, _: &Aggregates, _: u64) -> bool {
        done < self.iterations
    }
    fn output(&self, val: &f64) -> f64 {
        *val
    }
}

/// The algorithms the external engine runs.
pub fn external_supported(algo: Algo) -> bool {
    matches!(
        algo,
        Algo::Bfs | Algo::Sssp | Algo::WccLp | Algo::PageRank | Algo::PageRankDelta | Algo::Spmv
    )
}

/// Destination bytes per vertex `algo` needs on the external engine.
pub fn external_bytes_per_vertex(algo: Algo) -> u64 {
    match algo {
        Algo::PageRankDelta => 44,
        _ => 28,
    }
}

/// Runs `algo` on an engine of edge programs (external or sort-reduce).
pub fn run_program<R: ProgramRunner>(
    e: &mut R,
    store: &outcore_store::Store,
    algo: Algo,
    p: &Params,
) -> Result<Run> {
    let n = store.vertices();
    if algo.needs_root() && p.root as u64 >= n {
        return Err(AlgoError::Invalid(format!(
            "root {} is not a vertex (the store has {n} vertices)",
            p.root
        )));
    }
    let cap = p.iterations;
    let (output, summary) = match algo {
        Algo::Bfs => {
            let st = name_bad_edge(store, e.run_program(&Bfs { root: p.root, cap }))?;
            let line = crate::bfs::summary(&st);
            (Output::Bfs(st), line)
        }
        Algo::Sssp => {
            let st = name_bad_edge(store, e.run_program(&Sssp { root: p.root, cap }))?;
            let line = crate::sssp::summary(&st);
            (Output::Sssp(st), line)
        }
        Algo::WccLp => {
            if store.manifest().directed {
                return Err(AlgoError::Invalid(format!(
                    "wcc-lp on the external engine pushes labels along out-edges only, so it needs a store holding both directions; {} is directed (ingest with --undirected, or use --engine stream)",
                    store.dir().display()
                )));
            }
            let l = name_bad_edge(store, e.run_program(&WccLp { cap }))?;
            let components = l.iter().enumerate().filter(|(v, &x)| *v as u32 == x).count();
            (Output::Labels(l), format!("{components} components"))
        }
        Algo::PageRank => {
            let iterations = p.iterations.unwrap_or(10);
            let r = name_bad_edge(store, e.run_program(&PageRank { n, damping: p.damping, iterations }))?;
            let total: f64 = r.iter().sum();
            (Output::Values(r), format!("{iterations} iterations, total rank {total:.12}"))
        }
        Algo::PageRankDelta => {
            let prog = PageRankDelta { n, damping: p.damping, tolerance: p.tolerance, cap };
            let r = name_bad_edge(store, e.run_program(&prog))?;
            let it = e.iterations();
            (Output::Values(r), format!("{it} iterations"))
        }
        Algo::Spmv => {
            let iterations = p.iterations.unwrap_or(1);
            let r = name_bad_edge(store, e.run_program(&Spmv { iterations }))?;
            let total: f64 = r.iter().sum();
            (Output::Values(r), format!("sum of y {total:.12e}"))
        }
        other => {
            return Err(AlgoError::Invalid(format!(
                "{} does not run on the external engine (it runs bfs, sssp, wcc-lp, pagerank, pagerank-delta, spmv)",
                other.name()
            )))
        }
    };
    Ok(Run {
        output,
        iterations: e.iterations(),
        summary,
    })
}

/// A refused edge named in the user's ids.
fn name_bad_edge<T>(
    store: &outcore_store::Store,
    r: std::result::Result<T, EngineError>,
) -> Result<T> {
    match r {
        Err(EngineError::BadEdge { program, u, v, w }) => {
            let ids = store.id_map()?;
            Err(AlgoError::Invalid(format!(
                "{program} needs non-negative weights, but edge ({}, {}) has weight {w}",
                ids.to_user(u),
                ids.to_user(v)
            )))
        }
        r => Ok(r?),
    }
}
