//! The vertex-centric engine's algorithms against the in-memory references of
//! `outcore-testkit` (BFS depths, Dijkstra distances, union-find components,
//! Brandes, all-pairs BFS) on seeded generated graphs, for every setting that
//! must not change the answer: page size (512 B to 64 KiB), page cache and static
//! cache sizes, selection policy (gvs, lowd, highd, random), queue depth, and
//! vertex order (original, norder, degree, random). BFS and SSSP trees also pass
//! the Graph500 rules of `verify`.

use outcore_algos::vc::{self, VAlgo, VParams};
use outcore_algos::{verify::verify, Algo, Output, Params};
use outcore_engine::vertex::{VertexConfig, VertexEngine};
use outcore_io::IoStats;
use outcore_store::ingest::Quiet;
use outcore_store::order::{reorder, Order};
use outcore_store::select::{self, Policy, SelectOptions};
use outcore_store::{ingest, IngestOptions, Store};
use outcore_testkit::gen::{generate, GenKind, GenOptions};
use outcore_testkit::reference::{self, MemGraph};
use std::path::Path;

struct Case {
    name: &'static str,
    kind: GenKind,
    weighted: bool,
    undirected: bool,
    seed: u64,
}

fn cases() -> Vec<Case> {
    vec![
        Case {
            name: "kron",
            kind: GenKind::Kronecker {
                scale: 9,
                edge_factor: 8,
            },
            weighted: true,
            undirected: false,
            seed: 3,
        },
        Case {
            name: "grid",
            kind: GenKind::Grid { rows: 20, cols: 13 },
            weighted: true,
            undirected: false,
            seed: 5,
        },
        Case {
            name: "uniform-und",
            kind: GenKind::Uniform {
                vertices: 600,
                edges: 1500,
            },
            weighted: false,
            undirected: true,
            seed: 7,
        },
    ]
}

/// The store (with in-edges), its relabelled copies, and the reference graph.
fn build(dir: &Path, c: &Case) -> (Vec<(String, Store)>, MemGraph) {
    let ext = if c.weighted { "bin32w" } else { "bin32" };
    let input = dir.join(format!("{}.{ext}", c.name));
    let opts = GenOptions {
        kind: c.kind.clone(),
        seed: c.seed,
        weighted: c.weighted,
        text: false,
    };
    generate(&opts, &input, IoStats::new(), &|_| {}).unwrap();
    let n = c.kind.vertices() as u32;
    let mut g = MemGraph::from_bin(&std::fs::read(&input).unwrap(), n, c.weighted);
    if c.undirected {
        g = g.undirected();
    }
    let out = dir.join(c.name);
    let iopts = IngestOptions {
        undirected: c.undirected,
        in_edges: true,
        vertices: Some(n as u64),
        memory: 64 << 20,
        ..Default::default()
    };
    ingest(&[input], &out, &iopts, &Quiet).unwrap();
    let base = Store::open(&out).unwrap();
    let mut stores = Vec::new();
    for order in Order::ALL {
        let o = dir.join(format!("{}-{}", c.name, order.name()));
        let (_, secs) = reorder(&base, &o, order, 11, &iopts, &Quiet).unwrap();
        assert!(secs >= 0.0);
        stores.push((order.name().to_string(), Store::open(&o).unwrap()));
    }
    stores.insert(0, ("original".into(), base));
    (stores, g)
}

/// Engine settings that must not change any answer.
fn configs(store: &Store) -> Vec<(String, VertexConfig)> {
    let csr = store.edges() * if store.weighted() { 8 } else { 4 };
    let mut out = Vec::new();
    for &(page, depth) in &[(512usize, 1usize), (4096, 4), (65536, 2)] {
        out.push((
            format!("page {page} cache only, depth {depth}"),
            VertexConfig {
                page_size: page,
                page_cache: (csr / 4).max(page as u64 * 2),
                queue_depth: depth,
                max_request: 4 * page,
                ..Default::default()
            },
        ));
    }
    out.push((
        "no caches at all".into(),
        VertexConfig {
            page_size: 1024,
            page_cache: 0,
            ..Default::default()
        },
    ));
    for policy in Policy::ALL {
        let sel = select::select(
            store,
            &SelectOptions {
                policy,
                budget: csr / 5,
                k: 7,
                page_size: 1024,
                seed: 2,
            },
        )
        .unwrap();
        out.push((
            format!("static {} + page cache", policy.name()),
            VertexConfig {
                page_size: 1024,
                page_cache: csr / 20,
                static_cache: csr / 5,
                selection: sel.vertices,
                queue_depth: 3,
                ..Default::default()
            },
        ));
    }
    out.push((
        "everything static".into(),
        VertexConfig {
            page_size: 512,
            page_cache: 0,
            static_cache: csr,
            selection: (0..store.vertices() as u32).collect(),
            ..Default::default()
        },
    ));
    out
}

fn engine(store: &Store, cfg: &VertexConfig, algo: VAlgo) -> VertexEngine {
    let mut cfg = cfg.clone();
    cfg.weights = algo.weighted() && store.weighted();
    cfg.in_edges = algo.needs_in_edges(store.manifest().directed);
    VertexEngine::new(store, cfg).unwrap()
}

#[test]
fn every_algorithm_matches_the_references_in_every_setting_and_order() {
    let dir = tempfile::tempdir().unwrap();
    for c in cases() {
        let (stores, g) = build(dir.path(), &c);
        let n = g.n as usize;
        let ref_wcc = reference::wcc(&g);
        let exact_diam = reference::diameter(&g);
        for (order, store) in &stores {
            let ids = store.id_map().unwrap();
            // user id (= the original dense id) of each dense id of this store
            let user: Vec<u32> = (0..n as u32).map(|v| ids.to_user(v) as u32).collect();
            let params = VParams {
                root: ids.to_dense(1).unwrap(),
                sources: 40,
                seed: 9,
                rounds: 3,
                user_rank: ids.user_order().map(vc::user_ranks),
                ..Default::default()
            };
            let want_bfs = reference::bfs(&g, 1);
            let want_sssp = c.weighted.then(|| reference::sssp(&g, 1));
            for (name, cfg) in configs(store) {
                let ctx = format!("{} {order} [{name}]", c.name);
                for algo in VAlgo::ALL {
                    if algo == VAlgo::Sssp && !c.weighted {
                        // Unweighted: every edge weighs 1, so distances are BFS depths.
                        let mut e = engine(store, &cfg, algo);
                        let r = vc::run(&mut e, algo, &params).unwrap();
                        let Output::Sssp(a) = &r.run.output else {
                            panic!()
                        };
                        for d in 0..n {
                            let got = outcore_algos::sssp_entry(a[d]).map(|x| x.0 as u32);
                            assert_eq!(got, want_bfs[user[d] as usize], "{ctx} sssp");
                        }
                        continue;
                    }
                    let mut e = engine(store, &cfg, algo);
                    let r = vc::run(&mut e, algo, &params).unwrap();
                    let st = e.finish();
                    assert!(st.edge_lists > 0, "{ctx} {}", algo.name());
                    let by_user = |f: &dyn Fn(usize) -> Option<f64>| {
                        let mut v = vec![None; n];
                        for d in 0..n {
                            v[user[d] as usize] = f(d);
                        }
                        v
                    };
                    match (&r.run.output, algo) {
                        (Output::Bfs(a), VAlgo::Bfs) => {
                            let got =
                                by_user(&|d| outcore_algos::bfs_entry(a[d]).map(|x| x.0 as f64));
                            let want: Vec<Option<f64>> =
                                want_bfs.iter().map(|x| x.map(|d| d as f64)).collect();
                            assert_eq!(got, want, "{ctx} bfs");
                            let p = Params {
                                root: params.root,
                                ..Default::default()
                            };
                            verify(store, Algo::Bfs, &p, &r.run.output).unwrap();
                        }
                        (Output::Sssp(a), VAlgo::Sssp) => {
                            let got =
                                by_user(&|d| outcore_algos::sssp_entry(a[d]).map(|x| x.0 as f64));
                            let want: Vec<Option<f64>> = want_sssp
                                .as_ref()
                                .unwrap()
                                .iter()
                                .map(|x| x.map(|d| d as f64))
                                .collect();
                            assert_eq!(got, want, "{ctx} sssp");
                            let p = Params {
                                root: params.root,
                                ..Default::default()
                            };
                            verify(store, Algo::Sssp, &p, &r.run.output).unwrap();
                        }
                        (Output::Labels(l), VAlgo::Wcc) => {
                            // Same partition: label -> reference label is a bijection.
                            let mut m = std::collections::HashMap::new();
                            for d in 0..n {
                                let w = ref_wcc[user[d] as usize];
                                assert_eq!(*m.entry(l[d]).or_insert(w), w, "{ctx} wcc");
                            }
                            let comps: std::collections::HashSet<_> = ref_wcc.iter().collect();
                            assert_eq!(m.len(), comps.len(), "{ctx} wcc");
                        }
                        (Output::Bfs(_), VAlgo::Diam) => {
                            let est = r.extra.diameter.unwrap();
                            assert!(est <= exact_diam, "{ctx} diam {est} > {exact_diam}");
                            // Each sweep: the depth of the next start from the previous
                            // start is that BFS's eccentricity.
                            let s: Vec<u32> =
                                r.extra.starts.iter().map(|&v| user[v as usize]).collect();
                            let mut best = 0;
                            for k in 0..s.len() {
                                let d = reference::bfs(&g, s[k]);
                                let ecc = d.iter().flatten().copied().max().unwrap_or(0);
                                if k + 1 < s.len() {
                                    assert_eq!(d[s[k + 1] as usize], Some(ecc), "{ctx} diam");
                                }
                                best = best.max(ecc);
                            }
                            assert_eq!(est, best, "{ctx} diam");
                            if c.name == "grid" {
                                assert_eq!(
                                    est, exact_diam,
                                    "{ctx}: double sweep is exact on a grid"
                                );
                            }
                        }
                        (Output::Values(x), VAlgo::Bc) => {
                            let src: Vec<u32> =
                                r.extra.sources.iter().map(|&v| user[v as usize]).collect();
                            let want = reference::brandes(&g, &src);
                            for d in 0..n {
                                let (a, b) = (x[d], want[user[d] as usize]);
                                assert!(
                                    (a - b).abs() <= 1e-9 * b.abs().max(1.0),
                                    "{ctx} bc of {}: {a} vs {b}",
                                    user[d]
                                );
                            }
                        }
                        (Output::Values(x), VAlgo::Apsp) => {
                            let mut sum = vec![0f64; n];
                            for (k, &sd) in r.extra.sources.iter().enumerate() {
                                let d = reference::bfs(&g, user[sd as usize]);
                                let reach = d.iter().flatten().count() as u64;
                                let ecc = d.iter().flatten().copied().max().unwrap_or(0);
                                assert_eq!(r.extra.reach[k], reach, "{ctx} apsp reach");
                                assert_eq!(r.extra.eccentricity[k], ecc, "{ctx} apsp ecc");
                                for (v, dv) in d.iter().enumerate() {
                                    sum[v] += dv.unwrap_or(0) as f64;
                                }
                            }
                            for d in 0..n {
                                assert_eq!(x[d], sum[user[d] as usize], "{ctx} apsp sum");
                            }
                        }
                        _ => panic!("{ctx}: unexpected output for {}", algo.name()),
                    }
                }
            }
        }
    }
}

#[test]
fn sampled_sources_and_diameter_starts_follow_user_ids_not_the_order() {
    let dir = tempfile::tempdir().unwrap();
    let c = &cases()[0];
    let (stores, _) = build(dir.path(), c);
    let mut seen: Option<(Vec<u64>, Vec<u64>)> = None;
    for (_, store) in &stores {
        let ids = store.id_map().unwrap();
        let p = VParams {
            sources: 10,
            rounds: 2,
            user_rank: ids.user_order().map(vc::user_ranks),
            ..Default::default()
        };
        let cfg = VertexConfig::default();
        let mut e = engine(store, &cfg, VAlgo::Bc);
        let bc = vc::run(&mut e, VAlgo::Bc, &p).unwrap();
        let mut e = engine(store, &cfg, VAlgo::Diam);
        let dm = vc::run(&mut e, VAlgo::Diam, &p).unwrap();
        let got = (
            bc.extra.sources.iter().map(|&v| ids.to_user(v)).collect(),
            dm.extra.starts.iter().map(|&v| ids.to_user(v)).collect(),
        );
        match &seen {
            None => seen = Some(got),
            Some(s) => assert_eq!(s, &got),
        }
    }
}

#[test]
fn statistics_count_pages_hits_and_utilization() {
    let dir = tempfile::tempdir().unwrap();
    let c = &cases()[2];
    let (stores, _) = build(dir.path(), c);
    let store = &stores[0].1;
    let csr = store.edges() * 4;
    // A page cache bigger than the CSR: BFS reads each page at most once.
    let cfg = VertexConfig {
        page_size: 512,
        page_cache: csr * 2,
        max_request: 512,
        ..Default::default()
    };
    let mut e = engine(store, &cfg, VAlgo::Bfs);
    vc::run(&mut e, VAlgo::Bfs, &VParams::default()).unwrap();
    let st = e.finish();
    let pages = (csr).div_ceil(512);
    assert!(st.pages_read <= pages, "{st:?}");
    assert_eq!(
        st.requests, st.pages_read,
        "one page per request when merging is off"
    );
    assert_eq!(st.page_lookups, st.page_hits + st.pages_read);
    assert!(st.page_utilization > 0.0 && st.page_utilization <= 1.0);
    assert_eq!(st.static_hits, 0);
    // Everything static: no page is read during the run.
    let cfg = VertexConfig {
        static_cache: csr,
        selection: (0..store.vertices() as u32).collect(),
        ..Default::default()
    };
    let mut e = engine(store, &cfg, VAlgo::Bfs);
    vc::run(&mut e, VAlgo::Bfs, &VParams::default()).unwrap();
    let st = e.finish();
    assert_eq!(st.pages_read, 0);
    assert_eq!(st.static_hits, st.edge_lists);
    assert_eq!(st.static_edges, store.edges());
    // A static cache too small for anything holds nothing.
    let cfg = VertexConfig {
        static_cache: 3,
        selection: (0..store.vertices() as u32).collect(),
        ..Default::default()
    };
    let e = engine(store, &cfg, VAlgo::Bfs);
    assert_eq!(e.stats().static_vertices, 0);
}

#[test]
fn gvs_fills_the_budget_and_saved_selections_round_trip() {
    let dir = tempfile::tempdir().unwrap();
    let c = &cases()[0];
    let (stores, _) = build(dir.path(), c);
    let store = &stores[0].1;
    let out = store.degrees("out").unwrap();
    let budget = store.edges() * 8 / 4;
    for policy in Policy::ALL {
        let sel = select::select(
            store,
            &SelectOptions {
                policy,
                budget,
                k: 10,
                page_size: 512,
                seed: 1,
            },
        )
        .unwrap();
        let edges: u64 = sel.vertices.iter().map(|&v| out[v as usize] as u64).sum();
        assert_eq!(edges, sel.edges);
        assert!(edges * 8 <= budget, "{}: over budget", policy.name());
        let mut distinct = sel.vertices.clone();
        distinct.sort_unstable();
        distinct.dedup();
        assert_eq!(distinct.len(), sel.vertices.len(), "{}", policy.name());
        assert!(sel.vertices.iter().all(|&v| out[v as usize] > 0));
        if policy != Policy::Gvs {
            // The degree policies stop at the first list that does not fit; gvs-page
            // fills its last round with the groups that still fit.
            assert!(edges * 8 > budget / 2, "{}: {edges} edges", policy.name());
        }
        if policy == Policy::GvsPage {
            // Whole page groups: of the lists starting on one 512-byte page of
            // the targets, all are selected or none.
            let off = store.csr("out").unwrap().into_offsets();
            let mut chosen = vec![false; out.len()];
            for &v in &sel.vertices {
                chosen[v as usize] = true;
            }
            let mut groups = std::collections::HashMap::new();
            for v in (0..out.len()).filter(|&v| out[v] > 0) {
                groups
                    .entry(off[v] * 4 / 512)
                    .or_insert_with(Vec::new)
                    .push(chosen[v]);
            }
            assert!(groups.len() > 4, "{} pages", groups.len());
            assert!(groups
                .values()
                .all(|g| g.iter().all(|&x| x) || g.iter().all(|&x| !x)));
            assert!(groups.values().any(|g| g[0]) && groups.values().any(|g| !g[0]));
        }
        select::save(store, &sel).unwrap();
    }
    let store = Store::open(store.dir()).unwrap();
    assert_eq!(store.manifest().selections.len(), Policy::ALL.len());
    for policy in Policy::ALL {
        let (rec, v) = select::load(&store, policy).unwrap().unwrap();
        assert_eq!(rec.vertices as usize, v.len());
    }
    assert!(store.verify().iter().all(|(_, r)| r.is_ok()));
    // A flipped byte in a saved selection is refused.
    let f = store.dir().join("basc.gvs");
    let mut b = std::fs::read(&f).unwrap();
    let k = b.len() - 1;
    b[k] ^= 0x40;
    std::fs::write(&f, b).unwrap();
    let err = select::load(&store, Policy::Gvs).err().unwrap().to_string();
    assert!(
        err.contains("basc.gvs") && err.contains("checksum"),
        "{err}"
    );
}

#[test]
fn bfs_sssp_and_wcc_agree_with_the_streaming_engine() {
    use outcore_engine::{StreamConfig, StreamEngine};
    let dir = tempfile::tempdir().unwrap();
    for c in cases() {
        let (stores, _) = build(dir.path(), &c);
        let store = &stores[0].1;
        let cfg = VertexConfig {
            page_size: 2048,
            page_cache: 16 << 10,
            ..Default::default()
        };
        for (va, sa) in [
            (VAlgo::Bfs, Algo::Bfs),
            (VAlgo::Sssp, Algo::Sssp),
            (VAlgo::Wcc, Algo::Wcc),
        ] {
            let p = Params {
                root: 1,
                ..Default::default()
            };
            let mut se = StreamEngine::new(store, StreamConfig::default()).unwrap();
            let s = outcore_algos::run(&mut se, sa, &p).unwrap();
            let mut e = engine(store, &cfg, va);
            let v = vc::run(
                &mut e,
                va,
                &VParams {
                    root: 1,
                    ..Default::default()
                },
            )
            .unwrap();
            let ctx = format!("{} {}", c.name, va.name());
            match (&s.output, &v.run.output) {
                (Output::Bfs(a), Output::Bfs(b)) => {
                    let d = |x: &u64| outcore_algos::bfs_entry(*x).map(|t| t.0);
                    assert!(a.iter().map(d).eq(b.iter().map(d)), "{ctx}");
                }
                (Output::Sssp(a), Output::Sssp(b)) => {
                    let d = |x: &u64| outcore_algos::sssp_entry(*x).map(|t| t.0);
                    assert!(a.iter().map(d).eq(b.iter().map(d)), "{ctx}");
                }
                // Both name a component by its smallest dense id.
                (Output::Labels(a), Output::Labels(b)) => assert_eq!(&a[..], &b[..], "{ctx}"),
                _ => panic!("{ctx}: different kinds of output"),
            }
        }
    }
}

#[test]
fn bc_and_apsp_verifiers_accept_the_engine_and_catch_a_wrong_value() {
    let dir = tempfile::tempdir().unwrap();
    let c = &cases()[0];
    let (stores, _) = build(dir.path(), c);
    let store = &stores[2].1; // norder: relabelled
    let name = |v: u32| v as u64;
    let p = VParams {
        sources: 9,
        ..Default::default()
    };
    let cfg = VertexConfig::default();
    let mut e = engine(store, &cfg, VAlgo::Bc);
    let r = vc::run(&mut e, VAlgo::Bc, &p).unwrap();
    let Output::Values(x) = &r.run.output else {
        panic!()
    };
    let mut x = x.to_vec();
    outcore_algos::verify::verify_bc(store, &r.extra.sources, &x, &name).unwrap();
    let k = (0..x.len()).max_by(|&a, &b| x[a].total_cmp(&x[b])).unwrap();
    x[k] *= 1.001;
    let err = outcore_algos::verify::verify_bc(store, &r.extra.sources, &x, &name)
        .err()
        .unwrap()
        .to_string();
    assert!(err.contains("serial Brandes"), "{err}");
    let mut e = engine(store, &cfg, VAlgo::Apsp);
    let r = vc::run(&mut e, VAlgo::Apsp, &p).unwrap();
    let Output::Values(x) = &r.run.output else {
        panic!()
    };
    let x = x.to_vec();
    let ex = &r.extra;
    outcore_algos::verify::verify_apsp(store, &ex.sources, &ex.reach, &ex.eccentricity, &x, &name)
        .unwrap();
    let mut ecc = ex.eccentricity.clone();
    ecc[0] += 1;
    let err = outcore_algos::verify::verify_apsp(store, &ex.sources, &ex.reach, &ecc, &x, &name)
        .err()
        .unwrap()
        .to_string();
    assert!(err.contains("eccentricity"), "{err}");
}

#[test]
fn packed_selection_lists_load_in_one_read_and_give_the_same_answers() {
    let dir = tempfile::tempdir().unwrap();
    let c = &cases()[0]; // weighted and directed
    let (stores, _) = build(dir.path(), c);
    let store = &stores[0].1;
    let budget = store.edges() * 8 / 4;
    let sel = select::select(
        store,
        &SelectOptions {
            policy: Policy::GvsPage,
            budget,
            k: 5,
            page_size: 512,
            seed: 1,
        },
    )
    .unwrap();
    select::save(store, &sel).unwrap();
    let store = Store::open(store.dir()).unwrap();
    let (rec, list) = select::load(&store, Policy::GvsPage).unwrap().unwrap();
    let lists = rec.lists.clone().expect("save writes the packed lists");
    let payload = std::fs::metadata(store.dir().join(&lists)).unwrap().len() - 4096;
    // Targets and weights of every selected list: 8 bytes per edge.
    assert_eq!(payload, sel.edges * 8);
    let depths = |o: &Output| -> Vec<Option<f64>> {
        match o {
            Output::Bfs(a) => a
                .iter()
                .map(|x| outcore_algos::bfs_entry(*x).map(|t| t.0 as f64))
                .collect(),
            Output::Sssp(a) => a
                .iter()
                .map(|x| outcore_algos::sssp_entry(*x).map(|t| t.0 as f64))
                .collect(),
            _ => panic!("bfs or sssp output"),
        }
    };
    for algo in [VAlgo::Sssp, VAlgo::Bfs] {
        let mut answers = Vec::new();
        for (packed, static_cache) in [(true, budget), (false, budget), (true, budget / 3)] {
            let cfg = VertexConfig {
                page_size: 512,
                page_cache: 4096,
                static_cache,
                selection: list.clone(),
                selection_lists: packed.then(|| lists.clone()),
                // Buffered, so bytes are counted as asked for (O_DIRECT rounds
                // each read out to whole blocks).
                direct: false,
                ..Default::default()
            };
            let mut e = engine(&store, &cfg, algo);
            let r = vc::run(&mut e, algo, &VParams::default()).unwrap();
            let st = e.finish();
            let ctx = format!("{} packed {packed} static {static_cache}", algo.name());
            if static_cache == budget {
                assert_eq!(st.static_vertices, list.len() as u64, "{ctx}");
                assert_eq!(st.static_edges, sel.edges, "{ctx}");
                if packed {
                    // One read of the whole file (an unweighted bfs reads the
                    // weights too, for the checksum), none of the CSR.
                    assert_eq!(st.static_load_bytes, payload, "{ctx}");
                }
            } else {
                // Only part of the selection fits: loaded from the CSR instead.
                assert!(st.static_vertices < list.len() as u64, "{ctx}");
                assert!(st.static_vertices > 0, "{ctx}");
            }
            answers.push(depths(&r.run.output));
        }
        assert!(answers.iter().all(|a| a == &answers[0]), "{}", algo.name());
    }
    // A damaged packed file is refused, naming it.
    let f = store.dir().join(&lists);
    let mut b = std::fs::read(&f).unwrap();
    let k = b.len() - 5;
    b[k] ^= 0x20;
    std::fs::write(&f, b).unwrap();
    let cfg = VertexConfig {
        static_cache: budget,
        selection: list.clone(),
        selection_lists: Some(lists.clone()),
        ..Default::default()
    };
    let err = VertexEngine::new(&store, cfg).err().unwrap().to_string();
    assert!(err.contains(&lists) && err.contains("checksum"), "{err}");
}

#[test]
fn an_interrupted_selection_save_fails_its_runs_not_the_store() {
    let dir = tempfile::tempdir().unwrap();
    let c = &cases()[2];
    let (stores, _) = build(dir.path(), c);
    let store = &stores[0].1;
    let opts = |budget| SelectOptions {
        policy: Policy::Gvs,
        budget,
        k: 3,
        page_size: 512,
        seed: 1,
    };
    let small = select::select(store, &opts(store.edges())).unwrap();
    select::save(store, &small).unwrap();
    let manifest = std::fs::read(store.dir().join("manifest.json")).unwrap();
    // A second save whose files replaced the first's, interrupted before its
    // manifest was written: the manifest still describes the first.
    let big = select::select(store, &opts(store.edges() * 3)).unwrap();
    assert_ne!(big.vertices.len(), small.vertices.len());
    select::save(store, &big).unwrap();
    std::fs::write(store.dir().join("manifest.json"), &manifest).unwrap();
    let store = Store::open(store.dir()).expect("the store still opens");
    let err = select::load(&store, Policy::Gvs).err().unwrap().to_string();
    assert!(
        err.contains("basc.gvs") && err.contains("does not match the manifest"),
        "{err}"
    );
    assert!(store
        .verify()
        .iter()
        .any(|(n, r)| n == "basc.gvs" && r.is_err()));
    // Runs without the selection are unaffected.
    let mut e = engine(&store, &VertexConfig::default(), VAlgo::Bfs);
    vc::run(&mut e, VAlgo::Bfs, &VParams::default()).unwrap();
    // Saving again mends it.
    select::save(&store, &big).unwrap();
    let store = Store::open(store.dir()).unwrap();
    let (_, v) = select::load(&store, Policy::Gvs).unwrap().unwrap();
    assert_eq!(v, big.vertices);
    assert!(store.verify().iter().all(|(_, r)| r.is_ok()));
}
