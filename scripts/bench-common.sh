# bench-common.sh - sourced by bench.sh and bench-bcast.sh (their first
# argument is the number of rounds): shared set-up and the min/median summary.
set -e
cd "$(dirname "$0")/.."
repeats=${1:-${BENCH_REPEATS:-3}}
out=bench-results
mkdir -p "$out"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
TCA_COMPONENT_DIR=$(pwd)/.libs
export TCA_COMPONENT_DIR

# summarize NKEYS "SORT-KEYS" RAW: lines "key1 .. keyN value" become one line
# per key, "key1 .. keyN min median max count" (sorted by SORT-KEYS).
summarize() {
    nkeys=$1 sortkeys=$2 raw=$3
    # shellcheck disable=SC2086
    sort $sortkeys -k$((nkeys + 1)),$((nkeys + 1))g "$raw" | awk -v nk="$nkeys" '
        function flush() { if (n) { med = (n % 2) ? v[(n+1)/2] : (v[n/2] + v[n/2+1]) / 2; print key, v[1], med, v[n], n } }
        { k = $1; for (i = 2; i <= nk; i++) k = k " " $i
          if (k != key) { flush(); key = k; n = 0 } v[++n] = $(nk + 1) }
        END { flush() }'
}
