#!/bin/sh
# stress.sh - `make check-stress`: the multi-process tests, many times, under
# CPU load, on both copy paths.  A test that passes once on an idle machine
# but loses a race when its processes are descheduled fails here.
#
# Run from the build directory after `make check` built the test programs:
#   STRESS_RUNS=20     passes over everything (default 20)
#   STRESS_SUITES      "device mpi" (default), or one of them, or "multihost"
#                      (make check-multihost's cases on namespace hosts; root),
#                      or "ucx" (the ucx device: tca_ucx_device_test, btl tca
#                      and coll tca on it (test/ucx/btl_on_ucx.sh) and the
#                      published-style programs of test/tca-api/ucx)
#   STRESS_CASES       MPI cases by name, shell patterns (default: every case, "*")
#   STRESS_UCX_PROGRAMS  the ucx suite's published-style programs by name, shell
#                      patterns (default "*"; "-": none, tca_ucx_device_test only)
#   GTEST_FILTER       (GoogleTest's own) device tests by name
#   STRESS_LOAD        busy-loop load processes (default: nproc)
#   STRESS_NICE        niceness of the load *and* the tests (default 10): they
#                      compete with each other as equals, other users' work
#                      keeps priority
#   STRESS_LOGS        where the output of failed runs is kept (default stress-logs)
# Each pass runs every suite with TCA_SINGLE_COPY=1 (single copy) and with
# TCA_SINGLE_COPY=0 (bounce path; unset, libtca measures which to take).
# Prints "N passed, N failed, N skipped" and exits non-zero on any failure.
srcdir=${srcdir:-$(cd "$(dirname "$0")/.." && pwd)}
runs=${STRESS_RUNS:-20}
suites=${STRESS_SUITES:-device mpi}
load=${STRESS_LOAD:-$(nproc)}
niceness=${STRESS_NICE:-10}
logs=${STRESS_LOGS:-stress-logs}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

# The multi-process device tests: GoogleTest programs that fork loopback nodes.
device_tests="tca_device_tests tca_coll_engine_tests tca_btl_core_tests"
[ -x ./tca_ucx_tests ] && device_tests="$device_tests tca_ucx_tests"  # where UCX is installed
for t in $device_tests tca_p2p_test tca_bcast_test; do
    [ -x "./$t" ] || { echo "stress: ./$t not built (run make check first, or make check-stress)" >&2; exit 2; }
done
# The patterns are globbed against the case directory only (not the current one).
mpi_cases=
set -f
for p in ${STRESS_CASES:-*}; do
    set +f
    for c in $(ls "$srcdir"/test/mpi/cases/$p.mpi); do
        # A GPU case listed only for the GPU battery fails by design with host buffers.
        head -n 1 "$c" | grep -q "GPU list only" || mpi_cases="$mpi_cases $c"
    done
    set -f
done
set +f

load_pids=""
stop_load() {
    for p in $load_pids; do kill "$p" 2>/dev/null; done
    for p in $load_pids; do wait "$p" 2>/dev/null; done
    load_pids=""
}
trap 'stop_load' EXIT
trap 'stop_load; exit 130' INT TERM
i=0
while [ "$i" -lt "$load" ]; do
    nice -n "$niceness" sh -c 'while :; do :; done' &
    load_pids="$load_pids $!"
    i=$((i + 1))
done

mkdir -p "$logs"
passed=0 failed=0 skipped=0
# run NAME COMMAND...: one test run, counted (exit 77: skipped, as automake
# counts it - the GPU cases without a GPU); the output of a failure is kept.
run() {
    name=$1
    shift
    log="$logs/$(echo "$name" | tr ' /=' '___').log"
    nice -n "$niceness" "$@" >"$log.tmp" 2>&1
    rc=$?
    if [ "$rc" -eq 0 ] || [ "$rc" -eq 77 ]; then
        if [ "$rc" -eq 0 ]; then passed=$((passed + 1)); else skipped=$((skipped + 1)); fi
        rm -f "$log.tmp"
    else
        failed=$((failed + 1))
        mv "$log.tmp" "$log"
        echo "FAIL: $name (output in $log)"
        grep -E '^\[  FAILED  \]|node check failed|FAIL|->' "$log" | head -5 | sed 's/^/    /'
    fi
}

# wanted NAME PATTERN...: NAME matches one of the patterns.
wanted() {
    w_name=$1
    shift
    for w_p in "$@"; do
        case $w_name in $w_p) return 0 ;; esac
    done
    return 1
}

echo "stress: $runs runs of [$suites], both copy paths, $load load processes, nice $niceness"
n=1
while [ "$n" -le "$runs" ]; do
    for copy in single bounce; do
        # (the shared heap off too, so tcaMalloc'd memory bounces as well)
        if [ "$copy" = bounce ]; then export TCA_SINGLE_COPY=0 TCA_SHARED_HEAP=0; else export TCA_SINGLE_COPY=1; unset TCA_SHARED_HEAP; fi
        for suite in $suites; do
            case $suite in
                device)
                    for t in $device_tests; do run "run $n $copy $t" "./$t"; done ;;
                mpi)
                    for c in $mpi_cases; do
                        run "run $n $copy $(basename "$c" .mpi)" env srcdir="$srcdir" sh "$srcdir/test/mpi/run_case.sh" "$c"
                    done ;;
                multihost)
                    run "run $n $copy multihost" env srcdir="$srcdir" sh "$srcdir/test/multihost/run.sh" ;;
                ucx)
                    [ -f .libs/tca_ucx.so ] || { echo "stress: this build has no ucx device" >&2; exit 2; }
                    run "run $n $copy ucx_device_test" env srcdir="$srcdir" sh "$srcdir/test/ucx/ucx_device_test.sh"
                    run "run $n $copy btl_on_ucx" env srcdir="$srcdir" sh "$srcdir/test/ucx/btl_on_ucx.sh"
                    for c in "$srcdir"/test/tca-api/ucx/*.tca; do
                        set -f  # the patterns are not file names here
                        wanted "$(basename "$c" .tca)" ${STRESS_UCX_PROGRAMS:-*}
                        w=$?
                        set +f
                        [ "$w" = 0 ] || continue
                        run "run $n $copy ucx $(basename "$c" .tca)" env srcdir="$srcdir" sh "$srcdir/test/tca-api/run_program.sh" "$c"
                    done ;;
                *) echo "stress: unknown suite '$suite'" >&2; exit 2 ;;
            esac
        done
    done
    echo "stress: run $n of $runs done: $passed passed, $failed failed, $skipped skipped so far"
    n=$((n + 1))
done
stop_load
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ] && [ "$passed" -gt 0 ]
