#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# Replay the checked-in corpus of every libFuzzer harness of tests/fuzz
# (tests/fuzz/corpus/NAME/) through the harness built with the configured
# compiler and a plain main(): the seeds and the inputs of past findings
# must keep every promise the harness checks.  A harness aborts on a broken
# one; each replay is bounded in time.
set -u
srcdir=${top_srcdir:-$(cd "$(dirname "$0")/../.." && pwd)}
builddir=${top_builddir:-.}
rc=0
for h in tcp_proto tcp_handshake shm_peer verbs_proto udp_peer; do
	prog=$builddir/tests/fuzz/replay_$h
	corpus=$srcdir/tests/fuzz/corpus/$h
	n=$(ls "$corpus" | wc -l)
	if [ "$n" = 0 ]; then
		echo "FAIL: $h: no corpus in $corpus"
		rc=1
		continue
	fi
	if timeout -s KILL 300 "$prog" "$corpus"; then
		echo "PASS: $h: $n inputs replayed"
	else
		echo "FAIL: $h: replay of $corpus failed ($?)"
		rc=1
	fi
done
# With CMA on, a request naming this process must still not make the
# victim write into it (the input keeps to this process's own memory).
if FUZZ_SHM_CMA=1 timeout -s KILL 300 "$builddir/tests/fuzz/replay_shm_peer" \
	"$srcdir/tests/fuzz/corpus/shm_peer/cma-self"; then
	echo "PASS: shm_peer: cma-self replayed with CMA on"
else
	echo "FAIL: shm_peer: cma-self with CMA on ($?)"
	rc=1
fi
exit $rc
