"""The `outcore` CLI against independent libraries (scipy.sparse.csgraph, networkx)
on the real graphs in ../shared/graphs and on a generated Kronecker graph.

The reference graphs are parsed here, in Python, from the original files; nothing
of outcore is used to build them. Run by `cargo test` (crates/cli/tests/python.rs),
which installs the packages into a virtual environment under target/.
"""
import gzip
import os
import re
import subprocess
import sys
from pathlib import Path

import networkx as nx
import numpy as np
import pytest
import scipy.sparse as sp
import scipy.sparse.csgraph as cg

BIN = os.environ.get("OUTCORE_BIN", "")
ROOT = Path(__file__).resolve().parents[2]
SHARED = ROOT.parent / "shared" / "graphs"
UNREACHED = 9223372036854775807


def outcore(*args):
    r = subprocess.run([BIN, *map(str, args)], capture_output=True, text=True)
    if r.returncode != 0:
        raise AssertionError(f"outcore {' '.join(map(str, args))} failed:\n{r.stderr}")
    return r


def read_lines(path):
    with gzip.open(path, "rt", newline="") as f:
        for line in f:
            yield line.rstrip("\r\n")


def parse(path):
    """(u, v, w) arrays in the file's own ids; symmetric mtx listed both ways."""
    us, vs, ws = [], [], []
    name = path.name
    if name.endswith(".gr.gz"):
        for line in read_lines(path):
            if line.startswith("a "):
                _, a, b, c = line.split()
                us.append(int(a)); vs.append(int(b)); ws.append(float(c))
    elif name.endswith(".mtx.gz"):
        it = read_lines(path)
        header = next(it)
        symmetric = "symmetric" in header
        seen_size = False
        for line in it:
            if line.startswith("%") or not line.strip():
                continue
            if not seen_size:
                seen_size = True
                continue
            a, b = line.split()[:2]
            us.append(int(a)); vs.append(int(b)); ws.append(1.0)
            if symmetric and a != b:
                us.append(int(b)); vs.append(int(a)); ws.append(1.0)
    else:
        for line in read_lines(path):
            if not line.strip() or line[0] in "#%":
                continue
            a, b = line.split()[:2]
            us.append(int(a)); vs.append(int(b)); ws.append(1.0)
    return np.array(us, np.int64), np.array(vs, np.int64), np.array(ws, np.float64)


class Graph:
    def __init__(self, u, v, w, ids):
        self.ids = ids  # sorted user ids, dense index = position
        self.n = len(ids)
        self.u = np.searchsorted(ids, u)
        self.v = np.searchsorted(ids, v)
        self.w = w

    def matrix(self, weights=False):
        # Parallel edges: keep the smallest weight (scipy would add them up).
        order = np.lexsort((self.w, self.v, self.u))
        u, v, w = self.u[order], self.v[order], self.w[order]
        keep = np.ones(len(u), bool)
        keep[1:] = (u[1:] != u[:-1]) | (v[1:] != v[:-1])
        data = w[keep] if weights else np.ones(keep.sum())
        return sp.csr_matrix((data, (u[keep], v[keep])), shape=(self.n, self.n))


def smallest_ids(g, k, lab):
    """Each vertex's label: the smallest user id of its class (`lab` in 0..k)."""
    smallest = np.full(k, np.iinfo(np.int64).max)
    np.minimum.at(smallest, lab, g.ids)
    return smallest[lab]


def read_result(path, cast=float):
    ids, vals = [], []
    with open(path) as f:
        for line in f:
            a, b = line.split()[:2]
            ids.append(int(a)); vals.append(b)
    return np.array(ids, np.int64), vals


GRAPHS = {
    # name: (file, ingest flags, ids from a header (1..N) or the distinct ids)
    "lux": ("road-luxembourg-osm.mtx.gz", []),
    "ny": ("USA-road-d.NY.gr.gz", []),
    "facebook": ("facebook_combined.txt.gz", []),
    "wiki": ("wiki-Vote.txt.gz", ["--remap"]),
}


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    return tmp_path_factory.mktemp("outcore")


_cache = {}


def graph(name, work):
    if name in _cache:
        return _cache[name]
    if name == "kron":
        src = work / "kron.bin32w"
        outcore("generate", "kronecker", "--scale", 12, "--edge-factor", 8, "--weighted", "-o", src)
        raw = np.fromfile(src, dtype=[("u", "<u4"), ("v", "<u4"), ("w", "<f4")])
        u, v, w = raw["u"].astype(np.int64), raw["v"].astype(np.int64), raw["w"].astype(np.float64)
        ids = np.arange(1 << 12)
        flags = ["--vertices", 1 << 12, "--partitions", 4]
        g = Graph(u, v, w, ids)
    else:
        g, src, flags = real_graph(name)
    store = work / f"{name}.store"
    outcore("ingest", src, "-o", store, "--force", *flags)
    _cache[name] = (g, store)
    return g, store


def real_graph(name):
    """(Graph, file, ingest flags) of a graph in ../shared/graphs, parsed here;
    skipped when the file is absent (a failure under CI=true)."""
    file, flags = GRAPHS[name]
    src = SHARED / file
    if not src.exists():
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI=true but {src} is absent: the real-graph tests cannot run")
        pytest.skip(f"{src} is absent")
    u, v, w = parse(src)
    if "--remap" in flags:
        ids = np.unique(np.concatenate([u, v]))
    elif file.endswith((".gr.gz", ".mtx.gz")):
        ids = np.arange(1, max(u.max(), v.max()) + 1)
    else:
        ids = np.arange(0, max(u.max(), v.max()) + 1)
    return Graph(u, v, w, ids), src, flags


ALL = ["lux", "ny", "facebook", "wiki", "kron"]


def ldbc_pagerank(A, iterations, d=0.85):
    """LDBC Graphalytics PageRank by numpy power iteration over the matrix A."""
    n = A.shape[0]
    deg = np.asarray(A.sum(axis=1)).ravel()
    pr = np.full(n, 1.0 / n)
    for _ in range(iterations):
        contrib = np.where(deg > 0, pr / np.maximum(deg, 1), 0.0)
        pr = (1 - d) / n + d * (A.T @ contrib + pr[deg == 0].sum() / n)
    return pr


@pytest.mark.parametrize("name", ALL)
@pytest.mark.parametrize("mrt", [1, 5])
def test_bfs_matches_scipy(name, mrt, work):
    g, store = graph(name, work)
    root = g.ids[g.n // 3]
    out = work / f"{name}.bfs.{mrt}"
    outcore("run", "bfs", store, "--root", root, "--mrt", mrt, "--out", out, "--verify")
    ids, vals = read_result(out)
    assert np.array_equal(ids, g.ids)
    want = cg.shortest_path(g.matrix(), unweighted=True, indices=g.n // 3)
    got = np.array([float("inf") if int(x) == UNREACHED else float(x) for x in vals])
    assert np.array_equal(got, want)


@pytest.mark.parametrize("name", ["ny", "kron", "lux"])
def test_sssp_matches_scipy_dijkstra(name, work):
    g, store = graph(name, work)
    root = g.ids[7]
    out = work / f"{name}.sssp"
    outcore("run", "sssp", store, "--root", root, "--out", out, "--verify", "--threads", 2)
    _, vals = read_result(out)
    got = np.array([float(x) for x in vals])
    want = cg.dijkstra(g.matrix(weights=True), indices=7)
    assert np.array_equal(np.isinf(got), np.isinf(want))
    fin = ~np.isinf(want)
    # outcore sums f32 weights; scipy sums f64.
    assert np.allclose(got[fin], want[fin], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("name", ALL)
@pytest.mark.parametrize("algo", ["wcc", "wcc-lp"])
def test_wcc_matches_scipy(name, algo, work):
    g, store = graph(name, work)
    out = work / f"{name}.{algo}"
    outcore("run", algo, store, "--out", out, "--verify")
    _, vals = read_result(out)
    got = np.array([int(x) for x in vals])
    k, lab = cg.connected_components(g.matrix(), directed=True, connection="weak")
    assert np.array_equal(got, smallest_ids(g, k, lab))


MASK = (1 << 64) - 1


def splitmix(z):
    """SplitMix64's output function (the prior's hash, as the docs state it)."""
    z = (z + 0x9E3779B97F4A7C15) & MASK
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
    return z ^ (z >> 31)


def bp_priors(n, seed):
    rot = ((seed << 41) | (seed >> 23)) & MASK
    e = np.zeros(n)
    for v in range(n):
        r = splitmix(v ^ rot ^ 0x5BD1E995)
        if r % 10 == 0:
            e[v] = 0.1 if (r >> 32) & 1 else -0.1
    return e


@pytest.mark.parametrize("name", ["facebook", "lux"])
@pytest.mark.parametrize("engine", ["stream", "external"])
def test_bp_matches_a_scipy_recurrence(name, engine, work):
    """Linearized BP (Gatterbauer et al. VLDB'15): x <- e + 2h A^T x - 4h^2 D x,
    on the graph stored both ways, against scipy's sparse products."""
    g, _ = graph(name, work)
    file, flags = SHARED / GRAPHS[name][0], GRAPHS[name][1]
    store = work / f"{name}.und.store"
    if not store.exists():
        outcore("ingest", file, "-o", store, "--undirected", *flags)
    h, seed = 0.002, 5
    out = work / f"{name}.bp.{engine}"
    r = outcore("run", "bp", store, "--engine", engine, "--coupling", h, "--seed", seed,
                "--out", out, "--verify")
    _, vals = read_result(out)
    got = np.array([float(x) for x in vals])
    # Both directions of every input edge, a self-loop once, parallel edges kept
    # (a symmetric Matrix Market file is parsed both ways already).
    if file.name.endswith(".mtx.gz"):
        u, v = g.u, g.v
    else:
        loops = g.u == g.v
        u = np.concatenate([g.u, g.v[~loops]])
        v = np.concatenate([g.v, g.u[~loops]])
    A = sp.csr_matrix((np.ones(len(u)), (u, v)), shape=(g.n, g.n))
    deg = np.asarray(A.sum(axis=1)).ravel()
    e = bp_priors(g.n, seed)
    x = e.copy()
    for it in range(1, 101):
        nxt = e + 2 * h * (A.T @ x) - 4 * h * h * deg * x
        change = np.abs(nxt - x).sum()
        x = nxt
        if change <= 1e-7:
            break
    assert f"converged to --tolerance 1e-7 in {it} iterations" in r.stderr, r.stderr
    assert np.abs(got - 0.5 - x).sum() <= 1e-9 * np.abs(x).sum()
    # Homophily: a labelled vertex's neighbours lean its way more often than not.
    lean = np.sign(got - 0.5)
    agree = [lean[b] == np.sign(e[a]) for a, b in zip(u, v) if e[a] != 0 and e[b] == 0 and lean[b] != 0]
    assert len(agree) > 0 and np.mean(agree) > 0.5


@pytest.mark.parametrize("name", ["wiki", "facebook", "kron"])
@pytest.mark.parametrize("engine", ["stream", "external"])
def test_scc_matches_scipy_and_networkx(name, engine, work):
    g, _ = graph(name, work)
    file, flags = (work / "kron.bin32w", ["--vertices", 1 << 12]) if name == "kron" else (
        SHARED / GRAPHS[name][0], GRAPHS[name][1])
    store = work / f"{name}.rev.store"
    if not store.exists():
        outcore("ingest", file, "-o", store, "--with-reverse", *flags)
    out = work / f"{name}.scc.{engine}"
    r = outcore("run", "scc", store, "--engine", engine, "--out", out, "--verify")
    _, vals = read_result(out)
    got = np.array([int(x) for x in vals])
    k, lab = cg.connected_components(g.matrix(), directed=True, connection="strong")
    assert np.array_equal(got, smallest_ids(g, k, lab))
    assert f"{k} strongly connected components" in r.stderr
    # networkx: the same classes.
    G = nx.DiGraph()
    G.add_nodes_from(range(g.n))
    G.add_edges_from(zip(g.u.tolist(), g.v.tolist()))
    classes = {frozenset(c) for c in nx.strongly_connected_components(G)}
    by_label = {}
    for v, x in enumerate(got):
        by_label.setdefault(x, set()).add(v)
    assert {frozenset(c) for c in by_label.values()} == classes


@pytest.mark.parametrize("name", ["facebook", "wiki", "kron"])
def test_mcst_matches_scipy_and_networkx(name, work):
    g, _ = graph(name, work)
    file, flags = (work / "kron.bin32w", ["--vertices", 1 << 12]) if name == "kron" else (
        SHARED / GRAPHS[name][0], GRAPHS[name][1])
    store = work / f"{name}.und.store"
    if not store.exists():
        outcore("ingest", file, "-o", store, "--undirected", *flags)
    out = work / f"{name}.mcst"
    r = outcore("run", "mcst", store, "--out", out, "--verify")
    rows = [line.split() for line in open(out)]
    ids = np.array([int(a) for a, _, _ in rows])
    assert np.array_equal(ids, g.ids)
    parent = np.array([int(p) for _, _, p in rows])
    w = np.array([float(x) for _, x, _ in rows], np.float32)
    tree = parent >= 0
    # The least weight between each pair of vertices (edges taken undirected).
    least = {}
    for a, b, x in zip(g.u.tolist(), g.v.tolist(), g.w.tolist()):
        key = (min(a, b), max(a, b))
        least[key] = min(least.get(key, np.inf), x)
    pairs = [(a, b, x) for (a, b), x in least.items() if a != b]
    a, b, x = (np.array(c) for c in zip(*pairs))
    # scipy: the same multiset of weights (every minimum spanning forest has
    # it), so the same total; as many trees as components.
    U = sp.csr_matrix((x, (a, b)), shape=(g.n, g.n))
    T = cg.minimum_spanning_tree(U)
    assert np.array_equal(np.sort(w[tree]), np.sort(T.data.astype(np.float32)))
    k, _ = cg.connected_components(U, directed=False)
    assert g.n - tree.sum() == k
    assert f"spanning forest of {tree.sum()} edges in {k} trees" in r.stderr
    # Every forest edge is an edge of the graph with that weight (the least
    # between its ends), and the forest has no cycle (networkx).
    pos = {x: i for i, x in enumerate(g.ids.tolist())}
    F = nx.Graph()
    F.add_nodes_from(range(g.n))
    for v in np.flatnonzero(tree):
        p = pos[parent[v]]
        assert np.float32(least[(min(v, p), max(v, p))]) == w[v]
        F.add_edge(int(v), p)
    assert nx.is_forest(F)
    # networkx's own minimum spanning forest: the same total.
    G = nx.Graph()
    G.add_nodes_from(range(g.n))
    for (a, b), x in least.items():
        if a != b:
            G.add_edge(a, b, weight=float(np.float32(x)))
    want = nx.minimum_spanning_tree(G).size(weight="weight")
    assert np.isclose(float(w[tree].astype(np.float64).sum()), want, rtol=1e-12)


@pytest.mark.parametrize("name", ["facebook", "wiki", "lux"])
@pytest.mark.parametrize("algo", ["mis", "mis-luby"])
def test_mis_is_independent_and_maximal_by_networkx(name, algo, work):
    g, store = graph(name, work)
    out = work / f"{name}.{algo}"
    outcore("run", algo, store, "--out", out)
    ids, vals = read_result(out)
    members = {int(i) for i, x in zip(ids, vals) if x == "1"}
    G = nx.Graph()
    G.add_nodes_from(int(x) for x in g.ids)
    G.add_edges_from((int(g.ids[a]), int(g.ids[b])) for a, b in zip(g.u, g.v) if a != b)
    assert G.subgraph(members).number_of_edges() == 0
    assert nx.is_dominating_set(G, members)
    if algo == "mis":
        # the greedy set in id order, computed independently
        chosen = set()
        for x in sorted(G.nodes):
            if not any(y in chosen for y in G.neighbors(x)):
                chosen.add(x)
        assert members == chosen


@pytest.mark.parametrize("name", ["facebook", "wiki"])
def test_pagerank_matches_networkx(name, work):
    g, store = graph(name, work)
    out = work / f"{name}.prd"
    outcore("run", "pagerank-delta", store, "--tolerance", 1e-12, "--out", out, "--verify")
    _, vals = read_result(out)
    got = np.array([float(x) for x in vals])
    G = nx.DiGraph()
    G.add_nodes_from(range(g.n))
    G.add_edges_from(zip(g.u.tolist(), g.v.tolist()))
    want = nx.pagerank(G, alpha=0.85, tol=1e-13, max_iter=1000)
    want = np.array([want[i] for i in range(g.n)])
    assert np.allclose(got, want, rtol=1e-6, atol=1e-12)
    # fixed iterations against a numpy power iteration (LDBC definition)
    out10 = work / f"{name}.pr10"
    outcore("run", "pagerank", store, "--iterations", 10, "--out", out10)
    _, vals = read_result(out10)
    got10 = np.array([float(x) for x in vals])
    assert all(len(x.split("e")[0].replace(".", "").lstrip("-")) == 15 for x in vals[:50])
    pr = ldbc_pagerank(g.matrix(), 10)  # no parallel edges in these two graphs
    assert np.allclose(got10, pr, rtol=1e-10, atol=0)


@pytest.mark.parametrize("name", ["facebook", "wiki"])
def test_conductance_matches_networkx(name, work):
    g, store = graph(name, work)
    out = work / f"{name}.cond"
    r = outcore("run", "conductance", store, "--seed", 11, "--out", out, "--verify")
    _, vals = read_result(out)
    members = {i for i, x in enumerate(vals) if int(x) == 1}
    assert 0 < len(members) < g.n
    G = nx.DiGraph()
    G.add_nodes_from(range(g.n))
    G.add_edges_from(zip(g.u.tolist(), g.v.tolist()))
    m = re.search(r"conductance ([0-9.]+) \(cut (\d+) edges, volumes (\d+) / (\d+)\)", r.stderr)
    assert m, r.stderr
    rest = set(range(g.n)) - members
    assert int(m.group(2)) == nx.cut_size(G, members, rest)
    assert int(m.group(3)) == nx.volume(G, members)
    assert int(m.group(4)) == nx.volume(G, rest)
    want = nx.conductance(G, members, rest)
    assert abs(float(m.group(1)) - want) <= 1e-11 * want


@pytest.mark.parametrize("name", ["ny", "lux", "facebook", "kron"])
@pytest.mark.parametrize("mode", ["auto", "sequential", "selective", "lists"])
def test_jobs_match_scipy_and_networkx(name, mode, work):
    """A Het mix (and a label-propagation wcc) on one shared scan: each job against
    the independent libraries."""
    g, store = graph(name, work)
    r1, r2 = g.ids[g.n // 3], g.ids[7]
    out = work / f"{name}.jobs.{mode}"
    outcore("jobs", store, f"bfs:root={r1}", f"sssp:root={r2}", "wcc", "pagerank:iterations=10",
            "wcc-lp", "--io-mode", mode, "--out-dir", out, "--verify", "--threads", 2)
    _, vals = read_result(out / "job-0-bfs.txt")
    got = np.array([float("inf") if int(x) == UNREACHED else float(x) for x in vals])
    assert np.array_equal(got, cg.shortest_path(g.matrix(), unweighted=True, indices=g.n // 3))
    _, vals = read_result(out / "job-1-sssp.txt")
    got = np.array([float(x) for x in vals])
    want = cg.dijkstra(g.matrix(weights=True), indices=7)
    assert np.array_equal(np.isinf(got), np.isinf(want))
    fin = ~np.isinf(want)
    assert np.allclose(got[fin], want[fin], rtol=1e-5, atol=1e-5)
    k, lab = cg.connected_components(g.matrix(), directed=True, connection="weak")
    want = smallest_ids(g, k, lab)
    # One-pass union-find and label propagation: the same labels.
    for file in ["job-2-wcc.txt", "job-4-wcc-lp.txt"]:
        _, vals = read_result(out / file)
        assert np.array_equal(np.array([int(x) for x in vals]), want), file
    _, vals = read_result(out / "job-3-pagerank.txt")
    got = np.array([float(x) for x in vals])
    # Over the edge list, so parallel edges count as the store counts them.
    A = sp.coo_matrix((np.ones(len(g.u)), (g.u, g.v)), shape=(g.n, g.n)).tocsr()
    assert np.allclose(got, ldbc_pagerank(A, 10), rtol=1e-9, atol=0)


# --- the fully-external engine (V-Part) and the sort-reduce baseline -----------


def external(name, work, engine):
    """The store, partitioned into 3 V-Part partitions for `--engine external`."""
    g, store = graph(name, work)
    if engine == "external":
        # Vertex memory for exactly 3 partitions at 44 bytes per vertex.
        vm = -(-g.n // 3) * 44
        outcore("partition", store, "--vertex-memory", vm, "--partitions", 3)
    return g, store


@pytest.mark.parametrize("name", ["ny", "facebook", "wiki", "kron"])
@pytest.mark.parametrize("engine", ["external", "sortreduce"])
def test_external_bfs_matches_scipy(name, engine, work):
    g, store = external(name, work, engine)
    root = g.ids[g.n // 3]
    out = work / f"{name}.bfs.{engine}"
    r = outcore("run", "bfs", store, "--root", root, "--engine", engine, "--threads", 2,
                "--out", out, "--verify")
    assert f"engine (--engine {engine}" in r.stderr
    ids, vals = read_result(out)
    assert np.array_equal(ids, g.ids)
    want = cg.shortest_path(g.matrix(), unweighted=True, indices=g.n // 3)
    got = np.array([float("inf") if int(x) == UNREACHED else float(x) for x in vals])
    assert np.array_equal(got, want)


@pytest.mark.parametrize("name", ["ny", "kron"])
@pytest.mark.parametrize("engine", ["external", "sortreduce"])
def test_external_sssp_matches_scipy_dijkstra(name, engine, work):
    g, store = external(name, work, engine)
    out = work / f"{name}.sssp.{engine}"
    outcore("run", "sssp", store, "--root", g.ids[7], "--engine", engine, "--out", out, "--verify")
    _, vals = read_result(out)
    got = np.array([float(x) for x in vals])
    want = cg.dijkstra(g.matrix(weights=True), indices=7)
    assert np.array_equal(np.isinf(got), np.isinf(want))
    fin = ~np.isinf(want)
    assert np.allclose(got[fin], want[fin], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("name", ["facebook", "wiki"])
@pytest.mark.parametrize("engine", ["external", "sortreduce"])
def test_external_pagerank_matches_numpy_and_networkx(name, engine, work):
    g, store = external(name, work, engine)
    out = work / f"{name}.pr10.{engine}"
    outcore("run", "pagerank", store, "--iterations", 10, "--engine", engine, "--out", out)
    _, vals = read_result(out)
    got = np.array([float(x) for x in vals])
    assert np.allclose(got, ldbc_pagerank(g.matrix(), 10), rtol=1e-10, atol=0)
    out = work / f"{name}.prd.{engine}"
    outcore("run", "pagerank-delta", store, "--tolerance", 1e-12, "--engine", engine,
            "--out", out, "--verify")
    _, vals = read_result(out)
    got = np.array([float(x) for x in vals])
    G = nx.DiGraph()
    G.add_nodes_from(range(g.n))
    G.add_edges_from(zip(g.u.tolist(), g.v.tolist()))
    want = nx.pagerank(G, alpha=0.85, tol=1e-13, max_iter=1000)
    assert np.allclose(got, np.array([want[i] for i in range(g.n)]), rtol=1e-6, atol=1e-12)


# --- the vertex-centric engine (BAsC + Norder) ---------------------------------

_vstores = {}


def vertex_store(name, order, work):
    """The graph ingested with in-edges and relabelled by `order` (ingest --order)."""
    key = (name, order)
    if key in _vstores:
        return _vstores[key]
    graph(name, work)  # generates kron's input
    out = work / f"{name}.{order}.vstore"
    file = work / "kron.bin32w" if name == "kron" else SHARED / GRAPHS[name][0]
    flags = ["--vertices", 1 << 12] if name == "kron" else list(GRAPHS[name][1])
    if order != "original":
        flags += ["--order", order, "--order-seed", 5]
    outcore("ingest", file, "-o", out, "--force", "--in-edges", *flags)
    _vstores[key] = out
    return out


def vrun(*args):
    return outcore("run", *args, "--engine", "vertex")


@pytest.mark.parametrize("name", ALL)
@pytest.mark.parametrize("order,policy", [("original", None), ("norder", "gvs"), ("norder", "gvs-page"), ("random", "lowd")])
def test_vertex_bfs_matches_scipy(name, order, policy, work):
    g, _ = graph(name, work)
    store = vertex_store(name, order, work)
    root = g.ids[g.n // 3]
    out = work / f"{name}.vbfs.{order}"
    extra = ["--policy", policy, "--k", 10] if policy else []
    vrun("bfs", store, "--root", root, "--out", out, "--verify", "--page-size", "4K", *extra)
    ids, vals = read_result(out)
    assert np.array_equal(ids, g.ids)
    want = cg.shortest_path(g.matrix(), unweighted=True, indices=g.n // 3)
    got = np.array([float("inf") if int(x) == UNREACHED else float(x) for x in vals])
    assert np.array_equal(got, want)


@pytest.mark.parametrize("name", ["ny", "kron", "lux"])
def test_vertex_sssp_matches_scipy_dijkstra(name, work):
    g, _ = graph(name, work)
    store = vertex_store(name, "norder", work)
    out = work / f"{name}.vsssp"
    vrun("sssp", store, "--root", g.ids[7], "--out", out, "--verify", "--policy", "gvs",
         "--cache-split", "5%,20%", "--k", 5)
    _, vals = read_result(out)
    got = np.array([float(x) for x in vals])
    want = cg.dijkstra(g.matrix(weights=True), indices=7)
    assert np.array_equal(np.isinf(got), np.isinf(want))
    fin = ~np.isinf(want)
    assert np.allclose(got[fin], want[fin], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("name", ["wiki", "facebook", "kron", "lux"])
@pytest.mark.parametrize("order", ["original", "random"])
def test_vertex_wcc_matches_scipy(name, order, work):
    g, _ = graph(name, work)
    store = vertex_store(name, order, work)
    out = work / f"{name}.vwcc.{order}"
    vrun("wcc", store, "--out", out, "--verify", "--policy", "highd")
    _, vals = read_result(out)
    got = np.array([int(x) for x in vals])
    k, lab = cg.connected_components(g.matrix(), directed=True, connection="weak")
    assert np.array_equal(got, smallest_ids(g, k, lab))


def small_kron(work):
    """Kronecker scale 9, duplicates dropped (networkx keeps one edge per pair)."""
    src = work / "kron9.bin32"
    outcore("generate", "kronecker", "--scale", 9, "--edge-factor", 8, "--seed", 4, "-o", src, "--force")
    store = work / "kron9.store"
    outcore("ingest", src, "-o", store, "--force", "--dedup", "--vertices", 512, "--order", "norder")
    raw = np.fromfile(src, dtype=[("u", "<u4"), ("v", "<u4")])
    G = nx.DiGraph()
    G.add_nodes_from(range(512))
    G.add_edges_from(zip(raw["u"].tolist(), raw["v"].tolist()))
    return G, store


def bc_values(out):
    ids, vals = read_result(out)
    return {int(i): float(x) for i, x in zip(ids, vals)}


def test_vertex_bc_matches_networkx_exactly_on_a_small_graph(work):
    G, store = small_kron(work)
    out = work / "kron9.bc"
    vrun("bc", store, "--sources", 1000, "--out", out, "--policy", "gvs", "--page-size", "512")
    got = bc_values(out)
    want = nx.betweenness_centrality(G, normalized=False)
    assert set(got) == set(want)
    for v in want:
        assert abs(got[v] - want[v]) <= 1e-9 * max(1.0, abs(want[v])), v


@pytest.mark.parametrize("name", ["facebook", "wiki"])
def test_vertex_bc_from_sampled_sources_matches_networkx(name, work):
    g, _ = graph(name, work)
    store = vertex_store(name, "norder", work)
    out, stats = work / f"{name}.vbc", work / f"{name}.vbc.json"
    vrun("bc", store, "--sources", 12, "--seed", 3, "--out", out, "--stats", stats,
         "--policy", "gvs", "--k", 10)
    import json
    sources = json.loads(stats.read_text())["sources"]
    assert len(sources) == 12
    G = nx.DiGraph()
    G.add_nodes_from(int(x) for x in g.ids)
    G.add_edges_from((int(g.ids[a]), int(g.ids[b])) for a, b in zip(g.u, g.v))
    want = nx.betweenness_centrality_subset(G, sources=sources, targets=list(G), normalized=False)
    got = bc_values(out)
    for v in want:
        assert abs(got[v] - want[v]) <= 1e-9 * max(1.0, abs(want[v])), v


@pytest.mark.parametrize("name", ["kron9", "facebook"])
def test_vertex_diam_is_bounded_by_the_exact_diameter(name, work):
    if name == "kron9":
        G, store = small_kron(work)
        A = nx.to_scipy_sparse_array(G, nodelist=range(512), format="csr")
        ids = np.arange(512)
    else:
        g, _ = graph(name, work)
        store = vertex_store(name, "norder", work)
        A, ids = g.matrix(), g.ids
    stats = work / f"{name}.diam.json"
    vrun("diam", store, "--rounds", 4, "--seed", 2, "--stats", stats, "--verify")
    import json
    st = json.loads(stats.read_text())
    D = cg.shortest_path(A, unweighted=True)  # all-pairs BFS
    exact = int(D[np.isfinite(D)].max())
    eccs = []
    for s in st["starts"]:
        row = D[np.searchsorted(ids, s)]
        eccs.append(int(row[np.isfinite(row)].max()))
    assert st["diameter"] == max(eccs)
    assert st["diameter"] <= exact
    # each sweep starts at a farthest vertex of the one before
    for a, b in zip(st["starts"], st["starts"][1:]):
        assert D[np.searchsorted(ids, a), np.searchsorted(ids, b)] == eccs[st["starts"].index(a)]


def test_output_formats_agree(work):
    g, store = graph("lux", work)
    root = g.ids[5]
    outs = {}
    for fmt in ["text", "bin", "npy"]:
        p = work / f"lux.out.{fmt}"
        outcore("run", "bfs", store, "--root", root, "--out", p, "--out-format", fmt, "--parents")
        outs[fmt] = p
    arr = np.load(outs["npy"])
    assert arr.dtype.names == ("id", "value", "parent")
    raw = np.fromfile(outs["bin"], dtype=arr.dtype)
    assert np.array_equal(arr, raw)
    text = np.loadtxt(outs["text"], dtype=np.int64)
    assert np.array_equal(text[:, 0], arr["id"]) and np.array_equal(text[:, 1], arr["value"])
    assert np.array_equal(text[:, 2], arr["parent"])


def _cgroup_dir():
    """A fresh child of this process's memory cgroup (v1 or v2), or None."""
    try:
        lines = open("/proc/self/cgroup").read().splitlines()
    except OSError:
        return None
    for line in lines:
        _, ctrls, path = line.split(":", 2)
        if "memory" in ctrls.split(",") and os.path.isdir("/sys/fs/cgroup/memory"):
            base = "/sys/fs/cgroup/memory" + path
            limit = "memory.limit_in_bytes"
            break
    else:
        path = next((l.split(":", 2)[2] for l in lines if l.startswith("0::")), None)
        if path is None:
            return None
        base, limit = "/sys/fs/cgroup" + path, "memory.max"
    d = os.path.join(base, f"outcore-test-{os.getpid()}")
    try:
        os.mkdir(d)
    except OSError:
        return None
    return d, limit


def test_mapped_vertex_arrays_under_a_hard_memory_limit(work):
    g, store = graph("ny", work)
    cgroup = _cgroup_dir()
    if cgroup is None:
        pytest.skip("cannot create a memory cgroup here (needs write access to the cgroup tree)")
    d, limit = cgroup
    try:
        with open(os.path.join(d, limit), "w") as f:
            f.write(str(48 << 20))
        for p in store.iterdir():
            fd = os.open(p, os.O_RDONLY)
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            os.close(fd)
        procs = os.path.join(d, "cgroup.procs")
        for algo in ["bfs", "wcc", "mis"]:
            out = work / f"ny.limited.{algo}"
            r = subprocess.run(
                [str(x) for x in [BIN, "run", algo, store, "--root", 1, "--memory", "8M",
                                  "--mapped-state", "--work-dir", work, "--out", out, "--verify"]],
                capture_output=True, text=True,
                preexec_fn=lambda: open(procs, "w").write(str(os.getpid())),
            )
            assert r.returncode == 0, r.stderr
            ref = work / f"ny.free.{algo}"
            outcore("run", algo, store, "--root", 1, "--out", ref)
            assert open(out).read() == open(ref).read()
    finally:
        try:
            os.rmdir(d)
        except OSError:
            pass
