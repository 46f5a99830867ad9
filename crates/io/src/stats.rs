//! I/O accounting: bytes and requests, read and written.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, OnceLock};

/// Counters shared by every file opened with them. Cheap to clone (an `Arc`).
#[derive(Debug, Default)]
pub struct IoStats {
    bytes_read: AtomicU64,
    bytes_written: AtomicU64,
    read_requests: AtomicU64,
    write_requests: AtomicU64,
}

/// A point-in-time copy of [`IoStats`].
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct IoSnapshot {
    pub bytes_read: u64,
    pub bytes_written: u64,
    pub read_requests: u64,
    pub write_requests: u64,
}

impl IoSnapshot {
    /// Counter-wise difference `self - earlier`.
    pub fn since(&self, earlier: &IoSnapshot) -> IoSnapshot {
        IoSnapshot {
            bytes_read: self.bytes_read - earlier.bytes_read,
            bytes_written: self.bytes_written - earlier.bytes_written,
            read_requests: self.read_requests - earlier.read_requests,
            write_requests: self.write_requests - earlier.write_requests,
        }
    }
}

impl IoStats {
    pub fn new() -> Arc<IoStats> {
        Arc::new(IoStats::default())
    }
    /// The process-wide counters used when no others are given.
    pub fn global() -> Arc<IoStats> {
        static G: OnceLock<Arc<IoStats>> = OnceLock::new();
        G.get_or_init(IoStats::new).clone()
    }
    pub fn add_read(&self, bytes: u64) {
        self.bytes_read.fetch_add(bytes, Relaxed);
        self.read_requests.fetch_add(1, Relaxed);
    }
    pub fn add_write(&self, bytes: u64) {
        self.bytes_written.fetch_add(bytes, Relaxed);
        self.write_requests.fetch_add(1, Relaxed);
    }
    pub fn snapshot(&self) -> IoSnapshot {
        IoSnapshot {
            bytes_read: self.bytes_read.load(Relaxed),
            bytes_written: self.bytes_written.load(Relaxed),
            read_requests: self.read_requests.load(Relaxed),
            write_requests: self.write_requests.load(Relaxed),
        }
    }
}
