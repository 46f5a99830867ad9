//! The common header of every store file and checksummed layout writers/readers.
//!
//! Every store file is a 4096-byte header followed by its payload (so payloads are
//! page aligned, as O_DIRECT and the vertex-centric engine want):
//!
//! | offset | size | field |
//! |---|---|---|
//! | 0 | 8 | magic `OUTCORE\0` |
//! | 8 | 4 | format version (u32 LE, currently 2) |
//! | 12 | 4 | file kind (u32 LE, see [`FileKind`]) |
//! | 16 | 8 | payload length in bytes (u64 LE) |
//! | 24 | 8 | element count (u64 LE; meaning per kind) |
//! | 32 | 4 | CRC-32 (IEEE) of the payload |
//! | 36 | 4 | CRC-32 of header bytes 0..36 |
//! | 40 | 4056 | zero |
//!
//! Invariant: a file whose header CRC, kind, version or length does not match is
//! refused with a [`StoreError::Corrupt`] naming the file and the reason.

use crate::error::{corrupt, Result};
use outcore_io::{AlignedBuf, InFile, IoStats, OutFile, ReadMode};
use std::path::Path;
use std::sync::Arc;

pub const MAGIC: &[u8; 8] = b"OUTCORE\0";
pub const FORMAT_VERSION: u32 = 2;
pub const HEADER_LEN: u64 = 4096;

/// What a store file holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u32)]
pub enum FileKind {
    GridIndex = 1,
    GridData = 2,
    CsrOffsets = 3,
    CsrTargets = 4,
    CsrWeights = 5,
    Degrees = 6,
    IdMap = 7,
    /// A derived edge list in a user-defined order (the streaming engine's `sort`).
    SortedEdges = 8,
    /// A static-cache selection: vertex ids, most wanted first (`select-cache`).
    CacheSelection = 9,
    /// The edge lists of a saved selection, packed in ascending vertex id: every
    /// target (u32), then, for a weighted store, every weight (f32); count = edges.
    CacheLists = 10,
    /// V-Part segment starts of every partition's source table (`vpart.index`).
    VpartIndex = 11,
    /// A V-Part partition's destinations: dense ids, then out-degrees.
    VpartDests = 12,
    /// A V-Part source table: (dense id, edge count) per mirror.
    VpartSources = 13,
    /// A V-Part partition's edges: local target (+ weight) per edge.
    VpartEdges = 14,
    /// A V-Part partition's mirror masks: u64 per destination.
    VpartMirrors = 15,
    /// CRC-32 of every [`SUM_GROUP`]-byte group of another file's payload
    /// (`csr.DIR.targets.sums`, `csr.DIR.weights.sums`); count = groups.
    PageSums = 16,
    /// A relabelled store's dense ids by ascending user id (`idmap.order`, u32 each).
    IdOrder = 17,
}

impl FileKind {
    pub fn from_u32(v: u32) -> Option<FileKind> {
        use FileKind::*;
        Some(match v {
            1 => GridIndex,
            2 => GridData,
            3 => CsrOffsets,
            4 => CsrTargets,
            5 => CsrWeights,
            6 => Degrees,
            7 => IdMap,
            8 => SortedEdges,
            9 => CacheSelection,
            10 => CacheLists,
            11 => VpartIndex,
            12 => VpartDests,
            13 => VpartSources,
            14 => VpartEdges,
            15 => VpartMirrors,
            16 => PageSums,
            17 => IdOrder,
            _ => return None,
        })
    }
    pub fn from_name(name: &str) -> Option<FileKind> {
        (1..=17)
            .filter_map(FileKind::from_u32)
            .find(|k| k.name() == name)
    }
    pub fn name(self) -> &'static str {
        use FileKind::*;
        match self {
            GridIndex => "grid-index",
            GridData => "grid-data",
            CsrOffsets => "csr-offsets",
            CsrTargets => "csr-targets",
            CsrWeights => "csr-weights",
            Degrees => "degrees",
            IdMap => "idmap",
            SortedEdges => "sorted-edges",
            CacheSelection => "cache-selection",
            CacheLists => "cache-lists",
            VpartIndex => "vpart-index",
            VpartDests => "vpart-dests",
            VpartSources => "vpart-sources",
            VpartEdges => "vpart-edges",
            VpartMirrors => "vpart-mirrors",
            PageSums => "page-sums",
            IdOrder => "id-order",
        }
    }
}

/// The decoded header of a store file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    pub kind: FileKind,
    pub payload_len: u64,
    pub count: u64,
    pub crc: u32,
}

impl Header {
    pub fn encode(&self) -> Vec<u8> {
        let mut h = vec![0u8; HEADER_LEN as usize];
        h[0..8].copy_from_slice(MAGIC);
        h[8..12].copy_from_slice(&FORMAT_VERSION.to_le_bytes());
        h[12..16].copy_from_slice(&(self.kind as u32).to_le_bytes());
        h[16..24].copy_from_slice(&self.payload_len.to_le_bytes());
        h[24..32].copy_from_slice(&self.count.to_le_bytes());
        h[32..36].copy_from_slice(&self.crc.to_le_bytes());
        let hc = crc32fast::hash(&h[0..36]);
        h[36..40].copy_from_slice(&hc.to_le_bytes());
        h
    }

    /// Decodes and checks a header read from `file` (whose total length is `file_len`).
    pub fn decode(file: &Path, h: &[u8], file_len: u64) -> Result<Header> {
        if h.len() < 40 || &h[0..8] != MAGIC {
            return Err(corrupt(file, "bad magic: not an outcore store file"));
        }
        let u32_at = |o: usize| u32::from_le_bytes(h[o..o + 4].try_into().unwrap());
        let u64_at = |o: usize| u64::from_le_bytes(h[o..o + 8].try_into().unwrap());
        if crc32fast::hash(&h[0..36]) != u32_at(36) {
            return Err(corrupt(
                file,
                "header checksum mismatch (the header is damaged)",
            ));
        }
        let version = u32_at(8);
        if version != FORMAT_VERSION {
            return Err(corrupt(
                file,
                format!(
                    "format version {version}, but this outcore reads version {FORMAT_VERSION}"
                ),
            ));
        }
        let kind = FileKind::from_u32(u32_at(12))
            .ok_or_else(|| corrupt(file, format!("unknown file kind {}", u32_at(12))))?;
        let payload_len = u64_at(16);
        if HEADER_LEN + payload_len != file_len {
            return Err(corrupt(
                file,
                format!(
                    "truncated or extended: header says {} bytes, file has {file_len}",
                    HEADER_LEN + payload_len
                ),
            ));
        }
        Ok(Header {
            kind,
            payload_len,
            count: u64_at(24),
            crc: u32_at(32),
        })
    }
}

/// What the manifest records of each file.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct FileRecord {
    pub name: String,
    pub kind: String,
    pub bytes: u64,
    pub count: u64,
    pub crc32: u32,
}

/// Writes one layout file: header placeholder, payload appended (or positioned),
/// then the real header once the payload and its CRC are known.
pub struct LayoutWriter {
    out: OutFile,
    kind: FileKind,
    hasher: crc32fast::Hasher,
}

impl LayoutWriter {
    pub fn create(path: &Path, kind: FileKind, stats: Arc<IoStats>) -> Result<LayoutWriter> {
        let mut out = OutFile::create_direct(path, stats)?;
        out.write_all(&[0u8; HEADER_LEN as usize])?;
        Ok(LayoutWriter {
            out,
            kind,
            hasher: crc32fast::Hasher::new(),
        })
    }
    /// Like [`LayoutWriter::create`], through the page cache with a 1 MiB buffer
    /// instead of 8 MiB direct buffers (for writers that must stay small).
    pub fn create_buffered(
        path: &Path,
        kind: FileKind,
        stats: Arc<IoStats>,
    ) -> Result<LayoutWriter> {
        let mut out = OutFile::create(path, stats)?;
        out.write_all(&[0u8; HEADER_LEN as usize])?;
        Ok(LayoutWriter {
            out,
            kind,
            hasher: crc32fast::Hasher::new(),
        })
    }
    pub fn append(&mut self, data: &[u8]) -> Result<()> {
        self.hasher.update(data);
        Ok(self.out.write_all(data)?)
    }
    /// Payload bytes appended so far.
    pub fn payload_len(&self) -> u64 {
        self.out.position() - HEADER_LEN
    }
    /// Extends the payload to `len` bytes (sparse) for positioned writes.
    pub fn set_payload_len(&mut self, len: u64) -> Result<()> {
        Ok(self.out.set_len(HEADER_LEN + len)?)
    }
    /// Writes inside a reserved payload. The caller supplies the payload CRC at
    /// [`LayoutWriter::finish_with_crc`].
    pub fn write_payload_at(&mut self, offset: u64, data: &[u8]) -> Result<()> {
        Ok(self.out.write_at(HEADER_LEN + offset, data)?)
    }
    pub fn finish(self, count: u64) -> Result<FileRecord> {
        let crc = self.hasher.clone().finalize();
        self.finish_with_crc(count, crc)
    }
    pub fn finish_with_crc(mut self, count: u64, crc: u32) -> Result<FileRecord> {
        let payload_len = self.payload_len();
        let header = Header {
            kind: self.kind,
            payload_len,
            count,
            crc,
        };
        self.out.write_at(0, &header.encode())?;
        let name = self
            .out
            .path()
            .file_name()
            .unwrap()
            .to_string_lossy()
            .into_owned();
        let bytes = self.out.finish()?;
        Ok(FileRecord {
            name,
            kind: self.kind.name().into(),
            bytes,
            count,
            crc32: crc,
        })
    }
}

/// A layout file opened for reading, its header checked against the manifest.
pub struct LayoutFile {
    pub file: InFile,
    pub header: Header,
}

impl LayoutFile {
    pub fn open(
        dir: &Path,
        rec: &FileRecord,
        kind: FileKind,
        mode: ReadMode,
        stats: Arc<IoStats>,
    ) -> Result<LayoutFile> {
        let path = dir.join(&rec.name);
        if !path.exists() {
            return Err(corrupt(&path, "missing (listed in the manifest)"));
        }
        let file = InFile::open(&path, mode, stats)?;
        if file.len() < HEADER_LEN {
            return Err(corrupt(
                &path,
                format!(
                    "truncated: {} bytes, shorter than the {HEADER_LEN}-byte header",
                    file.len()
                ),
            ));
        }
        let mut h = vec![0u8; HEADER_LEN as usize];
        file.read_exact_at(0, &mut h)?;
        let header = Header::decode(&path, &h, file.len())?;
        if header.kind != kind {
            return Err(corrupt(
                &path,
                format!("holds {}, expected {}", header.kind.name(), kind.name()),
            ));
        }
        if file.len() != rec.bytes || header.crc != rec.crc32 || header.count != rec.count {
            return Err(corrupt(
                &path,
                format!(
                    "does not match the manifest (manifest: {} bytes, crc {:08x}; file: {} bytes, crc {:08x})",
                    rec.bytes,
                    rec.crc32,
                    file.len(),
                    header.crc
                ),
            ));
        }
        Ok(LayoutFile { file, header })
    }

    /// [`InFile::cached_fraction`]: the share of the file the page cache holds.
    pub fn cached_fraction(&self) -> f64 {
        self.file.cached_fraction()
    }

    /// [`InFile::will_need`] for payload bytes `offset..offset + len`.
    pub fn will_need(&self, offset: u64, len: u64) {
        self.file.will_need(HEADER_LEN + offset, len)
    }

    /// Reads `buf.len()` payload bytes at payload offset `offset`.
    pub fn read_payload(&self, offset: u64, buf: &mut [u8]) -> Result<()> {
        Ok(self.file.read_exact_at(HEADER_LEN + offset, buf)?)
    }

    /// Reads `len` payload bytes at payload offset `offset` into `buf` without a
    /// bounce copy ([`InFile::read_exact_into`]); returns where they start in it.
    pub fn read_payload_into(
        &self,
        offset: u64,
        len: usize,
        buf: &mut AlignedBuf,
    ) -> Result<usize> {
        Ok(self.file.read_exact_into(HEADER_LEN + offset, len, buf)?)
    }

    /// Reads the whole payload as a vector of `T`, checking the CRC.
    pub fn read_all<T: bytemuck::Pod>(&self) -> Result<Vec<T>> {
        let mut v: Vec<T> = vec![T::zeroed(); self.elements::<T>()?];
        self.read_all_into(&mut v)?;
        Ok(v)
    }

    /// The payload's length in elements of `T`.
    pub fn elements<T: bytemuck::Pod>(&self) -> Result<usize> {
        let size = std::mem::size_of::<T>() as u64;
        if !self.header.payload_len.is_multiple_of(size) {
            return Err(corrupt(
                self.file.path(),
                "payload length is not a whole number of elements",
            ));
        }
        Ok((self.header.payload_len / size) as usize)
    }

    /// Reads the whole payload into `out` (which may be a mapped array: nothing
    /// else is allocated), checking its length and CRC.
    pub fn read_all_into<T: bytemuck::Pod>(&self, out: &mut [T]) -> Result<()> {
        if out.len() != self.elements::<T>()? {
            return Err(corrupt(self.file.path(), "wrong number of entries"));
        }
        let bytes: &mut [u8] = bytemuck::cast_slice_mut(out);
        let mut h = crc32fast::Hasher::new();
        let mut off = 0usize;
        while off < bytes.len() {
            let n = (bytes.len() - off).min(4 << 20);
            self.read_payload(off as u64, &mut bytes[off..off + n])?;
            h.update(&bytes[off..off + n]);
            off += n;
        }
        if h.finalize() != self.header.crc {
            return Err(corrupt(
                self.file.path(),
                "checksum mismatch: the payload is damaged",
            ));
        }
        Ok(())
    }

    /// Streams the whole payload and checks its CRC against the header.
    pub fn verify(&self) -> Result<()> {
        let mut h = crc32fast::Hasher::new();
        // 1 MiB at a time: a run verifies its id map this way before its
        // budget is allocated, within the process's fixed 8 MiB.
        let mut buf = vec![0u8; 1 << 20];
        let mut off = 0u64;
        while off < self.header.payload_len {
            let n = (self.header.payload_len - off).min(buf.len() as u64) as usize;
            self.read_payload(off, &mut buf[..n])?;
            h.update(&buf[..n]);
            off += n as u64;
        }
        if h.finalize() != self.header.crc {
            return Err(corrupt(
                self.file.path(),
                "checksum mismatch: the payload is damaged",
            ));
        }
        Ok(())
    }
}
