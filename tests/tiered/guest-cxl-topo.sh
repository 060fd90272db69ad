#!/bin/sh
# Runs inside the cxl VM (an emulated CXL type-3 device onlined as the
# CPU-less node 1): discovery through libcxl names the tier's kind and its
# memory device.  Its memory is very slow under emulation: nothing here
# touches more than a few MiB.
. "$top_srcdir/tests/lib.sh"
B=$top_builddir/tests/tiered

set -- $($B/tierctl tier.count tier.0.kind tier.1.kind tier.1.devices)
[ "$1" = 2 ] && [ "$2" = node ] && [ "$3" = cxl ] && [ -n "$4" ] && [ "${4#mem}" != "$4" ]
ok $? "discovery: 2 tiers, tier 0 kind $2, tier 1 kind $3 with devices $4"
reason=$($B/tierctl tier.1.reason)
case $reason in *"CXL region"*) r=0 ;; *) r=1 ;; esac
ok $r "tier 1's reason names the region: $reason"
out=$(TIERMALLOC_CONF=stats_print:true LD_PRELOAD=$TIERMALLOC_LIB /bin/true 2>&1)
echo "$out" | grep -q "^ *tier 1, nodes 1, arena [0-9]*, .*, kind cxl, devices mem[0-9]*, why "
ok $? "text stats: $(echo "$out" | grep '^ *tier 1,' | cut -c1-160)"
out=$(TIERMALLOC_CONF=stats_print:json LD_PRELOAD=$TIERMALLOC_LIB /bin/true 2>&1)
echo "$out" | grep -q '"kind":"cxl","devices":"mem[0-9]*"'
ok $? "JSON stats: $(echo "$out" | grep -o '"kind":"cxl","devices":"[^"]*"')"

# the window's interleave arithmetic, from the ACPI CEDT as the cxl source
# reads it for regions across host bridges (QEMU's window: modulo)
rdec=$(basename "$(dirname "$(readlink -f /sys/bus/cxl/devices/region0)")")
out=$($B/cedt "$rdec" 2>&1)
case $out in *"arithmetic modulo translated") r=0 ;; *) r=1 ;; esac
ok $r "CEDT: the root decoder's window is found and modulo: $out"

# hot lists by device address (dpa), translated through the region: the
# named buffer leaves the CXL node.  Small: 12 MiB, 10 of them on CXL
# (fast_limit 4M: the first block and the small allocations fast, so that
# promoting A swaps out a cold block of data).
r0=/sys/bus/cxl/devices/region0
dec=$(cat $r0/target0)
mem=$(basename "$(readlink -f "$(dirname "$(readlink -f /sys/bus/cxl/devices/$dec)")/uport")")
spec=$mem:$(cat $r0/resource):$(cat /sys/bus/cxl/devices/$dec/dpa_resource)
diag "dpa replay: $spec (ways $(cat $r0/interleave_ways))"
ctmp=$(mktemp -d)
TIERMALLOC_CONF=fast_limit:4M,heat_sources:cxl,bg_cpu:0.2 $B/cxlhot -n 6 -t 90 -d "$spec" >"$ctmp/out" 2>&1
r=$?
while IFS= read -r line; do
	case $line in
	"ok "*) ok 0 "cxl dpa: ${line#ok }" ;;
	"fail"*) ok 1 "cxl dpa: ${line#fail}" ;;
	*) diag "cxl dpa: $line" ;;
	esac
done <"$ctmp/out"
# placing the buffers past fast_limit on the CXL node is our own job:
# cxlhot checks it as a line of its own, never a skip
ok $r "cxl dpa: the replay program exits 0 (exit $r)"
rm -rf "$ctmp"
done_testing
