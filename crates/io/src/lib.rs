//! # outcore-io — every byte to and from disk
//!
//! Design: all store files are read and written through this crate, so the
//! accounting (bytes and requests, [`IoStats`]) and the fault injection used by the
//! tests ([`fault`]) are total. DESIGN.md principle 1 ("less total I/O beats better
//! locality", CLIP ATC'17 §2) only means something if every byte is counted.
//!
//! Backends ([`ReadMode`]):
//! * `Buffered` — `pread(2)` through the kernel page cache;
//! * `Direct` — `O_DIRECT` `pread(2)` into 4 KiB-aligned buffers ([`AlignedBuf`]);
//!   unaligned requests are widened to the enclosing aligned range, and only the
//!   bytes transferred by the device are counted;
//! * `Mmap` — a read-only shared mapping (memmap2); bytes are counted when a range
//!   is handed out.
//!
//! Invariants: a request is counted once, when it completes; a failed write leaves
//! an error naming the file, never a silently short file.

pub mod calibrate;
pub mod cancel;
pub mod fault;
mod file;
mod huge;
mod lock;
mod room;
mod scratch;
mod sink;
mod size;
mod stats;
pub mod temp;

pub use calibrate::{calibrate, CalibrateOptions, DeviceProfile};
pub use file::{
    direct_write_buffer, set_direct_write_buffer, sync_dir, AlignedBuf, InFile, OutFile, ReadMode,
    SeqReader, ALIGN,
};
pub use huge::{advise_huge, huge_filled, huge_zeroed};
pub use lock::NameLock;
pub use room::memory_limit;
pub use scratch::ScratchFile;
pub use sink::ResultFile;
pub use size::{format_bytes, parse_size};
pub use stats::{IoSnapshot, IoStats};
pub use temp::pid_alive;

use std::path::PathBuf;

/// An I/O failure, naming the file and what was being done.
#[derive(Debug, thiserror::Error)]
#[error("{}: {op}: {source}", path.display())]
pub struct IoError {
    pub path: PathBuf,
    pub op: &'static str,
    #[source]
    pub source: std::io::Error,
}

impl IoError {
    pub fn new(path: impl Into<PathBuf>, op: &'static str, source: std::io::Error) -> Self {
        IoError {
            path: path.into(),
            op,
            source,
        }
    }
    /// True when the device ran out of space (ENOSPC / EDQUOT).
    pub fn is_disk_full(&self) -> bool {
        matches!(
            self.source.raw_os_error(),
            Some(libc::ENOSPC) | Some(libc::EDQUOT)
        )
    }
}

pub type Result<T> = std::result::Result<T, IoError>;

/// Bytes an unprivileged writer may still use on the file system holding `dir`.
pub fn free_bytes(dir: &std::path::Path) -> Option<u64> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(dir.as_os_str().as_bytes()).ok()?;
    // SAFETY: statvfs is a plain struct of integers, zero is a valid value.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: `c` is a valid NUL-terminated path and `st` a valid out-pointer.
    if unsafe { libc::statvfs(c.as_ptr(), &mut st) } != 0 {
        return None;
    }
    Some(st.f_bavail as u64 * st.f_frsize as u64)
}
