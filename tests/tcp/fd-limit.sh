#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# An RDM endpoint with no file descriptor left: the peers it cannot take
# fail their sends with FI_EMFILE, the ones it has are served, and its log
# says which limit it met (RLIMIT_NOFILE), once, not once per attempt.  A
# sender with none left fails a send that needs a new connection with
# FI_EMFILE, says so, and its connected peers still send.
. "${top_srcdir:-.}/tests/lib.sh"
prog=$(find_prog "${top_builddir:-.}/tests/tcp" fd_limit) || exit 99
export LD_LIBRARY_PATH=${top_builddir:-.}/.libs
clear_fi_env
log=$(mktemp)
trap 'rm -f "$log"' EXIT
s=0
FI_LOG_LEVEL=warn timeout 90 "$prog" 2>"$log" || s=$?
grep -v "^libfabric" "$log"
[ $s -eq 0 ] || { tail -20 "$log"; exit $s; }
grep -q "no file descriptor left (EMFILE: RLIMIT_NOFILE is [0-9]*" "$log" || {
	echo "FAIL: no log line naming RLIMIT_NOFILE"; cat "$log"; exit 1; }
grep -q "RDM endpoint, connecting: no file descriptor left (EMFILE: RLIMIT_NOFILE is [0-9]*" "$log" || {
	echo "FAIL: no log line naming the sender's limit"; cat "$log"; exit 1; }
n=$(grep -c "RDM endpoint: no file descriptor left" "$log")
echo "log lines naming the limit: $n"
# One a second at most; the run lasts a few seconds.
[ "$n" -le 30 ] || { echo "FAIL: the log repeats itself ($n lines)"; exit 1; }
exit 0
