//! The concurrent-jobs engine (GraphCP): for the paper's workload mixes — Het
//! {pagerank, bfs, wcc (one-pass union-find), sssp}, Hom1 {bfs x 4 roots}, Hom2
//! {sssp x 4}, Sim1 {bfs, sssp} x 2, Sim2 {pagerank, wcc-lp (label propagation)}
//! x 2 — under every I/O mode with DFVU on and off,
//! on generated graphs
//! with 1, 4 and 16 partitions, every job's result equals the same job run alone,
//! the in-memory reference of `outcore-testkit`, and passes `verify`.

use outcore_algos::jobs::{make_job, BspJob, JobSpec};
use outcore_algos::{verify::verify, Algo, Output, Params};
use outcore_engine::{Granularity, IoMode, Job, JobsConfig, JobsEngine, JobsStats};
use outcore_io::calibrate::{RandomResult, SeqResult};
use outcore_io::{DeviceProfile, IoStats};
use outcore_store::ingest::Quiet;
use outcore_store::{ingest, IngestOptions, Store};
use outcore_testkit::gen::{generate, GenKind, GenOptions};
use outcore_testkit::reference::{self, MemGraph};
use std::path::Path;

fn build(dir: &Path, name: &str, kind: GenKind, undirected: bool, p: u32) -> (Store, MemGraph) {
    let input = dir.join(format!("{name}.bin32w"));
    if !input.exists() {
        let opts = GenOptions {
            kind: kind.clone(),
            seed: 11,
            weighted: true,
            text: false,
        };
        generate(&opts, &input, IoStats::new(), &|_| {}).unwrap();
    }
    let n = kind.vertices() as u32;
    let mut g = MemGraph::from_bin(&std::fs::read(&input).unwrap(), n, true);
    if undirected {
        g = g.undirected();
    }
    let out = dir.join(format!("{name}-p{p}"));
    let opts = IngestOptions {
        undirected,
        partitions: Some(p),
        vertices: Some(n as u64),
        memory: 64 << 20,
        ..Default::default()
    };
    ingest(&[input], &out, &opts, &Quiet).unwrap();
    // Counters of its own: other tests in this process read stores at the same time.
    let store = Store::open_with(&out, outcore_io::ReadMode::Buffered, IoStats::new()).unwrap();
    (store, g)
}

fn run_jobs(
    store: &Store,
    specs: &[JobSpec],
    mode: IoMode,
    granularity: Granularity,
    dfvu: bool,
    reuse: bool,
) -> (Vec<outcore_algos::Run>, JobsStats) {
    run_jobs_on(2, store, specs, mode, granularity, dfvu, reuse)
}

/// [`run_jobs`] on a pool of `threads` compute threads.
fn run_jobs_on(
    threads: usize,
    store: &Store,
    specs: &[JobSpec],
    mode: IoMode,
    granularity: Granularity,
    dfvu: bool,
    reuse: bool,
) -> (Vec<outcore_algos::Run>, JobsStats) {
    let mut jobs: Vec<Box<dyn BspJob>> =
        specs.iter().map(|s| make_job(s, store).unwrap()).collect();
    let cfg = JobsConfig {
        memory: 1 << 20,
        io_mode: mode,
        // Small enough that Algorithm 1 sees both sequential and random runs.
        io_block: 256,
        dfvu,
        dfvu_rounds: if dfvu { 3 } else { 1 },
        profile: Some(fast_random_device()),
        granularity,
        reuse,
    };
    let mut e = JobsEngine::new(store, cfg).unwrap();
    {
        let mut refs: Vec<&mut dyn Job> =
            jobs.iter_mut().map(|j| &mut **j as &mut dyn Job).collect();
        // Two threads, whatever the machine (unless a test asks for one): units of
        // at least four sub-blocks then give PageRank whole-sub-block tasks with
        // exclusive targets.
        rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap()
            .install(|| e.run(&mut refs, None))
            .unwrap();
    }
    let st = e.stats().clone();
    assert_eq!(st.jobs.len(), specs.len());
    assert_eq!(st.modes.len() as u64, st.iterations);
    assert_eq!(st.iteration_row_modes.len() as u64, st.iterations);
    assert!(st.fetched <= st.lists_loaded);
    for (m, rows) in st.modes.iter().zip(&st.iteration_row_modes) {
        let kinds = rows.iter().filter(|&&r| r > 0).count();
        assert_eq!(kinds, 1 + (m == "mixed") as usize, "{m} {rows:?}");
        if granularity == Granularity::Iteration || mode != IoMode::Auto {
            assert_ne!(m, "mixed");
        }
    }
    assert_eq!(st.iteration_seconds.len() as u64, st.iterations);
    assert_eq!(st.iteration_bytes.iter().sum::<u64>(), st.bytes_read);
    assert!(st.jobs.iter().all(|j| j.finished));
    if !reuse {
        assert_eq!(st.blocks_reused + st.bytes_reused, 0);
    }
    match mode {
        IoMode::Sequential => assert_eq!(st.blocks_selective + st.lists_loaded, 0),
        IoMode::Selective => assert_eq!(st.blocks_whole + st.lists_loaded, 0),
        IoMode::Lists => {
            assert_eq!(st.blocks_whole + st.blocks_selective, 0);
            assert!(st.lists_loaded > 0 && st.list_groups > 0);
        }
        IoMode::Auto => {}
    }
    let runs = jobs
        .into_iter()
        .zip(&st.jobs)
        .map(|(j, s)| j.into_run(s.iterations))
        .collect();
    (runs, st)
}

/// A device whose random 4 KiB reads are as fast as its sequential reads, so that
/// selective loading pays off when few sources are active even on small graphs.
fn fast_random_device() -> DeviceProfile {
    let seq = SeqResult {
        streams: 1,
        request_bytes: 4 << 20,
        bytes: 1 << 30,
        seconds: 1.0,
        bytes_per_s: 1e9,
    };
    DeviceProfile {
        version: outcore_io::calibrate::PROFILE_VERSION,
        dir: "/test".into(),
        device: "test".into(),
        measured_at: 0,
        direct: true,
        file_bytes: 1 << 30,
        seq_read: seq.clone(),
        seq_read_parallel: None,
        seq_write: seq,
        random: vec![RandomResult {
            op: "read".into(),
            block_bytes: 4096,
            depth: 1,
            requests: 1,
            seconds: 1.0,
            iops: 250_000.0,
            bytes_per_s: 1e9,
            lat_mean_us: 4.0,
            lat_p50_us: 4.0,
            lat_p99_us: 4.0,
        }],
    }
}

fn same(a: &Output, b: &Output, ctx: &str) {
    match (a, b) {
        (Output::Bfs(x), Output::Bfs(y)) | (Output::Sssp(x), Output::Sssp(y)) => {
            assert_eq!(&x[..], &y[..], "{ctx}")
        }
        (Output::Labels(x), Output::Labels(y)) => assert_eq!(&x[..], &y[..], "{ctx}"),
        (Output::Values(x), Output::Values(y)) => {
            let l1: f64 = x.iter().zip(y.iter()).map(|(a, b)| (a - b).abs()).sum();
            assert!(l1 <= 1e-12, "{ctx}: L1 {l1:e}");
        }
        _ => panic!("{ctx}: different kinds of output"),
    }
}

fn against_reference(store: &Store, g: &MemGraph, spec: &JobSpec, out: &Output, ctx: &str) {
    let root = spec.root.unwrap_or(0) as u32;
    let params = Params {
        root,
        iterations: Some(spec.iterations.unwrap_or(10)).filter(|_| spec.algo == Algo::PageRank),
        ..Default::default()
    };
    verify(store, spec.algo, &params, out).unwrap_or_else(|e| panic!("{ctx}: {e}"));
    match out {
        Output::Bfs(a) => {
            let got: Vec<Option<u32>> = a
                .iter()
                .map(|&x| outcore_algos::bfs_entry(x).map(|t| t.0))
                .collect();
            assert_eq!(got, reference::bfs(g, root), "{ctx}");
        }
        Output::Sssp(a) => {
            let got: Vec<Option<f32>> = a
                .iter()
                .map(|&x| outcore_algos::sssp_entry(x).map(|t| t.0))
                .collect();
            assert_eq!(got, reference::sssp(g, root), "{ctx}");
        }
        Output::Labels(l) => assert_eq!(&l[..], &reference::wcc(g)[..], "{ctx}"),
        Output::Values(x) => {
            let want = reference::pagerank(g, 0.85, spec.iterations.unwrap_or(10) as _);
            let l1: f64 = x.iter().zip(&want).map(|(a, b)| (a - b).abs()).sum();
            assert!(l1 <= 1e-12, "{ctx}: L1 {l1:e}");
        }
        Output::Flags(_) | Output::Forest(_) => unreachable!("the jobs engine runs no mis or mcst"),
    }
}

#[test]
fn every_mix_agrees_with_single_runs_and_references_in_every_io_mode() {
    let dir = tempfile::tempdir().unwrap();
    let graphs = [
        (
            "kron",
            GenKind::Kronecker {
                scale: 9,
                edge_factor: 8,
            },
            false,
        ),
        ("grid-und", GenKind::Grid { rows: 20, cols: 15 }, true),
    ];
    let (mut auto_whole, mut auto_selective, mut auto_lists, mut dfvu_ahead) = (0, 0, 0, 0);
    let (mut covered, mut pulled, mut fetched, mut mixed) = (0, 0, 0, 0);
    let (mut exclusive, mut exclusive_none, mut reused) = (0, 0, 0);
    for (name, kind, undirected) in graphs {
        for p in [1u32, 4, 16] {
            let (store, g) = build(dir.path(), name, kind.clone(), undirected, p);
            let n = g.n as u64;
            let r = [0, n / 3, n - 1, n / 2];
            let spec = |s: String| s.parse::<JobSpec>().unwrap();
            let mixes: Vec<(&str, Vec<JobSpec>)> = vec![
                (
                    "Het",
                    vec![
                        spec("pagerank:iterations=5".into()),
                        spec(format!("bfs:root={}", r[1])),
                        spec("wcc".into()),
                        spec(format!("sssp:root={}", r[2])),
                    ],
                ),
                (
                    "Hom1",
                    r.iter().map(|x| spec(format!("bfs:root={x}"))).collect(),
                ),
                (
                    "Hom2",
                    r.iter().map(|x| spec(format!("sssp:root={x}"))).collect(),
                ),
                (
                    "Sim1",
                    vec![
                        spec(format!("bfs:root={}", r[0])),
                        spec(format!("sssp:root={}", r[1])),
                        spec(format!("bfs:root={}", r[2])),
                        spec(format!("sssp:root={}", r[3])),
                    ],
                ),
                (
                    "Sim2",
                    vec![
                        spec("pagerank".into()),
                        spec("wcc-lp".into()),
                        spec("pagerank:iterations=3,damping=0.8".into()),
                        spec("wcc-lp".into()),
                    ],
                ),
            ];
            for (mix, specs) in &mixes {
                let alone: Vec<Output> = specs
                    .iter()
                    .map(|s| {
                        run_jobs(
                            &store,
                            std::slice::from_ref(s),
                            IoMode::Sequential,
                            Granularity::Iteration,
                            false,
                            false,
                        )
                        .0
                        .remove(0)
                        .output
                    })
                    .collect();
                use Granularity::{Iteration, Row};
                for (mode, gran, dfvu) in [
                    (IoMode::Auto, Iteration, true),
                    (IoMode::Auto, Row, true),
                    (IoMode::Sequential, Iteration, true),
                    (IoMode::Selective, Iteration, true),
                    (IoMode::Lists, Iteration, true),
                    (IoMode::Auto, Iteration, false),
                    (IoMode::Auto, Row, false),
                    (IoMode::Selective, Iteration, false),
                    (IoMode::Lists, Iteration, false),
                ] {
                    let (runs, st) = run_jobs(&store, specs, mode, gran, dfvu, true);
                    dfvu_ahead += st.dfvu_sources;
                    reused += st.blocks_reused;
                    covered += st.covered;
                    pulled += st.pulled;
                    fetched += st.fetched;
                    mixed += st.modes.iter().filter(|m| *m == "mixed").count();
                    if specs.iter().any(|s| s.algo == Algo::PageRank) {
                        exclusive += st.exclusive_tasks;
                    } else {
                        exclusive_none += st.exclusive_tasks;
                    }
                    if !dfvu {
                        assert_eq!(st.dfvu_sources + st.covered + st.pulled, 0);
                    }
                    if mode == IoMode::Selective {
                        assert_eq!(st.pulled, 0, "selective units pull no activations");
                    }
                    if mode == IoMode::Sequential || mode == IoMode::Selective {
                        assert_eq!(st.fetched, 0, "only lists units fetch lists");
                    }
                    if mode == IoMode::Auto {
                        auto_whole += st.blocks_whole;
                        auto_selective += st.blocks_selective;
                        auto_lists += st.lists_loaded;
                    }
                    for (k, (run, s)) in runs.iter().zip(specs).enumerate() {
                        let ctx = format!(
                            "{name} P={p} {mix} {mode:?} {gran:?} dfvu {dfvu} job {k} {}",
                            s.text
                        );
                        same(&run.output, &alone[k], &ctx);
                        if s.algo != Algo::PageRank || s.damping == 0.85 {
                            against_reference(&store, &g, s, &run.output, &ctx);
                        }
                    }
                }
            }
        }
    }
    // With that device the cost model chose each way somewhere.
    assert!(
        auto_whole > 0 && auto_selective > 0 && auto_lists > 0,
        "{auto_whole} whole, {auto_selective} selective, {auto_lists} lists"
    );
    assert!(dfvu_ahead > 0, "DFVU never ran ahead");
    // Some iterations started with whole units the previous one kept.
    assert!(reused > 0, "no unit was ever kept for the next iteration");
    // Some re-activations were covered by the source's own unit (and every
    // answer above still equals the single run and the reference).
    assert!(covered > 0, "no activation was ever covered");
    // Some sources joined their iteration's frontier from the next one.
    assert!(pulled > 0, "no activation was ever pulled");
    // Lists units read some such sources' lists on demand.
    assert!(fetched > 0, "no list was ever fetched");
    // Deciding per row mixed the ways of loading within an iteration somewhere.
    assert!(mixed > 0, "no iteration mixed its rows' modes");
    // PageRank ran on whole sub-blocks with plain stores somewhere (and got the
    // same answers), and no other job ever did.
    assert!(
        exclusive > 0 && exclusive_none == 0,
        "{exclusive} / {exclusive_none}"
    );
}

#[test]
fn a_job_error_stops_the_run_and_a_bad_root_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("neg.txt");
    std::fs::write(&input, "0 1 1.0\n1 2 -2.5\n2 0 1.0\n").unwrap();
    let out = dir.path().join("neg");
    ingest(&[input], &out, &IngestOptions::default(), &Quiet).unwrap();
    let store = Store::open(&out).unwrap();
    let spec: JobSpec = "sssp:root=0".parse().unwrap();
    let mut job = make_job(&spec, &store).unwrap();
    let mut bfs = make_job(&"bfs:root=0".parse().unwrap(), &store).unwrap();
    let mut e = JobsEngine::new(&store, JobsConfig::default()).unwrap();
    let err = e
        .run(
            &mut [&mut *job as &mut dyn Job, &mut *bfs as &mut dyn Job],
            None,
        )
        .unwrap_err()
        .to_string();
    assert!(err.contains("edge (1, 2) has weight -2.5"), "{err}");
    let e = make_job(&"bfs:root=99".parse().unwrap(), &store)
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("root 99 is not a vertex"), "{e}");
}

/// DFVU across rows on a path 0 -> 1 -> ... -> 63 in 4 rows of 16 vertices, with
/// PageRank beside bfs so that every row is loaded whole in every iteration: while a
/// row is in memory the DFVU rounds carry the wave through it, and the next row takes
/// the vertex the previous one activated in the same iteration, so bfs covers the
/// whole path in its first iteration; without DFVU it needs one iteration per vertex.
/// The depths are the same either way.
#[test]
fn dfvu_carries_a_wave_across_rows_in_one_iteration() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("path.txt");
    let text: String = (0..63).map(|v| format!("{v} {}\n", v + 1)).collect();
    std::fs::write(&input, text).unwrap();
    let out = dir.path().join("path");
    let opts = IngestOptions {
        partitions: Some(4),
        vertices: Some(64),
        ..Default::default()
    };
    ingest(&[input], &out, &opts, &Quiet).unwrap();
    let store = Store::open_with(&out, outcore_io::ReadMode::Buffered, IoStats::new()).unwrap();
    assert_eq!(store.partitions(), 4);
    let run = |dfvu: bool| {
        let specs: Vec<JobSpec> = ["bfs:root=0", "pagerank:iterations=3"]
            .iter()
            .map(|s| s.parse().unwrap())
            .collect();
        let mut jobs: Vec<Box<dyn BspJob>> =
            specs.iter().map(|s| make_job(s, &store).unwrap()).collect();
        let cfg = JobsConfig {
            io_mode: IoMode::Sequential,
            dfvu,
            dfvu_rounds: 16,
            ..Default::default()
        };
        let mut e = JobsEngine::new(&store, cfg).unwrap();
        let mut refs: Vec<&mut dyn Job> =
            jobs.iter_mut().map(|j| &mut **j as &mut dyn Job).collect();
        e.run(&mut refs, None).unwrap();
        let st = e.stats().clone();
        let bfs = jobs.remove(0).into_run(st.jobs[0].iterations);
        (st, bfs.output)
    };
    let (with, out_with) = run(true);
    let (without, out_without) = run(false);
    // Every vertex but the root was processed ahead, in the iteration that
    // reached it.
    assert_eq!(with.jobs[0].iterations, 1, "{with:?}");
    assert_eq!(with.dfvu_sources, 63, "{with:?}");
    assert_eq!(without.dfvu_sources + without.pulled, 0);
    assert_eq!(without.jobs[0].iterations, 64, "{without:?}");
    same(&out_with, &out_without, "path bfs");
    match out_with {
        Output::Bfs(a) => {
            for (v, &x) in a.iter().enumerate() {
                assert_eq!(
                    outcore_algos::bfs_entry(x).map(|t| t.0),
                    Some(v as u32),
                    "{v}"
                );
            }
        }
        _ => panic!("bfs gives depths"),
    }
}

/// Keeping an iteration's first whole units for the next one changes where the
/// sub-blocks come from, not what the jobs see: on one thread (so the frontiers do
/// not depend on timing) every answer, iteration and edge count is the same with
/// and without reuse, and what reuse did not read is exactly what it reused.
#[test]
fn reused_units_replace_reads_exactly() {
    let dir = tempfile::tempdir().unwrap();
    let kind = GenKind::Kronecker {
        scale: 10,
        edge_factor: 8,
    };
    let (store, _) = build(dir.path(), "kron", kind, false, 8);
    let specs: Vec<JobSpec> = [
        "pagerank:iterations=4",
        "bfs:root=3",
        "sssp:root=5",
        "wcc-lp",
    ]
    .iter()
    .map(|s| s.parse().unwrap())
    .collect();
    let run = |reuse: bool| {
        run_jobs_on(
            1,
            &store,
            &specs,
            IoMode::Sequential,
            Granularity::Iteration,
            true,
            reuse,
        )
    };
    let (with, st_with) = run(true);
    let (without, st_without) = run(false);
    assert!(st_with.blocks_reused > 0, "{st_with:?}");
    assert!(st_with.bytes_reused > 0);
    assert_eq!(
        st_with.blocks_whole + st_with.blocks_reused,
        st_without.blocks_whole
    );
    assert_eq!(
        st_with.bytes_read + st_with.bytes_reused,
        st_without.bytes_read
    );
    assert_eq!(st_with.iterations, st_without.iterations);
    for (k, (a, b)) in with.iter().zip(&without).enumerate() {
        assert_eq!(
            st_with.jobs[k].edges_processed,
            st_without.jobs[k].edges_processed
        );
        same(&a.output, &b.output, &format!("job {k}"));
    }
}
