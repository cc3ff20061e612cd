#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
#
# fi_multinode_rma over loopback: 3 and 4 ranks write into each other
# between barriers of messages (tagged, as fabtests' multinode test has
# them since libfabric 1.18, and untagged, as in 1.17), over shm, tcp (its
# peers of one host through shared memory) and tcp with FI_TCP_SHM=0.
# Each run is bounded: the programs' own -T (a wait that sees nothing for
# that long fails, naming where it waited) and timeout(1) around both;
# the server is stopped by its PID.  A provider this build lacks is not
# run; skips (77) when nothing ran.
set -u

bld=${top_builddir:-$(cd "$(dirname "$0")/../.." && pwd)}
. "${top_srcdir:-$(dirname "$0")/../..}/tests/lib.sh"
mn=$(find_prog "$bld/fabtests" fi_multinode_rma) || exit 99
info=$(find_prog "$bld/util" fi_info) || exit 99
command -v timeout >/dev/null 2>&1 || skip "no timeout(1)"
LD_LIBRARY_PATH=${WEFT_MN_LIB:-$bld/.libs}
export LD_LIBRARY_PATH
clear_fi_env

tmp=$(mktemp -d "${TMPDIR:-/tmp}/weft-mn.XXXXXX") || exit 99
server=
cleanup() {
	[ -n "$server" ] && kill -KILL "$server" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

list_provs "$info"

# A loopback address of this run's own: shm names its regions after it.
host=127.$((($$ >> 16) & 255)).$((($$ >> 8) & 255)).$(($$ & 255))
limit=120	# seconds for a job; a wait may last -T (20) of them
args="-T 20 -I ${WEFT_MN_ITERS:-30} -S 64,4k"
ran=0
fails=0

# run NAME RANKS PROV OP [ENV=VALUE]
run() {
	name=$1 n=$2 p=$3 op=$4 env=${5:-}
	echo
	echo "=== $name"
	: >"$tmp/s.err"
	echo "+ ${env:+$env }fi_multinode_rma -p $p -n $n -o $op $args -s $host -B 0"
	env $env "$mn" -p "$p" -n "$n" -o "$op" $args -s "$host" -B 0 \
		>"$tmp/s.out" 2>"$tmp/s.err" &
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
	start=$(date +%s)
	env $env timeout -k 5 "$limit" "$mn" -p "$p" -n "$n" -o "$op" $args \
		-P "$port" "$host" >"$tmp/c.out" 2>"$tmp/c.err"
	c=$?
	i=0
	while kill -0 "$server" 2>/dev/null && [ $i -lt 100 ]; do
		sleep 0.1
		i=$((i + 1))
	done
	kill -KILL "$server" 2>/dev/null
	wait "$server"
	s=$?
	server=
	cat "$tmp/s.out" "$tmp/s.err" "$tmp/c.out" "$tmp/c.err"
	if [ "$s" = 77 ] && [ "$c" = 77 ]; then
		echo "=== $name: not supported"
		return
	fi
	ran=$((ran + 1))
	if [ "$s" != 0 ] || [ "$c" != 0 ]; then
		echo "=== $name: FAIL (server $s, client $c)"
		fails=$((fails + 1))
	else
		echo "=== $name: pass ($(( $(date +%s) - start )) s)"
	fi
}

for n in 3 4; do
	for op in tagged untagged; do
		if has_prov shm; then
			run "shm $n ranks $op" "$n" shm "$op"
		fi
		if has_prov tcp; then
			run "tcp $n ranks $op" "$n" tcp "$op"
			run "tcp FI_TCP_SHM=0 $n ranks $op" "$n" tcp "$op" \
				FI_TCP_SHM=0
		fi
	done
done

echo
echo "$ran ran, $fails failed"
[ $ran -gt 0 ] || skip "no provider to run over"
[ $fails -eq 0 ]
