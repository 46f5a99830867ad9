//! The grid held decoded in memory between passes, when the budget has room
//! for it (not in the paper: CLIP reads every pass from the device).
//!
//! # Why
//! With the store in the page cache, a pass still copies every block out of
//! the cache, checks its CRC and decodes it, on reader threads that share the
//! cores with the edge functions: about a tenth of PageRank's time on
//! Kronecker 22 with two threads. A program that passes over the grid many
//! times ([`StreamEngine::hold_grid`]: the edge programs) keeps each block's
//! decoded words from its second pass on, when the whole grid's fit in half
//! of what the budget has left, and later passes take the blocks from memory
//! with no reader thread at all.
//!
//! # Invariants
//! * Held blocks are exactly what a read returns (read, checked and decoded
//!   once), with the weights when the pass streamed them: a pass over held
//!   blocks applies the same edges in the same order as one that reads them.
//! * Their bytes are taken from the budget before the first one is kept (the
//!   whole grid's, [`GridReader::block_held_bytes`]); nothing is held where
//!   they do not fit, and they go back when the program that asked ends
//!   ([`StreamEngine::release_grid`]) or the weights setting changes.
//! * A pass takes blocks from memory only when every block it needs is held;
//!   otherwise it reads them all and keeps the ones not held yet.
//! * A pass over held blocks stops at its next block once a stop was asked
//!   for (`outcore_io::cancel`), with the error a read of the grid gives.

use super::StreamEngine;
use crate::error::Result;
use outcore_io::IoError;
use outcore_store::{GridReader, RawBlock};
use std::ops::Deref;
use std::path::PathBuf;
use std::sync::mpsc::{Receiver, Sender};
use std::sync::Mutex;

/// Whether and how a grid is held.
#[derive(Default)]
pub(super) enum Hold {
    /// Every pass reads its blocks.
    #[default]
    Off,
    /// Asked for when `passes` grid passes had run: the second grid pass
    /// after that starts holding (an iteration from the CSR lists is no
    /// pass over the grid: a bfs with one grid pass holds nothing).
    Wanted { passes: u64 },
    /// Blocks kept so far, indexed `row * P + col`.
    Held(Held),
}

pub(super) struct Held {
    /// Whether the blocks carry their weights.
    weights: bool,
    blocks: Vec<Option<RawBlock>>,
    /// Taken from the budget.
    bytes: u64,
}

impl Held {
    /// Block `(r, c)`, when held.
    pub(super) fn get(&self, p: u32, (r, c): (u32, u32)) -> Option<&RawBlock> {
        self.blocks[(r * p + c) as usize].as_ref()
    }
}

/// The bytes of the whole grid held ([`GridReader::block_held_bytes`]).
fn grid_held_bytes(grid: &GridReader, weights: bool) -> u64 {
    let p = grid.partitions();
    (0..p)
        .flat_map(|r| (0..p).map(move |c| (r, c)))
        .filter(|&(r, c)| grid.entry(r, c).edges > 0)
        .map(|(r, c)| grid.block_held_bytes(r, c, weights))
        .sum()
}

impl StreamEngine<'_> {
    /// Asks the engine to hold the grid's blocks in memory from the second
    /// pass on, if the budget then has room for all of them in half of what
    /// it has left (module docs). Programs that pass over the grid many times
    /// call it; it changes no answer. Nothing is held when
    /// [`StreamConfig::hold_grid`](super::StreamConfig::hold_grid) is off.
    pub fn hold_grid(&mut self) {
        if self.cfg.hold_grid && matches!(self.hold, Hold::Off) {
            self.hold = Hold::Wanted {
                passes: self.grid_passes,
            };
        }
    }

    /// Drops the held blocks and gives their bytes back to the budget; a
    /// program that asked for [`StreamEngine::hold_grid`] calls it when it
    /// ends, so the next allocation has the budget it had before.
    pub fn release_grid(&mut self) {
        if let Hold::Held(h) = std::mem::take(&mut self.hold) {
            self.budget.give_back(h.bytes);
        }
        self.hold = Hold::Off;
    }

    /// Blocks held now, and their bytes (0, 0 when none).
    pub fn held_blocks(&self) -> (u64, u64) {
        match &self.hold {
            Hold::Held(h) => (
                h.blocks.iter().filter(|b| b.is_some()).count() as u64,
                h.bytes,
            ),
            _ => (0, 0),
        }
    }

    /// Before a pass over `todo`: the held blocks when every one of them is
    /// held (the pass reads nothing); otherwise None, after starting to hold
    /// where asked and the budget has room.
    pub(super) fn prepare_hold(&mut self, todo: &[(u32, u32)], weights: bool) -> bool {
        if let Hold::Held(h) = &self.hold {
            if h.weights != weights {
                self.budget.give_back(h.bytes);
                self.hold = Hold::Wanted { passes: 0 };
            }
        }
        match &self.hold {
            // `grid_passes` counts this pass already.
            Hold::Wanted { passes } if self.grid_passes > *passes + 1 => {
                let bytes = grid_held_bytes(&self.grid, weights);
                if bytes <= self.budget.remaining() / 2 && self.budget.take(bytes) {
                    let p = self.grid.partitions() as usize;
                    self.hold = Hold::Held(Held {
                        weights,
                        blocks: (0..p * p).map(|_| None).collect(),
                        bytes,
                    });
                }
                false
            }
            Hold::Held(h) => {
                let p = self.grid.partitions();
                todo.iter().all(|&rc| h.get(p, rc).is_some())
            }
            _ => false,
        }
    }

    /// After a pass that read its blocks: keeps those it set aside.
    pub(super) fn keep_held(&mut self, kept: Vec<RawBlock>) {
        let p = self.grid.partitions();
        if let Hold::Held(h) = &mut self.hold {
            for b in kept {
                let i = (b.row * p + b.col) as usize;
                h.blocks[i] = Some(b);
            }
        }
    }
}

impl Hold {
    /// Whether a pass reading its blocks sets block `(r, c)` of a grid of
    /// `p` x `p` aside to be held.
    fn keeps(&self, p: u32, rc: (u32, u32)) -> bool {
        match self {
            Hold::Held(h) => h.get(p, rc).is_none(),
            _ => false,
        }
    }
}

/// A block a pass processes: read for it, or held.
pub(super) enum Blk<'a> {
    Read(RawBlock),
    Held(&'a RawBlock),
}

impl Deref for Blk<'_> {
    type Target = RawBlock;
    fn deref(&self) -> &RawBlock {
        match self {
            Blk::Read(b) => b,
            Blk::Held(b) => b,
        }
    }
}

/// Where a pass's blocks come from, in `todo` order: the readers' channels
/// (block k from reader k % readers), or the held grid. Taken under one lock,
/// so [`Mode::Columns`](super::Mode::Columns)' threads take them in order too.
pub(super) struct Feed<'a> {
    todo: &'a [(u32, u32)],
    next: Mutex<(usize, Vec<Receiver<Result<RawBlock>>>)>,
    frees: &'a [Sender<RawBlock>],
    held: Option<&'a Held>,
    /// Blocks set aside to be held (when holding and not held yet).
    kept: Mutex<Vec<RawBlock>>,
    hold: &'a Hold,
    /// The grid's partitions.
    p: u32,
    /// The grid's data file, named by a cancelled pass over held blocks.
    grid_path: PathBuf,
}

impl<'a> Feed<'a> {
    pub(super) fn new(
        hold: &'a Hold,
        p: u32,
        grid_path: PathBuf,
        todo: &'a [(u32, u32)],
        fulls: Vec<Receiver<Result<RawBlock>>>,
        frees: &'a [Sender<RawBlock>],
        all_held: bool,
    ) -> Feed<'a> {
        let held = match hold {
            Hold::Held(h) if all_held => Some(h),
            _ => None,
        };
        Feed {
            todo,
            next: Mutex::new((0, fulls)),
            frees,
            held,
            kept: Mutex::new(Vec::new()),
            hold,
            p,
            grid_path,
        }
    }

    /// The next block in order and its position; None after the last (or
    /// when a reader stopped).
    pub(super) fn next(&self) -> Option<(usize, Result<Blk<'a>>)> {
        let mut q = self.next.lock().unwrap_or_else(|p| p.into_inner());
        let k = q.0;
        if k >= self.todo.len() {
            return None;
        }
        q.0 += 1;
        if let Some(h) = self.held {
            // No read to fail once a stop was asked for (the Python
            // package's Ctrl-C, `outcore_io::cancel`): the feed fails as a
            // read of the grid would.
            if let Err(e) = outcore_io::cancel::check() {
                return Some((k, Err(IoError::new(&self.grid_path, "read", e).into())));
            }
            let b = h.get(self.p, self.todo[k]);
            return Some((
                k,
                Ok(Blk::Held(b.expect("every block of the pass is held"))),
            ));
        }
        let readers = q.1.len();
        match q.1[k % readers].recv() {
            Ok(m) => Some((k, m.map(Blk::Read))),
            Err(_) => None,
        }
    }

    /// Block `k` is done with: its buffer goes back to its reader, or is set
    /// aside to be held (its reader then gets a fresh one).
    pub(super) fn done(&self, k: usize, b: Blk<'a>) {
        let Blk::Read(mut b) = b else { return };
        let readers = self.frees.len();
        if self.hold.keeps(self.p, (b.row, b.col)) {
            b.compact();
            self.kept.lock().unwrap_or_else(|p| p.into_inner()).push(b);
            let _ = self.frees[k % readers].send(RawBlock::default());
        } else {
            let _ = self.frees[k % readers].send(b);
        }
    }

    /// The blocks set aside to be held.
    pub(super) fn into_kept(self) -> Vec<RawBlock> {
        self.kept.into_inner().unwrap_or_else(|p| p.into_inner())
    }
}
