#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# make check-vm: weft's verbs tests on real soft-RDMA devices (rxe0, siw0)
# inside a small QEMU VM.  Builds the VM (tests/vm/build.sh) if needed,
# boots it once and runs tests/vm/guest.sh there with the build tree
# writable, so its logs land in BUILD/tests/vm/logs.
#
#   check.sh [BUILD [SANBUILD]]
#       BUILD: weft's build tree (default $top_builddir or .); SANBUILD: a
#       second one, built with --enable-sanitizers: one boot for both, each
#       test run once, in the build that suits it (guest.sh, "Two builds,
#       one boot")
#
# Without QEMU, without the kernel packages, or when the VM does not boot,
# it prints "vm: SKIPPED (reason)" and exits 77: it never passes unseen.
# Otherwise the guest's last line "vm: N passed, N failed, N skipped" is the
# result; exit 0, or 1 if a test failed or the run broke off.
# Env: WEFT_VM=0 skips; WEFT_VM_CACHE (default BUILD/tests/vm/cache);
# WEFT_VM_QEMU (the QEMU program, default qemu-system-x86_64);
# WEFT_VM_TIMEOUT (s, whole run, default 3600: the MPI jobs and the
# conformance suite's runs take minutes each under emulation); WEFT_VM_CASE_TIMEOUT (s, one test, default 600);
# WEFT_VM_FABTESTS; REF_LIBDIR (the reference
# libfabric.so.1); the rest as tests/vm/run.sh says.
set -u
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
bld=$(cd "${1:-${top_builddir:-.}}" && pwd) || exit 2
sbld=
if [ -n "${2:-}" ]; then
	sbld=$(cd "$2" && pwd) || exit 2
	[ -x "$sbld/util/fi_info" ] || { echo "vm: no $sbld/util/fi_info: build it first"; exit 2; }
fi
t0=$(date +%s)
skipped() {
	echo "vm: SKIPPED ($*)"
	exit 77
}
[ "${WEFT_VM:-1}" = 0 ] && skipped "WEFT_VM=0"
[ -x "$bld/util/fi_info" ] || { echo "vm: no $bld/util/fi_info: build weft first"; exit 2; }
qemu=${WEFT_VM_QEMU:-qemu-system-x86_64}
command -v "$qemu" >/dev/null ||
	skipped "no $qemu: install qemu-system-x86 (contrib/install-deps.sh)"
missing=
for t in apt-get apt-cache dpkg-deb gcc-12 make strings strip xz gzip rping ibv_devices; do
	command -v $t >/dev/null || missing="$missing $t"
done
[ -z "$missing" ] || skipped "missing tools:$missing (contrib/install-deps.sh)"

cache=${WEFT_VM_CACHE:-$bld/tests/vm/cache}
logs=$bld/tests/vm/logs
rm -rf "$logs"
mkdir -p "$logs" || exit 1

# ---- the VM: built once, kept in the cache ----
echo "vm: building the VM in $cache (log: $logs/build.log)"
bash "$here/build.sh" "$cache" >"$logs/build.log" 2>&1
rc=$?
grep '^vm-build: ' "$logs/build.log"
case $rc in
0) ;;
3) skipped "the kernel packages cannot be downloaded: see $logs/build.log" ;;
*)
	tail -n 30 "$logs/build.log"
	echo "vm: building the VM failed"
	echo "vm: 0 passed, 1 failed, 0 skipped"
	exit 1 ;;
esac
t1=$(date +%s)

# ---- one boot, every test ----
ref=${REF_LIBDIR:-}
if [ -z "$ref" ]; then
	for d in /usr/lib/$(gcc -print-multiarch 2>/dev/null) /usr/lib64 /usr/lib; do
		[ -e "$d/libfabric.so.1" ] && { ref=$d; break; }
	done
fi
export WEFT_BUILDDIR=$bld WEFT_SRCDIR=$src WEFT_VM_LOGS=$logs WEFT_REF_LIBDIR=$ref
export WEFT_VM_CACHE=$cache WEFT_VM_TIMEOUT=${WEFT_VM_TIMEOUT:-3600}
export WEFT_VM_QEMU=$qemu
echo "vm: booting (timeout ${WEFT_VM_TIMEOUT}s; guest log: $logs/guest.log)"
rw=(-w "$bld")
if [ -n "$sbld" ]; then
	case $sbld/ in
	"$bld"/*) ;;	# inside the build tree, writable with it
	*) rw+=(-w "$sbld") ;;
	esac
	export WEFT_SAN_BUILDDIR=$sbld WEFT_SANITIZERS=no
	export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0}
	export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
	# Sanitized programs in both lanes at once (ASan keeps up to 256 MB
	# of freed blocks in quarantine per process): in 1 GB, fi_mt_bw's
	# server and client were killed (status 137) beside the other lane.
	export WEFT_VM_MEM=${WEFT_VM_MEM:-4G}
	echo "vm: two builds, one boot: $bld (plain) and $sbld (sanitizers), $WEFT_VM_MEM of memory"
fi
# the sources are read-only in the guest, unless they are the build tree
bash "$here/run.sh" "${rw[@]}" "bash $(printf %q "$here/guest.sh")" 2>&1 | tee "$logs/guest.log"
rc=${PIPESTATUS[0]}
t2=$(date +%s)
echo "vm: build $((t1 - t0)) s, boot and tests $((t2 - t1)) s"
sum=$(grep -a '^vm: [0-9]* passed, [0-9]* failed, [0-9]* skipped$' "$logs/guest.log" | tail -n 1)
if [ -n "$sum" ]; then
	[ "$rc" = 0 ] || [ "$rc" = 1 ] || echo "vm: guest.sh exit $rc"
	echo "$sum"
	[ "$rc" = 0 ] && exit 0
	exit 1
fi
grep -aq '^vm: guest up' "$logs/guest.log" ||
	skipped "the VM did not boot (run.sh exit $rc): see $logs/guest.log"
case $rc in
124) echo "vm: the run timed out after ${WEFT_VM_TIMEOUT}s" ;;
*) echo "vm: the run broke off (exit $rc)" ;;
esac
echo "vm: 0 passed, 1 failed, 0 skipped"
exit 1
