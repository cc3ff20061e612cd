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

ns_made=
host_a=()
addr_a=192.0.2.1
addr_b=192.0.2.2
ifname=wmpi0	# the veth end in each namespace has this name

ns_kill_all() {
	local ns pids i
	for ns in $ns_made; do
		pids=$(ip netns pids "$ns" 2>/dev/null)
		# shellcheck disable=SC2086
		[ -n "$pids" ] && kill $pids 2>/dev/null
	done
	for ns in $ns_made; do
		i=0
		while [ -n "$(ip netns pids "$ns" 2>/dev/null)" ] && [ $i -lt 30 ]; do
			sleep 0.1
			i=$((i + 1))
		done
		pids=$(ip netns pids "$ns" 2>/dev/null)
		# shellcheck disable=SC2086
		[ -n "$pids" ] && kill -KILL $pids 2>/dev/null
	done
}

cleanup() {
	trap - EXIT INT TERM HUP
	if [ -n "$ns_made" ]; then
		ns_kill_all
		for ns in $ns_made; do
			ip netns del "$ns" 2>/dev/null
		done
		ns_made=
	fi
	ns_a= ns_b= host_a=()
}
trap cleanup EXIT
trap 'exit 129' HUP
trap 'exit 130' INT
trap 'exit 143' TERM

# Make the two hosts (names unique to this run); ns_why says why not.
ns_why=
hosts_up() {
	[ "$(id -u)" = 0 ] || { ns_why="network namespaces need root (running as uid $(id -u))"; return 1; }
	command -v ip >/dev/null 2>&1 || { ns_why="no ip(8) (iproute2)"; return 1; }
	command -v unshare >/dev/null 2>&1 || { ns_why="no unshare(1) for a hostname per host"; return 1; }
	local a=weft-mpi-$$-a b=weft-mpi-$$-b o
	step() {
		o=$("$@" 2>&1) || { ns_why="cannot make the two hosts: '$*': $o"; return 1; }
	}
	step ip netns add "$a" || return 1
	ns_made=$a
	step ip netns add "$b" || return 1
	ns_made="$a $b"
	step ip link add "$ifname" netns "$a" type veth peer name "$ifname" netns "$b" || return 1
	step ip -n "$a" addr add "$addr_a/24" dev "$ifname" || return 1
	step ip -n "$b" addr add "$addr_b/24" dev "$ifname" || return 1
	for n in $a $b; do
		step ip -n "$n" link set lo up || return 1
		step ip -n "$n" link set "$ifname" up || return 1
	done
	ns_a=$a ns_b=$b
	# the prefix that runs a command on host a under its own hostname
	host_a=(ip netns exec "$ns_a" unshare -u
		sh -c 'hostname "$0" && exec "$@"' "$ns_a")
	export WEFT_NSRSH_HOSTS="$addr_a=$ns_a $addr_b=$ns_b"
	return 0
}


