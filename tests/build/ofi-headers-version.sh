#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# weft builds against the OFI 1.17 headers only: its exported ABI
# (libfabric.map) and the structs it fills are 1.17's.  Headers of another
# version (here: the system's 1.17 headers with the minor version changed)
# must stop the build with a message naming the version needed, and the
# system's own headers must build.
top_srcdir=${top_srcdir:-.}
CC=${CC:-cc}
tmp=$(mktemp -d) || exit 99
trap 'rm -rf "$tmp"' EXIT

hdr=$(echo '#include <rdma/fabric.h>' | $CC -E -M -x c - 2>/dev/null |
	tr ' \\' '\n\n' | grep '/rdma/fabric\.h$' | head -n 1)
[ -n "$hdr" ] || { echo "SKIP: no OFI headers"; exit 77; }
printf '#include "weft/core.h"\nint weft_probe;\n' >"$tmp/probe.c"

if ! $CC -I"$top_srcdir/include" -I"${top_builddir:-.}" -c "$tmp/probe.c" -o "$tmp/ok.o" \
	2>"$tmp/ok.err"; then
	echo "FAIL: weft/core.h does not build against the system headers"
	cat "$tmp/ok.err"
	exit 1
fi

mkdir -p "$tmp/fake/rdma"
cp -r "$(dirname "$hdr")"/. "$tmp/fake/rdma/"
sed 's/^#define FI_MINOR_VERSION .*/#define FI_MINOR_VERSION 99/' "$hdr" \
	>"$tmp/fake/rdma/fabric.h"
if $CC -I"$tmp/fake" -I"$top_srcdir/include" -I"${top_builddir:-.}" -c "$tmp/probe.c" \
	-o "$tmp/bad.o" 2>"$tmp/bad.err"; then
	echo "FAIL: OFI 1.99 headers were accepted"
	exit 1
fi
if ! grep -q "OFI 1.17 headers only" "$tmp/bad.err"; then
	echo "FAIL: the build stopped without saying which headers it needs:"
	cat "$tmp/bad.err"
	exit 1
fi
echo "PASS: 1.17 headers build; 1.99 headers stop with: $(grep -o 'weft builds[^"]*' "$tmp/bad.err" | head -n 1)"
