/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * tcp's scalable endpoints (weft/util_rdm.h): context pair i is an RDM
 * endpoint of its own.  Pair 0 listens at the scalable endpoint's address;
 * a peer's pair connects there and says in HELLO which pair it wants and
 * which it is (docs/tcp-protocol.md), and pair 0 hands the connection over
 * (tcp_ep.c, conn_handoff).  Peers on this host meet through shm regions
 * named after the address and the pair.
 */
#include "tcp.h"

#include <stdlib.h>
#include <string.h>

static struct tcp_sep *tsep_of(struct util_rdm_sep *sep)
{
	return container_of(sep, struct tcp_sep, base);
}

static int tcp_sep_pair_open(struct util_rdm_sep *sep, uint32_t index,
			     struct util_rdm_ep **out)
{
	struct tcp_ep *ep;
	int ret;

	ret = tcp_pair_open(tsep_of(sep), index, &ep);
	if (ret)
		return ret;
	*out = &ep->rdm;
	return 0;
}

static void tcp_sep_release(struct util_rdm_sep *sep)
{
	free(tsep_of(sep));
}

static const struct util_rdm_sep_ops tcp_sep_ops = {
	.pair_open = tcp_sep_pair_open,
	.release = tcp_sep_release,
	.max_ctx = TCP_MAX_CTX,
	.pair0_shared = true, /* its listener takes every pair's peers */
};

int tcp_sep_open(struct fid_domain *domain_fid, struct fi_info *info,
		 struct fid_ep **sep_fid, void *context)
{
	struct util_domain *domain =
		container_of(domain_fid, struct util_domain, domain_fid);
	struct tcp_sep *s;
	int ret;

	s = calloc(1, sizeof(*s));
	if (!s)
		return -FI_ENOMEM;
	ret = util_rdm_sep_init(&s->base, domain, info, &tcp_sep_ops, sep_fid,
				context);
	if (ret)
		free(s);
	return ret;
}
