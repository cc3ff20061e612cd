/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * IP interfaces, for providers whose endpoints are addressed by IP
 * (tcp, verbs over rdma_cm): which addresses are up, their subnet names
 * (the fabric names of 1.17: "10.0.0.0/24"), and filling a candidate
 * fi_info's src_addr / dest_addr from fi_getinfo's node, service and
 * FI_SOURCE for one interface.  Control path only: may block on name
 * resolution.
 */
#ifndef WEFT_UTIL_IFADDR_H
#define WEFT_UTIL_IFADDR_H

#include <net/if.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include "weft/ofi.h"

#include "weft/core.h"

/* One address of an interface that is up. */
struct util_iface {
	char name[IF_NAMESIZE];
	struct sockaddr_storage addr;
	struct sockaddr_storage mask;
	char subnet[64]; /* "10.0.0.0/24", "fd00::/64" */
	bool loopback;
};

/* sizeof the sockaddr_in / sockaddr_in6 at addr. */
size_t util_sockaddr_len(const void *addr);

/*
 * The addresses of interfaces that are up, in the order candidates are
 * offered: others before loopback, IPv4 before IPv6, IPv6 link-local ones
 * left out.  only: an interface name to keep alone, or NULL / "" for all.
 * Returns how many were written to out (at most max); 0 also when
 * getifaddrs fails.
 */
size_t util_iface_list(const char *only, struct util_iface *out, size_t max);

/*
 * The class util_iface_list orders by, lowest first: 0 for IPv4, 1 for
 * IPv6, plus 2 for loopback.  Addresses of one class rank equal.
 */
int util_iface_rank(const struct util_iface *ifc);

/* Whether sa (port ignored) is on the interface's subnet. */
bool util_iface_has(const struct util_iface *ifc, const struct sockaddr *sa);

/*
 * Fill fi->src_addr / fi->dest_addr for a candidate served by ifc, from
 * fi_getinfo's node, service and flags (FI_SOURCE: node/service name the
 * local address, which must be on ifc; else the destination).  A source
 * address already in fi (the hints') must be on ifc too, unless it is a
 * wildcard.  Without one the interface's own, with port 0, is used.  Returns 0,
 * -FI_ENODATA (this interface cannot serve the request, or the name does
 * not resolve) or -FI_ENOMEM.
 */
int util_iface_fill_addrs(struct fi_info *fi, const struct util_iface *ifc,
			  const char *node, const char *service,
			  uint64_t flags);

/*
 * fi_getinfo of a provider addressed by IP: uprov->info is a list of
 * templates (no names, no addresses); each is offered once per address of
 * each interface that is up (only: one interface name, or NULL / "" for
 * all), best interfaces first (util_iface_list's order, NICs near the
 * calling thread first among equals), with the interface as the domain
 * name, its subnet as the fabric name, its family as addr_format, and
 * src_addr / dest_addr filled from node, service and flags.  Returns 0
 * with a list the caller frees, -FI_ENODATA having explained why, or
 * -FI_ENOMEM.  Control path: may block on name resolution.
 */
struct util_prov;
int util_iface_getinfo(const struct util_prov *uprov, const char *only,
		       uint32_t version, const char *node,
		       const char *service, uint64_t flags,
		       const struct fi_info *hints, struct fi_info **info);

#endif /* WEFT_UTIL_IFADDR_H */
