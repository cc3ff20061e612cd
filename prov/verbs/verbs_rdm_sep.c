/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * verbs' scalable endpoints (weft/util_rdm.h): context pair i is a verbs
 * RDM endpoint of its own, with its own CQ, SRQ, QPs, event channel and
 * lock.  Pair 0 listens at the scalable endpoint's address; a peer's
 * connect request names the context it wants (struct vrdm_cm_priv
 * dst_ctx), and pair 0 hands the request to that pair, which takes its
 * id onto its own event channel and accepts it (verbs_rdm_conn.c,
 * conn_handoff, inbox_adopt).  Peers on this host meet through shm
 * regions named after the address and the pair.
 */
#include "verbs_rdm.h"

#include <stdlib.h>
#include <string.h>

static struct verbs_sep *vsep_of(struct util_rdm_sep *sep)
{
	return container_of(sep, struct verbs_sep, base);
}

static int verbs_sep_pair_open(struct util_rdm_sep *sep, uint32_t index,
			       struct util_rdm_ep **out)
{
	struct verbs_rdm_ep *ep;
	int ret;

	ret = verbs_rdm_pair_open(vsep_of(sep), index, &ep);
	if (ret)
		return ret;
	*out = &ep->rdm;
	return 0;
}

static void verbs_sep_release(struct util_rdm_sep *sep)
{
	free(vsep_of(sep));
}

static const struct util_rdm_sep_ops verbs_sep_ops = {
	.pair_open = verbs_sep_pair_open,
	.release = verbs_sep_release,
	.max_ctx = VERBS_RDM_MAX_CTX,
	.pair0_shared = true, /* its listener takes every pair's peers */
};

int verbs_rdm_sep_open(struct verbs_domain *domain, struct fi_info *info,
		       struct fid_ep **sep_fid, void *context)
{
	struct verbs_sep *s;
	int ret;

	s = calloc(1, sizeof(*s));
	if (!s)
		return -FI_ENOMEM;
	ret = util_rdm_sep_init(&s->base, &domain->base.util, info,
				&verbs_sep_ops, sep_fid, context);
	if (ret)
		free(s);
	return ret;
}
