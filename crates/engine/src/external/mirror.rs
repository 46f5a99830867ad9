//! Mirror updates (FAST'19 §4.3, Figures 5 and 6): a processed partition's new
//! messages written to the contiguous segments of the source tables that mirror
//! its destinations — see the module docs of [`super`] for which entries are
//! written and why.

use super::plan::{mirror_gap, MASK_CHUNK, MBLOCK};
use super::scratch::{list_record, MirrorRun, PAGE_ENTRIES};
use super::{mirror_record, Epochs, ExternalEngine, ExternalStats, MirrorRec, Scratch};
use crate::error::{EngineError, Result};
use crate::program::EdgeProgram;
use outcore_store::pagesums::SUM_GROUP;
use outcore_store::vpart::Part;
use std::time::Instant;

impl ExternalEngine<'_> {
    /// Writes partition `job.p`'s messages to its mirrors' slot `it % 2` (both
    /// slots at iteration 0), the entries the job marks as needed. Each
    /// partition's pending run continues from the previous partition's update
    /// (its segment of the table follows); the last partition's update ends
    /// them all.
    pub(super) fn mirror_update(
        &self,
        st: &Scratch,
        job: &MirrorJob,
        buf_bytes: u64,
    ) -> Result<MirrorDone> {
        let t = Instant::now();
        let k = self.layout.partitions() as usize;
        let rec = &self.layout.record;
        let (p, it) = (job.p, job.it);
        let nd = rec.dests[p as usize];
        let mut runs: Vec<_> = st
            .runs
            .iter()
            .map(|r| r.lock().expect("mirror run lock"))
            .collect();
        debug_assert!(
            p != 0
                || runs
                    .iter()
                    .all(|r| r.buf.is_empty() && r.fill == 0 && (!st.bits || r.start == 0)),
            "a run left by the previous iteration"
        );
        let slots: &[u64] = match (it, it % 2) {
            (0, _) => &[0, 1],
            (_, 0) => &[0],
            _ => &[1],
        };
        let (mut bytes, mut writes) = (0u64, 0u64);
        let mut w = Writer {
            sink: |q: usize, start: u64, entries: &[MirrorRec]| -> Result<()> {
                for &s in slots {
                    // A list's entries are appended; a slot's go to their positions.
                    // A bitmap's words go to their positions (in words).
                    let at = if st.lists && !st.bits {
                        st.list_len[q][s as usize]
                            .fetch_add(entries.len() as u64, std::sync::atomic::Ordering::Relaxed)
                    } else {
                        start
                    };
                    st.mirrors
                        .write_pod(st.mirror_offset(q, rec.mirrors[q], s, at), entries)?;
                    bytes += entries.len() as u64 * 8;
                    writes += 1;
                }
                Ok(())
            },
            narrow: job.narrow,
            list: st.lists,
            bits: st.bits,
            cap: (buf_bytes / 8) as usize,
            gap: mirror_gap(buf_bytes),
        };
        let last = p as usize + 1 == k;
        if job.len() as u64 != nd {
            // Nothing changed: every partition's position passes the segment.
            debug_assert!(job.recs.is_empty() && it > 0);
            for (q, run) in runs.iter_mut().enumerate() {
                let d = self.layout.segment(q as u32, p + 1) - self.layout.segment(q as u32, p);
                w.jump(q, run, d)?;
                if last {
                    w.end_any(q, run, rec.mirrors[q])?;
                }
            }
            return Ok(MirrorDone {
                bytes,
                writes,
                skipped: 0,
                seconds: t.elapsed().as_secs_f64(),
            });
        }
        let mut pos: Vec<u64> = (0..k as u32).map(|q| self.layout.segment(q, p)).collect();
        // Skipping needs every position below 2^32 within a segment.
        // The layout's skip table: where each unit's mirrors start.
        let table = self.layout.skip_table(p as usize);
        let unit_len = self.layout.skip_unit();
        let mut skipped = 0u64;
        let mb = self.layout.mask_bytes() as u64;
        // A mask chunk's bytes, widened to whole checksum groups.
        let mut mask_buf: Vec<u8> = Vec::with_capacity((mb * MASK_CHUNK + 2 * SUM_GROUP) as usize);
        // Per partition, the block of its table whose touched bit was set last.
        let mut last_touch = vec![u64::MAX; k];
        let mut m0 = 0u64;
        while m0 < nd {
            if m0.is_multiple_of(unit_len) {
                let unit = (m0 / unit_len) as usize;
                let end = (m0 + unit_len).min(nd);
                if let Some(t) = table.filter(|_| !any_needed(&job.needed, m0, end)) {
                    // Nothing to write here: the positions jump to the next unit's.
                    let next = &t[(unit + 1) * k..(unit + 2) * k];
                    for (q, x) in pos.iter_mut().enumerate() {
                        let to = self.layout.segment(q as u32, p) + next[q] as u64;
                        w.jump(q, &mut runs[q], to - *x)?;
                        *x = to;
                    }
                    m0 = end;
                    skipped += 1;
                    continue;
                }
            }
            let c = (nd - m0).min(MASK_CHUNK);
            let skew =
                self.layout
                    .read_into(Part::Mirrors, p as usize, mb * m0, mb * c, &mut mask_buf)?;
            let masks = &mask_buf[skew..skew + (mb * c) as usize];
            if st.lists {
                // Lists (narrow programs): a destination not to be written
                // only moves its partitions' positions on; one to be written
                // (activated now) appends its message to their lists and marks
                // its blocks touched. The mask is taken a word (64
                // partitions) at a time: above 64 partitions this went through
                // the general loop below (Kronecker 24 bfs at 130 partitions,
                // cold, two runs each: mirror-update thread busy 8.8, 7.7 ->
                // 6.0, 5.8 s).
                for (j, mask) in masks.chunks_exact(mb as usize).enumerate() {
                    let i = (m0 as usize) + j;
                    let needed = job.needed[i / 64] >> (i % 64) & 1 == 1;
                    // A bitmap's entries carry no message (nor did the apply
                    // that built the job write them: see `partition`).
                    let msg = if needed && !st.bits {
                        job.recs[i] as u64
                    } else {
                        0
                    };
                    for (wi, piece) in mask.chunks(8).enumerate() {
                        let mut bits = mask_word(piece);
                        let pos = &mut pos[wi * 64..];
                        if !needed {
                            while bits != 0 {
                                pos[bits.trailing_zeros() as usize] += 1;
                                bits &= bits - 1;
                            }
                            continue;
                        }
                        while bits != 0 {
                            let b = bits.trailing_zeros() as usize;
                            bits &= bits - 1;
                            let q = wi * 64 + b;
                            let at = pos[b];
                            pos[b] += 1;
                            touch(st, slots, &mut last_touch[q], q, at);
                            if st.bits {
                                w.bit(q, &mut runs[q], at)?;
                            } else {
                                w.push(q, &mut runs[q], at, msg, true, true)?;
                            }
                        }
                    }
                }
                m0 += c;
                continue;
            }
            for (j, mask) in masks.chunks_exact(mb as usize).enumerate() {
                let i = (m0 as usize) + j;
                let mut bits = MaskBits::new(mask);
                let Some(first) = bits.next() else {
                    continue;
                };
                let needed = job.needed[i / 64] >> (i % 64) & 1 == 1;
                let r = job.entry(i, needed);
                let known = job.known.as_ref().is_none_or(|k| k[i / super::BLOCK]);
                // Reads as active in it + 1: its blocks are not skipped.
                let activated = job.narrow && r >> 32 == it + 1;
                for q in std::iter::once(first).chain(bits) {
                    let at = pos[q];
                    pos[q] += 1;
                    if activated {
                        touch(st, slots, &mut last_touch[q], q, at);
                    }
                    w.push(q, &mut runs[q], at, r, needed, known)?;
                }
            }
            m0 += c;
        }
        for (q, &end) in pos.iter().enumerate() {
            if end != self.layout.segment(q as u32, p + 1) {
                return Err(EngineError::Store(outcore_store::StoreError::Corrupt {
                    file: self
                        .store
                        .dir()
                        .join(outcore_store::vpart::file_name(p, "mirrors")),
                    reason: format!(
                        "its masks name {} mirrors in partition {q}, the index {}",
                        end - self.layout.segment(q as u32, p),
                        self.layout.segment(q as u32, p + 1) - self.layout.segment(q as u32, p)
                    ),
                }));
            }
        }
        if last {
            for (q, run) in runs.iter_mut().enumerate() {
                w.end_any(q, run, rec.mirrors[q])?;
            }
        }
        Ok(MirrorDone {
            bytes,
            writes,
            skipped,
            seconds: t.elapsed().as_secs_f64(),
        })
    }
}

/// Builds and writes the runs of one iteration's mirror updates.
///
/// Invariant: a page of a narrow program's slot is written at most once an
/// iteration, whole, from the page's start: a run starts on a page (the
/// entries before its first are zeros: not activated in this iteration, or
/// they would be in this run), a full buffer (whole pages) is written whole,
/// and a run ends only where the next position is more than a page past its
/// last needed entry (the gap exceeds [`mirror_gap`], at least a page) or at
/// the iteration's end. So the kernel never reads a page to write part of it.
/// A wide program's runs are written exactly (entries before a run's first may
/// hold messages of their own).
struct Writer<W> {
    /// Writes entries `start..start + entries.len()` of partition q's table.
    sink: W,
    narrow: bool,
    /// A narrow program's entries go to lists ([`super::Scratch::lists`]): a
    /// run is the list's pending tail, only needed entries, written (appended)
    /// when the buffer is full and at the iteration's end.
    list: bool,
    /// With `list`: the slots are bitmaps ([`super::Scratch::bits`]), written
    /// through [`Writer::bit`] and [`Writer::end_bits`].
    bits: bool,
    /// Entries a run's buffer holds (whole pages).
    cap: usize,
    /// Unchanged entries rewritten rather than ending a run.
    gap: usize,
}

impl<W: FnMut(usize, u64, &[MirrorRec]) -> Result<()>> Writer<W> {
    /// Writes the run's first `n` entries and empties it.
    fn flush(&mut self, q: usize, run: &mut MirrorRun, n: usize) -> Result<()> {
        (self.sink)(q, run.start, &run.buf[..n])?;
        run.buf.clear();
        run.changed = 0;
        Ok(())
    }

    /// Partition q's entry at position `at` (the next one after the run's):
    /// `r`, to be written when `needed`, its value read (`known`) or else
    /// unknown.
    #[inline]
    fn push(
        &mut self,
        q: usize,
        run: &mut MirrorRun,
        at: u64,
        r: MirrorRec,
        needed: bool,
        known: bool,
    ) -> Result<()> {
        if self.list {
            if needed {
                run.buf.push(list_record(at, r));
                if run.buf.len() == self.cap {
                    self.flush(q, run, self.cap)?;
                }
            }
            return Ok(());
        }
        // The common case: a needed entry continuing a run with room after it.
        if needed && !run.buf.is_empty() && run.buf.len() + 1 < self.cap {
            debug_assert_eq!(run.start + run.buf.len() as u64, at);
            run.buf.push(r);
            run.changed = run.buf.len();
            return Ok(());
        }
        self.push_any(q, run, at, r, needed, known)
    }

    /// [`Writer::push`], every case.
    fn push_any(
        &mut self,
        q: usize,
        run: &mut MirrorRun,
        at: u64,
        r: MirrorRec,
        needed: bool,
        known: bool,
    ) -> Result<()> {
        if run.buf.is_empty() {
            if !needed {
                return Ok(());
            }
            let a0 = if self.narrow {
                at / PAGE_ENTRIES * PAGE_ENTRIES
            } else {
                at
            };
            run.start = a0;
            run.changed = 0;
            run.buf.resize((at - a0) as usize, 0);
        }
        debug_assert_eq!(run.start + run.buf.len() as u64, at);
        if needed {
            run.buf.push(r);
            run.changed = run.buf.len();
        } else if !known && !self.narrow {
            // A wide entry whose value was not read (sparse destinations) may
            // not be rewritten: the run ends before it. A narrow one did not
            // change, and a zero reads as not activated, as it must.
            return self.end(q, run);
        } else {
            run.buf.push(if known { r } else { 0 });
            if run.buf.len() - run.changed > self.gap {
                return self.end(q, run);
            }
        }
        if run.buf.len() == self.cap {
            // Whole pages (a narrow run starts on one): written as they are.
            self.flush(q, run, self.cap)?;
        }
        Ok(())
    }

    /// Partition q's position passes `d` entries not to be written (nor read).
    fn jump(&mut self, q: usize, run: &mut MirrorRun, d: u64) -> Result<()> {
        if d == 0 || run.buf.is_empty() || self.list {
            return Ok(());
        }
        if self.narrow && (run.buf.len() - run.changed) as u64 + d <= self.gap as u64 {
            // Zeros join the run to what follows.
            let at = run.start + run.buf.len() as u64;
            for x in at..at + d {
                self.push(q, run, x, 0, false, false)?;
                if run.buf.is_empty() {
                    break;
                }
            }
            return Ok(());
        }
        self.end(q, run)
    }

    /// Sets bit `at` of partition q's bitmap, the bits from the run's position
    /// to it zero.
    #[inline]
    fn bit(&mut self, q: usize, run: &mut MirrorRun, at: u64) -> Result<()> {
        self.zeros_to(q, run, at)?;
        run.word |= 1 << run.fill;
        run.fill += 1;
        if run.fill == 64 {
            self.put_word(q, run)?;
        }
        Ok(())
    }

    /// A bitmap run's word is complete: into the buffer, written when full.
    #[inline]
    fn put_word(&mut self, q: usize, run: &mut MirrorRun) -> Result<()> {
        run.buf.push(run.word);
        run.word = 0;
        run.fill = 0;
        if run.buf.len() == self.cap {
            self.flush_bits(q, run)?;
        }
        Ok(())
    }

    /// Writes a bitmap run's words (a whole buffer, or the last words padded
    /// to a page) and moves its start past them.
    fn flush_bits(&mut self, q: usize, run: &mut MirrorRun) -> Result<()> {
        (self.sink)(q, run.start, &run.buf)?;
        run.start += run.buf.len() as u64;
        run.buf.clear();
        Ok(())
    }

    /// Zero bits up to position `to` of partition q's bitmap.
    fn zeros_to(&mut self, q: usize, run: &mut MirrorRun, to: u64) -> Result<()> {
        let mut at = run.next_bit();
        debug_assert!(to >= at, "bitmap position {to} behind the run's {at}");
        if run.fill > 0 {
            let d = (to - at).min(64 - run.fill as u64);
            run.fill += d as u32;
            at += d;
            if run.fill < 64 {
                // `to` is inside the word.
                return Ok(());
            }
            self.put_word(q, run)?;
        }
        while to - at >= 64 {
            // Whole zero words, up to the buffer's end.
            let n = (((to - at) / 64) as usize).min(self.cap - run.buf.len());
            run.buf.resize(run.buf.len() + n, 0);
            at += 64 * n as u64;
            if run.buf.len() == self.cap {
                self.flush_bits(q, run)?;
            }
        }
        run.fill = (to - at) as u32;
        Ok(())
    }

    /// Ends partition q's bitmap run at its table's end `nm` (the iteration's
    /// last update): the last words written, padded with zeros to a whole page
    /// (within the slot, which is sized for 8-byte entries).
    fn end_bits(&mut self, q: usize, run: &mut MirrorRun, nm: u64) -> Result<()> {
        self.zeros_to(q, run, nm)?;
        if run.fill > 0 {
            self.put_word(q, run)?;
        }
        if !run.buf.is_empty() {
            let page = PAGE_ENTRIES as usize;
            run.buf.resize(run.buf.len().div_ceil(page) * page, 0);
            self.flush_bits(q, run)?;
        }
        run.start = 0;
        Ok(())
    }

    /// Ends partition q's run at the iteration's end (its table has `nm`
    /// entries): [`Writer::end_bits`] or [`Writer::end`].
    fn end_any(&mut self, q: usize, run: &mut MirrorRun, nm: u64) -> Result<()> {
        if self.bits {
            self.end_bits(q, run, nm)
        } else {
            self.end(q, run)
        }
    }

    /// Ends partition q's run after its last needed entry (a narrow run padded
    /// to its page's end).
    fn end(&mut self, q: usize, run: &mut MirrorRun) -> Result<()> {
        if self.list {
            // The list's tail (a whole buffer is written when it fills).
            let n = run.buf.len();
            return if n > 0 { self.flush(q, run, n) } else { Ok(()) };
        }
        if run.changed == 0 {
            run.buf.clear();
            return Ok(());
        }
        let n = if self.narrow {
            run.changed.div_ceil(PAGE_ENTRIES as usize) * PAGE_ENTRIES as usize
        } else {
            run.changed
        };
        if n > run.buf.len() {
            // Within the capacity: whole pages.
            run.buf.resize(n, 0);
        }
        self.flush(q, run, n)
    }
}

/// Up to 8 bytes of a mask as a little-endian word: 8 by one load, fewer byte
/// by byte (a copy of a few bytes would be a call to memcpy and a stalled load
/// of what it stored).
#[inline]
fn mask_word(bytes: &[u8]) -> u64 {
    debug_assert!(bytes.len() <= 8);
    if let Ok(w) = <[u8; 8]>::try_from(bytes) {
        return u64::from_le_bytes(w);
    }
    bytes
        .iter()
        .enumerate()
        .fold(0, |w, (s, &b)| w | (b as u64) << (8 * s))
}

/// Marks the block of partition q's table holding position `at` touched in
/// `slots` (an entry there reads as active next iteration, so the block is not
/// skipped); `last` is q's block marked last, and positions only grow, so
/// each block is marked once.
#[inline]
fn touch(st: &Scratch, slots: &[u64], last: &mut u64, q: usize, at: u64) {
    if at / MBLOCK != *last {
        *last = at / MBLOCK;
        for &s in slots {
            st.touched[q][s as usize].set(*last as u32);
        }
    }
}

/// The partitions set in a mirror mask of bytes (bit p % 8 of byte p / 8),
/// ascending, taken 8 bytes at a time.
struct MaskBits<'a> {
    word: u64,
    base: usize,
    rest: &'a [u8],
}

impl<'a> MaskBits<'a> {
    #[inline]
    fn new(mask: &'a [u8]) -> MaskBits<'a> {
        let mut m = MaskBits {
            word: 0,
            base: 0,
            rest: mask,
        };
        m.load();
        m
    }
    /// The next up to 8 bytes into `word`.
    #[inline]
    fn load(&mut self) {
        let n = self.rest.len().min(8);
        self.word = mask_word(&self.rest[..n]);
        self.rest = &self.rest[n..];
    }
}

impl Iterator for MaskBits<'_> {
    type Item = usize;
    #[inline]
    fn next(&mut self) -> Option<usize> {
        while self.word == 0 {
            if self.rest.is_empty() {
                return None;
            }
            self.base += 64;
            self.load();
        }
        let q = self.word.trailing_zeros() as usize;
        self.word &= self.word - 1;
        Some(self.base + q)
    }
}

/// Whether any bit of `needed` in `a..b` is set.
fn any_needed(needed: &[u64], a: u64, b: u64) -> bool {
    if a >= b {
        return false;
    }
    let (wa, wb) = ((a / 64) as usize, ((b - 1) / 64) as usize);
    (wa..=wb).any(|w| {
        let lo = if w == wa { a % 64 } else { 0 };
        let hi = if w == wb { (b - 1) % 64 + 1 } else { 64 };
        let mask = (u64::MAX >> (64 - (hi - lo))) << lo;
        needed[w] & mask != 0
    })
}

/// u32 words of a mirror job's entry per destination: a narrow program's
/// 32-bit message (the entry's epoch is the job's iteration when it is to be
/// written, and an entry that is not may be written as zero), a wide one's
/// 64-bit message.
pub(super) fn job_words(narrow: bool) -> usize {
    if narrow {
        1
    } else {
        2
    }
}

/// A partition's mirror update, ready to run beside the next partition: each
/// destination's message ([`job_words`]) and whether its entry must be
/// written (1 bit).
pub(super) struct MirrorJob {
    p: u32,
    it: u64,
    narrow: bool,
    recs: Vec<u32>,
    needed: Vec<u64>,
    /// Per block of [`super::BLOCK`] destinations, whether its values were read
    /// (all when `None`); entries of other blocks are never written.
    known: Option<Vec<bool>>,
}

impl MirrorJob {
    /// Destinations in the job (none when idle).
    fn len(&self) -> usize {
        self.recs.len() / job_words(self.narrow)
    }
    /// Destination i's mirror entry as written (`needed`: whether it is to be).
    #[inline]
    fn entry(&self, i: usize, needed: bool) -> MirrorRec {
        if self.narrow {
            if needed {
                mirror_record(true, self.recs[i] as u64, self.it as u32)
            } else {
                0
            }
        } else {
            self.recs[2 * i] as u64 | (self.recs[2 * i + 1] as u64) << 32
        }
    }
    /// Stores `msg` as destination i's message in `recs` (a job's words).
    #[inline]
    pub(super) fn put(narrow: bool, recs: &mut [u32], i: usize, msg: u64) {
        if narrow {
            recs[i] = msg as u32;
        } else {
            recs[2 * i] = msg as u32;
            recs[2 * i + 1] = (msg >> 32) as u32;
        }
    }
    /// A partition whose destinations did not change: nothing to write (the
    /// pending runs pass its segments).
    pub(super) fn idle(narrow: bool, p: u32, it: u64) -> MirrorJob {
        MirrorJob {
            p,
            it,
            narrow,
            recs: Vec::new(),
            needed: Vec::new(),
            known: None,
        }
    }
    /// Iteration 0's job for partition p: every entry of a wide program, the
    /// initially active ones of a narrow program.
    pub(super) fn initial<P: EdgeProgram>(
        prog: &P,
        p: u32,
        vals: &[P::V],
        eps: &[Epochs],
        degs: &[u32],
    ) -> MirrorJob {
        let narrow = prog.narrow_messages();
        let mut needed = vec![0u64; vals.len().div_ceil(64)];
        let mut recs = vec![0u32; vals.len() * job_words(narrow)];
        for i in 0..vals.len() {
            let need = !narrow || mirror_need(narrow, &eps[i], 0);
            needed[i / 64] |= (need as u64) << (i % 64);
            Self::put(narrow, &mut recs, i, prog.message(&vals[i], degs[i]));
        }
        Self::built(narrow, p, 0, recs, needed, None)
    }
    /// A job of entries built by the caller: destination i's message in
    /// `recs` ([`MirrorJob::put`]), bit i of `needed` set when its entry must
    /// be written, `known` as the field.
    pub(super) fn built(
        narrow: bool,
        p: u32,
        it: u64,
        recs: Vec<u32>,
        needed: Vec<u64>,
        known: Option<Vec<bool>>,
    ) -> MirrorJob {
        MirrorJob {
            p,
            it,
            narrow,
            recs,
            needed,
            known,
        }
    }
}

/// Whether a destination's mirror entry must be written after iteration `it`
/// (its epochs `ep`): a narrow program's message is read only in the iteration
/// after its source's activation, so only entries activated now (an older entry
/// in the slot never reads as active: its epoch is below it - 1); a wide one's
/// when the message changed since the slot was last written (iteration it - 2).
#[inline]
pub(super) fn mirror_need(narrow: bool, ep: &Epochs, it: u64) -> bool {
    if narrow {
        ep[0] == it as u32
    } else {
        ep[1] >= it.saturating_sub(1).max(1) as u32
    }
}

/// What a mirror update wrote.
pub(super) struct MirrorDone {
    bytes: u64,
    writes: u64,
    skipped: u64,
    seconds: f64,
}

pub(super) fn add_mirror(stats: &mut ExternalStats, d: &MirrorDone) {
    stats.mirror_update_bytes += d.bytes;
    stats.mirror_update_writes += d.writes;
    stats.mirror_units_skipped += d.skipped;
    stats.mirror_update_seconds += d.seconds;
}

#[cfg(test)]
mod tests {
    #[test]
    fn mask_bits_names_every_partition_in_every_word() {
        let words = [1u64 << 63 | 1, 0, 1 << 5 | 1 << 6, 1 << 61];
        let mask: &[u8] = bytemuck::cast_slice(&words);
        let got: Vec<usize> = super::MaskBits::new(&mask[..32]).collect();
        assert_eq!(got, vec![0, 63, 133, 134, 253]);
        // A mask of 3 bytes (up to 24 partitions).
        let got: Vec<usize> = super::MaskBits::new(&[0b1000_0001, 0, 0b0100_0000]).collect();
        assert_eq!(got, vec![0, 7, 22]);
        assert_eq!(super::MaskBits::new(&[0, 0]).count(), 0);
    }

    use super::super::plan::mirror_gap;
    use super::super::scratch::{MirrorRun, PAGE_ENTRIES};
    use super::Writer;
    use proptest::prelude::*;

    /// One position of a partition's table in an iteration's mirror updates.
    #[derive(Debug, Clone, Copy)]
    enum Ev {
        /// An entry to be written.
        Needed,
        /// An unchanged entry whose value was read.
        Known,
        /// An unchanged entry whose value was not read.
        Unknown,
        /// A jump over this many entries (a skipped unit, an idle partition).
        Jump(u64),
    }

    fn ev() -> impl Strategy<Value = Ev> {
        prop_oneof![
            3 => Just(Ev::Needed),
            4 => Just(Ev::Known),
            1 => Just(Ev::Unknown),
            1 => (1u64..3000).prop_map(Ev::Jump),
        ]
    }

    proptest! {
        /// Every needed entry is written with its value, an entry not needed
        /// keeps the value it had (wide) or reads as not activated (narrow:
        /// its old value, or zero), a narrow program writes whole pages at
        /// most once each, and a run's buffer never grows past its capacity.
        #[test]
        fn runs_write_every_needed_entry_and_nothing_they_must_not(
            narrow in any::<bool>(),
            pages in 1usize..6,
            evs in proptest::collection::vec(ev(), 1..3000),
        ) {
            let cap = pages * PAGE_ENTRIES as usize;
            let len: u64 = evs.iter().map(|e| match e { Ev::Jump(d) => *d, _ => 1 }).sum();
            let old = |x: u64| 1_000_000 + x;
            let new = |x: u64| 2_000_000 + x;
            let mut file: Vec<u64> = (0..len).map(old).collect();
            let mut pages_written = std::collections::HashSet::new();
            let mut run = MirrorRun::new(cap as u64 * 8);
            let mut w = Writer {
                sink: |_q: usize, start: u64, entries: &[u64]| -> crate::error::Result<()> {
                    assert!(entries.len() <= cap, "a write of {} entries past {cap}", entries.len());
                    if narrow {
                        assert_eq!(start % PAGE_ENTRIES, 0, "a run not on a page");
                        assert_eq!(entries.len() as u64 % PAGE_ENTRIES, 0, "part of a page");
                        for pg in start / PAGE_ENTRIES..(start + entries.len() as u64) / PAGE_ENTRIES {
                            assert!(pages_written.insert(pg), "page {pg} written twice");
                        }
                    }
                    for (j, &e) in entries.iter().enumerate() {
                        let x = start + j as u64;
                        if x < len {
                            file[x as usize] = e;
                        } else {
                            assert!(narrow && e == 0, "past the table: {e} at {x}");
                        }
                    }
                    Ok(())
                },
                narrow,
                list: false,
                bits: false,
                cap,
                gap: mirror_gap(cap as u64 * 8),
            };
            let mut at = 0u64;
            let mut kinds = Vec::with_capacity(len as usize);
            for e in &evs {
                match *e {
                    Ev::Jump(d) => {
                        w.jump(0, &mut run, d).unwrap();
                        kinds.extend(std::iter::repeat_n(Ev::Unknown, d as usize));
                        at += d;
                    }
                    Ev::Needed => {
                        w.push(0, &mut run, at, new(at), true, true).unwrap();
                        kinds.push(*e);
                        at += 1;
                    }
                    Ev::Known => {
                        w.push(0, &mut run, at, old(at), false, true).unwrap();
                        kinds.push(*e);
                        at += 1;
                    }
                    Ev::Unknown => {
                        // A value the writer must not rely on.
                        w.push(0, &mut run, at, 7, false, false).unwrap();
                        kinds.push(*e);
                        at += 1;
                    }
                }
                prop_assert_eq!(run.buf.capacity(), cap);
            }
            w.end(0, &mut run).unwrap();
            for (x, k) in kinds.iter().enumerate() {
                let (x, got) = (x as u64, file[x]);
                match k {
                    Ev::Needed => prop_assert_eq!(got, new(x), "needed entry {}", x),
                    _ if narrow => prop_assert!(got == old(x) || got == 0, "entry {} holds {}", x, got),
                    _ => prop_assert_eq!(got, old(x), "unchanged entry {}", x),
                }
            }
        }
    }

    proptest! {
        /// A list run appends exactly the needed entries, by ascending
        /// position with their messages, in writes of whole buffers (whole
        /// pages) but the last.
        #[test]
        fn list_runs_append_exactly_the_needed_entries(
            pages in 1usize..4,
            evs in proptest::collection::vec(ev(), 1..3000),
        ) {
            let cap = pages * PAGE_ENTRIES as usize;
            let mut list: Vec<u64> = Vec::new();
            let mut sizes: Vec<usize> = Vec::new();
            let mut run = MirrorRun::new(cap as u64 * 8);
            let mut w = Writer {
                sink: |_q: usize, _start: u64, entries: &[u64]| -> crate::error::Result<()> {
                    sizes.push(entries.len());
                    list.extend_from_slice(entries);
                    Ok(())
                },
                narrow: true,
                list: true,
                bits: false,
                cap,
                gap: mirror_gap(cap as u64 * 8),
            };
            let (mut at, mut want) = (0u64, Vec::new());
            for e in &evs {
                match *e {
                    Ev::Jump(d) => {
                        w.jump(0, &mut run, d).unwrap();
                        at += d;
                        continue;
                    }
                    Ev::Needed => {
                        let msg = at * 7 % 1000;
                        // A mirror record: the message under the epoch.
                        w.push(0, &mut run, at, msg | 5 << 32, true, true).unwrap();
                        want.push(super::list_record(at, msg));
                    }
                    Ev::Known => w.push(0, &mut run, at, 9, false, true).unwrap(),
                    Ev::Unknown => w.push(0, &mut run, at, 7, false, false).unwrap(),
                }
                at += 1;
                prop_assert_eq!(run.buf.capacity(), cap);
            }
            w.end(0, &mut run).unwrap();
            prop_assert_eq!(&list, &want);
            if let Some((last, full)) = sizes.split_last() {
                prop_assert!(full.iter().all(|&n| n == cap), "{:?}", sizes);
                prop_assert!(*last > 0 && *last <= cap);
            }
        }
    }

    proptest! {
        /// A bitmap run, carried over several partitions' segments (jumps
        /// between set bits, ends at unknown places), writes its slot from
        /// the first word to past the table's last bit: exactly the set bits,
        /// zeros elsewhere, each word once, in writes of whole buffers but the
        /// last, which ends on a page.
        #[test]
        fn bitmap_runs_write_exactly_the_set_bits_once(
            pages in 1usize..4,
            gaps in proptest::collection::vec(prop_oneof![
                4 => 0u64..3,
                2 => 3u64..200,
                1 => 200u64..40_000,
            ], 0..2000),
            tail in 0u64..5000,
        ) {
            let cap = pages * PAGE_ENTRIES as usize;
            let mut words: std::collections::BTreeMap<u64, u64> = Default::default();
            let mut sizes: Vec<usize> = Vec::new();
            let mut run = MirrorRun::new(cap as u64 * 8);
            let mut w = Writer {
                sink: |_q: usize, start: u64, entries: &[u64]| -> crate::error::Result<()> {
                    sizes.push(entries.len());
                    assert_eq!(start % PAGE_ENTRIES, 0, "a write not on a page");
                    for (j, &e) in entries.iter().enumerate() {
                        assert!(words.insert(start + j as u64, e).is_none(), "word written twice");
                    }
                    Ok(())
                },
                narrow: true,
                list: true,
                bits: true,
                cap,
                gap: mirror_gap(cap as u64 * 8),
            };
            let (mut at, mut set) = (0u64, Vec::new());
            for &g in &gaps {
                at += g;
                w.bit(0, &mut run, at).unwrap();
                set.push(at);
                at += 1;
                prop_assert_eq!(run.buf.capacity(), cap);
            }
            let nm = at + tail;
            w.end_bits(0, &mut run, nm).unwrap();
            prop_assert_eq!(run.start, 0);
            prop_assert!(run.buf.is_empty() && run.fill == 0);
            let nw = nm.div_ceil(64);
            let written = words.len() as u64;
            prop_assert!(written >= nw && written.is_multiple_of(PAGE_ENTRIES), "{} words for {}", written, nw);
            prop_assert!(words.keys().copied().eq(0..written), "words not contiguous from 0");
            let mut want = vec![0u64; written as usize];
            for &b in &set {
                want[(b / 64) as usize] |= 1 << (b % 64);
            }
            prop_assert!(words.values().copied().eq(want.iter().copied()));
            if let Some((last, full)) = sizes.split_last() {
                prop_assert!(full.iter().all(|&n| n == cap), "{:?}", sizes);
                prop_assert!(*last > 0 && *last <= cap);
            }
        }
    }

    #[test]
    fn any_needed_sees_exactly_its_range() {
        let mut bits = vec![0u64; 4];
        bits[1] |= 1 << 5; // bit 69
        for (a, b, want) in [
            (0, 69, false),
            (0, 70, true),
            (69, 70, true),
            (70, 256, false),
            (64, 128, true),
            (0, 0, false),
            (60, 69, false),
            (60, 200, true),
        ] {
            assert_eq!(super::any_needed(&bits, a, b), want, "{a}..{b}");
        }
    }
}
