#!/bin/sh
# Host side of the tiered-VM suite: boots each topology once and runs the
# guest-side checks there.  A VM that fails to boot, panics or hangs yields
# a failing TAP line, never a pass.
. "${top_srcdir:-.}/tests/lib.sh"
. "$top_srcdir/tests/vmhost.sh"
# one VM suite at a time: see selftest.sh
vm_host_setup 11 400000 y

guest() { # guest TOPOLOGY SCRIPT ARGS...: the guest's TAP lines, renumbered
	topo=$1
	shift
	"$RUN" --quiet --topology "$topo" --timeout 300 -- sh "$@" >"$tmp/$topo.tap" 2>"$tmp/$topo.err"
	rc=$?
	grep -E '^(ok|not ok)' "$tmp/$topo.tap" | while IFS= read -r line; do
		case $line in
		"not ok"*) echo "not ok - [$topo] ${line#not ok * - }" ;;
		*) echo "ok - [$topo] ${line#ok * - }" ;;
		esac
	done
	grep '^#' "$tmp/$topo.tap"
	if [ $rc -gt 1 ] || ! grep -q '^1\.\.[0-9]' "$tmp/$topo.tap"; then
		echo "not ok - [$topo] the guest run exited $rc"
		sed 's/^/# /' "$tmp/$topo.err" | tail -n 30
	fi
}
{
	guest tiered "$top_srcdir/tests/tiered/guest-tiered.sh"
	guest tiered "$top_srcdir/tests/tiered/guest-tiering.sh"
	guest tiered "$top_srcdir/tests/tiered/guest-default.sh"
	guest tiered "$top_srcdir/tests/tiered/guest-job.sh"
	guest flat "$top_srcdir/tests/tiered/guest-flat.sh" flat
	guest three "$top_srcdir/tests/tiered/guest-flat.sh" three
	guest cxl "$top_srcdir/tests/tiered/guest-cxl-topo.sh"
	# device awareness (issue 10): io_uring fixed buffers, registration calls
	guest tiered "$top_srcdir/tests/dev/guest-dev.sh"
} >"$tmp/all"
# renumber for one plan
n=0
while IFS= read -r line; do
	case $line in
	"ok - "*|"not ok - "*) n=$((n + 1)); echo "$line" | sed "s/^\(not ok\|ok\) - /\1 $n - /" ;;
	*) echo "$line" ;;
	esac
done <"$tmp/all"
echo "1..$n"
