//! Advisory locks on output names, so that two commands writing the same store
//! (two ingests into one `-o`) find out at the start instead of after all their work.
//!
//! The lock is `flock(2)` on a hidden file beside the output (`.NAME.lock`); the
//! kernel drops it when the process dies, so a killed writer never blocks the next
//! one. The holder unlinks the file before releasing it; a waiter that locked a file
//! that was unlinked meanwhile notices (the path no longer names its inode) and
//! tries again on the new one.

use crate::{IoError, Result};
use std::fs::{File, OpenOptions};
use std::os::unix::fs::MetadataExt;
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};

/// A held lock; released (and its file removed) when dropped.
pub struct NameLock {
    path: PathBuf,
    _file: File,
    _registered: crate::temp::Registration,
}

impl NameLock {
    /// The lock file guarding `target` (`DIR/.NAME.lock`).
    pub fn path_for(target: &Path) -> PathBuf {
        let name = target
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "output".into());
        let dir = match target.parent() {
            Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
            _ => PathBuf::from("."),
        };
        dir.join(format!(".{name}.lock"))
    }

    /// Takes the lock on `target` without waiting: `Ok(None)` when another process
    /// holds it.
    pub fn try_lock(target: &Path) -> Result<Option<NameLock>> {
        let path = Self::path_for(target);
        loop {
            let file = OpenOptions::new()
                .read(true)
                .write(true)
                .create(true)
                .truncate(false)
                .open(&path)
                .map_err(|e| IoError::new(&path, "create lock", e))?;
            // SAFETY: the descriptor is open for the duration of the call.
            if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
                let e = std::io::Error::last_os_error();
                if e.raw_os_error() == Some(libc::EWOULDBLOCK) {
                    return Ok(None);
                }
                return Err(IoError::new(&path, "lock", e));
            }
            let mine = file
                .metadata()
                .map_err(|e| IoError::new(&path, "stat lock", e))?;
            match std::fs::metadata(&path) {
                Ok(now) if now.ino() == mine.ino() && now.dev() == mine.dev() => {
                    return Ok(Some(NameLock {
                        _registered: crate::temp::register(&path),
                        path,
                        _file: file,
                    }))
                }
                // Unlinked (or replaced) by the previous holder: lock the new one.
                _ => continue,
            }
        }
    }
}

impl Drop for NameLock {
    fn drop(&mut self) {
        // Removed while still held, so no one locks a file that is about to go.
        let _ = std::fs::remove_file(&self.path);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_holder_is_refused_until_the_first_lets_go() {
        let d = tempfile::tempdir().unwrap();
        let target = d.path().join("g.store");
        let a = NameLock::try_lock(&target).unwrap().expect("free");
        assert!(NameLock::path_for(&target).exists());
        // flock locks belong to the open file: a second open in this process
        // conflicts just as another process would.
        assert!(NameLock::try_lock(&target).unwrap().is_none());
        drop(a);
        assert!(!NameLock::path_for(&target).exists());
        let b = NameLock::try_lock(&target).unwrap().expect("free again");
        drop(b);
        assert_eq!(std::fs::read_dir(d.path()).unwrap().count(), 0);
    }
}
