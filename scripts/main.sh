#!/bin/sh
# The main job: install dependencies, build, then run MPI over btl tca and over
# Open MPI's vader side by side on the loopback device and print the table.
#
# Where a GPU is present (nvidia-smi -L lists one, or the CUDA runtime counts
# one) the project is built against a CUDA-aware Open MPI instead - built
# once by scripts/build-ompi-cuda.sh, cached, reused afterwards - and the GPU
# rows follow the CPU ones: bench.sh -d cuda and bench-bcast.sh -d cuda (btl
# tca and coll tca against smcuda).  Without a GPU nothing of that runs: no
# Open MPI build, the system's Open MPI, the CPU rows only.
set -e
cd "$(dirname "$0")/.."
sh scripts/install-deps.sh

gpu_present() {
    if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L 2>/dev/null | grep -q '^GPU '; then
        return 0
    fi
    # No nvidia-smi (containers): ask the CUDA runtime, if there is one.
    command -v python3 >/dev/null 2>&1 || return 1
    python3 - <<'PY' 2>/dev/null
import ctypes, sys
for name in ("libcudart.so", "libcudart.so.13", "libcudart.so.12", "/usr/local/cuda/lib64/libcudart.so"):
    try:
        rt = ctypes.CDLL(name)
    except OSError:
        continue
    n = ctypes.c_int(0)
    sys.exit(0 if rt.cudaGetDeviceCount(ctypes.byref(n)) == 0 and n.value > 0 else 1)
sys.exit(1)
PY
}

gpu=no
if gpu_present; then
    gpu=yes
    echo "GPU present: building against a CUDA-aware Open MPI (scripts/build-ompi-cuda.sh, cached)"
    sh scripts/build-ompi-cuda.sh
    # A tree configured against another Open MPI is configured again.
    if [ -f Makefile ] && ! grep -q '^OMPI_CUDA = yes' Makefile; then
        ./configure --with-ompi="$(pwd)/ompi-cuda"
    fi
    sh scripts/build.sh --with-ompi="$(pwd)/ompi-cuda"
else
    sh scripts/build.sh
fi
echo
./tca_info | sed -n '1,/^# DMA engine/p' | head -n -1
echo
sh scripts/bench.sh "${1:-3}"
sh scripts/bench-device.sh "${1:-3}"
echo
make -s tca_model_bench >/dev/null
./tca_model_bench -q -r 3 -c 0 || echo "tca_model_bench: a graded point is more than 10 % off its published figure (FAIL line above)"
# The same programs in virtual time (docs/virtual-time.md): what PEACH2 would
# take, whatever this host's load, the 16-rank B4 / B5 against the model on
# paper; then an MPI ping-pong over btl tca read through MPI_Wtime.
echo
./tca_model_bench -q -r 3 -v || echo "tca_model_bench -v: a graded point is more than 10 % off (FAIL line above)"
echo "# MPI latency over btl tca in virtual time (TCA_TIMING=virtual tca-mpirun, MPI_Wtime on the virtual clock), us one way:"
OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 TCA_TIMING=virtual \
    scripts/tca-mpirun -np 2 ./tca_mpi_bench latency | grep '^RESULT' ||
    echo "tca_mpi_bench latency in virtual time failed"
if [ "$gpu" = yes ]; then
    echo
    sh scripts/bench.sh -d cuda "${1:-3}"
    sh scripts/bench-bcast.sh -d cuda "${1:-3}"
fi
