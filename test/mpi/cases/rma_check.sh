# rma_check.sh - sourced by the rma_*.mpi cases: the one-sided traffic must
# have run over btl tca, not beside it.  Each rank's btl tca reports at
# finalize (btl_base_verbose 5) the atomics it ran for peers and its own never
# answered, and the gets it served; only osc rdma calls a BTL's atomics, so
# atomics run by btl tca show osc rdma ran on it.
# RMA_EXPECT_GETS=1: emulated gets were served too.
BIN=tca_rma_test
MCA="--mca btl_base_verbose 5 --mca osc_base_verbose 40 ${MCA:-}"
check_output() {
    # 5.0 names the osc component of every window (MPI_Win_allocate on one
    # host is osc sm's, by Open MPI's choice) and the BTL of osc rdma's native
    # path (4.1 prints neither in a release build).
    if grep -q 'select: component [a-z]* selected' "$1"; then
        other=$(grep -o 'select: component [a-z]* selected' "$1" | grep -v -e 'component rdma' -e 'component sm' | head -1)
        [ -z "$other" ] || { echo "FAIL: $other"; return 1; }
        grep -q 'select: component rdma selected' "$1" || { echo "FAIL: osc rdma never selected"; return 1; }
        if grep -q 'could not find an accelerated btl' "$1" ||
            ! grep -q 'accelerated_query: selected btl: tca' "$1"; then
            echo "FAIL: osc rdma did not take btl tca for its native path"
            return 1
        fi
    fi
    awk -v np="$NP" -v gets="${RMA_EXPECT_GETS:-0}" '
        /btl:tca: node [0-9]+ ran [0-9]+ atomics for peers/ {
            for (i = 1; i < NF; i++) {
                if ($i == "ran") ran += $(i + 1)
                if ($i == "of" && $(i + 1) == "its") unanswered += $(i - 1)
            }
            ranks++
        }
        /btl:tca: node [0-9]+ served [0-9]+ emulated gets/ {
            for (i = 1; i < NF; i++) if ($i == "served") served += $(i + 1)
        }
        END {
            if (ranks != np) { printf "FAIL: %d of %d ranks reported their atomics\n", ranks, np; exit 1 }
            if (unanswered != 0) { printf "FAIL: %d atomics never answered\n", unanswered; exit 1 }
            if (ran == 0) { print "FAIL: no atomic ran over btl tca (osc rdma not on it?)"; exit 1 }
            if (gets && served == 0) { print "FAIL: no get was emulated"; exit 1 }
            printf "ok: %d atomics and %d gets run over btl tca, none unanswered\n", ran, served
        }' "$1"
}
