//! Look-ahead hints for the edge pass: what [`StreamEngine::exec_ahead`] and
//! its siblings call ahead of the edge function so that its random vertex
//! accesses are started early ([`prefetch`]). A hint has no effect on any
//! value; an iteration with hints is exactly the one without.
//!
//! [`StreamEngine::exec_ahead`]: super::StreamEngine::exec_ahead

/// How many edges ahead of the one being applied the jobs engine hints a
/// target ([`crate::Job::ahead`]; about a memory latency's worth of edge work).
pub const AHEAD: usize = 32;

/// How many edges ahead of the one being applied [`super::StreamEngine::exec_ahead`]
/// hints a target. Longer than [`AHEAD`]: once an edge function is a load, an
/// add and a store (pagerank's runs, [`super::StreamEngine::exec_runs`]), 32 edges
/// are less than a miss to memory. Measured (docs/benchmarks.md, design
/// notes): warm pagerank x10 on Kronecker 24, two threads, 13.2 s at 32 and
/// 11.6 s at 192 (medians of three); on Kronecker 22 one thread, 96 and 192
/// beat 32 in three sittings of four, and 384 was no clear gain; wcc and bfs
/// unchanged.
pub const STREAM_AHEAD: usize = 192;

/// How many runs ahead of the one being applied a pass hints a source
/// ([`Hint::source`]).
pub const SOURCE_AHEAD: usize = 16;

/// Starts loading `slice[i]` into the cache (a hint: no effect on any value, and
/// nothing happens when `i` is out of bounds or the platform has no prefetch).
#[inline(always)]
pub fn prefetch<T>(slice: &[T], i: u32) {
    #[cfg(target_arch = "x86_64")]
    if let Some(x) = slice.get(i as usize) {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        // SAFETY: SSE is part of the x86_64 baseline, and a prefetch never faults
        // nor writes: it only starts a cache fill for a live element's address.
        unsafe { _mm_prefetch::<_MM_HINT_T0>(x as *const T as *const i8) };
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (slice, i);
}

/// [`prefetch`] of `slice[v]` for every `v` in `vs` (a [`crate::Job::ahead`] body).
#[inline(always)]
pub fn prefetch_each<T>(slice: &[T], vs: &[u32]) {
    for &v in vs {
        prefetch(slice, v);
    }
}

/// The look-ahead hints of a pass. `target(v)` is called for each target
/// [`STREAM_AHEAD`] edges before its edge is applied; `source(u)` for each
/// source [`SOURCE_AHEAD`] runs before its run is (within one thread's
/// share, active or not). Any `Fn(u32)` is a target hint with no source
/// hint; [`Hints`] pairs the two.
pub trait Hint: Sync {
    /// Whether [`Hint::source`] does anything: a pass without a source hint
    /// then has no per-run test for it.
    const SOURCE: bool = false;
    /// Hints target `v`'s state.
    fn target(&self, v: u32);
    /// Hints source `u`'s state (its message); nothing by default.
    #[inline(always)]
    fn source(&self, _u: u32) {}
}

impl<F: Fn(u32) + Sync> Hint for F {
    #[inline(always)]
    fn target(&self, v: u32) {
        self(v)
    }
}

/// A target hint and a source hint: `Hints(|v| prefetch(sums, v), |u|
/// prefetch(messages, u))`.
pub struct Hints<T, S>(pub T, pub S);

impl<T: Fn(u32) + Sync, S: Fn(u32) + Sync> Hint for Hints<T, S> {
    const SOURCE: bool = true;
    #[inline(always)]
    fn target(&self, v: u32) {
        (self.0)(v)
    }
    #[inline(always)]
    fn source(&self, u: u32) {
        (self.1)(u)
    }
}
