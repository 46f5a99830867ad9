"""outcore from Python against the in-memory Python graph libraries.

Load + BFS + WCC + PageRank (10 iterations) on one edge file (bin32, u32
pairs, read as an undirected graph), each system in a process of its own:

    python bench/python/peers.py SYSTEM EDGES WORKDIR [--root R] [--memory 640M]

prints one JSON line: seconds per step and in total, the process's peak
resident memory, and the answers (vertices reached by BFS, components) so the
systems can be checked against each other. SYSTEM is outcore, igraph,
networkit or networkx. For outcore run it under a hard memory limit with the
input evicted, e.g.

    outcore limit --mem 1G --evict EDGES --json lim.json -- python peers.py outcore EDGES DIR

The driver docs/benchmarks.md shows (bench/python/run.sh) does exactly that,
alternating the systems. Nothing here is a test: it measures.
"""

import argparse
import json
import os
import resource
import shutil
import sys
import time

import numpy as np


def peak_rss():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def edges(path):
    raw = np.fromfile(path, dtype="<u4")
    return raw[0::2], raw[1::2]


def run_outcore(a, t):
    import outcore

    store = os.path.join(a.workdir, "py-bench.store")
    if os.path.exists(store):
        shutil.rmtree(store)
    g = outcore.ingest(a.edges, store, undirected=True, memory=a.memory, threads=a.threads,
                       vertices=a.vertices, progress=False)
    t("load")
    b = g.bfs(a.root, memory=a.memory, threads=a.threads, progress=False)
    t("bfs")
    c = g.wcc(memory=a.memory, threads=a.threads, progress=False)
    t("wcc")
    g.pagerank(iterations=10, memory=a.memory, threads=a.threads, progress=False)
    t("pagerank")
    reached = int(np.count_nonzero(b.values != outcore.UNREACHED))
    return reached, int(len(np.unique(c.values)))


def run_igraph(a, t):
    import igraph as ig

    u, v = edges(a.edges)
    g = ig.Graph(n=a.vertices, edges=np.column_stack([u, v]), directed=False)
    del u, v
    t("load")
    order, _, _ = g.bfs(a.root)
    t("bfs")
    comps = g.connected_components()
    t("wcc")
    g.pagerank(damping=0.85)
    t("pagerank")
    return len(order), len(comps)


def run_networkit(a, t):
    import networkit as nk

    nk.setNumberOfThreads(a.threads)
    u, v = edges(a.edges)
    g = nk.Graph(a.vertices, directed=False)
    g.addEdges((u.astype(np.uint64), v.astype(np.uint64)))
    del u, v
    t("load")
    bfs = nk.distance.BFS(g, a.root, storePaths=False)
    bfs.run()
    d = np.asarray(bfs.getDistances())
    t("bfs")
    cc = nk.components.ConnectedComponents(g)
    cc.run()
    t("wcc")
    pr = nk.centrality.PageRank(g, damp=0.85, tol=1e-300)
    pr.maxIterations = 10
    pr.run()
    t("pagerank")
    return int(np.count_nonzero(d < 1e300)), cc.numberOfComponents()


def run_networkx(a, t):
    import networkx as nx

    u, v = edges(a.edges)
    g = nx.Graph()
    g.add_nodes_from(range(a.vertices))
    g.add_edges_from(zip(u.tolist(), v.tolist()))
    del u, v
    t("load")
    reached = len(nx.single_source_shortest_path_length(g, a.root))
    t("bfs")
    comps = nx.number_connected_components(g)
    t("wcc")
    try:  # ten iterations: networkx raises when they do not reach its tolerance
        nx.pagerank(g, alpha=0.85, max_iter=10, tol=0)
    except nx.PowerIterationFailedConvergence:
        pass
    t("pagerank")
    return reached, comps


def main():
    p = argparse.ArgumentParser()
    p.add_argument("system", choices=["outcore", "igraph", "networkit", "networkx"])
    p.add_argument("edges")
    p.add_argument("workdir")
    p.add_argument("--vertices", type=int, required=True)
    p.add_argument("--root", type=int, default=1)
    p.add_argument("--memory", default="640M")
    p.add_argument("--threads", type=int, default=2)
    a = p.parse_args()
    times = {}
    start = last = time.perf_counter()

    def t(step):
        nonlocal last
        now = time.perf_counter()
        times[step] = round(now - last, 3)
        last = now

    runner = globals()["run_" + a.system]
    reached, comps = runner(a, t)
    print(json.dumps({
        "system": a.system,
        "seconds": times,
        "total_seconds": round(time.perf_counter() - start, 3),
        "peak_rss_bytes": peak_rss(),
        "bfs_reached": reached,
        "components": comps,
    }))
    sys.stdout.flush()


if __name__ == "__main__":
    main()
