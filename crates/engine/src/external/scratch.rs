//! The external engine's scratch state (module docs of [`super`]): the
//! destinations' values and epochs, partition after partition, in one scratch
//! file; the mirror tables' two slots in another; and what the engine keeps in
//! memory about them (touched blocks, the written destination blocks, list
//! lengths; the layout holds the block index and skip tables).

use super::{Epochs, ExternalEngine, NEVER};
use crate::error::Result;
use crate::program::EdgeProgram;
use outcore_io::ScratchFile;
use outcore_state::AtomicBitmap;
use outcore_store::vpart::Part;

pub(super) struct Scratch<'a> {
    pub(super) dests: &'a ScratchFile,
    pub(super) mirrors: &'a ScratchFile,
    /// Per partition, where its destination values start; its epochs follow at
    /// the next page boundary ([`eps_offset`]). Page-aligned, so that writes of
    /// whole blocks are whole pages (a write ending inside a page the page cache
    /// no longer holds makes the kernel read that page first).
    pub(super) dest_base: &'a [u64],
    /// Per partition, where its two mirror slots start, each
    /// [`mirror_stride`] entries long (page-aligned).
    pub(super) mirror_base: &'a [u64],
    /// Per partition, its pending run of mirror entries (`mirror.rs`), carried
    /// from one partition's mirror update to the next within an iteration.
    pub(super) runs: &'a [std::sync::Mutex<MirrorRun>],
    /// Per partition, the edge offset and byte offset of each block of its
    /// source table (and the table's totals): where a chunk of whole blocks
    /// and its edges are read from (the layout's block index).
    pub(super) blocks: &'a [outcore_store::vpart::BlockIndex],
    /// Blocks of each partition's slot 0 and 1 that received, since the slot was
    /// last cleared, an entry of a narrow program that reads as active next.
    pub(super) touched: &'a [[AtomicBitmap; 2]],
    /// Per partition, the blocks of [`BLOCK`] destinations written at least
    /// once; the others hold their initial values, which are computed from the
    /// layout's ids (and out-degrees) when read rather than written up front.
    pub(super) written: &'a [AtomicBitmap],
    /// A narrow program's mirror slots hold lists: in slot s of partition q,
    /// the `list_len[q][s]` entries activated in the iteration that last wrote
    /// it, each its position in q's table (low 32 bits) and message (high 32),
    /// by ascending position ([`list_record`]).
    pub(super) lists: bool,
    /// With `lists`, for programs whose message is the activation epoch
    /// ([`crate::program::EdgeProgram::epoch_messages`]): slot s of partition q
    /// is instead a bitmap of its table, bit i set when entry i's source was
    /// activated in the iteration that last wrote the slot (which gives its
    /// message), rewritten whole every iteration (zeros included), so an
    /// activated entry costs one bit rather than the 8 bytes of a list entry.
    pub(super) bits: bool,
    pub(super) list_len: &'a [[std::sync::atomic::AtomicU64; 2]],
    /// A settling program's final destinations and dead edge groups.
    pub(super) settled: Option<&'a super::settle::Settled>,
}

/// A list entry (see [`Scratch::lists`]): position `at` in its table and the
/// message of mirror record `r` (its low 32 bits).
#[inline]
pub(super) fn list_record(at: u64, r: u64) -> u64 {
    debug_assert!(at <= u32::MAX as u64);
    at | r << 32
}

impl Scratch<'_> {
    /// The values (not the epochs) of destinations `i0..i0 + vals.len()` of
    /// partition q.
    pub(super) fn read_dest_values<V: bytemuck::Pod>(
        &self,
        q: u32,
        i0: u64,
        vals: &mut [V],
    ) -> Result<()> {
        let vs = std::mem::size_of::<V>() as u64;
        self.dests
            .read_pod(self.dest_base[q as usize] + i0 * vs, vals)?;
        Ok(())
    }
    /// The epochs of destinations `i0..i0 + eps.len()` of partition q (of `n`,
    /// whose values are `V`).
    pub(super) fn read_dest_epochs<V>(
        &self,
        q: u32,
        n: u64,
        i0: u64,
        eps: &mut [Epochs],
    ) -> Result<()> {
        let vs = std::mem::size_of::<V>() as u64;
        self.dests
            .read_pod(self.dest_base[q as usize] + eps_offset(n, vs) + i0 * 8, eps)?;
        Ok(())
    }
    /// Rewrites the values of destinations `i0..i0 + vals.len()` of partition
    /// q, all in blocks written before (whose `written` bits are set).
    pub(super) fn write_dest_values<V: bytemuck::Pod>(
        &self,
        q: u32,
        i0: u64,
        vals: &[V],
    ) -> Result<()> {
        let vs = std::mem::size_of::<V>() as u64;
        debug_assert!(
            (i0 as usize / BLOCK..(i0 as usize + vals.len()).div_ceil(BLOCK))
                .all(|b| self.written[q as usize].get(b as u32))
        );
        self.dests
            .write_pod(self.dest_base[q as usize] + i0 * vs, vals)?;
        Ok(())
    }
    /// Writes destinations `i0..i0 + vals.len()` of partition q (of `n`), and
    /// their epochs when given (programs whose every source sends each
    /// iteration keep none: see [`super::ExternalEngine::partition`]).
    pub(super) fn write_dest_range<V: bytemuck::Pod>(
        &self,
        q: u32,
        n: u64,
        i0: u64,
        vals: &[V],
        eps: Option<&[Epochs]>,
    ) -> Result<()> {
        let b = self.dest_base[q as usize];
        let vs = std::mem::size_of::<V>() as u64;
        self.dests.write_pod(b + i0 * vs, vals)?;
        if let Some(eps) = eps {
            self.dests.write_pod(b + eps_offset(n, vs) + i0 * 8, eps)?;
        }
        // Writes cover whole blocks (the partition's last one may be short).
        debug_assert!((i0 as usize).is_multiple_of(BLOCK));
        debug_assert!(
            (i0 as usize + vals.len()).is_multiple_of(BLOCK) || i0 + vals.len() as u64 == n
        );
        let w = &self.written[q as usize];
        for blk in i0 as usize / BLOCK..(i0 as usize + vals.len()).div_ceil(BLOCK) {
            w.set(blk as u32);
        }
        Ok(())
    }
    /// Where entry `pos` of partition q's mirror slot `slot` is in the scratch
    /// file (`nm` the partition's source-table entries).
    #[inline]
    pub(super) fn mirror_offset(&self, q: usize, nm: u64, slot: u64, pos: u64) -> u64 {
        self.mirror_base[q] + (slot * mirror_stride(nm) + pos) * 8
    }
}

/// Bytes per page of the scratch files' layout.
pub(super) const PAGE: u64 = 4096;
/// Mirror entries per page.
pub(super) const PAGE_ENTRIES: u64 = PAGE / 8;

/// Entries per mirror slot of a partition with `nm` source-table entries: `nm`
/// rounded up to whole pages.
pub(super) fn mirror_stride(nm: u64) -> u64 {
    nm.div_ceil(PAGE_ENTRIES) * PAGE_ENTRIES
}

/// Where a partition's epochs start after its `n` values of `vs` bytes.
pub(super) fn eps_offset(n: u64, vs: u64) -> u64 {
    (n * vs).div_ceil(PAGE) * PAGE
}

/// Scratch bytes of a partition's destination state: values, then epochs, each
/// page-aligned.
pub(super) fn dest_bytes(n: u64, vs: u64) -> u64 {
    eps_offset(n, vs) + (n * 8).div_ceil(PAGE) * PAGE
}

/// A partition's pending run of mirror entries (see [`Scratch::runs`]): the
/// entries from position `start` of its table on, up to `changed` of them
/// ending in one that must be written, the rest unchanged ones that may be
/// rewritten to join it to the next. Its buffer never holds more than the
/// capacity it was made with (the plan's mirror buffer, whole pages).
///
/// For bitmap slots ([`Scratch::bits`]) the run is the slot's pending words
/// instead: `buf` the whole words from word `start` on, `word` the next one's
/// first `fill` bits; the slot is written from its first word to its last in
/// every iteration, a full buffer at a time.
pub(super) struct MirrorRun {
    pub(super) start: u64,
    pub(super) changed: usize,
    pub(super) buf: Vec<u64>,
    pub(super) word: u64,
    pub(super) fill: u32,
}

impl MirrorRun {
    /// An empty run whose buffer holds `buf_bytes` of entries.
    pub(super) fn new(buf_bytes: u64) -> MirrorRun {
        MirrorRun {
            start: 0,
            changed: 0,
            buf: Vec::with_capacity((buf_bytes / 8) as usize),
            word: 0,
            fill: 0,
        }
    }
    /// A bitmap run's next position (the bits before it are in the run or
    /// written).
    #[inline]
    pub(super) fn next_bit(&self) -> u64 {
        (self.start + self.buf.len() as u64) * 64 + self.fill as u64
    }
}

impl ExternalEngine<'_> {
    /// Destinations `i0..i0 + vals.len()` of partition q (of `n`), with their
    /// epochs when `eps` is given and their out-degrees when `degs` is (left as
    /// they are for programs that do not use them): values and epochs read from
    /// the scratch file where their block was written, else the initial ones
    /// computed from the layout's ids (and out-degrees). Returns the bytes read.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn load_dests<P: EdgeProgram>(
        &self,
        prog: &P,
        st: &Scratch,
        q: u32,
        n: u64,
        i0: u64,
        vals: &mut [P::V],
        mut eps: Option<&mut [Epochs]>,
        mut degs: Option<&mut [u32]>,
    ) -> Result<u64> {
        let qu = q as usize;
        let vs = std::mem::size_of::<P::V>() as u64;
        let uses = prog.uses_degrees();
        let mut bytes = 0u64;
        if let Some(d) = degs.as_deref_mut().filter(|_| uses) {
            d.copy_from_slice(&self.layout.read::<u32>(
                Part::Dests,
                qu,
                4 * (n + i0),
                d.len() as u64,
            )?);
            bytes += 4 * d.len() as u64;
        }
        let i0 = i0 as usize;
        for (r, w) in written_runs(&st.written[qu], i0, i0 + vals.len()) {
            let local = r.start - i0..r.end - i0;
            let len = r.len() as u64;
            if w {
                st.read_dest_values(q, r.start as u64, &mut vals[local.clone()])?;
                bytes += len * vs;
                if let Some(e) = eps.as_deref_mut() {
                    st.read_dest_epochs::<P::V>(q, n, r.start as u64, &mut e[local])?;
                    bytes += len * 8;
                }
                continue;
            }
            let ids: Vec<u32> = self.layout.read(Part::Dests, qu, 4 * r.start as u64, len)?;
            bytes += len * 4;
            // The run's out-degrees: read above, or now when not asked for.
            let run_degs: Vec<u32> = match degs.as_deref() {
                Some(d) => d[local.clone()].to_vec(),
                None if uses => {
                    bytes += len * 4;
                    self.layout
                        .read(Part::Dests, qu, 4 * (n + r.start as u64), len)?
                }
                None => vec![0; r.len()],
            };
            for (j, (&v, &d)) in ids.iter().zip(&run_degs).enumerate() {
                let (x, act) = prog.init(v, d, &mut [0.0; 4]);
                vals[local.start + j] = x;
                if let Some(e) = eps.as_deref_mut() {
                    e[local.start + j] = [if act { 0 } else { NEVER }, 0];
                }
            }
        }
        Ok(bytes)
    }
}

/// The runs of destinations `i0..i1` of partition q by whether their blocks were
/// written (`true`) or still hold their initial values.
pub(super) fn written_runs(
    written: &AtomicBitmap,
    i0: usize,
    i1: usize,
) -> Vec<(std::ops::Range<usize>, bool)> {
    let mut runs: Vec<(std::ops::Range<usize>, bool)> = Vec::new();
    let mut a = i0;
    while a < i1 {
        let b = ((a / BLOCK + 1) * BLOCK).min(i1);
        let w = written.get((a / BLOCK) as u32);
        match runs.last_mut() {
            Some((r, lw)) if *lw == w => r.end = b,
            _ => runs.push((a..b, w)),
        }
        a = b;
    }
    runs
}

/// Destinations per block of the apply step (the unit of sparse reads).
pub(super) const BLOCK: usize = 4096;

/// The destination ranges of the runs of consecutive blocks set in `hit`.
pub(super) fn block_runs(hit: &[bool], n: usize) -> Vec<std::ops::Range<usize>> {
    let mut runs: Vec<std::ops::Range<usize>> = Vec::new();
    for (b, _) in hit.iter().enumerate().filter(|(_, &h)| h) {
        let r = b * BLOCK..((b + 1) * BLOCK).min(n);
        match runs.last_mut() {
            Some(last) if last.end == r.start => last.end = r.end,
            _ => runs.push(r),
        }
    }
    runs
}
