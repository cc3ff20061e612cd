#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
#
# Remote-shell agent for mpirun (--mca plm_rsh_agent PATH) between hosts
# that are network namespaces of this machine:
#   nsrsh.sh [options...] HOST COMMAND...
# runs COMMAND in HOST's network namespace under a hostname of its own (a
# UTS namespace of its own), so that Open MPI sees one node per namespace
# and does not try shared memory between them.
#
# WEFT_NSRSH_HOSTS maps each HOST (as mpirun names it: an address or a
# name) to its namespace, "HOST=NAMESPACE" pairs separated by spaces; the
# hostname taken is the namespace's name.  mpirun passes its environment
# on to its agent, so run.sh exports the map of its own namespaces.
set -u

# ssh-style options mpirun may put before the host
while [ $# -gt 0 ]; do
	case $1 in
	-x | -T | -q) shift ;;
	-o | -l | -p) shift 2 ;;
	-*) shift ;;
	*) break ;;
	esac
done
[ $# -ge 2 ] || { echo "usage: $0 HOST COMMAND..." >&2; exit 2; }
host=$1
shift
ns=
for pair in ${WEFT_NSRSH_HOSTS:-}; do
	[ "${pair%%=*}" = "$host" ] && ns=${pair#*=}
done
[ -n "$ns" ] || { echo "$0: no namespace for host '$host' in WEFT_NSRSH_HOSTS" >&2; exit 255; }
exec ip netns exec "$ns" unshare -u sh -c "hostname \"\$0\" && exec sh -c \"\$1\"" "$ns" "$*"
