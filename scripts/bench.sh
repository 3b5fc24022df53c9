#!/bin/sh
# bench.sh - btl tca against Open MPI's own shared-memory transports, in one run.
# Interleaved rounds of: tca, tca with its progress thread, tca on each path
# into private memory (bounce, single copy), vader (CMA single copy), vader
# without single copy and pml ucx on UCX's shared-memory
# transports (where Debian's UCX runs); plus the raw device (tca_device_bench)
# for the MPI-over-device overhead.  Prints min/median tables with, per size,
# the best reference (the better median of vader(cma), vader(copy) and ucx),
# tca's ratio to it and the goal next to it; if gnuplot is present, writes PNG
# plots.  Usage: scripts/bench.sh [repeats] (default 3).  Expects a build
# (scripts/build.sh); results go to bench-results/.
#
# scripts/bench.sh -d cuda [repeats]: the same benchmarks with cudaMalloc'd
# buffers, btl tca against Open MPI's own CUDA path (smcuda), interleaved in
# one run, with ratios, the issue's goals and PNG plots (gpu-*.png).  Needs a
# GPU and a build against a CUDA-aware Open MPI (scripts/build-ompi-cuda.sh,
# ./configure --with-ompi=...); otherwise it says why and measures nothing.
. "$(dirname "$0")/bench-common.sh"
common="--bind-to core -np 2"

run() { # config-name command... : appends "config bench size value"
    name=$1; shift
    "$@" 2>&1 | awk -v c="$name" '$1 == "RESULT" { print c, $2, $3, $4 }' >>"$raw"
}

if [ "$device" = cuda ]; then
    built tca_mpi_bench
    why=$(gpu_skip_reason scripts/tca-mpirun $common ./tca_mpi_bench -d cuda latency8)
    if [ -n "$why" ]; then
        echo "bench.sh -d cuda: no GPU rows: $why"
        exit 0
    fi
    raw="$out/gpu-raw.txt"
    : >"$raw"
    for r in $(seq 1 "$repeats"); do
        echo "GPU round $r of $repeats ..." >&2
        # shellcheck disable=SC2086
        run tca scripts/tca-mpirun $common ./tca_mpi_bench -d cuda latency bw bibw plat
        # shellcheck disable=SC2086
        run smcuda mpirun --mca pml ob1 --mca btl smcuda,self $common ./tca_mpi_bench -d cuda latency bw bibw plat
    done
    stats="$out/gpu-stats.txt"
    summarize 3 "-k1,1 -k2,2 -k3,3n" "$raw" >"$stats"
    gtable() { # bench title unit better(lo|hi)
        awk -v b="$1" -v title="$2" -v unit="$3" -v better="$4" '
            $2 == b { s[$3] = 1; best[$1, $3] = (better == "lo") ? $4 : $6; med[$1, $3] = $5 }
            END {
                printf "\n%s (%s; best / median of the rounds)\n", title, unit
                printf "%9s %19s %19s %11s\n", "bytes", "tca", "smcuda", "tca/smcuda"
                n = 0; for (x in s) sz[++n] = x + 0
                for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (sz[j] < sz[i]) { t = sz[i]; sz[i] = sz[j]; sz[j] = t }
                for (i = 1; i <= n; i++) {
                    x = sz[i]; printf "%9d", x
                    split("tca smcuda", cfg, " ")
                    for (c = 1; c <= 2; c++)
                        if ((cfg[c], x) in med) printf " %9.3f/%9.3f", best[cfg[c], x], med[cfg[c], x]; else printf " %19s", "-"
                    if (("tca", x) in med && ("smcuda", x) in med) printf " %11.2f\n", med["tca", x] / med["smcuda", x]
                    else printf " %11s\n", "-"
                }
            }' "$stats"
    }
    {
        echo "GPU buffers (cudaMalloc, GPU to GPU): btl tca vs smcuda, same run, $repeats interleaved rounds, 2 ranks"
        gtable latency "one-way latency (ping-pong / 2)" "us, lower is better" lo
        gtable plat "persistent one-way latency (Send_init/Recv_init + Start)" "us, lower is better" lo
        gtable bw "bandwidth, window of 64" "MB/s, higher is better" hi
        gtable bibw "bidirectional bandwidth, window of 64 each way" "MB/s, higher is better" hi
        awk '$2 == "latency" && $3 == 8 { l[$1] = $5 } $2 == "bw" && $3 == 4194304 { w[$1] = $5 }
             END {
                 if (("tca" in l) && ("smcuda" in l) && ("tca" in w) && ("smcuda" in w)) {
                     printf "\ngoals: 8 B latency %.3f us (<= 2.0 us: %s), %.2fx smcuda (<= 1.0: %s); 4 MiB bandwidth %.2fx smcuda (>= 1.0: %s)\n",
                         l["tca"], (l["tca"] <= 2.0) ? "met" : "MISSED", l["tca"] / l["smcuda"], (l["tca"] <= l["smcuda"]) ? "met" : "MISSED",
                         w["tca"] / w["smcuda"], (w["tca"] >= w["smcuda"]) ? "met" : "MISSED"
                 } else print "\ngoals: not judged (a configuration produced no rows: see " FILENAME ")"
             }' "$stats"
    } | tee "$out/gpu-table.txt"
    if command -v gnuplot >/dev/null 2>&1; then
        for b in latency bw bibw; do
            for c in tca smcuda; do
                awk -v b=$b -v c=$c '$1 == c && $2 == b { print $3, $5 }' "$stats" >"$out/gpu-$b-$c.dat"
            done
        done
        gnuplot <<GP
set terminal png size 900,600
set logscale xy
set xlabel "message size (bytes)"
set key left top
set output "$out/gpu-latency.png"
set ylabel "GPU-GPU one-way latency (us, median)"
plot "$out/gpu-latency-tca.dat" w lp t "btl tca", "$out/gpu-latency-smcuda.dat" w lp t "smcuda"
set output "$out/gpu-bandwidth.png"
set ylabel "GPU-GPU bandwidth (MB/s, median)"
plot "$out/gpu-bw-tca.dat" w lp t "btl tca", "$out/gpu-bw-smcuda.dat" w lp t "smcuda", "$out/gpu-bibw-tca.dat" w lp t "btl tca bidirectional", "$out/gpu-bibw-smcuda.dat" w lp t "smcuda bidirectional"
GP
        echo "plots: $out/gpu-latency.png $out/gpu-bandwidth.png"
    else
        echo "gnuplot not found: no plots (apt-get install gnuplot-nox)"
    fi
    exit 0
fi

raw="$out/raw.txt"
: >"$raw"
built tca_mpi_bench tca_device_bench

# pml ucx on shared memory: Open MPI 4.1 selects it only for listed devices,
# so name them all; UCX_TLS keeps it on this host's memory transports.
ucx="mpirun --mca pml ucx --mca pml_ucx_tls any --mca pml_ucx_devices any -x UCX_TLS=sm,self"
# shellcheck disable=SC2086
if ! timeout 60 $ucx $common ./tca_mpi_bench latency8 2>/dev/null | grep -q '^RESULT'; then
    echo "pml ucx does not run here: the reference is $sm_name alone" >&2
    ucx=
fi

for r in $(seq 1 "$repeats"); do
    echo "round $r of $repeats ..." >&2
    # shellcheck disable=SC2086
    run tca scripts/tca-mpirun $common ./tca_mpi_bench latency bw bibw plat overlap
    # shellcheck disable=SC2086
    run vader mpirun --mca pml ob1 $sm_btl $common ./tca_mpi_bench latency bw bibw plat
    # shellcheck disable=SC2086
    run vader-nocopy mpirun --mca pml ob1 $sm_btl $sm_nocopy $common ./tca_mpi_bench latency bw bibw plat
    run tca-thread scripts/tca-mpirun --mca btl_tca_progress_thread on $common ./tca_mpi_bench latency overlap
    # Both paths into private memory, whichever libtca measured at start-up
    # for "tca" (tca_info says which): the bounce path, whose reference is
    # vader without single copy (goal: <= 1.5x it at every size), and single copy.
    run tca-bounce env TCA_SINGLE_COPY=0 scripts/tca-mpirun $common ./tca_mpi_bench latency bw
    run tca-single env TCA_SINGLE_COPY=1 scripts/tca-mpirun $common ./tca_mpi_bench latency bw
    # shellcheck disable=SC2086
    [ -z "$ucx" ] || run ucx $ucx $common ./tca_mpi_bench latency bw bibw plat
    ./tca_device_bench -r 1 2>&1 | awk '$1 == "RESULT" && $2 == "pio_put_notify_8B_us" { print "device pio 8", $3 }' >>"$raw"
done

# min, median and best (max for bandwidths) per (config, bench, size)
stats="$out/stats.txt"
summarize 3 "-k1,1 -k2,2 -k3,3n" "$raw" >"$stats"   # config bench size min median max count

# The goals, tca / best reference (the same bars on Open MPI 4.1 and 5.0):
# latency 8 B <= 1.0 and 16 KiB-4 MiB <= 1.0; persistent latency <= 0.9 at
# every size; bandwidth and bidirectional bandwidth >= 1.0 from 512 B to 4 MiB.
table() { # bench title unit better(lo|hi)
    awk -v b="$1" -v title="$2" -v unit="$3" -v better="$4" -v smname="$sm_name" '
        function goal(x) {
            if (b == "latency") return x == 8 ? 1.0 : (x >= 16384 && x <= 4194304) ? 1.0 : 0
            if (b == "plat") return 0.9
            if (b == "bw" || b == "bibw") return (x >= 512 && x <= 4194304) ? 1.0 : 0
            return 0
        }
        $2 == b { s[$3] = 1; best[$1, $3] = (better == "lo") ? $4 : $6; med[$1, $3] = $5 }
        END {
            printf "\n%s (%s; best / median of the rounds; ref: the better median of %s(cma), %s(copy), ucx(sm))\n", title, unit, smname, smname
            printf "%9s %19s %19s %19s %19s %19s %19s %19s %12s %8s %12s %12s\n", "bytes", "tca", "tca+thread", "tca(bounce)", "tca(single)", smname "(cma)", smname "(copy)", "ucx(sm)", "ref", "tca/ref", "goal", "bounce/copy"
            n = 0; for (x in s) sz[++n] = x + 0
            for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (sz[j] < sz[i]) { t = sz[i]; sz[i] = sz[j]; sz[j] = t }
            split("tca tca-thread tca-bounce tca-single vader vader-nocopy ucx", cfg, " ")
            split("vader vader-nocopy ucx", refs, " ")
            split(smname "(cma) " smname "(copy) ucx(sm)", refname, " ")
            for (i = 1; i <= n; i++) {
                x = sz[i]; printf "%9d", x
                for (c = 1; c <= 7; c++)
                    if ((cfg[c], x) in med) printf " %9.3f/%9.3f", best[cfg[c], x], med[cfg[c], x]; else printf " %19s", "-"
                r = 0; rv = 0
                for (c = 1; c <= 3; c++) if ((refs[c], x) in med) {
                    v = med[refs[c], x]
                    if (r == 0 || (better == "lo" && v < rv) || (better == "hi" && v > rv)) { r = c; rv = v }
                }
                printf " %12s", r ? refname[r] : "-"
                if (r && ("tca", x) in med && rv > 0) {
                    q = med["tca", x] / rv; printf " %8.2f", q
                    g = goal(x)
                    if (g == 0) printf " %12s", "-"
                    else {
                        ok = (better == "lo") ? (q <= g) : (q >= g)
                        printf " %5s %6s", ((better == "lo") ? "<=" : ">=") g, ok ? "met" : "MISSED"
                        if (ok) met++; else missed++
                    }
                } else printf " %8s %12s", "-", "-"
                if (("vader-nocopy", x) in med && ("tca-bounce", x) in med) printf " %12.2f", med["tca-bounce", x] / med["vader-nocopy", x]; else printf " %12s", "-"
                printf "\n"
            }
            if (met + missed) printf "goals: %d met, %d missed\n", met, missed
        }' "$stats"
}
{
    echo "btl tca vs $sm_name and pml ucx (Open MPI $(ompi_info --version | sed -n 's/^Open MPI v//p')), same run, $repeats interleaved rounds, 2 ranks bound to cores"
    table latency "one-way latency (ping-pong / 2)" "us, lower is better" lo
    table plat "persistent one-way latency (Send_init/Recv_init + Start)" "us, lower is better" lo
    table bw "bandwidth, window of 64" "MB/s, higher is better" hi
    table bibw "bidirectional bandwidth, window of 64 each way" "MB/s, higher is better" hi
    echo "goal: bounce/copy <= 1.5 (latency), >= 0.67 (bandwidth) at every size"
    table overlap "receiver-side overlap (Irecv, compute >= max(t_pure, 3 ms), Wait)" "percent, higher is better" hi
    awk '$1 == "tca-thread" && $2 == "overlap" && $3 >= 65536 { n++; if ($5 >= 85) ok++; else bad = bad " " $3 }
         END { if (n) printf "goal: overlap >= 85%% from 64 KiB with the progress thread: %s\n", (ok == n) ? "met" : "MISSED at" bad }' "$stats"
    awk '$1 == "device" { d = $5 } $1 == "tca" && $2 == "latency" && $3 == 8 { m = $5 }
         $1 == "tca-thread" && $2 == "latency" && $3 == 8 { t = $5 }
         END { printf "\ndevice PIO put+notify 8 B one-way (tca_device_bench, median): %.3f us\n", d
               printf "MPI-over-device overhead, 8 B: %.3f / %.3f = %.2fx\n", m, d, m / d
               printf "progress thread cost, 8 B latency: thread on %.3f us / off %.3f us = %.2fx\n", t, m, t / m }' "$stats"
} | tee "$out/table.txt"

if ! command -v gnuplot >/dev/null 2>&1 && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq gnuplot-nox >/dev/null 2>&1 || true
fi
if command -v gnuplot >/dev/null 2>&1; then
    for b in latency bw; do
        for c in tca vader vader-nocopy; do
            awk -v b=$b -v c=$c '$1 == c && $2 == b { print $3, $5 }' "$stats" >"$out/$b-$c.dat"
        done
    done
    gnuplot <<GP
set terminal png size 900,600
set logscale xy
set xlabel "message size (bytes)"
set key left top
set output "$out/latency.png"
set ylabel "one-way latency (us, median)"
plot "$out/latency-tca.dat" w lp t "tca", "$out/latency-vader.dat" w lp t "vader (cma)", "$out/latency-vader-nocopy.dat" w lp t "vader (no single copy)"
set output "$out/bandwidth.png"
set ylabel "bandwidth (MB/s, median)"
plot "$out/bw-tca.dat" w lp t "tca", "$out/bw-vader.dat" w lp t "vader (cma)", "$out/bw-vader-nocopy.dat" w lp t "vader (no single copy)"
GP
    echo "plots: $out/latency.png $out/bandwidth.png"
else
    echo "gnuplot not found: no plots (apt-get install gnuplot-nox)"
fi
