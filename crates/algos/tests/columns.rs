//! `Mode::Columns` of the streaming engine: the pool's threads take whole
//! blocks, and no two blocks with the same target interval are processed at
//! once, so an edge function may update its target with a plain load and
//! store. Checked by counting in-degrees that way — a slow read-modify-write
//! that loses counts as soon as two threads hold one column — for every
//! thread and partition count, against the reference; and by the edge and
//! block counts the engine reports. Also `exec_cuts`, a pass that stops
//! between groups of rows (wcc's looks for the giant set).

use outcore_engine::{Mode, StreamConfig, StreamEngine};
use outcore_io::IoStats;
use outcore_store::ingest::Quiet;
use outcore_store::{ingest, IngestOptions, Store};
use outcore_testkit::gen::{generate, GenKind, GenOptions};
use outcore_testkit::reference::MemGraph;
use std::path::Path;
use std::sync::atomic::{AtomicU32, Ordering::Relaxed};

fn build(dir: &Path, kind: GenKind, p: u32) -> (Store, MemGraph) {
    let input = dir.join("g.bin32");
    if !input.exists() {
        let opts = GenOptions {
            kind: kind.clone(),
            seed: 7,
            weighted: false,
            text: false,
        };
        generate(&opts, &input, IoStats::new(), &|_| {}).unwrap();
    }
    let n = kind.vertices() as u32;
    let g = MemGraph::from_bin(&std::fs::read(&input).unwrap(), n, false);
    let out = dir.join(format!("p{p}"));
    let opts = IngestOptions {
        partitions: Some(p),
        vertices: Some(n as u64),
        memory: 64 << 20,
        ..Default::default()
    };
    ingest(&[input], &out, &opts, &Quiet).unwrap();
    (Store::open(&out).unwrap(), g)
}

#[test]
fn a_column_is_one_threads_at_a_time() {
    let dir = tempfile::tempdir().unwrap();
    let kind = GenKind::Kronecker {
        scale: 12,
        edge_factor: 16,
    };
    for p in [1u32, 3, 8] {
        let (store, g) = build(dir.path(), kind.clone(), p);
        if p == 1 {
            // A budget whose quarter left holds fewer than two of its one
            // (large) block per thread: four threads split each block instead.
            let cfg = StreamConfig {
                memory: 10 << 20,
                threads: 4,
                ..Default::default()
            };
            let e = StreamEngine::new(&store, cfg).unwrap();
            let slots = e.stats().ring_slots;
            assert!(slots < 8 && !e.columns_pay(), "{slots} slots");
        }
        let mut want = vec![0u32; g.n as usize];
        for &(_, v, _) in &g.edges {
            want[v as usize] += 1;
        }
        for threads in [1usize, 2, 4] {
            let cfg = StreamConfig {
                memory: 64 << 20,
                threads,
                ..Default::default()
            };
            let mut e = StreamEngine::new(&store, cfg).unwrap();
            // The ring holds two blocks per thread (at least four) while they
            // take a quarter of what is left: here every thread count takes
            // whole blocks in sync programs.
            let slots = e.stats().ring_slots;
            assert_eq!(slots, 4.max(2 * threads), "{threads} threads");
            assert!(e.columns_pay(), "{slots} slots");
            let deg: Vec<AtomicU32> = (0..g.n).map(|_| AtomicU32::new(0)).collect();
            for round in 1..=3u32 {
                e.activate_all();
                e.exec(Mode::Columns, |_, _, v, _| {
                    // Load, wait, store: two threads in one column at once
                    // would lose counts here.
                    let x = deg[v as usize].load(Relaxed);
                    for _ in 0..8 {
                        std::hint::spin_loop();
                    }
                    deg[v as usize].store(x + 1, Relaxed);
                })
                .unwrap();
                let got: Vec<u32> = deg.iter().map(|d| d.load(Relaxed)).collect();
                let expect: Vec<u32> = want.iter().map(|w| w * round).collect();
                assert!(
                    got == expect,
                    "P = {p}, {threads} threads, round {round}: counts lost"
                );
                let st = e.stats();
                assert_eq!(st.edges_processed, round as u64 * g.edges.len() as u64);
                let grid = store.grid().unwrap();
                let blocks = (0..p)
                    .flat_map(|r| (0..p).map(move |c| (r, c)))
                    .filter(|&(r, c)| grid.entry(r, c).edges > 0)
                    .count() as u64;
                assert_eq!(st.blocks_read, round as u64 * blocks);
                // One pass per block: no re-entry in this mode.
                assert_eq!(st.passes, st.blocks_read);
            }
        }
    }
}

#[test]
fn cuts_stop_between_row_groups() {
    let dir = tempfile::tempdir().unwrap();
    let kind = GenKind::Kronecker {
        scale: 11,
        edge_factor: 8,
    };
    let p = 8u32;
    let (store, g) = build(dir.path(), kind, p);
    let interval = store.interval(0).end;
    let row = |u: u32| u / interval;
    // Edges whose source lies in rows below each cut.
    let cuts = [0u32, 2, 5, 8, 11];
    let before: Vec<u64> = cuts
        .iter()
        .map(|&c| g.edges.iter().filter(|e| row(e.0) < c).count() as u64)
        .collect();
    for threads in [1usize, 2] {
        let cfg = StreamConfig {
            memory: 64 << 20,
            threads,
            ..Default::default()
        };
        let mut e = StreamEngine::new(&store, cfg).unwrap();
        let (hooks, edges) = (AtomicU32::new(0), std::sync::atomic::AtomicU64::new(0));
        e.activate_all();
        e.exec_cuts(
            Mode::Multi,
            &cuts,
            |sh| {
                let mut n = 0u64;
                for (u, vs) in sh.runs() {
                    // Every cut at or below this run's row has stopped the pass.
                    let due = cuts.iter().filter(|&&c| c <= row(u)).count() as u32;
                    assert_eq!(hooks.load(Relaxed), due, "edge of row {}", row(u));
                    n += vs.len() as u64;
                }
                assert_eq!(
                    n,
                    sh.targets().len() as u64,
                    "a share's runs tile its targets"
                );
                edges.fetch_add(n, Relaxed);
            },
            |eng, i| {
                assert_eq!(hooks.load(Relaxed), i as u32, "cuts in order, once each");
                assert_eq!(
                    edges.load(Relaxed),
                    before[i],
                    "cut {i}: the rows below it, all"
                );
                assert_eq!(eng.vertices(), g.n);
                hooks.fetch_add(1, Relaxed);
                Ok(())
            },
        )
        .unwrap();
        assert_eq!(hooks.load(Relaxed), cuts.len() as u32);
        assert_eq!(edges.load(Relaxed), g.edges.len() as u64);
    }
}

/// wcc's pass over shares (`exec_cuts`, marks spreading from the largest set
/// as the rows stream) on blocks large enough to be split among threads: the
/// labels equal the reference's for every partition and thread count, on a
/// small-world graph (one giant set), a sparse uniform one (many small sets,
/// the largest far from giant) and a grid (one set that the first rows do
/// not reveal).
#[test]
fn wcc_over_shares_matches_the_reference() {
    let kinds = [
        GenKind::Kronecker {
            scale: 13,
            edge_factor: 16,
        },
        GenKind::Uniform {
            vertices: 60_000,
            edges: 40_000,
        },
        GenKind::Grid {
            rows: 150,
            cols: 200,
        },
    ];
    for kind in kinds {
        let dir = tempfile::tempdir().unwrap();
        let mut want = None;
        for p in [1u32, 2, 5, 64] {
            let (store, g) = build(dir.path(), kind.clone(), p);
            let want = want.get_or_insert_with(|| outcore_testkit::reference::wcc(&g));
            for threads in [1usize, 2, 3] {
                let cfg = StreamConfig {
                    memory: 64 << 20,
                    threads,
                    ..Default::default()
                };
                let mut e = StreamEngine::new(&store, cfg).unwrap();
                let r = outcore_algos::run(&mut e, outcore_algos::Algo::Wcc, &Default::default())
                    .unwrap();
                let outcore_algos::Output::Labels(l) = &r.output else {
                    panic!("wcc gives labels")
                };
                assert_eq!(&l[..], &want[..], "{kind:?} p={p} threads={threads}");
                assert!(
                    r.summary.contains("edges unioned"),
                    "the marked pass ran: {}",
                    r.summary
                );
            }
        }
    }
}

#[test]
fn flat_runs_apply_exactly_the_active_unrefused_edges() {
    // exec_flat: a value per run of an active source (None: refused, not
    // applied), then apply(v, value) per target, through windows of per-edge
    // slots. Checked by summing, per target, a value that encodes the source,
    // against the edge list: P = 1 (one block, runs of thousands of targets:
    // a star of 3 x 4096 edges crosses several windows), 3 and 8; every mode;
    // all sources active or every third one; every fifth source refused.
    use outcore_engine::{prefetch, Flat, Hints};
    use std::sync::atomic::AtomicU64;
    let dir = tempfile::tempdir().unwrap();
    let kind = GenKind::Kronecker {
        scale: 12,
        edge_factor: 16,
    };
    let input = dir.path().join("g.bin32");
    let opts = GenOptions {
        kind: kind.clone(),
        seed: 11,
        weighted: false,
        text: false,
    };
    generate(&opts, &input, IoStats::new(), &|_| {}).unwrap();
    let n = kind.vertices() as u32;
    let mut bytes = std::fs::read(&input).unwrap();
    for _ in 0..3 {
        for v in 0..n {
            bytes.extend_from_slice(&7u32.to_le_bytes());
            bytes.extend_from_slice(&v.to_le_bytes());
        }
    }
    std::fs::write(&input, &bytes).unwrap();
    let g = MemGraph::from_bin(&bytes, n, false);
    let value = |u: u32| (u as u64 + 1) * 1_000_003;
    let refused = |u: u32| u % 5 == 2 && u != 7;
    for p in [1u32, 3, 8] {
        let out = dir.path().join(format!("p{p}"));
        let iopts = IngestOptions {
            partitions: Some(p),
            vertices: Some(n as u64),
            memory: 64 << 20,
            ..Default::default()
        };
        ingest(std::slice::from_ref(&input), &out, &iopts, &Quiet).unwrap();
        let store = Store::open(&out).unwrap();
        for every in [1u32, 3] {
            let active = |u: u32| u.is_multiple_of(every) || u == 7;
            let mut want = vec![0u64; n as usize];
            let mut want_edges = 0u64;
            for &(u, v, _) in &g.edges {
                if active(u) {
                    want_edges += 1;
                    if !refused(u) {
                        want[v as usize] = want[v as usize].wrapping_add(value(u));
                    }
                }
            }
            for (mode, threads) in [
                (Mode::Single, 1usize),
                (Mode::Columns, 2),
                (Mode::Multi, 1),
                (Mode::Multi, 3),
            ] {
                let cfg = StreamConfig {
                    memory: 64 << 20,
                    threads,
                    ..Default::default()
                };
                let mut e = StreamEngine::new(&store, cfg).unwrap();
                (0..n).filter(|&u| active(u)).for_each(|u| e.activate(u));
                let sums: Vec<AtomicU64> = (0..n).map(|_| AtomicU64::new(0)).collect();
                let calls = AtomicU64::new(0);
                let flat = Flat {
                    value: |u: u32, vs: &[u32]| {
                        assert!(active(u) && !vs.is_empty(), "{u} inactive or empty");
                        calls.fetch_add(1, Relaxed);
                        (!refused(u)).then(|| value(u))
                    },
                    apply: |_: &outcore_engine::Ctx<'_>, v: u32, x: u64| {
                        sums[v as usize].fetch_add(x, Relaxed);
                    },
                };
                let hints = Hints(|v| prefetch(&sums, v), |u| prefetch(&sums, u));
                e.exec_flat(mode, hints, flat).unwrap();
                let got: Vec<u64> = sums.iter().map(|s| s.load(Relaxed)).collect();
                let at = format!("P = {p}, every {every}, {mode:?}, {threads} threads");
                assert!(got == want, "{at}: sums differ");
                assert_eq!(e.stats().edges_processed, want_edges, "{at}: edges");
                assert!(calls.load(Relaxed) > 0, "{at}");
            }
        }
    }
}
