#!/bin/sh
# ucx_device_test.sh - tca_ucx_device_test under mpirun on the ucx device
# (TCA_DEVICE=ucx, UCX over tcp as between hosts), 2 and 3 ranks, bounded in
# time; skipped where this build has no ucx device.
[ -f .libs/tca_ucx.so ] || { echo "SKIP: this build has no ucx device"; exit 77; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
status=0
for np in 2 3; do
    out=$(TCA_DEVICE=ucx UCX_TLS=tcp,self TCA_TIMEOUT_MS=20000 timeout 120 \
        mpirun --oversubscribe -np $np ./tca_ucx_device_test 2>&1)
    rc=$?
    echo "$out"
    echo "== np $np: exit $rc"
    [ $rc -eq 0 ] && echo "$out" | grep -q "ucx_device_test: PASSED" || { echo "FAIL: np $np"; status=1; }
done
exit $status
