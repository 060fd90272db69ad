#!/bin/sh
# The scale bench's tiered-VM half: GUPS (bench/gups) at growing
# footprints, hot set 10% of it (90% of updates), fast tier 25% of it,
# the VM's nodes sized to hold it (node 1 the footprint and more): hit
# ratio against the oracle and reaction time after a shift, for
# tiermalloc at each GUPS_BUDGETS beside the kernel's tiering and first
# touch.  One table row per footprint and placement in
# bench/out/scale-vm.txt; each footprint's CSV and plot in
# bench/out/scale-vm-F/.
#   bench/scale/vm.sh [phase-seconds] [footprints in MiB...]  (default 12; 256 1024 3072)
set -eu
top=$(cd "$(dirname "$0")/../.." && pwd)
A=${1:-12}
[ $# -gt 0 ] && shift
FOOT=${*:-256 1024 3072}
out=${SCALE_OUT:-$top/bench/out}
mkdir -p "$out"
txt=$out/scale-vm.txt
: >"$txt"
for F in $FOOT; do
	H=$((F / 10)) FAST=$((F / 4))
	# node 0: the fast tier, the guest's own memory and the balloon's
	# slack; node 1: the whole footprint fits there too
	n0=$((FAST + 640)) n1=$((F + 512))
	echo "scale-vm: footprint $F MiB, hot $H MiB, fast $FAST MiB, nodes ${n0}M,${n1}M" >&2
	GUPS_OUT=$out/scale-vm-$F GUPS_MEM=${n0}M,${n1}M "$top/bench/gups/run.sh" "$F" "$H" "$FAST" "$A" 2>&1 |
		sed -n '/^placement/,/^$/p' | grep -v '^$' | sed "s/^/$F MiB  /" | tee -a "$txt"
done
