#!/bin/sh
# One entry point for a fresh Debian 12 machine: installs what the project
# needs, builds it, and runs the demo or the test suite.
#   ./dev.sh demo    a real workload tiered inside the tiered VM: table + plot
#   ./dev.sh test    every suite (unit, host programs, tiered VM); ends with
#                    "N passed, N failed, N skipped"
#   ./dev.sh bench [--quick]  every bench, CSVs + plots + summary (bench/run)
#   ./dev.sh deps | build
set -eu
cd "$(dirname "$0")"

PKGS="build-essential autoconf automake libtool pkg-config
libjemalloc-dev libjemalloc2 libnuma-dev liburcu-dev libcxl-dev
python3 numactl util-linux groff-base man-db clang
sqlite3 redis-server redis-tools libpython3.11-testsuite git perl
qemu-system-x86 busybox-static cpio xz-utils kmod ndctl daxctl
gnuplot-nox libmemkind0 memcached libmimalloc2.0 libtcmalloc-minimal4
prometheus debhelper lintian"

# prometheus: for promtool (tests/host/metrics.sh); on a machine running
# systemd its package also enables a prometheus server on port 9090.
# debhelper, lintian: the Debian packages (tests/host/deb.sh).
as_root() { if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi; }

deps() {
	missing=
	for p in $PKGS; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
			missing="$missing $p"
	done
	# the VM harness fetches the guest kernel with apt-get download: it
	# needs package lists even when nothing is missing
	if [ -n "$missing" ] || [ -z "$(ls /var/lib/apt/lists/ 2>/dev/null | grep -v lock)" ]; then
		as_root env DEBIAN_FRONTEND=noninteractive apt-get update -q
	fi
	if [ -n "$missing" ]; then
		echo "dev.sh: installing$missing"
		as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $missing
	fi
}

build() {
	if [ ! -x configure ] || [ configure.ac -nt configure ] || [ Makefile.am -nt Makefile.in ] ||
		[ ! -f build-aux/tap-driver.sh ]; then
		./autogen.sh
	fi
	if [ ! -f Makefile ] || [ configure -nt config.status ]; then
		./configure --enable-werror
	fi
	make -j"$(nproc)"
}

# Sum the per-check results of every suite that make check ran.  No test is
# marked XFAIL: a check that fails is counted as failed, whatever its mark.
summary() {
	awk '/^# PASS:/ {p += $3} /^# (FAIL|XFAIL|XPASS|ERROR):/ {f += $3} /^# SKIP:/ {s += $3}
	     END {printf "%d passed, %d failed, %d skipped\n", p, f, s}' "$1"
}

cmd=${1:-}
case $cmd in
deps) deps ;;
build) deps; build ;;
test)
	deps
	build
	log=$(mktemp)
	# set -e must not end the group before the status is written
	{ rc=0; make -j"$(nproc)" check 2>&1 || rc=$?; echo "$rc" >"$log.rc"; } | tee "$log"
	rc=$(cat "$log.rc" 2>/dev/null || echo 1)
	grep -q '^# TOTAL:' "$log" || rc=1
	summary "$log"
	rm -f "$log" "$log.rc"
	[ "$rc" -eq 0 ]
	;;
bench)
	deps
	build
	shift
	# the whole suite (bench/README.md); ./dev.sh bench --quick for seconds
	exec bench/run "$@"
	;;
demo)
	deps
	build
	exec bench/demo.sh
	;;
*)
	sed -n '2,8s/^# \{0,1\}//p' "$0" >&2
	exit 2
	;;
esac
