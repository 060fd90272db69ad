#!/bin/sh
# Inside the tiered VM: GUPS under each placement, one after the other,
# with the same amount of fast memory for all of them:
#   oracle      the hot set (and as much else as fits) bound to node 0 up front
#   tiermalloc-place  LD_PRELOAD, fast_limit = FAST, migrate:false
#   tiermalloc  LD_PRELOAD, fast_limit = FAST, at each budget of GUPS_BUDGETS
#   kernel      glibc malloc, kernel tiering: numa_balancing=2, demotion on
#   first-touch glibc malloc, no tiering at all
#   damon       glibc malloc, DAMON-based tiering (damon_tier.sh)
#   memtier-*   memkind's memtier by LD_PRELOAD, STATIC_RATIO and
#               DYNAMIC_THRESHOLD (when libmemkind0 is installed)
# Node 0 is filled with a balloon (huge pages) so that FAST MiB stay free, plus
# the kernel's watermark reserve, plus a small SLACK (bench/balloon.sh):
# the footprint overflows it.
# CSV rows on stdout, summaries on stderr, and before each contender a
# line "progress K N NAME" (bench/gups/run.sh shows it while the VM runs).
set -u
GUPS=$1
LIB=$2
F=${GUPS_FOOTPRINT:-256} H=${GUPS_HOT:-32} FAST=${GUPS_FAST:-64}
A=${GUPS_A:-12} B=${GUPS_B:-12}
. "$(dirname "$0")/../balloon.sh"
SLACK=${GUPS_SLACK:-2}
balloon_up "$GUPS" "$FAST" "$SLACK"
echo "# node 0: $(free0) MiB free after a $fill MiB balloon ($hugepages huge pages; watermark reserve $reserve MiB, slack $SLACK MiB); footprint $F MiB, hot $H MiB, fast $FAST MiB" >&2
# pages the kernel migrated during each contender's run, to stderr
# (bench/report.py sets them against the minimum the workload needs)
mig() { awk '/^pgmigrate_success/ {print $2}' /proc/vmstat; }
m0=0
mark() { m0=$(mig); }
counted() { echo "migrated $1 $(($(mig) - m0))" >&2; balloon_check "$1"; }
MT=$(ls /usr/lib/*/libmemtier.so.0 2>/dev/null | head -n 1)
# contenders: oracle, place, the budgets, kernel, first touch, damon, and
# memtier's two policies when it is installed
K=0 N=$((5 + $(echo ${GUPS_BUDGETS:-1 20} | wc -w)))
[ -z "$MT" ] || N=$((N + 2))
begin() { K=$((K + 1)); echo "progress $K $N $1" >&2; mark; }
run() { # NAME [EXTRA GUPS ARGS]: the caller sets the environment
	name=$1
	shift
	begin "$name"
	"$GUPS" ${GUPS_ARGS:-} -f "$F" -H "$H" -a "$A" -b "$B" -n "$name" "$@" | grep -v '^name,'
	counted "$name"
}
echo "name,t,phase,hit_ratio,hot_fast,mups"
echo 0 >/proc/sys/kernel/numa_balancing
echo false >/sys/kernel/mm/numa/demotion_enabled
run oracle -o "$FAST"
# tiermalloc's placement alone: fast first up to the limit, no migration
begin tiermalloc-place
env LD_PRELOAD="$LIB" TIERMALLOC_CONF="fast_limit:${FAST}M,migrate:false" \
	"$GUPS" ${GUPS_ARGS:-} -f "$F" -H "$H" -a "$A" -b "$B" -n tiermalloc-place | grep -v '^name,'
counted tiermalloc-place
# tiermalloc at each CPU budget of GUPS_BUDGETS (bg_cpu, % of a core):
# under TCG a write fault or a TLB shootdown costs 10 to 100 times what
# it costs on hardware, so the default 1% buys little here.  The
# variables apply to gups alone, not to the grep in run's pipeline.
for pct in ${GUPS_BUDGETS:-1 20}; do
	begin "tiermalloc-$pct%"
	env LD_PRELOAD="$LIB" TIERMALLOC_CONF="fast_limit:${FAST}M,stats_print:true,bg_cpu:$(awk -v p="$pct" 'BEGIN { print p / 100 }')" \
		"$GUPS" ${GUPS_ARGS:-} -f "$F" -H "$H" -a "$A" -b "$B" -n "tiermalloc-$pct%" | grep -v '^name,'
	counted "tiermalloc-$pct%"
done
echo 2 >/proc/sys/kernel/numa_balancing
echo true >/sys/kernel/mm/numa/demotion_enabled
run kernel
echo 0 >/proc/sys/kernel/numa_balancing
echo false >/sys/kernel/mm/numa/demotion_enabled
run first-touch
# DAMON-based tiering by the kernel (DAMOS migrate_hot / migrate_cold,
# settings in damon_tier.sh), over glibc malloc
if sh "$(dirname "$0")/damon_tier.sh" start; then
	run damon
	echo "# damon: kdamonds $(cat /sys/kernel/mm/damon/admin/kdamonds/*/state | tr '\n' ' '); pages migrated $(($(mig) - m0))" >&2
	sh "$(dirname "$0")/damon_tier.sh" stop
else
	K=$((K + 1))
	echo "# damon: DAMON tiering could not start: not run" >&2
fi
# memkind's memtier (Debian libmemkind0), the closest tiering allocator:
# it places each allocation on DRAM or KMEM_DAX memory (node 1 named as
# such) at a fixed byte ratio, here the fast tier's share of the
# footprint, or by size (DYNAMIC_THRESHOLD: small ones to DRAM); it never
# migrates.
if [ -n "$MT" ]; then
	for pol in STATIC_RATIO DYNAMIC_THRESHOLD; do
		begin "memtier-${pol%%_*}"
		env LD_PRELOAD="$MT" MEMKIND_DAX_KMEM_NODES=1 \
			MEMKIND_MEM_TIERS="KIND:DRAM,RATIO:$FAST;KIND:KMEM_DAX,RATIO:$((F - FAST));POLICY:$pol" \
			"$GUPS" ${GUPS_ARGS:-} -f "$F" -H "$H" -a "$A" -b "$B" -n "memtier-${pol%%_*}" | grep -v '^name,'
		counted "memtier-${pol%%_*}"
	done
else
	echo "# memtier: libmemtier.so.0 not installed (Debian libmemkind0): not run" >&2
fi
balloon_down
