#!/bin/sh
# component_boundaries.sh - neither component includes a header of the other:
# btl tca (opal/mca/btl/tca, tca-btl/) and coll tca (ompi/mca/coll/tca,
# tca-coll/) meet only in the common layer (opal/mca/common/tca: libtca and the
# TCA session).  Also: coll tca's objects name no btl tca symbol.
srcdir=${srcdir:-.}
status=0
check() {  # check DIRS... -- PATTERN WHAT
    dirs=
    while [ "$1" != -- ]; do dirs="$dirs $srcdir/$1"; shift; done
    pattern=$2 what=$3
    # shellcheck disable=SC2086
    hits=$(grep -nE "^[[:space:]]*#[[:space:]]*include[[:space:]]*[<\"][^>\"]*($pattern)" $(find $dirs -name '*.[ch]' -o -name '*.[ch]pp' | sort))
    if [ -n "$hits" ]; then
        echo "FAIL: $what:"
        echo "$hits"
        status=1
    else
        echo "ok: $what"
    fi
}
check ompi/mca/coll/tca tca-coll -- 'btl_tca|tca-btl/|btl/tca/|tca_btl_core|eager_ring|peer_area|progress_thread' \
    "coll tca includes no btl tca header"
check opal/mca/btl/tca tca-btl -- 'coll_tca|tca-coll/|coll/tca/|tca_coll_core|bcast_' \
    "btl tca includes no coll tca header"
if [ -f .libs/mca_coll_tca.so ]; then
    if nm -D --undefined-only .libs/mca_coll_tca.so | grep -q 'mca_btl_tca'; then
        echo "FAIL: mca_coll_tca.so needs btl tca symbols:"
        nm -D --undefined-only .libs/mca_coll_tca.so | grep 'mca_btl_tca'
        status=1
    else
        echo "ok: mca_coll_tca.so needs no btl tca symbol"
    fi
fi
exit $status
