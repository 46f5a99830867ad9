//! Reading sub-blocks and edge lists within the memory: the fetcher, the spare
//! buffers, grouping of requests.

use super::task::*;
use super::*;
use crate::{EngineError, Result};
use outcore_store::lists::{ListGroup, ListReader};
use outcore_store::reader::{Block, RawBlock};
use rayon::prelude::*;
use std::time::Instant;

/// Lists units' on-demand reads (fetched activations).
pub(super) struct Fetcher<'a> {
    pub(super) lists: &'a ListReader<'a>,
    pub(super) pool: &'a rayon::ThreadPool,
    pub(super) degrees: &'a [u32],
    /// CSR payload files read per list (targets, and weights where needed).
    pub(super) files: u64,
}

impl Fetcher<'_> {
    /// The whole lists of the vertices `cands` (sorted and deduplicated here), as
    /// many of the first as fit `room` bytes (which they use up), read in parallel
    /// requests into `loaded`: returns the vertices read. `largest` keeps the
    /// largest request (its buffers stay).
    pub(super) fn fetch(
        &self,
        stats: &mut JobsStats,
        largest: &mut u64,
        mut cands: Vec<u32>,
        room: &mut u64,
        weights: bool,
        loaded: &mut Vec<Loaded>,
    ) -> Result<Vec<u32>> {
        cands.sort_unstable();
        cands.dedup();
        let mut take = 0;
        for &v in &cands {
            let b = 4 * self.files * self.degrees[v as usize] as u64 + 8;
            if b > *room {
                break;
            }
            *room -= b;
            take += 1;
        }
        cands.truncate(take);
        let vs = cands;
        if vs.is_empty() {
            return Ok(vs);
        }
        let t = Instant::now();
        let plan = self.lists.plan(&vs);
        let big = plan.iter().map(|g| g.b - g.a).max().unwrap_or(0);
        *largest = (*largest).max(4 * big + 4096);
        loaded.extend(read_lists(self.pool, self.lists, &vs, &plan, weights)?);
        let secs = t.elapsed().as_secs_f64();
        stats.io_seconds += secs;
        stats.io_wait_seconds += secs;
        stats.list_groups += plan.len() as u64;
        stats.lists_loaded += vs.len() as u64;
        stats.fetched += vs.len() as u64;
        Ok(vs)
    }
}

/// Whole sub-blocks handed back after processing, for the loader to read into
/// again: no allocation and zeroing of fresh buffers per sub-block (which was a
/// few percent of the CPU time of whole passes). It keeps at most `limit` bytes of
/// buffers (half the budget: the unit just processed, whose memory the loader's
/// next unit takes over), and hands a block out only to a sub-block that needs
/// most of its buffers, so the units in memory stay close to their accounting.
pub(super) struct Spare {
    pub(super) blocks: std::sync::Mutex<Vec<RawBlock>>,
    pub(super) limit: u64,
}

impl Spare {
    /// Slack a handed-out block may hold beyond a quarter more than the need.
    const SLACK: u64 = 64 << 10;

    pub(super) fn new(limit: u64) -> Spare {
        Spare {
            blocks: std::sync::Mutex::new(Vec::new()),
            limit,
        }
    }

    /// A block to read a sub-block of `read` bytes, `decoded` bytes once decoded,
    /// into: the smallest spare one that holds both without much waste, else a new
    /// one.
    pub(super) fn take(&self, read: u64, decoded: u64) -> RawBlock {
        // Direct reads are aligned to 4 KiB at both ends.
        let read = read + 8192;
        let need = read + decoded;
        let mut v = self
            .blocks
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let fit = v
            .iter()
            .enumerate()
            .filter(|(_, b)| {
                let (p, d) = b.capacities();
                p >= read && d >= decoded
            })
            .min_by_key(|(_, b)| b.capacity_bytes())
            .map(|(i, b)| (i, b.capacity_bytes()));
        match fit {
            Some((i, cap)) if cap <= need + need / 4 + Self::SLACK => v.swap_remove(i),
            _ => RawBlock::default(),
        }
    }

    /// Keeps the whole sub-blocks of a processed unit, as far as the limit allows.
    pub(super) fn give(&self, loaded: Vec<Loaded>) {
        let mut v = self
            .blocks
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let mut held: u64 = v.iter().map(|b| b.capacity_bytes()).sum();
        for l in loaded {
            if let Loaded::Whole(b) = l {
                let c = b.capacity_bytes();
                if held + c <= self.limit {
                    held += c;
                    v.push(b);
                }
            }
        }
    }
}

/// Reads the requests `groups` over the sorted `vertices` in parallel on `pool`,
/// as loaded blocks (see [`batch`]).
pub(super) fn read_lists(
    pool: &rayon::ThreadPool,
    lists: &ListReader,
    vertices: &[u32],
    groups: &[ListGroup],
    weights: bool,
) -> Result<Vec<Loaded>> {
    pool.install(|| {
        groups
            .par_iter()
            .map(|g| lists.read(vertices, g, weights))
            .collect::<std::result::Result<Vec<Block>, _>>()
    })
    .map(batch)
    .map_err(EngineError::from)
}

/// Cuts items `0..n` into consecutive ranges `(g, h)` whose `bytes` sum to at most
/// `cap` (a range always takes at least one item).
pub(super) fn fill(n: usize, bytes: impl Fn(usize) -> u64, cap: u64) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut g = 0;
    while g < n {
        let (mut h, mut sum) = (g, 0);
        while h < n && (h == g || sum + bytes(h) <= cap) {
            sum += bytes(h);
            h += 1;
        }
        out.push((g, h));
        g = h;
    }
    out
}

/// Cuts items `0..n` into as few consecutive ranges as [`fill`] does, of sizes as
/// even as that count allows: the smallest cap up to `cap` that still needs no
/// more ranges. Even units leave the most slack beside two of them (reuse) and
/// keep the loader and the processing in step.
pub(super) fn fill_even(n: usize, bytes: impl Fn(usize) -> u64, cap: u64) -> Vec<(usize, usize)> {
    let k = fill(n, &bytes, cap).len();
    let total: u64 = (0..n).map(&bytes).sum();
    let (mut lo, mut hi) = ((total / k.max(1) as u64).min(cap), cap);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if fill(n, &bytes, mid).len() <= k {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    fill(n, bytes, hi)
}

/// The blocks of a lists unit's requests, in order, with runs of small ones
/// joined into blocks of at least [`TASK_EDGES`] edges (a block is at least one
/// task per job).
pub(super) fn batch(blocks: Vec<Block>) -> Vec<Loaded> {
    let mut out: Vec<Loaded> = Vec::new();
    let mut cur: Option<Block> = None;
    for b in blocks {
        if b.dsts.len() >= TASK_EDGES {
            out.push(Loaded::Selective(b));
            continue;
        }
        match &mut cur {
            None => cur = Some(b),
            Some(c) => {
                let base = c.dsts.len() as u32;
                c.srcs.extend_from_slice(&b.srcs);
                c.offs.extend(b.offs[1..].iter().map(|&o| base + o));
                c.dsts.extend_from_slice(&b.dsts);
                if let (Some(w), Some(bw)) = (&mut c.weights, &b.weights) {
                    w.extend_from_slice(bw);
                }
            }
        }
        if cur.as_ref().is_some_and(|c| c.dsts.len() >= TASK_EDGES) {
            out.extend(cur.take().map(Loaded::Selective));
        }
    }
    out.extend(cur.map(Loaded::Selective));
    out
}

pub(super) enum Loaded {
    Whole(RawBlock),
    Selective(Block),
}

/// Sources, offsets, targets and weights of a loaded sub-block.
pub(super) type Parts<'a> = (&'a [u32], &'a [u32], &'a [u32], Option<&'a [f32]>);

impl Loaded {
    pub(super) fn parts(&self) -> Parts<'_> {
        match self {
            Loaded::Whole(b) => (b.srcs(), b.offs(), b.dsts(), b.weights()),
            Loaded::Selective(b) => (&b.srcs, &b.offs, &b.dsts, b.weights.as_deref()),
        }
    }
}
