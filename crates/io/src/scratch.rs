//! Scratch files: run-time state that lives on the disk rather than in memory
//! (the external engine's destination values and mirror tables, spill logs).
//!
//! Design: a [`ScratchFile`] is created in a work directory under a unique hidden
//! name and unlinked at once, so a killed process leaves nothing behind; it is
//! then read and written at explicit offsets (`pread`/`pwrite` through the page
//! cache). Every request is counted in the [`IoStats`] it was created with and
//! charged to the simulated free space of [`crate::fault`], like every store write.
//! Space is reserved up front with `posix_fallocate` where the filesystem allows,
//! so a full disk is reported when the file is created, not halfway through a run.

use crate::{fault, IoError, IoStats, Result};
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;

/// An unlinked file for positioned reads and writes of run-time state.
pub struct ScratchFile {
    /// The name it was created under (gone from the directory since).
    path: PathBuf,
    file: File,
    len: u64,
    stats: Arc<IoStats>,
}

impl ScratchFile {
    /// Creates a file of `len` bytes (reading as zeros) in `dir`; `name` makes
    /// the temporary name recognisable while it exists.
    pub fn create(dir: &Path, name: &str, len: u64, stats: Arc<IoStats>) -> Result<ScratchFile> {
        static SEQ: AtomicU64 = AtomicU64::new(0);
        let path = dir.join(format!(
            ".outcore-{name}-{}-{}.scratch",
            std::process::id(),
            SEQ.fetch_add(1, Relaxed)
        ));
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(&path)
            .map_err(|e| IoError::new(&path, "create scratch file", e))?;
        let _ = std::fs::remove_file(&path);
        if len > 0 {
            use std::os::fd::AsRawFd;
            // SAFETY: posix_fallocate on a descriptor we own, with valid arguments.
            let rc = unsafe { libc::posix_fallocate(file.as_raw_fd(), 0, len as libc::off_t) };
            if rc != 0 && rc != libc::EOPNOTSUPP && rc != libc::EINVAL {
                return Err(IoError::new(
                    &path,
                    "reserve space for scratch file",
                    std::io::Error::from_raw_os_error(rc),
                ));
            }
            file.set_len(len)
                .map_err(|e| IoError::new(&path, "extend scratch file", e))?;
        }
        Ok(ScratchFile {
            path,
            file,
            len,
            stats,
        })
    }

    /// Asks the kernel to start reading bytes `offset..offset + len` into the
    /// page cache ([`crate::InFile::will_need`]); nothing is counted as read.
    pub fn will_need(&self, offset: u64, len: u64) {
        crate::file::will_need(&self.file, offset, len)
    }
    pub fn len(&self) -> u64 {
        self.len
    }
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Reads exactly `buf.len()` bytes at `offset`.
    pub fn read_at(&self, offset: u64, buf: &mut [u8]) -> Result<()> {
        if buf.is_empty() {
            return Ok(());
        }
        if offset + buf.len() as u64 > self.len {
            return Err(IoError::new(
                &self.path,
                "read",
                std::io::Error::new(
                    std::io::ErrorKind::UnexpectedEof,
                    format!(
                        "scratch file has {} bytes, {} wanted at {offset}",
                        self.len,
                        buf.len()
                    ),
                ),
            ));
        }
        crate::cancel::check()
            .and_then(|_| self.file.read_exact_at(buf, offset))
            .map_err(|e| IoError::new(&self.path, "read", e))?;
        self.stats.add_read(buf.len() as u64);
        Ok(())
    }

    /// Writes `data` at `offset` (inside the file's length).
    pub fn write_at(&self, offset: u64, data: &[u8]) -> Result<()> {
        if data.is_empty() {
            return Ok(());
        }
        assert!(
            offset + data.len() as u64 <= self.len,
            "scratch write beyond the file's length"
        );
        fault::charge_write(data.len())
            .and_then(|_| self.file.write_all_at(data, offset))
            .map_err(|e| IoError::new(&self.path, "write", e))?;
        self.stats.add_write(data.len() as u64);
        Ok(())
    }

    /// Maps the whole file read-write, for an array larger than memory that the
    /// kernel pages in and out (written pages go back to the file, not to swap).
    /// Bytes moved through the mapping are not counted.
    pub fn map_mut(&self) -> Result<memmap2::MmapMut> {
        // SAFETY: the file was created by us (create_new) and unlinked at once, so no
        // other process or code path can truncate or modify it while mapped; its
        // length is fixed at creation.
        unsafe { memmap2::MmapMut::map_mut(&self.file) }
            .map_err(|e| IoError::new(&self.path, "mmap scratch file", e))
    }

    /// Reads `out.len()` values of `T` at `offset`.
    pub fn read_pod<T: bytemuck::Pod>(&self, offset: u64, out: &mut [T]) -> Result<()> {
        self.read_at(offset, bytemuck::cast_slice_mut(out))
    }
    /// Writes the values of `data` at `offset`.
    pub fn write_pod<T: bytemuck::Pod>(&self, offset: u64, data: &[T]) -> Result<()> {
        self.write_at(offset, bytemuck::cast_slice(data))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_read_back_and_are_counted() {
        let dir = tempfile::tempdir().unwrap();
        let stats = IoStats::new();
        let f = ScratchFile::create(dir.path(), "t", 64, stats.clone()).unwrap();
        // Unlinked at once: nothing left in the directory.
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
        f.write_pod(8, &[7u64, 9]).unwrap();
        let mut back = [0u64; 3];
        f.read_pod(0, &mut back).unwrap();
        assert_eq!(back, [0, 7, 9]);
        let s = stats.snapshot();
        assert_eq!((s.bytes_written, s.bytes_read), (16, 24));
        assert!(f.read_at(60, &mut [0u8; 8]).is_err());
    }
}
