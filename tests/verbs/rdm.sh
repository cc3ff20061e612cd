#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# verbs FI_EP_RDM on real RDMA devices: runs inside a machine that has them
# (the RDMA VM: Soft-RoCE and Soft-iWARP).  On each device, a server and a
# client of weft's fabtests, data verified (-v):
#   fi_rdm_tagged_pingpong, fi_rdm_tagged_bw   1 B .. 1 MiB (eager and
#                                              rendezvous, both sides of
#                                              the threshold)
#   fi_rma_bw -o write / read / writedata      1 B .. 1 MiB
#   fi_rma_bw -o write / writedata, 2000 its   the send queue goes round
#   fi_rdm_atomic -o all                       devices with atomics
#   fi_pingpong -e rdm -c (the system's libfabric tools: a foreign client)
#
# Environment:
#   WEFT_BUILDDIR     build tree (libfabric.so.1 in .libs, fabtests/.libs)
#   WEFT_SRCDIR       source tree (unused beyond a sanity check)
#   WEFT_VERBS_DEVS   "dev:ip ...", default "rxe0:10.77.0.1 siw0:10.78.0.1"
#   WEFT_VERBS_ONLY   run only tests whose name contains this
# Exit: 0 every run passed, 77 no device, else failed.
set -u
B=${WEFT_BUILDDIR:-.}
S=${WEFT_SRCDIR:-$B}
DEVS=${WEFT_VERBS_DEVS:-"rxe0:10.77.0.1 siw0:10.78.0.1"}
ONLY=${WEFT_VERBS_ONLY:-}
T=${WEFT_VERBS_TIMEOUT:-120}
FT=$B/fabtests/.libs
[ -x "$FT/fi_rdm_tagged_pingpong" ] || FT=$B/fabtests
[ -d "$S" ] || { echo "no source tree at $S"; exit 1; }
[ -e "$B/.libs/libfabric.so.1" ] || { echo "no library in $B/.libs"; exit 1; }
LD_LIBRARY_PATH=$B/.libs
export LD_LIBRARY_PATH
command -v ibv_devices >/dev/null 2>&1 &&
	[ -n "$(ibv_devices 2>/dev/null | sed -n '3,$p')" ] ||
	{ echo "no RDMA device: skipped"; exit 77; }

tmp=$(mktemp -d)
srv=
cleanup() {
	[ -n "$srv" ] && kill "$srv" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT

pass=0
fail=0
skip=0

# The server's side-channel port, from its "listening on port N" line.
server_port() {
	i=0
	while [ $i -lt 100 ]; do
		p=$(sed -n 's/.*listening on port \([0-9]*\).*/\1/p' "$1" | head -n 1)
		[ -n "$p" ] && { echo "$p"; return 0; }
		kill -0 "$2" 2>/dev/null || return 1
		sleep 0.1
		i=$((i + 1))
	done
	return 1
}

# run NAME IP PROGRAM ARGS...: server and client of PROGRAM (weft's
# fabtests: -B 0 / -P port), both bounded, server stopped by PID.
run() {
	name=$1 ip=$2 prog=$3
	shift 3
	case "$name" in *"$ONLY"*) ;; *) return 0 ;; esac
	echo "+ $name: $prog $* (server -s $ip -B 0; client -P <port> $ip)"
	timeout -k 5 "$T" "$prog" "$@" -s "$ip" -B 0 >"$tmp/srv.out" \
		2>"$tmp/srv.err" &
	srv=$!
	if ! port=$(server_port "$tmp/srv.err" "$srv"); then
		wait "$srv"
		rc=$?
		srv=
		if [ $rc -eq 77 ]; then
			echo "SKIP: $name (server: not supported)"
			skip=$((skip + 1))
			return
		fi
		cat "$tmp/srv.err" | tail -n 5
		echo "FAIL: $name (server did not start, status $rc)"
		fail=$((fail + 1))
		return
	fi
	timeout -k 5 "$T" "$prog" "$@" -P "$port" "$ip" >"$tmp/cli.out" 2>&1
	crc=$?
	wait "$srv"
	src=$?
	srv=
	if [ $crc -eq 0 ] && [ $src -eq 0 ]; then
		tail -n 3 "$tmp/cli.out"
		echo "PASS: $name"
		pass=$((pass + 1))
	elif [ $crc -eq 77 ] && { [ $src -eq 77 ] || [ $src -eq 0 ]; }; then
		echo "SKIP: $name (not supported)"
		skip=$((skip + 1))
	else
		tail -n 8 "$tmp/cli.out"
		tail -n 8 "$tmp/srv.err"
		echo "FAIL: $name (client $crc, server $src)"
		fail=$((fail + 1))
	fi
}

# A foreign client: the system's fi_pingpong (upstream's fabtests tools).
run_pp() {
	name=$1 ip=$2 dev=$3
	case "$name" in *"$ONLY"*) ;; *) return 0 ;; esac
	pp=$(command -v fi_pingpong) || {
		echo "SKIP: $name (no fi_pingpong installed)"
		skip=$((skip + 1))
		return
	}
	# A program not built with ASan cannot load a library that is: under
	# sanitizers, the plain build beside it when there is one
	# (WEFT_PLAIN_BUILDDIR, tests/vm/guest.sh), else a skip.
	lib=$LD_LIBRARY_PATH
	if [ "${WEFT_SANITIZERS:-}" = yes ]; then
		if [ -z "${WEFT_PLAIN_BUILDDIR:-}" ]; then
			echo "SKIP: $name (under sanitizers: $pp is not built with them)"
			skip=$((skip + 1))
			return
		fi
		lib=$WEFT_PLAIN_BUILDDIR/.libs
		echo "($name: over the plain build, $lib)"
	fi
	port=$((20000 + ($$ * 7 + pass + fail + skip) % 20000))
	# Every size up to 6 MiB, 5 round trips each: emulated siw took over
	# 120 s for 20 each on a busy host (its output, buffered, was lost).
	echo "+ $name: fi_pingpong -p verbs -e rdm -d $dev -B $port -I 5 -S all -c (server; client -P $port $ip)"
	LD_LIBRARY_PATH=$lib timeout -k 5 "$T" "$pp" -p verbs -e rdm -d "$dev" -B "$port" -I 5 \
		-S all -c >"$tmp/srv.out" 2>&1 &
	srv=$!
	# Its control socket says nothing when it listens: a client that
	# came too early (connection refused, 111) tries again.
	tries=0
	while :; do
		sleep 1
		LD_LIBRARY_PATH=$lib timeout -k 5 "$T" "$pp" -p verbs -e rdm -d "$dev" -P "$port" \
			-I 5 -S all -c "$ip" >"$tmp/cli.out" 2>&1
		crc=$?
		tries=$((tries + 1))
		[ $crc -eq 111 ] && [ $tries -lt 5 ] &&
			kill -0 "$srv" 2>/dev/null || break
	done
	wait "$srv"
	src=$?
	srv=
	if [ $crc -eq 0 ] && [ $src -eq 0 ]; then
		tail -n 2 "$tmp/cli.out"
		echo "PASS: $name"
		pass=$((pass + 1))
	else
		tail -n 8 "$tmp/cli.out"
		tail -n 8 "$tmp/srv.out"
		echo "FAIL: $name (client $crc, server $src)"
		fail=$((fail + 1))
	fi
}

SIZES=1,64,4k,8k,8193,64k,1m
for d in $DEVS; do
	dev=${d%%:*}
	ip=${d#*:}
	if ! ibv_devices 2>/dev/null | grep -qw "$dev"; then
		echo "SKIP: $dev (no such device)"
		skip=$((skip + 1))
		continue
	fi
	c="-p verbs -e rdm -d $dev"
	run "$dev tagged_pingpong" "$ip" "$FT/fi_rdm_tagged_pingpong" $c \
		-S $SIZES -I 50 -v
	run "$dev tagged_bw" "$ip" "$FT/fi_rdm_tagged_bw" $c -S $SIZES \
		-I 50 -v
	run "$dev rdm_pingpong" "$ip" "$FT/fi_rdm_pingpong" $c -S $SIZES \
		-I 20 -v
	for o in write read writedata; do
		run "$dev rma_bw_$o" "$ip" "$FT/fi_rma_bw" $c -o $o \
			-S 1,4k,64k,1m -I 20 -v
	done
	# Long enough to go round the send queue many times (iWARP's write
	# fences once took a stale entry of a reused slot, and, behind the
	# message that carries remote CQ data, a zero-length one was refused):
	# the count is what matters, so small sizes, emulated in seconds.
	for o in write writedata; do
		run "$dev rma_bw_${o}_long" "$ip" "$FT/fi_rma_bw" $c -o $o \
			-S 8,4k -I 2000 -w 20 -v
	done
	run "$dev atomic" "$ip" "$FT/fi_rdm_atomic" $c -o all -I 20
	run_pp "$dev fi_pingpong" "$ip" "$dev"
done
echo "verbs rdm: $pass passed, $fail failed, $skip skipped"
[ $fail -eq 0 ] || exit 1
[ $pass -gt 0 ] || exit 77
exit 0
