#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
#
# Tests of fabtests/scripts/run and fabtests/scripts/compare, run over the
# reference library (REF_LIBDIR, Debian's libfabric 1.17), so that what is
# checked is the scripts, not weft:
#   - run -q over shm,tcp: exit 0, the summary table, "not run" for an
#     endpoint type a provider lacks (MSG over shm);
#   - two runs at once: both pass (they share no server name or port);
#   - run with a program that fails: reported as FAIL, exit non-zero;
#   - compare -q: compare.csv, compare.md and the plots.
# Skips (77) without the reference library.

: "${top_srcdir:?}" "${top_builddir:?}"
if [ -z "${REF_LIBDIR:-}" ] || [ ! -e "$REF_LIBDIR/libfabric.so.1" ]; then
	echo "no reference libfabric.so.1 (REF_LIBDIR='${REF_LIBDIR:-}'): skipped"
	exit 77
fi
export LD_LIBRARY_PATH=$REF_LIBDIR
unset FI_PROVIDER

# 1.17's shm names a client's region after its pid ("PID:0:0" in
# /dev/shm) and leaves it behind when the process is killed; a later
# process with that pid then fails fi_enable with -EBUSY, which has
# nothing to do with the scripts under test.  This user's regions of pids
# that no longer run are removed first (another user's are left alone:
# kill -0 tells that their pid is taken).
for f in /dev/shm/[0-9]*:[0-9]*:[0-9]*; do
	[ -f "$f" ] && [ -O "$f" ] || continue
	p=${f##*/}
	p=${p%%:*}
	kill -0 "$p" 2>/dev/null || rm -f "$f"
done
run=$top_srcdir/fabtests/scripts/run
compare=$top_srcdir/fabtests/scripts/compare
bin=$top_builddir/fabtests
tmp=$(mktemp -d "${TMPDIR:-/tmp}/test-scripts.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
# logs the runner keeps go away with the rest
export TMPDIR=$tmp
fails=0

fail() {
	echo "FAIL: $*"
	fails=$((fails + 1))
}

# The summary table's cell: rows are 58 columns of name, then a column
# per provider (and raw).
cell() {	# file row-name column-number
	awk -v r="$2" -v n="$3" 'length($0) > 58 {
		row = substr($0, 1, 58); sub(/ +$/, "", row)
		if (row == r) { split(substr($0, 59), f, " "); v = f[n] }
	} END { print v }' "$1"
}

# ---- 1: a passing run ----
echo "=== run -q -p shm,tcp"
timeout -k 10 150 "$run" -q -p shm,tcp -b "$bin" \
	-t fi_msg_pingpong,fi_rdm_pingpong,fi_raw_memcpy_bw >"$tmp/pass.out" 2>&1
rc=$?
cat "$tmp/pass.out"
[ $rc = 0 ] || fail "run exited $rc, expected 0"
grep -q '^test  *shm  *tcp  *raw' "$tmp/pass.out" ||
	fail "no summary header 'test shm tcp raw'"
[ "$(cell "$tmp/pass.out" "fi_msg_pingpong -e msg" 1)" = notrun ] ||
	fail "MSG over shm is not reported as notrun"
[ "$(cell "$tmp/pass.out" "fi_msg_pingpong -e msg" 2)" = pass ] ||
	fail "MSG over tcp did not pass"
[ "$(cell "$tmp/pass.out" "fi_rdm_pingpong -e rdm" 1)" = pass ] ||
	fail "fi_rdm_pingpong over shm did not pass"
[ "$(cell "$tmp/pass.out" "fi_raw_memcpy_bw" 3)" = pass ] ||
	fail "fi_raw_memcpy_bw did not pass"
grep -q 'failed: 0 ' "$tmp/pass.out" || fail "summary does not say 'failed: 0'"
grep -q 'not run: [1-9]' "$tmp/pass.out" || fail "summary counts nothing as not run"

# ---- 1b: two runs at once ----
# Other jobs on the host run the same scripts at the same time: each run's
# servers must get names and ports of their own (1.17's shm names a server
# after its node and service).
echo "=== two runs of run -q -p shm at once"
for i in 1 2; do
	mkdir -p "$tmp/twice.$i"
	TMPDIR=$tmp/twice.$i timeout -k 10 150 "$run" -q -p shm -e rdm -b "$bin" \
		-t fi_rdm_pingpong,fi_rdm_tagged_pingpong,fi_rdm_tagged_bw,fi_flood,fi_av_xfer \
		>"$tmp/twice.$i.out" 2>&1 &
	eval "twice_$i=$!"
done
for i in 1 2; do
	eval "p=\$twice_$i"
	if ! wait "$p"; then
		cat "$tmp/twice.$i.out"
		fail "run $i of two at once failed"
	fi
done
[ $fails = 0 ] && echo "both passed"

# ---- 2: a forced failure ----
# A directory whose fi_rdm_pingpong is a program that exits 1 at once.
echo "=== run with a failing program"
mkdir "$tmp/bin"
real=$bin/.libs/fi_msg_pingpong
[ -x "$real" ] || real=$bin/fi_msg_pingpong
ln -s "$real" "$tmp/bin/fi_msg_pingpong"
ln -s "$(type -P false)" "$tmp/bin/fi_rdm_pingpong"
timeout -k 10 100 "$run" -q -p tcp -e rdm -b "$tmp/bin" -T 20 \
	-t fi_rdm_pingpong >"$tmp/fail.out" 2>&1
rc=$?
cat "$tmp/fail.out"
[ $rc != 0 ] || fail "run exited 0 although a program failed"
[ "$(cell "$tmp/fail.out" "fi_rdm_pingpong -e rdm" 1)" = FAIL ] ||
	fail "the failing program is not reported as FAIL"
grep -q '^FAILED fi_rdm_pingpong' "$tmp/fail.out" ||
	fail "no FAILED section for the failing program"

# ---- 3: compare ----
echo "=== compare -q"
timeout -k 10 150 "$compare" -q -r 1 -p shm,tcp -b "$bin" \
	"$REF_LIBDIR" "$REF_LIBDIR" "$tmp/cmp" >"$tmp/cmp.out" 2>&1
rc=$?
cat "$tmp/cmp.out"
[ $rc = 0 ] || fail "compare exited $rc"
csv=$tmp/cmp/compare.csv
md=$tmp/cmp/compare.md
head -n 1 "$csv" 2>/dev/null |
	grep -q '^test,provider,size,lib,usec_per_xfer,mb_per_s,ratio_b_a$' ||
	fail "compare.csv has no header"
grep -q '^rdm_tagged_pingpong,tcp,4096,B,[0-9.]*,[0-9.]*,[0-9.]*$' "$csv" ||
	fail "compare.csv has no B row with a ratio for rdm_tagged_pingpong over tcp"
grep -q '^raw_memcpy_bw,raw,' "$csv" || fail "compare.csv has no raw baseline"
grep -q '^## rdm_tagged_pingpong over shm$' "$md" ||
	fail "compare.md has no table for rdm_tagged_pingpong over shm"
grep -q '^| 65536 | [0-9.]* | [0-9.]* | [0-9.]* | [0-9.]* |' "$md" ||
	fail "compare.md has no filled row for 64k"
if command -v gnuplot >/dev/null; then
	for f in latency-shm latency-tcp bandwidth-shm bandwidth-tcp; do
		p=$(ls "$tmp/cmp/$f".png "$tmp/cmp/$f".svg 2>/dev/null | head -n 1)
		if [ -z "$p" ]; then
			fail "no plot $f"
		elif ! head -c 8 "$p" | grep -aq 'PNG\|<?xml\|<svg'; then
			fail "$p is not an image"
		fi
	done
else
	echo "gnuplot not installed: plots not checked"
fi

echo "=== $fails failure(s)"
[ $fails = 0 ]
