#!/bin/sh
# bench/run --quick, the bench suite's CI mode: every bench (allocator
# workloads on the host; GUPS, KV and the servers under every contender in
# one tiered-VM boot) runs for seconds at tiny sizes, and its outputs must
# be well formed: CSV columns and rows, numbers that parse, every
# contender present, the same checksum under every allocator, the PNG
# plots and the summary written (bench/report.py --check, whose TAP lines
# are passed on).  Timings and ratios are printed by the bench, never
# asserted here.
. "${top_srcdir:-.}/tests/lib.sh"
# one VM suite at a time: see tests/tiered/selftest.sh
exec 9>"$top_builddir/.vm.lock"
flock 9
tmp=$(mktemp -d "${top_builddir}/.vmtest.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
export top_srcdir top_builddir TIERMALLOC_LIB
BENCH_NO_MAKE=1 sh "$top_srcdir/bench/run" --quick --out "$tmp/out" >"$tmp/log" 2>&1
rc=$?
if [ -s "$tmp/out/check.tap" ]; then
	grep -E '^(ok|not ok) ' "$tmp/out/check.tap" | sed 's/^\(ok\|not ok\) [0-9]* - /\1 - /' >"$tmp/lines"
else
	: >"$tmp/lines"
fi
while IFS= read -r line; do
	case $line in
	"ok - "*) ok 0 "${line#ok - }" ;;
	*) ok 1 "${line#not ok - }" ;;
	esac
done <"$tmp/lines"
[ -s "$tmp/lines" ]
ok $? "bench/report.py --check ran over bench/run --quick's outputs"
ok $rc "bench/run --quick exited $rc"
if [ $rc -ne 0 ] || grep -q '^not ok' "$tmp/out/check.tap" 2>/dev/null; then
	tail -n 30 "$tmp/log" | sed 's/^/# /'
	for f in "$tmp"/out/*.log "$tmp/out/vm.err"; do
		[ -s "$f" ] && { echo "# --- $(basename "$f")"; tail -n 8 "$f" | sed 's/^/# /'; }
	done
fi
# the figures, for the log (not asserted)
grep -E '^(\||\* )' "$tmp/out/summary.md" 2>/dev/null | sed 's/^/# /'
done_testing
