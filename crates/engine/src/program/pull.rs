//! Iterations from the CSR lists for settling relaxation programs on the
//! streaming engine: direction-optimizing BFS (Beamer, Asanović and Patterson, SC'12).
//!
//! # Design
//! A top-down (push) iteration streams the grid blocks of every active source
//! and tries each out-edge; on the middle levels of a small-world graph that is
//! nearly every edge, most of them into vertices already reached. A bottom-up
//! iteration turns it around: every vertex whose value is not yet final reads
//! its in-neighbours — the in-edge CSR (`csr.in.*`, ingested with `--in-edges`;
//! on an undirected store the out-edge CSR is the same lists) — in ascending
//! order and stops at the first one on the frontier
//! ([`EdgeProgram::pulls_from`]: bfs, depth exactly the iteration's). The
//! smallest frontier in-neighbour is the parent the top-down iterations'
//! `min` would pick, so both directions give the same answer, bit for bit.
//!
//! * **Which vertices.** Those not in the settled bitmap (the streaming
//!   engine's `fin`, [`EdgeProgram::final_after`]). Vertices are taken in
//!   chunks of [`CHUNK`] ids, chunks spread over the pool; a chunk's wanted
//!   lists are read in requests of at most [`WINDOW`] edges, a run of
//!   unwanted lists shorter than [`GAP`] read through rather than split, a
//!   longer list read window by window until its first frontier hit. Every read
//!   is checked against the page-group checksums (`csr.DIR.targets.sums`).
//!   A thread's reads are synchronous, so a task takes [`TASK`] chunks in
//!   turn and hints the kernel (`POSIX_FADV_WILLNEED`) at the requests of
//!   the next [`AHEAD`] while it reads one: several requests in flight where
//!   the wanted lists are scattered (not where they continue the last one:
//!   the kernel's read-ahead serves a sequential read better). Kronecker 24
//!   bfs on a store without in-edges, cold, 512 MiB: the sparse steps 1.79
//!   -> 1.56 s, the run 3.69 -> 3.31 s (medians of four alternating runs).
//! * **Kept lists.** A bottom-up step keeps in memory the in-lists of the
//!   vertices it left without a parent, when they fit half of what the budget
//!   has left; the next bottom-up step reads those instead of the file (a
//!   vertex's list either has its hit there or is kept again). On Kronecker 24
//!   the vertices never reached (9.4M) hold 1.7M in-edges scattered over the
//!   whole 1 GiB file: re-read by read-ahead, each later step took 0.6-0.7 s,
//!   from memory 0.01-0.06 s. A sparse step whose sources hold a quarter of
//!   the edges reads its dense chunks whole and keeps the out-lists of the
//!   vertices neither settled nor active (`kept_out.rs`), once a run, in
//!   half of what the budget has left; later sparse steps take a chunk from
//!   there when it holds every active vertex's list. Kronecker 24 bfs, cold,
//!   512 MiB, four alternating runs: 2.69 -> 1.84 s (median), engine reads
//!   2.30 -> 1.14 GiB, 38K -> 7.7K requests.
//! * **Sparse steps.** When the frontier is small, an iteration may instead
//!   push from the active vertices along their out-edge lists (`csr.out.*`),
//!   read the same way: a top-down step that reads a few lists instead of
//!   every grid row holding an active source. Every store has these lists, so
//!   a store without in-edges takes sparse steps too (never bottom-up ones):
//!   on Kronecker 22 four of bfs's seven levels, the first two and the last
//!   two, which read the whole grid before (engine reads 997 -> 615 MiB).
//! * **sssp.** A weighted program that never settles takes sparse steps
//!   alone, the weights read from `csr.out.weights` beside the targets (the
//!   same ranges, checked against their own sums): pushing from every active
//!   vertex along its out-edges is what a grid pass does, without re-entry,
//!   so the answer is the grid's bit for bit (distances and parents). Each
//!   iteration is the cheaper of the two, priced with what the page cache
//!   holds (`mincore` over a sample of the files' pages, 2 ms for 4 GiB): a
//!   grid pass its active rows' bytes (with weights) read where not cached
//!   and decoded, a sparse step its price read where not cached, at
//!   [`SPARSE_READ`] times a streamed byte, and 4 bytes an edge examined.
//!   Weighted Kronecker 24 under 512 MiB, cold: every iteration on the grid
//!   took 27.1-30.0 s, every one sparse 24.8-26.4 s (the middle iterations
//!   read the whole CSR, 2.15 GB with weights, where the grid is 1.65 GiB),
//!   the policy 20.3-25.4 s (the first two and the last six or seven of 23
//!   iterations sparse); warm, 16.8 s with a price that ignored the cache,
//!   11.2 s now (every iteration sparse, the CSR cached).
//! * **Activity.** The vertices a step lowers are the next iteration's sources;
//!   after a bottom-up step so are the active vertices not on the frontier
//!   (deeper candidates left by top-down re-entry, which still have to push).
//!   Frontier vertices are done: every vertex they could lower was examined.
//! * **When.** [`BottomUp::Auto`] turns to bottom-up as SC'12 does, when the
//!   active vertices' out-edges `m_f` exceed `m_u / ALPHA`, `m_u` the in-edges
//!   of the vertices not yet final — and only while at least a quarter of the
//!   active vertices are on the frontier: top-down iterations cross several
//!   levels by re-entry, and when they have run ahead of the iteration count
//!   (road networks: hundreds of levels in a hundred iterations, no active
//!   vertex on the frontier) a bottom-up step would settle a level long
//!   settled. Before that (and on a store without in-edges) an iteration is
//!   the cheaper of a sparse step and a grid pass, priced as below — but never
//!   sparse once a grid pass's re-entry has run ahead (a sparse step crosses
//!   one level, a road network's grid pass about six), nor a third sparse
//!   step in a row while the active set stays within fourfold of the last
//!   one and under a 64th of the vertices ([`steady`]): a grid pass then
//!   shows whether re-entry runs ahead (without this a road network went
//!   sparse from its root on, one level an iteration: New York 0.78 -> 0.9 s
//!   warm, 10x the read requests). A small world's frontier grows or shrinks
//!   more than fourfold a level, or spans more of the graph, so it keeps to
//!   sparse steps while they are cheaper (Kronecker 22, warm: 7 of 7 levels
//!   sparse, 0.47-0.52 -> 0.31-0.35 s). What the page cache holds of the
//!   lists a sparse step prices at its bytes examined, without requests or
//!   gaps. Once off the grid, each iteration takes the cheapest of a
//!   bottom-up step, a sparse step and a grid pass, priced in bytes read in
//!   sequence: a read request costs [`REQUEST_BYTES`](super::lists::REQUEST_BYTES) plus its bytes, a chunk
//!   no more than its span read whole (read-ahead), kept lists a sixteenth of
//!   their bytes, a grid pass its rows' bytes and a quarter more for decoding
//!   them. SC'12's return to top-down
//!   on a small frontier is left out: on the grid a small frontier spread over
//!   every row costs a whole pass (Kronecker 22, warm: the last levels took
//!   0.14-0.15 s top-down, 0.02 s bottom-up). The price decides between all
//!   three only once off the grid: a bottom-up step settles one level, and a road network's
//!   frontier, spread over its one or few grid rows, would keep it bottom-up
//!   for a thousand levels that re-entry crosses nine at a time
//!   (road-luxembourg: 1.02 s against 0.40 s).
//!
//! # Memory
//! Taken from the budget when the run starts, or no step leaves the grid: per
//! direction (in and out; one on an undirected store or one without in-edges)
//! the degrees (4 bytes a vertex: mapped from `degrees.DIR` and checked whole
//! rather than copied, but every step touches them, so they are counted),
//! each chunk's first edge (8 bytes per 4096
//! vertices) and the page-group checksums (4 bytes per 4 KiB of edges); the
//! frontier bitmap (1 bit a vertex, with in-edges) and per thread one read
//! buffer of [`WINDOW`] edges and [`AHEAD`] + 2 lists of a chunk's wanted
//! vertices. The kept lists take what they hold (at
//! most half of what the budget has left) and give it back when replaced.

use super::kept_out::KeptOut;
use super::lists::{chunk_range, Bufs, Side, Want, AHEAD, CHUNK, GAP, TASK, WANTED_BYTES, WINDOW};
use super::relax::{self, Refused, Word};
use super::EdgeProgram;
use crate::error::{EngineError, Result};
use crate::stream::{prefetch, BottomUp, StreamEngine};
use outcore_state::AtomicBitmap;
use outcore_store::manifest::Manifest;
use outcore_store::pagesums::{PageSums, SUM_GROUP};
use rayon::prelude::*;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};

/// Whether `active` vertices after `before` (of `n`) look like a frontier
/// that re-entry may run ahead of: within fourfold of the last one and under
/// a 64th of the vertices.
fn steady(active: u64, before: u64, n: u32) -> bool {
    4 * active >= before && active < 4 * before && 64 * active < n as u64
}

/// What a byte of a sparse step's price costs against a byte a grid pass
/// streams, when neither is cached: weighted Kronecker 24, cold, a sparse
/// step and a grid pass took the same time where the step's price was about
/// 0.8 of the grid's bytes (a grid pass counts its bytes twice: read and
/// decoded).
const SPARSE_READ: f64 = 2.5;
/// SC'12's threshold for going bottom-up (the value gapbs uses).
const ALPHA: u64 = 15;

/// Which CSR lists a bottom-up step reads on a store with this manifest:
/// `csr.in.*` when ingested with `--in-edges`, the out-edge lists of an
/// undirected store (the same lists); none on a directed store without
/// in-edges (or one whose reverse edges are marked).
pub fn bottom_up_lists(m: &Manifest) -> Option<&'static str> {
    if m.in_edges {
        Some("in")
    } else if !m.directed && !m.reverse_marked {
        Some("out")
    } else {
        None
    }
}

/// How an iteration runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Step {
    /// Along the grid, re-entering blocks (the streaming engine's own).
    TopDown,
    /// Every vertex not final reads its in-edges.
    BottomUp,
    /// Every active vertex reads its out-edges from the out-edge CSR.
    Sparse,
}

/// A store's in-edges (and out-edges) and what deciding and running
/// bottom-up and sparse steps needs.
pub(crate) struct InEdges {
    /// The out-edge lists.
    out: Side,
    /// The in-edge lists.
    inn: InLists,
    /// The frontier of a bottom-up step (empty without in-edge lists).
    frontier: AtomicBitmap,
    /// Taken from the engine's budget.
    pub(crate) bytes: u64,
    mode: BottomUp,
    /// Whether the last iteration ran from the CSR (bottom-up or sparse).
    pulling: bool,
    /// Whether a grid iteration's re-entry has run ahead of the iteration
    /// count (most active vertices deeper than the frontier): no sparse
    /// step before a bottom-up one then.
    deep: bool,
    /// Sparse steps in a row, up to the last one.
    sparse_run: u32,
    /// Active vertices when the last step was chosen.
    last_active: u64,
    /// The in-lists of every vertex a bottom-up step left without a parent,
    /// kept in memory when they fit half of what the budget has left: later
    /// bottom-up steps read them from here instead of the file.
    kept: Option<Kept>,
    /// The out-lists a dense sparse step kept for the sparse steps after it
    /// (`kept_out.rs`).
    kept_out: Option<KeptOut>,
}

/// Where a store's in-edge lists are.
enum InLists {
    /// In their own files (`--in-edges`).
    Own(Box<Side>),
    /// The out-edge lists (an undirected store).
    Out,
    /// Nowhere: only sparse steps run, never a bottom-up one.
    None,
}

/// One chunk's kept in-lists: (vertex, list length) and the lists, in order.
type KeptChunk = (Vec<(u32, u32)>, Vec<u32>);

/// In-lists kept in memory, per chunk.
struct Kept {
    chunks: Vec<KeptChunk>,
    /// Taken from the budget.
    bytes: u64,
}

impl Kept {
    fn edges(&self) -> u64 {
        self.chunks.iter().map(|c| c.1.len() as u64).sum()
    }
}

impl InEdges {
    /// The in-edges of the engine's store when `prog` can pull, the engine
    /// allows it, the store has them and the budget holds what a step needs;
    /// the out-edges alone (sparse steps, never bottom-up ones) for a
    /// relaxation program that cannot pull, or one that does not settle
    /// (`settled` false: sssp); `None` otherwise (every iteration is then
    /// top-down).
    pub(crate) fn open<P: EdgeProgram>(
        e: &StreamEngine,
        prog: &P,
        settled: bool,
    ) -> Result<Option<InEdges>> {
        let mode = e.config().bottom_up;
        if mode == BottomUp::Never || !prog.relaxes() || prog.both_directions() {
            return Ok(None);
        }
        let pulls = prog.pulls() && settled && !prog.weighted();
        let store = e.store();
        let m = store.manifest();
        let dir = bottom_up_lists(m).filter(|_| pulls);
        // Without in-edges, sparse steps alone, along the out-edge lists —
        // unless those hold marked reverse edges (`--with-reverse`).
        if dir.is_none() && (m.reverse_marked || mode == BottomUp::Always) {
            return Ok(None);
        }
        let n = e.vertices() as u64;
        let out_sums = PageSums::load(store, "csr.out.targets")?;
        let weights = prog.weighted() && m.weighted;
        let w_sums = match weights {
            true => Some(PageSums::load(store, "csr.out.weights")?),
            false => None,
        };
        let in_sums = match dir {
            Some("in") => Some(PageSums::load(store, "csr.in.targets")?),
            _ => None,
        };
        let frontier = if dir.is_some() { n } else { 0 };
        let buf = WINDOW * 4 + 2 * SUM_GROUP;
        let bufs = if weights { 2 * buf } else { buf };
        let bytes = Side::bytes(n, &out_sums, w_sums.as_ref())
            + in_sums.as_ref().map_or(0, |s| Side::bytes(n, s, None))
            + frontier.div_ceil(64) * 8
            + e.threads() as u64 * (bufs + (AHEAD as u64 + 2) * WANTED_BYTES);
        if !e.budget().take(bytes) {
            return Ok(None);
        }
        // Lists read in place: only for a program that never settles (sssp),
        // whose every sparse step reads the active vertices' lists again.
        // Kronecker 22 weighted, warm, eight alternating rounds: sssp 1.51 ->
        // 1.29 s (medians); bfs, whose lists are read about once each, lost
        // (0.18 -> 0.21 s): a first touch of a mapped page costs more than
        // copying it.
        let map = !settled && Side::may_map(e.config());
        let r = (|| {
            Ok(InEdges {
                out: Side::open(store, "out", out_sums, w_sums, map)?,
                inn: match (dir, in_sums) {
                    (Some(_), Some(s)) => {
                        InLists::Own(Box::new(Side::open(store, "in", s, None, map)?))
                    }
                    (Some(_), None) => InLists::Out,
                    (None, _) => InLists::None,
                },
                frontier: AtomicBitmap::new(frontier as usize),
                bytes,
                mode,
                pulling: false,
                deep: false,
                sparse_run: 0,
                last_active: 0,
                kept: None,
                kept_out: None,
            })
        })();
        if r.is_err() {
            e.budget().give_back(bytes);
        }
        r.map(Some)
    }

    /// The in-edge lists, when the store has them.
    fn inn(&self) -> Option<&Side> {
        match &self.inn {
            InLists::Own(s) => Some(s),
            InLists::Out => Some(&self.out),
            InLists::None => None,
        }
    }

    /// How iteration `done` (counted from 0) runs over the words `a`;
    /// `settled` holds the vertices whose word is final.
    pub(crate) fn choose<P: EdgeProgram, W: Word>(
        &mut self,
        e: &StreamEngine,
        prog: &P,
        a: &[W::Atomic],
        settled: Option<&AtomicBitmap>,
        done: u64,
    ) -> Step {
        match self.mode {
            BottomUp::Always if settled.is_some() => return Step::BottomUp,
            BottomUp::Sparse => return Step::Sparse,
            _ => {}
        }
        let Some(settled) = settled else {
            return self.choose_unsettled(e);
        };
        if self.deep && self.inn().is_none() {
            // Nothing but the grid is left: no need to count anything.
            return Step::TopDown;
        }
        let n = e.vertices();
        let before = std::mem::replace(&mut self.last_active, e.active_count());
        let inn = self.inn();
        let late = self.pulling;
        // How many active vertices are on the frontier: when few are, the grid
        // it is, without pricing anything (a road network's every iteration;
        // this walks the active vertices only).
        let on = e.pool().install(|| {
            (0..n.div_ceil(CHUNK))
                .into_par_iter()
                .map(|c| {
                    e.active_bitmap()
                        .ones_in(chunk_range(c, n))
                        .filter(|&v| prog.pulls_from(W::load(&a[v as usize]), done))
                        .count() as u64
                })
                .sum::<u64>()
        });
        if 4 * on < e.active_count() {
            self.pulling = false;
            self.deep = true;
            self.sparse_run = 0;
            return Step::TopDown;
        }
        // In-lists kept in memory: a bottom-up step reads nothing, priced at
        // a sixteenth of their bytes.
        let kept_edges = self.kept.as_ref().map(|k| k.edges());
        // Out-edges of the active vertices and in-edges of the vertices not
        // final; once off the grid, what a bottom-up and a sparse step would
        // read.
        let chunks = n.div_ceil(CHUNK);
        let (m_f, m_u) = e.pool().install(|| {
            (0..chunks)
                .into_par_iter()
                .map(|c| {
                    let f = self.out.degrees(c, Want::Set(e.active_bitmap()));
                    let u = inn.map_or(0, |s| s.degrees(c, Want::Clear(settled)));
                    (f, u)
                })
                .reduce(|| (0, 0), |x, y| (x.0 + y.0, x.1 + y.1))
        });
        // What a chunk-by-chunk read of the lists `want` picks costs.
        let price = |side: &Side, want: Want<'_>| -> u64 {
            e.pool().install(|| {
                (0..chunks)
                    .into_par_iter()
                    .map_init(Vec::new, |wanted, c| side.cost(c, want, wanted))
                    .sum()
            })
        };
        // A top-down pass reads its rows' bytes and also decodes every block
        // of them, so it counts a quarter more.
        let grid = || {
            let grid = e.active_row_bytes(false);
            grid + grid / 4
        };
        // A sparse step reads at least its lists' bytes: priced only when
        // those are fewer than `others`, the other steps' price. What the
        // page cache holds of the lists costs their bytes examined (4 an
        // edge) but no request and no gap read through.
        let sparse = |others: u64| match 4 * m_f < others {
            true => {
                let active = Want::Set(e.active_bitmap());
                let p = match &self.kept_out {
                    None => price(&self.out, active),
                    // Kept lists cost their bytes examined.
                    Some(k) => e.pool().install(|| {
                        (0..chunks)
                            .into_par_iter()
                            .map_init(Vec::new, |wanted, c| {
                                match k.covers(c, n, e.active_bitmap()) {
                                    true => 4 * self.out.degrees(c, active),
                                    false => self.out.cost(c, active, wanted),
                                }
                            })
                            .sum()
                    }),
                };
                let extra = p.saturating_sub(4 * m_f) as f64;
                4 * m_f + (extra * (1.0 - self.out.cached_fraction())) as u64
            }
            false => u64::MAX,
        };
        let step = match self.inn() {
            Some(inn) if late => {
                let grid = grid();
                let bottom_up = match kept_edges {
                    Some(k) => 4 * k / 16,
                    None => price(inn, Want::Clear(settled)),
                };
                if sparse(bottom_up.min(grid)) < bottom_up.min(grid) {
                    Step::Sparse
                } else if bottom_up <= grid {
                    Step::BottomUp
                } else {
                    Step::TopDown
                }
            }
            Some(_) if m_f * ALPHA > m_u => Step::BottomUp,
            // Once a grid pass's re-entry has run ahead, the grid it is: a
            // sparse step crosses one level, a grid pass several on a graph
            // with locality (a road network). Nor more than two sparse steps
            // in a row unless the active set shrinks or grows fourfold or
            // holds a 64th of the vertices: a grid pass then shows whether
            // re-entry runs ahead. (A frontier that grows fourfold a level,
            // or spans a 64th of the graph, is a small world's, where
            // re-entry cannot run far; a road network's hold about √n.)
            _ if self.deep || (self.sparse_run >= 2 && steady(e.active_count(), before, n)) => {
                Step::TopDown
            }
            _ => {
                // The cheaper of a sparse step and a grid pass — against two
                // passes where the sparse step would keep the lists the next
                // levels read (`kept_out.rs`), sparing the next level's pass.
                // Kronecker 22, cold, 512 MiB: 5 sparse levels and 2 grid
                // passes 0.85-1.07 s (608 MiB read), 7 sparse levels, one of
                // them keeping, 0.54-0.72 s (279 MiB).
                let grid = grid();
                let edges_all = self.out.edges();
                let keeps = self.kept_out.is_none()
                    && self.out.weights.is_none()
                    && edges_all > 0
                    && 4 * m_f >= edges_all;
                let bar = if keeps { 2 * grid } else { grid };
                match sparse(bar) < bar {
                    true => Step::Sparse,
                    false => Step::TopDown,
                }
            }
        };
        // Off the grid since a bottom-up step: sparse steps before any keep
        // SC'12's rule for turning bottom-up.
        self.pulling = step == Step::BottomUp || (late && step == Step::Sparse);
        self.sparse_run = match step {
            Step::Sparse => self.sparse_run + 1,
            _ => 0,
        };
        step
    }

    /// How an iteration of a program that never settles (sssp) runs: the
    /// cheaper of a sparse step and a grid pass. A grid pass costs its rows'
    /// bytes read (those the page cache does not hold) and decoded; a sparse
    /// step its price read (scattered synchronous requests: [`SPARSE_READ`]
    /// times a streamed byte) and 4 bytes an edge examined.
    fn choose_unsettled(&self, e: &StreamEngine) -> Step {
        let chunks = e.vertices().div_ceil(CHUNK);
        let m_f: u64 = e.pool().install(|| {
            (0..chunks)
                .into_par_iter()
                .map(|c| self.out.degrees(c, Want::Set(e.active_bitmap())))
                .sum()
        });
        let rg = e.grid_cached_fraction();
        let rc = self.out.cached_fraction();
        let rows = e.active_row_bytes(self.out.weights.is_some()) as f64;
        let grid = rows * (2.0 - rg);
        let examined = 4.0 * m_f as f64;
        if examined >= grid {
            Step::TopDown
        } else {
            let price: u64 = e.pool().install(|| {
                (0..chunks)
                    .into_par_iter()
                    .map_init(Vec::new, |wanted, c| {
                        self.out.cost(c, Want::Set(e.active_bitmap()), wanted)
                    })
                    .sum()
            });
            let sparse = price as f64 * (1.0 - rc) * SPARSE_READ + examined;
            match sparse < grid {
                true => Step::Sparse,
                false => Step::TopDown,
            }
        }
    }

    /// Runs iteration `done` (counted from 0) as `step` (bottom-up or sparse)
    /// over the words `a`; `settled` holds the vertices whose word is final.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn step<P: EdgeProgram, W: Word>(
        &mut self,
        e: &mut StreamEngine,
        step: Step,
        prog: &P,
        a: &[W::Atomic],
        settled: Option<&AtomicBitmap>,
        done: u64,
        refused: &Refused,
    ) -> Result<()> {
        let n = e.vertices();
        let bottom_up = step == Step::BottomUp;
        // Whether `v`'s word may still be lowered.
        let open = |v: u32| settled.is_none_or(|s| !s.get(v));
        if bottom_up {
            let fr = &self.frontier;
            e.pool()
                .install(|| fr.fill_where(|v| prog.pulls_from(W::load(&a[v as usize]), done)));
        }
        // A bottom-up hit's message: the same for every frontier vertex when
        // the program says so, else read from its word.
        let pulled = prog.frontier_message(done);
        let lower = |u: u32, v: u32, next: &AtomicBitmap| {
            let m = pulled.unwrap_or_else(|| relax::message_of::<P, W>(prog, &a[u as usize]));
            if !relax::relax_into::<P, W>(prog, &a[v as usize], m, u, v, 1.0, |x| {
                next.set(x);
            }) {
                refused.record(u, v, 1.0);
            }
        };
        // A sparse step's list of `u`: its targets hinted first (they lie
        // anywhere in the array, and a list holds a few dozen), then lowered
        // by the contribution, computed once (per edge when weighted).
        // Returns the edges examined.
        let push = |u: u32, dsts: &[u32], ws: &[f32], next: &AtomicBitmap| -> u64 {
            for &v in dsts {
                if open(v) {
                    prefetch(a, v);
                }
            }
            let m = relax::message_of::<P, W>(prog, &a[u as usize]);
            if !ws.is_empty() {
                for (&v, &w) in dsts.iter().zip(ws) {
                    if open(v)
                        && !relax::relax_into::<P, W>(prog, &a[v as usize], m, u, v, w, |x| {
                            next.set(x);
                        })
                    {
                        refused.record(u, v, w);
                    }
                }
                return dsts.len() as u64;
            }
            let Some(c) = prog.edge(m, u, 1.0) else {
                refused.record(u, dsts[0], 1.0);
                return dsts.len() as u64;
            };
            for &v in dsts {
                if open(v) {
                    relax::lower::<P, W>(prog, &a[v as usize], c, v, |x| {
                        next.set(x);
                    });
                }
            }
            dsts.len() as u64
        };
        // Bottom-up: the kept lists of the last step, if any, and room for the
        // ones this step leaves without a hit (none kept past `cap`).
        let old = if bottom_up { self.kept.take() } else { None };
        if let Some(k) = &old {
            e.budget().give_back(k.bytes);
        }
        let cap = e.budget().remaining() / 2;
        let (used, full) = (AtomicU64::new(0), AtomicBool::new(!bottom_up));
        // A sparse step over at least a quarter of the edges keeps the
        // out-lists of the vertices still to be reached, once a run, for the
        // sparse steps after it (`kept_out.rs`).
        let edges_all = self.out.edges();
        let dense = || {
            let active = Want::Set(e.active_bitmap());
            let m_f: u64 = e.pool().install(|| {
                (0..n.div_ceil(CHUNK))
                    .into_par_iter()
                    .map(|c| self.out.degrees(c, active))
                    .sum()
            });
            edges_all > 0 && 4 * m_f >= edges_all
        };
        let fresh = (!bottom_up
            && settled.is_some()
            && self.out.weights.is_none()
            && self.kept_out.is_none()
            && dense()
            && e.budget().take(KeptOut::base_bytes(n)))
        .then(|| KeptOut::new(n));
        let from_kept = AtomicU64::new(0);
        let this = &*self;
        let fr = &this.frontier;
        let mut kept = Vec::new();
        // The lists a step reads: the out-lists (sparse), the in-lists
        // (bottom-up), none when the last step's kept lists stand in for them.
        let side = match (bottom_up, &old) {
            (false, _) => Some(&this.out),
            (true, Some(_)) => None,
            (true, None) => match this.inn() {
                Some(s) => Some(s),
                None => {
                    return Err(EngineError::Invalid(
                        "a bottom-up step without in-edge lists".into(),
                    ))
                }
            },
        };
        if bottom_up && settled.is_none() {
            return Err(EngineError::Invalid(
                "a bottom-up step for a program that does not settle".into(),
            ));
        }
        e.csr_iteration(bottom_up, |eng, active, next| {
            let want = match settled {
                Some(s) if bottom_up => Want::Clear(s),
                _ => Want::Set(active),
            };
            // Chunk `c`, its lists picked into `wanted`.
            let chunk = |c: u32,
                         wanted: &[(u32, u64, u64)],
                         buf: &mut Bufs|
             -> Result<(u64, Option<KeptChunk>)> {
                if !bottom_up {
                    // Every active source pushes once: none stays
                    // active unless lowered.
                    if let Some(k) = this.kept_out.as_ref().filter(|k| k.covers(c, n, active)) {
                        let edges =
                            k.visit(c, n, &this.out.deg, active, |u, d| push(u, d, &[], next));
                        from_kept.fetch_add(edges, Relaxed);
                        return Ok((edges, None));
                    }
                    if let Some(f) = fresh.as_ref().filter(|_| this.out.dense(c, wanted)) {
                        // The chunk read whole; the lists of its vertices
                        // neither settled nor active kept, in order.
                        for v in chunk_range(c, n) {
                            if !active.get(v) && open(v) {
                                f.mark(v);
                            }
                        }
                        let mut all = Vec::new();
                        this.out.pick_all(c, &mut all);
                        let mut lists = Vec::new();
                        let edges = this.out.lists(&all, buf, |u, dsts, ws| {
                            if active.get(u) {
                                (push(u, dsts, ws, next), false)
                            } else {
                                if f.holds(u) {
                                    lists.extend_from_slice(dsts);
                                }
                                (0, false)
                            }
                        })?;
                        lists.shrink_to_fit();
                        let size = lists.len() as u64 * 4;
                        if used.fetch_add(size, Relaxed) + size <= cap {
                            return Ok((edges, Some((Vec::new(), lists))));
                        }
                        used.fetch_sub(size, Relaxed);
                        f.unmark(c, n);
                        return Ok((edges, None));
                    }
                    let edges = this
                        .out
                        .lists(wanted, buf, |u, dsts, ws| (push(u, dsts, ws, next), false))?;
                    return Ok((edges, None));
                }
                for v in chunk_range(c, n) {
                    if active.get(v) && !fr.get(v) {
                        next.set(v);
                    }
                }
                // The lists left without a hit, for the next
                // bottom-up step.
                let (mut ids, mut srcs_kept) = (Vec::new(), Vec::new());
                let keep = !full.load(Relaxed);
                let mut visit = |v: u32, srcs: &[u32], _: &[f32]| {
                    let hit = srcs.iter().position(|&u| fr.get(u));
                    if let Some(k) = hit {
                        lower(srcs[k], v, next);
                    }
                    if keep {
                        // A long list comes window by window: one
                        // entry, dropped on a hit.
                        if ids.last().is_none_or(|&(x, _)| x != v) {
                            ids.push((v, 0u32));
                        }
                        let last = ids.len() - 1;
                        if hit.is_some() {
                            let len = ids[last].1 as usize;
                            srcs_kept.truncate(srcs_kept.len() - len);
                            ids.pop();
                        } else {
                            srcs_kept.extend_from_slice(srcs);
                            ids[last].1 += srcs.len() as u32;
                        }
                    }
                    match hit {
                        Some(k) => (k as u64 + 1, true),
                        None => (srcs.len() as u64, false),
                    }
                };
                let edges = match old.as_ref().map(|k| &k.chunks[c as usize]) {
                    Some((list, all)) => {
                        let (mut at, mut x) = (0usize, 0u64);
                        for &(v, len) in list {
                            let s = &all[at..at + len as usize];
                            at += len as usize;
                            if open(v) {
                                x += visit(v, s, &[]).0;
                            }
                        }
                        x
                    }
                    None => match side {
                        Some(side) => side.lists(wanted, buf, &mut visit)?,
                        None => 0,
                    },
                };
                let size = (ids.capacity() * 8 + srcs_kept.capacity() * 4) as u64;
                if keep && !full.load(Relaxed) && used.fetch_add(size, Relaxed) + size <= cap {
                    ids.shrink_to_fit();
                    srcs_kept.shrink_to_fit();
                    Ok((edges, Some((ids, srcs_kept))))
                } else {
                    full.store(true, Relaxed);
                    Ok((edges, None))
                }
            };
            // Tasks of TASK chunks, each read in turn, the next AHEAD chunks'
            // lists picked and hinted to the kernel before a chunk is read.
            let chunks = n.div_ceil(CHUNK);
            let per_task: Vec<Vec<(u64, Option<KeptChunk>)>> = eng.pool().install(|| {
                (0..chunks.div_ceil(TASK))
                    .into_par_iter()
                    .map_init(
                        || (Bufs::default(), vec![Vec::new(); AHEAD as usize + 1]),
                        |(buf, ring), t| -> Result<Vec<(u64, Option<KeptChunk>)>> {
                            let cs = t * TASK..((t + 1) * TASK).min(chunks);
                            let slot = |c: u32| (c % (AHEAD + 1)) as usize;
                            let mut end = u64::MAX - GAP;
                            let mut pick = |c: u32, ring: &mut [Vec<(u32, u64, u64)>]| {
                                let kept = this.kept_out.as_ref();
                                if !bottom_up && kept.is_some_and(|k| k.covers(c, n, active)) {
                                    // Read from memory: nothing to pick or hint.
                                    ring[slot(c)].clear();
                                } else if let Some(side) = side {
                                    side.pick(c, want, &mut ring[slot(c)]);
                                    side.hint(&ring[slot(c)], &mut end);
                                }
                            };
                            for c in cs.start..(cs.start + AHEAD).min(cs.end) {
                                pick(c, ring);
                            }
                            let mut out = Vec::with_capacity(cs.len());
                            for c in cs.clone() {
                                if c + AHEAD < cs.end {
                                    pick(c + AHEAD, ring);
                                }
                                out.push(chunk(c, &ring[slot(c)], buf)?);
                            }
                            Ok(out)
                        },
                    )
                    .collect::<Result<_>>()
            })?;
            let per_chunk = per_task.into_iter().flatten();
            let mut edges = 0;
            for (x, k) in per_chunk {
                edges += x;
                kept.push(k);
            }
            Ok(edges)
        })?;
        drop(old);
        e.add_kept_edges(from_kept.into_inner());
        let bytes = used.load(Relaxed);
        if let Some(mut f) = fresh {
            if bytes > 0 && e.budget().take(bytes) {
                for (c, k) in kept.into_iter().enumerate() {
                    if let Some((_, lists)) = k {
                        let size = lists.len() as u64 * 4;
                        f.put(c as u32, lists, size);
                    }
                }
                self.kept_out = Some(f);
            } else {
                e.budget().give_back(KeptOut::base_bytes(n));
            }
            return Ok(());
        }
        if !full.load(Relaxed) && e.budget().take(bytes) {
            self.kept = Some(Kept {
                chunks: kept.into_iter().map(Option::unwrap_or_default).collect(),
                bytes,
            });
        }
        Ok(())
    }

    /// Memory to give back to the budget when the run ends.
    pub(crate) fn held(&self) -> u64 {
        self.bytes
            + self.kept.as_ref().map_or(0, |k| k.bytes)
            + self.kept_out.as_ref().map_or(0, |k| k.bytes)
    }
}
