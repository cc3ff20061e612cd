#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
#
# fi_mt_bw -o sep over loopback: each process opens one scalable endpoint,
# and thread i sends from its transmit context i to the peer's receive
# context i, every byte checked (-v; each thread's data differs from the
# others', so data on the wrong context fails).  Over shm, tcp (same-host
# peers through shm) and tcp with FI_TCP_SHM=0 (sockets), with 2 threads;
# 3 threads with counters over shm (a context index the AV's bits leave
# room for past the last), and 1 thread over sockets (rx_ctx_bits 0).
# weft has scalable endpoints on both providers: a run that says "not
# supported" (77) fails.  Only exit statuses count, never the times.
# Every program is bounded in time (-T, its watchdog, timeout(1)) and the
# server is stopped by its PID.  Skips (77) when neither provider is built.
set -u

bld=${top_builddir:-$(cd "$(dirname "$0")/../.." && pwd)}
. "${top_srcdir:-$(dirname "$0")/../..}/tests/lib.sh"
prog=$(find_prog "$bld/fabtests" fi_mt_bw) || exit 99
info=$(find_prog "$bld/util" fi_info) || exit 99
command -v timeout >/dev/null 2>&1 || skip "no timeout(1)"
LD_LIBRARY_PATH=$bld/.libs
export LD_LIBRARY_PATH
clear_fi_env

tmp=$(mktemp -d "${TMPDIR:-/tmp}/weft-mt-sep.XXXXXX") || exit 99
server=
cleanup() {
	[ -n "$server" ] && kill "$server" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

list_provs "$info"

args="-o sep -v -S 1,4k,64k,1m -I 20 -w 2 -T 20"
limit=60	# seconds for a client
ran=0
fails=0

# run NAME ARGS...: server and client of fi_mt_bw $args ARGS
run() {
	name=$1
	shift
	echo
	echo "=== $name"
	: >"$tmp/s.err"
	echo "+ fi_mt_bw $args $* -s 127.0.0.1 -B 0 (server)"
	# shellcheck disable=SC2086 # $args is a list
	timeout -k 5 $limit "$prog" $args "$@" -s 127.0.0.1 -B 0 \
		>"$tmp/s.out" 2>"$tmp/s.err" &
	server=$!
	port=
	wait_line "$tmp/s.err" '^listening on port ' "$server" &&
		port=$(listen_port "$tmp/s.err")
	c=1
	if [ -n "$port" ]; then
		echo "+ fi_mt_bw $args $* -P $port 127.0.0.1 (client)"
		# shellcheck disable=SC2086
		timeout -k 5 $limit "$prog" $args "$@" -P "$port" 127.0.0.1 \
			>"$tmp/c.out" 2>"$tmp/c.err"
		c=$?
	else
		echo "(the server reported no port)" >"$tmp/c.err"
		: >"$tmp/c.out"
	fi
	# The server ends with the client; bound the wait.
	i=0
	while kill -0 "$server" 2>/dev/null && [ $i -lt 100 ]; do
		sleep 0.1
		i=$((i + 1))
	done
	kill "$server" 2>/dev/null
	wait "$server"
	s=$?
	server=
	sed 's/^/  server: /' "$tmp/s.out"
	grep -v '^listening on port' "$tmp/s.err" | sed 's/^/  server: /'
	sed 's/^/  client: /' "$tmp/c.out" "$tmp/c.err"
	ran=$((ran + 1))
	if [ $c = 0 ] && [ $s = 0 ]; then
		echo "=== $name: pass"
	else
		[ $c = 124 ] && echo "(124: the client timed out after $limit s)"
		echo "=== $name: FAIL (client exit $c, server exit $s)"
		fails=$((fails + 1))
	fi
}

if has_prov shm; then
	run "shm, 2 threads" -p shm -n 2
	run "shm, 3 threads, counters" -p shm -n 3 -c counter
else
	echo "shm: not in this library, not run"
fi
if has_prov tcp; then
	run "tcp, 2 threads" -p tcp -n 2
	FI_TCP_SHM=0
	export FI_TCP_SHM
	run "tcp with FI_TCP_SHM=0, 2 threads" -p tcp -n 2
	run "tcp with FI_TCP_SHM=0, 1 thread" -p tcp -n 1
	unset FI_TCP_SHM
else
	echo "tcp: not in this library, not run"
fi

echo
[ $ran = 0 ] && skip "neither shm nor tcp is built"
[ $fails = 0 ] || { echo "FAIL: $fails of $ran fi_mt_bw -o sep runs"; exit 1; }
echo "PASS: $ran fi_mt_bw -o sep runs"
