#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# Messages whose sends completed survive their senders closing and exiting:
# inline (100 bytes) and through eager buffers (10 KiB).
prog="${top_builddir:-.}/tests/shm/sender_close"
"$prog" 100 || exit $?
exec "$prog" 10240
