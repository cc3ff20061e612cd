#!/bin/sh
# The main job: what weft offers on this machine (fi_info), then a pingpong
# over each provider weft has built.  Run from the top of a built tree.
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
bld=${WEFT_BUILD:-$top}
[ -x "$bld/util/fi_info" ] || { echo "build weft first (./configure && make)"; exit 1; }
export LD_LIBRARY_PATH="$bld/.libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"

echo "== fi_info -l (providers in weft's libfabric.so.1)"
"$bld/util/fi_info" -l
echo
echo "== fi_info"
"$bld/util/fi_info"
status=$?
provs=$("$bld/util/fi_info" -l 2>/dev/null | sed -n 's/^\([a-z0-9_]*\):$/\1/p')
if [ -z "$provs" ]; then
	echo
	echo "weft has no provider built yet: no pingpong to run."
	# fi_getinfo finding nothing is the expected answer here.
	exit 0
fi
pp="$bld/fabtests/fi_rdm_pingpong"
for p in $provs; do
	echo
	echo "== fi_rdm_pingpong -p $p"
	if [ ! -x "$pp" ]; then
		echo "fabtests not built: skipping"
		continue
	fi
	"$bld/fabtests/scripts/run" -q -p "$p" || status=1
done
exit $status
