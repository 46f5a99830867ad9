//! Result files never destroy what they point at: devices and FIFOs are written in
//! place, symbolic links are followed, temporaries are hidden, unique per process
//! and removed on every error path, `-` is standard output, the format follows the
//! extension, bad directories fail before the computation, and nothing is written
//! inside the store being read.

mod common;

use common::{err, run, s};
use std::os::unix::fs::FileTypeExt;
use std::path::{Path, PathBuf};

/// Ids 10, 20, 30 form a path; 1000 and 2000 are joined; 5 is alone.
fn store(dir: &Path) -> PathBuf {
    let input = dir.join("g.txt");
    std::fs::write(&input, "10 20\n20 30\n1000 2000\n5 5\n").unwrap();
    let out = dir.join("g");
    let o = run(&["ingest", s(&input), "-o", s(&out), "--remap"]);
    assert!(o.status.success(), "{}", err(&o));
    out
}

const BFS_TEXT: &str =
    "5 9223372036854775807\n10 0\n20 1\n30 2\n1000 9223372036854775807\n2000 9223372036854775807\n";

fn mkfifo(p: &Path) {
    let c = std::ffi::CString::new(p.to_str().unwrap()).unwrap();
    // SAFETY: `c` is a valid NUL-terminated path for the duration of the call.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0, "mkfifo");
}

/// Reads a FIFO to its end on a thread (the writer blocks until it is opened).
fn drain(p: &Path) -> std::thread::JoinHandle<Vec<u8>> {
    let p = p.to_path_buf();
    std::thread::spawn(move || std::fs::read(p).unwrap())
}

/// The names in `dir`, sorted.
fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

#[test]
fn fifos_and_devices_are_written_in_place_never_replaced() {
    let d = tempfile::tempdir().unwrap();
    let g = store(d.path());
    let fifo = d.path().join("result.fifo");
    mkfifo(&fifo);
    let reader = drain(&fifo);
    let o = run(&["run", "bfs", s(&g), "--root", "10", "--out", s(&fifo)]);
    assert!(o.status.success(), "{}", err(&o));
    assert_eq!(String::from_utf8(reader.join().unwrap()).unwrap(), BFS_TEXT);
    assert!(std::fs::symlink_metadata(&fifo)
        .unwrap()
        .file_type()
        .is_fifo());

    // Statistics, the jobs engine's statistics, `limit --json` and `generate -o`
    // into a FIFO: each written through it, the FIFO still a FIFO.
    let cases: Vec<Vec<String>> = vec![
        vec!["run", "wcc", s(&g), "--stats", s(&fifo)],
        vec!["jobs", s(&g), "wcc", "--stats", s(&fifo)],
        vec!["limit", "--mem", "1G", "--json", s(&fifo), "--", "true"],
        vec!["generate", "path", "--vertices", "10", "-o", s(&fifo)],
    ]
    .into_iter()
    .map(|v| v.into_iter().map(String::from).collect())
    .collect();
    for args in &cases {
        let reader = drain(&fifo);
        let a: Vec<&str> = args.iter().map(|x| x.as_str()).collect();
        let o = run(&a);
        let got = reader.join().unwrap();
        if a[0] == "limit" && !o.status.success() {
            // No cgroup limiter on this machine: nothing to check for this command.
            eprintln!("skipping limit: {}", err(&o));
            continue;
        }
        assert!(o.status.success(), "{a:?}: {}", err(&o));
        assert!(!got.is_empty(), "{a:?} wrote nothing into the FIFO");
        if a[0] == "generate" {
            assert_eq!(got.len(), 9 * 8, "path of 10 vertices: 9 bin32 edges");
        } else {
            let _: serde_json::Value = serde_json::from_slice(&got).unwrap();
        }
        assert!(std::fs::symlink_metadata(&fifo)
            .unwrap()
            .file_type()
            .is_fifo());
    }

    // A character device of our own (the null device, as /dev/null is): written
    // in place, still a device afterwards. Needs CAP_MKNOD; skipped without it.
    let dev = d.path().join("null");
    let c = std::ffi::CString::new(dev.to_str().unwrap()).unwrap();
    // SAFETY: `c` is a valid NUL-terminated path; makedev(1, 3) is the null device.
    let made = unsafe { libc::mknod(c.as_ptr(), libc::S_IFCHR | 0o666, libc::makedev(1, 3)) };
    if made != 0 {
        eprintln!("skipping the device case: mknod is not permitted here");
        return;
    }
    for extra in [&["--out", s(&dev)][..], &["--stats", s(&dev)][..]] {
        let mut a = vec!["run", "bfs", s(&g), "--root", "10"];
        a.extend_from_slice(extra);
        let o = run(&a);
        assert!(o.status.success(), "{a:?}: {}", err(&o));
        let ft = std::fs::symlink_metadata(&dev).unwrap().file_type();
        assert!(ft.is_char_device(), "{a:?} replaced the device");
    }
    assert!(
        !names(d.path()).iter().any(|n| n.contains("partial")),
        "{:?}",
        names(d.path())
    );
}

#[test]
fn symlinks_are_followed_and_stdout_is_dash() {
    let d = tempfile::tempdir().unwrap();
    let g = store(d.path());
    let real = d.path().join("real.txt");
    std::fs::write(&real, "old").unwrap();
    let link = d.path().join("link.txt");
    std::os::unix::fs::symlink("real.txt", &link).unwrap();
    let o = run(&["run", "bfs", s(&g), "--root", "10", "--out", s(&link)]);
    assert!(o.status.success(), "{}", err(&o));
    assert!(std::fs::symlink_metadata(&link)
        .unwrap()
        .file_type()
        .is_symlink());
    assert_eq!(std::fs::read_to_string(&real).unwrap(), BFS_TEXT);

    let o = run(&["run", "bfs", s(&g), "--root", "10", "--out", "-"]);
    assert!(o.status.success(), "{}", err(&o));
    assert_eq!(String::from_utf8(o.stdout).unwrap(), BFS_TEXT);

    let o = run(&["run", "wcc", s(&g), "--stats", "-"]);
    assert!(o.status.success(), "{}", err(&o));
    let j: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(j["algorithm"], "wcc");

    let o = run(&["run", "wcc", s(&g), "--stats", "-", "--out", "-"]);
    assert!(!o.status.success());
    assert!(err(&o).contains("standard output"), "{}", err(&o));
}

#[test]
fn the_format_follows_the_extension_unless_given() {
    let d = tempfile::tempdir().unwrap();
    let g = store(d.path());
    let get = |name: &str, extra: &[&str]| -> Vec<u8> {
        let p = d.path().join(name);
        let mut a = vec!["run", "bfs", s(&g), "--root", "10", "--out", s(&p)];
        a.extend_from_slice(extra);
        let o = run(&a);
        assert!(o.status.success(), "{}", err(&o));
        std::fs::read(p).unwrap()
    };
    assert!(get("r.npy", &[]).starts_with(b"\x93NUMPY"));
    assert_eq!(get("r.bin", &[]).len(), 6 * 16);
    let csv = String::from_utf8(get("r.csv", &[])).unwrap();
    assert!(
        csv.starts_with("id,value\n5,9223372036854775807\n10,0\n"),
        "{csv}"
    );
    assert_eq!(get("r.txt", &[]), BFS_TEXT.as_bytes());
    assert_eq!(get("r.out", &[]), BFS_TEXT.as_bytes());
    assert_eq!(
        get("r2.npy", &["--out-format", "text"]),
        BFS_TEXT.as_bytes()
    );
}

#[test]
fn concurrent_runs_to_names_with_one_stem_do_not_mix() {
    let d = tempfile::tempdir().unwrap();
    let g = store(d.path());
    let exe = env!("CARGO_BIN_EXE_outcore");
    for _ in 0..5 {
        let txt = d.path().join("r.txt");
        let npy = d.path().join("r.npy");
        let spawn = |p: &Path| {
            std::process::Command::new(exe)
                .args(["run", "bfs", s(&g), "--root", "10", "--out", s(p)])
                .stderr(std::process::Stdio::null())
                .spawn()
                .unwrap()
        };
        let (mut a, mut b) = (spawn(&txt), spawn(&npy));
        assert!(a.wait().unwrap().success());
        assert!(b.wait().unwrap().success());
        assert_eq!(std::fs::read_to_string(&txt).unwrap(), BFS_TEXT);
        assert!(std::fs::read(&npy).unwrap().starts_with(b"\x93NUMPY"));
    }
    assert!(
        !names(d.path()).iter().any(|n| n.contains("partial")),
        "{:?}",
        names(d.path())
    );
}

#[test]
fn bad_targets_fail_before_work_and_leave_nothing() {
    let d = tempfile::tempdir().unwrap();
    let g = store(d.path());
    // A missing directory: refused at once, naming it.
    let o = run(&[
        "run",
        "bfs",
        s(&g),
        "--root",
        "10",
        "--out",
        s(&d.path().join("missing/r.txt")),
    ]);
    assert!(!o.status.success());
    assert!(err(&o).contains("missing"), "{}", err(&o));
    assert!(!err(&o).contains("bfs:"), "ran before failing: {}", err(&o));
    // A directory as the target.
    let o = run(&["run", "bfs", s(&g), "--root", "10", "--out", s(d.path())]);
    assert!(!o.status.success());
    assert!(err(&o).to_lowercase().contains("directory"), "{}", err(&o));
    // Inside the store being read.
    let o = run(&["run", "wcc", s(&g), "--out", s(&g.join("manifest.json"))]);
    assert!(!o.status.success());
    assert!(err(&o).contains("inside the store"), "{}", err(&o));
    let o = run(&["run", "wcc", s(&g), "--stats", s(&g.join("x.json"))]);
    assert!(!o.status.success());
    assert!(err(&o).contains("inside the store"), "{}", err(&o));
    let o = run(&["info", s(&g)]);
    assert!(o.status.success(), "the store was damaged: {}", err(&o));
    // A failure after the temporary was made (an unknown root) removes it and
    // leaves the old result untouched.
    let out = d.path().join("r.txt");
    std::fs::write(&out, "old").unwrap();
    let o = run(&["run", "bfs", s(&g), "--root", "77", "--out", s(&out)]);
    assert!(!o.status.success());
    assert_eq!(std::fs::read_to_string(&out).unwrap(), "old");
    assert!(
        !names(d.path()).iter().any(|n| n.contains("partial")),
        "{:?}",
        names(d.path())
    );
    // A temporary left by a killed process is removed by the next write there.
    let stale = d.path().join(".r.txt.4999999.partial");
    std::fs::write(&stale, "x").unwrap();
    let o = run(&["run", "bfs", s(&g), "--root", "10", "--out", s(&out)]);
    assert!(o.status.success(), "{}", err(&o));
    assert!(!stale.exists());
}

#[test]
fn generate_refuses_to_overwrite_without_force() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("g.bin32");
    std::fs::write(&p, "precious").unwrap();
    let o = run(&["generate", "path", "--vertices", "10", "-o", s(&p)]);
    assert!(!o.status.success());
    assert!(err(&o).contains("--force"), "{}", err(&o));
    assert_eq!(std::fs::read(&p).unwrap(), b"precious");
    let o = run(&[
        "generate",
        "path",
        "--vertices",
        "10",
        "-o",
        s(&p),
        "--force",
    ]);
    assert!(o.status.success(), "{}", err(&o));
    assert_eq!(std::fs::read(&p).unwrap().len(), 9 * 8);
    assert_eq!(names(d.path()), vec!["g.bin32".to_string()]);
}
