#!/bin/sh
# build-ompi-cuda.sh [PREFIX] - the CUDA-aware Open MPI 4.1 of
# scripts/build-ompi.sh 4.1 (built once per machine, cached), linked as
# ompi-cuda/ in the tree for ./configure --with-ompi="$(pwd)/ompi-cuda".
# scripts/build-ompi.sh 5.0 builds today's Open MPI 5.0 the same way.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
prefix=$(sh "$top/scripts/build-ompi.sh" 4.1 "$@" | tail -1)
if [ $# -eq 0 ]; then
    ln -sfn "$prefix" "$top/ompi-cuda"
    echo "build-ompi-cuda: $top/ompi-cuda -> $prefix"
fi
echo "build-ompi-cuda: configure the project with ./configure --with-ompi=${1:-$top/ompi-cuda}"
