#!/bin/sh
# bench-ucx-device.sh [ROUNDS] - the published-style TCA ping-pong on the ucx
# device (host_pingpong.c, TCA_DEVICE=ucx) against the raw UCX put ping-pong
# it is measured by (tca_ucx_put_pingpong: a put, a fence, the last word,
# spinning on memory), both over UCX_TLS=tcp, 2 ranks on this host, each
# bound to a core, rounds interleaved.  One host, over its loopback interface;
# TCA_BENCH_ACROSS=1: one rank on each of 2 namespace hosts over their veth
# link (scripts/netns-cluster.sh; root).
# Prints min / median one-way us per size and the ratio of the medians (the
# issue's goal: <= 1.5).  TCA_BENCH_ITERS: host_pingpong's iterations per size
# (default 1000; the raw ping-pong, run with argument 10, times 200 / 50 / 5
# after a tenth of that as warm-up).  The published program has no warm-up:
# each size's time includes the first key fetch of its tcaMalloc'd buffer, and
# the first size the endpoints' creation (8 B one way: 25 us at 100
# iterations, 15.5 at 1000).  Run from the build directory after make check.
set -eu
rounds=${1:-3}
iters=${TCA_BENCH_ITERS:-1000}  # host_pingpong's iterations per size (a quarter from 512 KiB)
srcdir=${srcdir:-$(cd "$(dirname "$0")/.." && pwd)}
[ -x ./tca_ucx_put_pingpong ] || { echo "bench-ucx-device: ./tca_ucx_put_pingpong not built (no UCX, or run make check first)" >&2; exit 2; }
${MAKE:-make} -s test/tca-api/stage.stamp >/dev/null
. test/tca-api/stage.env
[ -f "$TCA_API_LIBDIR/tca_ucx.so" ] || { echo "bench-ucx-device: this build has no ucx device" >&2; exit 2; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT INT TERM
"$MPICC" -std=c99 -O3 -I"$TCA_API_INCDIR" "$srcdir/test/tca-api/host_pingpong.c" -o "$out/host_pingpong" \
    -L"$TCA_API_LIBDIR" -ltca -ltcacomm
common="--bind-to ${TCA_BENCH_BIND:-core} -np 2 -x UCX_TLS=tcp -x UCX_NET_DEVICES=lo"
where="2 ranks on one host" vader=vader
if [ "${TCA_BENCH_ACROSS:-0}" = 1 ]; then
    cluster="$srcdir/scripts/netns-cluster.sh"
    why=$(sh "$cluster" can 2>&1) || { echo "bench-ucx-device: cannot make namespaces: $why" >&2; exit 77; }
    sh "$cluster" up 2 >/dev/null
    net=$(sh "$cluster" addr 1 | cut -d. -f1-3)
    # Unbound (netns-cluster.sh says why); MPI's own traffic over btl tcp.
    common="--host $net.1:1,$net.2:1 $(sh "$cluster" launch-args 2)"
    common="$common -np 2 -x UCX_TLS=tcp -x UCX_NET_DEVICES=eth0"
    where="2 namespace hosts" vader=tcp
fi
r=1
while [ "$r" -le "$rounds" ]; do
    echo "ucx device round $r of $rounds ..." >&2
    # shellcheck disable=SC2086
    timeout 300 mpirun $common --mca pml ob1 --mca btl self,$vader ./tca_ucx_put_pingpong 10 |
        sed -n 's/^RESULT ucxput /ucxput /p' >>"$out/all"
    # shellcheck disable=SC2086
    timeout 300 mpirun $common --mca pml ob1 --mca btl self,$vader -x TCA_DEVICE=ucx -x LD_LIBRARY_PATH="$TCA_API_LIBDIR" \
        "$out/host_pingpong" "$iters" | awk '$2 == "B" && $5 == "one" { print "tca", $1, $3 }' >>"$out/all"
    r=$((r + 1))
done
echo "one-way latency, us, $where over UCX tcp, $rounds rounds: min / median"
awk '
{ v[$1, $2, ++n[$1, $2]] = $3; sizes[$2] = 1 }
function med(c, s,   k, i, j, t, a) { k = n[c, s]; for (i = 1; i <= k; i++) a[i] = v[c, s, i];
    for (i = 1; i <= k; i++) for (j = i + 1; j <= k; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
    return k % 2 ? a[(k + 1) / 2] : (a[k / 2] + a[k / 2 + 1]) / 2 }
function mn(c, s,   i, m) { m = v[c, s, 1]; for (i = 2; i <= n[c, s]; i++) if (v[c, s, i] < m) m = v[c, s, i]; return m }
END {
    printf "%9s  %21s  %21s  %10s\n", "bytes", "TCA ping-pong (ucx)", "raw UCX puts", "tca/raw"
    for (s in sizes) list[++m] = s + 0
    for (i = 1; i <= m; i++) for (j = i + 1; j <= m; j++) if (list[j] < list[i]) { t = list[i]; list[i] = list[j]; list[j] = t }
    for (i = 1; i <= m; i++) { s = list[i]
        if (!n["tca", s] || !n["ucxput", s]) continue
        printf "%9d  %9.2f / %9.2f  %9.2f / %9.2f  %10.2f\n", s, mn("tca", s), med("tca", s), mn("ucxput", s),
            med("ucxput", s), med("tca", s) / med("ucxput", s) }
    print "goal: tca/raw <= 1.50"
}' "$out/all"
