//! The computation engine of one rank (Chaos §4-§5): runs an [`EdgeProgram`] —
//! the same definitions every single-machine engine runs — as gather-apply-scatter
//! over streaming partitions.
//!
//! # An iteration
//! 1. **Scatter** (phase `2i`): for each partition it masters (`p mod ranks`), the
//!    engine reads the partition's vertex chunks (values and activation epochs,
//!    and out-degrees when the program uses them) from the ranks they hash to,
//!    then streams the partition's edge chunks: it keeps a window of `k`
//!    requests outstanding at distinct random storage engines (§6.5), each answering
//!    with any chunk of the partition not yet handed out. Every edge from an active
//!    source becomes an update `(v, edge(message(u), u, w))`, binned by the
//!    partition of `v`; a full bin is stored on a uniformly random rank. A
//!    partition with no active source is passed over.
//! 2. A collective exchange of how many updates each partition received (it is
//!    also the barrier between the phases: every update is acknowledged first).
//! 3. **Gather + apply** (phase `2i+1`): the master reads the vertex chunks,
//!    streams the partition's update chunks into accumulators (`combine`), applies
//!    every vertex (`apply`) and writes the chunks back. A partition that received
//!    nothing is passed over when the program is idle without messages.
//! 4. A collective exchange of each partition's aggregates and active count; the
//!    totals are added in partition order, so every rank decides alike whether to
//!    go on, and the answer does not depend on which rank did what.
//!
//! A vertex is active in iteration `i` when its epoch is `i - 1` (or the program
//! is all-active), so a partition passed over needs no write to deactivate.
//!
//! Every `checkpoint_every` iterations the barrier that ends an iteration is
//! also a checkpoint ([`crate::checkpoint`], §6.6); `resume` starts from the
//! last one every rank committed.
//!
//! An engine done with its own partitions in a phase helps other masters with
//! theirs ([`crate::steal`], §5.3-§5.4).

use crate::checkpoint::{self, FailAt, FailPoint, Generation, Record};
use crate::error::{DistError, Result};
use crate::layout::{Plan, RankManifest, Rng};
use crate::phase::{
    active_of, fetch_degrees, gather_part, load, scatter_part, store, update_bytes, Part, Scatter,
};
use crate::steal::Board;
use crate::storage::{self, header, u32_at, Payload, Storage, StorageStats};
use crate::transport::{self, Transport};
use crate::{TAG_ACK, TAG_MERGE, TAG_REQ, TAG_RESP, TAG_RESULT};
use bytemuck::Zeroable;
use outcore_engine::program::{Aggregates, EdgeProgram, Globals, Sums};
use outcore_state::{StateBudget, VertexArray};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

pub use crate::config::{DistConfig, DEFAULT_CHECKPOINT_EVERY};

pub(crate) const NEVER: u32 = u32::MAX;

/// What one rank did in a run.
#[derive(Debug, Default, Clone, serde::Serialize, serde::Deserialize)]
pub struct RankStats {
    pub rank: usize,
    pub partitions_mastered: u64,
    pub edges_processed: u64,
    pub edge_chunks_read: u64,
    pub updates_sent: u64,
    /// Updates combined at once into the accumulators of a partition this
    /// rank masters and holds in memory through the iteration (never sent).
    #[serde(default)]
    pub updates_combined: u64,
    pub update_chunks_sent: u64,
    pub update_chunks_read: u64,
    pub partitions_passed_over: u64,
    /// Threads the scatter ran on.
    #[serde(default)]
    pub threads: usize,
    /// Vertex chunks not stored after apply, none of their vertices changed.
    #[serde(default)]
    pub vertex_chunks_unchanged: u64,
    pub window: usize,
    /// Seconds the computation engine waited for replies and other ranks.
    pub idle_seconds: f64,
    pub scatter_seconds: f64,
    pub gather_seconds: f64,
    pub bytes_sent: u64,
    pub bytes_received: u64,
    /// The iteration this run resumed from (`resume`).
    pub resumed_from: Option<u64>,
    pub checkpoints: u64,
    pub checkpoint_seconds: f64,
    /// Chunk requests (edges, updates) this engine made, and the seconds from
    /// each request to its reply, summed (§6.5's R_storage + R_network).
    pub chunk_requests: u64,
    pub request_seconds: f64,
    /// Chunks this engine processed of partitions other ranks master.
    pub stolen_chunks: u64,
    /// Partitions of other masters this engine helped with, offers it made,
    /// and helpers its own partitions accepted.
    pub partitions_helped: u64,
    pub steal_offers: u64,
    pub helpers_accepted: u64,
    pub storage: StorageStats,
}

/// §6.5's window amplification φ (equation 1: `1 + R_network / R_storage`)
/// used unless `--window` says otherwise: a request spends about as long
/// travelling and waiting for its engine as being served (measured by the dist
/// benchmark), and two requests per engine let a storage engine read the next
/// chunk while the last one is processed.
pub const AMPLIFICATION: usize = 2;

/// The request window unless `--window` says otherwise: §6.5's batch factor
/// for `ranks` storage engines busy with probability 0.99, times
/// [`AMPLIFICATION`].
pub fn default_window(ranks: usize) -> usize {
    AMPLIFICATION * batch_factor(ranks, 0.99)
}

/// The smallest batch factor `k` keeping `m` storage engines busy with
/// probability at least `target` (§6.5, equation 2: `1 - (1 - k/m)^m`).
pub fn batch_factor(m: usize, target: f64) -> usize {
    (1..=m)
        .find(|&k| 1.0 - (1.0 - k as f64 / m as f64).powi(m as i32) >= target)
        .unwrap_or(m)
}

pub(crate) struct Ctx<'a> {
    pub(crate) t: &'a dyn Transport,
    pub(crate) plan: &'a Plan,
    pub(crate) rng: Rng,
    pub(crate) window: usize,
    pub(crate) idle: Duration,
    pub(crate) unacked: usize,
    pub(crate) stats: RankStats,
    pub(crate) fail_at: Option<FailAt>,
    pub(crate) ckpt_dir: PathBuf,
    pub(crate) record: Record,
    pub(crate) board: Arc<Mutex<Board>>,
    pub(crate) steal: bool,
    /// This rank's storage engine, whose requests from here are served here.
    pub(crate) local: &'a Mutex<Storage>,
}

impl Ctx<'_> {
    /// Fails here if the injected failure is for this moment.
    pub(crate) fn fail_point(&self, now: FailPoint) -> Result<()> {
        checkpoint::fail_if(self.fail_at.as_ref(), self.t.rank(), now)
    }

    pub(crate) fn failed(&self, from: usize, msg: &[u8]) -> DistError {
        DistError::Remote {
            rank: from,
            message: String::from_utf8_lossy(msg).into_owned(),
        }
    }

    /// Status and payload of a reply from `from` with `tag`.
    pub(crate) fn await_reply(
        &mut self,
        from: Option<usize>,
        tag: i32,
    ) -> Result<(usize, u32, Payload)> {
        let (r, m) = transport::recv(self.t, from, tag, &mut self.idle)?;
        self.parse_reply(r, m)
    }

    fn parse_reply(&self, r: usize, m: Vec<u8>) -> Result<(usize, u32, Payload)> {
        if m.len() < 4 {
            return Err(DistError::Protocol(format!(
                "rank {r} sent a reply of {} bytes",
                m.len()
            )));
        }
        let status = u32_at(&m, 0);
        if status == storage::FAILED {
            return Err(self.failed(r, &m[4..]));
        }
        Ok((r, status, Payload::of(m)))
    }

    /// A request to this rank's own storage engine, served here.
    pub(crate) fn serve_here(&mut self, msg: &[u8]) -> Result<(u32, Payload)> {
        let (_, out) = self.local.lock().expect("storage").serve_one(msg, true);
        let (_, status, data) = self.parse_reply(self.t.rank(), out)?;
        Ok((status, data))
    }

    /// A vertex chunk (`GET_DEGREES` / `GET_STATE`) from the rank it hashes to.
    pub(crate) fn vertex_chunk(&mut self, op: u32, p: u32, c: u32) -> Result<Option<Payload>> {
        let home = self.plan.vertex_home(p, c);
        let (status, data) = if home == self.t.rank() {
            self.serve_here(&header(op, p, c, 0))?
        } else {
            self.t.send(home, TAG_REQ, header(op, p, c, 0))?;
            let (_, status, data) = self.await_reply(Some(home), TAG_RESP)?;
            (status, data)
        };
        Ok((status == storage::OK).then_some(data))
    }

    /// Sends a put; at most `limit` stay unacknowledged. A put to this rank
    /// is done here.
    pub(crate) fn put(&mut self, to: usize, msg: Vec<u8>, limit: usize) -> Result<()> {
        if to == self.t.rank() {
            self.serve_here(&msg)?;
            return Ok(());
        }
        self.t.send(to, TAG_REQ, msg)?;
        self.unacked += 1;
        self.drain_acks(limit)
    }

    pub(crate) fn drain_acks(&mut self, limit: usize) -> Result<()> {
        while self.unacked > limit {
            self.await_reply(None, TAG_ACK)?;
            self.unacked -= 1;
        }
        Ok(())
    }

    /// Streams every chunk of partition `p` (`GET_EDGES` / `GET_UPDATES`) in
    /// `phase` through `f`, with `window` requests outstanding at random other
    /// storage engines, spread over them (an engine with fewer outstanding is
    /// asked first; one with several reads the next chunk while this engine
    /// processes the last); this rank's own chunks are served here between
    /// the replies (a reply that has arrived is processed first); done when
    /// every engine said it has none left. Each request carries `extra` after
    /// its header (an [`storage::ActiveFilter`] for `GET_EDGES`, or nothing).
    pub(crate) fn stream(
        &mut self,
        op: u32,
        p: u32,
        phase: u32,
        extra: &[u8],
        f: &mut dyn FnMut(&mut Self, &[u8]) -> Result<()>,
    ) -> Result<()> {
        let mut req = header(op, p, 0, phase);
        req.extend_from_slice(extra);
        let n = self.t.size();
        let me = self.t.rank();
        let mut live: Vec<bool> = (0..n).map(|r| r != me).collect();
        let mut here = true;
        let mut asked: Vec<std::collections::VecDeque<Instant>> = vec![Default::default(); n];
        let mut outstanding = 0usize;
        loop {
            while outstanding < self.window {
                let least = (0..n).filter(|&r| live[r]).map(|r| asked[r].len()).min();
                let Some(least) = least else { break };
                let idle: Vec<usize> = (0..n)
                    .filter(|&r| live[r] && asked[r].len() == least)
                    .collect();
                let r = idle[self.rng.below(idle.len())];
                self.t.send(r, TAG_REQ, req.clone())?;
                asked[r].push_back(Instant::now());
                outstanding += 1;
            }
            let arrived = if outstanding > 0 {
                self.t.try_recv(None, TAG_RESP)?
            } else {
                None
            };
            let (r, status, data) = match arrived {
                Some((r, m)) => self.parse_reply(r, m)?,
                None if here => {
                    let t0 = Instant::now();
                    let (status, data) = self.serve_here(&req)?;
                    self.stats.chunk_requests += 1;
                    self.stats.request_seconds += t0.elapsed().as_secs_f64();
                    if status == storage::EMPTY {
                        here = false;
                    } else {
                        f(self, &data)?;
                    }
                    continue;
                }
                None if outstanding == 0 => return Ok(()),
                None => self.await_reply(None, TAG_RESP)?,
            };
            let Some(at) = asked[r].pop_front() else {
                return Err(DistError::Protocol(format!(
                    "an unasked reply from rank {r}"
                )));
            };
            outstanding -= 1;
            self.stats.chunk_requests += 1;
            self.stats.request_seconds += at.elapsed().as_secs_f64();
            if status == storage::EMPTY {
                live[r] = false;
            } else {
                f(self, &data)?;
            }
        }
    }
}

/// Per-partition aggregates and active counts, exchanged and added up in
/// partition order on every rank.
fn exchange_totals(ctx: &mut Ctx, mine: &[(u32, Aggregates, u64)]) -> Result<(Aggregates, u64)> {
    let mut buf = Vec::with_capacity(mine.len() * 44);
    for (p, agg, act) in mine {
        buf.extend_from_slice(&p.to_le_bytes());
        for x in agg {
            buf.extend_from_slice(&x.to_le_bytes());
        }
        buf.extend_from_slice(&act.to_le_bytes());
    }
    let all = transport::all_gather(ctx.t, &buf, &mut ctx.idle)?;
    let mut per: Vec<(u32, Aggregates, u64)> = Vec::new();
    for b in all {
        for r in b.chunks_exact(44) {
            let p = u32::from_le_bytes(r[0..4].try_into().expect("4"));
            let agg: Aggregates = std::array::from_fn(|i| {
                f64::from_le_bytes(r[4 + 8 * i..12 + 8 * i].try_into().expect("8"))
            });
            let act = u64::from_le_bytes(r[36..44].try_into().expect("8"));
            per.push((p, agg, act));
        }
    }
    per.sort_by_key(|x| x.0);
    let mut sums = Sums::default();
    let mut active = 0;
    for (_, agg, act) in &per {
        sums.add(agg);
        active += act;
    }
    Ok((sums.total(), active))
}

/// Runs `prog` over the layout on every rank (each rank calls this with its own
/// transport). Rank 0 gets the result for every vertex; the others an empty array.
pub fn run<P: EdgeProgram>(
    t: &dyn Transport,
    dir: &Path,
    manifest: &RankManifest,
    cfg: &DistConfig,
    prog: &P,
) -> Result<(VertexArray<P::Out>, u64, RankStats)> {
    let plan = &manifest.plan;
    let rank = t.rank();
    let vs = std::mem::size_of::<P::V>() as u64;
    let need = plan.partition_vertices * prog.bytes_per_vertex();
    if need > cfg.memory {
        return Err(DistError::Invalid(format!(
            "{}: a partition of {} vertices needs {} of vertex data, more than --memory {}; make the layout again with a smaller --memory at dist ingest",
            prog.name(),
            plan.partition_vertices,
            outcore_io::format_bytes(need),
            outcore_io::format_bytes(cfg.memory)
        )));
    }
    let run_dir = match &cfg.work_dir {
        Some(w) => w.join(format!("rank-{rank}.run")),
        None => crate::layout::rank_dir(dir, rank).join("run"),
    };
    let ckpt_dir = checkpoint::dir_of(dir, cfg.work_dir.as_deref(), rank);
    let mut idle = Duration::ZERO;
    // Every rank learns whether every rank could open its files and find its
    // checkpoint before any starts to compute.
    let io = outcore_io::IoStats::new();
    let mut st = storage::Storage::open_on_every_rank(
        t,
        dir,
        manifest,
        &run_dir,
        &ckpt_dir,
        vs + 4,
        io,
        &mut idle,
    )?;
    let (record, start) = if cfg.resume {
        resume_point(t, &ckpt_dir, plan, cfg, &mut idle)?
    } else {
        // A new run: an older run's checkpoint is no longer wanted.
        let _ = std::fs::remove_dir_all(&ckpt_dir);
        (
            Record {
                layout_id: plan.layout_id,
                rank: rank as u32,
                key: cfg.run_key.clone(),
                generations: Vec::new(),
            },
            None,
        )
    };
    if let Some(g) = &start {
        let r = st.restore(g);
        crate::ingest::agree(t, r.as_ref().err(), &mut idle)?;
    }
    let window = if cfg.window > 0 {
        cfg.window
    } else {
        default_window(t.size())
    };
    let board = st.board.clone();
    let st = Mutex::new(st);
    let mut ctx = Ctx {
        t,
        plan,
        rng: Rng::new(cfg.seed ^ (rank as u64) << 40),
        window,
        idle,
        unacked: 0,
        stats: RankStats {
            rank,
            window,
            resumed_from: start.as_ref().map(|g| g.iteration),
            ..Default::default()
        },
        fail_at: cfg.fail_at,
        ckpt_dir: ckpt_dir.clone(),
        record,
        board,
        steal: cfg.steal && t.size() > 1,
        local: &st,
    };
    let result = std::thread::scope(|s| {
        let server = s.spawn(|| Storage::serve(&st, t));
        let r = compute(&mut ctx, cfg, prog, manifest, start);
        if let Err(e) = &r {
            // The other ranks may be waiting on this one: stop them all.
            if !matches!(e, DistError::Stopped { .. }) {
                transport::abort_all(t, &e.to_string());
            }
            let _ = t.send(rank, TAG_REQ, header(storage::STOP, 0, 0, 0));
            let _ = server.join();
            return (r, None);
        }
        // Every rank is past the last request before any storage engine stops.
        let r = r.and_then(|x| transport::barrier(t, &mut ctx.idle).map(|_| x));
        let _ = t.send(rank, TAG_REQ, header(storage::STOP, 0, 0, 0));
        let served = server.join().expect("storage thread");
        (r, Some(served))
    });
    let _ = std::fs::remove_dir_all(&run_dir);
    if matches!(result, (Ok(_), Some(Ok(())))) {
        // Done everywhere: the checkpoints are no longer needed.
        let _ = std::fs::remove_dir_all(&ckpt_dir);
    }
    match result {
        (Err(e), None) => Err(e),
        (r, served) => {
            if let Some(Err(e)) = served {
                return Err(e);
            }
            let (out, it) = r?;
            let mut stats = ctx.stats;
            stats.idle_seconds = ctx.idle.as_secs_f64();
            let (s, rcv) = t.traffic();
            stats.bytes_sent = s;
            stats.bytes_received = rcv;
            let st = st.into_inner().expect("storage");
            stats.storage = st.stats.clone();
            stats.helpers_accepted = st.board.lock().expect("board").accepted;
            Ok((out, it, stats))
        }
    }
}

/// Every mastered partition's initial values, stored; the totals.
fn initial<P: EdgeProgram>(ctx: &mut Ctx, prog: &P, mine: &[u32]) -> Result<(Aggregates, u64)> {
    let plan = ctx.plan;
    let degrees = prog.uses_degrees();
    let mut totals = Vec::new();
    for &p in mine {
        let (a, b) = plan.range(p);
        let cnt = (b - a) as usize;
        let mut part = Part {
            a,
            vals: vec![P::V::zeroed(); cnt],
            eps: vec![NEVER; cnt],
            degs: vec![0; cnt],
        };
        if degrees {
            for c in 0..plan.vertex_chunks(p) {
                let (x, y) = plan.chunk_range(p, c);
                fetch_degrees(
                    ctx,
                    p,
                    c,
                    &mut part.degs[(x - a) as usize..(y - a) as usize],
                )?;
            }
        }
        let mut sums = Sums::default();
        let mut active = 0u64;
        for i in 0..cnt {
            let mut one: Aggregates = [0.0; 4];
            let (x, act) = prog.init((a + i as u64) as u32, part.degs[i], &mut one);
            sums.add(&one);
            part.vals[i] = x;
            if act {
                part.eps[i] = 0;
                active += 1;
            }
        }
        store(ctx, p, &part, None)?;
        totals.push((p, sums.total(), active));
    }
    ctx.drain_acks(0)?;
    exchange_totals(ctx, &totals)
}

/// The generation every rank resumes from (the smallest latest commit over the
/// ranks; `None` when some rank has none), after each rank forgot newer ones.
fn resume_point(
    t: &dyn Transport,
    ckpt_dir: &Path,
    plan: &Plan,
    cfg: &DistConfig,
    idle: &mut Duration,
) -> Result<(Record, Option<Generation>)> {
    let rank = t.rank();
    let found = checkpoint::load(ckpt_dir).and_then(|r| match r {
        Some(r) if r.layout_id != plan.layout_id || r.rank as usize != rank => {
            Err(DistError::Layout(format!(
                "{}: a checkpoint of another store; run again without --resume",
                ckpt_dir.join(checkpoint::FILE).display()
            )))
        }
        Some(r) if r.key != cfg.run_key => Err(DistError::Invalid(format!(
            "{}: a checkpoint of `{}`, not of `{}`; run again with those settings, or without --resume to start over",
            ckpt_dir.join(checkpoint::FILE).display(),
            r.key,
            cfg.run_key
        ))),
        r => Ok(r),
    });
    crate::ingest::agree(t, found.as_ref().err(), idle)?;
    let mut record = found?.unwrap_or(Record {
        layout_id: plan.layout_id,
        rank: rank as u32,
        key: cfg.run_key.clone(),
        generations: Vec::new(),
    });
    let latest = record.generations.last().map_or(u64::MAX, |g| g.iteration);
    let all = transport::all_gather(t, &latest.to_le_bytes(), idle)?;
    let latest: Vec<u64> = all
        .iter()
        .map(|b| u64::from_le_bytes(b[..8].try_into().expect("8 bytes")))
        .collect();
    if latest.contains(&u64::MAX) {
        record.generations.clear();
        let _ = std::fs::remove_dir_all(ckpt_dir);
        return Ok((record, None));
    }
    let agreed = *latest.iter().min().expect("a rank");
    let start = record
        .generations
        .iter()
        .find(|g| g.iteration == agreed)
        .cloned()
        .ok_or_else(|| {
            DistError::Layout(format!(
                "{}: no checkpoint of iteration {agreed}, which the other ranks resume from",
                ckpt_dir.join(checkpoint::FILE).display()
            ))
        });
    let forgot = start.and_then(|g| {
        if record.generations.len() > 1 && record.generations.last() != Some(&g) {
            record.generations.retain(|x| x.iteration <= agreed);
            checkpoint::commit(ckpt_dir, &record)?;
        }
        Ok(g)
    });
    crate::ingest::agree(t, forgot.as_ref().err(), idle)?;
    Ok((record, Some(forgot?)))
}

/// Both phases of the checkpoint of iteration `it` (see [`crate::checkpoint`]).
fn take_checkpoint(ctx: &mut Ctx, it: u64, prev: &Aggregates, active: u64) -> Result<()> {
    let t0 = Instant::now();
    let me = ctx.t.rank();
    ctx.t
        .send(me, TAG_REQ, header(storage::CHECKPOINT, 0, 0, it as u32))?;
    let (_, _, data) = ctx.await_reply(Some(me), TAG_ACK)?;
    if data.len() != 12 {
        return Err(DistError::Protocol(format!(
            "a checkpoint acknowledgement of {} bytes",
            data.len()
        )));
    }
    let bytes = u64::from_le_bytes(data[..8].try_into().expect("8 bytes"));
    let crc = u32_at(&data, 2);
    // Phase one is done when every rank wrote its state.
    transport::barrier(ctx.t, &mut ctx.idle)?;
    ctx.fail_point(FailPoint::Commit(it))?;
    ctx.record.generations.push(Generation {
        iteration: it,
        bytes,
        crc,
        prev: prev.map(f64::to_bits),
        active,
    });
    let n = ctx.record.generations.len();
    if n > 2 {
        ctx.record.generations.drain(..n - 2);
    }
    checkpoint::commit(&ctx.ckpt_dir, &ctx.record)?;
    ctx.stats.checkpoints += 1;
    ctx.stats.checkpoint_seconds += t0.elapsed().as_secs_f64();
    Ok(())
}

/// Offers help with the partitions other ranks master in `phase` (§5.3), in a
/// random order, until each is done or declined; `work` does an accepted one.
fn help(
    ctx: &mut Ctx,
    phase: u32,
    work: &mut dyn FnMut(&mut Ctx, u32) -> Result<()>,
) -> Result<()> {
    let plan = ctx.plan;
    let rank = ctx.t.rank();
    if !ctx.steal {
        return Ok(());
    }
    let mut pending: Vec<u32> = (0..plan.partitions)
        .filter(|&p| plan.master(p) != rank)
        .collect();
    for i in (1..pending.len()).rev() {
        let j = ctx.rng.below(i + 1);
        pending.swap(i, j);
    }
    while !pending.is_empty() {
        let mut later = Vec::new();
        for &p in &pending {
            let m = plan.master(p);
            ctx.t
                .send(m, TAG_REQ, header(storage::STEAL, p, 0, phase))?;
            ctx.stats.steal_offers += 1;
            let (_, status, _) = ctx.await_reply(Some(m), TAG_RESP)?;
            match status {
                storage::OK => {
                    ctx.stats.partitions_helped += 1;
                    work(ctx, p)?;
                }
                storage::LATER => later.push(p),
                _ => {}
            }
        }
        if !later.is_empty() {
            let t0 = Instant::now();
            std::thread::sleep(Duration::from_micros(200));
            ctx.idle += t0.elapsed();
        }
        pending = later;
    }
    Ok(())
}

/// Bytes of edge chunks of every partition, over all ranks.
fn edge_bytes(ctx: &mut Ctx, manifest: &RankManifest) -> Result<Vec<u64>> {
    let parts = ctx.plan.partitions as usize;
    let mut mine = vec![0u64; parts];
    for c in &manifest.edge_chunks {
        mine[c.partition as usize] += c.bytes;
    }
    let all = transport::all_gather(ctx.t, bytemuck::cast_slice(&mine), &mut ctx.idle)?;
    let mut total = vec![0u64; parts];
    for b in all {
        for (q, x) in b.chunks_exact(8).enumerate() {
            total[q] += u64::from_le_bytes(x.try_into().expect("8"));
        }
    }
    Ok(total)
}

fn compute<P: EdgeProgram>(
    ctx: &mut Ctx,
    cfg: &DistConfig,
    prog: &P,
    manifest: &RankManifest,
    start: Option<Generation>,
) -> Result<(VertexArray<P::Out>, u64)> {
    let plan = ctx.plan;
    let rank = ctx.t.rank();
    let mine: Vec<u32> = (0..plan.partitions)
        .filter(|&p| plan.master(p) == rank)
        .collect();
    ctx.stats.partitions_mastered = mine.len() as u64;
    let degrees = prog.uses_degrees();
    let vs = std::mem::size_of::<P::V>() as u64;
    let edge_bytes = edge_bytes(ctx, manifest)?;
    let (prev, mut active, mut done) = match &start {
        Some(g) => (g.aggregates(), g.active, g.iteration),
        None => {
            let (prev, active) = initial(ctx, prog, &mine)?;
            (prev, active, 0)
        }
    };
    let mut g = Globals { iteration: 0, prev };
    let bins_room = (cfg.memory / 4 / plan.partitions.max(1) as u64).max(64 << 10);
    let rec = update_bytes(prog) as u64;
    let bin_bytes = (bins_room.min(plan.chunk_bytes) / rec * rec).max(rec) as usize;
    // The partitions this rank masters whose accumulators stay in memory from
    // scatter to gather: as many as fit the room, in order.
    let mut resident = vec![false; plan.partitions as usize];
    // (None for a program whose edges read their destination's value: its
    // updates are evaluated in the gather, beside the values.)
    // They take at most what --memory leaves beside one partition's vertex
    // state, the update bins, the replies a full request window holds and
    // the chunks the storage engine reads ahead.
    let spare = cfg.memory.saturating_sub(
        plan.partition_vertices * prog.bytes_per_vertex()
            + bin_bytes as u64 * plan.partitions as u64
            + (ctx.window + storage::READ_AHEAD) as u64 * plan.chunk_bytes
            + crate::phase::PAR_DEFERRED_BYTES,
    );
    let mut room = match prog.reads_destination() {
        true => 0,
        false => cfg.resident_bytes.unwrap_or(cfg.memory / 8).min(spare),
    };
    for &p in &mine {
        let (a, b) = plan.range(p);
        if 8 * (b - a) <= room {
            room -= 8 * (b - a);
            resident[p as usize] = true;
        }
    }
    // The scatter's threads (none beside this one: on one thread).
    let threads = cfg.scatter_threads();
    ctx.stats.threads = threads;
    let pool = (threads > 1)
        .then(|| {
            rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .ok()
        })
        .flatten();
    while prog.proceed(done, &g.prev, active) {
        let it = done + 1;
        g.iteration = it;
        // Scatter.
        let t0 = Instant::now();
        let phase = 2 * it as u32;
        ctx.board.lock().expect("board").begin(phase);
        let mut sc = Scatter {
            it,
            pool: pool.as_ref(),
            bins: vec![Vec::new(); plan.partitions as usize],
            sent: vec![0; plan.partitions as usize],
            bin_bytes,
            resident: (0..plan.partitions)
                .map(|q| {
                    resident[q as usize].then(|| {
                        let (a, b) = plan.range(q);
                        (
                            a,
                            outcore_io::huge_filled((b - a) as usize, prog.identity()),
                            0,
                        )
                    })
                })
                .collect(),
        };
        // A rank that masters one partition keeps its vertex data from the
        // scatter to the gather (nothing changes it in between; the gather
        // holds it beside the accumulators in any case), instead of loading
        // it twice per iteration.
        let mut kept_part = None;
        for &p in &mine {
            let part = load(ctx, prog, p, degrees, None)?;
            let act = active_of(prog, &part, it);
            if !act.iter().any(|&x| x) {
                ctx.board.lock().expect("board").finish(p);
                ctx.stats.partitions_passed_over += 1;
                continue;
            }
            // A helper reads the vertex chunks (and degrees) first.
            let vbytes = part.vals.len() as u64 * (vs + 4 + if degrees { 4 } else { 0 });
            ctx.board
                .lock()
                .expect("board")
                .open(p, vbytes, edge_bytes[p as usize]);
            let r = scatter_part(ctx, prog, p, &part, &act, &mut sc, true);
            ctx.board.lock().expect("board").close();
            r?;
            if mine.len() == 1 {
                kept_part = Some(part);
            }
        }
        help(ctx, phase, &mut |ctx, p| {
            let part = load(ctx, prog, p, degrees, None)?;
            let act = active_of(prog, &part, it);
            scatter_part(ctx, prog, p, &part, &act, &mut sc, false)
        })?;
        ctx.fail_point(FailPoint::Phase(phase))?;
        for q in 0..plan.partitions as usize {
            sc.flush(ctx, q)?;
        }
        let sent = std::mem::take(&mut sc.sent);
        let mut kept = std::mem::take(&mut sc.resident);
        drop(sc);
        ctx.drain_acks(0)?;
        // Every update is stored: tell who received how many bytes (the barrier).
        let all = transport::all_gather(ctx.t, bytemuck::cast_slice(&sent), &mut ctx.idle)?;
        let mut received = vec![0u64; plan.partitions as usize];
        for b in all {
            for (q, x) in b.chunks_exact(8).enumerate() {
                received[q] += u64::from_le_bytes(x.try_into().expect("8"));
            }
        }
        ctx.stats.scatter_seconds += t0.elapsed().as_secs_f64();
        // Gather and apply.
        let t0 = Instant::now();
        let phase = 2 * it as u32 + 1;
        ctx.board.lock().expect("board").begin(phase);
        let mut totals = Vec::new();
        for &p in &mine {
            let local = kept[p as usize].take();
            let combined = local.as_ref().map_or(0, |l| l.2);
            ctx.stats.updates_combined += combined;
            if received[p as usize] == 0 && combined == 0 && prog.idle_without_messages() {
                ctx.board.lock().expect("board").finish(p);
                ctx.stats.partitions_passed_over += 1;
                continue;
            }
            // The values are loaded before the gather when its edges read
            // them, otherwise after it: then, for a program that an absent
            // message leaves alone, only the vertex chunks a message reached.
            let part = match (kept_part.take(), prog.reads_destination()) {
                (Some(part), _) => Some(part),
                (None, true) => Some(load(ctx, prog, p, degrees, None)?),
                (None, false) => None,
            };
            let cnt = plan.range(p).1 as usize - plan.range(p).0 as usize;
            let mut acc = match local {
                Some((_, acc, _)) => acc,
                None => outcore_io::huge_filled(cnt, prog.identity()),
            };
            // A helper sends its accumulators back (and reads the values first
            // when the edges read them).
            let vbytes = if prog.reads_destination() {
                vs + 4 + 8
            } else {
                8
            };
            ctx.board
                .lock()
                .expect("board")
                .open(p, vbytes * cnt as u64, received[p as usize]);
            let dst = part.as_ref().map(|x| &x.vals[..]);
            let r = gather_part(ctx, prog, p, it, &mut acc, dst, true);
            let helpers = ctx.board.lock().expect("board").close();
            r?;
            for _ in 0..helpers {
                let (from, m) = transport::recv(ctx.t, None, TAG_MERGE, &mut ctx.idle)?;
                if m.len() != 4 + 8 * cnt || u32_at(&m, 0) != p {
                    return Err(DistError::Protocol(format!(
                        "rank {from} sent {} bytes of accumulators for partition {}, {} expected for partition {p}",
                        m.len(),
                        u32_at(&m, 0),
                        4 + 8 * cnt
                    )));
                }
                for (x, y) in acc.iter_mut().zip(m[4..].chunks_exact(8)) {
                    *x = prog.combine(*x, u64::from_le_bytes(y.try_into().expect("8")));
                }
            }
            let vc = plan.vertex_chunk as usize;
            let reached: Option<Vec<bool>> = prog.idle_without_messages().then(|| {
                acc.chunks(vc)
                    .map(|xs| xs.iter().any(|&x| x != prog.identity()))
                    .collect()
            });
            let mut part = match part {
                Some(part) => part,
                None => load(ctx, prog, p, degrees, reached.as_deref())?,
            };
            let mut sums = Sums::default();
            let mut act = 0u64;
            // Vertex chunks none of whose values or epochs changed are not
            // stored again (what their home holds is what was loaded).
            let mut dirty = vec![false; plan.vertex_chunks(p) as usize];
            for (i, &x) in acc.iter().enumerate() {
                if reached.as_ref().is_some_and(|r| !r[i / vc]) {
                    continue;
                }
                let mut one: Aggregates = [0.0; 4];
                let d = if degrees { part.degs[i] } else { 0 };
                let before = part.vals[i];
                let mut changed = false;
                if prog.apply(&g, &mut part.vals[i], x, d, &mut one) {
                    part.eps[i] = it as u32;
                    act += 1;
                    changed = true;
                }
                if changed || bytemuck::bytes_of(&before) != bytemuck::bytes_of(&part.vals[i]) {
                    dirty[i / vc] = true;
                }
                sums.add(&one);
            }
            ctx.stats.vertex_chunks_unchanged += dirty.iter().filter(|&&d| !d).count() as u64;
            store(ctx, p, &part, Some(&dirty))?;
            totals.push((p, sums.total(), act));
        }
        help(ctx, phase, &mut |ctx, p| {
            let (a, b) = plan.range(p);
            let mut acc = outcore_io::huge_filled((b - a) as usize, prog.identity());
            let part = match prog.reads_destination() {
                true => Some(load(ctx, prog, p, false, None)?),
                false => None,
            };
            let dst = part.as_ref().map(|x| &x.vals[..]);
            gather_part(ctx, prog, p, it, &mut acc, dst, false)?;
            let mut msg = Vec::with_capacity(4 + 8 * acc.len());
            msg.extend_from_slice(&p.to_le_bytes());
            msg.extend_from_slice(bytemuck::cast_slice(&acc));
            ctx.t.send(plan.master(p), TAG_MERGE, msg)
        })?;
        ctx.fail_point(FailPoint::Phase(phase))?;
        ctx.drain_acks(0)?;
        let (prev, a) = exchange_totals(ctx, &totals)?;
        g.prev = prev;
        active = a;
        ctx.stats.gather_seconds += t0.elapsed().as_secs_f64();
        done = it;
        let every = cfg.checkpoint_every;
        if every > 0 && it.is_multiple_of(every) && prog.proceed(done, &g.prev, active) {
            take_checkpoint(ctx, it, &g.prev, active)?;
        }
    }
    // The result, gathered on rank 0.
    let n = if rank == 0 { plan.vertices as usize } else { 0 };
    let budget = StateBudget::new(cfg.memory / 2, std::env::temp_dir());
    let mut out = budget
        .alloc::<P::Out>(prog.name(), n, P::Out::zeroed())
        .map_err(|e| DistError::Invalid(e.to_string()))?;
    let os = std::mem::size_of::<P::Out>();
    for &p in &mine {
        for c in 0..plan.vertex_chunks(p) {
            let (x, y) = plan.chunk_range(p, c);
            let blob = ctx.vertex_chunk(storage::GET_STATE, p, c)?.ok_or_else(|| {
                DistError::Protocol(format!("vertex chunk {c} of partition {p} is missing"))
            })?;
            let cnt = (y - x) as usize;
            let mut vals = vec![P::V::zeroed(); cnt];
            bytemuck::cast_slice_mut::<P::V, u8>(&mut vals)
                .copy_from_slice(&blob[..cnt * std::mem::size_of::<P::V>()]);
            let res: Vec<P::Out> = vals.iter().map(|v| prog.output(v)).collect();
            if rank == 0 {
                out[x as usize..y as usize].copy_from_slice(&res);
            } else {
                let mut msg = Vec::with_capacity(8 + cnt * os);
                msg.extend_from_slice(&p.to_le_bytes());
                msg.extend_from_slice(&c.to_le_bytes());
                msg.extend_from_slice(bytemuck::cast_slice(&res));
                ctx.t.send(0, TAG_RESULT, msg)?;
            }
        }
    }
    if rank == 0 {
        let expected: u64 = (0..plan.partitions)
            .filter(|&p| plan.master(p) != 0)
            .map(|p| plan.vertex_chunks(p) as u64)
            .sum();
        for _ in 0..expected {
            let (from, m) = transport::recv(ctx.t, None, TAG_RESULT, &mut ctx.idle)?;
            if m.len() < 8 {
                return Err(DistError::Protocol(format!(
                    "rank {from} sent a short result"
                )));
            }
            let (p, c) = (u32_at(&m, 0), u32_at(&m, 1));
            if p >= plan.partitions || c >= plan.vertex_chunks(p) {
                return Err(DistError::Protocol(format!(
                    "rank {from} sent a result for chunk {c} of partition {p}"
                )));
            }
            let (x, y) = plan.chunk_range(p, c);
            if m.len() - 8 != (y - x) as usize * os {
                return Err(DistError::Protocol(format!(
                    "rank {from} sent {} result bytes for chunk {c} of partition {p}",
                    m.len() - 8
                )));
            }
            bytemuck::cast_slice_mut::<P::Out, u8>(&mut out[x as usize..y as usize])
                .copy_from_slice(&m[8..]);
        }
    }
    Ok((out, done))
}
