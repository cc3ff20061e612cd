#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# Runs every program of tests/clients over every provider name its client
# may ask for, first over the reference libfabric ($REF_LIBDIR, Debian's
# 1.17) and then over weft, one line each:
#
#   PASS: CLIENT NAME LIBRARY
#   SKIP: CLIENT NAME LIBRARY (reason)
#   FAIL: CLIENT NAME LIBRARY (reason)         then the tail of its log
#   XFAIL: CLIENT NAME LIBRARY (known: reason; got: ...)
#   XPASS: CLIENT NAME LIBRARY (listed as failing: reason)   an error
#
# A program skips when no answer to its client's hints exists; weft
# skipping where the reference passes is a failure (the client runs on
# 1.17 and not on weft).  The known failures are listed below, one line per
# (client, name, library); one that passes is an error, so the list cannot
# outlive the defects it names.  The last line reads
# "clients: N passed, N failed, N skipped, N xfail"; the exit status is 1 if
# anything failed or passed unexpectedly.
#
#   run.sh [-c CLIENT]... [-l weft|ref] [NAME...]
#
# Env: top_builddir, REF_LIBDIR, CLIENTS_TIMEOUT (seconds per program, 20),
# CLIENTS_VERBS_ADDR (the address of an RDMA device's interface, for the
# verbs names; found from /sys/class/infiniband otherwise), CLIENTS_LOGS (a
# directory to keep every log in), CLIENTS_ENV ("VAR=value ...": the only
# FI_* settings the programs see, e.g. FI_VERBS_SHM=0 in the test VM),
# CLIENTS_SITE (a device name: the library reads "weft@SITE" in the lines,
# and a known failure listed for "weft@SITE" holds there only, one listed
# for "weft" everywhere).
set -u
bld=$(cd "${top_builddir:-.}" && pwd)
src=$(cd "$(dirname "$0")" && pwd)
. "$src/../lib.sh"

# The clients: name, program, arguments.
clients=(
	"ompi4-mtl ompi_mtl -v 4"
	"ompi5-mtl ompi_mtl -v 5"
	"ompi4-btl ompi_btl -v 4"
	"ompi5-btl ompi_btl -v 5"
	"mpich mpich"
	"mercury mercury"
	"sos sos"
	"nccl nccl"
	"nccl-hdr119 nccl -v hdr119"
	"fabtests-rdm fabtests -v rdm"
	"fabtests-rma_bw fabtests -v rma_bw"
	"fabtests-cm_data fabtests -v cm_data"
	"fabtests-multinode fabtests -v multinode"
)

# Known failures: CLIENT|NAME|LIBRARY|reason.  LIBRARY is weft or ref.
xfail=$(cat <<'EOF'
nccl|tcp|ref|1.17 names the entries "tcp;ofi_rxm", so the plugin's workaround for prov_name "tcp" does not apply: the second registration with requested key 0 gets -FI_ENOKEY
nccl|tcp;ofi_rxm|ref|the plugin's workaround for prov_name "tcp" does not apply to "tcp;ofi_rxm": the second registration with requested key 0 gets -FI_ENOKEY
nccl|sockets|ref|without FI_RMA the second registration with requested key 0 gets -FI_ENOKEY
nccl-hdr119|tcp|ref|1.17 names the entries "tcp;ofi_rxm", so the plugin's workaround for prov_name "tcp" does not apply: the second registration with requested key 0 gets -FI_ENOKEY
nccl-hdr119|tcp;ofi_rxm|ref|the plugin's workaround for prov_name "tcp" does not apply to "tcp;ofi_rxm": the second registration with requested key 0 gets -FI_ENOKEY
nccl-hdr119|sockets|ref|without FI_RMA the second registration with requested key 0 gets -FI_ENOKEY
ompi4-btl|verbs|ref|1.17 aborts inside the provider the BTL takes for "verbs" (its RDM over verbs without ofi_rxm) while the peer waits on fi_fetch_atomic
ompi5-btl|verbs|ref|1.17 aborts inside the provider the BTL takes for "verbs" (its RDM over verbs without ofi_rxm) while the peer waits on fi_fetch_atomic
mercury|verbs|ref@siw0|1.17's verbs;ofi_rxm over iWARP reports cq_data_size 0; Mercury needs 4
mercury|verbs;ofi_rxm|ref@siw0|1.17's verbs;ofi_rxm over iWARP reports cq_data_size 0; Mercury needs 4
fabtests-rma_bw|verbs|ref@siw0|1.17's verbs;ofi_rxm over iWARP: fi_writedata never completes
fabtests-rma_bw|verbs;ofi_rxm|ref@siw0|1.17's verbs;ofi_rxm over iWARP: fi_writedata never completes
EOF
)

only_clients=()
only_lib=
while getopts c:l: opt; do
	case $opt in
	c) only_clients+=("$OPTARG") ;;
	l) only_lib=$OPTARG ;;
	*) echo "usage: $0 [-c CLIENT]... [-l weft|ref] [NAME...]"; exit 2 ;;
	esac
done
shift $((OPTIND - 1))

# What the library reads from the environment would change the runs.
clear_fi_env
for v in ${CLIENTS_ENV:-}; do
	export "${v?}"
done
timeout=${CLIENTS_TIMEOUT:-20}
export CLIENTS_TIMEOUT=$timeout

logs=${CLIENTS_LOGS:-}
keep_logs=yes
if [ -z "$logs" ]; then
	logs=$(mktemp -d) || exit 99
	keep_logs=no
fi
trap '[ $keep_logs = yes ] || rm -rf "$logs"' EXIT

# An RDMA device, and the IPv4 address of its interface, for the verbs
# names; none here means those lines skip.
verbs_addr=${CLIENTS_VERBS_ADDR:-}
verbs_why="no RDMA device on this host (the test VM runs these: make check-vm)"
if [ -z "$verbs_addr" ]; then
	for d in /sys/class/infiniband/*/ports/1/gid_attrs/ndevs/0; do
		[ -r "$d" ] || continue
		nd=$(cat "$d" 2>/dev/null) || continue
		verbs_addr=$(ip -4 -o addr show dev "$nd" 2>/dev/null |
			sed -n 's/.* inet \([0-9.]*\)\/.*/\1/p' | head -n 1)
		[ -n "$verbs_addr" ] && break
	done
fi
if [ $# -gt 0 ]; then
	names=("$@")
else
	names=(shm tcp "tcp;ofi_rxm" sockets verbs "verbs;ofi_rxm")
fi

libs=()
[ -z "$only_lib" ] || [ "$only_lib" = ref ] && {
	if [ -n "${REF_LIBDIR:-}" ] && [ -e "$REF_LIBDIR/libfabric.so.1" ]; then
		libs+=("ref:$REF_LIBDIR")
	else
		echo "note: no reference libfabric.so.1 (REF_LIBDIR): weft runs alone, nothing to compare with"
	fi
}
[ -z "$only_lib" ] || [ "$only_lib" = weft ] && libs+=("weft:$bld/.libs")

pass=0 fail=0 skip=0 xf=0
failed=()

# loads DIR PROG: PROG, run with LD_LIBRARY_PATH=DIR, loads libfabric from DIR
loads() {
	local got
	got=$(LD_LIBRARY_PATH="$1" LD_TRACE_LOADED_OBJECTS=1 "$2" 2>/dev/null |
		sed -n 's/^[[:space:]]*libfabric\.so\.1 => \([^ ]*\) .*/\1/p')
	[ -n "$got" ] && [ "$(cd "$(dirname "$got")" && pwd -P)" = "$(cd "$1" && pwd -P)" ]
}

known() {	# CLIENT NAME LABEL: prints the reason if listed
	local c n l r
	while IFS='|' read -r c n l r; do
		[ "$c" = "$1" ] && [ "$n" = "$2" ] &&
			{ [ "$l" = "$3" ] || [ "$l" = "${3%@*}" ]; } && {
			echo "$r"
			return 0
		}
	done <<<"$xfail"
	return 1
}

declare -A refres	# CLIENT NAME -> PASS, SKIP or FAIL on the reference

# report WORD CLIENT NAME LIB [REASON] [LOG]
report() {
	local word=$1 c=$2 n=$3 l=$4 why=${5:-} log=${6:-} k
	if k=$(known "$c" "$n" "$l"); then
		case $word in
		FAIL)
			xf=$((xf + 1))
			echo "XFAIL: $c $n $l (known: $k; got: $why)"
			return ;;
		SKIP)
			# Listed because weft skips where the reference
			# passes: with no reference run, a skip is all
			# there is to see.
			if [ -z "${refres["$c $n"]:-}" ]; then
				skip=$((skip + 1))
				echo "SKIP: $c $n $l ($why; listed as failing: $k)"
				return
			fi
			fail=$((fail + 1))
			failed+=("$c $n $l")
			echo "XPASS: $c $n $l (listed as failing: $k; now SKIP: $why)"
			return ;;
		PASS)
			fail=$((fail + 1))
			failed+=("$c $n $l")
			echo "XPASS: $c $n $l (listed as failing: $k; now PASS)"
			return ;;
		esac
	fi
	case $word in
	PASS) pass=$((pass + 1)); echo "PASS: $c $n $l" ;;
	SKIP) skip=$((skip + 1)); echo "SKIP: $c $n $l ($why)" ;;
	FAIL)
		fail=$((fail + 1))
		failed+=("$c $n $l")
		echo "FAIL: $c $n $l ($why)"
		[ -n "$log" ] && tail -n 15 "$log" | sed 's/^/    /' ;;
	esac
}

ran=0
for entry in "${libs[@]}"; do
	lib=${entry%%:*}
	dir=${entry#*:}
	label=$lib${CLIENTS_SITE:+@$CLIENTS_SITE}
	for cl in "${clients[@]}"; do
		read -r cname prog args <<<"$cl"
		if [ ${#only_clients[@]} -gt 0 ]; then
			want=no
			for o in "${only_clients[@]}"; do
				[ "$o" = "$cname" ] && want=yes
			done
			[ $want = yes ] || continue
		fi
		bin=$(find_prog "$bld/tests/clients" "$prog") || exit 99
		if ! loads "$dir" "$bin"; then
			echo "ERROR: $bin does not load $dir/libfabric.so.1 when asked to"
			exit 99
		fi
		for name in "${names[@]}"; do
			node=127.0.0.1
			case $name in
			verbs*)
				if [ -z "$verbs_addr" ]; then
					report SKIP "$cname" "$name" "$label" "$verbs_why"
					continue
				fi
				node=$verbs_addr ;;
			esac
			log=$logs/$lib/$cname@${name//;/+}.log
			mkdir -p "$logs/$lib"
			# In the log directory: what a library leaves behind
			# (1.17 writes backtraces to the cwd) stays there.
			# shellcheck disable=SC2086 # args is a word list
			(cd "$logs/$lib" && LD_LIBRARY_PATH=$dir \
				exec timeout -k 5 $((timeout + 15)) \
				"$bin" $args -a "$node" "$name") >"$log" 2>&1 </dev/null
			rc=$?
			ran=$((ran + 1))
			last=$(tail -n 1 "$log")
			case $rc in
			0) res=PASS why= ;;
			77) res=SKIP why=${last#SKIP: } ;;
			124 | 137) res=FAIL why="no end after $((timeout + 15)) s" ;;
			*) res=FAIL why=${last#FAIL: } ;;
			esac
			if [ "$lib" = ref ]; then
				refres["$cname $name"]=$res
			elif [ $res = SKIP ] &&
			     [ "${refres["$cname $name"]:-}" = PASS ]; then
				res=FAIL
				why="the reference passes, weft does not answer: $why"
			fi
			report $res "$cname" "$name" "$label" "$why" "$log"
		done
	done
done

for f in "${failed[@]}"; do
	echo "failed: $f"
done
[ $keep_logs = yes ] && echo "logs in $logs"
echo "clients: $pass passed, $fail failed, $skip skipped, $xf xfail"
[ $ran -gt 0 ] || exit 77
[ $fail = 0 ]
