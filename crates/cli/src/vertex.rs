//! The vertex-centric engine from the command line: `outcore run ALGO STORE
//! --engine vertex`, `outcore select-cache` and `outcore reorder`.

use crate::args::{parse_size_arg, RunArgs};
use crate::output::{os_io, resolve_root, Outputs};
use anyhow::{bail, Context, Result};
use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use outcore_algos::vc::{self, VAlgo, VParams};
use outcore_algos::{verify::verify, Algo, Output, Params};
use outcore_engine::vertex::{request_buffer_bytes, VertexConfig, VertexEngine};
use outcore_io::{format_bytes, parse_size, IoStats, ReadMode};
use outcore_store::order::Order;
use outcore_store::pagesums;
use outcore_store::select::{self, Policy, SelectOptions};
use outcore_store::{IdMap, IngestOptions, Store};
use std::path::PathBuf;
use std::time::Instant;

/// Settings of the vertex engine (`--engine vertex`).
#[derive(Args, Clone)]
pub struct VertexArgs {
    /// Page size of edge-list reads, 512 B to 1 MiB.
    #[arg(long, default_value = "8K", value_parser = parse_size_arg)]
    pub page_size: u64,
    /// Page cache and static cache sizes, `PAGE,STATIC`, each a size (64M) or a
    /// percentage of the CSR read (5%). Default: 25%,0 without --policy, 5%,20% with.
    #[arg(long)]
    pub cache_split: Option<String>,
    /// Static-cache selection: gvs, gvs-page, lowd, highd, random. A selection saved by
    /// `outcore select-cache` is loaded; otherwise it is computed before the run.
    #[arg(long)]
    pub policy: Option<Policy>,
    /// GVS rounds when the selection is computed here.
    #[arg(long, default_value_t = 100)]
    pub k: u32,
    /// bc, apsp: sampled sources.
    #[arg(long, default_value_t = 128)]
    pub sources: u32,
    /// diam: BFS runs (2 = a double sweep).
    #[arg(long, default_value_t = 2)]
    pub rounds: u32,
    /// Reads in flight.
    #[arg(long, default_value_t = 16)]
    pub queue_depth: usize,
    /// Largest merged read.
    #[arg(long, default_value = "128K", value_parser = parse_size_arg)]
    pub max_request: u64,
    /// Read through the OS page cache instead of O_DIRECT.
    #[arg(long)]
    pub buffered: bool,
}

impl Default for VertexArgs {
    fn default() -> Self {
        VertexArgs {
            page_size: 8192,
            cache_split: None,
            policy: None,
            k: 100,
            sources: 128,
            rounds: 2,
            queue_depth: 16,
            max_request: 128 << 10,
            buffered: false,
        }
    }
}

/// `SIZE` or `N%` of `whole`.
fn size_or_percent(s: &str, whole: u64, what: &str) -> Result<u64> {
    let s = s.trim();
    if let Some(p) = s.strip_suffix('%') {
        let x: f64 = p
            .trim()
            .parse()
            .ok()
            .filter(|x: &f64| x.is_finite() && *x >= 0.0)
            .with_context(|| format!("{what}: {s:?} is not a percentage"))?;
        Ok((whole as f64 * x / 100.0) as u64)
    } else {
        parse_size(s)
            .map_err(|e| anyhow::anyhow!("{what}: {s:?} is neither a size nor a percentage ({e})"))
    }
}

/// Parses `--cache-split PAGE,STATIC` against the CSR size.
pub fn cache_split(spec: &str, csr: u64) -> Result<(u64, u64)> {
    let parts: Vec<&str> = spec.split(',').collect();
    if parts.len() != 2 {
        bail!("--cache-split {spec:?}: expected PAGE,STATIC, e.g. 5%,20% or 64M,256M");
    }
    Ok((
        size_or_percent(parts[0], csr, "--cache-split")?,
        size_or_percent(parts[1], csr, "--cache-split")?,
    ))
}

/// The least page and static cache a vertex run is given room for.
const MIN_CACHE: u64 = 1 << 20;

/// What a vertex run holds in memory beside its page and static caches.
struct Fixed {
    offsets: u64,
    sums: u64,
    buffers: u64,
    arrays: u64,
    ids: u64,
}

impl Fixed {
    fn total(&self) -> u64 {
        self.offsets + self.sums + self.buffers + self.arrays + self.ids
    }
    fn describe(&self) -> String {
        let parts: Vec<String> = [
            (self.offsets, "CSR offsets"),
            (self.sums, "page checksums"),
            (self.buffers, "read buffers"),
            (self.arrays, "vertex arrays"),
            (self.ids, "id map"),
        ]
        .iter()
        .filter(|(b, _)| *b > 0)
        .map(|(b, what)| format!("{} of {what}", format_bytes(*b)))
        .collect();
        parts.join(", ")
    }
}

/// Counts [`Fixed`] for `algo` on `store` with the engine settings `v`.
fn fixed_bytes(
    store: &Store,
    ids: &IdMap,
    algo: VAlgo,
    v: &VertexArgs,
    weights: bool,
    in_edges: bool,
) -> Fixed {
    let n = store.vertices();
    let sides = if in_edges { 2 } else { 1 };
    let files = if weights { 2 } else { 1 };
    let request = request_buffer_bytes(v.page_size.max(1) as usize, v.max_request as usize) as u64;
    let mut arrays = n * algo.bytes_per_vertex();
    if v.policy.is_some() {
        // The static cache's slot per vertex and the selection (at most n ids).
        arrays += 8 * n;
    }
    let ids = match ids {
        IdMap::Offset { .. } => 0,
        IdMap::Map(x) => 8 * x.len() as u64,
        // Ids, dense ids by user id, and the user rank of each (sampling).
        IdMap::Permuted { ids, .. } => 16 * ids.len() as u64,
    };
    Fixed {
        offsets: sides * 8 * (n + 1),
        sums: sides * files * pagesums::groups(store.edges() * 4) * 4,
        buffers: v.queue_depth as u64 * request * files,
        arrays,
        ids,
    }
}

pub fn cmd_run_vertex(a: RunArgs, mut outputs: Outputs) -> Result<()> {
    let start = Instant::now();
    let v = &a.vertex;
    let Some(algo) = VAlgo::from_name(&a.algo) else {
        bail!(
            "the vertex engine runs {}; '{}' is not one of them",
            VAlgo::ALL.map(|x| x.name()).join(", "),
            a.algo
        );
    };
    let stats = IoStats::new();
    let store = Store::open_with(&a.store, ReadMode::Buffered, stats.clone())
        .with_context(|| format!("opening store {}", a.store.display()))?;
    let ids = store.id_map()?;
    let root = resolve_root(algo.name(), algo.needs_root(), a.root, &ids, &a.store)?;
    if algo.weighted() && store.manifest().reverse_marked {
        bail!(outcore_algos::programs::reverse_marked_refusal(
            algo.name(),
            &a.store
        ));
    }
    let weights = algo.weighted() && store.weighted();
    let per_edge = if weights { 8 } else { 4 };
    let csr = store.edges() * per_edge;
    let default_split = if v.policy.is_some() {
        "5%,20%"
    } else {
        "25%,0"
    };
    let (mut page_cache, mut static_cache) =
        cache_split(v.cache_split.as_deref().unwrap_or(default_split), csr)?;
    if static_cache > 0 && v.policy.is_none() {
        bail!("--cache-split gives the static cache {}, but no --policy says what to put in it (gvs, gvs-page, lowd, highd, random)", format_bytes(static_cache));
    }
    let in_edges = algo.needs_in_edges(store.manifest().directed);
    let fixed = fixed_bytes(&store, &ids, algo, v, weights, in_edges);
    let caches = a.memory.saturating_sub(fixed.total());
    if caches < MIN_CACHE {
        return Err(crate::embed::budget(format!(
            "--memory {} is too small for the vertex engine's {} on this store: {}; give at least --memory {}",
            format_bytes(a.memory),
            algo.name(),
            fixed.describe(),
            format_bytes(fixed.total() + MIN_CACHE)
        )));
    }
    if page_cache + static_cache > caches {
        if v.cache_split.is_some() {
            return Err(crate::embed::budget(format!(
                "--cache-split asks for {} of page cache and {} of static cache, but --memory {} leaves {} beside {}",
                format_bytes(page_cache),
                format_bytes(static_cache),
                format_bytes(a.memory),
                format_bytes(caches),
                fixed.describe()
            )));
        }
        // The default split scaled down to what the budget leaves.
        let scale = caches as f64 / (page_cache + static_cache) as f64;
        page_cache = (page_cache as f64 * scale) as u64;
        static_cache = (static_cache as f64 * scale) as u64;
    }
    let (selection, selection_lists, sel_note) = match v.policy {
        None => (Vec::new(), None, String::new()),
        Some(policy) => match select::load(&store, policy)? {
            Some((rec, list)) => {
                let note = format!(
                    "static cache: saved {} selection ({} vertices for {})",
                    policy.name(),
                    rec.vertices,
                    format_bytes(rec.budget)
                );
                (list, rec.lists, note)
            }
            None => {
                let sel = select::select(
                    &store,
                    &SelectOptions {
                        policy,
                        budget: static_cache,
                        k: v.k,
                        page_size: v.page_size,
                        seed: a.seed,
                    },
                )?;
                let note = format!(
                    "static cache: {} selection computed in {:.2}s (none saved; `outcore select-cache` saves one)",
                    policy.name(),
                    sel.seconds
                );
                (sel.vertices, None, note)
            }
        },
    };
    if !sel_note.is_empty() {
        eprintln!("{sel_note}");
    }
    let cfg = VertexConfig {
        page_size: v.page_size as usize,
        page_cache,
        static_cache,
        selection,
        selection_lists,
        max_request: v.max_request as usize,
        queue_depth: v.queue_depth,
        direct: !v.buffered,
        weights,
        in_edges,
    };
    let mut engine = VertexEngine::new(&store, cfg)?;
    let bar = ProgressBar::new_spinner();
    bar.set_style(ProgressStyle::with_template("{prefix:>6} {spinner} {msg} {elapsed}").unwrap());
    bar.set_prefix(algo.name().to_string());
    crate::embed::track(&bar, algo.name());
    {
        let bar = bar.clone();
        engine.set_progress(Box::new(move |s, active| {
            bar.set_message(format!(
                "iteration {}, {active} active, {} pages read",
                s.iterations, s.pages_read
            ));
            bar.tick();
        }));
    }
    let params = VParams {
        root,
        seed: a.seed,
        rounds: v.rounds,
        sources: v.sources,
        iterations: a.iterations,
        // Only sampling and tie-breaks use it (diam, bc, apsp).
        user_rank: matches!(algo, VAlgo::Diam | VAlgo::Bc | VAlgo::Apsp)
            .then(|| ids.user_order().map(vc::user_ranks))
            .flatten(),
    };
    let t_algo = Instant::now();
    let r = vc::run(&mut engine, algo, &params)?;
    let algo_secs = t_algo.elapsed().as_secs_f64();
    bar.finish_and_clear();
    let run_secs = start.elapsed().as_secs_f64();
    let es = engine.finish();
    let verified = if a.verify {
        let t = Instant::now();
        let p = Params {
            root,
            ..Default::default()
        };
        let msg = match algo {
            VAlgo::Bfs => verify(&store, Algo::Bfs, &p, &r.run.output)?,
            VAlgo::Sssp => verify(&store, Algo::Sssp, &p, &r.run.output)?,
            VAlgo::Wcc => verify(&store, Algo::Wcc, &p, &r.run.output)?,
            VAlgo::Diam => {
                // The last sweep is a BFS tree: check it by the Graph500 rules.
                let last = *r.extra.starts.last().expect("at least one sweep");
                let p = Params {
                    root: last,
                    ..Default::default()
                };
                verify(&store, Algo::Bfs, &p, &r.run.output)?
            }
            VAlgo::Bc | VAlgo::Apsp => {
                let Output::Values(x) = &r.run.output else {
                    bail!("{} returned no values", algo.name())
                };
                let name = |d: u32| ids.to_user(d);
                if algo == VAlgo::Bc {
                    outcore_algos::verify::verify_bc(&store, &r.extra.sources, x, &name)?
                } else {
                    outcore_algos::verify::verify_apsp(
                        &store,
                        &r.extra.sources,
                        &r.extra.reach,
                        &r.extra.eccentricity,
                        x,
                        &name,
                    )?
                }
            }
        };
        eprintln!("verify: {msg} ({:.2}s)", t.elapsed().as_secs_f64());
        Some(msg)
    } else {
        None
    };
    outputs.write_result(&r.run.output, &ids, a.parents)?;
    let peak = crate::progress::peak_memory();
    let user = |d: u32| ids.to_user(d);
    if outputs.stats.is_some() {
        let mut engine_json = serde_json::to_value(&es)?;
        engine_json["page_hit_ratio"] = es.page_hit_ratio().into();
        engine_json["static_hit_ratio"] = es.static_hit_ratio().into();
        let j = serde_json::json!({
            "algorithm": algo.name(),
            "engine": "vertex",
            "store": a.store,
            "vertices": store.vertices(),
            "edges": store.edges(),
            "order": store.manifest().order.as_ref().map(|o| o.order.clone()),
            "policy": v.policy.map(|p| p.name()),
            "page_cache_bytes": page_cache,
            "static_cache_bytes": static_cache,
            "iterations": r.run.iterations,
            "summary": r.run.summary,
            // The algorithm alone (the static cache loaded, as ATC'19 §5.1 reports).
            "seconds": algo_secs,
            "total_seconds": run_secs,
            "engine": engine_json,
            "diameter": r.extra.diameter,
            "starts": r.extra.starts.iter().map(|&d| user(d)).collect::<Vec<_>>(),
            "sources": r.extra.sources.iter().map(|&d| user(d)).collect::<Vec<_>>(),
            "reach": r.extra.reach,
            "eccentricity": r.extra.eccentricity,
            "peak_rss_bytes": peak,
            "os_io": os_io(),
            "verified": verified,
        });
        outputs.write_stats(&j)?;
    }
    let summary = match (&r.run.output, algo) {
        (Output::Bfs(_), VAlgo::Diam) => format!(
            "diameter >= {} ({} BFS, starts {})",
            r.extra.diameter.unwrap_or(0),
            r.extra.starts.len(),
            r.extra
                .starts
                .iter()
                .map(|&d| user(d).to_string())
                .collect::<Vec<_>>()
                .join(" -> ")
        ),
        // The engine names its dense ids; the summary names the user's, and a tie
        // goes to the smallest user id, so every vertex order reports the same one.
        (Output::Values(x), VAlgo::Bc) => {
            let top = x
                .iter()
                .enumerate()
                .map(|(d, &c)| (c, user(d as u32)))
                .max_by(|a, b| a.0.total_cmp(&b.0).then(b.1.cmp(&a.1)));
            format!(
                "{} sources, highest centrality {:.6} (vertex {})",
                r.extra.sources.len(),
                top.map_or(0.0, |t| t.0),
                top.map_or(0, |t| t.1)
            )
        }
        _ => r.run.summary.clone(),
    } + &crate::output::parallel_note(&store, algo.name());
    eprintln!(
        "{}: {summary} in {:.2}s ({:.2}s with set-up), {} iterations, read {} in {} requests ({} pages of {}), page cache hits {:.1}%, static cache hits {:.1}% ({} vertices, {} loaded in {:.2}s), page utilization {:.1}%, I/O wait {:.2}s, compute {:.2}s{}",
        algo.name(),
        algo_secs,
        run_secs,
        r.run.iterations,
        format_bytes(es.bytes_read),
        es.requests,
        es.pages_read,
        format_bytes(es.page_size),
        100.0 * es.page_hit_ratio(),
        100.0 * es.static_hit_ratio(),
        es.static_vertices,
        format_bytes(es.static_load_bytes),
        es.static_load_seconds,
        100.0 * es.page_utilization,
        es.io_wait_seconds,
        es.compute_seconds,
        peak.map_or(String::new(), |p| format!(", peak memory {}", format_bytes(p)))
    );
    Ok(())
}

#[derive(Args)]
pub struct SelectArgs {
    /// The store directory.
    pub store: PathBuf,
    /// gvs, gvs-page, lowd, highd or random.
    #[arg(long)]
    pub policy: Policy,
    /// Static-cache size: a size (256M) or a percentage of the CSR (20%).
    #[arg(long, default_value = "20%")]
    pub size: String,
    /// GVS rounds (K of Algorithm 1).
    #[arg(long, default_value_t = 100)]
    pub k: u32,
    /// The page size GVS models.
    #[arg(long, default_value = "8K", value_parser = parse_size_arg)]
    pub page_size: u64,
    /// Weighted runs (sssp) use 8 bytes per edge: size the selection for them.
    #[arg(long)]
    pub weighted: bool,
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
}

pub fn cmd_select(a: SelectArgs) -> Result<()> {
    let store =
        Store::open(&a.store).with_context(|| format!("opening store {}", a.store.display()))?;
    if a.weighted && !store.weighted() {
        bail!("--weighted: {} has no weights", a.store.display());
    }
    let per_edge = if a.weighted { 8 } else { 4 };
    let budget = size_or_percent(&a.size, store.edges() * per_edge, "--size")?;
    // The selection is sized in the store's bytes per edge; scale the budget so
    // it holds the same number of edges.
    let budget_store = budget / per_edge * select::bytes_per_edge(&store);
    let sel = select::select(
        &store,
        &SelectOptions {
            policy: a.policy,
            budget: budget_store,
            k: a.k,
            page_size: a.page_size,
            seed: a.seed,
        },
    )?;
    let rec = select::save(&store, &sel)?;
    eprintln!(
        "select-cache: {} selected {} vertices ({} edges, {} of edge lists) in {:.2}s (K = {}, page {}); saved as {}",
        a.policy.name(),
        rec.vertices,
        rec.edges,
        format_bytes(rec.edges * per_edge),
        rec.seconds,
        rec.k,
        format_bytes(rec.page_size),
        rec.file
    );
    println!("{}", serde_json::to_string(&rec)?);
    Ok(())
}

#[derive(Args)]
pub struct ReorderArgs {
    /// The source store.
    pub store: PathBuf,
    /// The new store directory.
    #[arg(short, long)]
    pub out: PathBuf,
    /// norder, degree or random.
    #[arg(long)]
    pub order: Order,
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Memory budget of the rewrite (sort buffers).
    #[arg(long, default_value = "1G", value_parser = crate::args::parse_memory_arg)]
    pub memory: u64,
    /// Replace OUT if it exists.
    #[arg(long)]
    pub force: bool,
}

pub fn cmd_reorder(a: ReorderArgs) -> Result<()> {
    let src =
        Store::open(&a.store).with_context(|| format!("opening store {}", a.store.display()))?;
    let opts = IngestOptions {
        memory: a.memory,
        force: a.force,
        ..Default::default()
    };
    let bar = crate::progress::IngestBars::new();
    let (rep, secs) = outcore_store::order::reorder(&src, &a.out, a.order, a.seed, &opts, &bar)?;
    bar.finish();
    eprintln!(
        "reorder: {} order computed in {:.2}s; {} written in {:.2}s ({} vertices, {} edges, read {}, wrote {})",
        a.order.name(),
        secs,
        a.out.display(),
        rep.seconds,
        rep.vertices,
        rep.edges,
        format_bytes(rep.io.bytes_read),
        format_bytes(rep.io.bytes_written)
    );
    Ok(())
}
