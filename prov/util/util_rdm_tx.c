/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The RDM engine (weft/util_rdm.h), transmit side: transmits, their ids
 * and reports, failing them with their peer, handing them to the transport
 * or queueing them on their peer (back-pressure), and the send entry
 * points.
 */
#include "weft/util_rdm.h"

#include <string.h>

#include "weft/ofi.h"

#include "weft/util_coll.h"
#include "weft/util_iov.h"

#include "util_rdm_priv.h"

/* ---- transmit requests -------------------------------------------------- */

/*
 * A transmit's id on the wire: its pool index in the low half, its
 * generation in the high half.  An answer naming a tx that has been
 * reused since (late, duplicated) or that is not in use (forged) finds
 * nothing.
 */
uint64_t util_rdm_tx_id(struct util_rdm_ep *ep, struct util_rdm_tx *tx)
{
	return util_bufpool_index(ep->tx_pool, tx) | (uint64_t)tx->gen << 32;
}

struct util_rdm_tx *util_rdm_tx_of(struct util_rdm_ep *ep, uint64_t tx_id)
{
	struct util_rdm_tx *tx;

	tx = util_bufpool_at(ep->tx_pool, tx_id & UINT32_MAX);
	if (!tx || !tx->live || tx->gen != (uint32_t)(tx_id >> 32))
		return NULL;
	return tx;
}

/* A transmit to peer, or NULL when the endpoint has none left or the
 * peer holds its share already (back-pressure, util_rdm.h). */
struct util_rdm_tx *tx_get(struct util_rdm_ep *ep,
			   struct util_peer *peer)
{
	struct util_rdm_tx *tx;

	if (peer->ntx >= ep->peer_tx_max)
		return NULL;
	tx = util_bufpool_get(ep->tx_pool);
	if (tx) {
		tx->peer = peer;
		peer->ntx++;
		dlist_init(&tx->waiting);
		/* Never 0: no id is 0, so transports may use 0 for none. */
		if (!++tx->gen)
			tx->gen = 1;
		tx->live = true;
		tx->handing = false;
		tx->reported = false;
		tx->in_flight = false;
	}
	return tx;
}

/* The transport holds tx now: it waits on the peer until done, and a
 * fence to that peer waits for it (the collectives' own transfers
 * aside: no fence of the application's waits for a step of theirs). */
static void tx_wait(struct util_rdm_ep *ep, struct util_rdm_tx *tx)
{
	dlist_insert_tail(&tx->waiting, &ep->tx_waiting);
	if (!(tx->flags & UTIL_RDM_INTERNAL)) {
		tx->in_flight = true;
		tx->peer->nflight++;
	}
}

/* tx leaves ep->tx_waiting or its peer's queue, whichever it is on. */
static void tx_unwait(struct util_rdm_tx *tx)
{
	dlist_remove(&tx->waiting);
	if (tx->in_flight) {
		tx->in_flight = false;
		tx->peer->nflight--;
	}
}

/*
 * Whether tx is fenced (FI_FENCE) and must wait: its peer still has
 * transmits a transport holds.  A fenced transmit waiting at the head
 * of its peer's queue goes when the last of them is done; progress
 * hands it over (peer_drain).
 */
static inline bool tx_fence_holds(const struct util_rdm_tx *tx)
{
	return weft_unlikely(tx->flags & FI_FENCE) && tx->peer->nflight;
}

void tx_put(struct util_rdm_ep *ep, struct util_rdm_tx *tx)
{
	tx->peer->ntx--;
	tx->live = false;
	util_bufpool_put(ep->tx_pool, tx);
}

static struct util_cntr *tx_cntr(struct util_rdm_ep *ep,
				 const struct util_rdm_tx *tx)
{
	if (weft_unlikely(tx->flags & UTIL_RDM_DEFERRED))
		return tx->dcntr;
	switch (tx->kind) {
	case UTIL_RDM_TX_SEND:
		return ep->base.send_cntr;
	case UTIL_RDM_TX_WRITE:
	case UTIL_RDM_TX_ATOMIC:
		return ep->base.write_cntr;
	default:
		return ep->base.read_cntr;
	}
}

/* Report a finished transmit: success or error completion, counter. */
static void tx_report(struct util_rdm_ep *ep, struct util_rdm_tx *tx, int err)
{
	if (weft_unlikely(tx->flags & UTIL_RDM_INTERNAL)) {
		util_coll_xfer_done(ep, tx->context, err);
		return;
	}
	if (tx->reported) {
		/* Complete since it was taken (tx_inject_complete); its
		 * caller was told so, and is not told twice. */
		if (err)
			FI_WARN(ep->base.domain->prov, FI_LOG_EP_DATA,
				"an injected %s to %llu failed after it "
				"completed: %s\n",
				tx->kind == UTIL_RDM_TX_WRITE ? "write" :
								"atomic",
				(unsigned long long)tx->dest,
				fi_strerror(err));
		return;
	}
	/* (No CQ: a scalable endpoint's contexts closed under it, and
	 * their CQ went with them: nobody waits for it.)  Failures are
	 * reported even without FI_COMPLETION (fi_cq(3): selective
	 * completion suppresses successes).  An inject has no context to
	 * report: its caller was told it was sent, and only a bound counter
	 * counts the failure. */
	if (!err) {
		util_ep_tx_success(&ep->base, tx->cq_reserved, tx->context,
				   tx->cq_flags, tx_cntr(ep, tx));
	} else {
		struct fi_cq_err_entry e = {
			.op_context = tx->context,
			.flags = tx->cq_flags,
			.err = err,
			.prov_errno = -err,
		};

		util_ep_tx_error(&ep->base, tx->cq_reserved,
				 !(tx->flags & RDM_NO_COMPLETION), &e,
				 tx_cntr(ep, tx));
	}
}

void util_rdm_tx_done(struct util_rdm_ep *ep, struct util_rdm_tx *tx, int err)
{
	tx_unwait(tx);
	tx_report(ep, tx, err);
	tx_put(ep, tx);
}

int util_rdm_fail_dest(struct util_rdm_ep *ep, fi_addr_t dest, int err)
{
	struct dlist_entry *e, *tmp;
	struct util_peer *peer;
	int n = 0;

	dlist_foreach_safe(&ep->tx_waiting, e, tmp) {
		struct util_rdm_tx *tx =
			container_of(e, struct util_rdm_tx, waiting);

		if (tx->dest != dest)
			continue;
		util_rdm_tx_done(ep, tx, err);
		n++;
	}
	if (!util_peer_get(&ep->peers, dest, &peer))
		n += util_rdm_fail_peer(ep, peer, err);
	return n;
}

int util_rdm_fail_peer(struct util_rdm_ep *ep, struct util_peer *peer,
		       int err)
{
	struct dlist_entry *e, *tmp;
	int n = 0;

	dlist_foreach_safe(&ep->tx_waiting, e, tmp) {
		struct util_rdm_tx *tx =
			container_of(e, struct util_rdm_tx, waiting);

		if (tx->peer != peer || tx->handing)
			continue;
		util_rdm_tx_done(ep, tx, err);
		n++;
	}
	dlist_foreach_safe(&peer->queued, e, tmp) {
		util_rdm_tx_done(ep, container_of(e, struct util_rdm_tx,
						  waiting), err);
		n++;
	}
	dlist_remove(&peer->blocked);
	peer->gone = true;
	if (util_rdm_rx_directed(ep))
		ep->rx_gone = true;
	return n;
}

void util_rdm_tx_acked(struct util_rdm_ep *ep, uint64_t tx_id, int err)
{
	struct util_rdm_tx *tx = util_rdm_tx_of(ep, tx_id);

	if (!tx) {
		FI_WARN(ep->base.domain->prov, FI_LOG_EP_DATA,
			"acknowledgement for unknown request %llu\n",
			(unsigned long long)tx_id);
		return;
	}
	util_rdm_tx_done(ep, tx, err);
}

/*
 * Whether a write or an atomic without a result completes when the engine
 * has taken it: inject completion (fi_cq(3), FI_INJECT_COMPLETE), which
 * fi_inject_write, fi_inject_writedata and fi_inject_atomic have
 * (fi_rma(3), fi_atomic(3): the semantics of fi_inject), as does a
 * writemsg or atomicmsg with FI_INJECT that asks for it.  Its data is
 * copied (FI_INJECT), the caller's buffer is free: a counter bound for
 * writes counts it then, without waiting for the target to answer (MPICH's
 * MPI_Put then MPI_Win_flush waits on that counter, while the target may
 * call nothing of the provider).  The target's answer then reports nothing
 * more.  An explicit FI_TRANSMIT_COMPLETE or FI_DELIVERY_COMPLETE asks for
 * more, and is reported when it is met.
 */
static inline bool tx_inject_complete(const struct util_rdm_tx *tx)
{
	if (tx->kind != UTIL_RDM_TX_WRITE && tx->kind != UTIL_RDM_TX_ATOMIC)
		return false;
	if (!(tx->flags & FI_INJECT) ||
	    (tx->flags & (FI_TRANSMIT_COMPLETE | UTIL_RDM_DELIVERED)))
		return false;
	return tx->flags & (FI_INJECT_COMPLETE | RDM_NO_COMPLETION);
}

/*
 * After tx_submit took tx (the transport has it, or it is queued): report
 * it now if it completes so (tx_inject_complete) and is not done already
 * (a transport may finish it during the call: then id names nothing).
 */
void tx_taken(struct util_rdm_ep *ep, struct util_rdm_tx *tx,
	      uint64_t id)
{
	if (util_rdm_tx_of(ep, id) != tx || !tx_inject_complete(tx))
		return;
	tx_report(ep, tx, 0);
	tx->reported = true;
}

/* Reserve the CQ slot an operation will report to; -FI_EAGAIN if full. */
int tx_reserve(struct util_rdm_ep *ep, bool comp)
{
	if (!comp)
		return 0;
	return util_ep_cq_reserve(ep->base.tx_cq);
}

void tx_unreserve(struct util_rdm_ep *ep, bool comp)
{
	if (!comp)
		return;
	util_ep_cq_unreserve(ep->base.tx_cq);
}

/* ---- handing transmits to the transport ---------------------------------- */

/*
 * Hand tx to the transport.  Returns 0 when the transport took it (an eager
 * send without acknowledgement is then finished and reported), -FI_EAGAIN
 * when it cannot take it now, or another error (tx untouched).
 */
static int tx_start(struct util_rdm_ep *ep, struct util_rdm_tx *tx)
{
	struct util_rdm_xport *xp = tx->peer->xp;
	const struct util_rdm_transport *tp = xp->ops;
	int ret;

	if (tx->kind == UTIL_RDM_TX_SEND && tx->hdr.len <= xp->eager_max &&
	    !(tx->hdr.flags & UTIL_RDM_ACK_REQ)) {
		/* Something reports it: the transport's word is waited for. */
		if (xp->eager_late && (tx->cq_reserved || tx_cntr(ep, tx)))
			tx->hdr.flags |= UTIL_RDM_LATE;
		ret = tp->send_eager(xp, tx->peer, &tx->hdr, tx->iov, tx->desc,
				     tx->iov_count);
		if (!ret) {
			tx_report(ep, tx, 0);
			tx_put(ep, tx);
		} else if (ret == -FI_EINPROGRESS) {
			tx_wait(ep, tx);
			ret = 0;
		}
		return ret;
	}
	/* Waiting before the hand-off: a transport may finish it at once.
	 * Until the call returns, failing the peer leaves it alone: an
	 * error return keeps it the engine's. */
	tx_wait(ep, tx);
	tx->handing = true;
	if (tx->kind != UTIL_RDM_TX_SEND)
		ret = tp->rma(xp, tx);
	else if (tx->hdr.len <= xp->eager_max)
		ret = tp->send_eager(xp, tx->peer, &tx->hdr, tx->iov, tx->desc,
				     tx->iov_count);
	else
		ret = tp->send_rndv(xp, tx);
	tx->handing = false;
	if (ret)
		tx_unwait(tx);
	return ret;
}

/* Queue tx behind the peer's other transmits, for progress to hand over. */
static void tx_queue(struct util_rdm_ep *ep, struct util_rdm_tx *tx)
{
	struct util_peer *peer = tx->peer;

	/* (An entry on no list links to itself: dlist_empty says so.) */
	if (dlist_empty(&peer->blocked))
		dlist_insert_tail(&peer->blocked, &ep->blocked);
	dlist_insert_tail(&tx->waiting, &peer->queued);
}

/*
 * Whether a transmit that nothing will report (an inject, or a send or
 * write without a completion) may wait in its peer's queue: its caller is
 * told it is sent, so only with every byte it carries copied into the
 * transmit (inject_max at most), never holding the caller's buffer.
 * Reads and fetching atomics put data into the caller's buffer: they
 * never wait unreported.
 */
static inline bool tx_quiet_queueable(const struct util_rdm_ep *ep,
				      const struct util_rdm_tx *tx)
{
	return (tx->kind == UTIL_RDM_TX_SEND ||
		tx->kind == UTIL_RDM_TX_WRITE ||
		tx->kind == UTIL_RDM_TX_ATOMIC) &&
	       tx->hdr.len <= ep->inject_max;
}

/*
 * Start tx now, or queue it when its peer has transmits queued already or
 * the transport says -FI_EAGAIN.  A transmit nothing will report waits
 * only as tx_quiet_queueable allows (else -FI_EAGAIN, tx untouched).
 * Returns 0, or the transport's error (tx untouched).
 */
int tx_submit(struct util_rdm_ep *ep, struct util_rdm_tx *tx)
{
	int ret;

	if (weft_likely(dlist_empty(&tx->peer->queued)) &&
	    !tx_fence_holds(tx)) {
		ret = tx_start(ep, tx);
		if (ret != -FI_EAGAIN)
			return ret;
	}
	if (!tx->cq_reserved && !tx_quiet_queueable(ep, tx))
		return -FI_EAGAIN;
	/* Injected data, and data of a transmit nothing reports, is the
	 * caller's again when we return: it waits in the transmit. */
	if ((tx->flags & FI_INJECT || !tx->cq_reserved) && tx->iov_count &&
	    tx->iov[0].iov_base != tx->inject_buf &&
	    tx->hdr.len <= ep->inject_max) {
		util_iov_copy_from(tx->inject_buf, tx->iov, tx->iov_count, 0,
				   tx->hdr.len);
		tx->iov[0].iov_base = tx->inject_buf;
		tx->iov[0].iov_len = tx->hdr.len;
		tx->iov_count = 1;
		tx->desc[0] = NULL;
	}
	tx_queue(ep, tx);
	return 0;
}

/*
 * Hand over a peer's queued transmits until the transport takes no more,
 * or a fenced one must wait for the transmits before it (tx_fence_holds:
 * it stays at the head, the peer on the blocked list, and the progress
 * after the last of them is done hands it over).  Not again from inside
 * a transport call it makes (a transport that makes room while taking
 * one transmit may say the peer is ready): the head of the queue is in
 * that call, and what follows it must not pass it.  Returns 0 when it
 * ended at a fence having handed nothing over (nothing moved: an idle
 * automatic-progress thread may back off), else 1.
 */
static int peer_drain(struct util_rdm_ep *ep, struct util_peer *peer)
{
	struct util_rdm_tx *tx;
	bool moved = false;
	int ret;

	if (peer->draining)
		return 1;
	peer->draining = true;
	while (!dlist_empty(&peer->queued)) {
		tx = container_of(peer->queued.next, struct util_rdm_tx,
				  waiting);
		if (tx_fence_holds(tx)) {
			peer->draining = false;
			return moved;
		}
		moved = true;
		dlist_remove(&tx->waiting);
		ret = tx_start(ep, tx);
		if (ret == -FI_EAGAIN) {
			dlist_insert_head(&tx->waiting, &peer->queued);
			/* The transport may have failed the peer meanwhile
			 * (and taken it off the list): keep it on. */
			if (dlist_empty(&peer->blocked))
				dlist_insert_tail(&peer->blocked, &ep->blocked);
			peer->draining = false;
			return 1;
		}
		if (ret) {
			tx_report(ep, tx, -ret);
			tx_put(ep, tx);
		}
	}
	dlist_remove(&peer->blocked);
	peer->draining = false;
	return 1;
}

bool util_rdm_tx_queued(const struct util_rdm_ep *ep,
			const struct util_rdm_xport *xp)
{
	const struct dlist_entry *e;

	dlist_foreach(&ep->blocked, e)
		if (container_of(e, struct util_peer, blocked)->xp == xp)
			return true;
	return false;
}

void util_rdm_peer_ready(struct util_rdm_ep *ep, struct util_peer *peer)
{
	peer->gone = false;
	if (!dlist_empty(&peer->queued))
		peer_drain(ep, peer);
}

/*
 * Drain every blocked peer once.  The list is taken aside first: draining
 * one peer may fail another (a transport finding it dead), which takes it
 * off whatever list it is on, so no iterator into the list survives.
 */
int peers_drain(struct util_rdm_ep *ep)
{
	struct dlist_entry work, *e;
	struct util_peer *peer;
	int n = 0;

	dlist_init(&work);
	while ((e = dlist_pop_front(&ep->blocked)))
		dlist_insert_tail(e, &work);
	while ((e = dlist_pop_front(&work))) {
		peer = container_of(e, struct util_peer, blocked);
		dlist_insert_tail(&peer->blocked, &ep->blocked);
		n += peer_drain(ep, peer);
	}
	return n;
}

/* ---- sending ------------------------------------------------------------ */

static ssize_t rdm_send(struct util_rdm_ep *ep, const struct iovec *iov,
			void **desc, size_t count, fi_addr_t dest,
			uint64_t tag, uint64_t data, void *context,
			uint64_t flags, uint32_t op)
{
	uint64_t cq_flags = FI_SEND | (op == UTIL_RDM_TAGGED ? FI_TAGGED : FI_MSG);
	struct util_rdm_hdr hdr = {
		.op = op,
		.flags = (flags & FI_REMOTE_CQ_DATA) ? UTIL_RDM_CQ_DATA : 0,
		.tag = tag,
		.data = data & ep->data_mask,
	};
	struct util_rdm_tx *tx = NULL;
	struct util_peer *peer;
	bool comp;
	ssize_t ret;

	if (weft_unlikely(count > UTIL_RDM_IOV_MAX || (count && !iov)))
		return -FI_EINVAL;
	hdr.len = util_iov_len(iov, count);
	comp = wants_comp(ep->base.tx_selective, flags);

	ep_lock(ep);
	if (weft_unlikely(!ep->base.enabled)) {
		ret = -FI_EOPBADSTATE;
		goto out;
	}
	/* Eager sends copy the buffer during the call: FI_INJECT holds. */
	if ((flags & FI_INJECT) && hdr.len > ep->inject_max) {
		ret = -FI_EINVAL;
		goto out;
	}

	ret = util_peer_get(&ep->peers, dest, &peer);
	if (weft_unlikely(ret))
		goto out;
	/* The quick way: done when copied, no transmit kept.  Not when
	 * the receiver's or the transport's word is waited for
	 * (FI_DELIVERY_COMPLETE; eager_late, tx_start), nor for a fence
	 * that must wait (tx_fence_holds): one test of the flags for the
	 * two that are rare. */
	if (weft_likely(hdr.len <= peer->xp->eager_max &&
			!(weft_unlikely(flags & (UTIL_RDM_DELIVERED |
						 FI_FENCE)) &&
			  ((comp && (flags & UTIL_RDM_DELIVERED)) ||
			   ((flags & FI_FENCE) && peer->nflight))) &&
			!(peer->xp->eager_late &&
			  (comp || ep->base.send_cntr || deferred_cntr(flags))) &&
			dlist_empty(&peer->queued))) {
		ret = tx_reserve(ep, comp);
		if (ret)
			goto out;
		ret = peer->xp->ops->send_eager(peer->xp, peer, &hdr, iov, desc,
						count);
		if (weft_likely(!ret)) {
			util_ep_tx_success(&ep->base, comp, context, cq_flags,
					   weft_unlikely(flags &
							 UTIL_RDM_DEFERRED) ?
						   util_deferred_cntr :
						   ep->base.send_cntr);
			goto out;
		}
		tx_unreserve(ep, comp);
		/* The transport cannot take it now: queue it below, if it
		 * can wait (tx_quiet_queueable: a copy of its data). */
		if (ret != -FI_EAGAIN || (!comp && hdr.len > ep->inject_max))
			goto out;
	} else if (!comp && !dlist_empty(&peer->queued)) {
		/* No completion to report it by: a try at the queue ahead of
		 * it, then it queues with a copy of its data, or is refused
		 * now if it cannot. */
		peer_drain(ep, peer);
		if (!dlist_empty(&peer->queued) && hdr.len > ep->inject_max) {
			ret = -FI_EAGAIN;
			goto out;
		}
	}

	/* Rendezvous, acknowledged, or queued behind its peer's others. */
	tx = tx_get(ep, peer);
	if (!tx) {
		ret = -FI_EAGAIN;
		goto out;
	}
	ret = tx_reserve(ep, comp);
	if (ret)
		goto err_put;
	tx->context = context;
	tx->flags = flags;
	tx->dcntr = deferred_cntr(flags);
	tx->cq_flags = cq_flags;
	tx->dest = dest;
	tx->peer = peer;
	tx->kind = UTIL_RDM_TX_SEND;
	tx->cq_reserved = comp;
	tx->iov_count = count;
	util_iov_assign(tx->iov, iov, count);
	if (desc)
		memcpy(tx->desc, desc, count * sizeof(*desc));
	else
		memset(tx->desc, 0, sizeof(tx->desc));
	tx->hdr = hdr;
	tx->hdr.tx_id = util_rdm_tx_id(ep, tx);
	if (hdr.len <= peer->xp->eager_max && comp &&
	    (flags & UTIL_RDM_DELIVERED))
		tx->hdr.flags |= UTIL_RDM_ACK_REQ;
	ret = tx_submit(ep, tx);
	if (ret)
		goto err_unreserve;
	goto out;

err_unreserve:
	tx_unreserve(ep, comp);
err_put:
	tx_put(ep, tx);
out:
	ep_unlock(ep);
	return ret;
}

ssize_t rdm_msg_send(struct fid_ep *ep_fid, const void *buf, size_t len,
		     void *desc, fi_addr_t dest, void *context)
{
	struct util_rdm_ep *ep = util_rdm_ep_of(ep_fid);
	struct iovec iov = { (void *)buf, len };

	return rdm_send(ep, &iov, &desc, 1, dest, 0, 0, context,
			ep->base.tx_op_flags, UTIL_RDM_MSG);
}

ssize_t rdm_msg_sendv(struct fid_ep *ep_fid, const struct iovec *iov,
		      void **desc, size_t count, fi_addr_t dest,
		      void *context)
{
	struct util_rdm_ep *ep = util_rdm_ep_of(ep_fid);

	return rdm_send(ep, iov, desc, count, dest, 0, 0, context,
			ep->base.tx_op_flags, UTIL_RDM_MSG);
}

ssize_t rdm_msg_sendmsg(struct fid_ep *ep_fid, const struct fi_msg *msg,
			uint64_t flags)
{
	struct util_rdm_ep *ep = util_rdm_ep_of(ep_fid);

	if (weft_unlikely(flags & FI_TRIGGER))
		return util_trigger_msg(&ep->base, ep_fid, FI_OP_SEND, msg,
					flags);
	return rdm_send(ep, msg->msg_iov, msg->desc, msg->iov_count,
			msg->addr, 0, msg->data, msg->context,
			flags, UTIL_RDM_MSG);
}

ssize_t rdm_msg_inject(struct fid_ep *ep_fid, const void *buf,
		       size_t len, fi_addr_t dest)
{
	struct util_rdm_ep *ep = util_rdm_ep_of(ep_fid);
	struct iovec iov = { (void *)buf, len };

	return rdm_send(ep, &iov, NULL, 1, dest, 0, 0, NULL,
			FI_INJECT | RDM_NO_COMPLETION, UTIL_RDM_MSG);
}

ssize_t rdm_msg_senddata(struct fid_ep *ep_fid, const void *buf,
			 size_t len, void *desc, uint64_t data,
			 fi_addr_t dest, void *context)
{
	struct util_rdm_ep *ep = util_rdm_ep_of(ep_fid);
	struct iovec iov = { (void *)buf, len };

	return rdm_send(ep, &iov, &desc, 1, dest, 0, data, context,
			ep->base.tx_op_flags | FI_REMOTE_CQ_DATA, UTIL_RDM_MSG);
}

ssize_t rdm_msg_injectdata(struct fid_ep *ep_fid, const void *buf,
			   size_t len, uint64_t data, fi_addr_t dest)
{
	struct util_rdm_ep *ep = util_rdm_ep_of(ep_fid);
	struct iovec iov = { (void *)buf, len };

	return rdm_send(ep, &iov, NULL, 1, dest, 0, data, NULL,
			FI_INJECT | RDM_NO_COMPLETION | FI_REMOTE_CQ_DATA,
			UTIL_RDM_MSG);
}

ssize_t rdm_tagged_send(struct fid_ep *ep_fid, const void *buf,
			size_t len, void *desc, fi_addr_t dest,
			uint64_t tag, void *context)
{
	struct util_rdm_ep *ep = util_rdm_ep_of(ep_fid);
	struct iovec iov = { (void *)buf, len };

	return rdm_send(ep, &iov, &desc, 1, dest, tag, 0, context,
			ep->base.tx_op_flags, UTIL_RDM_TAGGED);
}

ssize_t rdm_tagged_sendv(struct fid_ep *ep_fid, const struct iovec *iov,
			 void **desc, size_t count, fi_addr_t dest,
			 uint64_t tag, void *context)
{
	struct util_rdm_ep *ep = util_rdm_ep_of(ep_fid);

	return rdm_send(ep, iov, desc, count, dest, tag, 0, context,
			ep->base.tx_op_flags, UTIL_RDM_TAGGED);
}

ssize_t rdm_tagged_sendmsg(struct fid_ep *ep_fid,
			   const struct fi_msg_tagged *msg,
			   uint64_t flags)
{
	struct util_rdm_ep *ep = util_rdm_ep_of(ep_fid);

	if (weft_unlikely(flags & FI_TRIGGER))
		return util_trigger_tagged(&ep->base, ep_fid, FI_OP_TSEND, msg,
					   flags);
	return rdm_send(ep, msg->msg_iov, msg->desc, msg->iov_count,
			msg->addr, msg->tag, msg->data, msg->context,
			flags,
			UTIL_RDM_TAGGED);
}

ssize_t rdm_tagged_inject(struct fid_ep *ep_fid, const void *buf,
			  size_t len, fi_addr_t dest, uint64_t tag)
{
	struct util_rdm_ep *ep = util_rdm_ep_of(ep_fid);
	struct iovec iov = { (void *)buf, len };

	return rdm_send(ep, &iov, NULL, 1, dest, tag, 0, NULL,
			FI_INJECT | RDM_NO_COMPLETION, UTIL_RDM_TAGGED);
}

ssize_t rdm_tagged_senddata(struct fid_ep *ep_fid, const void *buf,
			    size_t len, void *desc, uint64_t data,
			    fi_addr_t dest, uint64_t tag, void *context)
{
	struct util_rdm_ep *ep = util_rdm_ep_of(ep_fid);
	struct iovec iov = { (void *)buf, len };

	return rdm_send(ep, &iov, &desc, 1, dest, tag, data, context,
			ep->base.tx_op_flags | FI_REMOTE_CQ_DATA,
			UTIL_RDM_TAGGED);
}

ssize_t rdm_tagged_injectdata(struct fid_ep *ep_fid, const void *buf,
			      size_t len, uint64_t data,
			      fi_addr_t dest, uint64_t tag)
{
	struct util_rdm_ep *ep = util_rdm_ep_of(ep_fid);
	struct iovec iov = { (void *)buf, len };

	return rdm_send(ep, &iov, NULL, 1, dest, tag, data, NULL,
			FI_INJECT | RDM_NO_COMPLETION | FI_REMOTE_CQ_DATA,
			UTIL_RDM_TAGGED);
}

/* ---- the collectives' own messages ---------------------------------------- */

int util_rdm_coll_send(struct util_rdm_ep *ep, fi_addr_t dest, uint64_t tag,
		       const void *buf, size_t len, int err, void *ctx)
{
	struct util_rdm_tx *tx;
	struct util_peer *peer;
	int ret;

	ret = util_peer_get(&ep->peers, dest, &peer);
	if (ret)
		return ret;
	tx = tx_get(ep, peer);
	if (!tx)
		return -FI_EAGAIN;
	/* Reported (to util_coll_xfer_done): it may wait in its peer's
	 * queue whatever its size, and eager_late transports are waited
	 * for, as for a send with a completion. */
	tx->context = ctx;
	tx->flags = UTIL_RDM_INTERNAL;
	tx->dcntr = NULL;
	tx->cq_flags = 0;
	tx->dest = dest;
	tx->kind = UTIL_RDM_TX_SEND;
	tx->cq_reserved = true;
	tx->iov_count = 1;
	tx->iov[0].iov_base = (void *)buf;
	tx->iov[0].iov_len = len;
	memset(tx->desc, 0, sizeof(tx->desc));
	memset(&tx->hdr, 0, sizeof(tx->hdr));
	tx->hdr.op = UTIL_RDM_COLL;
	tx->hdr.tag = tag;
	tx->hdr.len = len;
	if (weft_unlikely(err)) {
		tx->hdr.flags = UTIL_RDM_CQ_DATA;
		tx->hdr.data = (uint64_t)err;
	}
	tx->hdr.tx_id = util_rdm_tx_id(ep, tx);
	ret = tx_submit(ep, tx);
	if (ret)
		tx_put(ep, tx);
	return ret;
}
