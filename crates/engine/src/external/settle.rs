//! Final destinations (module docs of [`super`]): for settling relaxation
//! programs ([`EdgeProgram::settles`]: bfs), destinations whose value can no
//! longer change are not read, applied nor written again.
//!
//! # Design
//! A destination is *final* once no edge of a later iteration can lower its
//! value ([`EdgeProgram::final_after`]; bfs: a depth of at most the iteration,
//! the engine running synchronously). Per partition the engine keeps `fin`,
//! one bit a destination, set by `apply` when the value it leaves is final
//! after that iteration. A block of destinations that messages reached only
//! at final ones is then not *hit* (see the sparse destinations of step 3):
//! neither read, applied nor written back — their values cannot change, nor
//! can they be activated — and a partition whose messages all reached final
//! destinations is idle (no destination read, no mirror update). BFS's late
//! levels send most of their messages to vertices reached levels before
//! (Kronecker 24 at 32M, level 5: 127 -> 23 MiB of destinations read).
//!
//! Memory: one bit a destination, charged to the plan ([`Settled::bytes`]);
//! a budget that cannot spare it runs without (`settle_memory` 0 in the
//! stats). The answer does not depend on it.
//!
//! Measured and dropped: *dead edge groups* — marking a 4 KiB group of a
//! partition's edges dead once every target in it was final, and never
//! reading it again. The check scans each group's targets whole once they are
//! final (at Kronecker 24's fourth level 116K groups, 185M targets: +0.5-0.8 s
//! on 2 cores, warm), the level after reads 0.64 GB less but in scattered
//! pieces (cold, no faster), and the run was no faster (12.3, 12.1, 12.0 s
//! against 10.2, 12.0, 11.1 s without, alternating cold runs).

use crate::program::{word, EdgeProgram};
use outcore_state::AtomicBitmap;
use outcore_store::vpart::VpartRecord;

/// Per partition: its final destinations.
pub(super) struct Settled {
    fin: Vec<AtomicBitmap>,
}

impl Settled {
    /// Memory the bitmaps take for `rec`.
    pub(super) fn bytes(rec: &VpartRecord) -> u64 {
        rec.dests.iter().map(|&d| d.div_ceil(64) * 8).sum()
    }

    /// For partitions of `dests` destinations each.
    pub(super) fn new(dests: &[u64]) -> Settled {
        Settled {
            fin: dests
                .iter()
                .map(|&d| AtomicBitmap::new(d as usize))
                .collect(),
        }
    }

    /// Whether destination i of partition q is final.
    #[inline]
    pub(super) fn is_final(&self, q: usize, i: usize) -> bool {
        self.fin[q].get(i as u32)
    }
    /// Marks destination i of partition q final.
    #[inline]
    pub(super) fn set_final(&self, q: usize, i: usize) {
        self.fin[q].set(i as u32);
    }
}

/// Whether a program may settle on the external engine: a relaxation program
/// that settles and leaves a vertex without messages alone.
pub(super) fn settles<P: EdgeProgram>(prog: &P) -> bool {
    prog.relaxes() && prog.settles() && prog.idle_without_messages()
}

/// Whether the value `v` left by `apply` in iteration `it` (from 1) is final.
#[inline]
pub(super) fn final_value<P: EdgeProgram>(prog: &P, v: &P::V, it: u64) -> bool {
    prog.final_after(word(v), it - 1)
}
