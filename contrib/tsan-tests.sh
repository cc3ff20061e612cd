#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# weft's tests that run threads, under ThreadSanitizer.  Run it from the top
# of a build configured with --enable-tsan (contrib/test-all.sh --tsan makes
# one in build-tsan/ and runs this there).  Any race report fails the run:
# TSan stops the reporting process at once with exit status 66, which every
# runner below counts as a failure (Criterion's worker, a conformance case's
# child, a fabtests client or server), and tests/criterion-tap.sh also fails
# a program whose output holds a report.  The last line reads
# "tsan: N passed, N failed, N skipped".
#
# usage: tsan-tests.sh [JOBS]
set -u
jobs=${1:-2}
src=$(cd "$(dirname "$0")/.." && pwd)
grep -q '^WEFT_TSAN = yes' Makefile 2>/dev/null || {
	echo "tsan: $(pwd) is not a build configured with --enable-tsan"
	exit 2
}
# history_size: longer stacks for the earlier access of a race.  Options
# the caller set come after ours, so they win.
TSAN_OPTIONS="halt_on_error=1:exitcode=66:second_deadlock_stack=1:history_size=4${TSAN_OPTIONS:+:$TSAN_OPTIONS}"
export TSAN_OPTIONS

# What runs, chosen by looking for threads (grep pthread_create in tests/,
# fabtests/, prov/ and src/):
# - unit tests that start threads of their own: test_av (inserts from
#   several threads), test_cntr, test_core (logging from threads), test_cq
#   (writers against readers and fi_cq_sread), test_eq, test_shm_names,
#   test_wait (wakers), test_tostr (fi_tostr's per-thread buffer); and
#   test_mr_cache, whose library side runs the registration cache's
#   monitor thread (prov/util/util_mr_cache.c).
unit_tests="tests/unit/test_av tests/unit/test_cntr tests/unit/test_core
	tests/unit/test_cq tests/unit/test_eq tests/unit/test_shm_names
	tests/unit/test_wait tests/unit/test_tostr tests/unit/test_mr_cache"
# - conformance cases with a second thread, over shm and tcp (tcp with
#   shm inside for peers on this host, then tcp alone): FI_THREAD_SAFE endpoints driven
#   by four threads (thread_safe), fi_cq_sread and fi_cntr_wait woken by
#   another thread (cq_calls, cases_wait.c), and FI_PROGRESS_AUTO, the
#   engine's progress thread (prov/util/util_rdm_ep.c), against the
#   application's own calls (progress_auto); a scalable endpoint's
#   contexts, a thread each, under FI_THREAD_ENDPOINT (no lock may be
#   needed between them) and FI_THREAD_SAFE (sep_threads*; skipped where
#   a provider has no scalable endpoints); two endpoints on one shared
#   receive context, a thread each, matching each other's receives
#   (srx_threads).
conf_cases="thread_safe cq_calls cq_sread_sleeps cq_sread_wakes
	cq_sread_shared cq_sread_first_send cq_wait_fd_epoll cntr_wait_wakes
	progress_auto sep_threads sep_threads_safe srx_threads"
# - fabtests: fi_mt_bw (threads sharing one FI_THREAD_SAFE domain: an
#   endpoint each, a context pair each of one scalable endpoint, or one
#   endpoint for all: its rows of the matrix, -o ep, sep and shared) as
#   server and client over shm and tcp; every fabtests program also runs
#   ft.c's watchdog thread beside its main one.
ft_tests=fi_mt_bw
# Left out: tests/tcp/local-peers.sh (two processes, no thread), the
# verbs provider's threads (its tests need the VM: make check-vm), the
# MPI programs (an MPI library cannot load a sanitized libfabric).

pass=0 fail=0 skip=0
count() { # pass fail skip
	pass=$((pass + $1)) fail=$((fail + $2)) skip=$((skip + $3))
}

# Only the test programs below are built (make check would build them
# all): check_PROGRAMS on the command line.
progs="$(printf '%s ' $unit_tests)tests/prov/conformance"
echo "== tsan: build"
make -j"$jobs" >/dev/null &&
	make -j"$jobs" check TESTS= check_PROGRAMS="$progs" >/dev/null ||
	{ echo "tsan: build failed"; exit 1; }
# WEFT_BUILD_ONLY=1 (contrib/test-everything.sh): the build, no more.
[ "${WEFT_BUILD_ONLY:-0}" = 1 ] && exit 0

echo "== tsan: unit tests"
# Criterion's runner cannot place its arena beside ThreadSanitizer without
# help: see contrib/tsan-criterion-arena.c.  Built plain (not instrumented).
cc=$(sed -n 's/^CC = //p' Makefile)
${cc:-cc} -shared -fPIC -O2 -o tests/tsan-criterion-arena.so \
	"$src/contrib/tsan-criterion-arena.c" ||
	{ echo "tsan: cannot build tests/tsan-criterion-arena.so"; exit 1; }
WEFT_CRITERION_PRELOAD=$(pwd)/tests/tsan-criterion-arena.so
export WEFT_CRITERION_PRELOAD
# shellcheck disable=SC2086
list=$(printf '%s ' $unit_tests)
timeout -k 10 900 make -j"$jobs" check TESTS="$list" check_PROGRAMS="$progs" \
	>/dev/null 2>&1
for t in $unit_tests; do
	trs=$t.trs
	if [ ! -f "$trs" ]; then
		echo "FAIL: $t: no result (did not run, or timed out)"
		count 0 1 0
		continue
	fi
	p=$(grep -c '^:test-result: \(PASS\|XFAIL\)' "$trs")
	x=$(grep -c '^:test-result: \(FAIL\|ERROR\|XPASS\)' "$trs")
	s=$(grep -c '^:test-result: SKIP' "$trs")
	echo "$t: $p passed, $x failed, $s skipped"
	grep '^SKIP: ' "$t.log" | head -n 3
	if [ "$x" != 0 ]; then
		grep '^\(not ok\|# .*\(ThreadSanitizer\|SUMMARY\)\)' "$t.log" | head -n 20
		echo "   (whole log: $(pwd)/$t.log)"
	fi
	count "$p" "$x" "$s"
done

# One run of the conformance cases: conf_run LABEL VAR=VALUE PROVIDER...
conf_run() {
	_label=$1 _env=$2
	shift 2
	echo "== tsan: conformance cases, $_label"
	out=$(mktemp)
	sel=
	for c in $conf_cases; do
		sel="$sel -c $c"
	done
	# shellcheck disable=SC2086
	env top_builddir=. "$_env" timeout -k 10 900 \
		tests/prov/run-conformance.sh $sel "$@" >"$out" 2>&1
	grep '^\(PASS\|FAIL\|SKIP\|  fail\|SUMMARY: ThreadSanitizer\)' "$out"
	# A case that passed and then drew a report prints PASS, then FAIL
	# (exit status 66): it counts as failed, once.
	p=$(grep '^PASS: ' "$out" | sed 's/^PASS: //' | sort -u)
	f=$(grep '^FAIL: ' "$out" | sed 's/^FAIL: \([^:]*\):.*/\1/' | sort -u)
	s=$(grep -c '^SKIP: ' "$out")
	np=$(printf '%s\n' "$p" | grep -vcxF -e "$f" -e '')
	nf=$(printf '%s\n' "$f" | grep -c .)
	grep -q '^[0-9]* passed, [0-9]* failed' "$out" || {
		echo "FAIL: conformance: no summary (crashed or timed out)"
		nf=$((nf + 1))
	}
	grep -q 'WARNING: ThreadSanitizer' "$out" && [ "$nf" = 0 ] && {
		echo "FAIL: conformance: a ThreadSanitizer report, no failed case"
		nf=1
	}
	[ "$nf" = 0 ] || sed -n '/WARNING: ThreadSanitizer/,/^SUMMARY/p' "$out" |
		head -n 120
	echo "conformance, $_label: $np passed, $nf failed, $s skipped"
	count "$np" "$nf" "$s"
	rm -f "$out"
}
conf_run "shm and tcp" FI_TCP_SHM=1 shm tcp
# tcp reaches peers on this host through shm; its sockets and their
# progress run only with that off (as tests/prov/check-providers.sh does).
conf_run "tcp with FI_TCP_SHM=0" FI_TCP_SHM=0 tcp

echo "== tsan: fabtests ($ft_tests) over shm and tcp"
if timeout -k 10 900 fabtests/scripts/run -q -p shm,tcp -t "$ft_tests" \
	-e msg,rdm -b fabtests -T 120; then
	count 1 0 0
else
	echo "FAIL: fabtests $ft_tests (logs above)"
	count 0 1 0
fi

echo "tsan: $pass passed, $fail failed, $skip skipped"
[ $fail = 0 ]
