#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# A commit flushes FI_RMA_PMEM memory at the target, and only there and
# then (tests/tcp/pmem.c): over tcp's sockets, tcp's shared memory and
# shm.  The debug log of the target's flush is the evidence: the data
# checks alone pass without it.
prog=${top_builddir:-.}/tests/tcp/pmem
log=$(mktemp) || exit 1
trap 'rm -f "$log"' EXIT
status=0
run() {
	name=$1
	shift
	s=0
	env FI_LOG_LEVEL=debug FI_LOG_SUBSYS=ep_data "$@" timeout 60 \
		"$prog" -p "$prov" 2>"$log" || s=$?
	case $s in
	0) ;;
	77) echo "$name: skipped"; return ;;
	*) echo "$name: failed ($s)"; grep -v 'commit:' "$log" | tail -5
	   status=1; return ;;
	esac
	# The flushes, each after the step that asked for it.
	got=$(grep -E '^step: |commit: ' "$log" |
	      sed -n 's/^step: \(.*\)$/[\1]/p; s/.*commit: \([0-9]*\) bytes.*/\1/p' |
	      tr '\n' ' ')
	want="[commit write 70001 to pmem] 70001 [commit atomic 8 to pmem] 8 [commit write 4096 to plain] [plain write 5000 to pmem] [end] "
	if [ "$got" != "$want" ]; then
		echo "$name: flushes: $got"
		echo "$name:    want: $want"
		status=1
	else
		echo "$name: flushed what was committed, nothing else"
	fi
}
prov=tcp run "tcp over sockets" FI_TCP_SHM=0
prov=tcp run "tcp over shared memory" FI_TCP_SHM=1
prov=shm run "shm"
prov=sockets run "sockets" FI_TCP_SHM=0
exit $status
