//! The ordering cost model (BAsC-Norder §4.1) equals a direct computation from the
//! edge list, whatever the chunk size the CSR is streamed in.

use outcore_store::info::cost_model;
use outcore_store::ingest::Quiet;
use outcore_store::{ingest, IngestOptions, Store};

#[test]
fn cost_model_matches_a_direct_computation_in_any_chunking() {
    let d = tempfile::tempdir().unwrap();
    let n = 300u64;
    // A deterministic pseudo-random graph with parallel edges and self-loops.
    let mut x = 12345u64;
    let mut edges = Vec::new();
    for _ in 0..2000 {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let u = (x >> 33) % n;
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let v = if u.is_multiple_of(7) {
            (u + (x >> 60)) % n
        } else {
            (x >> 33) % n
        };
        edges.push((u, v));
    }
    let text: String = edges.iter().map(|(u, v)| format!("{u} {v}\n")).collect();
    let input = d.path().join("g.txt");
    std::fs::write(&input, text).unwrap();
    let out = d.path().join("g");
    let opts = IngestOptions {
        vertices: Some(n),
        partitions: Some(4),
        ..Default::default()
    };
    ingest(&[input], &out, &opts, &Quiet).unwrap();
    let store = Store::open(&out).unwrap();
    let mut nbr = vec![Vec::new(); n as usize];
    let mut indeg = vec![0f64; n as usize];
    for &(u, v) in &edges {
        nbr[u as usize].push(v as f64);
        indeg[v as usize] += 1.0;
    }
    let want: f64 = (0..n as usize)
        .map(|v| {
            let l = &nbr[v];
            if l.len() < 2 {
                return 0.0;
            }
            let mean = l.iter().sum::<f64>() / l.len() as f64;
            indeg[v] * l.iter().map(|y| (y - mean).powi(2)).sum::<f64>() / l.len() as f64
        })
        .sum();
    assert!(want > 0.0);
    for chunk in [1u64, 7, 100, 1 << 20] {
        let got = cost_model(&store, chunk).unwrap();
        assert!(
            (got - want).abs() <= 1e-9 * want,
            "chunk {chunk}: {got} vs {want}"
        );
    }
}
