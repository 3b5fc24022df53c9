#!/bin/sh
# test-ompi.sh SERIES - the MPI part of the battery against a CUDA-aware Open
# MPI of another series than the system's: builds it once per machine
# (scripts/build-ompi.sh SERIES, cached outside the clone), builds a copy of
# this working tree against it in build/ompi-SERIES (./configure
# --with-ompi=...), and runs there `make check-mpi` (every MPI case, the
# published example, the published-style programs, the Jacobi solver; GPU
# cases skip without a GPU) and, as root, `make check-multihost` (hosts made
# of network namespaces).  SERIES: 5.0 (CI) or 4.1.
# Prints "N passed, N failed, N skipped" for this Open MPI; exits non-zero
# on a failure, 77 without a CUDA toolkit (nothing to build).
set -e
cd "$(dirname "$0")/.."
top=$(pwd)
series=${1:?usage: test-ompi.sh 5.0|4.1}
cuda=${CUDA_HOME:-/usr/local/cuda}
if [ ! -f "$cuda/include/cuda.h" ]; then
    echo "SKIP: no CUDA toolkit at $cuda: the CUDA-aware Open MPI $series cannot be built here"
    exit 77
fi
t0=$(date +%s)
prefix=$(sh scripts/build-ompi.sh "$series" | tail -1)
t1=$(date +%s)
dest=$(sh scripts/tree-copy.sh "build/ompi-$series" --with-ompi="$prefix")
cd "$dest"
grep -q '^OMPI_CUDA = yes$' Makefile || { echo "build/ompi-$series: configure did not find a CUDA-aware Open MPI"; exit 1; }
t2=$(date +%s)
status=0
make -j1 check-mpi || status=$?
summary=$(sh scripts/test-summary.sh) || status=1
t3=$(date +%s)
mh_line=""
if [ "${TCA_TEST_MULTIHOST:-1}" != 0 ]; then
    out=$(mktemp)
    mh_rc=0
    make -s check-multihost >"$out" 2>&1 || mh_rc=$?
    cat "$out"
    mh_line=$(grep -aE '^[0-9]+ passed, [0-9]+ failed$' "$out" | tail -1)
    if grep -aq '^SKIP:' "$out" && [ -z "$mh_line" ]; then
        mh_line="0 passed, 0 failed, 1 skipped"
    elif [ -n "$mh_line" ]; then
        mh_line="$mh_line, 0 skipped"
    else
        mh_line="0 passed, 1 failed, 0 skipped"
    fi
    [ "$mh_rc" -eq 0 ] || status=1
    rm -f "$out"
fi
t4=$(date +%s)
echo "Open MPI $series (CUDA-aware, $prefix): build or cache $((t1 - t0)) s, components $((t2 - t1)) s," \
    "MPI battery $((t3 - t2)) s, multi-host $((t4 - t3)) s"
echo "Open MPI $series MPI battery: $summary"
[ -z "$mh_line" ] || echo "Open MPI $series multi-host: $mh_line"
printf '%s\n%s\n' "$summary" "${mh_line:-0 passed, 0 failed, 0 skipped}" |
    awk -F'[ ,]+' '{p += $1; f += $3; s += $5} END {printf "%d passed, %d failed, %d skipped\n", p, f, s}'
exit $status
