#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
#
# Clients set up for the "sockets" provider of libfabric 1.17 get weft's
# tcp under that name, and udp for FI_EP_DGRAM:
#   - fi_info -l lists sockets next to tcp, once;
#   - fi_info -p sockets, and FI_PROVIDER=sockets fi_info, return tcp's
#     and udp's entries, every one named "sockets", as many as -p tcp and
#     -p udp -t FI_EP_DGRAM return (udp's RDM is not sockets'); -t FI_EP_DGRAM udp's, saying FI_PROTO_SOCK_TCP;
#   - FI_PROVIDER=^sockets leaves tcp itself alone, FI_PROVIDER=tcp with
#     -p sockets finds nothing;
#   - fi_rdm_tagged_pingpong, fi_msg_pingpong and (with udp built)
#     fi_msg_pingpong -e dgram run with -p sockets over loopback (data
#     verified), reporting prov=sockets.
# Skips (77) when this build has no tcp provider.
set -u

bld=${top_builddir:-.}
. "${top_srcdir:-$(dirname "$0")/../..}/tests/lib.sh"
info=$(find_prog "$bld/util" fi_info) || exit 99
rdm_pp=$(find_prog "$bld/fabtests" fi_rdm_tagged_pingpong) || exit 99
msg_pp=$(find_prog "$bld/fabtests" fi_msg_pingpong) || exit 99
LD_LIBRARY_PATH=$bld/.libs
export LD_LIBRARY_PATH
for v in $(env | sed -n 's/^\(FI_[A-Za-z0-9_]*\)=.*/\1/p'); do
	unset "$v"
done

tmp=$(mktemp -d) || exit 99
server=
cleanup() {
	[ -n "$server" ] && kill "$server" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

fails=0
fail() {
	echo "FAIL: $*"
	fails=$((fails + 1))
}

timeout 30 "$info" -l >"$tmp/l" 2>&1
grep -q '^tcp:$' "$tmp/l" || { echo "SKIP: no tcp provider in this build"; exit 77; }
if [ "$(grep -c '^sockets:$' "$tmp/l")" = 1 ]; then
	echo "ok: fi_info -l lists sockets once"
else
	fail "fi_info -l does not list sockets once:"
	cat "$tmp/l"
fi

ntcp=$(timeout 30 "$info" -p tcp | grep -c '^provider: ')
[ "$ntcp" -gt 0 ] || fail "fi_info -p tcp returns nothing"
nudp=0
grep -q '^udp:$' "$tmp/l" &&
	nudp=$(timeout 30 "$info" -p udp -t FI_EP_DGRAM | grep -c '^provider: ')
nall=$((ntcp + nudp))

# entries LABEL [VAR=value] -- ARGS: every entry named sockets, $nall of them
entries() {
	label=$1
	shift
	env "$@" >"$tmp/out" 2>"$tmp/err"
	s=$?
	n=$(grep -c '^provider: ' "$tmp/out")
	other=$(grep '^provider: ' "$tmp/out" | grep -vc '^provider: sockets$')
	if [ $s != 0 ] || [ "$n" != "$nall" ] || [ "$other" != 0 ]; then
		fail "$label: exit $s, $n entries ($other not named sockets), tcp and udp have $nall"
		head -n 20 "$tmp/out" "$tmp/err"
	else
		echo "ok: $label: $n entries, all named sockets"
	fi
}
entries "fi_info -p sockets" timeout 30 "$info" -p sockets
entries "FI_PROVIDER=sockets fi_info" FI_PROVIDER=sockets timeout 30 "$info"
entries "FI_PROVIDER=sockets fi_info -p sockets" FI_PROVIDER=sockets \
	timeout 30 "$info" -p sockets

if [ "$nudp" -gt 0 ]; then
	timeout 30 "$info" -p sockets -t FI_EP_DGRAM -v >"$tmp/out" 2>&1
	n=$(grep -c '^    fi_ep_attr:' "$tmp/out")
	ok=$(grep -A2 '^    fi_ep_attr:' "$tmp/out" |
		grep -c 'protocol: FI_PROTO_SOCK_TCP$')
	if [ "$n" = "$nudp" ] && [ "$ok" = "$nudp" ] &&
		[ "$(grep -c 'prov_name: sockets$' "$tmp/out")" = "$nudp" ]; then
		echo "ok: fi_info -p sockets -t FI_EP_DGRAM: udp's $n entries, FI_PROTO_SOCK_TCP"
	else
		fail "fi_info -p sockets -t FI_EP_DGRAM: $n entries, $ok FI_PROTO_SOCK_TCP, udp has $nudp"
	fi
fi

if FI_PROVIDER=sockets timeout 30 "$info" -l | grep -q '^sockets:$'; then
	echo "ok: FI_PROVIDER=sockets fi_info -l lists sockets"
else
	fail "FI_PROVIDER=sockets fi_info -l does not list sockets"
fi
FI_PROVIDER='^sockets' timeout 30 "$info" >"$tmp/out" 2>&1
if grep -q '^provider: tcp$' "$tmp/out" && ! grep -q '^provider: sockets$' "$tmp/out"; then
	echo "ok: FI_PROVIDER=^sockets keeps tcp, lists no sockets"
else
	fail "FI_PROVIDER=^sockets:"
	grep '^provider' "$tmp/out" | sort | uniq -c
fi
if FI_PROVIDER=tcp timeout 30 "$info" -p sockets >"$tmp/out" 2>&1; then
	fail "FI_PROVIDER=tcp fi_info -p sockets found entries"
else
	echo "ok: FI_PROVIDER=tcp fi_info -p sockets finds nothing"
fi
# Without a name, tcp's entries are listed under the names 1.17 lists
# too, after tcp's own: clients pick "sockets" or "tcp;ofi_rxm" from such a
# listing (Open MPI's include lists).
timeout 30 "$info" >"$tmp/out" 2>&1
if grep -q '^provider: sockets$' "$tmp/out" &&
	grep -q '^provider: tcp;ofi_rxm$' "$tmp/out" &&
	[ "$(grep '^provider: ' "$tmp/out" | uniq | grep -n -m1 'tcp$' | cut -d: -f1)" -lt \
	  "$(grep '^provider: ' "$tmp/out" | uniq | grep -n -m1 'sockets$' | cut -d: -f1)" ]; then
	echo "ok: fi_info without -p lists tcp, then tcp;ofi_rxm and sockets"
else
	fail "fi_info without -p: tcp, tcp;ofi_rxm and sockets not all listed"
	grep '^provider' "$tmp/out" | uniq -c
fi

# FI_PROVIDER naming the layered name alone: entries under that name only
# (MPICH then takes its tcp;ofi_rxm settings, as over 1.17).
FI_PROVIDER='tcp;ofi_rxm' timeout 30 "$info" >"$tmp/out" 2>&1
if [ "$(grep '^provider: ' "$tmp/out" | sort -u)" = "provider: tcp;ofi_rxm" ] &&
	! grep -q 'FI_EP_MSG' "$tmp/out"; then
	echo "ok: FI_PROVIDER=tcp;ofi_rxm fi_info: RDM entries named tcp;ofi_rxm only"
else
	fail "FI_PROVIDER=tcp;ofi_rxm fi_info:"
	grep -E '^(provider|    type)' "$tmp/out" | sort | uniq -c
fi

# pingpong NAME PROGRAM ARGS...: server and client on 127.0.0.1.
pingpong() {
	name=$1
	prog=$2
	shift 2
	: >"$tmp/server.err"
	timeout -k 5 60 "$prog" "$@" -s 127.0.0.1 -B 0 >"$tmp/server.out" \
		2>"$tmp/server.err" &
	server=$!
	wait_line "$tmp/server.err" '^listening on port ' "$server" 100
	port=$(listen_port "$tmp/server.err")
	if [ -z "$port" ]; then
		kill "$server" 2>/dev/null
		wait "$server"
		server=
		fail "$name: the server reported no port"
		cat "$tmp/server.err"
		return
	fi
	timeout -k 5 60 "$prog" "$@" -P "$port" 127.0.0.1 >"$tmp/client.out" 2>&1
	c=$?
	wait "$server"
	s=$?
	server=
	if [ $c = 0 ] && [ $s = 0 ] && grep -q 'prov=sockets ' "$tmp/client.out"; then
		echo "ok: $name"
	else
		fail "$name: server exit $s, client exit $c"
		cat "$tmp/client.out" "$tmp/server.err"
	fi
}
pingpong "fi_rdm_tagged_pingpong -p sockets" "$rdm_pp" -p sockets -v -m \
	-S 1,64k -I 20 -w 1 -T 20
pingpong "fi_msg_pingpong -p sockets -e msg" "$msg_pp" -p sockets -e msg -v \
	-m -S 1,64k -I 20 -w 1 -T 20
[ "$nudp" -gt 0 ] &&
	pingpong "fi_msg_pingpong -p sockets -e dgram" "$msg_pp" -p sockets \
		-e dgram -v -m -S 1,1k -I 20 -w 1 -T 20

[ $fails = 0 ] || exit 1
echo "PASS: sockets is answered by tcp and udp"
