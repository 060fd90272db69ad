#!/bin/sh
# Host side of the reliability checks in the tiered VM
# (tests/rel/guest-rel.sh): one boot, the guest's TAP lines passed on.
# A VM that fails to boot, panics or hangs yields a failing line.
. "${top_srcdir:-.}/tests/lib.sh"
. "$top_srcdir/tests/vmhost.sh"
# 600000 lines (17 MB): sort runs about 4 s under TCG, 200 periods of
# 20 ms; with 300000 (2 s) one clean-clone run saw no page move while it
# ran (1024-8192 in 14 others)
vm_host_setup 12 600000 z
"$RUN" --quiet --topology tiered --timeout "${REL_VM_TIMEOUT:-900}" -- sh "$top_srcdir/tests/rel/guest-rel.sh" \
	>"$tmp/out" 2>"$tmp/err"
rc=$?
grep -v '^1\.\.[0-9]' "$tmp/out"
if [ $rc -gt 1 ] || ! grep -q '^1\.\.[0-9]' "$tmp/out"; then
	n=$(grep -cE '^(ok|not ok)' "$tmp/out")
	echo "not ok $((n + 1)) - the guest run exited $rc"
	sed 's/^/# /' "$tmp/err" | tail -n 30
	echo "1..$((n + 1))"
else
	grep '^1\.\.[0-9]' "$tmp/out"
fi
