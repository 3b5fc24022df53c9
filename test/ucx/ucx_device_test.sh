#!/bin/sh
# ucx_device_test.sh - tca_ucx_device_test under mpirun on the ucx device
# (TCA_DEVICE=ucx, UCX over tcp as between hosts), 2 and 3 ranks, and 3 with
# the timing model on, bounded in time; skipped where this build has no ucx device.
[ -f .libs/tca_ucx.so ] || { echo "SKIP: this build has no ucx device"; exit 77; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
status=0
# The third run has the timing model on, with latencies of milliseconds so
# that its lower bounds say something however fast UCX is.
timing="TCA_TIMING=1 TCA_PIO_LATENCY_NS=2000000 TCA_CHAIN_START_NS=1000000 TCA_DMA_LATENCY_NS=3000000"
for run in "2" "3" "3 $timing"; do
    np=${run%% *}
    env=$(echo "$run" | cut -s -d' ' -f2-)
    out=$(env $env TCA_DEVICE=ucx UCX_TLS=tcp,self TCA_TIMEOUT_MS=20000 timeout 120 \
        mpirun --oversubscribe -np $np ./tca_ucx_device_test 2>&1)
    rc=$?
    echo "$out"
    echo "== np $np ${env:-(model off)}: exit $rc"
    [ $rc -eq 0 ] && echo "$out" | grep -q "ucx_device_test: PASSED" || { echo "FAIL: np $np $env"; status=1; }
done
exit $status
