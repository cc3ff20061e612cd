#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# The dynamic symbols libfabric.so.1 exports, with their version nodes:
#  - exactly those of libfabric 2.6.0 (tests/abi/exports-2.6.expected: the
#    nodes of its libfabric.map, each symbol's default "@@" node the newest
#    that names it, the older ones "(...)" as `objdump -T` prints them);
#  - and every one that libfabric 1.17 exported (exports-1.17.expected,
#    `objdump -T` of Debian's libfabric1 1.17), at the same node, so that a
#    program linked against 1.17 still finds each symbol it bound.  A
#    default there may be a compat version here: the dynamic linker binds
#    fi_getinfo@FABRIC_1.3 to either.
set -u
lib="${top_builddir:-.}/.libs/libfabric.so.1"
dir="${top_srcdir:-.}/tests/abi"
[ -e "$lib" ] || { echo "no $lib: build first"; exit 99; }
command -v objdump >/dev/null || { echo "objdump missing (binutils)"; exit 77; }
actual=$(mktemp)
trap 'rm -f "$actual"' EXIT
# Every defined dynamic symbol (UND ones are imports), version node beside it.
objdump -T "$lib" | awk '$0 ~ /DF|DO|\*ABS\*/ && $0 !~ /\*UND\*/ {print $(NF-1), $NF}' |
	sort > "$actual"
rc=0
if diff -u "$dir/exports-2.6.expected" "$actual"; then
	echo "exports match libfabric 2.6.0 ($(wc -l < "$dir/exports-2.6.expected") entries)"
else
	echo "exports differ from libfabric 2.6.0 (- expected, + actual)"
	rc=1
fi
missing=$(tr -d '()' < "$dir/exports-1.17.expected" | sort |
	comm -23 - "$(tr -d '()' < "$actual" | sort > "$actual.plain"; echo "$actual.plain")")
rm -f "$actual.plain"
if [ -n "$missing" ]; then
	echo "exports of libfabric 1.17 missing:"
	echo "$missing"
	rc=1
else
	echo "every export of libfabric 1.17 is there ($(wc -l < "$dir/exports-1.17.expected") entries)"
fi
exit $rc
