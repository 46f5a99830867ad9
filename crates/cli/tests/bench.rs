//! `outcore calibrate`, `outcore scan` and `outcore bench`: a profile is measured and saved;
//! a store's grid is read once; a bench
//! spec runs end to end in memory-limited cgroups and yields JSON lines, a report and
//! plots; a run killed by its memory limit is reported as such; bad specs are
//! refused before anything runs.

mod common;

use common::{err, run, s};
use std::path::Path;
use std::process::Command;

#[test]
fn calibrate_measures_saves_and_cleans_up() {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let save = dir.path().join("prof/device.json");
    let data = dir.path().join("data");
    std::fs::create_dir(&data).unwrap();
    let o = run(&[
        "calibrate",
        s(&data),
        "--size",
        "8M",
        "--duration",
        "0.05",
        "--depths",
        "1,2",
        "--json",
        "--save",
        s(&save),
    ]);
    assert!(o.status.success(), "{}", err(&o));
    let j: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(j["file_bytes"], 8 << 20);
    assert!(j["seq_read"]["bytes_per_s"].as_f64().unwrap() > 0.0);
    assert_eq!(j["random"].as_array().unwrap().len(), 2 * 2 * 2);
    // The parallel sequential read, 4 streams by default.
    assert_eq!(j["seq_read_parallel"]["streams"], 4);
    assert!(j["seq_read_parallel"]["bytes"].as_u64().unwrap() >= 8 << 20);
    let saved: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&save).unwrap()).unwrap();
    assert_eq!(saved, j);
    // `--save` with no path saves to the default place ($OUTCORE_DEVICE_PROFILE),
    // and `--streams 1` skips the parallel test.
    let default = dir.path().join("default/device.json");
    let o = Command::new(env!("CARGO_BIN_EXE_outcore"))
        .args(["calibrate", s(&data), "--size", "8M", "--duration", "0.05"])
        .args(["--depths", "1", "--streams", "1", "--save"])
        .env("OUTCORE_DEVICE_PROFILE", &default)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", err(&o));
    assert!(err(&o).contains("profile saved to"), "{}", err(&o));
    let saved: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&default).unwrap()).unwrap();
    assert!(saved.get("seq_read_parallel").is_none(), "{saved}");
    assert_eq!(
        std::fs::read_dir(&data).unwrap().count(),
        0,
        "test file removed"
    );
    let o = run(&["calibrate", s(&dir.path().join("nope")), "--size", "8M"]);
    assert!(!o.status.success());
    assert!(err(&o).contains("nope"), "{}", err(&o));
}

const SPEC: &str = r#"
name = "t"
repetitions = 1
threads = 2
timeout = "3m"
baseline = "gridgraph"

[[store]]
name = "small"
path = "data/small.store"
generate = ["grid", "--rows", "40", "--cols", "40"]
ingest = ["--undirected", "--partitions", "4"]

[[store]]
name = "big"
path = "data/big.store"
generate = ["grid", "--rows", "800", "--cols", "800"]
ingest = ["--undirected", "--partitions", "4"]

[[scenario]]
name = "semi"
limit = "64M"
memory = "32M"

[[scenario]]
name = "tight"
limit = "8M"
memory = "1G"

[[config]]
name = "gridgraph"
mrt = 1
algorithms = { wcc = "wcc-lp" }

[[config]]
name = "clip2"
mrt = 2

[[config]]
name = "clip"
mrt = 5

[[algorithm]]
name = "bfs"
root = { small = 0 }
stores = ["small"]
scenarios = ["semi"]

[[algorithm]]
name = "wcc"
stores = ["small"]
scenarios = ["semi"]

[[algorithm]]
name = "pagerank"
args = ["--iterations", "2"]
stores = ["big"]
scenarios = ["tight"]
"#;

#[test]
fn bench_runs_reports_and_plots() {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let spec = dir.path().join("t.toml");
    std::fs::write(&spec, SPEC).unwrap();
    let out = dir.path().join("out");
    let cgroups = outcore_cgroup_available();
    let mut args = vec!["bench", s(&spec), "--out", s(&out)];
    if !cgroups {
        eprintln!(
            "no memory cgroup can be created here: running with --no-cgroup, OOM not checked"
        );
        args.push("--no-cgroup");
    }
    let o = run(&args);
    assert!(o.status.success(), "{}", err(&o));
    assert!(err(&o).contains("bench: 9 runs"), "{}", err(&o));
    let lines = run_lines(&out);
    assert_eq!(lines.len(), 9);
    for l in &lines {
        if l["algorithm"] != "pagerank" {
            assert_eq!(l["status"], "ok", "{l}");
            assert!(l["iterations"].as_u64().unwrap() >= 1);
            assert!(
                l["engine_read_bytes"].as_u64().unwrap() >= l["one_pass_bytes"].as_u64().unwrap()
            );
            assert!(l["wall_s"].as_f64().unwrap() > 0.0);
        }
    }
    let bfs_grid = lines
        .iter()
        .find(|l| l["id"] == "small/semi/bfs/gridgraph/r1")
        .unwrap();
    // A 40 x 40 lattice from a corner: 79 levels, one iteration each with MRT 1.
    assert_eq!(bfs_grid["iterations"], 79);
    let wcc_grid = lines
        .iter()
        .find(|l| l["id"] == "small/semi/wcc/gridgraph/r1")
        .unwrap();
    assert_eq!(wcc_grid["runs"], "wcc-lp");
    let wcc_clip = lines
        .iter()
        .find(|l| l["id"] == "small/semi/wcc/clip/r1")
        .unwrap();
    assert_eq!(wcc_clip["iterations"], 1);
    assert_eq!(wcc_clip["engine_read_bytes"], wcc_clip["one_pass_bytes"]);
    if cgroups {
        // 640,000 vertices of in-memory PageRank state cannot fit in 8 MiB.
        for l in lines.iter().filter(|l| l["algorithm"] == "pagerank") {
            assert_eq!(l["status"], "oom-killed", "{l}");
            assert_eq!(l["limit_bytes"], 8 << 20);
        }
        let semi = lines.iter().find(|l| l["scenario"] == "semi").unwrap();
        assert!(semi["peak_bytes"].as_u64().unwrap() <= 64 << 20);
    }
    let report = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(
        report.contains("## small — semi (limit 64.00 MiB, --memory 32.00 MiB)"),
        "{report}"
    );
    assert!(
        report.contains("| wcc | gridgraph (wcc-lp) | 1/1 |"),
        "{report}"
    );
    assert!(report.contains("| bfs | clip | "), "{report}");
    if cgroups {
        assert!(
            report.contains("| pagerank | clip | 0/1 **oom-killed** ×1 |"),
            "{report}"
        );
    }
    for plot in [
        "small-semi.svg",
        "small-semi-bfs-mrt.svg",
        "small-semi-wcc-mrt.svg",
    ] {
        let svg = std::fs::read_to_string(out.join("plots").join(plot)).unwrap();
        assert!(svg.starts_with("<svg") && svg.contains("</svg>"), "{plot}");
        assert!(report.contains(&format!("(plots/{plot})")), "{plot}");
    }
    // Re-rendering from the JSON lines gives the same report.
    std::fs::remove_file(out.join("report.md")).unwrap();
    let o = run(&["bench", "--report-only", s(&out)]);
    assert!(o.status.success(), "{}", err(&o));
    assert_eq!(
        std::fs::read_to_string(out.join("report.md")).unwrap(),
        report
    );
}

/// A configuration that runs another system's command (a peer built
/// elsewhere): its placeholders filled in per run, measured like outcore
/// (status, wall time, the kernel's bytes) without engine statistics; a
/// failing one is reported with its exit status and last line of output;
/// a bad command is refused before anything runs.
#[test]
fn bench_runs_other_systems_commands() {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let input = dir.path().join("peer-input");
    std::fs::create_dir(&input).unwrap();
    std::fs::write(input.join("marker"), "x").unwrap();
    let spec_text = r#"
name = "peers"
repetitions = 1
threads = 2
timeout = "2m"
baseline = "outcore"

[[store]]
name = "small"
path = "data/small.store"
generate = ["grid", "--rows", "20", "--cols", "20"]
ingest = ["--undirected"]

[[scenario]]
name = "semi"
limit = "64M"
memory = "32M"

[[config]]
name = "outcore"

[[config]]
name = "peer"
command = ["sh", "-c", "test -f {input}/marker && echo {algorithm} {root} {memory_mb} {memory_gb} {threads} > {input}/seen"]
inputs = { small = "peer-input" }

[[config]]
name = "broken"
command = ["sh", "-c", "echo the peer gave up >&2; exit 3"]

[[config]]
name = "floor"
command = ["outcore", "scan", "{store}", "--stats", "{store}.scan.json"]

[[algorithm]]
name = "bfs"
root = 0
"#;
    let spec = dir.path().join("p.toml");
    std::fs::write(&spec, spec_text).unwrap();
    let out = dir.path().join("out");
    let mut args = vec!["bench", s(&spec), "--out", s(&out)];
    if !outcore_cgroup_available() {
        args.push("--no-cgroup");
    }
    let dry = run(&[args.clone(), vec!["--dry-run"]].concat());
    assert!(dry.status.success(), "{}", err(&dry));
    let planned = String::from_utf8_lossy(&dry.stdout).into_owned();
    assert!(
        planned.contains(&format!(
            "sh -c test -f {}/marker && echo bfs 0 32 0.031 2 > {}/seen",
            input.display(),
            input.display()
        )),
        "{planned}"
    );
    let o = run(&args);
    assert!(o.status.success(), "{}", err(&o));
    let lines = run_lines(&out);
    assert_eq!(lines.len(), 4);
    let by = |c: &str| lines.iter().find(|l| l["config"] == c).unwrap();
    assert_eq!(by("outcore")["status"], "ok");
    assert!(by("outcore")["iterations"].as_u64().unwrap() >= 1);
    // A command whose program is `outcore` runs the bench's own binary: the
    // floor read every byte of the grid.
    assert_eq!(by("floor")["status"], "ok", "{}", by("floor"));
    let store = dir.path().join("data/small.store");
    let scan: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(dir.path().join("data/small.store.scan.json")).unwrap(),
    )
    .unwrap();
    let grid: u64 = ["grid.index", "grid.data"]
        .iter()
        .map(|f| std::fs::metadata(store.join(f)).unwrap().len())
        .sum();
    assert_eq!(scan["bytes_read"].as_u64(), Some(grid), "{scan}");
    let peer = by("peer");
    assert_eq!(peer["status"], "ok", "{peer}");
    assert!(peer["wall_s"].as_f64().unwrap() > 0.0, "{peer}");
    assert!(peer["iterations"].is_null(), "{peer}");
    assert_eq!(
        std::fs::read_to_string(input.join("seen")).unwrap(),
        "bfs 0 32 0.031 2\n"
    );
    let broken = by("broken");
    assert_eq!(broken["status"], "failed", "{broken}");
    let e = broken["error"].as_str().unwrap();
    assert!(
        e.contains("exit status 3") && e.contains("the peer gave up"),
        "{e}"
    );
    let report = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(report.contains("| bfs | peer | 1/1 |"), "{report}");
    // Variants of the spec planned (--dry-run): accepted, or refused with
    // `why` before anything runs.
    let broken = r#"command = ["sh", "-c", "echo the peer gave up >&2; exit 3"]"#;
    let cases = [
        // An unknown placeholder; {input} for a store without one.
        ("exit 3", "{nope}", Some("unknown placeholder {nope}")),
        ("exit 3", "{input}", Some("{input} has no value here")),
        // A command per algorithm: one for each row the configuration runs.
        (broken, r#"command = { bfs = ["true"] }"#, None),
        (
            broken,
            r#"command = { wcc = ["true"] }"#,
            Some("a command for \"wcc\", which no [[algorithm]] names"),
        ),
        // outcore's own options on a command.
        (
            "name = \"broken\"",
            "name = \"broken\"\nmrt = 2",
            Some("a command takes no mrt"),
        ),
    ];
    for (from, to, why) in cases {
        std::fs::write(&spec, spec_text.replace(from, to)).unwrap();
        let o2 = dir.path().join("o2");
        let o = run(&["bench", s(&spec), "--out", s(&o2), "--dry-run"]);
        match why {
            None => assert!(o.status.success(), "{}", err(&o)),
            Some(why) => assert!(!o.status.success() && err(&o).contains(why), "{}", err(&o)),
        }
    }
}

/// `outcore scan` reads every byte of a store's grid once, through the page
/// cache and with O_DIRECT, and says so; what is not a store is refused.
#[test]
fn scan_reads_the_grid_once() {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let input = dir.path().join("g.bin32");
    let store = dir.path().join("g.store");
    for args in [
        vec![
            "generate",
            "grid",
            "--rows",
            "60",
            "--cols",
            "70",
            "-o",
            s(&input),
        ],
        vec!["ingest", s(&input), "-o", s(&store)],
    ] {
        let o = run(&args);
        assert!(o.status.success(), "{}", err(&o));
    }
    let grid: u64 = ["grid.index", "grid.data"]
        .iter()
        .map(|f| std::fs::metadata(store.join(f)).unwrap().len())
        .sum();
    let stats = dir.path().join("scan.json");
    for direct in [false, true] {
        let mut args = vec!["scan", s(&store), "--stats", s(&stats)];
        if direct {
            args.push("--direct");
        }
        let o = run(&args);
        assert!(o.status.success(), "{}", err(&o));
        assert!(
            err(&o).contains("scan: read") && err(&o).contains("grid.index, grid.data"),
            "{}",
            err(&o)
        );
        let j: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&stats).unwrap()).unwrap();
        assert_eq!(j["direct"], direct);
        // O_DIRECT reads whole 4 KiB pages.
        let read = j["bytes_read"].as_u64().unwrap();
        match direct {
            false => assert_eq!(read, grid),
            true => assert!(read >= grid && read < grid + 2 * 4096, "{read} {grid}"),
        }
    }
    let o = run(&["scan", s(dir.path())]);
    assert!(!o.status.success());
    assert!(err(&o).contains("opening"), "{}", err(&o));
}

/// The JSON lines of a bench run's `runs.jsonl` in `out`.
fn run_lines(out: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(out.join("runs.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn outcore_cgroup_available() -> bool {
    outcore_bench::detect().is_ok()
}

#[test]
fn bad_specs_are_refused_before_anything_runs() {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let cases = [
        (
            SPEC.replace(
                "generate = [\"grid\", \"--rows\", \"40\", \"--cols\", \"40\"]",
                "",
            ),
            "is not a store",
        ),
        (
            SPEC.replace("name = \"wcc\"", "name = \"wcc-fast\""),
            "unknown algorithm \"wcc-fast\"",
        ),
        (SPEC.replace("limit = \"64M\"", "limit = \"lots\""), "limit"),
        (
            SPEC.replace("root = { small = 0 }", "root = { small = 99999 }"),
            "root 99999 is not a vertex",
        ),
    ];
    for (i, (text, want)) in cases.iter().enumerate() {
        let spec = dir.path().join(format!("s{i}.toml"));
        std::fs::write(&spec, text).unwrap();
        let out = dir.path().join(format!("out{i}"));
        let o = run(&["bench", s(&spec), "--out", s(&out), "--no-cgroup"]);
        assert!(!o.status.success(), "case {i} accepted");
        assert!(err(&o).contains(want), "case {i}: {}", err(&o));
        assert!(!out.join("runs.jsonl").exists(), "case {i}: something ran");
    }
    let o = run(&["bench", s(&dir.path().join("missing.toml"))]);
    assert!(!o.status.success());
    assert!(err(&o).contains("missing.toml"), "{}", err(&o));
}

/// Without permission to create a cgroup (here: the same binary run as `nobody`), the
/// bench stops before running anything and says what to do.
#[test]
fn no_cgroup_permission_is_a_clear_error() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 || !Path::new("/usr/bin/setpriv").exists() {
        eprintln!("skipping: needs root and setpriv to run the bench as an unprivileged user");
        return;
    }
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
    let spec = dir.path().join("t.toml");
    std::fs::write(&spec, SPEC).unwrap();
    std::fs::set_permissions(&spec, std::fs::Permissions::from_mode(0o644)).unwrap();
    let out = dir.path().join("out");
    let o = Command::new("/usr/bin/setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
        .arg(env!("CARGO_BIN_EXE_outcore"))
        .args(["bench", s(&spec), "--out", s(&out)])
        .output()
        .unwrap();
    assert!(!o.status.success());
    let e = err(&o);
    assert!(
        e.contains("cannot create a child memory cgroup")
            || e.contains("cannot enable the memory controller"),
        "{e}"
    );
    assert!(e.contains("--no-cgroup"), "{e}");
    assert!(!out.exists(), "nothing ran");
}

/// A job mix runs as one `outcore jobs`, as runs one after another, and as runs all
/// at once, each as one record with the processes' statistics summed.
#[test]
fn job_mixes_run_shared_sequential_and_concurrent() {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let spec = dir.path().join("j.toml");
    std::fs::write(
        &spec,
        r#"
name = "j"
threads = 1
baseline = "seq"

[[store]]
name = "g"
path = "g.store"
generate = ["grid", "--rows", "30", "--cols", "30", "--weighted"]
ingest = ["--partitions", "4"]

[[scenario]]
name = "s"
limit = "none"
memory = "64M"

[[config]]
name = "shared"

[[config]]
name = "seq"
mrt = 1
jobs_mode = "sequential"

[[config]]
name = "conc"
mrt = 1
jobs_mode = "concurrent"

[[algorithm]]
name = "Sim1"
jobs = ["bfs:root=0", "sssp:root=5"]
"#,
    )
    .unwrap();
    let out = dir.path().join("out");
    let o = run(&["bench", s(&spec), "--out", s(&out), "--no-cgroup"]);
    assert!(o.status.success(), "{}", err(&o));
    let lines = run_lines(&out);
    assert_eq!(lines.len(), 3);
    let by = |c: &str| lines.iter().find(|l| l["config"] == c).unwrap();
    assert_eq!(by("shared")["command"].as_array().unwrap().len(), 1);
    assert_eq!(by("seq")["command"].as_array().unwrap().len(), 2);
    assert_eq!(by("conc")["command"].as_array().unwrap().len(), 2);
    assert!(by("conc")["command"][0]
        .as_str()
        .unwrap()
        .contains("--memory 33554432"));
    for l in &lines {
        assert_eq!(l["status"], "ok", "{l}");
        assert!(l["engine_read_bytes"].as_u64().unwrap() > 0, "{l}");
        // A 30 x 30 lattice from a corner: 59 levels one per iteration with MRT 1;
        // the shared run's DFVU moves ahead within rows and needs fewer.
        let it = l["iterations"].as_u64().unwrap();
        if l["config"] == "shared" {
            assert!((1..59).contains(&it), "{l}");
        } else {
            assert!(it >= 59, "{l}");
        }
        assert_eq!(
            l["summary"]
                .as_str()
                .unwrap()
                .matches("900 vertices reached")
                .count(),
            2,
            "{l}"
        );
    }
    // Sharing the scan reads less than two separate runs.
    assert!(by("shared")["engine_read_bytes"].as_u64() < by("seq")["engine_read_bytes"].as_u64());
    let report = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(report.contains("| Sim1 | shared | 1/1 |"), "{report}");
    let bad = dir.path().join("bad.toml");
    std::fs::write(
        &bad,
        std::fs::read_to_string(&spec)
            .unwrap()
            .replace("bfs:root=0", "bfs:root=zero"),
    )
    .unwrap();
    let o = run(&["bench", s(&bad), "--no-cgroup", "--dry-run"]);
    assert!(!o.status.success());
    assert!(
        err(&o).contains("job mix Sim1") && err(&o).contains("bfs:root=zero"),
        "{}",
        err(&o)
    );
}

/// `outcore limit` runs a command in a memory-limited child cgroup: the command's
/// exit status comes back, the measurements are written as JSON, and a command
/// that outgrows the limit is reported as killed for memory.
#[test]
fn limit_runs_a_command_under_a_hard_memory_limit() {
    if !outcore_cgroup_available() {
        eprintln!("skipped: no memory cgroup can be created here");
        return;
    }
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let json = dir.path().join("o.json");
    let file = dir.path().join("data");
    std::fs::write(&file, vec![7u8; 1 << 20]).unwrap();
    let o = run(&[
        "limit",
        "--mem",
        "64M",
        "--evict",
        s(&file),
        "--json",
        s(&json),
        "--",
        "sh",
        "-c",
        "exit 3",
    ]);
    assert_eq!(o.status.code(), Some(3), "{}", err(&o));
    assert!(err(&o).contains("limit_bytes=67108864"), "{}", err(&o));
    assert!(err(&o).contains("evicted_files=1"), "{}", err(&o));
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(v["exit"], 3);
    assert_eq!(v["limit_bytes"], 67108864u64);
    assert!(v["peak_bytes"].as_u64().unwrap() <= 64 << 20);
    // 200 MB in one shell variable cannot fit 32 MiB.
    let o = run(&[
        "limit",
        "--mem",
        "32M",
        "--",
        "sh",
        "-c",
        "x=$(head -c 200000000 /dev/zero | tr '\\0' a); echo ${#x}",
    ]);
    assert!(!o.status.success());
    assert!(
        err(&o).contains("out of memory under the limit"),
        "{}",
        err(&o)
    );
}
