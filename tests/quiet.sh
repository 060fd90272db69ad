#!/bin/sh
# The test harness's wrapper (LOG_COMPILER): a VM suite runs alone, the
# other tests beside each other.  The tiered checks time behaviour in a TCG
# guest, whose vCPUs the host's other work preempts; the guest cannot tell
# (TCG reports no steal time), so its threads seem to run the whole time
# and a TLB shootdown waits for a vCPU the host has descheduled.  Beside the
# fuzzer and the stress test under make -j2, the default budget's monitor
# saw visits of 0.3 ms cost 20-60 ms and did not find the first hot set.
# VM suites take .vm.lock exclusively themselves (tests/vmhost.sh); every
# other test holds it shared while it runs.
lock="${top_builddir:-.}/.vm.lock"
case "$1" in
*.sh) grep -q 'vm\.lock\|vm_host_setup' "$1" && exec /bin/sh "$@" ;;
esac
# on a high descriptor, inherited by the test (the lock lasts as long as
# it does): flock(1) FILE took the lowest free one, which the tests' own
# make then read as make's jobserver pipe ("read jobs pipe: Bad file
# descriptor", tests/host/install.sh)
exec 8>>"$lock"
flock -s 8
case "$1" in
*.sh) exec /bin/sh "$@" ;;
*) exec "$@" ;;
esac
