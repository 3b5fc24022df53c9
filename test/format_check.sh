#!/bin/sh
# format_check.sh - every C and C++ file of the project is as clang-format
# (.clang-format) writes it; `make format` rewrites those that are not.
# Skipped where clang-format is not installed or not in a git checkout.
cd "${srcdir:-.}" || exit 1
command -v clang-format >/dev/null 2>&1 || { echo "SKIP: clang-format is not installed"; exit 77; }
git rev-parse --git-dir >/dev/null 2>&1 || { echo "SKIP: not a git checkout (no file list)"; exit 77; }
bad=0
for f in $(sh scripts/format-files.sh); do
    if ! clang-format --style=file "$f" | cmp -s - "$f"; then
        echo "not formatted: $f"
        bad=$((bad + 1))
    fi
done
[ "$bad" -eq 0 ] || { echo "FAIL: $bad file(s) differ from clang-format's output (make format)"; exit 1; }
echo "PASS: every file as clang-format writes it"
