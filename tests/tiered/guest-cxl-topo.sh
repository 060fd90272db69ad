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
echo "$out" | grep -q "^tier 1: nodes 1, arena [0-9]*, kind cxl (mem[0-9]*)$"
ok $? "text stats: $(echo "$out" | grep '^tier 1:')"
out=$(TIERMALLOC_CONF=stats_print:json LD_PRELOAD=$TIERMALLOC_LIB /bin/true 2>&1)
echo "$out" | grep -q '"kind":"cxl","devices":"mem[0-9]*"'
ok $? "JSON stats: $(echo "$out" | grep -o '"kind":"cxl","devices":"[^"]*"')"
done_testing
