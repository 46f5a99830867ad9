//! Out-of-core ingest: input files -> a store directory.
//!
//! Pipeline (every byte through `outcore-io`, counted):
//! 1. **probe** each input (format, gzip, header, weights) and check the output;
//! 2. **parse** in parallel chunks ([`crate::parse`]); without `--remap` ids are
//!    shifted to 0-based and pushed straight into an [`ExternalSorter`]; with
//!    `--remap` raw edges are spilled to a temporary file while the distinct ids are
//!    collected, then mapped densely (the map keeps the user's order, so results in
//!    ascending dense id are in ascending user id);
//! 3. **sort**: when every edge fits the budget together with a CSR of them (the
//!    common case), a counting sort on the source places them straight into an
//!    in-memory CSR ([`crate::memcsr`]); otherwise full buffers are partitioned
//!    by source and spilled as runs (each with the table of its source buckets;
//!    the spill double-buffered behind the parse), and the runs are
//!    taken back range of sources by range of sources, each range's records from
//!    every run counting-sorted into an in-memory CSR of the range. Lists are
//!    sorted by (target, weight bits); `--dedup` keeps the first (smallest
//!    weight). Both paths write byte-identical files (tested), appending the
//!    layouts with `O_DIRECT`;
//! 4. **grid** (GridGraph's grid as in CLIP ATC'17 §4.1; GraphCP FCS'24 §3.2
//!    sub-blocks): the in-memory path cuts it from the CSR in memory (rows in
//!    parallel). The external path, when the runs' indexes show that every grid
//!    row fits a range, takes ranges of whole rows and cuts each range's rows from
//!    its CSR in memory in the same pass (a row's index entries fixed from its
//!    blocks' counts just before it is appended); otherwise it builds each row
//!    from its CSR range read back in chunks that fit the budget, written into its
//!    precomputed place in `grid.data`, with the per-block counts taken while the
//!    ranges were built;
//! 5. in-edge CSR (`--in-edges`) from a transpose of the in-memory CSR or a second
//!    sort of the reversed edges (external path), degree arrays, id map, grid
//!    index, and last the manifest.
//!
//! Invariant: everything is built in `.NAME.ingest-PID` beside the output and
//! renamed into place only after the manifest is written and fsynced; a failed or
//! killed ingest leaves no store that opens, and the next ingest removes the
//! leftovers of a dead one.

use crate::codec::BlockPacker;
use crate::error::{Result, StoreError};
use crate::format::{FileKind, FileRecord, LayoutFile, LayoutWriter};
use crate::manifest::{IngestRecord, Manifest, MANIFEST, STORE_FORMAT};
use crate::memcsr::ListCounts;
use crate::memcsr::{place_blocks, Adj, CsrFiles, GridWriter, MemCsr, TargetWeight};
use crate::parse::{parse_input, probe, Format, PairSink, Probe, RawEdge};
use crate::reader::BlockEntry;
use crate::sort::{Edge, ExternalSorter, Record, Runs, WEdge};
use outcore_io::{InFile, IoError, IoSnapshot, IoStats, OutFile, ReadMode};
use rayon::prelude::*;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

mod output;
pub use output::min_store_bytes;
use output::*;
mod external;
use external::*;
#[cfg(test)]
mod tests;

/// Settings of an ingest; `Default` gives the CLI's defaults.
#[derive(Debug, Clone)]
pub struct IngestOptions {
    /// Force one format for every input instead of detecting it.
    pub format: Option<Format>,
    /// Store both directions of every edge.
    pub undirected: bool,
    /// Store each edge `(u, v, w)` and its reverse `(v, u)` with the weight's
    /// sign bit set, so programs that follow edges backwards (scc) can tell the
    /// reverse ones; the store is weighted and weights must not be negative.
    pub with_reverse: bool,
    /// `Some(true)`: require weights; `Some(false)`: drop them; `None`: keep them when
    /// every input has them.
    pub weighted: Option<bool>,
    /// Renumber arbitrary u64 ids densely and keep the map.
    pub remap: bool,
    /// Keep one copy of each (source, target) pair (the smallest weight).
    pub dedup: bool,
    pub drop_self_loops: bool,
    /// Memory budget in bytes.
    pub memory: u64,
    /// Grid partitions P (P x P blocks); `None` chooses from vertices and budget.
    pub partitions: Option<u32>,
    /// Also write the in-edge CSR.
    pub in_edges: bool,
    /// Replace an existing store.
    pub force: bool,
    /// Where sort runs go (default: beside the output).
    pub tmp_dir: Option<PathBuf>,
    /// Caps the sort buffer at this many records (default: from `memory`). Lets tests
    /// drive small inputs through the spill-and-merge path.
    pub sort_buffer_records: Option<usize>,
    /// Declared vertex count (ids are `< vertices` after the base); for inputs
    /// without a header, e.g. Graph500's n = 2^scale when the top ids have no edges.
    pub vertices: Option<u64>,
    /// Most vertices accepted (default [`MAX_VERTICES`]); lets tests reach the
    /// too-many-vertices error without 4 billion ids.
    pub max_vertices: u64,
}

impl Default for IngestOptions {
    fn default() -> Self {
        IngestOptions {
            format: None,
            undirected: false,
            with_reverse: false,
            weighted: None,
            remap: false,
            dedup: false,
            drop_self_loops: false,
            memory: 1 << 30,
            partitions: None,
            in_edges: false,
            force: false,
            tmp_dir: None,
            sort_buffer_records: None,
            vertices: None,
            max_vertices: MAX_VERTICES,
        }
    }
}

/// Receives progress: a phase with its total work, then advances within it.
pub trait IngestObserver: Sync {
    fn phase(&self, _name: &str, _total: u64) {}
    fn advance(&self, _done: u64, _edges: u64) {}
}

/// An observer that ignores progress.
pub struct Quiet;
impl IngestObserver for Quiet {}

/// What an ingest did.
#[derive(Debug, Clone)]
pub struct IngestReport {
    pub vertices: u64,
    pub edges: u64,
    pub input_edges: u64,
    pub self_loops: u64,
    /// Stored edges that repeat a (source, target) pair already stored (0 after
    /// `--dedup`).
    pub parallel_edges: u64,
    pub partitions: u32,
    pub sort_runs: usize,
    /// Whether the grid took a second pass over the CSR files (the external path
    /// when a grid row does not fit a range of sources; otherwise the rows are cut
    /// from the CSR in memory).
    pub grid_second_pass: bool,
    pub seconds: f64,
    pub io: IoSnapshot,
    pub store_bytes: u64,
}

/// Largest number of vertices a store holds (ids are dense u32; u32::MAX is reserved).
pub const MAX_VERTICES: u64 = u32::MAX as u64;

/// Vertices per input edge beyond which an id range counts as absurd: a store with
/// more than [`SPARSE_MIN_VERTICES`] vertices and more than this many per edge is
/// refused unless `--vertices` (or a file header) declares the count.
pub const SPARSE_VERTICES_PER_EDGE: u64 = 64;
/// Vertex counts up to this are never called absurd.
pub const SPARSE_MIN_VERTICES: u64 = 1 << 20;

/// Chooses P: intervals small enough that an interval's vertex state (16 bytes a
/// vertex) is a sixteenth of the budget, and blocks of about 64K edges on average
/// for selective scheduling; a power of two, at most 1024 and at most n.
pub fn choose_partitions(vertices: u64, edges: u64, memory: u64) -> u32 {
    let by_mem = (vertices.saturating_mul(16 * 16)).div_ceil(memory.max(1));
    let by_edges = ((edges / 65536) as f64).sqrt() as u64;
    let p = by_mem.max(by_edges).max(1).next_power_of_two().min(1024);
    p.min(vertices.max(1)) as u32
}

/// Ingests `inputs` into the store directory `out`.
pub fn ingest(
    inputs: &[PathBuf],
    out: &Path,
    opts: &IngestOptions,
    obs: &dyn IngestObserver,
) -> Result<IngestReport> {
    let start = Instant::now();
    if inputs.is_empty() {
        return Err(StoreError::Invalid("no input files given".into()));
    }
    if opts.memory < (1 << 20) {
        return Err(StoreError::Invalid(format!(
            "--memory {} is too small: ingest needs at least 1 MiB",
            outcore_io::format_bytes(opts.memory)
        )));
    }
    if opts.with_reverse {
        let clash = [
            (
                opts.undirected,
                "--undirected (it stores both directions unmarked)",
            ),
            (
                opts.dedup,
                "--dedup (it would merge an edge with the reverse of another)",
            ),
            (
                opts.weighted == Some(false),
                "--no-weights (the weight's sign marks a reverse edge)",
            ),
        ];
        if let Some((_, what)) = clash.iter().find(|c| c.0) {
            return Err(StoreError::Invalid(format!(
                "--with-reverse cannot be combined with {what}"
            )));
        }
    }
    if let Some(p) = opts.partitions {
        if p == 0 || p > 4096 {
            return Err(StoreError::Invalid(format!(
                "--partitions {p}: must be between 1 and 4096"
            )));
        }
    }
    if let Some(v) = opts.vertices {
        if opts.remap {
            return Err(StoreError::Invalid("--vertices cannot be combined with --remap (remapped stores have one vertex per distinct id)".into()));
        }
        if v > opts.max_vertices {
            return Err(StoreError::Invalid(format!(
                "--vertices {v}: at most {} are supported",
                opts.max_vertices
            )));
        }
    }
    let _lock = lock_output(out)?;
    let state = check_output(out, opts.force)?;
    let mut probes: Vec<Probe> = inputs
        .iter()
        .map(|p| probe(p, opts.format))
        .collect::<Result<_>>()?;
    if opts.undirected {
        // A symmetric Matrix Market file lists each pair once; the undirected
        // ingest adds the reverse itself, so expanding it here too would store
        // every edge twice per direction.
        for p in &mut probes {
            p.symmetric = false;
        }
    }
    let weighted = match opts.weighted {
        Some(true) => {
            if let Some(k) = probes.iter().position(|p| !p.weighted) {
                return Err(StoreError::Invalid(format!(
                    "--weighted: {} ({}) has no weight column",
                    inputs[k].display(),
                    probes[k].format.name()
                )));
            }
            true
        }
        Some(false) => false,
        None => {
            let w = probes.iter().filter(|p| p.weighted).count();
            if w != 0 && w != probes.len() {
                let a = probes.iter().position(|p| p.weighted).unwrap();
                let b = probes.iter().position(|p| !p.weighted).unwrap();
                return Err(StoreError::Invalid(format!(
                    "{} has weights but {} has none; pass --weighted or --no-weights",
                    inputs[a].display(),
                    inputs[b].display()
                )));
            }
            // Unweighted inputs get weight 1 when the sign marks reverse edges.
            w == probes.len() || opts.with_reverse
        }
    };
    let base = probes[0].one_based as u64;
    if !opts.remap {
        if let Some(k) = probes.iter().position(|p| p.one_based as u64 != base) {
            return Err(StoreError::Invalid(format!(
                "{} and {} number vertices from different bases (0 and 1); pass --remap",
                inputs[0].display(),
                inputs[k].display()
            )));
        }
    }
    let mut work = make_workdir(out, opts.tmp_dir.as_deref())?;
    let stats = IoStats::new();
    let ctx = Ctx {
        inputs,
        probes: &probes,
        opts,
        obs,
        stats: stats.clone(),
        work: &work,
        base,
        start,
        relabel: None,
    };
    let mut report = if weighted {
        build::<WEdge>(&ctx)?
    } else {
        build::<Edge>(&ctx)?
    };

    commit(&mut work, state, out)?;
    report.seconds = start.elapsed().as_secs_f64();
    report.io = stats.snapshot();
    Ok(report)
}

/// Commits a finished build: sort runs are gone, the store moves into place.
fn commit(work: &mut WorkDir, state: OutState, out: &Path) -> Result<()> {
    std::fs::remove_dir_all(&work.spill).map_err(|e| IoError::new(&work.spill, "remove", e))?;
    let io_err = |p: &Path, e| StoreError::from(IoError::new(p, "rename", e));
    match state {
        OutState::Fresh | OutState::EmptyDir => {
            std::fs::rename(&work.build, out).map_err(|e| io_err(&work.build, e))?;
        }
        OutState::Replace => {
            let old = out.with_file_name(format!(
                ".{}.old-{}",
                out.file_name().unwrap().to_string_lossy(),
                std::process::id()
            ));
            std::fs::rename(out, &old).map_err(|e| io_err(out, e))?;
            std::fs::rename(&work.build, out).map_err(|e| io_err(&work.build, e))?;
            let _ = std::fs::remove_dir_all(&old);
        }
    }
    work.committed = true;
    let parent = out
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    outcore_io::sync_dir(parent)?;
    Ok(())
}

/// Builds `out` from the edges of another store, relabelled (`outcore reorder`).
pub(crate) fn ingest_relabelled(
    rel: &Relabel,
    out: &Path,
    opts: &IngestOptions,
    obs: &dyn IngestObserver,
) -> Result<IngestReport> {
    let start = Instant::now();
    let src = rel.store.manifest();
    let opts = IngestOptions {
        undirected: false,
        remap: true,
        dedup: false,
        drop_self_loops: false,
        in_edges: opts.in_edges || src.in_edges,
        partitions: opts.partitions.or(Some(src.partitions)),
        vertices: None,
        ..opts.clone()
    };
    let _lock = lock_output(out)?;
    let state = check_output(out, opts.force)?;
    let mut work = make_workdir(out, opts.tmp_dir.as_deref())?;
    let stats = IoStats::new();
    let inputs = [rel.store.dir().to_path_buf()];
    let ctx = Ctx {
        inputs: &inputs,
        probes: &[],
        opts: &opts,
        obs,
        stats: stats.clone(),
        work: &work,
        base: 0,
        start,
        relabel: Some(rel),
    };
    let mut report = if src.weighted {
        build::<WEdge>(&ctx)?
    } else {
        build::<Edge>(&ctx)?
    };
    commit(&mut work, state, out)?;
    report.seconds = start.elapsed().as_secs_f64();
    report.io = stats.snapshot();
    Ok(report)
}

/// Streams the source store's out-CSR into the sorter, relabelled.
fn parse_relabel<R: Record>(
    c: &Ctx,
    rel: &Relabel,
    sorter: &mut ExternalSorter<R>,
) -> Result<(u64, u64, Option<Vec<u64>>)> {
    let src = rel.store;
    let n = src.vertices();
    let m = src.edges();
    c.obs.phase("relabel", m);
    let csr = src.csr("out")?;
    let offs = csr.offsets().to_vec();
    let weights = if src.weighted() {
        Some(src.layout("csr.out.weights", FileKind::CsrWeights)?)
    } else {
        None
    };
    let p = rel.new_of_old;
    let chunk = 1u64 << 20;
    let mut u = 0usize;
    let mut e = 0u64;
    while e < m {
        let b = (e + chunk).min(m);
        let t = csr.targets(e, b)?;
        let mut w = vec![1f32; t.len()];
        if let Some(wf) = &weights {
            wf.read_payload(e * 4, bytemuck::cast_slice_mut(&mut w))?;
        }
        for (k, (&v, &wt)) in t.iter().zip(&w).enumerate() {
            let x = e + k as u64;
            while offs[u + 1] <= x {
                u += 1;
            }
            sorter.push(R::new(p[u], p[v as usize], wt))?;
        }
        e = b;
        c.obs.advance(e, e);
    }
    let ids = src.id_map()?;
    let mut user = vec![0u64; n as usize];
    for old in 0..n as usize {
        user[p[old] as usize] = ids.to_user(old as u32);
    }
    Ok((n, m, Some(user)))
}

/// The source of a relabelled ingest (`outcore reorder`, `ingest --order`): a
/// store read in a new vertex order. Defined here, made by `order`, so that the
/// dependency runs one way (order -> ingest).
pub(crate) struct Relabel<'a> {
    pub store: &'a crate::Store,
    pub new_of_old: &'a [u32],
    pub record: crate::manifest::OrderRecord,
}

struct Ctx<'a> {
    inputs: &'a [PathBuf],
    probes: &'a [Probe],
    opts: &'a IngestOptions,
    obs: &'a dyn IngestObserver,
    stats: Arc<IoStats>,
    work: &'a WorkDir,
    base: u64,
    start: Instant,
    relabel: Option<&'a Relabel<'a>>,
}

/// Pushes edge `(u, v, w)` (and its reverse for `--undirected` and
/// `--with-reverse`); `user` gives the user's ids for an error.
fn push_edge<R: Record>(
    s: &mut ExternalSorter<R>,
    u: u32,
    v: u32,
    w: f32,
    opts: &IngestOptions,
    user: impl Fn() -> (u64, u64),
) -> Result<()> {
    if u == v && opts.drop_self_loops {
        return Ok(());
    }
    s.push(R::new(u, v, w))?;
    if opts.with_reverse {
        if w.is_sign_negative() || w.is_nan() {
            let (a, b) = user();
            return Err(StoreError::Invalid(format!(
                "--with-reverse marks reverse edges by the sign of the weight, so weights must be non-negative; edge ({a}, {b}) has weight {w}"
            )));
        }
        s.push(R::new(v, u, -w))?;
    } else if opts.undirected && u != v {
        s.push(R::new(v, u, w))?;
    }
    Ok(())
}

/// Parses every input into the sorter; returns (vertex count, input edges, id map).
fn parse_all<R: Record>(
    c: &Ctx,
    sorter: &mut ExternalSorter<R>,
    sort_mem: u64,
) -> Result<(u64, u64, Option<Vec<u64>>)> {
    if let Some(rel) = c.relabel {
        return parse_relabel(c, rel, sorter);
    }
    let total: u64 = c.probes.iter().map(|p| p.file_bytes).sum();
    c.obs.phase("parse", total);
    let mut done_before = 0u64;
    let input_edges = std::cell::Cell::new(0u64);
    if !c.opts.remap {
        let mut limit = (u32::MAX as u64 - 1) + c.base;
        let mut n = 0u64;
        if let Some(v) = c.opts.vertices {
            limit = limit.min((v + c.base).saturating_sub(1));
            n = v;
        }
        for (path, p) in c.inputs.iter().zip(c.probes) {
            let base = c.base;
            let cell = std::cell::RefCell::new(&mut *sorter);
            // Records that go in as they are (bin32 (u, v) pairs into an unweighted
            // sorter, no transformation) skip the per-edge path.
            let as_is = !R::WEIGHTED
                && std::mem::size_of::<R>() == 8
                && base == 0
                && !c.opts.undirected
                && !c.opts.with_reverse
                && !c.opts.drop_self_loops;
            let mut pairs = |pairs: &[[u32; 2]]| -> Result<()> {
                cell.borrow_mut()
                    .push_slice(bytemuck::cast_slice::<[u32; 2], R>(pairs))?;
                input_edges.set(input_edges.get() + pairs.len() as u64);
                Ok(())
            };
            let s = parse_input(
                path,
                p,
                Some(limit),
                &c.stats,
                &mut |edges: &[RawEdge]| {
                    let mut sorter = cell.borrow_mut();
                    for e in edges {
                        push_edge(
                            &mut sorter,
                            (e.u - base) as u32,
                            (e.v - base) as u32,
                            e.w,
                            c.opts,
                            || (e.u, e.v),
                        )?;
                    }
                    input_edges.set(input_edges.get() + edges.len() as u64);
                    Ok(())
                },
                if as_is {
                    Some(&mut pairs as &mut PairSink)
                } else {
                    None
                },
                &|b| c.obs.advance(done_before + b, input_edges.get()),
            )?;
            if let Some(h) = p.header_vertices {
                n = n.max(h);
            }
            if let Some(m) = s.max_id {
                n = n.max(m + 1 - base);
            }
            done_before += p.file_bytes;
        }
        return Ok((n, input_edges.get(), None));
    }
    // --remap: spill raw edges, collect distinct ids.
    let raw_path = c.work.spill.join("raw-edges.bin");
    let mut raw = OutFile::create(&raw_path, c.stats.clone())?;
    // The distinct ids so far, in at most half the budget (8 bytes an id): the
    // table is compacted (sorted, deduplicated) whenever it fills, and a table
    // that stays over three quarters full after compaction does not fit.
    let cap = ((c.opts.memory / 2) / 8).max(1 << 16) as usize;
    let mut ids: Vec<u64> = Vec::with_capacity(cap);
    let max_v = c.opts.max_vertices;
    let too_many = |k: usize| {
        StoreError::Invalid(format!(
            "more than {max_v} distinct vertices ({k} found): a store numbers vertices with u32, at most {max_v}"
        ))
    };
    let memory = c.opts.memory;
    let too_big = |k: usize| {
        StoreError::Invalid(format!(
            "--remap keeps the distinct ids in memory (8 bytes each, in half of --memory): more than {k} distinct ids do not fit --memory {}; raise --memory (16 bytes per distinct vertex at least), or ingest without --remap when the ids are dense",
            outcore_io::format_bytes(memory)
        ))
    };
    for (path, p) in c.inputs.iter().zip(c.probes) {
        parse_input(
            path,
            p,
            None,
            &c.stats,
            &mut |edges: &[RawEdge]| {
                let mut bytes = Vec::with_capacity(edges.len() * 20);
                for e in edges {
                    bytes.extend_from_slice(&e.u.to_le_bytes());
                    bytes.extend_from_slice(&e.v.to_le_bytes());
                    bytes.extend_from_slice(&e.w.to_le_bytes());
                    if ids.len() + 2 > cap {
                        ids.par_sort_unstable();
                        ids.dedup();
                        if ids.len() as u64 > max_v {
                            return Err(too_many(ids.len()));
                        }
                        if ids.len() > cap / 4 * 3 {
                            return Err(too_big(ids.len()));
                        }
                    }
                    ids.push(e.u);
                    ids.push(e.v);
                }
                raw.write_all(&bytes)?;
                input_edges.set(input_edges.get() + edges.len() as u64);
                Ok(())
            },
            None,
            &|b| c.obs.advance(done_before + b, input_edges.get()),
        )?;
        done_before += p.file_bytes;
    }
    raw.finish()?;
    ids.par_sort_unstable();
    ids.dedup();
    ids.shrink_to_fit();
    if ids.len() as u64 > max_v {
        return Err(too_many(ids.len()));
    }
    // The id set stays in memory while sorting: take it from the sort buffer.
    sorter.limit_memory(sort_mem.saturating_sub(ids.len() as u64 * 8).max(16 << 20));
    let input_edges = input_edges.get();
    c.obs.phase("remap", input_edges);
    let file = InFile::open(&raw_path, ReadMode::Buffered, c.stats.clone())?;
    let mut buf = vec![0u8; 20 << 16];
    let mut off = 0u64;
    while off < file.len() {
        let n = ((file.len() - off) as usize).min(buf.len());
        file.read_exact_at(off, &mut buf[..n])?;
        let mapped: Vec<(u32, u32, f32)> = buf[..n]
            .par_chunks_exact(20)
            .map(|r| {
                let u = u64::from_le_bytes(r[0..8].try_into().unwrap());
                let v = u64::from_le_bytes(r[8..16].try_into().unwrap());
                let w = f32::from_le_bytes(r[16..20].try_into().unwrap());
                let du = ids.binary_search(&u).expect("collected id") as u32;
                let dv = ids.binary_search(&v).expect("collected id") as u32;
                (du, dv, w)
            })
            .collect();
        for (u, v, w) in mapped {
            push_edge(sorter, u, v, w, c.opts, || {
                (ids[u as usize], ids[v as usize])
            })?;
        }
        off += n as u64;
        c.obs.advance(off / 20, off / 20);
    }
    drop(file);
    let _ = std::fs::remove_file(&raw_path);
    Ok((ids.len() as u64, input_edges, Some(ids)))
}

/// Bytes per edge while one vertex's list is built from the sorted runs: its
/// record and its CSR entry (see `csr_from_runs`, which needs a whole list at
/// once within `--memory`).
fn list_bytes_per_edge<R: Record>() -> u64 {
    std::mem::size_of::<R>() as u64 + if R::WEIGHTED { 8 } else { 4 }
}

/// Makes `sorter` fail as soon as a vertex is known to have more `dir`-edges than
/// a list built within `--memory` may hold ([`ExternalSorter::set_list_limit`]),
/// instead of after the sort.
fn limit_lists<R: Record>(c: &Ctx, sorter: &mut ExternalSorter<R>, dir: &'static str) {
    let per = list_bytes_per_edge::<R>();
    let memory = c.opts.memory;
    let (remap, base) = (c.opts.remap, c.base);
    sorter.set_list_limit(
        memory / per,
        Box::new(move |u, k| {
            let who = if remap {
                format!("the vertex numbered {u} (dense, in ascending id order)")
            } else {
                format!("vertex {}", u as u64 + base)
            };
            StoreError::Invalid(format!(
                "{who} has at least {k} {dir}-edges, more than fit --memory {} at once ({per} bytes an edge while its list is built; found while sorting, before the store is built); its list alone needs --memory {} or more",
                outcore_io::format_bytes(memory),
                outcore_io::format_bytes(k * per),
            ))
        }),
    );
}

fn build<R: Record>(c: &Ctx) -> Result<IngestReport> {
    let opts = c.opts;
    let budget = opts.memory;
    // Direct writers' buffers in proportion to the budget (three a writer, a few
    // writers at once), and the parser's chunks; for every ingest, the
    // relabelled one of `reorder` too.
    outcore_io::set_direct_write_buffer((budget / 32) as usize);
    crate::parse::set_parse_memory(budget);
    let store = &c.work.build;
    let sort_mem = if opts.in_edges {
        budget * 3 / 10
    } else {
        budget / 2
    };
    let mut sorter =
        ExternalSorter::<R>::by_source(c.work.spill.clone(), sort_mem, c.stats.clone());
    if let Some(cap) = opts.sort_buffer_records {
        sorter.set_capacity(cap);
    }
    limit_lists(c, &mut sorter, "out");
    let (n, input_edges, idmap) = parse_all(c, &mut sorter, sort_mem)?;
    trim_heap();
    if n > MAX_VERTICES {
        return Err(StoreError::Invalid(format!(
            "{n} vertices: more than {MAX_VERTICES} are not supported"
        )));
    }
    let m_upper = sorter.len();
    let declared = opts.vertices.is_some()
        || idmap.is_some()
        || c.relabel.is_some()
        || c.probes.iter().any(|p| p.header_vertices.is_some());
    check_plausible(n, input_edges, (n + c.base).saturating_sub(1), declared)?;
    check_space(
        store,
        min_store_bytes(n, m_upper, R::WEIGHTED, opts.in_edges),
        outcore_io::free_bytes(store),
    )?;
    let p = opts
        .partitions
        .unwrap_or_else(|| choose_partitions(n, m_upper, budget));
    let p = p.min(n.max(1) as u32).max(1);
    let interval = n.div_ceil(p as u64).max(1);

    let threads = rayon::current_num_threads().max(1) as u64;
    let held = m_upper * std::mem::size_of::<R>() as u64;
    let extra = if R::WEIGHTED {
        MemCsr::<TargetWeight>::extra_bytes(m_upper, n, threads)
    } else {
        MemCsr::<u32>::extra_bytes(m_upper, n, threads)
    };
    let records = if held + extra <= budget {
        sorter.take_memory()
    } else {
        None
    };
    let (mut files, edges, counts, sort_runs, grid_second_pass) = match records {
        Some(records) => {
            let (files, edges, loops) = if R::WEIGHTED {
                build_memory::<R, TargetWeight>(c, records, n, p, interval)?
            } else {
                build_memory::<R, u32>(c, records, n, p, interval)?
            };
            (files, edges, loops, 0, false)
        }
        None => build_external(c, sorter, n, p, interval)?,
    };

    if let Some(ids) = &idmap {
        let mut w = LayoutWriter::create(&store.join("idmap"), FileKind::IdMap, c.stats.clone())?;
        for part in ids.chunks(1 << 20) {
            w.append(bytemuck::cast_slice(part))?;
        }
        files.push(w.finish(ids.len() as u64)?);
        // A relabelled store's ids are not ascending: the dense ids by user id
        // let a run find a vertex and write results in user order without
        // building that order in memory.
        if !ids.windows(2).all(|w| w[0] < w[1]) {
            let order = crate::reader::user_order_of(ids)
                .map_err(|why| StoreError::Invalid(format!("the relabelled store's ids: {why}")))?;
            let mut w = LayoutWriter::create(
                &store.join("idmap.order"),
                FileKind::IdOrder,
                c.stats.clone(),
            )?;
            for part in order.chunks(1 << 20) {
                w.append(bytemuck::cast_slice(part))?;
            }
            files.push(w.finish(order.len() as u64)?);
        }
    }
    let store_bytes = files.iter().map(|f| f.bytes).sum();
    let manifest = Manifest {
        format: STORE_FORMAT.into(),
        version: crate::manifest::STORE_VERSION,
        vertices: n,
        edges,
        directed: c
            .relabel
            .map_or(!opts.undirected && !opts.with_reverse, |r| {
                r.store.manifest().directed
            }),
        reverse_marked: c
            .relabel
            .map_or(opts.with_reverse, |r| r.store.manifest().reverse_marked),
        weighted: R::WEIGHTED,
        self_loops: counts.self_loops,
        parallel_edges: counts.parallel,
        id_base: if opts.remap { 0 } else { c.base },
        remapped: opts.remap,
        partitions: p,
        interval,
        in_edges: opts.in_edges,
        ingest: IngestRecord {
            inputs: c.inputs.iter().map(|p| p.display().to_string()).collect(),
            undirected: opts.undirected,
            with_reverse: opts.with_reverse,
            dedup: opts.dedup,
            drop_self_loops: opts.drop_self_loops,
            remap: opts.remap,
            memory_budget: budget,
            input_edges,
            seconds: c.start.elapsed().as_secs_f64(),
        },
        files,
        order: c.relabel.map(|r| r.record.clone()),
        selections: Vec::new(),
        vpart: None,
    };
    manifest.write(store)?;
    Ok(IngestReport {
        vertices: n,
        edges,
        input_edges,
        self_loops: counts.self_loops,
        parallel_edges: counts.parallel,
        partitions: p,
        sort_runs,
        grid_second_pass,
        seconds: 0.0,
        io: IoSnapshot::default(),
        store_bytes,
    })
}

/// The in-memory path: counting sort into a CSR held in memory ([`MemCsr`]),
/// then the layouts cut from it. Returns the files, edges and self-loops.
fn build_memory<R: Record, A: Adj>(
    c: &Ctx,
    records: Vec<R>,
    n: u64,
    p: u32,
    interval: u64,
) -> Result<(Vec<FileRecord>, u64, ListCounts)> {
    let store = &c.work.build;
    let threads = rayon::current_num_threads().max(1);
    let m = records.len() as u64;
    c.obs.phase("sort", m);
    let (csr, counts) = MemCsr::<A>::from_records(&records, 0, n as usize, c.opts.dedup, threads)?;
    drop(records);
    let edges = csr.adj.len() as u64;
    c.obs.advance(m, edges);
    c.obs.phase("csr", edges);
    let mut files = csr.write(store, "out", &c.stats)?;
    c.obs.advance(edges, edges);
    if c.opts.in_edges {
        c.obs.phase("in-edges", edges);
        let t = csr.transpose(threads)?;
        files.extend(t.write(store, "in", &c.stats)?);
        c.obs.advance(edges, edges);
    } else {
        files.push(write_in_degrees(
            store,
            &csr.in_degrees(threads)?,
            &c.stats,
        )?);
    }
    c.obs.phase("grid", edges);
    files.extend(
        csr.write_grid(store, p, interval, c.opts.memory / 4, &c.stats, &|k| {
            c.obs.advance(k, k)
        })?,
    );
    Ok((files, edges, counts))
}

/// The external path: the sorted runs are consumed in ascending ranges of
/// sources, each range small enough that its records and CSR fit the budget; each
/// range becomes an in-memory CSR ([`MemCsr`]) appended to the CSR files, with
/// the grid's per-block counts, the in-degrees and (with `--in-edges`) the
/// reversed edges for a second sort taken on the way; the grid is cut from each
/// range's CSR when every row fits a range (ranges are then whole rows), else
/// built from the CSR files afterwards. Returns the files, edges, self-loops, sort
/// runs and whether the grid took that second pass.
fn build_external<R: Record>(
    c: &Ctx,
    sorter: ExternalSorter<R>,
    n: u64,
    p: u32,
    interval: u64,
) -> Result<(Vec<FileRecord>, u64, ListCounts, usize, bool)> {
    if R::WEIGHTED {
        build_ranges::<R, TargetWeight>(c, sorter, n, p, interval)
    } else {
        build_ranges::<R, u32>(c, sorter, n, p, interval)
    }
}
