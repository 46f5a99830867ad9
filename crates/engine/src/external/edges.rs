//! One partition's edge pass (§4.2 steps 2-4, module docs of [`super`]): a
//! reader thread streams the source table in chunks, picks the active sources,
//! reads their edges in windows (whole or selectively, by the cost model) and
//! hands each window to an applying thread, which applies it into its own
//! accumulator while the reader fetches the next one.
//!
//! # Pipeline
//! Window w goes to applier w % A through a rendezvous channel of its own (A:
//! the run's threads, fewer when the chunk memory does not hold A + 1
//! windows), so at most A + 1 windows are alive: one per applier and the one
//! being read; and each applier sums the same windows on every run. An
//! applier takes whole windows: splitting each window among the threads
//! (rayon, a fork and join per window) cost more than the edges where windows
//! are small — Kronecker 24 bfs at 130 partitions applies windows of one block
//! of 4096 source entries, ~11K edges, and the pool's idle threads yielding
//! between windows took a tenth of the run's samples (warm, 2 threads, two
//! runs each: 14.4, 14.0 -> 10.2, 10.7 s). The plan
//! sizes chunks and windows for that ([`super::plan::Plan::in_flight`]). Window
//! buffers (with their lists of parts) and chunks whose windows are all applied
//! come back to the reader through a second channel and are reused, also by the
//! next partitions' passes ([`EdgeBufs`]), so a run allocates at most as many as
//! were alive at a time, each at its largest size once: fresh allocations, whose
//! pages fault in on first use, and growing ones, copied as they grow, took over
//! a third of a run's time (pagerank on Kronecker 22 at a quarter of its vertex
//! data, warm: 2.1M page faults, 10.8 s; with these and the accumulators
//! reused, 0.36M and 7.7-8.6 s). The reader's time in reads is
//! `io_seconds`; the applying side's is `compute_seconds`, and
//! `edge_wait_seconds` the time it waited for a window (the part of the reads
//! not overlapped), both the appliers' mean.
//!
//! Before reading a window the reader asks the kernel for the chunk's next
//! one (`POSIX_FADV_WILLNEED`), so the device reads it while this one is
//! read and applied (Kronecker 24 bfs at 32M, five alternating cold runs:
//! 10.51 -> 9.79 s median; at 16M, when the run was bound by computing, a
//! hint of the next 1-4 MiB did not pay: see docs/benchmarks-vpart.md).
//!
//! A narrow program's chunk keeps only its active sources (those in the
//! mirror list, [`SourceDecoder::decode_picks`]); the other entries are
//! decoded for their edge counts alone, never stored nor scanned again.

use super::plan::{Plan, LIST_PIECE, MBLOCK};
use super::{mirror_active, EdgeReads, ExternalEngine, ExternalStats, MirrorRec, Scratch};
use crate::error::{EngineError, Result};
use crate::program::EdgeProgram;
use outcore_store::pagesums::SUM_GROUP;
use outcore_store::vpart::{EdgeCodec, Part, SourceDecoder, MAX_SOURCE_BYTES};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::sync::Arc;
use std::time::Instant;

/// A window of edges ready to apply: the chunk's sources and mirror entries
/// (shared by the chunk's windows), the edge bytes and the active sources'
/// parts inside the window.
struct Work {
    chunk: Arc<Chunk>,
    buf: Vec<u8>,
    skew: usize,
    /// The window's edges `start..end`, in `buf[skew..skew + len]`.
    start: u64,
    end: u64,
    len: usize,
    /// (source index in chunk, first edge, end edge).
    parts: Vec<(u32, u64, u64)>,
    edges: u64,
}

/// A chunk of a source table: its entries (id, edges into the partition) as
/// decoded, and their mirror entries.
#[derive(Default)]
struct Chunk {
    srcs: Vec<[u32; 2]>,
    mir: Vec<MirrorRec>,
}

impl Chunk {
    fn srcs(&self) -> &[[u32; 2]] {
        &self.srcs
    }
}

/// Buffers handed back by the applying side for the reader to reuse (a fresh
/// allocation's pages fault in on first touch, and a growing one is copied:
/// measured, over half the external engine's page faults): a window's edge
/// bytes and parts, or a chunk whose windows are all applied.
enum Free {
    Window(Vec<u8>, Parts),
    Chunk(Chunk),
}

/// A window's parts: (source index in chunk, first edge, end edge).
type Parts = Vec<(u32, u64, u64)>;

/// The edge pass's buffers, kept from one partition's pass to the next (at
/// most as many of each as were alive at a time): windows' edge bytes and
/// parts, chunks, and the reader's active-source list.
#[derive(Default)]
pub(super) struct EdgeBufs {
    windows: Vec<(Vec<u8>, Parts)>,
    chunks: Vec<Chunk>,
    act: Vec<(u32, u64, u32)>,
    /// The reader's bytes of a chunk's source entries as read (widened to
    /// whole checksum groups), decoded into the chunk.
    raw: Vec<u8>,
    /// A piece of the mirror list being read (narrow programs' lists).
    list: Vec<u64>,
    /// A chunk's list entries: positions in the chunk and mirror entries.
    picks: Vec<u32>,
    recs: Vec<MirrorRec>,
}

/// The reader's place in partition q's mirror list of the previous
/// iteration ([`super::Scratch::lists`]): entries `next..len` are still to
/// come, `buf[at..]` the ones read of them.
struct ListCursor {
    next: u64,
    len: u64,
    at: usize,
}

impl EdgeBufs {
    fn take_back(&mut self, free: &Receiver<Free>) {
        for f in free.try_iter() {
            match f {
                Free::Window(b, p) => self.windows.push((b, p)),
                Free::Chunk(c) => self.chunks.push(c),
            }
        }
    }
}

/// The reader's side of the appliers' channels: window w goes to applier
/// `w % appliers` (so each applier's windows, and its accumulator's sums, are
/// the same from run to run).
struct Dispatch {
    txs: Vec<SyncSender<Result<Work>>>,
    next: usize,
}

impl Dispatch {
    /// Sends to the next applier; `Err` when it has stopped.
    fn send(&mut self, w: Result<Work>) -> std::result::Result<(), ()> {
        let t = self.next;
        self.next = (t + 1) % self.txs.len();
        self.txs[t].send(w).map_err(|_| ())
    }
}

/// One applier's part of a partition's edge pass.
#[derive(Default)]
struct Applied {
    /// Seconds applying windows and waiting for them.
    compute: f64,
    wait: f64,
    edges: u64,
    /// Windows applied.
    windows: u64,
    /// The first bad edge, with its window's place in the pass.
    bad: Option<(u64, (u32, u32, f32))>,
    /// The reader's error, when this applier received it.
    err: Option<EngineError>,
}

/// The reader's counters, added to the run's at the end.
#[derive(Default)]
struct ReadCounts {
    chunks_skipped: u64,
    chunks_selective: u64,
    chunks_whole: u64,
    source_bytes_read: u64,
    edge_bytes_read: u64,
    io_seconds: f64,
    active_sources: u64,
}

/// What one partition's edge pass works on: the program, the scratch state and
/// plan, partition q and iteration it.
pub(super) struct Pass<'a, P> {
    pub(super) prog: &'a P,
    pub(super) st: &'a Scratch<'a>,
    pub(super) plan: &'a Plan,
    pub(super) q: u32,
    pub(super) it: u64,
}

impl<P> Clone for Pass<'_, P> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<P> Copy for Pass<'_, P> {}

impl ExternalEngine<'_> {
    /// Applies every active source's edges into partition q's accumulators
    /// (one per thread); returns (active sources, edges applied).
    pub(super) fn stream_edges<P: EdgeProgram>(
        &self,
        pass: Pass<'_, P>,
        accs: &mut [Vec<u64>],
        bufs: &mut EdgeBufs,
        stats: &mut ExternalStats,
    ) -> Result<(u64, u64)> {
        let (prog, q) = (pass.prog, pass.q);
        let qu = q as usize;
        let nd = self.layout.record.dests[qu];
        let appliers = (pass.plan.appliers as usize).clamp(1, accs.len());
        let codec = self.layout.codec();
        let weighted = self.layout.weighted && prog.weighted();
        let narrow = prog.narrow_messages();
        // One rendezvous channel per applier: window w goes to applier
        // w % appliers, so each holds one window and the reader one.
        let (txs, rxs): (Vec<_>, Vec<_>) = (0..appliers)
            .map(|_| sync_channel::<Result<Work>>(0))
            .unzip();
        let (free_tx, free_rx) = sync_channel::<Free>(2 * pass.plan.in_flight as usize);
        let mut rbufs = std::mem::take(bufs);
        let (counts, done) = std::thread::scope(|sc| {
            let reader = super::spawn(sc, "vpart-reader", move || {
                let mut n = ReadCounts::default();
                let mut out = Dispatch { txs, next: 0 };
                if let Err(e) = self.read_edges(pass, &mut out, &free_rx, &mut rbufs, &mut n) {
                    // A read error is the last item an applier receives.
                    let _ = out.send(Err(e));
                }
                (n, rbufs, free_rx)
            });
            let workers: Vec<_> = rxs
                .into_iter()
                .zip(accs.iter_mut())
                .enumerate()
                .map(|(t, (rx, acc))| {
                    let free_tx = free_tx.clone();
                    super::spawn(sc, "vpart-apply", move || {
                        let mut d = Applied::default();
                        loop {
                            let tw = Instant::now();
                            let Ok(w) = rx.recv() else { break };
                            d.wait += tw.elapsed().as_secs_f64();
                            let Work {
                                chunk,
                                buf,
                                skew,
                                start,
                                end,
                                len,
                                parts,
                                edges,
                            } = match w {
                                Ok(w) => w,
                                Err(e) => {
                                    d.err = Some(e);
                                    break;
                                }
                            };
                            let tc = Instant::now();
                            let win = Window {
                                buf: &buf[skew..skew + len],
                                end,
                                codec,
                                weighted,
                                base: 8 * codec.byte_range(start, end).0,
                                rbits: codec.record_bits(),
                            };
                            let ctx = SrcCtx {
                                srcs: chunk.srcs(),
                                mir: &chunk.mir,
                                narrow,
                            };
                            let b = apply_parts(prog, &win, &ctx, &parts, acc);
                            d.compute += tc.elapsed().as_secs_f64();
                            d.edges += edges;
                            if let Some(b) = b {
                                // The window's place in the pass: the first bad
                                // edge of all appliers is reported.
                                d.bad = Some((d.windows * appliers as u64 + t as u64, b));
                                break;
                            }
                            d.windows += 1;
                            // The buffers back to the reader (gone when it has
                            // finished); the chunk once its last window is
                            // applied.
                            let _ = free_tx.try_send(Free::Window(buf, parts));
                            if let Ok(c) = Arc::try_unwrap(chunk) {
                                let _ = free_tx.try_send(Free::Chunk(c));
                            }
                        }
                        // Dropping the receiver stops the reader when this
                        // applier ended early.
                        drop(rx);
                        d
                    })
                })
                .collect();
            let done: Vec<Applied> = workers
                .into_iter()
                .map(|w| w.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
                .collect();
            let (counts, rbufs, free_rx) = reader
                .join()
                .unwrap_or_else(|p| std::panic::resume_unwind(p));
            // The buffers for the next partition's pass, those handed back
            // after the reader finished included.
            *bufs = rbufs;
            drop(free_tx);
            bufs.take_back(&free_rx);
            (counts, done)
        });
        stats.chunks_skipped += counts.chunks_skipped;
        stats.chunks_selective += counts.chunks_selective;
        stats.chunks_whole += counts.chunks_whole;
        stats.source_bytes_read += counts.source_bytes_read;
        stats.edge_bytes_read += counts.edge_bytes_read;
        stats.io_seconds += counts.io_seconds;
        let mut part_edges = 0u64;
        let mut bad: Option<(u64, (u32, u32, f32))> = None;
        for d in &done {
            // The applying side's times: the appliers' mean.
            stats.compute_seconds += d.compute / appliers as f64;
            stats.edge_wait_seconds += d.wait / appliers as f64;
            part_edges += d.edges;
            if let Some(b) = d.bad {
                if bad.is_none_or(|x| b.0 < x.0) {
                    bad = Some(b);
                }
            }
        }
        stats.edges_processed += part_edges;
        if let Some(e) = done.into_iter().find_map(|d| d.err) {
            return Err(e);
        }
        if let Some((_, (u, local, w))) = bad {
            if local == u32::MAX {
                return Err(EngineError::Store(outcore_store::StoreError::Corrupt {
                    file: self
                        .store
                        .dir()
                        .join(outcore_store::vpart::file_name(q, "edges")),
                    reason: format!(
                        "an edge of vertex {u} names a destination beyond the partition's {nd}"
                    ),
                }));
            }
            let v: Vec<u32> = self.layout.read(Part::Dests, qu, 4 * local as u64, 1)?;
            return Err(EngineError::BadEdge {
                program: prog.name(),
                u,
                v: v[0],
                w,
            });
        }
        Ok((counts.active_sources, part_edges))
    }

    /// The reader: chunks of q's source table with the mirrors' slot
    /// `(it - 1) % 2`, the active sources' edges in windows, sent to `tx` until
    /// the table ends or the receiver is gone (counters in `n`).
    fn read_edges<P: EdgeProgram>(
        &self,
        pass: Pass<'_, P>,
        tx: &mut Dispatch,
        free: &Receiver<Free>,
        bufs: &mut EdgeBufs,
        n: &mut ReadCounts,
    ) -> Result<()> {
        let Pass {
            prog,
            st,
            plan,
            q,
            it,
        } = pass;
        let qu = q as usize;
        let nm = self.layout.record.mirrors[qu];
        let codec = self.layout.codec();
        let bytes_of = |e: u64| codec.payload_bytes(e) as f64;
        let slot_prev = (it - 1) % 2;
        let narrow = prog.narrow_messages();
        let all = prog.all_active();
        let skippable = narrow && !all;
        let (lat, bw) = self.costs;
        let mut e_off = 0u64; // edge index of the chunk's first source
        let mut c0 = 0u64;
        let touched = &st.touched[qu][slot_prev as usize];
        let ce = plan.chunk_entries as usize;
        let mut act = std::mem::take(&mut bufs.act);
        act.reserve_exact(ce);
        let mut list = std::mem::take(&mut bufs.list);
        list.clear();
        let mut picks = std::mem::take(&mut bufs.picks);
        let mut recs = std::mem::take(&mut bufs.recs);
        let mut cur = ListCursor {
            next: 0,
            len: st.list_len[qu][slot_prev as usize].load(std::sync::atomic::Ordering::Relaxed),
            at: 0,
        };
        while c0 < nm {
            let mut c = (nm - c0).min(plan.chunk_entries);
            if skippable {
                // A run of blocks none of whose entries was written since the
                // slot's last clearing (none can read as active) is passed over;
                // otherwise the chunk is the run of touched blocks from here (at
                // most a chunk's worth), so only those are read.
                let b0 = c0 / MBLOCK;
                let nb = nm.div_ceil(MBLOCK);
                let is = |b: u64| touched.get(b as u32);
                let first = is(b0);
                let mut b1 = b0 + 1;
                while b1 < nb && is(b1) == first && (!first || (b1 - b0) * MBLOCK < c) {
                    b1 += 1;
                }
                c = (b1 * MBLOCK).min(nm) - c0;
                if !first {
                    n.chunks_skipped += 1;
                    e_off = st.blocks[qu].edges[b1 as usize];
                    c0 += c;
                    continue;
                }
            }
            let b0 = c0 / MBLOCK;
            debug_assert_eq!(e_off, st.blocks[qu].edges[b0 as usize]);
            bufs.take_back(free);
            let mut ch = bufs.chunks.pop().unwrap_or_else(|| Chunk {
                srcs: Vec::with_capacity(ce),
                mir: Vec::with_capacity(ce),
            });
            if bufs.raw.capacity() == 0 {
                // Room for the most bytes a chunk's entries take, widened to
                // whole checksum groups.
                let most = ce * MAX_SOURCE_BYTES as usize + 2 * SUM_GROUP as usize;
                bufs.raw.reserve_exact(most);
            }
            let tio = Instant::now();
            // Whole blocks of entries: from one block's first byte to the next's.
            let (x, y) = (
                st.blocks[qu].bytes[(c0 / MBLOCK) as usize],
                st.blocks[qu].bytes[(c0 + c).div_ceil(MBLOCK) as usize],
            );
            let skew = self
                .layout
                .read_into(Part::Sources, qu, x, y - x, &mut bufs.raw)?;
            n.source_bytes_read += y - x;
            let bad_sources = |e: outcore_store::vpart::SourceError| {
                self.corrupt(
                    qu,
                    "sources",
                    format!(
                        "entries {c0}..{} do not decode (byte {})",
                        c0 + c,
                        x + e.offset as u64
                    ),
                )
            };
            let raw = &bufs.raw[skew..skew + (y - x) as usize];
            act.clear();
            if st.lists {
                // The list's entries in this chunk are its active sources:
                // only they are kept (the chunk's entries compact, in position
                // order), the others decoded only for their edge counts.
                picks.clear();
                recs.clear();
                if st.bits {
                    // The chunk's words of the bitmap (whole blocks: c0 is a
                    // block's first entry, so a word's first), its set bits
                    // the activated entries, each with the message the
                    // program gives its epoch, it - 1.
                    let (w0, w1) = (c0 / 64, (c0 + c).div_ceil(64));
                    list.resize((w1 - w0) as usize, 0);
                    st.mirrors
                        .read_pod(st.mirror_offset(qu, nm, slot_prev, w0), &mut list)?;
                    n.source_bytes_read += (w1 - w0) * 8;
                    let r = super::mirror_record(true, it - 1, (it - 1) as u32);
                    for (j, &word) in list.iter().enumerate() {
                        let mut b = word;
                        while b != 0 {
                            let i = 64 * j as u32 + b.trailing_zeros();
                            b &= b - 1;
                            if (i as u64) < c {
                                picks.push(i);
                                recs.push(r);
                            }
                        }
                    }
                } else {
                    loop {
                        if cur.at == list.len() {
                            if cur.next == cur.len {
                                break;
                            }
                            let m = (cur.len - cur.next).min(LIST_PIECE);
                            list.resize(m as usize, 0);
                            st.mirrors.read_pod(
                                st.mirror_offset(qu, nm, slot_prev, cur.next),
                                &mut list,
                            )?;
                            n.source_bytes_read += m * 8;
                            cur.next += m;
                            cur.at = 0;
                        }
                        let e = list[cur.at];
                        let pos = e & 0xffff_ffff;
                        if pos >= c0 + c {
                            break;
                        }
                        cur.at += 1;
                        // An entry of a block not read (none: its block is touched)
                        // is passed over.
                        if pos >= c0 {
                            picks.push((pos - c0) as u32);
                            recs.push(super::mirror_record(true, e >> 32, (it - 1) as u32));
                        }
                    }
                }
                n.io_seconds += tio.elapsed().as_secs_f64();
                ch.srcs.clear();
                ch.mir.clear();
                let edges = SourceDecoder::at_block(c0)
                    .decode_picks(raw, c as usize, &picks, |j, id, count, before| {
                        if count > 0 {
                            act.push((ch.srcs.len() as u32, e_off + before, count));
                        }
                        ch.srcs.push([id, count]);
                        ch.mir.push(recs[j]);
                    })
                    .map_err(bad_sources)?;
                e_off += edges;
            } else {
                ch.mir.resize(c as usize, 0);
                st.mirrors
                    .read_pod(st.mirror_offset(qu, nm, slot_prev, c0), &mut ch.mir)?;
                n.source_bytes_read += c * 8;
                n.io_seconds += tio.elapsed().as_secs_f64();
                SourceDecoder::at_block(c0)
                    .decode_exact(raw, c as usize, &mut ch.srcs)
                    .map_err(bad_sources)?;
                // Active sources: (source index in chunk, first edge, edge count).
                for (i, (s, m)) in ch.srcs().iter().zip(&ch.mir).enumerate() {
                    if s[1] > 0 && mirror_active(narrow, all, *m, it) {
                        act.push((i as u32, e_off, s[1]));
                    }
                    e_off += s[1] as u64;
                }
            }
            n.active_sources += act.len() as u64;
            c0 += c;
            if act.is_empty() {
                n.chunks_skipped += 1;
                bufs.chunks.push(ch);
                continue;
            }
            let chunk = Arc::new(ch);
            // Requests: merged runs of active sources, or the whole span.
            let whole = (act[0].1, act.last().map(|a| a.1 + a.2 as u64).unwrap());
            // 64 KiB of records.
            let gap = (64 << 10) * 8 / codec.record_bits();
            let mut runs: Vec<(u64, u64)> = Vec::new();
            for &(_, a, d) in &act {
                match runs.last_mut() {
                    Some(r) if a <= r.1 + gap => r.1 = a + d as u64,
                    _ => runs.push((a, a + d as u64)),
                }
            }
            let sel_bytes: f64 = runs.iter().map(|r| bytes_of(r.1 - r.0)).sum();
            let cost_sel = runs.len() as f64 * lat + sel_bytes / bw;
            let cost_whole = lat + bytes_of(whole.1 - whole.0) / bw;
            let selective = match self.cfg.edge_reads {
                EdgeReads::Whole => false,
                EdgeReads::Selective => true,
                EdgeReads::Auto => cost_sel < cost_whole,
            };
            if selective {
                n.chunks_selective += 1;
            } else {
                n.chunks_whole += 1;
                runs = vec![whole];
            }
            // Each run in windows, with the active sources' parts in each.
            let mut ai = 0usize;
            for (ri, &(ra, rb)) in runs.iter().enumerate() {
                let mut wa = ra;
                while wa < rb {
                    let wb = rb.min(wa + plan.window_edges);
                    bufs.take_back(free);
                    let (mut buf, mut parts) = bufs.windows.pop().unwrap_or_else(|| {
                        // The plan's bytes per edge are an unpacked record's,
                        // at least a packed one's.
                        let eb = self.layout.edge_bytes() as usize;
                        let bytes = plan.window_edges as usize * eb + 2 * SUM_GROUP as usize;
                        let most = (plan.window_edges as usize).min(ce);
                        (Vec::with_capacity(bytes), Vec::with_capacity(most))
                    });
                    parts.clear();
                    let tio = Instant::now();
                    // Whole checksum groups around the window, checked: every
                    // edge used was checked.
                    let (a, b) = codec.byte_range(wa, wb);
                    // The chunk's next window asked for ahead, so the device
                    // reads it while this one is read and applied.
                    let next = if wb < rb {
                        Some((wb, rb.min(wb + plan.window_edges)))
                    } else {
                        runs.get(ri + 1)
                            .map(|&(x, y)| (x, y.min(x + plan.window_edges)))
                    };
                    if let Some((x, y)) = next {
                        let (na, nb) = codec.byte_range(x, y);
                        self.layout.will_need(Part::Edges, qu, na, nb - na);
                    }
                    let skew = self.layout.read_into(Part::Edges, qu, a, b - a, &mut buf)?;
                    n.edge_bytes_read += buf.len() as u64;
                    n.io_seconds += tio.elapsed().as_secs_f64();
                    while ai < act.len() && act[ai].1 + act[ai].2 as u64 <= wa {
                        ai += 1;
                    }
                    let mut j = ai;
                    while j < act.len() && act[j].1 < wb {
                        let (i, a, d) = act[j];
                        let (x, y) = (a.max(wa), (a + d as u64).min(wb));
                        if x < y {
                            parts.push((i, x, y));
                        }
                        j += 1;
                    }
                    let edges: u64 = parts.iter().map(|p| p.2 - p.1).sum();
                    let w = Work {
                        chunk: chunk.clone(),
                        buf,
                        skew,
                        start: wa,
                        end: wb,
                        len: (b - a) as usize,
                        parts,
                        edges,
                    };
                    if tx.send(Ok(w)).is_err() {
                        // The applying side stopped (a bad edge): nothing more.
                        bufs.act = act;
                        bufs.list = list;
                        bufs.picks = picks;
                        bufs.recs = recs;
                        return Ok(());
                    }
                    wa = wb;
                }
            }
        }
        bufs.act = act;
        bufs.list = list;
        bufs.picks = picks;
        bufs.recs = recs;
        Ok(())
    }
}

/// A window of packed edge records read from a partition's edge file: edges
/// from the window's first to `end`, in the bytes [`EdgeCodec::byte_range`]
/// names for them.
struct Window<'a> {
    buf: &'a [u8],
    end: u64,
    codec: EdgeCodec,
    /// The program reads weights (else every edge weighs 1).
    weighted: bool,
    /// Stream bit of `buf[0]`'s bit 0.
    base: u64,
    /// Bits of a record.
    rbits: u64,
}

impl Window<'_> {
    /// Edge index one past the window's last.
    #[inline]
    fn end(&self) -> u64 {
        self.end
    }
    /// Edge e's target (e in the window).
    #[inline]
    fn target(&self, e: u64) -> u32 {
        self.codec.target(self.buf, self.bit(e))
    }
    /// Edge e's record bit in `buf`.
    #[inline]
    fn bit(&self, e: u64) -> u64 {
        e * self.rbits - self.base
    }
    #[inline]
    fn edge(&self, e: u64) -> (u32, f32) {
        let bit = self.bit(e);
        let w = if self.weighted {
            self.codec.weight(self.buf, bit)
        } else {
            1.0
        };
        (self.codec.target(self.buf, bit), w)
    }
}

struct SrcCtx<'a> {
    srcs: &'a [[u32; 2]],
    mir: &'a [MirrorRec],
    narrow: bool,
}

impl SrcCtx<'_> {
    #[inline]
    fn message(&self, i: u32) -> u64 {
        let m = self.mir[i as usize];
        if self.narrow {
            m & 0xffff_ffff
        } else {
            m
        }
    }
}

fn apply_direct<P: EdgeProgram>(
    prog: &P,
    win: &Window,
    ctx: &SrcCtx,
    i: u32,
    x: u64,
    y: u64,
    acc: &mut [u64],
) -> Option<(u32, u32, f32)> {
    let u = ctx.srcs[i as usize][0];
    let msg = ctx.message(i);
    let mut bad = None;
    // Targets are hinted STREAM_AHEAD edges ahead, as the streaming engine's
    // are: the accumulators of a partition are far larger than the caches, so
    // without it each edge waits on its target's cache line.
    let ahead = win.end().saturating_sub(crate::STREAM_AHEAD as u64);
    for e in x..y {
        if e < ahead {
            crate::prefetch(acc, win.target(e + crate::STREAM_AHEAD as u64));
        }
        let (t, w) = win.edge(e);
        let Some(a) = acc.get_mut(t as usize) else {
            bad.get_or_insert((u, u32::MAX, w));
            continue;
        };
        match prog.edge(msg, u, w) {
            Some(c) => *a = prog.combine(*a, c),
            None => {
                bad.get_or_insert((u, t, w));
            }
        }
    }
    bad
}

/// Edges whose targets one thread decodes at a time (16 KiB, in L1/L2).
const BATCH: usize = 4096;

/// Applies `parts` (source index, edge range) into `acc`; the first bad edge.
fn apply_parts<P: EdgeProgram>(
    prog: &P,
    win: &Window,
    ctx: &SrcCtx,
    parts: &[(u32, u64, u64)],
    acc: &mut [u64],
) -> Option<(u32, u32, f32)> {
    let mut bad = None;
    if win.codec.weighted() {
        // Records of target and weight: decoded edge by edge.
        for &(i, x, y) in parts {
            if let Some(e) = apply_direct(prog, win, ctx, i, x, y, acc) {
                bad.get_or_insert(e);
            }
        }
        return bad;
    }
    // Targets alone: decoded in batches (vectorised), then applied from the
    // batch — decoding each edge in the loop, beside its random access, made
    // the loop a third slower.
    let mut tb = [0u32; BATCH];
    let (mut lo, mut hi) = (0u64, 0u64);
    // Every `align`-th edge's record starts on a byte (where the vectorised
    // decoder runs): 8 / gcd(record bits, 8).
    let align = 8u64 >> win.rbits.trailing_zeros().min(3);
    for &(i, x, y) in parts {
        let u = ctx.srcs[i as usize][0];
        let msg = ctx.message(i);
        let mut e = x;
        while e < y {
            if e < lo || e >= hi {
                let a = e - e % align;
                // (The window's bytes start at stream bit `base`.)
                lo = if a * win.rbits >= win.base { a } else { e };
                hi = win.end.min(lo + BATCH as u64);
                let bit = win.bit(lo);
                if win
                    .codec
                    .targets_into(win.buf, bit, &mut tb[..(hi - lo) as usize])
                    .is_none()
                {
                    // Unreachable: the window holds its edges' bytes.
                    bad.get_or_insert((u, u32::MAX, 1.0));
                    return bad;
                }
            }
            let stop = y.min(hi);
            let t = &tb[(e - lo) as usize..(stop - lo) as usize];
            let n = (hi - lo) as usize;
            let ahead = &tb[((e - lo) as usize + crate::STREAM_AHEAD).min(n)..n];
            for (j, &v) in t.iter().enumerate() {
                if let Some(&n) = ahead.get(j) {
                    crate::prefetch(acc, n);
                }
                let Some(a) = acc.get_mut(v as usize) else {
                    bad.get_or_insert((u, u32::MAX, 1.0));
                    continue;
                };
                match prog.edge(msg, u, 1.0) {
                    Some(c) => *a = prog.combine(*a, c),
                    None => {
                        bad.get_or_insert((u, v, 1.0));
                    }
                }
            }
            e = stop;
        }
    }
    bad
}
