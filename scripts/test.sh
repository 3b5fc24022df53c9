#!/bin/sh
# Install dependencies, build, run every test (make check) against the
# system's Open MPI, then the MPI part of the battery against a CUDA-aware
# Open MPI (scripts/test-cuda-aware.sh; TCA_TEST_CUDA_AWARE=0 leaves it out),
# then `make check-multihost` on hosts made of network namespaces (as root;
# TCA_TEST_MULTIHOST=0 leaves it out).
# Prints "N passed, N failed, N skipped" for each half and, last, for both.
# Exits non-zero on any failure.
set -e
cd "$(dirname "$0")/.."
sh scripts/install-deps.sh
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
t0=$(date +%s)
sh scripts/build.sh
t1=$(date +%s)
status=0
shm_before=$(mktemp)
ls /dev/shm 2>/dev/null | grep '^tca-' >"$shm_before" || true  # none is fine (set -e)
make -j1 check || status=$?
t2=$(date +%s)
summary=$(sh scripts/test-summary.sh) || status=1
echo "system Open MPI: $summary (build $((t1 - t0)) s, tests $((t2 - t1)) s)"
total=$summary
if [ "${TCA_TEST_CUDA_AWARE:-1}" != 0 ]; then
    cuda_rc=0
    out=$(mktemp)
    sh scripts/test-cuda-aware.sh >"$out" 2>&1 || cuda_rc=$?
    cat "$out"
    if [ "$cuda_rc" -eq 77 ]; then
        total="$total
0 passed, 0 failed, 1 skipped"
    else
        line=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$out" | tail -1)
        [ -n "$line" ] || line="0 passed, 1 failed, 0 skipped"
        [ "$cuda_rc" -eq 0 ] || status=1
        echo "CUDA-aware Open MPI: $line"
        total="$total
$line"
    fi
    rm -f "$out"
fi
if [ "${TCA_TEST_MULTIHOST:-1}" != 0 ]; then
    # Hosts as network namespaces (root only; skipped elsewhere).
    mh_rc=0
    out=$(mktemp)
    make -s check-multihost >"$out" 2>&1 || mh_rc=$?
    cat "$out"
    line=$(grep -E '^[0-9]+ passed, [0-9]+ failed$' "$out" | tail -1)
    if grep -q '^SKIP:' "$out" && [ -z "$line" ]; then
        line="0 passed, 0 failed, 1 skipped"
    elif [ -n "$line" ]; then
        line="$line, 0 skipped"
    else
        line="0 passed, 1 failed, 0 skipped"
    fi
    [ "$mh_rc" -eq 0 ] || status=1
    echo "multi-host (network namespaces): $line"
    total="$total
$line"
    rm -f "$out"
fi
if ! leftover=$(sh test/shm_left_behind.sh "$shm_before"); then
    echo "shared-memory segments left behind: $leftover"
    status=1
fi
rm -f "$shm_before"
echo "$total" | awk -F'[ ,]+' '{p += $1; f += $3; s += $5} END {printf "%d passed, %d failed, %d skipped\n", p, f, s}'
exit $status
