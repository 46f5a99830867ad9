//! `outcore run ALGO STORE`: settings from flags, the engine, the result written in
//! the user's ids, `--verify`, `--stats`, progress and the closing summary.

use crate::progress::peak_memory;
use anyhow::{bail, Context, Result};
use clap::{Args, ValueEnum};
use indicatif::{ProgressBar, ProgressStyle};
use outcore_algos::{verify::verify, Algo, Output, Params};
use outcore_engine::stream::StreamObserver;
use outcore_engine::{BlockOrder, StreamConfig, StreamEngine};
use outcore_io::{format_bytes, parse_size, IoStats, ReadMode};
use outcore_store::{IdMap, Store};
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::time::Instant;

#[derive(Args)]
pub struct RunArgs {
    /// Algorithm: bfs, sssp, wcc, wcc-lp, mis, mis-luby, pagerank, pagerank-delta, spmv;
    /// with `--engine vertex`: bfs, sssp, wcc, diam, bc, apsp.
    pub algo: String,
    /// The store directory.
    pub store: PathBuf,
    /// Start vertex of bfs and sssp, in the user's ids.
    #[arg(long)]
    pub root: Option<u64>,
    /// Memory budget of the streaming engine (vertex arrays, block ring, bitmaps),
    /// e.g. 512M, 4G. The vertex engine sizes its caches by --cache-split instead.
    #[arg(long, default_value = "1G", value_parser = parse_size_arg)]
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
    /// Seed of randomized algorithms (mis-luby; diam's start, bc and apsp sources).
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// bfs and sssp: also write each vertex's parent in the tree.
    #[arg(long)]
    pub parents: bool,
    /// Block order.
    #[arg(long, value_enum, default_value_t = OrderArg::Row)]
    pub order: OrderArg,
    /// Write the result here (one `id value` line per vertex, ascending id).
    #[arg(long)]
    pub out: Option<PathBuf>,
    #[arg(long, value_enum, default_value_t = OutFormat::Text)]
    pub out_format: OutFormat,
    /// Check the result independently (Graph500 rules, union-find, ...).
    #[arg(long)]
    pub verify: bool,
    /// Write run statistics as JSON here.
    #[arg(long)]
    pub stats: Option<PathBuf>,
    /// Directory for mapped vertex arrays and sort runs (default: the store).
    #[arg(long)]
    pub work_dir: Option<PathBuf>,
    /// Map every vertex array from the work directory, whatever the budget.
    #[arg(long)]
    pub mapped_state: bool,
    /// Read blocks with O_DIRECT, bypassing the page cache.
    #[arg(long)]
    pub direct: bool,
    /// The engine: `stream` (CLIP grid streaming) or `vertex` (page-cached
    /// vertex-centric engine for BFS-like algorithms: bfs, sssp, wcc, diam, bc, apsp).
    #[arg(long, value_enum, default_value_t = EngineArg::Stream)]
    pub engine: EngineArg,
    #[command(flatten)]
    pub vertex: crate::vertex::VertexArgs,
}

#[derive(Clone, Copy, ValueEnum, PartialEq, Eq)]
pub enum EngineArg {
    Stream,
    Vertex,
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
            seed: 1,
            parents: false,
            order: OrderArg::Row,
            out: None,
            out_format: OutFormat::Text,
            verify: true,
            stats: None,
            work_dir: None,
            mapped_state: false,
            direct: false,
            engine: EngineArg::Stream,
            vertex: crate::vertex::VertexArgs::default(),
        }
    }
}

#[derive(Clone, Copy, ValueEnum, PartialEq, Eq)]
pub enum OrderArg {
    Row,
    Column,
}

#[derive(Clone, Copy, ValueEnum, PartialEq, Eq)]
pub enum OutFormat {
    /// `id value` lines.
    Text,
    /// Little-endian records: u64 id, then the value as 8 bytes (i64, f64 or u64).
    Bin,
    /// A NumPy .npy file of a structured array with fields `id` and `value`.
    Npy,
}

pub(crate) fn parse_size_arg(s: &str) -> std::result::Result<u64, String> {
    parse_size(s).map_err(|e| e.to_string())
}

struct Bars {
    bar: ProgressBar,
}

impl StreamObserver for Bars {
    fn iteration(&self, it: u64, blocks: u64, active: u64) {
        self.bar.set_length(blocks);
        self.bar.set_position(0);
        self.bar
            .set_message(format!("iteration {it}, {active} active"));
    }
    fn block_done(&self, _edges: u64) {
        self.bar.inc(1);
    }
}

pub fn cmd_run(a: RunArgs) -> Result<()> {
    if a.engine == EngineArg::Vertex {
        return crate::vertex::cmd_run_vertex(a);
    }
    let start = Instant::now();
    let Some(algo) = Algo::from_name(&a.algo) else {
        bail!(
            "unknown algorithm '{}'; known: {}",
            a.algo,
            Algo::ALL.map(|x| x.name()).join(", ")
        );
    };
    if a.threads == Some(0) {
        bail!("--threads must be at least 1");
    }
    if a.mrt == 0 {
        bail!("--mrt must be at least 1");
    }
    if a.tolerance.is_nan() || a.tolerance <= 0.0 {
        bail!("--tolerance must be positive");
    }
    if !(a.damping > 0.0 && a.damping < 1.0) {
        bail!("--damping must be between 0 and 1");
    }
    let stats = IoStats::new();
    let store = Store::open_with(&a.store, ReadMode::Buffered, stats.clone())
        .with_context(|| format!("opening store {}", a.store.display()))?;
    let ids = store.id_map()?;
    let root = resolve_root(algo.name(), algo.needs_root(), a.root, &ids, &a.store)?;
    let cfg = StreamConfig {
        memory: a.memory,
        threads: a.threads.unwrap_or(0),
        mrt: a.mrt,
        order: match a.order {
            OrderArg::Row => BlockOrder::RowMajor,
            OrderArg::Column => BlockOrder::ColumnMajor,
        },
        work_dir: a.work_dir.clone(),
        force_mapped: a.mapped_state,
        direct_io: a.direct,
    };
    let mut engine = StreamEngine::new(&store, cfg)?;
    let bar = ProgressBar::new(0);
    bar.set_style(
        ProgressStyle::with_template("{prefix:>9} [{bar:30}] {pos}/{len} blocks {msg} {elapsed}")
            .unwrap()
            .progress_chars("=> "),
    );
    bar.set_prefix(algo.name().to_string());
    engine.set_observer(Box::new(Bars { bar: bar.clone() }));
    let params = Params {
        root,
        iterations: a.iterations,
        tolerance: a.tolerance,
        damping: a.damping,
        seed: a.seed,
    };
    let result = outcore_algos::run(&mut engine, algo, &params)?;
    bar.finish_and_clear();
    let run_secs = start.elapsed().as_secs_f64();
    let es = engine.stats();
    drop(engine);
    let verified = if a.verify {
        let t = Instant::now();
        let msg = verify(&store, algo, &params, &result.output)?;
        eprintln!("verify: {msg} ({:.2}s)", t.elapsed().as_secs_f64());
        Some(msg)
    } else {
        None
    };
    if let Some(out) = &a.out {
        write_output(out, a.out_format, &result.output, &ids, a.parents)
            .with_context(|| format!("writing {}", out.display()))?;
    }
    let peak = peak_memory();
    if let Some(path) = &a.stats {
        let j = serde_json::json!({
            "algorithm": algo.name(),
            "store": a.store,
            "vertices": store.vertices(),
            "edges": store.edges(),
            "partitions": store.partitions(),
            "memory_budget": a.memory,
            "threads": a.threads,
            "mrt": a.mrt,
            "order": match a.order { OrderArg::Row => "row", OrderArg::Column => "column" },
            "iterations": result.iterations,
            "summary": result.summary,
            "seconds": run_secs,
            "engine": es,
            "peak_rss_bytes": peak,
            "os_io": os_io(),
            "verified": verified,
        });
        std::fs::write(path, serde_json::to_string_pretty(&j)? + "\n")
            .with_context(|| format!("writing {}", path.display()))?;
    }
    eprintln!(
        "{}: {} in {:.2}s, {} iterations, {} blocks read ({} skipped), {} passes, {} edges processed, read {} in {} requests, wrote {}, I/O wait {:.2}s, compute {:.2}s{}",
        algo.name(),
        result.summary,
        run_secs,
        result.iterations,
        es.blocks_read,
        es.blocks_skipped,
        es.passes,
        es.edges_processed,
        format_bytes(es.bytes_read),
        es.read_requests,
        format_bytes(es.bytes_written),
        es.io_wait_seconds,
        es.compute_seconds,
        peak.map_or(String::new(), |p| format!(", peak memory {}", format_bytes(p)))
    );
    Ok(())
}

/// The dense id of `--root` (0 when the algorithm takes none).
pub(crate) fn resolve_root(
    name: &str,
    needs: bool,
    root: Option<u64>,
    ids: &IdMap,
    store: &Path,
) -> Result<u32> {
    match (needs, root) {
        (true, None) => bail!("{name} needs --root ID (a vertex id as in the input)"),
        (true, Some(r)) => ids
            .to_dense(r)
            .with_context(|| format!("--root {r} is not a vertex of {}", store.display())),
        (false, _) => Ok(0),
    }
}

/// Bytes this process read and wrote from storage, from /proc/self/io.
pub(crate) fn os_io() -> serde_json::Value {
    let Ok(s) = std::fs::read_to_string("/proc/self/io") else {
        return serde_json::Value::Null;
    };
    let get = |k: &str| {
        s.lines()
            .find_map(|l| l.strip_prefix(k))
            .and_then(|x| x.trim().parse::<u64>().ok())
    };
    serde_json::json!({ "read_bytes": get("read_bytes:"), "write_bytes": get("write_bytes:") })
}

/// One value column as text, and as 8 raw bytes with its numpy type.
enum Cell {
    I(i64),
    F(f64),
    U(u64),
}

/// For a relabelled store, each component's label as the smallest user id in it
/// (the smallest dense id is not the smallest user id there).
fn user_labels(out: &Output, ids: &IdMap) -> Option<Vec<u64>> {
    let (Output::Labels(l), Some(_)) = (out, ids.user_order()) else {
        return None;
    };
    let mut min = vec![u64::MAX; l.len()];
    for (v, &c) in l.iter().enumerate() {
        min[c as usize] = min[c as usize].min(ids.to_user(v as u32));
    }
    Some(l.iter().map(|&c| min[c as usize]).collect())
}

fn cells(
    out: &Output,
    ids: &IdMap,
    labels: Option<&[u64]>,
    v: usize,
    parents: bool,
) -> (Cell, Option<Cell>) {
    match out {
        Output::Bfs(a) => match outcore_algos::bfs_entry(a[v]) {
            Some((d, p)) => (
                Cell::I(d as i64),
                parents.then(|| Cell::I(ids.to_user(p) as i64)),
            ),
            None => (Cell::I(i64::MAX), parents.then_some(Cell::I(-1))),
        },
        Output::Sssp(a) => match outcore_algos::sssp_entry(a[v]) {
            Some((d, p)) => (
                Cell::F(d as f64),
                parents.then(|| Cell::I(ids.to_user(p) as i64)),
            ),
            None => (Cell::F(f64::INFINITY), parents.then_some(Cell::I(-1))),
        },
        Output::Labels(l) => (
            Cell::U(labels.map_or_else(|| ids.to_user(l[v]), |x| x[v])),
            None,
        ),
        Output::Flags(f) => (Cell::I(f[v] as i64), None),
        Output::Values(x) => (Cell::F(x[v]), None),
    }
}

fn text(c: &Cell, out: &Output) -> String {
    match c {
        Cell::I(x) => x.to_string(),
        Cell::U(x) => x.to_string(),
        Cell::F(x) if x.is_infinite() => "infinity".into(),
        Cell::F(x) => match out {
            // f32 distances: the shortest text that reads back as the same f32.
            Output::Sssp(_) => format!("{}", *x as f32),
            _ => format!("{x:.14e}"),
        },
    }
}

fn raw(c: &Cell) -> [u8; 8] {
    match c {
        Cell::I(x) => x.to_le_bytes(),
        Cell::U(x) => x.to_le_bytes(),
        Cell::F(x) => x.to_le_bytes(),
    }
}

fn dtype(c: &Cell) -> &'static str {
    match c {
        Cell::I(_) => "<i8",
        Cell::U(_) => "<u8",
        Cell::F(_) => "<f8",
    }
}

pub(crate) fn write_output(
    path: &Path,
    fmt: OutFormat,
    out: &Output,
    ids: &IdMap,
    parents: bool,
) -> Result<()> {
    let n = match out {
        Output::Bfs(a) | Output::Sssp(a) => a.len(),
        Output::Labels(a) | Output::Flags(a) => a.len(),
        Output::Values(a) => a.len(),
    };
    let tmp = path.with_extension("partial");
    let file =
        std::fs::File::create(&tmp).with_context(|| format!("creating {}", tmp.display()))?;
    let mut w = BufWriter::with_capacity(1 << 20, file);
    if fmt == OutFormat::Npy {
        let (c0, p0) = if n > 0 {
            cells(out, ids, None, 0, parents)
        } else {
            (Cell::F(0.0), None)
        };
        let mut descr = format!("[('id', '<u8'), ('value', '{}')", dtype(&c0));
        if let Some(p) = &p0 {
            descr += &format!(", ('parent', '{}')", dtype(p));
        }
        descr += "]";
        let mut header = format!("{{'descr': {descr}, 'fortran_order': False, 'shape': ({n},), }}");
        let total = 10 + header.len() + 1;
        header += &" ".repeat((64 - total % 64) % 64);
        header.push('\n');
        w.write_all(b"\x93NUMPY\x01\x00")?;
        w.write_all(&(header.len() as u16).to_le_bytes())?;
        w.write_all(header.as_bytes())?;
    }
    // Ascending user ids: dense order, unless the store was relabelled.
    let labels = user_labels(out, ids);
    let order = ids.user_order();
    for k in 0..n {
        let v = order.map_or(k, |o| o[k] as usize);
        let id = ids.to_user(v as u32);
        let (c, p) = cells(out, ids, labels.as_deref(), v, parents);
        match fmt {
            OutFormat::Text => {
                write!(w, "{id} {}", text(&c, out))?;
                if let Some(p) = &p {
                    write!(w, " {}", text(p, out))?;
                }
                w.write_all(b"\n")?;
            }
            OutFormat::Bin | OutFormat::Npy => {
                w.write_all(&id.to_le_bytes())?;
                w.write_all(&raw(&c))?;
                if let Some(p) = &p {
                    w.write_all(&raw(p))?;
                }
            }
        }
    }
    let file = w.into_inner().map_err(|e| e.into_error())?;
    file.sync_all()?;
    std::fs::rename(&tmp, path)?;
    Ok(())
}
