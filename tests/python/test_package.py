"""The Python package (`import outcore`) against scipy and networkx.

Every algorithm is checked on the real graphs in ../shared/graphs (parsed here
independently, by test_reference.py's parser) and on generated graphs, through
every input conversion (files, numpy arrays, scipy sparse, networkx, pandas)
and back (numpy, pandas, dict, networkx attributes); plus interruption with
Ctrl-C, the GIL released during calls, progress, and bad input.
"""
import os
import signal
import threading
import time

import networkx as nx
import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
import scipy.sparse.csgraph as cg

import outcore
from test_reference import ldbc_pagerank, real_graph

INF = float("inf")


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    return tmp_path_factory.mktemp("package")


_real = {}


def real(name, work):
    """(reference graph, store ingested through outcore.ingest from the file)."""
    if name in _real:
        return _real[name]
    g, src, flags = real_graph(name)
    store = outcore.ingest(src, work / f"{name}.store", remap="--remap" in flags, memory="64M", in_edges=True,
                           force=True, progress=False)
    _real[name] = (g, store)
    return _real[name]


def by_id(result, g):
    """The result's values in the reference's dense order."""
    pos = np.searchsorted(g.ids, result.ids.astype(np.int64))
    assert np.array_equal(g.ids[pos], result.ids.astype(np.int64)), "ids differ from the input's"
    out = np.empty(g.n, dtype=result.values.dtype)
    out[pos] = result.values
    return out


def levels(g, root_dense, directed=True):
    d = cg.shortest_path(g.matrix(), method="D", directed=directed, unweighted=True, indices=root_dense)
    return d


@pytest.mark.parametrize("name", ["lux", "ny", "facebook", "wiki"])
@pytest.mark.parametrize("engine", ["stream", "external", "sortreduce", "vertex"])
def test_bfs_on_every_engine_matches_scipy(name, engine, work):
    g, store = real(name, work)
    root = int(g.ids[0])
    r = store.bfs(root, engine=engine, memory="32M", verify=True, progress=False)
    assert r.algorithm == "bfs" and len(r) == store.num_vertices == g.n
    got = by_id(r, g).astype(float)
    got[got == outcore.UNREACHED] = INF
    assert np.array_equal(got, levels(g, 0))


@pytest.mark.parametrize("name", ["ny", "lux"])
@pytest.mark.parametrize("engine", ["stream", "external", "vertex"])
def test_sssp_matches_scipy_dijkstra(name, engine, work):
    g, store = real(name, work)
    r = store.sssp(int(g.ids[0]), engine=engine, parents=True, progress=False)
    ref = cg.dijkstra(g.matrix(weights=True).astype(np.float32), indices=0)
    got = by_id(r, g)
    fin = np.isfinite(ref)
    assert np.array_equal(np.isfinite(got), fin)
    assert np.allclose(got[fin], ref[fin], rtol=1e-5)
    assert r.parents is not None and r.parents.dtype == np.int64


@pytest.mark.parametrize("name", ["lux", "facebook", "wiki"])
def test_wcc_matches_scipy(name, work):
    g, store = real(name, work)
    ncomp, lab = cg.connected_components(g.matrix(), directed=True, connection="weak")
    for r in (store.wcc(progress=False), store.wcc(engine="vertex", progress=False),
              store.wcc_lp(engine="stream", progress=False)):
        got = by_id(r, g)
        assert len(np.unique(got)) == ncomp
        # Same partition: labels map one to one.
        pairs = set(zip(got.tolist(), lab.tolist()))
        assert len(pairs) == ncomp


@pytest.mark.parametrize("name", ["facebook", "wiki"])
def test_pagerank_matches_numpy_and_networkx(name, work):
    g, store = real(name, work)
    A = g.matrix()
    for engine in ("stream", "external"):
        r = store.pagerank(iterations=20, engine=engine, memory="16M", progress=False)
        got = by_id(r, g)
        assert np.allclose(got, ldbc_pagerank(A, 20), rtol=1e-9, atol=1e-15), engine
    G = nx.from_scipy_sparse_array(A, create_using=nx.DiGraph)
    ref = nx.pagerank(G, alpha=0.85, tol=1e-13, max_iter=1000)
    r = store.pagerank_delta(tolerance=1e-12, progress=False)
    got = by_id(r, g)
    want = np.array([ref[k] for k in range(g.n)])
    assert np.allclose(got, want, rtol=1e-5, atol=1e-12)


@pytest.mark.parametrize("name", ["facebook", "lux"])
def test_mis_is_independent_and_maximal(name, work):
    g, store = real(name, work)
    G = nx.Graph()
    G.add_nodes_from(range(g.n))
    G.add_edges_from((a, b) for a, b in zip(g.u.tolist(), g.v.tolist()) if a != b)
    for r in (store.mis(progress=False), store.mis_luby(seed=3, progress=False)):
        inset = by_id(r, g) == 1
        members = set(np.flatnonzero(inset).tolist())
        assert all(not (a in members and b in members) for a, b in G.edges())
        assert nx.is_dominating_set(G, members)


def test_bc_and_diam_and_apsp_against_networkx(work):
    G = nx.gnm_random_graph(300, 900, seed=5, directed=True)
    s = outcore.ingest(G, work / "bc.store", progress=False)
    r = s.bc(sources=300, progress=False)
    ref = nx.betweenness_centrality(G, normalized=False)
    d = r.to_dict()
    assert all(abs(d[k] - ref[k]) <= 1e-9 * max(1.0, ref[k]) for k in G)
    dm = s.diam(rounds=4, progress=False)
    true = max(max(nx.single_source_shortest_path_length(G, v).values()) for v in G)
    assert 0 < dm.stats["diameter"] <= true
    ap = s.apsp(sources=8, progress=False)
    assert len(ap) == 300 and ap.stats["sources"]


def test_mis_gas_is_independent_and_maximal_on_every_engine(work):
    G = nx.gnm_random_graph(500, 2000, seed=3)
    s = outcore.ingest(G, work / "misgas.store", progress=False)
    sets = []
    for engine in ("stream", "external", "sortreduce"):
        r = s.mis_gas(seed=4, engine=engine, progress=False)
        d = r.to_dict()
        members = {k for k in G if d[k] == 1}
        assert all(not (a in members and b in members) for a, b in G.edges())
        assert nx.is_dominating_set(G, members)
        sets.append(members)
    assert sets[0] == sets[1] == sets[2]


def test_scc_against_networkx_on_every_engine(work):
    G = nx.gnm_random_graph(600, 900, seed=12, directed=True)
    G = nx.relabel_nodes(G, {v: f"v{v}" for v in G})
    s = outcore.ingest(G, work / "scc.store", with_reverse=True, progress=False)
    want = {frozenset(c) for c in nx.strongly_connected_components(G)}
    for engine in ("stream", "external", "sortreduce"):
        r = s.scc(engine=engine, verify=True, progress=False)
        d = r.to_dict()
        classes = {}
        for k, label in d.items():
            classes.setdefault(label, set()).add(k)
        assert {frozenset(c) for c in classes.values()} == want, engine
    with pytest.raises(outcore.OutcoreError, match="with-reverse"):
        outcore.ingest(G, work / "plain.store", progress=False).scc(progress=False)


def test_mcst_against_networkx(work):
    # Weights with ties and negative ones; string ids.
    G = nx.gnm_random_graph(500, 1500, seed=21)
    rng = np.random.default_rng(2)
    for a, b in G.edges:
        G[a][b]["weight"] = float(rng.integers(-3, 12)) / 2
    G.add_node(999)  # alone: a tree of its own
    G = nx.relabel_nodes(G, {v: f"v{v}" for v in G})
    s = outcore.ingest(G, work / "mcst.store", progress=False)
    r = s.mcst(verify=True, progress=False)
    want = nx.minimum_spanning_tree(G)
    tree = r.parents != -1
    assert tree.sum() == want.number_of_edges()
    assert r.values[tree].sum() == want.size(weight="weight")
    assert r.values[~tree].tolist() == [0.0] * int((~tree).sum())
    # Parents are node positions, like ids: their labels name the nodes.
    for k, x, p in zip(r.keys(), r.values.tolist(), r.parents.tolist()):
        if p != -1:
            assert G[k][r.labels[p]]["weight"] == x
    with pytest.raises(outcore.OutcoreError, match="does not run on the external engine"):
        s.mcst(engine="external", progress=False)


def test_bp_homophily_on_every_engine(work):
    # Two dense communities joined by a few edges: beliefs follow the priors
    # inside each community; every engine gives the same beliefs.
    G = nx.planted_partition_graph(2, 60, 0.3, 0.01, seed=4)
    s = outcore.ingest(G, work / "bp.store", progress=False)
    runs = [s.bp(coupling=0.01, seed=3, engine=e, verify=True, progress=False)
            for e in ("stream", "external", "sortreduce")]
    for r in runs[1:]:
        assert np.allclose(r.values, runs[0].values, rtol=1e-12, atol=0)
    assert "converged to --tolerance" in runs[0].summary
    assert len(runs[0]) == 120


def test_conductance_against_networkx(work):
    G = nx.gnm_random_graph(400, 2400, seed=9, directed=True)
    s = outcore.ingest(G, work / "cond.store", progress=False)
    r = s.conductance(seed=5, progress=False)
    d = r.to_dict()
    members = {k for k in G if d[k] == 1}
    rest = set(G) - members
    assert members and rest
    want = nx.conductance(G, members, rest)
    assert r.summary.startswith(f"conductance {want:.12f} (cut {nx.cut_size(G, members, rest)} edges")


def test_spmv_and_jobs_match_numpy_and_scipy(work):
    path = outcore.generate("kronecker", work / "k10.bin32w", scale=10, edge_factor=8, weighted=True,
                            force=True, progress=False)
    raw = np.fromfile(path, dtype=[("u", "<u4"), ("v", "<u4"), ("w", "<f4")])
    s = outcore.ingest(path, work / "k10.store", vertices=1 << 10, force=True, progress=False)
    n = 1 << 10
    # spmv multiplies by the weights as stored (f32), summing in f64.
    A = sp.csr_matrix((raw["w"].astype(np.float64), (raw["u"], raw["v"])), shape=(n, n))
    x = s.spmv(iterations=2, progress=False)
    want = A.T @ (A.T @ np.ones(n))
    assert np.allclose(x.values, want, rtol=1e-10)
    res = outcore.jobs(s, ["bfs:root=1", "wcc", "pagerank:iterations=5"], memory="64M", verify=True,
                       progress=False)
    assert [r.algorithm for r in res] == ["bfs", "wcc", "pagerank"]
    b = s.bfs(1, progress=False)
    assert np.array_equal(res[0].values, b.values)
    assert np.array_equal(res[1].values, s.wcc(progress=False).values)
    assert np.allclose(res[2].values, s.pagerank(iterations=5, progress=False).values, rtol=1e-12)
    assert "groups" in res[0].stats and res[0].stats is res[2].stats


def kron_arrays(work, scale=11):
    path = outcore.generate("kronecker", work / f"k{scale}.bin32w", scale=scale, weighted=True,
                            force=True, progress=False)
    raw = np.fromfile(path, dtype=[("u", "<u4"), ("v", "<u4"), ("w", "<f4")])
    return path, raw


def test_numpy_scipy_pandas_and_file_inputs_make_the_same_store(work):
    path, raw = kron_arrays(work)
    n = 1 << 11
    a = outcore.ingest(path, work / "from-file.store", vertices=n, force=True, progress=False)
    b = outcore.ingest((raw["u"], raw["v"], raw["w"]), work / "from-numpy.store", force=True,
                       progress=False)
    m = sp.csr_matrix((raw["w"], (raw["u"], raw["v"])), shape=(n, n))
    m.sum_duplicates()
    c = outcore.ingest(m, work / "from-scipy.store", force=True, progress=False)
    coo = sp.coo_matrix((raw["w"], (raw["u"].astype(np.int64), raw["v"].astype(np.int64))), shape=(n, n))
    d = outcore.ingest(coo, work / "from-coo.store", force=True, progress=False)
    df = pd.DataFrame({"source": raw["u"].astype(np.int64), "target": raw["v"].astype(np.int64),
                       "weight": raw["w"]})
    e = outcore.ingest(df, work / "from-pandas.store", force=True, progress=False)
    assert a.num_vertices == b.num_vertices == c.num_vertices == d.num_vertices == e.num_vertices == n
    assert a.num_edges == b.num_edges == d.num_edges == e.num_edges == len(raw)
    assert c.num_edges == m.nnz  # summed duplicates are one entry
    root = int(raw["u"][0])
    want = a.sssp(root, progress=False).values
    for s in (b, d, e):
        assert np.array_equal(s.sssp(root, progress=False).values, want)
        assert s.weighted
    ref = cg.dijkstra(m.astype(np.float32), indices=root)
    # scipy summed parallel edges in m; compare with outcore on the summed matrix
    got = c.sssp(root, progress=False).values
    assert np.allclose(got[np.isfinite(ref)], ref[np.isfinite(ref)], rtol=1e-5)
    assert np.array_equal(np.isfinite(got), np.isfinite(ref))
    assert np.array_equal(a.degrees("out"), np.bincount(raw["u"], minlength=n))
    assert np.array_equal(a.degrees("in"), np.bincount(raw["v"], minlength=n))
    assert np.array_equal(a.ids(), np.arange(n))


def test_large_ids_and_remap_from_numpy(work):
    u = np.array([5, 2**40, 7], dtype=np.uint64)
    v = np.array([2**40, 7, 5], dtype=np.uint64)
    s = outcore.ingest((u, v), work / "big.store", remap=True, force=True, progress=False)
    assert s.num_vertices == 3
    r = s.bfs(5, progress=False)
    assert r.to_dict() == {5: 0, 7: 2, 2**40: 1}
    w = np.array([1.5, 2.0, 0.25], dtype=np.float64)
    s = outcore.ingest((u, v, w), work / "bigw.store", remap=True, force=True, progress=False)
    assert s.sssp(5, progress=False).to_dict() == {5: 0.0, 2**40: 1.5, 7: 3.5}


def test_networkx_graphs_in_and_results_out(work):
    G = nx.les_miserables_graph()  # undirected, string labels, weighted
    s = outcore.ingest(G, work / "lesmis.store", progress=False)
    assert s.num_vertices == G.number_of_nodes()
    assert s.num_edges == 2 * G.number_of_edges()
    root = "Valjean"
    b = s.bfs(root, progress=False).to_dict()
    assert b == nx.single_source_shortest_path_length(G, root)
    d = s.sssp(root, progress=False).to_dict()
    ref = nx.single_source_dijkstra_path_length(G, root)
    assert d.keys() == ref.keys()
    assert all(abs(d[k] - ref[k]) <= 1e-5 * max(1, ref[k]) for k in ref)
    wcc = s.wcc(progress=False)
    assert len(set(wcc.values.tolist())) == nx.number_connected_components(G)
    pr = s.pagerank(iterations=100, progress=False)
    ref = nx.pagerank(G, weight=None, tol=1e-13, max_iter=1000)
    assert all(abs(pr.to_dict()[k] - ref[k]) < 1e-9 for k in G)
    out = pr.to_networkx(G.copy(), "rank")
    assert out.nodes["Valjean"]["rank"] == pr.to_dict()["Valjean"]
    df = pr.to_pandas()
    assert list(df.columns) == ["id", "value", "label"] and len(df) == G.number_of_nodes()
    assert df.set_index("label")["value"]["Valjean"] == pr.to_dict()["Valjean"]
    D = nx.DiGraph([("a", "b"), ("b", "c"), ("d", "a")])
    D.add_node("lonely")
    s = outcore.ingest(D, work / "digraph.store", progress=False)
    assert s.num_vertices == 5 and s.num_edges == 3
    assert s.bfs("a", progress=False).to_dict() == {"a": 0, "b": 1, "c": 2}


def test_info_matches_the_command_line(work):
    path, _ = kron_arrays(work, 10)
    s = outcore.ingest(path, work / "info.store", undirected=True, force=True, progress=False)
    info = s.info()
    assert info["vertices"] == s.num_vertices and info["edges"] == s.num_edges
    assert info["checksums_ok"] is True
    assert repr(s).startswith("<outcore.Store")


def big_graph(work):
    p = work / "k18.bin32"
    if not p.exists():
        outcore.generate("kronecker", p, scale=18, progress=False)
    return p


class ctrl_c:
    """Sends SIGINT to this process after ``delay`` seconds, raising
    KeyboardInterrupt only while the block runs (a signal that comes after the
    call returned is ignored, so a fast call does not break the test run)."""

    def __init__(self, delay):
        self.delay = delay
        self.armed = False

    def _handler(self, signum, frame):
        if self.armed:
            raise KeyboardInterrupt

    def __enter__(self):
        self.old = signal.signal(signal.SIGINT, self._handler)
        self.armed = True
        self.timer = threading.Timer(self.delay, lambda: os.kill(os.getpid(), signal.SIGINT))
        self.timer.start()
        return self

    def __exit__(self, *exc):
        self.armed = False
        self.timer.cancel()
        self.timer.join()
        time.sleep(0.01)  # a signal already sent is handled (and ignored) here
        signal.signal(signal.SIGINT, self.old)
        return False


def test_ctrl_c_stops_an_ingest_and_leaves_nothing(work):
    src = big_graph(work)
    out = work / "interrupted.store"
    stopped = 0
    for delay in (0.2, 0.05, 0.01, 0.5):
        before = set(os.listdir(work))
        try:
            with ctrl_c(delay):
                outcore.ingest(src, out, memory="16M", threads=1, force=True, progress=False)
        except KeyboardInterrupt:
            if out.exists():
                # The signal came as the ingest returned: it had finished, and
                # what it left is the whole store, nothing else.
                assert outcore.open(out).num_edges == 1 << 22, "an interrupted ingest left a partial store"
                assert set(os.listdir(work)) == before | {out.name}, "an ingest left files"
            else:
                stopped += 1
                assert set(os.listdir(work)) == before, "an interrupted ingest left files"
        if out.exists():
            import shutil
            shutil.rmtree(out)
    assert stopped > 0, "no ingest was interrupted; the graph is too small"
    # The next call runs normally.
    s = outcore.ingest(src, out, memory="256M", force=True, progress=False)
    assert s.num_edges == 1 << 22


def test_ctrl_c_stops_a_run_and_the_next_call_works(work):
    src = big_graph(work)
    s = outcore.ingest(src, work / "k18.store", memory="256M", vertices=1 << 18, force=True, progress=False)
    start = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        with ctrl_c(0.3):
            s.pagerank(iterations=100000, progress=False)
    assert time.monotonic() - start < 30
    r = s.wcc(progress=False)
    assert len(r) == 1 << 18


def test_the_gil_is_released_during_a_call(work):
    s = outcore.ingest(big_graph(work), work / "k18g.store", memory="256M", force=True, progress=False)
    ticks = []
    done = threading.Event()

    def count():
        while not done.is_set():
            ticks.append(1)
            time.sleep(0.001)

    th = threading.Thread(target=count)
    th.start()
    start = time.monotonic()
    s.pagerank(iterations=30, progress=False)
    took = time.monotonic() - start
    done.set()
    th.join()
    # A thread that held the GIL would have ticked at most a few times.
    assert took < 0.2 or len(ticks) > 10 * took, (len(ticks), took)


def test_progress_reaches_a_callback(work):
    s = outcore.ingest(big_graph(work), work / "k18p.store", memory="256M", force=True, progress=False)
    seen = []
    s.pagerank(iterations=40, progress=lambda label, pos, length, msg: seen.append((label, pos, length)))
    assert seen and all(label == "pagerank" for label, _, _ in seen)
    assert all(length >= 0 and pos >= 0 for _, pos, length in seen)


def test_bad_input_raises_precise_exceptions(work):
    bad = work / "bad.txt"
    bad.write_text("0 1\n1 2\nthree 4\n")
    with pytest.raises(outcore.InputError, match=r"bad.txt:3"):
        outcore.ingest(bad, work / "bad.store", progress=False)
    assert not (work / "bad.store").exists()
    with pytest.raises(outcore.InputError, match="negative vertex id"):
        outcore.ingest((np.array([0, -1]), np.array([1, 2])), work / "neg.store", progress=False)
    with pytest.raises(outcore.InputError, match="same length"):
        outcore.ingest((np.array([0, 1]), np.array([1])), work / "len.store", progress=False)
    with pytest.raises(outcore.InputError):
        outcore.ingest(12, work / "what.store", progress=False)
    with pytest.raises(outcore.InputError, match="not an outcore store"):
        outcore.open(work / "nothing-here")
    path, raw = kron_arrays(work, 10)
    s = outcore.ingest(path, work / "victim.store", force=True, progress=False)
    with pytest.raises(outcore.InputError, match="not a vertex"):
        s.bfs(1 << 20, progress=False)
    with pytest.raises(outcore.InputError, match="unexpected argument"):
        s.run("bfs", root=0, no_such_option=3, progress=False)
    with pytest.raises(outcore.BudgetError, match="8M or more") as e:
        s.wcc(memory="1M", progress=False)
    assert isinstance(e.value, MemoryError)
    with pytest.raises(outcore.BudgetError):
        s.bfs(0, engine="vertex", memory="8M", cache_split="64M,0", progress=False)
    neg = outcore.ingest((np.array([0, 1]), np.array([1, 2]), np.array([1.0, -2.0])), work / "negw.store",
                         force=True, progress=False)
    with pytest.raises(outcore.InputError, match="negative"):
        neg.sssp(0, progress=False)
    # A damaged store file: info and a run both name it.
    target = work / "victim.store" / "csr.out.targets"
    data = bytearray(target.read_bytes())
    data[len(data) // 2] ^= 0x40
    target.write_bytes(bytes(data))
    with pytest.raises(outcore.StoreDamagedError, match="csr.out.targets"):
        s.info()
    with pytest.raises(outcore.StoreDamagedError, match="csr.out.targets"):
        s.bfs(int(raw["u"][0]), engine="vertex", progress=False)


def test_reorder_and_select_cache_keep_the_answers(work):
    g, store = real("facebook", work)
    n = store.reorder(work / "facebook-n.store", order="norder", progress=False)
    n.select_cache(policy="gvs", size="20%", k=10, progress=False)
    want = store.bfs(int(g.ids[0]), progress=False)
    got = n.bfs(int(g.ids[0]), engine="vertex", policy="gvs", cache_split="5%,20%", progress=False)
    assert np.array_equal(got.ids, want.ids) and np.array_equal(got.values, want.values)
    assert got.stats["engine"]["static_hits"] >= 0 and got.stats["policy"] == "gvs"


def test_a_tqdm_bar_follows_a_call(work, capsys):
    path, _ = kron_arrays(work, 16)
    s = outcore.ingest(path, work / "bar.store", force=True, progress=True)
    s.pagerank(iterations=100, progress=True)
    err = capsys.readouterr().err
    assert "pagerank" in err or "parse" in err, err[-500:]
