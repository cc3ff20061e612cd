#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# Run one command inside weft's test VM (built by tests/vm/build.sh):
#
#   run.sh [-w DIR]... 'COMMAND'
#
# QEMU boots Debian's kernel (KVM when the host has real VMX/SVM, else TCG
# emulation); the guest's root is this host's / shared read-only over 9p
# under a tmpfs overlay, so host binaries run unchanged and writes vanish
# with the VM, except in each -w DIR, which is shared writable.  The guest
# has rxe0 (Soft-RoCE, dummy0, 10.77.0.1/24) and siw0 (Soft-iWARP, dummy1,
# 10.78.0.1/24).  COMMAND runs through /bin/sh as root, with
# `ulimit -l unlimited`, in the current directory and this environment.
#
# Exit status: COMMAND's; 124 it timed out; 125 the VM failed.
# Env: WEFT_VM_CACHE (where build.sh put the VM; default tests/vm/cache under
# the current directory), WEFT_VM_TIMEOUT (s, default 900), WEFT_VM_MEM
# (default 1G), WEFT_VM_SMP (default 2), WEFT_VM_ACCEL (kvm, tcg, or auto),
# WEFT_VM_QEMU (default qemu-system-x86_64),
# WEFT_VM_VERBOSE=1 (kernel log and setup details on the console).
set -u
cache=${WEFT_VM_CACHE:-$PWD/tests/vm/cache}
rw=()
while getopts w: opt; do
	case $opt in
	w) d=$(cd "$OPTARG" && pwd) || exit 125; rw+=("$d") ;;
	*) echo "usage: $0 [-w DIR]... 'COMMAND'" >&2; exit 125 ;;
	esac
done
shift $((OPTIND - 1))
[ $# -ge 1 ] || { echo "usage: $0 [-w DIR]... 'COMMAND'" >&2; exit 125; }
qemu=${WEFT_VM_QEMU:-qemu-system-x86_64}
command -v "$qemu" >/dev/null || { echo "vm: no $qemu" >&2; exit 125; }
kernel=$cache/vmlinux
[ -f "$kernel" ] || kernel=$cache/vmlinuz
[ -f "$kernel" ] && [ -f "$cache/initramfs.cpio.gz" ] ||
	{ echo "vm: no VM in $cache: run tests/vm/build.sh" >&2; exit 125; }

# A stock kernel needs real hardware virtualisation.  Some sandboxes offer a
# /dev/kvm of the paravirtual kind (kvm_pvm) that boots only kernels made
# for it: there, and without /dev/kvm, emulate.
accel=${WEFT_VM_ACCEL:-auto}
if [ "$accel" = auto ]; then
	accel=tcg
	if [ -w /dev/kvm ] && [ ! -d /sys/module/kvm_pvm ] &&
		grep -qw -e vmx -e svm /proc/cpuinfo; then
		accel=kvm
	fi
fi
case $accel in
kvm) cpu=(-accel kvm -cpu host) ;;
tcg) cpu=(-accel "tcg,thread=multi" -cpu max) ;;
*) echo "vm: WEFT_VM_ACCEL=$accel: kvm, tcg or auto" >&2; exit 125 ;;
esac

ctl=$(mktemp -d "${TMPDIR:-/tmp}/weft-vm.XXXXXX") || exit 125
trap 'rm -rf "$ctl"' EXIT
printf '%s\n' "$*" >"$ctl/cmd"
{
	export -p | grep -v -E '^declare -x (BASH_[A-Z_]*|SHLVL|OLDPWD|_)=' |
		sed 's/^declare -x /export /'
	echo "export WEFT_VM_PWD=$(printf %q "$PWD")"
} >"$ctl/env"
fs=(-fsdev "local,id=root,path=/,security_model=none,readonly=on,multidevs=remap"
	-device "virtio-9p-pci,fsdev=root,mount_tag=hostroot"
	-fsdev "local,id=ctl,path=$ctl,security_model=none"
	-device "virtio-9p-pci,fsdev=ctl,mount_tag=weftctl")
i=0
for d in "${rw[@]}"; do
	echo "$d" >"$ctl/rw$i"
	fs+=(-fsdev "local,id=rw$i,path=$d,security_model=none,multidevs=remap"
		-device "virtio-9p-pci,fsdev=rw$i,mount_tag=rw$i")
	i=$((i + 1))
done
append="console=ttyS0 panic=-1 rdinit=/init mitigations=off"
if [ "${WEFT_VM_VERBOSE:-0}" = 1 ]; then
	append="$append weftvm.verbose loglevel=7"
else
	append="$append quiet loglevel=1"
fi
limit=${WEFT_VM_TIMEOUT:-900}
timeout -k 5 "$limit" "$qemu" "${cpu[@]}" -machine q35 \
	-m "${WEFT_VM_MEM:-1G}" -smp "${WEFT_VM_SMP:-2}" \
	-nodefaults -no-user-config -display none -nic none \
	-serial stdio -monitor none -no-reboot \
	-kernel "$kernel" -initrd "$cache/initramfs.cpio.gz" -append "$append" \
	"${fs[@]}" </dev/null | sed -u 's/\r$//'
q=${PIPESTATUS[0]}
if [ "$q" = 124 ] || [ "$q" = 137 ]; then
	echo "vm: timed out after ${limit}s" >&2
	exit 124
fi
[ -f "$ctl/rc" ] || { echo "vm: the VM ended without an exit status (qemu exit $q)" >&2; exit 125; }
exit "$(cat "$ctl/rc")"
