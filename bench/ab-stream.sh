#!/usr/bin/env bash
# Old binary against new, interleaved, on the streaming engine's I/O-bound runs:
# each run under a hard memory limit (outcore limit: a child cgroup, the store
# evicted from the page cache first), one JSON line per run on stdout.
#
#   bench/ab-stream.sh OLD_OUTCORE NEW_OUTCORE STORE [REPS] [LIMIT] [MEMORY] [OLD_STORE]
#
# OLD_STORE (default STORE) is the store the old binary runs on, for a comparison
# across a store-format change (the same graph ingested by each binary).
#
# e.g. bench/ab-stream.sh /tmp/base/target/release/outcore target/release/outcore \
#        bench-data/kron22.store 3 512M 384M
set -euo pipefail
old=$1 new=$2 new_store=$3 reps=${4:-3} limit=${5:-512M} memory=${6:-384M}
old_store=${7:-$new_store}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for rep in $(seq 1 "$reps"); do
  for algo in "wcc" "wcc-lp --mrt 1" "bfs --root 0" "pagerank --iterations 5"; do
    for side in old new; do
      bin=$old store=$old_store
      [ "$side" = new ] && bin=$new store=$new_store
      # shellcheck disable=SC2086
      "$new" limit --mem "$limit" --evict "$store" --json "$tmp/limit.json" -- \
        "$bin" run $algo "$store" --memory "$memory" --direct --stats "$tmp/stats.json" \
        >/dev/null 2>"$tmp/err" </dev/null || { cat "$tmp/err" >&2; exit 1; }
      python3 - "$side" "$algo" "$rep" "$tmp" <<'PY'
import json, sys
side, algo, rep, tmp = sys.argv[1:]
l = json.load(open(f"{tmp}/limit.json"))
e = json.load(open(f"{tmp}/stats.json"))["engine"]
print(json.dumps({"side": side, "run": algo, "rep": int(rep), "wall_s": l["wall_s"],
                  "compute_s": e["compute_seconds"], "io_wait_s": e["io_wait_seconds"],
                  "bytes_read": e["bytes_read"], "iterations": e["iterations"]}))
PY
    done
  done
done
