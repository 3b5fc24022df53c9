#!/bin/sh
# bench-virtual-time.sh [RUNS] - the timing model in real time (TCA_TIMING=1)
# against virtual time (TCA_TIMING=virtual), idle and loaded, at 2 and 16
# ranks (docs/virtual-time.md; a benchmark, not a test):
#   - tca_model_bench's graded points (host PIO, the extra hop, host DMA) in a
#     sub-cluster of 2 and of 16 nodes (-n: the 14 others ping-pong PIO
#     writes in pairs meanwhile), and B4 / B5 at 16 ranks against the model
#     on paper; RUNS runs in a row of each (real time: 2 runs);
#   - an OSU-style MPI ping-pong over btl tca (8 B and 1 MiB, one way) at 2
#     ranks alone and beside 14 busy loops, read through MPI_Wtime.
# "loaded": two busy loops on the cores meanwhile (the MPI latency: 14).
# Prints one line per figure and configuration: every run's value, then
# median, worst and how many runs within 10 % of the published figure (the
# model on paper for B4 / B5).  Raw output: bench-results/virtual-time-*.
set -e
RUNS=${1:-10}
RT_RUNS=${TCA_BENCH_RT_RUNS:-2}
cd "$(dirname "$0")/.."
make -s tca_model_bench tca_mpi_bench >/dev/null
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mkdir -p bench-results
raw=bench-results/virtual-time-$(date +%Y%m%d-%H%M%S).txt
busy_pids=
busy() { # busy N: N busy loops until unbusy
    i=0
    while [ "$i" -lt "$1" ]; do
        sh -c 'while :; do :; done' &
        busy_pids="$busy_pids $!"
        i=$((i + 1))
    done
}
unbusy() {
    [ -n "$busy_pids" ] && kill $busy_pids 2>/dev/null
    wait 2>/dev/null || true
    busy_pids=
}
trap unbusy EXIT INT TERM

# model MODE NODES LOAD RUNS: rows "MODE NODES LOAD | figure | value" into $raw
model() {
    mode=$1 nodes=$2 load=$3 runs=$4
    [ "$load" = loaded ] && busy 2
    r=0
    while [ "$r" -lt "$runs" ]; do
        r=$((r + 1))
        TCA_TIMING=$mode ./tca_model_bench -q -r 2 -n "$nodes" >"$raw.run" 2>&1 || true
        awk -v tag="$mode $nodes $load" '
            # the emulated column: two before the unit (a row may end in "(> 10 %)")
            function emulated(   i) {
                for (i = NF; i > 2; --i)
                    if ($i == "ns" || $i == "MB/s" || $i == "us") return $(i - 2)
                return "?"
            }
            function paper(   i) {
                for (i = NF; i > 3; --i) if ($i == "us") return $(i - 3)
                return "?"
            }
            /^host PIO one way/ { print tag " | PIO one way (782 ns) | " emulated() }
            /^host PIO per extra hop/ { print tag " | PIO extra hop (200-300 ns) | " emulated() }
            /^host DMA 255/ { print tag " | DMA 255 x 4 KiB (3300 MB/s) | " emulated() }
            /^host DMA 4 MiB/ { print tag " | DMA 4 MiB (3500 MB/s) | " emulated() }
            /rank bcast B4/ { print tag " | B4 16 ranks (paper " paper() " us) | " emulated() }
            /rank allgather B5/ { print tag " | B5 16 ranks (paper " paper() " us) | " emulated() }
        ' "$raw.run" | sed 's/  */ /g' >>"$raw"
    done
    unbusy
}

# mpi MODE LOAD RUNS: the MPI ping-pong's 8 B and 1 MiB
mpi() {
    mode=$1 load=$2 runs=$3
    [ "$load" = loaded ] && busy 14
    r=0
    while [ "$r" -lt "$runs" ]; do
        r=$((r + 1))
        TCA_TIMING=$mode timeout 600 scripts/tca-mpirun --oversubscribe -np 2 ./tca_mpi_bench latency >"$raw.run" 2>&1 || true
        awk -v tag="$mode 2 $load" '
            $1 == "RESULT" && $3 == 8 { print tag " | MPI latency 8 B (model 0.954 us) | " $4 }
            $1 == "RESULT" && $3 == 1048576 { print tag " | MPI latency 1 MiB (model 302.5 us) | " $4 }
        ' "$raw.run" >>"$raw"
    done
    unbusy
}

for load in idle loaded; do
    for nodes in 2 16; do
        model virtual "$nodes" "$load" "$RUNS"
        model 1 "$nodes" "$load" "$RT_RUNS"
    done
    mpi virtual "$load" "$RUNS"
    mpi 1 "$load" "$RT_RUNS"
done
rm -f "$raw.run"

# Summary: per configuration and figure, every run, median, worst, within 10 %.
echo "# bench-virtual-time.sh $RUNS: commit $(git rev-parse --short HEAD), $(nproc) cores; raw: $raw"
echo "# mode (1: real time) | sub-cluster nodes | load | figure (reference) | median | worst | runs within 10 % | every run"
awk -F ' [|] ' '
    function ref(f,   m) {  # the published figure or range, or the model on paper
        if (f ~ /PIO one way/) return "782"
        if (f ~ /extra hop/) return "200-300"
        if (f ~ /255 x/) return "3300"
        if (f ~ /4 MiB/) return "3500"
        if (match(f, /paper [0-9.]+/)) return substr(f, RSTART + 6, RLENGTH - 6)
        if (match(f, /model [0-9.]+/)) return substr(f, RSTART + 6, RLENGTH - 6)
        return ""
    }
    function within(v, r,   lo, hi) {
        if (index(r, "-")) { split(r, b, "-"); lo = b[1]; hi = b[2] } else { lo = r; hi = r }
        return v >= 0.9 * lo && v <= 1.1 * hi
    }
    {
        k = $1 " | " $2; if (!(k in n)) order[++keys] = k
        v[k, ++n[k]] = $3 + 0; all[k] = all[k] " " $3
    }
    END {
        for (i = 1; i <= keys; ++i) {
            k = order[i]; m = n[k]; r = ref(k)
            for (a = 1; a <= m; ++a) s[a] = v[k, a]
            for (a = 1; a <= m; ++a) for (c = a + 1; c <= m; ++c) if (s[c] < s[a]) { t = s[a]; s[a] = s[c]; s[c] = t }
            worst = (k ~ /MB\/s/) ? s[1] : s[m]; ok = 0
            for (a = 1; a <= m; ++a) ok += within(s[a], r)
            printf "%s | %s | %s | %d of %d |%s\n", k, s[int((m + 1) / 2)], worst, ok, m, all[k]
        }
    }' "$raw"
