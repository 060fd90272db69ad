#!/bin/sh
# The tiered-VM half of bench/run, in one guest boot: every workload
# under every contender, one after the other (bench/gups/guest.sh and
# bench/servers/guest.sh run the contenders).  The guest cannot write to
# the host, so each part's CSV and log are kept in the guest's /tmp and
# printed when the part ends between "==> FILE <==" lines, which bench/run
# splits.
#   bench/guest.sh TOP BUILD LIBTIERMALLOC  (sources, build tree, library)
# Environment (bench/run sets them): B_F B_H B_FAST B_A (GUPS footprint,
# hot set, fast tier MiB, phase seconds), B_KVF B_KVFAST (the KV
# workload's items MiB and fast tier), B_PARTS (which parts), and the
# SRV_* sizes of bench/servers/guest.sh.
set -u
top=$1 build=$2 LIB=$3
tmp=$(mktemp -d)
failed=
part() { # NAME COMMAND...: stdout to NAME.csv, stderr to NAME.log
	name=$1
	shift
	case " ${B_PARTS:-gups-uniform gups-hot gups-shift kv kv-ro servers} " in
	*" $name "*) ;;
	*) return 0 ;;
	esac
	t0=$(date +%s)
	"$@" >"$tmp/$name.csv" 2>"$tmp/$name.log"
	prc=$?
	[ $prc -eq 0 ] || failed="$failed $name"
	echo "# part $name: exit $prc, $(($(date +%s) - t0)) s" | tee -a "$tmp/$name.log" >&2
	# each part as soon as it is done: a run cut short keeps what it did
	for f in "$tmp/$name.csv" "$tmp/$name.log"; do
		echo "==> $(basename "$f") <=="
		cat "$f"
		[ -z "$(tail -c 1 "$f")" ] || echo
	done
}
gups() { # NAME MODE
	part "$1" env GUPS_ARGS="-m $2" GUPS_FOOTPRINT="$B_F" GUPS_HOT="$B_H" GUPS_FAST="$B_FAST" \
		GUPS_A="$B_A" GUPS_B="$B_A" sh "$top/bench/gups/guest.sh" "$build/bench/gups/gups" "$LIB"
}
kv() { # NAME [-r]
	part "$1" env GUPS_ARGS="${2:-}" GUPS_FOOTPRINT="$B_KVF" GUPS_HOT=0 GUPS_FAST="$B_KVFAST" \
		GUPS_A="$B_A" GUPS_B="$B_A" sh "$top/bench/gups/guest.sh" "$build/bench/kv/kv" "$LIB"
}
gups gups-uniform uniform
gups gups-hot hot
gups gups-shift shift
kv kv
kv kv-ro -r
part servers sh "$top/bench/servers/guest.sh" "$build/bench/gups/gups" "$build/bench/memc/memc" "$LIB"
rm -rf "$tmp"
# a part that failed fails the run (bench/run reports it), not only its log
[ -z "$failed" ] || { echo "bench/guest.sh: failed parts:$failed" >&2; exit 1; }
