#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# fi_strerror: over weft's own library it prints the text for a code given
# in any base and either sign, and refuses what is not one number.  Over the
# reference libfabric.so.1 ($REF_LIBDIR) it must print exactly what the
# fi_strerror tool of libfabric 1.17 prints, with the same exit status.
set -u
. "${top_srcdir:-.}/tests/util/common.sh"

tool=$(real_binary fi_strerror) || {
	echo "ERROR: util/fi_strerror is not built"
	exit 99
}
fails=0

# check LIBDIR EXPECTED_STATUS EXPECTED_FIRST_LINE ARGS...
check()
{
	libdir=$1 want_status=$2 want=$3
	shift 3
	run_as fi_strerror "$tool" "$libdir" "$tmpdir/out" "$tmpdir/err" "$@"
	got=$(sed -n 1p "$tmpdir/out")
	if [ "$status" -ne "$want_status" ] || [ "$got" != "$want" ] ||
	   [ -s "$tmpdir/err" ]; then
		echo "FAIL: fi_strerror $*: status $status, first line \"$got\";" \
			"expected $want_status, \"$want\", nothing on stderr"
		fails=$((fails + 1))
		return
	fi
	echo "ok: fi_strerror $* -> $got"
}

own="$top_builddir/.libs"
if [ -e "$own/libfabric.so.1" ] && loads_from "$tool" "$own"; then
	check "$own" 0 "No data available" 61
	check "$own" 0 "No data available" -61
	check "$own" 0 "No data available" 0x3d
	check "$own" 0 "No data available" -0x3D
	check "$own" 0 "No data available" 075
	check "$own" 0 "$(sed -n 1p <<<"$(LD_LIBRARY_PATH="$own" "$tool" 265)")" -265
	check "$own" 1 "ERROR: unable to parse 'abc'" abc
	check "$own" 1 "ERROR: unable to parse '61x'" 61x
	check "$own" 1 "ERROR: unable to parse '08'" 08
	check "$own" 1 "ERROR: '4294967296' is out of range" 4294967296
	check "$own" 1 "Usage: fi_strerror FI_ERROR_CODE"
	check "$own" 1 "Usage: fi_strerror FI_ERROR_CODE" 1 2
	check "$own" 0 "Usage: fi_strerror FI_ERROR_CODE" -h
else
	echo "note: no shared weft library to run over (static build?)"
fi

ref_tool=${REF_FI_STRERROR:-/usr/bin/fi_strerror}
ref_libdir=${REF_LIBDIR:-}
if [ -n "$ref_libdir" ] && [ -e "$ref_libdir/libfabric.so.1" ] &&
   [ -x "$ref_tool" ] && loads_from "$tool" "$ref_libdir"; then
	for arg in 61 -61 0x3d -0x3d 075 +61 " 61" 0 1 265 -265 270 99999 \
		2147483647 -2147483648 2147483648 -2147483649 4294967295 \
		abc 61x "61 " 08 - "" -h --help -x; do
		run_as fi_strerror "$tool" "$ref_libdir" "$tmpdir/w.out" \
			"$tmpdir/w.err" "$arg"
		ws=$status
		run_as fi_strerror "$ref_tool" "$ref_libdir" "$tmpdir/r.out" \
			"$tmpdir/r.err" "$arg"
		if [ "$ws" -ne "$status" ] ||
		   ! cmp -s "$tmpdir/w.out" "$tmpdir/r.out" ||
		   ! cmp -s "$tmpdir/w.err" "$tmpdir/r.err"; then
			echo "FAIL: fi_strerror '$arg' differs from the reference (status $ws vs $status; - weft, + reference):"
			diff -u "$tmpdir/w.out" "$tmpdir/r.out"
			diff -u "$tmpdir/w.err" "$tmpdir/r.err"
			fails=$((fails + 1))
		else
			echo "ok: fi_strerror '$arg' as the reference: $(head -n 1 "$tmpdir/r.out")"
		fi
	done
	for args in "" "1 2"; do
		# shellcheck disable=SC2086
		run_as fi_strerror "$tool" "$ref_libdir" "$tmpdir/w.out" "$tmpdir/w.err" $args
		ws=$status
		# shellcheck disable=SC2086
		run_as fi_strerror "$ref_tool" "$ref_libdir" "$tmpdir/r.out" "$tmpdir/r.err" $args
		if [ "$ws" -ne "$status" ] || ! cmp -s "$tmpdir/w.out" "$tmpdir/r.out"; then
			echo "FAIL: fi_strerror $args differs from the reference"
			fails=$((fails + 1))
		else
			echo "ok: fi_strerror with ${args:-no} arguments as the reference"
		fi
	done
else
	echo "note: no reference fi_strerror and library to compare with"
fi

[ "$fails" -eq 0 ]
