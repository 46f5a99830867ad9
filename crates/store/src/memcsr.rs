//! In-memory store construction: the fast path of ingest when every edge fits the
//! budget at once.
//!
//! Design: instead of sorting edge records by (source, target) with a comparison
//! sort and then streaming them one by one into the layouts, the edges are placed
//! by a **counting sort on the source**: each of T threads counts the sources of its
//! contiguous share of the records, the counts give the CSR offsets and each
//! thread's first slot in every list, and the threads scatter the targets into
//! those disjoint slots at once. Each adjacency list is then sorted on its own
//! (target, then weight bits) and, with `--dedup`, compacted. The in-edge CSR is a
//! second counting sort, by target, of the out-edge CSR (scanning sources in
//! ascending order keeps every in-list sorted by source without sorting). The grid
//! (CLIP ATC'17 §4.1, GraphCP FCS'24 §3.2) is cut from the in-memory CSR: per-block
//! edge and source counts first (rows in parallel), which fix every block's place,
//! then rows built in parallel into buffers laid out exactly as `grid.data` and
//! appended in order.
//!
//! Invariants: the files produced are byte-identical to those of the external
//! path (sorted runs + merge, [`crate::sort`]): lists in (target, weight bits)
//! order, duplicates resolved the same way (the first of equal targets, i.e. the
//! smallest weight bits, is kept), the same block layout and CRCs. The caller
//! checks that the records plus [`MemCsr::extra_bytes`] fit the budget.

use crate::codec::{id_bits, BlockPacker};
use crate::error::{Result, StoreError};
use crate::format::{FileKind, FileRecord, LayoutWriter};
use crate::reader::BlockEntry;
use crate::sort::Record;
use outcore_io::IoStats;
use rayon::prelude::*;
use std::path::Path;
use std::sync::Arc;

/// An adjacency entry held in memory: its target and weight, ordered by target
/// then weight bits (the order of the external sort's key and tie).
pub(crate) trait Adj: bytemuck::Pod + Ord + Send + Sync {
    const WEIGHTED: bool;
    fn make(v: u32, w: f32) -> Self;
    fn v(self) -> u32;
    fn w(self) -> f32;
    /// Sorts one adjacency list; `scratch` may be used (and kept) as working room.
    fn sort_list(list: &mut [Self], _scratch: &mut Vec<Self>) {
        list.sort_unstable();
    }
}

impl Adj for u32 {
    const WEIGHTED: bool = false;
    fn make(v: u32, _w: f32) -> u32 {
        v
    }
    fn v(self) -> u32 {
        self
    }
    fn w(self) -> f32 {
        1.0
    }
    fn sort_list(list: &mut [u32], scratch: &mut Vec<u32>) {
        if (RADIX_MIN..=RADIX_MAX).contains(&list.len()) {
            radix_sort(list, scratch);
        } else {
            list.sort_unstable();
        }
    }
}

/// Lists of targets at least this long are radix sorted ...
const RADIX_MIN: usize = 256;
/// ... up to this long (the scratch room is as long as the list; longer lists,
/// rare, sort in place).
const RADIX_MAX: usize = 1 << 20;

/// LSD radix sort of 32-bit keys on 8-bit digits, skipping every digit all keys
/// share (the high bytes of a graph's ids mostly), through `scratch`.
fn radix_sort(v: &mut [u32], scratch: &mut Vec<u32>) {
    let n = v.len();
    let mut hist = [[0usize; 256]; 4];
    for &x in v.iter() {
        for (d, h) in hist.iter_mut().enumerate() {
            h[(x >> (8 * d)) as u8 as usize] += 1;
        }
    }
    scratch.clear();
    scratch.resize(n, 0);
    let mut src: &mut [u32] = v;
    let mut dst: &mut [u32] = scratch;
    let mut swapped = false;
    for (d, h) in hist.iter().enumerate() {
        if h.contains(&n) {
            continue;
        }
        let mut pos = [0usize; 256];
        let mut at = 0;
        for (p, &c) in pos.iter_mut().zip(h) {
            *p = at;
            at += c;
        }
        for &x in src.iter() {
            let b = (x >> (8 * d)) as u8 as usize;
            dst[pos[b]] = x;
            pos[b] += 1;
        }
        std::mem::swap(&mut src, &mut dst);
        swapped = !swapped;
    }
    if swapped {
        // The sorted keys are in the scratch room (`src`); `dst` is `v`.
        dst.copy_from_slice(src);
    }
}

/// A weighted entry: target in the high 32 bits, weight bits in the low ones, so
/// the integer order is (target, weight bits).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, bytemuck::Pod, bytemuck::Zeroable)]
#[repr(transparent)]
pub(crate) struct TargetWeight(u64);

impl Adj for TargetWeight {
    const WEIGHTED: bool = true;
    fn make(v: u32, w: f32) -> TargetWeight {
        TargetWeight(((v as u64) << 32) | w.to_bits() as u64)
    }
    fn v(self) -> u32 {
        (self.0 >> 32) as u32
    }
    fn w(self) -> f32 {
        f32::from_bits(self.0 as u32)
    }
}

/// A raw pointer shared by threads that write disjoint elements.
struct Scatter<A>(*mut A);
// SAFETY: the pointer is only used for writes to slots that the counting sort
// gives to exactly one thread (see the scatter loops), and the allocation outlives
// the scoped parallel loop that uses it.
unsafe impl<A: Send> Send for Scatter<A> {}
// SAFETY: as above; no two threads touch the same element.
unsafe impl<A: Send> Sync for Scatter<A> {}
impl<A> Scatter<A> {
    fn ptr(&self) -> *mut A {
        self.0
    }
}

/// A zeroed vector of `len` elements whose pages are asked to be transparent huge
/// pages: the scatter's random writes then miss the TLB far less and fault 512
/// times less often. Only advice: without THP it is an ordinary vector.
pub(crate) fn huge_zeroed<T: bytemuck::Zeroable + Clone>(len: usize) -> Vec<T> {
    let mut v: Vec<T> = bytemuck::zeroed_vec(len);
    advise_huge(&mut v);
    v
}

/// Advises transparent huge pages for the whole 2 MiB pages inside `v`.
pub(crate) fn advise_huge<T>(v: &mut [T]) {
    const HUGE: usize = 2 << 20;
    let start = v.as_mut_ptr() as usize;
    let end = start + std::mem::size_of_val(v);
    let a = start.div_ceil(HUGE) * HUGE;
    let b = end / HUGE * HUGE;
    if b > a {
        // SAFETY: [a, b) lies inside `v`'s allocation, which we borrow mutably;
        // MADV_HUGEPAGE changes neither the contents nor the mapping's validity.
        unsafe {
            libc::madvise(a as *mut libc::c_void, b - a, libc::MADV_HUGEPAGE);
        }
    }
}

/// Vertex ranges, per-range first slots per target, in-edge offsets.
type TargetCounts = (Vec<(usize, usize)>, Vec<Vec<u32>>, Vec<u64>);

/// A built grid row: its words, and each block's topology and weight CRCs.
type GridRow = (Vec<u32>, Vec<(u32, u32)>);

/// What a CSR's sorted lists hold besides distinct edges.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct ListCounts {
    /// Entries `u -> u`.
    pub self_loops: u64,
    /// Entries repeating the previous entry's target in their list (a pair stored
    /// k times counts k - 1); always 0 after `--dedup`.
    pub parallel: u64,
}

impl std::ops::AddAssign for ListCounts {
    fn add_assign(&mut self, o: ListCounts) {
        self.self_loops += o.self_loops;
        self.parallel += o.parallel;
    }
}

/// A CSR held in memory: `offsets` has n + 1 entries.
pub(crate) struct MemCsr<A> {
    pub offsets: Vec<u64>,
    pub adj: Vec<A>,
}

/// Cuts vertices `0..n` into at most `parts` ranges of about equal edge counts.
fn vertex_ranges(offsets: &[u64], parts: usize) -> Vec<(usize, usize)> {
    let n = offsets.len() - 1;
    let m = offsets[n];
    let mut cuts = vec![0usize];
    for k in 1..parts.max(1) {
        let target = m * k as u64 / parts as u64;
        let c = offsets.partition_point(|&o| o < target).min(n);
        if c > *cuts.last().unwrap() {
            cuts.push(c);
        }
    }
    if n > *cuts.last().unwrap() {
        cuts.push(n);
    }
    cuts.windows(2).map(|w| (w[0], w[1])).collect()
}

/// Counts `key` of every item, one count array of `n` per chunk, chunks in
/// parallel.
fn chunk_counts<T: Sync>(
    chunks: &[&[T]],
    n: usize,
    key: impl Fn(&T) -> usize + Sync,
) -> Vec<Vec<u32>> {
    chunks
        .par_iter()
        .map(|c| {
            let mut h: Vec<u32> = huge_zeroed(n);
            for x in c.iter() {
                h[key(x)] += 1;
            }
            h
        })
        .collect()
}

/// Exclusive prefix of per-chunk counts, in place (each count becomes the number
/// of earlier chunks' entries for the same key); returns the totals per key.
fn chunk_bases(hist: &mut [Vec<u32>], base: u32, keys: usize, what: &str) -> Result<Vec<u64>> {
    let mut offsets = vec![0u64; keys + 1];
    let mut total = 0u64;
    for k in 0..keys {
        let mut s = 0u64;
        for h in hist.iter_mut() {
            let c = h[k] as u64;
            h[k] = s as u32;
            s += c;
        }
        if s > u32::MAX as u64 {
            return Err(StoreError::Invalid(format!(
                "vertex {} has {s} {what}; degrees above {} are not supported",
                base as u64 + k as u64,
                u32::MAX
            )));
        }
        offsets[k] = total;
        total += s;
    }
    offsets[keys] = total;
    Ok(offsets)
}

impl<A: Adj> MemCsr<A> {
    /// Memory the fast path needs beyond the records themselves.
    pub fn extra_bytes(m: u64, n: u64, threads: u64) -> u64 {
        m * std::mem::size_of::<A>() as u64 + (n + 1) * 8 + threads * n * 4 + n * 4
    }

    /// The CSR of `records`, whose sources are `base .. base + n` (the CSR's vertex
    /// k is `base + k`), lists sorted by target then weight bits; with `dedup` one
    /// entry per (source, target) is kept. Returns the CSR and what its lists hold
    /// (self-loops, parallel edges).
    pub fn from_records<R: Record>(
        records: &[R],
        base: u32,
        n: usize,
        dedup: bool,
        threads: usize,
    ) -> Result<(MemCsr<A>, ListCounts)> {
        Self::from_records_reusing(records, base, n, dedup, threads, Vec::new())
    }

    /// [`Self::from_records`] with the edge array taken from `spare` (an earlier
    /// CSR's, see [`Self::into_adj`]) when it is large enough: consecutive ranges
    /// of the external ingest then fault in and zero their largest array once.
    pub fn from_records_reusing<R: Record>(
        records: &[R],
        base: u32,
        n: usize,
        dedup: bool,
        threads: usize,
        mut spare: Vec<A>,
    ) -> Result<(MemCsr<A>, ListCounts)> {
        let m = records.len();
        let parts = threads.max(m.div_ceil(u32::MAX as usize)).max(1);
        let chunks: Vec<&[R]> = records.chunks(m.div_ceil(parts).max(1)).collect();
        let mut hist = chunk_counts(&chunks, n, |r| (r.u() - base) as usize);
        let offsets = chunk_bases(&mut hist, base, n, "out-edges")?;
        // Every slot below m is written by the scatter, so a reused array keeps
        // its old contents until then (only a growth is zeroed).
        let mut adj: Vec<A> = if spare.capacity() >= m {
            spare.truncate(m);
            spare.resize(m, A::zeroed());
            spare
        } else {
            drop(spare);
            huge_zeroed(m)
        };
        let out = Scatter(adj.as_mut_ptr());
        if m < u32::MAX as usize {
            // Absolute 32-bit cursors: one random access fewer per edge.
            hist.par_iter_mut().for_each(|h| {
                for (c, &o) in h.iter_mut().zip(&offsets) {
                    *c += o as u32;
                }
            });
            chunks
                .par_iter()
                .zip(hist.par_iter_mut())
                .for_each(|(c, h)| {
                    for r in c.iter() {
                        let u = (r.u() - base) as usize;
                        let p = h[u];
                        h[u] += 1;
                        // SAFETY: as below, with the base already added: `p` < m
                        // and each slot is written by one thread once.
                        unsafe { *out.ptr().add(p as usize) = A::make(r.v(), r.w()) };
                    }
                });
        } else {
            chunks
                .par_iter()
                .zip(hist.par_iter_mut())
                .for_each(|(c, h)| {
                    for r in c.iter() {
                        let u = (r.u() - base) as usize;
                        let p = offsets[u] + h[u] as u64;
                        h[u] += 1;
                        // SAFETY: `p` < m: slots offsets[u] .. offsets[u + 1] belong
                        // to vertex u, and this chunk's share of them starts at its
                        // base (the counts of earlier chunks) and holds exactly its
                        // own count, so every slot is written by one thread once.
                        unsafe { *out.ptr().add(p as usize) = A::make(r.v(), r.w()) };
                    }
                });
        }
        drop(hist);
        let mut csr = MemCsr { offsets, adj };
        let counts = csr.sort_lists(base, dedup, threads);
        Ok((csr, counts))
    }

    /// Sorts every list; with `dedup` keeps the first of equal targets and
    /// compacts. Returns the self-loops and parallel edges left.
    fn sort_lists(&mut self, vbase: u32, dedup: bool, threads: usize) -> ListCounts {
        let ranges = vertex_ranges(&self.offsets, threads * 16);
        let offsets = &self.offsets;
        let mut pieces: Vec<(usize, usize, &mut [A])> = Vec::with_capacity(ranges.len());
        let mut rest: &mut [A] = &mut self.adj;
        for &(a, b) in &ranges {
            let (head, tail) = rest.split_at_mut((offsets[b] - offsets[a]) as usize);
            pieces.push((a, b, head));
            rest = tail;
        }
        // Per piece: kept entries and new degrees (with dedup), self-loops and
        // parallel edges (entries whose target repeats the previous one's).
        let done: Vec<(usize, Vec<u32>, ListCounts)> = pieces
            .into_par_iter()
            .map(|(a, b, slice)| {
                let base = offsets[a];
                let mut w = 0usize;
                let mut counts = ListCounts::default();
                let mut degs = Vec::new();
                let mut scratch = Vec::new();
                for u in a..b {
                    let (s, e) = (
                        (offsets[u] - base) as usize,
                        (offsets[u + 1] - base) as usize,
                    );
                    A::sort_list(&mut slice[s..e], &mut scratch);
                    let start = if dedup {
                        let start = w;
                        let mut prev: Option<u32> = None;
                        for k in s..e {
                            let x = slice[k];
                            if prev != Some(x.v()) {
                                prev = Some(x.v());
                                slice[w] = x;
                                w += 1;
                            }
                        }
                        degs.push((w - start) as u32);
                        start
                    } else {
                        w = e;
                        s
                    };
                    let list = &slice[start..w];
                    let id = vbase + u as u32;
                    let lo = list.partition_point(|x| x.v() < id);
                    let hi = list.partition_point(|x| x.v() <= id);
                    counts.self_loops += (hi - lo) as u64;
                    if !dedup {
                        counts.parallel +=
                            list.windows(2).filter(|p| p[0].v() == p[1].v()).count() as u64;
                    }
                }
                (w, degs, counts)
            })
            .collect();
        let mut counts = ListCounts::default();
        for d in &done {
            counts += d.2;
        }
        if dedup {
            let mut write = 0usize;
            let mut off = 0u64;
            let mut v = 0usize;
            for (&(a, _), (kept, degs, _)) in ranges.iter().zip(&done) {
                let from = self.offsets[a] as usize;
                self.adj.copy_within(from..from + kept, write);
                write += kept;
                for d in degs {
                    self.offsets[v] = off;
                    off += *d as u64;
                    v += 1;
                }
            }
            let n = self.offsets.len() - 1;
            debug_assert_eq!(v, n);
            self.offsets[n] = off;
            self.adj.truncate(write);
            self.adj.shrink_to_fit();
        }
        counts
    }

    pub fn vertices(&self) -> usize {
        self.offsets.len() - 1
    }

    /// The edge array, for [`Self::from_records_reusing`].
    pub fn into_adj(self) -> Vec<A> {
        self.adj
    }

    pub fn list(&self, u: usize) -> &[A] {
        &self.adj[self.offsets[u] as usize..self.offsets[u + 1] as usize]
    }

    /// Target counts over vertex ranges of about equal edge counts (at least
    /// `threads`): the ranges, each range's counts per target turned into its first
    /// slot past the earlier ranges' (see [`chunk_bases`]), and the in-edge offsets.
    fn target_counts(&self, threads: usize) -> Result<TargetCounts> {
        let n = self.vertices();
        let parts = threads
            .max(self.adj.len().div_ceil(u32::MAX as usize))
            .max(1);
        let ranges = vertex_ranges(&self.offsets, parts);
        let chunks: Vec<&[A]> = ranges
            .iter()
            .map(|&(a, b)| &self.adj[self.offsets[a] as usize..self.offsets[b] as usize])
            .collect();
        let mut hist = chunk_counts(&chunks, n, |x| x.v() as usize);
        let offsets = chunk_bases(&mut hist, 0, n, "in-edges")?;
        Ok((ranges, hist, offsets))
    }

    /// In-degrees, counted by T threads over their shares of the lists.
    pub fn in_degrees(&self, threads: usize) -> Result<Vec<u32>> {
        let (_, _, offsets) = self.target_counts(threads)?;
        Ok(offsets.windows(2).map(|w| (w[1] - w[0]) as u32).collect())
    }

    /// The in-edge CSR: for each target, its sources in ascending order (ties, i.e.
    /// parallel edges, in weight-bit order), weights kept.
    pub fn transpose(&self, threads: usize) -> Result<MemCsr<A>> {
        let (ranges, mut hist, offsets) = self.target_counts(threads)?;
        let mut adj: Vec<A> = huge_zeroed(self.adj.len());
        let out = Scatter(adj.as_mut_ptr());
        let offs = &offsets;
        ranges
            .par_iter()
            .zip(hist.par_iter_mut())
            .for_each(|(&(a, b), h)| {
                for u in a..b {
                    for &x in self.list(u) {
                        let v = x.v() as usize;
                        let p = offs[v] + h[v] as u64;
                        h[v] += 1;
                        // SAFETY: slots offs[v] .. offs[v + 1] belong to target v;
                        // this range's share starts after the earlier ranges'
                        // counts and holds exactly its own, so each slot is
                        // written once, by one thread.
                        unsafe { *out.ptr().add(p as usize) = A::make(u as u32, x.w()) };
                    }
                }
            });
        Ok(MemCsr { offsets, adj })
    }

    /// Writes `csr.<dir>.offsets/targets[/weights]` and `degrees.<dir>`.
    pub fn write(&self, store: &Path, dir: &str, stats: &Arc<IoStats>) -> Result<Vec<FileRecord>> {
        let mut w = CsrFiles::create(store, dir, A::WEIGHTED, stats)?;
        w.append(self)?;
        w.finish()
    }

    /// Adds every edge's target to `in_deg` (indexed by vertex); an overflow is
    /// an error.
    pub fn add_in_degrees(&self, in_deg: &mut [u32]) -> Result<()> {
        for x in &self.adj {
            let d = &mut in_deg[x.v() as usize];
            *d = d.checked_add(1).ok_or_else(|| {
                StoreError::Invalid(format!(
                    "vertex {} has more than {} in-edges",
                    x.v(),
                    u32::MAX
                ))
            })?;
        }
        Ok(())
    }

    /// Adds this CSR's per-block (edges, distinct sources) to `counts` (P x P,
    /// row-major); its vertex k is `base + k`.
    pub fn add_block_counts(&self, base: u64, p: u32, interval: u64, counts: &mut [(u64, u64)]) {
        let pp = p as usize;
        let n = self.vertices() as u64;
        if n == 0 {
            return;
        }
        let (r0, r1) = (base / interval, (base + n - 1) / interval);
        let rows: Vec<(usize, Vec<(u64, u64)>)> = (r0..=r1)
            .into_par_iter()
            .map(|i| {
                let lo = (i * interval).max(base) - base;
                let hi = ((i + 1) * interval).min(base + n) - base;
                let mut c = vec![(0u64, 0u64); pp];
                for u in lo as usize..hi as usize {
                    Self::runs(self.list(u), interval, |j, s, e| {
                        c[j].0 += (e - s) as u64;
                        c[j].1 += 1;
                    });
                }
                (i as usize, c)
            })
            .collect();
        for (i, c) in rows {
            for (j, (e, s)) in c.into_iter().enumerate() {
                counts[i * pp + j].0 += e;
                counts[i * pp + j].1 += s;
            }
        }
    }

    /// Calls `f(j, start, end)` for each run of `list[start..end]` whose targets
    /// fall in column interval j.
    ///
    /// `list` is sorted by target. A run's end is found by galloping (1, 2, 4, ...
    /// past its start, then a binary search in the last step): one comparison for
    /// the most common run, a single edge, and a logarithmic search for long ones.
    fn runs(list: &[A], interval: u64, mut f: impl FnMut(usize, usize, usize)) {
        let below = |x: &A, bound: u64| (x.v() as u64) < bound;
        let mut k = 0;
        while k < list.len() {
            let j = (list[k].v() as u64 / interval) as usize;
            let bound = (j as u64 + 1) * interval;
            // Invariant: list[k..lo] is below `bound`; the run ends in [lo, hi],
            // `hi` being the end of the list or an element at or past `bound`.
            let (mut lo, mut step) = (k + 1, 1);
            let hi = loop {
                let at = lo + step - 1;
                if at >= list.len() {
                    break list.len();
                }
                if !below(&list[at], bound) {
                    break at;
                }
                lo = at + 1;
                step *= 2;
            };
            let end = lo + list[lo..hi].partition_point(|x| below(x, bound));
            f(j, k, end);
            k = end;
        }
    }

    /// Writes `grid.index` and `grid.data` for P x P blocks of `interval` vertices,
    /// holding at most `memory` bytes of row buffers at once; `progress` gets the
    /// edges placed so far.
    pub fn write_grid(
        &self,
        store: &Path,
        p: u32,
        interval: u64,
        memory: u64,
        stats: &Arc<IoStats>,
        progress: &(dyn Fn(u64) + Sync),
    ) -> Result<Vec<FileRecord>> {
        let pp = p as usize;
        let mut counts = vec![(0u64, 0u64); pp * pp];
        self.add_block_counts(0, p, interval, &mut counts);
        let mut g = GridWriter::create(store, p, interval, &counts, A::WEIGHTED, stats)?;
        drop(counts);
        g.append_windows(self, 0, pp, interval, memory, progress)?;
        g.finish(store, stats)
    }

    /// One grid row as the 32-bit words of `grid.data` (blocks in column order,
    /// each packed by [`BlockPacker`]: sources, offsets, targets, weights), and each
    /// block's topology and weight CRCs. `row_lo` is the row's first vertex.
    fn grid_row(
        &self,
        blocks: &[BlockEntry],
        vbase: u64,
        (lo, hi): (usize, usize),
        interval: u64,
        row_lo: u64,
    ) -> GridRow {
        let pp = blocks.len();
        let base = blocks[0].offset;
        let last = &blocks[pp - 1];
        let bytes = last.offset + last.shape().block_bytes(A::WEIGHTED) - base;
        let mut packers: Vec<BlockPacker> = (0..pp)
            .map(|j| {
                let mut bp = BlockPacker::new(
                    &blocks[j].shape(),
                    row_lo as u32,
                    (j as u64 * interval) as u32,
                );
                if blocks[j].edges > 0 {
                    let sh = blocks[j].shape();
                    bp.sections[0].reserve(sh.source_words() as usize);
                    bp.sections[1].reserve(sh.offset_words() as usize);
                    bp.sections[2].reserve(sh.target_words() as usize);
                    if A::WEIGHTED {
                        bp.sections[3].reserve(blocks[j].edges as usize);
                    }
                }
                bp
            })
            .collect();
        for u in lo..hi {
            let list = self.list(u);
            Self::runs(list, interval, |j, s, e| {
                let bp = &mut packers[j];
                bp.run((vbase + u as u64) as u32, list[s..e].iter().map(|x| x.v()));
                if A::WEIGHTED {
                    bp.weights(list[s..e].iter().map(|x| x.w()));
                }
            });
        }
        let mut buf: Vec<u32> = Vec::with_capacity((bytes / 4) as usize);
        let crcs = blocks
            .iter()
            .zip(&mut packers)
            .map(|(b, bp)| {
                if b.edges == 0 {
                    return (0, 0);
                }
                bp.finish();
                let mut topo = crc32fast::Hasher::new();
                for sec in &bp.sections[..3] {
                    topo.update(bytemuck::cast_slice(sec));
                    buf.extend_from_slice(sec);
                }
                let w = if A::WEIGHTED {
                    buf.extend_from_slice(&bp.sections[3]);
                    crc32fast::hash(bytemuck::cast_slice(&bp.sections[3]))
                } else {
                    0
                };
                (topo.finalize(), w)
            })
            .collect();
        debug_assert_eq!(buf.len() as u64 * 4, bytes);
        (buf, crcs)
    }
}

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
    index: Vec<BlockEntry>,
    total: u64,
    pp: usize,
    bits: u32,
    weighted: bool,
    data: LayoutWriter,
    /// Rows whose index entries are set.
    rows_set: usize,
    next_row: usize,
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
    fn build_rows<A: Adj>(
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
    fn row_range<A: Adj>(csr: &MemCsr<A>, vbase: u64, i: usize, interval: u64) -> (usize, usize) {
        let end = vbase + csr.vertices() as u64;
        let lo = (i as u64 * interval).clamp(vbase, end) - vbase;
        let hi = ((i as u64 + 1) * interval).clamp(vbase, end) - vbase;
        (lo as usize, hi as usize)
    }

    /// Records rows from `i0` on (the next ones), just written: their blocks' CRCs
    /// and edges.
    fn rows_written<A: Adj>(
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

/// The CSR files of one direction written range by range: each
/// [`CsrFiles::append`] adds the next vertices' offsets, lists and degrees.
pub(crate) struct CsrFiles {
    offsets: LayoutWriter,
    targets: LayoutWriter,
    weights: Option<LayoutWriter>,
    degrees: LayoutWriter,
    vertices: u64,
    edges: u64,
}

impl CsrFiles {
    pub fn create(
        store: &Path,
        dir: &str,
        weighted: bool,
        stats: &Arc<IoStats>,
    ) -> Result<CsrFiles> {
        let f = |name: &str, kind| {
            LayoutWriter::create(
                &store.join(format!("csr.{dir}.{name}")),
                kind,
                stats.clone(),
            )
        };
        Ok(CsrFiles {
            offsets: f("offsets", FileKind::CsrOffsets)?,
            targets: f("targets", FileKind::CsrTargets)?,
            weights: if weighted {
                Some(f("weights", FileKind::CsrWeights)?)
            } else {
                None
            },
            degrees: LayoutWriter::create(
                &store.join(format!("degrees.{dir}")),
                FileKind::Degrees,
                stats.clone(),
            )?,
            vertices: 0,
            edges: 0,
        })
    }

    /// Appends the next `csr.vertices()` vertices.
    pub fn append<A: Adj>(&mut self, csr: &MemCsr<A>) -> Result<()> {
        let n = csr.vertices();
        let base = self.edges;
        let mut obuf: Vec<u64> = Vec::with_capacity(n.min(1 << 20));
        for part in csr.offsets[..n].chunks(1 << 20) {
            obuf.clear();
            obuf.extend(part.iter().map(|o| o + base));
            self.offsets.append(bytemuck::cast_slice(&obuf))?;
        }
        if A::WEIGHTED {
            let mut buf: Vec<u32> = Vec::with_capacity(1 << 20);
            for part in csr.adj.chunks(1 << 20) {
                buf.clear();
                buf.extend(part.iter().map(|x| x.v()));
                self.targets.append(bytemuck::cast_slice(&buf))?;
            }
            let w = self.weights.as_mut().expect("weighted files");
            for part in csr.adj.chunks(1 << 20) {
                buf.clear();
                buf.extend(part.iter().map(|x| x.w().to_bits()));
                w.append(bytemuck::cast_slice(&buf))?;
            }
        } else {
            self.targets.append(bytemuck::cast_slice(&csr.adj))?;
        }
        let degrees: Vec<u32> = csr
            .offsets
            .windows(2)
            .map(|o| (o[1] - o[0]) as u32)
            .collect();
        self.degrees.append(bytemuck::cast_slice(&degrees))?;
        self.vertices += n as u64;
        self.edges += csr.adj.len() as u64;
        Ok(())
    }

    /// Writes the closing offset and finishes every file.
    pub fn finish(mut self) -> Result<Vec<FileRecord>> {
        self.offsets.append(&self.edges.to_le_bytes())?;
        let mut recs = vec![
            self.offsets.finish(self.vertices + 1)?,
            self.targets.finish(self.edges)?,
        ];
        if let Some(w) = self.weights {
            recs.push(w.finish(self.edges)?);
        }
        recs.push(self.degrees.finish(self.vertices)?);
        Ok(recs)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sort::{Edge, WEdge};

    /// Every entry of `csr` as a (vertex, target, weight) record, in CSR order.
    fn edges(csr: &MemCsr<TargetWeight>) -> Vec<WEdge> {
        (0..csr.vertices())
            .flat_map(|u| {
                csr.list(u).iter().map(move |x| WEdge {
                    u: u as u32,
                    v: x.v(),
                    w: x.w(),
                })
            })
            .collect()
    }

    #[test]
    fn radix_sorted_lists_match_a_comparison_sort() {
        let mut x = 5u64;
        let mut scratch = Vec::new();
        for len in [0usize, 1, 255, 256, 257, 1000, 5000, 70_000] {
            for range in [1u64, 7, 300, 70_000, 1 << 24, 1 << 32] {
                let mut list: Vec<u32> = (0..len)
                    .map(|_| {
                        crate::lcg(&mut x);
                        ((x >> 16) % range) as u32
                    })
                    .collect();
                let mut expect = list.clone();
                expect.sort_unstable();
                <u32 as Adj>::sort_list(&mut list, &mut scratch);
                assert_eq!(list, expect, "len {len} range {range}");
            }
        }
    }

    #[test]
    fn column_runs_cover_each_sorted_list_exactly() {
        let mut x = 99u64;
        for len in [0usize, 1, 2, 3, 7, 64, 1000] {
            for interval in [1u64, 3, 16, 1000, 1 << 20] {
                let mut list: Vec<u32> = (0..len)
                    .map(|_| {
                        crate::lcg(&mut x);
                        (x >> 40) as u32 % 5000
                    })
                    .collect();
                list.sort_unstable();
                let mut got = Vec::new();
                MemCsr::<u32>::runs(&list, interval, |j, s, e| got.push((j, s, e)));
                // The naive split: a new run wherever the column changes.
                let mut expect: Vec<(usize, usize, usize)> = Vec::new();
                for (k, &v) in list.iter().enumerate() {
                    let j = (v as u64 / interval) as usize;
                    match expect.last_mut() {
                        Some(r) if r.0 == j => r.2 = k + 1,
                        _ => expect.push((j, k, k + 1)),
                    }
                }
                assert_eq!(got, expect, "len {len} interval {interval}");
            }
        }
    }

    #[test]
    fn counting_sort_matches_a_comparison_sort() {
        let mut x = 7u64;
        let mut next = || {
            crate::lcg(&mut x);
            x >> 33
        };
        let n = 300usize;
        let recs: Vec<WEdge> = (0..20_000)
            .map(|_| WEdge {
                u: (next() % n as u64) as u32,
                v: (next() % 40) as u32 * 7 % n as u32,
                w: (next() % 4) as f32,
            })
            .collect();
        for dedup in [false, true] {
            for threads in [1, 2, 5] {
                let mut want = recs.clone();
                want.sort_by_key(|r| (r.key(), r.tie()));
                if dedup {
                    want.dedup_by_key(|r| r.key());
                }
                let loops = want.iter().filter(|r| r.u == r.v).count() as u64;
                let parallel = if dedup {
                    0
                } else {
                    want.windows(2)
                        .filter(|p| (p[0].u, p[0].v) == (p[1].u, p[1].v))
                        .count() as u64
                };
                let (csr, got) =
                    MemCsr::<TargetWeight>::from_records(&recs, 0, n, dedup, threads).unwrap();
                assert_eq!((got.self_loops, got.parallel), (loops, parallel));
                assert_eq!(edges(&csr), want, "dedup {dedup}, threads {threads}");
                // The transpose is the reversed records in (target, source, weight) order.
                let t = csr.transpose(threads).unwrap();
                let mut rev: Vec<WEdge> = want.iter().map(|r| r.reversed()).collect();
                rev.sort_by_key(|r| (r.key(), r.tie()));
                assert_eq!(edges(&t), rev);
                let indeg = csr.in_degrees(threads).unwrap();
                for (v, d) in indeg.iter().enumerate() {
                    assert_eq!(*d as usize, t.list(v).len());
                }
            }
        }
    }

    #[test]
    fn grid_bytes_do_not_depend_on_the_row_memory() {
        // Row memory from one byte (a row at a time, each written before the next
        // is built) to plenty (windows written while the next is built).
        let mut x = 3u64;
        let recs: Vec<WEdge> = (0..20_000)
            .map(|_| {
                crate::lcg(&mut x);
                WEdge {
                    u: (x >> 40) as u32 % 1000,
                    v: (x >> 20) as u32 % 1000,
                    w: (x & 15) as f32,
                }
            })
            .collect();
        let (csr, _) = MemCsr::<TargetWeight>::from_records(&recs, 0, 1000, false, 2).unwrap();
        let mut files: Vec<Vec<u8>> = Vec::new();
        for memory in [1u64, 20_000, 200_000, 1 << 30] {
            let dir = tempfile::tempdir().unwrap();
            csr.write_grid(dir.path(), 7, 143, memory, &IoStats::new(), &|_| {})
                .unwrap();
            let mut bytes = std::fs::read(dir.path().join("grid.data")).unwrap();
            bytes.extend(std::fs::read(dir.path().join("grid.index")).unwrap());
            files.push(bytes);
        }
        assert!(
            files.iter().all(|f| *f == files[0]),
            "same grid at every row memory"
        );
    }

    #[test]
    fn unweighted_lists_and_empty_graphs() {
        let recs = vec![
            Edge { u: 2, v: 1 },
            Edge { u: 0, v: 2 },
            Edge { u: 2, v: 0 },
        ];
        let (csr, counts) = MemCsr::<u32>::from_records(&recs, 0, 4, false, 2).unwrap();
        assert_eq!(counts, ListCounts::default());
        assert_eq!(csr.offsets, vec![0, 1, 1, 3, 3]);
        assert_eq!(csr.adj, vec![2, 0, 1]);
        let (csr, counts) =
            MemCsr::<u32>::from_records(&Vec::<Edge>::new(), 0, 0, true, 2).unwrap();
        assert_eq!(
            (csr.offsets, csr.adj.len(), counts),
            (vec![0], 0, ListCounts::default())
        );
        // 0 -> 1 three times, 1 -> 1 twice: 2 + 1 parallel, 2 self-loops; none
        // left after dedup.
        let recs: Vec<Edge> = [(0, 1), (1, 1), (0, 1), (0, 2), (1, 1), (0, 1)]
            .iter()
            .map(|&(u, v)| Edge { u, v })
            .collect();
        let (_, counts) = MemCsr::<u32>::from_records(&recs, 0, 3, false, 2).unwrap();
        assert_eq!(
            counts,
            ListCounts {
                self_loops: 2,
                parallel: 3
            }
        );
        let (_, counts) = MemCsr::<u32>::from_records(&recs, 0, 3, true, 2).unwrap();
        assert_eq!(
            counts,
            ListCounts {
                self_loops: 1,
                parallel: 0
            }
        );
    }
}
