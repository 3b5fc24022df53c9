#!/bin/sh
# index_check.sh - test/INDEX maps every product source file to the tests
# that exercise it, and stays true: every .c .h .cpp .hpp under opal/ ompi/
# tca-btl/ tca-coll/ (tracked, or new and not ignored) has a line
# "<product path>: <test path> ...", every product and test path named there
# exists, no right-hand side is empty.  `none` (alone on the right: nothing
# exercises the file) is allowed, and printed as a note.
# Skipped where not in a git checkout (no file list).
cd "${srcdir:-.}" || exit 1
git rev-parse --git-dir >/dev/null 2>&1 || { echo "SKIP: not a git checkout (no file list)"; exit 77; }
index=test/INDEX
[ -f "$index" ] || { echo "FAIL: $index is missing"; exit 1; }
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
bad=0
problem() {
    echo "$*"
    bad=$((bad + 1))
}
is_product() { # PATH: under a product directory, with a source extension
    case "$1" in
    opal/* | ompi/* | tca-btl/* | tca-coll/*) ;;
    *) return 1 ;;
    esac
    case "$1" in
    *.c | *.h | *.cpp | *.hpp) return 0 ;;
    esac
    return 1
}

# The product files: tracked, and new ones not ignored (a file being added
# must be mapped before it is committed); one deleted in the working tree is
# no longer one.
git ls-files -c -o --exclude-standard -- opal ompi tca-btl tca-coll |
    grep -E '\.(c|h|cpp|hpp)$' | sort -u >"$tmp/all"
: >"$tmp/products"
while IFS= read -r f; do
    [ -f "$f" ] && echo "$f" >>"$tmp/products"
done <"$tmp/all"

# The index, line by line (comments and blank lines skipped).
: >"$tmp/mapped"
notes=0 n=0
while IFS= read -r line || [ -n "$line" ]; do
    n=$((n + 1))
    case "$line" in '' | '#'*) continue ;; esac
    case "$line" in
    *:*) ;;
    *) problem "$index:$n: not '<product path>: <test path> ...': $line"; continue ;;
    esac
    product=${line%%:*}
    tests=${line#*:}
    case "$product" in
    *[[:space:]]*) problem "$index:$n: a product path with blanks: '$product'"; continue ;;
    esac
    if ! is_product "$product"; then
        problem "$index:$n: $product is not a product source file (opal/ ompi/ tca-btl/ tca-coll/, .c .h .cpp .hpp)"
    elif [ ! -f "$product" ]; then
        problem "$index:$n: $product does not exist"
    fi
    if grep -qxF "$product" "$tmp/mapped"; then
        problem "$index:$n: $product is listed twice"
    fi
    echo "$product" >>"$tmp/mapped"
    # shellcheck disable=SC2086
    set -- $tests
    if [ $# -eq 0 ]; then
        problem "$index:$n: $product: no test named (write 'none' if nothing exercises it)"
        continue
    fi
    if [ "$*" = none ]; then
        echo "note: $product: no test exercises it (none)"
        notes=$((notes + 1))
        continue
    fi
    for t in "$@"; do
        case "$t" in
        none) problem "$index:$n: $product: 'none' beside test paths" ;;
        test/*) [ -f "$t" ] || problem "$index:$n: $product: test $t does not exist" ;;
        *) problem "$index:$n: $product: $t is not a path under test/" ;;
        esac
    done
done <"$index"

# Every product file mapped.
sort -u "$tmp/mapped" >"$tmp/mapped.sorted"
comm -23 "$tmp/products" "$tmp/mapped.sorted" >"$tmp/unmapped"
while IFS= read -r f; do
    problem "not in $index: $f"
done <"$tmp/unmapped"

total=$(wc -l <"$tmp/products" | tr -d ' ')
[ "$bad" -eq 0 ] || { echo "FAIL: $bad problem(s) in $index (its header says the format)"; exit 1; }
echo "PASS: $index maps all $total product source files ($notes with no test: none)"
