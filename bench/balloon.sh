# Sourced by the guest-side benches: squeeze node 0 with a locked balloon
# (the GUPS program's -B mode) so that FAST MiB stay free for the workload,
# plus the kernel's watermark reserve, plus SLACK MiB for what else lives
# there (page tables, the kernel's own allocations).  Every contender
# meets the same free memory; a program that does not bind its memory
# (first touch, the kernel's tiering, DAMON's, memtier) may use the slack
# too, so it is kept small: the fast tier is then FAST for all within
# SLACK + 2 MiB.  Sets $balloon (its pid) and $fill (MiB locked).
#   balloon_up GUPS_BINARY FAST SLACK
free0() { awk '/MemFree/ {print int($4 / 1024)}' /sys/devices/system/node/node0/meminfo; }
balloon_up() {
	# the high watermarks of node 0's zones, MiB: kswapd keeps this much free
	reserve=$(awk '/^Node 0, zone/ {z=1} /^Node [1-9]/ {z=0} z && $1 == "high" {s += $2} END {print int(s * 4 / 1024) + 2}' /proc/zoneinfo)
	fill=$(($(free0) - $2 - reserve - $3))
	_bfile=$(mktemp)
	"$1" -B "$fill" >"$_bfile" &
	balloon=$!
	# until its pages are locked (seconds under a loaded TCG host), not a
	# fixed sleep: the contenders must all find node 0 squeezed
	_i=0
	while ! grep -q '^balloon' "$_bfile" && kill -0 "$balloon" 2>/dev/null && [ $_i -lt 600 ]; do
		sleep 0.2
		_i=$((_i + 1))
	done
	rm -f "$_bfile"
}
