#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# shm over time: KILL_CYCLES (default 100; `make check-long`: 1000)
# processes in turn open an endpoint and are SIGKILLed at a random point,
# over shm and over tcp (its local peers through shm); every restart
# works and no dead process leaves a file in /dev/shm.
prog="${top_builddir:-.}/tests/shm/kill_cycles"
n=${KILL_CYCLES:-100}
rc=77
# The check itself: without a sweep after the last kill, the dead child's
# region must be found.
if KILL_CYCLES_NO_SWEEP=1 "$prog" shm 2 >/dev/null 2>&1; then
	echo "FAIL: stale files of a dead process went unnoticed"
	exit 1
fi
for p in shm tcp; do
	"$prog" "$p" "$n"
	r=$?
	case $r in
	0) [ $rc -eq 77 ] && rc=0 ;;
	77) ;;
	*) rc=1 ;;
	esac
done
exit $rc
