//! Running one command under a hard memory limit with a cold page cache, and
//! collecting what the operating system knows about it.
//!
//! DESIGN.md ("Measuring"): out-of-core is shown the way the papers did — CLIP
//! (clip-atc17.md §5.1) capped memory with cgroups from 16 MB up. The limit covers the
//! process's anonymous memory *and* the page cache it brings in, so a run cannot hide
//! its edges in cached pages.
//!
//! * The child cgroup is created under this process's own memory cgroup (cgroup v1:
//!   `/sys/fs/cgroup/memory/<own path>/`, cgroup v2: `/sys/fs/cgroup/<own path>/`),
//!   the limit set (`memory.limit_in_bytes` and, where present, the memory+swap limit
//!   on v1; `memory.max` and `memory.swap.max = 0` on v2), and the command joins it
//!   between fork and exec, so every byte it touches is charged from the start.
//! * Before the run, the named files are dropped from the page cache
//!   (`posix_fadvise(DONTNEED)` after `fdatasync`).
//! * After the run: wall time, `wait4` rusage (bytes really read from and written to
//!   storage as `ru_inblock`/`ru_oublock` × 512, page-cache hits excluded; peak RSS),
//!   the cgroup's peak memory (`memory.max_usage_in_bytes` / `memory.peak`) and OOM
//!   kills (`memory.oom_control` / `memory.events`). The cgroup is removed.
//!
//! Without permission to create a cgroup the error says so and names the directory;
//! nothing is run unlimited unless the caller asks for it ([`Limiter::Unlimited`]).

use crate::BenchError;
use std::ffi::CString;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// Which cgroup interface the memory controller is reached through.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CgroupVersion {
    V1,
    V2,
}

impl CgroupVersion {
    pub fn name(self) -> &'static str {
        match self {
            CgroupVersion::V1 => "v1",
            CgroupVersion::V2 => "v2",
        }
    }
}

/// How runs are confined.
#[derive(Debug, Clone)]
pub enum Limiter {
    /// Child cgroups under this directory (the process's own memory cgroup).
    Cgroup {
        parent: PathBuf,
        version: CgroupVersion,
    },
    /// No cgroup: limits are not enforced and peak memory is the child's peak RSS.
    Unlimited,
}

/// Finds this process's memory cgroup and checks that a child can be created there.
pub fn detect() -> Result<Limiter, BenchError> {
    let text = std::fs::read_to_string("/proc/self/cgroup")
        .map_err(|e| BenchError::Cgroup(format!("cannot read /proc/self/cgroup: {e}")))?;
    let mut v1 = None;
    let mut v2 = None;
    for line in text.lines() {
        let mut parts = line.splitn(3, ':');
        let (_, ctrls, path) = match (parts.next(), parts.next(), parts.next()) {
            (Some(a), Some(b), Some(c)) => (a, b, c),
            _ => continue,
        };
        if ctrls.split(',').any(|c| c == "memory") {
            v1 = Some(path.to_string());
        } else if ctrls.is_empty() {
            v2 = Some(path.to_string());
        }
    }
    let (parent, version) = if let (Some(p), true) =
        (&v1, Path::new("/sys/fs/cgroup/memory").is_dir())
    {
        (
            PathBuf::from(format!("/sys/fs/cgroup/memory{p}")),
            CgroupVersion::V1,
        )
    } else if let Some(p) = &v2 {
        let mut base = PathBuf::from(format!("/sys/fs/cgroup{p}"));
        if !base.join("memory.max").exists()
            && !base.join("cgroup.subtree_control").exists()
            && Path::new("/sys/fs/cgroup/unified").is_dir()
        {
            base = PathBuf::from(format!("/sys/fs/cgroup/unified{p}"));
        }
        (base, CgroupVersion::V2)
    } else {
        return Err(BenchError::Cgroup(
            "this process is in no memory cgroup (neither a v1 memory controller nor a v2 hierarchy in /proc/self/cgroup)".into(),
        ));
    };
    if version == CgroupVersion::V2 {
        let ctl =
            std::fs::read_to_string(parent.join("cgroup.subtree_control")).unwrap_or_default();
        if !ctl.split_whitespace().any(|c| c == "memory") {
            std::fs::write(parent.join("cgroup.subtree_control"), "+memory").map_err(|e| {
                BenchError::Cgroup(format!(
                    "cannot enable the memory controller for child cgroups of {} ({e}); cgroup v2 needs a delegated cgroup whose own processes live in a leaf (e.g. `systemd-run --user --scope -p Delegate=yes`), or root; or pass --no-cgroup to run without memory limits",
                    parent.display()
                ))
            })?;
        }
    }
    // Probe: create and remove one child.
    let probe = parent.join(format!("outcore-probe-{}", std::process::id()));
    std::fs::create_dir(&probe).map_err(|e| {
        BenchError::Cgroup(format!(
            "cannot create a child memory cgroup in {} ({e}); run as root, or in a cgroup delegated to this user, or pass --no-cgroup to run without memory limits",
            parent.display()
        ))
    })?;
    let _ = std::fs::remove_dir(&probe);
    Ok(Limiter::Cgroup { parent, version })
}

/// Drops `paths` (files, or directories walked recursively) from the page cache.
/// Returns the number of files evicted.
pub fn evict(paths: &[PathBuf]) -> usize {
    let mut n = 0;
    let mut stack: Vec<PathBuf> = paths.to_vec();
    while let Some(p) = stack.pop() {
        if p.is_dir() {
            if let Ok(rd) = std::fs::read_dir(&p) {
                stack.extend(rd.flatten().map(|e| e.path()));
            }
        } else if let Ok(f) = std::fs::File::open(&p) {
            let _ = f.sync_data();
            // SAFETY: plain syscall on a descriptor we own.
            unsafe {
                libc::posix_fadvise(
                    std::os::fd::AsRawFd::as_raw_fd(&f),
                    0,
                    0,
                    libc::POSIX_FADV_DONTNEED,
                );
            }
            n += 1;
        }
    }
    n
}

/// How a run ended.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    /// Exit code, or None when killed by a signal.
    pub exit_code: Option<i32>,
    pub signal: Option<i32>,
    /// Killed by the harness after the timeout.
    pub timed_out: bool,
    pub wall_s: f64,
    /// Bytes read from / written to storage (rusage blocks × 512).
    pub read_bytes: u64,
    pub write_bytes: u64,
    pub max_rss_bytes: u64,
    /// Peak memory of the cgroup, page cache included (None without a cgroup).
    pub peak_bytes: Option<u64>,
    /// OOM kills inside the cgroup (None where the kernel does not report them).
    pub oom_kills: Option<u64>,
    pub limit_bytes: Option<u64>,
}

impl Outcome {
    /// True when the memory limit killed the run.
    pub fn oom_killed(&self) -> bool {
        self.oom_kills.unwrap_or(0) > 0
            || (self.limit_bytes.is_some()
                && self.signal == Some(libc::SIGKILL)
                && !self.timed_out
                && self.oom_kills.is_none())
    }
}

static SEQ: AtomicU64 = AtomicU64::new(0);

struct Group {
    dir: PathBuf,
    version: CgroupVersion,
}

impl Group {
    fn create(
        parent: &Path,
        version: CgroupVersion,
        limit: Option<u64>,
    ) -> Result<Group, BenchError> {
        let dir = parent.join(format!(
            "outcore-bench-{}-{}",
            std::process::id(),
            SEQ.fetch_add(1, Ordering::Relaxed)
        ));
        let shown = dir.display().to_string();
        let fail =
            |what: &str, e: std::io::Error| BenchError::Cgroup(format!("{what} {shown}: {e}"));
        std::fs::create_dir(&dir).map_err(|e| fail("cannot create cgroup", e))?;
        let g = Group { dir, version };
        if let Some(limit) = limit {
            match version {
                CgroupVersion::V1 => {
                    std::fs::write(g.dir.join("memory.limit_in_bytes"), limit.to_string())
                        .map_err(|e| fail("cannot set memory.limit_in_bytes of", e))?;
                    let _ = std::fs::write(
                        g.dir.join("memory.memsw.limit_in_bytes"),
                        limit.to_string(),
                    );
                }
                CgroupVersion::V2 => {
                    std::fs::write(g.dir.join("memory.max"), limit.to_string())
                        .map_err(|e| fail("cannot set memory.max of", e))?;
                    let _ = std::fs::write(g.dir.join("memory.swap.max"), "0");
                }
            }
        }
        Ok(g)
    }

    fn read_u64(&self, name: &str) -> Option<u64> {
        std::fs::read_to_string(self.dir.join(name))
            .ok()?
            .split_whitespace()
            .next()?
            .parse()
            .ok()
    }

    fn keyed(&self, file: &str, key: &str) -> Option<u64> {
        let text = std::fs::read_to_string(self.dir.join(file)).ok()?;
        text.lines().find_map(|l| {
            let mut it = l.split_whitespace();
            (it.next()? == key).then(|| it.next()?.parse().ok())?
        })
    }

    fn peak(&self) -> Option<u64> {
        match self.version {
            CgroupVersion::V1 => self.read_u64("memory.max_usage_in_bytes"),
            CgroupVersion::V2 => self.read_u64("memory.peak"),
        }
    }

    fn oom_kills(&self) -> Option<u64> {
        match self.version {
            CgroupVersion::V1 => self.keyed("memory.oom_control", "oom_kill"),
            CgroupVersion::V2 => self.keyed("memory.events", "oom_kill"),
        }
    }
}

impl Drop for Group {
    fn drop(&mut self) {
        // The cgroup empties a moment after its last process is reaped.
        for _ in 0..100 {
            if std::fs::remove_dir(&self.dir).is_ok() || !self.dir.exists() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// Formats `n` in decimal into `buf` without allocating; returns the digits.
fn decimal(mut n: u64, buf: &mut [u8; 24]) -> &[u8] {
    let mut i = buf.len();
    loop {
        i -= 1;
        buf[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            return &buf[i..];
        }
    }
}

/// Runs `cmd` to completion under `limiter` with at most `limit` bytes of memory,
/// killing it after `timeout`. Stdout and stderr go where `cmd` says.
pub fn run_limited(
    cmd: Command,
    limiter: &Limiter,
    limit: Option<u64>,
    timeout: Option<Duration>,
) -> Result<Outcome, BenchError> {
    run_group(vec![cmd], false, limiter, limit, timeout)
}

/// Makes `cmd` join the cgroup whose `cgroup.procs` is `procs` between fork and exec.
fn join_on_exec(cmd: &mut Command, procs: &CString) {
    let procs = procs.clone();
    // SAFETY: the closure runs in the child between fork and exec and only makes
    // async-signal-safe calls (getpid, open, write, close) on memory prepared
    // before the fork; nothing is allocated.
    unsafe {
        cmd.pre_exec(move || {
            let mut buf = [0u8; 24];
            let pid = libc::getpid() as u64;
            let digits = decimal(pid, &mut buf);
            let fd = libc::open(procs.as_ptr(), libc::O_WRONLY);
            if fd < 0 {
                return Err(std::io::Error::last_os_error());
            }
            let n = libc::write(fd, digits.as_ptr().cast(), digits.len());
            let err = std::io::Error::last_os_error();
            libc::close(fd);
            if n != digits.len() as isize {
                return Err(err);
            }
            Ok(())
        });
    }
}

/// Runs several commands in one cgroup (one limit for all of them together): one
/// after another (stopping at the first that fails), or all at once. The outcome
/// sums their storage bytes, keeps the largest RSS, and reports the first failure;
/// the wall time is from the first start to the last end.
pub fn run_group(
    mut cmds: Vec<Command>,
    concurrent: bool,
    limiter: &Limiter,
    limit: Option<u64>,
    timeout: Option<Duration>,
) -> Result<Outcome, BenchError> {
    let group = match limiter {
        Limiter::Cgroup { parent, version } => Some(Group::create(parent, *version, limit)?),
        Limiter::Unlimited => None,
    };
    if let Some(g) = &group {
        let procs = CString::new(
            g.dir
                .join("cgroup.procs")
                .as_os_str()
                .to_string_lossy()
                .as_bytes(),
        )
        .map_err(|_| BenchError::Cgroup(format!("bad cgroup path {}", g.dir.display())))?;
        for c in cmds.iter_mut() {
            join_on_exec(c, &procs);
        }
    }
    let start = Instant::now();
    let mut out = Outcome {
        exit_code: Some(0),
        signal: None,
        timed_out: false,
        wall_s: 0.0,
        read_bytes: 0,
        write_bytes: 0,
        max_rss_bytes: 0,
        peak_bytes: None,
        oom_kills: None,
        limit_bytes: group.as_ref().and(limit),
    };
    let spawn = |c: &mut Command| -> Result<libc::pid_t, BenchError> {
        let child = c
            .spawn()
            .map_err(|e| BenchError::Spawn(format!("{:?}: {e}", c.get_program())))?;
        let pid = child.id() as libc::pid_t;
        // Reaped below with wait4; std's handle must not wait again.
        std::mem::forget(child);
        Ok(pid)
    };
    let mut pending: Vec<libc::pid_t> = Vec::new();
    let mut queue = cmds.into_iter();
    if concurrent {
        for mut c in queue.by_ref() {
            pending.push(spawn(&mut c)?);
        }
    } else if let Some(mut c) = queue.next() {
        pending.push(spawn(&mut c)?);
    }
    let mut failed = false;
    while !pending.is_empty() {
        let mut reaped = None;
        for (i, &pid) in pending.iter().enumerate() {
            let mut status: libc::c_int = 0;
            // SAFETY: rusage is plain integers; zero is valid.
            let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
            // SAFETY: waits for our own child; status and usage are valid out-pointers.
            let r = unsafe { libc::wait4(pid, &mut status, libc::WNOHANG, &mut usage) };
            if r == pid {
                out.read_bytes += usage.ru_inblock as u64 * 512;
                out.write_bytes += usage.ru_oublock as u64 * 512;
                out.max_rss_bytes = out.max_rss_bytes.max(usage.ru_maxrss as u64 * 1024);
                let ok = libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0;
                if !ok && !failed {
                    failed = true;
                    if libc::WIFEXITED(status) {
                        out.exit_code = Some(libc::WEXITSTATUS(status));
                    } else if libc::WIFSIGNALED(status) {
                        out.exit_code = None;
                        out.signal = Some(libc::WTERMSIG(status));
                    }
                }
                reaped = Some(i);
                break;
            }
            if r < 0 {
                let e = std::io::Error::last_os_error();
                if e.kind() != std::io::ErrorKind::Interrupted {
                    return Err(BenchError::Spawn(format!("wait4: {e}")));
                }
            }
        }
        if let Some(i) = reaped {
            pending.swap_remove(i);
            if !concurrent && !failed {
                if let Some(mut c) = queue.next() {
                    pending.push(spawn(&mut c)?);
                }
            }
            continue;
        }
        if let Some(t) = timeout {
            if !out.timed_out && start.elapsed() > t {
                out.timed_out = true;
                for &pid in &pending {
                    // SAFETY: signals our own, not yet reaped, children.
                    unsafe { libc::kill(pid, libc::SIGKILL) };
                }
            }
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    out.wall_s = start.elapsed().as_secs_f64();
    out.peak_bytes = group.as_ref().and_then(|g| g.peak());
    out.oom_kills = group.as_ref().and_then(|g| g.oom_kills());
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decimal_formats() {
        let mut b = [0u8; 24];
        assert_eq!(decimal(0, &mut b), b"0");
        assert_eq!(decimal(1234567, &mut b), b"1234567");
        assert_eq!(decimal(u64::MAX, &mut b), b"18446744073709551615");
    }

    #[test]
    fn unlimited_run_reports_exit_and_time() {
        let mut c = Command::new("sh");
        c.args(["-c", "exit 3"]);
        let o = run_limited(c, &Limiter::Unlimited, None, None).unwrap();
        assert_eq!(o.exit_code, Some(3));
        assert!(!o.oom_killed() && !o.timed_out);
        assert_eq!(o.peak_bytes, None);
        let mut c = Command::new("sleep");
        c.arg("5");
        let o = run_limited(
            c,
            &Limiter::Unlimited,
            None,
            Some(Duration::from_millis(100)),
        )
        .unwrap();
        assert!(o.timed_out);
        assert_eq!(o.signal, Some(libc::SIGKILL));
        assert!(o.wall_s < 4.0);
    }

    #[test]
    fn groups_run_in_sequence_or_at_once() {
        let sleeper = || {
            let mut c = Command::new("sleep");
            c.arg("0.3");
            c
        };
        let o = run_group(
            vec![sleeper(), sleeper(), sleeper()],
            true,
            &Limiter::Unlimited,
            None,
            None,
        )
        .unwrap();
        assert_eq!(o.exit_code, Some(0));
        assert!(o.wall_s < 0.85, "at once: {}", o.wall_s);
        let o = run_group(
            vec![sleeper(), sleeper(), sleeper()],
            false,
            &Limiter::Unlimited,
            None,
            None,
        )
        .unwrap();
        assert!(o.wall_s >= 0.9, "in sequence: {}", o.wall_s);
        // A failure stops the sequence and is reported.
        let mut f = Command::new("sh");
        f.args(["-c", "exit 4"]);
        let o = run_group(vec![f, sleeper()], false, &Limiter::Unlimited, None, None).unwrap();
        assert_eq!(o.exit_code, Some(4));
        assert!(o.wall_s < 0.25, "stopped at the failure: {}", o.wall_s);
    }

    /// Where cgroups can be created (root on these machines), a run over its limit is
    /// killed and reported as an OOM kill, and one under it has its peak measured.
    #[test]
    fn cgroup_limit_is_enforced() {
        let limiter = match detect() {
            Ok(l) => l,
            Err(e) => {
                eprintln!("skipping: {e}");
                return;
            }
        };
        // python allocating 256 MiB under a 64 MiB limit.
        let mut c = Command::new("python3");
        c.args(["-c", "x = bytearray(256 << 20); print(len(x))"]);
        c.stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null());
        let o = run_limited(c, &limiter, Some(64 << 20), None).unwrap();
        assert!(o.oom_killed(), "{o:?}");
        assert_ne!(o.exit_code, Some(0));
        let mut c = Command::new("python3");
        c.args(["-c", "x = bytearray(16 << 20); print(len(x))"]);
        c.stdout(std::process::Stdio::null());
        let o = run_limited(c, &limiter, Some(256 << 20), None).unwrap();
        assert_eq!(o.exit_code, Some(0), "{o:?}");
        assert!(!o.oom_killed());
        let peak = o.peak_bytes.expect("cgroup peak");
        assert!((16 << 20..=256 << 20).contains(&peak), "{peak}");
        assert_eq!(o.limit_bytes, Some(256 << 20));
    }
}
