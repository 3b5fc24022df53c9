# get_check.sh - sourced by the get_*.mpi cases: each rank's btl tca reports
# at finalize (btl_base_verbose 5) how many emulated gets it served and how
# many of its own were never answered.  GET_EXPECT=some (default): all ranks
# report, none has an unanswered get, and gets were served; none: no get ran.
# The cases set btl_tca_min_rdma_pipeline_size to Open MPI's default (98304):
# where single copy is off (their .bounce runs) btl tca would otherwise send
# every host message by copy through its rings, and no get would run.
GET_EXPECT=${GET_EXPECT:-some}
check_output() {
    awk -v np="$NP" -v expect="$GET_EXPECT" '
        /btl:tca: node [0-9]+ served [0-9]+ emulated gets/ {
            for (i = 1; i < NF; i++) {
                if ($i == "served") served += $(i + 1)
                if ($i == "of" && $(i + 1) == "its") unanswered += $(i - 1)
            }
            ranks++
        }
        END {
            if (ranks != np) { printf "FAIL: %d of %d ranks reported their gets\n", ranks, np; exit 1 }
            if (unanswered != 0) { printf "FAIL: %d gets never answered\n", unanswered; exit 1 }
            if (expect == "some" && served == 0) { print "FAIL: no get was emulated"; exit 1 }
            if (expect == "none" && served != 0) { printf "FAIL: %d gets without get emulation\n", served; exit 1 }
            printf "ok: %d emulated gets served, none unanswered\n", served
        }' "$1"
}
