#!/bin/sh
# Runs inside the tiered VM: device awareness (issue 10).  A buffer
# registered with io_uring (real long-term pins) becomes device-held and
# is no longer retried; the interposed registration calls pin and unpin
# exactly their ranges (as on the host, here with tiering on).
. "$top_srcdir/tests/lib.sh"
D=$top_builddir/tests/dev
echo 0 >/proc/sys/kernel/numa_balancing
out=$(TIERMALLOC_CONF=fast_limit:1M timeout 120 "$D/uring_held" 2>&1)
rc=$?
sub_tap "$out" '^(ok|not ok|#)' # its checks carry the timings
[ $rc -eq 0 ] && [ "$bad" -eq 0 ] && [ "$n" -ge 10 ]
ok $? "io_uring fixed buffer: device-held after the bounded tries, no more retries, neighbour moved, cleared after free ($n checks, $bad failed)"
out=$(LD_PRELOAD=$TIERMALLOC_LIB "$D/devreg" fake 2>&1)
rc=$?
sub_tap "$out"
[ $rc -eq 0 ] && [ "$bad" -eq 0 ]
ok $? "interposed registrations pin exactly their ranges, with tiering on ($n checks)"
done_testing
