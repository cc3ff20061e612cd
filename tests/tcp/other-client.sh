#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# Another OFI client over weft's tcp and udp: the fi_pingpong program of the
# system's libfabric tools (built against upstream's headers and library),
# run over weft's libfabric.so.1: tcp MSG and RDM, every size up to 6 MiB,
# and udp's datagrams (every size up to what it takes), data checked (-c).  Skips when fi_pingpong is not installed.
set -u
pp=$(command -v fi_pingpong) || { echo "no fi_pingpong installed: skipped"; exit 77; }
# A program built without ASan cannot load a library built with it.
if [ "${WEFT_SANITIZERS:-}" = yes ]; then
	echo "skipped under sanitizers: fi_pingpong is not built with them (the plain run covers it)"
	exit 77
fi
LD_LIBRARY_PATH=${top_builddir:-.}/.libs
export LD_LIBRARY_PATH
out=$(mktemp)
trap 'rm -f "$out"' EXIT
status=0
k=0
for pe in tcp:msg tcp:rdm udp:dgram; do
	p=${pe%%:*} e=${pe#*:}
	# A control port of this run's own, from its pid.
	port=$((20000 + ($$ * 2 + k) % 20000))
	k=$((k + 1))
	echo "+ fi_pingpong -p $p -e $e -B $port -I 20 -S all -c (server and client)"
	timeout -k 5 90 "$pp" -p $p -e $e -B $port -I 20 -S all -c >/dev/null 2>&1 &
	srv=$!
	# fi_pingpong's server says nothing when it listens: wait until the
	# port is in LISTEN (/proc/net/tcp), not a fixed time a busy host
	# may outlast.
	hex=$(printf '%04X' $port)
	i=0
	until awk -v p=":$hex" '$4 == "0A" && substr($2, length($2) - 4) == p \
		{ f = 1 } END { exit !f }' /proc/net/tcp /proc/net/tcp6 2>/dev/null; do
		i=$((i + 1))
		if [ $i -gt 300 ] || ! kill -0 $srv 2>/dev/null; then
			echo "the $e server did not listen on port $port"
			break
		fi
		sleep 0.1
	done
	if timeout -k 5 90 "$pp" -p $p -e $e -P $port -I 20 -S all -c \
		127.0.0.1 >"$out" 2>&1; then
		tail -n 2 "$out"
		echo "fi_pingpong -p $p -e $e over weft: pass"
	else
		tail -n 5 "$out"
		echo "fi_pingpong -p $p -e $e over weft: FAIL"
		status=1
	fi
	wait $srv || { echo "the $e server failed"; status=1; }
done
exit $status
