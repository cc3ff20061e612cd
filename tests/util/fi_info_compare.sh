#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# weft's fi_info and the fi_info of libfabric 1.17 (/usr/bin/fi_info), both
# run over the same reference libfabric.so.1 ($REF_LIBDIR), must print the
# same bytes and exit with the same status for each option set below, so
# that scripts which parse fi_info keep working.
#
# Two differences are allowed, each handled where it arises:
#  - shm's addresses carry the process id (fi_shm://<pid>), which differs
#    between any two runs of any tool: the digits are masked, and so are
#    the address lengths in an entry with such an address (a pid of 4
#    digits and one of 5 make lengths that differ by one).
#  - When fi_getinfo fails, weft's fi_info adds, after the error line both
#    tools print, the warnings the library logged while it searched, under
#    "No provider matched:".  That block is checked for shape and removed
#    before the comparison.
set -u
. "${top_srcdir:-.}/tests/util/common.sh"

ref_tool=${REF_FI_INFO:-/usr/bin/fi_info}
ref_libdir=${REF_LIBDIR:-}
if [ -z "$ref_libdir" ] || [ ! -e "$ref_libdir/libfabric.so.1" ]; then
	echo "SKIP: no reference libfabric.so.1 (configure --with-reference-libfabric)"
	exit 77
fi
if [ ! -x "$ref_tool" ]; then
	echo "SKIP: no reference fi_info at $ref_tool"
	exit 77
fi
weft_tool=$(real_binary fi_info) || {
	echo "ERROR: util/fi_info is not built"
	exit 99
}
if ! loads_from "$weft_tool" "$ref_libdir"; then
	echo "SKIP: $weft_tool does not load $ref_libdir/libfabric.so.1 when asked to (static build, or an RPATH wins)"
	exit 77
fi

mask_pids()
{
	# Entries start at a "---" line (or the top); an entry that names an
	# fi_shm:// address gets its *_addrlen values masked as well.
	awk '
	function flush(   i) {
		for (i = 1; i <= n; i++) {
			if (shm)
				sub(/addrlen: [0-9]+/, "addrlen: LEN", buf[i])
			print buf[i]
		}
		n = 0; shm = 0
	}
	/^---/ { flush() }
	{
		if ($0 ~ /fi_shm:\/\/[0-9]/) shm = 1
		gsub(/fi_shm:\/\/[0-9]+/, "fi_shm://PID")
		buf[++n] = $0
	}
	END { flush() }' "$1" >"$1.masked"
	mv "$1.masked" "$1"
}

fails=0
cases=0

# compare [VAR=value ...] -- ARGS...: one run of each tool, compared.
compare()
{
	envs=()
	while [ "$1" != "--" ]; do
		envs+=("$1")
		shift
	done
	shift
	cases=$((cases + 1))
	label="fi_info $*"
	[ ${#envs[@]} -gt 0 ] && label="${envs[*]} $label"

	([ ${#envs[@]} -eq 0 ] || export "${envs[@]}"
	 run_as fi_info "$weft_tool" "$ref_libdir" "$tmpdir/w.out" "$tmpdir/w.err" "$@"
	 echo "$status" >"$tmpdir/w.status")
	([ ${#envs[@]} -eq 0 ] || export "${envs[@]}"
	 run_as fi_info "$ref_tool" "$ref_libdir" "$tmpdir/r.out" "$tmpdir/r.err" "$@"
	 echo "$status" >"$tmpdir/r.status")
	ws=$(cat "$tmpdir/w.status") rs=$(cat "$tmpdir/r.status")
	for f in w.out w.err r.out r.err; do
		mask_pids "$tmpdir/$f"
	done

	# weft's explanation after a failed fi_getinfo: a heading line and
	# indented "provider: message" lines, and only after that error.
	if grep -q '^No provider matched:$\|^The library reported:$' "$tmpdir/w.err"; then
		if ! head -n 1 "$tmpdir/w.err" | grep -q '^fi_getinfo: -[0-9]*$'; then
			echo "FAIL: $label: explanation printed without a fi_getinfo error"
			fails=$((fails + 1))
			return
		fi
		if sed -n '3,$p' "$tmpdir/w.err" | grep -qv '^    [^ ].*: '; then
			echo "FAIL: $label: explanation lines are not \"    provider: message\":"
			sed 's/^/    | /' "$tmpdir/w.err"
			fails=$((fails + 1))
			return
		fi
		head -n 1 "$tmpdir/w.err" >"$tmpdir/w.err.head"
		mv "$tmpdir/w.err.head" "$tmpdir/w.err"
	fi

	if [ "$ws" != "$rs" ]; then
		echo "FAIL: $label: exit status $ws, reference $rs"
		fails=$((fails + 1))
		return
	fi
	if ! cmp -s "$tmpdir/w.out" "$tmpdir/r.out"; then
		echo "FAIL: $label: stdout differs (- weft, + reference)"
		diff -u "$tmpdir/w.out" "$tmpdir/r.out" | head -n 40 | cat -A
		fails=$((fails + 1))
		return
	fi
	if ! cmp -s "$tmpdir/w.err" "$tmpdir/r.err"; then
		echo "FAIL: $label: stderr differs (- weft, + reference)"
		diff -u "$tmpdir/w.err" "$tmpdir/r.err" | head -n 40 | cat -A
		fails=$((fails + 1))
		return
	fi
	echo "ok: $label (exit $ws, $(wc -l <"$tmpdir/r.out") lines)"
}

# Listing and querying.
compare -- -l
compare -- -l -v
compare --
compare -- -v
compare -- -p tcp
compare -- -p shm
compare -- -p tcp -v
compare -- -p shm -v
compare -- --provider=udp --verbose
compare -- -p "tcp;ofi_rxm"
compare -- -t FI_EP_RDM
compare -- -t FI_EP_MSG -p tcp
compare -- --ep_type=fi_ep_dgram
compare -- -t FI_EP_MSG -t FI_EP_DGRAM
compare -- -c FI_MSG
compare -- -c "FI_TAGGED|FI_RMA" -p shm
compare -- -c "FI_MSG|" -c FI_READ -p tcp
compare -- --caps="fi_atomic|FI_REMOTE_READ"
compare -- -m FI_CONTEXT
compare -- -m "FI_CONTEXT|FI_CONTEXT2" -m FI_RX_CQ_DATA
compare -- -a FI_SOCKADDR_IN
compare -- -a FI_SOCKADDR_IN6 -p tcp
compare -- -a FI_ADDR_STR
compare -- -d lo
compare -- -f 127.0.0.1/32 -p tcp
compare -- --domain=lo --fabric=127.0.0.1/32 -t FI_EP_MSG
compare -- -n 127.0.0.1 -P 5000 -p tcp
compare -- -s 127.0.0.1 -p tcp -t FI_EP_MSG
compare -- -i shm
compare -- --info=FI_PROTO_RXM
compare -- -l -i tcp
compare -- -i no-such-text
compare -- extra-argument -p shm

# Parameters: the value forms (plain, and quoted when it holds a space).
compare -- -e
compare -- -e -p tcp
compare -- -g LOG
compare -- --getenv=tcp
compare -- -g no_such_parameter
compare FI_LOG_INTERVAL=5 FI_LOG_PROV="a b" -- -g FI_
compare FI_TCP_IFACE=lo -- -e

# Nothing matches: the error line and status (see the header).
compare -- -p nonexistent
compare -- -p nonexistent -v
compare -- -c FI_MULTICAST -p tcp
compare -- -e -p nonexistent
compare -- -d no-such-domain

# Help, version and bad input.
compare -- -h
compare -- --help -p tcp
compare -- --version
compare -- --version -h
compare -- -e --version
compare -- -x
compare -- --bogus
compare -- -p
compare -- -c FI_BOGUS
compare -- -c "FI_MSG|FI_BOGUS"
compare -- -c "FI_MSG |FI_RMA"
compare -- -m FI_BOGUS
compare -- -t FI_EP_BOGUS
compare -- -t "FI_EP_MSG|FI_EP_RDM"
compare -- -a FI_BOGUS

echo "$cases cases, $fails failed"
[ "$fails" -eq 0 ]
