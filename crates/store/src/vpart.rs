//! The V-Part layout (FAST'19 §4.1): destination-unique partitions with mirrored
//! sources, for the fully-external engine.
//!
//! # Design
//! Every vertex belongs, as a destination, to exactly one of K partitions (its
//! *owner*); partition q's destinations `D_q` are its owned vertices in ascending
//! dense id, and a destination's *local index* is its rank there. Partition q's
//! *source table* `S_q` lists every vertex with an out-edge into `D_q` (a
//! *mirror*), ordered by (owner, dense id); its *edge data* holds each mirror's
//! edges into `D_q` as local indices, in source-table order. Because the table is
//! ordered by owner first, the mirrors in q of the destinations of partition p
//! are one contiguous *segment* of `S_q`, in the order of `D_p`: after processing
//! p, the engine writes p's new values to each of those segments sequentially
//! (§4.3, Figures 5 and 6) — no sort, no scattered write.
//!
//! The owner is chosen by the paper's greedy rule, applied while the out-CSR is
//! streamed once in source order (so a source's mirror set is known while its
//! list is read and never stored): for an edge `u -> v`, if `v` has an owner, `u`
//! is mirrored there; otherwise `v` goes to the least-loaded (fewest in-edges)
//! partition among those `u` is already mirrored in, or else to the least-loaded
//! partition overall — always among partitions below their capacity, which is
//! what bounds one partition's destination data in memory. Vertices with no
//! in-edges are placed last, in the partitions with the fewest destinations.
//!
//! # Files (docs/format.md, "vpart")
//! * `vpart.index` (kind 11, [`crate::vpart_index`]): for each partition q, K + 1 u64 segment starts
//!   (`seg[q][p]` = first mirror of owner p in `S_q`; `seg[q][K]` = |S_q|);
//!   then for each partition q its source table's block index
//!   ([`BlockIndex`]): B_q + 1 u64 edge offsets, then B_q + 1 u64 byte
//!   offsets, of each block of 4096 entries and the table's end
//!   (B_q = ceil(|S_q| / 4096)) — what a run needs to read any block's entries
//!   and their edges without decoding the table first; then for each partition
//!   p its skip table: at every unit of [`skip_unit`] destinations and at the
//!   end, a row of K u64s, p's position in its segment of each `S_q`
//!   ([`crate::vpart_index`]).
//! * `vpart.Q.dests` (kind 12): |D_q| u32 dense ids, then |D_q| u32 out-degrees.
//! * `vpart.Q.sources` (kind 13): |S_q| entries (dense id, edges into q), each
//!   two LEB128 varints — the id's difference from the previous entry's, then
//!   the count — the differences restarting at every 4096 entries
//!   ([`crate::vpart_sources`]): 2.2 bytes an entry on Kronecker 24 instead of 8.
//! * `vpart.Q.edges` (kind 14): the edges, in source-table order, as a stream of
//!   bit-packed records: the local target in `target_bits` bits (the bits of the
//!   largest partition's last local index), then, in a weighted store, the f32
//!   weight's 32 bits ([`EdgeCodec`]). Kronecker 24 in 22 partitions of 762K
//!   destinations: 20 bits a target instead of 32, 37.5% fewer edge bytes for
//!   every pass of the external engine, which is I/O-bound.
//! * `vpart.Q.mirrors` (kind 15): per destination, a mask of B = ceil(K / 8)
//!   bytes, bit p % 8 of byte p / 8 set when the destination has a mirror in
//!   partition p (3 bytes at 22 partitions, where u64 words took 8).
//!
//! # Invariants
//! * Every destination is in exactly one `D_q`; every edge is in exactly one
//!   partition's edge data (its target's); `S_q` holds exactly the sources of
//!   those edges.
//! * The files are written under temporary names, renamed, then listed in the
//!   manifest (`vpart` record and `files`) — like a cache selection, they are
//!   checked when a run opens them, so an interrupted rebuild leaves a store that
//!   opens and a layout that is refused by name until `outcore partition` runs again.
//!
//! # Memory
//! The build holds the owner (1 byte) of every vertex — in memory when n bytes fit
//! half of the build budget, otherwise in a mapped scratch file the kernel pages
//! (slow: the greedy and the second pass look owners up at random) — and, while
//! it writes a partition, that partition's destination ids (targets are spilled
//! as dense ids and turned into local indices by binary search then), plus spill buffers (a quarter of the budget,
//! at least 4 KiB per stream), three read buffers (a sixteenth each, 64 KiB to
//! 4 MiB) and two 1 MiB write buffers. Edges pass through one spill file (K x K streams,
//! (owner of target, owner of source)), so the build reads the CSR twice and
//! writes and reads the edges once more — when K x K streams of 4 KiB fit the
//! spill buffers' quarter of the budget. Otherwise the spill has two levels:
//! K streams by the target's owner, then, for one partition at a time, its
//! stream split into K streams by the source's owner in a second file (the
//! owners kept until then), which writes and reads the edges once more again.
//! Owners are one byte (255 = none yet), so a layout has at most 254 partitions.

use crate::error::{corrupt, Result, StoreError};
use crate::format::{FileKind, FileRecord, LayoutFile, LayoutWriter};
use crate::manifest::Manifest;
use crate::pagesums::{sums_name, SummedWriter};
use crate::reader::Store;
pub use crate::vpart_codec::{EdgeCodec, EdgePacker};
pub use crate::vpart_index::{skip_table_bytes, skip_unit, SkipCounter, SKIP_UNIT_MIN};
pub use crate::vpart_layout::{Part, VpartLayout};
pub use crate::vpart_sources::{
    BlockIndex, SourceDecoder, SourceError, SourcePacker, MAX_SOURCE_BYTES, SOURCE_BLOCK,
};
use outcore_io::{InFile, IoStats, OutFile, ReadMode, ScratchFile};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

/// At most this many partitions (an owner is one byte, 255 meaning none).
pub const MAX_PARTITIONS: u32 = 254;

/// Bytes of one destination's mirror mask in a layout of `k` partitions.
pub fn mask_bytes(k: u32) -> usize {
    (k as usize).div_ceil(8).max(1)
}
/// The layout format this build writes and reads (the `version` of the
/// manifest's `vpart` record): 3, compact source entries, byte masks, and the
/// source tables' block indexes and mirror skip tables in `vpart.index`. Layouts of earlier formats
/// (1: 8-byte source records, u64 mask words, no `version` in their record;
/// 2: no block index) are refused when opened and rebuilt by the next run.
pub const VPART_VERSION: u32 = 3;
/// Destination bytes per vertex of the heaviest external program (pagerank-delta:
/// three f64 values, an f64 accumulator, two u32 epochs and the u32 out-degree).
pub const HEAVIEST_BYTES_PER_VERTEX: u64 = 44;

/// What `outcore partition` records in the manifest.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct VpartRecord {
    pub partitions: u32,
    /// The vertex memory it was sized for.
    pub vertex_memory: u64,
    /// Destination bytes per vertex assumed (the heaviest program's).
    pub bytes_per_vertex: u64,
    /// Most destinations a partition may hold.
    pub capacity: u64,
    /// Per partition: destinations, mirrors (source-table entries), edges.
    pub dests: Vec<u64>,
    pub mirrors: Vec<u64>,
    pub edges: Vec<u64>,
    /// Mirrors per vertex (the paper's replication factor).
    pub replication_factor: f64,
    /// Bytes of the layout beyond one out-CSR (offsets, targets, weights), as a
    /// fraction of that CSR.
    pub space_overhead: f64,
    /// Bytes of every vpart file.
    pub bytes: u64,
    pub seconds: f64,
    /// Bits of a packed local target in the edge files; layouts written before
    /// the edges were packed have none in their record and read as 32.
    #[serde(default = "unpacked_target_bits")]
    pub target_bits: u32,
    /// The layout's format ([`VPART_VERSION`]); absent in layouts of format 1.
    #[serde(default = "first_version")]
    pub version: u32,
    /// The assignment kept (layouts before there was a choice: greedy).
    #[serde(default)]
    pub assignment: Assignment,
    /// The replication factor of the assignment tried and not kept.
    #[serde(default)]
    pub other_replication: Option<f64>,
}

fn unpacked_target_bits() -> u32 {
    32
}
fn first_version() -> u32 {
    1
}

impl VpartRecord {
    /// The codec of this layout's edge files (`target_bits` is checked when
    /// the manifest is read).
    pub fn codec(&self, weighted: bool) -> EdgeCodec {
        EdgeCodec::new(self.target_bits, weighted)
    }
    /// The largest partition's destination count.
    pub fn max_dests(&self) -> u64 {
        self.dests.iter().copied().max().unwrap_or(0)
    }
}

/// Settings of a build.
#[derive(Debug, Clone)]
pub struct VpartOptions {
    /// Memory for one partition's destination data at run time.
    pub vertex_memory: u64,
    /// Partitions wanted (at least what `vertex_memory` needs).
    pub partitions: Option<u32>,
    /// Memory budget of the build itself.
    pub memory: u64,
    /// How destinations are assigned (None: both are built, and the one with
    /// fewer mirrors kept).
    pub assignment: Option<Assignment>,
}

/// How destinations are assigned to partitions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Assignment {
    /// The paper's greedy rule over the out-CSR in source order (§3).
    #[default]
    Greedy,
    /// Destinations ranked by in-degree (counted to 255, ties by dense id) and
    /// cut into K runs of equal size: the hubs share a partition, so the many
    /// sources whose few edges all lead to hubs are mirrored once or twice.
    DegreeTiers,
}

impl std::fmt::Display for Assignment {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Assignment::Greedy => "greedy",
            Assignment::DegreeTiers => "degree-tiers",
        })
    }
}

pub fn index_name() -> String {
    "vpart.index".into()
}
pub fn file_name(q: u32, what: &str) -> String {
    format!("vpart.{q}.{what}")
}

/// The partition count and capacity for `n` vertices.
pub fn plan(n: u64, opts: &VpartOptions) -> Result<(u32, u64)> {
    let cap_mem = opts.vertex_memory / HEAVIEST_BYTES_PER_VERTEX;
    if cap_mem == 0 {
        return Err(StoreError::Invalid(format!(
            "--vertex-memory {} holds no vertex ({HEAVIEST_BYTES_PER_VERTEX} bytes each)",
            opts.vertex_memory
        )));
    }
    let n = n.max(1);
    let k_min = n.div_ceil(cap_mem);
    // 10% slack for the greedy beyond the fewest partitions that could hold n.
    let auto = (n * 11).div_ceil(cap_mem * 10).max(1);
    let k = match opts.partitions {
        Some(k) if (k as u64) < k_min => {
            return Err(StoreError::Invalid(format!(
                "{k} partitions cannot hold {n} vertices in {} of vertex memory ({HEAVIEST_BYTES_PER_VERTEX} bytes each): at least {k_min} are needed",
                opts.vertex_memory
            )))
        }
        Some(0) => return Err(StoreError::Invalid("--partitions must be at least 1".into())),
        Some(k) => k as u64,
        None => auto.max(k_min),
    };
    if k > MAX_PARTITIONS as u64 {
        return Err(StoreError::Invalid(format!(
            "{n} vertices at {HEAVIEST_BYTES_PER_VERTEX} bytes each need {k} partitions of {} vertex memory; at most {MAX_PARTITIONS} are supported (give more memory)",
            opts.vertex_memory
        )));
    }
    let even = n.div_ceil(k);
    let cap = even.max(cap_mem.min((n * 11).div_ceil(k * 10)));
    Ok((k as u32, cap))
}

/// A per-vertex array in memory or in a mapped scratch file.
enum Arr {
    Mem(Vec<u8>),
    Map(memmap2::MmapMut, #[allow(dead_code)] ScratchFile),
}

impl Arr {
    fn new(len: usize, in_memory: bool, dir: &Path, name: &str) -> Result<Arr> {
        if in_memory {
            return Ok(Arr::Mem(vec![0u8; len]));
        }
        let f = ScratchFile::create(dir, name, len.max(1) as u64, IoStats::new())?;
        let m = f.map_mut()?;
        Ok(Arr::Map(m, f))
    }
    fn bytes(&mut self) -> &mut [u8] {
        match self {
            Arr::Mem(v) => v,
            Arr::Map(m, _) => m,
        }
    }
}

/// Streams a layout file's payload as values of `T`, checking its CRC at the end.
struct PodStream<'a, T: bytemuck::Pod> {
    lf: &'a LayoutFile,
    chunk: u64,
    pos: u64,
    end: u64,
    buf: Vec<T>,
    i: usize,
    crc: crc32fast::Hasher,
}

impl<'a, T: bytemuck::Pod> PodStream<'a, T> {
    fn new(lf: &'a LayoutFile, chunk: u64) -> PodStream<'a, T> {
        PodStream {
            lf,
            chunk,
            pos: 0,
            end: lf.header.payload_len,
            buf: Vec::new(),
            i: 0,
            crc: crc32fast::Hasher::new(),
        }
    }
    fn next(&mut self) -> Result<T> {
        if self.i == self.buf.len() {
            let size = std::mem::size_of::<T>() as u64;
            let left = (self.end - self.pos) / size;
            if left == 0 {
                return Err(corrupt(self.lf.file.path(), "ends before its count"));
            }
            let k = left.min((self.chunk / size).max(1)) as usize;
            self.buf.resize(k, T::zeroed());
            self.lf
                .read_payload(self.pos, bytemuck::cast_slice_mut(&mut self.buf))?;
            self.crc.update(bytemuck::cast_slice(&self.buf));
            self.pos += k as u64 * size;
            self.i = 0;
        }
        self.i += 1;
        Ok(self.buf[self.i - 1])
    }
    /// After the whole payload was read: its CRC must match the header's.
    fn check(self) -> Result<()> {
        if self.pos == self.end && self.crc.finalize() != self.lf.header.crc {
            return Err(corrupt(
                self.lf.file.path(),
                "checksum mismatch: the payload is damaged",
            ));
        }
        Ok(())
    }
}

/// Many append-only streams spilled to one temporary file in chunks. Every
/// push to one stream has the same length, so every chunk of a stream but its
/// last is as long as the first: a chunk is remembered by its offset alone.
struct Spill {
    path: PathBuf,
    out: Option<OutFile>,
    /// Per stream: its chunks' offsets, its bytes, and its full chunks' length.
    chunks: Vec<Vec<u64>>,
    total: Vec<u64>,
    full: Vec<u32>,
    bufs: Vec<Vec<u8>>,
    cap: usize,
    pos: u64,
    _registered: outcore_io::temp::Registration,
}

impl Spill {
    /// `level` names the file (`.vpart-spill-PID` for 0, `.vpart-spill-PID-L`).
    fn new(
        dir: &Path,
        level: u32,
        streams: usize,
        memory: u64,
        stats: Arc<IoStats>,
    ) -> Result<Spill> {
        let pid = std::process::id();
        let path = match level {
            0 => dir.join(format!(".vpart-spill-{pid}")),
            l => dir.join(format!(".vpart-spill-{pid}-{l}")),
        };
        let registered = outcore_io::temp::register(&path);
        let out = OutFile::create(&path, stats)?;
        let cap = (memory / streams.max(1) as u64).clamp(4096, 1 << 20) as usize;
        Ok(Spill {
            path,
            _registered: registered,
            out: Some(out),
            chunks: vec![Vec::new(); streams],
            total: vec![0; streams],
            full: vec![0; streams],
            bufs: vec![Vec::new(); streams],
            cap,
            pos: 0,
        })
    }
    #[inline]
    fn push(&mut self, s: usize, data: &[u8]) -> Result<()> {
        if self.bufs[s].len() + data.len() > self.cap {
            self.flush(s)?;
        }
        self.bufs[s].extend_from_slice(data);
        Ok(())
    }
    fn flush(&mut self, s: usize) -> Result<()> {
        let b = &mut self.bufs[s];
        if b.is_empty() {
            return Ok(());
        }
        self.out.as_mut().expect("open").write_all(b)?;
        if self.chunks[s].is_empty() {
            self.full[s] = b.len() as u32;
        }
        debug_assert!(b.len() as u32 <= self.full[s], "pushes of one length");
        self.chunks[s].push(self.pos);
        self.total[s] += b.len() as u64;
        self.pos += b.len() as u64;
        b.clear();
        Ok(())
    }
    /// Flushes every stream and reopens the file for reading.
    fn finish(&mut self, stats: Arc<IoStats>) -> Result<InFile> {
        for s in 0..self.bufs.len() {
            self.flush(s)?;
        }
        self.bufs = Vec::new();
        self.out.take().expect("open").finish()?;
        Ok(InFile::open(&self.path, ReadMode::Buffered, stats)?)
    }
    /// Every chunk of stream `s`, in order.
    fn read(&self, f: &InFile, s: usize, mut each: impl FnMut(&[u8]) -> Result<()>) -> Result<()> {
        let mut buf = Vec::new();
        let full = self.full[s] as u64;
        for (i, &off) in self.chunks[s].iter().enumerate() {
            let len = full.min(self.total[s] - i as u64 * full);
            buf.resize(len as usize, 0);
            f.read_exact_at(off, &mut buf)?;
            each(&buf)?;
        }
        Ok(())
    }
}

impl Drop for Spill {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// The partition for a new destination: the least-loaded (then lowest) of
/// those in `mask` below capacity, else of all below capacity.
fn pick(mask: &[u64], loads: &[u64], counts: &[u64], cap: u64) -> usize {
    let mut best: Option<usize> = None;
    for (w, &word) in mask.iter().enumerate() {
        let mut bits = word;
        while bits != 0 {
            let q = w * 64 + bits.trailing_zeros() as usize;
            bits &= bits - 1;
            if counts[q] < cap && best.is_none_or(|b| loads[q] < loads[b]) {
                best = Some(q);
            }
        }
    }
    best.or_else(|| {
        (0..loads.len())
            .filter(|&q| counts[q] < cap)
            .min_by_key(|&q| (loads[q], q))
    })
    .expect("capacity x partitions >= vertices")
}

/// Mirrors a source makes under one assignment: the owners its targets' bits
/// mark in `mask`.
fn mask_mirrors(mask: &[u64]) -> u64 {
    mask.iter().map(|w| w.count_ones() as u64).sum()
}

/// The degree-tier owners of every vertex into `own` (n bytes), with each
/// partition's destination count: one pass over the targets counts the
/// in-degrees in `own` itself (up to 255), then the owners replace them (by
/// descending tier, ties by dense id, `ceil(n / k)` a partition).
fn degree_tiers(
    own: &mut [u8],
    k: u32,
    tgt_file: &LayoutFile,
    chunk: u64,
    progress: &dyn Fn(&str, u64, u64),
) -> Result<Vec<u64>> {
    let n = own.len() as u64;
    let m = tgt_file.header.count;
    own.fill(0);
    let mut tgts = PodStream::<u32>::new(tgt_file, chunk);
    for e in 0..m {
        let v = tgts.next()? as u64;
        if v >= n {
            return Err(corrupt(
                tgt_file.file.path(),
                format!("a target {v} beyond the store's {n} vertices"),
            ));
        }
        let c = &mut own[v as usize];
        *c = c.saturating_add(1);
        if e % (1 << 24) == 0 {
            progress("degrees", e, m);
        }
    }
    tgts.check()?;
    let mut start = [0u64; 256];
    for &c in own.iter() {
        start[c as usize] += 1;
    }
    // Tier t's first rank: the vertices of every higher tier before it.
    let mut before = 0u64;
    for t in (0..256).rev() {
        let c = start[t];
        start[t] = before;
        before += c;
    }
    let per = n.div_ceil(k as u64).max(1);
    let mut counts = vec![0u64; k as usize];
    for c in own.iter_mut() {
        let q = (start[*c as usize] / per) as usize;
        start[*c as usize] += 1;
        *c = q as u8;
        counts[q] += 1;
    }
    Ok(counts)
}

/// The mirrors the owners `own` (of `k` partitions) make: a pass over the
/// out-CSR, a mask of owners per source.
fn count_mirrors(
    own: &[u8],
    k: u32,
    deg_file: &LayoutFile,
    tgt_file: &LayoutFile,
    chunk: u64,
    progress: &dyn Fn(&str, u64, u64),
) -> Result<u64> {
    let (n, m) = (own.len() as u64, tgt_file.header.count);
    let words = (k as usize).div_ceil(64).max(1);
    let mut mask = vec![0u64; words];
    let mut degs = PodStream::<u32>::new(deg_file, chunk);
    let mut tgts = PodStream::<u32>::new(tgt_file, chunk);
    let mut mirrors = 0u64;
    let mut done = 0u64;
    for u in 0..n {
        let d = degs.next()?;
        mask.fill(0);
        for _ in 0..d {
            let v = tgts.next()?;
            let q = *own.get(v as usize).ok_or_else(|| {
                corrupt(tgt_file.file.path(), format!("vertex {u} has target {v}"))
            })?;
            mask[q as usize / 64] |= 1 << (q % 64);
        }
        mirrors += mask_mirrors(&mask);
        done += d as u64;
        if u % (1 << 20) == 0 {
            progress("tiers", done, m);
        }
    }
    degs.check()?;
    tgts.check()?;
    Ok(mirrors)
}

/// Builds the layout of `store` and records it in the manifest (replacing an
/// earlier one). `progress(phase, done, total)` is called now and then.
pub fn build(
    store: &Store,
    opts: &VpartOptions,
    progress: &dyn Fn(&str, u64, u64),
) -> Result<VpartRecord> {
    let start = Instant::now();
    let n = store.vertices();
    let m = store.edges();
    let dir = store.dir();
    let (k, cap) = plan(n, opts)?;
    let ku = k as usize;
    // What a killed build left: spill files and temporary layout files.
    outcore_io::temp::clean_stale(dir);
    let weighted = store.weighted();
    let stats = store.stats().clone();
    let open = |name: &str, kind| store.layout_with(name, kind, ReadMode::Buffered, stats.clone());
    let deg_file = open("degrees.out", FileKind::Degrees)?;
    let tgt_file = open("csr.out.targets", FileKind::CsrTargets)?;
    let w_file = if weighted {
        Some(open("csr.out.weights", FileKind::CsrWeights)?)
    } else {
        None
    };
    if deg_file.header.count != n || tgt_file.header.count != m {
        return Err(corrupt(
            tgt_file.file.path(),
            "counts differ from the manifest",
        ));
    }
    let in_memory = n <= opts.memory / 2;
    // Read buffers: three streams of a sixteenth of the budget each (64 KiB to 4 MiB).
    let chunk = (opts.memory / 16).clamp(64 << 10, 4 << 20);
    const NONE: u8 = u8::MAX;
    let mut owner = Arr::new(n as usize, in_memory, dir, "vpart-owner")?;
    owner.bytes().fill(NONE);
    let mut loads = vec![0u64; ku];
    let mut counts = vec![0u64; ku];
    let words = (k as usize).div_ceil(64).max(1);
    let mbytes = mask_bytes(k);
    let mut mask = vec![0u64; words];
    let mut mask_le = vec![0u8; 8 * words];

    // Pass 1: the greedy assignment over the out-CSR in source order.
    let want = opts.assignment;
    let mut greedy_mirrors = 0u64;
    if want != Some(Assignment::DegreeTiers) {
        let own = owner.bytes();
        let mut degs = PodStream::<u32>::new(&deg_file, chunk);
        let mut tgts = PodStream::<u32>::new(&tgt_file, chunk);
        let mut done = 0u64;
        for u in 0..n {
            let d = degs.next()?;
            mask.fill(0);
            for _ in 0..d {
                let v = tgts.next()?;
                if v as u64 >= n {
                    return Err(corrupt(
                        tgt_file.file.path(),
                        format!("vertex {u} has target {v}, the store has {n} vertices"),
                    ));
                }
                let mut o = own[v as usize];
                if o == NONE {
                    o = pick(&mask, &loads, &counts, cap) as u8;
                    own[v as usize] = o;
                    counts[o as usize] += 1;
                }
                mask[o as usize / 64] |= 1 << (o % 64);
                loads[o as usize] += 1;
            }
            greedy_mirrors += mask_mirrors(&mask);
            done += d as u64;
            if u % (1 << 20) == 0 {
                progress("assign", done, m);
            }
        }
        degs.check()?;
        tgts.check()?;
        for o in own.iter_mut().filter(|o| **o == NONE) {
            let q = (0..ku)
                .filter(|&q| counts[q] < cap)
                .min_by_key(|&q| (counts[q], q))
                .expect("capacity x partitions >= vertices");
            *o = q as u8;
            counts[q] += 1;
        }
    }
    // The degree tiers, forced or tried beside the greedy (in memory when
    // both owner arrays fit half the budget, else mapped from a scratch file
    // like the greedy's); the one with fewer mirrors is kept.
    let both_fit = 2 * n <= opts.memory / 2;
    let mut assignment = Assignment::Greedy;
    let mut other_replication = None;
    if want == Some(Assignment::DegreeTiers) {
        counts = degree_tiers(owner.bytes(), k, &tgt_file, chunk, progress)?;
        assignment = Assignment::DegreeTiers;
    } else if want.is_none() {
        let r = |mirrors: u64| mirrors as f64 / n.max(1) as f64;
        let mut tiers = Arr::new(n as usize, both_fit, dir, "vpart-tiers")?;
        let tier_counts = degree_tiers(tiers.bytes(), k, &tgt_file, chunk, progress)?;
        let tier_mirrors = count_mirrors(tiers.bytes(), k, &deg_file, &tgt_file, chunk, progress)?;
        if tier_mirrors < greedy_mirrors {
            other_replication = Some(r(greedy_mirrors));
            owner = tiers;
            counts = tier_counts;
            assignment = Assignment::DegreeTiers;
        } else {
            other_replication = Some(r(tier_mirrors));
        }
    }

    // Local indices; destination ids and degrees spilled per partition. Edges
    // by (target's owner, source's owner) when K x K streams of 4 KiB fit the
    // spill memory, else by the target's owner alone (two levels).
    let spill_mem = opts.memory / 4;
    let two_level = ((ku * ku + 3 * ku) as u64) << 12 > spill_mem;
    let edge_streams = if two_level { ku } else { ku * ku };
    let streams = edge_streams + 3 * ku;
    let mut spill = Spill::new(dir, 0, streams, spill_mem, stats.clone())?;
    let s_edges = |q: usize, p: usize| if two_level { q } else { q * ku + p };
    let s_ids = |q: usize| edge_streams + q;
    let s_degs = |q: usize| edge_streams + ku + q;
    let s_mask = |q: usize| edge_streams + 2 * ku + q;
    {
        let own = owner.bytes();
        let mut degs = PodStream::<u32>::new(&deg_file, chunk);
        for (v, &o) in own.iter().enumerate() {
            let q = o as usize;
            spill.push(s_ids(q), &(v as u32).to_le_bytes())?;
            spill.push(s_degs(q), &degs.next()?.to_le_bytes())?;
        }
    }

    // Pass 2: every edge to its (target's owner, source's owner) stream; masks.
    {
        let own = owner.bytes();
        let mut degs = PodStream::<u32>::new(&deg_file, chunk);
        let mut tgts = PodStream::<u32>::new(&tgt_file, chunk);
        let mut ws = w_file.as_ref().map(|f| PodStream::<f32>::new(f, chunk));
        let mut done = 0u64;
        let mut rec = [0u8; 12];
        let rl = if weighted { 12 } else { 8 };
        for u in 0..n as usize {
            let d = degs.next()?;
            let pu = own[u] as usize;
            mask.fill(0);
            rec[0..4].copy_from_slice(&(u as u32).to_le_bytes());
            for _ in 0..d {
                let v = tgts.next()? as usize;
                let q = own[v] as usize;
                mask[q / 64] |= 1 << (q % 64);
                rec[4..8].copy_from_slice(&(v as u32).to_le_bytes());
                if let Some(ws) = &mut ws {
                    rec[8..12].copy_from_slice(&ws.next()?.to_le_bytes());
                }
                spill.push(s_edges(q, pu), &rec[..rl])?;
            }
            // Bit p of the mask is bit p % 8 of byte p / 8.
            for (w, word) in mask.iter().enumerate() {
                mask_le[8 * w..8 * w + 8].copy_from_slice(&word.to_le_bytes());
            }
            spill.push(s_mask(pu), &mask_le[..mbytes])?;
            done += d as u64;
            if u % (1 << 20) == 0 {
                progress("distribute", done, m);
            }
        }
        degs.check()?;
        tgts.check()?;
        if let Some(ws) = ws {
            ws.check()?;
        }
    }
    // The second level splits by the source's owner: kept until then.
    let mut owner = two_level.then_some(owner);
    let sf = spill.finish(stats.clone())?;

    // Assembly: each partition's files in turn, under temporary names.
    let pid = std::process::id();
    // Each temporary is registered for removal on SIGINT/SIGTERM while it exists.
    let registered = std::cell::RefCell::new(Vec::new());
    let tmp = |name: &str| {
        let p = dir.join(format!(".{name}.{pid}.tmp"));
        registered.borrow_mut().push(outcore_io::temp::register(&p));
        p
    };
    let mut files: Vec<FileRecord> = Vec::new();
    let mut written: Vec<String> = Vec::new();
    // One record width for every partition: the largest one's local indices.
    let codec = EdgeCodec::for_dests(counts.iter().copied().max().unwrap_or(1), weighted);
    let result = (|| -> Result<VpartRecord> {
        let mut seg = vec![0u64; ku * (ku + 1)];
        let mut block_index: Vec<BlockIndex> = Vec::with_capacity(ku);
        let unit = skip_unit(counts.iter().sum(), k as u64);
        let mut skip_tables: Vec<Vec<u64>> = Vec::with_capacity(ku);
        let mut mirrors = vec![0u64; ku];
        let mut edges = vec![0u64; ku];
        for q in 0..ku {
            progress("write", q as u64, k as u64);
            // Every partition file is read in ranges by the run: each with its
            // page-group checksums, written beside it under a temporary name.
            let create = |name: &str, kind| {
                SummedWriter::create_buffered(
                    &tmp(name),
                    &tmp(&sums_name(name)),
                    kind,
                    stats.clone(),
                )
            };
            let mut finish = |w: SummedWriter, name: String, count: u64| -> Result<()> {
                let [mut d, mut s] = w.finish(count)?;
                d.name = name.clone();
                s.name = sums_name(&name);
                written.extend([name, s.name.clone()]);
                files.extend([d, s]);
                Ok(())
            };
            // Destinations: ids then out-degrees. The ids stay in memory (one
            // partition's, which the run holds too) to turn targets into local
            // indices.
            let name = file_name(q as u32, "dests");
            let mut w = create(&name, FileKind::VpartDests)?;
            let mut ids: Vec<u32> = Vec::with_capacity(counts[q] as usize);
            spill.read(&sf, s_ids(q), |b| {
                ids.extend(
                    b.chunks_exact(4)
                        .map(|x| u32::from_le_bytes(x.try_into().unwrap())),
                );
                w.append(b)
            })?;
            spill.read(&sf, s_degs(q), |b| w.append(b))?;
            finish(w, name, counts[q])?;
            let name = file_name(q as u32, "mirrors");
            let mut w = create(&name, FileKind::VpartMirrors)?;
            let mut sk = SkipCounter::new(ku, mask_bytes(k), unit);
            spill.read(&sf, s_mask(q), |b| {
                sk.feed(b);
                w.append(b)
            })?;
            skip_tables.push(sk.finish(counts[q]).ok_or_else(|| {
                StoreError::Invalid(format!(
                    "partitioning wrote masks of partition {q} for other than its {} destinations",
                    counts[q]
                ))
            })?);
            finish(w, name, counts[q])?;
            // Source table and edges, segment by segment (owner p of the source).
            let sname = file_name(q as u32, "sources");
            let ename = file_name(q as u32, "edges");
            let mut sw = create(&sname, FileKind::VpartSources)?;
            let mut ew = create(&ename, FileKind::VpartEdges)?;
            let rl = if weighted { 12 } else { 8 };
            let mut m_q = 0u64;
            let mut e_q = 0u64;
            let mut out = Vec::with_capacity(1 << 20);
            let mut packer = EdgePacker::new(codec);
            // Two levels: q's edges split by their source's owner first.
            let split = match owner.as_mut() {
                Some(own) => {
                    let own = own.bytes();
                    let mut sub = Spill::new(dir, 1, ku, spill_mem, stats.clone())?;
                    spill.read(&sf, s_edges(q, 0), |b| {
                        for r in b.chunks_exact(rl) {
                            let u = u32::from_le_bytes(r[0..4].try_into().unwrap());
                            sub.push(own[u as usize] as usize, r)?;
                        }
                        Ok(())
                    })?;
                    let f = sub.finish(stats.clone())?;
                    Some((sub, f))
                }
                None => None,
            };
            let mut sp = SourcePacker::new();
            let mut srcs: Vec<u8> = Vec::new();
            for p in 0..ku {
                seg[q * (ku + 1) + p] = m_q;
                let mut cur: Option<(u32, u32)> = None;
                let mut each = |b: &[u8]| -> Result<()> {
                    for r in b.chunks_exact(rl) {
                        let u = u32::from_le_bytes(r[0..4].try_into().unwrap());
                        match &mut cur {
                            Some((cu, c)) if *cu == u => *c += 1,
                            _ => {
                                if let Some((cu, c)) = cur {
                                    sp.push(cu, c, &mut srcs);
                                    m_q += 1;
                                }
                                cur = Some((u, 1));
                            }
                        }
                        let v = u32::from_le_bytes(r[4..8].try_into().unwrap());
                        let local = ids.binary_search(&v).map_err(|_| {
                            StoreError::Invalid(format!(
                                "partitioning lost vertex {v}: not a destination of partition {q}"
                            ))
                        })? as u32;
                        let w = match r.get(8..12) {
                            Some(w) => f32::from_le_bytes(w.try_into().unwrap()),
                            None => 1.0,
                        };
                        packer.push(local, w, &mut out);
                        e_q += 1;
                    }
                    if out.len() >= 1 << 20 {
                        ew.append(&out)?;
                        out.clear();
                    }
                    if srcs.len() >= 1 << 20 {
                        sw.append(&srcs)?;
                        srcs.clear();
                    }
                    Ok(())
                };
                match &split {
                    Some((sub, f)) => sub.read(f, p, &mut each)?,
                    None => spill.read(&sf, s_edges(q, p), &mut each)?,
                }
                if let Some((cu, c)) = cur {
                    sp.push(cu, c, &mut srcs);
                    m_q += 1;
                }
            }
            sw.append(&srcs)?;
            // Its totals are checked against `e_q` with the whole index below.
            let bi = sp.finish();
            block_index.push(bi);
            packer.finish(&mut out);
            ew.append(&out)?;
            seg[q * (ku + 1) + ku] = m_q;
            mirrors[q] = m_q;
            edges[q] = e_q;
            finish(sw, sname, m_q)?;
            finish(ew, ename, e_q)?;
        }
        if edges.iter().sum::<u64>() != m {
            return Err(StoreError::Invalid(format!(
                "partitioning placed {} edges, the store has {m}",
                edges.iter().sum::<u64>()
            )));
        }
        let name = index_name();
        let mut w =
            LayoutWriter::create_buffered(&tmp(&name), FileKind::VpartIndex, stats.clone())?;
        let words = crate::vpart_index::words(&seg, &block_index, &skip_tables);
        // What a run checks when it opens the layout, checked before it is kept.
        let sizes: Vec<u64> = files
            .iter()
            .filter(|f| f.name.ends_with(".sources"))
            .map(|f| f.bytes - crate::format::HEADER_LEN)
            .collect();
        if let Err(e) = crate::vpart_index::parse(&words, &counts, &mirrors, &edges, &sizes) {
            return Err(StoreError::Invalid(format!(
                "partitioning built an index that {e}"
            )));
        }
        w.append(bytemuck::cast_slice(&words))?;
        let mut r = w.finish(words.len() as u64)?;
        r.name = name.clone();
        files.push(r);
        written.push(name);
        let bytes: u64 = files.iter().map(|f| f.bytes).sum();
        let csr: u64 = store
            .manifest()
            .files
            .iter()
            .filter(|f| f.name.starts_with("csr.out."))
            .map(|f| f.bytes)
            .sum();
        Ok(VpartRecord {
            partitions: k,
            vertex_memory: opts.vertex_memory,
            bytes_per_vertex: HEAVIEST_BYTES_PER_VERTEX,
            capacity: cap,
            dests: counts.clone(),
            replication_factor: mirrors.iter().sum::<u64>() as f64 / n.max(1) as f64,
            space_overhead: (bytes as f64 - csr as f64) / csr.max(1) as f64,
            mirrors,
            edges,
            bytes,
            seconds: start.elapsed().as_secs_f64(),
            target_bits: codec.target_bits(),
            version: VPART_VERSION,
            assignment,
            other_replication,
        })
    })();
    drop(sf);
    drop(spill);
    let rec = match result {
        Ok(r) => r,
        Err(e) => {
            for name in &written {
                let _ = std::fs::remove_file(tmp(name));
            }
            return Err(e);
        }
    };
    for name in &written {
        std::fs::rename(tmp(name), dir.join(name))
            .map_err(|e| outcore_io::IoError::new(tmp(name), "rename", e))?;
    }
    // The manifest on disk, not the open store's copy.
    let mut man = Manifest::read(dir)?;
    let old: Vec<String> = man
        .files
        .iter()
        .filter(|f| f.name.starts_with("vpart."))
        .map(|f| f.name.clone())
        .collect();
    man.files.retain(|f| !f.name.starts_with("vpart."));
    man.files.extend(files);
    man.vpart = Some(rec.clone());
    man.write(dir)?;
    for name in old.iter().filter(|o| !written.contains(o)) {
        let _ = std::fs::remove_file(dir.join(name));
    }
    Ok(rec)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_of_earlier_layouts_read_as_format_1_with_32_bit_targets() {
        let rec = VpartRecord {
            partitions: 2,
            vertex_memory: 1 << 20,
            bytes_per_vertex: HEAVIEST_BYTES_PER_VERTEX,
            capacity: 10,
            dests: vec![10, 9],
            mirrors: vec![3, 4],
            edges: vec![7, 8],
            replication_factor: 0.35,
            space_overhead: 0.5,
            bytes: 12345,
            seconds: 0.5,
            target_bits: 4,
            version: VPART_VERSION,
            assignment: Assignment::DegreeTiers,
            other_replication: Some(0.5),
        };
        let mut v = serde_json::to_value(&rec).unwrap();
        assert_eq!(
            serde_json::from_value::<VpartRecord>(v.clone()).unwrap(),
            rec
        );
        v.as_object_mut().unwrap().remove("target_bits");
        v.as_object_mut().unwrap().remove("version");
        v.as_object_mut().unwrap().remove("assignment");
        v.as_object_mut().unwrap().remove("other_replication");
        let old: VpartRecord = serde_json::from_value(v).unwrap();
        assert_eq!(old.target_bits, 32);
        assert_eq!(old.version, 1);
        assert_eq!(old.assignment, Assignment::Greedy);
        assert_eq!(old.other_replication, None);
        assert_eq!(old.codec(false).payload_bytes(7), 28);
        assert_eq!(old.codec(true).payload_bytes(7), 56);
        assert_eq!(rec.codec(false).payload_bytes(7), 4);
    }
}
