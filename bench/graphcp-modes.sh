#!/usr/bin/env bash
# Per-iteration comparison of the jobs engine's I/O modes (issue 5): GraphCP's
# auto mode against always-sequential (b1) and always-selective (b2) loading,
# iteration by iteration. DFVU is off so that the three modes run the same
# iterations (same frontier, up to the order of relaxations within one).
#
#   bench/graphcp-modes.sh OUTCORE STORE REPS MEMORY SPEC...
#   e.g. bench/graphcp-modes.sh target/release/outcore bench-data/kron22w.store 3 128M \
#            pagerank:iterations=5 bfs:root=1525364 wcc-lp sssp:root=1655433
#
# AUTO_ARGS (environment) are passed to the auto runs only, e.g.
# AUTO_ARGS="--io-granularity row".
#
# Runs are interleaved (the order rotating by repetition) with O_DIRECT reads; prints one
# row per iteration: the shared active set, each mode's median seconds and bytes,
# the mode auto chose, and auto's seconds over the better of b1 and b2.
set -euo pipefail
bin=$1 store=$2 reps=$3 mem=$4
shift 4
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
modes=(auto sequential selective)
read -r -a auto_args <<< "${AUTO_ARGS:-}"
for r in $(seq 1 "$reps"); do
  # Each repetition starts with a different mode, so no mode always runs first.
  for i in 0 1 2; do
    m=${modes[$(((i + r) % 3))]}
    extra=()
    if [ "$m" = auto ]; then extra=("${auto_args[@]}"); fi
    "$bin" jobs "$store" "$@" --memory "$mem" --direct --no-dfvu --io-mode "$m" \
      ${extra[@]+"${extra[@]}"} --stats "$out/$m-$r.json" >/dev/null 2>&1
  done
done
python3 - "$out" "$reps" <<'PY'
import json, statistics, sys
out, reps = sys.argv[1], int(sys.argv[2])
runs = {m: [json.load(open(f"{out}/{m}-{r}.json"))["shared"] for r in range(1, reps + 1)]
        for m in ("auto", "sequential", "selective")}
its = min(len(s["iteration_seconds"]) for rs in runs.values() for s in rs)
med = lambda m, key, i: statistics.median(s[key][i] for s in runs[m])
print("| iteration | active | auto mode | auto s | b1 s | b2 s | auto / best | auto MiB | b1 MiB | b2 MiB |")
print("|---|---|---|---|---|---|---|---|---|---|")
worst, tot = 0.0, {m: 0.0 for m in runs}
for i in range(its):
    a, b1, b2 = (med(m, "iteration_seconds", i) for m in ("auto", "sequential", "selective"))
    mib = [med(m, "iteration_bytes", i) / 2**20 for m in ("auto", "sequential", "selective")]
    modes = {s["modes"][i] for s in runs["auto"]}
    ratio = a / min(b1, b2)
    worst = max(worst, ratio)
    for m, x in zip(runs, (a, b1, b2)):
        tot[m] += x
    act = int(med("auto", "iteration_active", i))
    print(f"| {i+1} | {act} | {'/'.join(sorted(modes))} | {a:.3f} | {b1:.3f} | {b2:.3f} | "
          f"{ratio:.2f} | {mib[0]:.1f} | {mib[1]:.1f} | {mib[2]:.1f} |")
print(f"\nsum of per-iteration medians: auto {tot['auto']:.2f} s, b1 {tot['sequential']:.2f} s, "
      f"b2 {tot['selective']:.2f} s; worst auto / best = {worst:.2f}")
tt = {m: statistics.median(sum(s["iteration_seconds"]) for s in rs) for m, rs in runs.items()}
print(f"median run (sum of its iterations): auto {tt['auto']:.2f} s, b1 {tt['sequential']:.2f} s, "
      f"b2 {tt['selective']:.2f} s ({reps} runs each)")
PY
