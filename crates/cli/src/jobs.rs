//! `outcore jobs STORE SPEC...`: several BSP jobs sharing one scan of the store
//! (GraphCP's engine, `outcore_engine::jobs`).

use crate::args::OutFormat;
use crate::output::{prepare_output, write_output, Outputs};
use crate::progress::peak_memory;
use anyhow::{Context, Result};
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
    /// Memory budget of the whole command (loaded sub-blocks, the jobs' vertex
    /// state, active lists), e.g. 512M; jobs whose state does not fit together run
    /// in groups, one after another.
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
    /// Directory for vertex arrays that do not fit --memory after all (default:
    /// the store).
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
    /// `--threads`, when given.
    pub fn threads(&self) -> Option<usize> {
        self.threads
    }
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
    if let Some(spec) = specs.iter().find(|s| s.algo.reads_weights()) {
        if store.manifest().reverse_marked {
            anyhow::bail!(outcore_algos::programs::reverse_marked_refusal(
                spec.algo.name(),
                &a.store
            ));
        }
    }
    let ids = Arc::new(store.id_map()?);
    let n = store.vertices();
    for spec in &specs {
        spec.dense_root(&ids)?;
    }
    // --memory covers the jobs' vertex state as `run` covers it: arrays in memory
    // while they fit what the budget leaves beside a quarter of it kept for the
    // engine's sub-blocks, mapped from the work directory beyond; the engine gets
    // what the arrays leave. The frontier lists and bitmaps stay in memory: a
    // budget that cannot hold them for one job beside the engine's share is
    // refused now, not OOM-killed later.
    let engine_floor = (a.memory / 4).max(4 << 20);
    // Held beside a group's state: its active lists and the out-degrees; and
    // beside those the engine's share.
    let beside = |jobs: usize| JobsEngine::frontier_bytes(n, jobs) + 4 * n;
    let fixed = |jobs: usize| beside(jobs) + engine_floor;
    if JobsEngine::frontier_bytes(n, 1) + engine_floor > a.memory {
        let frontier = JobsEngine::frontier_bytes(n, 1);
        return Err(crate::embed::budget(format!(
            "a job over {n} vertices keeps {} of active lists and bitmaps in memory, which --memory {} cannot hold beside the engine's sub-blocks; give --memory {} or more",
            format_bytes(frontier),
            format_bytes(a.memory),
            format_bytes((frontier + (4 << 20)) * 4 / 3 + (1 << 20))
        )));
    }
    // Jobs whose state does not fit together run in groups, one after another,
    // each group sharing its scans, so that every job's state is in memory:
    // mapped arrays written at random thrash under a hard limit (a 4-job mix on
    // Kronecker 22 read 642 GB in 8 minutes at --memory 64M and was OOM-killed
    // with dirty mapped pages), where a group whose arrays are in memory
    // streams. A job whose state does not fit even alone is refused up front.
    let mut groups: Vec<Vec<usize>> = Vec::new();
    let mut held = 0u64;
    for (k, spec) in specs.iter().enumerate() {
        let bytes = spec.state_bytes_per_vertex() * n;
        if bytes + fixed(1) > a.memory {
            let need = bytes + beside(1);
            return Err(crate::embed::budget(format!(
                "job {k} ({}) keeps {} of vertex state ({} bytes per vertex, and {} of out-degrees and {} of active lists beside it), which --memory {} cannot hold beside the engine's sub-blocks; give --memory {} or more, or run it alone with `outcore run {}` (which takes the fully-external engine when its state does not fit)",
                spec.text,
                format_bytes(bytes),
                spec.state_bytes_per_vertex(),
                format_bytes(4 * n),
                format_bytes(JobsEngine::frontier_bytes(n, 1)),
                format_bytes(a.memory),
                format_bytes(need / 3 * 4 + (1 << 20)),
                spec.algo.name()
            )));
        }
        match groups.last_mut() {
            Some(g) if held + bytes + fixed(g.len() + 1) <= a.memory => {
                g.push(k);
                held += bytes;
            }
            _ => {
                groups.push(vec![k]);
                held = bytes;
            }
        }
    }
    if groups.len() > 1 {
        eprintln!(
            "jobs: the jobs' vertex state does not fit --memory {} at once: {} groups run one after another ({})",
            format_bytes(a.memory),
            groups.len(),
            groups
                .iter()
                .map(|g| g.iter().map(|&k| specs[k].text.as_str()).collect::<Vec<_>>().join(" + "))
                .collect::<Vec<_>>()
                .join("; ")
        );
    }
    let work_dir = a.work_dir.clone().unwrap_or_else(|| a.store.clone());
    outcore_io::temp::clean_stale(&work_dir);
    let profile = DeviceProfile::load_or_find(a.profile.as_deref())?;
    if profile.is_none() && a.io_mode == IoMode::Auto {
        eprintln!("jobs: no device profile (outcore calibrate DIR --save); the cost model assumes 500 MB/s sequential, 50 MB/s random");
    }
    let mut per_job = vec![serde_json::Value::Null; specs.len()];
    let mut shared = Vec::new();
    let mut state_desc = Vec::new();
    let mut state_bytes_total = 0u64;
    for group in &groups {
        let gspecs: Vec<JobSpec> = group.iter().map(|&k| specs[k].clone()).collect();
        let frontier = JobsEngine::frontier_bytes(n, gspecs.len());
        let state = StateBudget::new(a.memory - engine_floor - frontier, work_dir.clone());
        // The out-degrees the engine keeps, shared with PageRank jobs.
        let mut degrees = state.alloc("out-degree", n as usize, 0u32)?;
        store.degrees_into("out", &mut degrees)?;
        let degrees = Arc::new(degrees);
        let mut jobs: Vec<Box<dyn BspJob>> =
            make_jobs(&gspecs, &store, &ids, &state, Some(degrees.clone()))?;
        let cfg = JobsConfig {
            memory: a.memory,
            io_mode: a.io_mode,
            granularity: a.io_granularity,
            profile: profile.clone(),
            io_block: a.io_block,
            dfvu: !a.no_dfvu,
            dfvu_rounds: a.dfvu_rounds,
            reuse: !a.no_reuse,
        };
        let mut engine = JobsEngine::with_out_degrees(&store, cfg, degrees)?;
        let state_bytes = state.total() - state.remaining();
        state_bytes_total = state_bytes_total.max(state_bytes);
        // The engine's loaded sub-blocks stay within what it is given, and its
        // idle spare buffers within half of that again: two thirds of the rest.
        engine.set_memory((a.memory - frontier - state_bytes) / 3 * 2);
        if state.mapped_count() > 0 {
            eprintln!(
                "jobs: warning: the vertex state of {} does not fit --memory {} beside the engine's sub-blocks; mapped from the work directory (slower): {}",
                gspecs.iter().map(|s| s.text.as_str()).collect::<Vec<_>>().join(" + "),
                format_bytes(a.memory),
                state.describe().join(", ")
            );
        }
        state_desc.extend(state.describe());
        let bar = ProgressBar::new_spinner();
        bar.set_style(ProgressStyle::with_template("     jobs {spinner} {msg} {elapsed}").unwrap());
        crate::embed::track(&bar, "jobs");
        engine.set_observer(Box::new(Bar {
            bar: bar.clone(),
            names: gspecs.iter().map(|s| s.text.clone()).collect(),
        }));
        {
            let mut refs: Vec<&mut dyn Job> =
                jobs.iter_mut().map(|j| &mut **j as &mut dyn Job).collect();
            engine.run(&mut refs, None)?;
        }
        bar.finish_and_clear();
        let es = engine.stats().clone();
        drop(engine);
        for (i, (job, spec)) in jobs.into_iter().zip(&gspecs).enumerate() {
            let k = group[i];
            let js = &es.jobs[i];
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
            per_job[k] = serde_json::json!({
                "spec": spec.text,
                "algorithm": spec.algo.name(),
                "iterations": js.iterations,
                "edges_processed": js.edges_processed,
                "summary": run.summary,
                "verified": verified,
            });
        }
        shared.push(es);
    }
    let secs = start.elapsed().as_secs_f64();
    let peak = peak_memory();
    // One group's shared statistics as they are; several groups' summed.
    let merged = shared
        .iter()
        .map(serde_json::to_value)
        .collect::<std::result::Result<Vec<_>, _>>()?
        .into_iter()
        .reduce(merge_stats)
        .unwrap_or_default();
    if outputs.stats.is_some() {
        let j = serde_json::json!({
            "store": a.store,
            "jobs": per_job,
            "shared": merged,
            "groups": groups,
            "io_mode": a.io_mode,
            "io_granularity": a.io_granularity,
            "dfvu": !a.no_dfvu,
            "vertex_state": state_desc,
            "vertex_state_bytes_in_memory": state_bytes_total,
            "reuse": !a.no_reuse,
            "seconds": secs,
            "peak_rss_bytes": peak,
        });
        outputs.write_stats(&j)?;
    }
    let num = |k: &str| merged[k].as_f64().unwrap_or(0.0);
    eprintln!(
        "jobs: {} jobs in {:.2}s{}, {} iterations ({} whole, {} selective, {} skipped sub-block loads, {} reused, {} lists in {} groups; DFVU ran {} sources ahead, pulled {} into their iteration), read {} in {} requests, I/O {:.2}s, compute {:.2}s{}",
        specs.len(),
        secs,
        if groups.len() > 1 {
            format!(" ({} groups)", groups.len())
        } else {
            String::new()
        },
        num("iterations"),
        num("blocks_whole"),
        num("blocks_selective"),
        num("blocks_skipped"),
        num("blocks_reused"),
        num("lists_loaded"),
        num("list_groups"),
        num("dfvu_sources"),
        num("pulled"),
        format_bytes(num("bytes_read") as u64),
        num("read_requests"),
        num("io_seconds"),
        num("compute_seconds"),
        peak.map_or(String::new(), |p| format!(", peak memory {}", format_bytes(p)))
    );
    Ok(())
}

/// Two groups' shared statistics as one: numbers added, lists joined.
fn merge_stats(a: serde_json::Value, b: serde_json::Value) -> serde_json::Value {
    use serde_json::Value;
    match (a, b) {
        (Value::Object(mut x), Value::Object(y)) => {
            for (k, v) in y {
                let merged = match x.remove(&k) {
                    Some(old) => merge_stats(old, v),
                    None => v,
                };
                x.insert(k, merged);
            }
            Value::Object(x)
        }
        (Value::Array(mut x), Value::Array(y)) => {
            x.extend(y);
            Value::Array(x)
        }
        (Value::Number(x), Value::Number(y)) => match (x.as_u64(), y.as_u64()) {
            (Some(p), Some(q)) => Value::from(p + q),
            _ => Value::from(x.as_f64().unwrap_or(0.0) + y.as_f64().unwrap_or(0.0)),
        },
        (_, b) => b,
    }
}
