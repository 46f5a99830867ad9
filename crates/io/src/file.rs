//! Files: [`InFile`] (buffered, O_DIRECT or mmap reads) and [`OutFile`] (counted,
//! buffered sequential writes plus positioned rewrites, with fault injection).

use crate::{fault, IoError, IoStats, Result};
use std::alloc::{alloc_zeroed, dealloc, Layout};
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Alignment of O_DIRECT buffers, offsets and lengths.
pub const ALIGN: usize = 4096;

/// How an [`InFile`] reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ReadMode {
    /// `pread` through the page cache.
    #[default]
    Buffered,
    /// `O_DIRECT` `pread` into aligned buffers, bypassing the page cache. Falls back
    /// to buffered reads on filesystems that refuse `O_DIRECT` (tmpfs), see
    /// [`InFile::is_direct`].
    Direct,
    /// A read-only shared memory map.
    Mmap,
}

impl std::str::FromStr for ReadMode {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        match s {
            "buffered" => Ok(ReadMode::Buffered),
            "direct" => Ok(ReadMode::Direct),
            "mmap" => Ok(ReadMode::Mmap),
            _ => Err(format!(
                "unknown read mode {s:?} (buffered, direct or mmap)"
            )),
        }
    }
}

/// A heap buffer aligned to [`ALIGN`], as O_DIRECT requires.
pub struct AlignedBuf {
    ptr: *mut u8,
    cap: usize,
}

// SAFETY: AlignedBuf owns its allocation exclusively, like a Vec<u8>.
unsafe impl Send for AlignedBuf {}
// SAFETY: shared access only hands out `&[u8]`, like a Vec<u8>.
unsafe impl Sync for AlignedBuf {}

impl AlignedBuf {
    /// A zeroed buffer of at least `len` bytes, rounded up to a multiple of [`ALIGN`].
    pub fn new(len: usize) -> AlignedBuf {
        let cap = len.div_ceil(ALIGN).max(1) * ALIGN;
        let layout = Layout::from_size_align(cap, ALIGN).expect("aligned layout");
        // SAFETY: the layout has a non-zero size.
        let ptr = unsafe { alloc_zeroed(layout) };
        if ptr.is_null() {
            std::alloc::handle_alloc_error(layout);
        }
        AlignedBuf { ptr, cap }
    }
    pub fn capacity(&self) -> usize {
        self.cap
    }
    pub fn as_slice(&self) -> &[u8] {
        // SAFETY: ptr is valid for cap initialised (zeroed) bytes for our lifetime.
        unsafe { std::slice::from_raw_parts(self.ptr, self.cap) }
    }
    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: as above, and &mut self guarantees exclusive access.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.cap) }
    }
}

impl Default for AlignedBuf {
    /// One aligned page.
    fn default() -> AlignedBuf {
        AlignedBuf::new(0)
    }
}

impl std::fmt::Debug for AlignedBuf {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "AlignedBuf({} bytes)", self.cap)
    }
}

impl Drop for AlignedBuf {
    fn drop(&mut self) {
        let layout = Layout::from_size_align(self.cap, ALIGN).expect("aligned layout");
        // SAFETY: ptr was allocated in `new` with exactly this layout.
        unsafe { dealloc(self.ptr, layout) }
    }
}

/// Reads a file front to back in aligned blocks through [`InFile::read_direct`]
/// and serves them to any [`std::io::Read`] caller: with an [`InFile`] opened
/// [`ReadMode::Direct`] the disk DMAs straight into the block, so a long
/// sequential input costs neither the kernel's page-cache copy nor page-cache
/// memory (which counts against a memory cgroup's limit). A thread reads ahead
/// ([`READ_AHEAD`] blocks in flight or ready), so the device stays busy while
/// the caller works on the block before, even when the caller's core is
/// contended. Bytes and requests are counted by the file's [`IoStats`].
pub struct SeqReader {
    /// Blocks read, in file order, with their valid length (0 at the end).
    full: Option<std::sync::mpsc::Receiver<std::io::Result<(AlignedBuf, usize)>>>,
    /// Blocks handed back for the thread to fill.
    free: Option<std::sync::mpsc::Sender<AlignedBuf>>,
    thread: Option<std::thread::JoinHandle<()>>,
    /// The block being served, and its valid length.
    cur: Option<(AlignedBuf, usize)>,
    at: usize,
    done: bool,
    /// The read error that ended the input, reported again on every later call.
    failed: Option<(std::io::ErrorKind, String)>,
}

/// Blocks a [`SeqReader`] keeps: one being served, the rest being read or ready.
pub const READ_AHEAD: usize = 3;

impl SeqReader {
    /// A reader of `file` from its start, `block` bytes (rounded up to [`ALIGN`])
    /// per request.
    pub fn new(file: InFile, block: usize) -> SeqReader {
        let (full_tx, full) = std::sync::mpsc::channel();
        let (free, free_rx) = std::sync::mpsc::channel::<AlignedBuf>();
        for _ in 0..READ_AHEAD {
            // Cannot fail: the receiver is alive.
            let _ = free.send(AlignedBuf::new(block.max(ALIGN)));
        }
        let thread = std::thread::Builder::new()
            .name("outcore-read".into())
            .spawn(move || {
                let mut pos = 0u64;
                // Ends at the file's end, on an error, or when the reader is dropped
                // (either channel closed).
                while let Ok(mut buf) = free_rx.recv() {
                    let left = file.len().saturating_sub(pos).div_ceil(ALIGN as u64) * ALIGN as u64;
                    let want = (buf.capacity() as u64).min(left) as usize;
                    let got = if want == 0 {
                        Ok(0)
                    } else {
                        file.read_direct(pos, &mut buf.as_mut_slice()[..want])
                            .map_err(std::io::Error::other)
                    };
                    let end = !matches!(got, Ok(n) if n > 0);
                    if let Ok(n) = got {
                        pos += n as u64;
                    }
                    if full_tx.send(got.map(|n| (buf, n))).is_err() || end {
                        break;
                    }
                }
            });
        let (full, free, thread) = match thread {
            Ok(t) => (full, Some(free), Some(t)),
            // No thread to be had: an already failed reader, reporting why.
            Err(e) => {
                let (tx, full) = std::sync::mpsc::channel();
                let _ = tx.send(Err(e));
                (full, None, None)
            }
        };
        SeqReader {
            full: Some(full),
            free,
            thread,
            cur: None,
            at: 0,
            done: false,
            failed: None,
        }
    }
}

impl std::io::Read for SeqReader {
    fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
        if out.is_empty() {
            return Ok(0);
        }
        loop {
            if let Some((buf, len)) = &self.cur {
                if self.at < *len {
                    let n = out.len().min(len - self.at);
                    out[..n].copy_from_slice(&buf.as_slice()[self.at..self.at + n]);
                    self.at += n;
                    return Ok(n);
                }
            }
            if let Some((kind, msg)) = &self.failed {
                return Err(std::io::Error::new(*kind, msg.clone()));
            }
            if self.done {
                return Ok(0);
            }
            // The block served is spent: back to the thread, and the next one.
            if let (Some((buf, _)), Some(free)) = (self.cur.take(), &self.free) {
                let _ = free.send(buf);
            }
            let next = self.full.as_ref().and_then(|rx| rx.recv().ok());
            match next {
                Some(Ok((buf, n))) => {
                    if n == 0 {
                        self.done = true;
                    }
                    self.cur = Some((buf, n));
                    self.at = 0;
                }
                Some(Err(e)) => {
                    self.failed = Some((e.kind(), e.to_string()));
                    return Err(e);
                }
                None => {
                    self.done = true;
                    return Ok(0);
                }
            }
        }
    }
}

impl Drop for SeqReader {
    fn drop(&mut self) {
        // Closing both channels stops the thread at its next block.
        self.free = None;
        self.full = None;
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// A store file opened for reading through one of the [`ReadMode`] backends.
pub struct InFile {
    path: PathBuf,
    file: File,
    len: u64,
    mode: ReadMode,
    direct: bool,
    map: Option<memmap2::Mmap>,
    stats: Arc<IoStats>,
}

impl InFile {
    pub fn open(path: &Path, mode: ReadMode, stats: Arc<IoStats>) -> Result<InFile> {
        let err = |e| IoError::new(path, "open", e);
        let mut direct = false;
        let file = if mode == ReadMode::Direct {
            match OpenOptions::new()
                .read(true)
                .custom_flags(libc::O_DIRECT)
                .open(path)
            {
                Ok(f) => {
                    direct = true;
                    f
                }
                Err(e) if e.raw_os_error() == Some(libc::EINVAL) => {
                    File::open(path).map_err(err)?
                }
                Err(e) => return Err(err(e)),
            }
        } else {
            File::open(path).map_err(err)?
        };
        let len = file
            .metadata()
            .map_err(|e| IoError::new(path, "stat", e))?
            .len();
        let map = if mode == ReadMode::Mmap && len > 0 {
            // SAFETY: store files are immutable once their manifest is written; the
            // mapping is read-only, and a concurrent truncation by another process is
            // outside the store's contract (documented in docs/format.md).
            Some(unsafe { memmap2::Mmap::map(&file) }.map_err(|e| IoError::new(path, "mmap", e))?)
        } else {
            None
        };
        Ok(InFile {
            path: path.to_path_buf(),
            file,
            len,
            mode,
            direct,
            map,
            stats,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
    pub fn len(&self) -> u64 {
        self.len
    }
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    pub fn mode(&self) -> ReadMode {
        self.mode
    }
    /// True when reads really bypass the page cache.
    pub fn is_direct(&self) -> bool {
        self.direct
    }
    pub fn stats(&self) -> &Arc<IoStats> {
        &self.stats
    }

    /// Fails once the running command was cancelled ([`crate::cancel`]).
    fn cancelled(&self) -> Result<()> {
        crate::cancel::check().map_err(|e| IoError::new(&self.path, "read", e))
    }

    fn short(&self, offset: u64, want: usize) -> IoError {
        IoError::new(
            &self.path,
            "read",
            std::io::Error::new(
                std::io::ErrorKind::UnexpectedEof,
                format!(
                    "file ends at byte {} but {want} bytes were needed at offset {offset}",
                    self.len
                ),
            ),
        )
    }

    /// Reads exactly `buf.len()` bytes at `offset`.
    pub fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> Result<()> {
        if buf.is_empty() {
            return Ok(());
        }
        if offset + buf.len() as u64 > self.len {
            return Err(self.short(offset, buf.len()));
        }
        self.cancelled()?;
        match (self.mode, &self.map) {
            (ReadMode::Mmap, Some(m)) => {
                buf.copy_from_slice(&m[offset as usize..offset as usize + buf.len()]);
                self.stats.add_read(buf.len() as u64);
                Ok(())
            }
            _ if self.direct => {
                let mut tmp = AlignedBuf::default();
                let skip = self.read_exact_into(offset, buf.len(), &mut tmp)?;
                buf.copy_from_slice(&tmp.as_slice()[skip..skip + buf.len()]);
                Ok(())
            }
            _ => {
                self.file
                    .read_exact_at(buf, offset)
                    .map_err(|e| IoError::new(&self.path, "read", e))?;
                self.stats.add_read(buf.len() as u64);
                Ok(())
            }
        }
    }

    /// Reads exactly `len` bytes at `offset` into `buf` (grown when too small, its
    /// memory reused otherwise) with no intermediate copy, and returns where in
    /// `buf` they start. With O_DIRECT the request is widened to whole aligned
    /// pages (so the start is `offset`'s distance from the page boundary, and the
    /// bytes counted as read are the pages read); otherwise the bytes start at 0.
    pub fn read_exact_into(&self, offset: u64, len: usize, buf: &mut AlignedBuf) -> Result<usize> {
        if offset + len as u64 > self.len {
            return Err(self.short(offset, len));
        }
        if !self.direct {
            if buf.capacity() < len {
                *buf = AlignedBuf::new(len);
            }
            self.read_exact_at(offset, &mut buf.as_mut_slice()[..len])?;
            return Ok(0);
        }
        let start = offset & !(ALIGN as u64 - 1);
        let end = (offset + len as u64).div_ceil(ALIGN as u64) * ALIGN as u64;
        let want = (end - start) as usize;
        if buf.capacity() < want {
            *buf = AlignedBuf::new(want);
        }
        let skip = (offset - start) as usize;
        let got = self.read_direct(start, &mut buf.as_mut_slice()[..want])?;
        if got < skip + len {
            return Err(self.short(offset, len));
        }
        Ok(skip)
    }

    /// One O_DIRECT request: `offset` and `buf.len()` must be multiples of [`ALIGN`]
    /// and `buf` aligned (use [`AlignedBuf`]). Returns the bytes read (short at end of
    /// file). In buffered or mmap mode it reads the same bytes without alignment rules.
    pub fn read_direct(&self, offset: u64, buf: &mut [u8]) -> Result<usize> {
        self.cancelled()?;
        let mut done = 0usize;
        while done < buf.len() {
            let n = if let Some(m) = &self.map {
                let at = (offset as usize + done).min(m.len());
                let n = (m.len() - at).min(buf.len() - done);
                buf[done..done + n].copy_from_slice(&m[at..at + n]);
                n
            } else {
                match self.file.read_at(&mut buf[done..], offset + done as u64) {
                    Ok(n) => n,
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                    Err(e) => return Err(IoError::new(&self.path, "read", e)),
                }
            };
            if n == 0 {
                break;
            }
            done += n;
        }
        self.stats.add_read(done as u64);
        Ok(done)
    }

    /// Zero-copy view of a range, only in [`ReadMode::Mmap`]; counts the bytes as read.
    pub fn mapped(&self, offset: u64, len: usize) -> Result<Option<&[u8]>> {
        self.cancelled()?;
        match &self.map {
            Some(m) => {
                if offset + len as u64 > self.len {
                    return Err(self.short(offset, len));
                }
                self.stats.add_read(len as u64);
                Ok(Some(&m[offset as usize..offset as usize + len]))
            }
            None => Ok(None),
        }
    }

    /// Asks the kernel to start reading bytes `offset..offset + len` into the
    /// page cache now (`POSIX_FADV_WILLNEED`, which does not wait for them), so
    /// that many small reads spread over files are in flight at once rather
    /// than each waited for in turn. Nothing is counted as read (the read
    /// that uses them is); a no-op for direct and mapped files.
    pub fn will_need(&self, offset: u64, len: u64) {
        if self.direct || self.map.is_some() {
            return;
        }
        will_need(&self.file, offset, len)
    }

    /// The share of this file's pages the page cache holds now (`mincore(2)`
    /// over a mapping of it): 0 for a direct file, whose reads bypass the
    /// cache, and when the kernel cannot tell; 1 for an empty file.
    pub fn cached_fraction(&self) -> f64 {
        if self.direct {
            return 0.0;
        }
        if self.len == 0 {
            return 1.0;
        }
        let owned;
        let map = match &self.map {
            Some(m) => m,
            None => {
                // SAFETY: a read-only shared mapping of a file we hold open;
                // its bytes are never read through it (only their residency
                // is asked), so a file shrunk meanwhile cannot fault here.
                owned = match unsafe { memmap2::Mmap::map(&self.file) } {
                    Ok(m) => m,
                    Err(_) => return 0.0,
                };
                &owned
            }
        };
        resident_share(map)
    }

    /// Tells the kernel to drop this file's cached pages (cold-cache benchmarks).
    pub fn evict_from_page_cache(&self) {
        // SAFETY: plain syscall on a file descriptor we own.
        unsafe {
            libc::posix_fadvise(
                std::os::fd::AsRawFd::as_raw_fd(&self.file),
                0,
                0,
                libc::POSIX_FADV_DONTNEED,
            );
        }
    }
}

/// Pages [`resident_share`] asks about: all of a mapping up to this many,
/// else [`SAMPLES`] runs of [`SAMPLE_PAGES`] spread evenly over it (asking
/// about every page of 4 GiB of files took 82 ms).
const SAMPLED: usize = 4096;
const SAMPLES: usize = 256;
const SAMPLE_PAGES: usize = 16;

/// The share of `map`'s pages that are in memory (`mincore(2)`; a sample of
/// them in a large mapping), 0 when the kernel cannot tell.
fn resident_share(map: &[u8]) -> f64 {
    // SAFETY: sysconf only reads a constant of the system.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    let page = if page > 0 { page as usize } else { 4096 };
    let pages = map.len().div_ceil(page);
    if pages == 0 {
        return 1.0;
    }
    let runs: Vec<(usize, usize)> = if pages <= SAMPLED {
        vec![(0, pages)]
    } else {
        (0..SAMPLES)
            .map(|k| (k * (pages - SAMPLE_PAGES) / (SAMPLES - 1), SAMPLE_PAGES))
            .collect()
    };
    let mut v = vec![0u8; SAMPLED.min(pages)];
    let (mut asked, mut held) = (0usize, 0usize);
    for (first, len) in runs {
        let bytes = (len * page).min(map.len() - first * page);
        // SAFETY: `map` is a live mapping starting on a page boundary
        // (mmap's address); the run's `bytes` start `first` pages in and end
        // inside it, and `v` holds a byte for each of their `len` pages, as
        // mincore(2) writes.
        let rc = unsafe {
            libc::mincore(
                map.as_ptr().add(first * page) as *mut libc::c_void,
                bytes,
                v.as_mut_ptr(),
            )
        };
        if rc != 0 {
            return 0.0;
        }
        asked += len;
        held += v[..len].iter().filter(|&&b| b & 1 == 1).count();
    }
    held as f64 / asked as f64
}

/// `POSIX_FADV_WILLNEED` for bytes `offset..offset + len` of `file`: the kernel
/// starts reading them into the page cache and the call does not wait.
pub(crate) fn will_need(file: &File, offset: u64, len: u64) {
    if len == 0 {
        return;
    }
    // SAFETY: plain syscall on a file descriptor the caller owns; a hint, whose
    // failure changes nothing but speed.
    unsafe {
        libc::posix_fadvise(
            std::os::fd::AsRawFd::as_raw_fd(file),
            offset as libc::off_t,
            len as libc::off_t,
            libc::POSIX_FADV_WILLNEED,
        );
    }
}

/// A file being written: sequential buffered appends, positioned rewrites (headers),
/// counted in [`IoStats`] and subject to [`fault`] injection.
///
/// Created with [`OutFile::create_direct`], appends bypass the page cache: they
/// collect in an aligned buffer written with `O_DIRECT` whenever it fills, so a
/// large layout neither evicts the working set from the page cache nor leaves
/// dirty pages for the final fsync to wait on. The first positioned write,
/// extension or `finish` leaves direct mode (the aligned part of the buffer goes
/// out direct, `O_DIRECT` is cleared, the unaligned tail is written buffered).
pub struct OutFile {
    path: PathBuf,
    file: File,
    buf: Vec<u8>,
    pos: u64,
    stats: Arc<IoStats>,
    /// Direct mode: the aligned buffer, its fill, and the bytes already in the file.
    direct: Option<DirectTail>,
}

struct DirectTail {
    buf: AlignedBuf,
    /// The buffer's size, fixed when the file was created.
    size: usize,
    filled: usize,
    /// Bytes handed to the file (written, or in flight on the writer thread).
    flushed: u64,
    /// Started at the first full buffer: writes it in the background while the
    /// next one fills (at most two in flight).
    writer: Option<DirectWriter>,
}

type Submitted = (AlignedBuf, usize, u64);

struct DirectWriter {
    tx: Option<std::sync::mpsc::SyncSender<Submitted>>,
    back: std::sync::mpsc::Receiver<(AlignedBuf, std::io::Result<()>)>,
    in_flight: usize,
    spare: Vec<AlignedBuf>,
    handle: Option<std::thread::JoinHandle<()>>,
}

impl DirectWriter {
    fn start(file: &File) -> std::io::Result<DirectWriter> {
        let file = file.try_clone()?;
        let (tx, rx) = std::sync::mpsc::sync_channel::<Submitted>(2);
        let (back_tx, back) = std::sync::mpsc::channel();
        let handle = std::thread::spawn(move || {
            for (buf, len, offset) in rx {
                let r = file.write_all_at(&buf.as_slice()[..len], offset);
                if back_tx.send((buf, r)).is_err() {
                    return;
                }
            }
        });
        Ok(DirectWriter {
            tx: Some(tx),
            back,
            in_flight: 0,
            spare: Vec::new(),
            handle: Some(handle),
        })
    }

    /// Takes one finished write back; its buffer becomes spare.
    fn reap(&mut self) -> std::io::Result<()> {
        let (buf, r) = self.back.recv().map_err(|_| {
            std::io::Error::new(std::io::ErrorKind::BrokenPipe, "the writer thread stopped")
        })?;
        self.in_flight -= 1;
        self.spare.push(buf);
        r
    }

    /// Waits for every write in flight; the first error is returned.
    fn drain(&mut self) -> std::io::Result<()> {
        let mut first = Ok(());
        while self.in_flight > 0 {
            if let Err(e) = self.reap() {
                if first.is_ok() {
                    first = Err(e);
                }
            }
        }
        first
    }
}

impl Drop for DirectWriter {
    fn drop(&mut self) {
        self.tx.take();
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

const OUT_BUF: usize = 1 << 20;
/// The largest (and default) buffer of a direct-mode [`OutFile`].
const DIRECT_BUF: usize = 8 << 20;
static DIRECT_BUF_SIZE: std::sync::atomic::AtomicUsize =
    std::sync::atomic::AtomicUsize::new(DIRECT_BUF);

/// Sets the buffer of direct-mode writers created from now on (rounded down to a
/// multiple of 256 KiB, between 256 KiB and 8 MiB). A writer holds up to three
/// (one filling, two in flight): commands with a small `--memory` shrink them.
pub fn set_direct_write_buffer(bytes: usize) {
    let b = (bytes / (256 << 10) * (256 << 10)).clamp(256 << 10, DIRECT_BUF);
    DIRECT_BUF_SIZE.store(b, std::sync::atomic::Ordering::Relaxed);
}

/// The buffer size of direct-mode writers (see [`set_direct_write_buffer`]).
pub fn direct_write_buffer() -> usize {
    DIRECT_BUF_SIZE.load(std::sync::atomic::Ordering::Relaxed)
}

impl OutFile {
    /// Creates (or truncates) `path`.
    pub fn create(path: &Path, stats: Arc<IoStats>) -> Result<OutFile> {
        let file = File::create(path).map_err(|e| IoError::new(path, "create", e))?;
        Ok(OutFile {
            path: path.to_path_buf(),
            file,
            buf: Vec::with_capacity(OUT_BUF),
            pos: 0,
            stats,
            direct: None,
        })
    }

    /// Creates (or truncates) `path` for appends written with `O_DIRECT`; falls back
    /// to [`OutFile::create`] on filesystems that refuse `O_DIRECT` (tmpfs).
    pub fn create_direct(path: &Path, stats: Arc<IoStats>) -> Result<OutFile> {
        match OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .custom_flags(libc::O_DIRECT)
            .open(path)
        {
            Ok(file) => Ok(OutFile {
                path: path.to_path_buf(),
                file,
                buf: Vec::new(),
                pos: 0,
                stats,
                direct: Some(DirectTail {
                    buf: AlignedBuf::new(direct_write_buffer()),
                    size: direct_write_buffer(),
                    filled: 0,
                    flushed: 0,
                    writer: None,
                }),
            }),
            Err(e) if e.raw_os_error() == Some(libc::EINVAL) => OutFile::create(path, stats),
            Err(e) => Err(IoError::new(path, "create", e)),
        }
    }

    /// Whether appends still bypass the page cache.
    pub fn is_direct(&self) -> bool {
        self.direct.is_some()
    }

    /// Direct mode: hands the full buffer to the writer thread (started on first
    /// use) and continues with a spare one.
    fn submit_full(&mut self) -> Result<()> {
        let size = self.direct.as_ref().expect("direct mode").size;
        fault::charge_write(size).map_err(|e| IoError::new(&self.path, "write", e))?;
        let d = self.direct.as_mut().expect("direct mode");
        if d.writer.is_none() {
            d.writer = Some(
                DirectWriter::start(&self.file)
                    .map_err(|e| IoError::new(&self.path, "write", e))?,
            );
        }
        let w = d.writer.as_mut().expect("writer");
        let next = match w.spare.pop() {
            Some(b) => b,
            None if w.in_flight >= 2 => {
                w.reap().map_err(|e| IoError::new(&self.path, "write", e))?;
                w.spare.pop().expect("reaped buffer")
            }
            None => AlignedBuf::new(size),
        };
        let full = std::mem::replace(&mut d.buf, next);
        w.tx.as_ref()
            .expect("writer open")
            .send((full, size, d.flushed))
            .map_err(|_| {
                IoError::new(
                    &self.path,
                    "write",
                    std::io::Error::new(
                        std::io::ErrorKind::BrokenPipe,
                        "the writer thread stopped",
                    ),
                )
            })?;
        w.in_flight += 1;
        d.flushed += size as u64;
        d.filled = 0;
        self.stats.add_write(size as u64);
        Ok(())
    }

    /// Leaves direct mode: the aligned part of the buffer goes out direct, then
    /// `O_DIRECT` is cleared and the tail is written through the page cache.
    fn leave_direct(&mut self) -> Result<()> {
        let Some(d) = &mut self.direct else {
            return Ok(());
        };
        if let Some(w) = &mut d.writer {
            w.drain()
                .map_err(|e| IoError::new(&self.path, "write", e))?;
        }
        let filled = d.filled;
        let aligned = filled / ALIGN * ALIGN;
        if aligned > 0 {
            let data = &d.buf.as_slice()[..aligned];
            fault::charge_write(aligned)
                .and_then(|_| self.file.write_all_at(data, d.flushed))
                .map_err(|e| IoError::new(&self.path, "write", e))?;
            d.flushed += aligned as u64;
            self.stats.add_write(aligned as u64);
        }
        let mut d = self.direct.take().expect("direct mode");
        drop(d.writer.take());
        let fd = std::os::unix::io::AsRawFd::as_raw_fd(&self.file);
        // SAFETY: fcntl on a descriptor we own, reading then setting status flags.
        let ok = unsafe {
            let flags = libc::fcntl(fd, libc::F_GETFL);
            flags >= 0 && libc::fcntl(fd, libc::F_SETFL, flags & !libc::O_DIRECT) == 0
        };
        if !ok {
            return Err(IoError::new(
                &self.path,
                "clear O_DIRECT",
                std::io::Error::last_os_error(),
            ));
        }
        let tail = d.buf.as_mut_slice()[aligned..filled].to_vec();
        if !tail.is_empty() {
            fault::charge_write(tail.len())
                .and_then(|_| self.file.write_all_at(&tail, d.flushed))
                .map_err(|e| IoError::new(&self.path, "write", e))?;
            self.stats.add_write(tail.len() as u64);
        }
        use std::io::Seek;
        self.file
            .seek(std::io::SeekFrom::Start(self.pos))
            .map_err(|e| IoError::new(&self.path, "seek", e))?;
        Ok(())
    }
    pub fn path(&self) -> &Path {
        &self.path
    }
    /// Bytes appended so far (the logical length).
    pub fn position(&self) -> u64 {
        self.pos
    }

    pub fn write_all(&mut self, mut data: &[u8]) -> Result<()> {
        self.pos += data.len() as u64;
        if self.direct.is_some() {
            while !data.is_empty() {
                let d = self.direct.as_mut().expect("direct mode");
                let k = data.len().min(d.size - d.filled);
                d.buf.as_mut_slice()[d.filled..d.filled + k].copy_from_slice(&data[..k]);
                d.filled += k;
                data = &data[k..];
                if d.filled == d.size {
                    self.submit_full()?;
                }
            }
            return Ok(());
        }
        if self.buf.len() + data.len() > OUT_BUF {
            self.flush()?;
        }
        if data.len() >= OUT_BUF {
            return self.raw_write(data);
        }
        self.buf.extend_from_slice(data);
        Ok(())
    }

    fn raw_write(&mut self, data: &[u8]) -> Result<()> {
        fault::charge_write(data.len())
            .and_then(|_| self.file.write_all(data))
            .map_err(|e| IoError::new(&self.path, "write", e))?;
        self.stats.add_write(data.len() as u64);
        Ok(())
    }

    pub fn flush(&mut self) -> Result<()> {
        if !self.buf.is_empty() {
            let data = std::mem::take(&mut self.buf);
            let r = self.raw_write(&data);
            self.buf = data;
            self.buf.clear();
            r?;
        }
        Ok(())
    }

    /// Overwrites bytes at `offset`, which must lie inside what was appended.
    pub fn write_at(&mut self, offset: u64, data: &[u8]) -> Result<()> {
        assert!(
            offset + data.len() as u64 <= self.pos,
            "write_at beyond the appended length"
        );
        self.leave_direct()?;
        self.flush()?;
        fault::charge_write(data.len())
            .and_then(|_| self.file.write_all_at(data, offset))
            .map_err(|e| IoError::new(&self.path, "write", e))?;
        self.stats.add_write(data.len() as u64);
        Ok(())
    }

    /// Sets the logical length to `len` (at least the current one); the new range
    /// reads as zeros and takes no space until written (a sparse extension).
    pub fn set_len(&mut self, len: u64) -> Result<()> {
        assert!(len >= self.pos, "set_len may only extend");
        self.leave_direct()?;
        self.flush()?;
        self.file
            .set_len(len)
            .map_err(|e| IoError::new(&self.path, "extend", e))?;
        use std::io::Seek;
        self.file
            .seek(std::io::SeekFrom::Start(len))
            .map_err(|e| IoError::new(&self.path, "seek", e))?;
        self.pos = len;
        Ok(())
    }

    /// Flushes, fsyncs and closes; returns the file's length. A FIFO or device
    /// (which cannot be synchronized: EINVAL) is only flushed.
    pub fn finish(mut self) -> Result<u64> {
        self.leave_direct()?;
        self.flush()?;
        match self.file.sync_all() {
            Err(e)
                if e.raw_os_error() == Some(libc::EINVAL)
                    && self.file.metadata().is_ok_and(|m| !m.is_file()) => {}
            r => r.map_err(|e| IoError::new(&self.path, "fsync", e))?,
        }
        Ok(self.pos)
    }
}

/// fsyncs a directory so that renames inside it are durable.
pub fn sync_dir(dir: &Path) -> Result<()> {
    File::open(dir)
        .and_then(|f| f.sync_all())
        .map_err(|e| IoError::new(dir, "fsync directory", e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cached_share_follows_the_page_cache() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        let data = vec![7u8; 64 * 4096 + 100];
        std::fs::write(&path, &data).unwrap();
        File::open(&path).unwrap().sync_all().unwrap();
        for mode in [ReadMode::Buffered, ReadMode::Mmap] {
            let f = InFile::open(&path, mode, IoStats::new()).unwrap();
            let mut buf = vec![0u8; data.len()];
            f.read_exact_at(0, &mut buf).unwrap();
            assert_eq!(f.cached_fraction(), 1.0, "{mode:?}");
        }
        let d = InFile::open(&path, ReadMode::Direct, IoStats::new()).unwrap();
        let f = InFile::open(&path, ReadMode::Buffered, IoStats::new()).unwrap();
        f.evict_from_page_cache();
        if d.is_direct() {
            // Reads bypass the cache: what it holds does not matter.
            assert_eq!(d.cached_fraction(), 0.0);
            // A clean file on a disk filesystem (tmpfs, which refuses
            // O_DIRECT, keeps its pages): dropped.
            assert!(f.cached_fraction() < 0.5, "{}", f.cached_fraction());
        } else {
            eprintln!("O_DIRECT refused here (tmpfs?): eviction not checked");
        }
        let empty = dir.path().join("empty");
        std::fs::write(&empty, b"").unwrap();
        let e = InFile::open(&empty, ReadMode::Buffered, IoStats::new()).unwrap();
        assert_eq!(e.cached_fraction(), 1.0);
    }

    #[test]
    fn every_backend_reads_the_same_bytes_and_counts_them() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        let data: Vec<u8> = (0..20_000u32).map(|i| (i * 7 % 251) as u8).collect();
        let stats = IoStats::new();
        let mut out = OutFile::create(&path, stats.clone()).unwrap();
        out.write_all(&data).unwrap();
        out.write_at(10, &[1, 2, 3]).unwrap();
        assert_eq!(out.finish().unwrap(), 20_000);
        let mut expect = data.clone();
        expect[10..13].copy_from_slice(&[1, 2, 3]);
        assert_eq!(stats.snapshot().bytes_written, 20_003);
        for mode in [ReadMode::Buffered, ReadMode::Direct, ReadMode::Mmap] {
            let s = IoStats::new();
            let f = InFile::open(&path, mode, s.clone()).unwrap();
            let mut buf = vec![0u8; 5000];
            f.read_exact_at(4097, &mut buf).unwrap();
            assert_eq!(&buf[..], &expect[4097..9097], "{mode:?}");
            assert_eq!(s.snapshot().read_requests, 1);
            assert!(s.snapshot().bytes_read >= 5000);
            let err = f.read_exact_at(19_999, &mut buf).unwrap_err();
            assert!(err.to_string().contains("file ends at byte 20000"), "{err}");
        }
    }

    #[test]
    fn sequential_reader_returns_the_whole_file() {
        use std::io::Read;
        let dir = tempfile::tempdir().unwrap();
        for len in [0usize, 1, 4095, 4096, 3 * 8192 + 123] {
            let path = dir.path().join(format!("f{len}"));
            let data: Vec<u8> = (0..len as u32).map(|i| (i * 13 % 251) as u8).collect();
            std::fs::write(&path, &data).unwrap();
            for mode in [ReadMode::Buffered, ReadMode::Direct] {
                let s = IoStats::new();
                let mut r = SeqReader::new(InFile::open(&path, mode, s.clone()).unwrap(), 8192);
                let mut got = Vec::new();
                // Odd-sized reads, as a parser's refills are.
                let mut piece = vec![0u8; 1000];
                loop {
                    let n = r.read(&mut piece).unwrap();
                    if n == 0 {
                        break;
                    }
                    got.extend_from_slice(&piece[..n]);
                }
                assert_eq!(got, data, "{len} bytes, {mode:?}");
                assert_eq!(s.snapshot().bytes_read, len as u64, "{mode:?}");
                assert_eq!(s.snapshot().read_requests, len.div_ceil(8192) as u64);
            }
        }
    }

    #[test]
    fn direct_appends_write_the_same_bytes_as_buffered_ones() {
        let dir = tempfile::tempdir().unwrap();
        // Pieces of odd sizes around the direct buffer's size, then rewrites.
        let sizes = [
            4096usize,
            1,
            3 * DIRECT_BUF / 2 + 7,
            513,
            DIRECT_BUF,
            12_345,
        ];
        let mut data = Vec::new();
        for (k, n) in sizes.iter().enumerate() {
            data.extend((0..*n).map(|i| (i * 31 + k * 7) as u8));
        }
        for rewrite in [false, true] {
            let path = dir.path().join(format!("d{rewrite}"));
            let stats = IoStats::new();
            let mut out = OutFile::create_direct(&path, stats.clone()).unwrap();
            let direct = out.is_direct();
            let mut at = 0;
            for n in sizes {
                out.write_all(&data[at..at + n]).unwrap();
                at += n;
            }
            let mut expect = data.clone();
            if rewrite {
                out.write_at(0, b"HEAD").unwrap();
                expect[..4].copy_from_slice(b"HEAD");
                assert!(!out.is_direct());
                out.write_all(b"tail").unwrap();
                expect.extend_from_slice(b"tail");
            }
            assert_eq!(out.finish().unwrap(), expect.len() as u64);
            assert_eq!(std::fs::read(&path).unwrap(), expect, "direct {direct}");
            let extra = if rewrite { 4 } else { 0 };
            assert_eq!(stats.snapshot().bytes_written, expect.len() as u64 + extra);
        }
    }

    #[test]
    fn aligned_buffers_are_aligned() {
        let b = AlignedBuf::new(5000);
        assert_eq!(b.as_slice().as_ptr() as usize % ALIGN, 0);
        assert_eq!(b.capacity(), 8192);
    }
}
