//! `outcore jobs STORE SPEC...`: several BSP jobs sharing one scan of the store
//! (GraphCP's engine, `outcore_engine::jobs`).

use crate::args::OutFormat;
use crate::output::{prepare_output, write_output, Outputs};
use crate::progress::peak_memory;
use anyhow::{bail, Context, Result};
use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use outcore_algos::jobs::{make_jobs, BspJob, JobSpec};
use outcore_algos::verify::verify;
use outcore_algos::{Algo, Params};
use outcore_engine::{Granularity, IoMode, Job, JobStats, JobsConfig, JobsEngine, JobsObserver};
use outcore_io::{format_bytes, parse_size, DeviceProfile, IoStats, ReadMode};
use outcore_state::StateBudget;
use outcore_store::Store;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

#[derive(Args)]
pub struct JobsArgs {
    /// The store directory.
    store: PathBuf,
    /// Jobs as `algo[:key=value,...]`: bfs:root=ID, sssp:root=ID, wcc (one-pass
    /// union-find), wcc-lp (label propagation), pagerank[:iterations=K,damping=D].
    /// Roots are in the user's ids.
    #[arg(required = true)]
    specs: Vec<String>,
    /// Memory budget for loaded sub-blocks, e.g. 512M.
    #[arg(long, default_value = "1G", value_parser = crate::args::parse_memory_arg)]
    memory: u64,
    /// Worker threads shared by the jobs (default: one per core).
    #[arg(long)]
    threads: Option<usize>,
    /// auto (cost model, per iteration), sequential (whole sub-blocks), selective
    /// (only the active sources' runs) or lists (the active sources' whole
    /// out-edge lists, from the CSR).
    #[arg(long, default_value = "auto")]
    io_mode: IoMode,
    /// Where auto decides: once per iteration (GraphCP) or for each row of the
    /// grid (each source interval's sub-blocks).
    #[arg(long, default_value = "iteration")]
    io_granularity: Granularity,
    /// The I/O block size B of the cost model (GraphCP Algorithm 1).
    #[arg(long, default_value = "64K", value_parser = |s: &str| parse_size(s))]
    io_block: u64,
    /// Device profile for the cost model (default: the one `outcore calibrate --save` wrote).
    #[arg(long)]
    profile: Option<PathBuf>,
    /// Turn off dependency-based future-vertex updating (GraphCP §3.4).
    #[arg(long)]
    no_dfvu: bool,
    /// DFVU rounds per row in memory (1 = GraphCP's single look-ahead; more is
    /// CLIP-like re-entry for the min-monotone jobs).
    #[arg(long, default_value_t = 1)]
    dfvu_rounds: u32,
    /// Do not keep an iteration's first whole sub-blocks in memory (in what the
    /// budget leaves beside two units) for the next iteration.
    #[arg(long)]
    no_reuse: bool,
    /// Read the store with O_DIRECT.
    #[arg(long)]
    direct: bool,
    /// Directory for vertex arrays mapped beyond --memory (default: the store).
    #[arg(long)]
    work_dir: Option<PathBuf>,
    /// Write one result file per job here: job-N-ALGO.{txt,bin,npy,csv}.
    #[arg(long)]
    out_dir: Option<PathBuf>,
    #[arg(long, value_enum, default_value_t = OutFormat::Text)]
    out_format: OutFormat,
    /// Check every job's result independently.
    #[arg(long)]
    verify: bool,
    /// Write per-job and shared statistics as JSON (`-`: standard output).
    #[arg(long)]
    stats: Option<PathBuf>,
}

impl JobsArgs {
    /// The settings `outcore example` uses: defaults, with `--verify`.
    pub fn example(store: PathBuf, specs: &[&str]) -> JobsArgs {
        JobsArgs {
            store,
            specs: specs.iter().map(|s| s.to_string()).collect(),
            memory: 1 << 30,
            threads: None,
            io_mode: IoMode::Auto,
            io_granularity: Granularity::Iteration,
            io_block: 64 << 10,
            profile: None,
            no_dfvu: false,
            dfvu_rounds: 1,
            no_reuse: false,
            direct: false,
            work_dir: None,
            out_dir: None,
            out_format: OutFormat::Text,
            verify: true,
            stats: None,
        }
    }
}

struct Bar {
    bar: ProgressBar,
    names: Vec<String>,
}

impl JobsObserver for Bar {
    fn iteration(&mut self, it: u64, jobs: &[JobStats]) {
        let states: Vec<String> = jobs
            .iter()
            .zip(&self.names)
            .map(|(j, n)| {
                format!(
                    "{n}: {}",
                    if j.finished {
                        "done".to_string()
                    } else {
                        format!("it {}", j.iterations)
                    }
                )
            })
            .collect();
        self.bar
            .set_message(format!("iteration {it} | {}", states.join(" | ")));
        self.bar.tick();
    }
}

pub fn cmd_jobs(a: JobsArgs) -> Result<()> {
    let start = Instant::now();
    // Everything is checked before any I/O on the edges.
    let specs: Vec<JobSpec> = a
        .specs
        .iter()
        .map(|s| s.parse::<JobSpec>().map_err(anyhow::Error::msg))
        .collect::<Result<_>>()?;
    crate::set_threads(a.threads)?;
    let stats = IoStats::new();
    let mode = if a.direct {
        ReadMode::Direct
    } else {
        ReadMode::Buffered
    };
    // Result and statistics paths are checked before any work.
    let mut results = Vec::new();
    if let Some(d) = &a.out_dir {
        std::fs::create_dir_all(d).with_context(|| format!("creating {}", d.display()))?;
        let ext = match a.out_format {
            OutFormat::Text => "txt",
            OutFormat::Bin => "bin",
            OutFormat::Npy => "npy",
            OutFormat::Csv => "csv",
        };
        for (k, spec) in specs.iter().enumerate() {
            let path = d.join(format!("job-{k}-{}.{ext}", spec.algo.name()));
            results.push(Some(prepare_output(&path, &a.store)?));
        }
    }
    let mut outputs = Outputs::prepare(None, None, a.stats.as_deref(), &a.store)?;
    let store = Store::open_with(&a.store, mode, stats)
        .with_context(|| format!("opening store {}", a.store.display()))?;
    let ids = Arc::new(store.id_map()?);
    // --memory covers the jobs' vertex state as `run` covers it: arrays in memory
    // while they fit what the budget leaves beside a quarter of it kept for the
    // engine's sub-blocks, mapped from the work directory beyond; the engine gets
    // what the arrays leave.
    // The frontier lists and bitmaps stay in memory: a budget that cannot hold
    // them beside the engine's share is refused now, not OOM-killed later.
    let engine_floor = (a.memory / 4).max(4 << 20);
    let frontier = JobsEngine::frontier_bytes(store.vertices(), specs.len());
    if frontier + engine_floor > a.memory {
        bail!(
            "{} jobs over {} vertices keep {} of active lists and bitmaps in memory, which --memory {} cannot hold beside the engine's sub-blocks; give --memory {} or more",
            specs.len(),
            store.vertices(),
            format_bytes(frontier),
            format_bytes(a.memory),
            format_bytes((frontier + (4 << 20)) * 4 / 3 + (1 << 20))
        );
    }
    let work_dir = a.work_dir.clone().unwrap_or_else(|| a.store.clone());
    outcore_io::temp::clean_stale(&work_dir);
    let state = StateBudget::new(a.memory - engine_floor - frontier, work_dir);
    // The out-degrees the engine keeps, shared with PageRank jobs.
    let mut degrees = state.alloc("out-degree", store.vertices() as usize, 0u32)?;
    store.degrees_into("out", &mut degrees)?;
    let degrees = Arc::new(degrees);
    let mut jobs: Vec<Box<dyn BspJob>> =
        make_jobs(&specs, &store, &ids, &state, Some(degrees.clone()))?;
    let profile = DeviceProfile::load_or_find(a.profile.as_deref())?;
    if profile.is_none() && a.io_mode == IoMode::Auto {
        eprintln!("jobs: no device profile (outcore calibrate DIR --save); the cost model assumes 500 MB/s sequential, 50 MB/s random");
    }
    let cfg = JobsConfig {
        memory: a.memory,
        io_mode: a.io_mode,
        granularity: a.io_granularity,
        profile,
        io_block: a.io_block,
        dfvu: !a.no_dfvu,
        dfvu_rounds: a.dfvu_rounds,
        reuse: !a.no_reuse,
    };
    let mut engine = JobsEngine::with_out_degrees(&store, cfg, degrees)?;
    let state_bytes = state.total() - state.remaining();
    engine.set_memory(a.memory - frontier - state_bytes);
    if state.mapped_count() > 0 {
        eprintln!(
            "jobs: warning: the jobs' vertex state does not fit --memory {} beside the engine's sub-blocks; mapped from the work directory (slower): {}",
            format_bytes(a.memory),
            state.describe().join(", ")
        );
    }
    let bar = ProgressBar::new_spinner();
    bar.set_style(ProgressStyle::with_template("     jobs {spinner} {msg} {elapsed}").unwrap());
    engine.set_observer(Box::new(Bar {
        bar: bar.clone(),
        names: specs.iter().map(|s| s.text.clone()).collect(),
    }));
    {
        let mut refs: Vec<&mut dyn Job> =
            jobs.iter_mut().map(|j| &mut **j as &mut dyn Job).collect();
        engine.run(&mut refs, None)?;
    }
    bar.finish_and_clear();
    let es = engine.stats().clone();
    drop(engine);
    let mut per_job = Vec::new();
    for (k, (job, spec)) in jobs.into_iter().zip(&specs).enumerate() {
        let js = &es.jobs[k];
        let mut run = job.into_run(js.iterations);
        run.summary += &crate::output::parallel_note(&store, spec.algo.name());
        let params = Params {
            root: spec.root.and_then(|r| ids.to_dense(r)).unwrap_or(0),
            iterations: spec
                .iterations
                .or(Some(10))
                .filter(|_| spec.algo == Algo::PageRank),
            damping: spec.damping,
            ..Params::default()
        };
        let verified = if a.verify {
            let msg = verify(&store, spec.algo, &params, &run.output)
                .with_context(|| format!("job {k} ({})", spec.text))?;
            eprintln!("verify job {k} ({}): {msg}", spec.text);
            Some(msg)
        } else {
            None
        };
        if let Some(rf) = results.get_mut(k).and_then(Option::take) {
            let shown = rf.shown().display().to_string();
            write_output(rf, a.out_format, &run.output, &ids, false)
                .with_context(|| format!("writing {shown}"))?;
        }
        eprintln!(
            "job {k} ({}): {} in {} iterations, {} edges processed",
            spec.text, run.summary, js.iterations, js.edges_processed
        );
        per_job.push(serde_json::json!({
            "spec": spec.text,
            "algorithm": spec.algo.name(),
            "iterations": js.iterations,
            "edges_processed": js.edges_processed,
            "summary": run.summary,
            "verified": verified,
        }));
    }
    let secs = start.elapsed().as_secs_f64();
    let peak = peak_memory();
    if outputs.stats.is_some() {
        let j = serde_json::json!({
            "store": a.store,
            "jobs": per_job,
            "shared": es,
            "io_mode": a.io_mode,
            "io_granularity": a.io_granularity,
            "dfvu": !a.no_dfvu,
            "vertex_state": state.describe(),
            "vertex_state_bytes_in_memory": state_bytes,
            "reuse": !a.no_reuse,
            "seconds": secs,
            "peak_rss_bytes": peak,
        });
        outputs.write_stats(&j)?;
    }
    if es.jobs.is_empty() {
        bail!("no jobs ran");
    }
    eprintln!(
        "jobs: {} jobs in {:.2}s, {} iterations ({} whole, {} selective, {} skipped sub-block loads, {} reused, {} lists in {} groups; DFVU ran {} sources ahead, pulled {} into their iteration), read {} in {} requests, I/O {:.2}s, compute {:.2}s{}",
        es.jobs.len(),
        secs,
        es.iterations,
        es.blocks_whole,
        es.blocks_selective,
        es.blocks_skipped,
        es.blocks_reused,
        es.lists_loaded,
        es.list_groups,
        es.dfvu_sources,
        es.pulled,
        format_bytes(es.bytes_read),
        es.read_requests,
        es.io_seconds,
        es.compute_seconds,
        peak.map_or(String::new(), |p| format!(", peak memory {}", format_bytes(p)))
    );
    Ok(())
}
