//! Result files that never destroy what they point at.
//!
//! Every file a command writes for the user (`run --out`, `jobs --out-dir`,
//! `--stats`, `calibrate --save`) goes through [`ResultFile`]:
//!
//! * `-` is standard output;
//! * a symbolic link is followed, and what it points at is written;
//! * a path that exists and is not a regular file (a character device such as
//!   `/dev/null`, a FIFO, a socket) is opened for writing and written in place —
//!   never unlinked or renamed over;
//! * otherwise the result is written to a hidden temporary beside the target,
//!   `.NAME.PID.partial`, unique to this process, flushed to the device and then
//!   renamed over the target, so a reader sees the old file or the whole new one.
//!   The temporary is removed on every error path (and when the value is dropped
//!   uncommitted), and temporaries of dead processes are removed by the next
//!   command that writes the same name.
//!
//! [`ResultFile::prepare`] is meant to be called before the computation: it checks
//! that the directory exists and is writable (by creating the temporary), so a bad
//! path fails in a second, not after an hour of work.

use crate::{IoError, Result};
use std::fs::{File, OpenOptions};
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

enum Target {
    Stdout,
    /// An existing non-regular file, written in place.
    InPlace(PathBuf),
    /// A regular file (or none yet), replaced through the temporary.
    Replace {
        path: PathBuf,
        tmp: PathBuf,
        file: Option<File>,
        _registered: crate::temp::Registration,
    },
}

/// A result on its way to `path` (see the module docs).
pub struct ResultFile {
    target: Target,
    shown: PathBuf,
}

/// Follows symbolic links (also dangling ones) to the path that will be written.
fn resolve(path: &Path) -> Result<PathBuf> {
    let mut p = path.to_path_buf();
    for _ in 0..40 {
        match std::fs::symlink_metadata(&p) {
            Ok(m) if m.file_type().is_symlink() => {
                let to = std::fs::read_link(&p).map_err(|e| IoError::new(&p, "read link", e))?;
                p = match p.parent() {
                    Some(dir) if to.is_relative() => dir.join(to),
                    _ => to,
                };
            }
            _ => return Ok(p),
        }
    }
    Err(IoError::new(
        path,
        "resolve",
        std::io::Error::from_raw_os_error(libc::ELOOP),
    ))
}

impl ResultFile {
    /// Checks where the result goes and, for a regular file, creates the hidden
    /// temporary now (which proves the directory exists and is writable).
    pub fn prepare(path: &Path) -> Result<ResultFile> {
        let shown = path.to_path_buf();
        if path.as_os_str() == "-" {
            return Ok(ResultFile {
                target: Target::Stdout,
                shown: PathBuf::from("standard output"),
            });
        }
        let real = resolve(path)?;
        match std::fs::metadata(&real) {
            Ok(m) if m.is_dir() => {
                return Err(IoError::new(
                    path,
                    "write result",
                    std::io::Error::from_raw_os_error(libc::EISDIR),
                ))
            }
            Ok(m) if !m.file_type().is_file() => {
                return Ok(ResultFile {
                    target: Target::InPlace(real),
                    shown,
                });
            }
            _ => {}
        }
        let name = real
            .file_name()
            .ok_or_else(|| {
                IoError::new(
                    path,
                    "write result",
                    std::io::Error::new(std::io::ErrorKind::InvalidInput, "not a file name"),
                )
            })?
            .to_string_lossy()
            .into_owned();
        let dir = match real.parent() {
            Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
            _ => PathBuf::from("."),
        };
        match std::fs::metadata(&dir) {
            Ok(m) if m.is_dir() => {}
            Ok(_) => {
                return Err(IoError::new(
                    &dir,
                    "open output directory",
                    std::io::Error::from_raw_os_error(libc::ENOTDIR),
                ))
            }
            Err(e) => return Err(IoError::new(&dir, "open output directory", e)),
        }
        crate::temp::clean_stale_of(&dir, &name);
        let tmp = dir.join(format!(".{name}.{}.partial", std::process::id()));
        let file = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .open(&tmp)
            .map_err(|e| IoError::new(&tmp, "create", e))?;
        Ok(ResultFile {
            target: Target::Replace {
                path: real,
                _registered: crate::temp::register(&tmp),
                tmp,
                file: Some(file),
            },
            shown,
        })
    }

    /// The path as the user gave it (or "standard output").
    pub fn shown(&self) -> &Path {
        &self.shown
    }

    /// True when the result goes to standard output.
    pub fn is_stdout(&self) -> bool {
        matches!(self.target, Target::Stdout)
    }

    /// The file that is finally written (links followed); `None` for stdout.
    pub fn real_path(&self) -> Option<&Path> {
        match &self.target {
            Target::Stdout => None,
            Target::InPlace(p) | Target::Replace { path: p, .. } => Some(p),
        }
    }

    /// Writes the result through a buffered writer and commits it. On error the
    /// temporary is removed and the target is left as it was (a non-regular target
    /// may have received part of the bytes).
    pub fn write_with<F>(mut self, f: F) -> Result<()>
    where
        F: FnOnce(&mut dyn Write) -> std::io::Result<()>,
    {
        match &mut self.target {
            Target::Stdout => {
                let out = std::io::stdout();
                let mut w = BufWriter::with_capacity(1 << 20, out.lock());
                f(&mut w)
                    .and_then(|_| w.flush())
                    .map_err(|e| IoError::new("standard output", "write", e))
            }
            Target::InPlace(p) => {
                let file = OpenOptions::new()
                    .write(true)
                    .open(&*p)
                    .map_err(|e| IoError::new(&*p, "open", e))?;
                let mut w = BufWriter::with_capacity(1 << 20, file);
                f(&mut w)
                    .and_then(|_| w.flush())
                    .map_err(|e| IoError::new(&*p, "write", e))
            }
            Target::Replace {
                path, tmp, file, ..
            } => {
                let file = file.take().expect("written once");
                let mut w = BufWriter::with_capacity(1 << 20, file);
                f(&mut w)
                    .and_then(|_| w.flush())
                    .map_err(|e| IoError::new(&*tmp, "write", e))?;
                let file = w
                    .into_inner()
                    .map_err(|e| IoError::new(&*tmp, "write", e.into_error()))?;
                replace(file, tmp, path)
            }
        }
    }

    /// For a writer of its own (one that opens a path): the path to write, the
    /// hidden temporary or the non-regular target itself; `None` for stdout. Call
    /// [`ResultFile::commit`] once it is complete.
    pub fn path_to_write(&self) -> Option<&Path> {
        match &self.target {
            Target::Stdout => None,
            Target::InPlace(p) => Some(p),
            Target::Replace { tmp, .. } => Some(tmp),
        }
    }

    /// Commits what was written at [`ResultFile::path_to_write`]: the temporary is
    /// flushed to the device and renamed over the target.
    pub fn commit(mut self) -> Result<()> {
        if let Target::Replace {
            path, tmp, file, ..
        } = &mut self.target
        {
            // The held handle is the temporary's inode, which the writer
            // truncated and filled through its path.
            replace(file.take().expect("committed once"), tmp, path)?;
        }
        Ok(())
    }

    /// Writes `bytes` as the whole result.
    pub fn write_all(self, bytes: &[u8]) -> Result<()> {
        self.write_with(|w| w.write_all(bytes))
    }
}

/// Flushes the temporary to the device, renames it over `path` and syncs the
/// directory; `tmp` is emptied (nothing left to remove on drop).
fn replace(file: File, tmp: &mut PathBuf, path: &Path) -> Result<()> {
    file.sync_all()
        .map_err(|e| IoError::new(&*tmp, "sync", e))?;
    drop(file);
    std::fs::rename(&*tmp, path).map_err(|e| IoError::new(path, "rename", e))?;
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        let _ = crate::sync_dir(dir);
    }
    tmp.clear();
    Ok(())
}

impl Drop for ResultFile {
    fn drop(&mut self) {
        if let Target::Replace { tmp, .. } = &self.target {
            if !tmp.as_os_str().is_empty() {
                let _ = std::fs::remove_file(tmp);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::FileTypeExt;

    #[test]
    fn replaces_regular_file_atomically_and_leaves_no_temporary() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("r.txt");
        std::fs::write(&p, "old").unwrap();
        let r = ResultFile::prepare(&p).unwrap();
        // The temporary exists (directory checked) but the target is untouched.
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "old");
        assert_eq!(std::fs::read_dir(d.path()).unwrap().count(), 2);
        r.write_all(b"new").unwrap();
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "new");
        assert_eq!(std::fs::read_dir(d.path()).unwrap().count(), 1);
    }

    #[test]
    fn error_in_writer_removes_temporary_and_keeps_old_file() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("r.txt");
        std::fs::write(&p, "old").unwrap();
        let r = ResultFile::prepare(&p).unwrap();
        let e = r
            .write_with(|w| {
                w.write_all(b"half")?;
                Err(std::io::Error::other("boom"))
            })
            .unwrap_err();
        assert!(e.to_string().contains("boom"), "{e}");
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "old");
        assert_eq!(std::fs::read_dir(d.path()).unwrap().count(), 1);
        // Dropped without writing: temporary gone too.
        drop(ResultFile::prepare(&p).unwrap());
        assert_eq!(std::fs::read_dir(d.path()).unwrap().count(), 1);
    }

    #[test]
    fn follows_symlinks_and_writes_fifos_in_place() {
        let d = tempfile::tempdir().unwrap();
        let real = d.path().join("real.txt");
        std::fs::write(&real, "old").unwrap();
        let link = d.path().join("link.txt");
        std::os::unix::fs::symlink("real.txt", &link).unwrap();
        ResultFile::prepare(&link)
            .unwrap()
            .write_all(b"new")
            .unwrap();
        assert!(std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink());
        assert_eq!(std::fs::read_to_string(&real).unwrap(), "new");

        let fifo = d.path().join("fifo");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: `c` is a valid NUL-terminated path for the duration of the call.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let reader = {
            let fifo = fifo.clone();
            std::thread::spawn(move || std::fs::read(&fifo).unwrap())
        };
        ResultFile::prepare(&fifo)
            .unwrap()
            .write_all(b"through the pipe")
            .unwrap();
        assert_eq!(reader.join().unwrap(), b"through the pipe");
        assert!(std::fs::symlink_metadata(&fifo)
            .unwrap()
            .file_type()
            .is_fifo());
    }

    #[test]
    fn missing_directory_fails_at_prepare_and_stale_temporaries_go() {
        let d = tempfile::tempdir().unwrap();
        let e = ResultFile::prepare(&d.path().join("nope/r.txt"))
            .err()
            .unwrap();
        assert!(e.to_string().contains("nope"), "{e}");
        // A temporary of a process that no longer exists (pid beyond pid_max).
        let stale = d.path().join(".r.txt.4999999.partial");
        std::fs::write(&stale, "x").unwrap();
        let r = ResultFile::prepare(&d.path().join("r.txt")).unwrap();
        assert!(!stale.exists());
        r.write_all(b"ok").unwrap();
    }
}
