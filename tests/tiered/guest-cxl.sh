#!/bin/sh
# Runs inside the tiered VM (sourced by guest-tiering.sh, or alone): the
# cxl heat source, fed hot lists of host physical addresses that a test
# program writes for its own pages (root: it reads its page frames).
if [ -z "${tap_n:-}" ]; then
	. "$top_srcdir/tests/lib.sh"
	cxl_alone=1
fi
B=$top_builddir/tests/tiered
ctmp=$(mktemp -d)

# no /sys/bus/cxl here: the tiers are plain nodes, and nothing says otherwise
set -- $($B/tierctl tier.0.kind tier.1.kind) "$($B/tierctl tier.1.devices)"
[ "$1" = node ] && [ "$2" = node ] && [ -z "$3" ]
ok $? "no CXL device: tier kinds $1, $2, no devices"

src=$(TIERMALLOC_CONF=heat_sources:cxl $B/tierctl -W tier.heat.sources)
case $src in "cxl (no cxl_hmu PMU; reports from cxl_reports or tier.cxl.report) running"*) r=0 ;; *) r=1 ;; esac
ok $r "cxl: the source runs and says where its reports come from: $src"
case $src in *"reads not seen"*) r=1 ;; *"reads seen only as far as the cxl hot lists count them"*) r=0 ;; *) r=1 ;; esac
ok $r "cxl alone: reads are said to be seen as far as the hot lists count them"
src=$(TIERMALLOC_CONF=cxl_reports:/dev/null $B/tierctl -W tier.heat.sources)
case $src in *", cxl (no cxl_hmu PMU"*) r=0 ;; *) r=1 ;; esac
ok $r "cxl_reports given: the default sources gain cxl: $src"
src=$($B/tierctl -W tier.heat.sources)
case $src in *"cxl: not selected"*) r=0 ;; *) r=1 ;; esac
ok $r "by default cxl is not selected: $src"
# root without CAP_SYS_ADMIN: pagemap shows no page frames
src=$(TIERMALLOC_CONF=heat_sources:cxl setpriv --bounding-set=-sys_admin --inh-caps=-sys_admin \
	$B/tierctl -W tier.heat.sources 2>&1)
case $src in *"cxl: page frames hidden (needs CAP_SYS_ADMIN)"*) r=0 ;; *) r=1 ;; esac
ok $r "cxl: without CAP_SYS_ADMIN the source stays off and says so: $src"

# replay CONF LABEL ARGS...: cxlhot's own ok/fail lines, as TAP lines
replay() {
	conf=$1 label=$2
	shift 2
	TIERMALLOC_CONF=$conf $B/cxlhot "$@" >"$ctmp/out" 2>&1
	r=$?
	while IFS= read -r line; do
		case $line in
		"ok "*) ok 0 "$label: ${line#ok }" ;;
		"fail"*) ok 1 "$label: ${line#fail}" ;;
		*) diag "$label: $line" ;;
		esac
	done <"$ctmp/out"
	ok $r "$label: the replay program exits 0 (exit $r)"
}
replay fast_limit:16M,heat_sources:cxl,bg_cpu:0.2 cxl -t 40

# the same records through a FIFO named by cxl_reports
mkfifo "$ctmp/fifo"
replay fast_limit:16M,heat_sources:cxl,bg_cpu:0.2,cxl_reports:$ctmp/fifo "cxl_reports FIFO" -t 40 -f "$ctmp/fifo"

# the combination rule: written bits see a hot set on node 0; hot lists
# naming a cold slow buffer for 8 s move nothing
replay fast_limit:16M,heat_sources:pagemap+cxl,bg_cpu:0.2 cxl+pagemap -c -t 8
rm -rf "$ctmp"
if [ -n "${cxl_alone:-}" ]; then
	done_testing
fi
