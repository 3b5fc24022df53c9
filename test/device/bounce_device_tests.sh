#!/bin/sh
# The multi-process device and engine tests again with TCA_SINGLE_COPY=0 and
# TCA_SHARED_HEAP=0: every put into another process's host memory (tcaMalloc'd
# memory included, which is private then) takes the bounce path (the one used
# when the kernel refuses process_vm_writev), byte checks included.  Then the
# device tests with the shared heap off alone and single copy on, so that puts
# into tcaMalloc'd memory take process_vm_writev as on hosts where /dev/shm is
# full.
set -e
TCA_SINGLE_COPY=0
TCA_SHARED_HEAP=0
export TCA_SINGLE_COPY TCA_SHARED_HEAP
./tca_device_tests --gtest_filter='-Gpu.*:SharedHeap.*'
./tca_coll_engine_tests
./tca_btl_core_tests
TCA_SINGLE_COPY=1
./tca_device_tests --gtest_filter='-Gpu.*:SharedHeap.*'
