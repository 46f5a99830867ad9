//! One partition's share of an iteration on the computation engine (Chaos §4):
//! its vertex data loaded from and stored to the ranks its chunks hash to, the
//! scatter of its edge chunks into update bins (or straight into resident
//! accumulators), and the gather of its update chunks — by the partition's
//! master or by a helper ([`crate::compute`] runs the iterations).

use crate::checkpoint::FailPoint;
use crate::compute::{Ctx, NEVER};
use crate::error::{DistError, Result};
use crate::layout::{damaged_runs, runs, PartitionFinder, RUN_HEADER};
use crate::storage::{self, header, u32_at, ActiveFilter};
use bytemuck::Zeroable;
use outcore_engine::program::EdgeProgram;
use outcore_engine::stream::prefetch;
use outcore_engine::EngineError;
use rayon::prelude::*;
use std::sync::atomic::{AtomicU64, Ordering};

/// One partition's vertex data in memory.
pub(crate) struct Part<V> {
    pub(crate) a: u64,
    pub(crate) vals: Vec<V>,
    pub(crate) eps: Vec<u32>,
    pub(crate) degs: Vec<u32>,
}

/// Loads partition `p`'s vertex data from the vertex chunks' homes (with the
/// out-degrees when `degrees`): every chunk, or those `only` marks (the
/// others are left zeroed, never to be read).
pub(crate) fn load<P: EdgeProgram>(
    ctx: &mut Ctx,
    prog: &P,
    p: u32,
    degrees: bool,
    only: Option<&[bool]>,
) -> Result<Part<P::V>> {
    let plan = ctx.plan;
    let (a, b) = plan.range(p);
    let cnt = (b - a) as usize;
    let vs = std::mem::size_of::<P::V>();
    let mut vals = vec![P::V::zeroed(); cnt];
    let mut eps = vec![NEVER; cnt];
    let mut degs = vec![0u32; if degrees { cnt } else { 0 }];
    for c in 0..plan.vertex_chunks(p) {
        if only.is_some_and(|o| !o[c as usize]) {
            continue;
        }
        let (x, y) = plan.chunk_range(p, c);
        let (i, j) = ((x - a) as usize, (y - a) as usize);
        let blob = ctx.vertex_chunk(storage::GET_STATE, p, c)?.ok_or_else(|| {
            DistError::Protocol(format!(
                "vertex chunk {c} of partition {p} was never written ({})",
                prog.name()
            ))
        })?;
        if blob.len() != (j - i) * (vs + 4) {
            return Err(DistError::Protocol(format!(
                "vertex chunk {c} of partition {p}: {} bytes, {} expected",
                blob.len(),
                (j - i) * (vs + 4)
            )));
        }
        let (vb, eb) = blob.split_at((j - i) * vs);
        bytemuck::cast_slice_mut::<P::V, u8>(&mut vals[i..j]).copy_from_slice(vb);
        bytemuck::cast_slice_mut::<u32, u8>(&mut eps[i..j]).copy_from_slice(eb);
        if degrees {
            fetch_degrees(ctx, p, c, &mut degs[i..j])?;
        }
    }
    Ok(Part { a, vals, eps, degs })
}

pub(crate) fn fetch_degrees(ctx: &mut Ctx, p: u32, c: u32, out: &mut [u32]) -> Result<()> {
    let d = ctx
        .vertex_chunk(storage::GET_DEGREES, p, c)?
        .ok_or_else(|| DistError::Protocol(format!("no degrees for chunk {c} of {p}")))?;
    if d.len() != 4 * out.len() {
        return Err(DistError::Protocol(format!(
            "degrees of chunk {c} of partition {p}: {} bytes, {} expected",
            d.len(),
            4 * out.len()
        )));
    }
    bytemuck::cast_slice_mut::<u32, u8>(out).copy_from_slice(&d);
    Ok(())
}

/// Stores partition `p`'s vertex chunks at their homes: every one, or those
/// `dirty` marks.
pub(crate) fn store<V: bytemuck::Pod>(
    ctx: &mut Ctx,
    p: u32,
    part: &Part<V>,
    dirty: Option<&[bool]>,
) -> Result<()> {
    let plan = ctx.plan;
    for c in 0..plan.vertex_chunks(p) {
        if dirty.is_some_and(|d| !d[c as usize]) {
            continue;
        }
        let (x, y) = plan.chunk_range(p, c);
        let (i, j) = ((x - part.a) as usize, (y - part.a) as usize);
        let mut msg = header(storage::PUT_STATE, p, c, 0);
        msg.extend_from_slice(bytemuck::cast_slice(&part.vals[i..j]));
        msg.extend_from_slice(bytemuck::cast_slice(&part.eps[i..j]));
        let limit = 2 * ctx.t.size();
        ctx.put(plan.vertex_home(p, c), msg, limit)?;
    }
    Ok(())
}

/// A scatter phase's update bins (one per destination partition, stored on a
/// random rank when full), the update bytes sent to each partition, and the
/// accumulators of the partitions this rank masters and keeps in memory from
/// scatter to gather (`resident`: first vertex, accumulators, updates
/// combined), into which their updates are combined at once instead of being
/// stored and read back.
pub(crate) struct Scatter<'a> {
    pub(crate) it: u64,
    /// The scatter's other threads (none: one thread).
    pub(crate) pool: Option<&'a rayon::ThreadPool>,
    pub(crate) bins: Vec<Vec<u8>>,
    pub(crate) sent: Vec<u64>,
    pub(crate) bin_bytes: usize,
    pub(crate) resident: Vec<Option<(u64, Vec<u64>, u64)>>,
}

/// Bytes of one update record: `(v, contribution)`, or, for a program whose
/// edges read their destination's value ([`EdgeProgram::reads_destination`]),
/// the edge itself `(v, u, w, message)`, evaluated in the gather.
pub(crate) fn update_bytes<P: EdgeProgram>(prog: &P) -> usize {
    if prog.reads_destination() {
        20
    } else {
        12
    }
}

impl Scatter<'_> {
    /// Combines update `(v, x)` into partition `q`'s accumulators when they
    /// are kept here, or bins it (inlined: the drain loop's per-update call
    /// was 8% of a one-rank bfs).
    #[inline(always)]
    fn push<P: EdgeProgram>(
        &mut self,
        ctx: &mut Ctx,
        prog: &P,
        q: usize,
        v: u32,
        x: u64,
    ) -> Result<()> {
        if let Some((a, acc, n)) = &mut self.resident[q] {
            let i = (v as u64 - *a) as usize;
            acc[i] = prog.combine(acc[i], x);
            *n += 1;
            return Ok(());
        }
        let bin = self.bin(q);
        bin.extend_from_slice(&v.to_le_bytes());
        bin.extend_from_slice(&x.to_le_bytes());
        self.pushed(ctx, q, 12)
    }

    /// Hints vertex `v`'s accumulator into the cache when partition `q`'s
    /// are kept here (`v` in `q`; nothing otherwise).
    #[inline(always)]
    fn prefetch(&self, q: usize, v: u32) {
        if let Some((a, acc, _)) = &self.resident[q] {
            prefetch(acc, (v as u64).wrapping_sub(*a) as u32);
        }
    }

    /// Combines (or bins) the staged updates `(v, x)`, each target's
    /// accumulator hinted AHEAD updates early; empties `stage`.
    fn drain<P: EdgeProgram>(
        &mut self,
        ctx: &mut Ctx,
        prog: &P,
        finder: &PartitionFinder,
        stage: &mut Vec<(u32, u64)>,
    ) -> Result<()> {
        for &(v, _) in stage.iter().take(AHEAD) {
            self.prefetch(finder.of(v), v);
        }
        for k in 0..stage.len() {
            if let Some(&(v, _)) = stage.get(k + AHEAD) {
                self.prefetch(finder.of(v), v);
            }
            let (v, x) = stage[k];
            self.push(ctx, prog, finder.of(v), v, x)?;
        }
        stage.clear();
        Ok(())
    }

    /// Partition `q`'s bin, its header written when it was empty.
    fn bin(&mut self, q: usize) -> &mut Vec<u8> {
        let bin = &mut self.bins[q];
        if bin.is_empty() {
            bin.reserve_exact(16 + self.bin_bytes);
            bin.extend_from_slice(&header(
                storage::PUT_UPDATES,
                q as u32,
                0,
                2 * self.it as u32,
            ));
        }
        bin
    }

    /// Counts an update of `rec` bytes just added to bin `q`; stores the bin
    /// when another would not fit.
    fn pushed(&mut self, ctx: &mut Ctx, q: usize, rec: usize) -> Result<()> {
        ctx.stats.updates_sent += 1;
        if self.bins[q].len() - 16 + rec > self.bin_bytes {
            self.flush(ctx, q)?;
        }
        Ok(())
    }

    /// An edge `(u, v, w)` with its source's message, for the gather to evaluate.
    fn push_edge(&mut self, ctx: &mut Ctx, q: usize, v: u32, u: u32, w: f32, m: u64) -> Result<()> {
        let bin = self.bin(q);
        bin.extend_from_slice(&v.to_le_bytes());
        bin.extend_from_slice(&u.to_le_bytes());
        bin.extend_from_slice(&w.to_bits().to_le_bytes());
        bin.extend_from_slice(&m.to_le_bytes());
        self.pushed(ctx, q, 20)
    }

    pub(crate) fn flush(&mut self, ctx: &mut Ctx, q: usize) -> Result<()> {
        let bin = std::mem::take(&mut self.bins[q]);
        if bin.is_empty() {
            return Ok(());
        }
        self.sent[q] += (bin.len() - 16) as u64;
        ctx.stats.update_chunks_sent += 1;
        let to = ctx.rng.below(ctx.t.size());
        let limit = 2 * ctx.t.size();
        ctx.put(to, bin, limit)
    }
}

/// Updates between hinting an accumulator into the cache and combining into
/// it (96 against the streaming engine's 32: 5% less scatter time on one rank,
/// Kronecker 20 bfs, where the accumulators are 8 MiB).
const AHEAD: usize = 96;

/// Updates staged before they are combined (their accumulators hinted AHEAD).
const STAGE: usize = 1024;

/// Edges of a chunk below which its scatter stays on one thread.
const PAR_MIN_EDGES: usize = 16384;

/// Edges scattered by all threads between two drains of their deferred
/// updates (for partitions whose accumulators are not kept here); a window
/// holds whole runs, and a run at most one block
/// ([`crate::layout::MAX_BLOCK_RECORDS`] edges or fewer).
const PAR_WINDOW: usize = 65536;

/// Memory the deferred updates of one window take at most.
pub(crate) const PAR_DEFERRED_BYTES: u64 = PAR_WINDOW as u64 * 16;

/// What the threads of a parallel scatter share: the program, partition `p`
/// (vertices `range`), the vertex count `n`, the sources' activity and
/// messages.
struct PieceRun<'a, P> {
    prog: &'a P,
    p: u32,
    range: (u64, u64),
    n: u64,
    act: &'a [bool],
    msgs: &'a [u64],
    weighted: bool,
    finder: &'a PartitionFinder,
}

/// What one thread's piece gave: updates combined per partition, and the
/// updates for partitions whose accumulators are not kept here, in order.
struct Piece {
    combined: Vec<u64>,
    deferred: Vec<(u32, u64)>,
}

/// `acc` seen as atomics, for threads combining into it at once.
fn atomic_view(acc: &mut [u64]) -> &[AtomicU64] {
    const _: () = assert!(
        std::mem::size_of::<AtomicU64>() == std::mem::size_of::<u64>()
            && std::mem::align_of::<AtomicU64>() == std::mem::align_of::<u64>()
    );
    // SAFETY: AtomicU64 has the size and alignment of u64 (asserted above),
    // and the exclusive borrow of `acc` lasts as long as the view, so every
    // access to these words meanwhile goes through the atomics.
    unsafe { std::slice::from_raw_parts(acc.as_ptr() as *const AtomicU64, acc.len()) }
}

/// Combines `x` into `cell` (compare-and-swap until it holds; nothing
/// written when the combination leaves the value as it is).
#[inline]
fn combine_into<P: EdgeProgram>(prog: &P, cell: &AtomicU64, x: u64) {
    let mut old = cell.load(Ordering::Relaxed);
    loop {
        let new = prog.combine(old, x);
        if new == old {
            return;
        }
        match cell.compare_exchange_weak(old, new, Ordering::Relaxed, Ordering::Relaxed) {
            Ok(_) => return,
            Err(now) => old = now,
        }
    }
}

/// An edge chunk's runs (targets of `tb` bytes, of partition `p`) cut into
/// windows of at most [`PAR_WINDOW`] edges (a longer run alone), each cut
/// into about `threads` pieces of whole runs; and the edges they hold.
fn windows(data: &[u8], tb: usize, threads: usize, p: u32) -> Result<(Vec<Vec<&[u8]>>, u64)> {
    // Each run's end: its byte offset and the edges up to it.
    let mut ends: Vec<(usize, usize)> = Vec::new();
    let (mut at, mut edges) = (0, 0);
    for r in runs(data, tb) {
        let (_, t) = r.map_err(|e| damaged_runs(p, e))?;
        at += RUN_HEADER + t.len();
        edges += t.len() / tb;
        ends.push((at, edges));
    }
    let mut out = Vec::new();
    let (mut k, mut start, mut base) = (0, 0, 0);
    while k < ends.len() {
        let mut j = k + 1;
        while j < ends.len() && ends[j].1 - base <= PAR_WINDOW {
            j += 1;
        }
        let per = (ends[j - 1].1 - base).div_ceil(threads);
        let mut pieces = Vec::with_capacity(threads + 1);
        let (mut from, mut done) = (start, base);
        for (x, &(end, upto)) in ends.iter().enumerate().take(j).skip(k) {
            if upto - done >= per || x == j - 1 {
                pieces.push(&data[from..end]);
                (from, done) = (end, upto);
            }
        }
        out.push(pieces);
        (start, base, k) = (ends[j - 1].0, ends[j - 1].1, j);
    }
    Ok((out, edges as u64))
}

/// The scatter of one chunk on the pool's threads: windows of at most
/// [`PAR_WINDOW`] edges, each cut into one piece of whole runs per thread.
/// Updates for partitions whose accumulators are kept here are combined at
/// once (atomically); the others are deferred and binned in edge order after
/// each window, on this thread. The first error, in edge order, is
/// returned; otherwise the edges the chunk holds.
fn scatter_parallel<P: EdgeProgram>(
    ctx: &mut Ctx,
    sc: &mut Scatter<'_>,
    pool: &rayon::ThreadPool,
    run: &PieceRun<'_, P>,
    data: &[u8],
    tb: usize,
) -> Result<u64> {
    let threads = pool.current_num_threads();
    let (windows, edges) = windows(data, tb, threads, run.p)?;
    for pieces in windows {
        let views: Vec<Option<(u64, &[AtomicU64])>> = sc
            .resident
            .iter_mut()
            .map(|r| r.as_mut().map(|(a, acc, _)| (*a, atomic_view(acc))))
            .collect();
        let outs: Vec<Result<Piece>> = pool.install(|| {
            pieces
                .par_iter()
                .map(|piece| scatter_piece(run, &views, piece, tb))
                .collect()
        });
        drop(views);
        for out in outs {
            let out = out?;
            for (q, c) in out.combined.iter().enumerate() {
                if let Some((_, _, k)) = &mut sc.resident[q] {
                    *k += c;
                }
            }
            for (v, x) in out.deferred {
                sc.push(ctx, run.prog, run.finder.of(v), v, x)?;
            }
        }
    }
    Ok(edges)
}

/// Calls `f(u, v, w, i)` for every edge of an active source in `data` (an
/// edge chunk's runs, targets of `tb` bytes; `i` the source's index in the
/// partition), checking every source and target it looks at; an inactive
/// source's run is passed over in one step. Returns the edges `data` holds.
#[inline]
fn for_active_edges<P: EdgeProgram>(
    run: &PieceRun<'_, P>,
    data: &[u8],
    tb: usize,
    mut f: impl FnMut(u32, u32, f32, usize) -> Result<()>,
) -> Result<u64> {
    let (p, (a, b), n) = (run.p, run.range, run.n);
    let mut edges = 0u64;
    for r in runs(data, tb) {
        let (u, targets) = r.map_err(|e| damaged_runs(p, e))?;
        edges += (targets.len() / tb) as u64;
        if (u as u64) < a || u as u64 >= b {
            return Err(DistError::Layout(format!(
                "an edge chunk of partition {p} (vertices {a}..{b}) holds an edge from {u}: the layout is damaged"
            )));
        }
        let i = (u as u64 - a) as usize;
        if !run.act[i] {
            continue;
        }
        for t in targets.chunks_exact(tb) {
            let v = u32_at(t, 0);
            if v as u64 >= n {
                return Err(DistError::Layout(format!(
                    "an edge chunk of partition {p} holds edge ({u}, {v}) of a store with {n} vertices: the layout is damaged"
                )));
            }
            let w = if run.weighted {
                f32::from_bits(u32_at(t, 1))
            } else {
                1.0
            };
            f(u, v, w, i)?;
        }
    }
    Ok(edges)
}

/// The program's contribution along edge `(u, v, w)` with message `m`.
fn contribution<P: EdgeProgram>(prog: &P, m: u64, u: u32, v: u32, w: f32) -> Result<u64> {
    prog.edge(m, u, w).ok_or_else(|| {
        DistError::Engine(EngineError::BadEdge {
            program: prog.name(),
            u,
            v,
            w,
        })
    })
}

/// One thread's piece of a window (whole runs, targets of `tb` bytes).
fn scatter_piece<P: EdgeProgram>(
    run: &PieceRun<'_, P>,
    views: &[Option<(u64, &[AtomicU64])>],
    data: &[u8],
    tb: usize,
) -> Result<Piece> {
    let prog = run.prog;
    let mut out = Piece {
        combined: vec![0; views.len()],
        deferred: Vec::new(),
    };
    let mut stage: Vec<(u32, u64)> = Vec::with_capacity(STAGE);
    let drain = |stage: &mut Vec<(u32, u64)>, out: &mut Piece| {
        let hint = |v: u32| {
            if let Some((a0, acc)) = views[run.finder.of(v)] {
                prefetch(acc, (v as u64).wrapping_sub(a0) as u32);
            }
        };
        for &(v, _) in stage.iter().take(AHEAD) {
            hint(v);
        }
        for k in 0..stage.len() {
            if let Some(&(v, _)) = stage.get(k + AHEAD) {
                hint(v);
            }
            let (v, x) = stage[k];
            let q = run.finder.of(v);
            match views[q] {
                Some((a0, acc)) => {
                    combine_into(prog, &acc[(v as u64 - a0) as usize], x);
                    out.combined[q] += 1;
                }
                None => out.deferred.push((v, x)),
            }
        }
        stage.clear();
    };
    for_active_edges(run, data, tb, |u, v, w, i| {
        stage.push((v, contribution(prog, run.msgs[i], u, v, w)?));
        if stage.len() == STAGE {
            drain(&mut stage, &mut out);
        }
        Ok(())
    })?;
    drain(&mut stage, &mut out);
    Ok(out)
}

/// Which vertices of `part` are active in iteration `it`.
pub(crate) fn active_of<P: EdgeProgram>(prog: &P, part: &Part<P::V>, it: u64) -> Vec<bool> {
    part.eps
        .iter()
        .map(|&e| prog.all_active() || e == (it - 1) as u32)
        .collect()
}

/// Streams partition `p`'s edge chunks and turns the edges of the active
/// sources into updates (the master, or a helper: `master` is false).
pub(crate) fn scatter_part<P: EdgeProgram>(
    ctx: &mut Ctx,
    prog: &P,
    p: u32,
    part: &Part<P::V>,
    act: &[bool],
    sc: &mut Scatter<'_>,
    master: bool,
) -> Result<()> {
    let plan = ctx.plan;
    let it = sc.it;
    let degrees = prog.uses_degrees();
    let msgs: Vec<u64> = (0..act.len())
        .map(|i| {
            if act[i] {
                prog.message(&part.vals[i], if degrees { part.degs[i] } else { 0 })
            } else {
                0
            }
        })
        .collect();
    let tb = plan.target_bytes();
    let (a, b) = plan.range(p);
    let n = plan.vertices;
    let weighted = plan.weighted && prog.weighted();
    let finder = plan.partition_finder();
    let mut stage: Vec<(u32, u64)> = Vec::with_capacity(STAGE);
    let mut f = |ctx: &mut Ctx, data: &[u8]| -> Result<()> {
        ctx.fail_point(FailPoint::Phase(2 * it as u32))?;
        ctx.stats.edge_chunks_read += 1;
        if master {
            ctx.board.lock().expect("board").consumed(data.len() as u64);
        } else {
            ctx.stats.stolen_chunks += 1;
        }
        let run = PieceRun {
            prog,
            p,
            range: (a, b),
            n,
            act,
            msgs: &msgs,
            weighted,
            finder: &finder,
        };
        if let Some(pool) = sc.pool {
            if !prog.reads_destination() && data.len() >= PAR_MIN_EDGES * tb {
                ctx.stats.edges_processed += scatter_parallel(ctx, sc, pool, &run, data, tb)?;
                return Ok(());
            }
        }
        // The active edges' updates are staged, so that their targets'
        // accumulators are hinted into the cache AHEAD updates before they
        // are combined, across runs.
        let edges = for_active_edges(&run, data, tb, |u, v, w, i| {
            if prog.reads_destination() {
                return sc.push_edge(ctx, finder.of(v), v, u, w, msgs[i]);
            }
            stage.push((v, contribution(prog, msgs[i], u, v, w)?));
            if stage.len() == STAGE {
                sc.drain(ctx, prog, &finder, &mut stage)?;
            }
            Ok(())
        })?;
        sc.drain(ctx, prog, &finder, &mut stage)?;
        ctx.stats.edges_processed += edges;
        Ok(())
    };
    // Chunks with no active source are passed over by the storage engines.
    let filter = if act.contains(&false) {
        ActiveFilter::of(act).encode()
    } else {
        Vec::new()
    };
    ctx.stream(storage::GET_EDGES, p, 2 * it as u32, &filter, &mut f)
}

/// Streams partition `p`'s update chunks of iteration `it` into `acc` (the
/// master, or a helper); `dst` holds the partition's values when the program's
/// edges read them (its updates are edges, evaluated here).
pub(crate) fn gather_part<P: EdgeProgram>(
    ctx: &mut Ctx,
    prog: &P,
    p: u32,
    it: u64,
    acc: &mut [u64],
    dst: Option<&[P::V]>,
    master: bool,
) -> Result<()> {
    let (a, _) = ctx.plan.range(p);
    let cnt = acc.len() as u64;
    let rec = update_bytes(prog);
    if prog.reads_destination() && dst.is_none_or(|d| d.len() != acc.len()) {
        return Err(DistError::Invalid(format!(
            "{}: the gather of partition {p} needs its vertex values",
            prog.name()
        )));
    }
    let mut f = |ctx: &mut Ctx, data: &[u8]| -> Result<()> {
        ctx.fail_point(FailPoint::Phase(2 * it as u32 + 1))?;
        ctx.stats.update_chunks_read += 1;
        if master {
            ctx.board.lock().expect("board").consumed(data.len() as u64);
        } else {
            ctx.stats.stolen_chunks += 1;
        }
        if !data.len().is_multiple_of(rec) {
            return Err(DistError::Protocol(format!(
                "an update chunk of partition {p} holds {} bytes",
                data.len()
            )));
        }
        // Accumulators are hinted into the cache AHEAD updates early.
        let target = |k: usize| (u32_at(&data[k * rec..], 0) as u64).wrapping_sub(a) as u32;
        let recs = data.len() / rec;
        for k in 0..AHEAD.min(recs) {
            prefetch(acc, target(k));
        }
        for (k, r) in data.chunks_exact(rec).enumerate() {
            if k + AHEAD < recs {
                prefetch(acc, target(k + AHEAD));
            }
            let v = u32_at(r, 0) as u64;
            let i = v.checked_sub(a).filter(|&i| i < cnt).ok_or_else(|| {
                DistError::Protocol(format!("an update for vertex {v} reached partition {p}"))
            })? as usize;
            let x = match dst {
                Some(d) if rec == 20 => {
                    let (u, w) = (u32_at(r, 1), f32::from_bits(u32_at(r, 2)));
                    let m = u64::from_le_bytes(r[12..20].try_into().expect("8"));
                    prog.edge_to(m, u, w, &d[i]).ok_or_else(|| {
                        DistError::Engine(EngineError::BadEdge {
                            program: prog.name(),
                            u,
                            v: v as u32,
                            w,
                        })
                    })?
                }
                _ => u64::from_le_bytes(r[4..12].try_into().expect("8")),
            };
            acc[i] = prog.combine(acc[i], x);
        }
        Ok(())
    };
    ctx.stream(storage::GET_UPDATES, p, 2 * it as u32 + 1, &[], &mut f)
}

#[cfg(test)]
mod tests {
    use super::{windows, PAR_WINDOW};
    use crate::layout::{runs, ChunkEncoder};

    /// Windows and pieces cover a chunk's runs exactly once, in order, each
    /// piece whole runs; a window holds at most PAR_WINDOW edges, and is cut
    /// into about one piece per thread.
    #[test]
    fn windows_cut_a_chunk_at_run_boundaries() {
        for (threads, block) in [(1, 8192), (2, 8192), (3, 64), (4, 50_000)] {
            let mut enc = ChunkEncoder::new(64 << 20, 4, block);
            let mut want = Vec::new();
            // Runs of 1 to 30,000 edges.
            for u in 0..400u32 {
                for k in 0..(u * u * 7 % 30_000 + 1) {
                    enc.push(u, k, 0);
                    want.push((u, k));
                }
            }
            let data = enc.flush(|c| c.to_vec());
            let (ws, edges) = windows(&data, 4, threads, 0).unwrap();
            assert_eq!(edges as usize, want.len());
            let mut got = Vec::new();
            for w in &ws {
                assert!(
                    w.len() <= threads + 1,
                    "{threads} threads: {} pieces",
                    w.len()
                );
                let mut in_window = 0;
                let mut runs_in_window = 0;
                for piece in w {
                    for r in runs(piece, 4) {
                        let (u, t) = r.unwrap();
                        runs_in_window += 1;
                        in_window += t.len() / 4;
                        got.extend(
                            t.chunks_exact(4)
                                .map(|x| (u, u32::from_le_bytes(x.try_into().unwrap()))),
                        );
                    }
                }
                assert!(
                    in_window <= PAR_WINDOW || runs_in_window == 1,
                    "{in_window}"
                );
            }
            assert_eq!(got, want);
        }
    }

    /// Damaged bytes are refused by name, not read past.
    #[test]
    fn windows_refuse_a_damaged_chunk() {
        let mut enc = ChunkEncoder::new(1 << 20, 4, 8192);
        for k in 0..100 {
            enc.push(7, k, 0);
        }
        let mut data = enc.flush(|c| c.to_vec());
        data[4..8].copy_from_slice(&101u32.to_le_bytes());
        let e = windows(&data, 4, 2, 3).unwrap_err().to_string();
        assert!(
            e.contains("partition 3") && e.contains("claims 101 edges"),
            "{e}"
        );
    }
}
