#!/bin/sh
# shm_full.sh - a full /dev/shm must not kill a job.  Inside a private mount
# namespace with its own small tmpfs on /dev/shm (nobody else's shared memory
# is touched), as root (CI); prints SKIP and exits 77 where that cannot be made.
#   1. the device tests ShmFull.* (tcaInit refused with the sizes; a job
#      filled while running keeps its data right, both copy paths);
#   2. MPI over btl tca started on an almost full /dev/shm: refused by the
#      component's help message with the sizes, no SIGBUS, no hang;
#   3. MPI jobs whose rank 0 fills /dev/shm to the last page after start
#      (TCA_TEST_FILL_SHM=1): ping-pong of every size, persistent requests, and
#      prepared persistent broadcasts over coll tca, on both copy paths.
srcdir=${srcdir:-.}
if [ "${1:-}" != --inside ]; then
    if [ "$(id -u)" != 0 ]; then
        echo "SKIP: needs root for a private /dev/shm (unshare -m, mount -t tmpfs)"
        exit 77
    fi
    if ! unshare -m sh -c 'mount -t tmpfs -o size=1m tcatest /dev/shm' 2>/dev/null; then
        echo "SKIP: cannot make a private /dev/shm here (unshare -m / mount -t tmpfs refused)"
        exit 77
    fi
    exec timeout 900 unshare -m sh "$0" --inside
fi

mount -t tmpfs -o size=160m,mode=1777 tcatest /dev/shm || exit 1
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 TCA_TIMEOUT_MS=20000
TCA_COMPONENT_DIR=$(pwd)/.libs
export TCA_COMPONENT_DIR
run="$srcdir/scripts/tca-mpirun"
status=0 passed=0 failed=0
out=$(mktemp)
result() {  # NAME OK(0/1)
    if [ "$2" = 0 ]; then
        echo "ok   $1"
        passed=$((passed + 1))
    else
        echo "FAIL $1; output:"
        sed 's/^/    /' "$out"
        failed=$((failed + 1))
        status=1
    fi
}
no_bus_error() { ! grep -qi -e 'bus error' -e 'SIGBUS' -e 'signal 7' "$out"; }

TCA_TEST_PRIVATE_SHM=1 timeout 300 ./tca_device_tests --gtest_filter='ShmFull.*' >"$out" 2>&1
rc=$?
[ $rc -eq 0 ] && grep -q 'PASSED.*3 tests' "$out" && ! grep -q SKIPPED "$out"
result "device tests ShmFull.* (3 tests)" $?

# Start on an almost full /dev/shm: the component refuses by name.
rm -f /dev/shm/filler-of-shm-full-test
free_kb=$(df -k --output=avail /dev/shm | tail -1)
fallocate -l $(((free_kb - 16) * 1024)) /dev/shm/filler-of-shm-full-test
timeout 120 "$run" --bind-to none -np 2 ./tca_p2p_test pingpong >"$out" 2>&1
rc=$?
rm -f /dev/shm/filler-of-shm-full-test
[ $rc -ne 0 ] && [ $rc -ne 124 ] && no_bus_error && grep -q 'did not start' "$out" &&
    grep -q 'cannot reserve' "$out" && grep -q '/dev/shm has' "$out"
result "MPI start on a full /dev/shm refused with the sizes (exit $rc)" $?

for copy in single bounce; do
    env=""
    [ $copy = bounce ] && env="TCA_SINGLE_COPY=0"
    for t in pingpong persistent; do
        env $env TCA_TEST_FILL_SHM=1 timeout 300 "$run" --bind-to none -np 2 ./tca_p2p_test $t >"$out" 2>&1
        rc=$?
        [ $rc -eq 0 ] && grep -q "^$t: passed" "$out" && grep -q 'shm_fill: /dev/shm filled' "$out" && no_bus_error
        result "MPI $t with /dev/shm filled after start ($copy copy)" $?
    done
    env $env TCA_TEST_FILL_SHM=1 timeout 300 "$run" --oversubscribe --bind-to none -np 4 \
        --mca coll_base_verbose 10 ./tca_bcast_test prepared_then_full >"$out" 2>&1
    rc=$?
    [ $rc -eq 0 ] && grep -q '^prepared_then_full: passed' "$out" && grep -q 'shm_fill: /dev/shm filled' "$out" &&
        grep -q 'coll:tca: persistent broadcast.*: tca' "$out" && no_bus_error
    result "MPI persistent broadcasts prepared, then /dev/shm filled ($copy copy)" $?
done
rm -f "$out"
left=$(ls /dev/shm | grep '^tca-')
[ -z "$left" ] || { echo "FAIL: left in the private /dev/shm: $left"; failed=$((failed + 1)); status=1; }
echo "shm_full: $passed passed, $failed failed"
exit $status
