//! The external path: the sorted runs consumed in ascending source ranges within
//! the budget, each range's CSR written (and its grid rows cut when every row
//! fits), the in-edges by a second sort or just their degrees, and the grid from
//! the CSR files when it takes a second pass.

use super::*;

pub(super) fn build_ranges<R: Record, A: Adj>(
    c: &Ctx,
    sorter: ExternalSorter<R>,
    n: u64,
    p: u32,
    interval: u64,
) -> Result<(Vec<FileRecord>, u64, ListCounts, usize, bool)> {
    let opts = c.opts;
    let budget = opts.memory;
    let store = &c.work.build;
    let m_upper = sorter.len();
    let pp = p as usize;
    c.obs.phase("sort", m_upper);
    let mut runs = sorter.into_runs()?;
    let sort_runs = runs.count();
    c.obs.phase("csr", m_upper);
    let mut counts = vec![(0u64, 0u64); pp * pp];
    let in_fits = n * 4 <= budget / 4;
    let mut in_deg: Vec<u32> = if in_fits && !opts.in_edges {
        // Huge pages: one increment per edge at a random place of n entries.
        crate::memcsr::huge_zeroed(n as usize)
    } else {
        Vec::new()
    };
    let mut in_sorter = if opts.in_edges {
        std::fs::create_dir_all(c.work.spill.join("in"))
            .map_err(|e| IoError::new(c.work.spill.join("in"), "create directory", e))?;
        let mut s = ExternalSorter::<R>::by_source(
            c.work.spill.join("in"),
            budget * 3 / 10,
            c.stats.clone(),
        );
        if let Some(cap) = opts.sort_buffer_records {
            s.set_capacity(cap);
        }
        super::limit_lists(c, &mut s, "in");
        Some(s)
    } else {
        None
    };
    let range_mem = if opts.in_edges {
        budget / 2
    } else {
        (budget * 6 / 10).saturating_sub(in_deg.len() as u64 * 4)
    };
    // What the budget leaves for grid rows being built beside a range's CSR.
    let row_mem = budget
        .saturating_sub(range_mem)
        .saturating_sub(in_deg.len() as u64 * 4)
        .saturating_sub(if opts.in_edges { budget * 3 / 10 } else { 0 })
        .max(1 << 20);
    let limits = RangeLimits::new::<R, A>(range_mem);
    // One pass (the grid's rows cut from each range's CSR) when every row's edges
    // fit half a range and its packed row (at most 12 bytes an edge, held twice)
    // the row memory; otherwise the grid is a second pass over the CSR files.
    let one_pass = limits.rows_fit(&runs, n, interval, row_mem);
    let mut grid = if one_pass {
        Some(GridWriter::new(store, p, interval, R::WEIGHTED, &c.stats)?)
    } else {
        None
    };
    let (mut files, edges, self_loops) = csr_from_runs::<R, A>(
        c,
        &mut runs,
        n,
        "out",
        opts.dedup,
        &limits,
        one_pass.then_some(interval),
        &mut |base, csr| {
            csr.add_block_counts(base, p, interval, &mut counts);
            // The grid rows (in parallel) beside the in-degrees (one thread, bound
            // by memory latency rather than compute).
            let counts = &counts;
            let (rows, degrees) = rayon::join(
                || -> Result<()> {
                    if let Some(g) = &mut grid {
                        // The range is whole rows: those rows' blocks are complete.
                        let end = base + csr.vertices() as u64;
                        let i1 = (end.div_ceil(interval) as usize).min(pp);
                        g.set_rows(i1, counts)?;
                        g.append_windows(csr, base, i1, interval, row_mem, &|_| {})?;
                    }
                    Ok(())
                },
                // In-degrees counted here only when they fit (else a pass afterwards).
                || -> Result<()> {
                    if !in_deg.is_empty() {
                        csr.add_in_degrees(&mut in_deg)?;
                    }
                    Ok(())
                },
            );
            rows?;
            degrees?;
            if let Some(s) = &mut in_sorter {
                for u in 0..csr.vertices() {
                    for x in csr.list(u) {
                        s.push(R::new(x.v(), (base + u as u64) as u32, x.w()))?;
                    }
                }
            }
            Ok(())
        },
    )?;
    drop(runs);

    // In-edges: the second sort, or just the in-degrees.
    if let Some(s) = in_sorter {
        c.obs.phase("in-edges", edges);
        let mut runs = s.into_runs()?;
        let (f, _, _) = csr_from_runs::<R, A>(
            c,
            &mut runs,
            n,
            "in",
            false,
            &RangeLimits::new::<R, A>(budget * 6 / 10),
            None,
            &mut |_, _| Ok(()),
        )?;
        files.extend(f);
    } else if in_fits {
        files.push(write_in_degrees(store, &in_deg, &c.stats)?);
    } else {
        files.push(count_in_degrees(store, &files, n, budget, &c.stats)?);
    }
    drop(in_deg);

    if let Some(mut g) = grid {
        g.append_empty_rows(pp)?;
        files.extend(g.finish(store, &c.stats)?);
        return Ok((files, edges, self_loops, sort_runs, false));
    }
    c.obs.phase("grid", edges);
    // The grid from the CSR files, row by row in budget-sized chunks.
    let grid = build_grid::<R>(c, &files, n, p, interval, &counts)?;
    files.extend(grid);
    Ok((files, edges, self_loops, sort_runs, true))
}

/// How many records (`cap`) and vertices (`vmax`) one range of sources may hold
/// for its records and CSR to fit a range budget.
pub(super) struct RangeLimits {
    pub(super) cap: u64,
    pub(super) vmax: u64,
}

impl RangeLimits {
    pub(super) fn new<R: Record, A: Adj>(range_mem: u64) -> RangeLimits {
        let threads = rayon::current_num_threads().max(1) as u64;
        let per = (std::mem::size_of::<R>() + std::mem::size_of::<A>()) as u64;
        RangeLimits {
            cap: (range_mem * 85 / 100 / per).max(1),
            vmax: (range_mem * 15 / 100 / (4 * threads + 20)).max(1),
        }
    }

    /// Whether every grid row (`interval` sources) surely fits half a range and
    /// its packed row (at most 12 bytes an edge: targets, sources and offsets of
    /// at most 32 bits each and a weight), held twice while built, `row_mem`
    /// (bounds from the runs' sparse indexes, before anything is taken).
    pub(super) fn rows_fit<R: Record>(
        &self,
        runs: &Runs<R>,
        n: u64,
        interval: u64,
        row_mem: u64,
    ) -> bool {
        if interval > self.vmax {
            return false;
        }
        let mut lo = 0;
        while lo < n {
            let hi = (lo + interval).min(n);
            let row = runs.bound_below(hi).saturating_sub(runs.lower_below(lo));
            if row > self.cap / 2 || row * 24 > row_mem {
                return false;
            }
            lo = hi;
        }
        true
    }
}

/// One direction's CSR from sorted runs, by ranges of sources whose records and
/// CSR fit the range `limits` (with `rows`, ranges of whole rows of that many
/// vertices; every row must fit on its own); `each(base, csr)` sees every range's
/// CSR after it is written. Returns the files, edges and self-loops.
#[allow(clippy::too_many_arguments)]
pub(super) fn csr_from_runs<R: Record, A: Adj>(
    c: &Ctx,
    runs: &mut Runs<R>,
    n: u64,
    dir: &str,
    dedup: bool,
    limits: &RangeLimits,
    rows: Option<u64>,
    each: &mut dyn FnMut(u64, &MemCsr<A>) -> Result<()>,
) -> Result<(Vec<FileRecord>, u64, ListCounts)> {
    let threads = rayon::current_num_threads().max(1);
    let per = (std::mem::size_of::<R>() + std::mem::size_of::<A>()) as u64;
    let (cap, vmax) = (limits.cap, limits.vmax);
    let mut out = CsrFiles::create(&c.work.build, dir, A::WEIGHTED, &c.stats)?;
    // The widest range [lo, hi) whose records surely fit: at least one vertex (one
    // row with `rows`), ending at a row's end with `rows`.
    let step = rows.unwrap_or(1);
    let plan = |runs: &Runs<R>, lo: u64| -> u64 {
        let end = |k: u64| n.min(lo + k * step);
        let (mut ok, mut bad) = (1u64, (vmax / step).max(1) + 1);
        if runs.bound_below(end(bad - 1)) <= cap {
            return end(bad - 1);
        }
        while bad - ok > 1 {
            let mid = ok + (bad - ok) / 2;
            if runs.bound_below(end(mid)) <= cap {
                ok = mid;
            } else {
                bad = mid;
            }
        }
        end(ok)
    };
    let mut records: Vec<R> = Vec::new();
    let mut spare: Vec<A> = Vec::new();
    let (mut lo, mut edges, mut seen) = (0u64, 0u64, 0u64);
    let mut counts = ListCounts::default();
    let mut hi = if n > 0 { plan(runs, 0) } else { 0 };
    if n > 0 {
        runs.take_below(hi, &mut records)?;
    }
    while lo < n {
        if records.len() as u64 * per > c.opts.memory {
            return Err(StoreError::Invalid(format!(
                "vertex {lo} has {} {dir}-edges, more than fit --memory {} at once; raise --memory",
                records.len(),
                outcore_io::format_bytes(c.opts.memory)
            )));
        }
        seen += records.len() as u64;
        let (csr, l) = MemCsr::<A>::from_records_reusing(
            &records,
            lo as u32,
            (hi - lo) as usize,
            dedup,
            threads,
            std::mem::take(&mut spare),
        )?;
        counts += l;
        edges += csr.adj.len() as u64;
        // The next range's records are read (into the now idle record buffer)
        // while this range's CSR is written and, at the same time, its grid rows
        // are cut.
        let next_hi = if hi < n { plan(runs, hi) } else { hi };
        std::thread::scope(|s| -> Result<()> {
            let fetch = (hi < n).then(|| {
                let (runs, records) = (&mut *runs, &mut records);
                s.spawn(move || {
                    records.clear();
                    runs.take_below(next_hi, records)
                })
            });
            // The CSR is written on a thread of its own while `each` works on it.
            let (out, csr) = (&mut out, &csr);
            let write = s.spawn(move || out.append(csr));
            let done = each(lo, csr);
            let written = crate::join_scoped(write);
            let fetched = fetch.map_or(Ok(()), crate::join_scoped);
            written.and(done).and(fetched)
        })?;
        c.obs.advance(seen, edges);
        spare = csr.into_adj();
        lo = hi;
        hi = next_hi;
    }
    Ok((out.finish()?, edges, counts))
}

/// Writes `degrees.in` from in-degrees counted in memory.
pub(super) fn write_in_degrees(
    store: &Path,
    deg: &[u32],
    stats: &Arc<IoStats>,
) -> Result<FileRecord> {
    let mut w = LayoutWriter::create(&store.join("degrees.in"), FileKind::Degrees, stats.clone())?;
    w.append(bytemuck::cast_slice(deg))?;
    w.finish(deg.len() as u64)
}

/// Returns the heap memory freed by the parse (chunk and edge buffers of the rayon
/// workers, which glibc keeps in per-thread arenas) to the system, so that it does
/// not count against the memory limit while the layouts are built.
pub(super) fn trim_heap() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only releases free heap memory; it has no preconditions.
    unsafe {
        libc::malloc_trim(0);
    }
}

pub(super) fn open_written(
    store: &Path,
    files: &[FileRecord],
    name: &str,
    kind: FileKind,
    stats: &Arc<IoStats>,
) -> Result<LayoutFile> {
    let rec = files.iter().find(|f| f.name == name).expect("written file");
    LayoutFile::open(store, rec, kind, ReadMode::Buffered, stats.clone())
}

/// In-degrees when an array of them does not fit: passes over the targets, each
/// counting a range of vertices that fits in a quarter of the budget.
pub(super) fn count_in_degrees(
    store: &Path,
    files: &[FileRecord],
    n: u64,
    budget: u64,
    stats: &Arc<IoStats>,
) -> Result<FileRecord> {
    let targets = open_written(store, files, "csr.out.targets", FileKind::CsrTargets, stats)?;
    let m = targets.header.count;
    let range = (budget / 4 / 4).max(1 << 20);
    let mut w = LayoutWriter::create(&store.join("degrees.in"), FileKind::Degrees, stats.clone())?;
    let mut buf = vec![0u32; 1 << 22];
    let mut lo = 0u64;
    while lo < n {
        let hi = (lo + range).min(n);
        let mut counts = vec![0u32; (hi - lo) as usize];
        let mut off = 0u64;
        while off < m {
            let k = ((m - off) as usize).min(buf.len());
            targets.read_payload(off * 4, bytemuck::cast_slice_mut(&mut buf[..k]))?;
            for &v in &buf[..k] {
                let v = v as u64;
                if v >= lo && v < hi {
                    counts[(v - lo) as usize] += 1;
                }
            }
            off += k as u64;
        }
        w.append(bytemuck::cast_slice(&counts))?;
        lo = hi;
    }
    w.finish(n)
}

/// Builds `grid.index` and `grid.data` from the out-edge CSR, row by row.
pub(super) fn build_grid<R: Record>(
    c: &Ctx,
    files: &[FileRecord],
    n: u64,
    p: u32,
    interval: u64,
    counts: &[(u64, u64)],
) -> Result<Vec<FileRecord>> {
    let store = &c.work.build;
    let pp = p as usize;
    let weighted = R::WEIGHTED;
    let offsets = open_written(
        store,
        files,
        "csr.out.offsets",
        FileKind::CsrOffsets,
        &c.stats,
    )?;
    let targets = open_written(
        store,
        files,
        "csr.out.targets",
        FileKind::CsrTargets,
        &c.stats,
    )?;
    let weights = if weighted {
        Some(open_written(
            store,
            files,
            "csr.out.weights",
            FileKind::CsrWeights,
            &c.stats,
        )?)
    } else {
        None
    };
    let mut index = vec![BlockEntry::default(); pp * pp];
    let bits = crate::codec::id_bits(interval);
    let total = place_blocks(&mut index, counts, 0..pp * pp, pp, bits, weighted, 0)?;
    let mut data = LayoutWriter::create(
        &store.join("grid.data"),
        FileKind::GridData,
        c.stats.clone(),
    )?;
    data.set_payload_len(total)?;
    let mut file_crc = crc32fast::Hasher::new();
    let chunk_cap = (c.opts.memory / 8 / (8 + 8 * weighted as u64)).max(1 << 16);
    let mut done = 0u64;
    let mut tbuf: Vec<u32> = Vec::new();
    let mut wbuf: Vec<f32> = Vec::new();
    for i in 0..pp {
        let lo = (i as u64 * interval).min(n);
        let hi = ((i as u64 + 1) * interval).min(n);
        let mut row_offs = vec![0u64; (hi - lo + 1) as usize];
        offsets.read_payload(lo * 8, bytemuck::cast_slice_mut(&mut row_offs))?;
        // Each block's sections are packed as its runs arrive and drained to their
        // places in grid.data after every chunk (whole words only; a partial last
        // word waits for the next chunk or the block's end).
        let mut packers: Vec<BlockPacker> = (0..pp)
            .map(|j| {
                BlockPacker::new(
                    &index[i * pp + j].shape(),
                    lo as u32,
                    (j as u64 * interval) as u32,
                )
            })
            .collect();
        let mut h: Vec<[crc32fast::Hasher; 4]> = (0..pp).map(|_| Default::default()).collect();
        let drain = |data: &mut LayoutWriter,
                     e: &BlockEntry,
                     bp: &mut BlockPacker,
                     h: &mut [crc32fast::Hasher; 4]|
         -> Result<()> {
            let sh = e.shape();
            let starts = [
                0,
                sh.source_words(),
                sh.source_words() + sh.offset_words(),
                sh.topology_bytes() / 4,
            ];
            bp.drain(|k, at, words| {
                let bytes: &[u8] = bytemuck::cast_slice(words);
                h[k].update(bytes);
                data.write_payload_at(e.offset + 4 * (starts[k] + at), bytes)
            })
        };
        let mut a = 0usize;
        let nrow = (hi - lo) as usize;
        while a < nrow {
            // Largest b with the chunk's edges under the cap (at least one vertex).
            let limit = row_offs[a] + chunk_cap;
            let b = (a + 1)
                .max(row_offs[..=nrow].partition_point(|&o| o <= limit) - 1)
                .min(nrow);
            let (e0, e1) = (row_offs[a], row_offs[b]);
            tbuf.resize((e1 - e0) as usize, 0);
            targets.read_payload(e0 * 4, bytemuck::cast_slice_mut(&mut tbuf))?;
            if let Some(wf) = &weights {
                wbuf.resize((e1 - e0) as usize, 0.0);
                wf.read_payload(e0 * 4, bytemuck::cast_slice_mut(&mut wbuf))?;
            }
            for x in a..b {
                let u = (lo + x as u64) as u32;
                let (s, e) = ((row_offs[x] - e0) as usize, (row_offs[x + 1] - e0) as usize);
                let list = &tbuf[s..e];
                let mut k = 0;
                while k < list.len() {
                    let j = (list[k] as u64 / interval) as usize;
                    let bound = ((j as u64 + 1) * interval).min(u32::MAX as u64 + 1);
                    let end = k + list[k..].partition_point(|&v| (v as u64) < bound);
                    let bp = &mut packers[j];
                    bp.run(u, list[k..end].iter().copied());
                    if weighted {
                        bp.weights(wbuf[s + k..s + end].iter().copied());
                    }
                    k = end;
                }
            }
            for j in 0..pp {
                drain(&mut data, &index[i * pp + j], &mut packers[j], &mut h[j])?;
            }
            done += e1 - e0;
            c.obs.advance(done, done);
            a = b;
        }
        for j in 0..pp {
            let e = &mut index[i * pp + j];
            if e.edges == 0 {
                continue;
            }
            packers[j].finish();
            drain(&mut data, e, &mut packers[j], &mut h[j])?;
            let [hs, ho, hd, hw] = std::mem::take(&mut h[j]);
            let mut topo = hs;
            topo.combine(&ho);
            topo.combine(&hd);
            e.crc_topology = topo.clone().finalize();
            e.crc_weights = hw.clone().finalize();
            let mut whole = topo;
            whole.combine(&hw);
            file_crc.combine(&whole);
        }
    }
    let data_rec = data.finish_with_crc(pp as u64 * pp as u64, file_crc.finalize())?;
    let mut idx = LayoutWriter::create(
        &store.join("grid.index"),
        FileKind::GridIndex,
        c.stats.clone(),
    )?;
    idx.append(bytemuck::cast_slice(&index))?;
    let idx_rec = idx.finish(index.len() as u64)?;
    Ok(vec![idx_rec, data_rec])
}
