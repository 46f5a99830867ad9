#!/usr/bin/env python3
"""Cross-store summary of a basc-norder bench: for each graph and algorithm, every
(order, cache configuration) against page cache only on the original order.

    python3 bench/basc-summary.py docs/bench/basc-norder/runs.jsonl

Reads the JSON lines `outcore bench` wrote; medians over the ok runs of the engine's
own algorithm seconds (static cache already loaded) and of the pages it read.
"""
import json
import statistics
import sys
from collections import defaultdict

runs = defaultdict(list)
for line in open(sys.argv[1]):
    r = json.loads(line)
    if r["status"] != "ok" or not r.get("engine"):
        continue
    store = r["store"]
    graph, _, order = store.partition("-")
    runs[(graph, r["algorithm"], order or "original", r["config"])].append(r)


def med(rs, f):
    xs = [f(r) for r in rs]
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


graphs = sorted({k[0] for k in runs})
orders = ["original", "degree", "norder"]
configs = ["page-only", "basc-gvs", "basc-gvs-page", "basc-lowd", "basc-highd", "basc-random"]
for g in graphs:
    for a in sorted({k[1] for k in runs if k[0] == g}):
        base = runs.get((g, a, "original", "page-only"))
        if not base:
            continue
        bt = med(base, lambda r: r["engine_seconds"])
        bp = med(base, lambda r: r["engine"]["pages_read"])
        print(f"\n#### {g} — {a} (baseline: page cache only, original order: {bt:.3f} s, {bp:.0f} pages)\n")
        print("| order | config | algo s | speed-up | pages read | fewer pages | page hits | static hits | utilization |")
        print("|---|---|---|---|---|---|---|---|---|")
        for o in orders:
            for c in configs:
                rs = runs.get((g, a, o, c))
                if not rs:
                    continue
                t = med(rs, lambda r: r["engine_seconds"])
                p = med(rs, lambda r: r["engine"]["pages_read"])
                ph = med(rs, lambda r: r["engine"]["page_hit_ratio"])
                sh = med(rs, lambda r: r["engine"]["static_hit_ratio"])
                u = med(rs, lambda r: r["engine"]["page_utilization"])
                print(f"| {o} | {c} | {t:.3f} | {bt / t:.2f}x | {p:.0f} | {bp / max(p, 1):.2f}x | "
                      f"{100 * ph:.1f}% | {100 * sh:.1f}% | {100 * u:.1f}% |")

# Headline: the paper's targets, per graph, algorithm and GVS variant.
print("\n#### Headline (medians; speed-up and fewer pages against page cache only on the original order)\n")
print("| graph | algorithm | policy | + norder speed-up | + norder fewer pages | vs lowd time (original) | (norder) | vs lowd pages (original) | (norder) |")
print("|---|---|---|---|---|---|---|---|---|")
for g in graphs:
    for a in sorted({k[1] for k in runs if k[0] == g}):
        t = lambda o, c: med(runs.get((g, a, o, c), []), lambda r: r["engine_seconds"])
        p = lambda o, c: med(runs.get((g, a, o, c), []), lambda r: r["engine"]["pages_read"])
        base_t, base_p = t("original", "page-only"), p("original", "page-only")
        for pol in ["gvs", "gvs-page"]:
            c = f"basc-{pol}"
            if None in (base_t, base_p, t("norder", c), t("original", c)):
                continue
            print(f"| {g} | {a} | {pol} | {base_t / t('norder', c):.2f}x | "
                  f"{base_p / max(p('norder', c), 1):.2f}x | "
                  f"{t('original', 'basc-lowd') / t('original', c):.2f}x | "
                  f"{t('norder', 'basc-lowd') / t('norder', c):.2f}x | "
                  f"{p('original', 'basc-lowd') / p('original', c):.2f}x | "
                  f"{p('norder', 'basc-lowd') / p('norder', c):.2f}x |")
