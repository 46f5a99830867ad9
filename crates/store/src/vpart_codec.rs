//! The packed edge records of a V-Part layout's `vpart.Q.edges` files.
//!
//! # Design
//! A partition's edges are read by the external engine on every pass (FAST'19
//! §4.2: the edge data of the active sources, streamed from the SSD), so their
//! bytes are most of what a run reads. A target is a *local* index into its
//! partition's destinations, so it needs only `target_bits = bits(largest
//! partition's destinations - 1)` bits, not 32 (the grid's local ids, CLIP
//! ATC'17 §4.1, do the same; see [`crate::codec`]). Edge `e` of a partition is
//! the record at stream bits `[e * R, (e + 1) * R)`, `R = target_bits` (+ 32 for
//! the f32 weight of a weighted store, after the target), stream bit `t` being bit
//! `t % 8` of byte `t / 8`: the grid codec's order (least significant bit first),
//! on a byte stream. The payload is `ceil(edges * R / 8)` bytes, its last byte
//! zero-padded.
//!
//! # Invariants
//! * Records are fixed width, so edge `e` is found without decoding those before
//!   it: the engine reads any range of edges (a window, an active source's run)
//!   as the bytes [`EdgeCodec::byte_range`] names and decodes each edge in place.
//! * A packed target is `< 2^target_bits`; a reader still checks every target
//!   against its partition's destinations (a damaged file that slips past its
//!   checksums cannot hand out an out-of-range index).

use crate::codec::bits_for;

/// Bits and layout of one edge record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EdgeCodec {
    target_bits: u32,
    weighted: bool,
}

impl EdgeCodec {
    /// Records of `target_bits`-bit targets (1..=32), with a weight when
    /// `weighted`.
    pub fn new(target_bits: u32, weighted: bool) -> EdgeCodec {
        assert!((1..=32).contains(&target_bits), "{target_bits} target bits");
        EdgeCodec {
            target_bits,
            weighted,
        }
    }
    /// The narrowest codec whose targets hold local indices below `max_dests`.
    pub fn for_dests(max_dests: u64, weighted: bool) -> EdgeCodec {
        EdgeCodec::new(bits_for(max_dests.saturating_sub(1)).min(32), weighted)
    }
    pub fn target_bits(&self) -> u32 {
        self.target_bits
    }
    pub fn weighted(&self) -> bool {
        self.weighted
    }
    /// Bits of one record.
    #[inline]
    pub fn record_bits(&self) -> u64 {
        self.target_bits as u64 + if self.weighted { 32 } else { 0 }
    }
    /// Payload bytes of `edges` records.
    pub fn payload_bytes(&self, edges: u64) -> u64 {
        (edges * self.record_bits()).div_ceil(8)
    }
    /// The payload bytes holding edges `a..b`, whole bytes around them.
    #[inline]
    pub fn byte_range(&self, a: u64, b: u64) -> (u64, u64) {
        let r = self.record_bits();
        ((a * r) / 8, (b * r).div_ceil(8))
    }
    /// Edge `e`'s record bit, counted from the first byte of the range that
    /// [`EdgeCodec::byte_range`] gives for edges from `first` on.
    #[inline]
    pub fn bit_in_range(&self, first: u64, e: u64) -> u64 {
        let r = self.record_bits();
        e * r - (first * r) / 8 * 8
    }
    /// The target of the record at bit `bit` of `bytes`.
    #[inline]
    pub fn target(&self, bytes: &[u8], bit: u64) -> u32 {
        field(bytes, bit, self.target_bits) as u32
    }
    /// The targets of `out.len()` consecutive records from bit `bit` of
    /// `bytes`, decoded in bulk (vectorised where the CPU allows) — for an
    /// unweighted codec, whose records are their targets alone; `None` for a
    /// weighted one or when `bytes` is too short.
    pub fn targets_into(&self, bytes: &[u8], bit: u64, out: &mut [u32]) -> Option<()> {
        if self.weighted {
            return None;
        }
        crate::codec::unpack_bytes(bytes, bit, self.target_bits, out)
    }
    /// The weight of the record at bit `bit` of `bytes` (1.0 when unweighted).
    #[inline]
    pub fn weight(&self, bytes: &[u8], bit: u64) -> f32 {
        if self.weighted {
            f32::from_bits(field(bytes, bit + self.target_bits as u64, 32) as u32)
        } else {
            1.0
        }
    }
}

/// The `width`-bit (<= 32) field at stream bit `bit` of `bytes`; bits past the
/// end read as zero.
#[inline]
fn field(bytes: &[u8], bit: u64, width: u32) -> u64 {
    let o = (bit / 8) as usize;
    let word = match bytes.get(o..o + 8) {
        Some(b) => u64::from_le_bytes(b.try_into().unwrap()),
        None => {
            // The last few bytes of a buffer: no 8-byte load fits.
            let mut t = [0u8; 8];
            let rest = bytes.get(o..).unwrap_or(&[]);
            t[..rest.len()].copy_from_slice(rest);
            u64::from_le_bytes(t)
        }
    };
    (word >> (bit % 8)) & ((1u64 << width) - 1)
}

/// Packs edge records into a byte stream.
#[derive(Debug, Clone)]
pub struct EdgePacker {
    codec: EdgeCodec,
    acc: u64,
    held: u32,
}

impl EdgePacker {
    pub fn new(codec: EdgeCodec) -> EdgePacker {
        EdgePacker {
            codec,
            acc: 0,
            held: 0,
        }
    }
    #[inline]
    fn push_bits(&mut self, v: u64, width: u32, out: &mut Vec<u8>) {
        debug_assert!(width <= 32 && v >> width == 0);
        self.acc |= v << self.held;
        self.held += width;
        while self.held >= 8 {
            out.push(self.acc as u8);
            self.acc >>= 8;
            self.held -= 8;
        }
    }
    /// Appends the record (target, weight) (the weight is dropped when the codec
    /// is unweighted); whole bytes go to `out`. `target` must be below
    /// `2^target_bits`.
    #[inline]
    pub fn push(&mut self, target: u32, weight: f32, out: &mut Vec<u8>) {
        self.push_bits(target as u64, self.codec.target_bits, out);
        if self.codec.weighted {
            self.push_bits(weight.to_bits() as u64, 32, out);
        }
    }
    /// Pushes the last, zero-padded, partial byte (if any); the packer is then
    /// empty.
    pub fn finish(&mut self, out: &mut Vec<u8>) {
        if self.held > 0 {
            out.push(self.acc as u8);
        }
        self.acc = 0;
        self.held = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn pack(codec: EdgeCodec, recs: &[(u32, f32)]) -> Vec<u8> {
        let mut p = EdgePacker::new(codec);
        let mut out = Vec::new();
        for &(t, w) in recs {
            p.push(t, w, &mut out);
        }
        p.finish(&mut out);
        out
    }

    #[test]
    fn a_known_packing_is_laid_down_lsb_first() {
        // 3-bit targets 5, 2, 7: bits 101 | 010 | 111 from bit 0 up.
        let c = EdgeCodec::new(3, false);
        let b = pack(c, &[(5, 1.0), (2, 1.0), (7, 1.0)]);
        assert_eq!(b, vec![0b11_010_101, 0b1]);
        assert_eq!(c.payload_bytes(3), 2);
        assert_eq!(c.byte_range(1, 3), (0, 2));
        assert_eq!(c.byte_range(3, 3), (1, 2));
    }

    #[test]
    fn widths_follow_the_largest_partition() {
        assert_eq!(EdgeCodec::for_dests(1, false).target_bits(), 1);
        assert_eq!(EdgeCodec::for_dests(2, false).target_bits(), 1);
        assert_eq!(EdgeCodec::for_dests(762_601, false).target_bits(), 20);
        assert_eq!(EdgeCodec::for_dests(1 << 20, false).target_bits(), 20);
        assert_eq!(EdgeCodec::for_dests((1 << 20) + 1, false).target_bits(), 21);
        assert_eq!(
            EdgeCodec::for_dests(u32::MAX as u64 + 1, true).target_bits(),
            32
        );
        assert_eq!(EdgeCodec::for_dests(1, true).record_bits(), 33);
    }

    proptest! {
        #[test]
        fn every_range_decodes_to_what_was_packed(
            bits in 1u32..=32,
            weighted in any::<bool>(),
            raw in prop::collection::vec((any::<u32>(), any::<u32>()), 0..200),
            cut in any::<(usize, usize)>(),
        ) {
            let c = EdgeCodec::new(bits, weighted);
            let mask = if bits == 32 { u32::MAX } else { (1 << bits) - 1 };
            let recs: Vec<(u32, f32)> =
                raw.iter().map(|&(t, w)| (t & mask, f32::from_bits(w))).collect();
            let b = pack(c, &recs);
            prop_assert_eq!(b.len() as u64, c.payload_bytes(recs.len() as u64));
            let n = recs.len() as u64;
            let (mut a, mut z) = (cut.0 as u64 % (n + 1), cut.1 as u64 % (n + 1));
            if a > z {
                std::mem::swap(&mut a, &mut z);
            }
            // Only the range's own bytes, as a reader holds them.
            let (x, y) = c.byte_range(a, z);
            let part = &b[x as usize..y as usize];
            if !weighted {
                let mut bulk = vec![0u32; (z - a) as usize];
                c.targets_into(part, c.bit_in_range(a, a), &mut bulk).unwrap();
                let want: Vec<u32> = recs[a as usize..z as usize].iter().map(|r| r.0).collect();
                prop_assert_eq!(bulk, want);
            }
            for e in a..z {
                let bit = c.bit_in_range(a, e);
                let (t, w) = recs[e as usize];
                prop_assert_eq!(c.target(part, bit), t);
                let got = c.weight(part, bit);
                if weighted {
                    prop_assert_eq!(got.to_bits(), w.to_bits());
                } else {
                    prop_assert_eq!(got, 1.0);
                }
            }
        }
    }
}
