//! The distributed engine's protocol with ranks as threads of one process (the
//! MPI runs are in the CLI's tests): ingest on 1, 2 and 4 ranks, then every
//! edge program must give the streaming engine's answer (integers exactly,
//! floats within 1e-12 relative) for every rank count, partition count, chunk
//! size and request window; a damaged chunk is refused by name.

use outcore_algos::programs::{run_program_on, GraphFacts};
use outcore_algos::{run, Algo, Output, Params};
use outcore_dist::checkpoint::{FailAt, FailPoint};
use outcore_dist::transport::{local, Transport};
use outcore_dist::{
    ingest::ingest, DistConfig, DistIngestOptions, DistRunner, RankManifest, RankStats,
};
use outcore_engine::{StreamConfig, StreamEngine};
use outcore_io::IoStats;
use outcore_store::ingest::Quiet;
use outcore_store::{IngestOptions, Store};
use outcore_testkit::gen::{generate, GenKind, GenOptions};
use std::path::{Path, PathBuf};

fn input(dir: &Path, kind: GenKind, weighted: bool) -> PathBuf {
    let ext = if weighted { "bin32w" } else { "bin32" };
    let path = dir.join(format!("g.{ext}"));
    let opts = GenOptions {
        kind,
        seed: 5,
        weighted,
        text: false,
    };
    generate(&opts, &path, IoStats::new(), &|_| {}).unwrap();
    path
}

fn ingest_opts(undirected: bool, n: u64) -> IngestOptions {
    IngestOptions {
        undirected,
        vertices: Some(n),
        memory: 64 << 20,
        ..Default::default()
    }
}

fn same(a: &Output, b: &Output, what: &str) {
    match (a, b) {
        (Output::Bfs(x), Output::Bfs(y)) | (Output::Sssp(x), Output::Sssp(y)) => {
            assert_eq!(&x[..], &y[..], "{what}")
        }
        (Output::Labels(x), Output::Labels(y)) => assert_eq!(&x[..], &y[..], "{what}"),
        (Output::Flags(x), Output::Flags(y)) => assert_eq!(&x[..], &y[..], "{what}"),
        (Output::Forest(x), Output::Forest(y)) => assert_eq!(&x[..], &y[..], "{what}"),
        (Output::Values(x), Output::Values(y)) => {
            assert_eq!(x.len(), y.len(), "{what}");
            for (v, (p, q)) in x.iter().zip(y.iter()).enumerate() {
                let tol = 1e-12 * p.abs().max(q.abs()).max(1e-300);
                assert!((p - q).abs() <= tol, "{what}: vertex {v}: {p} vs {q}");
            }
        }
        _ => panic!("{what}: different outputs"),
    }
}

/// Runs `algo` on the streaming engine over `store` and on 2 ranks over the
/// layout `dir` with `cfg`; asserts the same answer and summary and returns
/// the distributed run and each rank's statistics.
fn agrees(
    store: &Store,
    dir: &Path,
    algo: Algo,
    p: &Params,
    cfg: &DistConfig,
    what: &str,
) -> Vec<(outcore_algos::Run, RankStats)> {
    let mut e = StreamEngine::new(store, StreamConfig::default()).unwrap();
    let want = run(&mut e, algo, p).unwrap();
    let res: Vec<_> = dist_try(dir, 2, algo, p, cfg)
        .into_iter()
        .map(|r| r.unwrap_or_else(|e| panic!("{what}: {e}")))
        .collect();
    same(&res[0].0.output, &want.output, what);
    assert_eq!(res[0].0.summary, want.summary, "{what}");
    res
}

/// Ingests `input` over `ranks` threads into `dir`.
fn dist_ingest(
    input: &Path,
    dir: &Path,
    ranks: usize,
    opts: &DistIngestOptions,
    io: &IngestOptions,
) {
    let net = local::network(ranks);
    std::thread::scope(|s| {
        let hs: Vec<_> = net
            .iter()
            .map(|t| {
                s.spawn(move || {
                    let mut make = |tmp: &Path| -> outcore_dist::Result<Store> {
                        let o = IngestOptions {
                            force: true,
                            ..io.clone()
                        };
                        outcore_store::ingest(&[input.to_path_buf()], tmp, &o, &Quiet)?;
                        Ok(Store::open(tmp)?)
                    };
                    ingest(t, dir, opts, &mut make)
                })
            })
            .collect();
        for h in hs {
            let (plan, ranks_done) = h.join().unwrap().unwrap();
            assert_eq!(ranks_done.len(), ranks);
            assert_eq!(plan.ranks as usize, ranks);
            assert_eq!(plan.partitions % ranks as u32, 0);
        }
    });
}

/// Runs `algo` on every rank: each rank's result and statistics, or its error.
fn dist_try(
    dir: &Path,
    ranks: usize,
    algo: Algo,
    p: &Params,
    cfg: &DistConfig,
) -> Vec<Result<(outcore_algos::Run, RankStats), String>> {
    let net = local::network(ranks);
    std::thread::scope(|s| {
        let hs: Vec<_> = net
            .iter()
            .map(|t| {
                let cfg = cfg.clone();
                s.spawn(move || {
                    let m = RankManifest::load(dir, t.rank(), ranks).unwrap();
                    let ids = outcore_dist::id_map(dir, &m).unwrap();
                    let facts = GraphFacts {
                        vertices: m.plan.vertices,
                        directed: m.plan.directed,
                        reverse_marked: m.plan.reverse_marked,
                        dir,
                        ids: &|| Ok(ids.clone()),
                    };
                    let mut r = DistRunner {
                        transport: t,
                        dir: dir.to_path_buf(),
                        manifest: m,
                        config: cfg,
                        iterations: 0,
                        stats: None,
                    };
                    run_program_on(&mut r, &facts, algo, p)
                        .map(|out| (out, r.stats.expect("statistics of a finished run")))
                        .map_err(|e| e.to_string())
                })
            })
            .collect();
        hs.into_iter().map(|h| h.join().unwrap()).collect()
    })
}

/// Runs `algo` on every rank; rank 0's result.
fn dist_run(
    dir: &Path,
    ranks: usize,
    algo: Algo,
    p: &Params,
    cfg: &DistConfig,
) -> outcore_algos::Run {
    let mut res = dist_try(dir, ranks, algo, p, cfg);
    for r in &res {
        assert!(r.is_ok(), "{:?}", r.as_ref().err());
    }
    let total: u64 = res
        .iter()
        .map(|r| r.as_ref().unwrap().1.edges_processed)
        .sum();
    if algo == Algo::PageRank {
        // Some rank read edges in every run.
        assert!(total > 0);
    }
    res.swap_remove(0).unwrap().0
}

fn check(kind: GenKind, weighted: bool, undirected: bool) {
    check_with(kind, weighted, undirected, false)
}

/// `with_reverse`: the store holds marked reverse edges, and scc runs on it
/// (only scc: the others run on the plain stores).
fn check_with(kind: GenKind, weighted: bool, undirected: bool, with_reverse: bool) {
    let tmp = tempfile::tempdir().unwrap();
    let n = kind.vertices();
    let inp = input(tmp.path(), kind, weighted);
    let io = IngestOptions {
        with_reverse,
        ..ingest_opts(undirected, n)
    };
    let store_dir = tmp.path().join("store");
    outcore_store::ingest(std::slice::from_ref(&inp), &store_dir, &io, &Quiet).unwrap();
    let store = Store::open(&store_dir).unwrap();
    let algos: Vec<Algo> = [
        Algo::Bfs,
        Algo::Sssp,
        Algo::WccLp,
        Algo::PageRank,
        Algo::PageRankDelta,
        Algo::Spmv,
        Algo::Conductance,
        Algo::MisGas,
        Algo::Scc,
        Algo::Bp,
        Algo::Mcst,
    ]
    .into_iter()
    .filter(|&a| !matches!(a, Algo::WccLp | Algo::MisGas | Algo::Bp | Algo::Mcst) || undirected)
    .filter(|&a| (a == Algo::Scc) == with_reverse)
    .collect();
    let root = (n / 3) as u32;
    let mut want = Vec::new();
    for &algo in &algos {
        let p = Params {
            root,
            ..Default::default()
        };
        let mut e = StreamEngine::new(&store, StreamConfig::default()).unwrap();
        want.push((algo, p.clone(), run(&mut e, algo, &p).unwrap()));
    }
    // (ranks, partitions, chunk bytes, vertex chunk, window, resident
    // accumulator bytes: the default (all on one rank), none, about one of a
    // rank's two partitions, all)
    let one = Some(8 * n.div_ceil(8));
    for (ranks, partitions, chunk, vchunk, window, resident) in [
        (1, 0, 4 << 20, 0, 0, None),
        (2, 4, 4096, 37, 1, Some(0)),
        (4, 8, 1000, 100, 0, one),
        (4, 4, 256, 0, 4, Some(64 << 20)),
    ] {
        let dir = tmp
            .path()
            .join(format!("dist-{ranks}-{partitions}-{chunk}"));
        let opts = DistIngestOptions {
            memory: 64 << 20,
            chunk_bytes: chunk,
            vertex_chunk: vchunk,
            partitions,
            block_records: 0,
            seed: 3,
            force: false,
        };
        dist_ingest(&inp, &dir, ranks, &opts, &io);
        let cfg = DistConfig {
            window,
            seed: 9,
            resident_bytes: resident,
            ..DistConfig::new(64 << 20)
        };
        for (algo, p, w) in &want {
            let what = format!(
                "{} ranks {ranks} partitions {partitions} chunk {chunk} vchunk {vchunk} window {window} resident {resident:?}",
                algo.name()
            );
            let r = dist_run(&dir, ranks, *algo, p, &cfg);
            same(&r.output, &w.output, &what);
            assert_eq!(r.summary, w.summary, "{what}");
            if matches!(algo, Algo::PageRank | Algo::Spmv) {
                assert_eq!(r.iterations, w.iterations, "{what}");
            }
        }
    }
}

#[test]
fn kronecker_weighted_directed() {
    check(
        GenKind::Kronecker {
            scale: 9,
            edge_factor: 8,
        },
        true,
        false,
    );
}

#[test]
fn scc_on_marked_reverse_edges() {
    check_with(
        GenKind::Kronecker {
            scale: 9,
            edge_factor: 4,
        },
        true,
        false,
        true,
    );
    check_with(
        GenKind::Uniform {
            vertices: 600,
            edges: 800,
        },
        false,
        false,
        true,
    );
}

#[test]
fn kronecker_weighted_undirected() {
    check(
        GenKind::Kronecker {
            scale: 8,
            edge_factor: 6,
        },
        true,
        true,
    );
}

#[test]
fn grid_undirected() {
    check(GenKind::Grid { rows: 20, cols: 17 }, true, true);
}

#[test]
fn a_damaged_chunk_is_refused_by_name() {
    let tmp = tempfile::tempdir().unwrap();
    let kind = GenKind::Uniform {
        vertices: 500,
        edges: 4000,
    };
    let inp = input(tmp.path(), kind, false);
    let io = ingest_opts(false, 500);
    let dir = tmp.path().join("d");
    let opts = DistIngestOptions {
        memory: 64 << 20,
        chunk_bytes: 2048,
        vertex_chunk: 0,
        partitions: 2,
        block_records: 0,
        seed: 1,
        force: false,
    };
    dist_ingest(&inp, &dir, 2, &opts, &io);
    // A second ingest into the same directory is refused without --force.
    let net = local::network(2);
    std::thread::scope(|s| {
        let hs: Vec<_> = net
            .iter()
            .map(|t| {
                let (dir, opts) = (&dir, &opts);
                s.spawn(move || {
                    let mut make = |_: &Path| -> outcore_dist::Result<Store> {
                        panic!("the input must not be read when a directory is in use")
                    };
                    ingest(t, dir, opts, &mut make).map(|_| ())
                })
            })
            .collect();
        for h in hs {
            let e = h.join().unwrap().unwrap_err().to_string();
            assert!(e.contains("exists and is not empty; pass --force"), "{e}");
        }
    });
    // Flip a byte in rank 1's edges.
    let f = dir.join("rank-1/edges.bin");
    let mut b = std::fs::read(&f).unwrap();
    assert!(!b.is_empty());
    b[3] ^= 0x40;
    std::fs::write(&f, b).unwrap();
    let net = local::network(2);
    let cfg = DistConfig {
        seed: 2,
        ..DistConfig::new(64 << 20)
    };
    let errs: Vec<String> = std::thread::scope(|s| {
        let hs: Vec<_> = net
            .iter()
            .map(|t| {
                let (dir, cfg) = (&dir, &cfg);
                s.spawn(move || {
                    let m = RankManifest::load(dir, t.rank(), 2).unwrap();
                    let prog = outcore_algos::programs::PageRank {
                        n: 500,
                        damping: 0.85,
                        iterations: 2,
                    };
                    outcore_dist::compute::run(t, dir, &m, cfg, &prog)
                        .err()
                        .map(|e| e.to_string())
                })
            })
            .collect();
        hs.into_iter().filter_map(|h| h.join().unwrap()).collect()
    });
    assert!(
        errs.iter()
            .any(|e| e.contains("rank-1/edges.bin") && e.contains("fails its checksum")),
        "{errs:?}"
    );
    // A rank directory without a manifest (an interrupted ingest) is refused.
    std::fs::remove_file(dir.join("rank-0/manifest.json")).unwrap();
    let e = RankManifest::load(&dir, 0, 2).unwrap_err().to_string();
    assert!(e.contains("no manifest"), "{e}");
    let e = RankManifest::load(&dir, 1, 4).unwrap_err().to_string();
    assert!(e.contains("made for 2 ranks"), "{e}");
}

/// A weighted directed Kronecker graph under `tmp`: its store, and its layout
/// over 2 ranks (`chunk` bytes per edge chunk, `vchunk` vertices per vertex
/// chunk, `partitions`); and its vertex count.
fn kronecker_pair(
    tmp: &Path,
    scale: u32,
    edge_factor: u64,
    chunk: u64,
    vchunk: u64,
    partitions: u32,
) -> (Store, PathBuf, u64) {
    kronecker_pair_with(tmp, scale, edge_factor, chunk, vchunk, partitions, false)
}

fn kronecker_pair_with(
    tmp: &Path,
    scale: u32,
    edge_factor: u64,
    chunk: u64,
    vchunk: u64,
    partitions: u32,
    undirected: bool,
) -> (Store, PathBuf, u64) {
    let kind = GenKind::Kronecker { scale, edge_factor };
    let n = kind.vertices();
    let inp = input(tmp, kind, true);
    let io = ingest_opts(undirected, n);
    let store_dir = tmp.join("store");
    outcore_store::ingest(std::slice::from_ref(&inp), &store_dir, &io, &Quiet).unwrap();
    let dir = tmp.join("dist");
    let opts = DistIngestOptions {
        memory: 64 << 20,
        chunk_bytes: chunk,
        vertex_chunk: vchunk,
        partitions,
        block_records: 0,
        seed: 4,
        force: false,
    };
    dist_ingest(&inp, &dir, 2, &opts, &io);
    (Store::open(&store_dir).unwrap(), dir, n)
}

/// A run stopped by a failing rank at a moment of the run, then resumed: the
/// same answer as the streaming engine, resumed from the last checkpoint every
/// rank committed. Moments: inside scatter and gather phases on either rank,
/// and between the two phases of a checkpoint (some ranks committed it, the
/// failing one did not).
#[test]
fn a_stopped_run_resumes_from_its_last_checkpoint() {
    let tmp = tempfile::tempdir().unwrap();
    let ranks = 2;
    let (store, dir, n) = kronecker_pair(tmp.path(), 9, 8, 2048, 50, 4);
    let fail = |rank, point| FailAt {
        rank,
        point,
        abort: false,
    };
    // (algorithm, checkpoint every, failures one run after another, where the
    // last resume starts)
    let cases: Vec<(Algo, u64, Vec<FailAt>, Option<u64>)> = vec![
        (Algo::PageRank, 2, vec![fail(1, FailPoint::Phase(5))], None),
        (
            Algo::PageRank,
            2,
            vec![fail(0, FailPoint::Phase(7))],
            Some(2),
        ),
        (
            Algo::PageRank,
            2,
            vec![fail(1, FailPoint::Commit(4))],
            Some(2),
        ),
        (
            Algo::PageRank,
            2,
            vec![fail(0, FailPoint::Phase(10)), fail(1, FailPoint::Phase(14))],
            Some(6),
        ),
        (Algo::Bfs, 1, vec![fail(1, FailPoint::Phase(4))], Some(1)),
        (Algo::Sssp, 1, vec![fail(0, FailPoint::Commit(3))], Some(2)),
        (Algo::Spmv, 3, vec![fail(1, FailPoint::Phase(9))], Some(3)),
    ];
    for (algo, every, fails, from) in cases {
        let p = Params {
            root: (n / 3) as u32,
            iterations: (algo != Algo::Bfs && algo != Algo::Sssp).then_some(8),
            ..Default::default()
        };
        let mut e = StreamEngine::new(&store, StreamConfig::default()).unwrap();
        let want = run(&mut e, algo, &p).unwrap();
        let what = format!("{} every {every} failing {fails:?}", algo.name());
        let base = DistConfig {
            checkpoint_every: every,
            run_key: format!("{} {p:?}", algo.name()),
            ..DistConfig::new(64 << 20)
        };
        for (i, f) in fails.iter().enumerate() {
            let cfg = DistConfig {
                resume: i > 0,
                fail_at: Some(*f),
                ..base.clone()
            };
            let res = dist_try(&dir, ranks, algo, &p, &cfg);
            let failed = res[f.rank].as_ref().err().expect("the failing rank failed");
            assert!(failed.contains("failure injected"), "{what}: {failed}");
            for r in &res {
                let e = r.as_ref().err().expect("every rank stopped");
                assert!(e.contains(&format!("rank {}", f.rank)), "{what}: {e}");
            }
        }
        let cfg = DistConfig {
            resume: true,
            ..base.clone()
        };
        let res = dist_try(&dir, ranks, algo, &p, &cfg);
        for r in &res {
            let (_, st) = r.as_ref().unwrap_or_else(|e| panic!("{what}: {e}"));
            assert_eq!(st.resumed_from, from, "{what}");
        }
        let (got, _) = res.into_iter().next().unwrap().unwrap();
        same(&got.output, &want.output, &what);
        assert_eq!(got.summary, want.summary, "{what}");
        if matches!(algo, Algo::PageRank | Algo::Spmv) {
            assert_eq!(got.iterations, want.iterations, "{what}");
        }
        // A finished run leaves no checkpoint behind.
        for k in 0..ranks {
            assert!(!dir.join(format!("rank-{k}/checkpoint")).exists(), "{what}");
        }
    }

    // A checkpoint resumes only its own run, and a damaged one is refused by name.
    let p = Params {
        iterations: Some(8),
        ..Default::default()
    };
    let cfg = DistConfig {
        checkpoint_every: 1,
        run_key: "pagerank".into(),
        fail_at: Some(fail(0, FailPoint::Phase(8))),
        ..DistConfig::new(64 << 20)
    };
    assert!(dist_try(&dir, ranks, Algo::PageRank, &p, &cfg)
        .iter()
        .all(|r| r.is_err()));
    let other = DistConfig {
        resume: true,
        fail_at: None,
        run_key: "spmv".into(),
        ..cfg.clone()
    };
    for r in dist_try(&dir, ranks, Algo::Spmv, &p, &other) {
        let e = r.err().expect("refused");
        assert!(
            e.contains("a checkpoint of `pagerank`, not of `spmv`"),
            "{e}"
        );
    }
    let state = dir.join("rank-1/checkpoint/state-3.bin");
    let mut b = std::fs::read(&state).unwrap();
    b[0] ^= 1;
    std::fs::write(&state, b).unwrap();
    let again = DistConfig {
        resume: true,
        fail_at: None,
        ..cfg.clone()
    };
    for r in dist_try(&dir, ranks, Algo::PageRank, &p, &again) {
        let e = r.err().expect("refused");
        assert!(
            e.contains("rank-1/checkpoint/state-3.bin") && e.contains("fails its checksum"),
            "{e}"
        );
    }
}

/// Work stealing (§5.3): with two ranks, two partitions and small chunks, the
/// rank done first helps with the other's partition: chunks are stolen, every
/// accepted offer is a partition helped, and the answers are the streaming
/// engine's, as without stealing.
#[test]
fn idle_ranks_steal_work_and_the_answers_hold() {
    let tmp = tempfile::tempdir().unwrap();
    let (store, dir, _) = kronecker_pair(tmp.path(), 11, 16, 1200, 256, 2);
    let mut stolen = 0;
    for algo in [Algo::PageRank, Algo::Sssp, Algo::Spmv] {
        let p = Params {
            root: 1,
            iterations: (algo != Algo::Sssp).then_some(6),
            ..Default::default()
        };
        let mut e = StreamEngine::new(&store, StreamConfig::default()).unwrap();
        let want = run(&mut e, algo, &p).unwrap();
        for steal in [true, false] {
            let cfg = DistConfig {
                steal,
                ..DistConfig::new(64 << 20)
            };
            let what = format!("{} steal {steal}", algo.name());
            let res: Vec<_> = dist_try(&dir, 2, algo, &p, &cfg)
                .into_iter()
                .map(|r| r.unwrap_or_else(|e| panic!("{what}: {e}")))
                .collect();
            let helped: u64 = res.iter().map(|r| r.1.partitions_helped).sum();
            let accepted: u64 = res.iter().map(|r| r.1.helpers_accepted).sum();
            let chunks: u64 = res.iter().map(|r| r.1.stolen_chunks).sum();
            assert_eq!(helped, accepted, "{what}");
            if steal {
                stolen += chunks;
            } else {
                assert_eq!(chunks + helped, 0, "{what}");
            }
            let got = &res[0].0;
            same(&got.output, &want.output, &what);
            assert_eq!(got.summary, want.summary, "{what}");
        }
    }
    assert!(stolen > 0, "no chunk was stolen");
}

/// A storage engine passes over the edge chunks none of whose sources is
/// active (the activity filter a scatter sends with its requests) and the
/// answers hold; a program where every vertex is active reads every chunk;
/// a layout made before chunks recorded their sources reads them all.
#[test]
fn chunks_without_an_active_source_are_passed_over() {
    let tmp = tempfile::tempdir().unwrap();
    let (store, dir, _) = kronecker_pair(tmp.path(), 11, 16, 1200, 256, 2);
    let chunks: u64 = (0..2)
        .map(|r| RankManifest::load(&dir, r, 2).unwrap().edge_chunks.len() as u64)
        .sum();
    let cases = [
        (Algo::Bfs, None),
        (Algo::Sssp, None),
        (Algo::PageRank, Some(4)),
    ];
    let check = |dir: &Path, expect_skips: bool| {
        for (algo, iterations) in cases {
            let p = Params {
                root: 1,
                iterations,
                ..Default::default()
            };
            let what = format!("{} (chunks with sources {expect_skips})", algo.name());
            let res = agrees(&store, dir, algo, &p, &DistConfig::new(64 << 20), &what);
            let skipped: u64 = res.iter().map(|r| r.1.storage.edge_chunks_skipped).sum();
            let served: u64 = res.iter().map(|r| r.1.storage.edge_chunks_served).sum();
            let iterations = res[0].0.iterations;
            if algo == Algo::PageRank {
                assert_eq!(skipped, 0, "{what}");
                assert_eq!(served, chunks * iterations, "{what}");
            } else if !expect_skips {
                assert_eq!(skipped, 0, "{what}");
            } else {
                assert!(skipped > 0, "{what}: nothing passed over");
                assert!(served + skipped <= chunks * iterations, "{what}");
            }
        }
    };
    check(&dir, true);
    // The same layout without the chunks' source ranges and block index (as
    // written before they were recorded).
    for r in 0..2 {
        let path = dir.join(format!("rank-{r}")).join("manifest.json");
        let mut m: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        for c in m["edge_chunks"].as_array_mut().unwrap() {
            let c = c.as_object_mut().unwrap();
            assert!(c.remove("first").is_some() && c.remove("last").is_some());
            assert!(c.remove("blocks").is_some() && c.remove("block_records").is_some());
        }
        std::fs::write(&path, serde_json::to_string(&m).unwrap()).unwrap();
    }
    check(&dir, false);
}

/// Of a chunk served, only the blocks holding an active source are read, each
/// checked against its own CRC-32: the same answers as the streaming engine
/// with blocks passed over; block checksums refused by name; a layout without
/// a block index (made before it was recorded) reads whole chunks.
#[test]
fn only_blocks_with_an_active_source_are_read() {
    let tmp = tempfile::tempdir().unwrap();
    let kind = GenKind::Kronecker {
        scale: 11,
        edge_factor: 16,
    };
    let n = kind.vertices();
    let inp = input(tmp.path(), kind, true);
    let io = ingest_opts(false, n);
    let store_dir = tmp.path().join("store");
    outcore_store::ingest(std::slice::from_ref(&inp), &store_dir, &io, &Quiet).unwrap();
    let store = Store::open(&store_dir).unwrap();
    let dir = tmp.path().join("dist");
    let opts = DistIngestOptions {
        memory: 64 << 20,
        chunk_bytes: 24 << 10,
        vertex_chunk: 256,
        partitions: 2,
        block_records: 64,
        seed: 4,
        force: false,
    };
    dist_ingest(&inp, &dir, 2, &opts, &io);
    let manifests: Vec<_> = (0..2)
        .map(|r| RankManifest::load(&dir, r, 2).unwrap())
        .collect();
    let blocks: u64 = manifests
        .iter()
        .flat_map(|m| &m.edge_chunks)
        .map(|c| {
            assert_eq!(c.block_records, 64);
            assert_eq!(c.blocks.len() as u64, c.edges.div_ceil(64));
            c.blocks.len() as u64
        })
        .sum();
    assert!(
        blocks
            > 8 * manifests
                .iter()
                .map(|m| m.edge_chunks.len() as u64)
                .sum::<u64>()
    );
    let cases = [
        (Algo::Bfs, None),
        (Algo::Sssp, None),
        (Algo::PageRank, Some(3)),
    ];
    let check = |dir: &Path, indexed: bool| {
        for (algo, iterations) in cases {
            let p = Params {
                root: 1,
                iterations,
                ..Default::default()
            };
            let what = format!("{} (block index {indexed})", algo.name());
            let res = agrees(&store, dir, algo, &p, &DistConfig::new(64 << 20), &what);
            let skipped: u64 = res.iter().map(|r| r.1.storage.edge_blocks_skipped).sum();
            let edges: u64 = res.iter().map(|r| r.1.edges_processed).sum();
            let all = store.edges() * res[0].0.iterations;
            if algo == Algo::PageRank || !indexed {
                assert_eq!(skipped, 0, "{what}");
            } else {
                assert!(skipped > 0, "{what}: no block passed over");
                assert!(edges < all, "{what}: {edges} of {all} edges streamed");
            }
            if algo == Algo::PageRank {
                assert_eq!(edges, all, "{what}");
            }
        }
    };
    check(&dir, true);
    let rewrite = |f: &dyn Fn(&mut serde_json::Map<String, serde_json::Value>)| {
        for r in 0..2 {
            let path = dir.join(format!("rank-{r}")).join("manifest.json");
            let mut m: serde_json::Value =
                serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
            for c in m["edge_chunks"].as_array_mut().unwrap() {
                f(c.as_object_mut().unwrap());
            }
            std::fs::write(&path, serde_json::to_string(&m).unwrap()).unwrap();
        }
    };
    // Every block's CRC wrong (the chunks' right): a whole chunk still reads,
    // a block read alone is refused.
    rewrite(&|c| {
        for b in c["blocks"].as_array_mut().unwrap() {
            let crc = b[2].as_u64().unwrap();
            b[2] = (crc ^ 1).into();
        }
    });
    let p = Params {
        root: 1,
        ..Default::default()
    };
    let errs: Vec<String> = dist_try(&dir, 2, Algo::Bfs, &p, &DistConfig::new(64 << 20))
        .into_iter()
        .filter_map(|r| r.err().map(|e| e.to_string()))
        .collect();
    assert!(
        errs.iter()
            .any(|e| e.contains("fails its checksum") && e.contains("edges.bin")),
        "{errs:?}"
    );
    // A block index that does not cover its chunk is refused at once.
    rewrite(&|c| {
        c["blocks"].as_array_mut().unwrap().pop();
    });
    let errs: Vec<String> = dist_try(&dir, 2, Algo::Bfs, &p, &DistConfig::new(64 << 20))
        .into_iter()
        .filter_map(|r| r.err().map(|e| e.to_string()))
        .collect();
    assert!(
        errs.iter().any(|e| e.contains("the manifest is damaged")),
        "{errs:?}"
    );
    rewrite(&|c| {
        assert!(c.remove("blocks").is_some() && c.remove("block_records").is_some());
    });
    check(&dir, false);
}

/// Chunks large enough for the scatter's threads: the same answers on 1 and 3
/// threads, with the updates combined at once (resident accumulators) or
/// binned and stored (`--resident 0`).
#[test]
fn the_scatter_on_several_threads_gives_the_same_answers() {
    let tmp = tempfile::tempdir().unwrap();
    let (store, dir, _) = kronecker_pair(tmp.path(), 14, 16, 512 << 10, 4096, 2);
    // A root with out-edges: the first edge's source.
    let first = std::fs::read(tmp.path().join("g.bin32w")).unwrap();
    let root = u32::from_le_bytes(first[..4].try_into().unwrap());
    let cases = [
        (Algo::Bfs, None),
        (Algo::Sssp, None),
        (Algo::PageRank, Some(4)),
        (Algo::Spmv, Some(3)),
    ];
    for (algo, iterations) in cases {
        let p = Params {
            root,
            iterations,
            ..Default::default()
        };
        for threads in [1, 3] {
            for resident in [None, Some(0)] {
                let what = format!("{} threads {threads} resident {resident:?}", algo.name());
                let cfg = DistConfig {
                    threads,
                    resident_bytes: resident,
                    ..DistConfig::new(64 << 20)
                };
                let res = agrees(&store, &dir, algo, &p, &cfg, &what);
                assert!(res.iter().all(|r| r.1.threads == threads), "{what}");
                let combined: u64 = res.iter().map(|r| r.1.updates_combined).sum();
                assert_eq!(combined > 0, resident.is_none(), "{what}");
            }
        }
    }
}

/// mcst's updates are edges evaluated in the gather against the partition's
/// values: a helper loads those values too, and the forest is the same.
#[test]
fn mcst_with_and_without_stealing() {
    let tmp = tempfile::tempdir().unwrap();
    let (store, dir, _) = kronecker_pair_with(tmp.path(), 11, 8, 1200, 256, 2, true);
    let p = Params::default();
    let mut e = StreamEngine::new(&store, StreamConfig::default()).unwrap();
    let want = run(&mut e, Algo::Mcst, &p).unwrap();
    let mut stolen = 0;
    // Stealing is opportunistic (an engine offers help when it is idle, which
    // depends on timing; mcst runs a few iterations only): the stealing run is
    // repeated, each answer checked, until a chunk was stolen, at most 8 times.
    for (steal, tries) in [(true, 8), (false, 1)] {
        for t in 0..tries {
            let cfg = DistConfig {
                steal,
                ..DistConfig::new(64 << 20)
            };
            let what = format!("mcst steal {steal} try {t}");
            let res: Vec<_> = dist_try(&dir, 2, Algo::Mcst, &p, &cfg)
                .into_iter()
                .map(|r| r.unwrap_or_else(|e| panic!("{what}: {e}")))
                .collect();
            let chunks = res.iter().map(|r| r.1.stolen_chunks).sum::<u64>();
            same(&res[0].0.output, &want.output, &what);
            assert_eq!(res[0].0.summary, want.summary, "{what}");
            if !steal {
                assert_eq!(chunks, 0, "{what}");
            }
            stolen += chunks;
            if stolen > 0 {
                break;
            }
        }
    }
    assert!(stolen > 0, "no chunk was stolen in 8 runs");
}

/// With a work directory, run files and checkpoints go there (one directory per
/// rank), the rank directories stay as ingested, and `--resume` finds the
/// checkpoint there.
#[test]
fn checkpoints_follow_the_work_directory() {
    let tmp = tempfile::tempdir().unwrap();
    let (store, dir, _) = kronecker_pair(tmp.path(), 9, 8, 2048, 50, 4);
    let work = tmp.path().join("work");
    std::fs::create_dir(&work).unwrap();
    let p = Params {
        iterations: Some(6),
        ..Default::default()
    };
    let mut e = StreamEngine::new(&store, StreamConfig::default()).unwrap();
    let want = run(&mut e, Algo::PageRank, &p).unwrap();
    let base = DistConfig {
        checkpoint_every: 2,
        work_dir: Some(work.clone()),
        run_key: "pagerank".into(),
        ..DistConfig::new(64 << 20)
    };
    let failing = DistConfig {
        fail_at: Some(FailAt {
            rank: 1,
            point: FailPoint::Phase(9),
            abort: false,
        }),
        ..base.clone()
    };
    assert!(dist_try(&dir, 2, Algo::PageRank, &p, &failing)
        .iter()
        .all(|r| r.is_err()));
    for k in 0..2 {
        assert!(work
            .join(format!("rank-{k}.checkpoint/checkpoint.json"))
            .exists());
        assert!(!dir.join(format!("rank-{k}/checkpoint")).exists());
        assert!(!dir.join(format!("rank-{k}/run")).exists());
    }
    let resume = DistConfig {
        resume: true,
        ..base
    };
    let res = dist_try(&dir, 2, Algo::PageRank, &p, &resume);
    for r in &res {
        let (_, st) = r.as_ref().unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            st.resumed_from,
            Some(2),
            "phase 9 is the gather of iteration 4, before its checkpoint"
        );
    }
    let (got, _) = res.into_iter().next().unwrap().unwrap();
    same(
        &got.output,
        &want.output,
        "pagerank resumed from the work directory",
    );
    for k in 0..2 {
        assert!(!work.join(format!("rank-{k}.checkpoint")).exists());
    }
}

/// The layout's edges as `verify` reads them, on rank 0.
struct Passes<'a, 'b>(
    &'a outcore_dist::edges::EdgePasses<'b>,
    outcore_store::IdMap,
);

impl outcore_algos::verify::EdgeSource for Passes<'_, '_> {
    fn vertices(&self) -> u64 {
        self.0.vertices()
    }
    fn id_map(&self) -> outcore_algos::Result<outcore_store::IdMap> {
        Ok(self.1.clone())
    }
    fn for_each_edge(
        &self,
        weights: bool,
        f: &mut dyn FnMut(u32, u32, f32),
    ) -> outcore_algos::Result<()> {
        self.0
            .for_each_edge(weights, f)
            .map_err(|e| outcore_algos::AlgoError::Invalid(e.to_string()))
    }
}

#[test]
fn verification_over_the_ranks_edges_accepts_the_answer_and_catches_a_wrong_one() {
    let tmp = tempfile::tempdir().unwrap();
    let kind = GenKind::Kronecker {
        scale: 9,
        edge_factor: 8,
    };
    let inp = input(tmp.path(), kind, true);
    let io = ingest_opts(false, 512);
    let dir = tmp.path().join("d");
    let opts = DistIngestOptions {
        memory: 64 << 20,
        chunk_bytes: 2048,
        vertex_chunk: 0,
        partitions: 4,
        block_records: 0,
        seed: 5,
        force: false,
    };
    dist_ingest(&inp, &dir, 2, &opts, &io);
    let p = Params {
        root: 3,
        ..Default::default()
    };
    let good = dist_run(&dir, 2, Algo::Sssp, &p, &DistConfig::new(64 << 20)).output;
    let Output::Sssp(a) = &good else {
        panic!("an sssp result")
    };
    // One reached vertex one weight closer than it is: a wrong tree.
    let v = (0..a.len())
        .find(|&v| v != 3 && a[v] != u64::MAX)
        .expect("a reached vertex");
    let mut bad = outcore_state::VertexArray::from_vec(a.to_vec());
    let d = f32::from_bits((a[v] >> 32) as u32) * 0.5;
    bad[v] = ((d.to_bits() as u64) << 32) | (a[v] & 0xffff_ffff);
    let bad = Output::Sssp(bad);
    for (out, ok) in [(&good, true), (&bad, false)] {
        let net = local::network(2);
        let checks: Vec<_> = std::thread::scope(|s| {
            let hs: Vec<_> = net
                .iter()
                .map(|t| {
                    let (dir, p) = (&dir, &p);
                    s.spawn(move || {
                        let m = RankManifest::load(dir, t.rank(), 2).unwrap();
                        let ids = outcore_dist::id_map(dir, &m).unwrap();
                        outcore_dist::edges::with_edge_passes(t, dir, &m, |passes| {
                            passes.map(|ps| {
                                outcore_algos::verify::verify(&Passes(ps, ids), Algo::Sssp, p, out)
                                    .map_err(|e| e.to_string())
                            })
                        })
                        .unwrap()
                    })
                })
                .collect();
            hs.into_iter().map(|h| h.join().unwrap()).collect()
        });
        assert!(checks[1].is_none(), "only rank 0 checks");
        let c = checks[0].as_ref().expect("rank 0 checks");
        assert_eq!(c.is_ok(), ok, "{c:?}");
        if !ok {
            assert!(
                c.as_ref().unwrap_err().contains("verification failed"),
                "{c:?}"
            );
        }
        // The passes leave nothing behind in the rank directories.
        for r in 0..2 {
            assert!(!dir.join(format!("rank-{r}/verify")).exists());
        }
    }
}
