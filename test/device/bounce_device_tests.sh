#!/bin/sh
# The multi-process device and engine tests again with TCA_SINGLE_COPY=0: every
# put into another process's host memory takes the bounce path (the one used
# when the kernel refuses process_vm_writev), byte checks included.
set -e
TCA_SINGLE_COPY=0
export TCA_SINGLE_COPY
./tca_device_tests --gtest_filter='-Gpu.*'
./tca_coll_engine_tests
./tca_btl_core_tests
