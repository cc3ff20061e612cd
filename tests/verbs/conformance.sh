#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# The conformance suite's MSG and connection-management cases over verbs,
# on each device (CF_NODE: its address).  Cases that need what verbs MSG
# endpoints do not offer skip; a failure fails the script.
. "$(dirname "$0")/lib.sh"
prog=$bld/tests/prov/conformance
[ -x "$prog" ] || skip "$prog is not built (make check builds it)"
fail=0
for d in $devs; do
	dev=${d%%:*} ip=${d#*:}
	echo "== $dev ($ip)"
	# The RDM cases wait for the RDM endpoint (fi_endpoint -FI_ENOSYS):
	# only the MSG endpoint and connection-management cases run.
	CF_NODE=$ip FI_VERBS_DEVICE_NAME=$dev timeout 300 "$prog" -p verbs \
		-c cm_connect -c cm_reject -c cm_shutdown -c cm_peer_close \
		-c cm_refused -c cm_no_answer -c cm_rma -c cm_rma_bad_access \
		-c cm_atomic \
		>"$tmp/out" 2>&1
	rc=$?
	cat "$tmp/out"
	grep -q '^FAIL: ' "$tmp/out" && fail=1
	[ $rc -ne 0 ] && [ $rc -ne 77 ] && fail=1
done
exit $fail
