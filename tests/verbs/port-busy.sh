#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# iWARP: siw binds the TCP socket of a connection to the local port
# rdma_cm chose for it, from a port space of its own; when TCP holds that
# port, rdma_connect fails with EADDRINUSE.  verbs RDM must then connect
# again from another port, not fail the transmits waiting for the peer;
# an FI_EP_MSG fi_connect must take a port TCP has free.  Here the
# ephemeral range is cut to 10 ports and half of them are held by TCP
# listeners (tests/verbs/hold_ports); proc_pingpong (RDM: 1020 verified
# round trips between two processes) and cm_connect (MSG: a connection
# with private data, messages both ways) must each pass 6 times in a
# row.  The log (FI_LOG_LEVEL=info) counts the RDM connects made again.
# vm-lane: alone (tests/vm/guest.sh: it narrows the whole VM's port range)
. "$(dirname "$0")/lib.sh"
prog=$bld/tests/prov/conformance
hold=$bld/tests/verbs/hold_ports
[ -x "$prog" ] && [ -x "$hold" ] || skip "$prog or $hold is not built (make check builds them)"
range=/proc/sys/net/ipv4/ip_local_port_range
[ -w "$range" ] || skip "$range is not writable (not root, or not the test VM)"
iw=
for d in $devs; do
	grep -q RNIC "/sys/class/infiniband/${d%%:*}/node_type" 2>/dev/null &&
		iw="$iw $d"
done
[ -n "$iw" ] || skip "no iWARP device among $devs"
old=$(cat $range)
first=41000
fail=0 again=0
for d in $iw; do
	dev=${d%%:*} ip=${d#*:}
	echo "$first $((first + 9))" >$range
	"$hold" "$ip" $first 5 >"$tmp/hold" &
	hp=$!
	for _ in $(seq 50); do [ -s "$tmp/hold" ] && break; sleep 0.1; done
	echo "$dev: $(cat "$tmp/hold") of ports $first-$((first + 4)), range $first-$((first + 9))"
	for c in proc_pingpong cm_connect; do
		for i in 1 2 3 4 5 6; do
			CF_NODE=$ip FI_VERBS_DEVICE_NAME=$dev FI_VERBS_SHM=0 \
				FI_LOG_LEVEL=info timeout 120 "$prog" -p verbs -c $c \
				>"$tmp/out" 2>&1
			rc=$?
			n=$(grep -c "local port busy" "$tmp/out")
			again=$((again + n))
			if [ $rc -ne 0 ] || ! grep -q '^PASS' "$tmp/out"; then
				echo "FAIL: $dev $c run $i: exit $rc"
				grep -v '<info>' "$tmp/out" | tail -n 15
				echo "  (the log's last lines on connections)"
				grep -i 'connect\|port\|rdma_cm\|refus\|reject\|error' \
					"$tmp/out" | tail -n 30 | sed 's/^/    /'
				fail=1
			else
				echo "PASS: $dev $c run $i ($n connect(s) made again)"
			fi
		done
	done
	kill $hp
	wait $hp 2>/dev/null
	first=$((first + 100))
done
echo "$old" >$range
echo "connects made again after a busy port: $again"
exit $fail
