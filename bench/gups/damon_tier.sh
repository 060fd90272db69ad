#!/bin/sh
# DAMON-based tiering by the kernel, the contender of the GUPS bench (run
# inside the tiered VM, as root): DAMOS migrate_hot / migrate_cold, which
# 6.12 offers only for physical-address monitoring, so one kdamond per
# node over that node's physical range (as the kernel's
# samples/damon/mtier.c does), ranges from /proc/zoneinfo and disjoint
# (two kdamonds over one page would clear each other's accessed bits).
#   kdamond 0: node 1's range, migrate_hot to node 0, young pages only
#   kdamond 1: node 0's range, migrate_cold to node 1, pages not young
# 6.12 has no quota goal on a node's free memory, so a watcher switches
# kdamond 1 on only while node 0 is short of free memory (under its
# watermark reserve + LOW MiB) and off again above reserve + HIGH MiB:
# left on, it demotes whatever is idle for a while, hot data's
# neighbours included, and promotion then fights it.
#   damon_tier.sh start | stop
# Settings (environment): SAMPLE_US 20000, AGGR_US 200000 (at most 10
# accesses counted per aggregation), HOT_MIN 3 (of 10), COLD_AGE 10
# aggregations (2 s), QUOTA_MB 64 per second each way, LOW 16, HIGH 48.
set -eu
D=/sys/kernel/mm/damon/admin/kdamonds
SAMPLE_US=${SAMPLE_US:-20000} AGGR_US=${AGGR_US:-200000}
HOT_MIN=${HOT_MIN:-3} COLD_AGE=${COLD_AGE:-10} QUOTA_MB=${QUOTA_MB:-64}
LOW=${LOW:-16} HIGH=${HIGH:-48}
state=/tmp/damon_tier.watch

range() { # NODE: "start end" in bytes, over its populated zones
	awk -v n="$1" '
		function zone_end() { if (cur && sp > 0 && st != "") { if (lo == "" || st < lo) lo = st; if (st + sp > hi) hi = st + sp } }
		/^Node / { zone_end(); cur = ($2 == n ","); sp = 0; st = "" }
		/^ *spanned/ { sp = $2 }
		/^ *start_pfn:/ { st = $2 }
		END { zone_end(); if (lo == "") exit 1; printf "%d %d\n", lo * 4096, hi * 4096 }' /proc/zoneinfo
}

setup() { # K NODE ACTION TARGET_NID
	k=$D/$1 c=$D/$1/contexts/0
	echo 1 >"$k/contexts/nr_contexts"
	echo paddr >"$c/operations"
	echo "$SAMPLE_US" >"$c/monitoring_attrs/intervals/sample_us"
	echo "$AGGR_US" >"$c/monitoring_attrs/intervals/aggr_us"
	echo 1000000 >"$c/monitoring_attrs/intervals/update_us"
	echo 10 >"$c/monitoring_attrs/nr_regions/min"
	echo 200 >"$c/monitoring_attrs/nr_regions/max"
	echo 1 >"$c/targets/nr_targets"
	echo 1 >"$c/targets/0/regions/nr_regions"
	set -- "$@" $(range "$2")
	echo "$6" >"$c/targets/0/regions/0/end"
	echo "$5" >"$c/targets/0/regions/0/start"
	echo 1 >"$c/schemes/nr_schemes"
	s=$c/schemes/0
	echo "$3" >"$s/action"
	echo "$4" >"$s/target_nid"
	echo 4096 >"$s/access_pattern/sz/min"
	echo 18446744073709551615 >"$s/access_pattern/sz/max"
	if [ "$3" = migrate_hot ]; then
		echo "$HOT_MIN" >"$s/access_pattern/nr_accesses/min"
		echo 4294967295 >"$s/access_pattern/nr_accesses/max"
		echo 0 >"$s/access_pattern/age/min"
	else
		echo 0 >"$s/access_pattern/nr_accesses/min"
		echo 0 >"$s/access_pattern/nr_accesses/max"
		echo "$COLD_AGE" >"$s/access_pattern/age/min"
	fi
	echo 4294967295 >"$s/access_pattern/age/max"
	echo $((QUOTA_MB << 20)) >"$s/quotas/bytes"
	echo 1000 >"$s/quotas/reset_interval_ms"
	# 6.12's filters exclude what they match (matching Y) or what they
	# do not (N): promote only young pages, demote only pages not young
	echo 1 >"$s/filters/nr_filters"
	echo young >"$s/filters/0/type"
	if [ "$3" = migrate_hot ]; then echo N; else echo Y; fi >"$s/filters/0/matching"
}

free0() { awk '/MemFree/ {print int($4 / 1024)}' /sys/devices/system/node/node0/meminfo; }

case ${1:-} in
start)
	[ -d "$D" ] || { echo "damon_tier: no DAMON sysfs interface" >&2; exit 1; }
	echo 2 >"$D/nr_kdamonds"
	setup 0 1 migrate_hot 0
	setup 1 0 migrate_cold 1
	echo on >"$D/0/state"
	reserve=$(awk '/^Node 0, zone/ {z=1} /^Node [1-9]/ {z=0} z && $1 == "high" {s += $2} END {print int(s * 4 / 1024)}' /proc/zoneinfo)
	(
		on=0
		while [ -e "$state" ]; do
			f=$(free0)
			if [ $on = 0 ] && [ "$f" -lt $((reserve + LOW)) ]; then
				echo on >"$D/1/state" && on=1
			elif [ $on = 1 ] && [ "$f" -gt $((reserve + HIGH)) ]; then
				echo off >"$D/1/state" && on=0
			fi
			sleep 0.25
		done
		[ $on = 0 ] || echo off >"$D/1/state"
	) &
	echo $! >"$state"
	;;
stop)
	pid=$(cat "$state" 2>/dev/null || true)
	rm -f "$state"
	[ -z "$pid" ] || while kill -0 "$pid" 2>/dev/null; do sleep 0.1; done
	echo off >"$D/0/state" 2>/dev/null || true
	echo off >"$D/1/state" 2>/dev/null || true
	echo 0 >"$D/nr_kdamonds"
	;;
*)
	echo "usage: damon_tier.sh start | stop" >&2
	exit 2
	;;
esac
