#!/bin/sh
# Run weft's whole test suite: builds first if needed (in the tree when it is
# configured there, else in build/), then `make check`, an install into a
# scratch directory, and a summary whose last line reads "N passed, N failed".
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
jobs=${JOBS:-2}
if [ -f "$top/config.status" ]; then
	bld=$top
else
	bld=$top/build
	mkdir -p "$bld"
	[ -x "$top/configure" ] || (cd "$top" && ./autogen.sh) || exit 1
	[ -f "$bld/config.status" ] || (cd "$bld" && "$top/configure" -q) || exit 1
fi
cd "$bld" || exit 1
make -j"$jobs" >/dev/null || { echo "build failed"; exit 1; }

rc=0
make -j"$jobs" check || rc=1
if [ $rc != 0 ]; then
	echo "== logs of failing tests"
	for f in $(find . -name '*.trs' -print); do
		if grep -q '^:test-result: \(FAIL\|ERROR\)' "$f"; then
			echo "--- ${f%.trs}.log"
			tail -n 60 "${f%.trs}.log"
		fi
	done
fi

# make install into a scratch root: the library and its soname link, the
# tools, the man pages, libfabric.pc, and a client built with pkg-config.
echo "== install check (contrib/check-install.sh)"
if "$top/contrib/check-install.sh" "$bld"; then
	inst=pass
else
	inst=fail
	rc=1
fi

# One summary line over every test automake ran (each Criterion case counts).
pass=0 fail=0 skip=0
for f in $(find . -name '*.trs' -print); do
	p=$(grep -c '^:test-result: \(PASS\|XFAIL\)' "$f")
	x=$(grep -c '^:test-result: \(FAIL\|ERROR\|XPASS\)' "$f")
	s=$(grep -c '^:test-result: SKIP' "$f")
	pass=$((pass + p)) fail=$((fail + x)) skip=$((skip + s))
done
[ $inst = pass ] && pass=$((pass + 1)) || fail=$((fail + 1))
echo "$pass passed, $fail failed, $skip skipped"
[ $fail = 0 ] || rc=1
exit $rc
