//! Input formats: SNAP/whitespace text, CSV (`u,v[,w]`, an optional header line),
//! DIMACS `.gr`, Matrix Market coordinate, binary edge lists (`bin32`, `bin32w`,
//! `bin64`), each optionally gzip-compressed. A UTF-8 byte-order mark at the start
//! of a text input is skipped; bzip2, xz, zstd and zip inputs are named as
//! unsupported rather than read as garbage.
//!
//! Design: the input is read sequentially in chunks of [`CHUNK`] bytes (cut at line
//! boundaries for text) by a read-ahead thread (which also decompresses gzip), so
//! reading overlaps parsing; batches of chunks are parsed in parallel with rayon
//! while the previous batch goes to the sink, chunk and edge buffers reused from
//! batch to batch;
//! results are consumed in input order, so error locations are exact (`FILE:LINE`
//! for text, `FILE: record N` for binary) and the emitted edge order is the input
//! order whatever the thread count. Headers (DIMACS `p sp N M`, the Matrix Market
//! banner and size line) are parsed sequentially first.
//!
//! Ids are emitted as written (1-based formats are not shifted here); the ingest
//! converts them. Matrix Market `symmetric` entries are emitted in both directions
//! (a diagonal entry once), as scipy's `mmread` expands them.

use crate::error::{input_err, Result, StoreError};
use outcore_io::{InFile, IoError, IoStats, ReadMode, SeqReader};
use rayon::prelude::*;
use std::fs::File;
use std::io::Read;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

mod read;
use read::*;
mod chunks;
pub use chunks::PairSink;
use chunks::*;

/// Bytes per read chunk at most (a multiple of 8, 12 and 16, the binary record
/// sizes); smaller under a small budget ([`set_parse_memory`]).
pub const CHUNK: usize = 6 << 20;
/// Chunks are whole multiples of this (48 x 16 KiB: whole records of every binary
/// format, whole pages for `O_DIRECT` reads).
const CHUNK_UNIT: usize = 768 << 10;
static CHUNK_SIZE: AtomicU64 = AtomicU64::new(CHUNK as u64);

/// Sizes the parser's buffers for a budget of `bytes`: chunks of about a 152nd
/// of it (768 KiB to 6 MiB), so that parsing takes about a quarter of the
/// budget. Parsing holds about 38 chunks' worth: two batches of up to four
/// chunks (one being parsed, one being handed to the sink) with their decoded
/// edges (24 bytes an edge, three times a bin32 chunk), the read-ahead's blocks
/// and the `O_DIRECT` reader's buffer.
pub fn set_parse_memory(bytes: u64) {
    let units = (bytes as usize / 152 / CHUNK_UNIT).clamp(1, CHUNK / CHUNK_UNIT);
    CHUNK_SIZE.store((units * CHUNK_UNIT) as u64, Ordering::Relaxed);
}

/// The current chunk size (see [`set_parse_memory`]).
fn chunk_size() -> usize {
    CHUNK_SIZE.load(Ordering::Relaxed) as usize
}

/// An input file format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// SNAP/whitespace text: `u v [w]` lines, `#` and `%` comments.
    Text,
    /// Comma-separated `u,v[,w]` lines (pandas' `to_csv`); a first line that is not
    /// numeric (`src,dst,weight`) is a header; `#` comments.
    Csv,
    /// DIMACS shortest-path: `c` comments, `p sp N M`, `a u v w` (1-based).
    Dimacs,
    /// Matrix Market coordinate (pattern/integer/real, general/symmetric, 1-based).
    Mtx,
    /// u32 source, u32 target, little-endian.
    Bin32,
    /// u32 source, u32 target, f32 weight, little-endian.
    Bin32w,
    /// u64 source, u64 target, little-endian.
    Bin64,
}

impl std::str::FromStr for Format {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Format, String> {
        Ok(match s.to_ascii_lowercase().as_str() {
            "text" | "snap" | "txt" | "el" => Format::Text,
            "csv" => Format::Csv,
            "dimacs" | "gr" => Format::Dimacs,
            "mtx" | "matrix-market" | "mm" => Format::Mtx,
            "bin32" => Format::Bin32,
            "bin32w" => Format::Bin32w,
            "bin64" => Format::Bin64,
            _ => {
                return Err(format!(
                    "unknown format {s:?} (text, csv, dimacs, mtx, bin32, bin32w or bin64)"
                ))
            }
        })
    }
}

impl Format {
    pub fn name(self) -> &'static str {
        match self {
            Format::Text => "text",
            Format::Csv => "csv",
            Format::Dimacs => "dimacs",
            Format::Mtx => "mtx",
            Format::Bin32 => "bin32",
            Format::Bin32w => "bin32w",
            Format::Bin64 => "bin64",
        }
    }
    fn record_size(self) -> usize {
        match self {
            Format::Bin32 => 8,
            Format::Bin32w => 12,
            Format::Bin64 => 16,
            _ => 0,
        }
    }
    pub fn is_binary(self) -> bool {
        self.record_size() > 0
    }
}

/// One parsed edge with ids as written in the input.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RawEdge {
    pub u: u64,
    pub v: u64,
    pub w: f32,
}

/// What is known of an input before its edges are read.
#[derive(Debug, Clone, PartialEq)]
pub struct Probe {
    pub format: Format,
    pub gzip: bool,
    /// Ids start at 1 (DIMACS, Matrix Market).
    pub one_based: bool,
    /// The input carries a weight per edge.
    pub weighted: bool,
    /// Vertex count from the header (DIMACS `p`, Matrix Market max(rows, cols)).
    pub header_vertices: Option<u64>,
    /// Edge count promised by the header.
    pub header_entries: Option<u64>,
    pub symmetric: bool,
    pub file_bytes: u64,
}

fn strip_gz(name: &str) -> &str {
    name.strip_suffix(".gz").unwrap_or(name)
}

fn format_from_extension(path: &Path) -> Option<Format> {
    let name = path.file_name()?.to_string_lossy().to_ascii_lowercase();
    let name = strip_gz(&name);
    let ext = name.rsplit('.').next()?;
    Some(match ext {
        "gr" | "dimacs" => Format::Dimacs,
        "mtx" | "mm" => Format::Mtx,
        "bin32" => Format::Bin32,
        "bin32w" => Format::Bin32w,
        "bin64" => Format::Bin64,
        "txt" | "tsv" | "el" | "edges" | "edgelist" | "snap" => Format::Text,
        "csv" => Format::Csv,
        _ => return None,
    })
}

/// The lines of a text buffer with their 1-based numbers relative to `first_line`.
fn lines(buf: &[u8]) -> impl Iterator<Item = &[u8]> {
    buf.split(|&b| b == b'\n')
        .map(|l| l.strip_suffix(b"\r").unwrap_or(l))
}

fn fields(line: &[u8]) -> Fields<'_> {
    fields_of(line, false)
}

/// The fields of a data line: whitespace-separated, or comma-separated (each field
/// trimmed, empty ones kept so that `1,,2` is malformed) for CSV. A concrete
/// iterator: the parser calls this once a line.
fn fields_of(line: &[u8], csv: bool) -> Fields<'_> {
    Fields {
        rest: Some(line),
        csv,
    }
}

/// See [`fields_of`]; `rest` is `None` once a CSV line's last field is out.
struct Fields<'a> {
    rest: Option<&'a [u8]>,
    csv: bool,
}

impl<'a> Iterator for Fields<'a> {
    type Item = &'a [u8];
    fn next(&mut self) -> Option<&'a [u8]> {
        let rest = self.rest?;
        let sep = |b: u8| {
            if self.csv {
                b == b','
            } else {
                b == b' ' || b == b'\t'
            }
        };
        if self.csv {
            return Some(match rest.iter().position(|&b| sep(b)) {
                Some(i) => {
                    self.rest = Some(&rest[i + 1..]);
                    trim_ascii(&rest[..i])
                }
                None => {
                    self.rest = None;
                    trim_ascii(rest)
                }
            });
        }
        let start = rest.iter().position(|&b| !sep(b))?;
        let field = &rest[start..];
        let end = field.iter().position(|&b| sep(b)).unwrap_or(field.len());
        self.rest = Some(&field[end..]);
        Some(&field[..end])
    }
}

/// The UTF-8 byte-order mark some editors and Excel put before text.
const BOM: &[u8] = b"\xEF\xBB\xBF";

/// Compressions ingest cannot read, by magic bytes and by extension.
const UNSUPPORTED: [(&[u8], &str, &str); 5] = [
    (b"BZh", "bzip2", "bz2"),
    (b"\xFD7zXZ\x00", "xz", "xz"),
    (b"\x28\xB5\x2F\xFD", "zstd", "zst"),
    (b"PK\x03\x04", "zip", "zip"),
    (b"7z\xBC\xAF\x27\x1C", "7-zip", "7z"),
];

/// Refuses inputs compressed with anything but gzip, naming the compression.
fn check_compression(path: &Path, head: &[u8]) -> Result<()> {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().to_ascii_lowercase())
        .unwrap_or_default();
    for (magic, what, ext) in UNSUPPORTED {
        if head.starts_with(magic) || name.ends_with(&format!(".{ext}")) {
            return Err(StoreError::Invalid(format!(
                "{}: {what}-compressed input is not supported (only gzip is read); decompress it first, or recompress it with gzip",
                path.display()
            )));
        }
    }
    Ok(())
}

fn show(line: &[u8]) -> String {
    let s = String::from_utf8_lossy(line);
    if s.chars().count() > 80 {
        format!("{:?}...", s.chars().take(80).collect::<String>())
    } else {
        format!("{s:?}")
    }
}

fn parse_u64(f: &[u8]) -> Option<u64> {
    if f.is_empty() || f.len() > 20 {
        return None;
    }
    let mut v: u64 = 0;
    for &b in f {
        let d = b.wrapping_sub(b'0');
        if d > 9 {
            return None;
        }
        v = v.checked_mul(10)?.checked_add(d as u64)?;
    }
    Some(v)
}

fn parse_weight(f: &[u8]) -> std::result::Result<f32, String> {
    let s = std::str::from_utf8(f).map_err(|_| format!("weight {} is not a number", show(f)))?;
    let w: f32 = s
        .parse()
        .map_err(|_| format!("weight {} is not a number", show(f)))?;
    if w.is_nan() {
        return Err("weight is NaN".into());
    }
    if w.is_infinite() {
        return Err(format!("weight {s} is not finite"));
    }
    Ok(w)
}

/// Probes an input: format (explicit or detected from extension and content),
/// compression, headers and whether it carries weights.
pub fn probe(path: &Path, explicit: Option<Format>) -> Result<Probe> {
    let count = Arc::new(AtomicU64::new(0));
    let (mut r, gzip, file_bytes) = open_input(path, count, None)?;
    let mut head = vec![0u8; 1 << 20];
    let n = fill(&mut *r, &mut head, path)?;
    head.truncate(n);
    if !gzip {
        check_compression(path, &head)?;
    }
    let format = match explicit.or_else(|| format_from_extension(path)) {
        Some(f) => f,
        None => detect_from_content(path, &head)?,
    };
    let mut p = Probe {
        format,
        gzip,
        one_based: false,
        weighted: format == Format::Bin32w,
        header_vertices: None,
        header_entries: None,
        symmetric: false,
        file_bytes,
    };
    let loc = |line: usize| format!("{}:{line}", path.display());
    match format {
        Format::Dimacs => {
            p.one_based = true;
            p.weighted = true;
            let h = parse_header(path, &head, format)?;
            p.header_vertices = h.vertices;
            p.header_entries = h.entries;
        }
        Format::Mtx => {
            p.one_based = true;
            let h = parse_header(path, &head, format)?;
            p.header_vertices = h.vertices;
            p.header_entries = h.entries;
            p.weighted = h.weighted;
            p.symmetric = h.symmetric;
        }
        Format::Text | Format::Csv => {
            // Weighted when the first data line has three columns.
            let csv = format == Format::Csv;
            let h = parse_header(path, &head, format)?;
            let body = &head[h.consumed..];
            let full = n == head.capacity();
            let total = lines(body).count();
            for (k, line) in lines(body).enumerate() {
                if full && k + 1 == total {
                    break; // possibly cut line at the end of the probe buffer
                }
                let t = trim_ascii(line);
                if t.is_empty() || t[0] == b'#' || (!csv && t[0] == b'%') {
                    continue;
                }
                let cols = fields_of(t, csv).count();
                if cols != 2 && cols != 3 {
                    let want = if csv {
                        "`u,v` or `u,v,w`"
                    } else {
                        "`u v` or `u v w`"
                    };
                    return Err(input_err(
                        loc(h.lines as usize + k + 1),
                        format!("malformed line: expected {want}, found {}", show(line)),
                    ));
                }
                p.weighted = cols == 3;
                break;
            }
        }
        _ => {}
    }
    Ok(p)
}

fn trim_ascii(l: &[u8]) -> &[u8] {
    let s = l
        .iter()
        .position(|b| !b.is_ascii_whitespace())
        .unwrap_or(l.len());
    let e = l
        .iter()
        .rposition(|b| !b.is_ascii_whitespace())
        .map_or(s, |e| e + 1);
    &l[s..e]
}

fn detect_from_content(path: &Path, head: &[u8]) -> Result<Format> {
    let head = head.strip_prefix(BOM).unwrap_or(head);
    let text_like = head
        .iter()
        .take(4096)
        .all(|&b| b == b'\n' || b == b'\r' || b == b'\t' || (0x20..0x7f).contains(&b));
    if !text_like {
        return Err(StoreError::Invalid(format!(
            "{}: cannot tell the format: the content is not text and the name has no known extension; pass --format bin32, bin32w or bin64",
            path.display()
        )));
    }
    if head.starts_with(b"%%MatrixMarket") {
        return Ok(Format::Mtx);
    }
    for line in lines(head) {
        let t = trim_ascii(line);
        if t.is_empty() {
            continue;
        }
        if t.starts_with(b"p sp") || t == b"c" || t.starts_with(b"c ") {
            return Ok(Format::Dimacs);
        }
        if t[0] == b'#' || t[0] == b'%' {
            continue;
        }
        if t.contains(&b',') {
            return Ok(Format::Csv);
        }
        break;
    }
    Ok(Format::Text)
}

struct HeaderInfo {
    vertices: Option<u64>,
    entries: Option<u64>,
    weighted: bool,
    symmetric: bool,
    /// Bytes of the buffer consumed by the header.
    consumed: usize,
    /// Lines consumed by the header.
    lines: u64,
}

fn parse_header(path: &Path, head: &[u8], format: Format) -> Result<HeaderInfo> {
    let loc = |line: u64| format!("{}:{line}", path.display());
    let mut info = HeaderInfo {
        vertices: None,
        entries: None,
        weighted: false,
        symmetric: false,
        consumed: 0,
        lines: 0,
    };
    if matches!(format, Format::Text | Format::Csv) {
        // A byte-order mark is skipped; a CSV file's first line that does not
        // start with a number is its header.
        let bom = if head.starts_with(BOM) { BOM.len() } else { 0 };
        info.consumed = bom;
        if format == Format::Csv {
            let mut lineno = 0u64;
            let mut pos = bom;
            for raw in head[bom..].split(|&b| b == b'\n') {
                lineno += 1;
                pos += raw.len() + 1;
                let t = trim_ascii(raw.strip_suffix(b"\r").unwrap_or(raw));
                if t.is_empty() || t[0] == b'#' {
                    continue;
                }
                let first = fields_of(t, true).next().unwrap_or_default();
                if parse_u64(first).is_none() {
                    info.consumed = pos.min(head.len());
                    info.lines = lineno;
                }
                break;
            }
        }
        return Ok(info);
    }
    let mut pos = 0usize;
    let mut lineno = 0u64;
    while pos < head.len() {
        let end = head[pos..]
            .iter()
            .position(|&b| b == b'\n')
            .map_or(head.len(), |e| pos + e);
        let raw = &head[pos..end];
        let line = raw.strip_suffix(b"\r").unwrap_or(raw);
        let t = trim_ascii(line);
        lineno += 1;
        let next = (end + 1).min(head.len());
        match format {
            Format::Dimacs => {
                if t.is_empty() || t[0] == b'c' {
                } else if t[0] == b'p' {
                    let f: Vec<&[u8]> = fields(t).collect();
                    let ok = f.len() == 4 && f[1] == b"sp";
                    let (n, m) = (
                        f.get(2).and_then(|x| parse_u64(x)),
                        f.get(3).and_then(|x| parse_u64(x)),
                    );
                    match (ok, n, m) {
                        (true, Some(n), Some(m)) => {
                            info.vertices = Some(n);
                            info.entries = Some(m);
                            info.consumed = next;
                            info.lines = lineno;
                            return Ok(info);
                        }
                        _ => {
                            return Err(input_err(
                                loc(lineno),
                                format!(
                                    "malformed problem line: expected `p sp N M`, found {}",
                                    show(line)
                                ),
                            ))
                        }
                    }
                } else {
                    return Err(input_err(
                        loc(lineno),
                        format!(
                            "expected the problem line `p sp N M` before any arc, found {}",
                            show(line)
                        ),
                    ));
                }
            }
            Format::Mtx => {
                if lineno == 1 {
                    let f: Vec<String> = fields(t)
                        .map(|x| String::from_utf8_lossy(x).to_ascii_lowercase())
                        .collect();
                    if f.len() != 5 || f[0] != "%%matrixmarket" || f[1] != "matrix" {
                        return Err(input_err(loc(1), format!("malformed Matrix Market banner: expected `%%MatrixMarket matrix coordinate FIELD SYMMETRY`, found {}", show(line))));
                    }
                    if f[2] != "coordinate" {
                        return Err(input_err(loc(1), format!("Matrix Market {:?} format is not a graph; only `coordinate` is supported", f[2])));
                    }
                    info.weighted = match f[3].as_str() {
                        "pattern" => false,
                        "integer" | "real" => true,
                        other => return Err(input_err(loc(1), format!("Matrix Market field {other:?} is not supported (pattern, integer or real)"))),
                    };
                    info.symmetric = match f[4].as_str() {
                        "general" => false,
                        "symmetric" => true,
                        other => return Err(input_err(loc(1), format!("Matrix Market symmetry {other:?} is not supported (general or symmetric)"))),
                    };
                } else if t.is_empty() || t[0] == b'%' {
                } else {
                    let f: Vec<Option<u64>> = fields(t).map(parse_u64).collect();
                    match f.as_slice() {
                        [Some(r), Some(c), Some(nnz)] => {
                            info.vertices = Some(*r.max(c));
                            info.entries = Some(*nnz);
                            info.consumed = next;
                            info.lines = lineno;
                            return Ok(info);
                        }
                        _ => {
                            return Err(input_err(
                                loc(lineno),
                                format!(
                                    "malformed size line: expected `ROWS COLS ENTRIES`, found {}",
                                    show(line)
                                ),
                            ))
                        }
                    }
                }
            }
            _ => unreachable!("text and binary formats are handled above"),
        }
        pos = next;
        if end == head.len() {
            break;
        }
    }
    let what = if format == Format::Dimacs {
        "no problem line `p sp N M`"
    } else {
        "no size line"
    };
    Err(input_err(
        path.display().to_string(),
        format!("{what} found at the start of the file"),
    ))
}

/// What parsing an input produced, besides its edges.
#[derive(Debug, Clone, Default)]
pub struct ParseSummary {
    /// Edges emitted (symmetric Matrix Market entries count twice).
    pub edges: u64,
    /// Entries (data lines or records) read.
    pub entries: u64,
    /// Largest id seen, as written.
    pub max_id: Option<u64>,
}

/// Parses one input, calling `sink` with batches of edges in input order and
/// `progress` with the input bytes consumed so far.
///
/// `id_limit`: the largest id (as written) accepted when not remapping; violations
/// are reported with the location. With `pairs`, a bin32 input's records go to
/// it instead, checked but not decoded (the chunk's bytes as (u, v) pairs); other
/// formats still go to `sink`. Reads are counted in `stats`.
pub fn parse_input(
    path: &Path,
    probe: &Probe,
    id_limit: Option<u64>,
    stats: &Arc<IoStats>,
    sink: &mut dyn FnMut(&[RawEdge]) -> Result<()>,
    mut pairs: Option<&mut PairSink>,
    progress: &dyn Fn(u64),
) -> Result<ParseSummary> {
    let count = Arc::new(AtomicU64::new(0));
    let (r, _, _) = open_input(path, count.clone(), Some(stats))?;
    let fmt = probe.format;
    let mut id_max = u64::MAX;
    let mut reason = String::new();
    if let Some(n) = probe.header_vertices {
        id_max = n;
        reason = format!("exceeds the vertex count {n} in the header");
    }
    if let Some(lim) = id_limit {
        if lim < id_max {
            id_max = lim;
            reason = format!(
                "is too large: ids are used as given and must be below {} (the declared --vertices, or 4294967295, which is reserved; --remap renumbers arbitrary ids)",
                lim + 1 - probe.one_based as u64
            );
        }
    }
    let ctx = LineCtx {
        format: fmt,
        weighted: probe.weighted,
        symmetric: probe.symmetric,
        id_max,
        id_max_reason: reason,
        min_id: probe.one_based as u64,
        // Unweighted SNAP text goes to a pairs sink as pairs too.
        pairs: pairs.is_some()
            && fmt == Format::Text
            && !probe.weighted
            && id_max <= u32::MAX as u64,
    };
    // bin32 records are (u32 u, u32 v) little-endian: with a `pairs` sink they are
    // checked in place and handed over as they lie in the chunk, no per-edge copy.
    let raw = pairs.is_some() && fmt == Format::Bin32 && cfg!(target_endian = "little");
    let threads = rayon::current_num_threads().max(1);
    let batch = 2 * threads;
    let mut summary = ParseSummary::default();
    let mut line_base = 0u64; // lines (or records) before the current chunk
                              // Chunk and edge buffers are reused from batch to batch.
    let mut edge_pool: Vec<OutBufs> = Vec::new();
    let mut first = true;
    let mut file_cols: Option<(usize, u64)> = None;
    let mut eof = false;
    let rs = fmt.record_size();
    let mut reader = ChunkReader::new(r, path, chunk_size(), fmt.is_binary().then_some(rs));
    // One batch is parsed (on the pool) while the previous one is handed to the
    // sink (on this thread): parsing is parallel, the sink sequential, and
    // without the overlap the pool idled while the sink ran.
    let mut pending: Option<(Vec<Vec<u8>>, Vec<ChunkOut>)> = None;
    loop {
        // Take a batch of chunks from the reader.
        let mut chunks: Vec<Vec<u8>> = Vec::with_capacity(batch);
        while chunks.len() < batch && !eof {
            let Some((mut buf, last)) = reader.next_chunk()? else {
                eof = true;
                break;
            };
            eof = last;
            if first && !fmt.is_binary() {
                let h = parse_header(path, &buf, fmt)?;
                line_base = h.lines;
                buf.drain(..h.consumed);
            }
            first = false;
            if fmt.is_binary() && eof && buf.len() % rs != 0 {
                return Err(input_err(
                    path.display().to_string(),
                    format!(
                        "truncated: the file ends with {} bytes that do not form a whole {rs}-byte {} record",
                        buf.len() % rs,
                        fmt.name()
                    ),
                ));
            }
            if buf.is_empty() {
                reader.give_back(buf);
            } else {
                chunks.push(buf);
            }
        }
        if chunks.is_empty() && pending.is_none() {
            break;
        }
        let pools: Vec<OutBufs> = (0..chunks.len())
            .map(|_| edge_pool.pop().unwrap_or_default())
            .collect();
        let mut outs: Vec<ChunkOut> = Vec::new();
        let consumed = rayon::in_place_scope(|sc| {
            sc.spawn(|_| {
                outs = chunks
                    .par_iter()
                    .zip(pools)
                    .map(|(c, edges)| {
                        if raw {
                            check_pairs_chunk(c, &ctx, edges)
                        } else if fmt.is_binary() {
                            parse_binary_chunk(c, &ctx, edges)
                        } else {
                            parse_text_chunk(c, &ctx, edges)
                        }
                    })
                    .collect();
            });
            let Some((prev, prev_outs)) = pending.take() else {
                return Ok(());
            };
            for (c, out) in prev.iter().zip(prev_outs) {
                let loc = |local: u64| {
                    if fmt.is_binary() {
                        format!("{}: record {}", path.display(), line_base + local)
                    } else {
                        format!("{}:{}", path.display(), line_base + local)
                    }
                };
                if let Some((local, msg)) = out.err {
                    let msg = match out.cols {
                        Some((_, first)) => msg.replace(
                            &format!("{{LINE{first}}}"),
                            &(line_base + first).to_string(),
                        ),
                        None => msg,
                    };
                    return Err(input_err(loc(local), msg));
                }
                if let Some((cols, local)) = out.cols {
                    match file_cols {
                        None => file_cols = Some((cols, line_base + local)),
                        Some((fc, fl)) if fc != cols => {
                            return Err(input_err(
                                loc(local),
                                format!("malformed line: {cols} columns, but line {fl} has {fc}"),
                            ))
                        }
                        _ => {}
                    }
                }
                match pairs.as_mut() {
                    Some(pairs) if raw => {
                        match bytemuck::try_cast_slice::<u8, [u32; 2]>(c) {
                            Ok(p) => pairs(p)?,
                            Err(_) => pairs(&bytemuck::pod_collect_to_vec::<u8, [u32; 2]>(c))?,
                        }
                        summary.edges += out.entries;
                    }
                    Some(pairs) if ctx.pairs => {
                        pairs(&out.pairs)?;
                        summary.edges += out.pairs.len() as u64;
                    }
                    _ => {
                        sink(&out.edges)?;
                        summary.edges += out.edges.len() as u64;
                    }
                }
                summary.entries += out.entries;
                summary.max_id = summary.max_id.max(out.max_id);
                line_base += if fmt.is_binary() {
                    (c.len() / rs) as u64
                } else {
                    out.lines
                };
                edge_pool.push((out.edges, out.pairs));
            }
            for b in prev {
                reader.give_back(b);
            }
            Ok(())
        });
        consumed?;
        progress(count.load(Ordering::Relaxed));
        if !chunks.is_empty() {
            pending = Some((chunks, outs));
        }
    }
    if let Some(n) = probe.header_entries {
        if n != summary.entries {
            return Err(input_err(
                path.display().to_string(),
                format!(
                    "the header promises {n} entries but the file holds {} (truncated or damaged?)",
                    summary.entries
                ),
            ));
        }
    }
    Ok(summary)
}
