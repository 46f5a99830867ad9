#!/usr/bin/env python3
"""Table of an ingest benchmark made by bench/ingest.sh: python3 bench/ingest-summary.py DIR"""
import glob, json, os, re, statistics, sys

d = sys.argv[1]
def mib(b): return f"{b / 2**20:,.0f} MiB" if b < 2**30 else f"{b / 2**30:.2f} GiB"
rows = {}
for js in sorted(glob.glob(os.path.join(d, "*-run*.json"))):
    name = os.path.basename(js).rsplit("-run", 1)[0]
    o = json.load(open(js))
    summ = open(js[:-5] + ".summary").read()
    m = re.search(r"ingested (\d+) edges .* in ([\d.]+) s \(([^)]*)\).*?wrote .*?\(([\d.]+ \w+) store\), (\d+) sort runs", summ)
    phases = dict((k, float(v)) for k, v in re.findall(r"(\w[\w-]*) ([\d.]+)s", m.group(3)))
    rows.setdefault(name, []).append(dict(o=o, edges=int(m.group(1)), phases=phases,
                                           store=m.group(4), runs=int(m.group(5))))
print("| input | edges | wall s (runs) | median s | M edges/s (median) | phases, median s | sort runs | read from storage | written | store | peak RSS | OOM kills |")
print("|---|---:|---|---:|---:|---|---:|---:|---:|---:|---:|---:|")
for name, rs in rows.items():
    walls = [r["o"]["wall_s"] for r in rs]
    med = statistics.median(walls)
    edges = rs[0]["edges"]
    names = list(rs[0]["phases"])
    ph = ", ".join(f"{k} {statistics.median(r['phases'].get(k, 0) for r in rs):.2f}" for k in names)
    print(f"| {name} | {edges:,} | {', '.join(f'{w:.2f}' for w in walls)} | {med:.2f} | {edges / med / 1e6:.1f} | {ph} | {rs[0]['runs']} "
          f"| {mib(statistics.median(r['o']['read_bytes'] for r in rs))} | {mib(statistics.median(r['o']['write_bytes'] for r in rs))} "
          f"| {rs[0]['store']} | {mib(max(r['o']['max_rss_bytes'] for r in rs))} | {sum(r['o']['oom_kills'] or 0 for r in rs)} |")
