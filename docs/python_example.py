"""The notebook-style example of docs/python.md, as a script.

    python docs/python_example.py OUT_DIR      # writes OUT_DIR/python-example.png

Needs the package (pip install .), numpy, pandas and matplotlib.
"""
import os
import sys
import tempfile

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

import outcore  # noqa: E402

out_dir = sys.argv[1] if len(sys.argv) > 1 else "."
with tempfile.TemporaryDirectory() as work:
    # In: a Kronecker graph as numpy edge arrays (any (src, dst[, w]) arrays do).
    path = outcore.generate("kronecker", os.path.join(work, "k16.bin32"), scale=16, progress=False)
    raw = np.fromfile(path, dtype="<u4")
    src, dst = raw[0::2], raw[1::2]
    g = outcore.ingest((src, dst), os.path.join(work, "k16.store"), undirected=True,
                       memory="64M", progress=False)
    print(g)

    # Run: BFS from the vertex of highest degree, within a 32 MiB budget.
    deg = g.degrees()
    root = int(g.ids()[np.argmax(deg)])
    bfs = g.bfs(root, memory="32M", progress=False)
    print(bfs.summary)
    df = bfs.to_pandas()
    reached = df[df.value != outcore.UNREACHED]
    per_level = reached.value.value_counts().sort_index()
    print(per_level.to_string())

    ranks = g.pagerank(iterations=10, progress=False).to_pandas()
    print(ranks.nlargest(3, "value").to_string(index=False))

    # A plot: the degree distribution and the BFS levels.
    fig, (a, b) = plt.subplots(1, 2, figsize=(10, 3.6))
    values, counts = np.unique(deg[deg > 0], return_counts=True)
    a.loglog(values, counts, ".", ms=3)
    a.set_xlabel("degree")
    a.set_ylabel("vertices")
    a.set_title(f"Kronecker 16: {g.num_vertices} vertices, {g.num_edges} edges")
    b.bar(per_level.index, per_level.values)
    b.set_yscale("log")
    b.set_xlabel("BFS level")
    b.set_ylabel("vertices")
    b.set_title(f"BFS from vertex {root}")
    fig.tight_layout()
    png = os.path.join(out_dir, "python-example.png")
    fig.savefig(png, dpi=90)
    print("wrote", png)
