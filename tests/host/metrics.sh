#!/bin/sh
# Metrics for a fleet: `tiermalloc stat --openmetrics` checked by promtool
# (Debian's prometheus package), on this host for a non-tiering process
# (ctl:true) and inside the tiered VM for a tiering process, a non-tiering
# one and the two members of a job; its values against the process's own
# stats; the textfile for the node exporter never read half-written.
#   metrics.sh          the host part, then the VM part
#   metrics.sh guest    the VM part (run by the host part inside the VM)
. "${top_srcdir:-.}/tests/lib.sh"
TM=${top_builddir:-.}/tools/tiermalloc
PY=${PYTHON3:-python3}

if ! command -v promtool >/dev/null; then
	skip "promtool not installed (Debian package prometheus; ./dev.sh deps installs it)"
	done_testing
	exit
fi

# prog NAME CONF: a python process with tiermalloc, COMM set to NAME,
# touching 24 MiB, then waiting for $tmp/stop; its pid in $!
prog() {
	"$TM" run -c "$2" -- "$PY" -c '
import os, sys, time
open("/proc/self/comm", "w").write(sys.argv[2])
b = bytearray(24 << 20)
for i in range(0, len(b), 4096): b[i] = 1
print("ready", flush=True)
while not os.path.exists(sys.argv[1]):
    time.sleep(0.05)
' "$tmp/stop" "$1" >"$tmp/$1.out" 2>&1 &
}
wait_ready() { # wait_ready NAME
	i=0
	while [ $i -lt 300 ] && ! grep -q ready "$tmp/$1.out" 2>/dev/null; do sleep 0.1; i=$((i + 1)); done
}
# value METRIC PID [MORE]: the value of METRIC's sample for PID (the
# first one, or the one whose labels also match the pattern MORE)
value() {
	grep "^$1{pid=\"$2\"" "$tmp/m.prom" | grep -e "${3:-.}" | head -n 1 | sed 's/.* //'
}
check() { # check FILE WHAT: promtool on FILE
	promtool check metrics <"$1" >"$tmp/lint" 2>&1
	r=$?
	ok $r "promtool check metrics passes on $2"
	[ $r -eq 0 ] || sed 's/^/# /' "$tmp/lint" | head -n 20
}
# textfile_atomic: a writer rewriting the textfile every 20 ms, a reader
# reading it 100 times: every copy whole (all families' HELP lines; the
# last family, from the snapshot, with as many samples as the first), the
# directory left without temporary files.
#   textfile_atomic DIR [PID...]
textfile_atomic() {
	tf=$1
	shift
	mkdir -p "$tf"
	"$TM" stat --openmetrics --textfile "$tf/tiermalloc.prom" --watch 0.02 "$@" 2>"$tmp/tf.err" &
	wpid=$!
	i=0
	while [ $i -lt 100 ] && [ ! -f "$tf/tiermalloc.prom" ]; do sleep 0.05; i=$((i + 1)); done
	want=$(grep -c '^# HELP' "$tf/tiermalloc.prom")
	torn=0
	for i in $(seq 1 100); do
		# cat: one open, one file read through (cp refuses a file
		# renamed over while it copies)
		if ! cat "$tf/tiermalloc.prom" >"$tmp/copy" 2>"$tmp/cp.err"; then
			diag "$(cat "$tmp/cp.err")"
			torn=$((torn + 1))
			continue
		fi
		h=$(grep -c '^# HELP' "$tmp/copy")
		first=$(grep -c '^tiermalloc_tiering_active{' "$tmp/copy")
		last=$(grep -c '^tiermalloc_background_periods_total{' "$tmp/copy")
		if ! tail -n 1 "$tmp/copy" | grep -q '^tiermalloc_background_periods_total{' || [ "$h" != "$want" ] ||
			[ "$first" != "$last" ]; then
			[ $torn -gt 0 ] || diag "torn copy: $h families of $want, $first then $last samples, ends: $(tail -n 1 "$tmp/copy")"
			torn=$((torn + 1))
		fi
	done
	kill $wpid
	wait $wpid 2>/dev/null
	left=$(ls -A "$tf" | grep -vc '^tiermalloc.prom$')
	[ "$want" -gt 20 ] && [ $torn -eq 0 ] && [ "$left" -eq 0 ]
	ok $? "the textfile, rewritten every 20 ms, read 100 times: never torn ($torn torn, $want families, $left temporary files left)"
	[ $torn -eq 0 ] || sed 's/^/# writer: /' "$tmp/tf.err" | sort | uniq -c | head -n 10
	check "$tf/tiermalloc.prom" "the textfile"
}

if [ "${1:-}" = guest ]; then
	# ---------------------------------------------------------- in the VM
	tmp=$(mktemp -d)
	export TIERMALLOC_CONF="run_dir:$tmp/run"
	# the programs poll for the stop file every 50 ms: it must outlive that
	trap 'touch "$tmp/stop"; sleep 1; rm -rf "$tmp"' EXIT
	echo 0 >/proc/sys/kernel/numa_balancing
	R=run_dir:$tmp/run
	prog tiered "$R,fast_limit:8M,heat_sources:pagemap,bg_cpu:0.2"
	tpid=$!
	prog flat "$R,enabled:false,ctl:true"
	fpid=$!
	prog member1 "$R,job:mj,job_fast_limit:12M,heat_sources:pagemap"
	j1=$!
	prog member2 "$R,job:mj,job_fast_limit:12M,heat_sources:pagemap"
	j2=$!
	for n in tiered flat member1 member2; do wait_ready $n; done
	"$TM" job wait mj 2 --timeout 20 >/dev/null
	sleep 1 # a period or more: the members publish their shares
	"$TM" stat --openmetrics >"$tmp/m.prom" 2>"$tmp/m.err"
	ok $? "stat --openmetrics of every process of this user exits 0"
	check "$tmp/m.prom" "a tiering process, a non-tiering one and the two members of a job"
	a=$(value tiermalloc_tiering_active $tpid) b=$(value tiermalloc_tiering_active $fpid)
	p1=$(value tiermalloc_placed_bytes $tpid 'tier="1"')
	[ "$a" = 1 ] && [ "$b" = 0 ] && [ "${p1:-0}" -gt 0 ]
	ok $? "tiering process: active $a, $p1 bytes placed on tier 1; the non-tiering one: active $b"
	# the same figure as the process's own statistics
	"$TM" stat $tpid --json >"$tmp/t.json"
	limit=$($PY -c 'import json, sys; print(json.load(open(sys.argv[1]))["tiermalloc"]["fast_limit"])' "$tmp/t.json")
	[ "$(value tiermalloc_fast_limit_bytes $tpid)" = "$limit" ] && [ "$limit" = $((8 << 20)) ]
	ok $? "tiermalloc_fast_limit_bytes of the tiering process is its stats' fast_limit ($limit)"
	m1=$(value tiermalloc_job_members $j1) m2=$(value tiermalloc_job_members $j2)
	l1=$(grep "^tiermalloc_job_members{pid=\"$j1\"" "$tmp/m.prom" | grep -c 'job="name:mj"')
	l2=$(grep "^tiermalloc_job_members{pid=\"$j2\"" "$tmp/m.prom" | grep -c 'job="name:mj"')
	bud=$(value tiermalloc_job_fast_limit_bytes $j1)
	[ "$m1" = 2 ] && [ "$m2" = 2 ] && [ "$l1" = 1 ] && [ "$l2" = 1 ] && [ "$bud" = $((12 << 20)) ]
	ok $? "the job's members: job=\"name:mj\" ($l1, $l2), members $m1 and $m2, budget $bud"
	[ -z "$(grep "^tiermalloc_job_members{pid=\"$tpid\"" "$tmp/m.prom" | grep -v 'job=""')" ]
	ok $? "a process outside any job has job=\"\""
	textfile_atomic "$tmp/tf"
	done_testing
	exit
fi

# ---------------------------------------------------------- on this host
tmp=$(mktemp -d)
export TIERMALLOC_CONF="run_dir:$tmp/run"
trap 'touch "$tmp/stop"; sleep 1; rm -rf "$tmp"' EXIT
# a comm that needs escaping in a label value
prog 'q"b\s' "run_dir:$tmp/run,ctl:true"
hpid=$!
wait_ready 'q"b\s'
"$TM" stat --openmetrics $hpid >"$tmp/m.prom" 2>"$tmp/m.err"
ok $? "stat --openmetrics PID of a non-tiering process (ctl:true) exits 0"
check "$tmp/m.prom" "a non-tiering process whose comm needs escaping"
grep -q "^tiermalloc_tiering_active{pid=\"$hpid\",comm=\"q\\\\\"b\\\\\\\\s\",job=\"\"} 0$" "$tmp/m.prom"
ok $? "its labels: pid, comm escaped, job empty; tiering_active 0"
! grep -q '^tiermalloc_fast_hit_ratio{' "$tmp/m.prom"
ok $? "no hit-ratio sample where no heat was measured (absent, not 0)"
"$TM" stat --openmetrics $hpid 1 >"$tmp/m2.prom" 2>"$tmp/m2.err"
r=$?
[ $r -eq 1 ] && grep -q "^tiermalloc: 1: " "$tmp/m2.err" && grep -q "{pid=\"$hpid\"" "$tmp/m2.prom"
ok $? "a PID that cannot be read: named on stderr, exit 1, the others still written"
textfile_atomic "$tmp/tf" $hpid
# a watcher stopped (SIGTERM, as systemd stops it) at 100 moments spread
# over its writes: none may leave its temporary file behind. It watches
# this shell (not a tiermalloc process: named on stderr, nothing to wait
# for), so it spends its time writing; before the fix 23-44 of 100 stops
# left a file, watching a tiermalloc process 0-1.
mkdir -p "$tmp/tfs"
stopped=0
for i in $(seq 1 100); do
	"$TM" stat --openmetrics --textfile "$tmp/tfs/tiermalloc.prom" --watch 0.001 $$ 2>/dev/null &
	w=$!
	sleep "0.0$((i % 10))$((i * 7 % 10))"
	kill $w 2>/dev/null
	wait $w 2>/dev/null
	[ $? -ne 0 ] && stopped=$((stopped + 1))
done
left=$(ls -A "$tmp/tfs" | grep -vc '^tiermalloc.prom$')
[ "$stopped" -ge 80 ] && [ "$left" -eq 0 ]
ok $? "a textfile watcher stopped by SIGTERM 100 times: no temporary file left ($left left, $stopped stopped by the signal)"
"$TM" stat --openmetrics --textfile "$tmp/nodir/x.prom" $hpid 2>"$tmp/e"
[ $? -eq 1 ] && grep -q "nodir/x.prom.tmp-" "$tmp/e"
ok $? "a textfile in a missing directory: a clear error, exit 1"

touch "$tmp/stop"
wait $hpid
rm -rf "$tmp"

# the VM part: tiering needs two tiers (vm_host_setup: the VM lock, a new $tmp)
. "$top_srcdir/tests/vmhost.sh"
vm_host_setup 1 10 x
vm_tap tiered 300 "$0" guest
done_testing
