#!/bin/sh
# Runs inside the tiered VM (tests/rel/vm.sh): real programs, stress,
# foreign memory, hostile environments, all with migration forced hard
# (period 20 ms, fast_limit 8 MiB, a fifth of a core of budget: every
# period moves blocks).  Every program is compared with a run without the
# preload.  A FIG line per check feeds tests/RELIABILITY.md's figures.
# REL_FULL=1: larger workloads and a larger slice of python3's tests (about
# 15 min of TCG; make check runs the quick sizes, about 5 min).  A program
# whose footprint passes fast_limit is checked under migration: pages must
# have moved while it ran (MOVE=1 before its `same`).
. "$top_srcdir/tests/lib.sh"
B=$top_builddir/tests
pre() { LD_PRELOAD=$TIERMALLOC_LIB "$@"; }
AGG=period_ms:20,fast_limit:8M,bg_cpu:0.2,hysteresis:1,stats_print:true
if [ "${REL_FULL:-0}" = 1 ]; then
	ROWS=60000 COMMITS=20 PERLN=200000 REDISN=20000 PYTESTS="test_json test_list test_dict"
else
	ROWS=20000 COMMITS=8 PERLN=60000 REDISN=5000 PYTESTS="test_json"
fi
tmp=$(mktemp -d)
echo 0 >/proc/sys/kernel/numa_balancing
moved_total=0
# pages moved, from a stats_print text in $1 (the program's stderr)
# pages the kernel migrated (its own count, /proc/vmstat): nothing else in
# this guest moves pages (numa_balancing off), and a count of pages found
# on their target after a move would count pages that were there already
mig() { awk '/^pgmigrate_success/ {print $2}' /proc/vmstat; }
mark() { m0=$(mig); }
moved() { echo $(($(mig) - m0)); }
TM=$top_builddir/tools/tiermalloc
# churn PID: from outside, through its control channel, the fast tier of
# PID cut to 4 MiB and given back its 8 MiB, every 0.2 s while it runs.
# The engine no longer swaps blocks of near-equal heat (a swap waits for a
# second look), which is what moved these programs' pages before: a cut
# forces demotions and the room given back promotions, whatever the heat.
churn() {
	while kill -0 "$1" 2>/dev/null; do
		"$TM" ctl "$1" tier.fast_limit=4M >/dev/null 2>&1
		sleep 0.2
		"$TM" ctl "$1" tier.fast_limit=8M >/dev/null 2>&1
		sleep 0.2
	done
}
# same NAME CMD...: CMD's stdout without and with the preload (AGG); with
# MOVE=1, churned while it runs
same() {
	t0=$(date +%s)
	name=$1
	shift
	"$@" >"$tmp/$name.plain" 2>/dev/null
	rc1=$?
	mark
	# not through pre(): a function in the background is a subshell, and
	# churn needs the program's own pid
	TIERMALLOC_CONF=${CONF:-$AGG} LD_PRELOAD=$TIERMALLOC_LIB "$@" >"$tmp/$name.pre" 2>"$tmp/$name.err" </dev/null &
	pid=$!
	cpid=
	if [ "${MOVE:-0}" = 1 ]; then
		churn $pid &
		cpid=$!
	fi
	wait $pid
	rc2=$?
	[ -z "$cpid" ] || { kill $cpid 2>/dev/null; wait $cpid 2>/dev/null; }
	m=$(moved)
	moved_total=$((moved_total + ${m:-0}))
	cmp -s "$tmp/$name.plain" "$tmp/$name.pre" && [ $rc1 -eq $rc2 ] && [ -s "$tmp/$name.pre" ]
	r=$?
	t1=$(date +%s)
	if [ "${MOVE:-0}" = 1 ]; then
		[ $r -eq 0 ] && [ "${m:-0}" -gt 0 ]
		r=$?
		ok $r "$name: same output under migration ($(wc -c <"$tmp/$name.pre") bytes, exit $rc2): ${m:-0} pages migrated while it ran"
	else
		ok $r "$name: same output under the preload ($(wc -c <"$tmp/$name.pre") bytes, exit $rc2), ${m:-0} pages migrated meanwhile"
	fi
	[ $r -eq 0 ] || { diff "$tmp/$name.plain" "$tmp/$name.pre" | head -n 5; tail -n 5 "$tmp/$name.err"
		grep -E '^(migration|monitor|background thread|balance|placement)' "$tmp/$name.err" | cut -c1-400; } | sed 's/^/# /'
	echo "# FIG program $name moved=${m:-0} ok=$((!r)) seconds=$((t1 - t0))"
}

# --- real programs ----------------------------------------------------------
cat >"$tmp/work.sql" <<SQL
CREATE TABLE t(id INTEGER PRIMARY KEY, k TEXT, v INTEGER, pad BLOB);
WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < $ROWS)
INSERT INTO t SELECT i, printf('key%06d', (i * 7919) % $ROWS), (i * 31) % 1000, zeroblob(200) FROM c;
CREATE INDEX t_k ON t(k);
CREATE TABLE u AS SELECT v, count(*) AS n, sum(id) AS s FROM t GROUP BY v;
UPDATE t SET v = v + 1 WHERE id % 3 = 0;
DELETE FROM t WHERE id % 11 = 0;
SELECT count(*), sum(v), min(k), max(k) FROM t;
SELECT u.v, u.n, count(t.id) FROM u JOIN t ON t.v = u.v GROUP BY u.v ORDER BY u.v LIMIT 5;
SELECT k FROM t ORDER BY k DESC LIMIT 3;
SELECT group_concat(id) FROM (SELECT id FROM t WHERE k LIKE 'key0001%' ORDER BY id);
SQL
n_sql=$(grep -c ';' "$tmp/work.sql")
MOVE=1
same sqlite3 sqlite3 :memory: -init /dev/null ".read $tmp/work.sql"
echo "# FIG statements sqlite3 $n_sql rows $ROWS"

# git: a repository of 50 files, COMMITS commits, gc and fsck (fixed dates:
# the same hashes with and without the preload)
cat >"$tmp/git.sh" <<'GIT'
d=$(mktemp -d) && cd "$d" || exit 1
export GIT_AUTHOR_DATE=@1700000000 GIT_COMMITTER_DATE=@1700000000 HOME=$d
git init -q -b main . && git config user.email t@e && git config user.name t || exit 1
for c in $(seq 1 $1); do
	for f in $(seq 1 10); do seq $((c * f)) $((c * f + 200)) >"f$(( (c * 10 + f) % 50 )).txt"; done
	git add -A && git commit -qm "commit $c" || exit 1
done
git gc -q && git fsck --full 2>/dev/null && echo fsck clean && git log --format='%H %s' | head -n 25 && git diff HEAD~5 --stat | tail -n 1
cd / && rm -rf "$d"
GIT
# many short processes, each under fast_limit: the output is the check
MOVE=0
same git sh "$tmp/git.sh" "$COMMITS"

MOVE=1
same perl perl -e 'my %h; for my $i (1..'$PERLN') { $h{sprintf("k%07d", $i * 7 % 200003)} = $i x 3 }
	my @k = sort { $h{$a} cmp $h{$b} } grep { /5/ } keys %h; my $s = join(",", @k[0..50]);
	$s =~ s/k0*(\d+)/<$1>/g; print scalar(@k), " ", length($s), "\n", substr($s, 0, 200), "\n"'

# gcc compiling a program: the object file must be the same bytes
cp "$top_srcdir/tests/rel/stress.c" "$tmp/prog.c"
gcc -O2 -c -o "$tmp/prog.plain.o" "$tmp/prog.c"
TIERMALLOC_CONF=$AGG pre gcc -O2 -c -o "$tmp/prog.pre.o" "$tmp/prog.c" 2>"$tmp/gcc.err"
cmp -s "$tmp/prog.plain.o" "$tmp/prog.pre.o"
r=$?
ok $r "gcc -O2 under the preload (cc1, as, all preloaded): the same object file ($(wc -c <"$tmp/prog.pre.o") bytes)"
echo "# FIG program gcc moved=0 ok=$((!r))"

MOVE=0
same awk awk '{ n[substr($1, 1, 3)]++; l += length($2) } END { for (k in n) c++; print NR, c, l }' "$SORT_IN"
MOVE=1
same sort sort -S 64M "$SORT_IN"

# python3: a slice of its own test suite
# (no stats_print here: the suite checks that its child pythons print
# nothing on stderr)
if python3 -c 'import test.test_json' 2>/dev/null; then
	mark
	TIERMALLOC_CONF=${AGG%,stats_print:true} PYTHONMALLOC=malloc pre python3 -m test $PYTESTS \
		>"$tmp/py.out" 2>"$tmp/py.err"
	r=$?
	m=$(moved)
	moved_total=$((moved_total + ${m:-0}))
	grep -q '^Result: SUCCESS' "$tmp/py.out" && [ $r -eq 0 ]
	r=$?
	ok $r "python3 -m test $PYTESTS (PYTHONMALLOC=malloc) under the preload: $(grep -E '^Total tests:' "$tmp/py.out")"
	[ $r -eq 0 ] || grep -E '^(FAIL|ERROR)' "$tmp/py.out" | head -n 10 | sed 's/^/# /'
	echo "# FIG program python3-tests moved=? ok=$((!r)) $(grep -E '^Total tests:' "$tmp/py.out")"
else
	need_skip "python3's test suite is not installed (libpython3.11-testsuite)"
fi

# redis-server under the preload, redis-benchmark on loopback
if command -v redis-server >/dev/null && command -v redis-benchmark >/dev/null; then
	mark
	TIERMALLOC_CONF=$AGG pre redis-server --port 6399 --save '' --appendonly no --daemonize no \
		>"$tmp/redis.log" 2>"$tmp/redis.err" &
	rpid=$!
	i=0
	while ! redis-cli -p 6399 ping >/dev/null 2>&1 && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
	N=$REDISN
	redis-benchmark -p 6399 -q -n $N -r 10000 -d 256 -t set,get,lpush,lpop,incr >"$tmp/bench" 2>&1
	rb=$?
	redis-cli -p 6399 set probe "$(seq 1 500 | tr '\n' ' ')" >/dev/null
	got=$(redis-cli -p 6399 get probe)
	served=$(redis-cli -p 6399 info stats | sed -n 's/^total_commands_processed:\([0-9]*\).*/\1/p')
	redis-cli -p 6399 shutdown nosave >/dev/null 2>&1
	wait $rpid
	rr=$?
	m=$(moved)
	moved_total=$((moved_total + ${m:-0}))
	[ $rb -eq 0 ] && [ "$got" = "$(seq 1 500 | tr '\n' ' ')" ] && [ "${served:-0}" -ge $((5 * N)) ] && [ $rr -eq 0 ]
	r=$?
	ok $r "redis-server under the preload: $served commands served to redis-benchmark (5 x $N), a 1.9 KB value read back intact, clean shutdown (exit $rr), ${m:-0} pages migrated"
	tr '\r' '\n' <"$tmp/bench" | grep -E 'requests per second' | sed 's/^/# /'
	echo "# FIG requests redis $served ok=$((!r))"
else
	need_skip "redis-server/redis-benchmark not installed"
fi

# --- stress while the background thread migrates ----------------------------
for args in "forkexec 4 6 48" "realloc 4"; do
	mark
	TIERMALLOC_CONF=$AGG pre "$B/rel/stress" $args >"$tmp/st.out" 2>"$tmp/st.err"
	r=$?
	m=$(moved)
	moved_total=$((moved_total + ${m:-0}))
	[ $r -eq 0 ] && [ "${m:-0}" -gt 0 ]
	ok $? "migrating (${m:-0} pages moved while it ran, exit $r): $(cat "$tmp/st.out")"
done
# the programs and stress above ran while the background thread moved
# their memory: with migration broken they would all pass the output
# comparisons, so the moves are counted here too
[ "$moved_total" -gt 0 ]
ok $? "pages migrated under the programs and stress: $moved_total in total"
# Memory limits.  Regression: the background thread used to make its first
# allocation only after the DAMON source's setup (seconds under TCG); a
# program that reached its limit meanwhile left jemalloc no room for the
# thread's new arena, and jemalloc 5.3 dereferences NULL then (SIGSEGV in
# 1 of 2 runs with migrate:false; a later strdup failed in 3 of 3).
for conf in $AGG migrate:false; do
	for lim in as data; do
		TIERMALLOC_CONF=$conf pre "$B/rel/stress" limit $lim >"$tmp/st.out" 2>&1
		ok $? "tiered, $conf: $(head -n 1 "$tmp/st.out")"
	done
done

# slow tier exhausted: everything asked of the slow tier (fast_limit 0),
# more than it has free: the rest falls back to the fast node
free1=$(awk '/MemFree/ {print $4 * 1024}' /sys/devices/system/node/node1/meminfo)
want=$(( (free1 >> 20) + 150 ))
TIERMALLOC_CONF=fast_limit:0,migrate:false $B/tiered/where "$want" 1048576 >"$tmp/full1"
rc=$?
n0=$(sed -n 's/^node0 //p' "$tmp/full1")
n1=$(sed -n 's/^node1 //p' "$tmp/full1")
[ $rc -eq 0 ] && [ "${n0:-0}" -ge $((100 << 20)) ] && [ "${n1:-0}" -ge $((free1 / 2)) ]
ok $? "slow node full ($((free1 >> 20)) MiB free, $want MiB asked, fast_limit 0): no failure, $(( ${n1:-0} >> 20 )) MiB node 1 + $(( ${n0:-0} >> 20 )) MiB node 0"

# --- memory that is not ours never moves -----------------------------------
TIERMALLOC_CONF=period_ms:20,fast_limit:16M,bg_cpu:0.5 $B/rel/foreign 4 >"$tmp/fo" 2>&1
ok $? "$(tail -n 1 "$tmp/fo")"

# --- security ------------------------------------------------------------------
# the setuid checks of tests/host/secure.sh (a setuid-root program run by
# nobody ignores TIERMALLOC_CONF and its paths), here in the guest
sh "$top_srcdir/tests/host/secure.sh" >"$tmp/sec" 2>&1
src=$?
grep -E '^(ok|not ok)' "$tmp/sec" >"$tmp/sec.tap"
plan=$(sed -n 's/^1\.\.\([0-9]*\)$/\1/p' "$tmp/sec")
[ $src -eq 0 ] && [ -n "$plan" ] && [ "$plan" -gt 0 ] && [ "$plan" -eq "$(wc -l <"$tmp/sec.tap")" ]
ok $? "[guest] secure.sh ran to its plan: exit $src, plan ${plan:-none}, $(wc -l <"$tmp/sec.tap") results"
while IFS= read -r line; do
	case $line in
	"not ok"*) ok 1 "[guest] ${line#not ok * - }" ;;
	*"# SKIP"*) skip "[guest] ${line#*# SKIP }" ;;
	*) ok 0 "[guest] ${line#ok * - }" ;;
	esac
done <"$tmp/sec.tap"
# the DAMON source's shared state, made under umask 000: nothing group- or
# world-writable (first DAMON user of this boot: it creates the directory)
(umask 000 && TIERMALLOC_CONF=heat_sources:damon+recency,fast_limit:8M $B/tiered/tierctl -W tier.heat.sources) >"$tmp/um" 2>&1
made=$(ls -d /run/tiermalloc /dev/shm/tiermalloc-0 2>/dev/null)
lax=$(find $made -perm /022 2>/dev/null)
[ -n "$made" ] && [ -z "$lax" ]
ok $? "umask 000: DAMON's shared state ($(find $made 2>/dev/null | xargs -r stat -c '%n %a' | tr '\n' ' ')) is not group/world-writable $lax"

# --- hostile environments -----------------------------------------------------
# /run read-only: the DAMON source keeps its lock elsewhere (src/rundir.c)
unshare -m --propagation private sh -c 'mount -o remount,bind,ro /run &&
	TIERMALLOC_CONF=heat_sources:damon+recency,fast_limit:8M,verbose:true exec '"$B"'/tiered/tierctl -W tier.heat.sources' \
	>"$tmp/ro" 2>"$tmp/ro.err"
src=$(head -n 1 "$tmp/ro")
case $src in damon*) r=0 ;; *) r=1 ;; esac
ok $r "/run read-only: the DAMON source runs (lock moved out of /run): $src"
[ $r -eq 0 ] || sed 's/^/# /' "$tmp/ro.err" | head -n 5
ls -ld /dev/shm/tiermalloc-0 /run/tiermalloc 2>/dev/null | sed 's/^/# /'

# no /proc, no /sys: tiering off with a reason, the program unharmed.
# Empty tmpfs over both: unmounted, they would show the host's through the
# 9p root
unshare -m --propagation private sh -c 'mount -t tmpfs none /sys && mount -t tmpfs none /proc &&
	TIERMALLOC_CONF=verbose:true LD_PRELOAD='"$TIERMALLOC_LIB"' sort -S 32M '"$SORT_IN"' >'"$tmp"'/np.sorted &&
	exec '"$B"'/tiered/tierctl tier.active tier.off_reason' >"$tmp/np" 2>"$tmp/np.err"
r=$?
cmp -s "$tmp/np.sorted" "$SORT_OUT" && [ $r -eq 0 ] && [ "$(sed -n 1p "$tmp/np")" = false ] &&
	sed -n 2p "$tmp/np" | grep -q 'sysfs not mounted'
ok $? "no /proc, no /sys: sort's output unchanged; tiering off: $(sed -n 2p "$tmp/np")"

# one CPU: the background thread shares it with the program
taskset -c 1 env TIERMALLOC_CONF=period_ms:20,fast_limit:16M,bg_cpu:0.5 $B/rel/foreign 3 >"$tmp/cpu1" 2>&1
ok $? "taskset one CPU: $(tail -n 1 "$tmp/cpu1" | cut -c1-160)"

# seccomp denies mbind/move_pages/migrate_pages/set_mempolicy
TIERMALLOC_CONF=$AGG $B/rel/nomove sh -c "LD_PRELOAD=$TIERMALLOC_LIB sort -S 64M $SORT_IN" >"$tmp/sc.sorted" 2>"$tmp/sc.err"
r=$?
cmp -s "$tmp/sc.sorted" "$SORT_OUT" && [ $r -eq 0 ]
ok $? "seccomp denies the NUMA calls: sort's output unchanged under the preload (exit $r); $(grep -E '^migration:' "$tmp/sc.err" | cut -c1-120)"
$B/rel/nomove $B/tiered/tierctl tier.active tier.off_reason tier.heat.sources >"$tmp/sc2" 2>&1
diag "under seccomp: $(tr '\n' '|' <"$tmp/sc2")"

echo "# FIG moved_total $moved_total"
rm -rf "$tmp"
done_testing
