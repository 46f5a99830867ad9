//! Executing a [`Plan`]: build missing stores, then each run in a fresh cgroup after
//! evicting the store from the page cache, one JSON line per run.
//!
//! Every planned run produces a record, whatever happens to it: `ok`, `oom-killed`
//! (the cgroup's OOM killer ended it), `timeout`, `failed` (non-zero exit; the last
//! line of its stderr is kept) or `killed` (another signal). Nothing is dropped.

use crate::cgroup::{evict, run_group, Limiter, Outcome};
use crate::spec::{store_exists, Plan, PlannedRun, Recipe};
use crate::BenchError;
use outcore_io::DeviceProfile;
use outcore_store::Store;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// One run's measurements (a line of `runs.jsonl`).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct RunRecord {
    pub bench: String,
    pub id: String,
    pub store: String,
    pub scenario: String,
    pub algorithm: String,
    /// The algorithm this configuration ran for `algorithm`.
    pub runs: String,
    pub config: String,
    pub mrt: Option<u32>,
    pub rep: usize,
    pub limit_bytes: Option<u64>,
    pub memory_bytes: u64,
    /// "v1", "v2" or "none".
    pub cgroup: String,
    /// The command line of each process of the run.
    pub command: Vec<String>,
    /// ok, oom-killed, timeout, failed or killed.
    pub status: String,
    pub error: Option<String>,
    pub exit_code: Option<i32>,
    pub signal: Option<i32>,
    pub wall_s: f64,
    /// Storage bytes read / written by the run (wait4 rusage), page-cache hits excluded.
    pub os_read_bytes: u64,
    pub os_write_bytes: u64,
    pub max_rss_bytes: u64,
    /// Peak of the cgroup (page cache included).
    pub peak_bytes: Option<u64>,
    pub oom_kills: Option<u64>,
    /// From the engine's `--stats`: iterations, bytes it read, its own seconds.
    pub iterations: Option<u64>,
    pub engine_read_bytes: Option<u64>,
    pub engine_seconds: Option<f64>,
    pub summary: Option<String>,
    pub engine: Option<serde_json::Value>,
    /// One pass over every edge block the algorithm reads (its minimum).
    pub one_pass_bytes: u64,
    /// Calibrated sequential read bandwidth, bytes/s, when a profile was given.
    pub seq_read_bw: Option<f64>,
}

impl RunRecord {
    pub fn ok(&self) -> bool {
        self.status == "ok"
    }
    /// Achieved read bandwidth (storage bytes over wall time) / calibrated sequential.
    pub fn bw_fraction(&self) -> Option<f64> {
        let bw = self.seq_read_bw?;
        (self.wall_s > 0.0 && bw > 0.0).then(|| self.os_read_bytes as f64 / self.wall_s / bw)
    }
    /// Bytes the engine read over one pass of the edges (1.0 = the minimum).
    pub fn bytes_over_min(&self) -> Option<f64> {
        let b = self.engine_read_bytes?;
        (self.one_pass_bytes > 0).then(|| b as f64 / self.one_pass_bytes as f64)
    }
}

/// Facts about the bench as a whole (`meta.json`), for the report.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct BenchMeta {
    pub name: String,
    pub description: String,
    pub spec: String,
    pub command: String,
    pub machine: String,
    pub cgroup: String,
    pub repetitions: usize,
    pub baseline: String,
    pub started: u64,
    pub profile: Option<DeviceProfile>,
    /// Per store: vertices, edges, partitions.
    pub stores: BTreeMap<String, String>,
}

/// What the runner tells its caller as it goes.
pub enum Event<'a> {
    Preparing(&'a str, &'a [String]),
    Starting(usize, usize, &'a PlannedRun),
    Finished(usize, usize, &'a RunRecord),
}

/// CPU, cores, memory and kernel of this machine, in one line.
pub fn machine() -> String {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines().find_map(|l| {
                l.strip_prefix("model name")
                    .map(|x| x.trim_start_matches([' ', '\t', ':']).to_string())
            })
        })
        .unwrap_or_else(|| "unknown CPU".into());
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    let mem = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("MemTotal:"))
                .and_then(|x| x.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        })
        .map_or("?".into(), |k| {
            format!("{:.1} GiB", k as f64 / (1 << 20) as f64)
        });
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    format!(
        "{cpu}, {cores} cores, {mem} memory, Linux {}",
        kernel.trim()
    )
}

fn run_tool(exe: &Path, args: &[String], what: &str) -> Result<(), BenchError> {
    let status = Command::new(exe)
        .args(args)
        .stdout(Stdio::null())
        .status()
        .map_err(|e| BenchError::Prepare(format!("{what}: cannot start {}: {e}", exe.display())))?;
    if !status.success() {
        return Err(BenchError::Prepare(format!(
            "{what}: `outcore {}` failed ({status})",
            args.join(" ")
        )));
    }
    Ok(())
}

/// Builds every missing store from its recipe (untimed, unlimited).
pub fn prepare_stores(
    plan: &Plan,
    exe: &Path,
    mut event: impl FnMut(Event),
) -> Result<(), BenchError> {
    for s in &plan.stores {
        if store_exists(&s.path) {
            continue;
        }
        let out = s.path.display().to_string();
        let ingest_args = |input: &Path, args: &[String]| {
            let mut a = vec![
                "ingest".to_string(),
                input.display().to_string(),
                "-o".into(),
                out.clone(),
            ];
            a.extend(args.iter().cloned());
            a
        };
        match s
            .recipe
            .as_ref()
            .expect("validated: missing stores have recipes")
        {
            Recipe::Ingest { input, args } => {
                let a = ingest_args(input, args);
                event(Event::Preparing(&s.name, &a));
                run_tool(exe, &a, &format!("building store {}", s.name))?;
            }
            Recipe::Generate { gen, args } => {
                // The generator writes bin32, bin32w with --weighted, text with --text.
                let ext = if gen.iter().any(|a| a == "--text") {
                    "txt"
                } else if gen.iter().any(|a| a == "--weighted") {
                    "bin32w"
                } else {
                    "bin32"
                };
                let input = PathBuf::from(format!("{out}.input.{ext}"));
                if let Some(d) = s.path.parent() {
                    std::fs::create_dir_all(d).map_err(|e| {
                        BenchError::Prepare(format!("cannot create {}: {e}", d.display()))
                    })?;
                }
                let mut g = vec!["generate".to_string()];
                g.extend(gen.iter().cloned());
                // The harness owns this input (left behind only by a killed run).
                g.extend(["-o".into(), input.display().to_string(), "--force".into()]);
                event(Event::Preparing(&s.name, &g));
                run_tool(exe, &g, &format!("generating store {}", s.name))?;
                let a = ingest_args(&input, args);
                event(Event::Preparing(&s.name, &a));
                let r = run_tool(exe, &a, &format!("building store {}", s.name));
                let _ = std::fs::remove_file(&input);
                r?;
            }
        }
    }
    Ok(())
}

/// The bytes of one pass over every edge block of a store (with weights or not).
pub fn one_pass_bytes(store: &Store, with_weights: bool) -> Result<u64, BenchError> {
    let g = store.grid()?;
    let p = g.partitions();
    let mut total = 0;
    for r in 0..p {
        for c in 0..p {
            total += g.block_read_bytes(r, c, with_weights);
        }
    }
    Ok(total)
}

/// One-pass bytes by (store, algorithm run).
pub type MinBytes = BTreeMap<(String, String), u64>;

/// Checks what needs the built stores (roots are vertices) and measures each store's
/// one-pass bytes. Returns `(store, algorithm) -> bytes` and a line per store.
pub fn check_stores(plan: &Plan) -> Result<(MinBytes, BTreeMap<String, String>), BenchError> {
    let mut min = BTreeMap::new();
    let mut about = BTreeMap::new();
    for s in &plan.stores {
        let store = Store::open(&s.path)
            .map_err(|e| BenchError::Prepare(format!("store {}: {e}", s.name)))?;
        let ids = store.id_map()?;
        about.insert(
            s.name.clone(),
            format!(
                "{} vertices, {} edges, {} x {} blocks{}",
                store.vertices(),
                store.edges(),
                store.partitions(),
                store.partitions(),
                if store.weighted() { ", weighted" } else { "" }
            ),
        );
        for r in plan.runs.iter().filter(|r| r.store == s.name) {
            for &root in &r.roots {
                if ids.to_dense(root).is_none() {
                    return Err(BenchError::Spec(format!(
                        "algorithm {}: root {root} is not a vertex of store {}",
                        r.algorithm, s.name
                    )));
                }
            }
            let key = (s.name.clone(), r.runs.clone());
            if let std::collections::btree_map::Entry::Vacant(e) = min.entry(key) {
                e.insert(one_pass_bytes(&store, store.weighted() && r.weighted)?);
            }
        }
    }
    Ok((min, about))
}

fn status_of(o: &Outcome) -> &'static str {
    if o.timed_out {
        "timeout"
    } else if o.oom_killed() {
        "oom-killed"
    } else if o.exit_code == Some(0) {
        "ok"
    } else if o.exit_code.is_some() {
        "failed"
    } else {
        "killed"
    }
}

fn file_safe(id: &str) -> String {
    id.replace('/', "_")
}

/// Runs every planned run, appending a record per run to `out/runs.jsonl` as it
/// ends. Store files are evicted from the page cache before each run.
pub fn execute(
    plan: &Plan,
    exe: &Path,
    out: &Path,
    limiter: &Limiter,
    profile: Option<&DeviceProfile>,
    min_bytes: &MinBytes,
    mut event: impl FnMut(Event),
) -> Result<Vec<RunRecord>, BenchError> {
    let runs_dir = out.join("runs");
    std::fs::create_dir_all(&runs_dir)
        .map_err(|e| BenchError::Output(format!("{}: {e}", runs_dir.display())))?;
    let jsonl = out.join("runs.jsonl");
    let mut lines = std::fs::File::create(&jsonl)
        .map_err(|e| BenchError::Output(format!("{}: {e}", jsonl.display())))?;
    let cgroup = match limiter {
        Limiter::Cgroup { version, .. } => version.name().to_string(),
        Limiter::Unlimited => "none".to_string(),
    };
    let mut records = Vec::new();
    let total = plan.runs.len();
    for (i, r) in plan.runs.iter().enumerate() {
        event(Event::Starting(i, total, r));
        let stats: Vec<PathBuf> = (0..r.commands.len())
            .map(|k| {
                if r.commands.len() == 1 {
                    runs_dir.join(format!("{}.stats.json", file_safe(&r.id)))
                } else {
                    runs_dir.join(format!("{}.{k}.stats.json", file_safe(&r.id)))
                }
            })
            .collect();
        let log = runs_dir.join(format!("{}.log", file_safe(&r.id)));
        for f in &stats {
            let _ = std::fs::remove_file(f);
        }
        let log_file = std::fs::File::create(&log)
            .map_err(|e| BenchError::Output(format!("{}: {e}", log.display())))?;
        evict(std::slice::from_ref(&r.evict));
        let mut cmds = Vec::new();
        let to_log = || {
            log_file
                .try_clone()
                .map_err(|e| BenchError::Output(format!("{}: {e}", log.display())))
        };
        for (args, st) in r.commands.iter().zip(&stats) {
            let cmd = if r.external {
                // Another system: its own program, its output to the log
                // (`outcore` is the binary running the bench).
                let mut cmd = match args[0].as_str() {
                    "outcore" => Command::new(exe),
                    prog => Command::new(prog),
                };
                cmd.args(&args[1..])
                    .stdin(Stdio::null())
                    .stdout(to_log()?)
                    .stderr(to_log()?);
                cmd
            } else {
                let mut cmd = Command::new(exe);
                cmd.args(args)
                    .arg("--stats")
                    .arg(st)
                    .stdin(Stdio::null())
                    .stdout(Stdio::null())
                    .stderr(to_log()?);
                cmd
            };
            cmds.push(cmd);
        }
        let o = run_group(cmds, r.concurrent, limiter, r.limit, Some(plan.timeout))?;
        let status = status_of(&o);
        // Each process's --stats: `outcore run` has iterations and engine.bytes_read,
        // `outcore jobs` has shared.iterations and shared.bytes_read.
        let parsed: Vec<serde_json::Value> = stats
            .iter()
            .filter_map(|f| std::fs::read_to_string(f).ok())
            .filter_map(|t| serde_json::from_str(&t).ok())
            .collect();
        let complete = parsed.len() == stats.len() && !r.external;
        let pick_u = |v: &serde_json::Value, a: &str, b: &str| {
            v.pointer(a)
                .or_else(|| v.pointer(b))
                .and_then(|x| x.as_u64())
        };
        let sum = |a: &str, b: &str| -> Option<u64> {
            complete.then(|| parsed.iter().filter_map(|v| pick_u(v, a, b)).sum())
        };
        let iterations = parsed
            .iter()
            .filter_map(|v| pick_u(v, "/iterations", "/shared/iterations"))
            .max()
            .filter(|_| complete);
        let engine_read_bytes = sum("/engine/bytes_read", "/shared/bytes_read");
        let engine_seconds = complete.then(|| {
            parsed
                .iter()
                .filter_map(|v| v.get("seconds").and_then(|x| x.as_f64()))
                .sum::<f64>()
        });
        let summaries: Vec<String> = parsed
            .iter()
            .flat_map(|v| match v.get("jobs").and_then(|j| j.as_array()) {
                Some(jobs) => jobs
                    .iter()
                    .filter_map(|j| {
                        j.get("summary")
                            .and_then(|x| x.as_str())
                            .map(str::to_string)
                    })
                    .collect::<Vec<_>>(),
                None => v
                    .get("summary")
                    .and_then(|x| x.as_str())
                    .map(str::to_string)
                    .into_iter()
                    .collect(),
            })
            .collect();
        let engine = match parsed.len() {
            0 => None,
            1 => parsed[0]
                .get("engine")
                .or_else(|| parsed[0].get("shared"))
                .cloned(),
            _ => Some(serde_json::Value::Array(
                parsed
                    .iter()
                    .filter_map(|v| v.get("engine").or_else(|| v.get("shared")).cloned())
                    .collect(),
            )),
        };
        let error = (status != "ok").then(|| {
            let last = std::fs::read_to_string(&log)
                .ok()
                .and_then(|t| {
                    t.lines()
                        .rev()
                        .find(|l| !l.trim().is_empty())
                        .map(str::to_string)
                })
                .unwrap_or_default();
            let why = match status {
                "timeout" => format!(
                    "killed after the spec's timeout of {:.0}s",
                    plan.timeout.as_secs_f64()
                ),
                "oom-killed" => format!(
                    "killed by the memory limit of {}",
                    r.limit.map_or("?".into(), outcore_io::format_bytes)
                ),
                "killed" => format!("killed by signal {}", o.signal.unwrap_or(0)),
                _ => format!("exit status {}", o.exit_code.unwrap_or(-1)),
            };
            if last.is_empty() {
                why
            } else {
                format!("{why}; last line of its stderr: {last}")
            }
        });
        let command: Vec<String> = r
            .commands
            .iter()
            .map(|a| match r.external {
                true => a.join(" "),
                false => format!("{} {}", exe.display(), a.join(" ")),
            })
            .collect();
        let rec = RunRecord {
            bench: plan.spec.name.clone(),
            id: r.id.clone(),
            store: r.store.clone(),
            scenario: r.scenario.clone(),
            algorithm: r.algorithm.clone(),
            runs: r.runs.clone(),
            config: r.config.clone(),
            mrt: r.mrt,
            rep: r.rep,
            limit_bytes: r.limit,
            memory_bytes: r.memory,
            cgroup: cgroup.clone(),
            command,
            status: status.to_string(),
            error,
            exit_code: o.exit_code,
            signal: o.signal,
            wall_s: o.wall_s,
            os_read_bytes: o.read_bytes,
            os_write_bytes: o.write_bytes,
            max_rss_bytes: o.max_rss_bytes,
            peak_bytes: o.peak_bytes,
            oom_kills: o.oom_kills,
            iterations,
            engine_read_bytes,
            engine_seconds,
            summary: (!summaries.is_empty()).then(|| summaries.join("; ")),
            engine,
            one_pass_bytes: min_bytes
                .get(&(r.store.clone(), r.runs.clone()))
                .copied()
                .unwrap_or(0),
            seq_read_bw: profile.map(|p| p.seq_read_bw()),
        };
        let line = serde_json::to_string(&rec).expect("record serializes");
        writeln!(lines, "{line}")
            .and_then(|_| lines.flush())
            .map_err(|e| BenchError::Output(format!("{}: {e}", jsonl.display())))?;
        event(Event::Finished(i, total, &rec));
        records.push(rec);
    }
    Ok(records)
}

/// Reads `runs.jsonl` back.
pub fn read_records(path: &Path) -> Result<Vec<RunRecord>, BenchError> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| BenchError::Output(format!("{}: {e}", path.display())))?;
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| {
            serde_json::from_str(l)
                .map_err(|e| BenchError::Output(format!("{}:{}: {e}", path.display(), i + 1)))
        })
        .collect()
}
