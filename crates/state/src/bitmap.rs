//! An atomic bitmap over vertex ids (the active set of CLIP §4.3).

use rayon::prelude::*;
use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// One bit per vertex, settable from many threads.
pub struct AtomicBitmap {
    words: Vec<AtomicU64>,
    len: usize,
}

impl AtomicBitmap {
    /// `len` bits, all clear.
    pub fn new(len: usize) -> AtomicBitmap {
        AtomicBitmap {
            words: (0..len.div_ceil(64)).map(|_| AtomicU64::new(0)).collect(),
            len,
        }
    }
    pub fn len(&self) -> usize {
        self.len
    }
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    /// Bytes of memory held.
    pub fn bytes(&self) -> u64 {
        self.words.len() as u64 * 8
    }
    #[inline]
    pub fn get(&self, i: u32) -> bool {
        self.words[(i >> 6) as usize].load(Relaxed) & (1 << (i & 63)) != 0
    }
    /// Sets bit `i`; true when it was clear before.
    #[inline]
    pub fn set(&self, i: u32) -> bool {
        let m = 1u64 << (i & 63);
        self.words[(i >> 6) as usize].fetch_or(m, Relaxed) & m == 0
    }
    #[inline]
    pub fn clear(&self, i: u32) {
        self.words[(i >> 6) as usize].fetch_and(!(1u64 << (i & 63)), Relaxed);
    }
    /// Sets every bit.
    pub fn set_all(&self) {
        self.words
            .par_iter()
            .for_each(|w| w.store(u64::MAX, Relaxed));
        self.trim();
    }
    fn trim(&self) {
        if !self.len.is_multiple_of(64) {
            let last = self.words.last().unwrap();
            last.fetch_and((1u64 << (self.len % 64)) - 1, Relaxed);
        }
    }
    pub fn clear_all(&self) {
        self.words.par_iter().for_each(|w| w.store(0, Relaxed));
    }
    /// Sets exactly the bits `i` for which `f(i)` holds and clears the
    /// others, a word at a time (one plain store a word, no atomic
    /// read-modify-write a bit), in parallel on the current rayon pool.
    pub fn fill_where<F: Fn(u32) -> bool + Sync>(&self, f: F) {
        let n = self.len as u64;
        self.words.par_chunks(64).enumerate().for_each(|(c, ws)| {
            for (j, w) in ws.iter().enumerate() {
                let lo = (c as u64 * 64 + j as u64) * 64;
                let mut x = 0u64;
                for v in lo..(lo + 64).min(n) {
                    x |= (f(v as u32) as u64) << (v - lo);
                }
                w.store(x, Relaxed);
            }
        });
    }
    /// Clears the bits of `r`.
    pub fn clear_range(&self, r: Range<u32>) {
        for i in self.word_span(&r) {
            let m = range_mask(i, &r);
            self.words[i].fetch_and(!m, Relaxed);
        }
    }
    fn word_span(&self, r: &Range<u32>) -> Range<usize> {
        if r.start >= r.end {
            return 0..0;
        }
        (r.start as usize >> 6)..((r.end as usize - 1) >> 6) + 1
    }
    /// True when some bit in `r` is set.
    pub fn any_in(&self, r: Range<u32>) -> bool {
        self.word_span(&r)
            .any(|i| self.words[i].load(Relaxed) & range_mask(i, &r) != 0)
    }
    /// Number of set bits in `r`.
    pub fn count_in(&self, r: Range<u32>) -> u64 {
        self.word_span(&r)
            .map(|i| (self.words[i].load(Relaxed) & range_mask(i, &r)).count_ones() as u64)
            .sum()
    }
    /// Number of set bits.
    pub fn count(&self) -> u64 {
        self.words
            .par_iter()
            .map(|w| w.load(Relaxed).count_ones() as u64)
            .sum()
    }
    /// True when some bit is set.
    pub fn any(&self) -> bool {
        self.words.par_iter().any(|w| w.load(Relaxed) != 0)
    }
    /// Exchanges the contents with `other` (same length).
    pub fn swap(&mut self, other: &mut AtomicBitmap) {
        assert_eq!(self.len, other.len);
        std::mem::swap(&mut self.words, &mut other.words);
    }
    /// Sets every bit that is set in `other` (same length), a word at a time.
    pub fn or_from(&self, other: &AtomicBitmap) {
        assert_eq!(self.len, other.len);
        self.words
            .par_iter()
            .zip(other.words.par_iter())
            .for_each(|(w, o)| {
                let x = o.load(Relaxed);
                if x != 0 {
                    w.fetch_or(x, Relaxed);
                }
            });
    }
    /// Clears the bits of `r` that are set in `other` (same length), a word at a
    /// time; returns how many were cleared.
    pub fn clear_where(&self, other: &AtomicBitmap, r: Range<u32>) -> u64 {
        assert_eq!(self.len, other.len);
        let mut cleared = 0;
        for i in self.word_span(&r) {
            let m = other.words[i].load(Relaxed) & range_mask(i, &r);
            if m != 0 {
                cleared += (self.words[i].fetch_and(!m, Relaxed) & m).count_ones() as u64;
            }
        }
        cleared
    }
    /// Moves the bits of `r` into `other` (same length): each set bit of `r` here
    /// is cleared here and set in `other`. Returns how many moved bits `other` had
    /// already and how many it gains.
    pub fn move_into(&self, other: &AtomicBitmap, r: Range<u32>) -> (u64, u64) {
        assert_eq!(self.len, other.len);
        let (mut had, mut gained) = (0u64, 0u64);
        for i in self.word_span(&r) {
            let mask = range_mask(i, &r);
            let m = self.words[i].fetch_and(!mask, Relaxed) & mask;
            if m != 0 {
                let before = other.words[i].fetch_or(m, Relaxed);
                had += (before & m).count_ones() as u64;
                gained += (!before & m).count_ones() as u64;
            }
        }
        (had, gained)
    }
    /// The set bits in `r`, ascending.
    pub fn ones_in(&self, r: Range<u32>) -> impl Iterator<Item = u32> + '_ {
        self.bits_in(r, true)
    }
    /// The bits in `r` equal to `set` (the set or the clear ones), ascending.
    pub fn bits_in(&self, r: Range<u32>, set: bool) -> impl Iterator<Item = u32> + '_ {
        let span = self.word_span(&r);
        let flip = if set { 0 } else { !0u64 };
        span.flat_map(move |i| {
            word_ones(i, (self.words[i].load(Relaxed) ^ flip) & range_mask(i, &r))
        })
    }
    /// The set bits, ascending.
    pub fn ones(&self) -> impl Iterator<Item = u32> + '_ {
        self.words
            .iter()
            .enumerate()
            .flat_map(|(i, w)| word_ones(i, w.load(Relaxed)))
    }
}

/// The ids of the set bits of `x`, word `i` of a bitmap, ascending.
fn word_ones(i: usize, mut x: u64) -> impl Iterator<Item = u32> {
    std::iter::from_fn(move || {
        if x == 0 {
            return None;
        }
        let b = x.trailing_zeros();
        x &= x - 1;
        Some((i as u32) * 64 + b)
    })
}

fn range_mask(word: usize, r: &Range<u32>) -> u64 {
    let lo = (word as u64) * 64;
    let a = (r.start as u64).max(lo) - lo;
    let b = (r.end as u64).min(lo + 64) - lo;
    if b <= a {
        return 0;
    }
    let hi = if b == 64 { u64::MAX } else { (1u64 << b) - 1 };
    hi & !((1u64 << a) - 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two bitmaps of 300 bits: every third set, and every second set.
    fn thirds_and_halves() -> (AtomicBitmap, AtomicBitmap) {
        let (a, b) = (AtomicBitmap::new(300), AtomicBitmap::new(300));
        for i in (0..300).step_by(3) {
            a.set(i);
        }
        for i in (0..300).step_by(2) {
            b.set(i);
        }
        (a, b)
    }

    #[test]
    fn fill_where_sets_exactly_the_chosen_bits() {
        for len in [0usize, 1, 63, 64, 65, 4096 + 7, 300_001] {
            let b = AtomicBitmap::new(len);
            b.set_all();
            b.fill_where(|v| v % 3 == 1 || v == 64);
            let want: Vec<u32> = (0..len as u32).filter(|v| v % 3 == 1 || *v == 64).collect();
            assert_eq!(b.ones().collect::<Vec<_>>(), want, "len {len}");
            assert_eq!(b.count(), want.len() as u64);
        }
    }
    #[test]
    fn clear_where_clears_only_shared_bits_in_range() {
        let (a, b) = thirds_and_halves();
        let r = 5..250;
        let want: Vec<u32> = (0..300)
            .filter(|i| i % 3 == 0 && !(r.contains(i) && i % 2 == 0))
            .collect();
        let shared = r.clone().filter(|i| i % 6 == 0).count() as u64;
        assert_eq!(a.clear_where(&b, r.clone()), shared);
        assert_eq!(a.ones().collect::<Vec<_>>(), want);
        assert_eq!(a.clear_where(&b, r), 0);
        assert_eq!(b.count(), 150);
    }

    #[test]
    fn move_into_moves_only_the_range() {
        let (a, b) = thirds_and_halves();
        let r = 5..250;
        let had = r.clone().filter(|i| i % 6 == 0).count() as u64;
        let gained = r.clone().filter(|i| i % 3 == 0 && i % 2 != 0).count() as u64;
        assert_eq!(a.move_into(&b, r.clone()), (had, gained));
        let left: Vec<u32> = (0..300).filter(|i| i % 3 == 0 && !r.contains(i)).collect();
        assert_eq!(a.ones().collect::<Vec<_>>(), left);
        let want: Vec<u32> = (0..300)
            .filter(|i| i % 2 == 0 || (i % 3 == 0 && r.contains(i)))
            .collect();
        assert_eq!(b.ones().collect::<Vec<_>>(), want);
        assert_eq!(a.move_into(&b, r), (0, 0));
    }

    #[test]
    fn ranges_counts_and_swap() {
        let b = AtomicBitmap::new(200);
        assert!(!b.any());
        assert!(b.set(3));
        assert!(!b.set(3));
        b.set(64);
        b.set(199);
        assert_eq!(b.count(), 3);
        assert!(b.any_in(0..4));
        assert!(!b.any_in(4..64));
        assert!(b.any_in(64..65));
        assert_eq!(b.count_in(3..200), 3);
        assert_eq!(b.count_in(4..199), 1);
        assert_eq!(b.ones().collect::<Vec<_>>(), vec![3, 64, 199]);
        b.clear_range(0..65);
        assert_eq!(b.ones().collect::<Vec<_>>(), vec![199]);
        b.set_all();
        assert_eq!(b.count(), 200);
        let mut c = AtomicBitmap::new(200);
        let mut b = b;
        b.swap(&mut c);
        assert_eq!(b.count(), 0);
        assert_eq!(c.count(), 200);
        c.clear(5);
        assert!(!c.get(5) && c.get(6));
    }

    #[test]
    fn ones_in_and_or_from_match_bit_by_bit() {
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        for len in [1usize, 63, 64, 65, 200, 1000] {
            let (a, b) = (AtomicBitmap::new(len), AtomicBitmap::new(len));
            for i in 0..len as u32 {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                if x.is_multiple_of(3) {
                    a.set(i);
                }
                if x.is_multiple_of(5) {
                    b.set(i);
                }
            }
            for (lo, hi) in [
                (0, len),
                (0, 0),
                (1, len),
                (len / 3, len / 2),
                (len - 1, len),
            ] {
                let (lo, hi) = (lo as u32, hi as u32);
                let want: Vec<u32> = (lo..hi).filter(|&i| a.get(i)).collect();
                assert_eq!(
                    a.ones_in(lo..hi).collect::<Vec<_>>(),
                    want,
                    "{len} {lo}..{hi}"
                );
                let clear: Vec<u32> = (lo..hi).filter(|&i| !a.get(i)).collect();
                assert_eq!(
                    a.bits_in(lo..hi, false).collect::<Vec<_>>(),
                    clear,
                    "{len} {lo}..{hi}"
                );
            }
            let want: Vec<u32> = (0..len as u32).filter(|&i| a.get(i) || b.get(i)).collect();
            a.or_from(&b);
            assert_eq!(a.ones().collect::<Vec<_>>(), want, "{len}");
        }
    }
}
