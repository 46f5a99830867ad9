//! Cooperative cancellation of the work running in this process.
//!
//! The `outcore` binary stops on SIGINT by removing its temporaries and exiting
//! ([`crate::temp::install_signal_cleanup`]). A host that runs commands
//! in-process (the Python package) cannot exit: it calls [`request`] instead,
//! and from then on every read and write through this crate ([`crate::InFile`],
//! [`crate::OutFile`], the sequential readers and writers built on them) fails
//! with a [`Cancelled`] error naming the file. The command then unwinds through
//! its ordinary error paths, which remove its temporaries and leave every store
//! and result either whole or absent (they are written beside their targets and
//! renamed when complete). Work between two I/O calls (an in-memory sort of one
//! run, one in-memory pass) finishes first, so a command stops within one such
//! step. The host calls [`clear`] once the command has returned.
//!
//! Invariant: the flag is process-wide; a host runs one command at a time while
//! it may cancel (the Python package serializes its calls).

use std::sync::atomic::{AtomicBool, Ordering};

static CANCELLED: AtomicBool = AtomicBool::new(false);

/// Asks the running command to stop at its next read or write.
pub fn request() {
    CANCELLED.store(true, Ordering::SeqCst);
}

/// Lets I/O proceed again (after the cancelled command has returned).
pub fn clear() {
    CANCELLED.store(false, Ordering::SeqCst);
}

/// Whether a stop was asked for and not yet cleared.
pub fn requested() -> bool {
    CANCELLED.load(Ordering::Relaxed)
}

/// The error every I/O call returns once a stop was asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cancelled;

impl std::fmt::Display for Cancelled {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("cancelled by the caller")
    }
}

impl std::error::Error for Cancelled {}

/// `Err(Cancelled)` (as an `io::Error` of kind `Other`, never `Interrupted`,
/// which readers retry) once a stop was asked for.
pub fn check() -> std::io::Result<()> {
    if requested() {
        Err(std::io::Error::other(Cancelled))
    } else {
        Ok(())
    }
}

/// Whether an I/O error is a cancellation.
pub fn is_cancelled(e: &std::io::Error) -> bool {
    e.get_ref().is_some_and(|x| x.is::<Cancelled>())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_fails_reads_and_writes_until_cleared() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("f");
        let stats = crate::IoStats::new();
        let mut out = crate::OutFile::create(&p, stats.clone()).unwrap();
        out.write_all(&[7u8; 100]).unwrap();
        out.finish().unwrap();
        let f = crate::InFile::open(&p, crate::ReadMode::Buffered, stats.clone()).unwrap();
        let mut buf = [0u8; 10];
        request();
        let e = f.read_exact_at(0, &mut buf).unwrap_err();
        assert!(is_cancelled(&e.source), "{e}");
        assert!(e.to_string().contains("cancelled by the caller"), "{e}");
        let mut w = crate::OutFile::create(&d.path().join("g"), stats.clone()).unwrap();
        assert!(w.write_all(&[1u8; 1 << 20]).is_err());
        clear();
        f.read_exact_at(0, &mut buf).unwrap();
        assert_eq!(buf, [7u8; 10]);
    }
}
