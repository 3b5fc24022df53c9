#!/bin/sh
# format-files.sh - the C and C++ files under the formatting contract
# (.clang-format), one per line, relative to the top directory: the
# project's own sources and tests, not the copies of Open MPI's headers
# (compat/) or generated files.
cd "$(dirname "$0")/.." || exit 1
git ls-files -co --exclude-standard -- '*.c' '*.h' '*.cpp' '*.hpp' |
    grep -v -e '^compat/' -e '^build/' | sort
