#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
#
# shm programs that run at the same time on one host never take each
# other's names (over weft's library):
#  1. two server/client pairs addressed the way 1.17 test suites address
#     them, the same -s 127.0.0.1 everywhere, a service each;
#  2. the same fabtests command lines (server -s 127.0.0.1 -B 0) twice at
#     once;
#  3. two shm fabtests matrices at once.
# Every run is bounded by timeout; children are stopped by PID.
# Needs top_srcdir and top_builddir (make check exports them).
set -u
: "${top_srcdir:?}" "${top_builddir:?}"
. "$top_srcdir/tests/lib.sh"
export LD_LIBRARY_PATH=$top_builddir/.libs
unset FI_PROVIDER
pair=$top_builddir/tests/shm/name_pair
pp=$(find_prog "$top_builddir/fabtests" fi_rdm_tagged_pingpong) || exit 99
tmp=$(mktemp -d)
pids=()
cleanup() {
	for p in "${pids[@]}"; do
		kill "$p" 2>/dev/null
	done
	rm -rf "$tmp"
}
trap cleanup EXIT
fails=0
fail() {
	echo "FAIL: $*"
	fails=$((fails + 1))
}

# Services no other run uses: this script's pid is unique while it runs.
svc1=${$}1 svc2=${$}2

echo "== 1. two pairs, -s 127.0.0.1 on all four, services $svc1 and $svc2"
for s in $svc1 $svc2; do
	timeout -k 5 30 "$pair" -s 127.0.0.1 -B "$s" >"$tmp/srv.$s" 2>&1 &
	pids+=($!)
	eval "srv_$s=$!"
done
for s in $svc1 $svc2; do
	wait_line "$tmp/srv.$s" '^ready' "" 100 || fail "server $s did not start: $(cat "$tmp/srv.$s")"
done
for s in $svc1 $svc2; do
	timeout -k 5 30 "$pair" -s 127.0.0.1 -P "$s" 127.0.0.1 >"$tmp/cli.$s" 2>&1 &
	pids+=($!)
	eval "cli_$s=$!"
done
for s in $svc1 $svc2; do
	eval "c=\$cli_$s srv=\$srv_$s"
	wait "$c" || fail "client of service $s: $(cat "$tmp/cli.$s")"
	wait "$srv" || fail "server of service $s: $(cat "$tmp/srv.$s")"
	cat "$tmp/srv.$s" "$tmp/cli.$s" | sed 's/^/   /'
done
name1=$(sed -n 's/^ready //p' "$tmp/srv.$svc1")
[ "$name1" = "fi_shm://127.0.0.1:$svc1" ] ||
	fail "the server of $svc1 is named '$name1', not fi_shm://127.0.0.1:$svc1"

echo "== 2. the same command lines twice at once: $(basename "$pp") -p shm -s 127.0.0.1 -B 0"
for i in 1 2; do
	timeout -k 5 60 "$pp" -p shm -s 127.0.0.1 -B 0 -v -S 1,4k,64k -I 20 \
		-T 20 >/dev/null 2>"$tmp/pp.srv.$i" &
	pids+=($!)
	eval "pps_$i=$!"
done
for i in 1 2; do
	wait_line "$tmp/pp.srv.$i" '^listening on port' "" 100 ||
		fail "pingpong server $i did not start: $(cat "$tmp/pp.srv.$i")"
done
for i in 1 2; do
	port=$(listen_port "$tmp/pp.srv.$i")
	timeout -k 5 60 "$pp" -p shm -P "${port:-1}" -v -S 1,4k,64k -I 20 \
		-T 20 127.0.0.1 >/dev/null 2>"$tmp/pp.cli.$i" &
	pids+=($!)
	eval "ppc_$i=$!"
done
for i in 1 2; do
	eval "c=\$ppc_$i srv=\$pps_$i"
	wait "$c" || fail "pingpong client $i: $(cat "$tmp/pp.cli.$i")"
	wait "$srv" || fail "pingpong server $i: $(cat "$tmp/pp.srv.$i")"
done
[ $fails = 0 ] && echo "   both pairs passed"

echo "== 3. two shm fabtests matrices at once"
if [ "${WEFT_SANITIZERS:-}" = yes ]; then
	# Sanitized programs run several times slower, and two matrices of
	# them on a small machine reach the quick set's per-program limits.
	# What this part checks (two jobs' names and ports) is the plain
	# run's; the sanitized matrix still runs alone (check-matrix.sh).
	echo "   left to the plain build: two sanitized matrices outrun the quick limits"
else
	for i in 1 2; do
		mkdir -p "$tmp/m$i"
		TMPDIR=$tmp/m$i timeout -k 10 300 \
			"$top_srcdir/fabtests/scripts/run" -q -p shm \
			-b "$top_builddir/fabtests" -T 60 >"$tmp/matrix.$i" 2>&1 &
		pids+=($!)
		eval "m_$i=$!"
	done
	for i in 1 2; do
		eval "m=\$m_$i"
		if wait "$m"; then
			echo "   matrix $i: $(grep '^passed:' "$tmp/matrix.$i")"
		else
			fail "matrix $i:"
			cat "$tmp/matrix.$i"
		fi
	done
fi

[ $fails = 0 ] && echo "all concurrent runs passed"
exit $((fails > 0))
