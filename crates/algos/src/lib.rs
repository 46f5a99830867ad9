//! # outcore-algos — algorithms on the CLIP edge-streaming engine
//!
//! One module per algorithm, each citing the part of CLIP (ATC'17) it follows:
//! relaxation algorithms that gain from loaded-data re-entry (§3.1, §4.4 SSSP):
//! [`bfs`], [`sssp`]; beyond-neighborhood one-pass algorithms (§3.2, §4.4, §5.3):
//! [`wcc`] (union-find) and [`mis`] (greedy after `sort`); the baselines that
//! GridGraph and X-Stream run: [`wcc_lp`] (label propagation) and [`mis_luby`]
//! (Luby's randomized MIS); and [`pagerank`] (LDBC Graphalytics definition),
//! [`pagerank_delta`] and [`spmv`].
//!
//! [`verify`] checks results independently of the engine (its own sequential scan
//! of the grid): the Graph500 rules for BFS and SSSP trees, an independent
//! union-find for WCC, independence and maximality for MIS, a serial
//! recomputation for PageRank and SpMV.
//!
//! Results are vertex arrays indexed by dense id; dense ids ascend with the user's
//! ids (ingest assigns them in sorted order), so writing them in dense order is
//! writing them in ascending user-id order.

pub mod bfs;
pub mod jobs;
pub mod mis;
pub mod mis_luby;
pub mod pagerank;
pub mod pagerank_delta;
pub mod programs;
pub mod spmv;
pub mod sssp;
pub mod vc;
pub mod verify;
pub mod wcc;
pub mod wcc_lp;

use outcore_state::VertexArray;

/// Errors of the algorithms: engine failures and refused inputs.
#[derive(Debug, thiserror::Error)]
pub enum AlgoError {
    #[error(transparent)]
    Engine(#[from] outcore_engine::EngineError),
    #[error(transparent)]
    Store(#[from] outcore_store::StoreError),
    #[error(transparent)]
    Io(#[from] outcore_io::IoError),
    #[error("{0}")]
    Invalid(String),
    /// An independent check failed.
    #[error("verification failed: {0}")]
    Verify(String),
}

pub type Result<T> = std::result::Result<T, AlgoError>;

/// The algorithms `outcore run` knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Algo {
    Bfs,
    Sssp,
    Wcc,
    WccLp,
    Mis,
    MisLuby,
    PageRank,
    PageRankDelta,
    Spmv,
}

impl Algo {
    pub const ALL: [Algo; 9] = [
        Algo::Bfs,
        Algo::Sssp,
        Algo::Wcc,
        Algo::WccLp,
        Algo::Mis,
        Algo::MisLuby,
        Algo::PageRank,
        Algo::PageRankDelta,
        Algo::Spmv,
    ];
    pub fn name(self) -> &'static str {
        match self {
            Algo::Bfs => "bfs",
            Algo::Sssp => "sssp",
            Algo::Wcc => "wcc",
            Algo::WccLp => "wcc-lp",
            Algo::Mis => "mis",
            Algo::MisLuby => "mis-luby",
            Algo::PageRank => "pagerank",
            Algo::PageRankDelta => "pagerank-delta",
            Algo::Spmv => "spmv",
        }
    }
    pub fn from_name(s: &str) -> Option<Algo> {
        Algo::ALL.into_iter().find(|a| a.name() == s)
    }
    /// Whether the algorithm starts from `--root`.
    pub fn needs_root(self) -> bool {
        matches!(self, Algo::Bfs | Algo::Sssp)
    }
}

/// Bytes per vertex of the vertex arrays `algo` allocates on the streaming engine
/// (beyond the engine's bitmaps), so a caller can tell whether they fit a budget.
pub fn stream_bytes_per_vertex(algo: Algo) -> u64 {
    match algo {
        Algo::Bfs | Algo::Sssp => 8,
        Algo::Wcc | Algo::WccLp | Algo::Mis => 4,
        Algo::MisLuby => 8,
        Algo::PageRank | Algo::PageRankDelta => 28,
        Algo::Spmv => 16,
    }
}

/// Parameters shared by the algorithms (ids are dense here).
#[derive(Debug, Clone)]
pub struct Params {
    pub root: u32,
    /// PageRank iterations; also the cap of iterative algorithms when set.
    pub iterations: Option<u64>,
    /// pagerank-delta: stop when no vertex's pending change exceeds this.
    pub tolerance: f64,
    pub damping: f64,
    pub seed: u64,
}

impl Default for Params {
    fn default() -> Self {
        Params {
            root: 0,
            iterations: None,
            tolerance: 1e-7,
            damping: 0.85,
            seed: 1,
        }
    }
}

/// A result, one value per vertex (dense order).
pub enum Output {
    /// BFS: `depth << 32 | parent` (`u64::MAX`: unreachable).
    Bfs(VertexArray<u64>),
    /// SSSP: `f32 distance bits << 32 | parent` (`u64::MAX`: unreachable).
    Sssp(VertexArray<u64>),
    /// WCC: the smallest dense id of the component.
    Labels(VertexArray<u32>),
    /// MIS: 1 in the set, 0 not.
    Flags(VertexArray<u32>),
    /// PageRank and SpMV values.
    Values(VertexArray<f64>),
}

/// A finished run: the result and what it took.
pub struct Run {
    pub output: Output,
    pub iterations: u64,
    /// One line about the answer (reached vertices, components, set size, ...).
    pub summary: String,
}

/// Unpacks a BFS entry into (depth, parent).
pub fn bfs_entry(x: u64) -> Option<(u32, u32)> {
    (x != u64::MAX).then_some(((x >> 32) as u32, x as u32))
}
/// Unpacks an SSSP entry into (distance, parent).
pub fn sssp_entry(x: u64) -> Option<(f32, u32)> {
    (x != u64::MAX).then_some((f32::from_bits((x >> 32) as u32), x as u32))
}

/// Runs `algo` on the engine.
pub fn run(e: &mut outcore_engine::StreamEngine, algo: Algo, p: &Params) -> Result<Run> {
    if algo.needs_root() && p.root >= e.vertices() {
        return Err(AlgoError::Invalid(format!(
            "root {} is not a vertex (the store has {} vertices)",
            p.root,
            e.vertices()
        )));
    }
    match algo {
        Algo::Bfs => bfs::run(e, p),
        Algo::Sssp => sssp::run(e, p),
        Algo::Wcc => wcc::run(e, p),
        Algo::WccLp => wcc_lp::run(e, p),
        Algo::Mis => mis::run(e, p),
        Algo::MisLuby => mis_luby::run(e, p),
        Algo::PageRank => pagerank::run(e, p),
        Algo::PageRankDelta => pagerank_delta::run(e, p),
        Algo::Spmv => spmv::run(e, p),
    }
}

/// SplitMix64's output function of `z` (its next value from state `z`).
pub(crate) fn mix64(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The sum of `xs`, compensated (Neumaier): the rounding error does not grow
/// with the number of terms.
pub fn compensated_sum(xs: impl Iterator<Item = f64>) -> f64 {
    let (mut sum, mut comp) = (0.0f64, 0.0f64);
    for x in xs {
        let t = sum + x;
        comp += if sum.abs() >= x.abs() {
            (sum - t) + x
        } else {
            (x - t) + sum
        };
        sum = t;
    }
    sum + comp
}

/// Stops a run whose iteration cap was reached before convergence.
pub(crate) fn cap_reached(p: &Params, it: u64) -> bool {
    p.iterations.is_some_and(|k| it >= k)
}
