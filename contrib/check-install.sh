#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# Install weft from a built tree into a scratch root (make install
# DESTDIR=...) and check what a user of the installed library relies on:
# the library and its soname link, the tools, the man pages, libfabric.pc,
# and an OFI client built with `pkg-config --cflags --libs libfabric` that
# loads the installed library and finds a provider through fi_getinfo.
# Usage: check-install.sh [BUILD_DIR]; prints one line per check and ends
# with "install check: pass" or "install check: fail".
set -u
bld=${1:-.}
top=$(cd "$(dirname "$0")/.." && pwd)
dest=$(mktemp -d) || exit 1
trap 'rm -rf "$dest"' EXIT
ok=1
check() { # check WHAT COMMAND...: run COMMAND, report WHAT
	what=$1
	shift
	if "$@" >"$dest/.out" 2>&1; then
		echo "  ok: $what"
	else
		echo "  FAILED: $what"
		sed 's/^/    /' "$dest/.out"
		ok=0
	fi
}

if ! make -C "$bld" install DESTDIR="$dest/root" >"$dest/install.log" 2>&1; then
	tail -n 30 "$dest/install.log"
	echo "install check: fail (make install)"
	exit 1
fi
prefix=$(sed -n 's/^prefix=//p' "$bld/libfabric.pc")
libdir=$(pkg-config --define-variable=prefix="$prefix" \
	--variable=libdir "$bld/libfabric.pc")
root=$dest/root
lib=$root$libdir

soname_ok() {
	[ -L "$lib/libfabric.so.1" ] && [ -e "$lib/libfabric.so.1" ] &&
		objdump -p "$lib/libfabric.so.1" | grep -q 'SONAME *libfabric\.so\.1$'
}
check "library $libdir/libfabric.so.1 is a link to a library of that soname" soname_ok
check "development link $libdir/libfabric.so" test -e "$lib/libfabric.so"
for t in fi_info fi_strerror; do
	check "tool $prefix/bin/$t" test -x "$root$prefix/bin/$t"
done
for m in "$top"/man/*.[0-9]; do
	sec=${m##*.}
	check "man page man$sec/$(basename "$m")" \
		test -s "$root$prefix/share/man/man$sec/$(basename "$m")"
done
pc=$lib/pkgconfig/libfabric.pc
check "pkg-config file $libdir/pkgconfig/libfabric.pc" pkg-config --validate "$pc"

# A client built only from what pkg-config says, against the installed copy.
cat >"$dest/client.c" <<'CLIENT'
#include <stdio.h>
#include <rdma/fabric.h>
int main(void)
{
	struct fi_info *info = NULL, *cur;
	int ret = fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, NULL, &info);

	if (ret) {
		fprintf(stderr, "fi_getinfo: %d\n", ret);
		return 1;
	}
	for (cur = info; cur; cur = cur->next)
		printf("%s\n", cur->fabric_attr->prov_name);
	fi_freeinfo(info);
	return 0;
}
CLIENT
# The build's own compiler flags: a library built with sanitizers needs a
# client built with them (the sanitizer runtime must come first).
cflags=$(sed -n 's/^CFLAGS = //p' "$bld/Makefile")
ldflags=$(sed -n 's/^LDFLAGS = //p' "$bld/Makefile")
build_client() {
	PKG_CONFIG_PATH=$lib/pkgconfig PKG_CONFIG_SYSROOT_DIR=$root \
		sh -c 'cc $3 "$1" -o "$2" $(pkg-config --cflags --libs libfabric) $4' \
		sh "$dest/client.c" "$dest/client" "$cflags" "$ldflags"
}
check "a client builds with \$(pkg-config --cflags --libs libfabric)" build_client
runs_installed() {
	got=$(LD_LIBRARY_PATH=$lib LD_TRACE_LOADED_OBJECTS=1 "$dest/client" |
		sed -n 's/^[[:space:]]*libfabric\.so\.1 => \([^ ]*\) .*/\1/p')
	[ "$(readlink -f "$got")" = "$(readlink -f "$lib/libfabric.so.1")" ] ||
		{ echo "loads $got"; return 1; }
	LD_LIBRARY_PATH=$lib "$dest/client" | grep -qx shm
}
check "the client loads the installed library and fi_getinfo finds shm" runs_installed

if [ $ok = 1 ]; then
	echo "install check: pass"
else
	echo "install check: fail"
	exit 1
fi
