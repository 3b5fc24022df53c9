#!/bin/sh
# bench-multihost.sh [ROUNDS] - one-way latency and bandwidth between two
# hosts of the namespace cluster (scripts/netns-cluster.sh; root), in one
# run, rounds interleaved:
#   ucxput   the raw UCX put ping-pong (tca_ucx_put_pingpong: the lower bound
#            of the ucx device; the issue's reference for a TCA ping-pong
#            across hosts; latency only)
#   pml-ucx  MPI through Open MPI's pml ucx (what a user has today)
#   ob1-tcp  MPI through ob1 and btl tcp
#   tca-ucx  MPI through ob1 and btl tca on the ucx device (TCA_DEVICE=ucx)
# all over UCX_TLS=tcp / TCP on the hosts' veth link.  Prints min/median per
# size and each against pml ucx (latency: lower is better; bandwidth, MB/s:
# higher is better).  Run from the build directory after make check.
# TCA_BENCH_ONE_HOST=1 puts both ranks on one namespace host: the same
# transports over its loopback interface, for machines (such as a small VM)
# whose veth link between namespaces costs a timer tick per message.
# TCA_BENCH_BCAST=1 adds the persistent broadcast at np 2 (the 2 hosts) and
# np 4 (tca_bcast_bench persistent; 4 hosts, or one with TCA_BENCH_ONE_HOST=1):
#   nbc-ucx  libnbc's persistent broadcast over pml ucx (the reference)
#   tca-ucx  coll tca (its thread engine) over btl tca on the ucx device
set -eu
rounds=${1:-3}
srcdir=${srcdir:-$(cd "$(dirname "$0")/.." && pwd)}
cluster="$srcdir/scripts/netns-cluster.sh"
net=${TCA_NETNS_NET:-10.213.77}
prefix=${TCA_NETNS_PREFIX:-tcah}
bcast=${TCA_BENCH_BCAST:-0}
for f in tca_ucx_put_pingpong tca_mpi_bench tca_bcast_bench; do
    [ -x "./$f" ] || { echo "bench-multihost: ./$f not built (UCX headers missing, or run make check first)" >&2; exit 2; }
done
why=$(sh "$cluster" can 2>&1) || { echo "bench-multihost: cannot make namespaces: $why" >&2; exit 77; }
exec 9>"/run/${prefix}-cluster.lock"
flock -w 600 9
trap 'sh "$cluster" down >/dev/null 2>&1' EXIT INT TERM
hosts_needed=2
[ "$bcast" = 1 ] && hosts_needed=4
sh "$cluster" up $hosts_needed >/dev/null
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
hosts="$net.1:1,$net.2:1"
[ "${TCA_BENCH_ONE_HOST:-0}" = 1 ] && hosts="$net.1:2"
# Unbound, and yielding where the ranks outnumber the cores: netns-cluster.sh says why.
launch="--host $hosts $(sh "$cluster" launch-args 2) -np 2"
hosts4="$net.1:1,$net.2:1,$net.3:1,$net.4:1"
[ "${TCA_BENCH_ONE_HOST:-0}" = 1 ] && hosts4="$net.1:4"
launch4="--host $hosts4 $(sh "$cluster" launch-args 4) -np 4"
ucx_env="-x UCX_TLS=tcp -x UCX_NET_DEVICES=eth0"
# TCP over veth is ~100x slower than shared memory: a tenth of mpi_bench's iterations.
export TCA_BENCH_ITER_DIVISOR=${TCA_BENCH_ITER_DIVISOR:-10}
launch="$launch -x TCA_BENCH_ITER_DIVISOR"
out=$(mktemp -d)
# "RESULT latency 8 1.23" -> "latency CONFIG 8 1.23"
tag() { sed -n "s/^RESULT \(latency\|bw\) /\1 $1 /p"; }
r=1
while [ "$r" -le "$rounds" ]; do
    # shellcheck disable=SC2086
    timeout 300 mpirun $launch $ucx_env --mca pml ob1 --mca btl tcp,self \
        ./tca_ucx_put_pingpong | sed -n 's/^RESULT ucxput /latency ucxput /p' >>"$out/all"
    # shellcheck disable=SC2086
    timeout 300 mpirun $launch $ucx_env --mca pml ucx --mca pml_ucx_tls any --mca pml_ucx_devices any \
        ./tca_mpi_bench latency bw | tag pml-ucx >>"$out/all"
    # shellcheck disable=SC2086
    timeout 300 mpirun $launch --mca pml ob1 --mca btl tcp,self \
        ./tca_mpi_bench latency bw | tag ob1-tcp >>"$out/all"
    # shellcheck disable=SC2086
    timeout 300 sh "$srcdir/scripts/tca-mpirun" $launch $ucx_env -x TCA_DEVICE=ucx --mca pml ob1 --mca btl tca,self \
        ./tca_mpi_bench latency bw | tag tca-ucx >>"$out/all"
    if [ "$bcast" = 1 ]; then
        # shellcheck disable=SC2086
        timeout 600 mpirun $launch $ucx_env --mca pml ucx --mca pml_ucx_tls any --mca pml_ucx_devices any \
            ./tca_bcast_bench persistent | sed -n 's/^RESULT bcast /bcast2 nbc-ucx /p' >>"$out/all"
        # shellcheck disable=SC2086
        timeout 600 sh "$srcdir/scripts/tca-mpirun" $launch $ucx_env -x TCA_DEVICE=ucx --mca pml ob1 \
            --mca btl tca,self ./tca_bcast_bench persistent | sed -n 's/^RESULT bcast /bcast2 tca-ucx /p' >>"$out/all"
        # shellcheck disable=SC2086
        timeout 600 mpirun $launch4 $ucx_env --mca pml ucx --mca pml_ucx_tls any --mca pml_ucx_devices any \
            ./tca_bcast_bench persistent | sed -n 's/^RESULT bcast /bcast nbc-ucx /p' >>"$out/all"
        # shellcheck disable=SC2086
        timeout 600 sh "$srcdir/scripts/tca-mpirun" $launch4 $ucx_env -x TCA_DEVICE=ucx --mca pml ob1 \
            --mca btl tca,self ./tca_bcast_bench persistent | sed -n 's/^RESULT bcast /bcast tca-ucx /p' >>"$out/all"
    fi
    r=$((r + 1))
done
kinds="latency bw"
[ "$bcast" = 1 ] && kinds="$kinds bcast2 bcast"
for kind in $kinds; do
ref=pml-ucx
[ $kind = bcast ] || [ $kind = bcast2 ] && ref=nbc-ucx
echo
where="2 hosts (network namespaces, veth)"
[ "${TCA_BENCH_ONE_HOST:-0}" = 1 ] && where="1 namespace host (its loopback interface)"
[ $kind = latency ] && echo "one-way latency, us, $where, $rounds rounds: min / median"
[ $kind = bw ] && echo "bandwidth, MB/s (window of 64), $where, $rounds rounds: min / median"
[ $kind = bcast2 ] && echo "persistent broadcast at np 2, us per call, $where, $rounds rounds: min / median"
w=$where
[ $kind = bcast ] && [ "${TCA_BENCH_ONE_HOST:-0}" != 1 ] && w="4 hosts (network namespaces, veth)"
[ $kind = bcast ] && echo "persistent broadcast at np 4, us per call, $w, $rounds rounds: min / median"
grep "^$kind " "$out/all" | cut -d' ' -f2- | awk -v ref="$ref" '
{ v[$1, $2, ++n[$1, $2]] = $3; sizes[$2] = 1; cfg[$1] = 1 }
function med(c, s,   k, i, j, t, a) { k = n[c, s]; for (i = 1; i <= k; i++) a[i] = v[c, s, i];
    for (i = 1; i <= k; i++) for (j = i + 1; j <= k; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
    return k % 2 ? a[(k + 1) / 2] : (a[k / 2] + a[k / 2 + 1]) / 2 }
function mn(c, s,   i, m) { m = v[c, s, 1]; for (i = 2; i <= n[c, s]; i++) if (v[c, s, i] < m) m = v[c, s, i]; return m }
END {
    nc = split("ucxput pml-ucx nbc-ucx ob1-tcp tca-ucx", all, " ")
    for (c = 1; c <= nc; c++) if (cfg[all[c]]) col[++k] = all[c]
    printf "%9s", "bytes"; for (c = 1; c <= k; c++) printf "  %21s", col[c]
    for (c = 1; c <= k; c++) if (col[c] != ref) printf "  %16s", col[c] "/" ref; printf "\n"
    for (s in sizes) list[++m] = s + 0
    for (i = 1; i <= m; i++) for (j = i + 1; j <= m; j++) if (list[j] < list[i]) { t = list[i]; list[i] = list[j]; list[j] = t }
    for (i = 1; i <= m; i++) { s = list[i]
        printf "%9d", s
        for (c = 1; c <= k; c++) if (n[col[c], s]) printf "  %10.2f / %8.2f", mn(col[c], s), med(col[c], s); else printf "  %21s", "-"
        for (c = 1; c <= k; c++) if (col[c] != ref)
            if (n[col[c], s] && n[ref, s]) printf "  %16.2f", med(col[c], s) / med(ref, s); else printf "  %16s", "-"
        printf "\n" }
}'
done
rm -rf "$out"
