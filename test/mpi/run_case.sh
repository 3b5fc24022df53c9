#!/bin/sh
# run_case.sh CASE.mpi - one MPI test run over btl tca (automake log compiler).
# A case file sets NP, TEST (a sub-test of BIN, default tca_p2p_test), optionally MCA
# (extra mpirun arguments), MPMD (the app contexts instead of "-np NP ./BIN TEST", for ranks
# that differ), RUNS (the run repeated, every one checked; default 1),
# EXPECT_FAILURE (1: must fail; ended: must end, any status)/MAX_SECONDS, PASS_LINE=0 (a
# program that prints no "TEST: passed" line, judged by check_output alone), a check_output
# function over the run's output, or OMPI_INFO=1 for the parameter check, or
# PARAM_TABLE for one short run per row of hostile settings (see below), or
# CONFORMANCE_NPS for a one-sided conformance run on each of those numbers of
# ranks, judged against Open MPI's own transport (conformance_case.sh).
case_file=$1
srcdir=${srcdir:-.}
NP=2 TEST= MCA= MPMD= RUNS=1 EXPECT_FAILURE=0 MAX_SECONDS=300 OMPI_INFO=0 BIN=tca_p2p_test PARAM_TABLE= ROW_SECONDS=30
PASS_LINE=1
CONFORMANCE_NPS=
. "$case_file"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# The components of this build; TCA_COMPONENT_DIR=ompi: those of an Open MPI
# built with them in its source tree (scripts/test-in-tree.sh).
TCA_COMPONENT_DIR=${TCA_COMPONENT_DIR:-$(pwd)/.libs}
export TCA_COMPONENT_DIR
run="$srcdir/scripts/tca-mpirun"
ompi_info_here() { # ompi_info seeing the same components
    if [ "$TCA_COMPONENT_DIR" = ompi ]; then
        ompi_info "$@"
    else
        OMPI_MCA_mca_base_component_path="$TCA_COMPONENT_DIR" ompi_info "$@"
    fi
}

if [ "$OMPI_INFO" = 1 ]; then
    # Every btl tca parameter, ours and the common BTL ones, with help text.
    out=$(ompi_info_here --parsable --param btl tca --level 9)
    status=0
    # Every parameter of the core's table (tca-btl/btl_params.cpp), and the
    # flags the BTL base registers beside them.
    names=$(./tca_btl_param_names) || { echo "FAIL: tca_btl_param_names"; exit 1; }
    for p in $names flags; do
        help=$(echo "$out" | sed -n "s/^mca:btl:tca:param:btl_tca_$p:help://p")
        if [ -z "$help" ]; then echo "FAIL: btl_tca_$p missing or without help"; status=1; else echo "ok btl_tca_$p"; fi
    done
    echo "$out" | grep -q 'btl_tca_progress_thread:enumerator:value:1:on' || { echo "FAIL: thread modes not listed"; status=1; }
    echo "$out" | grep -q 'btl_tca_get_emulation:enumerator:value:2:all' || { echo "FAIL: get emulation modes not listed"; status=1; }
    # The C++ core was compiled with optimization (an in-tree build of Open
    # MPI gives C++ no -O of its own: configure.m4 must).
    echo "$out" | grep -q '^mca:btl:tca:param:btl_tca_build_optimized:value:true$' ||
        { echo "FAIL: btl tca's core built without optimization: $(echo "$out" | grep build_optimized:value)"; status=1; }
    # And every coll tca parameter.
    out=$(ompi_info_here --parsable --param coll tca --level 9)
    for p in build_optimized priority engine segment_size gpu_segment_size ucx_segment_size chain_threshold staging_size min_bytes \
        thread_takeover_us; do
        help=$(echo "$out" | sed -n "s/^mca:coll:tca:param:coll_tca_$p:help://p")
        if [ -z "$help" ]; then echo "FAIL: coll_tca_$p missing or without help"; status=1; else echo "ok coll_tca_$p"; fi
    done
    echo "$out" | grep -q 'coll_tca_engine:enumerator:value:.*:thread' || { echo "FAIL: engines not listed"; status=1; }
    echo "$out" | grep -q '^mca:coll:tca:param:coll_tca_build_optimized:value:true$' ||
        { echo "FAIL: coll tca's core built without optimization: $(echo "$out" | grep build_optimized:value)"; status=1; }
    # Every setting of libtca (tca_info -S lists its catalog) under both
    # components' names, with help, and set through either one.
    btl_out=$(ompi_info_here --parsable --param btl tca --level 9)
    settings=$(./tca_info -S | sed -n 's/^#   \(TCA_[A-Z0-9_]*\)  *\([a-z0-9_]*\) .*/\1:\2/p')
    [ -n "$settings" ] || { echo "FAIL: tca_info -S listed no settings"; status=1; }
    for s in $settings; do
        name=${s#*:}
        for fw in btl coll; do
            o=$btl_out; [ $fw = coll ] && o=$out
            echo "$o" | grep -q "^mca:$fw:tca:param:${fw}_tca_$name:help:..*(the environment variable ${s%%:*} where" ||
                { echo "FAIL: ${fw}_tca_$name (${s%%:*}) missing or without help"; status=1; }
        done
    done
    echo "ok $(echo "$settings" | wc -w) device settings under btl_tca_* and coll_tca_*"
    v=$(OMPI_MCA_coll_tca_timeout_ms=1234 ompi_info_here --parsable --param btl tca --level 9 |
        sed -n 's/^mca:btl:tca:param:btl_tca_timeout_ms:value://p')
    [ "$v" = 1234 ] || { echo "FAIL: coll_tca_timeout_ms=1234 shows as btl_tca_timeout_ms '$v'"; status=1; }
    # Every TCA_* variable the product reads is one of those settings, or one
    # that does not change what MPI does: placement (the session sets it
    # through tcaInitWithParams), help files of TCA programs, an old name,
    # test hooks, the switch of the MPI_Wtime shim a user preloads
    # (libtcawtime.so: outside Open MPI, before any component runs).
    not_mpi="TCA_NODE_ID TCA_NUM_NODES TCA_JOB_KEY TCA_HELP_DIR TCA_LINK_BANDWIDTH_MBS TCA_TEST_CUDA_ABI_BUILT TCA_COLL_TEST_FAIL TCA_WTIME_SYNC"
    for v in $(grep -rhoE '"TCA_[A-Z0-9_]+"' --include='*.c' --include='*.cpp' --include='*.h' --include='*.hpp' \
        "$srcdir/opal" "$srcdir/ompi" "$srcdir/tca-btl" "$srcdir/tca-coll" | tr -d '"' | sort -u); do
        case " $not_mpi $(echo "$settings" | sed 's/:[a-z0-9_]*//g' | tr '\n' ' ') " in
        *" $v "*) ;;
        *) echo "FAIL: the product reads $v, which is no MCA parameter (add it to the settings catalog)"; status=1 ;;
        esac
    done
    exit $status
fi

shm_before=$(mktemp)
ls /dev/shm 2>/dev/null | grep '^tca-' >"$shm_before"
if [ -n "$CONFORMANCE_NPS" ]; then
    # Every combination on each number of ranks, judged against the reference.
    export run
    (. "$srcdir/test/mpi/conformance_case.sh")
    status=$?
    left=$(sh "$srcdir/test/shm_left_behind.sh" "$shm_before") || { echo "FAIL: shared-memory segments left behind:"; echo "$left"; status=1; }
    rm -f "$shm_before"
    exit $status
fi
if [ -n "$PARAM_TABLE" ]; then
    # Rows "NAME VALUE OUTCOME PATTERN": run $BIN once with the MCA parameter
    # NAME (or, for TCA_*, the environment variable) set to VALUE (<empty>: "").
    # OUTCOME fail: the job must fail, within ROW_SECONDS; decline: it must
    # pass (the component steps aside, the next one does the work, the data
    # is checked); ok: it must pass without a complaint.  fail and decline
    # must print PATTERN (the parameter's name), ok must not print "cannot use".
    table=$(mktemp) out=$(mktemp)
    printf '%s\n' "$PARAM_TABLE" >"$table"
    status=0 rows=0
    while read -r name value outcome pattern; do
        case "$name" in ''|'#'*) continue ;; esac
        [ "$value" = "<empty>" ] && value=
        case "$name" in TCA_*) var=$name ;; *) var=OMPI_MCA_$name ;; esac
        rows=$((rows + 1))
        start=$(date +%s)
        # shellcheck disable=SC2086
        env "$var=$value" timeout "$ROW_SECONDS" "$run" --oversubscribe --bind-to none $MCA -np "$NP" "./$BIN" \
            </dev/null >"$out" 2>&1  # mpirun would read the table
        rc=$?
        elapsed=$(($(date +%s) - start))
        named=0
        grep -q -e "$pattern" "$out" && named=1
        passed=0
        [ $rc -eq 0 ] && grep -q "passed" "$out" && passed=1
        why=
        case "$outcome" in
        fail)
            [ $rc -ne 0 ] || why="the job should have failed"
            [ $rc -ne 124 ] || why="the job hung"
            [ $named = 1 ] || why="${why:+$why; }no message naming $pattern" ;;
        decline)
            [ $passed = 1 ] || why="the job should have passed (exit $rc)"
            [ $named = 1 ] || why="${why:+$why; }no message naming $pattern" ;;
        ok)
            [ $passed = 1 ] || why="the job should have passed (exit $rc)"
            ! grep -q "cannot use" "$out" || why="${why:+$why; }a valid value was refused" ;;
        *) why="unknown outcome '$outcome' in $case_file" ;;
        esac
        if [ -n "$why" ]; then
            echo "FAIL: $var='$value' ($outcome): $why; output:"
            sed 's/^/    /' "$out"
            status=1
        else
            echo "ok   $var='$value' ($outcome, exit $rc, ${elapsed}s)"
        fi
    done <"$table"
    rm -f "$table" "$out"
    echo "$rows rows"
    left=$(sh "$srcdir/test/shm_left_behind.sh" "$shm_before") || { echo "FAIL: shared-memory segments left behind:"; echo "$left"; status=1; }
    rm -f "$shm_before"
    exit $status
fi

out=$(mktemp)
status=0
run_no=0
while [ $run_no -lt "$RUNS" ]; do
    run_no=$((run_no + 1))
    [ "$RUNS" -eq 1 ] || echo "--- run $run_no of $RUNS"
    start=$(date +%s)
    # shellcheck disable=SC2086
    if [ -n "$MPMD" ]; then
        timeout 600 "$run" --oversubscribe --bind-to none $MCA $MPMD >"$out" 2>&1
    else
        timeout 600 "$run" --oversubscribe --bind-to none $MCA -np "$NP" "./$BIN" "$TEST" >"$out" 2>&1
    fi
    rc=$?
    elapsed=$(($(date +%s) - start))
    cat "$out"
    echo "exit status $rc after ${elapsed}s"
    if [ "$EXPECT_FAILURE" = 1 ] || [ "$EXPECT_FAILURE" = ended ]; then
        # ended: the job must end in time; its exit status is the launcher's
        # (mpirun --enable-recovery reports 0 after a process aborted).
        [ $rc -ne 0 ] || [ "$EXPECT_FAILURE" = ended ] || { echo "FAIL: the job should have failed"; status=1; }
        [ $rc -ne 124 ] || { echo "FAIL: the job hung"; status=1; }
        [ "$elapsed" -le "$MAX_SECONDS" ] || { echo "FAIL: took ${elapsed}s (limit ${MAX_SECONDS}s)"; status=1; }
    else
        [ $rc -eq 0 ] || status=1
        [ "$PASS_LINE" = 0 ] || grep -q "^$TEST: passed" "$out" || { echo "FAIL: no pass line"; status=1; }
    fi
    if command -v check_output >/dev/null 2>&1; then check_output "$out" || status=1; fi
done
left=$(sh "$srcdir/test/shm_left_behind.sh" "$shm_before") || { echo "FAIL: shared-memory segments left behind:"; echo "$left"; status=1; }
rm -f "$out" "$shm_before"
exit $status
