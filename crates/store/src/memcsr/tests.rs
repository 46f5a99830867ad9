//! Tests of the in-memory CSR: counting sort, lists, transposes, grid cutting.

use super::*;
use crate::sort::{Edge, WEdge};

/// Every entry of `csr` as a (vertex, target, weight) record, in CSR order.
fn edges(csr: &MemCsr<TargetWeight>) -> Vec<WEdge> {
    (0..csr.vertices())
        .flat_map(|u| {
            csr.list(u).iter().map(move |x| WEdge {
                u: u as u32,
                v: x.v(),
                w: x.w(),
            })
        })
        .collect()
}

#[test]
fn radix_sorted_lists_match_a_comparison_sort() {
    let mut x = 5u64;
    let mut scratch = Vec::new();
    for len in [0usize, 1, 255, 256, 257, 1000, 5000, 70_000] {
        for range in [1u64, 7, 300, 70_000, 1 << 24, 1 << 32] {
            let mut list: Vec<u32> = (0..len)
                .map(|_| {
                    crate::lcg(&mut x);
                    ((x >> 16) % range) as u32
                })
                .collect();
            let mut expect = list.clone();
            expect.sort_unstable();
            <u32 as Adj>::sort_list(&mut list, &mut scratch);
            assert_eq!(list, expect, "len {len} range {range}");
        }
    }
}

#[test]
fn column_runs_cover_each_sorted_list_exactly() {
    let mut x = 99u64;
    for len in [0usize, 1, 2, 3, 7, 64, 1000] {
        for interval in [1u64, 3, 16, 1000, 1 << 20] {
            let mut list: Vec<u32> = (0..len)
                .map(|_| {
                    crate::lcg(&mut x);
                    (x >> 40) as u32 % 5000
                })
                .collect();
            list.sort_unstable();
            let mut got = Vec::new();
            MemCsr::<u32>::runs(&list, interval, |j, s, e| got.push((j, s, e)));
            // The naive split: a new run wherever the column changes.
            let mut expect: Vec<(usize, usize, usize)> = Vec::new();
            for (k, &v) in list.iter().enumerate() {
                let j = (v as u64 / interval) as usize;
                match expect.last_mut() {
                    Some(r) if r.0 == j => r.2 = k + 1,
                    _ => expect.push((j, k, k + 1)),
                }
            }
            assert_eq!(got, expect, "len {len} interval {interval}");
        }
    }
}

#[test]
fn counting_sort_matches_a_comparison_sort() {
    let mut x = 7u64;
    let mut next = || {
        crate::lcg(&mut x);
        x >> 33
    };
    let n = 300usize;
    let recs: Vec<WEdge> = (0..20_000)
        .map(|_| WEdge {
            u: (next() % n as u64) as u32,
            v: (next() % 40) as u32 * 7 % n as u32,
            w: (next() % 4) as f32,
        })
        .collect();
    for dedup in [false, true] {
        for threads in [1, 2, 5] {
            let mut want = recs.clone();
            want.sort_by_key(|r| (r.key(), r.tie()));
            if dedup {
                want.dedup_by_key(|r| r.key());
            }
            let loops = want.iter().filter(|r| r.u == r.v).count() as u64;
            let parallel = if dedup {
                0
            } else {
                want.windows(2)
                    .filter(|p| (p[0].u, p[0].v) == (p[1].u, p[1].v))
                    .count() as u64
            };
            let (csr, got) =
                MemCsr::<TargetWeight>::from_records(&recs, 0, n, dedup, threads).unwrap();
            assert_eq!((got.self_loops, got.parallel), (loops, parallel));
            assert_eq!(edges(&csr), want, "dedup {dedup}, threads {threads}");
            // The transpose is the reversed records in (target, source, weight) order.
            let t = csr.transpose(threads).unwrap();
            let mut rev: Vec<WEdge> = want.iter().map(|r| r.reversed()).collect();
            rev.sort_by_key(|r| (r.key(), r.tie()));
            assert_eq!(edges(&t), rev);
            let indeg = csr.in_degrees(threads).unwrap();
            for (v, d) in indeg.iter().enumerate() {
                assert_eq!(*d as usize, t.list(v).len());
            }
        }
    }
}

#[test]
fn grid_bytes_do_not_depend_on_the_row_memory() {
    // Row memory from one byte (a row at a time, each written before the next
    // is built) to plenty (windows written while the next is built).
    let mut x = 3u64;
    let recs: Vec<WEdge> = (0..20_000)
        .map(|_| {
            crate::lcg(&mut x);
            WEdge {
                u: (x >> 40) as u32 % 1000,
                v: (x >> 20) as u32 % 1000,
                w: (x & 15) as f32,
            }
        })
        .collect();
    let (csr, _) = MemCsr::<TargetWeight>::from_records(&recs, 0, 1000, false, 2).unwrap();
    let mut files: Vec<Vec<u8>> = Vec::new();
    for memory in [1u64, 20_000, 200_000, 1 << 30] {
        let dir = tempfile::tempdir().unwrap();
        csr.write_grid(dir.path(), 7, 143, memory, &IoStats::new(), &|_| {})
            .unwrap();
        let mut bytes = std::fs::read(dir.path().join("grid.data")).unwrap();
        bytes.extend(std::fs::read(dir.path().join("grid.index")).unwrap());
        files.push(bytes);
    }
    assert!(
        files.iter().all(|f| *f == files[0]),
        "same grid at every row memory"
    );
}

#[test]
fn unweighted_lists_and_empty_graphs() {
    let recs = vec![
        Edge { u: 2, v: 1 },
        Edge { u: 0, v: 2 },
        Edge { u: 2, v: 0 },
    ];
    let (csr, counts) = MemCsr::<u32>::from_records(&recs, 0, 4, false, 2).unwrap();
    assert_eq!(counts, ListCounts::default());
    assert_eq!(csr.offsets, vec![0, 1, 1, 3, 3]);
    assert_eq!(csr.adj, vec![2, 0, 1]);
    let (csr, counts) = MemCsr::<u32>::from_records(&Vec::<Edge>::new(), 0, 0, true, 2).unwrap();
    assert_eq!(
        (csr.offsets, csr.adj.len(), counts),
        (vec![0], 0, ListCounts::default())
    );
    // 0 -> 1 three times, 1 -> 1 twice: 2 + 1 parallel, 2 self-loops; none
    // left after dedup.
    let recs: Vec<Edge> = [(0, 1), (1, 1), (0, 1), (0, 2), (1, 1), (0, 1)]
        .iter()
        .map(|&(u, v)| Edge { u, v })
        .collect();
    let (_, counts) = MemCsr::<u32>::from_records(&recs, 0, 3, false, 2).unwrap();
    assert_eq!(
        counts,
        ListCounts {
            self_loops: 2,
            parallel: 3
        }
    );
    let (_, counts) = MemCsr::<u32>::from_records(&recs, 0, 3, true, 2).unwrap();
    assert_eq!(
        counts,
        ListCounts {
            self_loops: 1,
            parallel: 0
        }
    );
}
