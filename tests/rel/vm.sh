#!/bin/sh
# Host side of the reliability checks in the tiered VM
# (tests/rel/guest-rel.sh): one boot, the guest's TAP lines passed on.
# A VM that fails to boot, panics or hangs yields a failing line.
. "${top_srcdir:-.}/tests/lib.sh"
RUN="$top_srcdir/tests/vm/run"
exec 9>"$top_builddir/.vm.lock"
flock 9
export top_srcdir top_builddir TIERMALLOC_LIB
tmp=$(mktemp -d "${top_builddir}/.vmtest.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
${PYTHON3:-python3} -c '
import random, sys
r = random.Random(12)
with open(sys.argv[1], "w") as f:
    for i in range(300000):
        f.write("%012x %s\n" % (r.getrandbits(48), "z" * r.randrange(1, 30)))
' "$tmp/sort.in"
LC_ALL=C sort "$tmp/sort.in" >"$tmp/sort.out"
export SORT_IN="$tmp/sort.in" SORT_OUT="$tmp/sort.out" LC_ALL=C
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
