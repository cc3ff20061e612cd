#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# make check: the conformance suite over every provider this library has
# built.  With none built there is nothing to conform: the test is skipped,
# never passed.
set -u
bld=${top_builddir:-.}
src=${top_srcdir:-.}
prog=$bld/tests/prov/conformance
[ -x "$prog" ] || { echo "no $prog: build first"; exit 99; }
# This library, not whatever else the loader would find.
LD_LIBRARY_PATH=$bld/.libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export LD_LIBRARY_PATH
provs=$("$prog" -P) || { echo "listing providers failed"; exit 1; }
# A provider built in but with nothing to run on here (verbs without an
# RDMA device) is left out, saying why: its tests run where devices are
# (tests/verbs, in the VM).
usable=
sockets=
for p in $provs; do
	# sockets is tcp under another name (tests/tcp/sockets-name.sh), and
	# udp for FI_EP_DGRAM: running the whole suite twice over one
	# provider would only cost time; its datagram cases run, below.
	if [ "$p" = sockets ]; then
		echo "provider sockets: tcp and udp under another name: the" \
			"datagram cases only"
		sockets=yes
		continue
	fi
	if why=$("$bld/util/fi_info" -p "$p" 2>&1 >/dev/null); then
		usable="$usable $p"
	else
		echo "skipping provider $p: $(echo "$why" | tail -n 1 | sed 's/^ *//')"
	fi
done
provs=$usable
if [ -z "$provs" ]; then
	echo "no provider is built into this library: nothing to test"
	echo "0 passed, 0 failed, 0 skipped"
	exit 77
fi
# shellcheck disable=SC2086
CONFORMANCE=$prog sh "$src/tests/prov/run-conformance.sh" $provs
rc=$?
# tcp reaches the peers of its own host through shared memory: once more
# with that off, so that its own path is checked between local peers too.
case " $provs " in
*" tcp "*)
	echo "== tcp again with FI_TCP_SHM=0 (every peer through sockets)"
	FI_TCP_SHM=0 CONFORMANCE=$prog sh "$src/tests/prov/run-conformance.sh" tcp
	rc2=$?
	case $rc2 in 0 | 77) ;; *) rc=$rc2 ;; esac ;;
esac
# sockets answers FI_EP_DGRAM with udp's endpoints through a fabric of
# its own (src/fabric.c): the datagram cases under that name.
if [ -n "$sockets" ]; then
	echo "== sockets: the datagram cases"
	# shellcheck disable=SC2046
	CONFORMANCE=$prog sh "$src/tests/prov/run-conformance.sh" \
		$("$prog" -l | awk '/^(proc_)?dgram/ { printf " -c %s", $1 }') \
		sockets
	rc2=$?
	case $rc2 in 0 | 77) ;; *) rc=$rc2 ;; esac
	# Its datagram endpoints are the RDM engine's (tagged, multi-receive,
	# directed, triggered): the cases written for RDM that fit in one
	# datagram and lose nothing on loopback.
	echo "== sockets: engine cases over FI_EP_DGRAM"
	engine_dgram="-c tagged_match -c inject_data -c source -c cancel
		-c peek_claim -c multi_recv -c multi_recv_late -c directed_recv
		-c cntr_only_tx -c cq_calls -c proc_trigger -c trigger_rules"
	# shellcheck disable=SC2086
	CF_EP_TYPE=dgram CONFORMANCE=$prog sh \
		"$src/tests/prov/run-conformance.sh" $engine_dgram sockets
	rc2=$?
	case $rc2 in 0 | 77) ;; *) rc=$rc2 ;; esac
	# Scalable datagram endpoints (FI_NAMED_RX_CTX): the context cases,
	# and the cases above once more over contexts (CF_CONTEXTS=sep).
	echo "== sockets: scalable endpoints over FI_EP_DGRAM"
	# shellcheck disable=SC2046
	CF_EP_TYPE=dgram CONFORMANCE=$prog sh \
		"$src/tests/prov/run-conformance.sh" \
		$("$prog" -l | awk '/^sep_/ { printf " -c %s", $1 }') sockets
	rc2=$?
	case $rc2 in 0 | 77) ;; *) rc=$rc2 ;; esac
	# shellcheck disable=SC2086
	CF_EP_TYPE=dgram CF_CONTEXTS=sep CONFORMANCE=$prog sh \
		"$src/tests/prov/run-conformance.sh" $engine_dgram sockets
	rc2=$?
	case $rc2 in 0 | 77) ;; *) rc=$rc2 ;; esac
fi
# udp's RDM endpoint over a lossy wire: every 7th datagram dropped
# (FI_UDP_TEST_DROP), nothing may be lost, duplicated or reordered.
case " $provs " in
*" udp "*)
	echo "== udp again with FI_UDP_TEST_DROP=7 (a lossy wire)"
	FI_UDP_TEST_DROP=7 CONFORMANCE=$prog sh \
		"$src/tests/prov/run-conformance.sh" -c msg_stream \
		-c msg_sizes -c tagged_sizes -c msg_inflight -c comp_levels \
		-c proc_pingpong -c rma_sizes -c rma_writedata -c rma_iov \
		-c rma_bad_access -c rma_cntr -c rma_order -c atomic \
		-c atomic_inject_fetch udp
	rc2=$?
	case $rc2 in 0 | 77) ;; *) rc=$rc2 ;; esac ;;
esac
exit $rc
