#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# Every manual page of man/ renders without a warning: man -l with
# warnings on (what a reader's man does), or groff -man -ww where man(1)
# is missing.  Skips (77) without either.
top_srcdir=${top_srcdir:-.}
if command -v man >/dev/null 2>&1 && man --help 2>&1 | grep -q -- --warnings; then
	tool=man
elif command -v groff >/dev/null 2>&1; then
	tool=groff
else
	echo "SKIP: neither man(1) with --warnings nor groff(1) here"
	exit 77
fi
fails=0
n=0
for f in "$top_srcdir"/man/*.1 "$top_srcdir"/man/*.7; do
	[ -e "$f" ] || continue
	n=$((n + 1))
	if [ $tool = man ]; then
		out=$(LC_ALL=C.UTF-8 MANWIDTH=80 man --warnings -l "$f" 2>&1 >/dev/null)
		s=$?
	else
		out=$(LC_ALL=C.UTF-8 groff -man -ww -z -Tutf8 "$f" 2>&1)
		s=$?
	fi
	if [ $s != 0 ] || [ -n "$out" ]; then
		echo "FAIL: $(basename "$f") (exit $s):"
		echo "$out" | sed 's/^/  /'
		fails=$((fails + 1))
	else
		echo "ok: $(basename "$f")"
	fi
done
[ $n -gt 0 ] || { echo "no manual pages under $top_srcdir/man"; exit 99; }
[ $fails = 0 ] || exit 1
echo "PASS: $n manual pages render cleanly ($tool)"
