#!/bin/sh
# gpu-battery.sh [rounds] - everything that needs a GPU, in one run, in a tree
# built against a CUDA-aware Open MPI (scripts/test-ompi.sh 4.1|5.0 builds one
# in build/ompi-<series>; scripts/build-ompi.sh the Open MPI): the device
# tests with GPU memory (Gpu.*), every MPI case with cudaMalloc'd buffers
# (test/mpi/cases/gpu/ of make check) on both copy paths, the coll tca GPU
# broadcasts, the CUDA Jacobi solver against one rank and smcuda, then the
# GPU benchmarks (bench.sh -d cuda, bench-bcast.sh -d cuda; rounds default 3).  Each step is bounded
# in time (GPU_CASE_SECONDS per test, default 300; GPU_BENCH_SECONDS per
# benchmark, default 600; GPU_BENCH=0: no benchmarks); logs go to
# gpu-logs/.  Prints "N passed, N failed, N skipped" and exits non-zero on a
# failure; without a GPU every step says SKIP.
cd "$(dirname "$0")/.."
rounds=${1:-3}
case_s=${GPU_CASE_SECONDS:-300} bench_s=${GPU_BENCH_SECONDS:-600}
logs=gpu-logs
mkdir -p "$logs"
export srcdir=. OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
ompi_bindir=$(sed -n 's/^OMPI_BINDIR = //p' Makefile 2>/dev/null || true)
[ -z "$ompi_bindir" ] || PATH="$ompi_bindir:$PATH"
passed=0 failed=0 skipped=0
step() {  # NAME SECONDS COMMAND...: PASS on 0, SKIP on 77, FAIL otherwise
    name=$1 limit=$2
    shift 2
    log="$logs/$(echo "$name" | tr -c 'A-Za-z0-9_.-' '_').log"
    start=$(date +%s)
    timeout "$limit" "$@" >"$log" 2>&1
    rc=$?
    took=$(($(date +%s) - start))
    case $rc in
    0) passed=$((passed + 1)); echo "PASS $name (${took} s)" ;;
    77) skipped=$((skipped + 1)); echo "SKIP $name: $(grep -m1 SKIP "$log")" ;;
    *) failed=$((failed + 1)); echo "FAIL $name (exit $rc, ${took} s); last lines:"; tail -15 "$log" | sed 's/^/    /' ;;
    esac
}

echo "GPU battery: $(nvidia-smi -L 2>/dev/null | head -1 || echo 'no nvidia-smi')"
./tca_gpu_probe >"$logs/probe.log" 2>&1
probe=$?
cat "$logs/probe.log"
# gtest passes a skipped test: say SKIP for it (its reason is in the log).
step "device tests Gpu.*" "$case_s" sh -c './tca_device_tests --gtest_filter="Gpu.*" >"$0" 2>&1; rc=$?; cat "$0"
    grep -q "SKIPPED \]" "$0" && { echo "SKIP: $(grep -m1 -A1 "Skipped" "$0" | tail -1)"; exit 77; }; exit $rc' "$logs/gtest-gpu.out"
# The point-to-point cases on both copy paths: single copy (CUDA IPC) and the
# bounce path (TCA_SINGLE_COPY=0: GPU data staged through the shared rings).
for copy in single bounce; do
    for c in pingpong pingpong_dma_puts mixed bidir persistent threads progress_thread_all get_gpu get_gpu_off; do
        if [ $copy = bounce ]; then
            step "MPI $c (GPU buffers, bounce)" "$case_s" env TCA_SINGLE_COPY=0 TCA_SHARED_HEAP=0 \
                sh test/mpi/run_gpu_case.sh "test/mpi/cases/$c.mpi"
        else
            step "MPI $c (GPU buffers)" "$case_s" env TCA_SINGLE_COPY=1 sh test/mpi/run_gpu_case.sh "test/mpi/cases/$c.mpi"
        fi
    done
done
for c in test/mpi/cases/bcast_gpu_*.mpi; do
    step "MPI $(basename "$c" .mpi)" "$case_s" sh test/mpi/run_case.sh "$c"
done
step "Jacobi CUDA vs one rank and smcuda" "$case_s" sh test/apps/jacobi/jacobi_cuda.sh
if [ $probe -eq 0 ] && [ "${GPU_BENCH:-1}" = 1 ]; then
    step "bench.sh -d cuda $rounds" "$bench_s" sh scripts/bench.sh -d cuda "$rounds"
    step "bench-bcast.sh -d cuda $rounds" "$bench_s" sh scripts/bench-bcast.sh -d cuda "$rounds"
    cat "$logs"/bench*.log | grep -v '^GPU round'
fi
echo "gpu-battery: $passed passed, $failed failed, $skipped skipped"
[ $failed -eq 0 ]
