#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
#
# Smoke run of fi_mt_fanout over weft's own library: three threads share
# one FI_THREAD_SAFE endpoint, each sending messages of 4 bytes to 1 MiB
# (eager and rendezvous) to a receiver process of its own; every byte is
# checked.  Over shm, tcp (same-host peers through shm) and tcp with
# FI_TCP_SHM=0.  Only the exit status counts: the times it prints are
# never pass/fail.  77 (no such provider) passes through as a skip.
# Needs top_builddir (make check exports it).

: "${top_builddir:?}"
export LD_LIBRARY_PATH=$top_builddir/.libs
unset FI_PROVIDER
prog=$top_builddir/fabtests/.libs/fi_mt_fanout
[ -x "$prog" ] || prog=$top_builddir/fabtests/fi_mt_fanout
rc=0
skipped=0
run() {
	echo "== $*"
	timeout -k 5 120 "$@" -n 3 -S 1m -I 4 -T 60
	r=$?
	if [ $r = 77 ]; then
		skipped=$((skipped + 1))
	elif [ $r != 0 ]; then
		echo "FAIL ($r): $*"
		rc=1
	fi
}
run "$prog" -p shm
run "$prog" -p tcp
FI_TCP_SHM=0 run "$prog" -p tcp
[ $rc = 0 ] && [ $skipped = 3 ] && exit 77
exit $rc
