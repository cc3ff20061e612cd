#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# A verbs RDM peer killed (SIGKILL) while we talk to it: the conformance
# suite's proc_peer_killed (sends to it end in errors, a receive from it
# cancels) and proc_peer_restart (a new process under the dead one's name
# is reached), on each device, through the device (FI_VERBS_SHM=0).  The
# survivor must also free the dead connection's QP: its log
# (FI_LOG_LEVEL=info) says so, once per connection freed.  On siw that
# needs the provider's own flush of what the device never completes.
# Then the same two cases with the shared memory verbs RDM embeds for peers
# of its host (FI_VERBS_SHM=1, the default): there the peer is reached, and
# its death and its successor found, through shm.
. "$(dirname "$0")/lib.sh"
prog=$bld/tests/prov/conformance
[ -x "$prog" ] || skip "$prog is not built (make check builds it)"
fail=0
for d in $devs; do
	dev=${d%%:*} ip=${d#*:}
	for c in proc_peer_killed proc_peer_restart; do
		CF_NODE=$ip FI_VERBS_DEVICE_NAME=$dev FI_VERBS_SHM=0 \
			FI_LOG_LEVEL=info timeout 200 "$prog" -p verbs -c $c \
			>"$tmp/out" 2>&1
		rc=$?
		freed=$(grep -c "dead connection's QP freed" "$tmp/out")
		grep -E '^(PASS|FAIL|SKIP)' "$tmp/out"
		echo "$dev $c: exit $rc, dead QPs freed: $freed"
		if [ $rc -ne 0 ] || ! grep -q '^PASS' "$tmp/out"; then
			grep -v 'libfabric:.*<info>' "$tmp/out" | tail -n 20
			fail=1
		elif [ "$freed" -lt 1 ]; then
			echo "FAIL: $dev $c: the survivor kept the dead peer's QP"
			grep 'verbs' "$tmp/out" | tail -n 20
			fail=1
		fi
	done
	for c in proc_peer_killed proc_peer_restart; do
		CF_NODE=$ip FI_VERBS_DEVICE_NAME=$dev FI_VERBS_SHM=1 \
			timeout 200 "$prog" -p verbs -c $c >"$tmp/out" 2>&1
		rc=$?
		grep -E '^(PASS|FAIL|SKIP)' "$tmp/out"
		echo "$dev $c through shm: exit $rc"
		if [ $rc -ne 0 ] || ! grep -q '^PASS' "$tmp/out"; then
			tail -n 20 "$tmp/out"
			fail=1
		fi
	done
done
exit $fail
