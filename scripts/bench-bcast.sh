#!/bin/sh
# bench-bcast.sh - persistent broadcast: coll tca (offload and thread engines)
# against libnbc's MPI_Bcast_init (MPIX_ in 4.1) and tuned's blocking MPI_Bcast, all over
# btl tca, in interleaved rounds for np 2, 4 and 8.  Prints min/median tables
# with ratios, timed both ways (the slowest rank's pace in a loop, and each
# rank's own call averaged over ranks, as OSU times it), MPI_Start and
# bcast_init costs, overlap; PNG plot with gnuplot.
# Usage: scripts/bench-bcast.sh [-d host|cuda] [repeats] (default 3).  Results: bench-results/bcast-*.
#
# -d cuda: cudaMalloc'd buffers; coll tca (offload, thread) against libnbc's
# persistent broadcast and tuned's MPI_Bcast over Open MPI's own CUDA path
# (smcuda), np 2, 4, 8, with ratios, the issue's goal (np 4, 1 MiB: offload
# <= 0.5x libnbc) and a PNG plot (bcast-gpu-np4.png).  Without a GPU or a
# CUDA-aware Open MPI it says why and measures nothing.
. "$(dirname "$0")/bench-common.sh"
built tca_bcast_bench
dflag=
[ "$device" = host ] || dflag="-d $device"

run() { # variant np mode mca...
    v=$1 np=$2 mode=$3; shift 3
    # shellcheck disable=SC2068,SC2086
    timeout 600 scripts/tca-mpirun --oversubscribe --bind-to none $@ -np "$np" ./tca_bcast_bench $dflag "$mode" 2>&1 |
        awk -v v="$v" -v np="$np" '$1 == "RESULT" { print v, np, $2, $3, $4 }' >>"$raw"
}
run_ompi() { # variant np mode mca...: Open MPI alone (plain mpirun, no tca component)
    v=$1 np=$2 mode=$3; shift 3
    # shellcheck disable=SC2068,SC2086
    timeout 600 mpirun --oversubscribe --bind-to none $@ -np "$np" ./tca_bcast_bench $dflag "$mode" 2>&1 |
        awk -v v="$v" -v np="$np" '$1 == "RESULT" { print v, np, $2, $3, $4 }' >>"$raw"
}

if [ "$device" = cuda ]; then
    why=$(gpu_skip_reason scripts/tca-mpirun --oversubscribe --bind-to none -np 2 ./tca_bcast_bench -d cuda blocking)
    if [ -n "$why" ]; then
        echo "bench-bcast.sh -d cuda: no GPU rows: $why"
        exit 0
    fi
    raw="$out/bcast-gpu-raw.txt"
    : >"$raw"
    for r in $(seq 1 "$repeats"); do
        for np in 2 4 8; do
            echo "GPU round $r of $repeats, np $np ..." >&2
            run offload "$np" persistent --mca coll_tca_engine offload
            run thread "$np" persistent --mca coll_tca_engine thread
            run_ompi libnbc "$np" persistent --mca pml ob1 --mca btl smcuda,self
            run_ompi tuned "$np" blocking --mca pml ob1 --mca btl smcuda,self
        done
    done
    stats="$out/bcast-gpu-stats.txt"
    summarize 4 "-k1,1 -k2,2n -k3,3 -k4,4n" "$raw" >"$stats"
    {
        echo "persistent broadcast of GPU buffers, $repeats interleaved rounds; coll tca over btl tca, libnbc and tuned over smcuda"
        echo "us per broadcast (max over ranks), best / median"
        for np in 2 4 8; do
            awk -v np="$np" '
                $2 == np && $3 == "bcast" { s[$4] = 1; b[$1, $4] = $5; m[$1, $4] = $6 }
                END {
                    printf "\nnp %d\n%9s %19s %19s %19s %19s %9s %9s\n", np, "bytes", "tca offload", "tca thread", "libnbc smcuda", "tuned smcuda", "off/nbc", "off/tuned"
                    n = 0; for (x in s) z[++n] = x + 0
                    for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (z[j] < z[i]) { t = z[i]; z[i] = z[j]; z[j] = t }
                    split("offload thread libnbc tuned", c, " ")
                    for (i = 1; i <= n; i++) {
                        x = z[i]; printf "%9d", x
                        for (k = 1; k <= 4; k++)
                            if ((c[k], x) in m) printf " %9.2f/%9.2f", b[c[k], x], m[c[k], x]; else printf " %19s", "-"
                        if (("offload", x) in m && ("libnbc", x) in m) printf " %9.2f", m["offload", x] / m["libnbc", x]; else printf " %9s", "-"
                        if (("offload", x) in m && ("tuned", x) in m) printf " %9.2f\n", m["offload", x] / m["tuned", x]; else printf " %9s\n", "-"
                    }
                }' "$stats"
        done
        awk '$2 == 4 && $3 == "bcast" && $4 == 1048576 { m[$1] = $6 }
             END {
                 if (("offload" in m) && ("libnbc" in m))
                     printf "\ngoal: np 4, 1 MiB GPU persistent broadcast %.2fx libnbc (<= 0.5: %s)\n", m["offload"] / m["libnbc"], (m["offload"] <= 0.5 * m["libnbc"]) ? "met" : "MISSED"
                 else print "\ngoal: not judged (no np 4 1 MiB rows for offload and libnbc)"
             }' "$stats"
    } | tee "$out/bcast-gpu-table.txt"
    if command -v gnuplot >/dev/null 2>&1; then
        for v in offload thread libnbc tuned; do
            awk -v v=$v '$1 == v && $2 == 4 && $3 == "bcast" { print $4, $6 }' "$stats" >"$out/bcast-gpu-np4-$v.dat"
        done
        gnuplot <<GP
set terminal png size 900,600
set logscale xy
set xlabel "message size (bytes)"
set ylabel "us per GPU broadcast, np 4 (median)"
set key left top
set output "$out/bcast-gpu-np4.png"
plot "$out/bcast-gpu-np4-offload.dat" w lp t "coll tca offload", "$out/bcast-gpu-np4-thread.dat" w lp t "coll tca thread", "$out/bcast-gpu-np4-libnbc.dat" w lp t "libnbc persistent (smcuda)", "$out/bcast-gpu-np4-tuned.dat" w lp t "tuned MPI_Bcast (smcuda)"
GP
        echo "plot: $out/bcast-gpu-np4.png"
    fi
    exit 0
fi

raw="$out/bcast-raw.txt"
: >"$raw"
for r in $(seq 1 "$repeats"); do
    for np in 2 4 8; do
        echo "round $r of $repeats, np $np ..." >&2
        run offload "$np" persistent --mca coll_tca_engine offload
        run thread "$np" persistent --mca coll_tca_engine thread
        run libnbc "$np" persistent --mca coll_tca_priority -1
        run tuned "$np" blocking
        # The same two with the loopback's timing model on (PEACH2 hop, link and DMA start costs).
        run timed-offload "$np" persistent -x TCA_TIMING=1 --mca coll_tca_engine offload
        run timed-tuned "$np" blocking -x TCA_TIMING=1
    done
done

stats="$out/bcast-stats.txt"
summarize 4 "-k1,1 -k2,2n -k3,3 -k4,4n" "$raw" >"$stats"   # variant np metric size min median max count

{
    echo "persistent broadcast, $repeats interleaved rounds, all over btl tca; us per broadcast (max over ranks), best / median"
    for np in 2 4 8; do
        awk -v np="$np" '
            $2 == np && $3 == "bcast" { s[$4] = 1; b[$1, $4] = $5; m[$1, $4] = $6 }
            END {
                printf "\nnp %d\n%9s %19s %19s %19s %19s %9s %9s %9s\n", np, "bytes", "tca offload", "tca thread", "libnbc", "tuned MPI_Bcast", "off/nbc", "off/tuned", "off/thr"
                n = 0; for (x in s) z[++n] = x + 0
                for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (z[j] < z[i]) { t = z[i]; z[i] = z[j]; z[j] = t }
                split("offload thread libnbc tuned", c, " ")
                for (i = 1; i <= n; i++) {
                    x = z[i]; printf "%9d", x
                    for (k = 1; k <= 4; k++) printf " %9.2f/%9.2f", b[c[k], x], m[c[k], x]
                    printf " %9.2f %9.2f %9.2f\n", m["offload", x] / m["libnbc", x], m["offload", x] / m["tuned", x], m["offload", x] / m["thread", x]
                }
            }' "$stats"
    done
    echo
    echo "the same, timed as OSU times it: each rank its own Start + Wait (blocking: MPI_Bcast), a barrier"
    echo "between iterations, the average over ranks (us), best / median"
    for np in 2 4 8; do
        awk -v np="$np" '
            $2 == np && $3 == "bcast_avg" { s[$4] = 1; b[$1, $4] = $5; m[$1, $4] = $6 }
            END {
                printf "\nnp %d\n%9s %19s %19s %19s %19s %9s %9s\n", np, "bytes", "tca offload", "tca thread", "libnbc", "tuned MPI_Bcast", "off/nbc", "thr/nbc"
                n = 0; for (x in s) z[++n] = x + 0
                for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (z[j] < z[i]) { t = z[i]; z[i] = z[j]; z[j] = t }
                split("offload thread libnbc tuned", c, " ")
                for (i = 1; i <= n; i++) {
                    x = z[i]; printf "%9d", x
                    for (k = 1; k <= 4; k++) printf " %9.2f/%9.2f", b[c[k], x], m[c[k], x]
                    printf " %9.2f %9.2f\n", m["offload", x] / m["libnbc", x], m["thread", x] / m["libnbc", x]
                }
            }' "$stats"
    done
    # The goal of many large messages at once: np 4 up to 1 KiB, <= 1.0x libnbc both ways.
    awk '$2 == 4 && $4 <= 1024 && ($3 == "bcast" || $3 == "bcast_avg") { m[$1, $3, $4] = $6; s[$3 " " $4] = 1 }
         END {
             for (k in s) {
                 split(k, f, " ")
                 q = m["offload", f[1], f[2]] / m["libnbc", f[1], f[2]]
                 printf "goal: np 4, %4d B, %-9s offload/libnbc %.2f (<= 1.0: %s)\n", f[2], f[1] == "bcast" ? "max" : "per-rank", q, q <= 1.0 ? "met" : "MISSED"
             }
         }' "$stats" | sort -k3,3n
    echo
    echo "with the timing model on (TCA_TIMING=1: PEACH2 PIO, hop, link and DMA-start costs), best / median"
    echo "(btl tca's eager rings are mapped stores (tcaPioMap), which the model cannot delay: tuned pays it only for puts)"
    for np in 2 4 8; do
        awk -v np="$np" '
            $2 == np && $3 == "bcast" && $1 ~ /^timed-/ { s[$4] = 1; b[$1, $4] = $5; m[$1, $4] = $6 }
            END {
                printf "\nnp %d\n%9s %19s %19s %9s\n", np, "bytes", "tca offload", "tuned MPI_Bcast", "off/tuned"
                n = 0; for (x in s) z[++n] = x + 0
                for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (z[j] < z[i]) { t = z[i]; z[i] = z[j]; z[j] = t }
                for (i = 1; i <= n; i++) {
                    x = z[i]
                    printf "%9d %9.2f/%9.2f %9.2f/%9.2f %9.2f\n", x, b["timed-offload", x], m["timed-offload", x], b["timed-tuned", x], m["timed-tuned", x], m["timed-offload", x] / m["timed-tuned", x]
                }
            }' "$stats"
    done
    echo
    echo "MPI_Start and bcast_init at 1 KiB (root, us, median) and overlap (%, compute >= max(t, 3 ms) between Start and Wait, median)"
    awk '$1 !~ /^timed-/ && ($3 == "start_us" || $3 == "init_us" || $3 == "overlap") { printf "%-8s np %d %-9s %8d %9.2f\n", $1, $2, $3, $4, $6 }' "$stats"
} | tee "$out/bcast-table.txt"

if command -v gnuplot >/dev/null 2>&1; then
    for v in offload thread libnbc tuned; do
        awk -v v=$v '$1 == v && $2 == 4 && $3 == "bcast" { print $4, $6 }' "$stats" >"$out/bcast-np4-$v.dat"
    done
    gnuplot <<GP
set terminal png size 900,600
set logscale xy
set xlabel "message size (bytes)"
set ylabel "us per broadcast, np 4 (median)"
set key left top
set output "$out/bcast-np4.png"
plot "$out/bcast-np4-offload.dat" w lp t "coll tca offload", "$out/bcast-np4-thread.dat" w lp t "coll tca thread", "$out/bcast-np4-libnbc.dat" w lp t "libnbc persistent", "$out/bcast-np4-tuned.dat" w lp t "tuned MPI_Bcast"
GP
    echo "plot: $out/bcast-np4.png"
fi
