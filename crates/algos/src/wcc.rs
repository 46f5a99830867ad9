//! Weakly connected components in one pass with a disjoint-set forest (CLIP
//! ATC'17 §3.2 and §4.4, Algorithm 2): a beyond-neighborhood algorithm — the
//! union of `u` and `v` follows parent pointers to arbitrary vertices.
//!
//! CLIP's two locality rules are kept: the smaller root becomes the parent, and
//! blocks stream row-major. Unions are lock-free (compare-and-swap on the larger
//! root, finds with path halving), so the pass may run on many threads; every
//! root is its set's smallest id, so the labels are the same for any order or
//! thread count. Edge direction is ignored. A final sweep points every vertex
//! at its root, on the pool's threads.
//!
//! Afforest's skip (Sutton, Ben-Nun and Barak, IPDPS'18), adapted to a grid:
//! a bitmap marks vertices known to be in one set, the marked set; an edge
//! with both ends marked is skipped — they are in one set already, and sets
//! only grow. After the first 1/64 of the rows and again after 1/4 of them
//! the forest is flattened and the set holding most of 1024 evenly spaced
//! vertices (the giant one, on a small-world graph) is marked whole; between
//! and after the looks whatever an edge joins to the marked set is marked
//! too (the other end of an edge with a marked end, once unioned), so the
//! marked set keeps up with the giant set as the rows stream. An edge with
//! one marked end is unioned with the marked set's root as of the last look
//! rather than with that end: its path is short and in cache.
//!
//! The pass takes a block a share of sources at a time
//! ([`StreamEngine::exec_cuts`]): a flat loop over the share's targets notes
//! the unmarked ones, and then only the sources' runs with an unmarked
//! source or a noted target do any work. Most runs of a 64 x 64 grid hold
//! one edge, and a branch per run cost more than the edge's bitmap test.
//! Kronecker 24: 16.5M of 268M edges unioned (33.7M when only the looks
//! marked vertices). The grid is still read once, whole: the skip saves the
//! finds, not the reads.
//!
//! On a store with in-lists (`--in-edges`, or undirected) whose lists the
//! page cache holds, wcc runs Afforest as published instead, from the CSR
//! lists (`CsrLists`, `program/whole_lists.rs` in the engine): two
//! out-edges of every vertex unioned, the largest set marked, then the
//! out- and in-lists of the vertices outside it unioned whole — an edge
//! with an unmarked end is in one of them. It reads the out-lists whole
//! (4 bytes an edge, more than the bit-packed grid) but unions a few
//! edges a vertex: Kronecker 22 in memory, 0.22 s against 0.35 s for the
//! grid pass.

use crate::{Output, Params, Result, Run};
use outcore_engine::{prefetch, BlockOrder, BottomUp, CsrLists, Dir, Mode, Share, StreamEngine};
use outcore_state::{AtomicBitmap, VertexArray};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering::Relaxed};

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

/// The grid rows after which the giant component is looked for, as fractions
/// of the rows (numerator, denominator), each at least one row: after 1/64
/// and after 1/4 of them.
const LOOKS: [(u32, u32); 2] = [(1, 64), (1, 4)];
/// Vertices sampled (evenly spaced) to find the giant component's root.
const SAMPLES: u32 = 1024;

/// Marks in `giant` the vertices of the largest set among [`SAMPLES`]
/// evenly spaced vertices, pointing every vertex at its root on the way (one
/// sweep); no union runs meanwhile. `rep` is a vertex of the set marked so
/// far: when the largest set holds it, the marks stand and only the new
/// members are marked; otherwise the marks are cleared first. Returns the
/// largest set's root.
fn look(e: &StreamEngine, pa: &[AtomicU32], giant: &AtomicBitmap, rep: u32) -> u32 {
    let n = e.vertices();
    let k = SAMPLES.min(n);
    let mut roots: Vec<u32> = (0..k)
        .map(|i| find(pa, (i as u64 * n as u64 / k as u64) as u32))
        .collect();
    roots.sort_unstable();
    let Some(c) = roots
        .chunk_by(|a, b| a == b)
        .max_by_key(|run| run.len())
        .map(|run| run[0])
    else {
        return rep;
    };
    if find(pa, rep) != c {
        giant.clear_all();
    }
    e.vmap(|v| {
        let r = find(pa, v);
        pa[v as usize].store(r, Relaxed);
        if r == c && !giant.get(v) {
            giant.set(v);
        }
    });
    c
}

/// Unions the edges of a share whose ends are not both marked, and marks
/// what joins the marked set. Marked vertices are all in one set, `rep`'s
/// (sets only grow), so an edge between two of them changes nothing, and an
/// edge with one marked end is the union of the other end with `rep`, whose
/// path is short and in cache. First a flat loop over the share's targets
/// notes the positions of unmarked targets; then the sources: a marked
/// source unions only its noted targets (marking them), an unmarked one each
/// of its targets, marking itself at the first marked one and skipping the
/// marked ones after it. Returns the unions run.
fn union_share(pa: &[AtomicU32], g: &AtomicBitmap, rep: u32, sh: &Share<'_>) -> u64 {
    thread_local! {
        static OPEN: std::cell::RefCell<Vec<u32>> = const { std::cell::RefCell::new(Vec::new()) };
    }
    OPEN.with_borrow_mut(|open| {
        // Branch-free: every target's position is written, and the count
        // moves past it when the target is unmarked.
        let ts = sh.targets();
        if open.len() < ts.len() {
            open.resize(ts.len(), 0);
        }
        let base = sh.offs[0];
        let mut n = 0;
        for (i, &v) in ts.iter().enumerate() {
            open[n] = base + i as u32;
            n += usize::from(!g.get(v));
        }
        let open = &open[..n];
        // Parent slots are hinted this many noted targets ahead.
        const HINT: usize = 8;
        for &i in open.iter().take(HINT) {
            prefetch(pa, sh.dsts[i as usize]);
        }
        let (mut j, mut unions) = (0, 0u64);
        for (k, &u) in sh.srcs.iter().enumerate() {
            let (lo, hi) = (sh.offs[k], sh.offs[k + 1]);
            if g.get(u) {
                while j < open.len() && open[j] < hi {
                    if let Some(&i) = open.get(j + HINT) {
                        prefetch(pa, sh.dsts[i as usize]);
                    }
                    let v = sh.dsts[open[j] as usize];
                    union(pa, rep, v);
                    g.set(v);
                    j += 1;
                    unions += 1;
                }
            } else {
                while j < open.len() && open[j] < hi {
                    j += 1;
                }
                let mut joined = false;
                for &v in &sh.dsts[lo as usize..hi as usize] {
                    if !g.get(v) {
                        union(pa, u, v);
                        if joined {
                            g.set(v);
                        }
                        unions += 1;
                    } else if !joined {
                        union(pa, u, rep);
                        g.set(u);
                        joined = true;
                        unions += 1;
                    }
                }
            }
        }
        unions
    })
}

/// One pass over the grid; before the rows at 1/64 and at 1/4 of them the
/// vertices of the largest set so far are marked (Afforest's sampling,
/// Sutton et al. IPDPS'18, with the first rows as the sample), whatever an
/// edge joins to them is marked as it streams, and an edge between two
/// marked vertices is skipped: both ends already are in one set, a set only
/// grows. The labels do not depend on it. The mark bitmap (1 bit a vertex)
/// comes from the budget; without room, or with the blocks in column-major
/// order, the pass unions every edge.
pub fn run(e: &mut StreamEngine, _p: &Params) -> Result<Run> {
    let pa = e.alloc::<u32>("parent", 0)?;
    {
        let a = pa.atomic();
        e.vmap(|v| a[v as usize].store(v, Relaxed));
    }
    let n = e.vertices();
    let bitmap_bytes = (n as u64).div_ceil(64) * 8;
    if let Some(lists) = afforest_lists(e, bitmap_bytes)? {
        let r = afforest(e, &pa, &lists);
        lists.close(e);
        e.budget().give_back(bitmap_bytes);
        let summary = r?;
        let components = count(e, &pa);
        return Ok(Run {
            output: Output::Labels(pa),
            iterations: 1,
            summary: format!("{components} components ({summary})"),
        });
    }
    // Rows in order (the configured block order may be column-major).
    let rows_in_order = e.config().order == BlockOrder::RowMajor;
    let giant =
        (rows_in_order && e.budget().take(bitmap_bytes)).then(|| AtomicBitmap::new(n as usize));
    e.activate_all();
    // (edges unioned, vertices marked at the end), with the mark bitmap.
    let mut skip = None;
    {
        let a = pa.atomic();
        match &giant {
            Some(g) => {
                let p = e.store().partitions();
                // The marked set's root as of the last look (no vertex is
                // marked before the first).
                let rep = AtomicU32::new(0);
                let unioned = AtomicU64::new(0);
                // At least one row before the first look: a look before any
                // union would mark one vertex.
                let mut cuts: Vec<u32> = LOOKS.iter().map(|&(x, y)| (p * x / y).max(1)).collect();
                cuts.dedup();
                e.exec_cuts(
                    Mode::Multi,
                    &cuts,
                    |sh| {
                        let k = union_share(a, g, rep.load(Relaxed), sh);
                        unioned.fetch_add(k, Relaxed);
                    },
                    |e, _| {
                        rep.store(look(e, a, g, rep.load(Relaxed)), Relaxed);
                        Ok(())
                    },
                )?;
                skip = Some((unioned.into_inner(), g.count()));
                e.budget().give_back(bitmap_bytes);
            }
            None => {
                e.exec_ahead(Mode::Multi, |v| prefetch(a, v), |_, u, v, _| union(a, u, v))?;
            }
        }
    }
    let components = count(e, &pa);
    let summary = match skip {
        Some((unioned, marked)) => format!(
            "{components} components ({unioned} of {} edges unioned; the others lie inside the marked set, {marked} vertices)",
            e.store().edges()
        ),
        None => format!("{components} components (every edge unioned)"),
    };
    Ok(Run {
        output: Output::Labels(pa),
        iterations: 1,
        summary,
    })
}

/// Points every vertex at its root (its set's smallest id), on the pool's
/// threads, and returns the number of sets: no union runs, so a root stays
/// a root, and whatever a concurrent find stores into a slot is one of its
/// ancestors.
fn count(e: &StreamEngine, pa: &VertexArray<u32>) -> u64 {
    let a = pa.atomic();
    e.vcount(|v| {
        let r = find(a, v);
        a[v as usize].store(r, Relaxed);
        r == v
    })
}

/// Out-edges of every vertex unioned before the giant set is looked for.
const SAMPLED: usize = 2;

/// The store's lists in both directions, and the giant set's bitmap taken
/// from the budget, when wcc runs from the lists (`afforest`): the store has
/// in-lists (`--in-edges`, or undirected), the budget holds them, and the
/// page cache holds them (`--bottom-up auto`; `always` and `sparse` take
/// them whatever the cache holds, `never` streams the grid).
fn afforest_lists(e: &StreamEngine, bitmap_bytes: u64) -> Result<Option<CsrLists>> {
    let mode = e.config().bottom_up;
    if mode == BottomUp::Never
        || mode == BottomUp::Auto && CsrLists::cached_share(e) < CACHED
        || !e.budget().take(bitmap_bytes)
    {
        return Ok(None);
    }
    let lists = CsrLists::open(e)?;
    if lists.is_none() {
        e.budget().give_back(bitmap_bytes);
    }
    Ok(lists)
}

/// The share of the lists the page cache must hold for `--bottom-up auto`
/// to take them: read from the device, the out-lists alone (4 bytes an edge)
/// are more bytes than the bit-packed grid.
const CACHED: f64 = 0.9;

/// Afforest from the CSR lists (Sutton, Ben-Nun and Barak, IPDPS'18; gapbs's
/// `cc`): the first [`SAMPLED`] out-edges of every vertex unioned, the
/// largest set among [`SAMPLES`] evenly spaced vertices marked (`look`),
/// then the out-lists and the in-lists of every vertex outside it unioned
/// whole. Every edge with an end outside the marked set is in one of those
/// lists; an edge between two marked vertices joins nothing new (they are in
/// one set, and sets only grow). Returns the summary's detail.
fn afforest(e: &mut StreamEngine, pa: &VertexArray<u32>, lists: &CsrLists) -> Result<String> {
    let a = pa.atomic();
    let n = e.vertices();
    let sampled = lists.visit(e, Dir::Out, None, |u, vs| {
        for &v in vs.iter().take(SAMPLED) {
            union(a, u, v);
        }
    })?;
    let giant = AtomicBitmap::new(n as usize);
    look(e, a, &giant, 0);
    let marked = giant.count();
    let unioned = AtomicU64::new(0);
    let each = |u: u32, vs: &[u32]| {
        for &v in vs {
            union(a, u, v);
        }
        unioned.fetch_add(vs.len() as u64, Relaxed);
    };
    lists.visit(e, Dir::Out, Some(&giant), each)?;
    lists.visit(e, Dir::In, Some(&giant), each)?;
    Ok(format!(
        "from the CSR lists: {SAMPLED} out-edges a vertex sampled ({sampled} read), then the {} lists' edges of the {} vertices outside the marked set of {marked} unioned",
        unioned.into_inner(),
        n as u64 - marked
    ))
}
