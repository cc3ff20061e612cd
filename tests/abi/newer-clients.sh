#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# Programs built against OFI 1.20, 2.0 and 2.6 headers (newer_client_17,
# _18, _19) over weft: fi_getinfo, fi_dupinfo and the domain_attr tail of
# their version node, then traffic between two processes over shm and over
# tcp sockets on loopback (FI_TCP_SHM=0: not through shared memory).
# Passes when every run passes; a provider missing here is skipped.
. "${top_srcdir:-.}/tests/lib.sh"
dir=${top_builddir:-.}/tests/abi
status=0
passed=0
for node in 17 18 19; do
	prog=$(find_prog "$dir" newer_client_$node) || exit 99
	for prov in shm tcp; do
		echo "== newer_client_$node $prov"
		s=0
		FI_TCP_SHM=0 timeout 120 "$prog" $prov || s=$?
		case $s in
		0) passed=$((passed + 1)) ;;
		77) ;;
		*) echo "FAIL: newer_client_$node $prov (exit $s)"; status=1 ;;
		esac
	done
done
[ $status = 0 ] && [ $passed = 0 ] && skip "neither shm nor tcp is here"
exit $status
