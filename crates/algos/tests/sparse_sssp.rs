//! Sparse steps for sssp on the streaming engine: an iteration that pushes
//! from the active vertices along their out-edge lists and weights
//! (`csr.out.targets`, `csr.out.weights`) instead of a grid pass gives the
//! grid's answer bit for bit — every distance the reference's, every parent
//! the same — whether every iteration is sparse, none is, or the automatic
//! policy mixes them, for 1 and 2 threads, on a small-world graph spread over
//! many chunks and on one with locality; a damaged weight file is refused by
//! name (a negative weight met in a sparse step: `agree.rs`).

use outcore_algos::{run, sssp_entry, verify::verify, Algo, Output, Params};
use outcore_engine::{BottomUp, StreamConfig, StreamEngine, StreamStats};
use outcore_io::IoStats;
use outcore_store::ingest::Quiet;
use outcore_store::{ingest, IngestOptions, Store};
use outcore_testkit::gen::{generate, GenKind, GenOptions};
use outcore_testkit::reference::{self, MemGraph};
use std::path::Path;

fn build(dir: &Path, name: &str, kind: GenKind) -> (Store, MemGraph) {
    let input = dir.join(format!("{name}.bin32w"));
    let opts = GenOptions {
        kind: kind.clone(),
        seed: 41,
        weighted: true,
        text: false,
    };
    generate(&opts, &input, IoStats::new(), &|_| {}).unwrap();
    let n = kind.vertices() as u32;
    let g = MemGraph::from_bin(&std::fs::read(&input).unwrap(), n, true);
    let out = dir.join(name);
    let opts = IngestOptions {
        partitions: Some(4),
        vertices: Some(n as u64),
        memory: 64 << 20,
        ..Default::default()
    };
    ingest(&[input], &out, &opts, &Quiet).unwrap();
    (Store::open(&out).unwrap(), g)
}

/// Runs sssp from `root`, verified: the words (distance bits, parent) and
/// the engine's counts.
fn sssp(store: &Store, cfg: &StreamConfig, root: u32) -> (Vec<u64>, StreamStats) {
    let params = Params {
        root,
        ..Default::default()
    };
    let mut e = StreamEngine::new(store, cfg.clone()).unwrap();
    let r = run(&mut e, Algo::Sssp, &params).unwrap();
    verify(store, Algo::Sssp, &params, &r.output).unwrap();
    let Output::Sssp(a) = &r.output else {
        panic!("sssp gave another output")
    };
    (a.to_vec(), e.stats().clone())
}

fn config(bottom_up: BottomUp, threads: usize) -> StreamConfig {
    StreamConfig {
        memory: 64 << 20,
        threads,
        bottom_up,
        ..Default::default()
    }
}

#[test]
fn sparse_sssp_steps_give_the_grid_answer_everywhere() {
    let dir = tempfile::tempdir().unwrap();
    // Kronecker 17: 32 chunks of 4096 vertices, two tasks of 16, so lists
    // are picked and hinted ahead across a task's end; the grid has locality
    // (a grid pass's re-entry crosses many levels).
    let graphs = [
        (
            "kron17",
            GenKind::Kronecker {
                scale: 17,
                edge_factor: 8,
            },
        ),
        ("grid", GenKind::Grid { rows: 90, cols: 70 }),
    ];
    for (name, kind) in graphs {
        let (store, g) = build(dir.path(), name, kind);
        let root = g.edges.iter().map(|e| e.0).min().unwrap();
        let want = reference::sssp(&g, root);
        let (base, s) = sssp(&store, &config(BottomUp::Never, 1), root);
        assert_eq!(s.sparse_iterations, 0, "{name}");
        let dist: Vec<Option<f32>> = base.iter().map(|&x| sssp_entry(x).map(|t| t.0)).collect();
        assert_eq!(dist, want, "{name}: the grid against the reference");
        assert!(
            want.iter().filter(|d| d.is_some()).count() > g.n as usize / 4,
            "{name}: the root reaches too little to test anything"
        );
        for mode in [BottomUp::Sparse, BottomUp::Auto] {
            for threads in [1, 2] {
                let ctx = format!("{name}, {mode:?}, threads {threads}");
                let (got, s) = sssp(&store, &config(mode, threads), root);
                assert_eq!(got, base, "{ctx}: distances and parents");
                assert_eq!(s.bottom_up_iterations, 0, "{ctx}");
                match mode {
                    BottomUp::Sparse => {
                        assert_eq!(s.sparse_iterations, s.iterations, "{ctx}");
                        assert!(s.csr_edges >= g.edges.len() as u64 / 2, "{ctx}");
                    }
                    // The root alone is active first: a sparse step reads one
                    // list where a grid pass reads its row (a quarter of
                    // Kronecker 17's grid; the small grid's row is cheaper
                    // than one read request).
                    _ if name == "kron17" => assert!(s.sparse_iterations >= 1, "{ctx}"),
                    _ => {}
                }
            }
        }
    }
}

#[test]
fn a_damaged_weight_file_is_refused_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let kind = GenKind::Kronecker {
        scale: 10,
        edge_factor: 8,
    };
    let (store, g) = build(dir.path(), "kron10", kind);
    // The smallest vertex with out-edges: its list is the file's first.
    let root = g.edges.iter().map(|e| e.0).min().unwrap();
    let path = store.dir().join("csr.out.weights");
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[outcore_store::format::HEADER_LEN as usize] ^= 0x5a;
    std::fs::write(&path, &bytes).unwrap();
    let store = Store::open(store.dir()).unwrap();
    // Read in place (the lists are in the page cache) and copied out
    // (`hold_grid` off, `--read-every-pass`).
    for (mode, hold_grid) in [
        (BottomUp::Sparse, true),
        (BottomUp::Auto, true),
        (BottomUp::Sparse, false),
    ] {
        let cfg = StreamConfig {
            hold_grid,
            ..config(mode, 2)
        };
        let mut e = StreamEngine::new(&store, cfg).unwrap();
        let params = Params {
            root,
            ..Default::default()
        };
        let Err(err) = run(&mut e, Algo::Sssp, &params) else {
            panic!("{mode:?}: a damaged csr.out.weights went unnoticed")
        };
        let err = err.to_string();
        assert!(
            err.contains("csr.out.weights") && err.contains("checksum"),
            "{mode:?}: {err}"
        );
    }
    // Grid passes never read it.
    let (got, _) = sssp(&store, &config(BottomUp::Never, 2), root);
    let dist: Vec<Option<f32>> = got.iter().map(|&x| sssp_entry(x).map(|t| t.0)).collect();
    assert_eq!(dist, reference::sssp(&g, root));
}
