#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# Run the conformance suite over one or more providers:
#
#   run-conformance.sh [--lib DIR] [-c CASE]... PROVIDER [PROVIDER...]
#
# --lib DIR puts DIR first on LD_LIBRARY_PATH, so the same program runs over
# another libfabric.so.1 (e.g. the reference one).  The program is
# $CONFORMANCE, else tests/prov/conformance under $top_builddir or the
# current directory.  Prints each case's PASS/FAIL/SKIP line, a summary per
# provider and a last line "N passed, N failed, N skipped"; exits 1 if any
# case failed, 77 if every case was skipped.
set -u
cases=
while [ $# -gt 0 ]; do
	case $1 in
	--lib)
		[ -n "$2" ] || { echo "--lib: no directory given"; exit 2; }
		LD_LIBRARY_PATH=$2${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
		export LD_LIBRARY_PATH
		shift 2 ;;
	-c)
		cases="$cases -c $2"
		shift 2 ;;
	--)
		shift
		break ;;
	-*)
		echo "usage: $0 [--lib DIR] [-c CASE]... PROVIDER..."
		exit 2 ;;
	*)
		break ;;
	esac
done
[ $# -gt 0 ] || { echo "usage: $0 [--lib DIR] [-c CASE]... PROVIDER..."; exit 2; }

prog=${CONFORMANCE:-}
if [ -z "$prog" ]; then
	for d in "${top_builddir:-.}" . "$(dirname "$0")/../.."; do
		if [ -x "$d/tests/prov/conformance" ]; then
			prog=$d/tests/prov/conformance
			break
		fi
	done
fi
[ -n "$prog" ] && [ -x "$prog" ] || { echo "conformance program not built"; exit 99; }

pass=0 fail=0 skip=0
out=$(mktemp)
trap 'rm -f "$out"' EXIT
for p in "$@"; do
	echo "== provider $p${LD_LIBRARY_PATH:+ (LD_LIBRARY_PATH=$LD_LIBRARY_PATH)}"
	# shellcheck disable=SC2086
	"$prog" -p "$p" $cases | tee "$out"
	p1=$(grep -c '^PASS: ' "$out")
	f1=$(grep -c '^FAIL: ' "$out")
	s1=$(grep -c '^SKIP: ' "$out")
	# A run that died without a summary is a failure of its own.
	grep -q "^$p: [0-9]* passed" "$out" || f1=$((f1 + 1))
	pass=$((pass + p1)) fail=$((fail + f1)) skip=$((skip + s1))
done
echo "$pass passed, $fail failed, $skip skipped"
[ $fail -eq 0 ] || exit 1
[ $pass -gt 0 ] || exit 77
exit 0
