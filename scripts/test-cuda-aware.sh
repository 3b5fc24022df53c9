#!/bin/sh
# The second half of CI: the same components against a CUDA-aware Open MPI.
# Builds (once per machine, cached outside the clone) Debian's Open MPI
# version with CUDA support (scripts/build-ompi-cuda.sh), builds a copy of
# this working tree against it in build/cuda-aware/ (./configure
# --with-ompi=...), and runs the MPI part of the battery there (make
# check-mpi: every MPI case, the published example, the published-style
# programs) with CPU buffers.  GPU tests inside it skip without a GPU.
# Prints "N passed, N failed, N skipped" for this half; exits non-zero on a
# failure.  Without a CUDA toolkit it says so and exits 77 (skipped).
set -e
cd "$(dirname "$0")/.."
top=$(pwd)
cuda=${CUDA_HOME:-/usr/local/cuda}
if [ ! -f "$cuda/include/cuda.h" ]; then
    echo "SKIP: no CUDA toolkit at $cuda: the CUDA-aware Open MPI cannot be built here"
    exit 77
fi
t0=$(date +%s)
sh scripts/build-ompi-cuda.sh
prefix=$(readlink -f "$top/ompi-cuda")
t1=$(date +%s)

# A copy of the working tree (tracked and untracked-but-not-ignored files,
# so local changes are tested too): the source tree itself is configured
# in place for the system's Open MPI, and automake allows one configuration
# per source directory.
dest="$top/build/cuda-aware"
mkdir -p "$dest"
git ls-files -co --exclude-standard -z | xargs -0 tar -cf - | (cd "$dest" && tar -xpf -)
cd "$dest"
[ -x configure ] || ./autogen.sh >/dev/null
if [ ! -f Makefile ] || ! grep -q "^OMPI_BINDIR = $prefix/bin\$" Makefile; then
    ./configure --with-ompi="$prefix" >configure.out 2>&1 || { tail -30 configure.out; exit 1; }
fi
grep -q '^OMPI_CUDA = yes$' Makefile || { echo "build/cuda-aware: configure did not find a CUDA-aware Open MPI"; exit 1; }
make -j"$(nproc)" >make.out 2>&1 || { tail -40 make.out; exit 1; }
t2=$(date +%s)
status=0
make -j1 check-mpi || status=$?
t3=$(date +%s)
echo "CUDA-aware Open MPI: build or cache $((t1 - t0)) s, components $((t2 - t1)) s, MPI battery $((t3 - t2)) s"
sh scripts/test-summary.sh || status=1
exit $status
