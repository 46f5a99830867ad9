//! `outcore run`: results in the user's ids and the documented text forms, clear
//! errors with a non-zero exit for bad requests and damaged stores, and the
//! `--stats` JSON.

mod common;

use common::{err, run, s};
use std::path::Path;

/// Ids 10, 20, 30 form a weighted path; 1000 and 2000 are joined; 5 is alone.
fn store(dir: &Path) -> std::path::PathBuf {
    let input = dir.join("g.txt");
    std::fs::write(&input, "10 20 1.5\n20 30 2\n1000 2000 1\n5 5 1\n").unwrap();
    let out = dir.join("g");
    let o = run(&["ingest", s(&input), "-o", s(&out), "--remap"]);
    assert!(o.status.success(), "{}", err(&o));
    out
}

fn result(dir: &Path, args: &[&str]) -> String {
    let out = dir.join("out.txt");
    let mut a = vec!["run"];
    a.extend_from_slice(args);
    a.extend_from_slice(&["--out", s(&out), "--verify"]);
    let o = run(&a);
    assert!(o.status.success(), "{args:?}: {}", err(&o));
    assert!(err(&o).contains("verify: "), "{}", err(&o));
    std::fs::read_to_string(out).unwrap()
}

#[test]
fn results_are_in_user_ids_and_documented_forms() {
    let d = tempfile::tempdir().unwrap();
    let g = store(d.path());
    let g = s(&g);
    let max = "9223372036854775807";
    assert_eq!(
        result(d.path(), &["bfs", g, "--root", "20", "--parents"]),
        format!("5 {max} -1\n10 {max} -1\n20 0 20\n30 1 20\n1000 {max} -1\n2000 {max} -1\n")
    );
    assert_eq!(
        result(d.path(), &["sssp", g, "--root", "10"]),
        "5 infinity\n10 0\n20 1.5\n30 3.5\n1000 infinity\n2000 infinity\n"
    );
    assert_eq!(
        result(d.path(), &["wcc", g]),
        "5 5\n10 10\n20 10\n30 10\n1000 1000\n2000 1000\n"
    );
    assert_eq!(
        result(d.path(), &["wcc-lp", g]),
        result(d.path(), &["wcc", g])
    );
    assert_eq!(
        result(d.path(), &["mis", g]),
        "5 1\n10 1\n20 0\n30 1\n1000 1\n2000 0\n"
    );
    let pr = result(d.path(), &["pagerank", g]);
    let first = pr.lines().next().unwrap();
    let value = first.split(' ').nth(1).unwrap();
    let mantissa = value.split('e').next().unwrap().replace('.', "");
    assert_eq!(mantissa.len(), 15, "15 significant digits: {first}");
    let total: f64 = pr
        .lines()
        .map(|l| l.split(' ').nth(1).unwrap().parse::<f64>().unwrap())
        .sum();
    assert!((total - 1.0).abs() < 1e-12, "{total}");
}

#[test]
fn bad_requests_are_refused_clearly() {
    let d = tempfile::tempdir().unwrap();
    let g = store(d.path());
    let g = s(&g);
    let cases: &[(&[&str], &str)] = &[
        (&["run", "bfs", g], "bfs needs --root"),
        (
            &["run", "bfs", g, "--root", "11"],
            "--root 11 is not a vertex",
        ),
        (
            &["run", "dfs", g],
            "unknown algorithm 'dfs'; known: bfs, sssp",
        ),
        (
            &["run", "bfs", g, "--root", "10", "--mrt", "0"],
            "--mrt must be at least 1",
        ),
        (
            &["run", "wcc", g, "--threads", "0"],
            "--threads must be at least 1",
        ),
        (
            &["run", "pagerank-delta", g, "--tolerance", "0"],
            "--tolerance must be positive",
        ),
        (&["run", "wcc", "/nonexistent/store"], "/nonexistent/store"),
    ];
    for (args, needle) in cases {
        let o = run(args);
        assert_eq!(o.status.code(), Some(1), "{args:?}: {}", err(&o));
        assert!(err(&o).contains(needle), "{args:?}: {}", err(&o));
    }
}

#[test]
fn negative_weights_stop_sssp_with_the_edge_named() {
    let d = tempfile::tempdir().unwrap();
    let input = d.path().join("n.txt");
    std::fs::write(&input, "7 8 1\n8 9 -0.5\n").unwrap();
    let out = d.path().join("n");
    assert!(run(&["ingest", s(&input), "-o", s(&out), "--remap"])
        .status
        .success());
    let o = run(&["run", "sssp", s(&out), "--root", "7"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        err(&o).contains("sssp needs non-negative weights, but edge (8, 9) has weight -0.5"),
        "{}",
        err(&o)
    );
}

#[test]
fn a_damaged_block_stops_the_run_naming_file_and_block() {
    let d = tempfile::tempdir().unwrap();
    let g = store(d.path());
    let data = g.join("grid.data");
    let mut bytes = std::fs::read(&data).unwrap();
    let at = 4096 + 2; // inside the first block's payload
    bytes[at] ^= 0x40;
    std::fs::write(&data, bytes).unwrap();
    // wcc splits each block among the threads; pagerank gives each thread
    // whole blocks (Mode::Columns).
    for algo in ["wcc", "pagerank"] {
        let o = run(&["run", algo, s(&g), "--threads", "2"]);
        assert_eq!(o.status.code(), Some(1), "{algo}");
        let e = err(&o);
        assert!(
            e.contains("grid.data") && e.contains("checksum mismatch"),
            "{algo}: {e}"
        );
        assert!(!e.contains("panicked"), "{algo}: {e}");
    }
}

#[test]
fn stats_json_counts_blocks_bytes_and_iterations() {
    let d = tempfile::tempdir().unwrap();
    let input = d.path().join("p.bin32");
    let o = run(&["generate", "path", "--vertices", "2000", "-o", s(&input)]);
    assert!(o.status.success(), "{}", err(&o));
    let g = d.path().join("p");
    assert!(
        run(&["ingest", s(&input), "-o", s(&g), "--partitions", "4"])
            .status
            .success()
    );
    let stats = d.path().join("stats.json");
    let o = run(&[
        "run",
        "bfs",
        s(&g),
        "--root",
        "0",
        "--stats",
        s(&stats),
        "--mrt",
        "1",
    ]);
    assert!(o.status.success(), "{}", err(&o));
    let j: serde_json::Value = serde_json::from_slice(&std::fs::read(&stats).unwrap()).unwrap();
    // A path 0 -> 1 -> ... -> 1999: one hop per iteration with MRT 1.
    assert_eq!(j["iterations"], 2000);
    let e = &j["engine"];
    assert_eq!(e["passes"], e["blocks_read"]);
    assert!(e["blocks_skipped"].as_u64().unwrap() > 0);
    assert!(e["bytes_read"].as_u64().unwrap() > 0);
    assert!(e["read_requests"].as_u64().unwrap() >= e["blocks_read"].as_u64().unwrap());
    assert!(j["peak_rss_bytes"].as_u64().unwrap() > 0);
    let line = err(&o);
    assert!(
        line.contains("2000 iterations") && line.contains("read "),
        "{line}"
    );
}

/// A read-only view of a directory (a read-only bind mount), unmounted on drop.
struct ReadOnlyView(std::path::PathBuf);

impl ReadOnlyView {
    /// `None` where bind mounts are not permitted (not root, no CAP_SYS_ADMIN).
    fn new(src: &Path, at: &Path) -> Option<ReadOnlyView> {
        std::fs::create_dir_all(at).unwrap();
        let ok = |args: &[&str]| {
            std::process::Command::new("mount")
                .args(args)
                .stderr(std::process::Stdio::null())
                .status()
                .is_ok_and(|s| s.success())
        };
        if !ok(&["--bind", s(src), s(at)]) {
            return None;
        }
        let view = ReadOnlyView(at.to_path_buf());
        ok(&["-o", "remount,bind,ro", s(at)]).then_some(view)
    }
}

impl Drop for ReadOnlyView {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount").arg(&self.0).status();
    }
}

#[test]
fn a_read_only_store_gets_a_hint_and_runs_with_a_work_dir() {
    let d = tempfile::tempdir().unwrap();
    store(d.path());
    let Some(view) = ReadOnlyView::new(d.path(), &d.path().join("ro")) else {
        eprintln!("skipping: read-only bind mounts are not permitted here");
        return;
    };
    let ro = view.0.join("g");
    let o = run(&["run", "mis", s(&ro)]);
    assert_eq!(o.status.code(), Some(1));
    let e = err(&o);
    assert!(e.contains("Read-only file system"), "{e}");
    assert!(e.contains("hint:") && e.contains("--work-dir DIR"), "{e}");
    let work = d.path().join("work");
    std::fs::create_dir(&work).unwrap();
    let o = run(&["run", "mis", s(&ro), "--work-dir", s(&work), "--verify"]);
    assert!(o.status.success(), "{}", err(&o));
    drop(view);
}

#[test]
fn wrong_roots_and_engine_only_algorithms_say_why() {
    let d = tempfile::tempdir().unwrap();
    // A 1-based input (DIMACS): ids start at 1.
    let input = d.path().join("g.gr");
    std::fs::write(&input, "p sp 3 2\na 1 2 5\na 2 3 1\n").unwrap();
    let g = d.path().join("g");
    let o = run(&["ingest", s(&input), "-o", s(&g)]);
    assert!(o.status.success(), "{}", err(&o));
    let o = run(&["run", "bfs", s(&g), "--root", "0"]);
    assert!(!o.status.success());
    assert!(
        err(&o).contains("the ids of this store start at 1"),
        "{}",
        err(&o)
    );
    let o = run(&["run", "bfs", s(&g), "--root", "4"]);
    assert!(err(&o).contains("its ids are 1..=3"), "{}", err(&o));
    let o = run(&["run", "bc", s(&g)]);
    assert!(
        err(&o).contains("bc runs on the vertex engine: add --engine vertex"),
        "{}",
        err(&o)
    );
}

#[test]
fn parallel_edges_are_counted_and_named() {
    let d = tempfile::tempdir().unwrap();
    let input = d.path().join("m.txt");
    // 0 -> 1 three times, 1 -> 2 once: two parallel edges.
    std::fs::write(&input, "0 1\n0 1\n1 2\n0 1\n").unwrap();
    let g = d.path().join("m");
    assert!(run(&["ingest", s(&input), "-o", s(&g)]).status.success());
    let info = run(&["info", s(&g), "--json"]);
    let j: serde_json::Value = serde_json::from_slice(&info.stdout).unwrap();
    assert_eq!(j["parallel_edges"], 2);
    let o = run(&["run", "pagerank", s(&g)]);
    assert!(o.status.success(), "{}", err(&o));
    assert!(
        err(&o).contains("2 parallel edges") && err(&o).contains("--dedup"),
        "{}",
        err(&o)
    );
    // Algorithms that do not count copies say nothing; a deduplicated store has none.
    let o = run(&["run", "wcc", s(&g)]);
    assert!(!err(&o).contains("parallel"), "{}", err(&o));
    let dd = d.path().join("dd");
    assert!(run(&["ingest", s(&input), "-o", s(&dd), "--dedup"])
        .status
        .success());
    let info = run(&["info", s(&dd), "--json"]);
    let j: serde_json::Value = serde_json::from_slice(&info.stdout).unwrap();
    assert_eq!(
        (j["parallel_edges"].clone(), j["edges"].clone()),
        (0.into(), 2.into())
    );
    let o = run(&["run", "pagerank", s(&dd)]);
    assert!(!err(&o).contains("parallel"), "{}", err(&o));
}

#[test]
fn a_symmetric_matrix_market_file_is_stored_once_per_direction_when_undirected() {
    let d = tempfile::tempdir().unwrap();
    let input = d.path().join("s.mtx");
    std::fs::write(
        &input,
        "%%MatrixMarket matrix coordinate pattern symmetric\n3 3 3\n2 1\n3 2\n3 3\n",
    )
    .unwrap();
    for (flags, edges) in [(&[][..], 5), (&["--undirected"][..], 5)] {
        let g = d.path().join(format!("g{}", flags.len()));
        let mut a = vec!["ingest", s(&input), "-o", s(&g)];
        a.extend_from_slice(flags);
        let o = run(&a);
        assert!(o.status.success(), "{}", err(&o));
        let info = run(&["info", s(&g), "--json"]);
        let j: serde_json::Value = serde_json::from_slice(&info.stdout).unwrap();
        // 1-2 and 2-3 both ways, the diagonal 3-3 once; no parallel copies.
        assert_eq!(j["edges"], edges, "{flags:?}");
        assert_eq!(j["parallel_edges"], 0, "{flags:?}");
    }
}

#[test]
fn leftovers_of_killed_runs_are_listed_and_removed_by_the_next_run() {
    let d = tempfile::tempdir().unwrap();
    let g = store(d.path());
    // What a SIGKILLed `run mis` leaves (its sort directory) and a run still going.
    let dead = g.join(".outcore-sort-4999999-abc");
    std::fs::create_dir(&dead).unwrap();
    std::fs::write(dead.join("run-0"), vec![0u8; 4096]).unwrap();
    let live = g.join(format!(".outcore-sort-{}-xyz", std::process::id()));
    std::fs::create_dir(&live).unwrap();
    std::fs::write(g.join("notes.txt"), "mine").unwrap();
    let o = run(&["info", s(&g), "--json"]);
    assert!(o.status.success(), "{}", err(&o));
    let j: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let states: Vec<(String, String)> = j["stray"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| {
            (
                x["name"].as_str().unwrap().to_string(),
                x["state"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let mut want: Vec<(String, String)> = vec![
        (".outcore-sort-4999999-abc".into(), "stale".into()),
        (
            format!(".outcore-sort-{}-xyz", std::process::id()),
            "running".into(),
        ),
        ("notes.txt".into(), "unknown".into()),
    ];
    want.sort();
    assert_eq!(states, want, "stray entries are listed by name");
    let text = run(&["info", s(&g)]);
    assert!(
        String::from_utf8_lossy(&text.stdout).contains("which is gone; the next run"),
        "{}",
        String::from_utf8_lossy(&text.stdout)
    );
    let o = run(&["run", "wcc", s(&g)]);
    assert!(o.status.success(), "{}", err(&o));
    assert!(!dead.exists(), "the stale sort directory is removed");
    assert!(live.exists(), "a live process's directory is kept");
    assert!(g.join("notes.txt").exists(), "files not ours are kept");
}

#[test]
fn budgets_below_the_floor_are_refused_at_once_by_every_command() {
    let d = tempfile::tempdir().unwrap();
    let g = store(d.path());
    let g = s(&g);
    let input = d.path().join("g.txt");
    let out = d.path().join("o");
    for args in [
        vec!["run", "bfs", g, "--root", "10", "--memory", "1K"],
        vec!["run", "wcc", g, "--memory", "0"],
        vec!["jobs", g, "wcc", "--memory", "7M"],
        vec!["ingest", s(&input), "-o", s(&out), "--memory", "1M"],
        vec!["partition", g, "--vertex-memory", "1M", "--memory", "2M"],
        vec![
            "reorder",
            g,
            "-o",
            s(&out),
            "--order",
            "degree",
            "--memory",
            "4M",
        ],
    ] {
        let o = run(&args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", err(&o));
        assert!(
            err(&o).contains("below the floor of 8.00 MiB that every outcore command needs"),
            "{args:?}: {}",
            err(&o)
        );
        assert!(!out.exists());
    }
}

#[test]
fn scc_labels_components_in_user_ids_on_a_store_with_marked_reverse_edges() {
    let d = tempfile::tempdir().unwrap();
    // 10 -> 20 -> 30 -> 10 and 1000 <-> 2000 are components; 7 and 5 (a
    // self-loop) are alone; 30 -> 1000 and 7 -> 10 join components one way.
    let input = d.path().join("c.txt");
    std::fs::write(
        &input,
        "10 20\n20 30\n30 10\n30 1000\n1000 2000\n2000 1000\n5 5\n7 10\n",
    )
    .unwrap();
    let out = d.path().join("c");
    let o = run(&[
        "ingest",
        s(&input),
        "-o",
        s(&out),
        "--remap",
        "--with-reverse",
    ]);
    assert!(o.status.success(), "{}", err(&o));
    let o = run(&["info", s(&out)]);
    assert!(
        String::from_utf8_lossy(&o.stdout)
            .contains("16 (directed, each edge's reverse stored with a negative weight"),
        "{}",
        String::from_utf8_lossy(&o.stdout)
    );
    let want = "5 5\n7 7\n10 10\n20 10\n30 10\n1000 1000\n2000 1000\n";
    for engine in ["stream", "external", "sortreduce"] {
        assert_eq!(
            result(d.path(), &["scc", s(&out), "--engine", engine]),
            want,
            "{engine}"
        );
    }
    // scc on a store without the reverse edges, sssp on one with them.
    let plain = d.path().join("p");
    assert!(run(&["ingest", s(&input), "-o", s(&plain), "--remap"])
        .status
        .success());
    let cases: &[(&[&str], &str)] = &[
        (
            &["run", "scc", s(&plain)],
            "scc follows edges backwards, so it needs a store holding each edge's reverse marked",
        ),
        (
            &["run", "sssp", s(&out), "--root", "10"],
            "sssp reads edge weights, but",
        ),
        (
            &["run", "spmv", s(&out), "--engine", "external"],
            "spmv reads edge weights, but",
        ),
        (
            &["run", "sssp", s(&out), "--root", "10", "--engine", "vertex"],
            "sssp reads edge weights, but",
        ),
    ];
    for (args, needle) in cases {
        let o = run(args);
        assert_eq!(o.status.code(), Some(1), "{args:?}: {}", err(&o));
        assert!(err(&o).contains(needle), "{args:?}: {}", err(&o));
    }
}

#[test]
fn with_reverse_refuses_negative_weights_and_clashing_options() {
    let d = tempfile::tempdir().unwrap();
    let input = d.path().join("n.txt");
    std::fs::write(&input, "1 2 0.5\n2 3 -1.5\n").unwrap();
    let out = d.path().join("n");
    let cases: &[(&[&str], &str)] = &[
        (&[], "--with-reverse marks reverse edges by the sign of the weight, so weights must be non-negative; edge (2, 3) has weight -1.5"),
        (&["--dedup"], "--with-reverse cannot be combined with --dedup"),
        (&["--no-weights"], "--with-reverse cannot be combined with --no-weights"),
        (&["--undirected"], "cannot be used with"),
    ];
    for (extra, needle) in cases {
        let mut a = vec!["ingest", s(&input), "-o", s(&out), "--with-reverse"];
        a.extend_from_slice(extra);
        let o = run(&a);
        assert_ne!(o.status.code(), Some(0), "{extra:?}");
        assert!(err(&o).contains(needle), "{extra:?}: {}", err(&o));
        assert!(!out.exists(), "{extra:?}: a refused ingest leaves no store");
    }
}

#[test]
fn mcst_writes_each_vertexs_forest_edge_in_user_ids() {
    let d = tempfile::tempdir().unwrap();
    // A square 10-20-30-40 (weights 1, 2, 3 and a heavy 9 closing it), a
    // diagonal 10-30 of weight 2.5, a negative edge 40-50, and 1000-2000 apart;
    // 7 is alone.
    let input = d.path().join("m.txt");
    std::fs::write(
        &input,
        "10 20 1\n20 30 2\n30 40 3\n40 10 9\n10 30 2.5\n40 50 -0.5\n1000 2000 4\n7 7 1\n",
    )
    .unwrap();
    let out = d.path().join("m");
    let o = run(&[
        "ingest",
        s(&input),
        "-o",
        s(&out),
        "--remap",
        "--undirected",
    ]);
    assert!(o.status.success(), "{}", err(&o));
    let text = result(d.path(), &["mcst", s(&out)]);
    // "id weight parent": one tree per component, roots at weight 0, parent -1.
    let mut edges = Vec::new();
    let mut roots = 0;
    for l in text.lines() {
        let f: Vec<&str> = l.split(' ').collect();
        assert_eq!(f.len(), 3, "{l}");
        if f[2] == "-1" {
            assert_eq!(f[1], "0", "{l}");
            roots += 1;
        } else {
            let (a, b): (u64, u64) = (f[0].parse().unwrap(), f[2].parse().unwrap());
            edges.push((a.min(b), a.max(b), f[1].to_string()));
        }
    }
    edges.sort();
    let want: Vec<(u64, u64, String)> = [
        (10, 20, "1"),
        (20, 30, "2"),
        (30, 40, "3"),
        (40, 50, "-0.5"),
        (1000, 2000, "4"),
    ]
    .iter()
    .map(|&(a, b, w)| (a, b, w.to_string()))
    .collect();
    assert_eq!(edges, want, "{text}");
    assert_eq!(roots, 3, "{text}");
    // Where it is refused, and why.
    let directed = d.path().join("dir");
    assert!(run(&["ingest", s(&input), "-o", s(&directed), "--remap"])
        .status
        .success());
    let cases: &[(&[&str], &str)] = &[
        (
            &["run", "mcst", s(&directed)],
            "mcst spans an undirected graph, so it needs a store holding both directions",
        ),
        (
            &["run", "mcst", s(&out), "--engine", "external"],
            "does not run on the external engine",
        ),
        (
            &["run", "mcst", s(&out), "--engine", "sortreduce"],
            "does not run on the sort-reduce engine",
        ),
        (&["run", "mcst", s(&out), "--engine", "vertex"], "mcst"),
    ];
    for (args, needle) in cases {
        let o = run(args);
        assert_ne!(o.status.code(), Some(0), "{args:?}: {}", err(&o));
        assert!(err(&o).contains(needle), "{args:?}: {}", err(&o));
    }
}

/// bfs on a store ingested with --in-edges: every --bottom-up policy writes the
/// same depths and parents in the user's ids; --stats and the summary line say
/// how many iterations left the grid.
#[test]
fn bfs_bottom_up_policies_agree_and_report_their_iterations() {
    let d = tempfile::tempdir().unwrap();
    let input = d.path().join("k.bin32");
    let o = run(&["generate", "kronecker", "--scale", "12", "-o", s(&input)]);
    assert!(o.status.success(), "{}", err(&o));
    let g = d.path().join("k");
    let o = run(&["ingest", s(&input), "-o", s(&g), "--in-edges"]);
    assert!(o.status.success(), "{}", err(&o));
    let explain = |store: &Path| {
        let o = run(&["run", "bfs", s(store), "--root", "0", "--explain"]);
        assert!(o.status.success(), "{}", err(&o));
        String::from_utf8_lossy(&o.stdout).into_owned()
    };
    assert!(
        explain(&g).contains("bfs: direction-optimizing"),
        "{}",
        explain(&g)
    );
    let plain = d.path().join("plain");
    let o = run(&["ingest", s(&input), "-o", s(&plain)]);
    assert!(o.status.success(), "{}", err(&o));
    assert!(
        explain(&plain).contains("the store has no in-edges"),
        "{}",
        explain(&plain)
    );
    let mut seen = Vec::new();
    for policy in ["never", "auto", "always", "sparse"] {
        let out = d.path().join(format!("{policy}.txt"));
        let stats = d.path().join(format!("{policy}.json"));
        let o = run(&[
            "run",
            "bfs",
            s(&g),
            "--root",
            "0",
            "--parents",
            "--bottom-up",
            policy,
            "--verify",
            "--out",
            s(&out),
            "--stats",
            s(&stats),
        ]);
        assert!(o.status.success(), "{policy}: {}", err(&o));
        let j: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&stats).unwrap()).unwrap();
        let e = &j["engine"];
        let (bu, sp, it) = (
            e["bottom_up_iterations"].as_u64().unwrap(),
            e["sparse_iterations"].as_u64().unwrap(),
            e["iterations"].as_u64().unwrap(),
        );
        match policy {
            "never" => assert_eq!((bu, sp), (0, 0)),
            "always" => assert_eq!((bu, sp), (it, 0)),
            "sparse" => assert_eq!((bu, sp), (0, it)),
            _ => {}
        }
        let line = format!("{bu} bottom-up, {sp} sparse");
        assert_eq!(
            err(&o).contains(&line),
            bu + sp > 0,
            "{policy}: {}",
            err(&o)
        );
        seen.push(std::fs::read_to_string(out).unwrap());
    }
    assert!(seen.iter().all(|x| *x == seen[0]));
    assert!(seen[0].lines().count() == 4096 && seen[0].contains("\n1 "));
}

#[test]
fn a_relabelled_store_maps_its_ids_and_refuses_a_damaged_order_by_name() {
    let d = tempfile::tempdir().unwrap();
    let g = store(d.path());
    let r = d.path().join("r");
    let o = run(&[
        "reorder",
        s(&g),
        "-o",
        s(&r),
        "--order",
        "random",
        "--seed",
        "3",
    ]);
    assert!(o.status.success(), "{}", err(&o));
    assert!(
        r.join("idmap.order").exists(),
        "a relabelled store keeps its ids' order on disk"
    );
    assert!(!g.join("idmap.order").exists(), "ascending ids need none");
    // The same answers in the same (user) order on both stores, each engine.
    for args in [
        vec!["bfs", "--root", "20", "--parents"],
        vec!["sssp", "--root", "10"],
        vec!["wcc"],
        vec!["wcc-lp"],
    ] {
        for engine in ["stream", "external"] {
            if args[0].starts_with("wcc") && engine == "external" {
                continue; // wcc: streaming only; wcc-lp there: two-way stores only
            }
            let on = |st: &Path| {
                let mut a = vec![args[0], s(st)];
                a.extend_from_slice(&args[1..]);
                a.extend_from_slice(&["--engine", engine]);
                result(d.path(), &a)
            };
            assert_eq!(on(&g), on(&r), "{args:?} {engine}");
        }
    }
    // A small budget is no obstacle: the ids are mapped, not held.
    let o = run(&["run", "bfs", s(&r), "--root", "20", "--memory", "9M"]);
    assert!(o.status.success(), "{}", err(&o));
    // A flipped bit in the order is found and named.
    let f = r.join("idmap.order");
    let mut bytes = std::fs::read(&f).unwrap();
    bytes[4096] ^= 1;
    std::fs::write(&f, &bytes).unwrap();
    let o = run(&["run", "bfs", s(&r), "--root", "20"]);
    assert_eq!(o.status.code(), Some(1), "{}", err(&o));
    assert!(
        err(&o).contains("idmap.order") && err(&o).contains("checksum mismatch"),
        "{}",
        err(&o)
    );
    assert!(!err(&o).contains("panicked"), "{}", err(&o));
}

#[test]
fn a_block_ring_larger_than_the_budget_is_refused_before_any_pass() {
    let d = tempfile::tempdir().unwrap();
    // A dense core of 1,000 vertices in one grid block: 999,000 edges, about
    // 5.6 MiB decoded, so two ring slots do not fit in 8M (the floor every
    // command accepts).
    let input = d.path().join("dense.txt");
    let mut text = String::new();
    for u in 0..1000 {
        for v in 0..1000 {
            if u != v {
                text += &format!("{u} {v}\n");
            }
        }
    }
    std::fs::write(&input, text).unwrap();
    let g = d.path().join("g");
    let o = run(&["ingest", s(&input), "-o", s(&g), "--partitions", "1"]);
    assert!(o.status.success(), "{}", err(&o));
    let o = run(&[
        "run",
        "bfs",
        s(&g),
        "--root",
        "0",
        "--engine",
        "stream",
        "--memory",
        "8M",
    ]);
    assert_ne!(o.status.code(), Some(0), "{}", err(&o));
    assert!(
        err(&o).contains("too small for the streaming engine on this store")
            && err(&o).contains("largest grid block (row 0, column 0: 999000 edges)"),
        "{}",
        err(&o)
    );
    assert!(!err(&o).contains("panicked"), "{}", err(&o));
    let o = run(&[
        "run",
        "bfs",
        s(&g),
        "--root",
        "0",
        "--engine",
        "stream",
        "--memory",
        "64M",
    ]);
    assert!(o.status.success(), "{}", err(&o));
}
