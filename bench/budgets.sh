#!/usr/bin/env bash
# Does --memory hold? Every command at every budget under a hard memory limit of
# --memory + CONSTANT (outcore limit: a child cgroup, the inputs evicted from the
# page cache first): one JSON line per run on stdout (peak RSS, cgroup peak, OOM
# kills, exit code, seconds), a markdown table on stderr at the end. PER_RUN
# (seconds, default 300) bounds each run.
#
#   bench/budgets.sh OUTCORE INPUT_BIN32 STORE [CONSTANT] [BUDGETS...]
#
# INPUT_BIN32 is the edge list the ingest rows read (e.g. `outcore generate
# kronecker --scale 22`), STORE the same graph ingested (the run and jobs rows;
# runs may add a V-Part layout to it). e.g.
#   bench/budgets.sh target/release/outcore bench-data/k22.bin32 bench-data/kron22.store \
#     64M 32M 64M 128M 256M 1G
set -euo pipefail
bin=$1 input=$2 store=$3 constant=${4:-64M}
# A run that takes longer (vertex state mapped under a tight limit) is stopped
# with SIGTERM and shown as exit 143.
per_run=${PER_RUN:-300}
shift 4 || shift $#
budgets=("$@")
[ ${#budgets[@]} -eq 0 ] && budgets=(32M 64M 128M 256M 1G)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
bytes() { python3 -c "import sys; u={'K':1<<10,'M':1<<20,'G':1<<30}; s=sys.argv[1]; print(int(s[:-1])*u[s[-1]] if s[-1] in u else int(s))" "$1"; }
c=$(bytes "$constant")
rows=(
  "ingest|ingest $input -o $tmp/s --force"
  "ingest --undirected --in-edges|ingest $input -o $tmp/s --force --undirected --in-edges"
  "run bfs|run bfs $store --root 1525364"
  "run sssp|run sssp $store --root 1655433"
  "run wcc|run wcc $store"
  "run wcc-lp|run wcc-lp $store"
  "run mis|run mis $store"
  "run mis-luby|run mis-luby $store"
  "run pagerank|run pagerank $store --iterations 5"
  "run pagerank-delta|run pagerank-delta $store --iterations 5"
  "run spmv|run spmv $store"
  "jobs wcc|jobs $store wcc"
  "jobs pagerank+bfs+wcc+sssp|jobs $store pagerank:iterations=5 bfs:root=1525364 wcc sssp:root=1655433"
)
for m in "${budgets[@]}"; do
  limit=$(( $(bytes "$m") + c ))
  for row in "${rows[@]}"; do
    name=${row%%|*} cmd=${row#*|}
    evict=$store
    [[ $name == ingest* ]] && evict=$input
    # shellcheck disable=SC2086
    "$bin" limit --mem "$limit" --evict "$evict" --json "$tmp/limit.json" -- \
      timeout "$per_run" "$bin" $cmd --memory "$m" >/dev/null 2>"$tmp/err" </dev/null || true
    python3 - "$name" "$m" "$limit" "$tmp" <<'PY'
import json, sys
name, m, limit, tmp = sys.argv[1:]
l = json.load(open(f"{tmp}/limit.json"))
err = open(f"{tmp}/err").read().strip().splitlines()
print(json.dumps({"command": name, "memory": m, "limit_bytes": int(limit),
                  "peak_bytes": l.get("peak_bytes"), "max_rss_bytes": l["max_rss_bytes"],
                  "oom_kills": l.get("oom_kills"), "exit": l["exit"], "signal": l.get("signal"),
                  "wall_s": l["wall_s"], "last_line": err[-1][:200] if err else ""}), flush=True)
PY
  done
done | tee "$tmp/rows.jsonl"
python3 - "$tmp/rows.jsonl" "$constant" >&2 <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
budgets = list(dict.fromkeys(r["memory"] for r in rows))
cmds = list(dict.fromkeys(r["command"] for r in rows))
cell = {(r["command"], r["memory"]): r for r in rows}
print(f"Peak RSS in MiB (OOM kills), wall seconds, under a hard limit of --memory + {sys.argv[2]}:\n")
print("| command | " + " | ".join(f"--memory {b}" for b in budgets) + " |")
print("|---|" + "---|" * len(budgets))
for c in cmds:
    out = []
    for b in budgets:
        r = cell.get((c, b))
        if r is None:
            out.append("")
            continue
        s = f"{r['max_rss_bytes'] / 2**20:.0f} ({r['oom_kills']}), {r['wall_s']:.0f} s"
        if r["exit"] in (124, 143):
            s += " stopped"
        elif r["exit"] != 0:
            s += f" exit {r['exit']}"
        out.append(s)
    print(f"| {c} | " + " | ".join(out) + " |")
print(f"\n{sum(1 for r in rows if r['oom_kills'])} of {len(rows)} runs OOM-killed; "
      f"{sum(1 for r in rows if r['exit'] != 0)} non-zero exits")
PY
