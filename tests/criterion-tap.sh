#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# Run one Criterion test program with its report in TAP, so that automake's
# summary counts every test case.  Criterion writes TAP to stderr for "-".
#
# With the TAP report on stderr Criterion drops what the tests print,
# sanitizer reports included.  Under --enable-sanitizers
# (WEFT_SANITIZERS=yes) or --enable-tsan (WEFT_TSAN=yes) the report goes to
# a file instead, what the tests printed follows it as TAP comments, and a
# sanitizer report fails the program even when Criterion counted its test
# as passed.
prog="$1"
shift
if [ "${WEFT_SANITIZERS:-}" != yes ] && [ "${WEFT_TSAN:-}" != yes ]; then
	exec "$prog" --tap=- "$@" 2>&1
fi
dir=$(mktemp -d "${TMPDIR:-/tmp}/crit.XXXXXX") || exit 99
# One test at a time: Criterion's own runner leaks a 48-byte block when it
# runs tests in parallel with some of them skipped (libcriterion 2.4), and
# LeakSanitizer cannot be told to ignore that block without ignoring every
# leak under the runner's frames, which would be all of ours.
# Under ThreadSanitizer Criterion's runner needs help to place its arena
# (contrib/tsan-criterion-arena.c); contrib/tsan-tests.sh says which.
if [ -n "${WEFT_CRITERION_PRELOAD:-}" ]; then
	LD_PRELOAD=$WEFT_CRITERION_PRELOAD${LD_PRELOAD:+:$LD_PRELOAD} \
		"$prog" --jobs=1 --tap="$dir/tap" "$@" >"$dir/out" 2>&1
else
	"$prog" --jobs=1 --tap="$dir/tap" "$@" >"$dir/out" 2>&1
fi
rc=$?
cat "$dir/tap"
echo
sed 's/^/# /' "$dir/out"
if grep -q 'ERROR: [A-Za-z]*Sanitizer\|WARNING: ThreadSanitizer\|runtime error:' "$dir/out"; then
	echo "# a sanitizer reported an error (above)"
	[ $rc != 0 ] || rc=1
fi
rm -rf "$dir"
exit $rc
