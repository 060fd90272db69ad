#!/bin/sh
# Runs inside the tiered VM: heat, promotion/demotion, integrity, pins,
# fork, sources.  Programs that only call malloc run under LD_PRELOAD;
# the kernel's own answer (move_pages status) says where pages are.
. "$top_srcdir/tests/lib.sh"
B=$top_builddir/tests/tiered
pre() { LD_PRELOAD=$TIERMALLOC_LIB "$@"; }
tmp=$(mktemp -d)
# tiermalloc alone decides: no kernel NUMA balancing in the way
echo 0 >/proc/sys/kernel/numa_balancing

# --- sources: perf has no PMU under TCG; damon and pagemap run, so the last
# resort (recency) is not needed --------------------------------------------
src=$($B/tierctl -W tier.heat.sources)
# (DAMON starts at the sampling level the budget suggests: level 3 at 1%)
case $src in *"damon"*", pagemap running"*"perf: no hardware PMU"*"recency: not needed"*) r=0 ;; *) r=1 ;; esac
ok $r "sources: $src"
src=$(TIERMALLOC_CONF=heat_sources:pagemap $B/tierctl -W tier.heat.sources)
case $src in *"pagemap running"*"reads not seen"*) r=0 ;; *) r=1 ;; esac
ok $r "written bits alone: the sources say reads are not seen: $src"

# --- shedding: at a budget DAMON cannot fit even at its coarsest, it is
# paused (pagemap goes on, the sources say why), and a larger budget set
# live resumes it.  The budget steps DAMON down a level at a time, each
# step waiting for the cost to show, and kdamond's set-up is slow under
# TCG: wait for each state (15 s was not always enough in CI) rather than
# a fixed time.
out=$(TIERMALLOC_CONF=advise:true,bg_cpu:0.001 $B/tierctl -W -U 90 tier.heat.sources "damon: shed: " \
	-w tier.bg_cpu=0.5 -U 30 tier.heat.sources ", pagemap" 2>&1)
rc=$?
shed=$(echo "$out" | sed -n 1p)
back=$(echo "$out" | sed -n 2p)
case $shed in *"pagemap running"*"damon: shed: "*"over bg_cpu 0.1%"*) r=0 ;; *) r=1 ;; esac
ok $r "bg_cpu 0.1%: DAMON is shed, pagemap goes on: $shed"
case $back in "damon"*", pagemap"*) r=$rc ;; *) r=1 ;; esac
ok $r "bg_cpu raised to 50% live: DAMON resumes: $back"

# Under TCG every write fault and every TLB shootdown (an IPI to the
# program's vCPU) costs 10 to 100 times what it costs on hardware, and
# kdamond's sampling is emulated too: at the default budget (bg_cpu 1%)
# the monitor looks at a few blocks a second.  The checks of tiering's
# behaviour run with a budget of 20% of a core; the cost at the default
# budget is checked at the end.
BUDGET=bg_cpu:0.2

# --- a hot set that started on node 1 is promoted, with each access source.
# -y 2000: the toucher rests 2 ms per round over the hot set.  Spinning, it
# starved kdamond on the guest's two emulated CPUs: DAMON alone then
# promoted nothing in about a third of the runs (seen 2026-12-03).
# DAMON gets a second attempt in a fresh process, said in the test name:
# under TCG its promotion sometimes stalls near 80% (seen 2026-12-03 in 4
# of about 9 full-suite runs, and in 1 to 2 of about 40 runs alone).  The
# first attempt is a line of its own (retried, counted at the end).
for s in damon pagemap; do
	note=
	TIERMALLOC_CONF=fast_limit:64M,heat_sources:$s,$BUDGET,stats_print:true pre $B/hotset -y 2000 -t 15 256 32 \
		>"$tmp/hot.$s" 2>"$tmp/hot.$s.stats"
	r=$?
	if [ $r -ne 0 ] && [ $s = damon ]; then
		retried "heat_sources:$s hot subset promoted" "$(grep '^phase 1' "$tmp/hot.$s")"
		sed 's/^/# first attempt: /' "$tmp/hot.$s"
		TIERMALLOC_CONF=fast_limit:64M,heat_sources:$s,$BUDGET,stats_print:true pre $B/hotset -y 2000 -t 15 256 32 \
			>"$tmp/hot.$s" 2>"$tmp/hot.$s.stats"
		r=$?
		note=" (second attempt)"
	fi
	line=$(grep '^phase 1' "$tmp/hot.$s")
	ok $r "heat_sources:$s: 32 MiB hot subset of 256 MiB (fast_limit 64M) promoted$note: $line"
	[ $r -eq 0 ] || sed 's/^/# /' "$tmp/hot.$s"
done
# what DAMON costs is counted: kdamond's CPU is part of the background cost
bgl=$(grep '^background thread: ' "$tmp/hot.damon.stats")
kd=$(echo "$bgl" | sed -n 's/.*kdamond share ns \([0-9]*\).*/\1/p')
own=$(echo "$bgl" | sed -n "s/.*CPU ns (this thread and the sources' threads) \([0-9]*\).*/\1/p")
awk -v k="${kd:-0}" 'BEGIN { exit !(k > 0) }'
ok $? "heat_sources:damon at bg_cpu 20%: the background cost includes kdamond's share (${kd:-?} ns beside ${own:-?} ns of our threads)"

# --- hot-set shift: the new set is promoted, the old one demoted -----------
# Up to 30 s a phase: make -j2 check runs host suites beside this VM; with
# a busy core beside it the second phase took 0.6-6.4 s in 9 runs of 10 and
# past 15 s in one (CI failed on that at -t 15).
TIERMALLOC_CONF=fast_limit:48M,stats_print:true,trace:true,$BUDGET pre $B/hotset -s -t 30 -c 4 256 32 >"$tmp/shift" 2>"$tmp/shift.stats"
r=$?
p1=$(sed -n 's/^phase 1 reached .* after \(.*\) s$/\1/p' "$tmp/shift")
p2=$(sed -n 's/^phase 2 reached .* after \(.*\) s$/\1/p' "$tmp/shift")
old=$(sed -n 's/^old hot set: \(.*\)% still on node 0$/\1/p' "$tmp/shift")
ok $r "shift: new hot set >= 90% on node 0 after ${p2:-?} s (first set: ${p1:-?} s)"
awk -v o="${old:-100}" 'BEGIN { exit !(o < 60) }'
ok $? "shift: the old hot set made room ($old% of it left on node 0, fast_limit 48M)"
grep '^steady' "$tmp/shift" | sed 's/^/# /'
pro=$(sed -n 's/^migration: promoted bytes \([0-9]*\),.*demoted bytes \([0-9]*\),.*/\1 \2/p' "$tmp/shift.stats")
set -- $pro
[ "${1:-0}" -gt 0 ] && [ "${2:-0}" -gt 0 ] && grep -q '^heat: sources ' "$tmp/shift.stats"
ok $? "stats show promotions (${1:-0} B), demotions (${2:-0} B) and the sources"
grep -E '^(heat|migration|background|monitor|hot set)' "$tmp/shift.stats" | sed 's/^/# /'
# trace:true logs each of the policy's moves with what it was judged on,
# and the slow blocks it looks at again before a swap
re='^tiermalloc: trace period [0-9]+: (promote|demote|look again at) 0x[0-9a-f]+ heat [0-9.]+ lo -?[0-9.]+ se [0-9.]+'
tu=$(grep -E "$re" "$tmp/shift.stats" | grep -c ' promote ')
td=$(grep -E "$re" "$tmp/shift.stats" | grep -c ' demote ')
tl=$(grep -E "$re" "$tmp/shift.stats" | grep -c ' look again at ')
bad=$(grep '^tiermalloc: trace' "$tmp/shift.stats" | grep -cvE "$re")
[ "$tu" -gt 0 ] && [ "$td" -gt 0 ] && [ "$bad" -eq 0 ]
ok $? "trace:true logs the policy's moves ($tu promotions, $td demotions, $tl looked at again first, $bad malformed lines)"

# --- data integrity: 30 s of forced migration under checksummed writers ------
TIERMALLOC_CONF=fast_limit:256M,migrate:false $B/integrity 30 128 2 >"$tmp/int"
r=$?
set -- $(cat "$tmp/int")
[ $r -eq 0 ] && [ "$2" = 0 ] && [ "${12:-0}" -gt 10000 ]
ok $? "integrity: $(cat "$tmp/int")"

# --- pinned ranges never move ------------------------------------------------
TIERMALLOC_CONF=fast_limit:1G,migrate:false $B/pinfork pin >"$tmp/pin"
ok $? "pinned 16 MiB stays put through demote-all and promote-all"
sed 's/^/# /' "$tmp/pin"

# --- fork while migrating ------------------------------------------------------
TIERMALLOC_CONF=fast_limit:64M $B/pinfork fork 5 >"$tmp/fork"
ok $? "fork while migrating: $(tail -n 1 "$tmp/fork")"

# --- bad knob values are rejected and change nothing ---------------------------
$B/tierctl -w tier.period_ms=0 tier.period_ms >"$tmp/k1" 2>"$tmp/k1.err"
r=$?
[ $r -ne 0 ] && [ "$(cat "$tmp/k1")" = 100 ] && grep -q "Invalid argument" "$tmp/k1.err"
ok $? "tier.period_ms=0 rejected (EINVAL), period stays 100"
$B/tierctl -w tier.watermark_low=0.99 -w tier.hysteresis=0.5 tier.watermark_low tier.hysteresis >"$tmp/k2" 2>/dev/null
[ "$(echo $(cat "$tmp/k2"))" = "0.85 2" ]
ok $? "watermark_low above watermark_high and hysteresis < 1 rejected"
out=$(TIERMALLOC_CONF=promote_rate_mbps:0,heat_sources:perf $B/tierctl opt.promote_rate_mbps 2>"$tmp/k3")
[ "$out" = 2048 ] && grep -q 'bad value "0" for promote_rate_mbps' "$tmp/k3"
ok $? "TIERMALLOC_CONF promote_rate_mbps:0: $(cat "$tmp/k3")"
# --- the cheap watch: everything fits on the fast tier, nothing is slow ---
set -- $($B/tierctl -W -S 3 stats.monitor.idle stats.monitor.idle_periods tier.heat.sources)
[ "$1" = true ] && [ "${2:-0}" -ge 10 ]
ok $? "all on the fast tier: the monitor idles (idle $1 for ${2:-0} periods; sources: $3 $4 $5 ...)"

# --- the default budget (bg_cpu 1%) at steady state, under TCG -------------
# What bg_cpu holds is tracking (our threads, our share of kdamond, the
# write faults tracking makes); moving memory is bounded by the rate limits,
# and at 1% under TCG the hot set is still being found and moved in the
# window (CI 2026-12-04: 2.0-2.5% in all, 0.9-2.2% of it migration), so the
# window's tracking share is checked against the VM target (twice the
# budget), and migration is said beside it.
# Under TCG one 10 s window now and then reads 2.6% where the others read
# 0.9-1.4% (seen 2026-12-04 in CI): a second window in a fresh process,
# said in the test name; a systematic overshoot fails both.
steady_pct() { # CONF [HOTSET-ARGS]: the steady share of a hotset run, % of a core
	conf=$1
	shift
	TIERMALLOC_CONF=$conf pre $B/hotset -y 2000 -t 15 "$@" -c 10 256 32 >"$tmp/def" 2>"$tmp/def.json"
	sed -n 's/^steady: .* tracking \([0-9.]*\)%.*/\1/p' "$tmp/def"
}
moving() { sed -n 's/^steady: .* of a core over [0-9.]* s (\([0-9]*\) MiB moved, migration \([0-9.]*\)%.*hot set \([0-9.]*\)% fast.*/: \2% of a core moving \1 MiB, the hot set \3% fast at the end/p' "$tmp/def"; }
under2() { awk -v s="${1:-100}" 'BEGIN { exit !(s <= 2) }'; }
steady_retry() { # WHAT CONF [ARGS]: as steady_pct, into $pct; a second window in a
	# fresh process when the first is over 2%, the first said as a retry
	what=$1
	shift
	note=
	pct=$(steady_pct "$@")
	if ! under2 "$pct"; then
		retried "$what" "tracking ${pct:-?}% of a core"
		note=" (second window, see retry $tap_retries)"
		pct=$(steady_pct "$@")
	fi
}
steady_retry "default budget, written bits" fast_limit:64M,stats_print:json,heat_sources:pagemap
under2 "$pct"
ok $? "default budget, written bits: tracking costs over 10 s, faults included, ${pct:-?}% of a core (1% asked, VM target 2%)$note; migration beside it$(moving)"
sed 's/^/# default budget, pagemap: /' "$tmp/def"
# with DAMON, kdamond's sampling under TCG costs more than the budget even
# at its coarsest: the source must have stepped down to it, then been shed
# (paused, said in the sources), and the tracking cost, measured once it is
# shed, must meet the VM target
steady_retry "default budget, all sources" fast_limit:64M,stats_print:json -w "damon: shed: "
share=$(sed -n 's/.*"recent_share":\([0-9.]*\).*/\1/p' "$tmp/def.json")
level=$(sed -n 's/.*"levels":{[^}]*"damon":\([0-9]*\).*/\1/p' "$tmp/def.json")
[ "${level:-0}" -eq 4 ]
ok $? "default budget, all sources: DAMON stepped down to its coarsest sampling (level ${level:-?} of 4)"
grep -q '"sources":"[^"]*damon (shed: ' "$tmp/def.json" && grep -q '^sources hold' "$tmp/def"
ok $? "default budget, all sources: DAMON over the budget at its coarsest was shed: $(grep -o 'damon (shed: [^;")]*' "$tmp/def.json") ($(grep '^sources' "$tmp/def"))"
under2 "$pct"
ok $? "default budget, all sources: tracking costs over 10 s once DAMON is shed ${pct:-?}% of a core, faults and kdamond included (1% asked, VM target 2%); recent share ${share:-?}$note; migration beside it$(moving)"
sed 's/^/# default budget, all sources: /' "$tmp/def"
# ... and over the whole run, from start: kdamond's share before DAMON was
# shed included, with the bursts that found the hot set.  What bg_cpu and
# bg_cpu_burst promise: the budget outside bursts, the burst budget in
# them; against the VM target of twice that.
set -- $(sed -n 's/.*"background":{[^}]*"periods":\([0-9]*\)[^}]*"core_share":\([0-9.e+-]*\)[^}]*"burst_ms":\([0-9]*\).*/\1 \2 \3/p' "$tmp/def.json")
awk -v p="${1:-0}" -v c="${2:-1}" -v b="${3:-0}" 'BEGIN {
	t = p * 0.1; if (t < 1) exit 1
	bs = b / 1000; if (bs > t) bs = t
	exit !(c <= 2 * (0.01 * (t - bs) + 0.3 * bs) / t) }'
ok $? "default budget, all sources: from start, kdamond before the shed and the bursts included, $(awk -v c="${2:-0}" 'BEGIN { printf "%.2f", c * 100 }')% of a core over ${1:-?} periods with ${3:-?} ms in bursts (VM target: twice 1% outside bursts and 30% in them)"

# --- CXL hot lists (host physical addresses) --------------------------------
. "$top_srcdir/tests/tiered/guest-cxl.sh"
rm -rf "$tmp"
done_testing
