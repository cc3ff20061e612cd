#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
#
# The tcp provider between two hosts: two network namespaces of this run's
# own, joined by a veth pair (192.0.2.1 and 192.0.2.2, TEST-NET-1), a
# server in the first and a client in the second, so that every byte
# crosses a network link rather than loopback:
#   - fi_rdm_tagged_pingpong -p tcp -v, sizes 1, 4k, 64k, 1m;
#   - fi_msg_pingpong -p tcp -e msg -v;
#   - fi_rpc -p "tcp;ofi_rxm": RPCs with bulk data pulled and pushed by
#     RMA, requests into multi-recv buffers, both sides sleeping on their
#     CQ's fd; then a server killed (SIGKILL, by the PID it prints) with
#     RPCs in flight, which the client must report as errors, not hang;
#   - fi_coll -p tcp: every collective among 4 processes, 2 on each host,
#     and among 3 (2 and 1), small and rendezvous-sized, each result
#     checked (peers of one host meet through shm, the others over the
#     link).
# Data is verified (-v); each program is bounded in time and the server
# is stopped by its PID.  The namespaces, the link and anything still
# running in them are removed on every exit.
#
# usage: netns.sh [--lib DIR]
#   --lib DIR  run the same programs over the libfabric.so.1 in DIR (or set
#              WEFT_NETNS_LIB=DIR) instead of this build's own library,
#              e.g. to check this script against another libfabric's tcp.
#
# Skips (77), saying why, without root, without ip(8), when namespaces or
# veth devices cannot be made, or when the library has no tcp provider.
# make check exports top_builddir; run by hand, the build tree is taken
# to be the one holding this script.

set -u

lib=${WEFT_NETNS_LIB:-}
while [ $# -gt 0 ]; do
	case $1 in
	--lib) [ $# -ge 2 ] || { echo "--lib needs a directory" >&2; exit 2; }
		lib=$2; shift 2 ;;
	--lib=*) lib=${1#--lib=}; shift ;;
	-h | --help) sed -n '3,26s/^# \{0,1\}//p' "$0"; exit 0 ;;
	*) echo "unknown argument '$1' (--help for usage)" >&2; exit 2 ;;
	esac
done

. "${top_srcdir:-$(dirname "$0")/../..}/tests/lib.sh"

bld=${top_builddir:-$(cd "$(dirname "$0")/../.." && pwd)}
lib=${lib:-$bld/.libs}
[ -e "$lib/libfabric.so.1" ] || { echo "no libfabric.so.1 in $lib" >&2; exit 99; }
lib=$(cd "$lib" && pwd)

info=$(find_prog "$bld/util" fi_info) || exit 99
rdm_pp=$(find_prog "$bld/fabtests" fi_rdm_tagged_pingpong) || exit 99
msg_pp=$(find_prog "$bld/fabtests" fi_msg_pingpong) || exit 99
rpc=$(find_prog "$bld/fabtests" fi_rpc) || exit 99
coll=$(find_prog "$bld/fabtests" fi_coll) || exit 99

[ "$(id -u)" = 0 ] || skip "network namespaces need root (running as uid $(id -u))"
command -v ip >/dev/null 2>&1 || skip "no ip(8) (iproute2) to make network namespaces"
command -v timeout >/dev/null 2>&1 || skip "no timeout(1) to bound the programs"

unset FI_PROVIDER FI_TCP_IFACE
echo "library: $lib/libfabric.so.1"
echo "+ LD_LIBRARY_PATH=$lib $info -l"
provs=$(LD_LIBRARY_PATH=$lib timeout 30 "$info" -l 2>&1)
echo "$provs" | sed -n 's/^\([^ ].*\):$/  \1/p'
echo "$provs" | grep -q '^tcp:$' ||
	skip "the library in $lib has no tcp provider (fi_info -l lists no tcp:)"

# ---- the two hosts ----

ns_a=weft-$$-a
ns_b=weft-$$-b
if_a=weft-a		# the veth end inside each namespace
if_b=weft-b
addr_a=192.0.2.1
addr_b=192.0.2.2
tmp=
server=

# shellcheck disable=SC2317,SC2086 # called by the trap; $pids is a list
cleanup() {
	trap - EXIT INT TERM HUP
	if [ -n "$server" ]; then
		kill "$server" 2>/dev/null
		server=
	fi
	# Anything still running inside this run's namespaces is this run's;
	# the veth pair goes with the namespaces that hold its ends.
	if [ -n "$ns_made" ]; then
		echo "+ ip netns del$ns_made"
		# shellcheck disable=SC2086 # a list of names
		ns_remove $ns_made
	fi
	[ -n "$tmp" ] && rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 129' HUP
trap 'exit 130' INT
trap 'exit 143' TERM

# Failing to make the hosts means this machine cannot have them here,
# which is a skip, not a failure of the provider.
veth_hosts "$ns_a" "$ns_b" "$if_a" "$if_b" "$addr_a" "$addr_b" || skip "$ns_why"
echo "+ ip -n $ns_a -br addr show dev $if_a; ip -n $ns_b -br addr show dev $if_b"
ip -n "$ns_a" -br addr show dev "$if_a"
ip -n "$ns_b" -br addr show dev "$if_b"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/weft-netns.XXXXXX")

# ---- one pingpong across the link ----

limit=40	# seconds for one program; the programs' own limit is -T 20
status=0

# pair NAME PROGRAM ARGS...: the server on host A, the client on host B.
pair() {
	name=$1
	prog=$2
	shift 2
	echo
	echo "=== $name"
	: >"$tmp/server.err"
	echo "+ ip netns exec $ns_a env LD_LIBRARY_PATH=$lib FI_TCP_IFACE=$if_a" \
		"timeout -k 5 $limit $prog $* -s $addr_a -B 0 &"
	ip netns exec "$ns_a" env LD_LIBRARY_PATH="$lib" FI_TCP_IFACE="$if_a" \
		timeout -k 5 "$limit" "$prog" "$@" -s "$addr_a" -B 0 \
		>"$tmp/server.out" 2>"$tmp/server.err" &
	server=$!
	wait_line "$tmp/server.err" '^listening on port ' "$server" 100
	port=$(listen_port "$tmp/server.err")
	if [ -z "$port" ]; then
		echo "the server reported no port:"
		kill "$server" 2>/dev/null
		wait "$server"
		s=$?
		server=
		sed 's/^/  server: /' "$tmp/server.out" "$tmp/server.err"
		echo "=== $name: FAIL (server exit $s)"
		status=1
		return
	fi
	echo "(server listening on $addr_a port $port)"
	echo "+ ip netns exec $ns_b env LD_LIBRARY_PATH=$lib FI_TCP_IFACE=$if_b" \
		"timeout -k 5 $limit $prog $* -P $port $addr_a"
	# in the background, so that a signal to this script is taken at once
	ip netns exec "$ns_b" env LD_LIBRARY_PATH="$lib" FI_TCP_IFACE="$if_b" \
		timeout -k 5 "$limit" "$prog" "$@" -P "$port" "$addr_a" &
	wait $!
	c=$?
	# the server ends right after the client; bound the wait, then stop it
	i=0
	while kill -0 "$server" 2>/dev/null && [ $i -lt 50 ]; do
		sleep 0.1
		i=$((i + 1))
	done
	if kill -0 "$server" 2>/dev/null; then
		echo "+ kill $server (the server did not end with the client)"
		kill "$server" 2>/dev/null
	fi
	wait "$server"
	s=$?
	server=
	grep -v '^listening on port' "$tmp/server.err" | sed 's/^/  server: /'
	if [ $s = 0 ] && [ $c = 0 ]; then
		echo "=== $name: pass"
	else
		[ $s = 124 ] || [ $c = 124 ] && echo "(124: timed out after $limit s)"
		echo "=== $name: FAIL (server exit $s, client exit $c)"
		status=1
	fi
}

pair "fi_rdm_tagged_pingpong -p tcp (rdm), $ns_a -> $ns_b" "$rdm_pp" \
	-p tcp -v -S 1,4k,64k,1m -I 100 -w 2 -T 20
pair "fi_msg_pingpong -p tcp -e msg, $ns_a -> $ns_b" "$msg_pp" \
	-p tcp -e msg -v -S 1,4k,64k,1m -I 100 -w 2 -T 20

pair "fi_rpc -p tcp;ofi_rxm -o multi, $ns_a -> $ns_b" "$rpc" \
	-p "tcp;ofi_rxm" -o multi -I 200 -W 8 -S 1,4k,64k,1m -T 20

# The same with the server killed while the client has RPCs in flight.
rpc_kill() {
	name="fi_rpc -p tcp;ofi_rxm -o multi-kill, $ns_a -> $ns_b"
	echo
	echo "=== $name"
	: >"$tmp/server.err"
	: >"$tmp/client.err"
	set -- -p "tcp;ofi_rxm" -o multi-kill -I 100 -W 8 -S 4k,1m -T 20
	echo "+ ip netns exec $ns_a env LD_LIBRARY_PATH=$lib FI_TCP_IFACE=$if_a" \
		"timeout -k 5 $limit $rpc $* -s $addr_a -B 0 &"
	ip netns exec "$ns_a" env LD_LIBRARY_PATH="$lib" FI_TCP_IFACE="$if_a" \
		timeout -k 5 "$limit" "$rpc" "$@" -s "$addr_a" -B 0 \
		>"$tmp/server.out" 2>"$tmp/server.err" &
	server=$!
	wait_line "$tmp/server.err" '^listening on port ' "$server" 100
	port=$(listen_port "$tmp/server.err")
	if [ -z "$port" ]; then
		kill "$server" 2>/dev/null
		wait "$server"
		server=
		sed 's/^/  server: /' "$tmp/server.out" "$tmp/server.err"
		echo "=== $name: FAIL (the server reported no port)"
		status=1
		return
	fi
	echo "+ ip netns exec $ns_b env LD_LIBRARY_PATH=$lib FI_TCP_IFACE=$if_b" \
		"timeout -k 5 $limit $rpc $* -P $port $addr_a &"
	ip netns exec "$ns_b" env LD_LIBRARY_PATH="$lib" FI_TCP_IFACE="$if_b" \
		timeout -k 5 "$limit" "$rpc" "$@" -P "$port" "$addr_a" \
		>"$tmp/client.out" 2>"$tmp/client.err" &
	client=$!
	killed=
	i=0
	while [ $i -lt 300 ] && kill -0 "$client" 2>/dev/null; do
		if grep -q '^rpcs in flight' "$tmp/client.err" &&
		   grep -q '^server stalled, pid ' "$tmp/server.err"; then
			spid=$(sed -n 's/^server stalled, pid \([0-9][0-9]*\)$/\1/p' "$tmp/server.err")
			echo "+ kill -KILL $spid (the server, RPCs in flight)"
			kill -KILL "$spid" && killed=yes
			break
		fi
		sleep 0.1
		i=$((i + 1))
	done
	wait "$client"
	c=$?
	kill "$server" 2>/dev/null
	wait "$server"
	server=
	sed 's/^/  server: /' "$tmp/server.out"
	grep -v '^listening on port' "$tmp/server.err" | sed 's/^/  server: /'
	sed 's/^/  client: /' "$tmp/client.out" "$tmp/client.err"
	if [ $c = 0 ] && [ -n "$killed" ]; then
		echo "=== $name: pass"
	else
		echo "=== $name: FAIL (client exit $c${killed:+, server killed})"
		status=1
	fi
}
rpc_kill

# coll_job N A ARGS...: fi_coll with N ranks, ranks 0 .. A-1 on host A
# (rank 0 holds the job's out-of-band socket), the others on host B.
coll_job() {
	n=$1
	on_a=$2
	shift 2
	name="fi_coll -p tcp -n $n ($on_a on $ns_a, $((n - on_a)) on $ns_b) $*"
	echo
	echo "=== $name"
	: >"$tmp/coll0.err"
	echo "+ ip netns exec $ns_a env LD_LIBRARY_PATH=$lib FI_TCP_IFACE=$if_a" \
		"timeout -k 5 $limit $coll -p tcp -n $n -r 0 -s $addr_a -O $addr_a -P 0 $* &"
	ip netns exec "$ns_a" env LD_LIBRARY_PATH="$lib" FI_TCP_IFACE="$if_a" \
		timeout -k 5 "$limit" "$coll" -p tcp -n "$n" -r 0 -s "$addr_a" \
		-O "$addr_a" -P 0 "$@" >"$tmp/coll0.out" 2>"$tmp/coll0.err" &
	server=$!
	wait_line "$tmp/coll0.err" '^listening on port ' "$server" 100
	port=$(listen_port "$tmp/coll0.err")
	if [ -z "$port" ]; then
		kill "$server" 2>/dev/null
		wait "$server"
		server=
		sed 's/^/  rank 0: /' "$tmp/coll0.out" "$tmp/coll0.err"
		echo "=== $name: FAIL (rank 0 reported no port)"
		status=1
		return
	fi
	pids=
	r=1
	while [ $r -lt "$n" ]; do
		if [ $r -lt "$on_a" ]; then
			ns=$ns_a; ifc=$if_a; src=$addr_a
		else
			ns=$ns_b; ifc=$if_b; src=$addr_b
		fi
		echo "+ ip netns exec $ns env LD_LIBRARY_PATH=$lib FI_TCP_IFACE=$ifc" \
			"timeout -k 5 $limit $coll -p tcp -n $n -r $r -s $src -O $addr_a -P $port $* &"
		ip netns exec "$ns" env LD_LIBRARY_PATH="$lib" FI_TCP_IFACE="$ifc" \
			timeout -k 5 "$limit" "$coll" -p tcp -n "$n" -r "$r" \
			-s "$src" -O "$addr_a" -P "$port" "$@" \
			>"$tmp/coll$r.out" 2>"$tmp/coll$r.err" &
		pids="$pids $!"
		r=$((r + 1))
	done
	bad=
	for p in $pids; do
		wait "$p" || bad="$bad $p"
	done
	wait "$server" || bad="$bad rank0"
	server=
	r=0
	while [ $r -lt "$n" ]; do
		grep -v '^listening on port' "$tmp/coll$r.err" | sed "s/^/  rank $r: /"
		r=$((r + 1))
	done
	sed 's/^/  rank 0: /' "$tmp/coll0.out"
	if [ -z "$bad" ]; then
		echo "=== $name: pass"
	else
		echo "=== $name: FAIL (exit status not 0:$bad)"
		status=1
	fi
}
coll_job 4 2 -I 50 -S 4
coll_job 4 2 -I 5 -S 20000
coll_job 3 2 -I 50 -S 7

echo
[ $status = 0 ] && echo "PASS: tcp across two network namespaces" ||
	echo "FAIL: tcp across two network namespaces"
exit $status
