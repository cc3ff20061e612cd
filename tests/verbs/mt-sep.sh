#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# fi_mt_bw -o sep over each device between two processes: each opens one
# scalable endpoint, and thread i sends from its transmit context i to
# the peer's receive context i, every byte checked (-v; each thread's
# data differs from the others', so data on the wrong context fails):
# two threads, then three with counters.  verbs RDM has scalable
# endpoints: a run that says "not supported" (77) fails.  Only exit
# statuses count, never the times.
. "$(dirname "$0")/lib.sh"
ft=$bld/fabtests
[ -x "$ft/fi_mt_bw" ] || { echo "no $ft/fi_mt_bw: build first"; exit 99; }
fail=0
run() { # run DEV IP [EXTRA ARGS]
	dev=$1 ip=$2
	shift 2
	start_server "$tmp/srv" timeout 120 "$ft/fi_mt_bw" -p verbs -e rdm \
		-d "$dev" -o sep -v -S 1,4k,64k,1m -I 20 -w 2 -T 30 "$@" \
		-s "$ip" -B 0 || return 1
	timeout 120 "$ft/fi_mt_bw" -p verbs -e rdm -d "$dev" -o sep -v \
		-S 1,4k,64k,1m -I 20 -w 2 -T 30 "$@" -P "$port" "$ip" \
		>"$tmp/cli" 2>&1
	c=$?
	wait_server; s=$?
	if [ $c -ne 0 ] || [ $s -ne 0 ]; then
		echo "FAIL: fi_mt_bw -o sep $* on $dev: client $c, server $s"
		cat "$tmp/cli" "$tmp/srv"
		return 1
	fi
	echo "PASS: fi_mt_bw -o sep $* on $dev"
	cat "$tmp/cli"
}
for d in $devs; do
	dev=${d%%:*} ip=${d#*:}
	run "$dev" "$ip" -n 2 || fail=1
	run "$dev" "$ip" -n 3 -c counter || fail=1
done
exit $fail
