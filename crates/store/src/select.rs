//! Static-cache (BAsC) vertex selection, ATC'19 §3: which vertices' edge lists to
//! hold in memory for a whole run of BFS-like algorithms.
//!
//! Policies: [`Policy::Gvs`] (Greedy Vertex Selection, Algorithm 1, with the
//! incremental recomputation of §3.2), [`Policy::GvsPage`] (the same penalties,
//! whole pages at a time), [`Policy::LowD`] / [`Policy::HighD`]
//! (ascending / descending out-degree) and [`Policy::Random`] (seeded shuffle). A
//! selection is a list of vertices, most wanted first; a run loads the longest
//! prefix that fits its static cache, so one saved selection serves smaller
//! budgets too. Vertices without out-edges are never selected (nothing to cache).
//!
//! GVS, as implemented: the page of vertex `u`, `P(u)`, is the page (of
//! `page_size` bytes of `csr.out.targets`) where `u`'s edge list starts; `r(u)` is
//! the number of edge lists starting in that page. For each vertex `v` and each
//! out-neighbour `u1` not yet selected, `t` is the summed out-degree of `v`'s
//! unselected out-neighbours on `P(u1)` (the page's utilization when `v`'s
//! neighbours are fetched together, Assumption 1), and `u1`'s penalty grows by
//! `1 / (r(u1) t d_in(u1))` (line 11). Each of the K rounds selects the vertices
//! of highest penalty per edge (`T[u] / d_out(u)`, the text of §3.2) until the
//! round's budget `k/K x M` would be exceeded (line 14). After a round only the
//! in-neighbours of the newly selected vertices are recomputed: their
//! contributions under the old selection are subtracted and those under the new
//! added (§3.2's optimization), and changed penalties re-enter a lazy max-heap.
//!
//! `gvs-page` ([`Policy::GvsPage`]) keeps those penalties but selects a page group
//! at a time: every vertex (with out-edges) whose list starts on one page, ranked
//! by the group's summed penalty over its summed out-degree, and recomputed the
//! same way after each round. §3's aim is that "the entire page containing the data
//! need not be retrieved", and a page is skipped only when every list a frontier
//! wants from it is cached: single vertices scattered over many pages (what
//! Algorithm 1 picks, much like LowD) leave those pages to be read anyway. Groups
//! come in lumps, so the last round skips groups that do not fit and fills the
//! rest of the budget with the next ones that do.
//!
//! GVS reads the CSR through a memory map and builds the in-adjacency in memory
//! (4 bytes per edge): it is an offline step, like the paper's.
//! Invariant: a saved selection (`basc.<policy>`, kind `cache-selection`) is listed
//! in the manifest with its CRC, so `outcore verify` checks it and a damaged one is
//! refused.

use crate::error::{corrupt, Result, StoreError};
use crate::format::{FileKind, FileRecord, LayoutFile, LayoutWriter, HEADER_LEN};
use crate::manifest::{Manifest, SelectionRecord};
use crate::reader::Store;
use outcore_io::{IoStats, ReadMode};
use std::cmp::Ordering;
use std::collections::BinaryHeap;
use std::time::Instant;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Policy {
    Gvs,
    /// GVS's penalties (Algorithm 1), selecting whole page groups: all the edge
    /// lists that start on one page at once.
    GvsPage,
    LowD,
    HighD,
    Random,
}

impl Policy {
    pub const ALL: [Policy; 5] = [
        Policy::Gvs,
        Policy::GvsPage,
        Policy::LowD,
        Policy::HighD,
        Policy::Random,
    ];
    pub fn name(self) -> &'static str {
        match self {
            Policy::Gvs => "gvs",
            Policy::GvsPage => "gvs-page",
            Policy::LowD => "lowd",
            Policy::HighD => "highd",
            Policy::Random => "random",
        }
    }
}

impl std::str::FromStr for Policy {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Policy, String> {
        Policy::ALL
            .into_iter()
            .find(|p| p.name() == s)
            .ok_or_else(|| {
                format!("unknown cache policy {s:?} (gvs, gvs-page, lowd, highd or random)")
            })
    }
}

#[derive(Debug, Clone)]
pub struct SelectOptions {
    pub policy: Policy,
    /// Static-cache size in bytes (edge lists: 4 bytes per edge, 8 when weighted).
    pub budget: u64,
    /// GVS rounds (K of Algorithm 1).
    pub k: u32,
    /// Page size GVS models.
    pub page_size: u64,
    pub seed: u64,
}

/// A computed selection.
#[derive(Debug, Clone)]
pub struct Selection {
    pub policy: Policy,
    /// Most wanted first.
    pub vertices: Vec<u32>,
    pub edges: u64,
    pub seconds: f64,
    pub opts: SelectOptions,
}

/// Bytes of static cache per edge of `store`.
pub fn bytes_per_edge(store: &Store) -> u64 {
    if store.weighted() {
        8
    } else {
        4
    }
}

/// Computes a selection for `store`.
pub fn select(store: &Store, opts: &SelectOptions) -> Result<Selection> {
    let t = Instant::now();
    if opts.k == 0 {
        return Err(StoreError::Invalid("--k must be at least 1".into()));
    }
    if !opts.page_size.is_power_of_two() || opts.page_size < 512 {
        return Err(StoreError::Invalid(format!(
            "page size {}: must be a power of two of at least 512 bytes",
            opts.page_size
        )));
    }
    let out = store.degrees("out")?;
    let m = opts.budget / bytes_per_edge(store);
    let vertices = match opts.policy {
        Policy::LowD | Policy::HighD => {
            let mut v: Vec<u32> = (0..out.len() as u32)
                .filter(|&v| out[v as usize] > 0)
                .collect();
            if opts.policy == Policy::LowD {
                v.sort_by_key(|&x| (out[x as usize], x));
            } else {
                v.sort_by_key(|&x| (std::cmp::Reverse(out[x as usize]), x));
            }
            prefix(v, &out, m)
        }
        Policy::Random => {
            let mut v: Vec<u32> = (0..out.len() as u32)
                .filter(|&v| out[v as usize] > 0)
                .collect();
            let mut rng = opts.seed ^ 0x5DEE_CE66_D1CE_4E5B;
            for i in (1..v.len()).rev() {
                let j = (splitmix(&mut rng) % (i as u64 + 1)) as usize;
                v.swap(i, j);
            }
            prefix(v, &out, m)
        }
        Policy::Gvs => gvs(store, &out, m, opts.k, opts.page_size, Unit::Vertex)?,
        Policy::GvsPage => gvs(store, &out, m, opts.k, opts.page_size, Unit::Page)?,
    };
    let edges = vertices.iter().map(|&v| out[v as usize] as u64).sum();
    Ok(Selection {
        policy: opts.policy,
        vertices,
        edges,
        seconds: t.elapsed().as_secs_f64(),
        opts: opts.clone(),
    })
}

/// SplitMix64: the next value of the sequence seeded by `s`.
pub(crate) fn splitmix(s: &mut u64) -> u64 {
    *s = s.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *s;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The longest prefix of `v` whose degrees sum to at most `m` edges.
fn prefix(mut v: Vec<u32>, deg: &[u32], m: u64) -> Vec<u32> {
    let mut sum = 0u64;
    let mut k = 0;
    while k < v.len() && sum + deg[v[k] as usize] as u64 <= m {
        sum += deg[v[k] as usize] as u64;
        k += 1;
    }
    v.truncate(k);
    v
}

/// A heap entry: penalty per edge, vertex.
#[derive(PartialEq)]
struct Cand(f64, u32);
impl Eq for Cand {}
impl PartialOrd for Cand {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Cand {
    fn cmp(&self, o: &Self) -> Ordering {
        self.0.total_cmp(&o.0).then_with(|| o.1.cmp(&self.1))
    }
}

/// The out-CSR offsets and its targets file opened memory-mapped (the offline
/// passes of GVS and Norder read lists at random).
pub(crate) fn mapped_out_csr(store: &Store) -> Result<(Vec<u64>, LayoutFile)> {
    // `csr` checks the offsets against the targets' count; the header check of
    // the mapped file ties that count to its length.
    let offsets = store.csr("out")?.into_offsets();
    let targets = store.layout_with(
        "csr.out.targets",
        FileKind::CsrTargets,
        ReadMode::Mmap,
        IoStats::new(),
    )?;
    Ok((offsets, targets))
}

/// The whole payload of a file opened [`ReadMode::Mmap`] (store files are never
/// empty, so it is mapped).
pub(crate) fn mapped_payload(lf: &LayoutFile) -> Result<&[u8]> {
    let len = (lf.file.len() - HEADER_LEN) as usize;
    Ok(lf.file.mapped(HEADER_LEN, len)?.unwrap_or(&[]))
}

/// What one greedy step of GVS selects.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Unit {
    /// One vertex (Algorithm 1 as written).
    Vertex,
    /// Every vertex whose list starts on one page (`gvs-page`).
    Page,
}

/// Greedy Vertex Selection (Algorithm 1) with incremental recomputation.
fn gvs(
    store: &Store,
    dout: &[u32],
    m: u64,
    k_rounds: u32,
    page: u64,
    unit: Unit,
) -> Result<Vec<u32>> {
    let n = dout.len();
    let (offsets, lf) = mapped_out_csr(store)?;
    let targets: &[u32] = bytemuck::cast_slice(mapped_payload(&lf)?);
    let din = store.degrees("in")?;
    // Page of each vertex's list start, and edge lists starting per page.
    let page_of = |u: usize| offsets[u] * 4 / page;
    let pages = (targets.len() as u64 * 4).div_ceil(page).max(1) as usize;
    let mut r = vec![0u32; pages];
    for u in 0..n {
        if dout[u] > 0 {
            r[page_of(u) as usize] += 1;
        }
    }
    // In-adjacency: in_src[in_off[u]..in_off[u+1]] are the v with (v, u) edges.
    let mut in_off = vec![0u64; n + 1];
    for &u in targets {
        in_off[u as usize + 1] += 1;
    }
    for i in 0..n {
        in_off[i + 1] += in_off[i];
    }
    let mut fill = in_off.clone();
    let mut in_src = vec![0u32; targets.len()];
    for v in 0..n {
        for &u in &targets[offsets[v] as usize..offsets[v + 1] as usize] {
            in_src[fill[u as usize] as usize] = v as u32;
            fill[u as usize] += 1;
        }
    }
    drop(fill);
    let mut sel = vec![false; n];
    let mut round = vec![0u32; n];
    let mut tt = vec![0f64; n];
    // Adds sign x v's contributions; `excluded(u)` says u is in the cache.
    // Adds sign x the contributions of one page group of v's list (`list[i..j]`,
    // the out-neighbours whose lists start on one page); `excluded(u)`: u is cached.
    let group = |list: &[u32],
                 sign: f64,
                 tt: &mut [f64],
                 excluded: &dyn Fn(u32) -> bool,
                 touched: &mut Vec<u32>| {
        let live = |u: u32| !excluded(u) && dout[u as usize] > 0;
        let t: u64 = list
            .iter()
            .filter(|&&u| live(u))
            .map(|&u| dout[u as usize] as u64)
            .sum();
        if t == 0 {
            return;
        }
        let ru = r[page_of(list[0] as usize) as usize].max(1) as f64;
        for &u in list.iter().filter(|&&u| live(u)) {
            tt[u as usize] += sign / (ru * t as f64 * din[u as usize].max(1) as f64);
            touched.push(u);
        }
    };
    // All groups of v's list (sorted by target, so pages ascend).
    let contrib = |v: usize,
                   sign: f64,
                   tt: &mut [f64],
                   excluded: &dyn Fn(u32) -> bool,
                   touched: &mut Vec<u32>| {
        let list = &targets[offsets[v] as usize..offsets[v + 1] as usize];
        let mut i = 0;
        while i < list.len() {
            let pg = page_of(list[i] as usize);
            let j = i + list[i..].partition_point(|&u| page_of(u as usize) == pg);
            group(&list[i..j], sign, tt, excluded, touched);
            i = j;
        }
    };
    let mut touched = Vec::new();
    for v in 0..n {
        contrib(v, 1.0, &mut tt, &|_| false, &mut touched);
    }
    // Page groups (Unit::Page): the vertices whose lists start on page p are the
    // id range first[p]..first[p + 1] (offsets ascend); those with out-edges are
    // the group's members, selected together.
    let first: Vec<usize> = match unit {
        Unit::Vertex => Vec::new(),
        Unit::Page => (0..=pages as u64)
            .map(|p| offsets[..n].partition_point(|&o| o * 4 / page < p))
            .collect(),
    };
    let members = |p: usize| (first[p]..first[p + 1]).filter(|&u| dout[u] > 0);
    let pdeg: Vec<u64> = match unit {
        Unit::Vertex => Vec::new(),
        Unit::Page => (0..pages)
            .map(|p| members(p).map(|u| dout[u] as u64).sum())
            .collect(),
    };
    // A candidate's cost in edges and its penalty per edge (line 13 for a vertex;
    // for a page group, the summed penalty of its members over their summed edges).
    let cost = |c: usize| match unit {
        Unit::Vertex => dout[c] as u64,
        Unit::Page => pdeg[c],
    };
    let score = |tt: &[f64], c: usize| match unit {
        Unit::Vertex => tt[c] / dout[c] as f64,
        Unit::Page => members(c).map(|u| tt[u]).sum::<f64>() / pdeg[c] as f64,
    };
    let candidates = match unit {
        Unit::Vertex => n,
        Unit::Page => pages,
    };
    let mut heap: BinaryHeap<Cand> = (0..candidates)
        .filter(|&c| cost(c) > 0)
        .map(|c| Cand(score(&tt, c), c as u32))
        .filter(|c| c.0 > 0.0)
        .collect();
    let mut taken = vec![false; candidates];
    let mut chosen = Vec::new();
    let mut used = 0u64;
    for k in 1..=k_rounds {
        let target = m * k as u64 / k_rounds as u64;
        let mut now = Vec::new();
        let mut skipped = Vec::new();
        while let Some(Cand(s, c)) = heap.pop() {
            let ci = c as usize;
            if taken[ci] || s != score(&tt, ci) {
                continue; // stale entry
            }
            if used + cost(ci) > target {
                if unit == Unit::Page && k == k_rounds {
                    // Whole groups come in lumps: the last round fills what is
                    // left with the best groups that still fit.
                    skipped.push(Cand(s, c));
                    continue;
                }
                heap.push(Cand(s, c));
                break;
            }
            taken[ci] = true;
            used += cost(ci);
            match unit {
                Unit::Vertex => now.push(c),
                Unit::Page => now.extend(members(ci).map(|u| u as u32)),
            }
        }
        heap.extend(skipped);
        for &u in &now {
            sel[u as usize] = true;
            round[u as usize] = k;
        }
        chosen.extend_from_slice(&now);
        if k == k_rounds || now.is_empty() {
            continue;
        }
        // Recompute only what this round changed (§3.2): for each in-neighbour v
        // of a newly selected s, the one group of v's list on s's page.
        touched.clear();
        let mut pairs: Vec<(u32, u64)> = Vec::new();
        for &s in &now {
            let pg = page_of(s as usize);
            for &v in &in_src[in_off[s as usize] as usize..in_off[s as usize + 1] as usize] {
                pairs.push((v, pg));
            }
        }
        pairs.sort_unstable();
        pairs.dedup();
        let before = |u: u32| sel[u as usize] && round[u as usize] != k;
        let after = |u: u32| sel[u as usize];
        let mut ignore = Vec::new();
        for &(v, pg) in &pairs {
            let list = &targets[offsets[v as usize] as usize..offsets[v as usize + 1] as usize];
            let a = list.partition_point(|&u| page_of(u as usize) < pg);
            let b = a + list[a..].partition_point(|&u| page_of(u as usize) == pg);
            group(&list[a..b], -1.0, &mut tt, &before, &mut ignore);
            ignore.clear();
            group(&list[a..b], 1.0, &mut tt, &after, &mut touched);
        }
        let mut changed: Vec<usize> = touched
            .iter()
            .filter(|&&u| !sel[u as usize] && tt[u as usize] > 0.0)
            .map(|&u| match unit {
                Unit::Vertex => u as usize,
                Unit::Page => page_of(u as usize) as usize,
            })
            .collect();
        changed.sort_unstable();
        changed.dedup();
        for c in changed {
            if !taken[c] {
                heap.push(Cand(score(&tt, c), c as u32));
            }
        }
    }
    Ok(chosen)
}

/// The file name of a saved selection.
pub fn file_name(policy: Policy) -> String {
    format!("basc.{}", policy.name())
}

/// Saves `sel` in the store (replacing an earlier one of the same policy): the
/// file first, then the manifest, atomically.
pub fn save(store: &Store, sel: &Selection) -> Result<SelectionRecord> {
    let dir = store.dir();
    let name = file_name(sel.policy);
    let tmp = dir.join(format!(".{name}.tmp"));
    let lists_name = format!("{name}.lists");
    let lists_tmp = dir.join(format!(".{lists_name}.tmp"));
    // Both files are written in full under temporary names before either replaces
    // an earlier one; an interruption after that (two renames, then the manifest)
    // leaves at most this selection mismatched, which runs refuse (a new
    // `select-cache` mends it) while the store opens.
    let written = (|| {
        let mut w = LayoutWriter::create(&tmp, FileKind::CacheSelection, store.stats().clone())?;
        w.append(bytemuck::cast_slice(&sel.vertices))?;
        let mut file = w.finish(sel.vertices.len() as u64)?;
        file.name = name.clone();
        let mut lists = write_lists(store, &sel.vertices, &lists_tmp)?;
        lists.name = lists_name.clone();
        Ok::<_, StoreError>((file, lists))
    })();
    let (file, lists) = written.inspect_err(|_| {
        let _ = std::fs::remove_file(&tmp);
        let _ = std::fs::remove_file(&lists_tmp);
    })?;
    for (from, to) in [(&tmp, &name), (&lists_tmp, &lists_name)] {
        std::fs::rename(from, dir.join(to))
            .map_err(|e| outcore_io::IoError::new(from, "rename", e))?;
    }
    let rec = SelectionRecord {
        lists: Some(lists_name.clone()),
        policy: sel.policy.name().into(),
        file: name.clone(),
        budget: sel.opts.budget,
        k: sel.opts.k,
        page_size: sel.opts.page_size,
        seed: sel.opts.seed,
        vertices: sel.vertices.len() as u64,
        edges: sel.edges,
        seconds: sel.seconds,
    };
    // The manifest on disk, not the open store's copy: earlier saves may have changed it.
    let mut m = Manifest::read(dir)?;
    m.files.retain(|f| f.name != name && f.name != lists_name);
    m.files.push(file);
    m.files.push(lists);
    m.selections.retain(|s| s.policy != rec.policy);
    m.selections.push(rec.clone());
    m.write(dir)?;
    Ok(rec)
}

/// Writes the edge lists of `vertices`, in ascending vertex order (the order the
/// engine keeps its static cache in, so a frontier walks it front to back), to
/// `path`: all the targets, then all the weights of a weighted store
/// ([`FileKind::CacheLists`]). The caller names the record and renames the file.
fn write_lists(store: &Store, vertices: &[u32], path: &std::path::Path) -> Result<FileRecord> {
    let mut vertices = vertices.to_vec();
    vertices.sort_unstable();
    let (offsets, lf) = mapped_out_csr(store)?;
    let wf = if store.weighted() {
        Some(store.layout_with(
            "csr.out.weights",
            FileKind::CsrWeights,
            ReadMode::Mmap,
            IoStats::new(),
        )?)
    } else {
        None
    };
    let mut sections = vec![mapped_payload(&lf)?];
    if let Some(wf) = &wf {
        sections.push(mapped_payload(wf)?);
    }
    let edges: u64 = vertices
        .iter()
        .map(|&v| offsets[v as usize + 1] - offsets[v as usize])
        .sum();
    let mut w = LayoutWriter::create(path, FileKind::CacheLists, store.stats().clone())?;
    let mut buf: Vec<u8> = Vec::with_capacity(8 << 20);
    for sec in &sections {
        for &v in &vertices {
            let (a, b) = (
                offsets[v as usize] as usize,
                offsets[v as usize + 1] as usize,
            );
            buf.extend_from_slice(&sec[a * 4..b * 4]);
            if buf.len() >= 8 << 20 {
                w.append(&buf)?;
                buf.clear();
            }
        }
    }
    w.append(&buf)?;
    w.finish(edges)
}

/// Loads the saved selection of `policy`, checksum-verified; `None` when none is saved.
pub fn load(store: &Store, policy: Policy) -> Result<Option<(SelectionRecord, Vec<u32>)>> {
    let Some(rec) = store
        .manifest()
        .selections
        .iter()
        .find(|s| s.policy == policy.name())
    else {
        return Ok(None);
    };
    let v: Vec<u32> = store
        .layout(&rec.file, FileKind::CacheSelection)?
        .read_all()?;
    if let Some(&x) = v.iter().find(|&&x| x as u64 >= store.vertices()) {
        return Err(corrupt(
            store.dir().join(&rec.file),
            format!("names vertex {x}, the store has {}", store.vertices()),
        ));
    }
    Ok(Some((rec.clone(), v)))
}
