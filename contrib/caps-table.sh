#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# The capabilities each portable provider offers (fi_info -v: the caps of
# its entries, per endpoint type), weft's beside another libfabric.so.1's,
# as a Markdown table: "both", "weft", "LABEL only" (in bold), or empty.
#
#   contrib/caps-table.sh [REF_LIBDIR [LABEL]]
#       REF_LIBDIR  default: the system's library; LABEL default "1.17"
#
# Run from a built tree; the same fi_info program (the system's, else
# weft's) lists both libraries through LD_LIBRARY_PATH.
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
weft=$top/.libs
ref=${1:-}
label=${2:-1.17}
if [ -z "$ref" ]; then
	for d in /usr/lib/$(gcc -print-multiarch 2>/dev/null) /usr/lib64 /usr/lib; do
		[ -e "$d/libfabric.so.1" ] && { ref=$d; break; }
	done
fi
[ -e "$weft/libfabric.so.1" ] || { echo "build weft first" >&2; exit 2; }
[ -n "$ref" ] && [ -e "$ref/libfabric.so.1" ] ||
	{ echo "no reference libfabric.so.1" >&2; exit 2; }
info=/usr/bin/fi_info
[ -x "$info" ] || info=$top/util/fi_info
entries="shm:FI_EP_RDM tcp:FI_EP_RDM tcp:FI_EP_MSG sockets:FI_EP_RDM
sockets:FI_EP_MSG sockets:FI_EP_DGRAM udp:FI_EP_DGRAM udp:FI_EP_RDM"
caps="FI_MSG FI_TAGGED FI_RMA FI_ATOMIC FI_COLLECTIVE FI_MULTICAST FI_TRIGGER
FI_FENCE FI_MULTI_RECV FI_DIRECTED_RECV FI_SOURCE FI_SOURCE_ERR FI_RMA_EVENT
FI_NAMED_RX_CTX FI_SHARED_AV FI_RMA_PMEM FI_LOCAL_COMM FI_REMOTE_COMM"

# caps_of LIBDIR PROV TYPE: the caps of every entry, one a line
caps_of() {
	LD_LIBRARY_PATH=$1 "$info" -p "$2" -t "$3" -v 2>/dev/null |
		sed -n 's/^ *caps: *\[\(.*\)\]$/\1/p' | tr ',' '\n' |
		tr -d ' ' | sort -u
}
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
line="| capability |"
sep="|---|"
for e in $entries; do
	caps_of "$weft" "${e%%:*}" "${e#*:}" >"$tmp/weft.$e"
	caps_of "$ref" "${e%%:*}" "${e#*:}" >"$tmp/ref.$e"
	line="$line ${e%%:*} ${e#*:FI_EP_} |"
	sep="$sep---|"
done
echo "$line"
echo "$sep"
for c in $caps; do
	line="| \`$c\` |"
	for e in $entries; do
		w=no r=no
		grep -qx "$c" "$tmp/weft.$e" && w=yes
		grep -qx "$c" "$tmp/ref.$e" && r=yes
		case $w$r in
		yesyes) cell=both ;;
		yesno) cell=weft ;;
		noyes) cell="**$label only**" ;;
		*) cell= ;;
		esac
		line="$line $cell |"
	done
	echo "$line"
done
