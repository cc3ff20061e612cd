/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * IP interfaces for the providers addressed by IP (weft/util_ifaddr.h).
 */
#include "weft/util_ifaddr.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "weft/util_getinfo.h"
#include "weft/util_nic.h"

size_t util_sockaddr_len(const void *addr)
{
	return ((const struct sockaddr *)addr)->sa_family == AF_INET6 ?
		       sizeof(struct sockaddr_in6) :
		       sizeof(struct sockaddr_in);
}

static void subnet_str(const struct ifaddrs *ifa, char *buf, size_t len)
{
	char a[INET6_ADDRSTRLEN] = "";
	int bits = 0, i;

	if (ifa->ifa_addr->sa_family == AF_INET) {
		struct in_addr ad = ((struct sockaddr_in *)ifa->ifa_addr)->sin_addr;
		uint32_t m = ntohl(((struct sockaddr_in *)ifa->ifa_netmask)
					   ->sin_addr.s_addr);

		ad.s_addr &= htonl(m);
		bits = __builtin_popcount(m);
		inet_ntop(AF_INET, &ad, a, sizeof(a));
	} else {
		struct in6_addr ad =
			((struct sockaddr_in6 *)ifa->ifa_addr)->sin6_addr;
		const uint8_t *m = ((struct sockaddr_in6 *)ifa->ifa_netmask)
					   ->sin6_addr.s6_addr;

		for (i = 0; i < 16; i++) {
			ad.s6_addr[i] &= m[i];
			bits += __builtin_popcount(m[i]);
		}
		inet_ntop(AF_INET6, &ad, a, sizeof(a));
	}
	snprintf(buf, len, "%s/%d", a, bits);
}

size_t util_iface_list(const char *only, struct util_iface *out, size_t max)
{
	struct ifaddrs *ifs, *ifa;
	size_t n = 0;
	int pass;

	if (getifaddrs(&ifs))
		return 0;
	for (pass = 0; pass < 4; pass++) {
		for (ifa = ifs; ifa && n < max; ifa = ifa->ifa_next) {
			int fam = pass & 1 ? AF_INET6 : AF_INET;
			bool lo;

			if (!ifa->ifa_addr || !ifa->ifa_netmask ||
			    ifa->ifa_addr->sa_family != fam ||
			    !(ifa->ifa_flags & IFF_UP))
				continue;
			lo = ifa->ifa_flags & IFF_LOOPBACK;
			if (lo != (pass >= 2))
				continue;
			if (only && only[0] && strcmp(only, ifa->ifa_name))
				continue;
			if (fam == AF_INET6 &&
			    IN6_IS_ADDR_LINKLOCAL(&((struct sockaddr_in6 *)
							    ifa->ifa_addr)
							   ->sin6_addr))
				continue;
			memset(&out[n], 0, sizeof(out[n]));
			snprintf(out[n].name, sizeof(out[n].name), "%s",
				 ifa->ifa_name);
			memcpy(&out[n].addr, ifa->ifa_addr,
			       fam == AF_INET ? sizeof(struct sockaddr_in) :
						sizeof(struct sockaddr_in6));
			memcpy(&out[n].mask, ifa->ifa_netmask,
			       fam == AF_INET ? sizeof(struct sockaddr_in) :
						sizeof(struct sockaddr_in6));
			subnet_str(ifa, out[n].subnet, sizeof(out[n].subnet));
			out[n].loopback = lo;
			n++;
		}
	}
	freeifaddrs(ifs);
	return n;
}

int util_iface_rank(const struct util_iface *ifc)
{
	return (ifc->loopback ? 2 : 0) + (ifc->addr.ss_family == AF_INET6);
}

/* A source address names the interface it belongs to (all of 127.0.0.0/8
 * is lo). */
bool util_iface_has(const struct util_iface *ifc, const struct sockaddr *sa)
{
	const struct sockaddr *ia = (const struct sockaddr *)&ifc->addr;
	const uint8_t *a, *b, *m;
	size_t i, n;

	if (sa->sa_family != ia->sa_family)
		return false;
	if (sa->sa_family == AF_INET) {
		a = (const uint8_t *)&((const struct sockaddr_in *)sa)->sin_addr;
		b = (const uint8_t *)&((const struct sockaddr_in *)ia)->sin_addr;
		m = (const uint8_t *)&((const struct sockaddr_in *)&ifc->mask)
			    ->sin_addr;
		n = 4;
	} else {
		a = ((const struct sockaddr_in6 *)sa)->sin6_addr.s6_addr;
		b = ((const struct sockaddr_in6 *)ia)->sin6_addr.s6_addr;
		m = ((const struct sockaddr_in6 *)&ifc->mask)->sin6_addr.s6_addr;
		n = 16;
	}
	for (i = 0; i < n; i++)
		if ((a[i] & m[i]) != (b[i] & m[i]))
			return false;
	return true;
}

/* INADDR_ANY or in6addr_any. */
static bool addr_is_any(const void *addr)
{
	const struct sockaddr *sa = addr;

	if (sa->sa_family == AF_INET)
		return ((const struct sockaddr_in *)sa)->sin_addr.s_addr ==
		       htonl(INADDR_ANY);
	return sa->sa_family == AF_INET6 &&
	       IN6_IS_ADDR_UNSPECIFIED(
		       &((const struct sockaddr_in6 *)sa)->sin6_addr);
}

static int set_addr(void **slot, size_t *len, const void *sa)
{
	size_t n = util_sockaddr_len(sa);
	void *a = malloc(n);

	if (!a)
		return -FI_ENOMEM;
	memcpy(a, sa, n);
	free(*slot);
	*slot = a;
	*len = n;
	return 0;
}

/* node/service as one address of the given family (AF_UNSPEC: any). */
static int resolve_one(const char *node, const char *service, int family,
		       bool passive, struct sockaddr_storage *out)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM,
				  .ai_family = family };
	struct addrinfo *ai;
	int ret;

	if (passive)
		hints.ai_flags = AI_PASSIVE;
	ret = getaddrinfo(node, service, &hints, &ai);
	if (ret)
		return -FI_ENODATA;
	memset(out, 0, sizeof(*out));
	memcpy(out, ai->ai_addr, ai->ai_addrlen);
	freeaddrinfo(ai);
	return 0;
}

int util_iface_fill_addrs(struct fi_info *fi, const struct util_iface *ifc,
			  const char *node, const char *service,
			  uint64_t flags)
{
	int fam = ifc->addr.ss_family;
	struct sockaddr_storage sa;
	int ret;

	if (flags & FI_SOURCE) {
		if (node || service) {
			ret = resolve_one(node, service ? service : "0", fam,
					  !node, &sa);
			if (ret)
				return ret;
			/* A node names the interface; no node: this one. */
			if (node && !util_iface_has(ifc, (struct sockaddr *)&sa))
				return -FI_ENODATA;
			/* No node: listen on every address (fi_getname then
			 * reports the interface's). */
			return set_addr(&fi->src_addr, &fi->src_addrlen, &sa);
		}
	} else if (node || service) {
		ret = resolve_one(node, service ? service : "0", fam, false, &sa);
		if (ret)
			return ret;
		ret = set_addr(&fi->dest_addr, &fi->dest_addrlen, &sa);
		if (ret)
			return ret;
	}
	if (fi->src_addr) {
		/* The hints' source address names the interface, as a node
		 * with FI_SOURCE does; a wildcard one any interface. */
		if (((struct sockaddr *)fi->src_addr)->sa_family != fam ||
		    (!addr_is_any(fi->src_addr) &&
		     !util_iface_has(ifc, fi->src_addr)))
			return -FI_ENODATA;
		return 0;
	}
	if (fi->dest_addr &&
	    ((struct sockaddr *)fi->dest_addr)->sa_family != fam)
		return -FI_ENODATA;
	memcpy(&sa, &ifc->addr, sizeof(sa));
	((struct sockaddr_in *)&sa)->sin_port = 0;
	return set_addr(&fi->src_addr, &fi->src_addrlen, &sa);
}

/* ---- fi_getinfo per interface ------------------------------------------ */

#define IFACE_MAX 64
#define IFACE_TEMPLATES_MAX 4

/*
 * Among addresses that rank equal (util_iface_list: others before
 * loopback, IPv4 before IPv6), those of NICs near the calling thread
 * first; interfaces without a PCI device keep their places.
 */
static void iface_order_near(struct util_iface *ifs, size_t n)
{
	int rank[IFACE_MAX], near[IFACE_MAX];
	size_t i;

	for (i = 0; i < n; i++) {
		rank[i] = util_iface_rank(&ifs[i]);
		near[i] = util_nic_near(NULL, ifs[i].name);
	}
	util_nic_order(ifs, n, sizeof(*ifs), rank, near);
}

/* The interface a matched candidate was made for, by its names. */
static const struct util_iface *iface_of(const struct fi_info *fi,
					 const struct util_iface *ifs,
					 size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (fi->domain_attr && fi->domain_attr->name &&
		    !strcmp(fi->domain_attr->name, ifs[i].name) &&
		    fi->fabric_attr && fi->fabric_attr->name &&
		    !strcmp(fi->fabric_attr->name, ifs[i].subnet))
			return &ifs[i];
	return NULL;
}

int util_iface_getinfo(const struct util_prov *uprov, const char *only,
		       uint32_t version, const char *node,
		       const char *service, uint64_t flags,
		       const struct fi_info *hints, struct fi_info **info)
{
	struct fi_info *all = NULL, **tail = &all, *got, *fi, *next, *cand;
	const struct fi_info *tmpl[IFACE_TEMPLATES_MAX], *t;
	struct fi_fabric_attr *fab;
	struct fi_domain_attr *dom;
	struct util_iface *ifs;
	struct util_prov up = *uprov;
	size_t n, k = 0, i, j;
	int ret;

	for (t = uprov->info; t && k < IFACE_TEMPLATES_MAX; t = t->next)
		tmpl[k++] = t;
	ifs = calloc(IFACE_MAX, sizeof(*ifs));
	fab = calloc(IFACE_MAX, sizeof(*fab));
	dom = calloc(IFACE_MAX * k, sizeof(*dom));
	cand = calloc(IFACE_MAX * k, sizeof(*cand));
	if (!ifs || !fab || !dom || !cand) {
		ret = -FI_ENOMEM;
		goto out;
	}
	n = util_iface_list(only, ifs, IFACE_MAX);
	if (!n) {
		weft_explain(uprov->prov, only && only[0] ?
				     "no interface called %s is up" :
				     "no network interface is up",
			     only);
		ret = -FI_ENODATA;
		goto out;
	}
	iface_order_near(ifs, n);
	/* The candidates: each template on each interface address. */
	for (i = 0; i < n; i++) {
		fab[i] = *tmpl[0]->fabric_attr;
		fab[i].name = ifs[i].subnet;
		for (j = 0; j < k; j++) {
			struct fi_info *c = &cand[i * k + j];

			/* Each template's domain attributes (udp's raw
			 * datagrams have no remote CQ data, its RDM has). */
			dom[i * k + j] = *tmpl[j]->domain_attr;
			dom[i * k + j].name = ifs[i].name;
			*c = *tmpl[j];
			c->fabric_attr = &fab[i];
			c->domain_attr = &dom[i * k + j];
			c->addr_format = ifs[i].addr.ss_family == AF_INET6 ?
						 FI_SOCKADDR_IN6 :
						 FI_SOCKADDR_IN;
			c->next = i * k + j + 1 < n * k ? c + 1 : NULL;
		}
	}
	up.info = cand;
	ret = util_getinfo(&up, version, NULL, NULL, flags & ~FI_SOURCE, hints,
			   &got);
	if (ret)
		goto out;
	/* Addresses per interface: drop the candidates that cannot serve. */
	for (fi = got; fi; fi = next) {
		const struct util_iface *ifc = iface_of(fi, ifs, n);

		next = fi->next;
		fi->next = NULL;
		ret = ifc ? util_iface_fill_addrs(fi, ifc, node, service,
						    flags) :
			    -FI_ENODATA;
		if (ret) {
			weft_info_free_list(fi);
			if (ret != -FI_ENODATA) {
				weft_info_free_list(all);
				weft_info_free_list(next);
				goto out;
			}
			continue;
		}
		*tail = fi;
		tail = &fi->next;
	}
	ret = 0;
	if (!all) {
		weft_explain(uprov->prov, "no interface serves \"%s%s%s\"",
			     node ? node : "", service ? ":" : "",
			     service ? service : "");
		ret = -FI_ENODATA;
	}
	*info = all;
out:
	free(cand);
	free(dom);
	free(fab);
	free(ifs);
	return ret;
}
