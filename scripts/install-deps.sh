#!/bin/sh
# Installs the Debian packages the build and the tests need (bookworm names).
# Skips apt-get when everything is already there.
set -e
# (iproute2: the network namespaces of make check-multihost; libpmix-dev comes
# with libopenmpi-dev and gives libtca pmix.h; libucx-dev: the ucx device and
# its tests; clang-format: the formatting contract, test/format_check.sh;
# python3: the benchmark tables, scripts/bench_report.py; patch: Open MPI's
# own fixes, scripts/ompi-patches, applied by scripts/build-ompi.sh)
PKGS="g++ make autoconf automake libtool pkg-config libopenmpi-dev openmpi-bin libhwloc-dev libgtest-dev valgrind iproute2 libpmix-dev libucx-dev clang-format python3 patch"
missing=""
for p in $PKGS; do
    dpkg -s "$p" >/dev/null 2>&1 || missing="$missing $p"
done
[ -z "$missing" ] && exit 0
echo "installing:$missing"
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -q
# shellcheck disable=SC2086
$SUDO apt-get install -y -q --no-install-recommends $missing
