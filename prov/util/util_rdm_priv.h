/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * What the engine's own files share (util_rdm.c, util_rdm_sep.c); not for
 * providers, which go through weft/util_rdm.h.
 */
#ifndef WEFT_UTIL_RDM_PRIV_H
#define WEFT_UTIL_RDM_PRIV_H

#include "weft/util_rdm.h"

/* The endpoint's lock: taken by every entry point, and by progress. */
static inline void ep_lock(struct util_rdm_ep *ep)
{
	weft_lock(&ep->lock);
}

static inline void ep_unlock(struct util_rdm_ep *ep)
{
	weft_unlock(&ep->lock);
}

/* fi_ep_bind of a CQ, counter, AV or EQ, with the lock held, whatever
 * the endpoint's state (callers check it). */
int util_rdm_bind_locked(struct util_rdm_ep *ep, struct fid *bfid,
			 uint64_t flags);

/* Undo every CQ and counter binding; the endpoint goes on (its
 * completions go nowhere until new ones).  With the lock held, or from
 * util_rdm_ep_fini. */
void util_rdm_unbind_all(struct util_rdm_ep *ep);

/* The engine's entry points (util_rdm.c) as contexts take them: each
 * side's, the other side's refused. */
extern struct fi_ops_ep util_rdm_ep_ops;
extern struct fi_ops_msg util_rdm_tx_msg_ops, util_rdm_rx_msg_ops;
extern struct fi_ops_tagged util_rdm_tx_tagged_ops, util_rdm_rx_tagged_ops;
extern struct fi_ops_rma util_rdm_rma_ops;
extern struct fi_ops_atomic util_rdm_atomic_ops;

#endif /* WEFT_UTIL_RDM_PRIV_H */
