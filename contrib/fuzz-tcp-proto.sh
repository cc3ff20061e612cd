#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# Fuzz the tcp frame parser (prov/tcp/tcp_proto.c) with libFuzzer for a
# bounded time: builds tests/fuzz/fuzz_tcp_proto.c with clang under
# -fsanitize=fuzzer,address,undefined, seeds a corpus with one valid frame
# of each kind, and runs.  Exits 0 when the time ran out with nothing
# found, 77 when clang cannot build a fuzzer, and libFuzzer's status on a
# finding (the crashing input is left in the work directory).
#
#   FUZZ_TIME   seconds to fuzz (default 60)
#   FUZZ_DIR    work directory, kept afterwards (default: a scratch one,
#               removed unless something was found)
#   CLANG       the compiler (default clang)
#
# The headers need config.h: taken from a tree configured in place or in
# build/, else made by a configure run in the work directory.
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
time_max=${FUZZ_TIME:-60}
cc=${CLANG:-clang}
keep=${FUZZ_DIR:+yes}
work=${FUZZ_DIR:-$(mktemp -d "${TMPDIR:-/tmp}/fuzz-tcp-proto.XXXXXX")} ||
	exit 1
mkdir -p "$work/corpus" || exit 1

echo 'int LLVMFuzzerTestOneInput(const char *d, unsigned long n)
{ return 0; }' >"$work/probe.c"
if ! "$cc" -fsanitize=fuzzer "$work/probe.c" -o "$work/probe" 2>/dev/null
then
	echo "SKIP: $cc cannot build with -fsanitize=fuzzer"
	[ -n "$keep" ] || rm -rf "$work"
	exit 77
fi

if [ -f "$top/config.h" ]; then
	cfg=$top
elif [ -f "$top/build/config.h" ]; then
	cfg=$top/build
else
	[ -x "$top/configure" ] || (cd "$top" && ./autogen.sh) || exit 1
	mkdir -p "$work/build" &&
		(cd "$work/build" && "$top/configure" -q) || exit 1
	cfg=$work/build
fi

srcs="$top/tests/fuzz/fuzz_tcp_proto.c $top/prov/tcp/tcp_proto.c
	$top/prov/util/util_atomic.c"
flags="-g -O1 -I$top/include -I$cfg -I$top/prov/tcp -I$top/tests/unit"
# shellcheck disable=SC2086 # word splitting of the lists is meant
"$cc" $flags -DFUZZ_TCP_PROTO_SEEDS $srcs -o "$work/seeds" &&
	"$work/seeds" "$work/corpus" || exit 1
# shellcheck disable=SC2086
"$cc" $flags -fsanitize=fuzzer,address,undefined \
	-fno-sanitize-recover=undefined $srcs -o "$work/fuzz_tcp_proto" ||
	exit 1

echo "fuzzing the tcp frame parser for at most ${time_max}s in $work"
cd "$work" || exit 1
UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
export UBSAN_OPTIONS
./fuzz_tcp_proto -max_total_time="$time_max" -max_len=512 \
	-print_final_stats=1 corpus
rc=$?
if [ $rc = 0 ]; then
	echo "PASS: nothing found in ${time_max}s"
	[ -n "$keep" ] || rm -rf "$work"
else
	echo "FAIL: libFuzzer exit $rc; inputs and build kept in $work"
fi
exit $rc
