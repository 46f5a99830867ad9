//! `outcore jobs`: results equal `outcore run`'s in the user's ids, statistics are
//! written, and malformed specs or roots are refused before any I/O, naming the spec.

mod common;

use common::{err, run, s};

#[test]
fn jobs_match_single_runs_and_refuse_bad_specs() {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let input = dir.path().join("g.txt");
    // Two components in user ids 10..60, weighted, directed.
    std::fs::write(
        &input,
        "10 20 1.5\n20 30 2\n30 10 0.5\n40 50 1\n50 60 3\n60 40 1\n10 40 7\n",
    )
    .unwrap();
    let store = dir.path().join("g");
    let o = run(&[
        "ingest",
        s(&input),
        "-o",
        s(&store),
        "--remap",
        "--partitions",
        "2",
    ]);
    assert!(o.status.success(), "{}", err(&o));
    let out = dir.path().join("out");
    let stats = dir.path().join("stats.json");
    for (mode, granularity, reuse) in [
        ("auto", "iteration", true),
        ("auto", "row", true),
        ("sequential", "iteration", true),
        ("sequential", "iteration", false),
        ("selective", "iteration", true),
        ("lists", "iteration", true),
    ] {
        let mut args = vec![
            "jobs",
            s(&store),
            "bfs:root=10",
            "sssp:root=20",
            "wcc",
            "pagerank:iterations=4",
            "wcc-lp",
            "--io-mode",
            mode,
            "--io-granularity",
            granularity,
            "--verify",
            "--out-dir",
            s(&out),
            "--stats",
            s(&stats),
        ];
        if !reuse {
            args.push("--no-reuse");
        }
        let o = run(&args);
        assert!(o.status.success(), "{mode}: {}", err(&o));
        assert_eq!(err(&o).matches("verify job").count(), 5, "{}", err(&o));
        for (file, args) in [
            (
                "job-0-bfs.txt",
                vec!["run", "bfs", s(&store), "--root", "10"],
            ),
            (
                "job-1-sssp.txt",
                vec!["run", "sssp", s(&store), "--root", "20"],
            ),
            ("job-2-wcc.txt", vec!["run", "wcc", s(&store)]),
            ("job-4-wcc-lp.txt", vec!["run", "wcc-lp", s(&store)]),
        ] {
            let single = dir.path().join("single.txt");
            let mut a = args.clone();
            a.extend(["--out", s(&single)]);
            let o = run(&a);
            assert!(o.status.success(), "{}", err(&o));
            assert_eq!(
                std::fs::read_to_string(out.join(file)).unwrap(),
                std::fs::read_to_string(&single).unwrap(),
                "{mode} {file}"
            );
        }
        let pr = std::fs::read_to_string(out.join("job-3-pagerank.txt")).unwrap();
        assert_eq!(pr.lines().count(), 6);
        let j: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&stats).unwrap()).unwrap();
        assert_eq!(j["jobs"].as_array().unwrap().len(), 5);
        assert_eq!(j["io_granularity"], granularity);
        assert_eq!(j["reuse"], reuse);
        if mode == "sequential" {
            // Every unit fits the budget beside the others: from the second
            // iteration on, whole units come from memory unless turned off.
            assert_eq!(j["shared"]["blocks_reused"].as_u64().unwrap() > 0, reuse);
        }
        // The union-find wcc finishes after its one pass.
        assert_eq!(j["jobs"][2]["iterations"], 1);
        assert_eq!(j["jobs"][3]["iterations"], 4);
        assert!(j["shared"]["bytes_read"].as_u64().unwrap() > 0);
        assert!(j["shared"]["read_requests"].as_u64().unwrap() > 0);
        if mode == "lists" {
            assert!(j["shared"]["lists_loaded"].as_u64().unwrap() > 0);
            assert_eq!(j["shared"]["blocks_whole"], 0);
        }
    }
    let o = run(&["jobs", s(&store), "wcc", "--io-granularity", "column"]);
    assert!(!o.status.success());
    assert!(
        err(&o).contains("unknown io granularity \"column\" (iteration or row)"),
        "{}",
        err(&o)
    );
    for (spec, want) in [
        ("bfs:root=11", "root 11 is not a vertex"),
        ("bfs:depth=3", "takes no key \"depth\""),
        ("triangles", "unknown job algorithm"),
        ("sssp", "needs root=ID"),
    ] {
        let o = run(&["jobs", s(&store), "wcc", spec]);
        assert!(!o.status.success(), "{spec} accepted");
        assert!(
            err(&o).contains(want) && err(&o).contains(spec),
            "{spec}: {}",
            err(&o)
        );
        assert!(!err(&o).contains("jobs: "), "ran anyway: {}", err(&o));
    }
}

#[test]
fn jobs_whose_state_does_not_fit_together_run_in_groups_or_are_refused() {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let input = dir.path().join("k.bin32");
    let o = run(&["generate", "kronecker", "--scale", "17", "-o", s(&input)]);
    assert!(o.status.success(), "{}", err(&o));
    let store = dir.path().join("k");
    let o = run(&["ingest", s(&input), "-o", s(&store), "--partitions", "4"]);
    assert!(o.status.success(), "{}", err(&o));
    let stats = dir.path().join("stats.json");
    // The first edge's source has edges to follow.
    let first = std::fs::read(&input).unwrap();
    let root = u32::from_le_bytes(first[0..4].try_into().unwrap());
    let (bfs, sssp) = (format!("bfs:root={root}"), format!("sssp:root={root}"));
    let specs = ["pagerank:iterations=3", bfs.as_str(), "wcc", sssp.as_str()];
    // 131072 vertices: 5.5 MiB of the jobs' state, 0.5 MiB of out-degrees and
    // 1 MiB of active lists per job beside the engine's 4 MiB: at --memory 10M
    // pagerank and bfs run together, then wcc and sssp, every array in memory.
    let mut args = vec!["jobs", s(&store)];
    args.extend_from_slice(&specs);
    args.extend_from_slice(&["--memory", "10M", "--verify", "--stats", s(&stats)]);
    let o = run(&args);
    assert!(o.status.success(), "{}", err(&o));
    assert!(
        err(&o).contains("2 groups run one after another"),
        "{}",
        err(&o)
    );
    assert!(
        !err(&o).contains("mapped from the work directory"),
        "{}",
        err(&o)
    );
    assert_eq!(err(&o).matches("verify job").count(), 4, "{}", err(&o));
    let j: serde_json::Value = serde_json::from_slice(&std::fs::read(&stats).unwrap()).unwrap();
    assert_eq!(j["groups"], serde_json::json!([[0, 1], [2, 3]]), "{j}");
    assert!(j["shared"]["bytes_read"].as_u64().unwrap() > 0);
    assert_eq!(j["jobs"].as_array().unwrap().len(), 4);
    assert!(j["vertex_state_bytes_in_memory"].as_u64().unwrap() <= 10 << 20);
    // At 8M pagerank's state (3 MiB) cannot be held even alone: refused at
    // once, with the budget to give and the command that runs it instead.
    args.truncate(2 + specs.len());
    args.extend_from_slice(&["--memory", "8M"]);
    let o = run(&args);
    assert!(!o.status.success());
    let e = err(&o);
    assert!(
        e.contains("job 0 (pagerank:iterations=3) keeps 3.00 MiB of vertex state")
            && e.contains("give --memory")
            && e.contains("outcore run pagerank"),
        "{e}"
    );
    assert!(
        !e.contains("job 0 (pagerank:iterations=3):"),
        "ran anyway: {e}"
    );
    // A budget that cannot hold the frontier of a graph refuses at once.
    let big = dir.path().join("big.bin32");
    let o = run(&[
        "generate",
        "kronecker",
        "--scale",
        "20",
        "--edge-factor",
        "1",
        "-o",
        s(&big),
    ]);
    assert!(o.status.success(), "{}", err(&o));
    let bs = dir.path().join("b");
    assert!(run(&["ingest", s(&big), "-o", s(&bs)]).status.success());
    let o = run(&["jobs", s(&bs), "wcc", "bfs:root=1", "--memory", "8M"]);
    assert!(!o.status.success());
    assert!(err(&o).contains("active lists and bitmaps"), "{}", err(&o));
}
