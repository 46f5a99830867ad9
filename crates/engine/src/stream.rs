//! The CLIP edge-streaming engine (ATC'17 §3–§4).
//!
//! # Design
//! * **Workflow (§4.1).** [`StreamEngine::exec`] runs one iteration: the grid's
//!   blocks are visited in a [`BlockOrder`] — row-major `(0,0),(0,1),…,(1,0)`, the
//!   order CLIP uses for union-find locality (§4.4), or column-major. Two reader
//!   threads read the blocks (block k by reader k % 2, two requests in flight)
//!   straight into a bounded ring of reusable aligned buffers ([`RawBlock`]),
//!   each reader owning half the ring, while the caller's thread (or a rayon pool)
//!   processes the blocks in order, so I/O overlaps compute (§4.3).
//! * **Look-ahead.** [`StreamEngine::exec_ahead`] calls a hint for each target
//!   [`STREAM_AHEAD`] edges before its edge function runs; algorithms [`prefetch`] the
//!   target's state there, and a [`Hint`] may also take each source a few runs
//!   before its run ([`Hints`]: the source's message). Not in the paper: random
//!   vertex accesses are what an edge function waits on once the edges stream
//!   at disk speed (`stream/hint.rs`).
//! * **Flat runs.** [`StreamEngine::exec_flat`] applies edge work that depends
//!   on the source alone without a branch per run (`stream/runs.rs`: a run's
//!   value written into per-edge slots, then one loop over the edges).
//! * **Selective scheduling (§4.2, §4.3).** The active set is an atomic bitmap. A
//!   block whose source interval holds no active vertex is not read at all (block
//!   skipping); inside a block, an inactive source's whole run is skipped with one
//!   bit test thanks to the per-source index (edge skipping). Edge functions
//!   activate vertices for the next iteration with [`Ctx::activate`].
//! * **Loaded-data re-entry (§3.1).** After the first pass over a block, the
//!   block's sources activated during that pass are processed again, pass after
//!   pass, until a pass activates none of the block's sources or MRT passes have
//!   run. The first pass processes the iteration's active set only (synchronous,
//!   so `mrt = 1` is exactly GridGraph's one pass per block per iteration);
//!   re-entry passes are asynchronous — a source activated earlier in the same
//!   pass is processed in that pass — which lets information cross many hops of
//!   the loaded sub-graph per pass (measured: BFS on road-luxembourg needs 113
//!   iterations with MRT 5 against 1035 with MRT 1; 208 if re-entry passes were
//!   synchronous too) at the price of re-relaxing some edges.
//! * **Beyond the neighborhood (§3.2, §3.3).** Vertex arrays come from the
//!   engine's [`StateBudget`]: in memory while the budget lasts, mmap'd from the
//!   work directory beyond it. Edge functions capture them and may touch any
//!   vertex.
//! * **Bands (not in the paper).** [`StreamEngine::exec_bands`] streams the
//!   blocks in bands of target intervals, row by row inside a band, with a hook
//!   at each band's start and end: an array written only at edges' targets is
//!   then written one band's slice at a time, which a caller holding a mapped
//!   array keeps in memory and writes back once (relaxation programs,
//!   `program/stream.rs`).
//! * **Sort (§4.2).** [`StreamEngine::sort`] writes a derived layout, all edges in
//!   a user-defined order (an out-of-core external sort), and
//!   [`StreamEngine::exec_sorted`] streams it once, in order, on one thread — for
//!   order-dependent one-pass algorithms such as greedy MIS (§5.3.1)
//!   (`stream/sorted.rs`).
//! * **Iterations from the CSR (not in the paper).** `StreamEngine::csr_iteration`
//!   runs an iteration that reads the store's CSR lists instead of the grid:
//!   bottom-up over the in-edges, or top-down over a small frontier's
//!   out-edges, for direction-optimizing BFS (`program/pull.rs`, [`BottomUp`]).
//!
//! # Invariants
//! * `active` is read-only during an iteration (the loader decides block skips
//!   from it); activations go to `next`, which becomes `active` when the
//!   iteration ends.
//! * In [`Mode::Single`] edges are applied in storage order: blocks in the chosen
//!   order, sources ascending within a block, targets ascending within a source.
//!   In [`Mode::Multi`] a block's sources are split among the pool's threads and
//!   edge functions must use atomics. In [`Mode::Columns`] each block is one
//!   thread's, and a column (target interval) is one thread's at a time: a
//!   thread takes the next block in order, waits while another holds its
//!   column, and updates targets with plain loads and stores. Only a diagonal
//!   block (its targets its own sources) re-enters; the re-entry bits of a
//!   row are written by the thread holding its diagonal block alone.
//! * Every block is checked against its CRC when read; a damaged block stops the
//!   run with an error naming the file and block.
//!
//! # Memory plan
//! The budget (`--memory`) pays, in this order: the bitmaps (4 bits per vertex),
//! the grid index, a fixed 8 MiB allowance for the process, the ring (at least two
//! slots of the largest block; up to four, or two per thread above two threads,
//! while they take at most a quarter of what is left), and then vertex arrays,
//! which are mapped once the rest is gone.

use crate::error::{EngineError, Result};
use outcore_io::{IoSnapshot, ReadMode};
use outcore_state::{AtomicBitmap, StateBudget, VertexArray};
use outcore_store::{GridReader, RawBlock, Store};
use rayon::prelude::*;
use std::ops::Range;

mod columns;
mod held;
mod hint;
mod process;
mod runs;
mod shares;
mod stats;
pub use hint::{prefetch, prefetch_each, Hint, Hints, AHEAD, SOURCE_AHEAD, STREAM_AHEAD};
pub use runs::{Flat, Pass, Runs};
mod sorted;
use held::Feed;
pub use shares::Share;
pub use sorted::SortedEdges;
pub use stats::StreamStats;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::mpsc::{channel, sync_channel};
use std::time::Instant;

/// Reader threads of the loader: two block reads in flight when the ring has
/// two slots or more.
const READERS: usize = 2;

/// `f(v, w)` for each target of a run and its weight (1.0 without weights),
/// in storage order.
#[inline(always)]
pub(crate) fn each_target(dsts: &[u32], ws: Option<&[f32]>, mut f: impl FnMut(u32, f32)) {
    match ws {
        Some(ws) => {
            for (&v, &w) in dsts.iter().zip(ws) {
                f(v, w);
            }
        }
        None => {
            for &v in dsts {
                f(v, 1.0);
            }
        }
    }
}

/// The run function ([`StreamEngine::exec_runs`]) that applies the edge
/// function `f` to each edge of a run, in storage order.
#[inline(always)]
fn each_edge<F>(f: F) -> impl Fn(&Ctx, u32, &[u32], Option<&[f32]>) + Sync
where
    F: Fn(&Ctx, u32, u32, f32) + Sync,
{
    move |ctx, u, dsts, ws| each_target(dsts, ws, |v, w| f(ctx, u, v, w))
}

/// What [`StreamEngine::exec_bands`] tells its hook: a band's target vertices
/// are about to be written, or will not be written again this iteration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Band {
    Start(Range<u32>),
    End(Range<u32>),
}

/// The order blocks are streamed in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum BlockOrder {
    /// `(0,0),(0,1),…,(0,P-1),(1,0),…`: one source interval at a time.
    #[default]
    RowMajor,
    /// `(0,0),(1,0),…,(P-1,0),(0,1),…`: one target interval at a time.
    ColumnMajor,
}

/// How edge functions run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// One thread, edges in storage order: for order-dependent algorithms.
    Single,
    /// The pool's threads split each block; edge functions use atomics.
    Multi,
    /// The pool's threads take whole blocks, and no two blocks with the same
    /// target interval (column) are processed at once: an edge function may
    /// update its target with a plain load and store instead of a
    /// read-modify-write atomic (which costs about as much as the rest of a
    /// PageRank edge, and bounces the target's cache line between cores when
    /// two threads share a block). Only diagonal blocks re-enter (no other
    /// block's targets are its sources).
    Columns,
}

/// Settings of a [`StreamEngine`]; the CLI fills it from its flags.
#[derive(Debug, Clone)]
pub struct StreamConfig {
    /// Memory budget in bytes for everything the engine holds.
    pub memory: u64,
    /// Worker threads for [`Mode::Multi`] and `vmap` (0: one per core).
    pub threads: usize,
    /// Maximum re-entry times per loaded block (>= 1).
    pub mrt: u32,
    pub order: BlockOrder,
    /// Where mapped vertex arrays and sort runs go (default: the store directory).
    pub work_dir: Option<PathBuf>,
    /// Map every vertex array from the work directory (the external scenario).
    pub force_mapped: bool,
    /// Read blocks with O_DIRECT (bypassing the page cache) instead of buffered.
    pub direct_io: bool,
    /// Columns per band of a relaxation program's mapped array (0: as many as
    /// the budget holds; see [`StreamEngine::exec_bands`]).
    pub band_columns: u32,
    /// When programs that can ([`crate::EdgeProgram::pulls`]: bfs) run an
    /// iteration bottom-up over the in-edges instead of pushing along the grid,
    /// and when relaxation programs (bfs, sssp) push from the out-edge lists.
    pub bottom_up: BottomUp,
    /// Whether programs that pass over the grid many times hold its blocks
    /// decoded in memory from the second pass on, when the budget has room
    /// for all of them (`stream/held.rs`); off: every pass reads them.
    pub hold_grid: bool,
}

/// Direction-optimizing BFS (Beamer et al., SC'12) on the streaming engine: when
/// an iteration runs bottom-up, every vertex not yet final reads its
/// in-neighbours from the in-edge CSR (`--in-edges`, or the out-edge CSR of an
/// undirected store) and stops at the first one on the frontier.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum BottomUp {
    /// Bottom-up once the frontier's out-edges outnumber a fifteenth of the
    /// in-edges of the vertices not yet final (SC'12's alpha) while at least a
    /// quarter of the active vertices are on the frontier; from then on, each
    /// iteration the cheapest in bytes read of a bottom-up step, a sparse step
    /// and a grid pass (`program/pull.rs`); before, and on a store without
    /// in-edges, the cheaper of a sparse step and a grid pass; for sssp (sparse
    /// steps alone) the cheaper of the two priced with what the page cache
    /// holds. Only when the budget holds the degrees.
    #[default]
    Auto,
    /// Never: every iteration pushes along the grid.
    Never,
    /// Every iteration bottom-up (when possible at all), for testing.
    Always,
    /// Every iteration top-down from the out-edge CSR lists instead of the
    /// grid (bfs, unless the store's out-lists hold marked reverse edges),
    /// for testing.
    Sparse,
}

impl Default for StreamConfig {
    fn default() -> Self {
        StreamConfig {
            memory: 1 << 30,
            threads: 0,
            mrt: 5,
            order: BlockOrder::RowMajor,
            work_dir: None,
            force_mapped: false,
            direct_io: false,
            band_columns: 0,
            bottom_up: BottomUp::Auto,
            hold_grid: true,
        }
    }
}

/// Progress callbacks (the CLI draws a bar per iteration).
pub trait StreamObserver: Sync {
    /// An iteration starts: `blocks` will be read, `active` vertices are active.
    fn iteration(&self, _iteration: u64, _blocks: u64, _active: u64) {}
    /// A block has been processed.
    fn block_done(&self, _edges: u64) {}
}

struct NoObserver;
impl StreamObserver for NoObserver {}

/// The handle edge functions receive: activation and the current block.
pub struct Ctx<'a> {
    next: &'a AtomicBitmap,
    reenter: &'a AtomicBitmap,
    rows: Range<u32>,
    changed: AtomicBool,
}

impl Ctx<'_> {
    /// Makes `v` active for the next iteration; if `v` is a source of the block
    /// being processed, the block is re-entered for it (up to MRT passes).
    #[inline]
    pub fn activate(&self, v: u32) {
        self.next.set(v);
        if self.rows.contains(&v) {
            self.reenter.set(v);
            if !self.changed.load(Relaxed) {
                self.changed.store(true, Relaxed);
            }
        }
    }
}

/// The CLIP edge-streaming engine over one store.
pub struct StreamEngine<'s> {
    store: &'s Store,
    grid: GridReader,
    cfg: StreamConfig,
    n: u32,
    active: AtomicBitmap,
    next: AtomicBitmap,
    reenter: [AtomicBitmap; 2],
    budget: StateBudget,
    work_dir: PathBuf,
    pool: rayon::ThreadPool,
    weights: bool,
    stats: StreamStats,
    start_io: IoSnapshot,
    observer: Box<dyn StreamObserver + 's>,
    /// Iterations of the last edge program run ([`crate::ProgramRunner`]).
    pub(crate) program_iterations: u64,
    /// Why the block ring does not fit `--memory`, when its two slots of the
    /// largest block do not: a pass over the grid is then refused.
    ring_short: Option<String>,
    /// The grid held decoded in memory between passes (`stream/held.rs`).
    hold: held::Hold,
    /// Passes over the grid so far (iterations from the CSR lists not
    /// counted).
    grid_passes: u64,
}

impl<'s> StreamEngine<'s> {
    /// Plans memory and opens the grid of `store`.
    pub fn new(store: &'s Store, cfg: StreamConfig) -> Result<StreamEngine<'s>> {
        if cfg.mrt == 0 {
            return Err(EngineError::Invalid("--mrt must be at least 1".into()));
        }
        let n = u32::try_from(store.vertices()).map_err(|_| {
            EngineError::Invalid(format!("{} vertices do not fit u32 ids", store.vertices()))
        })?;
        // With O_DIRECT, re-open the store's files in that mode, sharing its counters.
        let grid = if cfg.direct_io {
            Store::open_with(store.dir(), ReadMode::Direct, store.stats().clone())?.grid()?
        } else {
            store.grid()?
        };
        let work_dir = cfg
            .work_dir
            .clone()
            .unwrap_or_else(|| store.dir().to_path_buf());
        let p = grid.partitions();
        let bitmaps = 4 * (n as u64).div_ceil(64) * 8;
        let index = bitmaps + grid.entries().len() as u64 * 32;
        let fixed = index + (8 << 20);
        let mut rest = cfg.memory.saturating_sub(fixed);
        let max_block = (0..p)
            .flat_map(|r| (0..p).map(move |c| (r, c)))
            .map(|(r, c)| grid.block_memory_bytes(r, c, true))
            .max()
            .unwrap_or(0)
            .max(4);
        // Two slots of the largest block are the least a pass reads into (a
        // relabelled store's hub block can hold half the edges); they must fit
        // beside the bitmaps and index (the 8 MiB working headroom above is
        // part of the documented constant beyond --memory).
        let ring_short = (index + 2 * max_block > cfg.memory).then(|| {
            let (r, c) = (0..p)
                .flat_map(|r| (0..p).map(move |c| (r, c)))
                .max_by_key(|&(r, c)| grid.block_memory_bytes(r, c, true))
                .unwrap_or((0, 0));
            format!(
                "--memory {} is too small for the streaming engine on this store: its largest grid block (row {r}, column {c}: {} edges) takes {} decoded, and a pass reads into two such slots beside {} of bitmaps and index (give at least {}, re-ingest with more --partitions, or run --engine external)",
                outcore_io::format_bytes(cfg.memory),
                grid.entry(r, c).edges,
                outcore_io::format_bytes(max_block),
                outcore_io::format_bytes(index),
                outcore_io::format_bytes(index + 2 * max_block + (1 << 20))
            )
        });
        let (pool, threads) = crate::thread_pool(cfg.threads, "worker")?;
        // Up to four slots, or two per thread where there are more than two
        // threads (Mode::Columns: one block processed and one read per thread).
        let most = 4.max(2 * threads);
        let mut slots = 2usize;
        while slots < most && (slots as u64 + 1) * max_block <= rest / 4 {
            slots += 1;
        }
        rest = rest.saturating_sub(slots as u64 * max_block);
        let budget = StateBudget::new(rest, work_dir.clone()).force_mapped(cfg.force_mapped);
        let start_io = store.stats().snapshot();
        Ok(StreamEngine {
            store,
            grid,
            n,
            active: AtomicBitmap::new(n as usize),
            next: AtomicBitmap::new(n as usize),
            reenter: [AtomicBitmap::new(n as usize), AtomicBitmap::new(n as usize)],
            budget,
            work_dir,
            pool,
            weights: false,
            stats: StreamStats {
                ring_slots: slots,
                ring_slot_bytes: max_block,
                ..Default::default()
            },
            start_io,
            cfg,
            observer: Box::new(NoObserver),
            ring_short,
            program_iterations: 0,
            hold: held::Hold::Off,
            grid_passes: 0,
        })
    }

    /// The engine's worker pool (the edge program adapter's vertex passes).
    /// Columns per band ([`StreamEngine::exec_bands`]) for an array of
    /// `bytes_per_vertex` whose band slice is held in memory: as many as keep
    /// the largest band's slice within three quarters of what the budget has
    /// left, at least one; recorded in the stats. With the slice's bytes.
    pub(crate) fn band_columns(&mut self, bytes_per_vertex: u64) -> (u32, u64) {
        let p = self.grid.partitions();
        let per = self.store.interval(0).len() as u64 * bytes_per_vertex;
        let w = match self.cfg.band_columns {
            0 => (self.budget.remaining() / 4 * 3 / per.max(1)).clamp(1, p as u64) as u32,
            w => w.min(p),
        };
        self.stats.band_columns = w;
        (w, w as u64 * per)
    }

    pub(crate) fn pool(&self) -> &rayon::ThreadPool {
        &self.pool
    }

    /// Receives progress callbacks from now on.
    /// Refuses a budget whose block ring (two slots of the grid's largest
    /// block) does not fit, before any vertex state is allocated; every pass
    /// over the grid checks the same.
    pub fn check_ring(&self) -> Result<()> {
        match &self.ring_short {
            Some(why) => Err(EngineError::Budget(why.clone())),
            None => Ok(()),
        }
    }

    pub fn set_observer(&mut self, obs: Box<dyn StreamObserver + 's>) {
        self.observer = obs;
    }

    /// Number of vertices (dense ids `0..n`).
    pub fn vertices(&self) -> u32 {
        self.n
    }
    pub fn store(&self) -> &'s Store {
        self.store
    }
    pub fn config(&self) -> &StreamConfig {
        &self.cfg
    }
    /// Worker threads of the pool.
    pub fn threads(&self) -> usize {
        self.pool.current_num_threads()
    }
    /// The budget vertex arrays come from.
    pub fn budget(&self) -> &StateBudget {
        &self.budget
    }

    /// Streams weights with the edges from now on (edge functions otherwise get 1.0).
    pub fn with_weights(&mut self, yes: bool) {
        self.weights = yes && self.store.weighted();
    }
    /// Whether blocks are streamed with their weights (run functions get
    /// `Some` weights).
    pub fn weights_streamed(&self) -> bool {
        self.weights
    }

    /// A vertex array of `T`, one per vertex, filled with `init`: in memory while
    /// the budget allows, otherwise mapped from the work directory.
    ///
    /// ```no_run
    /// # fn f(engine: &outcore_engine::StreamEngine) -> outcore_engine::Result<()> {
    /// let depth = engine.alloc::<u32>("depth", u32::MAX)?;
    /// assert_eq!(depth.len(), engine.vertices() as usize);
    /// # Ok(()) }
    /// ```
    pub fn alloc<T: bytemuck::Pod + Send + Sync>(
        &self,
        name: &str,
        init: T,
    ) -> Result<VertexArray<T>> {
        Ok(self.budget.alloc(name, self.n as usize, init)?)
    }

    /// Applies `f` to every vertex id, on the pool's threads (CLIP's `VMap`).
    ///
    /// ```no_run
    /// # fn f(engine: &outcore_engine::StreamEngine, a: &outcore_state::VertexArray<u32>) {
    /// use std::sync::atomic::Ordering::Relaxed;
    /// let at = a.atomic();
    /// engine.vmap(|v| at[v as usize].store(v, Relaxed)); // label = own id
    /// # }
    /// ```
    pub fn vmap<F: Fn(u32) + Sync + Send>(&self, f: F) {
        self.vcount(|v| {
            f(v);
            false
        });
    }

    /// [`StreamEngine::vmap`] over the vertices active for the coming
    /// iteration only (a bitmap word at a time: a sparse set costs its words).
    pub fn vmap_active<F: Fn(u32) + Sync + Send>(&self, f: F) {
        let (n, active) = (self.n, &self.active);
        self.pool.install(|| {
            (0..n.div_ceil(4096)).into_par_iter().for_each(|c| {
                active
                    .ones_in(c * 4096..((c + 1) * 4096).min(n))
                    .for_each(&f)
            })
        })
    }

    /// [`StreamEngine::vmap`] that counts the vertices for which `f` is true.
    pub fn vcount<F: Fn(u32) -> bool + Sync + Send>(&self, f: F) -> u64 {
        let n = self.n;
        self.pool.install(|| {
            (0..n.div_ceil(4096))
                .into_par_iter()
                .map(|c| {
                    (c * 4096..((c + 1) * 4096).min(n))
                        .filter(|&v| f(v))
                        .count() as u64
                })
                .sum()
        })
    }

    /// Makes `v` active for the coming iteration (initialisation).
    pub fn activate(&self, v: u32) {
        self.active.set(v);
    }
    /// Whether [`Mode::Columns`] keeps the pool busy here: blocks row-major
    /// (consecutive blocks in distinct columns; column-major would hand the
    /// threads one column at a time) and two ring slots per thread (one
    /// block processed, one read meanwhile). Otherwise [`Mode::Multi`] splits
    /// each block among the threads (with atomics).
    pub fn columns_pay(&self) -> bool {
        self.cfg.order == BlockOrder::RowMajor && 2 * self.threads() <= self.stats.ring_slots
    }
    /// Makes every vertex active for the coming iteration.
    pub fn activate_all(&self) {
        self.active.set_all();
    }
    /// Vertices active for the coming iteration.
    pub fn active_count(&self) -> u64 {
        self.active.count()
    }
    /// True while some vertex is active (the iteration loop's condition).
    pub fn has_active(&self) -> bool {
        self.active.any()
    }
    /// Whether `v` is active for the coming iteration.
    pub fn is_active(&self, v: u32) -> bool {
        self.active.get(v)
    }
    /// The vertices active for the coming iteration.
    pub(crate) fn active_bitmap(&self) -> &AtomicBitmap {
        &self.active
    }

    /// The blocks in streaming order: the configured one, or with `band > 0`
    /// bands of `band` columns one after another, row by row inside a band.
    fn order(&self, band: u32) -> Vec<(u32, u32)> {
        let p = self.grid.partitions();
        if band > 0 {
            return (0..p.div_ceil(band))
                .flat_map(|b| {
                    let cols = b * band..((b + 1) * band).min(p);
                    (0..p).flat_map(move |r| cols.clone().map(move |c| (r, c)))
                })
                .collect();
        }
        match self.cfg.order {
            BlockOrder::RowMajor => (0..p).flat_map(|r| (0..p).map(move |c| (r, c))).collect(),
            BlockOrder::ColumnMajor => (0..p).flat_map(|c| (0..p).map(move |r| (r, c))).collect(),
        }
    }

    /// One iteration (CLIP's `Exec`): applies `f(ctx, u, v, w)` to every edge
    /// whose source `u` is active, re-entering each loaded block up to MRT times;
    /// then the vertices activated with [`Ctx::activate`] become the active set.
    /// Returns the number of vertices active for the next iteration.
    ///
    /// ```no_run
    /// # fn f(engine: &mut outcore_engine::StreamEngine) -> outcore_engine::Result<()> {
    /// use outcore_engine::Mode;
    /// use std::sync::atomic::Ordering::Relaxed;
    /// let depth = engine.alloc::<u32>("depth", u32::MAX)?;
    /// depth.atomic()[0].store(0, Relaxed);
    /// engine.activate(0);
    /// while engine.has_active() {
    ///     let d = depth.atomic();
    ///     engine.exec(Mode::Multi, |ctx, u, v, _w| {
    ///         let du = d[u as usize].load(Relaxed) + 1;
    ///         if d[v as usize].fetch_min(du, Relaxed) > du {
    ///             ctx.activate(v);
    ///         }
    ///     })?;
    /// }
    /// # Ok(()) }
    /// ```
    pub fn exec<F>(&mut self, mode: Mode, f: F) -> Result<u64>
    where
        F: Fn(&Ctx, u32, u32, f32) + Sync,
    {
        self.exec_ahead(mode, |_| {}, f)
    }

    /// [`StreamEngine::exec`] with a look-ahead hint: `ahead(v)` is called for the
    /// targets [`STREAM_AHEAD`] edges beyond the one being applied (in the block's
    /// storage order, within one thread's share), so the edge function's random
    /// accesses to target state can be started early — typically
    /// [`prefetch`]`(array, v)`. It must have no effect on the result; the
    /// iteration is exactly `exec`'s. One-pass union-find on a Kronecker graph
    /// runs about twice as fast with it, its parent loads no longer waiting on
    /// memory one at a time.
    ///
    /// ```no_run
    /// # fn f(engine: &mut outcore_engine::StreamEngine) -> outcore_engine::Result<()> {
    /// use outcore_engine::{prefetch, Mode};
    /// use std::sync::atomic::Ordering::Relaxed;
    /// let deg = engine.alloc::<u32>("in-degree", 0)?;
    /// let d = deg.atomic();
    /// engine.activate_all();
    /// engine.exec_ahead(Mode::Multi, |v| prefetch(d, v), |_ctx, _u, v, _w| {
    ///     d[v as usize].fetch_add(1, Relaxed);
    /// })?;
    /// # Ok(()) }
    /// ```
    pub fn exec_ahead<P, F>(&mut self, mode: Mode, ahead: P, f: F) -> Result<u64>
    where
        P: Hint,
        F: Fn(&Ctx, u32, u32, f32) + Sync,
    {
        self.exec_bands(mode, 0, ahead, each_edge(f), |_| Ok(()))
    }

    /// [`StreamEngine::exec_ahead`] with `f` called once per run of a source's
    /// edges in a block: `f(ctx, u, targets, weights)` (weights `None` unless
    /// the engine streams them, [`StreamEngine::with_weights`]), so that work
    /// depending on the source alone — its message, the edge value of an
    /// unweighted edge — is done once a run rather than once an edge. The runs, their order and the look-ahead
    /// hints are exactly `exec_ahead`'s.
    pub fn exec_runs<P, F>(&mut self, mode: Mode, ahead: P, f: F) -> Result<u64>
    where
        P: Hint,
        F: Fn(&Ctx, u32, &[u32], Option<&[f32]>) + Sync,
    {
        self.exec_hooked(mode, 0, &[], None, ahead, f, |_| Ok(()), |_, _| Ok(()))
    }

    /// [`StreamEngine::exec_runs`] for edge work that depends on the source
    /// alone: `flat.value(u, targets)` once per active source's run, then
    /// `flat.apply(ctx, v, value)` for each of its targets (stream/runs.rs: no
    /// branch per run). The edges, their order within a share and the
    /// look-ahead hints are `exec_runs`'; weights are not read.
    pub fn exec_flat<P, V, A>(&mut self, mode: Mode, ahead: P, flat: Flat<V, A>) -> Result<u64>
    where
        P: Hint,
        V: Fn(u32, &[u32]) -> Option<u64> + Sync,
        A: Fn(&Ctx, u32, u64) + Sync,
    {
        self.exec_hooked(mode, 0, &[], None, ahead, flat, |_| Ok(()), |_, _| Ok(()))
    }

    /// [`StreamEngine::exec_ahead`] with the blocks in bands of `band` target
    /// intervals (columns): band after band, row by row inside a band.
    /// `hook(Band::Start(targets))` is called with a band's target vertices
    /// before its first block read in this iteration is processed, and
    /// `hook(Band::End(targets))` after its last — no edge of another block
    /// has such a target, and no edge function runs during a hook. An edge
    /// function that writes only its target then writes one band's slice of a
    /// vertex array at a time, which the hooks can hold in memory (a mapped
    /// array under a memory limit: each page written once an iteration, not
    /// whenever the kernel evicts it), while the sources' values are read once
    /// a band. Re-entry works as in `exec_ahead` (a block re-enters for the
    /// sources it activated in its own source interval: diagonal blocks).
    /// `band == 0`: the configured order, no hook called. `f` takes a
    /// source's run at a time, as in [`StreamEngine::exec_runs`].
    pub fn exec_bands<P, F, D>(
        &mut self,
        mode: Mode,
        band: u32,
        ahead: P,
        f: F,
        hook: D,
    ) -> Result<u64>
    where
        P: Hint,
        F: Fn(&Ctx, u32, &[u32], Option<&[f32]>) + Sync,
        D: FnMut(Band) -> Result<()>,
    {
        self.exec_hooked(mode, band, &[], None, ahead, f, hook, |_, _| Ok(()))
    }

    /// [`StreamEngine::exec_bands`] with flat runs, as in
    /// [`StreamEngine::exec_flat`].
    pub fn exec_flat_bands<P, V, A, D>(
        &mut self,
        mode: Mode,
        band: u32,
        ahead: P,
        flat: Flat<V, A>,
        hook: D,
    ) -> Result<u64>
    where
        P: Hint,
        V: Fn(u32, &[u32]) -> Option<u64> + Sync,
        A: Fn(&Ctx, u32, u64) + Sync,
        D: FnMut(Band) -> Result<()>,
    {
        self.exec_hooked(mode, band, &[], None, ahead, flat, hook, |_, _| Ok(()))
    }

    #[allow(clippy::too_many_arguments)]
    fn exec_hooked<P, F, D, H>(
        &mut self,
        mode: Mode,
        band: u32,
        cuts: &[u32],
        shares: Option<&(dyn Fn(&Share<'_>) + Sync)>,
        ahead: P,
        f: F,
        mut hook: D,
        mut between: H,
    ) -> Result<u64>
    where
        P: Hint,
        F: Runs,
        D: FnMut(Band) -> Result<()>,
        H: FnMut(&Self, usize) -> Result<()>,
    {
        self.check_ring()?;
        let order = self.order(band);
        let grid = &self.grid;
        let active = &self.active;
        let p = grid.partitions();
        let row_active: Vec<bool> = (0..p)
            .map(|r| active.any_in(self.store.interval(r)))
            .collect();
        let mut todo = Vec::new();
        for (r, c) in order {
            if grid.entry(r, c).edges == 0 {
                continue;
            }
            if row_active[r as usize] {
                todo.push((r, c));
            } else {
                self.stats.blocks_skipped += 1;
            }
        }
        self.stats.iterations += 1;
        self.grid_passes += 1;
        self.observer.iteration(
            self.stats.iterations,
            todo.len() as u64,
            self.active.count(),
        );
        let weights = self.weights;
        let all_held = self.prepare_hold(&todo, weights);
        let grid = &self.grid;
        let slots = self.stats.ring_slots;
        let this = &*self;
        let mut local = StreamStats::default();
        let read_ns = AtomicU64::new(0);
        let mut kept = Vec::new();
        // Readers: block k of `todo` is read by reader k % readers, into one of
        // that reader's own ring slots, so two requests are in flight (the device
        // is faster at queue depth 2) and the consumer still takes blocks in order.
        // Each reader owning its slots rules out a deadlock: block k's reader has
        // had every one of its earlier blocks consumed, so a slot comes back to it.
        // None when every block is held in memory (`stream/held.rs`).
        let readers = if all_held { 0 } else { slots.min(READERS) };
        std::thread::scope(|s| -> Result<()> {
            let mut fulls = Vec::with_capacity(readers);
            let mut frees = Vec::with_capacity(readers);
            for i in 0..readers {
                let mine = slots / readers + usize::from(i < slots % readers);
                let (full_tx, full_rx) = sync_channel::<Result<RawBlock>>(mine);
                let (free_tx, free_rx) = channel::<RawBlock>();
                for _ in 0..mine {
                    let _ = free_tx.send(RawBlock::default());
                }
                fulls.push(full_rx);
                frees.push(free_tx);
                let read_ns = &read_ns;
                let todo = &todo;
                s.spawn(move || {
                    for &(r, c) in todo.iter().skip(i).step_by(readers) {
                        let Ok(mut buf) = free_rx.recv() else { return };
                        let t = Instant::now();
                        let res = grid.read_block_into(r, c, weights, &mut buf);
                        read_ns.fetch_add(t.elapsed().as_nanos() as u64, Relaxed);
                        let failed = res.is_err();
                        if full_tx.send(res.map(|_| buf).map_err(Into::into)).is_err() || failed {
                            return;
                        }
                    }
                });
            }
            let grid_path = this.store.dir().join("grid.data");
            let feed = Feed::new(&this.hold, p, grid_path, &todo, fulls, &frees, all_held);
            // The band of the k-th block (None: not banded).
            let band_of = |k: usize| todo.get(k).and_then(|&(_, c)| c.checked_div(band));
            let band_targets = |b: u32| {
                let last = ((b + 1) * band).min(p) - 1;
                this.store.interval(b * band).start..this.store.interval(last).end
            };
            if mode == Mode::Columns {
                assert_eq!(band, 0, "Mode::Columns runs without bands");
                let st = this.columns(&feed, &ahead, &f)?;
                local.merge_from(&st);
                kept = feed.into_kept();
                return Ok(());
            }
            let mut next_cut = 0;
            loop {
                let t = Instant::now();
                let Some((k, msg)) = feed.next() else {
                    break;
                };
                local.io_wait_seconds += t.elapsed().as_secs_f64();
                let block = msg?;
                while next_cut < cuts.len() && block.row >= cuts[next_cut] {
                    between(this, next_cut)?;
                    next_cut += 1;
                }
                let this_band = band_of(k);
                if let Some(b) = this_band {
                    if k == 0 || band_of(k - 1) != this_band {
                        hook(Band::Start(band_targets(b)))?;
                    }
                }
                let t = Instant::now();
                match shares {
                    Some(g) => this.run_shares(&block, mode, g, &mut local),
                    None => this.process(&block, mode, &ahead, &f, &mut local),
                }
                local.compute_seconds += t.elapsed().as_secs_f64();
                local.blocks_read += 1;
                this.observer.block_done(block.num_edges() as u64);
                feed.done(k, block);
                if let Some(b) = this_band {
                    if band_of(k + 1) != this_band {
                        hook(Band::End(band_targets(b)))?;
                        local.bands += 1;
                    }
                }
            }
            for i in next_cut..cuts.len() {
                between(this, i)?;
            }
            kept = feed.into_kept();
            Ok(())
        })?;
        self.keep_held(kept);
        if all_held {
            local.blocks_held = local.blocks_read;
        }
        local.read_seconds = read_ns.load(Relaxed) as f64 / 1e9;
        self.stats.merge_from(&local);
        std::mem::swap(&mut self.active, &mut self.next);
        self.next.clear_all();
        Ok(self.active.count())
    }

    /// The share of the grid's data the page cache holds now (0 with
    /// `--direct`).
    pub(crate) fn grid_cached_fraction(&self) -> f64 {
        self.grid.cached_fraction()
    }

    /// Bytes of the grid rows that hold an active source (with their weights
    /// when `weights`): what a top-down iteration would read (before re-entry).
    pub(crate) fn active_row_bytes(&self, weights: bool) -> u64 {
        let p = self.grid.partitions();
        (0..p)
            .filter(|&r| self.active.any_in(self.store.interval(r)))
            .flat_map(|r| (0..p).map(move |c| (r, c)))
            .filter(|&(r, c)| self.grid.entry(r, c).edges > 0)
            .map(|(r, c)| self.grid.block_read_bytes(r, c, weights))
            .sum()
    }

    /// One iteration run by `body` from the store's CSR lists instead of the
    /// grid (a bottom-up step, or a sparse top-down one; `program/pull.rs`):
    /// `body` gets the active set and the next one, whose vertices become the
    /// active set afterwards; it returns the edges it examined.
    pub(crate) fn csr_iteration<B>(&mut self, bottom_up: bool, body: B) -> Result<u64>
    where
        B: FnOnce(&Self, &AtomicBitmap, &AtomicBitmap) -> Result<u64>,
    {
        self.stats.iterations += 1;
        self.observer
            .iteration(self.stats.iterations, 0, self.active.count());
        let t = Instant::now();
        let edges = body(self, &self.active, &self.next)?;
        if bottom_up {
            self.stats.bottom_up_iterations += 1;
        } else {
            self.stats.sparse_iterations += 1;
        }
        self.stats.csr_edges += edges;
        self.stats.csr_seconds += t.elapsed().as_secs_f64();
        std::mem::swap(&mut self.active, &mut self.next);
        self.next.clear_all();
        Ok(self.active.count())
    }

    /// Counts the store's I/O from now on: what the caller read while
    /// choosing how to run (the grid's index, to price a pass) is not the
    /// engine's.
    pub fn count_io_from_now(&mut self) {
        self.start_io = self.store.stats().snapshot();
    }

    /// Counts a whole-list pass over the CSR (`program/whole_lists.rs`):
    /// its edges and seconds, with the CSR iterations'.
    pub(crate) fn add_csr_pass(&mut self, edges: u64, seconds: f64) {
        self.stats.csr_edges += edges;
        self.stats.csr_seconds += seconds;
    }

    /// Counts `edges` of [`StreamStats::csr_kept_edges`].
    pub(crate) fn add_kept_edges(&mut self, edges: u64) {
        self.stats.csr_kept_edges += edges;
    }

    /// Statistics so far, with the store's I/O counters since the engine started.
    pub fn stats(&self) -> StreamStats {
        let io = self.store.stats().snapshot().since(&self.start_io);
        let mut s = self.stats.clone();
        s.bytes_read = io.bytes_read;
        s.read_requests = io.read_requests;
        s.bytes_written = io.bytes_written;
        s.write_requests = io.write_requests;
        s.mapped_arrays = self.budget.mapped_count();
        s
    }
}
