#!/bin/sh
# bench-rma.sh - MPI one-sided communication over btl tca (osc rdma on its
# puts, emulated gets and atomics) against Open MPI's own one-sided paths on
# this host, in one run: osc rdma over vader/sm (CMA single copy; the
# issue's reference), osc sm (MPI_Win_allocate, which Open MPI gives osc sm
# on one host) and osc ucx over UCX's shared-memory transports (where it
# starts).  Rounds (12 by default) of every configuration, alternating, in
# reverse order every other round, each round after a cache-line probe;
# tca_rma_bench (OSU-style: a passive-target epoch, every operation flushed)
# measures put/get latency and bandwidth, accumulate, fetch-and-op and
# compare-and-swap latency.  The tables (scripts/bench_report.py): per size
# tca's median, the same round's osc rdma over vader/sm, the ratio's median
# and worst round; osc sm and osc ucx beside.  Usage: scripts/bench-rma.sh
# [rounds].  Expects a build (scripts/build.sh); results in bench-results/.
# TCA_BENCH_BASE=DIR: also the components of another commit's build in DIR
# (against the same Open MPI) as "tca-base" in every round, and tca's ratio to
# it per size (Open MPI 4.1 ran no window over btl tca before its atomics).
# TCA_RMA_SIZES=FIRST:LAST: every power of two in that range (OSU's sizes)
# instead of 8 B, 32 B, ... (x4) to 4 MiB; TCA_RMA_TESTS: the tests to run.
BENCH_REPEATS=${BENCH_REPEATS:-12}
. "$(dirname "$0")/bench-common.sh"
common="--bind-to core -np 2"
raw="$out/rma-raw.txt"
: >"$raw"
built tca_rma_bench tca_cacheline_probe
tests=${TCA_RMA_TESTS:-put_lat get_lat put_bw get_bw acc_lat fop_lat cas_lat}
[ -z "${TCA_RMA_SIZES:-}" ] || tests="-s $TCA_RMA_SIZES $tests"

# osc ucx needs pml ucx (4.1 selects it only for listed devices: name them all).
ucx="mpirun --mca pml ucx --mca pml_ucx_tls any --mca pml_ucx_devices any --mca osc ucx -x UCX_TLS=sm,self"
# shellcheck disable=SC2086
if ! timeout 60 $ucx $common ./tca_rma_bench fop_lat 2>/dev/null | grep -q '^RESULT'; then
    echo "osc ucx does not run here: its column stays empty" >&2
    ucx=
fi

run() { # config command...: appends "R round config bench size value"
    name=$1
    shift
    "$@" 2>&1 | awk -v c="$name" -v r="$round" '$1 == "RESULT" { print "R", r, c, $2, $3, $4 }' >>"$raw"
}
configs="tca $sm_name-osc-rdma osc-sm ucx"
base_dir=${TCA_BENCH_BASE:-}
if [ -n "$base_dir" ]; then
    base_dir=$(cd "$base_dir" && pwd)
    [ -f "$base_dir/.libs/mca_btl_tca.so" ] || { echo "TCA_BENCH_BASE: no built components in $base_dir" >&2; exit 1; }
    configs="$configs tca-base"
fi
run_config() {
    # shellcheck disable=SC2086
    case $1 in
    tca) run tca scripts/tca-mpirun $common ./tca_rma_bench $tests ;;
    "$sm_name-osc-rdma") run "$1" mpirun --mca pml ob1 $sm_btl --mca osc rdma $common ./tca_rma_bench $tests ;;
    osc-sm) run osc-sm mpirun --mca pml ob1 $sm_btl --mca osc sm $common ./tca_rma_bench -w allocate $tests ;;
    ucx) [ -z "$ucx" ] || run ucx $ucx $common ./tca_rma_bench $tests ;;
    tca-base) (export TCA_COMPONENT_DIR="$base_dir"/.libs; run tca-base scripts/tca-mpirun $common ./tca_rma_bench $tests) ;;
    esac
}
for round in $(seq 1 "$repeats"); do
    probe=$(./tca_cacheline_probe)
    echo "$probe" | awk -v r="$round" '$1 == "PROBE" { print "P", r, $3, $5 }' >>"$raw"
    echo "round $round of $repeats: $probe" >&2
    order=$configs
    [ $((round % 2)) = 0 ] && order=$(echo "$configs" | tr ' ' '\n' | sed '1!G;h;$!d' | tr '\n' ' ')
    for c in $order; do
        run_config "$c"
    done
done

{
    echo "MPI one-sided: osc rdma over btl tca vs osc rdma over $sm_name, osc sm and osc ucx (Open MPI $(ompi_info --version | sed -n 's/^Open MPI v//p')), same run, $repeats rounds, 2 ranks bound to cores"
    echo "ratio: tca / osc rdma over $sm_name in the same round; median and worst round (RMA goals judged on the median)"
    show="osc-sm,ucx" pair=""
    [ -z "$base_dir" ] || { show="tca-base,$show"; pair="--pair tca:tca-base"; }
    # shellcheck disable=SC2086
    python3 scripts/bench_report.py "$raw" --refs "$sm_name-osc-rdma" --show "$show" $pair \
        --benches "put_lat,get_lat,put_bw,get_bw,acc_lat,fop_lat,cas_lat"
} | tee "$out/rma-table.txt"
