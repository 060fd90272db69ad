#!/bin/sh
# GUPS in the tiered VM: tiermalloc beside the oracle placement, the
# kernel's own tiering and plain first touch, in one VM run.  Prints a
# table (fast-tier hit ratio at steady state, as a share of the oracle's;
# reaction time after the hot set shifts) and writes bench/out/gups.csv,
# bench/out/gups.png (hit ratio over time), bench/out/gups-stats.txt
# (tiermalloc's statistics); progress on stderr while the VM runs.
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
	>"$out/gups.csv" 2>"$out/gups.log" &
vm=$!
trap 'kill "$vm" 2>/dev/null' INT TERM
# Progress while the VM runs (its stderr streams into the log): which
# contender, time elapsed and left, a line per contender and at least
# every 20 s.  Time left: the contenders to come at the mean time of
# those done so far (before the first is done: its two phases + 6 s).
mmss() { printf '%d:%02d' $(($1 / 60)) $(($1 % 60)); }
t0=$(date +%s) k0=0 tk=0 t1=0
said=$((t0 - 20)) # a first line at once
while kill -0 "$vm" 2>/dev/null; do
	sleep 1
	now=$(date +%s)
	p=$(grep '^progress ' "$out/gups.log" 2>/dev/null | tail -n 1)
	k=0 n=0 name=
	[ -z "$p" ] || read -r _ k n name <<EOF
$p
EOF
	[ "$k" != "$k0" ] || [ $((now - said)) -ge 20 ] || continue
	if [ "$k" != "$k0" ]; then
		tk=$now k0=$k
		[ "$t1" -ne 0 ] || t1=$now
	fi
	said=$now
	if [ "$k" -eq 0 ]; then
		echo "gups: $(mmss $((now - t0))) elapsed: booting the tiered VM" >&2
		continue
	fi
	each=$((2 * A + 6))
	[ "$k" -le 1 ] || each=$(((tk - t1) / (k - 1)))
	left=$(((n - k + 1) * each - (now - tk)))
	[ "$left" -ge 0 ] || left=0
	echo "gups: $(mmss $((now - t0))) elapsed, about $(mmss "$left") left: contender $k of $n, $name ($(mmss $((now - tk))) so far)" >&2
done
rc=0
wait "$vm" || rc=$?
trap - INT TERM
[ "$rc" -eq 0 ] || { tail -n 40 "$out/gups.log" >&2; exit 1; }
echo "gups: done in $(mmss $(($(date +%s) - t0)))" >&2
grep -E '^#' "$out/gups.log" | sed 's/^# //' >&2
# tiermalloc's own statistics (stats_print) of each budget, kept aside
sed -n '/Begin tiermalloc statistics/,/End tiermalloc statistics/p' "$out/gups.log" >"$out/gups-stats.txt"
python3 "$top/bench/gups/report.py" "$out/gups.csv" "$out/gups.log" "$A" "$out"
