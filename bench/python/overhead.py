"""The Python package's overhead over the command line, on one store (warm).

    python bench/python/overhead.py STORE ROOT [--reps 5] [--memory 640M]

For bfs, wcc and pagerank (10 iterations), alternating: `outcore run ALGO
STORE --out R.npy` as a process (what a shell user gets: the result in a
file) against `outcore.open(STORE).ALGO(...)` in this process (the result
as numpy arrays). Prints one JSON line per algorithm with the median wall
seconds of each and their ratio. OUTCORE names the binary (default: outcore).
"""

import argparse
import json
import os
import statistics
import subprocess
import tempfile
import time

import outcore


def main():
    p = argparse.ArgumentParser()
    p.add_argument("store")
    p.add_argument("root", type=int)
    p.add_argument("--reps", type=int, default=5)
    p.add_argument("--memory", default="640M")
    a = p.parse_args()
    binary = os.environ.get("OUTCORE", "outcore")
    g = outcore.open(a.store)
    calls = {
        "bfs": (["--root", str(a.root)], lambda: g.bfs(a.root, memory=a.memory, progress=False)),
        "wcc": ([], lambda: g.wcc(memory=a.memory, progress=False)),
        "pagerank": (["--iterations", "10"],
                     lambda: g.pagerank(iterations=10, memory=a.memory, progress=False)),
    }
    with tempfile.TemporaryDirectory() as tmp:
        for algo, (extra, py) in calls.items():
            cli_t, py_t = [], []
            for _ in range(a.reps):
                t = time.perf_counter()
                subprocess.run([binary, "run", algo, a.store, "--memory", a.memory, *extra,
                                "--out", os.path.join(tmp, "r.npy")],
                               check=True, stderr=subprocess.DEVNULL)
                cli_t.append(time.perf_counter() - t)
                t = time.perf_counter()
                py()
                py_t.append(time.perf_counter() - t)
            c, q = statistics.median(cli_t), statistics.median(py_t)
            print(json.dumps({"algorithm": algo, "reps": a.reps, "cli_median_s": round(c, 3),
                              "python_median_s": round(q, 3), "python_over_cli": round(q / c, 3)}))


if __name__ == "__main__":
    main()
