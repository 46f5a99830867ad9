//! Tests of the ingest's checks.

use super::*;

#[test]
fn absurd_vertex_counts_are_refused_unless_declared() {
    // One edge to id 4294967293: 4.3 billion vertices for one edge.
    let e = check_plausible(4_294_967_294, 1, 4_294_967_293, false)
        .unwrap_err()
        .to_string();
    assert!(e.contains("--remap") && e.contains("--vertices"), "{e}");
    assert!(check_plausible(4_294_967_294, 1, 4_294_967_293, true).is_ok());
    // Small graphs and graphs with a plausible density pass.
    assert!(check_plausible(1 << 20, 1, (1 << 20) - 1, false).is_ok());
    assert!(check_plausible(64 << 20, 1 << 20, (64 << 20) - 1, false).is_ok());
    assert!(check_plausible(65 << 20, 1 << 20, (65 << 20) - 1, false).is_err());
}

#[test]
fn a_store_that_cannot_fit_is_refused_before_writing() {
    let need = min_store_bytes(1 << 20, 1 << 24, true, true);
    assert_eq!(need, (16 << 20) + (14 << 24) + (8 << 20) + (8 << 24));
    let e = check_space(Path::new("/some/dir"), need, Some(need - 1))
        .unwrap_err()
        .to_string();
    assert!(e.contains("/some/dir") && e.contains("free"), "{e}");
    assert!(check_space(Path::new("/d"), need, Some(need)).is_ok());
    assert!(check_space(Path::new("/d"), need, None).is_ok());
}
