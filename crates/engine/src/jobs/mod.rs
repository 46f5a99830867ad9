//! The concurrent-jobs engine of GraphCP (FCS'24, graphcp-fcs24.md §3): J jobs on
//! one store share every sub-block they load.
//!
//! Execution model (§3.3, Algorithm 2): in each iteration the shared active set is
//! the union of the live jobs' active sets; sub-blocks are loaded once, in one
//! common order (row-major: source interval by source interval), and every job with
//! active sources in a sub-block processes it before the next is loaded. Each job
//! keeps its own vertex values and its own active bitmaps (current and next
//! iteration); a job that finishes is dropped, and nothing only it needed is loaded
//! again. A row of the grid whose source interval has no shared active vertex is
//! skipped whole.
//!
//! Benefit-aware loading (§3.3.2): per iteration (the paper's granularity) the engine
//! estimates C_s — reading every needed sub-block whole, sequentially — and C_r —
//! reading each needed sub-block's per-source index plus only the active sources'
//! runs, with S_seq and S_ran from the paper's Algorithm 1 over the active set (a run
//! or a merged group of runs of contiguous ids longer than the I/O block size B is
//! sequential) — from the calibrated bandwidths, and loads the cheaper way. Run sizes
//! come from the out-degrees held in memory: a vertex of out-degree d has its edges
//! spread over min(d, P) sub-blocks of its row, so one run is about d·m / min(d, P)
//! bytes (m = 4, or 8 with weights), and each random run costs at least one 4 KiB
//! page per sub-block it spans. Selective loads merge runs less than B apart into
//! one request. `IoMode::Sequential` / `IoMode::Selective` force a mode (GraphCP-b1/-b2).
//!
//! Granularity (the issue asks to decide per sub-block where that measures better):
//! with `Granularity::Row` the same three costs are computed for each needed row
//! of the grid — its non-empty sub-blocks, its active sources — and each row is
//! loaded its own cheapest way; consecutive active rows that load lists share one
//! plan of requests. A row is the finest unit that keeps DFVU (a source's out-edges
//! all lie in its row), so decisions are not made per sub-block. An iteration
//! whose rows load in different ways reports the mode "mixed".
//!
//! Lists mode (not in the paper): a source's run in each of up to P sub-blocks costs
//! a page each, so a sparse frontier still touches most of the grid (Kronecker
//! scale 22 at P = 32: 12K active vertices of 4.2M need 458 MiB whole or about
//! as much selectively). C_l prices reading each active source's whole list from
//! the out-CSR instead ([`outcore_store::lists`]): the pages of requests that read
//! at most B bytes at the 4 KiB random bandwidth at depth [`LIST_DEPTH`], larger
//! requests at the sequential one; the cheapest of C_s, C_r and C_l wins. With
//! DFVU a lists iteration also reads lists on demand (fetched activations, below),
//! which C_l then counts as expected: half of the vertices the active edges
//! activate (the other half lie in rows already passed), at the share of the
//! previous iteration's active edges that activated a vertex, each at the planned
//! lists' average cost. Without it uk-2007's four-bfs mix loaded its second
//! iteration as lists — 8.7K planned, then 11.2K fetched, 6.71 MiB against 4.12
//! MiB whole — and kron22's Sim1 its ninth (0.53-0.57 s against 0.32-0.33 s whole).
//! `IoMode::Lists` forces it. A lists unit holds whole lists, so DFVU applies to
//! its sources as to a whole row's; its targets lie anywhere, so it never runs
//! exclusive tasks.
//!
//! Several reads are in flight at once: a loader thread reads the sub-blocks of a row
//! in parallel on a small I/O pool of its own, in groups that fit half the memory
//! budget, one group ahead of the processing (I/O overlaps compute): it hands a
//! group over only when processing takes it (a rendezvous channel), so at most two
//! groups are in memory — the one being processed and the one read. Weights are
//! read only for rows where a job that needs them is active. The buffers of a
//! processed group's whole sub-blocks go back to a spare list (at most half the
//! budget) that the loader reads the next groups into, instead of allocating and
//! zeroing fresh ones per sub-block.
//!
//! Reuse across iterations (not in the paper): two units are in memory at a time
//! (the one processed and the one read), so when an iteration's units are smaller
//! than half the budget M, the rest — M less twice the largest unit still to come
//! in the iteration — holds the first whole sub-blocks after their units are
//! processed, and the next iteration takes them from memory instead of reading
//! them again where it loads the same sub-block whole (with weights where it
//! needs them); a unit of which some sub-blocks are in memory reads only the
//! others. The kept sub-blocks stay within the budget for the whole iteration,
//! so the rows' order does not change. (Keeping the *last* units instead, with every other
//! iteration run backwards or the kept rows moved first, measured worse: a
//! frontier carried into the next iteration lies mostly in early rows, which the
//! ascending order processes first and whose activations later rows pull — Het
//! at Kronecker scale 22 needed 15 iterations and read 4.30 GiB instead of 13 and
//! 3.42 GiB.) Het at scale 22, 128 MiB: P = 32, about 2.2 of 32 rows per whole
//! iteration, 3.42 -> 3.19 GiB read; P = 16, where a row takes 48-52 MB, half a
//! row, 3.35 -> 3.27 GiB. `reuse: false` turns it off.
//!
//! Scheduling (§3.3.3): a loaded sub-block becomes tasks of about 16K edges per job
//! with active sources in it; rayon's work stealing runs them, so each job gets
//! threads in proportion to its active edges. A task runs through [`Job::task`],
//! whose loop over the source runs is compiled per job type (no dynamic call per
//! run) and hints each job's source and target state ahead: by position when at
//! least half the task's runs are picked, else following the picked runs (with
//! their targets and weights fetched further ahead, as the skips defeat the
//! hardware's stream detection). A job that accumulates
//! into its targets (PageRank) asks for [`Job::exclusive_targets`]: when the unit
//! has at least two sub-blocks per thread it gets one task per sub-block, and since
//! a unit's sub-blocks lie in distinct column intervals, no two of its tasks that
//! run at once share a target, so it adds with a plain load and store instead of a
//! compare-and-swap loop (not in the paper; the locked read-modify-write per edge
//! was an eighth of the Het mix's samples on a Kronecker graph).
//!
//! Future-vertex updating (DFVU, §3.4): after a row of the grid (all sub-blocks of
//! one source interval) has been processed while wholly in memory, the sources of
//! that interval which this iteration has already activated, and whose runs are in
//! memory, are processed again at once with their new values and removed from the
//! next frontier — every out-edge of a source lies in its row. The paper's
//! column-order condition (i <= j) becomes "the row is in memory" in our row-major
//! order. Only jobs whose fixpoint does not depend on the timing of relaxations take
//! part (bfs, sssp, label propagation); PageRank stays exactly BSP. `dfvu: false`
//! turns it off. Rows larger than half the budget are loaded in groups and get
//! no DFVU. `dfvu_rounds` > 1 repeats the look-ahead on the row while it activates
//! sources of its own interval — CLIP-style re-entry for the min-monotone jobs; on
//! the NY road network 8 rounds cut a 4-job bfs/sssp mix from 2.58 GiB to 590 MiB
//! read, while on Kronecker graphs (low diameter) it changes nothing.
//!
//! Covered activations (with DFVU, not in the paper): before a unit that holds all
//! out-edges of its sources is processed, a min-monotone job's sources that are
//! active now *and* were activated again by an earlier unit of this iteration
//! leave the next frontier: their runs in this unit read the newest value, so
//! that activation is already served. Without this, the DFVU round after the unit
//! pushed the same values a second time: on the Het mix at Kronecker scale 22 it
//! cuts the edges processed from 1.03G to 0.91G (sssp -20%, wcc -19%), with the
//! same iterations and answers.
//!
//! Pulled activations (with DFVU, whole loads; not in the paper): before a whole
//! row is processed, a min-monotone job's sources of that row that an earlier row
//! of this iteration activated, and that are *not* active now, join the row's main
//! pass and leave the next frontier. The DFVU round after the main pass would
//! process them anyway (in a whole row it takes every source of the row in the next
//! frontier, whoever activated it), but in a pass of their own, with a round's
//! bitmap, and what they activate in the row would wait for a further round; in
//! the main pass they share the tasks of the row's other sources and the DFVU round
//! carries their activations one step further. Het at Kronecker scale 22: DFVU
//! re-processing 4.75M -> 1.09M sources and about 0.7 s less; Sim1 3.66 -> 3.30 GiB
//! read (faster convergence within the rows). It costs no I/O (the loads were
//! planned before) and applies to the jobs active in the row when the iteration was
//! planned (the others' activations there are left to the DFVU round; taking them
//! into the main pass too measured no different), whose weights the unit has read
//! where they need them.
//!
//! Fetched activations (with DFVU, lists units; not in the paper): a lists unit
//! holds only its planned sources' lists, so it cannot pull as a whole row does —
//! without help a lists iteration advances a frontier one step while a whole row
//! advances it several. Each lists unit owns a fetch range (the lists units of
//! consecutive rows split those rows between them); before its main pass, sources
//! in that range that an earlier unit activated are pulled (those whose lists it
//! holds) or *fetched*: their lists are read on demand, synchronously, in parallel
//! requests on the lists pool, and they join the pass; each DFVU round likewise
//! fetches the lists of the sources the unit itself activated in its range. What a
//! unit fetches is capped at a third of the lists budget; the rest waits for the
//! next iteration as before.
//!
//! Invariants: a job sees every edge (u, v) of the store whose source u is in its
//! active set at the start of the iteration once in that iteration (with pulled
//! and fetched activations, also every source pulled into a unit before its main
//! pass), whichever way
//! the sub-block was loaded (and again ahead, under DFVU, if u was re-activated);
//! selective loads read only index and run bytes and whole loads check the
//! sub-block's checksums (a reused unit was checked when it was read, and the
//! store is read-only). Kept sub-blocks never push loaded data past the budget:
//! at any time the kept sub-blocks plus the unit processed and the unit read fit
//! `memory`, as the two units alone do (unless a single sub-block is larger than
//! half of it: it is then a unit of its own, and nothing is kept beside it). The
//! spare buffers, at most half the budget, are idle memory the next reads take
//! over.
//!
//! Files: `mod.rs` the public types and the engine's set-up; `cost.rs` the cost
//! model (Algorithm 1, the three ways to load and their prices); `loader.rs`
//! reading sub-blocks and lists within the memory (fetcher, spare buffers,
//! grouping); `task.rs` the per-sub-block tasks the jobs process; `run.rs` the
//! iteration loop (Algorithm 2, DFVU, reuse).

mod cost;
mod loader;
mod run;
mod task;
#[cfg(test)]
mod tests;

pub use task::{Task, IO_THREADS, LIST_DEPTH};

use crate::{EngineError, Result};
use outcore_io::DeviceProfile;
use outcore_state::{AtomicBitmap, StateBudget, VertexArray};
use outcore_store::Store;
use serde::Serialize;
use std::sync::Arc;

/// How sub-blocks are loaded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum IoMode {
    /// Decide each iteration by the cost model.
    Auto,
    /// Always read whole sub-blocks (GraphCP-b1).
    Sequential,
    /// Always read only the active sources' runs (GraphCP-b2).
    Selective,
    /// Always read the active sources' whole out-edge lists from the out-CSR
    /// ([`outcore_store::lists`]; not in the paper).
    Lists,
}

impl std::str::FromStr for IoMode {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        match s {
            "auto" => Ok(IoMode::Auto),
            "sequential" => Ok(IoMode::Sequential),
            "selective" => Ok(IoMode::Selective),
            "lists" => Ok(IoMode::Lists),
            _ => Err(format!(
                "unknown io mode {s:?} (auto, sequential, selective or lists)"
            )),
        }
    }
}

/// Where the auto mode applies the cost model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Granularity {
    /// One mode for all the rows an iteration needs (GraphCP, §3.3.2).
    Iteration,
    /// A mode for each needed row of the grid, priced over that row's sub-blocks
    /// and active sources (consecutive rows that load lists share their requests).
    Row,
}

impl std::str::FromStr for Granularity {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        match s {
            "iteration" => Ok(Granularity::Iteration),
            "row" => Ok(Granularity::Row),
            _ => Err(format!("unknown io granularity {s:?} (iteration or row)")),
        }
    }
}

/// Settings of a [`JobsEngine`].
#[derive(Debug, Clone)]
pub struct JobsConfig {
    /// Budget for loaded sub-blocks (the jobs' vertex values are their own).
    pub memory: u64,
    pub io_mode: IoMode,
    /// Calibrated device; without one, 500 MB/s sequential and 50 MB/s random.
    pub profile: Option<DeviceProfile>,
    /// The I/O block size B of Algorithm 1.
    pub io_block: u64,
    /// Dependency-based future-vertex updating (§3.4), for the jobs that allow it.
    pub dfvu: bool,
    /// DFVU rounds per row in memory (1 = the paper's single look-ahead).
    pub dfvu_rounds: u32,
    /// Where `IoMode::Auto` decides: once per iteration (the paper) or per row.
    pub granularity: Granularity,
    /// Keep an iteration's first whole sub-blocks in what the budget leaves beside
    /// two units, and let the next iteration take them instead of reading them.
    pub reuse: bool,
}

impl Default for JobsConfig {
    fn default() -> Self {
        JobsConfig {
            memory: 1 << 30,
            io_mode: IoMode::Auto,
            profile: None,
            io_block: 64 << 10,
            dfvu: true,
            dfvu_rounds: 1,
            granularity: Granularity::Iteration,
            reuse: true,
        }
    }
}

/// What an edge function may do besides updating its own values.
pub struct JobCtx<'a> {
    next: &'a AtomicBitmap,
}

impl JobCtx<'_> {
    /// Makes `v` active for this job in the next iteration.
    pub fn activate(&self, v: u32) {
        self.next.set(v);
    }
}

/// A BSP job (GraphCP's `UserFunction`, §3.6): its own values, updated edge by edge.
pub trait Job: Send + Sync {
    /// Whether the edge function needs weights.
    fn weighted(&self) -> bool {
        false
    }
    /// Whether the edge function may also run ahead, for sources activated in this
    /// iteration whose edges are in memory (DFVU, §3.4): true for min-monotone jobs
    /// (bfs, sssp, label propagation), whose fixpoint does not depend on when a
    /// relaxation happens; false for BSP-exact jobs such as PageRank.
    fn future_updates(&self) -> bool {
        false
    }
    /// Before the first iteration: set the values up and mark the active vertices.
    fn init(&mut self, active: &AtomicBitmap);
    /// The edges of one source `u` that is active for this job in this iteration,
    /// as one run of a loaded sub-block: targets `dsts`, weights `ws` when read with
    /// weights (else every weight is 1). Runs on many threads at once (atomics).
    fn edges(&self, ctx: &JobCtx, u: u32, dsts: &[u32], ws: Option<&[f32]>);
    /// A look-ahead hint: targets whose edges [`Job::edges`] will see about
    /// [`crate::AHEAD`] edges later (in the same task); a job may prefetch their
    /// state (see [`crate::prefetch`]). Must not change any value.
    fn ahead(&self, _dsts: &[u32]) {}
    /// A look-ahead hint for a source whose run [`Job::edges`] will see about
    /// [`crate::AHEAD`] edges later. Must not change any value.
    fn ahead_source(&self, _u: u32) {}
    /// Whether the job wants each loaded sub-block as one task of its own, so
    /// that its edge functions may update targets without read-modify-write
    /// atomics when [`Task::exclusive`] says no other task runs on the same
    /// targets (PageRank's sums).
    fn exclusive_targets(&self) -> bool {
        false
    }
    /// Runs one task: [`Job::edges`] for every source of the task that is picked,
    /// with the look-ahead hints. The default body is compiled for each job type,
    /// so the calls inside are static; a job overrides it to specialise on
    /// [`Task::exclusive`]. Returns the edges processed.
    fn task(&self, ctx: &JobCtx, t: &Task) -> u64 {
        t.for_each(
            |u| self.ahead_source(u),
            |d| self.ahead(d),
            |u, d, w| self.edges(ctx, u, d, w),
        )
    }
    /// Writes mapped vertex arrays' dirty pages back ([`VertexArray::write_back`]);
    /// the engine calls it after each unit of work, so the dirty part of mapped
    /// state stays bounded by what one unit updates.
    fn write_back(&self) -> std::io::Result<()> {
        Ok(())
    }
    /// After the iteration (`iteration` counts from 1), with `next` holding what the
    /// edge functions activated (the job may add more, e.g. all vertices). Returns
    /// true when the job has finished; an error stops the whole run.
    fn end_iteration(
        &mut self,
        iteration: u64,
        next: &AtomicBitmap,
    ) -> std::result::Result<bool, String>;
}

/// Counters of one job.
#[derive(Debug, Clone, Default, Serialize)]
pub struct JobStats {
    pub iterations: u64,
    pub edges_processed: u64,
    pub finished: bool,
}

/// Counters of the shared engine.
#[derive(Debug, Clone, Default, Serialize)]
pub struct JobsStats {
    pub iterations: u64,
    pub blocks_whole: u64,
    pub blocks_selective: u64,
    pub blocks_skipped: u64,
    /// Whole sub-blocks an iteration took from the previous one's memory instead
    /// of reading them (`JobsConfig::reuse`), and the bytes those reads would
    /// have been.
    pub blocks_reused: u64,
    pub bytes_reused: u64,
    /// Sources whose whole out-edge lists were read from the CSR (lists mode).
    pub lists_loaded: u64,
    /// Requests of the lists mode (a group of lists in adjacent pages is one).
    pub list_groups: u64,
    /// The mode chosen in each iteration ("sequential", "selective" or "lists"), and each
    /// iteration's seconds and bytes read (to compare modes iteration by iteration).
    pub modes: Vec<String>,
    /// Rows of each iteration loaded [whole, selectively, as lists] (with
    /// `Granularity::Row` an iteration may mix them: its mode is then "mixed").
    pub iteration_row_modes: Vec<[u32; 3]>,
    pub iteration_seconds: Vec<f64>,
    pub iteration_bytes: Vec<u64>,
    /// Each iteration's shared active set (vertices active for any live job).
    pub iteration_active: Vec<u64>,
    pub bytes_read: u64,
    pub read_requests: u64,
    pub edges_loaded: u64,
    /// DFVU: sources processed ahead (and dropped from the next frontier) and the
    /// edges they processed.
    pub dfvu_sources: u64,
    pub dfvu_edges: u64,
    /// Activations for the next iteration dropped because the source was still
    /// to be processed in this iteration, with all its out-edges in one unit.
    pub covered: u64,
    /// Activations for the next iteration taken into this one instead: the source
    /// was not active, but a unit later in this iteration holds all its out-edges
    /// (its row, loaded whole) or its whole list (a lists unit, which reads the
    /// lists it does not hold on demand).
    pub pulled: u64,
    /// Of those, sources of lists units whose lists were read on demand (they
    /// were not among the unit's planned sources).
    pub fetched: u64,
    /// Tasks that ran a whole sub-block for a job with exclusive targets
    /// ([`Job::exclusive_targets`]: plain stores instead of atomic adds).
    pub exclusive_tasks: u64,
    /// Seconds the loader spent reading, and seconds processing waited for it.
    pub io_seconds: f64,
    pub io_wait_seconds: f64,
    pub compute_seconds: f64,
    pub jobs: Vec<JobStats>,
}

/// Told about progress after every iteration: (iteration, jobs' stats).
pub trait JobsObserver: Send {
    fn iteration(&mut self, iteration: u64, jobs: &[JobStats]);
}

/// Runs several jobs over one store, sharing the sub-blocks they load.
pub struct JobsEngine<'s> {
    store: &'s Store,
    cfg: JobsConfig,
    degrees: Arc<VertexArray<u32>>,
    stats: JobsStats,
    observer: Option<Box<dyn JobsObserver>>,
}

impl<'s> JobsEngine<'s> {
    pub fn new(store: &'s Store, cfg: JobsConfig) -> Result<JobsEngine<'s>> {
        let unlimited = StateBudget::new(u64::MAX, store.dir().to_path_buf());
        Self::with_budget(store, cfg, &unlimited)
    }

    /// [`JobsEngine::new`] with the out-degrees it keeps (4 bytes a vertex) taken
    /// from `budget`: in memory while it lasts, mapped from the work directory
    /// beyond, like the jobs' own vertex arrays.
    pub fn with_budget(
        store: &'s Store,
        cfg: JobsConfig,
        budget: &StateBudget,
    ) -> Result<JobsEngine<'s>> {
        let mut degrees = budget.alloc("out-degree", store.vertices() as usize, 0u32)?;
        store.degrees_into("out", &mut degrees)?;
        Self::with_out_degrees(store, cfg, Arc::new(degrees))
    }

    /// [`JobsEngine::new`] with the store's out-degrees already read (and shared
    /// with the jobs that need them).
    pub fn with_out_degrees(
        store: &'s Store,
        cfg: JobsConfig,
        degrees: Arc<VertexArray<u32>>,
    ) -> Result<JobsEngine<'s>> {
        if cfg.io_block == 0 {
            return Err(EngineError::Invalid(
                "the I/O block size must be positive".into(),
            ));
        }
        if degrees.len() as u64 != store.vertices() {
            return Err(EngineError::Invalid(
                "the out-degrees are not the store's".into(),
            ));
        }
        Ok(JobsEngine {
            store,
            cfg,
            degrees,
            stats: JobsStats::default(),
            observer: None,
        })
    }

    pub fn set_observer(&mut self, o: Box<dyn JobsObserver>) {
        self.observer = Some(o);
    }

    /// What a run of `jobs` jobs holds in memory per vertex of a store of
    /// `vertices`, beside the jobs' own arrays and the sub-blocks: the iteration's
    /// active set as a list and its per-row copies (4 bytes each, at most every
    /// vertex), and two bitmaps per job plus the shared one.
    pub fn frontier_bytes(vertices: u64, jobs: usize) -> u64 {
        vertices * 8 + (2 * jobs as u64 + 1) * vertices.div_ceil(8)
    }

    /// Sets the memory for loaded sub-blocks (what the budget leaves beside the
    /// vertex state, once that is allocated).
    pub fn set_memory(&mut self, bytes: u64) {
        self.cfg.memory = bytes;
    }

    pub fn stats(&self) -> &JobsStats {
        &self.stats
    }
}
