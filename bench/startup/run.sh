#!/bin/sh
# Fixed per-process cost of tiermalloc against plain jemalloc (both by
# LD_PRELOAD): wall time from spawn to exit and peak RSS (ru_maxrss) of
# short programs, with jemalloc's default arena count and with narenas:512
# (what it picks on 128 CPUs), and the arenas a 64-thread program ends up
# with.  Runs are interleaved (one of each configuration per round), and
# ratios and RSS differences are taken within each round, then the median.
#
#   bench/startup/run.sh [--quick] [--rounds N] [--host-only | --vm-only]
#
# Host: jemalloc, tiermalloc as it runs there (one NUMA node: no hooks),
# and tiermalloc with always_hook:true (the hooked path at native speed).
# Tiered VM (tests/vm/run, node 1 CPU-less and slower): jemalloc and
# tiermalloc, which hooks there.  Both: "mallctl", jemalloc plus one
# mallctl at start, the part of any hooked process's cost that is
# jemalloc's own (its control tree, sized by the arena count).  Targets
# (issue 8): start-up <= 1.2x jemalloc's, peak RSS <= 256 KiB above it.
# Needs a build (make).
set -eu
TOP=$(cd "$(dirname "$0")/../.." && pwd)
JE=${JEMALLOC_LIB:-/usr/lib/x86_64-linux-gnu/libjemalloc.so.2}
LIB=${TIERMALLOC_LIB:-$TOP/.libs/libtiermalloc.so}
PY=/usr/bin/python3
quick=0 rounds= where=both in_vm=0
while [ $# -gt 0 ]; do
	case $1 in
	--quick) quick=1 ;;
	--rounds) rounds=$2; shift ;;
	--host-only) where=host ;;
	--vm-only) where=vm ;;
	--in-vm) in_vm=1 ;; # internal: the guest side of --vm-only
	*) sed -n '2,19s/^# \{0,1\}//p' "$0" >&2; exit 2 ;;
	esac
	shift
done
for f in "$JE" "$LIB"; do
	[ -e "$f" ] || { echo "run.sh: $f not found (build first: make)" >&2; exit 1; }
done
SPAWN=$TOP/bench/startup/spawn
THREADS=$TOP/bench/startup/threads
CTL1=$TOP/bench/startup/.libs/mallctl1.so
if [ ! -x "$SPAWN" ] || [ ! -x "$THREADS" ] || [ ! -e "$CTL1" ]; then
	[ $in_vm -eq 0 ] || { echo "run.sh: helpers not built" >&2; exit 1; }
	make -C "$TOP" -s bench/startup/spawn bench/startup/threads bench/startup/mallctl1.la >&2
fi

# cfg_env CONFIG: the environment words of a configuration
cfg_env() {
	case $1 in
	jemalloc) echo "LD_PRELOAD=$JE" ;;
	mallctl) echo "LD_PRELOAD=$JE:$CTL1" ;;
	tiermalloc) echo "LD_PRELOAD=$LIB" ;;
	hooked) echo "LD_PRELOAD=$LIB TIERMALLOC_CONF=always_hook:true" ;;
	esac
}

# measure ROUNDS CONFIGS...: one line per run on stdout:
#   program narenas config round microseconds peak-KiB
measure() {
	r=$1
	shift
	i=0
	while [ $i -lt "$r" ]; do
		i=$((i + 1))
		for prog in true ls python threads; do
			case $prog in
			true) cmd=/bin/true ;;
			ls) cmd="ls -l /usr/lib" ;;
			python) cmd="$PY -c pass" ;;
			threads) cmd="$THREADS 64" ;;
			esac
			for na in default 512; do
				mc=
				[ $na = default ] || mc=MALLOC_CONF=narenas:$na
				for cfg in "$@"; do
					env=$(cfg_env "$cfg")
					# word splitting of $env, $mc and $cmd is intended
					# shellcheck disable=SC2086
					"$SPAWN" 1 $env $mc -- $cmd | sed "s/^/$prog $na $cfg $i /"
				done
			done
		done
	done
}

# arenas of the 64-thread program under each configuration
arenas() {
	for na in default 512; do
		mc=
		[ $na = default ] || mc=MALLOC_CONF=narenas:$na
		for cfg in "$@"; do
			# shellcheck disable=SC2086
			env -u MALLOC_CONF -u TIERMALLOC_CONF $(cfg_env "$cfg") $mc "$THREADS" -c 64 |
				sed "s/^/# narenas $na, $cfg: /"
		done
	done
}

report() { # report TITLE CONFIGS... < data
	script=$(cat <<'PYEOF'
import statistics as st, sys
title, cfgs = sys.argv[1], sys.argv[2:]
runs = {}
for line in sys.stdin:
    if line.startswith("#"):
        continue
    prog, na, cfg, rnd, us, kib = line.split()
    runs[(prog, na, cfg, int(rnd))] = (int(us), int(kib))
progs = ["true", "ls", "python", "threads"]
names = {"true": "/bin/true", "ls": "ls -l /usr/lib", "python": "python3 -c pass",
         "threads": "64 threads"}
rounds = sorted({k[3] for k in runs})
print(title)
head = f"{'program':<16} {'narenas':>7} {'je ms':>7} {'je KiB':>7}"
for c in cfgs[1:]:
    head += f" | {c + ' ms':>14} {'ratio':>5} {'+KiB':>6}"
print(head)
worst_t, worst_r = {}, {}
for p in progs:
    for na in ("default", "512"):
        je = [runs[(p, na, "jemalloc", r)] for r in rounds if (p, na, "jemalloc", r) in runs]
        if not je:
            continue
        row = f"{names[p]:<16} {na:>7} {st.median(x[0] for x in je) / 1e3:7.2f} " \
              f"{st.median(x[1] for x in je):7.0f}"
        for c in cfgs[1:]:
            pairs = [(runs[(p, na, c, r)], runs[(p, na, "jemalloc", r)]) for r in rounds
                     if (p, na, c, r) in runs and (p, na, "jemalloc", r) in runs]
            t = st.median(a[0] for a, _ in pairs) / 1e3
            ratio = st.median(a[0] / b[0] for a, b in pairs)
            dk = st.median(a[1] - b[1] for a, b in pairs)
            row += f" | {t:14.2f} {ratio:5.2f} {dk:+6.0f}"
            if p != "threads":  # the targets are about small programs
                worst_t[c] = max(worst_t.get(c, 0), ratio)
                worst_r[c] = max(worst_r.get(c, -1e9), dk)
        print(row)
for c in cfgs[1:]:
    if c == "mallctl":
        continue
    print(f"{c}: worst start-up ratio {worst_t[c]:.2f} (target <= 1.2: "
          f"{'met' if worst_t[c] <= 1.2 else 'not met'}); worst peak RSS "
          f"{worst_r[c]:+.0f} KiB (target <= +256: {'met' if worst_r[c] <= 256 else 'not met'})")
print(f"{len(rounds)} interleaved rounds; ratio and +KiB are medians of per-round pairs "
      f"with jemalloc")
PYEOF
)
	"$PY" -c "$script" "$@"
}

machine() {
	printf '%s, %s CPUs, %s, kernel %s' "$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n1)" \
		"$(nproc)" "$(date -u +%Y-%m-%d)" "$(uname -r)"
}

if [ $in_vm -eq 1 ]; then
	r=${rounds:-$([ $quick -eq 1 ] && echo 5 || echo 11)}
	measure "$r" jemalloc mallctl tiermalloc |
		report "tiered VM (QEMU/TCG, 2 nodes): $(machine)" jemalloc mallctl tiermalloc
	echo "arenas of 64 live threads (tiered VM):"
	arenas jemalloc tiermalloc
	exit 0
fi
if [ $where != vm ]; then
	r=${rounds:-$([ $quick -eq 1 ] && echo 9 || echo 41)}
	data=$(mktemp)
	trap 'rm -f "$data"' EXIT
	measure "$r" jemalloc mallctl tiermalloc hooked >"$data"
	report "host: $(machine); tiermalloc: hooks off (one node); hooked: always_hook:true" \
		jemalloc mallctl tiermalloc hooked <"$data"
	echo "arenas of 64 live threads (host):"
	arenas jemalloc tiermalloc hooked
fi
if [ $where != host ]; then
	[ $where = vm ] || echo
	set -- --in-vm
	[ $quick -eq 0 ] || set -- "$@" --quick
	[ -z "$rounds" ] || set -- "$@" --rounds "$rounds"
	"$TOP/tests/vm/run" --quiet --topology tiered --timeout 1500 -- sh "$TOP/bench/startup/run.sh" "$@"
fi
