#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# A hostile or broken peer on raw sockets against a tcp RDM endpoint over
# loopback: the endpoint drops only the offending connection and goes on
# serving an honest peer.  Bounded: a hang fails the test.
prog="${top_builddir:-.}/tests/tcp/bad_peer"
unset FI_PROVIDER FI_TCP_IFACE
timeout -k 5 120 "$prog"
rc=$?
[ $rc -eq 124 ] && echo "bad_peer: timed out (hang)"
exit $rc
