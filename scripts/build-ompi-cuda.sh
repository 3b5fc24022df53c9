#!/bin/sh
# build-ompi-cuda.sh [PREFIX] - a CUDA-aware Open MPI of exactly the version
# Debian ships (the system's Open MPI is not CUDA-aware), built from its
# source package, for ./configure --with-ompi=PREFIX.
#
# PREFIX defaults to ompi-cuda/ in the build tree (ignored by git): a link to
# an install kept in a cache outside the clone,
#   ${TCA_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/tca}/openmpi-<version>-cuda-<flags hash>,
# so fresh clones and CI pay for the build once per machine.  Idempotent: an
# install made with the same version and flags (its stamp file) is reused.
#
# Source: a tarball already under ompi-src/ in the build tree (or in the
# cache) is used as is - a machine without registry access builds from a
# carried copy; otherwise `apt-get source` through a private apt
# configuration that leaves the system's sources alone.
#
# Environment: CUDA_HOME (default /usr/local/cuda), JOBS (default nproc).
set -eu

top=$(cd "$(dirname "$0")/.." && pwd)
cuda=${CUDA_HOME:-/usr/local/cuda}
jobs=${JOBS:-$(nproc)}
cache=${TCA_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/tca}

# The version of the Open MPI this machine runs (Debian's source version).
src_version=$(dpkg-query -W -f='${source:Version}' libopenmpi-dev 2>/dev/null || true)
if [ -z "$src_version" ]; then
    echo "build-ompi-cuda: libopenmpi-dev is not installed (scripts/install-deps.sh installs it)" >&2
    exit 1
fi
upstream=${src_version%-*}  # 4.1.4-3 -> 4.1.4
upstream=${upstream#*:}

if [ ! -f "$cuda/include/cuda.h" ]; then
    echo "build-ompi-cuda: no CUDA toolkit at $cuda (set CUDA_HOME)" >&2
    exit 1
fi

# Only what a single host needs; internal hwloc/libevent/PMIx so the result
# does not depend on which -dev packages happen to be installed.
flags="--with-cuda=$cuda --with-devel-headers --with-hwloc=internal --with-libevent=internal \
--with-pmix=internal --without-ucx --without-verbs --without-ofi --disable-mpi-fortran --disable-oshmem \
--disable-io-romio --disable-static \
--enable-mca-no-build=btl-openib,btl-usnic,btl-uct,btl-ofi,mtl-ofi,pml-ucx,osc-ucx,spml-ucx,coll-hcoll,coll-fca"
stamp_text="openmpi $src_version
$flags"
hash=$(printf '%s' "$stamp_text" | sha256sum | cut -c1-12)

if [ $# -ge 1 ]; then
    prefix=$1
    link=""
else
    prefix="$cache/openmpi-$upstream-cuda-$hash"
    link="$top/ompi-cuda"
fi

finish() {
    if [ -n "$link" ]; then
        ln -sfn "$prefix" "$link"
        echo "build-ompi-cuda: $link -> $prefix"
    fi
    echo "build-ompi-cuda: configure the project with ./configure --with-ompi=${link:-$prefix}"
}

if [ -f "$prefix/.tca-build-stamp" ] && [ "$(cat "$prefix/.tca-build-stamp")" = "$stamp_text" ] &&
    [ -x "$prefix/bin/mpicc" ]; then
    echo "build-ompi-cuda: Open MPI $src_version (CUDA) already installed in $prefix"
    finish
    exit 0
fi

started=$(date +%s)
work=$(mktemp -d "${TMPDIR:-/tmp}/tca-ompi-build.XXXXXX")
trap 'rm -rf "$work"' EXIT

tarball=""
for dir in "$top/ompi-src" "$cache/src"; do
    for f in "$dir"/openmpi_"$upstream".orig.tar.* "$dir"/openmpi-"$upstream".tar.*; do
        [ -f "$f" ] && { tarball=$f; break 2; }
    done
done
if [ -z "$tarball" ]; then
    echo "build-ompi-cuda: fetching the source package openmpi=$src_version (private apt configuration)"
    apt_dir="$work/apt"
    mkdir -p "$apt_dir/lists/partial" "$cache/src"
    echo "deb-src [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian bookworm main" \
        >"$apt_dir/sources.list"
    apt_opts="-q -o Dir::Etc::SourceList=$apt_dir/sources.list -o Dir::Etc::SourceParts=/dev/null \
-o Dir::State::Lists=$apt_dir/lists -o APT::Sandbox::User=root"
    # shellcheck disable=SC2086
    apt-get $apt_opts update >"$work/apt.log" 2>&1 || { cat "$work/apt.log" >&2; exit 1; }
    # shellcheck disable=SC2086
    (cd "$cache/src" && apt-get $apt_opts source --download-only "openmpi=$src_version") >>"$work/apt.log" 2>&1 ||
        { cat "$work/apt.log" >&2; exit 1; }
    for f in "$cache/src"/openmpi_"$upstream".orig.tar.*; do
        [ -f "$f" ] && tarball=$f
    done
    [ -n "$tarball" ] || { echo "build-ompi-cuda: apt-get source gave no tarball" >&2; exit 1; }
fi
echo "build-ompi-cuda: building Open MPI $upstream with CUDA from $tarball into $prefix ($jobs jobs)"

tar -C "$work" -xf "$tarball"
srcdir=$(find "$work" -maxdepth 1 -type d -name "openmpi-$upstream*" | head -1)
mkdir -p "$work/build"
cd "$work/build"
# shellcheck disable=SC2086
"$srcdir/configure" --prefix="$prefix" $flags >"$work/configure.log" 2>&1 ||
    { tail -40 "$work/configure.log" >&2; echo "build-ompi-cuda: configure failed" >&2; exit 1; }
make -j"$jobs" >"$work/make.log" 2>&1 || { tail -60 "$work/make.log" >&2; echo "build-ompi-cuda: make failed" >&2; exit 1; }
make install >"$work/install.log" 2>&1 || { tail -40 "$work/install.log" >&2; exit 1; }
printf '%s' "$stamp_text" >"$prefix/.tca-build-stamp"

if ! "$prefix/bin/ompi_info" --parsable --all 2>/dev/null | grep -q 'mpi_built_with_cuda_support:value:true'; then
    echo "build-ompi-cuda: the result is not CUDA-aware (ompi_info)" >&2
    exit 1
fi
elapsed=$(( $(date +%s) - started ))
echo "build-ompi-cuda: done in $((elapsed / 60)) min $((elapsed % 60)) s"
finish
