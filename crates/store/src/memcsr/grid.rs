//! The grid layout cut from CSRs held in memory: block placement and the grid
//! writer (row by row, one pass).

use super::*;

/// Sets the index entries of `blocks` (row-major numbers in a P x P grid, `pp` =
/// P) from their (edges, distinct sources) `counts`, each block placed at the end
/// of the one before, starting at byte `total` of `grid.data`; returns the end.
/// A block of more than `u32::MAX` edges is an error.
pub(crate) fn place_blocks(
    index: &mut [BlockEntry],
    counts: &[(u64, u64)],
    blocks: std::ops::Range<usize>,
    pp: usize,
    bits: u32,
    weighted: bool,
    mut total: u64,
) -> Result<u64> {
    for b in blocks {
        let (edges, sources) = counts[b];
        if edges > u32::MAX as u64 {
            return Err(StoreError::Invalid(format!(
                "grid block ({}, {}) would hold {edges} edges, more than {}; ingest with more --partitions",
                b / pp,
                b % pp,
                u32::MAX
            )));
        }
        index[b] = BlockEntry::new(total, edges, sources, bits);
        total += index[b].shape().block_bytes(weighted);
    }
    Ok(total)
}

/// `grid.data` written row by row from CSRs in memory. A block's place follows
/// from the sizes of the blocks before it, so each row's index entries are fixed
/// (from its blocks' counts) before the row is appended: all at once
/// ([`GridWriter::create`]) or row by row as the counts become known
/// ([`GridWriter::new`] + [`GridWriter::set_rows`], the external ingest's
/// single pass).
pub(crate) struct GridWriter {
    pub(super) index: Vec<BlockEntry>,
    pub(super) total: u64,
    pub(super) pp: usize,
    pub(super) bits: u32,
    pub(super) weighted: bool,
    pub(super) data: LayoutWriter,
    /// Rows whose index entries are set.
    pub(super) rows_set: usize,
    pub(super) next_row: usize,
    /// Edges placed so far.
    pub placed: u64,
}

impl GridWriter {
    /// A writer whose rows' entries are set later, in order, by [`Self::set_rows`].
    pub fn new(
        store: &Path,
        p: u32,
        interval: u64,
        weighted: bool,
        stats: &Arc<IoStats>,
    ) -> Result<GridWriter> {
        let pp = p as usize;
        let data =
            LayoutWriter::create(&store.join("grid.data"), FileKind::GridData, stats.clone())?;
        Ok(GridWriter {
            index: vec![BlockEntry::default(); pp * pp],
            total: 0,
            pp,
            bits: id_bits(interval),
            weighted,
            data,
            rows_set: 0,
            next_row: 0,
            placed: 0,
        })
    }

    /// `counts`: (edges, distinct sources) of every block, row-major.
    pub fn create(
        store: &Path,
        p: u32,
        interval: u64,
        counts: &[(u64, u64)],
        weighted: bool,
        stats: &Arc<IoStats>,
    ) -> Result<GridWriter> {
        let mut g = Self::new(store, p, interval, weighted, stats)?;
        g.set_rows(p as usize, counts)?;
        Ok(g)
    }

    /// Fixes the index entries of the rows from the next unset one up to `i1`
    /// from `counts` ((edges, distinct sources) of every block, P x P row-major;
    /// only those rows are read).
    pub fn set_rows(&mut self, i1: usize, counts: &[(u64, u64)]) -> Result<()> {
        let blocks = self.rows_set * self.pp..i1 * self.pp;
        self.total = place_blocks(
            &mut self.index,
            counts,
            blocks,
            self.pp,
            self.bits,
            self.weighted,
            self.total,
        )?;
        self.rows_set = self.rows_set.max(i1);
        Ok(())
    }

    /// Appends rows from the next one up to `i1`, all without edges.
    pub fn append_empty_rows(&mut self, i1: usize) -> Result<()> {
        let zero = vec![(0u64, 0u64); self.pp * self.pp];
        self.set_rows(i1, &zero)?;
        self.next_row = self.next_row.max(i1);
        Ok(())
    }

    /// Bytes of row `i` (its entries set) in `grid.data`.
    pub fn row_bytes(&self, i: usize) -> u64 {
        debug_assert!(i < self.rows_set);
        let end = if i + 1 < self.rows_set {
            self.index[(i + 1) * self.pp].offset
        } else {
            self.total
        };
        end - self.index[i * self.pp].offset
    }

    /// Appends the rows from the next one up to `i1` (entries set) from `csr`
    /// (vertex k is `vbase + k`), built in parallel in windows of rows, each window
    /// written on a thread of its own while the next is built. At most `memory`
    /// bytes of rows are held at once (a row is held twice while built, packed per
    /// block then in order, and once more while written), at least one row at a
    /// time; `progress` gets the edges placed so far.
    pub fn append_windows<A: Adj>(
        &mut self,
        csr: &MemCsr<A>,
        vbase: u64,
        i1: usize,
        interval: u64,
        memory: u64,
        progress: &(dyn Fn(u64) + Sync),
    ) -> Result<()> {
        assert!(i1 <= self.rows_set, "grid rows' entries are set first");
        let widest = (self.next_row..i1)
            .map(|i| 3 * self.row_bytes(i))
            .max()
            .unwrap_or(0)
            .max(1);
        let window = ((memory / widest) as usize).clamp(1, 2 * rayon::current_num_threads());
        // A row too wide for three copies at once is written before the next is
        // built (two copies, what the caller admitted it for).
        let overlap = widest <= memory;
        // The window built last, not yet written: its first row and rows.
        let mut pending: Option<(usize, Vec<GridRow>)> = None;
        let mut at = self.next_row;
        while at < i1 || pending.is_some() {
            let next = (at < i1).then(|| (at, (at + window).min(i1)));
            let data = &mut self.data;
            let index = &self.index;
            let pp = self.pp;
            let (written, built) = std::thread::scope(|s| {
                let mut write = pending.as_ref().map(|(_, rows)| {
                    s.spawn(move || -> Result<()> {
                        for (buf, _) in rows {
                            data.append(bytemuck::cast_slice(buf))?;
                        }
                        Ok(())
                    })
                });
                let early = if overlap {
                    None
                } else {
                    write.take().map(crate::join_scoped)
                };
                let built =
                    next.map(|(a, b)| Self::build_rows(index, pp, csr, vbase, a, b, interval));
                let written = early
                    .or_else(|| write.map(crate::join_scoped))
                    .unwrap_or(Ok(()));
                (written, built)
            });
            written?;
            if let Some((i0, rows)) = pending.take() {
                self.rows_written(csr, vbase, i0, rows, interval);
                progress(self.placed);
            }
            if let Some((a, b)) = next {
                pending = built.map(|rows| (a, rows));
                at = b;
            }
        }
        Ok(())
    }

    /// Rows `i0 .. i1` built in parallel from `csr`, whose vertex k is `vbase + k`
    /// and which holds at least those rows' vertices (`index` the grid's entries,
    /// `pp` = P).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn build_rows<A: Adj>(
        index: &[BlockEntry],
        pp: usize,
        csr: &MemCsr<A>,
        vbase: u64,
        i0: usize,
        i1: usize,
        interval: u64,
    ) -> Vec<GridRow> {
        (i0..i1)
            .into_par_iter()
            .map(|i| {
                csr.grid_row(
                    &index[i * pp..(i + 1) * pp],
                    vbase,
                    Self::row_range(csr, vbase, i, interval),
                    interval,
                    i as u64 * interval,
                )
            })
            .collect()
    }

    /// The range of `csr`'s vertices (vertex k is `vbase + k`) in grid row `i`.
    pub(super) fn row_range<A: Adj>(
        csr: &MemCsr<A>,
        vbase: u64,
        i: usize,
        interval: u64,
    ) -> (usize, usize) {
        let end = vbase + csr.vertices() as u64;
        let lo = (i as u64 * interval).clamp(vbase, end) - vbase;
        let hi = ((i as u64 + 1) * interval).clamp(vbase, end) - vbase;
        (lo as usize, hi as usize)
    }

    /// Records rows from `i0` on (the next ones), just written: their blocks' CRCs
    /// and edges.
    pub(super) fn rows_written<A: Adj>(
        &mut self,
        csr: &MemCsr<A>,
        vbase: u64,
        i0: usize,
        rows: Vec<GridRow>,
        interval: u64,
    ) {
        assert_eq!(i0, self.next_row, "grid rows are appended in order");
        let pp = self.pp;
        let n = rows.len();
        for (k, (_, crcs)) in rows.into_iter().enumerate() {
            let i = i0 + k;
            for (j, (t, w)) in crcs.into_iter().enumerate() {
                self.index[i * pp + j].crc_topology = t;
                self.index[i * pp + j].crc_weights = w;
            }
            let (lo, hi) = Self::row_range(csr, vbase, i, interval);
            self.placed += csr.offsets[hi] - csr.offsets[lo];
        }
        self.next_row = i0 + n;
    }

    /// Finishes `grid.data` and writes `grid.index`.
    pub fn finish(self, store: &Path, stats: &Arc<IoStats>) -> Result<Vec<FileRecord>> {
        assert_eq!(self.next_row, self.pp, "every grid row appended");
        debug_assert_eq!(self.data.payload_len(), self.total);
        let n_blocks = self.index.len() as u64;
        let data_rec = self.data.finish(n_blocks)?;
        let mut idx = LayoutWriter::create(
            &store.join("grid.index"),
            FileKind::GridIndex,
            stats.clone(),
        )?;
        idx.append(bytemuck::cast_slice(&self.index))?;
        let idx_rec = idx.finish(n_blocks)?;
        Ok(vec![idx_rec, data_rec])
    }
}
