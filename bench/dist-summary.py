#!/usr/bin/env python3
"""Tables of bench/dist.sh's --stats files (markdown on stdout).

    python3 bench/dist-summary.py OUT
"""
import glob
import json
import os
import statistics
import sys

out = sys.argv[1]


def load(label):
    with open(os.path.join(out, label + ".json")) as f:
        return json.load(f)


def mib(x):
    return f"{x / 2**20:.0f}"


def rank_sum(j, key, storage=False):
    return sum((r["storage"] if storage else r)[key] for r in j["per_rank"])


print("### Weak scaling: Kronecker scale 20+r on 2^r ranks\n")
print("| scale | ranks | algorithm | run s | mpirun wall s | x vs 1 rank | edges processed | read MiB | written MiB | sent MiB | max idle s | stolen chunks |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|")
for algo in ["bfs", "pagerank"]:
    base = None
    for r in range(3):
        s, n = 20 + r, 1 << r
        label = f"weak-{algo}-{s}-{n}"
        if not os.path.exists(os.path.join(out, label + ".json")):
            continue
        j = load(label)
        base = base or j["seconds"]
        print(
            f"| {s} | {n} | {algo} | {j['seconds']:.2f} | {j['wall_seconds']:.2f} | {j['seconds'] / base:.2f} "
            f"| {rank_sum(j, 'edges_processed')} | {mib(rank_sum(j, 'bytes_read', True))} "
            f"| {mib(rank_sum(j, 'bytes_written', True))} | {mib(rank_sum(j, 'bytes_sent'))} "
            f"| {max(r['idle_seconds'] for r in j['per_rank']):.2f} | {rank_sum(j, 'stolen_chunks')} |"
        )

label = "weak-pagerank-22-4"
if os.path.exists(os.path.join(out, label + ".json")):
    j = load(label)
    print("\n### Per rank: pagerank x5, Kronecker 22 on 4 ranks\n")
    print("| rank | read MiB | written MiB | sent MiB | received MiB | compute idle s | storage idle s | edge chunks | stolen chunks | partitions helped | helpers accepted |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for r in j["per_rank"]:
        st = r["storage"]
        print(
            f"| {r['rank']} | {mib(st['bytes_read'])} | {mib(st['bytes_written'])} | {mib(r['bytes_sent'])} "
            f"| {mib(r['bytes_received'])} | {r['idle_seconds']:.2f} | {st['idle_seconds']:.2f} "
            f"| {r['edge_chunks_read']} | {r['stolen_chunks']} | {r['partitions_helped']} | {r['helpers_accepted']} |"
        )

print("\n### One rank against `outcore run` (medians)\n")
print("| scale | algorithm | dist 1 rank s | run --threads 1 s | run --threads 2 s | dist / run 1 | dist / run 2 |")
print("|---|---|---|---|---|---|---|")
for s in [20, 22]:
    for algo in ["bfs", "pagerank"]:
        med = {}
        for kind in ["dist", "run1", "run2"]:
            xs = [json.load(open(p))["seconds"] for p in sorted(glob.glob(os.path.join(out, f"one{s}-{algo}-{kind}-*.json")))]
            med[kind] = statistics.median(xs) if xs else float("nan")
        n = len(glob.glob(os.path.join(out, f"one{s}-{algo}-dist-*.json")))
        if n == 0:
            continue
        print(
            f"| {s} | {algo} (n={n}) | {med['dist']:.3f} | {med['run1']:.3f} | {med['run2']:.3f} "
            f"| {med['dist'] / med['run1']:.2f} | {med['dist'] / med['run2']:.2f} |"
        )

print("\n### Accumulators kept from scatter to gather: pagerank x5, Kronecker 20+r on 2^r ranks (medians)\n")
print("| ranks | on: run s | off (--resident 0): run s | on / off | on: scatter s | off: scatter s | on: gather s | off: gather s | on: written MiB | off: written MiB |")
print("|---|---|---|---|---|---|---|---|---|---|")
for r in range(3):
    s, n = 20 + r, 1 << r
    row = {}
    for mode in ["on", "off"]:
        js = [json.load(open(p)) for p in sorted(glob.glob(os.path.join(out, f"resident-{mode}-{s}-{n}-*.json")))]
        if not js:
            break
        row[mode] = {
            "secs": statistics.median(j["seconds"] for j in js),
            "scatter": statistics.median(max(x["scatter_seconds"] for x in j["per_rank"]) for j in js),
            "gather": statistics.median(max(x["gather_seconds"] for x in j["per_rank"]) for j in js),
            "written": statistics.median(rank_sum(j, "bytes_written", True) for j in js),
        }
    if len(row) < 2:
        continue
    on, off = row["on"], row["off"]
    print(
        f"| {n} | {on['secs']:.2f} | {off['secs']:.2f} | {on['secs'] / off['secs']:.2f} | {on['scatter']:.2f} "
        f"| {off['scatter']:.2f} | {on['gather']:.2f} | {off['gather']:.2f} | {mib(on['written'])} | {mib(off['written'])} |"
    )

print("\n### The request window and the model of §6.5: pagerank x5, Kronecker 21 on 4 ranks\n")
print("R = request to reply at the computation engine, R_s = service time at the storage engine (means over chunk requests);")
print("phi = R / R_s (equation 1); B = bytes read per busy storage second; predicted = rho(4,k) x 4 x B; measured = bytes read / run seconds.\n")
print("| window k | rho(4,k) | storage busy (measured) | R ms | R_s ms | phi | B MiB/s | predicted MiB/s | measured MiB/s | run s |")
print("|---|---|---|---|---|---|---|---|---|---|")
for k in range(1, 5):
    label = f"window-{k}"
    if not os.path.exists(os.path.join(out, label + ".json")):
        continue
    j = load(label)
    secs = j["seconds"]
    pr = j["per_rank"]
    busy = statistics.mean(1 - r["storage"]["idle_seconds"] / secs for r in pr)
    rho = 1 - (1 - k / 4) ** 4
    req = sum(r["chunk_requests"] for r in pr)
    r_all = sum(r["request_seconds"] for r in pr) / max(req, 1)
    served = sum(r["storage"]["chunk_requests"] for r in pr)
    r_s = sum(r["storage"]["chunk_serve_seconds"] for r in pr) / max(served, 1)
    read = rank_sum(j, "bytes_read", True)
    b = read / max(sum(r["storage"]["chunk_serve_seconds"] for r in pr), 1e-9)
    print(
        f"| {k} | {rho:.3f} | {busy:.3f} | {r_all * 1e3:.2f} | {r_s * 1e3:.2f} | {r_all / max(r_s, 1e-12):.1f} "
        f"| {b / 2**20:.0f} | {rho * 4 * b / 2**20:.0f} | {read / 2**20 / secs:.0f} | {secs:.2f} |"
    )
