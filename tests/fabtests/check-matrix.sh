#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
#
# The fabtests matrix over weft's own library: fabtests/scripts/run -q for
# every provider this build has.  Skips (77) when no provider is built.
# Needs top_srcdir and top_builddir (make check exports them).

: "${top_srcdir:?}" "${top_builddir:?}"
libdir=$top_builddir/.libs
export LD_LIBRARY_PATH=$libdir
unset FI_PROVIDER

provs=$(timeout 30 "$top_builddir/util/fi_info" -l 2>/dev/null |
	sed -n 's/^\([A-Za-z0-9_;]*\):$/\1/p' | grep -v '^ofi_' |
	sort -u | paste -sd, -)
if [ -z "$provs" ]; then
	echo "no provider is built in $libdir: nothing to run"
	exit 77
fi
echo "providers: $provs"

# the runner keeps the logs of failed runs here, beside this test's log
logs=$top_builddir/tests/fabtests/matrix-logs
rm -rf "$logs"
mkdir -p "$logs" && export TMPDIR=$logs

status=0
IFS=, read -r -a list <<<"$provs"
for p in "${list[@]}"; do
	echo "=== fabtests over $p"
	timeout -k 10 600 "$top_srcdir/fabtests/scripts/run" -q -p "$p" \
		-b "$top_builddir/fabtests" -T 60
	rc=$?
	echo "=== $p: exit $rc"
	[ $rc = 0 ] || status=1
done
exit $status
