//! Every algorithm on the streaming engine against the in-memory references of
//! `outcore-testkit`, on seeded generated graphs, for every combination that must
//! not change the answer: partitions (1, 4, 16), threads (1, 2), MRT (1, 5), block
//! order, and vertex arrays mapped from files. Every result also passes
//! `verify`.

use outcore_algos::{run, verify::verify, Algo, Output, Params};
use outcore_engine::{BlockOrder, BottomUp, StreamConfig, StreamEngine};
use outcore_io::IoStats;
use outcore_store::ingest::Quiet;
use outcore_store::{ingest, IngestOptions, Store};
use outcore_testkit::gen::{generate, GenKind, GenOptions};
use outcore_testkit::reference::{self, MemGraph};
use std::path::Path;

struct Case {
    name: &'static str,
    kind: GenKind,
    weighted: bool,
    undirected: bool,
    /// Ingested `--with-reverse` (only scc runs on it here).
    with_reverse: bool,
    seed: u64,
}

fn build(dir: &Path, c: &Case, p: u32) -> (Store, MemGraph) {
    let ext = if c.weighted { "bin32w" } else { "bin32" };
    let input = dir.join(format!("{}.{ext}", c.name));
    if !input.exists() {
        let opts = GenOptions {
            kind: c.kind.clone(),
            seed: c.seed,
            weighted: c.weighted,
            text: false,
        };
        generate(&opts, &input, IoStats::new(), &|_| {}).unwrap();
    }
    let n = c.kind.vertices() as u32;
    let mut g = MemGraph::from_bin(&std::fs::read(&input).unwrap(), n, c.weighted);
    if c.undirected {
        g = g.undirected();
    }
    let out = dir.join(format!("{}-p{p}", c.name));
    let opts = IngestOptions {
        undirected: c.undirected,
        with_reverse: c.with_reverse,
        partitions: Some(p),
        vertices: Some(n as u64),
        memory: 64 << 20,
        ..Default::default()
    };
    ingest(&[input], &out, &opts, &Quiet).unwrap();
    (Store::open(&out).unwrap(), g)
}

fn cases() -> Vec<Case> {
    vec![
        Case {
            name: "kron",
            kind: GenKind::Kronecker {
                scale: 9,
                edge_factor: 8,
            },
            weighted: true,
            undirected: false,
            with_reverse: false,
            seed: 3,
        },
        Case {
            name: "kron-rev",
            kind: GenKind::Kronecker {
                scale: 9,
                edge_factor: 4,
            },
            weighted: false,
            undirected: false,
            with_reverse: true,
            seed: 11,
        },
        Case {
            name: "uniform-rev",
            kind: GenKind::Uniform {
                vertices: 600,
                edges: 700,
            },
            weighted: true,
            undirected: false,
            with_reverse: true,
            seed: 13,
        },
        Case {
            name: "grid",
            kind: GenKind::Grid { rows: 24, cols: 17 },
            weighted: true,
            undirected: false,
            with_reverse: false,
            seed: 5,
        },
        Case {
            name: "uniform-und",
            kind: GenKind::Uniform {
                vertices: 700,
                edges: 900,
            },
            weighted: false,
            undirected: true,
            with_reverse: false,
            seed: 7,
        },
        Case {
            name: "kron-und",
            kind: GenKind::Kronecker {
                scale: 8,
                edge_factor: 6,
            },
            weighted: true,
            undirected: true,
            with_reverse: false,
            seed: 17,
        },
        Case {
            name: "path",
            kind: GenKind::Path { vertices: 300 },
            weighted: false,
            undirected: false,
            with_reverse: false,
            seed: 1,
        },
    ]
}

fn case(name: &str) -> Case {
    cases()
        .into_iter()
        .find(|c| c.name == name)
        .expect("a case of that name")
}

fn check(store: &Store, g: &MemGraph, cfg: &StreamConfig, what: &str) {
    let roots = [0u32, g.n / 3, g.n - 1];
    let ref_wcc = reference::wcc(g);
    let ref_mis = reference::greedy_mis(g);
    let ref_pr = reference::pagerank(g, 0.85, 10);
    let ref_spmv = reference::spmv(g);
    let marked = store.manifest().reverse_marked;
    for algo in Algo::ALL {
        if matches!(algo, Algo::MisGas | Algo::Bp | Algo::Mcst) && store.manifest().directed {
            // Refused by name on a directed store (tested in the CLI's tests).
            continue;
        }
        // scc runs on stores with marked reverse edges, and is what runs there
        // (the others are checked on the plain stores).
        if (algo == Algo::Scc) != marked {
            continue;
        }
        let root_list: &[u32] = if algo.needs_root() {
            &roots
        } else {
            &roots[..1]
        };
        // bfs and sssp may run their iterations from the CSR lists when the
        // budget holds what that needs (with a warm cache sssp does so in
        // every iteration): their grid passes are run too.
        let modes = match algo {
            Algo::Bfs | Algo::Sssp if cfg.bottom_up != BottomUp::Never => {
                vec![cfg.bottom_up, BottomUp::Never]
            }
            _ => vec![cfg.bottom_up],
        };
        for (&root, bottom_up) in root_list
            .iter()
            .flat_map(|r| modes.iter().map(move |&m| (r, m)))
        {
            let params = Params {
                root,
                ..Default::default()
            };
            let cfg = StreamConfig {
                bottom_up,
                ..cfg.clone()
            };
            let mut e = StreamEngine::new(store, cfg).unwrap();
            let r = run(&mut e, algo, &params).unwrap();
            let ctx = format!("{what}, {} root {root}, {bottom_up:?}", algo.name());
            verify(store, algo, &params, &r.output).unwrap_or_else(|err| panic!("{ctx}: {err}"));
            match &r.output {
                Output::Bfs(a) => {
                    let want = reference::bfs(g, root);
                    let got: Vec<Option<u32>> = a
                        .iter()
                        .map(|&x| outcore_algos::bfs_entry(x).map(|t| t.0))
                        .collect();
                    assert_eq!(got, want, "{ctx}");
                }
                Output::Sssp(a) => {
                    let want = reference::sssp(g, root);
                    let got: Vec<Option<f32>> = a
                        .iter()
                        .map(|&x| outcore_algos::sssp_entry(x).map(|t| t.0))
                        .collect();
                    assert_eq!(got, want, "{ctx}");
                }
                Output::Labels(l) if algo == Algo::Scc => {
                    assert_eq!(&l[..], &reference::scc(g)[..], "{ctx}")
                }
                Output::Labels(l) => assert_eq!(&l[..], &ref_wcc[..], "{ctx}"),
                Output::Flags(f) if algo == Algo::Conductance => {
                    let side: Vec<u32> = (0..g.n)
                        .map(|v| outcore_algos::programs::conductance_side(v, params.seed))
                        .collect();
                    assert_eq!(&f[..], &side[..], "{ctx}");
                    let (cut, s, rest) = reference::conductance(g, &side);
                    assert!(cut > 0 && s > 0 && rest > 0, "{ctx}: a trivial cut");
                    let want = outcore_algos::programs::conductance_line(cut, s, rest);
                    assert_eq!(r.summary, want, "{ctx}");
                }
                Output::Flags(f) => {
                    if algo == Algo::Mis {
                        let got: Vec<bool> = f.iter().map(|&x| x == 1).collect();
                        assert_eq!(got, ref_mis, "{ctx}");
                    }
                }
                Output::Forest(f) => {
                    let (_, edges) = outcore_algos::mcst::forest_weight(f);
                    let mut got: Vec<f32> = f
                        .iter()
                        .filter_map(|&x| outcore_algos::mcst::forest_entry(x))
                        .map(|e| e.1)
                        .collect();
                    got.sort_by(f32::total_cmp);
                    assert_eq!(got, reference::mst_weights(g), "{ctx}");
                    assert_eq!(edges as usize, got.len(), "{ctx}");
                }
                Output::Values(x) => {
                    let want = match algo {
                        Algo::PageRank => ref_pr.clone(),
                        Algo::PageRankDelta => reference::pagerank(g, 0.85, 200),
                        Algo::Bp => {
                            let e: Vec<f64> = (0..g.n)
                                .map(|v| outcore_algos::bp::bp_prior(v, params.seed))
                                .collect();
                            let cap = outcore_algos::bp::BP_ITERATIONS;
                            reference::linbp(g, &e, params.coupling, params.tolerance, cap)
                        }
                        _ => ref_spmv.clone(),
                    };
                    // Delta PageRank stops within tolerance / (1 - d) of the fixed point.
                    let tol = if algo == Algo::PageRankDelta {
                        1e-7 / 0.15
                    } else {
                        1e-12
                    };
                    let l1: f64 = x.iter().zip(&want).map(|(a, b)| (a - b).abs()).sum();
                    let scale: f64 = want.iter().map(|b| b.abs()).sum::<f64>().max(1.0);
                    assert!(l1 <= tol * scale, "{ctx}: L1 difference {l1:e}");
                }
            }
        }
    }
}

#[test]
fn every_algorithm_agrees_with_the_reference_in_every_configuration() {
    let dir = tempfile::tempdir().unwrap();
    for c in cases() {
        for p in [1u32, 4, 16] {
            let (store, g) = build(dir.path(), &c, p);
            let base = StreamConfig {
                memory: 64 << 20,
                ..Default::default()
            };
            let configs = [
                (
                    "threads 1, mrt 5",
                    StreamConfig {
                        threads: 1,
                        ..base.clone()
                    },
                ),
                (
                    "threads 2, mrt 5",
                    StreamConfig {
                        threads: 2,
                        ..base.clone()
                    },
                ),
                (
                    "threads 2, mrt 1",
                    StreamConfig {
                        threads: 2,
                        mrt: 1,
                        ..base.clone()
                    },
                ),
                (
                    // More threads than half the ring's slots: sync programs
                    // split each block (Mode::Multi, atomics) instead of
                    // taking whole blocks (Mode::Columns).
                    "threads 4, mrt 1",
                    StreamConfig {
                        threads: 4,
                        mrt: 1,
                        ..base.clone()
                    },
                ),
                (
                    "threads 1, mrt 1, column-major",
                    StreamConfig {
                        threads: 1,
                        mrt: 1,
                        order: BlockOrder::ColumnMajor,
                        ..base.clone()
                    },
                ),
                (
                    "threads 2, mapped vertex arrays, O_DIRECT",
                    StreamConfig {
                        threads: 2,
                        force_mapped: true,
                        direct_io: true,
                        work_dir: Some(dir.path().to_path_buf()),
                        ..base.clone()
                    },
                ),
                (
                    "threads 2, mapped vertex arrays in bands of one column",
                    StreamConfig {
                        threads: 2,
                        force_mapped: true,
                        band_columns: 1,
                        work_dir: Some(dir.path().to_path_buf()),
                        ..base.clone()
                    },
                ),
                (
                    "threads 1, mapped vertex arrays in bands of three columns",
                    StreamConfig {
                        threads: 1,
                        force_mapped: true,
                        band_columns: 3,
                        work_dir: Some(dir.path().to_path_buf()),
                        ..base.clone()
                    },
                ),
            ];
            for (what, cfg) in &configs {
                check(&store, &g, cfg, &format!("{} P={p} {what}", c.name));
            }
        }
    }
}

#[test]
fn relaxation_grid_passes_whole_blocks_per_thread_agree_with_the_reference() {
    // Every iteration on the grid (no sparse or bottom-up steps), so bfs runs
    // its flat relaxation pass: whole blocks per thread (Mode::Columns, a
    // target lowered with a plain store) where the ring holds two slots per
    // thread, one block split among the threads (atomics) otherwise; a
    // diagonal block re-enters for the sources it lowers in its own rows.
    let dir = tempfile::tempdir().unwrap();
    for name in ["kron", "path"] {
        let c = &case(name);
        for p in [1u32, 4, 16] {
            let (store, g) = build(dir.path(), c, p);
            for (threads, mrt) in [(1, 5), (2, 5), (3, 5), (2, 1)] {
                let cfg = StreamConfig {
                    threads,
                    mrt,
                    bottom_up: BottomUp::Never,
                    ..Default::default()
                };
                for root in [0u32, g.n / 3, g.n - 1] {
                    let mut e = StreamEngine::new(&store, cfg.clone()).unwrap();
                    let whole = e.columns_pay();
                    let params = Params {
                        root,
                        ..Default::default()
                    };
                    let r = run(&mut e, Algo::Bfs, &params).unwrap();
                    let ctx = format!("{name} P = {p}, {threads} threads, mrt {mrt}, root {root}");
                    let Output::Bfs(a) = &r.output else {
                        panic!("{ctx}: not a bfs output")
                    };
                    let got: Vec<Option<(u32, u32)>> =
                        a.iter().map(|&x| outcore_algos::bfs_entry(x)).collect();
                    let want = reference::bfs(&g, root);
                    let depths: Vec<Option<u32>> = got.iter().map(|x| x.map(|t| t.0)).collect();
                    assert_eq!(depths, want, "{ctx}");
                    // Every parent the smallest in-neighbour one level up.
                    let mut best = vec![u32::MAX; g.n as usize];
                    for &(u, v, _) in &g.edges {
                        if let (Some(du), Some(dv)) = (want[u as usize], want[v as usize]) {
                            if du + 1 == dv {
                                best[v as usize] = best[v as usize].min(u);
                            }
                        }
                    }
                    for (v, x) in got.iter().enumerate() {
                        if let (Some((_, parent)), false) = (*x, v as u32 == root) {
                            assert_eq!(parent, best[v], "{ctx}: parent of {v}");
                        }
                    }
                    verify(&store, Algo::Bfs, &params, &r.output)
                        .unwrap_or_else(|err| panic!("{ctx}: {err}"));
                    let st = e.stats();
                    assert_eq!(st.sparse_iterations + st.bottom_up_iterations, 0, "{ctx}");
                    if threads > 1 && mrt > 1 {
                        assert!(whole, "{ctx}: the ring should hold two slots a thread");
                    }
                    if name == "path" && mrt > 1 && p == 1 && root == 0 {
                        assert!(st.passes > st.blocks_read, "{ctx}: no block re-entered");
                    }
                    // sssp: a run at a time over the weights, whole blocks per
                    // thread likewise.
                    let mut e = StreamEngine::new(&store, cfg.clone()).unwrap();
                    let r = run(&mut e, Algo::Sssp, &params).unwrap();
                    let Output::Sssp(a) = &r.output else {
                        panic!("{ctx}: not an sssp output")
                    };
                    let got: Vec<Option<f32>> = a
                        .iter()
                        .map(|&x| outcore_algos::sssp_entry(x).map(|t| t.0))
                        .collect();
                    assert_eq!(got, reference::sssp(&g, root), "{ctx}: sssp");
                    verify(&store, Algo::Sssp, &params, &r.output)
                        .unwrap_or_else(|err| panic!("{ctx}: sssp: {err}"));
                }
            }
        }
    }
}

#[test]
fn sssp_refuses_negative_weights_naming_the_edge() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("neg.txt");
    std::fs::write(&input, "0 1 1.5\n1 2 -2\n2 3 1\n").unwrap();
    let out = dir.path().join("neg");
    ingest(&[input], &out, &IngestOptions::default(), &Quiet).unwrap();
    let store = Store::open(&out).unwrap();
    // Met in a grid pass or in a sparse step (from the out-edge lists and
    // their weights: the second iteration's, from vertex 1).
    for bottom_up in [BottomUp::Auto, BottomUp::Never, BottomUp::Sparse] {
        for threads in [1, 2] {
            let cfg = StreamConfig {
                bottom_up,
                threads,
                ..Default::default()
            };
            let mut e = StreamEngine::new(&store, cfg).unwrap();
            let err = run(&mut e, Algo::Sssp, &Params::default())
                .err()
                .unwrap()
                .to_string();
            assert!(
                err.contains("non-negative") && err.contains("(1, 2)") && err.contains("-2"),
                "{bottom_up:?}, threads {threads}: {err}"
            );
            if bottom_up == BottomUp::Sparse {
                assert_eq!(e.stats().sparse_iterations, 2, "threads {threads}");
            }
        }
    }
}

#[test]
fn re_entry_cuts_iterations_on_a_long_path() {
    // A path stored in one block: MRT 1 needs one iteration per hop; MRT 5 fewer.
    let dir = tempfile::tempdir().unwrap();
    let c = &case("path");
    let (store, _) = build(dir.path(), c, 1);
    let iters = |mrt| {
        let cfg = StreamConfig {
            mrt,
            threads: 1,
            ..Default::default()
        };
        let mut e = StreamEngine::new(&store, cfg).unwrap();
        let r = run(&mut e, Algo::Bfs, &Params::default()).unwrap();
        (r.iterations, e.stats())
    };
    let (one, s1) = iters(1);
    let (five, s5) = iters(5);
    assert_eq!(one, 300, "one hop per iteration plus the final empty check");
    assert!(five < one, "mrt 5: {five} iterations, mrt 1: {one}");
    assert!(s5.bytes_read < s1.bytes_read);
    assert_eq!(s1.passes, s1.blocks_read, "mrt 1 is one pass per block");
}

#[test]
fn a_mapped_relaxation_array_runs_band_by_band_with_the_same_answers() {
    // bfs, sssp and wcc-lp with their array mapped, in bands of 1 and 3 of the
    // 16 columns: the bands are counted, an unbanded (in-memory) run agrees.
    // (wcc-lp on a directed store relaxes sources too and is not banded.)
    let dir = tempfile::tempdir().unwrap();
    let (kron, _) = build(dir.path(), &case("kron"), 16);
    let (und, _) = build(dir.path(), &case("kron-und"), 16);
    let params = Params {
        root: 1,
        ..Default::default()
    };
    for (store, algo) in [(&kron, Algo::Bfs), (&kron, Algo::Sssp), (&und, Algo::WccLp)] {
        let mut e = StreamEngine::new(store, StreamConfig::default()).unwrap();
        let want = run(&mut e, algo, &params).unwrap();
        assert_eq!(e.stats().bands, 0, "{algo:?} in memory is not banded");
        for w in [1u32, 3] {
            let cfg = StreamConfig {
                threads: 2,
                force_mapped: true,
                band_columns: w,
                work_dir: Some(dir.path().to_path_buf()),
                ..Default::default()
            };
            let mut e = StreamEngine::new(store, cfg).unwrap();
            let got = run(&mut e, algo, &params).unwrap();
            let s = e.stats();
            assert_eq!(s.band_columns, w, "{algo:?}");
            // More than one band an iteration, for the iterations that read.
            assert!(
                s.bands > got.iterations,
                "{algo:?} bands of {w}: {} bands in {} iterations",
                s.bands,
                got.iterations
            );
            let words = |o: &Output| -> Vec<u64> {
                match o {
                    Output::Bfs(a) | Output::Sssp(a) => a.to_vec(),
                    Output::Labels(a) => a.iter().map(|&x| x as u64).collect(),
                    _ => unreachable!("a relaxation program's output"),
                }
            };
            assert_eq!(
                words(&got.output),
                words(&want.output),
                "{algo:?} bands of {w}"
            );
        }
    }
}

#[test]
fn the_loader_delivers_every_block_in_order_and_the_hint_runs_ahead() {
    // Single mode applies edges in storage order, so with every source active one
    // iteration must apply exactly the grid's edges, blocks row-major; the
    // look-ahead hint must see each block's targets but its first STREAM_AHEAD.
    use outcore_engine::{Mode, STREAM_AHEAD};
    use std::sync::Mutex;
    let dir = tempfile::tempdir().unwrap();
    let c = &case("kron");
    let (store, _) = build(dir.path(), c, 4);
    let grid = store.grid().unwrap();
    let (mut want_edges, mut want_hints) = (Vec::new(), Vec::new());
    for r in 0..4 {
        for col in 0..4 {
            let b = grid.read_block(r, col, false).unwrap();
            want_edges.extend(b.edges().map(|(u, v, _)| (u, v)));
            want_hints.extend_from_slice(&b.dsts[b.dsts.len().min(STREAM_AHEAD)..]);
        }
    }
    assert!(
        want_hints.len() > 1000,
        "the case must be larger than the look-ahead"
    );
    let mut slots_seen = Vec::new();
    for memory in [1 << 20, 10 << 20, 64 << 20] {
        let cfg = StreamConfig {
            memory,
            threads: 1,
            direct_io: memory == 10 << 20,
            ..Default::default()
        };
        let mut e = StreamEngine::new(&store, cfg).unwrap();
        let (edges, hints) = (Mutex::new(Vec::new()), Mutex::new(Vec::new()));
        e.activate_all();
        e.exec_ahead(
            Mode::Single,
            |v| hints.lock().unwrap().push(v),
            |_, u, v, _| edges.lock().unwrap().push((u, v)),
        )
        .unwrap();
        let what = format!("memory {memory}, {} ring slots", e.stats().ring_slots);
        assert_eq!(edges.into_inner().unwrap(), want_edges, "{what}");
        assert_eq!(hints.into_inner().unwrap(), want_hints, "{what}");
        slots_seen.push(e.stats().ring_slots);
    }
    assert!(
        slots_seen.contains(&2) && slots_seen.contains(&4),
        "ring slots seen {slots_seen:?}"
    );
}

#[test]
fn runs_deliver_exactly_the_edges_and_hints_of_single_edges() {
    // exec_runs hands a source's run of a block at once: the same edges, in the
    // same order, with the same weights (none on an unweighted store) and the
    // same look-ahead hints as exec_ahead, in every mode (a store with reverse
    // edges is weighted: the sign marks them).
    use outcore_engine::Mode;
    use std::sync::Mutex;
    for name in ["kron", "kron-rev"] {
        let dir = tempfile::tempdir().unwrap();
        let c = &case(name);
        let (store, _) = build(dir.path(), c, 4);
        for (mode, weights) in [
            (Mode::Single, true),
            (Mode::Single, false),
            (Mode::Multi, true),
            (Mode::Columns, true),
        ] {
            let sorted = |m: &Mutex<Vec<(u32, u32, u32)>>| {
                let mut v = std::mem::take(&mut *m.lock().unwrap());
                if mode != Mode::Single {
                    v.sort_unstable();
                }
                v
            };
            let engine = || {
                let cfg = StreamConfig {
                    threads: 2,
                    ..Default::default()
                };
                let mut e = StreamEngine::new(&store, cfg).unwrap();
                e.with_weights(weights);
                e.activate_all();
                e
            };
            let (edges, hints) = (Mutex::new(Vec::new()), Mutex::new(Vec::new()));
            engine()
                .exec_ahead(
                    mode,
                    |v| hints.lock().unwrap().push((v, 0, 0)),
                    |_, u, v, w| edges.lock().unwrap().push((u, v, w.to_bits())),
                )
                .unwrap();
            let (want_edges, want_hints) = (sorted(&edges), sorted(&hints));
            assert_eq!(want_edges.len() as u64, store.edges(), "{name} {mode:?}");
            engine()
                .exec_runs(
                    mode,
                    |v| hints.lock().unwrap().push((v, 0, 0)),
                    |_, u, vs, ws| {
                        assert_eq!(ws.is_some(), store.weighted() && weights, "{name}: weights");
                        assert_eq!(ws.map_or(vs.len(), |w| w.len()), vs.len());
                        let mut g = edges.lock().unwrap();
                        for (i, &v) in vs.iter().enumerate() {
                            g.push((u, v, ws.map_or(1.0f32, |w| w[i]).to_bits()));
                        }
                    },
                )
                .unwrap();
            assert_eq!(
                sorted(&edges),
                want_edges,
                "{name} {mode:?} {weights}: edges"
            );
            assert_eq!(
                sorted(&hints),
                want_hints,
                "{name} {mode:?} {weights}: hints"
            );
        }
    }
}

#[test]
fn verification_catches_a_wrong_spanning_forest() {
    let dir = tempfile::tempdir().unwrap();
    let (store, _) = build(dir.path(), &case("kron-und"), 4);
    let mut e = StreamEngine::new(&store, StreamConfig::default()).unwrap();
    let p = Params::default();
    let r = run(&mut e, Algo::Mcst, &p).unwrap();
    verify(&store, Algo::Mcst, &p, &r.output).unwrap();
    let Output::Forest(f) = &r.output else {
        panic!("a forest")
    };
    let entry = |x: u64| outcore_algos::mcst::forest_entry(x);
    let v = (0..f.len()).find(|&v| entry(f[v]).is_some()).unwrap();
    let (parent, w) = entry(f[v]).unwrap();
    let with = |x: u64| {
        let mut g = f.to_vec();
        g[v] = x;
        Output::Forest(outcore_state::VertexArray::from_vec(g))
    };
    let pack = |p: u32, w: f32| ((w.to_bits() as u64) << 32) | p as u64;
    for (bad, says) in [
        // An edge of a weight the graph does not have between them.
        (
            with(pack(parent, w * 2.0 + 1000.0)),
            "is not an edge of the graph",
        ),
        // A tree edge dropped: two trees in one component.
        (with(u64::MAX), "does not span"),
        // A vertex its own parent.
        (with(pack(v as u32, w)), "is not another vertex"),
    ] {
        let e = verify(&store, Algo::Mcst, &p, &bad)
            .unwrap_err()
            .to_string();
        assert!(e.contains(says), "{e}");
    }
    // A heavier edge in place of a lighter one: some non-forest edge (x, y, w')
    // whose weight is above that of the forest path's heaviest edge; re-hang
    // one vertex on it where that keeps a forest (a leaf, re-hung on an edge to
    // another vertex of its tree).
    let n = f.len();
    let mut children = vec![0u32; n];
    for &x in f.iter() {
        if let Some((p, _)) = entry(x) {
            children[p as usize] += 1;
        }
    }
    let mut swapped = None;
    outcore_algos::verify::for_each_edge(&store, true, |a, b, wt| {
        if swapped.is_some() || a == b || children[a as usize] != 0 {
            return;
        }
        if let Some((pa, wa)) = entry(f[a as usize]) {
            if pa != b && wt > wa {
                swapped = Some((a, b, wt));
            }
        }
    })
    .unwrap();
    let (a, b, wt) = swapped.expect("a leaf with a heavier non-forest edge");
    let mut g = f.to_vec();
    g[a as usize] = pack(b, wt);
    let e = verify(
        &store,
        Algo::Mcst,
        &p,
        &Output::Forest(outcore_state::VertexArray::from_vec(g)),
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("not a minimum forest"), "{e}");
}
