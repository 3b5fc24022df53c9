#!/bin/sh
# build-ompi.sh SERIES [PREFIX] - a CUDA-aware Open MPI of a Debian release's
# version, built from that release's source package, for
# ./configure --with-ompi=PREFIX.  The install prefix is the last line printed.
#
#   4.1   bookworm's version (the one this machine runs: libopenmpi-dev)
#   5.0   trixie's version (5.0.x; trixie's binaries need trixie's libc)
#
# Open MPI's own fixes this project carries, scripts/ompi-patches/SERIES-*.patch,
# are applied to the source first (each says what it fixes).
#
# PREFIX defaults to an install kept in a cache outside the clone,
#   ${TCA_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/tca}/openmpi-<version>-cuda-<flags hash>,
# so fresh clones and CI pay for the build once per machine.  Idempotent: an
# install made with the same version and flags (its stamp file) is reused.
#
# With TCA_OMPI_IN_TREE=1 (5.0 only) the components of this clone are put
# into Open MPI's source tree first (scripts/ompi-in-tree.sh) and built by
# Open MPI's own autogen.pl/configure/make as DSOs: the prefix then ends in
# -tca-<hash of the in-tree build files>, and its build tree stays in the
# cache, so that a later call only rebuilds and reinstalls the three
# component directories from this clone's sources (minutes, not a rebuild).
#
# Source: a tarball already under ompi-src/ in the clone (or in the cache's
# src/) is used as is - a machine without registry access builds from a
# carried copy; otherwise `apt-get source` through a private apt
# configuration that leaves the system's sources alone.
#
# Environment: CUDA_HOME (default /usr/local/cuda), JOBS (default nproc).
set -eu

top=$(cd "$(dirname "$0")/.." && pwd)
series=${1:-}
cuda=${CUDA_HOME:-/usr/local/cuda}
jobs=${JOBS:-$(nproc)}
cache=${TCA_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/tca}
in_tree=${TCA_OMPI_IN_TREE:-0}
say() { echo "build-ompi $series: $*" >&2; }

case $series in
4.1) suite=bookworm ;;
5.0) suite=trixie ;;
*) echo "usage: build-ompi.sh 4.1|5.0 [PREFIX]" >&2; exit 2 ;;
esac
[ "$in_tree" = 0 ] || [ "$series" = 5.0 ] || { say "TCA_OMPI_IN_TREE=1 is for 5.0 only"; exit 2; }
if [ ! -f "$cuda/include/cuda.h" ]; then
    say "no CUDA toolkit at $cuda (set CUDA_HOME)"
    exit 1
fi

# A tarball of the series in the clone or the cache (the newest), if any.
find_tarball() {
    for dir in "$top/ompi-src" "$cache/src"; do
        # shellcheck disable=SC2012
        ls "$dir"/openmpi_"$1"*.orig.tar.* "$dir"/openmpi-"$1"*.tar.* 2>/dev/null | sort -V | tail -1
    done | head -1
}

fetch_source() { # suite package-spec
    apt_dir=$(mktemp -d "${TMPDIR:-/tmp}/tca-apt.XXXXXX")
    mkdir -p "$apt_dir/lists/partial" "$cache/src"
    echo "deb-src [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian $1 main" \
        >"$apt_dir/sources.list"
    apt_opts="-q -o Dir::Etc::SourceList=$apt_dir/sources.list -o Dir::Etc::SourceParts=/dev/null \
-o Dir::State::Lists=$apt_dir/lists -o APT::Sandbox::User=root"
    say "fetching the source package $2 from $1 (private apt configuration)"
    # shellcheck disable=SC2086
    if ! { apt-get $apt_opts update && (cd "$cache/src" && apt-get $apt_opts source --download-only "$2"); } \
        >"$apt_dir/apt.log" 2>&1; then
        cat "$apt_dir/apt.log" >&2
        rm -rf "$apt_dir"
        exit 1
    fi
    rm -rf "$apt_dir"
}

if [ "$series" = 4.1 ]; then
    # Exactly the version this machine runs (Debian's source version).
    src_version=$(dpkg-query -W -f='${source:Version}' libopenmpi-dev 2>/dev/null || true)
    if [ -z "$src_version" ]; then
        say "libopenmpi-dev is not installed (scripts/install-deps.sh installs it)"
        exit 1
    fi
    upstream=${src_version%-*}  # 4.1.4-3 -> 4.1.4
    upstream=${upstream#*:}
    tarball=$(find_tarball "$upstream")
    [ -n "$tarball" ] || { fetch_source bookworm "openmpi=$src_version"; tarball=$(find_tarball "$upstream"); }
else
    tarball=$(find_tarball 5.0)
    [ -n "$tarball" ] || { fetch_source trixie openmpi; tarball=$(find_tarball 5.0); }
fi
[ -n "$tarball" ] || { say "no Open MPI $series source tarball"; exit 1; }
upstream=$(basename "$tarball" | sed -n 's/^openmpi[_-]\([0-9][0-9.]*[0-9]\).*/\1/p')

# Only what a single host needs; internal hwloc/libevent/PMIx (and PRRTE) so
# the result does not depend on which -dev packages happen to be installed.
# 5.0 keeps pml ucx (Debian's UCX), the transport its benchmarks compare with.
common="--with-cuda=$cuda --with-devel-headers --with-hwloc=internal --with-libevent=internal \
--with-pmix=internal --without-ofi --disable-mpi-fortran --disable-oshmem --disable-io-romio --disable-static"
if [ "$series" = 4.1 ]; then
    flags="$common --without-ucx --without-verbs \
--enable-mca-no-build=btl-openib,btl-usnic,btl-uct,btl-ofi,mtl-ofi,pml-ucx,osc-ucx,spml-ucx,coll-hcoll,coll-fca"
else
    flags="$common --with-prrte=internal --with-ucx \
--enable-mca-no-build=btl-usnic,btl-uct,btl-ofi,mtl-ofi,mtl-psm2,osc-ucx,coll-hcoll,coll-ucc"
fi
kind=cuda
if [ "$in_tree" != 0 ]; then
    kind=cuda-tca
    flags="$flags --with-tca"
    # The in-tree build files decide what autogen.pl/configure make of the
    # components; their sources are rebuilt incrementally below.
    tree_hash=$(sh "$top/scripts/ompi-in-tree.sh" --build-files-hash)
fi
# Fixes of Open MPI's own that this project carries (scripts/ompi-patches/
# SERIES-*.patch, applied to the source before it is configured; each says
# what it fixes): part of the build's identity.
patches=$(ls "$top"/scripts/ompi-patches/"$series"-*.patch 2>/dev/null || true)
patches_hash=
[ -z "$patches" ] || patches_hash=$(cat $patches | sha256sum | cut -c1-12)
stamp_text="openmpi $upstream ($(basename "$tarball"))
$flags${tree_hash:+
in-tree build files $tree_hash}${patches_hash:+
patches $patches_hash}"
hash=$(printf '%s' "$stamp_text" | sha256sum | cut -c1-12)
prefix=${2:-$cache/openmpi-$upstream-$kind-$hash}
buildtree="$cache/build/openmpi-$upstream-$kind-$hash"

if [ -f "$prefix/.tca-build-stamp" ] && [ "$(cat "$prefix/.tca-build-stamp")" = "$stamp_text" ] &&
    [ -x "$prefix/bin/mpicc" ]; then
    if [ "$in_tree" != 0 ]; then
        # Same build files: copy this clone's component sources in and let
        # Open MPI's make rebuild and reinstall just those directories.
        srcdir=$(cat "$buildtree/.srcdir")
        sh "$top/scripts/ompi-in-tree.sh" "$srcdir" >&2
        for d in opal/mca/common/tca opal/mca/btl/tca ompi/mca/coll/tca; do
            make -C "$buildtree/build/$d" -j"$jobs" install >"$buildtree/incremental.log" 2>&1 ||
                { tail -40 "$buildtree/incremental.log" >&2; say "rebuilding $d failed"; exit 1; }
        done
        say "Open MPI $upstream with the components in its tree: rebuilt them in $buildtree"
    else
        say "Open MPI $upstream (CUDA) already installed in $prefix"
    fi
    echo "$prefix"
    exit 0
fi

started=$(date +%s)
if [ "$in_tree" != 0 ]; then
    # Builds made from other in-tree build files cannot be reused: they go.
    for old in "$cache"/build/openmpi-"$upstream"-"$kind"-* "$cache"/openmpi-"$upstream"-"$kind"-*; do
        [ -e "$old" ] && [ "$old" != "$prefix" ] && rm -rf "$old"
    done
    rm -rf "$buildtree"
    work=$buildtree
    mkdir -p "$work"
else
    work=$(mktemp -d "${TMPDIR:-/tmp}/tca-ompi-build.XXXXXX")
    trap 'rm -rf "$work"' EXIT
fi
say "building Open MPI $upstream with CUDA from $tarball into $prefix ($jobs jobs)"
tar -C "$work" -xf "$tarball"
srcdir=$(find "$work" -mindepth 1 -maxdepth 1 -type d -name "openmpi-$upstream*" | head -1)
echo "$srcdir" >"$work/.srcdir"
for p in $patches; do
    patch -d "$srcdir" -p1 --forward <"$p" >&2 || { say "$(basename "$p") does not apply"; exit 1; }
done
if [ "$in_tree" != 0 ]; then
    sh "$top/scripts/ompi-in-tree.sh" "$srcdir" >&2
    (cd "$srcdir" && ./autogen.pl --force) >"$work/autogen.log" 2>&1 ||
        { tail -40 "$work/autogen.log" >&2; say "autogen.pl failed"; exit 1; }
fi
mkdir -p "$work/build"
cd "$work/build"
# shellcheck disable=SC2086
"$srcdir/configure" --prefix="$prefix" $flags >"$work/configure.log" 2>&1 ||
    { tail -40 "$work/configure.log" >&2; say "configure failed"; exit 1; }
make -j"$jobs" >"$work/make.log" 2>&1 || { tail -60 "$work/make.log" >&2; say "make failed"; exit 1; }
make install >"$work/install.log" 2>&1 || { tail -40 "$work/install.log" >&2; exit 1; }
printf '%s' "$stamp_text" >"$prefix/.tca-build-stamp"
# Where the in-tree build's Makefiles are (scripts/test-in-tree.sh reads the
# flags the components were compiled with there).
[ "$in_tree" = 0 ] || echo "$buildtree/build" >"$prefix/.tca-build-tree"

if ! "$prefix/bin/ompi_info" --parsable --all 2>/dev/null | grep -q 'mpi_built_with_cuda_support:value:true'; then
    say "the result is not CUDA-aware (ompi_info)"
    exit 1
fi
elapsed=$(($(date +%s) - started))
say "done in $((elapsed / 60)) min $((elapsed % 60)) s"
echo "$prefix"
