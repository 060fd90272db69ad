#!/bin/sh
# What tracking costs as the footprint grows, natively on this machine, in
# advisor mode (one NUMA node: advise:true runs the heat sources and the
# monitor without migrating), beside plain jemalloc in the same run.
#   bench/scale/run.sh [--quick] [footprints in MiB...]
# Default footprints: 256 1024 4096 16384 65536.  At most TOUCH_MAX MiB
# (8192) of a footprint is touched: the rest is allocated and committed
# but never written (the 64 GiB case needs no 64 GiB of RAM).  For each
# footprint, two workloads: a written hot set and a read-only one (5% of
# the touched part, 90% of the accesses; 10% go uniformly to the rest of
# the touched part), paced at RATE million accesses per second; the hot
# set moves after A seconds.  And one unpaced run of each allocator for
# the access rate the program gets.  Writes bench/out/scale.csv,
# bench/out/scale.png and prints a table.  --quick: 64 and 256 MiB, short
# phases (checks that it runs and its output is well formed).
# Environment: BG (bg_cpu of the paced runs, 0.01), RATE, A (seconds a
# phase), W (steady window), ROUNDS (unpaced rounds), TOUCH_MAX.
set -eu
top=$(cd "$(dirname "$0")/../.." && pwd)
cd "$top"
quick=0
if [ "${1:-}" = --quick ]; then
	quick=1
	shift
fi
FOOT=${*:-256 1024 4096 16384 65536}
A=${A:-10} W=${W:-4} RATE=${RATE:-2} TOUCH_MAX=${TOUCH_MAX:-8192} ROUNDS=${ROUNDS:-3}
BG=${BG:-0.01}
if [ $quick = 1 ]; then
	FOOT=${*:-64 256}
	# the window holds the budget's payback: a visit cannot be cut
	# short, and one period whose measure finds a pass's worth of write
	# faults (100-300 ms natively at 256 MiB) is paid back by the next
	# periods (a debt of at most 50 of them); a 1 s window read 9.4% of a
	# core in one paced run of a CI run (0.2-1.0% in the other seven)
	A=6 W=5 ROUNDS=1
fi
out=${SCALE_OUT:-$top/bench/out}
mkdir -p "$out"
# SCALE_BUILT=1: the caller built it (the test suite, inside make check)
[ -n "${SCALE_BUILT:-}" ] || make -s bench/scale/scale libtiermalloc.la >/dev/null
S=${top_builddir:-$top}/bench/scale/scale
LIB=${TIERMALLOC_LIB:-$top/.libs/libtiermalloc.so}
JE=$(ls /usr/lib/*/libjemalloc.so.2 2>/dev/null | head -n 1)
csv=$out/scale.csv
echo "footprint_mib,touched_mib,hot_mib,workload,allocator,phase,detect_s,rate_maps,bg_share,cost_p50_us,cost_p99_us,minflt,meta_ours,meta_je,seen_1s,seen_10s,seen_60s,size_90,size_95,size_99,pass_s,window_s,steady_p99_us,pte_kib" >"$csv"
v() { echo "$line" | sed -n "s/.* $1=\([^ ]*\).*/\1/p"; }
row() { # F T H WL AL set by the caller; scale's output on stdin
	while read -r line; do
		case $line in name=*) ;; *) continue ;; esac
		echo "$F,$T,$H,$WL,$AL,$(v phase),$(v detect_s),$(v rate_maps),$(v bg_share),$(v cost_p50_us),$(v cost_p99_us),$(v minflt),$(v meta_ours),$(v meta_je),$(v seen_1s),$(v seen_10s),$(v seen_60s),$(v size_90),$(v size_95),$(v size_99),$(v pass_s),$(v window_s),$(v steady_p99_us),$(v pte_kib)" >>"$csv"
	done
}
for F in $FOOT; do
	T=$((F < TOUCH_MAX ? F : TOUCH_MAX))
	H=$((T / 20))
	[ $H -ge 2 ] || H=2
	echo "scale: footprint $F MiB, $T MiB touched, hot set $H MiB" >&2
	for WL in written read-only; do
		r=
		[ $WL = read-only ] && r=-r
		AL=tiermalloc
		LD_PRELOAD=$LIB TIERMALLOC_CONF=advise:true,bg_cpu:$BG "$S" -f "$F" -t "$T" -H "$H" $r -R "$RATE" \
			-a "$A" -b "$A" -w "$W" -n "$F" | row
	done
	# jemalloc, same paced workload: the faults the program takes anyway
	WL=written AL=jemalloc
	LD_PRELOAD=$JE "$S" -f "$F" -t "$T" -H "$H" -R "$RATE" -a "$W" -b "$W" -w "$W" -n "$F" | row
	# the rate the program gets: unpaced, the allocators alternated
	# ROUNDS times (this machine is noisy: medians)
	for _ in $(seq "$ROUNDS"); do
		for AL in jemalloc tiermalloc; do
			WL=unpaced
			if [ $AL = jemalloc ]; then
				LD_PRELOAD=$JE "$S" -f "$F" -t "$T" -H "$H" -a "$W" -b "$W" -w "$W" -n "$F" | row
			else
				LD_PRELOAD=$LIB TIERMALLOC_CONF=advise:true "$S" -f "$F" -t "$T" -H "$H" -a "$W" \
					-b "$W" -w "$W" -n "$F" | row
			fi
		done
	done
done
python3 "$top/bench/scale/report.py" "$csv" "$out"
