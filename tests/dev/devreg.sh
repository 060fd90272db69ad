#!/bin/sh
# The interposed device registration calls (preload/devreg.c), on this
# host: with the stand-in device library, exactly the registered ranges
# are pinned during registration and unpinned after; without any device
# library, the calls fail as the APIs do and pin nothing.  always_hook:
# a one-node host has no tiering, and without the hooks nothing is ours
# to pin.
. "${top_srcdir:-.}/tests/lib.sh"
D=$top_builddir/tests/dev
export TIERMALLOC_CONF=always_hook:true
for prog in "devreg fake" "devnone none"; do
	set -- $prog
	out=$(LD_PRELOAD=$TIERMALLOC_LIB "$D/$1" $2 2>&1)
	rc=$?
	sub_tap "$out"
	[ $rc -eq 0 ] && [ "$bad" -eq 0 ] && [ "$n" -ge 8 ]
	ok $? "$1 ($2): $n checks passed, $bad failed"
done
done_testing
