#!/bin/sh
# bench-coll.sh [ROUNDS] - many large messages in flight at once: alltoall,
# allreduce, bcast (us per call, max over ranks) and a multi-pair stream
# (MB/s, all pairs together) of tca_coll_bench, 16 KiB - 4 MiB, btl tca
# against Open MPI's own transports in the same run, rounds interleaved;
# min / median per size and ratios of medians.  Results: bench-results/coll-*.
#
# One host (default), np 3 and 4 (TCA_BENCH_NP, default "3 4"), bound to
# nothing (more ranks than cores here):
#   tca          btl tca as it chooses (TCA_SINGLE_COPY unset)
#   tca-bounce   btl tca on the bounce path (TCA_SINGLE_COPY=0)
#   sm           Open MPI's shared-memory BTL (vader in 4.1, sm in 5.0), CMA
#   sm-nocopy    the same without single copy: the bounce path's reference
#   ucx          pml ucx on UCX's shared-memory transports
# goal: tca-bounce / sm-nocopy <= 1.5 (alltoall), each rank count its own
# tables.
#
# TCA_BENCH_HOSTS=1: hosts of the namespace cluster (scripts/netns-cluster.sh;
# root): allreduce, bcast and the stream (each pair across hosts) over 4
# hosts x 1 rank and over 2 hosts x 2 ranks, 1 - 4 MiB:
#   ob1-tcp      ob1 and btl tcp
#   pml-ucx      pml ucx over UCX_TLS=tcp
#   tca-ucx      btl tca on the ucx device (TCA_DEVICE=ucx) over UCX_TLS=tcp
# goals: tca-ucx / the better of ob1-tcp and pml-ucx <= 1.3 (time), >= 0.8
# (bandwidth).
#
# Bounds: the limits the tests held before they were made collapse checks
# (a loaded 2-core machine missed them now and then by chance; the tests now
# fail only at 10x), judged here on the medians and reported, met or MISSED:
#   one host   tca-bounce within 3x sm-nocopy's time + 300 us (pairs: at
#              least a third of its bandwidth), 64 KiB - 4 MiB
#              (test/mpi/many_in_flight.sh's, which ran np 3 and 4)
#   hosts      tca-ucx within 3x ob1-tcp's time + 2 ms (pairs: at least a
#              third of its bandwidth), 1 - 4 MiB (make check-multihost's)
. "$(dirname "$0")/bench-common.sh"
built tca_coll_bench
raw="$out/coll-raw.txt"
: >"$raw"
hosts=${TCA_BENCH_HOSTS:-0}

run() { # CONFIG WHERE COMMAND...: "config where bench bytes value" lines
    cfg=$1 where=$2
    shift 2
    "$@" 2>&1 | awk -v c="$cfg" -v w="$where" '$1 == "RESULT" { print c, w, $2, $3, $4 }' >>"$raw"
}

if [ "$hosts" = 1 ]; then
    cluster=scripts/netns-cluster.sh
    net=${TCA_NETNS_NET:-10.213.77}
    why=$(sh "$cluster" can 2>&1) || { echo "bench-coll: cannot make namespaces: $why" >&2; exit 77; }
    exec 9>"/run/${TCA_NETNS_PREFIX:-tcah}-cluster.lock"
    flock -w 600 9
    trap 'sh "$cluster" down >/dev/null 2>&1' EXIT INT TERM
    sh "$cluster" up 4 >/dev/null
    launch=$(sh "$cluster" launch-args 4)
    ucx_env="-x UCX_TLS=tcp -x UCX_NET_DEVICES=eth0"
    on41="--host $net.1:1,$net.2:1,$net.3:1,$net.4:1" on22="--host $net.1:2,$net.2:2"
    for r in $(seq 1 "$repeats"); do
        echo "round $r of $repeats (hosts) ..." >&2
        for shape in "4x1 allreduce bcast pairs" "2x2 allreduce bcast pairs"; do
            set -- $shape
            where=$1
            shift
            h=$on41
            [ "$where" = 2x2 ] && h=$on22
            # shellcheck disable=SC2086
            run ob1-tcp "$where" timeout 600 mpirun $h $launch --mca pml ob1 --mca btl tcp,self -np 4 \
                ./tca_coll_bench -s 1048576-4194304 "$@"
            # shellcheck disable=SC2086
            run pml-ucx "$where" timeout 600 mpirun $h $launch $ucx_env --mca pml ucx --mca pml_ucx_tls any \
                --mca pml_ucx_devices any -np 4 ./tca_coll_bench -s 1048576-4194304 "$@"
            # shellcheck disable=SC2086
            run tca-ucx "$where" timeout 600 sh scripts/tca-mpirun $h $launch $ucx_env -x TCA_DEVICE=ucx \
                --mca btl tca,self -np 4 ./tca_coll_bench -s 1048576-4194304 "$@"
        done
    done
    configs="ob1-tcp pml-ucx tca-ucx" goal_cfg=tca-ucx goal_refs="ob1-tcp pml-ucx"
    bound_ref=ob1-tcp bound_slack=2000 bound_from=0
    title="btl tca on the ucx device against btl tcp and pml ucx, namespace hosts over veth"
else
    nps=${TCA_BENCH_NP:-3 4}
    ucx="mpirun --mca pml ucx --mca pml_ucx_tls any --mca pml_ucx_devices any -x UCX_TLS=sm,self"
    # shellcheck disable=SC2086
    timeout 60 $ucx -np 2 ./tca_coll_bench -s 16384-16384 bcast 2>/dev/null | grep -q '^RESULT' || ucx=
    for r in $(seq 1 "$repeats"); do
        echo "round $r of $repeats ..." >&2
        b="./tca_coll_bench -s 16384-4194304 alltoall allreduce bcast pairs"
        for np in $nps; do
            common="--oversubscribe --bind-to none -np $np"
            # shellcheck disable=SC2086
            run tca np$np timeout 600 scripts/tca-mpirun $common $b
            # shellcheck disable=SC2086
            run tca-bounce np$np timeout 600 env TCA_SINGLE_COPY=0 scripts/tca-mpirun $common $b
            # shellcheck disable=SC2086
            run sm np$np timeout 600 mpirun --mca pml ob1 $sm_btl $common $b
            # shellcheck disable=SC2086
            run sm-nocopy np$np timeout 600 mpirun --mca pml ob1 $sm_btl $sm_nocopy $common $b
            # shellcheck disable=SC2086
            [ -z "$ucx" ] || run ucx np$np timeout 600 $ucx $common $b
        done
    done
    configs="tca tca-bounce sm sm-nocopy ucx" goal_cfg=tca-bounce goal_refs=sm-nocopy
    bound_ref=sm-nocopy bound_slack=300 bound_from=65536
    title="btl tca against $sm_name (sm = with CMA, sm-nocopy = without single copy) and pml ucx, np $(echo $nps | sed 's/ /, /g') on one host"
fi

stats="$out/coll-stats.txt"
summarize 4 "-k1,1 -k2,2 -k3,3 -k4,4n" "$raw" >"$stats"   # config where bench size min median max count
{
    echo "$title; $repeats interleaved rounds; min / median (us per call; pairs: MB/s of all pairs)"
    awk -v configs="$configs" -v gcfg="$goal_cfg" -v grefs="$goal_refs" -v hosts="$hosts" \
        -v bref="$bound_ref" -v bslack="$bound_slack" -v bfrom="$bound_from" '
        { key = $2 " " $3; s[key, $4] = 1; k[key] = 1; lo[$1, key, $4] = $5; med[$1, key, $4] = $6; hi[$1, key, $4] = $7 }
        # The old test limit (3x + slack; streams: a third), on the medians.
        function bound(key, x, bw,   t, r, ok) {
            if (x < bfrom || !((gcfg, key, x) in med) || !((bref, key, x) in med)) return sprintf(" %18s", "-")
            t = med[gcfg, key, x]; r = med[bref, key, x]
            ok = bw ? t * 3 >= r : t <= 3 * r + bslack
            if (ok) bmet++; else bmissed++
            return sprintf(" %10.2fx %-6s", t / r, ok ? "met" : "MISSED")
        }
        END {
            nc = split(configs, c, " "); ng = split(grefs, gr, " ")
            for (key in k) {
                split(key, kw, " "); bench = kw[2]; bw = bench == "pairs"
                printf "\n%s %s\n%9s", kw[1], bench, "bytes"
                for (i = 1; i <= nc; i++) printf " %21s", c[i]
                printf " %14s %14s %18s\n", gcfg "/ref", "goal", "bound (/" bref ")"
                n = 0; delete z
                for (x in s) { split(x, xs, SUBSEP); if (xs[1] == key) z[++n] = xs[2] + 0 }
                for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (z[j] < z[i]) { t = z[i]; z[i] = z[j]; z[j] = t }
                for (i = 1; i <= n; i++) {
                    x = z[i]; printf "%9d", x
                    for (j = 1; j <= nc; j++)
                        if ((c[j], key, x) in med) printf " %10.1f/%10.1f", bw ? hi[c[j], key, x] : lo[c[j], key, x], med[c[j], key, x]
                        else printf " %21s", "-"
                    best = 0
                    for (j = 1; j <= ng; j++) if ((gr[j], key, x) in med) {
                        v = med[gr[j], key, x]
                        if (best == 0 || (bw ? v > best : v < best)) best = v
                    }
                    if (best > 0 && (gcfg, key, x) in med) {
                        q = med[gcfg, key, x] / best
                        g = hosts == 1 ? (bw ? 0.8 : 1.3) : (bench == "alltoall" ? 1.5 : 0)
                        if (g == 0) printf " %14.2f %14s", q, "-"
                        else {
                            ok = bw ? q >= g : q <= g
                            printf " %14.2f %4s%-3s %-6s", q, bw ? ">=" : "<=", g, ok ? "met" : "MISSED"
                            if (ok) met++; else missed++
                        }
                    } else printf " %14s %14s", "-", "-"
                    printf "%s\n", bound(key, x, bw)
                }
            }
            if (met + missed) printf "\ngoals: %d met, %d missed\n", met, missed
            if (bmet + bmissed)
                printf "bounds (the former test limits: %s within 3x %s + %d us, streams at least a third; medians): %d met, %d missed\n",
                       gcfg, bref, bslack, bmet, bmissed
        }' "$stats"
} | tee "$out/coll-table.txt"
