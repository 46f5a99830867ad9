//! `outcore dist ingest|run`: the scale-out engine (Chaos) under `mpirun`. Built
//! with the cargo feature `dist` (MPI); without it the command says how to get it.

use crate::args::OutFormat;
use clap::{Args, Subcommand};
use std::path::PathBuf;

#[derive(Subcommand)]
pub enum DistCmd {
    /// Spread a graph over the ranks: `mpirun -np N outcore dist ingest INPUT... -o DIR`
    /// (rank 0 reads the input; rank K writes DIR/rank-K only).
    Ingest(DistIngestArgs),
    /// Run an algorithm on a distributed store made with the same number of ranks:
    /// `mpirun -np N outcore dist run ALGO DIR [--root R] [--out FILE]`.
    Run(DistRunArgs),
}

#[derive(Args)]
pub struct DistIngestArgs {
    /// Input files (any format `outcore ingest` reads).
    #[arg(required = true)]
    pub inputs: Vec<PathBuf>,
    /// The distributed store: each rank writes DIR/rank-K on its own machine.
    #[arg(short, long)]
    pub out: PathBuf,
    /// Input format for every input: text, csv, dimacs, mtx, bin32, bin32w, bin64.
    #[arg(long)]
    pub format: Option<outcore_store::Format>,
    /// Store both directions of every edge.
    #[arg(long)]
    pub undirected: bool,
    /// Store each edge and its reverse, the reverse marked by the weight's sign
    /// (what scc needs); weights must be non-negative.
    #[arg(long, conflicts_with = "undirected")]
    pub with_reverse: bool,
    /// Renumber arbitrary u64 ids densely; results are still written in your ids.
    #[arg(long)]
    pub remap: bool,
    /// Keep one copy of each (source, target) pair (the smallest weight).
    #[arg(long)]
    pub dedup: bool,
    /// Drop edges from a vertex to itself.
    #[arg(long)]
    pub drop_self_loops: bool,
    /// Drop weights.
    #[arg(long)]
    pub no_weights: bool,
    /// Declare the vertex count; ids must be below it.
    #[arg(long, conflicts_with = "remap")]
    pub vertices: Option<u64>,
    /// Memory of each rank: streaming partitions are sized so that one partition's
    /// vertex state (44 bytes a vertex) fits half of it.
    #[arg(long, default_value = "1G", value_parser = crate::args::parse_memory_arg)]
    pub memory: u64,
    /// Largest edge chunk (the unit of placement and of stealing).
    #[arg(long, default_value = "4M", value_parser = crate::args::parse_size_arg)]
    pub chunk_size: u64,
    /// Streaming partitions (a multiple of the rank count; default: the smallest that fits).
    #[arg(long)]
    pub partitions: Option<u32>,
    /// Vertices per vertex chunk (the unit vertex values are placed, read and
    /// written in).
    #[arg(long, default_value_t = 65536)]
    pub vertex_chunk: u64,
    /// Seed of the random chunk placement.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Replace rank directories that exist.
    #[arg(long)]
    pub force: bool,
}

#[derive(Args)]
pub struct DistRunArgs {
    /// bfs, sssp, wcc-lp and mis-gas (on an undirected store), pagerank, pagerank-delta, spmv, conductance, scc (on a store ingested --with-reverse), bp (undirected).
    pub algo: String,
    /// The distributed store (made by `dist ingest` with the same number of ranks).
    pub dir: PathBuf,
    /// Root vertex (bfs, sssp), in the input's ids.
    #[arg(long)]
    pub root: Option<u64>,
    /// Memory of each rank.
    #[arg(long, default_value = "1G", value_parser = crate::args::parse_memory_arg)]
    pub memory: u64,
    /// Iterations (pagerank, spmv: exactly; others: at most).
    #[arg(long)]
    pub iterations: Option<u64>,
    /// pagerank-delta: stop when no vertex changes by more than this.
    #[arg(long, default_value_t = 1e-7)]
    pub tolerance: f64,
    /// PageRank damping factor.
    #[arg(long, default_value_t = 0.85)]
    pub damping: f64,
    /// bp: coupling strength h of linearized belief propagation (0 < h < 0.5).
    #[arg(long, default_value_t = outcore_algos::DEFAULT_COUPLING)]
    pub coupling: f64,
    /// Write BFS/SSSP parents too.
    #[arg(long)]
    pub parents: bool,
    /// Result file, written by rank 0 in the input's ids (as `outcore run --out`).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Result format (default: from the extension).
    #[arg(long, value_enum)]
    pub out_format: Option<OutFormat>,
    /// Statistics as JSON (per rank: bytes read, written, sent and received, idle time).
    #[arg(long)]
    pub stats: Option<PathBuf>,
    /// Check the result independently, as `outcore run --verify` does (Graph500
    /// rules, union-find, Tarjan, serial recomputations), on rank 0 over passes
    /// of the layout's edges streamed from every rank.
    #[arg(long)]
    pub verify: bool,
    /// Outstanding chunk requests per computation engine (default: 2 x Chaos §6.5's batch factor).
    #[arg(long, default_value_t = 0)]
    pub window: usize,
    /// Seed of the request targets and update placement.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Directory for each rank's run files and checkpoints (default: its rank
    /// directory; give the same one to --resume).
    #[arg(long)]
    pub work_dir: Option<PathBuf>,
    /// Checkpoint the vertex values every N iterations (0: never).
    #[arg(long, default_value_t = outcore_dist::compute::DEFAULT_CHECKPOINT_EVERY)]
    pub checkpoint_every: u64,
    /// Continue a run that was stopped from the last checkpoint every rank
    /// committed (the same algorithm and settings; starts over when there is none).
    #[arg(long)]
    pub resume: bool,
    /// Idle ranks do not help other ranks with their partitions (Chaos §5.3's
    /// work stealing is on by default).
    #[arg(long)]
    pub no_steal: bool,
    /// Threads of each rank's computation engine (default: the machine's cores
    /// but one, for the storage engine, over the ranks mpirun placed on it).
    #[arg(long, default_value_t = 0)]
    pub threads: usize,
    /// Memory for the accumulators of the partitions this rank masters, kept
    /// from scatter to gather so that their updates are combined at once rather
    /// than stored and read back (default: an eighth of --memory; 0: none; at
    /// most what --memory leaves beside a partition's state, the update bins and
    /// a full request window's chunks).
    #[arg(long, value_parser = outcore_io::parse_size)]
    pub resident: Option<u64>,
}

#[cfg(not(feature = "dist"))]
pub fn cmd_dist(_: DistCmd) -> anyhow::Result<()> {
    anyhow::bail!(
        "this outcore was built without the distributed engine: install OpenMPI (apt-get install -y openmpi-bin libopenmpi-dev libclang-dev), build with `cargo build --release -p outcore-cli --features dist`, and launch with mpirun"
    )
}

#[cfg(feature = "dist")]
pub use with_mpi::cmd_dist;

#[cfg(feature = "dist")]
mod with_mpi {
    use super::*;

    /// The engines allocate and free a chunk-sized buffer for every message
    /// (4 MiB by default): mapped on their own (the binary's 1 MiB threshold),
    /// each was faulted in page by page and a quarter of a run went to page
    /// faults. Buffers up to 64 MiB come from the heap instead and stay there
    /// once freed; the protocol bounds how many are alive (the request window,
    /// the puts awaiting acknowledgement, the bins). One arena for every thread:
    /// the computation thread reads its own rank's chunks, the storage thread
    /// replies to the others, and with an arena each their freed buffers were
    /// kept twice (a rank's max RSS at --memory 64M: 51-66 MiB above it with
    /// one arena per thread, 46-54 MiB with one).
    fn keep_chunk_buffers() {
        // SAFETY: mallopt only sets allocator parameters, which glibc reads
        // under its own lock; nothing else runs yet.
        #[cfg(all(target_os = "linux", target_env = "gnu"))]
        unsafe {
            libc::mallopt(libc::M_MMAP_THRESHOLD, 64 << 20);
            libc::mallopt(libc::M_TRIM_THRESHOLD, 256 << 20);
            libc::mallopt(libc::M_ARENA_MAX, 1);
        }
    }
    use crate::output::{resolve_root, Outputs};
    use anyhow::{bail, Result};
    use outcore_algos::programs::{run_program_on, GraphFacts};
    use outcore_algos::{Algo, Params};
    use outcore_dist::ingest::agree;
    use outcore_dist::transport::{all_gather, mpi_transport::Mpi, Transport};
    use outcore_dist::{DistConfig, DistError, DistIngestOptions, DistRunner, RankManifest};
    use outcore_io::format_bytes;
    use outcore_store::{IngestOptions, Store};
    use std::time::{Duration, Instant};

    /// The layout's edges as the independent checks read them (rank 0).
    struct DistEdges<'a, 'b> {
        p: &'a outcore_dist::edges::EdgePasses<'b>,
        ids: &'a outcore_store::IdMap,
    }

    impl outcore_algos::verify::EdgeSource for DistEdges<'_, '_> {
        fn vertices(&self) -> u64 {
            self.p.vertices()
        }
        fn id_map(&self) -> outcore_algos::Result<outcore_store::IdMap> {
            Ok(self.ids.clone())
        }
        fn for_each_edge(
            &self,
            weights: bool,
            f: &mut dyn FnMut(u32, u32, f32),
        ) -> outcore_algos::Result<()> {
            self.p
                .for_each_edge(weights, f)
                .map_err(|e| outcore_algos::AlgoError::Invalid(e.to_string()))
        }
    }

    pub fn cmd_dist(c: DistCmd) -> Result<()> {
        keep_chunk_buffers();
        let mpi = Mpi::init()?;
        let r = match c {
            DistCmd::Ingest(a) => ingest(&mpi, a),
            DistCmd::Run(a) => run(&mpi, a),
        };
        // Sends still in flight complete when `mpi` is dropped, before MPI_Finalize.
        r.map_err(|e| e.context(format!("rank {} of {}", mpi.rank(), mpi.size())))
    }

    fn ingest(t: &Mpi, a: DistIngestArgs) -> Result<()> {
        let start = Instant::now();
        let io = IngestOptions {
            format: a.format,
            undirected: a.undirected,
            with_reverse: a.with_reverse,
            weighted: if a.no_weights { Some(false) } else { None },
            remap: a.remap,
            dedup: a.dedup,
            drop_self_loops: a.drop_self_loops,
            memory: a.memory,
            vertices: a.vertices,
            force: true,
            ..IngestOptions::default()
        };
        let opts = DistIngestOptions {
            memory: a.memory,
            chunk_bytes: a.chunk_size,
            vertex_chunk: a.vertex_chunk,
            partitions: a.partitions.unwrap_or(0),
            block_records: 0,
            seed: a.seed,
            force: a.force,
        };
        let inputs = a.inputs.clone();
        let mut make = |tmp: &std::path::Path| -> outcore_dist::Result<Store> {
            outcore_store::ingest(&inputs, tmp, &io, &outcore_store::ingest::Quiet)?;
            Ok(Store::open(tmp)?)
        };
        let (plan, ranks) = outcore_dist::ingest::ingest(t, &a.out, &opts, &mut make)?;
        if t.rank() == 0 {
            let per: Vec<String> = ranks
                .iter()
                .map(|r| {
                    format!(
                        "rank {}: {} edges in {} chunks",
                        r.rank, r.edges, r.edge_chunks
                    )
                })
                .collect();
            eprintln!(
                "dist ingest: {} vertices, {} edges into {} partitions of {} vertices over {} ranks ({}) in {:.2}s",
                plan.vertices,
                plan.edges,
                plan.partitions,
                plan.partition_vertices,
                plan.ranks,
                per.join(", "),
                start.elapsed().as_secs_f64()
            );
        }
        Ok(())
    }

    fn run(t: &Mpi, a: DistRunArgs) -> Result<()> {
        let start = Instant::now();
        let mut idle = Duration::ZERO;
        let Some(algo) = Algo::from_name(&a.algo) else {
            bail!("unknown algorithm '{}'", a.algo);
        };
        if !outcore_algos::programs::dist_supported(algo) {
            bail!(
                "{} does not run on the distributed engine yet (it runs bfs, sssp, wcc-lp, mis-gas, pagerank, pagerank-delta, spmv, conductance, scc, bp, mcst)",
                algo.name()
            );
        }
        // Every rank opens its directory; all stop if one cannot.
        let opened = RankManifest::load(&a.dir, t.rank(), t.size()).and_then(|m| {
            let ids = outcore_dist::id_map(&a.dir, &m)?;
            Ok((m, ids))
        });
        agree(t, opened.as_ref().err(), &mut idle)?;
        let (m, ids) = opened?;
        let root = resolve_root(algo.name(), algo.needs_root(), a.root, &ids, &a.dir);
        agree(
            t,
            root.as_ref()
                .err()
                .map(|e| DistError::Invalid(e.to_string()))
                .as_ref(),
            &mut idle,
        )?;
        let root = root?;
        let mut outputs = if t.rank() == 0 {
            Outputs::prepare(a.out.as_deref(), a.out_format, a.stats.as_deref(), &a.dir)?
        } else {
            Outputs::default()
        };
        let params = Params {
            root,
            iterations: a.iterations,
            tolerance: a.tolerance,
            damping: a.damping,
            seed: a.seed,
            coupling: a.coupling,
        };
        let facts = GraphFacts {
            vertices: m.plan.vertices,
            directed: m.plan.directed,
            reverse_marked: m.plan.reverse_marked,
            dir: &a.dir,
            ids: &|| Ok(ids.clone()),
        };
        let plan = m.plan.clone();
        // Tests of --resume stop a rank at a chosen moment, as a killed one stops.
        let fail_at = match std::env::var("OUTCORE_DIST_FAIL") {
            Ok(s) => Some(outcore_dist::checkpoint::FailAt {
                abort: true,
                ..s.parse()
                    .map_err(|e: String| anyhow::anyhow!("OUTCORE_DIST_FAIL: {e}"))?
            }),
            Err(_) => None,
        };
        let mut runner = DistRunner {
            transport: t,
            dir: a.dir.clone(),
            manifest: m,
            config: DistConfig {
                window: a.window,
                seed: a.seed,
                work_dir: a.work_dir.clone(),
                checkpoint_every: a.checkpoint_every,
                resume: a.resume,
                run_key: format!("{} {params:?}", algo.name()),
                fail_at,
                steal: !a.no_steal,
                resident_bytes: a.resident,
                threads: a.threads,
                ..DistConfig::new(a.memory)
            },
            iterations: 0,
            stats: None,
        };
        let t_run = Instant::now();
        let result = run_program_on(&mut runner, &facts, algo, &params)?;
        let secs = t_run.elapsed().as_secs_f64();
        let mine = serde_json::to_vec(&runner.stats).expect("serialisable");
        let all = all_gather(t, &mine, &mut idle)?;
        let vt = Instant::now();
        let check = if a.verify {
            outcore_dist::edges::with_edge_passes(t, &a.dir, &runner.manifest, |passes| {
                passes.map(|p| {
                    let src = DistEdges { p, ids: &ids };
                    outcore_algos::verify::verify(&src, algo, &params, &result.output)
                })
            })?
        } else {
            None
        };
        if t.rank() != 0 {
            return Ok(());
        }
        if let Some(c) = check {
            eprintln!("verify: {} ({:.2}s)", c?, vt.elapsed().as_secs_f64());
        }
        let per: Vec<outcore_dist::RankStats> = all
            .iter()
            .map(|b| serde_json::from_slice::<Option<outcore_dist::RankStats>>(b))
            .collect::<std::result::Result<Vec<_>, _>>()?
            .into_iter()
            .flatten()
            .collect();
        outputs.write_result(&result.output, &ids, a.parents)?;
        let read: u64 = per.iter().map(|s| s.storage.bytes_read).sum();
        let written: u64 = per.iter().map(|s| s.storage.bytes_written).sum();
        let sent: u64 = per.iter().map(|s| s.bytes_sent).sum();
        let edges: u64 = per.iter().map(|s| s.edges_processed).sum();
        if outputs.stats.is_some() {
            let j = serde_json::json!({
                "algorithm": algo.name(),
                "store": a.dir,
                "vertices": plan.vertices,
                "edges": plan.edges,
                "ranks": plan.ranks,
                "partitions": plan.partitions,
                "memory_budget": a.memory,
                "iterations": result.iterations,
                "summary": result.summary,
                "seconds": secs,
                "total_seconds": start.elapsed().as_secs_f64(),
                "engine_choice": { "engine": "dist", "reason": "outcore dist run" },
                "per_rank": per,
            });
            outputs.write_stats(&j)?;
        }
        let resumed = match per.first().and_then(|s| s.resumed_from) {
            Some(i) => format!(" (resumed after iteration {i})"),
            None if a.resume => " (no checkpoint on every rank: started over)".to_string(),
            None => String::new(),
        };
        eprintln!(
            "{}: {} in {:.2}s on the distributed engine ({} ranks, {} partitions), {} iterations{resumed}, {} edges processed, read {}, wrote {}, sent {} between ranks",
            algo.name(),
            result.summary,
            secs,
            plan.ranks,
            plan.partitions,
            result.iterations,
            edges,
            format_bytes(read),
            format_bytes(written),
            format_bytes(sent)
        );
        Ok(())
    }
}
