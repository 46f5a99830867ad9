//! A sort-reduce engine, the way GraFBoost (ISCA'18) processes graphs whose
//! vertex data does not fit memory — the design V-Part (FAST'19 §2, §3) is
//! measured against. It runs the same [`EdgeProgram`]s as the external engine.
//!
//! # Design
//! Vertex values live in one scratch file in dense id order (values, then an
//! activity epoch per vertex). An iteration:
//! 1. streams the values, out-degrees and CSR offsets sequentially in chunks; for
//!    each active vertex reads its out-edges from the CSR (adjacent lists less
//!    than 64 KiB apart in one request) and logs one update `(target,
//!    contribution)` per edge;
//! 2. sort-reduce: updates gather in a buffer; a full buffer is sorted by (target,
//!    contribution bits) on the pool's threads, reduced (the program's `combine`
//!    over equal targets) and spilled as a run; at the end the runs are merged
//!    with a heap and reduced again across runs, giving one combined value per
//!    updated target in ascending order (in memory when nothing spilled);
//! 3. applies: the values are streamed again beside the reduced updates, every
//!    vertex applied (`identity` where no update came) and written back.
//!
//! Nothing is ever random-accessed but the CSR lists: all vertex traffic is
//! sequential, paid for with the sort — the trade V-Part's partitions avoid.
//!
//! # Memory
//! `--memory` pays a fixed 8 MiB, chunk buffers (a quarter of the rest, at most
//! 64 MiB), and the update buffer (16 bytes per update) from the remainder; the
//! merge gives each run an equal share of that buffer.

use crate::error::{EngineError, Result};
use crate::external::FIXED_BYTES;
use crate::program::{Aggregates, EdgeProgram, Globals, Sums};
use crate::read_at;
use bytemuck::Zeroable;
use outcore_io::{InFile, IoStats, OutFile, ReadMode, ScratchFile};
use outcore_state::{StateBudget, VertexArray};
use outcore_store::format::{FileKind, LayoutFile};
use outcore_store::pagesums::PageSums;
use outcore_store::Store;
use rayon::prelude::*;
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

const NEVER: u32 = u32::MAX;

#[derive(Debug, Clone)]
pub struct SortReduceConfig {
    pub memory: u64,
    /// 0: one per core.
    pub threads: usize,
    /// Scratch files and sort runs go here (default: the store directory).
    pub work_dir: Option<PathBuf>,
    pub direct_io: bool,
    /// Updates the sort buffer holds (default: what `memory` leaves); small values
    /// force spills and merges (tests).
    pub buffer_updates: Option<usize>,
}

/// What a run did.
#[derive(Debug, Default, Clone, serde::Serialize)]
pub struct SortReduceStats {
    pub iterations: u64,
    pub threads: usize,
    pub updates: u64,
    /// Updates left after reducing (combined values written by the sort).
    pub reduced: u64,
    pub runs: u64,
    pub run_bytes_written: u64,
    pub edges_processed: u64,
    pub bytes_read: u64,
    pub read_requests: u64,
    pub bytes_written: u64,
    pub write_requests: u64,
    /// Reading vertices and edges and logging updates.
    pub scan_seconds: f64,
    /// Sorting, reducing and spilling runs, and merging them.
    pub sort_seconds: f64,
    pub apply_seconds: f64,
    pub buffer_updates: u64,
}

/// The sort-reduce engine over one store's out-CSR.
pub struct SortReduceEngine<'s> {
    store: &'s Store,
    cfg: SortReduceConfig,
    pool: rayon::ThreadPool,
    work_dir: PathBuf,
    stats: SortReduceStats,
}

struct Csr {
    offsets: LayoutFile,
    degrees: LayoutFile,
    targets: LayoutFile,
    weights: Option<LayoutFile>,
    /// Page-group checksums of the targets (and weights): lists are read in
    /// ranges, so every range is widened to whole groups and checked.
    tsums: PageSums,
    wsums: Option<PageSums>,
}

impl<'s> SortReduceEngine<'s> {
    pub fn new(store: &'s Store, cfg: SortReduceConfig) -> Result<SortReduceEngine<'s>> {
        let (pool, threads) = crate::thread_pool(cfg.threads, "sortreduce")?;
        let work_dir = cfg
            .work_dir
            .clone()
            .unwrap_or_else(|| store.dir().to_path_buf());
        Ok(SortReduceEngine {
            store,
            cfg,
            pool,
            work_dir,
            stats: SortReduceStats {
                threads,
                ..Default::default()
            },
        })
    }

    pub fn stats(&self) -> &SortReduceStats {
        &self.stats
    }

    pub fn run<P: EdgeProgram>(&mut self, prog: &P) -> Result<VertexArray<P::Out>> {
        let store = self.store;
        let io0 = store.stats().snapshot();
        let n = store.vertices();
        let mode = if self.cfg.direct_io {
            ReadMode::Direct
        } else {
            ReadMode::Buffered
        };
        let stats = store.stats().clone();
        let open = |name: &str, kind| store.layout_with(name, kind, mode, stats.clone());
        let csr = Csr {
            offsets: open("csr.out.offsets", FileKind::CsrOffsets)?,
            degrees: open("degrees.out", FileKind::Degrees)?,
            targets: open("csr.out.targets", FileKind::CsrTargets)?,
            weights: if store.weighted() && prog.weighted() {
                Some(open("csr.out.weights", FileKind::CsrWeights)?)
            } else {
                None
            },
            tsums: PageSums::load(store, "csr.out.targets")?,
            wsums: if store.weighted() && prog.weighted() {
                Some(PageSums::load(store, "csr.out.weights")?)
            } else {
                None
            },
        };
        let rest = self.cfg.memory.saturating_sub(FIXED_BYTES);
        if rest < 4 << 20 {
            return Err(EngineError::Budget(format!(
                "--memory {} leaves less than 4 MiB beside the {} fixed for the sort-reduce engine",
                outcore_io::format_bytes(self.cfg.memory),
                outcore_io::format_bytes(FIXED_BYTES)
            )));
        }
        let chunk_mem = (rest / 4).min(64 << 20);
        let vsize = std::mem::size_of::<P::V>() as u64;
        // Per vertex in a chunk: value, epoch, degree, offset and its place in the
        // active list; plus the edge window.
        let chunk = (chunk_mem / 2 / (vsize + 24)).max(1024);
        let window = (chunk_mem / 2 / 8).max(1024);
        let cap = self
            .cfg
            .buffer_updates
            .unwrap_or(((rest - chunk_mem) / 16).max(1 << 16) as usize)
            .max(1);
        self.stats.buffer_updates = cap as u64;
        let values = ScratchFile::create(
            &self.work_dir,
            "sortreduce-values",
            n * (vsize + 4),
            stats.clone(),
        )?;
        let eps_base = n * vsize;

        // Initial values.
        let mut sums = Sums::default();
        let mut active = 0u64;
        let mut v0 = 0u64;
        while v0 < n {
            let c = (n - v0).min(chunk);
            let degs: Vec<u32> = read_at(&csr.degrees, 4 * v0, c)?;
            let mut vals = Vec::with_capacity(c as usize);
            let mut eps = Vec::with_capacity(c as usize);
            for (i, &d) in degs.iter().enumerate() {
                let mut one: Aggregates = [0.0; 4];
                let (x, act) = prog.init((v0 + i as u64) as u32, d, &mut one);
                sums.add(&one);
                vals.push(x);
                eps.push(if act { 0 } else { NEVER });
                active += act as u64;
            }
            values.write_pod(v0 * vsize, &vals)?;
            values.write_pod(eps_base + 4 * v0, &eps)?;
            v0 += c;
        }
        let mut g = Globals {
            iteration: 0,
            prev: sums.total(),
        };
        let mut done = 0u64;
        while prog.proceed(done, &g.prev, active) {
            let it = done + 1;
            g.iteration = it;
            // 1. Scan: updates from every active vertex's out-edges.
            let t = Instant::now();
            let mut sr = SortReduce::new(prog, &self.work_dir, cap, stats.clone())?;
            let mut v0 = 0u64;
            let mut ebuf: Vec<u32> = Vec::new();
            let mut wbuf: Vec<f32> = Vec::new();
            let mut bad = None;
            while v0 < n {
                let c = (n - v0).min(chunk);
                let mut eps: Vec<u32> = vec![0; c as usize];
                values.read_pod(eps_base + 4 * v0, &mut eps)?;
                let act: Vec<usize> = (0..c as usize)
                    .filter(|&i| prog.all_active() || eps[i] == (it - 1) as u32)
                    .collect();
                if act.is_empty() {
                    v0 += c;
                    continue;
                }
                let mut vals: Vec<P::V> = vec![P::V::zeroed(); c as usize];
                values.read_pod(v0 * vsize, &mut vals)?;
                let degs: Vec<u32> = read_at(&csr.degrees, 4 * v0, c)?;
                let offs: Vec<u64> = read_at(&csr.offsets, 8 * v0, c + 1)?;
                // Merged ranges of active lists.
                let gap = 16 << 10;
                let mut runs: Vec<(u64, u64, usize, usize)> = Vec::new(); // edges [a, b), act[i..j]
                for (k, &i) in act.iter().enumerate() {
                    let (a, b) = (offs[i], offs[i + 1]);
                    if a == b {
                        continue;
                    }
                    match runs.last_mut() {
                        Some(r) if a <= r.1 + gap && b - r.0 <= window => {
                            r.1 = b;
                            r.3 = k + 1;
                        }
                        _ => runs.push((a, b, k, k + 1)),
                    }
                }
                for &(a, b, ka, kb) in &runs {
                    // One list may exceed the window: read it piece by piece.
                    let mut x = a;
                    while x < b {
                        let y = b.min(x + window);
                        // Whole checksum groups around the lists, checked.
                        let skew = csr
                            .tsums
                            .read_checked(&csr.targets, 4 * x, 4 * y, &mut ebuf)?;
                        if let (Some(wf), Some(ws)) = (&csr.weights, &csr.wsums) {
                            ws.read_checked(wf, 4 * x, 4 * y, &mut wbuf)?;
                        }
                        let (ebuf, wbuf) = (&ebuf[skew..], wbuf.get(skew..).unwrap_or(&[]));
                        for &i in &act[ka..kb] {
                            let (la, lb) = (offs[i].max(x), offs[i + 1].min(y));
                            if la >= lb {
                                continue;
                            }
                            let u = (v0 + i as u64) as u32;
                            let msg = prog.message(&vals[i], degs[i]);
                            for e in la..lb {
                                let tgt = ebuf[(e - x) as usize];
                                let w = if csr.weights.is_some() {
                                    wbuf[(e - x) as usize]
                                } else {
                                    1.0
                                };
                                if tgt as u64 >= n {
                                    return Err(EngineError::Store(
                                        outcore_store::StoreError::Corrupt {
                                            file: store.dir().join("csr.out.targets"),
                                            reason: format!(
                                                "vertex {u} has target {tgt}, the store has {n} vertices"
                                            ),
                                        },
                                    ));
                                }
                                match prog.edge(msg, u, w) {
                                    Some(x) => sr.push(tgt, x, &self.pool)?,
                                    None => {
                                        bad.get_or_insert((u, tgt, w));
                                    }
                                }
                            }
                            self.stats.edges_processed += lb - la;
                        }
                        x = y;
                    }
                }
                if let Some((u, v, w)) = bad {
                    return Err(EngineError::BadEdge {
                        program: prog.name(),
                        u,
                        v,
                        w,
                    });
                }
                v0 += c;
            }
            self.stats.scan_seconds += t.elapsed().as_secs_f64() - sr.seconds;
            self.stats.sort_seconds += sr.seconds;
            // 2. Sort-reduce.
            let t = Instant::now();
            self.stats.updates += sr.pushed;
            let mut merged = sr.finish(&self.pool)?;
            self.stats.runs += merged.runs;
            self.stats.run_bytes_written += merged.run_bytes;
            self.stats.sort_seconds += t.elapsed().as_secs_f64();
            // 3. Apply, vertices in order beside the reduced updates.
            let t = Instant::now();
            let mut sums = Sums::default();
            let mut next_active = 0u64;
            let mut upd = merged.next()?;
            let mut v0 = 0u64;
            while v0 < n {
                let c = (n - v0).min(chunk);
                let mut vals: Vec<P::V> = vec![P::V::zeroed(); c as usize];
                let mut eps: Vec<u32> = vec![0; c as usize];
                values.read_pod(v0 * vsize, &mut vals)?;
                values.read_pod(eps_base + 4 * v0, &mut eps)?;
                let degs: Vec<u32> = read_at(&csr.degrees, 4 * v0, c)?;
                for i in 0..c as usize {
                    let v = (v0 + i as u64) as u32;
                    let mut acc = prog.identity();
                    if let Some((t, x)) = upd {
                        if t == v {
                            acc = x;
                            upd = merged.next()?;
                            self.stats.reduced += 1;
                        }
                    }
                    let mut one: Aggregates = [0.0; 4];
                    if prog.apply(&g, &mut vals[i], acc, degs[i], &mut one) {
                        eps[i] = it as u32;
                        next_active += 1;
                    }
                    sums.add(&one);
                }
                values.write_pod(v0 * vsize, &vals)?;
                values.write_pod(eps_base + 4 * v0, &eps)?;
                v0 += c;
            }
            self.stats.apply_seconds += t.elapsed().as_secs_f64();
            g.prev = sums.total();
            active = next_active;
            done = it;
        }
        self.stats.iterations = done;
        let budget = StateBudget::new(rest, self.work_dir.clone());
        let mut out =
            budget.alloc::<P::Out>(prog.name(), n as usize, bytemuck::Zeroable::zeroed())?;
        let mut v0 = 0u64;
        while v0 < n {
            let c = (n - v0).min(chunk);
            let mut vals: Vec<P::V> = vec![P::V::zeroed(); c as usize];
            values.read_pod(v0 * vsize, &mut vals)?;
            for (i, x) in vals.iter().enumerate() {
                out[v0 as usize + i] = prog.output(x);
            }
            v0 += c;
        }
        let io = store.stats().snapshot().since(&io0);
        self.stats.bytes_read = io.bytes_read;
        self.stats.read_requests = io.read_requests;
        self.stats.bytes_written = io.bytes_written;
        self.stats.write_requests = io.write_requests;
        Ok(out)
    }
}

impl crate::program::ProgramRunner for SortReduceEngine<'_> {
    fn run_program<P: EdgeProgram>(&mut self, prog: &P) -> Result<VertexArray<P::Out>> {
        crate::program::one_way(prog, "sort-reduce")?;
        crate::program::needs_destination(prog, "sort-reduce")?;
        self.run(prog)
    }
    fn iterations(&self) -> u64 {
        self.stats.iterations
    }
}

/// A packed update as spilled: target, contribution.
type Packed = [u32; 3];

/// Sorts, reduces and spills updates; merges the runs at the end.
struct SortReduce<'p, P: EdgeProgram> {
    _registered: outcore_io::temp::Registration,
    prog: &'p P,
    buf: Vec<(u32, u64)>,
    cap: usize,
    path: PathBuf,
    out: Option<OutFile>,
    runs: Vec<(u64, u64)>,
    pos: u64,
    pushed: u64,
    /// Seconds spent sorting and spilling full buffers.
    seconds: f64,
    stats: Arc<IoStats>,
}

impl<'p, P: EdgeProgram> SortReduce<'p, P> {
    fn new(prog: &'p P, dir: &Path, cap: usize, stats: Arc<IoStats>) -> Result<Self> {
        static SEQ: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let path = dir.join(format!(
            ".outcore-sortreduce-{}-{}.runs",
            std::process::id(),
            SEQ.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
        ));
        let registered = outcore_io::temp::register(&path);
        Ok(SortReduce {
            _registered: registered,
            prog,
            // The whole buffer reserved up front: growing by doubling would overshoot
            // the budget (pages are touched only as updates arrive).
            buf: Vec::with_capacity(cap),
            cap,
            path,
            out: None,
            runs: Vec::new(),
            pos: 0,
            pushed: 0,
            seconds: 0.0,
            stats,
        })
    }

    #[inline]
    fn push(&mut self, t: u32, x: u64, pool: &rayon::ThreadPool) -> Result<()> {
        self.buf.push((t, x));
        self.pushed += 1;
        if self.buf.len() >= self.cap {
            self.spill(pool)?;
        }
        Ok(())
    }

    /// Sorts the buffer by (target, contribution) and reduces equal targets.
    fn sort_reduce(&mut self, pool: &rayon::ThreadPool) {
        if self.buf.len() >= 1 << 16 {
            pool.install(|| self.buf.par_sort_unstable());
        } else {
            self.buf.sort_unstable();
        }
        let prog = self.prog;
        let mut w = 0usize;
        for r in 0..self.buf.len() {
            let (t, x) = self.buf[r];
            if w > 0 && self.buf[w - 1].0 == t {
                self.buf[w - 1].1 = prog.combine(self.buf[w - 1].1, x);
            } else {
                self.buf[w] = (t, x);
                w += 1;
            }
        }
        self.buf.truncate(w);
    }

    fn spill(&mut self, pool: &rayon::ThreadPool) -> Result<()> {
        let t = Instant::now();
        self.sort_reduce(pool);
        if self.out.is_none() {
            self.out = Some(OutFile::create(&self.path, self.stats.clone())?);
        }
        let out = self.out.as_mut().expect("open");
        let mut packed: Vec<Packed> = Vec::with_capacity(1 << 16);
        for &(t, x) in &self.buf {
            packed.push([t, x as u32, (x >> 32) as u32]);
            if packed.len() == packed.capacity() {
                out.write_all(bytemuck::cast_slice(&packed))?;
                packed.clear();
            }
        }
        out.write_all(bytemuck::cast_slice(&packed))?;
        self.runs.push((self.pos, self.buf.len() as u64));
        self.pos += self.buf.len() as u64;
        self.buf.clear();
        self.seconds += t.elapsed().as_secs_f64();
        Ok(())
    }

    fn finish(mut self, pool: &rayon::ThreadPool) -> Result<Merged<'p, P>> {
        if self.runs.is_empty() {
            self.sort_reduce(pool);
            let mem = std::mem::take(&mut self.buf);
            return Ok(Merged {
                prog: self.prog,
                mem: Some(mem.into_iter()),
                cursors: Vec::new(),
                heap: BinaryHeap::new(),
                file: None,
                path: None,
                runs: 0,
                run_bytes: 0,
            });
        }
        if !self.buf.is_empty() {
            self.spill(pool)?;
        }
        // The merge's run buffers take the update buffer's place.
        self.buf = Vec::new();
        self.out.take().expect("open").finish()?;
        let file = InFile::open(&self.path, ReadMode::Buffered, self.stats.clone())?;
        let per = (self.cap * 16 / 12 / self.runs.len()).max(1);
        let mut cursors: Vec<Cursor> = self
            .runs
            .iter()
            .map(|&(start, len)| Cursor {
                next: start,
                end: start + len,
                buf: Vec::new(),
                i: 0,
                per,
            })
            .collect();
        let mut heap = BinaryHeap::new();
        for (k, c) in cursors.iter_mut().enumerate() {
            if let Some(p) = c.peek(&file)? {
                heap.push(Reverse((p[0], k)));
            }
        }
        Ok(Merged {
            prog: self.prog,
            mem: None,
            runs: self.runs.len() as u64,
            run_bytes: self.pos * 12,
            cursors,
            heap,
            file: Some(file),
            path: Some(std::mem::take(&mut self.path)),
        })
    }
}

impl<P: EdgeProgram> Drop for SortReduce<'_, P> {
    fn drop(&mut self) {
        if !self.path.as_os_str().is_empty() {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

struct Cursor {
    next: u64,
    end: u64,
    buf: Vec<Packed>,
    i: usize,
    per: usize,
}

impl Cursor {
    fn peek(&mut self, f: &InFile) -> Result<Option<Packed>> {
        if self.i == self.buf.len() {
            if self.next == self.end {
                return Ok(None);
            }
            let k = (self.end - self.next).min(self.per as u64);
            self.buf.resize(k as usize, [0; 3]);
            f.read_exact_at(self.next * 12, bytemuck::cast_slice_mut(&mut self.buf))?;
            self.next += k;
            self.i = 0;
        }
        Ok(Some(self.buf[self.i]))
    }
}

/// The reduced updates in ascending target order.
struct Merged<'p, P: EdgeProgram> {
    prog: &'p P,
    mem: Option<std::vec::IntoIter<(u32, u64)>>,
    cursors: Vec<Cursor>,
    heap: BinaryHeap<Reverse<(u32, usize)>>,
    file: Option<InFile>,
    path: Option<PathBuf>,
    runs: u64,
    run_bytes: u64,
}

impl<P: EdgeProgram> Merged<'_, P> {
    /// The next target and its combined contribution (runs combined in run order).
    fn next(&mut self) -> Result<Option<(u32, u64)>> {
        if let Some(m) = &mut self.mem {
            return Ok(m.next());
        }
        let f = self.file.as_ref().expect("runs");
        let Some(Reverse((t, _))) = self.heap.peek().copied() else {
            return Ok(None);
        };
        // Every run's entry for t (at most one each: runs are reduced), in run order.
        let mut parts: Vec<(usize, u64)> = Vec::new();
        while let Some(&Reverse((t2, k))) = self.heap.peek() {
            if t2 != t {
                break;
            }
            self.heap.pop();
            let c = &mut self.cursors[k];
            let p = c.buf[c.i];
            parts.push((k, p[1] as u64 | (p[2] as u64) << 32));
            c.i += 1;
            if let Some(q) = c.peek(f)? {
                self.heap.push(Reverse((q[0], k)));
            }
        }
        parts.sort_unstable_by_key(|p| p.0);
        let mut acc = parts[0].1;
        for &(_, x) in &parts[1..] {
            acc = self.prog.combine(acc, x);
        }
        Ok(Some((t, acc)))
    }
}

impl<P: EdgeProgram> Drop for Merged<'_, P> {
    fn drop(&mut self) {
        if let Some(p) = &self.path {
            let _ = std::fs::remove_file(p);
        }
    }
}
