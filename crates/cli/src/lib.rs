//! `outcore` — the command line of the out-of-core graph system.
//!
//! Raw arguments are turned into validated settings here (clap), the library
//! crates do the work, and this crate owns presentation: progress bars on stderr
//! (indicatif), closing summary lines, and error messages with a non-zero exit.
//!
//! It is a library as well as the `outcore` binary so that other front ends run
//! exactly the same commands: [`main`] is the binary (process set-up, signal
//! clean-up, exit codes); [`run_args`] runs one command in-process and returns its
//! error instead of exiting (the Python package, `crates/py`, calls it with the
//! argument list it builds from keyword arguments). Everything a command needs is
//! per call — its thread pool included — so one process can run many commands.

mod args;
mod bench;
mod dist;
pub mod embed;
mod external;
mod jobs;
mod output;
mod progress;
mod run;
mod vertex;

use anyhow::{bail, Context, Result};
use clap::{Args, Parser, Subcommand};
use outcore_gen::{generate, GenKind, GenOptions};
use outcore_io::{format_bytes, IoStats};
use outcore_store::info::{store_info, StoreInfo};
use outcore_store::{Format, IngestOptions, Store};
use std::path::{Path, PathBuf};
use std::time::Instant;

#[derive(Parser)]
#[command(
    name = "outcore",
    version,
    about = "Out-of-core graph processing: generate, ingest and inspect graphs larger than memory"
)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Generate a synthetic graph as a binary (bin32/bin32w) or text edge list.
    Generate(GenerateArgs),
    /// Ingest edge lists (text, DIMACS, Matrix Market, binary; gzip allowed) into a store.
    Ingest(IngestArgs),
    /// Describe a store and verify its checksums.
    Info(InfoArgs),
    /// Run an algorithm on a store: the edge-streaming engine (CLIP), or with
    /// `--engine vertex` the page-cached vertex-centric engine (BAsC + Norder).
    Run(run::RunArgs),
    /// Run the built-in example end to end: generate, ingest, info, then algorithms.
    Example(ExampleArgs),
    /// Build the V-Part layout (destination-unique partitions with mirrored
    /// sources) for the external engine.
    Partition(external::PartitionArgs),
    /// Run several jobs (bfs, sssp, wcc, wcc-lp, pagerank) sharing one scan of the store (GraphCP).
    Jobs(jobs::JobsArgs),
    /// Measure the storage device under a directory (sequential and random, O_DIRECT).
    Calibrate(bench::CalibrateArgs),
    /// Read a store's grid once, sequentially: the one-pass floor no engine's
    /// pass can beat (run it cold: `outcore limit --evict STORE -- outcore scan STORE`).
    Scan(bench::ScanArgs),
    /// Compute and save a static-cache (BAsC) selection for the vertex engine.
    SelectCache(vertex::SelectArgs),
    /// Write a relabelled copy of a store (norder, degree, random) for the vertex engine.
    Reorder(vertex::ReorderArgs),
    /// Run a benchmark spec: each run in a memory-limited cgroup, cold cache; JSON lines, report, plots.
    Bench(bench::BenchArgs),
    /// Run a command under a hard memory limit (a child cgroup) with files evicted
    /// from the page cache first, as `outcore bench` runs each run.
    Limit(bench::LimitArgs),
    /// The scale-out engine (Chaos) under mpirun: `dist ingest` spreads a graph
    /// over the ranks' disks, `dist run` runs an algorithm on it (cargo feature `dist`).
    #[command(subcommand)]
    Dist(dist::DistCmd),
}

#[derive(Args)]
struct GenerateArgs {
    #[command(subcommand)]
    kind: GenKindArg,
}

#[derive(Args, Clone)]
struct GenCommon {
    /// Output file (binary bin32, or bin32w with --weighted; text with --text).
    #[arg(short, long)]
    out: PathBuf,
    /// Random seed: the same seed gives the same bytes on every run and thread count.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Add f32 weights uniform in (0, 1].
    #[arg(long)]
    weighted: bool,
    /// Write SNAP-style text (`u<TAB>v[<TAB>w]` lines) instead of binary.
    #[arg(long)]
    text: bool,
    /// Worker threads (default: all cores).
    #[arg(long)]
    threads: Option<usize>,
    /// Replace an existing output file.
    #[arg(long)]
    force: bool,
}

#[derive(Subcommand)]
enum GenKindArg {
    /// Graph500 Kronecker graph (A=0.57, B=0.19, C=0.19), labels permuted, edges shuffled.
    Kronecker {
        /// log2 of the vertex count.
        #[arg(long)]
        scale: u32,
        /// Edges per vertex.
        #[arg(long, default_value_t = 16)]
        edge_factor: u64,
        #[command(flatten)]
        common: GenCommon,
    },
    /// 2-D lattice, both directions of every edge (road-like, diameter rows+cols-2).
    Grid {
        #[arg(long)]
        rows: u64,
        #[arg(long)]
        cols: u64,
        #[command(flatten)]
        common: GenCommon,
    },
    /// Erdős–Rényi G(n, M): M directed edges with uniform endpoints.
    Uniform {
        #[arg(long)]
        vertices: u64,
        #[arg(long)]
        edges: u64,
        #[command(flatten)]
        common: GenCommon,
    },
    /// A directed path 0 -> 1 -> ... -> n-1.
    Path {
        #[arg(long)]
        vertices: u64,
        #[command(flatten)]
        common: GenCommon,
    },
}

#[derive(Args)]
struct IngestArgs {
    /// Input files (format detected from extension and content; .gz allowed).
    #[arg(required = true)]
    inputs: Vec<PathBuf>,
    /// Output store directory.
    #[arg(short, long)]
    out: PathBuf,
    /// Input format for every input: text, csv, dimacs, mtx, bin32, bin32w, bin64.
    #[arg(long)]
    format: Option<Format>,
    /// Store both directions of every edge.
    #[arg(long)]
    undirected: bool,
    /// Store each edge and its reverse, the reverse marked by the weight's sign
    /// (what scc needs: it follows edges backwards); weights must be non-negative.
    #[arg(long, conflicts_with = "undirected")]
    with_reverse: bool,
    /// Require weights (error if an input has none).
    #[arg(long, conflicts_with = "no_weights")]
    weighted: bool,
    /// Drop weights.
    #[arg(long)]
    no_weights: bool,
    /// Renumber arbitrary u64 ids densely; results are still written in your ids.
    #[arg(long)]
    remap: bool,
    /// Keep one copy of each (source, target) pair (the smallest weight).
    #[arg(long)]
    dedup: bool,
    /// Drop edges from a vertex to itself.
    #[arg(long)]
    drop_self_loops: bool,
    /// Memory budget, e.g. 512M, 1G.
    #[arg(long, default_value = "1G", value_parser = args::parse_memory_arg)]
    memory: u64,
    /// Grid partitions P (P x P blocks); default chosen from the vertex count and budget.
    #[arg(long)]
    partitions: Option<u32>,
    /// Declare the vertex count (e.g. 2^scale for Graph500); ids must be below it.
    #[arg(long, conflicts_with = "remap")]
    vertices: Option<u64>,
    /// Also write the in-edge CSR.
    #[arg(long)]
    in_edges: bool,
    /// Replace an existing store.
    #[arg(long)]
    force: bool,
    /// Directory for temporary sort runs (default: beside the output).
    #[arg(long)]
    tmp_dir: Option<PathBuf>,
    /// Worker threads (default: all cores).
    #[arg(long)]
    threads: Option<usize>,
    /// Relabel the vertices (norder, degree, random) for the vertex engine: the
    /// store is ingested, then rewritten in that order (as `outcore reorder`).
    #[arg(long)]
    order: Option<outcore_store::order::Order>,
    /// Seed of `--order random`.
    #[arg(long, default_value_t = 1)]
    order_seed: u64,
}

#[derive(Args)]
struct InfoArgs {
    /// Store directory.
    store: PathBuf,
    /// Print JSON instead of text.
    #[arg(long)]
    json: bool,
    /// Check headers only; skip streaming every file to verify its checksum.
    #[arg(long)]
    no_verify: bool,
    /// Also print the I/O cost model of BFS-like algorithms for this vertex order
    /// (BAsC-Norder §4.1: sum of in-degree x variance of out-neighbour ids; lower is better).
    #[arg(long)]
    cost_model: bool,
}

#[derive(Args)]
struct ExampleArgs {
    /// Working directory (default: a new temporary directory, removed afterwards).
    #[arg(long)]
    dir: Option<PathBuf>,
    /// Kronecker scale of the example graph.
    #[arg(long, default_value_t = 16)]
    scale: u32,
}

/// The `outcore` binary: sets the process up, runs the command named by the
/// process's arguments and exits non-zero with the error's text when it fails.
pub fn main() {
    // A closed pipe (`outcore info --json | head`) ends the process quietly, as it
    // does for every Unix filter, instead of a panic in println!.
    // SAFETY: setting a signal's disposition to the default before any thread
    // starts; no handler runs.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    set_allocator();
    let cli = Cli::parse();
    // Commands that make temporaries remove them on SIGINT/SIGTERM; the ones that
    // start child processes (bench, limit) keep the default signal handling.
    if !matches!(cli.cmd, Cmd::Bench(_) | Cmd::Limit(_) | Cmd::Info(_)) {
        outcore_io::temp::install_signal_cleanup();
    }
    let hint = read_only_hint(&cli.cmd);
    if let Err(e) = run(cli) {
        if outcore_io::temp::terminating() {
            // A signal's clean-up removed temporaries under the work: its thread
            // reports and exits with 128 + the signal.
            loop {
                std::thread::sleep(std::time::Duration::from_secs(1));
            }
        }
        let mut text = error_text(&e);
        if read_only(&e) && !hint.is_empty() {
            text.push_str("\nhint: ");
            text.push_str(hint);
        }
        eprintln!("outcore: error: {text}");
        std::process::exit(1);
    }
}

/// Buffers of 1 MiB and more are mapped and unmapped on their own, and freed
/// memory goes back to the system: glibc's default raises the mapping threshold
/// after the first large free, after which freed buffers stay in the arenas of
/// the threads that used them (tens of MiB beyond --memory for an ingest).
fn set_allocator() {
    // SAFETY: mallopt only sets allocator parameters, which glibc reads under its
    // own lock; allocations in flight on other threads are unaffected.
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 1 << 20);
        libc::mallopt(libc::M_TRIM_THRESHOLD, 1 << 20);
    }
}

/// Runs one command in this process, as `outcore ARGS...` would, and returns its
/// failure (the message the binary would print, and what kind of failure it is)
/// instead of printing it and exiting. `args` excludes the program name. No
/// signal handler is installed: the caller stops a command with
/// [`outcore_io::cancel::request`], after which its next read or write fails
/// and its temporaries are removed as on any error. Clap's own errors (and
/// `--help`, `--version`) come back as failures with clap's text.
pub fn run_args<I, T>(args: I) -> std::result::Result<(), embed::Failure>
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    set_allocator();
    let argv = std::iter::once(std::ffi::OsString::from("outcore"))
        .chain(args.into_iter().map(Into::into));
    let cli = Cli::try_parse_from(argv).map_err(embed::Failure::usage)?;
    let hint = read_only_hint(&cli.cmd);
    run(cli).map_err(|e| {
        let mut text = error_text(&e);
        if read_only(&e) && !hint.is_empty() {
            text.push_str("\nhint: ");
            text.push_str(hint);
        }
        embed::Failure::new(&e, text)
    })
}

/// True when the error comes from a file or directory this process may not write.
fn read_only(e: &anyhow::Error) -> bool {
    let denied = |io: &std::io::Error| {
        matches!(
            io.raw_os_error(),
            Some(libc::EROFS) | Some(libc::EACCES) | Some(libc::EPERM)
        ) || matches!(
            io.kind(),
            std::io::ErrorKind::ReadOnlyFilesystem | std::io::ErrorKind::PermissionDenied
        )
    };
    e.chain().any(|c| {
        c.downcast_ref::<outcore_io::IoError>()
            .is_some_and(|io| denied(&io.source))
            || c.downcast_ref::<std::io::Error>().is_some_and(denied)
    })
}

/// What to say when a command fails on a directory it may not write.
fn read_only_hint(cmd: &Cmd) -> &'static str {
    match cmd {
        Cmd::Run(_) | Cmd::Example(_) => "the store (or a directory named) is not writable: --work-dir DIR puts the run's own files (mapped vertex arrays, sort runs) elsewhere; the external engine's partition layout and the vertex engine's selections are saved in the store, so build them on a writable copy",
        Cmd::Ingest(_) | Cmd::Reorder(_) => "the output or temporary directory is not writable: choose another -o, or --tmp-dir DIR for the sort runs",
        Cmd::Partition(_) | Cmd::SelectCache(_) => "this command saves into the store, which is not writable: run it on a writable copy",
        _ => "",
    }
}

/// The error and its causes joined by ": ", each said once: a cause whose text
/// already ends the message (an I/O error that names its OS error, wrapped by
/// one that shows it again) is not repeated.
pub fn error_text(e: &anyhow::Error) -> String {
    let mut text = String::new();
    for cause in e.chain() {
        let c = cause.to_string();
        if text.ends_with(&c) || text.contains(&format!("{c}: ")) {
            continue;
        }
        if !text.is_empty() {
            text.push_str(": ");
        }
        text.push_str(&c);
    }
    text
}

pub(crate) fn set_threads(n: Option<usize>) -> Result<()> {
    if n == Some(0) {
        bail!("--threads must be at least 1");
    }
    Ok(())
}

/// The `--threads` a command names, if any.
fn cmd_threads(cmd: &Cmd) -> Option<usize> {
    match cmd {
        Cmd::Generate(a) => match &a.kind {
            GenKindArg::Kronecker { common, .. }
            | GenKindArg::Grid { common, .. }
            | GenKindArg::Uniform { common, .. }
            | GenKindArg::Path { common, .. } => common.threads,
        },
        Cmd::Ingest(a) => a.threads,
        Cmd::Run(a) => a.threads,
        Cmd::Jobs(a) => a.threads(),
        _ => None,
    }
}

/// Runs the command in a thread pool of its own when it names `--threads` (so
/// that every command in a process, e.g. from Python, has the count it asked
/// for), else in rayon's global pool (one thread per core).
fn run(cli: Cli) -> Result<()> {
    match cmd_threads(&cli.cmd) {
        Some(n) if n > 0 => rayon::ThreadPoolBuilder::new()
            .num_threads(n)
            .thread_name(|k| format!("outcore-{k}"))
            .build()
            .context("setting up threads")?
            .install(|| dispatch(cli)),
        _ => dispatch(cli),
    }
}

fn dispatch(cli: Cli) -> Result<()> {
    match cli.cmd {
        Cmd::Generate(a) => cmd_generate(a.kind),
        Cmd::Ingest(a) => cmd_ingest(a),
        Cmd::Info(a) => {
            cmd_info(&a.store, a.json, !a.no_verify)?;
            if a.cost_model {
                cmd_cost_model(&a.store, a.json)?;
            }
            Ok(())
        }
        Cmd::Run(a) => run::cmd_run(a),
        Cmd::Partition(a) => external::cmd_partition(a),
        Cmd::Example(a) => cmd_example(a),
        Cmd::Jobs(a) => jobs::cmd_jobs(a),
        Cmd::Calibrate(a) => bench::cmd_calibrate(a),
        Cmd::Scan(a) => bench::cmd_scan(a),
        Cmd::Bench(a) => bench::cmd_bench(a),
        Cmd::Limit(a) => bench::cmd_limit(a),
        Cmd::SelectCache(a) => vertex::cmd_select(a),
        Cmd::Reorder(a) => vertex::cmd_reorder(a),
        Cmd::Dist(c) => dist::cmd_dist(c),
    }
}

fn cmd_generate(kind: GenKindArg) -> Result<()> {
    let (kind, common) = match kind {
        GenKindArg::Kronecker {
            scale,
            edge_factor,
            common,
        } => (GenKind::Kronecker { scale, edge_factor }, common),
        GenKindArg::Grid { rows, cols, common } => (GenKind::Grid { rows, cols }, common),
        GenKindArg::Uniform {
            vertices,
            edges,
            common,
        } => (GenKind::Uniform { vertices, edges }, common),
        GenKindArg::Path { vertices, common } => (GenKind::Path { vertices }, common),
    };
    set_threads(common.threads)?;
    let opts = GenOptions {
        kind,
        seed: common.seed,
        weighted: common.weighted,
        text: common.text,
    };
    let start = Instant::now();
    let bar = progress::counter("generate", opts.kind.edges(), "edges");
    let stats = IoStats::new();
    if common.out.as_os_str() == "-" {
        bail!("generate writes a file: give -o a path, not -");
    }
    if std::fs::metadata(&common.out).is_ok_and(|m| m.is_file()) && !common.force {
        bail!(
            "{} exists; pass --force to replace it",
            common.out.display()
        );
    }
    // A regular file is written beside the target and renamed over it when whole;
    // a device or FIFO is written in place.
    let target = outcore_io::ResultFile::prepare(&common.out)?;
    let path = target.path_to_write().expect("not stdout").to_path_buf();
    let r = generate(&opts, &path, stats.clone(), &|d| bar.set_position(d))
        .with_context(|| format!("generating {}", common.out.display()))?;
    target.commit()?;
    bar.finish_and_clear();
    eprintln!(
        "generated {} vertices, {} edges into {} in {:.2} s ({} written)",
        r.vertices,
        r.edges,
        common.out.display(),
        start.elapsed().as_secs_f64(),
        format_bytes(stats.snapshot().bytes_written)
    );
    Ok(())
}

fn cmd_ingest(a: IngestArgs) -> Result<()> {
    set_threads(a.threads)?;
    let opts = IngestOptions {
        format: a.format,
        undirected: a.undirected,
        with_reverse: a.with_reverse,
        weighted: if a.weighted {
            Some(true)
        } else if a.no_weights {
            Some(false)
        } else {
            None
        },
        remap: a.remap,
        dedup: a.dedup,
        drop_self_loops: a.drop_self_loops,
        memory: a.memory,
        partitions: a.partitions,
        in_edges: a.in_edges,
        force: a.force,
        tmp_dir: a.tmp_dir,
        vertices: a.vertices,
        ..IngestOptions::default()
    };
    let obs = progress::IngestBars::new();
    let target = match a.order {
        Some(_) => {
            let name = a.out.file_name().context("--out needs a directory name")?;
            a.out
                .with_file_name(format!(".{}.unordered", name.to_string_lossy()))
        }
        None => a.out.clone(),
    };
    if a.order.is_some() && a.out.exists() && !a.force {
        bail!("{} exists; pass --force to replace it", a.out.display());
    }
    let opts_tmp = IngestOptions {
        force: opts.force || a.order.is_some(),
        ..opts.clone()
    };
    let mut r = outcore_store::ingest(&a.inputs, &target, &opts_tmp, &obs)?;
    let mut phases = obs.finish();
    if let Some(order) = a.order {
        let src = Store::open(&target)?;
        let obs2 = progress::IngestBars::new();
        let res = outcore_store::order::reorder(&src, &a.out, order, a.order_seed, &opts, &obs2);
        drop(src);
        let _ = std::fs::remove_dir_all(&target);
        let (r2, secs) = res?;
        phases = format!(
            "{phases}; {} order {secs:.2}s, rewrite {}",
            order.name(),
            obs2.finish()
        );
        r.seconds += r2.seconds;
        r.io.bytes_read += r2.io.bytes_read;
        r.io.bytes_written += r2.io.bytes_written;
        r.store_bytes = r2.store_bytes;
    }
    eprintln!(
        "ingested {} edges ({} input), {} vertices, P={} into {} in {:.2} s ({phases}): {:.1} M edges/s, read {}, wrote {} ({} store), {} sort runs, peak memory {}",
        r.edges,
        r.input_edges,
        r.vertices,
        r.partitions,
        a.out.display(),
        r.seconds,
        r.input_edges as f64 / r.seconds.max(1e-9) / 1e6,
        format_bytes(r.io.bytes_read),
        format_bytes(r.io.bytes_written),
        format_bytes(r.store_bytes),
        r.sort_runs,
        progress::peak_memory().map_or("unknown".into(), format_bytes)
    );
    Ok(())
}

fn cmd_info(dir: &Path, json: bool, verify: bool) -> Result<()> {
    let info = read_info(dir, verify)?;
    if json {
        println!("{}", serde_json::to_string_pretty(&info)?);
    } else {
        print_info(&info, verify);
    }
    damaged(dir, &info)
}

/// What `outcore info` reports about a store.
pub(crate) fn read_info(dir: &Path, verify: bool) -> Result<StoreInfo> {
    let store = Store::open(dir)?;
    Ok(store_info(&store, verify)?)
}

/// The error `outcore info` ends with when a file failed its checksum.
pub(crate) fn damaged(dir: &Path, info: &StoreInfo) -> Result<()> {
    if !info.checksums_ok {
        let bad: Vec<String> = info.files.iter().filter_map(|f| f.error.clone()).collect();
        return Err(embed::damaged(format!(
            "store {} is damaged:\n  {}",
            dir.display(),
            bad.join("\n  ")
        )));
    }
    Ok(())
}

fn cmd_cost_model(dir: &Path, json: bool) -> Result<()> {
    let store = Store::open(dir)?;
    let t = Instant::now();
    let cost = outcore_store::info::cost_model(&store, 16 << 20)?;
    if json {
        println!("{}", serde_json::json!({ "cost_model": cost }));
    } else {
        println!(
            "cost model   {cost:.6e} (sum of in-degree x variance of out-neighbour ids, BAsC-Norder §4.1; {:.2}s)",
            t.elapsed().as_secs_f64()
        );
    }
    Ok(())
}

fn print_info(i: &StoreInfo, verified: bool) {
    println!("store        {}", i.store);
    println!("vertices     {}", i.vertices);
    println!(
        "edges        {} ({}, {})",
        i.edges,
        if i.reverse_marked {
            "directed, each edge's reverse stored with a negative weight"
        } else if i.directed {
            "directed"
        } else {
            "undirected: both directions stored"
        },
        if i.weighted {
            "weighted f32"
        } else {
            "unweighted"
        }
    );
    println!("self-loops   {}", i.self_loops);
    if i.parallel_edges > 0 {
        println!(
            "parallel     {} edges repeat a stored (source, target) pair; pagerank and bc count each copy (ingest --dedup keeps one)",
            i.parallel_edges
        );
    } else {
        println!("parallel     0");
    }
    println!(
        "ids          {}",
        if i.remapped {
            "remapped (id map kept)".to_string()
        } else {
            format!("as given, base {}", i.id_base)
        }
    );
    if let Some(o) = &i.order {
        println!(
            "order        {} (from {}, computed in {:.2}s)",
            o.order, o.source, o.seconds
        );
    }
    for sel in &i.selections {
        println!(
            "static cache {} selection: {} vertices, {} edges, for {} (K {}, page {}), {:.2}s{}",
            sel.policy,
            sel.vertices,
            sel.edges,
            format_bytes(sel.budget),
            sel.k,
            format_bytes(sel.page_size),
            sel.seconds,
            sel.lists
                .as_ref()
                .map(|l| format!("; lists packed in {l}"))
                .unwrap_or_default()
        );
    }
    if let Some(v) = &i.vpart {
        println!(
            "vpart        {} partitions (largest {} destinations, for vertex memory {}): replication factor {:.2} ({}{}), space overhead {:.1}%, {}, built in {:.2}s",
            v.partitions,
            v.max_dests(),
            format_bytes(v.vertex_memory),
            v.replication_factor,
            v.assignment,
            v.other_replication
                .map(|r| format!("; {r:.2} by the other assignment"))
                .unwrap_or_default(),
            v.space_overhead * 100.0,
            format_bytes(v.bytes),
            v.seconds
        );
    }
    for (name, d) in [("out-degree", &i.out_degree), ("in-degree", &i.in_degree)] {
        println!(
            "{name:<12} max {} mean {:.2} zero {}",
            d.max, d.mean, d.zero
        );
        let hist: Vec<String> = d
            .histogram
            .iter()
            .map(|b| format!("[{},{}]:{}", b.lo, b.hi, b.count))
            .collect();
        println!("             histogram {}", hist.join(" "));
    }
    let g = &i.grid_blocks;
    println!(
        "grid         P={} ({} blocks, interval {} vertices); edges per block min {} median {} max {} mean {:.1}; {} empty",
        i.partitions, g.blocks, i.interval, g.min_edges, g.median_edges, g.max_edges, g.mean_edges, g.empty
    );
    let layouts: Vec<String> = i
        .layout_bytes
        .iter()
        .map(|(n, b)| format!("{n} {}", format_bytes(*b)))
        .collect();
    println!("bytes        {}", layouts.join(", "));
    if verified {
        let ok = i.files.iter().filter(|f| f.ok).count();
        println!(
            "checksums    {}",
            if i.checksums_ok {
                format!("all {ok} files verify")
            } else {
                format!("{} of {} files FAIL", i.files.len() - ok, i.files.len())
            }
        );
    } else {
        println!("checksums    not verified (headers only)");
    }
    for s in &i.stray {
        let what = match (s.state, s.pid) {
            ("running", Some(p)) => format!("temporary of running process {p}"),
            ("stale", Some(p)) => format!(
                "left by process {p}, which is gone; the next run in this directory removes it"
            ),
            _ => "not part of the store".to_string(),
        };
        println!(
            "stray        {} ({}): {what}",
            s.name,
            format_bytes(s.bytes)
        );
    }
}

fn cmd_example(a: ExampleArgs) -> Result<()> {
    let tmp;
    let dir = match a.dir {
        Some(d) => {
            std::fs::create_dir_all(&d).with_context(|| format!("creating {}", d.display()))?;
            d
        }
        None => {
            tmp = tempfile::tempdir().context("creating a temporary directory")?;
            tmp.path().to_path_buf()
        }
    };
    let edges = dir.join(format!("kron{}.bin32", a.scale));
    let store = dir.join(format!("kron{}.store", a.scale));
    eprintln!(
        "example: Graph500 Kronecker scale {} -> {}",
        a.scale,
        edges.display()
    );
    cmd_generate(GenKindArg::Kronecker {
        scale: a.scale,
        edge_factor: 16,
        common: GenCommon {
            out: edges.clone(),
            seed: 1,
            weighted: false,
            text: false,
            threads: None,
            force: true,
        },
    })?;
    eprintln!(
        "example: ingest as an undirected graph -> {}",
        store.display()
    );
    cmd_ingest(IngestArgs {
        inputs: vec![edges],
        out: store.clone(),
        format: None,
        undirected: true,
        with_reverse: false,
        weighted: false,
        no_weights: false,
        remap: false,
        dedup: true,
        drop_self_loops: true,
        memory: 256 << 20,
        partitions: None,
        vertices: Some(1 << a.scale),
        in_edges: false,
        force: true,
        tmp_dir: None,
        threads: None,
        order: None,
        order_seed: 1,
    })?;
    cmd_info(&store, false, true)?;
    for (algo, root) in [
        ("bfs", Some(0)),
        ("wcc", None),
        ("mis", None),
        ("pagerank", None),
    ] {
        eprintln!("example: run {algo} with --verify");
        run::cmd_run(run::RunArgs::example(algo, store.clone(), root))?;
    }
    eprintln!("example: jobs bfs:root=0 sssp:root=0 wcc pagerank sharing one scan, with --verify");
    jobs::cmd_jobs(jobs::JobsArgs::example(
        store.clone(),
        &["bfs:root=0", "sssp:root=0", "wcc", "pagerank:iterations=5"],
    ))?;
    for algo in ["bfs", "diam"] {
        eprintln!("example: run {algo} on the vertex engine, 5% page cache + 20% static cache chosen by GVS, with --verify");
        let mut args = run::RunArgs::example(algo, store.clone(), Some(0));
        args.engine = Some(run::EngineArg::Vertex);
        args.vertex.policy = Some(outcore_store::select::Policy::Gvs);
        args.vertex.k = 20;
        args.vertex.buffered = true;
        run::cmd_run(args)?;
    }
    Ok(())
}
