#!/bin/sh
# The main job: install dependencies, build, describe the device and run the
# device benchmark on the loopback device (2 processes), printing its table.
set -e
cd "$(dirname "$0")/.."
sh scripts/install-deps.sh
sh scripts/build.sh
make -j"$(nproc)" tca_device_bench >/dev/null
echo
./tca_info | sed -n '1,/^# DMA engine/p' | head -n -1
echo
./tca_device_bench "$@"
