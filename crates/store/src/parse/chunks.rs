//! Parsing one chunk: text lines (SNAP, CSV, DIMACS arcs, Matrix Market entries)
//! and binary records, with exact line or record numbers for errors.

use super::*;

pub(super) struct ChunkOut {
    pub(super) edges: Vec<RawEdge>,
    pub(super) lines: u64,
    pub(super) entries: u64,
    pub(super) max_id: Option<u64>,
    /// Column count of the first data line and its local line number.
    pub(super) cols: Option<(usize, u64)>,
    pub(super) err: Option<(u64, String)>,
}

pub(super) struct LineCtx {
    pub(super) format: Format,
    pub(super) weighted: bool,
    pub(super) symmetric: bool,
    /// Largest id allowed, as written (header count for 1-based formats, or the
    /// dense-id limit when not remapping).
    pub(super) id_max: u64,
    pub(super) id_max_reason: String,
    pub(super) min_id: u64,
}

pub(super) fn parse_text_chunk(buf: &[u8], ctx: &LineCtx, mut edges: Vec<RawEdge>) -> ChunkOut {
    edges.clear();
    let mut out = ChunkOut {
        edges,
        lines: 0,
        entries: 0,
        max_id: None,
        cols: None,
        err: None,
    };
    let mut max_id: u64 = 0;
    let mut any = false;
    for (k, line) in lines(buf).enumerate() {
        let ln = k as u64 + 1;
        out.lines = ln;
        let t = trim_ascii(line);
        if t.is_empty() {
            continue;
        }
        let comment = match ctx.format {
            Format::Text => t[0] == b'#' || t[0] == b'%',
            Format::Csv => t[0] == b'#',
            Format::Dimacs => t[0] == b'c',
            Format::Mtx => t[0] == b'%',
            _ => false,
        };
        if comment {
            continue;
        }
        let mut f = fields_of(t, ctx.format == Format::Csv);
        if ctx.format == Format::Dimacs {
            let tag = f.next().unwrap_or_default();
            if tag != b"a" {
                let msg = if tag == b"p" {
                    "a second problem line".to_string()
                } else {
                    format!("malformed line: expected `a u v w`, found {}", show(line))
                };
                out.err = Some((ln, msg));
                return out;
            }
        }
        let fs: [Option<&[u8]>; 4] = [f.next(), f.next(), f.next(), f.next()];
        let ncols = fs.iter().filter(|x| x.is_some()).count();
        let expect = match ctx.format {
            Format::Text | Format::Csv => None,
            _ => Some(if ctx.weighted { 3 } else { 2 }),
        };
        let bad_shape = match expect {
            Some(e) => ncols != e,
            None => ncols != 2 && ncols != 3,
        };
        if bad_shape {
            let want = match (ctx.format, ctx.weighted) {
                (Format::Dimacs, _) => "`a u v w`",
                (Format::Mtx, true) => "`ROW COL VALUE`",
                (Format::Mtx, false) => "`ROW COL`",
                (Format::Csv, _) => "`u,v` or `u,v,w`",
                _ => "`u v` or `u v w`",
            };
            out.err = Some((
                ln,
                format!("malformed line: expected {want}, found {}", show(line)),
            ));
            return out;
        }
        if matches!(ctx.format, Format::Text | Format::Csv) {
            match out.cols {
                None => out.cols = Some((ncols, ln)),
                Some((c, first)) if c != ncols => {
                    out.err = Some((ln, format!("malformed line: {ncols} columns, but line {{LINE{first}}} has {c}; found {}", show(line))));
                    return out;
                }
                _ => {}
            }
        }
        let (Some(u), Some(v)) = (parse_u64(fs[0].unwrap()), parse_u64(fs[1].unwrap())) else {
            out.err = Some((
                ln,
                format!(
                    "malformed line: vertex ids must be non-negative integers, found {}",
                    show(line)
                ),
            ));
            return out;
        };
        for id in [u, v] {
            if id < ctx.min_id {
                out.err = Some((
                    ln,
                    format!(
                        "vertex id {id} is out of range: ids in this format start at {}",
                        ctx.min_id
                    ),
                ));
                return out;
            }
            if id > ctx.id_max {
                out.err = Some((ln, format!("vertex id {id} {}", ctx.id_max_reason)));
                return out;
            }
        }
        let w = if ncols == 3 {
            match parse_weight(fs[2].unwrap()) {
                Ok(w) => w,
                Err(e) => {
                    out.err = Some((ln, format!("{e} in line {}", show(line))));
                    return out;
                }
            }
        } else {
            1.0
        };
        any = true;
        max_id = max_id.max(u).max(v);
        out.entries += 1;
        out.edges.push(RawEdge { u, v, w });
        if ctx.symmetric && u != v {
            out.edges.push(RawEdge { u: v, v: u, w });
        }
    }
    // `lines` counted split pieces; the newlines are one fewer.
    out.lines = out.lines.saturating_sub(1);
    if any {
        out.max_id = Some(max_id);
    }
    out
}

/// Receives bin32 records as they lie in the input: (u, v) pairs.
pub type PairSink<'a> = dyn FnMut(&[[u32; 2]]) -> Result<()> + 'a;

/// A bin32 chunk checked without decoding it into [`RawEdge`]s: its record count
/// and largest id, or the first id over the limit (as [`parse_binary_chunk`]
/// reports it). The records themselves are handed over as they lie.
pub(super) fn check_pairs_chunk(buf: &[u8], ctx: &LineCtx, edges: Vec<RawEdge>) -> ChunkOut {
    let max_id = buf
        .chunks_exact(4)
        .map(|b| u32::from_le_bytes(b.try_into().unwrap()))
        .max();
    if max_id.is_some_and(|m| m as u64 > ctx.id_max) {
        // Rare: decode the chunk to name the first offending record.
        return parse_binary_chunk(buf, ctx, edges);
    }
    let entries = (buf.len() / 8) as u64;
    ChunkOut {
        edges,
        lines: entries,
        entries,
        max_id: max_id.map(|m| m as u64),
        cols: None,
        err: None,
    }
}

pub(super) fn parse_binary_chunk(buf: &[u8], ctx: &LineCtx, mut edges: Vec<RawEdge>) -> ChunkOut {
    let rs = ctx.format.record_size();
    edges.clear();
    edges.reserve(buf.len() / rs);
    let mut out = ChunkOut {
        edges,
        lines: 0,
        entries: 0,
        max_id: None,
        cols: None,
        err: None,
    };
    let mut max_id = 0u64;
    for (k, r) in buf.chunks_exact(rs).enumerate() {
        let (u, v, w) = match ctx.format {
            Format::Bin32 | Format::Bin32w => {
                let u = u32::from_le_bytes(r[0..4].try_into().unwrap()) as u64;
                let v = u32::from_le_bytes(r[4..8].try_into().unwrap()) as u64;
                let w = if rs == 12 {
                    f32::from_le_bytes(r[8..12].try_into().unwrap())
                } else {
                    1.0
                };
                (u, v, w)
            }
            _ => (
                u64::from_le_bytes(r[0..8].try_into().unwrap()),
                u64::from_le_bytes(r[8..16].try_into().unwrap()),
                1.0,
            ),
        };
        if !w.is_finite() {
            out.err = Some((
                k as u64,
                if w.is_nan() {
                    "weight is NaN".into()
                } else {
                    "weight is not finite".into()
                },
            ));
            return out;
        }
        for id in [u, v] {
            if id > ctx.id_max {
                out.err = Some((k as u64, format!("vertex id {id} {}", ctx.id_max_reason)));
                return out;
            }
        }
        max_id = max_id.max(u).max(v);
        out.edges.push(RawEdge { u, v, w });
    }
    out.entries = out.edges.len() as u64;
    out.lines = out.entries;
    if out.entries > 0 {
        out.max_id = Some(max_id);
    }
    out
}
