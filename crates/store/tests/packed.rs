//! The packed grid blocks (store format 2) refuse forged contents that their CRCs
//! cannot catch: a local id outside the block's interval and an index entry whose
//! bit widths disagree with the store's intervals. The forgeries below rewrite the
//! block, the entry and every CRC that covers them (block, file header, manifest),
//! as a buggy writer would.

use outcore_store::ingest::Quiet;
use outcore_store::{ingest, IngestOptions, Store};
use std::path::Path;

mod common;
use common::{remanifest, reseal};

const HEADER: usize = 4096;

fn store(dir: &Path) -> std::path::PathBuf {
    // 10 vertices, P = 2: intervals [0, 5) and [5, 10), local ids in 3 bits.
    let input = dir.join("g.txt");
    std::fs::write(&input, "0 1\n0 6\n5 9\n9 0\n").unwrap();
    let out = dir.join("s");
    let opts = IngestOptions {
        partitions: Some(2),
        vertices: Some(10),
        ..Default::default()
    };
    ingest(&[input], &out, &opts, &Quiet).unwrap();
    out
}

#[test]
fn a_local_id_outside_the_interval_is_refused() {
    let d = tempfile::tempdir().unwrap();
    let out = store(d.path());
    let s = Store::open(&out).unwrap();
    let e = *s.grid().unwrap().entry(0, 0);
    assert_eq!((e.edges, e.sources, e.shape().id_bits), (1, 1, 3));
    assert_eq!(
        s.grid().unwrap().read_block(0, 0, false).unwrap().dsts,
        vec![1]
    );
    drop(s);
    // Block (0, 0) is one word each of sources, offsets and targets; its target
    // becomes local id 6, which fits 3 bits but not the interval of 5.
    let data = out.join("grid.data");
    let mut bytes = std::fs::read(&data).unwrap();
    let at = HEADER + e.offset as usize + 8;
    bytes[at..at + 4].copy_from_slice(&6u32.to_le_bytes());
    let topo = crc32fast::hash(&bytes[HEADER + e.offset as usize..at + 4]);
    std::fs::write(&data, &bytes).unwrap();
    remanifest(&out, reseal(&data));
    let index = out.join("grid.index");
    let mut ib = std::fs::read(&index).unwrap();
    ib[HEADER + 20..HEADER + 24].copy_from_slice(&topo.to_le_bytes());
    std::fs::write(&index, &ib).unwrap();
    remanifest(&out, reseal(&index));
    let s = Store::open(&out).unwrap();
    let err = s
        .grid()
        .unwrap()
        .read_block(0, 0, false)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("block (0, 0)") && err.contains("a target lies outside the block's interval"),
        "{err}"
    );
    // The other blocks still read.
    assert_eq!(
        s.grid().unwrap().read_block(1, 1, false).unwrap().dsts,
        vec![9]
    );
}

#[test]
fn index_widths_that_disagree_with_the_intervals_are_refused() {
    let d = tempfile::tempdir().unwrap();
    let out = store(d.path());
    let index = out.join("grid.index");
    let mut ib = std::fs::read(&index).unwrap();
    // Entry (1, 0): widths at bytes 28..32; claim 4-bit ids.
    let at = HEADER + 2 * 32 + 28;
    let w = u32::from_le_bytes(ib[at..at + 4].try_into().unwrap());
    assert_eq!(w & 0xff, 3);
    ib[at..at + 4].copy_from_slice(&((w & !0xff) | 4).to_le_bytes());
    std::fs::write(&index, &ib).unwrap();
    remanifest(&out, reseal(&index));
    let s = Store::open(&out).unwrap();
    let err = s.grid().err().expect("refused").to_string();
    assert!(
        err.contains("grid.index") && err.contains("entry of block (1, 0) has bit widths"),
        "{err}"
    );
}
