# Sourced by the guest-side benches: squeeze node 0 with a balloon so that
# FAST MiB stay free for the workload, plus the kernel's watermark
# reserve, plus SLACK MiB for what else lives there (page tables, the
# kernel's own allocations).  Every contender meets the same free memory;
# a program that does not bind its memory (first touch, the kernel's
# tiering, DAMON's, memtier) may use the slack too, so it is kept small:
# the fast tier is then FAST for all within SLACK + 2 MiB.
#
# The balloon is node 0's persistent huge pages (nr_hugepages of node 0),
# with a locked process for the odd MiB or what fragmentation left: the
# kernel never migrates, reclaims or demotes a free huge page.  A locked
# process alone is not enough: DAMOS migrate_cold (the damon contender)
# demoted 334 MiB of it to node 1 in 12 s (mlock does not stop
# migration), and the damon and memtier contenders after it then had
# 260 MiB of node 0 where the others had 64.
# Sets $balloon (the locked process's pid, 0 if none), $fill (MiB taken
# in all), $hugepages (node 0's huge pages taken), $free_start, and
# min_free_kbytes to the kernel's default without THP ($min_free_was).
#   balloon_up GUPS_BINARY FAST SLACK
#   balloon_check NAME    after a contender: node 0's room back to where it was
#   balloon_down
HP0=/sys/devices/system/node/node0/hugepages/hugepages-2048kB/nr_hugepages
free0() { awk '/MemFree/ {print int($4 / 1024)}' /sys/devices/system/node/node0/meminfo; }
settle0() { # drop the page cache, compact node 0
	sync
	echo 3 >/proc/sys/vm/drop_caches 2>/dev/null
	echo 1 >/sys/devices/system/node/node0/compact 2>/dev/null
}
balloon_up() {
	# THP made khugepaged raise min_free_kbytes to about 5% of memory, and
	# node 0's watermarks to 45-53 MiB: room that a contender which does
	# not bind its memory fills beside FAST (the kernel's tiering held all
	# of memcached's 62 MiB of items on node 0 with a 16 MiB fast tier,
	# 83-86 MiB of KV's with 64).  The kernel's own default without THP,
	# int_sqrt(lowmem KiB x 16), keeps the watermarks a few MiB.
	_mf=/proc/sys/vm/min_free_kbytes
	min_free_was=$(cat "$_mf" 2>/dev/null || echo 0)
	[ ! -w "$_mf" ] || awk '/^MemTotal/ {printf "%d\n", sqrt($2 * 16)}' /proc/meminfo >"$_mf"
	# the high watermarks of node 0's zones, MiB: kswapd keeps this much free
	reserve=$(awk '/^Node 0, zone/ {z=1} /^Node [1-9]/ {z=0} z && $1 == "high" {s += $2} END {print int(s * 4 / 1024) + 2}' /proc/zoneinfo)
	# the page cache is room too (reclaimed under a contender's pressure:
	# 6-11 MiB after a run), and huge pages need it in whole 2 MiB pieces
	# (after four parts, 19 MiB of the balloon could not be had so)
	settle0
	fill=$(($(free0) - $2 - reserve - $3))
	hugepages=0
	if [ -w "$HP0" ] && [ "$fill" -ge 2 ]; then
		echo $((fill / 2)) >"$HP0" 2>/dev/null
		hugepages=$(cat "$HP0")
	fi
	# the rest (an odd MiB, or what the huge pages could not take)
	rest=$(($(free0) - $2 - reserve - $3))
	balloon=0
	if [ "$rest" -gt 0 ]; then
		_bfile=$(mktemp)
		"$1" -B "$rest" >"$_bfile" &
		balloon=$!
		# until its pages are locked (seconds under a loaded TCG host), not a
		# fixed sleep: the contenders must all find node 0 squeezed
		_i=0
		while ! grep -q '^balloon' "$_bfile" && kill -0 "$balloon" 2>/dev/null && [ $_i -lt 600 ]; do
			sleep 0.2
			_i=$((_i + 1))
		done
		rm -f "$_bfile"
	fi
	[ "$rest" -le 16 ] || echo "# balloon: only $hugepages huge pages on node 0; $rest MiB locked by a process, which DAMOS may demote" >&2
	free_start=$(free0)
}
balloon_check() {
	# a contender's memory is freed when it exits: node 0 back where it
	# started, unless it gained room during the run.  DAMOS demotes any
	# cold page of node 0 (other processes', the page cache: 19 MiB in one
	# KV run): that room is taken back into the balloon, so the next
	# contender meets node 0 as the first did.  Room that cannot be taken
	# back, or a balloon that lost pages, makes the figures not comparable.
	[ -n "${free_start:-}" ] || return 0
	settle0
	_f=$(free0)
	if [ "$_f" -gt $((free_start + 2)) ] && [ -w "$HP0" ]; then
		echo $((hugepages + (_f - free_start) / 2)) >"$HP0" 2>/dev/null
		_h=$(cat "$HP0")
		echo "# balloon: node 0 gained $((_f - free_start)) MiB during $1; $((2 * (_h - hugepages))) MiB taken back" >&2
		hugepages=$_h
		_f=$(free0)
	fi
	[ "$_f" -le $((free_start + 16)) ] && [ "$(cat "$HP0" 2>/dev/null || echo 0)" -ge "$hugepages" ] ||
		echo "# balloon: node 0 has $_f MiB free after $1, $free_start before the runs: node 0 gained room, $1's figures are not comparable" >&2
}
balloon_down() {
	[ "$balloon" -le 0 ] || kill "$balloon" 2>/dev/null
	[ "$hugepages" -le 0 ] || echo 0 >"$HP0"
	[ "${min_free_was:-0}" -le 0 ] || echo "$min_free_was" >/proc/sys/vm/min_free_kbytes 2>/dev/null
}
