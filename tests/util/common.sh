# SPDX-License-Identifier: BSD-2-Clause
# Shared by the tests of util/ (bash scripts): find the tools' real
# binaries and run them over a chosen libfabric.so.1.  Sourced, not run.
#
# A tool linked against the uninstalled libfabric.la is, with shared
# libraries, a libtool wrapper script that puts the build tree's .libs first
# on LD_LIBRARY_PATH; the binary it starts lives in .libs.  The tests run
# that binary themselves, with LD_LIBRARY_PATH naming the library they want,
# and check with the dynamic loader that this is the library it loads.

top_builddir=${top_builddir:-.}
top_srcdir=${top_srcdir:-.}

# Environment variables the library reads would make the two runs differ
# (FI_LOG_LEVEL makes it log pids and times): clear them all.
for v in $(env | sed -n 's/^\(FI_[A-Za-z0-9_]*\)=.*/\1/p'); do
	unset "$v"
done
unset v

if command -v timeout >/dev/null 2>&1; then
	TIMEOUT="timeout 120"
else
	TIMEOUT=
fi

tmpdir=$(mktemp -d) || exit 99
trap 'rm -rf "$tmpdir"' EXIT

# real_binary NAME: the ELF file behind $top_builddir/util/NAME.
real_binary()
{
	b="$top_builddir/util/$1"
	[ -e "$b" ] || return 1
	if [ "$(head -c 2 "$b")" != "#!" ]; then
		echo "$b"
		return 0
	fi
	for c in "$top_builddir/util/.libs/lt-$1" "$top_builddir/util/.libs/$1"; do
		if [ -x "$c" ]; then
			echo "$c"
			return 0
		fi
	done
	return 1
}

# loads_from BINARY LIBDIR: succeed if BINARY, run with
# LD_LIBRARY_PATH=LIBDIR, would load its libfabric.so.1 from LIBDIR.
loads_from()
{
	got=$(LD_LIBRARY_PATH="$2" LD_TRACE_LOADED_OBJECTS=1 "$1" 2>/dev/null |
		sed -n 's/^[[:space:]]*libfabric\.so\.1 => \([^ ]*\) .*/\1/p')
	[ -n "$got" ] || return 1
	[ "$(cd "$(dirname "$got")" && pwd -P)" = "$(cd "$2" && pwd -P)" ]
}

# run_as NAME BINARY LIBDIR OUT ERR ARGS...: run BINARY as argv[0]=NAME over
# LIBDIR, stdout to OUT, stderr to ERR; sets $status.
run_as()
{
	name=$1 bin=$2 libdir=$3 out=$4 err=$5
	shift 5
	# bash's exec -a sets argv[0], which usage and getopt messages print.
	(LD_LIBRARY_PATH="$libdir" exec $TIMEOUT \
		bash -c 'n=$1; b=$2; shift 2; exec -a "$n" "$b" "$@"' bash \
		"$name" "$bin" "$@") >"$out" 2>"$err"
	status=$?
}
