//! The grid held decoded in memory between passes (`stream/held.rs`): every
//! edge program gives the same answer (bit for bit, or for sums added in an
//! order that moves with the threads' timing within 1e-12), whether its passes take
//! the blocks from memory or read every one of them — synchronous programs in
//! `Mode::Columns` and split blocks, relaxation programs with and without
//! weights, both block orders, one and two threads — while the held runs
//! read the grid at most twice; a budget without room for the grid in half
//! of what it has left holds nothing; and a program that holds gives the
//! budget back when it ends.

use outcore_algos::{run, Algo, Output, Params};
use outcore_engine::{BlockOrder, BottomUp, StreamConfig, StreamEngine, StreamStats};
use outcore_io::IoStats;
use outcore_store::ingest::Quiet;
use outcore_store::{ingest, IngestOptions, Store};
use outcore_testkit::gen::{generate, GenKind, GenOptions};
use std::path::Path;

fn build(dir: &Path) -> Store {
    let kind = GenKind::Kronecker {
        scale: 13,
        edge_factor: 16,
    };
    let input = dir.join("g.bin32w");
    let opts = GenOptions {
        kind: kind.clone(),
        seed: 3,
        weighted: true,
        text: false,
    };
    generate(&opts, &input, IoStats::new(), &|_| {}).unwrap();
    let out = dir.join("store");
    let opts = IngestOptions {
        partitions: Some(6),
        vertices: Some(kind.vertices()),
        memory: 64 << 20,
        ..Default::default()
    };
    ingest(&[input], &out, &opts, &Quiet).unwrap();
    Store::open(&out).unwrap()
}

/// The answer: words (distances by their bits), or values.
#[derive(PartialEq)]
enum Answer {
    Words(Vec<u64>),
    Values(Vec<f64>),
}

fn answer(o: &Output) -> Answer {
    match o {
        Output::Bfs(a) | Output::Sssp(a) | Output::Forest(a) => Answer::Words(a.to_vec()),
        Output::Labels(a) | Output::Flags(a) => {
            Answer::Words(a.iter().map(|&x| x as u64).collect())
        }
        Output::Values(a) => Answer::Values(a.to_vec()),
    }
}

/// Words the same, values within 1e-12 relative: a synchronous program's
/// sums are added in an order that moves with the threads' timing (atomics,
/// or a column's blocks taken by two threads), held or not.
fn same(got: &Answer, want: &Answer, ctx: &str) {
    match (got, want) {
        (Answer::Words(g), Answer::Words(w)) => {
            assert_eq!(g.len(), w.len(), "{ctx}");
            if let Some(v) = (0..g.len()).find(|&v| g[v] != w[v]) {
                panic!("{ctx}: vertex {v}: {:#x} against {:#x}", g[v], w[v]);
            }
        }
        (Answer::Values(g), Answer::Values(w)) => {
            assert_eq!(g.len(), w.len(), "{ctx}");
            for v in 0..g.len() {
                let d = (g[v] - w[v]).abs();
                assert!(
                    d <= 1e-12 * w[v].abs().max(1e-300),
                    "{ctx}: vertex {v}: {} against {}",
                    g[v],
                    w[v]
                );
            }
        }
        _ => panic!("{ctx}: different kinds of answer"),
    }
}

/// The answer, the engine's counts, and the budget left before and after.
fn go(store: &Store, algo: Algo, cfg: StreamConfig) -> (Answer, StreamStats, u64, u64) {
    // bfs and sssp to their fixed point; six sweeps of the others.
    let sweeps = matches!(algo, Algo::PageRank | Algo::Spmv);
    let params = Params {
        root: 1,
        iterations: sweeps.then_some(6),
        ..Default::default()
    };
    let mut e = StreamEngine::new(store, cfg).unwrap();
    let before = e.budget().remaining();
    let r = run(&mut e, algo, &params).unwrap();
    let w = answer(&r.output);
    drop(r);
    let after = e.budget().remaining();
    (w, e.stats(), before, after)
}

#[test]
fn held_passes_give_the_answer_of_read_ones() {
    let dir = tempfile::tempdir().unwrap();
    let store = build(dir.path());
    let grid_bytes = store.dir().join("grid.data").metadata().unwrap().len();
    for algo in [Algo::PageRank, Algo::Spmv, Algo::Sssp, Algo::Bfs] {
        for order in [BlockOrder::RowMajor, BlockOrder::ColumnMajor] {
            for threads in [1, 2] {
                let ctx = format!("{algo:?}, {order:?}, {threads} threads");
                let cfg = StreamConfig {
                    memory: 256 << 20,
                    threads,
                    order,
                    // Every iteration a grid pass (bfs and sssp would take
                    // small frontiers from the out-edge lists).
                    bottom_up: BottomUp::Never,
                    ..Default::default()
                };
                let read = StreamConfig {
                    hold_grid: false,
                    ..cfg.clone()
                };
                let (want, rs, _, read_after) = go(&store, algo, read);
                let (got, hs, _, after) = go(&store, algo, cfg);
                same(&got, &want, &format!("{ctx}: the held passes' answer"));
                assert_eq!(rs.blocks_held, 0, "{ctx}");
                assert!(rs.iterations >= 3, "{ctx}: {} iterations", rs.iterations);
                // The same work, where it does not move with the threads'
                // timing (relaxation's re-entry passes do).
                if matches!(algo, Algo::PageRank | Algo::Spmv) || threads == 1 {
                    assert_eq!(hs.iterations, rs.iterations, "{ctx}");
                    assert_eq!(hs.edges_processed, rs.edges_processed, "{ctx}");
                    assert_eq!(hs.blocks_read, rs.blocks_read, "{ctx}");
                }
                // Every pass from the third on takes its blocks from memory
                // (bfs's and sssp's later passes skip rows, so read ones
                // may fill in blocks the second did not need).
                assert!(hs.blocks_held > 0, "{ctx}: nothing held");
                assert!(
                    hs.bytes_read < rs.bytes_read,
                    "{ctx}: held {} bytes read, read {}",
                    hs.bytes_read,
                    rs.bytes_read
                );
                if matches!(algo, Algo::PageRank | Algo::Spmv) {
                    // Two passes read (the first, and the second that keeps
                    // the blocks), whatever the weights.
                    assert!(
                        hs.bytes_read <= 2 * grid_bytes + (1 << 20),
                        "{ctx}: {} bytes read for a {grid_bytes}-byte grid",
                        hs.bytes_read
                    );
                    let passes = hs.iterations;
                    let blocks = hs.blocks_read / passes;
                    assert_eq!(hs.blocks_held, blocks * (passes - 2), "{ctx}");
                }
                // The program gave back what it held: the budget is left as
                // a run that held nothing left it.
                assert_eq!(after, read_after, "{ctx}: the budget after the run");
            }
        }
    }
}

#[test]
fn a_budget_without_room_holds_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let store = build(dir.path());
    // Kronecker 13 x 16: 131K edges, about 0.6 MiB decoded; the budget's
    // share left after the engine's fixed part and the vertex state is
    // smaller than twice that.
    let roomy = StreamConfig {
        memory: 256 << 20,
        threads: 2,
        ..Default::default()
    };
    let (want, s, ..) = go(&store, Algo::PageRank, roomy.clone());
    assert!(s.blocks_held > 0);
    let e = StreamEngine::new(&store, roomy).unwrap();
    let fixed = (256u64 << 20) - e.budget().remaining();
    let tight = StreamConfig {
        memory: fixed + (1 << 20),
        threads: 2,
        ..Default::default()
    };
    let (got, s, ..) = go(&store, Algo::PageRank, tight);
    assert_eq!(s.blocks_held, 0, "a budget with no room held blocks");
    same(&got, &want, "pagerank on a tight budget");
}
