//! `outcore run ALGO STORE`: settings from flags, the engine, the result written in
//! the user's ids, `--verify`, `--stats`, progress and the closing summary.

use crate::args::BottomUpArg;
pub use crate::args::{EngineArg, OrderArg, RunArgs};
use crate::output::{os_io, parallel_note, resolve_root, Outputs};
use crate::progress::peak_memory;
use anyhow::{bail, Context, Result};
use indicatif::{ProgressBar, ProgressStyle};
use outcore_algos::{verify::verify, Algo, Params};
use outcore_engine::stream::StreamObserver;
use outcore_engine::{BlockOrder, StreamConfig, StreamEngine};
use outcore_io::{format_bytes, IoStats, ReadMode};
use outcore_store::{GridReader, Store};
use std::time::Instant;

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

/// The bytes of every grid block (with weights on a weighted store): what
/// one pass over the grid reads at most.
fn one_pass_bytes(grid: &GridReader, weighted: bool) -> u64 {
    grid.entries()
        .iter()
        .map(|e| e.shape().block_bytes(weighted))
        .sum()
}

/// What a streaming run holds: its buffers (what `--memory` leaves beside
/// them is `state_room`) and its vertex state, or as much of it as the budget
/// holds in memory.
fn held_bytes(store: &Store, algo: Algo, memory: u64, state_room: u64) -> u64 {
    let state = outcore_algos::stream_bytes_per_vertex(algo).saturating_mul(store.vertices());
    memory.saturating_sub(state_room) + state.min(state_room)
}

/// Whether the streaming engine reads the grid past the page cache by itself,
/// and why: when the grid is less than half cached and larger than the page
/// cache can hold beside a run holding `held` bytes under `limit` (the
/// machine's memory or this process's cgroup limit,
/// [`outcore_io::memory_limit`]). Such a grid is evicted before any pass
/// comes back to it, so the cache only adds a copy of every byte and its
/// reclaim. Kronecker 24 under a 512 MiB limit, cold, 2 threads
/// (docs/benchmarks.md, the one-pass floor): wcc 1.82 -> 1.33 s, bfs 3.60 ->
/// 3.02 s, pagerank x10 13.8 -> 11.4 s with `--direct`; at Kronecker 22,
/// whose grid fits, the cache is faster (wcc 0.27 against 0.36 s).
fn past_the_cache(store: &Store, held: u64, limit: Option<u64>) -> Result<Option<String>> {
    let Some(limit) = limit else {
        return Ok(None);
    };
    let grid = store.grid()?;
    let bytes = one_pass_bytes(&grid, store.weighted());
    let room = limit.saturating_sub(held);
    let cached = grid.cached_fraction();
    if bytes <= room || cached >= 0.5 {
        return Ok(None);
    }
    Ok(Some(format!(
        "; the grid ({}, {:.0}% cached) is larger than the page cache can hold beside the run ({} of the {} memory limit): read past the page cache (--page-cache reads through it)",
        format_bytes(bytes),
        100.0 * cached,
        format_bytes(room),
        format_bytes(limit)
    )))
}

pub fn cmd_run(a: RunArgs) -> Result<()> {
    // Result and statistics paths are checked before any work.
    let mut outputs = if a.explain {
        Outputs::default()
    } else {
        Outputs::prepare(a.out.as_deref(), a.out_format, a.stats.as_deref(), &a.store)?
    };
    // What killed runs left in the work directory (sort runs, spill files).
    outcore_io::temp::clean_stale(a.work_dir.as_deref().unwrap_or(&a.store));
    if a.engine == Some(EngineArg::Vertex) {
        return crate::vertex::cmd_run_vertex(a, outputs);
    }
    let start = Instant::now();
    let Some(algo) = Algo::from_name(&a.algo) else {
        if outcore_algos::vc::VAlgo::from_name(&a.algo).is_some() {
            bail!("{} runs on the vertex engine: add --engine vertex", a.algo);
        }
        bail!(
            "unknown algorithm '{}'; known: {} (and with --engine vertex: {})",
            a.algo,
            Algo::ALL.map(|x| x.name()).join(", "),
            outcore_algos::vc::VAlgo::ALL.map(|x| x.name()).join(", ")
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
    // The id map is mapped from the store (page cache); what it holds in
    // memory itself (an old relabelled store's order), and the labels pass of
    // a relabelled store's components (8 bytes a vertex), come out of --memory.
    let mut a = a;
    let labels = matches!(algo, Algo::Wcc | Algo::WccLp | Algo::Scc) && ids.user_order().is_some();
    let held_ids = ids.resident_bytes() + if labels { 8 * store.vertices() } else { 0 };
    if held_ids > 0 {
        if held_ids + (8 << 20) > a.memory {
            let why = if ids.resident_bytes() > 0 {
                "its id map's order, computed in memory for a store relabelled before idmap.order was written (re-run `outcore reorder` to write it)"
            } else {
                "the components' smallest user ids, 8 bytes a vertex on a relabelled store"
            };
            bail!(
                "--memory {} is too small: this run holds {} for {why}; give at least {}",
                format_bytes(a.memory),
                format_bytes(held_ids),
                format_bytes(held_ids + (16 << 20))
            );
        }
        a.memory -= held_ids;
    }
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
        band_columns: 0,
        bottom_up: a.bottom_up.into(),
        hold_grid: !a.read_every_pass,
    };
    let params = Params {
        root,
        iterations: a.iterations,
        tolerance: a.tolerance,
        damping: a.damping,
        seed: a.seed,
        coupling: a.coupling,
    };
    let mut engine = StreamEngine::new(&store, cfg.clone())?;
    let mut choice = crate::external::choose(&a, &store, algo, engine.budget().remaining());
    if choice.engine == EngineArg::Stream && !choice.direct && !a.direct && !a.page_cache {
        let held = held_bytes(&store, algo, a.memory, engine.budget().remaining());
        if let Some(why) = past_the_cache(&store, held, outcore_io::memory_limit())? {
            choice.direct = true;
            choice.reason += &why;
        }
        engine.count_io_from_now();
    }
    if choice.direct && !cfg.direct_io {
        drop(engine);
        engine = StreamEngine::new(
            &store,
            StreamConfig {
                direct_io: true,
                ..cfg
            },
        )?;
    }
    if matches!(choice.engine, EngineArg::External | EngineArg::Sortreduce) {
        drop(engine);
        return crate::external::run(a, store, algo, params, choice, start, outputs);
    }
    engine.check_ring()?;
    if a.explain {
        let one_pass = one_pass_bytes(&store.grid()?, store.weighted());
        println!(
            "engine: stream ({})\nmemory: {} ring slots of {}, {} left for vertex arrays\nper iteration at most: read {} (every grid block)",
            choice.reason,
            engine.stats().ring_slots,
            format_bytes(engine.stats().ring_slot_bytes),
            format_bytes(engine.budget().remaining()),
            format_bytes(one_pass)
        );
        if algo.name() == "bfs" {
            let reason = if a.bottom_up == BottomUpArg::Never {
                "top-down only (--bottom-up never)"
            } else if outcore_engine::bottom_up_lists(store.manifest()).is_some() {
                "direction-optimizing: large levels bottom-up over the in-edges, small ones from the out-edge lists, when the budget holds 4 bytes a vertex per direction beside the depths"
            } else {
                "top-down: small levels from the out-edge lists, the others along the grid; the store has no in-edges (ingest with --in-edges for direction-optimizing bfs)"
            };
            println!("bfs: {reason}");
        }
        return Ok(());
    }
    if choice.reason.contains("mapped from the work directory") {
        eprintln!("outcore: warning: {}", choice.reason);
    }
    let bar = ProgressBar::new(0);
    bar.set_style(
        ProgressStyle::with_template("{prefix:>9} [{bar:30}] {pos}/{len} blocks {msg} {elapsed}")
            .unwrap()
            .progress_chars("=> "),
    );
    bar.set_prefix(algo.name().to_string());
    crate::embed::track(&bar, algo.name());
    engine.set_observer(Box::new(Bars { bar: bar.clone() }));
    let mut result = outcore_algos::run(&mut engine, algo, &params)?;
    result.summary += &parallel_note(&store, algo.name());
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
    outputs.write_result(&result.output, &ids, a.parents)?;
    let peak = peak_memory();
    if outputs.stats.is_some() {
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
            "engine_choice": { "engine": "stream", "reason": choice.reason, "direct": choice.direct || a.direct },
            "engine": es,
            "peak_rss_bytes": peak,
            "os_io": os_io(),
            "verified": verified,
        });
        outputs.write_stats(&j)?;
    }
    eprintln!(
        "{}: {} in {:.2}s on the streaming engine ({}), {} iterations{}, {} blocks read ({} skipped), {} passes, {} edges processed, read {} in {} requests, wrote {}, I/O wait {:.2}s, compute {:.2}s{}",
        algo.name(),
        result.summary,
        run_secs,
        choice.reason,
        result.iterations,
        match (es.bottom_up_iterations, es.sparse_iterations) {
            (0, 0) => String::new(),
            (b, s) => format!(
                " ({b} bottom-up, {s} sparse: {} CSR edges{} in {:.2}s)",
                es.csr_edges,
                match es.csr_kept_edges {
                    0 => String::new(),
                    k => format!(", {k} of them from lists kept in memory"),
                },
                es.csr_seconds
            ),
        },
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

#[cfg(test)]
mod tests {
    use super::*;
    use outcore_store::ingest::Quiet;
    use outcore_store::{ingest, IngestOptions};

    #[test]
    fn the_grid_is_read_past_the_cache_only_when_it_cannot_stay_cached() {
        let dir = tempfile::tempdir().unwrap();
        let input = dir.path().join("g.txt");
        let text: String = (0..20_000u32)
            .map(|i| format!("{} {}\n", i, (i * 7 + 1) % 20_000))
            .collect();
        std::fs::write(&input, text).unwrap();
        let out = dir.path().join("g");
        ingest(&[input], &out, &IngestOptions::default(), &Quiet).unwrap();
        let store = Store::open(&out).unwrap();
        // No limit known, or room for the grid beside what the run holds.
        assert!(past_the_cache(&store, 0, None).unwrap().is_none());
        assert!(past_the_cache(&store, 1 << 20, Some(1 << 40))
            .unwrap()
            .is_none());
        // Just written, the grid is cached: read through the cache whatever
        // the limit.
        std::fs::read(out.join("grid.data")).unwrap();
        assert!(past_the_cache(&store, 0, Some(1)).unwrap().is_none());
        // Evicted, and larger than the room: past the cache.
        outcore_bench::cgroup::evict(std::slice::from_ref(&out));
        if store.grid().unwrap().cached_fraction() >= 0.5 {
            eprintln!("SKIP the evicted case: the page cache kept the grid (a tmpfs?)");
            return;
        }
        let why = past_the_cache(&store, 1 << 20, Some(1 << 20))
            .unwrap()
            .unwrap();
        assert!(why.contains("read past the page cache"), "{why}");
    }
}
