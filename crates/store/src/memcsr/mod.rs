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
use crate::pagesums::SummedWriter;
use crate::reader::BlockEntry;
use crate::sort::Record;
use outcore_io::IoStats;
use rayon::prelude::*;
use std::path::Path;
use std::sync::Arc;

mod grid;
pub(crate) use grid::*;
#[cfg(test)]
mod tests;

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

pub(crate) use outcore_io::huge_zeroed;

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

/// The CSR files of one direction written range by range: each
/// [`CsrFiles::append`] adds the next vertices' offsets, lists and degrees.
pub(crate) struct CsrFiles {
    offsets: LayoutWriter,
    targets: SummedWriter,
    weights: Option<SummedWriter>,
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
        // Read by page by the vertex engine: with page-group checksums.
        let g = |name: &str, kind| {
            SummedWriter::create(
                &store.join(format!("csr.{dir}.{name}")),
                kind,
                stats.clone(),
            )
        };
        Ok(CsrFiles {
            offsets: f("offsets", FileKind::CsrOffsets)?,
            targets: g("targets", FileKind::CsrTargets)?,
            weights: if weighted {
                Some(g("weights", FileKind::CsrWeights)?)
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
        let mut recs = vec![self.offsets.finish(self.vertices + 1)?];
        recs.extend(self.targets.finish(self.edges)?);
        if let Some(w) = self.weights {
            recs.extend(w.finish(self.edges)?);
        }
        recs.push(self.degrees.finish(self.vertices)?);
        Ok(recs)
    }
}
