#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
#
# FI_HOOK over real programs, on shm and tcp (each provider this build has):
#   - fabtests over every hook and perf,trace stacked: fi_rdm_tagged_pingpong
#     (-v: every byte checked), fi_rma_bw (writes and reads, -v), and on tcp
#     fi_msg_pingpong (MSG endpoints: CM events through the EQ); each side
#     exits 0;
#   - perf: the table printed at close counts exactly what was posted (the
#     pingpong's tinject and trecv: iterations + warmup);
#   - trace: tests/hook/hook_client imports a log sink (fi_import_log) and
#     gets a trace line per call (N fi_tsend, N fi_trecv, the fi_cq_readfrom
#     lines with its contexts), none on stderr; its transfers check data,
#     contexts and fi_cq_readfrom's sender;
#   - debug: hook_client's overlapping receives are reported, with the two
#     still posted at close; clean runs report nothing;
#   - an unknown name is warned about and skipped; without FI_HOOK nothing
#     is printed;
#   - fi_info -l lists the hooks (ofi_hook_perf, ...) after the providers.
# Servers are stopped by PID; every program is bounded by timeout(1).
set -u

bld=${top_builddir:-$(cd "$(dirname "$0")/../.." && pwd)}
. "${top_srcdir:-$(dirname "$0")/../..}/tests/lib.sh"
client=$(find_prog "$bld/tests/hook" hook_client) || exit 99
pp=$(find_prog "$bld/fabtests" fi_rdm_tagged_pingpong) || exit 99
msgpp=$(find_prog "$bld/fabtests" fi_msg_pingpong) || exit 99
rmabw=$(find_prog "$bld/fabtests" fi_rma_bw) || exit 99
info=$(find_prog "$bld/util" fi_info) || exit 99
command -v timeout >/dev/null 2>&1 || skip "no timeout(1)"
LD_LIBRARY_PATH=$bld/.libs
export LD_LIBRARY_PATH
clear_fi_env

tmp=$(mktemp -d "${TMPDIR:-/tmp}/weft-hooks.XXXXXX") || exit 99
server=
cleanup() {
	[ -n "$server" ] && kill "$server" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

list_provs "$info"
fails=0
ran=0
fail() {
	echo "FAIL: $*"
	fails=$((fails + 1))
}

# pair NAME HOOK PROG ARGS...: server and client of a fabtests program
# with FI_HOOK=HOOK (empty: unset); outputs in $tmp/NAME.{s,c}.{out,err}
pair() {
	name=$1 hook=$2 prog=$3
	shift 3
	echo "+ FI_HOOK=$hook $(basename "$prog") $*"
	(
		[ -n "$hook" ] && export FI_HOOK="$hook"
		exec timeout -k 5 60 "$prog" "$@" -B 0 -s 127.0.0.1
	) >"$tmp/$name.s.out" 2>"$tmp/$name.s.err" &
	server=$!
	if ! wait_line "$tmp/$name.s.err" '^listening on port ' "$server"; then
		kill "$server" 2>/dev/null
		wait "$server"
		server=
		cat "$tmp/$name.s.err"
		fail "$name: the server reported no port"
		return 1
	fi
	port=$(listen_port "$tmp/$name.s.err")
	(
		[ -n "$hook" ] && export FI_HOOK="$hook"
		exec timeout -k 5 60 "$prog" "$@" -P "$port" 127.0.0.1
	) >"$tmp/$name.c.out" 2>"$tmp/$name.c.err"
	crc=$?
	wait "$server"
	src=$?
	server=
	ran=$((ran + 1))
	if [ $crc -ne 0 ] || [ $src -ne 0 ]; then
		cat "$tmp/$name.s.err" "$tmp/$name.c.err" | tail -n 20
		fail "$name: client exit $crc, server exit $src"
		return 1
	fi
	return 0
}

# perf_ok FILE ROW N: the perf table of FILE has an endpoint row ROW whose
# "ok" column is N
perf_ok() {
	awk -v row="$2" -v n="$3" '
		/hook_perf: *[a-z_]+ +[0-9]+ +[0-9]+ / {
			sub(/^.*hook_perf: */, "")
			if ($1 == row && $3 == n) found = 1
		}
		END { exit !found }' "$1"
}

iters=25
warm=10
for p in shm tcp; do
	has_prov "$p" || { echo "--- $p: not built, not run"; continue; }

	for h in perf trace debug perf,trace; do
		n=$p.$(echo "$h" | tr , _)
		# the programs' own checks: -v verifies every byte
		pair "$n.pp" "$h" "$pp" -p "$p" -I $iters -w $warm -S 8,4096 -j 8 -v
		pair "$n.rma" "$h" "$rmabw" -p "$p" -o write -I 20 -S 4096 -v
		pair "$n.rmar" "$h" "$rmabw" -p "$p" -o read -I 20 -S 4096 -v
		if [ "$p" = tcp ]; then
			pair "$n.msg" "$h" "$msgpp" -p "$p" -I $iters -S 8 -v
		fi
	done

	# perf counts each tagged post once: 8 bytes go by fi_tinject,
	# 4096 by fi_tsend; every side receives each message once
	for side in s c; do
		f=$tmp/$p.perf.pp.$side.err
		per=$((iters + warm))
		perf_ok "$f" tinject $per ||
			fail "$p perf: no 'tinject' row with $per calls in $f"
		perf_ok "$f" tsend $per ||
			fail "$p perf: no 'tsend' row with $per calls in $f"
		perf_ok "$f" trecv $((2 * per)) ||
			fail "$p perf: no 'trecv' row with $((2 * per)) calls in $f"
		perf_ok "$tmp/$p.perf_trace.pp.$side.err" tinject $per ||
			fail "$p perf,trace: perf's table is missing"
	done
	if [ "$p" = tcp ]; then
		perf_ok "$tmp/$p.perf.msg.c.err" inject $((iters + warm)) ||
			fail "$p perf: fi_msg_pingpong's inject row"
	fi

	# trace through the client's imported sink, not stderr
	echo "+ FI_HOOK=trace hook_client $p xfer 7"
	FI_HOOK=trace timeout -k 5 60 "$client" "$p" xfer 7 \
		>"$tmp/$p.tr.out" 2>"$tmp/$p.tr.err"
	rc=$?
	ran=$((ran + 1))
	if [ $rc -ne 0 ]; then
		cat "$tmp/$p.tr.err"
		fail "$p trace: hook_client exit $rc"
	else
		nt=$(grep -c '^SINK hook_trace trace fi_tsend(ep=.*) = 0$' "$tmp/$p.tr.out")
		nr=$(grep -c '^SINK hook_trace trace fi_trecv(ep=' "$tmp/$p.tr.out")
		nf=$(grep -c '^SINK hook_trace trace fi_cq_readfrom(cq=.*) = 1 \[ctx=0x[0-9a-f]* src=[0-9]' \
			"$tmp/$p.tr.out")
		[ "$nt" = 7 ] && [ "$nr" = 7 ] && [ "$nf" = 7 ] ||
			fail "$p trace: $nt fi_tsend, $nr fi_trecv, $nf fi_cq_readfrom lines through the sink, not 7 each"
		grep -q '^SINK hook_trace trace fi_close(ep=' "$tmp/$p.tr.out" ||
			fail "$p trace: no fi_close line"
		! grep -q 'fi_tsend(' "$tmp/$p.tr.err" ||
			fail "$p trace: lines went to stderr beside the sink"
	fi

	# perf and trace stacked on the client: both at work
	echo "+ FI_HOOK=trace,perf hook_client $p xfer 5"
	FI_HOOK=trace,perf timeout -k 5 60 "$client" "$p" xfer 5 \
		>"$tmp/$p.tp.out" 2>"$tmp/$p.tp.err" ||
		fail "$p trace,perf: hook_client failed"
	[ "$(grep -c '^SINK hook_trace trace fi_tsend(.*) = 0$' "$tmp/$p.tp.out")" = 5 ] ||
		fail "$p trace,perf: not 5 fi_tsend lines"
	perf_ok "$tmp/$p.tp.err" tsend 5 ||
		fail "$p trace,perf: perf's tsend row is not 5"

	# debug: a clean run says nothing; overlapping receives are reported,
	# and so are the two receives still posted when the endpoint closes
	echo "+ FI_HOOK=debug hook_client $p xfer 5"
	FI_HOOK=debug timeout -k 5 60 "$client" "$p" xfer 5 \
		>"$tmp/$p.dc.out" 2>"$tmp/$p.dc.err" ||
		fail "$p debug: clean hook_client run failed"
	! grep -q 'hook_debug' "$tmp/$p.dc.out" "$tmp/$p.dc.err" ||
		fail "$p debug: a clean run reported: $(grep hook_debug "$tmp/$p.dc.out")"
	for side in s c; do
		! grep -q 'hook_debug' "$tmp/$p.debug.pp.$side.err" ||
			fail "$p debug: the pingpong reported something"
	done
	echo "+ FI_HOOK=debug hook_client $p overlap"
	FI_HOOK=debug timeout -k 5 60 "$client" "$p" overlap \
		>"$tmp/$p.do.out" 2>"$tmp/$p.do.err" ||
		fail "$p debug: hook_client overlap failed"
	grep -q '^SINK hook_debug warn fi_trecv(ep .*overlaps the buffer' \
		"$tmp/$p.do.out" || fail "$p debug: the overlap was not reported"
	grep -q '^SINK hook_debug warn fi_close(ep .*: 2 operation(s) posted' \
		"$tmp/$p.do.out" ||
		fail "$p debug: the receives in flight at close were not reported"
	echo "+ FI_HOOK=debug hook_client $p overrun"
	FI_HOOK=debug timeout -k 5 60 "$client" "$p" overrun \
		>"$tmp/$p.dr.out" 2>"$tmp/$p.dr.err" ||
		fail "$p debug: hook_client overrun failed"
	grep -q '^SINK hook_debug warn cq .*: 5 operations outstanding .* more than its size 4' \
		"$tmp/$p.dr.out" || fail "$p debug: the CQ overrun was not reported"
	grep -q '^SINK hook_debug warn fi_close(ep .*: 6 operation(s) posted' \
		"$tmp/$p.dr.out" || fail "$p debug: not 6 receives in flight at close"
	! grep -q 'overlaps' "$tmp/$p.dr.out" ||
		fail "$p debug: separate buffers reported as overlapping"
	echo "+ FI_HOOK=debug hook_client $p stx"
	FI_HOOK=debug timeout -k 5 60 "$client" "$p" stx \
		>"$tmp/$p.ds.out" 2>"$tmp/$p.ds.err"
	case $? in
	0)
		if grep -q '^stx done' "$tmp/$p.ds.out"; then
			grep -q '^SINK hook_debug warn fi_close(domain .*: 1 object(s) opened from it are still open' \
				"$tmp/$p.ds.out" ||
				fail "$p debug: the domain closed under its stx was not reported"
		else
			! grep -q 'hook_debug' "$tmp/$p.ds.out" ||
				fail "$p debug: reported a close the provider refused"
		fi ;;
	77) echo "--- $p: no shared transmit contexts" ;;
	*) fail "$p debug: hook_client stx failed" ;;
	esac
	# without the hook, the same program reports nothing
	timeout -k 5 60 "$client" "$p" overlap >"$tmp/$p.no.out" 2>&1 ||
		fail "$p: hook_client overlap failed without FI_HOOK"
	! grep -q 'hook_' "$tmp/$p.no.out" ||
		fail "$p: hooks at work without FI_HOOK"
done

# an unknown name: warned about, the others still in place
p=$(echo "$provs" | grep -x -e shm -e tcp | head -n 1)
if [ -n "$p" ]; then
	pair unknown "bogus;perf" "$pp" -p "$p" -I 5 -w 0 -S 8 || true
	FI_LOG_LEVEL=warn FI_HOOK=bogus,perf timeout -k 5 60 "$client" "$p" \
		xfer 3 >"$tmp/unk.out" 2>&1 || fail "FI_HOOK=bogus,perf: failed"
	grep -q 'FI_HOOK: no hook is named "bogus"' "$tmp/unk.out" ||
		fail "no warning for an unknown hook name"
	perf_ok "$tmp/unknown.c.err" tinject 5 ||
		fail "perf after an unknown name: no table"
	pair nohook "" "$pp" -p "$p" -I 5 -w 0 -S 8 || true
	! grep -q hook_ "$tmp/nohook.c.err" "$tmp/nohook.s.err" ||
		fail "without FI_HOOK: hooks printed something"
fi

# perf on a signal: FI_HOOK_PERF_SIGNAL=USR2 prints the tables of the
# objects open while the pingpong runs (the server signalled every 100 ms
# until the client is done), and the run goes on to its end.  (pgrep
# finds the program under timeout(1).)  200000 round trips first: on a
# busy host they last long enough to be signalled, where 5000000 could
# outlast the time limit; on an idle one they may end before the hook
# catches the signal, and 5000000 run then.
sig_run() {	# ITERATIONS: 0 when a dump was seen; sets sig_why otherwise
	sig_why=
	(
		export FI_HOOK=perf FI_HOOK_PERF_SIGNAL=USR2
		exec timeout -k 5 120 "$pp" -p "$p" -S 8 -I "$1" -w 0 \
			-B 0 -s 127.0.0.1
	) >"$tmp/sig.s.out" 2>"$tmp/sig.s.err" &
	server=$!
	if ! wait_line "$tmp/sig.s.err" '^listening on port ' "$server"; then
		sig_why="the server reported no port"
		server=
		return 1
	fi
	port=$(listen_port "$tmp/sig.s.err")
	timeout -k 5 120 "$pp" -p "$p" -S 8 -I "$1" -w 0 \
		-P "$port" 127.0.0.1 >"$tmp/sig.c.out" 2>&1 &
	cl=$!
	# the program, under timeout(1); signalled once the hook catches
	# USR2 (SigCgt bit 11), before which it would end it
	prog=$(pgrep -P "$server" | head -n 1)
	caught() {
		m=$(sed -n 's/^SigCgt:[[:space:]]*//p' \
			"/proc/$prog/status" 2>/dev/null)
		[ -n "$m" ] && [ $((0x$m & 0x800)) -ne 0 ]
	}
	while kill -0 "$cl" 2>/dev/null; do
		[ -n "$prog" ] && caught && kill -USR2 "$prog" 2>/dev/null
		sleep 0.1
	done
	wait "$cl"
	crc=$?
	wait "$server"
	src=$?
	server=
	if [ $crc -ne 0 ] || [ $src -ne 0 ]; then
		sig_why="client exit $crc, server exit $src"
		return 2
	fi
	grep -q 'hook_perf: signal 12: the objects open' "$tmp/sig.s.err" ||
		{ sig_why="no dump in $tmp/sig.s.err"; return 1; }
	return 0
}
if [ -n "$p" ] && ! command -v pgrep >/dev/null 2>&1; then
	echo "perf on a signal: not run (no pgrep)"
elif [ -n "$p" ]; then
	for n in 200000 5000000; do
		echo "+ FI_HOOK=perf FI_HOOK_PERF_SIGNAL=USR2 $(basename "$pp") -I $n (signalled)"
		sig_run $n
		rc=$?
		[ $rc = 1 ] || break
	done
	ran=$((ran + 1))
	if [ $rc != 0 ]; then
		fail "perf on a signal: $sig_why"
	else
		grep -A3 'hook_perf: signal 12' "$tmp/sig.s.err" |
			grep -q 'hook_perf: *\(trecv\|tinject\|cq_read\) ' ||
			fail "perf on a signal: no counted call in a dump"
	fi
fi

# fi_info -l lists each hook after the providers, as 1.17 names its own;
# no hook is a provider of its own, so `-p ofi_hook_perf` finds nothing.
"$info" -l >"$tmp/list.out" 2>&1
for h in perf trace debug noop; do
	grep -qx "ofi_hook_$h:" "$tmp/list.out" ||
		fail "fi_info -l does not list ofi_hook_$h: $(tr '\n' ' ' <"$tmp/list.out")"
done
last=$(sed -n 's/^\([^ ].*\):$/\1/p' "$tmp/list.out" | grep -vn '^ofi_hook_' |
	tail -n 1 | cut -d: -f1)
first=$(sed -n 's/^\([^ ].*\):$/\1/p' "$tmp/list.out" | grep -n '^ofi_hook_' |
	head -n 1 | cut -d: -f1)
[ -z "$last" ] || [ -z "$first" ] || [ "$last" -lt "$first" ] ||
	fail "fi_info -l lists a provider after the hooks"
"$info" -l -p ofi_hook_debug >"$tmp/list1.out" 2>&1
[ "$(sed -n 's/^\([^ ].*\):$/\1/p' "$tmp/list1.out")" = ofi_hook_debug ] ||
	fail "fi_info -l -p ofi_hook_debug: $(tr '\n' ' ' <"$tmp/list1.out")"
if "$info" -p ofi_hook_perf >"$tmp/info1.out" 2>&1; then
	fail "fi_info -p ofi_hook_perf found entries"
fi
ran=$((ran + 1))

[ $ran -gt 1 ] || skip "neither shm nor tcp is built"
echo "$ran runs, $fails failure(s)"
[ $fails -eq 0 ]
