//! `outcore run --engine vertex`, `select-cache`, `reorder` and `ingest --order`:
//! the same answers in the user's ids whatever the order, cache split, policy or
//! page size; saved selections used by runs; clear errors with a non-zero exit.

mod common;

use common::{err, run, s};
use std::path::{Path, PathBuf};

/// Ids 10, 20, 30 form a weighted path, 30 -> 10 closes a cycle; 1000 -> 2000;
/// 7 -> 1000; 5 alone (self-loop).
fn store(dir: &Path, extra: &[&str]) -> PathBuf {
    let input = dir.join("g.txt");
    std::fs::write(
        &input,
        "10 20 1.5\n20 30 2\n30 10 1\n1000 2000 1\n7 1000 4\n5 5 1\n",
    )
    .unwrap();
    let out = dir.join(format!("g{}", extra.join("").replace('-', "")));
    let mut a = vec!["ingest", s(&input), "-o", s(&out), "--remap", "--in-edges"];
    a.extend_from_slice(extra);
    let o = run(&a);
    assert!(o.status.success(), "{}", err(&o));
    out
}

fn result(dir: &Path, args: &[&str]) -> String {
    let out = dir.join("out.txt");
    let mut a = vec!["run"];
    a.extend_from_slice(args);
    a.extend_from_slice(&["--engine", "vertex", "--out", s(&out)]);
    let o = run(&a);
    assert!(o.status.success(), "{args:?}: {}", err(&o));
    std::fs::read_to_string(out).unwrap()
}

#[test]
fn answers_are_in_user_ids_for_every_order_split_and_policy() {
    let d = tempfile::tempdir().unwrap();
    let base = store(d.path(), &[]);
    let mut stores = vec![base.clone()];
    for order in ["norder", "degree", "random"] {
        let o = d.path().join(format!("g-{order}"));
        let r = run(&[
            "reorder",
            s(&base),
            "-o",
            s(&o),
            "--order",
            order,
            "--seed",
            "3",
        ]);
        assert!(r.status.success(), "{}", err(&r));
        assert!(err(&r).contains("order computed in"), "{}", err(&r));
        stores.push(o);
    }
    stores.push(store(d.path(), &["--order", "norder"]));
    let max = "9223372036854775807";
    let bfs = format!("5 {max}\n7 {max}\n10 1\n20 0\n30 1\n1000 {max}\n2000 {max}\n")
        .replace("10 1\n", "10 2\n");
    for g in &stores {
        let g = s(g);
        for extra in [
            vec![],
            vec!["--page-size", "512", "--cache-split", "0,0"],
            vec!["--policy", "gvs", "--k", "3"],
            vec!["--policy", "gvs-page", "--k", "2", "--cache-split", "0,30%"],
            vec!["--policy", "lowd", "--cache-split", "1K,50%"],
            vec!["--policy", "random", "--buffered", "--queue-depth", "1"],
        ] {
            let mut a = vec!["bfs", g, "--root", "20", "--verify"];
            a.extend_from_slice(&extra);
            assert_eq!(result(d.path(), &a), bfs, "{g} {extra:?}");
            let mut a = vec!["sssp", g, "--root", "10", "--verify"];
            a.extend_from_slice(&extra);
            assert_eq!(
                result(d.path(), &a),
                "5 infinity\n7 infinity\n10 0\n20 1.5\n30 3.5\n1000 infinity\n2000 infinity\n",
                "{g} {extra:?}"
            );
            let mut a = vec!["wcc", g, "--verify"];
            a.extend_from_slice(&extra);
            assert_eq!(
                result(d.path(), &a),
                "5 5\n7 7\n10 10\n20 10\n30 10\n1000 7\n2000 7\n",
                "{g} {extra:?}"
            );
        }
        // Every vertex as a source: exact betweenness; 20 lies on 10 -> 30 and
        // 30 on 20 -> 10, 10 on 30 -> 20; 1000 on 7 -> 2000.
        assert_eq!(
            result(d.path(), &["bc", g, "--sources", "100", "--verify"]),
            "5 0.00000000000000e0\n7 0.00000000000000e0\n10 1.00000000000000e0\n20 1.00000000000000e0\n30 1.00000000000000e0\n1000 1.00000000000000e0\n2000 0.00000000000000e0\n",
            "{g}"
        );
        // The summary names the top vertex in the user's ids; 10, 20, 30 and 1000
        // tie, and the smallest user id wins in every order.
        let o = run(&["run", "bc", g, "--sources", "100", "--engine", "vertex"]);
        assert!(o.status.success(), "{}", err(&o));
        assert!(
            err(&o).contains("highest centrality 1.000000 (vertex 10)"),
            "{g}: {}",
            err(&o)
        );
        // Sum of distances from all sources: 10 is reached from 20 (2) and 30 (1).
        assert_eq!(
            result(d.path(), &["apsp", g, "--sources", "100", "--verify"]),
            "5 0.00000000000000e0\n7 0.00000000000000e0\n10 3.00000000000000e0\n20 3.00000000000000e0\n30 3.00000000000000e0\n1000 1.00000000000000e0\n2000 3.00000000000000e0\n",
            "{g}"
        );
    }
}

#[test]
fn select_cache_saves_a_selection_that_runs_load() {
    let d = tempfile::tempdir().unwrap();
    let g = store(d.path(), &[]);
    let o = run(&[
        "select-cache",
        s(&g),
        "--policy",
        "gvs",
        "--size",
        "100%",
        "--k",
        "4",
    ]);
    assert!(o.status.success(), "{}", err(&o));
    let rec: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(rec["policy"], "gvs");
    assert_eq!(rec["k"], 4);
    let stats = d.path().join("st.json");
    let o = run(&[
        "run",
        "bfs",
        s(&g),
        "--root",
        "20",
        "--engine",
        "vertex",
        "--policy",
        "gvs",
        "--cache-split",
        "0,100%",
        "--stats",
        s(&stats),
    ]);
    assert!(o.status.success(), "{}", err(&o));
    assert!(err(&o).contains("saved gvs selection"), "{}", err(&o));
    let st: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&stats).unwrap()).unwrap();
    let ve = &st["engine"];
    assert!(ve["static_vertices"].as_u64().unwrap() > 0, "{st}");
    assert_eq!(ve["pages_read"], 0, "all lists static: {st}");
    assert_eq!(ve["static_hit_ratio"], 1.0);
    // The whole selection fits: loaded from the packed lists, nothing else (this
    // store is weighted, so the file holds targets and weights: 8 bytes per edge).
    assert_eq!(rec["lists"], "basc.gvs.lists");
    let packed = std::fs::metadata(g.join("basc.gvs.lists")).unwrap().len() - 4096;
    assert_eq!(packed, rec["edges"].as_u64().unwrap() * 8);
    let load = ve["static_load_bytes"].as_u64().unwrap();
    assert!(
        load >= packed && load < packed + 3 * 4096,
        "{load} {packed}"
    );
    // `info --verify` checks the saved selection; a damaged one is refused by runs.
    let o = run(&["info", s(&g)]);
    assert!(o.status.success(), "{}", err(&o));
    let f = g.join("basc.gvs");
    let mut b = std::fs::read(&f).unwrap();
    let k = b.len() - 1;
    b[k] ^= 1;
    std::fs::write(&f, b).unwrap();
    let o = run(&[
        "run",
        "bfs",
        s(&g),
        "--root",
        "20",
        "--engine",
        "vertex",
        "--policy",
        "gvs",
    ]);
    assert!(!o.status.success());
    assert!(
        err(&o).contains("basc.gvs") && err(&o).contains("checksum"),
        "{}",
        err(&o)
    );
}

#[test]
fn bad_requests_get_clear_errors() {
    let d = tempfile::tempdir().unwrap();
    let g = store(d.path(), &[]);
    let g = s(&g);
    let plain = {
        let input = d.path().join("p.txt");
        std::fs::write(&input, "0 1\n1 2\n").unwrap();
        let out = d.path().join("p");
        assert!(run(&["ingest", s(&input), "-o", s(&out)]).status.success());
        out
    };
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (vec!["pagerank", g], "the vertex engine runs"),
        (vec!["bfs", g], "needs --root"),
        (vec!["bfs", g, "--root", "99"], "not a vertex"),
        (
            vec!["bfs", g, "--root", "10", "--page-size", "3000"],
            "page size",
        ),
        (
            vec!["bfs", g, "--root", "10", "--cache-split", "5%"],
            "PAGE,STATIC",
        ),
        (
            vec!["bfs", g, "--root", "10", "--cache-split", "x%,1M"],
            "not a percentage",
        ),
        (
            vec!["bfs", g, "--root", "10", "--cache-split", "1M,1M"],
            "no --policy",
        ),
        (
            vec!["bfs", g, "--root", "10", "--policy", "best"],
            "unknown cache policy",
        ),
        (
            vec!["bfs", g, "--root", "10", "--queue-depth", "0"],
            "queue depth",
        ),
        (vec!["bc", g, "--sources", "0"], "--sources"),
        (vec!["diam", g, "--rounds", "0"], "--rounds"),
        (vec!["wcc", s(&plain)], "--in-edges"),
    ];
    for (args, want) in cases {
        let mut a = vec!["run"];
        a.extend_from_slice(&args);
        a.extend_from_slice(&["--engine", "vertex"]);
        let o = run(&a);
        assert!(!o.status.success(), "{args:?} succeeded");
        assert!(err(&o).contains(want), "{args:?}: {}", err(&o));
        assert!(!err(&o).contains("panicked"), "{args:?}: {}", err(&o));
    }
    let o = run(&["reorder", g, "-o", g, "--order", "norder"]);
    assert!(!o.status.success());
    assert!(
        err(&o).contains("new directory") || err(&o).contains("exists"),
        "{}",
        err(&o)
    );
    let o = run(&[
        "reorder",
        g,
        "-o",
        s(&d.path().join("x")),
        "--order",
        "gorder",
    ]);
    assert!(!o.status.success());
    assert!(err(&o).contains("unknown order"), "{}", err(&o));
    let o = run(&["select-cache", g, "--policy", "gvs", "--k", "0"]);
    assert!(!o.status.success());
    assert!(err(&o).contains("--k"), "{}", err(&o));
    let o = run(&["select-cache", g, "--policy", "gvs", "--size", "lots"]);
    assert!(!o.status.success());
    assert!(err(&o).contains("--size"), "{}", err(&o));
}

#[test]
fn a_damaged_edge_page_is_reported_not_used() {
    let d = tempfile::tempdir().unwrap();
    let g = store(d.path(), &[]);
    // The first target of the CSR (payload after the 4096-byte header) becomes
    // 0xFFFFFFFF, a vertex that does not exist; headers and lengths stay valid,
    // and the page checksum catches it before the target is used.
    let f = g.join("csr.out.targets");
    let mut b = std::fs::read(&f).unwrap();
    b[4096..4100].copy_from_slice(&[0xFF; 4]);
    std::fs::write(&f, b).unwrap();
    for extra in [vec![], vec!["--policy", "lowd", "--cache-split", "0,100%"]] {
        let mut a = vec!["run", "wcc", s(&g), "--engine", "vertex"];
        a.extend_from_slice(&extra);
        let o = run(&a);
        assert!(!o.status.success(), "{extra:?}");
        let e = err(&o);
        assert!(
            e.contains("csr.out.targets") && e.contains("damaged") && e.contains("page group 0"),
            "{extra:?}: {e}"
        );
        assert!(!e.contains("panicked"), "{e}");
    }
}

/// A target changed to another vertex that exists (no range check can see it) is
/// caught by the page-group checksums, whatever the page size (pages under 4 KiB
/// are read widened to whole groups) and when the static cache loads the page.
#[test]
fn an_in_range_flipped_target_fails_its_page_checksum() {
    let d = tempfile::tempdir().unwrap();
    let bin = d.path().join("k.bin");
    let o = run(&[
        "generate",
        "kronecker",
        "--scale",
        "10",
        "--edge-factor",
        "8",
        "-o",
        s(&bin),
        "--weighted",
    ]);
    assert!(o.status.success(), "{}", err(&o));
    let g = d.path().join("k");
    let o = run(&[
        "ingest",
        s(&bin),
        "--format",
        "bin32w",
        "-o",
        s(&g),
        "--in-edges",
    ]);
    assert!(o.status.success(), "{}", err(&o));
    let f = g.join("csr.out.targets");
    let clean = std::fs::read(&f).unwrap();
    // sssp from the vertex whose list holds the damaged target (group 5 starts
    // at edge 5 * 1024) reads its page; wcc reads every page.
    let offs = std::fs::read(g.join("csr.out.offsets")).unwrap();
    let offs: Vec<u64> = offs[4096..]
        .chunks(8)
        .map(|c| u64::from_le_bytes(c.try_into().unwrap()))
        .collect();
    let root = (0..offs.len() - 1)
        .find(|&u| offs[u] <= 5 * 1024 && 5 * 1024 < offs[u + 1])
        .unwrap()
        .to_string();
    let runs: [&[&str]; 5] = [
        &["wcc", "--page-size", "1024"],
        &["wcc", "--page-size", "8192"],
        &["wcc", "--page-size", "65536"],
        &["sssp", "--root", &root, "--page-size", "512"],
        &["wcc", "--policy", "lowd", "--cache-split", "0,100%"],
    ];
    let go = |args: &[&str]| {
        let mut a = vec!["run", args[0], s(&g), "--engine", "vertex"];
        a.extend_from_slice(&args[1..]);
        run(&a)
    };
    for r in runs {
        let o = go(r);
        assert!(o.status.success(), "{r:?}: {}", err(&o));
    }
    // Group 5's first target becomes a neighbouring vertex id (still < 1024).
    let at = 4096 + 5 * 4096;
    let mut b = clean.clone();
    let v = u32::from_le_bytes(b[at..at + 4].try_into().unwrap());
    b[at..at + 4].copy_from_slice(&(v ^ 1).to_le_bytes());
    std::fs::write(&f, &b).unwrap();
    for r in runs {
        let o = go(r);
        assert!(
            !o.status.success(),
            "{r:?}: a flipped target went unnoticed"
        );
        let e = err(&o);
        assert!(
            e.contains("csr.out.targets") && e.contains("page group 5") && e.contains("damaged"),
            "{r:?}: {e}"
        );
        assert!(!e.contains("panicked"), "{e}");
    }
    // A damaged weight is caught the same way (sssp reads weights).
    std::fs::write(&f, &clean).unwrap();
    let wf = g.join("csr.out.weights");
    let mut w = std::fs::read(&wf).unwrap();
    w[4096 + 3 * 4096 + 8] ^= 0x10;
    std::fs::write(&wf, &w).unwrap();
    let wroot = (0..offs.len() - 1)
        .find(|&u| offs[u] <= 3 * 1024 + 2 && 3 * 1024 + 2 < offs[u + 1])
        .unwrap()
        .to_string();
    let o = go(&["sssp", "--root", &wroot]);
    assert!(!o.status.success());
    assert!(
        err(&o).contains("csr.out.weights") && err(&o).contains("page group 3"),
        "{}",
        err(&o)
    );
}

/// `--memory` bounds the vertex engine too: what it holds beside its caches
/// (offsets, checksums, read buffers, the algorithm's arrays) is counted up front,
/// a budget that cannot hold it is refused at once naming the parts, the default
/// cache split shrinks to fit, and an explicit split that does not fit is refused.
#[test]
fn the_vertex_engine_keeps_to_its_memory_budget_or_refuses_at_once() {
    let d = tempfile::tempdir().unwrap();
    let bin = d.path().join("k.bin");
    let o = run(&[
        "generate",
        "kronecker",
        "--scale",
        "18",
        "--edge-factor",
        "16",
        "-o",
        s(&bin),
    ]);
    assert!(o.status.success(), "{}", err(&o));
    let g = d.path().join("k");
    let o = run(&["ingest", s(&bin), "--format", "bin32", "-o", s(&g)]);
    assert!(o.status.success(), "{}", err(&o));
    let go = |extra: &[&str]| {
        let mut a = vec!["run", s(&g), "--engine", "vertex"];
        a.splice(1..1, extra.iter().take(1).copied());
        a.extend_from_slice(&extra[1..]);
        run(&a)
    };
    // apsp keeps 40 bytes per vertex (10 MiB here) beside 2 MiB of offsets.
    let o = go(&["apsp", "--memory", "8M", "--sources", "4"]);
    assert!(!o.status.success());
    let e = err(&o);
    assert!(
        e.contains("--memory 8.00 MiB is too small for the vertex engine's apsp")
            && e.contains("of vertex arrays")
            && e.contains("of CSR offsets")
            && e.contains("give at least --memory"),
        "{e}"
    );
    // bfs fits in 8M: the default split (a quarter of the 16 MiB CSR) is scaled
    // down to what is left.
    let stats = d.path().join("s.json");
    let o = go(&["bfs", "--root", "0", "--memory", "8M", "--stats", s(&stats)]);
    assert!(o.status.success(), "{}", err(&o));
    let j: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&stats).unwrap()).unwrap();
    let cache = j["page_cache_bytes"].as_u64().unwrap();
    assert!((1 << 20..4 << 20).contains(&cache), "{j}");
    // An explicit split beyond the budget is refused, not shrunk.
    let o = go(&[
        "bfs",
        "--root",
        "0",
        "--memory",
        "16M",
        "--cache-split",
        "100M,0",
    ]);
    assert!(!o.status.success());
    assert!(
        err(&o).contains("--cache-split asks for 100.00 MiB"),
        "{}",
        err(&o)
    );
}
