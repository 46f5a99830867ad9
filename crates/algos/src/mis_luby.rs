//! Maximal independent set by Luby's randomized algorithm — the Monte Carlo
//! baseline of X-Stream and GridGraph (CLIP ATC'17 §5.3.1).
//!
//! Round `r`: every undecided vertex draws a priority `hash(seed, r, v)` (ties
//! broken by id); one pass clears `is_min` of the larger endpoint of every edge
//! between undecided vertices; the undecided vertices still minimal join the set;
//! a second pass removes their undecided neighbours. Rounds repeat until no
//! vertex is undecided (O(log n) rounds with high probability). Priorities depend
//! only on the seed, the round and the id, so the set is the same for any thread
//! count, partitioning or block order. Edge direction and self-loops are ignored.

use crate::{mix64, Output, Params, Result, Run};
use outcore_engine::{prefetch, Mode, StreamEngine};
use std::sync::atomic::Ordering::Relaxed;

const UNDECIDED: u32 = 0;
const IN: u32 = 1;
const OUT: u32 = 2;

fn priority(seed: u64, round: u64, v: u32) -> u64 {
    (mix64(seed ^ mix64(round ^ mix64(v as u64))) & !0xFFFF_FFFF) | v as u64
}

pub fn run(e: &mut StreamEngine, p: &Params) -> Result<Run> {
    let state = e.alloc::<u32>("mis-state", UNDECIDED)?;
    let is_min = e.alloc::<u32>("is-min", 0)?;
    let seed = p.seed;
    let mut round = 0u64;
    let mut passes = 0u64;
    loop {
        let st = state.atomic();
        let mn = is_min.atomic();
        // Undecided vertices are the sources that matter in both passes.
        let undecided = std::sync::atomic::AtomicU64::new(0);
        e.vmap(|v| {
            let s = st[v as usize].load(Relaxed);
            mn[v as usize].store((s == UNDECIDED) as u32, Relaxed);
            if s == UNDECIDED {
                undecided.fetch_add(1, Relaxed);
            }
        });
        if undecided.load(Relaxed) == 0 {
            break;
        }
        e.activate_all();
        e.exec_ahead(
            Mode::Multi,
            |v| prefetch(st, v),
            |_, u, v, _| {
                if u == v
                    || st[u as usize].load(Relaxed) != UNDECIDED
                    || st[v as usize].load(Relaxed) != UNDECIDED
                {
                    return;
                }
                let (pu, pv) = (priority(seed, round, u), priority(seed, round, v));
                let loser = if pu > pv { u } else { v };
                mn[loser as usize].store(0, Relaxed);
            },
        )?;
        e.vmap(|v| {
            if mn[v as usize].load(Relaxed) == 1 {
                st[v as usize].store(IN, Relaxed);
            }
        });
        e.activate_all();
        e.exec_ahead(
            Mode::Multi,
            |v| prefetch(st, v),
            |_, u, v, _| {
                if u == v {
                    return;
                }
                let (su, sv) = (st[u as usize].load(Relaxed), st[v as usize].load(Relaxed));
                if su == IN && sv == UNDECIDED {
                    st[v as usize].store(OUT, Relaxed);
                } else if sv == IN && su == UNDECIDED {
                    st[u as usize].store(OUT, Relaxed);
                }
            },
        )?;
        passes += 2;
        round += 1;
    }
    let mut flags = state;
    let mut size = 0u64;
    for x in flags.iter_mut() {
        *x = (*x == IN) as u32;
        size += *x as u64;
    }
    Ok(Run {
        output: Output::Flags(flags),
        iterations: passes,
        summary: format!("{size} vertices in the set after {round} rounds"),
    })
}
