//! The tasks the jobs process: a loaded sub-block's active sources, split into
//! pieces of about [`TASK_EDGES`] edges.

use super::loader::*;
use super::*;
use crate::AHEAD;
use outcore_state::AtomicBitmap;
use rayon::prelude::*;

pub(super) struct Slot<'j> {
    pub(super) job: &'j mut dyn Job,
    pub(super) active: AtomicBitmap,
    pub(super) next: AtomicBitmap,
    pub(super) stats: JobStats,
}

/// Edges of a task (the last source run may take it past this).
pub(super) const TASK_EDGES: usize = 16384;

/// Threads of the loader's I/O pool: the reads kept in flight.
pub const IO_THREADS: usize = 4;

/// Reads in flight in lists mode: its requests are small and random, and the
/// device serves more of those at once (the calibrated 4 KiB random bandwidth at
/// depth 16 is about twice that at depth 4 on the development VM).
pub const LIST_DEPTH: usize = 16;

/// How many edges ahead of the runs it scans [`Task::for_each`] fetches targets and
/// weights when few runs are picked (a software stream: the picked runs' skips
/// defeat the hardware's).
pub(super) const STREAM_AHEAD: u32 = 256;

/// How many runs ahead [`Task::for_each`] hints a source when most runs are picked.
pub(super) const DENSE_SOURCES_AHEAD: usize = 8;

/// One task of a job: a slice of one loaded sub-block's source runs, of which the
/// sources set in a filter bitmap are processed.
pub struct Task<'a> {
    pub(super) srcs: &'a [u32],
    pub(super) offs: &'a [u32],
    pub(super) dsts: &'a [u32],
    pub(super) ws: Option<&'a [f32]>,
    /// The task's runs: `a..b` of `srcs`.
    pub(super) a: usize,
    pub(super) b: usize,
    /// Source `u` is picked when bit `u - base` is set.
    pub(super) filter: &'a AtomicBitmap,
    pub(super) base: u32,
    /// No task that runs at the same time as this one touches this task's targets
    /// for the same job: the job asked for [`Job::exclusive_targets`] and the
    /// engine runs its sub-blocks, all of distinct column intervals, one task each.
    pub exclusive: bool,
}

impl Task<'_> {
    /// Whether at least half the runs are picked, judged from (at most) 32 runs
    /// spread over the task.
    pub(super) fn dense(&self) -> bool {
        let step = ((self.b - self.a) / 32).max(1);
        let (picked, seen) = (self.a..self.b).step_by(step).fold((0, 0), |(p, n), x| {
            (
                p + self.filter.get(self.srcs[x] - self.base) as usize,
                n + 1,
            )
        });
        2 * picked >= seen
    }

    /// Calls `f(u, targets, weights)` for every picked source of the task, in
    /// order, with look-ahead hints `pre_src(u)` and `pre(targets)`. When at least
    /// half the runs are picked the hints go by position (the source
    /// `DENSE_SOURCES_AHEAD` runs on, the targets [`AHEAD`] edges on), the cheapest
    /// loop for a dense frontier. Otherwise they follow the picked runs, each
    /// hinted about AHEAD edges before `f` reaches it: with a sparse frontier,
    /// whatever run lies AHEAD edges further is mostly one the job skips. Returns
    /// the edges given to `f`.
    #[inline(always)]
    pub fn for_each(
        &self,
        mut pre_src: impl FnMut(u32),
        mut pre: impl FnMut(&[u32]),
        mut f: impl FnMut(u32, &[u32], Option<&[f32]>),
    ) -> u64 {
        let (srcs, offs, dsts) = (self.srcs, self.offs, self.dsts);
        if self.a == self.b {
            return 0;
        }
        if self.dense() {
            let end = offs[self.b] as usize;
            let mut edges = 0u64;
            for x in self.a..self.b {
                let u = srcs[x];
                if let Some(&w) = srcs[..self.b].get(x + DENSE_SOURCES_AHEAD) {
                    pre_src(w);
                }
                if !self.filter.get(u - self.base) {
                    continue;
                }
                let (ea, eb) = (offs[x] as usize, offs[x + 1] as usize);
                pre(&dsts[(ea + AHEAD).min(end)..(eb + AHEAD).min(end)]);
                f(u, &dsts[ea..eb], self.ws.map(|w| &w[ea..eb]));
                edges += (eb - ea) as u64;
            }
            return edges;
        }
        // The hinted, not yet applied runs: ring[head..tail] (mod RING). A run is
        // added only while the window counts fewer than AHEAD, and counts at least
        // 1 (its edges, or 1 for an empty run), so the window never holds more
        // than AHEAD + 1 runs.
        const RING: usize = 64;
        const _: () = assert!(RING > AHEAD + 1);
        let mut ring = [0u32; RING];
        let (mut head, mut tail) = (0usize, 0usize);
        let mut window = 0usize;
        let mut y = self.a;
        let mut edges = 0u64;
        loop {
            while window < AHEAD && y < self.b {
                // The scan skips through the targets (and weights), which the
                // hardware does not stream: fetch them STREAM_AHEAD edges on.
                let o = offs[y] + STREAM_AHEAD;
                crate::prefetch(dsts, o);
                if let Some(w) = self.ws {
                    crate::prefetch(w, o);
                }
                let u = srcs[y];
                if self.filter.get(u - self.base) {
                    let (ea, eb) = (offs[y] as usize, offs[y + 1] as usize);
                    pre_src(u);
                    pre(&dsts[ea..eb]);
                    // The weights are read only by `f`, a skip away from the
                    // previous picked run's: a stream the hardware does not follow.
                    if let Some(w) = self.ws {
                        for i in (ea..eb).step_by(16).chain((eb > ea).then(|| eb - 1)) {
                            crate::prefetch(w, i as u32);
                        }
                    }
                    ring[tail % RING] = y as u32;
                    tail += 1;
                    window += (eb - ea).max(1);
                }
                y += 1;
            }
            if head == tail {
                break;
            }
            let x = ring[head % RING] as usize;
            head += 1;
            let (ea, eb) = (offs[x] as usize, offs[x + 1] as usize);
            window -= (eb - ea).max(1);
            f(srcs[x], &dsts[ea..eb], self.ws.map(|w| &w[ea..eb]));
            edges += (eb - ea) as u64;
        }
        edges
    }
}

/// Runs the edge functions of jobs `ks` over the loaded blocks, for the sources
/// `pick(job)` = (bitmap, base) selects, as tasks of about 16K edges per job:
/// rayon's work stealing shares the threads among jobs in proportion to their
/// active edges. When `distinct_targets` (the blocks are one grid row's sub-blocks,
/// so of distinct column intervals) and there are at least two blocks per thread, a
/// job that asks for [`Job::exclusive_targets`] gets one task per block instead.
/// Returns the edges each job processed, and how many tasks were exclusive.
pub(super) fn process<'b>(
    slots: &[Slot],
    ks: &[usize],
    loaded: &[Loaded],
    distinct_targets: bool,
    pick: &(dyn Fn(usize) -> Option<(&'b AtomicBitmap, u32)> + Sync),
) -> (Vec<(usize, u64)>, u64) {
    let whole_blocks = distinct_targets && loaded.len() >= 2 * rayon::current_num_threads();
    let mut tasks: Vec<(usize, usize, usize, usize, bool)> = Vec::new();
    for (li, l) in loaded.iter().enumerate() {
        let (srcs, offs, _, _) = l.parts();
        for &k in ks {
            let exclusive = whole_blocks && slots[k].job.exclusive_targets();
            let mut a = 0;
            while a < srcs.len() {
                let mut b = a + 1;
                while b < srcs.len() && (exclusive || ((offs[b] - offs[a]) as usize) < TASK_EDGES) {
                    b += 1;
                }
                tasks.push((li, k, a, b, exclusive));
                a = b;
            }
        }
    }
    let exclusive_tasks = tasks.iter().filter(|t| t.4).count() as u64;
    let edges = tasks
        .par_iter()
        .filter_map(|&(li, k, a, b, exclusive)| {
            let (srcs, offs, dsts, ws) = loaded[li].parts();
            let s = &slots[k];
            let (filter, base) = pick(k)?;
            let ctx = JobCtx { next: &s.next };
            let t = Task {
                srcs,
                offs,
                dsts,
                // A job that reads no weights gets none (and no hints for them).
                ws: ws.filter(|_| s.job.weighted()),
                a,
                b,
                filter,
                base,
                exclusive,
            };
            Some((k, s.job.task(&ctx, &t)))
        })
        .collect();
    (edges, exclusive_tasks)
}
