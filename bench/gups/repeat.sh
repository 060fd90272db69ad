#!/bin/sh
# The GUPS shift at one configuration, N times in one tiered VM: how
# often and how fast tiermalloc follows the hot set (the reaction target
# is a median and a worst case, which one run cannot show).  Prints each
# run's steady hit ratio and reaction time, then the median and the worst.
#   bench/gups/repeat.sh [RUNS [CONF]]      (default 10 runs, the default
#   configuration: TIERMALLOC_CONF=fast_limit:64M only)
# Same workload as bench/gups/run.sh: 256 MiB, a 32 MiB hot set, 64 MiB
# fast, the shift after 12 s, 12 s after it.
set -eu
top=$(cd "$(dirname "$0")/../.." && pwd)
cd "$top"
RUNS=${1:-10} CONF=${2:-}
if [ "${REPEAT_GUEST:-}" = 1 ]; then # inside the VM
	. bench/balloon.sh
	balloon_up bench/gups/gups 64 2
	echo 0 >/proc/sys/kernel/numa_balancing
	i=0
	while [ $i -lt "$RUNS" ]; do
		i=$((i + 1))
		env LD_PRELOAD="$top/.libs/libtiermalloc.so" TIERMALLOC_CONF="fast_limit:64M${CONF:+,$CONF}" \
			bench/gups/gups -f 256 -H 32 -a 12 -b 12 -n "run$i" 2>&1 >/dev/null | grep -E "^(summary|tiermalloc:)" || echo "summary run$i failed"
	done
	exit 0
fi
make -s bench/gups/gups libtiermalloc.la
echo "GUPS shift, $RUNS runs in one tiered VM, TIERMALLOC_CONF=fast_limit:64M${CONF:+,$CONF}" >&2
REPEAT_GUEST=1 tests/vm/run --topology tiered --mem 768M,1G --timeout 1200 -- \
	env REPEAT_GUEST=1 sh "$top/bench/gups/repeat.sh" "$RUNS" "$CONF" | tee /dev/stderr |
	awk '/^summary/ {
		for (i = 3; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
		r = v["reaction_s"]; if (r ~ /^>/) r = 1e9
		n++; re[n] = r; hit[n] = v["steady_hit"]
	}
	END {
		if (!n) { print "repeat: no run finished" > "/dev/stderr"; exit 1 }
		for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (re[j] < re[i]) { t = re[i]; re[i] = re[j]; re[j] = t }
		med = n % 2 ? re[(n + 1) / 2] : (re[n / 2] + re[n / 2 + 1]) / 2
		printf "reaction after the shift over %d runs: median %s s, worst %s s\n", n,
			(med >= 1e9 ? ">12" : sprintf("%.2f", med)), (re[n] >= 1e9 ? ">12" : sprintf("%.2f", re[n]))
	}'
