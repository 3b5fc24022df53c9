#!/bin/sh
# Runs the published-pattern MPI example on 2 ranks (launch info from mpirun):
# once over Open MPI's own transports, once with btl tca loaded in the same
# processes - the application's tcaInit then shares the node the component
# started (tcaInit is reference counted).
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
set -e
timeout 120 mpirun -np 2 --mca btl self,vader ./tca_published_example
TCA_COMPONENT_DIR=$(pwd)/.libs
export TCA_COMPONENT_DIR
out=$(timeout 120 sh "${srcdir:-.}/scripts/tca-mpirun" -np 2 --mca btl_base_verbose 0 ./tca_published_example 2>&1) || {
    echo "$out"
    echo "FAIL: the TCA-API program under btl tca"
    exit 1
}
echo "$out"
echo "$out" | grep -q "0 errors"
