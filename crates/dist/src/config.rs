//! How a distributed run is set up ([`DistConfig`]): the budget, the request
//! window, checkpoints, work stealing, resident accumulators and the
//! scatter's threads, each with its default.

use crate::checkpoint::FailAt;
use std::path::PathBuf;

/// How a run is set up.
#[derive(Debug, Clone)]
pub struct DistConfig {
    /// Bytes this rank may use.
    pub memory: u64,
    /// Outstanding chunk requests per engine (0: from §6.5's formula).
    pub window: usize,
    /// Seeds chunk placement and request targets.
    pub seed: u64,
    /// Run files (vertex state, updates) go to `work_dir/rank-K.run` (default:
    /// the rank's directory).
    pub work_dir: Option<PathBuf>,
    /// Checkpoint every this many iterations (0: never).
    pub checkpoint_every: u64,
    /// Start from the last checkpoint every rank committed.
    pub resume: bool,
    /// What runs (algorithm and parameters): a checkpoint resumes only the
    /// same run.
    pub run_key: String,
    /// A failure injected at a moment of the run (tests of `resume`).
    pub fail_at: Option<FailAt>,
    /// Idle engines help other masters (§5.3).
    pub steal: bool,
    /// Bytes of accumulators kept in memory from scatter to gather for the
    /// partitions this rank masters (their updates are combined at once, not
    /// stored), at most what `memory` leaves beside one partition's vertex
    /// state, the update bins and a full request window's replies; `None`: an eighth of `memory` (measured against none: 0.49x
    /// the time on one rank, 0.79x and 0.96x on 2 and 4 ranks sharing two
    /// cores — docs/benchmarks-distributed.md).
    pub resident_bytes: Option<u64>,
    /// Threads of the computation engine's scatter (0: the machine's cores
    /// but one (the storage engine's) over the ranks mpirun placed on it,
    /// `OMPI_COMM_WORLD_LOCAL_SIZE`; at least one).
    pub threads: usize,
}

/// Iterations between checkpoints unless told otherwise.
pub const DEFAULT_CHECKPOINT_EVERY: u64 = 5;

impl DistConfig {
    /// The scatter's thread count `threads` asks for.
    pub fn scatter_threads(&self) -> usize {
        if self.threads > 0 {
            return self.threads;
        }
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let local = std::env::var("OMPI_COMM_WORLD_LOCAL_SIZE")
            .ok()
            .and_then(|x| x.parse::<usize>().ok())
            .unwrap_or(1)
            .max(1);
        (cores.saturating_sub(1) / local).max(1)
    }

    /// A configuration with `memory` bytes and every other setting at its default.
    pub fn new(memory: u64) -> DistConfig {
        DistConfig {
            memory,
            window: 0,
            seed: 1,
            work_dir: None,
            checkpoint_every: DEFAULT_CHECKPOINT_EVERY,
            resume: false,
            run_key: String::new(),
            fail_at: None,
            steal: true,
            resident_bytes: None,
            threads: 0,
        }
    }
}
