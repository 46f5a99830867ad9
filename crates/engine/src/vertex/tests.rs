//! Tests of the vertex engine.

use super::*;

#[test]
fn frontier_builder_switches_to_dense_and_keeps_order() {
    let n = 10_000;
    let mut b = FrontierBuilder::new(n);
    assert!(b.insert(7));
    assert!(!b.insert(7));
    assert!(b.insert(3));
    match b.finish() {
        Frontier::Sparse(v) => assert_eq!(v, vec![3, 7]),
        _ => panic!("a small frontier is sparse"),
    }
    let mut b = FrontierBuilder::new(n);
    for v in (0..n as u32).rev().step_by(3) {
        b.insert(v);
    }
    let f = b.finish();
    assert!(matches!(f, Frontier::Dense(..)));
    let want: Vec<u32> = (0..n as u32).rev().step_by(3).rev().collect();
    assert_eq!(f.to_vec(), want);
    assert_eq!(f.len(), want.len());
    assert_eq!(Frontier::all(130).to_vec(), (0..130).collect::<Vec<u32>>());
}

#[test]
fn units_are_marked_by_64_byte_granule() {
    let mut bits = vec![0u64; 2];
    mark(&mut bits, 0, 1);
    mark(&mut bits, 64 * 70, 64 * 70 + 65);
    assert_eq!(bits[0], 1);
    assert_eq!(bits[1], (1 << 6) | (1 << 7));
    mark(&mut bits, 10, 10);
    assert_eq!(bits[0], 1);
}
