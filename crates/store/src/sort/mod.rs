//! External merge sort of fixed-size edge records within a memory budget.
//!
//! Design: records are gathered in a buffer of `capacity` records; a full buffer is
//! sorted in parallel (rayon) and spilled as a sorted run to a temporary file. The
//! first spill takes the whole buffer; after it the buffer is halved and each full
//! half is sorted and written on a background thread while the other half fills
//! (double buffering within the same budget). Ingest's sorters only partition
//! runs by source ([`SpillOrder::Source`]: [`partition_by_source`], an in-place
//! radix partition into buckets of at most [`LEAF_RECORDS`], about twice as fast
//! as the comparison sort) and take them back by ranges of sources ([`Runs`]).
//! A source-ordered run is written while its buckets are still being partitioned
//! (a group of buckets written while the next is finished), and a spill nothing
//! else overlaps (the first and the last) is split in one run per thread; a
//! [`SpillOrder::Full`] sorter merges its runs at the end with a
//! binary heap, each run read through a buffer of its share of the budget. When
//! everything fits, no run is written at all and the sorted buffer is streamed
//! from memory. A full sort's order is by [`Record::key`] then [`Record::tie`], so
//! its output (duplicates included) is fully determined by the input multiset,
//! whatever the thread count or run boundaries; a source-ordered range holds
//! exactly the input's records with sources in the range, in no set order.

use crate::error::Result;
use outcore_io::{AlignedBuf, InFile, IoStats, OutFile, ReadMode};
use rayon::prelude::*;
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::path::PathBuf;
use std::sync::Arc;

#[cfg(test)]
mod tests;

/// A fixed-size edge record that the sorter and the layouts handle.
pub trait Record: bytemuck::Pod + Send + Sync {
    const WEIGHTED: bool;
    fn new(u: u32, v: u32, w: f32) -> Self;
    fn u(&self) -> u32;
    fn v(&self) -> u32;
    fn w(&self) -> f32;
    fn key(&self) -> u64 {
        ((self.u() as u64) << 32) | self.v() as u64
    }
    fn tie(&self) -> u32 {
        self.w().to_bits()
    }
    fn reversed(&self) -> Self {
        Self::new(self.v(), self.u(), self.w())
    }
}

/// An unweighted edge: source, target.
#[derive(Debug, Clone, Copy, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
#[repr(C)]
pub struct Edge {
    pub u: u32,
    pub v: u32,
}

/// A weighted edge: source, target, weight.
#[derive(Debug, Clone, Copy, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
#[repr(C)]
pub struct WEdge {
    pub u: u32,
    pub v: u32,
    pub w: f32,
}

impl Record for Edge {
    const WEIGHTED: bool = false;
    fn new(u: u32, v: u32, _w: f32) -> Self {
        Edge { u, v }
    }
    fn u(&self) -> u32 {
        self.u
    }
    fn v(&self) -> u32 {
        self.v
    }
    fn w(&self) -> f32 {
        1.0
    }
    fn tie(&self) -> u32 {
        0
    }
}

impl Record for WEdge {
    const WEIGHTED: bool = true;
    fn new(u: u32, v: u32, w: f32) -> Self {
        WEdge { u, v, w }
    }
    fn u(&self) -> u32 {
        self.u
    }
    fn v(&self) -> u32 {
        self.v
    }
    fn w(&self) -> f32 {
        self.w
    }
}

pub struct ExternalSorter<R: Record> {
    buf: Vec<R>,
    capacity: usize,
    dir: PathBuf,
    /// The runs written so far.
    runs: Vec<Spilled>,
    /// Spills so far (names the runs).
    spills: usize,
    /// Source-ordered spills of at least this many records are written as one
    /// run per thread ([`SPLIT_RECORDS`]; lowered by tests).
    split_records: usize,
    stats: Arc<IoStats>,
    total: u64,
    merge_memory: usize,
    order: SpillOrder,
    /// The run being sorted and written on a background thread, if any: it hands
    /// back its buffer for reuse.
    background: Option<SpillThread<R>>,
    /// Whether the buffer was halved for double buffering (after the first spill).
    halved: bool,
    /// See [`ExternalSorter::set_list_limit`].
    lists: Option<ListLimit>,
}

/// The error a too-long list gives: from the source and its least record count.
pub type ListError = Box<dyn Fn(u32, u64) -> crate::StoreError + Send>;

/// Lower bounds on the records of the sources with more than a leaf's records in
/// a run, summed over the runs so far, and the most one source may have.
struct ListLimit {
    max: u64,
    error: ListError,
    /// Source -> records known so far (a lower bound on its total).
    known: std::collections::HashMap<u32, u64>,
}

impl ListLimit {
    fn note(&mut self, runs: &[Spilled]) -> Result<()> {
        for run in runs {
            // The partition stops splitting a bucket once it holds at most a
            // leaf's records, so a segment with more holds a single source.
            let leaf = leaf_size(run.len) as u64;
            let ends = run.index.iter().skip(1).map(|s| s.1).chain([run.len]);
            for (&(u, a), b) in run.index.iter().zip(ends) {
                if b - a > leaf {
                    let k = self.known.entry(u).or_insert(0);
                    *k += b - a;
                    if *k > self.max {
                        return Err((self.error)(u, *k));
                    }
                }
            }
        }
        Ok(())
    }
}

/// A run being sorted and written: hands back its buffer and the run.
type SpillThread<R> = std::thread::JoinHandle<Result<(Vec<R>, Vec<Spilled>)>>;

/// How a spilled run is ordered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SpillOrder {
    /// By [`Record::key`] then [`Record::tie`]: runs that [`ExternalSorter::finish`]
    /// merges into one fully sorted stream.
    Full,
    /// By source only ([`partition_by_source`], a radix partition): runs for
    /// [`ExternalSorter::into_runs`], taken back by ranges of sources.
    Source,
}

/// A run written to disk, with its source index (source-ordered runs only).
struct Spilled {
    path: PathBuf,
    len: u64,
    index: Segments,
}

/// Sorts `data` in `order` and writes it as runs named `stem-K.bin`: one fully
/// sorted run ([`SpillOrder::Full`]), or ([`SpillOrder::Source`]) one run per
/// piece of a buffer of at least `split` records, the pieces partitioned and
/// written in parallel: the top level of the radix partition is one sequential
/// permutation, so pieces are what keeps every core busy on it (the runs are
/// taken back together anyway).
fn write_run<R: Record>(
    mut data: Vec<R>,
    order: SpillOrder,
    split: usize,
    stem: PathBuf,
    stats: Arc<IoStats>,
) -> Result<(Vec<R>, Vec<Spilled>)> {
    let name = |k: usize| {
        let mut s = stem.clone().into_os_string();
        s.push(format!("-{k}.bin"));
        PathBuf::from(s)
    };
    let runs = match order {
        SpillOrder::Full => {
            sort_records(&mut data);
            let path = name(0);
            let mut out = OutFile::create_direct(&path, stats.clone())?;
            for part in data.chunks(1 << 20) {
                out.write_all(bytemuck::cast_slice(part))?;
            }
            out.finish()?;
            vec![Spilled {
                path,
                len: data.len() as u64,
                index: Vec::new(),
            }]
        }
        SpillOrder::Source => {
            let pieces = if data.len() >= split {
                rayon::current_num_threads().clamp(1, 8)
            } else {
                1
            };
            let size = data.len().div_ceil(pieces).max(1);
            data.par_chunks_mut(size)
                .enumerate()
                .map(|(k, piece)| {
                    let path = name(k);
                    let mut out = OutFile::create_direct(&path, stats.clone())?;
                    let index = write_partitioned(piece, leaf_size(piece.len() as u64), &mut out)?;
                    out.finish()?;
                    Ok(Spilled {
                        path,
                        len: piece.len() as u64,
                        index,
                    })
                })
                .collect::<Result<Vec<Spilled>>>()?
        }
    };
    data.clear();
    Ok((data, runs))
}

/// Source-ordered spills of at least this many records are split into one run
/// per thread.
const SPLIT_RECORDS: usize = 1 << 22;

fn sort_records<R: Record>(v: &mut [R]) {
    if R::WEIGHTED {
        v.par_sort_unstable_by_key(|r| (r.key(), r.tie()));
    } else {
        v.par_sort_unstable_by_key(|r| r.key());
    }
}

/// A run's source index: `(first source, position)` pairs in ascending order;
/// the records at positions `[pos_k, pos_k+1)` (the last up to the run's end) all
/// have sources in `[src_k, src_k+1)`.
pub type Segments = Vec<(u32, u64)>;

/// Orders `v` by source into segments of at most `leaf` records (or of a single
/// source), in place, and returns the segments ([`Segments`]): an MSD radix
/// partition on 8-bit digits of the sources' significant bits (an American flag
/// permutation per level, the next level's buckets in parallel) that stops as soon
/// as a bucket is small enough, leaving it unsorted. For runs taken back by ranges
/// of sources ([`Runs::take_below`]) that is all the order needed: only the one
/// segment straddling a range's end is filtered.
pub fn partition_by_source<R: Record>(v: &mut [R], leaf: usize) -> Segments {
    if v.is_empty() {
        return Vec::new();
    }
    partition_level(v, 0, 0, source_bits(v), leaf.max(1))
}

/// The significant bits of the largest source in `v`.
fn source_bits<R: Record>(v: &[R]) -> u32 {
    let max = v.par_iter().map(|r| r.u()).max().unwrap_or(0);
    32 - max.leading_zeros()
}

/// One level: `v` (at run position `pos`) holds sources `lo .. lo + 2^bits`.
fn partition_level<R: Record>(v: &mut [R], pos: u64, lo: u32, bits: u32, leaf: usize) -> Segments {
    if v.len() <= leaf || bits == 0 {
        return vec![(lo, pos)];
    }
    let (parts, shift) = split_level(v, pos, lo, bits, leaf);
    parts
        .into_par_iter()
        .with_min_len(16)
        .map(|(src, p, b)| partition_level(b, p, src, shift, leaf))
        .collect::<Vec<Segments>>()
        .concat()
}

/// A bucket of one partition level: its first source, its position in the run
/// and its records.
type Part<'a, R> = (u32, u64, &'a mut [R]);

/// One level's permutation of `v` (at run position `pos`, sources `lo .. lo +
/// 2^bits`, `bits` > 0) by its top digit: the non-empty buckets in order, and the
/// bits left below the digit.
///
/// The digit is at most 8 bits wide (the permutation's 256 write heads stay in
/// cache) and no wider than it takes to bring buckets down to about `leaf`
/// records: a bucket of 300 records split 256 ways would give a run index entry
/// (16 bytes) for every record or two, and the index of every run stays in memory
/// until the runs are consumed.
fn split_level<R: Record>(
    v: &mut [R],
    pos: u64,
    lo: u32,
    bits: u32,
    leaf: usize,
) -> (Vec<Part<'_, R>>, u32) {
    let needed = v
        .len()
        .div_ceil(leaf.max(1))
        .next_power_of_two()
        .trailing_zeros();
    let width = bits.min(8).min(needed.max(1));
    let shift = bits - width;
    let buckets = 1usize << width;
    let mask = (buckets - 1) as u32;
    let digit = |r: &R| ((r.u() >> shift) & mask) as usize;
    let mut count = vec![0usize; buckets];
    if v.len() >= 1 << 20 {
        let parts: Vec<Vec<usize>> = v
            .par_chunks(1 << 18)
            .map(|c| {
                let mut h = vec![0usize; buckets];
                for r in c {
                    h[digit(r)] += 1;
                }
                h
            })
            .collect();
        for h in parts {
            for (a, b) in count.iter_mut().zip(h) {
                *a += b;
            }
        }
    } else {
        for r in v.iter() {
            count[digit(r)] += 1;
        }
    }
    let mut head = vec![0usize; buckets];
    let mut end = vec![0usize; buckets];
    let mut at = 0;
    for d in 0..buckets {
        head[d] = at;
        at += count[d];
        end[d] = at;
    }
    // Cycle leader: every misplaced record is swapped straight to its bucket.
    for d in 0..buckets {
        while head[d] < end[d] {
            let mut r = v[head[d]];
            let mut k = digit(&r);
            while k != d {
                std::mem::swap(&mut r, &mut v[head[k]]);
                head[k] += 1;
                k = digit(&r);
            }
            v[head[d]] = r;
            head[d] += 1;
        }
    }
    let mut parts: Vec<Part<'_, R>> = Vec::with_capacity(buckets);
    let mut rest = v;
    let mut p = pos;
    for (d, &c) in count.iter().enumerate() {
        let (b, r) = rest.split_at_mut(c);
        if c > 0 {
            parts.push((lo + ((d as u32) << shift), p, b));
        }
        p += c as u64;
        rest = r;
    }
    (parts, shift)
}

/// Partitions `v` by source ([`partition_by_source`]) and writes it to `out` in
/// that order, the writing overlapped with the partition: after the top level,
/// groups of buckets (about a sixteenth of the records each) are finished in
/// parallel while the group before is written on a thread of its own.
fn write_partitioned<R: Record>(v: &mut [R], leaf: usize, out: &mut OutFile) -> Result<Segments> {
    let leaf = leaf.max(1);
    let bits = source_bits(v);
    if v.len() <= leaf || bits == 0 {
        out.write_all(bytemuck::cast_slice(v))?;
        return Ok(if v.is_empty() {
            Vec::new()
        } else {
            vec![(0, 0)]
        });
    }
    let total = v.len();
    let (parts, shift) = split_level(v, 0, 0, bits, leaf);
    let mut groups: Vec<Vec<Part<'_, R>>> = Vec::new();
    let mut size = 0;
    for part in parts {
        size += part.2.len();
        match groups.last_mut() {
            Some(g) if size <= total / 16 => g.push(part),
            _ => {
                size = part.2.len();
                groups.push(vec![part]);
            }
        }
    }
    let mut segments = Vec::new();
    // Finished buckets not yet written.
    let mut pending: Vec<&mut [R]> = Vec::new();
    let mut groups = groups.into_iter();
    loop {
        let group = groups.next();
        if group.is_none() && pending.is_empty() {
            return Ok(segments);
        }
        let (out, ready) = (&mut *out, &pending);
        let (written, done) = std::thread::scope(|s| {
            let write = s.spawn(move || -> Result<()> {
                for b in ready {
                    out.write_all(bytemuck::cast_slice(b))?;
                }
                Ok(())
            });
            let done: Option<Vec<(Segments, &mut [R])>> = group.map(|g| {
                g.into_par_iter()
                    .map(|(src, p, b)| (partition_level(b, p, src, shift, leaf), b))
                    .collect()
            });
            (crate::join_scoped(write), done)
        });
        written?;
        pending.clear();
        for (segs, b) in done.into_iter().flatten() {
            segments.extend(segs);
            pending.push(b);
        }
    }
}

impl<R: Record> ExternalSorter<R> {
    /// A sorter using about `memory` bytes, spilling runs fully sorted into `dir`.
    pub fn new(dir: PathBuf, memory: u64, stats: Arc<IoStats>) -> ExternalSorter<R> {
        Self::with_order(dir, memory, stats, SpillOrder::Full)
    }

    /// A sorter whose runs are ordered by source only, for [`Self::into_runs`].
    pub fn by_source(dir: PathBuf, memory: u64, stats: Arc<IoStats>) -> ExternalSorter<R> {
        Self::with_order(dir, memory, stats, SpillOrder::Source)
    }

    fn with_order(
        dir: PathBuf,
        memory: u64,
        stats: Arc<IoStats>,
        order: SpillOrder,
    ) -> ExternalSorter<R> {
        let capacity = ((memory as usize) / std::mem::size_of::<R>()).max(1024);
        ExternalSorter {
            buf: Vec::new(),
            capacity,
            dir,
            runs: Vec::new(),
            spills: 0,
            split_records: SPLIT_RECORDS,
            stats,
            total: 0,
            merge_memory: memory as usize,
            order,
            background: None,
            halved: false,
            lists: None,
        }
    }

    /// Fails the sort as soon as one source is known to have more than `max`
    /// records (source-ordered runs only): each run's index gives the exact count
    /// of every source with more than a leaf's records in it ([`leaf_size`], at
    /// most 4096), and these add up over the runs to a lower bound, so a list that
    /// cannot be built later is reported while the input is still being read
    /// rather than after the sort (never wrongly: the bound never exceeds the
    /// truth). A list spread so thinly that no run holds a leaf of it is found
    /// when the lists are built, as before.
    pub fn set_list_limit(&mut self, max: u64, error: ListError) {
        self.lists = Some(ListLimit {
            max,
            error,
            known: Default::default(),
        });
    }

    fn add_runs(&mut self, runs: Vec<Spilled>) -> Result<()> {
        if let Some(l) = &mut self.lists {
            l.note(&runs)?;
        }
        self.runs.extend(runs);
        Ok(())
    }

    /// Caps the in-memory buffer at `records` (at least 1).
    pub fn set_capacity(&mut self, records: usize) {
        self.capacity = records.max(1);
    }

    /// Lowers the buffer to at most `memory` bytes (never raises it): for memory
    /// taken by something else before records arrive.
    pub fn limit_memory(&mut self, memory: u64) {
        let cap = ((memory as usize) / std::mem::size_of::<R>()).max(1024);
        self.capacity = self.capacity.min(cap);
        self.merge_memory = self.merge_memory.min(memory as usize);
    }

    pub fn len(&self) -> u64 {
        self.total
    }
    pub fn is_empty(&self) -> bool {
        self.total == 0
    }
    /// Runs spilled so far (a spill still being written counts as one).
    pub fn runs(&self) -> usize {
        self.runs.len() + self.background.is_some() as usize
    }

    pub fn push(&mut self, r: R) -> Result<()> {
        if self.buf.len() == self.capacity {
            self.spill(true)?;
        }
        if self.buf.len() == self.buf.capacity() {
            self.grow();
        }
        self.buf.push(r);
        self.total += 1;
        Ok(())
    }

    /// Pushes every record of `rs` (as [`Self::push`] does one by one).
    pub fn push_slice(&mut self, mut rs: &[R]) -> Result<()> {
        while !rs.is_empty() {
            if self.buf.len() == self.capacity {
                self.spill(true)?;
            }
            if self.buf.len() == self.buf.capacity() {
                self.grow();
            }
            let k = (self.buf.capacity() - self.buf.len()).min(rs.len());
            self.buf.extend_from_slice(&rs[..k]);
            self.total += k as u64;
            rs = &rs[k..];
        }
        Ok(())
    }

    /// Grows the buffer to its capacity at once (a doubling `Vec` would
    /// overshoot the budget by up to its size, and growing by steps copies
    /// what is there into fresh pages at every step); pages are only touched
    /// as records arrive.
    fn grow(&mut self) {
        let len = self.buf.len();
        self.buf.reserve_exact((self.capacity - len).max(1));
    }

    /// Waits for the background run, records it and returns its buffer.
    fn join(&mut self) -> Result<Option<Vec<R>>> {
        let Some(h) = self.background.take() else {
            return Ok(None);
        };
        let (buf, runs) = match h.join() {
            Ok(r) => r?,
            Err(panic) => std::panic::resume_unwind(panic),
        };
        self.add_runs(runs)?;
        Ok(Some(buf))
    }

    /// Spills the buffer as a run (split in pieces on every thread when nothing
    /// else runs: the first spill and the last). The first spill happens in place
    /// with the whole buffer; after it the buffer is halved and (with `background`) each full half
    /// is sorted and written on a thread while the other half fills, so the spill
    /// overlaps the input's parsing and never holds more than the budget.
    fn spill(&mut self, background: bool) -> Result<()> {
        if self.buf.is_empty() {
            return Ok(());
        }
        let recycled = self.join()?;
        let path = self.dir.join(format!("run-{:05}", self.spills));
        self.spills += 1;
        let data = std::mem::take(&mut self.buf);
        let (order, stats, split) = (self.order, self.stats.clone(), self.split_records);
        if background && self.halved {
            let h = std::thread::Builder::new()
                .name("outcore-spill".into())
                // A background spill runs beside the input's reading, which must
                // keep its core: one piece.
                .spawn(move || write_run(data, order, usize::MAX, path, stats))
                .map_err(|e| outcore_io::IoError::new(&self.dir, "start a spill thread", e))?;
            self.background = Some(h);
            self.buf = recycled.unwrap_or_default();
            return Ok(());
        }
        let (mut data, runs) = write_run(data, order, split, path, stats)?;
        self.add_runs(runs)?;
        if !self.halved {
            // The first half of the buffer (its pages touched already) is the
            // next one to fill.
            self.halved = true;
            self.capacity = (self.capacity / 2).max(1);
            data.clear();
            data.shrink_to(self.capacity);
        }
        self.buf = data;
        Ok(())
    }

    /// Ends input when nothing was spilled: the records, unsorted, in arrival order
    /// (the sorter is left empty); `None` when runs exist.
    pub fn take_memory(&mut self) -> Option<Vec<R>> {
        if self.runs.is_empty() && self.background.is_none() {
            self.total = 0;
            Some(std::mem::take(&mut self.buf))
        } else {
            None
        }
    }

    /// Ends input by spilling what is left: the runs, to be taken in ranges of
    /// sources ([`Runs::take_below`]). Only for a [`SpillOrder::Source`] sorter.
    pub fn into_runs(mut self) -> Result<Runs<R>> {
        assert_eq!(
            self.order,
            SpillOrder::Source,
            "runs by ranges need their index"
        );
        self.spill(false)?;
        self.join()?;
        self.buf = Vec::new();
        let spilled = std::mem::take(&mut self.runs);
        let paths = spilled.iter().map(|r| r.path.clone()).collect();
        let mut runs = Vec::with_capacity(spilled.len());
        for r in spilled {
            runs.push(RunCursor {
                file: InFile::open(&r.path, ReadMode::Direct, self.stats.clone())?,
                len: r.len,
                next: 0,
                index: r.index,
                pending: Vec::new(),
            });
        }
        Ok(Runs {
            runs,
            paths,
            stage: AlignedBuf::default(),
        })
    }

    /// Ends input; returns the records in sorted order.
    pub fn finish(mut self) -> Result<Sorted<R>> {
        assert_eq!(
            self.order,
            SpillOrder::Full,
            "finish merges fully sorted runs"
        );
        self.join()?;
        if self.runs.is_empty() {
            sort_records(&mut self.buf);
            return Ok(Sorted {
                inner: SortedInner::Memory {
                    buf: std::mem::take(&mut self.buf),
                    pos: 0,
                },
            });
        }
        self.spill(false)?;
        self.buf = Vec::new();
        let per_run = (self.merge_memory / 2 / self.runs.len()).clamp(64 << 10, 16 << 20);
        let per_run_records = (per_run / std::mem::size_of::<R>()).max(1);
        let mut readers: Vec<RunReader<R>> = Vec::with_capacity(self.runs.len());
        for r in &self.runs {
            readers.push(RunReader {
                file: InFile::open(&r.path, ReadMode::Buffered, self.stats.clone())?,
                len: r.len,
                next: 0,
                buf: Vec::with_capacity(per_run_records),
                pos: 0,
                chunk: per_run_records,
            });
        }
        let mut heap = BinaryHeap::with_capacity(readers.len());
        for (k, r) in readers.iter_mut().enumerate() {
            if let Some(rec) = r.peek()? {
                heap.push(Reverse((rec.key(), rec.tie(), k)));
            }
        }
        Ok(Sorted {
            inner: SortedInner::Merge {
                readers,
                heap,
                paths: std::mem::take(&mut self.runs)
                    .into_iter()
                    .map(|r| r.path)
                    .collect(),
            },
        })
    }
}

impl<R: Record> Drop for ExternalSorter<R> {
    /// A run still being written is waited for (its file is the caller's to
    /// remove, with the spill directory).
    fn drop(&mut self) {
        if let Some(h) = self.background.take() {
            let _ = h.join();
        }
    }
}

/// The largest segment (in records) of a run's source index.
pub const LEAF_RECORDS: usize = 4096;

/// The largest unsorted segment of a run of `len` records: [`LEAF_RECORDS`], or
/// finer for short runs (at least 64), so that the bounds on a range's records
/// stay within about a 256th of the run while the run's index (16 bytes a
/// segment, held until the run is consumed) stays near 256 entries.
pub fn leaf_size(len: u64) -> usize {
    ((len / 256) as usize).clamp(64, LEAF_RECORDS)
}

/// One run being consumed in ascending source ranges.
struct RunCursor<R: Record> {
    file: InFile,
    len: u64,
    /// Next record of the file not yet read.
    next: u64,
    index: Segments,
    /// Records read but not yet taken: all at or above the last range's end and
    /// below the next segment's first source, in no order.
    pending: Vec<R>,
}

impl<R: Record> RunCursor<R> {
    /// End (exclusive, a record position) of the part of the file that may hold
    /// sources below `hi`: records from there on have sources >= `hi`.
    fn bound(&self, hi: u64) -> u64 {
        let k = self.index.partition_point(|&(u, _)| (u as u64) < hi);
        self.index.get(k).map_or(self.len, |s| s.1)
    }

    /// Start (a record position) of the last segment whose first source passes
    /// `first`, or 0: with `first = (< hi)` the segment holding the last records
    /// below `hi`, records before it all below `hi`; with `first = (<= lo)` the
    /// records before it are all surely below `lo`.
    fn last_start(&self, first: impl Fn(u64) -> bool) -> u64 {
        let k = self.index.partition_point(|&(u, _)| first(u as u64));
        k.checked_sub(1).map_or(0, |k| self.index[k].1)
    }

    fn pending_below(&self, x: u64) -> u64 {
        self.pending.iter().filter(|r| (r.u() as u64) < x).count() as u64
    }
}

/// Sorted runs consumed range by range: [`Runs::take_below`] hands out, from every
/// run, the records with sources below a bound, in run order (each run's part
/// sorted). The run files are removed on drop.
pub struct Runs<R: Record> {
    runs: Vec<RunCursor<R>>,
    paths: Vec<PathBuf>,
    /// Aligned staging buffer for the runs' O_DIRECT reads.
    stage: AlignedBuf,
}

impl<R: Record> Runs<R> {
    pub fn count(&self) -> usize {
        self.runs.len()
    }

    /// An upper bound on the records with sources below `hi` not yet taken (exact
    /// to within one segment, [`leaf_size`] records, per run).
    pub fn bound_below(&self, hi: u64) -> u64 {
        self.runs
            .iter()
            .map(|r| r.pending_below(hi) + r.bound(hi).saturating_sub(r.next))
            .sum()
    }

    /// A lower bound on the records with sources below `lo` not yet taken (exact
    /// to within one segment per run): with [`Self::bound_below`], a bound on the
    /// records of any range of sources.
    pub fn lower_below(&self, lo: u64) -> u64 {
        self.runs
            .iter()
            .map(|r| r.pending_below(lo) + r.last_start(|u| u <= lo).saturating_sub(r.next))
            .sum()
    }

    /// Appends to `out` every record not yet taken whose source is below `hi`
    /// (from each run in no particular order).
    pub fn take_below(&mut self, hi: u64, out: &mut Vec<R>) -> Result<()> {
        let size = std::mem::size_of::<R>() as u64;
        let below = |x: &R| (x.u() as u64) < hi;
        for r in &mut self.runs {
            let keep = partition_in_place(&mut r.pending, |x| !below(x));
            out.extend_from_slice(&r.pending[keep..]);
            r.pending.truncate(keep);
            if !r.pending.is_empty() {
                // A pending record at or above `hi` is below every later segment.
                continue;
            }
            let end = r.bound(hi);
            if end <= r.next {
                continue;
            }
            let k = (end - r.next) as usize;
            let at = out.len();
            out.resize(at + k, R::zeroed());
            // O_DIRECT in 16 MiB requests through a staging buffer: no page-cache
            // copy and no page-cache memory under the ingest's limit.
            let dst: &mut [u8] = bytemuck::cast_slice_mut(&mut out[at..]);
            let mut done = 0usize;
            while done < dst.len() {
                let len = (dst.len() - done).min(16 << 20);
                let skip =
                    r.file
                        .read_exact_into(r.next * size + done as u64, len, &mut self.stage)?;
                dst[done..done + len].copy_from_slice(&self.stage.as_slice()[skip..skip + len]);
                done += len;
            }
            // Only the last segment read may run past `hi`: keep that part for later.
            let from = at + (r.last_start(|u| u < hi).max(r.next) - r.next) as usize;
            r.next = end;
            let cut = from + partition_in_place(&mut out[from..], below);
            r.pending.extend_from_slice(&out[cut..]);
            out.truncate(cut);
        }
        Ok(())
    }
}

/// Moves the elements satisfying `first` to the front (in no set order) and
/// returns how many there are.
fn partition_in_place<T: Copy>(v: &mut [T], first: impl Fn(&T) -> bool) -> usize {
    let mut k = 0;
    for i in 0..v.len() {
        if first(&v[i]) {
            v.swap(i, k);
            k += 1;
        }
    }
    k
}

impl<R: Record> Drop for Runs<R> {
    fn drop(&mut self) {
        for p in &self.paths {
            let _ = std::fs::remove_file(p);
        }
    }
}

struct RunReader<R: Record> {
    file: InFile,
    len: u64,
    next: u64,
    buf: Vec<R>,
    pos: usize,
    chunk: usize,
}

impl<R: Record> RunReader<R> {
    fn peek(&mut self) -> Result<Option<R>> {
        if self.pos == self.buf.len() {
            if self.next == self.len {
                return Ok(None);
            }
            let n = (self.len - self.next).min(self.chunk as u64) as usize;
            self.buf.resize(n, R::zeroed());
            let size = std::mem::size_of::<R>() as u64;
            self.file
                .read_exact_at(self.next * size, bytemuck::cast_slice_mut(&mut self.buf))?;
            self.next += n as u64;
            self.pos = 0;
        }
        Ok(Some(self.buf[self.pos]))
    }
}

enum SortedInner<R: Record> {
    Memory {
        buf: Vec<R>,
        pos: usize,
    },
    Merge {
        readers: Vec<RunReader<R>>,
        heap: BinaryHeap<Reverse<(u64, u32, usize)>>,
        paths: Vec<PathBuf>,
    },
}

/// The sorted output of an [`ExternalSorter`].
pub struct Sorted<R: Record> {
    inner: SortedInner<R>,
}

impl<R: Record> Sorted<R> {
    /// Fills `out` (cleared first) with up to `max` next records; empty at the end.
    pub fn next_batch(&mut self, out: &mut Vec<R>, max: usize) -> Result<()> {
        out.clear();
        match &mut self.inner {
            SortedInner::Memory { buf, pos } => {
                let n = (buf.len() - *pos).min(max);
                out.extend_from_slice(&buf[*pos..*pos + n]);
                *pos += n;
                if *pos == buf.len() {
                    *buf = Vec::new();
                    *pos = 0;
                }
            }
            SortedInner::Merge { readers, heap, .. } => {
                while out.len() < max {
                    let Some(Reverse((_, _, k))) = heap.pop() else {
                        break;
                    };
                    let r = &mut readers[k];
                    let rec = r.buf[r.pos];
                    r.pos += 1;
                    out.push(rec);
                    // Take the run's following records while they stay below the
                    // heap's minimum: sorted runs often continue for a while.
                    let bound = heap.peek().map(|Reverse((key, tie, _))| (*key, *tie));
                    while let Some(next) = r.peek()? {
                        let nk = (next.key(), next.tie());
                        if out.len() < max && bound.is_none_or(|b| nk <= b) {
                            r.pos += 1;
                            out.push(next);
                        } else {
                            heap.push(Reverse((nk.0, nk.1, k)));
                            break;
                        }
                    }
                }
            }
        }
        Ok(())
    }
}

impl<R: Record> Drop for Sorted<R> {
    fn drop(&mut self) {
        if let SortedInner::Merge { paths, .. } = &self.inner {
            for p in paths {
                let _ = std::fs::remove_file(p);
            }
        }
    }
}
