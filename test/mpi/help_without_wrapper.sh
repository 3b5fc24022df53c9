#!/bin/sh
# help_without_wrapper.sh - the components' messages reach the user when they
# are used from the build tree without scripts/tca-mpirun, as the README's
# "without the wrapper" line does: plain mpirun, Open MPI's own component
# directories plus <build>/.libs on mca_base_component_path, no TCA_HELP_DIR.
# A value each component refuses must print its own help text (not Open MPI's
# "couldn't open the help file").  Then the same from a copy of .libs in a
# directory of its own (a build tree elsewhere): the components must find the
# help files of the build they came from, not of the working directory.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
unset TCA_HELP_DIR TCA_COMPONENT_DIR OMPI_MCA_mca_base_component_path
build=$(pwd)
[ -f "$build/.libs/mca_btl_tca.so" ] || { echo "FAIL: $build/.libs/mca_btl_tca.so not built"; exit 1; }
[ -x "$build/tca_p2p_test" ] || { echo "FAIL: $build/tca_p2p_test not built"; exit 1; }
default=$(ompi_info --parsable --param mca base --level 9 2>/dev/null |
    sed -n 's/^mca:mca:base:param:mca_base_component_path:value:"\{0,1\}\([^"]*\)"\{0,1\}$/\1/p')
# Open MPI stops at a directory that does not exist: keep the existing ones.
path=""
old_ifs=$IFS; IFS=:
for d in $default; do
    [ -d "$d" ] && path="$path$d:"
done
IFS=$old_ifs
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
status=0

# run COMPONENT_DIR WHAT PATTERN MCA...: a refusal must print PATTERN.
run() {
    dir=$1 what=$2 pattern=$3
    shift 3
    # Run from elsewhere: nothing may depend on the working directory.
    (cd "$tmp" && timeout 120 mpirun --oversubscribe --bind-to none --mca mca_base_component_path "$path$dir" \
        --mca pml ob1 "$@" -np 2 "$build/tca_p2p_test" pingpong) </dev/null >"$tmp/out" 2>&1
    rc=$?
    why=
    [ $rc -ne 124 ] || why="the job hung"
    grep -q "$pattern" "$tmp/out" || why="${why:+$why; }no '$pattern'"
    ! grep -q "couldn't open the help file" "$tmp/out" || why="${why:+$why; }Open MPI could not open the help file"
    if [ -n "$why" ]; then
        echo "FAIL: $what: $why; output:"
        sed 's/^/    /' "$tmp/out" | head -40
        status=1
    else
        echo "ok: $what"
    fi
}

for dir in "$build/.libs" "$tmp/elsewhere/.libs"; do
    if [ "$dir" != "$build/.libs" ]; then
        # A build tree elsewhere: its .libs next to its own help files.
        mkdir -p "$dir" "$tmp/elsewhere/opal/mca/btl/tca" "$tmp/elsewhere/ompi/mca/coll/tca"
        cp "$build/.libs/mca_btl_tca.so" "$build/.libs/mca_coll_tca.so" "$dir/"
        cp "$build"/.libs/libtca.so* "$dir/" 2>/dev/null
        sed 's/btl tca cannot use:/btl tca (elsewhere) cannot use:/' "${srcdir:-.}/opal/mca/btl/tca/help-btl-tca.txt" \
            >"$tmp/elsewhere/opal/mca/btl/tca/help-btl-tca.txt"
        sed 's/coll tca cannot use:/coll tca (elsewhere) cannot use:/' "${srcdir:-.}/ompi/mca/coll/tca/help-coll-tca.txt" \
            >"$tmp/elsewhere/ompi/mca/coll/tca/help-coll-tca.txt"
        tag=" (elsewhere)"
    else
        tag=""
    fi
    run "$dir" "btl tca from $dir" "has a value btl tca$tag cannot use" \
        --mca btl tca,self --mca btl_tca_poll_batch 0
    run "$dir" "coll tca from $dir" "has a value coll tca$tag cannot use" \
        --mca btl self,vader --mca coll_tca_engine bogus
done
exit $status
