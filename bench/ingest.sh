#!/usr/bin/env bash
# Ingest benchmark (issue 2): each input ingested REPS times with --memory 1G
# under a 1 GiB hard limit (`outcore limit`: a child memory cgroup), the input
# evicted from the page cache before each run. One JSON outcome and one summary
# line per run go to OUT; `bench/ingest-summary.py OUT` makes the table.
#
#   bench/ingest.sh DATA_DIR OUT_DIR [REPS]
#
# DATA_DIR must hold (or receives, generated once, not timed):
#   k22.bin32 (outcore generate kronecker --scale 22)
#   k22.txt   (outcore generate kronecker --scale 22 --text)
#   k24.bin32 (outcore generate kronecker --scale 24)
#   k24.txt   (outcore generate kronecker --scale 24 --text)
set -euo pipefail
data=${1:?data directory}
out=${2:?output directory}
reps=${3:-3}
bin=${OUTCORE_BIN:-$(dirname "$0")/../target/release/outcore}
mkdir -p "$out"
for spec in "22 bin32" "22 txt" "24 bin32" "24 txt"; do
  set -- $spec
  f="$data/k$1.$2"
  if [ ! -f "$f" ]; then
    text=""; [ "$2" = txt ] && text="--text"
    "$bin" generate kronecker --scale "$1" $text -o "$f"
  fi
done
for input in k22.bin32 k22.txt k24.bin32 k24.txt; do
  for r in $(seq 1 "$reps"); do
    store="$data/ingest-bench.store"
    rm -rf "$store"
    "$bin" limit --mem 1G --evict "$data/$input" --json "$out/$input-run$r.json" -- \
      "$bin" ingest "$data/$input" -o "$store" --memory 1G --force \
      2> >(grep -E "^ingested" > "$out/$input-run$r.summary")
    sleep 1
  done
done
rm -rf "$data/ingest-bench.store"
