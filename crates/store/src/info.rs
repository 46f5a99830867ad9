//! `outcore info`: what a store holds (counts, degree statistics, grid block
//! sizes, bytes per layout) and whether every checksum verifies.

use crate::error::Result;
use crate::reader::Store;

/// Degree statistics with a log2-binned histogram: bin `k` counts degrees in
/// `[2^(k-1), 2^k)` for k >= 1, bin 0 counts degree 0.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct DegreeStats {
    pub max: u64,
    pub mean: f64,
    pub zero: u64,
    pub histogram: Vec<Bin>,
}

#[derive(Debug, Clone, serde::Serialize)]
pub struct Bin {
    /// Smallest value in the bin (inclusive).
    pub lo: u64,
    /// Largest value in the bin (inclusive).
    pub hi: u64,
    pub count: u64,
}

/// Log2-binned statistics of a list of values.
pub fn log_stats(values: impl Iterator<Item = u64>) -> DegreeStats {
    let mut bins = [0u64; 66];
    let (mut max, mut sum, mut count, mut zero) = (0u64, 0u128, 0u64, 0u64);
    for d in values {
        max = max.max(d);
        sum += d as u128;
        count += 1;
        zero += (d == 0) as u64;
        let k = if d == 0 {
            0
        } else {
            64 - d.leading_zeros() as usize
        };
        bins[k] += 1;
    }
    let histogram = bins
        .iter()
        .enumerate()
        .filter(|(_, &c)| c > 0)
        .map(|(k, &c)| {
            let (lo, hi) = if k == 0 {
                (0, 0)
            } else {
                (1u64 << (k - 1), (1u64 << (k - 1)).saturating_mul(2) - 1)
            };
            Bin { lo, hi, count: c }
        })
        .collect();
    DegreeStats {
        max,
        mean: if count > 0 {
            sum as f64 / count as f64
        } else {
            0.0
        },
        zero,
        histogram,
    }
}

#[derive(Debug, Clone, serde::Serialize)]
pub struct BlockStats {
    pub blocks: u64,
    pub empty: u64,
    pub min_edges: u64,
    pub median_edges: u64,
    pub max_edges: u64,
    pub mean_edges: f64,
    /// Log2 bins of the edge counts of non-empty blocks.
    pub histogram: Vec<Bin>,
}

#[derive(Debug, Clone, serde::Serialize)]
pub struct FileCheck {
    pub file: String,
    pub bytes: u64,
    pub ok: bool,
    pub error: Option<String>,
}

#[derive(Debug, Clone, serde::Serialize)]
pub struct StoreInfo {
    pub store: String,
    pub vertices: u64,
    pub edges: u64,
    pub directed: bool,
    /// Each edge and its reverse stored, the reverse marked by a negative
    /// weight (`--with-reverse`).
    pub reverse_marked: bool,
    pub weighted: bool,
    pub self_loops: u64,
    /// Stored edges repeating a (source, target) pair (0 after `--dedup`).
    pub parallel_edges: u64,
    pub remapped: bool,
    pub id_base: u64,
    pub in_edges: bool,
    pub partitions: u32,
    pub interval: u64,
    pub out_degree: DegreeStats,
    pub in_degree: DegreeStats,
    pub grid_blocks: BlockStats,
    /// Bytes per layout: grid, csr, degrees, idmap, manifest.
    pub layout_bytes: Vec<(String, u64)>,
    pub files: Vec<FileCheck>,
    pub checksums_ok: bool,
    /// The vertex order, when relabelled.
    pub order: Option<crate::manifest::OrderRecord>,
    /// Saved static-cache selections.
    pub selections: Vec<crate::manifest::SelectionRecord>,
    /// The V-Part layout (`replication_factor`, `space_overhead`, ...), if built.
    pub vpart: Option<crate::vpart::VpartRecord>,
    /// Entries of the store directory that are not part of the store.
    pub stray: Vec<StrayFile>,
}

/// An entry of a store directory the manifest does not list.
#[derive(Debug, Clone, serde::Serialize)]
pub struct StrayFile {
    pub name: String,
    pub bytes: u64,
    /// `running` (a temporary of a live process), `stale` (a temporary of a
    /// process that is gone: the next run in this directory removes it) or
    /// `unknown` (not made by outcore).
    pub state: &'static str,
    pub pid: Option<u32>,
}

/// The entries of `store`'s directory that are not its files.
pub fn stray_files(store: &Store) -> Vec<StrayFile> {
    let m = store.manifest();
    let mut known: std::collections::HashSet<String> =
        m.files.iter().map(|f| f.name.clone()).collect();
    known.insert(crate::manifest::MANIFEST.to_string());
    for s in &m.selections {
        known.insert(s.file.clone());
        known.extend(s.lists.clone());
    }
    let Ok(rd) = std::fs::read_dir(store.dir()) else {
        return Vec::new();
    };
    let mut out: Vec<StrayFile> = rd
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            if known.contains(&name) {
                return None;
            }
            let md = e.metadata().ok();
            let bytes = match &md {
                Some(m) if m.is_dir() => dir_bytes(&e.path()),
                Some(m) => m.len(),
                None => 0,
            };
            let pid = outcore_io::temp::temp_pid(&name);
            let state = match pid {
                Some(p) if p == std::process::id() || outcore_io::pid_alive(p) => "running",
                Some(_) => "stale",
                None => "unknown",
            };
            Some(StrayFile {
                name,
                bytes,
                state,
                pid,
            })
        })
        .collect();
    out.sort_by(|a, b| a.name.cmp(&b.name));
    out
}

fn dir_bytes(dir: &std::path::Path) -> u64 {
    std::fs::read_dir(dir).map_or(0, |rd| {
        rd.flatten()
            .map(|e| match e.metadata() {
                Ok(m) if m.is_dir() => dir_bytes(&e.path()),
                Ok(m) => m.len(),
                Err(_) => 0,
            })
            .sum()
    })
}

/// Gathers the statistics of `store`; with `verify`, streams every file to check
/// its checksum (otherwise headers only).
pub fn store_info(store: &Store, verify: bool) -> Result<StoreInfo> {
    let m = store.manifest();
    let out_deg = store.degrees("out")?;
    let in_deg = store.degrees("in")?;
    let grid = store.grid()?;
    let mut sizes: Vec<u64> = grid.entries().iter().map(|e| e.edges).collect();
    sizes.sort_unstable();
    let nonempty: Vec<u64> = sizes.iter().copied().filter(|&s| s > 0).collect();
    let hist = log_stats(nonempty.iter().copied()).histogram;
    let grid_blocks = BlockStats {
        blocks: sizes.len() as u64,
        empty: (sizes.len() - nonempty.len()) as u64,
        min_edges: *sizes.first().unwrap_or(&0),
        median_edges: sizes.get(sizes.len() / 2).copied().unwrap_or(0),
        max_edges: *sizes.last().unwrap_or(&0),
        mean_edges: if sizes.is_empty() {
            0.0
        } else {
            m.edges as f64 / sizes.len() as f64
        },
        histogram: hist,
    };
    let mut layout: Vec<(String, u64)> = Vec::new();
    for f in &m.files {
        let group = f.name.split('.').next().unwrap_or(&f.name).to_string();
        match layout.iter_mut().find(|(g, _)| *g == group) {
            Some((_, b)) => *b += f.bytes,
            None => layout.push((group, f.bytes)),
        }
    }
    let manifest_bytes = std::fs::metadata(store.dir().join(crate::manifest::MANIFEST))
        .map(|m| m.len())
        .unwrap_or(0);
    layout.push(("manifest".into(), manifest_bytes));
    let files: Vec<FileCheck> = if verify {
        store
            .verify()
            .into_iter()
            .map(|(name, r)| FileCheck {
                bytes: m.file(&name).map_or(0, |f| f.bytes),
                file: name,
                ok: r.is_ok(),
                error: r.err().map(|e| e.to_string()),
            })
            .collect()
    } else {
        m.files
            .iter()
            .map(|f| FileCheck {
                file: f.name.clone(),
                bytes: f.bytes,
                ok: true,
                error: None,
            })
            .collect()
    };
    Ok(StoreInfo {
        store: store.dir().display().to_string(),
        vertices: m.vertices,
        edges: m.edges,
        directed: m.directed,
        reverse_marked: m.reverse_marked,
        weighted: m.weighted,
        self_loops: m.self_loops,
        parallel_edges: m.parallel_edges,
        remapped: m.remapped,
        id_base: m.id_base,
        in_edges: m.in_edges,
        partitions: m.partitions,
        interval: m.interval,
        out_degree: log_stats(out_deg.iter().map(|&d| d as u64)),
        in_degree: log_stats(in_deg.iter().map(|&d| d as u64)),
        grid_blocks,
        layout_bytes: layout,
        checksums_ok: files.iter().all(|f| f.ok),
        files,
        order: m.order.clone(),
        selections: m.selections.clone(),
        vpart: m.vpart.clone(),
        stray: stray_files(store),
    })
}

/// The I/O cost model of BFS-like algorithms on a vertex order (BAsC-Norder, ATC'19
/// §4.1, Equation 1): the sum over vertices v of in-degree(v) times the variance of
/// the ids of v's out-neighbours in the CSR. Lower is better; it compares orderings
/// of the same graph before running anything. The CSR is streamed in chunks of at
/// most `chunk_edges` edges; variances are population variances in f64 (0 for
/// fewer than two neighbours).
pub fn cost_model(store: &Store, chunk_edges: u64) -> Result<f64> {
    let csr = store.csr("out")?;
    let indeg = store.degrees("in")?;
    let offs = csr.offsets();
    let n = offs.len().saturating_sub(1);
    let mut cost = 0.0f64;
    let mut v = 0usize;
    while v < n {
        // Whole vertices per chunk (one vertex may exceed the chunk alone).
        let mut w = v + 1;
        while w < n && offs[w + 1] - offs[v] <= chunk_edges.max(1) {
            w += 1;
        }
        let t = csr.targets(offs[v], offs[w])?;
        for x in v..w {
            let list = &t[(offs[x] - offs[v]) as usize..(offs[x + 1] - offs[v]) as usize];
            if list.len() < 2 || indeg[x] == 0 {
                continue;
            }
            let k = list.len() as f64;
            let mean = list.iter().map(|&y| y as f64).sum::<f64>() / k;
            let var = list.iter().map(|&y| (y as f64 - mean).powi(2)).sum::<f64>() / k;
            cost += indeg[x] as f64 * var;
        }
        v = w;
    }
    Ok(cost)
}
