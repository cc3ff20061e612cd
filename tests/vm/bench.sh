#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# weft's verbs figures beside perftest's (ib_send_lat, ib_write_bw) on the
# test VM's rxe0 and siw0, in one VM run (tests/vm/bench-guest.sh).  Not a
# test: timings never decide pass or fail.
#
#   bench.sh [BUILD]     Env: WEFT_BENCH_ROUNDS (default 3), WEFT_VM_CACHE
set -u
here=$(cd "$(dirname "$0")" && pwd)
bld=$(cd "${1:-.}" && pwd) || exit 2
cache=${WEFT_VM_CACHE:-$bld/tests/vm/cache}
bash "$here/build.sh" "$cache" | grep '^vm-build: ' || exit 1
export WEFT_VM_CACHE=$cache WEFT_BUILDDIR=$bld
export WEFT_VM_TIMEOUT=${WEFT_VM_TIMEOUT:-1800}
cd "$bld" || exit 2
bash "$here/run.sh" -w "$bld" "bash $(printf %q "$here/bench-guest.sh")"
