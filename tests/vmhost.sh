# Host side of a VM suite, sourced after tests/lib.sh: one VM suite at a
# time (the lock), a scratch folder $tmp removed at exit, and a sort input
# with its expected output made on the host (guests compare against it).
#   vm_host_setup SEED LINES FILLCHAR
RUN="$top_srcdir/tests/vm/run"
vm_host_setup() {
	exec 9>"$top_builddir/.vm.lock"
	flock 9
	export top_srcdir top_builddir TIERMALLOC_LIB
	tmp=$(mktemp -d "${top_builddir}/.vmtest.XXXXXX")
	trap 'rm -rf "$tmp"' EXIT
	${PYTHON3:-python3} -c '
import random, sys
r = random.Random(int(sys.argv[2]))
with open(sys.argv[1], "w") as f:
    for i in range(int(sys.argv[3])):
        f.write("%012x %s\n" % (r.getrandbits(48), sys.argv[4] * r.randrange(1, 30)))
' "$tmp/sort.in" "$1" "$2" "$3"
	LC_ALL=C sort "$tmp/sort.in" >"$tmp/sort.out"
	export SORT_IN="$tmp/sort.in" SORT_OUT="$tmp/sort.out" LC_ALL=C
}

# A host test's guest part: vm_tap TOPOLOGY TIMEOUT SCRIPT ARGS... runs
# "sh SCRIPT ARGS" in the guest; its TAP lines become this test's (through
# ok), then one more: the guest part ran to its end.
vm_tap() {
	topo=$1 limit=$2
	shift 2
	"$RUN" --quiet --topology "$topo" --timeout "$limit" -- sh "$@" >"$tmp/g.tap" 2>"$tmp/g.err"
	rc=$?
	while IFS= read -r line; do
		case $line in
		"not ok "*) ok 1 "[$topo VM] ${line#not ok * - }" ;;
		"ok "*) ok 0 "[$topo VM] ${line#ok * - }" ;;
		"#"*) echo "$line" ;;
		esac
	done <"$tmp/g.tap"
	[ $rc -le 1 ] && grep -q '^1\.\.[0-9]' "$tmp/g.tap"
	ok $? "the guest part ran to its end (exit $rc)"
	[ $rc -le 1 ] || sed 's/^/# /' "$tmp/g.err" | tail -n 30
}
