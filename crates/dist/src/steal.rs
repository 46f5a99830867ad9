//! Work stealing (Chaos §5.3-§5.4): a computation engine that finished the
//! partitions it masters in a phase offers to help the masters of the others.
//!
//! # Protocol
//! - The master of partition `p` posts what it works on to its rank's
//!   [`Board`], which its storage engine reads: the phase, the partition under
//!   way, its data size `D` (edge bytes in scatter, update bytes in gather),
//!   the bytes the master consumed so far, and how many helpers joined.
//! - An idle engine sends `STEAL p phase` to the master's storage engine (so
//!   the master is never interrupted); the answer is [`Answer::Accept`] (the
//!   helper joins), [`Answer::No`] (the partition is done, passed over, or not
//!   worth helping: ask no more) or [`Answer::Later`] (the master has not
//!   reached it yet in this phase: ask again).
//! - The master accepts when, with `H` engines already on the partition, one
//!   more finishes it sooner (§5.4): `V/B + D'/(B(H+1)) < D'/(BH)`, where `V`
//!   is the bytes a helper must move first (the partition's vertex state in
//!   scatter, its accumulators in gather), `D'` the data left and `B` the
//!   bandwidth (it cancels). `D'` is estimated as `D - consumed * H` (each
//!   engine on the partition gets about as many chunks as the master).
//! - A helper streams the partition's chunks from the storage engines like the
//!   master does: each chunk is handed out once per phase, whoever asks. In
//!   scatter its updates are binned and stored like the master's; in gather it
//!   accumulates into accumulators of its own and sends them to the master,
//!   which merges every helper's (`combine`) before it applies. The master
//!   stops accepting when its own stream ends, so it knows how many merges
//!   to wait for.

/// What a master answers an offer to help.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Answer {
    Accept,
    No,
    Later,
}

#[derive(Debug, Clone)]
struct Current {
    part: u32,
    vbytes: u64,
    total: u64,
    consumed: u64,
    helpers: u32,
}

/// The partition a master works on, shared by its computation and storage
/// engines.
#[derive(Debug, Default)]
pub struct Board {
    phase: Option<u32>,
    /// Partitions finished (or passed over) in this phase.
    finished: Vec<u32>,
    current: Option<Current>,
    /// Offers accepted in this run.
    pub accepted: u64,
}

/// Whether one more engine finishes `remaining` bytes sooner when it must first
/// move `vbytes`, with `workers` engines already on them (§5.4; `B` cancels).
pub fn worth_helping(vbytes: u64, remaining: u64, workers: u64) -> bool {
    let (v, d, h) = (vbytes as f64, remaining as f64, workers.max(1) as f64);
    v + d / (h + 1.0) < d / h
}

impl Board {
    /// A new phase: nothing finished, nothing under way.
    pub fn begin(&mut self, phase: u32) {
        self.phase = Some(phase);
        self.finished.clear();
        self.current = None;
    }

    /// The master starts partition `p`: a helper would move `vbytes` first;
    /// the partition has `total` bytes of chunks.
    pub fn open(&mut self, part: u32, vbytes: u64, total: u64) {
        self.current = Some(Current {
            part,
            vbytes,
            total,
            consumed: 0,
            helpers: 0,
        });
    }

    /// The master consumed `bytes` more of the partition under way.
    pub fn consumed(&mut self, bytes: u64) {
        if let Some(c) = &mut self.current {
            c.consumed += bytes;
        }
    }

    /// The master's stream of the partition under way ended: no more helpers
    /// join; the number that joined.
    pub fn close(&mut self) -> u32 {
        match self.current.take() {
            Some(c) => {
                self.finished.push(c.part);
                c.helpers
            }
            None => 0,
        }
    }

    /// Partition `p` needs no work in this phase.
    pub fn finish(&mut self, part: u32) {
        self.finished.push(part);
    }

    /// An offer to help with partition `p` in `phase`.
    pub fn offer(&mut self, part: u32, phase: u32) -> Answer {
        match self.phase {
            None => return Answer::Later,
            Some(x) if phase > x => return Answer::Later,
            Some(x) if phase < x => return Answer::No,
            _ => {}
        }
        if self.finished.contains(&part) {
            return Answer::No;
        }
        match &mut self.current {
            Some(c) if c.part == part => {
                let workers = 1 + c.helpers as u64;
                let remaining = c.total.saturating_sub(c.consumed * workers);
                if worth_helping(c.vbytes, remaining, workers) {
                    c.helpers += 1;
                    self.accepted += 1;
                    Answer::Accept
                } else {
                    Answer::No
                }
            }
            _ => Answer::Later,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rule_of_section_5_4() {
        // One worker, 100 bytes left: a helper moving 10 first gets it done in
        // 10 + 50 < 100; moving 50 first, 50 + 50 is not sooner.
        assert!(worth_helping(10, 100, 1));
        assert!(!worth_helping(50, 100, 1));
        // Two workers: 10 + 100/3 < 50, but 20 + 33.3 is not.
        assert!(worth_helping(10, 100, 2));
        assert!(!worth_helping(17, 100, 2));
        assert!(!worth_helping(0, 0, 1));
    }

    #[test]
    fn offers_follow_the_master() {
        let mut b = Board::default();
        assert_eq!(b.offer(1, 0), Answer::Later);
        b.begin(4);
        assert_eq!(b.offer(1, 5), Answer::Later, "a phase ahead");
        assert_eq!(b.offer(1, 3), Answer::No, "a phase behind");
        assert_eq!(b.offer(1, 4), Answer::Later, "not started");
        b.open(1, 10, 1000);
        assert_eq!(b.offer(1, 4), Answer::Accept);
        assert_eq!(b.offer(3, 4), Answer::Later);
        b.consumed(300);
        // Two workers, 1000 - 600 left: 10 + 133 < 200.
        assert_eq!(b.offer(1, 4), Answer::Accept);
        b.consumed(200);
        // Three workers, 1000 - 1500 < 0 left: not worth it.
        assert_eq!(b.offer(1, 4), Answer::No);
        assert_eq!(b.close(), 2);
        assert_eq!(b.offer(1, 4), Answer::No, "finished");
        b.finish(3);
        assert_eq!(b.offer(3, 4), Answer::No, "passed over");
        b.begin(5);
        assert_eq!(b.offer(1, 5), Answer::Later, "a new phase");
        assert_eq!(b.accepted, 2);
    }
}
