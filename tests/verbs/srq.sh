#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# Shared receive contexts on MSG endpoints (tests/verbs/srq.c), on each
# device: two connections sharing one SRQ, truncation, close.
. "$(dirname "$0")/lib.sh"
prog=$bld/tests/verbs/srq
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
