#!/bin/sh
# Interposition under LD_PRELOAD (tests/unit/test_interpose runs the same
# checks linked with -ltiermalloc): a plain program's libc-internal
# allocations reach tiermalloc, with and without threads.  glibc's third
# variant (tst-interpose-static) links the interposer statically: not
# possible here, libtiermalloc is a shared library over a shared jemalloc.
. "${top_srcdir:-.}/tests/lib.sh"
P=$top_builddir/tests/rel/interpose
for mode in nothreads threads; do
	out=$(LD_PRELOAD=$TIERMALLOC_LIB "$P" $mode 2>&1)
	rc=$?
	n=$(printf '%s\n' "$out" | grep -c '^ok ')
	bad=$(printf '%s\n' "$out" | grep '^not ok' | head -n 3 | tr '\n' ' ')
	[ $rc -eq 0 ] && [ "$n" -ge 19 ] && [ -z "$bad" ]
	ok $? "LD_PRELOAD, $mode: $n checks of libc-internal allocations and mixed frees passed $bad"
done
# without the preload the program runs on glibc and says so (the checks are
# not vacuous: tier_pin is not there)
out=$("$P" nothreads 2>&1)
printf '%s\n' "$out" | grep -q '^not ok 1 - tiermalloc is in the process'
ok $? "without the preload the probe sees no tiermalloc"
done_testing
