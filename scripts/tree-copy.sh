#!/bin/sh
# tree-copy.sh DEST CONFIGURE-ARGS... - a copy of this working tree (tracked
# and untracked-but-not-ignored files, so local changes are tested too) in
# DEST, configured with CONFIGURE-ARGS (again only when they changed) and
# built.  The source tree itself is configured for the system's Open MPI, and
# automake allows one configuration per source directory.  Prints DEST's
# absolute path last.
set -e
cd "$(dirname "$0")/.."
dest=$1
shift
mkdir -p "$dest"
git ls-files -co --exclude-standard -z | xargs -0 tar -cf - | (cd "$dest" && tar -xpf -)
cd "$dest"
[ -x configure ] || ./autogen.sh >autogen.out 2>&1 || { tail -30 autogen.out >&2; exit 1; }
if [ ! -f config.status ] || [ "$(cat .configured-with 2>/dev/null)" != "$*" ]; then
    # Objects built against another Open MPI are not newer than their
    # sources (tar keeps the sources' times): they must go.
    [ ! -f Makefile ] || make clean >/dev/null 2>&1 || true
    ./configure "$@" >configure.out 2>&1 || { tail -30 configure.out >&2; exit 1; }
    echo "$*" >.configured-with
fi
make -j"$(nproc)" >make.out 2>&1 || { tail -40 make.out >&2; exit 1; }
pwd
