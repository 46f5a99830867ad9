//! `outcore calibrate`, `outcore scan` and `outcore bench`: the command-line faces of
//! `outcore_io::calibrate` and the `outcore-bench` harness.

use anyhow::{bail, Context, Result};
use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use outcore_bench::runner::{self, BenchMeta, Event};
use outcore_bench::{plot, report, Limiter, Spec};
use outcore_io::{
    format_bytes, parse_size, CalibrateOptions, DeviceProfile, InFile, IoStats, ReadMode,
};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

#[derive(Args)]
pub struct CalibrateArgs {
    /// Directory on the device to measure (a test file is written there and removed).
    #[arg(default_value = ".")]
    dir: PathBuf,
    /// Print the profile as JSON on stdout instead of a table.
    #[arg(long)]
    json: bool,
    /// Save the profile (default place: $OUTCORE_DEVICE_PROFILE, else
    /// ~/.config/outcore/device.json), where the benchmarks and cost models find it.
    #[arg(long, num_args = 0..=1, value_name = "PATH")]
    save: Option<Option<PathBuf>>,
    /// Size of the test file.
    #[arg(long, default_value = "1G", value_parser = parse_size)]
    size: u64,
    /// Seconds spent on each timed test.
    #[arg(long, default_value_t = 2.0)]
    duration: f64,
    /// Queue depths of the random tests (threads with one request each).
    #[arg(long, value_delimiter = ',', default_value = "1,16")]
    depths: Vec<usize>,
    /// Streams of the parallel sequential read test (the jobs engine's loader
    /// reads 4 blocks at once); 1 skips it.
    #[arg(long, default_value_t = 4)]
    streams: usize,
}

#[derive(Args)]
pub struct LimitArgs {
    /// Hard memory limit of the child cgroup (anonymous memory and page cache), e.g. 1G.
    #[arg(long, value_parser = parse_size)]
    mem: u64,
    /// Files or directories dropped from the page cache before the command starts
    /// (repeatable).
    #[arg(long)]
    evict: Vec<PathBuf>,
    /// Also write the outcome as JSON to this file.
    #[arg(long)]
    json: Option<PathBuf>,
    /// The command to run and its arguments (after `--`).
    #[arg(required = true, trailing_var_arg = true, allow_hyphen_values = true)]
    command: Vec<String>,
}

/// Runs one command the way `outcore bench` runs each of its runs: in a fresh child
/// of this process's memory cgroup with a hard limit, the named files evicted
/// first; prints one line of measurements and exits with the command's status.
pub fn cmd_limit(a: LimitArgs) -> Result<()> {
    let limiter = outcore_bench::detect()?;
    let evicted = outcore_bench::cgroup::evict(&a.evict);
    let mut cmd = std::process::Command::new(&a.command[0]);
    cmd.args(&a.command[1..]);
    let o = outcore_bench::cgroup::run_limited(cmd, &limiter, Some(a.mem), None)
        .with_context(|| format!("cannot run {}", a.command[0]))?;
    let line = format!(
        "limit: limit_bytes={} peak_bytes={} oom_kills={} read_bytes={} write_bytes={} max_rss_bytes={} wall_s={:.3} exit={} evicted_files={evicted}",
        a.mem,
        o.peak_bytes.map_or("unknown".into(), |p| p.to_string()),
        o.oom_kills.map_or("unknown".into(), |p| p.to_string()),
        o.read_bytes,
        o.write_bytes,
        o.max_rss_bytes,
        o.wall_s,
        o.exit_code.map_or(format!("signal {}", o.signal.unwrap_or(0)), |c| c.to_string()),
    );
    eprintln!("{line}");
    if let Some(path) = &a.json {
        let json = serde_json::json!({
            "command": a.command,
            "limit_bytes": a.mem,
            "peak_bytes": o.peak_bytes,
            "oom_kills": o.oom_kills,
            "read_bytes": o.read_bytes,
            "write_bytes": o.write_bytes,
            "max_rss_bytes": o.max_rss_bytes,
            "wall_s": o.wall_s,
            "exit": o.exit_code,
            "signal": o.signal,
            "evicted_files": evicted,
        });
        outcore_io::ResultFile::prepare(path)
            .and_then(|rf| rf.write_all(format!("{json:#}\n").as_bytes()))
            .with_context(|| format!("cannot write {}", path.display()))?;
    }
    match o.exit_code {
        Some(0) => Ok(()),
        Some(c) => std::process::exit(c),
        None => bail!(
            "{} was killed by signal {}{}",
            a.command[0],
            o.signal.unwrap_or(0),
            if o.oom_killed() {
                " (out of memory under the limit)"
            } else {
                ""
            }
        ),
    }
}

pub fn cmd_calibrate(a: CalibrateArgs) -> Result<()> {
    if !(a.duration > 0.0 && a.duration.is_finite()) {
        bail!("--duration must be a positive number of seconds");
    }
    let opts = CalibrateOptions {
        size: a.size,
        duration: Duration::from_secs_f64(a.duration),
        depths: a.depths.clone(),
        seq_streams: a.streams,
        ..CalibrateOptions::default()
    };
    let bar = ProgressBar::new_spinner();
    bar.set_style(ProgressStyle::with_template("calibrate {spinner} {msg} {elapsed}").unwrap());
    bar.enable_steady_tick(Duration::from_millis(200));
    let t = Instant::now();
    let p = outcore_io::calibrate(&a.dir, &opts, |s| bar.set_message(s.to_string()))
        .with_context(|| format!("calibrating the device under {}", a.dir.display()))?;
    bar.finish_and_clear();
    if a.json {
        println!("{}", serde_json::to_string_pretty(&p)?);
    } else {
        print!("{}", p.describe());
    }
    if !p.direct {
        eprintln!(
            "calibrate: warning: O_DIRECT was refused here; the numbers are page-cache speed"
        );
    }
    if let Some(path) = a.save {
        let path = match path {
            Some(p) => p,
            None => DeviceProfile::default_path()
                .context("no default profile path (set HOME or OUTCORE_DEVICE_PROFILE)")?,
        };
        p.save(&path)?;
        eprintln!("calibrate: profile saved to {}", path.display());
    }
    eprintln!(
        "calibrate: {:.1}s, wrote and read a {} test file",
        t.elapsed().as_secs_f64(),
        format_bytes(p.file_bytes)
    );
    Ok(())
}

#[derive(Args)]
pub struct BenchArgs {
    /// The bench spec (TOML or JSON): algorithms x stores x scenarios x configs x repetitions.
    #[arg(required_unless_present = "report_only")]
    spec: Option<PathBuf>,
    /// Output directory: runs.jsonl, meta.json, report.md, plots/, runs/ (default bench-results/NAME).
    #[arg(long)]
    out: Option<PathBuf>,
    /// Device profile from `outcore calibrate --save` (default: the saved default profile).
    #[arg(long)]
    profile: Option<PathBuf>,
    /// Run without a memory cgroup (limits NOT enforced; reported as such).
    #[arg(long)]
    no_cgroup: bool,
    /// Print the planned runs and exit.
    #[arg(long)]
    dry_run: bool,
    /// Build the spec's missing stores, check them, and exit.
    #[arg(long)]
    prepare_only: bool,
    /// Re-render report.md and plots from an output directory's runs.jsonl.
    #[arg(long, value_name = "DIR", conflicts_with = "spec")]
    report_only: Option<PathBuf>,
}

fn render(out: &Path, meta: &BenchMeta, records: &[runner::RunRecord]) -> Result<PathBuf> {
    let plots = plot::render(records, &out.join("plots"))?;
    let plots: Vec<(String, String)> = plots
        .into_iter()
        .map(|(t, f)| (t, format!("plots/{f}")))
        .collect();
    let md = report::render(meta, records, &plots);
    let path = out.join("report.md");
    std::fs::write(&path, md).with_context(|| format!("writing {}", path.display()))?;
    Ok(path)
}

pub fn cmd_bench(a: BenchArgs) -> Result<()> {
    if let Some(dir) = &a.report_only {
        let meta: BenchMeta = serde_json::from_str(
            &std::fs::read_to_string(dir.join("meta.json"))
                .with_context(|| format!("reading {}", dir.join("meta.json").display()))?,
        )
        .context("parsing meta.json")?;
        let records = runner::read_records(&dir.join("runs.jsonl"))?;
        let path = render(dir, &meta, &records)?;
        eprintln!("bench: report {}", path.display());
        return Ok(());
    }
    let spec_path = a.spec.clone().expect("clap requires SPEC");
    let plan = Spec::load(&spec_path)?.plan(&spec_path)?;
    if a.dry_run {
        for r in &plan.runs {
            let sep = if r.concurrent { " & " } else { " ; " };
            println!(
                "{}\tlimit {}\t{}",
                r.id,
                r.limit.map_or("none".into(), format_bytes),
                r.commands
                    .iter()
                    .map(|a| match r.external {
                        true => a.join(" "),
                        false => format!("outcore {}", a.join(" ")),
                    })
                    .collect::<Vec<_>>()
                    .join(sep)
            );
        }
        eprintln!("bench: {} runs planned", plan.runs.len());
        return Ok(());
    }
    let limiter = if a.no_cgroup {
        eprintln!("bench: warning: --no-cgroup: memory limits are NOT enforced and peak memory is the process's RSS");
        Limiter::Unlimited
    } else {
        outcore_bench::detect()?
    };
    let profile = DeviceProfile::load_or_find(a.profile.as_deref())?;
    if profile.is_none() {
        eprintln!("bench: no device profile (run `outcore calibrate DIR --save`); bandwidth fractions will be missing");
    }
    let out = a
        .out
        .clone()
        .unwrap_or_else(|| PathBuf::from("bench-results").join(&plan.spec.name));
    let exe = std::env::current_exe().context("locating the outcore binary")?;
    let t = Instant::now();
    runner::prepare_stores(&plan, &exe, |e| {
        if let Event::Preparing(name, args) = e {
            eprintln!("bench: building store {name}: outcore {}", args.join(" "));
        }
    })?;
    let (min_bytes, stores) = runner::check_stores(&plan)?;
    if a.prepare_only {
        for (name, about) in &stores {
            eprintln!("bench: store {name}: {about}");
        }
        return Ok(());
    }
    std::fs::create_dir_all(&out).with_context(|| format!("creating {}", out.display()))?;
    let meta = BenchMeta {
        name: plan.spec.name.clone(),
        description: plan.spec.description.clone(),
        spec: spec_path.display().to_string(),
        command: format!(
            "outcore bench {}{}",
            spec_path.display(),
            a.out
                .as_ref()
                .map_or(String::new(), |o| format!(" --out {}", o.display()))
        ),
        machine: runner::machine(),
        cgroup: match &limiter {
            Limiter::Cgroup { version, parent } => {
                format!("cgroup {} under {}", version.name(), parent.display())
            }
            Limiter::Unlimited => "NO cgroup (--no-cgroup): limits not enforced".into(),
        },
        repetitions: plan.spec.repetitions,
        baseline: plan.baseline.clone(),
        started: std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs()),
        profile: profile.clone(),
        stores,
    };
    std::fs::write(
        out.join("meta.json"),
        serde_json::to_string_pretty(&meta)? + "\n",
    )
    .with_context(|| format!("writing {}", out.join("meta.json").display()))?;
    let bar = ProgressBar::new(plan.runs.len() as u64);
    bar.set_style(
        ProgressStyle::with_template("    bench [{bar:30}] {pos}/{len} runs {msg} {elapsed}")
            .unwrap()
            .progress_chars("=> "),
    );
    let records = runner::execute(
        &plan,
        &exe,
        &out,
        &limiter,
        profile.as_ref(),
        &min_bytes,
        |e| match e {
            Event::Starting(_, _, r) => bar.set_message(r.id.clone()),
            Event::Finished(i, n, r) => {
                bar.inc(1);
                bar.suspend(|| {
                    eprintln!(
                        "[{}/{n}] {}: {} {:.2}s, {} iterations, engine read {}, OS read {}{}",
                        i + 1,
                        r.id,
                        r.status,
                        r.wall_s,
                        r.iterations.map_or("?".into(), |x| x.to_string()),
                        r.engine_read_bytes.map_or("?".into(), format_bytes),
                        format_bytes(r.os_read_bytes),
                        r.peak_bytes
                            .map_or(String::new(), |p| format!(", peak {}", format_bytes(p)))
                    )
                });
            }
            Event::Preparing(..) => {}
        },
    )?;
    bar.finish_and_clear();
    let path = render(&out, &meta, &records)?;
    let mut counts = std::collections::BTreeMap::new();
    for r in &records {
        *counts.entry(r.status.as_str()).or_insert(0) += 1;
    }
    let counts: Vec<String> = counts.iter().map(|(k, v)| format!("{v} {k}")).collect();
    eprintln!(
        "bench: {} runs ({}) in {:.1}s, read {}, wrote {}; report {}",
        records.len(),
        counts.join(", "),
        t.elapsed().as_secs_f64(),
        format_bytes(records.iter().map(|r| r.os_read_bytes).sum()),
        format_bytes(records.iter().map(|r| r.os_write_bytes).sum()),
        path.display()
    );
    Ok(())
}

#[derive(clap::Args)]
pub struct ScanArgs {
    /// The store whose grid is read.
    store: PathBuf,
    /// Read with O_DIRECT (as `outcore run --direct` does), past the page cache.
    #[arg(long)]
    direct: bool,
    /// Write the figures as JSON to this file.
    #[arg(long)]
    stats: Option<PathBuf>,
}

/// One sequential read of a store's grid files in 4 MiB requests: the floor
/// that no engine's pass over the grid can beat on this device. Run cold (as
/// `outcore bench` runs it, after evicting the store) it is the one-pass floor
/// the streaming engine's passes are measured against.
pub fn cmd_scan(a: ScanArgs) -> Result<()> {
    let mode = if a.direct {
        ReadMode::Direct
    } else {
        ReadMode::Buffered
    };
    // Refuses what is not a store before anything is read.
    outcore_store::Store::open(&a.store)
        .with_context(|| format!("opening {}", a.store.display()))?;
    let io = IoStats::new();
    let mut buf = outcore_io::AlignedBuf::new(4 << 20);
    let t = Instant::now();
    let mut files = Vec::new();
    // A weighted grid's weights are inside grid.data.
    for name in ["grid.index", "grid.data"] {
        let f = InFile::open(&a.store.join(name), mode, io.clone())?;
        let mut at = 0u64;
        while at < f.len() {
            let len = (f.len() - at).min(4 << 20) as usize;
            f.read_exact_into(at, len, &mut buf)?;
            at += len as u64;
        }
        files.push(name.to_string());
    }
    let secs = t.elapsed().as_secs_f64();
    let bytes = io.snapshot().bytes_read;
    eprintln!(
        "scan: read {} of {} ({}) in {secs:.3} s: {:.0} MB/s",
        format_bytes(bytes),
        a.store.display(),
        files.join(", "),
        bytes as f64 / secs.max(1e-9) / 1e6
    );
    if let Some(path) = a.stats {
        let j = serde_json::json!({
            "store": a.store,
            "files": files,
            "direct": a.direct,
            "bytes_read": bytes,
            "seconds": secs,
        });
        std::fs::write(&path, serde_json::to_string_pretty(&j)? + "\n")
            .with_context(|| format!("writing {}", path.display()))?;
    }
    Ok(())
}
