//! Weakly connected components in one pass with a disjoint-set forest (CLIP
//! ATC'17 §3.2 and §4.4, Algorithm 2): a beyond-neighborhood algorithm — the
//! union of `u` and `v` follows parent pointers to arbitrary vertices.
//!
//! CLIP's two locality rules are kept: the smaller root becomes the parent, and
//! blocks stream row-major. Unions are lock-free (compare-and-swap on the larger
//! root, finds with path halving), so the pass may run on many threads; every
//! root is its set's smallest id, so the labels are the same for any order or
//! thread count. Edge direction is ignored. A final sweep in ascending id order
//! flattens the forest (a parent always has a smaller id than its child).

use crate::{Output, Params, Result, Run};
use outcore_engine::{prefetch, Mode, StreamEngine};
use std::sync::atomic::{AtomicU32, Ordering::Relaxed};

#[inline]
fn find(pa: &[AtomicU32], mut x: u32) -> u32 {
    loop {
        let p = pa[x as usize].load(Relaxed);
        if p == x {
            return x;
        }
        let g = pa[p as usize].load(Relaxed);
        if g != p {
            // Path halving: x skips to its grandparent. x is not a root (and never
            // will be again), and every value stored into a non-root is one of its
            // ancestors, so a plain store is safe even if another thread halved the
            // same path meanwhile: either value is a valid, smaller parent.
            pa[x as usize].store(g, Relaxed);
        }
        x = g;
    }
}

/// Joins the sets of `u` and `v`; the larger root points to the smaller.
#[inline]
pub fn union(pa: &[AtomicU32], u: u32, v: u32) {
    let (mut a, mut b) = (u, v);
    loop {
        a = find(pa, a);
        b = find(pa, b);
        if a == b {
            return;
        }
        let (hi, lo) = if a > b { (a, b) } else { (b, a) };
        if pa[hi as usize]
            .compare_exchange(hi, lo, Relaxed, Relaxed)
            .is_ok()
        {
            return;
        }
    }
}

/// Points every vertex at its root (its set's smallest id) and returns the number
/// of sets: in ascending order, a parent is smaller and already final.
pub fn flatten(pa: &mut [u32]) -> u64 {
    let mut components = 0u64;
    for v in 0..pa.len() {
        let p = pa[v] as usize;
        if p == v {
            components += 1;
        } else {
            pa[v] = pa[p];
        }
    }
    components
}

pub fn run(e: &mut StreamEngine, _p: &Params) -> Result<Run> {
    let mut pa = e.alloc::<u32>("parent", 0)?;
    {
        let a = pa.atomic();
        e.vmap(|v| a[v as usize].store(v, Relaxed));
    }
    e.activate_all();
    {
        let a = pa.atomic();
        // Each target's parent slot is prefetched AHEAD edges early: the targets
        // are random within the block's column interval.
        e.exec_ahead(Mode::Multi, |v| prefetch(a, v), |_, u, v, _| union(a, u, v))?;
    }
    let components = flatten(&mut pa);
    Ok(Run {
        output: Output::Labels(pa),
        iterations: 1,
        summary: format!("{components} components"),
    })
}
