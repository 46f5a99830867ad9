//! Page-group checksums of the CSR files (store version 4).
//!
//! The vertex-centric engine (BAsC, ATC'19 §2.1) reads `csr.DIR.targets` and
//! `csr.DIR.weights` a few pages at a time, so the one CRC of a file's payload in its
//! header cannot be checked on those reads: an in-range flipped target would give a
//! wrong answer. Beside each such file the store keeps `NAME.sums` (kind
//! `page-sums`): the CRC-32 (IEEE) of every [`SUM_GROUP`]-byte group of the payload,
//! in order, the last group possibly short; count = groups. It is written while the
//! data file is written ([`SummedWriter`]), so no extra pass is needed.
//!
//! Invariant: a reader that holds a [`PageSums`] checks every group its read covers
//! ([`PageSums::check`]); reads are widened to whole groups ([`PageSums::span`]),
//! so every byte served was checked. A mismatch names the file, the group and its
//! byte range. The sums cost 4 bytes per 4 KiB of CSR in memory while checked.

use crate::error::{corrupt, Result};
use crate::format::{FileKind, FileRecord, LayoutFile, LayoutWriter, HEADER_LEN};
use crate::Store;
use outcore_io::IoStats;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Bytes of payload per checksum.
pub const SUM_GROUP: u64 = 4096;

/// Groups of a payload of `payload` bytes.
pub fn groups(payload: u64) -> u64 {
    payload.div_ceil(SUM_GROUP)
}

/// The name of the sums file of data file `name`.
pub fn sums_name(name: &str) -> String {
    format!("{name}.sums")
}

/// A layout file written by appending, with its page-group checksums written
/// beside it as `NAME.sums`.
pub struct SummedWriter {
    data: LayoutWriter,
    sums: LayoutWriter,
    cur: crc32fast::Hasher,
    fill: u64,
    pending: Vec<u32>,
    groups: u64,
}

impl SummedWriter {
    /// Writes `path` with O_DIRECT appends, its sums beside it as `NAME.sums`.
    pub fn create(path: &Path, kind: FileKind, stats: Arc<IoStats>) -> Result<SummedWriter> {
        let name = path
            .file_name()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        let sums_path = path.with_file_name(sums_name(&name));
        let data = LayoutWriter::create(path, kind, stats.clone())?;
        Self::with(data, &sums_path, stats)
    }

    /// Writes `path` through the page cache, its sums to `sums_path` (for writers
    /// that write under temporary names and rename both).
    pub fn create_buffered(
        path: &Path,
        sums_path: &Path,
        kind: FileKind,
        stats: Arc<IoStats>,
    ) -> Result<SummedWriter> {
        let data = LayoutWriter::create_buffered(path, kind, stats.clone())?;
        Self::with(data, sums_path, stats)
    }

    fn with(data: LayoutWriter, sums_path: &Path, stats: Arc<IoStats>) -> Result<SummedWriter> {
        Ok(SummedWriter {
            data,
            sums: LayoutWriter::create_buffered(sums_path, FileKind::PageSums, stats)?,
            cur: crc32fast::Hasher::new(),
            fill: 0,
            pending: Vec::with_capacity(1 << 14),
            groups: 0,
        })
    }

    pub fn append(&mut self, mut bytes: &[u8]) -> Result<()> {
        self.data.append(bytes)?;
        while !bytes.is_empty() {
            let k = ((SUM_GROUP - self.fill) as usize).min(bytes.len());
            self.cur.update(&bytes[..k]);
            self.fill += k as u64;
            bytes = &bytes[k..];
            if self.fill == SUM_GROUP {
                self.close_group()?;
            }
        }
        Ok(())
    }

    fn close_group(&mut self) -> Result<()> {
        let h = std::mem::take(&mut self.cur);
        self.pending.push(h.finalize());
        self.fill = 0;
        self.groups += 1;
        if self.pending.len() == self.pending.capacity() {
            self.sums.append(bytemuck::cast_slice(&self.pending))?;
            self.pending.clear();
        }
        Ok(())
    }

    /// Finishes the data file (`count` elements) and its sums: two records.
    pub fn finish(mut self, count: u64) -> Result<[FileRecord; 2]> {
        if self.fill > 0 {
            self.close_group()?;
        }
        self.sums.append(bytemuck::cast_slice(&self.pending))?;
        let data = self.data.finish(count)?;
        let sums = self.sums.finish(self.groups)?;
        Ok([data, sums])
    }
}

/// The page-group checksums of one data file, in memory.
pub struct PageSums {
    file: PathBuf,
    sums_file: String,
    sums: Vec<u32>,
    payload: u64,
}

impl PageSums {
    /// Loads the sums of the store's data file `name` (checked against its own
    /// CRC and against the data file's length).
    pub fn load(store: &Store, name: &str) -> Result<PageSums> {
        let sname = sums_name(name);
        let data = store
            .manifest()
            .file(name)
            .ok_or_else(|| corrupt(store.dir().join(name), "not listed in the manifest"))?;
        let payload = data.bytes.saturating_sub(HEADER_LEN);
        if store.manifest().file(&sname).is_none() {
            return Err(corrupt(
                store.dir().join(name),
                format!(
                    "has no page checksums ({sname} is not in the manifest): written by an older outcore; run `outcore partition` again for a V-Part layout, or ingest the graph again"
                ),
            ));
        }
        let lf = store.layout(&sname, FileKind::PageSums)?;
        let sums: Vec<u32> = lf.read_all()?;
        if sums.len() as u64 != groups(payload) || lf.header.count != sums.len() as u64 {
            return Err(corrupt(
                lf.file.path(),
                format!(
                    "{} checksums for the {} page groups of {name}",
                    sums.len(),
                    groups(payload)
                ),
            ));
        }
        Ok(PageSums {
            file: store.dir().join(name),
            sums_file: sname,
            sums,
            payload,
        })
    }

    /// Bytes held in memory.
    pub fn bytes(&self) -> u64 {
        self.sums.len() as u64 * 4
    }

    /// Payload bytes of the data file.
    pub fn payload(&self) -> u64 {
        self.payload
    }

    /// The payload range `a..b` widened to whole groups (the end clipped to the
    /// payload): read this much to check every byte of `a..b`.
    pub fn span(&self, a: u64, b: u64) -> (u64, u64) {
        let lo = a / SUM_GROUP * SUM_GROUP;
        let hi = b
            .div_ceil(SUM_GROUP)
            .saturating_mul(SUM_GROUP)
            .min(self.payload);
        (lo, hi.max(lo))
    }

    /// Reads payload bytes `a..b` of `file` (the data file these sums are of)
    /// widened to whole groups into `buf` (resized), checks every group, and
    /// returns where byte `a` lies in `buf`, in elements of `T` (whose size must
    /// divide the payload's length, as it does for the files that have sums).
    pub fn read_checked<T: bytemuck::Pod>(
        &self,
        file: &LayoutFile,
        a: u64,
        b: u64,
        buf: &mut Vec<T>,
    ) -> Result<usize> {
        let size = std::mem::size_of::<T>() as u64;
        let (lo, hi) = self.span(a, b);
        buf.resize(((hi - lo) / size) as usize, T::zeroed());
        file.read_payload(lo, bytemuck::cast_slice_mut(buf))?;
        self.check(lo, bytemuck::cast_slice(buf))?;
        Ok(((a - lo) / size) as usize)
    }

    /// Checks `bytes`, the whole of page group `g`.
    pub(crate) fn check_group(&self, g: u64, bytes: &[u8]) -> Result<()> {
        if crc32fast::hash(bytes) != self.sums[g as usize] {
            let lo = g * SUM_GROUP;
            let hi = lo + bytes.len() as u64;
            return Err(corrupt(
                &self.file,
                format!(
                    "checksum of page group {g} (payload bytes {lo}..{hi}) does not match {}: the data is damaged",
                    self.sums_file
                ),
            ));
        }
        Ok(())
    }

    /// Checks `buf`, the payload bytes from `at` (a multiple of [`SUM_GROUP`]):
    /// every group that `buf` holds whole (a short last group counts when `buf`
    /// reaches the end of the payload). Returns the bytes checked.
    pub fn check(&self, at: u64, buf: &[u8]) -> Result<u64> {
        debug_assert_eq!(at % SUM_GROUP, 0);
        let end = at + buf.len() as u64;
        let mut g = at / SUM_GROUP;
        let mut checked = 0;
        loop {
            let lo = g * SUM_GROUP;
            let hi = (lo + SUM_GROUP).min(self.payload);
            if lo >= self.payload || hi > end {
                return Ok(checked);
            }
            self.check_group(g, &buf[(lo - at) as usize..(hi - at) as usize])?;
            checked += hi - lo;
            g += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sums_of(data: &[u8]) -> Vec<u32> {
        data.chunks(SUM_GROUP as usize)
            .map(crc32fast::hash)
            .collect()
    }

    #[test]
    fn written_sums_match_the_groups_and_catch_a_flip() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("csr.out.targets");
        let data: Vec<u8> = (0..3 * SUM_GROUP as usize + 100)
            .map(|i| (i * 7 % 251) as u8)
            .collect();
        let mut w = SummedWriter::create(&path, FileKind::CsrTargets, IoStats::new()).unwrap();
        // Uneven appends cross group boundaries.
        for c in data.chunks(1000) {
            w.append(c).unwrap();
        }
        let [d, s] = w.finish(data.len() as u64 / 4).unwrap();
        assert_eq!(d.name, "csr.out.targets");
        assert_eq!(s.name, "csr.out.targets.sums");
        assert_eq!(s.count, 4);
        let raw = std::fs::read(dir.path().join(&s.name)).unwrap();
        let got: Vec<u32> = bytemuck::pod_collect_to_vec(&raw[HEADER_LEN as usize..]);
        assert_eq!(got, sums_of(&data));
        let ps = PageSums {
            file: path.clone(),
            sums_file: s.name.clone(),
            sums: got,
            payload: data.len() as u64,
        };
        assert_eq!(ps.check(0, &data).unwrap(), data.len() as u64);
        // A partial buffer checks only its whole groups.
        assert_eq!(ps.check(SUM_GROUP, &data[4096..9000]).unwrap(), SUM_GROUP);
        assert_eq!(ps.span(5000, 5004), (4096, 8192));
        assert_eq!(ps.span(12300, 12310), (12288, data.len() as u64));
        let mut bad = data.clone();
        bad[2 * 4096 + 17] ^= 4;
        let e = ps.check(0, &bad).unwrap_err().to_string();
        assert!(
            e.contains("page group 2 (payload bytes 8192..12288)"),
            "{e}"
        );
        assert!(e.contains("csr.out.targets.sums"), "{e}");
        // The short last group is checked when the buffer reaches the end.
        let mut bad = data.clone();
        let last = bad.len() - 1;
        bad[last] ^= 1;
        assert!(ps.check(3 * SUM_GROUP, &bad[3 * 4096..]).is_err());
    }
}
