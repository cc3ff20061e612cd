#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# The dynamic symbols libfabric.so.1 exports, with their version nodes, must
# be exactly those of libfabric 1.17 (tests/abi/exports.expected, taken from
# `objdump -T` of Debian's libfabric1 1.17).
set -u
lib="${top_builddir:-.}/.libs/libfabric.so.1"
expected="${top_srcdir:-.}/tests/abi/exports.expected"
[ -e "$lib" ] || { echo "no $lib: build first"; exit 99; }
command -v objdump >/dev/null || { echo "objdump missing (binutils)"; exit 77; }
actual=$(mktemp)
trap 'rm -f "$actual"' EXIT
# Every defined dynamic symbol (UND ones are imports), version node beside it.
objdump -T "$lib" | awk '$0 ~ /DF|DO|\*ABS\*/ && $0 !~ /\*UND\*/ {print $(NF-1), $NF}' |
	sort > "$actual"
if diff -u "$expected" "$actual"; then
	echo "exports match libfabric 1.17 ($(wc -l < "$expected") entries)"
	exit 0
fi
echo "exports differ from libfabric 1.17 (- expected, + actual)"
exit 1
