#!/bin/sh
# bench-device.sh - the TCA API in the published style against its references,
# in one run: the 8 B DMA ping-pong with blocking waits (tcaStartDMADesc,
# tcaWaitDMAC, tcaWaitDMARecvDesc on both sides; tca_device_bench) beside an
# MPI 8 B ping-pong over Open MPI's vader, and loopback DMA bandwidth beside
# memcpy of the same size in the same process.  Interleaved rounds, min /
# median over them.  Goals: ping-pong <= 3x vader; DMA >= 0.9x memcpy at 16 MiB.
# Usage: scripts/bench-device.sh [rounds] (default 3).
. "$(dirname "$0")/bench-common.sh"
raw="$out/device-raw.txt"
: >"$raw"
built tca_mpi_bench tca_device_bench
for r in $(seq 1 "$repeats"); do
    echo "device round $r of $repeats ..." >&2
    mpirun --mca pml ob1 --mca btl vader,self --bind-to core -np 2 ./tca_mpi_bench latency8 2>&1 |
        awk '$1 == "RESULT" && $2 == "latency" && $3 == 8 { print "vader_pingpong_8B_us", $4 }' >>"$raw"
    ./tca_device_bench -q -r 3 2>&1 | awk '$1 == "RESULT" && $2 ~ /^dma_pingpong/ { print $2, $4 }
        $1 == "RESULT" && $2 ~ /^dma_bw_/ { print $2 "_dma", $3; print $2 "_memcpy", $4; print $2 "_ratio", $5 }' >>"$raw"
done
stats="$out/device-stats.txt"
summarize 1 "-k1,1" "$raw" >"$stats"  # key min median max count
awk -v rounds="$repeats" '
    { min[$1] = $2; med[$1] = $3 }
    END {
        printf "\nTCA API, published style, vs its references (%d rounds; min / median)\n", rounds
        printf "%-44s %10s %10s %12s\n", "8 B one-way latency (us)", "min", "median", "x vader"
        v = med["vader_pingpong_8B_us"]
        printf "%-44s %10.3f %10.3f %12s\n", "MPI ping-pong over vader", min["vader_pingpong_8B_us"], v, "1.00"
        split("dma_pingpong_8B_blocking_us dma_pingpong_8B_polling_us", k, " ")
        split("DMA ping-pong, blocking waits (published)|DMA ping-pong, tcaTest* + tcaProgress", t, "|")
        for (i = 1; i <= 2; i++)
            if (k[i] in med) printf "%-44s %10.3f %10.3f %12.2f\n", t[i], min[k[i]], med[k[i]], (v > 0 ? med[k[i]] / v : 0)
        printf "goal: blocking <= 3.00x vader\n\n"
        printf "%-12s %14s %14s %14s\n", "DMA size", "DMA GB/s", "memcpy GB/s", "DMA/memcpy"
        split("1MiB 4MiB 16MiB 64MiB", s, " ")
        for (i = 1; i <= 4; i++)
            if (("dma_bw_" s[i] "_dma") in med)
                printf "%-12s %14.2f %14.2f %14.2f\n", s[i], med["dma_bw_" s[i] "_dma"], med["dma_bw_" s[i] "_memcpy"], med["dma_bw_" s[i] "_ratio"]
        printf "goal: DMA/memcpy >= 0.90 at 16MiB (medians over rounds of per-round medians)\n"
    }' "$stats" | tee "$out/device-table.txt"
