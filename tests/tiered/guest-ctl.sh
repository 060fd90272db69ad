# Sourced by guest-tiered.sh (the same boot of the tiered VM, as root):
# the tiermalloc command against a running, unmodified program with
# tiering on.  Alone: sh -c '. tests/lib.sh; . tests/tiered/guest-ctl.sh; done_testing'
TM=$top_builddir/tools/tiermalloc
ctmp=$(mktemp -d)
STOP=$ctmp/stop
. "$top_srcdir/tests/tiered/ctl_prog.sh"

"$TM" topology >"$ctmp/topo" 2>&1
grep -q "^tiering: 2 tiers" "$ctmp/topo" && grep -q "^tier 1: nodes 1" "$ctmp/topo" && grep -q "why: .*memory_tier" "$ctmp/topo"
ok $? "tiermalloc topology: $(head -n 1 "$ctmp/topo"); $(grep -m1 'why' "$ctmp/topo" | cut -c1-100)"

ctl_prog 128M bg_cpu:0.2 >"$ctmp/p.out" 2>"$ctmp/p.err" &
cpid=$!
ctl_wait "$ctmp/p.out"

"$TM" stat $cpid >"$ctmp/stat" 2>&1
grep -q "^pid $cpid (python3): tiering on, 2 tiers" "$ctmp/stat" && grep -q "^  tier 1 (nodes 1): placed" "$ctmp/stat" &&
	grep -q "^ *tier 1, nodes 1," "$ctmp/stat"
ok $? "stat of a running unmodified program: $(head -n 1 "$ctmp/stat" | cut -c1-120)"
diag "$(sed -n 2,4p "$ctmp/stat" | tr '\n' ';')"
"$TM" stat $cpid --json | ${PYTHON3:-python3} -c '
import json, sys
d = json.load(sys.stdin)["tiermalloc"]
assert d["tiering"]["active"] and len(d["tiers"]) == 2 and d["tiers"][1]["resident"] > 0, d["tiers"]'
ok $? "stat --json: two tiers, resident bytes on the slow one"
"$TM" top --once >"$ctmp/top" 2>&1
line=$(grep -E "^ *$cpid python3 " "$ctmp/top")
set -- $line
[ -n "$line" ] && [ "${3%.*}" -ge 100 ] && [ "${4%.*}" -ge 40 ]
ok $? "top --once: $line"

"$TM" heat $cpid >"$ctmp/heat" 2>&1
n0=$(awk '!/^#/ && $3 == 0' "$ctmp/heat" | wc -l)
n1=$(awk '!/^#/ && $3 == 1' "$ctmp/heat" | wc -l)
[ "$n0" -ge 40 ] && [ "$n1" -ge 20 ]
ok $? "heat: $n0 blocks on tier 0, $n1 on tier 1"
diag "$(grep -v '^#' "$ctmp/heat" | sort -k4 -g -r | head -n 2 | tr '\n' ';')"

# every name of this process, read from outside
"$TM" ctl $cpid --list >"$ctmp/list"
bad=0
while read -r name rw type; do
	case $type in *"(w:"*) continue ;; esac
	"$TM" ctl $cpid "$name" >/dev/null 2>"$ctmp/e" || { bad=$((bad + 1)); diag "$(cat "$ctmp/e")"; }
done <"$ctmp/list"
nl=$(wc -l <"$ctmp/list")
n1=$(grep -c '^tier\.1\.' "$ctmp/list")
[ $bad -eq 0 ] && [ "$nl" -gt 60 ] && [ "$n1" -ge 3 ]
ok $? "all $nl names readable through ctl, $n1 tier.1.* included ($bad failed)"

# a smaller fast_limit demotes: fast bytes fall
ctl_lower $cpid
ok $? "ctl tier.fast_limit=48M: fast bytes $((${before:-0} >> 20)) MiB -> $((${after:-0} >> 20)) MiB in $took s, $((${dem:-0} >> 20)) MiB demoted, the kernel shows ${moved:-?} MiB more on node 1"
moved=$("$TM" ctl $cpid tier.demote=8M | num)
[ "${moved:-0}" -gt 0 ]
ok $? "ctl tier.demote=8M moved ${moved:-0} bytes"

if command -v setpriv >/dev/null; then
	setpriv --reuid=65534 --regid=65534 --clear-groups "$TM" ctl $cpid tier.fast_limit=1G >"$ctmp/o" 2>&1
	rc=$?
	setpriv --reuid=65534 --regid=65534 --clear-groups "$TM" top --once >"$ctmp/o2" 2>&1
	[ $rc -ne 0 ] && grep -q "another user" "$ctmp/o" && ! grep -q "^ *$cpid " "$ctmp/o2" &&
		[ "$("$TM" ctl $cpid tier.fast_limit)" = tier.fast_limit=50331648 ]
	ok $? "nobody is refused ($(cat "$ctmp/o")) and sees nothing in top"
else
	need_skip "no setpriv in the guest"
fi

had=$(ls /run/tiermalloc 2>/dev/null | grep -c "^$cpid-")
touch "$ctmp/stop"
wait $cpid
chans=$(ls /run/tiermalloc 2>/dev/null | grep -c "^$cpid-")
[ "$had" = 1 ] && [ "$chans" = 0 ] && [ -d /run/tiermalloc ]
ok $? "the channel in /run/tiermalloc is gone after exit ($had then $chans)"
rm -f "$ctmp/stop" "$ctmp/p.out"
ctl_prog 16M bg_cpu:0.2 >"$ctmp/p.out" 2>/dev/null &
cpid=$!
ctl_wait "$ctmp/p.out"
"$TM" ctl $cpid version >/dev/null 2>&1
kill -9 $cpid
wait $cpid 2>/dev/null
before=$(ls /run/tiermalloc | grep -c "^$cpid-")
"$TM" top --once >"$ctmp/top" 2>&1
after=$(ls /run/tiermalloc | grep -c "^$cpid-")
[ "$before" = 1 ] && [ "$after" = 0 ]
ok $? "a SIGKILLed program's channel is cleaned by the next reader ($before -> $after)"
rm -rf "$ctmp"
