#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# Every source file of weft carries an SPDX license line near its top
# (LICENSE: BSD-2-Clause).  Looks at C sources and headers, shell scripts,
# build files and man pages under the source tree; generated and build
# products are not looked at.
top_srcdir=${top_srcdir:-.}
cd "$top_srcdir" || exit 99
missing=$(find . \( -name .git -o -name autom4te.cache -o -name build \
		-o -name 'build-*' -o -name _build -o -name _inst -o -name .libs -o -name .deps -o -name config \) -prune -o \
	\( -path ./config.h -o -path ./tests/vm/cache \) -prune -o \
	-type f \( -name '*.c' -o -name '*.h' -o -name '*.sh' -o -name '*.mk' \
		-o -name 'Makefile.include' -o -name 'Makefile.am' \
		-o -name configure.ac -o -name '*.[17]' -o -name '*.pc.in' \
		-o -path './fabtests/scripts/*' -o -path './.ci/*' \) -print |
	while read -r f; do
		head -n 5 "$f" | grep -q 'SPDX-License-Identifier: BSD-2-Clause' ||
			echo "$f"
	done)
if [ -n "$missing" ]; then
	echo "FAIL: source files without an SPDX line in their first 5 lines:"
	echo "$missing" | sed 's/^/  /'
	exit 1
fi
echo "PASS: every source file has its SPDX line"
