//! One partition's share of an iteration on the computation engine (Chaos §4):
//! its vertex data loaded from and stored to the ranks its chunks hash to, the
//! scatter of its edge chunks into update bins (or straight into resident
//! accumulators), and the gather of its update chunks — by the partition's
//! master or by a helper ([`crate::compute`] runs the iterations).

use crate::checkpoint::FailPoint;
use crate::compute::{Ctx, NEVER};
use crate::error::{DistError, Result};
use crate::layout::PartitionFinder;
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
            let q = finder.of(v);
            if let Some((a, acc, n)) = &mut self.resident[q] {
                let i = (v as u64 - *a) as usize;
                acc[i] = prog.combine(acc[i], x);
                *n += 1;
                continue;
            }
            self.push(ctx, prog, q, v, x)?;
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

/// Records of `rest` (records of `rb` bytes, sources ascending) that start
/// with source `u`: the first four looked at one by one (most runs are
/// short), then found by galloping and bisecting.
#[inline]
fn run_end(rest: &[u8], rb: usize, u: u32) -> usize {
    let n = rest.len() / rb;
    let src = |k: usize| u32_at(&rest[k * rb..], 0);
    for k in 1..5 {
        if k >= n || src(k) != u {
            return k.min(n);
        }
    }
    // Invariant: src(lo) == u; hi == n or src(hi) != u.
    let (mut lo, mut step) = (4, 4);
    let mut hi = loop {
        let k = lo + step;
        if k >= n {
            break n;
        }
        if src(k) != u {
            break k;
        }
        lo = k;
        step *= 2;
    };
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if src(mid) == u {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    hi
}

/// Records of a chunk below which its scatter stays on one thread.
const PAR_MIN_RECORDS: usize = 16384;

/// Records scattered by all threads between two drains of their deferred
/// updates (for partitions whose accumulators are not kept here).
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

/// The scatter of one chunk on the pool's threads: windows of [`PAR_WINDOW`]
/// records, each cut into one piece per thread (records are independent:
/// a source's run cut in two is looked at twice). Updates for partitions
/// whose accumulators are kept here are combined at once (atomically);
/// the others are deferred and binned in record order after each window,
/// on this thread. The first error, in record order, is returned.
fn scatter_parallel<P: EdgeProgram>(
    ctx: &mut Ctx,
    sc: &mut Scatter<'_>,
    pool: &rayon::ThreadPool,
    run: &PieceRun<'_, P>,
    data: &[u8],
    rb: usize,
) -> Result<()> {
    let threads = pool.current_num_threads();
    for window in data.chunks(PAR_WINDOW * rb) {
        let recs = window.len() / rb;
        let per = recs.div_ceil(threads);
        let pieces: Vec<&[u8]> = window.chunks(per * rb).collect();
        let views: Vec<Option<(u64, &[AtomicU64])>> = sc
            .resident
            .iter_mut()
            .map(|r| r.as_mut().map(|(a, acc, _)| (*a, atomic_view(acc))))
            .collect();
        let outs: Vec<Result<Piece>> = pool.install(|| {
            pieces
                .par_iter()
                .map(|piece| scatter_piece(run, &views, piece, rb))
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
    Ok(())
}

/// Calls `f(u, v, w, i)` for every edge of an active source in `data`
/// (records of `rb` bytes, sources ascending; `i` the source's index in the
/// partition), checking every source and target it looks at. Records come in
/// runs of one source (a chunk is cut from the partition's out-CSR in order,
/// and served blocks keep that order): an inactive source's run is passed
/// over by galloping to its end, a few looks rather than one per edge.
fn for_active_edges<P: EdgeProgram>(
    run: &PieceRun<'_, P>,
    data: &[u8],
    rb: usize,
    mut f: impl FnMut(u32, u32, f32, usize) -> Result<()>,
) -> Result<()> {
    let (p, (a, b), n) = (run.p, run.range, run.n);
    let mut rest = data;
    while !rest.is_empty() {
        let u = u32_at(rest, 0);
        if (u as u64) < a || u as u64 >= b {
            return Err(DistError::Layout(format!(
                "an edge chunk of partition {p} (vertices {a}..{b}) holds an edge from {u}: the layout is damaged"
            )));
        }
        let i = (u as u64 - a) as usize;
        if !run.act[i] {
            rest = &rest[rb * run_end(rest, rb, u)..];
            continue;
        }
        let mut len = 0;
        while len < rest.len() && u32_at(&rest[len..], 0) == u {
            len += rb;
        }
        let (recs, tail) = rest.split_at(len);
        rest = tail;
        for r in recs.chunks_exact(rb) {
            let v = u32_at(r, 1);
            if v as u64 >= n {
                return Err(DistError::Layout(format!(
                    "an edge chunk of partition {p} holds edge ({u}, {v}) of a store with {n} vertices: the layout is damaged"
                )));
            }
            let w = if run.weighted {
                f32::from_bits(u32_at(r, 2))
            } else {
                1.0
            };
            f(u, v, w, i)?;
        }
    }
    Ok(())
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

/// One thread's piece of a window (records of `rb` bytes, sources ascending).
fn scatter_piece<P: EdgeProgram>(
    run: &PieceRun<'_, P>,
    views: &[Option<(u64, &[AtomicU64])>],
    data: &[u8],
    rb: usize,
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
    for_active_edges(run, data, rb, |u, v, w, i| {
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
    let rb = plan.record_bytes() as usize;
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
        if !data.len().is_multiple_of(rb) {
            return Err(DistError::Layout(format!(
                "an edge chunk of partition {p} holds {} bytes, not whole records",
                data.len()
            )));
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
            if !prog.reads_destination() && data.len() / rb >= PAR_MIN_RECORDS {
                scatter_parallel(ctx, sc, pool, &run, data, rb)?;
                ctx.stats.edges_processed += (data.len() / rb) as u64;
                return Ok(());
            }
        }
        // The active edges' updates are staged, so that their targets'
        // accumulators are hinted into the cache AHEAD updates before they
        // are combined, across runs.
        for_active_edges(&run, data, rb, |u, v, w, i| {
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
        ctx.stats.edges_processed += (data.len() / rb) as u64;
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
    use super::run_end;

    /// The galloping search finds the same run end as a scan, for runs of
    /// every length at every position, with records of 8 and 12 bytes.
    #[test]
    fn run_end_is_the_first_record_of_another_source() {
        for rb in [8usize, 12] {
            for lens in [
                vec![1usize],
                vec![3, 1],
                vec![5, 2, 40],
                vec![64, 1, 1, 200, 7],
                vec![4, 4, 9],
            ] {
                let mut data = Vec::new();
                for (s, &len) in lens.iter().enumerate() {
                    for k in 0..len {
                        let mut r = vec![0u8; rb];
                        r[..4].copy_from_slice(&(10 + s as u32).to_le_bytes());
                        r[4..8].copy_from_slice(&(k as u32).to_le_bytes());
                        data.extend_from_slice(&r);
                    }
                }
                let mut at = 0;
                for (s, &len) in lens.iter().enumerate() {
                    // From every position inside the run.
                    for k in 0..len {
                        let rest = &data[(at + k) * rb..];
                        assert_eq!(
                            run_end(rest, rb, 10 + s as u32),
                            len - k,
                            "{lens:?} {rb} {s} {k}"
                        );
                    }
                    at += len;
                }
            }
        }
    }
}
