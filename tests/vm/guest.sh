#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# The tests check.sh runs inside weft's test VM, where rxe0 (10.77.0.1) and
# siw0 (10.78.0.1) are real soft-RDMA devices.  Each runs under `timeout`
# with its output in $WEFT_VM_LOGS/NAME.log, and prints one line: PASS
# NAME, FAIL NAME, or SKIP NAME (reason).  The last line reads
# "vm: N passed, N failed, N skipped"; the exit status is 1 if any failed.
#
# Env (check.sh sets them): WEFT_BUILDDIR, WEFT_SRCDIR, WEFT_VM_LOGS,
# WEFT_REF_LIBDIR (the reference libfabric.so.1's directory, may be empty),
# WEFT_VM_CASE_TIMEOUT (s, default 600: one test), WEFT_VM_CLIENTS (weft:
# tests/clients on rxe0 over weft, the default; full: both devices, the
# reference too; 0: none), WEFT_VM_FABTESTS (the
# fabtests programs for the verbs matrix, comma-separated, or "all"),
# WEFT_VM_ONLY (an extended regular expression: only the tests whose
# names match run; the others are left out, unreported), WEFT_SANITIZERS
# (yes: the build tree has -fsanitize=address,undefined; the reference
# library's runs and Open MPI, which cannot load it, are skipped, with
# that reason; ASAN_OPTIONS and UBSAN_OPTIONS pass through),
# WEFT_SAN_BUILDDIR (a second build tree, with sanitizers: one boot for
# both builds, each test run once, in the build that suits it; see
# "Two builds, one boot" below).
set -u
bld=${WEFT_BUILDDIR:?} src=${WEFT_SRCDIR:?} logs=${WEFT_VM_LOGS:?}
sbld=${WEFT_SAN_BUILDDIR:-}
ref=${WEFT_REF_LIBDIR:-}
limit=${WEFT_VM_CASE_TIMEOUT:-600}
fabtests=${WEFT_VM_FABTESTS:-fi_msg_pingpong,fi_rdm_pingpong,fi_rdm_tagged_pingpong,fi_rma_bw}
devs="rxe0:10.77.0.1 siw0:10.78.0.1"
# the tests run in a new bash (see run): they see these
export bld src logs ref fabtests devs
san=${WEFT_SANITIZERS:-no}
export WEFT_SANITIZERS=$san
san_why="left to the plain run: this build has sanitizers"
mkdir -p "$logs"
cd "$bld" || exit 1
unset FI_PROVIDER LD_LIBRARY_PATH

# ---- Two builds, one boot ----
# With WEFT_SAN_BUILDDIR, WEFT_BUILDDIR is the plain build and every test
# runs once: tests/verbs/*.sh and tests/clients over weft in the sanitized
# build, where a memory error or undefined behaviour fails them; in the
# plain build what loads weft into a program that cannot take a sanitized
# library (Open MPI, the reference's and upstream's programs: a script
# saying "# vm-build: plain"), the fabtests matrix (weft's beside the
# reference's), and the conformance suite, plain and over contexts
# (emulated, both lanes at once: sanitized 409 and 443 s, plain 353 and
# 361 s).
# sanitized COMMAND...: COMMAND in a subshell set for the sanitized build
# (the plain one without WEFT_SAN_BUILDDIR).
sanitized() {
	if [ -z "$sbld" ]; then
		"$@"
		return
	fi
	(
		WEFT_PLAIN_BUILDDIR=$bld
		bld=$sbld san=yes WEFT_SANITIZERS=yes
		LD_LIBRARY_PATH=$sbld/.libs
		export LD_LIBRARY_PATH WEFT_PLAIN_BUILDDIR
		cd "$bld" || exit 1
		"$@"
	)
}
# spread ROW DEV: whether ROW (a run over contexts, the reference's matrix,
# an MPI configuration) runs over DEV.  In a two-build run (CI's, under
# 90 minutes) each of these runs over one device, the two lanes taking
# turns: contexts stx, the reference's matrix, MPI's tagged path and
# tests/clients over rxe0; contexts sep and srx and MPI's BTL over siw0
# (from each row's time in a full run: about 29 and 32 minutes a lane).
# The suite, weft's matrix and tests/verbs/*.sh run over both.  Otherwise,
# or with WEFT_VM_SPREAD=0, every row runs over both devices.
spread_on=
if [ -n "$sbld" ] && [ "${WEFT_VM_SPREAD:-1}" != 0 ]; then
	spread_on="conformance-stx-verbs=rxe conformance-sep-verbs=siw
		conformance-srx-verbs=siw ref-fabtests-verbs=rxe
		mpi-verbs-mtl=rxe mpi-verbs-btl=siw"
fi
spread() {	# ROW DEV:ADDR: 0 runs it, 1 leaves it to the other lane (a SKIP)
	local r
	for r in $spread_on; do
		if [ "${r%%=*}" = "$1" ]; then
			case $2 in "${r#*=}"*) return 0 ;; esac
			result SKIP "$1-${2%%:*}" "over the other device in a two-build run (WEFT_VM_SPREAD=0: both)"
			return 1
		fi
	done
	return 0
}
# Two processes of this VM are on one host: their verbs RDM endpoints
# would meet through shared memory.  The tests are about the device:
# verbs/rdm-shm runs the default too, and checks which way it went.
export FI_VERBS_SHM=0
# Shared memory regions (weft's, Open MPI's) live in /dev/shm.
if [ ! -d /dev/shm ]; then
	mkdir -p /dev/shm && mount -t tmpfs -o mode=1777 tmpfs /dev/shm
fi
echo "vm: guest up ($(uname -r), $(nproc) cpus)"

# result PASS|FAIL|SKIP NAME [REASON].  Each result is a line of $results
# as well: the per-device lanes below run side by side in subshells, and
# the summary counts from that file.
results=$logs/results
: >"$results"
result() {
	echo "$1 $2" >>"$results"
	case $1 in
	PASS) echo "PASS $2${3:+ ($3)}" ;;
	FAIL) echo "FAIL $2${3:+ ($3)}" ;;
	SKIP) echo "SKIP $2 (${3:-no reason given})" ;;
	esac
}
logof() { echo "$logs/${1//\//_}.log"; }

# run NAME LIMIT COMMAND...: 0 passes, 77 skips (the reason: the log's
# last "SKIP"/"skip" line, else its last line), anything else fails.
run() {
	local name=$1 lim=$2 log rc why
	shift 2
	# WEFT_VM_ONLY: an extended regular expression the names must match
	if [ -n "${WEFT_VM_ONLY:-}" ] && ! [[ $name =~ $WEFT_VM_ONLY ]]; then
		return 0
	fi
	log=$(logof "$name")
	echo "\$ $*" >"$log"
	t=$SECONDS
	# a new bash, so that NAME may be one of the functions exported below
	timeout -k 10 "$lim" bash -c '"$@"' run "$@" >>"$log" 2>&1 </dev/null
	rc=$?
	t=$((SECONDS - t))
	case $rc in
	0) result PASS "$name" "$t s" ;;
	77)
		why=$(grep -i 'skip' "$log" | tail -n 1)
		[ -n "$why" ] || why=$(tail -n 1 "$log")
		result SKIP "$name" "$why; $t s" ;;
	124 | 137) echo "timed out after ${lim}s" >>"$log"; result FAIL "$name" "timed out after ${lim}s" ;;
	*) result FAIL "$name" "exit $rc; $t s" ;;
	esac
}

# ---- the VM itself: the devices are there and carry traffic ----
check_devices() {
	ibv_devices || return 1
	ibv_devices | grep -qw rxe0 && ibv_devices | grep -qw siw0
}
export -f check_devices
run devices 30 check_devices

# rping: rdma_cm picks the device by address; iWARP needs rdma_cm.
# One attempt: a server, then a client, each bounded.  rping is rdma-core's
# and the device the kernel's: on a loaded, emulated VM a connection can
# stall before it starts (seen once on siw0 in 80+ runs: neither side moved
# for 60 s).  That says nothing about weft, so a stalled attempt is
# logged and the pair starts again, three times at most.
rping_once() {	# ADDR
	local s rc i
	rping -s -a "$1" -C 10 >/tmp/rping-s.out 2>&1 &
	s=$!
	# the server may take a while to listen: a client refused before
	# then tries again
	for i in 1 2 3 4 5 6 7 8 9 10; do
		sleep 1
		timeout -k 2 15 rping -c -a "$1" -C 10 -v >/tmp/rping.out 2>&1
		rc=$?
		grep -q REJECTED /tmp/rping.out || break
		echo "(the server was not listening yet: try $i)"
	done
	tail -n 2 /tmp/rping.out
	if [ $rc = 0 ]; then
		# the server ends once the client has gone
		for i in $(seq 1 50); do
			kill -0 $s 2>/dev/null || break
			sleep 0.1
		done
	fi
	kill -9 $s 2>/dev/null && { echo "(the server had not ended)"; rc=1; }
	wait $s 2>/dev/null || rc=1
	[ $rc = 0 ] || { echo "-- client:"; tail -n 5 /tmp/rping.out; echo "-- server:"; tail -n 5 /tmp/rping-s.out; }
	return $rc
}
rping_pair() {	# ADDR
	local a
	for a in 1 2 3; do
		echo "attempt $a"
		rping_once "$1" && return 0
	done
	return 1
}
export -f rping_once rping_pair
for d in $devs; do
	run "rping-${d%%:*}" 120 rping_pair "${d#*:}"
done

# ---- the reference library sees both devices (informational) ----
lists_devs() {	# FILE: both devices named as domains
	grep -q 'rxe0' "$1" && grep -q 'siw0' "$1"
}
ref_fi_info() {
	local out=/tmp/ref-fi_info.out
	LD_LIBRARY_PATH=$ref /usr/bin/fi_info -p verbs >$out 2>&1
	grep -E 'provider|domain' $out | sort | uniq -c
	lists_devs $out || { echo "rxe0 or siw0 missing"; cat $out; return 1; }
}
export -f lists_devs ref_fi_info
if [ $san = yes ]; then
	result SKIP ref-fi_info-verbs "$san_why"
elif [ ! -x /usr/bin/fi_info ]; then
	result SKIP ref-fi_info-verbs "no /usr/bin/fi_info: libfabric-bin is not installed"
elif [ -z "$ref" ]; then
	result SKIP ref-fi_info-verbs "no reference libfabric.so.1"
else
	run ref-fi_info-verbs 60 ref_fi_info
fi

# ---- weft's own fi_info, and whether weft has a verbs provider ----
export LD_LIBRARY_PATH=$bld/.libs
sanitized eval 'run weft-fi_info 60 "$bld/util/fi_info" -l'
weft_verbs=no
missing=$(sed -n 's/^#define WEFT_MISSING_VERBS "\(.*\)"$/\1/p' "$bld/config.h" 2>/dev/null)
weft_fi_info_verbs() {
	local out=/tmp/weft-fi_info.out
	"$bld/util/fi_info" -p verbs >$out 2>&1
	cat $out
	lists_devs $out || { echo "rxe0 or siw0 missing"; return 1; }
}
export -f weft_fi_info_verbs
out=$(timeout 60 "$bld/util/fi_info" -p verbs 2>&1)
if [ -n "$missing" ] || echo "$out" | grep -q 'not built'; then
	why=${missing:-$(echo "$out" | grep 'not built' | head -n 1 | sed 's/^ *//')}
	result SKIP weft-fi_info-verbs "weft's verbs provider not built: $why"
	echo "$out" >"$(logof weft-fi_info-verbs)"
else
	weft_verbs=yes
	sanitized run weft-fi_info-verbs 60 weft_fi_info_verbs
fi
no_verbs="weft's verbs provider not built"

# ---- tests/verbs/*.sh: the verbs provider's own tests ----
# Contract: run as root in this VM with WEFT_BUILDDIR, WEFT_SRCDIR and
# WEFT_VERBS_DEVS ("DEV:ADDR DEV:ADDR"), LD_LIBRARY_PATH on weft's library,
# cwd the build tree; exit 0 pass, 77 skip (last line says why), else fail.
# A script with a line "# vm-lane: alone" (port-busy: it narrows the VM's
# ephemeral port range) runs here, over both devices, before the lanes;
# the others run in the device lanes below, once per device, as
# verbs/NAME-DEV.
verbs_script() {	# SCRIPT DEVS NAME
	local how=sanitized vs=$1 vd=$2 vn=$3
	grep -q '^# vm-build: plain' "$vs" && how=
	# eval: $bld is the sanitized build's inside "sanitized"
	$how eval 'run "$vn" "$limit" env WEFT_BUILDDIR="$bld" \
		WEFT_SRCDIR="$src" WEFT_VERBS_DEVS="$vd" bash "$vs"'
}
verbs_scripts=
for t in "$src"/tests/verbs/*.sh; do
	[ -e "$t" ] || continue
	n=${t##*/}
	[ "$n" = lib.sh ] && continue # sourced by the others
	if grep -q '^# vm-lane: alone' "$t"; then
		verbs_script "$t" "$devs" "verbs/${n%.sh}"
	else
		verbs_scripts="$verbs_scripts $t"
	fi
done
[ -n "$verbs_scripts" ] ||
	result SKIP verbs-scripts "no tests/verbs/*.sh in the source tree"
lane_verbs() {	# DEV:ADDR
	local t n
	for t in $verbs_scripts; do
		n=${t##*/}
		verbs_script "$t" "$1" "verbs/${n%.sh}-${1%%:*}"
	done
}

# ---- the conformance suite over weft's verbs, once per device ----
# The bounds stop a hang; they are no measure of time.  Emulated, on a host
# busy with other work (load 10 on two cores), the suite over one device
# took over 300 s and proc_pingpong's 1020 round trips over 30 s: 60 s a
# case, 600 s the run.
conformance() {	# ADDR
	CF_NODE=$1 CF_CASE_TIMEOUT=${CF_CASE_TIMEOUT:-60} \
		CONFORMANCE="$bld/tests/prov/conformance" \
		sh "$src/tests/prov/run-conformance.sh" verbs
}
export -f conformance
lane_conformance() {	# DEV:ADDR
	local d=$1
	if [ $weft_verbs = no ]; then
		result SKIP "conformance-verbs-${d%%:*}" "$no_verbs"
	elif [ ! -x "$bld/tests/prov/conformance" ]; then
		result FAIL "conformance-verbs-${d%%:*}" "tests/prov/conformance not built"
	else
		run "conformance-verbs-${d%%:*}" "$limit" conformance "${d#*:}"
	fi
}

# ---- the conformance suite once more over contexts, once per device ----
# As tests/prov/contexts.sh on the host: CF_CONTEXTS=stx puts every
# endpoint on a shared transmit context, CF_CONTEXTS=sep runs every case
# over a scalable endpoint's contexts, CF_CONTEXTS=srx puts every endpoint
# on a shared receive context; a mode whose probe case (stx_api, sep_api,
# srx_api) skips on verbs skips here too, with the probe's reason.
contexts() {	# MODE ADDR
	local probe=$1_api rc
	CF_NODE=$2 "$bld/tests/prov/conformance" -p verbs -c "$probe"
	rc=$?
	case $rc in
	0) ;;
	77) echo "skip: $probe skips on verbs: no such contexts"; return 77 ;;
	*) echo "$probe fails on verbs: the suite runs anyway" ;;
	esac
	# Twice the plain run's time for a case: with CF_CONTEXTS=sep its
	# endpoints are scalable endpoints of 4 pairs each, four times the
	# connections and queues to make under emulation.
	CF_CONTEXTS=$1 CF_NODE=$2 CF_CASE_TIMEOUT=${CF_CASE_TIMEOUT:-120} \
		CONFORMANCE="$bld/tests/prov/conformance" \
		sh "$src/tests/prov/run-conformance.sh" verbs || return $?
	[ $rc = 0 ]
}
export -f contexts
lane_contexts() {	# DEV:ADDR
	local d=$1 m
	for m in stx sep srx; do
		if [ $weft_verbs = no ]; then
			result SKIP "conformance-$m-verbs-${d%%:*}" "$no_verbs"
		elif ! spread "conformance-$m-verbs" "$d"; then
			:
		elif [ "$san" = yes ]; then
			# The suite's time twice more under emulation and
			# sanitizers: the plain run covers contexts.
			result SKIP "conformance-$m-verbs-${d%%:*}" "$san_why"
		elif [ ! -x "$bld/tests/prov/conformance" ]; then
			result FAIL "conformance-$m-verbs-${d%%:*}" "tests/prov/conformance not built"
		else
			# (the whole suite: twice a test's time)
			run "conformance-$m-verbs-${d%%:*}" $((limit * 2)) \
				contexts "$m" "${d#*:}"
		fi
	done
}

# ---- the fabtests matrix over verbs: weft's, and the reference's ----
matrix() {	# NAME ADDR: fabtests-run over the library LD_LIBRARY_PATH names
	local keep=$logs/$1.runs
	local only=()
	[ "$fabtests" = all ] || only=(-t "$fabtests")
	mkdir -p "$keep"
	# Known defect (counted apart, its log printed): weft's fi_cm_data
	# over siw (MSG: a connection made right after a rejected one) fails
	# about half the time, the peer's message never arriving.
	local known=
	[ "$1" = fabtests-verbs-siw0 ] && known="fi_cm_data -e msg"
	# The programs' own limit (-T) 30 s, not 10: a connection on the
	# emulated siw beside the other device's lane took over 10 s.
	TMPDIR=$keep FT_PROG_TIMEOUT=30 FT_KNOWN=$known \
		bash "$src/fabtests/scripts/run" -q \
		-p verbs -a "$2" -e msg,rdm -b "$bld/fabtests" -T 60 "${only[@]}"
	local rc=$?
	rmdir "$keep" 2>/dev/null	# the runner keeps only failed runs' logs
	return $rc
}
export -f matrix
lane_matrix() {	# DEV:ADDR
	local d=$1
	if [ $weft_verbs = no ]; then
		result SKIP "fabtests-verbs-${d%%:*}" "$no_verbs"
	else
		run "fabtests-verbs-${d%%:*}" "$limit" matrix "fabtests-verbs-${d%%:*}" "${d#*:}"
	fi
}
# Debian's libfabric over the same programs: a check of this harness.  Its
# verbs;ofi_rxm sizes CQs from FI_UNIVERSE_SIZE, and rxe allows 32767
# entries at most: 64 peers keep it below.
lane_ref_matrix() {	# DEV:ADDR
	local d=$1
	if [ $san = yes ]; then
		result SKIP "ref-fabtests-verbs-${d%%:*}" "$san_why"
	elif ! spread ref-fabtests-verbs "$d"; then
		:
	elif [ -z "$ref" ]; then
		result SKIP "ref-fabtests-verbs-${d%%:*}" "no reference libfabric.so.1"
	else
		LD_LIBRARY_PATH=$ref FI_UNIVERSE_SIZE=64 \
			run "ref-fabtests-verbs-${d%%:*}" "$limit" matrix "ref-fabtests-verbs-${d%%:*}" "${d#*:}"
	fi
}

# ---- Open MPI over weft's verbs: tests/mpi's programs, two ranks ----
# (run.sh's verbs-mtl and verbs-btl configurations, on one device each;
# FI_VERBS_SHM=0 there too, so that the ranks talk through the device.)
# Passes when every program passed; skips, with run.sh's reason, when
# none could run.  480 s a program: beside the other lane and a suite on
# the host, rma (put/get up to 1 MiB, fences, locks) outlasted 240 s on
# rxe0, where it takes under 30 s alone.
mpi_verbs() {	# CONFIG DEV
	local out=/tmp/mpi-$1-$2.out n
	OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
		bash "$src/tests/mpi/run.sh" "$bld" --config "$1" --verbs-dev "$2" \
		--timeout 480 2>&1 | tee $out
	grep -q '^mpi: [0-9]* passed, 0 failed' $out || return 1
	n=$(sed -n 's/^mpi: \([0-9]*\) passed.*/\1/p' $out)
	if [ "${n:-0}" = 0 ]; then
		echo "skip: $(grep -m 1 -E '^(SKIP: |mpi: SKIPPED)' $out)"
		return 77
	fi
}
export -f mpi_verbs
lane_mpi() {	# DEV:ADDR
	local d=$1 c
	for c in verbs-mtl verbs-btl; do
		if [ $weft_verbs = no ]; then
			result SKIP "mpi-$c-${d%%:*}" "$no_verbs"
		elif [ $san = yes ]; then
			result SKIP "mpi-$c-${d%%:*}" "$san_why (Open MPI cannot load it)"
		elif ! spread "mpi-$c" "$d"; then
			:
		else
			run "mpi-$c-${d%%:*}" $((limit * 4)) mpi_verbs "$c" "${d%%:*}"
		fi
	done
}

# ---- tests/clients over the verbs names ----
# Each program replays a real client's OFI calls (tests/clients/README.md)
# over weft's verbs, with run.sh's list of known failures.  Emulated, each
# run takes seconds, so by default one device and weft alone (about 5
# minutes); WEFT_VM_CLIENTS=full runs both devices and, on each, the
# reference's verbs first (unless sanitized), so that weft not answering
# where 1.17 does is a failure (about 35 minutes: raise WEFT_VM_TIMEOUT);
# WEFT_VM_CLIENTS=0 leaves them out.
# FI_UNIVERSE_SIZE=64 keeps the reference's verbs;ofi_rxm CQs within rxe's
# limit.  The variants that change nothing on verbs stay on the host.
vm_clients=${WEFT_VM_CLIENTS:-weft}
clients() {	# DEV ADDR LIBRARY (weft, or "" for both)
	local r=$ref c cs=()
	[ "$WEFT_SANITIZERS" = yes ] && r=
	for c in ompi4-mtl ompi5-mtl ompi4-btl ompi5-btl mpich mercury sos \
		nccl fabtests-rdm fabtests-rma_bw fabtests-cm_data; do
		cs+=(-c "$c")
	done
	top_builddir=$bld REF_LIBDIR=$r CLIENTS_VERBS_ADDR=$2 CLIENTS_SITE=$1 \
		CLIENTS_ENV="FI_VERBS_SHM=0 FI_UNIVERSE_SIZE=64" \
		CLIENTS_TIMEOUT=60 \
		bash "$src/tests/clients/run.sh" "${cs[@]}" ${3:+-l "$3"} \
		verbs "verbs;ofi_rxm"
}
export -f clients
lane_clients() {	# DEV:ADDR
	local d=$1 lib
	if [ "$vm_clients" = 0 ]; then
		result SKIP "clients-verbs-${d%%:*}" "WEFT_VM_CLIENTS=0"
	elif [ "$vm_clients" != full ] && [ "${d%%:*}" != rxe0 ]; then
		result SKIP "clients-verbs-${d%%:*}" "one device unless WEFT_VM_CLIENTS=full"
	elif [ $weft_verbs = no ]; then
		result SKIP "clients-verbs-${d%%:*}" "$no_verbs"
	elif [ ! -x "$bld/tests/clients/mpich" ]; then
		result FAIL "clients-verbs-${d%%:*}" "tests/clients not built"
	else
		lib=weft
		[ "$vm_clients" = full ] && lib=
		run "clients-verbs-${d%%:*}" $((limit * 10)) clients \
			"${d%%:*}" "${d#*:}" "$lib"
	fi
}

# ---- the lanes: one per device, side by side ----
# A device's tests run in order in its own lane, and the two lanes run at
# once: each run keeps about one of the VM's two CPUs busy (rxe and siw do
# their work in the kernel), so that this part takes a little more than
# half the time it takes in a row.  A lane starts with tests/verbs/*.sh
# over its device (but port-busy, above).
device_lane() {	# DEV:ADDR
	lane_verbs "$1"
	lane_conformance "$1"
	lane_contexts "$1"
	lane_matrix "$1"
	lane_ref_matrix "$1"
	lane_mpi "$1"
	sanitized lane_clients "$1"
}
for d in $devs; do
	device_lane "$d" &
done
wait

# ---- summary: the failures' last lines, then the counts ----
for n in $(sed -n 's/^FAIL //p' "$results"); do
	echo "--- tail of $(logof "$n")"
	tail -n 25 "$(logof "$n")"
done
pass=$(grep -c '^PASS ' "$results")
fail=$(grep -c '^FAIL ' "$results")
skip=$(grep -c '^SKIP ' "$results")
echo "vm: $pass passed, $fail failed, $skip skipped"
[ $fail = 0 ]
