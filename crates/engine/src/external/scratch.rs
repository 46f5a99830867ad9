//! The external engine's scratch state (module docs of [`super`]): the
//! destinations' values and epochs, partition after partition, in one scratch
//! file; the mirror tables' two slots in another; and what the engine keeps in
//! memory about them (block edge offsets, touched blocks, the mirror updates'
//! skip table).

use super::Epochs;
use crate::error::Result;
use outcore_io::ScratchFile;
use outcore_state::AtomicBitmap;

pub(super) struct Scratch<'a> {
    pub(super) dests: &'a ScratchFile,
    pub(super) mirrors: &'a ScratchFile,
    pub(super) dest_base: &'a [u64],
    pub(super) mirror_base: &'a [u64],
    /// Edge offset of each block of each source table (and the table's edges).
    pub(super) block_off: &'a [Vec<u64>],
    /// Blocks of each partition's slot 0 and 1 that received, since the slot was
    /// last cleared, an entry of a narrow program that reads as active next.
    pub(super) touched: &'a [[AtomicBitmap; 2]],
    /// Per partition p, built by iteration 0's mirror update: at the start of
    /// every unit of `skip` destinations, each partition's position in p's
    /// segment of its source table (`[unit][q]`, relative to the segment), so a
    /// later update can pass over a unit with nothing to write unread.
    pub(super) skip_pos: &'a [std::sync::OnceLock<Vec<u32>>],
    pub(super) skip: u64,
}

impl Scratch<'_> {
    /// Writes all of partition q's destinations.
    pub(super) fn write_dests<V: bytemuck::Pod>(
        &self,
        q: u32,
        vals: &[V],
        eps: &[Epochs],
    ) -> Result<()> {
        self.write_dest_range(q, vals.len() as u64, 0, vals, eps)
    }
    /// Destinations `i0..i0 + vals.len()` of partition q (of `n`).
    pub(super) fn read_dest_range<V: bytemuck::Pod>(
        &self,
        q: u32,
        n: u64,
        i0: u64,
        vals: &mut [V],
        eps: &mut [Epochs],
    ) -> Result<()> {
        let b = self.dest_base[q as usize];
        let vs = std::mem::size_of::<V>() as u64;
        self.dests.read_pod(b + i0 * vs, vals)?;
        self.dests.read_pod(b + n * vs + i0 * 8, eps)?;
        Ok(())
    }
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
    /// Writes destinations `i0..i0 + vals.len()` of partition q (of `n`).
    pub(super) fn write_dest_range<V: bytemuck::Pod>(
        &self,
        q: u32,
        n: u64,
        i0: u64,
        vals: &[V],
        eps: &[Epochs],
    ) -> Result<()> {
        let b = self.dest_base[q as usize];
        let vs = std::mem::size_of::<V>() as u64;
        self.dests.write_pod(b + i0 * vs, vals)?;
        self.dests.write_pod(b + n * vs + i0 * 8, eps)?;
        Ok(())
    }
    /// All of partition q's `n` destinations.
    pub(super) fn read_dests<V: bytemuck::Pod>(
        &self,
        q: u32,
        n: u64,
    ) -> Result<(Vec<V>, Vec<Epochs>)> {
        let mut vals: Vec<V> = vec![V::zeroed(); n as usize];
        let mut eps: Vec<Epochs> = vec![[0; 2]; n as usize];
        self.read_dest_range(q, n, 0, &mut vals, &mut eps)?;
        Ok((vals, eps))
    }
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
