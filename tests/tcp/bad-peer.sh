#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# A hostile or broken peer on raw sockets against a tcp RDM endpoint over
# loopback: the endpoint drops only the offending connection and goes on
# serving an honest peer; giant lengths, a peer that stops reading and
# 10000 stalled handshakes stay within the endpoint's bounds.  Bounded: a
# hang fails the test.
prog="${top_builddir:-.}/tests/tcp/bad_peer"
unset FI_PROVIDER FI_TCP_IFACE
# A peer may announce a message of up to 2^40 bytes; the endpoint tries to
# buffer an unexpected one whole and copes with the allocation failing.
# Under AddressSanitizer that failure must be a NULL, not an abort.
ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}allocator_may_return_null=1"
export ASAN_OPTIONS
timeout -k 5 120 "$prog"
rc=$?
[ $rc -eq 124 ] && echo "bad_peer: timed out (hang)"
exit $rc
