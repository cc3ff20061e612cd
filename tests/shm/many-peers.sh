#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# More than a thousand peers sending to one shm endpoint (over weft's library).
exec "${top_builddir:-.}/tests/shm/many_peers" 1100
