//! Fault injection for tests: simulate a full disk.
//!
//! When the environment variable `OUTCORE_FAULT_ENOSPC_AFTER` holds a byte count,
//! every [`crate::OutFile`] in the process shares that budget, and the write that
//! would exceed it fails with `ENOSPC` exactly as a full device would. This lets the
//! tests prove that a full disk during ingest gives a precise error and leaves no
//! store behind, without needing a small filesystem.

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::OnceLock;

fn budget() -> &'static AtomicI64 {
    static B: OnceLock<AtomicI64> = OnceLock::new();
    B.get_or_init(|| {
        let v = std::env::var("OUTCORE_FAULT_ENOSPC_AFTER")
            .ok()
            .and_then(|s| s.trim().parse::<i64>().ok())
            .unwrap_or(i64::MAX);
        AtomicI64::new(v)
    })
}

/// Takes `bytes` from the simulated free space; `Err(ENOSPC)` when it is exhausted.
/// Every write passes here, so a cancelled command ([`crate::cancel`]) stops
/// at its next write as well.
pub fn charge_write(bytes: usize) -> std::io::Result<()> {
    crate::cancel::check()?;
    let b = budget();
    if b.load(Ordering::Relaxed) == i64::MAX {
        return Ok(());
    }
    let left = b.fetch_sub(bytes as i64, Ordering::Relaxed) - bytes as i64;
    if left < 0 {
        Err(std::io::Error::from_raw_os_error(libc::ENOSPC))
    } else {
        Ok(())
    }
}
