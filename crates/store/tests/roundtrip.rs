//! Ingest then read back returns exactly the input edge multiset after the
//! requested transformations, for every input format, gzip or not, random P,
//! random memory budgets (including sort buffers small enough to force the
//! spill-and-merge path), undirected, dedup, self-loop removal and remap.
//! Every reader (grid blocks, grid rows/columns, selected sources, CSR out and
//! in, degrees, id map) is checked against the same expectation.

use outcore_store::ingest::Quiet;
use outcore_store::{ingest, IdMap, IngestOptions, Store};
use proptest::prelude::*;
use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fmt {
    Text,
    TextCrlf,
    Dimacs,
    Mtx,
    Bin32,
    Bin32w,
    Bin64,
}

#[derive(Debug, Clone)]
struct Case {
    fmt: Fmt,
    gzip: bool,
    n: u64,
    edges: Vec<(u64, u64, u32)>, // ids 0-based; weight index
    weighted: bool,
    undirected: bool,
    dedup: bool,
    drop_loops: bool,
    remap: bool,
    partitions: u32,
    sort_cap: Option<usize>,
    in_edges: bool,
}

fn w_of(k: u32) -> f32 {
    0.25 + (k % 8) as f32 * 0.5
}

/// The id written to the file for dense-ish id `x`.
fn written(case: &Case, x: u64) -> u64 {
    let one = matches!(case.fmt, Fmt::Dimacs | Fmt::Mtx) as u64;
    if case.remap && matches!(case.fmt, Fmt::Text | Fmt::TextCrlf | Fmt::Bin64) {
        x * 1_000_003 + 17 + (1 << 40)
    } else {
        x + one
    }
}

fn write_input(case: &Case, dir: &Path) -> std::path::PathBuf {
    let ext = match case.fmt {
        Fmt::Text | Fmt::TextCrlf => "txt",
        Fmt::Dimacs => "gr",
        Fmt::Mtx => "mtx",
        Fmt::Bin32 => "bin32",
        Fmt::Bin32w => "bin32w",
        Fmt::Bin64 => "bin64",
    };
    let mut bytes: Vec<u8> = Vec::new();
    let nl = if case.fmt == Fmt::TextCrlf {
        "\r\n"
    } else {
        "\n"
    };
    let m = case.edges.len();
    match case.fmt {
        Fmt::Text | Fmt::TextCrlf => {
            write!(bytes, "# a comment{nl}% another{nl}{nl}").unwrap();
            for (k, &(u, v, w)) in case.edges.iter().enumerate() {
                let sep = if k % 2 == 0 { "\t" } else { "  " };
                let (u, v) = (written(case, u), written(case, v));
                if case.weighted {
                    write!(bytes, "{u}{sep}{v}{sep}{}{nl}", w_of(w)).unwrap();
                } else {
                    write!(bytes, " {u}{sep}{v} {nl}").unwrap();
                }
            }
        }
        Fmt::Dimacs => {
            write!(bytes, "c test graph\np sp {} {m}\nc more\n", case.n).unwrap();
            for &(u, v, w) in &case.edges {
                writeln!(
                    bytes,
                    "a {} {} {}",
                    written(case, u),
                    written(case, v),
                    w_of(w)
                )
                .unwrap();
            }
        }
        Fmt::Mtx => {
            let field = if case.weighted { "real" } else { "pattern" };
            write!(
                bytes,
                "%%MatrixMarket matrix coordinate {field} general\n% comment\n{} {} {m}\n",
                case.n, case.n
            )
            .unwrap();
            for &(u, v, w) in &case.edges {
                if case.weighted {
                    writeln!(
                        bytes,
                        "{} {} {}",
                        written(case, u),
                        written(case, v),
                        w_of(w)
                    )
                    .unwrap();
                } else {
                    writeln!(bytes, "{} {}", written(case, u), written(case, v)).unwrap();
                }
            }
        }
        Fmt::Bin32 | Fmt::Bin32w => {
            for &(u, v, w) in &case.edges {
                bytes.extend_from_slice(&(written(case, u) as u32).to_le_bytes());
                bytes.extend_from_slice(&(written(case, v) as u32).to_le_bytes());
                if case.fmt == Fmt::Bin32w {
                    bytes.extend_from_slice(&w_of(w).to_le_bytes());
                }
            }
        }
        Fmt::Bin64 => {
            for &(u, v, _) in &case.edges {
                bytes.extend_from_slice(&written(case, u).to_le_bytes());
                bytes.extend_from_slice(&written(case, v).to_le_bytes());
            }
        }
    }
    let mut path = dir.join(format!("input.{ext}"));
    if case.gzip {
        path = dir.join(format!("input.{ext}.gz"));
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        gz.write_all(&bytes).unwrap();
        bytes = gz.finish().unwrap();
    }
    std::fs::write(&path, bytes).unwrap();
    path
}

type Multiset = BTreeMap<(u64, u64, u32), usize>;

/// The expected edges in written ids, weights as f32 bits.
fn expected(case: &Case) -> (Multiset, u64) {
    let weighted = case.weighted;
    let mut list: Vec<(u64, u64, f32)> = Vec::new();
    for &(u, v, w) in &case.edges {
        let w = if weighted { w_of(w) } else { 1.0 };
        let (u, v) = (written(case, u), written(case, v));
        if u == v && case.drop_loops {
            continue;
        }
        list.push((u, v, w));
        if case.undirected && u != v {
            list.push((v, u, w));
        }
    }
    list.sort_by_key(|a| (a.0, a.1, a.2.to_bits()));
    if case.dedup {
        list.dedup_by(|b, a| a.0 == b.0 && a.1 == b.1);
    }
    let mut ms = Multiset::new();
    for (u, v, w) in list {
        *ms.entry((u, v, w.to_bits())).or_default() += 1;
    }
    let n = if case.remap {
        let mut ids: Vec<u64> = case.edges.iter().flat_map(|&(u, v, _)| [u, v]).collect();
        ids.sort();
        ids.dedup();
        ids.len() as u64
    } else {
        let max = case
            .edges
            .iter()
            .map(|&(u, v, _)| u.max(v) + 1)
            .max()
            .unwrap_or(0);
        if matches!(case.fmt, Fmt::Dimacs | Fmt::Mtx) {
            max.max(case.n)
        } else {
            max
        }
    };
    (ms, n)
}

fn add(ms: &mut Multiset, map: &IdMap, u: u32, v: u32, w: f32) {
    *ms.entry((map.to_user(u), map.to_user(v), w.to_bits()))
        .or_default() += 1;
}

fn check(case: &Case) {
    let dir = tempfile::tempdir().unwrap();
    let input = write_input(case, dir.path());
    let out = dir.path().join("store");
    let opts = IngestOptions {
        undirected: case.undirected,
        dedup: case.dedup,
        drop_self_loops: case.drop_loops,
        remap: case.remap,
        partitions: Some(case.partitions),
        sort_buffer_records: case.sort_cap,
        in_edges: case.in_edges,
        weighted: if case.weighted || matches!(case.fmt, Fmt::Dimacs) {
            None
        } else {
            Some(false)
        },
        ..Default::default()
    };
    let report = ingest(&[input], &out, &opts, &Quiet).unwrap();
    let (want, n) = expected(case);
    let m: usize = want.values().sum();
    let weighted = case.weighted || case.fmt == Fmt::Dimacs;
    let store = Store::open(&out).unwrap();
    assert_eq!(store.vertices(), n);
    assert_eq!(store.edges(), m as u64);
    assert_eq!(report.edges, m as u64);
    assert_eq!(store.weighted(), weighted);
    let map = store.id_map().unwrap();
    for v in 0..n as u32 {
        assert_eq!(map.to_dense(map.to_user(v)), Some(v));
    }
    assert_eq!(
        map.resident_bytes(),
        0,
        "a store's ids are mapped, not held"
    );

    // Grid, block by block, with structure checks.
    let grid = store.grid().unwrap();
    let p = store.partitions();
    let mut got = Multiset::new();
    for i in 0..p {
        for (j, b) in grid.row(i, true).enumerate() {
            let b = b.unwrap();
            assert_eq!(b.srcs.len() + 1, b.offs.len());
            let mut prev: Option<(u32, u32)> = None;
            for (u, v, w) in b.edges() {
                assert!(store.interval(i).contains(&u), "source {u} outside row {i}");
                assert!(
                    store.interval(j as u32).contains(&v),
                    "target {v} outside column {j}"
                );
                assert!(prev.is_none_or(|pr| pr <= (u, v)), "block not sorted");
                prev = Some((u, v));
                add(&mut got, &map, u, v, w);
            }
            // Selected sources: every other source of the block.
            let pick: Vec<u32> = b.srcs.iter().copied().step_by(2).collect();
            let sel = grid.read_sources(i, j as u32, &pick, true).unwrap();
            let want_sel: Vec<(u32, u32, f32)> =
                b.edges().filter(|e| pick.contains(&e.0)).collect();
            assert_eq!(sel.edges().collect::<Vec<_>>(), want_sel);
            // Merging runs across gaps reads the same edges in fewer requests.
            let counted = outcore_io::IoStats::new();
            let own =
                Store::open_with(store.dir(), outcore_io::ReadMode::Buffered, counted.clone())
                    .unwrap()
                    .grid()
                    .unwrap();
            for gap in [4u64, 64, 1 << 20] {
                let before = counted.snapshot();
                let merged = own
                    .read_sources_merged(i, j as u32, &pick, true, gap)
                    .unwrap();
                let requests = counted.snapshot().since(&before).read_requests;
                assert_eq!(merged.edges().collect::<Vec<_>>(), want_sel, "gap {gap}");
                if gap == 1 << 20 && !pick.is_empty() {
                    // The index, then one request for targets and one for weights.
                    assert!(requests <= 3, "gap {gap}: {requests} requests");
                }
            }
        }
    }
    assert_eq!(got, want, "grid");
    // Columns see the same edges.
    let mut col_edges = 0;
    for j in 0..p {
        for b in grid.column(j, false) {
            col_edges += b.unwrap().num_edges();
        }
    }
    assert_eq!(col_edges, m);

    // CSR out, degrees.
    let csr = store.csr("out").unwrap();
    let mut got = Multiset::new();
    let deg = store.degrees("out").unwrap();
    let indeg = store.degrees("in").unwrap();
    let mut indeg_count = vec![0u32; n as usize];
    for u in 0..n as u32 {
        let (t, w) = csr.edges(u).unwrap();
        assert_eq!(t.len() as u32, deg[u as usize]);
        assert!(t.windows(2).all(|x| x[0] <= x[1]));
        for (k, &v) in t.iter().enumerate() {
            add(&mut got, &map, u, v, w.as_ref().map_or(1.0, |w| w[k]));
            indeg_count[v as usize] += 1;
        }
    }
    assert_eq!(got, want, "csr out");
    assert_eq!(indeg, indeg_count);
    if case.in_edges {
        let csr_in = store.csr("in").unwrap();
        let mut got = Multiset::new();
        for v in 0..n as u32 {
            let (s, w) = csr_in.edges(v).unwrap();
            for (k, &u) in s.iter().enumerate() {
                add(&mut got, &map, u, v, w.as_ref().map_or(1.0, |w| w[k]));
            }
        }
        assert_eq!(got, want, "csr in");
    }
    assert!(store.verify().iter().all(|(_, r)| r.is_ok()));
    // The directory holds the manifest and exactly the files it lists.
    let mut on_disk: Vec<String> = std::fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    let mut listed: Vec<String> = store
        .manifest()
        .files
        .iter()
        .map(|f| f.name.clone())
        .collect();
    listed.push("manifest.json".into());
    on_disk.sort();
    listed.sort();
    assert_eq!(on_disk, listed);
}

fn arb_case() -> impl Strategy<Value = Case> {
    let fmt = prop_oneof![
        Just(Fmt::Text),
        Just(Fmt::TextCrlf),
        Just(Fmt::Dimacs),
        Just(Fmt::Mtx),
        Just(Fmt::Bin32),
        Just(Fmt::Bin32w),
        Just(Fmt::Bin64)
    ];
    (
        fmt,
        any::<bool>(),
        1u64..120,
        0usize..1500,
        any::<[bool; 6]>(),
        1u32..9,
        prop_oneof![Just(None), (1usize..400).prop_map(Some)],
        any::<u64>(),
    )
        .prop_map(|(fmt, gzip, n, m, flags, partitions, sort_cap, seed)| {
            let mut x = seed | 1;
            let mut next = || {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x
            };
            let edges = (0..m)
                .map(|_| (next() % n, next() % n, (next() % 5) as u32))
                .collect();
            let weighted = match fmt {
                Fmt::Dimacs | Fmt::Bin32w => true,
                Fmt::Bin32 | Fmt::Bin64 => false,
                _ => flags[0],
            };
            Case {
                fmt,
                gzip,
                n: n + flags[1] as u64 * 3,
                edges,
                weighted,
                undirected: flags[2],
                dedup: flags[3],
                drop_loops: flags[4],
                remap: flags[5] && !matches!(fmt, Fmt::Bin32 | Fmt::Bin32w),
                partitions,
                sort_cap,
                in_edges: flags[1] ^ flags[3],
            }
        })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]
    #[test]
    fn ingest_round_trips(case in arb_case()) {
        check(&case);
    }
}

#[test]
fn empty_input_gives_a_valid_empty_store() {
    let case = Case {
        fmt: Fmt::Text,
        gzip: false,
        n: 0,
        edges: vec![],
        weighted: false,
        undirected: false,
        dedup: false,
        drop_loops: false,
        remap: false,
        partitions: 1,
        sort_cap: None,
        in_edges: false,
    };
    check(&case);
}

#[test]
fn external_sort_with_many_runs_and_every_option() {
    let mut x = 99u64;
    let mut next = || {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        x >> 33
    };
    let edges = (0..20_000)
        .map(|_| (next() % 3000, next() % 3000, (next() % 8) as u32))
        .collect();
    for (fmt, remap) in [(Fmt::Text, true), (Fmt::Bin32w, false), (Fmt::Mtx, false)] {
        let case = Case {
            fmt,
            gzip: true,
            n: 3000,
            edges: Vec::clone(&edges),
            weighted: true,
            undirected: true,
            dedup: true,
            drop_loops: true,
            remap,
            partitions: 7,
            sort_cap: Some(997),
            in_edges: true,
        };
        check(&case);
    }
}

#[test]
fn too_many_distinct_vertices_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("g.txt");
    let text: String = (0..60u64)
        .map(|k| format!("{} {}\n", k * 1_000_000_007, k * 1_000_000_007 + 1))
        .collect();
    std::fs::write(&input, text).unwrap();
    let out = dir.path().join("s");
    let opts = IngestOptions {
        remap: true,
        max_vertices: 100,
        ..Default::default()
    };
    let err = ingest(std::slice::from_ref(&input), &out, &opts, &Quiet)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("more than 100 distinct vertices (120 found)"),
        "{err}"
    );
    assert!(!out.exists());
    let opts = IngestOptions {
        remap: true,
        max_vertices: 120,
        ..Default::default()
    };
    assert_eq!(ingest(&[input], &out, &opts, &Quiet).unwrap().vertices, 120);
}

/// Both stores list the same files (names, sizes, CRCs) with the same bytes.
fn assert_same_files(a: &Path, b: &Path, what: &str) {
    let files = Store::open(a).unwrap().manifest().files.clone();
    assert_eq!(files, Store::open(b).unwrap().manifest().files, "{what}");
    for f in &files {
        let (x, y) = (
            std::fs::read(a.join(&f.name)).unwrap(),
            std::fs::read(b.join(&f.name)).unwrap(),
        );
        assert!(x == y, "{what}: {} differs", f.name);
    }
}

/// The in-memory path (counting sort) and the external path (sorted runs and a
/// merge) write byte-identical files for the same input and options.
#[test]
fn in_memory_and_external_paths_write_identical_stores() {
    let mut x = 4242u64;
    let mut next = || {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        x >> 33
    };
    // Skewed sources (many parallel edges and self-loops) over 500 vertices.
    let edges: Vec<(u64, u64, u32)> = (0..6000)
        .map(|_| {
            let u = next() % 500;
            let u = if next() % 3 == 0 { u % 7 } else { u };
            (u, next() % 500, (next() % 8) as u32)
        })
        .collect();
    for (k, fmt) in [Fmt::Bin32, Fmt::Bin32w, Fmt::Text, Fmt::Mtx]
        .into_iter()
        .enumerate()
    {
        for flags in 0..8u32 {
            let case = Case {
                fmt,
                gzip: false,
                n: 500,
                edges: edges.clone(),
                weighted: fmt != Fmt::Bin32,
                undirected: flags & 1 != 0,
                dedup: flags & 2 != 0,
                drop_loops: flags & 4 != 0,
                remap: k == 2 && flags & 1 != 0,
                partitions: 3 + flags,
                sort_cap: None,
                in_edges: (flags + k as u32).is_multiple_of(2),
            };
            let dir = tempfile::tempdir().unwrap();
            let input = write_input(&case, dir.path());
            let mut stores = Vec::new();
            for cap in [None, Some(301)] {
                let out = dir.path().join(format!("s{}", cap.is_some()));
                let opts = IngestOptions {
                    undirected: case.undirected,
                    dedup: case.dedup,
                    drop_self_loops: case.drop_loops,
                    remap: case.remap,
                    partitions: Some(case.partitions),
                    sort_buffer_records: cap,
                    in_edges: case.in_edges,
                    weighted: Some(case.weighted),
                    ..Default::default()
                };
                let report = ingest(std::slice::from_ref(&input), &out, &opts, &Quiet).unwrap();
                assert_eq!(report.sort_runs > 0, cap.is_some());
                stores.push(out);
            }
            assert_same_files(&stores[0], &stores[1], &format!("{fmt:?} flags {flags}"));
        }
    }
}

/// A budget small enough for many sort runs and many source ranges (the external
/// path takes the runs range by range) still writes the same files as one
/// in-memory pass.
#[test]
fn many_runs_and_source_ranges_write_the_in_memory_store() {
    let mut x = 777u64;
    let mut next = || {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        x >> 33
    };
    let n = 30_000u64;
    // A few heavy sources, as in a power-law graph, and many light ones; and the
    // same number of edges spread evenly.
    let mut heavy = true;
    let mut gen = |heavy: bool| -> Vec<(u64, u64, u32)> {
        (0..250_000)
            .map(|_| {
                let u = if heavy && next() % 4 == 0 {
                    next() % 5
                } else {
                    next() % n
                };
                (u, next() % n, (next() % 8) as u32)
            })
            .collect()
    };
    let skewed = gen(true);
    let even = gen(false);
    // P = 1: one grid row, read back in several chunks; P = 40: many small rows
    // (the heavy sources' row too large for one range: a second pass); P = 60 on
    // even sources: every row fits a range, so the grid is cut in the one pass.
    let mut second_pass = Vec::new();
    for (fmt, dedup, in_edges, partitions) in [
        (Fmt::Bin32, false, false, 40),
        (Fmt::Bin32w, true, true, 5),
        (Fmt::Bin32, true, false, 1),
        (Fmt::Bin32, false, false, 60),
        (Fmt::Bin32w, true, true, 60),
    ] {
        heavy = partitions != 60 && heavy;
        let case = Case {
            fmt,
            gzip: false,
            n,
            edges: if heavy { skewed.clone() } else { even.clone() },
            weighted: fmt == Fmt::Bin32w,
            undirected: false,
            dedup,
            drop_loops: false,
            remap: false,
            partitions,
            sort_cap: None,
            in_edges,
        };
        let dir = tempfile::tempdir().unwrap();
        let input = write_input(&case, dir.path());
        let mut stores = Vec::new();
        for memory in [1u64 << 30, 1 << 20] {
            let out = dir.path().join(format!("s{memory}"));
            let opts = IngestOptions {
                dedup,
                in_edges,
                partitions: Some(partitions),
                memory,
                weighted: Some(case.weighted),
                ..Default::default()
            };
            let report = ingest(std::slice::from_ref(&input), &out, &opts, &Quiet).unwrap();
            assert_eq!(report.sort_runs > 3, memory == 1 << 20, "{report:?}");
            if memory == 1 << 20 {
                second_pass.push(report.grid_second_pass);
            } else {
                assert!(!report.grid_second_pass, "in-memory path: {report:?}");
            }
            stores.push(out);
        }
        assert_same_files(&stores[0], &stores[1], &format!("{fmt:?} P={partitions}"));
    }
    assert_eq!(second_pass, [true, true, true, false, false]);
}

/// One source with more edges than the budget holds at once is refused with a
/// clear error, and no store is left behind.
#[test]
fn a_source_too_heavy_for_the_budget_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("g.bin32");
    let mut bytes = Vec::new();
    for k in 0..200_000u32 {
        bytes.extend_from_slice(&7u32.to_le_bytes());
        bytes.extend_from_slice(&(k % 1000).to_le_bytes());
    }
    std::fs::write(&input, bytes).unwrap();
    let out = dir.path().join("s");
    let opts = IngestOptions {
        memory: 1 << 20,
        ..Default::default()
    };
    let err = ingest(std::slice::from_ref(&input), &out, &opts, &Quiet)
        .unwrap_err()
        .to_string();
    // Found while sorting, from the runs' counts: a lower bound on the list.
    assert!(
        err.contains("vertex 7 has at least") && err.contains("out-edges, more than fit --memory"),
        "{err}"
    );
    assert!(err.contains("found while sorting"), "{err}");
    assert!(!out.exists());
}

#[test]
fn an_id_map_in_memory_says_what_it_holds() {
    let m = IdMap::from_user_ids(vec![30, 10, 20]).unwrap();
    assert_eq!(m.user_order(), Some(&[1u32, 2, 0][..]));
    assert_eq!(m.to_dense(10), Some(1));
    assert_eq!(m.to_dense(11), None);
    assert_eq!(m.to_user(0), 30);
    assert_eq!(m.resident_bytes(), 3 * 8 + 3 * 4);
    let a = IdMap::from_user_ids(vec![10, 20, 30]).unwrap();
    assert!(a.user_order().is_none());
    assert_eq!(a.resident_bytes(), 24);
    assert!(IdMap::from_user_ids(vec![1, 5, 1]).is_err());
}
