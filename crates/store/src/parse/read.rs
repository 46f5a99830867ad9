//! Reading an input: gzip detection and decompression, O_DIRECT sequential reads
//! counted by the I/O layer, and a read-ahead thread that cuts the input into
//! parser chunks, so reading overlaps parsing.

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

/// Reads an input on its own thread, a couple of chunks ahead of the parser.
/// Each chunk is read straight into the buffer the parser gets (no second
/// copy) and cut at the end of its last whole line (text) or record (binary,
/// `record` bytes); the rest is carried into the next chunk. The last chunk
/// (flagged) is not cut: a partial binary record at the end is the consumer's
/// to report. A line longer than a chunk makes a longer chunk. Buffers come
/// back through [`ChunkReader::give_back`] and are reused.
pub(super) struct ChunkReader {
    rx: std::sync::mpsc::Receiver<Result<(Vec<u8>, bool)>>,
    back: std::sync::mpsc::SyncSender<Vec<u8>>,
    done: bool,
}

impl ChunkReader {
    pub(super) fn new(
        mut inner: Box<dyn Read + Send>,
        path: &Path,
        chunk: usize,
        record: Option<usize>,
    ) -> ChunkReader {
        let (tx, rx) = std::sync::mpsc::sync_channel::<Result<(Vec<u8>, bool)>>(2);
        let (back, spare) = std::sync::mpsc::sync_channel::<Vec<u8>>(8);
        let path = path.to_path_buf();
        std::thread::spawn(move || {
            let mut carry: Vec<u8> = Vec::new();
            loop {
                let mut b = spare.try_recv().unwrap_or_default();
                b.clear();
                b.extend_from_slice(&carry);
                carry.clear();
                let start = b.len();
                b.resize(start + chunk, 0);
                let n = match fill(&mut inner, &mut b[start..], &path) {
                    Ok(n) => n,
                    Err(e) => {
                        let _ = tx.send(Err(e));
                        return;
                    }
                };
                b.truncate(start + n);
                let last = n < chunk;
                if !last {
                    let cut = match record {
                        Some(rs) => b.len() / rs * rs,
                        None => memchr::memrchr(b'\n', &b).map_or(0, |p| p + 1),
                    };
                    if cut == 0 {
                        // A line longer than a whole chunk: keep reading into it.
                        carry = b;
                        continue;
                    }
                    carry.extend_from_slice(&b[cut..]);
                    b.truncate(cut);
                }
                if tx.send(Ok((b, last))).is_err() || last {
                    return;
                }
            }
        });
        ChunkReader {
            rx,
            back,
            done: false,
        }
    }

    /// The next chunk and whether it is the last; `None` after the last.
    pub(super) fn next_chunk(&mut self) -> Result<Option<(Vec<u8>, bool)>> {
        if self.done {
            return Ok(None);
        }
        match self.rx.recv() {
            Ok(Ok((b, last))) => {
                self.done = last;
                Ok(Some((b, last)))
            }
            Ok(Err(e)) => {
                self.done = true;
                Err(e)
            }
            Err(_) => {
                self.done = true;
                Ok(None)
            }
        }
    }

    /// A consumed chunk's buffer, for the reader to fill again.
    pub(super) fn give_back(&self, b: Vec<u8>) {
        let _ = self.back.try_send(b);
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

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn chunks(input: &[u8], chunk: usize, record: Option<usize>) -> Vec<(Vec<u8>, bool)> {
        let mut r = ChunkReader::new(
            Box::new(std::io::Cursor::new(input.to_vec())),
            Path::new("mem"),
            chunk,
            record,
        );
        let mut out = Vec::new();
        while let Some(c) = r.next_chunk().unwrap() {
            out.push(c);
        }
        out
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(500))]
        /// Chunks put back together are the input; every chunk but the last
        /// ends a line (text) or holds whole records (binary); only the last is
        /// flagged; a line longer than a chunk comes whole.
        #[test]
        fn chunks_are_the_input_cut_at_lines_or_records(
            input in proptest::collection::vec(
                proptest::sample::select(b"12 \n\nabcdefgh".to_vec()), 0..400),
            chunk in 1usize..40,
            record in prop_oneof![Just(None), Just(Some(8usize)), Just(Some(12usize))],
        ) {
            let chunk = record.map_or(chunk, |rs| chunk.max(rs));
            let cs = chunks(&input, chunk, record);
            prop_assert!(!cs.is_empty());
            let joined: Vec<u8> = cs.iter().flat_map(|c| c.0.clone()).collect();
            prop_assert_eq!(&joined, &input);
            for (i, (c, last)) in cs.iter().enumerate() {
                prop_assert_eq!(*last, i + 1 == cs.len());
                if !last {
                    match record {
                        Some(rs) => prop_assert!(!c.is_empty() && c.len() % rs == 0),
                        None => prop_assert_eq!(c.last(), Some(&b'\n')),
                    }
                }
            }
        }
    }
}
