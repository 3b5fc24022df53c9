#!/bin/sh
# bench-bcast-base.sh BASE_DIR [rounds] - coll tca's persistent broadcast of
# this build against another commit's build in BASE_DIR (its components and
# its tca_bcast_bench, same Open MPI), both engines, np 2 and 4, in one run:
# the two builds alternate within each round, in reverse order every other
# round.  Prints per engine, np and size both medians, the ratio of the
# medians and the worst round's ratio, and in how many rounds this build was
# the faster ("nothing slower than before" for a change to coll tca's hot
# path).  Default 10 rounds; raw results in bench-results/bcast-base-raw.txt.
set -e
cd "$(dirname "$0")/.."
base=$(cd "${1:?usage: bench-bcast-base.sh BASE_DIR [rounds]}" && pwd)
rounds=${2:-10}
[ -f "$base/.libs/mca_coll_tca.so" ] && [ -x "$base/tca_bcast_bench" ] ||
    { echo "$base: no built components and tca_bcast_bench (make tca_bcast_bench there)" >&2; exit 1; }
make -s tca_bcast_bench >/dev/null
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mkdir -p bench-results
raw=bench-results/bcast-base-raw.txt
: >"$raw"
here=$(pwd)
one() { # build-name dir engine np round
    (cd "$2" && TCA_COMPONENT_DIR="$2/.libs" timeout 300 "$here/scripts/tca-mpirun" --oversubscribe \
        --bind-to none --mca coll_tca_engine "$3" -np "$4" ./tca_bcast_bench persistent 2>&1) |
        awk -v v="$1" -v e="$3" -v np="$4" -v r="$5" '$1 == "RESULT" && $2 == "bcast" { print v, e, np, $3, r, $4 }' >>"$raw"
}
for r in $(seq 1 "$rounds"); do
    echo "round $r of $rounds" >&2
    for np in 2 4; do
        for engine in offload thread; do
            if [ $((r % 2)) -eq 1 ]; then
                one new "$here" "$engine" "$np" "$r"; one base "$base" "$engine" "$np" "$r"
            else
                one base "$base" "$engine" "$np" "$r"; one new "$here" "$engine" "$np" "$r"
            fi
        done
    done
done
echo "persistent broadcast, this build (new, $(git rev-parse --short HEAD)) against $base" \
    "($(git -C "$base" rev-parse --short HEAD 2>/dev/null || echo '?')), $rounds interleaved rounds, us per broadcast"
echo "engine  np     bytes   new median  base median  ratio  worst  new faster"
awk '{ k = $2 " " $3 " " $4; v[$1, k, $5] = $6; keys[k] = 1; r[$5] = 1 }
     END {
         for (k in keys) {
             n = 0; m = 0; worst = 0; faster = 0; cnt = 0
             delete a; delete b
             for (x in r) if ((("new", k, x) in v) && (("base", k, x) in v)) {
                 a[++n] = v["new", k, x]; b[n] = v["base", k, x]; q = a[n] / b[n]
                 if (q > worst) worst = q
                 if (q < 1) faster++
             }
             if (n == 0) continue
             printf "%s %.3f %.3f %.2f %.2f %d/%d\n", k, median(a, n), median(b, n), median(a, n) / median(b, n), worst, faster, n
         }
     }
     function median(x, n,   i, j, t) {
         for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (x[j] < x[i]) { t = x[i]; x[i] = x[j]; x[j] = t }
         return n % 2 ? x[(n + 1) / 2] : (x[n / 2] + x[n / 2 + 1]) / 2
     }' "$raw" | sort -k1,1 -k2,2n -k3,3n |
    awk '{ printf "%-7s %3d %9d %12.3f %12.3f %6.2f %6.2f %10s\n", $1, $2, $3, $4, $5, $6, $7, $8 }'
