#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# A program built against upstream libfabric: Debian's fi_pingpong
# (libfabric-bin), server and client both running over this build's
# libfabric.so.1, -e msg over each device, with its data checks (-c).
# vm-build: plain (tests/vm/guest.sh: it loads weft into a program that
# cannot take a sanitized library)
. "$(dirname "$0")/lib.sh"
pp=${WEFT_FI_PINGPONG:-/usr/bin/fi_pingpong}
[ -x "$pp" ] || skip "$pp (libfabric-bin) is not installed"
# A program not built with ASan cannot load a library that is.
[ "${WEFT_SANITIZERS:-}" = yes ] &&
	skip "under sanitizers: $pp is not built with them (the plain run covers it)"
fail=0
for d in $devs; do
	dev=${d%%:*} ip=${d#*:}
	# Its control port, one per device: tests/vm/guest.sh runs this
	# script over each device at once.
	pport=$((47600 + $(printf '%s' "$dev" | cksum | cut -d' ' -f1) % 100))
	timeout 150 "$pp" -p verbs -e msg -d "$dev" -B "$pport" -I 10 -S all -c \
		>"$tmp/srv" 2>&1 &
	server_pid=$!
	# Its control socket says nothing when it listens: a client that
	# came too early (connection refused, 111) tries again.
	tries=0
	while :; do
		sleep 1
		timeout 150 "$pp" -p verbs -e msg -d "$dev" -P "$pport" -I 10 \
			-S all -c "$ip" >"$tmp/cli" 2>&1
		c=$?
		tries=$((tries + 1))
		[ $c -eq 111 ] && [ $tries -lt 10 ] &&
			kill -0 "$server_pid" 2>/dev/null || break
	done
	wait_server; s=$?
	if [ $c -ne 0 ] || [ $s -ne 0 ]; then
		echo "FAIL: fi_pingpong on $dev: client $c, server $s"
		cat "$tmp/cli" "$tmp/srv"
		fail=1
		continue
	fi
	echo "PASS: fi_pingpong -c on $dev"
	tail -n 3 "$tmp/cli"
done
exit $fail
