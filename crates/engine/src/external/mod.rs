//! The fully-external engine of V-Part (FAST'19 §4.2–§4.3): vertex data larger
//! than memory.
//!
//! # Design
//! The store's V-Part layout ([`outcore_store::vpart`]) cuts the vertices into K
//! destination-unique partitions; partition q's source table mirrors every vertex
//! with an edge into q. All vertex state lives in two scratch files in the work
//! directory: the destinations' values (value, and for wide programs that not
//! every source sends in, activity epoch and change epoch per vertex, partition
//! after partition) and the mirror tables (8 bytes per
//! mirror: a 32-bit message with the source's activity epoch, or a 64-bit message
//! whose activity is implied — see [`EdgeProgram::narrow_messages`] — in two
//! slots by iteration parity, so
//! every partition of iteration i reads iteration i - 1's messages whatever was
//! written before it in iteration i — synchronous, like the streaming engine's
//! one pass per iteration).
//!
//! Iteration i processes the partitions one after another (§4.2):
//! 1. read q's destination values (and out-degrees) into memory;
//! 2. stream q's source table in chunks (whole blocks of 4096 entries; for
//!    narrow programs, chunks with no block that received an entry activated in
//!    i - 1 — an in-memory bit per block and slot, set by the mirror updates — are
//!    skipped unread, their edge
//!    offsets known from one pass at the start) with the mirrors' slot `(i-1) % 2`; a
//!    source is active when its epoch is `i - 1` (always, for programs where
//!    every source sends; when its message is nonzero, for wide messages); read the chunk's edges whole, or only the active
//!    sources' runs merged across small gaps, whichever the cost model (device
//!    profile: per-request latency + bytes at the sequential bandwidth) prices
//!    lower; the run's threads apply whole windows, window w on thread
//!    w % threads (so a thread's sums are the same from run to run), the
//!    program's edge function into accumulators of their own (one
//!    array of the partition's destinations per thread), combined in thread order
//!    when the partition's edges are done — §4.2 step 4's per-thread buffers,
//!    without atomics (measured: bucketing updates by destination slice and
//!    combining them in source order, which gives bit-identical sums on every
//!    thread count, spent a third of the run writing and re-reading 16-byte
//!    updates);
//! 3. `apply` every destination (their values read beside step 2, on a thread
//!    of their own, for programs whose `apply` may change a destination no
//!    message reached: pagerank, spmv; no epochs for programs whose every
//!    source sends each iteration, whose mirror entries are all rewritten, nor
//!    for narrow ones, whose entries are written when this iteration's apply
//!    activates their source: Kronecker 24 bfs at an eighth, 2.31 -> 1.75 GiB
//!    written, 17.3 -> 16.2 s),
//!    write the values back — unless no message
//!    reached the partition and the program says `apply` then changes nothing
//!    ([`EdgeProgram::idle_without_messages`]: bfs, sssp, wcc-lp), when its
//!    destinations are neither read nor written and it has no mirror update;
//!    and when messages reached at most half its blocks of 4096 destinations,
//!    only those blocks are read, applied and written back (the mirror update
//!    then never rewrites an entry of another block as a gap filler); a
//!    program that keeps no epochs writes back only the 4 KiB pages whose
//!    values `apply` changed, a block of 4096 whole the first time it is
//!    written (its other pages would read as zeros, not initial values):
//!    bfs's late levels reach many blocks but change few values (Kronecker
//!    24 at 16M: 542 -> 390 MiB of destinations written); for settling
//!    programs (bfs) a message into a destination already final counts as
//!    none (`settle.rs`);
//! 4. mirror updates (§4.3, Figure 6), on a thread of their own while the next
//!    partition is processed (they write slot `i % 2`, which iteration i does not
//!    read; one in flight at a time): the destinations' masks are streamed and
//!    each new message is appended to the buffer of every partition holding a
//!    mirror; since a source table is ordered by owner then id, these are
//!    contiguous segments, written sequentially. Only entries that can be read
//!    are written: a narrow program's message is read only in the iteration after
//!    its source's activation, so only the sources activated in iteration i (an
//!    older entry in the slot carries an epoch below i - 1 and never reads as
//!    active); for wide messages, the entries whose message changed in iteration i
//!    or i - 1 (otherwise slot `i % 2` already holds it).
//!    Runs of up to 8192 unwritten entries (`plan::mirror_gap`) between written
//!    ones are rewritten rather than split into separate writes (a write ending
//!    inside an uncached page costs a random read of it). A narrow program's
//!    writes are whole pages of the page-aligned slots, each page written at
//!    most once an iteration: a run starts on a page with zeros before its
//!    first entry, a full buffer (whole pages) is written whole, and a run ends
//!    padded with zeros to its page's end only where the next entry to write is
//!    more than a page further on — any entry not activated in i may read as
//!    zero — so the kernel never reads a page to write part of it (Kronecker 24
//!    bfs, 58 partitions: mirror-update thread busy 12.8 -> 5.6 s). By
//!    default a narrow program's slot is not a table but a list
//!    ([`ExternalConfig::narrow_lists`]): the entries activated in i, each its
//!    position (32 bits) and message, appended in position order (whole
//!    buffers, the tail at the iteration's end); the edge pass of i + 1 reads
//!    the list beside the source table and places its entries in the chunk,
//!    the rest reading as not activated. An iteration then writes and reads 8
//!    bytes per activated mirror instead of a page per activated entry or the
//!    whole table (Kronecker 24 bfs at an eighth: written 1.75 -> 0.90 GiB,
//!    read 4.94 -> 4.03 GiB, mirror-update thread busy 6.6 -> 3.6 s, 18.3 ->
//!    15.9 s). A program whose message is its source's activation epoch
//!    ([`EdgeProgram::epoch_messages`]: bfs) keeps a bitmap of the table
//!    instead ([`ExternalConfig::mirror_bits`]): bit i set when entry i was
//!    activated, the message the epoch's, the slot rewritten whole every
//!    iteration (zeros included, so no stale bit survives) a buffer at a
//!    time, the edge pass reading a chunk's words with its entries (same
//!    bfs at 16M, 130 partitions, two alternating cold runs: mirror bytes
//!    731 -> 107 MiB, 18.1, 18.1 -> 16.0, 16.7 s). A partition's pending run is carried from one partition's mirror update to
//!    the next (its segments follow each other in its table) and ended by the
//!    iteration's last one, so its buffer is all the memory a partition's
//!    mirror writes need. A unit of destinations (8192, or
//!    more so that the table fits 64 KiB) with no entry to write is passed over
//!    unread: the layout's skip table (`vpart.index`) gives each partition's
//!    position at every unit's start, so even iteration 0 of a BFS reads only
//!    the masks of its root's unit.
//!
//! # Memory
//! `--memory` pays: a fixed 8 MiB for the process, K mirror-update buffers (a
//! sixteenth of the budget shared, whole pages, 4 to 256 KiB each, which a
//! pending run never grows past), a mask chunk, the mirror updates' skip table (at most 64 KiB, or 8 (K + 1) K bytes above 90 partitions: see below), one partition's destination data (the program's
//! [`EdgeProgram::bytes_per_vertex`], 8 more per extra thread's accumulator and
//! 17 for two mirror jobs — 9 for narrow messages — per destination), for
//! settling programs when it fits one bit per destination of every partition
//! (`settle.rs`), and chunk buffers from what is left,
//! between 2 x [`min_slot`] (600 KiB unweighted, 608 KiB weighted) and 64 MiB, shared by the
//! windows of edges alive (one per applying thread and the one being read:
//! three on two threads; fewer threads apply when fewer windows fit), with their chunks of source entries
//! (74 bytes per entry — its record as read and decoded, mirror entry and work lists), alive in the
//! edge pass's pipeline (`edges.rs`). A layout whose largest
//! partition does not fit is refused with [`EngineError::Budget`]; the caller
//! repartitions. The threads' accumulators and the edge pass's windows and
//! chunks are kept at their largest from one partition to the next (see
//! `PartBufs`) and freed before the dense result is assembled, which has the
//! budget to itself.

mod apply;
mod edges;
mod mirror;
mod plan;
mod scratch;
mod settle;

use scratch::{Scratch, BLOCK};

use crate::error::{EngineError, Result};
use crate::program::{Aggregates, EdgeProgram, Globals, Sums};

use mirror::{add_mirror, mirror_need, MirrorDone, MirrorJob};
use outcore_io::{IoSnapshot, ReadMode, ScratchFile};
use outcore_state::{AtomicBitmap, StateBudget, VertexArray};
use outcore_store::vpart::{Part, VpartLayout};
use outcore_store::Store;
use plan::{device_costs, MBLOCK};
pub use plan::{min_memory, min_slot, mirror_buffer, plan, Plan, FIXED_BYTES};
use rayon::prelude::*;
use std::path::PathBuf;
use std::time::Instant;

const NEVER: u32 = u32::MAX;

/// Spawns a scoped thread under a name of its own (`vpart-reader`,
/// `vpart-apply`, `vpart-mirror`, `vpart-dests`), so profiles and `top -H`
/// tell the engine's threads apart; fails the way `Scope::spawn` does.
fn spawn<'scope, 'env, T: Send + 'scope>(
    sc: &'scope std::thread::Scope<'scope, 'env>,
    name: &str,
    f: impl FnOnce() -> T + Send + 'scope,
) -> std::thread::ScopedJoinHandle<'scope, T> {
    std::thread::Builder::new()
        .name(name.to_string())
        .spawn_scoped(sc, f)
        .unwrap_or_else(|e| panic!("failed to spawn the {name} thread: {e}"))
}

/// A mirror entry as written: see [`MirrorRec`]. A narrow entry holds its
/// activity epoch plus one, so that an entry never written (the scratch file
/// reads as zeros) reads as a source never activated ([`NEVER`] + 1 wraps to 0):
/// a narrow program's iteration 0 writes only its initially active sources.
#[inline]
fn mirror_record(narrow: bool, msg: u64, act_epoch: u32) -> MirrorRec {
    if narrow {
        (msg & 0xffff_ffff) | (act_epoch.wrapping_add(1) as u64) << 32
    } else {
        msg
    }
}

/// Whether a source whose mirror entry is `m` sends in iteration `it`: narrow
/// programs' sources activated in `it - 1`; every source of an all-active program;
/// otherwise a wide program's sources with a nonzero message.
#[inline]
fn mirror_active(narrow: bool, all: bool, m: MirrorRec, it: u64) -> bool {
    if all {
        true
    } else if narrow {
        // Activated in it - 1: epoch plus one is it.
        m >> 32 == it
    } else {
        m != 0
    }
}

/// How a chunk's edges are read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum EdgeReads {
    /// Per chunk, by the cost model.
    #[default]
    Auto,
    /// Every chunk with an active source whole.
    Whole,
    /// Only the active sources' runs.
    Selective,
}

#[derive(Debug, Clone)]
pub struct ExternalConfig {
    pub memory: u64,
    /// 0: one per core.
    pub threads: usize,
    /// Scratch files go here (default: the store directory).
    pub work_dir: Option<PathBuf>,
    pub direct_io: bool,
    pub edge_reads: EdgeReads,
    /// Vertices of the dense result assembled at a time (0: a sixteenth of the
    /// budget's worth when the result array is mapped, all of them otherwise).
    pub result_window: u64,
    /// Narrow programs' mirror entries kept as lists of the entries activated
    /// in an iteration (position and message, appended), rather than as slots
    /// holding every entry at its position (where a write covers whole pages).
    /// Lists need every partition's table below 2^32 entries (slots are used
    /// otherwise); slots stay available for tests and measurements.
    pub narrow_lists: bool,
    /// With `narrow_lists`, a program whose message is its source's
    /// activation epoch ([`EdgeProgram::epoch_messages`]: bfs) keeps its
    /// mirror slots as bitmaps of the activated entries instead of lists.
    pub mirror_bits: bool,
    /// Settling programs (bfs) pass over final destinations (`settle.rs`)
    /// when the budget spares their bitmap.
    pub settle: bool,
}

impl Default for ExternalConfig {
    fn default() -> Self {
        ExternalConfig {
            memory: 1 << 30,
            threads: 0,
            work_dir: None,
            direct_io: false,
            edge_reads: EdgeReads::Auto,
            result_window: 0,
            narrow_lists: true,
            mirror_bits: true,
            settle: true,
        }
    }
}

/// Per iteration: what it did.
#[derive(Debug, Default, Clone, serde::Serialize)]
pub struct IterationStats {
    pub active_sources: u64,
    pub edges: u64,
    pub bytes_read: u64,
    pub bytes_written: u64,
    pub mirror_bytes: u64,
    /// Of `bytes_read`: source tables, edges, destinations; of
    /// `bytes_written`: destinations.
    pub source_bytes: u64,
    pub edge_bytes: u64,
    pub dest_bytes_read: u64,
    pub dest_bytes_written: u64,
    /// The mirror updates' busy time, and what of it the partition loop waited.
    pub mirror_seconds: f64,
    pub mirror_wait_seconds: f64,
    pub seconds: f64,
}

/// What a run did.
#[derive(Debug, Default, Clone, serde::Serialize)]
pub struct ExternalStats {
    pub partitions: u32,
    pub iterations: u64,
    pub threads: usize,
    /// Chunks of source tables whose edges were read whole, selectively, or not
    /// at all (no active source).
    pub chunks_whole: u64,
    pub chunks_selective: u64,
    pub chunks_skipped: u64,
    /// Partitions of an iteration that received no message (programs whose
    /// `apply` leaves a vertex alone then: their destinations are not read).
    pub partitions_idle: u64,
    pub edges_processed: u64,
    /// Edge bytes read (windows widened to whole 4 KiB checksum groups, every
    /// group checked against the layout's page sums).
    pub edge_bytes_read: u64,
    pub source_bytes_read: u64,
    pub dest_bytes_read: u64,
    pub dest_bytes_written: u64,
    pub mirror_update_bytes: u64,
    pub mirror_update_writes: u64,
    /// Units of destinations (`skip` in the plan) a mirror update passed over
    /// unread, none of their mirror entries needing a write.
    pub mirror_units_skipped: u64,
    /// Partition applies that read, applied and wrote back only the blocks of
    /// destinations a message reached (at most half of them).
    pub sparse_applies: u64,
    /// Memory of the bitmap of final destinations (settling programs; 0:
    /// not kept, see `settle.rs`).
    pub settle_memory: u64,
    pub mirror_update_seconds: f64,
    /// Setting up (the source tables' edge offsets, initial values and mirrors)
    /// and assembling the result in dense order at the end.
    pub init_seconds: f64,
    pub result_seconds: f64,
    /// Of `mirror_update_seconds`, the time the partition loop waited for
    /// mirror updates (the initial ones, and each one still running when the
    /// next partition was done): their exposed share of the run.
    pub mirror_wait_seconds: f64,
    pub bytes_read: u64,
    pub read_requests: u64,
    pub bytes_written: u64,
    pub write_requests: u64,
    /// Time in reads and writes: the edge passes' reader thread (overlapped with
    /// applying) and the destinations' loads and write-backs.
    pub io_seconds: f64,
    pub compute_seconds: f64,
    /// Of the edge passes, the time spent waiting for the reader: the reads
    /// not overlapped with applying.
    pub edge_wait_seconds: f64,
    /// The memory plan.
    pub mirror_buffer: u64,
    pub dest_memory: u64,
    pub chunk_memory: u64,
    pub chunk_entries: u64,
    pub window_edges: u64,
    pub per_iteration: Vec<IterationStats>,
}

/// Progress callbacks.
pub trait ExternalObserver: Sync {
    fn iteration(&self, _iteration: u64, _partitions: u32, _active: u64) {}
    fn partition_done(&self, _partition: u32) {}
}
struct NoObserver;
impl ExternalObserver for NoObserver {}

/// The engine over one store's V-Part layout.
pub struct ExternalEngine<'s> {
    store: &'s Store,
    layout: VpartLayout,
    cfg: ExternalConfig,
    pool: rayon::ThreadPool,
    work_dir: PathBuf,
    stats: ExternalStats,
    observer: Box<dyn ExternalObserver + 's>,
    costs: (f64, f64),
}

/// The buffers kept from one partition to the next (a fresh allocation's
/// pages fault in on first use): the threads' accumulators, alive through
/// every partition anyway, and the edge pass's windows and chunks. The
/// destinations' arrays and the mirror jobs are allocated per partition, as
/// they were: kept, they would be resident through every edge pass and take
/// the page cache's room under a hard limit (Kronecker 24 pagerank at a
/// quarter of its vertex data under `--memory` + 32 MiB: the reads' time
/// doubled, 17 -> 40 s). (A program that applies every destination fills its
/// arrays during its own partition's pass: measured at an eighth, 44.0 and
/// 44.8 s against 44.4 and 46.7 s filling them after.) Measured again with
/// only the values' array kept (bfs at 32M, Kronecker 24): page faults 309K
/// -> 200K and warm 5.7 -> 5.2 s, but cold under 64 MiB 8.97 -> 9.48 s
/// (medians of three alternating runs; 4.7 -> 4.9 GB read): kept per
/// partition.
#[derive(Default)]
struct PartBufs {
    accs: Vec<Vec<u64>>,
    edges: edges::EdgeBufs,
}

/// One destination's epochs: last iteration it was activated, last iteration its
/// message changed.
type Epochs = [u32; 2];
/// A mirror entry: a narrow program's 32-bit message with the source's activity
/// epoch above it, or a wide program's 64-bit message.
type MirrorRec = u64;

impl<'s> ExternalEngine<'s> {
    /// Opens the layout of `store` (which must have one).
    pub fn new(store: &'s Store, cfg: ExternalConfig) -> Result<ExternalEngine<'s>> {
        let mode = if cfg.direct_io {
            ReadMode::Direct
        } else {
            ReadMode::Buffered
        };
        let layout = VpartLayout::open(store, mode)?.ok_or_else(|| {
            EngineError::Invalid(format!(
                "{} has no V-Part layout; run `outcore partition` first",
                store.dir().display()
            ))
        })?;
        let (pool, threads) = crate::thread_pool(cfg.threads, "external")?;
        let work_dir = cfg
            .work_dir
            .clone()
            .unwrap_or_else(|| store.dir().to_path_buf());
        Ok(ExternalEngine {
            store,
            stats: ExternalStats {
                partitions: layout.partitions(),
                threads,
                ..Default::default()
            },
            layout,
            cfg,
            pool,
            work_dir,
            observer: Box::new(NoObserver),
            costs: device_costs(),
        })
    }

    pub fn set_observer(&mut self, obs: Box<dyn ExternalObserver + 's>) {
        self.observer = obs;
    }
    pub fn layout(&self) -> &VpartLayout {
        &self.layout
    }
    pub fn stats(&self) -> &ExternalStats {
        &self.stats
    }

    /// Runs `prog` to the end; the result in dense vertex order (in memory while
    /// `--memory` holds it, else mapped from the work directory).
    pub fn run<P: EdgeProgram>(&mut self, prog: &P) -> Result<VertexArray<P::Out>> {
        if prog.narrow_messages() && prog.all_active() {
            // A narrow entry is rewritten only when its source is activated.
            return Err(EngineError::Invalid(format!(
                "{}: the external engine runs narrow-message programs only when sources send on activation, not every iteration",
                prog.name()
            )));
        }
        let io0 = self.store.stats().snapshot();
        let t_init = Instant::now();
        let k = self.layout.partitions();
        let eb = self.layout.edge_bytes();
        let plan_for = |memory: u64| {
            plan(
                &self.layout.record,
                memory,
                prog.bytes_per_vertex(),
                prog.narrow_messages(),
                eb,
                self.stats.threads,
            )
        };
        let mut plan = plan_for(self.cfg.memory).map_err(EngineError::Budget)?;
        // A settling program's bitmaps, when the budget spares them.
        let settle_bytes = settle::Settled::bytes(&self.layout.record);
        let settled = if self.cfg.settle && settle::settles(prog) {
            plan_for(self.cfg.memory.saturating_sub(settle_bytes))
                .ok()
                .map(|p| {
                    plan = p;
                    settle::Settled::new(&self.layout.record.dests)
                })
        } else {
            None
        };
        self.stats.settle_memory = if settled.is_some() { settle_bytes } else { 0 };
        self.stats.dest_memory = plan.dest_memory;
        self.stats.mirror_buffer = plan.mirror_buffer;
        self.stats.chunk_memory = plan.chunk_memory;
        self.stats.chunk_entries = plan.chunk_entries;
        self.stats.window_edges = plan.window_edges;
        let vsize = std::mem::size_of::<P::V>() as u64;
        let rec = self.layout.record.clone();
        // Scratch: destination state per partition, mirror slots per partition.
        let mut dest_base = vec![0u64; k as usize + 1];
        let mut mirror_base = vec![0u64; k as usize + 1];
        for q in 0..k as usize {
            dest_base[q + 1] = dest_base[q] + scratch::dest_bytes(rec.dests[q], vsize);
            mirror_base[q + 1] = mirror_base[q] + scratch::mirror_stride(rec.mirrors[q]) * 2 * 8;
        }
        let stats = self.store.stats().clone();
        let dests_file = ScratchFile::create(
            &self.work_dir,
            "vpart-dests",
            dest_base[k as usize],
            stats.clone(),
        )?;
        let mirror_file = ScratchFile::create(
            &self.work_dir,
            "vpart-mirrors",
            mirror_base[k as usize],
            stats.clone(),
        )?;
        // Per partition and mirror slot: which blocks may hold an entry that
        // reads as active (narrow programs skip the others).
        let touched: Vec<[AtomicBitmap; 2]> = (0..k as usize)
            .map(|q| {
                let b = rec.mirrors[q].div_ceil(MBLOCK) as usize;
                [AtomicBitmap::new(b), AtomicBitmap::new(b)]
            })
            .collect();
        let written: Vec<AtomicBitmap> = (0..k as usize)
            .map(|q| AtomicBitmap::new(rec.dests[q].div_ceil(BLOCK as u64) as usize))
            .collect();
        let lists = prog.narrow_messages()
            && self.cfg.narrow_lists
            && rec.mirrors.iter().all(|&m| m <= u32::MAX as u64);
        let bits = lists && prog.epoch_messages() && self.cfg.mirror_bits;
        let list_len: Vec<[std::sync::atomic::AtomicU64; 2]> =
            (0..k).map(|_| Default::default()).collect();
        let runs: Vec<std::sync::Mutex<scratch::MirrorRun>> = (0..k)
            .map(|_| std::sync::Mutex::new(scratch::MirrorRun::new(plan.mirror_buffer)))
            .collect();
        let st = Scratch {
            dests: &dests_file,
            mirrors: &mirror_file,
            dest_base: &dest_base,
            mirror_base: &mirror_base,
            runs: &runs,
            blocks: self.layout.block_indexes(),
            touched: &touched,
            written: &written,
            lists,
            bits,
            list_len: &list_len,
            settled: settled.as_ref(),
        };

        // Iteration 0: initial values (not written: a destination block never
        // written reads as its initial values); both mirror slots written in
        // full, or for narrow programs only the initially active sources'
        // entries (the others read as never activated from the zeroed file).
        let mut agg_total = Sums::default();
        let mut active_total = 0u64;
        // A narrow program that starts from a few vertices (bfs, sssp) has
        // those found by binary search in each partition's ids; no other
        // destination is read (its initial value is computed when its block
        // is first read, and its mirror entries are not written).
        let start = if prog.narrow_messages() {
            prog.sparse_start()
        } else {
            None
        };
        for q in 0..k {
            if let Some(start) = &start {
                let nd = rec.dests[q as usize] as usize;
                let mut vals: Vec<P::V> = vec![bytemuck::Zeroable::zeroed(); nd];
                let mut eps = vec![[NEVER, 0]; nd];
                let mut degs = vec![0u32; nd];
                for &v in start {
                    let Some(i) = self.find_dest(q as usize, v)? else {
                        continue;
                    };
                    let i = i as usize;
                    if prog.uses_degrees() {
                        degs[i] = self.layout.read::<u32>(
                            Part::Dests,
                            q as usize,
                            4 * (nd + i) as u64,
                            1,
                        )?[0];
                    }
                    let mut one: Aggregates = [0.0; 4];
                    let (x, act) = prog.init(v, degs[i], &mut one);
                    agg_total.add(&one);
                    vals[i] = x;
                    eps[i] = [if act { 0 } else { NEVER }, 0];
                    active_total += act as u64;
                }
                let job = MirrorJob::initial(prog, q, &vals, &eps, &degs);
                let tw = Instant::now();
                let done = self.mirror_update(&st, &job, plan.mirror_buffer)?;
                self.stats.mirror_wait_seconds += tw.elapsed().as_secs_f64();
                add_mirror(&mut self.stats, &done);
                continue;
            }
            let ids: Vec<u32> =
                self.layout
                    .read(Part::Dests, q as usize, 0, rec.dests[q as usize])?;
            let degs: Vec<u32> = if prog.uses_degrees() {
                self.layout.read(
                    Part::Dests,
                    q as usize,
                    4 * rec.dests[q as usize],
                    rec.dests[q as usize],
                )?
            } else {
                vec![0; ids.len()]
            };
            let mut vals = Vec::with_capacity(ids.len());
            let mut eps = Vec::with_capacity(ids.len());
            for (&v, &d) in ids.iter().zip(&degs) {
                let mut one: Aggregates = [0.0; 4];
                let (x, act) = prog.init(v, d, &mut one);
                agg_total.add(&one);
                vals.push(x);
                eps.push([if act { 0 } else { NEVER }, 0]);
                active_total += act as u64;
            }
            let job = MirrorJob::initial(prog, q, &vals, &eps, &degs);
            let tw = Instant::now();
            let done = self.mirror_update(&st, &job, plan.mirror_buffer)?;
            self.stats.mirror_wait_seconds += tw.elapsed().as_secs_f64();
            add_mirror(&mut self.stats, &done);
        }
        self.stats.init_seconds = t_init.elapsed().as_secs_f64();
        let mut done = 0u64;
        let mut globals = Globals {
            iteration: 0,
            prev: agg_total.total(),
        };
        let mut bufs = PartBufs::default();
        while prog.proceed(done, &globals.prev, active_total) {
            let it = done + 1;
            let ti = Instant::now();
            let s0 = self.store.stats().snapshot();
            let m0 = self.stats.mirror_update_bytes;
            let (ms0, mw0) = (
                self.stats.mirror_update_seconds,
                self.stats.mirror_wait_seconds,
            );
            let e0 = self.stats.edges_processed;
            let (sb0, eb0, dr0, dw0) = (
                self.stats.source_bytes_read,
                self.stats.edge_bytes_read,
                self.stats.dest_bytes_read,
                self.stats.dest_bytes_written,
            );
            self.observer.iteration(it, k, active_total);
            globals.iteration = it;
            // Slot it % 2 is rewritten now: what it held dates from it - 2 and
            // never reads as active in it + 1.
            for t in &touched {
                t[(it % 2) as usize].clear_all();
            }
            for l in &list_len {
                l[(it % 2) as usize].store(0, std::sync::atomic::Ordering::Relaxed);
            }
            let mut agg = Sums::default();
            let mut active = 0u64;
            let mut active_sources = 0u64;
            // Partition q's mirror update runs on its own thread while partition
            // q + 1 is processed: it writes slot it % 2, which this iteration does
            // not read, and at most one is in flight.
            let mut stats = std::mem::take(&mut self.stats);
            let this = &*self;
            let bufs = &mut bufs;
            let r: Result<()> = std::thread::scope(|sc| {
                let mut inflight: Option<std::thread::ScopedJoinHandle<'_, Result<MirrorDone>>> =
                    None;
                for q in 0..k {
                    let res =
                        this.partition(prog, &st, &plan, q, &globals, &mut agg, bufs, &mut stats);
                    // The previous mirror update's error first, then this partition's.
                    if let Some(h) = inflight.take() {
                        let tw = Instant::now();
                        let d = h.join().unwrap_or_else(|p| std::panic::resume_unwind(p))?;
                        stats.mirror_wait_seconds += tw.elapsed().as_secs_f64();
                        add_mirror(&mut stats, &d);
                    }
                    let (a, s, job) = res?;
                    active += a;
                    active_sources += s;
                    this.observer.partition_done(q);
                    let st = &st;
                    let buf = plan.mirror_buffer;
                    inflight = Some(spawn(sc, "vpart-mirror", move || {
                        this.mirror_update(st, &job, buf)
                    }));
                }
                if let Some(h) = inflight.take() {
                    let tw = Instant::now();
                    let d = h.join().unwrap_or_else(|p| std::panic::resume_unwind(p))?;
                    stats.mirror_wait_seconds += tw.elapsed().as_secs_f64();
                    add_mirror(&mut stats, &d);
                }
                Ok(())
            });
            self.stats = stats;
            r?;
            let d = self.store.stats().snapshot().since(&s0);
            self.stats.per_iteration.push(IterationStats {
                active_sources,
                edges: self.stats.edges_processed - e0,
                bytes_read: d.bytes_read,
                bytes_written: d.bytes_written,
                mirror_bytes: self.stats.mirror_update_bytes - m0,
                source_bytes: self.stats.source_bytes_read - sb0,
                edge_bytes: self.stats.edge_bytes_read - eb0,
                dest_bytes_read: self.stats.dest_bytes_read - dr0,
                dest_bytes_written: self.stats.dest_bytes_written - dw0,
                mirror_seconds: self.stats.mirror_update_seconds - ms0,
                mirror_wait_seconds: self.stats.mirror_wait_seconds - mw0,
                seconds: ti.elapsed().as_secs_f64(),
            });
            globals.prev = agg.total();
            active_total = active;
            done = it;
        }
        self.stats.iterations = done;
        // The result below has the budget to itself.
        drop(bufs);

        // The result in dense order.
        let t_result = Instant::now();
        let out_budget = StateBudget::new(
            self.cfg.memory.saturating_sub(FIXED_BYTES),
            self.work_dir.clone(),
        );
        let n = self.store.vertices() as usize;
        let zero: P::Out = bytemuck::Zeroable::zeroed();
        let mut out = out_budget.alloc::<P::Out>(prog.name(), n, zero)?;
        out.advise_sequential();
        self.dense_result(prog, &st, &mut out)?;
        self.stats.result_seconds = t_result.elapsed().as_secs_f64();
        let io: IoSnapshot = self.store.stats().snapshot().since(&io0);
        self.stats.bytes_read = io.bytes_read;
        self.stats.read_requests = io.read_requests;
        self.stats.bytes_written = io.bytes_written;
        self.stats.write_requests = io.write_requests;
        Ok(out)
    }

    /// Where vertex `v` is among partition q's destinations (their ids
    /// ascend): a binary search, one checked 4 KiB group read a step.
    fn find_dest(&self, q: usize, v: u32) -> Result<Option<u64>> {
        let (mut lo, mut hi) = (0u64, self.layout.record.dests[q]);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            let x = self.layout.read::<u32>(Part::Dests, q, 4 * mid, 1)?;
            let Some(&x) = x.first() else {
                return Err(self.corrupt(q, "dests", format!("destination {mid} is missing")));
            };
            match x.cmp(&v) {
                std::cmp::Ordering::Less => lo = mid + 1,
                std::cmp::Ordering::Greater => hi = mid,
                std::cmp::Ordering::Equal => return Ok(Some(mid)),
            }
        }
        Ok(None)
    }

    /// A damaged partition file (`part` of partition q).
    fn corrupt(&self, q: usize, part: &str, reason: String) -> EngineError {
        EngineError::Store(outcore_store::StoreError::Corrupt {
            file: self
                .store
                .dir()
                .join(outcore_store::vpart::file_name(q as u32, part)),
            reason,
        })
    }

    /// Fills `out` (dense order) with every destination's output. A partition's
    /// destinations ascend but are spread over the whole id range, so `out` is
    /// filled one window of ids at a time, every partition contributing its
    /// destinations in the window (read by a cursor per partition, in pieces):
    /// when `out` is mapped, each of its pages is written while it is in the
    /// window and never again, instead of once per partition. Each window
    /// first asks the kernel for every partition's next two pieces of ids and
    /// values (`will_need`), so its 2K small reads are in flight together
    /// (bfs at 16M, 130 partitions, cold: 1.9-2.5 s -> 0.8-2.0 s, within the
    /// run's A/B in the design notes).
    fn dense_result<P: EdgeProgram>(
        &self,
        prog: &P,
        st: &Scratch,
        out: &mut VertexArray<P::Out>,
    ) -> Result<()> {
        let rec = &self.layout.record;
        let k = rec.partitions as usize;
        let n = out.len() as u64;
        const MAX_PIECE: u64 = 1 << 16;
        let osize = std::mem::size_of::<P::Out>().max(1) as u64;
        let window = if self.cfg.result_window > 0 {
            self.cfg.result_window
        } else if out.is_mapped() {
            // A sixteenth of the budget of output pages at a time.
            (self.cfg.memory / 16 / osize).max(MAX_PIECE)
        } else {
            n.max(1)
        };
        // Ids are read in pieces of about what a partition holds in one window,
        // so a piece is mostly used by the window that reads it (the rest is
        // read again by the next).
        let piece = (window / k.max(1) as u64 + 1).clamp(1024, MAX_PIECE);
        let mut cursor = vec![0u64; k];
        let vsize = std::mem::size_of::<P::V>() as u64;
        let mut w0 = 0u64;
        while w0 < n {
            let w1 = n.min(w0 + window);
            // Every partition's next two pieces of ids and values asked for
            // at once (this window's and the next one's): the 2k small reads
            // of a window are then in flight together, not waited for one
            // after another.
            for (q, &cur) in cursor.iter().enumerate() {
                let ahead = (2 * piece).min(rec.dests[q] - cur);
                self.layout.will_need(Part::Dests, q, 4 * cur, 4 * ahead);
                st.dests
                    .will_need(st.dest_base[q] + cur * vsize, ahead * vsize);
            }
            for (q, cur) in cursor.iter_mut().enumerate() {
                let nd = rec.dests[q];
                while *cur < nd {
                    let c = piece.min(nd - *cur);
                    let ids: Vec<u32> = self.layout.read(Part::Dests, q, 4 * *cur, c)?;
                    let m = ids.partition_point(|&v| (v as u64) < w1);
                    if m > 0 {
                        let mut vals: Vec<P::V> = vec![bytemuck::Zeroable::zeroed(); m];
                        self.load_dests(prog, st, q as u32, nd, *cur, &mut vals, None, None)?;
                        for (&v, x) in ids[..m].iter().zip(&vals) {
                            out[v as usize] = prog.output(x);
                        }
                    }
                    *cur += m as u64;
                    if m < ids.len() {
                        break;
                    }
                }
            }
            w0 = w1;
        }
        Ok(())
    }
}

impl crate::program::ProgramRunner for ExternalEngine<'_> {
    fn run_program<P: EdgeProgram>(&mut self, prog: &P) -> Result<VertexArray<P::Out>> {
        crate::program::one_way(prog, "external")?;
        crate::program::needs_destination(prog, "external")?;
        self.run(prog)
    }
    fn iterations(&self) -> u64 {
        self.stats.iterations
    }
}
