#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
#
# tcp RDM endpoints of several processes of one host (local_peers.c): one
# server, three clients reached through shared memory and one started with
# FI_TCP_SHM=0 (reached through sockets), tagged messages of 8 B to 1 MiB
# to directed and to FI_ADDR_UNSPEC receives, replies, RMA and atomics.
# Meanwhile:
#   - a shm-reached client ("v") is killed (SIGKILL) with the server's
#     1 MiB sends to it outstanding and a directed receive posted for it:
#     the sends fail, the server serves on, and an endpoint started again
#     at its address is reached both ways (skipped when the port cannot be
#     bound again);
#   - two more endpoints are killed, and a new shm endpoint, then a new
#     tcp one, must remove the region and the bell each left (the sweep).
# Asserted from outside: the server's and the shm clients' regions exist
# and the server maps the clients' (shared memory is used), the
# FI_TCP_SHM=0 client has no region and maps none and talks to the
# server over an established socket; at the end no region or bell of a
# process of this run is left.
#
# Two copies of all of it run at once, to show they do not disturb each
# other.  Every process is bounded by timeout(1) and stopped by its PID.
# Skips (77), saying why, without /dev/shm or timeout(1), or without tcp.
set -u

prog=${top_builddir:-.}/tests/tcp/local_peers
unset FI_PROVIDER FI_TCP_IFACE FI_TCP_SHM
uid=$(id -u)

skip() {
	echo "SKIP: $*"
	exit 77
}

# ---- one copy -----------------------------------------------------------

one() {
	dir=$(mktemp -d "${TMPDIR:-/tmp}/local-peers.XXXXXX") || exit 99
	wrappers=""
	trap 'for p in $wrappers; do kill "$p" 2>/dev/null; done; rm -rf "$dir"' EXIT
	trap 'exit 1' INT TERM
	ns=$(readlink /proc/self/ns/net | sed 's/.*\[\([0-9]*\)\].*/\1/')
	nsx=$(printf %x "$ns")
	status=0

	fail() {
		echo "FAIL: $*"
		status=1
	}
	# run NAME [ENV=VAL...] ROLE ARGS: in the background, bounded.
	run() {
		n=$1
		shift
		env "$@" >"$dir/$n.out" 2>&1 &
		eval "w_$n=$!"
		wrappers="$wrappers $!"
	}
	wait_for() {	# file [seconds]: while the server runs
		i=0
		while [ ! -e "$dir/$1" ]; do
			kill -0 "$w_srv" 2>/dev/null ||
				{ echo "FAIL: the server ended before $1"; return 1; }
			i=$((i + 1))
			[ $i -le $((${2:-120} * 10)) ] || { echo "FAIL: no $1 within ${2:-120} s"; return 1; }
			sleep 0.1
		done
	}
	pid_of() { cut -d' ' -f1 "$dir/$1.info"; }
	name_of() { echo "$nsx-4-7f000001-$(cut -d' ' -f2 "$dir/$1.info")"; }
	region() { echo "/dev/shm/weft-shm.$uid.$(name_of "$1")"; }
	bell() { echo "/dev/shm/weft-bell.$uid.$(name_of "$1")"; }
	maps() {	# process, name: does it map that region?
		grep -q "weft-shm\.$uid\.$(name_of "$2")\$" "/proc/$(pid_of "$1")/maps"
	}
	# Has the process an established socket to or from the server's port?
	tcp_with() {
		port=$(printf %04X "0x$(cut -d' ' -f2 "$dir/srv.info")")
		inodes=$(ls -l "/proc/$(pid_of "$1")/fd" 2>/dev/null |
			sed -n 's/.*socket:\[\([0-9]*\)\].*/\1/p' | tr '\n' ' ')
		cat /proc/net/tcp /proc/net/tcp6 2>/dev/null |
			awk -v p=":$port" -v inodes=" $inodes" '
				$4 == "01" && index(inodes, " " $10 " ") &&
				(substr($2, length($2) - 4) == p ||
				 substr($3, length($3) - 4) == p) { f = 1 }
				END { exit !f }'
	}
	show() {
		for f in "$dir"/*.out; do
			[ -s "$f" ] && sed "s|^|  $(basename "$f" .out): |" "$f"
		done
	}
	bounded() { echo timeout -k 5 150 "$prog"; }

	run srv $(bounded) server "$dir" 4
	wait_for srv.info 60 || { show; return 1; }
	run c0 $(bounded) client "$dir" 0
	run c1 $(bounded) client "$dir" 1
	run c2 $(bounded) client "$dir" 2
	run c3 FI_TCP_SHM=0 $(bounded) client "$dir" 3
	run v $(bounded) victim "$dir"
	run vb $(bounded) idle "$dir" vb
	run vc $(bounded) idle "$dir" vc
	wait_for go || { show; return 1; }

	# The transport each peer is reached by.
	[ -e "$(region srv)" ] || fail "the server has no region $(region srv)"
	for c in c0 c1 c2 v; do
		[ -e "$(region $c)" ] || fail "$c has no region $(region $c)"
	done
	[ -e "$(region c3)" ] && fail "the FI_TCP_SHM=0 client has a region"
	grep -q "weft-shm\.$uid\." "/proc/$(pid_of c3)/maps" &&
		fail "the FI_TCP_SHM=0 client maps a region"

	# The victim dies with the server's sends to it outstanding.
	if wait_for v.armed; then
		maps srv v || fail "the server does not send to the victim through its region"
		kill -KILL "$(pid_of v)"
		{ wait "$w_v"; } 2>/dev/null
		echo "killed the victim ($(pid_of v), port $(cut -d' ' -f2 "$dir/v.info"))"
	fi

	# Endpoints killed with nothing going on: a new endpoint sweeps what
	# they left.  (A copy of this test running beside may sweep first.)
	for k in "vb shm" "vc tcp"; do
		set -- $k
		wait_for "$1.info" || continue
		kill -KILL "$(pid_of "$1")"
		{ wait "$(eval echo \$w_$1)"; } 2>/dev/null
		if [ -e "$(region "$1")" ] && [ -e "$(bell "$1")" ]; then
			left="left its region and bell"
		else
			left="(its files were already swept)"
		fi
		FI_LOG_LEVEL=info timeout -k 5 60 "$prog" probe "$2" >"$dir/probe-$1.out" 2>&1 ||
			{ fail "the $2 probe failed"; cat "$dir/probe-$1.out"; }
		[ -e "$(region "$1")" ] && fail "$1 killed: a new $2 endpoint left its region"
		[ -e "$(bell "$1")" ] && fail "$1 killed: a new $2 endpoint left its bell"
		echo "$1 killed: $left; a new $2 endpoint removed them"
	done

	if wait_for v.failed; then
		run v2 $(bounded) restart "$dir"
	fi

	if wait_for done; then
		for c in c0 c1 c2; do
			maps srv $c || fail "the server does not reach $c through its region"
			maps $c srv || fail "$c does not reach the server through its region"
			tcp_with $c && fail "$c has a socket open with the server"
		done
		maps srv c3 && fail "the server maps a region for the FI_TCP_SHM=0 client"
		tcp_with c3 || fail "no socket between the server and the FI_TCP_SHM=0 client"
		echo "c0-c2 through shared memory, c3 (FI_TCP_SHM=0) through a socket"
	fi
	: >"$dir/finish"

	for n in srv c0 c1 c2 c3; do
		wait "$(eval echo \$w_$n)"
		rc=$?
		[ $rc = 124 ] && fail "$n timed out (hang)"
		[ $rc = 0 ] || fail "$n exited with $rc"
	done
	if [ -n "${w_v2:-}" ]; then
		wait "$w_v2"
		rc=$?
		case $rc in
		0) ;;
		77) echo "restart at the victim's address: skipped: $(cat "$dir/v2.skip" 2>/dev/null)" ;;
		*) fail "the victim's successor exited with $rc" ;;
		esac
	fi
	wrappers="" # all waited for: their PIDs may be another's now

	# Nothing of this run's processes is left in /dev/shm: a region of
	# one of its names made by one of its pids, or a bell without its
	# region (a copy running beside may reuse a port since, with a
	# region of its own).
	ours=""
	for n in srv c0 c1 c2 c3 v vb vc v2; do
		[ -e "$dir/$n.info" ] && ours="$ours $(pid_of $n)"
	done
	for n in srv c0 c1 c2 v vb vc v2; do
		[ -e "$dir/$n.info" ] || continue
		b=$(bell $n)
		r=$(region $n)
		if [ -e "$b" ] && [ ! -e "$r" ]; then
			fail "the bell of $n is left: $b"
		fi
		[ -e "$r" ] || continue
		p=$(od -An -t d4 -j 16 -N 4 "$r" 2>/dev/null | tr -d ' ')
		for q in $ours; do
			[ "$p" = "$q" ] && fail "the region of $n (pid $p) is left: $r"
		done
	done
	if [ $status = 0 ]; then
		sed 's/^/  /' "$dir/srv.out" "$dir/v2.out" 2>/dev/null
	else
		show
	fi
	return $status
}

if [ "${1:-}" = --one ]; then
	one
	exit $?
fi

[ -d /dev/shm ] && [ -w /dev/shm ] || skip "no writable /dev/shm"
command -v timeout >/dev/null 2>&1 || skip "no timeout(1) to bound the processes"
[ -r /proc/self/ns/net ] || skip "no /proc/self/ns/net (region names need it)"
timeout -k 5 60 "$prog" probe tcp
rc=$?
[ $rc = 77 ] && skip "no tcp endpoint on 127.0.0.1"
[ $rc = 0 ] || { echo "FAIL: a tcp endpoint cannot be opened ($rc)"; exit 1; }
out=$(mktemp -d "${TMPDIR:-/tmp}/local-peers-out.XXXXXX") || exit 99
trap 'rm -rf "$out"' EXIT
sh "$0" --one >"$out/a" 2>&1 &
a=$!
sh "$0" --one >"$out/b" 2>&1 &
b=$!
wait $a
ra=$?
wait $b
rb=$?
sed 's/^/[a] /' "$out/a"
sed 's/^/[b] /' "$out/b"
[ $ra = 77 ] && [ $rb = 77 ] && exit 77
[ $ra = 0 ] && [ $rb = 0 ] && { echo "local peers: pass (two copies at once)"; exit 0; }
exit 1
