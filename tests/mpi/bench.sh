#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
#
# MPI ping-pong over weft beside Open MPI's own transports, in one run:
# one-way latency of 8 B and streaming bandwidth of 1 MiB messages
# (tests/mpi/pingpong -b, two ranks), for
#   weft tcp MTL      one host: --mca pml cm --mca mtl ofi, provider tcp
#   weft shm BTL      one host: --mca pml ob1 --mca btl ofi,self, provider shm
#   weft tcp MTL 2h   two hosts (network namespaces, see hosts.sh), one
#                     rank on each
#   ompi vader        one host: Open MPI's shared-memory BTL
#   ompi tcp          one host: Open MPI's tcp BTL
#   ompi tcp 2h       two hosts: Open MPI's tcp BTL
#   weft verbs MTL D  with --verbs-dev D (repeatable): one host, mtl ofi
#   weft verbs BTL D  and btl ofi over weft's verbs on device D, with
#                     FI_VERBS_SHM=0 (through the device); --verbs-only
#                     leaves out the other rows
# Rounds are interleaved (every configuration once per round) and the
# table gives medians, with the spread (min-max) of the rounds.  Nothing
# is judged: a failed run is shown as such and leaves its cell empty.
#
# usage: bench.sh [BUILDDIR] [--rounds N] [--lib DIR] [--verbs-dev D]...
#                 [--verbs-only]
# Needs mpirun and mpicc; the two-host rows need root (skipped otherwise).

set -u

here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
bld=${top_builddir:-}
lib=
rounds=5
vdevs=()
vonly=0
while [ $# -gt 0 ]; do
	case $1 in
	--rounds) rounds=$2; shift 2 ;;
	--rounds=*) rounds=${1#--rounds=}; shift ;;
	--lib) lib=$2; shift 2 ;;
	--lib=*) lib=${1#--lib=}; shift ;;
	--verbs-dev) vdevs+=("$2"); shift 2 ;;
	--verbs-dev=*) vdevs+=("${1#--verbs-dev=}"); shift ;;
	--verbs-only) vonly=1; shift ;;
	-h | --help) sed -n '3,25s/^# \{0,1\}//p' "$0"; exit 0 ;;
	-*) echo "unknown option '$1'" >&2; exit 2 ;;
	*) bld=$1; shift ;;
	esac
done
bld=$(cd "${bld:-$src}" && pwd) || exit 2
lib=$(cd "${lib:-$bld/.libs}" 2>/dev/null && pwd)
[ -n "$lib" ] && [ -e "$lib/libfabric.so.1" ] ||
	{ echo "no libfabric.so.1 in ${lib:-$bld/.libs} (build first)" >&2; exit 2; }
command -v mpirun >/dev/null 2>&1 && command -v mpicc >/dev/null 2>&1 ||
	{ echo "bench: needs mpirun and mpicc (Open MPI)"; exit 77; }
out=$bld/tests/mpi
mkdir -p "$out" || exit 2
mpicc -O2 -Wall -o "$out/pingpong" "$here/pingpong.c" || exit 2
prog=$out/pingpong

# shellcheck source=tests/mpi/hosts.sh
. "$here/hosts.sh"

root=()
[ "$(id -u)" = 0 ] && root=(--allow-run-as-root)
unset FI_PROVIDER FI_TCP_IFACE FI_LOG_LEVEL
base=(-np 2 --bind-to none --mca btl_base_warn_component_unused 0)
weft=(-x "LD_LIBRARY_PATH=$lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}")
mtl=(--mca pml cm --mca mtl ofi --mca mtl_ofi_provider_include tcp)
shm=(--mca pml ob1 --mca btl ofi,self --mca btl_ofi_mode 2
	--mca btl_ofi_provider_include shm)
two=()
if [ $vonly = 1 ]; then
	:
elif hosts_up; then
	two=(--mca plm_rsh_agent "$here/nsrsh.sh" --host "$addr_a:1,$addr_b:1"
		--mca oob_tcp_if_include 192.0.2.0/24)
else
	echo "bench: no two-host rows: $ns_why"
fi

names=("weft tcp MTL" "weft shm BTL" "weft tcp MTL 2h" "ompi vader"
	"ompi tcp" "ompi tcp 2h")
[ $vonly = 1 ] && names=()
declare -A vdev vkind
for d in "${vdevs[@]}"; do
	for k in MTL BTL; do
		vdev[${#names[@]}]=$d vkind[${#names[@]}]=$k
		names+=("weft verbs $k $d")
	done
done
# run_one INDEX: prints "LAT BW" or nothing
run_one() {
	local args=() pre=() i=$1
	if [ -n "${vdev[$1]:-}" ]; then
		i=verbs
		args=("${weft[@]}" -x "FI_VERBS_DEVICE_NAME=${vdev[$1]}"
			-x FI_VERBS_SHM=0)
		if [ "${vkind[$1]}" = MTL ]; then
			args+=(--mca pml cm --mca mtl ofi
				--mca mtl_ofi_provider_include verbs)
		else
			args+=(--mca pml ob1 --mca btl ofi,self
				--mca btl_ofi_mode 2
				--mca btl_ofi_provider_include verbs)
		fi
	fi
	case $i in
	0) args=("${weft[@]}" "${mtl[@]}") ;;
	1) args=("${weft[@]}" "${shm[@]}") ;;
	2) [ ${#two[@]} -gt 0 ] || return
		pre=("${host_a[@]}")
		args=("${two[@]}" "${weft[@]}" -x "FI_TCP_IFACE=$ifname" "${mtl[@]}") ;;
	3) args=(--mca pml ob1 --mca btl vader,self) ;;
	4) args=(--mca pml ob1 --mca btl tcp,self) ;;
	5) [ ${#two[@]} -gt 0 ] || return
		pre=("${host_a[@]}")
		args=("${two[@]}" --mca pml ob1 --mca btl tcp,self
			--mca btl_tcp_if_include 192.0.2.0/24) ;;
	esac
	timeout -k 5 120 "${pre[@]}" mpirun "${root[@]}" "${base[@]}" \
		"${args[@]}" "$prog" -b 2>/dev/null </dev/null |
		awk '/^lat8_us/ { l = $2 } /^bw1m_MBps/ { b = $2 }
			END { if (l != "" && b != "") print l, b }'
	[ ${#pre[@]} -gt 0 ] && ns_kill_all
}

declare -A lat bw
loadavg() {
	cut -d ' ' -f 1-3 /proc/loadavg 2>/dev/null
}
echo "bench: $(mpirun --version | head -n 1); weft: $lib/libfabric.so.1;" \
	"$rounds rounds, interleaved; $(nproc 2>/dev/null) CPUs, load $(loadavg)"
for ((r = 1; r <= rounds; r++)); do
	for i in "${!names[@]}"; do
		res=$(run_one "$i")
		if [ -n "$res" ]; then
			set -- $res
			lat[$i]="${lat[$i]:-} $1"
			bw[$i]="${bw[$i]:-} $2"
		fi
	done
	echo "bench: round $r of $rounds done"
done

stats() {	# DECIMALS VALUES... -> "median (min-max)"
	local d=$1
	shift
	[ $# -gt 0 ] || { echo "-"; return; }
	printf '%s\n' "$@" | sort -g | awk -v d="$d" '{ v[NR] = $1 }
		END { if (!NR) { print "-"; exit }
			m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
			f = "%." d "f (%." d "f-%." d "f)\n"
			printf f, m, v[1], v[NR] }'
}
echo
echo "bench: load at the end $(loadavg) (busy-polling ranks need a CPU each)"
printf '%-18s %-26s %-26s %s\n' "configuration" "8 B one-way latency, us" \
	"1 MiB bandwidth, MB/s" "runs"
for i in "${!names[@]}"; do
	# shellcheck disable=SC2086
	n=$(echo ${lat[$i]:-} | wc -w)
	# shellcheck disable=SC2086
	printf '%-18s %-26s %-26s %s\n' "${names[$i]}" "$(stats 2 ${lat[$i]:-})" \
		"$(stats 0 ${bw[$i]:-})" "$n/$rounds"
done
