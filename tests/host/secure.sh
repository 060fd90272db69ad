#!/bin/sh
# AT_SECURE: a setuid program ignores TIERMALLOC_CONF (the caller's
# environment must not steer a privileged process).  The probe is linked
# with -ltiermalloc (setuid programs ignore LD_PRELOAD paths) and run as
# "nobody" twice: a plain copy and a setuid-root copy.
. "${top_srcdir:-.}/tests/lib.sh"
if [ "$(id -u)" -ne 0 ] || ! command -v setpriv >/dev/null; then
	need_skip "needs root and setpriv to run a setuid program as another user"
	done_testing
	exit $?
fi
tmp=$(mktemp -d)
chmod 755 "$tmp"
trap 'rm -rf "$tmp"' EXIT
cp "$TIERMALLOC_LIB" "$tmp/libtiermalloc.so.0"
ln -s libtiermalloc.so.0 "$tmp/libtiermalloc.so"
${CC:-cc} -o "$tmp/plain" -I"$top_srcdir/include" "$top_srcdir/tests/host/conf_probe.c" \
	-L"$tmp" -ltiermalloc -Wl,-rpath,"$tmp"
ok $? "probe linked with -ltiermalloc"
cp "$tmp/plain" "$tmp/suid"
chmod 4755 "$tmp/suid"
chmod 755 "$tmp/plain" "$tmp/libtiermalloc.so.0"
as_nobody() { setpriv --reuid=65534 --regid=65534 --clear-groups "$@"; }

out=$(as_nobody env TIERMALLOC_CONF=fast_limit:12345 "$tmp/plain")
[ "$out" = "12345 0" ]
ok $? "plain program: TIERMALLOC_CONF applies (fast_limit, AT_SECURE: $out)"
out=$(as_nobody env TIERMALLOC_CONF=fast_limit:12345 "$tmp/suid" 2>"$tmp/err")
set -- $out
[ "$2" = "1" ] && [ "$1" != "12345" ] && [ ! -s "$tmp/err" ]
ok $? "setuid program: AT_SECURE set, TIERMALLOC_CONF ignored (fast_limit, AT_SECURE: $out)"
out=$(as_nobody env TIERMALLOC_CONF=bogus "$tmp/suid" 2>&1 >/dev/null)
[ -z "$out" ]
ok $? "setuid program: not even a bad TIERMALLOC_CONF is read"
# paths from the environment: a setuid program must not write where the
# caller says (advise_csv names a file root would create)
mkdir -m 777 "$tmp/w"
as_nobody env TIERMALLOC_CONF=advise:true,advise_csv:"$tmp/w/suid.csv" "$tmp/suid" 1500 >/dev/null 2>&1
as_nobody env TIERMALLOC_CONF=advise:true,advise_csv:"$tmp/w/plain.csv" "$tmp/plain" 1500 >/dev/null 2>&1
[ ! -e "$tmp/w/suid.csv" ] && [ -s "$tmp/w/plain.csv" ]
ok $? "setuid program: advise_csv from the environment not created (the plain program wrote its own)"
# nothing we create is group- or world-writable, whatever the umask
(umask 000 && TIERMALLOC_CONF=advise:true,advise_csv:"$tmp/w/u.csv" LD_PRELOAD=$TIERMALLOC_LIB \
	"$tmp/plain" 1500 >/dev/null 2>&1)
mode=$(stat -c %a "$tmp/w/u.csv" 2>/dev/null)
[ -n "$mode" ] && [ -z "$(find "$tmp/w/u.csv" -perm /022)" ]
ok $? "umask 000: the advise CSV is created mode ${mode:-missing}, not group- or world-writable"
done_testing
