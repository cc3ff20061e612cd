#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# 100000 messages sent before any receive is posted: the receiver's
# unexpected buffering stays bounded, and every message arrives in order.
prog="${top_builddir:-.}/tests/shm/unexp_bound"
"$prog" 64 || exit $?
exec "$prog" 4096
