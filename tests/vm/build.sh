#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# Build the test VM of tests/vm: Debian's own kernel (which has rdma_rxe),
# siw.ko built out of tree from linux-source (Debian leaves CONFIG_RDMA_SIW
# off) and a busybox initramfs whose /init is tests/vm/init.  Everything
# comes from Debian packages (apt-get download, dpkg -x) into a cache
# directory; a second run reuses what is there and needs no network.
#
#   build.sh [CACHE]      CACHE defaults to $WEFT_VM_CACHE, else tests/vm/cache
#                         under the current directory (the build tree)
#
# Env: KABI and KPKGVER pin the kernel (e.g. KABI=6.1.0-56 KPKGVER=6.1.192-2);
# by default the candidate of linux-image-amd64.  Needs apt-get, dpkg-deb,
# gcc-12, make, strings, strip, xz, gzip.
# Exit: 0 built or up to date; 3 a package could not be had (no network or
# no such version: callers skip); anything else a failure.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cache=${1:-${WEFT_VM_CACHE:-$PWD/tests/vm/cache}}
mkdir -p "$cache"
cache=$(cd "$cache" && pwd)
cd "$cache"
t0=$(date +%s)
say() { echo "vm-build: $*"; }

# ---- which kernel ----
if [ -z "${KABI:-}" ] && [ -f kernel.ver ]; then
	read -r KABI KPKGVER <kernel.ver
fi
if [ -z "${KABI:-}" ]; then
	cand=$(apt-cache policy linux-image-amd64 2>/dev/null | awk '/Candidate:/ { print $2 }')
	dep=
	[ -n "$cand" ] && [ "$cand" != "(none)" ] &&
		dep=$(apt-cache show "linux-image-amd64=$cand" 2>/dev/null |
			sed -n 's/^Depends: linux-image-\([0-9.-]*\)-amd64 (= \([^)]*\)).*/\1 \2/p' | head -n 1)
	if [ -z "$dep" ]; then
		say "apt knows no linux-image-amd64 (run apt-get update?)"
		exit 3
	fi
	KABI=${dep% *} KPKGVER=${dep#* }
fi
: "${KPKGVER:?KPKGVER must go with KABI}"
KVER=$KABI-amd64
KSER=${KABI%%.0-*}	# 6.1
say "kernel linux-image-$KVER $KPKGVER, cache $cache"

# ---- packages ----
fetch() {	# package version
	if ls "$1"_*.deb >/dev/null 2>&1; then return 0; fi
	say "downloading $1 $2"
	# as root, apt would warn that its sandbox user cannot write here
	apt-get download -q $sandbox "$1=$2" >/dev/null || { say "cannot download $1=$2"; exit 3; }
	say "  $(ls -s --block-size=M "$1"_*.deb)"
}
# The version of a package built from the kernel's source but not tied
# to its ABI (linux-kbuild-6.1, linux-source-6.1) that the archive still
# has: the kernel's own if it is there, else the newest with the same
# upstream version (a Debian revision the security archive moved on to),
# else the newest of the series.  The archive drops superseded revisions
# of these while the kernel image of that revision stays the candidate.
series_ver() {	# package wanted-version
	local v best= same=
	for v in $(apt-cache madison "$1" 2>/dev/null | awk -F'|' '{ gsub(/ /, "", $2); print $2 }'); do
		[ "$v" = "$2" ] && { echo "$v"; return 0; }
		if [ "${v%-*}" = "${2%-*}" ]; then
			if [ -z "$same" ] || dpkg --compare-versions "$v" gt "$same"; then same=$v; fi
		fi
		if [ -z "$best" ] || dpkg --compare-versions "$v" gt "$best"; then best=$v; fi
	done
	v=${same:-$best}
	[ -n "$v" ] || { say "apt knows no $1" >&2; exit 3; }
	say "$1 $2 is no longer in the archive: using $v" >&2
	echo "$v"
}
sandbox=
[ "$(id -u)" = 0 ] && sandbox="-o APT::Sandbox::User=root"
bbver=$(apt-cache policy busybox-static 2>/dev/null | awk '/Candidate:/ { print $2 }')
fetch linux-image-$KVER "$KPKGVER"
fetch linux-headers-$KVER "$KPKGVER"
fetch linux-headers-$KABI-common "$KPKGVER"
for p in linux-kbuild-$KSER linux-source-$KSER; do
	ls "${p}"_*.deb >/dev/null 2>&1 && continue
	v=$(series_ver "$p" "$KPKGVER")	# exits 3 with the script if none
	fetch "$p" "$v"
done
if ! ls busybox-static_*.deb >/dev/null 2>&1; then
	[ -n "$bbver" ] && [ "$bbver" != "(none)" ] || { say "apt knows no busybox-static"; exit 3; }
	fetch busybox-static "$bbver"
fi
echo "$KABI $KPKGVER" >kernel.ver
t1=$(date +%s)
say "packages ready in $((t1 - t0)) s"

[ -d kernel ] || { dpkg-deb -x linux-image-${KVER}_*.deb kernel.tmp && mv kernel.tmp kernel; }
if [ ! -x busybox ]; then
	rm -rf bb.tmp
	dpkg-deb -x busybox-static_*.deb bb.tmp
	mv bb.tmp/bin/busybox busybox
	rm -rf bb.tmp
fi
moddir=kernel/lib/modules/$KVER

# ---- siw.ko, out of tree ----
if [ ! -f siw.ko ]; then
	say "building siw.ko from linux-source-$KSER"
	rm -rf kb siw-src
	mkdir kb siw-src
	for p in linux-headers-$KVER linux-headers-$KABI-common linux-kbuild-$KSER; do
		dpkg-deb -x ${p}_*.deb kb
	done
	hdr=$PWD/kb/usr/src/linux-headers-$KVER
	# the arch headers' Makefile names the common headers by their
	# installed path: point it into kb/
	sed -i "s|/usr/src/linux-headers-$KABI-common|$PWD/kb/usr/src/linux-headers-$KABI-common|" "$hdr/Makefile"
	dpkg-deb --fsys-tarfile linux-source-${KSER}_*.deb |
		tar -xO ./usr/src/linux-source-$KSER.tar.xz |
		tar -xJ -C siw-src --strip-components=5 linux-source-$KSER/drivers/infiniband/sw/siw
	make -s -C "$hdr" M="$PWD/siw-src" CONFIG_RDMA_SIW=m CC=gcc-12 modules
	strip --strip-debug -o siw.ko.tmp siw-src/siw.ko
	mv siw.ko.tmp siw.ko
	rm -rf kb siw-src
fi

# ---- kernel image: uncompressed vmlinux boots through PVH, which skips the
# decompression (seconds under TCG emulation); vmlinuz is the fallback ----
cp "kernel/boot/vmlinuz-$KVER" vmlinuz
if [ ! -f vmlinux ]; then
	off=$(LC_ALL=C grep -aboP '\xfd7zXZ\x00' vmlinuz | head -n 1 | cut -d: -f1 || true)
	if [ -n "$off" ]; then
		# xz complains about the bytes after the stream: the stream is whole
		tail -c +$((off + 1)) vmlinuz | xz -dc >vmlinux.tmp 2>/dev/null || true
		if [ "$(head -c 4 vmlinux.tmp | od -An -c | tr -d ' ')" = '177ELF' ]; then
			mv vmlinux.tmp vmlinux
		else
			rm -f vmlinux.tmp
			say "could not unpack vmlinuz: booting it compressed"
		fi
	fi
fi

# ---- modules, dependencies first (from each module's depends= tag) ----
declare -A path seen
while read -r f; do
	n=${f##*/}; n=${n%%.ko*}; n=${n//-/_}
	path[$n]=$f
done < <(find "$moddir" -name '*.ko*')
path[siw]=siw.ko
order=()
visit() {
	local m=${1//-/_} d deps
	[ -n "${seen[$m]:-}" ] && return 0
	seen[$m]=1
	[ -n "${path[$m]:-}" ] || return 0	# built into the kernel
	deps=$(strings -a "${path[$m]}" | sed -n 's/^depends=//p' | head -n 1)
	for d in ${deps//,/ }; do visit "$d"; done
	order+=("${path[$m]}")
}
for m in crc32_generic crc32c_generic crc32c_intel virtio_pci 9pnet_virtio 9p \
	overlay dummy ib_core ib_uverbs rdma_rxe siw ib_cm iw_cm rdma_cm rdma_ucm; do
	visit "$m"
done

# ---- initramfs ----
rm -rf initramfs
mkdir -p initramfs/bin initramfs/mods initramfs/proc initramfs/sys initramfs/dev
cp busybox initramfs/bin/busybox
cp "$here/init" initramfs/init
chmod 755 initramfs/init
: >initramfs/modules.list
for f in "${order[@]}"; do
	cp "$f" initramfs/mods/
	echo "${f##*/}" >>initramfs/modules.list
done
(cd initramfs && find . | ../busybox cpio -o -H newc 2>/dev/null) |
	gzip -1 >initramfs.cpio.gz.tmp
mv initramfs.cpio.gz.tmp initramfs.cpio.gz
rm -rf initramfs
say "ready in $(($(date +%s) - t0)) s: $(ls vmlinux 2>/dev/null || echo vmlinuz), initramfs.cpio.gz (${#order[@]} modules)"
