#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
#
# fi_rpc, the storage RPC client and server, over loopback:
#   - shm, requests by tagged message (-o tagged);
#   - tcp;ofi_rxm, requests into FI_MULTI_RECV buffers (-o multi), and
#     tagged; sockets (tcp under that name), multi-recv;
#   - a killed server over shm and tcp;ofi_rxm (-o tagged-kill,
#     -o multi-kill): once the client prints "rpcs in flight", the server
#     (stalled, "server stalled, pid N") gets SIGKILL; the client must
#     report errors for what was in flight and pass, not hang.
# Every program is bounded in time (its own -T and watchdog, and
# timeout(1) around the client) and the server is stopped by its PID.
# A provider this build lacks is not run; skips (77) when nothing ran.
#
# usage: rpc.sh [--lib DIR]   (DIR: another libfabric.so.1 to run over)
set -u

lib=${WEFT_RPC_LIB:-}
case ${1:-} in
--lib) lib=${2:?--lib needs a directory} ;;
--lib=*) lib=${1#--lib=} ;;
"") ;;
*) echo "usage: $0 [--lib DIR]" >&2; exit 2 ;;
esac

bld=${top_builddir:-$(cd "$(dirname "$0")/../.." && pwd)}
lib=${lib:-$bld/.libs}
. "${top_srcdir:-$(dirname "$0")/../..}/tests/lib.sh"
rpc=$(find_prog "$bld/fabtests" fi_rpc) || exit 99
info=$(find_prog "$bld/util" fi_info) || exit 99
command -v timeout >/dev/null 2>&1 || { echo "SKIP: no timeout(1)"; exit 77; }
LD_LIBRARY_PATH=$lib
export LD_LIBRARY_PATH
clear_fi_env

tmp=$(mktemp -d "${TMPDIR:-/tmp}/weft-rpc.XXXXXX") || exit 99
server=
spid=
cleanup() {
	[ -n "$spid" ] && kill -KILL "$spid" 2>/dev/null
	[ -n "$server" ] && kill "$server" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

list_provs "$info"

limit=120	# seconds for a client; its own -T is 20
ran=0
fails=0

# run NAME PROV OP ARGS...
run() {
	name=$1 p=$2 op=$3
	shift 3
	echo
	echo "=== $name"
	: >"$tmp/s.err"
	: >"$tmp/c.err"
	echo "+ fi_rpc -p '$p' -o $op $* -s 127.0.0.1 -B 0 (server)"
	"$rpc" -p "$p" -o "$op" "$@" -s 127.0.0.1 -B 0 >"$tmp/s.out" 2>"$tmp/s.err" &
	server=$!
	if ! wait_line "$tmp/s.err" '^listening on port ' "$server"; then
		kill "$server" 2>/dev/null
		wait "$server"
		server=
		cat "$tmp/s.out" "$tmp/s.err"
		echo "=== $name: FAIL (the server reported no port)"
		fails=$((fails + 1))
		return
	fi
	port=$(listen_port "$tmp/s.err")
	echo "+ fi_rpc -p '$p' -o $op $* -P $port 127.0.0.1 (client)"
	timeout -k 5 $limit "$rpc" -p "$p" -o "$op" "$@" -P "$port" 127.0.0.1 \
		>"$tmp/c.out" 2>"$tmp/c.err" &
	client=$!
	killed=
	case $op in
	*-kill)
		if wait_line "$tmp/c.err" '^rpcs in flight' "$client" &&
		   wait_line "$tmp/s.err" '^server stalled, pid ' "$server"; then
			spid=$(sed -n 's/^server stalled, pid \([0-9][0-9]*\)$/\1/p' "$tmp/s.err")
			echo "+ kill -KILL $spid (the server, RPCs in flight)"
			kill -KILL "$spid"
			killed=yes
		fi
		;;
	esac
	wait "$client"
	c=$?
	# The server ends with the client (or was killed); bound the wait.
	i=0
	while kill -0 "$server" 2>/dev/null && [ $i -lt 100 ]; do
		sleep 0.1
		i=$((i + 1))
	done
	kill "$server" 2>/dev/null
	wait "$server"
	s=$?
	server=
	spid=
	sed 's/^/  server: /' "$tmp/s.out"
	grep -v '^listening on port' "$tmp/s.err" | sed 's/^/  server: /'
	sed 's/^/  client: /' "$tmp/c.out" "$tmp/c.err"
	if [ $c = 77 ] && { [ $s = 77 ] || [ -n "$killed" ]; }; then
		echo "=== $name: not supported (77)"
		return
	fi
	ran=$((ran + 1))
	case $op in
	*-kill)
		if [ $c = 0 ] && [ -n "$killed" ]; then
			echo "=== $name: pass"
		else
			[ $c = 124 ] && echo "(124: the client timed out after $limit s)"
			echo "=== $name: FAIL (client exit $c, server ${killed:+killed, }exit $s)"
			fails=$((fails + 1))
		fi
		;;
	*)
		if [ $c = 0 ] && [ $s = 0 ]; then
			echo "=== $name: pass"
		else
			[ $c = 124 ] && echo "(124: the client timed out after $limit s)"
			echo "=== $name: FAIL (client exit $c, server exit $s)"
			fails=$((fails + 1))
		fi
		;;
	esac
}

args="-I 300 -W 8 -S 1,4k,64k,1m -T 20"
# shellcheck disable=SC2086 # $args is a list
if has_prov shm; then
	run "shm, tagged requests" shm tagged $args
	run "shm, a killed server" shm tagged-kill $args
else
	echo "shm: not in this library, not run"
fi
# shellcheck disable=SC2086
if has_prov tcp; then
	run "tcp;ofi_rxm, multi-recv requests" "tcp;ofi_rxm" multi $args
	run "tcp;ofi_rxm, tagged requests" "tcp;ofi_rxm" tagged $args
	run "sockets, multi-recv requests" sockets multi $args
	run "tcp;ofi_rxm, a killed server" "tcp;ofi_rxm" multi-kill $args
else
	echo "tcp: not in this library, not run"
fi

echo
if [ $ran = 0 ]; then
	echo "SKIP: no provider ran fi_rpc"
	exit 77
fi
[ $fails = 0 ] || { echo "FAIL: $fails of $ran fi_rpc runs"; exit 1; }
echo "PASS: $ran fi_rpc runs"
