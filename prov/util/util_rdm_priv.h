/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * What the engine's own files share (util_rdm_tx.c, util_rdm_rma.c,
 * util_rdm_rx.c, util_rdm_ep.c, util_rdm_sep.c); not for providers, which
 * go through weft/util_rdm.h.  The functions below are the library's own:
 * the version script (libfabric.map) exports none of them.
 */
#ifndef WEFT_UTIL_RDM_PRIV_H
#define WEFT_UTIL_RDM_PRIV_H

#include "weft/util_rdm.h"
#include "weft/util_trigger.h"

/* The endpoint's lock: taken by every entry point, and by progress.
 * (Only a bind of a shared receive context changes it, before enable:
 * that one keeps the lock it took, util_rdm_ep_bind.) */
static inline void ep_lock(struct util_rdm_ep *ep)
{
	util_ep_lock(&ep->base);
}

static inline void ep_unlock(struct util_rdm_ep *ep)
{
	util_ep_unlock(&ep->base);
}

/*
 * Internal op flag of the fi_inject* calls, which never report to the CQ;
 * FI_INJECT alone (fi_sendmsg(FI_INJECT | FI_COMPLETION)) only says the
 * buffer is free on return.  Bit 63 is no OFI op flag.
 */
#define RDM_NO_COMPLETION UTIL_RDM_NO_COMPLETION

/* The counter a deferred work request's transfer counts on, taken at
 * its post (util_deferred_cntr); NULL for any other. */
static inline struct util_cntr *deferred_cntr(uint64_t flags)
{
	return weft_unlikely(flags & UTIL_RDM_DEFERRED) ? util_deferred_cntr :
							  NULL;
}

/* Whether an operation with these flags reports to the CQ. */
static inline bool wants_comp(bool selective, uint64_t flags)
{
	if (flags & RDM_NO_COMPLETION)
		return false;
	return !selective || (flags & FI_COMPLETION);
}

/* util_rdm_tx.c: transmits, for the RMA and atomic entry points
 * (util_rdm_rma.c) and progress (util_rdm_ep.c). */
struct util_rdm_tx *tx_get(struct util_rdm_ep *ep, struct util_peer *peer);
void tx_put(struct util_rdm_ep *ep, struct util_rdm_tx *tx);
void tx_taken(struct util_rdm_ep *ep, struct util_rdm_tx *tx, uint64_t id);
int tx_reserve(struct util_rdm_ep *ep, bool comp);
void tx_unreserve(struct util_rdm_ep *ep, bool comp);
int tx_submit(struct util_rdm_ep *ep, struct util_rdm_tx *tx);
int peers_drain(struct util_rdm_ep *ep);

/* A receive whose payload the transport is still fetching. */
struct rdm_fetch {
	struct util_rdm_rx *rx;
	struct util_match_result res;
	uint64_t tag;
	uint64_t data;
	uint32_t msg_flags;
	fi_addr_t src;
	size_t src_raw_len;
	uint8_t src_raw[UTIL_RDM_SRC_RAW_MAX];
};

/* util_rdm_rx.c: for progress and teardown (util_rdm_ep.c). */
void unexp_free(struct util_rdm_rxq *q, struct util_rdm_unexp *ue,
		bool discard);
void rx_fail_gone(struct util_rdm_ep *ep);

/*
 * Receive state (util_rdm_rx.c).  rxq_init: the queues (caps:
 * FI_DIRECTED_RECV), the receive and fetch pools; rxq_unexp_init the
 * pool of unexpected records (unexp_inline bytes inline) and the bound
 * (0: none).  rxq_fini drops what is left (posted receives silently,
 * unexpected messages through their transports).  rxq_drop_ep: the
 * unexpected messages that came by ep's transports are discarded (ep
 * leaves a shared context), with the lock held.
 */
int rxq_init(struct util_rdm_rxq *q, uint64_t caps);
int rxq_unexp_init(struct util_rdm_rxq *q, size_t unexp_inline,
		   size_t unexp_max);
void rxq_fini(struct util_rdm_rxq *q);
void rxq_drop_ep(struct util_rdm_rxq *q, struct util_rdm_ep *ep);

/* A receive, on an endpoint (ep) or on a shared receive context (ep
 * NULL) into its receive state q. */
ssize_t rdm_recv(struct util_rdm_ep *ep, struct util_rdm_rxq *q,
		 const struct iovec *iov, void **desc, size_t count,
		 fi_addr_t src, uint64_t tag, uint64_t ignore, void *context,
		 uint64_t flags, uint32_t op);
/* Cancel the receive of context posted to q; a completion reports it on
 * ep's CQ (NULL: q's first endpoint's, if any). */
void rxq_cancel(struct util_rdm_rxq *q, struct util_rdm_ep *ep,
		void *context);

/* The msg and tagged entry points (util_rdm_tx.c, util_rdm_rx.c) and
 * cancel, for the ops tables (util_rdm_ep.c). */
ssize_t rdm_msg_send(struct fid_ep *ep_fid, const void *buf, size_t len,
		     void *desc, fi_addr_t dest, void *context);
ssize_t rdm_msg_sendv(struct fid_ep *ep_fid, const struct iovec *iov,
		      void **desc, size_t count, fi_addr_t dest,
		      void *context);
ssize_t rdm_msg_sendmsg(struct fid_ep *ep_fid, const struct fi_msg *msg,
			uint64_t flags);
ssize_t rdm_msg_inject(struct fid_ep *ep_fid, const void *buf, size_t len,
		       fi_addr_t dest);
ssize_t rdm_msg_senddata(struct fid_ep *ep_fid, const void *buf, size_t len,
			 void *desc, uint64_t data, fi_addr_t dest,
			 void *context);
ssize_t rdm_msg_injectdata(struct fid_ep *ep_fid, const void *buf,
			   size_t len, uint64_t data, fi_addr_t dest);
ssize_t rdm_tagged_send(struct fid_ep *ep_fid, const void *buf, size_t len,
			void *desc, fi_addr_t dest, uint64_t tag,
			void *context);
ssize_t rdm_tagged_sendv(struct fid_ep *ep_fid, const struct iovec *iov,
			 void **desc, size_t count, fi_addr_t dest,
			 uint64_t tag, void *context);
ssize_t rdm_tagged_sendmsg(struct fid_ep *ep_fid,
			   const struct fi_msg_tagged *msg, uint64_t flags);
ssize_t rdm_tagged_inject(struct fid_ep *ep_fid, const void *buf,
			  size_t len, fi_addr_t dest, uint64_t tag);
ssize_t rdm_tagged_senddata(struct fid_ep *ep_fid, const void *buf,
			    size_t len, void *desc, uint64_t data,
			    fi_addr_t dest, uint64_t tag, void *context);
ssize_t rdm_tagged_injectdata(struct fid_ep *ep_fid, const void *buf,
			      size_t len, uint64_t data, fi_addr_t dest,
			      uint64_t tag);
ssize_t rdm_msg_recv(struct fid_ep *ep_fid, void *buf, size_t len,
		     void *desc, fi_addr_t src, void *context);
ssize_t rdm_msg_recvv(struct fid_ep *ep_fid, const struct iovec *iov,
		      void **desc, size_t count, fi_addr_t src,
		      void *context);
ssize_t rdm_msg_recvmsg(struct fid_ep *ep_fid, const struct fi_msg *msg,
			uint64_t flags);
ssize_t rdm_tagged_recv(struct fid_ep *ep_fid, void *buf, size_t len,
			void *desc, fi_addr_t src, uint64_t tag,
			uint64_t ignore, void *context);
ssize_t rdm_tagged_recvv(struct fid_ep *ep_fid, const struct iovec *iov,
			 void **desc, size_t count, fi_addr_t src,
			 uint64_t tag, uint64_t ignore, void *context);
ssize_t rdm_tagged_recvmsg(struct fid_ep *ep_fid,
			   const struct fi_msg_tagged *msg, uint64_t flags);
ssize_t rdm_cancel(fid_t fid, void *context);

/* fi_ep_bind of a CQ, counter, AV or EQ, with the lock held, whatever
 * the endpoint's state (callers check it). */
int util_rdm_bind_locked(struct util_rdm_ep *ep, struct fid *bfid,
			 uint64_t flags);

/* Undo every CQ and counter binding; the endpoint goes on (its
 * completions go nowhere until new ones).  With the lock held, or from
 * util_rdm_ep_fini. */
void util_rdm_unbind_all(struct util_rdm_ep *ep);

/* The engine's entry points as contexts take them (util_rdm_ep.c,
 * util_rdm_rma.c): each side's, the other side's refused. */
extern struct fi_ops_ep util_rdm_ep_ops;
extern struct fi_ops_msg util_rdm_tx_msg_ops, util_rdm_rx_msg_ops;
extern struct fi_ops_tagged util_rdm_tx_tagged_ops, util_rdm_rx_tagged_ops;
extern struct fi_ops_rma util_rdm_rma_ops;
extern struct fi_ops_atomic util_rdm_atomic_ops;

#endif /* WEFT_UTIL_RDM_PRIV_H */
