#!/bin/sh
# The scale bench in its quick mode (64 and 256 MiB, short phases): it runs
# and its output is well formed.  Timings are the bench's business, not a
# test's: only the shape and the sanity of the numbers are checked.
. "${top_srcdir:-.}/tests/lib.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
SCALE_BUILT=1 SCALE_OUT=$tmp sh "$top_srcdir/bench/scale/run.sh" --quick >"$tmp/table" 2>"$tmp/err"
ok $? "bench/scale/run.sh --quick ran"
sed 's/^/# /' "$tmp/table"
head -n 1 "$tmp/scale.csv" | grep -q '^footprint_mib,touched_mib,hot_mib,workload,allocator,phase,detect_s,rate_maps,bg_share'
ok $? "CSV header"
# per footprint: 2 paced tiermalloc workloads + paced jemalloc + 2 unpaced, 2 phases each
n=$(awk -F, 'NR > 1 && NF == 22' "$tmp/scale.csv" | wc -l)
[ "$n" -eq 20 ]
ok $? "CSV: 20 rows of 22 fields ($n)"
awk -F, 'NR > 1 && ($9 < 0 || $9 > 1 || $8 <= 0 || $13 < 0 || $14 <= 0) { bad++ } END { exit bad > 0 }' "$tmp/scale.csv"
ok $? "shares of a core within 0..1, access rates and jemalloc metadata positive"
awk -F, 'NR > 1 && $5 == "tiermalloc" && $4 != "unpaced" && $13 == 0 { bad++ } END { exit bad > 0 }' "$tmp/scale.csv"
ok $? "tiermalloc's runs report their metadata"
grep -q '^footprint *| touched' "$tmp/table" && [ "$(grep -c ' MiB *|' "$tmp/table")" -eq 2 ]
ok $? "the table has a row per footprint"
[ -s "$tmp/scale.png" ] || grep -q 'gnuplot failed' "$tmp/table"
ok $? "the plot was written (or gnuplot's failure said so)"
done_testing
