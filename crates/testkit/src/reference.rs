//! Simple in-memory reference implementations: the answers the engines must
//! reproduce, written as plainly as possible (queue BFS, binary-heap Dijkstra,
//! sequential union-find, greedy MIS in id order, power-iteration PageRank).
//! Edge direction is as given; WCC and MIS treat edges as undirected.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

/// A graph in memory: `n` vertices, directed edges `(u, v, w)`.
#[derive(Debug, Clone, Default)]
pub struct MemGraph {
    pub n: u32,
    pub edges: Vec<(u32, u32, f32)>,
}

impl MemGraph {
    /// Reads a bin32 (or bin32w when `weighted`) edge list.
    pub fn from_bin(bytes: &[u8], n: u32, weighted: bool) -> MemGraph {
        let rec = if weighted { 12 } else { 8 };
        let edges = bytes
            .chunks_exact(rec)
            .map(|r| {
                let u = u32::from_le_bytes(r[0..4].try_into().unwrap());
                let v = u32::from_le_bytes(r[4..8].try_into().unwrap());
                let w = if weighted {
                    f32::from_le_bytes(r[8..12].try_into().unwrap())
                } else {
                    1.0
                };
                (u, v, w)
            })
            .collect();
        MemGraph { n, edges }
    }
    /// Adds the reverse of every edge but a self-loop (its own reverse, stored
    /// once, as `ingest --undirected` does).
    pub fn undirected(&self) -> MemGraph {
        let mut edges = self.edges.clone();
        edges.extend(
            self.edges
                .iter()
                .filter(|e| e.0 != e.1)
                .map(|&(u, v, w)| (v, u, w)),
        );
        MemGraph { n: self.n, edges }
    }
    fn out_lists(&self) -> Vec<Vec<(u32, f32)>> {
        let mut adj = vec![Vec::new(); self.n as usize];
        for &(u, v, w) in &self.edges {
            adj[u as usize].push((v, w));
        }
        adj
    }
}

/// BFS depths from `root` (`None`: unreachable).
pub fn bfs(g: &MemGraph, root: u32) -> Vec<Option<u32>> {
    let adj = g.out_lists();
    let mut d = vec![None; g.n as usize];
    d[root as usize] = Some(0);
    let mut q = VecDeque::from([root]);
    while let Some(u) = q.pop_front() {
        let du = d[u as usize].unwrap();
        for &(v, _) in &adj[u as usize] {
            if d[v as usize].is_none() {
                d[v as usize] = Some(du + 1);
                q.push_back(v);
            }
        }
    }
    d
}

/// Dijkstra with `f32` sums (`fl(d(u) + w)`), the values relaxation converges to.
pub fn sssp(g: &MemGraph, root: u32) -> Vec<Option<f32>> {
    let adj = g.out_lists();
    let mut d: Vec<Option<f32>> = vec![None; g.n as usize];
    let mut done = vec![false; g.n as usize];
    d[root as usize] = Some(0.0);
    let mut h = BinaryHeap::from([Reverse((0u32, root))]);
    while let Some(Reverse((bits, u))) = h.pop() {
        if done[u as usize] {
            continue;
        }
        done[u as usize] = true;
        let du = f32::from_bits(bits);
        for &(v, w) in &adj[u as usize] {
            let nd = du + w;
            if d[v as usize].is_none_or(|x| nd < x) {
                d[v as usize] = Some(nd);
                h.push(Reverse((nd.to_bits(), v)));
            }
        }
    }
    d
}

/// Weakly connected components: each vertex labelled with its component's
/// smallest id.
pub fn wcc(g: &MemGraph) -> Vec<u32> {
    let mut pa: Vec<u32> = (0..g.n).collect();
    fn find(pa: &mut [u32], x: u32) -> u32 {
        let mut r = x;
        while pa[r as usize] != r {
            r = pa[r as usize];
        }
        let mut y = x;
        while pa[y as usize] != r {
            let nx = pa[y as usize];
            pa[y as usize] = r;
            y = nx;
        }
        r
    }
    for &(u, v, _) in &g.edges {
        let (a, b) = (find(&mut pa, u), find(&mut pa, v));
        if a != b {
            pa[a.max(b) as usize] = a.min(b);
        }
    }
    (0..g.n).map(|v| find(&mut pa, v)).collect()
}

/// Linearized belief propagation (Gatterbauer et al. VLDB'15, two classes):
/// `x <- e + 2h A^T x - 4h^2 D x` from `x = e`, `D` the out-degrees, until an
/// iteration changes `x` by at most `tolerance` (L1) or after `cap`
/// iterations; returns the beliefs `1/2 + x`.
pub fn linbp(g: &MemGraph, e: &[f64], h: f64, tolerance: f64, cap: u64) -> Vec<f64> {
    let n = g.n as usize;
    let mut deg = vec![0f64; n];
    for &(u, _, _) in &g.edges {
        deg[u as usize] += 1.0;
    }
    let mut x = e.to_vec();
    for _ in 0..cap {
        let mut s = vec![0f64; n];
        for &(u, v, _) in &g.edges {
            s[v as usize] += x[u as usize];
        }
        let next: Vec<f64> = (0..n)
            .map(|v| e[v] + 2.0 * h * s[v] - 4.0 * h * h * deg[v] * x[v])
            .collect();
        let change: f64 = next.iter().zip(&x).map(|(a, b)| (a - b).abs()).sum();
        x = next;
        if change <= tolerance {
            break;
        }
    }
    x.iter().map(|x| 0.5 + x).collect()
}

/// Strongly connected components by Kosaraju's two searches (iterative): a
/// post-order over the edges, then searches over the reversed edges in reverse
/// post-order; each vertex labelled with the smallest id of its component.
pub fn scc(g: &MemGraph) -> Vec<u32> {
    let n = g.n as usize;
    let mut fwd = vec![Vec::new(); n];
    let mut rev = vec![Vec::new(); n];
    for &(u, v, _) in &g.edges {
        fwd[u as usize].push(v);
        rev[v as usize].push(u);
    }
    let mut seen = vec![false; n];
    let mut post = Vec::with_capacity(n);
    for s in 0..n {
        if seen[s] {
            continue;
        }
        seen[s] = true;
        let mut stack = vec![(s, 0usize)];
        while let Some((v, i)) = stack.pop() {
            if let Some(&w) = fwd[v].get(i) {
                stack.push((v, i + 1));
                if !seen[w as usize] {
                    seen[w as usize] = true;
                    stack.push((w as usize, 0));
                }
            } else {
                post.push(v);
            }
        }
    }
    let mut comp = vec![u32::MAX; n];
    for &s in post.iter().rev() {
        if comp[s] != u32::MAX {
            continue;
        }
        let mut members = vec![s];
        comp[s] = s as u32;
        let mut i = 0;
        while i < members.len() {
            let v = members[i];
            i += 1;
            for &u in &rev[v] {
                if comp[u as usize] == u32::MAX {
                    comp[u as usize] = s as u32;
                    members.push(u as usize);
                }
            }
        }
        let smallest = *members.iter().min().expect("nonempty") as u32;
        for v in members {
            comp[v] = smallest;
        }
    }
    comp
}

/// The greedy maximal independent set in id order (lexicographically first);
/// self-loops ignored.
pub fn greedy_mis(g: &MemGraph) -> Vec<bool> {
    let und = g.undirected();
    let adj = und.out_lists();
    let mut in_set = vec![false; g.n as usize];
    for v in 0..g.n as usize {
        in_set[v] = !adj[v]
            .iter()
            .any(|&(x, _)| (x as usize) < v && in_set[x as usize]);
    }
    in_set
}

/// LDBC Graphalytics PageRank, `iters` iterations from `1/n`.
pub fn pagerank(g: &MemGraph, d: f64, iters: u64) -> Vec<f64> {
    let n = g.n as usize;
    let mut deg = vec![0u64; n];
    for &(u, _, _) in &g.edges {
        deg[u as usize] += 1;
    }
    let mut pr = vec![1.0 / n as f64; n];
    for _ in 0..iters {
        let dangling: f64 = (0..n).filter(|&v| deg[v] == 0).map(|v| pr[v]).sum();
        let mut s = vec![0.0; n];
        for &(u, v, _) in &g.edges {
            s[v as usize] += pr[u as usize] / deg[u as usize] as f64;
        }
        pr = s
            .iter()
            .map(|x| (1.0 - d) / n as f64 + d * (x + dangling / n as f64))
            .collect();
    }
    pr
}

/// `y = A^T 1` with the edge weights.
pub fn spmv(g: &MemGraph) -> Vec<f64> {
    let mut y = vec![0.0; g.n as usize];
    for &(u, v, w) in &g.edges {
        let _ = u;
        y[v as usize] += w as f64;
    }
    y
}

/// The cut between the vertices with `side[v] == 1` and the rest (edges either
/// way, each once) and the out-degree volume of each: `(cut, vol(S), vol(rest))`.
pub fn conductance(g: &MemGraph, side: &[u32]) -> (u64, u64, u64) {
    let (mut cut, mut vol) = (0u64, [0u64; 2]);
    for &(u, v, _) in &g.edges {
        vol[side[u as usize] as usize] += 1;
        cut += (side[u as usize] != side[v as usize]) as u64;
    }
    (cut, vol[1], vol[0])
}

/// Brandes' betweenness along out-edges (unweighted, every parallel edge a
/// path of its own), summed over `sources`, unscaled.
pub fn brandes(g: &MemGraph, sources: &[u32]) -> Vec<f64> {
    let adj = g.out_lists();
    let n = g.n as usize;
    let mut bc = vec![0f64; n];
    for &s in sources {
        let mut dist = vec![u32::MAX; n];
        let mut sigma = vec![0f64; n];
        let mut order = Vec::new();
        dist[s as usize] = 0;
        sigma[s as usize] = 1.0;
        let mut q = VecDeque::from([s]);
        while let Some(u) = q.pop_front() {
            order.push(u);
            for &(v, _) in &adj[u as usize] {
                if dist[v as usize] == u32::MAX {
                    dist[v as usize] = dist[u as usize] + 1;
                    q.push_back(v);
                }
                if dist[v as usize] == dist[u as usize] + 1 {
                    sigma[v as usize] += sigma[u as usize];
                }
            }
        }
        let mut delta = vec![0f64; n];
        for &u in order.iter().rev() {
            for &(w, _) in &adj[u as usize] {
                if dist[w as usize] == dist[u as usize] + 1 {
                    delta[u as usize] +=
                        sigma[u as usize] / sigma[w as usize] * (1.0 + delta[w as usize]);
                }
            }
            if u != s {
                bc[u as usize] += delta[u as usize];
            }
        }
    }
    bc
}

/// The exact diameter along out-edges: the largest finite BFS depth over all
/// sources (all-pairs BFS).
pub fn diameter(g: &MemGraph) -> u32 {
    (0..g.n)
        .map(|s| bfs(g, s).into_iter().flatten().max().unwrap_or(0))
        .max()
        .unwrap_or(0)
}

/// The weights of a minimum spanning forest of `g` (edges taken as undirected),
/// ascending: Prim's algorithm from every vertex not yet reached, with a binary
/// heap. Every minimum spanning forest has this multiset of weights.
pub fn mst_weights(g: &MemGraph) -> Vec<f32> {
    // Weights ordered by their bits made monotone (negative ones included).
    let key = |w: f32| {
        let b = w.to_bits();
        if b >> 31 == 1 {
            !b
        } else {
            b | 1 << 31
        }
    };
    let mut adj = vec![Vec::new(); g.n as usize];
    for &(u, v, w) in &g.edges {
        if u != v {
            adj[u as usize].push((v, w));
            adj[v as usize].push((u, w));
        }
    }
    let mut inside = vec![false; g.n as usize];
    let mut out = Vec::new();
    for s in 0..g.n {
        if inside[s as usize] {
            continue;
        }
        let mut heap = BinaryHeap::new();
        heap.push(Reverse((0u32, s, 0u32)));
        let mut first = true;
        while let Some(Reverse((_, v, w))) = heap.pop() {
            if inside[v as usize] {
                continue;
            }
            inside[v as usize] = true;
            if !first {
                out.push(f32::from_bits(w));
            }
            first = false;
            for &(x, wx) in &adj[v as usize] {
                if !inside[x as usize] {
                    heap.push(Reverse((key(wx), x, wx.to_bits())));
                }
            }
        }
    }
    out.sort_by(f32::total_cmp);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn references_on_a_small_graph() {
        // 0 -> 1 -> 2, 0 -> 2 (weight 5), 3 isolated, 4 -> 4 self-loop
        let g = MemGraph {
            n: 5,
            edges: vec![(0, 1, 1.0), (1, 2, 1.5), (0, 2, 5.0), (4, 4, 1.0)],
        };
        assert_eq!(bfs(&g, 0), vec![Some(0), Some(1), Some(1), None, None]);
        assert_eq!(
            sssp(&g, 0),
            vec![Some(0.0), Some(1.0), Some(2.5), None, None]
        );
        assert_eq!(wcc(&g), vec![0, 0, 0, 3, 4]);
        assert_eq!(greedy_mis(&g), vec![true, false, false, true, true]);
        let pr = pagerank(&g, 0.85, 20);
        assert!((pr.iter().sum::<f64>() - 1.0).abs() < 1e-12);
        assert_eq!(spmv(&g), vec![0.0, 1.0, 6.5, 0.0, 1.0]);
    }
}
