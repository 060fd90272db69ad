#!/bin/sh
# libFuzzer over bad input (clang, -fsanitize=fuzzer,address,undefined):
#   conf  TIERMALLOC_CONF parsing (src/conf.c, src/knobs.c)
#   ctl   tier_mallctl names and values, the whole library built in
#   cxl   CXL hot-list lines (src/cxl_report.c), as the cxl source reads them
# Each target first replays its seeds (tests/fuzz/corpus/T) and every input
# that once found a bug (tests/fuzz/regress/T), then fuzzes for
# FUZZ_SECONDS (default 10; .ci/run asks 25; 0: replay only).  A finding
# leaves .fuzz/crash-T-* : fix it in src/, then copy the input into
# tests/fuzz/regress/T/ so it is replayed from then on.
. "${top_srcdir:-.}/tests/lib.sh"
CLANG=${CLANG:-clang}
SECS=${FUZZ_SECONDS:-10}
F=$top_srcdir/tests/fuzz
out=$top_builddir/.fuzz
if ! command -v "$CLANG" >/dev/null || ! echo 'int LLVMFuzzerTestOneInput(const char *d, long n){(void)d;(void)n;return 0;}' |
	"$CLANG" -x c -fsanitize=fuzzer -o /dev/null - 2>/dev/null; then
	need_skip "clang with libFuzzer not installed (apt-get install clang)"
	done_testing
	exit $?
fi
mkdir -p "$out"
FL="-g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined -pthread
 -I$top_srcdir/include -I$top_srcdir/src -I$top_builddir -DHAVE_CONFIG_H"
# the library's C sources, as Makefile.am lists them
lib=$(sed -n '/^libtiermalloc_la_SOURCES/,/[^\\]$/p' "$top_srcdir/Makefile.am" |
	grep -o 'src/[a-z_0-9]*\.c' | sed "s|^|$top_srcdir/|")
build() { # build NAME SOURCES... : rebuilt when a source is newer
	name=$1
	shift
	stale=
	[ -x "$out/fuzz_$name" ] || stale=1
	for s in "$@"; do [ "$s" -nt "$out/fuzz_$name" ] && stale=1; done
	[ -z "$stale" ] && return 0
	# shellcheck disable=SC2086
	$CLANG $FL -o "$out/fuzz_$name" "$@" -ljemalloc -lurcu-bp -lurcu-common -lurcu-cds \
		-ldl -lm 2>"$out/build-$name.log"
}
total=0
for t in conf ctl cxl; do
	case $t in
	conf) srcs="$F/fuzz_conf.c $top_srcdir/src/conf.c $top_srcdir/src/knobs.c $top_srcdir/src/log.c $top_srcdir/src/fmt.c $top_srcdir/src/list.c" ;;
	ctl) srcs="$F/fuzz_ctl.c $lib" ;;
	cxl) srcs="$F/fuzz_cxl.c $top_srcdir/src/cxl_report.c" ;;
	esac
	# shellcheck disable=SC2086
	build $t $srcs
	if ! ok $? "fuzz_$t builds with clang $($CLANG -dumpversion)"; then
		sed 's/^/# /' "$out/build-$t.log" | tail -n 5
		continue
	fi
	n=$(cat "$F/corpus/$t"/* "$F/regress/$t"/* 2>/dev/null | wc -c)
	"$out/fuzz_$t" -runs=0 "$F/corpus/$t" "$F/regress/$t" >"$out/replay-$t.log" 2>&1
	ok $? "fuzz_$t: seeds and regression inputs replay clean ($(ls "$F/corpus/$t" "$F/regress/$t" | grep -vc '^\(\..*\|.*:\|\)$') inputs, $n bytes)"
	[ "$SECS" -gt 0 ] || continue
	mkdir -p "$out/work-$t"
	rm -f "$out/crash-$t-"*
	"$out/fuzz_$t" -max_total_time="$SECS" -dict="$F/$t.dict" -print_final_stats=1 \
		-artifact_prefix="$out/crash-$t-" -timeout=10 -rss_limit_mb=4096 \
		"$out/work-$t" "$F/corpus/$t" "$F/regress/$t" >"$out/fuzz-$t.log" 2>&1
	rc=$?
	execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$out/fuzz-$t.log")
	total=$((total + ${execs:-0}))
	ok $rc "fuzz_$t: ${execs:-?} executions in $SECS s, no finding $(ls "$out/crash-$t-"* 2>/dev/null | head -n 1)"
	[ $rc -eq 0 ] || grep -E 'ERROR|SUMMARY|runtime error' "$out/fuzz-$t.log" | head -n 5 | sed 's/^/# /'
done
diag "fuzz executions in all: $total"
done_testing
