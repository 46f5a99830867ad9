//! The fully-external engine (V-Part) and the sort-reduce baseline against the
//! streaming engine and the in-memory references, on seeded generated graphs:
//! every partition count (1, 3, 8), thread count (1, 2), edge-read mode, a budget
//! barely above the largest partition, and sort buffers small enough to spill
//! and merge many runs must give the streaming engine's answer (integers exactly,
//! floats within 1e-12 relative), and pass `verify`.

use outcore_algos::programs::{external_supported, run_program};
use outcore_algos::{run, verify::verify, Algo, Output, Params};
use outcore_engine::{
    EdgeReads, ExternalConfig, ExternalEngine, SortReduceConfig, SortReduceEngine, StreamConfig,
    StreamEngine,
};
use outcore_io::IoStats;
use outcore_store::ingest::Quiet;
use outcore_store::vpart::{self, VpartOptions};
use outcore_store::{ingest, IngestOptions, Store};
use outcore_testkit::gen::{generate, GenKind, GenOptions};
use std::path::Path;

fn build(dir: &Path, name: &str, kind: GenKind, weighted: bool, undirected: bool) -> Store {
    build_with(dir, name, kind, weighted, undirected, false)
}

fn build_with(
    dir: &Path,
    name: &str,
    kind: GenKind,
    weighted: bool,
    undirected: bool,
    with_reverse: bool,
) -> Store {
    let ext = if weighted { "bin32w" } else { "bin32" };
    let input = dir.join(format!("{name}.{ext}"));
    let opts = GenOptions {
        kind: kind.clone(),
        seed: 11,
        weighted,
        text: false,
    };
    generate(&opts, &input, IoStats::new(), &|_| {}).unwrap();
    let out = dir.join(name);
    let opts = IngestOptions {
        undirected,
        with_reverse,
        partitions: Some(4),
        vertices: Some(kind.vertices()),
        memory: 64 << 20,
        ..Default::default()
    };
    ingest(&[input], &out, &opts, &Quiet).unwrap();
    Store::open(&out).unwrap()
}

fn partition(store: &Store, k: u32) -> Store {
    partition_in(store, k, 64 << 20)
}

/// The assignments `check` cycles through over its partition counts: the
/// fewer mirrors of both, the paper's greedy, the degree tiers.
const ASSIGNMENTS: [Option<vpart::Assignment>; 3] = [
    None,
    Some(vpart::Assignment::Greedy),
    Some(vpart::Assignment::DegreeTiers),
];

/// Partitions into `k` under a build budget of `memory` (the edges spill in
/// one level when K x K streams of 4 KiB fit a quarter of it, else in two).
fn partition_in(store: &Store, k: u32, memory: u64) -> Store {
    partition_as(store, k, memory, None)
}

fn partition_as(
    store: &Store,
    k: u32,
    memory: u64,
    assignment: Option<vpart::Assignment>,
) -> Store {
    let n = store.vertices();
    let opts = VpartOptions {
        // Room for exactly the partitions asked for.
        vertex_memory: n.div_ceil(k as u64) * vpart::HEAVIEST_BYTES_PER_VERTEX,
        partitions: Some(k),
        memory,
        assignment,
    };
    let rec = vpart::build(store, &opts, &|_, _, _| {}).unwrap();
    assert_eq!(rec.partitions, k);
    if let Some(a) = assignment {
        assert_eq!(rec.assignment, a);
    }
    assert_eq!(rec.dests.iter().sum::<u64>(), n);
    assert_eq!(rec.edges.iter().sum::<u64>(), store.edges());
    assert!(rec.max_dests() <= rec.capacity);
    // Reopen: the manifest now lists the layout.
    Store::open(store.dir()).unwrap()
}

fn same(a: &Output, b: &Output, what: &str) {
    match (a, b) {
        (Output::Bfs(x), Output::Bfs(y)) | (Output::Sssp(x), Output::Sssp(y)) => {
            assert_eq!(&x[..], &y[..], "{what}")
        }
        (Output::Labels(x), Output::Labels(y)) => assert_eq!(&x[..], &y[..], "{what}"),
        (Output::Flags(x), Output::Flags(y)) => assert_eq!(&x[..], &y[..], "{what}"),
        (Output::Values(x), Output::Values(y)) => {
            for (v, (p, q)) in x.iter().zip(y.iter()).enumerate() {
                let tol = 1e-12 * p.abs().max(q.abs()).max(1e-300);
                assert!((p - q).abs() <= tol, "{what}: vertex {v}: {p} vs {q}");
            }
        }
        _ => panic!("{what}: different outputs"),
    }
}

fn check(store: &Store, ks: &[u32]) {
    let n = store.vertices() as u32;
    let algos: Vec<Algo> = Algo::ALL
        .into_iter()
        .filter(|&a| external_supported(a))
        .filter(|&a| {
            !matches!(a, Algo::WccLp | Algo::MisGas | Algo::Bp) || !store.manifest().directed
        })
        // scc on stores with marked reverse edges, only scc there.
        .filter(|&a| (a == Algo::Scc) == store.manifest().reverse_marked)
        .collect();
    let mut want = Vec::new();
    for &algo in &algos {
        for root in [0, n / 3] {
            let p = Params {
                root,
                ..Default::default()
            };
            let cfg = StreamConfig {
                threads: 1,
                mrt: 1,
                ..Default::default()
            };
            let mut e = StreamEngine::new(store, cfg).unwrap();
            want.push((algo, p.clone(), run(&mut e, algo, &p).unwrap()));
            if !algo.needs_root() {
                break;
            }
        }
    }
    // The sort-reduce engine: in memory, and with runs of 7 and 97 updates.
    for (threads, buffer) in [(1, None), (2, Some(97)), (1, Some(7))] {
        for (algo, p, w) in &want {
            let cfg = SortReduceConfig {
                memory: 64 << 20,
                threads,
                work_dir: None,
                direct_io: false,
                buffer_updates: buffer,
            };
            let mut e = SortReduceEngine::new(store, cfg).unwrap();
            let r = run_program(&mut e, store, *algo, p).unwrap();
            let what = format!(
                "sortreduce {} root {} threads {threads} buffer {buffer:?}",
                algo.name(),
                p.root
            );
            verify(store, *algo, p, &r.output).unwrap_or_else(|e| panic!("{what}: {e}"));
            same(&r.output, &w.output, &what);
            if buffer.is_some() && e.stats().updates > 200 {
                assert!(e.stats().runs > 1, "{what}");
            }
        }
    }
    for (i, &k) in ks.iter().enumerate() {
        let store = partition_as(store, k, 64 << 20, ASSIGNMENTS[i % 3]);
        let rec = store.manifest().vpart.clone().unwrap();
        // The smallest budget the largest partition fits, and a roomy one.
        let eb = if store.weighted() { 8 } else { 4 };
        let tight = outcore_engine::external::min_memory(&rec, 44, false, eb, 2);
        // The tight run assembles its result 97 vertices at a time and keeps
        // narrow programs' mirror entries in slots, the others in lists (bfs's
        // as bitmaps in the first, as lists of entries in the last).
        for (threads, memory, reads, result_window, lists, bits) in [
            (1, 1 << 30, EdgeReads::Auto, 0, true, true),
            (2, tight, EdgeReads::Whole, 97, false, false),
            (2, 1 << 30, EdgeReads::Selective, 0, true, false),
        ] {
            for (algo, p, w) in &want {
                let cfg = ExternalConfig {
                    memory,
                    threads,
                    edge_reads: reads,
                    result_window,
                    narrow_lists: lists,
                    mirror_bits: bits,
                    ..Default::default()
                };
                let mut e = ExternalEngine::new(&store, cfg).unwrap();
                let r = run_program(&mut e, &store, *algo, p).unwrap();
                let what = format!(
                    "{} root {} K={k} threads {threads} memory {memory} {reads:?} lists {lists} bits {bits}",
                    algo.name(),
                    p.root
                );
                verify(&store, *algo, p, &r.output).unwrap_or_else(|e| panic!("{what}: {e}"));
                same(&r.output, &w.output, &what);
                if matches!(algo, Algo::PageRank | Algo::Spmv) {
                    assert_eq!(r.iterations, w.iterations, "{what}");
                }
                let s = e.stats();
                assert!(s.edges_processed > 0 || store.edges() == 0, "{what}");
                assert!(s.mirror_update_bytes > 0, "{what}");
            }
        }
    }
}

/// Auto keeps whichever of the greedy and the degree tiers makes fewer
/// mirrors, records the other's replication, and the tiers hold the
/// highest in-degrees in partition 0; every layout's bfs is the reference's.
#[test]
fn auto_keeps_the_assignment_with_fewer_mirrors() {
    let dir = tempfile::tempdir().unwrap();
    let store = build(
        dir.path(),
        "kron",
        GenKind::Kronecker {
            scale: 12,
            edge_factor: 8,
        },
        false,
        false,
    );
    let n = store.vertices();
    let rep = |a| {
        let s = partition_as(&store, 6, 64 << 20, a);
        let rec = s.manifest().vpart.clone().unwrap();
        let mut e = ExternalEngine::new(&s, ExternalConfig::default()).unwrap();
        let p = Params::default();
        let r = run_program(&mut e, &s, Algo::Bfs, &p).unwrap();
        verify(&s, Algo::Bfs, &p, &r.output).unwrap();
        (rec, r.output)
    };
    let (g, bg) = rep(Some(vpart::Assignment::Greedy));
    let (t, bt) = rep(Some(vpart::Assignment::DegreeTiers));
    let (a, ba) = rep(None);
    same(&bg, &bt, "greedy vs tiers");
    same(&bg, &ba, "greedy vs auto");
    let (rg, rt) = (g.replication_factor, t.replication_factor);
    assert!(rg > 0.0 && rt > 0.0 && rg != rt, "{rg} {rt}");
    assert_eq!(a.replication_factor, rg.min(rt));
    assert_eq!(a.other_replication, Some(rg.max(rt)));
    let kept = if rt < rg {
        vpart::Assignment::DegreeTiers
    } else {
        vpart::Assignment::Greedy
    };
    assert_eq!(a.assignment, kept);
    // The tiers: equal runs of ceil(n / 6), the last taking the rest.
    let per = n.div_ceil(6);
    assert_eq!(&t.dests[..5], &[per; 5]);
    // A Kronecker graph's hubs pull most of its edges into the first tier.
    assert!(t.edges[0] > t.edges[5] * 4, "{:?}", t.edges);
    assert!(
        rt < rg,
        "a Kronecker graph's tiers: {rt} vs the greedy's {rg}"
    );
}

#[test]
fn kronecker_weighted_directed() {
    let dir = tempfile::tempdir().unwrap();
    let s = build(
        dir.path(),
        "kron",
        GenKind::Kronecker {
            scale: 10,
            edge_factor: 8,
        },
        true,
        false,
    );
    check(&s, &[1, 3, 8]);
}

/// More partitions than one u64 mask word holds (2 and 4 words: up to the
/// 254 an owner byte allows): the two-level spill builds the same layout, byte
/// for byte, as the one-level spill, and every algorithm agrees.
#[test]
fn many_partitions_beyond_one_mask_word() {
    let dir = tempfile::tempdir().unwrap();
    let s = build(
        dir.path(),
        "kron-many",
        GenKind::Kronecker {
            scale: 10,
            edge_factor: 8,
        },
        true,
        false,
    );
    let files = |st: &Store| -> Vec<(String, Vec<u8>)> {
        let mut v: Vec<_> = std::fs::read_dir(st.dir())
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .filter(|f| f.starts_with("vpart."))
            .map(|f| {
                let b = std::fs::read(st.dir().join(&f)).unwrap();
                (f, b)
            })
            .collect();
        v.sort();
        v
    };
    for k in [100, 254] {
        // One level: (K x K + 3K) x 4 KiB (267 MB at 254) within a quarter of
        // 2 GiB; two levels under 8 MiB.
        let one = files(&partition_in(&s, k, 2 << 30));
        let two = files(&partition_in(&s, k, 8 << 20));
        assert_eq!(one.len(), two.len(), "K={k}");
        assert!(one.len() as u32 >= 8 * k, "K={k}: {} files", one.len());
        for ((fa, a), (fb, b)) in one.iter().zip(&two) {
            assert_eq!(fa, fb);
            assert!(
                a == b,
                "K={k}: {fa} differs between one- and two-level spills"
            );
        }
    }
    check(&s, &[100, 254]);
    let err = vpart::plan(
        s.vertices(),
        &VpartOptions {
            vertex_memory: 1 << 20,
            partitions: Some(255),
            memory: 1 << 30,
            assignment: None,
        },
    )
    .expect_err("255 partitions refused");
    assert!(err.to_string().contains("at most 254"), "{err}");
}

#[test]
fn scc_on_marked_reverse_edges() {
    let dir = tempfile::tempdir().unwrap();
    for (name, kind, weighted) in [
        (
            "kron-rev",
            GenKind::Kronecker {
                scale: 10,
                edge_factor: 4,
            },
            true,
        ),
        (
            "uni-rev",
            GenKind::Uniform {
                vertices: 800,
                edges: 1000,
            },
            false,
        ),
    ] {
        let s = build_with(dir.path(), name, kind, weighted, false, true);
        assert!(s.manifest().reverse_marked && !s.manifest().directed);
        check(&s, &[1, 3, 8]);
    }
}

#[test]
fn grid_undirected() {
    let dir = tempfile::tempdir().unwrap();
    let s = build(
        dir.path(),
        "grid",
        GenKind::Grid { rows: 30, cols: 21 },
        true,
        true,
    );
    check(&s, &[2, 5]);
}

#[test]
fn uniform_undirected_unweighted() {
    let dir = tempfile::tempdir().unwrap();
    let s = build(
        dir.path(),
        "uni",
        GenKind::Uniform {
            vertices: 900,
            edges: 1500,
        },
        false,
        true,
    );
    check(&s, &[4]);
}

#[test]
fn negative_weight_is_named_in_user_ids() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("neg.txt");
    std::fs::write(&input, "1 2 0.5\n2 3 -1.0\n3 1 2\n").unwrap();
    let out = dir.path().join("neg");
    let opts = IngestOptions {
        memory: 16 << 20,
        ..Default::default()
    };
    ingest(&[input], &out, &opts, &Quiet).unwrap();
    let store = partition(&Store::open(&out).unwrap(), 2);
    let ids = store.id_map().unwrap();
    let p = Params {
        root: ids.to_dense(1).unwrap(),
        ..Default::default()
    };
    let mut e = ExternalEngine::new(&store, ExternalConfig::default()).unwrap();
    let err = run_program(&mut e, &store, Algo::Sssp, &p)
        .err()
        .expect("a negative weight is refused");
    assert!(
        err.to_string().contains("edge (2, 3) has weight -1"),
        "{err}"
    );
}

#[test]
fn too_small_a_budget_is_refused_before_any_work() {
    let dir = tempfile::tempdir().unwrap();
    let s = build(
        dir.path(),
        "k",
        GenKind::Kronecker {
            scale: 9,
            edge_factor: 4,
        },
        false,
        false,
    );
    let store = partition(&s, 1);
    let cfg = ExternalConfig {
        memory: 4 << 20,
        ..Default::default()
    };
    let mut e = ExternalEngine::new(&store, cfg).unwrap();
    let err = run_program(&mut e, &store, Algo::PageRank, &Params::default())
        .err()
        .expect("refused");
    assert!(err.to_string().contains("more than --memory"), "{err}");
    assert_eq!(e.stats().iterations, 0);
}

/// A value that changes, then holds, then is read: the slot written two
/// iterations back must not be served stale (spmv: v = 2 from iteration 1 on,
/// w reads v's value of iteration 2 in iteration 3).
#[test]
fn a_value_held_for_an_iteration_is_still_sent_fresh() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("hold.txt");
    // s=0 -> a=1, s -> b=2, a -> v=3, b -> v, v -> w=4
    std::fs::write(&input, "0 1\n0 2\n1 3\n2 3\n3 4\n").unwrap();
    let out = dir.path().join("hold");
    let opts = IngestOptions {
        memory: 16 << 20,
        ..Default::default()
    };
    ingest(&[input], &out, &opts, &Quiet).unwrap();
    let base = Store::open(&out).unwrap();
    for k in [1, 2] {
        let store = partition(&base, k);
        for iterations in 1..=4 {
            let p = Params {
                iterations: Some(iterations),
                ..Default::default()
            };
            let mut s = StreamEngine::new(&store, StreamConfig::default()).unwrap();
            let want = run(&mut s, Algo::Spmv, &p).unwrap();
            let mut e = ExternalEngine::new(&store, ExternalConfig::default()).unwrap();
            let got = run_program(&mut e, &store, Algo::Spmv, &p).unwrap();
            same(
                &got.output,
                &want.output,
                &format!("K={k} iterations {iterations}"),
            );
        }
    }
}

/// Mirror updates pass over whole units of destinations (8192 and more) with
/// nothing to write, jumping to positions recorded in iteration 0, and a
/// partition whose messages reach at most half its blocks of destinations reads,
/// applies and writes back only those: on a grid large enough for several units
/// per partition, where a BFS wavefront activates few of them per level, the
/// answers still equal the streaming engine's, and both happened.
#[test]
fn mirror_updates_skip_quiet_units_and_agree() {
    let dir = tempfile::tempdir().unwrap();
    let s = build(
        dir.path(),
        "biggrid",
        GenKind::Grid {
            rows: 300,
            cols: 120,
        },
        true,
        true,
    );
    let s = partition(&s, 2);
    let n = s.vertices() as u32;
    for (algo, root) in [(Algo::Bfs, 0), (Algo::Sssp, n / 2), (Algo::WccLp, 0)] {
        let p = Params {
            root,
            ..Default::default()
        };
        let mut e = StreamEngine::new(&s, StreamConfig::default()).unwrap();
        let want = run(&mut e, algo, &p).unwrap();
        for threads in [1, 2] {
            let cfg = ExternalConfig {
                threads,
                ..Default::default()
            };
            let mut e = ExternalEngine::new(&s, cfg).unwrap();
            let r = run_program(&mut e, &s, algo, &p).unwrap();
            let what = format!("{} threads {threads}", algo.name());
            same(&r.output, &want.output, &what);
            verify(&s, algo, &p, &r.output).unwrap_or_else(|e| panic!("{what}: {e}"));
            assert!(
                e.stats().mirror_units_skipped > 0,
                "{what}: {:?}",
                e.stats()
            );
        }
    }
}

/// BFS settles (`settle.rs`): a block of destinations that messages reached
/// only at final ones (a depth of at most the iteration) is neither read,
/// applied nor written back, and a partition whose messages all reached
/// final destinations is idle. On a Kronecker graph (few levels, most of the
/// late levels' messages into vertices reached before) and a grid (a
/// wavefront crossing the partitions for hundreds of levels), with 1 and 2
/// threads and every edge-read mode, the answer equals the streaming
/// engine's and the run's without the bitmap, and fewer destination bytes
/// were read than without.
#[test]
fn bfs_passes_over_final_destinations_and_agrees() {
    let dir = tempfile::tempdir().unwrap();
    let kron = build(
        dir.path(),
        "kron14",
        GenKind::Kronecker {
            scale: 14,
            edge_factor: 16,
        },
        false,
        true,
    );
    let grid = build(
        dir.path(),
        "grid",
        GenKind::Grid {
            rows: 200,
            cols: 150,
        },
        false,
        true,
    );
    for (s, k) in [(kron, 3), (grid, 2)] {
        let s = partition(&s, k);
        let p = Params {
            root: 1,
            ..Default::default()
        };
        let mut e = StreamEngine::new(&s, StreamConfig::default()).unwrap();
        let want = run(&mut e, Algo::Bfs, &p).unwrap();
        for threads in [1, 2] {
            for reads in [EdgeReads::Auto, EdgeReads::Whole, EdgeReads::Selective] {
                let mut got = Vec::new();
                for settle in [false, true] {
                    let cfg = ExternalConfig {
                        threads,
                        edge_reads: reads,
                        settle,
                        ..Default::default()
                    };
                    let mut e = ExternalEngine::new(&s, cfg).unwrap();
                    let r = run_program(&mut e, &s, Algo::Bfs, &p).unwrap();
                    let what = format!(
                        "{} K={k} threads {threads} {reads:?} settle {settle}",
                        s.dir().display()
                    );
                    same(&r.output, &want.output, &what);
                    verify(&s, Algo::Bfs, &p, &r.output).unwrap_or_else(|e| panic!("{what}: {e}"));
                    got.push((what, e.stats().clone()));
                }
                let (off, on) = (&got[0].1, &got[1].1);
                let what = &got[1].0;
                assert_eq!(off.settle_memory, 0, "{what}");
                assert!(on.settle_memory > 0, "{what}");
                assert!(
                    on.dest_bytes_read < off.dest_bytes_read,
                    "{what}: {} destination bytes read with the bitmap, {} without",
                    on.dest_bytes_read,
                    off.dest_bytes_read
                );
                assert!(on.partitions_idle >= off.partitions_idle, "{what}");
                assert_eq!(on.iterations, off.iterations, "{what}");
                assert_eq!(on.edges_processed, off.edges_processed, "{what}");
            }
        }
    }
}
