#!/bin/sh
# The VM harness's own selftest (tests/vm/selftest), reported as TAP.
# VM suites run one at a time (two TCG guests on two cores would distort
# each other's timings), and the kernel cache is filled first, so that its
# download does not count against the selftest's timeout check.
exec 9>"${top_builddir:-.}/.vm.lock"
flock 9
"${top_srcdir:-.}/tests/vm/run" --quiet -- true >/dev/null 2>&1
"${top_srcdir:-.}/tests/vm/selftest" 2>&1 | awk '
	/^PASS: / { n++; sub(/^PASS: /, ""); print "ok " n " - " $0; next }
	/^FAIL: / { n++; sub(/^FAIL: /, ""); print "not ok " n " - " $0; next }
	/^SKIP: / { n++; sub(/^SKIP: /, ""); print "ok " n " # SKIP " $0; next }
	{ print "# " $0 }
	END { print "1.." n }'
