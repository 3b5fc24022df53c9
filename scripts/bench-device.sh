#!/bin/sh
# bench-device.sh - the TCA API in the published style against what it can be
# compared with, like with like, in one run (interleaved rounds, min / median
# over them; every process pinned to one core):
#  (a) MPI 8 B ping-pong over btl tca against the same over vader;
#  (b) the TCA API's 8 B DMA ping-pong (tcaStartDMADesc, tcaWaitDMAC,
#      tcaWaitDMARecvDesc on both sides; tca_device_bench) against the
#      physical limit of this machine: a flag ping-pong through a page the two
#      processes share, no library (one cache-line transfer each way).
#      Goal: (b) <= 1.5x the flag ping-pong;
#  (c) the DMA engine's copy (1 MiB descriptors) against plain copies of the
#      same bytes in one process: memcpy, memcpy in the engine's pieces and a
#      streaming-store copy, at sizes in and out of the last-level cache.
#      Goal: >= 0.9x the best plain copy at every size >= 1 MiB.
# Usage: scripts/bench-device.sh [rounds] (default 3).
. "$(dirname "$0")/bench-common.sh"
raw="$out/device-raw.txt"
: >"$raw"
built tca_mpi_bench tca_device_bench
for r in $(seq 1 "$repeats"); do
    echo "device round $r of $repeats ..." >&2
    # shellcheck disable=SC2086
    mpirun --mca pml ob1 $sm_btl --bind-to core -np 2 ./tca_mpi_bench latency8 2>&1 |
        awk '$1 == "RESULT" && $2 == "latency" && $3 == 8 { print "vader_pingpong_8B_us", $4 }' >>"$raw"
    scripts/tca-mpirun --bind-to core -np 2 ./tca_mpi_bench latency8 2>&1 |
        awk '$1 == "RESULT" && $2 == "latency" && $3 == 8 { print "tca_mpi_pingpong_8B_us", $4 }' >>"$raw"
    ./tca_device_bench -q -r 3 2>&1 | awk '
        $1 == "RESULT" && ($2 ~ /^dma_pingpong/ || $2 ~ /^shm_flag/) { print $2, $4 }
        $1 == "RESULT" && $2 ~ /^dma_bw_/ { print $2 "_dma", $3; print $2 "_memcpy", $4; print $2 "_chunked", $6
                                             print $2 "_stream", $7; print $2 "_best", $8 }' >>"$raw"
done
stats="$out/device-stats.txt"
summarize 1 "-k1,1" "$raw" >"$stats"  # key min median max count
awk -v rounds="$repeats" '
    { min[$1] = $2; med[$1] = $3 }
    function row(title, key, ref) {
        if (key in med) printf "%-46s %10.3f %10.3f %10.2f\n", title, min[key], med[key], (med[ref] > 0 ? med[key] / med[ref] : 0)
    }
    END {
        printf "\n(a) MPI 8 B one-way latency, us (%d rounds; min / median)   %10s %10s %10s\n", rounds, "min", "median", "x vader"
        row("MPI ping-pong over vader", "vader_pingpong_8B_us", "vader_pingpong_8B_us")
        row("MPI ping-pong over btl tca", "tca_mpi_pingpong_8B_us", "vader_pingpong_8B_us")
        printf "\n(b) TCA API 8 B one-way latency, us                         %10s %10s %10s\n", "min", "median", "x flag"
        row("flag ping-pong in a shared page (the floor)", "shm_flag_pingpong_8B_us", "shm_flag_pingpong_8B_us")
        row("DMA ping-pong, blocking waits (published)", "dma_pingpong_8B_blocking_us", "shm_flag_pingpong_8B_us")
        row("DMA ping-pong, tcaTest* + tcaProgress", "dma_pingpong_8B_polling_us", "shm_flag_pingpong_8B_us")
        printf "goal: blocking <= 1.50x the flag ping-pong\n"
        printf "\n(c) DMA vs plain copies, GB/s (medians over rounds of per-round medians)\n"
        printf "%-10s %9s %9s %9s %9s %10s\n", "size", "DMA", "memcpy", "chunked", "stream", "DMA/best"
        n = split("4KiB 64KiB 1MiB 4MiB 16MiB 64MiB 128MiB 256MiB 512MiB 1024MiB", s, " ")
        for (i = 1; i <= n; i++) {
            k = "dma_bw_" s[i]
            if ((k "_dma") in med)
                printf "%-10s %9.2f %9.2f %9.2f %9.2f %10.2f\n", s[i], med[k "_dma"], med[k "_memcpy"], med[k "_chunked"], med[k "_stream"], med[k "_best"]
        }
        printf "goal: DMA/best >= 0.90 at every size >= 1MiB\n"
    }' "$stats" | tee "$out/device-table.txt"
