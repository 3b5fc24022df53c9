#!/bin/sh
# Runs the published-pattern MPI example on 2 ranks (launch info from mpirun).
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
exec timeout 120 mpirun -np 2 --mca btl self,vader ./tca_published_example
