# bench-common.sh - sourced by bench.sh and bench-bcast.sh (their first
# argument is the number of rounds, after an optional "-d host|cuda"): shared
# set-up and the min/median summary.
set -e
cd "$(dirname "$0")/.."
device=host
if [ "${1:-}" = "-d" ]; then
    device=${2:-}
    shift 2 || { echo "-d needs host or cuda" >&2; exit 2; }
fi
case "$device" in host|cuda) ;; *) echo "unknown device '$device' (-d host or -d cuda)" >&2; exit 2 ;; esac
repeats=${1:-${BENCH_REPEATS:-3}}
out=bench-results
mkdir -p "$out"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# The Open MPI the build is configured against (--with-ompi: the CUDA-aware
# one of scripts/build-ompi.sh) runs the Open MPI rows too; a CUDA-aware
# one on a machine without a GPU stays quiet about the missing libcuda.
ompi_bindir=$(sed -n 's/^OMPI_BINDIR = //p' Makefile 2>/dev/null || true)
[ -z "$ompi_bindir" ] || PATH="$ompi_bindir:$PATH"
export OMPI_MCA_opal_warn_on_missing_libcuda=0
OMPI_MAJOR=$(sed -n 's/^OMPI_MAJOR = //p' Makefile 2>/dev/null || true)
export OMPI_MAJOR=${OMPI_MAJOR:-4}
. test/ompi_env.sh  # SM_NAME, SM_BTL, SM_NOCOPY: Open MPI's own shared-memory BTL
sm_name=$SM_NAME sm_btl=$SM_BTL sm_nocopy=$SM_NOCOPY
TCA_COMPONENT_DIR=$(pwd)/.libs
export TCA_COMPONENT_DIR

# built PROGRAM...: make them where make runs (a build tree); elsewhere (a
# built tree carried to a machine without make or compilers, or
# TCA_NO_MAKE=1) they must be there.
built() {
    if [ "${TCA_NO_MAKE:-0}" != 1 ] && command -v make >/dev/null 2>&1; then
        make -s "$@" >/dev/null
    else
        for p in "$@"; do [ -x "./$p" ] || { echo "$p is not built (and no make here)" >&2; exit 1; }; done
    fi
}

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

# gpu_skip_reason LAUNCHER...: empty where GPU buffers can be measured, else
# why not (no GPU, no CUDA runtime, an Open MPI that is not CUDA-aware).
gpu_skip_reason() {
    "$@" 2>&1 | sed -n 's/^SKIP: //p' | head -1
}
