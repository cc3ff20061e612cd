#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# The main job: what weft offers on this machine (fi_info), then a pingpong
# over each provider weft has built, with every byte verified.  Run from the
# top of a built tree (or set WEFT_BUILD to the build directory).
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
bld=${WEFT_BUILD:-$top}
[ -x "$bld/util/fi_info" ] || { echo "build weft first (./configure && make)"; exit 1; }
# weft's own library, whatever else the library path holds.
export LD_LIBRARY_PATH="$bld/.libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
info=$bld/util/.libs/fi_info
[ -x "$info" ] || info=$bld/util/fi_info
pp=$bld/fabtests/.libs/fi_rdm_tagged_pingpong
[ -x "$pp" ] || pp=$bld/fabtests/fi_rdm_tagged_pingpong
# Providers of datagram endpoints alone (udp): fi_msg_pingpong -e dgram,
# sizes up to a datagram; a lost one fails the run after -T seconds.
dgpp=$bld/fabtests/.libs/fi_msg_pingpong
[ -x "$dgpp" ] || dgpp=$bld/fabtests/fi_msg_pingpong

echo "== fi_info -l (providers in weft's libfabric.so.1)"
"$info" -l
echo
echo "== fi_info"
"$info"
# (the hooks it lists, ofi_hook_*, wrap a provider: no pingpong of their own)
provs=$("$info" -l 2>/dev/null | sed -n 's/^\([a-z0-9_]*\):$/\1/p' |
	grep -v '^ofi_')
if [ -z "$provs" ]; then
	echo
	echo "weft has no provider built: no pingpong to run."
	exit 0
fi

# pingpong PROVIDER rdm|dgram [VAR=VALUE]: server and client on this
# host, every byte checked.
pingpong() {
	p=$1
	shift
	prog=$pp
	args="-S 1,64,4k,64k,1m"
	if [ "$1" = dgram ]; then
		prog=$dgpp
		args="-e dgram -S 1,64,1k,1400"
	fi
	shift
	echo
	echo "== ${*:+$* }${prog##*/} -p $p $args -v (server and client on this host)"
	log=$(mktemp)
	# shellcheck disable=SC2086
	env "$@" timeout 120 "$prog" -p "$p" -B 0 -v $args -T 20 >/dev/null 2>"$log" &
	srv=$!
	port=
	for i in $(seq 100); do
		port=$(sed -n 's/^listening on port \([0-9]*\).*/\1/p' "$log")
		[ -n "$port" ] && break
		sleep 0.1
	done
	if [ -z "$port" ]; then
		echo "the server did not start:"
		cat "$log"
		kill "$srv" 2>/dev/null
		status=1
		rm -f "$log"
		return
	fi
	# shellcheck disable=SC2086
	if ! env "$@" timeout 120 "$prog" -p "$p" -P "$port" -v $args \
		-T 20 127.0.0.1; then
		echo "pingpong over $p${*:+ ($*)} FAILED"
		status=1
	fi
	wait "$srv" || status=1
	rm -f "$log"
}

status=0
for p in $provs; do
	# A provider with nothing to offer here (verbs without an RDMA
	# device) says why; verbs then runs on soft-RDMA devices in a VM.
	if ! "$info" -p "$p" >/dev/null 2>&1; then
		echo
		echo "== $p: $("$info" -p "$p" 2>&1 | sed -n "s/^ *$p: //p" | head -n 1)"
		if [ "$p" = verbs ]; then
			bash "$top/tests/vm/main-job.sh" "$bld"
			rc=$?
			[ $rc = 0 ] || [ $rc = 77 ] || status=1
		fi
		continue
	fi
	# RDM where the provider has it, and datagrams where it has them
	# (udp has both).
	"$info" -p "$p" -t FI_EP_RDM >/dev/null 2>&1 && pingpong "$p" rdm
	"$info" -p "$p" -t FI_EP_DGRAM >/dev/null 2>&1 && pingpong "$p" dgram
	# tcp reaches a peer on its own host through shared memory: once
	# more through its sockets.
	[ "$p" = tcp ] && pingpong tcp rdm FI_TCP_SHM=0
done
exit $status
