#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# A full /dev/shm, in a mount namespace of our own (needs root; skips
# otherwise): room for the target's region and a few of its peers'.  Over
# tcp, the peers that found no room reach the target over TCP and every
# message arrives; the log says why (the size the region needs).  Over
# shm, a peer that finds no room fails its fi_enable with -FI_ENOSPC.
. "${top_srcdir:-.}/tests/lib.sh"
prog=$(find_prog "${top_builddir:-.}/fabtests" fi_rdm_conn_scale) || exit 99
export LD_LIBRARY_PATH=${top_builddir:-.}/.libs
clear_fi_env
[ "$(id -u)" = 0 ] || skip "needs root for a mount namespace"
unshare -m true 2>/dev/null || skip "no mount namespaces here"
out=$(mktemp)
trap 'rm -f "$out"' EXIT
# The target's region is about 7 MiB (the defaults); the child's are small.
unshare -m sh -c '
	mount -t tmpfs -o size=7400k tmpfs /dev/shm || exit 77
	FI_LOG_LEVEL=warn timeout 120 "$1" -p tcp -n 32 -T 60 >"$2" 2>&1
	echo "tcp: $?" >>"$2"
	FI_LOG_LEVEL=warn timeout 120 "$1" -p shm -n 32 -T 60 >>"$2" 2>&1
	echo "shm: $?" >>"$2"
' sh "$prog" "$out"
s=$?
[ $s -eq 77 ] && skip "cannot mount a tmpfs"
grep -v "^libfabric" "$out"
status=0
grep -q "^tcp: 0$" "$out" || { echo "FAIL: tcp peers not all served"; status=1; }
grep -q "no room in /dev/shm for region .*: it needs [0-9]* bytes" "$out" ||
	{ echo "FAIL: no log line saying /dev/shm is full"; status=1; }
grep -q "^shm: 0$" "$out" && { echo "FAIL: shm peers with no room enabled"; status=1; }
grep -q "bind/enable: No space left on device (-28)" "$out" ||
	{ echo "FAIL: shm's fi_enable did not fail with -FI_ENOSPC"; status=1; }
[ $status -eq 0 ] || cat "$out"
exit $status
