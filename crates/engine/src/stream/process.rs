//! One loaded block's passes ([`StreamEngine::exec_hooked`]'s consumers call
//! `process`): the first pass over the block's active sources, then re-entry
//! passes over the sources it activated in its own rows (CLIP §3.1, up to MRT;
//! in [`Mode::Columns`] only on diagonal blocks), each pass split into shares
//! of about equal edge counts over the pool in [`Mode::Multi`].

use super::{Ctx, Hint, Mode, Pass, Runs, StreamEngine, StreamStats};
use outcore_state::AtomicBitmap;
use outcore_store::RawBlock;
use rayon::prelude::*;
use std::ops::Range;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};

impl StreamEngine<'_> {
    /// Processes one loaded block: the first pass over its active sources, then
    /// re-entry passes over the sources it activated, up to MRT passes.
    pub(super) fn process<P, F>(
        &self,
        b: &RawBlock,
        mode: Mode,
        ahead: &P,
        f: &F,
        st: &mut StreamStats,
    ) where
        P: Hint,
        F: Runs,
    {
        let rows = self.store.interval(b.row);
        let mut filter = &self.active;
        let mut passes = 0usize;
        // Mode::Columns: a block re-enters only on the diagonal, where its
        // targets are its own sources, and one thread holds it (its column);
        // any other block's edges activate no source of its rows, so it makes
        // one pass and leaves the rows' re-entry bits to the diagonal block.
        let mrt = match mode {
            Mode::Columns if b.row != b.col => 1,
            _ => self.cfg.mrt as usize,
        };
        for pass in 0..mrt {
            let reenter = &self.reenter[pass % 2];
            // What a pass activates in its own rows is read by the next pass
            // and, from the second pass on, by the pass itself: a block's only
            // pass reads none of it.
            if mrt > 1 {
                reenter.clear_range(rows.clone());
            }
            let ctx = Ctx {
                next: &self.next,
                reenter,
                rows: rows.clone(),
                changed: AtomicBool::new(false),
            };
            let (edges, skipped) = self.run_pass(b, filter, mode, ahead, f, &ctx);
            st.edges_processed += edges;
            st.sources_skipped += skipped;
            passes += 1;
            if !ctx.changed.load(Relaxed) {
                break;
            }
            filter = reenter;
        }
        st.passes += passes as u64;
        if st.passes_per_block.len() < passes {
            st.passes_per_block.resize(passes, 0);
        }
        st.passes_per_block[passes - 1] += 1;
    }

    /// One pass over the block's sources set in `filter`; returns (edges applied,
    /// sources skipped).
    fn run_pass<P, F>(
        &self,
        b: &RawBlock,
        filter: &AtomicBitmap,
        mode: Mode,
        ahead: &P,
        f: &F,
        ctx: &Ctx,
    ) -> (u64, u64)
    where
        P: Hint,
        F: Runs,
    {
        // Re-entry passes are asynchronous: a source activated earlier in the same
        // pass is processed in it. The first pass keeps the iteration's snapshot,
        // so `mrt = 1` is exactly GridGraph's synchronous iteration.
        let pass = Pass {
            ctx,
            srcs: b.srcs(),
            offs: b.offs(),
            dsts: b.dsts(),
            ws: b.weights(),
            filter,
            asyn: !std::ptr::eq(filter, &self.active),
            ahead,
        };
        let run = |ks: Range<usize>| f.runs(&pass, ks);
        let Some(cuts) = self.share_cuts(b, mode) else {
            return run(0..pass.srcs.len());
        };
        self.pool.install(|| {
            cuts.par_windows(2)
                .map(|w| run(w[0]..w[1]))
                .reduce(|| (0, 0), |a, b| (a.0 + b.0, a.1 + b.1))
        })
    }

    /// Cuts a block's sources into shares of about equal edge counts, several
    /// per thread: share `i` is sources `cuts[i]..cuts[i + 1]`. None: the
    /// block is one thread's (not `Mode::Multi`, one thread, or a small block).
    pub(super) fn share_cuts(&self, b: &RawBlock, mode: Mode) -> Option<Vec<usize>> {
        if mode != Mode::Multi || self.pool.current_num_threads() == 1 || b.num_edges() < 4096 {
            return None;
        }
        let (s, offs) = (b.srcs().len(), b.offs());
        let chunks = (self.pool.current_num_threads() * 8).min(s.max(1));
        let per = (b.num_edges() / chunks).max(1) as u32;
        let mut cuts = vec![0usize];
        let mut k = 0usize;
        for c in 1..chunks as u32 {
            let target = c * per;
            k += offs[k..s].partition_point(|&o| o < target);
            if k > *cuts.last().unwrap() && k < s {
                cuts.push(k);
            }
        }
        cuts.push(s);
        Some(cuts)
    }
}
