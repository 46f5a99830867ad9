//! A process's temporary files: named with its PID, removed on SIGINT/SIGTERM,
//! and removed by a later command when their process is gone.
//!
//! * Every temporary file or directory a command makes (sort runs, spill files,
//!   an ingest's build directory, a result's `.partial`, calibrate's test file) is
//!   named so that its PID can be read back: `.outcore-TAG-PID[-...]`, or the
//!   owner's own pattern (`.NAME.ingest-PID`, `.NAME.PID.partial`).
//! * While it exists it is [`register`]ed; [`install_signal_cleanup`] (called by
//!   the commands that make temporaries, before any thread starts) turns SIGINT,
//!   SIGTERM and SIGHUP into: remove everything registered, say so, exit with
//!   128 + the signal number. A SIGKILL cannot be caught: what it leaves is found
//!   by [`clean_stale`] the next time a command works in the same directory.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

static REGISTERED: Mutex<Vec<(u64, PathBuf)>> = Mutex::new(Vec::new());
static TERMINATING: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// True once a signal's clean-up has begun: the work's own errors from then on
/// (a temporary removed under it) are not the reason the process ends, and the
/// caller should leave the exit to the signal thread.
pub fn terminating() -> bool {
    TERMINATING.load(std::sync::atomic::Ordering::SeqCst)
}
static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// Keeps a temporary registered for removal on a signal; dropping it only
/// unregisters (its owner removes the temporary, or keeps it as a result).
#[must_use = "the temporary is unregistered when this is dropped"]
pub struct Registration(u64);

/// Registers `path` (a file or a directory) for removal on SIGINT/SIGTERM.
pub fn register(path: &Path) -> Registration {
    let id = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    REGISTERED
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .push((id, path.to_path_buf()));
    Registration(id)
}

impl Drop for Registration {
    fn drop(&mut self) {
        let mut r = REGISTERED.lock().unwrap_or_else(|e| e.into_inner());
        r.retain(|(id, _)| *id != self.0);
    }
}

/// A fresh temporary name `.outcore-TAG-PID-SEQ` (unique within the process).
pub fn temp_name(tag: &str) -> String {
    static SEQ: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    format!(
        ".outcore-{tag}-{}-{}",
        std::process::id(),
        SEQ.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    )
}

/// The PID a temporary's name carries: `.outcore-TAG-PID...` (the first token of
/// digits after the tag), `.NAME.ingest-PID`, `.NAME.old-PID`, `.NAME.PID.partial`,
/// `.vpart-spill-PID`, `.NAME.PID.tmp`, `outcore-spill-PID`.
pub fn temp_pid(name: &str) -> Option<u32> {
    let digits = |t: &str| -> Option<u32> {
        (!t.is_empty() && t.bytes().all(|b| b.is_ascii_digit()))
            .then(|| t.parse().ok())
            .flatten()
    };
    if let Some(rest) = name
        .strip_prefix(".outcore-")
        .or_else(|| name.strip_prefix("outcore-spill-"))
        .or_else(|| name.strip_prefix(".vpart-spill-"))
    {
        return rest.split(['-', '.']).find_map(digits);
    }
    if !name.starts_with('.') {
        return None;
    }
    for tag in [".ingest-", ".old-"] {
        if let Some(at) = name.rfind(tag) {
            return digits(&name[at + tag.len()..]);
        }
    }
    for suffix in [".partial", ".tmp"] {
        if let Some(stem) = name.strip_suffix(suffix) {
            return stem.rsplit('.').next().and_then(digits);
        }
    }
    None
}

/// True when `name` is a temporary of this program (see [`temp_pid`]).
pub fn is_temporary(name: &str) -> bool {
    temp_pid(name).is_some()
}

/// True for the names only this program makes (`.outcore-*`, `outcore-spill-*`,
/// `.vpart-spill-*`, `.vpart.*.tmp`): safe to remove in a directory shared with
/// other programs once their process is gone. The `.NAME.PID.partial` and
/// `.NAME.ingest-PID` patterns are removed by their owners, which know NAME.
fn ours_alone(name: &str) -> bool {
    name.starts_with(".outcore-")
        || name.starts_with("outcore-spill-")
        || name.starts_with(".vpart-spill-")
        || (name.starts_with(".vpart.") && name.ends_with(".tmp"))
}

/// True while process `pid` exists (on Linux, its `/proc` entry).
pub fn pid_alive(pid: u32) -> bool {
    Path::new(&format!("/proc/{pid}")).exists()
}

/// Removes the temporaries in `dir` whose process is gone (only names this
/// program alone makes, see [`temp_pid`]); returns them.
pub fn clean_stale(dir: &Path) -> Vec<PathBuf> {
    remove_dead(dir, ours_alone)
}

/// Removes the temporaries of output `NAME` in `dir` whose process is gone:
/// `.NAME.ingest-PID`, `.NAME.old-PID`, `.NAME.PID.partial` (the patterns that
/// only the owner of NAME can tell apart from other programs' files).
pub fn clean_stale_of(dir: &Path, name: &str) -> Vec<PathBuf> {
    let prefix = format!(".{name}.");
    remove_dead(dir, |f| f.starts_with(&prefix))
}

/// Removes the entries of `dir` that `ours` accepts and whose name carries the
/// PID of a process that is gone.
fn remove_dead(dir: &Path, ours: impl Fn(&str) -> bool) -> Vec<PathBuf> {
    let mut removed = Vec::new();
    let Ok(rd) = std::fs::read_dir(dir) else {
        return removed;
    };
    for e in rd.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let Some(pid) = temp_pid(&name).filter(|_| ours(&name)) else {
            continue;
        };
        if pid == std::process::id() || pid_alive(pid) {
            continue;
        }
        let p = e.path();
        let gone = if e.file_type().is_ok_and(|t| t.is_dir()) {
            std::fs::remove_dir_all(&p)
        } else {
            std::fs::remove_file(&p)
        };
        if gone.is_ok() {
            removed.push(p);
        }
    }
    removed
}

fn remove_registered() -> usize {
    let paths: Vec<PathBuf> = REGISTERED
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .iter()
        .map(|(_, p)| p.clone())
        .collect();
    let mut n = 0;
    for (k, p) in paths.into_iter().enumerate() {
        let r = match std::fs::symlink_metadata(&p) {
            Ok(m) if m.is_dir() => {
                // Other threads may still be creating files in it: moved aside
                // first (their next create under the old path fails), then
                // removed; what a last write leaves carries this PID in its name,
                // so the next command here removes it.
                let aside = p.with_file_name(format!(".outcore-dying-{}-{k}", std::process::id()));
                let target = if std::fs::rename(&p, &aside).is_ok() {
                    aside
                } else {
                    p.clone()
                };
                let mut r = std::fs::remove_dir_all(&target);
                for _ in 0..20 {
                    if r.is_ok() {
                        break;
                    }
                    std::thread::sleep(std::time::Duration::from_millis(5));
                    r = std::fs::remove_dir_all(&target);
                }
                r
            }
            Ok(_) => std::fs::remove_file(&p),
            Err(_) => continue,
        };
        n += r.is_ok() as usize;
    }
    n
}

/// Blocks SIGINT, SIGTERM and SIGHUP in this thread (and so in every thread it
/// starts later) and waits for them on a thread of their own, which removes the
/// registered temporaries and exits with 128 + the signal. Call it first thing, in
/// commands that start no child processes (children would inherit the mask).
pub fn install_signal_cleanup() {
    // SAFETY: sigset_t is plain data; sigemptyset/sigaddset initialize it, and
    // pthread_sigmask only reads it.
    let set = unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        for s in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
            libc::sigaddset(&mut set, s);
        }
        libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
        set
    };
    let _ = std::thread::Builder::new()
        .name("signals".into())
        .spawn(move || loop {
            let mut sig: libc::c_int = 0;
            // SAFETY: `set` is an initialized signal set and `sig` a valid out-pointer.
            if unsafe { libc::sigwait(&set, &mut sig) } != 0 {
                continue;
            }
            TERMINATING.store(true, std::sync::atomic::Ordering::SeqCst);
            let n = remove_registered();
            let name = match sig {
                libc::SIGINT => "SIGINT",
                libc::SIGTERM => "SIGTERM",
                _ => "SIGHUP",
            };
            eprintln!("\noutcore: interrupted by {name}; removed {n} temporary files");
            std::process::exit(128 + sig);
        });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pids_are_read_from_every_temporary_pattern() {
        let cases = [
            (".outcore-sort-123-4", Some(123)),
            (".outcore-out-degree-77.vertices", Some(77)),
            (".outcore-sortreduce-9-0.runs", Some(9)),
            (".outcore-calibrate-55", Some(55)),
            (".g.store.ingest-42", Some(42)),
            (".g.store.old-43", Some(43)),
            (".r.txt.44.partial", Some(44)),
            (".vpart.3.edges.45.tmp", Some(45)),
            (".vpart-spill-46", Some(46)),
            ("outcore-spill-47", Some(47)),
            ("grid.data", None),
            ("manifest.json", None),
            (".hidden", None),
            ("vpart.3.edges", None),
        ];
        for (name, pid) in cases {
            assert_eq!(temp_pid(name), pid, "{name}");
        }
    }

    #[test]
    fn only_temporaries_of_dead_processes_are_removed() {
        let d = tempfile::tempdir().unwrap();
        let me = std::process::id();
        let dead = 4_999_999; // beyond pid_max: never a live process
        for n in [
            format!(".outcore-sort-{dead}-0"),
            format!(".outcore-sort-{me}-0"),
            format!(".x.{dead}.partial"),
            "grid.data".to_string(),
        ] {
            std::fs::create_dir(d.path().join(n)).unwrap();
        }
        std::fs::write(d.path().join(format!(".outcore-calibrate-{dead}")), "x").unwrap();
        let mut removed: Vec<String> = clean_stale(d.path())
            .iter()
            .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        removed.sort();
        assert_eq!(
            removed,
            vec![
                format!(".outcore-calibrate-{dead}"),
                format!(".outcore-sort-{dead}-0"),
            ]
        );
        // Another program's name of the same shape is not ours to remove.
        assert!(d.path().join(format!(".x.{dead}.partial")).exists());
        assert!(d.path().join(format!(".outcore-sort-{me}-0")).exists());
        assert!(d.path().join("grid.data").exists());
    }

    #[test]
    fn registrations_come_and_go() {
        let d = tempfile::tempdir().unwrap();
        let a = d.path().join("a");
        std::fs::write(&a, "x").unwrap();
        let r = register(&a);
        assert!(REGISTERED.lock().unwrap().iter().any(|(_, p)| p == &a));
        drop(r);
        assert!(!REGISTERED.lock().unwrap().iter().any(|(_, p)| p == &a));
        assert!(a.exists(), "unregistering does not remove");
    }
}
