#!/bin/sh
# header_order.sh - compat/openmpi's fint_2_int.h is only a fallback: an
# installed Open MPI's own header wins.  Preprocesses with coll tca's flags
# (COLL_TCA_CPP, OMPI_INCDIR from the Makefile): once as built here, once with
# a stand-in "installed" header put where Open MPI's headers are searched.
: "${COLL_TCA_CPP:?run from make check}" "${OMPI_INCDIR:?run from make check}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
status=0

# which FLAGS...: which fint_2_int.h the flags pick (installed, compat or stand-in)
which() {
    printf '%s\n' '#include "ompi/mpi/fortran/base/fint_2_int.h"' \
        '#if defined(TCA_STAND_IN_FINT_2_INT_H)' 'picked=stand-in' \
        '#elif defined(TCA_COMPAT_FINT_2_INT_H)' 'picked=compat' \
        '#else' 'picked=installed' '#endif' >"$tmp/probe.c"
    # shellcheck disable=SC2068
    $@ "$tmp/probe.c" 2>"$tmp/err" | sed -n 's/^picked=//p'
}

if [ -f "$OMPI_INCDIR/ompi/mpi/fortran/base/fint_2_int.h" ]; then want=installed; else want=compat; fi
got=$(which $COLL_TCA_CPP)
if [ "$got" = "$want" ]; then echo "ok: as built, the $got header is used"
else echo "FAIL: as built, got '$got', expected the $want header"; cat "$tmp/err"; status=1; fi

# An Open MPI that installs the header: put a stand-in next to Open MPI's
# headers (same search position) and check it beats the compat copy.
mkdir -p "$tmp/inc/ompi/mpi/fortran/base"
echo '#define TCA_STAND_IN_FINT_2_INT_H 1' >"$tmp/inc/ompi/mpi/fortran/base/fint_2_int.h"
flags=$(printf '%s\n' "$COLL_TCA_CPP" | sed "s|-I$OMPI_INCDIR |-I$tmp/inc -I$OMPI_INCDIR |")
if [ "$flags" = "$COLL_TCA_CPP" ]; then
    echo "FAIL: -I$OMPI_INCDIR not found in coll tca's flags: $COLL_TCA_CPP"; status=1
else
    got=$(which $flags)
    if [ "$got" = stand-in ]; then echo "ok: an installed header beats the compat copy"
    else echo "FAIL: with an installed header, got the '$got' one (compat/openmpi shadows Open MPI)"; cat "$tmp/err"; status=1; fi
fi
exit $status
