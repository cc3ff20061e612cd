#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# weft's fi_info over weft's own libfabric.so.1: when fi_getinfo finds
# nothing, fi_info must fail with its status, print the error line, and
# then say why under "No provider matched:", one "provider: reason" line
# each, taken from the warnings the library logged.  With FI_LOG_LEVEL set
# the library's own log is left alone and no explanation block is added.
set -u
. "${top_srcdir:-.}/tests/util/common.sh"

libdir="$top_builddir/.libs"
tool=$(real_binary fi_info) || {
	echo "ERROR: util/fi_info is not built"
	exit 99
}
if [ ! -e "$libdir/libfabric.so.1" ]; then
	echo "SKIP: no shared $libdir/libfabric.so.1 (static build)"
	exit 77
fi
if ! loads_from "$tool" "$libdir"; then
	echo "ERROR: $tool does not load $libdir/libfabric.so.1"
	exit 99
fi

fails=0

fail()
{
	echo "FAIL: $*"
	echo "  stdout:"
	sed 's/^/    | /' "$tmpdir/out"
	echo "  stderr:"
	sed 's/^/    | /' "$tmpdir/err"
	fails=$((fails + 1))
}

# expect_explained REASON_REGEX ARGS...: fi_getinfo fails with -61, the
# explanation follows, and one of its lines matches REASON_REGEX.
expect_explained()
{
	reason=$1
	shift
	run_as fi_info "$tool" "$libdir" "$tmpdir/out" "$tmpdir/err" "$@"
	label="fi_info $*"
	if [ "$status" -ne 61 ]; then
		fail "$label: exit status $status, expected 61 (FI_ENODATA)"
		return
	fi
	if [ -s "$tmpdir/out" ]; then
		fail "$label: printed to stdout"
		return
	fi
	if [ "$(sed -n 1p "$tmpdir/err")" != "fi_getinfo: -61" ] ||
	   [ "$(sed -n 2p "$tmpdir/err")" != "No provider matched:" ]; then
		fail "$label: stderr does not start with the error line and the heading"
		return
	fi
	if [ "$(sed -n '3,$p' "$tmpdir/err" | wc -l)" -lt 1 ] ||
	   sed -n '3,$p' "$tmpdir/err" | grep -qv '^    [a-z_;]*: .'; then
		fail "$label: explanation lines are not \"    provider: reason\""
		return
	fi
	if ! sed -n '3,$p' "$tmpdir/err" | grep -q -- "$reason"; then
		fail "$label: no explanation line matches /$reason/"
		return
	fi
	echo "ok: $label"
	sed -n '2,$p' "$tmpdir/err" | sed 's/^/    | /'
}

# While the library has no provider, it says so for every request; once it
# has some, an unknown name is still explained by the core.
expect_explained '^    core: no provider is \(built into this library\|named "weft-no-such-provider"\)' \
	-p weft-no-such-provider
expect_explained '^    core: no provider is \(built into this library\|named "weft-no-such-provider"\)' \
	-e -p weft-no-such-provider
expect_explained '^    core: no provider is \(built into this library\|named "weft-no-such-provider"\)' \
	-l -p weft-no-such-provider

# No provider takes Blue Gene/Q addresses: each one tried (or the core,
# when there are none) must say what it could not meet.
expect_explained '^    [a-z_;]*: ' -a FI_ADDR_BGQ
run_as fi_info "$tool" "$libdir" "$tmpdir/out" "$tmpdir/err" -l
list_status=$status
if [ "$list_status" -eq 0 ]; then
	# (the hooks listed, ofi_hook_*, are no provider to ask for)
	provs=$(sed -n 's/^\([^ ].*\):$/\1/p' "$tmpdir/out" | grep -v '^ofi_' |
		sort -u)
	for prov in $provs; do
		# sockets is tcp under another name: tcp explains.
		want=$prov
		[ "$prov" = sockets ] && want='\(sockets\|tcp\)'
		expect_explained "^    $want: " -a FI_ADDR_BGQ -p "$prov"
	done
fi

# A library without providers explains plain requests too.
if [ "$list_status" -ne 0 ]; then
	expect_explained '^    core: no provider is built into this library'
	expect_explained '^    core: no provider is built into this library' -l
	expect_explained '^    core: no provider is built into this library' \
		-c "FI_MSG|FI_RMA" -t FI_EP_RDM
else
	echo "note: the library has providers; the plain-request cases do not apply"
fi

# FI_LOG_LEVEL: the library logs for itself, fi_info adds nothing.
(export FI_LOG_LEVEL=warn
 run_as fi_info "$tool" "$libdir" "$tmpdir/out" "$tmpdir/err" \
	-p weft-no-such-provider
 echo "$status" >"$tmpdir/status")
label="FI_LOG_LEVEL=warn fi_info -p weft-no-such-provider"
if [ "$(cat "$tmpdir/status")" -ne 61 ]; then
	fail "$label: exit status $(cat "$tmpdir/status"), expected 61"
elif grep -q '^No provider matched:' "$tmpdir/err"; then
	fail "$label: explanation block printed although the library logs itself"
elif ! grep -q '^fi_getinfo: -61$' "$tmpdir/err" ||
     ! grep -q 'no provider is' "$tmpdir/err"; then
	fail "$label: expected the error line and the library's own warning"
else
	echo "ok: $label"
fi

# Bad input is refused before the library is asked.
run_as fi_info "$tool" "$libdir" "$tmpdir/out" "$tmpdir/err" -c FI_NO_SUCH_CAP
if [ "$status" -ne 22 ] ||
   [ "$(cat "$tmpdir/err")" != "error: Unrecognized capability: FI_NO_SUCH_CAP" ]; then
	fail "fi_info -c FI_NO_SUCH_CAP: expected status 22 and one error line"
else
	echo "ok: fi_info -c FI_NO_SUCH_CAP"
fi

[ "$fails" -eq 0 ]
