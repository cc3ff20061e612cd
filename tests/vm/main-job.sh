#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# The main job's verbs part where this host has no RDMA device: build the
# test VM if needed (tests/vm/build.sh), boot it once, and run
# tests/verbs/pingpong.sh over its soft-RDMA devices rxe0 and siw0.
#
#   main-job.sh BUILD
#
# Prints "verbs: SKIPPED (reason)" and exits 77 where the VM cannot be had
# (no QEMU, the kernel packages cannot be downloaded, WEFT_VM=0).
set -u
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
bld=$(cd "${1:-.}" && pwd) || exit 2
skipped() {
	echo "verbs: SKIPPED ($*)"
	exit 77
}
[ "${WEFT_VM:-1}" = 0 ] && skipped "WEFT_VM=0"
qemu=${WEFT_VM_QEMU:-qemu-system-x86_64}
command -v "$qemu" >/dev/null ||
	skipped "no RDMA device here and no $qemu for the test VM: contrib/install-deps.sh installs it"
cache=${WEFT_VM_CACHE:-$bld/tests/vm/cache}
log=$(mktemp)
echo "verbs: no RDMA device on this host; building the test VM with soft-RDMA devices (tests/vm)"
bash "$here/build.sh" "$cache" >"$log" 2>&1
rc=$?
grep '^vm-build: ' "$log"
case $rc in
0) rm -f "$log" ;;
3) rm -f "$log"; skipped "the kernel packages for the test VM cannot be downloaded" ;;
*) tail -n 20 "$log"; rm -f "$log"; echo "verbs: building the test VM failed"; exit 1 ;;
esac
export WEFT_VM_CACHE=$cache WEFT_BUILDDIR=$bld WEFT_SRCDIR=$src
export WEFT_VERBS_DEVS="rxe0:10.77.0.1 siw0:10.78.0.1"
export WEFT_VM_TIMEOUT=${WEFT_VM_TIMEOUT:-600}
cd "$bld" || exit 2
bash "$here/run.sh" -w "$bld" "sh $(printf %q "$src/tests/verbs/pingpong.sh")"
rc=$?
[ $rc = 125 ] && skipped "the test VM did not boot"
exit $rc
