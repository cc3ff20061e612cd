#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# A connected tcp endpoint whose peer sends a malformed frame.
exec timeout 60 "${top_builddir:-.}/tests/tcp/msg_bad_frame"
