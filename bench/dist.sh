#!/usr/bin/env bash
# The distributed engine (Chaos) on this machine under mpirun: weak scaling
# (Kronecker scale 20+r on 2^r ranks, r = 0..2), one rank against `outcore run`
# (Kronecker 20 and 22),
# resident accumulators on and off, and the request window of §6.5. Every run starts with the store's files
# evicted from the page cache (posix_fadvise DONTNEED) and writes its --stats
# JSON (with the mpirun wall time added) into OUT; bench/dist-summary.py OUT
# turns them into the tables of docs/benchmarks-distributed.md.
#
#   bench/dist.sh OUTCORE_WITH_DIST OUT [DATA]
#
# OUTCORE_WITH_DIST is built with `cargo build --release -p outcore-cli
# --features dist` (e.g. CARGO_TARGET_DIR=target/dist: target/dist/release/outcore);
# DATA (default bench-data/dist) holds the generated inputs and stores.
# REPS (default 3) repetitions of the one-rank comparison, alternating.
set -euo pipefail
bin=$(realpath "$1") out=$(realpath -m "$2") data=$(realpath -m "${3:-bench-data/dist}")
reps=${REPS:-3}
mkdir -p "$out" "$data"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mpi=(mpirun --oversubscribe --bind-to none)

evict() {
  python3 - "$@" <<'EOF'
import os, sys
for top in sys.argv[1:]:
    for root, _, files in os.walk(top):
        for f in files:
            p = os.path.join(root, f)
            fd = os.open(p, os.O_RDONLY)
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            os.close(fd)
EOF
}

# Adds the wall time to a --stats file.
stamp() {
  python3 - "$1" "$2" <<'EOF'
import json, sys
j = json.load(open(sys.argv[1])); j["wall_seconds"] = float(sys.argv[2])
json.dump(j, open(sys.argv[1], "w"), indent=1)
EOF
}

now() { date +%s.%N; }

# The graph of scale S: input, single-machine store, dist store for N ranks.
prepare() {
  local s=$1 n=$2
  local in=$data/k$s.bin32
  [ -f "$in" ] || "$bin" generate kronecker --scale "$s" -o "$in" >&2
  [ -f "$data/k$s.store/manifest.json" ] || "$bin" ingest "$in" -o "$data/k$s.store" --memory 2G --force >&2
  [ -f "$data/k$s.d$n/rank-0/manifest.json" ] ||
    "${mpi[@]}" -np "$n" "$bin" dist ingest "$in" -o "$data/k$s.d$n" --memory 1G --force >&2
}

# A BFS root with out-edges: the first edge's source.
root_of() { python3 -c "import struct,sys; print(struct.unpack('<I', open(sys.argv[1],'rb').read(4))[0])" "$1"; }

dist_run() { # label scale ranks algo args...
  local label=$1 s=$2 n=$3 algo=$4
  shift 4
  evict "$data/k$s.d$n"
  local t0=$(now)
  "${mpi[@]}" -np "$n" "$bin" dist run "$algo" "$data/k$s.d$n" --memory 1G \
    --stats "$out/$label.json" "$@" >&2
  stamp "$out/$label.json" "$(python3 -c "print($(now) - $t0)")"
}

one_run() { # label scale algo args...
  local label=$1 s=$2 algo=$3
  shift 3
  evict "$data/k$s.store"
  local t0=$(now)
  "$bin" run "$algo" "$data/k$s.store" --memory 1G --stats "$out/$label.json" "$@" >&2
  stamp "$out/$label.json" "$(python3 -c "print($(now) - $t0)")"
}

# Weak scaling.
for r in 0 1 2; do
  s=$((20 + r)) n=$((1 << r))
  prepare "$s" "$n"
  root=$(root_of "$data/k$s.bin32")
  dist_run "weak-bfs-$s-$n" "$s" "$n" bfs --root "$root"
  dist_run "weak-pagerank-$s-$n" "$s" "$n" pagerank --iterations 5
done

# One rank against outcore run (1 and 2 threads), alternating, on Kronecker
# 20 and 22.
prepare 22 1
for s in 20 22; do
  root=$(root_of "$data/k$s.bin32")
  for i in $(seq 1 "$reps"); do
    dist_run "one$s-bfs-dist-$i" $s 1 bfs --root "$root"
    one_run "one$s-bfs-run1-$i" $s bfs --root "$root" --threads 1
    one_run "one$s-bfs-run2-$i" $s bfs --root "$root" --threads 2
    dist_run "one$s-pagerank-dist-$i" $s 1 pagerank --iterations 5
    one_run "one$s-pagerank-run1-$i" $s pagerank --iterations 5 --threads 1
    one_run "one$s-pagerank-run2-$i" $s pagerank --iterations 5 --threads 2
  done
done

# Accumulators kept from scatter to gather against none (--resident 0:
# every update stored and read back), alternating.
for i in $(seq 1 "$reps"); do
  for r in 0 1 2; do
    s=$((20 + r)) n=$((1 << r))
    dist_run "resident-on-$s-$n-$i" "$s" "$n" pagerank --iterations 5 --resident 128M
    dist_run "resident-off-$s-$n-$i" "$s" "$n" pagerank --iterations 5 --resident 0
  done
done

# The request window (§6.5) on 4 ranks.
prepare 21 4
for k in 1 2 3 4; do
  dist_run "window-$k" 21 4 pagerank --iterations 5 --window "$k"
done
echo "done: $out" >&2
