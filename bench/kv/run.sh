#!/bin/sh
# The Zipf key-value workload (bench/kv/kv.c) in the tiered VM against the
# same contenders as GUPS (bench/gups/guest.sh): table, CSV and plot in
# bench/out/kv/.  The hit ratio counts item accesses; "reaction" is the
# time until 90% of the accesses to the newly popular keys (those that
# draw half of all accesses) land on the fast tier.
#   bench/kv/run.sh [items-MiB fast-MiB phase-seconds] [-r]  (256 64 12)
#   -r: read-only (gets only; default 90% gets, 10% sets)
set -eu
top=$(cd "$(dirname "$0")/../.." && pwd)
F=${1:-256} FAST=${2:-64} A=${3:-12}
[ "${4:-}" != -r ] || export GUPS_ARGS=-r
# glibc's 16-byte headers and the arrays the program keeps: node 1 holds
# the footprint half again
GUPS_BIN=bench/kv/kv GUPS_OUT=${GUPS_OUT:-$top/bench/out/kv} GUPS_MEM=${GUPS_MEM:-768M,$((F * 3 / 2 + 512))M} \
	exec "$top/bench/gups/run.sh" "$F" 0 "$FAST" "$A"
