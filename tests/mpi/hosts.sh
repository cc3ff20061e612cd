# SPDX-License-Identifier: BSD-2-Clause
#
# Two hosts on one machine for the MPI tests (sourced by run.sh and
# bench.sh, bash): two network namespaces with names unique to this run
# (weft-mpi-PID-a, -b) joined by a veth pair, 192.0.2.1 and 192.0.2.2
# (TEST-NET-1) on an interface named $ifname in both, so one FI_TCP_IFACE
# serves every rank.  hosts_up makes them (ns_why says why not); cleanup,
# installed on EXIT and the usual signals, stops whatever still runs in
# them and removes them (the veth pair goes with them).  mpirun runs in
# ns_a under a hostname of its own, its daemon for the other host comes
# through nsrsh.sh (WEFT_NSRSH_HOSTS maps each address to its namespace).

# shellcheck source=tests/lib.sh
. "$here/../lib.sh"
host_a=()
addr_a=192.0.2.1
addr_b=192.0.2.2
ifname=wmpi0	# the veth end in each namespace has this name

# Stops what still runs on the hosts.
ns_kill_all() {
	# shellcheck disable=SC2086 # a list of names
	ns_stop $ns_made
}

cleanup() {
	trap - EXIT INT TERM HUP
	if [ -n "$ns_made" ]; then
		# shellcheck disable=SC2086
		ns_remove $ns_made
		ns_made=
	fi
	ns_a= ns_b= host_a=()
}
trap cleanup EXIT
trap 'exit 129' HUP
trap 'exit 130' INT
trap 'exit 143' TERM

# Make the two hosts (names unique to this run); ns_why says why not.
hosts_up() {
	[ "$(id -u)" = 0 ] || { ns_why="network namespaces need root (running as uid $(id -u))"; return 1; }
	command -v ip >/dev/null 2>&1 || { ns_why="no ip(8) (iproute2)"; return 1; }
	command -v unshare >/dev/null 2>&1 || { ns_why="no unshare(1) for a hostname per host"; return 1; }
	local a=weft-mpi-$$-a b=weft-mpi-$$-b
	veth_hosts "$a" "$b" "$ifname" "$ifname" "$addr_a" "$addr_b" >/dev/null ||
		return 1
	ns_a=$a ns_b=$b
	# the prefix that runs a command on host a under its own hostname
	host_a=(ip netns exec "$ns_a" unshare -u
		sh -c 'hostname "$0" && exec "$@"' "$ns_a")
	export WEFT_NSRSH_HOSTS="$addr_a=$ns_a $addr_b=$ns_b"
	return 0
}


