//! Mirror updates (FAST'19 §4.3, Figures 5 and 6): a processed partition's new
//! messages written to the contiguous segments of the source tables that mirror
//! its destinations — see the module docs of [`super`] for which entries are
//! written and why.

use super::plan::{mirror_gap, MASK_CHUNK, MBLOCK};
use super::scratch::{LastPage, PAGE_ENTRIES};
use super::{mirror_record, Epochs, ExternalEngine, ExternalStats, MirrorRec, Scratch};
use crate::error::{EngineError, Result};
use crate::program::EdgeProgram;
use outcore_store::vpart::Part;
use std::time::Instant;

impl ExternalEngine<'_> {
    /// Writes partition `job.p`'s messages to its mirrors' slot `it % 2` (both
    /// slots at iteration 0), the entries the job marks as needed.
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
        if job.recs.len() as u64 != nd {
            debug_assert!(job.recs.is_empty() && it > 0);
            return Ok(MirrorDone {
                bytes: 0,
                writes: 0,
                skipped: 0,
                seconds: 0.0,
            });
        }
        let slots: &[u64] = if it == 0 { &[0, 1] } else { &[it % 2] };
        let mut pos: Vec<u64> = (0..k as u32).map(|q| self.layout.segment(q, p)).collect();
        // Per target partition: the pending run (first position, entries) and the
        // unchanged entries seen since its last changed one.
        let mut pending: Vec<(u64, Vec<MirrorRec>)> = vec![(0, Vec::new()); k];
        let mut tail: Vec<Vec<MirrorRec>> = vec![Vec::new(); k];
        let gap = mirror_gap(buf_bytes);
        let mut bytes = 0u64;
        let mut writes = 0u64;
        let narrow = job.narrow;
        let mut flush = |q: usize, run: &mut (u64, Vec<MirrorRec>)| -> Result<()> {
            if run.1.is_empty() {
                return Ok(());
            }
            let nm = rec.mirrors[q];
            if narrow {
                // Whole pages: the run starts on one (`start_run`) and is padded
                // with zeros, which read as never activated; the last page is
                // kept for a later run starting in it.
                debug_assert!(run.0.is_multiple_of(PAGE_ENTRIES));
                let len = run.1.len() as u64;
                run.1.resize(
                    len.div_ceil(PAGE_ENTRIES) as usize * PAGE_ENTRIES as usize,
                    0,
                );
                let last = run.1.len() - PAGE_ENTRIES as usize;
                let mut lp = st.last_page[q].lock().expect("mirror page lock");
                let page = lp.get_or_insert_with(|| LastPage {
                    page: 0,
                    it: u64::MAX,
                    entries: Vec::with_capacity(PAGE_ENTRIES as usize),
                });
                page.page = (run.0 + last as u64) / PAGE_ENTRIES;
                page.it = it;
                page.entries.clear();
                page.entries.extend_from_slice(&run.1[last..]);
            }
            for &s in slots {
                st.mirrors
                    .write_pod(st.mirror_offset(q, nm, s, run.0), &run.1)?;
                bytes += run.1.len() as u64 * 8;
                writes += 1;
            }
            run.1.clear();
            Ok(())
        };
        // A narrow program's run starts on a page: the entries before `at` in
        // it are those the last write of this iteration left there, or zeros.
        let start_run = |q: usize, at: u64, run: &mut (u64, Vec<MirrorRec>)| {
            if !narrow {
                run.0 = at;
                return;
            }
            let a0 = at / PAGE_ENTRIES * PAGE_ENTRIES;
            run.0 = a0;
            let lp = st.last_page[q].lock().expect("mirror page lock");
            match lp.as_ref() {
                Some(l) if l.it == it && l.page == a0 / PAGE_ENTRIES => {
                    run.1.extend_from_slice(&l.entries[..(at - a0) as usize])
                }
                _ => run.1.resize((at - a0) as usize, 0),
            }
        };
        // Skipping needs every position below 2^32 within a segment.
        let table = st.skip_pos[p as usize].get();
        let build = it == 0
            && (0..k as u32)
                .all(|q| self.layout.segment(q, p + 1) - self.layout.segment(q, p) < 1 << 32);
        let mut built: Vec<u32> = Vec::new();
        let mut skipped = 0u64;
        let words = self.layout.mask_words() as u64;
        let mut m0 = 0u64;
        while m0 < nd {
            if m0.is_multiple_of(st.skip) {
                let unit = (m0 / st.skip) as usize;
                if build {
                    built
                        .extend((0..k).map(|q| (pos[q] - self.layout.segment(q as u32, p)) as u32));
                }
                let end = (m0 + st.skip).min(nd);
                if let Some(t) = table.filter(|_| !any_needed(&job.needed, m0, end)) {
                    // Nothing to write here: the pending runs end, the positions
                    // jump to the next unit's.
                    for (q, run) in pending.iter_mut().enumerate() {
                        flush(q, run)?;
                        tail[q].clear();
                    }
                    let next = &t[(unit + 1) * k..(unit + 2) * k];
                    for (q, x) in pos.iter_mut().enumerate() {
                        *x = self.layout.segment(q as u32, p) + next[q] as u64;
                    }
                    m0 = end;
                    skipped += 1;
                    continue;
                }
            }
            let c = (nd - m0).min(MASK_CHUNK);
            let masks: Vec<u64> =
                self.layout
                    .read(Part::Mirrors, p as usize, 8 * words * m0, words * c)?;
            for (j, mask) in masks.chunks_exact(words as usize).enumerate() {
                let i = (m0 as usize) + j;
                if mask.iter().all(|&w| w == 0) {
                    continue;
                }
                let r = job.recs[i];
                let needed = job.needed[i / 64] >> (i % 64) & 1 == 1;
                let known = job.known.as_ref().is_none_or(|k| k[i / super::BLOCK]);
                for q in mask_bits(mask) {
                    let at = pos[q];
                    pos[q] += 1;
                    if job.narrow && r >> 32 == it + 1 {
                        // Reads as active in it + 1: its block is not skipped.
                        for &s in slots {
                            st.touched[q][s as usize].set((at / MBLOCK) as u32);
                        }
                    }
                    if needed {
                        let run = &mut pending[q];
                        if run.1.is_empty() {
                            start_run(q, at, run);
                        } else {
                            run.1.append(&mut tail[q]);
                        }
                        run.1.push(r);
                        if run.1.len() as u64 * 8 >= buf_bytes {
                            flush(q, run)?;
                        }
                    } else if !pending[q].1.is_empty() {
                        // An entry whose value was not read (sparse destinations)
                        // cannot be rewritten in between: the run ends before it —
                        // unless the program is narrow, when it did not change
                        // and a zero reads as not activated, as it must.
                        tail[q].push(if known { r } else { 0 });
                        if tail[q].len() > gap || (!known && !narrow) {
                            flush(q, &mut pending[q])?;
                            tail[q].clear();
                        }
                    }
                }
            }
            m0 += c;
        }
        for (q, run) in pending.iter_mut().enumerate() {
            flush(q, run)?;
        }
        if build {
            built.extend((0..k).map(|q| (pos[q] - self.layout.segment(q as u32, p)) as u32));
            let _ = st.skip_pos[p as usize].set(built);
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
        Ok(MirrorDone {
            bytes,
            writes,
            skipped,
            seconds: t.elapsed().as_secs_f64(),
        })
    }
}

/// The partitions set in a mirror mask of u64 words, ascending.
fn mask_bits(mask: &[u64]) -> impl Iterator<Item = usize> + '_ {
    mask.iter().enumerate().flat_map(|(w, &word)| {
        let mut bits = word;
        std::iter::from_fn(move || {
            (bits != 0).then(|| {
                let q = bits.trailing_zeros() as usize;
                bits &= bits - 1;
                w * 64 + q
            })
        })
    })
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

/// A partition's mirror update, ready to run beside the next partition: each
/// destination's mirror entry and whether it must be written (1 bit).
pub(super) struct MirrorJob {
    p: u32,
    it: u64,
    narrow: bool,
    recs: Vec<MirrorRec>,
    needed: Vec<u64>,
    /// Per block of [`super::BLOCK`] destinations, whether its values were read
    /// (all when `None`); entries of other blocks are never written.
    known: Option<Vec<bool>>,
}

impl MirrorJob {
    /// A partition whose destinations did not change: nothing to write.
    pub(super) fn idle(p: u32, it: u64) -> MirrorJob {
        MirrorJob {
            p,
            it,
            narrow: false,
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
        let recs = (0..vals.len())
            .map(|i| {
                let need = !narrow || mirror_need(narrow, &eps[i], 0);
                needed[i / 64] |= (need as u64) << (i % 64);
                mirror_record(narrow, prog.message(&vals[i], degs[i]), eps[i][0])
            })
            .collect();
        Self::built(narrow, p, 0, recs, needed, None)
    }
    /// A job of entries built by the caller: `recs[i]` destination i's entry,
    /// bit i of `needed` set when it must be written, `known` as the field.
    pub(super) fn built(
        narrow: bool,
        p: u32,
        it: u64,
        recs: Vec<MirrorRec>,
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
        let mask = [1u64 << 63 | 1, 0, 1 << 5 | 1 << 6, 1 << 61];
        let got: Vec<usize> = super::mask_bits(&mask).collect();
        assert_eq!(got, vec![0, 63, 133, 134, 253]);
        assert_eq!(super::mask_bits(&[0, 0]).count(), 0);
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
