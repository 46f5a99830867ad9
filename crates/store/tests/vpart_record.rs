//! The V-Part record's `target_bits` (written by a build, checked when the
//! manifest is read) and `version`; the compact source tables and byte masks
//! decoded against the out-CSR.

use outcore_store::ingest::Quiet;
use outcore_store::vpart::{self, VpartOptions};
use outcore_store::{ingest, IngestOptions, Manifest, Store};
use std::path::{Path, PathBuf};

mod common;
use common::{remanifest, reseal};

/// Writes `bytes` as `index` (CRCs made anew), returns what opening the
/// layout says, and puts `pristine` back.
fn open_forged(out: &Path, index: &Path, pristine: &[u8], bytes: &[u8]) -> String {
    use outcore_io::ReadMode;
    use outcore_store::vpart::VpartLayout;
    std::fs::write(index, bytes).unwrap();
    let crcs = reseal(index);
    remanifest(out, crcs);
    let err = match VpartLayout::open(&Store::open(out).unwrap(), ReadMode::Buffered) {
        Ok(_) => panic!("a forged index opened"),
        Err(e) => e.to_string(),
    };
    std::fs::write(index, pristine).unwrap();
    remanifest(out, (crcs.1, crcs.0));
    err
}

/// The graph of edge-list `text` ingested under `dir` and cut into 3
/// partitions: the store's path and the layout's record.
fn partitioned(dir: &Path, text: &str) -> (PathBuf, vpart::VpartRecord) {
    let input = dir.join("g.txt");
    std::fs::write(&input, text).unwrap();
    let out = dir.join("g.store");
    ingest(&[input], &out, &IngestOptions::default(), &Quiet).unwrap();
    let store = Store::open(&out).unwrap();
    let opts = VpartOptions {
        vertex_memory: 1 << 20,
        partitions: Some(3),
        memory: 64 << 20,
        assignment: None,
    };
    let rec = vpart::build(&store, &opts, &|_, _, _| {}).unwrap();
    (out, rec)
}

#[test]
fn target_bits_are_the_largest_partitions_and_a_bad_value_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    // 40 vertices on a ring plus chords.
    let mut text = String::new();
    for u in 0..40u32 {
        text += &format!("{u} {}\n{u} {}\n", (u + 1) % 40, (u * 7 + 3) % 40);
    }
    let (out, rec) = partitioned(dir.path(), &text);
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

#[test]
fn source_tables_and_masks_decode_to_the_csr_and_an_earlier_format_is_refused() {
    use outcore_io::ReadMode;
    use outcore_store::vpart::{Part, SourceDecoder, VpartLayout};
    let dir = tempfile::tempdir().unwrap();
    // 30000 vertices (tables of several 4096-entry blocks): a hub, chords of
    // every length (ids far apart: varints of several bytes) and parallel
    // edges (counts above one).
    let n = 30000u32;
    let mut text = String::new();
    for u in 0..n {
        text += &format!("{u} {}\n{u} {}\n", (u + 1) % n, (u as u64 * 977 % n as u64));
        text += &format!("0 {u}\n");
        if u % 7 == 0 {
            for _ in 0..130 {
                text += &format!("{u} {}\n", (u + 11) % n);
            }
        }
    }
    let (out, rec) = partitioned(dir.path(), &text);
    assert_eq!(rec.version, vpart::VPART_VERSION);
    let store = Store::open(&out).unwrap();
    let layout = VpartLayout::open(&store, ReadMode::Buffered)
        .unwrap()
        .unwrap();
    let k = rec.partitions as usize;
    // Every vertex's owner.
    let mut owner = vec![usize::MAX; n as usize];
    for (q, o) in (0..k).flat_map(|q| {
        let ids: Vec<u32> = layout.read(Part::Dests, q, 0, rec.dests[q]).unwrap();
        ids.into_iter().map(move |v| (q, v))
    }) {
        owner[o as usize] = q;
    }
    assert!(owner.iter().all(|&q| q < k));
    let csr = store.csr("out").unwrap();
    let mb = layout.mask_bytes();
    assert_eq!(mb, 1);
    for q in 0..k {
        // The table as the CSR says: sources with their edge counts into q,
        // by (owner, id).
        let mut want: Vec<(usize, u32, u32)> = Vec::new();
        for u in 0..n {
            let (t, _) = csr.edges(u).unwrap();
            let c = t.iter().filter(|&&v| owner[v as usize] == q).count() as u32;
            if c > 0 {
                want.push((owner[u as usize], u, c));
            }
        }
        want.sort();
        let bytes = layout.payload_bytes(Part::Sources, q);
        let raw: Vec<u8> = layout.read(Part::Sources, q, 0, bytes).unwrap();
        let mut got = Vec::new();
        SourceDecoder::at_block(0)
            .decode_exact(&raw, rec.mirrors[q] as usize, &mut got)
            .unwrap();
        let want: Vec<[u32; 2]> = want.iter().map(|&(_, u, c)| [u, c]).collect();
        assert_eq!(got, want, "partition {q}");
        // The block index: each block decodes alone from its byte offset, and
        // its edge offset is the sum of the counts before it.
        let bi = layout.block_index(q);
        let blocks = rec.mirrors[q].div_ceil(vpart::SOURCE_BLOCK) as usize;
        assert_eq!(bi.edges.len(), blocks + 1);
        assert_eq!(bi.bytes.len(), blocks + 1);
        assert_eq!(bi.bytes[blocks], bytes);
        for b in 0..blocks {
            let first = b * vpart::SOURCE_BLOCK as usize;
            let nb = (want.len() - first).min(vpart::SOURCE_BLOCK as usize);
            let mut one = Vec::new();
            SourceDecoder::at_block(first as u64)
                .decode_exact(
                    &raw[bi.bytes[b] as usize..bi.bytes[b + 1] as usize],
                    nb,
                    &mut one,
                )
                .unwrap();
            assert_eq!(
                &one[..],
                &want[first..first + nb],
                "partition {q} block {b}"
            );
            let before: u64 = want[..first].iter().map(|e| e[1] as u64).sum();
            assert_eq!(bi.edges[b], before, "partition {q} block {b}");
        }
        assert_eq!(bi.edges[blocks], rec.edges[q]);
        assert!(
            rec.mirrors[q] > 2 * vpart::SOURCE_BLOCK,
            "{:?}",
            rec.mirrors
        );
        assert!(
            bytes < 8 * rec.mirrors[q],
            "{bytes} bytes for {} entries",
            rec.mirrors[q]
        );
        // Masks: bit p set exactly when the destination has a mirror in p.
        let masks: Vec<u8> = layout
            .read(Part::Mirrors, q, 0, mb as u64 * rec.dests[q])
            .unwrap();
        let ids: Vec<u32> = layout.read(Part::Dests, q, 0, rec.dests[q]).unwrap();
        // The skip table: row r counts each partition's mirrors of the first
        // r units' destinations; the last row all of them.
        let t = layout.skip_table(q).unwrap();
        let unit = layout.skip_unit() as usize;
        let rows = (ids.len()).div_ceil(unit) + 1;
        assert_eq!(t.len(), rows * k);
        for r in 0..rows {
            let before = if r + 1 == rows { ids.len() } else { r * unit };
            for p in 0..k {
                let c = (0..before)
                    .filter(|&i| masks[i * mb + p / 8] >> (p % 8) & 1 == 1)
                    .count();
                assert_eq!(t[r * k + p] as usize, c, "partition {q} row {r} of {p}");
            }
        }
        for (i, &v) in ids.iter().enumerate() {
            let (t, _) = csr.edges(v).unwrap();
            for p in 0..k {
                let has = t.iter().any(|&x| owner[x as usize] == p);
                let bit = masks[i * mb + p / 8] >> (p % 8) & 1 == 1;
                assert_eq!(bit, has, "vertex {v}, partition {p}");
            }
        }
    }
    // A block index a buggy writer got wrong (CRCs made anew) is refused by
    // the index's name.
    let index = out.join("vpart.index");
    let pristine = std::fs::read(&index).unwrap();
    let mut bytes = pristine.clone();
    let at = 4096 + 8 * (k * (k + 1)) + 8; // partition 0's second edge offset
    let x = u64::from_le_bytes(bytes[at..at + 8].try_into().unwrap());
    bytes[at..at + 8].copy_from_slice(&(x + rec.edges[0] + 1).to_le_bytes());
    let err = open_forged(&out, &index, &pristine, &bytes);
    assert!(
        err.contains("vpart.index") && err.contains("block index of partition 0"),
        "{err}"
    );
    // So is a skip table that does not end at its segments' sizes (the
    // index's last word: the last partition's mirrors in the last table).
    let mut bytes = pristine.clone();
    let at = bytes.len() - 8;
    let x = u64::from_le_bytes(bytes[at..at + 8].try_into().unwrap());
    bytes[at..].copy_from_slice(&(x + 1).to_le_bytes());
    let err = open_forged(&out, &index, &pristine, &bytes);
    assert!(
        err.contains("vpart.index") && err.contains(&format!("skip table of partition {}", k - 1)),
        "{err}"
    );
    assert!(VpartLayout::open(&Store::open(&out).unwrap(), ReadMode::Buffered).is_ok());
    // A layout of format 1 (no version in its record) is refused by name.
    let mut man = Manifest::read(&out).unwrap();
    man.vpart.as_mut().unwrap().version = 1;
    man.write(&out).unwrap();
    let store = Store::open(&out).unwrap();
    let err = match VpartLayout::open(&store, ReadMode::Buffered) {
        Ok(_) => panic!("a layout of format 1 opened"),
        Err(e) => e.to_string(),
    };
    assert!(
        err.contains("format 1") && err.contains("outcore partition"),
        "{err}"
    );
}
