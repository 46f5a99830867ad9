#!/bin/bash
# In memory against gapbs (docs/benchmarks.md, "In memory, against gapbs"):
# ROUNDS rounds, each running gapbs's kernels and `outcore run` once per line
# of the table, in its order, on stores in the page cache; prints one
# tab-separated line a round (seconds: gapbs's mean trial time, outcore's
# `seconds` from --stats).
#
# usage: bench/inmem-gapbs.sh OUTCORE GAPBS_DIR DATA_DIR [ROUNDS]
# DATA_DIR holds k22.store, k22in.store (--in-edges), k22w.store and gapbs's
# k22.sg and k22.wsg, built as the section's commands show. Results and
# outcore's --stats go to a temporary directory of its own.
set -euo pipefail
O=$1; G=$2; D=$3; R=${4:-5}
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
cd "$D"
sec() { python3 -c "import json,sys;print(round(json.load(open(sys.argv[1]))['seconds'],4))" "$T/s.json"; }
avg() { grep 'Average Time' | awk '{print $3}'; }
run() { "$O" run "$@" --threads 2 --stats "$T/s.json" --out "$T/out" >/dev/null 2>&1; sec; }
cat k22.store/* k22in.store/* k22w.store/* k22.sg k22.wsg > /dev/null
echo -e "round\tgapbs-bfs\tbfs\tbfs-in\tgapbs-cc\twcc\twcc-in\tgapbs-pr\tpr\tpr-read\tgapbs-sssp\tsssp\tsssp-read"
for i in $(seq "$R"); do
  gb=$(OMP_NUM_THREADS=2 "$G"/bfs -f k22.sg -n 5 -r 3827864 | avg)
  b=$(run bfs k22.store --root 3827864); bi=$(run bfs k22in.store --root 3827864)
  gc=$(OMP_NUM_THREADS=2 "$G"/cc -f k22.sg -n 5 | avg)
  w=$(run wcc k22.store); wi=$(run wcc k22in.store)
  gp=$(OMP_NUM_THREADS=2 "$G"/pr -f k22.sg -n 3 -i 10 -t 0 | avg)
  p=$(run pagerank k22.store --iterations 10); pr=$(run pagerank k22.store --iterations 10 --read-every-pass)
  gs=$(OMP_NUM_THREADS=2 "$G"/sssp -f k22.wsg -n 3 -r 3827864 | avg)
  s=$(run sssp k22w.store --root 3827864); sr=$(run sssp k22w.store --root 3827864 --read-every-pass)
  echo -e "$i\t$gb\t$b\t$bi\t$gc\t$w\t$wi\t$gp\t$p\t$pr\t$gs\t$s\t$sr"
done
