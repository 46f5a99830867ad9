//! The bit-packed encoding of a grid block (store format version 2).
//!
//! A block of the P x P grid (CLIP ATC'17 §4.1, with GraphCP's source-sorted
//! sub-blocks and per-source index, FCS'24 §3.2) holds `s` distinct sources, `s + 1`
//! run offsets and `e` targets. Every source of block (i, j) lies in interval i and
//! every target in interval j, so both are stored as *local* ids (the id minus the
//! interval's first vertex) in `id_bits = bits(interval - 1)` bits each instead of
//! 32; the offsets (all in `[0, e]`) take `bits(e)` bits. At scale 22 with P = 32
//! (intervals of 2^17 vertices) this is 17 bits per target instead of 32: the
//! streaming engines read ~45% fewer bytes, and they are I/O-bound.
//!
//! Packing: values are laid down least significant bit first into a stream of
//! little-endian u32 words; value k of a section of width `w` occupies stream bits
//! `[k*w, (k+1)*w)`, stream bit `t` being bit `t % 32` of word `t / 32`. Each
//! section (sources, offsets, targets) starts on a word and its last word is
//! zero-padded, so a block stays a whole number of u32 words and the weights (f32,
//! unpacked) stay aligned. Values are fixed width, so value k of a section can be
//! found without decoding the ones before it (the concurrent-jobs engine reads one
//! source's run alone).
//!
//! Invariant: a packed value is `< 2^w` (the writers only pack local ids of the
//! block's own intervals and offsets `<= e`); the reader checks decoded sources and
//! targets against the block's intervals, so a damaged block that slips past its
//! CRC still cannot hand out an out-of-range id.

/// Bits needed to write `max` (at least 1).
#[inline]
pub fn bits_for(max: u64) -> u32 {
    (64 - max.leading_zeros()).max(1)
}

/// Bits of a local id in a grid of intervals of `interval` vertices.
#[inline]
pub fn id_bits(interval: u64) -> u32 {
    bits_for(interval.saturating_sub(1))
}

/// u32 words of `count` packed values of `width` bits.
#[inline]
pub fn packed_words(count: u64, width: u32) -> u64 {
    (count * width as u64).div_ceil(32)
}

/// The sizes of one block's sections, in u32 words.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shape {
    pub sources: u64,
    pub edges: u64,
    pub id_bits: u32,
    pub off_bits: u32,
}

impl Shape {
    /// Words of the sources section.
    pub fn source_words(&self) -> u64 {
        packed_words(self.sources, self.id_bits)
    }
    /// Words of the offsets section (`s + 1` offsets).
    pub fn offset_words(&self) -> u64 {
        packed_words(self.sources + 1, self.off_bits)
    }
    /// Words of the targets section.
    pub fn target_words(&self) -> u64 {
        packed_words(self.edges, self.id_bits)
    }
    /// Bytes of the per-source index (sources + offsets); 0 for an empty block.
    pub fn index_bytes(&self) -> u64 {
        if self.edges == 0 {
            0
        } else {
            4 * (self.source_words() + self.offset_words())
        }
    }
    /// Bytes of the topology (index + targets); 0 for an empty block.
    pub fn topology_bytes(&self) -> u64 {
        if self.edges == 0 {
            0
        } else {
            self.index_bytes() + 4 * self.target_words()
        }
    }
    /// Bytes of the whole block (topology + weights when `weighted`).
    pub fn block_bytes(&self, weighted: bool) -> u64 {
        if self.edges == 0 {
            0
        } else {
            self.topology_bytes() + 4 * self.edges * weighted as u64
        }
    }
}

/// Streams values of one width into u32 words.
#[derive(Debug, Clone, Default)]
pub struct BitPacker {
    acc: u64,
    held: u32,
    width: u32,
}

impl BitPacker {
    /// A packer of `width`-bit values; width 0 is an empty block's (it never
    /// packs a value).
    pub fn new(width: u32) -> BitPacker {
        debug_assert!(width <= 32);
        BitPacker {
            acc: 0,
            held: 0,
            width,
        }
    }
    /// Appends `v` (`< 2^width`); a word is pushed to `out` whenever one fills.
    #[inline]
    pub fn push(&mut self, v: u32, out: &mut Vec<u32>) {
        debug_assert!(self.width > 0, "a value packed into an empty block");
        debug_assert!(
            self.width == 32 || v >> self.width == 0,
            "{v} wider than {}",
            self.width
        );
        self.acc |= (v as u64) << self.held;
        self.held += self.width;
        if self.held >= 32 {
            out.push(self.acc as u32);
            self.acc >>= 32;
            self.held -= 32;
        }
    }
    /// Pushes the last, zero-padded, partial word (if any); the packer is then
    /// empty and keeps its width.
    pub fn finish(&mut self, out: &mut Vec<u32>) {
        if self.held > 0 {
            out.push(self.acc as u32);
        }
        self.acc = 0;
        self.held = 0;
    }
}

/// Builds one block's packed sections from its runs, in order: sources, offsets,
/// targets, weights (word vectors that a writer appends whole, or drains chunk by
/// chunk to their places in the file).
#[derive(Debug, Clone, Default)]
pub struct BlockPacker {
    row_lo: u32,
    col_lo: u32,
    packers: [BitPacker; 3],
    /// Pending words of the sources, offsets, targets and weights sections.
    pub sections: [Vec<u32>; 4],
    /// Words of each section already drained.
    drained: [u64; 4],
    edges: u64,
}

impl BlockPacker {
    /// A packer for a block of `shape` whose rows start at vertex `row_lo` and
    /// columns at `col_lo`.
    pub fn new(shape: &Shape, row_lo: u32, col_lo: u32) -> BlockPacker {
        BlockPacker {
            row_lo,
            col_lo,
            packers: [
                BitPacker::new(shape.id_bits),
                BitPacker::new(shape.off_bits),
                BitPacker::new(shape.id_bits),
            ],
            ..Default::default()
        }
    }
    /// Adds source `u`'s run: its targets (ascending, inside the column interval)
    /// and, for weighted blocks, their weights.
    #[inline]
    pub fn run(&mut self, u: u32, targets: impl Iterator<Item = u32>) {
        let [s, o, d, _] = &mut self.sections;
        self.packers[0].push(u - self.row_lo, s);
        self.packers[1].push(self.edges as u32, o);
        for v in targets {
            self.packers[2].push(v - self.col_lo, d);
            self.edges += 1;
        }
    }
    /// Adds weights of the last run (as many as its targets).
    #[inline]
    pub fn weights(&mut self, ws: impl Iterator<Item = f32>) {
        self.sections[3].extend(ws.map(f32::to_bits));
    }
    /// Ends the block: the final offset (the edge count) and the padded last words.
    pub fn finish(&mut self) {
        let [s, o, d, _] = &mut self.sections;
        self.packers[1].push(self.edges as u32, o);
        self.packers[0].finish(s);
        self.packers[1].finish(o);
        self.packers[2].finish(d);
    }
    /// Hands every pending word to `f(section, first word's index in the
    /// section, words)` and forgets them.
    pub fn drain<E>(
        &mut self,
        mut f: impl FnMut(usize, u64, &[u32]) -> std::result::Result<(), E>,
    ) -> std::result::Result<(), E> {
        for k in 0..4 {
            if !self.sections[k].is_empty() {
                f(k, self.drained[k], &self.sections[k])?;
                self.drained[k] += self.sections[k].len() as u64;
                self.sections[k].clear();
            }
        }
        Ok(())
    }
}

/// Decodes values `first .. first + out.len()` of a section of `width`-bit values
/// held in `words` (whose word 0 is the section's word 0, or any word the caller
/// counts `first` from), writing `value + base` to `out`. Returns the largest
/// value decoded (before adding `base`; 0 when `out` is empty), or `None` when
/// `words` is too short to hold them.
pub fn unpack_into(
    words: &[u32],
    first: u64,
    width: u32,
    base: u32,
    out: &mut [u32],
) -> Option<u32> {
    unpack_at(words, first * width as u64, width, base, out)
}

/// Like [`unpack_into`], with the first value starting at stream bit `bit` of
/// `words` (for a slice of a section read from the middle).
pub fn unpack_at(words: &[u32], bit: u64, width: u32, base: u32, out: &mut [u32]) -> Option<u32> {
    if out.is_empty() {
        return Some(0);
    }
    let end_bit = bit + out.len() as u64 * width as u64;
    if end_bit.div_ceil(32) > words.len() as u64 {
        return None;
    }
    let (done, mut max) = unpack_head(bytemuck::cast_slice(words), bit, width, base, out);
    let tail = &mut out[done..];
    if tail.is_empty() {
        return Some(max);
    }
    let p = bit + done as u64 * width as u64;
    let mask = width_mask(width);
    let mut w = (p / 32) as usize;
    let mut acc = (words[w] as u64) >> (p % 32);
    let mut have = 32 - (p % 32) as u32;
    w += 1;
    for o in tail.iter_mut() {
        if have < width {
            // In range: the value's last bit lies below `end_bit`, so its word
            // is below `end_bit.div_ceil(32)`, checked above.
            acc |= (words[w] as u64) << have;
            have += 32;
            w += 1;
        }
        let v = (acc & mask) as u32;
        acc >>= width;
        have -= width;
        max = max.max(v);
        *o = v.wrapping_add(base);
    }
    Some(max)
}

/// Decodes `out.len()` values of `width` bits starting at stream bit `bit` of a
/// byte stream (stream bit `t` is bit `t % 8` of byte `t / 8`: the same order as
/// the word stream's), for streams that are not whole words — a range of a V-Part
/// edge file. `None` when `bytes` is too short to hold them.
pub fn unpack_bytes(bytes: &[u8], bit: u64, width: u32, out: &mut [u32]) -> Option<()> {
    let end_bit = bit + out.len() as u64 * width as u64;
    if end_bit.div_ceil(8) > bytes.len() as u64 {
        return None;
    }
    let (done, _) = unpack_head(bytes, bit, width, 0, out);
    let mask = width_mask(width);
    let mut p = bit + done as u64 * width as u64;
    for o in out[done..].iter_mut() {
        // The last values: fewer than 8 bytes from their first to the end.
        let at = (p / 8) as usize;
        let mut t = [0u8; 8];
        let rest = &bytes[at..];
        let n = rest.len().min(8);
        t[..n].copy_from_slice(&rest[..n]);
        *o = ((u64::from_le_bytes(t) >> (p % 8)) & mask) as u32;
        p += width as u64;
    }
    Some(())
}

fn width_mask(width: u32) -> u64 {
    if width == 32 {
        u32::MAX as u64
    } else {
        (1u64 << width) - 1
    }
}

/// Decodes the leading values of `out` whose bytes can be loaded whole: groups
/// of 8 with AVX2 (when `bit` is on a byte and `width <= 24`), then one
/// unaligned 8-byte load per value while it stays inside `bytes`. Returns (values
/// decoded, their largest before `base`).
fn unpack_head(bytes: &[u8], bit: u64, width: u32, base: u32, out: &mut [u32]) -> (usize, u32) {
    let mask = width_mask(width);
    let mut max = 0u32;
    let mut done = 0usize;
    let mut bit = bit;
    #[cfg(target_arch = "x86_64")]
    if width <= 24 && bit.is_multiple_of(8) && std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: AVX2 is present (checked just above).
        let (n, m) = unsafe { simd::unpack_groups(bytes, bit / 8, width, base, out) };
        max = m;
        done = n;
        bit += n as u64 * width as u64;
    }
    let out = &mut out[done..];
    // Values whose 8-byte window [p / 8, p / 8 + 8) lies inside `bytes` are read
    // with one unaligned load each (independent of each other, so the loop
    // pipelines); the caller decodes the last few.
    let fast = if bytes.len() >= 8 && (bytes.len() as u64 - 8) * 8 >= bit {
        (((bytes.len() as u64 - 8) * 8 - bit) / width as u64 + 1).min(out.len() as u64) as usize
    } else {
        0
    };
    let ptr = bytes.as_ptr();
    let mut p = bit;
    for o in out[..fast].iter_mut() {
        // SAFETY: `p / 8 + 8 <= bytes.len()` for every value counted in `fast`
        // (p grows by `width` per value and `fast` stops at the last p with
        // p / 8 <= bytes.len() - 8), so the 8-byte read is inside `bytes`;
        // read_unaligned allows any alignment.
        let x = u64::from_le(unsafe { ptr.add((p >> 3) as usize).cast::<u64>().read_unaligned() });
        let v = ((x >> (p & 7)) & mask) as u32;
        max = max.max(v);
        *o = v.wrapping_add(base);
        p += width as u64;
    }
    (done + fast, max)
}

#[cfg(target_arch = "x86_64")]
mod simd {
    use std::arch::x86_64::*;

    /// Decodes whole groups of 8 values of `width` (<= 24) bits starting at byte
    /// `at` of `bytes` (8 values are exactly `width` bytes), as long as a group's
    /// two 16-byte loads stay inside `bytes`. Returns (values decoded, their
    /// largest value before `base`).
    ///
    /// Each 128-bit lane takes four values: lane 0 from byte `g`, lane 1 from byte
    /// `g + width / 2` (its first value then starts 0 or 4 bits in). A byte shuffle
    /// puts value k's four bytes (it spans at most 4: shift <= 7, width <= 24) in
    /// dword k, a per-lane variable shift and a mask finish it.
    ///
    /// # Safety
    /// The CPU must support AVX2.
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn unpack_groups(
        bytes: &[u8],
        at: u64,
        width: u32,
        base: u32,
        out: &mut [u32],
    ) -> (usize, u32) {
        let w = width as usize;
        let half = w / 2;
        let odd = (4 * w) % 8; // lane 1's first value's bit offset: 0 or 4
        let mut shuf = [0u8; 32];
        let mut shift = [0u32; 8];
        for k in 0..8 {
            let (lane, bitpos) = if k < 4 {
                (0, k * w)
            } else {
                (1, (k - 4) * w + odd)
            };
            for b in 0..4 {
                shuf[16 * lane + 4 * (k % 4) + b] = (bitpos / 8 + b) as u8;
            }
            shift[k] = (bitpos % 8) as u32;
        }
        // SAFETY (loads below): `shuf` and `shift` are 32-byte arrays read unaligned.
        let shuf = unsafe { _mm256_loadu_si256(shuf.as_ptr().cast()) };
        let shift = unsafe { _mm256_loadu_si256(shift.as_ptr().cast()) };
        let mask = _mm256_set1_epi32(((1u64 << width) - 1) as i32);
        let basev = _mm256_set1_epi32(base as i32);
        let mut maxv = _mm256_setzero_si256();
        let at = at as usize;
        // Group g reads bytes [at + g*w, at + g*w + half + 16).
        let groups = if bytes.len() >= at + half + 16 {
            ((bytes.len() - at - half - 16) / w + 1).min(out.len() / 8)
        } else {
            0
        };
        let src = bytes.as_ptr();
        let dst = out.as_mut_ptr();
        for g in 0..groups {
            let p = at + g * w;
            // SAFETY: p + half + 16 <= bytes.len() for g < groups (above), so both
            // 16-byte loads are inside `bytes`; the store writes out[8g..8g + 8],
            // inside `out` as groups <= out.len() / 8.
            unsafe {
                let lo = _mm_loadu_si128(src.add(p).cast());
                let hi = _mm_loadu_si128(src.add(p + half).cast());
                let v = _mm256_set_m128i(hi, lo);
                let v = _mm256_shuffle_epi8(v, shuf);
                let v = _mm256_and_si256(_mm256_srlv_epi32(v, shift), mask);
                maxv = _mm256_max_epu32(maxv, v);
                _mm256_storeu_si256(dst.add(8 * g).cast(), _mm256_add_epi32(v, basev));
            }
        }
        let mut lanes = [0u32; 8];
        // SAFETY: `lanes` is 32 bytes.
        unsafe { _mm256_storeu_si256(lanes.as_mut_ptr().cast(), maxv) };
        (8 * groups, lanes.into_iter().max().unwrap_or(0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Packs `vals` (each `< 2^width`) as a whole section: `packed_words(len, width)`
    /// words appended to `out`.
    fn pack_into(vals: impl IntoIterator<Item = u32>, width: u32, out: &mut Vec<u32>) {
        let mut p = BitPacker::new(width);
        for v in vals {
            p.push(v, out);
        }
        p.finish(out);
    }

    #[test]
    fn widths_are_the_bits_of_the_largest_value() {
        assert_eq!(bits_for(0), 1);
        assert_eq!(bits_for(1), 1);
        assert_eq!(bits_for(2), 2);
        assert_eq!(bits_for(65535), 16);
        assert_eq!(bits_for(65536), 17);
        assert_eq!(bits_for(u32::MAX as u64), 32);
        assert_eq!(id_bits(1), 1);
        assert_eq!(id_bits(65536), 16);
        assert_eq!(id_bits(131072), 17);
        assert_eq!(id_bits(131073), 18);
        assert_eq!(packed_words(0, 17), 0);
        assert_eq!(packed_words(1, 17), 1);
        assert_eq!(packed_words(2, 17), 2);
        assert_eq!(packed_words(32, 17), 17);
    }

    #[test]
    fn a_known_packing_is_laid_down_lsb_first() {
        let mut out = Vec::new();
        pack_into([1, 2, 3], 3, &mut out);
        // 001 | 010 | 011 -> bits 0..9 = 1 + (2 << 3) + (3 << 6)
        assert_eq!(out, vec![1 + (2 << 3) + (3 << 6)]);
        let mut out = Vec::new();
        pack_into([u32::MAX, 7], 32, &mut out);
        assert_eq!(out, vec![u32::MAX, 7]);
        let mut out = Vec::new();
        pack_into([0x1ffff, 0x1ffff], 17, &mut out);
        assert_eq!(out, vec![u32::MAX, 3]);
    }

    #[test]
    fn short_words_are_refused() {
        let mut out = Vec::new();
        pack_into([5, 6, 7], 17, &mut out);
        let mut dec = [0u32; 3];
        assert_eq!(unpack_into(&out[..1], 0, 17, 0, &mut dec), None);
        assert_eq!(unpack_into(&out, 0, 17, 10, &mut dec), Some(7));
        assert_eq!(dec, [15, 16, 17]);
    }

    proptest! {
        #[test]
        fn every_slice_decodes_to_what_was_packed(
            width in 1u32..=32,
            raw in proptest::collection::vec(any::<u32>(), 0..600),
            cut in any::<prop::sample::Index>(),
            len in any::<prop::sample::Index>(),
            base in 0u32..1000,
        ) {
            let mask = if width == 32 { u32::MAX } else { (1u32 << width) - 1 };
            let vals: Vec<u32> = raw.iter().map(|v| v & mask).collect();
            let mut words = Vec::new();
            pack_into(vals.iter().copied(), width, &mut words);
            prop_assert_eq!(words.len() as u64, packed_words(vals.len() as u64, width));
            // A streaming packer that flushes mid-way gives the same words.
            let mut p = BitPacker::new(width);
            let mut streamed = Vec::new();
            for &v in &vals {
                p.push(v, &mut streamed);
            }
            p.finish(&mut streamed);
            prop_assert_eq!(&streamed, &words);
            // The whole section (the vectorised path where the CPU has it).
            let mut all = vec![0u32; vals.len()];
            let top = unpack_into(&words, 0, width, base, &mut all).unwrap();
            let want_all: Vec<u32> = vals.iter().map(|v| v.wrapping_add(base)).collect();
            prop_assert_eq!(&all, &want_all);
            prop_assert_eq!(top, vals.iter().copied().max().unwrap_or(0));
            if vals.is_empty() {
                return Ok(());
            }
            let a = cut.index(vals.len());
            let n = len.index(vals.len() - a + 1);
            let mut dec = vec![0u32; n];
            let max = unpack_into(&words, a as u64, width, base, &mut dec).unwrap();
            let want: Vec<u32> = vals[a..a + n].iter().map(|v| v.wrapping_add(base)).collect();
            prop_assert_eq!(&dec, &want);
            prop_assert_eq!(max, vals[a..a + n].iter().copied().max().unwrap_or(0));
            // The same values from a slice that starts at their first word.
            let bit = a as u64 * width as u64;
            let w0 = (bit / 32) as usize;
            let mut again = vec![0u32; n];
            unpack_at(&words[w0..], bit - 32 * w0 as u64, width, base, &mut again).unwrap();
            prop_assert_eq!(again, want);
            // From a byte stream holding exactly their bytes (no whole words).
            let bytes: &[u8] = bytemuck::cast_slice(&words);
            let (b0, b1) = (bit / 8, (bit + n as u64 * width as u64).div_ceil(8));
            let mut fromb = vec![0u32; n];
            let part = &bytes[b0 as usize..b1 as usize];
            unpack_bytes(part, bit % 8, width, &mut fromb).unwrap();
            prop_assert_eq!(&fromb, &vals[a..a + n]);
            if n > 0 {
                // One byte short is refused.
                let short = &part[..part.len() - 1];
                prop_assert!(unpack_bytes(short, bit % 8, width, &mut fromb).is_none());
            }
        }
    }
}
