# Sourced by guest-ctl.sh and guest-default.sh: a running, unmodified
# program for the tiermalloc command to act on, and the check that a
# lower fast_limit set from outside is obeyed.  Uses TM (the command) and
# STOP (the stop file the program waits for).

# ctl_prog LIMIT [CONF]: python under `tiermalloc run`, 192 MiB touched,
# the first 32 MiB kept hot, until $STOP exists (no CONF: the defaults)
ctl_prog() {
	if [ -n "${2:-}" ]; then set -- --fast-limit "$1" -c "$2"; else set -- --fast-limit "$1"; fi
	exec "$TM" run "$@" -- ${PYTHON3:-python3} -c '
import os, sys, time
b = bytearray(192 << 20)
for i in range(0, len(b), 4096): b[i] = 1
print("ready", flush=True)
while not os.path.exists(sys.argv[1]):
    for i in range(0, 32 << 20, 4096): b[i] = (b[i] + 1) & 255
    time.sleep(0.05)
' "$STOP"
}
ctl_wait() { # FILE: until the program said it is ready (30 s at most)
	i=0
	while [ $i -lt 300 ] && ! grep -q ready "$1" 2>/dev/null; do sleep 0.1; i=$((i + 1)); done
}
num() { sed -n 's/^[^=]*=\([0-9]*\).*/\1/p'; }
# The kernel's count of PID's pages on node 1 (numa_maps, base pages).
node1_pages() {
	awk '{ for (i = 1; i <= NF; i++) if ($i ~ /^N1=/) { sub(/^N1=/, "", $i); s += $i } } END { print s + 0 }' /proc/$1/numa_maps 2>/dev/null
}
# ctl_lower PID: tier.fast_limit=48M set from outside; within 30 s the
# fast bytes fall under it, from at least 100 MiB, something was demoted,
# and the kernel shows at least 32 MiB more of the program on node 1 (the
# library's own counts alone passed with the moves made no-ops: the
# NOMOVE mutant, tests/README.md).  Sets before, after, dem (bytes),
# moved (MiB, the kernel's) and took (s); the status is the check's.
ctl_lower() {
	k0=$(node1_pages $1)
	before=$("$TM" ctl $1 tier.0.committed | num)
	"$TM" ctl $1 tier.fast_limit=48M >/dev/null 2>&1
	i=0
	while [ $i -lt 60 ]; do
		after=$("$TM" ctl $1 tier.0.committed | num)
		[ "${after:-${before:-0}}" -le $((48 << 20)) ] && break
		sleep 0.5
		i=$((i + 1))
	done
	took=$((i / 2))
	dem=$("$TM" ctl $1 stats.demoted_bytes | num)
	moved=$((($(node1_pages $1) - ${k0:-0}) / 256))
	[ "${before:-0}" -ge $((100 << 20)) ] && [ "${after:-$((1 << 40))}" -le $((48 << 20)) ] && [ "${dem:-0}" -gt 0 ] &&
		[ "$moved" -ge 32 ]
}
