#!/bin/sh
# The tiermalloc command against a running, unmodified program on this
# host (one tier: the channel is published because of ctl:true): every
# name readable through `ctl`, writable ones refusing bad values with
# tier_mallctl's own errors, stat/top/heat/topology, another user
# refused, channels removed at exit and stale ones cleaned.
. "${top_srcdir:-.}/tests/lib.sh"
TM=${top_builddir:-.}/tools/tiermalloc
TIERCTL=${top_builddir:-.}/tests/tiered/tierctl
tmp=$(mktemp -d)
# our own runtime directory, so that nothing of other users' runs is touched
export TIERMALLOC_CONF="run_dir:$tmp/run"
trap 'touch "$tmp/stop"; sleep 1; rm -rf "$tmp"' EXIT
prog() { # prog STOPFILE: allocates, says ready, exits when STOPFILE appears
	exec "$TM" run -c "$TIERMALLOC_CONF,ctl:true${1:+,$1}" -- ${PYTHON3:-python3} -c '
import os, sys, time
b = bytearray(24 << 20)
for i in range(0, len(b), 4096): b[i] = 1
print("ready", flush=True)
while not os.path.exists(sys.argv[1]):
    time.sleep(0.05)
' "$tmp/stop"
}
wait_ready() { # wait_ready FILE
	i=0
	while [ $i -lt 100 ] && ! grep -q ready "$1" 2>/dev/null; do sleep 0.1; i=$((i + 1)); done
}
wait_for() { # wait_for SECONDS COMMAND...: until COMMAND succeeds (status of the last try)
	w=$(($1 * 10))
	shift
	until "$@"; do
		[ $w -gt 0 ] || return 1
		sleep 0.1
		w=$((w - 1))
	done
}
chan_full() { [ "$(stat -c %s "$1" 2>/dev/null)" -gt 0 ] 2>/dev/null; }
# always_hook: the one tier of this host is tracked too, so heat has blocks to list
prog always_hook:true >"$tmp/p.out" 2>"$tmp/p.err" &
pid=$!
wait_ready "$tmp/p.out"

v=$("$TM" ctl $pid version 2>&1)
ok $? "ctl reads a name of a running program: $v"
ls "$tmp/run" >"$tmp/ls"
chan=$(grep "^$pid-.*\.ctl$" "$tmp/ls")
mode=$(stat -c %a "$tmp/run/$chan" 2>/dev/null)
dmode=$(stat -c %a "$tmp/run" 2>/dev/null)
[ -n "$chan" ] && [ "$mode" = 600 ] && [ "$dmode" = 700 ]
ok $? "channel $chan: mode $mode in a directory of mode $dmode"

# --- every name ------------------------------------------------------------
"$TM" ctl $pid --list >"$tmp/list"
n=$(wc -l <"$tmp/list")
bad=0
while read -r name rw type; do
	case $type in
	size_t*"(w:"*|float*|write-only*) # tier.promote/demote, tier.heat.of, tier.cxl.report: need a value
		"$TM" ctl $pid "$name" >/dev/null 2>"$tmp/e" && bad=$((bad + 1))
		grep -q "EINVAL: $name needs a value" "$tmp/e" || { bad=$((bad + 1)); cat "$tmp/e"; } ;;
	*) "$TM" ctl $pid "$name" >/dev/null 2>"$tmp/e" || { bad=$((bad + 1)); cat "$tmp/e"; } ;;
	esac
done <"$tmp/list"
[ "$n" -gt 60 ] && [ $bad -eq 0 ]
ok $? "all $n names of --list read through ctl ($bad failed)"

# every name is documented in tier_mallctl(3) (knobs: opt.<knob>/tier.<knob>, tiermalloc(3))
"$TM" knobs | cut -f1 >"$tmp/knobnames"
undoc=0
while read -r name rw type; do
	k=${name#*.}
	case $name in opt.*) continue ;; tier.*) grep -qx "$k" "$tmp/knobnames" && continue ;; esac
	pat=$(printf %s "$name" | sed -e 's/^tier\.[0-9][0-9]*\./tier.\\fIi\\fB./' \
		-e 's/^stats\.heat\.[a-z]*\.\(samples\|faults\|fault_ns\)$/stats.heat.\\fIsource\\fB.\1/')
	grep -qF -- "$pat" "${top_srcdir:-.}/man/tier_mallctl.3" || { undoc=$((undoc + 1)); diag "undocumented: $name ($pat)"; }
done <"$tmp/list"
ok $undoc "every name of --list is in tier_mallctl(3)"

# every stats name of --list names its value in the JSON stats, and that
# path is there (tier_mallctl, --list and the stats come from one walk each;
# this catches a value added to one and not the other)
"$TM" stat $pid --json >"$tmp/stats.json"
${PYTHON3:-python3} - "$tmp/list" "$tmp/stats.json" >"$tmp/jsoncheck" <<'PYEOF'
import json, sys
root = json.load(open(sys.argv[2]))["tiermalloc"]
n = bad = 0
for line in open(sys.argv[1]):
    f = line.split()
    if not f[0].startswith("stats."):
        continue
    n += 1
    path = [w[5:] for w in f if w.startswith("json:")]
    v = root
    for key in (path[0].split(".") if path else ["?"]):
        v = v.get(key) if isinstance(v, dict) else None
    if not path or v is None:
        bad += 1
        print("# missing from the JSON stats:", f[0], path)
print(n, bad)
PYEOF
set -- $(tail -n 1 "$tmp/jsoncheck")
grep '^#' "$tmp/jsoncheck"
[ "${1:-0}" -gt 100 ] && [ "${2:-1}" -eq 0 ]
ok $? "each of the ${1:-0} stats names of --list is in the JSON stats (${2:-?} missing)"

"$TM" knobs >"$tmp/knobs"
bad=0
nk=0
while IFS="$(printf '\t')" read -r k rw rest; do
	nk=$((nk + 1))
	"$TM" ctl $pid "opt.$k" >/dev/null 2>&1 || { bad=$((bad + 1)); diag "opt.$k unreadable"; }
	if [ "$rw" = rw ]; then
		"$TM" ctl $pid "tier.$k" >"$tmp/before" 2>&1 || { bad=$((bad + 1)); diag "tier.$k unreadable"; }
		# a bad value: EINVAL, and nothing changes
		"$TM" ctl $pid "tier.$k=notavalue" >/dev/null 2>"$tmp/e" && bad=$((bad + 1))
		grep -q "EINVAL: bad value \"notavalue\" for tier.$k (expected " "$tmp/e" ||
			{ bad=$((bad + 1)); diag "tier.$k=notavalue: $(cat "$tmp/e")"; }
		"$TM" ctl $pid "tier.$k" >"$tmp/after" 2>&1
		cmp -s "$tmp/before" "$tmp/after" || { bad=$((bad + 1)); diag "tier.$k changed"; }
	else
		"$TM" ctl $pid "opt.$k=1" >/dev/null 2>"$tmp/e" && bad=$((bad + 1))
		grep -q "EPERM" "$tmp/e" || bad=$((bad + 1))
	fi
done <"$tmp/knobs"
[ "$nk" -ge 21 ] && [ $bad -eq 0 ]
ok $? "all $nk knobs read as opt.<knob>; rw ones as tier.<knob>, refusing a bad value with EINVAL, unchanged ($bad failed)"

# the same errors as tier_mallctl called inside a program
same=0
for w in tier.period_ms=0 tier.heat_half_life_ms=0 tier.promote_rate_mbps=0 tier.count=3 tier.nosuch=1; do
	"$TM" ctl $pid "$w" >/dev/null 2>"$tmp/e"
	c=$(sed -n 's/.*: \(E[A-Z]*\): .*/\1/p' "$tmp/e")
	"$TIERCTL" -w "$w" 2>"$tmp/e2" >/dev/null
	case "$c:$(cat "$tmp/e2")" in
	EINVAL:*"Invalid argument"*|EPERM:*"not permitted"*|ENOENT:*"No such file"*) ;;
	*) same=1; diag "$w: ctl $c, tier_mallctl: $(cat "$tmp/e2")" ;;
	esac
done
ok $same "out of range, read-only, unknown: ctl answers EINVAL/EPERM/ENOENT as tier_mallctl does"

"$TM" ctl $pid tier.watermark_low=0.99 >/dev/null 2>"$tmp/e"
grep -q "EINVAL.*watermark_low must not exceed watermark_high" "$tmp/e"
ok $? "a rule between knobs: $(cat "$tmp/e")"
r=$("$TM" ctl $pid tier.period_ms=50 tier.fast_limit=64M tier.period_ms tier.fast_limit opt.fast_limit 2>&1 | tr '\n' ' ')
case $r in *"tier.period_ms=50 (was 100)"*"tier.period_ms=50 tier.fast_limit=67108864 opt.fast_limit=67108864"*) r0=0 ;; *) r0=1 ;; esac
ok $r0 "writes take effect: $r"

long=$(printf 'tier.fast_limit=%0600d' 1)
"$TM" ctl $pid "$long" >/dev/null 2>"$tmp/e"
rc=$?
lim=$("$TM" ctl $pid tier.fast_limit)
[ $rc -ne 0 ] && grep -q "EINVAL: request of 616 bytes refused" "$tmp/e" && [ "$lim" = tier.fast_limit=67108864 ]
ok $? "an oversized request is refused by the process, nothing changed: $(cat "$tmp/e")"
for m in "tier.fast limit=1" "Tier.count" "=5" "tier.fast_limit=1G
x"; do
	"$TM" ctl $pid "$m" >/dev/null 2>>"$tmp/mal" && echo accepted >>"$tmp/mal"
done
lim=$("$TM" ctl $pid tier.fast_limit)
! grep -q accepted "$tmp/mal" && [ "$(grep -c 'EINVAL: malformed\|EINVAL: bad value' "$tmp/mal")" -eq 4 ] &&
	[ "$lim" = tier.fast_limit=67108864 ]
ok $? "malformed requests refused with a reason, nothing changed"
diag "$(head -n 2 "$tmp/mal" | tr '\n' ' ')"

# several commands at once: each gets its own answer
pids=
for c in 1 2 3 4; do
	( for i in 1 2 3 4 5; do "$TM" ctl $pid tier.period_ms opt.ctl version; done >"$tmp/par.$c" 2>&1 ) &
	pids="$pids $!"
done
for p in $pids; do wait $p; done
bad=0
for c in 1 2 3 4; do
	[ "$(sort -u "$tmp/par.$c" | tr '\n' ' ')" = "opt.ctl=true tier.period_ms=50 version=0.1.0 " ] || bad=$((bad + 1))
done
ok $bad "4 commands at once, 15 requests each: every answer is its own"

# the file truncated or removed by hand: no SIGBUS, a fresh one appears
: >"$tmp/run/$chan"
# the program notices at its next period: wait for the fresh file, not a fixed time
wait_for 10 chan_full "$tmp/run/$chan"
v1=$("$TM" ctl $pid version 2>&1)
rm -f "$tmp/run/$chan"
wait_for 10 chan_full "$tmp/run/$chan"
v2=$("$TM" ctl $pid version 2>&1)
[ "$v1" = version=0.1.0 ] && [ "$v2" = version=0.1.0 ] && kill -0 $pid && [ -e "$tmp/run/$chan" ]
ok $? "channel truncated, then removed, by hand: the program lives on and makes a fresh one"

# --- stat, top, heat, topology ---------------------------------------------
"$TM" stat $pid >"$tmp/stat" 2>&1
grep -q "^pid $pid (python3): tiering" "$tmp/stat" && grep -q "Begin tiermalloc statistics" "$tmp/stat"
ok $? "stat: $(head -n 1 "$tmp/stat")"
"$TM" stat $pid --json >"$tmp/json" 2>&1 &&
	${PYTHON3:-python3} -c 'import json,sys; j=json.load(open(sys.argv[1])); d=j["tiermalloc"]; assert d["settings"]["ctl"] is True and d["settings"]["period_ms"] == 50 and "promote_bytes_per_s" in j["live"]' "$tmp/json"
ok $? "stat --json: valid JSON, settings as changed"
"$TM" stat $pid --watch 0.2 --count 2 >"$tmp/watch" 2>&1
[ "$(grep -c 'Begin tiermalloc statistics' "$tmp/watch")" -eq 2 ]
ok $? "stat --watch 0.2 --count 2: two reports"
"$TM" top --once >"$tmp/top" 2>&1
grep -Eq "^ *$pid python3 " "$tmp/top"
ok $? "top --once lists the program: $(grep -E "^ *$pid " "$tmp/top")"
"$TM" heat $pid >"$tmp/heat" 2>"$tmp/heat.err"
rc=$?
nb=$(grep -Ec '^0x[0-9a-f]+ 0x[0-9a-f]+ [0-9]+ [0-9.]+ ' "$tmp/heat")
[ $rc -eq 0 ] && [ "$nb" -ge 1 ] && [ "$nb" -eq "$(grep -vc '^#' "$tmp/heat")" ] && [ ! -s "$tmp/heat.err" ]
ok $? "heat lists the program's blocks, one well-formed line each: $nb blocks$(head -c 200 "$tmp/heat.err")"
"$TM" topology >"$tmp/topo" 2>&1 && grep -q "^tiering: " "$tmp/topo" && grep -q "why: " "$tmp/topo"
ok $? "topology: $(head -n 1 "$tmp/topo")"

# --- run: the old flags and the new ones ------------------------------------
"$TM" run --fast-limit 1G --stats -- /bin/true 2>"$tmp/run.err"
grep -q "^fast_limit: 1073741824$" "$tmp/run.err"
ok $? "run --fast-limit 1G --stats: $(grep '^fast_limit' "$tmp/run.err")"
"$TM" -c verbose:false -j /bin/true 2>&1 | ${PYTHON3:-python3} -c 'import json,sys; json.load(sys.stdin)["tiermalloc"]'
ok $? "the old form: tiermalloc -c CONF -j PROGRAM"
"$TM" -c bogus:1 /bin/true >"$tmp/o" 2>&1
rc=$?
[ $rc -eq 2 ] && grep -q 'unknown key "bogus"' "$tmp/o"
ok $? "a configuration the library would ignore stops run (exit $rc): $(tail -n 1 "$tmp/o")"

# --- another user ------------------------------------------------------------
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null; then
	cp "$TM" "$tmp/tm" && chmod 755 "$tmp" "$tmp/tm"
	setpriv --reuid=65534 --regid=65534 --clear-groups "$tmp/tm" ctl $pid tier.fast_limit=1G >"$tmp/o" 2>&1
	rc=$?
	setpriv --reuid=65534 --regid=65534 --clear-groups cat "$tmp/run/$chan" >/dev/null 2>&1
	rc2=$?
	[ $rc -ne 0 ] && grep -q "another user" "$tmp/o" && [ $rc2 -ne 0 ] &&
		[ "$("$TM" ctl $pid tier.fast_limit)" = tier.fast_limit=67108864 ]
	ok $? "another user (nobody) is refused: $(cat "$tmp/o"); cannot read the file either"
else
	need_skip "another user: needs root and setpriv"
fi

# --- exit and stale channels -------------------------------------------------
touch "$tmp/stop"
wait $pid
[ ! -e "$tmp/run/$chan" ]
ok $? "the channel is removed when the program exits"
rm -f "$tmp/stop" "$tmp/p.out"
prog >"$tmp/p.out" 2>/dev/null &
pid=$!
wait_ready "$tmp/p.out"
"$TM" ctl $pid version >/dev/null 2>&1
kill -9 $pid
wait $pid 2>/dev/null
before=$(ls "$tmp/run" | grep -c "^$pid-")
# a pid reused by another process: this shell's pid, another start time
: >"$tmp/run/$$-1.ctl"
chmod 600 "$tmp/run/$$-1.ctl"
"$TM" top --once >"$tmp/top2" 2>&1
after=$(ls "$tmp/run" | grep -c "^$pid-\|^$$-1")
[ "$before" = 1 ] && [ "$after" = 0 ] && grep -q "2 stale channels removed" "$tmp/top2"
ok $? "stale channels (SIGKILL, pid reused) cleaned by top: $before then $after"
# a daemon closes every descriptor and reuses the numbers: the channel
# still answers, and goes at exit
"$TM" run -c "$TIERMALLOC_CONF,ctl:true" -- ${PYTHON3:-python3} -c '
import os, sys, time
time.sleep(0.5)
os.closerange(3, 4096)
keep = [open("/dev/null") for i in range(8)]
print("ready", flush=True)
while not os.path.exists(sys.argv[1]):
    time.sleep(0.05)' "$tmp/stop" >"$tmp/d.out" 2>"$tmp/d.out.err" &
dpid=$!
wait_ready "$tmp/d.out"
ticks() { cat /proc/$dpid/task/*/stat 2>/dev/null | sed 's/.*) //' | awk '{t += $12 + $13} END {print t + 0}'; }
t0=$(ticks)
sleep 1
t1=$(ticks)
v=$("$TM" ctl $dpid tier.period_ms=20 2>&1)
r1=$?
[ $((t1 - t0)) -lt 20 ]
ok $? "with its descriptors closed the background thread does not spin ($((t1 - t0)) CPU ticks in 1 s)"
touch "$tmp/stop"
wait $dpid
left=$(ls "$tmp/run" | grep -c "^$dpid-")
rm -f "$tmp/stop"
[ $r1 -eq 0 ] && [ "$left" = 0 ] && [ -f "$tmp/d.out.err" ] && [ ! -s "$tmp/d.out.err" ]
ok $? "after closerange(3, 4096) the channel still answers ($v) and is removed at exit ($left left)$(head -c 200 "$tmp/d.out.err")"

# exec into a program without tiermalloc: same pid and start time, the
# file left behind, no longer mapped.  The program execs once its channel
# exists; top leaves alone a file changed in the last 5 s (it may not be
# mapped yet), so the check waits for those states, not for fixed times.
"$TM" run -c "$TIERMALLOC_CONF,ctl:true" -- ${PYTHON3:-python3} -c '
import os, sys, time
for i in range(300):
    if any(f.startswith("%d-" % os.getpid()) for f in os.listdir(sys.argv[1])):
        break
    time.sleep(0.05)
env = dict(os.environ); env.pop("LD_PRELOAD", None)
os.execve("/bin/sleep", ["sleep", "60"], env)' "$tmp/run" &
epid=$!
is_sleep() { [ "$(cat /proc/$epid/comm 2>/dev/null)" = sleep ]; }
wait_for 20 is_sleep
had=$(ls "$tmp/run" | grep -c "^$epid-")
echan=$(ls "$tmp/run" | grep "^$epid-" | head -n 1)
settled() { [ $(($(stat -c %Z "$tmp/run/$echan" 2>/dev/null || echo 0) + 6)) -le "$(date +%s)" ]; }
[ -n "$echan" ] && wait_for 15 settled
"$TM" top --once >"$tmp/top3" 2>&1
left=$(ls "$tmp/run" | grep -c "^$epid-")
alive=$(kill -0 $epid 2>/dev/null && echo yes)
[ "$left" = 0 ] || diag "left by exec: $echan ctime $(stat -c %Z "$tmp/run/$echan" 2>&1) now $(date +%s) comm $(cat /proc/$epid/comm 2>&1) mapped $(grep -c "$echan" /proc/$epid/maps 2>&1) top: $(head -c 300 "$tmp/top3")"
kill $epid 2>/dev/null
wait $epid 2>/dev/null
[ "$had" = 1 ] && [ "$left" = 0 ] && [ "$alive" = yes ]
ok $? "a channel left by exec (pid alive, file no longer mapped) is cleaned: $had then $left"
# exec into a program with tiermalloc (a shell that execs its program,
# both preloaded): the same pid and start time, so the same channel file,
# made again while a command may hold it mapped. Ten chains of 20 execs
# while `stat` reads every channel in a loop: no command may die of
# SIGBUS (the file truncated under its mapping: 11 of 12 runs did).
cat >"$tmp/chain" <<'EOF2'
[ "$1" -gt 0 ] || exit 0
sleep 0.1
exec /bin/sh "$0" $(($1 - 1))
EOF2
for i in 1 2 3 4 5 6 7 8 9 10; do
	"$TM" run -c "$TIERMALLOC_CONF,ctl:true" -- /bin/sh "$tmp/chain" 20 &
	echo $! >>"$tmp/chains"
done
bus=0 runs=0 other=0
while [ $runs -lt 500 ] && for c in $(cat "$tmp/chains"); do kill -0 $c 2>/dev/null && break; done; do
	"$TM" stat --openmetrics >/dev/null 2>"$tmp/bus.err"
	r=$?
	[ $r -eq 135 ] && bus=$((bus + 1))
	[ $r -ne 0 ] && [ $r -ne 1 ] && [ $r -ne 135 ] && other=$((other + 1))
	runs=$((runs + 1))
done
for c in $(cat "$tmp/chains"); do wait $c 2>/dev/null; done
[ $runs -ge 2 ] && [ $bus -eq 0 ] && [ $other -eq 0 ]
ok $? "stat over programs exec'ing preloaded programs: no SIGBUS ($runs runs, $bus SIGBUS, $other other deaths)"
"$TM" ctl $pid version >"$tmp/o" 2>&1
[ $? -ne 0 ] && grep -q "no such process" "$tmp/o"
ok $? "ctl on a dead process: $(cat "$tmp/o")"
"$TM" ctl $$ version >"$tmp/o" 2>&1
[ $? -ne 0 ] && grep -q "not a tiermalloc process" "$tmp/o"
ok $? "ctl on a program without tiermalloc: $(cat "$tmp/o")"

# --- help comes from the table ---------------------------------------------
"$TM" --help >"$tmp/help"
miss=0
while IFS="$(printf '\t')" read -r k rest; do grep -q "^  $k " "$tmp/help" || miss=$((miss + 1)); done <"$tmp/knobs"
ok $miss "--help lists every knob of the table"
done_testing
