//! Single-source shortest paths by Bellman-Ford relaxation with loaded-data
//! re-entry (CLIP ATC'17 §4.4, Algorithm 1).
//!
//! Distances are `f32` sums of the `f32` weights. Each vertex holds
//! `distance bits << 32 | parent` in one `u64` lowered with `fetch_min`: for
//! non-negative floats the bit patterns order like the values, so the pair stays
//! consistent and the fixed point — the least solution of
//! `d(v) = min over (u, v) of fl(d(u) + w)` — is reached whatever the order.
//! A negative (or NaN) weight met by the search stops the run with an error
//! naming the edge.

use crate::{AlgoError, Output, Params, Result, Run};
use outcore_engine::{prefetch, Mode, StreamEngine};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

pub fn run(e: &mut StreamEngine, p: &Params) -> Result<Run> {
    e.with_weights(true);
    let st = e.alloc::<u64>("sssp", u64::MAX)?;
    st.atomic()[p.root as usize].store(p.root as u64, Relaxed);
    e.activate(p.root);
    let bad = AtomicU64::new(u64::MAX);
    let bad_w = AtomicU64::new(0);
    let mut it = 0;
    while e.has_active() && !crate::cap_reached(p, it) {
        let a = st.atomic();
        e.exec_ahead(
            Mode::Multi,
            |v| prefetch(a, v),
            |ctx, u, v, w| {
                if w < 0.0 || w.is_nan() {
                    bad.store(((u as u64) << 32) | v as u64, Relaxed);
                    bad_w.store(w.to_bits() as u64, Relaxed);
                    return;
                }
                let du = f32::from_bits((a[u as usize].load(Relaxed) >> 32) as u32);
                let dv = du + w;
                let cand = ((dv.to_bits() as u64) << 32) | u as u64;
                let old = a[v as usize].fetch_min(cand, Relaxed);
                if old >> 32 > cand >> 32 {
                    ctx.activate(v);
                }
            },
        )?;
        it += 1;
        let b = bad.load(Relaxed);
        if b != u64::MAX {
            let ids = e.store().id_map()?;
            return Err(AlgoError::Invalid(format!(
                "sssp needs non-negative weights, but edge ({}, {}) has weight {}",
                ids.to_user((b >> 32) as u32),
                ids.to_user(b as u32),
                f32::from_bits(bad_w.load(Relaxed) as u32)
            )));
        }
    }
    Ok(Run {
        summary: summary(&st),
        output: Output::Sssp(st),
        iterations: it,
    })
}

/// The summary line of an SSSP result (every engine's).
pub(crate) fn summary(st: &[u64]) -> String {
    let reached = st.iter().filter(|&&x| x != u64::MAX).count();
    let far = st
        .iter()
        .filter(|&&x| x != u64::MAX)
        .map(|x| f32::from_bits((x >> 32) as u32))
        .fold(0f32, f32::max);
    format!("{reached} vertices reached, largest distance {far}")
}
