//! The arguments of `outcore run`, shared by the engines' command modules.

use clap::{Args, ValueEnum};
use outcore_io::parse_size;
use std::path::PathBuf;

#[derive(Args)]
pub struct RunArgs {
    /// Algorithm: bfs, sssp, wcc, wcc-lp, mis, mis-luby, pagerank, pagerank-delta, spmv,
    /// conductance, mis-gas, scc (on a store ingested --with-reverse), bp;
    /// with `--engine vertex`: bfs, sssp, wcc, diam, bc, apsp.
    pub algo: String,
    /// The store directory.
    pub store: PathBuf,
    /// Start vertex of bfs and sssp, in the user's ids.
    #[arg(long)]
    pub root: Option<u64>,
    /// Memory budget of the streaming engine (vertex arrays, block ring, bitmaps),
    /// e.g. 512M, 4G. The vertex engine sizes its caches by --cache-split instead.
    #[arg(long, default_value = "1G", value_parser = parse_memory_arg)]
    pub memory: u64,
    /// Worker threads (default: one per core).
    #[arg(long)]
    pub threads: Option<usize>,
    /// Maximum re-entry times per loaded block (1 behaves like GridGraph).
    #[arg(long, default_value_t = 5)]
    pub mrt: u32,
    /// Iterations of pagerank (default 10) and spmv (default 1); a cap for the others.
    #[arg(long)]
    pub iterations: Option<u64>,
    /// pagerank-delta: stop when the pending rank mass is below this (L1).
    #[arg(long, default_value_t = 1e-7)]
    pub tolerance: f64,
    /// PageRank damping factor.
    #[arg(long, default_value_t = 0.85)]
    pub damping: f64,
    /// bp: coupling (homophily) strength h of linearized belief propagation,
    /// between 0 and 0.5; it converges when 2h(1 + 2h) x the largest degree < 1.
    #[arg(long, default_value_t = outcore_algos::DEFAULT_COUPLING)]
    pub coupling: f64,
    /// Seed of randomized algorithms (mis-luby; diam's start, bc and apsp sources).
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// bfs and sssp: also write each vertex's parent in the tree.
    #[arg(long)]
    pub parents: bool,
    /// Block order.
    #[arg(long, value_enum, default_value_t = OrderArg::Row)]
    pub order: OrderArg,
    /// Write the result here (one `id value` line per vertex, ascending id); `-` is
    /// standard output. The format follows the extension (.npy, .bin, .csv, else
    /// text) unless --out-format is given. An existing device or FIFO is written in
    /// place; a regular file is replaced atomically.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// The result's format (default: from the --out extension).
    #[arg(long, value_enum)]
    pub out_format: Option<OutFormat>,
    /// Check the result independently (Graph500 rules, union-find, ...).
    #[arg(long)]
    pub verify: bool,
    /// Write run statistics as JSON here (`-`: standard output).
    #[arg(long)]
    pub stats: Option<PathBuf>,
    /// Directory for mapped vertex arrays and sort runs (default: the store).
    #[arg(long)]
    pub work_dir: Option<PathBuf>,
    /// Map every vertex array from the work directory, whatever the budget.
    #[arg(long)]
    pub mapped_state: bool,
    /// Read blocks with O_DIRECT, bypassing the page cache. Without it (and
    /// without --page-cache) the streaming engine does so by itself when the
    /// grid is not cached and larger than the page cache can hold beside the
    /// run: the machine's memory, or the memory limit of this process's cgroup,
    /// less what the run holds.
    #[arg(long, conflicts_with = "page_cache")]
    pub direct: bool,
    /// Read blocks through the page cache even where the grid does not fit it.
    #[arg(long)]
    pub page_cache: bool,
    /// The engine: `stream` (CLIP grid streaming; vertex arrays mapped from the
    /// work directory beyond --memory), `external` (V-Part: vertex data larger than
    /// memory, one destination partition at a time; bfs, sssp, wcc-lp, pagerank,
    /// pagerank-delta, spmv), `sortreduce` (the GraFBoost-style baseline V-Part is
    /// measured against; the same algorithms) or `vertex` (page-cached vertex-centric engine for
    /// BFS-like algorithms: bfs, sssp, wcc, diam, bc, apsp). Default: `stream`
    /// when the algorithm's vertex state fits --memory, else `external`.
    #[arg(long, value_enum)]
    pub engine: Option<EngineArg>,
    /// Print the plan (engine and why, partitions, expected bytes per iteration)
    /// and exit without running.
    #[arg(long)]
    pub explain: bool,
    /// External engine: read a chunk's edges whole, only the active sources'
    /// runs, or whichever the cost model prices lower.
    #[arg(long, value_enum, default_value_t = EdgeReadsArg::Auto)]
    pub edge_reads: EdgeReadsArg,
    /// External engine: apply every destination a message reached, without
    /// the bitmap of final destinations bfs keeps by default (for measuring
    /// it).
    #[arg(long)]
    pub no_settle: bool,
    /// bfs and sssp on the streaming engine: run bfs's levels with large
    /// frontiers bottom-up over the in-edges (stores ingested with --in-edges,
    /// or undirected) and small ones (bfs's and sssp's) from the out-edge lists
    /// (any store), `never` (every iteration along the grid), or every
    /// iteration bottom-up (`always`, bfs) or from the out-edge lists
    /// (`sparse`), for testing. wcc on a store with in-edges runs from the
    /// lists (Afforest) when the page cache holds them (`auto`), always
    /// (`always`, `sparse`) or never (`never`: one grid pass).
    #[arg(long, value_enum, default_value_t = BottomUpArg::Auto)]
    pub bottom_up: BottomUpArg,
    /// Streaming engine: read the grid from the store on every pass, even
    /// where the budget could hold it decoded in memory after the first
    /// pass (for measuring that).
    #[arg(long)]
    pub read_every_pass: bool,
    #[command(flatten)]
    pub vertex: crate::vertex::VertexArgs,
}

#[derive(Clone, Copy, ValueEnum, PartialEq, Eq)]
pub enum EngineArg {
    Stream,
    External,
    /// The sort-reduce baseline (GraFBoost's design), for comparison.
    Sortreduce,
    Vertex,
}

#[derive(Clone, Copy, ValueEnum, PartialEq, Eq)]
pub enum EdgeReadsArg {
    Auto,
    Whole,
    Selective,
}

impl RunArgs {
    /// The settings `outcore example` uses: defaults plus `--verify`.
    pub fn example(algo: &str, store: PathBuf, root: Option<u64>) -> RunArgs {
        RunArgs {
            algo: algo.to_string(),
            store,
            root,
            memory: 256 << 20,
            threads: None,
            mrt: 5,
            iterations: None,
            tolerance: 1e-7,
            damping: 0.85,
            coupling: outcore_algos::DEFAULT_COUPLING,
            seed: 1,
            parents: false,
            order: OrderArg::Row,
            out: None,
            out_format: None,
            verify: true,
            stats: None,
            work_dir: None,
            mapped_state: false,
            direct: false,
            page_cache: false,
            engine: None,
            explain: false,
            edge_reads: EdgeReadsArg::Auto,
            no_settle: false,
            bottom_up: BottomUpArg::Auto,
            read_every_pass: false,
            vertex: crate::vertex::VertexArgs::default(),
        }
    }
}

#[derive(Clone, Copy, ValueEnum, PartialEq, Eq)]
pub enum BottomUpArg {
    Auto,
    Never,
    Always,
    Sparse,
}

impl From<BottomUpArg> for outcore_engine::BottomUp {
    fn from(a: BottomUpArg) -> Self {
        match a {
            BottomUpArg::Auto => outcore_engine::BottomUp::Auto,
            BottomUpArg::Never => outcore_engine::BottomUp::Never,
            BottomUpArg::Always => outcore_engine::BottomUp::Always,
            BottomUpArg::Sparse => outcore_engine::BottomUp::Sparse,
        }
    }
}

#[derive(Clone, Copy, ValueEnum, PartialEq, Eq)]
pub enum OrderArg {
    Row,
    Column,
}

#[derive(Clone, Copy, Debug, ValueEnum, PartialEq, Eq)]
pub enum OutFormat {
    /// `id value` lines.
    Text,
    /// Little-endian records: u64 id, then the value as 8 bytes (i64, f64 or u64).
    Bin,
    /// A NumPy .npy file of a structured array with fields `id` and `value`.
    Npy,
    /// Comma-separated `id,value` lines after an `id,value` header.
    Csv,
}

/// The smallest `--memory` any command accepts. What a run takes beyond
/// `--memory` (the program, thread stacks, buffers not counted against it) is the
/// constant docs/benchmarks.md measures; below this floor a budget would be all
/// constant, so it is refused at once, with this one message, by every command.
pub const MIN_MEMORY: u64 = 8 << 20;

/// `--memory SIZE`: a size of at least [`MIN_MEMORY`].
pub(crate) fn parse_memory_arg(s: &str) -> std::result::Result<u64, String> {
    let m = parse_size(s).map_err(|e| e.to_string())?;
    if m < MIN_MEMORY {
        return Err(format!(
            "{} is below the floor of {} that every outcore command needs; give --memory 8M or more",
            outcore_io::format_bytes(m),
            outcore_io::format_bytes(MIN_MEMORY)
        ));
    }
    Ok(m)
}

pub(crate) fn parse_size_arg(s: &str) -> std::result::Result<u64, String> {
    parse_size(s).map_err(|e| e.to_string())
}
