//! Independent checks of results (`outcore run --verify`, `outcore dist run
//! --verify`).
//!
//! The checks read the graph through [`EdgeSource`] — whole sequential passes
//! over a store's grid, or over a distributed layout's edge chunks streamed to
//! rank 0 (no engine, no re-entry, no threads) — and test properties rather than
//! replaying the algorithm:
//! * BFS and SSSP — the Graph500 validation rules: the root is at 0 and its own
//!   parent; every reached vertex's parent is reached, one level (or exactly the
//!   edge weight) closer, and joined to it by an edge of the graph; the parent
//!   pointers form a tree (no cycles); every edge from a reached vertex leads to a
//!   reached vertex at most one level deeper (at most the weight further), so
//!   the tree spans the root's component.
//! * WCC — an independent in-memory union-find: each label must be the smallest
//!   id of the vertex's component (so every edge joins equal labels).
//! * SCC — an independent Tarjan search over the forward edges: each label must
//!   be the smallest id of the vertex's strongly connected component.
//! * MCST — the parent pointers form a forest (no cycle) whose every edge is an
//!   edge of the graph with that weight, with as many trees as an independent
//!   union-find finds components (so it spans each), and its weights, sorted,
//!   equal those of Kruskal's forest (every minimum spanning forest has the same
//!   multiset of weights). Kruskal sorts the edges `u < v` in memory (12 bytes
//!   each).
//! * MIS — no edge joins two members (independent); every non-member has a
//!   member neighbour (maximal). Self-loops are ignored.
//! * PageRank — a serial recomputation of the same iterations (relative 1e-9);
//!   delta PageRank — one more serial iteration changes it by less than the
//!   tolerance (L1). SpMV — a serial recomputation.
//! * bc and apsp of the vertex engine — a serial recomputation from the same sources
//!   over an in-memory adjacency built from the grid (queue BFS; Brandes'
//!   accumulation in reverse BFS order), relative 1e-9 for bc, exact for apsp.

use crate::{Algo, AlgoError, Output, Params, Result};
use outcore_store::{IdMap, Store};

/// The graph a check reads: its vertex count, its ids, and whole passes over
/// its edges (a store's grid, or the chunks of a distributed layout).
pub trait EdgeSource {
    fn vertices(&self) -> u64;
    fn id_map(&self) -> Result<IdMap>;
    /// Every edge once, in any order; weights are 1 when `weights` is false.
    fn for_each_edge(&self, weights: bool, f: &mut dyn FnMut(u32, u32, f32)) -> Result<()>;
}

impl EdgeSource for Store {
    fn vertices(&self) -> u64 {
        Store::vertices(self)
    }
    fn id_map(&self) -> Result<IdMap> {
        Ok(Store::id_map(self)?)
    }
    /// In row-major block order, read with CRC checks.
    fn for_each_edge(&self, weights: bool, f: &mut dyn FnMut(u32, u32, f32)) -> Result<()> {
        self.grid()?.try_for_each_edge(weights, |u, v, w| {
            f(u, v, w);
            Ok::<(), AlgoError>(())
        })
    }
}

fn fail(msg: String) -> AlgoError {
    AlgoError::Verify(msg)
}

/// One pass over the edges of `g`.
pub fn for_each_edge(
    g: &dyn EdgeSource,
    weights: bool,
    mut f: impl FnMut(u32, u32, f32),
) -> Result<()> {
    g.for_each_edge(weights, &mut f)
}

/// Checks `out` for `algo`; returns a line saying what was checked.
pub fn verify(store: &dyn EdgeSource, algo: Algo, p: &Params, out: &Output) -> Result<String> {
    let ids = store.id_map()?;
    let name = |v: u32| ids.to_user(v);
    match (algo, out) {
        (Algo::Bfs, Output::Bfs(a)) => {
            let t: Vec<Option<(f64, u32)>> = a
                .iter()
                .map(|&x| crate::bfs_entry(x).map(|(d, q)| (d as f64, q)))
                .collect();
            tree(store, p.root, &t, false, &name)
        }
        (Algo::Sssp, Output::Sssp(a)) => {
            let t: Vec<Option<(f64, u32)>> = a
                .iter()
                .map(|&x| crate::sssp_entry(x).map(|(d, q)| (d as f64, q)))
                .collect();
            tree(store, p.root, &t, true, &name)
        }
        (Algo::Wcc | Algo::WccLp, Output::Labels(l)) => wcc(store, l, &name),
        (Algo::Scc, Output::Labels(l)) => scc(store, l, &name),
        (Algo::Mcst, Output::Forest(f)) => mcst(store, f, &name),
        (Algo::Mis | Algo::MisLuby | Algo::MisGas, Output::Flags(f)) => mis(store, f, &name),
        (Algo::Conductance, Output::Flags(f)) => {
            // Membership as the seed says, and the value recounted edge by edge.
            if let Some(v) = (0..f.len() as u32)
                .find(|&v| f[v as usize] != crate::programs::conductance_side(v, p.seed))
            {
                return Err(fail(format!(
                    "vertex {} is on side {} of the set, the seed puts it on {}",
                    name(v),
                    f[v as usize],
                    crate::programs::conductance_side(v, p.seed)
                )));
            }
            let (mut cut, mut vol) = (0u64, [0u64; 2]);
            for_each_edge(store, false, |u, v, _| {
                let su = f[u as usize] as usize;
                vol[su] += 1;
                cut += (su != f[v as usize] as usize) as u64;
            })?;
            Ok(format!(
                "every vertex on its seeded side; recounted edge by edge: {}",
                crate::programs::conductance_line(cut, vol[1], vol[0])
            ))
        }
        (Algo::PageRank, Output::Values(x)) => {
            let want = serial_pagerank(store, p.damping, p.iterations.unwrap_or(10), None)?;
            close(x, &want, 1e-9, &name, "PageRank")
        }
        (Algo::PageRankDelta, Output::Values(x)) => {
            let next = serial_pagerank(store, p.damping, 1, Some(x))?;
            let change: f64 = next.iter().zip(x.iter()).map(|(a, b)| (a - b).abs()).sum();
            if change < p.tolerance {
                Ok(format!(
                    "one more serial PageRank iteration changes the ranks by {change:.3e} (L1) < tolerance {:e}",
                    p.tolerance
                ))
            } else {
                Err(fail(format!(
                    "one more serial PageRank iteration changes the ranks by {change:.3e} (L1), not below the tolerance {:e}",
                    p.tolerance
                )))
            }
        }
        (Algo::Spmv, Output::Values(x)) => {
            let n = store.vertices() as usize;
            let mut v = vec![1.0f64; n];
            for _ in 0..p.iterations.unwrap_or(1) {
                let mut y = vec![0.0f64; n];
                for_each_edge(store, true, |a, b, w| {
                    y[b as usize] += w as f64 * v[a as usize]
                })?;
                v = y;
            }
            close(x, &v, 1e-9, &name, "SpMV")
        }
        (Algo::Bp, Output::Values(b)) => bp(store, b, p),
        _ => Err(fail(format!(
            "no check for {} with this output",
            algo.name()
        ))),
    }
}

fn close(
    got: &[f64],
    want: &[f64],
    rel: f64,
    name: &dyn Fn(u32) -> u64,
    what: &str,
) -> Result<String> {
    let mut worst = 0f64;
    for (v, (a, b)) in got.iter().zip(want).enumerate() {
        let err = (a - b).abs() / b.abs().max(1e-300);
        if (err > rel || err.is_nan()) && (a - b).abs() > 1e-300 {
            return Err(fail(format!(
                "{what} of vertex {} is {a:e}, a serial recomputation gives {b:e}",
                name(v as u32)
            )));
        }
        worst = worst.max(err);
    }
    Ok(format!(
        "{what} matches a serial recomputation (largest relative difference {worst:.2e})"
    ))
}

/// Linearized BP recomputed serially with the same stopping rule; centred
/// beliefs compared in L1 (within 1e-9 relative, plus `--tolerance` for a run
/// that stopped one iteration apart at the boundary).
fn bp(store: &dyn EdgeSource, got: &[f64], p: &Params) -> Result<String> {
    let n = store.vertices() as usize;
    let h = p.coupling;
    let mut deg = vec![0u64; n];
    for_each_edge(store, false, |u, _, _| deg[u as usize] += 1)?;
    let e: Vec<f64> = (0..n as u32)
        .map(|v| crate::bp::bp_prior(v, p.seed))
        .collect();
    let mut x = e.clone();
    let cap = p.iterations.unwrap_or(crate::bp::BP_ITERATIONS);
    let mut done = 0;
    while done < cap {
        let mut s = vec![0.0f64; n];
        for_each_edge(store, false, |u, v, _| {
            s[v as usize] += 2.0 * h * x[u as usize]
        })?;
        let mut change = 0.0;
        for v in 0..n {
            let next = e[v] + s[v] - 4.0 * h * h * deg[v] as f64 * x[v];
            change += (next - x[v]).abs();
            x[v] = next;
        }
        done += 1;
        if change <= p.tolerance {
            break;
        }
    }
    let diff: f64 = got.iter().zip(&x).map(|(b, x)| (b - 0.5 - x).abs()).sum();
    let scale: f64 = x.iter().map(|x| x.abs()).sum();
    if diff.is_nan() || diff > 1e-9 * scale + p.tolerance {
        let v = (0..n)
            .max_by(|&a, &b| {
                let da = (got[a] - 0.5 - x[a]).abs();
                da.total_cmp(&(got[b] - 0.5 - x[b]).abs())
            })
            .unwrap_or(0);
        return Err(fail(format!(
            "bp beliefs differ from a serial recomputation by {diff:.3e} (L1); vertex {} has {:e}, the recomputation {:e}",
            name_of(store, v as u32)?,
            got[v],
            0.5 + x[v]
        )));
    }
    Ok(format!(
        "beliefs match a serial recomputation of {done} iterations (L1 difference {diff:.2e})"
    ))
}

fn name_of(store: &dyn EdgeSource, v: u32) -> Result<u64> {
    Ok(store.id_map()?.to_user(v))
}

/// Serial PageRank (LDBC); `from` replaces the uniform start.
pub fn serial_pagerank(
    store: &dyn EdgeSource,
    d: f64,
    iters: u64,
    from: Option<&[f64]>,
) -> Result<Vec<f64>> {
    let n = store.vertices() as usize;
    let mut deg = vec![0u64; n];
    for_each_edge(store, false, |u, _, _| deg[u as usize] += 1)?;
    let mut pr = from.map_or_else(|| vec![1.0 / n as f64; n], |x| x.to_vec());
    for _ in 0..iters {
        let dangling = crate::compensated_sum((0..n).filter(|&v| deg[v] == 0).map(|v| pr[v]));
        let mut s = vec![0.0f64; n];
        for_each_edge(store, false, |u, v, _| {
            s[v as usize] += pr[u as usize] / deg[u as usize] as f64
        })?;
        let base = (1.0 - d) / n as f64 + d * dangling / n as f64;
        for x in s.iter_mut() {
            *x = base + d * *x;
        }
        pr = s;
    }
    Ok(pr)
}

/// Graph500 rules for a BFS (`weighted == false`, levels) or SSSP tree.
fn tree(
    store: &dyn EdgeSource,
    root: u32,
    t: &[Option<(f64, u32)>],
    weighted: bool,
    name: &dyn Fn(u32) -> u64,
) -> Result<String> {
    let n = t.len();
    match t.get(root as usize).copied().flatten() {
        Some((d, q)) if d == 0.0 && q == root => {}
        _ => {
            return Err(fail(format!(
                "the root {} is not at distance 0 with itself as parent",
                name(root)
            )))
        }
    }
    let mut parent_edge = vec![false; n];
    parent_edge[root as usize] = true;
    let mut bad: Option<String> = None;
    for_each_edge(store, weighted, |u, v, w| {
        if bad.is_some() {
            return;
        }
        let Some((du, _)) = t[u as usize] else { return };
        let step = if weighted {
            (du as f32 + w) as f64
        } else {
            du + 1.0
        };
        match t[v as usize] {
            None => {
                bad = Some(format!(
                    "edge ({}, {}) leaves the tree: {} is reached but {} is not",
                    name(u),
                    name(v),
                    name(u),
                    name(v)
                ))
            }
            Some((dv, q)) => {
                if dv > step {
                    bad = Some(format!(
                        "edge ({}, {}) breaks the {} rule: {} at {dv} but {} at {du} plus {}",
                        name(u),
                        name(v),
                        if weighted { "triangle" } else { "level" },
                        name(v),
                        name(u),
                        if weighted { w as f64 } else { 1.0 }
                    ));
                }
                if q == u && v != root && dv == step {
                    parent_edge[v as usize] = true;
                }
            }
        }
    })?;
    if let Some(b) = bad {
        return Err(fail(b));
    }
    let mut reached = 0u64;
    for v in 0..n {
        let Some((dv, q)) = t[v] else { continue };
        reached += 1;
        if t.get(q as usize).copied().flatten().is_none() {
            return Err(fail(format!(
                "the parent {} of {} is not reached",
                name(q),
                name(v as u32)
            )));
        }
        if !parent_edge[v] {
            return Err(fail(format!(
                "vertex {} (at {dv}) has parent {}, but no edge ({}, {}) closes the gap exactly",
                name(v as u32),
                name(q),
                name(q),
                name(v as u32)
            )));
        }
    }
    // No cycles.
    let parent = |x: usize| t[x].filter(|_| x != root as usize).map(|e| e.1 as usize);
    if let Some(x) = find_cycle(n, parent) {
        return Err(fail(format!(
            "the parent pointers through {} form a cycle",
            name(x as u32)
        )));
    }
    Ok(format!(
        "Graph500 rules hold: {reached} vertices reached, a tree rooted at {}, every edge within one {} and every parent edge present",
        name(root),
        if weighted { "weight" } else { "level" }
    ))
}

/// The root of `x` in the union-find forest `pa` (path halving).
fn find(pa: &mut [u32], mut x: u32) -> u32 {
    while pa[x as usize] != x {
        let g = pa[pa[x as usize] as usize];
        pa[x as usize] = g;
        x = g;
    }
    x
}

/// A vertex on a cycle of the parent pointers (`parent(x)`: `None` at a root),
/// found by a three-colour walk; `None` when they form a forest.
fn find_cycle(n: usize, parent: impl Fn(usize) -> Option<usize>) -> Option<usize> {
    let mut state = vec![0u8; n]; // 0 unvisited, 1 on the current path, 2 done
    for s in 0..n {
        let mut path = Vec::new();
        let mut x = s;
        while state[x] == 0 {
            state[x] = 1;
            path.push(x);
            match parent(x) {
                Some(p) if state[p] == 1 => return Some(p),
                Some(p) => x = p,
                None => break,
            }
        }
        for y in path {
            state[y] = 2;
        }
    }
    None
}

fn wcc(store: &dyn EdgeSource, labels: &[u32], name: &dyn Fn(u32) -> u64) -> Result<String> {
    let n = labels.len();
    let mut pa: Vec<u32> = (0..n as u32).collect();
    for_each_edge(store, false, |u, v, _| {
        let (a, b) = (find(&mut pa, u), find(&mut pa, v));
        if a != b {
            let (hi, lo) = if a > b { (a, b) } else { (b, a) };
            pa[hi as usize] = lo;
        }
    })?;
    let mut components = 0;
    for v in 0..n as u32 {
        let m = find(&mut pa, v); // the smallest id of v's component
        if m == v {
            components += 1;
        }
        if labels[v as usize] != m {
            return Err(fail(format!(
                "vertex {} is labelled {}, but the smallest id of its component is {}",
                name(v),
                name(labels[v as usize].min(n as u32 - 1)),
                name(m)
            )));
        }
    }
    Ok(format!(
        "labels match an independent union-find: {components} components, each labelled with its smallest id"
    ))
}

fn scc(store: &dyn EdgeSource, labels: &[u32], name: &dyn Fn(u32) -> u64) -> Result<String> {
    // The forward edges only (a reverse edge's weight has its sign bit set).
    let n = labels.len();
    let mut off = vec![0u64; n + 1];
    for_each_edge(store, true, |u, _, w| {
        if !w.is_sign_negative() {
            off[u as usize + 1] += 1
        }
    })?;
    for i in 0..n {
        off[i + 1] += off[i];
    }
    let mut fill = off.clone();
    let mut t = vec![0u32; off[n] as usize];
    for_each_edge(store, true, |u, v, w| {
        if !w.is_sign_negative() {
            t[fill[u as usize] as usize] = v;
            fill[u as usize] += 1;
        }
    })?;
    let want = tarjan_labels(&off, &t);
    let mut components = 0;
    for v in 0..n {
        if want[v] == v as u32 {
            components += 1;
        }
        if labels[v] != want[v] {
            return Err(fail(format!(
                "vertex {} is labelled {}, but the smallest id of its strongly connected component is {}",
                name(v as u32),
                name(labels[v].min(n as u32 - 1)),
                name(want[v])
            )));
        }
    }
    Ok(format!(
        "labels match an independent Tarjan search: {components} strongly connected components, each labelled with its smallest id"
    ))
}

fn mcst(store: &dyn EdgeSource, f: &[u64], name: &dyn Fn(u32) -> u64) -> Result<String> {
    use crate::mcst::forest_entry;
    let n = f.len();
    // A forest: parents in range, and no cycle.
    for (x, &e) in f.iter().enumerate() {
        if let Some((p, _)) = forest_entry(e).filter(|&(p, _)| p as usize >= n || p as usize == x) {
            return Err(fail(format!(
                "vertex {}'s parent {p} is not another vertex",
                name(x as u32)
            )));
        }
    }
    if let Some(x) = find_cycle(n, |x| forest_entry(f[x]).map(|e| e.0 as usize)) {
        return Err(fail(format!(
            "the parent pointers through {} form a cycle",
            name(x as u32)
        )));
    }
    // Every forest edge is a graph edge of that weight; the components; the
    // edges for Kruskal.
    let mut found = vec![false; n];
    let mut pa: Vec<u32> = (0..n as u32).collect();
    let mut edges: Vec<(f32, u32, u32)> = Vec::new();
    for_each_edge(store, true, |u, v, w| {
        for (a, b) in [(u, v), (v, u)] {
            if forest_entry(f[a as usize])
                .is_some_and(|(p, x)| p == b && x.to_bits() == w.to_bits())
            {
                found[a as usize] = true;
            }
        }
        if u < v {
            edges.push((w, u, v));
        }
    })?;
    if let Some(v) = (0..n).find(|&v| forest_entry(f[v]).is_some() && !found[v]) {
        let (p, w) = forest_entry(f[v]).expect("an edge");
        return Err(fail(format!(
            "the forest edge ({}, {}) of weight {w} is not an edge of the graph with that weight",
            name(v as u32),
            name(p)
        )));
    }
    edges.sort_unstable_by(|a, b| a.0.total_cmp(&b.0));
    let mut want = Vec::new();
    for &(w, u, v) in &edges {
        let (a, b) = (find(&mut pa, u), find(&mut pa, v));
        if a != b {
            pa[a.max(b) as usize] = a.min(b);
            want.push(w);
        }
    }
    let components = n - want.len();
    let got = crate::mcst::sorted_forest_weights(f);
    let trees = n - got.len();
    if trees != components {
        return Err(fail(format!(
            "the forest has {trees} trees, but the graph has {components} components: it does not span them"
        )));
    }
    if let Some(i) = (0..got.len()).find(|&i| got[i].to_bits() != want[i].to_bits()) {
        return Err(fail(format!(
            "not a minimum forest: its {}-th lightest edge weighs {}, Kruskal's {}",
            i + 1,
            got[i],
            want[i]
        )));
    }
    let total: f64 = want.iter().map(|&x| x as f64).sum();
    Ok(format!(
        "a forest of graph edges spanning all {components} components, its weights those of Kruskal's forest (total {total})"
    ))
}

/// Strongly connected components of the graph `(off, t)` by Tarjan's algorithm
/// (iterative), each vertex labelled with the smallest id of its component.
pub fn tarjan_labels(off: &[u64], t: &[u32]) -> Vec<u32> {
    let n = off.len() - 1;
    const NONE: u32 = u32::MAX;
    let (mut index, mut low) = (vec![NONE; n], vec![0u32; n]);
    let mut on_stack = vec![false; n];
    let mut stack: Vec<u32> = Vec::new();
    let mut label = vec![NONE; n];
    let mut next = 0u32;
    // The search path: (vertex, position in its edge list).
    let mut path: Vec<(u32, u64)> = Vec::new();
    for s in 0..n as u32 {
        if index[s as usize] != NONE {
            continue;
        }
        path.push((s, off[s as usize]));
        index[s as usize] = next;
        low[s as usize] = next;
        next += 1;
        stack.push(s);
        on_stack[s as usize] = true;
        while let Some(&mut (v, ref mut pos)) = path.last_mut() {
            let vi = v as usize;
            if *pos < off[vi + 1] {
                let w = t[*pos as usize] as usize;
                *pos += 1;
                if index[w] == NONE {
                    index[w] = next;
                    low[w] = next;
                    next += 1;
                    stack.push(w as u32);
                    on_stack[w] = true;
                    path.push((w as u32, off[w]));
                } else if on_stack[w] {
                    low[vi] = low[vi].min(index[w]);
                }
                continue;
            }
            path.pop();
            if let Some(&(p, _)) = path.last() {
                low[p as usize] = low[p as usize].min(low[vi]);
            }
            if low[vi] == index[vi] {
                // v roots a component: pop it, then label it with its smallest id.
                let at = stack
                    .iter()
                    .rposition(|&x| x == v)
                    .expect("v is on the stack");
                let smallest = stack[at..].iter().copied().min().expect("nonempty");
                for x in stack.drain(at..) {
                    on_stack[x as usize] = false;
                    label[x as usize] = smallest;
                }
            }
        }
    }
    label
}

fn mis(store: &dyn EdgeSource, f: &[u32], name: &dyn Fn(u32) -> u64) -> Result<String> {
    let n = f.len();
    let mut covered: Vec<bool> = f.iter().map(|&x| x == 1).collect();
    let mut bad = None;
    for_each_edge(store, false, |u, v, _| {
        if u == v || bad.is_some() {
            return;
        }
        let (iu, iv) = (f[u as usize] == 1, f[v as usize] == 1);
        if iu && iv {
            bad = Some(format!(
                "edge ({}, {}) joins two members of the set",
                name(u),
                name(v)
            ));
        }
        if iu {
            covered[v as usize] = true;
        }
        if iv {
            covered[u as usize] = true;
        }
    })?;
    if let Some(b) = bad {
        return Err(fail(b));
    }
    if let Some(v) = (0..n).find(|&v| !covered[v]) {
        return Err(fail(format!(
            "vertex {} is outside the set and has no neighbour in it: the set is not maximal",
            name(v as u32)
        )));
    }
    let size = f.iter().filter(|&&x| x == 1).count();
    Ok(format!("independent and maximal ({size} members)"))
}

/// Out-adjacency built from the grid scan: `(offsets, targets)`, lists in any order.
fn adjacency(store: &dyn EdgeSource) -> Result<(Vec<u64>, Vec<u32>)> {
    let n = store.vertices() as usize;
    let mut off = vec![0u64; n + 1];
    for_each_edge(store, false, |u, _, _| off[u as usize + 1] += 1)?;
    for i in 0..n {
        off[i + 1] += off[i];
    }
    let mut fill = off.clone();
    let mut t = vec![0u32; off[n] as usize];
    for_each_edge(store, false, |u, v, _| {
        t[fill[u as usize] as usize] = v;
        fill[u as usize] += 1;
    })?;
    Ok((off, t))
}

/// BFS depths from `s` and the vertices in BFS order.
fn bfs_order(off: &[u64], t: &[u32], s: u32) -> (Vec<u32>, Vec<u32>) {
    let mut d = vec![u32::MAX; off.len() - 1];
    let mut order = vec![s];
    d[s as usize] = 0;
    let mut k = 0;
    while k < order.len() {
        let u = order[k] as usize;
        k += 1;
        for &v in &t[off[u] as usize..off[u + 1] as usize] {
            if d[v as usize] == u32::MAX {
                d[v as usize] = d[u] + 1;
                order.push(v);
            }
        }
    }
    (d, order)
}

/// Betweenness from `sources` (dense ids), recomputed serially.
pub fn verify_bc(
    store: &dyn EdgeSource,
    sources: &[u32],
    got: &[f64],
    name: &dyn Fn(u32) -> u64,
) -> Result<String> {
    let (off, t) = adjacency(store)?;
    let n = off.len() - 1;
    let mut bc = vec![0f64; n];
    for &s in sources {
        let (d, order) = bfs_order(&off, &t, s);
        let mut sigma = vec![0f64; n];
        sigma[s as usize] = 1.0;
        for &u in &order {
            let u = u as usize;
            for &v in &t[off[u] as usize..off[u + 1] as usize] {
                if d[v as usize] == d[u] + 1 {
                    sigma[v as usize] += sigma[u];
                }
            }
        }
        let mut delta = vec![0f64; n];
        for &u in order.iter().rev() {
            let u = u as usize;
            for &w in &t[off[u] as usize..off[u + 1] as usize] {
                if d[w as usize] == d[u] + 1 {
                    delta[u] += sigma[u] / sigma[w as usize] * (1.0 + delta[w as usize]);
                }
            }
            if u as u32 != s {
                bc[u] += delta[u];
            }
        }
    }
    for v in 0..n {
        if (got[v] - bc[v]).abs() > 1e-9 * bc[v].abs().max(1.0) {
            return Err(fail(format!(
                "betweenness of vertex {} is {}, a serial Brandes from the same {} sources gives {}",
                name(v as u32),
                got[v],
                sources.len(),
                bc[v]
            )));
        }
    }
    Ok(format!(
        "a serial Brandes from the same {} sources gives the same centralities (relative 1e-9)",
        sources.len()
    ))
}

/// APSP sums of distances, per-source reach and eccentricity, recomputed serially.
pub fn verify_apsp(
    store: &dyn EdgeSource,
    sources: &[u32],
    reach: &[u64],
    ecc: &[u32],
    sums: &[f64],
    name: &dyn Fn(u32) -> u64,
) -> Result<String> {
    let (off, t) = adjacency(store)?;
    let n = off.len() - 1;
    let mut want = vec![0f64; n];
    for (k, &s) in sources.iter().enumerate() {
        let (d, order) = bfs_order(&off, &t, s);
        let e = order.iter().map(|&v| d[v as usize]).max().unwrap_or(0);
        if reach[k] != order.len() as u64 || ecc[k] != e {
            return Err(fail(format!(
                "source {}: reach {} and eccentricity {}, a serial BFS gives {} and {e}",
                name(s),
                reach[k],
                ecc[k],
                order.len()
            )));
        }
        for &v in &order {
            want[v as usize] += d[v as usize] as f64;
        }
    }
    if let Some(v) = (0..n).find(|&v| sums[v] != want[v]) {
        return Err(fail(format!(
            "vertex {}: sum of distances {}, serial BFS gives {}",
            name(v as u32),
            sums[v],
            want[v]
        )));
    }
    Ok(format!(
        "serial BFS from the same {} sources gives the same reach, eccentricities and sums",
        sources.len()
    ))
}
