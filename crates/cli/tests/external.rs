//! `outcore partition` and the external engine behind `outcore run`: the
//! automatic choice and its reason, the layout built or rebuilt when the budget
//! needs it, `--explain`, answers equal to the streaming engine's, `info`'s
//! replication factor, and damaged layout files refused by name.

mod common;

use common::{err, run, s};
use std::path::{Path, PathBuf};

/// Kronecker scale 16 (65,536 vertices): PageRank's 28 bytes per vertex (1.75 MiB)
/// do not fit beside the streaming engine's buffers at --memory 10M.
fn store(dir: &Path, weighted: bool) -> PathBuf {
    let input = dir.join(if weighted { "k.bin32w" } else { "k.bin32" });
    let mut g = vec!["generate", "kronecker", "--scale", "16", "-o", s(&input)];
    if weighted {
        g.push("--weighted");
    }
    let o = run(&g);
    assert!(o.status.success(), "{}", err(&o));
    let out = dir.join("k.store");
    let o = run(&["ingest", s(&input), "-o", s(&out), "--memory", "64M"]);
    assert!(o.status.success(), "{}", err(&o));
    out
}

fn values(path: &Path) -> Vec<(u64, String)> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| {
            let mut it = l.split(' ');
            (
                it.next().unwrap().parse().unwrap(),
                it.next().unwrap().to_string(),
            )
        })
        .collect()
}

fn json(path: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

#[test]
fn auto_choice_builds_the_layout_and_agrees_with_the_streaming_engine() {
    let d = tempfile::tempdir().unwrap();
    let st = store(d.path(), true);
    let st = s(&st);
    // --explain plans a layout and writes nothing.
    let out = d.path().join("pr.txt");
    let o = run(&[
        "run",
        "pagerank",
        st,
        "--memory",
        "10M",
        "--explain",
        "--out",
        s(&out),
    ]);
    assert!(o.status.success(), "{}", err(&o));
    let plan = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(plan.contains("engine: external"), "{plan}");
    assert!(
        plan.contains("to be built: the store has no V-Part layout"),
        "{plan}"
    );
    assert!(!out.exists());
    assert!(
        !std::fs::read_to_string(d.path().join("k.store/manifest.json"))
            .unwrap()
            .contains("\"vpart\"")
    );

    // A root with out-edges: the source of the first generated edge.
    let raw = std::fs::read(d.path().join("k.bin32w")).unwrap();
    let root = u32::from_le_bytes(raw[0..4].try_into().unwrap()).to_string();
    for algo in ["pagerank", "bfs", "sssp", "spmv"] {
        let ext = d.path().join(format!("{algo}.ext"));
        let stream = d.path().join(format!("{algo}.stream"));
        let stats = d.path().join(format!("{algo}.json"));
        let mut a = vec![
            "run",
            algo,
            st,
            "--memory",
            "10M",
            "--verify",
            "--threads",
            "2",
        ];
        a.extend_from_slice(&["--out", s(&ext), "--stats", s(&stats)]);
        let roots = algo == "bfs" || algo == "sssp";
        if roots {
            // Their 8 bytes per vertex fit 10M: forced.
            a.extend_from_slice(&["--root", &root, "--parents", "--engine", "external"]);
        }
        let o = run(&a);
        assert!(o.status.success(), "{algo}: {}", err(&o));
        let e = err(&o);
        if roots {
            assert!(
                e.contains("on the external engine (--engine external; vertex state"),
                "{e}"
            );
            assert!(e.contains("vertices reached"), "{e}");
            assert!(!e.contains(" 1 vertices reached"), "{e}");
        } else {
            assert!(e.contains("on the external engine (vertex state"), "{e}");
            assert!(e.contains("exceeds"), "{e}");
        }
        assert!(e.contains("verify: "), "{e}");
        let j = json(&stats);
        assert_eq!(j["engine_choice"]["engine"], "external", "{algo}");
        assert!(j["engine"]["mirror_update_bytes"].as_u64().unwrap() > 0);
        assert!(j["engine"]["edges_processed"].as_u64().unwrap() > 0);
        assert!(j["vpart"]["partitions"].as_u64().unwrap() >= 2, "{j}");

        let mut b = a.clone();
        b[4] = "1G";
        let k = b.iter().position(|x| *x == s(&ext)).unwrap();
        b[k] = s(&stream);
        if let Some(k) = b.iter().position(|x| *x == "external") {
            b[k] = "stream";
        } else {
            b.extend_from_slice(&["--engine", "stream"]);
        }
        let o = run(&b);
        assert!(o.status.success(), "{algo}: {}", err(&o));
        assert!(err(&o).contains("on the streaming engine (--engine stream"));
        // The sort-reduce baseline gives the same answer.
        let sr = d.path().join(format!("{algo}.sr"));
        let mut c = b.clone();
        let k = c.iter().position(|x| *x == s(&stream)).unwrap();
        c[k] = s(&sr);
        let k = c.iter().position(|x| *x == "stream").unwrap();
        c[k] = "sortreduce";
        c[4] = "12M";
        let o = run(&c);
        assert!(o.status.success(), "{algo}: {}", err(&o));
        assert!(err(&o).contains("on the sort-reduce engine"), "{}", err(&o));
        for (p, q) in values(&sr).iter().zip(values(&stream).iter()) {
            let (p, q): (f64, f64) = (p.1.parse().unwrap(), q.1.parse().unwrap());
            let close = p == q || (p - q).abs() <= 1e-12 * q.abs();
            assert!(close, "{algo} sort-reduce {p} {q}");
        }
        let (x, y) = (values(&ext), values(&stream));
        assert_eq!(x.len(), 65536);
        for ((i, p), (j, q)) in x.iter().zip(&y) {
            assert_eq!(i, j);
            if algo == "pagerank" || algo == "spmv" {
                let (p, q): (f64, f64) = (p.parse().unwrap(), q.parse().unwrap());
                assert!(
                    (p - q).abs() <= 1e-12 * q.abs().max(1e-300),
                    "{algo} {i}: {p} {q}"
                );
            } else {
                assert_eq!(p, q, "{algo} vertex {i}");
            }
        }
        if algo == "bfs" || algo == "sssp" {
            // Parents too (third column).
            assert_eq!(
                std::fs::read_to_string(&ext).unwrap(),
                std::fs::read_to_string(&stream).unwrap(),
                "{algo}"
            );
        }
    }
    // Only the first run built the layout; info reports it.
    let o = run(&["info", st, "--json"]);
    assert!(o.status.success(), "{}", err(&o));
    let j: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let rf = j["vpart"]["replication_factor"].as_f64().unwrap();
    assert!((1.0..3.0).contains(&rf), "{j}");
    assert!(j["vpart"]["space_overhead"].as_f64().is_some(), "{j}");
    let o = run(&["info", st]);
    assert!(String::from_utf8_lossy(&o.stdout).contains("replication factor"));
}

#[test]
fn partition_command_rebuild_and_damage() {
    let d = tempfile::tempdir().unwrap();
    let st = store(d.path(), false);
    let sts = s(&st);
    let o = run(&[
        "partition",
        sts,
        "--vertex-memory",
        "64K",
        "--partitions",
        "2",
    ]);
    assert!(!o.status.success());
    assert!(
        err(&o).contains("2 partitions cannot hold 65536 vertices"),
        "{}",
        err(&o)
    );
    // Leftovers of a killed build (a PID that is not running) are removed.
    let stale = st.join(".vpart-spill-4194303");
    std::fs::write(&stale, b"x").unwrap();
    let stale_tmp = st.join(".vpart.0.edges.4194303.tmp");
    std::fs::write(&stale_tmp, b"x").unwrap();
    let o = run(&["partition", sts, "--vertex-memory", "64M"]);
    assert!(!stale.exists() && !stale_tmp.exists());
    assert!(o.status.success(), "{}", err(&o));
    assert!(err(&o).contains("into 1 partitions"), "{}", err(&o));
    // One partition does not fit 10M: the run rebuilds, and says why.
    let o = run(&["run", "pagerank", sts, "--memory", "10M"]);
    assert!(o.status.success(), "{}", err(&o));
    assert!(
        err(&o).contains("its 1 partitions of up to 65536 destinations do not fit --memory"),
        "{}",
        err(&o)
    );
    // The old single partition's files are gone; the new ones are listed.
    assert!(!st.join("vpart.0.edges").exists() || st.join("vpart.1.edges").exists());
    // The same budget reuses the layout.
    let o = run(&["run", "pagerank", sts, "--memory", "10M"]);
    assert!(o.status.success(), "{}", err(&o));
    assert!(!err(&o).contains("partition:"), "{}", err(&o));
    // A flipped byte in an edge file: refused by name, the store still opens.
    let f = st.join("vpart.1.edges");
    let mut b = std::fs::read(&f).unwrap();
    let k = b.len() - 3;
    b[k] ^= 0x40;
    std::fs::write(&f, &b).unwrap();
    let o = run(&["info", sts]);
    assert!(!o.status.success());
    assert!(err(&o).contains("vpart.1.edges"), "{}", err(&o));
    let o = run(&["run", "bfs", sts, "--root", "0", "--engine", "stream"]);
    assert!(o.status.success(), "{}", err(&o));
    // The external run reads edges in ranges: the page-group checksums catch the
    // flipped byte (a local target still in range) by file and group.
    let o = run(&["run", "pagerank", sts, "--memory", "10M"]);
    assert!(!o.status.success(), "a damaged edge went unnoticed");
    let group = (b.len() - 4096 - 3) / 4096;
    assert!(
        err(&o).contains("vpart.1.edges")
            && err(&o).contains(&format!("page group {group} "))
            && err(&o).contains("vpart.1.edges.sums"),
        "{}",
        err(&o)
    );
    // Truncated: the run refuses it by name before reading any edge.
    std::fs::write(&f, &b[..b.len() - 8]).unwrap();
    let o = run(&["run", "pagerank", sts, "--memory", "10M"]);
    assert!(!o.status.success());
    assert!(err(&o).contains("vpart.1.edges"), "{}", err(&o));
    // `partition` mends it.
    let o = run(&["partition", sts, "--vertex-memory", "1M"]);
    assert!(o.status.success(), "{}", err(&o));
    let o = run(&["run", "pagerank", sts, "--memory", "10M", "--verify"]);
    assert!(o.status.success(), "{}", err(&o));
    // A layout of an earlier format (8-byte source records, no `version` in
    // its record): rebuilt by the next run, which says why.
    let mut man = outcore_store::Manifest::read(&st).unwrap();
    man.vpart.as_mut().unwrap().version = 1;
    man.write(&st).unwrap();
    let o = run(&["run", "pagerank", sts, "--memory", "10M", "--verify"]);
    assert!(o.status.success(), "{}", err(&o));
    assert!(
        err(&o).contains(&format!(
            "its layout has format 1, this build reads format {}",
            outcore_store::vpart::VPART_VERSION
        )),
        "{}",
        err(&o)
    );
    let man = outcore_store::Manifest::read(&st).unwrap();
    assert_eq!(
        man.vpart.unwrap().version,
        outcore_store::vpart::VPART_VERSION
    );
}

#[test]
fn external_refuses_what_it_cannot_run() {
    let d = tempfile::tempdir().unwrap();
    let st = store(d.path(), false);
    let sts = s(&st);
    let o = run(&["run", "mis", sts, "--engine", "external"]);
    assert!(!o.status.success());
    assert!(
        err(&o).contains("does not run on the external engine"),
        "{}",
        err(&o)
    );
    let o = run(&[
        "run", "wcc-lp", sts, "--engine", "external", "--memory", "10M",
    ]);
    assert!(!o.status.success());
    assert!(
        err(&o).contains("needs a store holding both directions"),
        "{}",
        err(&o)
    );
    let o = run(&[
        "run", "pagerank", sts, "--engine", "external", "--memory", "8M",
    ]);
    assert!(!o.status.success());
    assert!(
        err(&o).contains("too small for the external engine"),
        "{}",
        err(&o)
    );
    // mis beyond the budget stays on the streaming engine, mapped, with a warning.
    let o = run(&["run", "mis-luby", sts, "--memory", "9M"]);
    assert!(o.status.success(), "{}", err(&o));
    assert!(err(&o).contains("warning:"), "{}", err(&o));
}

/// The sort-reduce engine reads the CSR in ranges: a target changed to another
/// vertex that exists is caught by the page-group checksums, by file and group.
#[test]
fn sort_reduce_checks_the_pages_it_reads() {
    let d = tempfile::tempdir().unwrap();
    let st = store(d.path(), false);
    let sts = s(&st);
    let args = [
        "run",
        "pagerank",
        sts,
        "--engine",
        "sortreduce",
        "--memory",
        "16M",
    ];
    let o = run(&args);
    assert!(o.status.success(), "{}", err(&o));
    let f = st.join("csr.out.targets");
    let mut b = std::fs::read(&f).unwrap();
    let at = 4096 + 2 * 4096 + 40;
    let v = u32::from_le_bytes(b[at..at + 4].try_into().unwrap());
    b[at..at + 4].copy_from_slice(&(v ^ 2).to_le_bytes());
    std::fs::write(&f, &b).unwrap();
    let o = run(&args);
    assert!(!o.status.success(), "a changed target went unnoticed");
    assert!(
        err(&o).contains("csr.out.targets") && err(&o).contains("page group 2 "),
        "{}",
        err(&o)
    );
}

/// Every V-Part file the external engine reads in ranges (destinations, source
/// tables, mirror masks) is checked by its page-group checksums: a flipped bit is
/// reported by file, never used.
#[test]
fn every_partition_file_is_checked_when_read() {
    let d = tempfile::tempdir().unwrap();
    let st = store(d.path(), false);
    let sts = s(&st);
    let args = ["run", "pagerank", sts, "--memory", "10M"];
    let o = run(&args);
    assert!(o.status.success(), "{}", err(&o));
    for part in ["dests", "sources", "mirrors"] {
        let f = st.join(format!("vpart.0.{part}"));
        let clean = std::fs::read(&f).unwrap();
        let mut b = clean.clone();
        b[4096 + 1] ^= 0x01;
        std::fs::write(&f, &b).unwrap();
        let o = run(&args);
        assert!(!o.status.success(), "{part}: a flipped bit went unnoticed");
        assert!(
            err(&o).contains(&format!("vpart.0.{part}")) && err(&o).contains("page group 0 "),
            "{part}: {}",
            err(&o)
        );
        std::fs::write(&f, &clean).unwrap();
    }
    assert!(run(&args).status.success());
}

#[test]
fn auto_choice_keeps_the_streaming_engine_when_little_is_mapped_in_order() {
    let d = tempfile::tempdir().unwrap();
    let st = store(d.path(), false);
    let st = s(&st);
    // PageRank's 1.75 MiB of state: at 10600K the streaming engine leaves 1.41
    // MiB (the 12 B a vertex of sums and out-degrees fit, a fifth is mapped);
    // at 10M 1.06 MiB (a third would be mapped): the external engine.
    let explain = |m: &str| {
        let o = run(&["run", "pagerank", st, "--memory", m, "--explain"]);
        assert!(o.status.success(), "{}", err(&o));
        String::from_utf8_lossy(&o.stdout).into_owned()
    };
    let p = explain("10600K");
    assert!(
        p.starts_with("engine: stream (vertex state 1.75 MiB"),
        "{p}"
    );
    assert!(p.contains("exceeds"), "{p}");
    assert!(
        p.contains("touches at random (12 B a vertex) fit")
            && p.contains("read and written in order once an iteration"),
        "{p}"
    );
    assert!(explain("10M").starts_with("engine: external"));
    // The run agrees with the one whose arrays are all in memory.
    let (a, b) = (d.path().join("a.txt"), d.path().join("b.txt"));
    let stats = d.path().join("a.json");
    for (m, out) in [("10600K", &a), ("1G", &b)] {
        let mut args = vec!["run", "pagerank", st, "--memory", m, "--out", s(out)];
        if out == &a {
            args.extend_from_slice(&["--stats", s(&stats), "--verify"]);
        }
        let o = run(&args);
        assert!(o.status.success(), "{}", err(&o));
        assert!(err(&o).contains("on the streaming engine"), "{}", err(&o));
    }
    assert_eq!(json(&stats)["engine_choice"]["engine"], "stream");
    for ((i, p), (j, q)) in values(&a).iter().zip(&values(&b)) {
        assert_eq!(i, j);
        let (p, q): (f64, f64) = (p.parse().unwrap(), q.parse().unwrap());
        assert!((p - q).abs() <= 1e-12 * q.abs().max(1e-300), "{i}: {p} {q}");
    }
}

#[test]
fn auto_choice_keeps_the_streaming_engine_when_a_relaxation_array_needs_few_bands_or_external_cannot_run(
) {
    const MEM_FEW: &str = "9600K";
    const BANDS_FEW: u64 = 2;
    let d = tempfile::tempdir().unwrap();
    let st = store(d.path(), false);
    let st = s(&st);
    // SSSP's 512 KiB of state (8 B x 65,536) exceeds the 445 KiB the streaming
    // engine leaves at 9600K, where its 4 columns of 128 KiB run in 2 bands: it
    // keeps the streaming engine (fewer columns a band and the external engine
    // would take over, but the external engine needs more than 9.2M here: the
    // rule's thresholds are unit tests in src/external.rs).
    let explain = |m: &str| {
        let o = run(&["run", "sssp", st, "--root", "3", "--memory", m, "--explain"]);
        assert!(o.status.success(), "{}", err(&o));
        String::from_utf8_lossy(&o.stdout).into_owned()
    };
    let p = explain(MEM_FEW);
    assert!(
        p.starts_with("engine: stream (vertex state 512.00 KiB"),
        "{p}"
    );
    // BFS never keeps the streaming engine for its bands (the external engine
    // is faster at every band count measured): at 9600K it falls back to the
    // banded mapped array only because no partition fits.
    let o = run(&[
        "run",
        "bfs",
        st,
        "--root",
        "3",
        "--memory",
        MEM_FEW,
        "--explain",
    ]);
    assert!(o.status.success(), "{}", err(&o));
    let b = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(
        !b.contains("its mapped array runs in")
            && (b.starts_with("engine: external")
                || b.contains("the external engine cannot hold one partition")),
        "{b}"
    );
    assert!(p.contains("exceeds"), "{p}");
    assert!(
        p.contains(&format!("runs in {BANDS_FEW} bands of the grid's columns")),
        "{p}"
    );
    // It agrees with the run whose array is in memory, and went band by band
    // in as many bands as the choice said.
    let bfs = |m: &str, out: &Path, stats: Option<&Path>| {
        let mut args = vec![
            "run",
            "sssp",
            st,
            "--root",
            "3",
            "--memory",
            m,
            "--out",
            s(out),
        ];
        if let Some(stats) = stats {
            args.extend_from_slice(&["--stats", s(stats)]);
        }
        args.push("--verify");
        let o = run(&args);
        assert!(o.status.success(), "{}", err(&o));
        o
    };
    let outs: Vec<PathBuf> = (0..2).map(|i| d.path().join(format!("{i}.txt"))).collect();
    let stats: Vec<PathBuf> = (0..2).map(|i| d.path().join(format!("{i}.json"))).collect();
    for (i, (m, engine)) in [(MEM_FEW, "stream"), ("1G", "stream")]
        .into_iter()
        .enumerate()
    {
        bfs(m, &outs[i], Some(&stats[i]));
        let j = json(&stats[i]);
        assert_eq!(j["engine_choice"]["engine"], engine, "{m}");
        if i == 0 {
            let e = &j["engine"];
            let bands = e["bands"].as_u64().unwrap();
            let iterations = j["iterations"].as_u64().unwrap();
            assert_eq!(bands, BANDS_FEW * iterations, "{e}");
        }
    }
    assert_eq!(values(&outs[0]), values(&outs[1]));
    // At 9200K the external engine cannot hold a partition (it was refused at
    // once before): the streaming engine runs, its array mapped, with a
    // warning, and agrees.
    let p = explain("9200K");
    assert!(
        p.contains("the external engine cannot hold one partition")
            && p.contains("arrays are mapped from the work directory"),
        "{p}"
    );
    let small = d.path().join("small.txt");
    let o = bfs("9200K", &small, None);
    assert!(err(&o).contains("warning:"), "{}", err(&o));
    assert!(err(&o).contains("on the streaming engine"), "{}", err(&o));
    assert_eq!(values(&small), values(&outs[1]));
}

/// `partition --assign`: each assignment is recorded and reported by `info`;
/// `auto` keeps the one with fewer mirrors and records the other's
/// replication; every layout's bfs writes the same file.
#[test]
fn partition_assignments_are_recorded_and_agree() {
    let d = tempfile::tempdir().unwrap();
    let st = store(d.path(), false);
    let sts = s(&st);
    let mut seen = Vec::new();
    for assign in ["greedy", "degree-tiers", "auto"] {
        let o = run(&[
            "partition",
            sts,
            "--vertex-memory",
            "512K",
            "--partitions",
            "6",
            "--assign",
            assign,
        ]);
        assert!(o.status.success(), "{}", err(&o));
        let j: serde_json::Value =
            serde_json::from_slice(&run(&["info", sts, "--json"]).stdout).unwrap();
        let v = &j["vpart"];
        let rf = v["replication_factor"].as_f64().unwrap();
        let kept = v["assignment"].as_str().unwrap().to_string();
        if assign == "auto" {
            let other = v["other_replication"].as_f64().unwrap();
            let (g, t) = (seen[0], seen[1]);
            assert_eq!(rf, f64::min(g, t), "{v}");
            assert_eq!(other, f64::max(g, t), "{v}");
            assert_eq!(kept, if t < g { "degree-tiers" } else { "greedy" });
        } else {
            assert_eq!(kept, assign, "{v}");
            assert!(v["other_replication"].is_null(), "{v}");
        }
        assert!(
            err(&o).contains(&format!("({kept}")),
            "{assign}: {}",
            err(&o)
        );
        let text = String::from_utf8_lossy(&run(&["info", sts]).stdout).to_string();
        assert!(text.contains(&format!("({kept}")), "{text}");
        seen.push(rf);
        let out = d.path().join(format!("bfs-{assign}.txt"));
        let o = run(&[
            "run",
            "bfs",
            sts,
            "--root",
            "3",
            "--engine",
            "external",
            "--memory",
            "16M",
            "--out",
            s(&out),
            "--verify",
        ]);
        assert!(o.status.success(), "{}", err(&o));
        // The run kept the layout it was given.
        assert!(!err(&o).contains("partition:"), "{}", err(&o));
    }
    // A Kronecker graph's hubs in one tier need fewer mirrors.
    assert!(seen[1] < seen[0], "{seen:?}");
    let first = std::fs::read(d.path().join("bfs-greedy.txt")).unwrap();
    for a in ["degree-tiers", "auto"] {
        let other = std::fs::read(d.path().join(format!("bfs-{a}.txt"))).unwrap();
        assert!(first == other, "bfs on the {a} layout differs");
    }
}
