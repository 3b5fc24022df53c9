#!/bin/sh
# Install dependencies, build, run every test (make check, then make
# check-multihost as root) against the system's Open MPI (Debian's 4.1.4),
# then the MPI battery and check-multihost against a CUDA-aware Open MPI 5.0
# built from trixie's source package (scripts/test-ompi.sh 5.0;
# TCA_TEST_OMPI5=0 leaves it out), then the in-tree route: Open MPI 5.0
# built with the components in its source tree (scripts/test-in-tree.sh;
# TCA_TEST_IN_TREE=0 leaves it out).  The Open MPI builds are cached outside
# the clone (built once per machine).  TCA_TEST_OMPI41_CUDA=1 adds the MPI
# battery against a CUDA-aware 4.1 (scripts/test-ompi.sh 4.1).
# Prints "N passed, N failed, N skipped" for each part and, last, for all.
# Exits non-zero on any failure.
set -e
cd "$(dirname "$0")/.."
sh scripts/install-deps.sh
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
started=$(date +%s)
t0=$(date +%s)
sh scripts/build.sh
t1=$(date +%s)
status=0
shm_before=$(mktemp)
ls /dev/shm 2>/dev/null | grep '^tca-' >"$shm_before" || true  # none is fine (set -e)
make -j1 check || status=$?
t2=$(date +%s)
summary=$(sh scripts/test-summary.sh) || status=1
system_ompi=$(mpicc --showme:version 2>/dev/null | sed -n 's/.*Open MPI \([0-9.]*\).*/\1/p')
lines="system Open MPI $system_ompi: $summary (build $((t1 - t0)) s, tests $((t2 - t1)) s)"
total=$summary

# part NAME COMMAND...: runs a part that prints its own "N passed, N failed,
# N skipped" last (exit 77: skipped as a whole).
part() {
    name=$1
    shift
    t=$(date +%s)
    out=$(mktemp)
    rc=0
    "$@" >"$out" 2>&1 || rc=$?
    cat "$out"
    if [ "$rc" -eq 77 ]; then
        line="0 passed, 0 failed, 1 skipped"
    else
        line=$(grep -aE '^[0-9]+ passed, [0-9]+ failed, [0-9]+ skipped$' "$out" | tail -1)
        [ -n "$line" ] || line="0 passed, 1 failed, 0 skipped"
        [ "$rc" -eq 0 ] || status=1
    fi
    rm -f "$out"
    lines="$lines
$name: $line ($(($(date +%s) - t)) s)"
    total="$total
$line"
}

multihost() { # make check-multihost's own line, in the form of the others
    mh_rc=0
    mh_out=$(make -s check-multihost 2>&1) || mh_rc=$?
    echo "$mh_out"
    mh_line=$(echo "$mh_out" | grep -aE '^[0-9]+ passed, [0-9]+ failed$' | tail -1)
    if echo "$mh_out" | grep -aq '^SKIP:' && [ -z "$mh_line" ]; then
        echo "0 passed, 0 failed, 1 skipped"
    elif [ -n "$mh_line" ]; then
        echo "$mh_line, 0 skipped"
    else
        echo "0 passed, 1 failed, 0 skipped"
    fi
    return $mh_rc
}
# Hosts as network namespaces (root only; skipped elsewhere).
[ "${TCA_TEST_MULTIHOST:-1}" = 0 ] || part "system Open MPI $system_ompi, multi-host (network namespaces)" multihost
[ "${TCA_TEST_OMPI5:-1}" = 0 ] || part "Open MPI 5.0 (CUDA-aware, out of tree)" sh scripts/test-ompi.sh 5.0
[ "${TCA_TEST_IN_TREE:-1}" = 0 ] || part "Open MPI 5.0 with the components in its tree" sh scripts/test-in-tree.sh
[ "${TCA_TEST_OMPI41_CUDA:-0}" = 0 ] || part "Open MPI 4.1 (CUDA-aware)" sh scripts/test-ompi.sh 4.1

if ! leftover=$(sh test/shm_left_behind.sh "$shm_before"); then
    echo "shared-memory segments left behind: $leftover"
    status=1
fi
rm -f "$shm_before"
echo
echo "$lines"
echo "wall time $(($(date +%s) - started)) s"
echo "$total" | awk -F'[ ,]+' '{p += $1; f += $3; s += $5} END {printf "%d passed, %d failed, %d skipped\n", p, f, s}'
exit $status
