//! The V-Part layout's index file, `vpart.index`: segment starts, each source
//! table's block index and each partition's mirror skip table.
//!
//! # Design
//! Three static tables a run needs before it reads any partition, kept in one
//! file so that a run starts with one small read instead of a pass over the
//! layout:
//! * the *segment starts* (FAST'19 §4.1): `seg[q][p]`, the first entry of owner
//!   p in partition q's source table, which the mirror updates (§4.3) write
//!   segment by segment;
//! * each source table's *block index* ([`BlockIndex`]): where every block of
//!   [`SOURCE_BLOCK`] entries starts in bytes and in edges, so a chunk of whole
//!   blocks and its edges are read without decoding the table first;
//! * each partition p's *skip table*: at the start of every unit of
//!   [`skip_unit`] destinations of p, how many mirrors the destinations before
//!   it have in each partition q (p's position in its segment of `S_q`). A
//!   mirror update with nothing to write in a unit passes over it unread — its
//!   masks need not be read to know where the next unit's mirrors are.
//!
//! # Invariants
//! * A block index starts at 0, never falls, and ends at the table's edge count
//!   and byte size; a skip table's rows never fall, its first row is all 0 and
//!   its last row is p's segment sizes. Both are checked when the layout opens
//!   ([`parse`]); an index that breaks them is refused by name.
//! * The skip unit is a function of the vertex and partition counts alone
//!   ([`skip_unit`]), so the build and every run agree on it, and the tables of
//!   all partitions together take at most [`skip_table_bytes`] as u32s.

pub use crate::vpart_sources::{blocks, BlockIndex, MAX_SOURCE_BYTES, SOURCE_BLOCK};

/// The smallest skip unit (destinations), a multiple of every mask chunk a run
/// reads.
pub const SKIP_UNIT_MIN: u64 = 1 << 13;

/// The most all partitions' skip tables take as u32s in a run: 64 KiB, or
/// twice the table of one unit per partition when that is more (above 90
/// partitions).
pub fn skip_table_bytes(partitions: u64) -> u64 {
    (64 << 10).max(2 * (partitions + 1) * partitions * 4)
}

/// Destinations per unit of the skip tables: the smallest multiple of
/// [`SKIP_UNIT_MIN`] by a power of two whose tables fit [`skip_table_bytes`]
/// (partition p's has `ceil(d_p / unit) + 1` rows of k u32s, so all have at most
/// `n / unit + 2 k` rows).
pub fn skip_unit(vertices: u64, partitions: u64) -> u64 {
    let mut g = SKIP_UNIT_MIN;
    while (vertices / g + 2 * partitions) * partitions * 4 > skip_table_bytes(partitions)
        && g < 1 << 40
    {
        g *= 2;
    }
    g
}

/// Rows of partition p's skip table: one per unit and one for the end.
pub fn skip_rows(dests: u64, unit: u64) -> u64 {
    dests.div_ceil(unit) + 1
}

/// Builds one partition's skip table from its mirror masks, fed in order in
/// pieces of any length.
pub struct SkipCounter {
    k: usize,
    mask_bytes: usize,
    unit: u64,
    counts: Vec<u64>,
    dests: u64,
    partial: Vec<u8>,
    table: Vec<u64>,
}

impl SkipCounter {
    pub fn new(k: usize, mask_bytes: usize, unit: u64) -> SkipCounter {
        SkipCounter {
            k,
            mask_bytes,
            unit,
            counts: vec![0; k],
            dests: 0,
            partial: Vec::with_capacity(mask_bytes),
            table: Vec::new(),
        }
    }
    /// The next bytes of the masks.
    pub fn feed(&mut self, mut b: &[u8]) {
        if !self.partial.is_empty() {
            let take = (self.mask_bytes - self.partial.len()).min(b.len());
            self.partial.extend_from_slice(&b[..take]);
            b = &b[take..];
            if self.partial.len() < self.mask_bytes {
                return;
            }
            let mask = std::mem::take(&mut self.partial);
            self.one(&mask);
            self.partial = mask;
            self.partial.clear();
        }
        let mut it = b.chunks_exact(self.mask_bytes);
        for mask in &mut it {
            self.one(mask);
        }
        self.partial.extend_from_slice(it.remainder());
    }
    fn one(&mut self, mask: &[u8]) {
        if self.dests.is_multiple_of(self.unit) {
            self.table.extend_from_slice(&self.counts);
        }
        for (i, &byte) in mask.iter().enumerate() {
            let mut bits = byte;
            while bits != 0 {
                let q = 8 * i + bits.trailing_zeros() as usize;
                bits &= bits - 1;
                if q < self.k {
                    self.counts[q] += 1;
                }
            }
        }
        self.dests += 1;
    }
    /// The table (`skip_rows` rows of k u64s), or `None` when the masks fed
    /// are not `dests` whole masks.
    pub fn finish(mut self, dests: u64) -> Option<Vec<u64>> {
        if !self.partial.is_empty() || self.dests != dests {
            return None;
        }
        self.table.extend_from_slice(&self.counts);
        Some(self.table)
    }
}

/// `vpart.index` parsed: segment starts (`K (K + 1)`), block indexes and skip
/// tables (as u32s; `None` for a partition with a segment of 2^32 mirrors or
/// more, whose updates then never skip).
pub struct Index {
    pub seg: Vec<u64>,
    pub blocks: Vec<BlockIndex>,
    pub skip: Vec<Option<Vec<u32>>>,
    pub skip_unit: u64,
}

/// The words of `vpart.index` for these tables.
pub fn words(seg: &[u64], blocks: &[BlockIndex], skip: &[Vec<u64>]) -> Vec<u64> {
    let mut w = seg.to_vec();
    for b in blocks {
        w.extend_from_slice(&b.edges);
        w.extend_from_slice(&b.bytes);
    }
    for s in skip {
        w.extend_from_slice(s);
    }
    w
}

/// Parses and checks the index of a layout of `dests.len()` partitions with
/// these destination, mirror and edge counts and source-table sizes
/// (`source_bytes`); the error says what does not match.
pub fn parse(
    words: &[u64],
    dests: &[u64],
    mirrors: &[u64],
    edges: &[u64],
    source_bytes: &[u64],
) -> Result<Index, String> {
    let k = dests.len();
    if mirrors.len() != k || edges.len() != k || source_bytes.len() != k {
        return Err("does not match the vpart record".into());
    }
    let unit = skip_unit(dests.iter().sum(), k as u64);
    let want = k * (k + 1)
        + mirrors
            .iter()
            .map(|&m| 2 * (blocks(m) as usize + 1))
            .sum::<usize>()
        + dests
            .iter()
            .map(|&d| skip_rows(d, unit) as usize * k)
            .sum::<usize>();
    if words.len() != want {
        return Err(format!(
            "holds {} words, the vpart record needs {want}",
            words.len()
        ));
    }
    let seg = words[..k * (k + 1)].to_vec();
    let sz = |q: usize, p: usize| seg[q * (k + 1) + p + 1].wrapping_sub(seg[q * (k + 1) + p]);
    for q in 0..k {
        let row = &seg[q * (k + 1)..(q + 1) * (k + 1)];
        if row[0] != 0 || row[k] != mirrors[q] || row.windows(2).any(|w| w[0] > w[1]) {
            return Err(format!(
                "the segments of partition {q} do not match its source table"
            ));
        }
    }
    let mut at = k * (k + 1);
    let mut bis = Vec::with_capacity(k);
    for q in 0..k {
        let b = blocks(mirrors[q]) as usize + 1;
        let bi = BlockIndex {
            edges: words[at..at + b].to_vec(),
            bytes: words[at + b..at + 2 * b].to_vec(),
        };
        if !block_index_consistent(&bi, edges[q], source_bytes[q]) {
            return Err(format!(
                "the block index of partition {q} does not match its source table"
            ));
        }
        bis.push(bi);
        at += 2 * b;
    }
    let mut skip = Vec::with_capacity(k);
    for (p, &d) in dests.iter().enumerate() {
        let rows = skip_rows(d, unit) as usize;
        let t = &words[at..at + rows * k];
        at += rows * k;
        let ok = t[..k].iter().all(|&x| x == 0)
            && (0..k).all(|q| t[(rows - 1) * k + q] == sz(q, p))
            && (1..rows).all(|r| (0..k).all(|q| t[(r - 1) * k + q] <= t[r * k + q]));
        if !ok {
            return Err(format!(
                "the skip table of partition {p} does not match its segments"
            ));
        }
        skip.push(
            (0..k)
                .all(|q| sz(q, p) < 1 << 32)
                .then(|| t.iter().map(|&x| x as u32).collect()),
        );
    }
    Ok(Index {
        seg,
        blocks: bis,
        skip,
        skip_unit: unit,
    })
}

/// Whether a block index starts at 0, never falls, ends at the table's edge
/// count and byte size, and has no block shorter than two bytes an entry or
/// longer than [`MAX_SOURCE_BYTES`] an entry.
fn block_index_consistent(bi: &BlockIndex, edges: u64, bytes: u64) -> bool {
    let full = SOURCE_BLOCK;
    bi.edges.first() == Some(&0)
        && bi.bytes.first() == Some(&0)
        && bi.edges.last() == Some(&edges)
        && bi.bytes.last() == Some(&bytes)
        && bi.edges.windows(2).all(|w| w[0] <= w[1])
        && bi.bytes.windows(2).enumerate().all(|(b, w)| {
            let len = w[1].wrapping_sub(w[0]);
            // The last block may hold fewer entries.
            let n = if b + 2 == bi.bytes.len() { 1 } else { full };
            w[0] <= w[1] && len >= 2 * n && len <= MAX_SOURCE_BYTES * full
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Fed in pieces of any length, the counter's rows are the mirror
        /// counts before every unit's first destination.
        #[test]
        fn skip_rows_count_the_mirrors_before_each_unit(
            masks in prop::collection::vec(any::<u16>(), 0..300),
            cuts in prop::collection::vec(0usize..7, 0..80),
            unit_log in 0u32..4,
        ) {
            let (k, mb) = (11usize, 2usize);
            let unit = 1u64 << unit_log;
            let bytes: Vec<u8> = masks.iter().flat_map(|m| (m & 0x7ff).to_le_bytes()).collect();
            let mut c = SkipCounter::new(k, mb, unit);
            let mut at = 0;
            for &cut in &cuts {
                let end = (at + cut).min(bytes.len());
                c.feed(&bytes[at..end]);
                at = end;
            }
            c.feed(&bytes[at..]);
            let t = c.finish(masks.len() as u64).unwrap();
            let rows = skip_rows(masks.len() as u64, unit) as usize;
            prop_assert_eq!(t.len(), rows * k);
            for r in 0..rows {
                let before = ((r as u64 * unit) as usize).min(masks.len());
                let before = if r + 1 == rows { masks.len() } else { before };
                for q in 0..k {
                    let want = masks[..before].iter().filter(|&&m| m >> q & 1 == 1).count() as u64;
                    prop_assert_eq!(t[r * k + q], want, "row {} partition {}", r, q);
                }
            }
        }
    }

    #[test]
    fn a_short_feed_is_refused_and_units_fit_their_bound() {
        let mut c = SkipCounter::new(3, 1, 4);
        c.feed(&[1, 2, 4]);
        assert!(c.finish(4).is_none());
        for (n, k) in [
            (1u64 << 24, 22u64),
            (1 << 24, 130),
            (100, 3),
            (1 << 32, 254),
        ] {
            let g = skip_unit(n, k);
            assert!(g.is_multiple_of(SKIP_UNIT_MIN));
            assert!(
                (n / g + 2 * k) * k * 4 <= skip_table_bytes(k),
                "{n} {k} {g}"
            );
        }
    }
}
