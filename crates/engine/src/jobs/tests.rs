//! The cost model's and the engine's unit tests.

use super::cost::*;
use super::loader::*;
use super::task::*;
use super::*;
use outcore_store::lists::ListReader;

/// The cost model's fetch term: two active sources of degree 200 in a graph
/// of 50K vertices read their two lists more cheaply than their row whole —
/// unless each active edge is expected to activate a vertex (yield 1), half of
/// which a lists iteration would fetch on demand: then the row whole wins.
#[test]
fn expected_fetches_raise_the_lists_cost() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("g.txt");
    let n = 50_000u64;
    let mut text = String::new();
    for u in 0..n {
        for k in [7u64, 13, 31, 101, 977] {
            text += &format!("{u} {}\n", (u * k + 1) % n);
        }
    }
    for u in [10u64, 11] {
        for i in 0..195 {
            text += &format!("{u} {}\n", (i * 251 + u) % n);
        }
    }
    std::fs::write(&input, text).unwrap();
    let out = dir.path().join("g");
    let opts = outcore_store::IngestOptions {
        partitions: Some(4),
        vertices: Some(n),
        ..Default::default()
    };
    outcore_store::ingest(&[input], &out, &opts, &outcore_store::ingest::Quiet).unwrap();
    let store = Store::open(&out).unwrap();
    let e = JobsEngine::new(&store, JobsConfig::default()).unwrap();
    let grid = store.grid().unwrap();
    let lists = ListReader::open(&store, &e.degrees).unwrap();
    let price = |fetch_yield: f64| Pricing {
        edge_bytes: 2.0,
        with_weights: false,
        fetch_yield,
    };
    let pick = |y: f64| e.cheapest(&grid, &lists, &[0], &[10, 11], price(y)).0;
    assert_eq!(pick(0.0), Load::Lists);
    assert_eq!(pick(0.001), Load::Lists);
    assert_eq!(pick(1.0), Load::Whole);
}

/// `fill_even` cuts into as many ranges as `fill`, contiguous and covering
/// every item, none over the cap (but a single oversized item), and its
/// largest range is never larger than `fill`'s.
#[test]
fn fill_even_balances_within_the_cap() {
    let sizes: Vec<Vec<u64>> = vec![
        vec![],
        vec![5],
        vec![100],
        vec![10; 16],
        (1..40).map(|i| (i * 37) % 23 + 1).collect(),
        vec![30, 1, 1, 1, 30, 1, 1, 1, 30],
        vec![70, 5, 5, 70],
    ];
    for xs in &sizes {
        for cap in [1u64, 10, 32, 50, 64, 1000] {
            let by = |i: usize| xs[i];
            let greedy = fill(xs.len(), by, cap);
            let even = fill_even(xs.len(), by, cap);
            assert_eq!(even.len(), greedy.len(), "{xs:?} cap {cap}");
            let mut next = 0;
            let size = |&(g, h): &(usize, usize)| (g..h).map(by).sum::<u64>();
            for r in &even {
                assert_eq!(r.0, next, "{xs:?} cap {cap}: {even:?}");
                assert!(r.1 > r.0);
                assert!(size(r) <= cap || r.1 == r.0 + 1, "{xs:?} cap {cap}");
                next = r.1;
            }
            assert_eq!(next, xs.len());
            let max = |v: &[(usize, usize)]| v.iter().map(size).max().unwrap_or(0);
            assert!(max(&even) <= max(&greedy), "{xs:?} cap {cap}");
        }
    }
    // Sixteen 10-byte items under a cap of 128: greedy 120 + 40, even 80 + 80.
    assert_eq!(fill_even(16, |_| 10, 128), vec![(0, 8), (8, 16)]);
}

/// Every picked run reaches `f` once, in order, with its own targets and
/// weights, and nothing unpicked; no target is hinted twice; with sparse
/// picks each run is hinted before `f` sees it. Densities cover both loops.
#[test]
fn for_each_applies_picked_runs_after_their_hints() {
    let runs = 300usize;
    let srcs: Vec<u32> = (0..runs as u32).map(|i| 1000 + 3 * i).collect();
    let mut offs = vec![0u32];
    for i in 0..runs {
        // Lengths 0..50: a run of every 50 is empty.
        offs.push(offs[i] + (i as u32 * 7) % 50);
    }
    let m = offs[runs] as usize;
    let dsts: Vec<u32> = (0..m as u32).collect();
    let ws: Vec<f32> = (0..m).map(|e| e as f32).collect();
    for keep in [1usize, 2, 3, 7, 50, 1000] {
        let filter = AtomicBitmap::new(2000);
        let mut want = Vec::new();
        for (i, &u) in srcs.iter().enumerate() {
            // keep = 1: every run; larger: sparser, irregular picks.
            if (i * 31 + 7) % keep == 0 {
                filter.set(u - 900);
                want.push(u);
            }
        }
        for (a, b) in [(0, runs), (17, 18), (5, 250), (299, 300)] {
            let t = Task {
                srcs: &srcs,
                offs: &offs,
                dsts: &dsts,
                ws: Some(&ws),
                a,
                b,
                filter: &filter,
                base: 900,
                exclusive: false,
            };
            let dense = t.dense();
            if (a, b) == (0, runs) {
                assert_eq!(dense, keep <= 2, "keep {keep}");
            }
            let hinted_src = std::cell::RefCell::new(Vec::new());
            let hinted_dst = std::cell::RefCell::new(vec![0u32; m]);
            let mut got = Vec::new();
            let edges = t.for_each(
                |u| hinted_src.borrow_mut().push(u),
                |d| {
                    d.iter()
                        .for_each(|&v| hinted_dst.borrow_mut()[v as usize] += 1)
                },
                |u, d, w| {
                    let x = srcs.iter().position(|&s| s == u).unwrap();
                    let r = offs[x] as usize..offs[x + 1] as usize;
                    assert_eq!(d, &dsts[r.clone()]);
                    assert_eq!(w.unwrap(), &ws[r.clone()]);
                    // The window loop (sparse picks) hints each picked run's own
                    // source and targets before applying it; the dense loop hints
                    // by position (sources 8 runs on, targets AHEAD edges on).
                    if !dense {
                        assert!(hinted_src.borrow().contains(&u), "source {u} not hinted");
                        assert!(r.clone().all(|e| hinted_dst.borrow()[e] == 1));
                    }
                    got.push(u);
                },
            );
            let picked: Vec<u32> = srcs[a..b]
                .iter()
                .copied()
                .filter(|u| want.contains(u))
                .collect();
            assert_eq!(got, picked, "keep {keep}, runs {a}..{b}");
            let sum: u64 = picked
                .iter()
                .map(|u| {
                    let x = srcs.iter().position(|s| s == u).unwrap();
                    (offs[x + 1] - offs[x]) as u64
                })
                .sum();
            assert_eq!(edges, sum);
            assert!(
                hinted_dst.borrow().iter().all(|&c| c <= 1),
                "a target hinted twice"
            );
        }
    }
}
