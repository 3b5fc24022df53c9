#!/bin/sh
# Counts test cases over the logs of `make check`: GoogleTest programs count
# each of their tests, other test scripts count as one test each.
cd "$(dirname "$0")/.."
passed=0 failed=0 skipped=0
for trs in $(find . -name '*.trs' -not -path './build/*'); do
    log="${trs%.trs}.log"
    result=$(sed -n 's/^:test-result: //p' "$trs")
    gp=$(sed -n 's/^\[  PASSED  \] \([0-9]*\) test.*/\1/p' "$log" | tail -1)
    gf=$(sed -n 's/^ *\([0-9]*\) FAILED TEST.*/\1/p' "$log" | tail -1)
    gs=$(sed -n 's/^\[  SKIPPED \] \([0-9]*\) test.*/\1/p' "$log" | tail -1)
    if [ -n "$gp$gf" ]; then
        passed=$((passed + ${gp:-0})); failed=$((failed + ${gf:-0})); skipped=$((skipped + ${gs:-0}))
        # a crash after the summary, or a sanitizer report, still fails the program
        if [ "$result" != PASS ] && [ "${gf:-0}" = 0 ]; then failed=$((failed + 1)); fi
    else
        case "$result" in
            PASS) passed=$((passed + 1)) ;;
            SKIP) skipped=$((skipped + 1)) ;;
            *) failed=$((failed + 1)) ;;
        esac
    fi
done
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ] && [ "$passed" -gt 0 ]
