/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The RDM engine (weft/util_rdm.h), receive side: receive completions,
 * unexpected messages, arrivals from the transports, the receive and peek
 * entry points, cancel, and receives that fail with their peer.
 */
#include "weft/util_rdm.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "weft/ofi.h"

#include "weft/util_coll.h"
#include "weft/util_iov.h"

#include "util_rdm_priv.h"

/* ---- receive completions ------------------------------------------------ */

static fi_addr_t report_src(struct util_rdm_ep *ep, fi_addr_t src)
{
	if (src == FI_ADDR_NOTAVAIL || !ep->base.av)
		return FI_ADDR_NOTAVAIL;
	return util_av_user_id(ep->base.av, src);
}

/*
 * Write the completion of one delivered receive (or slice of a multi-recv
 * buffer) and release the request when it is finished.
 */
/* The counter a receive counts on: the endpoint's, or a deferred work
 * request's completion counter. */
static inline struct util_cntr *rx_cntr(struct util_rdm_ep *ep,
					const struct util_rdm_rx *rx)
{
	return weft_unlikely(rx->flags & UTIL_RDM_DEFERRED) ? rx->dcntr :
							      ep->base.recv_cntr;
}

static void rx_complete(struct util_rdm_ep *ep, struct util_rdm_rx *rx,
			const struct util_match_result *res, uint64_t tag,
			uint64_t data, uint32_t msg_flags, fi_addr_t src,
			const void *src_raw, size_t src_raw_len, int err)
{
	uint64_t flags = rx->cq_flags;
	bool multi = rx->m.flags & FI_MULTI_RECV;
	void *buf;
	bool done;

	if (weft_unlikely(rx->flags & UTIL_RDM_INTERNAL)) {
		/* A collective's step takes exactly what it posted. */
		void *ctx = rx->m.context;

		/* A member that failed says so instead of its data. */
		if (!err && (msg_flags & UTIL_RDM_CQ_DATA))
			err = data && data <= INT_MAX ? (int)data : FI_EIO;
		else if (!err && res->olen)
			err = FI_ETRUNC;
		else if (!err && res->len != rx->m.len)
			err = FI_EINVAL;
		util_bufpool_put(ep->rxq->rx_pool, rx);
		util_coll_xfer_done(ep, ctx, err);
		return;
	}
	if (msg_flags & UTIL_RDM_CQ_DATA)
		flags |= FI_REMOTE_CQ_DATA;
	else
		data = 0;
	if (!(rx->cq_flags & FI_TAGGED))
		tag = 0;
	flags |= util_match_rx_complete(&rx->m);
	done = !multi || (flags & FI_MULTI_RECV);
	buf = multi ? (char *)rx->iov[0].iov_base + res->offset :
		      (rx->iov_count ? rx->iov[0].iov_base : NULL);

	if (!err && res->olen)
		err = FI_ETRUNC;
	if (!err && src == FI_ADDR_NOTAVAIL &&
	    (ep->base.caps & FI_SOURCE_ERR) && src_raw)
		err = FI_EADDRNOTAVAIL;

	if (!err) {
		util_ep_rx_success(&ep->base, false,
				   wants_comp(ep->base.rx_selective, rx->flags),
				   rx->m.context, flags, res->len, buf, data,
				   tag, report_src(ep, src), rx_cntr(ep, rx));
	} else {
		struct fi_cq_err_entry e = {
			.op_context = rx->m.context,
			.flags = flags,
			.len = res->len,
			.buf = buf,
			.data = data,
			.tag = tag,
			.olen = res->olen,
			.err = err,
			.prov_errno = -err,
		};

		if (err == FI_EADDRNOTAVAIL) {
			e.err_data = (void *)src_raw;
			e.err_data_size = src_raw_len;
		}
		util_ep_rx_error(&ep->base, false,
				 !(rx->flags & RDM_NO_COMPLETION), &e,
				 rx_cntr(ep, rx));
	}
	if (done)
		util_bufpool_put(ep->rxq->rx_pool, rx);
}

void util_rdm_fetch_done(struct util_rdm_ep *ep, void *cookie, int err)
{
	struct rdm_fetch *f = cookie;

	rx_complete(ep, f->rx, &f->res, f->tag, f->data, f->msg_flags, f->src,
		    f->src_raw_len ? f->src_raw : NULL, f->src_raw_len, err);
	util_bufpool_put(ep->rxq->fetch_pool, f);
}

/* Place a message's payload into the slice the match gave and complete. */
static void rx_deliver(struct util_rdm_ep *ep, struct util_rdm_rx *rx,
		       const struct util_match_result *res,
		       const struct util_rdm_msg *msg)
{
	struct iovec slice[UTIL_RDM_IOV_MAX];
	struct rdm_fetch *f;
	size_t n;
	int err = 0, ret;

	if (msg->payload) {
		util_iov_copy_to(rx->iov, rx->iov_count, res->offset, msg->payload,
				 res->len);
	} else {
		f = util_bufpool_get(ep->rxq->fetch_pool);
		if (!f) {
			msg->xp->ops->discard(msg->xp, msg->stash);
			err = FI_ENOMEM;
			goto complete;
		}
		f->rx = rx;
		f->res = *res;
		f->tag = msg->tag;
		f->data = msg->data;
		f->msg_flags = msg->flags;
		f->src = msg->src;
		f->src_raw_len = WEFT_MIN(msg->src_raw_len, sizeof(f->src_raw));
		if (msg->src_raw)
			memcpy(f->src_raw, msg->src_raw, f->src_raw_len);
		else
			f->src_raw_len = 0;
		n = util_iov_slice(rx->iov, rx->iov_count, res->offset, res->len,
			      slice);
		ret = msg->xp->ops->fetch(msg->xp, msg->stash, slice, rx->desc, n,
				    res->len, f);
		if (ret == -FI_EINPROGRESS)
			return;
		util_bufpool_put(ep->rxq->fetch_pool, f);
		err = -ret;
	}
complete:
	if (msg->flags & UTIL_RDM_ACK_REQ)
		msg->xp->ops->ack(msg->xp, msg->reply, msg->tx_id, err);
	rx_complete(ep, rx, res, msg->tag, msg->data, msg->flags, msg->src,
		    msg->src_raw, msg->src_raw_len, err);
}

/* The message an unexpected record describes, for rx_deliver. */
static void unexp_to_msg(const struct util_rdm_unexp *ue,
			 struct util_rdm_msg *msg)
{
	memset(msg, 0, sizeof(*msg));
	msg->op = ue->op;
	msg->flags = ue->flags;
	msg->tag = ue->m.tag;
	msg->data = ue->data;
	msg->len = ue->m.len;
	msg->src = ue->m.addr;
	msg->tx_id = ue->tx_id;
	msg->reply = ue->reply;
	msg->xp = ue->xp;
	if (ue->src_raw_len) {
		msg->src_raw = ue->src_raw;
		msg->src_raw_len = ue->src_raw_len;
	}
	if (ue->stashed) {
		msg->stash = ue->stash;
		msg->stash_len = ue->stash_len;
	} else {
		msg->payload = ue->heap ? ue->heap : ue->inline_buf;
	}
}

/* What keeping an unexpected message costs, against q->unexp_max. */
static size_t unexp_cost(const struct util_rdm_rxq *q, size_t heap_len)
{
	return sizeof(struct util_rdm_unexp) + q->unexp_inline + heap_len;
}

void unexp_free(struct util_rdm_rxq *q, struct util_rdm_unexp *ue,
		bool discard)
{
	if (ue->stashed && discard)
		ue->xp->ops->discard(ue->xp, ue->stash);
	q->unexp_bytes -= unexp_cost(q, ue->heap ? ue->m.len : ue->hold);
	free(ue->heap);
	util_bufpool_put(q->unexp_pool, ue);
}

/* The sender of an unexpected message of unknown source, if the AV names
 * it now. */
static fi_addr_t unexp_src_now(void *ctx, struct util_unexp_entry *m)
{
	struct util_rdm_rxq *q = ctx;
	struct util_rdm_unexp *ue = container_of(m, struct util_rdm_unexp, m);
	fi_addr_t fa;

	if (!ue->src_raw_len)
		return FI_ADDR_NOTAVAIL;
	fa = util_av_lookup_addr(q->av, ue->src_raw);
	return util_av_slot_get(q->av, fa) ? fa : FI_ADDR_NOTAVAIL;
}

/*
 * Before a receive matches: messages that came from a sender before its
 * address was in the AV carry no source, so a receive directed to that
 * sender would pass them and take its later ones first (MPI over a job
 * whose ranks insert each other's addresses at different times).  Once
 * the AV has changed, name them.
 */
static void unexp_resolve(struct util_rdm_rxq *q)
{
	uint64_t n;
	size_t left;

	if (!q->av) {
		q->unexp_unknown = false;
		return;
	}
	n = atomic_load_explicit(&q->av->inserts, memory_order_acquire);
	if (n == q->unexp_av_inserts)
		return;
	q->unexp_av_inserts = n;
	left = util_match_resolve_unexp(&q->msgq, unexp_src_now, q) +
	       util_match_resolve_unexp(&q->tagq, unexp_src_now, q);
	q->unexp_unknown = left > 0;
}

/* ---- arrivals (transport -> engine) ------------------------------------- */

static struct util_match *queue_of(struct util_rdm_rxq *rq, uint32_t op)
{
	return rq->queue[op & 3];
}

int util_rdm_msg_arrived(struct util_rdm_xport *xp, struct util_rdm_msg *msg)
{
	struct util_rdm_ep *ep = xp->ep;
	struct util_rdm_rxq *rq = ep->rxq;
	struct util_match *q = queue_of(rq, msg->op);
	struct util_match_result res;
	struct util_rdm_unexp *ue;
	size_t heap_len;

	msg->xp = xp;
	if (util_match_msg_arrived(q, msg->src, msg->tag, msg->len, &res)) {
		rx_deliver(ep, container_of(res.rx, struct util_rdm_rx, m),
			   &res, msg);
		return 0;
	}

	/* Unexpected: keep it if the bound allows (one always fits, so a
	 * message bigger than the bound cannot stall forever). */
	heap_len = msg->payload && msg->len > rq->unexp_inline ? msg->len : 0;
	/* What the transport keeps for a stashed payload counts too. */
	if (!msg->payload)
		heap_len = msg->stash_hold;
	if (rq->unexp_max && rq->unexp_bytes &&
	    rq->unexp_bytes + unexp_cost(rq, heap_len) > rq->unexp_max)
		return -FI_EAGAIN;
	ue = util_bufpool_get(rq->unexp_pool);
	if (!ue)
		return -FI_EAGAIN;
	util_unexp_entry_init(&ue->m, msg->src, msg->tag, msg->len);
	ue->op = msg->op;
	ue->flags = msg->flags;
	ue->data = msg->data;
	ue->tx_id = msg->tx_id;
	ue->reply = msg->reply;
	ue->xp = xp;
	ue->heap = NULL;
	ue->hold = msg->payload ? 0 : msg->stash_hold;
	ue->src_raw_len = 0;
	/* A sender the AV does not name yet (its address is inserted after
	 * its first messages came): keep its address, so that a receive
	 * posted later can name it (unexp_resolve), and for FI_SOURCE_ERR. */
	if (msg->src == FI_ADDR_NOTAVAIL && msg->src_raw &&
	    (ep->base.caps & (FI_SOURCE_ERR | FI_SOURCE | FI_DIRECTED_RECV))) {
		ue->src_raw_len = WEFT_MIN(msg->src_raw_len,
					   sizeof(ue->src_raw));
		memcpy(ue->src_raw, msg->src_raw, ue->src_raw_len);
		if (rq->av && !rq->unexp_unknown) {
			rq->unexp_unknown = true;
			rq->unexp_av_inserts = atomic_load_explicit(
			    &rq->av->inserts, memory_order_acquire);
		}
	}
	ue->stashed = !msg->payload;
	if (ue->stashed) {
		if (msg->stash_len > sizeof(ue->stash)) {
			util_bufpool_put(rq->unexp_pool, ue);
			goto err_stash;
		}
		memcpy(ue->stash, msg->stash, msg->stash_len);
		ue->stash_len = msg->stash_len;
	} else if (heap_len && msg->payload) {
		/* Sized to the message: a 300-byte one holds 300 bytes. */
		ue->heap = malloc(heap_len);
		if (!ue->heap) {
			util_bufpool_put(rq->unexp_pool, ue);
			return -FI_EAGAIN;
		}
		memcpy(ue->heap, msg->payload, heap_len);
	} else {
		memcpy(ue->inline_buf, msg->payload, msg->len);
	}
	rq->unexp_bytes += unexp_cost(rq, heap_len);
	util_match_add_unexp(q, &ue->m);
	return 0;

err_stash:
	/* A descriptor larger than the engine keeps: a transport bug. */
	FI_WARN(ep->base.domain->prov, FI_LOG_EP_DATA,
		"a rendezvous descriptor of %zu bytes cannot be kept: "
		"message dropped\n",
		msg->stash_len);
	xp->ops->discard(xp, msg->stash);
	return -FI_EINVAL;
}

void util_rdm_remote_event(struct util_rdm_ep *ep, uint64_t flags, size_t len,
			   uint64_t data)
{
	util_ep_rx_success(&ep->base, false, flags & FI_REMOTE_CQ_DATA, NULL,
			   flags | FI_RMA, len, NULL, data, 0, FI_ADDR_NOTAVAIL,
			   (flags & FI_REMOTE_WRITE) ? ep->base.rem_write_cntr :
						     ep->base.rem_read_cntr);
}

/* ---- receiving ---------------------------------------------------------- */

/* The endpoint that reports for q what no arrival names: ep if given,
 * else the first that uses q (a shared receive context), or NULL. */
static struct util_rdm_ep *report_ep(struct util_rdm_rxq *q,
				     struct util_rdm_ep *ep)
{
	if (ep || dlist_empty(&q->eps))
		return ep;
	return container_of(q->eps.next, struct util_rdm_ep, rxq_entry);
}

static ssize_t rdm_peek(struct util_rdm_ep *ep, struct util_rdm_rxq *rq,
			struct util_match *q, struct util_rdm_rx *rx)
{
	struct util_unexp_entry *m;
	struct util_rdm_unexp *ue = NULL;
	struct util_cq *cq;
	int ret;

	ret = util_match_peek(q, &rx->m, &m);
	if (!ret) {
		/* Reported where the message came by. */
		ue = container_of(m, struct util_rdm_unexp, m);
		ep = ue->xp->ep;
	}
	ep = report_ep(rq, ep);
	cq = ep ? ep->base.rx_cq : NULL;
	if (!cq)
		return 0;
	if (ret) {
		struct fi_cq_err_entry e = {
			.op_context = rx->m.context,
			.flags = rx->cq_flags,
			.tag = rx->m.tag,
			.err = FI_ENOMSG,
			.prov_errno = -FI_ENOMSG,
		};

		util_ep_rx_error(&ep->base, false, true, &e, NULL);
	} else {
		util_ep_rx_success(
			&ep->base, false, true, rx->m.context,
			rx->cq_flags | ((ue->flags & UTIL_RDM_CQ_DATA) ?
						FI_REMOTE_CQ_DATA :
						0),
			ue->m.len, NULL,
			(ue->flags & UTIL_RDM_CQ_DATA) ? ue->data : 0,
			ue->m.tag, report_src(ep, ue->m.addr), NULL);
	}
	if (!ret && (rx->m.flags & FI_DISCARD)) {
		if (ue->flags & UTIL_RDM_ACK_REQ)
			ue->xp->ops->ack(ue->xp, ue->reply, ue->tx_id, 0);
		unexp_free(rq, ue, true);
	}
	return 0;
}

/* A receive met an unexpected message: deliver it, and report it on the
 * endpoint the message came by (another one than the receive's, when
 * they share a receive context). */
static void deliver_unexp(struct util_rdm_rx *rx,
			  const struct util_match_result *res, bool discard)
{
	struct util_rdm_unexp *ue =
		container_of(res->unexp, struct util_rdm_unexp, m);
	struct util_rdm_ep *ep = ue->xp->ep;
	struct util_rdm_msg msg;

	unexp_to_msg(ue, &msg);
	if (discard) {
		if (ue->flags & UTIL_RDM_ACK_REQ)
			ue->xp->ops->ack(ue->xp, ue->reply, ue->tx_id, 0);
		rx_complete(ep, rx, res, msg.tag, msg.data, msg.flags, msg.src,
			    NULL, 0, 0);
		unexp_free(ep->rxq, ue, true);
		return;
	}
	rx_deliver(ep, rx, res, &msg);
	/* A stashed payload was fetched: the transport already released it. */
	unexp_free(ep->rxq, ue, false);
}

/* A receive was queued for src alone: if that peer is known gone (and no
 * new insert of its address may name a successor), progress fails it. */
static void rx_directed_check(struct util_rdm_ep *ep, fi_addr_t src)
{
	struct util_peer *peer;

	/* Made if new: a transport that learns of deaths by looking looks
	 * at the peers it knows, and this one may have sent nothing yet
	 * (a scalable endpoint's receive pair never sends to it). */
	if (util_peer_get(&ep->peers, src, &peer))
		return;
	if (peer->gone && !peer->fresh)
		ep->rx_gone = true;
}

/* Queue rx in q, or deliver the unexpected messages it takes (a
 * multi-recv buffer takes them until it is released); what
 * util_match_post_recv answered last. */
static int rx_post(struct util_match *q, struct util_rdm_rx *rx,
		   uint64_t flags)
{
	struct util_match_result res;
	int r;

	for (;;) {
		r = util_match_post_recv(q, &rx->m, &res);
		if (r <= 0)
			break;
		deliver_unexp(rx, &res, false);
		if (!(flags & FI_MULTI_RECV) || res.released)
			break;
	}
	return r;
}

ssize_t rdm_recv(struct util_rdm_ep *ep, struct util_rdm_rxq *rq,
		 const struct iovec *iov, void **desc, size_t count,
		 fi_addr_t src, uint64_t tag, uint64_t ignore, void *context,
		 uint64_t flags, uint32_t op)
{
	struct util_match *q = queue_of(rq, op);
	struct util_match_result res;
	struct util_rdm_rx *rx;
	ssize_t ret = 0;
	int r;

	if (weft_unlikely(count > UTIL_RDM_IOV_MAX || (count && !iov)))
		return -FI_EINVAL;
	if ((flags & FI_MULTI_RECV) && (op != UTIL_RDM_MSG || count != 1))
		return -FI_EINVAL;

	weft_lock(rq->lock);
	if (weft_unlikely(ep && !ep->base.enabled)) {
		ret = -FI_EOPBADSTATE;
		goto out;
	}
	if (!(rq->caps & FI_DIRECTED_RECV))
		src = FI_ADDR_UNSPEC;
	/* A receive directed to fi_rx_addr(peer, i, bits) takes what that
	 * peer sends from any of its contexts (Mercury names the context
	 * its answer comes from, as 1.17's sockets matches): sources are
	 * endpoints, not contexts. */
	else if (src != FI_ADDR_UNSPEC && rq->av && rq->av->rx_ctx_bits)
		src &= rq->av->addr_mask;
	if (weft_unlikely(rq->unexp_unknown))
		unexp_resolve(rq);
	rx = util_bufpool_get(rq->rx_pool);
	if (!rx) {
		ret = -FI_EAGAIN;
		goto out;
	}
	rx->flags = flags;
	if (weft_unlikely(flags & UTIL_RDM_DEFERRED)) /* (read only then) */
		rx->dcntr = util_deferred_cntr;
	rx->cq_flags = FI_RECV | (op == UTIL_RDM_TAGGED ? FI_TAGGED : FI_MSG);
	rx->iov_count = count;
	util_iov_assign(rx->iov, iov, count);
	if (desc)
		memcpy(rx->desc, desc, count * sizeof(*desc));
	else
		memset(rx->desc, 0, sizeof(rx->desc));
	util_rx_entry_init(&rx->m, src, tag, ignore,
			   flags & (FI_MULTI_RECV | FI_PEEK | FI_CLAIM |
				    FI_DISCARD),
			   context, util_iov_len(iov, count));

	if (flags & FI_PEEK) {
		ret = rdm_peek(ep, rq, q, rx);
		util_bufpool_put(rq->rx_pool, rx);
		goto out;
	}
	if (flags & FI_CLAIM) {
		r = util_match_claim(q, &rx->m, &res);
		if (r < 0) {
			util_bufpool_put(rq->rx_pool, rx);
			ret = r == -FI_ENOMSG ? -FI_EINVAL : r;
			goto out;
		}
		deliver_unexp(rx, &res, flags & FI_DISCARD);
		goto out;
	}
	r = rx_post(q, rx, flags);
	if (weft_unlikely(src != FI_ADDR_UNSPEC) && !r && ep)
		rx_directed_check(ep, src);
out:
	weft_unlock(rq->lock);
	return ret;
}

int util_rdm_coll_recv(struct util_rdm_ep *ep, fi_addr_t src, uint64_t tag,
		       void *buf, size_t len, void *ctx)
{
	struct util_rdm_rxq *rq = ep->rxq;
	struct util_rdm_rx *rx;
	int r;

	rx = util_bufpool_get(rq->rx_pool);
	if (!rx)
		return -FI_EAGAIN;
	rx->flags = UTIL_RDM_INTERNAL;
	rx->dcntr = NULL;
	rx->cq_flags = 0;
	rx->iov_count = 1;
	rx->iov[0].iov_base = buf;
	rx->iov[0].iov_len = len;
	memset(rx->desc, 0, sizeof(rx->desc));
	util_rx_entry_init(&rx->m, FI_ADDR_UNSPEC, tag, 0, 0, ctx, len);
	r = rx_post(&rq->collq, rx, 0);
	if (r < 0)
		return r;
	/* Not taken by an early arrival: it waits for src. */
	if (r == 0)
		rx_directed_check(ep, src);
	return 0;
}

size_t util_rdm_coll_cancel(struct util_rdm_ep *ep, void *ctx)
{
	struct util_rx_entry *m;
	size_t n = 0;

	while ((m = util_match_cancel(&ep->rxq->collq, ctx))) {
		util_bufpool_put(ep->rxq->rx_pool,
				 container_of(m, struct util_rdm_rx, m));
		n++;
	}
	return n;
}

ssize_t rdm_msg_recv(struct fid_ep *ep_fid, void *buf, size_t len,
		     void *desc, fi_addr_t src, void *context)
{
	struct util_rdm_ep *ep = util_rdm_ep_of(ep_fid);
	struct iovec iov = { buf, len };

	return rdm_recv(ep, ep->rxq, &iov, &desc, 1, src, 0, ~0ULL, context,
			ep->base.rx_op_flags, UTIL_RDM_MSG);
}

ssize_t rdm_msg_recvv(struct fid_ep *ep_fid, const struct iovec *iov,
		      void **desc, size_t count, fi_addr_t src,
		      void *context)
{
	struct util_rdm_ep *ep = util_rdm_ep_of(ep_fid);

	return rdm_recv(ep, ep->rxq, iov, desc, count, src, 0, ~0ULL, context,
			ep->base.rx_op_flags, UTIL_RDM_MSG);
}

ssize_t rdm_msg_recvmsg(struct fid_ep *ep_fid, const struct fi_msg *msg,
			uint64_t flags)
{
	struct util_rdm_ep *ep = util_rdm_ep_of(ep_fid);

	if (weft_unlikely(flags & FI_TRIGGER))
		return util_trigger_msg(&ep->base, ep_fid, FI_OP_RECV, msg,
					flags);
	return rdm_recv(ep, ep->rxq, msg->msg_iov, msg->desc, msg->iov_count,
			msg->addr, 0, ~0ULL, msg->context, flags,
			UTIL_RDM_MSG);
}

ssize_t rdm_tagged_recv(struct fid_ep *ep_fid, void *buf, size_t len,
			void *desc, fi_addr_t src, uint64_t tag,
			uint64_t ignore, void *context)
{
	struct util_rdm_ep *ep = util_rdm_ep_of(ep_fid);
	struct iovec iov = { buf, len };

	return rdm_recv(ep, ep->rxq, &iov, &desc, 1, src, tag, ignore,
			context, ep->base.rx_op_flags & ~FI_MULTI_RECV,
			UTIL_RDM_TAGGED);
}

ssize_t rdm_tagged_recvv(struct fid_ep *ep_fid, const struct iovec *iov,
			 void **desc, size_t count, fi_addr_t src,
			 uint64_t tag, uint64_t ignore, void *context)
{
	struct util_rdm_ep *ep = util_rdm_ep_of(ep_fid);

	return rdm_recv(ep, ep->rxq, iov, desc, count, src, tag, ignore,
			context, ep->base.rx_op_flags & ~FI_MULTI_RECV,
			UTIL_RDM_TAGGED);
}

ssize_t rdm_tagged_recvmsg(struct fid_ep *ep_fid,
			   const struct fi_msg_tagged *msg,
			   uint64_t flags)
{
	struct util_rdm_ep *ep = util_rdm_ep_of(ep_fid);

	if (weft_unlikely(flags & FI_TRIGGER))
		return util_trigger_tagged(&ep->base, ep_fid, FI_OP_TRECV, msg,
					   flags);
	return rdm_recv(ep, ep->rxq, msg->msg_iov, msg->desc, msg->iov_count,
			msg->addr, msg->tag, msg->ignore, msg->context, flags,
			UTIL_RDM_TAGGED);
}

/* ---- cancel, failed receives -------------------------------------------- */

void rxq_cancel(struct util_rdm_rxq *q, struct util_rdm_ep *ep,
		void *context)
{
	struct util_match *queues[] = { &q->msgq, &q->tagq };
	struct util_rx_entry *m = NULL;
	size_t i;

	weft_lock(q->lock);
	for (i = 0; i < WEFT_ARRAY_SIZE(queues) && !m; i++)
		m = util_match_cancel(queues[i], context);
	ep = report_ep(q, ep);
	if (m) {
		struct util_rdm_rx *rx = container_of(m, struct util_rdm_rx, m);

		/* A multi-recv buffer with slices in flight finishes with
		 * its last slice instead. */
		if (!m->pending) {
			/* a multi-recv buffer says it is released, as
			 * libfabric does from 2.1 on: clients wait for that
			 * flag before they reuse the buffer (Mercury) */
			struct fi_cq_err_entry e = {
				.op_context = m->context,
				.flags = rx->cq_flags |
					 (rx->flags & FI_MULTI_RECV),
				.tag = m->tag,
				.err = FI_ECANCELED,
				.prov_errno = -FI_ECANCELED,
			};

			if (ep)
				util_ep_rx_error(&ep->base, false,
						 !(rx->flags & RDM_NO_COMPLETION),
						 &e, rx_cntr(ep, rx));
			util_bufpool_put(q->rx_pool, rx);
		}
	}
	weft_unlock(q->lock);
}

ssize_t rdm_cancel(fid_t fid, void *context)
{
	struct util_rdm_ep *ep =
		util_rdm_ep_of(container_of(fid, struct fid_ep, fid));

	/* Triggered and not posted yet: it ends here. */
	if (weft_unlikely(util_trigger_cancel(&ep->base, context)))
		return 0;
	rxq_cancel(ep->rxq, ep, context);
	return 0;
}

/* A posted receive ends in error (err positive) without data. */
static void rx_fail(struct util_rdm_ep *ep, struct util_rx_entry *m, int err)
{
	struct util_rdm_rx *rx = container_of(m, struct util_rdm_rx, m);
	struct fi_cq_err_entry e = {
		.op_context = m->context,
		.flags = rx->cq_flags,
		.tag = m->tag,
		.err = err,
		.prov_errno = -err,
	};

	util_ep_rx_error(&ep->base, false, !(rx->flags & RDM_NO_COMPLETION), &e,
			 rx_cntr(ep, rx));
	util_bufpool_put(ep->rxq->rx_pool, rx);
}

void util_rdm_flush_rx(struct util_rdm_ep *ep, int err)
{
	struct util_match *queues[] = { &ep->rxq->msgq, &ep->rxq->tagq };
	struct util_rx_entry *m;
	size_t i;

	/* Receives of a shared context wait for the other endpoints. */
	if (ep->rxq != &ep->own_rxq)
		return;
	for (i = 0; i < WEFT_ARRAY_SIZE(queues); i++)
		while ((m = util_match_pop_posted(queues[i])))
			rx_fail(ep, m, err);
}

/* Whether every transport has offered what a gone peer sent. */
static bool peer_drained(struct util_rdm_ep *ep, struct util_peer *peer)
{
	struct util_rdm_xport *xps[] = { ep->xp, ep->local };
	size_t i;

	for (i = 0; i < WEFT_ARRAY_SIZE(xps); i++)
		if (xps[i] && xps[i]->ops->peer_drained &&
		    !xps[i]->ops->peer_drained(xps[i], peer))
			return false;
	return true;
}

/*
 * Receives directed to peers that are gone end with FI_ECONNRESET, once
 * nothing those peers sent waits with a transport: nothing more can
 * match them.  Runs after a transport failed a peer or a receive was
 * directed to a gone one, until none waits.
 */
void rx_fail_gone(struct util_rdm_ep *ep)
{
	struct util_match *queues[] = { &ep->rxq->msgq, &ep->rxq->tagq };
	struct util_rx_entry *m;
	struct dlist_entry *e, *tmp;
	bool waiting = false;
	size_t i;

	ep->rx_gone = false;
	if (!util_rdm_rx_directed(ep))
		return;
	dlist_foreach_safe(&ep->peers.list, e, tmp) {
		struct util_peer *peer =
			container_of(e, struct util_peer, entry);

		/* fresh: a new insert may name a successor now. */
		if (!peer->gone || peer->fresh ||
		    peer->fi_addr == FI_ADDR_NOTAVAIL)
			continue;
		if (!peer_drained(ep, peer)) {
			waiting = true;
			continue;
		}
		for (i = 0; i < WEFT_ARRAY_SIZE(queues); i++)
			while ((m = util_match_pop_from(queues[i],
							peer->fi_addr)))
				rx_fail(ep, m, FI_ECONNRESET);
		if (ep->coll)
			util_coll_peer_gone(ep, peer->fi_addr);
	}
	ep->rx_gone |= waiting;
}

/* ---- the receive state --------------------------------------------------- */

#define RDM_DEFAULT_MIN_MULTI_RECV 64

int rxq_init(struct util_rdm_rxq *q, uint64_t caps)
{
	struct util_match_attr mattr = {
		.min_multi_recv = RDM_DEFAULT_MIN_MULTI_RECV,
		/* The untagged queue honours directed receive too. */
		.flags = (caps & FI_DIRECTED_RECV) ? UTIL_MATCH_DIRECTED : 0,
	};
	struct util_bufpool_attr pattr = { 0 };
	int ret;

	memset(q, 0, sizeof(*q));
	dlist_init(&q->eps);
	q->caps = caps;
	ret = util_match_init(&q->msgq, &mattr);
	if (ret)
		return ret;
	mattr.flags |= UTIL_MATCH_TAGGED;
	ret = util_match_init(&q->tagq, &mattr);
	if (ret)
		goto err_msgq;
	mattr.flags = UTIL_MATCH_TAGGED;
	ret = util_match_init(&q->collq, &mattr);
	if (ret)
		goto err_tagq;
	q->queue[0] = q->queue[UTIL_RDM_MSG] = &q->msgq;
	q->queue[UTIL_RDM_TAGGED] = &q->tagq;
	q->queue[UTIL_RDM_COLL] = &q->collq;
	pattr.name = "rdm rx";
	pattr.size = sizeof(struct util_rdm_rx);
	ret = util_bufpool_create(&pattr, &q->rx_pool);
	if (ret)
		goto err_collq;
	pattr.name = "rdm fetch";
	pattr.size = sizeof(struct rdm_fetch);
	ret = util_bufpool_create(&pattr, &q->fetch_pool);
	if (ret)
		goto err_rx_pool;
	return 0;

err_rx_pool:
	util_bufpool_destroy(q->rx_pool);
err_collq:
	util_match_fini(&q->collq);
err_tagq:
	util_match_fini(&q->tagq);
err_msgq:
	util_match_fini(&q->msgq);
	return ret;
}

int rxq_unexp_init(struct util_rdm_rxq *q, size_t unexp_inline,
		   size_t unexp_max)
{
	struct util_bufpool_attr pattr = {
		.name = "rdm unexpected",
		.size = sizeof(struct util_rdm_unexp) + unexp_inline,
	};

	q->unexp_inline = unexp_inline;
	q->unexp_max = unexp_max;
	return util_bufpool_create(&pattr, &q->unexp_pool);
}

static void rxq_drain(struct util_rdm_rxq *rq, struct util_match *q)
{
	struct util_unexp_entry *ue;
	struct util_rx_entry *m;

	while ((m = util_match_pop_posted(q)))
		util_bufpool_put(rq->rx_pool,
				 container_of(m, struct util_rdm_rx, m));
	while ((ue = util_match_pop_unexp(q)))
		unexp_free(rq, container_of(ue, struct util_rdm_unexp, m),
			   true);
	util_match_fini(q);
}

void rxq_fini(struct util_rdm_rxq *q)
{
	rxq_drain(q, &q->msgq);
	rxq_drain(q, &q->tagq);
	rxq_drain(q, &q->collq);
	util_bufpool_destroy(q->fetch_pool);
	if (q->unexp_pool)
		util_bufpool_destroy(q->unexp_pool);
	util_bufpool_destroy(q->rx_pool);
}

static bool came_by(void *ctx, struct util_unexp_entry *m)
{
	return container_of(m, struct util_rdm_unexp, m)->xp->ep == ctx;
}

void rxq_drop_ep(struct util_rdm_rxq *q, struct util_rdm_ep *ep)
{
	struct util_match *queues[] = { &q->msgq, &q->tagq, &q->collq };
	struct util_unexp_entry *m;
	size_t i;

	for (i = 0; i < WEFT_ARRAY_SIZE(queues); i++)
		while ((m = util_match_pop_unexp_if(queues[i], came_by, ep)))
			unexp_free(q, container_of(m, struct util_rdm_unexp, m),
				   true);
}
