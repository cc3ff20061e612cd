#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# Fuzz weft's wire-facing code with libFuzzer, each harness for a bounded
# time (`make fuzz` runs this with what it needs in the environment).
#
# The library is compiled once with clang, instrumented for coverage and
# built with AddressSanitizer and UndefinedBehaviorSanitizer; each harness
# of tests/fuzz (fuzz_NAME.c) is linked to it with libFuzzer and run from
# its checked-in corpus (tests/fuzz/corpus/NAME/) plus the seeds its
# -DFUZZ_SEEDS build writes.  One line per harness says how many inputs it
# ran, for how long, and how it ended.  Exits 0 when every harness ran out
# its time with nothing found, 77 when clang cannot build a fuzzer, 1 on a
# finding: the crashing input (crash-*, leak-*, timeout-*) is kept in the
# work directory, ready to go into the corpus as a regression input.
#
#   FUZZ_TIME       seconds per harness (default 60)
#   FUZZ_HARNESSES  which (default: tcp_proto tcp_handshake shm_peer
#                   verbs_proto udp_peer)
#   FUZZ_JOBS       harnesses run at once (default 2)
#   FUZZ_DIR        work directory, kept afterwards (default: a scratch
#                   one, removed unless something was found)
#   CLANG           the compiler (default clang)
# and, from make: FUZZ_SOURCES (the library's sources, relative to the
# source tree), FUZZ_CPPFLAGS, FUZZ_LIBS.
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
time_max=${FUZZ_TIME:-60}
harnesses=${FUZZ_HARNESSES:-tcp_proto tcp_handshake shm_peer verbs_proto udp_peer}
cc=${CLANG:-clang}
keep=${FUZZ_DIR:+yes}
work=${FUZZ_DIR:-$(mktemp -d "${TMPDIR:-/tmp}/weft-fuzz.XXXXXX")} || exit 1
mkdir -p "$work/obj" || exit 1

finish() {
	[ "$1" != 0 ] || [ -n "$keep" ] || rm -rf "$work"
	exit "$1"
}

if [ -z "${FUZZ_SOURCES:-}" ]; then
	echo "contrib/fuzz.sh: run it as 'make fuzz' (FUZZ_SOURCES unset)" >&2
	finish 2
fi
echo 'int LLVMFuzzerTestOneInput(const char *d, unsigned long n)
{ return 0; }' >"$work/probe.c"
if ! "$cc" -fsanitize=fuzzer,address,undefined "$work/probe.c" \
	-o "$work/probe" 2>/dev/null; then
	echo "SKIP: fuzz: $cc cannot build with -fsanitize=fuzzer"
	finish 77
fi

san="-fsanitize=address,undefined -fno-sanitize-recover=undefined"
# shellcheck disable=SC2086 # FUZZ_CPPFLAGS is a list of flags
cflags="-g -O1 -pthread $san ${FUZZ_CPPFLAGS:-}"
cflags="$cflags -I$top/prov/shm -I$top/prov/tcp -I$top/prov/verbs"
cflags="$cflags -I$top/prov/udp"
cflags="$cflags -I$top/tests/unit"

echo "fuzz: building the library with $cc (coverage, ASan, UBSan)"
t0=$(date +%s)
# One object per source, two compilers at a time (the headers listed among
# the sources are compiled with them).
# shellcheck disable=SC2086
printf '%s\n' $FUZZ_SOURCES | sed -n 's/[.]c$//p' |
	xargs -P 2 -I % sh -c "$cc $cflags -fsanitize=fuzzer-no-link \
		-c '$top/%.c' -o '$work/obj/'\"\$(echo % | tr / _)\".o" ||
	finish 1
echo "fuzz: library built in $(($(date +%s) - t0))s"

# fuzz_one HARNESS: build it and run it for $time_max seconds; its report
# goes to $work/HARNESS.out, its status to $work/HARNESS.rc.
fuzz_one() {
	h=$1
	src=$top/tests/fuzz/fuzz_$h.c
	corpus=$work/corpus-$h
	log=$work/$h.log
	mkdir -p "$corpus" "$work/found-$h"
	# The seeds and the checked-in corpus start it; new inputs go to
	# the work directory, never into the source tree.
	# shellcheck disable=SC2086
	if ! "$cc" $cflags -DFUZZ_SEEDS "$src" "$work"/obj/*.o \
		${FUZZ_LIBS:-} -o "$work/seeds-$h" ||
		! "$work/seeds-$h" "$corpus" >/dev/null; then
		echo "FAIL: fuzz $h: the seeds do not build or run"
		return 1
	fi
	[ -d "$top/tests/fuzz/corpus/$h" ] &&
		cp "$top/tests/fuzz/corpus/$h"/* "$corpus"/ 2>/dev/null
	# shellcheck disable=SC2086
	if ! "$cc" $cflags -fsanitize=fuzzer "$src" "$work"/obj/*.o \
		${FUZZ_LIBS:-} -o "$work/fuzz-$h"; then
		echo "FAIL: fuzz $h: the harness does not build"
		return 1
	fi
	(cd "$work/found-$h" &&
		UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
			"$work/fuzz-$h" -max_total_time="$time_max" \
			-timeout=20 -rss_limit_mb=4096 -max_len=4096 \
			-print_final_stats=1 "$corpus") >"$log" 2>&1
	st=$?
	runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
	secs=$(sed -n 's/^Done [0-9]* runs in \([0-9]*\) second.*/\1/p' \
		"$log")
	if [ $st = 0 ]; then
		echo "PASS: fuzz $h: ${runs:-?} runs in ${secs:-?}s," \
			"nothing found"
		return 0
	fi
	found=$(ls "$work/found-$h" 2>/dev/null | head -1)
	echo "FAIL: fuzz $h: libFuzzer exit $st after ${runs:-?} runs;" \
		"input $work/found-$h/${found:-?}, log $log"
	grep -m 5 -E 'ERROR|SUMMARY|fuzz_' "$log" | sed 's/^/    /'
	return 1
}

# FUZZ_JOBS harnesses at a time (default 2: a libFuzzer run keeps one CPU
# busy, so two on two CPUs each get the time they are given); their lines
# are printed in the order of $harnesses.
jobs=${FUZZ_JOBS:-2}
n=0
for h in $harnesses; do
	(fuzz_one "$h" >"$work/$h.out" 2>&1; echo $? >"$work/$h.rc") &
	n=$((n + 1))
	if [ $n -ge "$jobs" ]; then
		wait
		n=0
	fi
done
wait
rc=0
for h in $harnesses; do
	cat "$work/$h.out"
	[ "$(cat "$work/$h.rc" 2>/dev/null)" = 0 ] || rc=1
done
finish $rc
