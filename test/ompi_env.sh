# ompi_env.sh - sourced by every runner of MPI tests (make check's
# TESTS_ENVIRONMENT, check-multihost, check-stress, scripts/test-in-tree.sh):
# what depends on the Open MPI the build uses.  OMPI_MAJOR: its major version.
#
# SM_BTL, SM_NOCOPY: mpirun arguments for Open MPI's own shared-memory BTL,
# and for telling it to copy without single copy (the reference of the
# bounce path): vader and its parameter in 4.1; in 5.0 sm, whose single copy
# is the smsc framework's, every component of it excluded (a list naming no
# component, such as "none", makes MPI_Init fail there).
#
# A CUDA-aware Open MPI 5 reports at every start, where the loader finds no
# libcuda.so.1 (no GPU driver), that its three CUDA components cannot load it
# (opal_warn_on_missing_libcuda, 4.1's switch, does nothing in 5.0; 4.1 opens
# libcuda itself).  Only there are those three load errors hidden: with a
# driver, and for every other component, they still show.  A value the user
# set wins.
if [ "${OMPI_MAJOR:-4}" -ge 5 ]; then
    SM_NAME=sm SM_BTL="--mca btl sm,self" SM_NOCOPY="--mca smsc ^cma,xpmem,knem,accelerator"
else
    SM_NAME=vader SM_BTL="--mca btl vader,self" SM_NOCOPY="--mca btl_vader_single_copy_mechanism none"
fi
if [ "${OMPI_MAJOR:-4}" -ge 5 ] && [ -z "${OMPI_MCA_mca_base_component_show_load_errors+set}" ]; then
    tca_libcuda=
    for tca_d in $(echo "${LD_LIBRARY_PATH:-}" | tr : ' '); do
        [ -e "$tca_d/libcuda.so.1" ] && tca_libcuda=1
    done
    { ldconfig -p || /sbin/ldconfig -p; } 2>/dev/null | grep -q 'libcuda\.so\.1 ' && tca_libcuda=1
    if [ -z "$tca_libcuda" ]; then
        OMPI_MCA_mca_base_component_show_load_errors=^accelerator/cuda,rcache/gpusm,rcache/rgpusm
        export OMPI_MCA_mca_base_component_show_load_errors
    fi
    unset tca_libcuda tca_d
fi
