#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# contrib/test-all.sh --all: everything CI runs, ordered for two cores.
#
#   test-everything.sh [JOBS]
#
# Each step starts with "=== [ELAPSED s] WHAT" and ends with "--- WHAT:
# RESULT in N s".  The steps:
#   1. builds: the plain one (in the tree when it is configured there,
#      else build/), build-san/ (--enable-sanitizers) and build-tsan/
#      (--enable-tsan), with their test programs;
#   2. contrib/test-all.sh (the host part: make check, the install check,
#      Open MPI) and contrib/test-all.sh --sanitizers (make check) at
#      once, their lines prefixed "[plain] " and "[san] ": two jobs of one
#      user on one host, each with servers, ports and shm names of its own;
#      neither may disturb the other (what contrib/concurrent-check.sh
#      checks with two copies of one build);
#   3. the verbs tests in the QEMU VM, one boot for both builds
#      (tests/vm/check.sh BUILD SANBUILD: each test once, in the build that
#      suits it);
#   4. the threaded tests under ThreadSanitizer (test-all.sh --tsan);
#   5. make check-long (1000 start/kill cycles over shm and tcp);
#   6. make fuzz, FUZZ_TIME s a harness (default 60).
# The last line sums them all: "N passed, N failed, N skipped" (a step
# without counts of its own counts once).  Exit 1 if anything failed.
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
jobs=${1:-2}
ta=$top/contrib/test-all.sh
if [ -f "$top/config.status" ]; then
	bld=$top
else
	bld=$top/build
fi
san=$top/build-san
# the steps' logs, read for their counts; gone at exit
out=$(mktemp -d "${TMPDIR:-/tmp}/weft-all.XXXXXX") ||
	{ echo "cannot make a scratch directory in ${TMPDIR:-/tmp}"; exit 1; }
trap 'rm -rf "$out"' EXIT
t0=$(date +%s)
pass=0 fail=0 skip=0
report=

# begin WHAT; end WHAT STATUS [LOG]: a step's header, then its result.  A
# LOG whose last "N passed, N failed, N skipped" line names counts adds
# them; else the step counts once, as a pass or a failure.
begin() {
	ts=$(date +%s)
	echo
	echo "=== [$((ts - t0)) s] $*"
}
end() {
	_what=$1 _rc=$2 _log=${3:-}
	_dt=$(($(date +%s) - ts))
	_sum=
	[ -n "$_log" ] && _sum=$(sed -n 's/^\(\[[a-z]*\] \)\{0,1\}\([0-9][0-9]*\) passed, \([0-9][0-9]*\) failed, \([0-9][0-9]*\) skipped$/\2 \3 \4/p' "$_log" | tail -n 1)
	if [ -n "$_sum" ]; then
		# shellcheck disable=SC2086
		set -- $_sum
		pass=$((pass + $1)) fail=$((fail + $2)) skip=$((skip + $3))
		_res="$1 passed, $2 failed, $3 skipped"
		[ "$2" = 0 ] && [ "$_rc" != 0 ] &&
			{ fail=$((fail + 1)); _res="$_res; exit $_rc"; }
	elif [ "$_rc" = 0 ]; then
		pass=$((pass + 1)) _res=passed
	else
		fail=$((fail + 1)) _res="FAILED (exit $_rc)"
	fi
	echo "--- $_what: $_res in $_dt s"
	report="$report
$(printf '%6s s  %s: %s' "$_dt" "$_what" "$_res")"
}

# ---- 1. builds ----
begin "builds: plain, sanitized (build-san/), ThreadSanitizer (build-tsan/)"
rc=0
if [ "$bld" = "$top/build" ]; then
	mkdir -p "$bld" &&
		{ [ -x "$top/configure" ] || (cd "$top" && ./autogen.sh); } &&
		{ [ -f "$bld/config.status" ] || (cd "$bld" && "$top/configure" -q); } || rc=1
fi
[ $rc = 0 ] && make -C "$bld" -j"$jobs" >/dev/null &&
	make -C "$bld" -j"$jobs" check TESTS= >/dev/null || rc=1
# test-all.sh builds its copies (and only builds, with WEFT_BUILD_ONLY)
[ $rc = 0 ] && WEFT_BUILD_ONLY=1 "$ta" --sanitizers || rc=1
[ $rc = 0 ] && WEFT_BUILD_ONLY=1 "$ta" --tsan || rc=1
end builds $rc
[ $rc = 0 ] || { echo "the builds failed: nothing more runs"; echo "$pass passed, $fail failed, $skip skipped"; exit 1; }

# ---- 2. the plain and the sanitized suites at once ----
begin "the host suites, plain and under sanitizers, at once (test-all.sh, test-all.sh --sanitizers)"
# The VM runs once, in step 3, for both builds.
(WEFT_VM=0 "$ta" 2>&1; echo "exit status $?") | sed -u 's/^/[plain] /' |
	tee "$out/plain.log" &
(WEFT_VM=0 "$ta" --sanitizers 2>&1; echo "exit status $?") | sed -u 's/^/[san] /' |
	tee "$out/san.log" &
wait
for b in plain san; do
	rc=$(sed -n "s/^\[$b\] exit status \([0-9]*\)$/\1/p" "$out/$b.log" | tail -n 1)
	end "host suite ($b)" "${rc:-1}" "$out/$b.log"
	# its skip of the VM (WEFT_VM=0) is no skip: step 3 runs it
	grep -q '^\[[a-z]*\] SKIP: tests/vm/check.sh: vm: SKIPPED (WEFT_VM=0)' "$out/$b.log" &&
		skip=$((skip - 1))
done

# ---- 3. the VM: both builds, one boot ----
begin "verbs tests in the VM, both builds, one boot (tests/vm/check.sh)"
# 45 minutes at most (about 35 on two cores), so that a stuck VM still
# leaves a report within CI's time.
(cd "$bld" && top_builddir=$bld WEFT_VM_TIMEOUT=${WEFT_VM_TIMEOUT:-2700} \
	bash "$top/tests/vm/check.sh" "$bld" "$san") 2>&1 |
	tee "$out/vm.log"
rc=$(grep -c '^vm: [0-9]* passed, 0 failed' "$out/vm.log")
if grep -q '^vm: SKIPPED' "$out/vm.log"; then
	skip=$((skip + 1))
	echo "--- VM: $(grep '^vm: SKIPPED' "$out/vm.log" | tail -n 1) in $(($(date +%s) - ts)) s"
	report="$report
$(printf '%6s s  VM: skipped' "$(($(date +%s) - ts))")"
else
	[ "$rc" -ge 1 ] && rc=0 || rc=1
	sed -i 's/^vm: //' "$out/vm.log"
	end "VM (verbs)" $rc "$out/vm.log"
fi

# ---- 4. ThreadSanitizer ----
begin "threaded tests under ThreadSanitizer (test-all.sh --tsan, 900 s at most)"
timeout -k 30 900 "$ta" --tsan 2>&1 | tee "$out/tsan.log"
rc=$(sed -n 's/^tsan: [0-9]* passed, \([0-9]*\) failed.*/\1/p' "$out/tsan.log" | tail -n 1)
sed -i 's/^tsan: //' "$out/tsan.log"
end "ThreadSanitizer" "${rc:-1}" "$out/tsan.log"

# ---- 5. start/kill cycles ----
begin "1000 start/kill cycles (make check-long)"
make -C "$bld" check-long
end "check-long" $?

# ---- 6. fuzzing ----
begin "fuzzing (make fuzz, ${FUZZ_TIME:-60} s a harness)"
FUZZ_TIME=${FUZZ_TIME:-60} make -C "$bld" fuzz
end "fuzz" $?

echo
echo "=== [$(($(date +%s) - t0)) s] summary (time, step, result)$report"
echo "$pass passed, $fail failed, $skip skipped"
[ $fail = 0 ]
