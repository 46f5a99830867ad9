//! # outcore-gen — graph generators, streamed to disk (`outcore generate`)
//!
//! * `kronecker`: the Graph500 generator (A=0.57, B=0.19, C=0.19; edge factor 16):
//!   each edge picks one quadrant per level with the spec's conditional draws,
//!   vertex labels are permuted by a keyed bijection and the edge list is shuffled
//!   by another (position p holds edge `shuffle(p)`); self-loops and duplicates
//!   are kept, as Graph500 specifies.
//! * `grid`: an R x C lattice, both directions of each lattice edge (road-like,
//!   diameter R+C-2), weights shared by the two directions.
//! * `uniform`: Erdős–Rényi G(n, M), M directed edges with uniform endpoints.
//! * `path`: `i -> i+1`.
//!
//! Invariant: output bytes depend only on the parameters and the seed (see
//! [`crate::rng`]); edges are produced in parallel chunks and written in order, so
//! memory stays at a few chunks whatever the graph size.

pub mod rng;

use crate::rng::{below, hash3, unit_f64, weight, Feistel};
use outcore_io::{IoError, IoStats, OutFile};
use rayon::prelude::*;
use std::path::Path;
use std::sync::Arc;

/// Which graph to generate.
#[derive(Debug, Clone, PartialEq)]
pub enum GenKind {
    Kronecker { scale: u32, edge_factor: u64 },
    Grid { rows: u64, cols: u64 },
    Uniform { vertices: u64, edges: u64 },
    Path { vertices: u64 },
}

#[derive(Debug, Clone)]
pub struct GenOptions {
    pub kind: GenKind,
    pub seed: u64,
    pub weighted: bool,
    /// SNAP-style text instead of the binary edge list.
    pub text: bool,
}

#[derive(Debug, thiserror::Error)]
pub enum GenError {
    #[error(transparent)]
    Io(#[from] IoError),
    #[error("{0}")]
    Invalid(String),
}

#[derive(Debug, Clone, Copy)]
pub struct GenReport {
    pub vertices: u64,
    pub edges: u64,
    pub bytes: u64,
}

const CHUNK: u64 = 1 << 20;
const A: f64 = 0.57;
const B: f64 = 0.19;
const C: f64 = 0.19;

impl GenKind {
    pub fn vertices(&self) -> u64 {
        match *self {
            GenKind::Kronecker { scale, .. } => 1u64 << scale,
            GenKind::Grid { rows, cols } => rows * cols,
            GenKind::Uniform { vertices, .. } | GenKind::Path { vertices } => vertices,
        }
    }
    pub fn edges(&self) -> u64 {
        match *self {
            GenKind::Kronecker { scale, edge_factor } => edge_factor << scale,
            GenKind::Grid { rows, cols } => {
                2 * (rows * cols.saturating_sub(1) + cols * rows.saturating_sub(1))
            }
            GenKind::Uniform { edges, .. } => edges,
            GenKind::Path { vertices } => vertices.saturating_sub(1),
        }
    }
    fn validate(&self) -> Result<(), GenError> {
        let bad = |m: String| Err(GenError::Invalid(m));
        match *self {
            GenKind::Kronecker { scale, edge_factor } => {
                if scale == 0 || scale > 31 {
                    return bad(format!(
                        "--scale {scale}: must be between 1 and 31 (ids are u32)"
                    ));
                }
                if edge_factor == 0 {
                    return bad("--edge-factor must be at least 1".into());
                }
            }
            GenKind::Grid { rows, cols } => {
                if rows == 0 || cols == 0 {
                    return bad("--rows and --cols must be at least 1".into());
                }
            }
            GenKind::Uniform { vertices, .. } | GenKind::Path { vertices } => {
                if vertices == 0 {
                    return bad("--vertices must be at least 1".into());
                }
            }
        }
        if self.vertices() >= u32::MAX as u64 {
            return bad(format!(
                "{} vertices: at most {} are supported",
                self.vertices(),
                u32::MAX - 1
            ));
        }
        Ok(())
    }
}

/// Stream ids for the counter-based generator.
const S_EDGE: u64 = 1;
const S_WEIGHT: u64 = 2;
const S_LABEL: u64 = 3;
const S_SHUFFLE: u64 = 4;

struct Kron {
    scale: u32,
    seed: u64,
    labels: Feistel,
    shuffle: Feistel,
}

impl Kron {
    /// Edge number `k` before permutation, per the Graph500 reference: at each
    /// level, `ii = r1 > A+B`, `jj = r2 > (ii ? C/(1-A-B) : A/(A+B))`.
    fn edge(&self, k: u64) -> (u64, u64) {
        let ab = A + B;
        let c_norm = C / (1.0 - ab);
        let a_norm = A / ab;
        let (mut u, mut v) = (0u64, 0u64);
        for level in 0..self.scale as u64 {
            let r1 = unit_f64(hash3(self.seed, S_EDGE, k.wrapping_mul(128) + 2 * level));
            let r2 = unit_f64(hash3(
                self.seed,
                S_EDGE,
                k.wrapping_mul(128) + 2 * level + 1,
            ));
            let ii = r1 > ab;
            let jj = r2 > if ii { c_norm } else { a_norm };
            u |= (ii as u64) << level;
            v |= (jj as u64) << level;
        }
        (self.labels.apply(u), self.labels.apply(v))
    }
}

/// Generates the graph into `out`, calling `progress(edges_done)` as it goes.
pub fn generate(
    opts: &GenOptions,
    out: &Path,
    stats: Arc<IoStats>,
    progress: &dyn Fn(u64),
) -> Result<GenReport, GenError> {
    opts.kind.validate()?;
    let n = opts.kind.vertices();
    let m = opts.kind.edges();
    let seed = opts.seed;
    let kron = match opts.kind {
        GenKind::Kronecker { scale, .. } => Some(Kron {
            scale,
            seed,
            labels: Feistel::new(n, seed, S_LABEL),
            shuffle: Feistel::new(m, seed, S_SHUFFLE),
        }),
        _ => None,
    };
    // Edge at position p of the output.
    let edge_at = |p: u64| -> (u64, u64, f32) {
        match opts.kind {
            GenKind::Kronecker { .. } => {
                let k = kron.as_ref().unwrap();
                let idx = k.shuffle.apply(p);
                let (u, v) = k.edge(idx);
                (u, v, weight(hash3(seed, S_WEIGHT, idx)))
            }
            GenKind::Grid { rows, cols } => {
                // Per vertex x = r*cols + c: right pair, then down pair (when present).
                // Position p -> (vertex, slot) via the per-row layout.
                let per_row = 2 * (cols - 1) + if rows > 1 { 2 * cols } else { 0 };
                let r = p / per_row;
                let q = p % per_row;
                let has_down = r + 1 < rows;
                let per_vertex_full = 2 + 2 * has_down as u64; // vertices 0..cols-1 (right exists)
                let (c, slot) = if q < per_vertex_full * (cols - 1) {
                    (q / per_vertex_full, q % per_vertex_full)
                } else {
                    (cols - 1, 2 + (q - per_vertex_full * (cols - 1)))
                };
                let x = r * cols + c;
                let y = if slot < 2 { x + 1 } else { x + cols };
                let (u, v) = if slot % 2 == 0 { (x, y) } else { (y, x) };
                (
                    u,
                    v,
                    weight(hash3(seed, S_WEIGHT, x.min(y) * 2 + (slot >= 2) as u64)),
                )
            }
            GenKind::Uniform { vertices, .. } => {
                let u = below(hash3(seed, S_EDGE, 2 * p), vertices);
                let v = below(hash3(seed, S_EDGE, 2 * p + 1), vertices);
                (u, v, weight(hash3(seed, S_WEIGHT, p)))
            }
            GenKind::Path { .. } => (p, p + 1, weight(hash3(seed, S_WEIGHT, p))),
        }
    };
    let mut file = OutFile::create(out, stats)?;
    if opts.text {
        let header = format!(
            "# outcore generate {:?} seed={seed}\n# vertices {n} edges {m}\n",
            opts.kind
        );
        file.write_all(header.as_bytes())?;
    }
    let threads = rayon::current_num_threads() as u64;
    let chunks = m.div_ceil(CHUNK);
    let mut c0 = 0u64;
    while c0 < chunks {
        let c1 = (c0 + 2 * threads).min(chunks);
        let bufs: Vec<Vec<u8>> = (c0..c1)
            .into_par_iter()
            .map(|c| {
                let (p0, p1) = (c * CHUNK, ((c + 1) * CHUNK).min(m));
                let mut b =
                    Vec::with_capacity(((p1 - p0) * if opts.text { 24 } else { 12 }) as usize);
                for p in p0..p1 {
                    let (u, v, w) = edge_at(p);
                    if opts.text {
                        use std::io::Write;
                        if opts.weighted {
                            writeln!(b, "{u}\t{v}\t{w}").unwrap();
                        } else {
                            writeln!(b, "{u}\t{v}").unwrap();
                        }
                    } else {
                        b.extend_from_slice(&(u as u32).to_le_bytes());
                        b.extend_from_slice(&(v as u32).to_le_bytes());
                        if opts.weighted {
                            b.extend_from_slice(&w.to_le_bytes());
                        }
                    }
                }
                b
            })
            .collect();
        for b in &bufs {
            file.write_all(b)?;
        }
        progress((c1 * CHUNK).min(m));
        c0 = c1;
    }
    let bytes = file.finish()?;
    Ok(GenReport {
        vertices: n,
        edges: m,
        bytes,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read_bin32(path: &Path) -> Vec<(u32, u32)> {
        std::fs::read(path)
            .unwrap()
            .chunks_exact(8)
            .map(|r| {
                (
                    u32::from_le_bytes(r[0..4].try_into().unwrap()),
                    u32::from_le_bytes(r[4..8].try_into().unwrap()),
                )
            })
            .collect()
    }

    fn gen(kind: GenKind, seed: u64, path: &Path) -> Vec<(u32, u32)> {
        let o = GenOptions {
            kind,
            seed,
            weighted: false,
            text: false,
        };
        generate(&o, path, IoStats::new(), &|_| {}).unwrap();
        read_bin32(path)
    }

    #[test]
    fn kronecker_is_deterministic_across_thread_counts_and_has_graph500_skew() {
        let d = tempfile::tempdir().unwrap();
        let kind = GenKind::Kronecker {
            scale: 14,
            edge_factor: 16,
        };
        let a = gen(kind.clone(), 7, &d.path().join("a"));
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(1)
            .build()
            .unwrap();
        let b = pool.install(|| gen(kind.clone(), 7, &d.path().join("b")));
        assert_eq!(a, b, "same bytes with 1 thread and the default pool");
        let c = gen(kind, 8, &d.path().join("c"));
        assert_ne!(a, c, "another seed gives another graph");
        assert_eq!(a.len(), 16 << 14);
        let n = 1usize << 14;
        let mut deg = vec![0u64; n];
        for &(u, v) in &a {
            assert!((u as usize) < n && (v as usize) < n);
            deg[u as usize] += 1;
            deg[v as usize] += 1;
        }
        let max = *deg.iter().max().unwrap();
        let isolated = deg.iter().filter(|&&d| d == 0).count();
        // Graph500 Kronecker graphs are highly skewed: the largest degree is
        // hundreds of times the mean (32), and a large share of vertices is isolated.
        assert!(max > 30 * 32, "max degree {max}");
        assert!(isolated > n / 10, "isolated {isolated}");
        // The shuffle scatters edges: the first thousand are not sorted by source.
        assert!(a[..1000].windows(2).any(|w| w[0].0 > w[1].0));
    }

    #[test]
    fn grid_is_a_symmetric_lattice() {
        let d = tempfile::tempdir().unwrap();
        for (r, c) in [(1u64, 1u64), (1, 5), (4, 1), (3, 4), (7, 7)] {
            let e = gen(GenKind::Grid { rows: r, cols: c }, 1, &d.path().join("g"));
            let mut expect = Vec::new();
            for x in 0..r * c {
                let (rr, cc) = (x / c, x % c);
                if cc + 1 < c {
                    expect.push((x as u32, x as u32 + 1));
                    expect.push((x as u32 + 1, x as u32));
                }
                if rr + 1 < r {
                    expect.push((x as u32, (x + c) as u32));
                    expect.push(((x + c) as u32, x as u32));
                }
            }
            let mut got = e.clone();
            got.sort();
            expect.sort();
            assert_eq!(got, expect, "{r}x{c}");
        }
    }

    #[test]
    fn path_and_uniform() {
        let d = tempfile::tempdir().unwrap();
        let p = gen(GenKind::Path { vertices: 5 }, 1, &d.path().join("p"));
        assert_eq!(p, vec![(0, 1), (1, 2), (2, 3), (3, 4)]);
        let u = gen(
            GenKind::Uniform {
                vertices: 100,
                edges: 5000,
            },
            3,
            &d.path().join("u"),
        );
        assert_eq!(u.len(), 5000);
        assert!(u.iter().all(|&(a, b)| a < 100 && b < 100));
        let distinct: std::collections::HashSet<u32> = u.iter().map(|e| e.0).collect();
        assert_eq!(
            distinct.len(),
            100,
            "every vertex is a source with 50 expected edges each"
        );
    }

    #[test]
    fn text_output_round_trips_weights() {
        let d = tempfile::tempdir().unwrap();
        let path = d.path().join("t.txt");
        let o = GenOptions {
            kind: GenKind::Path { vertices: 4 },
            seed: 9,
            weighted: true,
            text: true,
        };
        generate(&o, &path, IoStats::new(), &|_| {}).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        let lines: Vec<&str> = text.lines().filter(|l| !l.starts_with('#')).collect();
        assert_eq!(lines.len(), 3);
        for (k, l) in lines.iter().enumerate() {
            let f: Vec<&str> = l.split('\t').collect();
            assert_eq!(f[0].parse::<u64>().unwrap(), k as u64);
            let w: f32 = f[2].parse().unwrap();
            assert_eq!(w, weight(hash3(9, S_WEIGHT, k as u64)));
        }
    }
}
