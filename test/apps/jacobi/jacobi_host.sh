#!/bin/sh
# The Jacobi solver with host-memory rows: one rank, btl tca at 3 and 4 ranks,
# Open MPI's vader at 4 ranks - identical residuals.
exec sh "${srcdir:-.}/test/apps/jacobi/run_jacobi.sh" host
