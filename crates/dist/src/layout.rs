//! The distributed layout (Chaos §3, §6.2-§6.4): streaming partitions are ranges
//! of consecutive vertex ids; a partition's out-edges are cut into chunks that
//! live on uniformly random ranks; a partition's vertex set is cut into vertex
//! chunks placed by hashing (partition, chunk).
//!
//! # Files of one rank (`DIR/rank-K`, written by rank K alone)
//! - `edges.bin`: the edge chunks this rank holds, one after another. A chunk
//!   holds edges of one partition, at most `chunk_bytes` bytes, as runs of one
//!   source each: `u32 u, u32 k` and then `k` targets `u32 v` (`u32 v, f32 w`
//!   on a weighted store), all little-endian, sources ascending (cut from the
//!   out-CSR in order; a source whose edges cross a block or chunk boundary
//!   has a run on either side). Runs store about half the bytes of `(u, v)`
//!   records on power-law graphs, and a computation engine passes over an
//!   inactive source's run in one step. Ingest refuses a chunk that is not
//!   so; a run that claims more bytes than its chunk holds is refused as
//!   damaged.
//! - `degrees.bin`: the out-degrees (`u32` each) of the vertex chunks hashed to
//!   this rank.
//! - `idmap.bin` (remapped stores): the user id (`u64`) of every dense id, on
//!   every rank, so the answer can be written in the user's ids anywhere.
//! - `manifest.json` ([`RankManifest`]): the layout every rank agrees on (the
//!   same `layout_id`), and this rank's chunks with their CRC-32s, their
//!   smallest and largest source, and a block index (per block of at most
//!   8192 edges in whole runs: smallest and largest source, CRC-32, end
//!   offset) so that only the blocks holding an active source are read. Written last,
//!   atomically (temporary + rename), so an interrupted ingest leaves no manifest
//!   and a run refuses the directory.

use crate::error::{DistError, Result};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

pub const FORMAT: &str = "outcore-dist";
/// Version 2: edge chunks hold runs of one source (version 1: `(u, v)` records).
pub const VERSION: u32 = 2;
pub const MANIFEST: &str = "manifest.json";

/// What every rank agrees on.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Plan {
    /// Random, the same on every rank of one ingest.
    pub layout_id: u64,
    pub ranks: u32,
    pub vertices: u64,
    pub edges: u64,
    pub weighted: bool,
    pub directed: bool,
    /// Each edge's reverse is stored with the weight's sign bit set.
    #[serde(default)]
    pub reverse_marked: bool,
    pub partitions: u32,
    /// Vertices per partition (the last may hold fewer).
    pub partition_vertices: u64,
    /// Vertices per vertex chunk.
    pub vertex_chunk: u64,
    /// Largest edge chunk in bytes.
    pub chunk_bytes: u64,
    /// User id = dense id + `id_base` unless `remapped` (then `idmap.bin`).
    pub id_base: u64,
    pub remapped: bool,
    /// CRC-32 of `idmap.bin` (0 when not remapped).
    pub idmap_crc: u32,
    /// Parallel edges the store holds (results that count every edge say so).
    pub parallel_edges: u64,
}

/// The partition of a vertex by a multiplication with the reciprocal of the
/// partition size, corrected by one either way (exact: `v < 2^32`, so the
/// product is off by less than one).
#[derive(Debug, Clone, Copy)]
pub struct PartitionFinder {
    size: u64,
    inverse: f64,
    single: bool,
}

impl PartitionFinder {
    #[inline(always)]
    pub fn of(&self, v: u32) -> usize {
        if self.single {
            return 0;
        }
        let v = v as u64;
        let mut q = (v as f64 * self.inverse) as u64;
        if q * self.size > v {
            q -= 1;
        } else if (q + 1) * self.size <= v {
            q += 1;
        }
        q as usize
    }
}

impl Plan {
    /// Bytes of one target in an edge chunk's run (`v`, and `w` when weighted).
    pub fn target_bytes(&self) -> usize {
        if self.weighted {
            8
        } else {
            4
        }
    }
    /// The partition of vertex `v`.
    pub fn partition_of(&self, v: u32) -> u32 {
        (v as u64 / self.partition_vertices) as u32
    }
    /// [`Plan::partition_of`] without a division per call (the scatter loop's).
    pub fn partition_finder(&self) -> PartitionFinder {
        PartitionFinder {
            size: self.partition_vertices.max(1),
            inverse: 1.0 / self.partition_vertices.max(1) as f64,
            single: self.partitions <= 1,
        }
    }
    /// The vertex range `[a, b)` of partition `p`.
    pub fn range(&self, p: u32) -> (u64, u64) {
        let a = (p as u64 * self.partition_vertices).min(self.vertices);
        (a, (a + self.partition_vertices).min(self.vertices))
    }
    /// Vertex chunks of partition `p`.
    pub fn vertex_chunks(&self, p: u32) -> u32 {
        let (a, b) = self.range(p);
        (b - a).div_ceil(self.vertex_chunk) as u32
    }
    /// The vertex range of chunk `c` of partition `p`.
    pub fn chunk_range(&self, p: u32, c: u32) -> (u64, u64) {
        let (a, b) = self.range(p);
        let x = (a + c as u64 * self.vertex_chunk).min(b);
        (x, (x + self.vertex_chunk).min(b))
    }
    /// The rank storing vertex chunk `c` of partition `p` (§6.4: hashing).
    pub fn vertex_home(&self, p: u32, c: u32) -> usize {
        (mix((((p as u64) << 32) | c as u64) ^ self.layout_id) % self.ranks as u64) as usize
    }
    /// The rank whose computation engine is the master of partition `p`.
    pub fn master(&self, p: u32) -> usize {
        (p % self.ranks) as usize
    }
}

/// One edge chunk held by a rank.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct EdgeChunk {
    pub partition: u32,
    pub offset: u64,
    pub bytes: u64,
    pub crc: u32,
    /// Edges the chunk holds.
    pub edges: u64,
    /// The smallest and largest source of the chunk's edges: a chunk none
    /// of whose sources is active is not read (a manifest without them says
    /// `0..=u32::MAX`: always read).
    #[serde(default)]
    pub first: u32,
    #[serde(default = "no_last")]
    pub last: u32,
    /// Most edges in one block of the chunk (0: no block index).
    #[serde(default)]
    pub block_records: u32,
    /// Per block (whole runs holding `block_records` edges, the last one
    /// fewer): its smallest and largest source, the CRC-32 of its bytes and
    /// the byte offset in the chunk where it ends. A storage engine reads
    /// only the blocks holding an active source (the reply is still whole
    /// runs, in the chunk's order), each checked on its own.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub blocks: Vec<[u32; 4]>,
}

/// Edges per block of an edge chunk's index (32-64 KiB of unweighted runs).
pub const BLOCK_RECORDS: u32 = 8192;

/// The most edges per block an ingest makes (a run, which a scatter never
/// cuts between threads, holds one block at most).
pub const MAX_BLOCK_RECORDS: u32 = 32768;

/// Bytes of a run's header (`u32 u, u32 k`).
pub const RUN_HEADER: usize = 8;

/// The runs of an edge chunk's bytes `data` (targets of `tb` bytes): each
/// `(u, targets)`, or the reason the bytes are not whole runs.
pub fn runs(data: &[u8], tb: usize) -> Runs<'_> {
    Runs { rest: data, tb }
}

/// The error for partition `p`'s edge chunk whose bytes are not whole runs
/// (`why`, from [`runs`]).
pub(crate) fn damaged_runs(p: u32, why: String) -> crate::error::DistError {
    crate::error::DistError::Layout(format!(
        "an edge chunk of partition {p}: {why}: the layout is damaged"
    ))
}

/// See [`runs`].
pub struct Runs<'a> {
    rest: &'a [u8],
    tb: usize,
}

impl<'a> Iterator for Runs<'a> {
    type Item = std::result::Result<(u32, &'a [u8]), String>;

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        if self.rest.is_empty() {
            return None;
        }
        let r = self.rest;
        if r.len() < RUN_HEADER {
            self.rest = &[];
            return Some(Err(format!("{} bytes where a run starts", r.len())));
        }
        let u = u32::from_le_bytes(r[..4].try_into().expect("4 bytes"));
        let k = u32::from_le_bytes(r[4..8].try_into().expect("4 bytes")) as usize;
        let len = k.saturating_mul(self.tb);
        if k == 0 || len > r.len() - RUN_HEADER {
            self.rest = &[];
            return Some(Err(format!(
                "a run of source {u} claims {k} edges in {} bytes",
                r.len() - RUN_HEADER
            )));
        }
        self.rest = &r[RUN_HEADER + len..];
        Some(Ok((u, &r[RUN_HEADER..RUN_HEADER + len])))
    }
}

/// Builds edge chunks as runs (on the rank that cuts them): edges are
/// pushed in source order; a run ends where its source does, where a block
/// of `block_records` edges is full, and with the chunk.
pub struct ChunkEncoder {
    buf: Vec<u8>,
    tb: usize,
    cap: usize,
    block_records: u32,
    in_block: u32,
    /// Where the open run's header is (`None`: no run open).
    run: Option<usize>,
    run_u: u32,
    run_len: u32,
}

impl ChunkEncoder {
    /// Chunks of at most `cap` bytes (at least one edge each) with targets of
    /// `tb` bytes, blocks of `block_records` edges (at least 1).
    pub fn new(cap: usize, tb: usize, block_records: u32) -> ChunkEncoder {
        ChunkEncoder {
            buf: Vec::with_capacity(cap),
            tb,
            cap,
            block_records: block_records.max(1),
            in_block: 0,
            run: None,
            run_u: 0,
            run_len: 0,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.buf.is_empty()
    }

    /// Whether an edge from `u` still fits the chunk (an empty chunk takes
    /// any edge).
    pub fn fits(&self, u: u32) -> bool {
        let opens = self.run.is_none() || self.run_u != u || self.in_block == self.block_records;
        self.buf.is_empty()
            || self.buf.len() + self.tb + if opens { RUN_HEADER } else { 0 } <= self.cap
    }

    /// Adds edge `(u, v)` with weight bits `w` (written when targets are 8 bytes).
    pub fn push(&mut self, u: u32, v: u32, w: u32) {
        if self.in_block == self.block_records {
            self.close_run();
            self.in_block = 0;
        }
        if self.run.is_none() || self.run_u != u {
            self.close_run();
            self.run = Some(self.buf.len());
            self.run_u = u;
            self.buf.extend_from_slice(&u.to_le_bytes());
            self.buf.extend_from_slice(&0u32.to_le_bytes());
        }
        self.buf.extend_from_slice(&v.to_le_bytes());
        if self.tb == 8 {
            self.buf.extend_from_slice(&w.to_le_bytes());
        }
        self.run_len += 1;
        self.in_block += 1;
    }

    fn close_run(&mut self) {
        if let Some(h) = self.run.take() {
            self.buf[h + 4..h + 8].copy_from_slice(&self.run_len.to_le_bytes());
        }
        self.run_len = 0;
    }

    /// Hands the chunk's bytes to `f`; the encoder starts a new chunk.
    pub fn flush<R>(&mut self, f: impl FnOnce(&[u8]) -> R) -> R {
        self.close_run();
        self.in_block = 0;
        let r = f(&self.buf);
        self.buf.clear();
        r
    }
}

impl EdgeChunk {
    /// The block index and edge count of a chunk's bytes `data` (runs with
    /// targets of `tb` bytes, blocks of `block_records` edges): the runs must
    /// be whole, their sources ascending, and no run may cross a block's end.
    pub fn index_runs(
        data: &[u8],
        tb: usize,
        block_records: u32,
    ) -> std::result::Result<(Vec<[u32; 4]>, u64), String> {
        let br = block_records.max(1) as u64;
        let mut blocks = Vec::new();
        let (mut start, mut at, mut in_block, mut edges) = (0usize, 0usize, 0u64, 0u64);
        let (mut lo, mut hi, mut prev) = (u32::MAX, 0u32, 0u32);
        for r in runs(data, tb) {
            let (u, t) = r?;
            if u < prev {
                return Err(format!(
                    "source {u} after source {prev}: sources are not ascending"
                ));
            }
            prev = u;
            let k = (t.len() / tb) as u64;
            if in_block + k > br {
                return Err(format!(
                    "a run of source {u} crosses the end of a block of {br} edges"
                ));
            }
            (lo, hi) = (lo.min(u), hi.max(u));
            at += RUN_HEADER + t.len();
            in_block += k;
            edges += k;
            if in_block == br {
                blocks.push([lo, hi, crc32fast::hash(&data[start..at]), at as u32]);
                (start, in_block, lo, hi) = (at, 0, u32::MAX, 0);
            }
        }
        if in_block > 0 {
            blocks.push([lo, hi, crc32fast::hash(&data[start..at]), at as u32]);
        }
        Ok((blocks, edges))
    }

    /// Whether the block index, if any, covers the chunk's bytes exactly
    /// (ends ascending, the last at the chunk's end).
    pub fn blocks_fit(&self) -> bool {
        self.blocks.is_empty()
            || (self.block_records > 0
                && self.blocks.windows(2).all(|w| w[0][3] < w[1][3])
                && self.blocks.last().map(|b| b[3] as u64) == Some(self.bytes)
                && self.blocks.len() as u64 == self.edges.div_ceil(self.block_records as u64))
    }
}

fn no_last() -> u32 {
    u32::MAX
}

/// One vertex chunk's degrees held by a rank.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct DegreeChunk {
    pub partition: u32,
    pub chunk: u32,
    pub offset: u64,
    pub count: u64,
    pub crc: u32,
}

/// `DIR/rank-K/manifest.json`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RankManifest {
    pub format: String,
    pub version: u32,
    pub rank: u32,
    pub plan: Plan,
    pub edge_chunks: Vec<EdgeChunk>,
    pub degree_chunks: Vec<DegreeChunk>,
}

/// The directory of rank `rank` under `dir`.
pub fn rank_dir(dir: &Path, rank: usize) -> PathBuf {
    dir.join(format!("rank-{rank}"))
}

impl RankManifest {
    /// Reads and checks `DIR/rank-K/manifest.json` for rank `rank` of `ranks`.
    pub fn load(dir: &Path, rank: usize, ranks: usize) -> Result<RankManifest> {
        let rd = rank_dir(dir, rank);
        let path = rd.join(MANIFEST);
        let text = std::fs::read_to_string(&path).map_err(|e| {
            if e.kind() == std::io::ErrorKind::NotFound && rd.is_dir() {
                DistError::Layout(format!(
                    "{}: no manifest: an interrupted or failed dist ingest left this directory; ingest again with --force",
                    rd.display()
                ))
            } else if e.kind() == std::io::ErrorKind::NotFound {
                DistError::Layout(format!(
                    "{}: not found: {} is not a dist store for {ranks} ranks (make one with mpirun -np {ranks} outcore dist ingest)",
                    rd.display(),
                    dir.display()
                ))
            } else {
                DistError::Io(outcore_io::IoError::new(&path, "read", e))
            }
        })?;
        let m: RankManifest = serde_json::from_str(&text)
            .map_err(|e| DistError::Layout(format!("{}: damaged manifest: {e}", path.display())))?;
        if m.format != FORMAT || m.version != VERSION {
            return Err(DistError::Layout(format!(
                "{}: format {} version {}, this outcore reads {FORMAT} version {VERSION}: make the layout again with this outcore's dist ingest (--force)",
                path.display(),
                m.format,
                m.version
            )));
        }
        if m.rank as usize != rank {
            return Err(DistError::Layout(format!(
                "{}: written by rank {}, read by rank {rank}",
                path.display(),
                m.rank
            )));
        }
        if m.plan.ranks as usize != ranks {
            return Err(DistError::Layout(format!(
                "{} was made for {} ranks; run it with mpirun -np {} (this run has {ranks})",
                dir.display(),
                m.plan.ranks,
                m.plan.ranks
            )));
        }
        Ok(m)
    }

    /// Writes the manifest atomically into `rd`.
    pub fn save(&self, rd: &Path) -> Result<()> {
        let path = rd.join(MANIFEST);
        let tmp = rd.join(".manifest.json.tmp");
        let text = serde_json::to_string_pretty(self).expect("serialisable") + "\n";
        write_synced(&tmp, text.as_bytes())?;
        std::fs::rename(&tmp, &path).map_err(|e| outcore_io::IoError::new(&path, "rename", e))?;
        outcore_io::sync_dir(rd)?;
        Ok(())
    }
}

/// Writes `data` to `path` and syncs it.
pub(crate) fn write_synced(path: &Path, data: &[u8]) -> Result<()> {
    use std::io::Write;
    let mut f =
        std::fs::File::create(path).map_err(|e| outcore_io::IoError::new(path, "create", e))?;
    outcore_io::fault::charge_write(data.len())
        .and_then(|_| f.write_all(data))
        .and_then(|_| f.sync_all())
        .map_err(|e| outcore_io::IoError::new(path, "write", e))?;
    Ok(())
}

/// SplitMix64's finaliser: a well-mixed hash of `x`.
pub fn mix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

/// A small seeded generator for chunk placement and request targets.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(mix(seed))
    }
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        mix(self.0)
    }
    /// Uniform in `0..n`.
    pub fn below(&mut self, n: usize) -> usize {
        (((self.next_u64() >> 32) * n as u64) >> 32) as usize
    }
}

/// The number of partitions: the smallest multiple of `ranks` whose largest
/// partition's vertex state (`bytes_per_vertex` each) fits `vertex_memory`
/// (Chaos §3).
pub fn partitions_for(vertices: u64, ranks: u32, bytes_per_vertex: u64, vertex_memory: u64) -> u32 {
    let per = (vertex_memory / bytes_per_vertex).max(1);
    let need = vertices.div_ceil(per).max(1);
    (need.div_ceil(ranks as u64) * ranks as u64).min(u32::MAX as u64) as u32
}

#[cfg(test)]
mod tests {
    use super::PartitionFinder;

    #[test]
    fn the_partition_finder_divides_exactly() {
        for size in [
            1u64,
            2,
            3,
            7,
            1000,
            65_537,
            (1 << 20) + 3,
            (1 << 31) - 1,
            (1 << 32) - 5,
        ] {
            let f = PartitionFinder {
                size,
                inverse: 1.0 / size as f64,
                single: false,
            };
            let mut vs: Vec<u64> = vec![0, 1, u32::MAX as u64, u32::MAX as u64 - 1];
            for k in 1..2000u64 {
                let b = k * size;
                vs.extend([b.saturating_sub(1), b, b + 1]);
                vs.push(k.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 32);
            }
            for v in vs.into_iter().filter(|&v| v <= u32::MAX as u64) {
                assert_eq!(f.of(v as u32) as u64, v / size, "v {v} size {size}");
            }
        }
    }
}

#[cfg(test)]
mod run_tests {
    use super::{runs, ChunkEncoder, EdgeChunk, RUN_HEADER};

    fn encode(edges: &[(u32, u32, u32)], cap: usize, tb: usize, block: u32) -> Vec<Vec<u8>> {
        let mut enc = ChunkEncoder::new(cap, tb, block);
        let mut out = Vec::new();
        for &(u, v, w) in edges {
            if !enc.fits(u) {
                out.push(enc.flush(|c| c.to_vec()));
            }
            enc.push(u, v, w);
        }
        out.push(enc.flush(|c| c.to_vec()));
        out
    }

    /// Chunks of runs give back every edge in order, stay within their size,
    /// and their block index has whole runs of `block` edges with each
    /// block's sources, CRC and end.
    #[test]
    fn runs_give_back_the_edges_with_a_block_index() {
        let mut edges = Vec::new();
        for u in 0..300u32 {
            for k in 0..(u * 13 % 40) {
                edges.push((u, k * 3 + 1, u ^ k));
            }
        }
        for (tb, cap, block) in [
            (4, 1 << 20, 8192),
            (8, 1 << 20, 16),
            (4, 200, 5),
            (8, 16, 3),
        ] {
            let chunks = encode(&edges, cap, tb, block);
            let mut got = Vec::new();
            for c in &chunks {
                assert!(c.len() <= cap.max(RUN_HEADER + tb), "{} > {cap}", c.len());
                let (blocks, n) = EdgeChunk::index_runs(c, tb, block).unwrap();
                assert_eq!(blocks.len() as u64, n.div_ceil(block as u64));
                assert_eq!(blocks.last().unwrap()[3] as usize, c.len());
                let mut start = 0;
                for b in &blocks {
                    let part = &c[start..b[3] as usize];
                    assert_eq!(crc32fast::hash(part), b[2]);
                    let us: Vec<u32> = runs(part, tb).map(|r| r.unwrap().0).collect();
                    assert_eq!((b[0], b[1]), (us[0], *us.last().unwrap()));
                    start = b[3] as usize;
                }
                for r in runs(c, tb) {
                    let (u, t) = r.unwrap();
                    for x in t.chunks_exact(tb) {
                        let v = u32::from_le_bytes(x[..4].try_into().unwrap());
                        // Weights are stored on weighted layouts only.
                        let w = match tb {
                            8 => u32::from_le_bytes(x[4..].try_into().unwrap()),
                            _ => u ^ ((v - 1) / 3),
                        };
                        got.push((u, v, w));
                    }
                }
            }
            assert_eq!(got, edges, "{tb} {cap} {block}");
        }
    }

    /// Bytes that are not whole runs, sources out of order and runs across a
    /// block's end are refused with the reason.
    #[test]
    fn damaged_runs_are_refused() {
        let c = &encode(&[(5, 1, 0), (5, 2, 0), (9, 3, 0)], 1 << 20, 4, 8192)[0];
        let mut short = c.clone();
        short.pop();
        let e = EdgeChunk::index_runs(&short, 4, 8192).unwrap_err();
        assert!(e.contains("claims 1 edges"), "{e}");
        let mut zero = c.clone();
        zero[4..8].copy_from_slice(&0u32.to_le_bytes());
        assert!(EdgeChunk::index_runs(&zero, 4, 8192)
            .unwrap_err()
            .contains("claims 0"));
        let mut swapped = c.clone();
        swapped[16..20].copy_from_slice(&2u32.to_le_bytes());
        let e = EdgeChunk::index_runs(&swapped, 4, 8192).unwrap_err();
        assert!(e.contains("not ascending"), "{e}");
        let e = EdgeChunk::index_runs(c, 4, 1).unwrap_err();
        assert!(e.contains("crosses the end of a block"), "{e}");
        assert!(EdgeChunk::index_runs(&c[..3], 4, 8192)
            .unwrap_err()
            .contains("3 bytes where a run starts"));
    }
}
