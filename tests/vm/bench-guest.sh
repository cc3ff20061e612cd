#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# Runs inside the test VM (tests/vm/bench.sh boots it): weft's verbs
# figures beside perftest's on the same device in the same run, interleaved
# over ROUNDS rounds, medians.  Prints one table per device:
#   8 B one-way latency: ib_send_lat, fi_msg_pingpong -e msg,
#                        fi_rdm_tagged_pingpong -e rdm
#   1 MiB RMA write bandwidth: ib_write_bw, fi_rma_bw -o write (-e msg, rdm)
# The VM is emulated: only ratios taken in one run mean anything.
# Latency runs are long (WEFT_BENCH_LAT_ITERS round trips, 20000 by
# default, the same count for perftest and weft; weft's 1000 warmup round
# trips are not timed): in a run of 2000 the emulator's first translation
# of each code path and the host's other work move the mean by 20% from
# round to round, and much less so over 20000.  Each ratio is printed
# per round as well as for the medians, so the spread shows.  Server
# and client are pinned to different vCPUs (taskset), for perftest and
# weft alike: two busy-polling processes left to the scheduler share one
# vCPU now and then, and a run then takes milliseconds per message.
set -u
bld=${WEFT_BUILDDIR:?}
devs=${WEFT_VERBS_DEVS:-"rxe0:10.77.0.1 siw0:10.78.0.1"}
rounds=${WEFT_BENCH_ROUNDS:-3}
lat_iters=${WEFT_BENCH_LAT_ITERS:-20000}
ft=$bld/fabtests
export LD_LIBRARY_PATH=$bld/.libs
# Both processes are on this host: without this, RDM would go through the
# shared memory verbs embeds, not the device.
export FI_VERBS_SHM=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

median() { sort -g | awk '{a[NR]=$1} END {if (NR) print a[int((NR+1)/2)]; else print "nan"}'; }

# perftest pair: prints the client's output; server and client by rdma_cm.
perf() { # perf PROG DEV IP ARGS...
	local prog=$1 dev=$2 ip=$3 s
	shift 3
	taskset -c 0 timeout 120 "$prog" -d "$dev" -R "$@" >"$tmp/psrv" 2>&1 &
	s=$!
	# A client that comes before the server listens is refused: again.
	for _ in 1 2 3 4 5; do
		sleep 1
		taskset -c 1 timeout 120 "$prog" -d "$dev" -R "$@" "$ip" \
			>"$tmp/pcli" 2>&1 && break
		kill -0 $s 2>/dev/null || break
	done
	cat "$tmp/pcli"
	kill $s 2>/dev/null
	wait $s
}

# fabtests pair, -m (one line per size: key=value); prints the client's.
fab() { # fab PROG EP DEV IP ARGS...
	local prog=$1 ep=$2 dev=$3 ip=$4 s port=
	shift 4
	taskset -c 0 timeout 120 "$ft/$prog" -p verbs -e "$ep" -d "$dev" \
		-s "$ip" -B 0 -m "$@" >/dev/null 2>"$tmp/fsrv" &
	s=$!
	for _ in $(seq 100); do
		port=$(sed -n 's/.*listening on port \([0-9]*\).*/\1/p' "$tmp/fsrv")
		[ -n "$port" ] && break
		sleep 0.1
	done
	taskset -c 1 timeout 120 "$ft/$prog" -p verbs -e "$ep" -d "$dev" \
		-P "$port" -m "$@" "$ip" 2>&1
	wait $s
}

field() { sed -n "s/.* $1=\([0-9.]*\).*/\1/p" | tail -n 1; }

for d in $devs; do
	dev=${d%%:*} ip=${d#*:}
	: >"$tmp/lat_ib" ; : >"$tmp/lat_msg"; : >"$tmp/lat_rdm"
	: >"$tmp/bw_ib"; : >"$tmp/bw_msg"; : >"$tmp/bw_rdm"
	for r in $(seq "$rounds"); do
		# ib_send_lat: "#bytes #iterations t_min t_max t_typical t_avg ..."
		perf ib_send_lat "$dev" "$ip" -s 8 -n "$lat_iters" |
			awk '$1 == 8 { print $6 }' >>"$tmp/lat_ib"
		fab fi_msg_pingpong msg "$dev" "$ip" -S 8 -I "$lat_iters" \
			-w 1000 | field usec_per_xfer >>"$tmp/lat_msg"
		fab fi_rdm_tagged_pingpong rdm "$dev" "$ip" -S 8 \
			-I "$lat_iters" -w 1000 | field usec_per_xfer >>"$tmp/lat_rdm"
		# ib_write_bw --report_gbits: "#bytes #iterations BW peak BW average ..."
		perf ib_write_bw "$dev" "$ip" -s 1048576 -n 300 --report_gbits |
			awk '$1 == 1048576 { printf "%.2f\n", $4 * 125 }' >>"$tmp/bw_ib"
		fab fi_rma_bw msg "$dev" "$ip" -o write -S 1m -I 300 -w 20 |
			field mb_per_s >>"$tmp/bw_msg"
		fab fi_rma_bw rdm "$dev" "$ip" -o write -S 1m -I 300 -w 20 |
			field mb_per_s >>"$tmp/bw_rdm"
	done
	li=$(median <"$tmp/lat_ib") lm=$(median <"$tmp/lat_msg") lr=$(median <"$tmp/lat_rdm")
	bi=$(median <"$tmp/bw_ib") bm=$(median <"$tmp/bw_msg") br=$(median <"$tmp/bw_rdm")
	echo
	echo "== $dev ($rounds rounds, medians; emulated VM: compare ratios only)"
	printf '%-34s %12s %12s %8s\n' test reference weft ratio
	ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0 && a > 0) printf "%.2f", a / b; else print "n/a" }'; }
	printf '%-34s %9s us %9s us %8s\n' "8 B latency, MSG (ib_send_lat)" "$li" "$lm" "$(ratio "$lm" "$li")"
	printf '%-34s %9s us %9s us %8s\n' "8 B latency, RDM tagged" "$li" "$lr" "$(ratio "$lr" "$li")"
	printf '%-34s %7s MB/s %7s MB/s %8s\n' "1 MiB write bw, MSG (ib_write_bw)" "$bi" "$bm" "$(ratio "$bm" "$bi")"
	printf '%-34s %7s MB/s %7s MB/s %8s\n' "1 MiB write bw, RDM" "$bi" "$br" "$(ratio "$br" "$bi")"
	echo "raw: ib_send_lat $(tr '\n' ' ' <"$tmp/lat_ib")| msg $(tr '\n' ' ' <"$tmp/lat_msg")| rdm $(tr '\n' ' ' <"$tmp/lat_rdm")"
	per_round() { paste -d ' ' "$1" "$2" | awk '{ printf "%s", ($1 > 0 && $2 > 0) ? sprintf("%.2f ", $2 / $1) : "n/a " }'; }
	echo "per round: latency MSG $(per_round "$tmp/lat_ib" "$tmp/lat_msg")| RDM $(per_round "$tmp/lat_ib" "$tmp/lat_rdm")| bw MSG $(per_round "$tmp/bw_ib" "$tmp/bw_msg")| RDM $(per_round "$tmp/bw_ib" "$tmp/bw_rdm")"
	echo "raw: ib_write_bw $(tr '\n' ' ' <"$tmp/bw_ib")| msg $(tr '\n' ' ' <"$tmp/bw_msg")| rdm $(tr '\n' ' ' <"$tmp/bw_rdm")"
done
