#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# Two `make check` runs of this tree at the same time, as two jobs on one
# host run them: copies the tree's files (with any local changes) into two
# scratch directories, builds both, then runs `make check` in both at once.
# Both must pass: shm names, fabtests servers and ports of one run must
# never get in the way of the other's.
#
# usage: contrib/concurrent-check.sh [SECONDS]   (limit per step, default 1800)
# Prints each copy's test summary; exits 0 when both passed.  Keeps the
# copies (and their logs) only when one failed.
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
limit=${1:-1800}
work=$(mktemp -d "${TMPDIR:-/tmp}/weft-concurrent.XXXXXX")
echo "concurrent check in $work (limit ${limit}s per step)"

# copy DIR: the files git tracks, as they are in the working tree.
copy() {
	mkdir -p "$1" &&
		(cd "$top" && git ls-files -z | tar --null -T - -cf -) |
		(cd "$1" && tar -xf -)
}

# step NAME COMMAND...: run in both copies at once; 0 when both succeeded.
step() {
	name=$1
	shift
	for c in a b; do
		(cd "$work/$c" && timeout -k 10 "$limit" sh -c "$*" \
			>"$work/$c.$name.log" 2>&1; echo $? >"$work/$c.$name.rc") &
	done
	wait
	ok=0
	for c in a b; do
		rc=$(cat "$work/$c.$name.rc")
		echo "copy $c: $name: exit $rc"
		[ "$rc" = 0 ] || ok=1
	done
	return $ok
}

status=0
for c in a b; do
	copy "$work/$c" || { echo "cannot copy the tree"; exit 1; }
done
# one make job per copy: the two copies share the machine
if ! step build './autogen.sh >/dev/null && ./configure -q && make -j1 >/dev/null'; then
	status=1
else
	step check 'make -j1 check' || status=1
	for c in a b; do
		echo "--- copy $c:"
		grep '^# \(TOTAL\|PASS\|SKIP\|FAIL\|ERROR\|XPASS\|XFAIL\):' \
			"$work/$c.check.log"
		grep '^\(FAIL\|ERROR\):' "$work/$c.check.log"
	done
fi
if [ $status = 0 ]; then
	echo "concurrent check: both copies passed"
	rm -rf "$work"
else
	echo "concurrent check: FAILED (logs in $work)"
	for f in "$work"/*.log; do
		echo "--- $f (last lines)"
		tail -n 20 "$f"
	done
	# What each failed test printed: its failing cases and its last lines.
	for c in a b; do
		[ -f "$work/$c.check.log" ] || continue
		sed -n 's/^\(FAIL\|ERROR\): \([^ ]*\).*/\2/p' "$work/$c.check.log" |
			sort -u | while read -r t; do
			f=$work/$c/$t.log
			[ -f "$f" ] || continue
			echo "--- copy $c: $t.log (failed cases, then last lines)"
			grep -E -A8 '^(FAIL|ERROR)' "$f" | head -n 80
			echo "..."
			tail -n 30 "$f"
		done
	done
fi
exit $status
