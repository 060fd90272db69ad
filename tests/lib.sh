# Shell TAP helpers for the test scripts.
tap_n=0
tap_failed=0
ok() { # ok COND-EXIT-STATUS NAME
	tap_n=$((tap_n + 1))
	if [ "$1" -eq 0 ]; then echo "ok $tap_n - $2"; else echo "not ok $tap_n - $2"; tap_failed=$((tap_failed + 1)); fi
}
skip() { tap_n=$((tap_n + 1)); echo "ok $tap_n # SKIP $1"; }
# need_skip REASON: a skip for what this environment truly lacks (a package
# of dev.sh's PKGS, root).  Under CI=true, where .ci/run installs all of
# them and runs as root, the same lack fails.
need_skip() {
	if [ "${CI:-}" = true ]; then ok 1 "$1 (missing under CI=true, where .ci/run provides it)"; else skip "$1"; fi
}
diag() { echo "# $*"; }
# A nested TAP program's output ($1): its "ok" lines counted in $n, its
# "not ok" lines in $bad, the lines matching $2 (default: its failures and
# comments) repeated as diagnostics.
sub_tap() {
	printf '%s\n' "$1" | grep -E "${2:-^(not ok|#)}" | sed 's/^/# /'
	n=$(printf '%s\n' "$1" | grep -c '^ok ')
	bad=$(printf '%s\n' "$1" | grep -c '^not ok')
}
# retried WHAT FIRST-RESULT: a check whose first attempt failed is tried
# again: the first attempt is said on a line of its own and counted
tap_retries=0
retried() {
	tap_retries=$((tap_retries + 1))
	echo "# retry $tap_retries: $1: the first attempt failed: $2"
}
done_testing() {
	[ "$tap_retries" -eq 0 ] || echo "# $tap_retries check(s) passed or failed on a second attempt (see the retry lines)"
	echo "1..$tap_n"
	[ "$tap_failed" -eq 0 ]
}
: "${TIERMALLOC_LIB:?TIERMALLOC_LIB must point at libtiermalloc.so}"
