//! Writing results in the user's ids (text, bin, npy), and the helpers every
//! run command shares: the root's dense id, the process's storage I/O.

use crate::args::OutFormat;
use anyhow::{bail, Context, Result};
use outcore_algos::Output;
use outcore_io::ResultFile;
use outcore_store::IdMap;
use rayon::prelude::*;
use std::path::Path;

/// The dense id of `--root` (0 when the algorithm takes none).
pub(crate) fn resolve_root(
    name: &str,
    needs: bool,
    root: Option<u64>,
    ids: &IdMap,
    store: &Path,
) -> Result<u32> {
    match (needs, root) {
        (true, None) => bail!("{name} needs --root ID (a vertex id as in the input)"),
        (true, Some(r)) => ids.to_dense(r).ok_or_else(|| {
            let why = match ids {
                IdMap::Offset { base, n } if r < *base => format!(
                    ": the ids of this store start at {base} (its input numbers vertices from {base})"
                ),
                IdMap::Offset { base, n } => format!(
                    ": its ids are {base}..={}",
                    (base + n).saturating_sub(1)
                ),
                _ => String::new(),
            };
            anyhow::anyhow!("--root {r} is not a vertex of {}{why}", store.display())
        }),
        (false, _) => Ok(0),
    }
}

/// What a summary line adds for an algorithm that counts every stored edge
/// (pagerank, pagerank-delta, spmv, bc) when the store holds parallel edges.
pub(crate) fn parallel_note(store: &outcore_store::Store, algo: &str) -> String {
    let k = store.manifest().parallel_edges;
    if k == 0 || !matches!(algo, "pagerank" | "pagerank-delta" | "spmv" | "bc") {
        return String::new();
    }
    format!(
        " [the store has {k} parallel edges; {algo} counts each copy (a multigraph): ingest with --dedup for one edge per pair]"
    )
}

/// Bytes this process read and wrote from storage, from /proc/self/io.
pub(crate) fn os_io() -> serde_json::Value {
    let Ok(s) = std::fs::read_to_string("/proc/self/io") else {
        return serde_json::Value::Null;
    };
    let get = |k: &str| {
        s.lines()
            .find_map(|l| l.strip_prefix(k))
            .and_then(|x| x.trim().parse::<u64>().ok())
    };
    serde_json::json!({ "read_bytes": get("read_bytes:"), "write_bytes": get("write_bytes:") })
}

/// One value column as text, and as 8 raw bytes with its numpy type.
enum Cell {
    I(i64),
    F(f64),
    U(u64),
}

/// For a relabelled store, each component's label as the smallest user id in it
/// (the smallest dense id is not the smallest user id there).
fn user_labels(out: &Output, ids: &IdMap) -> Option<Vec<u64>> {
    let (Output::Labels(l), Some(_)) = (out, ids.user_order()) else {
        return None;
    };
    let mut min = vec![u64::MAX; l.len()];
    for (v, &c) in l.iter().enumerate() {
        min[c as usize] = min[c as usize].min(ids.to_user(v as u32));
    }
    Some(l.iter().map(|&c| min[c as usize]).collect())
}

fn cells(
    out: &Output,
    ids: &IdMap,
    labels: Option<&[u64]>,
    v: usize,
    parents: bool,
) -> (Cell, Option<Cell>) {
    match out {
        Output::Bfs(a) => match outcore_algos::bfs_entry(a[v]) {
            Some((d, p)) => (
                Cell::I(d as i64),
                parents.then(|| Cell::I(ids.to_user(p) as i64)),
            ),
            None => (Cell::I(i64::MAX), parents.then_some(Cell::I(-1))),
        },
        Output::Sssp(a) => match outcore_algos::sssp_entry(a[v]) {
            Some((d, p)) => (
                Cell::F(d as f64),
                parents.then(|| Cell::I(ids.to_user(p) as i64)),
            ),
            None => (Cell::F(f64::INFINITY), parents.then_some(Cell::I(-1))),
        },
        Output::Labels(l) => (
            Cell::U(labels.map_or_else(|| ids.to_user(l[v]), |x| x[v])),
            None,
        ),
        Output::Flags(f) => (Cell::I(f[v] as i64), None),
        Output::Values(x) => (Cell::F(x[v]), None),
        // The weight of the edge to the parent, and the parent; a root: 0, -1.
        Output::Forest(a) => match outcore_algos::mcst::forest_entry(a[v]) {
            Some((p, w)) => (Cell::F(w as f64), Some(Cell::I(ids.to_user(p) as i64))),
            None => (Cell::F(0.0), Some(Cell::I(-1))),
        },
    }
}

/// Appends a cell's text to `b`: integers in decimal, infinities as
/// `infinity`, f32 distances as the shortest text that reads back as the same
/// f32, other floats in 15 significant digits.
fn text(c: &Cell, out: &Output, b: &mut Vec<u8>) {
    use std::io::Write;
    match c {
        Cell::I(x) => b.extend_from_slice(itoa::Buffer::new().format(*x).as_bytes()),
        Cell::U(x) => b.extend_from_slice(itoa::Buffer::new().format(*x).as_bytes()),
        Cell::F(x) if x.is_infinite() => b.extend_from_slice(b"infinity"),
        // Writing to a vector cannot fail.
        Cell::F(x) => match out {
            Output::Sssp(_) | Output::Forest(_) => {
                let _ = write!(b, "{}", *x as f32);
            }
            _ => {
                let _ = write!(b, "{x:.14e}");
            }
        },
    }
}

/// Lines of text output formatted by one task.
const TEXT_LINES: usize = 1 << 14;

fn raw(c: &Cell) -> [u8; 8] {
    match c {
        Cell::I(x) => x.to_le_bytes(),
        Cell::U(x) => x.to_le_bytes(),
        Cell::F(x) => x.to_le_bytes(),
    }
}

fn dtype(c: &Cell) -> &'static str {
    match c {
        Cell::I(_) => "<i8",
        Cell::U(_) => "<u8",
        Cell::F(_) => "<f8",
    }
}

/// The format `--out PATH` is written in: `--out-format` when given, else by the
/// extension (`.npy`, `.bin`, `.csv`; anything else, and standard output, is text).
pub(crate) fn out_format(path: &Path, flag: Option<OutFormat>) -> OutFormat {
    if let Some(f) = flag {
        return f;
    }
    match path
        .extension()
        .and_then(|e| e.to_str())
        .map(|e| e.to_ascii_lowercase())
        .as_deref()
    {
        Some("npy") => OutFormat::Npy,
        Some("bin") => OutFormat::Bin,
        Some("csv") => OutFormat::Csv,
        _ => OutFormat::Text,
    }
}

/// Checks a result path before any work: its directory exists and is writable
/// (the hidden temporary is created now), and it is not inside the store being
/// read (a result written there could replace one of the store's own files).
pub(crate) fn prepare_output(path: &Path, store: &Path) -> Result<ResultFile> {
    let rf = ResultFile::prepare(path)?;
    if let (Some(real), Ok(store_dir)) = (rf.real_path(), std::fs::canonicalize(store)) {
        let parent = match real.parent() {
            Some(d) if !d.as_os_str().is_empty() => d,
            _ => Path::new("."),
        };
        if let Ok(dir) = std::fs::canonicalize(parent) {
            if dir.starts_with(&store_dir) {
                bail!(
                    "refusing to write {} inside the store {} being read; choose a path outside it",
                    path.display(),
                    store.display()
                );
            }
        }
    }
    Ok(rf)
}

/// The result and statistics targets of a run, checked before it starts.
#[derive(Default)]
pub(crate) struct Outputs {
    pub result: Option<(ResultFile, OutFormat)>,
    pub stats: Option<ResultFile>,
}

impl Outputs {
    /// Prepares `--out` and `--stats` (both may be `-`, not both).
    pub(crate) fn prepare(
        out: Option<&Path>,
        fmt: Option<OutFormat>,
        stats: Option<&Path>,
        store: &Path,
    ) -> Result<Outputs> {
        if let (Some(o), Some(s)) = (out, stats) {
            if o.as_os_str() == "-" && s.as_os_str() == "-" {
                bail!("--out - and --stats - would mix the result and the statistics on standard output; send one of them to a file");
            }
        }
        let result = match out {
            Some(p) => Some((prepare_output(p, store)?, out_format(p, fmt))),
            None => None,
        };
        let stats = match stats {
            Some(p) => Some(prepare_output(p, store)?),
            None => None,
        };
        Ok(Outputs { result, stats })
    }

    /// Writes the result (when `--out` was given).
    pub(crate) fn write_result(&mut self, out: &Output, ids: &IdMap, parents: bool) -> Result<()> {
        if let Some((rf, fmt)) = self.result.take() {
            let shown = rf.shown().display().to_string();
            write_output(rf, fmt, out, ids, parents)
                .with_context(|| format!("writing the result to {shown}"))?;
        }
        Ok(())
    }

    /// Writes the statistics (when `--stats` was given).
    pub(crate) fn write_stats(&mut self, j: &serde_json::Value) -> Result<()> {
        if let Some(rf) = self.stats.take() {
            let text = serde_json::to_string_pretty(j)? + "\n";
            rf.write_all(text.as_bytes())?;
        }
        Ok(())
    }
}

pub(crate) fn write_output(
    rf: ResultFile,
    fmt: OutFormat,
    out: &Output,
    ids: &IdMap,
    parents: bool,
) -> Result<()> {
    let n = match out {
        Output::Bfs(a) | Output::Sssp(a) | Output::Forest(a) => a.len(),
        Output::Labels(a) | Output::Flags(a) => a.len(),
        Output::Values(a) => a.len(),
    };
    // A forest always names each vertex's parent.
    let parents = parents || matches!(out, Output::Forest(_));
    // Ascending user ids: dense order, unless the store was relabelled.
    let labels = user_labels(out, ids);
    let order = ids.user_order();
    rf.write_with(|w| {
        if fmt == OutFormat::Npy {
            let (c0, p0) = if n > 0 {
                cells(out, ids, None, 0, parents)
            } else {
                (Cell::F(0.0), None)
            };
            let mut descr = format!("[('id', '<u8'), ('value', '{}')", dtype(&c0));
            if let Some(p) = &p0 {
                descr += &format!(", ('parent', '{}')", dtype(p));
            }
            descr += "]";
            let mut header =
                format!("{{'descr': {descr}, 'fortran_order': False, 'shape': ({n},), }}");
            let total = 10 + header.len() + 1;
            header += &" ".repeat((64 - total % 64) % 64);
            header.push('\n');
            w.write_all(b"\x93NUMPY\x01\x00")?;
            w.write_all(&(header.len() as u16).to_le_bytes())?;
            w.write_all(header.as_bytes())?;
        }
        if fmt == OutFormat::Csv {
            w.write_all(if parents {
                b"id,value,parent\n"
            } else {
                b"id,value\n"
            })?;
        }
        if matches!(fmt, OutFormat::Text | OutFormat::Csv) {
            // Text: blocks of TEXT_LINES lines formatted in parallel, a few
            // per thread at a time, written in order.
            let sep = if fmt == OutFormat::Csv { b',' } else { b' ' };
            let line = |k: usize, b: &mut Vec<u8>| {
                let v = order.map_or(k, |o| o[k] as usize);
                let (c, p) = cells(out, ids, labels.as_deref(), v, parents);
                b.extend_from_slice(itoa::Buffer::new().format(ids.to_user(v as u32)).as_bytes());
                b.push(sep);
                text(&c, out, b);
                if let Some(p) = &p {
                    b.push(sep);
                    text(p, out, b);
                }
                b.push(b'\n');
            };
            let batch = TEXT_LINES * 2 * rayon::current_num_threads().max(1);
            for k0 in (0..n).step_by(batch) {
                let k1 = (k0 + batch).min(n);
                let blocks: Vec<Vec<u8>> = (k0..k1)
                    .into_par_iter()
                    .step_by(TEXT_LINES)
                    .map(|a| {
                        let mut b = Vec::with_capacity(TEXT_LINES * 24);
                        (a..(a + TEXT_LINES).min(k1)).for_each(|k| line(k, &mut b));
                        b
                    })
                    .collect();
                for b in &blocks {
                    w.write_all(b)?;
                }
            }
            return Ok(());
        }
        for k in 0..n {
            let v = order.map_or(k, |o| o[k] as usize);
            let id = ids.to_user(v as u32);
            let (c, p) = cells(out, ids, labels.as_deref(), v, parents);
            // Bin and Npy: the raw little-endian cells.
            w.write_all(&id.to_le_bytes())?;
            w.write_all(&raw(&c))?;
            if let Some(p) = &p {
                w.write_all(&raw(p))?;
            }
        }
        Ok(())
    })?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use outcore_state::VertexArray;

    /// Text output over many blocks and batches of blocks, in user-id order
    /// on a relabelled store, line for line what one `format!` per vertex
    /// gives.
    #[test]
    fn text_output_in_parallel_blocks_is_the_one_line_at_a_time_text() {
        let n = 5 * TEXT_LINES * 2 * rayon::current_num_threads().max(1) + 123;
        // Dense v has user id (n - 1 - v) * 3: listed by ascending user id,
        // the dense ids run backwards.
        let user: Vec<u64> = (0..n as u64).map(|v| (n as u64 - 1 - v) * 3).collect();
        let ids = IdMap::from_user_ids(user.clone()).unwrap();
        let words: Vec<u64> = (0..n as u64)
            .map(|v| match v % 7 {
                0 => u64::MAX,
                _ => ((v % 13) << 32) | ((v * 5) % n as u64),
            })
            .collect();
        let out = Output::Bfs(VertexArray::from_vec(words.clone()));
        let dir = tempfile::tempdir().unwrap();
        for (fmt, sep) in [(OutFormat::Text, ' '), (OutFormat::Csv, ',')] {
            let path = dir.path().join("out");
            let rf = ResultFile::prepare(&path).unwrap();
            write_output(rf, fmt, &out, &ids, true).unwrap();
            let got = std::fs::read_to_string(&path).unwrap();
            let mut want = String::new();
            if fmt == OutFormat::Csv {
                want += "id,value,parent\n";
            }
            for v in (0..n).rev() {
                let (d, p) = match outcore_algos::bfs_entry(words[v]) {
                    Some((d, p)) => (d as i64, user[p as usize] as i64),
                    None => (i64::MAX, -1),
                };
                want += &format!("{}{sep}{d}{sep}{p}\n", user[v]);
            }
            assert_eq!(got.len(), want.len(), "{fmt:?}");
            assert!(got == want, "{fmt:?}: the texts differ");
        }
    }
}
