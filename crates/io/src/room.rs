//! How much memory this process and its page cache may use at most: the
//! machine's memory, or less where a cgroup this process belongs to (or an
//! ancestor of it) sets a memory limit — cgroup v1 (`memory.limit_in_bytes`
//! under the `memory` controller's mount) or v2 (`memory.max`). The page
//! cache a process fills is charged to its cgroup, so a store larger than
//! that limit minus what the process holds cannot stay cached between passes:
//! reading it through the cache only adds a copy and reclaim (the streaming
//! engine then reads past it, `outcore run`'s automatic `--direct`).
//!
//! Best effort: a file that cannot be read or parsed (no cgroup mount, a
//! cgroup namespace that hides the path) is passed over, never an error.

use std::path::{Path, PathBuf};

/// The smallest of the machine's memory (`MemTotal`) and every memory limit
/// set on this process's cgroups and their ancestors; `None` when not even
/// `/proc/meminfo` can be read.
pub fn memory_limit() -> Option<u64> {
    let total = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|s| mem_total(&s));
    let groups = std::fs::read_to_string("/proc/self/cgroup").unwrap_or_default();
    let limit = cgroup_files(&groups, Path::new("/sys/fs/cgroup"))
        .iter()
        .filter_map(|f| std::fs::read_to_string(f).ok())
        .filter_map(|s| parse_limit(&s))
        .min();
    match (total, limit) {
        (Some(t), Some(l)) => Some(t.min(l)),
        (t, l) => t.or(l),
    }
}

/// `MemTotal` of a `/proc/meminfo` text, in bytes.
fn mem_total(meminfo: &str) -> Option<u64> {
    let kib = meminfo
        .lines()
        .find_map(|l| l.strip_prefix("MemTotal:"))?
        .trim()
        .strip_suffix("kB")?
        .trim()
        .parse::<u64>()
        .ok()?;
    Some(kib * 1024)
}

/// A limit file's value: a byte count, or `None` for v2's `max`.
fn parse_limit(s: &str) -> Option<u64> {
    s.trim().parse().ok()
}

/// The limit files of the cgroups named in a `/proc/self/cgroup` text and of
/// their ancestors, under the cgroup mount `root`: v1's memory controller
/// (`/sys/fs/cgroup/memory/PATH/memory.limit_in_bytes`) and v2's unified
/// hierarchy (`/sys/fs/cgroup/PATH/memory.max`, or under `unified/` on a
/// hybrid mount).
fn cgroup_files(groups: &str, root: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for line in groups.lines() {
        let mut parts = line.splitn(3, ':');
        let (Some(id), Some(controllers), Some(path)) = (parts.next(), parts.next(), parts.next())
        else {
            continue;
        };
        let rel = path.trim_start_matches('/');
        let mut push_all = |base: PathBuf, name: &str| {
            let mut dir = base.join(rel);
            loop {
                files.push(dir.join(name));
                if dir == base || !dir.pop() {
                    break;
                }
            }
        };
        if id == "0" && controllers.is_empty() {
            push_all(root.to_path_buf(), "memory.max");
            push_all(root.join("unified"), "memory.max");
        } else if controllers.split(',').any(|c| c == "memory") {
            push_all(root.join("memory"), "memory.limit_in_bytes");
        }
    }
    files
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_machine_and_cgroup_limits_are_read() {
        assert_eq!(
            mem_total("MemTotal:       24600000 kB\nMemFree: 1 kB\n"),
            Some(24600000 * 1024)
        );
        assert_eq!(mem_total("MemFree: 1 kB\n"), None);
        assert_eq!(parse_limit("max\n"), None);
        assert_eq!(parse_limit("536870912\n"), Some(512 << 20));
        let root = Path::new("/cg");
        let v1 = cgroup_files("4:memory:/a/b\n3:cpuset:/\n0::/\n", root);
        let want: Vec<PathBuf> = [
            "/cg/memory/a/b/memory.limit_in_bytes",
            "/cg/memory/a/memory.limit_in_bytes",
            "/cg/memory/memory.limit_in_bytes",
            "/cg/memory.max",
            "/cg/unified/memory.max",
        ]
        .iter()
        .map(PathBuf::from)
        .collect();
        assert_eq!(v1, want);
        let v2 = cgroup_files("0::/user.slice/x\n", root);
        assert_eq!(v2[0], PathBuf::from("/cg/user.slice/x/memory.max"));
        assert_eq!(v2[2], PathBuf::from("/cg/memory.max"));
        assert_eq!(v2.len(), 6);
    }

    #[test]
    fn a_limit_set_on_a_cgroup_is_found_in_a_tree() {
        // A v2 tree in a temporary directory: the child's limit, below its
        // parent's "max", is the one that counts.
        let dir = tempfile::tempdir().unwrap();
        let child = dir.path().join("a/b");
        std::fs::create_dir_all(&child).unwrap();
        std::fs::write(dir.path().join("a/memory.max"), "max\n").unwrap();
        std::fs::write(child.join("memory.max"), "1048576\n").unwrap();
        let least = cgroup_files("0::/a/b\n", dir.path())
            .iter()
            .filter_map(|f| std::fs::read_to_string(f).ok())
            .filter_map(|s| parse_limit(&s))
            .min();
        assert_eq!(least, Some(1 << 20));
        assert!(memory_limit().is_some_and(|m| m > 0));
    }
}
