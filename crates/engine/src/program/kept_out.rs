//! Out-lists kept in memory by a dense sparse step (`pull.rs`), for the
//! sparse steps after it.
//!
//! A sparse step whose active vertices' lists cover most of the out-edge
//! file reads nearly all of it; so does the next one, whose sources (the
//! vertices the first one reached) have short lists spread over every page.
//! On Kronecker 24 the third level's 2.33M sources read 1.05 GB of the 1.07
//! GB of lists, and the fourth level's 4.9M sources (20M edges) 940 MB again,
//! the fifth's 135K sources 340 MB. So a dense step reads whole chunks and
//! keeps the lists of the vertices that may still be reached — neither
//! settled nor active when it runs: 22M of the 268M edges there — and later
//! sparse steps take a chunk's lists from memory when every active vertex of
//! the chunk is one of those.
//!
//! Invariants: `set` holds exactly the vertices whose lists are kept (those
//! of a kept chunk that were neither settled nor active when kept, with
//! out-edges or without); a kept chunk's lists are those vertices' lists, whole, in vertex
//! order, so a vertex's list starts after the degrees of the kept vertices
//! before it in its chunk. A list never changes, so what is kept stays true
//! for the rest of the run. A chunk with an active vertex outside `set` (one
//! active again after it was kept) is read from the file as before.

use super::lists::{chunk_range, CHUNK};
use outcore_state::AtomicBitmap;

/// Out-lists kept in memory, per chunk.
pub(crate) struct KeptOut {
    /// The vertices whose lists are kept.
    set: AtomicBitmap,
    /// Per chunk: its kept vertices' lists, in vertex order (`None`: not kept).
    chunks: Vec<Option<Vec<u32>>>,
    /// Taken from the budget.
    pub(crate) bytes: u64,
}

impl KeptOut {
    /// Room for `n` vertices' membership; no chunk kept yet.
    pub(crate) fn new(n: u32) -> KeptOut {
        let set = AtomicBitmap::new(n as usize);
        KeptOut {
            bytes: set.bytes(),
            chunks: vec![None; n.div_ceil(CHUNK) as usize],
            set,
        }
    }

    /// The bytes of its membership bitmap, before any chunk is kept.
    pub(crate) fn base_bytes(n: u32) -> u64 {
        (n as u64).div_ceil(64) * 8
    }

    /// Marks `v` as kept (its list is pushed onto its chunk's by the caller,
    /// in vertex order).
    pub(crate) fn mark(&self, v: u32) {
        self.set.set(v);
    }

    /// Whether `v`'s list is to be kept: it was marked.
    pub(crate) fn holds(&self, v: u32) -> bool {
        self.set.get(v)
    }

    /// Stores chunk `c`'s kept lists, `bytes` more taken from the budget.
    pub(crate) fn put(&mut self, c: u32, lists: Vec<u32>, bytes: u64) {
        self.chunks[c as usize] = Some(lists);
        self.bytes += bytes;
    }

    /// Forgets the marks of chunk `c`'s vertices (a chunk that was not kept
    /// after all: the budget was spent).
    pub(crate) fn unmark(&self, c: u32, n: u32) {
        self.set.clear_range(chunk_range(c, n));
    }

    /// Whether chunk `c`'s active vertices all have their lists here.
    pub(crate) fn covers(&self, c: u32, n: u32, active: &AtomicBitmap) -> bool {
        self.chunks[c as usize].is_some()
            && active.ones_in(chunk_range(c, n)).all(|v| self.set.get(v))
    }

    /// Hands `visit` the list of every active vertex of chunk `c` (which it
    /// [covers](Self::covers)), `deg` the out-degrees; returns what `visit`
    /// returns, summed (the edges examined).
    pub(crate) fn visit(
        &self,
        c: u32,
        n: u32,
        deg: &[u32],
        active: &AtomicBitmap,
        mut visit: impl FnMut(u32, &[u32]) -> u64,
    ) -> u64 {
        let Some(lists) = &self.chunks[c as usize] else {
            return 0;
        };
        let (mut at, mut edges) = (0usize, 0u64);
        for v in self.set.ones_in(chunk_range(c, n)) {
            let d = deg[v as usize] as usize;
            if active.get(v) {
                edges += visit(v, &lists[at..at + d]);
            }
            at += d;
        }
        edges
    }

    /// The edges kept.
    #[cfg(test)]
    fn edges(&self) -> u64 {
        self.chunks.iter().flatten().map(|l| l.len() as u64).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_kept_chunk_hands_out_its_active_vertices_lists() {
        // Chunk 0 of 5000 vertices: 1, 3 and 7 kept with degrees 2, 0, 3
        // (3 has no list); chunk 1 not kept.
        let n = 5000;
        let mut deg = vec![0u32; n as usize];
        (deg[1], deg[7]) = (2, 3);
        let mut k = KeptOut::new(n);
        for v in [1, 3, 7] {
            k.mark(v);
        }
        k.put(0, vec![10, 11, 70, 71, 72], 20);
        let active = AtomicBitmap::new(n as usize);
        active.set(7);
        assert!(k.covers(0, n, &active));
        let mut seen = Vec::new();
        let e = k.visit(0, n, &deg, &active, |v, l| {
            seen.push((v, l.to_vec()));
            l.len() as u64
        });
        assert_eq!((e, seen), (3, vec![(7, vec![70, 71, 72])]));
        // An active vertex that was not kept: the chunk is read from the file.
        active.set(2);
        assert!(!k.covers(0, n, &active));
        // A chunk not kept covers nothing.
        active.set(4097);
        assert!(!k.covers(1, n, &active));
        assert_eq!(k.edges(), 5);
        k.unmark(0, n);
        assert!(!k.holds(7));
    }
}
