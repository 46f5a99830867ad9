//! The cost model: what each way of loading an iteration's (or a row's)
//! sub-blocks costs (§3.3.2, Algorithm 1).

use super::task::*;
use super::*;
use outcore_store::lists::{ListGroup, ListReader};
use outcore_store::reader::GridReader;

/// How one iteration loads its edges (the resolved [`IoMode`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Load {
    Whole = 0,
    Runs = 1,
    Lists = 2,
}

impl Load {
    pub(super) fn name(self) -> &'static str {
        match self {
            Load::Whole => "sequential",
            Load::Runs => "selective",
            Load::Lists => "lists",
        }
    }
}

/// What the cost model prices an iteration's loads with (see `JobsEngine::cheapest`).
#[derive(Clone, Copy)]
pub(super) struct Pricing {
    /// Bytes per stored edge read (a packed id, and a weight where needed).
    pub(super) edge_bytes: f64,
    pub(super) with_weights: bool,
    /// Vertices the previous iteration's active edges activated, per edge (at
    /// most 1; 0 without DFVU or before the second iteration).
    pub(super) fetch_yield: f64,
}

/// Seconds to read the lists of `plan` from `files` CSR payload files: the pages of
/// requests that read at most `io_block` bytes at the random bandwidth `bw_list`,
/// larger requests at the sequential one.
pub(super) fn lists_cost(
    plan: &[ListGroup],
    files: u64,
    io_block: u64,
    bw_seq: f64,
    bw_list: f64,
) -> f64 {
    let (mut seq, mut ran) = (0u64, 0u64);
    for g in plan {
        if 4 * (g.b - g.a) > io_block {
            seq += g.pages();
        } else {
            ran += g.pages();
        }
    }
    (files * seq * 4096) as f64 / bw_seq + (files * ran * 4096) as f64 / bw_list
}

impl JobsEngine<'_> {
    /// Sequential with the loader's streams (its I/O threads read that many blocks
    /// at once; the single-stream figure where the profile has no parallel test),
    /// random 4 KiB at the loader's depth (one read in flight per I/O thread) and
    /// random 4 KiB at the lists mode's depth, bytes per second.
    pub(super) fn bandwidths(&self) -> (f64, f64, f64) {
        match &self.cfg.profile {
            Some(p) => {
                let at = |depth: usize| {
                    p.random_read_bw_at(4096, depth as u64)
                        .unwrap_or(p.seq_read_bw() / 10.0)
                };
                (
                    p.seq_read_bw_at(IO_THREADS as u64),
                    at(IO_THREADS),
                    at(LIST_DEPTH),
                )
            }
            None => (500e6, 50e6, 50e6),
        }
    }

    /// S_seq and S_ran of the paper's Algorithm 1 over the sorted active set, in
    /// bytes. A group of small runs of contiguous ids is read as one request per
    /// sub-block it spans (min(P, its edges)), each at least one 4 KiB page, so S_ran
    /// is charged as what the device really transfers.
    pub(super) fn alg1(&self, active: &[u32], edge_bytes: f64) -> (f64, f64) {
        let p = self.store.partitions() as u64;
        let b = self.cfg.io_block as f64;
        let (mut s_seq, mut s_ran) = (0.0, 0.0);
        // L: the pending group of small runs (bytes, edges).
        let mut pending = (0.0, 0u64);
        let mut prev: Option<(u32, bool)> = None; // (id, loaded sequentially)
        let flush = |pending: &mut (f64, u64), s_seq: &mut f64, s_ran: &mut f64| {
            let (bytes, edges) = *pending;
            if bytes > b {
                *s_seq += bytes;
            } else if edges > 0 {
                let requests = edges.min(p) as f64;
                *s_ran += bytes.max(requests * 4096.0);
            }
            *pending = (0.0, 0);
        };
        for &v in active {
            let d = self.degrees[v as usize] as u64;
            if d == 0 {
                continue;
            }
            let k = d.min(p) as f64;
            let run = d as f64 * edge_bytes / k;
            let contiguous = prev.is_some_and(|(id, _)| id + 1 == v);
            let seq = if contiguous && prev.is_some_and(|(_, s)| s) {
                s_seq += run * k;
                true
            } else {
                if !contiguous {
                    flush(&mut pending, &mut s_seq, &mut s_ran);
                }
                if run > b {
                    s_seq += run * k;
                    true
                } else {
                    pending.0 += d as f64 * edge_bytes;
                    pending.1 += d;
                    false
                }
            };
            prev = Some((v, seq));
        }
        flush(&mut pending, &mut s_seq, &mut s_ran);
        (s_seq, s_ran)
    }

    /// The cheapest way to load the rows `rows` of the grid for the sorted active
    /// vertices `act` of those rows, by the cost model: C_s (their non-empty
    /// sub-blocks whole, sequentially), C_r (each needed sub-block's index, a small
    /// request, plus S_seq and S_ran of Algorithm 1) and C_l (the lists' pages,
    /// priced by [`lists_cost`]; planned only when the lists' bytes alone, at the
    /// sequential bandwidth, could beat the cheaper grid mode). Also the lists plan
    /// when it was priced.
    ///
    /// With DFVU a lists iteration also reads, on demand, the lists of sources it
    /// activates ahead of its units (fetched activations), where a whole row holds
    /// them already: C_l is raised by the lists expected so — half (those in later
    /// rows) of the vertices the active lists' edges activate, estimated with the
    /// share `Pricing::fetch_yield` of the previous iteration's active edges that
    /// activated a vertex — each at the planned lists' average cost.
    pub(super) fn cheapest(
        &self,
        grid: &GridReader,
        lists: &ListReader,
        rows: &[u32],
        act: &[u32],
        price: Pricing,
    ) -> (Load, Option<Vec<ListGroup>>) {
        let Pricing {
            edge_bytes,
            with_weights,
            fetch_yield,
        } = price;
        let p = self.store.partitions();
        let (bw_seq, bw_ran, bw_list) = self.bandwidths();
        let (mut c_s_bytes, mut index_bytes, mut index_blocks) = (0u64, 0u64, 0u64);
        for &r in rows {
            for c in 0..p {
                c_s_bytes += grid.block_read_bytes(r, c, with_weights);
                index_bytes += grid.entry(r, c).index_bytes();
                index_blocks += (grid.entry(r, c).edges > 0) as u64;
            }
        }
        let c_s = c_s_bytes as f64 / bw_seq;
        let list_edges: u64 = act.iter().map(|&v| self.degrees[v as usize] as u64).sum();
        // Each needed sub-block's index is one more small request.
        let requests = 4096.0 * index_blocks as f64 / bw_ran;
        // S_seq + S_ran counts every active edge's bytes at least once, so when the
        // random bandwidth is not above the sequential one C_r is at least `floor`;
        // a floor above C_s decides without Algorithm 1's pass over the active set
        // (every iteration of a dense frontier, e.g. PageRank's).
        let floor = (index_bytes as f64 + list_edges as f64 * edge_bytes) / bw_seq + requests;
        let c_r = if bw_ran <= bw_seq && floor > c_s {
            floor
        } else {
            let (s_seq, s_ran) = self.alg1(act, edge_bytes);
            (index_bytes as f64 + s_seq) / bw_seq + s_ran / bw_ran + requests
        };
        let best = c_s.min(c_r);
        let list_files = if with_weights { 2 } else { 1 };
        let mut plan = None;
        let c_l = if (4 * list_files * list_edges) as f64 / bw_seq < best {
            let g = plan.insert(lists.plan(act));
            let others = self.store.vertices() as f64 - act.len() as f64;
            let fetches = (fetch_yield * list_edges as f64 / 2.0).min(others);
            lists_cost(g, list_files, self.cfg.io_block, bw_seq, bw_list)
                * (1.0 + fetches / act.len().max(1) as f64)
        } else {
            f64::INFINITY
        };
        let load = if c_l < best {
            Load::Lists
        } else if c_r <= c_s {
            Load::Runs
        } else {
            Load::Whole
        };
        (load, plan)
    }
}
