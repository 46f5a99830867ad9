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
//! * **Sparse steps.** Once the frontier is small, an iteration may instead
//!   push from the active vertices along their out-edge lists (`csr.out.*`),
//!   read the same way: a top-down step that reads a few lists instead of
//!   every grid row holding an active source.
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
//!   settled. Once off the grid, each iteration takes the cheapest of a
//!   bottom-up step, a sparse step and a grid pass, priced in bytes read in
//!   sequence: a read request costs [`REQUEST_BYTES`] plus its bytes, a chunk
//!   no more than its span read whole (read-ahead), a grid pass its rows'
//!   bytes and a quarter more for decoding them. SC'12's return to top-down
//!   on a small frontier is left out: on the grid a small frontier spread over
//!   every row costs a whole pass (Kronecker 22, warm: the last levels took
//!   0.14-0.15 s top-down, 0.02 s bottom-up). The price only decides once off
//!   the grid: a bottom-up step settles one level, and a road network's
//!   frontier, spread over its one or few grid rows, would keep it bottom-up
//!   for a thousand levels that re-entry crosses nine at a time
//!   (road-luxembourg: 1.02 s against 0.40 s).
//!
//! # Memory
//! Taken from the budget when the run starts, or no step leaves the grid: per
//! direction (in and out; one on an undirected store) the degrees (4 bytes a
//! vertex), each chunk's first edge (8 bytes per 4096 vertices) and the
//! page-group checksums (4 bytes per 4 KiB of edges); the frontier bitmap (1
//! bit a vertex) and per thread one read buffer of [`WINDOW`] edges and two
//! lists of a chunk's wanted vertices.

use super::relax::{self, Refused, Word};
use super::EdgeProgram;
use crate::error::{EngineError, Result};
use crate::stream::{BottomUp, StreamEngine};
use outcore_state::AtomicBitmap;
use outcore_store::format::{FileKind, LayoutFile};
use outcore_store::pagesums::{PageSums, SUM_GROUP};
use outcore_store::Store;
use rayon::prelude::*;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};

/// Vertices per task.
const CHUNK: u32 = 4096;
/// Edges per read request (1 MiB).
const WINDOW: u64 = 1 << 18;
/// Unwanted edges between two wanted lists that are read through rather than
/// starting a new request (16 KiB).
const GAP: u64 = 1 << 12;
/// A chunk's wanted lists (vertex, first and last edge), at most: one per
/// thread for reading, one for pricing.
const WANTED_BYTES: u64 = CHUNK as u64 * 24;
/// SC'12's threshold for going bottom-up (the value gapbs uses).
const ALPHA: u64 = 15;
/// What one more read request costs, in bytes read in sequence: the device
/// reads about 1 GB/s in sequence and 55 MB/s in random 4 KiB requests
/// (`outcore calibrate`), so a request costs about 64 KiB of streaming.
const REQUEST_BYTES: u64 = 64 << 10;

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

/// One direction's CSR lists: degrees, each chunk's first edge, the targets
/// and their page-group checksums.
struct Side {
    deg: Vec<u32>,
    base: Vec<u64>,
    targets: LayoutFile,
    sums: PageSums,
}

impl Side {
    /// Memory a side holds for `n` vertices and `sums` checksums.
    fn bytes(n: u64, sums: &PageSums) -> u64 {
        4 * n + (n.div_ceil(CHUNK as u64) + 1) * 8 + sums.bytes()
    }

    fn open(store: &Store, dir: &str, sums: PageSums) -> Result<Side> {
        let deg = store.degrees(dir)?;
        let targets = store.layout(&format!("csr.{dir}.targets"), FileKind::CsrTargets)?;
        let mut base = Vec::with_capacity(deg.len().div_ceil(CHUNK as usize) + 1);
        let mut at = 0u64;
        for (c, d) in deg.iter().enumerate() {
            if c % CHUNK as usize == 0 {
                base.push(at);
            }
            at += *d as u64;
        }
        base.push(at);
        if at != targets.header.count || at * 4 != sums.payload() {
            return Err(EngineError::Invalid(format!(
                "{}: the degrees (degrees.{dir}) add up to {at} edges, the file holds {}: the store is damaged",
                targets.file.path().display(),
                targets.header.count
            )));
        }
        Ok(Side {
            deg,
            base,
            targets,
            sums,
        })
    }

    /// Fills `wanted` with chunk `c`'s vertices that `want` picks and have
    /// edges, with their edge ranges.
    fn pick(&self, c: u32, want: impl Fn(u32) -> bool, wanted: &mut Vec<(u32, u64, u64)>) {
        let n = self.deg.len() as u32;
        let lo = c * CHUNK;
        let mut at = self.base[c as usize];
        wanted.clear();
        for v in lo..(lo + CHUNK).min(n) {
            let d = self.deg[v as usize] as u64;
            if d > 0 && want(v) {
                wanted.push((v, at, at + d));
            }
            at += d;
        }
    }

    /// The read request starting at `wanted[i]`: the entries it covers end
    /// at `j`, its edges at `end`. A list longer than [`WINDOW`] is a request
    /// of its own (read window by window).
    fn request(wanted: &[(u32, u64, u64)], i: usize) -> (usize, u64) {
        let (_, a0, mut end) = wanted[i];
        let mut j = i + 1;
        if end - a0 <= WINDOW {
            while j < wanted.len() && wanted[j].2 - a0 <= WINDOW && wanted[j].1 - end <= GAP {
                end = wanted[j].2;
                j += 1;
            }
        }
        (j, end)
    }

    /// What reading chunk `c`'s lists that `want` picks costs, in bytes read
    /// in sequence: each request [`REQUEST_BYTES`] plus its bytes, but no more
    /// than reading the chunk's span whole (the kernel's read-ahead turns
    /// dense requests into one sequential read).
    fn cost(&self, c: u32, want: impl Fn(u32) -> bool, wanted: &mut Vec<(u32, u64, u64)>) -> u64 {
        self.pick(c, want, wanted);
        let (Some(first), Some(last)) = (wanted.first(), wanted.last()) else {
            return 0;
        };
        let span = 4 * (last.2 - first.1);
        let mut requests = 0u64;
        let mut i = 0;
        while i < wanted.len() {
            let (j, end) = Self::request(wanted, i);
            requests += REQUEST_BYTES + 4 * (end - wanted[i].1);
            i = j;
        }
        requests.min(span)
    }

    /// Reads the lists of chunk `c`'s vertices that `want` picks and hands
    /// each to `visit`, which returns the edges it examined and whether it
    /// stopped (at a hit). Returns the edges examined.
    fn lists(
        &self,
        c: u32,
        want: impl Fn(u32) -> bool,
        buf: &mut Vec<u32>,
        wanted: &mut Vec<(u32, u64, u64)>,
        mut visit: impl FnMut(u32, &[u32]) -> (u64, bool),
    ) -> Result<u64> {
        self.pick(c, want, wanted);
        let mut edges = 0u64;
        let mut i = 0;
        while i < wanted.len() {
            let (v, a0, b0) = wanted[i];
            if b0 - a0 > WINDOW {
                // A long list alone, window by window, until it stops.
                let mut a = a0;
                while a < b0 {
                    let b = (a + WINDOW).min(b0);
                    let k = self.read(a, b, buf)?;
                    let (x, stop) = visit(v, &buf[k..k + (b - a) as usize]);
                    edges += x;
                    if stop {
                        break;
                    }
                    a = b;
                }
                i += 1;
                continue;
            }
            let (j, end) = Self::request(wanted, i);
            let k = self.read(a0, end, buf)?;
            for &(v, a, b) in &wanted[i..j] {
                let s = k + (a - a0) as usize;
                edges += visit(v, &buf[s..s + (b - a) as usize]).0;
            }
            i = j;
        }
        Ok(edges)
    }

    /// Edges `a..b` into `buf` (widened to whole checksum groups and
    /// checked); where edge `a` lies in `buf`.
    fn read(&self, a: u64, b: u64, buf: &mut Vec<u32>) -> Result<usize> {
        Ok(self.sums.read_checked(&self.targets, a * 4, b * 4, buf)?)
    }
}

/// A store's in-edges (and out-edges) and what deciding and running
/// bottom-up and sparse steps needs.
pub(crate) struct InEdges {
    inn: Side,
    /// The out-edge lists (`None`: the store is undirected, they are `inn`).
    out: Option<Side>,
    frontier: AtomicBitmap,
    /// Taken from the engine's budget.
    pub(crate) bytes: u64,
    mode: BottomUp,
    /// Whether the last iteration ran from the CSR (bottom-up or sparse).
    pulling: AtomicBool,
}

impl InEdges {
    /// The in-edges of the engine's store when `prog` can pull, the engine
    /// allows it, the store has them and the budget holds what a step needs;
    /// `None` otherwise (every iteration is then top-down).
    pub(crate) fn open<P: EdgeProgram>(
        e: &StreamEngine,
        prog: &P,
        settled: bool,
    ) -> Result<Option<InEdges>> {
        let mode = e.config().bottom_up;
        if mode == BottomUp::Never || !prog.pulls() || prog.weighted() || !settled {
            return Ok(None);
        }
        let store = e.store();
        let m = store.manifest();
        let dir = if m.in_edges {
            "in"
        } else if !m.directed && !m.reverse_marked {
            "out"
        } else {
            return Ok(None);
        };
        let n = e.vertices() as u64;
        let in_sums = PageSums::load(store, &format!("csr.{dir}.targets"))?;
        let out_sums = match dir {
            "in" => Some(PageSums::load(store, "csr.out.targets")?),
            _ => None,
        };
        let bytes = Side::bytes(n, &in_sums)
            + out_sums.as_ref().map_or(0, |s| Side::bytes(n, s))
            + n.div_ceil(64) * 8
            + e.threads() as u64 * (WINDOW * 4 + 2 * SUM_GROUP + 2 * WANTED_BYTES);
        if !e.budget().take(bytes) {
            return Ok(None);
        }
        let r = (|| {
            Ok(InEdges {
                inn: Side::open(store, dir, in_sums)?,
                out: match out_sums {
                    Some(s) => Some(Side::open(store, "out", s)?),
                    None => None,
                },
                frontier: AtomicBitmap::new(n as usize),
                bytes,
                mode,
                pulling: AtomicBool::new(false),
            })
        })();
        if r.is_err() {
            e.budget().give_back(bytes);
        }
        r.map(Some)
    }

    fn out(&self) -> &Side {
        self.out.as_ref().unwrap_or(&self.inn)
    }

    /// How iteration `done` (counted from 0) runs over the words `a`;
    /// `settled` holds the vertices whose word is final.
    pub(crate) fn choose<P: EdgeProgram, W: Word>(
        &self,
        e: &StreamEngine,
        prog: &P,
        a: &[W::Atomic],
        settled: &AtomicBitmap,
        done: u64,
    ) -> Step {
        match self.mode {
            BottomUp::Always => return Step::BottomUp,
            BottomUp::Sparse => return Step::Sparse,
            _ => {}
        }
        let n = e.vertices();
        let (out, inn) = (&self.out().deg, &self.inn.deg);
        let late = self.pulling.load(Relaxed);
        // How many active vertices are on the frontier: when few are, the grid
        // it is, without pricing anything (a road network's every iteration;
        // this walks the active vertices only).
        let on = e.pool().install(|| {
            (0..n.div_ceil(CHUNK))
                .into_par_iter()
                .map(|c| {
                    e.active_bitmap()
                        .ones_in(c * CHUNK..((c + 1) * CHUNK).min(n))
                        .filter(|&v| prog.pulls_from(W::load(&a[v as usize]), done))
                        .count() as u64
                })
                .sum::<u64>()
        });
        if 4 * on < e.active_count() {
            self.pulling.store(false, Relaxed);
            return Step::TopDown;
        }
        // Out-edges of the active vertices, how many are active, in-edges of
        // the vertices not final; once off the grid, what a bottom-up and a
        // sparse step would read.
        let (m_f, active, m_u, bottom_up, sparse) = e.pool().install(|| {
            (0..n.div_ceil(CHUNK))
                .into_par_iter()
                .map_init(Vec::new, |wanted, c| {
                    let (mut f, mut act, mut u) = (0u64, 0u64, 0u64);
                    for v in c * CHUNK..((c + 1) * CHUNK).min(n) {
                        if e.is_active(v) {
                            f += out[v as usize] as u64;
                            act += 1;
                        }
                        if !settled.get(v) {
                            u += inn[v as usize] as u64;
                        }
                    }
                    let (bu, sp) = if late {
                        (
                            self.inn.cost(c, |v| !settled.get(v), wanted),
                            self.out().cost(c, |v| e.is_active(v), wanted),
                        )
                    } else {
                        (0, 0)
                    };
                    (f, act, u, bu, sp)
                })
                .reduce(
                    || (0, 0, 0, 0, 0),
                    |x, y| (x.0 + y.0, x.1 + y.1, x.2 + y.2, x.3 + y.3, x.4 + y.4),
                )
        });
        debug_assert_eq!(active, e.active_count());
        let step = if late {
            // The cheapest in bytes read; a top-down pass also decodes every
            // block of its rows, so it counts a quarter more.
            let (_, grid) = e.active_rows();
            let grid = grid + grid / 4;
            if sparse < bottom_up.min(grid) {
                Step::Sparse
            } else if bottom_up <= grid {
                Step::BottomUp
            } else {
                Step::TopDown
            }
        } else if m_f * ALPHA > m_u {
            Step::BottomUp
        } else {
            Step::TopDown
        };
        self.pulling.store(step != Step::TopDown, Relaxed);
        step
    }

    /// Runs iteration `done` (counted from 0) as `step` (bottom-up or sparse)
    /// over the words `a`; `settled` holds the vertices whose word is final.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn step<P: EdgeProgram, W: Word>(
        &self,
        e: &mut StreamEngine,
        step: Step,
        prog: &P,
        a: &[W::Atomic],
        settled: &AtomicBitmap,
        done: u64,
        refused: &Refused,
    ) -> Result<()> {
        let n = e.vertices();
        let fr = &self.frontier;
        if step == Step::BottomUp {
            fr.clear_all();
            e.vmap(|v| {
                if prog.pulls_from(W::load(&a[v as usize]), done) {
                    fr.set(v);
                }
            });
        }
        let lower = |u: u32, v: u32, next: &AtomicBitmap| {
            let m = relax::message_of::<P, W>(prog, &a[u as usize]);
            if !relax::relax_into::<P, W>(prog, &a[v as usize], m, u, v, 1.0, |x| {
                next.set(x);
            }) {
                refused.record(u, v, 1.0);
            }
        };
        e.csr_iteration(step == Step::BottomUp, |eng, active, next| {
            eng.pool().install(|| {
                (0..n.div_ceil(CHUNK))
                    .into_par_iter()
                    .map_init(
                        || (Vec::new(), Vec::new()),
                        |(buf, wanted), c| match step {
                            Step::BottomUp => {
                                let lo = c * CHUNK;
                                for v in lo..(lo + CHUNK).min(n) {
                                    if active.get(v) && !fr.get(v) {
                                        next.set(v);
                                    }
                                }
                                let want = |v| !settled.get(v);
                                self.inn.lists(c, want, buf, wanted, |v, srcs| {
                                    for (k, &u) in srcs.iter().enumerate() {
                                        if fr.get(u) {
                                            lower(u, v, next);
                                            return (k as u64 + 1, true);
                                        }
                                    }
                                    (srcs.len() as u64, false)
                                })
                            }
                            _ => {
                                // Every active source pushes once: none stays
                                // active unless lowered.
                                let want = |u| active.get(u);
                                self.out().lists(c, want, buf, wanted, |u, dsts| {
                                    for &v in dsts {
                                        if !settled.get(v) {
                                            lower(u, v, next);
                                        }
                                    }
                                    (dsts.len() as u64, false)
                                })
                            }
                        },
                    )
                    .try_reduce(|| 0, |x, y| Ok(x + y))
            })
        })?;
        Ok(())
    }
}
