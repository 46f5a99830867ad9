//! The storage engine of one rank (Chaos §6): serves chunk requests from every
//! computation engine, its own included, on a thread of its own.
//!
//! # Requests (`TAG_REQ`; header `op, partition, chunk, phase` as four LE `u32`)
//! - `GET_EDGES p phase` / `GET_UPDATES p phase`: any chunk of partition `p` not
//!   yet handed out in this phase (§6.3) — each chunk exactly once per phase,
//!   whoever asks, so several engines can share a partition without talking to
//!   each other. A new phase number resets the partition's cursor. Replied
//!   with [`OK`] + the chunk, or [`EMPTY`] when none is left here. A
//!   `GET_EDGES` may carry an [`ActiveFilter`] after its header: chunks none of
//!   whose sources (the manifest's `first..=last`) is active are passed over
//!   unread, and of a chunk served only the blocks (whole runs of 8192 edges
//!   each, the manifest's block index) holding an active source are read,
//!   across gaps of at most two blocks, each checked against its own CRC-32;
//!   the reply is those blocks' runs in the chunk's order. While no request waits, the
//!   storage thread reads the next [`READ_AHEAD`] chunks of the stream (the
//!   partition, phase and activity) its own computation engine asked for
//!   last, which serves itself without waiting on the device.
//! - `PUT_UPDATES p phase` + records: appends an update chunk to partition `p`'s
//!   update file; the first put of a newer phase empties the file first (the
//!   previous iteration's updates are consumed). Acknowledged on `TAG_ACK`.
//! - `GET_DEGREES p c`, `GET_STATE p c`, `PUT_STATE p c` + blob: vertex chunk `c`
//!   of partition `p`, stored here because it hashes here (§6.4). A state chunk
//!   never written is replied [`EMPTY`].
//! - `CHECKPOINT _ _ i` (from its own rank, at a barrier): copies every state
//!   chunk held here into the checkpoint directory's `state-<i>.bin`
//!   ([`crate::checkpoint`]); acknowledged with its length (`u64`) and CRC-32.
//! - `STEAL p phase` (from an idle computation engine): an offer to help this
//!   rank's computation engine with partition `p` ([`crate::steal`]), answered
//!   from the [`Board`] it posts to: [`OK`] (accepted), [`EMPTY`] (ask no more)
//!   or [`LATER`].
//! - `STOP` (from its own rank): the thread ends.
//!
//! The computation engine of the same rank does not message its own storage
//! engine: it serves its requests itself, under the lock the storage thread
//! takes for each request ([`Storage::serve_one`]), so a chunk stored here is
//! read once into the buffer that is processed, with no copy through MPI.
//!
//! Every chunk read from the layout is checked against its CRC-32 from the
//! manifest; a mismatch is replied as [`FAILED`] with the file and chunk named,
//! and the asking engine stops the run with that message.

use crate::error::{DistError, Result};
use crate::layout::{rank_dir, EdgeChunk, RankManifest};
use crate::steal::{Answer, Board};
use crate::transport::{Tag, Transport};
use crate::{TAG_ACK, TAG_RESP};
use outcore_io::{InFile, IoError, IoStats, ReadMode, ScratchFile};
use std::collections::{HashMap, VecDeque};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

pub const GET_EDGES: u32 = 1;
pub const GET_UPDATES: u32 = 2;
pub const PUT_UPDATES: u32 = 3;
pub const GET_DEGREES: u32 = 4;
pub const GET_STATE: u32 = 5;
pub const PUT_STATE: u32 = 6;
pub const STOP: u32 = 7;
pub const CHECKPOINT: u32 = 8;
pub const STEAL: u32 = 9;

pub const OK: u32 = 0;
pub const EMPTY: u32 = 1;
pub const FAILED: u32 = 2;
/// An offer to help came before the master reached the partition.
pub const LATER: u32 = 3;

/// A request's header.
pub fn header(op: u32, part: u32, chunk: u32, phase: u32) -> Vec<u8> {
    let mut v = Vec::with_capacity(16);
    for x in [op, part, chunk, phase] {
        v.extend_from_slice(&x.to_le_bytes());
    }
    v
}

/// A reply: status then payload.
pub fn reply(status: u32, payload: &[u8]) -> Vec<u8> {
    let mut v = Vec::with_capacity(4 + payload.len());
    v.extend_from_slice(&status.to_le_bytes());
    v.extend_from_slice(payload);
    v
}

/// A reply's payload: the bytes after its status word, left where they are
/// (a 4 MiB chunk is not moved to drop four bytes).
pub(crate) struct Payload(Vec<u8>);

impl Payload {
    /// The payload of `reply` (at least its status word).
    pub(crate) fn of(reply: Vec<u8>) -> Payload {
        debug_assert!(reply.len() >= 4);
        Payload(reply)
    }
}

impl std::ops::Deref for Payload {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        &self.0[4..]
    }
}

/// Which sources of a partition are active, one bit per `slice` vertices from
/// the partition's first; sent with `GET_EDGES`, so that a storage engine
/// passes over a chunk none of whose sources is active (without reading it).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ActiveFilter {
    slice: u64,
    bits: Vec<u8>,
}

impl ActiveFilter {
    /// Bits of a filter at most (a request grows by an eighth of this).
    pub(crate) const BITS: u64 = 4096;

    /// The filter of a partition whose vertex `i` is active when `act[i]`.
    pub(crate) fn of(act: &[bool]) -> ActiveFilter {
        let n = act.len() as u64;
        let slice = n.div_ceil(Self::BITS).max(1);
        let mut bits = vec![0u8; n.div_ceil(slice).div_ceil(8) as usize];
        for (k, piece) in act.chunks(slice as usize).enumerate() {
            if piece.contains(&true) {
                bits[k / 8] |= 1 << (k % 8);
            }
        }
        ActiveFilter { slice, bits }
    }

    pub(crate) fn encode(&self) -> Vec<u8> {
        let mut v = Vec::with_capacity(8 + self.bits.len());
        v.extend_from_slice(&self.slice.to_le_bytes());
        v.extend_from_slice(&self.bits);
        v
    }

    /// The filter a request carries after its header (`None`: none, every
    /// chunk is read).
    pub(crate) fn decode(b: &[u8]) -> Result<Option<ActiveFilter>> {
        if b.is_empty() {
            return Ok(None);
        }
        let slice = b
            .get(..8)
            .map(|x| u64::from_le_bytes(x.try_into().expect("8 bytes")))
            .filter(|&s| s > 0)
            .ok_or_else(|| {
                DistError::Protocol(format!("an activity filter of {} bytes", b.len()))
            })?;
        Ok(Some(ActiveFilter {
            slice,
            bits: b[8..].to_vec(),
        }))
    }

    /// Whether a source in `first..=last` (offsets in the partition) may be active.
    pub(crate) fn any(&self, first: u64, last: u64) -> bool {
        if first > last {
            return false;
        }
        let n = self.bits.len() as u64 * 8;
        let (lo, hi) = (
            first / self.slice,
            (last / self.slice).min(n.saturating_sub(1)),
        );
        (lo..=hi).any(|k| self.bits[(k / 8) as usize] & (1 << (k % 8)) != 0)
    }
}

/// Blocks a gap of at most this many unneeded blocks does not split a read
/// at (a 64 KiB block read through costs about what a request costs).
const BLOCK_GAP: usize = 2;

/// Edge chunks the storage thread reads ahead of the one served at most.
pub(crate) const READ_AHEAD: usize = 2;

/// The edge chunks read ahead: of the stream `(partition, phase, activity)`
/// edge chunks were last asked for, `ready` in cursor order (by chunk index,
/// each with what serving it gives), `next` the cursor position to read next.
struct Ahead {
    stream: (u32, u32, Option<ActiveFilter>),
    next: usize,
    ready: VecDeque<(usize, Result<Vec<u8>>)>,
}

/// Byte offset in chunk `c` of its block `j` (`j` = the block count: the
/// chunk's end; a chunk without a block index is one block).
fn block_start(c: &EdgeChunk, j: usize) -> u64 {
    match j {
        0 => 0,
        _ if c.blocks.is_empty() => c.bytes,
        _ => c.blocks[j - 1][3] as u64,
    }
}

/// The runs `[x, y)` of chunk `c`'s blocks to read for a request with
/// activity `filter` on a partition whose first vertex is `a` (every block
/// without a filter); `None` when no source of the chunk is active.
fn to_read(c: &EdgeChunk, filter: Option<&ActiveFilter>, a: u64) -> Option<Vec<(usize, usize)>> {
    let whole = vec![(0, c.blocks.len().max(1))];
    let Some(f) = filter else {
        return Some(whole);
    };
    let may =
        |lo: u32, hi: u32| f.any((lo as u64).saturating_sub(a), (hi as u64).saturating_sub(a));
    if !may(c.first, c.last) {
        return None;
    }
    if c.blocks.is_empty() {
        return Some(whole);
    }
    let r = block_ranges(c.blocks.iter().map(|k| may(k[0], k[1])));
    (!r.is_empty()).then_some(r)
}

/// The runs `[x, y)` of blocks to read, given which blocks are needed: the
/// needed ones, across gaps of at most [`BLOCK_GAP`] blocks.
fn block_ranges(need: impl Iterator<Item = bool>) -> Vec<(usize, usize)> {
    let mut out: Vec<(usize, usize)> = Vec::new();
    for (j, n) in need.enumerate() {
        if !n {
            continue;
        }
        match out.last_mut() {
            Some(r) if j - r.1 <= BLOCK_GAP => r.1 = j + 1,
            _ => out.push((j, j + 1)),
        }
    }
    out
}

#[inline]
pub(crate) fn u32_at(b: &[u8], i: usize) -> u32 {
    u32::from_le_bytes(b[4 * i..4 * i + 4].try_into().expect("4 bytes"))
}

/// What one storage engine did.
#[derive(Debug, Default, Clone, serde::Serialize, serde::Deserialize)]
pub struct StorageStats {
    pub requests: u64,
    pub edge_chunks_served: u64,
    /// Edge chunks passed over, none of their sources being active.
    #[serde(default)]
    pub edge_chunks_skipped: u64,
    /// Blocks of the edge chunks served that were not read, none of their
    /// sources being active.
    #[serde(default)]
    pub edge_blocks_skipped: u64,
    /// Edge chunks served that the storage thread had read ahead.
    #[serde(default)]
    pub edge_chunks_read_ahead: u64,
    pub update_chunks_stored: u64,
    pub update_chunks_served: u64,
    pub bytes_read: u64,
    pub bytes_written: u64,
    /// Seconds spent waiting for requests.
    pub idle_seconds: f64,
    /// Chunk requests (edges, updates) served, and the seconds spent serving
    /// them (§6.5's R_storage, summed).
    pub chunk_requests: u64,
    pub chunk_serve_seconds: f64,
}

/// A file of update chunks for one partition.
struct Updates {
    path: PathBuf,
    file: std::fs::File,
    chunks: Vec<(u64, u64)>,
    len: u64,
    put_phase: u32,
    get_phase: u32,
    cursor: usize,
}

/// One rank's storage engine.
pub struct Storage {
    manifest: RankManifest,
    run_dir: PathBuf,
    edges: InFile,
    degrees: InFile,
    /// Edge chunk indices by partition.
    by_part: Vec<Vec<usize>>,
    /// Per partition: (phase, next chunk) of the edge cursor.
    /// Per partition: (phase, next chunk) of the edge cursor.
    edge_cursor: Vec<(u32, usize)>,
    /// Edge chunks read ahead by the storage thread.
    ahead: Option<Ahead>,
    updates: HashMap<u32, Updates>,
    /// Offsets of the state chunks hashed here, and which were written.
    state_slot: HashMap<(u32, u32), (u64, u64, bool)>,
    state: Option<ScratchFile>,
    state_len: u64,
    ckpt_dir: PathBuf,
    /// Degree chunks by (partition, chunk).
    degree_index: HashMap<(u32, u32), usize>,
    io: Arc<IoStats>,
    /// What this rank's computation engine works on (work stealing).
    pub board: Arc<Mutex<Board>>,
    pub stats: StorageStats,
}

impl Storage {
    /// Opens rank `manifest.rank`'s files under `dir`; run files go to
    /// `run_dir`, checkpoints to `ckpt_dir`.
    /// Creates `run_dir` and opens this rank's storage engine in it; every
    /// rank learns whether every rank could before any goes on.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn open_on_every_rank(
        t: &dyn Transport,
        dir: &Path,
        manifest: &RankManifest,
        run_dir: &Path,
        ckpt_dir: &Path,
        state_bytes: u64,
        io: Arc<IoStats>,
        idle: &mut Duration,
    ) -> Result<Storage> {
        let opened = std::fs::create_dir_all(run_dir)
            .map_err(|e| DistError::from(IoError::new(run_dir, "create directory", e)))
            .and_then(|_| {
                Storage::open(
                    dir,
                    manifest.clone(),
                    run_dir.to_path_buf(),
                    ckpt_dir.to_path_buf(),
                    state_bytes,
                    io,
                )
            });
        crate::ingest::agree(t, opened.as_ref().err(), idle)?;
        opened
    }

    pub fn open(
        dir: &Path,
        manifest: RankManifest,
        run_dir: PathBuf,
        ckpt_dir: PathBuf,
        state_bytes: u64,
        io: Arc<IoStats>,
    ) -> Result<Storage> {
        let rd = rank_dir(dir, manifest.rank as usize);
        let edges = InFile::open(&rd.join("edges.bin"), ReadMode::Buffered, io.clone())?;
        let degrees = InFile::open(&rd.join("degrees.bin"), ReadMode::Buffered, io.clone())?;
        let plan = &manifest.plan;
        let mut by_part = vec![Vec::new(); plan.partitions as usize];
        for (i, c) in manifest.edge_chunks.iter().enumerate() {
            let p = by_part.get_mut(c.partition as usize).ok_or_else(|| {
                DistError::Layout(format!(
                    "{}: an edge chunk of partition {} (the layout has {})",
                    rd.join("manifest.json").display(),
                    c.partition,
                    plan.partitions
                ))
            })?;
            if !c.blocks_fit() {
                return Err(DistError::Layout(format!(
                    "{}: edge chunk {i} has {} blocks of {} edges for {} edges in {} bytes: the manifest is damaged",
                    rd.join("manifest.json").display(),
                    c.blocks.len(),
                    c.block_records,
                    c.edges,
                    c.bytes
                )));
            }
            p.push(i);
        }
        let mut state_slot = HashMap::new();
        let mut off = 0u64;
        for p in 0..plan.partitions {
            for c in 0..plan.vertex_chunks(p) {
                if plan.vertex_home(p, c) == manifest.rank as usize {
                    let (a, b) = plan.chunk_range(p, c);
                    let len = (b - a) * state_bytes;
                    state_slot.insert((p, c), (off, len, false));
                    off += len;
                }
            }
        }
        let state = if off > 0 {
            Some(ScratchFile::create(
                &run_dir,
                "dist-state",
                off,
                io.clone(),
            )?)
        } else {
            None
        };
        let degree_index = manifest
            .degree_chunks
            .iter()
            .enumerate()
            .map(|(i, d)| ((d.partition, d.chunk), i))
            .collect();
        Ok(Storage {
            edge_cursor: vec![(u32::MAX, 0); plan.partitions as usize],
            ahead: None,
            manifest,
            run_dir,
            edges,
            degrees,
            by_part,
            updates: HashMap::new(),
            state_slot,
            state,
            state_len: off,
            ckpt_dir,
            degree_index,
            io,
            board: Arc::default(),
            stats: StorageStats::default(),
        })
    }

    /// Loads generation `g` of the checkpoint into the state file: every state
    /// chunk held here counts as written.
    pub fn restore(&mut self, g: &crate::checkpoint::Generation) -> Result<()> {
        let path = crate::checkpoint::state_file(&self.ckpt_dir, g.iteration);
        if g.bytes != self.state_len {
            return Err(DistError::Layout(format!(
                "{}: {} bytes of vertex state recorded, this rank holds {}: the checkpoint is of another run",
                path.display(),
                g.bytes,
                self.state_len
            )));
        }
        if let Some(file) = &self.state {
            crate::checkpoint::read_state(
                &path,
                g,
                &mut |off, data| Ok(file.write_at(off, data)?),
            )?;
        }
        for slot in self.state_slot.values_mut() {
            slot.2 = true;
        }
        Ok(())
    }

    fn checkpoint(&mut self, iteration: u64) -> Result<Vec<u8>> {
        if let Some(((p, c), _)) = self.state_slot.iter().find(|(_, s)| !s.2) {
            return Err(DistError::Protocol(format!(
                "checkpoint of iteration {iteration}: vertex chunk {c} of partition {p} was never written"
            )));
        }
        std::fs::create_dir_all(&self.ckpt_dir)
            .map_err(|e| IoError::new(&self.ckpt_dir, "create directory", e))?;
        let path = crate::checkpoint::state_file(&self.ckpt_dir, iteration);
        let state = self.state.as_ref();
        let crc = crate::checkpoint::write_state(&path, self.state_len, &mut |off, buf| {
            Ok(state.expect("state chunks here").read_at(off, buf)?)
        })?;
        self.io.add_write(self.state_len);
        let mut out = reply(OK, &self.state_len.to_le_bytes());
        out.extend_from_slice(&crc.to_le_bytes());
        Ok(out)
    }

    /// Serves requests until its own rank says `STOP`. The computation engine
    /// of this rank serves its own requests through the same lock
    /// ([`Storage::serve_one`]), without a message.
    pub fn serve(this: &Mutex<Storage>, t: &dyn Transport) -> Result<()> {
        let mut idle = Duration::ZERO;
        loop {
            let (from, msg) = crate::transport::recv_request(t, &mut idle, &mut || {
                this.lock().expect("storage").read_ahead()
            })?;
            if msg.len() < 16 {
                return Err(DistError::Protocol(format!(
                    "rank {from} sent a request of {} bytes",
                    msg.len()
                )));
            }
            let op = u32_at(&msg, 0);
            if op == STOP && from == t.rank() {
                break;
            }
            let (tag, out) = this.lock().expect("storage").serve_one(&msg, false);
            t.reply(from, tag, out)?;
        }
        let mut me = this.lock().expect("storage");
        me.stats.idle_seconds = idle.as_secs_f64();
        let io = me.io.snapshot();
        me.stats.bytes_read = io.bytes_read;
        me.stats.bytes_written = io.bytes_written;
        Ok(())
    }

    /// One request (a header of at least 16 bytes): the reply's tag and
    /// bytes, a failure replied as [`FAILED`] with its message.
    /// `here`: the request is from this rank's own computation engine, the
    /// one the storage thread reads edge chunks ahead for.
    pub fn serve_one(&mut self, msg: &[u8], here: bool) -> (Tag, Vec<u8>) {
        let op = u32_at(msg, 0);
        self.stats.requests += 1;
        let t0 = std::time::Instant::now();
        let out = match self.handle(op, msg, here) {
            Ok(x) => x,
            Err(e) => (TAG_RESP, reply(FAILED, e.to_string().as_bytes())),
        };
        if op == GET_EDGES || op == GET_UPDATES {
            self.stats.chunk_requests += 1;
            self.stats.chunk_serve_seconds += t0.elapsed().as_secs_f64();
        }
        out
    }

    /// Reads the blocks `ranges` of edge chunk `i` into a reply, each
    /// checked against its CRC-32 (the chunk's, when it is read whole).
    fn read_chunk(&self, i: usize, ranges: &[(usize, usize)]) -> Result<Vec<u8>> {
        let c = &self.manifest.edge_chunks[i];
        let whole = c.blocks.is_empty() || ranges == [(0, c.blocks.len())];
        let span = |j: usize| block_start(c, j);
        let len: u64 = ranges.iter().map(|&(x, y)| span(y) - span(x)).sum();
        let mut out = reply(OK, &[]);
        out.resize(4 + len as usize, 0);
        let mut at = 4;
        for &(x, y) in ranges {
            let (from, to) = (span(x), span(y));
            let buf = &mut out[at..at + (to - from) as usize];
            self.edges.read_exact_at(c.offset + from, buf)?;
            let bad = if whole {
                crc32fast::hash(buf) != c.crc
            } else {
                (x..y).any(|j| {
                    let (p0, p1) = ((span(j) - from) as usize, (span(j + 1) - from) as usize);
                    crc32fast::hash(&buf[p0..p1]) != c.blocks[j][2]
                })
            };
            if bad {
                return Err(DistError::Layout(format!(
                    "{}: edge chunk at byte {} (partition {}) fails its checksum: the file is damaged",
                    self.edges.path().display(),
                    c.offset,
                    c.partition
                )));
            }
            at += (to - from) as usize;
        }
        Ok(out)
    }

    /// Reads the next chunk of the stream edge chunks were last asked for
    /// (the same partition, phase and activity), unless [`READ_AHEAD`] are
    /// waiting already or the stream is over; whether it read one.
    fn read_ahead(&mut self) -> bool {
        let Some(ah) = &self.ahead else {
            return false;
        };
        let (part, phase, filter) = &ah.stream;
        let cur = self.edge_cursor[*part as usize];
        if ah.ready.len() >= READ_AHEAD || cur.0 != *phase {
            return false;
        }
        let a = self.manifest.plan.range(*part).0;
        let chunks = &self.by_part[*part as usize];
        let mut k = ah.next.max(cur.1);
        while let Some(&i) = chunks.get(k) {
            k += 1;
            if let Some(r) = to_read(&self.manifest.edge_chunks[i], filter.as_ref(), a) {
                let out = self.read_chunk(i, &r);
                let ah = self.ahead.as_mut().expect("stream");
                ah.next = k;
                ah.ready.push_back((i, out));
                return true;
            }
        }
        self.ahead.as_mut().expect("stream").next = k;
        false
    }

    fn handle(&mut self, op: u32, msg: &[u8], here: bool) -> Result<(Tag, Vec<u8>)> {
        let (part, chunk, phase) = (u32_at(msg, 1), u32_at(msg, 2), u32_at(msg, 3));
        let plan = &self.manifest.plan;
        if part >= plan.partitions {
            return Err(DistError::Protocol(format!(
                "a request for partition {part} of {}",
                plan.partitions
            )));
        }
        match op {
            GET_EDGES => {
                let filter = ActiveFilter::decode(&msg[16..])?;
                let a = plan.range(part).0;
                let cur = &mut self.edge_cursor[part as usize];
                if cur.0 != phase {
                    *cur = (phase, 0);
                }
                let chunks = &self.by_part[part as usize];
                let (i, ranges) = loop {
                    let Some(&i) = chunks.get(cur.1) else {
                        return Ok((TAG_RESP, reply(EMPTY, &[])));
                    };
                    cur.1 += 1;
                    let c = &self.manifest.edge_chunks[i];
                    match to_read(c, filter.as_ref(), a) {
                        None => self.stats.edge_chunks_skipped += 1,
                        Some(r) => {
                            let read: usize = r.iter().map(|r| r.1 - r.0).sum();
                            self.stats.edge_blocks_skipped += (c.blocks.len().max(1) - read) as u64;
                            break (i, r);
                        }
                    }
                };
                // The storage thread reads ahead on the stream its own
                // computation engine asked for last, while it has no request
                // (the other ranks' requests are outstanding in windows
                // anyway); a chunk it read already is taken from there.
                let stream = (part, phase, filter);
                let mut done = None;
                match &mut self.ahead {
                    Some(ah) if ah.stream == stream => {
                        // Entries behind the cursor (skipped since) go.
                        while let Some(&(j, _)) = ah.ready.front() {
                            if j > i {
                                break;
                            }
                            let x = ah.ready.pop_front().expect("front");
                            if j == i {
                                done = Some(x.1);
                                break;
                            }
                        }
                    }
                    _ if !here => {}
                    _ => {
                        self.ahead = Some(Ahead {
                            stream,
                            next: 0,
                            ready: VecDeque::new(),
                        })
                    }
                }
                let out = match done {
                    Some(out) => {
                        self.stats.edge_chunks_read_ahead += 1;
                        out?
                    }
                    None => self.read_chunk(i, &ranges)?,
                };
                self.stats.edge_chunks_served += 1;
                Ok((TAG_RESP, out))
            }
            PUT_UPDATES => {
                let io = self.io.clone();
                let u = self.updates_of(part)?;
                if u.put_phase != phase {
                    u.file
                        .set_len(0)
                        .map_err(|e| IoError::new(&u.path, "truncate", e))?;
                    u.chunks.clear();
                    u.len = 0;
                    u.put_phase = phase;
                }
                let data = &msg[16..];
                outcore_io::fault::charge_write(data.len())
                    .and_then(|_| u.file.write_all_at(data, u.len))
                    .map_err(|e| IoError::new(&u.path, "write", e))?;
                io.add_write(data.len() as u64);
                u.chunks.push((u.len, data.len() as u64));
                u.len += data.len() as u64;
                self.stats.update_chunks_stored += 1;
                Ok((TAG_ACK, reply(OK, &[])))
            }
            GET_UPDATES => {
                let io = self.io.clone();
                let u = self.updates_of(part)?;
                if u.get_phase != phase {
                    u.get_phase = phase;
                    u.cursor = 0;
                }
                if u.put_phase.wrapping_add(1) != phase {
                    // No update of this phase's scatter reached this rank.
                    return Ok((TAG_RESP, reply(EMPTY, &[])));
                }
                let Some(&(off, len)) = u.chunks.get(u.cursor) else {
                    return Ok((TAG_RESP, reply(EMPTY, &[])));
                };
                u.cursor += 1;
                let mut out = reply(OK, &[]);
                out.resize(4 + len as usize, 0);
                u.file
                    .read_exact_at(&mut out[4..], off)
                    .map_err(|e| IoError::new(&u.path, "read", e))?;
                io.add_read(len);
                self.stats.update_chunks_served += 1;
                Ok((TAG_RESP, out))
            }
            GET_DEGREES => {
                let d = self
                    .degree_index
                    .get(&(part, chunk))
                    .map(|&i| &self.manifest.degree_chunks[i])
                    .ok_or_else(|| {
                        DistError::Layout(format!(
                            "{}: no degrees of vertex chunk {chunk} of partition {part}",
                            self.degrees.path().display()
                        ))
                    })?;
                let mut out = reply(OK, &[]);
                out.resize(4 + 4 * d.count as usize, 0);
                self.degrees.read_exact_at(d.offset, &mut out[4..])?;
                if crc32fast::hash(&out[4..]) != d.crc {
                    return Err(DistError::Layout(format!(
                        "{}: degrees of vertex chunk {chunk} of partition {part} fail their checksum: the file is damaged",
                        self.degrees.path().display()
                    )));
                }
                Ok((TAG_RESP, out))
            }
            GET_STATE | PUT_STATE => {
                let Some(slot) = self.state_slot.get_mut(&(part, chunk)) else {
                    return Err(DistError::Protocol(format!(
                        "vertex chunk {chunk} of partition {part} is not stored on this rank"
                    )));
                };
                let file = self.state.as_ref().expect("state chunks here");
                if op == PUT_STATE {
                    let data = &msg[16..];
                    if data.len() as u64 != slot.1 {
                        return Err(DistError::Protocol(format!(
                            "vertex chunk {chunk} of partition {part}: {} bytes put, {} expected",
                            data.len(),
                            slot.1
                        )));
                    }
                    file.write_at(slot.0, data)?;
                    slot.2 = true;
                    return Ok((TAG_ACK, reply(OK, &[])));
                }
                if !slot.2 {
                    return Ok((TAG_RESP, reply(EMPTY, &[])));
                }
                let mut out = reply(OK, &[]);
                out.resize(4 + slot.1 as usize, 0);
                file.read_at(slot.0, &mut out[4..])?;
                Ok((TAG_RESP, out))
            }
            CHECKPOINT => Ok((TAG_ACK, self.checkpoint(phase as u64)?)),
            STEAL => {
                let answer = self.board.lock().expect("board").offer(part, phase);
                let status = match answer {
                    Answer::Accept => OK,
                    Answer::No => EMPTY,
                    Answer::Later => LATER,
                };
                Ok((TAG_RESP, reply(status, &[])))
            }
            op => Err(DistError::Protocol(format!("unknown request {op}"))),
        }
    }

    fn updates_of(&mut self, part: u32) -> Result<&mut Updates> {
        if !self.updates.contains_key(&part) {
            let path = self.run_dir.join(format!("updates-{part}.bin"));
            let file = std::fs::OpenOptions::new()
                .read(true)
                .write(true)
                .create(true)
                .truncate(true)
                .open(&path)
                .map_err(|e| IoError::new(&path, "create", e))?;
            self.updates.insert(
                part,
                Updates {
                    path,
                    file,
                    chunks: Vec::new(),
                    len: 0,
                    put_phase: u32::MAX,
                    get_phase: u32::MAX,
                    cursor: 0,
                },
            );
        }
        Ok(self.updates.get_mut(&part).expect("inserted"))
    }
}

#[cfg(test)]
mod tests {
    use super::{block_ranges, ActiveFilter, BLOCK_GAP};

    /// Every needed block is in a range, ranges are disjoint and ascending,
    /// and an unneeded block is read only inside a gap of at most BLOCK_GAP.
    #[test]
    fn block_ranges_cover_the_needed_blocks() {
        for mask in 0u32..(1 << 12) {
            let need: Vec<bool> = (0..12).map(|j| mask & (1 << j) != 0).collect();
            let r = block_ranges(need.iter().copied());
            let mut covered = [false; 12];
            let mut prev_end = None;
            for &(x, y) in &r {
                assert!(x < y && y <= 12, "{need:?}: {r:?}");
                assert!(need[x] && need[y - 1], "{need:?}: {r:?}");
                if let Some(e) = prev_end {
                    assert!(x > e + BLOCK_GAP, "{need:?}: {r:?}");
                }
                prev_end = Some(y - 1);
                let mut gap = 0;
                for j in x..y {
                    covered[j] = true;
                    gap = if need[j] { 0 } else { gap + 1 };
                    assert!(gap <= BLOCK_GAP, "{need:?}: {r:?}");
                }
            }
            for j in 0..12 {
                assert!(!need[j] || covered[j], "{need:?}: {r:?}");
            }
        }
    }

    #[test]
    fn an_activity_filter_keeps_every_chunk_with_an_active_source() {
        for n in [1usize, 7, 4096, 4097, 10_000, 1 << 20] {
            for active in [vec![], vec![0], vec![n - 1], vec![n / 2, n / 3]] {
                let mut act = vec![false; n];
                for &i in &active {
                    act[i] = true;
                }
                let f = ActiveFilter::decode(&ActiveFilter::of(&act).encode())
                    .expect("decodes")
                    .expect("a filter");
                assert_eq!(f, ActiveFilter::of(&act));
                // Every range holding an active vertex is kept; one holding
                // none may be kept (a slice is coarse) only when it shares a
                // slice with an active vertex.
                for (lo, hi) in [
                    (0, n - 1),
                    (0, 0),
                    (n - 1, n - 1),
                    (n / 3, n / 2),
                    (1, n / 4),
                ] {
                    let (lo, hi) = (lo.min(hi), hi);
                    let holds = act[lo..=hi].contains(&true);
                    let kept = f.any(lo as u64, hi as u64);
                    assert!(!holds || kept, "n {n}: {lo}..={hi} holds an active source");
                    if !holds && kept {
                        let s = n.div_ceil(4096).max(1);
                        let near = active.iter().any(|&i| i / s >= lo / s && i / s <= hi / s);
                        assert!(near, "n {n}: {lo}..={hi} kept with no active vertex near");
                    }
                }
                assert!(!f.any(5, 4), "an empty range");
            }
        }
        assert_eq!(ActiveFilter::decode(&[]).expect("none"), None);
        assert!(ActiveFilter::decode(&[1, 2, 3]).is_err());
        assert!(ActiveFilter::decode(&[0; 8]).is_err());
    }
}
