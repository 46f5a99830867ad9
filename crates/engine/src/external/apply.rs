//! One partition of one iteration of the fully-external engine (V-Part,
//! FAST'19 §4.2 steps 1-3): read the partition's destination values, stream
//! its active sources' edges into per-thread accumulators, `apply` every
//! destination a message reached (or every one, for programs whose `apply`
//! changes destinations no message reached), write the values back, and
//! build the mirror update (§4.3) that the engine's mirror thread then runs.
//! The design and its invariants are stated in the engine's module docs
//! (`external/mod.rs`, step list 1-4); this file holds only their code.

use super::scratch::block_runs;
use super::*;

impl ExternalEngine<'_> {
    /// One partition of one iteration; returns (destinations active next, active
    /// sources processed, the partition's mirror update to run).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn partition<P: EdgeProgram>(
        &self,
        prog: &P,
        st: &Scratch,
        plan: &Plan,
        q: u32,
        g: &Globals,
        agg: &mut Sums,
        bufs: &mut PartBufs,
        stats: &mut ExternalStats,
    ) -> Result<(u64, u64, MirrorJob)> {
        let it = g.iteration;
        let qu = q as usize;
        let rec = &self.layout.record;
        let nd = rec.dests[qu];
        let cap = rec.max_dests() as usize;
        // One accumulator per thread (each takes a contiguous share of a window's
        // sources), combined in thread order at the end; kept from one
        // partition to the next (room for the largest), reset in parallel.
        let threads = stats.threads;
        let accs = &mut bufs.accs;
        accs.resize_with(threads.max(1), || Vec::with_capacity(cap));
        let id = prog.identity();
        self.pool.install(|| {
            accs.par_iter_mut().for_each(|a| {
                a.clear();
                a.resize(nd as usize, id);
            })
        });
        let narrow = prog.narrow_messages();
        let all = prog.all_active();
        let vsize = std::mem::size_of::<P::V>() as u64;
        let mut vals: Vec<P::V> = vec![bytemuck::Zeroable::zeroed(); nd as usize];
        // Epochs tell which mirror entries changed since their slot was last
        // written (a wide program's, read back from the scratch file); a
        // program whose every source sends each iteration needs none (every
        // entry is rewritten), nor does a narrow one (an entry is written when
        // its source is activated, known from this iteration's apply), so
        // theirs are neither read nor written.
        let keep_eps = !all && !narrow;
        let mut eps: Vec<Epochs> = vec![[0; 2]; nd as usize];
        let mut degs: Vec<u32> = vec![0; nd as usize];
        // A program that applies every destination (its `apply` may change one
        // no message reached) reads them all: beside the edge pass, on a thread
        // of its own (the arrays are the partition's, paid for by the plan
        // whether they fill now or after). Others read only what messages
        // reached, known after the pass.
        let early = !prog.idle_without_messages();
        let pass = edges::Pass {
            prog,
            st,
            plan,
            q,
            it,
        };
        let (streamed, loaded) = std::thread::scope(|sc| {
            let loader = early.then(|| {
                let (vals, eps, degs) = (&mut vals, &mut eps, &mut degs);
                spawn(sc, "vpart-dests", move || {
                    let t = Instant::now();
                    let r = self.load_dests(
                        prog,
                        st,
                        q,
                        nd,
                        0,
                        vals,
                        keep_eps.then_some(&mut eps[..]),
                        Some(degs),
                    );
                    r.map(|b| (b, t.elapsed().as_secs_f64()))
                })
            });
            let streamed = self.stream_edges(pass, accs, &mut bufs.edges, stats);
            let loaded = loader.map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)));
            (streamed, loaded)
        });
        let (active_sources, part_edges) = streamed?;
        if let Some(l) = loaded {
            let (bytes, secs) = l?;
            stats.dest_bytes_read += bytes;
            stats.io_seconds += secs;
        }
        if part_edges == 0 && prog.idle_without_messages() {
            // Nothing arrived: no destination changes, nothing to write.
            stats.partitions_idle += 1;
            return Ok((
                0,
                active_sources,
                MirrorJob::idle(prog.narrow_messages(), q, it),
            ));
        }
        // The threads' accumulators, combined in thread order.
        let tc = Instant::now();
        let (first, rest) = accs.split_at_mut(1);
        let acc = &mut first[0];
        if !rest.is_empty() {
            self.pool.install(|| {
                acc.par_chunks_mut(BLOCK).enumerate().for_each(|(b, a)| {
                    for other in rest.iter() {
                        let o = &other[b * BLOCK..b * BLOCK + a.len()];
                        for (x, &y) in a.iter_mut().zip(o) {
                            *x = prog.combine(*x, y);
                        }
                    }
                })
            });
        }
        // Sparse destinations: when `apply` without a message changes nothing and
        // at most half the blocks received one, only those blocks are read,
        // applied and written back.
        // A block whose messages reached only final destinations (settling
        // programs) is not hit: their values cannot change.
        let settled = st.settled;
        let hit: Option<Vec<bool>> = if prog.idle_without_messages() {
            let id = prog.identity();
            let hit: Vec<bool> = self.pool.install(|| {
                acc.par_chunks(BLOCK)
                    .enumerate()
                    .map(|(b, a)| match settled {
                        Some(s) => a
                            .iter()
                            .enumerate()
                            .any(|(j, &x)| x != id && !s.is_final(qu, b * BLOCK + j)),
                        None => a.iter().any(|&x| x != id),
                    })
                    .collect()
            });
            let n_hit = hit.iter().filter(|&&h| h).count();
            if n_hit == 0 {
                // Messages reached only final destinations.
                stats.compute_seconds += tc.elapsed().as_secs_f64();
                stats.partitions_idle += 1;
                return Ok((0, active_sources, MirrorJob::idle(narrow, q, it)));
            }
            (n_hit * 2 <= hit.len()).then_some(hit)
        } else {
            None
        };
        stats.compute_seconds += tc.elapsed().as_secs_f64();
        let tio = Instant::now();
        // The destinations read (unless read beside the pass), applied and
        // written back: all, or the runs of blocks a message reached.
        let runs = match &hit {
            None => std::iter::once(0..nd as usize).collect::<Vec<_>>(),
            Some(hit) => {
                stats.sparse_applies += 1;
                block_runs(hit, nd as usize)
            }
        };
        for r in runs.iter().filter(|_| !early) {
            stats.dest_bytes_read += self.load_dests(
                prog,
                st,
                q,
                nd,
                r.start as u64,
                &mut vals[r.clone()],
                keep_eps.then(|| &mut eps[r.clone()]),
                Some(&mut degs[r.clone()]),
            )?;
        }
        stats.io_seconds += tio.elapsed().as_secs_f64();
        // Apply, in fixed blocks so the aggregates add up in the same order
        // always; each block's mirror entries built beside, in the same pass
        // (none for blocks not applied: the job never writes those).
        let tc = Instant::now();
        let words = mirror::job_words(narrow);
        let mut recs: Vec<u32> = vec![0; nd as usize * words];
        let mut needed = vec![0u64; (nd as usize).div_ceil(64)];
        // Pages of a block whose values `apply` changed (bit j: the block's
        // page j of values), for programs without epochs: the others need not
        // be written back where the block was written before.
        let page_vals = (scratch::PAGE / vsize).max(1) as usize;
        let by_pages = !keep_eps && BLOCK.div_ceil(page_vals) <= 64;
        let res: Vec<(u64, Sums, u64)> = self.pool.install(|| {
            vals.par_chunks_mut(BLOCK)
                .zip(eps.par_chunks_mut(BLOCK))
                .zip(acc.par_chunks(BLOCK))
                .zip(degs.par_chunks(BLOCK))
                .zip(recs.par_chunks_mut(BLOCK * words))
                .zip(needed.par_chunks_mut(BLOCK / 64))
                .enumerate()
                .map(|(b, (((((v, e), a), d), r), nb))| {
                    let mut ag = Sums::default();
                    let mut n_act = 0u64;
                    let mut pages = 0u64;
                    if hit.as_ref().is_some_and(|h| !h[b]) {
                        return (n_act, ag, pages);
                    }
                    for i in 0..v.len() {
                        let before = prog.message(&v[i], d[i]);
                        let mut one: Aggregates = [0.0; 4];
                        let old = v[i];
                        let act = prog.apply(g, &mut v[i], a[i], d[i], &mut one);
                        if let Some(s) = settled {
                            if settle::final_value(prog, &v[i], it) {
                                s.set_final(qu, b * BLOCK + i);
                            }
                        }
                        if by_pages && bytemuck::bytes_of(&old) != bytemuck::bytes_of(&v[i]) {
                            pages |= 1 << (i / page_vals);
                        }
                        ag.add(&one);
                        let after = prog.message(&v[i], d[i]);
                        debug_assert!(
                            narrow || all || d[i] == 0 || act == (after != 0),
                            "a wide program's source must send exactly when its message is nonzero"
                        );
                        n_act += act as u64;
                        // Epochs only where kept: a program without them
                        // never touches its (zeroed, unmapped) array — a read
                        // then a write of a fresh page costs a copy-on-write
                        // fault and a TLB flush on every core. Without
                        // epochs, a narrow entry is written when activated
                        // now, an all-active one always.
                        let need = if keep_eps {
                            if act {
                                e[i][0] = it as u32;
                            }
                            if before != after {
                                e[i][1] = it as u32;
                            }
                            mirror_need(narrow, &e[i], it)
                        } else {
                            all || act
                        };
                        // A bitmap slot's entry is its bit alone (the
                        // message is the epoch): the messages' array is then
                        // never touched (a fresh page's fault and zeroing).
                        debug_assert!(
                            !st.bits || !need || after == it,
                            "a program with epoch messages sends {after} from iteration {it}"
                        );
                        if !st.bits {
                            MirrorJob::put(narrow, r, i, after);
                        }
                        nb[i / 64] |= (need as u64) << (i % 64);
                    }
                    (n_act, ag, pages)
                })
                .collect()
        });
        let mut active = 0u64;
        let mut changed = Vec::with_capacity(res.len());
        for (a, ag, pages) in res {
            active += a;
            agg.merge(&ag);
            changed.push(pages);
        }
        stats.compute_seconds += tc.elapsed().as_secs_f64();
        let tio = Instant::now();
        if by_pages {
            // Only what changed: a block never written before whole (its other
            // pages would read as zeros, not initial values), else its changed
            // pages (BFS's late levels change a few values in each block).
            let mut wr: Vec<std::ops::Range<usize>> = Vec::new();
            for r in &runs {
                let blocks = r.start / BLOCK..r.end.div_ceil(BLOCK);
                for (b, &pages) in changed[blocks.clone()].iter().enumerate() {
                    let b = blocks.start + b;
                    if pages == 0 {
                        continue;
                    }
                    let (b0, b1) = (b * BLOCK, ((b + 1) * BLOCK).min(nd as usize));
                    if !st.written[qu].get(b as u32) {
                        st.write_dest_range(q, nd, b0 as u64, &vals[b0..b1], None)?;
                        stats.dest_bytes_written += (b1 - b0) as u64 * vsize;
                        continue;
                    }
                    // Runs of changed pages, lowest first.
                    let mut m = pages;
                    while m != 0 {
                        let j = m.trailing_zeros() as usize;
                        let run = (m >> j).trailing_ones() as usize;
                        // Adding its lowest bit clears the lowest run of ones.
                        m &= m.wrapping_add(m & m.wrapping_neg());
                        let x = (b0 + j * page_vals).min(b1);
                        let y = (b0 + (j + run) * page_vals).min(b1);
                        match wr.last_mut() {
                            Some(l) if l.end == x => l.end = y,
                            _ => wr.push(x..y),
                        }
                    }
                }
            }
            for r in wr {
                st.write_dest_values(q, r.start as u64, &vals[r.clone()])?;
                stats.dest_bytes_written += r.len() as u64 * vsize;
            }
        } else {
            for r in &runs {
                st.write_dest_range(
                    q,
                    nd,
                    r.start as u64,
                    &vals[r.clone()],
                    keep_eps.then(|| &eps[r.clone()]),
                )?;
                stats.dest_bytes_written += r.len() as u64 * (vsize + if keep_eps { 8 } else { 0 });
            }
        }
        stats.io_seconds += tio.elapsed().as_secs_f64();
        let job = MirrorJob::built(narrow, q, it, recs, needed, hit);
        Ok((active, active_sources, job))
    }
}
