#!/usr/bin/env python3
"""Two outcore binaries side by side: the same commands, alternating order each
round, wall time per run, medians and the ratio new/old.

    python3 bench/ab.py --old OLD --new NEW --rounds 5 --store S [--engine E] \
        [--jobs] 'bfs:--root 1525364' 'pagerank:' ...

Each argument is `ALGO:EXTRA ARGS` for `outcore run ALGO S --threads 2 [--engine
E] EXTRA` (with --jobs: a space-separated list of job specs for `outcore jobs
S --threads 2 SPECS`). Results go to a temporary directory that is removed."""
import argparse, statistics, subprocess, sys, tempfile, time

ap = argparse.ArgumentParser()
ap.add_argument("--old", required=True)
ap.add_argument("--new", required=True)
ap.add_argument("--rounds", type=int, default=5)
ap.add_argument("--store", required=True)
ap.add_argument("--engine")
ap.add_argument("--jobs", action="store_true")
ap.add_argument("cases", nargs="+")
a = ap.parse_args()
bins = {"old": a.old, "new": a.new}
times = {}
with tempfile.TemporaryDirectory() as out:
    for r in range(a.rounds):
        for case in a.cases:
            for b in ("old", "new") if r % 2 == 0 else ("new", "old"):
                if a.jobs:
                    cmd = [bins[b], "jobs", a.store, "--threads", "2", "--out-dir", out] + case.split()
                else:
                    algo, _, extra = case.partition(":")
                    cmd = [bins[b], "run", algo, a.store, "--threads", "2", "--out", f"{out}/{b}.txt"]
                    cmd += (["--engine", a.engine] if a.engine else []) + extra.split()
                t = time.time()
                p = subprocess.run(cmd, capture_output=True, text=True)
                if p.returncode:
                    sys.exit(f"{' '.join(cmd)}: {p.stderr.strip()}")
                times.setdefault((case, b), []).append(time.time() - t)
for case in a.cases:
    o, n = (statistics.median(times[(case, b)]) for b in ("old", "new"))
    print(f"{case:45s} old {o:7.3f} s  new {n:7.3f} s  new/old {n / o:.3f}")
