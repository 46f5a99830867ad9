//! Tests of the external sorter: spilled and in-memory sorts agree, source-ordered
//! runs, ranges, damaged runs.

use super::*;

fn drain<R: Record>(mut s: Sorted<R>) -> Vec<R> {
    let mut all = Vec::new();
    let mut b = Vec::new();
    loop {
        s.next_batch(&mut b, 777).unwrap();
        if b.is_empty() {
            return all;
        }
        all.extend_from_slice(&b);
    }
}

#[test]
fn spilling_and_in_memory_sorts_agree() {
    let dir = tempfile::tempdir().unwrap();
    let mut x = 12345u64;
    let mut input = Vec::new();
    for _ in 0..50_000 {
        crate::lcg(&mut x);
        input.push(WEdge {
            u: (x >> 50) as u32,
            v: (x >> 20 & 1023) as u32,
            w: (x & 7) as f32,
        });
    }
    let mut expect = input.clone();
    expect.sort_by_key(|r| (r.key(), r.tie()));
    for memory in [12 * 1024, 12 * 4096, 1 << 30] {
        let mut s = ExternalSorter::<WEdge>::new(dir.path().to_path_buf(), memory, IoStats::new());
        for r in &input {
            s.push(*r).unwrap();
        }
        let spilled = s.runs() > 0;
        assert_eq!(spilled, memory < 1 << 20);
        assert_eq!(drain(s.finish().unwrap()), expect, "memory {memory}");
    }
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        0,
        "runs are removed"
    );
}

#[test]
fn source_ordered_runs_give_back_every_range() {
    let dir = tempfile::tempdir().unwrap();
    let mut x = 7u64;
    let input: Vec<WEdge> = (0..40_000)
        .map(|_| {
            crate::lcg(&mut x);
            WEdge {
                u: (x >> 52) as u32,
                v: x as u32 & 1023,
                w: (x >> 8 & 7) as f32,
            }
        })
        .collect();
    let key = |r: &WEdge| (r.u, r.v, r.w.to_bits());
    // Capacities that spill once (in place), several times (double-buffered
    // halves on the background thread) or at every few records.
    // With `split`, a spill is written as several runs (one per thread).
    let mut unsplit_runs = std::collections::HashMap::<usize, usize>::new();
    for (cap, split) in [
        (30_000usize, false),
        (5_000, false),
        (999, false),
        (201, false),
        (30_000, true),
        (999, true),
    ] {
        let mut s =
            ExternalSorter::<WEdge>::by_source(dir.path().to_path_buf(), 1 << 30, IoStats::new());
        s.set_capacity(cap);
        if split {
            s.split_records = 64;
        }
        for r in &input {
            s.push(*r).unwrap();
        }
        assert_eq!(s.len(), input.len() as u64);
        let mut runs = s.into_runs().unwrap();
        assert!(runs.count() >= input.len() / cap);
        if split {
            // The first and the last spill (nothing else running) are split.
            let pieces = rayon::current_num_threads().clamp(1, 8);
            let unsplit = unsplit_runs[&cap];
            assert_eq!(
                runs.count(),
                unsplit + 2 * (pieces - 1),
                "one run per piece"
            );
        } else {
            unsplit_runs.insert(cap, runs.count());
        }
        let mut lo = 0u64;
        for hi in [1u64, 2, 100, 1000, 2500, 4096] {
            for x in [lo, lo + 1, hi / 2, hi] {
                let below = |b: u64| {
                    input
                        .iter()
                        .filter(|r| (lo..b).contains(&(r.u as u64)))
                        .count() as u64
                };
                assert!(runs.lower_below(x) <= below(x), "lower bound at {x}");
                assert!(runs.bound_below(x) >= below(x), "upper bound at {x}");
            }
            let mut got = Vec::new();
            runs.take_below(hi, &mut got).unwrap();
            let mut expect: Vec<WEdge> = input
                .iter()
                .filter(|r| (lo..hi).contains(&(r.u as u64)))
                .copied()
                .collect();
            got.sort_by_key(key);
            expect.sort_by_key(key);
            assert_eq!(got, expect, "capacity {cap}, range {lo}..{hi}");
            lo = hi;
        }
        drop(runs);
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }
}

/// Checks that `segs` describes `v` as [`Segments`] says.
fn check_segments(v: &[WEdge], segs: &Segments, leaf: usize) {
    if v.is_empty() {
        assert!(segs.is_empty());
        return;
    }
    assert_eq!(segs[0].1, 0);
    for (k, &(src, pos)) in segs.iter().enumerate() {
        let (next_src, end) = segs
            .get(k + 1)
            .map_or((u64::MAX, v.len() as u64), |s| (s.0 as u64, s.1));
        assert!(pos < end && (src as u64) < next_src, "segments ascend");
        let part = &v[pos as usize..end as usize];
        assert!(
            part.iter().all(|r| r.u >= src && (r.u as u64) < next_src),
            "segment {k} holds only its sources"
        );
        assert!(
            part.len() <= leaf || part.iter().all(|r| r.u == part[0].u),
            "segment {k}: {} records of several sources",
            part.len()
        );
    }
}

#[test]
fn partition_by_source_gives_exact_segments() {
    let mut x = 99u64;
    for (len, bits, leaf) in [
        (0usize, 8u32, 16usize),
        (1, 4, 16),
        (300, 3, 16),
        (5000, 9, 16),
        (70_000, 20, 64),
        (300_000, 32, 4096),
        (300_000, 17, 1),
    ] {
        let mut v: Vec<WEdge> = (0..len)
            .map(|_| {
                crate::lcg(&mut x);
                let u = if bits == 32 {
                    (x >> 32) as u32
                } else {
                    (x >> 40) as u32 & ((1 << bits) - 1)
                };
                WEdge {
                    u,
                    v: x as u32,
                    w: (x >> 8) as u8 as f32,
                }
            })
            .collect();
        let mut expect = v.clone();
        // Written while partitioned: the file holds the partitioned records.
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("run");
        let mut w = v.clone();
        let mut out = OutFile::create_direct(&path, IoStats::new()).unwrap();
        let wsegs = write_partitioned(&mut w, leaf, &mut out).unwrap();
        out.finish().unwrap();
        let file: Vec<WEdge> = bytemuck::pod_collect_to_vec(&std::fs::read(&path).unwrap());
        assert_eq!(file, w, "written as partitioned, len {len}");
        check_segments(&w, &wsegs, leaf);

        let segs = partition_by_source(&mut v, leaf);
        check_segments(&v, &segs, leaf);
        let key = |r: &WEdge| (r.u, r.v, r.w.to_bits());
        expect.sort_by_key(key);
        v.sort_by_key(key);
        assert_eq!(v, expect, "same multiset, len {len}");
        w.sort_by_key(key);
        assert_eq!(w, expect, "same multiset written, len {len}");
    }
}

/// `OUTCORE_SORT_BENCH=FILE cargo test --release -p outcore-store sort_bench -- --ignored --nocapture`:
/// the comparison sort vs the radix partition by source on a bin32 file's first
/// 32M edges (a half-buffer spill at --memory 1G).
#[test]
#[ignore]
fn sort_bench() {
    let path = std::env::var("OUTCORE_SORT_BENCH").unwrap();
    let bytes = std::fs::read(path).unwrap();
    let n = (bytes.len() / 8).min(32 << 20);
    let edges: Vec<Edge> = bytemuck::cast_slice(&bytes[..n * 8]).to_vec();
    drop(bytes);
    for _ in 0..3 {
        let mut a = edges.clone();
        let t = std::time::Instant::now();
        sort_records(&mut a);
        let ta = t.elapsed();
        let mut b = edges.clone();
        let t = std::time::Instant::now();
        let segs = partition_by_source(&mut b, leaf_size(n as u64));
        let tb = t.elapsed();
        let mut c = edges.clone();
        let t = std::time::Instant::now();
        // Only the top level: every bucket is a leaf.
        partition_by_source(&mut c, n / 128);
        let tc = t.elapsed();
        eprintln!(
            "{n} records: full sort {ta:?}, partition by source {tb:?} ({} segments), top level only {tc:?}",
            segs.len()
        );
    }
}

/// The list limit fails a sort only for a source that truly has more records
/// than the limit (its count is a lower bound), and catches a heavy source that
/// fills whole segments of the runs while the input is still arriving.
#[test]
fn the_list_limit_is_never_wrong_and_catches_heavy_sources_early() {
    let dir = tempfile::tempdir().unwrap();
    let mut x = 99u64;
    let mut input = Vec::new();
    // Source 3 has 60,000 records, source 70 has 20,000, the rest few each.
    for i in 0..200_000u32 {
        crate::lcg(&mut x);
        let u = match i % 10 {
            0..=2 => 3,
            3 => 70,
            _ => 100 + (x >> 40) as u32 % 50_000,
        };
        input.push(Edge { u, v: i });
    }
    let heaviest = 60_000u64;
    let run = |limit: u64| -> (Result<()>, u64) {
        let mut s =
            ExternalSorter::<Edge>::by_source(dir.path().to_path_buf(), 8 * 20_000, IoStats::new());
        s.set_list_limit(
            limit,
            Box::new(|u, k| crate::StoreError::Invalid(format!("source {u}: {k}"))),
        );
        let mut pushed = 0;
        for r in &input {
            if let Err(e) = s.push(*r) {
                return (Err(e), pushed);
            }
            pushed += 1;
        }
        (s.into_runs().map(|_| ()), pushed)
    };
    let (r, _) = run(heaviest);
    assert!(
        r.is_ok(),
        "a source at the limit was refused: {:?}",
        r.err()
    );
    let (r, pushed) = run(heaviest / 2);
    let e = r.expect_err("source 3 has twice the limit").to_string();
    assert!(e.starts_with("source 3: "), "{e}");
    let k: u64 = e["source 3: ".len()..].parse().unwrap();
    assert!(k > heaviest / 2 && k <= heaviest, "{e}");
    assert!(
        pushed < input.len() as u64,
        "found only after the whole input"
    );
}
