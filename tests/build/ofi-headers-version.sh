#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# weft builds on any OFI headers from 1.17 on; its ABI does not follow them
# (docs/ABI.md).  Checked here with the system's headers and copies of them
# whose version says otherwise:
#  - the system's headers build weft/core.h;
#  - headers that say 2.6 build it too, and weft's pinned values hold
#    (a 2.x header's FI_VARIABLE_MSG is 0; weft's stays bit 48);
#  - headers that say 1.16 stop the build with a message naming what is
#    needed.
# Real 1.20, 2.0 and 2.6 headers are not on a Debian 12 machine: docs/ABI.md
# says how the whole library was built against them.
top_srcdir=${top_srcdir:-.}
CC=${CC:-cc}
tmp=$(mktemp -d) || exit 99
trap 'rm -rf "$tmp"' EXIT

hdr=$(echo '#include <rdma/fabric.h>' | $CC -E -M -x c - 2>/dev/null |
	tr ' \\' '\n\n' | grep '/rdma/fabric\.h$' | head -n 1)
[ -n "$hdr" ] || { echo "SKIP: no OFI headers"; exit 77; }
cat >"$tmp/probe.c" <<'EOC'
#include "weft/core.h"
_Static_assert(FI_VARIABLE_MSG == (1ULL << 48), "FI_VARIABLE_MSG pinned");
_Static_assert(FI_MR_BASIC == 1 && FI_MR_SCALABLE == 2, "mr_mode pinned");
_Static_assert(FI_TAGGED_DIRECTED_RECV == (1ULL << 45), "2.x caps named");
int weft_probe;
EOC

build() {	# INCDIR OUT
	$CC ${1:+-I"$1"} -I"$top_srcdir/include" -I"${top_builddir:-.}" \
		-c "$tmp/probe.c" -o "$tmp/$2.o" 2>"$tmp/$2.err"
}
fake() {	# DIR MAJOR MINOR [SED]
	mkdir -p "$1/rdma"
	cp -r "$(dirname "$hdr")"/. "$1/rdma/"
	sed -e "s/^#define FI_MAJOR_VERSION .*/#define FI_MAJOR_VERSION $2/" \
		-e "s/^#define FI_MINOR_VERSION .*/#define FI_MINOR_VERSION $3/" \
		-e "${4:-s/^\$//}" "$hdr" >"$1/rdma/fabric.h"
}

if ! build "" sys; then
	echo "FAIL: weft/core.h does not build against the system headers"
	cat "$tmp/sys.err"
	exit 1
fi
# A 2.x header defines FI_VARIABLE_MSG as 0: weft must keep its own value.
fake "$tmp/v26" 2 6 's/^#define FI_VARIABLE_MSG.*/#define FI_VARIABLE_MSG 0ULL/'
if ! build "$tmp/v26" v26; then
	echo "FAIL: headers that say 2.6 do not build weft/core.h"
	cat "$tmp/v26.err"
	exit 1
fi
fake "$tmp/v116" 1 16
if build "$tmp/v116" v116; then
	echo "FAIL: OFI 1.16 headers were accepted"
	exit 1
fi
if ! grep -q "1.17 or newer" "$tmp/v116.err"; then
	echo "FAIL: the build stopped without saying which headers it needs:"
	cat "$tmp/v116.err"
	exit 1
fi
echo "PASS: the system's and 2.6-numbered headers build; 1.16 stops with: $(grep -o 'weft needs[^"]*' "$tmp/v116.err" | head -n 1)"
