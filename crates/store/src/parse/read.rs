//! Reading an input: gzip detection and decompression, O_DIRECT sequential reads
//! counted by the I/O layer, and a read-ahead thread so reading overlaps parsing.

use super::*;

/// A counting wrapper so progress can be reported in input (compressed) bytes.
pub(super) struct Counting<R> {
    pub(super) inner: R,
    pub(super) count: Arc<AtomicU64>,
}

impl<R: Read> Read for Counting<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.count.fetch_add(n as u64, Ordering::Relaxed);
        Ok(n)
    }
}

/// Opens an input for reading from its start (gunzipped when it is gzip). With
/// `stats`, the file is read in 4 MiB `O_DIRECT` blocks through the I/O layer
/// ([`SeqReader`], counted there): a long input then costs neither the kernel's
/// page-cache copy nor page-cache memory under the ingest's memory limit; without,
/// through the page cache (the probe's short look at the head).
pub(super) fn open_input(
    path: &Path,
    count: Arc<AtomicU64>,
    stats: Option<&Arc<IoStats>>,
) -> Result<(Box<dyn Read + Send>, bool, u64)> {
    let mut f = File::open(path).map_err(|e| IoError::new(path, "cannot open input", e))?;
    let len = f
        .metadata()
        .map_err(|e| IoError::new(path, "stat", e))?
        .len();
    let mut magic = [0u8; 2];
    let n = f
        .read(&mut magic)
        .map_err(|e| IoError::new(path, "read", e))?;
    let inner: Box<dyn Read + Send> = match stats {
        Some(stats) if std::fs::metadata(path).is_ok_and(|m| m.is_file()) => {
            Box::new(SeqReader::new(
                InFile::open(path, ReadMode::Direct, stats.clone())?,
                chunk_size().min(4 << 20),
            ))
        }
        _ => Box::new(File::open(path).map_err(|e| IoError::new(path, "cannot open input", e))?),
    };
    let counted = Counting { inner, count };
    let gz = n == 2 && magic == [0x1f, 0x8b];
    if gz {
        Ok((
            Box::new(flate2::read::MultiGzDecoder::new(
                std::io::BufReader::with_capacity(1 << 20, counted),
            )),
            true,
            len,
        ))
    } else {
        Ok((Box::new(counted), false, len))
    }
}

/// Reads an input on its own thread, a few blocks ahead of the parser, so reading
/// (and gzip decompression) overlaps parsing. Blocks are recycled.
pub(super) struct ReadAhead {
    pub(super) rx: std::sync::mpsc::Receiver<std::io::Result<Vec<u8>>>,
    pub(super) back: std::sync::mpsc::SyncSender<Vec<u8>>,
    pub(super) cur: Vec<u8>,
    pub(super) at: usize,
    pub(super) done: bool,
}

pub(super) const READ_BLOCK: usize = 4 << 20;

impl ReadAhead {
    pub(super) fn new(mut inner: Box<dyn Read + Send>) -> ReadAhead {
        let (tx, rx) = std::sync::mpsc::sync_channel::<std::io::Result<Vec<u8>>>(3);
        let (back, spare) = std::sync::mpsc::sync_channel::<Vec<u8>>(8);
        std::thread::spawn(move || loop {
            let mut b = spare.try_recv().unwrap_or_default();
            b.resize(READ_BLOCK.min(chunk_size()), 0);
            let mut n = 0;
            let r = loop {
                match inner.read(&mut b[n..]) {
                    Ok(0) => break Ok(()),
                    Ok(k) => {
                        n += k;
                        if n == b.len() {
                            break Ok(());
                        }
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                    Err(e) => break Err(e),
                }
            };
            b.truncate(n);
            let end = n == 0 || r.is_err();
            let msg = match r {
                Ok(()) => Ok(b),
                Err(e) => Err(e),
            };
            if tx.send(msg).is_err() || end {
                return;
            }
        });
        ReadAhead {
            rx,
            back,
            cur: Vec::new(),
            at: 0,
            done: false,
        }
    }
}

impl Read for ReadAhead {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        while self.at == self.cur.len() {
            if self.done {
                return Ok(0);
            }
            match self.rx.recv() {
                Ok(Ok(b)) => {
                    if b.is_empty() {
                        self.done = true;
                    }
                    let old = std::mem::replace(&mut self.cur, b);
                    let _ = self.back.try_send(old);
                    self.at = 0;
                }
                Ok(Err(e)) => {
                    self.done = true;
                    return Err(e);
                }
                Err(_) => {
                    self.done = true;
                    return Ok(0);
                }
            }
        }
        let k = buf.len().min(self.cur.len() - self.at);
        buf[..k].copy_from_slice(&self.cur[self.at..self.at + k]);
        self.at += k;
        Ok(k)
    }
}

/// Reads until `buf` is full or the input ends; returns the bytes read.
pub(super) fn fill(r: &mut dyn Read, buf: &mut [u8], path: &Path) -> Result<usize> {
    let mut done = 0;
    while done < buf.len() {
        match r.read(&mut buf[done..]) {
            Ok(0) => break,
            Ok(n) => done += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => {
                let what = if e.kind() == std::io::ErrorKind::InvalidInput
                    || e.kind() == std::io::ErrorKind::InvalidData
                    || e.kind() == std::io::ErrorKind::UnexpectedEof
                {
                    "corrupt gzip stream"
                } else {
                    "read"
                };
                return Err(IoError::new(path, what, e).into());
            }
        }
    }
    Ok(done)
}
