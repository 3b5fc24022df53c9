#!/bin/sh
# The Jacobi solver with cudaMalloc'd rows: one rank, btl tca, Open MPI's
# smcuda and vader - identical residuals.  SKIP without a GPU, the CUDA
# toolkit at build time or a CUDA-aware Open MPI.
exec sh "${srcdir:-.}/test/apps/jacobi/run_jacobi.sh" cuda
