//! End-to-end tests of the `outcore` binary: bad input gets a precise message and
//! a non-zero exit and leaves no store; interrupted or failed ingests leave nothing
//! that opens; damaged stores are reported by file and reason; the real graphs in
//! ../shared/graphs ingest with the counts of their README.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_outcore"))
}

fn run(args: &[&str]) -> Output {
    bin().args(args).output().expect("runs outcore")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Hidden entries (an ingest's build directories) left in `dir`.
fn leftovers(dir: &Path) -> Vec<std::fs::DirEntry> {
    std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with('.'))
        .collect()
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// Ingest `text` (written to `name`) and expect failure with every `needles` in stderr.
fn ingest_fails(name: &str, content: &[u8], extra: &[&str], needles: &[&str]) {
    let d = tempfile::tempdir().unwrap();
    let input = d.path().join(name);
    std::fs::write(&input, content).unwrap();
    let out = d.path().join("store");
    let mut args = vec!["ingest", s(&input), "-o", s(&out)];
    args.extend_from_slice(extra);
    let o = run(&args);
    let err = stderr(&o);
    assert!(!o.status.success(), "expected failure for {name}");
    assert_eq!(o.status.code(), Some(1));
    for n in needles {
        assert!(err.contains(n), "stderr of {name} lacks {n:?}:\n{err}");
    }
    assert!(!err.contains("panicked"), "{err}");
    assert!(!out.exists(), "a failed ingest left a store");
    let leftovers = leftovers(d.path());
    assert!(
        leftovers.is_empty(),
        "temporary directories left: {leftovers:?}"
    );
}

#[test]
fn malformed_lines_name_file_line_and_text() {
    ingest_fails(
        "g.txt",
        b"# c\n0 1\n1 x\n",
        &[],
        &["g.txt:3: malformed line", "\"1 x\""],
    );
    ingest_fails(
        "g.txt",
        b"0 1\n1\n",
        &[],
        &["g.txt:2: malformed line", "expected `u v` or `u v w`"],
    );
    ingest_fails(
        "g.txt",
        b"0 1\r\n1 2 3 4\r\n",
        &[],
        &["g.txt:2: malformed line"],
    );
    ingest_fails(
        "g.txt",
        b"0 1 2.0\n1 2\n",
        &[],
        &["g.txt:2: malformed line: 2 columns, but line 1 has 3"],
    );
    ingest_fails(
        "g.txt",
        b"0 -1\n",
        &[],
        &["g.txt:1: malformed line: vertex ids must be non-negative integers"],
    );
    ingest_fails(
        "g.gr",
        b"c x\np sp 3 2\na 1 2 5\nz 1 2\n",
        &[],
        &["g.gr:4: malformed line: expected `a u v w`"],
    );
    ingest_fails(
        "g.gr",
        b"a 1 2 5\n",
        &[],
        &["g.gr:1: expected the problem line"],
    );
    ingest_fails(
        "g.mtx",
        b"%%MatrixMarket matrix array real general\n2 2\n1\n2\n3\n4\n",
        &[],
        &["g.mtx:1:", "only `coordinate`"],
    );
}

#[test]
fn ids_beyond_the_header_or_the_u32_range_are_refused() {
    ingest_fails(
        "g.gr",
        b"p sp 3 2\na 1 2 5\na 1 4 3\n",
        &[],
        &["g.gr:3: vertex id 4 exceeds the vertex count 3 in the header"],
    );
    ingest_fails(
        "g.mtx",
        b"%%MatrixMarket matrix coordinate pattern general\n% x\n3 3 2\n1 2\n5 1\n",
        &[],
        &["g.mtx:5: vertex id 5 exceeds the vertex count 3"],
    );
    ingest_fails(
        "g.gr",
        b"p sp 3 1\na 0 2 5\n",
        &[],
        &["g.gr:2: vertex id 0 is out of range: ids in this format start at 1"],
    );
    let mut rec = Vec::new();
    rec.extend_from_slice(&1u64.to_le_bytes());
    rec.extend_from_slice(&2u64.to_le_bytes());
    rec.extend_from_slice(&(1u64 << 32).to_le_bytes());
    rec.extend_from_slice(&0u64.to_le_bytes());
    ingest_fails(
        "g.bin64",
        &rec,
        &[],
        &[
            "g.bin64: record 1: vertex id 4294967296 is too large",
            "--remap",
        ],
    );
    ingest_fails(
        "g.txt",
        b"4294967295 1\n",
        &[],
        &["g.txt:1: vertex id 4294967295 is too large"],
    );
    ingest_fails(
        "g.gr",
        b"p sp 3 3\na 1 2 5\n",
        &[],
        &["promises 3 entries but the file holds 1"],
    );
    ingest_fails(
        "g.bin32",
        &[1, 0, 0, 0, 2, 0, 0, 0, 9],
        &[],
        &["g.bin32: truncated", "1 bytes", "8-byte bin32 record"],
    );
    // bin32 records are checked in place (no decoding) unless an id is too large.
    let rec: Vec<u8> = [0u32, 1, 2, 3, 7, u32::MAX]
        .iter()
        .flat_map(|x| x.to_le_bytes())
        .collect();
    ingest_fails(
        "g.bin32",
        &rec,
        &[],
        &["g.bin32: record 2: vertex id 4294967295 is too large"],
    );
    ingest_fails(
        "g.bin32",
        &rec[..16],
        &["--vertices", "3"],
        &["g.bin32: record 1: vertex id 3", "--vertices"],
    );
    // One stray large id: 4.3 billion vertices for one edge, refused before any
    // store file is written (and the same with random bytes read as bin32).
    ingest_fails(
        "g.txt",
        b"0 4294967293\n",
        &[],
        &["4294967294 vertices for 1 edges", "--remap", "--vertices N"],
    );
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    let noise: Vec<u8> = (0..100_000)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 24) as u8
        })
        .collect();
    ingest_fails(
        "noise.bin",
        &noise,
        &["--format", "bin32"],
        &["vertices for 12500 edges", "--remap"],
    );
}

#[test]
fn bad_weights_are_refused() {
    ingest_fails(
        "g.txt",
        b"0 1 1.5\n1 2 NaN\n",
        &[],
        &["g.txt:2: weight is NaN"],
    );
    ingest_fails(
        "g.txt",
        b"0 1 abc\n",
        &[],
        &["g.txt:1: weight \"abc\" is not a number"],
    );
    ingest_fails(
        "g.txt",
        b"0 1 inf\n",
        &[],
        &["g.txt:1: weight inf is not finite"],
    );
    let mut rec = Vec::new();
    for x in [0u32, 1] {
        rec.extend_from_slice(&x.to_le_bytes());
    }
    rec.extend_from_slice(&f32::NAN.to_le_bytes());
    ingest_fails(
        "g.bin32w",
        &rec,
        &[],
        &["g.bin32w: record 0: weight is NaN"],
    );
    ingest_fails(
        "g.txt",
        b"0 1\n",
        &["--weighted"],
        &["--weighted", "has no weight column"],
    );
}

#[test]
fn missing_input_and_unknown_format() {
    let d = tempfile::tempdir().unwrap();
    let out = d.path().join("s");
    let o = run(&["ingest", "/nonexistent/graph.txt", "-o", s(&out)]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("/nonexistent/graph.txt: cannot open input: No such file or directory"),
        "{}",
        stderr(&o)
    );
    ingest_fails(
        "g.dat",
        &[0, 1, 2, 3, 0xff, 0xfe, 0, 0],
        &[],
        &["cannot tell the format", "--format"],
    );
    let o = run(&["ingest", "x.txt", "-o", s(&out), "--format", "parquet"]);
    assert_eq!(o.status.code(), Some(2), "usage errors exit 2");
    assert!(stderr(&o).contains("unknown format"));
    // Other compressions are named, by content and by extension.
    ingest_fails(
        "g.txt",
        b"BZh91AY&SY\x00\x01",
        &[],
        &["g.txt: bzip2-compressed input is not supported", "gzip"],
    );
    ingest_fails(
        "g.txt.xz",
        b"\xFD7zXZ\x00\x00\x04",
        &[],
        &["g.txt.xz: xz-compressed input is not supported"],
    );
    ingest_fails(
        "g.el.zst",
        b"0 1\n",
        &[],
        &["zstd-compressed input is not supported"],
    );
}

/// The `run sssp` result from `root`, as text.
fn sssp_text(store: &Path, root: &str) -> String {
    let out = store.with_extension("sssp.txt");
    let o = run(&["run", "sssp", s(store), "--root", root, "--out", s(&out)]);
    assert!(o.status.success(), "{}", stderr(&o));
    std::fs::read_to_string(out).unwrap()
}

#[test]
fn csv_with_header_bom_and_weights_is_read_without_flags() {
    let d = tempfile::tempdir().unwrap();
    let tsv = d.path().join("g.txt");
    std::fs::write(&tsv, "10 20 1.5\n20 30 2\n10 30 5\n").unwrap();
    let reference = d.path().join("ref");
    assert!(run(&["ingest", s(&tsv), "-o", s(&reference), "--remap"])
        .status
        .success());
    let want = sssp_text(&reference, "10");
    for (name, text) in [
        (
            "a.csv",
            "src,dst,weight\n10,20,1.5\n20,30,2\n10,30,5\n".to_string(),
        ),
        (
            "b.csv",
            "\u{feff}source, target, w\r\n10, 20, 1.5\r\n20,30,2\r\n10,30,5\r\n".to_string(),
        ),
        (
            "c.csv",
            "# exported\n10,20,1.5\n20,30,2\n10,30,5\n".to_string(),
        ),
        // No extension: detected from the commas.
        ("d", "u,v,w\n10,20,1.5\n20,30,2\n10,30,5\n".to_string()),
    ] {
        let input = d.path().join(name);
        std::fs::write(&input, text).unwrap();
        let out = d.path().join(format!("{name}.store"));
        let o = run(&["ingest", s(&input), "-o", s(&out), "--remap"]);
        assert!(o.status.success(), "{name}: {}", stderr(&o));
        let info = run(&["info", s(&out), "--json"]);
        let j: serde_json::Value = serde_json::from_slice(&info.stdout).unwrap();
        assert_eq!(j["edges"], 3, "{name}");
        assert_eq!(j["weighted"], true, "{name}");
        assert_eq!(sssp_text(&out, "10"), want, "{name}");
    }
    // Unweighted CSV, and a malformed line named by file and line.
    ingest_fails(
        "e.csv",
        b"src,dst\n0,1\n1,,2\n",
        &[],
        &["e.csv:3: malformed line", "1,,2"],
    );
    ingest_fails(
        "f.csv",
        b"\xEF\xBB\xBFsrc,dst\n0,1\n1,x\n",
        &[],
        &["f.csv:3: malformed line: vertex ids must be non-negative integers"],
    );
}

/// A pipe whose reading end is already closed (`| head` that has exited).
fn closed_pipe() -> std::process::Stdio {
    let mut fds = [0i32; 2];
    // SAFETY: `fds` is a valid two-int array for pipe(2) to fill.
    assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
    // SAFETY: fds[0] was just opened by pipe(2) and is closed once, here.
    unsafe { libc::close(fds[0]) };
    // SAFETY: fds[1] was opened by pipe(2) and is owned by the Stdio from here on.
    unsafe { <std::process::Stdio as std::os::fd::FromRawFd>::from_raw_fd(fds[1]) }
}

#[test]
fn a_closed_pipe_ends_output_quietly() {
    let d = tempfile::tempdir().unwrap();
    let g = make_graph(d.path(), 8);
    let out = d.path().join("s");
    assert!(run(&["ingest", s(&g), "-o", s(&out)]).status.success());
    for args in [
        vec!["info", s(&out), "--json"],
        vec!["info", s(&out)],
        vec!["run", "bfs", s(&out), "--root", "0", "--out", "-"],
    ] {
        let o = bin().args(&args).stdout(closed_pipe()).output().unwrap();
        let err = stderr(&o);
        assert!(!err.contains("panicked"), "{args:?}: {err}");
        use std::os::unix::process::ExitStatusExt;
        assert!(
            o.status.signal() == Some(libc::SIGPIPE) || o.status.code() == Some(0),
            "{args:?}: {:?} {err}",
            o.status
        );
    }
}

#[test]
fn empty_input_gives_an_empty_store() {
    let d = tempfile::tempdir().unwrap();
    let input = d.path().join("e.txt");
    std::fs::write(&input, b"# nothing\n").unwrap();
    let out = d.path().join("s");
    let o = run(&["ingest", s(&input), "-o", s(&out)]);
    assert!(o.status.success(), "{}", stderr(&o));
    let o = run(&["info", s(&out), "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let j: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(j["edges"], 0);
    assert_eq!(j["vertices"], 0);
    assert_eq!(j["checksums_ok"], true);
}

#[test]
fn a_second_ingest_into_the_same_output_is_refused_at_once() {
    let d = tempfile::tempdir().unwrap();
    let a = d.path().join("a.txt");
    std::fs::write(&a, b"0 1\n1 2\n").unwrap();
    let out = d.path().join("s");
    // The first ingest's lock, held here as a running ingest holds it.
    let lock = outcore_io::NameLock::try_lock(&out).unwrap().expect("free");
    let t = std::time::Instant::now();
    let o = run(&["ingest", s(&a), "-o", s(&out), "--force"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("another ingest (or reorder) is writing this store now"),
        "{}",
        stderr(&o)
    );
    assert!(t.elapsed().as_secs() < 30, "it waited instead of refusing");
    assert!(!out.exists());
    drop(lock);
    let o = run(&["ingest", s(&a), "-o", s(&out)]);
    assert!(o.status.success(), "{}", stderr(&o));
    // Nothing beside the store: the lock file goes with the ingest.
    let mut left: Vec<String> = std::fs::read_dir(d.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    left.sort();
    assert_eq!(left, vec!["a.txt".to_string(), "s".to_string()]);
}

#[test]
fn an_existing_store_is_kept_unless_forced() {
    let d = tempfile::tempdir().unwrap();
    let a = d.path().join("a.txt");
    std::fs::write(&a, b"0 1\n1 2\n").unwrap();
    let b = d.path().join("b.txt");
    std::fs::write(&b, b"0 1\n").unwrap();
    let out = d.path().join("s");
    assert!(run(&["ingest", s(&a), "-o", s(&out)]).status.success());
    let o = run(&["ingest", s(&b), "-o", s(&out)]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("already holds an outcore store; pass --force"),
        "{}",
        stderr(&o)
    );
    let info = run(&["info", s(&out), "--json"]);
    let j: serde_json::Value = serde_json::from_slice(&info.stdout).unwrap();
    assert_eq!(j["edges"], 2, "the old store is intact");
    assert!(run(&["ingest", s(&b), "-o", s(&out), "--force"])
        .status
        .success());
    let j: serde_json::Value =
        serde_json::from_slice(&run(&["info", s(&out), "--json"]).stdout).unwrap();
    assert_eq!(j["edges"], 1);
    // A non-empty directory that is not a store is never overwritten.
    let other = d.path().join("docs");
    std::fs::create_dir(&other).unwrap();
    std::fs::write(other.join("keep.txt"), b"mine").unwrap();
    let o = run(&["ingest", s(&b), "-o", s(&other), "--force"]);
    assert!(
        stderr(&o).contains("is not empty and is not an outcore store"),
        "{}",
        stderr(&o)
    );
    assert_eq!(std::fs::read(other.join("keep.txt")).unwrap(), b"mine");
}

fn make_graph(dir: &Path, scale: u32) -> PathBuf {
    let g = dir.join("g.bin32");
    let o = run(&[
        "generate",
        "kronecker",
        "--scale",
        &scale.to_string(),
        "-o",
        s(&g),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    g
}

#[test]
fn a_full_disk_fails_cleanly() {
    let d = tempfile::tempdir().unwrap();
    let g = make_graph(d.path(), 12);
    for limit in ["1000", "200000", "900000"] {
        let out = d.path().join("s");
        let o = bin()
            .args(["ingest", s(&g), "-o", s(&out), "--in-edges", "--undirected"])
            .env("OUTCORE_FAULT_ENOSPC_AFTER", limit)
            .output()
            .unwrap();
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(1), "{err}");
        assert!(err.contains("No space left on device"), "{err}");
        assert!(!err.contains("panicked"), "{err}");
        assert!(!out.exists());
        let left = leftovers(d.path());
        assert!(
            left.is_empty(),
            "leftovers after disk full at {limit}: {left:?}"
        );
    }
}

#[test]
fn sigint_and_sigterm_remove_an_ingests_temporaries() {
    let d = tempfile::tempdir().unwrap();
    let g = make_graph(d.path(), 18);
    let out = d.path().join("s");
    let tmp = d.path().join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    let mut interrupted = 0;
    for sig in [libc::SIGINT, libc::SIGTERM] {
        let child = bin()
            .args(["ingest", s(&g), "-o", s(&out), "--memory", "8M"])
            .args(["--tmp-dir", s(&tmp), "--in-edges", "--force"])
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        // Wait for the build and spill directories, then interrupt.
        let build = format!(".s.ingest-{}", child.id());
        let t = std::time::Instant::now();
        while !d.path().join(&build).exists() && t.elapsed().as_secs() < 20 {
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
        // SAFETY: kill(2) on our own child's pid.
        unsafe { libc::kill(child.id() as i32, sig) };
        let o = child.wait_with_output().unwrap();
        let err = String::from_utf8_lossy(&o.stderr).into_owned();
        if o.status.success() {
            eprintln!("the ingest finished before the signal; nothing to check this time");
            continue;
        }
        interrupted += 1;
        assert_eq!(o.status.code(), Some(128 + sig), "{err}");
        assert!(err.contains("interrupted by SIG"), "{err}");
        assert!(err.contains("removed"), "{err}");
        let left: Vec<String> = std::fs::read_dir(d.path())
            .unwrap()
            .chain(std::fs::read_dir(&tmp).unwrap())
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with('.') || n.starts_with("outcore-"))
            .collect();
        assert!(left.is_empty(), "left behind: {left:?}");
        assert!(!out.exists(), "an interrupted ingest created the output");
    }
    assert!(
        interrupted > 0,
        "no ingest was interrupted; the graph is too small"
    );
}

#[test]
fn sigint_removes_a_runs_sort_directory() {
    let d = tempfile::tempdir().unwrap();
    let g = make_graph(d.path(), 19);
    let store = d.path().join("s");
    let o = run(&["ingest", s(&g), "-o", s(&store)]);
    assert!(o.status.success(), "{}", stderr(&o));
    let sorting = |dir: &Path| {
        std::fs::read_dir(dir)
            .unwrap()
            .flatten()
            .any(|e| e.file_name().to_string_lossy().starts_with(".outcore-"))
    };
    let mut interrupted = 0;
    for _ in 0..3 {
        // `mis` sorts the edges in the work directory (the store) first.
        let child = bin()
            .args(["run", "mis", s(&store), "--memory", "16M"])
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let t = std::time::Instant::now();
        while !sorting(&store) && t.elapsed().as_secs() < 20 {
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        // SAFETY: kill(2) on our own child's pid.
        unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
        let o = child.wait_with_output().unwrap();
        let err = String::from_utf8_lossy(&o.stderr).into_owned();
        if o.status.success() {
            continue;
        }
        interrupted += 1;
        assert_eq!(o.status.code(), Some(130), "{err}");
        assert!(err.contains("interrupted by SIGINT"), "{err}");
        assert!(!sorting(&store), "a sort directory was left in the store");
    }
    assert!(
        interrupted > 0,
        "no run was interrupted; the graph is too small"
    );
    assert!(run(&["info", s(&store)]).status.success());
}

#[test]
fn a_killed_ingest_leaves_no_store_and_the_next_one_cleans_up() {
    let d = tempfile::tempdir().unwrap();
    let g = make_graph(d.path(), 17);
    let out = d.path().join("s");
    let mut killed = 0;
    // Delays spread over the ingest; a seeded sequence keeps the test reproducible.
    for delay_ms in [5u64, 40, 90, 150, 230, 400] {
        let _ = std::fs::remove_dir_all(&out);
        let mut child = bin()
            .args([
                "ingest",
                s(&g),
                "-o",
                s(&out),
                "--undirected",
                "--in-edges",
                "--memory",
                "8M",
            ])
            .spawn()
            .unwrap();
        std::thread::sleep(std::time::Duration::from_millis(delay_ms));
        let finished = child.try_wait().unwrap().is_some();
        let _ = child.kill();
        let status = child.wait().unwrap();
        let info = run(&["info", s(&out)]);
        if finished && status.success() {
            assert!(
                info.status.success(),
                "a finished ingest must verify: {}",
                stderr(&info)
            );
            continue;
        }
        killed += 1;
        assert!(
            !info.status.success(),
            "a killed ingest left a store that opens"
        );
        assert!(!out.exists(), "a killed ingest created the output");
    }
    assert!(
        killed > 0,
        "no ingest was interrupted; the graph is too small"
    );
    let stale = std::fs::read_dir(d.path())
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with(".s.ingest-"))
        .count();
    assert!(stale > 0, "a killed ingest leaves its build directory");
    let o = run(&["ingest", s(&g), "-o", s(&out)]);
    assert!(o.status.success(), "{}", stderr(&o));
    let stale = std::fs::read_dir(d.path())
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with(".s.ingest-"))
        .count();
    assert_eq!(stale, 0, "the next ingest removes dead ingests' leftovers");
    assert!(run(&["info", s(&out)]).status.success());
}

#[test]
fn damaged_store_files_are_reported_by_name_and_reason() {
    let d = tempfile::tempdir().unwrap();
    let g = make_graph(d.path(), 10);
    let out = d.path().join("s");
    assert!(run(&["ingest", s(&g), "-o", s(&out), "--partitions", "4"])
        .status
        .success());
    let pristine = d.path().join("pristine");
    std::fs::create_dir(&pristine).unwrap();
    for e in std::fs::read_dir(&out).unwrap().flatten() {
        std::fs::copy(e.path(), pristine.join(e.file_name())).unwrap();
    }
    let restore = || {
        for e in std::fs::read_dir(&pristine).unwrap().flatten() {
            std::fs::copy(e.path(), out.join(e.file_name())).unwrap();
        }
    };
    let check = |needles: &[&str]| {
        let o = run(&["info", s(&out)]);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(1), "{err}");
        assert!(!err.contains("panicked"), "{err}");
        for n in needles {
            assert!(err.contains(n), "missing {n:?} in:\n{err}");
        }
    };
    // Truncation.
    let f = out.join("csr.out.targets");
    let len = std::fs::metadata(&f).unwrap().len();
    std::fs::OpenOptions::new()
        .write(true)
        .open(&f)
        .unwrap()
        .set_len(len - 10)
        .unwrap();
    check(&["csr.out.targets", "truncated"]);
    restore();
    // A flipped bit in the middle of the grid data.
    let f = out.join("grid.data");
    let mut bytes = std::fs::read(&f).unwrap();
    let mid = 4096 + (bytes.len() - 4096) / 2;
    bytes[mid] ^= 0x10;
    std::fs::write(&f, &bytes).unwrap();
    check(&["grid.data", "checksum mismatch"]);
    restore();
    // A damaged header.
    let f = out.join("degrees.out");
    let mut bytes = std::fs::read(&f).unwrap();
    bytes[20] ^= 1;
    std::fs::write(&f, &bytes).unwrap();
    check(&["degrees.out", "header checksum mismatch"]);
    restore();
    // A missing file and a missing manifest.
    std::fs::remove_file(out.join("degrees.in")).unwrap();
    check(&["degrees.in", "missing"]);
    restore();
    std::fs::remove_file(out.join("manifest.json")).unwrap();
    check(&["not an outcore store", "no manifest.json"]);
    restore();
    // An edited manifest: counts, flags, a checksum, or an older store version.
    let m = out.join("manifest.json");
    let text = std::fs::read_to_string(&m).unwrap();
    let edges = text
        .lines()
        .find(|l| l.trim_start().starts_with("\"edges\":"))
        .unwrap()
        .to_string();
    for (from, to) in [
        (edges.as_str(), "  \"edges\": 1,"),
        ("\"weighted\": false", "\"weighted\": true"),
        ("\"directed\": true", "\"directed\": false"),
        ("\"checksum\": \"", "\"checksum\": \"0"),
    ] {
        assert!(text.contains(from), "{from} in {text}");
        std::fs::write(&m, text.replacen(from, to, 1)).unwrap();
        check(&["manifest.json", "checksum", "edited or damaged"]);
        for cmd in [
            &["run", "wcc", s(&out)][..],
            &["run", "bfs", s(&out), "--root", "0"],
        ] {
            let o = run(cmd);
            assert!(!o.status.success(), "{cmd:?} ran on an edited manifest");
            assert!(stderr(&o).contains("checksum"), "{}", stderr(&o));
        }
        restore();
    }
    std::fs::write(&m, text.replacen("\"version\": 4", "\"version\": 3", 1)).unwrap();
    check(&[
        "store version 3",
        "reads version 4",
        "ingest the graph again",
    ]);
    restore();
    assert!(run(&["info", s(&out)]).status.success());
}

#[test]
fn generate_is_deterministic_across_thread_counts() {
    let d = tempfile::tempdir().unwrap();
    for kind in [
        &["kronecker", "--scale", "15", "--weighted"][..],
        &["grid", "--rows", "300", "--cols", "200"],
        &[
            "uniform",
            "--vertices",
            "1000",
            "--edges",
            "300000",
            "--text",
        ],
    ] {
        let a = d.path().join("a");
        let b = d.path().join("b");
        let mut args1 = vec!["generate"];
        args1.extend_from_slice(kind);
        let mut args2 = args1.clone();
        args1.extend_from_slice(&["-o", s(&a), "--threads", "1", "--seed", "5", "--force"]);
        args2.extend_from_slice(&["-o", s(&b), "--threads", "2", "--seed", "5", "--force"]);
        assert!(run(&args1).status.success());
        assert!(run(&args2).status.success());
        assert_eq!(
            std::fs::read(&a).unwrap(),
            std::fs::read(&b).unwrap(),
            "{kind:?}"
        );
    }
}

#[test]
fn the_built_in_example_runs() {
    let d = tempfile::tempdir().unwrap();
    let o = run(&["example", "--dir", s(d.path()), "--scale", "12"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(text.contains("vertices     4096"), "{text}"); // 2^12, declared by the example
    assert!(text.contains("checksums    all"), "{text}");
    let e = stderr(&o);
    for algo in ["bfs", "wcc", "mis", "pagerank"] {
        assert!(
            e.contains(&format!("\n{algo}: ")),
            "{algo} summary missing: {e}"
        );
    }
    // 4 streaming runs, then bfs and diam on the vertex engine.
    assert_eq!(e.matches("verify: ").count(), 6, "{e}");
    assert_eq!(e.matches("verify job ").count(), 4, "{e}");
    assert!(e.contains("jobs: 4 jobs in "), "{e}");
    assert!(e.contains("\ndiam: diameter >= "), "{e}");
    assert!(e.contains("static cache hits"), "{e}");
}

/// ../shared/graphs relative to the workspace root; None (with a message) when
/// absent, except in CI (`CI=true`), where a missing graph directory fails.
fn shared_graphs() -> Option<PathBuf> {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/graphs");
    if p.is_dir() {
        Some(p)
    } else if std::env::var("CI").is_ok_and(|v| v == "true") {
        panic!(
            "CI=true but {} is absent: the real-graph tests cannot run",
            p.display()
        );
    } else {
        eprintln!("skipping: {} is absent", p.display());
        None
    }
}

#[test]
fn real_graphs_ingest_with_their_published_counts() {
    let Some(g) = shared_graphs() else { return };
    // file, extra flags, vertices, stored edges, self-loops (README of shared/graphs).
    let table: &[(&str, &[&str], u64, u64, u64)] = &[
        ("USA-road-d.NY.gr.gz", &[], 264_346, 733_846, 0),
        // Symmetric Matrix Market: both directions of each undirected edge.
        ("road-luxembourg-osm.mtx.gz", &[], 114_599, 2 * 119_666, 0),
        ("road-usroads.mtx.gz", &[], 129_164, 2 * 165_435, 0),
        ("soc-Slashdot0902.txt.gz", &[], 82_168, 948_464, 78_303),
        ("uk-2007-05-100000.txt.gz", &[], 100_000, 3_050_615, 15_670),
        // 1-based, stored once: remap to 81,306 vertices, both directions, loops once.
        (
            "ego-twitter-undirected.txt.gz",
            &["--remap", "--undirected"],
            81_306,
            2 * 1_342_310 - 14,
            14,
        ),
        ("email-Enron.txt.gz", &[], 36_692, 367_662, 0),
        ("wiki-Vote.txt.gz", &["--remap"], 7_115, 103_689, 0),
        ("facebook_combined.txt.gz", &[], 4_039, 88_234, 0),
    ];
    let d = tempfile::tempdir().unwrap();
    for (file, flags, n, m, loops) in table {
        let out = d.path().join(file);
        let input = g.join(file);
        let mut args = vec!["ingest", s(&input), "-o", s(&out)];
        args.extend_from_slice(flags);
        let o = run(&args);
        assert!(o.status.success(), "{file}: {}", stderr(&o));
        let o = run(&["info", s(&out), "--json"]);
        assert!(o.status.success(), "{file}: {}", stderr(&o));
        let j: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        assert_eq!(j["vertices"], *n, "{file}");
        assert_eq!(j["edges"], *m, "{file}");
        assert_eq!(j["self_loops"], *loops, "{file}");
        assert_eq!(j["checksums_ok"], true, "{file}");
    }
}

#[test]
fn declared_vertices_add_isolated_vertices_and_bound_ids() {
    let d = tempfile::tempdir().unwrap();
    let input = d.path().join("g.txt");
    std::fs::write(&input, b"0 1\n1 2\n").unwrap();
    let out = d.path().join("s");
    let o = run(&["ingest", s(&input), "-o", s(&out), "--vertices", "10"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let j: serde_json::Value =
        serde_json::from_slice(&run(&["info", s(&out), "--json"]).stdout).unwrap();
    assert_eq!(j["vertices"], 10);
    assert_eq!(j["out_degree"]["zero"], 8);
    let o = run(&[
        "ingest",
        s(&input),
        "-o",
        s(&out),
        "--force",
        "--vertices",
        "3",
        "--remap",
    ]);
    assert_eq!(
        o.status.code(),
        Some(2),
        "--vertices conflicts with --remap"
    );
    ingest_fails(
        "g.txt",
        b"0 1\n1 5\n",
        &["--vertices", "5"],
        &["g.txt:2: vertex id 5 is too large", "must be below 5"],
    );
    ingest_fails(
        "g.gr",
        b"p sp 9 1\na 1 7 1\n",
        &["--vertices", "6"],
        &["g.gr:2: vertex id 7 is too large", "must be below 6"],
    );
}

/// `info --cost-model` on a graph small enough to compute by hand: nbr(0) = {1, 3}
/// (variance 1), nbr(1) = {0} (0), nbr(2) = {0, 1, 3} (14/9), nbr(3) = {}; in-degrees
/// 0: 2, 1: 2, 2: 0, 3: 2, so the cost is 2 x 1 + 0 x 14/9 = 2.
#[test]
fn info_prints_the_ordering_cost_model() {
    let d = tempfile::tempdir().unwrap();
    let input = d.path().join("g.txt");
    std::fs::write(&input, "0 1\n0 3\n1 0\n2 0\n2 1\n2 3\n").unwrap();
    let store = d.path().join("g");
    let o = run(&["ingest", s(&input), "-o", s(&store)]);
    assert!(o.status.success(), "{}", stderr(&o));
    let o = run(&["info", s(&store), "--cost-model"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(text.contains("cost model   2.000000e0"), "{text}");
    let o = run(&["info", s(&store), "--cost-model", "--json"]);
    let text = String::from_utf8_lossy(&o.stdout);
    let last: serde_json::Value = serde_json::from_str(text.lines().last().unwrap()).unwrap();
    assert_eq!(last["cost_model"], 2.0);
}

/// A star of 1M edges (shuffled among 1M others) in both directions as text.
fn star(reversed: bool) -> Vec<u8> {
    let mut lines: Vec<String> = Vec::with_capacity(2_000_000);
    let mut x = 7u64;
    let mut next = || {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        x >> 33
    };
    for i in 1..=1_000_000u64 {
        lines.push(if reversed {
            format!("{i} 0")
        } else {
            format!("0 {i}")
        });
        lines.push(format!(
            "{} {}",
            1 + next() % 1_000_000,
            1 + next() % 1_000_000
        ));
    }
    for i in (1..lines.len()).rev() {
        let j = (next() % (i as u64 + 1)) as usize;
        lines.swap(i, j);
    }
    (lines.join("\n") + "\n").into_bytes()
}

/// A vertex whose list cannot be built within `--memory` is reported while the
/// input is sorted, from the sorted runs' counts, not after the sort; the same
/// input fits a larger budget.
#[test]
fn a_list_longer_than_the_budget_is_refused_while_sorting() {
    ingest_fails(
        "star.txt",
        &star(false),
        &["--memory", "8M"],
        &[
            "vertex 0 has at least",
            "out-edges, more than fit --memory 8.00 MiB",
            "found while sorting",
        ],
    );
    ingest_fails(
        "rstar.txt",
        &star(true),
        &["--memory", "8M", "--in-edges"],
        &["vertex 0 has at least", "in-edges", "found while sorting"],
    );
    let d = tempfile::tempdir().unwrap();
    let input = d.path().join("star.txt");
    std::fs::write(&input, star(false)).unwrap();
    let out = d.path().join("g");
    let o = run(&["ingest", s(&input), "-o", s(&out), "--memory", "48M"]);
    assert!(o.status.success(), "{}", stderr(&o));
}
