#!/bin/sh
# Unmodified host programs under LD_PRELOAD=libtiermalloc.so: same output
# as without it, and stats showing that our hooks mapped their memory.  On a
# one-tier host the hooks are off by default (nothing is ever tiered), so
# the checks of hooked memory ask for them with always_hook:true.
. "${top_srcdir:-.}/tests/lib.sh"
PY=${PYTHON3:-python3}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pre() { LD_PRELOAD=$TIERMALLOC_LIB "$@"; }
# the value of a "key: N bytes"-style field from text stats
field() { sed -n "s/^$1: \([0-9]*\).*/\1/p" "$2" | head -n1; }

# ls
ls -la /usr/lib >"$tmp/ls.plain" 2>&1
pre ls -la /usr/lib >"$tmp/ls.pre" 2>&1
cmp -s "$tmp/ls.plain" "$tmp/ls.pre"
ok $? "ls -la under the preload prints what it prints without"

# sort of a large file (about 40 MB)
$PY -c '
import random
r = random.Random(7)
with open("'"$tmp"'/in.txt", "w") as f:
    for i in range(1500000):
        f.write("%016x %s\n" % (r.getrandbits(64), "x" * r.randrange(1, 20)))
'
sort "$tmp/in.txt" >"$tmp/sort.plain"
TIERMALLOC_CONF=stats_print:true,always_hook:true pre sort -S 200M "$tmp/in.txt" >"$tmp/sort.pre" 2>"$tmp/sort.stats"
rc=$?
cmp -s "$tmp/sort.plain" "$tmp/sort.pre"
ok $(( rc | $? )) "sort of $(wc -c <"$tmp/in.txt") bytes: same output under the preload"
set -- $(sed -n 's/^\(extents\|mappings\|mapped\): \([0-9]*\)$/\2/p' "$tmp/sort.stats")
[ "${3:-0}" -ge $((100 << 20)) ] && [ "${1:-0}" -gt 0 ]
ok $? "sort: stats show our hooks mapped ${3:-0} bytes in ${2:-0} mappings, ${1:-0} extents"
grep -q "resident (kernel)" "$tmp/sort.stats"
ok $? "sort: stats report resident bytes per tier"

# python3 allocating hundreds of MB through malloc
cat >"$tmp/alloc.py" <<'PYEOF'
import ctypes
blocks = [bytearray(1 << 16) for _ in range(5000)]        # 320 MiB in 64 KiB buffers
objs = {i: str(i) * 3 for i in range(300000)}            # many small objects
for b in blocks[::7]:
    b[0] = 1
s = sum(len(b) for b in blocks)
ctypes.CDLL(None).tier_stats_print(None, None, None)   # stats at the peak, to stderr
print(s, len(objs))
PYEOF
out=$(TIERMALLOC_CONF=always_hook:true PYTHONMALLOC=malloc pre $PY "$tmp/alloc.py" 2>"$tmp/py.stats")
[ "$out" = "327680000 300000" ]
ok $? "python3 builds 320 MiB and 300k objects under the preload ($out)"
mapped=$(sed -n 's/^mapped: \([0-9]*\)$/\1/p' "$tmp/py.stats")
res=$(sed -n 's/.*resident (kernel) \([0-9]*\),.*/\1/p' "$tmp/py.stats" | head -n1)
[ "${mapped:-0}" -ge $((320 << 20)) ] && [ "${res:-0}" -ge $((320 << 20)) ]
ok $? "python3 at its peak: our hooks mapped ${mapped:-0} bytes, ${res:-0} resident on tier 0"
out=$(pre $PY -c 'import json; print(len(json.dumps(list(range(200000)))))')
[ "$out" = "1488890" ]
ok $? "python3 with its own small-object allocator on top of ours"

# JSON stats parse
TIERMALLOC_CONF=stats_print:json,always_hook:true pre /bin/true 2>"$tmp/j"
$PY -c 'import json,sys; d=json.load(open(sys.argv[1]))["tiermalloc"]; assert d["tiers"] and d["extents"] > 0' "$tmp/j"
ok $? "stats_print:json is valid JSON with tiers and extents"

# the wrapper command
"${top_builddir:-.}/tools/tiermalloc" -s /bin/echo hi >"$tmp/w.out" 2>"$tmp/w.err"
[ "$(cat "$tmp/w.out")" = "hi" ] && grep -q "Begin tiermalloc statistics" "$tmp/w.err"
ok $? "tiermalloc -s PROGRAM preloads and prints stats"

# a bad configuration: one clear line, the program runs on
out=$(TIERMALLOC_CONF='fast_limit:12Q,verbose:true' pre /bin/echo still 2>"$tmp/bad.err")
[ "$out" = "still" ] && [ "$(wc -l <"$tmp/bad.err")" -eq 1 ] &&
	grep -q 'bad value "12Q" for fast_limit' "$tmp/bad.err" && ! grep -q "tiering" "$tmp/bad.err"
ok $? "bad TIERMALLOC_CONF: one line naming it, nothing applied: $(cat "$tmp/bad.err")"

# single-tier host: says why, once, when asked
n=$(ls -d /sys/devices/system/node/node[0-9]* | wc -l)
if [ "$n" -eq 1 ]; then
	TIERMALLOC_CONF=verbose:true pre /bin/true 2>"$tmp/v.err"
	[ "$(grep -c 'tiering off: single NUMA node' "$tmp/v.err")" -eq 1 ]
	ok $? "one-node host: verbose says once why tiering is off"
	[ "$(grep -c 'extent hooks off: with one tier and advise off' "$tmp/v.err")" -eq 1 ]
	ok $? "one-node host: verbose says once why the extent hooks are off"
	# by default nothing is hooked: jemalloc maps python's memory itself
	PYTHONMALLOC=malloc TIERMALLOC_CONF=stats_print:true pre $PY -c \
		'b = [bytearray(1 << 16) for _ in range(500)]' 2>"$tmp/off.stats"
	grep -q '^hooks: automatic arenas 0, hooked late 0, huge arena hooked false,' "$tmp/off.stats" &&
		grep -q '^extents: 0$' "$tmp/off.stats" && grep -q '^mappings: 0$' "$tmp/off.stats" &&
		grep -q '^mapped: 0$' "$tmp/off.stats"
	ok $? "one-node host, default: no arena hooked, no mapping of ours: $(grep -E '^(hooks|extents|mapped):' "$tmp/off.stats" | cut -c1-60 | tr '\n' ' ')"
	TIERMALLOC_CONF=advise:true,stats_print:true pre /bin/true 2>"$tmp/adv.stats"
	grep -q '^hooks: automatic arenas [1-9][0-9]*,' "$tmp/adv.stats"
	ok $? "one-node host, advise:true: the hooks are on ($(grep '^hooks:' "$tmp/adv.stats" | cut -c1-40))"
else
	skip "host has $n NUMA nodes"
	skip "host has $n NUMA nodes"
	skip "host has $n NUMA nodes"
	skip "host has $n NUMA nodes"
fi
done_testing
