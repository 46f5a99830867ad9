//! The Markdown report of a bench: per store and scenario a table of medians and
//! min–max over repetitions, then the ratios of every configuration to the baseline
//! measured in the same bench (DESIGN.md: compare in one run, as ratios; count what
//! is exact — bytes and iterations — beside the noisy times).

use crate::runner::{BenchMeta, RunRecord};
use outcore_io::format_bytes;
use std::collections::BTreeMap;
use std::fmt::Write;

/// Median of the values (mean of the middle two for an even count).
pub fn median(values: impl Iterator<Item = f64>) -> Option<f64> {
    let mut v: Vec<f64> = values.collect();
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    Some(if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    })
}

fn min_max(values: impl Iterator<Item = f64>) -> Option<(f64, f64)> {
    values.fold(None, |m, x| match m {
        None => Some((x, x)),
        Some((a, b)) => Some((a.min(x), b.max(x))),
    })
}

/// Records indexed by (store, scenario, algorithm, config), each axis in the order
/// of first appearance.
pub struct Groups<'a> {
    pub stores: Vec<String>,
    pub scenarios: Vec<String>,
    pub algorithms: Vec<String>,
    pub configs: Vec<String>,
    map: BTreeMap<(String, String, String, String), Vec<&'a RunRecord>>,
}

impl<'a> Groups<'a> {
    pub fn new(records: &'a [RunRecord]) -> Groups<'a> {
        let mut g = Groups {
            stores: vec![],
            scenarios: vec![],
            algorithms: vec![],
            configs: vec![],
            map: BTreeMap::new(),
        };
        for r in records {
            for (list, v) in [
                (&mut g.stores, &r.store),
                (&mut g.scenarios, &r.scenario),
                (&mut g.algorithms, &r.algorithm),
                (&mut g.configs, &r.config),
            ] {
                if !list.contains(v) {
                    list.push(v.clone());
                }
            }
            g.map
                .entry((
                    r.store.clone(),
                    r.scenario.clone(),
                    r.algorithm.clone(),
                    r.config.clone(),
                ))
                .or_default()
                .push(r);
        }
        g
    }

    /// The algorithms with at least one run on `store` in `scenario`.
    pub fn algorithms_in(&self, store: &str, scenario: &str) -> Vec<String> {
        self.algorithms
            .iter()
            .filter(|a| {
                self.configs
                    .iter()
                    .any(|c| !self.runs(store, scenario, a, c).is_empty())
            })
            .cloned()
            .collect()
    }

    pub fn runs(
        &self,
        store: &str,
        scenario: &str,
        algo: &str,
        config: &str,
    ) -> Vec<&'a RunRecord> {
        self.map
            .get(&(store.into(), scenario.into(), algo.into(), config.into()))
            .cloned()
            .unwrap_or_default()
    }
}

/// Medians of one (store, scenario, algorithm, config) cell over its ok runs.
pub struct Cell {
    pub runs: usize,
    pub ok: usize,
    pub time: Option<f64>,
    pub time_range: Option<(f64, f64)>,
    pub iterations: Option<(f64, f64)>,
    pub engine_bytes: Option<f64>,
    pub over_min: Option<f64>,
    pub os_bytes: Option<f64>,
    pub bw: Option<f64>,
    pub peak: Option<u64>,
    pub failures: BTreeMap<String, usize>,
}

impl Cell {
    pub fn of(runs: &[&RunRecord]) -> Cell {
        let ok: Vec<&&RunRecord> = runs.iter().filter(|r| r.ok()).collect();
        let mut failures = BTreeMap::new();
        for r in runs.iter().filter(|r| !r.ok()) {
            *failures.entry(r.status.clone()).or_insert(0) += 1;
        }
        Cell {
            runs: runs.len(),
            ok: ok.len(),
            time: median(ok.iter().map(|r| r.wall_s)),
            time_range: min_max(ok.iter().map(|r| r.wall_s)),
            iterations: min_max(ok.iter().filter_map(|r| r.iterations.map(|i| i as f64))),
            engine_bytes: median(
                ok.iter()
                    .filter_map(|r| r.engine_read_bytes.map(|b| b as f64)),
            ),
            over_min: median(ok.iter().filter_map(|r| r.bytes_over_min())),
            os_bytes: median(ok.iter().map(|r| r.os_read_bytes as f64)),
            bw: median(ok.iter().filter_map(|r| r.bw_fraction())),
            peak: runs
                .iter()
                .filter_map(|r| r.peak_bytes.or(Some(r.max_rss_bytes)))
                .max(),
            failures,
        }
    }
}

fn bytes(x: Option<f64>) -> String {
    x.map_or("—".into(), |b| format_bytes(b as u64))
}

fn secs(x: f64) -> String {
    if x >= 100.0 {
        format!("{x:.0}")
    } else if x >= 10.0 {
        format!("{x:.1}")
    } else {
        format!("{x:.2}")
    }
}

fn ratio(a: Option<f64>, b: Option<f64>) -> String {
    match (a, b) {
        (Some(a), Some(b)) if b > 0.0 => {
            let r = a / b;
            if r >= 10.0 {
                format!("{r:.0}x")
            } else {
                format!("{r:.2}x")
            }
        }
        _ => "—".into(),
    }
}

/// Renders the report; `plots` are `(title, relative path)` pairs to embed.
pub fn render(meta: &BenchMeta, records: &[RunRecord], plots: &[(String, String)]) -> String {
    let g = Groups::new(records);
    let mut s = String::new();
    let _ = writeln!(s, "# Bench `{}`\n", meta.name);
    if !meta.description.is_empty() {
        let _ = writeln!(s, "{}\n", meta.description.trim());
    }
    let _ = writeln!(s, "- Regenerate: `{}`", meta.command);
    let _ = writeln!(
        s,
        "- Spec: `{}`; {} repetition(s) per configuration, interleaved (configurations innermost)",
        meta.spec, meta.repetitions
    );
    let _ = writeln!(s, "- Machine: {}", meta.machine);
    let _ = writeln!(
        s,
        "- Each run: a fresh child memory cgroup ({}) with the scenario's hard limit, the store evicted from the page cache first (posix_fadvise DONTNEED)",
        meta.cgroup
    );
    match &meta.profile {
        Some(p) => {
            let _ = writeln!(
                s,
                "- Device ({}): sequential read {:.0} MB/s, sequential write {:.0} MB/s{} (`outcore calibrate`)",
                p.device,
                p.seq_read_bw() / 1e6,
                p.seq_write_bw() / 1e6,
                p.random("read", 4096, 1)
                    .map_or(String::new(), |r| format!(", random 4 KiB read qd1 {:.0} MB/s", r.bytes_per_s / 1e6))
            );
        }
        None => {
            let _ = writeln!(s, "- Device: not calibrated (no profile; run `outcore calibrate DIR --save`), so no bandwidth fractions");
        }
    }
    let _ = writeln!(s, "- Stores:");
    for (name, about) in &meta.stores {
        let _ = writeln!(s, "  - `{name}`: {about}");
    }
    let _ = writeln!(
        s,
        "\nColumns: time is the wall time of the whole `outcore run` process (median, min–max over the ok runs); \
iterations as the engine counts them; *read* is what the engine read from the store (exact), *× pass* that over one pass over every edge block the algorithm reads (its minimum); \
*OS read* is what the kernel read from storage for the process (rusage, includes mapped vertex state); *bw* is OS read / time over the calibrated sequential read bandwidth; \
*peak* is the cgroup's peak memory, page cache included. A configuration's algorithm in brackets is what it runs for the row's algorithm.\n"
    );
    for store in &g.stores {
        for scenario in &g.scenarios {
            let algos = g.algorithms_in(store, scenario);
            if algos.is_empty() {
                continue;
            }
            let any = g.runs(
                store,
                scenario,
                &algos[0],
                g.configs
                    .iter()
                    .find(|c| !g.runs(store, scenario, &algos[0], c).is_empty())
                    .unwrap(),
            );
            let limit = any[0]
                .limit_bytes
                .map_or("no limit".into(), |l| format!("limit {}", format_bytes(l)));
            let _ = writeln!(
                s,
                "## {store} — {scenario} ({limit}, --memory {})\n",
                format_bytes(any[0].memory_bytes)
            );
            let _ = writeln!(s, "| algorithm | config | ok | time s | iterations | read | × pass | OS read | bw | peak |");
            let _ = writeln!(s, "|---|---|---|---|---|---|---|---|---|---|");
            let mut notes = Vec::new();
            for a in &algos {
                for c in &g.configs {
                    let runs = g.runs(store, scenario, a, c);
                    if runs.is_empty() {
                        continue;
                    }
                    let cell = Cell::of(&runs);
                    let shown = if runs[0].runs != **a && !runs[0].runs.starts_with("jobs:") {
                        format!("{c} ({})", runs[0].runs)
                    } else {
                        c.clone()
                    };
                    let mut ok = format!("{}/{}", cell.ok, cell.runs);
                    for (status, n) in &cell.failures {
                        let _ = write!(ok, " **{status}** ×{n}");
                    }
                    for r in runs.iter().filter(|r| !r.ok()) {
                        let e = r
                            .error
                            .as_deref()
                            .filter(|e| !e.is_empty())
                            .unwrap_or("no message");
                        notes.push(format!(
                            "{a}/{c} r{} {}: {}",
                            r.rep,
                            r.status,
                            e.replace('|', "\\|")
                        ));
                    }
                    let time = match (cell.time, cell.time_range) {
                        (Some(m), Some((lo, hi))) if cell.ok > 1 => {
                            format!("{} ({}–{})", secs(m), secs(lo), secs(hi))
                        }
                        (Some(m), _) => secs(m),
                        _ => "—".into(),
                    };
                    let iters = match cell.iterations {
                        Some((lo, hi)) if lo == hi => format!("{lo:.0}"),
                        Some((lo, hi)) => format!("{lo:.0}–{hi:.0}"),
                        None => "—".into(),
                    };
                    let _ = writeln!(
                        s,
                        "| {a} | {shown} | {ok} | {time} | {iters} | {} | {} | {} | {} | {} |",
                        bytes(cell.engine_bytes),
                        cell.over_min.map_or("—".into(), |x| format!("{x:.2}")),
                        bytes(cell.os_bytes),
                        cell.bw.map_or("—".into(), |x| format!("{:.0}%", x * 100.0)),
                        cell.peak.map_or("—".into(), format_bytes),
                    );
                }
            }
            let _ = writeln!(s);
            for n in notes {
                let _ = writeln!(s, "- not ok: {n}");
            }
            let others: Vec<&String> = g.configs.iter().filter(|c| **c != meta.baseline).collect();
            // Only where the baseline ran in this scenario (a configuration may
            // run in some scenarios only).
            let has_base = algos
                .iter()
                .any(|a| !g.runs(store, scenario, a, &meta.baseline).is_empty());
            if has_base && !others.is_empty() {
                let _ = writeln!(s, "\nRatios, {} ÷ each configuration (above 1: the configuration is faster / reads less / needs fewer iterations):\n", meta.baseline);
                let _ = writeln!(s, "| algorithm | config | time | bytes read | iterations |");
                let _ = writeln!(s, "|---|---|---|---|---|");
                for a in &algos {
                    let base = Cell::of(&g.runs(store, scenario, a, &meta.baseline));
                    for c in &others {
                        let runs = g.runs(store, scenario, a, c);
                        if runs.is_empty() {
                            continue;
                        }
                        let cell = Cell::of(&runs);
                        let _ = writeln!(
                            s,
                            "| {a} | {c} | {} | {} | {} |",
                            ratio(base.time, cell.time),
                            ratio(base.engine_bytes, cell.engine_bytes),
                            ratio(base.iterations.map(|x| x.1), cell.iterations.map(|x| x.1)),
                        );
                    }
                }
            }
            vertex_table(&mut s, &g, store, scenario, &algos, &meta.baseline);
            let _ = writeln!(s);
        }
    }
    if !plots.is_empty() {
        let _ = writeln!(s, "## Plots\n");
        for (title, path) in plots {
            let _ = writeln!(s, "![{title}]({path})\n");
        }
    }
    s
}

/// The vertex engine's own figures (runs whose `--stats` carry `page_hit_ratio`):
/// medians of its algorithm time, pages read, requests, hit ratios and page
/// utilization, and the baseline's time over each configuration's.
fn vertex_table(
    s: &mut String,
    g: &Groups,
    store: &str,
    scenario: &str,
    algos: &[String],
    baseline: &str,
) {
    let num = |r: &RunRecord, k: &str| r.engine.as_ref()?.get(k)?.as_f64();
    let has = algos.iter().any(|a| {
        g.configs.iter().any(|c| {
            g.runs(store, scenario, a, c)
                .iter()
                .any(|r| num(r, "page_hit_ratio").is_some())
        })
    });
    if !has {
        return;
    }
    let _ = writeln!(s, "\nVertex engine (medians over the ok runs; *algo s* excludes loading the static cache; *speed-up* is {baseline}'s algo s over the row's):\n");
    let _ = writeln!(s, "| algorithm | config | algo s | speed-up | pages read | requests | page cache hits | static hits | page utilization | static lists |");
    let _ = writeln!(s, "|---|---|---|---|---|---|---|---|---|---|");
    for a in algos {
        let base = median(
            g.runs(store, scenario, a, baseline)
                .iter()
                .filter(|r| r.ok())
                .filter_map(|r| r.engine_seconds),
        );
        for c in &g.configs {
            let runs: Vec<&RunRecord> = g
                .runs(store, scenario, a, c)
                .into_iter()
                .filter(|r| r.ok() && num(r, "page_hit_ratio").is_some())
                .collect();
            if runs.is_empty() {
                continue;
            }
            let med = |k: &str| median(runs.iter().filter_map(|r| num(r, k)));
            let secs_med = median(runs.iter().filter_map(|r| r.engine_seconds));
            let pct = |x: Option<f64>| x.map_or("—".into(), |x| format!("{:.1}%", 100.0 * x));
            let int = |x: Option<f64>| x.map_or("—".into(), |x| format!("{x:.0}"));
            let _ = writeln!(
                s,
                "| {a} | {c} | {} | {} | {} | {} | {} | {} | {} | {} |",
                secs_med.map_or("—".into(), secs),
                ratio(base, secs_med),
                int(med("pages_read")),
                int(med("requests")),
                pct(med("page_hit_ratio")),
                pct(med("static_hit_ratio")),
                pct(med("page_utilization")),
                int(med("static_vertices")),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(algo: &str, config: &str, rep: usize, wall: f64, bytes: u64, status: &str) -> RunRecord {
        RunRecord {
            bench: "t".into(),
            id: format!("s/x/{algo}/{config}/r{rep}"),
            store: "s".into(),
            scenario: "x".into(),
            algorithm: algo.into(),
            runs: if config == "grid" && algo == "wcc" {
                "wcc-lp".into()
            } else {
                algo.into()
            },
            config: config.into(),
            mrt: Some(if config == "grid" { 1 } else { 5 }),
            rep,
            limit_bytes: Some(64 << 20),
            memory_bytes: 64 << 20,
            cgroup: "v1".into(),
            command: vec![],
            status: status.into(),
            error: (status != "ok").then(|| "outcore: killed".to_string()),
            exit_code: Some(0),
            signal: None,
            wall_s: wall,
            os_read_bytes: bytes,
            os_write_bytes: 0,
            max_rss_bytes: 1 << 20,
            peak_bytes: Some(32 << 20),
            oom_kills: Some(0),
            iterations: Some(if config == "grid" { 10 } else { 2 }),
            engine_read_bytes: Some(bytes),
            engine_seconds: Some(wall),
            summary: None,
            engine: None,
            one_pass_bytes: 1000,
            seq_read_bw: Some(1e9),
        }
    }

    #[test]
    fn medians() {
        assert_eq!(median([3.0, 1.0, 2.0].into_iter()), Some(2.0));
        assert_eq!(median([4.0, 1.0, 2.0, 3.0].into_iter()), Some(2.5));
        assert_eq!(median(std::iter::empty()), None);
    }

    #[test]
    fn report_has_medians_ratios_and_failures() {
        let recs = vec![
            rec("bfs", "grid", 1, 10.0, 10_000, "ok"),
            rec("bfs", "clip", 1, 2.0, 2000, "ok"),
            rec("bfs", "grid", 2, 12.0, 10_000, "ok"),
            rec("bfs", "clip", 2, 3.0, 2000, "ok"),
            rec("bfs", "grid", 3, 11.0, 10_000, "ok"),
            rec("bfs", "clip", 3, 2.5, 2000, "ok"),
            rec("wcc", "grid", 1, 9.0, 5000, "oom-killed"),
            rec("wcc", "clip", 1, 1.0, 1000, "ok"),
        ];
        let meta = BenchMeta {
            name: "t".into(),
            description: String::new(),
            spec: "t.toml".into(),
            command: "outcore bench t.toml".into(),
            machine: "m".into(),
            cgroup: "v1".into(),
            repetitions: 3,
            baseline: "grid".into(),
            started: 0,
            profile: None,
            stores: BTreeMap::new(),
        };
        let md = render(&meta, &recs, &[("p".into(), "plots/p.svg".into())]);
        assert!(
            md.contains("| bfs | grid | 3/3 | 11.0 (10.0–12.0) | 10 |"),
            "{md}"
        );
        assert!(
            md.contains("| bfs | clip | 3/3 | 2.50 (2.00–3.00) | 2 |"),
            "{md}"
        );
        assert!(
            md.contains("| wcc | grid (wcc-lp) | 0/1 **oom-killed** ×1 | — |"),
            "{md}"
        );
        assert!(
            md.contains("not ok: wcc/grid r1 oom-killed: outcore: killed"),
            "{md}"
        );
        // time 11/2.5 = 4.40x, bytes 10000/2000 = 5.00x, iterations 10/2 = 5.00x
        assert!(
            md.contains("| bfs | clip | 4.40x | 5.00x | 5.00x |"),
            "{md}"
        );
        assert!(md.contains("| wcc | clip | — |"), "{md}");
        assert!(md.contains("![p](plots/p.svg)"));
        // bytes over one pass: 2000 / 1000
        assert!(md.contains("| 2.00 |"), "{md}");
    }
}
