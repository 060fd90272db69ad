#!/bin/sh
# The VM harness's own selftest (tests/vm/selftest), reported as TAP.
"${top_srcdir:-.}/tests/vm/selftest" 2>&1 | awk '
	/^PASS: / { n++; sub(/^PASS: /, ""); print "ok " n " - " $0; next }
	/^FAIL: / { n++; sub(/^FAIL: /, ""); print "not ok " n " - " $0; next }
	/^SKIP: / { n++; sub(/^SKIP: /, ""); print "ok " n " # SKIP " $0; next }
	{ print "# " $0 }
	END { print "1.." n }'
