#!/bin/sh
# Containers, without a container runtime: processes in their own pid and
# mount namespaces (unshare --pid --fork --mount-proc), in the tiered VM.
# The host's command sees each by its host pid and says its namespace
# pid, changes its fast_limit and its fast bytes follow; two processes
# that are both pid 1 are told apart; a runtime directory private to the
# namespace (a tmpfs mounted inside) is reached through the process's
# mappings; inside the namespace the command sees the process by its own
# pid; no namespace removes another's channels; a job of one process
# inside and one outside shares one budget.
#   containers.sh          boots the tiered VM and runs the part below there
#   containers.sh guest    inside the VM
. "${top_srcdir:-.}/tests/lib.sh"
TM=$(cd "${top_builddir:-.}" && pwd)/tools/tiermalloc
PY=${PYTHON3:-python3}

if [ "${1:-}" != guest ]; then
	. "$top_srcdir/tests/vmhost.sh"
	vm_host_setup 2 10 x
	vm_tap tiered 400 "$0" guest
	done_testing
	exit
fi

tmp=$(mktemp -d)
RD=$tmp/run
export TIERMALLOC_CONF="run_dir:$RD"
trap 'touch "$tmp/stop"; sleep 1; rm -rf "$tmp"' EXIT
echo 0 >/proc/sys/kernel/numa_balancing
# the program: touches 48 MiB, says ready, waits for $tmp/stop
PROG='
import os, sys, time
b = bytearray(48 << 20)
for i in range(0, len(b), 4096): b[i] = 1
print("ready", flush=True)
while not os.path.exists(sys.argv[1]):
    time.sleep(0.05)
'
CONF=heat_sources:pagemap,bg_cpu:0.2
# ns NAME CONF [SETUP]: the program as pid 1 of a new pid+mount namespace
# (SETUP: shell run inside first); its host pid in $hostpid
ns() {
	STOPF=$tmp/stop TM=$TM PY=$PY PROG=$PROG C=$2 unshare --pid --fork --mount-proc sh -c \
		"${3:-:} && exec \"\$TM\" run -c \"\$C\" -- \"\$PY\" -c \"\$PROG\" \"\$STOPF\" $1" >"$tmp/$1.out" 2>&1 &
	ready "$1"
	hostpid=
	for f in /proc/[0-9]*/cmdline; do
		case $(tr '\0' ' ' <"$f" 2>/dev/null) in
		"$PY -c "*" $tmp/stop $1 ") p=${f#/proc/} hostpid=${p%/cmdline} ;;
		esac
	done
}
ready() {
	i=0
	while [ $i -lt 300 ] && ! grep -q ready "$tmp/$1.out" 2>/dev/null; do sleep 0.1; i=$((i + 1)); done
}
fast_mib() { # the committed MiB of tier 0 of host pid $1, from stat
	"$TM" stat "$1" 2>/dev/null | sed -n 's/^  tier 0 (nodes [^)]*): placed [0-9.]* MiB, committed \([0-9]*\).*/\1/p' | head -n 1
}

# a host process with a channel, which no namespace may sweep away
"$TM" run -c "run_dir:$RD,ctl:true" -- "$PY" -c "$PROG" "$tmp/stop" host >"$tmp/host.out" 2>&1 &
hpid=$!
ready host
hchan=$(ls "$RD" | grep "^$hpid-")

ns a "run_dir:$RD,fast_limit:40M,$CONF"
apid=$hostpid
ns b "run_dir:$RD,fast_limit:40M,$CONF"
bpid=$hostpid
[ -n "$apid" ] && [ -n "$bpid" ] && [ "$apid" != "$bpid" ]
ok $? "two programs as pid 1 of their own pid+mount namespaces: host pids $apid and $bpid"
"$TM" top --once >"$tmp/top" 2>&1
la=$(grep -E "^ *$apid " "$tmp/top") lb=$(grep -E "^ *$bpid " "$tmp/top")
[ "$(echo "$la" | awk '{print $NF}')" = 1 ] && [ "$(echo "$lb" | awk '{print $NF}')" = 1 ]
r=$?
ok $r "top on the host lists both by host pid, NSPID 1: $la / $lb"
[ $r -eq 0 ] || sed 's/^/# /' "$tmp/top"
"$TM" stat $apid >"$tmp/stat" 2>&1
grep -q "^pid $apid is pid 1 in its own pid namespace" "$tmp/stat" && grep -q "tiering on, 2 tiers" "$tmp/stat"
ok $? "stat on the host: $(head -n 2 "$tmp/stat" | tr '\n' ' ')"

"$TM" stat --openmetrics $apid >"$tmp/m.prom" 2>&1
{ ! command -v promtool >/dev/null || promtool check metrics <"$tmp/m.prom" >"$tmp/lint" 2>&1; } &&
	grep -q "^tiermalloc_tiering_active{pid=\"$apid\",comm=\"python3\",job=\"\",ns_pid=\"1\"} 1$" "$tmp/m.prom"
r=$?
ok $r "stat --openmetrics on the host: labelled pid=\"$apid\", ns_pid=\"1\"; promtool passes (when installed)"
[ $r -eq 0 ] || sed 's/^/# /' "$tmp/lint" "$tmp/m.prom" | head -n 12

# ctl on the host changes one of them, not the other
f0=$(fast_mib $apid)
v=$("$TM" ctl $apid tier.fast_limit=8M 2>&1)
r=$?
va=$("$TM" ctl $apid tier.fast_limit 2>&1) vb=$("$TM" ctl $bpid tier.fast_limit 2>&1)
[ $r -eq 0 ] && [ "$va" = "tier.fast_limit=8388608" ] && [ "$vb" = "tier.fast_limit=41943040" ]
ok $? "ctl by host pid sets one pid 1's fast_limit, not the other's: $va / $vb"
i=0
f=$(fast_mib $apid)
while [ $i -lt 60 ] && [ "${f:-99}" -gt 12 ]; do sleep 0.5; i=$((i + 1)); f=$(fast_mib $apid); done
[ "${f:-99}" -le 12 ]
ok $? "its fast bytes follow: $f0 MiB fast before, $f MiB after $((i / 2)) s (limit 8 MiB, 4 MiB in flight allowed)"

# a runtime directory of the namespace's own (a tmpfs the host cannot see)
mkdir -m 700 "$tmp/private"
ns c "run_dir:$tmp/private,fast_limit:40M,$CONF" "mount -t tmpfs -o mode=700 tm $tmp/private"
cpid=$hostpid
"$TM" top --once >"$tmp/top2" 2>&1
"$TM" ctl "$cpid" tier.fast_limit=16M >/dev/null 2>&1
vc=$("$TM" ctl "$cpid" tier.fast_limit 2>&1)
grep -qE "^ *$cpid .* 1$" "$tmp/top2" && [ "$vc" = "tier.fast_limit=16777216" ] && [ -z "$(ls -A "$tmp/private")" ]
r=$?
ok $r "a private runtime directory: listed by top and set by ctl through its mappings ($vc)"
[ $r -eq 0 ] || sed 's/^/# /' "$tmp/top2"

# inside a namespace: the process by its own pid
# (-r -w: its root and working directory, the VM's chroot, not the mount
# namespace's own root)
nsenter -t "$apid" -p -m -r -w "$TM" ctl 1 tier.fast_limit >"$tmp/in" 2>&1 &&
	nsenter -t "$apid" -p -m -r -w "$TM" top --once >>"$tmp/in" 2>&1
grep -q "^tier.fast_limit=8388608$" "$tmp/in" && grep -qE "^ +1 python3 " "$tmp/in"
r=$?
ok $r "inside the namespace, ctl and top see it as pid 1"
[ $r -eq 0 ] || sed 's/^/# /' "$tmp/in"

# nobody swept another namespace's channels away
n1=$(ls "$RD" | grep -c '^1-.*\.ctl$')
[ -e "$RD/$hchan" ] && [ "$n1" -ge 2 ]
ok $? "channels kept: the host's ($hchan) and both pid 1's ($n1 named 1-*)"

# a job of one process inside a namespace and one outside: one budget
J="run_dir:$RD,job:cj,job_fast_limit:16M,$CONF"
ns j "$J"
jpid=$hostpid
"$TM" run -c "$J" -- "$PY" -c "$PROG" "$tmp/stop" k >"$tmp/k.out" 2>&1 &
kpid=$!
ready k
"$TM" job wait cj 2 --timeout 20 >/dev/null
r=$?
sleep 3 # three reaps: a member must not judge the other dead by a pid
m=$("$TM" job show cj 2>&1)
n=$(echo "$m" | sed -n 's/.*members \([0-9]*\),.*/\1/p')
[ $r -eq 0 ] && [ "$n" = 2 ]
ok $? "a job of one member inside a namespace and one outside: 2 members after 3 s"
[ "$n" = 2 ] || echo "$m" | sed 's/^/# /'
i=0
while [ $i -lt 60 ]; do
	s=$(($(fast_mib $jpid) + $(fast_mib $kpid)))
	[ "$s" -le 22 ] && break
	sleep 0.5
	i=$((i + 1))
done
[ "$s" -le 22 ]
ok $? "they share one budget: $s MiB fast together (budget 16 MiB, 6 MiB in flight allowed)"
done_testing
