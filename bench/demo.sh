#!/bin/sh
# The demo: a GUPS workload (random updates, 90% of them to a 32 MiB hot
# set of a 256 MiB footprint, the hot set shifting half-way) tiered inside
# the tiered VM, with the fast tier at 25% of the footprint.  tiermalloc
# runs beside the oracle placement, the kernel's own tiering
# (numa_balancing=2 + demotion) and plain first touch, in one VM run.
# Prints the table, tiermalloc's own statistics, and writes
# bench/out/gups.png (hit ratio over time) and bench/out/gups.csv.
set -eu
cd "$(dirname "$0")/.."
bench/gups/run.sh 256 32 64 12
echo
echo "tiermalloc's statistics from that run (inside the VM):"
sed -n '/Begin tiermalloc statistics/,/End tiermalloc statistics/p' bench/out/gups.log | sed -n '1,60p'
