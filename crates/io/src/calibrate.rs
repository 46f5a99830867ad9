//! Device calibration: what the storage under a directory can do, measured the way
//! `fio` would, and the [`DeviceProfile`] that records it.
//!
//! DESIGN.md ("Measuring"): the physical limit is the device. Benchmarks report
//! achieved read bandwidth as a fraction of the calibrated sequential bandwidth, and
//! the I/O cost models read the profile: GraphCP's C_s / C_r (graphcp-fcs24.md §3.3,
//! sequential vs random bandwidth) and the vertex-centric engine's page reads
//! (basc-norder-atc19.md §4, random 4-8 KiB reads at queue depth).
//!
//! Method (one test file of `size` bytes in the directory, deleted afterwards, even
//! on error):
//! * sequential write: the file is written front to back with `O_DIRECT` requests of
//!   `seq_request` bytes (4 MiB), then `fdatasync`; bytes / elapsed;
//! * sequential read: `O_DIRECT` reads of `seq_request` bytes front to back, wrapping
//!   around until `duration` has passed (at least one whole pass);
//! * parallel sequential read: `seq_streams` threads (4) each read the next
//!   `seq_request` bytes of one shared cursor, so together they sweep the file front
//!   to back with that many requests in flight, as the jobs engine's loader reads a
//!   row's blocks (at least one whole pass and `duration`);
//! * random read and write, for each request size (4 KiB, 8 KiB) and each queue
//!   depth (1 and `depth`, 16 by default): `depth` threads each keep one synchronous
//!   `O_DIRECT` request in flight at uniformly random aligned offsets (fio's `psync`
//!   engine with `numjobs = depth`) for `duration`; every request's latency is kept,
//!   so the mean, median and 99th percentile are exact.
//!
//! Invariants: every request is aligned to [`ALIGN`] in offset, length and buffer, so
//! `O_DIRECT` never silently degrades; where the filesystem refuses `O_DIRECT`
//! (tmpfs) the run goes through the page cache and the profile says so
//! (`direct: false`) — such numbers are memory speed, not device speed.

use crate::{AlignedBuf, IoError, Result, ALIGN};
use serde::{Deserialize, Serialize};
use std::fs::{File, OpenOptions};
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// Version of the saved profile's JSON layout.
pub const PROFILE_VERSION: u32 = 1;

/// Environment variable naming the profile file to load by default.
pub const PROFILE_ENV: &str = "OUTCORE_DEVICE_PROFILE";

/// What to measure and for how long.
#[derive(Debug, Clone)]
pub struct CalibrateOptions {
    /// Size of the test file (default 1 GiB). Larger than any device cache makes the
    /// sequential numbers honest; the random tests spread over the whole file.
    pub size: u64,
    /// Time spent on each timed test (default 2 s).
    pub duration: Duration,
    /// Request size of the sequential tests (default 4 MiB).
    pub seq_request: usize,
    /// Request sizes of the random tests (default 4 KiB and 8 KiB).
    pub random_blocks: Vec<usize>,
    /// Queue depths of the random tests (default 1 and 16).
    pub depths: Vec<usize>,
    /// Streams of the parallel sequential read test (default 4: the concurrent-jobs
    /// engine's loader reads that many blocks at once); 0 or 1 skips it.
    pub seq_streams: usize,
    /// Seed of the random offsets.
    pub seed: u64,
}

impl Default for CalibrateOptions {
    fn default() -> Self {
        CalibrateOptions {
            size: 1 << 30,
            duration: Duration::from_secs(2),
            seq_request: 4 << 20,
            random_blocks: vec![4096, 8192],
            depths: vec![1, 16],
            seq_streams: 4,
            seed: 0x6f75_7463_6f72_6531,
        }
    }
}

/// One sequential test.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct SeqResult {
    /// Threads reading at once, each taking the next request of one shared
    /// sequential cursor (1 for the single-stream tests; profiles written before
    /// the parallel test existed say nothing and mean 1).
    #[serde(default = "one")]
    pub streams: u64,
    pub request_bytes: u64,
    pub bytes: u64,
    pub seconds: f64,
    pub bytes_per_s: f64,
}

fn one() -> u64 {
    1
}

/// One random test: one operation, request size and queue depth.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct RandomResult {
    /// "read" or "write".
    pub op: String,
    pub block_bytes: u64,
    pub depth: u64,
    pub requests: u64,
    pub seconds: f64,
    pub iops: f64,
    pub bytes_per_s: f64,
    pub lat_mean_us: f64,
    pub lat_p50_us: f64,
    pub lat_p99_us: f64,
}

/// The calibrated profile of the device under a directory.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct DeviceProfile {
    pub version: u32,
    /// The directory measured.
    pub dir: String,
    /// The block device behind it (`name (major:minor)`), when it could be found.
    pub device: String,
    /// Seconds since the Unix epoch when the measurement ended.
    pub measured_at: u64,
    /// False when the filesystem refused O_DIRECT and the page cache was measured.
    pub direct: bool,
    pub file_bytes: u64,
    pub seq_read: SeqResult,
    /// Sequential read by several streams at once (absent in older profiles).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seq_read_parallel: Option<SeqResult>,
    pub seq_write: SeqResult,
    pub random: Vec<RandomResult>,
}

impl DeviceProfile {
    /// Calibrated sequential read bandwidth, bytes per second.
    pub fn seq_read_bw(&self) -> f64 {
        self.seq_read.bytes_per_s
    }
    /// Sequential read bandwidth with `streams` reads in flight: the parallel test's
    /// when at least its streams are asked for (and it was measured), else the
    /// single stream's.
    pub fn seq_read_bw_at(&self, streams: u64) -> f64 {
        match &self.seq_read_parallel {
            Some(p) if streams >= p.streams => p.bytes_per_s,
            _ => self.seq_read.bytes_per_s,
        }
    }
    /// Calibrated sequential write bandwidth, bytes per second.
    pub fn seq_write_bw(&self) -> f64 {
        self.seq_write.bytes_per_s
    }
    /// The random test for `op`, request size and depth, if it was measured.
    pub fn random(&self, op: &str, block: u64, depth: u64) -> Option<&RandomResult> {
        self.random
            .iter()
            .find(|r| r.op == op && r.block_bytes == block && r.depth == depth)
    }
    /// Best random read bandwidth measured for requests of `block` bytes (the cost
    /// models assume reads are issued with depth), falling back to the nearest size.
    pub fn random_read_bw(&self, block: u64) -> Option<f64> {
        self.random_reads_nearest(block)?
            .map(|r| r.bytes_per_s)
            .fold(None, |m: Option<f64>, x| Some(m.map_or(x, |m| m.max(x))))
    }

    /// The random read tests of the measured request size nearest to `block`.
    fn random_reads_nearest(&self, block: u64) -> Option<impl Iterator<Item = &RandomResult>> {
        let reads = self.random.iter().filter(|r| r.op == "read");
        let nearest = reads
            .clone()
            .map(|r| r.block_bytes)
            .min_by_key(|b| b.abs_diff(block))?;
        Some(reads.filter(move |r| r.block_bytes == nearest))
    }

    /// Random read bandwidth for requests of `block` bytes (the nearest measured
    /// size) with `depth` requests in flight: the measured depth's, or between two
    /// measured depths interpolated linearly in log(bandwidth) over log(depth),
    /// clamped to the shallowest and deepest measured.
    pub fn random_read_bw_at(&self, block: u64, depth: u64) -> Option<f64> {
        let mut pts: Vec<(u64, f64)> = self
            .random_reads_nearest(block)?
            .filter(|r| r.depth > 0)
            .map(|r| (r.depth, r.bytes_per_s))
            .collect();
        pts.sort_by_key(|p| p.0);
        let depth = depth.max(1);
        let (first, last) = (*pts.first()?, *pts.last()?);
        if depth <= first.0 {
            return Some(first.1);
        }
        if depth >= last.0 {
            return Some(last.1);
        }
        let i = pts.iter().position(|p| p.0 >= depth)?;
        let ((d0, b0), (d1, b1)) = (pts[i - 1], pts[i]);
        let t = ((depth as f64).ln() - (d0 as f64).ln()) / ((d1 as f64).ln() - (d0 as f64).ln());
        Some((b0.ln() + t * (b1.ln() - b0.ln())).exp())
    }

    /// Writes the profile as pretty JSON through [`crate::ResultFile`] (atomically
    /// for a regular file; a device or FIFO is written in place).
    pub fn save(&self, path: &Path) -> Result<()> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|e| IoError::new(dir, "create directory", e))?;
        }
        let text = serde_json::to_string_pretty(self).expect("profile serializes");
        crate::ResultFile::prepare(path)?.write_all((text + "\n").as_bytes())
    }

    /// Reads a saved profile, refusing other layouts with a clear message.
    pub fn load(path: &Path) -> Result<DeviceProfile> {
        let text = std::fs::read_to_string(path).map_err(|e| IoError::new(path, "read", e))?;
        let bad = |msg: String| {
            IoError::new(
                path,
                "parse device profile",
                std::io::Error::new(std::io::ErrorKind::InvalidData, msg),
            )
        };
        let p: DeviceProfile = serde_json::from_str(&text).map_err(|e| bad(e.to_string()))?;
        if p.version != PROFILE_VERSION {
            return Err(bad(format!(
                "profile version {} but this outcore reads version {PROFILE_VERSION}; run `outcore calibrate --save` again",
                p.version
            )));
        }
        Ok(p)
    }

    /// Where a profile is looked for by default: `$OUTCORE_DEVICE_PROFILE`, else
    /// `$XDG_CONFIG_HOME/outcore/device.json`, else `~/.config/outcore/device.json`.
    pub fn default_path() -> Option<PathBuf> {
        if let Some(p) = std::env::var_os(PROFILE_ENV) {
            return Some(PathBuf::from(p));
        }
        let config = std::env::var_os("XDG_CONFIG_HOME")
            .map(PathBuf::from)
            .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".config")))?;
        Some(config.join("outcore").join("device.json"))
    }

    /// Loads the default profile if one exists (`Ok(None)` when there is none).
    pub fn find() -> Result<Option<DeviceProfile>> {
        match Self::default_path() {
            Some(p) if p.exists() => Self::load(&p).map(Some),
            _ => Ok(None),
        }
    }

    /// The profile at `path` when one is named, else the default one if it exists.
    pub fn load_or_find(path: Option<&Path>) -> Result<Option<DeviceProfile>> {
        match path {
            Some(p) => Self::load(p).map(Some),
            None => Self::find(),
        }
    }

    /// A human-readable table of the profile.
    pub fn describe(&self) -> String {
        let mb = |b: f64| b / 1e6;
        let mut s = format!(
            "device profile of {} ({}){}\n  file {} MiB\n  sequential read   {:>9.1} MB/s  ({} KiB requests)\n  sequential write  {:>9.1} MB/s  ({} KiB requests)\n",
            self.dir,
            self.device,
            if self.direct { ", O_DIRECT" } else { ", THROUGH THE PAGE CACHE (O_DIRECT refused): memory speed, not device speed" },
            self.file_bytes >> 20,
            mb(self.seq_read.bytes_per_s),
            self.seq_read.request_bytes >> 10,
            mb(self.seq_write.bytes_per_s),
            self.seq_write.request_bytes >> 10,
        );
        if let Some(p) = &self.seq_read_parallel {
            s += &format!(
                "  sequential read   {:>9.1} MB/s  ({} KiB requests, {} streams)\n",
                mb(p.bytes_per_s),
                p.request_bytes >> 10,
                p.streams
            );
        }
        for r in &self.random {
            s += &format!(
                "  random {:<5} {:>2} KiB qd{:<3} {:>9.1} MB/s {:>9.0} IOPS  lat mean {:>8.1} us  p50 {:>8.1} us  p99 {:>8.1} us\n",
                r.op,
                r.block_bytes >> 10,
                r.depth,
                mb(r.bytes_per_s),
                r.iops,
                r.lat_mean_us,
                r.lat_p50_us,
                r.lat_p99_us
            );
        }
        s
    }
}

/// Removes the test file however the calibration ends.
struct TestFile {
    path: PathBuf,
}
impl Drop for TestFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

fn open_test(path: &Path, create: bool) -> Result<(File, bool)> {
    let mut o = OpenOptions::new();
    o.read(true).write(true);
    if create {
        o.create_new(true);
    }
    match o.clone().custom_flags(libc::O_DIRECT).open(path) {
        Ok(f) => Ok((f, true)),
        Err(e) if e.raw_os_error() == Some(libc::EINVAL) => o
            .open(path)
            .map(|f| (f, false))
            .map_err(|e| IoError::new(path, "open", e)),
        Err(e) => Err(IoError::new(path, "open", e)),
    }
}

/// The block device holding `dir`, as `name (major:minor)`.
fn device_name(dir: &Path) -> String {
    use std::os::unix::fs::MetadataExt;
    let Ok(meta) = std::fs::metadata(dir) else {
        return "unknown".into();
    };
    let dev = meta.dev();
    let (major, minor) = (libc::major(dev), libc::minor(dev));
    let link = format!("/sys/dev/block/{major}:{minor}");
    let name = std::fs::read_link(&link)
        .ok()
        .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
        .unwrap_or_else(|| "not a block device".into());
    format!("{name} ({major}:{minor})")
}

/// A small, fast generator for offsets (xorshift64*).
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
}

fn fill_pattern(buf: &mut [u8], seed: u64) {
    let mut r = Rng(seed | 1);
    for c in buf.chunks_mut(8) {
        let x = r.next().to_le_bytes();
        c.copy_from_slice(&x[..c.len()]);
    }
}

fn io_err(path: &Path, op: &'static str, e: std::io::Error) -> IoError {
    IoError::new(path, op, e)
}

/// Measures the device under `dir` (see the module documentation for the method).
/// `progress` is told the name of each test as it starts.
pub fn calibrate(
    dir: &Path,
    opts: &CalibrateOptions,
    mut progress: impl FnMut(&str),
) -> Result<DeviceProfile> {
    let invalid = |msg: String| {
        IoError::new(
            dir,
            "calibrate",
            std::io::Error::new(std::io::ErrorKind::InvalidInput, msg),
        )
    };
    let meta = std::fs::metadata(dir).map_err(|e| io_err(dir, "stat", e))?;
    if !meta.is_dir() {
        return Err(invalid("not a directory".into()));
    }
    let max_block = opts.random_blocks.iter().copied().max().unwrap_or(ALIGN);
    if opts.seq_request == 0 || !opts.seq_request.is_multiple_of(ALIGN) {
        return Err(invalid(format!(
            "sequential request size must be a positive multiple of {ALIGN}"
        )));
    }
    if let Some(b) = opts
        .random_blocks
        .iter()
        .find(|&&b| b == 0 || !b.is_multiple_of(ALIGN))
    {
        return Err(invalid(format!(
            "random request size {b} is not a positive multiple of {ALIGN}"
        )));
    }
    if opts.depths.contains(&0) {
        return Err(invalid("queue depth 0".into()));
    }
    let size = opts.size / opts.seq_request as u64 * opts.seq_request as u64;
    if size < (opts.seq_request as u64).max(max_block as u64) {
        return Err(invalid(format!(
            "test file size {} is smaller than one {}-byte request",
            opts.size, opts.seq_request
        )));
    }
    if let Some(free) = crate::free_bytes(dir) {
        if free < size + (64 << 20) {
            return Err(invalid(format!(
                "not enough free space: the test file needs {} MiB but only {} MiB are free (use a smaller --size)",
                size >> 20,
                free >> 20
            )));
        }
    }

    crate::temp::clean_stale(dir);
    let path = dir.join(format!(".outcore-calibrate-{}", std::process::id()));
    let _registered = crate::temp::register(&path);
    let guard = TestFile { path: path.clone() };
    let (file, direct) = open_test(&path, true)?;

    // Sequential write.
    progress("sequential write");
    let mut buf = AlignedBuf::new(opts.seq_request);
    fill_pattern(buf.as_mut_slice(), opts.seed);
    let start = Instant::now();
    let mut off = 0u64;
    while off < size {
        file.write_all_at(buf.as_slice(), off)
            .map_err(|e| io_err(&path, "write", e))?;
        off += opts.seq_request as u64;
    }
    file.sync_data()
        .map_err(|e| io_err(&path, "fdatasync", e))?;
    let secs = start.elapsed().as_secs_f64();
    let seq_write = SeqResult {
        streams: 1,
        request_bytes: opts.seq_request as u64,
        bytes: size,
        seconds: secs,
        bytes_per_s: size as f64 / secs,
    };
    if !direct {
        evict(&file);
    }

    // Sequential read.
    progress("sequential read");
    let start = Instant::now();
    let mut bytes = 0u64;
    let mut off = 0u64;
    loop {
        let n = read_full(&file, buf.as_mut_slice(), off).map_err(|e| io_err(&path, "read", e))?;
        bytes += n as u64;
        off += n as u64;
        if off >= size {
            off = 0;
        }
        if bytes >= size && start.elapsed() >= opts.duration {
            break;
        }
    }
    let secs = start.elapsed().as_secs_f64();
    let seq_read = SeqResult {
        streams: 1,
        request_bytes: opts.seq_request as u64,
        bytes,
        seconds: secs,
        bytes_per_s: bytes as f64 / secs,
    };
    drop(buf);

    // Sequential read by several streams sharing one cursor.
    let seq_read_parallel = if opts.seq_streams > 1 {
        progress(&format!("sequential read, {} streams", opts.seq_streams));
        if !direct {
            evict(&file);
        }
        Some(parallel_read(&file, &path, opts, size)?)
    } else {
        None
    };

    let mut random = Vec::new();
    for op in ["read", "write"] {
        for &block in &opts.random_blocks {
            for &depth in &opts.depths {
                progress(&format!("random {op} {} KiB qd{depth}", block >> 10));
                random.push(random_test(
                    &file, &path, op, block, depth, size, opts, direct,
                )?);
            }
        }
    }
    file.sync_data()
        .map_err(|e| io_err(&path, "fdatasync", e))?;
    drop(file);
    drop(guard);
    Ok(DeviceProfile {
        version: PROFILE_VERSION,
        dir: std::fs::canonicalize(dir)
            .unwrap_or_else(|_| dir.to_path_buf())
            .display()
            .to_string(),
        device: device_name(dir),
        measured_at: std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0),
        direct,
        file_bytes: size,
        seq_read,
        seq_read_parallel,
        seq_write,
        random,
    })
}

/// `opts.seq_streams` threads read `opts.seq_request`-byte requests at the next
/// offset of a shared cursor (wrapping at `size`) until the file was read once and
/// `opts.duration` passed.
fn parallel_read(
    file: &File,
    path: &Path,
    opts: &CalibrateOptions,
    size: u64,
) -> Result<SeqResult> {
    let req = opts.seq_request as u64;
    let cursor = AtomicU64::new(0);
    let start = Instant::now();
    let bytes: std::io::Result<u64> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..opts.seq_streams)
            .map(|_| {
                let cursor = &cursor;
                scope.spawn(move || -> std::io::Result<u64> {
                    let mut buf = AlignedBuf::new(opts.seq_request);
                    let mut bytes = 0u64;
                    loop {
                        let k = cursor.fetch_add(req, Ordering::Relaxed);
                        if k >= size && start.elapsed() >= opts.duration {
                            return Ok(bytes);
                        }
                        bytes += read_full(file, buf.as_mut_slice(), k % size)? as u64;
                    }
                })
            })
            .collect();
        let mut total = 0;
        for h in handles {
            total += h.join().expect("a calibration thread panicked")?;
        }
        Ok(total)
    });
    let bytes = bytes.map_err(|e| io_err(path, "read", e))?;
    let secs = start.elapsed().as_secs_f64();
    Ok(SeqResult {
        streams: opts.seq_streams as u64,
        request_bytes: req,
        bytes,
        seconds: secs,
        bytes_per_s: bytes as f64 / secs,
    })
}

fn evict(file: &File) {
    // SAFETY: plain syscall on a descriptor we own.
    unsafe {
        libc::posix_fadvise(
            std::os::fd::AsRawFd::as_raw_fd(file),
            0,
            0,
            libc::POSIX_FADV_DONTNEED,
        );
    }
}

fn read_full(file: &File, buf: &mut [u8], off: u64) -> std::io::Result<usize> {
    let mut done = 0;
    while done < buf.len() {
        match file.read_at(&mut buf[done..], off + done as u64) {
            Ok(0) => break,
            Ok(n) => done += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(done)
}

#[allow(clippy::too_many_arguments)]
fn random_test(
    file: &File,
    path: &Path,
    op: &str,
    block: usize,
    depth: usize,
    size: u64,
    opts: &CalibrateOptions,
    direct: bool,
) -> Result<RandomResult> {
    let slots = size / block as u64;
    let write = op == "write";
    let start = Instant::now();
    let deadline = start + opts.duration;
    let results: Vec<std::io::Result<Vec<u32>>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..depth)
            .map(|t| {
                s.spawn(move || -> std::io::Result<Vec<u32>> {
                    let mut rng = Rng(opts.seed
                        ^ (t as u64 + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15)
                        ^ block as u64);
                    let mut buf = AlignedBuf::new(block);
                    if write {
                        fill_pattern(buf.as_mut_slice(), rng.next());
                    }
                    let mut lat = Vec::with_capacity(1 << 16);
                    loop {
                        let off = (rng.next() % slots) * block as u64;
                        let t0 = Instant::now();
                        if write {
                            file.write_all_at(buf.as_slice(), off)?;
                        } else {
                            read_full(file, buf.as_mut_slice(), off)?;
                        }
                        let now = Instant::now();
                        lat.push((now - t0).as_nanos().min(u32::MAX as u128) as u32);
                        if now >= deadline {
                            break;
                        }
                    }
                    Ok(lat)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("calibration thread panicked"))
            .collect()
    });
    let secs = start.elapsed().as_secs_f64();
    let mut lat: Vec<u32> = Vec::new();
    for r in results {
        lat.extend(r.map_err(|e| io_err(path, if write { "write" } else { "read" }, e))?);
    }
    if write && !direct {
        file.sync_data().map_err(|e| io_err(path, "fdatasync", e))?;
    }
    lat.sort_unstable();
    let n = lat.len() as u64;
    let pct = |p: f64| lat[((lat.len() - 1) as f64 * p).round() as usize] as f64 / 1e3;
    let mean = lat.iter().map(|&x| x as f64).sum::<f64>() / lat.len() as f64 / 1e3;
    Ok(RandomResult {
        op: op.to_string(),
        block_bytes: block as u64,
        depth: depth as u64,
        requests: n,
        seconds: secs,
        iops: n as f64 / secs,
        bytes_per_s: (n * block as u64) as f64 / secs,
        lat_mean_us: mean,
        lat_p50_us: pct(0.5),
        lat_p99_us: pct(0.99),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn quick() -> CalibrateOptions {
        CalibrateOptions {
            size: 8 << 20,
            duration: Duration::from_millis(50),
            seq_request: 1 << 20,
            random_blocks: vec![4096, 8192],
            depths: vec![1, 4],
            seq_streams: 3,
            seed: 7,
        }
    }

    #[test]
    fn measures_every_test_and_removes_its_file() {
        let dir = tempfile::tempdir().unwrap();
        let mut seen = Vec::new();
        let p = calibrate(dir.path(), &quick(), |s| seen.push(s.to_string())).unwrap();
        assert_eq!(seen.len(), 3 + 2 * 2 * 2);
        assert_eq!(seen[2], "sequential read, 3 streams");
        assert_eq!(p.file_bytes, 8 << 20);
        assert_eq!(p.seq_write.bytes, 8 << 20);
        assert!(p.seq_read.bytes >= 8 << 20, "at least one full pass");
        assert!(p.seq_read_bw() > 0.0 && p.seq_write_bw() > 0.0);
        let par = p.seq_read_parallel.clone().expect("measured");
        assert_eq!((par.streams, par.request_bytes), (3, 1 << 20));
        assert!(
            par.bytes >= 8 << 20 && par.bytes % (1 << 20) == 0,
            "{par:?}"
        );
        assert_eq!(p.seq_read_bw_at(1), p.seq_read_bw());
        assert_eq!(p.seq_read_bw_at(2), p.seq_read_bw());
        assert_eq!(p.seq_read_bw_at(4), par.bytes_per_s);
        assert_eq!(p.random.len(), 8);
        for r in &p.random {
            assert!(r.requests >= r.depth, "{r:?}");
            assert!(r.lat_p50_us <= r.lat_p99_us);
            assert!((r.bytes_per_s - r.iops * r.block_bytes as f64).abs() < 1e-6 * r.bytes_per_s);
        }
        assert!(p.random("read", 8192, 4).is_some());
        assert!(p.random("write", 4096, 1).is_some());
        assert!(p.random("read", 4096, 2).is_none());
        assert_eq!(p.random_read_bw(4096), p.random_read_bw(5000));
        assert_eq!(
            std::fs::read_dir(dir.path()).unwrap().count(),
            0,
            "test file removed"
        );
        // Save and load round trip; a wrong version is refused.
        let f = dir.path().join("sub/device.json");
        p.save(&f).unwrap();
        assert_eq!(DeviceProfile::load(&f).unwrap(), p);
        let text = std::fs::read_to_string(&f)
            .unwrap()
            .replace("\"version\": 1", "\"version\": 99");
        std::fs::write(&f, text).unwrap();
        let e = DeviceProfile::load(&f).unwrap_err().to_string();
        assert!(e.contains("profile version 99"), "{e}");
        assert!(p.describe().contains("sequential read"));
        assert!(p.describe().contains("(1024 KiB requests, 3 streams)"));
        // A profile written before the parallel test loads, with one stream.
        let mut old: serde_json::Value = serde_json::to_value(&p).unwrap();
        old.as_object_mut().unwrap().remove("seq_read_parallel");
        old["seq_read"].as_object_mut().unwrap().remove("streams");
        let old: DeviceProfile = serde_json::from_value(old).unwrap();
        assert_eq!((old.seq_read.streams, &old.seq_read_parallel), (1, &None));
        assert_eq!(old.seq_read_bw_at(4), old.seq_read_bw());
    }

    #[test]
    fn random_read_bandwidth_interpolates_between_measured_depths() {
        let r = |op: &str, block: u64, depth: u64, bw: f64| RandomResult {
            op: op.into(),
            block_bytes: block,
            depth,
            requests: 1,
            seconds: 1.0,
            iops: bw / block as f64,
            bytes_per_s: bw,
            lat_mean_us: 1.0,
            lat_p50_us: 1.0,
            lat_p99_us: 1.0,
        };
        let seq = SeqResult {
            streams: 1,
            request_bytes: 1,
            bytes: 1,
            seconds: 1.0,
            bytes_per_s: 1e9,
        };
        let mut p = DeviceProfile {
            version: PROFILE_VERSION,
            dir: "/x".into(),
            device: "x".into(),
            measured_at: 0,
            direct: true,
            file_bytes: 1,
            seq_read: seq.clone(),
            seq_read_parallel: None,
            seq_write: seq,
            random: vec![
                r("read", 4096, 1, 50e6),
                r("read", 4096, 16, 200e6),
                r("write", 4096, 4, 1e9),
                r("read", 8192, 1, 90e6),
            ],
        };
        let at = |p: &DeviceProfile, b, d| p.random_read_bw_at(b, d).unwrap();
        // Measured depths exactly; clamped outside; geometric in between
        // (depth 4 is halfway between 1 and 16 in log depth: sqrt(50 * 200)).
        assert_eq!(at(&p, 4096, 1), 50e6);
        assert_eq!(at(&p, 4096, 16), 200e6);
        assert_eq!(at(&p, 4096, 0), 50e6);
        assert_eq!(at(&p, 4096, 64), 200e6);
        assert!((at(&p, 4096, 4) - 100e6).abs() < 1.0, "{}", at(&p, 4096, 4));
        assert!(at(&p, 4096, 2) > 50e6 && at(&p, 4096, 2) < 100e6);
        // The nearest measured size; writes never count.
        assert_eq!(at(&p, 8000, 4), 90e6);
        assert_eq!(at(&p, 5000, 4), at(&p, 4096, 4));
        p.random.retain(|x| x.op == "write");
        assert_eq!(p.random_read_bw_at(4096, 4), None);
    }

    #[test]
    fn refuses_bad_options() {
        let dir = tempfile::tempdir().unwrap();
        let mut o = quick();
        o.size = 4096;
        let e = calibrate(dir.path(), &o, |_| {}).unwrap_err().to_string();
        assert!(e.contains("smaller than one"), "{e}");
        let mut o = quick();
        o.random_blocks = vec![1000];
        let e = calibrate(dir.path(), &o, |_| {}).unwrap_err().to_string();
        assert!(e.contains("multiple of 4096"), "{e}");
        let e = calibrate(&dir.path().join("missing"), &quick(), |_| {})
            .unwrap_err()
            .to_string();
        assert!(e.contains("missing"), "{e}");
        let mut o = quick();
        o.size = u64::MAX / 2;
        let e = calibrate(dir.path(), &o, |_| {}).unwrap_err().to_string();
        assert!(e.contains("are free"), "{e}");
    }
}
