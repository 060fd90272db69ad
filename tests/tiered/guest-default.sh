#!/bin/sh
# Runs inside the tiered VM: tiering at the DEFAULT configuration (no
# bg_cpu or other tuning in TIERMALLOC_CONF, only the fast tier's size).
# What a new user gets: a hot set is found and followed after a shift,
# written or read, as root or not; hot pages scattered over every block
# are placed page by page past what whole blocks can reach; a job shares
# its budget, a budget lowered from outside is obeyed, CXL hot lists are
# acted on; and the background cost at steady state stays near the budget.  The kernel's
# own answer (move_pages status) says where pages are.
#
# Under TCG every write fault, TLB shootdown and kdamond sample costs 10 to
# 100 times what it costs on hardware: the time limits here are what the
# engine meets under TCG with room, each check prints the time it took
# (bench/README.md reports them against the issue's targets).
. "$top_srcdir/tests/lib.sh"
B=$top_builddir/tests/tiered
pre() { LD_PRELOAD=$TIERMALLOC_LIB "$@"; }
tmp=$(mktemp -d)
echo 0 >/proc/sys/kernel/numa_balancing

# phase LINE of a hotset output: "reached F% after S s" or "timeout F%"
said() { grep "^phase $1" "$2" | sed 's/^phase [0-9] //'; }

# --- a written hot set, as root -----------------------------------------
# -k: then 10 s more, and the hot set must stay (a default that churned
# reached 90% and lost a quarter of the set again)
thp() { awk '$1 == "thp_fault_alloc" { print $2 }' /proc/vmstat; }
thp0=$(thp)
TIERMALLOC_CONF=fast_limit:64M,stats_print:json pre $B/hotset -y 2000 -t 30 -k 10 256 32 >"$tmp/w" 2>"$tmp/w.json"
r=$?
thp1=$(thp)
ok $r "default: a written 32 MiB hot set of 256 MiB (fast_limit 64M) >= 90% fast, and held: $(said 1 "$tmp/w"); $(grep '^held' "$tmp/w")"
[ $r -eq 0 ] || sed 's/^/# /' "$tmp/w"
grep -q '"bursts":[1-9]' "$tmp/w.json"
ok $? "default: tracking started with a burst ($(grep -o '"bursts":[0-9]*' "$tmp/w.json"))"
# tiered data is mapped MADV_NOHUGEPAGE: a block written first as one huge
# page moves as one 2 MiB folio, and GUPS's first hot set waited 2-12 s for
# compaction on the squeezed fast node (each run faulted its whole table as
# huge pages, thp_fault_alloc +128-132); the guest's THP is "always"
if grep -q '\[always\]' /sys/kernel/mm/transparent_hugepage/enabled; then
	[ -n "$thp0" ] && [ -n "$thp1" ] && [ $((thp1 - thp0)) -le 8 ]
	ok $? "default: no transparent huge pages for the tiered data: thp_fault_alloc +$((${thp1:-0} - ${thp0:-0})) while 256 MiB were written (THP always; at most 8)"
else
	skip "THP is not \"always\" in this guest: huge pages for tiered data not checked"
fi

# --- the shift: the new set is promoted, the old one makes room ----------
TIERMALLOC_CONF=fast_limit:48M,stats_print:json pre $B/hotset -s -t 30 -k 10 256 32 >"$tmp/s" 2>"$tmp/s.json"
r=$?
old=$(sed -n 's/^old hot set: \(.*\)% still on node 0$/\1/p' "$tmp/s")
ok $r "default: shift followed, and the new set held: first set $(said 1 "$tmp/s"); new set $(said 2 "$tmp/s"); $(grep '^held' "$tmp/s")"
[ $r -eq 0 ] || sed 's/^/# /' "$tmp/s"
awk -v o="${old:-100}" 'BEGIN { exit !(o < 60) }'
ok $? "default: after the shift the old hot set made room (${old:-?}% of it left on node 0, fast_limit 48M)"
# the blocks the hot set left, found gone cold, cue the change: every
# slice of them reads empty, and taken as a question each time (a slice
# on pages never written) they never did; the shift then waited for the
# steady sweep to come upon the new set (GUPS at the default: 5 of 29
# runs over 3 s; this check failed so, "surprises_cold":0)
# Whether one run cues depends on how sure the old blocks' estimates are
# when the set moves (here right after it was placed): traced, the old
# blocks' looks surprised cold in every run, but in some their lower
# bounds (0.7-3.6) were still under the band (3.1-7.2) that makes such a
# look a cue: 5 of 11 runs of 39b81e0's engine cued nothing (2026-12-07).
# So up to five runs, the first the one above: the fault this guards
# against (cues that never came) reads 0 in every one
cues=$(grep -o '"surprises_cold":[0-9]*' "$tmp/s.json")
n=1
while ! echo "$cues" | grep -q '"surprises_cold":[1-9]' && [ $n -lt 5 ]; do
	TIERMALLOC_CONF=fast_limit:48M,stats_print:json pre $B/hotset -s -t 30 -k 10 256 32 >"$tmp/s$n" 2>"$tmp/s$n.json"
	cues="$cues $(grep -o '"surprises_cold":[0-9]*' "$tmp/s$n.json")"
	n=$((n + 1))
done
echo "$cues" | grep -q '"surprises_cold":[1-9]'
ok $? "default: the shift was cued by the fast blocks it left (runs: $cues)"

# --- read, never written: DAMON sees it (root) ---------------------------
TIERMALLOC_CONF=fast_limit:64M pre $B/hotset -R -y 2000 -t 30 -k 10 256 32 >"$tmp/r"
r=$?
ok $r "default: a read-only 32 MiB hot set as root >= 90% fast, and held: $(said 1 "$tmp/r"); $(grep '^held' "$tmp/r")"
[ $r -eq 0 ] || sed 's/^/# /' "$tmp/r"

# --- unprivileged: written bits alone (no DAMON for users) --------------
# setpriv itself runs without the library: it changes credentials thread
# by thread, and our threads would keep root's while it drops them
if command -v setpriv >/dev/null; then
	TIERMALLOC_CONF=fast_limit:64M setpriv --reuid=65534 --regid=65534 --clear-groups \
		env LD_PRELOAD="$TIERMALLOC_LIB" $B/hotset -y 2000 -t 30 256 32 >"$tmp/u"
	r=$?
	ok $r "default: unprivileged, a written 32 MiB hot set >= 90% fast: $(said 1 "$tmp/u")"
	[ $r -eq 0 ] || sed 's/^/# /' "$tmp/u"
else
	ok 1 "default: unprivileged: no setpriv in the guest (util-linux, installed by dev.sh)"
fi

# --- hot pages scattered over every block (a key-value store's shape) ----
# One page in 16 of every block is hot: whole blocks can hold at most
# fast_limit/footprint = 25% of it fast; page by page all of it fits.
TIERMALLOC_CONF=fast_limit:64M,stats_print:json pre $B/hotset -p 16 -g 0.5 -t 60 256 1 >"$tmp/p" 2>"$tmp/p.json"
r=$?
ok $r "default: scattered hot pages (one in 16, 16 MiB over 256 MiB) >= 50% fast, twice the whole-block ceiling: $(said 1 "$tmp/p")"
[ $r -eq 0 ] || sed 's/^/# /' "$tmp/p"
splits=$(sed -n 's/.*"pages":{[^}]*"splits":\([0-9]*\).*/\1/p' "$tmp/p.json")
up=$(sed -n 's/.*"pages":{[^}]*"promoted":\([0-9]*\).*/\1/p' "$tmp/p.json")
mixed=$(sed -n 's/^mixed: \(-*[0-9]*\) blocks.*/\1/p' "$tmp/p")
[ "${splits:-0}" -gt 0 ] && [ "${up:-0}" -gt 0 ] && [ "${mixed:-0}" -gt 0 ]
ok $? "default: blocks were split and placed page by page (${splits:-?} splits, ${up:-?} pages promoted; the kernel shows ${mixed:-?} blocks of 2 MiB on both tiers)"

# --- the cost at steady state, everything included ----------------------
# After the hot set is fast, DAMON shed (under TCG its coarsest sampling
# alone costs more than the budget) and the burst over: our threads
# (migration included), our share of kdamond and the write faults, the
# median of three 10 s windows.
TIERMALLOC_CONF=fast_limit:64M pre $B/hotset -y 2000 -t 30 -c 10 -w "damon: shed: " 256 32 >"$tmp/c"
r=$?
pct=$(sed -n 's/^steady: background costs (threads, kdamond share, faults) \([0-9.]*\)%.*/\1/p' "$tmp/c")
[ $r -eq 0 ] && awk -v s="${pct:-100}" 'BEGIN { exit !(s <= 3) }'
ok $? "default: steady state, all background costs ${pct:-?}% of a core, median of 3 windows of 10 s (bg_cpu 1%; VM target 3%): $(grep '^burst' "$tmp/c")"
sed 's/^/# steady: /' "$tmp/c"


# --- a job at the default: two processes of one cgroup share the budget --
# (guest-job.sh checks the ledger itself at bg_cpu 20%)
TM=$top_builddir/tools/tiermalloc
CG=/sys/fs/cgroup
J=$CG/tmdefault
[ -f $CG/cgroup.controllers ] || mount -t cgroup2 cgroup2 $CG
echo +memory >$CG/cgroup.subtree_control 2>/dev/null
mkdir -p $J
in_job() { # "$@" in the job's cgroup under the library, the budget alone configured
	exec sh -c 'echo $$ >'$J'/cgroup.procs && exec env LD_PRELOAD="$TIERMALLOC_LIB" TIERMALLOC_CONF=job_fast_limit:32M "$@"' in_job "$@"
}
mkfifo "$tmp/cold.in"
in_job $B/where -k 40 1048576 <"$tmp/cold.in" >"$tmp/cold.out" 2>&1 &
cold=$!
exec 7>"$tmp/cold.in"
"$TM" job wait /tmdefault 1 --timeout 20 >/dev/null
until grep -q '^map' "$tmp/cold.out" || ! kill -0 $cold 2>/dev/null; do sleep 0.1; done
in_job $B/hotset -y 2000 -t 30 48 12 >"$tmp/job" 2>&1 &
hot=$!
joined=$("$TM" job wait /tmdefault 2 --timeout 20 2>&1)
jr=$?
wait $hot
r=$?
[ $jr -eq 0 ] || r=1
ok $r "default: a job of two (job_fast_limit 32M; $joined): the hot member's hot set moves to the fast tier: $(said 1 "$tmp/job")"
[ $r -eq 0 ] || sed 's/^/# /' "$tmp/job" "$tmp/cold.out"
exec 7>&-
wait $cold 2>/dev/null

# --- control from outside at the default: a lower budget set live -------
STOP=$tmp/stop
. "$top_srcdir/tests/tiered/ctl_prog.sh"
ctl_prog 128M >"$tmp/py" 2>&1 &
py=$!
ctl_wait "$tmp/py"
ctl_lower $py
ok $? "default: ctl tier.fast_limit=48M on a running python: fast bytes $((${before:-0} >> 20)) -> $((${after:-0} >> 20)) MiB in $took s, $((${dem:-0} >> 20)) MiB demoted, the kernel shows ${moved:-?} MiB more on node 1"
touch "$tmp/stop"
wait $py 2>/dev/null

# --- pages faulted in on the slow node while node 0 was full come back ---
# (squeeze.c: a balloon locked on node 0, 48 MiB written under fast_limit,
# the balloon freed; the placement audit must find the blocks)
TIERMALLOC_CONF=fast_limit:64M $B/squeeze 48 30 >"$tmp/sq" 2>&1
r=$?
ok $r "default: memory placed fast that faulted in on node 1 (node 0 full) is moved to node 0 once it has room: $(tr '\n' ' ' <"$tmp/sq")"

# --- CXL hot lists at the default budget ---------------------------------
# (the cxl source chosen, nothing else tuned; guest-cxl.sh runs every case)
TIERMALLOC_CONF=fast_limit:16M,heat_sources:cxl $B/cxlhot -t 40 >"$tmp/cxl" 2>&1
r=$?
nok=$(grep -c '^ok ' "$tmp/cxl")
grep -q '^fail' "$tmp/cxl" && r=1
ok $r "default budget: a CXL hot list promotes the pages it names, bad batches refused ($nok of cxlhot's checks ok, exit $r)"
[ $r -eq 0 ] || sed 's/^/# /' "$tmp/cxl"

rm -rf "$tmp"
done_testing
