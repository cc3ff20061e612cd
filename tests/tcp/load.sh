#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# Load on one RDM endpoint (load.c): 10^6 tagged messages from 4 threads,
# 100000 messages before any receive, 256 peers, fork with registered
# memory; over shm, tcp, and tcp with FI_TCP_SHM=0 (sockets between the
# processes of this host).  Each run is bounded by timeout(1); a provider
# that is not built skips that run, and the test skips (77) only when none
# ran.  The figures (rates, peak RSS) are printed, never judged, except
# the receiver's peak RSS against the cap load.c states.
prog="${top_builddir:-.}/tests/tcp/load"
unset FI_PROVIDER FI_TCP_IFACE FI_TCP_SHM
ran=0
fail=0
run() {
	# run PROV MODE [FI_TCP_SHM value]
	if [ -n "${3:-}" ]; then
		FI_TCP_SHM=$3 timeout -k 5 200 "$prog" "$1" "$2"
	else
		timeout -k 5 200 "$prog" "$1" "$2"
	fi
	rc=$?
	case $rc in
	0) ran=1 ;;
	77) ;;
	124) echo "load $1 $2 ${3:+FI_TCP_SHM=$3}: timed out"; fail=1 ;;
	*) echo "load $1 $2 ${3:+FI_TCP_SHM=$3}: failed ($rc)"; fail=1 ;;
	esac
}
for mode in ${LOAD_MODES:-mt unexp peers fork}; do
	run shm "$mode"
	run tcp "$mode"
	run tcp "$mode" 0
done
[ $fail -eq 0 ] || exit 1
[ $ran -eq 1 ] || exit 77
exit 0
