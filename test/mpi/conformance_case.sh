#!/bin/sh
# conformance_case.sh - one rma_conformance_*.mpi case (run_case.sh hands
# over when a case sets CONFORMANCE_NPS): $BIN $TEST on each of those numbers
# of ranks over btl tca; where anything fails, the same run over Open MPI's
# own shared-memory transport (vader on 4.1, sm on 5.0: the reference), so
# that a failure says whose it is.  Passes when btl tca fails nothing the
# reference does not fail as well; what fails over both is listed as Open
# MPI's own.  Environment as run_case.sh leaves it (NP, MCA, run, ...).
status=0
ref_btl=vader
[ "${OMPI_MAJOR:-4}" -ge 5 ] && ref_btl=sm
out=$(mktemp) ref=$(mktemp) mine=$(mktemp) theirs=$(mktemp)
# The combinations that failed, one per line (ranks and reasons dropped).
failed_combos() { sed -n 's/^FAILED \(.*\): rank [0-9]*: .*/\1/p' "$1" | sort -u; }
completed() { grep -q "^$TEST: [0-9]* combinations" "$1"; }
first_error() { grep -m1 -e 'error occurred in' -e 'MPI_ERR' -e 'FAIL' "$1" || tail -1 "$1"; }
for np in $CONFORMANCE_NPS; do
    start=$(date +%s)
    # shellcheck disable=SC2086
    timeout 600 "$run" --oversubscribe --bind-to none --mca btl_base_verbose 5 $MCA -np "$np" \
        "./$BIN" "$TEST" >"$out" 2>&1
    rc=$?
    summary=$(grep "^$TEST: [0-9]* combinations, " "$out")
    echo "np $np over btl tca: exit $rc after $(($(date +%s) - start)) s: ${summary:-did not finish}"
    # osc rdma ran on btl tca where it carries the window (its atomics are ours).
    case $TEST in create | dynamic)
        if [ "$np" -ge 2 ] && completed "$out"; then
            ran=$(sed -n 's/.*btl:tca: node [0-9]* ran \([0-9]*\) atomics for peers.*/\1/p' "$out" |
                awk '{s += $1} END {print s + 0}')
            [ "$ran" -gt 0 ] || { echo "FAIL: np $np: no atomic ran over btl tca (osc rdma not on it?)"; status=1; }
        fi ;;
    esac
    if [ $rc -eq 0 ] && completed "$out" && ! grep -q '^FAILED ' "$out"; then
        continue
    fi
    # Something failed: the reference decides whose it is.
    # shellcheck disable=SC2086
    timeout 600 "$run" --oversubscribe --bind-to none --mca btl "$ref_btl,self" -np "$np" \
        "./$BIN" "$TEST" >"$ref" 2>&1
    ref_rc=$?
    echo "np $np over $ref_btl (reference): exit $ref_rc: $(grep "^$TEST: [0-9]* combinations" "$ref" || echo did not finish)"
    if [ $rc -ne 0 ] || ! completed "$out"; then
        if [ $ref_rc -ne 0 ] || ! completed "$ref"; then
            echo "np $np: fails over $ref_btl too (Open MPI's own): $(first_error "$ref")"
        else
            echo "FAIL: np $np: btl tca's run did not finish, the reference's did: $(first_error "$out")"
            grep -v '^\[.*btl:tca' "$out" | tail -20 | sed 's/^/    /'
            status=1
        fi
        continue
    fi
    failed_combos "$out" >"$mine"
    failed_combos "$ref" >"$theirs"
    only_tca=$(comm -23 "$mine" "$theirs")
    both=$(comm -12 "$mine" "$theirs" | wc -l)
    [ "$both" -eq 0 ] || {
        echo "np $np: $both combinations fail over $ref_btl too (Open MPI's own), by operation and type:"
        comm -12 "$mine" "$theirs" | awk '{print "    " $1 " " $2 " " $4}' | sort | uniq -c
    }
    if [ -n "$only_tca" ]; then
        echo "FAIL: np $np: $(echo "$only_tca" | wc -l) combinations fail over btl tca only:"
        echo "$only_tca" | head -40 | sed 's/^/    /'
        grep '^FAILED ' "$out" | head -20 | sed 's/^/    /'
        status=1
    fi
done
rm -f "$out" "$ref" "$mine" "$theirs"
exit $status
