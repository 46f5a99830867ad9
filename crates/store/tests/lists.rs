//! Whole out-edge lists read from the CSR ([`outcore_store::lists`]): every planned
//! group reads exactly the lists of the asked vertices, equal to the CSR's own
//! lists; groups join lists only across at most one page boundary; a wrong degree
//! sum and a target past the vertex count are refused.

use outcore_store::format::HEADER_LEN;
use outcore_store::ingest::Quiet;
use outcore_store::lists::{ListGroup, ListReader, GROUP_EDGES};
use outcore_store::{ingest, IngestOptions, Store, StoreError};
use std::fmt::Write;
use std::path::{Path, PathBuf};

fn step(x: &mut u64) -> u64 {
    *x = x
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    *x >> 33
}

/// A weighted graph of `n` vertices with skewed out-degrees (a few hubs, many
/// vertices without out-edges) and some long lists.
fn build(dir: &Path, n: u64, m: u64) -> PathBuf {
    let mut x = 7u64;
    let mut text = String::new();
    for _ in 0..m {
        // Sources skewed towards small ids, targets uniform.
        let r = step(&mut x) % n;
        let u = (r * r / n) * !r.is_multiple_of(3) as u64;
        let v = step(&mut x) % n;
        let w = (step(&mut x) % 1000) as f32 / 10.0;
        writeln!(text, "{u} {v} {w}").unwrap();
    }
    let input = dir.join("g.txt");
    std::fs::write(&input, text).unwrap();
    let out = dir.join("s");
    let opts = IngestOptions {
        vertices: Some(n),
        partitions: Some(4),
        ..Default::default()
    };
    ingest(&[input], &out, &opts, &Quiet).unwrap();
    out
}

fn first_page(a: u64) -> u64 {
    (HEADER_LEN + 4 * a) / 4096
}

fn last_page(b: u64) -> u64 {
    (HEADER_LEN + 4 * b - 1) / 4096
}

#[test]
fn planned_groups_read_exactly_the_asked_lists() {
    let d = tempfile::tempdir().unwrap();
    let store = Store::open(&build(d.path(), 5000, 120_000)).unwrap();
    let degrees = store.degrees("out").unwrap();
    let csr = store.csr("out").unwrap();
    let lists = ListReader::open(&store, &degrees).unwrap();
    let mut x = 3u64;
    for (case, keep) in [1u64, 7, 50, 300, 1000].into_iter().enumerate() {
        // Vertices kept with probability keep/1000, ascending.
        let vs: Vec<u32> = (0..5000u32)
            .filter(|_| step(&mut x) % 1000 < keep)
            .collect();
        let plan = lists.plan(&vs);
        let mut seen: Vec<u32> = Vec::new();
        let mut prev: Option<ListGroup> = None;
        for g in &plan {
            assert!(g.first < g.last && g.last <= vs.len() && g.a < g.b);
            if let Some(p) = prev {
                assert!(p.last <= g.first && p.b <= g.a);
                // A new group starts only past the next page or at the size cap.
                assert!(
                    first_page(g.a) > last_page(p.b) + 1 || p.b - p.a >= GROUP_EDGES,
                    "case {case}: {p:?} then {g:?}"
                );
            }
            assert_eq!(g.pages(), last_page(g.b) - first_page(g.a) + 1);
            let b = lists.read(&vs, g, true).unwrap();
            assert_eq!(b.offs.len(), b.srcs.len() + 1);
            for (k, &u) in b.srcs.iter().enumerate() {
                let (s, e) = (b.offs[k] as usize, b.offs[k + 1] as usize);
                let (t, w) = csr.edges(u).unwrap();
                assert_eq!(&b.dsts[s..e], &t[..], "case {case} vertex {u}");
                assert_eq!(&b.weights.as_ref().unwrap()[s..e], &w.unwrap()[..]);
                assert_eq!(lists.range(u).1 - lists.range(u).0, t.len() as u64);
            }
            // Without weights, the same targets and no weights.
            let nb = lists.read(&vs, g, false).unwrap();
            assert_eq!((&nb.dsts, &nb.weights), (&b.dsts, &None));
            seen.extend_from_slice(&b.srcs);
            prev = Some(*g);
        }
        let want: Vec<u32> = vs
            .iter()
            .copied()
            .filter(|&v| degrees[v as usize] > 0)
            .collect();
        assert_eq!(seen, want, "case {case}");
    }
    // Every vertex: the groups cover the whole CSR, capped in size.
    let all: Vec<u32> = (0..5000).collect();
    let plan = lists.plan(&all);
    assert_eq!(plan.first().unwrap().a, 0);
    assert_eq!(plan.last().unwrap().b, store.edges());
    assert!(plan.len() as u64 >= store.edges() / (GROUP_EDGES + 5000));
}

#[test]
fn degrees_that_disagree_with_the_csr_are_refused() {
    let d = tempfile::tempdir().unwrap();
    let store = Store::open(&build(d.path(), 500, 3000)).unwrap();
    let mut degrees = store.degrees("out").unwrap();
    degrees[3] += 1;
    let e = ListReader::open(&store, &degrees).err().unwrap();
    assert!(
        matches!(&e, StoreError::Corrupt { reason, .. } if reason.contains("sum to 3001 edges but the CSR holds 3000")),
        "{e}"
    );
}

#[test]
fn a_target_past_the_vertex_count_is_refused() {
    let d = tempfile::tempdir().unwrap();
    let out = build(d.path(), 500, 3000);
    // Forge the first target of the CSR (lists are read in part, so their CRC is
    // not checked; the range check must catch it).
    let f = out.join("csr.out.targets");
    let mut bytes = std::fs::read(&f).unwrap();
    bytes[HEADER_LEN as usize..HEADER_LEN as usize + 4].copy_from_slice(&9999u32.to_le_bytes());
    std::fs::write(&f, &bytes).unwrap();
    let store = Store::open(&out).unwrap();
    let degrees = store.degrees("out").unwrap();
    let lists = ListReader::open(&store, &degrees).unwrap();
    let first = (0..500u32).find(|&v| degrees[v as usize] > 0).unwrap();
    let plan = lists.plan(&[first]);
    let e = lists.read(&[first], &plan[0], false).err().unwrap();
    assert!(
        matches!(&e, StoreError::Corrupt { reason, .. } if reason == "target 9999 is not below the vertex count 500"),
        "{e}"
    );
}

/// The degrees mapped in place are the degrees read into memory; a flipped
/// byte in the payload is refused by name with the checksum mismatch.
#[test]
fn mapped_degrees_match_and_damage_is_refused() {
    let d = tempfile::tempdir().unwrap();
    let dir = build(d.path(), 5000, 120_000);
    let store = Store::open(&dir).unwrap();
    for side in ["out", "in"] {
        let read = store.degrees(side).unwrap();
        let mapped = store.degrees_mapped(side).unwrap();
        assert_eq!(&mapped[..], &read[..], "degrees.{side}");
        assert_eq!(mapped.resident_bytes(), 0);
    }
    let f = dir.join("degrees.in");
    let mut bytes = std::fs::read(&f).unwrap();
    let at = HEADER_LEN as usize + 4 * 2500 + 1;
    bytes[at] ^= 0x40;
    std::fs::write(&f, &bytes).unwrap();
    let store = Store::open(&dir).unwrap();
    let err = store.degrees_mapped("in").unwrap_err().to_string();
    assert!(err.contains("degrees.in"), "{err}");
    assert!(err.contains("checksum mismatch"), "{err}");
    // The other direction is untouched.
    store.degrees_mapped("out").unwrap();
}

/// A CSR file mapped in place serves exactly the file's bytes, counts each
/// page group as read once, and refuses a damaged group by name and range
/// while groups it does not touch are still served.
#[test]
fn checked_map_serves_checked_groups_once_and_refuses_damage() {
    use outcore_store::checked_map::CheckedMap;
    use outcore_store::format::FileKind;
    use outcore_store::pagesums::{PageSums, SUM_GROUP};
    let d = tempfile::tempdir().unwrap();
    let dir = build(d.path(), 5000, 120_000);
    let store = Store::open(&dir).unwrap();
    let targets: Vec<u32> = store
        .layout("csr.out.targets", FileKind::CsrTargets)
        .unwrap()
        .read_all()
        .unwrap();
    let sums = PageSums::load(&store, "csr.out.targets").unwrap();
    let lf = store
        .layout("csr.out.targets", FileKind::CsrTargets)
        .unwrap();
    let stats = outcore_io::IoStats::new();
    let map = CheckedMap::open(&lf, &sums, stats.clone()).unwrap();
    let n = targets.len() as u64;
    for (a, b) in [
        (0, 1),
        (3, 1500),
        (1000, 1030),
        (n - 7, n),
        (0, n),
        (17, 17),
    ] {
        let got = map.get::<u32>(&sums, 4 * a, 4 * b).unwrap();
        assert_eq!(got, &targets[a as usize..b as usize], "{a}..{b}");
    }
    // Every group was touched once by (0, n): counted once, not per read.
    assert_eq!(stats.snapshot().bytes_read, 4 * n);
    // A flipped byte in group 5.
    let path = dir.join("csr.out.targets");
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[(HEADER_LEN + 5 * SUM_GROUP + 9) as usize] ^= 0x21;
    std::fs::write(&path, &bytes).unwrap();
    let store = Store::open(&dir).unwrap();
    let lf = store
        .layout("csr.out.targets", FileKind::CsrTargets)
        .unwrap();
    let map = CheckedMap::open(&lf, &sums, outcore_io::IoStats::new()).unwrap();
    let per = SUM_GROUP / 4;
    assert_eq!(
        map.get::<u32>(&sums, 0, 4 * 5 * per).unwrap(),
        &targets[..5 * per as usize]
    );
    let err = map
        .get::<u32>(&sums, 4 * (5 * per + 3), 4 * (5 * per + 4))
        .unwrap_err()
        .to_string();
    assert!(err.contains("csr.out.targets"), "{err}");
    assert!(err.contains("page group 5 "), "{err}");
    assert!(
        err.contains(&format!("{}..{}", 5 * SUM_GROUP, 6 * SUM_GROUP)),
        "{err}"
    );
    // A group past the damaged one is served.
    let (a, b) = (6 * per, 6 * per + 10);
    assert_eq!(
        map.get::<u32>(&sums, 4 * a, 4 * b).unwrap(),
        &targets[a as usize..b as usize]
    );
}
