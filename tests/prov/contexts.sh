#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# make check: every conformance case once more over scalable endpoints'
# contexts (CF_CONTEXTS=sep, tests/prov/contexts.c), and once more with
# every endpoint on a shared transmit context (CF_CONTEXTS=stx), and once
# more with each endpoint's receives on a shared receive context of its
# own (CF_CONTEXTS=srx), over each provider of this library that offers
# them; skipped, never passed, when none does.
set -u
bld=${top_builddir:-.}
src=${top_srcdir:-.}
prog=$bld/tests/prov/conformance
[ -x "$prog" ] || { echo "no $prog: build first"; exit 99; }
LD_LIBRARY_PATH=$bld/.libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export LD_LIBRARY_PATH
provs=$("$prog" -P) || { echo "listing providers failed"; exit 1; }
status=77
# mode CASE: the providers whose CASE passes (it skips, 77, where
# fi_getinfo offers no such contexts), then the suite over them.
for mode in sep:sep_api stx:stx_api srx:srx_api; do
	m=${mode%%:*} probe=${mode#*:}
	usable=
	for p in $provs; do
		[ "$p" = sockets ] && continue # tcp under another name
		"$bld/util/fi_info" -p "$p" >/dev/null 2>&1 || continue
		out=$("$prog" -p "$p" -c "$probe" 2>&1)
		rc=$?
		# (the suite exits 0 when its one case skipped)
		[ $rc = 0 ] && echo "$out" | grep -q "^SKIP: $p $probe" && rc=77
		case $rc in
		0) usable="$usable $p" ;;
		77) echo "CF_CONTEXTS=$m: skipping provider $p: $probe skips" ;;
		*) echo "CF_CONTEXTS=$m: provider $p: $probe fails"
		   usable="$usable $p" ;;
		esac
	done
	if [ -z "$usable" ]; then
		echo "CF_CONTEXTS=$m: no provider offers them: nothing to test"
		continue
	fi
	echo "=== CF_CONTEXTS=$m"
	# shellcheck disable=SC2086
	CF_CONTEXTS=$m CONFORMANCE=$prog sh "$src/tests/prov/run-conformance.sh" $usable
	case $? in
	0) [ $status = 77 ] && status=0 ;;
	77) ;;
	*) status=1 ;;
	esac
done
exit $status
