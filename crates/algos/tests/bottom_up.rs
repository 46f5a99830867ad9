//! Direction-optimizing BFS on the streaming engine: bottom-up iterations over
//! the in-edges (`--in-edges` stores, or the out-edges of undirected ones) give
//! exactly the top-down answer — every depth, and every parent the smallest
//! in-neighbour one level up — for every direction policy, thread count, MRT,
//! partition count and budget; the automatic policy does run bottom-up on a
//! small-world graph; a store without in-edges takes sparse steps (from the
//! out-edge lists) for its small levels, but not in place of re-entry on a
//! graph with locality; a damaged in-edge or out-edge file is refused by name.

use outcore_algos::{bfs_entry, run, verify::verify, Algo, Output, Params};
use outcore_engine::{BottomUp, StreamConfig, StreamEngine, StreamStats};
use outcore_io::IoStats;
use outcore_store::ingest::Quiet;
use outcore_store::{ingest, IngestOptions, Store};
use outcore_testkit::gen::{generate, GenKind, GenOptions};
use outcore_testkit::reference::{self, MemGraph};
use std::path::Path;

fn build(
    dir: &Path,
    name: &str,
    kind: GenKind,
    undirected: bool,
    in_edges: bool,
    p: u32,
) -> (Store, MemGraph) {
    let input = dir.join(format!("{name}.bin32"));
    if !input.exists() {
        let opts = GenOptions {
            kind: kind.clone(),
            seed: 29,
            weighted: false,
            text: false,
        };
        generate(&opts, &input, IoStats::new(), &|_| {}).unwrap();
    }
    let n = kind.vertices() as u32;
    let mut g = MemGraph::from_bin(&std::fs::read(&input).unwrap(), n, false);
    if undirected {
        g = g.undirected();
    }
    let out = dir.join(format!("{name}-p{p}-{in_edges}"));
    let opts = IngestOptions {
        undirected,
        in_edges,
        partitions: Some(p),
        vertices: Some(n as u64),
        memory: 64 << 20,
        ..Default::default()
    };
    ingest(&[input], &out, &opts, &Quiet).unwrap();
    (Store::open(&out).unwrap(), g)
}

/// Per vertex: its depth and parent, when reached.
type Tree = Vec<Option<(u32, u32)>>;

/// Depth and the smallest in-neighbour one level up, per vertex.
fn expected(g: &MemGraph, root: u32) -> Tree {
    let depth = reference::bfs(g, root);
    let mut parent = vec![u32::MAX; g.n as usize];
    parent[root as usize] = root;
    for &(u, v, _) in &g.edges {
        if let (Some(du), Some(dv)) = (depth[u as usize], depth[v as usize]) {
            if dv == du + 1 {
                parent[v as usize] = parent[v as usize].min(u);
            }
        }
    }
    depth
        .iter()
        .zip(&parent)
        .map(|(d, &p)| d.map(|d| (d, p)))
        .collect()
}

/// Runs bfs from `root`; the result and the (bottom-up, all) iterations.
fn bfs(store: &Store, cfg: &StreamConfig, root: u32) -> (Tree, u64, u64) {
    let (got, bottom_up, _, iterations) = bfs_steps(store, cfg, root);
    (got, bottom_up, iterations)
}

/// [`bfs`] with the sparse iterations too: (result, bottom-up, sparse, all).
fn bfs_steps(store: &Store, cfg: &StreamConfig, root: u32) -> (Tree, u64, u64, u64) {
    let (got, s) = bfs_stats(store, cfg, root);
    (
        got,
        s.bottom_up_iterations,
        s.sparse_iterations,
        s.iterations,
    )
}

/// Runs bfs from `root`, verified; the result and the engine's counts.
fn bfs_stats(store: &Store, cfg: &StreamConfig, root: u32) -> (Tree, StreamStats) {
    let params = Params {
        root,
        ..Default::default()
    };
    let mut e = StreamEngine::new(store, cfg.clone()).unwrap();
    let r = run(&mut e, Algo::Bfs, &params).unwrap();
    verify(store, Algo::Bfs, &params, &r.output).unwrap();
    let Output::Bfs(a) = &r.output else {
        panic!("bfs gave another output")
    };
    (a.iter().map(|&x| bfs_entry(x)).collect(), e.stats().clone())
}

fn configs() -> Vec<(String, StreamConfig)> {
    let mut v = Vec::new();
    for bottom_up in [
        BottomUp::Never,
        BottomUp::Auto,
        BottomUp::Always,
        BottomUp::Sparse,
    ] {
        for (threads, mrt) in [(1, 5), (2, 5), (2, 1)] {
            v.push((
                format!("{bottom_up:?}, threads {threads}, mrt {mrt}"),
                StreamConfig {
                    memory: 64 << 20,
                    threads,
                    mrt,
                    bottom_up,
                    ..Default::default()
                },
            ));
        }
    }
    v
}

#[test]
fn bottom_up_bfs_gives_the_top_down_answer_everywhere() {
    let dir = tempfile::tempdir().unwrap();
    let graphs = [
        (
            "kron",
            GenKind::Kronecker {
                scale: 11,
                edge_factor: 8,
            },
            false,
        ),
        ("grid", GenKind::Grid { rows: 30, cols: 21 }, false),
        (
            "uniform-und",
            GenKind::Uniform {
                vertices: 900,
                edges: 1400,
            },
            true,
        ),
    ];
    for (name, kind, undirected) in graphs {
        // An undirected store pulls over its out-edges; a directed one needs
        // its in-edges, and without them takes sparse steps only.
        let in_edges: &[bool] = if undirected { &[false] } else { &[true, false] };
        for (p, &in_edges) in [1u32, 4]
            .into_iter()
            .flat_map(|p| in_edges.iter().map(move |i| (p, i)))
        {
            let (store, g) = build(dir.path(), name, kind.clone(), undirected, in_edges, p);
            let pulls = undirected || in_edges;
            for root in [0, g.n / 3, g.n - 1] {
                let want = expected(&g, root);
                for (what, cfg) in configs() {
                    let (got, pulled, sparse, iterations) = bfs_steps(&store, &cfg, root);
                    let ctx = format!("{name} P={p} in-edges {in_edges} root {root}, {what}");
                    assert_eq!(got, want, "{ctx}");
                    match cfg.bottom_up {
                        BottomUp::Never => assert_eq!((pulled, sparse), (0, 0), "{ctx}"),
                        BottomUp::Always if pulls => {
                            assert_eq!((pulled, sparse), (iterations, 0), "{ctx}")
                        }
                        BottomUp::Always => assert_eq!((pulled, sparse), (0, 0), "{ctx}"),
                        BottomUp::Sparse => assert_eq!((pulled, sparse), (0, iterations), "{ctx}"),
                        BottomUp::Auto => assert!(pulls || pulled == 0, "{ctx}"),
                    }
                }
            }
        }
    }
}

#[test]
fn the_automatic_policy_goes_bottom_up_on_a_small_world_graph_only_when_it_can() {
    let dir = tempfile::tempdir().unwrap();
    let kind = GenKind::Kronecker {
        scale: 13,
        edge_factor: 16,
    };
    let auto = StreamConfig {
        memory: 64 << 20,
        threads: 2,
        ..Default::default()
    };
    let (store, g) = build(dir.path(), "kron13", kind.clone(), false, true, 4);
    let root = (0..g.n)
        .max_by_key(|&v| g.edges.iter().filter(|e| e.0 == v).count())
        .unwrap();
    let want = expected(&g, root);
    let (got, pulled, sparse, iterations) = bfs_steps(&store, &auto, root);
    assert_eq!(got, want);
    assert!(
        pulled > 0 && pulled < iterations,
        "{pulled} bottom-up and {sparse} sparse of {iterations} iterations"
    );
    // Without in-edges a directed store cannot pull, but it takes sparse
    // steps, its dense level keeping the lists the later levels read from
    // memory, and reads fewer grid blocks than along the grid only (not
    // always fewer bytes on a graph this small: the degrees it loads are a
    // pass's worth).
    let (plain, _) = build(dir.path(), "kron13", kind, false, false, 4);
    let (got, auto_stats) = bfs_stats(&plain, &auto, root);
    assert_eq!(got, want);
    let (b, sp, it) = (
        auto_stats.bottom_up_iterations,
        auto_stats.sparse_iterations,
        auto_stats.iterations,
    );
    assert!(
        b == 0 && sp > 0 && sp <= it && auto_stats.csr_kept_edges > 0,
        "{b} bottom-up and {sp} sparse of {it} iterations, {} edges from kept lists",
        auto_stats.csr_kept_edges
    );
    let never = StreamConfig {
        bottom_up: BottomUp::Never,
        ..auto.clone()
    };
    let (got, never_stats) = bfs_stats(&plain, &never, root);
    assert_eq!(got, want);
    assert!(
        auto_stats.blocks_read < never_stats.blocks_read,
        "auto read {} blocks, the grid alone {}",
        auto_stats.blocks_read,
        never_stats.blocks_read
    );
    let always = StreamConfig {
        bottom_up: BottomUp::Always,
        ..auto.clone()
    };
    let (got, pulled, _) = bfs(&plain, &always, root);
    assert_eq!((got, pulled), (want.clone(), 0));
    // Nor when the budget cannot hold the degrees and the read buffers (two
    // threads: about 3 MiB of buffers) beside the depths: the smallest budget that
    // leaves 256 KiB for vertex state (64 KiB of depths) runs top-down only.
    let mut memory = 8 << 20;
    let tight = loop {
        let cfg = StreamConfig {
            memory,
            ..always.clone()
        };
        if StreamEngine::new(&store, cfg.clone())
            .unwrap()
            .budget()
            .remaining()
            >= 256 << 10
        {
            break cfg;
        }
        memory += 64 << 10;
    };
    let (got, pulled, _) = bfs(&store, &tight, root);
    assert_eq!((got, pulled), (want.clone(), 0));
    let roomy = StreamConfig {
        memory: tight.memory + (4 << 20),
        ..tight
    };
    let (got, pulled, iterations) = bfs(&store, &roomy, root);
    assert_eq!((got, pulled), (want, iterations));
}

#[test]
fn a_damaged_in_edge_file_is_refused_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let kind = GenKind::Kronecker {
        scale: 10,
        edge_factor: 8,
    };
    // Bottom-up steps read every in-list at once; sparse ones the root's
    // out-list first: the smallest vertex with out-edges, whose list is the
    // first of the file.
    let root = |g: &MemGraph| g.edges.iter().map(|e| e.0).min().unwrap();
    for (file, mode, in_edges) in [
        ("csr.in.targets", BottomUp::Always, true),
        ("csr.out.targets", BottomUp::Sparse, true),
        ("csr.out.targets", BottomUp::Sparse, false),
        ("csr.out.targets", BottomUp::Auto, false),
        // The degrees are mapped in place and checked whole when a run
        // opens the lists.
        ("degrees.in", BottomUp::Always, true),
        ("degrees.out", BottomUp::Sparse, false),
    ] {
        let (store, g) = build(dir.path(), "kron10", kind.clone(), false, in_edges, 2);
        let path = store.dir().join(file);
        let mut bytes = std::fs::read(&path).unwrap();
        let at = outcore_store::format::HEADER_LEN as usize;
        bytes[at] ^= 0x5a;
        std::fs::write(&path, &bytes).unwrap();
        let store = Store::open(store.dir()).unwrap();
        let cfg = StreamConfig {
            memory: 64 << 20,
            bottom_up: mode,
            ..Default::default()
        };
        let mut e = StreamEngine::new(&store, cfg).unwrap();
        let params = Params {
            root: root(&g),
            ..Default::default()
        };
        let Err(err) = run(&mut e, Algo::Bfs, &params) else {
            panic!("a damaged {file} went unnoticed")
        };
        let err = err.to_string();
        assert!(err.contains(file) && err.contains("checksum"), "{err}");
        // Top-down along the grid never reads it.
        let cfg = StreamConfig {
            memory: 64 << 20,
            bottom_up: BottomUp::Never,
            ..Default::default()
        };
        let (got, _, _) = bfs(&store, &cfg, root(&g));
        assert_eq!(got, expected(&g, root(&g)));
        std::fs::remove_dir_all(store.dir()).unwrap();
    }
}

#[test]
fn steps_over_many_chunks_give_the_top_down_answer() {
    // 2^17 vertices: 32 chunks of 4096, two tasks of 16, so a task's lists
    // are picked and hinted chunks ahead of the one read, across its end;
    // bottom-up and sparse steps only, and the automatic policy, on a store
    // with in-edges and one without (sparse steps alone), 1 and 2 threads.
    let dir = tempfile::tempdir().unwrap();
    let kind = GenKind::Kronecker {
        scale: 17,
        edge_factor: 4,
    };
    for in_edges in [true, false] {
        let (store, g) = build(dir.path(), "kron17", kind.clone(), false, in_edges, 4);
        for root in [0, g.n / 2 + 1] {
            let want = expected(&g, root);
            for bottom_up in [BottomUp::Always, BottomUp::Sparse, BottomUp::Auto] {
                for threads in [1, 2] {
                    let cfg = StreamConfig {
                        memory: 64 << 20,
                        threads,
                        bottom_up,
                        ..Default::default()
                    };
                    let (got, s) = bfs_stats(&store, &cfg, root);
                    let ctx =
                        format!("in-edges {in_edges} root {root} {bottom_up:?} threads {threads}");
                    assert_eq!(got, want, "{ctx}");
                    let csr = s.bottom_up_iterations + s.sparse_iterations;
                    match bottom_up {
                        BottomUp::Always if in_edges => assert_eq!(csr, s.iterations, "{ctx}"),
                        BottomUp::Sparse => assert_eq!(s.sparse_iterations, s.iterations, "{ctx}"),
                        _ => {}
                    }
                }
            }
        }
    }
}

#[test]
fn a_small_world_frontier_keeps_to_sparse_steps() {
    // A uniform random graph of out-degree 8 without in-edges: the frontier
    // grows about eightfold a level, so sparse steps go on past the two in a
    // row after which a road network's bfs tries the grid.
    let dir = tempfile::tempdir().unwrap();
    let kind = GenKind::Uniform {
        vertices: 1 << 17,
        edges: 1 << 20,
    };
    let (store, g) = build(dir.path(), "uniform17", kind, false, false, 8);
    // Read the store once, so the page cache holds its lists whatever ran
    // before: the choice then prices a sparse step at its bytes examined.
    for f in std::fs::read_dir(store.dir()).unwrap() {
        std::fs::read(f.unwrap().path()).unwrap();
    }
    let want = expected(&g, 0);
    let auto = StreamConfig {
        memory: 64 << 20,
        threads: 2,
        ..Default::default()
    };
    let (got, s) = bfs_stats(&store, &auto, 0);
    assert_eq!(got, want);
    // Two sparse steps in a row and then a grid pass, as on a road network,
    // would make two of these ten levels grid passes.
    assert_eq!(
        s.sparse_iterations, s.iterations,
        "{} sparse of {} iterations",
        s.sparse_iterations, s.iterations
    );
    // The first level whose sources hold a quarter of the edges reads its
    // chunks whole and keeps the lists of the vertices not yet reached: the
    // deeper levels' lists come from memory (all of them, but for chunks
    // that level did not read at least half of).
    let depth = reference::bfs(&g, 0);
    let mut out = vec![0u64; g.n as usize];
    for &(u, _, _) in &g.edges {
        out[u as usize] += 1;
    }
    let deepest = depth.iter().flatten().max().copied().unwrap_or(0);
    let at = |d: u32| -> u64 {
        (0..g.n as usize)
            .filter(|&v| depth[v] == Some(d))
            .map(|v| out[v])
            .sum()
    };
    let dense = (0..=deepest)
        .find(|&d| 4 * at(d) >= g.edges.len() as u64)
        .expect("a level with a quarter of the edges");
    let deeper: u64 = (dense + 1..=deepest).map(at).sum();
    assert!(deeper > 0);
    assert!(
        s.csr_kept_edges <= deeper && 10 * s.csr_kept_edges >= 9 * deeper,
        "{} of the {deeper} edges below level {dense} from kept lists",
        s.csr_kept_edges
    );
}

#[test]
fn sparse_steps_do_not_replace_re_entry_on_a_graph_with_locality() {
    // A grid graph (a road network in miniature) ingested without in-edges:
    // a sparse step crosses one level, a grid pass several by re-entry. After
    // at most two sparse steps from the root, a grid pass shows re-entry
    // running ahead, and the grid it is from then on.
    let dir = tempfile::tempdir().unwrap();
    let kind = GenKind::Grid { rows: 80, cols: 50 };
    let auto = StreamConfig {
        memory: 64 << 20,
        threads: 2,
        ..Default::default()
    };
    for p in [1u32, 2] {
        let (store, g) = build(dir.path(), "grid", kind.clone(), false, false, p);
        let root = 0;
        let want = expected(&g, root);
        let depth = want.iter().flatten().map(|x| x.0).max().unwrap() as u64;
        let (got, s) = bfs_stats(&store, &auto, root);
        assert_eq!(got, want, "P={p}");
        assert!(
            s.sparse_iterations <= 2 && s.iterations < depth / 2,
            "P={p}: {} sparse of {} iterations for {depth} levels",
            s.sparse_iterations,
            s.iterations
        );
    }
}
