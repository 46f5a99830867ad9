//! The V-Part record's `target_bits`: written by a build, checked when the
//! manifest is read.

use outcore_store::ingest::Quiet;
use outcore_store::vpart::{self, VpartOptions};
use outcore_store::{ingest, IngestOptions, Manifest, Store};

#[test]
fn target_bits_are_the_largest_partitions_and_a_bad_value_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("g.txt");
    // 40 vertices on a ring plus chords.
    let mut text = String::new();
    for u in 0..40u32 {
        text += &format!("{u} {}\n{u} {}\n", (u + 1) % 40, (u * 7 + 3) % 40);
    }
    std::fs::write(&input, text).unwrap();
    let out = dir.path().join("g.store");
    ingest(&[input], &out, &IngestOptions::default(), &Quiet).unwrap();
    let store = Store::open(&out).unwrap();
    let opts = VpartOptions {
        vertex_memory: 1 << 20,
        partitions: Some(3),
        memory: 64 << 20,
    };
    let rec = vpart::build(&store, &opts, &|_, _, _| {}).unwrap();
    let largest = rec.max_dests();
    assert!(largest >= 14, "{:?}", rec.dests);
    // Local indices 0..largest need exactly these bits.
    assert_eq!(rec.target_bits, 64 - (largest - 1).leading_zeros());
    let mut man = Manifest::read(&out).unwrap();
    assert_eq!(man.vpart.as_ref().unwrap().target_bits, rec.target_bits);
    for bad in [0, 33] {
        man.vpart.as_mut().unwrap().target_bits = bad;
        man.write(&out).unwrap();
        let err = Manifest::read(&out).unwrap_err().to_string();
        assert!(
            err.contains("manifest.json") && err.contains(&format!("target_bits is {bad}")),
            "{err}"
        );
    }
}
