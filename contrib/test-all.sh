#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# Run weft's whole test suite: builds first if needed (in the tree when it is
# configured there, else in build/), then `make check`, an install into a
# scratch directory, the verbs tests in a QEMU VM (make check-vm: see
# tests/vm/README.md; WEFT_VM=0 skips them, visibly), the MPI programs
# under Open MPI over this build (make check-mpi: see tests/mpi/README.md;
# WEFT_MPI=0 skips them, visibly), and a summary whose last line reads
# "N passed, N failed, N skipped".
#
# --sanitizers: the same under AddressSanitizer, LeakSanitizer and
# UndefinedBehaviorSanitizer, in build-san/ (./configure --enable-sanitizers).
# Automake refuses a build directory beside a source tree configured in
# place, so build-san/ holds a copy of the sources (the files git tracks, and
# new ones it does not ignore), refreshed on each run.
#
# --tsan: only the tests that run threads, under ThreadSanitizer, in
# build-tsan/ (./configure --enable-tsan; a copy of the sources as for
# --sanitizers).  Any race report fails the run.  What runs, and why, is
# in contrib/tsan-tests.sh; its last line reads "tsan: N passed, N failed,
# N skipped".
#
# --all: everything CI runs, in as little time as two cores allow, each
# step headed by "=== [elapsed] what" and followed by what it took:
#   1. the sanitized and ThreadSanitizer builds (build-san/, build-tsan/);
#   2. this suite (host part) and the same under sanitizers at once: two
#      jobs of one user on one host, each with servers, ports and shm
#      names of its own, neither may disturb the other;
#   3. the verbs tests in the VM, one boot for both builds
#      (tests/vm/check.sh BUILD SANBUILD: each test once, in the build
#      that suits it);
#   4. --tsan; 5. make check-long; 6. make fuzz (FUZZ_TIME s a harness,
#      default 60).
# Its last line sums every step: "N passed, N failed, N skipped".
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
jobs=${JOBS:-2}
san=no
case "${1:-}" in
--sanitizers) san=yes ;;
--tsan) san=tsan ;;
--all) san=all ;;
"") ;;
*) echo "usage: $0 [--sanitizers | --tsan | --all]" >&2; exit 2 ;;
esac

# WEFT_BUILD_ONLY=1 (contrib/test-everything.sh): build the library and
# the test programs, and stop there (--tsan: contrib/tsan-tests.sh's own
# build, only the programs it runs).
build_only() {
	[ "${WEFT_BUILD_ONLY:-0}" = 1 ] || return 0
	make -j"$jobs" >/dev/null && make -j"$jobs" check TESTS= >/dev/null || exit 1
	exit 0
}

# A copy of the sources in $1, configured with the options that follow.
copy_tree() {
	_dir=$1
	shift
	command -v git >/dev/null && git -C "$top" rev-parse >/dev/null 2>&1 ||
		{ echo "a sanitizer build copies the sources with git: none here"; exit 1; }
	mkdir -p "$_dir" || exit 1
	# cp -u: only what changed, so that make rebuilds only that.
	(cd "$top" && git ls-files -z --cached --others --exclude-standard |
		xargs -0 cp -u --parents -t "$_dir") || exit 1
	[ -x "$_dir/configure" ] || (cd "$_dir" && ./autogen.sh) || exit 1
	[ -f "$_dir/config.status" ] ||
		(cd "$_dir" && ./configure -q "$@") || exit 1
}

if [ $san = all ]; then
	exec "$top/contrib/test-everything.sh" "$jobs"
elif [ $san = tsan ]; then
	bld=$top/build-tsan
	copy_tree "$bld" --enable-tsan
	cd "$bld" || exit 1
	exec "$bld/contrib/tsan-tests.sh" "$jobs"
elif [ $san = yes ]; then
	bld=$top/build-san
	copy_tree "$bld" --enable-sanitizers
	# LeakSanitizer is on by default with ASan; say it anyway.  A UBSan
	# finding aborts the program (-fno-sanitize-recover), with its stack.
	ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0}
	UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
	export ASAN_OPTIONS UBSAN_OPTIONS
elif [ -f "$top/config.status" ]; then
	bld=$top
else
	bld=$top/build
	mkdir -p "$bld"
	[ -x "$top/configure" ] || (cd "$top" && ./autogen.sh) || exit 1
	[ -f "$bld/config.status" ] || (cd "$bld" && "$top/configure" -q) || exit 1
fi
cd "$bld" || exit 1
build_only
# The results of this build: an in-tree build leaves out build/,
# build-san/ and build-tsan/ below it, which hold builds of their own.
trs_files() {
	find . \( -path ./build -o -path ./build-san -o -path ./build-tsan \) -prune -o \
		-name '*.trs' -print | sort
}
make -j"$jobs" >/dev/null || { echo "build failed"; exit 1; }

rc=0
make -j"$jobs" check || rc=1
if [ $rc != 0 ]; then
	echo "== logs of failing tests"
	for f in $(trs_files); do
		if grep -q '^:test-result: \(FAIL\|ERROR\)' "$f"; then
			echo "--- ${f%.trs}.log"
			tail -n 60 "${f%.trs}.log"
		fi
	done
fi

# make install into a scratch root: the library and its soname link, the
# tools, the man pages, libfabric.pc, and a client built with pkg-config.
echo "== install check (contrib/check-install.sh)"
if "$top/contrib/check-install.sh" "$bld"; then
	inst=pass
else
	inst=fail
	rc=1
fi

# The verbs tests on soft-RDMA devices in a QEMU VM (tests/vm/check.sh);
# WEFT_VM=0 leaves them out, visibly.  Its own last line "vm: N passed, N
# failed, N skipped", or one skip when it could not run ("vm: SKIPPED
# (reason)"), counts in the summary below.  Under --sanitizers the same
# tests run the sanitized build (the reference library's and Open MPI's
# runs skip), in the VM the plain build made: its cache is shared.
vm_pass=0 vm_fail=0 vm_skip=0 vm_why=
if [ $san != tsan ]; then
	if [ $san = yes ] && [ -z "${WEFT_VM_CACHE:-}" ]; then
		if [ -f "$top/config.status" ]; then
			WEFT_VM_CACHE=$top/tests/vm/cache
		else
			WEFT_VM_CACHE=$top/build/tests/vm/cache
		fi
		export WEFT_VM_CACHE
	fi
	what=
	[ $san = yes ] && what=", under sanitizers"
	echo "== verbs tests in a VM (make check-vm$what)"
	vm_t0=$(date +%s)
	vm_out=$(mktemp)
	make -j"$jobs" check-vm 2>&1 | tee "$vm_out"
	vm_t1=$(date +%s)
	sum=$(sed -n 's/^vm: \([0-9]*\) passed, \([0-9]*\) failed, \([0-9]*\) skipped$/\1 \2 \3/p' "$vm_out" | tail -n 1)
	if [ -n "$sum" ]; then
		set -- $sum
		vm_pass=$1 vm_fail=$2 vm_skip=$3
	elif grep -q '^vm: SKIPPED' "$vm_out"; then
		vm_skip=1
		vm_why=$(grep '^vm: SKIPPED' "$vm_out" | tail -n 1)
	else
		vm_fail=1
	fi
	rm -f "$vm_out"
	echo "== the VM part took $((vm_t1 - vm_t0)) s: $vm_pass passed, $vm_fail failed, $vm_skip skipped"
	[ $vm_fail = 0 ] || rc=1
fi

# Open MPI over this build (tests/mpi/run.sh): in the plain run only (an
# MPI program cannot load a sanitized library).  Its last line "mpi: N
# passed, N failed, N skipped", or one skip when nothing could run ("mpi:
# SKIPPED (reason)"), counts in the summary below; its SKIP and XFAIL lines
# are repeated there.
mpi_pass=0 mpi_fail=0 mpi_skip=0 mpi_why= mpi_skips=
if [ $san = no ]; then
	echo "== MPI programs over weft (make check-mpi)"
	mpi_out=$(mktemp)
	make -j"$jobs" check-mpi 2>&1 | tee "$mpi_out"
	sum=$(sed -n 's/^mpi: \([0-9]*\) passed, \([0-9]*\) failed, \([0-9]*\) skipped$/\1 \2 \3/p' "$mpi_out" | tail -n 1)
	if [ -n "$sum" ]; then
		set -- $sum
		mpi_pass=$1 mpi_fail=$2 mpi_skip=$3
		mpi_skips=$(sed -n '/^== summary/,$p' "$mpi_out" | grep '^\(SKIP\|XFAIL\): ')
	elif grep -q '^mpi: SKIPPED' "$mpi_out"; then
		mpi_skip=1
		mpi_why=$(grep '^mpi: SKIPPED' "$mpi_out" | tail -n 1)
	else
		mpi_fail=1
	fi
	rm -f "$mpi_out"
	[ $mpi_fail = 0 ] || rc=1
else
	echo "== MPI programs: not under sanitizers (the plain run has them)"
fi

# What was skipped, and why: a skip must never pass for a pass unseen.
for f in $(trs_files); do
	grep -q '^:test-result: SKIP' "$f" || continue
	log=${f%.trs}.log
	if grep -q '^SKIP: ' "$log"; then
		grep '^SKIP: ' "$log"
	else
		echo "SKIP: ${f#./}: $(head -n 1 "$log")"
	fi
done
[ -z "$vm_why" ] || echo "SKIP: tests/vm/check.sh: $vm_why"
[ -z "$mpi_why" ] || echo "SKIP: tests/mpi/run.sh: $mpi_why"
[ -z "$mpi_skips" ] || echo "$mpi_skips" | sed 's|^\([A-Z]*\): |\1: tests/mpi |'


# One summary line over every test automake ran (each Criterion case counts).
pass=0 fail=0 skip=0
for f in $(trs_files); do
	p=$(grep -c '^:test-result: \(PASS\|XFAIL\)' "$f")
	x=$(grep -c '^:test-result: \(FAIL\|ERROR\|XPASS\)' "$f")
	s=$(grep -c '^:test-result: SKIP' "$f")
	pass=$((pass + p)) fail=$((fail + x)) skip=$((skip + s))
done
[ $inst = pass ] && pass=$((pass + 1)) || fail=$((fail + 1))
pass=$((pass + vm_pass)) fail=$((fail + vm_fail)) skip=$((skip + vm_skip))
pass=$((pass + mpi_pass)) fail=$((fail + mpi_fail)) skip=$((skip + mpi_skip))
echo "$pass passed, $fail failed, $skip skipped"
[ $fail = 0 ] || rc=1
exit $rc
