#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# verbs RDM endpoints on one host reach each other through shared memory
# (weft/shm_local.h), unless FI_VERBS_SHM=0.  fi_rdm_pingpong between two
# processes on rxe0, data verified (-v), twice, checked from outside:
#   default          each process maps a weft-shm region (/proc/PID/maps)
#                    and the device carries almost nothing (rxe's
#                    sent_pkts grows by less than one packet a message)
#   FI_VERBS_SHM=0   no process maps a region, and the device carries
#                    every message (sent_pkts grows by at least that)
# and the conformance cases on remote CQ data through shared memory: the
# domain's cq_data_size (4 bytes on verbs) holds there too.
# Needs a Soft-RoCE device (its hw_counters); skips, saying why, without.
. "$(dirname "$0")/lib.sh"
unset FI_VERBS_SHM
ft=$bld/fabtests
[ -x "$ft/fi_rdm_pingpong" ] || { echo "no $ft/fi_rdm_pingpong: build first"; exit 99; }
dev= ip=
for d in $devs; do
	case $d in rxe*) dev=${d%%:*} ip=${d#*:}; break ;; esac
done
[ -n "$dev" ] || skip "no Soft-RoCE device in WEFT_VERBS_DEVS ($devs)"
cnt=/sys/class/infiniband/$dev/ports/1/hw_counters/sent_pkts
[ -r "$cnt" ] || skip "no $cnt to count the device's packets"
command -v pgrep >/dev/null || skip "no pgrep(1) to find the programs under timeout"
if [ ! -d /dev/shm ]; then
	mkdir -p /dev/shm && mount -t tmpfs -o mode=1777 tmpfs /dev/shm ||
		skip "no /dev/shm and none can be mounted"
fi
fail=0

# maps_region PID: the process, or a child of it (the program under
# timeout(1)), maps a shm region of this user.
maps_region() {
	local p
	for p in $1 $(pgrep -P "$1"); do
		grep -q "weft-shm\.$(id -u)\." "/proc/$p/maps" 2>/dev/null &&
			return 0
	done
	return 1
}

# one LABEL ITERATIONS [ENV...]: a pingpong; sets seen (processes that
# mapped a region: 0..2), sent (the device's packets meanwhile) and msgs.
# Through shared memory it is quick: many iterations, for it to last
# long enough to be seen.
one() {
	local label=$1 iters=$2 c s0 i
	shift 2
	msgs=$((2 * iters)) # each iteration: one message each way
	s0=$(cat "$cnt")
	start_server "$tmp/srv" env "$@" timeout 120 "$ft/fi_rdm_pingpong" -p verbs \
		-e rdm -d "$dev" -s "$ip" -B 0 -S 64 -I $iters -v -T 60 || return 1
	env "$@" timeout 120 "$ft/fi_rdm_pingpong" -p verbs -e rdm -d "$dev" \
		-P "$port" -S 64 -I $iters -v -T 60 "$ip" >"$tmp/cli" 2>&1 &
	c=$!
	seen_s=0 seen_c=0
	# Look while both run: a region is mapped from the first send on.
	for i in $(seq 1 2000); do
		maps_region "$server_pid" && seen_s=1
		maps_region "$c" && seen_c=1
		[ $((seen_s + seen_c)) = 2 ] && break
		kill -0 "$c" 2>/dev/null || break
		sleep 0.02
	done
	wait "$c"
	rc=$?
	wait_server || rc=1
	sent=$(($(cat "$cnt") - s0))
	seen=$((seen_s + seen_c))
	echo "$label: exit $rc, processes mapping a region: $seen, $dev sent_pkts +$sent ($msgs messages)"
	[ $rc = 0 ] || { cat "$tmp/cli" "$tmp/srv"; return 1; }
}

# Long enough to be seen: 200000 round trips through shm took under 0.1 s
# in an idle VM, and one process could end between two looks; on a busy
# host they take long enough, and 2000000 could outlast the time limit.
# So 200000 first, and ten times more only when a process was not seen.
ok=0
for iters in 200000 2000000; do
	one "default (shm inside)" $iters || break
	ok=1
	[ $seen = 2 ] && break
done
if [ $ok = 1 ]; then
	[ $seen = 2 ] || { echo "FAIL: the processes did not both map a region"; fail=1; }
	[ $sent -lt $msgs ] || { echo "FAIL: the messages went through $dev"; fail=1; }
else
	echo "FAIL: the default run"; fail=1
fi
if one "FI_VERBS_SHM=0" 200 FI_VERBS_SHM=0; then
	[ $seen = 0 ] || { echo "FAIL: a process mapped a region with FI_VERBS_SHM=0"; fail=1; }
	[ $sent -ge $msgs ] || { echo "FAIL: $dev carried $sent packets for $msgs messages"; fail=1; }
else
	echo "FAIL: the FI_VERBS_SHM=0 run"; fail=1
fi
# Remote CQ data through shared memory, cut to the verbs domain's size.
if [ -x "$bld/tests/prov/conformance" ]; then
	out=$(CF_NODE=$ip FI_VERBS_DEVICE_NAME=$dev CF_CASE_TIMEOUT=30 \
		"$bld/tests/prov/conformance" -p verbs -c inject_data \
		-c rma_writedata -c cq_formats 2>&1)
	echo "$out" | grep -E '^(PASS|FAIL|SKIP)|^verbs:'
	echo "$out" | grep -q '^FAIL' && fail=1
	echo "$out" | grep -q '^verbs: [1-9][0-9]* passed' ||
		{ echo "FAIL: the CQ data cases did not pass through shm"; fail=1; }
else
	echo "FAIL: tests/prov/conformance not built"; fail=1
fi
exit $fail
