//! Distributed ingest (Chaos §3): rank 0 reads the input (every format `outcore
//! ingest` reads, through a single-machine store it builds in its own
//! directory and deletes afterwards), cuts the edges into streaming partitions
//! (vertex ranges; the smallest multiple of the rank count whose vertex state
//! fits `--memory`), groups each partition's edges into chunks and sends every
//! chunk to a uniformly random rank; vertex chunks' out-degrees go to the rank
//! they hash to, the id map to every rank. Each rank writes only its own
//! directory `DIR/rank-K` and its manifest last (see [`crate::layout`]).
//!
//! The input passes through rank 0's disk once as a store (about 4 bytes an
//! edge): a graph larger than one machine's disk needs ranks reading disjoint
//! parts of the input, which this does not do yet.

use crate::error::{DistError, Result};
use crate::layout::{
    partitions_for, rank_dir, ChunkEncoder, DegreeChunk, EdgeChunk, Plan, RankManifest, Rng,
    BLOCK_RECORDS, FORMAT, MANIFEST, MAX_BLOCK_RECORDS, RUN_HEADER, VERSION,
};
use crate::storage::u32_at;
use crate::transport::{self, Transport};
use crate::TAG_INGEST;
use outcore_io::{IoStats, OutFile};
use outcore_store::format::FileKind;
use outcore_store::pagesums::PageSums;
use outcore_store::{IdMap, Store};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Bytes per vertex the layout is sized for: the heaviest program's vertex
/// data in a partition (value, epoch, accumulator, message, degree).
pub const HEAVIEST_BYTES_PER_VERTEX: u64 = 44;

const EDGES: u32 = 1;
const DEGREES: u32 = 2;
const IDS: u32 = 3;
const DONE: u32 = 4;

/// How the layout is cut.
#[derive(Debug, Clone)]
pub struct DistIngestOptions {
    /// Each rank's memory: a partition's vertex state fits half of it.
    pub memory: u64,
    /// Largest edge chunk (Chaos: 4 MiB).
    pub chunk_bytes: u64,
    /// Vertices per vertex chunk (0: 65536).
    pub vertex_chunk: u64,
    /// Partitions (0: the smallest multiple of the rank count that fits).
    pub partitions: u32,
    /// Edges per block of a chunk's block index (0: [`BLOCK_RECORDS`]; at
    /// most [`crate::layout::MAX_BLOCK_RECORDS`]).
    pub block_records: u32,
    /// Seeds the chunk placement.
    pub seed: u64,
    /// Replace rank directories that exist.
    pub force: bool,
}

/// What one rank wrote.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct RankIngest {
    pub rank: usize,
    pub edge_chunks: u64,
    pub edges: u64,
    pub degree_chunks: u64,
    pub bytes_written: u64,
}

/// Ingests on every rank; `make_store` runs on rank 0 only and builds the
/// single-machine store the edges are read from (in the directory it is given).
pub fn ingest(
    t: &dyn Transport,
    dir: &Path,
    opts: &DistIngestOptions,
    make_store: &mut dyn FnMut(&Path) -> Result<Store>,
) -> Result<(Plan, Vec<RankIngest>)> {
    let rank = t.rank();
    let rd = rank_dir(dir, rank);
    let mut idle = Duration::ZERO;
    // 1. Every rank's directory is free (or may be replaced).
    let ready = prepare(&rd, opts.force);
    agree(t, ready.as_ref().err(), &mut idle)?;
    // 2. Rank 0 reads the input.
    let tmp = rank_dir(dir, 0).join(".ingest-store");
    let built = if rank == 0 {
        Some(
            make_store(&tmp)
                .and_then(|s| plan_for(&s, t.size() as u32, opts).map(|(p, ids)| (s, p, ids))),
        )
    } else {
        None
    };
    let store = match built {
        Some(Err(e)) => {
            let _ = std::fs::remove_dir_all(&tmp);
            let _ = agree(t, Some(&e), &mut idle);
            return Err(e);
        }
        Some(Ok(x)) => {
            agree(t, None, &mut idle)?;
            Some(x)
        }
        None => {
            agree(t, None, &mut idle)?;
            None
        }
    };
    // 3. The plan, the same on every rank.
    let text = store
        .as_ref()
        .map(|(_, p, _)| serde_json::to_vec(p).expect("serialisable"))
        .unwrap_or_default();
    let all = transport::all_gather(t, &text, &mut idle)?;
    let plan: Plan = serde_json::from_slice(&all[0])
        .map_err(|e| DistError::Protocol(format!("rank 0 sent a plan that does not parse: {e}")))?;
    // 4. Rank 0 sends the chunks; every rank writes what it receives.
    let io = IoStats::new();
    let mut rx = Receiver::new(&rd, rank, &plan, block_records(opts), io.clone())?;
    let sent = match &store {
        Some((s, _, ids)) => send_all(t, s, ids.as_deref(), &plan, opts, &mut rx),
        None => receive_all(t, &mut rx, &mut idle),
    };
    let written = sent.and_then(|_| rx.finish(&plan));
    if let Err(e) = &written {
        if !matches!(e, DistError::Stopped { .. }) {
            transport::abort_all(t, &e.to_string());
        }
    }
    if let Some((s, _, _)) = store {
        drop(s);
        let _ = std::fs::remove_dir_all(&tmp);
    }
    agree(t, written.as_ref().err(), &mut idle)?;
    let mine = written?;
    let all = transport::all_gather(
        t,
        &serde_json::to_vec(&mine).expect("serialisable"),
        &mut idle,
    )?;
    let ranks: Vec<RankIngest> = all
        .iter()
        .map(|b| serde_json::from_slice(b))
        .collect::<std::result::Result<_, _>>()
        .map_err(|e| DistError::Protocol(format!("a rank's ingest summary: {e}")))?;
    let edges: u64 = ranks.iter().map(|r| r.edges).sum();
    if edges != plan.edges {
        return Err(DistError::Protocol(format!(
            "the ranks hold {edges} edges, the input has {}",
            plan.edges
        )));
    }
    Ok((plan, ranks))
}

/// Every rank learns whether any failed; the first failure (by rank) is every
/// rank's error.
pub fn agree(t: &dyn Transport, err: Option<&DistError>, idle: &mut Duration) -> Result<()> {
    let msg = err.map(|e| e.to_string()).unwrap_or_default();
    let all = transport::all_gather(t, msg.as_bytes(), idle)?;
    for (r, m) in all.iter().enumerate() {
        if !m.is_empty() {
            return Err(DistError::Remote {
                rank: r,
                message: String::from_utf8_lossy(m).into_owned(),
            });
        }
    }
    Ok(())
}

/// Makes `rd` empty (refusing one in use unless `force`).
fn prepare(rd: &Path, force: bool) -> Result<()> {
    if rd.exists() {
        let used = std::fs::read_dir(rd)
            .map_err(|e| outcore_io::IoError::new(rd, "read directory", e))?
            .next()
            .is_some();
        if used && !force {
            return Err(DistError::Invalid(format!(
                "{} exists and is not empty; pass --force to replace it",
                rd.display()
            )));
        }
        // The manifest goes first, so a directory half replaced never opens.
        let _ = std::fs::remove_file(rd.join(MANIFEST));
        std::fs::remove_dir_all(rd).map_err(|e| outcore_io::IoError::new(rd, "remove", e))?;
    }
    std::fs::create_dir_all(rd).map_err(|e| outcore_io::IoError::new(rd, "create directory", e))?;
    Ok(())
}

/// The layout of `s` over `ranks`, and the user ids of a remapped store.
fn plan_for(
    s: &Store,
    ranks: u32,
    opts: &DistIngestOptions,
) -> Result<(Plan, Option<outcore_store::Mapped<u64>>)> {
    let n = s.vertices();
    let partitions = if opts.partitions > 0 {
        if !opts.partitions.is_multiple_of(ranks) {
            return Err(DistError::Invalid(format!(
                "--partitions {} is not a multiple of the {ranks} ranks",
                opts.partitions
            )));
        }
        opts.partitions
    } else {
        partitions_for(n, ranks, HEAVIEST_BYTES_PER_VERTEX, opts.memory / 2)
    };
    let partition_vertices = n.div_ceil(partitions as u64).max(1);
    // A chunk holds at least one run of one edge.
    let record = RUN_HEADER as u64 + if s.weighted() { 8 } else { 4 };
    if opts.chunk_bytes < record {
        return Err(DistError::Invalid(format!(
            "--chunk-size {} holds no edge",
            opts.chunk_bytes
        )));
    }
    let (id_base, ids) = match s.id_map()? {
        IdMap::Offset { base, .. } => (base, None),
        IdMap::Map(ids) | IdMap::Permuted { ids, .. } => (0, Some(ids)),
    };
    let idmap_crc = ids
        .as_ref()
        .map_or(0, |ids| crc32fast::hash(bytemuck::cast_slice(&ids[..])));
    let m = s.manifest();
    let plan = Plan {
        layout_id: crate::layout::mix(
            opts.seed
                ^ std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(0, |d| d.as_nanos() as u64)
                ^ (std::process::id() as u64) << 32,
        ),
        ranks,
        vertices: n,
        edges: s.edges(),
        weighted: s.weighted(),
        directed: m.directed,
        reverse_marked: m.reverse_marked,
        partitions,
        partition_vertices,
        vertex_chunk: if opts.vertex_chunk > 0 {
            opts.vertex_chunk
        } else {
            1 << 16
        },
        chunk_bytes: opts.chunk_bytes,
        id_base,
        remapped: ids.is_some(),
        idmap_crc,
        parallel_edges: m.parallel_edges,
    };
    Ok((plan, ids))
}

/// What a rank writes as chunks arrive.
struct Receiver {
    rd: PathBuf,
    rank: usize,
    edges: OutFile,
    degrees: OutFile,
    ids: Option<(OutFile, crc32fast::Hasher)>,
    edge_chunks: Vec<EdgeChunk>,
    degree_chunks: Vec<DegreeChunk>,
    io: std::sync::Arc<IoStats>,
    /// Bytes of one target in a run.
    target: usize,
    /// Records per block of a chunk's index.
    block_records: u32,
}

impl Receiver {
    fn new(
        rd: &Path,
        rank: usize,
        plan: &Plan,
        block_records: u32,
        io: std::sync::Arc<IoStats>,
    ) -> Result<Receiver> {
        Ok(Receiver {
            rd: rd.to_path_buf(),
            rank,
            edges: OutFile::create(&rd.join("edges.bin"), io.clone())?,
            degrees: OutFile::create(&rd.join("degrees.bin"), io.clone())?,
            ids: if plan.remapped {
                Some((
                    OutFile::create(&rd.join("idmap.bin"), io.clone())?,
                    crc32fast::Hasher::new(),
                ))
            } else {
                None
            },
            edge_chunks: Vec::new(),
            degree_chunks: Vec::new(),
            io,
            target: plan.target_bytes(),
            block_records,
        })
    }

    fn take(&mut self, kind: u32, part: u32, chunk: u32, data: &[u8]) -> Result<()> {
        match kind {
            EDGES => {
                let (blocks, edges) = EdgeChunk::index_runs(data, self.target, self.block_records)
                    .map_err(|e| {
                        DistError::Protocol(format!(
                            "an edge chunk of partition {part} arrived damaged: {e}"
                        ))
                    })?;
                if data.len() > u32::MAX as usize {
                    return Err(DistError::Protocol(format!(
                        "an edge chunk of partition {part} of {} bytes (4 GiB at most)",
                        data.len()
                    )));
                }
                let (first, last) = blocks
                    .iter()
                    .fold((u32::MAX, 0), |(a, b), k| (a.min(k[0]), b.max(k[1])));
                self.edge_chunks.push(EdgeChunk {
                    partition: part,
                    offset: self.edges.position(),
                    bytes: data.len() as u64,
                    crc: crc32fast::hash(data),
                    edges,
                    first,
                    last,
                    block_records: self.block_records,
                    blocks,
                });
                self.edges.write_all(data)?;
            }
            DEGREES => {
                self.degree_chunks.push(DegreeChunk {
                    partition: part,
                    chunk,
                    offset: self.degrees.position(),
                    count: data.len() as u64 / 4,
                    crc: crc32fast::hash(data),
                });
                self.degrees.write_all(data)?;
            }
            IDS => {
                let (f, h) = self.ids.as_mut().ok_or_else(|| {
                    DistError::Protocol("ids sent for a store that is not remapped".into())
                })?;
                h.update(data);
                f.write_all(data)?;
            }
            k => return Err(DistError::Protocol(format!("unknown ingest message {k}"))),
        }
        Ok(())
    }

    fn finish(self, plan: &Plan) -> Result<RankIngest> {
        let edges: u64 = self.edge_chunks.iter().map(|c| c.edges).sum();
        self.edges.finish()?;
        self.degrees.finish()?;
        if let Some((f, h)) = self.ids {
            f.finish()?;
            if h.finalize() != plan.idmap_crc {
                return Err(DistError::Protocol(
                    "the id map received does not match rank 0's checksum".into(),
                ));
            }
        }
        outcore_io::sync_dir(&self.rd)?;
        let m = RankManifest {
            format: FORMAT.into(),
            version: VERSION,
            rank: self.rank as u32,
            plan: plan.clone(),
            edge_chunks: self.edge_chunks,
            degree_chunks: self.degree_chunks,
        };
        m.save(&self.rd)?;
        Ok(RankIngest {
            rank: self.rank,
            edge_chunks: m.edge_chunks.len() as u64,
            edges,
            degree_chunks: m.degree_chunks.len() as u64,
            bytes_written: self.io.snapshot().bytes_written,
        })
    }
}

/// Edges per block of a chunk's index the options ask for (at most
/// [`MAX_BLOCK_RECORDS`]).
fn block_records(opts: &DistIngestOptions) -> u32 {
    if opts.block_records > 0 {
        opts.block_records.min(MAX_BLOCK_RECORDS)
    } else {
        BLOCK_RECORDS
    }
}

fn receive_all(t: &dyn Transport, rx: &mut Receiver, idle: &mut Duration) -> Result<()> {
    loop {
        let (_, m) = transport::recv(t, Some(0), TAG_INGEST, idle)?;
        if m.len() < 12 {
            return Err(DistError::Protocol(format!(
                "an ingest message of {} bytes",
                m.len()
            )));
        }
        let kind = u32_at(&m, 0);
        if kind == DONE {
            return Ok(());
        }
        rx.take(kind, u32_at(&m, 1), u32_at(&m, 2), &m[12..])?;
    }
}

/// Rank 0: streams the store's out-CSR in id order, so partitions come one
/// after another and one chunk buffer suffices.
fn send_all(
    t: &dyn Transport,
    s: &Store,
    ids: Option<&[u64]>,
    plan: &Plan,
    opts: &DistIngestOptions,
    rx: &mut Receiver,
) -> Result<()> {
    let mut rng = Rng::new(opts.seed ^ plan.layout_id);
    let mut deliver = |to: usize, kind: u32, part: u32, chunk: u32, data: &[u8]| -> Result<()> {
        if to == 0 {
            return rx.take(kind, part, chunk, data);
        }
        let mut m = Vec::with_capacity(12 + data.len());
        for x in [kind, part, chunk] {
            m.extend_from_slice(&x.to_le_bytes());
        }
        m.extend_from_slice(data);
        t.send(to, TAG_INGEST, m)
    };
    // The id map, to every rank.
    if let Some(ids) = ids {
        for piece in bytemuck::cast_slice::<u64, u8>(ids).chunks(4 << 20) {
            for r in 0..t.size() {
                deliver(r, IDS, 0, 0, piece)?;
            }
        }
    }
    let n = s.vertices();
    let offsets = s.layout("csr.out.offsets", FileKind::CsrOffsets)?;
    let targets = s.layout("csr.out.targets", FileKind::CsrTargets)?;
    let tsums = PageSums::load(s, "csr.out.targets")?;
    let weights = if plan.weighted {
        Some((
            s.layout("csr.out.weights", FileKind::CsrWeights)?,
            PageSums::load(s, "csr.out.weights")?,
        ))
    } else {
        None
    };
    let mut chunk = ChunkEncoder::new(
        plan.chunk_bytes as usize,
        plan.target_bytes(),
        block_records(opts),
    );
    let mut chunk_part = 0u32;
    let mut degs: Vec<u32> = Vec::new();
    let mut tb: Vec<u32> = Vec::new();
    let mut wb: Vec<u32> = Vec::new();
    let step = 1u64 << 16;
    let mut v0 = 0u64;
    let mut next_part_start = 0u64;
    let mut part = 0u32;
    let mut vchunk = 0u32;
    let mut vchunk_end = 0u64;
    while v0 < n {
        let c = (n - v0).min(step);
        let mut offs = vec![0u64; c as usize + 1];
        offsets.read_payload(8 * v0, bytemuck::cast_slice_mut(&mut offs))?;
        if offs.windows(2).any(|w| w[0] > w[1]) || offs[c as usize] > s.edges() {
            return Err(DistError::Store(outcore_store::StoreError::Corrupt {
                file: s.dir().join("csr.out.offsets"),
                reason: format!("offsets of vertices {v0}..{} are not ascending", v0 + c),
            }));
        }
        let (ea, eb) = (offs[0], offs[c as usize]);
        let skew = tsums.read_checked(&targets, 4 * ea, 4 * eb, &mut tb)?;
        let wskew = match &weights {
            Some((wf, ws)) => ws.read_checked(wf, 4 * ea, 4 * eb, &mut wb)?,
            None => 0,
        };
        for i in 0..c as usize {
            let u = v0 + i as u64;
            if u >= next_part_start {
                // A new partition starts: its first vertex chunk.
                if !chunk.is_empty() {
                    let to = rng.below(t.size());
                    chunk.flush(|c| deliver(to, EDGES, chunk_part, 0, c))?;
                }
                part = plan.partition_of(u as u32);
                next_part_start = plan.range(part).1;
                vchunk = 0;
                vchunk_end = plan.chunk_range(part, 0).1;
            } else if u >= vchunk_end {
                vchunk += 1;
                vchunk_end = plan.chunk_range(part, vchunk).1;
            }
            degs.push((offs[i + 1] - offs[i]) as u32);
            if u + 1 == vchunk_end {
                deliver(
                    plan.vertex_home(part, vchunk),
                    DEGREES,
                    part,
                    vchunk,
                    bytemuck::cast_slice(&degs),
                )?;
                degs.clear();
            }
            for e in offs[i]..offs[i + 1] {
                let k = (e - ea) as usize;
                let v = tb[skew + k];
                if v as u64 >= n {
                    return Err(DistError::Store(outcore_store::StoreError::Corrupt {
                        file: s.dir().join("csr.out.targets"),
                        reason: format!("vertex {u} has target {v}, the store has {n} vertices"),
                    }));
                }
                if !chunk.fits(u as u32) {
                    let to = rng.below(t.size());
                    chunk.flush(|c| deliver(to, EDGES, part, 0, c))?;
                }
                chunk_part = part;
                let w = if plan.weighted { wb[wskew + k] } else { 0 };
                chunk.push(u as u32, v, w);
            }
        }
        v0 += c;
        outcore_io::cancel::check().map_err(|e| outcore_io::IoError::new(s.dir(), "ingest", e))?;
    }
    if !chunk.is_empty() {
        let to = rng.below(t.size());
        chunk.flush(|c| deliver(to, EDGES, chunk_part, 0, c))?;
    }
    for r in 1..t.size() {
        let mut m = Vec::with_capacity(12);
        for x in [DONE, 0, 0] {
            m.extend_from_slice(&x.to_le_bytes());
        }
        t.send(r, TAG_INGEST, m)?;
    }
    Ok(())
}
