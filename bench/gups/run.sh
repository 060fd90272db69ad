#!/bin/sh
# GUPS in the tiered VM: tiermalloc beside the oracle placement, the
# kernel's own tiering and plain first touch, in one VM run.  Prints a
# table (fast-tier hit ratio at steady state, as a share of the oracle's;
# reaction time after the hot set shifts) and writes bench/out/gups.csv,
# bench/out/gups.png (hit ratio over time).
#   bench/gups/run.sh [footprint-MiB hot-MiB fast-MiB phase-seconds]
# Environment: GUPS_BUDGETS (guest.sh), GUPS_MEM (the VM's nodes, default
# 768M,1G), GUPS_OUT (output folder, default bench/out), GUPS_BIN (the
# workload: bench/gups/gups, or bench/kv/kv, which takes the same options).
set -eu
top=$(cd "$(dirname "$0")/../.." && pwd)
cd "$top"
F=${1:-256} H=${2:-32} FAST=${3:-$((F / 4))} A=${4:-12}
out=${GUPS_OUT:-$top/bench/out}
mkdir -p "$out"
BIN=${GUPS_BIN:-bench/gups/gups}
make -s "$BIN" libtiermalloc.la
echo "$(basename "$BIN") in the tiered VM: footprint $F MiB, hot set $H MiB (90% of accesses), fast tier $FAST MiB ($((100 * FAST / F))% of the footprint); the hot set shifts after $A s" >&2
GUPS_FOOTPRINT=$F GUPS_HOT=$H GUPS_FAST=$FAST GUPS_A=$A GUPS_B=$A \
	tests/vm/run --topology tiered --mem ${GUPS_MEM:-768M,1G} --timeout 1200 -- \
	bench/gups/guest.sh "$top/$BIN" "$top/.libs/libtiermalloc.so" \
	>"$out/gups.csv" 2>"$out/gups.log" || { tail -n 40 "$out/gups.log" >&2; exit 1; }
grep -E '^#' "$out/gups.log" | sed 's/^# //' >&2
python3 "$top/bench/gups/report.py" "$out/gups.csv" "$out/gups.log" "$A" "$out"
