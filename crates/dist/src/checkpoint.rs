//! Checkpoints of the vertex values (Chaos §6.6) and `--resume`.
//!
//! # When and what
//! At the barrier that ends iteration `i` (every `every` iterations), no update
//! is in flight and every vertex chunk sits in its storage engine's state file.
//! Each storage engine copies the chunks it holds into
//! `CKPT/state-<i>.bin` (sequentially, CRC-32 computed on the way, synced);
//! that is phase one. When every rank has written (a collective), each rank
//! commits: it replaces `CKPT/checkpoint.json` atomically (temporary + rename +
//! directory sync) with the new generation and the one before it, then deletes
//! older state files. That is phase two. `CKPT` is `DIR/rank-K/checkpoint`, or
//! `WORK/rank-K.checkpoint` with `--work-dir`: each rank writes only its own.
//!
//! # Why two generations
//! A rank commits only after every rank finished phase one, so when a run dies
//! the ranks' latest commits differ by at most one generation: some committed
//! `i`, the others still have `i - every` as their latest. `--resume` takes
//! the smallest latest generation over all ranks, which every rank still holds
//! (as its latest or the one before), and first forgets any newer generation
//! (its file will be written again).
//!
//! A generation records the globals the next iteration needs (the aggregates of
//! the last apply, as bit patterns so they come back exactly, and the active
//! count); they are the same on every rank. A checkpoint of another algorithm,
//! other parameters or another layout is refused; one that fails its checksum
//! is refused by name. A run that ends removes its checkpoints.

use crate::error::{DistError, Result};
use outcore_engine::program::Aggregates;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

pub const FILE: &str = "checkpoint.json";

/// One committed checkpoint.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Generation {
    /// Iterations done when it was taken.
    pub iteration: u64,
    /// Bytes and CRC-32 of `state-<iteration>.bin`.
    pub bytes: u64,
    pub crc: u32,
    /// The aggregates of the last apply (`f64::to_bits`).
    pub prev: [u64; 4],
    /// Vertices the last apply activated.
    pub active: u64,
}

impl Generation {
    pub fn aggregates(&self) -> Aggregates {
        self.prev.map(f64::from_bits)
    }
}

/// `checkpoint.json` of one rank.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Record {
    pub layout_id: u64,
    pub rank: u32,
    /// What ran: the algorithm and its parameters.
    pub key: String,
    /// Oldest first; at most two.
    pub generations: Vec<Generation>,
}

/// The checkpoint directory of one rank.
pub fn dir_of(dir: &Path, work_dir: Option<&Path>, rank: usize) -> PathBuf {
    match work_dir {
        Some(w) => w.join(format!("rank-{rank}.checkpoint")),
        None => crate::layout::rank_dir(dir, rank).join("checkpoint"),
    }
}

/// The state file of generation `iteration`.
pub fn state_file(ckpt: &Path, iteration: u64) -> PathBuf {
    ckpt.join(format!("state-{iteration}.bin"))
}

/// Reads `ckpt/checkpoint.json`; `None` when there is none.
pub fn load(ckpt: &Path) -> Result<Option<Record>> {
    let path = ckpt.join(FILE);
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(outcore_io::IoError::new(&path, "read", e).into()),
    };
    serde_json::from_str(&text).map(Some).map_err(|e| {
        DistError::Layout(format!(
            "{}: damaged checkpoint record: {e}",
            path.display()
        ))
    })
}

/// Commits `rec` (phase two): atomically replaces the record, then deletes the
/// state files of generations it no longer lists.
pub fn commit(ckpt: &Path, rec: &Record) -> Result<()> {
    let path = ckpt.join(FILE);
    let tmp = ckpt.join(".checkpoint.json.tmp");
    let text = serde_json::to_string_pretty(rec).expect("serialisable") + "\n";
    crate::layout::write_synced(&tmp, text.as_bytes())?;
    std::fs::rename(&tmp, &path).map_err(|e| outcore_io::IoError::new(&path, "rename", e))?;
    outcore_io::sync_dir(ckpt)?;
    let keep: Vec<PathBuf> = rec
        .generations
        .iter()
        .map(|g| state_file(ckpt, g.iteration))
        .collect();
    if let Ok(rd) = std::fs::read_dir(ckpt) {
        for e in rd.flatten() {
            let p = e.path();
            let name = e.file_name();
            let name = name.to_string_lossy();
            if name.starts_with("state-") && name.ends_with(".bin") && !keep.contains(&p) {
                let _ = std::fs::remove_file(&p);
            }
        }
    }
    Ok(())
}

/// Where a failure is injected (tests of `--resume`): on `rank`, at `point`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FailAt {
    pub rank: usize,
    pub point: FailPoint,
    /// Abort the process (as a killed rank does) instead of returning an error.
    pub abort: bool,
}

/// A moment of a run.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum FailPoint {
    /// In phase `n` (scatter of iteration `i` is `2i`, its gather `2i + 1`):
    /// after the first chunk this rank processes in it, or at its end.
    Phase(u32),
    /// Between the two phases of the checkpoint of iteration `i`: every rank
    /// wrote its state file, none has committed.
    Commit(u64),
}

impl std::str::FromStr for FailAt {
    type Err = String;
    /// `RANK:PHASE` or `RANK:commit:ITERATION`.
    fn from_str(s: &str) -> std::result::Result<FailAt, String> {
        let bad = || format!("{s:?}: expected RANK:PHASE or RANK:commit:ITERATION");
        let parts: Vec<&str> = s.split(':').collect();
        let rank = parts.first().and_then(|r| r.parse().ok()).ok_or_else(bad)?;
        let point = match parts[1..] {
            [p] => FailPoint::Phase(p.parse().map_err(|_| bad())?),
            ["commit", i] => FailPoint::Commit(i.parse().map_err(|_| bad())?),
            _ => return Err(bad()),
        };
        Ok(FailAt {
            rank,
            point,
            abort: false,
        })
    }
}

/// Fails as `at` says when this is its moment.
pub fn fail_if(at: Option<&FailAt>, rank: usize, now: FailPoint) -> Result<()> {
    match at {
        Some(f) if f.rank == rank && f.point == now => {
            if f.abort {
                eprintln!("rank {rank}: stopping at {now:?} (OUTCORE_DIST_FAIL)");
                std::process::abort();
            }
            Err(DistError::Invalid(format!(
                "rank {rank}: failure injected at {now:?}"
            )))
        }
        _ => Ok(()),
    }
}

/// Copies `len` bytes of the state from `read` into `path`, synced; returns
/// the CRC-32.
pub fn write_state(
    path: &Path,
    len: u64,
    read: &mut dyn FnMut(u64, &mut [u8]) -> Result<()>,
) -> Result<u32> {
    use std::io::Write;
    let mut f =
        std::fs::File::create(path).map_err(|e| outcore_io::IoError::new(path, "create", e))?;
    let mut crc = crc32fast::Hasher::new();
    let mut buf = vec![0u8; (4u64 << 20).min(len.max(1)) as usize];
    let mut off = 0u64;
    while off < len {
        let n = (len - off).min(buf.len() as u64) as usize;
        read(off, &mut buf[..n])?;
        crc.update(&buf[..n]);
        outcore_io::fault::charge_write(n)
            .and_then(|_| f.write_all(&buf[..n]))
            .map_err(|e| outcore_io::IoError::new(path, "write", e))?;
        off += n as u64;
    }
    f.sync_all()
        .map_err(|e| outcore_io::IoError::new(path, "sync", e))?;
    Ok(crc.finalize())
}

/// Reads generation `g`'s state file back through `write`, checking its length
/// first and its checksum at the end (the caller must not use what was written
/// when this fails).
pub fn read_state(
    path: &Path,
    g: &Generation,
    write: &mut dyn FnMut(u64, &[u8]) -> Result<()>,
) -> Result<()> {
    use std::io::Read;
    let damaged = |why: &str| {
        DistError::Layout(format!(
            "{}: {why}: the checkpoint of iteration {} is damaged; run again without --resume",
            path.display(),
            g.iteration
        ))
    };
    let mut f = std::fs::File::open(path).map_err(|e| outcore_io::IoError::new(path, "open", e))?;
    let len = f
        .metadata()
        .map_err(|e| outcore_io::IoError::new(path, "stat", e))?
        .len();
    if len != g.bytes {
        return Err(damaged(&format!("{len} bytes, {} recorded", g.bytes)));
    }
    // One pass: the bytes go to the state file as they are hashed; on a
    // mismatch the run stops before anything reads them.
    let mut crc = crc32fast::Hasher::new();
    let mut buf = vec![0u8; (4u64 << 20).min(len.max(1)) as usize];
    let mut off = 0u64;
    while off < len {
        let n = (len - off).min(buf.len() as u64) as usize;
        f.read_exact(&mut buf[..n])
            .map_err(|e| outcore_io::IoError::new(path, "read", e))?;
        crc.update(&buf[..n]);
        write(off, &buf[..n])?;
        off += n as u64;
    }
    if crc.finalize() != g.crc {
        return Err(damaged("fails its checksum"));
    }
    Ok(())
}
