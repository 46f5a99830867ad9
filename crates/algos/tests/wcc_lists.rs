//! wcc from the CSR lists (Afforest: two out-edges of every vertex sampled,
//! then the out- and in-lists of every vertex outside the largest set):
//! the labels are the reference's — every vertex labelled with its
//! component's smallest id — and the grid pass's, on a small-world graph
//! (one giant set), a graph of many middling components, and a grid with
//! locality; directed stores ingested with `--in-edges` and undirected ones;
//! one and two threads and several partition counts. `--bottom-up never`
//! and a store without in-lists stream the grid; a damaged list is refused
//! by name.

use outcore_algos::{run, Algo, Output, Params};
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
            seed: 11,
            weighted: false,
            text: false,
        };
        generate(&opts, &input, IoStats::new(), &|_| {}).unwrap();
    }
    let n = kind.vertices() as u32;
    let g = MemGraph::from_bin(&std::fs::read(&input).unwrap(), n, false);
    let out = dir.join(format!("{name}-p{p}-{undirected}-{in_edges}"));
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

fn wcc(store: &Store, bottom_up: BottomUp, threads: usize) -> (Vec<u32>, StreamStats, String) {
    let cfg = StreamConfig {
        memory: 64 << 20,
        threads,
        bottom_up,
        ..Default::default()
    };
    let mut e = StreamEngine::new(store, cfg).unwrap();
    let before = e.budget().remaining();
    let r = run(&mut e, Algo::Wcc, &Params::default()).unwrap();
    let Output::Labels(a) = &r.output else {
        panic!("wcc gave another output")
    };
    // Everything but the labels went back to the budget.
    assert_eq!(
        e.budget().remaining() + 4 * store.vertices(),
        before,
        "the budget after wcc"
    );
    (a.to_vec(), e.stats(), r.summary)
}

fn check(got: &[u32], want: &[u32], ctx: &str) {
    assert_eq!(got.len(), want.len(), "{ctx}");
    if let Some(v) = (0..got.len()).find(|&v| got[v] != want[v]) {
        panic!("{ctx}: vertex {v} labelled {} against {}", got[v], want[v]);
    }
}

#[test]
fn wcc_from_the_lists_gives_the_references_labels() {
    let dir = tempfile::tempdir().unwrap();
    let graphs = [
        (
            "kron14",
            GenKind::Kronecker {
                scale: 14,
                edge_factor: 8,
            },
        ),
        // Sparse: many components, none holding most vertices.
        (
            "sparse",
            GenKind::Kronecker {
                scale: 13,
                edge_factor: 1,
            },
        ),
        ("grid", GenKind::Grid { rows: 60, cols: 50 }),
    ];
    for (name, kind) in graphs {
        for undirected in [false, true] {
            for p in [1u32, 5] {
                let (store, g) = build(dir.path(), name, kind.clone(), undirected, !undirected, p);
                let want = reference::wcc(&g);
                let components = (0..want.len()).filter(|&v| want[v] == v as u32).count();
                if name == "sparse" {
                    assert!(components > 100, "{name}: {components} components");
                }
                for threads in [1, 2] {
                    let ctx = format!("{name}, undirected {undirected}, P={p}, {threads} threads");
                    let (grid, s, _) = wcc(&store, BottomUp::Never, threads);
                    assert_eq!(s.csr_edges, 0, "{ctx}: never reads the lists");
                    check(&grid, &want, &format!("{ctx}: the grid pass"));
                    let (got, s, summary) = wcc(&store, BottomUp::Always, threads);
                    check(&got, &want, &format!("{ctx}: from the lists"));
                    assert!(summary.contains("from the CSR lists"), "{ctx}: {summary}");
                    assert_eq!(s.blocks_read, 0, "{ctx}: no grid pass");
                    // The sample reads every out-list whole.
                    assert!(
                        s.csr_edges >= store.edges(),
                        "{ctx}: {} list edges read",
                        s.csr_edges
                    );
                    assert!(
                        summary.starts_with(&format!("{components} components")),
                        "{ctx}: {summary}"
                    );
                }
            }
        }
    }
}

#[test]
fn a_store_without_in_lists_streams_the_grid() {
    let dir = tempfile::tempdir().unwrap();
    let kind = GenKind::Kronecker {
        scale: 12,
        edge_factor: 8,
    };
    let (store, g) = build(dir.path(), "kron12", kind, false, false, 4);
    let (got, s, summary) = wcc(&store, BottomUp::Always, 2);
    check(&got, &reference::wcc(&g), "no in-lists");
    assert_eq!(s.csr_edges, 0);
    assert!(s.blocks_read > 0);
    assert!(!summary.contains("CSR"), "{summary}");
}

#[test]
fn a_damaged_out_list_is_refused_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let kind = GenKind::Kronecker {
        scale: 12,
        edge_factor: 8,
    };
    let (store, _) = build(dir.path(), "kron12", kind, false, true, 4);
    // The sample reads every out-list: the damage is met whatever the
    // giant set turns out to be.
    let path = store.dir().join("csr.out.targets");
    let mut bytes = std::fs::read(&path).unwrap();
    let at = outcore_store::format::HEADER_LEN as usize + 4;
    bytes[at] ^= 0x5a;
    std::fs::write(&path, &bytes).unwrap();
    let store = Store::open(store.dir()).unwrap();
    let cfg = StreamConfig {
        memory: 64 << 20,
        threads: 2,
        bottom_up: BottomUp::Always,
        ..Default::default()
    };
    let mut e = StreamEngine::new(&store, cfg).unwrap();
    let Err(err) = run(&mut e, Algo::Wcc, &Params::default()) else {
        panic!("a damaged csr.out.targets went unnoticed")
    };
    let msg = err.to_string();
    assert!(msg.contains("csr.out.targets"), "{msg}");
}
