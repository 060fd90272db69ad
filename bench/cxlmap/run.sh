#!/bin/sh
# The cxl source's cost per period with records, before and after the
# incremental reverse map, side by side, as the footprint grows.  Runs in
# the tiered VM as root:
#   tests/vm/run --topology tiered -- sh bench/cxlmap/run.sh OLD_LIB NEW_LIB [MIB...]
# OLD_LIB: a libtiermalloc.so built before the change (rebuilt every
# period); NEW_LIB: this tree's.  Prints one row per footprint and library.
old=$1 new=$2
shift 2
[ $# -gt 0 ] || set -- 32 128 512
B=${top_builddir:-.}/bench/cxlmap
ROUNDS=${ROUNDS:-12} RECS=${RECS:-64}
printf '%-6s %-4s %8s %10s %16s %16s %10s %s\n' MiB lib periods ms/period "cpu ms: first" "cpu ms: later" map_reads accepted
for mib in "$@"; do
	for which in old new; do
		lib=$old
		[ $which = new ] && lib=$new
		out=$(TIERMALLOC_CONF=heat_sources:cxl,fast_limit:2M,migrate:false,stats_print:json \
			LD_PRELOAD=$lib $B/cxlmap "$mib" "$ROUNDS" "$RECS" 2>"/tmp/cxlmap.$$.err")
		${PYTHON3:-python3} - "$mib" "$which" "$ROUNDS" "$out" "/tmp/cxlmap.$$.err" <<'PY'
import re, sys
mib, which, rounds, out, err = sys.argv[1:6]
kv = out.split()
d = dict(zip(kv[::2], kv[1::2]))
m = re.search(r'"collect_ns":\{[^}]*"cxl":(\d+)', open(err).read())
ns = int(m.group(1)) if m else 0
periods = int(d.get("resolves", rounds))
first = later = "-"
if "resolve_cpu_us" in d and periods > 1:
    first = "%.2f" % (float(d["first_cpu_us"]) / 1e3)
    later = "%.2f" % ((float(d["resolve_cpu_us"]) - float(d["first_cpu_us"])) / 1e3 / (periods - 1))
print("%-6s %-4s %8d %10.2f %16s %16s %10s %s" % (mib, which, periods, ns / 1e6 / periods, first, later,
      d.get("map_reads", "-"), d.get("accepted", "?")))
PY
	done
done
rm -f "/tmp/cxlmap.$$.err"
