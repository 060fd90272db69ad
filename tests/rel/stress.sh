#!/bin/sh
# Stress on the host under LD_PRELOAD (tests/rel/stress.c says what each
# mode does).  always_hook:true: the host has one tier, and these checks are
# about our hooks and arenas as much as jemalloc.
. "${top_srcdir:-.}/tests/lib.sh"
S=$top_builddir/tests/rel/stress
N=${STRESS_THREADS:-100000}
run() { # run CONF ARGS...: one TAP line from the program's result line
	conf=$1
	shift
	out=$(TIERMALLOC_CONF=$conf LD_PRELOAD=$TIERMALLOC_LIB timeout 300 "$S" "$@" 2>&1)
	rc=$?
	line=$(printf '%s\n' "$out" | grep -E '^(ok|FAIL) ' | tail -n 1)
	[ $rc -eq 0 ] && [ "${line%% *}" = ok ]
	ok $? "${line#* } [$conf, exit $rc]"
	[ $rc -eq 0 ] || printf '%s\n' "$out" | tail -n 5 | sed 's/^/# /'
}
run always_hook:true threads "$N"
run always_hook:true realloc 5
run always_hook:true forkexec 8 4 32
for lim in as data; do
	run always_hook:true limit $lim
	run enabled:true limit $lim
done
# A program that allocates from signal handlers (a timer per thread, 100 Hz
# then 1 kHz, 4 threads) while its main loops allocate.  Not
# async-signal-safe, done anyway by real programs: plain jemalloc
# deadlocks (a handler waits on an arena lock the interrupted code holds),
# glibc's malloc deadlocks or crashes.  tiermalloc serves calls that
# re-enter it from a pool of its own (tests/RELIABILITY.md); the program's
# watchdog kills it 15 s after its end, so a deadlock fails, not hangs.
run always_hook:true,signal_safe:true signal 2 100 4
run always_hook:true,signal_safe:true signal 2 1000 4
done_testing
