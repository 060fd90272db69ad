#!/bin/sh
# The knob table is documented where users look: README.md and
# tiermalloc(3) hold exactly what `tiermalloc knobs` prints from the table,
# and the man pages render without warnings.
. "${top_srcdir:-.}/tests/lib.sh"
TM=${top_builddir:-.}/tools/tiermalloc
S=${top_srcdir:-.}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

"$TM" knobs --markdown >"$tmp/md"
miss=0
while IFS= read -r line; do
	grep -qxF -- "$line" "$S/README.md" || { miss=$((miss + 1)); diag "README lacks: $line"; }
done <"$tmp/md"
ok $miss "README.md's knob table is the table's ($(($(wc -l <"$tmp/md") - 2)) knobs)"

"$TM" knobs --man >"$tmp/man"
sed -n '/^\.\\" BEGIN KNOBS/,/^\.\\" END KNOBS/p' "$S/man/tiermalloc.3" | sed '1d;$d' >"$tmp/inman"
cmp -s "$tmp/man" "$tmp/inman"
ok $? "tiermalloc(3)'s KNOBS section is the table's (regenerate with: tiermalloc knobs --man)"

for k in $("$TM" knobs | cut -f1); do
	grep -q "^\.BI $k: value$" "$S/man/tiermalloc.3" || { echo "# man: $k"; miss=1; }
done
ok $miss "every knob has its entry in tiermalloc(3)"

for page in tiermalloc.1 tiermalloc.3 tier_mallctl.3; do
	if command -v groff >/dev/null; then
		out=$(groff -man -ww -z "$S/man/$page" 2>&1)
		[ -z "$out" ]
		ok $? "groff -man -ww: $page renders without warnings${out:+: $out}"
	else
		need_skip "no groff (apt-get install groff-base)"
	fi
	if command -v man >/dev/null && man --help 2>&1 | grep -q -- --warnings; then
		out=$(MANWIDTH=80 man -l --warnings "$S/man/$page" 2>&1 >/dev/null)
		[ -z "$out" ]
		ok $? "man -l --warnings: $page${out:+: $out}"
	else
		need_skip "man -l --warnings: $page: no man-db (apt-get install man-db)"
	fi
done
done_testing
