#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# The fabtests' waits tell a stalled peer from a slow one by the
# watchdog's heartbeat, not the clock: a pingpong whose client is stopped
# (SIGSTOP) mid-run must end its server with "no progress for 3 s"
# (-T 3; "side channel: peer silent for 3 s" when it was stopped before
# the first message), exit status 1, well before the watchdog's own limit (-T + 5 s),
# over shm and over tcp.  The client is then killed by its PID.
set -u
bld=${top_builddir:-.}
. "${top_srcdir:-$(dirname "$0")/../..}/tests/lib.sh"
pp=$(find_prog "$bld/fabtests" fi_rdm_tagged_pingpong) || exit 99
command -v timeout >/dev/null 2>&1 || skip "no timeout(1)"
LD_LIBRARY_PATH=$bld/.libs
export LD_LIBRARY_PATH
unset FI_PROVIDER
tmp=$(mktemp -d) || exit 1
client=
trap '[ -n "$client" ] && kill -KILL "$client" 2>/dev/null; rm -rf "$tmp"' EXIT
fails=0

# established PORT: a connection to the server's side channel is up.
established() {
	awk -v p=":$(printf '%04X' "$1")\$" '$2 ~ p && $4 == "01" { f = 1 }
		END { exit !f }' /proc/net/tcp /proc/net/tcp6 2>/dev/null
}

# one PROVIDER: 0 the stall was reported, 1 it was not, 2 the client
# never got going (a loaded machine): try again.
one() {
	local p=$1 n port rc secs
	"$pp" -p $p -s 127.0.0.1 -B 0 -S 8 -I 1000000000 -T 3 \
		>/dev/null 2>"$tmp/srv" &
	server=$!
	if ! wait_line "$tmp/srv" '^listening on port ' "$server" 100; then
		kill -KILL "$server" 2>/dev/null
		echo "FAIL: $p: the server reported no port"
		return 1
	fi
	port=$(listen_port "$tmp/srv")
	"$pp" -p $p -P "$port" -S 8 -I 1000000000 -T 3 \
		127.0.0.1 >/dev/null 2>"$tmp/cli" &
	client=$!
	# Stopped once it is connected and under way, not before.
	n=0
	while ! established "$port" && [ $n -lt 200 ]; do
		sleep 0.1
		n=$((n + 1))
	done
	sleep 0.5
	kill -STOP "$client"
	t0=$(date +%s)
	# Bounded: the watchdog would end it at 8 s; give it 30.
	n=0
	while kill -0 "$server" 2>/dev/null && [ $n -lt 300 ]; do
		sleep 0.1
		n=$((n + 1))
	done
	rc=0
	if kill -0 "$server" 2>/dev/null; then
		kill -KILL "$server"
		echo "FAIL: $p: the server did not notice its stopped peer in 30 s"
		rc=1
	else
		wait "$server"
		rc=$?
		secs=$(($(date +%s) - t0))
		# The data path's wait, or, stopped before the first
		# message (a slow start), the side channel's.
		if [ $rc = 1 ] && grep -q -e 'no progress for 3 s' \
			-e 'peer silent for 3 s' "$tmp/srv"; then
			echo "ok: $p: the server reported the stall after ${secs} s"
			rc=0
		elif grep -q 'no client connected' "$tmp/srv"; then
			echo "again: $p: the client did not connect in time"
			rc=2
		else
			echo "FAIL: $p: server exit $rc after ${secs} s:"
			sed 's/^/  /' "$tmp/srv"
			rc=1
		fi
	fi
	kill -KILL "$client" 2>/dev/null
	wait "$client" 2>/dev/null
	client=
	return $rc
}

for p in shm tcp; do
	for try in 1 2 3; do
		one $p
		rc=$?
		[ $rc = 2 ] || break
	done
	[ $rc = 0 ] || fails=$((fails + 1))
done
[ $fails = 0 ]
