# SPDX-License-Identifier: BSD-2-Clause
#
# Sourced by the test scripts (sh or bash): what several of them need.
#
#   skip WHY...             print "SKIP: WHY..." and exit 77
#   find_prog DIR NAME      the program NAME built under DIR: the ELF file,
#                           not libtool's wrapper script, which would put
#                           the build's own library first whatever
#                           LD_LIBRARY_PATH says; exits 99 when there is none
#   wait_line FILE RE [PID] [TENTHS]
#                           wait until a line of FILE matches RE (grep),
#                           up to TENTHS tenths of a second (300) and, when
#                           PID is given, only while it lives
#   clear_fi_env            unset every FI_* variable of the environment,
#                           so the caller's settings do not steer a test
#   list_provs FI_INFO      the providers the library's fi_info lists, one
#                           a line, into $provs (not the hooks, ofi_hook_*,
#                           it lists after them); has_prov NAME: whether
#                           NAME is among them
#   listen_port FILE        the N of the "listening on port N" line a
#                           fabtests server prints (-B 0), or nothing
#   veth_hosts A B IF_A IF_B ADDR_A ADDR_B
#                           make network namespaces A and B joined by a
#                           veth pair, IF_A in A with ADDR_A/24 and IF_B
#                           in B with ADDR_B/24, loopback up; prints each
#                           command.  Adds what it made to $ns_made, and on
#                           failure returns 1 with the reason in $ns_why
#   ns_remove NS...         stop what runs in the namespaces (TERM, up to
#                           3 s, then KILL) and delete them; the veth pair
#                           goes with them

skip() {
	echo "SKIP: $*"
	exit 77
}

find_prog() {
	if [ -x "$1/.libs/$2" ]; then
		echo "$1/.libs/$2"
	elif [ -x "$1/$2" ] && [ "$(head -c 2 "$1/$2")" != "#!" ]; then
		echo "$1/$2"
	else
		echo "no $2 under $1 (build first)" >&2
		exit 99
	fi
}

wait_line() {
	local n=0 max=${4:-300}
	while [ $n -lt "$max" ]; do
		grep -q "$2" "$1" 2>/dev/null && return 0
		if [ -n "${3:-}" ] && ! kill -0 "$3" 2>/dev/null; then
			grep -q "$2" "$1" 2>/dev/null
			return
		fi
		sleep 0.1
		n=$((n + 1))
	done
	return 1
}

clear_fi_env() {
	local v
	for v in $(env | sed -n 's/^\(FI_[A-Za-z0-9_]*\)=.*/\1/p'); do
		unset "$v"
	done
}

provs=${provs-} # sourced again (hosts.sh): keep what was listed
list_provs() {
	provs=$(timeout 30 "$1" -l 2>/dev/null |
		sed -n 's/^\([a-z][a-z0-9_]*\):$/\1/p' | grep -v '^ofi_')
}

has_prov() {
	echo "$provs" | grep -qx "$1"
}

listen_port() {
	sed -n 's/^listening on port \([0-9][0-9]*\)$/\1/p' "$1" | head -n 1
}

ns_made=${ns_made:-}
ns_why=

veth_hosts() {
	local a=$1 b=$2 ia=$3 ib=$4 xa=$5 xb=$6 n
	_th_step() {
		local out
		echo "+ $*"
		out=$("$@" 2>&1) || {
			ns_why="cannot make the two hosts: '$*': $out"
			return 1
		}
	}
	_th_step ip netns add "$a" || return 1
	ns_made="$ns_made $a"
	_th_step ip netns add "$b" || return 1
	ns_made="$ns_made $b"
	_th_step ip link add "$ia" netns "$a" type veth peer name "$ib" \
		netns "$b" || return 1
	_th_step ip -n "$a" addr add "$xa/24" dev "$ia" || return 1
	_th_step ip -n "$b" addr add "$xb/24" dev "$ib" || return 1
	for n in "$a" "$b"; do
		_th_step ip -n "$n" link set lo up || return 1
	done
	_th_step ip -n "$a" link set "$ia" up || return 1
	_th_step ip -n "$b" link set "$ib" up || return 1
}

# Stops what runs in the namespaces named, without deleting them.
ns_stop() {
	local ns pids n
	for ns in "$@"; do
		pids=$(ip netns pids "$ns" 2>/dev/null)
		# shellcheck disable=SC2086 # a list of pids
		[ -n "$pids" ] && kill $pids 2>/dev/null
	done
	for ns in "$@"; do
		n=0
		while [ -n "$(ip netns pids "$ns" 2>/dev/null)" ] && [ $n -lt 30 ]; do
			sleep 0.1
			n=$((n + 1))
		done
		pids=$(ip netns pids "$ns" 2>/dev/null)
		# shellcheck disable=SC2086
		[ -n "$pids" ] && kill -KILL $pids 2>/dev/null
	done
}

ns_remove() {
	local ns
	ns_stop "$@"
	for ns in "$@"; do
		ip netns del "$ns" 2>/dev/null
	done
}
