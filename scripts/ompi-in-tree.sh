#!/bin/sh
# ompi-in-tree.sh OMPI_SRC - put btl tca, coll tca and the TCA device layer
# into an unpacked Open MPI 5.0.x source tree, as Open MPI's own components
# sit there:
#
#   opal/mca/common/tca   libtca, the TCA session (libmca_common_tca), the ucx device
#   opal/mca/btl/tca      btl tca, its protocol core (tca-btl/) in core/
#   ompi/mca/coll/tca     coll tca, its planner and engines (tca-coll/) in core/
#
# each with the configure.m4 and Makefile.am Open MPI's build reads.  Then, in
# OMPI_SRC:  ./autogen.pl && ./configure [--with-tca] ... && make install
# builds and installs them as DSOs (--without-tca leaves them out; without a
# C++20 compiler they are skipped with a warning).
#
# Only files whose contents changed are copied, so that after a first build
# `make install` in those three directories rebuilds what changed.  Files that
# decide what autogen.pl and configure make of the components (configure.m4,
# Makefile.am, sources.am) need autogen.pl and configure again:
#
# ompi-in-tree.sh --build-files-hash   prints a hash of those files
# (scripts/build-ompi.sh keys its cached in-tree build on it).
set -eu

top=$(cd "$(dirname "$0")/.." && pwd)

# component directory in Open MPI's tree <- directories of this tree (the
# first one's files at the top, the second's in core/)
mapping="opal/mca/common/tca:opal/mca/common/tca:
opal/mca/btl/tca:opal/mca/btl/tca:tca-btl
ompi/mca/coll/tca:ompi/mca/coll/tca:tca-coll"

# The sources of one directory of this tree (no build products): what git
# tracks there, or, outside a git checkout (a release tarball), the files of
# the kinds a component is made of.
files_of() {
    if git -C "$top" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
        (cd "$top/$1" && git ls-files -co --exclude-standard .)
    else
        (cd "$top/$1" && find . -type f \( -name '*.c' -o -name '*.h' -o -name '*.cpp' -o -name '*.hpp' \
            -o -name '*.am' -o -name '*.m4' -o -name '*.map' -o -name '*.txt' -o -name '*.in' \) | sed 's|^\./||')
    fi | grep -v -e '^Makefile\.inc$' -e '/Makefile\.inc$' | sort
}

if [ "${1:-}" = "--build-files-hash" ]; then
    for d in opal/mca/common/tca opal/mca/btl/tca ompi/mca/coll/tca tca-btl tca-coll; do
        for f in $(files_of "$d" | grep -e 'configure\.m4$' -e 'Makefile\.am$' -e 'sources\.am$'); do
            printf '%s\n' "$d/$f"
            cat "$top/$d/$f"
        done
    done | sha256sum | cut -c1-12
    exit 0
fi

src=${1:-}
if [ -z "$src" ] || [ ! -f "$src/opal/mca/btl/btl.h" ] || [ ! -f "$src/ompi/mca/coll/coll.h" ]; then
    echo "usage: ompi-in-tree.sh OMPI_SRC (an unpacked Open MPI 5.0.x source tree) | --build-files-hash" >&2
    exit 2
fi
version=$(sed -n 's/^major=//p' "$src/VERSION" 2>/dev/null).$(sed -n 's/^minor=//p' "$src/VERSION" 2>/dev/null)
case $version in
5.0) ;;
*) echo "ompi-in-tree: $src is Open MPI $version; the in-tree build files are made for 5.0" >&2; exit 1 ;;
esac

copied=0
copy_dir() { # from (this tree) to (Open MPI's tree)
    for f in $(files_of "$1"); do
        mkdir -p "$(dirname "$2/$f")"
        if ! cmp -s "$top/$1/$f" "$2/$f"; then
            cp "$top/$1/$f" "$2/$f"
            copied=$((copied + 1))
        fi
    done
}

echo "$mapping" | while IFS=: read -r dest own core; do
    copied=0
    copy_dir "$own" "$src/$dest"
    [ -z "$core" ] || copy_dir "$core" "$src/$dest/core"
    echo "ompi-in-tree: $dest: $copied files updated"
done
echo "ompi-in-tree: now, in $src: ./autogen.pl && ./configure ... && make install" \
    "(after a first build, changed sources need only make install in those directories)"
