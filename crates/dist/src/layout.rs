//! The distributed layout (Chaos §3, §6.2-§6.4): streaming partitions are ranges
//! of consecutive vertex ids; a partition's out-edges are cut into chunks that
//! live on uniformly random ranks; a partition's vertex set is cut into vertex
//! chunks placed by hashing (partition, chunk).
//!
//! # Files of one rank (`DIR/rank-K`, written by rank K alone)
//! - `edges.bin`: the edge chunks this rank holds, one after another. A chunk
//!   holds edges of one partition as little-endian records `u32 u, u32 v` (and
//!   `f32 w` on a weighted store), at most `chunk_bytes` bytes, sources
//!   ascending (cut from the out-CSR in order; ingest refuses a chunk that is
//!   not, and the computation engines rely on it to find a source's run).
//! - `degrees.bin`: the out-degrees (`u32` each) of the vertex chunks hashed to
//!   this rank.
//! - `idmap.bin` (remapped stores): the user id (`u64`) of every dense id, on
//!   every rank, so the answer can be written in the user's ids anywhere.
//! - `manifest.json` ([`RankManifest`]): the layout every rank agrees on (the
//!   same `layout_id`), and this rank's chunks with their CRC-32s, their
//!   smallest and largest source, and a block index (per block of 8192
//!   records: smallest and largest source, CRC-32) so that only the blocks
//!   holding an active source are read. Written last,
//!   atomically (temporary + rename), so an interrupted ingest leaves no manifest
//!   and a run refuses the directory.

use crate::error::{DistError, Result};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

pub const FORMAT: &str = "outcore-dist";
pub const VERSION: u32 = 1;
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
    /// Bytes of one edge record.
    pub fn record_bytes(&self) -> u64 {
        if self.weighted {
            12
        } else {
            8
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
    /// The smallest and largest source of the chunk's edges: a chunk none
    /// of whose sources is active is not read (layouts made before these
    /// were recorded say `0..=u32::MAX`, always read).
    #[serde(default)]
    pub first: u32,
    #[serde(default = "no_last")]
    pub last: u32,
    /// Records per block of the chunk (0: no block index; layouts made
    /// before it was recorded).
    #[serde(default)]
    pub block_records: u32,
    /// Per block of `block_records` records (the last one shorter): its
    /// smallest and largest source and the CRC-32 of its bytes. A storage
    /// engine reads only the blocks holding an active source (the reply is
    /// still whole records, in the chunk's order), each checked on its own.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub blocks: Vec<[u32; 3]>,
}

/// Records per block of an edge chunk's index: 64 KiB of unweighted edges.
pub const BLOCK_RECORDS: u32 = 8192;

impl EdgeChunk {
    /// The block index of a chunk's bytes `data` (records of `record` bytes,
    /// the source first; blocks of `block_records` records).
    pub fn index_blocks(data: &[u8], record: usize, block_records: u32) -> Vec<[u32; 3]> {
        data.chunks(block_records as usize * record)
            .map(|b| {
                let (lo, hi) = b
                    .chunks_exact(record)
                    .map(|r| u32::from_le_bytes(r[..4].try_into().expect("4 bytes")))
                    .fold((u32::MAX, 0), |(a, z), u| (a.min(u), z.max(u)));
                [lo, hi, crc32fast::hash(b)]
            })
            .collect()
    }

    /// Whether the block index, if any, covers the chunk's `record`-byte
    /// records exactly.
    pub fn blocks_fit(&self, record: u64) -> bool {
        self.blocks.is_empty()
            || (self.block_records > 0
                && self.blocks.len() as u64
                    == (self.bytes / record).div_ceil(self.block_records as u64))
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
                "{}: format {} version {}, this outcore reads {FORMAT} version {VERSION}",
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
