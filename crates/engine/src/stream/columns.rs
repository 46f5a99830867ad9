//! [`Mode::Columns`]' consumers: the pool's threads take whole blocks in
//! streaming order, a column (target interval) one thread's at a time, so an
//! edge function may update its target with a plain load and store.

use super::{Mode, StreamEngine, StreamStats};
use crate::error::Result;
use outcore_store::RawBlock;
use std::sync::atomic::{
    AtomicBool,
    Ordering::{Acquire, Relaxed, Release},
};
use std::sync::mpsc::{Receiver, Sender};
use std::sync::Mutex;
use std::time::Instant;

impl StreamEngine<'_> {
    /// [`Mode::Columns`]' consumers: every thread of the pool takes the next
    /// block of `todo` from its reader (in order, under one lock), then its
    /// column's flag (waiting while another thread holds it), processes the
    /// block alone in one pass, and hands the buffer back. Returns the
    /// threads' figures, the seconds averaged over them.
    pub(super) fn columns<P, F>(
        &self,
        todo: &[(u32, u32)],
        fulls: Vec<Receiver<Result<RawBlock>>>,
        frees: &[Sender<RawBlock>],
        ahead: &P,
        f: &F,
    ) -> Result<StreamStats>
    where
        P: super::Hint,
        F: super::Runs,
    {
        let readers = fulls.len();
        let queue = Mutex::new((0usize, fulls));
        let busy: Vec<AtomicBool> = (0..self.grid.partitions())
            .map(|_| AtomicBool::new(false))
            .collect();
        let stop = AtomicBool::new(false);
        let worker = || -> Result<StreamStats> {
            let mut st = StreamStats::default();
            while !stop.load(Relaxed) {
                let t = Instant::now();
                let (k, msg) = {
                    let mut q = queue.lock().unwrap_or_else(|p| p.into_inner());
                    let k = q.0;
                    if k >= todo.len() {
                        break;
                    }
                    q.0 += 1;
                    match q.1[k % readers].recv() {
                        Ok(m) => (k, m),
                        Err(_) => break,
                    }
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
                let _ = frees[k % readers].send(block);
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
