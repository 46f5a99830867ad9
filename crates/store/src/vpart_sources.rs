//! The compact source records of a V-Part layout's `vpart.Q.sources` files.
//!
//! # Design
//! The external engine streams every partition's source table once per
//! iteration (FAST'19 §4.2 step 2: which sources are active, where their edges
//! are), so its bytes are read as often as the edges. An entry is a source's
//! dense id and its edge count into the partition. Within an owner's segment the
//! ids ascend (the table is ordered by owner, then id), and a partition holds a
//! fraction of every owner's vertices, so consecutive ids are close; most counts
//! are small (Kronecker 24 in 22 partitions: 5.7 edges a mirror on average). An
//! entry is therefore two LEB128 varints: the id's difference from the previous
//! entry's (wrapping, as a u32: where a segment starts over the difference wraps
//! to a large value, 5 bytes, once per owner), then the count. The differences
//! start from 0 again at every [`SOURCE_BLOCK`] entries, so a reader may start
//! decoding at any block's first byte: the packer records each block's byte
//! offset and the edge offset of its first entry ([`BlockIndex`], stored in
//! `vpart.index`), and the engine reads chunks of whole blocks by them.
//! Kronecker 24 in 22 partitions: 2.2 bytes an entry instead of 8.
//!
//! # Invariants
//! * An entry's varints are at most 5 bytes each and hold a u32; a longer or
//!   larger one is refused ([`SourceError`]), as is a table whose entries do
//!   not end exactly where its payload does (checked by the reader, which knows
//!   the entry count).

/// Source-table entries per block: the differences of ids restart at each
/// block's first entry (the unit of a reader's random access).
pub const SOURCE_BLOCK: u64 = 4096;

/// Most bytes one entry takes (two 5-byte varints).
pub const MAX_SOURCE_BYTES: u64 = 10;

/// A malformed entry: its byte offset in the bytes decoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceError {
    pub offset: usize,
}

/// Where each block of a source table starts: the edge offset of its first
/// entry (`edges[b]`, in edge records) and its byte offset in the table
/// (`bytes[b]`), for blocks `0..ceil(entries / SOURCE_BLOCK)`, each list ending
/// with the table's totals (so both have one more element than blocks).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BlockIndex {
    pub edges: Vec<u64>,
    pub bytes: Vec<u64>,
}

/// Blocks of a table of `entries` entries.
pub fn blocks(entries: u64) -> u64 {
    entries.div_ceil(SOURCE_BLOCK)
}

/// Lays down source-table entries in order, recording where each block starts.
#[derive(Debug, Default)]
pub struct SourcePacker {
    prev: u32,
    entries: u64,
    /// Edge records and bytes of the entries pushed so far.
    edges: u64,
    bytes: u64,
    index: BlockIndex,
}

impl SourcePacker {
    pub fn new() -> SourcePacker {
        SourcePacker::default()
    }
    /// Appends the next entry: source `id` with `count` edges into the partition.
    /// `out` is the table's bytes since the caller last took them away; the
    /// packer counts the bytes it appends.
    pub fn push(&mut self, id: u32, count: u32, out: &mut Vec<u8>) {
        if self.entries.is_multiple_of(SOURCE_BLOCK) {
            self.prev = 0;
            self.index.edges.push(self.edges);
            self.index.bytes.push(self.bytes);
        }
        let before = out.len();
        put_varint(id.wrapping_sub(self.prev), out);
        put_varint(count, out);
        self.bytes += (out.len() - before) as u64;
        self.edges += count as u64;
        self.prev = id;
        self.entries += 1;
    }
    /// Entries pushed.
    pub fn entries(&self) -> u64 {
        self.entries
    }
    /// The table's block index, closed with its totals.
    pub fn finish(mut self) -> BlockIndex {
        self.index.edges.push(self.edges);
        self.index.bytes.push(self.bytes);
        self.index
    }
}

fn put_varint(mut x: u32, out: &mut Vec<u8>) {
    while x >= 0x80 {
        out.push(x as u8 | 0x80);
        x >>= 7;
    }
    out.push(x as u8);
}

/// One varint at `b[at..]`: (value, bytes), `Ok(None)` when the bytes end first.
#[inline]
fn varint(b: &[u8], at: usize) -> Result<Option<(u32, usize)>, SourceError> {
    match b.get(at) {
        None => return Ok(None),
        Some(&x) if x < 0x80 => return Ok(Some((x as u32, 1))),
        _ => {}
    }
    let mut v = 0u32;
    for i in 0..5 {
        let Some(&x) = b.get(at + i) else {
            return Ok(None);
        };
        if i == 4 && x > 0x0f {
            // Past 32 bits, or a sixth byte.
            return Err(SourceError { offset: at });
        }
        v |= ((x & 0x7f) as u32) << (7 * i);
        if x < 0x80 {
            return Ok(Some((v, i + 1)));
        }
    }
    unreachable!("the fifth byte ends the varint or is refused")
}

/// One whole entry at `b[at..]`: (id difference, count, bytes); an entry the
/// bytes end inside is refused at its first byte. Entries whose two varints
/// take at most three bytes each, with eight bytes left to load, are decoded
/// from one load without a branch on their bytes ([`entry_short`]); the
/// others byte by byte.
#[inline]
fn entry(b: &[u8], at: usize) -> Result<(u32, u32, usize), SourceError> {
    if let Some(w) = b.get(at..at + 8) {
        let w = u64::from_le_bytes(w.try_into().expect("8 bytes"));
        if let Some(e) = entry_short(w) {
            return Ok(e);
        }
    }
    entry_bytes(b, at)
}

/// The low `l` (1 to 3) bytes of `w` as a varint's value: their 7-bit groups
/// side by side (continuation bits dropped).
#[inline(always)]
fn short_value(w: u64, l: u32) -> u32 {
    let m = w & ((1u64 << (8 * l)) - 1);
    ((m & 0x7f) | ((m >> 1) & 0x3f80) | ((m >> 2) & 0x1f_c000)) as u32
}

/// An entry from the eight bytes `w` at its start (little-endian): (id
/// difference, count, bytes) when each varint ends within three bytes (below
/// 2^21, so never past 32 bits), else `None`. A varint ends at the first byte
/// whose high bit is clear.
#[inline(always)]
fn entry_short(w: u64) -> Option<(u32, u32, usize)> {
    let ends = !w & 0x8080_8080_8080_8080;
    let e1 = ends.trailing_zeros();
    if e1 > 23 {
        return None;
    }
    let l1 = (e1 + 1) / 8;
    let e2 = (ends >> (8 * l1)).trailing_zeros();
    if e2 > 23 {
        return None;
    }
    let l2 = (e2 + 1) / 8;
    Some((
        short_value(w, l1),
        short_value(w >> (8 * l1), l2),
        (l1 + l2) as usize,
    ))
}

/// [`entry`], byte by byte (long varints, and entries near the bytes' end).
#[inline(never)]
fn entry_bytes(b: &[u8], at: usize) -> Result<(u32, u32, usize), SourceError> {
    let Some((d, l1)) = varint(b, at)? else {
        return Err(SourceError { offset: at });
    };
    let Some((c, l2)) = varint(b, at + l1)? else {
        return Err(SourceError { offset: at });
    };
    Ok((d, c, l1 + l2))
}

/// Decodes a table's entries in order from wherever a block starts.
#[derive(Debug, Clone)]
pub struct SourceDecoder {
    prev: u32,
    entry: u64,
}

impl SourceDecoder {
    /// A decoder whose next entry is entry `first` of the table, the first of
    /// a block.
    pub fn at_block(first: u64) -> SourceDecoder {
        debug_assert!(first.is_multiple_of(SOURCE_BLOCK));
        SourceDecoder {
            prev: 0,
            entry: first,
        }
    }
    /// The table index of the next entry.
    pub fn entry(&self) -> u64 {
        self.entry
    }
    /// The next entry from `b[at..]`: (id, count, bytes), `Ok(None)` when `b`
    /// ends inside it (nothing consumed).
    #[inline]
    pub fn next(&mut self, b: &[u8], at: usize) -> Result<Option<([u32; 2], usize)>, SourceError> {
        let Some((d, l1)) = varint(b, at)? else {
            return Ok(None);
        };
        let Some((count, l2)) = varint(b, at + l1)? else {
            return Ok(None);
        };
        let prev = if self.entry.is_multiple_of(SOURCE_BLOCK) {
            0
        } else {
            self.prev
        };
        let id = prev.wrapping_add(d);
        self.prev = id;
        self.entry += 1;
        Ok(Some(([id, count], l1 + l2)))
    }
    /// Decodes `n` entries from all of `b` into `out` (cleared first): the
    /// bytes must hold exactly them.
    pub fn decode_exact(
        &mut self,
        b: &[u8],
        n: usize,
        out: &mut Vec<[u32; 2]>,
    ) -> Result<(), SourceError> {
        out.clear();
        out.reserve(n);
        let mut at = 0usize;
        let mut left = n;
        while left > 0 {
            // The entries up to the next block's first, where differences
            // start over.
            let m = left.min((SOURCE_BLOCK - self.entry % SOURCE_BLOCK) as usize);
            let mut prev = if self.entry.is_multiple_of(SOURCE_BLOCK) {
                0
            } else {
                self.prev
            };
            let mut i = 0usize;
            while i < m {
                // Fast path: four entries of two one-byte varints each, found
                // by one 8-byte load (most entries: small gaps, small counts).
                if i + 4 <= m {
                    if let Some(w) = b.get(at..at + 8) {
                        let w = u64::from_le_bytes(w.try_into().expect("8 bytes"));
                        if w & 0x8080_8080_8080_8080 == 0 {
                            for k in 0..4 {
                                prev = prev.wrapping_add((w >> (16 * k)) as u8 as u32);
                                out.push([prev, (w >> (16 * k + 8)) as u8 as u32]);
                            }
                            at += 8;
                            i += 4;
                            continue;
                        }
                    }
                }
                let (d, c, l) = entry(b, at)?;
                prev = prev.wrapping_add(d);
                out.push([prev, c]);
                at += l;
                i += 1;
            }
            self.prev = prev;
            self.entry += m as u64;
            left -= m;
        }
        if at != b.len() {
            return Err(SourceError { offset: at });
        }
        Ok(())
    }
}

/// Byte lanes 0, 2, 4, 6 of `w`, summed (each at most 255, the sum fits 16 bits).
#[inline]
fn even_byte_sum(w: u64) -> u32 {
    ((w & 0x00ff_00ff_00ff_00ff).wrapping_mul(0x0001_0001_0001_0001) >> 48) as u32
}

impl SourceDecoder {
    /// Decodes `n` entries from all of `b` as [`SourceDecoder::decode_exact`]
    /// does (the same checks: the bytes must hold exactly them), but keeps only
    /// the entries at `picks` (ascending positions below `n`, counted from the
    /// first entry decoded; repeats are passed over): `f(j, id, count, edges)`
    /// for pick j, with `edges` the counts of the entries before it. Returns
    /// the counts of all `n` entries. Entries between picks are summed four at
    /// a time where their varints are one byte each (a reader that needs a few
    /// sources of a chunk neither stores nor scans the others).
    pub fn decode_picks(
        &mut self,
        b: &[u8],
        n: usize,
        picks: &[u32],
        mut f: impl FnMut(usize, u32, u32, u64),
    ) -> Result<u64, SourceError> {
        let mut at = 0usize;
        let mut i = 0usize;
        let mut edges = 0u64;
        let mut pj = 0usize;
        let next_pick = |pj: &mut usize, after: usize| -> usize {
            while *pj < picks.len() && (picks[*pj] as usize) < after {
                *pj += 1;
            }
            picks.get(*pj).map_or(usize::MAX, |&p| p as usize)
        };
        let mut next = next_pick(&mut pj, 0);
        while i < n {
            let m_end = n.min(i + (SOURCE_BLOCK - self.entry % SOURCE_BLOCK) as usize);
            let mut prev = if self.entry.is_multiple_of(SOURCE_BLOCK) {
                0
            } else {
                self.prev
            };
            let first = i;
            while i < m_end {
                if i + 4 <= m_end {
                    if let Some(w) = b.get(at..at + 8) {
                        let w = u64::from_le_bytes(w.try_into().expect("8 bytes"));
                        if w & 0x8080_8080_8080_8080 == 0 {
                            if next >= i + 4 {
                                prev = prev.wrapping_add(even_byte_sum(w));
                                edges += even_byte_sum(w >> 8) as u64;
                            } else {
                                for k in 0..4 {
                                    prev = prev.wrapping_add((w >> (16 * k)) as u8 as u32);
                                    let c = (w >> (16 * k + 8)) as u8 as u32;
                                    if i + k == next {
                                        f(pj, prev, c, edges);
                                        next = next_pick(&mut pj, i + k + 1);
                                    }
                                    edges += c as u64;
                                }
                            }
                            at += 8;
                            i += 4;
                            continue;
                        }
                    }
                }
                let (d, c, l) = entry(b, at)?;
                prev = prev.wrapping_add(d);
                if i == next {
                    f(pj, prev, c, edges);
                    next = next_pick(&mut pj, i + 1);
                }
                edges += c as u64;
                at += l;
                i += 1;
            }
            self.prev = prev;
            self.entry += (i - first) as u64;
        }
        if at != b.len() {
            return Err(SourceError { offset: at });
        }
        Ok(edges)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// The one-load entry agrees with the byte-by-byte one wherever it
        /// decodes, on any bytes (one- to three-byte varints and longer ones,
        /// redundant zero groups included), and declines only an entry with
        /// a varint of four bytes or more.
        #[test]
        fn short_entries_decode_as_byte_by_byte(
            bytes in proptest::collection::vec(prop_oneof![
                3 => 0u8..0x80,
                2 => 0x80u8..=0xff,
            ], 8..24),
        ) {
            let w = u64::from_le_bytes(bytes[..8].try_into().unwrap());
            let slow = entry_bytes(&bytes, 0);
            match entry_short(w) {
                Some(e) => prop_assert_eq!(Ok::<_, usize>(e), slow.clone().map_err(|e| e.offset)),
                None => {
                    let long = |at: usize| bytes[at..at + 3].iter().all(|&x| x >= 0x80);
                    let l1 = bytes.iter().position(|&x| x < 0x80).unwrap_or(99) + 1;
                    prop_assert!(l1 > 3 || long(l1), "declined {:x?}", &bytes[..8]);
                }
            }
            prop_assert_eq!(entry(&bytes, 0).map_err(|e| e.offset), slow.map_err(|e| e.offset));
        }
    }

    #[test]
    fn known_entries_and_malformed_varints() {
        let mut out = Vec::new();
        let mut p = SourcePacker::new();
        p.push(5, 1, &mut out);
        p.push(300, 2, &mut out);
        p.push(3, 128, &mut out); // a new segment: the difference wraps
        assert_eq!(&out[..4], &[5, 1, 0xa7, 0x02]);
        assert_eq!(out[4], 2);
        assert_eq!(out.len(), 4 + 1 + 5 + 2);
        let mut got = Vec::new();
        SourceDecoder::at_block(0)
            .decode_exact(&out, 3, &mut got)
            .unwrap();
        assert_eq!(got, vec![[5, 1], [300, 2], [3, 128]]);
        // One entry short, one byte left over, a truncated varint.
        assert!(SourceDecoder::at_block(0)
            .decode_exact(&out, 4, &mut got)
            .is_err());
        assert!(SourceDecoder::at_block(0)
            .decode_exact(&out, 2, &mut got)
            .is_err());
        assert!(SourceDecoder::at_block(0)
            .decode_exact(&out[..out.len() - 1], 3, &mut got)
            .is_err());
        // Six continuation bytes; a fifth byte past 32 bits.
        let bad = [0x80, 0x80, 0x80, 0x80, 0x80, 0x01, 0x01];
        assert_eq!(
            SourceDecoder::at_block(0).decode_exact(&bad, 1, &mut got),
            Err(SourceError { offset: 0 })
        );
        let big = [0xff, 0xff, 0xff, 0xff, 0x1f, 0x01];
        assert!(SourceDecoder::at_block(0)
            .decode_exact(&big, 1, &mut got)
            .is_err());
        let max = [0xff, 0xff, 0xff, 0xff, 0x0f, 0x01];
        SourceDecoder::at_block(0)
            .decode_exact(&max, 1, &mut got)
            .unwrap();
        assert_eq!(got, vec![[u32::MAX, 1]]);
    }

    proptest! {
        /// Every block decodes alone, from its own bytes, to what was packed.
        #[test]
        fn every_block_decodes_from_its_first_byte(
            raw in prop::collection::vec((any::<u32>(), 0u32..40, any::<bool>()), 0..9000),
            pick in any::<usize>(),
        ) {
            // Ascending runs (segments) with occasional restarts and huge values.
            let mut entries = Vec::new();
            let mut id = 0u32;
            for &(x, c, restart) in &raw {
                id = if restart { x } else { id.wrapping_add(x % 50) };
                let count = if c == 39 { x } else { c };
                entries.push([id, count]);
            }
            let mut out = Vec::new();
            let mut starts = Vec::new();
            let mut p = SourcePacker::new();
            for (i, e) in entries.iter().enumerate() {
                if (i as u64).is_multiple_of(SOURCE_BLOCK) {
                    starts.push(out.len());
                }
                p.push(e[0], e[1], &mut out);
            }
            starts.push(out.len());
            prop_assert_eq!(p.entries(), entries.len() as u64);
            let index = p.finish();
            prop_assert_eq!(index.bytes.len() as u64, blocks(entries.len() as u64) + 1);
            prop_assert_eq!(
                index.bytes.clone(),
                starts.iter().map(|&x| x as u64).collect::<Vec<_>>()
            );
            let mut e = 0u64;
            for (b, &x) in index.edges.iter().enumerate() {
                let first = (b * SOURCE_BLOCK as usize).min(entries.len());
                let want: u64 = entries[..first].iter().map(|x| x[1] as u64).sum();
                prop_assert_eq!(x, want);
                prop_assert!(x >= e);
                e = x;
            }
            let blocks = starts.len() - 1;
            if blocks > 0 {
                let b = pick % blocks;
                let first = b * SOURCE_BLOCK as usize;
                let n = (entries.len() - first).min(SOURCE_BLOCK as usize);
                let mut got = Vec::new();
                SourceDecoder::at_block(first as u64)
                    .decode_exact(&out[starts[b]..starts[b + 1]], n, &mut got)
                    .unwrap();
                prop_assert_eq!(&got[..], &entries[first..first + n]);
            }
            let mut all = Vec::new();
            SourceDecoder::at_block(0).decode_exact(&out, entries.len(), &mut all).unwrap();
            prop_assert_eq!(&all, &entries);
            // Picks (every `stride`-th entry from `pick`, and a repeat): what
            // decode_exact gives at those positions, the counts before them.
            let stride = 1 + pick % 7;
            let mut picks: Vec<u32> = (pick % 5..entries.len()).step_by(stride).map(|x| x as u32).collect();
            if let Some(&x) = picks.first() {
                picks.insert(0, x);
            }
            let mut got = Vec::new();
            let total = SourceDecoder::at_block(0)
                .decode_picks(&out, entries.len(), &picks, |j, id, c, before| got.push((j, id, c, before)))
                .unwrap();
            prop_assert_eq!(total, entries.iter().map(|x| x[1] as u64).sum::<u64>());
            let mut want = Vec::new();
            let mut seen = None;
            for (j, &p) in picks.iter().enumerate() {
                if seen == Some(p) {
                    continue;
                }
                seen = Some(p);
                let before: u64 = entries[..p as usize].iter().map(|x| x[1] as u64).sum();
                want.push((j, entries[p as usize][0], entries[p as usize][1], before));
            }
            prop_assert_eq!(got, want);
            // One entry short or one too many: refused as decode_exact refuses.
            let refused = |n: usize| {
                SourceDecoder::at_block(0)
                    .decode_picks(&out, n, &[], |_, _, _, _| ())
                    .is_err()
            };
            if !entries.is_empty() {
                prop_assert!(refused(entries.len() - 1));
            }
            prop_assert!(refused(entries.len() + 1));
        }
    }
}
