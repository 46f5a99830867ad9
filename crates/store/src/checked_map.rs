//! A CSR data file mapped read-only, each page group checked against its
//! checksum ([`PageSums`]) the first time a read touches it.
//!
//! Runs whose lists the page cache already holds read them many times over
//! (a bfs's bottom-up and sparse steps, sssp's sparse steps, wcc's sample
//! and its whole lists): copying them out of the cache and checking them on
//! every read cost more than the work done on them. A [`CheckedMap`] serves
//! each read in place instead. Invariant: no byte is served before the
//! whole group holding it was checked in this run; a group is checked once
//! (one bit a group, 1 bit per 4 KiB), then served without a copy. A
//! mismatch names the file, the group and its byte range, as
//! [`PageSums::check`] does. The bytes of the groups checked are counted as
//! read (one request a read that checked any), the bytes a copy would have
//! read the first time.

use crate::error::Result;
use crate::format::{LayoutFile, HEADER_LEN};
use crate::pagesums::{PageSums, SUM_GROUP};
use crate::StoreError;
use outcore_io::{IoError, IoStats};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;

/// A data file's payload mapped in place, its page groups checked on first
/// touch.
pub struct CheckedMap {
    map: memmap2::Mmap,
    payload: u64,
    /// One bit a page group: set once checked.
    checked: Vec<AtomicU64>,
    stats: Arc<IoStats>,
}

impl CheckedMap {
    /// Maps `file`, whose page-group checksums are `sums`; reads are counted
    /// in `stats`.
    pub fn open(file: &LayoutFile, sums: &PageSums, stats: Arc<IoStats>) -> Result<CheckedMap> {
        let path = file.file.path();
        let payload = file.header.payload_len;
        if payload != sums.payload() {
            return Err(crate::error::corrupt(
                path,
                format!(
                    "holds {payload} payload bytes, its page checksums cover {}",
                    sums.payload()
                ),
            ));
        }
        let f =
            std::fs::File::open(path).map_err(|e| StoreError::Io(IoError::new(path, "open", e)))?;
        let len = (HEADER_LEN + payload) as usize;
        // SAFETY: a read-only shared mapping of a store file, which outcore
        // never writes in place (files are replaced by rename); its length
        // was checked against its header when it was opened, and every byte
        // is checked against its group's checksum before it is served.
        let map = unsafe { memmap2::MmapOptions::new().len(len).map(&f) }
            .map_err(|e| StoreError::Io(IoError::new(path, "mmap", e)))?;
        if map.len() < len {
            return Err(crate::error::corrupt(path, "shorter than its header says"));
        }
        let groups = payload.div_ceil(SUM_GROUP);
        Ok(CheckedMap {
            map,
            payload,
            checked: (0..groups.div_ceil(64))
                .map(|_| AtomicU64::new(0))
                .collect(),
            stats,
        })
    }

    /// Memory it holds itself (the bits; the mapped pages are page cache).
    pub fn bytes(&self) -> u64 {
        self.checked.len() as u64 * 8
    }

    /// Payload bytes `a..b` as `T`s (`a` and `b` multiples of its size,
    /// `b` within the payload), every page group they touch checked
    /// against `sums` (those of this file) first.
    pub fn get<T: bytemuck::Pod>(&self, sums: &PageSums, a: u64, b: u64) -> Result<&[T]> {
        debug_assert!(a <= b && b <= self.payload);
        if a < b {
            let (g0, g1) = (a / SUM_GROUP, (b - 1) / SUM_GROUP);
            let mut fresh = 0u64;
            for g in g0..=g1 {
                let (w, bit) = (&self.checked[(g / 64) as usize], 1u64 << (g % 64));
                if w.load(Relaxed) & bit != 0 {
                    continue;
                }
                let lo = g * SUM_GROUP;
                let hi = (lo + SUM_GROUP).min(self.payload);
                sums.check_group(
                    g,
                    &self.map[(HEADER_LEN + lo) as usize..(HEADER_LEN + hi) as usize],
                )?;
                w.fetch_or(bit, Relaxed);
                fresh += hi - lo;
            }
            if fresh > 0 {
                self.stats.add_read(fresh);
            }
        }
        // The mapping is page-aligned and the header 4096 bytes: aligned for
        // any `T` whose size divides `a` and `b`.
        Ok(bytemuck::cast_slice(
            &self.map[(HEADER_LEN + a) as usize..(HEADER_LEN + b) as usize],
        ))
    }
}
