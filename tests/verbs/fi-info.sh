#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# util/fi_info -p verbs lists every device of WEFT_VERBS_DEVS with an MSG
# and an RDM endpoint, on the fabric of its address's subnet, and no queue
# size, SGE count or inject size above what the device reports.
. "$(dirname "$0")/lib.sh"
fi_info=$bld/util/fi_info
[ -x "$fi_info" ] || { echo "no $fi_info: build first"; exit 99; }
command -v ibv_devinfo >/dev/null || skip "ibv_devinfo (ibverbs-utils) is not installed"
fail=0
for d in $devs; do
	dev=${d%%:*} ip=${d#*:}
	timeout 30 "$fi_info" -p verbs -d "$dev" -v >"$tmp/info" 2>&1 ||
		{ echo "FAIL: fi_info -p verbs -d $dev"; cat "$tmp/info"; fail=1; continue; }
	for t in FI_EP_MSG FI_EP_RDM; do
		grep -q "type:.*$t" "$tmp/info" ||
			{ echo "FAIL: $dev: no $t entry"; fail=1; }
	done
	net=$(echo "$ip" | sed 's/\.[0-9]*$/.0/')
	grep -q "name: $net/" "$tmp/info" ||
		{ echo "FAIL: $dev: no fabric named after $net/..."; fail=1; }
	timeout 30 ibv_devinfo -v -d "$dev" >"$tmp/dev" 2>&1 ||
		{ echo "FAIL: ibv_devinfo -d $dev"; fail=1; continue; }
	qp_wr=$(awk '/max_qp_wr:/ {print $2}' "$tmp/dev")
	cqe=$(awk '/max_cqe:/ {print $2}' "$tmp/dev")
	sge=$(awk '/max_sge:/ {print $2; exit}' "$tmp/dev")
	# Queue sizes and iov limits in the tx_attr / rx_attr sections.
	for v in $(awk '/^ *size:/ {print $2}' "$tmp/info"); do
		[ "$v" -le "$qp_wr" ] && [ "$v" -le "$cqe" ] ||
			{ echo "FAIL: $dev: queue size $v above max_qp_wr $qp_wr / max_cqe $cqe"; fail=1; }
	done
	for v in $(awk '/^ *iov_limit:/ {print $2}' "$tmp/info"); do
		[ "$v" -le "$sge" ] ||
			{ echo "FAIL: $dev: iov_limit $v above max_sge $sge"; fail=1; }
	done
	echo "$dev: $(grep -c 'type:' "$tmp/info") entries, max_qp_wr $qp_wr, max_cqe $cqe, max_sge $sge"
done
[ $fail -eq 0 ] && echo PASS
exit $fail
