//! Frontiers: the active vertices of an iteration, sparse (a sorted list) or dense
//! (a bitmap), and their builder.

/// The active vertices of an iteration.
#[derive(Debug, Clone)]
pub enum Frontier {
    /// Ascending, distinct ids.
    Sparse(Vec<u32>),
    /// One bit per vertex, and how many are set.
    Dense(Vec<u64>, usize),
}

impl Frontier {
    pub fn single(v: u32) -> Frontier {
        Frontier::Sparse(vec![v])
    }
    /// From any list of ids (sorted and deduplicated here).
    pub fn from_list(mut v: Vec<u32>) -> Frontier {
        v.sort_unstable();
        v.dedup();
        Frontier::Sparse(v)
    }
    /// Every vertex of `0..n`.
    pub fn all(n: usize) -> Frontier {
        let mut b = vec![!0u64; n.div_ceil(64)];
        if !n.is_multiple_of(64) {
            if let Some(l) = b.last_mut() {
                *l = (1u64 << (n % 64)) - 1;
            }
        }
        Frontier::Dense(b, n)
    }
    pub fn len(&self) -> usize {
        match self {
            Frontier::Sparse(v) => v.len(),
            Frontier::Dense(_, c) => *c,
        }
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// The smallest active vertex.
    pub fn first(&self) -> Option<u32> {
        match self {
            Frontier::Sparse(v) => v.first().copied(),
            Frontier::Dense(b, _) => b
                .iter()
                .position(|&w| w != 0)
                .map(|i| (i * 64) as u32 + b[i].trailing_zeros()),
        }
    }
    /// Calls `f` on each active vertex in ascending order.
    pub fn for_each(&self, f: impl FnMut(u32)) {
        self.iter().for_each(f)
    }
    /// The active vertices in ascending order.
    pub fn iter(&self) -> FrontierIter<'_> {
        FrontierIter {
            f: self,
            pos: 0,
            bits: match self {
                Frontier::Dense(b, _) => b.first().copied().unwrap_or(0),
                Frontier::Sparse(_) => 0,
            },
        }
    }
    /// The active vertices as a sorted list.
    pub fn to_vec(&self) -> Vec<u32> {
        self.iter().collect()
    }
}

/// Ascending iteration over a [`Frontier`] without copying it.
pub struct FrontierIter<'a> {
    pub(super) f: &'a Frontier,
    /// Sparse: the next index; dense: the current word.
    pub(super) pos: usize,
    /// Dense: the current word's bits not yet returned.
    pub(super) bits: u64,
}

impl Iterator for FrontierIter<'_> {
    type Item = u32;
    fn next(&mut self) -> Option<u32> {
        match self.f {
            Frontier::Sparse(v) => {
                let x = v.get(self.pos).copied();
                self.pos += 1;
                x
            }
            Frontier::Dense(b, _) => loop {
                if self.bits != 0 {
                    let t = self.bits.trailing_zeros();
                    self.bits &= self.bits - 1;
                    return Some((self.pos * 64) as u32 + t);
                }
                self.pos += 1;
                self.bits = *b.get(self.pos)?;
            },
        }
    }
}

/// Builds the next frontier: a bitmap deduplicates, a list is kept while the
/// frontier is small (under 1/64 of the vertices), then dropped for the dense form.
pub struct FrontierBuilder {
    pub(super) bits: Vec<u64>,
    pub(super) list: Vec<u32>,
    pub(super) count: usize,
    pub(super) sparse_limit: usize,
}

impl FrontierBuilder {
    pub fn new(n: usize) -> FrontierBuilder {
        FrontierBuilder {
            bits: vec![0; n.div_ceil(64)],
            list: Vec::new(),
            count: 0,
            sparse_limit: (n / 64).max(64),
        }
    }
    /// Adds `v`; true when it was not there yet.
    #[inline]
    pub fn insert(&mut self, v: u32) -> bool {
        let (w, m) = ((v / 64) as usize, 1u64 << (v % 64));
        if self.bits[w] & m != 0 {
            return false;
        }
        self.bits[w] |= m;
        self.count += 1;
        if self.count <= self.sparse_limit {
            self.list.push(v);
        } else if !self.list.is_empty() {
            self.list = Vec::new();
        }
        true
    }
    pub fn contains(&self, v: u32) -> bool {
        self.bits[(v / 64) as usize] & (1u64 << (v % 64)) != 0
    }
    pub fn len(&self) -> usize {
        self.count
    }
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }
    /// The frontier, sparse or dense as its size suggests.
    pub fn finish(mut self) -> Frontier {
        if self.count <= self.sparse_limit {
            self.list.sort_unstable();
            Frontier::Sparse(self.list)
        } else {
            Frontier::Dense(self.bits, self.count)
        }
    }
}
