#!/bin/sh
# The scale bench in its quick mode (64 and 256 MiB, short phases), at the
# default bg_cpu (1%) in advisor mode: it runs, its output is well formed,
# and the background work stays near its budget.  Other timings are the
# bench's business, printed only.
. "${top_srcdir:-.}/tests/lib.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
SCALE_BUILT=1 SCALE_OUT=$tmp sh "$top_srcdir/bench/scale/run.sh" --quick >"$tmp/table" 2>"$tmp/err"
ok $? "bench/scale/run.sh --quick ran"
sed 's/^/# /' "$tmp/table"
head -n 1 "$tmp/scale.csv" | grep -q '^footprint_mib,touched_mib,hot_mib,workload,allocator,phase,detect_s,rate_maps,bg_share'
ok $? "CSV header"
# per footprint: 2 paced tiermalloc workloads + paced jemalloc + 2 unpaced, 2 phases each
n=$(awk -F, 'NR > 1 && NF == 24' "$tmp/scale.csv" | wc -l)
[ "$n" -eq 20 ]
ok $? "CSV: 20 rows of 24 fields ($n)"
awk -F, 'NR > 1 && ($9 < 0 || $9 > 1 || $8 <= 0 || $13 < 0 || $14 <= 0) { bad++ } END { exit bad > 0 }' "$tmp/scale.csv"
ok $? "shares of a core within 0..1, access rates and jemalloc metadata positive"
awk -F, 'NR > 1 && $5 == "tiermalloc" && $4 != "unpaced" && $13 == 0 { bad++ } END { exit bad > 0 }' "$tmp/scale.csv"
ok $? "tiermalloc's runs report their metadata"
# the budget is a share of one core, measured over the paced windows:
# 3x its 1% leaves room for a loaded machine, not for a thread that ignores it
bg=$(awk -F, 'NR > 1 && $5 == "tiermalloc" && $4 != "unpaced" {printf "%s%.2f%%", s, 100 * $9; s = " "}' "$tmp/scale.csv")
awk -F, 'NR > 1 && $5 == "tiermalloc" && $4 != "unpaced" { n++; if ($9 > 0.03) bad++ } END { exit !(n == 8 && bad == 0) }' "$tmp/scale.csv"
ok $? "the default budget (bg_cpu 1%) holds: background share of every paced run at most 3% ($bg)"
# detection at the default: the written hot set of each paced phase is
# found within 2 s (0.10-0.31 s in 24 of 24 phases at 64 and 256 MiB,
# 2026-12-06, tenth session; never at 256 MiB in 1 of 3 runs of the sixth
# session, before the engine of issue 19).  The read-only set is found only
# where a source sees reads (perf, or DAMON when no other kdamond runs):
# where one runs, it is held to the same.
det=$(awk -F, 'NR > 1 && $5 == "tiermalloc" && $4 != "unpaced" {printf "%s%s:%s", s, $4, $7; s = " "}' "$tmp/scale.csv")
awk -F, 'NR > 1 && $5 == "tiermalloc" && $4 == "written" { n++; if ($7 < 0 || $7 > 2) bad++ } END { exit !(n == 4 && bad == 0) }' "$tmp/scale.csv"
ok $? "the default finds the written hot set of every paced phase within 2 s ($det)"
if grep '^scale: heat sources:' "$tmp/err" | sed 's/;.*//' | grep -Eq '(perf|damon)[^;]* running'; then
	awk -F, 'NR > 1 && $5 == "tiermalloc" && $4 == "read-only" { n++; if ($7 < 0 || $7 > 2) bad++ } END { exit !(n == 4 && bad == 0) }' "$tmp/scale.csv"
	ok $? "a source sees reads here: the read-only hot set of every paced phase is found within 2 s"
else
	diag "no source sees reads on this host (no PMU; DAMON is not ours): read-only detection not asserted"
fi
grep -q '^footprint *| touched' "$tmp/table" && [ "$(grep -c ' MiB *|' "$tmp/table")" -eq 2 ]
ok $? "the table has a row per footprint"
if command -v gnuplot >/dev/null; then
	[ -s "$tmp/scale.png" ] && ! grep -q 'gnuplot failed' "$tmp/table"
	ok $? "the plot was written"
else
	need_skip "the plot: no gnuplot (apt-get install gnuplot-nox)"
fi
done_testing
