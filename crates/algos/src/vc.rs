//! BFS-like algorithms on the vertex-centric engine (BAsC + Norder, ATC'19 §5):
//! vertex values in memory, one engine iteration per BFS level or relaxation
//! round, the active vertices' edge lists read by page.
//!
//! - `bfs`, `sssp`, `wcc`: the edge programs [`Bfs`], [`Sssp`] and [`WccLp`] of
//!   [`crate::programs`], relaxed in place by the engine's adapter
//!   ([`VertexEngine::relax`]): the same answers as on every other engine (the
//!   smallest-id parent among the tied ones); `wcc` also walks in-edges when the
//!   store has them (a directed store needs `--in-edges`).
//! - `diam`: double sweep (§5): BFS from a seeded random vertex, then `rounds - 1`
//!   more BFS each from the farthest vertex of the previous one (smallest id among
//!   the farthest); the estimate is the largest depth seen, a lower bound of the
//!   diameter along out-edges, exact on trees and grids.
//! - `bc`: Brandes' betweenness (unweighted, along out-edges) accumulated from
//!   `sources` sampled sources (every vertex when `sources >= n`, which is exact);
//!   each source costs a forward pass by level and a backward pass re-reading the
//!   same levels' edge lists. The output is the unscaled sum over the sources
//!   (networkx `betweenness_centrality(normalized=False)` when all are used).
//! - `apsp`: BFS distances from `sources` sampled sources, 64 at a time with
//!   bit-parallel frontiers (one `u64` per vertex: which sources reached it), as
//!   Graphene does. The output per vertex is the sum of its distances from the
//!   sources that reach it; the run also returns each source's reach and
//!   eccentricity.
//!
//! Sampling: a seeded shuffle of `0..n` (dense ids), the first `sources` taken.

use crate::programs::{bfs_result, labels_result, sssp_result, Bfs, Sssp, WccLp};
use crate::{AlgoError, Output, Result, Run};
use outcore_engine::vertex::{Frontier, FrontierBuilder, VertexEngine, OUT};
use outcore_engine::{EngineError, ProgramRunner};
use outcore_state::VertexArray;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VAlgo {
    Bfs,
    Sssp,
    Wcc,
    Diam,
    Bc,
    Apsp,
}

impl VAlgo {
    pub const ALL: [VAlgo; 6] = [
        VAlgo::Bfs,
        VAlgo::Sssp,
        VAlgo::Wcc,
        VAlgo::Diam,
        VAlgo::Bc,
        VAlgo::Apsp,
    ];
    pub fn name(self) -> &'static str {
        match self {
            VAlgo::Bfs => "bfs",
            VAlgo::Sssp => "sssp",
            VAlgo::Wcc => "wcc",
            VAlgo::Diam => "diam",
            VAlgo::Bc => "bc",
            VAlgo::Apsp => "apsp",
        }
    }
    pub fn from_name(s: &str) -> Option<VAlgo> {
        VAlgo::ALL.into_iter().find(|a| a.name() == s)
    }
    pub fn needs_root(self) -> bool {
        matches!(self, VAlgo::Bfs | VAlgo::Sssp)
    }
    /// Reads weights (when the store has them; otherwise every edge weighs 1).
    pub fn weighted(self) -> bool {
        self == VAlgo::Sssp
    }
    /// Needs the in-edge CSR on a directed store.
    pub fn needs_in_edges(self, directed: bool) -> bool {
        self == VAlgo::Wcc && directed
    }
    /// Bytes per vertex of the algorithm's own arrays at their peak, rounded up
    /// (two frontier bitmaps of 1/8 byte each included): bfs a u64 (level and
    /// parent); sssp an f32 distance and a u32 parent, then the u64 result built
    /// from them; wcc a u32 label; diam two searches' results side by side; bc an
    /// f64 score, a u32 level, an f64 path count and an f64 dependency plus the
    /// kept levels (at most a u32 per vertex); apsp an f64 sum and three u64
    /// source masks. Measured on Kronecker 22 (peak memory less offsets, buffers
    /// and caches): bfs 9.0, sssp 17.0, bc 33.3, apsp 37.3. Budgets are checked
    /// against this x vertices before the engine starts.
    pub fn bytes_per_vertex(self) -> u64 {
        match self {
            VAlgo::Bfs => 10,
            VAlgo::Sssp => 18,
            VAlgo::Wcc => 6,
            VAlgo::Diam => 18,
            VAlgo::Bc => 36,
            VAlgo::Apsp => 40,
        }
    }
}

#[derive(Debug, Clone)]
pub struct VParams {
    pub root: u32,
    pub seed: u64,
    /// diam: BFS runs (at least 2 for a double sweep).
    pub rounds: u32,
    /// bc, apsp: sampled sources.
    pub sources: u32,
    /// A cap on iterations (levels) per search.
    pub iterations: Option<u64>,
    /// For a relabelled store, each dense id's rank in ascending user-id order
    /// ([`user_ranks`] of [`outcore_store::IdMap::user_order`]): sampling and
    /// tie-breaks then follow the user's ids, so answers do not depend on the order.
    pub user_rank: Option<Vec<u32>>,
}

impl Default for VParams {
    fn default() -> Self {
        VParams {
            root: 0,
            seed: 1,
            rounds: 2,
            sources: 128,
            iterations: None,
            user_rank: None,
        }
    }
}

/// Extra results beyond the per-vertex output.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct VExtra {
    /// diam: the estimate and the BFS starts, in dense ids.
    pub diameter: Option<u32>,
    pub starts: Vec<u32>,
    /// bc, apsp: the sampled sources (dense ids).
    pub sources: Vec<u32>,
    /// apsp: per source, vertices reached (itself included) and eccentricity.
    pub reach: Vec<u64>,
    pub eccentricity: Vec<u32>,
}

pub struct VRun {
    pub run: Run,
    pub extra: VExtra,
}

/// Runs `algo` on the engine.
pub fn run(e: &mut VertexEngine, algo: VAlgo, p: &VParams) -> Result<VRun> {
    let n = e.vertices();
    if algo.needs_root() && p.root as usize >= n {
        return Err(AlgoError::Invalid(format!(
            "root {} is not a vertex (the store has {n} vertices)",
            p.root
        )));
    }
    if matches!(algo, VAlgo::Bc | VAlgo::Apsp) && p.sources == 0 {
        return Err(AlgoError::Invalid("--sources must be at least 1".into()));
    }
    if algo == VAlgo::Diam && p.rounds == 0 {
        return Err(AlgoError::Invalid("--rounds must be at least 1".into()));
    }
    let relax = |e: &mut VertexEngine, r: Result<(Output, String)>| -> Result<VRun> {
        let (output, summary) = r?;
        Ok(VRun {
            run: Run {
                output,
                iterations: e.iterations(),
                summary,
            },
            extra: VExtra::default(),
        })
    };
    let cap = p.iterations;
    match algo {
        VAlgo::Bfs => {
            let r = e.relax(&Bfs { root: p.root, cap });
            relax(e, r.map(bfs_result).map_err(Into::into))
        }
        VAlgo::Sssp => {
            let r = e.relax(&Sssp { root: p.root, cap });
            let r = r.map_err(|err| match err {
                EngineError::BadEdge { program, u, v, w } => AlgoError::Invalid(format!(
                    "{program} needs non-negative weights, but edge ({u}, {v}) (dense ids) has weight {w}"
                )),
                err => err.into(),
            });
            relax(e, r.map(sssp_result))
        }
        VAlgo::Wcc => {
            let prog = WccLp {
                cap,
                both_directions: e.has_in_edges(),
            };
            let r = e.relax(&prog).map(labels_result);
            relax(e, r.map_err(Into::into))
        }
        VAlgo::Diam => diam(e, p),
        VAlgo::Bc => bc(e, p),
        VAlgo::Apsp => apsp(e, p),
    }
}

/// Each dense id's position in `order` (dense ids by ascending user id).
pub fn user_ranks(order: &[u32]) -> Vec<u32> {
    let mut r = vec![0u32; order.len()];
    for (k, &v) in order.iter().enumerate() {
        r[v as usize] = k as u32;
    }
    r
}

fn capped(cap: Option<u64>, it: u64) -> bool {
    cap.is_some_and(|k| it >= k)
}

/// BFS from `root` (the [`Bfs`] edge program): `depth << 32 | parent` per vertex,
/// iterations, and the farthest vertex — among the deepest, the smallest
/// `rank[v]` (v's position in user-id order; without ranks, the smallest dense id).
fn bfs(
    e: &mut VertexEngine,
    root: u32,
    cap: Option<u64>,
    rank: Option<&[u32]>,
) -> Result<(VertexArray<u64>, u64, u32)> {
    let out = e.relax(&Bfs { root, cap })?;
    let key = |v: usize| {
        (
            out[v] >> 32,
            std::cmp::Reverse(rank.map_or(v as u32, |r| r[v])),
        )
    };
    let far = (0..out.len())
        .filter(|&v| out[v] != u64::MAX)
        .fold(root as usize, |b, v| if key(v) > key(b) { v } else { b });
    Ok((out, e.iterations(), far as u32))
}

/// `k` vertices sampled by a seeded shuffle of the user-order ranks `0..n`.
pub fn sample_vertices(n: usize, k: u32, p: &VParams) -> Vec<u32> {
    let r = sample(n, k, p.seed);
    match &p.user_rank {
        Some(rank) => {
            // The vertices holding the sampled ranks, in the order sampled.
            let pos: std::collections::HashMap<u32, usize> =
                r.iter().enumerate().map(|(i, &x)| (x, i)).collect();
            let mut out = vec![0u32; r.len()];
            for (v, x) in rank.iter().enumerate() {
                if let Some(&i) = pos.get(x) {
                    out[i] = v as u32;
                }
            }
            out
        }
        None => r,
    }
}

/// A seeded shuffle of `0..n`, first `k` kept.
pub fn sample(n: usize, k: u32, seed: u64) -> Vec<u32> {
    let mut v: Vec<u32> = (0..n as u32).collect();
    let mut s = seed ^ 0xA076_1D64_78BD_642F;
    let k = (k as usize).min(n);
    for i in 0..k {
        let z = crate::mix64(s);
        s = s.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let j = i + (z % (n - i) as u64) as usize;
        v.swap(i, j);
    }
    v.truncate(k);
    v
}

fn diam(e: &mut VertexEngine, p: &VParams) -> Result<VRun> {
    let n = e.vertices();
    if n == 0 {
        return Err(AlgoError::Invalid("diam needs at least one vertex".into()));
    }
    let mut start = sample_vertices(n, 1, p)[0];
    let mut best = 0u32;
    let mut starts = Vec::new();
    let mut its = 0;
    let mut last: Option<VertexArray<u64>> = None;
    for _ in 0..p.rounds {
        starts.push(start);
        // Only the last sweep's tree is returned: free the previous one first.
        drop(last.take());
        let (out, it, far) = bfs(e, start, p.iterations, p.user_rank.as_deref())?;
        its += it;
        let depth = (out[far as usize] >> 32) as u32;
        best = best.max(depth);
        last = Some(out);
        start = far;
    }
    Ok(VRun {
        run: Run {
            output: Output::Bfs(last.expect("at least one round")),
            iterations: its,
            summary: format!(
                "diameter >= {best} ({} BFS from vertex {} on)",
                starts.len(),
                starts[0]
            ),
        },
        extra: VExtra {
            diameter: Some(best),
            starts,
            ..Default::default()
        },
    })
}

fn bc(e: &mut VertexEngine, p: &VParams) -> Result<VRun> {
    let n = e.vertices();
    let sources = sample_vertices(n, p.sources, p);
    let mut bc = vec![0f64; n];
    let mut level = vec![u32::MAX; n];
    let mut sigma = vec![0f64; n];
    let mut delta = vec![0f64; n];
    let mut its = 0u64;
    for &s in &sources {
        level[s as usize] = 0;
        sigma[s as usize] = 1.0;
        let mut levels: Vec<Frontier> = vec![Frontier::single(s)];
        loop {
            let d = levels.len() as u32 - 1;
            let mut next = FrontierBuilder::new(n);
            let cur = levels.last().expect("at least the source");
            e.iterate(OUT, cur, |u, ts, _| {
                let su = sigma[u as usize];
                for &v in ts {
                    let lv = &mut level[v as usize];
                    if *lv == u32::MAX {
                        *lv = d + 1;
                        next.insert(v);
                    }
                    if *lv == d + 1 {
                        sigma[v as usize] += su;
                    }
                }
            })?;
            its += 1;
            if next.is_empty() || capped(p.iterations, d as u64 + 1) {
                break;
            }
            levels.push(next.finish());
        }
        // Dependencies, deepest level first: delta(u) = sum over successors w of
        // sigma(u)/sigma(w) (1 + delta(w)).
        for d in (0..levels.len().saturating_sub(1)).rev() {
            let dd = d as u32;
            e.iterate(OUT, &levels[d], |u, ts, _| {
                let mut acc = 0.0;
                for &w in ts {
                    if level[w as usize] == dd + 1 {
                        acc += (1.0 + delta[w as usize]) / sigma[w as usize];
                    }
                }
                delta[u as usize] += sigma[u as usize] * acc;
            })?;
            its += 1;
        }
        for f in &levels {
            f.for_each(|v| {
                if v != s {
                    bc[v as usize] += delta[v as usize];
                }
                level[v as usize] = u32::MAX;
                sigma[v as usize] = 0.0;
                delta[v as usize] = 0.0;
            });
        }
    }
    let top = (0..n).max_by(|&a, &b| bc[a].total_cmp(&bc[b]).then(b.cmp(&a)));
    let summary = format!(
        "{} sources, highest centrality {:.6} (vertex {})",
        sources.len(),
        top.map_or(0.0, |t| bc[t]),
        top.unwrap_or(0)
    );
    Ok(VRun {
        run: Run {
            output: Output::Values(VertexArray::from_vec(bc)),
            iterations: its,
            summary,
        },
        extra: VExtra {
            sources,
            ..Default::default()
        },
    })
}

fn apsp(e: &mut VertexEngine, p: &VParams) -> Result<VRun> {
    let n = e.vertices();
    let sources = sample_vertices(n, p.sources, p);
    let mut sum = vec![0f64; n];
    let mut reach = vec![0u64; sources.len()];
    let mut ecc = vec![0u32; sources.len()];
    let mut its = 0u64;
    let mut seen = vec![0u64; n];
    let mut cur = vec![0u64; n];
    let mut nxt = vec![0u64; n];
    for (b, batch) in sources.chunks(64).enumerate() {
        seen.iter_mut().for_each(|x| *x = 0);
        cur.iter_mut().for_each(|x| *x = 0);
        for (i, &s) in batch.iter().enumerate() {
            seen[s as usize] |= 1 << i;
            cur[s as usize] |= 1 << i;
        }
        for i in 0..batch.len() {
            reach[b * 64 + i] = 1;
        }
        let mut frontier = Frontier::from_list(batch.to_vec());
        let mut d = 0u32;
        while !frontier.is_empty() && !capped(p.iterations, d as u64) {
            let mut next = FrontierBuilder::new(n);
            e.iterate(OUT, &frontier, |u, ts, _| {
                let m = cur[u as usize];
                for &v in ts {
                    let new = m & !seen[v as usize];
                    if new != 0 {
                        seen[v as usize] |= new;
                        nxt[v as usize] |= new;
                        next.insert(v);
                    }
                }
            })?;
            its += 1;
            d += 1;
            frontier.for_each(|u| cur[u as usize] = 0);
            let f = next.finish();
            f.for_each(|v| {
                let m = nxt[v as usize];
                nxt[v as usize] = 0;
                cur[v as usize] = m;
                sum[v as usize] += (m.count_ones() * d) as f64;
                let mut x = m;
                while x != 0 {
                    let i = x.trailing_zeros() as usize;
                    reach[b * 64 + i] += 1;
                    ecc[b * 64 + i] = d;
                    x &= x - 1;
                }
            });
            frontier = f;
        }
    }
    let pairs: u64 = reach.iter().sum();
    Ok(VRun {
        run: Run {
            output: Output::Values(VertexArray::from_vec(sum)),
            iterations: its,
            summary: format!(
                "{} sources, {pairs} reachable pairs, largest eccentricity {}",
                sources.len(),
                ecc.iter().max().copied().unwrap_or(0)
            ),
        },
        extra: VExtra {
            sources,
            reach,
            eccentricity: ecc,
            ..Default::default()
        },
    })
}
