#!/usr/bin/env bash
# Thread scaling in memory (warm, no limit): outcore against gapbs on the same
# Kronecker edges, at each thread count, one line per run in a TSV file.
#
#   bench/scaling.sh OUTCORE GAPBS_DIR WORK TSV [SCALE] [THREADS...]
#
# OUTCORE is the outcore binary, GAPBS_DIR the directory holding gapbs's bfs,
# cc, pr and converter (built as docs/benchmarks.md says), WORK a scratch
# directory of the caller's (everything is written there), TSV the results:
#   system  algorithm  threads  rep  seconds
# outcore's seconds are `seconds` from `--stats` (the run, not the process start);
# gapbs's are its own "Average Time" over REPS trials (one line, rep 0).
# Environment: REPS (default 3), ROOT (default 3827864, a vertex of the giant
# component at scale 22), EXTERNAL=1 adds the fully-external engine's pagerank
# at 1/4 of its vertex data (thread counts from the largest down, so every run
# uses the layout the first one built), BASE=another outcore binary runs
# those beside it (tagged -base), INMEMORY=0 leaves out the in-memory runs.
set -euo pipefail
O=$1 G=$2 W=$3 TSV=$4
S=${5:-22}
shift 4; shift || true
THREADS=${*:-1 2 4 8 16}
REPS=${REPS:-3}
ROOT=${ROOT:-3827864}
mkdir -p "$W"
cd "$W"
log() { echo "[scaling $(date +%T)] $*" >&2; }

log "generate + ingest, scale $S"
"$O" generate kronecker --scale "$S" -o k.bin32 >&2
"$O" ingest k.bin32 -o k.store --memory 8G >&2
if [ "${INMEMORY:-1}" = 1 ]; then
    "$O" generate kronecker --scale "$S" --text -o k.el >&2
    "$O" ingest k.bin32 -o kin.store --in-edges --memory 8G >&2
    grep -v '^#' k.el > k.plain.el && rm -f k.el
    "$G/converter" -f k.plain.el -b k.sg >&2 && rm -f k.plain.el
fi
rm -f k.bin32
printf 'system\talgorithm\tthreads\trep\tseconds\n' > "$TSV"

outcore_run() { # ALGO STORE THREADS ARGS...
    local a=$1 st=$2 t=$3; shift 3
    for r in $(seq 1 "$REPS"); do
        "$O" run "$a" "$st" --threads "$t" --stats s.json "$@" > /dev/null 2> run.err ||
            { cat run.err >&2; exit 1; }
        local s
        s=$(python3 -c "import json;print(json.load(open('s.json'))['seconds'])")
        printf 'outcore\t%s\t%s\t%s\t%s\n' "$a$TAG" "$t" "$r" "$s" >> "$TSV"
    done
}
gapbs_run() { # NAME KERNEL THREADS ARGS...
    local n=$1 k=$2 t=$3; shift 3
    local s
    s=$(OMP_NUM_THREADS=$t "$G/$k" -f k.sg -n "$REPS" "$@" | awk '/Average Time/ {print $3}')
    printf 'gapbs\t%s\t%s\t0\t%s\n' "$n" "$t" "$s" >> "$TSV"
}

[ "${INMEMORY:-1}" = 1 ] && for t in $THREADS; do
    log "threads $t"
    TAG="" outcore_run wcc k.store "$t" --memory 8G
    TAG="-in" outcore_run bfs kin.store "$t" --root "$ROOT" --memory 8G
    TAG="" outcore_run bfs k.store "$t" --root "$ROOT" --memory 8G
    TAG="" outcore_run pagerank k.store "$t" --iterations 10 --memory 8G
    gapbs_run cc cc "$t"
    gapbs_run bfs bfs "$t" -r "$ROOT"
    gapbs_run pagerank pr "$t" -i 10 -t 0
done

if [ "${EXTERNAL:-0}" = 1 ]; then
    # pagerank's vertex state is 28 B a vertex; a quarter of it, plus the fixed part.
    mem=$(( (28 << S) / 4 / 1048576 + 16 ))M
    for t in $(printf '%s\n' $THREADS | sort -rn); do
        log "external, threads $t, --memory $mem"
        TAG="-external" outcore_run pagerank k.store "$t" --iterations 10 --engine external --memory "$mem"
        if [ -n "${BASE:-}" ]; then
            O=$BASE TAG="-external-base" outcore_run pagerank k.store "$t" --iterations 10 --engine external --memory "$mem"
        fi
    done
fi
log "done"
