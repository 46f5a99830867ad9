//! The benchmark specification: algorithms × stores × memory scenarios × engine
//! configurations × repetitions, in TOML or JSON, and its validation into a [`Plan`].
//!
//! Everything that can be checked before a run is checked here, so a spec that names
//! a missing store (with no recipe to build it), an unknown algorithm, a size that
//! does not parse or a scenario without a limit for one of the stores is refused
//! before anything runs. Relative paths are relative to the spec file's directory.
//!
//! ```toml
//! name = "clip-tables"
//! repetitions = 3
//! threads = 2
//! timeout = "15m"
//! baseline = "gridgraph"        # ratios are taken against this configuration
//!
//! [[store]]
//! name = "k20"
//! path = "../target/bench-data/k20.store"
//! generate = ["kronecker", "--scale", "20"]   # built when missing: outcore generate ...
//! ingest = ["--undirected", "--partitions", "16"]
//!
//! [[scenario]]
//! name = "external"
//! limit = { k20 = "12M" }       # one size for all stores, or one per store; "none"
//! memory = "8M"                 # --memory of the run (default: the limit)
//! args = ["--mapped-state"]
//!
//! [[config]]
//! name = "gridgraph"
//! mrt = 1
//! algorithms = { wcc = "wcc-lp", mis = "mis-luby" }   # what this system runs instead
//! scenarios = ["external"]      # only in these scenarios (default: all)
//!
//! [[config]]                    # another system, run in place of outcore
//! name = "peer"
//! inputs = { k20 = "../peers/k20.grid" }     # what {input} is, per store
//! command = { bfs = ["peer/bin/bfs", "{input}", "{root}", "{memory_gb}"] }
//!
//! [[algorithm]]
//! name = "bfs"
//! root = 0                      # in the user's ids; or one per store
//! ```

use crate::BenchError;
use outcore_algos::jobs::JobSpec;
use outcore_algos::vc::VAlgo;
use outcore_algos::Algo;
use outcore_io::parse_size;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// A value given once for all stores or once per store (by store name).
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(untagged)]
pub enum PerStore<T> {
    All(T),
    Each(BTreeMap<String, T>),
}

impl<T> PerStore<T> {
    pub fn get(&self, store: &str) -> Option<&T> {
        match self {
            PerStore::All(v) => Some(v),
            PerStore::Each(m) => m.get(store),
        }
    }
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct StoreSpec {
    pub name: String,
    pub path: PathBuf,
    /// Input to ingest when the store is missing.
    pub input: Option<PathBuf>,
    /// Arguments to `outcore generate` (without `-o`) when the store is missing.
    pub generate: Option<Vec<String>>,
    /// Arguments to `outcore ingest` (besides the input and `-o`).
    #[serde(default)]
    pub ingest: Vec<String>,
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ScenarioSpec {
    pub name: String,
    /// Hard memory limit of the run's cgroup ("none": no limit, still measured).
    pub limit: PerStore<String>,
    /// The engine's `--memory` budget (default: the limit, or 1G without one).
    pub memory: Option<PerStore<String>>,
    #[serde(default)]
    pub args: Vec<String>,
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ConfigSpec {
    pub name: String,
    /// `--mrt` (also the x axis of the MRT plot).
    pub mrt: Option<u32>,
    #[serde(default)]
    pub args: Vec<String>,
    /// Algorithm substitutions: what this configuration runs for a named algorithm
    /// (GridGraph has no one-pass union-find, so its "wcc" is label propagation).
    #[serde(default)]
    pub algorithms: BTreeMap<String, String>,
    /// How job mixes run: "shared" (one `outcore jobs`, the default), "sequential"
    /// (one `outcore run` per job, one after another) or "concurrent" (all at once,
    /// each with 1/J of the memory budget). Plain algorithms ignore it.
    pub jobs_mode: Option<String>,
    /// Another system run in place of `outcore run` (a peer built elsewhere):
    /// its program and arguments, with `{store}`, `{input}`, `{root}`,
    /// `{memory}` (bytes), `{memory_mb}`, `{memory_gb}` (GiB, three decimals),
    /// `{threads}` and `{algorithm}` filled in for each run. It is measured as
    /// outcore is (wall time, the kernel's bytes, the cgroup's peak, under the
    /// same limit) but has no `--stats`: no iterations or engine bytes. One
    /// list for every algorithm, or a table of lists by algorithm (as the
    /// spec's `[[algorithm]]` names it). A program named `outcore` is the
    /// binary running the bench (`["outcore", "scan", "{store}"]`: the
    /// one-pass floor).
    pub command: Option<PerStore<Vec<String>>>,
    /// Per store, the path `{input}` stands for (the peer's own copy of the
    /// store's graph); it is what is evicted from the page cache before each
    /// of this configuration's runs.
    #[serde(default)]
    pub inputs: BTreeMap<String, PathBuf>,
    /// Run only in these scenarios (default: all) — a floor measured beside
    /// the configurations it bounds, under its own budget.
    pub scenarios: Option<Vec<String>>,
}

/// The placeholders of a configuration's `command`.
const PLACEHOLDERS: [&str; 8] = [
    "store",
    "input",
    "root",
    "memory",
    "memory_mb",
    "memory_gb",
    "threads",
    "algorithm",
];

/// `template` with each `{name}` replaced by `value(name)`; an unknown name,
/// an unclosed brace or a value that is not there is an error.
fn fill(template: &str, value: &dyn Fn(&str) -> Option<String>) -> Result<String, String> {
    let mut out = String::new();
    let mut rest = template;
    while let Some(i) = rest.find('{') {
        out.push_str(&rest[..i]);
        let Some(j) = rest[i..].find('}') else {
            return Err(format!("{template:?}: a '{{' without '}}'"));
        };
        let name = &rest[i + 1..i + j];
        if !PLACEHOLDERS.contains(&name) {
            return Err(format!(
                "{template:?}: unknown placeholder {{{name}}} (known: {})",
                PLACEHOLDERS.map(|p| format!("{{{p}}}")).join(" ")
            ));
        }
        match value(name) {
            Some(v) => out.push_str(&v),
            None => return Err(format!("{template:?}: {{{name}}} has no value here")),
        }
        rest = &rest[i + j + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct AlgoSpec {
    pub name: String,
    /// `--root`, in the user's ids.
    pub root: Option<PerStore<u64>>,
    #[serde(default)]
    pub args: Vec<String>,
    /// A mix of jobs (`algo[:key=value,...]`, as `outcore jobs` takes them): the
    /// row is then the mix, run as the configuration's `jobs_mode` says.
    pub jobs: Option<Vec<String>>,
    /// Restrict to these stores / scenarios (default: all).
    pub stores: Option<Vec<String>>,
    pub scenarios: Option<Vec<String>>,
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Spec {
    pub name: String,
    #[serde(default)]
    pub description: String,
    #[serde(default = "one")]
    pub repetitions: usize,
    /// `--threads` of every run (default: the engine's default).
    pub threads: Option<usize>,
    /// Per-run time limit, e.g. "10m" or "90s" (default 30m).
    pub timeout: Option<String>,
    /// Configuration the ratios are taken against (default: the first).
    pub baseline: Option<String>,
    /// Add `--verify` to every run (the check runs inside the timed process).
    #[serde(default)]
    pub verify: bool,
    #[serde(rename = "store")]
    pub stores: Vec<StoreSpec>,
    #[serde(rename = "scenario")]
    pub scenarios: Vec<ScenarioSpec>,
    #[serde(rename = "config")]
    pub configs: Vec<ConfigSpec>,
    #[serde(rename = "algorithm")]
    pub algorithms: Vec<AlgoSpec>,
}

fn one() -> usize {
    1
}

/// A store as the plan uses it.
#[derive(Debug, Clone, Serialize)]
pub struct PlanStore {
    pub name: String,
    pub path: PathBuf,
    /// How to build it when it is missing.
    pub recipe: Option<Recipe>,
}

#[derive(Debug, Clone, Serialize)]
pub enum Recipe {
    Ingest { input: PathBuf, args: Vec<String> },
    Generate { gen: Vec<String>, args: Vec<String> },
}

/// One run to make.
#[derive(Debug, Clone, Serialize)]
pub struct PlannedRun {
    /// `store/scenario/algorithm/config/rN`, unique in the plan.
    pub id: String,
    pub store: String,
    pub scenario: String,
    /// The algorithm as the spec names it (the table row) ...
    pub algorithm: String,
    /// ... and what this configuration runs for it.
    pub runs: String,
    pub config: String,
    pub mrt: Option<u32>,
    pub rep: usize,
    pub limit: Option<u64>,
    pub memory: u64,
    /// Roots (user ids) the run starts from, checked against the store.
    pub roots: Vec<u64>,
    /// Whether the run reads weights (its one-pass minimum includes them).
    pub weighted: bool,
    /// The processes of the run: arguments after `outcore`, without `--stats`.
    pub commands: Vec<Vec<String>>,
    /// Run the commands at once rather than one after another.
    pub concurrent: bool,
    /// The commands are another system's (a configuration's `command`: the
    /// program first, no `--stats`), not arguments to `outcore`.
    pub external: bool,
    /// What is evicted from the page cache before the run (the store, or an
    /// external command's input).
    pub evict: PathBuf,
}

/// A validated spec: the stores and the runs, in execution order.
#[derive(Debug, Clone)]
pub struct Plan {
    pub spec: Spec,
    pub spec_path: PathBuf,
    pub stores: Vec<PlanStore>,
    pub runs: Vec<PlannedRun>,
    pub timeout: Duration,
    pub baseline: String,
}

impl Plan {
    pub fn store(&self, name: &str) -> &PlanStore {
        self.stores
            .iter()
            .find(|s| s.name == name)
            .expect("planned store")
    }
}

fn bad(msg: String) -> BenchError {
    BenchError::Spec(msg)
}

/// Parses "90", "90s", "15m", "2h" into a duration.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let t = s.trim();
    let (num, mul) = match t.chars().last() {
        Some('s') => (&t[..t.len() - 1], 1.0),
        Some('m') => (&t[..t.len() - 1], 60.0),
        Some('h') => (&t[..t.len() - 1], 3600.0),
        _ => (t, 1.0),
    };
    match num.trim().parse::<f64>() {
        Ok(x) if x > 0.0 && x.is_finite() => Ok(Duration::from_secs_f64(x * mul)),
        _ => Err(format!("not a duration: {s:?} (e.g. 90s, 15m, 2h)")),
    }
}

fn parse_limit(s: &str) -> Result<Option<u64>, String> {
    if s.trim().eq_ignore_ascii_case("none") {
        Ok(None)
    } else {
        parse_size(s).map(Some)
    }
}

fn unique<'a>(what: &str, names: impl Iterator<Item = &'a String>) -> Result<(), BenchError> {
    let mut seen = BTreeSet::new();
    for n in names {
        if n.is_empty() || n.contains('/') || n.contains(char::is_whitespace) {
            return Err(bad(format!(
                "{what} name {n:?} must be non-empty without '/' or spaces"
            )));
        }
        if !seen.insert(n) {
            return Err(bad(format!("two {what}s are named {n:?}")));
        }
    }
    if seen.is_empty() {
        return Err(bad(format!("the spec names no {what}")));
    }
    Ok(())
}

/// True when `dir` holds a store (its manifest).
pub fn store_exists(dir: &Path) -> bool {
    dir.join("manifest.json").is_file()
}

impl Spec {
    /// Reads a spec, TOML or JSON by extension (or by content when neither).
    pub fn load(path: &Path) -> Result<Spec, BenchError> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| bad(format!("cannot read {}: {e}", path.display())))?;
        let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("");
        let json = ext == "json" || (ext != "toml" && text.trim_start().starts_with('{'));
        if json {
            serde_json::from_str(&text).map_err(|e| bad(format!("{}: {e}", path.display())))
        } else {
            toml::from_str(&text).map_err(|e| bad(format!("{}: {e}", path.display())))
        }
    }

    /// Checks everything that can be checked without running, and expands the
    /// runs: for each repetition, store, scenario, algorithm and configuration (the
    /// configurations innermost, so noise falls on all of them alike).
    pub fn plan(self, spec_path: &Path) -> Result<Plan, BenchError> {
        let base = spec_path.parent().unwrap_or(Path::new(".")).to_path_buf();
        let resolve = |p: &Path| {
            if p.is_absolute() {
                p.to_path_buf()
            } else {
                base.join(p)
            }
        };
        if self.repetitions == 0 {
            return Err(bad("repetitions must be at least 1".into()));
        }
        if self.threads == Some(0) {
            return Err(bad("threads must be at least 1".into()));
        }
        unique("store", self.stores.iter().map(|s| &s.name))?;
        unique("scenario", self.scenarios.iter().map(|s| &s.name))?;
        unique("config", self.configs.iter().map(|s| &s.name))?;
        unique("algorithm", self.algorithms.iter().map(|s| &s.name))?;
        let timeout = match &self.timeout {
            Some(t) => parse_duration(t).map_err(|e| bad(format!("timeout: {e}")))?,
            None => Duration::from_secs(1800),
        };
        let baseline = match &self.baseline {
            Some(b) if self.configs.iter().any(|c| &c.name == b) => b.clone(),
            Some(b) => return Err(bad(format!("baseline {b:?} is not a config of the spec"))),
            None => self.configs[0].name.clone(),
        };
        let known = || {
            let mut k: Vec<&str> = Algo::ALL.iter().map(|a| a.name()).collect();
            for a in VAlgo::ALL.map(|a| a.name()) {
                if !k.contains(&a) {
                    k.push(a);
                }
            }
            k.join(", ")
        };
        // (needs a root, reads weights) of a streaming or vertex-engine algorithm.
        let algo = |n: &str, ctx: &str| {
            Algo::from_name(n)
                .map(|a| (a.needs_root(), matches!(a, Algo::Sssp | Algo::Spmv)))
                .or_else(|| VAlgo::from_name(n).map(|a| (a.needs_root(), a.weighted())))
                .ok_or_else(|| {
                    bad(format!(
                        "{ctx}: unknown algorithm {n:?} (known: {})",
                        known()
                    ))
                })
        };
        for a in &self.algorithms {
            match &a.jobs {
                Some(jobs) => {
                    if jobs.is_empty() {
                        return Err(bad(format!("job mix {}: no jobs", a.name)));
                    }
                    for j in jobs {
                        j.parse::<JobSpec>()
                            .map_err(|e| bad(format!("job mix {}: {e}", a.name)))?;
                    }
                }
                None => {
                    algo(&a.name, "[[algorithm]]")?;
                }
            }
            for (what, list, names) in [
                (
                    "store",
                    &a.stores,
                    self.stores.iter().map(|s| &s.name).collect::<Vec<_>>(),
                ),
                (
                    "scenario",
                    &a.scenarios,
                    self.scenarios.iter().map(|s| &s.name).collect(),
                ),
            ] {
                for n in list.iter().flatten() {
                    if !names.contains(&n) {
                        return Err(bad(format!(
                            "algorithm {}: {what} {n:?} is not in the spec",
                            a.name
                        )));
                    }
                }
            }
        }
        for c in &self.configs {
            for n in c.scenarios.iter().flatten() {
                if !self.scenarios.iter().any(|s| &s.name == n) {
                    return Err(bad(format!(
                        "config {}: scenario {n:?} is not in the spec",
                        c.name
                    )));
                }
            }
            if let Some(m) = &c.jobs_mode {
                if !["shared", "sequential", "concurrent"].contains(&m.as_str()) {
                    return Err(bad(format!(
                        "config {}: jobs_mode {m:?} is not shared, sequential or concurrent",
                        c.name
                    )));
                }
            }
            if c.mrt == Some(0) {
                return Err(bad(format!("config {}: mrt must be at least 1", c.name)));
            }
            match &c.command {
                Some(cmds) => {
                    let lists: Vec<&Vec<String>> = match cmds {
                        PerStore::All(v) => vec![v],
                        PerStore::Each(m) => {
                            for a in m.keys() {
                                if !self.algorithms.iter().any(|x| &x.name == a) {
                                    return Err(bad(format!(
                                        "config {}: a command for {a:?}, which no [[algorithm]] names",
                                        c.name
                                    )));
                                }
                            }
                            m.values().collect()
                        }
                    };
                    if lists.iter().any(|l| l.is_empty()) {
                        return Err(bad(format!("config {}: command is empty", c.name)));
                    }
                    if c.mrt.is_some() || !c.args.is_empty() || c.jobs_mode.is_some() {
                        return Err(bad(format!(
                            "config {}: a command takes no mrt, args or jobs_mode (those are outcore's)",
                            c.name
                        )));
                    }
                    for a in lists.into_iter().flatten() {
                        fill(a, &|_| Some(String::new()))
                            .map_err(|e| bad(format!("config {}: command: {e}", c.name)))?;
                    }
                }
                None if !c.inputs.is_empty() => {
                    return Err(bad(format!("config {}: inputs without a command", c.name)));
                }
                None => {}
            }
            for st in c.inputs.keys() {
                if !self.stores.iter().any(|s| &s.name == st) {
                    return Err(bad(format!(
                        "config {}: an input for store {st:?}, which is not in the spec",
                        c.name
                    )));
                }
            }
            for (from, to) in &c.algorithms {
                if !self.algorithms.iter().any(|a| &a.name == from) {
                    return Err(bad(format!(
                        "config {}: substitutes for {from:?}, which no [[algorithm]] names",
                        c.name
                    )));
                }
                algo(to, &format!("config {}", c.name))?;
            }
        }
        let mut stores = Vec::new();
        for s in &self.stores {
            let path = resolve(&s.path);
            let recipe = match (&s.input, &s.generate) {
                (Some(_), Some(_)) => {
                    return Err(bad(format!(
                        "store {}: give `input` or `generate`, not both",
                        s.name
                    )))
                }
                (Some(i), None) => Some(Recipe::Ingest {
                    input: resolve(i),
                    args: s.ingest.clone(),
                }),
                (None, Some(g)) => Some(Recipe::Generate {
                    gen: g.clone(),
                    args: s.ingest.clone(),
                }),
                (None, None) => None,
            };
            if !store_exists(&path) {
                match &recipe {
                    None => {
                        return Err(bad(format!(
                            "store {}: {} is not a store (no manifest.json) and the spec gives no `input` or `generate` to build it",
                            s.name,
                            path.display()
                        )))
                    }
                    Some(Recipe::Ingest { input, .. }) if !input.exists() => {
                        return Err(bad(format!(
                            "store {}: {} is missing and so is its input {}",
                            s.name,
                            path.display(),
                            input.display()
                        )))
                    }
                    _ => {}
                }
            }
            stores.push(PlanStore {
                name: s.name.clone(),
                path,
                recipe,
            });
        }
        let mut runs = Vec::new();
        for rep in 1..=self.repetitions {
            for st in &self.stores {
                for sc in &self.scenarios {
                    let limit_text = sc.limit.get(&st.name).ok_or_else(|| {
                        bad(format!(
                            "scenario {}: no limit for store {}",
                            sc.name, st.name
                        ))
                    })?;
                    let limit = parse_limit(limit_text)
                        .map_err(|e| bad(format!("scenario {}: limit: {e}", sc.name)))?;
                    let memory = match sc.memory.as_ref().map(|m| m.get(&st.name)) {
                        Some(Some(m)) => parse_size(m)
                            .map_err(|e| bad(format!("scenario {}: memory: {e}", sc.name)))?,
                        Some(None) => {
                            return Err(bad(format!(
                                "scenario {}: no memory for store {}",
                                sc.name, st.name
                            )))
                        }
                        None => limit.unwrap_or(1 << 30),
                    };
                    for a in &self.algorithms {
                        if a.stores.as_ref().is_some_and(|l| !l.contains(&st.name))
                            || a.scenarios.as_ref().is_some_and(|l| !l.contains(&sc.name))
                        {
                            continue;
                        }
                        for c in &self.configs {
                            if c.scenarios.as_ref().is_some_and(|l| !l.contains(&sc.name)) {
                                continue;
                            }
                            let common = |args: &mut Vec<String>, memory: u64, mrt: bool| {
                                args.extend(["--memory".into(), memory.to_string()]);
                                if let Some(t) = self.threads {
                                    args.extend(["--threads".into(), t.to_string()]);
                                }
                                if let (Some(m), true) = (c.mrt, mrt) {
                                    args.extend(["--mrt".into(), m.to_string()]);
                                }
                                if self.verify {
                                    args.push("--verify".into());
                                }
                                args.extend(sc.args.iter().cloned());
                                args.extend(c.args.iter().cloned());
                                args.extend(a.args.iter().cloned());
                            };
                            let store_arg = resolve(&st.path).display().to_string();
                            let input = c.inputs.get(&st.name).map(|p| resolve(p));
                            let evict = match (&c.command, &input) {
                                (Some(_), Some(i)) => i.clone(),
                                _ => resolve(&st.path),
                            };
                            let (runs_algo, roots, weighted, commands, concurrent) = match (
                                &a.jobs,
                                &c.command,
                            ) {
                                (Some(_), Some(_)) => {
                                    return Err(bad(format!(
                                        "algorithm {} is a mix of jobs, which config {} (a command) cannot run",
                                        a.name, c.name
                                    )))
                                }
                                (None, Some(cmds)) => {
                                    let cmd = cmds.get(&a.name).ok_or_else(|| {
                                        bad(format!(
                                            "config {} has no command for algorithm {}",
                                            c.name, a.name
                                        ))
                                    })?;
                                    let runs_algo =
                                        c.algorithms.get(&a.name).unwrap_or(&a.name).clone();
                                    let root =
                                        a.root.as_ref().and_then(|r| r.get(&st.name)).copied();
                                    let (_, weighted) = algo(&runs_algo, "")?;
                                    let value = |name: &str| match name {
                                        "store" => Some(store_arg.clone()),
                                        "input" => input.as_ref().map(|p| p.display().to_string()),
                                        "root" => root.map(|r| r.to_string()),
                                        "memory" => Some(memory.to_string()),
                                        "memory_mb" => Some((memory >> 20).to_string()),
                                        "memory_gb" => {
                                            Some(format!("{:.3}", memory as f64 / (1u64 << 30) as f64))
                                        }
                                        "threads" => self.threads.map(|t| t.to_string()),
                                        "algorithm" => Some(runs_algo.clone()),
                                        _ => None,
                                    };
                                    let argv = cmd
                                        .iter()
                                        .map(|x| fill(x, &value))
                                        .collect::<Result<Vec<_>, _>>()
                                        .map_err(|e| {
                                            bad(format!(
                                                "config {}, store {}, algorithm {}: {e}",
                                                c.name, st.name, a.name
                                            ))
                                        })?;
                                    (runs_algo, root.into_iter().collect(), weighted, vec![argv], false)
                                }
                                (Some(jobs), None) => {
                                    let specs: Vec<JobSpec> = jobs
                                        .iter()
                                        .map(|j| j.parse().expect("validated"))
                                        .collect();
                                    let roots = specs.iter().filter_map(|s| s.root).collect();
                                    let weighted = specs.iter().any(|s| s.algo == Algo::Sssp);
                                    let mode = c.jobs_mode.as_deref().unwrap_or("shared");
                                    let commands = if mode == "shared" {
                                        let mut args = vec!["jobs".to_string(), store_arg.clone()];
                                        args.extend(jobs.iter().cloned());
                                        common(&mut args, memory, false);
                                        vec![args]
                                    } else {
                                        let share = if mode == "concurrent" {
                                            memory / specs.len() as u64
                                        } else {
                                            memory
                                        };
                                        specs
                                            .iter()
                                            .map(|s| {
                                                let mut args = vec![
                                                    "run".to_string(),
                                                    s.algo.name().to_string(),
                                                    store_arg.clone(),
                                                ];
                                                if let Some(r) = s.root {
                                                    args.extend(["--root".into(), r.to_string()]);
                                                }
                                                if s.algo == Algo::PageRank {
                                                    args.extend([
                                                        "--iterations".into(),
                                                        s.iterations.unwrap_or(10).to_string(),
                                                        "--damping".into(),
                                                        s.damping.to_string(),
                                                    ]);
                                                }
                                                common(&mut args, share, true);
                                                args
                                            })
                                            .collect()
                                    };
                                    (
                                        format!("jobs:{}", a.name),
                                        roots,
                                        weighted,
                                        commands,
                                        mode == "concurrent",
                                    )
                                }
                                (None, None) => {
                                    let runs_algo =
                                        c.algorithms.get(&a.name).unwrap_or(&a.name).clone();
                                    let root =
                                        a.root.as_ref().and_then(|r| r.get(&st.name)).copied();
                                    let (needs_root, weighted) = algo(&runs_algo, "")?;
                                    if needs_root && root.is_none() {
                                        return Err(bad(format!(
                                            "algorithm {} needs a root for store {} (root = ID or root = {{ {} = ID }})",
                                            a.name, st.name, st.name
                                        )));
                                    }
                                    let mut args = vec![
                                        "run".to_string(),
                                        runs_algo.clone(),
                                        store_arg.clone(),
                                    ];
                                    if let Some(r) = root {
                                        args.extend(["--root".into(), r.to_string()]);
                                    }
                                    common(&mut args, memory, true);
                                    (
                                        runs_algo,
                                        root.into_iter().collect(),
                                        weighted,
                                        vec![args],
                                        false,
                                    )
                                }
                            };
                            runs.push(PlannedRun {
                                id: format!("{}/{}/{}/{}/r{rep}", st.name, sc.name, a.name, c.name),
                                store: st.name.clone(),
                                scenario: sc.name.clone(),
                                algorithm: a.name.clone(),
                                runs: runs_algo,
                                config: c.name.clone(),
                                mrt: c.mrt,
                                rep,
                                limit,
                                memory,
                                roots,
                                weighted,
                                commands,
                                concurrent,
                                external: c.command.is_some(),
                                evict,
                            });
                        }
                    }
                }
            }
        }
        if runs.is_empty() {
            return Err(bad("the spec selects no runs".into()));
        }
        Ok(Plan {
            spec: self,
            spec_path: spec_path.to_path_buf(),
            stores,
            runs,
            timeout,
            baseline,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
        let p = dir.join(name);
        std::fs::write(&p, text).unwrap();
        p
    }

    const GOOD: &str = r#"
name = "t"
repetitions = 2
threads = 1
timeout = "2m"
baseline = "grid"

[[store]]
name = "g"
path = "g.store"
generate = ["grid", "--rows", "10", "--cols", "10"]
ingest = ["--undirected"]

[[scenario]]
name = "semi"
limit = { g = "64M" }

[[scenario]]
name = "mem"
limit = "none"
memory = "1G"

[[config]]
name = "grid"
mrt = 1
algorithms = { wcc = "wcc-lp" }

[[config]]
name = "clip"
mrt = 5

[[config]]
name = "floor"
scenarios = ["mem"]

[[algorithm]]
name = "bfs"
root = 0

[[algorithm]]
name = "wcc"
scenarios = ["mem"]
"#;

    #[test]
    fn placeholders_are_filled_or_refused() {
        let v = |n: &str| match n {
            "root" => Some("7".to_string()),
            "input" => None,
            _ => Some(format!("<{n}>")),
        };
        assert_eq!(fill("a{root}b{root}", &v).unwrap(), "a7b7");
        assert_eq!(fill("{memory_gb}", &v).unwrap(), "<memory_gb>");
        assert_eq!(fill("plain", &v).unwrap(), "plain");
        assert!(fill("{input}", &v)
            .unwrap_err()
            .contains("{input} has no value"));
        assert!(fill("{nope}", &v)
            .unwrap_err()
            .contains("unknown placeholder {nope}"));
        assert!(fill("x{root", &v).unwrap_err().contains("without"));
    }

    #[test]
    fn expands_runs_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let p = write(dir.path(), "s.toml", GOOD);
        let plan = Spec::load(&p).unwrap().plan(&p).unwrap();
        // 2 reps x (semi: bfs x 2 configs + mem: (bfs + wcc) x 3 configs) = 16
        // (the floor config runs only in mem)
        assert_eq!(plan.runs.len(), 16);
        assert!(plan
            .runs
            .iter()
            .filter(|r| r.config == "floor")
            .all(|r| r.scenario == "mem"));
        assert_eq!(plan.timeout, Duration::from_secs(120));
        assert_eq!(plan.baseline, "grid");
        let r = &plan.runs[0];
        assert_eq!(r.id, "g/semi/bfs/grid/r1");
        assert_eq!(r.limit, Some(64 << 20));
        assert_eq!(r.memory, 64 << 20);
        let args = &r.commands[0];
        assert_eq!(r.commands.len(), 1);
        assert!(args.windows(2).any(|w| w == ["--mrt", "1"]));
        assert!(args.windows(2).any(|w| w == ["--root", "0"]));
        assert!(args.windows(2).any(|w| w == ["--threads", "1"]));
        let wcc: Vec<_> = plan.runs.iter().filter(|r| r.algorithm == "wcc").collect();
        assert_eq!(wcc.len(), 6);
        assert_eq!(wcc[0].runs, "wcc-lp");
        assert_eq!(wcc[1].runs, "wcc");
        assert_eq!(wcc[0].limit, None);
        assert_eq!(wcc[0].memory, 1 << 30);
        assert_eq!(plan.runs[15].rep, 2);
        let ids: BTreeSet<_> = plan.runs.iter().map(|r| &r.id).collect();
        assert_eq!(ids.len(), 16);
        assert!(matches!(
            plan.store("g").recipe,
            Some(Recipe::Generate { .. })
        ));
        // The same spec as JSON.
        let v: toml::Value = toml::from_str(GOOD).unwrap();
        let pj = write(dir.path(), "s.json", &serde_json::to_string(&v).unwrap());
        assert_eq!(Spec::load(&pj).unwrap().plan(&pj).unwrap().runs.len(), 16);
    }

    fn refused(text: &str) -> String {
        let dir = tempfile::tempdir().unwrap();
        let p = write(dir.path(), "s.toml", text);
        match Spec::load(&p).and_then(|s| s.plan(&p)) {
            Ok(_) => panic!("accepted:\n{text}"),
            Err(e) => e.to_string(),
        }
    }

    #[test]
    fn refuses_bad_specs_before_running() {
        let e = refused(&GOOD.replace("name = \"bfs\"", "name = \"bfz\""));
        assert!(e.contains("unknown algorithm \"bfz\""), "{e}");
        let e = refused(&GOOD.replace("wcc = \"wcc-lp\"", "wcc = \"lp\""));
        assert!(e.contains("unknown algorithm \"lp\""), "{e}");
        let e = refused(&GOOD.replace(
            "generate = [\"grid\", \"--rows\", \"10\", \"--cols\", \"10\"]",
            "",
        ));
        assert!(e.contains("is not a store") && e.contains("g.store"), "{e}");
        let e = refused(&GOOD.replace(
            "generate = [\"grid\", \"--rows\", \"10\", \"--cols\", \"10\"]",
            "input = \"nowhere.txt\"",
        ));
        assert!(e.contains("its input") && e.contains("nowhere.txt"), "{e}");
        let e = refused(&GOOD.replace("limit = { g = \"64M\" }", "limit = { h = \"64M\" }"));
        assert!(e.contains("no limit for store g"), "{e}");
        let e = refused(&GOOD.replace("\"64M\"", "\"64Q\""));
        assert!(e.contains("limit"), "{e}");
        let e = refused(&GOOD.replace("root = 0", ""));
        assert!(e.contains("needs a root"), "{e}");
        let e = refused(&GOOD.replace("timeout = \"2m\"", "timeout = \"soon\""));
        assert!(e.contains("not a duration"), "{e}");
        let e = refused(&GOOD.replace("baseline = \"grid\"", "baseline = \"x\""));
        assert!(e.contains("baseline"), "{e}");
        let e = refused(&GOOD.replace("name = \"clip\"", "name = \"grid\""));
        assert!(e.contains("two configs"), "{e}");
        let e = refused(&GOOD.replace("repetitions = 2", "repetitions = 2\nbogus = 1"));
        assert!(e.contains("bogus"), "{e}");
        let e = refused(&GOOD.replace(
            "name = \"wcc\"\nscenarios = [\"mem\"]",
            "name = \"wcc\"\nscenarios = [\"ram\"]",
        ));
        assert!(e.contains("\"ram\" is not in the spec"), "{e}");
        let e = refused(&GOOD.replace(
            "name = \"floor\"\nscenarios = [\"mem\"]",
            "name = \"floor\"\nscenarios = [\"ram\"]",
        ));
        assert!(e.contains("config floor: scenario \"ram\""), "{e}");
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("90").unwrap(), Duration::from_secs(90));
        assert_eq!(parse_duration("1.5m").unwrap(), Duration::from_secs(90));
        assert_eq!(parse_duration("2h").unwrap(), Duration::from_secs(7200));
        assert!(parse_duration("-1s").is_err());
    }
}
