//! The vertex-centric semi-external engine for BFS-like algorithms (BAsC + Norder,
//! ATC'19 §2.1, §3, §5).
//!
//! Vertex values live in memory (the algorithms own them); out-edge lists are read
//! from the store's CSR (`csr.out.targets`, `csr.out.weights`, optionally the
//! in-edge CSR) **by page**. Per iteration the caller passes a [`Frontier`] (the
//! active vertices, sparse list or dense bitmap as its size suggests) and an edge
//! function; the engine walks the active vertices in ascending id order, which is
//! ascending CSR order, and serves each edge list from
//!
//! 1. the **static cache** (BAsC, §3): the edge lists of pre-selected vertices,
//!    loaded once before the run and never replaced; or
//! 2. the **page cache**: an engine-managed set of page frames with CLOCK
//!    replacement; or
//! 3. **disk**: runs of adjacent missing pages are merged into one request (up to
//!    `max_request` bytes), issued with O_DIRECT to a pool of I/O threads that keep
//!    up to `queue_depth` requests in flight while the compute thread serves hits
//!    and finished requests (I/O overlaps compute).
//!
//! An edge list that spans several pages is handed to the edge function one page
//! segment at a time, so no list has to fit in the cache and no frame is pinned;
//! each page is dispatched once per iteration (pages are visited in ascending
//! order). Weighted stores keep a page of weights beside each page of targets in
//! the same frame (a frame is `page_size` or `2 x page_size` bytes).
//!
//! Every byte read from the CSR is checked against the store's page-group
//! checksums ([`outcore_store::pagesums`]) on the I/O thread that read it: reads
//! are widened to whole 4 KiB groups (only pages under 4 KiB need it), so a damaged
//! page stops the run by name instead of giving a wrong answer.
//!
//! Invariants: every active vertex's edges are delivered exactly once per call;
//! the answer does not depend on page size, cache sizes, selection or queue depth
//! (only the I/O does). Statistics follow §5.1: pages read, requests, page cache
//! and static cache hit ratios, and page utilization (the fraction of 64-byte
//! units of a page touched while it was cached, averaged over pages evicted and
//! still resident at the end).

use crate::{EngineError, Result};
use outcore_io::{AlignedBuf, InFile};
use outcore_store::format::{FileKind, LayoutFile, HEADER_LEN};
use outcore_store::pagesums::{PageSums, SUM_GROUP};
use outcore_store::Store;
use serde::Serialize;
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::{Arc, Mutex};
use std::time::Instant;

mod frontier;
pub use frontier::*;
mod cache;
use cache::*;
#[cfg(test)]
mod tests;

/// Settings of a [`VertexEngine`].
#[derive(Debug, Clone)]
pub struct VertexConfig {
    /// Page size in bytes: a power of two from 512 B to 1 MiB (8 KiB in the paper).
    pub page_size: usize,
    /// Bytes of page frames.
    pub page_cache: u64,
    /// Bytes of the static cache (edge lists of the selected vertices).
    pub static_cache: u64,
    /// Vertices to hold in the static cache, most wanted first; the longest prefix
    /// whose edge lists fit in `static_cache` is loaded.
    pub selection: Vec<u32>,
    /// The store file holding the selection's edge lists packed in ascending vertex
    /// id (`basc.<policy>.lists`, saved by `select-cache`): when the static cache holds
    /// the whole selection it is loaded from there in one sequential, checksummed
    /// read instead of from the CSR.
    pub selection_lists: Option<String>,
    /// Largest merged request in bytes (at least one page).
    pub max_request: usize,
    /// Requests in flight (I/O threads).
    pub queue_depth: usize,
    /// Read with O_DIRECT (falls back to buffered reads where refused).
    pub direct: bool,
    /// Read the weights beside the targets.
    pub weights: bool,
    /// Also open the in-edge CSR (direction 1).
    pub in_edges: bool,
}

impl Default for VertexConfig {
    fn default() -> Self {
        VertexConfig {
            page_size: 8192,
            page_cache: 64 << 20,
            static_cache: 0,
            selection: Vec::new(),
            selection_lists: None,
            max_request: 128 << 10,
            queue_depth: 16,
            direct: true,
            weights: false,
            in_edges: false,
        }
    }
}

/// Direction of edge lists: out-edges or in-edges.
pub const OUT: usize = 0;
pub const IN: usize = 1;

/// What a run cost; see the module docs.
#[derive(Debug, Clone, Default, Serialize)]
pub struct VertexStats {
    pub iterations: u64,
    /// Edge lists asked for (active vertex x direction, degree > 0).
    pub edge_lists: u64,
    /// Of those, served by the static cache.
    pub static_hits: u64,
    pub edges_processed: u64,
    /// Page lookups in the page cache and their hits.
    pub page_lookups: u64,
    pub page_hits: u64,
    /// Pages read from disk (a weighted page counts targets and weights once each).
    pub pages_read: u64,
    pub requests: u64,
    pub bytes_read: u64,
    /// Mean fraction of 64-byte units touched per page while cached (§5.1).
    pub page_utilization: f64,
    pub utilization_pages: u64,
    pub frames: u64,
    pub page_size: u64,
    pub static_vertices: u64,
    pub static_edges: u64,
    pub static_bytes: u64,
    pub static_load_seconds: f64,
    pub static_load_bytes: u64,
    /// Seconds the compute thread waited for reads, and the rest of the run.
    pub io_wait_seconds: f64,
    pub compute_seconds: f64,
    pub direct: bool,
    /// Bytes checked against the CSR's page-group checksums (every byte read,
    /// reads widened to whole 4 KiB groups), and the seconds the I/O threads
    /// spent checking them (summed over threads; static-cache loads included).
    pub checked_bytes: u64,
    pub checksum_seconds: f64,
}

impl VertexStats {
    pub fn page_hit_ratio(&self) -> f64 {
        ratio(self.page_hits, self.page_lookups)
    }
    pub fn static_hit_ratio(&self) -> f64 {
        ratio(self.static_hits, self.edge_lists)
    }
}

fn ratio(a: u64, b: u64) -> f64 {
    if b == 0 {
        0.0
    } else {
        a as f64 / b as f64
    }
}

/// Fails when a target read from `file` at payload byte `at` is not a vertex.
fn check_targets(t: &[u32], n: usize, file: &InFile, at: u64) -> Result<()> {
    match t.iter().position(|&v| v as usize >= n) {
        None => Ok(()),
        Some(k) => Err(EngineError::Invalid(format!(
            "{}: damaged: edge target {} at payload byte {} is not one of the {n} vertices (`outcore info` checks every checksum)",
            file.path().display(),
            t[k],
            at + 4 * k as u64
        ))),
    }
}

/// Bytes of one request buffer (per file read; `queue depth` of them are kept):
/// the largest merged request of `page_size` pages, widened to whole checksum
/// groups when pages are smaller than a group.
pub fn request_buffer_bytes(page_size: usize, max_request: usize) -> usize {
    let widen = if (page_size as u64) < SUM_GROUP {
        2 * SUM_GROUP as usize
    } else {
        0
    };
    (max_request / page_size).max(1) * page_size + widen
}

/// Reads payload bytes `lo..hi` of `f` (`len` bytes asked, whole pages) into
/// `buf` and checks them against `sums`: the bytes checked and the seconds taken.
fn read_checked(
    f: &InFile,
    buf: &mut AlignedBuf,
    sums: &PageSums,
    lo: u64,
    hi: u64,
    len: usize,
) -> Result<(u64, f64)> {
    let got = f.read_direct(HEADER_LEN + lo, &mut buf.as_mut_slice()[..len])?;
    let want = (hi - lo) as usize;
    if got < want {
        return Err(EngineError::Invalid(format!(
            "{}: short read: {got} of {want} bytes at payload byte {lo}",
            f.path().display()
        )));
    }
    let t = Instant::now();
    let n = sums.check(lo, &buf.as_slice()[..want])?;
    Ok((n, t.elapsed().as_secs_f64()))
}

/// Sets the bits of the 64-byte units overlapping bytes `a..b`.
fn mark(bits: &mut [u64], a: usize, b: usize) {
    if a >= b {
        return;
    }
    for unit in a / 64..=(b - 1) / 64 {
        bits[unit / 64] |= 1u64 << (unit % 64);
    }
}

/// One CSR direction: offsets in memory, targets (and weights) on disk.
struct Side {
    offsets: Vec<u64>,
    targets: Arc<InFile>,
    weights: Option<Arc<InFile>>,
    /// Page-group checksums of the targets (and weights), checked on every read.
    sums: Arc<(PageSums, Option<PageSums>)>,
    /// Payload bytes of the targets file (the last page may be short).
    payload: u64,
}

/// The static cache: edge lists of selected vertices, in memory for the whole run.
#[derive(Default)]
struct StaticCache {
    /// Per vertex: index into `offs` (u32::MAX: not cached).
    slot: Vec<u32>,
    offs: Vec<u64>,
    targets: Vec<u32>,
    weights: Vec<f32>,
}

/// A read: `npages` pages from `first` of direction `dir`, and the segments of
/// active edge lists it serves (`(u, a, b)` in edge indices).
struct Request {
    dir: usize,
    first: u64,
    npages: u64,
    segs: Vec<(u32, u64, u64)>,
    tbuf: AlignedBuf,
    wbuf: Option<AlignedBuf>,
    /// Where the request's first page starts in the buffers: reads are widened
    /// to whole checksum groups, so with pages under 4 KiB this may be non-zero.
    skew: usize,
    /// Bytes checked against the page-group checksums, and the time it took.
    checked: u64,
    check_seconds: f64,
    result: std::result::Result<(), EngineError>,
}

/// A progress callback: statistics so far, active vertices of the iteration.
pub type ProgressFn = Box<dyn FnMut(&VertexStats, usize) + Send>;

/// The vertex-centric engine; see the module docs.
pub struct VertexEngine {
    cfg: VertexConfig,
    n: usize,
    sides: Vec<Side>,
    cache: PageCache,
    stat: StaticCache,
    stats: VertexStats,
    submit: Option<Sender<Request>>,
    done: Receiver<Request>,
    workers: Vec<std::thread::JoinHandle<()>>,
    spare: Vec<(AlignedBuf, Option<AlignedBuf>)>,
    in_flight: usize,
    weighted: bool,
    progress: Option<ProgressFn>,
    /// Iterations of the last edge program run ([`crate::ProgramRunner`]).
    pub(crate) program_iterations: u64,
}

impl VertexEngine {
    /// Opens the CSR of `store`, loads the static cache and starts the I/O threads.
    pub fn new(store: &Store, cfg: VertexConfig) -> Result<VertexEngine> {
        let p = cfg.page_size;
        if !p.is_power_of_two() || !(512..=1 << 20).contains(&p) {
            return Err(EngineError::Invalid(format!(
                "page size {p}: must be a power of two from 512 B to 1 MiB"
            )));
        }
        if cfg.queue_depth == 0 || cfg.queue_depth > 256 {
            return Err(EngineError::Invalid(format!(
                "queue depth {}: must be from 1 to 256",
                cfg.queue_depth
            )));
        }
        let weighted = cfg.weights;
        if weighted && !store.weighted() {
            return Err(EngineError::Invalid(format!(
                "{} has no weights",
                store.dir().display()
            )));
        }
        let n = store.vertices() as usize;
        let mode = if cfg.direct {
            outcore_io::ReadMode::Direct
        } else {
            outcore_io::ReadMode::Buffered
        };
        let mut dirs = vec!["out"];
        if cfg.in_edges {
            if !store.manifest().in_edges {
                return Err(EngineError::Invalid(format!(
                    "{}: the store has no in-edge CSR; ingest with --in-edges (or --undirected)",
                    store.dir().display()
                )));
            }
            dirs.push("in");
        }
        let mut sides = Vec::new();
        let mut direct = true;
        for d in dirs {
            // `csr` checks the offsets against the targets' count.
            let offsets = store.csr(d)?.into_offsets();
            let open = |name: &str, kind| -> Result<Arc<InFile>> {
                let lf = store.layout_with(name, kind, mode, store.stats().clone())?;
                Ok(Arc::new(lf.file))
            };
            let targets = open(&format!("csr.{d}.targets"), FileKind::CsrTargets)?;
            let weights = if weighted {
                Some(open(&format!("csr.{d}.weights"), FileKind::CsrWeights)?)
            } else {
                None
            };
            direct &= targets.is_direct();
            let payload = targets.len() - HEADER_LEN;
            let tsums = PageSums::load(store, &format!("csr.{d}.targets"))?;
            let wsums = match weighted {
                true => Some(PageSums::load(store, &format!("csr.{d}.weights"))?),
                false => None,
            };
            sides.push(Side {
                offsets,
                targets,
                weights,
                sums: Arc::new((tsums, wsums)),
                payload,
            });
        }
        let frame_bytes = if weighted { 2 * p } else { p };
        let frames = (cfg.page_cache / frame_bytes as u64) as usize;
        let (submit, jobs) = channel::<Request>();
        let (finished, done) = channel::<Request>();
        let jobs = Arc::new(Mutex::new(jobs));
        let mut workers = Vec::new();
        for i in 0..cfg.queue_depth {
            let jobs = jobs.clone();
            let finished = finished.clone();
            type Files = (
                Arc<InFile>,
                Option<Arc<InFile>>,
                Arc<(PageSums, Option<PageSums>)>,
            );
            let files: Vec<Files> = sides
                .iter()
                .map(|s| (s.targets.clone(), s.weights.clone(), s.sums.clone()))
                .collect();
            let h = std::thread::Builder::new()
                .name(format!("outcore-vio-{i}"))
                .spawn(move || loop {
                    let job = jobs.lock().map(|r| r.recv());
                    let Ok(Ok(mut r)) = job else { return };
                    let (t, w, sums) = &files[r.dir];
                    let a = r.first * p as u64;
                    let (lo, hi) = sums.0.span(a, a + r.npages * p as u64);
                    r.skew = (a - lo) as usize;
                    // O_DIRECT wants whole pages: read up to the next one; only
                    // `lo..hi` (the payload) comes back at the end of the file.
                    let len = (hi - lo).next_multiple_of(p as u64) as usize;
                    r.result = read_checked(t, &mut r.tbuf, &sums.0, lo, hi, len).map(|(n, s)| {
                        r.checked += n;
                        r.check_seconds += s;
                    });
                    if let (Ok(()), Some(w), Some(wb), Some(ws)) =
                        (&r.result, w, r.wbuf.as_mut(), sums.1.as_ref())
                    {
                        r.result = read_checked(w, wb, ws, lo, hi, len).map(|(n, s)| {
                            r.checked += n;
                            r.check_seconds += s;
                        });
                    }
                    if finished.send(r).is_err() {
                        return;
                    }
                })
                .map_err(|e| EngineError::Invalid(format!("cannot start an I/O thread: {e}")))?;
            workers.push(h);
        }
        let buf_bytes = request_buffer_bytes(p, cfg.max_request);
        let spare = (0..cfg.queue_depth)
            .map(|_| {
                (
                    AlignedBuf::new(buf_bytes),
                    weighted.then(|| AlignedBuf::new(buf_bytes)),
                )
            })
            .collect();
        let lists = match &cfg.selection_lists {
            // Counted on its own: the store's counters may be shared by others.
            Some(name) => Some(store.layout_with(
                name,
                FileKind::CacheLists,
                mode,
                outcore_io::IoStats::new(),
            )?),
            None => None,
        };
        let mut e = VertexEngine {
            n,
            sides,
            cache: PageCache::new(p, frame_bytes, frames),
            stat: StaticCache::default(),
            stats: VertexStats {
                frames: frames as u64,
                page_size: p as u64,
                direct,
                ..Default::default()
            },
            submit: Some(submit),
            done,
            workers,
            spare,
            in_flight: 0,
            weighted,
            progress: None,
            program_iterations: 0,
            cfg,
        };
        e.load_static(lists.map(|lf| (lf, store.weighted())))?;
        Ok(e)
    }

    pub fn vertices(&self) -> usize {
        self.n
    }
    /// Called at the start of every iteration with the statistics so far and the
    /// number of active vertices (progress bars).
    pub fn set_progress(&mut self, f: ProgressFn) {
        self.progress = Some(f);
    }
    pub fn stats(&self) -> &VertexStats {
        &self.stats
    }
    /// Out-degree (`dir` = [`OUT`]) or in-degree ([`IN`]) of `v`.
    pub fn degree(&self, dir: usize, v: u32) -> u64 {
        let o = &self.sides[dir].offsets;
        o[v as usize + 1] - o[v as usize]
    }
    /// True when the in-edge CSR is open ([`IN`]).
    pub fn has_in_edges(&self) -> bool {
        self.sides.len() > 1
    }
    /// True when the static cache holds `v`'s out-edges.
    pub fn is_static(&self, v: u32) -> bool {
        self.stat
            .slot
            .get(v as usize)
            .is_some_and(|&s| s != u32::MAX)
    }

    /// Loads the longest prefix of the selection that fits the static cache: from
    /// the packed `lists` file (and whether the store, so the file, has weights)
    /// when that prefix is the whole selection, otherwise from the CSR, reading
    /// runs of adjacent edge lists in merged requests.
    fn load_static(&mut self, lists: Option<(LayoutFile, bool)>) -> Result<()> {
        let t = Instant::now();
        let per_edge = if self.weighted { 8 } else { 4 };
        let side = &self.sides[OUT];
        let mut chosen = Vec::new();
        let mut bytes = 0u64;
        let mut seen = vec![false; self.n];
        let selection = std::mem::take(&mut self.cfg.selection);
        for &v in &selection {
            if v as usize >= self.n {
                return Err(EngineError::Invalid(format!(
                    "the cache selection names vertex {v}, but the store has {} vertices",
                    self.n
                )));
            }
            if seen[v as usize] {
                continue;
            }
            let d = side.offsets[v as usize + 1] - side.offsets[v as usize];
            if d == 0 {
                continue;
            }
            if bytes + d * per_edge > self.cfg.static_cache {
                break;
            }
            seen[v as usize] = true;
            bytes += d * per_edge;
            chosen.push(v);
        }
        if chosen.is_empty() {
            return Ok(());
        }
        // Ascending, as the static cache is kept (and the packed file is written).
        chosen.sort_unstable();
        if let Some((lf, store_weighted)) = lists {
            let edges = bytes / per_edge;
            if chosen.len() == selection.len() && lf.header.count == edges {
                return self.load_packed(&lf, store_weighted, &chosen, bytes, t);
            }
        }
        let n = self.n;
        // Sized exactly: the static cache is most of the memory a run may use.
        let total = (bytes / per_edge) as usize;
        let mut offs = Vec::with_capacity(chosen.len() + 1);
        offs.push(0);
        let mut st = StaticCache {
            slot: vec![u32::MAX; self.n],
            offs,
            targets: Vec::with_capacity(total),
            weights: Vec::with_capacity(if self.weighted { total } else { 0 }),
        };
        let before = self.sides[OUT].targets.stats().snapshot().bytes_read;
        // Spans of selected lists less than GAP bytes apart are read in one
        // request (at most SPAN bytes), so loading costs about one sequential pass
        // over the parts of the CSR that hold selected lists, not a read per list.
        const GAP: u64 = 1 << 20;
        const SPAN: u64 = 4 << 20;
        let (mut checked, mut check_seconds) = (0u64, 0f64);
        let mut k = 0;
        while k < chosen.len() {
            let a = side.offsets[chosen[k] as usize];
            let mut j = k + 1;
            while j < chosen.len() {
                let prev_end = side.offsets[chosen[j - 1] as usize + 1];
                let start = side.offsets[chosen[j] as usize];
                let end = side.offsets[chosen[j] as usize + 1];
                if (start - prev_end) * 4 > GAP || (end - a) * 4 > SPAN {
                    break;
                }
                j += 1;
            }
            let b = side.offsets[chosen[j - 1] as usize + 1];
            // Whole checksum groups are read and checked; the span is inside.
            let (lo, hi) = side.sums.0.span(a * 4, b * 4);
            let inner = ((a * 4 - lo) / 4) as usize..((b * 4 - lo) / 4) as usize;
            let mut read = |f: &InFile, sums: &PageSums| -> Result<Vec<u32>> {
                let mut buf = vec![0u32; ((hi - lo) / 4) as usize];
                f.read_exact_at(HEADER_LEN + lo, bytemuck::cast_slice_mut(&mut buf))?;
                let c = Instant::now();
                checked += sums.check(lo, bytemuck::cast_slice(&buf))?;
                check_seconds += c.elapsed().as_secs_f64();
                Ok(buf)
            };
            let tw = read(&side.targets, &side.sums.0)?;
            let t = &tw[inner.clone()];
            check_targets(t, n, &side.targets, a * 4)?;
            let ww = match (&side.weights, &side.sums.1) {
                (Some(wf), Some(ws)) => read(wf, ws)?,
                _ => Vec::new(),
            };
            let w: &[f32] = match ww.is_empty() {
                true => &[],
                false => bytemuck::cast_slice(&ww[inner]),
            };
            for &v in &chosen[k..j] {
                let (x, y) = (
                    (side.offsets[v as usize] - a) as usize,
                    (side.offsets[v as usize + 1] - a) as usize,
                );
                st.slot[v as usize] = (st.offs.len() - 1) as u32;
                st.targets.extend_from_slice(&t[x..y]);
                if side.weights.is_some() {
                    st.weights.extend_from_slice(&w[x..y]);
                }
                st.offs.push(st.targets.len() as u64);
            }
            k = j;
        }
        self.stats.static_vertices = chosen.len() as u64;
        self.stats.static_edges = st.targets.len() as u64;
        self.stats.static_bytes = bytes;
        self.stats.static_load_bytes =
            self.sides[OUT].targets.stats().snapshot().bytes_read - before;
        self.stats.static_load_seconds = t.elapsed().as_secs_f64();
        self.stats.checked_bytes += checked;
        self.stats.checksum_seconds += check_seconds;
        self.stat = st;
        Ok(())
    }

    /// Loads the whole selection `chosen` (ascending; `bytes` of static cache) from
    /// its packed file: every target, then every weight of a weighted store, in
    /// ascending vertex order. The file is read whole, weights an unweighted run
    /// does not keep included, so that its checksum is verified.
    fn load_packed(
        &mut self,
        lf: &LayoutFile,
        store_weighted: bool,
        chosen: &[u32],
        bytes: u64,
        t: Instant,
    ) -> Result<()> {
        let edges = lf.header.count as usize;
        let sections = if store_weighted { 2 } else { 1 };
        let damaged = |why: String| {
            EngineError::Store(outcore_store::StoreError::Corrupt {
                file: lf.file.path().to_path_buf(),
                reason: why,
            })
        };
        if lf.header.payload_len != (edges * 4 * sections) as u64 {
            return Err(damaged(format!(
                "{} payload bytes for {edges} edges in {sections} section(s)",
                lf.header.payload_len
            )));
        }
        let before = lf.file.stats().snapshot().bytes_read;
        let mut crc = crc32fast::Hasher::new();
        const CHUNK: usize = 16 << 20;
        let mut read = |dst: &mut [u8], at: u64| -> Result<()> {
            for (i, c) in dst.chunks_mut(CHUNK).enumerate() {
                lf.read_payload(at + (i * CHUNK) as u64, c)?;
                crc.update(c);
            }
            Ok(())
        };
        let mut targets = vec![0u32; edges];
        read(bytemuck::cast_slice_mut(&mut targets), 0)?;
        let mut weights = Vec::new();
        if sections == 2 {
            if self.weighted {
                weights = vec![0f32; edges];
                read(bytemuck::cast_slice_mut(&mut weights), (edges * 4) as u64)?;
            } else {
                // Read only for the checksum.
                let mut scratch = vec![0u8; CHUNK.min(edges * 4)];
                for at in (0..edges * 4).step_by(CHUNK) {
                    let k = (edges * 4 - at).min(CHUNK);
                    read(&mut scratch[..k], (edges * 4 + at) as u64)?;
                }
            }
        }
        if crc.finalize() != lf.header.crc {
            return Err(damaged(
                "checksum mismatch: the payload is damaged".to_string(),
            ));
        }
        check_targets(&targets, self.n, &lf.file, 0)?;
        let mut st = StaticCache {
            slot: vec![u32::MAX; self.n],
            offs: Vec::with_capacity(chosen.len() + 1),
            targets,
            weights,
        };
        st.offs.push(0);
        let o = &self.sides[OUT].offsets;
        for (i, &v) in chosen.iter().enumerate() {
            st.slot[v as usize] = i as u32;
            let d = o[v as usize + 1] - o[v as usize];
            st.offs.push(st.offs[i] + d);
        }
        self.stats.static_vertices = chosen.len() as u64;
        self.stats.static_edges = edges as u64;
        self.stats.static_bytes = bytes;
        self.stats.static_load_bytes = lf.file.stats().snapshot().bytes_read - before;
        self.stats.static_load_seconds = t.elapsed().as_secs_f64();
        self.stat = st;
        Ok(())
    }

    /// One iteration: calls `f(u, targets, weights)` for every active vertex's
    /// edges in direction `dir`, possibly in several page-sized segments. The
    /// weights are `Some` when the engine reads them.
    pub fn iterate<F>(&mut self, dir: usize, active: &Frontier, mut f: F) -> Result<()>
    where
        F: FnMut(u32, &[u32], Option<&[f32]>),
    {
        if dir >= self.sides.len() {
            return Err(EngineError::Invalid(
                "in-edges were not opened (VertexConfig::in_edges)".into(),
            ));
        }
        let t0 = Instant::now();
        let wait0 = self.stats.io_wait_seconds;
        self.stats.iterations += 1;
        if let Some(p) = self.progress.as_mut() {
            p(&self.stats, active.len());
        }
        let p = self.cfg.page_size as u64;
        let per_page = p / 4;
        let max_pages = (self.cfg.max_request as u64 / p).max(1);
        let mut cur_page = u64::MAX;
        let mut cur_segs: Vec<(u32, u64, u64)> = Vec::new();
        let mut pending: Option<Request> = None;
        let mut err: Option<EngineError> = None;
        let static_ok = dir == OUT && !self.stat.slot.is_empty();
        // Walk the active vertices in ascending order; gather segments per page.
        for u in active.iter() {
            if err.is_some() {
                break;
            }
            let (a, b) = {
                let o = &self.sides[dir].offsets;
                (o[u as usize], o[u as usize + 1])
            };
            if a == b {
                continue;
            }
            self.stats.edge_lists += 1;
            self.stats.edges_processed += b - a;
            if static_ok {
                let s = self.stat.slot[u as usize];
                if s != u32::MAX {
                    self.stats.static_hits += 1;
                    let (x, y) = (
                        self.stat.offs[s as usize] as usize,
                        self.stat.offs[s as usize + 1] as usize,
                    );
                    let w = self.weighted.then(|| &self.stat.weights[x..y]);
                    f(u, &self.stat.targets[x..y], w);
                    continue;
                }
            }
            let (pa, pb) = (a / per_page, (b - 1) / per_page);
            for pg in pa..=pb {
                if pg != cur_page {
                    if cur_page != u64::MAX {
                        let segs = std::mem::take(&mut cur_segs);
                        if let Err(e) =
                            self.dispatch(dir, cur_page, segs, &mut pending, max_pages, &mut f)
                        {
                            err = Some(e);
                        }
                    }
                    cur_page = pg;
                }
                let s = a.max(pg * per_page);
                let e = b.min((pg + 1) * per_page);
                cur_segs.push((u, s, e));
            }
        }
        if err.is_none() && cur_page != u64::MAX {
            let segs = std::mem::take(&mut cur_segs);
            if let Err(e) = self.dispatch(dir, cur_page, segs, &mut pending, max_pages, &mut f) {
                err = Some(e);
            }
        }
        if let Some(r) = pending.take() {
            if err.is_none() {
                if let Err(e) = self.submit(r, &mut f) {
                    err = Some(e);
                }
            }
        }
        // Drain: every request in flight finishes (and is served) before returning.
        while self.in_flight > 0 {
            if let Err(e) = self.complete_one(&mut f) {
                err.get_or_insert(e);
            }
        }
        let waited = self.stats.io_wait_seconds - wait0;
        self.stats.compute_seconds += (t0.elapsed().as_secs_f64() - waited).max(0.0);
        match err {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// Serves one page's segments from the cache or adds the page to a request.
    fn dispatch<F>(
        &mut self,
        dir: usize,
        pg: u64,
        segs: Vec<(u32, u64, u64)>,
        pending: &mut Option<Request>,
        max_pages: u64,
        f: &mut F,
    ) -> Result<()>
    where
        F: FnMut(u32, &[u32], Option<&[f32]>),
    {
        let p = self.cfg.page_size;
        self.stats.page_lookups += 1;
        if let Some(fr) = self.cache.lookup(key(dir, pg)) {
            self.stats.page_hits += 1;
            let base = pg * (p as u64 / 4);
            for &(u, a, b) in &segs {
                let (x, y) = ((a - base) as usize * 4, (b - base) as usize * 4);
                let frame = self.cache.frame(fr);
                let t: &[u32] = bytemuck::cast_slice(&frame[x..y]);
                let w: Option<&[f32]> = self
                    .weighted
                    .then(|| bytemuck::cast_slice(&frame[p + x..p + y]));
                f(u, t, w);
                self.cache.touch(fr, x, y);
            }
            return Ok(());
        }
        if let Some(r) = pending.as_mut() {
            if r.dir == dir && r.first + r.npages == pg && r.npages < max_pages {
                r.npages += 1;
                r.segs.extend(segs);
                return Ok(());
            }
        }
        if let Some(r) = pending.take() {
            self.submit(r, f)?;
        }
        let (tbuf, wbuf) = match self.spare.pop() {
            Some(b) => b,
            None => {
                // All buffers are in flight: finish one to get its buffers back.
                self.complete_one(f)?;
                self.spare
                    .pop()
                    .expect("a finished request returns its buffers")
            }
        };
        *pending = Some(Request {
            dir,
            first: pg,
            npages: 1,
            segs,
            tbuf,
            wbuf,
            skew: 0,
            checked: 0,
            check_seconds: 0.0,
            result: Ok(()),
        });
        Ok(())
    }

    fn submit<F>(&mut self, r: Request, f: &mut F) -> Result<()>
    where
        F: FnMut(u32, &[u32], Option<&[f32]>),
    {
        while self.in_flight >= self.cfg.queue_depth {
            self.complete_one(f)?;
        }
        self.stats.requests += 1;
        self.in_flight += 1;
        self.submit
            .as_ref()
            .expect("I/O threads run until drop")
            .send(r)
            .map_err(|_| EngineError::Invalid("the I/O threads stopped".into()))
    }

    /// Waits for one finished request, serves its segments and caches its pages.
    fn complete_one<F>(&mut self, f: &mut F) -> Result<()>
    where
        F: FnMut(u32, &[u32], Option<&[f32]>),
    {
        let t = Instant::now();
        let r = self
            .done
            .recv()
            .map_err(|_| EngineError::Invalid("the I/O threads stopped".into()))?;
        self.stats.io_wait_seconds += t.elapsed().as_secs_f64();
        self.in_flight -= 1;
        let p = self.cfg.page_size;
        let mut r = r;
        let res = std::mem::replace(&mut r.result, Ok(()));
        let out = (|| {
            res?;
            let side = &self.sides[r.dir];
            let start = r.first * p as u64;
            let end = (start + r.npages * p as u64).min(side.payload);
            let got = (end - start) as usize;
            let sides = if self.weighted { 2 } else { 1 };
            self.stats.pages_read += r.npages * sides;
            self.stats.bytes_read += got as u64 * sides;
            self.stats.checked_bytes += r.checked;
            self.stats.checksum_seconds += r.check_seconds;
            let k = r.skew;
            let tb = &r.tbuf.as_slice()[k..k + got];
            let wb = r.wbuf.as_ref().map(|w| &w.as_slice()[k..k + got]);
            let base = r.first * (p as u64 / 4);
            // The I/O thread checked the page-group checksums; a target outside
            // the graph (a store written wrongly) is still reported, not used.
            check_targets(bytemuck::cast_slice(tb), self.n, &side.targets, start)?;
            for &(u, a, b) in &r.segs {
                let (x, y) = ((a - base) as usize * 4, (b - base) as usize * 4);
                let t: &[u32] = bytemuck::cast_slice(&tb[x..y]);
                let w: Option<&[f32]> = wb.map(|w| bytemuck::cast_slice(&w[x..y]));
                f(u, t, w);
            }
            // Cache every page of the request with the units its segments touched.
            let words = self.cache.words;
            let mut used = vec![0u64; words];
            let mut si = 0;
            for k in 0..r.npages as usize {
                let (ps, pe) = (k * p, ((k + 1) * p).min(got));
                used.iter_mut().for_each(|w| *w = 0);
                while si < r.segs.len() {
                    let (_, a, b) = r.segs[si];
                    let (x, y) = ((a - base) as usize * 4, (b - base) as usize * 4);
                    if x >= pe {
                        break;
                    }
                    mark(&mut used, x.max(ps) - ps, y.min(pe) - ps);
                    if y <= pe {
                        si += 1;
                    } else {
                        break;
                    }
                }
                self.cache.insert(
                    key(r.dir, r.first + k as u64),
                    &tb[ps..pe],
                    wb.map(|w| &w[ps..pe]),
                    &used,
                );
            }
            Ok(())
        })();
        self.spare.push((r.tbuf, r.wbuf));
        out
    }

    /// Finishes the statistics (utilization of resident pages) and returns them.
    pub fn finish(mut self) -> VertexStats {
        self.cache.account_resident();
        self.stats.page_utilization = if self.cache.util_pages == 0 {
            0.0
        } else {
            self.cache.util_sum / self.cache.util_pages as f64
        };
        self.stats.utilization_pages = self.cache.util_pages;
        std::mem::take(&mut self.stats)
    }
}

impl Drop for VertexEngine {
    fn drop(&mut self) {
        self.submit = None;
        for h in self.workers.drain(..) {
            let _ = h.join();
        }
    }
}
