#!/bin/sh
# Server throughput against jemalloc: redis-server (Debian's, linked with
# jemalloc) driven by redis-benchmark on loopback, under three
# allocators, alternated ROUNDS times in one run:
#   jemalloc         redis as shipped
#   tiermalloc       LD_PRELOAD, defaults (in the VM everything fits on the
#                    fast tier: after a second the monitor idles)
#   tiermalloc-track LD_PRELOAD, advise:true (tracking never idles: what
#                    the heat sources cost the server)
# Natively on this machine, and (--vm) inside the tiered VM as root, where
# DAMON runs too.  Prints requests per second (median) and ratios.
#   bench/scale/redis.sh [--vm] [ROUNDS]
set -eu
top=$(cd "$(dirname "$0")/../.." && pwd)
LIB=$top/.libs/libtiermalloc.so
if [ "${1:-}" = --vm ]; then
	shift
	make -C "$top" -s libtiermalloc.la
	exec "$top/tests/vm/run" --topology tiered --timeout 1500 -- sh "$top/bench/scale/redis.sh" --guest "${1:-3}"
fi
guest=0
if [ "${1:-}" = --guest ]; then
	guest=1
	shift
	echo 0 >/proc/sys/kernel/numa_balancing
fi
ROUNDS=${1:-5}
if ! command -v redis-server >/dev/null || ! command -v redis-benchmark >/dev/null; then
	[ $guest = 0 ] || { echo "redis: not installed on the host" >&2; exit 1; }
	as_root() { if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi; }
	as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends redis-server redis-tools
fi
[ $guest = 1 ] || make -C "$top" -s libtiermalloc.la
N=${REDIS_N:-200000}
[ $guest = 0 ] || N=${REDIS_N:-20000}
PORT=16379
tmp=$(mktemp -d)
trap 'redis-cli -p $PORT shutdown nosave >/dev/null 2>&1 || true; rm -rf "$tmp"' EXIT
serve() { # NAME: start redis-server under that allocator, wait until it answers
	case $1 in
	jemalloc) redis-server --port $PORT --save '' --appendonly no --dir "$tmp" >"$tmp/log" 2>&1 & ;;
	tiermalloc) LD_PRELOAD=$LIB redis-server --port $PORT --save '' --appendonly no --dir "$tmp" >"$tmp/log" 2>&1 & ;;
	tiermalloc-track) LD_PRELOAD=$LIB TIERMALLOC_CONF=advise:true \
		redis-server --port $PORT --save '' --appendonly no --dir "$tmp" >"$tmp/log" 2>&1 & ;;
	esac
	for _ in $(seq 200); do
		redis-cli -p $PORT ping >/dev/null 2>&1 && return 0
		sleep 0.1
	done
	echo "redis: server under $1 did not start" >&2
	cat "$tmp/log" >&2
	exit 1
}
: >"$tmp/res"
for r in $(seq "$ROUNDS"); do
	for a in jemalloc tiermalloc tiermalloc-track; do
		serve $a
		sleep 2 # past the first second: the monitor has settled (idle or tracking)
		redis-benchmark -p $PORT -q -t set,get -n "$N" -r 100000 -d 64 -c 20 2>/dev/null | tr '\r' '\n' |
			sed -n 's/^\(SET\|GET\): \([0-9.]*\) requests per second.*/\1 \2/p' |
			while read -r op v; do echo "$a $op $v" >>"$tmp/res"; done
		redis-cli -p $PORT shutdown nosave >/dev/null 2>&1 || true
		wait
	done
	echo "redis: round $r of $ROUNDS done" >&2
done
where=$([ $guest = 1 ] && echo "in the tiered VM (TCG)" || echo "natively")
python3 - "$tmp/res" "$where" "$N" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1]) if l.strip()]
med = {}
for a, op, v in rows:
    med.setdefault((a, op), []).append(float(v))
print(f"redis-server under redis-benchmark {sys.argv[2]}: {sys.argv[3]} requests per operation, 20 clients, "
      f"64-byte values, 100k random keys; medians of {max(len(v) for v in med.values())} alternated rounds")
print(f"{'allocator':<18} {'SET/s':>10} {'vs jemalloc':>12} {'GET/s':>10} {'vs jemalloc':>12}")
for a in ("jemalloc", "tiermalloc", "tiermalloc-track"):
    cells = []
    for op in ("SET", "GET"):
        m = statistics.median(med.get((a, op), [0]))
        j = statistics.median(med.get(("jemalloc", op), [0]))
        cells += [f"{m:10.0f}", f"{m / j:12.3f}" if j else f"{'-':>12}"]
    print(f"{a:<18} {' '.join(cells)}")
PY
