#!/bin/sh
# The main job: install dependencies, build, then run MPI over btl tca and over
# Open MPI's vader side by side on the loopback device and print the table.
set -e
cd "$(dirname "$0")/.."
sh scripts/install-deps.sh
sh scripts/build.sh
echo
./tca_info | sed -n '1,/^# DMA engine/p' | head -n -1
echo
sh scripts/bench.sh "${1:-3}"
sh scripts/bench-device.sh "${1:-3}"
echo
make -s tca_model_bench >/dev/null
./tca_model_bench -q -r 3
