//! The iteration loop (Algorithm 2): the shared active set, the loads chosen by
//! the cost model, DFVU within a row in memory, reuse across iterations.

use super::cost::*;
use super::loader::*;
use super::task::*;
use super::*;
use crate::{EngineError, Result};
use outcore_io::IoSnapshot;
use outcore_state::AtomicBitmap;
use outcore_store::lists::{ListGroup, ListReader};
use outcore_store::reader::RawBlock;
use rayon::prelude::*;
use std::time::Instant;

impl JobsEngine<'_> {
    /// Runs the jobs to completion (or until `max_iterations`).
    pub fn run(&mut self, jobs: &mut [&mut dyn Job], max_iterations: Option<u64>) -> Result<()> {
        let n = self.store.vertices() as usize;
        let p = self.store.partitions();
        let grid = self.store.grid()?;
        let lists = ListReader::open(self.store, &self.degrees)?;
        let io = self.store.stats().clone();
        let weighted_any = jobs.iter().any(|j| j.weighted());
        // Bytes per stored edge: a packed local id (store format 2), plus a weight.
        let with_weights = weighted_any && self.store.weighted();
        let edge_bytes = outcore_store::codec::id_bits(self.store.manifest().interval) as f64 / 8.0
            + if with_weights { 4.0 } else { 0.0 };
        let mut slots: Vec<Slot> = jobs
            .iter_mut()
            .map(|j| {
                let active = AtomicBitmap::new(n);
                j.init(&active);
                Slot {
                    job: &mut **j,
                    active,
                    next: AtomicBitmap::new(n),
                    stats: JobStats::default(),
                }
            })
            .collect();
        let io_block = self.cfg.io_block;
        // Reads in flight: a small pool of its own, apart from the compute threads.
        let io_pool = rayon::ThreadPoolBuilder::new()
            .num_threads(IO_THREADS)
            .thread_name(|i| format!("outcore-jobs-io-{i}"))
            .build()
            .map_err(|e| EngineError::Invalid(format!("cannot start the I/O threads: {e}")))?;
        let list_pool = rayon::ThreadPoolBuilder::new()
            .num_threads(LIST_DEPTH)
            .thread_name(|i| format!("outcore-jobs-lists-{i}"))
            .build()
            .map_err(|e| EngineError::Invalid(format!("cannot start the I/O threads: {e}")))?;
        let start_io: IoSnapshot = io.snapshot();
        let spare = Spare::new(self.cfg.memory / 2);
        // The whole sub-blocks the previous iteration kept, in the order processed.
        let mut kept: Vec<RawBlock> = Vec::new();
        // The previous iteration's active edges (the cost model's fetch yield).
        let mut prev_edges: Option<u64> = None;
        let mut it = 0u64;
        // Bytes of the largest lists request read so far (its buffers stay).
        let mut largest_list_request = 0u64;
        loop {
            let live: Vec<usize> = (0..slots.len())
                .filter(|&k| !slots[k].stats.finished && slots[k].active.any())
                .collect();
            for s in slots.iter_mut() {
                if !s.stats.finished && !s.active.any() {
                    s.stats.finished = true;
                }
            }
            if live.is_empty() || max_iterations.is_some_and(|m| it >= m) {
                break;
            }
            it += 1;
            let iteration_start = (Instant::now(), io.snapshot());
            // The shared active set, by row.
            let shared = AtomicBitmap::new(n);
            for &k in &live {
                shared.or_from(&slots[k].active);
            }
            let active: Vec<u32> = shared.ones().collect();
            self.stats.iteration_active.push(active.len() as u64);
            // The share of the previous iteration's active edges that activated a
            // vertex for this one (fetched activations in the cost model; only the
            // auto mode with DFVU uses it).
            let fetch_yield = if self.cfg.io_mode == IoMode::Auto && self.cfg.dfvu {
                let y = match prev_edges {
                    Some(e) if e > 0 => (active.len() as f64 / e as f64).min(1.0),
                    _ => 0.0,
                };
                prev_edges = Some(
                    active
                        .iter()
                        .map(|&v| self.degrees[v as usize] as u64)
                        .sum(),
                );
                y
            } else {
                0.0
            };
            let price = Pricing {
                edge_bytes,
                with_weights,
                fetch_yield,
            };
            let rows: Vec<u32> = (0..p)
                .filter(|&r| shared.any_in(self.store.interval(r)))
                .collect();
            // Where each active row's active vertices lie in `active`.
            let spans: Vec<(usize, usize)> = rows
                .iter()
                .map(|&r| {
                    let range = self.store.interval(r);
                    (
                        active.partition_point(|&v| v < range.start),
                        active.partition_point(|&v| v < range.end),
                    )
                })
                .collect();
            let forced = |l: Load| (vec![l; rows.len()], None);
            let (row_loads, mut plan): (Vec<Load>, Option<Vec<ListGroup>>) =
                match (self.cfg.io_mode, self.cfg.granularity) {
                    (IoMode::Sequential, _) => forced(Load::Whole),
                    (IoMode::Selective, _) => forced(Load::Runs),
                    (IoMode::Lists, _) => forced(Load::Lists),
                    (IoMode::Auto, Granularity::Iteration) => {
                        let (l, plan) = self.cheapest(&grid, &lists, &rows, &active, price);
                        (vec![l; rows.len()], plan)
                    }
                    (IoMode::Auto, Granularity::Row) => (
                        rows.iter()
                            .zip(&spans)
                            .map(|(&r, &(a, b))| {
                                self.cheapest(&grid, &lists, &[r], &active[a..b], price).0
                            })
                            .collect(),
                        None,
                    ),
                };
            let mut by_mode = [0u32; 3];
            for &l in &row_loads {
                by_mode[l as usize] += 1;
            }
            self.stats.iteration_row_modes.push(by_mode);
            self.stats
                .modes
                .push(match by_mode.iter().filter(|&&c| c > 0).count() {
                    1 => row_loads[0].name().into(),
                    _ => "mixed".into(),
                });
            if row_loads.iter().any(|&l| l != Load::Lists) {
                self.stats.blocks_skipped += (p - rows.len() as u32) as u64 * p as u64;
            }
            // Lists mode reads a list's targets and, with weights, as many weight
            // bytes, from the CSR's two files.
            let list_files = if with_weights { 2 } else { 1 };
            // A third of the budget left beside the lists requests' read buffers
            // (LIST_DEPTH threads, one buffer per CSR file each, as large as the
            // largest request read so far).
            let memory = self.cfg.memory;
            let lists_third =
                |largest: u64| memory.saturating_sub(LIST_DEPTH as u64 * list_files * largest) / 3;
            // The iteration's units: groups of one row's non-empty sub-blocks that fit
            // half the budget (one being processed, one read and handed over only
            // when processing takes it). Weights are read only for rows where a
            // weighted job is active. A unit of lists mode has no row or columns but the requests `groups`
            // over its `active` vertices (of one or more consecutive active rows
            // that load lists).
            struct Unit {
                load: Load,
                row: u32,
                cols: Vec<u32>,
                groups: Vec<ListGroup>,
                /// The vertices whose edges the unit may hold.
                range: std::ops::Range<u32>,
                /// Lists units: the vertices whose lists it fetches on demand (the
                /// lists units of consecutive rows split those rows between them).
                fetch: std::ops::Range<u32>,
                /// Every loaded source's edges are all in the unit (for DFVU).
                complete: bool,
                weights: bool,
                jobs: Vec<usize>,
                active: Vec<u32>,
            }
            // The live jobs active in a range of vertices, and whether the unit
            // holding them needs weights.
            let jobs_in = |range: &std::ops::Range<u32>| {
                let ks: Vec<usize> = live
                    .iter()
                    .copied()
                    .filter(|&k| slots[k].active.any_in(range.clone()))
                    .collect();
                let weights = self.store.weighted() && ks.iter().any(|&k| slots[k].job.weighted());
                (ks, weights)
            };
            let mut units: Vec<Unit> = Vec::new();
            let mut i = 0;
            while i < rows.len() {
                if row_loads[i] == Load::Lists {
                    // Consecutive active rows that load lists share one plan.
                    let j = i + row_loads[i..]
                        .iter()
                        .take_while(|&&l| l == Load::Lists)
                        .count();
                    let act = &active[spans[i].0..spans[j - 1].1];
                    let plan = match plan.take() {
                        Some(plan) if i == 0 && j == rows.len() => plan,
                        _ => lists.plan(act),
                    };
                    // Groups of requests whose lists (targets, weights, 8 bytes a
                    // source) fit a third of the budget left beside the read
                    // buffers (one unit is processed, one read, and the first may
                    // fetch as much on demand); a request's buffer is its bytes
                    // and a page more for alignment.
                    let largest = plan.iter().map(|g| g.b - g.a).max().unwrap_or(0);
                    largest_list_request = largest_list_request.max(4 * largest + 4096);
                    let unit_bytes = lists_third(largest_list_request);
                    let first_unit = units.len();
                    let group_bytes = |g: &ListGroup| {
                        4 * list_files * (g.b - g.a) + 8 * (g.last - g.first) as u64
                    };
                    for (g, h) in fill(plan.len(), |i| group_bytes(&plan[i]), unit_bytes) {
                        let (first, last) = (plan[g].first, plan[h - 1].last);
                        let vs = act[first..last].to_vec();
                        let range = vs[0]..vs[vs.len() - 1] + 1;
                        let (jobs_here, weights) = jobs_in(&range);
                        units.push(Unit {
                            load: Load::Lists,
                            row: 0,
                            cols: Vec::new(),
                            groups: plan[g..h]
                                .iter()
                                .map(|x| ListGroup {
                                    first: x.first - first,
                                    last: x.last - first,
                                    ..*x
                                })
                                .collect(),
                            fetch: range.clone(),
                            range,
                            complete: true,
                            weights,
                            jobs: jobs_here,
                            active: vs,
                        });
                    }
                    let (lo, hi) = (
                        self.store.interval(rows[i]).start,
                        self.store.interval(rows[j - 1]).end,
                    );
                    for x in first_unit..units.len() {
                        let end = units.get(x + 1).map_or(hi, |n| n.range.start);
                        let start = if x == first_unit {
                            lo
                        } else {
                            units[x].fetch.start
                        };
                        units[x].fetch = start..end;
                    }
                    i = j;
                    continue;
                }
                let r = rows[i];
                let range = self.store.interval(r);
                let row_active = active[spans[i].0..spans[i].1].to_vec();
                let (jobs_here, weights) = jobs_in(&range);
                let cols: Vec<u32> = (0..p).filter(|&c| grid.entry(r, c).edges > 0).collect();
                self.stats.blocks_skipped += (p as usize - cols.len()) as u64;
                let block_bytes = |i: usize| grid.block_memory_bytes(r, cols[i], weights);
                for (g, h) in fill_even(cols.len(), block_bytes, self.cfg.memory / 2) {
                    units.push(Unit {
                        load: row_loads[i],
                        row: r,
                        cols: cols[g..h].to_vec(),
                        groups: Vec::new(),
                        range: range.clone(),
                        fetch: range.clone(),
                        complete: g == 0 && h == cols.len(),
                        weights,
                        jobs: jobs_here.clone(),
                        active: row_active.clone(),
                    });
                }
                i += 1;
            }
            // What each unit holds in memory, as planned (a lists or selective
            // unit: up to half the budget).
            let unit_bytes: Vec<u64> = units
                .iter()
                .map(|u| match u.load {
                    Load::Whole => u
                        .cols
                        .iter()
                        .map(|&c| grid.block_memory_bytes(u.row, c, u.weights))
                        .sum(),
                    _ => self.cfg.memory / 2,
                })
                .collect();
            // `slack[x]`: what the budget leaves beside two of units x.. (the one
            // processed and the one read meanwhile) — room for kept units.
            let mut slack = vec![self.cfg.memory; units.len() + 1];
            for x in (0..units.len()).rev() {
                slack[x] = slack[x + 1].min(self.cfg.memory.saturating_sub(2 * unit_bytes[x]));
            }
            // Reuse: the whole sub-blocks the previous iteration kept are handed to
            // the loader for the units that load them (same row and column, with
            // weights if needed) instead of being read, as far as they fit the
            // slack of the iteration's units; the rest go back to the spare buffers.
            let mut preloaded: Vec<Vec<RawBlock>> = (0..units.len()).map(|_| Vec::new()).collect();
            let mut preloaded_bytes = vec![0u64; units.len()];
            let mut kept_bytes = 0u64;
            for b in std::mem::take(&mut kept) {
                let bytes = b.capacity_bytes();
                let x = units.iter().position(|u| {
                    u.load == Load::Whole
                        && u.row == b.row
                        && u.cols.contains(&b.col)
                        && (b.weights().is_some() || !u.weights)
                });
                match x {
                    Some(x) if kept_bytes + bytes <= slack[0] => {
                        kept_bytes += bytes;
                        preloaded_bytes[x] += bytes;
                        self.stats.blocks_reused += 1;
                        self.stats.bytes_reused +=
                            grid.block_read_bytes(b.row, b.col, units[x].weights);
                        preloaded[x].push(b);
                    }
                    _ => spare.give(vec![Loaded::Whole(b)]),
                }
            }
            let reused: Vec<usize> = preloaded.iter().map(Vec::len).collect();
            // Beside the lists requests' read buffers, a third of the budget holds
            // the unit being processed, a third the one being read, and a third
            // the lists a unit fetches on demand.
            let fetch_cap = lists_third(largest_list_request);
            // A loader thread reads the units in order, several reads in flight on
            // its own small pool, while this thread processes the previous unit.
            let grid_ref = &grid;
            let spare_ref = &spare;
            let lists_ref = &lists;
            let units_ref = &units;
            let io_pool = &io_pool;
            let list_pool = &list_pool;
            let fetcher = Fetcher {
                lists: &lists,
                pool: list_pool,
                degrees: &self.degrees,
                files: list_files,
            };
            std::thread::scope(|scope| -> Result<()> {
                let (tx, rx) = std::sync::mpsc::sync_channel::<(Result<Vec<Loaded>>, f64)>(0);
                scope.spawn(move || {
                    for (u, pre) in units_ref.iter().zip(preloaded) {
                        let t = Instant::now();
                        let loaded = if u.load == Load::Lists {
                            read_lists(list_pool, lists_ref, &u.active, &u.groups, u.weights)
                        } else {
                            // The sub-blocks kept from the previous iteration
                            // are not read again.
                            let to_read: Vec<u32> = u
                                .cols
                                .iter()
                                .copied()
                                .filter(|&c| pre.iter().all(|b| b.col != c))
                                .collect();
                            io_pool
                                .install(|| {
                                    to_read
                                        .par_iter()
                                        .map(|&c| -> Result<Loaded> {
                                            if u.load == Load::Runs {
                                                Ok(Loaded::Selective(
                                                    grid_ref.read_sources_merged(
                                                        u.row, c, &u.active, u.weights, io_block,
                                                    )?,
                                                ))
                                            } else {
                                                let read =
                                                    grid_ref.block_read_bytes(u.row, c, u.weights);
                                                let all = grid_ref
                                                    .block_memory_bytes(u.row, c, u.weights);
                                                let mut b = spare_ref.take(read, all - read);
                                                grid_ref
                                                    .read_block_into(u.row, c, u.weights, &mut b)?;
                                                Ok(Loaded::Whole(b))
                                            }
                                        })
                                        .collect::<Result<Vec<_>>>()
                                })
                                .map(|mut read| {
                                    if pre.is_empty() {
                                        return read;
                                    }
                                    // In the columns' order, whatever came from memory.
                                    read.extend(pre.into_iter().map(Loaded::Whole));
                                    read.sort_by_key(|l| match l {
                                        Loaded::Whole(b) => b.col,
                                        Loaded::Selective(_) => 0,
                                    });
                                    read
                                })
                        };
                        let failed = loaded.is_err();
                        if tx.send((loaded, t.elapsed().as_secs_f64())).is_err() || failed {
                            return;
                        }
                    }
                });
                for (x, u) in units.iter().enumerate() {
                    let t = Instant::now();
                    let (loaded, io_secs) = rx
                        .recv()
                        .map_err(|_| EngineError::Invalid("the sub-block loader stopped".into()))?;
                    let mut loaded = loaded?;
                    self.stats.io_seconds += io_secs;
                    self.stats.io_wait_seconds += t.elapsed().as_secs_f64();
                    match u.load {
                        Load::Whole => self.stats.blocks_whole += (loaded.len() - reused[x]) as u64,
                        Load::Runs => self.stats.blocks_selective += loaded.len() as u64,
                        Load::Lists => {
                            self.stats.list_groups += u.groups.len() as u64;
                            self.stats.lists_loaded +=
                                loaded.iter().map(|l| l.parts().0.len() as u64).sum::<u64>();
                        }
                    }
                    let t = Instant::now();
                    let range = u.range.clone();
                    let distinct = u.load != Load::Lists;
                    // Covered activations (with DFVU): a source active now that an
                    // earlier unit of this iteration already activated again is
                    // about to push its newest value along all its out-edges (a
                    // complete unit holds them all), so that activation is done
                    // here and leaves the next frontier — else the DFVU round below
                    // would push the same value again. For min-monotone jobs only.
                    // Pulled activations: in a whole row, a source that an earlier
                    // unit activated but that is not active now has all its runs
                    // here too, so it joins this main pass (rather than the DFVU
                    // round after it) and leaves the next frontier.
                    // Lists units fetch the lists of such sources on demand (below).
                    let mut wanted: Vec<(usize, Vec<u32>)> = Vec::new();
                    if self.cfg.dfvu && u.complete {
                        for &k in &u.jobs {
                            let s = &slots[k];
                            if !s.job.future_updates() {
                                continue;
                            }
                            // A planned weighted job made the unit read weights.
                            if u.load == Load::Whole {
                                let (had, gained) = s.next.move_into(&s.active, range.clone());
                                self.stats.covered += had;
                                self.stats.pulled += gained;
                                continue;
                            }
                            self.stats.covered += s.next.clear_where(&s.active, range.clone());
                            if u.load != Load::Lists {
                                continue;
                            }
                            // What is left in the next frontier here is not active
                            // for this job: sources whose lists the unit holds join
                            // the main pass; the others are fetched.
                            let mut missing = Vec::new();
                            for v in s.next.ones_in(u.fetch.clone()) {
                                if u.active.binary_search(&v).is_ok() {
                                    s.next.clear(v);
                                    s.active.set(v);
                                    self.stats.pulled += 1;
                                } else {
                                    missing.push(v);
                                }
                            }
                            if !missing.is_empty() {
                                wanted.push((k, missing));
                            }
                        }
                    }
                    // Fetched activations: the lists of sources an earlier unit of
                    // this iteration activated, within the unit's fetch range, read
                    // now (synchronously, in parallel requests, up to a third of the
                    // lists budget per unit) so that they join this pass instead of
                    // the next iteration — what pulled activations do for whole rows.
                    let mut room = fetch_cap;
                    let mut fetched = fetcher.fetch(
                        &mut self.stats,
                        &mut largest_list_request,
                        wanted.iter().flat_map(|(_, m)| m.iter().copied()).collect(),
                        &mut room,
                        u.weights,
                        &mut loaded,
                    )?;
                    for (k, missing) in &wanted {
                        let s = &slots[*k];
                        for &v in missing {
                            if fetched.binary_search(&v).is_ok() {
                                s.next.clear(v);
                                s.active.set(v);
                                self.stats.pulled += 1;
                            }
                        }
                    }
                    let (edges, exclusive) = process(&slots, &u.jobs, &loaded, distinct, &|k| {
                        Some((&slots[k].active, 0))
                    });
                    for (k, e) in edges {
                        slots[k].stats.edges_processed += e;
                    }
                    self.stats.exclusive_tasks += exclusive;
                    self.stats.edges_loaded +=
                        loaded.iter().map(|l| l.parts().2.len() as u64).sum::<u64>();
                    // DFVU (§3.4): while the whole row is in memory, sources of this
                    // interval that this iteration already activated push their new
                    // values now and leave the next frontier — all their out-edges
                    // are in this row. Selective loads hold only the shared active
                    // sources' runs, so only those qualify (in lists mode, their
                    // whole lists). A weighted job needs the weights, which a unit
                    // read without them does not have. Up to `dfvu_rounds` rounds
                    // while the unit is in memory: each round takes what the
                    // previous one activated.
                    let rounds = if self.cfg.dfvu && u.complete {
                        self.cfg.dfvu_rounds
                    } else {
                        0
                    };
                    // A lists unit's fetched sources lie in its fetch range.
                    let held = if u.load == Load::Lists {
                        u.fetch.clone()
                    } else {
                        range.clone()
                    };
                    for _ in 0..rounds {
                        let base = held.start;
                        let mut ahead: Vec<Option<AtomicBitmap>> =
                            (0..slots.len()).map(|_| None).collect();
                        let mut ks = Vec::new();
                        let round_jobs: Vec<usize> = live
                            .iter()
                            .copied()
                            .filter(|&k| slots[k].job.future_updates())
                            .filter(|&k| {
                                u.weights || !slots[k].job.weighted() || !self.store.weighted()
                            })
                            .collect();
                        if u.load == Load::Lists {
                            // What the unit itself activated in its fetch range and
                            // does not hold: fetched, as far as the room allows.
                            let missing: Vec<u32> = round_jobs
                                .iter()
                                .flat_map(|&k| slots[k].next.ones_in(held.clone()))
                                .filter(|v| {
                                    u.active.binary_search(v).is_err()
                                        && fetched.binary_search(v).is_err()
                                })
                                .collect();
                            let more = fetcher.fetch(
                                &mut self.stats,
                                &mut largest_list_request,
                                missing,
                                &mut room,
                                u.weights,
                                &mut loaded,
                            )?;
                            fetched.extend(more);
                            fetched.sort_unstable();
                        }
                        for &k in &round_jobs {
                            let s = &slots[k];
                            let f = AtomicBitmap::new(held.len());
                            let mut any = 0u64;
                            let mut take = |v: u32| {
                                if s.next.get(v) {
                                    s.next.clear(v);
                                    f.set(v - base);
                                    any += 1;
                                }
                            };
                            if u.load != Load::Whole {
                                u.active.iter().chain(&fetched).for_each(|&v| take(v));
                            } else {
                                // `take` clears only the bit just yielded.
                                s.next.ones_in(range.clone()).for_each(&mut take);
                            }
                            if any > 0 {
                                self.stats.dfvu_sources += any;
                                ahead[k] = Some(f);
                                ks.push(k);
                            }
                        }
                        if ks.is_empty() {
                            break;
                        }
                        let pick = |k: usize| ahead[k].as_ref().map(|f| (f, base));
                        let (edges, exclusive) = process(&slots, &ks, &loaded, distinct, &pick);
                        for (k, e) in edges {
                            slots[k].stats.edges_processed += e;
                            self.stats.dfvu_edges += e;
                        }
                        self.stats.exclusive_tasks += exclusive;
                    }
                    self.stats.compute_seconds += t.elapsed().as_secs_f64();
                    // Mapped state: what this unit dirtied goes to its files now.
                    for &k in &u.jobs {
                        slots[k].job.write_back().map_err(|e| {
                            EngineError::Invalid(format!("writing mapped vertex state back: {e}"))
                        })?;
                    }
                    // Its sub-blocks from memory leave those held for later.
                    kept_bytes -= preloaded_bytes[x];
                    // Reuse: keep its whole sub-blocks for the next iteration while
                    // they and the others held fit the slack the rest of this
                    // iteration leaves (two of its units in memory at once): the
                    // first sub-blocks in the rows' order are kept, which the next
                    // iteration starts with.
                    let mut spent = Vec::new();
                    for l in loaded {
                        match l {
                            Loaded::Whole(block) if self.cfg.reuse => {
                                let bytes = block.capacity_bytes();
                                if kept_bytes + bytes <= slack[x + 1] {
                                    kept_bytes += bytes;
                                    kept.push(block);
                                } else {
                                    spent.push(Loaded::Whole(block));
                                }
                            }
                            l => spent.push(l),
                        }
                    }
                    spare.give(spent);
                }
                Ok(())
            })?;
            for &k in &live {
                let s = &mut slots[k];
                s.stats.iterations = it;
                s.active.clear_all();
                let done = s
                    .job
                    .end_iteration(it, &s.next)
                    .map_err(EngineError::Invalid)?;
                std::mem::swap(&mut s.active, &mut s.next);
                if done {
                    s.stats.finished = true;
                    s.active.clear_all();
                }
            }
            self.stats.iterations = it;
            self.stats
                .iteration_seconds
                .push(iteration_start.0.elapsed().as_secs_f64());
            self.stats
                .iteration_bytes
                .push(io.snapshot().since(&iteration_start.1).bytes_read);
            if let Some(o) = &mut self.observer {
                let js: Vec<JobStats> = slots.iter().map(|s| s.stats.clone()).collect();
                o.iteration(it, &js);
            }
        }
        let d = io.snapshot().since(&start_io);
        self.stats.bytes_read = d.bytes_read;
        self.stats.read_requests = d.read_requests;
        self.stats.jobs = slots.iter().map(|s| s.stats.clone()).collect();
        Ok(())
    }
}
