//! Reading a store: the manifest, the grid (whole blocks, rows, columns, or only
//! chosen sources' runs), the CSR (one vertex's edge list), degrees and the id map.
//!
//! Invariants: opening checks every file's header against the manifest (kind,
//! version, length, checksum recorded); reading a whole grid block checks the
//! block's CRCs, so a flipped bit in streamed data is reported with the file and
//! block, never used. Partial reads (selected sources, one CSR list) are bounds-
//! checked but not checksummed; `Store::verify` checks every byte.

use crate::codec::{self, Shape};
use crate::error::{corrupt, Result, StoreError};
use crate::format::{FileKind, LayoutFile, HEADER_LEN};
use crate::manifest::Manifest;
use outcore_io::{AlignedBuf, IoStats, ReadMode};
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// One entry of `grid.index` (32 bytes, little-endian).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
#[repr(C)]
pub struct BlockEntry {
    /// Byte offset of the block in the `grid.data` payload.
    pub offset: u64,
    /// Edges in the block.
    pub edges: u64,
    /// Distinct sources in the block.
    pub sources: u32,
    /// CRC-32 of the sources, offsets and targets sections.
    pub crc_topology: u32,
    /// CRC-32 of the weights section (0 when unweighted or empty).
    pub crc_weights: u32,
    /// Bit widths of the packed sections ([`crate::codec`]): bits 0..8 the local
    /// id width (sources and targets), bits 8..16 the offset width; 0 for an empty
    /// block.
    pub widths: u32,
}

impl BlockEntry {
    /// The entry of a block of `edges` edges and `sources` sources, local ids of
    /// `id_bits` bits, at `offset` (CRCs still 0).
    pub fn new(offset: u64, edges: u64, sources: u64, id_bits: u32) -> BlockEntry {
        let widths = if edges == 0 {
            0
        } else {
            id_bits | codec::bits_for(edges) << 8
        };
        BlockEntry {
            offset,
            edges,
            sources: sources as u32,
            widths,
            ..Default::default()
        }
    }
    /// The block's section sizes.
    pub fn shape(&self) -> Shape {
        Shape {
            sources: self.sources as u64,
            edges: self.edges,
            id_bits: self.widths & 0xff,
            off_bits: (self.widths >> 8) & 0xff,
        }
    }
    /// Bytes of the sources + offsets sections (the per-source index).
    pub fn index_bytes(&self) -> u64 {
        self.shape().index_bytes()
    }
    /// Bytes of the topology (index + targets).
    pub fn topology_bytes(&self) -> u64 {
        self.shape().topology_bytes()
    }
}

/// A grid block in memory: edges `(srcs[k], dsts[offs[k]..offs[k+1]])`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Block {
    pub row: u32,
    pub col: u32,
    pub srcs: Vec<u32>,
    pub offs: Vec<u32>,
    pub dsts: Vec<u32>,
    pub weights: Option<Vec<f32>>,
}

impl Block {
    pub fn num_edges(&self) -> usize {
        self.dsts.len()
    }
    /// Every edge as (source, target, weight; 1.0 when unweighted).
    pub fn edges(&self) -> impl Iterator<Item = (u32, u32, f32)> + '_ {
        self.srcs.iter().enumerate().flat_map(move |(k, &u)| {
            let (s, e) = (self.offs[k] as usize, self.offs[k + 1] as usize);
            (s..e).map(move |x| (u, self.dsts[x], self.weights.as_ref().map_or(1.0, |w| w[x])))
        })
    }
}

/// A grid block in reusable buffers: the packed sections exactly as stored, read
/// straight into an aligned buffer (O_DIRECT reads land in it without a bounce
/// copy), and the topology decoded once into 32-bit absolute ids (sources, offsets,
/// targets back to back; weights are read in place). The streaming engine keeps a
/// ring of these; its reader threads decode, so the consumer sees plain slices.
#[derive(Debug, Default)]
pub struct RawBlock {
    pub row: u32,
    pub col: u32,
    buf: AlignedBuf,
    /// Where the block's bytes start in `buf` (a multiple of 4: blocks are whole
    /// u32 words at 4-byte offsets of the file).
    start: usize,
    /// Bytes of the topology sections (the weights follow them).
    topo: usize,
    /// Decoded sources (`s`), offsets (`s + 1`) and targets (`e`); only the first
    /// `2s + 1 + e` words are this block's (the vector keeps its largest size).
    dec: Vec<u32>,
    s: usize,
    e: usize,
    weighted: bool,
}

impl RawBlock {
    pub fn num_sources(&self) -> usize {
        self.s
    }
    pub fn num_edges(&self) -> usize {
        self.e
    }
    /// The distinct sources, ascending.
    pub fn srcs(&self) -> &[u32] {
        &self.dec[..self.s]
    }
    /// `offs()[k]..offs()[k + 1]` is source `k`'s run in [`RawBlock::dsts`]
    /// (`[0]` for an empty block).
    pub fn offs(&self) -> &[u32] {
        if self.e == 0 {
            &[0]
        } else {
            &self.dec[self.s..2 * self.s + 1]
        }
    }
    pub fn dsts(&self) -> &[u32] {
        if self.e == 0 {
            &[]
        } else {
            &self.dec[2 * self.s + 1..2 * self.s + 1 + self.e]
        }
    }
    /// The weights, when read with them.
    pub fn weights(&self) -> Option<&[f32]> {
        if !self.weighted {
            None
        } else if self.e == 0 {
            Some(&[])
        } else {
            let a = self.start + self.topo;
            Some(bytemuck::cast_slice(
                &self.buf.as_slice()[a..a + 4 * self.e],
            ))
        }
    }
    /// Keeps only what the block's accessors read, for a block held in
    /// memory past its pass: the decoded words trimmed to this block's, and
    /// the packed bytes dropped unless they carry its weights. Returns the
    /// bytes held afterwards ([`GridReader::block_held_bytes`] at most).
    pub fn compact(&mut self) -> u64 {
        let words = if self.e == 0 {
            0
        } else {
            2 * self.s + 1 + self.e
        };
        self.dec.truncate(words);
        self.dec.shrink_to_fit();
        if !self.weighted || self.e == 0 {
            self.buf = AlignedBuf::new(0);
            self.start = 0;
        }
        self.capacity_bytes()
    }
    /// Bytes of buffer held (packed and decoded).
    pub fn capacity_bytes(&self) -> u64 {
        let (packed, decoded) = self.capacities();
        packed + decoded
    }
    /// Bytes of buffer held for the packed block as read, and for its decoded
    /// sources, offsets and targets.
    pub fn capacities(&self) -> (u64, u64) {
        (self.buf.capacity() as u64, 4 * self.dec.capacity() as u64)
    }
}

/// The vertices of interval `i` of `interval` vertices each, in a graph of `n`.
fn interval_range(i: u32, interval: u64, n: u64) -> Range<u32> {
    ((i as u64 * interval).min(n) as u32)..(((i as u64 + 1) * interval).min(n) as u32)
}

/// An open store.
pub struct Store {
    dir: PathBuf,
    manifest: Manifest,
    mode: ReadMode,
    stats: Arc<IoStats>,
}

impl Store {
    /// Opens with buffered reads and the process-wide I/O counters.
    pub fn open(dir: &Path) -> Result<Store> {
        Store::open_with(dir, ReadMode::Buffered, IoStats::global())
    }

    pub fn open_with(dir: &Path, mode: ReadMode, stats: Arc<IoStats>) -> Result<Store> {
        let manifest = Manifest::read(dir)?;
        // Saved static-cache selections are optional extras, checked against the
        // manifest when a run loads them: one left mismatched by an interrupted
        // `select-cache` fails those runs (and `info`), not the whole store.
        // The same holds for the V-Part layout (`outcore partition`).
        let optional = |kind: &str| {
            kind == FileKind::CacheSelection.name()
                || kind == FileKind::CacheLists.name()
                || kind.starts_with("vpart-")
        };
        for f in manifest.files.iter().filter(|f| !optional(&f.kind)) {
            let path = dir.join(&f.name);
            match std::fs::metadata(&path) {
                Err(_) => return Err(corrupt(&path, "missing (listed in the manifest)")),
                Ok(md) if md.len() != f.bytes => {
                    return Err(corrupt(
                        &path,
                        format!(
                            "truncated or extended: the manifest records {} bytes, the file has {}",
                            f.bytes,
                            md.len()
                        ),
                    ))
                }
                Ok(_) => {}
            }
        }
        Ok(Store {
            dir: dir.to_path_buf(),
            manifest,
            mode,
            stats,
        })
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }
    pub fn manifest(&self) -> &Manifest {
        &self.manifest
    }
    pub fn stats(&self) -> &Arc<IoStats> {
        &self.stats
    }
    pub fn vertices(&self) -> u64 {
        self.manifest.vertices
    }
    pub fn edges(&self) -> u64 {
        self.manifest.edges
    }
    pub fn weighted(&self) -> bool {
        self.manifest.weighted
    }
    pub fn partitions(&self) -> u32 {
        self.manifest.partitions
    }
    /// The vertices of grid interval `i`.
    pub fn interval(&self, i: u32) -> Range<u32> {
        interval_range(i, self.manifest.interval, self.manifest.vertices)
    }

    /// Opens a layout file named `name`, checking its header against the manifest.
    pub fn layout(&self, name: &str, kind: FileKind) -> Result<LayoutFile> {
        self.layout_with(name, kind, self.mode, self.stats.clone())
    }

    /// [`Store::layout`] with another read mode and I/O counters (an engine reading
    /// the CSR with O_DIRECT, an offline pass mapping it).
    pub fn layout_with(
        &self,
        name: &str,
        kind: FileKind,
        mode: ReadMode,
        stats: Arc<IoStats>,
    ) -> Result<LayoutFile> {
        let rec = self
            .manifest
            .file(name)
            .ok_or_else(|| StoreError::NotAStore {
                dir: self.dir.clone(),
                reason: format!("the manifest lists no {name}"),
            })?;
        LayoutFile::open(&self.dir, rec, kind, mode, stats)
    }

    pub fn grid(&self) -> Result<GridReader> {
        let index_file = self.layout("grid.index", FileKind::GridIndex)?;
        let index: Vec<BlockEntry> = index_file.read_all()?;
        let p = self.manifest.partitions as usize;
        if index.len() != p * p {
            return Err(corrupt(
                index_file.file.path(),
                format!("{} entries, expected {}", index.len(), p * p),
            ));
        }
        let data = self.layout("grid.data", FileKind::GridData)?;
        let interval = self.manifest.interval;
        let bits = codec::id_bits(interval);
        for (b, e) in index.iter().enumerate() {
            let want = BlockEntry::new(e.offset, e.edges, e.sources as u64, bits).widths;
            if e.widths != want || e.edges > u32::MAX as u64 {
                return Err(corrupt(
                    index_file.file.path(),
                    format!(
                        "entry of block ({}, {}) has bit widths {:#x}, expected {want:#x}",
                        b / p,
                        b % p,
                        e.widths
                    ),
                ));
            }
            let len = e.shape().block_bytes(self.weighted());
            if e.offset + len > data.header.payload_len || (e.sources as u64 > e.edges) {
                return Err(corrupt(
                    index_file.file.path(),
                    format!("entry of block ({}, {}) is out of bounds", b / p, b % p),
                ));
            }
        }
        Ok(GridReader {
            index,
            data,
            p: p as u32,
            weighted: self.weighted(),
            interval,
            n: self.vertices(),
        })
    }

    /// The out-edge CSR (`dir` = "out") or in-edge CSR ("in", when ingested with it).
    pub fn csr(&self, dir: &str) -> Result<CsrReader> {
        if dir == "in" && !self.manifest.in_edges {
            return Err(StoreError::Invalid(format!(
                "{}: the store has no in-edge CSR; ingest with --in-edges",
                self.dir.display()
            )));
        }
        let offsets: Vec<u64> = self
            .layout(&format!("csr.{dir}.offsets"), FileKind::CsrOffsets)?
            .read_all()?;
        let targets = self.layout(&format!("csr.{dir}.targets"), FileKind::CsrTargets)?;
        let weights = if self.weighted() {
            Some(self.layout(&format!("csr.{dir}.weights"), FileKind::CsrWeights)?)
        } else {
            None
        };
        if offsets.len() as u64 != self.vertices() + 1
            || offsets.last() != Some(&targets.header.count)
        {
            return Err(corrupt(
                targets.file.path(),
                "offsets do not match the number of targets",
            ));
        }
        Ok(CsrReader {
            offsets,
            targets,
            weights,
        })
    }

    /// Out-degrees (`"out"`) or in-degrees (`"in"`), checksum-verified.
    /// Reads the degrees (`out` or `in`) into `out`, one entry per vertex (a
    /// mapped vertex array, say: nothing else is allocated).
    pub fn degrees_into(&self, dir: &str, out: &mut [u32]) -> Result<()> {
        if out.len() as u64 != self.vertices() {
            return Err(corrupt(
                self.dir.join(format!("degrees.{dir}")),
                "wrong number of entries",
            ));
        }
        self.layout(&format!("degrees.{dir}"), FileKind::Degrees)?
            .read_all_into(out)
    }

    pub fn degrees(&self, dir: &str) -> Result<Vec<u32>> {
        let d: Vec<u32> = self
            .layout(&format!("degrees.{dir}"), FileKind::Degrees)?
            .read_all()?;
        if d.len() as u64 != self.vertices() {
            return Err(corrupt(
                self.dir.join(format!("degrees.{dir}")),
                "wrong number of entries",
            ));
        }
        Ok(d)
    }

    /// [`Store::degrees`] without a copy: the file is mapped read-only and
    /// its checksum computed over the mapping (the kernel asked to read it
    /// ahead first), so the degrees stay in the page cache rather than in
    /// 4 bytes a vertex of the process's own memory. Kronecker 22 in the
    /// page cache: 26-30 ms a direction read into a vector, about 4 ms
    /// mapped.
    pub fn degrees_mapped(&self, dir: &str) -> Result<Mapped<u32>> {
        let name = format!("degrees.{dir}");
        let lf = self.per_vertex::<u32>(&name, FileKind::Degrees)?;
        let m = Mapped::<u32>::new(self.dir.join(&name), self.vertices() as usize)?;
        if let Backing::File { map, .. } = &*m.0 {
            let _ = map.advise(memmap2::Advice::WillNeed);
        }
        // The checksum pass reads the payload once, in sequence: counted as
        // one read, as the copy it replaces was.
        self.stats.add_read(lf.header.payload_len);
        if crc32fast::hash(bytemuck::cast_slice(&m)) != lf.header.crc {
            return Err(corrupt(
                self.dir.join(&name),
                "checksum mismatch: the payload is damaged",
            ));
        }
        Ok(m)
    }

    /// The map between dense ids and the user's ids. A remapped store's
    /// `idmap` (and a relabelled store's `idmap.order`) is read through once to
    /// check its checksum, then memory-mapped: its pages belong to the page
    /// cache, which a hard memory limit reclaims, so a run's `--memory` never
    /// pays 8 bytes a vertex for its ids. A relabelled store written before
    /// `idmap.order` existed gets the order computed in memory
    /// ([`IdMap::resident_bytes`] says how much).
    pub fn id_map(&self) -> Result<IdMap> {
        if !self.manifest.remapped {
            return Ok(IdMap::Offset {
                base: self.manifest.id_base,
                n: self.vertices(),
            });
        }
        let ids = self.mapped_ids::<u64>("idmap", FileKind::IdMap)?;
        if self.manifest.file("idmap.order").is_none() {
            // Ascending ids need no order; an older relabelled store's is built here.
            return IdMap::from_ids(ids).map_err(|why| corrupt(self.dir.join("idmap"), why));
        }
        let by_user = self.mapped_ids::<u32>("idmap.order", FileKind::IdOrder)?;
        // The checksums cover damage; this guards the lookups' indexing.
        let n = ids.len();
        if n > 0 && (by_user[0] as usize >= n || by_user[n - 1] as usize >= n) {
            return Err(corrupt(
                self.dir.join("idmap.order"),
                "names a vertex the store does not have",
            ));
        }
        Ok(IdMap::Permuted { ids, by_user })
    }

    /// A remapped store's `name`, checked against the manifest and its
    /// checksum, then mapped read-only.
    fn mapped_ids<T: bytemuck::Pod>(&self, name: &str, kind: FileKind) -> Result<Mapped<T>> {
        self.per_vertex::<T>(name, kind)?.verify()?;
        Mapped::new(self.dir.join(name), self.vertices() as usize)
    }

    /// The store's file `name` of one `T` per vertex, its entries counted.
    fn per_vertex<T: bytemuck::Pod>(&self, name: &str, kind: FileKind) -> Result<LayoutFile> {
        let lf = self.layout(name, kind)?;
        if lf.elements::<T>()? as u64 != self.vertices() {
            return Err(corrupt(self.dir.join(name), "wrong number of entries"));
        }
        Ok(lf)
    }

    /// Streams every file and checks its checksum; one result per file.
    pub fn verify(&self) -> Vec<(String, Result<()>)> {
        let mut out = Vec::new();
        for rec in &self.manifest.files {
            let kind = match crate::format::FileKind::from_name(&rec.kind) {
                Some(k) => k,
                None => {
                    out.push((
                        rec.name.clone(),
                        Err(corrupt(
                            self.dir.join(&rec.name),
                            format!("unknown kind {:?}", rec.kind),
                        )),
                    ));
                    continue;
                }
            };
            let r = LayoutFile::open(&self.dir, rec, kind, self.mode, self.stats.clone())
                .and_then(|f| f.verify());
            out.push((rec.name.clone(), r));
        }
        if out.iter().all(|(_, r)| r.is_ok()) {
            if let Err(e) = self.grid().and_then(|g| g.verify_blocks()) {
                out.push(("grid.data (blocks)".into(), Err(e)));
            }
        }
        out
    }
}

/// A store's array of `T` per vertex: memory-mapped from its file (the
/// payload after the 4096-byte header, so aligned), or held in memory (an
/// ingest's own map, tests). Cloning shares it.
#[derive(Clone)]
pub struct Mapped<T: bytemuck::Pod>(Arc<Backing<T>>);

enum Backing<T> {
    Owned(Vec<T>),
    File { map: memmap2::Mmap, len: usize },
}

impl<T: bytemuck::Pod> Mapped<T> {
    /// Maps `len` elements of `T` after `path`'s header.
    fn new(path: PathBuf, len: usize) -> Result<Mapped<T>> {
        let file = std::fs::File::open(&path)
            .map_err(|e| StoreError::Io(outcore_io::IoError::new(&path, "open", e)))?;
        let bytes = HEADER_LEN as usize + len * std::mem::size_of::<T>();
        if len == 0 {
            return Ok(Mapped(Arc::new(Backing::Owned(Vec::new()))));
        }
        // SAFETY: a read-only shared mapping of a store file, which outcore
        // never writes in place (files are replaced by rename); its length was
        // checked against the manifest and its payload's checksum just now.
        let map = unsafe { memmap2::MmapOptions::new().len(bytes).map(&file) }
            .map_err(|e| StoreError::Io(outcore_io::IoError::new(&path, "mmap", e)))?;
        if map.len() < bytes {
            return Err(corrupt(&path, "shorter than its entries"));
        }
        Ok(Mapped(Arc::new(Backing::File { map, len })))
    }

    /// Bytes of memory it holds itself (0 when mapped: page cache).
    pub fn resident_bytes(&self) -> u64 {
        match &*self.0 {
            Backing::Owned(v) => std::mem::size_of_val(v.as_slice()) as u64,
            Backing::File { .. } => 0,
        }
    }
}

impl<T: bytemuck::Pod> From<Vec<T>> for Mapped<T> {
    fn from(v: Vec<T>) -> Mapped<T> {
        Mapped(Arc::new(Backing::Owned(v)))
    }
}

impl<T: bytemuck::Pod> std::ops::Deref for Mapped<T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        match &*self.0 {
            Backing::Owned(v) => v,
            Backing::File { map, len } => {
                let size = std::mem::size_of::<T>();
                // Page-aligned mapping + a 4096-byte header: aligned for any T.
                bytemuck::cast_slice(&map[HEADER_LEN as usize..HEADER_LEN as usize + len * size])
            }
        }
    }
}

impl<T: bytemuck::Pod + std::fmt::Debug> std::fmt::Debug for Mapped<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Mapped({} entries)", self.len())
    }
}

/// Dense id <-> user id.
#[derive(Debug, Clone)]
pub enum IdMap {
    /// user id = dense id + base.
    Offset { base: u64, n: u64 },
    /// user id = ids[dense]; ascending.
    Map(Mapped<u64>),
    /// A relabelled store (`outcore reorder`): user id = ids[dense], in any order;
    /// `by_user` lists the dense ids by ascending user id.
    Permuted {
        ids: Mapped<u64>,
        by_user: Mapped<u32>,
    },
}

impl IdMap {
    /// The map of a remapped store from its user ids by dense id: ascending ids
    /// give [`IdMap::Map`], others (a relabelled store) [`IdMap::Permuted`]; a
    /// user id listed twice is refused with the reason.
    pub fn from_user_ids(ids: Vec<u64>) -> std::result::Result<IdMap, &'static str> {
        IdMap::from_ids(ids.into())
    }

    fn from_ids(ids: Mapped<u64>) -> std::result::Result<IdMap, &'static str> {
        if ids.windows(2).all(|w| w[0] < w[1]) {
            return Ok(IdMap::Map(ids));
        }
        let by_user = user_order_of(&ids)?;
        Ok(IdMap::Permuted {
            ids,
            by_user: by_user.into(),
        })
    }

    /// Bytes of memory the map holds itself rather than through the page
    /// cache: 0 for a store's mapped files; 4 per vertex for a relabelled
    /// store without `idmap.order` (written before it existed), whose order
    /// is computed in memory.
    pub fn resident_bytes(&self) -> u64 {
        match self {
            IdMap::Offset { .. } => 0,
            IdMap::Map(ids) => ids.resident_bytes(),
            IdMap::Permuted { ids, by_user } => ids.resident_bytes() + by_user.resident_bytes(),
        }
    }

    pub fn to_user(&self, dense: u32) -> u64 {
        match self {
            IdMap::Offset { base, .. } => dense as u64 + base,
            IdMap::Map(ids) | IdMap::Permuted { ids, .. } => ids[dense as usize],
        }
    }
    pub fn to_dense(&self, user: u64) -> Option<u32> {
        match self {
            IdMap::Offset { base, n } => {
                user.checked_sub(*base).filter(|d| d < n).map(|d| d as u32)
            }
            IdMap::Map(ids) => ids.binary_search(&user).ok().map(|d| d as u32),
            IdMap::Permuted { ids, by_user } => by_user
                .binary_search_by_key(&user, |&d| ids[d as usize])
                .ok()
                .map(|k| by_user[k]),
        }
    }
    /// Dense ids in ascending user-id order, when that is not simply `0..n`.
    pub fn user_order(&self) -> Option<&[u32]> {
        match self {
            IdMap::Permuted { by_user, .. } => Some(by_user),
            _ => None,
        }
    }
}

/// The dense ids by ascending user id (`idmap.order`); a user id listed twice
/// is refused with the reason.
pub(crate) fn user_order_of(ids: &[u64]) -> std::result::Result<Vec<u32>, &'static str> {
    let mut by_user: Vec<u32> = (0..ids.len() as u32).collect();
    by_user.sort_unstable_by_key(|&d| ids[d as usize]);
    if by_user
        .windows(2)
        .any(|w| ids[w[0] as usize] == ids[w[1] as usize])
    {
        return Err("a user id appears twice");
    }
    Ok(by_user)
}

/// Reads grid blocks.
pub struct GridReader {
    index: Vec<BlockEntry>,
    data: LayoutFile,
    p: u32,
    weighted: bool,
    interval: u64,
    n: u64,
}

impl GridReader {
    /// The share of `grid.data` the page cache holds now (0 when read
    /// with `O_DIRECT`).
    pub fn cached_fraction(&self) -> f64 {
        self.data.cached_fraction()
    }

    pub fn partitions(&self) -> u32 {
        self.p
    }
    pub fn entry(&self, row: u32, col: u32) -> &BlockEntry {
        &self.index[(row * self.p + col) as usize]
    }
    pub fn entries(&self) -> &[BlockEntry] {
        &self.index
    }
    fn path(&self) -> &Path {
        self.data.file.path()
    }
    /// First vertex and length of interval `i`.
    fn span(&self, i: u32) -> (u32, u32) {
        let r = interval_range(i, self.interval, self.n);
        (r.start, r.end - r.start)
    }
    /// Decodes `out.len()` targets of block (`row`, `col`) starting at stream bit
    /// `bit` of `words`, and checks them against the column's interval.
    fn targets(
        &self,
        (row, col): (u32, u32),
        sh: &Shape,
        words: &[u32],
        bit: u64,
        out: &mut [u32],
    ) -> Result<()> {
        let (col_lo, col_len) = self.span(col);
        let top = codec::unpack_at(words, bit, sh.id_bits, col_lo, out)
            .ok_or_else(|| self.damaged(row, col, "targets section is short"))?;
        if top >= col_len {
            return Err(self.damaged(row, col, "a target lies outside the block's interval"));
        }
        Ok(())
    }
    fn damaged(&self, row: u32, col: u32, what: &str) -> StoreError {
        corrupt(self.path(), format!("block ({row}, {col}): {what}"))
    }

    /// Reads a whole block (weights too, when `with_weights` and the store has them),
    /// checking its checksums and structure.
    pub fn read_block(&self, row: u32, col: u32, with_weights: bool) -> Result<Block> {
        let mut raw = RawBlock::default();
        self.read_block_into(row, col, with_weights, &mut raw)?;
        Ok(Block {
            row,
            col,
            srcs: raw.srcs().to_vec(),
            offs: raw.offs().to_vec(),
            dsts: raw.dsts().to_vec(),
            weights: raw.weights().map(|w| w.to_vec()),
        })
    }

    /// Calls `f(u, v, w)` for every edge, blocks in row-major order (w = 1.0 unless
    /// read with weights), reading each block once with its checks; stops at the
    /// first error `f` returns.
    pub fn try_for_each_edge<E: From<StoreError>>(
        &self,
        with_weights: bool,
        mut f: impl FnMut(u32, u32, f32) -> std::result::Result<(), E>,
    ) -> std::result::Result<(), E> {
        let mut b = RawBlock::default();
        for r in 0..self.p {
            for c in 0..self.p {
                self.read_block_into(r, c, with_weights, &mut b)?;
                let (srcs, offs, dsts, ws) = (b.srcs(), b.offs(), b.dsts(), b.weights());
                for (k, &u) in srcs.iter().enumerate() {
                    for x in offs[k] as usize..offs[k + 1] as usize {
                        f(u, dsts[x], ws.map_or(1.0, |w| w[x]))?;
                    }
                }
            }
        }
        Ok(())
    }

    /// Bytes [`GridReader::read_block_into`] reads for block (`row`, `col`).
    pub fn block_read_bytes(&self, row: u32, col: u32, with_weights: bool) -> u64 {
        self.entry(row, col)
            .shape()
            .block_bytes(self.weighted && with_weights)
    }

    /// Bytes a [`RawBlock`] holds for block (`row`, `col`): the packed bytes read
    /// plus the decoded topology (4 bytes per edge, 8 per source).
    pub fn block_memory_bytes(&self, row: u32, col: u32, with_weights: bool) -> u64 {
        let e = self.entry(row, col);
        self.block_read_bytes(row, col, with_weights)
            + if e.edges == 0 {
                0
            } else {
                4 * (2 * e.sources as u64 + 1 + e.edges)
            }
    }

    /// Bytes a [`RawBlock`] of block (`row`, `col`) holds once
    /// [`RawBlock::compact`]ed: its decoded topology, the packed bytes when
    /// they carry weights, and one aligned page otherwise.
    pub fn block_held_bytes(&self, row: u32, col: u32, with_weights: bool) -> u64 {
        let e = self.entry(row, col);
        if e.edges == 0 {
            return outcore_io::ALIGN as u64;
        }
        let packed = if self.weighted && with_weights {
            self.block_read_bytes(row, col, true)
                .div_ceil(outcore_io::ALIGN as u64)
                * outcore_io::ALIGN as u64
                + outcore_io::ALIGN as u64
        } else {
            outcore_io::ALIGN as u64
        };
        packed + 4 * (2 * e.sources as u64 + 1 + e.edges)
    }

    /// Reads a whole block into `buf` (reusing its memory), checking checksums and
    /// structure like [`GridReader::read_block`], and decodes its topology.
    pub fn read_block_into(
        &self,
        row: u32,
        col: u32,
        with_weights: bool,
        buf: &mut RawBlock,
    ) -> Result<()> {
        let e = *self.entry(row, col);
        let want_w = self.weighted && with_weights;
        buf.row = row;
        buf.col = col;
        buf.weighted = want_w;
        buf.s = e.sources as usize;
        buf.e = e.edges as usize;
        buf.start = 0;
        buf.topo = 0;
        if e.edges == 0 {
            buf.s = 0;
            return Ok(());
        }
        let sh = e.shape();
        let len = sh.block_bytes(want_w) as usize;
        buf.start = self.data.read_payload_into(e.offset, len, &mut buf.buf)?;
        if !buf.start.is_multiple_of(4) {
            return Err(self.damaged(row, col, "block offset is not a multiple of 4"));
        }
        let topo = sh.topology_bytes() as usize;
        buf.topo = topo;
        let bytes: &[u8] = &buf.buf.as_slice()[buf.start..buf.start + len];
        if crc32fast::hash(&bytes[..topo]) != e.crc_topology {
            return Err(self.damaged(row, col, "checksum mismatch: the block is damaged"));
        }
        if want_w && crc32fast::hash(&bytes[topo..]) != e.crc_weights {
            return Err(self.damaged(row, col, "weights checksum mismatch: the block is damaged"));
        }
        let (s, m) = (buf.s, buf.e);
        if buf.dec.len() < 2 * s + 1 + m {
            buf.dec.resize(2 * s + 1 + m, 0);
        }
        let words: &[u32] = bytemuck::cast_slice(&bytes[..topo]);
        let (srcs, rest) = buf.dec.split_at_mut(s);
        let (offs, dsts) = rest.split_at_mut(s + 1);
        self.decode(row, col, &sh, words, srcs, offs)?;
        let w0 = (sh.source_words() + sh.offset_words()) as usize;
        self.targets((row, col), &sh, &words[w0..], 0, &mut dsts[..m])
    }

    /// Decodes and checks a block's index (`words` from the block's first word):
    /// sources ascending inside the row's interval, offsets from 0 to `e` strictly
    /// ascending.
    fn decode(
        &self,
        row: u32,
        col: u32,
        sh: &Shape,
        words: &[u32],
        srcs: &mut [u32],
        offs: &mut [u32],
    ) -> Result<()> {
        let (row_lo, row_len) = self.span(row);
        let ws = sh.source_words() as usize;
        let short = || self.damaged(row, col, "index section is short");
        let top = codec::unpack_into(&words[..ws.min(words.len())], 0, sh.id_bits, row_lo, srcs)
            .ok_or_else(short)?;
        codec::unpack_into(&words[ws.min(words.len())..], 0, sh.off_bits, 0, offs)
            .ok_or_else(short)?;
        if top >= row_len
            || offs[0] != 0
            || offs[srcs.len()] as u64 != sh.edges
            || offs.windows(2).any(|w| w[0] >= w[1])
            || srcs.windows(2).any(|w| w[0] >= w[1])
        {
            return Err(self.damaged(row, col, "inconsistent source index"));
        }
        Ok(())
    }

    /// The blocks of grid row `row` (sources in interval `row`), in column order.
    pub fn row(&self, row: u32, with_weights: bool) -> impl Iterator<Item = Result<Block>> + '_ {
        (0..self.p).map(move |c| self.read_block(row, c, with_weights))
    }

    /// The blocks of grid column `col` (targets in interval `col`), in row order.
    pub fn column(&self, col: u32, with_weights: bool) -> impl Iterator<Item = Result<Block>> + '_ {
        (0..self.p).map(move |r| self.read_block(r, col, with_weights))
    }

    /// Reads only the runs of the sources in `sources` (ascending) from a block: the
    /// block's per-source index, then one read per group of adjacent runs.
    pub fn read_sources(
        &self,
        row: u32,
        col: u32,
        sources: &[u32],
        with_weights: bool,
    ) -> Result<Block> {
        self.read_sources_merged(row, col, sources, with_weights, 0)
    }

    /// Like [`GridReader::read_sources`], but runs separated by at most `max_gap`
    /// bytes of unwanted targets are read in one request (the unwanted part is
    /// discarded): fewer, larger requests for a few more bytes.
    pub fn read_sources_merged(
        &self,
        row: u32,
        col: u32,
        sources: &[u32],
        with_weights: bool,
        max_gap: u64,
    ) -> Result<Block> {
        let e = *self.entry(row, col);
        let mut out = Block {
            row,
            col,
            offs: vec![0],
            ..Default::default()
        };
        let want_w = self.weighted && with_weights;
        if want_w {
            out.weights = Some(Vec::new());
        }
        if e.edges == 0 || sources.is_empty() {
            return Ok(out);
        }
        let s = e.sources as usize;
        let sh = e.shape();
        let mut idx = vec![0u32; ((sh.index_bytes()) / 4) as usize];
        self.data
            .read_payload(e.offset, bytemuck::cast_slice_mut(&mut idx))?;
        let (mut srcs, mut offs) = (vec![0u32; s], vec![0u32; s + 1]);
        self.decode(row, col, &sh, &idx, &mut srcs, &mut offs)?;
        let bits = sh.id_bits as u64;
        let dst_base = e.offset + sh.index_bytes();
        let w_base = dst_base + 4 * sh.target_words();
        let mut picked: Vec<usize> = Vec::new();
        for &v in sources {
            if let Ok(k) = srcs.binary_search(&v) {
                picked.push(k);
            }
        }
        // Group adjacent runs (consecutive k, or a gap of at most `max_gap` bytes)
        // into one read each.
        let mut g = 0;
        let mut words: Vec<u32> = Vec::new();
        while g < picked.len() {
            let mut h = g + 1;
            while h < picked.len()
                && (picked[h] == picked[h - 1] + 1
                    || (bits
                        * (offs[picked[h]] as u64).saturating_sub(offs[picked[h - 1] + 1] as u64))
                    .div_ceil(8)
                        <= max_gap)
            {
                h += 1;
            }
            let (a, b) = (offs[picked[g]] as u64, offs[picked[h - 1] + 1] as u64);
            if a >= b || b > e.edges {
                return Err(self.damaged(row, col, "inconsistent source index"));
            }
            // The words holding target bits [a * bits, b * bits).
            let (w0, w1) = (a * bits / 32, (b * bits).div_ceil(32));
            words.clear();
            words.resize((w1 - w0) as usize, 0);
            self.data
                .read_payload(dst_base + 4 * w0, bytemuck::cast_slice_mut(&mut words))?;
            let mut d = vec![0u32; (b - a) as usize];
            self.targets((row, col), &sh, &words, a * bits - 32 * w0, &mut d)?;
            let mut w = Vec::new();
            if want_w {
                w = vec![0f32; (b - a) as usize];
                self.data
                    .read_payload(w_base + 4 * a, bytemuck::cast_slice_mut(&mut w))?;
            }
            for &k in &picked[g..h] {
                out.srcs.push(srcs[k]);
                let (x, y) = (
                    (offs[k] as u64 - a) as usize,
                    (offs[k + 1] as u64 - a) as usize,
                );
                out.dsts.extend_from_slice(&d[x..y]);
                if let Some(ow) = &mut out.weights {
                    ow.extend_from_slice(&w[x..y]);
                }
                out.offs.push(out.dsts.len() as u32);
            }
            g = h;
        }
        Ok(out)
    }

    /// Reads every block, checking checksums and structure.
    pub fn verify_blocks(&self) -> Result<()> {
        for r in 0..self.p {
            for c in 0..self.p {
                self.read_block(r, c, true)?;
            }
        }
        Ok(())
    }
}

/// Reads one vertex's edge list from the CSR. The offsets are held in memory.
pub struct CsrReader {
    offsets: Vec<u64>,
    targets: LayoutFile,
    weights: Option<LayoutFile>,
}

impl CsrReader {
    pub fn degree(&self, v: u32) -> u64 {
        self.offsets[v as usize + 1] - self.offsets[v as usize]
    }
    pub fn offsets(&self) -> &[u64] {
        &self.offsets
    }
    /// The offsets (n + 1, checked against the targets' count), the files dropped.
    pub fn into_offsets(self) -> Vec<u64> {
        self.offsets
    }
    /// The targets of edges `a..b` in CSR order (the edge lists of consecutive
    /// vertices), read in one request.
    pub fn targets(&self, a: u64, b: u64) -> Result<Vec<u32>> {
        let total = *self.offsets.last().unwrap_or(&0);
        if a > b || b > total {
            return Err(StoreError::Invalid(format!(
                "edge range {a}..{b} is outside the CSR's {total} edges"
            )));
        }
        let mut t = vec![0u32; (b - a) as usize];
        self.targets
            .read_payload(a * 4, bytemuck::cast_slice_mut(&mut t))?;
        Ok(t)
    }

    /// The targets (and weights, when stored) of `v`'s edges, sorted by target.
    pub fn edges(&self, v: u32) -> Result<(Vec<u32>, Option<Vec<f32>>)> {
        if v as usize + 1 >= self.offsets.len() {
            return Err(StoreError::Invalid(format!(
                "vertex {v} is not in the store"
            )));
        }
        let (a, b) = (self.offsets[v as usize], self.offsets[v as usize + 1]);
        let mut t = vec![0u32; (b - a) as usize];
        self.targets
            .read_payload(a * 4, bytemuck::cast_slice_mut(&mut t))?;
        let w = match &self.weights {
            Some(wf) => {
                let mut w = vec![0f32; (b - a) as usize];
                wf.read_payload(a * 4, bytemuck::cast_slice_mut(&mut w))?;
                Some(w)
            }
            None => None,
        };
        Ok((t, w))
    }
}
