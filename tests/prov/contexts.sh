#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# make check: every conformance case once more over scalable endpoints'
# contexts (CF_CONTEXTS=sep, tests/prov/contexts.c), over each provider of
# this library that offers them; skipped, never passed, when none does.
set -u
bld=${top_builddir:-.}
src=${top_srcdir:-.}
prog=$bld/tests/prov/conformance
[ -x "$prog" ] || { echo "no $prog: build first"; exit 99; }
LD_LIBRARY_PATH=$bld/.libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export LD_LIBRARY_PATH
provs=$("$prog" -P) || { echo "listing providers failed"; exit 1; }
usable=
for p in $provs; do
	[ "$p" = sockets ] && continue # tcp under another name
	"$bld/util/fi_info" -p "$p" >/dev/null 2>&1 || continue
	# sep_api skips (77) where fi_getinfo offers no FI_NAMED_RX_CTX.
	"$prog" -p "$p" -c sep_api >/dev/null 2>&1
	case $? in
	0) usable="$usable $p" ;;
	77) echo "skipping provider $p: no scalable endpoints" ;;
	*) echo "provider $p: sep_api fails"; usable="$usable $p" ;;
	esac
done
if [ -z "$usable" ]; then
	echo "no provider offers scalable endpoints: nothing to test"
	exit 77
fi
# shellcheck disable=SC2086
CF_CONTEXTS=sep CONFORMANCE=$prog sh "$src/tests/prov/run-conformance.sh" $usable
