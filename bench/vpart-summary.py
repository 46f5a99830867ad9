#!/usr/bin/env python3
"""The V-Part benchmark's table (docs/benchmarks-vpart.md) from the harness's output:
   python3 bench/vpart-summary.py docs/bench/vpart-kron24-floor docs/bench/vpart-kron24-quarter docs/bench/vpart-kron24-eighth
Medians over repetitions; ratios are other engines' time over the external engine's
(and the external engine's over the semi-external floor's)."""
import json
import statistics
import sys
from pathlib import Path

rows = []
for d in sys.argv[1:]:
    for line in open(Path(d) / "runs.jsonl"):
        r = json.loads(line)
        stats = Path(d) / "runs" / (r["id"].replace("/", "_") + ".stats.json")
        mirror = None
        if stats.exists() and r["config"] == "external" and r["status"] == "ok":
            j = json.load(open(stats))
            e = j["engine"]
            mirror = (e["mirror_update_seconds"] / j["seconds"],
                      e.get("mirror_wait_seconds", 0.0) / j["seconds"])
        rows.append((r, mirror))


def pick(algo, scenario, config):
    rs = [(r, m) for r, m in rows if r["algorithm"] == algo and r["scenario"] == scenario
          and r["config"] == config]
    ok = [r["wall_s"] for r, _ in rs if r["status"] == "ok"]
    bad = [r["status"] for r, _ in rs if r["status"] != "ok"]
    mir = [m for _, m in rs if m is not None]
    gib = [r["engine_read_bytes"] / 2**30 for r, _ in rs if r["status"] == "ok" and r.get("engine_read_bytes")]
    return (statistics.median(ok) if ok else None, bad, mir[0] if mir else None,
            statistics.median(gib) if gib else None, rs[0][0]["limit_bytes"] if rs else None)


def fmt(t, bad):
    return f"{t:.1f}" if t is not None else (bad[0] if bad else "-")


print("| algorithm | budget (hard limit) | semi-external floor s | external s | mapped arrays s | sort-reduce s | mapped / external | sort-reduce / external | external / floor | mirror-update thread busy | partition loop waiting for it |")
print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
for algo in ["pagerank", "bfs"]:
    floor, _, _, _, _ = pick(algo, "semi-external", "stream")
    for sc, label in [("quarter", "1/4: 112M (144 MiB)"), ("eighth", "1/8: 56M (88 MiB)")]:
        ext, eb, mir, egib, _ = pick(algo, sc, "external")
        mp, mb, _, _, _ = pick(algo, sc, "mapped")
        sr, sb, _, _, _ = pick(algo, sc, "sortreduce")
        ratio = lambda a: f"{a / ext:.2f}x" if a and ext else "-"
        print(f"| {algo} | {label} | {fmt(floor, [])} | {fmt(ext, eb)} | {fmt(mp, mb)} | {fmt(sr, sb)} | "
              f"{ratio(mp)} | {ratio(sr)} | {f'{ext / floor:.2f}x' if ext and floor else '-'} | "
              f"{f'{mir[0] * 100:.0f}%' if mir is not None else '-'} | "
              f"{f'{mir[1] * 100:.1f}%' if mir is not None else '-'} |")
