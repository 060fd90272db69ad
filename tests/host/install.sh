#!/bin/sh
# make install into a scratch tree: library, header, .pc, command and man
# pages land; a small program builds against it through pkg-config alone
# and runs on the installed library; the installed command runs it too.
. "${top_srcdir:-.}/tests/lib.sh"
B=${top_builddir:-.}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
dest=$tmp/root
${MAKE:-make} -C "$B" install DESTDIR="$dest" >"$tmp/install.log" 2>&1
rc=$?
ok $rc "make install DESTDIR=..."
[ $rc -eq 0 ] || sed 's/^/# /' "$tmp/install.log" | tail -n 20
# where configure put things: the installed files tell
at() { f=$(find "$dest" -path "*/$1" | head -n 1); [ -n "$f" ] && dirname "${f#$dest}"; }
libdir=$(at lib*/libtiermalloc.so)
includedir=$(at include/tiermalloc.h)
bindir=$(at bin/tiermalloc)
mandir=$(at man1/tiermalloc.1)
mandir=${mandir%/man1}
lib=$dest$libdir
miss=
for f in "$lib/libtiermalloc.so" "$lib/pkgconfig/tiermalloc.pc" "$dest$includedir/tiermalloc.h" \
	"$dest$bindir/tiermalloc" "$dest$mandir/man1/tiermalloc.1" "$dest$mandir/man3/tiermalloc.3" \
	"$dest$mandir/man3/tier_mallctl.3"; do
	[ -e "$f" ] || miss="$miss ${f#$dest}"
done
[ -z "$miss" ]
ok $? "installed: library, .pc, header, command, three man pages${miss:+; missing:$miss}"
# no static archive: it could not be linked (it and libjemalloc.a both
# define malloc), and its objects doubled the library's build
extra=$(find "$dest" -name 'libtiermalloc.a' | sed "s|^$dest||")
[ -z "$extra" ]
ok $? "no static archive installed${extra:+: $extra}"

cat >"$tmp/app.c" <<'C'
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <tiermalloc.h>
int main(void)
{
	const char *v;
	size_t len = sizeof(v);
	char *p = malloc(1000);
	if (!p || tier_mallctl("version", &v, &len, NULL, 0))
		return 1;
	strcpy(p, v);
	printf("version %s\n", p);
	free(p);
	return strcmp(v, TIERMALLOC_VERSION) != 0;
}
C
export PKG_CONFIG_PATH="$lib/pkgconfig" PKG_CONFIG_SYSROOT_DIR="$dest"
flags=$(pkg-config --cflags --libs tiermalloc 2>"$tmp/pc.err")
ok $? "pkg-config --cflags --libs tiermalloc: $flags"
${CC:-cc} -o "$tmp/app" "$tmp/app.c" $flags >"$tmp/cc.log" 2>&1
ok $? "a program builds against the installed tree through pkg-config$(sed 's/^/ # /' "$tmp/cc.log" | head -n 3)"
out=$(LD_LIBRARY_PATH="$lib" "$tmp/app" 2>&1)
rc=$?
used=$(LD_LIBRARY_PATH="$lib" ldd "$tmp/app" | awk '/libtiermalloc/ {print $3}')
[ $rc -eq 0 ] && [ "$used" = "$lib/libtiermalloc.so.0" ]
ok $? "it runs on the installed library ($out; $used)"
out=$(TIERMALLOC_LIB= LD_LIBRARY_PATH="$lib" "$dest$bindir/tiermalloc" --version 2>&1)
ok $? "the installed command runs: $out"
out=$(TIERMALLOC_LIB="$lib/libtiermalloc.so" "$dest$bindir/tiermalloc" run -s -- /bin/echo hi 2>&1)
case $out in hi*"Begin tiermalloc statistics"*) r=0 ;; *) r=1 ;; esac
ok $r "the installed command runs a program with the installed library preloaded"
if command -v man >/dev/null; then
	w=$(MANPATH="$dest$mandir" man -w tier_mallctl 2>&1)
	[ "$w" = "$dest$mandir/man3/tier_mallctl.3" ]
	ok $? "man finds the installed tier_mallctl(3): $w"
else
	need_skip "man finds the installed tier_mallctl(3): no man (apt-get install man-db)"
fi
done_testing
