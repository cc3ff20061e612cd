#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
#
# The provider conformance suite over shm with FI_HOOK=perf: every case
# must pass through the hook layer as it does without it (the layer's fids
# in binds, EQ events, completions and closes), and perf must have been at
# work (its tables on stderr).  About a minute.
set -u
bld=${top_builddir:-$(cd "$(dirname "$0")/../.." && pwd)}
src=${top_srcdir:-$(dirname "$0")/../..}
. "$src/tests/lib.sh"
prog=$bld/tests/prov/conformance
[ -x "$prog" ] || { echo "no $prog: build first"; exit 99; }
info=$(find_prog "$bld/util" fi_info) || exit 99
LD_LIBRARY_PATH=$bld/.libs
export LD_LIBRARY_PATH
clear_fi_env
list_provs "$info"
has_prov shm || skip "shm is not built"

err=$(mktemp "${TMPDIR:-/tmp}/weft-hook-conf.XXXXXX") || exit 99
trap 'rm -f "$err"' EXIT
FI_HOOK=perf CONFORMANCE=$prog sh "$src/tests/prov/run-conformance.sh" shm \
	2>"$err"
rc=$?
n=$(grep -c 'hook_perf: ep ' "$err")
echo "perf tables of endpoints: $n"
[ "$n" -gt 0 ] || { echo "FAIL: FI_HOOK=perf printed no table"; exit 1; }
exit $rc
