//! Running the edge programs: which engines run which algorithm, the
//! dispatch from an [`Algo`] to its program ([`run_program`],
//! [`run_program_on`]) and the conversion of each result into an [`Output`]
//! and its summary line.

use super::*;
/// The algorithms the external engine runs.
pub fn external_supported(algo: Algo) -> bool {
    matches!(
        algo,
        Algo::Bfs
            | Algo::Sssp
            | Algo::WccLp
            | Algo::PageRank
            | Algo::PageRankDelta
            | Algo::Spmv
            | Algo::Conductance
            | Algo::MisGas
            | Algo::Scc
            | Algo::Bp
    )
}

/// The algorithms the distributed engine runs: the external engine's and
/// mcst, whose edges read their destination's value (the gather sees it).
pub fn dist_supported(algo: Algo) -> bool {
    external_supported(algo) || algo == Algo::Mcst
}

/// Whether `algo`'s program sends narrow messages on the external engine
/// ([`EdgeProgram::narrow_messages`]: its mirror jobs take 4 bytes a
/// destination rather than 8).
pub fn external_narrow(algo: Algo) -> bool {
    matches!(algo, Algo::Bfs | Algo::Sssp | Algo::WccLp)
}

/// Destination bytes per vertex `algo` needs on the external engine.
pub fn external_bytes_per_vertex(algo: Algo) -> u64 {
    match algo {
        Algo::PageRankDelta => 44,
        Algo::WccLp => 24,
        Algo::Scc => 32,
        Algo::Bp => 36,
        _ => 28,
    }
}

/// Runs `algo` on an engine of edge programs (streaming, external or sort-reduce).
pub fn run_program<R: ProgramRunner>(
    e: &mut R,
    store: &outcore_store::Store,
    algo: Algo,
    p: &Params,
) -> Result<Run> {
    let facts = GraphFacts {
        vertices: store.vertices(),
        directed: store.manifest().directed,
        reverse_marked: store.manifest().reverse_marked,
        dir: store.dir(),
        ids: &|| store.id_map(),
    };
    run_program_on(e, &facts, algo, p)
}

/// What [`run_program_on`] needs of a graph held anywhere (a store, or the
/// ranks of a distributed layout).
pub struct GraphFacts<'a> {
    pub vertices: u64,
    pub directed: bool,
    /// Reverse edges stored with negative weights (`--with-reverse`).
    pub reverse_marked: bool,
    /// Named in messages.
    pub dir: &'a std::path::Path,
    /// The user ids, to name a refused edge.
    pub ids: &'a dyn Fn() -> outcore_store::Result<outcore_store::IdMap>,
}

/// Runs `algo` on an engine of edge programs over the graph `g` describes.
pub fn run_program_on<R: ProgramRunner>(
    e: &mut R,
    g: &GraphFacts,
    algo: Algo,
    p: &Params,
) -> Result<Run> {
    let n = g.vertices;
    if algo.needs_root() && p.root as u64 >= n {
        return Err(AlgoError::Invalid(format!(
            "root {} is not a vertex (the store has {n} vertices)",
            p.root
        )));
    }
    if algo.reads_weights() && g.reverse_marked {
        return Err(AlgoError::Invalid(reverse_marked_refusal(
            algo.name(),
            g.dir,
        )));
    }
    let cap = p.iterations;
    let (output, summary) = match algo {
        Algo::Bfs => bfs_result(name_bad_edge(g, e.run_program(&Bfs { root: p.root, cap }))?),
        Algo::Sssp => sssp_result(name_bad_edge(g, e.run_program(&Sssp { root: p.root, cap }))?),
        Algo::WccLp => {
            let directed = g.directed;
            if directed && !e.both_directions() {
                return Err(AlgoError::Invalid(format!(
                    "wcc-lp on this engine pushes labels along out-edges only, so it needs a store holding both directions; {} is directed (ingest with --undirected, or use --engine stream)",
                    g.dir.display()
                )));
            }
            let prog = WccLp { cap, both_directions: directed };
            labels_result(name_bad_edge(g, e.run_program(&prog))?)
        }
        Algo::PageRank => {
            let iterations = p.iterations.unwrap_or(10);
            let prog = PageRank { n, damping: p.damping, iterations };
            ranks_result(name_bad_edge(g, e.run_program(&prog))?, iterations)
        }
        Algo::PageRankDelta => {
            let prog = PageRankDelta { n, damping: p.damping, tolerance: p.tolerance, cap };
            let r = name_bad_edge(g, e.run_program(&prog))?;
            let it = e.iterations();
            (Output::Values(r), format!("{it} iterations"))
        }
        Algo::Spmv => {
            let iterations = p.iterations.unwrap_or(1);
            let r = name_bad_edge(g, e.run_program(&Spmv { iterations }))?;
            let total: f64 = r.iter().sum();
            (Output::Values(r), format!("sum of y {total:.12e}"))
        }
        Algo::Conductance => {
            conductance_result(name_bad_edge(g, e.run_program(&Conductance { seed: p.seed }))?)
        }
        Algo::MisGas => {
            if g.directed {
                return Err(AlgoError::Invalid(format!(
                    "mis-gas moves its messages along out-edges, so it needs a store holding both directions; {} is directed (ingest with --undirected, or use mis / mis-luby)",
                    g.dir.display()
                )));
            }
            let prog = MisGas { seed: p.seed, cap };
            let f = name_bad_edge(g, e.run_program(&prog))?;
            let size = f.iter().filter(|&&x| x == 1).count();
            (Output::Flags(f), format!("{size} vertices in the set"))
        }
        Algo::Scc => {
            if !g.reverse_marked {
                return Err(AlgoError::Invalid(scc_refusal(g.dir)));
            }
            scc_result(name_bad_edge(g, e.run_program(&Scc { cap }))?)
        }
        Algo::Bp => {
            if g.directed {
                return Err(AlgoError::Invalid(format!(
                    "bp propagates beliefs over an undirected graph, so it needs a store holding both directions; {} is directed (ingest with --undirected)",
                    g.dir.display()
                )));
            }
            let h = p.coupling;
            if !(h > 0.0 && h < 0.5) {
                return Err(AlgoError::Invalid(format!(
                    "--coupling {h}: must be between 0 and 0.5"
                )));
            }
            let iterations = p.iterations.unwrap_or(crate::bp::BP_ITERATIONS);
            let prog = crate::bp::Bp {
                coupling: h,
                seed: p.seed,
                tolerance: p.tolerance,
                iterations,
            };
            let b = name_bad_edge(g, e.run_program(&prog))?;
            bp_result(b, e.iterations(), iterations, p)
        }
        Algo::Mcst => {
            if g.directed {
                return Err(AlgoError::Invalid(format!(
                    "mcst spans an undirected graph, so it needs a store holding both directions; {} is directed (ingest with --undirected)",
                    g.dir.display()
                )));
            }
            let f = name_bad_edge(g, e.run_program(&crate::mcst::Mcst { cap }))?;
            mcst_result(f, e.iterations(), cap)
        }
        other => {
            return Err(AlgoError::Invalid(format!(
                "{} is not an edge program (they are bfs, sssp, wcc-lp, pagerank, pagerank-delta, spmv, conductance, mis-gas, scc, bp, mcst)",
                other.name()
            )))
        }
    };
    Ok(Run {
        output,
        iterations: e.iterations(),
        summary,
    })
}

/// Why scc refuses a store without marked reverse edges.
pub fn scc_refusal(dir: &std::path::Path) -> String {
    format!(
        "scc follows edges backwards, so it needs a store holding each edge's reverse marked; {} has none (ingest with --with-reverse)",
        dir.display()
    )
}

/// Why an algorithm (named `algo`) that reads weights refuses a
/// `--with-reverse` store.
pub fn reverse_marked_refusal(algo: &str, dir: &std::path::Path) -> String {
    format!(
        "{algo} reads edge weights, but {} stores each edge's reverse with a negative weight (--with-reverse); run it on a store ingested without --with-reverse",
        dir.display()
    )
}

/// Strongly connected component labels (each the smallest id of its
/// component) and their summary line.
pub fn scc_result(l: VertexArray<u32>) -> (Output, String) {
    let n = label_roots(&l);
    (
        Output::Labels(l),
        format!("{n} strongly connected components"),
    )
}

/// A spanning forest and its summary line: edges, trees, total weight, and
/// whether `--iterations` stopped it before it was finished.
pub fn mcst_result(f: VertexArray<u64>, done: u64, cap: Option<u64>) -> (Output, String) {
    let (weight, edges) = crate::mcst::forest_weight(&f);
    let trees = f.len() as u64 - edges;
    let mut line =
        format!("spanning forest of {edges} edges in {trees} trees, total weight {weight}");
    if cap.is_some_and(|k| done >= k) {
        line += &format!(" (stopped by --iterations {done}: the forest may be unfinished)");
    }
    (Output::Forest(f), line)
}

/// Beliefs of bp and their summary line: how many lean to class 1, and whether
/// the run converged to `--tolerance` or stopped at the iteration cap.
pub fn bp_result(b: VertexArray<f64>, done: u64, cap: u64, p: &Params) -> (Output, String) {
    let up = b.iter().filter(|&&x| x > 0.5).count();
    let down = b.iter().filter(|&&x| x < 0.5).count();
    let how = if done < cap {
        format!(
            "converged to --tolerance {:e} in {done} iterations",
            p.tolerance
        )
    } else {
        format!(
            "stopped after {done} iterations, not converged to --tolerance {:e} (linearized BP converges when 2h(1 + 2h) times the largest degree is below 1; h = --coupling {})",
            p.tolerance, p.coupling
        )
    };
    (
        Output::Values(b),
        format!("{up} vertices lean to class 1, {down} to class 0; {how}"),
    )
}

/// A BFS result and its summary line (every engine's).
pub fn bfs_result(st: VertexArray<u64>) -> (Output, String) {
    // One pass: a mapped result larger than memory is read back once.
    let (reached, depth) = st
        .iter()
        .filter(|&&x| x != u64::MAX)
        .fold((0usize, 0u64), |(n, d), x| (n + 1, d.max(x >> 32)));
    let line = format!("{reached} vertices reached, maximum depth {depth}");
    (Output::Bfs(st), line)
}

/// An SSSP result and its summary line (every engine's).
pub fn sssp_result(st: VertexArray<u64>) -> (Output, String) {
    let (reached, far) = st
        .iter()
        .filter(|&&x| x != u64::MAX)
        .fold((0usize, 0f32), |(n, f), x| {
            (n + 1, f.max(f32::from_bits((x >> 32) as u32)))
        });
    let line = format!("{reached} vertices reached, largest distance {far}");
    (Output::Sssp(st), line)
}

/// The vertices labelled with their own id: one per component when each
/// label is its component's smallest id.
fn label_roots(l: &[u32]) -> usize {
    l.iter()
        .enumerate()
        .filter(|(v, &x)| *v as u32 == x)
        .count()
}

/// Component labels and their summary line.
pub fn labels_result(l: VertexArray<u32>) -> (Output, String) {
    let components = label_roots(&l);
    (Output::Labels(l), format!("{components} components"))
}

/// PageRank values and their summary line.
pub fn ranks_result(r: VertexArray<f64>, iterations: u64) -> (Output, String) {
    let total: f64 = r.iter().sum();
    (
        Output::Values(r),
        format!("{iterations} iterations, total rank {total:.12}"),
    )
}

/// A refused edge named in the user's ids.
fn name_bad_edge<T>(g: &GraphFacts, r: std::result::Result<T, EngineError>) -> Result<T> {
    match r {
        Err(e @ EngineError::BadEdge { .. }) => {
            Err(AlgoError::Invalid(refusal_message(&(g.ids)()?, &e)))
        }
        r => Ok(r?),
    }
}

/// The message of a refused edge, its vertices in the user's ids.
pub fn refusal_message(ids: &outcore_store::IdMap, e: &EngineError) -> String {
    match e {
        EngineError::BadEdge { program, u, v, w } => format!(
            "{program} needs non-negative weights, but edge ({}, {}) has weight {w}",
            ids.to_user(*u),
            ids.to_user(*v)
        ),
        e => e.to_string(),
    }
}
