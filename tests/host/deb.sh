#!/bin/sh
# The Debian packages (debian/): dpkg-buildpackage -b on a copy of the
# sources builds libtiermalloc0, libtiermalloc-dev and tiermalloc with the
# right files in each; lintian finds no error; unpacked into a scratch
# root, the installed `tiermalloc run` runs a program on the installed
# library (by its soname: no -dev needed), and a program builds against
# the -dev package through pkg-config.
. "${top_srcdir:-.}/tests/lib.sh"
S=${top_srcdir:-.}
for t in dpkg-buildpackage dh lintian; do
	if ! command -v $t >/dev/null; then
		skip "$t not installed (Debian packages dpkg-dev, debhelper, lintian; ./dev.sh deps installs them)"
		done_testing
		exit
	fi
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# a copy of the sources, without this tree's build products: git's files
# (tracked, and new ones not ignored), else automake's distribution list
mkdir "$tmp/src"
if git -C "$S" rev-parse --git-dir >/dev/null 2>&1; then
	git -C "$S" ls-files -co --exclude-standard -z | (cd "$S" && xargs -0 cp -P --parents -t "$tmp/src")
else
	${MAKE:-make} -C "${top_builddir:-.}" distdir distdir="$tmp/src" >"$tmp/dist.log" 2>&1
fi
t0=$(date +%s)
(cd "$tmp/src" && DEB_BUILD_OPTIONS="nocheck noddebs parallel=2" dpkg-buildpackage -us -uc -b) >"$tmp/build.log" 2>&1
rc=$?
ok $rc "dpkg-buildpackage -us -uc -b builds, in $(($(date +%s) - t0)) s (load $(cut -d' ' -f1 /proc/loadavg))"
[ $rc -eq 0 ] || sed 's/^/# /' "$tmp/build.log" | tail -n 30

# what each package holds
has() { # has PACKAGE PATTERN...: every pattern matches a path in the package
	deb=$(ls "$tmp"/"$1"_*.deb 2>/dev/null | head -n 1)
	[ -n "$deb" ] || return 1
	dpkg-deb -c "$deb" | awk '{print $6}' >"$tmp/list"
	shift
	for p in "$@"; do grep -q "$p" "$tmp/list" || { diag "missing $p"; return 1; }; done
}
lacks() { # lacks PACKAGE PATTERN: no path matches
	! dpkg-deb -c "$(ls "$tmp"/"$1"_*.deb | head -n 1)" | awk '{print $6}' | grep -q "$2"
}
has libtiermalloc0 '/usr/lib/[^/]*/libtiermalloc\.so\.0$' '/usr/lib/[^/]*/libtiermalloc\.so\.0\.0\.0$' &&
	lacks libtiermalloc0 'libtiermalloc\.so$' &&
	dpkg-deb -I "$(ls "$tmp"/libtiermalloc0_*.deb)" symbols | grep -q '^ tier_mallctl@Base'
ok $? "libtiermalloc0: the library by its soname, a symbols file (tier_mallctl), no -dev link"
has libtiermalloc-dev '/usr/include/tiermalloc\.h$' '/usr/lib/[^/]*/libtiermalloc\.so$' \
	'/usr/lib/[^/]*/pkgconfig/tiermalloc\.pc$' 'man3/tiermalloc\.3' 'man3/tier_mallctl\.3' &&
	lacks libtiermalloc-dev '\.la$' && lacks libtiermalloc-dev '\.a$'
ok $? "libtiermalloc-dev: header, .so link, pkg-config file, tiermalloc(3), tier_mallctl(3); no .la or .a"
has tiermalloc '/usr/bin/tiermalloc$' 'man1/tiermalloc\.1'
ok $? "tiermalloc: the command and tiermalloc(1)"

nice lintian --fail-on error "$tmp"/tiermalloc_*.changes >"$tmp/lintian" 2>&1
rc=$?
ok $rc "lintian: no error ($(grep -c '^E:' "$tmp/lintian") errors, $(grep -c '^W:' "$tmp/lintian") warnings)"
grep -E '^(E|W):' "$tmp/lintian" | sed 's/^/# /' | head -n 20

# installed into a scratch root
root=$tmp/root
for d in "$tmp"/*.deb; do dpkg -x "$d" "$root"; done
lib=$(ls "$root"/usr/lib/*/libtiermalloc.so.0)
tm=$root/usr/bin/tiermalloc
# the command's default library is the package's path, by soname
unset TIERMALLOC_LIB
"$tm" run -- /bin/true 2>"$tmp/e"
grep -q "^tiermalloc: ${lib#$root} not found" "$tmp/e"
ok $? "the installed command preloads ${lib#$root} by default: $(cat "$tmp/e")"
out=$(TIERMALLOC_LIB=$lib "$tm" run -s -- /bin/echo hi 2>&1)
r=$?
[ $r -eq 0 ] && printf '%s\n' "$out" | grep -q '^hi$' && printf '%s\n' "$out" | grep -q 'Begin tiermalloc statistics'
ok $? "the installed tiermalloc run -s runs a program on the installed library (exit $r)"
cat >"$tmp/p.c" <<'EOF'
#include <stdio.h>
#include <stdlib.h>
#include <tiermalloc.h>
int main(void)
{
	const char *v;
	size_t len = sizeof(v);
	void *p = malloc(100);
	if (!p || tier_mallctl("version", &v, &len, NULL, 0))
		return 1;
	printf("%s\n", v);
	free(p);
	return 0;
}
EOF
pc=$(ls -d "$root"/usr/lib/*/pkgconfig)
flags=$(PKG_CONFIG_PATH=$pc PKG_CONFIG_SYSROOT_DIR=$root pkg-config --cflags --libs tiermalloc 2>"$tmp/pc.err")
r=$?
${CC:-cc} -o "$tmp/p" "$tmp/p.c" $flags 2>"$tmp/cc.err" && v=$(LD_LIBRARY_PATH=$(dirname "$lib") "$tmp/p")
[ $r -eq 0 ] && [ -n "$v" ]
ok $? "a program builds against libtiermalloc-dev through pkg-config and runs: version $v"
[ -n "$v" ] || sed 's/^/# /' "$tmp/pc.err" "$tmp/cc.err" | head
done_testing
