# SPDX-License-Identifier: BSD-2-Clause
# Sourced by the tests/verbs/*.sh scripts, which run where RDMA devices
# exist (the VM harness in tests/vm runs each with):
#   WEFT_BUILDDIR    the build tree (default: the current directory)
#   WEFT_SRCDIR      the source tree (default: WEFT_BUILDDIR)
#   WEFT_VERBS_DEVS  "dev:ip dev:ip ...", e.g. "rxe0:10.77.0.1 siw0:10.78.0.1"
# Exit status: 0 pass, 77 skip (saying why), anything else a failure.
# Every program runs under timeout; servers are stopped by their PID.
set -u
bld=${WEFT_BUILDDIR:-${top_builddir:-.}}
src=${WEFT_SRCDIR:-${top_srcdir:-$bld}}
devs=${WEFT_VERBS_DEVS:-}
LD_LIBRARY_PATH=$bld/.libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export LD_LIBRARY_PATH
unset FI_PROVIDER FI_VERBS_IFACE FI_VERBS_DEVICE_NAME

skip() { echo "SKIP: $*"; exit 77; }
[ -n "$devs" ] || skip "WEFT_VERBS_DEVS is empty: no RDMA device to test on"

tmp=$(mktemp -d) || exit 1
server_pid=
cleanup() {
	[ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT

# start_server LOG CMD...: run a fabtests server in the background on a
# side-channel port it picks (-B 0), and set $port from what it reports.
start_server() {
	log=$1; shift
	"$@" >"$log" 2>&1 &
	server_pid=$!
	port=
	for _ in $(seq 1 100); do
		port=$(sed -n 's/.*listening on port \([0-9]*\).*/\1/p' "$log" | head -n 1)
		[ -n "$port" ] && return 0
		kill -0 "$server_pid" 2>/dev/null || break
		sleep 0.1
	done
	echo "server did not start:"; cat "$log"
	return 1
}

# wait_server: the server's exit status; it is no longer ours to stop.
wait_server() {
	wait "$server_pid"
	rc=$?
	server_pid=
	return $rc
}
