//! Counter-based randomness: every random value is a pure function of (seed,
//! stream, counter), so generators give the same bytes whatever the thread count
//! and chunking. [`Feistel`] is a keyed bijection on `[0, n)` used to permute
//! vertex labels and shuffle edge lists without holding them in memory.

/// SplitMix64 finaliser: a high-quality 64-bit mixer.
pub fn mix64(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The random u64 number `counter` of stream `stream` under `seed`.
pub fn hash3(seed: u64, stream: u64, counter: u64) -> u64 {
    mix64(mix64(seed ^ mix64(stream.wrapping_add(0x632B_E59B_D9B4_E019))) ^ counter)
}

/// A uniform value in [0, 1) from 53 random bits.
pub fn unit_f64(r: u64) -> f64 {
    (r >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
}

/// A uniform weight in (0, 1] with 24 bits of resolution (exact in f32).
pub fn weight(r: u64) -> f32 {
    ((r >> 40) + 1) as f32 / (1u32 << 24) as f32
}

/// A uniform integer in [0, n) (multiply-high; bias below 2^-32 for n < 2^32).
pub fn below(r: u64, n: u64) -> u64 {
    ((r as u128 * n as u128) >> 64) as u64
}

/// A keyed pseudo-random permutation of `[0, n)`: a 4-round balanced Feistel
/// network on the smallest even-bit power-of-two domain holding `n`, with
/// cycle-walking to stay inside `[0, n)`.
#[derive(Debug, Clone)]
pub struct Feistel {
    n: u64,
    half: u32,
    keys: [u64; 4],
}

impl Feistel {
    pub fn new(n: u64, seed: u64, stream: u64) -> Feistel {
        let bits = 64 - n.saturating_sub(1).leading_zeros();
        let half = bits.div_ceil(2).max(1);
        let keys = [0, 1, 2, 3].map(|r| hash3(seed, stream, r));
        Feistel { n, half, keys }
    }

    fn round(&self, x: u64) -> u64 {
        let mask = (1u64 << self.half) - 1;
        let (mut l, mut r) = (x >> self.half, x & mask);
        for k in self.keys {
            let f = mix64(r ^ k) & mask;
            (l, r) = (r, l ^ f);
        }
        (l << self.half) | r
    }

    /// The image of `x` (< n).
    pub fn apply(&self, x: u64) -> u64 {
        debug_assert!(x < self.n);
        let mut y = self.round(x);
        while y >= self.n {
            y = self.round(y);
        }
        y
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn feistel_is_a_permutation() {
        for n in [1u64, 2, 3, 7, 64, 1000, 4097] {
            let f = Feistel::new(n, 42, 7);
            let mut seen = vec![false; n as usize];
            for x in 0..n {
                let y = f.apply(x);
                assert!(y < n && !seen[y as usize], "n={n} x={x} y={y}");
                seen[y as usize] = true;
            }
        }
    }

    #[test]
    fn weights_are_in_half_open_unit_interval() {
        assert_eq!(weight(u64::MAX), 1.0);
        assert!(weight(0) > 0.0);
    }
}
