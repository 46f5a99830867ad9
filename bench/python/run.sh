#!/usr/bin/env bash
# outcore from Python (1 GiB hard limit, cold input) against igraph and
# networkit (whole graph in RAM), alternating, REPS rounds; JSON lines to OUT.
#   bench/python/run.sh EDGES VERTICES ROOT WORKDIR OUT [REPS] [SYSTEMS...]
# PY (default python3) must have outcore (pip install .), igraph, networkit.
set -euo pipefail
edges=$1 vertices=$2 root=$3 work=$4 out=$5 reps=${6:-3}
shift $(( $# < 6 ? $# : 6 ))
systems=("${@:-outcore igraph networkit}")
read -r -a systems <<< "${systems[*]}"
py=${PY:-python3}
bin=${OUTCORE:-outcore}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$work"
: > "$out"
for r in $(seq 1 "$reps"); do
  for s in "${systems[@]}"; do
    if [ "$s" = outcore ]; then
      "$bin" limit --mem 1G --evict "$edges" --json "$work/limit.json" -- \
        "$py" "$here/peers.py" outcore "$edges" "$work" --vertices "$vertices" --root "$root" \
        --memory 640M > "$work/one.json"
      "$py" - "$work/one.json" "$work/limit.json" "$r" >> "$out" <<'PY'
import json, sys
one = json.load(open(sys.argv[1])); lim = json.load(open(sys.argv[2]))
one["round"] = int(sys.argv[3]); one["limit"] = {k: lim.get(k) for k in ("peak_bytes", "oom_kills", "exit", "limit_bytes", "wall_s")}
print(json.dumps(one))
PY
    else
      sync; "$py" "$here/peers.py" "$s" "$edges" "$work" --vertices "$vertices" --root "$root" \
        | "$py" -c "import json,sys; d=json.loads(sys.stdin.read()); d['round']=$r; print(json.dumps(d))" >> "$out"
    fi
    tail -n 1 "$out" >&2
  done
done
