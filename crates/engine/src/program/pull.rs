//! Bottom-up iterations for settling relaxation programs on the streaming
//! engine: direction-optimizing BFS (Beamer, Asanović and Patterson, SC'12).
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
//!   lists are read in requests of at most [`WINDOW`] in-edges, a run of
//!   unwanted lists shorter than [`GAP`] read through rather than split, a
//!   longer list read window by window until its first frontier hit. Every read
//!   is checked against the page-group checksums (`csr.DIR.targets.sums`).
//! * **Activity.** The vertices a step lowers are the next iteration's sources;
//!   so are the active vertices not on the frontier (deeper candidates left by
//!   top-down re-entry, which still have to push when the next iteration is
//!   top-down). Frontier vertices are done: every vertex they could lower was
//!   examined.
//! * **When.** [`BottomUp::Auto`] turns to bottom-up as SC'12 does, when the
//!   active vertices' out-edges `m_f` exceed `m_u / ALPHA`, `m_u` the in-edges
//!   of the vertices not yet final — and only while at least a quarter of the
//!   active vertices are on the frontier: top-down iterations cross several
//!   levels by re-entry, and when they have run ahead of the iteration count
//!   (road networks: hundreds of levels in a hundred iterations, no active
//!   vertex on the frontier) a bottom-up step would settle a level long
//!   settled. Once bottom-up it stays so while `m_u` is at most twice the
//!   edges of the grid rows holding an active source, instead of SC'12's
//!   return to top-down on a small frontier: on the grid a small frontier
//!   spread over every row costs a whole pass, while the vertices not yet
//!   final, the only ones a bottom-up step reads, are few by then (Kronecker
//!   22, warm: the last levels took 0.14-0.15 s top-down, 0.02 s bottom-up).
//!   Only staying, never entering: a bottom-up step settles one level, and a
//!   road network's frontier, spread over its one or few grid rows, would
//!   keep it bottom-up for a thousand levels that re-entry crosses nine at a
//!   time (road-luxembourg: 1.02 s against 0.40 s).
//!
//! # Memory
//! Taken from the budget when the run starts, or no bottom-up step is run: the
//! in-degrees and out-degrees (4 + 4 bytes a vertex; one array on an undirected
//! store), the frontier bitmap (1 bit), each chunk's first in-edge (8 bytes per
//! 4096 vertices), the page-group checksums (4 bytes per 4 KiB of in-edges) and
//! one read buffer of [`WINDOW`] in-edges per thread.

use super::relax::{self, Refused, Word};
use super::EdgeProgram;
use crate::error::{EngineError, Result};
use crate::stream::{BottomUp, StreamEngine};
use outcore_state::AtomicBitmap;
use outcore_store::format::{FileKind, LayoutFile};
use outcore_store::pagesums::{PageSums, SUM_GROUP};
use rayon::prelude::*;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};

/// Vertices per task.
const CHUNK: u32 = 4096;
/// In-edges per read request (1 MiB).
const WINDOW: u64 = 1 << 18;
/// Unwanted in-edges between two wanted lists that are read through rather
/// than starting a new request (16 KiB).
const GAP: u64 = 1 << 12;
/// SC'12's threshold for going bottom-up (the value gapbs uses).
const ALPHA: u64 = 15;

/// A store's in-edges and what deciding and running bottom-up steps needs.
pub(crate) struct InEdges {
    indeg: Vec<u32>,
    /// Out-degrees (`None`: the store is undirected, they are `indeg`).
    outdeg: Option<Vec<u32>>,
    /// The first in-edge of each chunk, and the total at the end.
    base: Vec<u64>,
    targets: LayoutFile,
    sums: PageSums,
    frontier: AtomicBitmap,
    /// Taken from the engine's budget.
    pub(crate) bytes: u64,
    mode: BottomUp,
    /// Whether the last iteration ran bottom-up.
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
        let name = format!("csr.{dir}.targets");
        let sums = PageSums::load(store, &name)?;
        let chunks = n.div_ceil(CHUNK as u64);
        let degrees = if dir == "in" { 8 * n } else { 4 * n };
        let bytes = degrees
            + n.div_ceil(64) * 8
            + (chunks + 1) * 8
            + sums.bytes()
            + e.threads() as u64 * (WINDOW * 4 + 2 * SUM_GROUP);
        if !e.budget().take(bytes) {
            return Ok(None);
        }
        let r = (|| {
            let indeg = store.degrees(dir)?;
            let outdeg = if dir == "in" {
                Some(store.degrees("out")?)
            } else {
                None
            };
            let targets = store.layout(&name, FileKind::CsrTargets)?;
            let mut base = Vec::with_capacity(chunks as usize + 1);
            let mut at = 0u64;
            for (c, d) in indeg.iter().enumerate() {
                if c % CHUNK as usize == 0 {
                    base.push(at);
                }
                at += *d as u64;
            }
            base.push(at);
            if at != targets.header.count || at * 4 != sums.payload() {
                return Err(EngineError::Invalid(format!(
                    "{}: the in-degrees add up to {at} edges, the file holds {}: the store is damaged",
                    targets.file.path().display(),
                    targets.header.count
                )));
            }
            Ok(InEdges {
                indeg,
                outdeg,
                base,
                targets,
                sums,
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

    /// Whether iteration `done` (counted from 0) runs bottom-up over the words
    /// `a`; `settled` holds the vertices whose word is final.
    pub(crate) fn choose<P: EdgeProgram, W: Word>(
        &self,
        e: &StreamEngine,
        prog: &P,
        a: &[W::Atomic],
        settled: &AtomicBitmap,
        done: u64,
    ) -> bool {
        if self.mode == BottomUp::Always {
            return true;
        }
        let n = e.vertices();
        let out = self.outdeg.as_ref().unwrap_or(&self.indeg);
        // Out-edges of the active vertices, how many of those are on the
        // frontier, how many are active, in-edges of the vertices not final.
        let (m_f, on, active, m_u) = e.pool().install(|| {
            (0..n.div_ceil(CHUNK))
                .into_par_iter()
                .map(|c| {
                    let (mut f, mut on, mut act, mut u) = (0u64, 0u64, 0u64, 0u64);
                    for v in c * CHUNK..((c + 1) * CHUNK).min(n) {
                        if e.is_active(v) {
                            f += out[v as usize] as u64;
                            act += 1;
                            on += prog.pulls_from(W::load(&a[v as usize]), done) as u64;
                        }
                        if !settled.get(v) {
                            u += self.indeg[v as usize] as u64;
                        }
                    }
                    (f, on, act, u)
                })
                .reduce(
                    || (0, 0, 0, 0),
                    |x, y| (x.0 + y.0, x.1 + y.1, x.2 + y.2, x.3 + y.3),
                )
        });
        let pull = 4 * on >= active
            && (m_f * ALPHA > m_u || self.pulling.load(Relaxed) && m_u <= 2 * e.active_row_edges());
        self.pulling.store(pull, Relaxed);
        pull
    }

    /// One bottom-up iteration, the `done`-th (counted from 0), over the words
    /// `a`; `settled` holds the vertices whose word is final.
    pub(crate) fn step<P: EdgeProgram, W: Word>(
        &self,
        e: &mut StreamEngine,
        prog: &P,
        a: &[W::Atomic],
        settled: &AtomicBitmap,
        done: u64,
        refused: &Refused,
    ) -> Result<()> {
        let fr = &self.frontier;
        fr.clear_all();
        e.vmap(|v| {
            if prog.pulls_from(W::load(&a[v as usize]), done) {
                fr.set(v);
            }
        });
        let n = e.vertices();
        e.pull_iteration(|eng, active, next| {
            eng.pool().install(|| {
                (0..n.div_ceil(CHUNK))
                    .into_par_iter()
                    .map_init(
                        || (Vec::new(), Vec::new()),
                        |(buf, wanted), c| {
                            let lo = c * CHUNK;
                            let hi = (lo + CHUNK).min(n);
                            for v in lo..hi {
                                if active.get(v) && !fr.get(v) {
                                    next.set(v);
                                }
                            }
                            let visit = |v: u32, srcs: &[u32]| -> (u64, bool) {
                                for (k, &u) in srcs.iter().enumerate() {
                                    if fr.get(u) {
                                        let m = relax::message_of::<P, W>(prog, &a[u as usize]);
                                        let x = &a[v as usize];
                                        if !relax::relax_into::<P, W>(prog, x, m, u, v, 1.0, |x| {
                                            next.set(x);
                                        }) {
                                            refused.record(u, v, 1.0);
                                        }
                                        return (k as u64 + 1, true);
                                    }
                                }
                                (srcs.len() as u64, false)
                            };
                            self.chunk(c, settled, buf, wanted, visit)
                        },
                    )
                    .try_reduce(|| 0, |x, y| Ok(x + y))
            })
        })?;
        Ok(())
    }

    /// Reads the in-edges of chunk `c`'s vertices that are not settled and
    /// hands each list to `visit`, which returns the in-edges it examined and
    /// whether it stopped at a hit. Returns the in-edges examined.
    fn chunk(
        &self,
        c: u32,
        settled: &AtomicBitmap,
        buf: &mut Vec<u32>,
        wanted: &mut Vec<(u32, u64, u64)>,
        visit: impl Fn(u32, &[u32]) -> (u64, bool),
    ) -> Result<u64> {
        let n = self.indeg.len() as u32;
        let lo = c * CHUNK;
        let mut at = self.base[c as usize];
        wanted.clear();
        for v in lo..(lo + CHUNK).min(n) {
            let d = self.indeg[v as usize] as u64;
            if d > 0 && !settled.get(v) {
                wanted.push((v, at, at + d));
            }
            at += d;
        }
        let mut edges = 0u64;
        let mut i = 0;
        while i < wanted.len() {
            let (v, a0, b0) = wanted[i];
            if b0 - a0 > WINDOW {
                // A long list alone, window by window, until its first hit.
                let mut a = a0;
                while a < b0 {
                    let b = (a + WINDOW).min(b0);
                    let k = self.read(a, b, buf)?;
                    let (x, hit) = visit(v, &buf[k..k + (b - a) as usize]);
                    edges += x;
                    if hit {
                        break;
                    }
                    a = b;
                }
                i += 1;
                continue;
            }
            let mut j = i + 1;
            let mut end = b0;
            while j < wanted.len() && wanted[j].2 - a0 <= WINDOW && wanted[j].1 - end <= GAP {
                end = wanted[j].2;
                j += 1;
            }
            let k = self.read(a0, end, buf)?;
            for &(v, a, b) in &wanted[i..j] {
                let s = k + (a - a0) as usize;
                edges += visit(v, &buf[s..s + (b - a) as usize]).0;
            }
            i = j;
        }
        Ok(edges)
    }

    /// In-edges `a..b` into `buf` (widened to whole checksum groups and
    /// checked); where edge `a` lies in `buf`.
    fn read(&self, a: u64, b: u64, buf: &mut Vec<u32>) -> Result<usize> {
        Ok(self.sums.read_checked(&self.targets, a * 4, b * 4, buf)?)
    }
}
