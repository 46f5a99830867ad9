//! Maximal independent set in one pass: greedy after sorting (CLIP ATC'17 §5.3.1).
//!
//! `sort` orders the edges by their larger endpoint (then the smaller); one
//! single-threaded pass then removes a vertex `hi` from the set when an edge joins
//! it to a smaller vertex `lo` still in the set. When the edges of `hi` arrive,
//! every smaller vertex is final, so the result is the lexicographically first
//! maximal independent set (the greedy set in id order) for any partitioning or
//! block order. Edge direction is ignored; self-loops are ignored.

use crate::{Output, Params, Result, Run};
use outcore_engine::StreamEngine;

pub fn run(e: &mut StreamEngine, _p: &Params) -> Result<Run> {
    let sorted = e.sort("mis-by-larger-endpoint", |u, v, _| {
        ((u.max(v) as u64) << 32) | u.min(v) as u64
    })?;
    let mut in_mis = e.alloc::<u32>("in-mis", 1)?;
    e.exec_sorted(&sorted, |u, v, _| {
        let (hi, lo) = if u > v { (u, v) } else { (v, u) };
        if hi != lo && in_mis[lo as usize] == 1 {
            in_mis[hi as usize] = 0;
        }
    })?;
    let size = in_mis.iter().filter(|&&x| x == 1).count();
    Ok(Run {
        output: Output::Flags(in_mis),
        iterations: 1,
        summary: format!("{size} vertices in the set"),
    })
}
