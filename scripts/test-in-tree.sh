#!/bin/sh
# test-in-tree.sh - the in-tree route, as a site or a distribution would build
# the components: Open MPI 5.0 built (once per machine, cached; later runs
# rebuild only the three component directories) with btl tca, coll tca and
# libtca in its source tree (TCA_OMPI_IN_TREE=1 scripts/build-ompi.sh 5.0,
# scripts/ompi-in-tree.sh), then
#   - its ompi_info lists btl tca and coll tca, every parameter with help text,
#     and finds them with no component path;
#   - plain `mpirun --mca pml ob1 --mca btl tca,self` runs a ping-pong over
#     btl tca (the verbose line of btl tca says so) and a persistent broadcast
#     over coll tca, with no component path and no wrapper;
#   - a selection of the MPI cases (IN_TREE_CASES) runs over those components
#     (TCA_COMPONENT_DIR=ompi), from a copy of this tree built against that
#     Open MPI for the test programs (build/ompi-in-tree).
# Prints "N passed, N failed, N skipped"; exits non-zero on a failure, 77
# without a CUDA toolkit (the Open MPI 5 build is CUDA-aware).
set -e
cd "$(dirname "$0")/.."
cuda=${CUDA_HOME:-/usr/local/cuda}
if [ ! -f "$cuda/include/cuda.h" ]; then
    echo "SKIP: no CUDA toolkit at $cuda: the CUDA-aware Open MPI 5.0 cannot be built here"
    exit 77
fi
t0=$(date +%s)
prefix=$(TCA_OMPI_IN_TREE=1 sh scripts/build-ompi.sh 5.0 | tail -1)
t1=$(date +%s)
dest=$(sh scripts/tree-copy.sh build/ompi-in-tree --with-ompi="$prefix")
cd "$dest"
make -j"$(nproc)" tca_p2p_test tca_bcast_test tca_params_test tca_btl_param_names tca_mpi_bench \
    tca_rma_lifetime_test tca_rma_conformance >make-tests.out 2>&1 || { tail -30 make-tests.out; exit 1; }
t2=$(date +%s)
export PATH="$prefix/bin:$PATH" OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MAJOR=5
. test/ompi_env.sh
# As make check runs the cases (TESTS_ENVIRONMENT): single copy, not the
# path libtca would measure at start-up.
export TCA_SINGLE_COPY="${TCA_SINGLE_COPY-1}" srcdir=.
unset OMPI_MCA_mca_base_component_path
passed=0 failed=0 say=0
check() { # NAME COMMAND...: PASS on 0
    name=$1
    shift
    if out=$("$@" 2>&1); then
        passed=$((passed + 1))
        echo "PASS: in-tree: $name"
        [ "$say" != 1 ] || echo "$out" | sed 's/^/    /'
    else
        failed=$((failed + 1))
        echo "FAIL: in-tree: $name"
        echo "$out" | tail -20 | sed 's/^/    /'
    fi
}

# ompi_info knows both components from Open MPI's own directory.
lists_components() {
    info=$(ompi_info --parsable)
    echo "$info" | grep -q '^mca:btl:tca:version:' || { echo "ompi_info lists no btl tca"; return 1; }
    echo "$info" | grep -q '^mca:coll:tca:version:' || { echo "ompi_info lists no coll tca"; return 1; }
    [ -f "$(ompi_info --parsable --path pkglibdir | sed -n 's/^path:pkglibdir://p')/mca_btl_tca.so" ] ||
        { echo "mca_btl_tca.so is not in Open MPI's component directory"; return 1; }
}
check "ompi_info lists btl tca and coll tca" lists_components
# Every parameter with its help text (the same check as the out-of-tree build's).
check "every parameter with help text (ompi_info)" env TCA_COMPONENT_DIR=ompi sh test/mpi/run_case.sh \
    test/mpi/cases/ompi_info.mpi

plain_pingpong() {
    o=$(timeout 120 mpirun --oversubscribe --bind-to none --mca pml ob1 --mca btl tca,self --mca btl_base_verbose 5 \
        -np 2 ./tca_p2p_test pingpong 2>&1) || { echo "$o" | tail -20; return 1; }
    echo "$o" | grep -q 'btl tca: .*the TCA session' || { echo "$o" | tail -20; echo "btl tca did not join"; return 1; }
    echo "$o" | grep -q 'pingpong: passed' || { echo "$o" | tail -20; return 1; }
}
check "plain mpirun --mca pml ob1 --mca btl tca,self (no component path)" plain_pingpong
plain_bcast() {
    o=$(timeout 120 mpirun --oversubscribe --bind-to none --mca pml ob1 --mca btl tca,self --mca coll_base_verbose 10 \
        -np 4 ./tca_bcast_test basic 2>&1) || { echo "$o" | tail -20; return 1; }
    echo "$o" | grep -q 'coll:tca: persistent broadcast on .*: tca,' || { echo "$o" | tail -20; echo "coll tca took no broadcast"; return 1; }
}
check "plain mpirun, persistent broadcast over coll tca" plain_bcast

# The C++ core compiled with optimization: Open MPI's configure gives C an
# -O and C++ none, so configure.m4 must (the generated Makefiles say what the
# compiler got: CXXFLAGS, then common_tca_CXXFLAGS).
optimized_flags() {
    tree=$(cat "$prefix/.tca-build-tree" 2>/dev/null) ||
        tree="$(dirname "$prefix")/build/$(basename "$prefix")/build"
    for d in opal/mca/common/tca opal/mca/btl/tca ompi/mca/coll/tca; do
        mk="$tree/$d/Makefile"
        [ -f "$mk" ] || { echo "no $mk"; return 1; }
        flags=$(sed -n -e 's/^CXXFLAGS = //p' -e 's/^common_tca_CXXFLAGS = //p' "$mk" | tr '\n' ' ')
        echo "$d: C++ flags: $flags"
        echo " $flags " | grep -Eq ' -O([1-3sz]|fast)? ' || { echo "$d: its C++ is compiled without optimization"; return 1; }
    done
}
say=1
check "the C++ core is compiled with optimization (the build's flags)" optimized_flags
# And it does not collapse against this clone built out of tree against the
# same Open MPI (build/ompi-in-tree's .libs alone on the component path): 8 B
# latency, best of 3 runs each, alternated, must be within 10x.  An
# unoptimized core (1.3-1.45x) is caught by the flags above and by ompi_info's
# build_optimized (the ompi_info case); how close the two builds come (the
# goal, 1.2x, judged here before: a timing of a loaded 2-core machine) is
# scripts/bench.sh --in-tree's, which reports it met or missed.
same_speed() {
    best_in="" best_out=""
    for i in 1 2 3; do
        a=$(timeout 60 mpirun --bind-to core -np 2 --mca pml ob1 --mca btl tca,self ./tca_mpi_bench latency8 2>&1 |
            awk '$1 == "RESULT" { print $4 }')
        b=$(OMPI_MCA_mca_base_component_path="$(pwd)/.libs" timeout 60 mpirun --bind-to core -np 2 --mca pml ob1 \
            --mca btl tca,self ./tca_mpi_bench latency8 2>&1 | awk '$1 == "RESULT" { print $4 }')
        [ -n "$a" ] && [ -n "$b" ] || { echo "a run failed (in tree '$a', out of tree '$b')"; return 1; }
        best_in=$(echo "$best_in $a" | tr ' ' '\n' | sed '/^$/d' | sort -g | head -1)
        best_out=$(echo "$best_out $b" | tr ' ' '\n' | sed '/^$/d' | sort -g | head -1)
    done
    echo "8 B latency, best of 3: in tree $best_in us, out of tree $best_out us"
    awk -v a="$best_in" -v b="$best_out" 'BEGIN { r = a / b
        printf "in tree / out of tree: %.2f (fails at 10: a collapse; the 1.2 goal: scripts/bench.sh --in-tree)\n", r
        exit !(r <= 10) }'
}
check "in tree does not collapse against out of tree (8 B latency within 10x)" same_speed
say=0

# MPI cases over Open MPI's own copy of the components.
IN_TREE_CASES=${IN_TREE_CASES:-"pingpong pingpong_copy_protocol persistent flood threads get_pingpong
 progress_thread_all peer_killed params_btl params_coll settings_precedence bcast_basic bcast_epochs bcast_without_btl_tca session_shared
 rma_lifetime_free_early rma_lifetime_shared_first rma_lifetime_list rma_lifetime_list_plain rma_conformance_dynamic"}
for c in $IN_TREE_CASES; do
    check "MPI case $c" env TCA_COMPONENT_DIR=ompi sh test/mpi/run_case.sh "test/mpi/cases/$c.mpi"
done
t3=$(date +%s)
echo "in-tree Open MPI 5.0 ($prefix): build or cache $((t1 - t0)) s, test programs $((t2 - t1)) s, tests $((t3 - t2)) s"
echo "$passed passed, $failed failed, 0 skipped"
[ "$failed" -eq 0 ]
