#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# RDM atomics through each device (FI_VERBS_SHM=0), iWARP included:
#  - fi_info has an RDM entry with FI_ATOMIC for the device;
#  - fi_rdm_atomic (every op, every datatype and form the endpoint calls
#    valid, each fetched value and the target checked against its model)
#    passes, and has run every op of fi_atomic(3): what Sandia OpenSHMEM
#    and the like check for at start-up is there;
#  - with FI_VERBS_DEVICE_ATOMICS=1 the table is the device's and no more:
#    64-bit FI_SUM and FI_CSWAP where the device has atomics (rxe), no
#    FI_ATOMIC at all on RDM where it has none (siw).
. "$(dirname "$0")/lib.sh"
ft=$bld/fabtests
fi_info=$bld/util/fi_info
[ -x "$ft/fi_rdm_atomic" ] || { echo "no $ft/fi_rdm_atomic: build first"; exit 99; }
command -v ibv_devinfo >/dev/null || skip "ibv_devinfo (ibverbs-utils) is not installed"
export FI_VERBS_SHM=0
ops="min max sum prod lor land bor band lxor bxor read write cswap cswap_ne
cswap_le cswap_lt cswap_ge cswap_gt mswap"
fail=0

# run_atomic DEV IP OUT [ARGS...]: fi_rdm_atomic server and client over
# DEV; the client's report in OUT.  Returns the client's status (the
# server's failure fails too).
run_atomic() {
	dev=$1 ip=$2 out=$3
	shift 3
	start_server "$tmp/srv" timeout 240 "$ft/fi_rdm_atomic" -p verbs \
		-e rdm -d "$dev" -s "$ip" -B 0 -I 5 -T 60 "$@" || return 1
	timeout 240 "$ft/fi_rdm_atomic" -p verbs -e rdm -d "$dev" -P "$port" \
		-I 5 -T 60 "$@" "$ip" >"$out" 2>&1
	c=$?
	wait_server; s=$?
	[ $s -eq 0 ] || { echo "server failed ($s):"; cat "$tmp/srv"; return 1; }
	return $c
}

for d in $devs; do
	dev=${d%%:*} ip=${d#*:}
	echo "== $dev ($ip)"
	if ! timeout 120 "$fi_info" -p verbs -d "$dev" -t FI_EP_RDM \
		-c FI_ATOMIC >"$tmp/info" 2>&1; then
		echo "FAIL: $dev: no RDM entry with FI_ATOMIC"
		cat "$tmp/info"
		fail=1
	fi
	if run_atomic "$dev" "$ip" "$tmp/all"; then
		missing=
		for op in $ops; do
			grep -q "^$op/" "$tmp/all" || missing="$missing $op"
		done
		echo "$dev: fi_rdm_atomic passed, $(grep -c ' lat ' "$tmp/all") (op, datatype, form) combinations"
		[ -z "$missing" ] ||
			{ echo "FAIL: $dev: fi_rdm_atomic ran no$missing"; fail=1; }
	else
		echo "FAIL: $dev: fi_rdm_atomic"
		cat "$tmp/all"
		fail=1
	fi

	# The device's atomics only.
	has=$(timeout 120 ibv_devinfo -v -d "$dev" | awk '/atomic_cap:/ {print $2}')
	if [ "$has" = ATOMIC_NONE ] || [ -z "$has" ]; then
		if FI_VERBS_DEVICE_ATOMICS=1 timeout 120 "$fi_info" -p verbs \
			-d "$dev" -t FI_EP_RDM -c FI_ATOMIC >"$tmp/info" 2>&1; then
			echo "FAIL: $dev has no atomics (atomic_cap ${has:-?}), yet FI_VERBS_DEVICE_ATOMICS=1 offers FI_ATOMIC on RDM"
			fail=1
		else
			echo "$dev: FI_VERBS_DEVICE_ATOMICS=1: no FI_ATOMIC on RDM (atomic_cap ${has:-?})"
		fi
		continue
	fi
	if FI_VERBS_DEVICE_ATOMICS=1 run_atomic "$dev" "$ip" "$tmp/dev"; then
		# Only 64-bit sum and compare-swap, both of them.
		other=$(awk 'NR > 1 { split($1, p, "/"); if (!((p[1] == "sum" || p[1] == "cswap") && (p[2] == "int64" || p[2] == "uint64"))) print $1 }' "$tmp/dev")
		if [ -n "$other" ]; then
			echo "FAIL: $dev: FI_VERBS_DEVICE_ATOMICS=1 ran more than the device does:"
			echo "$other"
			fail=1
		fi
		for c in sum/int64/atomic sum/uint64/fetch cswap/int64/compare; do
			grep -q "^$c " "$tmp/dev" ||
				{ echo "FAIL: $dev: FI_VERBS_DEVICE_ATOMICS=1 ran no $c"; fail=1; }
		done
		echo "$dev: FI_VERBS_DEVICE_ATOMICS=1: $(grep -c ' lat ' "$tmp/dev") combinations, the device's"
	else
		echo "FAIL: $dev: fi_rdm_atomic with FI_VERBS_DEVICE_ATOMICS=1"
		cat "$tmp/dev"
		fail=1
	fi
done
[ $fail -eq 0 ] && echo PASS
exit $fail
