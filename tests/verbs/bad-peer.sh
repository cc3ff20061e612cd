#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# A hostile raw peer of an RDM endpoint (tests/verbs/bad_peer.c), on each
# device: peers of earlier wire versions are refused, malformed messages
# are dropped and the honest one after them lands, malformed or forbidden
# atomics are answered with an error and change nothing.
. "$(dirname "$0")/lib.sh"
prog=$bld/tests/verbs/bad_peer
[ -x "$prog" ] || skip "$prog is not built (make check builds it)"
fail=0
for d in $devs; do
	dev=${d%%:*} ip=${d#*:}
	echo "== $dev ($ip)"
	FI_VERBS_DEVICE_NAME=$dev timeout 60 "$prog" "$ip"
	rc=$?
	[ $rc -ne 0 ] && [ $rc -ne 77 ] && fail=1
done
exit $fail
