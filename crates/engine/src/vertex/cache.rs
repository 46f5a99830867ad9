//! The engine-managed page cache (CLOCK) over the CSR target files, keyed by
//! (direction, page).

use super::*;

/// A tiny multiplicative hasher for page keys (u64).
#[derive(Default)]
pub(super) struct KeyHasher(u64);
impl Hasher for KeyHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 ^ b as u64).wrapping_mul(0x100000001b3);
        }
    }
    fn write_u64(&mut self, x: u64) {
        self.0 = (x ^ (x >> 29)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}
pub(super) type KeyMap = HashMap<u64, u32, BuildHasherDefault<KeyHasher>>;

pub(super) fn key(dir: usize, page: u64) -> u64 {
    ((dir as u64) << 48) | page
}

/// The page frames with CLOCK replacement and per-frame touched-unit bitmaps.
pub(super) struct PageCache {
    pub(super) page: usize,
    pub(super) frame_bytes: usize,
    pub(super) data: AlignedBuf,
    pub(super) keys: Vec<u64>,
    pub(super) refbit: Vec<bool>,
    pub(super) touched: Vec<u64>,
    pub(super) words: usize,
    pub(super) map: KeyMap,
    pub(super) hand: usize,
    pub(super) util_sum: f64,
    pub(super) util_pages: u64,
}

pub(super) const EMPTY: u64 = u64::MAX;

impl PageCache {
    pub(super) fn new(page: usize, frame_bytes: usize, frames: usize) -> PageCache {
        let words = (page / 64).div_ceil(64);
        PageCache {
            page,
            frame_bytes,
            data: AlignedBuf::new((frames * frame_bytes).max(1)),
            keys: vec![EMPTY; frames],
            refbit: vec![false; frames],
            touched: vec![0; frames * words],
            words,
            map: KeyMap::default(),
            hand: 0,
            util_sum: 0.0,
            util_pages: 0,
        }
    }
    pub(super) fn frames(&self) -> usize {
        self.keys.len()
    }
    pub(super) fn lookup(&mut self, k: u64) -> Option<usize> {
        let f = *self.map.get(&k)? as usize;
        self.refbit[f] = true;
        Some(f)
    }
    pub(super) fn frame(&self, f: usize) -> &[u8] {
        &self.data.as_slice()[f * self.frame_bytes..(f + 1) * self.frame_bytes]
    }
    pub(super) fn units_of(&self, f: usize) -> u32 {
        self.touched[f * self.words..(f + 1) * self.words]
            .iter()
            .map(|w| w.count_ones())
            .sum()
    }
    pub(super) fn account(&mut self, units: u32) {
        self.util_sum += units as f64 / (self.page / 64) as f64;
        self.util_pages += 1;
    }
    /// Marks bytes `a..b` of frame `f`'s page as touched.
    pub(super) fn touch(&mut self, f: usize, a: usize, b: usize) {
        mark(
            &mut self.touched[f * self.words..(f + 1) * self.words],
            a,
            b,
        );
    }
    /// Puts a page in a frame (evicting by CLOCK); returns the frame, or `None`
    /// when there are no frames (the page's utilization is then taken at once).
    pub(super) fn insert(
        &mut self,
        k: u64,
        targets: &[u8],
        weights: Option<&[u8]>,
        used: &[u64],
    ) -> Option<usize> {
        if self.frames() == 0 {
            let u = used.iter().map(|w| w.count_ones()).sum();
            self.account(u);
            return None;
        }
        let f = loop {
            let h = self.hand;
            self.hand = (self.hand + 1) % self.frames();
            if self.keys[h] == EMPTY {
                break h;
            }
            if self.refbit[h] {
                self.refbit[h] = false;
            } else {
                break h;
            }
        };
        if self.keys[f] != EMPTY {
            let u = self.units_of(f);
            self.account(u);
            self.map.remove(&self.keys[f]);
        }
        self.keys[f] = k;
        self.refbit[f] = false;
        self.map.insert(k, f as u32);
        self.touched[f * self.words..(f + 1) * self.words].copy_from_slice(used);
        let page = self.page;
        let fb = self.frame_bytes;
        let dst = &mut self.data.as_mut_slice()[f * fb..(f + 1) * fb];
        dst[..targets.len()].copy_from_slice(targets);
        if let Some(w) = weights {
            dst[page..page + w.len()].copy_from_slice(w);
        }
        Some(f)
    }
    /// Utilization of the pages still resident, added at the end of a run.
    pub(super) fn account_resident(&mut self) {
        for f in 0..self.frames() {
            if self.keys[f] != EMPTY {
                let u = self.units_of(f);
                self.account(u);
            }
        }
    }
}
