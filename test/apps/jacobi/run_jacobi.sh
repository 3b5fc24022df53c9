#!/bin/sh
# run_jacobi.sh host|cuda - run the Jacobi solver (tca_jacobi_host or
# tca_jacobi_cuda, from the build directory) on one rank, over btl tca
# (scripts/tca-mpirun) and over Open MPI's own transports (plain mpirun:
# vader for host rows, smcuda for GPU rows), and require the very same residual and
# field lines from all of them (the solver's sums do not depend on the
# decomposition: see jacobi.c).  Exit 77 (SKIP) with the reason where the
# solver cannot run here.
#   JACOBI_ARGS  solver arguments (default: 97 x 97, 120 iterations, check every 20,
#                halos alternating between MPI_Sendrecv and persistent requests)
mode=${1:-host}
srcdir=${srcdir:-.}
bin=./tca_jacobi_$mode
args=${JACOBI_ARGS:--n 97 -i 120 -c 20 -halo alternate}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_opal_warn_on_missing_libcuda=0
if [ ! -x "$bin" ]; then
    echo "SKIP: $bin is not built (configure found no CUDA toolkit: its kernels need nvcc)"
    exit 77
fi
TCA_COMPONENT_DIR=${TCA_COMPONENT_DIR:-$(pwd)/.libs}
export TCA_COMPONENT_DIR
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
shm_before=$tmp/shm
ls /dev/shm 2>/dev/null | grep '^tca-' >"$shm_before"

status=0
# run LABEL LAUNCHER...: the solver under LAUNCHER; its result lines in $tmp/LABEL.
run() {
    label=$1
    shift
    # shellcheck disable=SC2086
    timeout 300 "$@" "$bin" $args >"$tmp/$label.out" 2>&1
    rc=$?
    if [ $rc -eq 77 ] && grep -q '^SKIP' "$tmp/$label.out"; then
        grep '^SKIP' "$tmp/$label.out" | head -1
        exit 77
    fi
    grep -E '^(iter|field) ' "$tmp/$label.out" >"$tmp/$label"
    lines=$(wc -l <"$tmp/$label")
    echo "$label: exit $rc, $lines result lines"
    if [ $rc -ne 0 ] || [ "$lines" -lt 2 ]; then
        echo "FAIL: $label"
        sed 's/^/    /' "$tmp/$label.out"
        status=1
    fi
}

tca="$srcdir/scripts/tca-mpirun --oversubscribe --bind-to none"
ompi="mpirun --oversubscribe --bind-to none"
run one_rank $tca -np 1
cat "$tmp/one_rank.out"
run tca_np4 $tca -np 4
run tca_np3 $tca -np 3
# Persistent broadcasts over coll tca, halos over btl tca: say so in the log.
run tca_np4_verbose $tca --mca coll_base_verbose 10 -np 4
grep -q 'coll:tca: persistent broadcast.*: tca,' "$tmp/tca_np4_verbose.out" ||
    { echo "FAIL: no broadcast ran over coll tca"; status=1; }
if [ "$mode" = cuda ]; then
    run smcuda_np4 $ompi --mca pml ob1 --mca btl smcuda,self -np 4
    grep -q 'GPU buffer' "$tmp/tca_np4_verbose.out" ||
        { echo "FAIL: coll tca did not see the GPU profile buffer"; status=1; }
fi
# vader only for host rows: its single copy (CMA) cannot read GPU memory and
# Open MPI 4.1 does not keep it away from GPU buffers (SIGSEGV in vader's
# prepare_src); smcuda is Open MPI's transport for those.
[ "$mode" = cuda ] || run vader_np4 $ompi --mca pml ob1 --mca btl vader,self -np 4

for f in "$tmp"/*; do
    case "$f" in *.out|*/shm|*/one_rank) continue ;; esac
    if ! cmp -s "$tmp/one_rank" "$f"; then
        echo "FAIL: $(basename "$f") differs from one rank:"
        diff "$tmp/one_rank" "$f" | sed 's/^/    /'
        status=1
    fi
done
[ $status -eq 0 ] && echo "identical residuals on one rank, over btl tca and over Open MPI's own transports"
left=$(sh "$srcdir/test/shm_left_behind.sh" "$shm_before") || { echo "FAIL: shared-memory segments left behind:"; echo "$left"; status=1; }
exit $status
