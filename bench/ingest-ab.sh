#!/usr/bin/env bash
# Alternating A/B ingest runs of one input (issue 2): each binary in turn, REPS
# rounds, each run under a 1 GiB hard limit with the input evicted first; prints
# every run and the medians per binary (total, parse, sort, csr seconds).
#
#   bench/ingest-ab.sh INPUT REPS BINARY...
set -euo pipefail
input=${1:?input edge list}
reps=${2:?repetitions}
shift 2
log=$(mktemp)
store=$(mktemp -d)/ab.store
for r in $(seq 1 "$reps"); do
  for b in "$@"; do
    "$b" limit --mem 1G --evict "$input" -- \
      "$b" ingest "$input" -o "$store" --memory 1G --force 2>&1 |
      grep -E "^ingested" |
      sed -E "s|.* in ([0-9.]+) s \(parse ([0-9.]+)s, sort ([0-9.]+)s, csr ([0-9.]+)s.*|$b \1 \2 \3 \4|" |
      tee -a "$log"
  done
done
rm -rf "$(dirname "$store")"
python3 - "$log" <<'P'
import collections, statistics, sys
runs = collections.defaultdict(list)
for line in open(sys.argv[1]):
    b, *v = line.split()
    runs[b].append([float(x) for x in v])
for b, v in runs.items():
    med = [round(statistics.median(c), 2) for c in zip(*v)]
    print(f"{b}: median total {med[0]} s (parse {med[1]}, sort {med[2]}, csr {med[3]}) over {len(v)} runs")
P
rm -f "$log"
