//! A pass over the grid held in memory reads nothing, so it checks for a
//! stop itself (`outcore_io::cancel`, the Python package's Ctrl-C): a long
//! PageRank whose passes come from memory stops with the error a cancelled
//! read gives. In a test binary of its own: the stop flag is process-wide.

use outcore_algos::{run, Algo, Params};
use outcore_engine::{StreamConfig, StreamEngine};
use outcore_io::IoStats;
use outcore_store::ingest::Quiet;
use outcore_store::{ingest, IngestOptions, Store};
use outcore_testkit::gen::{generate, GenKind, GenOptions};
use std::time::{Duration, Instant};

#[test]
fn a_stop_ends_passes_over_held_blocks() {
    let dir = tempfile::tempdir().unwrap();
    let kind = GenKind::Kronecker {
        scale: 12,
        edge_factor: 16,
    };
    let input = dir.path().join("g.bin32");
    let opts = GenOptions {
        kind: kind.clone(),
        seed: 5,
        weighted: false,
        text: false,
    };
    generate(&opts, &input, IoStats::new(), &|_| {}).unwrap();
    let out = dir.path().join("store");
    let opts = IngestOptions {
        partitions: Some(4),
        vertices: Some(kind.vertices()),
        memory: 64 << 20,
        ..Default::default()
    };
    ingest(&[input], &out, &opts, &Quiet).unwrap();
    let store = Store::open(&out).unwrap();
    let cfg = StreamConfig {
        memory: 256 << 20,
        threads: 2,
        ..Default::default()
    };
    let mut e = StreamEngine::new(&store, cfg).unwrap();
    let params = Params {
        iterations: Some(u64::MAX / 2),
        ..Default::default()
    };
    let stopper = std::thread::spawn(|| {
        std::thread::sleep(Duration::from_millis(300));
        outcore_io::cancel::request();
    });
    let start = Instant::now();
    let r = run(&mut e, Algo::PageRank, &params);
    stopper.join().unwrap();
    outcore_io::cancel::clear();
    let Err(err) = r else {
        panic!("pagerank ran to the end")
    };
    let msg = err.to_string();
    assert!(msg.contains("cancelled by the caller"), "{msg}");
    assert!(msg.contains("grid.data"), "{msg}");
    assert!(start.elapsed() < Duration::from_secs(30));
    assert!(
        e.stats().blocks_held > 0,
        "the passes never came from memory"
    );
}
