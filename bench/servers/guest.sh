#!/bin/sh
# Inside the tiered VM: two unmodified servers on loopback under each
# contender, the same fast-tier size for all (the GUPS bench's balloon):
#   redis-server   driven by redis-benchmark: SET and GET, uniform random
#                  keys over SRV_KEYS keys of SRV_VALUE bytes
#   memcached      driven by bench/memc/memc: Zipf (s = 0.99) keys, 90% gets;
#                  after it, where its items are (memc -W): the share of the
#                  gets that node 0 serves, and the page oracle's share
# Contenders:
#   oracle            everything on the fast node (numactl --membind=0,
#                     before the balloon is up): the ceiling
#   first-touch       the server's own allocator, no migration
#   kernel            NUMA-balancing tiering (numa_balancing=2, demotion on)
#   damon             DAMOS migrate_hot/migrate_cold (bench/gups/damon_tier.sh)
#   memtier-STATIC    memkind's libmemtier.so by LD_PRELOAD, fast:slow byte
#   memtier-DYNAMIC   ratio as FAST : (footprint - FAST)
#   tiermalloc-place  LD_PRELOAD, fast_limit = FAST, migrate:false
#   tiermalloc-P%     LD_PRELOAD, fast_limit = FAST, bg_cpu P% (GUPS_BUDGETS)
#   bench/servers/guest.sh GUPS-BINARY MEMC-BINARY LIBTIERMALLOC
# Environment: SRV_KEYS (100000), SRV_VALUE (512), SRV_FAST (MiB, 16),
# SRV_REQS (redis-benchmark requests per test, 20000), SRV_SECS (memc's
# measured seconds, 10), SRV_FOOT (footprint MiB for memtier's ratio,
# default keys x (value + 128)), SRV_WARM (seconds the server runs its
# load before the measurement, so that migration can act: 5), SRV_FILL
# (0: no fill before the load, as in bench/run --quick), SRV_SLACK (MiB
# left free on node 0 beside FAST and the watermark reserve: 2).
# CSV on stdout: name,server,op,requests,rps,p50_us,p99_us,migrated_pages
set -u
GUPS=$1 MEMC=$2 LIB=$3
K=${SRV_KEYS:-100000} V=${SRV_VALUE:-512} FAST=${SRV_FAST:-16}
REQS=${SRV_REQS:-20000} SECS=${SRV_SECS:-10} WARM=${SRV_WARM:-5} FILL=${SRV_FILL:-1}
FOOT=${SRV_FOOT:-$((K * (V + 128) / 1048576 + 1))}
[ "$FOOT" -gt "$FAST" ] || FOOT=$((FAST * 4))
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
RPORT=6421 MPORT=11321
. "$(dirname "$0")/../balloon.sh"
migrated() { awk '/^pgmigrate_success/ {print $2}' /proc/vmstat; }
wait_port() { # CHECK-COMMAND: up to 20 s
	i=0
	while ! "$@" >/dev/null 2>&1; do
		i=$((i + 1))
		[ $i -lt 200 ] || return 1
		sleep 0.1
	done
}
mc_up() { "$MEMC" -p "$MPORT" -k 1 -n 1 -g 1; }

redis_one() { # NAME PREFIX...: the prefix (env, numactl) runs the server
	name=$1
	shift
	m0=$(migrated)
	"$@" redis-server --port "$RPORT" --save '' --appendonly no --daemonize no \
		>"$tmp/redis.log" 2>&1 &
	pid=$!
	if ! wait_port redis-cli -p "$RPORT" ping; then
		echo "# servers: redis-server under $name did not start: $(tail -n 3 "$tmp/redis.log" | tr '\n' ' ')" >&2
		kill "$pid" 2>/dev/null
		wait "$pid"
		return
	fi
	# fill about 86% of the keyspace (random keys, twice its size), pipelined
	[ "$FILL" = 0 ] || redis-benchmark -p "$RPORT" -t set -n $((2 * K)) -r "$K" -d "$V" -P 32 -q >/dev/null 2>&1
	# warm: the same load, unmeasured, so that migration can follow it
	[ "$WARM" = 0 ] || timeout "$WARM" redis-benchmark -p "$RPORT" -t get -n $((100 * REQS)) -r "$K" -d "$V" -c 4 -q \
		>/dev/null 2>&1
	redis-benchmark -p "$RPORT" -t set,get -n "$REQS" -r "$K" -d "$V" -c 4 --csv >"$tmp/rb.csv" 2>/dev/null
	mem=$(redis-cli -p "$RPORT" info memory | sed -n 's/^used_memory:\([0-9]*\).*/\1/p')
	redis-cli -p "$RPORT" shutdown nosave >/dev/null 2>&1
	wait "$pid"
	mig=$(($(migrated) - m0))
	# "SET","rps","avg","min","p50","p95","p99","max" (ms)
	awk -F'"' -v n="$name" -v req="$REQS" -v mig="$mig" 'NR > 1 && NF > 10 {
		printf "%s,redis,%s,%d,%.0f,%.0f,%.0f,%d\n", n, $2, req, $4, $10 * 1000, $14 * 1000, mig }' "$tmp/rb.csv"
	echo "# servers: redis under $name: used_memory $((${mem:-0} / 1048576)) MiB, $mig pages migrated" >&2
}

memc_one() { # NAME PREFIX...
	name=$1
	shift
	m0=$(migrated)
	"$@" memcached -p "$MPORT" -U 0 -l 127.0.0.1 -t 1 -m $((FOOT * 2 + 64)) -u root \
		>"$tmp/memc.log" 2>&1 &
	pid=$!
	if ! wait_port mc_up; then
		echo "# servers: memcached under $name did not start: $(tail -n 3 "$tmp/memc.log" | tr '\n' ' ')" >&2
		kill "$pid" 2>/dev/null
		wait "$pid"
		return
	fi
	[ "$FILL" = 0 ] || "$MEMC" -p "$MPORT" -k "$K" -d "$V" -F >/dev/null
	[ "$WARM" = 0 ] || "$MEMC" -p "$MPORT" -k "$K" -d "$V" -t "$WARM" >/dev/null
	row=$("$MEMC" -p "$MPORT" -k "$K" -d "$V" -t "$SECS")
	# where the items are: the share of the Zipf gets node 0 serves, and
	# the best share FAST MiB of the server's pages could give
	where=$("$MEMC" -W "$pid" -k "$K" -d "$V" -f "$FAST" 2>&1)
	echo "itemshare $name memcached $(echo "$where" | sed -n 's/^where found=\([0-9]*\) hit=\([0-9.]*\) page_oracle=\([0-9.]*\)$/\2 \3 \1/p')" >&2
	kill "$pid"
	wait "$pid"
	mig=$(($(migrated) - m0))
	# requests,seconds,rps,p50_us,p99_us,miss_ratio
	echo "$row" | awk -F, -v n="$name" -v mig="$mig" 'NF == 6 {
		printf "%s,memcached,GET90,%d,%.0f,%.0f,%.0f,%d\n", n, $1, $3, $4, $5, mig }'
	echo "# servers: memcached under $name: miss ratio $(echo "$row" | cut -d, -f6), $mig pages migrated" >&2
}

both() { # NAME PREFIX...
	redis_one "$@"
	memc_one "$@"
	balloon_check "$1"
}

tiering() { # on | off: the kernel's NUMA-balancing tiering
	if [ "$1" = on ]; then
		echo 2 >/proc/sys/kernel/numa_balancing
		echo true >/sys/kernel/mm/numa/demotion_enabled
	else
		echo 0 >/proc/sys/kernel/numa_balancing
		echo false >/sys/kernel/mm/numa/demotion_enabled
	fi
}

echo "name,server,op,requests,rps,p50_us,p99_us,migrated_pages"
tiering off
# the oracle first, while node 0 is not squeezed: all of it on fast memory
if command -v numactl >/dev/null; then
	both oracle numactl --membind=0
else
	echo "# servers: numactl missing: no oracle" >&2
fi
SLACK=${SRV_SLACK:-2}
balloon_up "$GUPS" "$FAST" "$SLACK"
echo "# servers: node 0: $(free0) MiB free after a $fill MiB balloon; keys $K x $V B (~$FOOT MiB), fast $FAST MiB" >&2
both first-touch env
tiering on
both kernel env
tiering off
if sh "$here/../gups/damon_tier.sh" start; then
	both damon env
	sh "$here/../gups/damon_tier.sh" stop
else
	echo "# servers: DAMON tiering could not start: not run" >&2
fi
MT=$(ls /usr/lib/*/libmemtier.so.0 2>/dev/null | head -n 1)
if [ -n "$MT" ]; then
	for pol in STATIC_RATIO DYNAMIC_THRESHOLD; do
		both "memtier-${pol%%_*}" env LD_PRELOAD="$MT" MEMKIND_DAX_KMEM_NODES=1 \
			MEMKIND_MEM_TIERS="KIND:DRAM,RATIO:$FAST;KIND:KMEM_DAX,RATIO:$((FOOT - FAST));POLICY:$pol"
	done
else
	echo "# servers: libmemtier.so.0 not installed (Debian libmemkind0): not run" >&2
fi
both tiermalloc-place env LD_PRELOAD="$LIB" TIERMALLOC_CONF="fast_limit:${FAST}M,migrate:false"
for pct in ${GUPS_BUDGETS:-20}; do
	both "tiermalloc-$pct%" env LD_PRELOAD="$LIB" \
		TIERMALLOC_CONF="fast_limit:${FAST}M,bg_cpu:$(awk -v p="$pct" 'BEGIN { print p / 100 }')"
done
balloon_down
rm -rf "$tmp"
