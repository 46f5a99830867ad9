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

use crate::{EngineError, Result, AHEAD};
use outcore_io::{DeviceProfile, IoSnapshot};
use outcore_state::{AtomicBitmap, StateBudget, VertexArray};
use outcore_store::lists::{ListGroup, ListReader};
use outcore_store::reader::{Block, GridReader, RawBlock};
use outcore_store::Store;
use rayon::prelude::*;
use serde::Serialize;
use std::time::Instant;

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

/// How one iteration loads its edges (the resolved [`IoMode`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Load {
    Whole = 0,
    Runs = 1,
    Lists = 2,
}

impl Load {
    fn name(self) -> &'static str {
        match self {
            Load::Whole => "sequential",
            Load::Runs => "selective",
            Load::Lists => "lists",
        }
    }
}

/// What the cost model prices an iteration's loads with (see `JobsEngine::cheapest`).
#[derive(Clone, Copy)]
struct Pricing {
    /// Bytes per stored edge read (a packed id, and a weight where needed).
    edge_bytes: f64,
    with_weights: bool,
    /// Vertices the previous iteration's active edges activated, per edge (at
    /// most 1; 0 without DFVU or before the second iteration).
    fetch_yield: f64,
}

/// Seconds to read the lists of `plan` from `files` CSR payload files: the pages of
/// requests that read at most `io_block` bytes at the random bandwidth `bw_list`,
/// larger requests at the sequential one.
fn lists_cost(plan: &[ListGroup], files: u64, io_block: u64, bw_seq: f64, bw_list: f64) -> f64 {
    let (mut seq, mut ran) = (0u64, 0u64);
    for g in plan {
        if 4 * (g.b - g.a) > io_block {
            seq += g.pages();
        } else {
            ran += g.pages();
        }
    }
    (files * seq * 4096) as f64 / bw_seq + (files * ran * 4096) as f64 / bw_list
}

/// Lists units' on-demand reads (fetched activations).
struct Fetcher<'a> {
    lists: &'a ListReader<'a>,
    pool: &'a rayon::ThreadPool,
    degrees: &'a [u32],
    /// CSR payload files read per list (targets, and weights where needed).
    files: u64,
}

impl Fetcher<'_> {
    /// The whole lists of the vertices `cands` (sorted and deduplicated here), as
    /// many of the first as fit `room` bytes (which they use up), read in parallel
    /// requests into `loaded`: returns the vertices read. `largest` keeps the
    /// largest request (its buffers stay).
    fn fetch(
        &self,
        stats: &mut JobsStats,
        largest: &mut u64,
        mut cands: Vec<u32>,
        room: &mut u64,
        weights: bool,
        loaded: &mut Vec<Loaded>,
    ) -> Result<Vec<u32>> {
        cands.sort_unstable();
        cands.dedup();
        let mut take = 0;
        for &v in &cands {
            let b = 4 * self.files * self.degrees[v as usize] as u64 + 8;
            if b > *room {
                break;
            }
            *room -= b;
            take += 1;
        }
        cands.truncate(take);
        let vs = cands;
        if vs.is_empty() {
            return Ok(vs);
        }
        let t = Instant::now();
        let plan = self.lists.plan(&vs);
        let big = plan.iter().map(|g| g.b - g.a).max().unwrap_or(0);
        *largest = (*largest).max(4 * big + 4096);
        loaded.extend(read_lists(self.pool, self.lists, &vs, &plan, weights)?);
        let secs = t.elapsed().as_secs_f64();
        stats.io_seconds += secs;
        stats.io_wait_seconds += secs;
        stats.list_groups += plan.len() as u64;
        stats.lists_loaded += vs.len() as u64;
        stats.fetched += vs.len() as u64;
        Ok(vs)
    }
}

/// Whole sub-blocks handed back after processing, for the loader to read into
/// again: no allocation and zeroing of fresh buffers per sub-block (which was a
/// few percent of the CPU time of whole passes). It keeps at most `limit` bytes of
/// buffers (half the budget: the unit just processed, whose memory the loader's
/// next unit takes over), and hands a block out only to a sub-block that needs
/// most of its buffers, so the units in memory stay close to their accounting.
struct Spare {
    blocks: std::sync::Mutex<Vec<RawBlock>>,
    limit: u64,
}

impl Spare {
    /// Slack a handed-out block may hold beyond a quarter more than the need.
    const SLACK: u64 = 64 << 10;

    fn new(limit: u64) -> Spare {
        Spare {
            blocks: std::sync::Mutex::new(Vec::new()),
            limit,
        }
    }

    /// A block to read a sub-block of `read` bytes, `decoded` bytes once decoded,
    /// into: the smallest spare one that holds both without much waste, else a new
    /// one.
    fn take(&self, read: u64, decoded: u64) -> RawBlock {
        // Direct reads are aligned to 4 KiB at both ends.
        let read = read + 8192;
        let need = read + decoded;
        let mut v = self
            .blocks
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let fit = v
            .iter()
            .enumerate()
            .filter(|(_, b)| {
                let (p, d) = b.capacities();
                p >= read && d >= decoded
            })
            .min_by_key(|(_, b)| b.capacity_bytes())
            .map(|(i, b)| (i, b.capacity_bytes()));
        match fit {
            Some((i, cap)) if cap <= need + need / 4 + Self::SLACK => v.swap_remove(i),
            _ => RawBlock::default(),
        }
    }

    /// Keeps the whole sub-blocks of a processed unit, as far as the limit allows.
    fn give(&self, loaded: Vec<Loaded>) {
        let mut v = self
            .blocks
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let mut held: u64 = v.iter().map(|b| b.capacity_bytes()).sum();
        for l in loaded {
            if let Loaded::Whole(b) = l {
                let c = b.capacity_bytes();
                if held + c <= self.limit {
                    held += c;
                    v.push(b);
                }
            }
        }
    }
}

/// Reads the requests `groups` over the sorted `vertices` in parallel on `pool`,
/// as loaded blocks (see [`batch`]).
fn read_lists(
    pool: &rayon::ThreadPool,
    lists: &ListReader,
    vertices: &[u32],
    groups: &[ListGroup],
    weights: bool,
) -> Result<Vec<Loaded>> {
    pool.install(|| {
        groups
            .par_iter()
            .map(|g| lists.read(vertices, g, weights))
            .collect::<std::result::Result<Vec<Block>, _>>()
    })
    .map(batch)
    .map_err(EngineError::from)
}

/// Cuts items `0..n` into consecutive ranges `(g, h)` whose `bytes` sum to at most
/// `cap` (a range always takes at least one item).
fn fill(n: usize, bytes: impl Fn(usize) -> u64, cap: u64) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut g = 0;
    while g < n {
        let (mut h, mut sum) = (g, 0);
        while h < n && (h == g || sum + bytes(h) <= cap) {
            sum += bytes(h);
            h += 1;
        }
        out.push((g, h));
        g = h;
    }
    out
}

/// Cuts items `0..n` into as few consecutive ranges as [`fill`] does, of sizes as
/// even as that count allows: the smallest cap up to `cap` that still needs no
/// more ranges. Even units leave the most slack beside two of them (reuse) and
/// keep the loader and the processing in step.
fn fill_even(n: usize, bytes: impl Fn(usize) -> u64, cap: u64) -> Vec<(usize, usize)> {
    let k = fill(n, &bytes, cap).len();
    let total: u64 = (0..n).map(&bytes).sum();
    let (mut lo, mut hi) = ((total / k.max(1) as u64).min(cap), cap);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if fill(n, &bytes, mid).len() <= k {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    fill(n, bytes, hi)
}

/// The blocks of a lists unit's requests, in order, with runs of small ones
/// joined into blocks of at least [`TASK_EDGES`] edges (a block is at least one
/// task per job).
fn batch(blocks: Vec<Block>) -> Vec<Loaded> {
    let mut out: Vec<Loaded> = Vec::new();
    let mut cur: Option<Block> = None;
    for b in blocks {
        if b.dsts.len() >= TASK_EDGES {
            out.push(Loaded::Selective(b));
            continue;
        }
        match &mut cur {
            None => cur = Some(b),
            Some(c) => {
                let base = c.dsts.len() as u32;
                c.srcs.extend_from_slice(&b.srcs);
                c.offs.extend(b.offs[1..].iter().map(|&o| base + o));
                c.dsts.extend_from_slice(&b.dsts);
                if let (Some(w), Some(bw)) = (&mut c.weights, &b.weights) {
                    w.extend_from_slice(bw);
                }
            }
        }
        if cur.as_ref().is_some_and(|c| c.dsts.len() >= TASK_EDGES) {
            out.extend(cur.take().map(Loaded::Selective));
        }
    }
    out.extend(cur.map(Loaded::Selective));
    out
}

enum Loaded {
    Whole(RawBlock),
    Selective(Block),
}

/// Sources, offsets, targets and weights of a loaded sub-block.
type Parts<'a> = (&'a [u32], &'a [u32], &'a [u32], Option<&'a [f32]>);

impl Loaded {
    fn parts(&self) -> Parts<'_> {
        match self {
            Loaded::Whole(b) => (b.srcs(), b.offs(), b.dsts(), b.weights()),
            Loaded::Selective(b) => (&b.srcs, &b.offs, &b.dsts, b.weights.as_deref()),
        }
    }
}

struct Slot<'j> {
    job: &'j mut dyn Job,
    active: AtomicBitmap,
    next: AtomicBitmap,
    stats: JobStats,
}

/// Edges of a task (the last source run may take it past this).
const TASK_EDGES: usize = 16384;

/// Threads of the loader's I/O pool: the reads kept in flight.
pub const IO_THREADS: usize = 4;

/// Reads in flight in lists mode: its requests are small and random, and the
/// device serves more of those at once (the calibrated 4 KiB random bandwidth at
/// depth 16 is about twice that at depth 4 on the development VM).
pub const LIST_DEPTH: usize = 16;

/// How many edges ahead of the runs it scans [`Task::for_each`] fetches targets and
/// weights when few runs are picked (a software stream: the picked runs' skips
/// defeat the hardware's).
const STREAM_AHEAD: u32 = 256;

/// How many runs ahead [`Task::for_each`] hints a source when most runs are picked.
const DENSE_SOURCES_AHEAD: usize = 8;

/// One task of a job: a slice of one loaded sub-block's source runs, of which the
/// sources set in a filter bitmap are processed.
pub struct Task<'a> {
    srcs: &'a [u32],
    offs: &'a [u32],
    dsts: &'a [u32],
    ws: Option<&'a [f32]>,
    /// The task's runs: `a..b` of `srcs`.
    a: usize,
    b: usize,
    /// Source `u` is picked when bit `u - base` is set.
    filter: &'a AtomicBitmap,
    base: u32,
    /// No task that runs at the same time as this one touches this task's targets
    /// for the same job: the job asked for [`Job::exclusive_targets`] and the
    /// engine runs its sub-blocks, all of distinct column intervals, one task each.
    pub exclusive: bool,
}

impl Task<'_> {
    /// Whether at least half the runs are picked, judged from (at most) 32 runs
    /// spread over the task.
    fn dense(&self) -> bool {
        let step = ((self.b - self.a) / 32).max(1);
        let (picked, seen) = (self.a..self.b).step_by(step).fold((0, 0), |(p, n), x| {
            (
                p + self.filter.get(self.srcs[x] - self.base) as usize,
                n + 1,
            )
        });
        2 * picked >= seen
    }

    /// Calls `f(u, targets, weights)` for every picked source of the task, in
    /// order, with look-ahead hints `pre_src(u)` and `pre(targets)`. When at least
    /// half the runs are picked the hints go by position (the source
    /// `DENSE_SOURCES_AHEAD` runs on, the targets [`AHEAD`] edges on), the cheapest
    /// loop for a dense frontier. Otherwise they follow the picked runs, each
    /// hinted about AHEAD edges before `f` reaches it: with a sparse frontier,
    /// whatever run lies AHEAD edges further is mostly one the job skips. Returns
    /// the edges given to `f`.
    #[inline(always)]
    pub fn for_each(
        &self,
        mut pre_src: impl FnMut(u32),
        mut pre: impl FnMut(&[u32]),
        mut f: impl FnMut(u32, &[u32], Option<&[f32]>),
    ) -> u64 {
        let (srcs, offs, dsts) = (self.srcs, self.offs, self.dsts);
        if self.a == self.b {
            return 0;
        }
        if self.dense() {
            let end = offs[self.b] as usize;
            let mut edges = 0u64;
            for x in self.a..self.b {
                let u = srcs[x];
                if let Some(&w) = srcs[..self.b].get(x + DENSE_SOURCES_AHEAD) {
                    pre_src(w);
                }
                if !self.filter.get(u - self.base) {
                    continue;
                }
                let (ea, eb) = (offs[x] as usize, offs[x + 1] as usize);
                pre(&dsts[(ea + AHEAD).min(end)..(eb + AHEAD).min(end)]);
                f(u, &dsts[ea..eb], self.ws.map(|w| &w[ea..eb]));
                edges += (eb - ea) as u64;
            }
            return edges;
        }
        // The hinted, not yet applied runs: ring[head..tail] (mod RING). A run is
        // added only while the window counts fewer than AHEAD, and counts at least
        // 1 (its edges, or 1 for an empty run), so the window never holds more
        // than AHEAD + 1 runs.
        const RING: usize = 64;
        const _: () = assert!(RING > AHEAD + 1);
        let mut ring = [0u32; RING];
        let (mut head, mut tail) = (0usize, 0usize);
        let mut window = 0usize;
        let mut y = self.a;
        let mut edges = 0u64;
        loop {
            while window < AHEAD && y < self.b {
                // The scan skips through the targets (and weights), which the
                // hardware does not stream: fetch them STREAM_AHEAD edges on.
                let o = offs[y] + STREAM_AHEAD;
                crate::prefetch(dsts, o);
                if let Some(w) = self.ws {
                    crate::prefetch(w, o);
                }
                let u = srcs[y];
                if self.filter.get(u - self.base) {
                    let (ea, eb) = (offs[y] as usize, offs[y + 1] as usize);
                    pre_src(u);
                    pre(&dsts[ea..eb]);
                    // The weights are read only by `f`, a skip away from the
                    // previous picked run's: a stream the hardware does not follow.
                    if let Some(w) = self.ws {
                        for i in (ea..eb).step_by(16).chain((eb > ea).then(|| eb - 1)) {
                            crate::prefetch(w, i as u32);
                        }
                    }
                    ring[tail % RING] = y as u32;
                    tail += 1;
                    window += (eb - ea).max(1);
                }
                y += 1;
            }
            if head == tail {
                break;
            }
            let x = ring[head % RING] as usize;
            head += 1;
            let (ea, eb) = (offs[x] as usize, offs[x + 1] as usize);
            window -= (eb - ea).max(1);
            f(srcs[x], &dsts[ea..eb], self.ws.map(|w| &w[ea..eb]));
            edges += (eb - ea) as u64;
        }
        edges
    }
}

/// Runs the edge functions of jobs `ks` over the loaded blocks, for the sources
/// `pick(job)` = (bitmap, base) selects, as tasks of about 16K edges per job:
/// rayon's work stealing shares the threads among jobs in proportion to their
/// active edges. When `distinct_targets` (the blocks are one grid row's sub-blocks,
/// so of distinct column intervals) and there are at least two blocks per thread, a
/// job that asks for [`Job::exclusive_targets`] gets one task per block instead.
/// Returns the edges each job processed, and how many tasks were exclusive.
fn process<'b>(
    slots: &[Slot],
    ks: &[usize],
    loaded: &[Loaded],
    distinct_targets: bool,
    pick: &(dyn Fn(usize) -> Option<(&'b AtomicBitmap, u32)> + Sync),
) -> (Vec<(usize, u64)>, u64) {
    let whole_blocks = distinct_targets && loaded.len() >= 2 * rayon::current_num_threads();
    let mut tasks: Vec<(usize, usize, usize, usize, bool)> = Vec::new();
    for (li, l) in loaded.iter().enumerate() {
        let (srcs, offs, _, _) = l.parts();
        for &k in ks {
            let exclusive = whole_blocks && slots[k].job.exclusive_targets();
            let mut a = 0;
            while a < srcs.len() {
                let mut b = a + 1;
                while b < srcs.len() && (exclusive || ((offs[b] - offs[a]) as usize) < TASK_EDGES) {
                    b += 1;
                }
                tasks.push((li, k, a, b, exclusive));
                a = b;
            }
        }
    }
    let exclusive_tasks = tasks.iter().filter(|t| t.4).count() as u64;
    let edges = tasks
        .par_iter()
        .filter_map(|&(li, k, a, b, exclusive)| {
            let (srcs, offs, dsts, ws) = loaded[li].parts();
            let s = &slots[k];
            let (filter, base) = pick(k)?;
            let ctx = JobCtx { next: &s.next };
            let t = Task {
                srcs,
                offs,
                dsts,
                // A job that reads no weights gets none (and no hints for them).
                ws: ws.filter(|_| s.job.weighted()),
                a,
                b,
                filter,
                base,
                exclusive,
            };
            Some((k, s.job.task(&ctx, &t)))
        })
        .collect();
    (edges, exclusive_tasks)
}

/// Runs several jobs over one store, sharing the sub-blocks they load.
pub struct JobsEngine<'s> {
    store: &'s Store,
    cfg: JobsConfig,
    degrees: VertexArray<u32>,
    stats: JobsStats,
    observer: Option<Box<dyn JobsObserver>>,
}

impl<'s> JobsEngine<'s> {
    pub fn new(store: &'s Store, cfg: JobsConfig) -> Result<JobsEngine<'s>> {
        if cfg.io_block == 0 {
            return Err(EngineError::Invalid(
                "the I/O block size must be positive".into(),
            ));
        }
        let degrees = VertexArray::from_vec(store.degrees("out")?);
        Ok(JobsEngine {
            store,
            cfg,
            degrees,
            stats: JobsStats::default(),
            observer: None,
        })
    }

    /// [`JobsEngine::new`] with the out-degrees it keeps (4 bytes a vertex) taken
    /// from `budget`: in memory while it lasts, mapped from the work directory
    /// beyond, like the jobs' own vertex arrays.
    pub fn with_budget(
        store: &'s Store,
        cfg: JobsConfig,
        budget: &StateBudget,
    ) -> Result<JobsEngine<'s>> {
        if cfg.io_block == 0 {
            return Err(EngineError::Invalid(
                "the I/O block size must be positive".into(),
            ));
        }
        let mut degrees = budget.alloc("jobs-out-degree", store.vertices() as usize, 0u32)?;
        store.degrees_into("out", &mut degrees)?;
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

    /// Sequential with the loader's streams (its I/O threads read that many blocks
    /// at once; the single-stream figure where the profile has no parallel test),
    /// random 4 KiB at the loader's depth (one read in flight per I/O thread) and
    /// random 4 KiB at the lists mode's depth, bytes per second.
    fn bandwidths(&self) -> (f64, f64, f64) {
        match &self.cfg.profile {
            Some(p) => {
                let at = |depth: usize| {
                    p.random_read_bw_at(4096, depth as u64)
                        .unwrap_or(p.seq_read_bw() / 10.0)
                };
                (
                    p.seq_read_bw_at(IO_THREADS as u64),
                    at(IO_THREADS),
                    at(LIST_DEPTH),
                )
            }
            None => (500e6, 50e6, 50e6),
        }
    }

    /// S_seq and S_ran of the paper's Algorithm 1 over the sorted active set, in
    /// bytes. A group of small runs of contiguous ids is read as one request per
    /// sub-block it spans (min(P, its edges)), each at least one 4 KiB page, so S_ran
    /// is charged as what the device really transfers.
    fn alg1(&self, active: &[u32], edge_bytes: f64) -> (f64, f64) {
        let p = self.store.partitions() as u64;
        let b = self.cfg.io_block as f64;
        let (mut s_seq, mut s_ran) = (0.0, 0.0);
        // L: the pending group of small runs (bytes, edges).
        let mut pending = (0.0, 0u64);
        let mut prev: Option<(u32, bool)> = None; // (id, loaded sequentially)
        let flush = |pending: &mut (f64, u64), s_seq: &mut f64, s_ran: &mut f64| {
            let (bytes, edges) = *pending;
            if bytes > b {
                *s_seq += bytes;
            } else if edges > 0 {
                let requests = edges.min(p) as f64;
                *s_ran += bytes.max(requests * 4096.0);
            }
            *pending = (0.0, 0);
        };
        for &v in active {
            let d = self.degrees[v as usize] as u64;
            if d == 0 {
                continue;
            }
            let k = d.min(p) as f64;
            let run = d as f64 * edge_bytes / k;
            let contiguous = prev.is_some_and(|(id, _)| id + 1 == v);
            let seq = if contiguous && prev.is_some_and(|(_, s)| s) {
                s_seq += run * k;
                true
            } else {
                if !contiguous {
                    flush(&mut pending, &mut s_seq, &mut s_ran);
                }
                if run > b {
                    s_seq += run * k;
                    true
                } else {
                    pending.0 += d as f64 * edge_bytes;
                    pending.1 += d;
                    false
                }
            };
            prev = Some((v, seq));
        }
        flush(&mut pending, &mut s_seq, &mut s_ran);
        (s_seq, s_ran)
    }

    /// The cheapest way to load the rows `rows` of the grid for the sorted active
    /// vertices `act` of those rows, by the cost model: C_s (their non-empty
    /// sub-blocks whole, sequentially), C_r (each needed sub-block's index, a small
    /// request, plus S_seq and S_ran of Algorithm 1) and C_l (the lists' pages,
    /// priced by [`lists_cost`]; planned only when the lists' bytes alone, at the
    /// sequential bandwidth, could beat the cheaper grid mode). Also the lists plan
    /// when it was priced.
    ///
    /// With DFVU a lists iteration also reads, on demand, the lists of sources it
    /// activates ahead of its units (fetched activations), where a whole row holds
    /// them already: C_l is raised by the lists expected so — half (those in later
    /// rows) of the vertices the active lists' edges activate, estimated with the
    /// share `Pricing::fetch_yield` of the previous iteration's active edges that
    /// activated a vertex — each at the planned lists' average cost.
    fn cheapest(
        &self,
        grid: &GridReader,
        lists: &ListReader,
        rows: &[u32],
        act: &[u32],
        price: Pricing,
    ) -> (Load, Option<Vec<ListGroup>>) {
        let Pricing {
            edge_bytes,
            with_weights,
            fetch_yield,
        } = price;
        let p = self.store.partitions();
        let (bw_seq, bw_ran, bw_list) = self.bandwidths();
        let (mut c_s_bytes, mut index_bytes, mut index_blocks) = (0u64, 0u64, 0u64);
        for &r in rows {
            for c in 0..p {
                c_s_bytes += grid.block_read_bytes(r, c, with_weights);
                index_bytes += grid.entry(r, c).index_bytes();
                index_blocks += (grid.entry(r, c).edges > 0) as u64;
            }
        }
        let c_s = c_s_bytes as f64 / bw_seq;
        let list_edges: u64 = act.iter().map(|&v| self.degrees[v as usize] as u64).sum();
        // Each needed sub-block's index is one more small request.
        let requests = 4096.0 * index_blocks as f64 / bw_ran;
        // S_seq + S_ran counts every active edge's bytes at least once, so when the
        // random bandwidth is not above the sequential one C_r is at least `floor`;
        // a floor above C_s decides without Algorithm 1's pass over the active set
        // (every iteration of a dense frontier, e.g. PageRank's).
        let floor = (index_bytes as f64 + list_edges as f64 * edge_bytes) / bw_seq + requests;
        let c_r = if bw_ran <= bw_seq && floor > c_s {
            floor
        } else {
            let (s_seq, s_ran) = self.alg1(act, edge_bytes);
            (index_bytes as f64 + s_seq) / bw_seq + s_ran / bw_ran + requests
        };
        let best = c_s.min(c_r);
        let list_files = if with_weights { 2 } else { 1 };
        let mut plan = None;
        let c_l = if (4 * list_files * list_edges) as f64 / bw_seq < best {
            let g = plan.insert(lists.plan(act));
            let others = self.store.vertices() as f64 - act.len() as f64;
            let fetches = (fetch_yield * list_edges as f64 / 2.0).min(others);
            lists_cost(g, list_files, self.cfg.io_block, bw_seq, bw_list)
                * (1.0 + fetches / act.len().max(1) as f64)
        } else {
            f64::INFINITY
        };
        let load = if c_l < best {
            Load::Lists
        } else if c_r <= c_s {
            Load::Runs
        } else {
            Load::Whole
        };
        (load, plan)
    }

    /// Runs the jobs to completion (or until `max_iterations`).
    pub fn run(&mut self, jobs: &mut [&mut dyn Job], max_iterations: Option<u64>) -> Result<()> {
        let n = self.store.vertices() as usize;
        let p = self.store.partitions();
        let grid = self.store.grid()?;
        let lists = ListReader::open(self.store, &self.degrees)?;
        let io = self.store.stats().clone();
        let weighted_any = jobs.iter().any(|j| j.weighted());
        // Bytes per stored edge: a packed local id (store format 2), plus a weight.
        let with_weights = weighted_any && self.store.weighted();
        let edge_bytes = outcore_store::codec::id_bits(self.store.manifest().interval) as f64 / 8.0
            + if with_weights { 4.0 } else { 0.0 };
        let mut slots: Vec<Slot> = jobs
            .iter_mut()
            .map(|j| {
                let active = AtomicBitmap::new(n);
                j.init(&active);
                Slot {
                    job: &mut **j,
                    active,
                    next: AtomicBitmap::new(n),
                    stats: JobStats::default(),
                }
            })
            .collect();
        let io_block = self.cfg.io_block;
        // Reads in flight: a small pool of its own, apart from the compute threads.
        let io_pool = rayon::ThreadPoolBuilder::new()
            .num_threads(IO_THREADS)
            .thread_name(|i| format!("outcore-jobs-io-{i}"))
            .build()
            .map_err(|e| EngineError::Invalid(format!("cannot start the I/O threads: {e}")))?;
        let list_pool = rayon::ThreadPoolBuilder::new()
            .num_threads(LIST_DEPTH)
            .thread_name(|i| format!("outcore-jobs-lists-{i}"))
            .build()
            .map_err(|e| EngineError::Invalid(format!("cannot start the I/O threads: {e}")))?;
        let start_io: IoSnapshot = io.snapshot();
        let spare = Spare::new(self.cfg.memory / 2);
        // The whole sub-blocks the previous iteration kept, in the order processed.
        let mut kept: Vec<RawBlock> = Vec::new();
        // The previous iteration's active edges (the cost model's fetch yield).
        let mut prev_edges: Option<u64> = None;
        let mut it = 0u64;
        // Bytes of the largest lists request read so far (its buffers stay).
        let mut largest_list_request = 0u64;
        loop {
            let live: Vec<usize> = (0..slots.len())
                .filter(|&k| !slots[k].stats.finished && slots[k].active.any())
                .collect();
            for s in slots.iter_mut() {
                if !s.stats.finished && !s.active.any() {
                    s.stats.finished = true;
                }
            }
            if live.is_empty() || max_iterations.is_some_and(|m| it >= m) {
                break;
            }
            it += 1;
            let iteration_start = (Instant::now(), io.snapshot());
            // The shared active set, by row.
            let shared = AtomicBitmap::new(n);
            for &k in &live {
                shared.or_from(&slots[k].active);
            }
            let active: Vec<u32> = shared.ones().collect();
            self.stats.iteration_active.push(active.len() as u64);
            // The share of the previous iteration's active edges that activated a
            // vertex for this one (fetched activations in the cost model; only the
            // auto mode with DFVU uses it).
            let fetch_yield = if self.cfg.io_mode == IoMode::Auto && self.cfg.dfvu {
                let y = match prev_edges {
                    Some(e) if e > 0 => (active.len() as f64 / e as f64).min(1.0),
                    _ => 0.0,
                };
                prev_edges = Some(
                    active
                        .iter()
                        .map(|&v| self.degrees[v as usize] as u64)
                        .sum(),
                );
                y
            } else {
                0.0
            };
            let price = Pricing {
                edge_bytes,
                with_weights,
                fetch_yield,
            };
            let rows: Vec<u32> = (0..p)
                .filter(|&r| shared.any_in(self.store.interval(r)))
                .collect();
            // Where each active row's active vertices lie in `active`.
            let spans: Vec<(usize, usize)> = rows
                .iter()
                .map(|&r| {
                    let range = self.store.interval(r);
                    (
                        active.partition_point(|&v| v < range.start),
                        active.partition_point(|&v| v < range.end),
                    )
                })
                .collect();
            let forced = |l: Load| (vec![l; rows.len()], None);
            let (row_loads, mut plan): (Vec<Load>, Option<Vec<ListGroup>>) =
                match (self.cfg.io_mode, self.cfg.granularity) {
                    (IoMode::Sequential, _) => forced(Load::Whole),
                    (IoMode::Selective, _) => forced(Load::Runs),
                    (IoMode::Lists, _) => forced(Load::Lists),
                    (IoMode::Auto, Granularity::Iteration) => {
                        let (l, plan) = self.cheapest(&grid, &lists, &rows, &active, price);
                        (vec![l; rows.len()], plan)
                    }
                    (IoMode::Auto, Granularity::Row) => (
                        rows.iter()
                            .zip(&spans)
                            .map(|(&r, &(a, b))| {
                                self.cheapest(&grid, &lists, &[r], &active[a..b], price).0
                            })
                            .collect(),
                        None,
                    ),
                };
            let mut by_mode = [0u32; 3];
            for &l in &row_loads {
                by_mode[l as usize] += 1;
            }
            self.stats.iteration_row_modes.push(by_mode);
            self.stats
                .modes
                .push(match by_mode.iter().filter(|&&c| c > 0).count() {
                    1 => row_loads[0].name().into(),
                    _ => "mixed".into(),
                });
            if row_loads.iter().any(|&l| l != Load::Lists) {
                self.stats.blocks_skipped += (p - rows.len() as u32) as u64 * p as u64;
            }
            // Lists mode reads a list's targets and, with weights, as many weight
            // bytes, from the CSR's two files.
            let list_files = if with_weights { 2 } else { 1 };
            // A third of the budget left beside the lists requests' read buffers
            // (LIST_DEPTH threads, one buffer per CSR file each, as large as the
            // largest request read so far).
            let memory = self.cfg.memory;
            let lists_third =
                |largest: u64| memory.saturating_sub(LIST_DEPTH as u64 * list_files * largest) / 3;
            // The iteration's units: groups of one row's non-empty sub-blocks that fit
            // half the budget (one being processed, one read and handed over only
            // when processing takes it). Weights are read only for rows where a
            // weighted job is active. A unit of lists mode has no row or columns but the requests `groups`
            // over its `active` vertices (of one or more consecutive active rows
            // that load lists).
            struct Unit {
                load: Load,
                row: u32,
                cols: Vec<u32>,
                groups: Vec<ListGroup>,
                /// The vertices whose edges the unit may hold.
                range: std::ops::Range<u32>,
                /// Lists units: the vertices whose lists it fetches on demand (the
                /// lists units of consecutive rows split those rows between them).
                fetch: std::ops::Range<u32>,
                /// Every loaded source's edges are all in the unit (for DFVU).
                complete: bool,
                weights: bool,
                jobs: Vec<usize>,
                active: Vec<u32>,
            }
            // The live jobs active in a range of vertices, and whether the unit
            // holding them needs weights.
            let jobs_in = |range: &std::ops::Range<u32>| {
                let ks: Vec<usize> = live
                    .iter()
                    .copied()
                    .filter(|&k| slots[k].active.any_in(range.clone()))
                    .collect();
                let weights = self.store.weighted() && ks.iter().any(|&k| slots[k].job.weighted());
                (ks, weights)
            };
            let mut units: Vec<Unit> = Vec::new();
            let mut i = 0;
            while i < rows.len() {
                if row_loads[i] == Load::Lists {
                    // Consecutive active rows that load lists share one plan.
                    let j = i + row_loads[i..]
                        .iter()
                        .take_while(|&&l| l == Load::Lists)
                        .count();
                    let act = &active[spans[i].0..spans[j - 1].1];
                    let plan = match plan.take() {
                        Some(plan) if i == 0 && j == rows.len() => plan,
                        _ => lists.plan(act),
                    };
                    // Groups of requests whose lists (targets, weights, 8 bytes a
                    // source) fit a third of the budget left beside the read
                    // buffers (one unit is processed, one read, and the first may
                    // fetch as much on demand); a request's buffer is its bytes
                    // and a page more for alignment.
                    let largest = plan.iter().map(|g| g.b - g.a).max().unwrap_or(0);
                    largest_list_request = largest_list_request.max(4 * largest + 4096);
                    let unit_bytes = lists_third(largest_list_request);
                    let first_unit = units.len();
                    let group_bytes = |g: &ListGroup| {
                        4 * list_files * (g.b - g.a) + 8 * (g.last - g.first) as u64
                    };
                    for (g, h) in fill(plan.len(), |i| group_bytes(&plan[i]), unit_bytes) {
                        let (first, last) = (plan[g].first, plan[h - 1].last);
                        let vs = act[first..last].to_vec();
                        let range = vs[0]..vs[vs.len() - 1] + 1;
                        let (jobs_here, weights) = jobs_in(&range);
                        units.push(Unit {
                            load: Load::Lists,
                            row: 0,
                            cols: Vec::new(),
                            groups: plan[g..h]
                                .iter()
                                .map(|x| ListGroup {
                                    first: x.first - first,
                                    last: x.last - first,
                                    ..*x
                                })
                                .collect(),
                            fetch: range.clone(),
                            range,
                            complete: true,
                            weights,
                            jobs: jobs_here,
                            active: vs,
                        });
                    }
                    let (lo, hi) = (
                        self.store.interval(rows[i]).start,
                        self.store.interval(rows[j - 1]).end,
                    );
                    for x in first_unit..units.len() {
                        let end = units.get(x + 1).map_or(hi, |n| n.range.start);
                        let start = if x == first_unit {
                            lo
                        } else {
                            units[x].fetch.start
                        };
                        units[x].fetch = start..end;
                    }
                    i = j;
                    continue;
                }
                let r = rows[i];
                let range = self.store.interval(r);
                let row_active = active[spans[i].0..spans[i].1].to_vec();
                let (jobs_here, weights) = jobs_in(&range);
                let cols: Vec<u32> = (0..p).filter(|&c| grid.entry(r, c).edges > 0).collect();
                self.stats.blocks_skipped += (p as usize - cols.len()) as u64;
                let block_bytes = |i: usize| grid.block_memory_bytes(r, cols[i], weights);
                for (g, h) in fill_even(cols.len(), block_bytes, self.cfg.memory / 2) {
                    units.push(Unit {
                        load: row_loads[i],
                        row: r,
                        cols: cols[g..h].to_vec(),
                        groups: Vec::new(),
                        range: range.clone(),
                        fetch: range.clone(),
                        complete: g == 0 && h == cols.len(),
                        weights,
                        jobs: jobs_here.clone(),
                        active: row_active.clone(),
                    });
                }
                i += 1;
            }
            // What each unit holds in memory, as planned (a lists or selective
            // unit: up to half the budget).
            let unit_bytes: Vec<u64> = units
                .iter()
                .map(|u| match u.load {
                    Load::Whole => u
                        .cols
                        .iter()
                        .map(|&c| grid.block_memory_bytes(u.row, c, u.weights))
                        .sum(),
                    _ => self.cfg.memory / 2,
                })
                .collect();
            // `slack[x]`: what the budget leaves beside two of units x.. (the one
            // processed and the one read meanwhile) — room for kept units.
            let mut slack = vec![self.cfg.memory; units.len() + 1];
            for x in (0..units.len()).rev() {
                slack[x] = slack[x + 1].min(self.cfg.memory.saturating_sub(2 * unit_bytes[x]));
            }
            // Reuse: the whole sub-blocks the previous iteration kept are handed to
            // the loader for the units that load them (same row and column, with
            // weights if needed) instead of being read, as far as they fit the
            // slack of the iteration's units; the rest go back to the spare buffers.
            let mut preloaded: Vec<Vec<RawBlock>> = (0..units.len()).map(|_| Vec::new()).collect();
            let mut preloaded_bytes = vec![0u64; units.len()];
            let mut kept_bytes = 0u64;
            for b in std::mem::take(&mut kept) {
                let bytes = b.capacity_bytes();
                let x = units.iter().position(|u| {
                    u.load == Load::Whole
                        && u.row == b.row
                        && u.cols.contains(&b.col)
                        && (b.weights().is_some() || !u.weights)
                });
                match x {
                    Some(x) if kept_bytes + bytes <= slack[0] => {
                        kept_bytes += bytes;
                        preloaded_bytes[x] += bytes;
                        self.stats.blocks_reused += 1;
                        self.stats.bytes_reused +=
                            grid.block_read_bytes(b.row, b.col, units[x].weights);
                        preloaded[x].push(b);
                    }
                    _ => spare.give(vec![Loaded::Whole(b)]),
                }
            }
            let reused: Vec<usize> = preloaded.iter().map(Vec::len).collect();
            // Beside the lists requests' read buffers, a third of the budget holds
            // the unit being processed, a third the one being read, and a third
            // the lists a unit fetches on demand.
            let fetch_cap = lists_third(largest_list_request);
            // A loader thread reads the units in order, several reads in flight on
            // its own small pool, while this thread processes the previous unit.
            let grid_ref = &grid;
            let spare_ref = &spare;
            let lists_ref = &lists;
            let units_ref = &units;
            let io_pool = &io_pool;
            let list_pool = &list_pool;
            let fetcher = Fetcher {
                lists: &lists,
                pool: list_pool,
                degrees: &self.degrees,
                files: list_files,
            };
            std::thread::scope(|scope| -> Result<()> {
                let (tx, rx) = std::sync::mpsc::sync_channel::<(Result<Vec<Loaded>>, f64)>(0);
                scope.spawn(move || {
                    for (u, pre) in units_ref.iter().zip(preloaded) {
                        let t = Instant::now();
                        let loaded = if u.load == Load::Lists {
                            read_lists(list_pool, lists_ref, &u.active, &u.groups, u.weights)
                        } else {
                            // The sub-blocks kept from the previous iteration
                            // are not read again.
                            let to_read: Vec<u32> = u
                                .cols
                                .iter()
                                .copied()
                                .filter(|&c| pre.iter().all(|b| b.col != c))
                                .collect();
                            io_pool
                                .install(|| {
                                    to_read
                                        .par_iter()
                                        .map(|&c| -> Result<Loaded> {
                                            if u.load == Load::Runs {
                                                Ok(Loaded::Selective(
                                                    grid_ref.read_sources_merged(
                                                        u.row, c, &u.active, u.weights, io_block,
                                                    )?,
                                                ))
                                            } else {
                                                let read =
                                                    grid_ref.block_read_bytes(u.row, c, u.weights);
                                                let all = grid_ref
                                                    .block_memory_bytes(u.row, c, u.weights);
                                                let mut b = spare_ref.take(read, all - read);
                                                grid_ref
                                                    .read_block_into(u.row, c, u.weights, &mut b)?;
                                                Ok(Loaded::Whole(b))
                                            }
                                        })
                                        .collect::<Result<Vec<_>>>()
                                })
                                .map(|mut read| {
                                    if pre.is_empty() {
                                        return read;
                                    }
                                    // In the columns' order, whatever came from memory.
                                    read.extend(pre.into_iter().map(Loaded::Whole));
                                    read.sort_by_key(|l| match l {
                                        Loaded::Whole(b) => b.col,
                                        Loaded::Selective(_) => 0,
                                    });
                                    read
                                })
                        };
                        let failed = loaded.is_err();
                        if tx.send((loaded, t.elapsed().as_secs_f64())).is_err() || failed {
                            return;
                        }
                    }
                });
                for (x, u) in units.iter().enumerate() {
                    let t = Instant::now();
                    let (loaded, io_secs) = rx
                        .recv()
                        .map_err(|_| EngineError::Invalid("the sub-block loader stopped".into()))?;
                    let mut loaded = loaded?;
                    self.stats.io_seconds += io_secs;
                    self.stats.io_wait_seconds += t.elapsed().as_secs_f64();
                    match u.load {
                        Load::Whole => self.stats.blocks_whole += (loaded.len() - reused[x]) as u64,
                        Load::Runs => self.stats.blocks_selective += loaded.len() as u64,
                        Load::Lists => {
                            self.stats.list_groups += u.groups.len() as u64;
                            self.stats.lists_loaded +=
                                loaded.iter().map(|l| l.parts().0.len() as u64).sum::<u64>();
                        }
                    }
                    let t = Instant::now();
                    let range = u.range.clone();
                    let distinct = u.load != Load::Lists;
                    // Covered activations (with DFVU): a source active now that an
                    // earlier unit of this iteration already activated again is
                    // about to push its newest value along all its out-edges (a
                    // complete unit holds them all), so that activation is done
                    // here and leaves the next frontier — else the DFVU round below
                    // would push the same value again. For min-monotone jobs only.
                    // Pulled activations: in a whole row, a source that an earlier
                    // unit activated but that is not active now has all its runs
                    // here too, so it joins this main pass (rather than the DFVU
                    // round after it) and leaves the next frontier.
                    // Lists units fetch the lists of such sources on demand (below).
                    let mut wanted: Vec<(usize, Vec<u32>)> = Vec::new();
                    if self.cfg.dfvu && u.complete {
                        for &k in &u.jobs {
                            let s = &slots[k];
                            if !s.job.future_updates() {
                                continue;
                            }
                            // A planned weighted job made the unit read weights.
                            if u.load == Load::Whole {
                                let (had, gained) = s.next.move_into(&s.active, range.clone());
                                self.stats.covered += had;
                                self.stats.pulled += gained;
                                continue;
                            }
                            self.stats.covered += s.next.clear_where(&s.active, range.clone());
                            if u.load != Load::Lists {
                                continue;
                            }
                            // What is left in the next frontier here is not active
                            // for this job: sources whose lists the unit holds join
                            // the main pass; the others are fetched.
                            let mut missing = Vec::new();
                            for v in s.next.ones_in(u.fetch.clone()) {
                                if u.active.binary_search(&v).is_ok() {
                                    s.next.clear(v);
                                    s.active.set(v);
                                    self.stats.pulled += 1;
                                } else {
                                    missing.push(v);
                                }
                            }
                            if !missing.is_empty() {
                                wanted.push((k, missing));
                            }
                        }
                    }
                    // Fetched activations: the lists of sources an earlier unit of
                    // this iteration activated, within the unit's fetch range, read
                    // now (synchronously, in parallel requests, up to a third of the
                    // lists budget per unit) so that they join this pass instead of
                    // the next iteration — what pulled activations do for whole rows.
                    let mut room = fetch_cap;
                    let mut fetched = fetcher.fetch(
                        &mut self.stats,
                        &mut largest_list_request,
                        wanted.iter().flat_map(|(_, m)| m.iter().copied()).collect(),
                        &mut room,
                        u.weights,
                        &mut loaded,
                    )?;
                    for (k, missing) in &wanted {
                        let s = &slots[*k];
                        for &v in missing {
                            if fetched.binary_search(&v).is_ok() {
                                s.next.clear(v);
                                s.active.set(v);
                                self.stats.pulled += 1;
                            }
                        }
                    }
                    let (edges, exclusive) = process(&slots, &u.jobs, &loaded, distinct, &|k| {
                        Some((&slots[k].active, 0))
                    });
                    for (k, e) in edges {
                        slots[k].stats.edges_processed += e;
                    }
                    self.stats.exclusive_tasks += exclusive;
                    self.stats.edges_loaded +=
                        loaded.iter().map(|l| l.parts().2.len() as u64).sum::<u64>();
                    // DFVU (§3.4): while the whole row is in memory, sources of this
                    // interval that this iteration already activated push their new
                    // values now and leave the next frontier — all their out-edges
                    // are in this row. Selective loads hold only the shared active
                    // sources' runs, so only those qualify (in lists mode, their
                    // whole lists). A weighted job needs the weights, which a unit
                    // read without them does not have. Up to `dfvu_rounds` rounds
                    // while the unit is in memory: each round takes what the
                    // previous one activated.
                    let rounds = if self.cfg.dfvu && u.complete {
                        self.cfg.dfvu_rounds
                    } else {
                        0
                    };
                    // A lists unit's fetched sources lie in its fetch range.
                    let held = if u.load == Load::Lists {
                        u.fetch.clone()
                    } else {
                        range.clone()
                    };
                    for _ in 0..rounds {
                        let base = held.start;
                        let mut ahead: Vec<Option<AtomicBitmap>> =
                            (0..slots.len()).map(|_| None).collect();
                        let mut ks = Vec::new();
                        let round_jobs: Vec<usize> = live
                            .iter()
                            .copied()
                            .filter(|&k| slots[k].job.future_updates())
                            .filter(|&k| {
                                u.weights || !slots[k].job.weighted() || !self.store.weighted()
                            })
                            .collect();
                        if u.load == Load::Lists {
                            // What the unit itself activated in its fetch range and
                            // does not hold: fetched, as far as the room allows.
                            let missing: Vec<u32> = round_jobs
                                .iter()
                                .flat_map(|&k| slots[k].next.ones_in(held.clone()))
                                .filter(|v| {
                                    u.active.binary_search(v).is_err()
                                        && fetched.binary_search(v).is_err()
                                })
                                .collect();
                            let more = fetcher.fetch(
                                &mut self.stats,
                                &mut largest_list_request,
                                missing,
                                &mut room,
                                u.weights,
                                &mut loaded,
                            )?;
                            fetched.extend(more);
                            fetched.sort_unstable();
                        }
                        for &k in &round_jobs {
                            let s = &slots[k];
                            let f = AtomicBitmap::new(held.len());
                            let mut any = 0u64;
                            let mut take = |v: u32| {
                                if s.next.get(v) {
                                    s.next.clear(v);
                                    f.set(v - base);
                                    any += 1;
                                }
                            };
                            if u.load != Load::Whole {
                                u.active.iter().chain(&fetched).for_each(|&v| take(v));
                            } else {
                                // `take` clears only the bit just yielded.
                                s.next.ones_in(range.clone()).for_each(&mut take);
                            }
                            if any > 0 {
                                self.stats.dfvu_sources += any;
                                ahead[k] = Some(f);
                                ks.push(k);
                            }
                        }
                        if ks.is_empty() {
                            break;
                        }
                        let pick = |k: usize| ahead[k].as_ref().map(|f| (f, base));
                        let (edges, exclusive) = process(&slots, &ks, &loaded, distinct, &pick);
                        for (k, e) in edges {
                            slots[k].stats.edges_processed += e;
                            self.stats.dfvu_edges += e;
                        }
                        self.stats.exclusive_tasks += exclusive;
                    }
                    self.stats.compute_seconds += t.elapsed().as_secs_f64();
                    // Its sub-blocks from memory leave those held for later.
                    kept_bytes -= preloaded_bytes[x];
                    // Reuse: keep its whole sub-blocks for the next iteration while
                    // they and the others held fit the slack the rest of this
                    // iteration leaves (two of its units in memory at once): the
                    // first sub-blocks in the rows' order are kept, which the next
                    // iteration starts with.
                    let mut spent = Vec::new();
                    for l in loaded {
                        match l {
                            Loaded::Whole(block) if self.cfg.reuse => {
                                let bytes = block.capacity_bytes();
                                if kept_bytes + bytes <= slack[x + 1] {
                                    kept_bytes += bytes;
                                    kept.push(block);
                                } else {
                                    spent.push(Loaded::Whole(block));
                                }
                            }
                            l => spent.push(l),
                        }
                    }
                    spare.give(spent);
                }
                Ok(())
            })?;
            for &k in &live {
                let s = &mut slots[k];
                s.stats.iterations = it;
                s.active.clear_all();
                let done = s
                    .job
                    .end_iteration(it, &s.next)
                    .map_err(EngineError::Invalid)?;
                std::mem::swap(&mut s.active, &mut s.next);
                if done {
                    s.stats.finished = true;
                    s.active.clear_all();
                }
            }
            self.stats.iterations = it;
            self.stats
                .iteration_seconds
                .push(iteration_start.0.elapsed().as_secs_f64());
            self.stats
                .iteration_bytes
                .push(io.snapshot().since(&iteration_start.1).bytes_read);
            if let Some(o) = &mut self.observer {
                let js: Vec<JobStats> = slots.iter().map(|s| s.stats.clone()).collect();
                o.iteration(it, &js);
            }
        }
        let d = io.snapshot().since(&start_io);
        self.stats.bytes_read = d.bytes_read;
        self.stats.read_requests = d.read_requests;
        self.stats.jobs = slots.iter().map(|s| s.stats.clone()).collect();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The cost model's fetch term: two active sources of degree 200 in a graph
    /// of 50K vertices read their two lists more cheaply than their row whole —
    /// unless each active edge is expected to activate a vertex (yield 1), half of
    /// which a lists iteration would fetch on demand: then the row whole wins.
    #[test]
    fn expected_fetches_raise_the_lists_cost() {
        let dir = tempfile::tempdir().unwrap();
        let input = dir.path().join("g.txt");
        let n = 50_000u64;
        let mut text = String::new();
        for u in 0..n {
            for k in [7u64, 13, 31, 101, 977] {
                text += &format!("{u} {}\n", (u * k + 1) % n);
            }
        }
        for u in [10u64, 11] {
            for i in 0..195 {
                text += &format!("{u} {}\n", (i * 251 + u) % n);
            }
        }
        std::fs::write(&input, text).unwrap();
        let out = dir.path().join("g");
        let opts = outcore_store::IngestOptions {
            partitions: Some(4),
            vertices: Some(n),
            ..Default::default()
        };
        outcore_store::ingest(&[input], &out, &opts, &outcore_store::ingest::Quiet).unwrap();
        let store = Store::open(&out).unwrap();
        let e = JobsEngine::new(&store, JobsConfig::default()).unwrap();
        let grid = store.grid().unwrap();
        let lists = ListReader::open(&store, &e.degrees).unwrap();
        let price = |fetch_yield: f64| Pricing {
            edge_bytes: 2.0,
            with_weights: false,
            fetch_yield,
        };
        let pick = |y: f64| e.cheapest(&grid, &lists, &[0], &[10, 11], price(y)).0;
        assert_eq!(pick(0.0), Load::Lists);
        assert_eq!(pick(0.001), Load::Lists);
        assert_eq!(pick(1.0), Load::Whole);
    }

    /// `fill_even` cuts into as many ranges as `fill`, contiguous and covering
    /// every item, none over the cap (but a single oversized item), and its
    /// largest range is never larger than `fill`'s.
    #[test]
    fn fill_even_balances_within_the_cap() {
        let sizes: Vec<Vec<u64>> = vec![
            vec![],
            vec![5],
            vec![100],
            vec![10; 16],
            (1..40).map(|i| (i * 37) % 23 + 1).collect(),
            vec![30, 1, 1, 1, 30, 1, 1, 1, 30],
            vec![70, 5, 5, 70],
        ];
        for xs in &sizes {
            for cap in [1u64, 10, 32, 50, 64, 1000] {
                let by = |i: usize| xs[i];
                let greedy = fill(xs.len(), by, cap);
                let even = fill_even(xs.len(), by, cap);
                assert_eq!(even.len(), greedy.len(), "{xs:?} cap {cap}");
                let mut next = 0;
                let size = |&(g, h): &(usize, usize)| (g..h).map(by).sum::<u64>();
                for r in &even {
                    assert_eq!(r.0, next, "{xs:?} cap {cap}: {even:?}");
                    assert!(r.1 > r.0);
                    assert!(size(r) <= cap || r.1 == r.0 + 1, "{xs:?} cap {cap}");
                    next = r.1;
                }
                assert_eq!(next, xs.len());
                let max = |v: &[(usize, usize)]| v.iter().map(size).max().unwrap_or(0);
                assert!(max(&even) <= max(&greedy), "{xs:?} cap {cap}");
            }
        }
        // Sixteen 10-byte items under a cap of 128: greedy 120 + 40, even 80 + 80.
        assert_eq!(fill_even(16, |_| 10, 128), vec![(0, 8), (8, 16)]);
    }

    /// Every picked run reaches `f` once, in order, with its own targets and
    /// weights, and nothing unpicked; no target is hinted twice; with sparse
    /// picks each run is hinted before `f` sees it. Densities cover both loops.
    #[test]
    fn for_each_applies_picked_runs_after_their_hints() {
        let runs = 300usize;
        let srcs: Vec<u32> = (0..runs as u32).map(|i| 1000 + 3 * i).collect();
        let mut offs = vec![0u32];
        for i in 0..runs {
            // Lengths 0..50: a run of every 50 is empty.
            offs.push(offs[i] + (i as u32 * 7) % 50);
        }
        let m = offs[runs] as usize;
        let dsts: Vec<u32> = (0..m as u32).collect();
        let ws: Vec<f32> = (0..m).map(|e| e as f32).collect();
        for keep in [1usize, 2, 3, 7, 50, 1000] {
            let filter = AtomicBitmap::new(2000);
            let mut want = Vec::new();
            for (i, &u) in srcs.iter().enumerate() {
                // keep = 1: every run; larger: sparser, irregular picks.
                if (i * 31 + 7) % keep == 0 {
                    filter.set(u - 900);
                    want.push(u);
                }
            }
            for (a, b) in [(0, runs), (17, 18), (5, 250), (299, 300)] {
                let t = Task {
                    srcs: &srcs,
                    offs: &offs,
                    dsts: &dsts,
                    ws: Some(&ws),
                    a,
                    b,
                    filter: &filter,
                    base: 900,
                    exclusive: false,
                };
                let dense = t.dense();
                if (a, b) == (0, runs) {
                    assert_eq!(dense, keep <= 2, "keep {keep}");
                }
                let hinted_src = std::cell::RefCell::new(Vec::new());
                let hinted_dst = std::cell::RefCell::new(vec![0u32; m]);
                let mut got = Vec::new();
                let edges = t.for_each(
                    |u| hinted_src.borrow_mut().push(u),
                    |d| {
                        d.iter()
                            .for_each(|&v| hinted_dst.borrow_mut()[v as usize] += 1)
                    },
                    |u, d, w| {
                        let x = srcs.iter().position(|&s| s == u).unwrap();
                        let r = offs[x] as usize..offs[x + 1] as usize;
                        assert_eq!(d, &dsts[r.clone()]);
                        assert_eq!(w.unwrap(), &ws[r.clone()]);
                        // The window loop (sparse picks) hints each picked run's own
                        // source and targets before applying it; the dense loop hints
                        // by position (sources 8 runs on, targets AHEAD edges on).
                        if !dense {
                            assert!(hinted_src.borrow().contains(&u), "source {u} not hinted");
                            assert!(r.clone().all(|e| hinted_dst.borrow()[e] == 1));
                        }
                        got.push(u);
                    },
                );
                let picked: Vec<u32> = srcs[a..b]
                    .iter()
                    .copied()
                    .filter(|u| want.contains(u))
                    .collect();
                assert_eq!(got, picked, "keep {keep}, runs {a}..{b}");
                let sum: u64 = picked
                    .iter()
                    .map(|u| {
                        let x = srcs.iter().position(|s| s == u).unwrap();
                        (offs[x + 1] - offs[x]) as u64
                    })
                    .sum();
                assert_eq!(edges, sum);
                assert!(
                    hinted_dst.borrow().iter().all(|&c| c <= 1),
                    "a target hinted twice"
                );
            }
        }
    }
}
