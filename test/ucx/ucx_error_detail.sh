#!/bin/sh
# ucx_error_detail.sh - a failed start of the ucx device reaches
# tcaGetErrorDetail: a bad setting read inside the plugin, and no PMIx
# launcher (the program runs alone); skipped where this build has no ucx device.
[ -f .libs/tca_ucx.so ] || { echo "SKIP: this build has no ucx device"; exit 77; }
status=0
check() {
    echo "== $*"
    env "$@" timeout 60 ./tca_ucx_error_detail "$expected" || status=1
}
expected="TCA_SPIN_NS='bogus'"
check TCA_DEVICE=ucx TCA_SPIN_NS=bogus
expected="TCA_DEVICE=ucx"
check TCA_DEVICE=ucx
exit $status
