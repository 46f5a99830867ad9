//! Passes over a store's CSR lists, list by list, for algorithms on the
//! streaming engine that are not edge programs: wcc's Afforest (Sutton,
//! Ben-Nun and Barak, IPDPS'18) samples two out-edges of every vertex, then
//! reads the out- and in-lists of the vertices outside the giant set only.
//!
//! # Design
//! The lists are read chunk by chunk (`lists.rs`: 4096 vertices a chunk,
//! requests merged across small gaps, every read checked against the lists'
//! page-group checksums) on the engine's pool, in tasks of [`TASK`] chunks,
//! the next [`AHEAD`] chunks' requests hinted to the kernel while one is
//! read, as bfs's sparse steps do (`pull.rs`).
//!
//! # Invariants
//! * A pass hands every picked vertex's whole list to the visitor, in
//!   order; a list longer than a read window (256K edges) comes in pieces,
//!   one call each, in order.
//! * What [`CsrLists::open`] takes from the budget (degrees, chunk offsets,
//!   checksums, the threads' read buffers) goes back in [`CsrLists::close`].

use super::lists::{Bufs, Side, Want, AHEAD, CHUNK, GAP, TASK, WANTED_BYTES, WINDOW};
use super::pull::bottom_up_lists;
use crate::error::Result;
use crate::stream::StreamEngine;
use outcore_io::{InFile, IoStats, ReadMode};
use outcore_state::AtomicBitmap;
use outcore_store::pagesums::{PageSums, SUM_GROUP};
use rayon::prelude::*;
use std::time::Instant;

/// Which lists a pass reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dir {
    /// Each vertex's out-edges (targets).
    Out,
    /// Each vertex's in-edges (sources): `csr.in.*`, or an undirected
    /// store's out-lists.
    In,
}

/// A store's out- and in-edge lists, open for whole-list passes.
pub struct CsrLists {
    out: Side,
    /// None: the in-lists are the out-lists (an undirected store).
    inn: Option<Side>,
    /// Taken from the engine's budget.
    bytes: u64,
}

impl CsrLists {
    /// The engine's store's lists in both directions; None when the store
    /// has no in-lists (directed, ingested without `--in-edges`, or with
    /// marked reverse edges) or the budget does not hold what passes need.
    pub fn open(e: &StreamEngine) -> Result<Option<CsrLists>> {
        let store = e.store();
        let Some(dir) = bottom_up_lists(store.manifest()) else {
            return Ok(None);
        };
        let n = e.vertices() as u64;
        let out_sums = PageSums::load(store, "csr.out.targets")?;
        let in_sums = match dir {
            "in" => Some(PageSums::load(store, "csr.in.targets")?),
            _ => None,
        };
        let buf = WINDOW * 4 + 2 * SUM_GROUP;
        let bytes = Side::bytes(n, &out_sums, None)
            + in_sums.as_ref().map_or(0, |s| Side::bytes(n, s, None))
            + e.threads() as u64 * (buf + (AHEAD as u64 + 1) * WANTED_BYTES);
        if !e.budget().take(bytes) {
            return Ok(None);
        }
        // Copied, not read in place: a pass reads each list once, and a
        // first touch of a mapped page costs more than a copy (wcc on
        // Kronecker 22 --in-edges, warm: 0.23 s copied, 0.26 s mapped).
        let map = false;
        let r = (|| -> Result<CsrLists> {
            Ok(CsrLists {
                out: Side::open(store, "out", out_sums, None, map)?,
                inn: match in_sums {
                    Some(s) => Some(Side::open(store, "in", s, None, map)?),
                    None => None,
                },
                bytes,
            })
        })();
        if r.is_err() {
            e.budget().give_back(bytes);
        }
        r.map(Some)
    }

    /// The share of the store's lists (both directions; the less cached
    /// one's) the page cache holds, found without reading anything (`mincore`
    /// on the target files, outside the store's I/O counters): 0 without
    /// in-lists, and with `--direct`, whose reads bypass the cache.
    pub fn cached_share(e: &StreamEngine) -> f64 {
        let store = e.store();
        let Some(dir) = bottom_up_lists(store.manifest()) else {
            return 0.0;
        };
        if e.config().direct_io {
            return 0.0;
        }
        let share = |name: &str| {
            InFile::open(&store.dir().join(name), ReadMode::Buffered, IoStats::new())
                .map_or(0.0, |f| f.cached_fraction())
        };
        let out = share("csr.out.targets");
        match dir {
            "in" => out.min(share("csr.in.targets")),
            _ => out,
        }
    }

    fn side(&self, dir: Dir) -> &Side {
        match (dir, &self.inn) {
            (Dir::In, Some(s)) => s,
            _ => &self.out,
        }
    }

    /// Hands `visit(v, list)` every list in direction `dir` — every
    /// vertex's, or only those of the vertices clear in `skip` — on the
    /// engine's pool; returns the edges read. Counted in the engine's
    /// `csr_edges` and `csr_seconds`.
    pub fn visit<F>(
        &self,
        e: &mut StreamEngine,
        dir: Dir,
        skip: Option<&AtomicBitmap>,
        visit: F,
    ) -> Result<u64>
    where
        F: Fn(u32, &[u32]) + Sync,
    {
        let t = Instant::now();
        let side = self.side(dir);
        let n = e.vertices();
        let chunks = n.div_ceil(CHUNK);
        let edges = e.pool().install(|| {
            (0..chunks.div_ceil(TASK))
                .into_par_iter()
                .map_init(
                    || (Bufs::default(), vec![Vec::new(); AHEAD as usize + 1]),
                    |(buf, ring), t| -> Result<u64> {
                        let cs = t * TASK..((t + 1) * TASK).min(chunks);
                        let slot = |c: u32| (c % (AHEAD + 1)) as usize;
                        let mut end = u64::MAX - GAP;
                        let mut pick = |c: u32, ring: &mut [Vec<(u32, u64, u64)>]| {
                            let wanted = &mut ring[slot(c)];
                            match skip {
                                Some(b) => side.pick(c, Want::Clear(b), wanted),
                                None => side.pick_all(c, wanted),
                            }
                            side.hint(wanted, &mut end);
                        };
                        for c in cs.start..(cs.start + AHEAD).min(cs.end) {
                            pick(c, ring);
                        }
                        let mut edges = 0;
                        for c in cs.clone() {
                            if c + AHEAD < cs.end {
                                pick(c + AHEAD, ring);
                            }
                            edges += side.lists(&ring[slot(c)], buf, |v, list, _| {
                                visit(v, list);
                                (list.len() as u64, false)
                            })?;
                        }
                        Ok(edges)
                    },
                )
                .try_reduce(|| 0, |a, b| Ok(a + b))
        })?;
        e.add_csr_pass(edges, t.elapsed().as_secs_f64());
        Ok(edges)
    }

    /// Gives what [`CsrLists::open`] took back to the budget.
    pub fn close(self, e: &StreamEngine) {
        e.budget().give_back(self.bytes);
    }
}
