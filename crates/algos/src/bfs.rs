//! Breadth-first search by relaxation with loaded-data re-entry (CLIP ATC'17 §3.1,
//! and the SSSP example of §4.4 with unit weights).
//!
//! Each vertex holds `depth << 32 | parent` in one `u64` updated with `fetch_min`,
//! so depth and parent always agree and the final parent is the smallest-id
//! in-neighbour one level up — the same answer for any thread count, block order,
//! MRT or partitioning. A vertex is activated only when its depth drops.

use crate::{Output, Params, Result, Run};
use outcore_engine::{prefetch, Mode, StreamEngine};
use std::sync::atomic::Ordering::Relaxed;

pub fn run(e: &mut StreamEngine, p: &Params) -> Result<Run> {
    let st = e.alloc::<u64>("bfs", u64::MAX)?;
    st.atomic()[p.root as usize].store(p.root as u64, Relaxed);
    e.activate(p.root);
    let mut it = 0;
    while e.has_active() && !crate::cap_reached(p, it) {
        let a = st.atomic();
        e.exec_ahead(
            Mode::Multi,
            |v| prefetch(a, v),
            |ctx, u, v, _| {
                let du = a[u as usize].load(Relaxed) >> 32;
                let cand = ((du + 1) << 32) | u as u64;
                let old = a[v as usize].fetch_min(cand, Relaxed);
                if old >> 32 > du + 1 {
                    ctx.activate(v);
                }
            },
        )?;
        it += 1;
    }
    Ok(Run {
        summary: summary(&st),
        output: Output::Bfs(st),
        iterations: it,
    })
}

/// The summary line of a BFS result (every engine's).
pub(crate) fn summary(st: &[u64]) -> String {
    let reached = st.iter().filter(|&&x| x != u64::MAX).count();
    let depth = st
        .iter()
        .filter(|&&x| x != u64::MAX)
        .map(|x| x >> 32)
        .max()
        .unwrap_or(0);
    format!("{reached} vertices reached, maximum depth {depth}")
}
