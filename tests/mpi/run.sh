#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
#
# Open MPI over weft: the MPI programs of this directory (pingpong,
# allreduce, alltoall, rma, threads), built here with mpicc, each run
# under mpirun with the build's libfabric.so.1 (LD_LIBRARY_PATH, passed to
# the ranks with -x) in these configurations:
#   tcp-mtl    one host, 2 ranks: --mca pml cm --mca mtl ofi, provider tcp;
#              one-sided over the MTL (--mca osc pt2pt)
#   shm-btl    one host, 2 ranks: --mca pml ob1 --mca btl ofi,self
#              --mca btl_ofi_mode 2, provider shm; one-sided through the
#              BTL (--mca osc rdma --mca osc_rdma_btls ofi)
#   tcp-btl    the same over provider tcp
#   netns-mtl  two hosts made of two network namespaces joined by a veth
#              pair, 2 ranks on each, mtl ofi over tcp (FI_TCP_IFACE names
#              the veth), so that pairs of ranks talk across the link
#   netns-btl  the same with btl ofi over tcp and osc rdma
#   verbs-mtl  one host, 2 ranks: mtl ofi over provider verbs, on the RDMA
#              device --verbs-dev names (FI_VERBS_DEVICE_NAME), with
#              FI_VERBS_SHM=0 so that the two ranks talk through the
#              device, not through shared memory; not in the default set
#              (tests/vm runs it where devices exist)
#   verbs-btl  the same with btl ofi over verbs and osc rdma
# Every program checks every byte it receives and exits non-zero on any
# wrong one; a job passes when mpirun exits 0 within its time limit, the
# ranks mapped this build's library (each program prints the path it
# mapped) and, across namespaces, the ranks sat on two hosts.  The threads
# program (MPI_THREAD_MULTIPLE) runs with a preload library that logs
# fi_getinfo: the MTL must ask for FI_THREAD_SAFE, and every provider must
# answer with it.
#
# Each job prints PASS, FAIL (with its log's tail), SKIP (with the reason:
# no mpirun or mpicc, no such Open MPI component, no root for namespaces)
# or XFAIL (a known failure, with its reason; passing then is a FAIL, so
# that the mark goes).  The last line reads
#   mpi: N passed, N failed, N skipped
# or "mpi: SKIPPED (reason)" when nothing could run (exit 77).
#
# usage: run.sh [BUILDDIR] [--lib DIR] [--config NAME]... [--timeout S]
#   BUILDDIR       the build tree (default: make's top_builddir, or the
#                  tree holding this script); programs and logs go to
#                  BUILDDIR/tests/mpi
#   --lib DIR      the libfabric.so.1 to run over (default BUILDDIR/.libs)
#   --config NAME  only these configurations (repeatable)
#   --timeout S    limit of one mpirun job (default 120, or WEFT_MPI_TIMEOUT)
#   --verbs-dev D  the RDMA device of the verbs-* configurations (default:
#                  the first the verbs provider lists); their jobs are
#                  named verbs-mtl-D/PROGRAM
# WEFT_MPI=0 skips everything, visibly.
# Timings are never judged here: tests/mpi/bench.sh measures.

set -u

here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
bld=${top_builddir:-}
lib=
limit=${WEFT_MPI_TIMEOUT:-120}
want=()
all_configs=(tcp-mtl shm-btl tcp-btl netns-mtl netns-btl)
# Only on request: they need an RDMA device (tests/vm has two).
extra_configs=(verbs-mtl verbs-btl)
verbs_dev=
programs=(pingpong allreduce alltoall rma threads)

while [ $# -gt 0 ]; do
	case $1 in
	--lib) lib=$2; shift 2 ;;
	--lib=*) lib=${1#--lib=}; shift ;;
	--config) want+=("$2"); shift 2 ;;
	--config=*) want+=("${1#--config=}"); shift ;;
	--timeout) limit=$2; shift 2 ;;
	--timeout=*) limit=${1#--timeout=}; shift ;;
	--verbs-dev) verbs_dev=$2; shift 2 ;;
	--verbs-dev=*) verbs_dev=${1#--verbs-dev=}; shift ;;
	-h | --help) sed -n '3,50s/^# \{0,1\}//p' "$0"; exit 0 ;;
	-*) echo "unknown option '$1' (--help for usage)" >&2; exit 2 ;;
	*) bld=$1; shift ;;
	esac
done
[ ${#want[@]} -gt 0 ] || want=("${all_configs[@]}")
for c in "${want[@]}"; do
	case " ${all_configs[*]} ${extra_configs[*]} " in
	*" $c "*) ;;
	*) echo "unknown configuration '$c' (${all_configs[*]} ${extra_configs[*]})" >&2; exit 2 ;;
	esac
done

bld=$(cd "${bld:-$src}" && pwd) || exit 99
lib=$(cd "${lib:-$bld/.libs}" 2>/dev/null && pwd)
[ -n "$lib" ] && [ -e "$lib/libfabric.so.1" ] ||
	{ echo "no libfabric.so.1 in ${lib:-$bld/.libs} (build first)" >&2; exit 99; }
out=$bld/tests/mpi
logs=$out/logs
mkdir -p "$logs" || exit 99

# Known failures over weft: "config/program" -> the reason.
declare -A xfail=()

npass=0 nfail=0 nskip=0
declare -a summary=()
result() {	# PASS|FAIL|SKIP|XFAIL NAME [REASON]
	local what=$1 name=$2 why=${3:-}
	case $what in
	PASS) npass=$((npass + 1)) ;;
	FAIL) nfail=$((nfail + 1)) ;;
	SKIP | XFAIL) nskip=$((nskip + 1)) ;;
	esac
	echo "$what: $name${why:+ ($why)}"
	summary+=("$what: $name${why:+ ($why)}")
}

skipped_all() {
	echo "mpi: SKIPPED ($*)"
	exit 77
}

# ---- what this machine has ----

[ "${WEFT_MPI:-1}" = 0 ] && skipped_all "WEFT_MPI=0"

command -v mpirun >/dev/null 2>&1 || skipped_all "no mpirun (Open MPI's openmpi-bin)"
command -v mpicc >/dev/null 2>&1 || skipped_all "no mpicc (Open MPI's libopenmpi-dev)"
command -v timeout >/dev/null 2>&1 || skipped_all "no timeout(1) to bound the jobs"
if ldd "$lib/libfabric.so.1" 2>/dev/null | grep -q 'lib[at]san'; then
	skipped_all "$lib/libfabric.so.1 is built with sanitizers; MPI programs cannot load it"
fi
mpi_version=$(mpirun --version 2>/dev/null | head -n 1)
case $mpi_version in
*"Open MPI"*) ;;
*) skipped_all "mpirun is not Open MPI's ($mpi_version)" ;;
esac
components=$(ompi_info 2>/dev/null)
has_comp() {	# FRAMEWORK NAME
	echo "$components" | grep -q "MCA $1: $2 "
}
info=$bld/util/.libs/fi_info
[ -x "$info" ] || info=$bld/util/fi_info
# (list_provs and has_prov: tests/lib.sh, which hosts.sh sources again)
. "$here/../lib.sh"
LD_LIBRARY_PATH=$lib list_provs "$info"

echo "mpi: $mpi_version; library $lib/libfabric.so.1"
echo "mpi: providers: $(echo $provs)"
[ -n "$provs" ] || { echo "mpi: $info -l lists no provider: the library is broken"; exit 1; }

# ---- the programs ----

cflags="-O2 -g -Wall -Wextra"
for p in "${programs[@]}"; do
	if ! mpicc $cflags -pthread -o "$out/$p" "$here/$p.c" >"$logs/build-$p.log" 2>&1; then
		sed 's/^/  /' "$logs/build-$p.log"
		for c in "${want[@]}"; do
			result FAIL "$c/$p" "mpicc failed: see $logs/build-$p.log"
		done
		programs=("${programs[@]/$p/}")
	fi
done
shim=$out/getinfo_log.so
if ! ${CC:-cc} -shared -fPIC -O2 -I"$src/include" -o "$shim" \
	"$here/getinfo_log.c" -ldl >"$logs/build-getinfo_log.log" 2>&1; then
	sed 's/^/  /' "$logs/build-getinfo_log.log"
	shim=
fi

# ---- one job ----

root=()
[ "$(id -u)" = 0 ] && root=(--allow-run-as-root)
ldpath=$lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
unset FI_PROVIDER FI_TCP_IFACE FI_LOG_LEVEL OMPI_MCA_pml OMPI_MCA_mtl \
	OMPI_MCA_btl OMPI_MCA_osc FI_VERBS_DEVICE_NAME FI_VERBS_IFACE FI_VERBS_SHM

ns_a= ns_b=
# run_job CONFIG PROGRAM HOSTS MPIRUN-ARGS...
# With HOSTS 2, mpirun runs in ns_a under its own hostname.
run_job() {
	local cfg=$1 prog=$2 hosts=$3 name="$1/$2" log="$logs/$1-$2.log"
	local pre=() extra=() rc why= lim=$limit
	shift 3
	# A known failure that hangs need not take the whole limit.
	[ -n "${xfail[$name]:-}" ] && [ "$lim" -gt 60 ] && lim=60
	if [ "$prog" = threads ] && [ -n "$shim" ]; then
		extra=(-x "LD_PRELOAD=$shim")
	fi
	if [ "$hosts" = 2 ]; then
		pre=("${host_a[@]}")
	fi
	{
		echo "+ ${pre[*]} timeout -k 10 $lim mpirun ${root[*]}" \
			"-x LD_LIBRARY_PATH=$ldpath $* ${extra[*]} $out/$prog"
	} >"$log"
	timeout -k 10 "$lim" "${pre[@]}" mpirun "${root[@]}" \
		-x "LD_LIBRARY_PATH=$ldpath" "$@" "${extra[@]}" "$out/$prog" \
		>>"$log" 2>&1 </dev/null &
	wait $!
	rc=$?
	[ "$hosts" = 2 ] && ns_kill_all
	if [ $rc = 124 ] || [ $rc = 137 ]; then
		why="timed out after $lim s"
	elif [ $rc != 0 ]; then
		why="mpirun exit $rc: $(grep -m 1 ': FAIL: ' "$log" ||
			grep -m 1 -i 'error\|abort\|signal' "$log")"
	elif ! grep -q "^$prog: libfabric: $lib/libfabric\.so" "$log"; then
		why="the ranks did not map $lib/libfabric.so*: $(grep -m 1 "^$prog: libfabric:" "$log")"
	elif [ "$hosts" = 2 ] &&
		[ "$(grep -m 1 "^$prog: hosts:" "$log" | cut -d: -f3 | tr ' ' '\n' |
			sed '/^$/d' | sort -u | wc -l)" != 2 ]; then
		why="the ranks were not on two hosts: $(grep -m 1 "^$prog: hosts:" "$log")"
	elif [ "$prog" = threads ] && [ -n "$shim" ]; then
		if ! grep -q '^getinfo_log: .*got FI_THREAD_SAFE' "$log"; then
			why="MPI_THREAD_MULTIPLE, but no fi_getinfo answered FI_THREAD_SAFE: $(grep -m 1 '^getinfo_log:' "$log")"
		elif [[ $cfg = *-mtl || $cfg = *-mtl-* ]] &&
			! grep -q '^getinfo_log: hints threading FI_THREAD_SAFE' "$log"; then
			why="MPI_THREAD_MULTIPLE, but the MTL did not ask FI_THREAD_SAFE: $(grep -m 1 '^getinfo_log:' "$log")"
		fi
	fi
	if [ -n "${xfail[$name]:-}" ]; then
		if [ -n "$why" ]; then
			result XFAIL "$name" "known failure: ${xfail[$name]}; this run: $why"
		else
			result FAIL "$name" "passed, but is marked as a known failure (${xfail[$name]}): drop the mark"
		fi
		return
	fi
	if [ -z "$why" ]; then
		[ "$prog" = threads ] && [ -z "$shim" ] &&
			echo "  note: getinfo_log.so did not build: FI_THREAD_SAFE not checked"
		result PASS "$name" "$(grep -m 1 "^$prog: [0-9]" "$log" | sed "s/^$prog: //")"
	else
		result FAIL "$name" "$why"
		echo "  --- $log (tail)"
		grep -v '^getinfo_log:' "$log" | tail -n 25 | sed 's/^/  | /'
	fi
}

# ---- the two hosts ----

# shellcheck source=tests/mpi/hosts.sh
. "$here/hosts.sh"

# ---- the configurations ----

common=(--bind-to none --mca btl_base_warn_component_unused 0)
one_host=(-np 2 --oversubscribe "${common[@]}")
two_hosts=(--mca plm_rsh_agent "$here/nsrsh.sh"
	--host "$addr_a:2,$addr_b:2" -np 4 "${common[@]}"
	--mca oob_tcp_if_include 192.0.2.0/24 -x "FI_TCP_IFACE=$ifname")
mtl=(--mca pml cm --mca mtl ofi --mca mtl_ofi_provider_include tcp)
mtl_osc=(--mca osc pt2pt)
btl_osc=(--mca osc rdma --mca osc_rdma_btls ofi)
btl() {	# PROVIDER
	echo --mca pml ob1 --mca btl ofi,self --mca btl_ofi_mode 2 \
		--mca btl_ofi_provider_include "$1"
}

# The verbs provider on one device: 0 when it offers RDM endpoints there
# (with these capabilities, if given).
verbs_usable() {	# DEVICE [CAPS]
	[ -n "$1" ] &&
		LD_LIBRARY_PATH=$lib FI_VERBS_DEVICE_NAME=$1 timeout 30 \
			"$info" -p verbs -t FI_EP_RDM ${2:+-c "$2"} >/dev/null 2>&1
}
if [ -z "$verbs_dev" ] && [[ " ${want[*]} " = *" verbs-"* ]]; then
	verbs_dev=$(LD_LIBRARY_PATH=$lib timeout 30 "$info" -p verbs \
		-t FI_EP_RDM 2>/dev/null | sed -n 's/^ *domain: *//p' | head -n 1)
fi
verbs_env=(-x "FI_VERBS_DEVICE_NAME=$verbs_dev" -x FI_VERBS_SHM=0)

skip_config() {	# CONFIG REASON
	for p in "${programs[@]}"; do
		[ -n "$p" ] && result SKIP "$1/$p" "$2"
	done
}

run_config() {
	local cfg=$1 p hosts=1 args=() osc=()
	case $cfg in
	verbs-*) cfg=$cfg${verbs_dev:+-$verbs_dev} ;;
	esac
	echo
	echo "=== $cfg"
	case $cfg in
	verbs-*)
		p=${cfg:6:3}
		has_comp "$p" ofi ||
			{ skip_config "$cfg" "Open MPI has no ofi $p component (ompi_info)"; return; }
		verbs_usable "$verbs_dev" ||
			{ skip_config "$cfg" "the verbs provider offers no RDM endpoint${verbs_dev:+ on $verbs_dev} (no RDMA device here?)"; return; }
		# btl ofi requires FI_RMA and FI_ATOMIC: iWARP has no atomics.
		[ "$p" = mtl ] || verbs_usable "$verbs_dev" "FI_RMA|FI_ATOMIC" ||
			{ skip_config "$cfg" "btl ofi needs FI_ATOMIC, which verbs RDM on $verbs_dev does not offer (no device atomics: iWARP)"; return; }
		if [ "$p" = mtl ]; then
			args=(--mca pml cm --mca mtl ofi --mca mtl_ofi_provider_include verbs)
			osc=("${mtl_osc[@]}")
		else
			read -ra args <<<"$(btl verbs)"
			osc=("${btl_osc[@]}")
		fi
		args+=("${verbs_env[@]}") ;;
	*-mtl) has_comp mtl ofi || { skip_config "$cfg" "Open MPI has no ofi MTL (ompi_info)"; return; }
		has_prov tcp || { skip_config "$cfg" "the library has no tcp provider"; return; }
		args=("${mtl[@]}") osc=("${mtl_osc[@]}") ;;
	shm-btl) has_comp btl ofi || { skip_config "$cfg" "Open MPI has no ofi BTL (ompi_info)"; return; }
		has_prov shm || { skip_config "$cfg" "the library has no shm provider"; return; }
		read -ra args <<<"$(btl shm)"
		osc=("${btl_osc[@]}") ;;
	*-btl) has_comp btl ofi || { skip_config "$cfg" "Open MPI has no ofi BTL (ompi_info)"; return; }
		has_prov tcp || { skip_config "$cfg" "the library has no tcp provider"; return; }
		read -ra args <<<"$(btl tcp)"
		osc=("${btl_osc[@]}") ;;
	esac
	case $cfg in
	netns-*)
		if [ -n "$ns_why" ]; then
			skip_config "$cfg" "$ns_why"
			return
		fi
		if [ -z "$ns_a" ]; then
			if ! hosts_up; then
				skip_config "$cfg" "$ns_why"
				cleanup
				return
			fi
			echo "(hosts: $ns_a $addr_a, $ns_b $addr_b, joined by veth $ifname)"
		fi
		hosts=2
		args=("${two_hosts[@]}" "${args[@]}") ;;
	*) args=("${one_host[@]}" "${args[@]}") ;;
	esac
	for p in "${programs[@]}"; do
		[ -n "$p" ] || continue
		if [ "$p" = rma ]; then
			if [ "${osc[1]}" = rdma ] && ! has_comp osc rdma; then
				result SKIP "$cfg/$p" "Open MPI has no rdma OSC"
				continue
			fi
			run_job "$cfg" "$p" "$hosts" "${args[@]}" "${osc[@]}"
		else
			run_job "$cfg" "$p" "$hosts" "${args[@]}"
		fi
	done
}

for c in "${want[@]}"; do
	run_config "$c"
done
cleanup

echo
echo "== summary (logs in $logs)"
printf '%s\n' "${summary[@]}"
echo "mpi: $npass passed, $nfail failed, $nskip skipped"
[ $nfail = 0 ]
