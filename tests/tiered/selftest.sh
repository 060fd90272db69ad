#!/bin/sh
# The VM harness's own selftest (tests/vm/selftest), reported as TAP.
# VM suites run one at a time (two TCG guests on two cores would distort
# each other's timings), and the kernel cache is filled first, so that its
# download does not count against the selftest's timeout check.  The cxl
# topology's boot is checked too (TIERMALLOC_VM_SELFTEST_CXL=1).  A selftest
# that stops early fails here: its exit status and its closing summary must
# agree with the lines it printed.
. "${top_srcdir:-.}/tests/lib.sh"
exec 9>"${top_builddir:-.}/.vm.lock"
flock 9
"${top_srcdir:-.}/tests/vm/run" --quiet -- true >/dev/null 2>&1
out=$(mktemp)
trap 'rm -f "$out"' EXIT
TIERMALLOC_VM_SELFTEST_CXL=${TIERMALLOC_VM_SELFTEST_CXL:-1} "${top_srcdir:-.}/tests/vm/selftest" >"$out" 2>&1
rc=$?
if [ $rc -eq 77 ]; then
	need_skip "the VM selftest: $(grep '^SKIP' "$out" | head -n 1)"
	done_testing
	exit $?
fi
while IFS= read -r line; do
	case $line in
	"PASS: "*) ok 0 "${line#PASS: }" ;;
	"FAIL: "*) ok 1 "${line#FAIL: }" ;;
	"SKIP: "*) skip "${line#SKIP: }" ;;
	*) diag "$line" ;;
	esac
done <"$out"
np=$(grep -c '^PASS: ' "$out")
nf=$(grep -c '^FAIL: ' "$out")
ns=$(grep -c '^SKIP: ' "$out")
sum=$(tail -n 1 "$out")
want=0
[ "$nf" -eq 0 ] || want=1
[ "$sum" = "$np passed, $nf failed, $ns skipped" ] && [ $rc -eq $want ] && [ $((np + nf)) -ge 10 ]
ok $? "the selftest ran to its end: exit $rc, summary \"$sum\" for $np passed, $nf failed, $ns skipped"
done_testing
