#!/bin/sh
# Configure (once) and build in the source tree.  Extra arguments go to configure.
set -e
cd "$(dirname "$0")/.."
[ -x configure ] || ./autogen.sh
[ -f Makefile ] || ./configure "$@"
make -j"$(nproc)"
