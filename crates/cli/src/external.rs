//! `outcore partition` and the fully-external engine behind `outcore run`: the
//! choice between the streaming engine (vertex state in memory) and the external
//! engine (vertex state beyond `--memory`), the V-Part layout built or rebuilt
//! when the budget needs it, `--explain`, and the run itself.

use crate::args::{EdgeReadsArg, EngineArg, RunArgs};
use crate::output::{os_io, Outputs};
use crate::progress::peak_memory;
use anyhow::{bail, Context, Result};
use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use outcore_algos::programs::{
    external_bytes_per_vertex, external_narrow, external_supported, run_program,
};
use outcore_algos::{
    stream_banded, stream_bytes_per_vertex, stream_random_bytes_per_vertex, verify::verify, Algo,
    Params,
};
use outcore_engine::external::{self, ExternalObserver, FIXED_BYTES};
use outcore_engine::{
    EdgeReads, ExternalConfig, ExternalEngine, SortReduceConfig, SortReduceEngine,
};
use outcore_io::{format_bytes, IoStats, ReadMode};
use outcore_store::vpart::{self, VpartOptions, VpartRecord, HEAVIEST_BYTES_PER_VERTEX};
use outcore_store::Store;
use std::path::PathBuf;
use std::time::Instant;

#[derive(Args)]
pub struct PartitionArgs {
    /// The store directory.
    pub store: PathBuf,
    /// Memory for one partition's destination data at run time (44 bytes per
    /// vertex, the heaviest algorithm's), e.g. 256M.
    #[arg(long, value_parser = crate::args::parse_size_arg)]
    pub vertex_memory: u64,
    /// Partitions (at least what --vertex-memory needs; at most 254).
    #[arg(long)]
    pub partitions: Option<u32>,
    /// Memory budget of the partitioning itself.
    #[arg(long, default_value = "1G", value_parser = crate::args::parse_memory_arg)]
    pub memory: u64,
    /// How destinations are assigned to partitions: `auto` builds the
    /// paper's greedy and the degree tiers (hubs together) and keeps the one
    /// with fewer mirrors (their owner arrays, a byte a vertex each, are
    /// mapped from scratch files when both do not fit half of --memory).
    #[arg(long, value_enum, default_value = "auto")]
    pub assign: AssignArg,
}

/// `outcore partition --assign`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum AssignArg {
    Auto,
    Greedy,
    DegreeTiers,
}

impl From<AssignArg> for Option<vpart::Assignment> {
    fn from(a: AssignArg) -> Self {
        match a {
            AssignArg::Auto => None,
            AssignArg::Greedy => Some(vpart::Assignment::Greedy),
            AssignArg::DegreeTiers => Some(vpart::Assignment::DegreeTiers),
        }
    }
}

pub fn cmd_partition(a: PartitionArgs) -> Result<()> {
    let store = Store::open_with(&a.store, ReadMode::Buffered, IoStats::new())
        .with_context(|| format!("opening store {}", a.store.display()))?;
    let opts = VpartOptions {
        vertex_memory: a.vertex_memory,
        partitions: a.partitions,
        memory: a.memory,
        assignment: a.assign.into(),
    };
    let rec = build(&store, &opts)?;
    eprintln!(
        "partitioned {} into {} partitions in {:.2}s: replication factor {:.2} ({}{}), space overhead {:.1}%, largest partition {} destinations ({} of vertex memory), {} written",
        a.store.display(),
        rec.partitions,
        rec.seconds,
        rec.replication_factor,
        rec.assignment,
        rec.other_replication
            .map(|r| format!("; {r:.2} by the other assignment"))
            .unwrap_or_default(),
        rec.space_overhead * 100.0,
        rec.max_dests(),
        format_bytes(rec.max_dests() * HEAVIEST_BYTES_PER_VERTEX),
        format_bytes(store.stats().snapshot().bytes_written)
    );
    Ok(())
}

fn build(store: &Store, opts: &VpartOptions) -> Result<VpartRecord> {
    let bar = ProgressBar::new(0);
    bar.set_style(
        ProgressStyle::with_template("partition {msg} [{bar:30}] {pos}/{len} {elapsed}")
            .unwrap()
            .progress_chars("=> "),
    );
    crate::embed::track(&bar, "partition");
    let rec = vpart::build(store, opts, &|phase, done, total| {
        bar.set_message(phase.to_string());
        bar.set_length(total);
        bar.set_position(done);
    })
    .with_context(|| format!("partitioning {}", store.dir().display()))?;
    bar.finish_and_clear();
    Ok(rec)
}

/// The largest share of a synchronous program's streaming state that may be
/// mapped for `outcore run` to keep the streaming engine (1/4): its arrays mapped
/// beyond the budget cost one sequential read and write an iteration, where the
/// external engine reads and writes every destination and mirror. Measured on
/// Kronecker 24, pagerank x10, cold, against the external engine on a
/// 3-partition layout: at --memory 448M (4% of the 448 MiB state mapped, 512 MiB
/// limit) 22.6 s against 40.6 s; at 360M (24% mapped, 424 MiB limit) 25.8-27.2 s
/// against 39.8-41.3 s.
const MAPPED_SHARE_FOR_STREAM: (u64, u64) = (1, 4);

/// Whether the streaming engine runs `algo` without random I/O on mapped arrays
/// and maps at most [`MAPPED_SHARE_FOR_STREAM`] of its `need` bytes of state: the
/// arrays its edge pass touches at random fit `state_room`.
fn mapped_in_order(algo: Algo, vertices: u64, need: u64, state_room: u64) -> bool {
    let Some(random) = stream_random_bytes_per_vertex(algo) else {
        return false;
    };
    let (num, den) = MAPPED_SHARE_FOR_STREAM;
    random * vertices <= state_room && need.saturating_sub(state_room) * den <= need * num
}

/// The most bands of grid columns a relaxation program's mapped array may run
/// in for `outcore run` to keep the streaming engine ([`stream_bands`]): each
/// band reads the whole grid row by row for its columns, so the edges are read
/// once an iteration whatever the band count, but a band's blocks are small
/// reads at every row. Kronecker 24, cold, `--direct`, against the external
/// engine on a layout built for the same budget (`docs/benchmarks-vpart.md`):
/// on the first layout format, 3 bands 72 s against 103 s (sssp), hence 3 for
/// sssp and wcc-lp (not re-measured since); bfs 0 — on layout format 3 the
/// external engine is faster at every band count measured: 2 bands 14.3 s
/// against 11.0 s, 3 bands 12.2 and 13.7 s against 10.1 and 10.0 s, 5 bands
/// 23.9 s against 14.7 s, 16 bands 25.1 s against 13.7 s.
fn max_bands_for_stream(algo: Algo) -> u64 {
    if algo == Algo::Bfs {
        0
    } else {
        3
    }
}

/// The bands of grid columns the streaming engine runs `algo`'s mapped
/// relaxation array in when `state_room` is what the budget leaves beside its
/// buffers (as `StreamEngine::band_columns` sizes them: columns whose slice of
/// the array fits 3/4 of what is left after the settled-vertex bitmap, when the
/// program keeps one); `None`
/// when it would not run band by band.
fn stream_bands(algo: Algo, store: &Store, state_room: u64) -> Option<u64> {
    let settles = stream_banded(algo, store.manifest().directed)?;
    let column = store.interval(0).len() as u64 * stream_bytes_per_vertex(algo);
    let bitmap = if settles {
        store.vertices().div_ceil(64) * 8
    } else {
        0
    };
    let left = state_room.saturating_sub(bitmap);
    bands(store.partitions() as u64, column, left)
}

/// Bands of `columns` grid columns of `column` bytes each when `left` bytes
/// are left for a band's slice (3/4 of them used); `None` when not one column fits.
fn bands(columns: u64, column: u64, left: u64) -> Option<u64> {
    let w = (left / 4 * 3 / column.max(1)).min(columns);
    (w > 0).then(|| columns.div_ceil(w))
}

/// Which engine runs, and why.
pub struct Choice {
    pub engine: EngineArg,
    pub reason: String,
    /// The streaming engine reads the grid past the page cache (`--direct`):
    /// taken for a mapped array run in bands, whose blocks are read a band's
    /// columns at a time, so that the kernel's read-ahead into the next band's
    /// blocks, evicted before use under the limit, is not paid (Kronecker 24 at
    /// 80M: bfs 15.3 s with it, 23.4 s without; sssp 74 s and 114 s).
    pub direct: bool,
}

/// The engine `outcore run` takes: `--engine` when given; otherwise the
/// streaming engine when the algorithm's vertex state fits what `--memory`
/// leaves beside the streaming engine's buffers (`state_room`), or when it does
/// not but the arrays mapped beyond it are only read and written in order and
/// are a small share of it ([`mapped_in_order`]), or when it is a relaxation
/// program's one array run in at most [`max_bands_for_stream`] bands; else the
/// external engine when it runs the algorithm and one partition fits the
/// budget; else the streaming engine with mapped arrays (band by band for
/// relaxation programs).
pub fn choose(a: &RunArgs, store: &Store, algo: Algo, state_room: u64) -> Choice {
    let need = stream_bytes_per_vertex(algo) * store.vertices();
    let fits = need <= state_room;
    let what = format!(
        "vertex state {} ({} B x {} vertices) {} the {} --memory leaves beside the streaming engine's buffers",
        format_bytes(need),
        stream_bytes_per_vertex(algo),
        store.vertices(),
        if fits { "fits" } else { "exceeds" },
        format_bytes(state_room)
    );
    let bands = stream_bands(algo, store, state_room);
    match a.engine {
        Some(EngineArg::External) => Choice {
            direct: false,
            engine: EngineArg::External,
            reason: format!("--engine external; {what}"),
        },
        Some(EngineArg::Sortreduce) => Choice {
            direct: false,
            engine: EngineArg::Sortreduce,
            reason: format!("--engine sortreduce; {what}"),
        },
        Some(e) => Choice {
            direct: false,
            engine: e,
            reason: if fits || a.mapped_state {
                format!("--engine stream; {what}")
            } else {
                format!("--engine stream; {what}, so arrays are mapped from the work directory (slow: the kernel pages them at random)")
            },
        },
        None if fits && !a.mapped_state => Choice {
            direct: false,
            engine: EngineArg::Stream,
            reason: what,
        },
        None if a.mapped_state => Choice {
            direct: false,
            engine: EngineArg::Stream,
            reason: format!("--mapped-state; {what}"),
        },
        None if mapped_in_order(algo, store.vertices(), need, state_room) => Choice {
            direct: false,
            engine: EngineArg::Stream,
            reason: format!(
                "{what}; the arrays its edge pass touches at random ({} B a vertex) fit, and the {} mapped beyond them are read and written in order once an iteration, cheaper than the external engine's partitions",
                stream_random_bytes_per_vertex(algo).unwrap_or(0),
                format_bytes(need.saturating_sub(state_room))
            ),
        },
        None if bands.is_some_and(|b| b <= max_bands_for_stream(algo)) => Choice {
            direct: true,
            engine: EngineArg::Stream,
            reason: format!(
                "{what}; its mapped array runs in {} bands of the grid's columns (at most {}), each band's slice in memory and written back once an iteration, the grid read past the page cache: cheaper than the external engine's partitions",
                bands.unwrap_or(0),
                max_bands_for_stream(algo)
            ),
        },
        None if external_supported(algo) && !external_fits(a, store, algo) => Choice {
            direct: bands.is_some(),
            engine: EngineArg::Stream,
            reason: format!(
                "{what}, and the external engine cannot hold one partition in --memory {}: arrays are mapped from the work directory{}",
                format_bytes(a.memory),
                match bands {
                    Some(b) => format!(
                        ", the relaxation array run in {b} bands of the grid's columns, the grid read past the page cache"
                    ),
                    None => " (slow: the kernel pages them at random)".into(),
                }
            ),
        },
        None if external_supported(algo) => Choice {
            direct: false,
            engine: EngineArg::External,
            reason: format!("{what}: the external engine holds one partition at a time"),
        },
        None => Choice {
            direct: false,
            engine: EngineArg::Stream,
            reason: format!(
                "{what}, but {} does not run on the external engine: arrays are mapped from the work directory (slow)",
                algo.name()
            ),
        },
    }
}

/// Whether the external engine can run `algo` under `--memory`: on the store's
/// layout, or on one built for the budget.
fn external_fits(a: &RunArgs, store: &Store, algo: Algo) -> bool {
    let threads = run_threads(a);
    layout_fits(a, store, algo, threads)
        || vertex_memory_for(store, a.memory, algo, edge_bytes(store), threads).is_ok()
}

/// Whether the store's layout (if any) holds `algo` under `--memory`.
fn layout_fits(a: &RunArgs, store: &Store, algo: Algo, threads: usize) -> bool {
    store.manifest().vpart.as_ref().is_some_and(|r| {
        if r.version != vpart::VPART_VERSION {
            // Written by an earlier version: rebuilt.
            return false;
        }
        let bpv = external_bytes_per_vertex(algo);
        external::plan(
            r,
            a.memory,
            bpv,
            external_narrow(algo),
            edge_bytes(store),
            threads,
        )
        .is_ok()
    })
}

/// Threads of an external or sort-reduce run: `--threads`, else every core.
fn run_threads(a: &RunArgs) -> usize {
    a.threads
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |x| x.get()))
}

/// Bytes of one edge record in a layout: target, and weight when weighted.
fn edge_bytes(store: &Store) -> u64 {
    if store.weighted() {
        8
    } else {
        4
    }
}

/// Vertex memory to partition for under `memory`: the largest that leaves the
/// engine its fixed part, mirror buffers and chunk buffers.
fn vertex_memory_for(
    store: &Store,
    memory: u64,
    algo: Algo,
    eb: u64,
    threads: usize,
) -> Result<VpartOptions> {
    let (bpv, narrow) = (external_bytes_per_vertex(algo), external_narrow(algo));
    let n = store.vertices();
    let mut vm = memory.saturating_sub(FIXED_BYTES) * 3 / 4;
    while vm >= HEAVIEST_BYTES_PER_VERTEX {
        let opts = VpartOptions {
            vertex_memory: vm,
            partitions: None,
            memory,
            assignment: None,
        };
        let Ok((k, cap)) = vpart::plan(n, &opts) else {
            break;
        };
        let probe = VpartRecord {
            partitions: k,
            vertex_memory: vm,
            bytes_per_vertex: HEAVIEST_BYTES_PER_VERTEX,
            capacity: cap,
            dests: vec![cap],
            mirrors: vec![],
            edges: vec![],
            replication_factor: 0.0,
            space_overhead: 0.0,
            bytes: 0,
            seconds: 0.0,
            target_bits: 32,
            version: vpart::VPART_VERSION,
            assignment: vpart::Assignment::Greedy,
            other_replication: None,
        };
        if external::plan(&probe, memory, bpv, narrow, eb, threads).is_ok() {
            return Ok(opts);
        }
        vm = vm * 3 / 4;
    }
    Err(crate::embed::budget(format!(
        "--memory {} is too small for the external engine: {} vertices at {bpv} bytes each in at most {} partitions, beside {} fixed, mirror buffers and {} of chunk buffers",
        format_bytes(memory),
        n,
        vpart::MAX_PARTITIONS,
        format_bytes(FIXED_BYTES),
        format_bytes(2 * external::min_slot(eb))
    )))
}

struct Bars {
    bar: ProgressBar,
}
impl ExternalObserver for Bars {
    fn iteration(&self, it: u64, partitions: u32, active: u64) {
        self.bar.set_length(partitions as u64);
        self.bar.set_position(0);
        self.bar
            .set_message(format!("iteration {it}, {active} active"));
    }
    fn partition_done(&self, _: u32) {
        self.bar.inc(1);
    }
}

/// Bytes an iteration of `algo` reads and writes at most on the layout.
fn per_iteration_bytes(store: &Store, rec: &VpartRecord, algo: Algo) -> (u64, u64) {
    let codec = rec.codec(store.weighted());
    let edge_bytes: u64 = rec.edges.iter().map(|&e| codec.payload_bytes(e)).sum();
    let mirrors: u64 = rec.mirrors.iter().sum();
    // The source tables' compact entries, and a mirror mask per destination.
    let sources: u64 = store
        .manifest()
        .files
        .iter()
        .filter(|f| f.name.starts_with("vpart.") && f.name.ends_with(".sources"))
        .map(|f| f.bytes)
        .sum();
    let n = store.vertices();
    let vb = external_bytes_per_vertex(algo) - 20 + 8;
    let mask = vpart::mask_bytes(rec.partitions) as u64;
    let read = edge_bytes + sources + mirrors * 8 + n * (vb + 4 + mask);
    let written = n * vb + mirrors * 16;
    (read, written)
}

/// `outcore run` on the external engine (the layout built first when missing or
/// too coarse for `--memory`), or on the sort-reduce baseline.
pub fn run(
    a: RunArgs,
    store: Store,
    algo: Algo,
    params: Params,
    choice: Choice,
    start: Instant,
    mut outputs: Outputs,
) -> Result<()> {
    let name = if choice.engine == EngineArg::Sortreduce {
        "sort-reduce"
    } else {
        "external"
    };
    if !external_supported(algo) {
        let why = if algo == Algo::Mcst {
            "; mcst's edges read their destination's value, which this engine does not hold where it combines updates: use --engine stream"
        } else {
            ""
        };
        bail!(
            "{} does not run on the {name} engine (it runs bfs, sssp, wcc-lp, pagerank, pagerank-delta, spmv, conductance, mis-gas, scc, bp){why}",
            algo.name()
        );
    }
    let threads = run_threads(&a);
    if choice.engine == EngineArg::Sortreduce {
        if a.explain {
            let eb = edge_bytes(&store);
            println!(
                "engine: sort-reduce ({})\nper iteration at most: read {} of edges and offsets, sort {} updates (16 bytes each in memory, 12 spilled), vertex values read twice and written once",
                choice.reason,
                format_bytes(store.edges() * eb + store.vertices() * 16),
                store.edges()
            );
            return Ok(());
        }
        let cfg = SortReduceConfig {
            memory: a.memory,
            threads,
            work_dir: a.work_dir.clone(),
            direct_io: a.direct,
            buffer_updates: None,
        };
        let mut engine = SortReduceEngine::new(&store, cfg)?;
        let t_run = Instant::now();
        let result = run_program(&mut engine, &store, algo, &params)?;
        let run_secs = t_run.elapsed().as_secs_f64();
        let es = engine.stats().clone();
        let line = format!(
            "{} iterations, {} edges processed, {} updates sorted in {} runs ({} spilled), read {} in {} requests, wrote {}, scan {:.2}s, sort {:.2}s, apply {:.2}s",
            result.iterations,
            es.edges_processed,
            es.updates,
            es.runs,
            format_bytes(es.run_bytes_written),
            format_bytes(es.bytes_read),
            es.read_requests,
            format_bytes(es.bytes_written),
            es.scan_seconds,
            es.sort_seconds,
            es.apply_seconds
        );
        let stats = serde_json::json!({ "engine": es });
        return finish(
            &a,
            &store,
            algo,
            &params,
            result,
            &choice,
            name,
            run_secs,
            start,
            stats,
            line,
            &mut outputs,
        );
    }
    let bpv = external_bytes_per_vertex(algo);
    let eb = edge_bytes(&store);
    let current = store.manifest().vpart.clone();
    let fits = layout_fits(&a, &store, algo, threads);
    let mut store = store;
    let mut built = None;
    if !fits {
        let opts = vertex_memory_for(&store, a.memory, algo, eb, threads)?;
        let (k, cap) = vpart::plan(store.vertices(), &opts)?;
        let why = match &current {
            None => "the store has no V-Part layout".to_string(),
            Some(r) if r.version != vpart::VPART_VERSION => format!(
                "its layout has format {}, this build reads format {}",
                r.version,
                vpart::VPART_VERSION
            ),
            Some(r) => format!(
                "its {} partitions of up to {} destinations do not fit --memory {}",
                r.partitions,
                r.max_dests(),
                format_bytes(a.memory)
            ),
        };
        if a.explain {
            println!(
                "engine: external ({})\nlayout: to be built: {why}; {k} partitions of at most {cap} destinations (vertex memory {})",
                choice.reason,
                format_bytes(opts.vertex_memory)
            );
            return Ok(());
        }
        eprintln!(
            "partition: {why}; building {k} partitions for vertex memory {}",
            format_bytes(opts.vertex_memory)
        );
        let rec = build(&store, &opts)?;
        built = Some(rec);
        store = Store::open_with(&a.store, ReadMode::Buffered, store.stats().clone())?;
    }
    let rec = store.manifest().vpart.clone().expect("a layout");
    let plan = external::plan(&rec, a.memory, bpv, external_narrow(algo), eb, threads)
        .map_err(crate::embed::budget)?;
    if a.explain {
        let (r, w) = per_iteration_bytes(&store, &rec, algo);
        println!(
            "engine: external ({})\nlayout: {} partitions, largest {} destinations, replication factor {:.2}, space overhead {:.1}%\nmemory: {} destination data, {} chunk buffers ({} source entries, {} edges a window), {} fixed + mirror buffers\nper iteration at most: read {}, write {} (every source active)",
            choice.reason,
            rec.partitions,
            rec.max_dests(),
            rec.replication_factor,
            rec.space_overhead * 100.0,
            format_bytes(plan.dest_memory),
            format_bytes(plan.chunk_memory),
            plan.chunk_entries,
            plan.window_edges,
            format_bytes(FIXED_BYTES + rec.partitions as u64 * plan.mirror_buffer),
            format_bytes(r),
            format_bytes(w)
        );
        return Ok(());
    }
    let cfg = ExternalConfig {
        memory: a.memory,
        threads,
        work_dir: a.work_dir.clone(),
        direct_io: a.direct,
        edge_reads: match a.edge_reads {
            EdgeReadsArg::Auto => EdgeReads::Auto,
            EdgeReadsArg::Whole => EdgeReads::Whole,
            EdgeReadsArg::Selective => EdgeReads::Selective,
        },
        result_window: 0,
        narrow_lists: true,
        mirror_bits: true,
        settle: !a.no_settle,
    };
    let mut engine = ExternalEngine::new(&store, cfg)?;
    let bar = ProgressBar::new(0);
    bar.set_style(
        ProgressStyle::with_template(
            "{prefix:>9} [{bar:30}] {pos}/{len} partitions {msg} {elapsed}",
        )
        .unwrap()
        .progress_chars("=> "),
    );
    bar.set_prefix(algo.name().to_string());
    crate::embed::track(&bar, algo.name());
    engine.set_observer(Box::new(Bars { bar: bar.clone() }));
    let t_run = Instant::now();
    let result = run_program(&mut engine, &store, algo, &params)?;
    bar.finish_and_clear();
    let run_secs = t_run.elapsed().as_secs_f64();
    let es = engine.stats().clone();
    drop(engine);
    let line = format!(
        "{} iterations, {} partitions, {} edges processed, read {} (edges {}) in {} requests, wrote {}, mirror updates {} in {:.2}s ({:.2}s not overlapped), I/O {:.2}s, compute {:.2}s",
        result.iterations,
        es.partitions,
        es.edges_processed,
        format_bytes(es.bytes_read),
        format_bytes(es.edge_bytes_read),
        es.read_requests,
        format_bytes(es.bytes_written),
        format_bytes(es.mirror_update_bytes),
        es.mirror_update_seconds,
        es.mirror_wait_seconds,
        es.io_seconds,
        es.compute_seconds
    );
    let stats = serde_json::json!({ "partitioned": built, "vpart": rec, "engine": es });
    finish(
        &a,
        &store,
        algo,
        &params,
        result,
        &choice,
        name,
        run_secs,
        start,
        stats,
        line,
        &mut outputs,
    )
}

/// Verify, output, `--stats` and the summary line of a run of either engine.
#[allow(clippy::too_many_arguments)]
fn finish(
    a: &RunArgs,
    store: &Store,
    algo: Algo,
    params: &Params,
    result: outcore_algos::Run,
    choice: &Choice,
    name: &str,
    run_secs: f64,
    start: Instant,
    engine_stats: serde_json::Value,
    line: String,
    outputs: &mut Outputs,
) -> Result<()> {
    let mut result = result;
    result.summary += &crate::output::parallel_note(store, algo.name());
    let verified = if a.verify {
        let t = Instant::now();
        let msg = verify(store, algo, params, &result.output)?;
        eprintln!("verify: {msg} ({:.2}s)", t.elapsed().as_secs_f64());
        Some(msg)
    } else {
        None
    };
    let ids = store.id_map()?;
    outputs.write_result(&result.output, &ids, a.parents)?;
    let peak = peak_memory();
    if outputs.stats.is_some() {
        let mut j = serde_json::json!({
            "algorithm": algo.name(),
            "store": a.store,
            "vertices": store.vertices(),
            "edges": store.edges(),
            "memory_budget": a.memory,
            "threads": a.threads,
            "iterations": result.iterations,
            "summary": result.summary,
            "seconds": run_secs,
            "total_seconds": start.elapsed().as_secs_f64(),
            "engine_choice": { "engine": name, "reason": choice.reason },
            "peak_rss_bytes": peak,
            "os_io": os_io(),
            "verified": verified,
        });
        if let (Some(o), serde_json::Value::Object(e)) = (j.as_object_mut(), engine_stats) {
            o.extend(e);
        }
        outputs.write_stats(&j)?;
    }
    eprintln!(
        "{}: {} in {:.2}s on the {name} engine ({}), {line}{}",
        algo.name(),
        result.summary,
        run_secs,
        choice.reason,
        peak.map_or(String::new(), |p| format!(
            ", peak memory {}",
            format_bytes(p)
        ))
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Kronecker 24 (64 columns of 262,144 vertices, 8 B each, a 2 MiB settled
    /// bitmap) at the budgets measured: what `--explain` reports the streaming
    /// engine leaves at 112M, 80M, 56M and 32M gives 2, 3, 5 and 16 bands, as
    /// the runs counted (`bands` in `--stats`).
    #[test]
    fn bands_follow_the_room_left_as_the_engine_sizes_them() {
        let mib = |x: f64| (x * 1048576.0) as u64;
        let col = 262_144 * 8;
        for (room, want) in [(92.93, 2), (60.93, 3), (36.93, 5), (12.93, 16)] {
            assert_eq!(
                super::bands(64, col, mib(room) - mib(2.0)),
                Some(want),
                "{room}"
            );
        }
        assert_eq!(super::bands(64, col, mib(2.0)), None);
        assert_eq!(super::bands(4, 1, 1 << 20), Some(1));
    }

    #[test]
    fn mapped_in_order_needs_sequential_arrays_and_a_small_mapped_share() {
        let n = 1000;
        // pagerank: 28 B a vertex, of which sums and out-degrees (12 B) at random.
        let need = 28 * n;
        assert!(mapped_in_order(Algo::PageRank, n, need, 21 * n)); // a quarter mapped
        assert!(!mapped_in_order(Algo::PageRank, n, need, 20 * n)); // more than a quarter
        assert!(!mapped_in_order(Algo::PageRank, n, 60 * n, 11 * n)); // sums do not fit
                                                                      // Arrays written at random: bfs, sssp (relaxation), wcc (union-find).
        for a in [Algo::Bfs, Algo::Sssp, Algo::Wcc, Algo::MisLuby] {
            assert!(!mapped_in_order(a, n, 8 * n, 8 * n - 1), "{}", a.name());
        }
    }
}
