#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# fi_msg_pingpong, fi_msg_bw and fi_mt_bw (two threads) over each device
# between two processes,
# every byte verified (-v).  Prints the 8-byte latency per device.
. "$(dirname "$0")/lib.sh"
ft=$bld/fabtests
[ -x "$ft/fi_msg_pingpong" ] || { echo "no $ft/fi_msg_pingpong: build first"; exit 99; }
fail=0
run() { # run PROG DEV IP SIZES [EXTRA ARGS]
	prog=$1 dev=$2 ip=$3 sizes=$4
	shift 4
	start_server "$tmp/srv" timeout 120 "$ft/$prog" -p verbs -e msg -d "$dev" \
		-s "$ip" -B 0 -S "$sizes" -v -T 30 "$@" || return 1
	timeout 120 "$ft/$prog" -p verbs -e msg -d "$dev" -P "$port" \
		-S "$sizes" -v -T 30 "$@" "$ip" >"$tmp/cli" 2>&1
	c=$?
	wait_server; s=$?
	if [ $c -ne 0 ] || [ $s -ne 0 ]; then
		echo "FAIL: $prog on $dev: client $c, server $s"
		cat "$tmp/cli" "$tmp/srv"
		return 1
	fi
	echo "PASS: $prog $* on $dev"
	cat "$tmp/cli"
}
# 50 transfers a size (-I 50): every byte is still checked, and the
# programs' defaults (up to 1000 a size, 125 MB) take minutes emulated.
for d in $devs; do
	dev=${d%%:*} ip=${d#*:}
	run fi_msg_pingpong "$dev" "$ip" 8,4k,64k,1m -I 50 || fail=1
	run fi_msg_bw "$dev" "$ip" 8,64k,1m -I 50 || fail=1
	# Completions waited for with fi_cq_sread on the completion
	# channel's fd (the CQ armed only on the way to sleep).
	run fi_msg_pingpong "$dev" "$ip" 8,64k -t fd -I 50 || fail=1
	# Two threads, one connection each: their in-band meeting keeps
	# iWARP's rules (receives first, the connecting side speaks first).
	run fi_mt_bw "$dev" "$ip" 8,64k -n 2 -I 200 || fail=1
done
exit $fail
