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
use outcore_store::Store;
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
    let choice = crate::external::choose(&a, &store, algo, engine.budget().remaining());
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
    if a.explain {
        let grid = store.grid()?;
        let one_pass: u64 = grid
            .entries()
            .iter()
            .map(|e| e.shape().block_bytes(store.weighted()))
            .sum();
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
            "engine_choice": { "engine": "stream", "reason": choice.reason },
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
                " ({b} bottom-up, {s} sparse: {} CSR edges in {:.2}s)",
                es.csr_edges, es.csr_seconds
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
