#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# make check: shm moves every byte when cross-memory attach is denied.
# The conformance suite's data cases run under a seccomp filter that makes
# process_vm_readv and process_vm_writev fail with EPERM (CF_DENY_CMA):
# in both processes, then in the peer process only.  Messages 0 B to
# 4 MiB, RMA writes and reads 1 B to 4 MiB (in one process and between
# two), atomics, counters bound to registrations (proc_mr_cntr); over shm, and over tcp whose peers on this host are
# reached through shm.  FI_SHM_CMA_MIN=0 asks for CMA at every size it
# could serve.  Each case checks its data byte for byte; weft's warning
# that it copies instead must appear, so the fallback is what ran.
set -u
bld=${top_builddir:-.}
src=${top_srcdir:-.}
prog=$bld/tests/prov/conformance
[ -x "$prog" ] || { echo "no $prog: build first"; exit 99; }
LD_LIBRARY_PATH=$bld/.libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export LD_LIBRARY_PATH
provs=$("$prog" -P) || { echo "listing providers failed"; exit 1; }
case " $(echo $provs) " in
*" shm "*) ;;
*) echo "no shm provider: nothing to test"; exit 77 ;;
esac
run="tcp"
case " $(echo $provs) " in *" tcp "*) ;; *) run= ;; esac
out=$(mktemp)
trap 'rm -f "$out"' EXIT
rc=0
all="-c msg_sizes -c tagged_sizes -c tagged_unexpected -c iov_msg -c rma_sizes
     -c rma_iov -c atomic -c proc_pingpong -c proc_rma -c proc_mr_cntr"
for mode in 1 peer; do
	cases=$all
	[ "$mode" = peer ] && cases="-c proc_pingpong -c proc_rma -c proc_mr_cntr"
	for p in shm $run; do
		echo "== $p, CMA denied ($mode)"
		# shellcheck disable=SC2086
		CF_DENY_CMA=$mode FI_SHM_CMA_MIN=0 FI_LOG_LEVEL=warn FI_LOG_PROV=shm \
			"$prog" -p "$p" $cases >"$out" 2>&1
		r=$?
		grep -v '^libfabric:' "$out"
		[ $r -eq 0 ] || rc=1
		if ! grep -q 'process_vm_readv/writev.*copied through shared memory' "$out"; then
			echo "FAIL: $p ($mode): weft never said it copies instead of CMA"
			rc=1
		fi
	done
done
exit $rc
