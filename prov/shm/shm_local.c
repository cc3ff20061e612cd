/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The shm transport inside another provider's RDM endpoint: region names
 * from socket addresses and back (weft/shm_local.h).
 */
#include "weft/core.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "weft/shm_local.h"

#include "shm.h"

/* This process's network namespace, as part of region names; 0: unknown
 * (then nothing is local). */
static unsigned long netns_id(void)
{
	struct stat st;

	if (stat("/proc/self/ns/net", &st))
		return 0;
	return (unsigned long)st.st_ino;
}

int shm_local_name(const void *addr, size_t addrlen, char *name, size_t size)
{
	const struct sockaddr *sa = addr;
	unsigned long ns = netns_id();
	char hex[33];
	const uint8_t *ip;
	size_t iplen, i;
	unsigned int port;
	int n;

	if (!addr || !ns || addrlen < sizeof(struct sockaddr_in))
		return -FI_EINVAL;
	if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *sin = addr;

		ip = (const uint8_t *)&sin->sin_addr;
		iplen = 4;
		port = ntohs(sin->sin_port);
	} else if (sa->sa_family == AF_INET6 &&
		   addrlen >= sizeof(struct sockaddr_in6)) {
		const struct sockaddr_in6 *sin6 = addr;

		ip = sin6->sin6_addr.s6_addr;
		iplen = 16;
		port = ntohs(sin6->sin6_port);
	} else {
		return -FI_EINVAL;
	}
	for (i = 0; i < iplen; i++)
		snprintf(hex + 2 * i, 3, "%02x", ip[i]);
	n = snprintf(name, size, "%lx-%c-%s-%x", ns, iplen == 4 ? '4' : '6',
		     hex, port);
	return n > 0 && (size_t)n < size ? 0 : -FI_EINVAL;
}

static int local_name_of(const struct shm_xp *x, const void *addr,
			 char name[SHM_NAME_MAX])
{
	if (shm_local_name(addr, x->addr_len, name, SHM_NAME_MAX))
		name[0] = '\0'; /* no region: never reached through us */
	return 0;
}

static int hexbytes(const char *s, size_t n, uint8_t *out)
{
	size_t i;
	unsigned int v;

	if (strspn(s, "0123456789abcdef") < 2 * n)
		return -1;
	for (i = 0; i < n; i++) {
		if (sscanf(s + 2 * i, "%2x", &v) != 1)
			return -1;
		out[i] = (uint8_t)v;
	}
	return 0;
}

/* A region name back to the address it was made from; a name of another
 * namespace, or no such name, is -FI_EINVAL. */
static int local_addr_of(const struct shm_xp *x, const char *name, void *addr)
{
	unsigned long ns;
	unsigned int port;
	char fam;
	int off = 0;
	const char *p;

	if (sscanf(name, "%lx-%c-%n", &ns, &fam, &off) != 2 || !off ||
	    ns != netns_id())
		return -FI_EINVAL;
	p = name + off;
	memset(addr, 0, x->addr_len);
	if (fam == '4') {
		struct sockaddr_in sin = { .sin_family = AF_INET };

		if (hexbytes(p, 4, (uint8_t *)&sin.sin_addr) || p[8] != '-' ||
		    sscanf(p + 9, "%x", &port) != 1 || port > 0xffff ||
		    x->addr_len < sizeof(sin))
			return -FI_EINVAL;
		sin.sin_port = htons((uint16_t)port);
		memcpy(addr, &sin, sizeof(sin));
		return (int)x->addr_len;
	}
	if (fam == '6') {
		struct sockaddr_in6 sin6 = { .sin6_family = AF_INET6 };

		if (hexbytes(p, 16, sin6.sin6_addr.s6_addr) || p[32] != '-' ||
		    sscanf(p + 33, "%x", &port) != 1 || port > 0xffff ||
		    x->addr_len < sizeof(sin6))
			return -FI_EINVAL;
		sin6.sin6_port = htons((uint16_t)port);
		memcpy(addr, &sin6, sizeof(sin6));
		return (int)x->addr_len;
	}
	return -FI_EINVAL;
}

static const struct shm_naming local_naming = {
	.name_of = local_name_of,
	.addr_of = local_addr_of,
};

uint64_t shm_local_orders(uint64_t asked)
{
	return SHM_ORDER_ALWAYS | (asked & SHM_ORDER);
}

static struct shm_xp *xp_of(struct util_rdm_xport *xp)
{
	return container_of(xp, struct shm_xp, base);
}

static struct util_rdm_xport *local_open(const struct fi_info *info)
{
	struct shm_xp *x = calloc(1, sizeof(*x));

	if (!x)
		return NULL;
	/* addr_len is set when the owner's address is known (enable); until
	 * then nothing is reached. */
	if (shm_xp_init(x, &local_naming, 0)) {
		free(x);
		return NULL;
	}
	/* RMA keeps its place behind messages only when the endpoint's info
	 * asks for it (shm_local_orders). */
	if (info->tx_attr && info->rx_attr)
		x->rma_order = (info->tx_attr->msg_order |
				info->rx_attr->msg_order) &
			       SHM_ORDER_RMA;
	return &x->base;
}

static int local_start(struct shm_xp *x, const void *addr, size_t addrlen,
		       uint32_t pair)
{
	char base[SHM_NAME_MAX];
	int ret;

	if (addrlen > SHM_ADDRLEN)
		return -FI_EINVAL;
	ret = shm_local_name(addr, addrlen, base, sizeof(base));
	if (!ret)
		ret = shm_name_ctx(x->name, base, pair);
	if (ret)
		return ret;
	x->addr_len = addrlen;
	ret = shm_xp_start(x);
	if (ret)
		x->addr_len = 0;
	return ret;
}

static bool local_enable(struct util_rdm_xport *xp,
			 const struct fi_provider *prov, const char *via,
			 const void *addr, size_t addrlen, uint32_t pair)
{
	int ret = local_start(xp_of(xp), addr, addrlen, pair);

	if (ret)
		FI_INFO(prov, FI_LOG_EP_CTRL,
			"peers on this host go through %s: no shared memory "
			"region (%s)\n",
			via, fi_strerror(-ret));
	return !ret;
}

static void local_closing(struct util_rdm_xport *xp)
{
	shm_xp_closing(xp_of(xp));
}

static void local_close(struct util_rdm_xport *xp)
{
	struct shm_xp *x = xp_of(xp);

	shm_xp_fini(x);
	free(x);
}

const struct util_rdm_local_ops shm_local_ops = {
	.open = local_open,
	.enable = local_enable,
	.closing = local_closing,
	.close = local_close,
};
