//! [`Mode::Columns`]' consumers: the pool's threads take whole blocks in
//! streaming order, a column (target interval) one thread's at a time, so an
//! edge function may update its target with a plain load and store.

use super::held::Feed;
use super::{Mode, StreamEngine, StreamStats};
use crate::error::Result;
use std::sync::atomic::{
    AtomicBool,
    Ordering::{Acquire, Relaxed, Release},
};
use std::time::Instant;

impl StreamEngine<'_> {
    /// [`Mode::Columns`]' consumers: every thread of the pool takes the next
    /// block from the feed (in order, under one lock), then its
    /// column's flag (waiting while another thread holds it), processes the
    /// block alone in one pass, and hands the buffer back. Returns the
    /// threads' figures, the seconds averaged over them.
    pub(super) fn columns<P, F>(&self, feed: &Feed<'_>, ahead: &P, f: &F) -> Result<StreamStats>
    where
        P: super::Hint,
        F: super::Runs,
    {
        let busy: Vec<AtomicBool> = (0..self.grid.partitions())
            .map(|_| AtomicBool::new(false))
            .collect();
        let stop = AtomicBool::new(false);
        let worker = || -> Result<StreamStats> {
            let mut st = StreamStats::default();
            while !stop.load(Relaxed) {
                let t = Instant::now();
                let Some((k, msg)) = feed.next() else {
                    break;
                };
                st.io_wait_seconds += t.elapsed().as_secs_f64();
                let block = match msg {
                    Ok(b) => b,
                    Err(e) => {
                        stop.store(true, Relaxed);
                        return Err(e);
                    }
                };
                let col = &busy[block.col as usize];
                while col
                    .compare_exchange_weak(false, true, Acquire, Relaxed)
                    .is_err()
                {
                    std::thread::yield_now();
                }
                let t = Instant::now();
                self.process(&block, Mode::Columns, ahead, f, &mut st);
                st.compute_seconds += t.elapsed().as_secs_f64();
                col.store(false, Release);
                st.blocks_read += 1;
                self.observer.block_done(block.num_edges() as u64);
                feed.done(k, block);
            }
            Ok(st)
        };
        let threads = self.pool.current_num_threads();
        let results = self.pool.broadcast(|_| worker());
        let mut total = StreamStats::default();
        for r in results {
            total.merge_from(&r?);
        }
        total.io_wait_seconds /= threads as f64;
        total.compute_seconds /= threads as f64;
        Ok(total)
    }
}
