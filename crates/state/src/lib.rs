//! # outcore-state — vertex state for the engines
//!
//! Design (CLIP ATC'17 §3.3): vertex properties are typed arrays indexed by dense
//! vertex id that any edge function may read and write ("beyond the neighborhood").
//! A [`StateBudget`] hands them out: an array is held in anonymous memory while the
//! budget allows, and is otherwise backed by a file in the work directory mapped
//! with `mmap`, so the kernel pages it in and out under the memory limit — CLIP's
//! answer to vertex data that exceeds memory. The file is unlinked right after it
//! is mapped, so nothing is left behind even if the process is killed.
//!
//! Invariants:
//! * an array has exactly `len` elements of `T`, initialised by the allocator;
//! * [`VertexArray::atomic`] views the same memory as atomics (`u32`/`f32` as
//!   `AtomicU32`, `u64`/`f64` as `AtomicU64`); shared (`&`) access is the only way
//!   to get such a view, so plain and atomic writes never overlap;
//! * [`AtomicBitmap`] bits are set with `fetch_or`, so concurrent setters agree on
//!   who set a bit first.

mod array;
mod bitmap;

pub use array::{AtomicRepr, Backing, StateBudget, VertexArray};
pub use bitmap::AtomicBitmap;

/// Adds `x` to the `f64` stored in `a` (compare-and-swap loop).
pub fn atomic_add_f64(a: &std::sync::atomic::AtomicU64, x: f64) {
    use std::sync::atomic::Ordering::Relaxed;
    let mut cur = a.load(Relaxed);
    loop {
        let new = (f64::from_bits(cur) + x).to_bits();
        match a.compare_exchange_weak(cur, new, Relaxed, Relaxed) {
            Ok(_) => return,
            Err(c) => cur = c,
        }
    }
}

/// Lowers the `f32` stored (as bits) in `a` to `x` if `x` is smaller; returns
/// true when it did. Only for non-negative, non-NaN values, whose bit patterns
/// order like the numbers.
pub fn atomic_min_f32(a: &std::sync::atomic::AtomicU32, x: f32) -> bool {
    debug_assert!(x >= 0.0);
    a.fetch_min(x.to_bits(), std::sync::atomic::Ordering::Relaxed) > x.to_bits()
}
