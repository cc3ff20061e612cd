#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
#
# Smoke run of fi_rdm_conn_scale over weft's own library: 8 peers connect
# to one tcp RDM endpoint, each message arrives once and intact, and both
# processes close cleanly.  Only the exit status counts: the figures it
# prints are timings and memory, never pass/fail.  77 (no tcp provider)
# passes through as a skip.  Needs top_builddir (make check exports it).

: "${top_builddir:?}"
export LD_LIBRARY_PATH=$top_builddir/.libs
unset FI_PROVIDER
prog=$top_builddir/fabtests/.libs/fi_rdm_conn_scale
[ -x "$prog" ] || prog=$top_builddir/fabtests/fi_rdm_conn_scale
timeout -k 5 60 "$prog" -p tcp -n 8 -T 20
