#!/bin/sh
# run_gpu_case.sh test/mpi/cases/gpu/X.gpu - the MPI case X.mpi again with GPU
# buffers (automake log compiler of the .gpu copies).  Without a GPU it says
# so and reports SKIP (exit 77): never a silent pass.  With one, the case runs
# as usual under run_case.sh with TCA_TEST_GPU=1, which the test programs
# (tca_p2p_test, tca_bcast_test) read: their buffers are cudaMalloc'd, and a
# sub-test without a GPU variant exits 77 instead of running on host memory.
srcdir=${srcdir:-.}
./tca_gpu_probe
probe=$?
[ $probe -eq 77 ] && exit 77
[ $probe -eq 0 ] || { echo "FAIL: tca_gpu_probe exited with $probe"; exit 1; }
TCA_TEST_GPU=1 exec "${SHELL:-/bin/sh}" "$srcdir/test/mpi/run_case.sh" "$1"
