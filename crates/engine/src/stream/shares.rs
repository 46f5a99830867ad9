//! [`StreamEngine::exec_cuts`]: one pass over every edge that hands a block's
//! sources to the edge function a [`Share`] at a time (wcc's union-find pass,
//! `crates/algos/src/wcc.rs`), with stops between groups of rows. A function
//! that sees a share whole can loop over its targets without a branch per
//! source's run; the blocks are read and split among the threads exactly as
//! for the other passes (`exec_hooked`, `share_cuts`).

use super::{BlockOrder, Ctx, Mode, StreamEngine, StreamStats};
use crate::error::Result;
use outcore_store::RawBlock;
use rayon::prelude::*;

/// A share of one block's edges, handed whole to the function of
/// [`StreamEngine::exec_cuts`]: source `srcs[k]` has the targets
/// `dsts[offs[k] as usize..offs[k + 1] as usize]` (`offs` index the block's
/// whole target array, so `offs.len() == srcs.len() + 1`). A function that
/// sees a share at once can run over its targets in one flat loop, without
/// a branch per source's run (most runs of a 64 x 64 grid hold one edge).
pub struct Share<'a> {
    pub srcs: &'a [u32],
    pub offs: &'a [u32],
    pub dsts: &'a [u32],
}

impl<'a> Share<'a> {
    /// The share's targets, in storage order.
    pub fn targets(&self) -> &'a [u32] {
        &self.dsts[self.offs[0] as usize..self.offs[self.srcs.len()] as usize]
    }
    /// Each source and its targets, in storage order.
    pub fn runs(&self) -> impl Iterator<Item = (u32, &'a [u32])> + '_ {
        let (offs, dsts) = (self.offs, self.dsts);
        self.srcs
            .iter()
            .enumerate()
            .map(move |(k, &u)| (u, &dsts[offs[k] as usize..offs[k + 1] as usize]))
    }
}

impl<'s> StreamEngine<'s> {
    /// One pass over every edge, in the row-major order, with a stop between
    /// groups of rows: `between(engine, i)` is called before the first block
    /// of a row at or past `cuts[i]` is processed (and after the last block,
    /// for cuts past every row read), each cut once and in order, when no
    /// edge function runs; it may run the engine's `vmap`. Every vertex must
    /// be active ([`StreamEngine::activate_all`]), and nothing is activated:
    /// `f` gets each block as [`Share`]s of its sources (one share, or in
    /// `Mode::Multi` several of about equal edge counts spread over the
    /// threads), in storage order within a share. `mode`: Single or Multi.
    pub fn exec_cuts<F, H>(&mut self, mode: Mode, cuts: &[u32], f: F, between: H) -> Result<u64>
    where
        F: Fn(&Share<'_>) + Sync,
        H: FnMut(&Self, usize) -> Result<()>,
    {
        assert!(
            mode != Mode::Columns && self.cfg.order == BlockOrder::RowMajor,
            "exec_cuts: row-major, one block at a time"
        );
        assert_eq!(
            self.active.count(),
            self.vertices() as u64,
            "exec_cuts: every vertex active"
        );
        self.exec_hooked(
            mode,
            0,
            cuts,
            Some(&f),
            |_| {},
            |_: &Ctx, _: u32, _: &[u32], _: Option<&[f32]>| {},
            |_| Ok(()),
            between,
        )
    }

    /// [`StreamEngine::exec_cuts`]'s pass over one block: `f` on its shares.
    pub(super) fn run_shares(
        &self,
        b: &RawBlock,
        mode: Mode,
        f: &(dyn Fn(&Share<'_>) + Sync),
        st: &mut StreamStats,
    ) {
        let (srcs, offs, dsts) = (b.srcs(), b.offs(), b.dsts());
        let share = |w: &[usize]| Share {
            srcs: &srcs[w[0]..w[1]],
            offs: &offs[w[0]..w[1] + 1],
            dsts,
        };
        match self.share_cuts(b, mode) {
            None => f(&share(&[0, srcs.len()])),
            Some(cuts) => self
                .pool
                .install(|| cuts.par_windows(2).for_each(|w| f(&share(w)))),
        }
        st.edges_processed += b.num_edges() as u64;
        st.passes += 1;
        if st.passes_per_block.is_empty() {
            st.passes_per_block.push(0);
        }
        st.passes_per_block[0] += 1;
    }
}
