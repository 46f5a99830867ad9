//! # outcore-algos — the algorithms, written once per programming model
//!
//! * [`programs`]: the edge programs ([`outcore_engine::EdgeProgram`]) — bfs,
//!   sssp, wcc-lp (label propagation), pagerank (LDBC Graphalytics definition),
//!   pagerank-delta, spmv, conductance and mis-gas; [`scc`] (forward colouring,
//!   backward marking over a store with marked reverse edges), [`bp`]
//!   (linearized belief propagation) and [`mcst`] (Borůvka's minimum cost
//!   spanning forest, whose edges read their destination's value) in modules of
//!   their own. The same definition runs on every engine: the
//!   streaming engine (CLIP ATC'17: in-place relaxation with loaded-data re-entry,
//!   §3.1, for the relaxation programs; one synchronous pass per iteration for the
//!   others), the jobs engine (GraphCP FCS'24 §3.6), the external engine (V-Part
//!   FAST'19 §4), the sort-reduce baseline, and — for the relaxation programs —
//!   the vertex engine (BAsC ATC'19 §5).
//! * Beyond-neighbourhood algorithms of the streaming engine (CLIP §3.2, §4.4,
//!   §5.3), which read and write any vertex from an edge and so are not edge
//!   programs: [`wcc`] (one-pass union-find, also a job), [`mis`] (greedy after
//!   `sort`) and [`mis_luby`] (Luby's randomized MIS, the baseline GridGraph and
//!   X-Stream run).
//! * [`vc`]: the vertex engine's searches that are not edge programs: diam (double
//!   sweep over the bfs program), bc (Brandes) and apsp (bit-parallel BFS).
//! * [`jobs`]: `outcore jobs` specs and the jobs built from the programs.
//!
//! [`verify`] checks results independently of the engine (its own sequential
//! passes over the edges of a store's grid or of a distributed layout): the
//! Graph500 rules for BFS and SSSP trees, an independent union-find for WCC, an
//! independent Tarjan search for SCC, independence and maximality for MIS,
//! Kruskal's forest for MCST, a serial recomputation for PageRank, SpMV and BP.
//!
//! Results are vertex arrays indexed by dense id; dense ids ascend with the user's
//! ids (ingest assigns them in sorted order), so writing them in dense order is
//! writing them in ascending user-id order.

pub mod bp;
pub mod jobs;
pub mod mcst;
pub mod mis;
pub mod mis_luby;
pub mod programs;
pub mod scc;
pub mod vc;
pub mod verify;
pub mod wcc;

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
    Conductance,
    MisGas,
    Scc,
    Bp,
    Mcst,
}

impl Algo {
    pub const ALL: [Algo; 14] = [
        Algo::Bfs,
        Algo::Sssp,
        Algo::Wcc,
        Algo::WccLp,
        Algo::Mis,
        Algo::MisLuby,
        Algo::PageRank,
        Algo::PageRankDelta,
        Algo::Spmv,
        Algo::Conductance,
        Algo::MisGas,
        Algo::Scc,
        Algo::Bp,
        Algo::Mcst,
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
            Algo::Conductance => "conductance",
            Algo::MisGas => "mis-gas",
            Algo::Scc => "scc",
            Algo::Bp => "bp",
            Algo::Mcst => "mcst",
        }
    }
    pub fn from_name(s: &str) -> Option<Algo> {
        Algo::ALL.into_iter().find(|a| a.name() == s)
    }
    /// Whether the algorithm reads edge weights (wrong on a `--with-reverse`
    /// store, whose reverse edges carry negative weights).
    pub fn reads_weights(self) -> bool {
        matches!(self, Algo::Sssp | Algo::Spmv | Algo::Mcst)
    }
    /// Whether the algorithm starts from `--root`.
    pub fn needs_root(self) -> bool {
        matches!(self, Algo::Bfs | Algo::Sssp)
    }
}

/// A question asked of an algorithm's edge program ([`ask_program`]).
trait ProgramQuery {
    type Answer;
    fn ask<P: outcore_engine::EdgeProgram>(&self, prog: &P) -> Self::Answer;
}

/// `q` asked of `algo`'s edge program (with parameters that change no array);
/// `None` for the algorithms that are not edge programs (wcc's union-find, the
/// MIS kernels).
fn ask_program<Q: ProgramQuery>(algo: Algo, q: &Q) -> Option<Q::Answer> {
    use programs::*;
    let (root, cap, n, damping) = (0, None, 1, 0.85);
    Some(match algo {
        Algo::Bfs => q.ask(&Bfs { root, cap }),
        Algo::Sssp => q.ask(&Sssp { root, cap }),
        Algo::WccLp => q.ask(&WccLp {
            cap,
            both_directions: false,
        }),
        Algo::PageRank => q.ask(&PageRank {
            n,
            damping,
            iterations: 1,
        }),
        Algo::PageRankDelta => q.ask(&PageRankDelta {
            n,
            damping,
            tolerance: 0.0,
            cap,
        }),
        Algo::Spmv => q.ask(&Spmv { iterations: 1 }),
        Algo::Conductance => q.ask(&Conductance { seed: 1 }),
        Algo::MisGas => q.ask(&MisGas { seed: 1, cap }),
        Algo::Scc => q.ask(&crate::scc::Scc { cap }),
        Algo::Bp => q.ask(&crate::bp::Bp {
            coupling: 0.0,
            seed: 1,
            tolerance: 0.0,
            iterations: 1,
        }),
        Algo::Mcst => q.ask(&crate::mcst::Mcst { cap }),
        Algo::Wcc | Algo::Mis | Algo::MisLuby => return None,
    })
}

/// Bytes per vertex of the vertex arrays `algo` allocates on the streaming engine
/// (beyond the engine's bitmaps), so a caller can tell whether they fit a budget.
pub fn stream_bytes_per_vertex(algo: Algo) -> u64 {
    struct Bytes;
    impl ProgramQuery for Bytes {
        type Answer = u64;
        fn ask<P: outcore_engine::EdgeProgram>(&self, prog: &P) -> u64 {
            outcore_engine::stream_bytes_per_vertex(prog)
        }
    }
    ask_program(algo, &Bytes).unwrap_or(match algo {
        Algo::MisLuby => 8,
        _ => 4, // wcc's parents, mis's states
    })
}

/// Bytes per vertex of the arrays `algo`'s edge pass touches at random on the
/// streaming engine ([`outcore_engine::stream_random_bytes_per_vertex`]);
/// `None` when every array is (relaxation programs, union-find, the MIS kernels).
pub fn stream_random_bytes_per_vertex(algo: Algo) -> Option<u64> {
    struct Random;
    impl ProgramQuery for Random {
        type Answer = Option<u64>;
        fn ask<P: outcore_engine::EdgeProgram>(&self, prog: &P) -> Option<u64> {
            outcore_engine::stream_random_bytes_per_vertex(prog)
        }
    }
    ask_program(algo, &Random).flatten()
}

/// Whether the streaming engine runs `algo` as a relaxation program whose
/// array, when mapped, runs band by band (its edges write their target only):
/// bfs, sssp, and wcc-lp on a store with both directions (`directed` false).
/// `Some(settles)`: whether it also takes a settled-vertex bitmap (one bit a
/// vertex) from the budget before the band's slice; `None` when not banded.
pub fn stream_banded(algo: Algo, directed: bool) -> Option<bool> {
    struct Banded;
    impl ProgramQuery for Banded {
        type Answer = Option<bool>;
        fn ask<P: outcore_engine::EdgeProgram>(&self, prog: &P) -> Option<bool> {
            (prog.relaxes() && !prog.both_directions()).then(|| prog.settles())
        }
    }
    if algo == Algo::WccLp && directed {
        return None;
    }
    ask_program(algo, &Banded).flatten()
}

/// bp's default coupling strength.
pub const DEFAULT_COUPLING: f64 = 0.001;

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
    /// bp: the coupling (homophily) strength `h` of linearized BP.
    pub coupling: f64,
}

impl Default for Params {
    fn default() -> Self {
        Params {
            root: 0,
            iterations: None,
            tolerance: 1e-7,
            damping: 0.85,
            seed: 1,
            coupling: DEFAULT_COUPLING,
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
    /// MCST: `f32 weight bits << 32 | parent` of each vertex's forest edge
    /// (`u64::MAX`: the root of its tree).
    Forest(VertexArray<u64>),
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
        Algo::Wcc => wcc::run(e, p),
        Algo::Mis => mis::run(e, p),
        Algo::MisLuby => mis_luby::run(e, p),
        _ => {
            let store = e.store();
            programs::run_program(e, store, algo, p)
        }
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

#[cfg(test)]
mod banded_tests {
    use super::{stream_banded, Algo};

    #[test]
    fn only_relaxation_programs_writing_their_target_alone_run_in_bands() {
        for directed in [false, true] {
            // bfs settles a vertex once reached (a bitmap), sssp never.
            assert_eq!(stream_banded(Algo::Bfs, directed), Some(true));
            assert_eq!(stream_banded(Algo::Sssp, directed), Some(false));
            assert_eq!(stream_banded(Algo::PageRank, directed), None);
            assert_eq!(stream_banded(Algo::Wcc, directed), None);
        }
        // wcc-lp on a one-way store relaxes sources too.
        assert!(stream_banded(Algo::WccLp, false).is_some());
        assert_eq!(stream_banded(Algo::WccLp, true), None);
    }
}
