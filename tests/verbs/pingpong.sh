#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# The main job's verbs part (contrib/main-job.sh runs it in the VM through
# tests/vm/main-job.sh): fi_rdm_tagged_pingpong (-e rdm) and
# fi_msg_pingpong (-e msg) over each device, every byte verified (-v),
# 50 round trips a size (the defaults, 125 MB a size, take minutes emulated).
. "$(dirname "$0")/lib.sh"
ft=$bld/fabtests
# Server and client share a host: without this, RDM endpoints would meet
# through the shared memory verbs RDM embeds, not through the device.
export FI_VERBS_SHM=0
fail=0
pp() { # pp PROG EP DEV IP
	prog=$1 ep=$2 dev=$3 ip=$4
	echo
	echo "== $prog -p verbs -e $ep -d $dev -v (server and client on $ip)"
	start_server "$tmp/srv" timeout 120 "$ft/$prog" -p verbs -e "$ep" \
		-d "$dev" -s "$ip" -B 0 -v -S 1,64,4k,64k,1m -I 50 -T 30 || return 1
	timeout 120 "$ft/$prog" -p verbs -e "$ep" -d "$dev" -P "$port" -v \
		-S 1,64,4k,64k,1m -I 50 -T 30 "$ip"
	c=$?
	wait_server; s=$?
	if [ $c -ne 0 ] || [ $s -ne 0 ]; then
		echo "pingpong over verbs $ep on $dev FAILED (client $c, server $s)"
		cat "$tmp/srv"
		return 1
	fi
}
for d in $devs; do
	dev=${d%%:*} ip=${d#*:}
	pp fi_rdm_tagged_pingpong rdm "$dev" "$ip" || fail=1
	pp fi_msg_pingpong msg "$dev" "$ip" || fail=1
done
exit $fail
