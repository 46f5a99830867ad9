//! One direction's CSR lists read chunk by chunk, for bottom-up and sparse
//! steps (`pull.rs`): which vertices' lists a step wants, what reading them
//! costs (requests and gaps read through), hints to the kernel, and the reads
//! themselves, each checked against the lists' page-group checksums.
//!
//! A side may instead read its lists in place (`Side::open`'s `map`): when
//! the page cache holds at least [`MAP_CACHED`] of them, the files are mapped
//! and each page group checked the first time a read touches it
//! ([`CheckedMap`]); reads are then slices of the mapping, never copies, and
//! nothing is hinted. The callers ask for it only where lists are read again
//! and again (sssp's sparse steps): a first touch of a mapped page costs more
//! than a copy, so lists read about once (bfs, wcc) are copied.

use crate::error::{EngineError, Result};
use crate::stream::StreamConfig;
use outcore_state::AtomicBitmap;
use outcore_store::checked_map::CheckedMap;
use outcore_store::format::{FileKind, LayoutFile};
use outcore_store::pagesums::PageSums;
use outcore_store::{Mapped, Store};
use std::ops::Range;

/// Vertices per task.
pub(crate) const CHUNK: u32 = 4096;

/// Chunks a task reads in turn (the unit spread over the pool).
pub(super) const TASK: u32 = 16;
/// Chunks of a task whose reads are hinted to the kernel while an earlier one
/// is read ([`Side::hint`]).
pub(super) const AHEAD: u32 = 4;
/// A chunk's wanted lists (vertex, first and last edge), at most: per
/// thread [`AHEAD`] + 1 for reading, one for pricing.
pub(super) const WANTED_BYTES: u64 = CHUNK as u64 * 24;

/// Edges per read request (1 MiB).
pub(super) const WINDOW: u64 = 1 << 18;
/// Unwanted edges between two wanted lists that are read through rather than
/// starting a new request (16 KiB).
pub(super) const GAP: u64 = 1 << 12;
/// Bytes hinted per chunk, at most.
pub(super) const HINT_BYTES: u64 = 2 << 20;
/// What one more read request costs, in bytes read in sequence: the device
/// reads about 1 GB/s in sequence and 55 MB/s in random 4 KiB requests
/// (`outcore calibrate`), so a request costs about 64 KiB of streaming.
pub(super) const REQUEST_BYTES: u64 = 64 << 10;

/// Which vertices' lists a step reads: those set in a bitmap (the active
/// ones), or those clear in it (the ones not settled).
#[derive(Clone, Copy)]
pub(super) enum Want<'a> {
    Set(&'a AtomicBitmap),
    Clear(&'a AtomicBitmap),
}

impl<'a> Want<'a> {
    /// The vertices in `r` it picks, ascending, a bitmap word at a time.
    pub(super) fn vertices(self, r: Range<u32>) -> impl Iterator<Item = u32> + 'a {
        let (b, set) = match self {
            Want::Set(b) => (b, true),
            Want::Clear(b) => (b, false),
        };
        b.bits_in(r, set)
    }
}

/// The vertices of chunk `c` of `n`.
pub(crate) fn chunk_range(c: u32, n: u32) -> Range<u32> {
    c * CHUNK..((c + 1) * CHUNK).min(n)
}

/// One direction's CSR lists: degrees, each chunk's first edge, the targets
/// and their page-group checksums, and for a weighted program the weights
/// and theirs.
pub(super) struct Side {
    pub(super) deg: Mapped<u32>,
    pub(super) base: Vec<u64>,
    pub(super) targets: LayoutFile,
    pub(super) sums: PageSums,
    pub(super) weights: Option<(LayoutFile, PageSums)>,
    /// The lists mapped in place (targets, and weights), when the page
    /// cache held them as the run opened them: read without a copy, each
    /// page group checked once ([`CheckedMap`]).
    inplace: Option<(CheckedMap, Option<CheckedMap>)>,
}

/// The share of a side's lists the page cache must hold for it to read
/// them in place rather than copy them out.
const MAP_CACHED: f64 = 0.9;

/// A thread's read buffers: targets, and weights when the lists carry them.
#[derive(Default)]
pub(super) struct Bufs {
    pub(super) targets: Vec<u32>,
    pub(super) weights: Vec<f32>,
}

impl Side {
    /// Memory a side holds for `n` vertices and `sums` checksums (and
    /// `wsums` for the weights).
    pub(super) fn bytes(n: u64, sums: &PageSums, wsums: Option<&PageSums>) -> u64 {
        let sums = sums.bytes() + wsums.map_or(0, |w| w.bytes());
        // The checked bits of the lists read in place: 1 a group, 32 a sum.
        4 * n + (n.div_ceil(CHUNK as u64) + 1) * 8 + sums + sums.div_ceil(32) + 16
    }

    /// Whether a run with `cfg` may read lists in place: not with
    /// `--read-every-pass` (`hold_grid` off) nor `--direct` (the user asked
    /// to bypass the page cache).
    pub(super) fn may_map(cfg: &StreamConfig) -> bool {
        cfg.hold_grid && !cfg.direct_io
    }

    /// The share of the lists (targets, and weights) the page cache holds.
    pub(super) fn cached_fraction(&self) -> f64 {
        match &self.weights {
            Some((w, _)) => (self.targets.cached_fraction() + w.cached_fraction()) / 2.0,
            None => self.targets.cached_fraction(),
        }
    }

    /// Bytes an edge takes in the lists read: its target, and its weight.
    pub(super) fn edge_bytes(&self) -> u64 {
        if self.weights.is_some() {
            8
        } else {
            4
        }
    }

    /// Opens direction `dir`'s lists; `map` lets it read them in place
    /// when the page cache holds them ([`MAP_CACHED`]).
    pub(super) fn open(
        store: &Store,
        dir: &str,
        sums: PageSums,
        wsums: Option<PageSums>,
        map: bool,
    ) -> Result<Side> {
        let deg = store.degrees_mapped(dir)?;
        let targets = store.layout(&format!("csr.{dir}.targets"), FileKind::CsrTargets)?;
        let mut base = Vec::with_capacity(deg.len().div_ceil(CHUNK as usize) + 1);
        let mut at = 0u64;
        for c in deg.chunks(CHUNK as usize) {
            base.push(at);
            at += c.iter().map(|&d| d as u64).sum::<u64>();
        }
        base.push(at);
        if at != targets.header.count || at * 4 != sums.payload() {
            return Err(EngineError::Invalid(format!(
                "{}: the degrees (degrees.{dir}) add up to {at} edges, the file holds {}: the store is damaged",
                targets.file.path().display(),
                targets.header.count
            )));
        }
        let weights = match wsums {
            Some(ws) => {
                let w = store.layout(&format!("csr.{dir}.weights"), FileKind::CsrWeights)?;
                if w.header.count != at || ws.payload() != at * 4 {
                    return Err(EngineError::Invalid(format!(
                        "{}: holds {} weights for {at} edges: the store is damaged",
                        w.file.path().display(),
                        w.header.count
                    )));
                }
                Some((w, ws))
            }
            None => None,
        };
        let mut side = Side {
            deg,
            base,
            targets,
            sums,
            weights,
            inplace: None,
        };
        if map && side.cached_fraction() >= MAP_CACHED {
            let stats = store.stats().clone();
            let t = CheckedMap::open(&side.targets, &side.sums, stats.clone())?;
            let w = match &side.weights {
                Some((w, ws)) => Some(CheckedMap::open(w, ws, stats)?),
                None => None,
            };
            side.inplace = Some((t, w));
        }
        Ok(side)
    }

    /// Fills `wanted` with chunk `c`'s vertices that `want` picks and have
    /// edges, with their edge ranges: the picked vertices taken a bitmap word
    /// at a time, the degrees between them summed (a chunk with none picked
    /// costs its bitmap words).
    pub(super) fn pick(&self, c: u32, want: Want<'_>, wanted: &mut Vec<(u32, u64, u64)>) {
        let r = chunk_range(c, self.deg.len() as u32);
        let (mut at, mut from) = (self.base[c as usize], r.start);
        wanted.clear();
        let mut take = |v: u32| {
            at += self.deg[from as usize..v as usize]
                .iter()
                .map(|&d| d as u64)
                .sum::<u64>();
            let d = self.deg[v as usize] as u64;
            if d > 0 {
                wanted.push((v, at, at + d));
            }
            at += d;
            from = v + 1;
        };
        want.vertices(r).for_each(&mut take);
    }

    /// Fills `wanted` with every vertex of chunk `c` that has edges, with
    /// its edge range (a chunk read whole).
    pub(super) fn pick_all(&self, c: u32, wanted: &mut Vec<(u32, u64, u64)>) {
        let mut at = self.base[c as usize];
        wanted.clear();
        for v in chunk_range(c, self.deg.len() as u32) {
            let d = self.deg[v as usize] as u64;
            if d > 0 {
                wanted.push((v, at, at + d));
            }
            at += d;
        }
    }

    /// Whether reading `wanted` (a chunk's pick) reads at least half of the
    /// chunk's edges, gaps read through included.
    pub(super) fn dense(&self, c: u32, wanted: &[(u32, u64, u64)]) -> bool {
        let span = self.base[c as usize + 1] - self.base[c as usize];
        let (mut read, mut i) = (0, 0);
        while i < wanted.len() {
            let (j, end) = Self::request(wanted, i);
            read += end - wanted[i].1;
            i = j;
        }
        2 * read >= span
    }

    /// The edges of every list.
    pub(super) fn edges(&self) -> u64 {
        self.base.last().copied().unwrap_or(0)
    }

    /// The degrees of the vertices `want` picks in chunk `c`, summed: over
    /// the picked vertices, or when they are most of the chunk, the chunk's
    /// edges less the degrees of the others (a bottom-up step's vertices not
    /// settled are nearly every vertex at first, its active ones rarely).
    pub(super) fn degrees(&self, c: u32, want: Want<'_>) -> u64 {
        let r = chunk_range(c, self.deg.len() as u32);
        let (b, set) = match want {
            Want::Set(b) => (b, true),
            Want::Clear(b) => (b, false),
        };
        let ones = b.count_in(r.clone());
        let picked = if set { ones } else { r.len() as u64 - ones };
        let sum = |set| {
            b.bits_in(r.clone(), set)
                .map(|v| self.deg[v as usize] as u64)
                .sum::<u64>()
        };
        if 2 * picked <= r.len() as u64 {
            sum(set)
        } else {
            self.base[c as usize + 1] - self.base[c as usize] - sum(!set)
        }
    }

    /// The read request starting at `wanted[i]`: the entries it covers end
    /// at `j`, its edges at `end`. A list longer than [`WINDOW`] is a request
    /// of its own (read window by window).
    pub(super) fn request(wanted: &[(u32, u64, u64)], i: usize) -> (usize, u64) {
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
    pub(super) fn cost(&self, c: u32, want: Want<'_>, wanted: &mut Vec<(u32, u64, u64)>) -> u64 {
        self.pick(c, want, wanted);
        let (Some(first), Some(last)) = (wanted.first(), wanted.last()) else {
            return 0;
        };
        // Each file read (targets, and weights) is a request of its own.
        let (eb, files) = (self.edge_bytes(), self.edge_bytes() / 4);
        let span = eb * (last.2 - first.1);
        let mut requests = 0u64;
        let mut i = 0;
        while i < wanted.len() {
            let (j, end) = Self::request(wanted, i);
            requests += files * REQUEST_BYTES + eb * (end - wanted[i].1);
            i = j;
        }
        requests.min(span)
    }

    /// Asks the kernel to start reading what [`Side::lists`] will read of
    /// `wanted` (a chunk's pick), without waiting: its requests (a long
    /// list's first window), at most [`HINT_BYTES`] a chunk. A thread's reads
    /// are synchronous, one request at a time; hinting the next chunks' while
    /// it reads one keeps several in flight (a no-op with `--direct`). A
    /// request that starts within [`GAP`] edges of where the last one of the
    /// task ended (`end`, in edges) is not hinted: the kernel's own read-ahead
    /// follows a sequential read better than hints do.
    pub(super) fn hint(&self, wanted: &[(u32, u64, u64)], end: &mut u64) {
        if self.inplace.is_some() {
            return;
        }
        let (mut i, mut hinted) = (0, 0);
        while i < wanted.len() && hinted < HINT_BYTES {
            let (j, z) = Self::request(wanted, i);
            let a = wanted[i].1;
            if a > *end + GAP || a < *end {
                let (lo, hi) = self.sums.span(4 * a, 4 * z.min(a + WINDOW));
                self.targets.will_need(lo, hi - lo);
                if let Some((w, ws)) = &self.weights {
                    let (lo, hi) = ws.span(4 * a, 4 * z.min(a + WINDOW));
                    w.will_need(lo, hi - lo);
                }
                hinted += hi - lo;
            }
            *end = z;
            i = j;
        }
    }

    /// Reads the lists `wanted` (a chunk's pick) and hands each to `visit`
    /// with its weights (empty when the side has none), which returns the
    /// edges it examined and whether it stopped (at a hit). Returns the edges
    /// examined.
    pub(super) fn lists(
        &self,
        wanted: &[(u32, u64, u64)],
        buf: &mut Bufs,
        mut visit: impl FnMut(u32, &[u32], &[f32]) -> (u64, bool),
    ) -> Result<u64> {
        let mut edges = 0u64;
        if let Some((t, w)) = &self.inplace {
            // In place: each list (a long one window by window, until it
            // stops), its page groups checked on first touch.
            for &(v, a0, b0) in wanted {
                let mut a = a0;
                while a < b0 {
                    let b = (a + WINDOW).min(b0);
                    let targets = t.get::<u32>(&self.sums, 4 * a, 4 * b)?;
                    let ws = match (w, &self.weights) {
                        (Some(w), Some((_, ws))) => w.get::<f32>(ws, 4 * a, 4 * b)?,
                        _ => &[][..],
                    };
                    let (x, stop) = visit(v, targets, ws);
                    edges += x;
                    if stop {
                        break;
                    }
                    a = b;
                }
            }
            return Ok(edges);
        }
        let mut i = 0;
        while i < wanted.len() {
            let (v, a0, b0) = wanted[i];
            if b0 - a0 > WINDOW {
                // A long list alone, window by window, until it stops.
                let mut a = a0;
                while a < b0 {
                    let b = (a + WINDOW).min(b0);
                    let (k, kw) = self.read(a, b, buf)?;
                    let len = (b - a) as usize;
                    let ws = kw.map_or(&[][..], |kw| &buf.weights[kw..kw + len]);
                    let (x, stop) = visit(v, &buf.targets[k..k + len], ws);
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
            let (k, kw) = self.read(a0, end, buf)?;
            for &(v, a, b) in &wanted[i..j] {
                let (s, len) = ((a - a0) as usize, (b - a) as usize);
                let ws = kw.map_or(&[][..], |kw| &buf.weights[kw + s..kw + s + len]);
                edges += visit(v, &buf.targets[k + s..k + s + len], ws).0;
            }
            i = j;
        }
        Ok(edges)
    }

    /// Edges `a..b` into `buf` (widened to whole checksum groups and
    /// checked); where edge `a` lies in its targets and in its weights.
    pub(super) fn read(&self, a: u64, b: u64, buf: &mut Bufs) -> Result<(usize, Option<usize>)> {
        let k = self
            .sums
            .read_checked(&self.targets, a * 4, b * 4, &mut buf.targets)?;
        let kw = match &self.weights {
            Some((w, ws)) => Some(ws.read_checked(w, a * 4, b * 4, &mut buf.weights)?),
            None => None,
        };
        Ok((k, kw))
    }
}
