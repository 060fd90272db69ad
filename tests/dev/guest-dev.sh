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
printf '%s\n' "$out" | grep -E '^(ok|not ok|#)' | sed 's/^/# /'
n=$(printf '%s\n' "$out" | grep -c '^ok ')
bad=$(printf '%s\n' "$out" | grep -c '^not ok')
[ $rc -eq 0 ] && [ "$bad" -eq 0 ] && [ "$n" -ge 10 ]
ok $? "io_uring fixed buffer: device-held after the bounded tries, no more retries, neighbour moved, cleared after free ($n checks, $bad failed)"
out=$(LD_PRELOAD=$TIERMALLOC_LIB "$D/devreg" fake 2>&1)
rc=$?
bad=$(printf '%s\n' "$out" | grep -c '^not ok')
printf '%s\n' "$out" | grep '^not ok' | sed 's/^/# /'
[ $rc -eq 0 ] && [ "$bad" -eq 0 ]
ok $? "interposed registrations pin exactly their ranges, with tiering on ($(printf '%s\n' "$out" | grep -c '^ok ') checks)"
done_testing
