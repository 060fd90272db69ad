#!/bin/sh
# The demo: a GUPS workload (random updates, 90% of them to a 32 MiB hot
# set of a 256 MiB footprint, the hot set shifting half-way) tiered inside
# the tiered VM, with the fast tier at 25% of the footprint.  tiermalloc
# (its default budget and a larger one) runs beside the oracle placement,
# the kernel's own tiering (numa_balancing=2 + demotion) and plain first
# touch, in one VM run.  Says which contender runs and how long is left
# while it runs; at the end, the files (bench/out/gups.png, hit ratio over
# time; gups.csv; gups-stats.txt, tiermalloc's own statistics), then the
# table and what it means, last.
set -eu
cd "$(dirname "$0")/.."
exec bench/gups/run.sh 256 32 64 12
