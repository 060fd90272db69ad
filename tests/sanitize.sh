#!/bin/sh
# make check-sanitize: the unit and stress tests under sanitizers, in a
# copy of the tree built apart (.sanitize/), so the normal build is left
# alone.
#
# Why not ASan everywhere: ASan brings its own malloc, and its runtime
# comes first in symbol lookup, so in an ASan process malloc is ASan's,
# never tiermalloc's (the library would be built and loaded, and never
# asked).  So:
#   * the whole library, the linked unit tests and the stress/interposition
#     programs: UBSan (-fsanitize=undefined, no recovery: any report
#     fails the test), with the allocator really in use;
#   * the pure-logic unit tests (conf parser, topology, registry bitmaps and
#     pool, policy, budget, histograms, perf records), which contain no
#     allocator: ASan + UBSan.
# The fuzzers (tests/fuzz/run.sh) add ASan over the conf parser and
# ctl's name and value handling.
# Environment: UNIT_PURE, UNIT_LINKED (from make), SANITIZE_JOBS.
set -eu
src=$(cd "${top_srcdir:-.}" && pwd)
dst=$(cd "${top_builddir:-.}" && pwd)/.sanitize
jobs=${SANITIZE_JOBS:-$(nproc)}
rm -rf "$dst"
mkdir -p "$dst"
# the source tree with its generated build system, no build products
tar -C "$src" --exclude=./.git --exclude=./.cache --exclude=./.sanitize --exclude=./.fuzz \
	--exclude='*.o' --exclude='*.lo' --exclude='*.la' --exclude=.libs --exclude=.deps \
	--exclude=./config.status --exclude=./Makefile --exclude=./config.h --exclude=./libtool \
	--exclude='*.log' --exclude='*.trs' --exclude='./.vm*' -cf - . | tar -C "$dst" -xf -
cd "$dst"
UB="-fsanitize=undefined -fno-sanitize-recover=undefined"
SAN_OPTS="print_stacktrace=1:halt_on_error=1"
export UBSAN_OPTIONS="$SAN_OPTS" ASAN_OPTIONS="detect_leaks=1:$SAN_OPTS"
./configure -q --enable-werror CFLAGS="-O1 -g -fno-omit-frame-pointer $UB" \
	CXXFLAGS="-O1 -g -fno-omit-frame-pointer $UB" LDFLAGS="$UB" >/dev/null
echo "== UBSan: library, linked unit tests, interposition and stress"
make -j"$jobs" >/dev/null
rc=0
make -j"$jobs" check TESTS="$UNIT_LINKED tests/unit/test_interpose tests/rel/interpose.sh tests/rel/stress.sh" \
	STRESS_THREADS=20000 || rc=1
echo "== ASan + UBSan: pure-logic unit tests"
rm -f src/*.o tests/unit/*.o $UNIT_PURE
AS="-fsanitize=address,undefined -fno-sanitize-recover=undefined"
make -j"$jobs" check TESTS="$UNIT_PURE" CFLAGS="-O1 -g -fno-omit-frame-pointer $AS" \
	LDFLAGS="$AS" || rc=1
# -fno-sanitize-recover fails a test at its first report; say where any was
if grep -l "runtime error\|AddressSanitizer\|LeakSanitizer" tests/*/*.log 2>/dev/null; then
	echo "sanitize: reports in the logs above"
	rc=1
fi
echo "sanitize: $([ $rc -eq 0 ] && echo clean || echo FAILED)"
exit $rc
