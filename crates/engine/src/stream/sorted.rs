//! CLIP's `Sort` and a pass over its result (ATC'17 §4.2): every edge written
//! to a derived layout in a user-defined order by an out-of-core sort, then
//! streamed once, in order, on one thread — for order-dependent one-pass
//! algorithms such as greedy MIS (§5.3.1).

use super::{StreamEngine, StreamStats};
use crate::error::{EngineError, Result};
use outcore_io::ReadMode;
use outcore_store::format::{FileKind, LayoutFile, LayoutWriter};
use outcore_store::sort::{ExternalSorter, Record};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::mpsc::{channel, sync_channel};
use std::time::Instant;

impl StreamEngine<'_> {
    /// Writes a derived layout holding every edge ordered by `key(u, v, w)`
    /// (ascending; CLIP's `Sort`, §4.2), with an out-of-core sort in the work
    /// directory. The layout is deleted when the returned value is dropped.
    ///
    /// ```no_run
    /// # fn f(engine: &mut outcore_engine::StreamEngine) -> outcore_engine::Result<()> {
    /// // Undirected edges by their larger endpoint, for greedy MIS.
    /// let sorted = engine.sort("by-max", |u, v, _w| {
    ///     ((u.max(v) as u64) << 32) | u.min(v) as u64
    /// })?;
    /// engine.exec_sorted(&sorted, |u, v, _w| { let _ = (u, v); })?;
    /// # Ok(()) }
    /// ```
    pub fn sort<K>(&mut self, name: &str, key: K) -> Result<SortedEdges>
    where
        K: Fn(u32, u32, f32) -> u64 + Sync,
    {
        let t = Instant::now();
        let work = self.work_dir.clone();
        outcore_io::temp::clean_stale(&work);
        // Registered before it exists: a signal between its creation and its
        // registration would leave it behind.
        let dir_name = outcore_io::temp::temp_name("sort");
        let registered = outcore_io::temp::register(&work.join(&dir_name));
        let dir = tempfile::Builder::new()
            .prefix(&dir_name)
            .rand_bytes(0)
            .tempdir_in(&work)
            .map_err(|e| outcore_io::IoError::new(&work, "create sort directory", e))?;
        let mem = self.budget.remaining().max(16 << 20) / 2;
        let stats = self.store.stats().clone();
        let mut sorter = ExternalSorter::<Keyed>::new(dir.path().to_path_buf(), mem, stats.clone());
        self.grid.try_for_each_edge(self.weights, |u, v, w| {
            sorter.push(Keyed {
                key: key(u, v, w),
                u,
                v,
                w,
                pad: 0,
            })
        })?;
        let path = dir.path().join(format!("{name}.sorted"));
        let mut out = LayoutWriter::create(&path, FileKind::SortedEdges, stats.clone())?;
        let mut sorted = sorter.finish()?;
        let mut batch = Vec::new();
        let mut bytes = Vec::new();
        let mut count = 0u64;
        let weighted = self.weights;
        loop {
            sorted.next_batch(&mut batch, 1 << 16)?;
            if batch.is_empty() {
                break;
            }
            bytes.clear();
            for e in &batch {
                bytes.extend_from_slice(&e.u.to_le_bytes());
                bytes.extend_from_slice(&e.v.to_le_bytes());
                if weighted {
                    bytes.extend_from_slice(&e.w.to_le_bytes());
                }
            }
            out.append(&bytes)?;
            count += batch.len() as u64;
        }
        drop(sorted);
        let rec = out.finish(count)?;
        let file = LayoutFile::open(
            dir.path(),
            &rec,
            FileKind::SortedEdges,
            ReadMode::Buffered,
            stats,
        )?;
        self.stats.sort_seconds += t.elapsed().as_secs_f64();
        Ok(SortedEdges {
            file,
            edges: count,
            weighted,
            _registered: registered,
            _dir: dir,
        })
    }

    /// Streams a layout from [`StreamEngine::sort`] once, in its order, on the
    /// calling thread, through a loader thread and two buffers; checks its CRC.
    pub fn exec_sorted<F: FnMut(u32, u32, f32)>(
        &mut self,
        s: &SortedEdges,
        mut f: F,
    ) -> Result<()> {
        let rec = if s.weighted { 12usize } else { 8 };
        let chunk_records = (self.stats.ring_slot_bytes as usize / rec).clamp(1 << 12, 1 << 20);
        let total = s.edges;
        let file = &s.file;
        let expect_crc = s.file.header.crc;
        self.stats.iterations += 1;
        self.stats.sorted_passes += 1;
        let mut local = StreamStats::default();
        let read_ns = AtomicU64::new(0);
        std::thread::scope(|sc| -> Result<()> {
            let (full_tx, full_rx) = sync_channel::<Result<Vec<u8>>>(2);
            let (free_tx, free_rx) = channel::<Vec<u8>>();
            for _ in 0..2 {
                let _ = free_tx.send(Vec::new());
            }
            let read_ns = &read_ns;
            sc.spawn(move || {
                let mut at = 0u64;
                while at < total {
                    let Ok(mut buf) = free_rx.recv() else { return };
                    let n = (total - at).min(chunk_records as u64) as usize;
                    buf.resize(n * rec, 0);
                    let t = Instant::now();
                    let res = file.read_payload(at * rec as u64, &mut buf);
                    read_ns.fetch_add(t.elapsed().as_nanos() as u64, Relaxed);
                    at += n as u64;
                    let failed = res.is_err();
                    if full_tx.send(res.map(|_| buf).map_err(Into::into)).is_err() || failed {
                        return;
                    }
                }
            });
            let mut crc = crc32fast::Hasher::new();
            loop {
                let t = Instant::now();
                let Ok(msg) = full_rx.recv() else { break };
                local.io_wait_seconds += t.elapsed().as_secs_f64();
                let buf: Vec<u8> = msg?;
                let t = Instant::now();
                crc.update(&buf);
                for r in buf.chunks_exact(rec) {
                    let u = u32::from_le_bytes(r[0..4].try_into().unwrap());
                    let v = u32::from_le_bytes(r[4..8].try_into().unwrap());
                    let w = if rec == 12 {
                        f32::from_le_bytes(r[8..12].try_into().unwrap())
                    } else {
                        1.0
                    };
                    f(u, v, w);
                }
                local.edges_processed += (buf.len() / rec) as u64;
                local.compute_seconds += t.elapsed().as_secs_f64();
                let _ = free_tx.send(buf);
            }
            if crc.finalize() != expect_crc {
                return Err(EngineError::Invalid(format!(
                    "{}: checksum mismatch while streaming the sorted layout",
                    s.file.file.path().display()
                )));
            }
            Ok(())
        })?;
        local.read_seconds = read_ns.load(Relaxed) as f64 / 1e9;
        self.stats.merge_from(&local);
        Ok(())
    }
}

/// A derived layout from [`StreamEngine::sort`]: every edge, in the key's order.
pub struct SortedEdges {
    file: LayoutFile,
    edges: u64,
    weighted: bool,
    // Dropped in this order: the registration, then the directory.
    _registered: outcore_io::temp::Registration,
    _dir: tempfile::TempDir,
}

impl SortedEdges {
    pub fn edges(&self) -> u64 {
        self.edges
    }
}

/// A sort record: the user's key and the edge.
#[derive(Debug, Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
#[repr(C)]
struct Keyed {
    key: u64,
    u: u32,
    v: u32,
    w: f32,
    pad: u32,
}

impl Record for Keyed {
    const WEIGHTED: bool = true;
    fn new(u: u32, v: u32, w: f32) -> Self {
        Keyed {
            key: 0,
            u,
            v,
            w,
            pad: 0,
        }
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
    fn key(&self) -> u64 {
        self.key
    }
    fn tie(&self) -> u32 {
        // Equal keys: by source, so the order is deterministic.
        self.u
    }
}
