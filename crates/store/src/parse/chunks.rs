//! Parsing one chunk: text lines (SNAP, CSV, DIMACS arcs, Matrix Market entries)
//! and binary records, with exact line or record numbers for errors.

use super::*;

pub(super) struct ChunkOut {
    pub(super) edges: Vec<RawEdge>,
    /// The edges as (u, v) pairs instead, when [`LineCtx::pairs`] asks for them.
    pub(super) pairs: Vec<[u32; 2]>,
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
    /// SNAP text into `pairs` rather than `edges` (unweighted, every id at most
    /// `id_max` <= u32::MAX, going to a sink that takes pairs as they are).
    pub(super) pairs: bool,
}

/// A chunk's output buffers, reused from chunk to chunk.
pub(super) type OutBufs = (Vec<RawEdge>, Vec<[u32; 2]>);

/// What one text line holds.
enum Line {
    /// Blank, a comment.
    Skip,
    Edge(u64, u64, f32),
    Err(String),
}

pub(super) fn parse_text_chunk(buf: &[u8], ctx: &LineCtx, bufs: OutBufs) -> ChunkOut {
    let (mut edges, mut pairs) = bufs;
    edges.clear();
    pairs.clear();
    debug_assert!(!ctx.pairs || (ctx.id_max <= u32::MAX as u64 && !ctx.symmetric));
    let mut out = ChunkOut {
        edges,
        pairs,
        lines: 0,
        entries: 0,
        max_id: None,
        cols: None,
        err: None,
    };
    let mut max_id: u64 = 0;
    let mut any = false;
    let fast = ctx.format == Format::Text;
    let n = buf.len();
    let mut pos = 0usize;
    // Line number (in the chunk) of the line starting at `pos`.
    let mut ln = 0u64;
    loop {
        ln += 1;
        // The common SNAP line in one pass; anything else (and every line the
        // fast path would have to refuse) goes through the general parser, which
        // gives the exact message.
        let fast_line = if fast {
            fast_text_line(buf, pos).filter(|&(u, v, _, cols, _)| {
                u.min(v) >= ctx.min_id
                    && u.max(v) <= ctx.id_max
                    && out.cols.is_none_or(|(c, _)| c == cols)
            })
        } else {
            None
        };
        let (line, end) = match fast_line {
            Some((u, v, w, cols, end)) => {
                if out.cols.is_none() {
                    out.cols = Some((cols, ln));
                }
                (Line::Edge(u, v, w), end)
            }
            None => {
                let end = memchr::memchr(b'\n', &buf[pos..]).map_or(n, |i| pos + i);
                let raw = &buf[pos..end];
                (
                    text_line(raw.strip_suffix(b"\r").unwrap_or(raw), ln, ctx, &mut out),
                    end,
                )
            }
        };
        match line {
            Line::Skip => {}
            Line::Edge(u, v, w) => {
                any = true;
                max_id = max_id.max(u).max(v);
                out.entries += 1;
                if ctx.pairs {
                    // Ids checked against `id_max`, which fits u32.
                    out.pairs.push([u as u32, v as u32]);
                } else {
                    out.edges.push(RawEdge { u, v, w });
                    if ctx.symmetric && u != v {
                        out.edges.push(RawEdge { u: v, v: u, w });
                    }
                }
            }
            Line::Err(e) => {
                out.lines = ln;
                out.err = Some((ln, e));
                return out;
            }
        }
        if end >= n {
            break;
        }
        pos = end + 1;
    }
    // `ln` counted the pieces between newlines; the newlines are one fewer.
    out.lines = ln - 1;
    if any {
        out.max_id = Some(max_id);
    }
    out
}

/// A plain SNAP line at `pos`: optional spaces or tabs, two ids of at most 19
/// digits and an optional weight, separated by spaces or tabs, then the newline
/// (or the end of `buf`). Returns (u, v, weight, columns, index of the newline);
/// `None` for anything else — comments, blank lines, `\r`, other whitespace,
/// signs, long ids, bad weights, a fourth column — which the general parser
/// takes.
#[inline]
fn fast_text_line(buf: &[u8], mut i: usize) -> Option<(u64, u64, f32, usize, usize)> {
    let n = buf.len();
    let sep = |b: u8| b == b' ' || b == b'\t';
    let skip = |mut i: usize| {
        while i < n && sep(buf[i]) {
            i += 1;
        }
        i
    };
    let id = |mut i: usize| -> Option<(u64, usize)> {
        let start = i;
        let mut x = 0u64;
        // Up to eight digits at once.
        if i + 8 <= n {
            let (v, k) = swar_digits(u64::from_le_bytes(buf[i..i + 8].try_into().unwrap()));
            if k < 8 {
                return (k > 0).then_some((v, i + k));
            }
            x = v;
            i += 8;
        }
        while i < n {
            let d = buf[i].wrapping_sub(b'0');
            if d > 9 {
                break;
            }
            // Wraps only past 19 digits, which are refused below.
            x = x.wrapping_mul(10).wrapping_add(d as u64);
            i += 1;
        }
        (i > start && i - start <= 19).then_some((x, i))
    };
    i = skip(i);
    let (u, j) = id(i)?;
    i = skip(j);
    if i == j {
        return None;
    }
    let (v, j) = id(i)?;
    if j < n && !sep(buf[j]) && buf[j] != b'\n' {
        return None;
    }
    i = skip(j);
    if i >= n || buf[i] == b'\n' {
        return Some((u, v, 1.0, 2, i));
    }
    let ws = i;
    while i < n && !sep(buf[i]) && buf[i] != b'\n' {
        i += 1;
    }
    let w = parse_weight(&buf[ws..i]).ok()?;
    i = skip(i);
    (i >= n || buf[i] == b'\n').then_some((u, v, w, 3, i))
}

/// The leading decimal digits of the eight bytes in `w` (little-endian: the
/// first byte lowest): their value and count (8 when all are digits). SWAR: a
/// byte is a digit when it minus `'0'` is at most 9; bytes after the first
/// non-digit may be garbled by borrows and carries, and are not looked at.
#[inline]
fn swar_digits(w: u64) -> (u64, usize) {
    const ONES: u64 = 0x0101_0101_0101_0101;
    let t = w.wrapping_sub(b'0' as u64 * ONES);
    let non = (t | t.wrapping_add(0x76 * ONES)) & (0x80 * ONES);
    let k = (non.trailing_zeros() / 8) as usize;
    if k == 0 {
        return (0, 0);
    }
    // The k digits moved to the top bytes (leading zeros below), then combined
    // pairwise: 2-digit, 4-digit, 8-digit groups.
    let mut v = t << (8 * (8 - k));
    v = v.wrapping_mul(10).wrapping_add(v >> 8);
    v = ((v & 0x0000_00FF_0000_00FF).wrapping_mul(100 + (1_000_000 << 32))
        + ((v >> 16) & 0x0000_00FF_0000_00FF).wrapping_mul(1 + (10_000 << 32)))
        >> 32;
    (v, k)
}

/// One line (without its newline and `\r`) by the general rules of every text
/// format; `out.cols` records the first data line's column count.
fn text_line(line: &[u8], ln: u64, ctx: &LineCtx, out: &mut ChunkOut) -> Line {
    let t = trim_ascii(line);
    if t.is_empty() {
        return Line::Skip;
    }
    let comment = match ctx.format {
        Format::Text => t[0] == b'#' || t[0] == b'%',
        Format::Csv => t[0] == b'#',
        Format::Dimacs => t[0] == b'c',
        Format::Mtx => t[0] == b'%',
        _ => false,
    };
    if comment {
        return Line::Skip;
    }
    let mut f = fields_of(t, ctx.format == Format::Csv);
    if ctx.format == Format::Dimacs {
        let tag = f.next().unwrap_or_default();
        if tag != b"a" {
            return Line::Err(if tag == b"p" {
                "a second problem line".to_string()
            } else {
                format!("malformed line: expected `a u v w`, found {}", show(line))
            });
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
        return Line::Err(format!(
            "malformed line: expected {want}, found {}",
            show(line)
        ));
    }
    if matches!(ctx.format, Format::Text | Format::Csv) {
        match out.cols {
            None => out.cols = Some((ncols, ln)),
            Some((c, first)) if c != ncols => {
                return Line::Err(format!(
                    "malformed line: {ncols} columns, but line {{LINE{first}}} has {c}; found {}",
                    show(line)
                ));
            }
            _ => {}
        }
    }
    let (Some(u), Some(v)) = (parse_u64(fs[0].unwrap()), parse_u64(fs[1].unwrap())) else {
        return Line::Err(format!(
            "malformed line: vertex ids must be non-negative integers, found {}",
            show(line)
        ));
    };
    for id in [u, v] {
        if id < ctx.min_id {
            return Line::Err(format!(
                "vertex id {id} is out of range: ids in this format start at {}",
                ctx.min_id
            ));
        }
        if id > ctx.id_max {
            return Line::Err(format!("vertex id {id} {}", ctx.id_max_reason));
        }
    }
    let w = if ncols == 3 {
        match parse_weight(fs[2].unwrap()) {
            Ok(w) => w,
            Err(e) => return Line::Err(format!("{e} in line {}", show(line))),
        }
    } else {
        1.0
    };
    Line::Edge(u, v, w)
}

/// Receives (u, v) pairs as they are: bin32 records as they lie in the input,
/// unweighted SNAP text lines as parsed (ids as written, each at most the limit).
pub type PairSink<'a> = dyn FnMut(&[[u32; 2]]) -> Result<()> + 'a;

/// A bin32 chunk checked without decoding it into [`RawEdge`]s: its record count
/// and largest id, or the first id over the limit (as [`parse_binary_chunk`]
/// reports it). The records themselves are handed over as they lie.
pub(super) fn check_pairs_chunk(buf: &[u8], ctx: &LineCtx, bufs: OutBufs) -> ChunkOut {
    let max_id = buf
        .chunks_exact(4)
        .map(|b| u32::from_le_bytes(b.try_into().unwrap()))
        .max();
    if max_id.is_some_and(|m| m as u64 > ctx.id_max) {
        // Rare: decode the chunk to name the first offending record.
        return parse_binary_chunk(buf, ctx, bufs);
    }
    let entries = (buf.len() / 8) as u64;
    ChunkOut {
        edges: bufs.0,
        pairs: bufs.1,
        lines: entries,
        entries,
        max_id: max_id.map(|m| m as u64),
        cols: None,
        err: None,
    }
}

pub(super) fn parse_binary_chunk(buf: &[u8], ctx: &LineCtx, bufs: OutBufs) -> ChunkOut {
    let rs = ctx.format.record_size();
    let (mut edges, pairs) = bufs;
    edges.clear();
    edges.reserve(buf.len() / rs);
    let mut out = ChunkOut {
        edges,
        pairs,
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

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn ctx(id_max: u64, min_id: u64) -> LineCtx {
        LineCtx {
            format: Format::Text,
            weighted: false,
            symmetric: false,
            id_max,
            id_max_reason: "is too large".into(),
            min_id,
            pairs: false,
        }
    }

    /// Every line through the general rules only (the parser before its fast
    /// path): what the fast path must reproduce exactly.
    fn general(buf: &[u8], ctx: &LineCtx) -> ChunkOut {
        let mut out = ChunkOut {
            edges: Vec::new(),
            pairs: Vec::new(),
            lines: 0,
            entries: 0,
            max_id: None,
            cols: None,
            err: None,
        };
        let mut max_id = None;
        for (k, line) in lines(buf).enumerate() {
            let ln = k as u64 + 1;
            out.lines = ln;
            match text_line(line, ln, ctx, &mut out) {
                Line::Skip => {}
                Line::Edge(u, v, w) => {
                    out.entries += 1;
                    max_id = Some(u.max(v).max(max_id.unwrap_or(0)));
                    out.edges.push(RawEdge { u, v, w });
                }
                Line::Err(e) => {
                    out.err = Some((ln, e));
                    return out;
                }
            }
        }
        out.lines -= 1;
        out.max_id = max_id;
        out
    }

    fn same(buf: &[u8], ctx: &LineCtx) {
        let b = general(buf, ctx);
        let a = parse_text_chunk(buf, ctx, Default::default());
        assert!(a.pairs.is_empty());
        check(&a, &b, buf);
        if ctx.id_max <= u32::MAX as u64 {
            // As pairs: the same edges, weights of 1 (unweighted text only).
            let pc = LineCtx {
                pairs: true,
                id_max_reason: ctx.id_max_reason.clone(),
                ..*ctx
            };
            let mut a = parse_text_chunk(buf, &pc, Default::default());
            assert!(a.edges.is_empty());
            a.edges = a
                .pairs
                .iter()
                .map(|p| RawEdge {
                    u: p[0] as u64,
                    v: p[1] as u64,
                    w: 1.0,
                })
                .collect();
            let mut b = general(buf, ctx);
            for e in &mut b.edges {
                e.w = 1.0;
            }
            check(&a, &b, buf);
        }
    }

    fn check(a: &ChunkOut, b: &ChunkOut, buf: &[u8]) {
        let key = |o: &ChunkOut| {
            (
                o.edges
                    .iter()
                    .map(|e| (e.u, e.v, e.w.to_bits()))
                    .collect::<Vec<_>>(),
                o.lines,
                o.entries,
                o.max_id,
                o.cols,
                o.err.clone(),
            )
        };
        assert_eq!(key(a), key(b), "{:?}", String::from_utf8_lossy(buf));
    }

    #[test]
    fn fast_path_matches_the_general_rules_on_edge_cases() {
        let c = ctx(u32::MAX as u64 - 1, 0);
        for buf in [
            &b""[..],
            b"\n",
            b"1 2",
            b"1 2\n",
            b"1 2\n3 4\n",
            b"  1\t 2 \t\n",
            b"1 2\r\n3 4\r\n",
            b"# c\n1 2\n% d\n\n5 6",
            b"1 2 0.5\n3 4 1e3\n",
            b"1 2\n3 4 0.5\n",
            b"1 2 0.5\n3 4\n",
            b"1 2 3 4\n",
            b"1\n",
            b"1 \n",
            b"1 2x\n",
            b"-1 2\n",
            b"1 2 nan\n",
            b"1 2 -3.5\n",
            b"4294967295 1\n",
            b"00000000000000000001 2\n",
            b"99999999999999999999 2\n",
            b"12345678 87654321\n",
            b"123456789 1234567890123456789\n",
            b"1234567890123456789 1\n",
            b"18446744073709551615 1\n",
            b"00000000 00000001 2.5\n",
            b"1\x0c 2\n",
            b"1 2\x0c\n",
            b"\xef\xbb\xbf1 2\n",
        ] {
            same(buf, &c);
        }
        same(b"0 1\n1 2\n", &ctx(10, 1));
    }

    #[test]
    fn swar_digits_reads_every_prefix() {
        for s in [
            "", "x", "0", "7", "42", "123", "9999", "12345", "654321", "1234567", "87654321",
        ] {
            for tail in ["", " ", "\n", "x", "9"] {
                let mut b = format!("{s}{tail}").into_bytes();
                b.resize(8, b' ');
                let (v, k) = swar_digits(u64::from_le_bytes(b[..8].try_into().unwrap()));
                let digits: String = b
                    .iter()
                    .take_while(|c| c.is_ascii_digit())
                    .map(|&c| c as char)
                    .collect();
                assert_eq!(k, digits.len(), "{b:?}");
                assert_eq!(v, digits.parse::<u64>().unwrap_or(0), "{b:?}");
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]
        #[test]
        fn fast_path_matches_the_general_rules(
            bytes in proptest::collection::vec(
                proptest::sample::select(b"0123456789  \t\t\n\n\n\r#-.e5x".to_vec()),
                0..200,
            ),
            id_max in prop_oneof![Just(u64::MAX), Just(u32::MAX as u64 - 1), 0u64..100_000],
            min_id in 0u64..2,
        ) {
            same(&bytes, &ctx(id_max, min_id));
        }
    }
}
