#!/bin/sh
# The entry points' direct jumps (preload/patch.c) under each setting that
# decides them, read from the code by tests/host/entry.c, and glibc's rules
# and the watched features on each path.  No IFUNC: no "Relink" line from
# ld.so, even with every reference bound at start (LD_BIND_NOW).
. "${top_srcdir:-.}/tests/lib.sh"
E=$top_builddir/tests/host/entry
run() { # run CONF MODE [ENV...]
	conf=$1 mode=$2
	shift 2
	out=$(env "$@" TIERMALLOC_CONF=$conf LD_PRELOAD=$TIERMALLOC_LIB "$E" "$mode" 2>"$tmp/err")
	rc=$?
	sub_tap "$out"
	[ $rc -eq 0 ] && [ "$bad" -eq 0 ] && [ "$n" -gt 5 ]
	ok $? "$mode [$conf $*]: $n checks passed, $bad failed"
	[ ! -s "$tmp/err" ]
	ok $? "$mode [$conf $*]: nothing on stderr"
	[ -s "$tmp/err" ] && sed 's/^/# /' "$tmp/err"
}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if [ "$(uname -m)" != x86_64 ]; then
	skip "direct jumps are written on x86-64 only"
	done_testing
	exit $?
fi
run large_cache:0 none
run large_cache:0 none LD_BIND_NOW=1
run "" watch
run always_hook:true hooked
run always_hook:true,large_cache:0 hooked
run signal_safe:true armed
run signal_safe:true,large_cache:0 armed
# a program that never allocates, bound at start
out=$(LD_BIND_NOW=1 LD_PRELOAD=$TIERMALLOC_LIB /bin/true 2>&1)
[ -z "$out" ]
ok $? "/bin/true under LD_BIND_NOW: nothing printed"
done_testing
