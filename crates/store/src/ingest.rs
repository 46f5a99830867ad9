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

/// Settings of an ingest; `Default` gives the CLI's defaults.
#[derive(Debug, Clone)]
pub struct IngestOptions {
    /// Force one format for every input instead of detecting it.
    pub format: Option<Format>,
    /// Store both directions of every edge.
    pub undirected: bool,
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

/// Refuses a vertex count that only a stray large id can explain (a single id
/// 4294967294, or random bytes read as bin32), before any store file is written.
fn check_plausible(n: u64, input_edges: u64, max_id: u64, declared: bool) -> Result<()> {
    if declared || n <= SPARSE_MIN_VERTICES {
        return Ok(());
    }
    if n / input_edges.max(1) > SPARSE_VERTICES_PER_EDGE {
        return Err(StoreError::Invalid(format!(
            "the largest id, {max_id}, makes {n} vertices for {input_edges} edges (a store over {SPARSE_MIN_VERTICES} vertices may hold at most {SPARSE_VERTICES_PER_EDGE} per edge unless declared): the ids are sparse, or the input is not in the format read; pass --remap to number the distinct ids densely, or --vertices N to declare the count"
        )));
    }
    Ok(())
}

/// The least the store's files take (degrees and CSR offsets per vertex; CSR and
/// packed grid targets, and weights, per edge): an ingest that cannot fit even
/// this is refused before writing.
pub fn min_store_bytes(n: u64, edges: u64, weighted: bool, in_edges: bool) -> u64 {
    let w = weighted as u64;
    let out = n * 16 + edges * (6 + 8 * w);
    let inn = if in_edges {
        n * 8 + edges * (4 + 4 * w)
    } else {
        0
    };
    out + inn
}

/// Refuses when `need` bytes cannot fit in `free` on the file system of `dir`.
fn check_space(dir: &Path, need: u64, free: Option<u64>) -> Result<()> {
    match free {
        Some(free) if need > free => Err(StoreError::Invalid(format!(
            "the store needs at least {} but {} has {} free; free some space or write elsewhere (-o, --tmp-dir)",
            outcore_io::format_bytes(need),
            dir.display(),
            outcore_io::format_bytes(free)
        ))),
        _ => Ok(()),
    }
}

enum OutState {
    Fresh,
    EmptyDir,
    Replace,
}

/// Takes the output name's lock for the whole ingest (see [`outcore_io::NameLock`]).
fn lock_output(out: &Path) -> Result<outcore_io::NameLock> {
    match outcore_io::NameLock::try_lock(out)? {
        Some(l) => Ok(l),
        None => Err(StoreError::Invalid(format!(
            "{}: another ingest (or reorder) is writing this store now; wait for it to finish or choose another -o",
            out.display()
        ))),
    }
}

fn check_output(out: &Path, force: bool) -> Result<OutState> {
    match std::fs::symlink_metadata(out) {
        Err(_) => Ok(OutState::Fresh),
        Ok(md) if !md.is_dir() => Err(StoreError::Invalid(format!(
            "{}: exists and is not a directory; refusing to replace it",
            out.display()
        ))),
        Ok(_) => {
            if out.join(MANIFEST).exists() {
                if force {
                    Ok(OutState::Replace)
                } else {
                    Err(StoreError::Exists { dir: out.into() })
                }
            } else if std::fs::read_dir(out)
                .map_err(|e| IoError::new(out, "read directory", e))?
                .next()
                .is_none()
            {
                Ok(OutState::EmptyDir)
            } else {
                Err(StoreError::Invalid(format!(
                    "{}: exists, is not empty and is not an outcore store; refusing to write into it",
                    out.display()
                )))
            }
        }
    }
}

/// Removes the build directory unless the ingest committed.
struct WorkDir {
    build: PathBuf,
    spill: PathBuf,
    committed: bool,
    _registered: [outcore_io::temp::Registration; 2],
}

impl Drop for WorkDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.spill);
        if !self.committed {
            let _ = std::fs::remove_dir_all(&self.build);
        }
    }
}

fn pid_alive(pid: u32) -> bool {
    Path::new(&format!("/proc/{pid}")).exists()
}

/// Removes `.NAME.ingest-PID` and `.NAME.old-PID` directories of dead processes.
fn clean_stale(parent: &Path, name: &str) {
    let Ok(rd) = std::fs::read_dir(parent) else {
        return;
    };
    for e in rd.flatten() {
        let fname = e.file_name().to_string_lossy().into_owned();
        for tag in [".ingest-", ".old-"] {
            if let Some(pid) = fname
                .strip_prefix(&format!(".{name}{tag}"))
                .and_then(|p| p.parse::<u32>().ok())
            {
                if pid != std::process::id() && !pid_alive(pid) {
                    let _ = std::fs::remove_dir_all(e.path());
                }
            }
        }
    }
}

fn make_workdir(out: &Path, tmp: Option<&Path>) -> Result<WorkDir> {
    let parent = match out.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let name = out
        .file_name()
        .ok_or_else(|| StoreError::Invalid(format!("{}: not a usable output name", out.display())))?
        .to_string_lossy()
        .into_owned();
    clean_stale(&parent, &name);
    let pid = std::process::id();
    let build = parent.join(format!(".{name}.ingest-{pid}"));
    let _ = std::fs::remove_dir_all(&build);
    std::fs::create_dir_all(&build).map_err(|e| IoError::new(&build, "create directory", e))?;
    let spill = match tmp {
        Some(t) => {
            outcore_io::temp::clean_stale(t);
            t.join(format!("outcore-spill-{pid}"))
        }
        None => build.join("spill"),
    };
    let mut wd = WorkDir {
        _registered: [
            outcore_io::temp::register(&build),
            outcore_io::temp::register(&spill),
        ],
        build,
        spill: spill.clone(),
        committed: false,
    };
    if let Err(e) = std::fs::create_dir_all(&spill) {
        wd.committed = false;
        return Err(IoError::new(&spill, "create directory", e).into());
    }
    Ok(wd)
}

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
    // Direct writers' buffers in proportion to the budget (three a writer, a few
    // writers at once).
    outcore_io::set_direct_write_buffer((opts.memory / 32) as usize);
    crate::parse::set_parse_memory(opts.memory);
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
            w == probes.len()
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

fn push_edge<R: Record>(
    s: &mut ExternalSorter<R>,
    u: u32,
    v: u32,
    w: f32,
    opts: &IngestOptions,
) -> Result<()> {
    if u == v && opts.drop_self_loops {
        return Ok(());
    }
    s.push(R::new(u, v, w))?;
    if opts.undirected && u != v {
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
            push_edge(sorter, u, v, w, c.opts)?;
        }
        off += n as u64;
        c.obs.advance(off / 20, off / 20);
    }
    drop(file);
    let _ = std::fs::remove_file(&raw_path);
    Ok((ids.len() as u64, input_edges, Some(ids)))
}

fn build<R: Record>(c: &Ctx) -> Result<IngestReport> {
    let opts = c.opts;
    let budget = opts.memory;
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
    }
    let store_bytes = files.iter().map(|f| f.bytes).sum();
    let manifest = Manifest {
        format: STORE_FORMAT.into(),
        version: crate::manifest::STORE_VERSION,
        vertices: n,
        edges,
        directed: c
            .relabel
            .map_or(!opts.undirected, |r| r.store.manifest().directed),
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

fn build_ranges<R: Record, A: Adj>(
    c: &Ctx,
    sorter: ExternalSorter<R>,
    n: u64,
    p: u32,
    interval: u64,
) -> Result<(Vec<FileRecord>, u64, ListCounts, usize, bool)> {
    let opts = c.opts;
    let budget = opts.memory;
    let store = &c.work.build;
    let m_upper = sorter.len();
    let pp = p as usize;
    c.obs.phase("sort", m_upper);
    let mut runs = sorter.into_runs()?;
    let sort_runs = runs.count();
    c.obs.phase("csr", m_upper);
    let mut counts = vec![(0u64, 0u64); pp * pp];
    let in_fits = n * 4 <= budget / 4;
    let mut in_deg: Vec<u32> = if in_fits && !opts.in_edges {
        // Huge pages: one increment per edge at a random place of n entries.
        crate::memcsr::huge_zeroed(n as usize)
    } else {
        Vec::new()
    };
    let mut in_sorter = if opts.in_edges {
        std::fs::create_dir_all(c.work.spill.join("in"))
            .map_err(|e| IoError::new(c.work.spill.join("in"), "create directory", e))?;
        let mut s = ExternalSorter::<R>::by_source(
            c.work.spill.join("in"),
            budget * 3 / 10,
            c.stats.clone(),
        );
        if let Some(cap) = opts.sort_buffer_records {
            s.set_capacity(cap);
        }
        Some(s)
    } else {
        None
    };
    let range_mem = if opts.in_edges {
        budget / 2
    } else {
        (budget * 6 / 10).saturating_sub(in_deg.len() as u64 * 4)
    };
    // What the budget leaves for grid rows being built beside a range's CSR.
    let row_mem = budget
        .saturating_sub(range_mem)
        .saturating_sub(in_deg.len() as u64 * 4)
        .saturating_sub(if opts.in_edges { budget * 3 / 10 } else { 0 })
        .max(1 << 20);
    let limits = RangeLimits::new::<R, A>(range_mem);
    // One pass (the grid's rows cut from each range's CSR) when every row's edges
    // fit half a range and its packed row (at most 12 bytes an edge, held twice)
    // the row memory; otherwise the grid is a second pass over the CSR files.
    let one_pass = limits.rows_fit(&runs, n, interval, row_mem);
    let mut grid = if one_pass {
        Some(GridWriter::new(store, p, interval, R::WEIGHTED, &c.stats)?)
    } else {
        None
    };
    let (mut files, edges, self_loops) = csr_from_runs::<R, A>(
        c,
        &mut runs,
        n,
        "out",
        opts.dedup,
        &limits,
        one_pass.then_some(interval),
        &mut |base, csr| {
            csr.add_block_counts(base, p, interval, &mut counts);
            // The grid rows (in parallel) beside the in-degrees (one thread, bound
            // by memory latency rather than compute).
            let counts = &counts;
            let (rows, degrees) = rayon::join(
                || -> Result<()> {
                    if let Some(g) = &mut grid {
                        // The range is whole rows: those rows' blocks are complete.
                        let end = base + csr.vertices() as u64;
                        let i1 = (end.div_ceil(interval) as usize).min(pp);
                        g.set_rows(i1, counts)?;
                        g.append_windows(csr, base, i1, interval, row_mem, &|_| {})?;
                    }
                    Ok(())
                },
                // In-degrees counted here only when they fit (else a pass afterwards).
                || -> Result<()> {
                    if !in_deg.is_empty() {
                        csr.add_in_degrees(&mut in_deg)?;
                    }
                    Ok(())
                },
            );
            rows?;
            degrees?;
            if let Some(s) = &mut in_sorter {
                for u in 0..csr.vertices() {
                    for x in csr.list(u) {
                        s.push(R::new(x.v(), (base + u as u64) as u32, x.w()))?;
                    }
                }
            }
            Ok(())
        },
    )?;
    drop(runs);

    // In-edges: the second sort, or just the in-degrees.
    if let Some(s) = in_sorter {
        c.obs.phase("in-edges", edges);
        let mut runs = s.into_runs()?;
        let (f, _, _) = csr_from_runs::<R, A>(
            c,
            &mut runs,
            n,
            "in",
            false,
            &RangeLimits::new::<R, A>(budget * 6 / 10),
            None,
            &mut |_, _| Ok(()),
        )?;
        files.extend(f);
    } else if in_fits {
        files.push(write_in_degrees(store, &in_deg, &c.stats)?);
    } else {
        files.push(count_in_degrees(store, &files, n, budget, &c.stats)?);
    }
    drop(in_deg);

    if let Some(mut g) = grid {
        g.append_empty_rows(pp)?;
        files.extend(g.finish(store, &c.stats)?);
        return Ok((files, edges, self_loops, sort_runs, false));
    }
    c.obs.phase("grid", edges);
    // The grid from the CSR files, row by row in budget-sized chunks.
    let grid = build_grid::<R>(c, &files, n, p, interval, &counts)?;
    files.extend(grid);
    Ok((files, edges, self_loops, sort_runs, true))
}

/// How many records (`cap`) and vertices (`vmax`) one range of sources may hold
/// for its records and CSR to fit a range budget.
struct RangeLimits {
    cap: u64,
    vmax: u64,
}

impl RangeLimits {
    fn new<R: Record, A: Adj>(range_mem: u64) -> RangeLimits {
        let threads = rayon::current_num_threads().max(1) as u64;
        let per = (std::mem::size_of::<R>() + std::mem::size_of::<A>()) as u64;
        RangeLimits {
            cap: (range_mem * 85 / 100 / per).max(1),
            vmax: (range_mem * 15 / 100 / (4 * threads + 20)).max(1),
        }
    }

    /// Whether every grid row (`interval` sources) surely fits half a range and
    /// its packed row (at most 12 bytes an edge: targets, sources and offsets of
    /// at most 32 bits each and a weight), held twice while built, `row_mem`
    /// (bounds from the runs' sparse indexes, before anything is taken).
    fn rows_fit<R: Record>(&self, runs: &Runs<R>, n: u64, interval: u64, row_mem: u64) -> bool {
        if interval > self.vmax {
            return false;
        }
        let mut lo = 0;
        while lo < n {
            let hi = (lo + interval).min(n);
            let row = runs.bound_below(hi).saturating_sub(runs.lower_below(lo));
            if row > self.cap / 2 || row * 24 > row_mem {
                return false;
            }
            lo = hi;
        }
        true
    }
}

/// One direction's CSR from sorted runs, by ranges of sources whose records and
/// CSR fit the range `limits` (with `rows`, ranges of whole rows of that many
/// vertices; every row must fit on its own); `each(base, csr)` sees every range's
/// CSR after it is written. Returns the files, edges and self-loops.
#[allow(clippy::too_many_arguments)]
fn csr_from_runs<R: Record, A: Adj>(
    c: &Ctx,
    runs: &mut Runs<R>,
    n: u64,
    dir: &str,
    dedup: bool,
    limits: &RangeLimits,
    rows: Option<u64>,
    each: &mut dyn FnMut(u64, &MemCsr<A>) -> Result<()>,
) -> Result<(Vec<FileRecord>, u64, ListCounts)> {
    let threads = rayon::current_num_threads().max(1);
    let per = (std::mem::size_of::<R>() + std::mem::size_of::<A>()) as u64;
    let (cap, vmax) = (limits.cap, limits.vmax);
    let mut out = CsrFiles::create(&c.work.build, dir, A::WEIGHTED, &c.stats)?;
    // The widest range [lo, hi) whose records surely fit: at least one vertex (one
    // row with `rows`), ending at a row's end with `rows`.
    let step = rows.unwrap_or(1);
    let plan = |runs: &Runs<R>, lo: u64| -> u64 {
        let end = |k: u64| n.min(lo + k * step);
        let (mut ok, mut bad) = (1u64, (vmax / step).max(1) + 1);
        if runs.bound_below(end(bad - 1)) <= cap {
            return end(bad - 1);
        }
        while bad - ok > 1 {
            let mid = ok + (bad - ok) / 2;
            if runs.bound_below(end(mid)) <= cap {
                ok = mid;
            } else {
                bad = mid;
            }
        }
        end(ok)
    };
    let mut records: Vec<R> = Vec::new();
    let mut spare: Vec<A> = Vec::new();
    let (mut lo, mut edges, mut seen) = (0u64, 0u64, 0u64);
    let mut counts = ListCounts::default();
    let mut hi = if n > 0 { plan(runs, 0) } else { 0 };
    if n > 0 {
        runs.take_below(hi, &mut records)?;
    }
    while lo < n {
        if records.len() as u64 * per > c.opts.memory {
            return Err(StoreError::Invalid(format!(
                "vertex {lo} has {} {dir}-edges, more than fit --memory {} at once; raise --memory",
                records.len(),
                outcore_io::format_bytes(c.opts.memory)
            )));
        }
        seen += records.len() as u64;
        let (csr, l) = MemCsr::<A>::from_records_reusing(
            &records,
            lo as u32,
            (hi - lo) as usize,
            dedup,
            threads,
            std::mem::take(&mut spare),
        )?;
        counts += l;
        edges += csr.adj.len() as u64;
        // The next range's records are read (into the now idle record buffer)
        // while this range's CSR is written and, at the same time, its grid rows
        // are cut.
        let next_hi = if hi < n { plan(runs, hi) } else { hi };
        std::thread::scope(|s| -> Result<()> {
            let fetch = (hi < n).then(|| {
                let (runs, records) = (&mut *runs, &mut records);
                s.spawn(move || {
                    records.clear();
                    runs.take_below(next_hi, records)
                })
            });
            // The CSR is written on a thread of its own while `each` works on it.
            let (out, csr) = (&mut out, &csr);
            let write = s.spawn(move || out.append(csr));
            let done = each(lo, csr);
            let written = crate::join_scoped(write);
            let fetched = fetch.map_or(Ok(()), crate::join_scoped);
            written.and(done).and(fetched)
        })?;
        c.obs.advance(seen, edges);
        spare = csr.into_adj();
        lo = hi;
        hi = next_hi;
    }
    Ok((out.finish()?, edges, counts))
}

/// Writes `degrees.in` from in-degrees counted in memory.
fn write_in_degrees(store: &Path, deg: &[u32], stats: &Arc<IoStats>) -> Result<FileRecord> {
    let mut w = LayoutWriter::create(&store.join("degrees.in"), FileKind::Degrees, stats.clone())?;
    w.append(bytemuck::cast_slice(deg))?;
    w.finish(deg.len() as u64)
}

/// Returns the heap memory freed by the parse (chunk and edge buffers of the rayon
/// workers, which glibc keeps in per-thread arenas) to the system, so that it does
/// not count against the memory limit while the layouts are built.
fn trim_heap() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only releases free heap memory; it has no preconditions.
    unsafe {
        libc::malloc_trim(0);
    }
}

fn open_written(
    store: &Path,
    files: &[FileRecord],
    name: &str,
    kind: FileKind,
    stats: &Arc<IoStats>,
) -> Result<LayoutFile> {
    let rec = files.iter().find(|f| f.name == name).expect("written file");
    LayoutFile::open(store, rec, kind, ReadMode::Buffered, stats.clone())
}

/// In-degrees when an array of them does not fit: passes over the targets, each
/// counting a range of vertices that fits in a quarter of the budget.
fn count_in_degrees(
    store: &Path,
    files: &[FileRecord],
    n: u64,
    budget: u64,
    stats: &Arc<IoStats>,
) -> Result<FileRecord> {
    let targets = open_written(store, files, "csr.out.targets", FileKind::CsrTargets, stats)?;
    let m = targets.header.count;
    let range = (budget / 4 / 4).max(1 << 20);
    let mut w = LayoutWriter::create(&store.join("degrees.in"), FileKind::Degrees, stats.clone())?;
    let mut buf = vec![0u32; 1 << 22];
    let mut lo = 0u64;
    while lo < n {
        let hi = (lo + range).min(n);
        let mut counts = vec![0u32; (hi - lo) as usize];
        let mut off = 0u64;
        while off < m {
            let k = ((m - off) as usize).min(buf.len());
            targets.read_payload(off * 4, bytemuck::cast_slice_mut(&mut buf[..k]))?;
            for &v in &buf[..k] {
                let v = v as u64;
                if v >= lo && v < hi {
                    counts[(v - lo) as usize] += 1;
                }
            }
            off += k as u64;
        }
        w.append(bytemuck::cast_slice(&counts))?;
        lo = hi;
    }
    w.finish(n)
}

/// Builds `grid.index` and `grid.data` from the out-edge CSR, row by row.
fn build_grid<R: Record>(
    c: &Ctx,
    files: &[FileRecord],
    n: u64,
    p: u32,
    interval: u64,
    counts: &[(u64, u64)],
) -> Result<Vec<FileRecord>> {
    let store = &c.work.build;
    let pp = p as usize;
    let weighted = R::WEIGHTED;
    let offsets = open_written(
        store,
        files,
        "csr.out.offsets",
        FileKind::CsrOffsets,
        &c.stats,
    )?;
    let targets = open_written(
        store,
        files,
        "csr.out.targets",
        FileKind::CsrTargets,
        &c.stats,
    )?;
    let weights = if weighted {
        Some(open_written(
            store,
            files,
            "csr.out.weights",
            FileKind::CsrWeights,
            &c.stats,
        )?)
    } else {
        None
    };
    let mut index = vec![BlockEntry::default(); pp * pp];
    let bits = crate::codec::id_bits(interval);
    let total = place_blocks(&mut index, counts, 0..pp * pp, pp, bits, weighted, 0)?;
    let mut data = LayoutWriter::create(
        &store.join("grid.data"),
        FileKind::GridData,
        c.stats.clone(),
    )?;
    data.set_payload_len(total)?;
    let mut file_crc = crc32fast::Hasher::new();
    let chunk_cap = (c.opts.memory / 8 / (8 + 8 * weighted as u64)).max(1 << 16);
    let mut done = 0u64;
    let mut tbuf: Vec<u32> = Vec::new();
    let mut wbuf: Vec<f32> = Vec::new();
    for i in 0..pp {
        let lo = (i as u64 * interval).min(n);
        let hi = ((i as u64 + 1) * interval).min(n);
        let mut row_offs = vec![0u64; (hi - lo + 1) as usize];
        offsets.read_payload(lo * 8, bytemuck::cast_slice_mut(&mut row_offs))?;
        // Each block's sections are packed as its runs arrive and drained to their
        // places in grid.data after every chunk (whole words only; a partial last
        // word waits for the next chunk or the block's end).
        let mut packers: Vec<BlockPacker> = (0..pp)
            .map(|j| {
                BlockPacker::new(
                    &index[i * pp + j].shape(),
                    lo as u32,
                    (j as u64 * interval) as u32,
                )
            })
            .collect();
        let mut h: Vec<[crc32fast::Hasher; 4]> = (0..pp).map(|_| Default::default()).collect();
        let drain = |data: &mut LayoutWriter,
                     e: &BlockEntry,
                     bp: &mut BlockPacker,
                     h: &mut [crc32fast::Hasher; 4]|
         -> Result<()> {
            let sh = e.shape();
            let starts = [
                0,
                sh.source_words(),
                sh.source_words() + sh.offset_words(),
                sh.topology_bytes() / 4,
            ];
            bp.drain(|k, at, words| {
                let bytes: &[u8] = bytemuck::cast_slice(words);
                h[k].update(bytes);
                data.write_payload_at(e.offset + 4 * (starts[k] + at), bytes)
            })
        };
        let mut a = 0usize;
        let nrow = (hi - lo) as usize;
        while a < nrow {
            // Largest b with the chunk's edges under the cap (at least one vertex).
            let limit = row_offs[a] + chunk_cap;
            let b = (a + 1)
                .max(row_offs[..=nrow].partition_point(|&o| o <= limit) - 1)
                .min(nrow);
            let (e0, e1) = (row_offs[a], row_offs[b]);
            tbuf.resize((e1 - e0) as usize, 0);
            targets.read_payload(e0 * 4, bytemuck::cast_slice_mut(&mut tbuf))?;
            if let Some(wf) = &weights {
                wbuf.resize((e1 - e0) as usize, 0.0);
                wf.read_payload(e0 * 4, bytemuck::cast_slice_mut(&mut wbuf))?;
            }
            for x in a..b {
                let u = (lo + x as u64) as u32;
                let (s, e) = ((row_offs[x] - e0) as usize, (row_offs[x + 1] - e0) as usize);
                let list = &tbuf[s..e];
                let mut k = 0;
                while k < list.len() {
                    let j = (list[k] as u64 / interval) as usize;
                    let bound = ((j as u64 + 1) * interval).min(u32::MAX as u64 + 1);
                    let end = k + list[k..].partition_point(|&v| (v as u64) < bound);
                    let bp = &mut packers[j];
                    bp.run(u, list[k..end].iter().copied());
                    if weighted {
                        bp.weights(wbuf[s + k..s + end].iter().copied());
                    }
                    k = end;
                }
            }
            for j in 0..pp {
                drain(&mut data, &index[i * pp + j], &mut packers[j], &mut h[j])?;
            }
            done += e1 - e0;
            c.obs.advance(done, done);
            a = b;
        }
        for j in 0..pp {
            let e = &mut index[i * pp + j];
            if e.edges == 0 {
                continue;
            }
            packers[j].finish();
            drain(&mut data, e, &mut packers[j], &mut h[j])?;
            let [hs, ho, hd, hw] = std::mem::take(&mut h[j]);
            let mut topo = hs;
            topo.combine(&ho);
            topo.combine(&hd);
            e.crc_topology = topo.clone().finalize();
            e.crc_weights = hw.clone().finalize();
            let mut whole = topo;
            whole.combine(&hw);
            file_crc.combine(&whole);
        }
    }
    let data_rec = data.finish_with_crc(pp as u64 * pp as u64, file_crc.finalize())?;
    let mut idx = LayoutWriter::create(
        &store.join("grid.index"),
        FileKind::GridIndex,
        c.stats.clone(),
    )?;
    idx.append(bytemuck::cast_slice(&index))?;
    let idx_rec = idx.finish(index.len() as u64)?;
    Ok(vec![idx_rec, data_rec])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn absurd_vertex_counts_are_refused_unless_declared() {
        // One edge to id 4294967293: 4.3 billion vertices for one edge.
        let e = check_plausible(4_294_967_294, 1, 4_294_967_293, false)
            .unwrap_err()
            .to_string();
        assert!(e.contains("--remap") && e.contains("--vertices"), "{e}");
        assert!(check_plausible(4_294_967_294, 1, 4_294_967_293, true).is_ok());
        // Small graphs and graphs with a plausible density pass.
        assert!(check_plausible(1 << 20, 1, (1 << 20) - 1, false).is_ok());
        assert!(check_plausible(64 << 20, 1 << 20, (64 << 20) - 1, false).is_ok());
        assert!(check_plausible(65 << 20, 1 << 20, (65 << 20) - 1, false).is_err());
    }

    #[test]
    fn a_store_that_cannot_fit_is_refused_before_writing() {
        let need = min_store_bytes(1 << 20, 1 << 24, true, true);
        assert_eq!(need, (16 << 20) + (14 << 24) + (8 << 20) + (8 << 24));
        let e = check_space(Path::new("/some/dir"), need, Some(need - 1))
            .unwrap_err()
            .to_string();
        assert!(e.contains("/some/dir") && e.contains("free"), "{e}");
        assert!(check_space(Path::new("/d"), need, Some(need)).is_ok());
        assert!(check_space(Path::new("/d"), need, None).is_ok());
    }
}
