#!/bin/sh
# Inside the "flat" VM (two nodes, no HMAT: one kernel memory tier) and the
# "three" VM (nodes 1 and 2 slow and slower).
. "$top_srcdir/tests/lib.sh"
B=$top_builddir/tests/tiered
case $1 in
flat)
	out=$($B/tierctl tier.count tier.0.nodes tier.active tier.off_reason)
	set -- $out
	[ "$1" = 1 ] && [ "$2" = 0-1 ] && [ "$3" = false ]
	ok $? "flat: one tier of nodes 0-1, tiering off: $(echo "$out" | tr '\n' ' ')"
	echo "$out" | grep -q "same memory tier"
	ok $? "flat: says the kernel puts them in one memory tier"
	TIERMALLOC_CONF=fast_nodes:0,slow_nodes:1 $B/tierctl tier.count tier.active tier.1.reason >/tmp/ov
	[ "$(sed -n 1p /tmp/ov)" = 2 ] && [ "$(sed -n 2p /tmp/ov)" = true ] && grep -q slow_nodes /tmp/ov
	ok $? "flat with fast_nodes:0,slow_nodes:1: two tiers, as configured"
	;;
three)
	out=$($B/tierctl tier.count tier.0.nodes tier.1.nodes tier.2.nodes)
	[ "$(echo $out)" = "3 0 1 2" ]
	ok $? "three: three tiers ordered by latency: $(echo $out)"
	TIERMALLOC_CONF=fast_limit:32M,migrate:false $B/where 96 1048576 >/tmp/w3
	n2=$(sed -n 's/^node2 //p' /tmp/w3)
	n1=$(sed -n 's/^node1 //p' /tmp/w3)
	[ "${n1:-0}" -ge $((48 << 20)) ] && [ -z "$n2" ]
	ok $? "three: past fast_limit, automatic arenas spill to the next tier (node 1: $(( ${n1:-0} >> 20 )) MiB), not the slowest"
	$B/where -t 2 8 1048576 | grep -q '^map 22222222$'
	ok $? "three: the tier-2 arena puts its memory on node 2"
	;;
esac
done_testing
