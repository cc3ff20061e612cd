/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The RDM engine (weft/util_rdm.h): endpoint semantics over a transport.
 */
#include "weft/util_rdm.h"

#include <sched.h>
#include <sys/socket.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "weft/ofi.h"

#include "weft/stubs.h"
#include "weft/util_atomic.h"
#include "weft/util_iov.h"
#include "weft/util_mr.h"

#include "util_rdm_priv.h"

#define RDM_DEFAULT_MIN_MULTI_RECV 64

/* ---- small helpers ------------------------------------------------------ */

static void cntr_inc(struct util_cntr *cntr, int err)
{
	if (!cntr)
		return;
	if (err)
		util_cntr_inc_err(cntr);
	else
		util_cntr_inc(cntr);
}


/*
 * Internal op flag of the fi_inject* calls, which never report to the CQ;
 * FI_INJECT alone (fi_sendmsg(FI_INJECT | FI_COMPLETION)) only says the
 * buffer is free on return.  Bit 63 is no OFI op flag.
 */
#define RDM_NO_COMPLETION (1ULL << 63)

/* Whether an operation with these flags reports to the CQ. */
static inline bool wants_comp(bool selective, uint64_t flags)
{
	if (flags & RDM_NO_COMPLETION)
		return false;
	return !selective || (flags & FI_COMPLETION);
}

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
static struct util_rdm_tx *tx_get(struct util_rdm_ep *ep,
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
	}
	return tx;
}

/* The transport holds tx now: it waits on the peer until done. */
static void tx_wait(struct util_rdm_ep *ep, struct util_rdm_tx *tx)
{
	dlist_insert_tail(&tx->waiting, &ep->tx_waiting);
}

static void tx_put(struct util_rdm_ep *ep, struct util_rdm_tx *tx)
{
	tx->peer->ntx--;
	tx->live = false;
	util_bufpool_put(ep->tx_pool, tx);
}

static struct util_cntr *tx_cntr(struct util_rdm_ep *ep,
				 const struct util_rdm_tx *tx)
{
	switch (tx->kind) {
	case UTIL_RDM_TX_SEND:
		return ep->send_cntr;
	case UTIL_RDM_TX_WRITE:
	case UTIL_RDM_TX_ATOMIC:
		return ep->write_cntr;
	default:
		return ep->read_cntr;
	}
}

/* Report a finished transmit: success or error completion, counter. */
static void tx_report(struct util_rdm_ep *ep, struct util_rdm_tx *tx, int err)
{
	struct util_cq *cq = ep->tx_cq;

	if (tx->reported) {
		/* Complete since it was taken (tx_inject_complete); its
		 * caller was told so, and is not told twice. */
		if (err)
			FI_WARN(ep->domain->prov, FI_LOG_EP_DATA,
				"an injected %s to %llu failed after it "
				"completed: %s\n",
				tx->kind == UTIL_RDM_TX_WRITE ? "write" :
								"atomic",
				(unsigned long long)tx->dest,
				fi_strerror(err));
		return;
	}
	/* (No CQ: a scalable endpoint's contexts closed under it, and
	 * their CQ went with them: nobody waits for it.) */
	if (tx->cq_reserved && cq) {
		util_cq_writer_lock(cq);
		if (!err) {
			util_cq_write_reserved(cq, tx->context, tx->cq_flags, 0,
					       NULL, 0, 0, FI_ADDR_NOTAVAIL);
		} else {
			struct fi_cq_err_entry e = {
				.op_context = tx->context,
				.flags = tx->cq_flags,
				.err = err,
				.prov_errno = -err,
			};

			util_cq_unreserve(cq, 1);
			util_cq_write_err(cq, &e);
		}
		util_cq_writer_unlock(cq);
	} else if (err && cq && !(tx->flags & RDM_NO_COMPLETION)) {
		/* Failures are reported even without FI_COMPLETION
		 * (fi_cq(3): selective completion suppresses successes).  An
		 * inject has no context to report: its caller was told it
		 * was sent, and only a bound counter counts the failure. */
		struct fi_cq_err_entry e = {
			.op_context = tx->context,
			.flags = tx->cq_flags,
			.err = err,
			.prov_errno = -err,
		};

		util_cq_writer_lock(cq);
		util_cq_write_err(cq, &e);
		util_cq_writer_unlock(cq);
	}
	cntr_inc(tx_cntr(ep, tx), err);
}

void util_rdm_tx_done(struct util_rdm_ep *ep, struct util_rdm_tx *tx, int err)
{
	dlist_remove(&tx->waiting);
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
		FI_WARN(ep->domain->prov, FI_LOG_EP_DATA,
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
	    (tx->flags & (FI_TRANSMIT_COMPLETE | FI_DELIVERY_COMPLETE)))
		return false;
	return tx->flags & (FI_INJECT_COMPLETE | RDM_NO_COMPLETION);
}

/*
 * After tx_submit took tx (the transport has it, or it is queued): report
 * it now if it completes so (tx_inject_complete) and is not done already
 * (a transport may finish it during the call: then id names nothing).
 */
static void tx_taken(struct util_rdm_ep *ep, struct util_rdm_tx *tx,
		     uint64_t id)
{
	if (util_rdm_tx_of(ep, id) != tx || !tx_inject_complete(tx))
		return;
	tx_report(ep, tx, 0);
	tx->reported = true;
}

/* Reserve the CQ slot an operation will report to; -FI_EAGAIN if full. */
static int tx_reserve(struct util_rdm_ep *ep, bool comp)
{
	int ret;

	if (!comp)
		return 0;
	if (!ep->tx_cq)
		return -FI_ENOCQ;
	util_cq_writer_lock(ep->tx_cq);
	ret = util_cq_reserve(ep->tx_cq, 1);
	util_cq_writer_unlock(ep->tx_cq);
	return ret;
}

static void tx_unreserve(struct util_rdm_ep *ep, bool comp)
{
	if (!comp)
		return;
	util_cq_writer_lock(ep->tx_cq);
	util_cq_unreserve(ep->tx_cq, 1);
	util_cq_writer_unlock(ep->tx_cq);
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
		dlist_remove(&tx->waiting);
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
static int tx_submit(struct util_rdm_ep *ep, struct util_rdm_tx *tx)
{
	int ret;

	if (weft_likely(dlist_empty(&tx->peer->queued))) {
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
 * Hand over a peer's queued transmits until the transport says stop.  Not
 * again from inside a transport call it makes (a transport that makes
 * room while taking one transmit may say the peer is ready): the head of
 * the queue is in that call, and what follows it must not pass it.
 */
static void peer_drain(struct util_rdm_ep *ep, struct util_peer *peer)
{
	struct util_rdm_tx *tx;
	int ret;

	if (peer->draining)
		return;
	peer->draining = true;
	while (!dlist_empty(&peer->queued)) {
		tx = container_of(peer->queued.next, struct util_rdm_tx,
				  waiting);
		dlist_remove(&tx->waiting);
		ret = tx_start(ep, tx);
		if (ret == -FI_EAGAIN) {
			dlist_insert_head(&tx->waiting, &peer->queued);
			/* The transport may have failed the peer meanwhile
			 * (and taken it off the list): keep it on. */
			if (dlist_empty(&peer->blocked))
				dlist_insert_tail(&peer->blocked, &ep->blocked);
			peer->draining = false;
			return;
		}
		if (ret) {
			tx_report(ep, tx, -ret);
			tx_put(ep, tx);
		}
	}
	dlist_remove(&peer->blocked);
	peer->draining = false;
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
static int peers_drain(struct util_rdm_ep *ep)
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
		peer_drain(ep, peer);
		n++;
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
	comp = wants_comp(ep->tx_selective, flags);

	ep_lock(ep);
	if (weft_unlikely(!ep->enabled)) {
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
	 * the transport's word is waited for (eager_late, tx_start). */
	if (weft_likely(hdr.len <= peer->xp->eager_max &&
			!(comp && (flags & FI_DELIVERY_COMPLETE)) &&
			!(peer->xp->eager_late && (comp || ep->send_cntr)) &&
			dlist_empty(&peer->queued))) {
		ret = tx_reserve(ep, comp);
		if (ret)
			goto out;
		ret = peer->xp->ops->send_eager(peer->xp, peer, &hdr, iov, desc,
						count);
		if (weft_likely(!ret)) {
			if (comp) {
				util_cq_writer_lock(ep->tx_cq);
				util_cq_write_reserved(ep->tx_cq, context,
						       cq_flags, 0, NULL, 0, 0,
						       FI_ADDR_NOTAVAIL);
				util_cq_writer_unlock(ep->tx_cq);
			}
			cntr_inc(ep->send_cntr, 0);
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
	    (flags & FI_DELIVERY_COMPLETE))
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

static ssize_t rdm_msg_send(struct fid_ep *ep_fid, const void *buf, size_t len,
			    void *desc, fi_addr_t dest, void *context)
{
	struct util_rdm_ep *ep = util_rdm_ep_of(ep_fid);
	struct iovec iov = { (void *)buf, len };

	return rdm_send(ep, &iov, &desc, 1, dest, 0, 0, context,
			ep->tx_op_flags, UTIL_RDM_MSG);
}

static ssize_t rdm_msg_sendv(struct fid_ep *ep_fid, const struct iovec *iov,
			     void **desc, size_t count, fi_addr_t dest,
			     void *context)
{
	struct util_rdm_ep *ep = util_rdm_ep_of(ep_fid);

	return rdm_send(ep, iov, desc, count, dest, 0, 0, context,
			ep->tx_op_flags, UTIL_RDM_MSG);
}

static ssize_t rdm_msg_sendmsg(struct fid_ep *ep_fid, const struct fi_msg *msg,
			       uint64_t flags)
{
	struct util_rdm_ep *ep = util_rdm_ep_of(ep_fid);

	return rdm_send(ep, msg->msg_iov, msg->desc, msg->iov_count,
			msg->addr, 0, msg->data, msg->context,
			flags, UTIL_RDM_MSG);
}

static ssize_t rdm_msg_inject(struct fid_ep *ep_fid, const void *buf,
			      size_t len, fi_addr_t dest)
{
	struct util_rdm_ep *ep = util_rdm_ep_of(ep_fid);
	struct iovec iov = { (void *)buf, len };

	return rdm_send(ep, &iov, NULL, 1, dest, 0, 0, NULL,
			FI_INJECT | RDM_NO_COMPLETION, UTIL_RDM_MSG);
}

static ssize_t rdm_msg_senddata(struct fid_ep *ep_fid, const void *buf,
				size_t len, void *desc, uint64_t data,
				fi_addr_t dest, void *context)
{
	struct util_rdm_ep *ep = util_rdm_ep_of(ep_fid);
	struct iovec iov = { (void *)buf, len };

	return rdm_send(ep, &iov, &desc, 1, dest, 0, data, context,
			ep->tx_op_flags | FI_REMOTE_CQ_DATA, UTIL_RDM_MSG);
}

static ssize_t rdm_msg_injectdata(struct fid_ep *ep_fid, const void *buf,
				  size_t len, uint64_t data, fi_addr_t dest)
{
	struct util_rdm_ep *ep = util_rdm_ep_of(ep_fid);
	struct iovec iov = { (void *)buf, len };

	return rdm_send(ep, &iov, NULL, 1, dest, 0, data, NULL,
			FI_INJECT | RDM_NO_COMPLETION | FI_REMOTE_CQ_DATA,
			UTIL_RDM_MSG);
}

static ssize_t rdm_tagged_send(struct fid_ep *ep_fid, const void *buf,
			       size_t len, void *desc, fi_addr_t dest,
			       uint64_t tag, void *context)
{
	struct util_rdm_ep *ep = util_rdm_ep_of(ep_fid);
	struct iovec iov = { (void *)buf, len };

	return rdm_send(ep, &iov, &desc, 1, dest, tag, 0, context,
			ep->tx_op_flags, UTIL_RDM_TAGGED);
}

static ssize_t rdm_tagged_sendv(struct fid_ep *ep_fid, const struct iovec *iov,
				void **desc, size_t count, fi_addr_t dest,
				uint64_t tag, void *context)
{
	struct util_rdm_ep *ep = util_rdm_ep_of(ep_fid);

	return rdm_send(ep, iov, desc, count, dest, tag, 0, context,
			ep->tx_op_flags, UTIL_RDM_TAGGED);
}

static ssize_t rdm_tagged_sendmsg(struct fid_ep *ep_fid,
				  const struct fi_msg_tagged *msg,
				  uint64_t flags)
{
	struct util_rdm_ep *ep = util_rdm_ep_of(ep_fid);

	return rdm_send(ep, msg->msg_iov, msg->desc, msg->iov_count,
			msg->addr, msg->tag, msg->data, msg->context,
			flags,
			UTIL_RDM_TAGGED);
}

static ssize_t rdm_tagged_inject(struct fid_ep *ep_fid, const void *buf,
				 size_t len, fi_addr_t dest, uint64_t tag)
{
	struct util_rdm_ep *ep = util_rdm_ep_of(ep_fid);
	struct iovec iov = { (void *)buf, len };

	return rdm_send(ep, &iov, NULL, 1, dest, tag, 0, NULL,
			FI_INJECT | RDM_NO_COMPLETION, UTIL_RDM_TAGGED);
}

static ssize_t rdm_tagged_senddata(struct fid_ep *ep_fid, const void *buf,
				   size_t len, void *desc, uint64_t data,
				   fi_addr_t dest, uint64_t tag, void *context)
{
	struct util_rdm_ep *ep = util_rdm_ep_of(ep_fid);
	struct iovec iov = { (void *)buf, len };

	return rdm_send(ep, &iov, &desc, 1, dest, tag, data, context,
			ep->tx_op_flags | FI_REMOTE_CQ_DATA, UTIL_RDM_TAGGED);
}

static ssize_t rdm_tagged_injectdata(struct fid_ep *ep_fid, const void *buf,
				     size_t len, uint64_t data,
				     fi_addr_t dest, uint64_t tag)
{
	struct util_rdm_ep *ep = util_rdm_ep_of(ep_fid);
	struct iovec iov = { (void *)buf, len };

	return rdm_send(ep, &iov, NULL, 1, dest, tag, data, NULL,
			FI_INJECT | RDM_NO_COMPLETION | FI_REMOTE_CQ_DATA,
			UTIL_RDM_TAGGED);
}

/* ---- RMA ---------------------------------------------------------------- */

static ssize_t rdm_rma(struct util_rdm_ep *ep, uint32_t kind,
		       const struct iovec *iov, void **desc, size_t count,
		       fi_addr_t addr, const struct fi_rma_iov *rma,
		       size_t rma_count, void *context, uint64_t data,
		       uint64_t flags)
{
	const struct util_rdm_transport *tp = ep->xp->ops;
	struct util_rdm_tx *tx;
	struct util_peer *peer;
	size_t len, rlen = 0, i;
	uint64_t id;
	bool comp;
	ssize_t ret;

	if (!tp->rma || !(ep->caps & FI_RMA))
		return -FI_EOPNOTSUPP;
	if (count > UTIL_RDM_IOV_MAX || rma_count > UTIL_RDM_IOV_MAX ||
	    !rma_count || (count && !iov) || !rma)
		return -FI_EINVAL;
	len = util_iov_len(iov, count);
	for (i = 0; i < rma_count; i++) {
		/* No remote range wraps the address space: no target has
		 * such memory, and a transport's peer takes such a request
		 * for a broken one (tcp ends the connection). */
		if (rma[i].len > UINT64_MAX - rma[i].addr)
			return -FI_EINVAL;
		rlen += rma[i].len;
	}
	if (len != rlen)
		return -FI_EINVAL;
	if ((flags & FI_INJECT) && (kind != UTIL_RDM_TX_WRITE ||
				    len > ep->inject_max))
		return -FI_EINVAL;
	comp = wants_comp(ep->tx_selective, flags);

	ep_lock(ep);
	if (weft_unlikely(!ep->enabled)) {
		ret = -FI_EOPBADSTATE;
		goto out;
	}
	ret = util_peer_get(&ep->peers, addr, &peer);
	if (weft_unlikely(ret))
		goto out;
	tx = tx_get(ep, peer);
	if (!tx) {
		ret = -FI_EAGAIN;
		goto out;
	}
	ret = tx_reserve(ep, comp);
	if (ret)
		goto err_put;
	memset(&tx->hdr, 0, sizeof(tx->hdr));
	tx->peer = peer;
	tx->context = context;
	tx->flags = flags;
	tx->cq_flags = FI_RMA | (kind == UTIL_RDM_TX_READ ? FI_READ : FI_WRITE);
	tx->dest = addr;
	tx->kind = kind;
	tx->cq_reserved = comp;
	tx->hdr.flags = (flags & FI_REMOTE_CQ_DATA) ? UTIL_RDM_CQ_DATA : 0;
	tx->hdr.data = data & ep->data_mask;
	tx->hdr.len = len;
	tx->hdr.tx_id = util_rdm_tx_id(ep, tx);
	tx->rma_count = rma_count;
	memcpy(tx->rma_iov, rma, rma_count * sizeof(*rma));
	tx->res_count = tx->cmp_count = 0;
	if (flags & FI_INJECT) {
		/* The buffer is the caller's again when we return. */
		util_iov_slice(iov, count, 0, len, tx->iov);
		for (i = 0, rlen = 0; i < count; i++) {
			memcpy(tx->inject_buf + rlen, iov[i].iov_base,
			       iov[i].iov_len);
			rlen += iov[i].iov_len;
		}
		tx->iov[0].iov_base = tx->inject_buf;
		tx->iov[0].iov_len = len;
		tx->iov_count = 1;
	} else {
		tx->iov_count = count;
		util_iov_assign(tx->iov, iov, count);
		if (desc)
			memcpy(tx->desc, desc, count * sizeof(*desc));
		else
			memset(tx->desc, 0, sizeof(tx->desc));
	}
	id = tx->hdr.tx_id;
	ret = tx_submit(ep, tx);
	if (!ret) {
		tx_taken(ep, tx, id);
		goto out;
	}
	tx_unreserve(ep, comp);
err_put:
	tx_put(ep, tx);
out:
	ep_unlock(ep);
	return ret;
}

static ssize_t rdm_read(struct fid_ep *ep_fid, void *buf, size_t len,
			void *desc, fi_addr_t src, uint64_t addr, uint64_t key,
			void *context)
{
	struct util_rdm_ep *ep = util_rdm_ep_of(ep_fid);
	struct iovec iov = { buf, len };
	struct fi_rma_iov rma = { addr, len, key };

	return rdm_rma(ep, UTIL_RDM_TX_READ, &iov, &desc, 1, src, &rma, 1,
		       context, 0, ep->tx_op_flags);
}

static ssize_t rdm_readv(struct fid_ep *ep_fid, const struct iovec *iov,
			 void **desc, size_t count, fi_addr_t src,
			 uint64_t addr, uint64_t key, void *context)
{
	struct util_rdm_ep *ep = util_rdm_ep_of(ep_fid);
	struct fi_rma_iov rma = { addr, util_iov_len(iov, count), key };

	return rdm_rma(ep, UTIL_RDM_TX_READ, iov, desc, count, src, &rma, 1,
		       context, 0, ep->tx_op_flags);
}

static ssize_t rdm_readmsg(struct fid_ep *ep_fid, const struct fi_msg_rma *msg,
			   uint64_t flags)
{
	struct util_rdm_ep *ep = util_rdm_ep_of(ep_fid);

	return rdm_rma(ep, UTIL_RDM_TX_READ, msg->msg_iov, msg->desc,
		       msg->iov_count, msg->addr, msg->rma_iov,
		       msg->rma_iov_count, msg->context, msg->data,
		       flags);
}

static ssize_t rdm_write(struct fid_ep *ep_fid, const void *buf, size_t len,
			 void *desc, fi_addr_t dest, uint64_t addr,
			 uint64_t key, void *context)
{
	struct util_rdm_ep *ep = util_rdm_ep_of(ep_fid);
	struct iovec iov = { (void *)buf, len };
	struct fi_rma_iov rma = { addr, len, key };

	return rdm_rma(ep, UTIL_RDM_TX_WRITE, &iov, &desc, 1, dest, &rma, 1,
		       context, 0, ep->tx_op_flags);
}

static ssize_t rdm_writev(struct fid_ep *ep_fid, const struct iovec *iov,
			  void **desc, size_t count, fi_addr_t dest,
			  uint64_t addr, uint64_t key, void *context)
{
	struct util_rdm_ep *ep = util_rdm_ep_of(ep_fid);
	struct fi_rma_iov rma = { addr, util_iov_len(iov, count), key };

	return rdm_rma(ep, UTIL_RDM_TX_WRITE, iov, desc, count, dest, &rma, 1,
		       context, 0, ep->tx_op_flags);
}

static ssize_t rdm_writemsg(struct fid_ep *ep_fid,
			    const struct fi_msg_rma *msg, uint64_t flags)
{
	struct util_rdm_ep *ep = util_rdm_ep_of(ep_fid);

	return rdm_rma(ep, UTIL_RDM_TX_WRITE, msg->msg_iov, msg->desc,
		       msg->iov_count, msg->addr, msg->rma_iov,
		       msg->rma_iov_count, msg->context, msg->data,
		       flags);
}

static ssize_t rdm_inject_write(struct fid_ep *ep_fid, const void *buf,
				size_t len, fi_addr_t dest, uint64_t addr,
				uint64_t key)
{
	struct util_rdm_ep *ep = util_rdm_ep_of(ep_fid);
	struct iovec iov = { (void *)buf, len };
	struct fi_rma_iov rma = { addr, len, key };

	return rdm_rma(ep, UTIL_RDM_TX_WRITE, &iov, NULL, 1, dest, &rma, 1,
		       NULL, 0, FI_INJECT | RDM_NO_COMPLETION);
}

static ssize_t rdm_writedata(struct fid_ep *ep_fid, const void *buf,
			     size_t len, void *desc, uint64_t data,
			     fi_addr_t dest, uint64_t addr, uint64_t key,
			     void *context)
{
	struct util_rdm_ep *ep = util_rdm_ep_of(ep_fid);
	struct iovec iov = { (void *)buf, len };
	struct fi_rma_iov rma = { addr, len, key };

	return rdm_rma(ep, UTIL_RDM_TX_WRITE, &iov, &desc, 1, dest, &rma, 1,
		       context, data, ep->tx_op_flags | FI_REMOTE_CQ_DATA);
}

static ssize_t rdm_inject_writedata(struct fid_ep *ep_fid, const void *buf,
				    size_t len, uint64_t data, fi_addr_t dest,
				    uint64_t addr, uint64_t key)
{
	struct util_rdm_ep *ep = util_rdm_ep_of(ep_fid);
	struct iovec iov = { (void *)buf, len };
	struct fi_rma_iov rma = { addr, len, key };

	return rdm_rma(ep, UTIL_RDM_TX_WRITE, &iov, NULL, 1, dest, &rma, 1,
		       NULL, data,
		       FI_INJECT | RDM_NO_COMPLETION | FI_REMOTE_CQ_DATA);
}

struct fi_ops_rma util_rdm_rma_ops = {
	.size = sizeof(struct fi_ops_rma),
	.read = rdm_read,
	.readv = rdm_readv,
	.readmsg = rdm_readmsg,
	.write = rdm_write,
	.writev = rdm_writev,
	.writemsg = rdm_writemsg,
	.inject = rdm_inject_write,
	.writedata = rdm_writedata,
	.injectdata = rdm_inject_writedata,
};

/* ---- atomics ------------------------------------------------------------ */

/* fi_ioc vectors as byte iovecs; returns the element count, or -1. */
static ssize_t ioc_to_iov(const struct fi_ioc *ioc, size_t count,
			  size_t elem, struct iovec *iov)
{
	size_t i, n = 0;

	if (count > UTIL_RDM_IOV_MAX || (count && !ioc))
		return -1;
	for (i = 0; i < count; i++) {
		iov[i].iov_base = ioc[i].addr;
		iov[i].iov_len = ioc[i].count * elem;
		n += ioc[i].count;
	}
	return (ssize_t)n;
}

struct rdm_atomic_args {
	uint32_t kind;
	const struct fi_ioc *iov;
	void **desc;
	size_t count;
	const struct fi_ioc *cmp;
	size_t cmp_count;
	struct fi_ioc *res;
	size_t res_count;
	fi_addr_t addr;
	const struct fi_rma_ioc *rma;
	size_t rma_count;
	enum fi_datatype datatype;
	enum fi_op op;
	void *context;
	uint64_t data;
	uint64_t flags;
};

static enum util_atomic_class atomic_class(uint32_t kind)
{
	return kind == UTIL_RDM_TX_ATOMIC	 ? UTIL_ATOMIC_BASE :
	       kind == UTIL_RDM_TX_FETCH_ATOMIC ? UTIL_ATOMIC_FETCH :
						  UTIL_ATOMIC_COMPARE;
}

static ssize_t rdm_atomic(struct util_rdm_ep *ep,
			  const struct rdm_atomic_args *a)
{
	const struct util_rdm_transport *tp = ep->xp->ops;
	size_t elem = util_atomic_dt_size(a->datatype), i, rcount = 0;
	ssize_t n, ncmp = 0, nres = 0;
	struct util_rdm_tx *tx;
	struct util_peer *peer;
	uint64_t id;
	bool comp;
	ssize_t ret;

	if (!tp->rma || !(ep->caps & FI_ATOMIC))
		return -FI_EOPNOTSUPP;
	if (!util_atomic_valid(a->op, a->datatype, atomic_class(a->kind)))
		return -FI_EOPNOTSUPP;
	if (!a->rma_count || a->rma_count > UTIL_RDM_IOV_MAX || !a->rma)
		return -FI_EINVAL;
	for (i = 0; i < a->rma_count; i++) {
		/* No wrapping target (as in rdm_rma). */
		if (elem && a->rma[i].count > (UINT64_MAX - a->rma[i].addr) / elem)
			return -FI_EINVAL;
		rcount += a->rma[i].count;
	}

	ep_lock(ep);
	if (weft_unlikely(!ep->enabled)) {
		ret = -FI_EOPBADSTATE;
		goto out;
	}
	ret = util_peer_get(&ep->peers, a->addr, &peer);
	if (weft_unlikely(ret))
		goto out;
	tx = tx_get(ep, peer);
	if (!tx) {
		ret = -FI_EAGAIN;
		goto out;
	}
	n = a->op == FI_ATOMIC_READ && !a->iov ?
		    (ssize_t)rcount :
		    ioc_to_iov(a->iov, a->count, elem, tx->iov);
	if (a->kind == UTIL_RDM_TX_COMPARE_ATOMIC)
		ncmp = ioc_to_iov(a->cmp, a->cmp_count, elem, tx->cmp_iov);
	if (a->kind != UTIL_RDM_TX_ATOMIC)
		nres = ioc_to_iov(a->res, a->res_count, elem, tx->res_iov);
	if (n < 0 || ncmp < 0 || nres < 0 || (size_t)n != rcount || !rcount ||
	    (a->kind == UTIL_RDM_TX_COMPARE_ATOMIC && ncmp != n) ||
	    (a->kind != UTIL_RDM_TX_ATOMIC && nres != n) ||
	    rcount * elem > ep->atomic_max) {
		ret = -FI_EINVAL;
		goto err_put;
	}
	comp = wants_comp(ep->tx_selective, a->flags);
	ret = tx_reserve(ep, comp);
	if (ret)
		goto err_put;
	memset(&tx->hdr, 0, sizeof(tx->hdr));
	tx->context = a->context;
	tx->flags = a->flags;
	tx->cq_flags = FI_ATOMIC |
		       (a->kind == UTIL_RDM_TX_ATOMIC ? FI_WRITE : FI_READ);
	tx->dest = a->addr;
	tx->peer = peer;
	tx->kind = a->kind;
	tx->cq_reserved = comp;
	tx->atomic_op = a->op;
	tx->datatype = a->datatype;
	tx->hdr.flags = (a->flags & FI_REMOTE_CQ_DATA) ? UTIL_RDM_CQ_DATA : 0;
	tx->hdr.data = a->data & ep->data_mask;
	tx->hdr.len = rcount * elem;
	tx->hdr.tx_id = util_rdm_tx_id(ep, tx);
	/* FI_ATOMIC_READ reads no operand, even where one is named (Sandia
	 * OpenSHMEM names one at address NULL): nothing copies it. */
	tx->iov_count = a->op == FI_ATOMIC_READ ? 0 : a->count;
	tx->cmp_count = a->kind == UTIL_RDM_TX_COMPARE_ATOMIC ? a->cmp_count : 0;
	tx->res_count = a->kind != UTIL_RDM_TX_ATOMIC ? a->res_count : 0;
	tx->rma_count = a->rma_count;
	for (i = 0; i < a->rma_count; i++) {
		tx->rma_iov[i].addr = a->rma[i].addr;
		tx->rma_iov[i].len = a->rma[i].count * elem;
		tx->rma_iov[i].key = a->rma[i].key;
	}
	memset(tx->desc, 0, sizeof(tx->desc));
	/* FI_INJECT names the operand's buffer: FI_ATOMIC_READ has none. */
	if ((a->flags & FI_INJECT) && tx->iov_count &&
	    tx->hdr.len > ep->inject_max) {
		ret = -FI_EINVAL;
		goto err_unreserve;
	}
	if ((a->flags & FI_INJECT) && tx->iov_count) {
		/* The operand is the caller's again when we return. */
		util_iov_copy_from(tx->inject_buf, tx->iov, tx->iov_count, 0,
				   tx->hdr.len);
		tx->iov[0].iov_base = tx->inject_buf;
		tx->iov[0].iov_len = tx->hdr.len;
		tx->iov_count = 1;
	}
	id = tx->hdr.tx_id;
	ret = tx_submit(ep, tx);
	if (!ret) {
		tx_taken(ep, tx, id);
		goto out;
	}
err_unreserve:
	tx_unreserve(ep, comp);
err_put:
	tx_put(ep, tx);
out:
	ep_unlock(ep);
	return ret;
}

static ssize_t rdm_atomic_write(struct fid_ep *ep_fid, const void *buf,
				size_t count, void *desc, fi_addr_t dest,
				uint64_t addr, uint64_t key,
				enum fi_datatype datatype, enum fi_op op,
				void *context)
{
	struct util_rdm_ep *ep = util_rdm_ep_of(ep_fid);
	struct fi_ioc ioc = { (void *)buf, count };
	struct fi_rma_ioc rma = { addr, count, key };
	struct rdm_atomic_args a = {
		.kind = UTIL_RDM_TX_ATOMIC, .iov = &ioc, .desc = &desc,
		.count = 1, .addr = dest, .rma = &rma, .rma_count = 1,
		.datatype = datatype, .op = op, .context = context,
		.flags = ep->tx_op_flags,
	};

	return rdm_atomic(ep, &a);
}

static ssize_t rdm_atomic_writev(struct fid_ep *ep_fid,
				 const struct fi_ioc *iov, void **desc,
				 size_t count, fi_addr_t dest, uint64_t addr,
				 uint64_t key, enum fi_datatype datatype,
				 enum fi_op op, void *context)
{
	struct util_rdm_ep *ep = util_rdm_ep_of(ep_fid);
	struct fi_rma_ioc rma = { addr, 0, key };
	struct rdm_atomic_args a = {
		.kind = UTIL_RDM_TX_ATOMIC, .iov = iov, .desc = desc,
		.count = count, .addr = dest, .rma = &rma, .rma_count = 1,
		.datatype = datatype, .op = op, .context = context,
		.flags = ep->tx_op_flags,
	};
	size_t i;

	for (i = 0; iov && i < count; i++)
		rma.count += iov[i].count;
	return rdm_atomic(ep, &a);
}

static ssize_t rdm_atomic_writemsg(struct fid_ep *ep_fid,
				   const struct fi_msg_atomic *msg,
				   uint64_t flags)
{
	struct util_rdm_ep *ep = util_rdm_ep_of(ep_fid);
	struct rdm_atomic_args a = {
		.kind = UTIL_RDM_TX_ATOMIC, .iov = msg->msg_iov,
		.desc = msg->desc, .count = msg->iov_count, .addr = msg->addr,
		.rma = msg->rma_iov, .rma_count = msg->rma_iov_count,
		.datatype = msg->datatype, .op = msg->op,
		.context = msg->context, .data = msg->data,
		.flags = flags,
	};

	return rdm_atomic(ep, &a);
}

static ssize_t rdm_atomic_inject(struct fid_ep *ep_fid, const void *buf,
				 size_t count, fi_addr_t dest, uint64_t addr,
				 uint64_t key, enum fi_datatype datatype,
				 enum fi_op op)
{
	struct util_rdm_ep *ep = util_rdm_ep_of(ep_fid);
	struct fi_ioc ioc = { (void *)buf, count };
	struct fi_rma_ioc rma = { addr, count, key };
	struct rdm_atomic_args a = {
		.kind = UTIL_RDM_TX_ATOMIC, .iov = &ioc, .count = 1,
		.addr = dest, .rma = &rma, .rma_count = 1,
		.datatype = datatype, .op = op,
		.flags = FI_INJECT | RDM_NO_COMPLETION,
	};

	return rdm_atomic(ep, &a);
}

static ssize_t rdm_atomic_readwrite(struct fid_ep *ep_fid, const void *buf,
				    size_t count, void *desc, void *result,
				    void *result_desc, fi_addr_t dest,
				    uint64_t addr, uint64_t key,
				    enum fi_datatype datatype, enum fi_op op,
				    void *context)
{
	struct util_rdm_ep *ep = util_rdm_ep_of(ep_fid);
	struct fi_ioc ioc = { (void *)buf, count };
	struct fi_ioc res = { result, count };
	struct fi_rma_ioc rma = { addr, count, key };
	struct rdm_atomic_args a = {
		.kind = UTIL_RDM_TX_FETCH_ATOMIC, .iov = buf ? &ioc : NULL,
		.desc = &desc, .count = 1, .res = &res, .res_count = 1,
		.addr = dest, .rma = &rma, .rma_count = 1,
		.datatype = datatype, .op = op, .context = context,
		.flags = ep->tx_op_flags,
	};

	return rdm_atomic(ep, &a);
}

static ssize_t rdm_atomic_readwritev(struct fid_ep *ep_fid,
				     const struct fi_ioc *iov, void **desc,
				     size_t count, struct fi_ioc *resultv,
				     void **result_desc, size_t result_count,
				     fi_addr_t dest, uint64_t addr,
				     uint64_t key, enum fi_datatype datatype,
				     enum fi_op op, void *context)
{
	struct util_rdm_ep *ep = util_rdm_ep_of(ep_fid);
	struct fi_rma_ioc rma = { addr, 0, key };
	struct rdm_atomic_args a = {
		.kind = UTIL_RDM_TX_FETCH_ATOMIC, .iov = iov, .desc = desc,
		.count = count, .res = resultv, .res_count = result_count,
		.addr = dest, .rma = &rma, .rma_count = 1,
		.datatype = datatype, .op = op, .context = context,
		.flags = ep->tx_op_flags,
	};
	size_t i;

	for (i = 0; resultv && i < result_count; i++)
		rma.count += resultv[i].count;
	return rdm_atomic(ep, &a);
}

static ssize_t rdm_atomic_readwritemsg(struct fid_ep *ep_fid,
				       const struct fi_msg_atomic *msg,
				       struct fi_ioc *resultv,
				       void **result_desc, size_t result_count,
				       uint64_t flags)
{
	struct util_rdm_ep *ep = util_rdm_ep_of(ep_fid);
	struct rdm_atomic_args a = {
		.kind = UTIL_RDM_TX_FETCH_ATOMIC, .iov = msg->msg_iov,
		.desc = msg->desc, .count = msg->iov_count, .res = resultv,
		.res_count = result_count, .addr = msg->addr,
		.rma = msg->rma_iov, .rma_count = msg->rma_iov_count,
		.datatype = msg->datatype, .op = msg->op,
		.context = msg->context, .data = msg->data,
		.flags = flags,
	};

	return rdm_atomic(ep, &a);
}

static ssize_t rdm_atomic_compwrite(struct fid_ep *ep_fid, const void *buf,
				    size_t count, void *desc,
				    const void *compare, void *compare_desc,
				    void *result, void *result_desc,
				    fi_addr_t dest, uint64_t addr, uint64_t key,
				    enum fi_datatype datatype, enum fi_op op,
				    void *context)
{
	struct util_rdm_ep *ep = util_rdm_ep_of(ep_fid);
	struct fi_ioc ioc = { (void *)buf, count };
	struct fi_ioc cmp = { (void *)compare, count };
	struct fi_ioc res = { result, count };
	struct fi_rma_ioc rma = { addr, count, key };
	struct rdm_atomic_args a = {
		.kind = UTIL_RDM_TX_COMPARE_ATOMIC, .iov = &ioc,
		.desc = &desc, .count = 1, .cmp = &cmp, .cmp_count = 1,
		.res = &res, .res_count = 1, .addr = dest, .rma = &rma,
		.rma_count = 1, .datatype = datatype, .op = op,
		.context = context, .flags = ep->tx_op_flags,
	};

	return rdm_atomic(ep, &a);
}

static ssize_t rdm_atomic_compwritev(struct fid_ep *ep_fid,
				     const struct fi_ioc *iov, void **desc,
				     size_t count, const struct fi_ioc *comparev,
				     void **compare_desc, size_t compare_count,
				     struct fi_ioc *resultv,
				     void **result_desc, size_t result_count,
				     fi_addr_t dest, uint64_t addr,
				     uint64_t key, enum fi_datatype datatype,
				     enum fi_op op, void *context)
{
	struct util_rdm_ep *ep = util_rdm_ep_of(ep_fid);
	struct fi_rma_ioc rma = { addr, 0, key };
	struct rdm_atomic_args a = {
		.kind = UTIL_RDM_TX_COMPARE_ATOMIC, .iov = iov, .desc = desc,
		.count = count, .cmp = comparev, .cmp_count = compare_count,
		.res = resultv, .res_count = result_count, .addr = dest,
		.rma = &rma, .rma_count = 1, .datatype = datatype, .op = op,
		.context = context, .flags = ep->tx_op_flags,
	};
	size_t i;

	for (i = 0; iov && i < count; i++)
		rma.count += iov[i].count;
	return rdm_atomic(ep, &a);
}

static ssize_t rdm_atomic_compwritemsg(struct fid_ep *ep_fid,
				       const struct fi_msg_atomic *msg,
				       const struct fi_ioc *comparev,
				       void **compare_desc,
				       size_t compare_count,
				       struct fi_ioc *resultv,
				       void **result_desc, size_t result_count,
				       uint64_t flags)
{
	struct util_rdm_ep *ep = util_rdm_ep_of(ep_fid);
	struct rdm_atomic_args a = {
		.kind = UTIL_RDM_TX_COMPARE_ATOMIC, .iov = msg->msg_iov,
		.desc = msg->desc, .count = msg->iov_count, .cmp = comparev,
		.cmp_count = compare_count, .res = resultv,
		.res_count = result_count, .addr = msg->addr,
		.rma = msg->rma_iov, .rma_count = msg->rma_iov_count,
		.datatype = msg->datatype, .op = msg->op,
		.context = msg->context, .data = msg->data,
		.flags = flags,
	};

	return rdm_atomic(ep, &a);
}

static int rdm_atomic_valid(struct fid_ep *ep_fid, enum fi_datatype datatype,
			    enum fi_op op, uint64_t flags, size_t *count)
{
	struct util_rdm_ep *ep = util_rdm_ep_of(ep_fid);
	struct fi_atomic_attr attr;
	int ret;

	if (!ep->xp->ops->rma || !(ep->caps & FI_ATOMIC))
		return -FI_EOPNOTSUPP;
	if (ep->hooks && ep->hooks->atomic_valid)
		return ep->hooks->atomic_valid(ep, datatype, op, flags, count);
	ret = util_atomic_query(datatype, op, ep->atomic_max, flags,
				&attr);
	if (!ret && count)
		*count = attr.count;
	return ret;
}

static int rdm_atomic_writevalid(struct fid_ep *ep_fid,
				 enum fi_datatype datatype, enum fi_op op,
				 size_t *count)
{
	return rdm_atomic_valid(ep_fid, datatype, op, 0, count);
}

static int rdm_atomic_readwritevalid(struct fid_ep *ep_fid,
				     enum fi_datatype datatype, enum fi_op op,
				     size_t *count)
{
	return rdm_atomic_valid(ep_fid, datatype, op, FI_FETCH_ATOMIC, count);
}

static int rdm_atomic_compwritevalid(struct fid_ep *ep_fid,
				     enum fi_datatype datatype, enum fi_op op,
				     size_t *count)
{
	return rdm_atomic_valid(ep_fid, datatype, op, FI_COMPARE_ATOMIC,
				count);
}

struct fi_ops_atomic util_rdm_atomic_ops = {
	.size = sizeof(struct fi_ops_atomic),
	.write = rdm_atomic_write,
	.writev = rdm_atomic_writev,
	.writemsg = rdm_atomic_writemsg,
	.inject = rdm_atomic_inject,
	.readwrite = rdm_atomic_readwrite,
	.readwritev = rdm_atomic_readwritev,
	.readwritemsg = rdm_atomic_readwritemsg,
	.compwrite = rdm_atomic_compwrite,
	.compwritev = rdm_atomic_compwritev,
	.compwritemsg = rdm_atomic_compwritemsg,
	.writevalid = rdm_atomic_writevalid,
	.readwritevalid = rdm_atomic_readwritevalid,
	.compwritevalid = rdm_atomic_compwritevalid,
};

/* ---- receive completions ------------------------------------------------ */

static fi_addr_t report_src(struct util_rdm_ep *ep, fi_addr_t src)
{
	if (src == FI_ADDR_NOTAVAIL || !ep->av)
		return FI_ADDR_NOTAVAIL;
	return util_av_user_id(ep->av, src);
}

/*
 * Write the completion of one delivered receive (or slice of a multi-recv
 * buffer) and release the request when it is finished.
 */
static void rx_complete(struct util_rdm_ep *ep, struct util_rdm_rx *rx,
			const struct util_match_result *res, uint64_t tag,
			uint64_t data, uint32_t msg_flags, fi_addr_t src,
			const void *src_raw, size_t src_raw_len, int err)
{
	struct util_cq *cq = ep->rx_cq;
	uint64_t flags = rx->cq_flags;
	bool multi = rx->m.flags & FI_MULTI_RECV;
	void *buf;
	bool done;

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
	if (!err && src == FI_ADDR_NOTAVAIL && (ep->caps & FI_SOURCE_ERR) &&
	    src_raw)
		err = FI_EADDRNOTAVAIL;

	if (cq && (err || wants_comp(ep->rx_selective, rx->flags))) {
		util_cq_writer_lock(cq);
		if (!err) {
			util_cq_write(cq, rx->m.context, flags, res->len, buf,
				      data, tag, report_src(ep, src));
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
			util_cq_write_err(cq, &e);
		}
		util_cq_writer_unlock(cq);
	}
	cntr_inc(ep->recv_cntr, err && err != FI_EADDRNOTAVAIL);
	if (done)
		util_bufpool_put(ep->rx_pool, rx);
}

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

void util_rdm_fetch_done(struct util_rdm_ep *ep, void *cookie, int err)
{
	struct rdm_fetch *f = cookie;

	rx_complete(ep, f->rx, &f->res, f->tag, f->data, f->msg_flags, f->src,
		    f->src_raw_len ? f->src_raw : NULL, f->src_raw_len, err);
	util_bufpool_put(ep->fetch_pool, f);
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
		f = util_bufpool_get(ep->fetch_pool);
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
		util_bufpool_put(ep->fetch_pool, f);
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

/* What keeping an unexpected message costs, against ep->unexp_max. */
static size_t unexp_cost(const struct util_rdm_ep *ep, size_t heap_len)
{
	return sizeof(struct util_rdm_unexp) + ep->unexp_inline + heap_len;
}

static void unexp_free(struct util_rdm_ep *ep, struct util_rdm_unexp *ue,
		       bool discard)
{
	if (ue->stashed && discard)
		ue->xp->ops->discard(ue->xp, ue->stash);
	ep->unexp_bytes -= unexp_cost(ep, ue->heap ? ue->m.len : ue->hold);
	free(ue->heap);
	util_bufpool_put(ep->unexp_pool, ue);
}

/* The sender of an unexpected message of unknown source, if the AV names
 * it now. */
static fi_addr_t unexp_src_now(void *ctx, struct util_unexp_entry *m)
{
	struct util_rdm_ep *ep = ctx;
	struct util_rdm_unexp *ue = container_of(m, struct util_rdm_unexp, m);
	fi_addr_t fa;

	if (!ue->src_raw_len)
		return FI_ADDR_NOTAVAIL;
	fa = util_av_lookup_addr(ep->av, ue->src_raw);
	return util_av_slot_get(ep->av, fa) ? fa : FI_ADDR_NOTAVAIL;
}

/*
 * Before a receive matches: messages that came from a sender before its
 * address was in the AV carry no source, so a receive directed to that
 * sender would pass them and take its later ones first (MPI over a job
 * whose ranks insert each other's addresses at different times).  Once
 * the AV has changed, name them.
 */
static void unexp_resolve(struct util_rdm_ep *ep)
{
	uint64_t n;
	size_t left;

	if (!ep->av) {
		ep->unexp_unknown = false;
		return;
	}
	n = atomic_load_explicit(&ep->av->inserts, memory_order_acquire);
	if (n == ep->unexp_av_inserts)
		return;
	ep->unexp_av_inserts = n;
	left = util_match_resolve_unexp(&ep->msgq, unexp_src_now, ep) +
	       util_match_resolve_unexp(&ep->tagq, unexp_src_now, ep);
	ep->unexp_unknown = left > 0;
}

/* ---- arrivals (transport -> engine) ------------------------------------- */

static struct util_match *queue_of(struct util_rdm_ep *ep, uint32_t op)
{
	return op == UTIL_RDM_TAGGED ? &ep->tagq : &ep->msgq;
}

int util_rdm_msg_arrived(struct util_rdm_xport *xp, struct util_rdm_msg *msg)
{
	struct util_rdm_ep *ep = xp->ep;
	struct util_match *q = queue_of(ep, msg->op);
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
	heap_len = msg->payload && msg->len > ep->unexp_inline ? msg->len : 0;
	/* What the transport keeps for a stashed payload counts too. */
	if (!msg->payload)
		heap_len = msg->stash_hold;
	if (ep->unexp_max && ep->unexp_bytes &&
	    ep->unexp_bytes + unexp_cost(ep, heap_len) > ep->unexp_max)
		return -FI_EAGAIN;
	ue = util_bufpool_get(ep->unexp_pool);
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
	    (ep->caps & (FI_SOURCE_ERR | FI_SOURCE | FI_DIRECTED_RECV))) {
		ue->src_raw_len = WEFT_MIN(msg->src_raw_len,
					   sizeof(ue->src_raw));
		memcpy(ue->src_raw, msg->src_raw, ue->src_raw_len);
		if (ep->av && !ep->unexp_unknown) {
			ep->unexp_unknown = true;
			ep->unexp_av_inserts = atomic_load_explicit(
			    &ep->av->inserts, memory_order_acquire);
		}
	}
	ue->stashed = !msg->payload;
	if (ue->stashed) {
		if (msg->stash_len > sizeof(ue->stash)) {
			util_bufpool_put(ep->unexp_pool, ue);
			goto err_stash;
		}
		memcpy(ue->stash, msg->stash, msg->stash_len);
		ue->stash_len = msg->stash_len;
	} else if (heap_len && msg->payload) {
		/* Sized to the message: a 300-byte one holds 300 bytes. */
		ue->heap = malloc(heap_len);
		if (!ue->heap) {
			util_bufpool_put(ep->unexp_pool, ue);
			return -FI_EAGAIN;
		}
		memcpy(ue->heap, msg->payload, heap_len);
	} else {
		memcpy(ue->inline_buf, msg->payload, msg->len);
	}
	ep->unexp_bytes += unexp_cost(ep, heap_len);
	util_match_add_unexp(q, &ue->m);
	return 0;

err_stash:
	/* A descriptor larger than the engine keeps: a transport bug. */
	FI_WARN(ep->domain->prov, FI_LOG_EP_DATA,
		"a rendezvous descriptor of %zu bytes cannot be kept: "
		"message dropped\n",
		msg->stash_len);
	xp->ops->discard(xp, msg->stash);
	return -FI_EINVAL;
}

void util_rdm_remote_event(struct util_rdm_ep *ep, uint64_t flags, size_t len,
			   uint64_t data)
{
	if (flags & FI_REMOTE_WRITE)
		cntr_inc(ep->rem_write_cntr, 0);
	else
		cntr_inc(ep->rem_read_cntr, 0);
	if ((flags & FI_REMOTE_CQ_DATA) && ep->rx_cq) {
		util_cq_writer_lock(ep->rx_cq);
		util_cq_write(ep->rx_cq, NULL, flags | FI_RMA, len, NULL, data,
			      0, FI_ADDR_NOTAVAIL);
		util_cq_writer_unlock(ep->rx_cq);
	}
}

/* ---- receiving ---------------------------------------------------------- */

static ssize_t rdm_peek(struct util_rdm_ep *ep, struct util_match *q,
			struct util_rdm_rx *rx)
{
	struct util_unexp_entry *m;
	struct util_rdm_unexp *ue;
	struct util_cq *cq = ep->rx_cq;
	int ret;

	ret = util_match_peek(q, &rx->m, &m);
	if (!cq)
		return 0;
	util_cq_writer_lock(cq);
	if (ret) {
		struct fi_cq_err_entry e = {
			.op_context = rx->m.context,
			.flags = rx->cq_flags,
			.tag = rx->m.tag,
			.err = FI_ENOMSG,
			.prov_errno = -FI_ENOMSG,
		};

		util_cq_write_err(cq, &e);
	} else {
		ue = container_of(m, struct util_rdm_unexp, m);
		util_cq_write(cq, rx->m.context,
			      rx->cq_flags |
				      ((ue->flags & UTIL_RDM_CQ_DATA) ?
					       FI_REMOTE_CQ_DATA :
					       0),
			      ue->m.len, NULL,
			      (ue->flags & UTIL_RDM_CQ_DATA) ? ue->data : 0,
			      ue->m.tag, report_src(ep, ue->m.addr));
	}
	util_cq_writer_unlock(cq);
	if (!ret && (rx->m.flags & FI_DISCARD)) {
		ue = container_of(m, struct util_rdm_unexp, m);
		if (ue->flags & UTIL_RDM_ACK_REQ)
			ue->xp->ops->ack(ue->xp, ue->reply, ue->tx_id, 0);
		unexp_free(ep, ue, true);
	}
	return 0;
}

/* A receive met an unexpected message: deliver it. */
static void deliver_unexp(struct util_rdm_ep *ep, struct util_rdm_rx *rx,
			  const struct util_match_result *res, bool discard)
{
	struct util_rdm_unexp *ue =
		container_of(res->unexp, struct util_rdm_unexp, m);
	struct util_rdm_msg msg;

	unexp_to_msg(ue, &msg);
	if (discard) {
		if (ue->flags & UTIL_RDM_ACK_REQ)
			ue->xp->ops->ack(ue->xp, ue->reply, ue->tx_id, 0);
		rx_complete(ep, rx, res, msg.tag, msg.data, msg.flags, msg.src,
			    NULL, 0, 0);
		unexp_free(ep, ue, true);
		return;
	}
	rx_deliver(ep, rx, res, &msg);
	/* A stashed payload was fetched: the transport already released it. */
	unexp_free(ep, ue, false);
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

static ssize_t rdm_recv(struct util_rdm_ep *ep, const struct iovec *iov,
			void **desc, size_t count, fi_addr_t src, uint64_t tag,
			uint64_t ignore, void *context, uint64_t flags,
			uint32_t op)
{
	struct util_match *q = queue_of(ep, op);
	struct util_match_result res;
	struct util_rdm_rx *rx;
	ssize_t ret = 0;
	int r;

	if (weft_unlikely(count > UTIL_RDM_IOV_MAX || (count && !iov)))
		return -FI_EINVAL;
	if ((flags & FI_MULTI_RECV) && (op != UTIL_RDM_MSG || count != 1))
		return -FI_EINVAL;
	if (!(ep->caps & FI_DIRECTED_RECV))
		src = FI_ADDR_UNSPEC;
	/* A receive directed to fi_rx_addr(peer, i, bits) takes what that
	 * peer sends from any of its contexts (Mercury names the context
	 * its answer comes from, as 1.17's sockets matches): sources are
	 * endpoints, not contexts. */
	else if (src != FI_ADDR_UNSPEC && ep->av && ep->av->rx_ctx_bits)
		src &= ep->av->addr_mask;

	ep_lock(ep);
	if (weft_unlikely(!ep->enabled)) {
		ret = -FI_EOPBADSTATE;
		goto out;
	}
	if (weft_unlikely(ep->unexp_unknown))
		unexp_resolve(ep);
	rx = util_bufpool_get(ep->rx_pool);
	if (!rx) {
		ret = -FI_EAGAIN;
		goto out;
	}
	rx->flags = flags;
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
		ret = rdm_peek(ep, q, rx);
		util_bufpool_put(ep->rx_pool, rx);
		goto out;
	}
	if (flags & FI_CLAIM) {
		r = util_match_claim(q, &rx->m, &res);
		if (r < 0) {
			util_bufpool_put(ep->rx_pool, rx);
			ret = r == -FI_ENOMSG ? -FI_EINVAL : r;
			goto out;
		}
		deliver_unexp(ep, rx, &res, flags & FI_DISCARD);
		goto out;
	}
	for (;;) {
		r = util_match_post_recv(q, &rx->m, &res);
		if (r <= 0)
			break;
		deliver_unexp(ep, rx, &res, false);
		if (!(flags & FI_MULTI_RECV) || res.released)
			break;
	}
	if (weft_unlikely(src != FI_ADDR_UNSPEC) && !r)
		rx_directed_check(ep, src);
out:
	ep_unlock(ep);
	return ret;
}

static ssize_t rdm_msg_recv(struct fid_ep *ep_fid, void *buf, size_t len,
			    void *desc, fi_addr_t src, void *context)
{
	struct util_rdm_ep *ep = util_rdm_ep_of(ep_fid);
	struct iovec iov = { buf, len };

	return rdm_recv(ep, &iov, &desc, 1, src, 0, ~0ULL, context, ep->rx_op_flags,
			UTIL_RDM_MSG);
}

static ssize_t rdm_msg_recvv(struct fid_ep *ep_fid, const struct iovec *iov,
			     void **desc, size_t count, fi_addr_t src,
			     void *context)
{
	struct util_rdm_ep *ep = util_rdm_ep_of(ep_fid);

	return rdm_recv(ep, iov, desc, count, src, 0, ~0ULL, context,
			ep->rx_op_flags, UTIL_RDM_MSG);
}

static ssize_t rdm_msg_recvmsg(struct fid_ep *ep_fid, const struct fi_msg *msg,
			       uint64_t flags)
{
	struct util_rdm_ep *ep = util_rdm_ep_of(ep_fid);

	return rdm_recv(ep, msg->msg_iov, msg->desc, msg->iov_count, msg->addr, 0, ~0ULL,
			msg->context,
			flags,
			UTIL_RDM_MSG);
}

static ssize_t rdm_tagged_recv(struct fid_ep *ep_fid, void *buf, size_t len,
			       void *desc, fi_addr_t src, uint64_t tag,
			       uint64_t ignore, void *context)
{
	struct util_rdm_ep *ep = util_rdm_ep_of(ep_fid);
	struct iovec iov = { buf, len };

	return rdm_recv(ep, &iov, &desc, 1, src, tag, ignore, context,
			ep->rx_op_flags & ~FI_MULTI_RECV, UTIL_RDM_TAGGED);
}

static ssize_t rdm_tagged_recvv(struct fid_ep *ep_fid, const struct iovec *iov,
				void **desc, size_t count, fi_addr_t src,
				uint64_t tag, uint64_t ignore, void *context)
{
	struct util_rdm_ep *ep = util_rdm_ep_of(ep_fid);

	return rdm_recv(ep, iov, desc, count, src, tag, ignore, context,
			ep->rx_op_flags & ~FI_MULTI_RECV, UTIL_RDM_TAGGED);
}

static ssize_t rdm_tagged_recvmsg(struct fid_ep *ep_fid,
				  const struct fi_msg_tagged *msg,
				  uint64_t flags)
{
	struct util_rdm_ep *ep = util_rdm_ep_of(ep_fid);

	return rdm_recv(ep, msg->msg_iov, msg->desc, msg->iov_count, msg->addr, msg->tag,
			msg->ignore, msg->context,
			flags,
			UTIL_RDM_TAGGED);
}

/* ---- cancel, options ---------------------------------------------------- */

static ssize_t rdm_cancel(fid_t fid, void *context)
{
	struct util_rdm_ep *ep =
		util_rdm_ep_of(container_of(fid, struct fid_ep, fid));
	struct util_match *queues[] = { &ep->msgq, &ep->tagq };
	struct util_rx_entry *m = NULL;
	size_t i;

	ep_lock(ep);
	for (i = 0; i < WEFT_ARRAY_SIZE(queues) && !m; i++)
		m = util_match_cancel(queues[i], context);
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

			if (ep->rx_cq) {
				util_cq_writer_lock(ep->rx_cq);
				util_cq_write_err(ep->rx_cq, &e);
				util_cq_writer_unlock(ep->rx_cq);
			}
			cntr_inc(ep->recv_cntr, FI_ECANCELED);
			util_bufpool_put(ep->rx_pool, rx);
		}
	}
	ep_unlock(ep);
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

	if (ep->rx_cq) {
		util_cq_writer_lock(ep->rx_cq);
		util_cq_write_err(ep->rx_cq, &e);
		util_cq_writer_unlock(ep->rx_cq);
	}
	cntr_inc(ep->recv_cntr, err);
	util_bufpool_put(ep->rx_pool, rx);
}

void util_rdm_flush_rx(struct util_rdm_ep *ep, int err)
{
	struct util_match *queues[] = { &ep->msgq, &ep->tagq };
	struct util_rx_entry *m;
	size_t i;

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
static void rx_fail_gone(struct util_rdm_ep *ep)
{
	struct util_match *queues[] = { &ep->msgq, &ep->tagq };
	struct util_rx_entry *m;
	struct dlist_entry *e;
	bool waiting = false;
	size_t i;

	ep->rx_gone = false;
	if (!util_rdm_rx_directed(ep))
		return;
	dlist_foreach(&ep->peers.list, e) {
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
	}
	ep->rx_gone = waiting;
}

static int rdm_getopt(fid_t fid, int level, int optname, void *optval,
		      size_t *optlen)
{
	struct util_rdm_ep *ep =
		util_rdm_ep_of(container_of(fid, struct fid_ep, fid));

	if (ep->hooks && ep->hooks->getopt) {
		int ret = ep->hooks->getopt(ep, level, optname, optval,
					    optlen);

		if (ret != -FI_ENOPROTOOPT)
			return ret;
	}
	if (level != FI_OPT_ENDPOINT)
		return -FI_ENOPROTOOPT;
	switch (optname) {
	case FI_OPT_MIN_MULTI_RECV:
		if (!optval || !optlen || *optlen < sizeof(size_t))
			return -FI_ETOOSMALL;
		*(size_t *)optval = ep->msgq.min_multi_recv;
		*optlen = sizeof(size_t);
		return 0;
	default:
		return -FI_ENOPROTOOPT;
	}
}

static int rdm_setopt(fid_t fid, int level, int optname, const void *optval,
		      size_t optlen)
{
	struct util_rdm_ep *ep =
		util_rdm_ep_of(container_of(fid, struct fid_ep, fid));

	if (level != FI_OPT_ENDPOINT)
		return -FI_ENOPROTOOPT;
	switch (optname) {
	case FI_OPT_MIN_MULTI_RECV:
		if (!optval || optlen < sizeof(size_t))
			return -FI_EINVAL;
		ep_lock(ep);
		util_match_set_min_multi_recv(&ep->msgq,
					      *(const size_t *)optval);
		ep_unlock(ep);
		return 0;
	default:
		return -FI_ENOPROTOOPT;
	}
}

static ssize_t rdm_rx_size_left(struct fid_ep *ep_fid)
{
	return -FI_ENOSYS;
}

static ssize_t rdm_tx_size_left(struct fid_ep *ep_fid)
{
	return -FI_ENOSYS;
}

static int rdm_no_tx_ctx(struct fid_ep *sep, int index,
			 struct fi_tx_attr *attr, struct fid_ep **tx_ep,
			 void *context)
{
	return -FI_ENOSYS;
}

static int rdm_no_rx_ctx(struct fid_ep *sep, int index,
			 struct fi_rx_attr *attr, struct fid_ep **rx_ep,
			 void *context)
{
	return -FI_ENOSYS;
}

struct fi_ops_ep util_rdm_ep_ops = {
	.size = sizeof(struct fi_ops_ep),
	.cancel = rdm_cancel,
	.getopt = rdm_getopt,
	.setopt = rdm_setopt,
	.tx_ctx = rdm_no_tx_ctx,
	.rx_ctx = rdm_no_rx_ctx,
	.rx_size_left = rdm_rx_size_left,
	.tx_size_left = rdm_tx_size_left,
};

static struct fi_ops_msg rdm_msg_ops = {
	.size = sizeof(struct fi_ops_msg),
	.recv = rdm_msg_recv,
	.recvv = rdm_msg_recvv,
	.recvmsg = rdm_msg_recvmsg,
	.send = rdm_msg_send,
	.sendv = rdm_msg_sendv,
	.sendmsg = rdm_msg_sendmsg,
	.inject = rdm_msg_inject,
	.senddata = rdm_msg_senddata,
	.injectdata = rdm_msg_injectdata,
};

static struct fi_ops_tagged rdm_tagged_ops = {
	.size = sizeof(struct fi_ops_tagged),
	.recv = rdm_tagged_recv,
	.recvv = rdm_tagged_recvv,
	.recvmsg = rdm_tagged_recvmsg,
	.send = rdm_tagged_send,
	.sendv = rdm_tagged_sendv,
	.sendmsg = rdm_tagged_sendmsg,
	.inject = rdm_tagged_inject,
	.senddata = rdm_tagged_senddata,
	.injectdata = rdm_tagged_injectdata,
};

/*
 * A scalable endpoint's contexts (util_rdm_sep.c) take the same entry
 * points, each its own side: a transmit context refuses receives and a
 * receive context transmits, with -FI_ENOSYS (fi_endpoint(3): an
 * operation the object does not provide).
 */
struct fi_ops_msg util_rdm_tx_msg_ops = {
	.size = sizeof(struct fi_ops_msg),
	.recv = weft_no_recv,
	.recvv = weft_no_recvv,
	.recvmsg = weft_no_recvmsg,
	.send = rdm_msg_send,
	.sendv = rdm_msg_sendv,
	.sendmsg = rdm_msg_sendmsg,
	.inject = rdm_msg_inject,
	.senddata = rdm_msg_senddata,
	.injectdata = rdm_msg_injectdata,
};

struct fi_ops_msg util_rdm_rx_msg_ops = {
	.size = sizeof(struct fi_ops_msg),
	.recv = rdm_msg_recv,
	.recvv = rdm_msg_recvv,
	.recvmsg = rdm_msg_recvmsg,
	.send = weft_no_send,
	.sendv = weft_no_sendv,
	.sendmsg = weft_no_sendmsg,
	.inject = weft_no_inject,
	.senddata = weft_no_senddata,
	.injectdata = weft_no_injectdata,
};

struct fi_ops_tagged util_rdm_tx_tagged_ops = {
	.size = sizeof(struct fi_ops_tagged),
	.recv = weft_no_trecv,
	.recvv = weft_no_trecvv,
	.recvmsg = weft_no_trecvmsg,
	.send = rdm_tagged_send,
	.sendv = rdm_tagged_sendv,
	.sendmsg = rdm_tagged_sendmsg,
	.inject = rdm_tagged_inject,
	.senddata = rdm_tagged_senddata,
	.injectdata = rdm_tagged_injectdata,
};

struct fi_ops_tagged util_rdm_rx_tagged_ops = {
	.size = sizeof(struct fi_ops_tagged),
	.recv = rdm_tagged_recv,
	.recvv = rdm_tagged_recvv,
	.recvmsg = rdm_tagged_recvmsg,
	.send = weft_no_tsend,
	.sendv = weft_no_tsendv,
	.sendmsg = weft_no_tsendmsg,
	.inject = weft_no_tinject,
	.senddata = weft_no_tsenddata,
	.injectdata = weft_no_tinjectdata,
};

/* ---- progress ----------------------------------------------------------- */

/* One pass: the transport's arrivals, then queued transmits. */
static inline int rdm_progress_once(struct util_rdm_ep *ep);

/* The domain's other sweeping endpoints whose locks are free now: one
 * round of their progress.  Never nested, never waits for a lock. */
static int domain_sweep(struct util_rdm_ep *ep)
{
	static __thread bool in_sweep;
	struct util_domain *d = ep->domain;
	struct dlist_entry *e;
	int n = 0;

	if (in_sweep || pthread_mutex_trylock(&d->sweep_lock))
		return 0;
	in_sweep = true;
	dlist_foreach(&d->sweep_eps, e) {
		struct util_rdm_ep *o =
			container_of(e, struct util_rdm_ep, sweep_entry);

		if (o == ep || !weft_trylock(&o->lock))
			continue;
		if (o->enabled)
			n += rdm_progress_once(o);
		weft_unlock(&o->lock);
	}
	in_sweep = false;
	pthread_mutex_unlock(&d->sweep_lock);
	return n;
}

/* Arm every transport that has a wait fd; how many events they found. */
static int rdm_arm_xports(struct util_rdm_ep *ep)
{
	int n = 0;

	if (ep->xp->ops->arm)
		n += ep->xp->ops->arm(ep->xp);
	if (ep->local && ep->local->ops->arm)
		n += ep->local->ops->arm(ep->local);
	return n;
}

/* About to sleep on a wait fd the domain's sweeping endpoints share:
 * arm the others (those whose locks are free), progressing what they
 * find.  Returns how many events that found. */
static int domain_arm(struct util_rdm_ep *ep)
{
	struct util_domain *d = ep->domain;
	struct dlist_entry *e;
	int n = 0, k;

	pthread_mutex_lock(&d->sweep_lock);
	dlist_foreach(&d->sweep_eps, e) {
		struct util_rdm_ep *o =
			container_of(e, struct util_rdm_ep, sweep_entry);

		if (o == ep || !weft_trylock(&o->lock))
			continue;
		if (o->enabled) {
			k = rdm_arm_xports(o);
			if (k > 0)
				n += k + rdm_progress_once(o);
		}
		weft_unlock(&o->lock);
	}
	pthread_mutex_unlock(&d->sweep_lock);
	return n;
}

/* Blocked peers, and every 64th pass the domain's other endpoints: out
 * of line, off the polling path that inlines rdm_progress_once. */
static __attribute__((noinline)) int rdm_progress_more(struct util_rdm_ep *ep,
						       bool sweep)
{
	int n = 0;

	if (!dlist_empty(&ep->blocked))
		n += peers_drain(ep);
	if (sweep)
		n += domain_sweep(ep);
	return n;
}

static inline int rdm_progress_once(struct util_rdm_ep *ep)
{
	int n = ep->xp->ops->progress(ep->xp);
	bool sweep = weft_unlikely(ep->sweep) && !(++ep->sweep_calls & 63);

	if (ep->local)
		n += ep->local->ops->progress(ep->local);

	if (weft_unlikely(!dlist_empty(&ep->blocked) || sweep))
		n += rdm_progress_more(ep, sweep);
	if (weft_unlikely(ep->rx_gone))
		rx_fail_gone(ep);
	return n;
}

static void rdm_progress(struct util_rdm_ep *ep)
{
	ep_lock(ep);
	if (ep->enabled)
		rdm_progress_once(ep);
	ep_unlock(ep);
}

/*
 * FI_PROGRESS_AUTO: progress without the application's calls.  Busy while
 * there is traffic; when idle, yields, then sleeps with a growing pause
 * (at most RDM_AUTO_SLEEP_MAX_US), so an idle endpoint costs little CPU.
 */
#define RDM_AUTO_SPIN 256
#define RDM_AUTO_SLEEP_MAX_US 1000

static void *rdm_progress_thread(void *arg)
{
	struct util_rdm_ep *ep = arg;
	unsigned int idle = 0, pause_us = 1;
	struct timespec ts;
	int n;

	while (!atomic_load_explicit(&ep->progress_stop, memory_order_acquire)) {
		ep_lock(ep);
		n = rdm_progress_once(ep);
		ep_unlock(ep);
		if (n) {
			idle = 0;
			pause_us = 1;
			continue;
		}
		if (++idle < RDM_AUTO_SPIN) {
			sched_yield();
			continue;
		}
		ts.tv_sec = 0;
		ts.tv_nsec = (long)pause_us * 1000;
		nanosleep(&ts, NULL);
		if (pause_us < RDM_AUTO_SLEEP_MAX_US)
			pause_us *= 2;
	}
	return NULL;
}

/* About to sleep on a wait object the transport's fd is in. */
static bool rdm_arm(struct util_rdm_ep *ep)
{
	int n = 0;

	if (!ep->wait_fds)
		return false;
	ep_lock(ep);
	if (ep->enabled) {
		n = rdm_arm_xports(ep);
		if (n > 0)
			rdm_progress_once(ep);
	}
	ep_unlock(ep);
	/* The wait fd serves the domain's sweeping endpoints: arm theirs
	 * too, or a sleeper would not wake for their events. */
	if (ep->sweep)
		n += domain_arm(ep);
	return n > 0;
}

/* A counter bound to registrations reads (manual progress): move this
 * endpoint along if nobody else is (util_domain_target_progress). */
static void rdm_target_progress(struct util_progress *p)
{
	struct util_rdm_ep *ep =
		container_of(p, struct util_rdm_ep, target_progress);

	if (!weft_trylock(&ep->lock))
		return;
	if (ep->enabled)
		rdm_progress_once(ep);
	weft_unlock(&ep->lock);
}

static bool rdm_tx_cq_arm(struct util_progress *p)
{
	return rdm_arm(container_of(p, struct util_rdm_ep, tx_progress));
}

static bool rdm_rx_cq_arm(struct util_progress *p)
{
	return rdm_arm(container_of(p, struct util_rdm_ep, rx_progress));
}

static bool rdm_cntr_arm(struct util_progress *p)
{
	return rdm_arm(container_of(p, struct util_rdm_cntr_hook, p)->ep);
}

static void rdm_tx_cq_progress(struct util_progress *p)
{
	rdm_progress(container_of(p, struct util_rdm_ep, tx_progress));
}

static void rdm_rx_cq_progress(struct util_progress *p)
{
	rdm_progress(container_of(p, struct util_rdm_ep, rx_progress));
}

static void rdm_cntr_progress(struct util_progress *p)
{
	struct util_rdm_cntr_hook *hook =
		container_of(p, struct util_rdm_cntr_hook, p);

	rdm_progress(hook->ep);
}

/* ---- binding, enabling -------------------------------------------------- */

/*
 * Let the transport's fd wake the wait object w: then waiting on it sleeps
 * in the kernel instead of polling our progress.  Returns whether it can.
 */
static int xport_wait_fd(struct util_rdm_xport *xp)
{
	if (!xp)
		return -2; /* none: nothing to wait for */
	if (xp->wait_fd < 0 && xp->ops->wait_fd)
		xp->wait_fd = xp->ops->wait_fd(xp);
	return xp->wait_fd;
}

/* Every transport of the endpoint must wake the sleeper: one that cannot
 * (no fd) makes waits poll. */
static bool wait_add_tp_fd(struct util_rdm_ep *ep, struct util_wait *w)
{
	int fd0, fd1, ret;

	if (!w)
		return false;
	fd0 = xport_wait_fd(ep->xp);
	fd1 = xport_wait_fd(ep->local);
	if (fd0 < 0 || fd1 == -1)
		return false;
	ret = util_wait_add_fd(w, fd0, POLLIN, ep);
	if (ret && ret != -FI_EALREADY)
		return false;
	if (fd1 >= 0) {
		ret = util_wait_add_fd(w, fd1, POLLIN, ep);
		if (ret && ret != -FI_EALREADY) {
			util_wait_del_fd(w, fd0);
			return false;
		}
	}
	ep->wait_fds = true;
	return true;
}

static void wait_del_tp_fd(struct util_rdm_ep *ep, struct util_wait *w)
{
	if (!w || !ep->wait_fds)
		return;
	if (ep->xp->wait_fd >= 0)
		util_wait_del_fd(w, ep->xp->wait_fd);
	if (ep->local && ep->local->wait_fd >= 0)
		util_wait_del_fd(w, ep->local->wait_fd);
}

static int bind_cq(struct util_rdm_ep *ep, struct util_cq *cq, uint64_t flags)
{
	int ret;

	if (flags & ~(FI_TRANSMIT | FI_RECV | FI_SELECTIVE_COMPLETION))
		return -FI_EBADFLAGS;
	if (((flags & FI_TRANSMIT) && ep->tx_cq) ||
	    ((flags & FI_RECV) && ep->rx_cq))
		return -FI_EALREADY;
	if (flags & FI_TRANSMIT) {
		ep->tx_progress.polled = !wait_add_tp_fd(ep, util_cq_wait(cq));
		ret = util_cq_bind(cq, &ep->tx_progress);
		if (ret)
			return ret;
		ep->tx_cq = cq;
		ep->tx_selective = flags & FI_SELECTIVE_COMPLETION;
	}
	if (flags & FI_RECV) {
		ep->rx_progress.polled = !wait_add_tp_fd(ep, util_cq_wait(cq));
		ret = util_cq_bind(cq, cq == ep->tx_cq ? NULL :
						       &ep->rx_progress);
		if (ret)
			return ret;
		ep->rx_cq = cq;
		ep->rx_selective = flags & FI_SELECTIVE_COMPLETION;
	}
	return 0;
}

static int bind_cntr(struct util_rdm_ep *ep, struct util_cntr *cntr,
		     uint64_t flags)
{
	struct {
		uint64_t flag;
		struct util_cntr **slot;
	} map[] = {
		{ FI_SEND, &ep->send_cntr },
		{ FI_RECV, &ep->recv_cntr },
		{ FI_READ, &ep->read_cntr },
		{ FI_WRITE, &ep->write_cntr },
		{ FI_REMOTE_READ, &ep->rem_read_cntr },
		{ FI_REMOTE_WRITE, &ep->rem_write_cntr },
	};
	size_t i;
	int ret;

	if (!flags || (flags & ~(FI_SEND | FI_RECV | FI_READ | FI_WRITE |
				 FI_REMOTE_READ | FI_REMOTE_WRITE)))
		return -FI_EBADFLAGS;
	for (i = 0; i < WEFT_ARRAY_SIZE(map); i++)
		if ((flags & map[i].flag) && *map[i].slot)
			return -FI_EALREADY;
	/* Register our progress once per counter, whatever it counts. */
	for (i = 0; i < WEFT_ARRAY_SIZE(ep->cntr_hook); i++)
		if (ep->cntr_hook[i].cntr == cntr || !ep->cntr_hook[i].cntr)
			break;
	if (i == WEFT_ARRAY_SIZE(ep->cntr_hook))
		return -FI_EINVAL;
	if (!ep->cntr_hook[i].cntr) {
		struct util_rdm_cntr_hook *hook = &ep->cntr_hook[i];

		hook->ep = ep;
		hook->p.progress = rdm_cntr_progress;
		hook->p.arm = rdm_cntr_arm;
		hook->p.polled = !wait_add_tp_fd(ep, cntr->waitable.wait);
		ret = util_cntr_add_progress(cntr, &hook->p);
		if (ret)
			return ret;
		hook->cntr = cntr;
	}
	for (i = 0; i < WEFT_ARRAY_SIZE(map); i++) {
		if (flags & map[i].flag) {
			*map[i].slot = cntr;
			util_cntr_get(cntr);
		}
	}
	return 0;
}

/* The transmit capabilities an endpoint keeps within a shared context's. */
#define STX_CAPS (FI_MSG | FI_TAGGED | FI_RMA | FI_ATOMIC)

static int bind_stx(struct util_rdm_ep *ep, struct util_rdm_stx *stx)
{
	uint64_t caps = ep->caps & STX_CAPS;

	if (ep->stx)
		return -FI_EALREADY;
	if (!ep->tx_shared || stx->domain != ep->domain ||
	    (stx->attr.caps && (caps & ~stx->attr.caps))) {
		FI_WARN(ep->domain->prov, FI_LOG_EP_CTRL,
			"a shared transmit context binds to an endpoint of "
			"its domain opened with tx_ctx_cnt FI_SHARED_CONTEXT "
			"whose capabilities it has\n");
		return -FI_EINVAL;
	}
	atomic_fetch_add(&stx->bound, 1);
	ep->stx = stx;
	return 0;
}

int util_rdm_bind_locked(struct util_rdm_ep *ep, struct fid *bfid,
			 uint64_t flags)
{
	switch (bfid->fclass) {
	case FI_CLASS_CQ:
		return bind_cq(ep, util_cq_from_fid(container_of(
					   bfid, struct fid_cq, fid)),
			       flags);
	case FI_CLASS_CNTR:
		return bind_cntr(ep, util_cntr_of(container_of(
					     bfid, struct fid_cntr, fid)),
				 flags);
	case FI_CLASS_AV:
		if (ep->av)
			return -FI_EALREADY;
		ep->av = util_av_from_fid(container_of(bfid, struct fid_av,
						       fid));
		util_av_get(ep->av);
		util_peer_map_set_av(&ep->peers, ep->av);
		return 0;
	case FI_CLASS_EQ:
		/* RDM endpoints have no connection events to report. */
		return 0;
	case FI_CLASS_STX_CTX:
		return bind_stx(ep, container_of(bfid, struct util_rdm_stx,
						 stx_fid.fid));
	default:
		return -FI_EINVAL;
	}
}

int util_rdm_ep_bind(struct fid *fid, struct fid *bfid, uint64_t flags)
{
	struct util_rdm_ep *ep = container_of(fid, struct util_rdm_ep,
					      ep_fid.fid);
	int ret;

	if (!bfid)
		return -FI_EINVAL;
	ep_lock(ep);
	ret = ep->enabled && !ep->sep ? -FI_EOPBADSTATE :
					util_rdm_bind_locked(ep, bfid, flags);
	ep_unlock(ep);
	return ret;
}

/*
 * The local transport's region is named after the address peers insert,
 * the one fi_getname reports.  Without it every peer goes through the
 * primary transport, which still works.
 */
static void local_enable(struct util_rdm_ep *ep)
{
	struct sockaddr_storage addr = { 0 };
	size_t len = sizeof(addr);

	if (ep->peers.attr.addr_len > sizeof(addr) ||
	    fi_getname(&ep->ep_fid.fid, &addr, &len))
		return;
	ep->local_up = ep->local_ops->enable(ep->local, ep->domain->prov,
					     ep->local_via, &addr,
					     ep->peers.attr.addr_len, ep->pair);
}

int util_rdm_ep_control(struct fid *fid, int command, void *arg)
{
	struct util_rdm_ep *ep = container_of(fid, struct util_rdm_ep,
					      ep_fid.fid);
	uint64_t *flags = arg;
	int ret = 0;

	switch (command) {
	case FI_ENABLE:
		if (ep->local && !ep->local_up && !ep->enabled)
			local_enable(ep);
		ep_lock(ep);
		if (!ep->av && !ep->connected)
			ret = -FI_ENOAV;
		else if (ep->tx_shared && !ep->stx)
			ret = -FI_EOPBADSTATE; /* fi_endpoint(3): bind it */
		else if (ep->sep)
			ep->enabled = true; /* its contexts check their own */
		else if (((ep->caps & (FI_SEND | FI_RMA | FI_ATOMIC)) &&
			  !ep->tx_cq && !ep->send_cntr && !ep->write_cntr &&
			  !ep->read_cntr) ||
			 ((ep->caps & FI_RECV) && !ep->rx_cq &&
			  !ep->recv_cntr))
			ret = -FI_ENOCQ;
		else
			ep->enabled = true;
		ep_unlock(ep);
		if (!ret && ep->domain->data_progress == FI_PROGRESS_AUTO &&
		    !ep->progress_running) {
			atomic_store(&ep->progress_stop, false);
			ret = -pthread_create(&ep->progress_thread, NULL,
					      rdm_progress_thread, ep);
			ep->progress_running = !ret;
			if (ret) {
				ep->enabled = false;
				ret = weft_errno(-ret);
			}
		}
		return ret;
	case FI_GETOPSFLAG:
		if (!flags)
			return -FI_EINVAL;
		if (*flags & FI_TRANSMIT)
			*flags = ep->tx_op_flags;
		else if (*flags & FI_RECV)
			*flags = ep->rx_op_flags;
		else
			return -FI_EINVAL;
		return 0;
	case FI_SETOPSFLAG:
		if (!flags)
			return -FI_EINVAL;
		if (*flags & FI_TRANSMIT)
			ep->tx_op_flags = *flags & ~FI_TRANSMIT;
		else if (*flags & FI_RECV)
			ep->rx_op_flags = *flags & ~FI_RECV;
		else
			return -FI_EINVAL;
		return 0;
	default:
		return -FI_ENOSYS;
	}
}

/* ---- setup and teardown ------------------------------------------------- */

/* A new peer: every transport's part is set up, and the local transport
 * takes it if it reaches it. */
static int rdm_peer_init(void *ctx, struct util_peer *peer)
{
	struct util_rdm_ep *ep = ctx;
	struct util_rdm_xport *xp = ep->xp, *lo = ep->local;
	int ret;

	ret = xp->ops->peer_init ? xp->ops->peer_init(xp, peer) : 0;
	if (ret)
		return ret;
	peer->xp = xp;
	if (!lo)
		return 0;
	ret = lo->ops->peer_init ? lo->ops->peer_init(lo, peer) : 0;
	if (ret) {
		if (xp->ops->peer_fini)
			xp->ops->peer_fini(xp, peer);
		return ret;
	}
	if (lo->ops->reaches && lo->ops->reaches(lo, peer))
		peer->xp = lo;
	return 0;
}

static void rdm_peer_fini(void *ctx, struct util_peer *peer)
{
	struct util_rdm_ep *ep = ctx;

	if (ep->local && ep->local->ops->peer_fini)
		ep->local->ops->peer_fini(ep->local, peer);
	if (ep->xp->ops->peer_fini)
		ep->xp->ops->peer_fini(ep->xp, peer);
}

int util_rdm_ep_init(struct util_rdm_ep *ep, struct util_domain *domain,
		     const struct fi_info *info,
		     const struct util_rdm_ep_attr *attr, void *context)
{
	struct util_match_attr mattr = {
		.min_multi_recv = RDM_DEFAULT_MIN_MULTI_RECV,
	};
	struct util_bufpool_attr pattr = { 0 };
	int ret;

	struct util_peer_map_attr peer_attr = {
		.peer_size = attr->xport->ops->peer_size,
		.addr_len = attr->peer_addr_len,
		.peer_init = rdm_peer_init,
		.peer_fini = rdm_peer_fini,
		.ctx = ep,
	};

	memset(ep, 0, sizeof(*ep));
	dlist_init(&ep->tx_waiting);
	dlist_init(&ep->blocked);
	ep->domain = domain;
	/* (0: an fi_info made by hand; nothing is cut then.) */
	ep->data_mask = !domain->cq_data_size ||
					domain->cq_data_size >= sizeof(uint64_t) ?
				~0ULL :
				(1ULL << (8 * domain->cq_data_size)) - 1;
	ep->xp = attr->xport;
	ep->xp->ep = ep;
	ep->xp->peer_off = 0;
	ep->xp->wait_fd = -1;
	if (attr->local_ops) {
		ep->local = attr->local_ops->open(info);
		if (!ep->local)
			return -FI_ENOMEM;
		ep->local_ops = attr->local_ops;
		ep->local_via = attr->local_via;
		/* Its part follows the primary's, aligned. */
		ep->local->ep = ep;
		ep->local->wait_fd = -1;
		ep->local->peer_off =
			(WEFT_MAX(peer_attr.peer_size, sizeof(struct util_peer)) +
			 63) & ~(size_t)63;
		peer_attr.peer_size =
			ep->local->peer_off + ep->local->ops->peer_size;
	}
	ep->hooks = attr->hooks;
	ep->inject_max = attr->inject_max;
	ep->atomic_max = attr->atomic_max;
	ep->connected = attr->connected;
	ep->tx_shared = info->ep_attr &&
			info->ep_attr->tx_ctx_cnt == FI_SHARED_CONTEXT;
	ep->caps = info->caps;
	ep->unexp_inline = attr->unexp_inline;
	ep->unexp_max = attr->unexp_max;
	ep->tx_op_flags = info->tx_attr ? info->tx_attr->op_flags : 0;
	ep->rx_op_flags = info->rx_attr ? info->rx_attr->op_flags : 0;
	ep->ep_fid.fid.fclass = FI_CLASS_EP;
	ep->ep_fid.fid.context = context;
	ep->efid.ep = ep;
	ep->ep_fid.ops = &util_rdm_ep_ops;
	ep->ep_fid.msg = &rdm_msg_ops;
	ep->ep_fid.tagged = &rdm_tagged_ops;
	ep->ep_fid.rma = &util_rdm_rma_ops;
	ep->ep_fid.atomic = &util_rdm_atomic_ops;
	ep->tx_progress.progress = rdm_tx_cq_progress;
	ep->rx_progress.progress = rdm_rx_cq_progress;
	ep->tx_progress.arm = rdm_tx_cq_arm;
	ep->rx_progress.arm = rdm_rx_cq_arm;
	ep->tx_progress.polled = true;
	ep->rx_progress.polled = true;

	ret = weft_lock_init(&ep->lock,
			     util_domain_progress_needs_lock(domain));
	if (ret)
		goto err_local;
	ret = util_match_init(&ep->msgq, &mattr);
	if (ret)
		goto err_lock;
	mattr.flags = UTIL_MATCH_TAGGED;
	if (ep->caps & FI_DIRECTED_RECV)
		mattr.flags |= UTIL_MATCH_DIRECTED;
	ret = util_match_init(&ep->tagq, &mattr);
	if (ret)
		goto err_msgq;
	/* The untagged queue honours directed receive too. */
	if (ep->caps & FI_DIRECTED_RECV) {
		util_match_fini(&ep->msgq);
		mattr.flags = UTIL_MATCH_DIRECTED;
		ret = util_match_init(&ep->msgq, &mattr);
		if (ret)
			goto err_tagq;
	}

	pattr.name = "rdm rx";
	pattr.size = sizeof(struct util_rdm_rx);
	ret = util_bufpool_create(&pattr, &ep->rx_pool);
	if (ret)
		goto err_tagq;
	pattr.name = "rdm unexpected";
	pattr.size = sizeof(struct util_rdm_unexp) + attr->unexp_inline;
	ret = util_bufpool_create(&pattr, &ep->unexp_pool);
	if (ret)
		goto err_rx_pool;
	pattr.name = "rdm fetch";
	pattr.size = sizeof(struct rdm_fetch);
	ret = util_bufpool_create(&pattr, &ep->fetch_pool);
	if (ret)
		goto err_unexp_pool;
	pattr.name = "rdm tx";
	pattr.size = sizeof(struct util_rdm_tx) + attr->inject_max;
	/* The endpoint holds at most tx_size transmits: past it a call
	 * returns -FI_EAGAIN (util_rdm.h, back-pressure). */
	pattr.max_cnt = info->tx_attr ? info->tx_attr->size : 0;
	/* One peer holds all but a reserve for the others (a connected
	 * endpoint has one peer: all of them are its). */
	ep->peer_tx_max = pattr.max_cnt && !ep->connected ?
		(uint32_t)WEFT_MAX(pattr.max_cnt -
					   WEFT_MIN(pattr.max_cnt / 4,
						    UTIL_RDM_PEER_RESERVE),
				   1) :
		UINT32_MAX;
	ret = util_bufpool_create(&pattr, &ep->tx_pool);
	if (ret)
		goto err_fetch_pool;
	util_peer_map_init(&ep->peers, &peer_attr);
	util_domain_get(domain);
	if (attr->sweep_domain) {
		pthread_mutex_lock(&domain->sweep_lock);
		dlist_insert_tail(&ep->sweep_entry, &domain->sweep_eps);
		pthread_mutex_unlock(&domain->sweep_lock);
		ep->sweep = true;
	}
	if (ep->caps & (FI_RMA | FI_ATOMIC)) {
		ep->target_progress.progress = rdm_target_progress;
		util_domain_add_target(domain, &ep->target_progress);
		ep->target = true;
	}
	return 0;

err_fetch_pool:
	util_bufpool_destroy(ep->fetch_pool);
err_unexp_pool:
	util_bufpool_destroy(ep->unexp_pool);
err_rx_pool:
	util_bufpool_destroy(ep->rx_pool);
err_tagq:
	util_match_fini(&ep->tagq);
err_msgq:
	util_match_fini(&ep->msgq);
err_lock:
	weft_lock_destroy(&ep->lock);
err_local:
	if (ep->local)
		ep->local_ops->close(ep->local);
	return ret;
}

/*
 * Transmits queued to peers that nothing will report (injects whose peer
 * could not take them yet): their callers were told they were sent.
 */
static size_t quiet_queued(struct util_rdm_ep *ep)
{
	struct dlist_entry *e, *t;
	size_t n = 0;

	dlist_foreach(&ep->blocked, e) {
		struct util_peer *peer =
			container_of(e, struct util_peer, blocked);

		dlist_foreach(&peer->queued, t)
			if (!container_of(t, struct util_rdm_tx, waiting)
				     ->cq_reserved)
				n++;
	}
	return n;
}

static uint64_t linger_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* Whether a transport still holds bytes it reported sent. */
static bool xports_lingering(struct util_rdm_ep *ep)
{
	struct util_rdm_xport *xps[] = { ep->xp, ep->local };
	size_t i;

	for (i = 0; i < WEFT_ARRAY_SIZE(xps); i++)
		if (xps[i] && xps[i]->ops->lingering &&
		    xps[i]->ops->lingering(xps[i]))
			return true;
	return false;
}

void util_rdm_ep_linger(struct util_rdm_ep *ep)
{
	uint64_t end = 0;
	struct timespec pause = { 0, 100000 };
	size_t n;

	ep_lock(ep);
	while (ep->enabled &&
	       ((n = quiet_queued(ep)) || xports_lingering(ep))) {
		if (!end) {
			end = linger_now_ms() + UTIL_RDM_LINGER_MS;
		} else if (linger_now_ms() >= end) {
			FI_WARN(ep->domain->prov, FI_LOG_EP_CTRL,
				"%zu injected message(s) (and what the "
				"transport took) not taken by their peers in "
				"%d ms: dropped at close\n",
				n, UTIL_RDM_LINGER_MS);
			break;
		}
		if (rdm_progress_once(ep))
			continue;
		/* Nothing moved: the peers' turn. */
		ep_unlock(ep);
		nanosleep(&pause, NULL);
		ep_lock(ep);
	}
	ep_unlock(ep);
}

static void drain_queue(struct util_rdm_ep *ep, struct util_match *q)
{
	struct util_unexp_entry *ue;
	struct util_rx_entry *m;

	while ((m = util_match_pop_posted(q)))
		util_bufpool_put(ep->rx_pool,
				 container_of(m, struct util_rdm_rx, m));
	while ((ue = util_match_pop_unexp(q)))
		unexp_free(ep, container_of(ue, struct util_rdm_unexp, m),
			   true);
	util_match_fini(q);
}

static void unbind_all(struct util_rdm_ep *ep, bool forget)
{
	struct util_cntr *cntrs[] = { ep->send_cntr,	 ep->recv_cntr,
				       ep->read_cntr,	 ep->write_cntr,
				       ep->rem_read_cntr, ep->rem_write_cntr };
	size_t i;

	if (ep->tx_cq)
		wait_del_tp_fd(ep, util_cq_wait(ep->tx_cq));
	if (ep->rx_cq && ep->rx_cq != ep->tx_cq)
		wait_del_tp_fd(ep, util_cq_wait(ep->rx_cq));
	for (i = 0; i < WEFT_ARRAY_SIZE(ep->cntr_hook); i++)
		if (ep->cntr_hook[i].cntr)
			wait_del_tp_fd(ep, ep->cntr_hook[i].cntr->waitable.wait);
	if (ep->tx_cq)
		util_cq_unbind(ep->tx_cq, &ep->tx_progress);
	if (ep->rx_cq)
		util_cq_unbind(ep->rx_cq, ep->rx_cq == ep->tx_cq ?
						  NULL :
						  &ep->rx_progress);
	for (i = 0; i < WEFT_ARRAY_SIZE(ep->cntr_hook); i++)
		if (ep->cntr_hook[i].cntr)
			util_cntr_del_progress(ep->cntr_hook[i].cntr,
					       &ep->cntr_hook[i].p);
	for (i = 0; i < WEFT_ARRAY_SIZE(cntrs); i++)
		if (cntrs[i])
			util_cntr_put(cntrs[i]);
	/* At the close, posted receives still complete (FI_ECANCELED)
	 * into the CQ the application closes after the endpoint. */
	if (!forget)
		return;
	ep->tx_cq = ep->rx_cq = NULL;
	ep->tx_selective = ep->rx_selective = false;
	ep->send_cntr = ep->recv_cntr = ep->read_cntr = ep->write_cntr = NULL;
	ep->rem_read_cntr = ep->rem_write_cntr = NULL;
	memset(ep->cntr_hook, 0, sizeof(ep->cntr_hook));
	ep->tx_progress.polled = ep->rx_progress.polled = true;
}

void util_rdm_unbind_all(struct util_rdm_ep *ep)
{
	unbind_all(ep, true);
}

void util_rdm_ep_fini(struct util_rdm_ep *ep)
{
	if (ep->local)
		ep->local_ops->closing(ep->local);
	if (ep->sweep) {
		/* No sweep reaches it from here on. */
		pthread_mutex_lock(&ep->domain->sweep_lock);
		dlist_remove(&ep->sweep_entry);
		pthread_mutex_unlock(&ep->domain->sweep_lock);
		ep->sweep = false;
	}
	if (ep->target) {
		util_domain_del_target(ep->domain, &ep->target_progress);
		ep->target = false;
	}
	if (ep->progress_running) {
		atomic_store_explicit(&ep->progress_stop, true,
				      memory_order_release);
		pthread_join(ep->progress_thread, NULL);
		ep->progress_running = false;
	}
	unbind_all(ep, false);
	if (ep->av)
		util_av_put(ep->av);
	if (ep->stx)
		atomic_fetch_sub(&ep->stx->bound, 1);
	ep_lock(ep);
	drain_queue(ep, &ep->msgq);
	drain_queue(ep, &ep->tagq);
	/* Transmits never handed over complete as canceled. */
	while (!dlist_empty(&ep->blocked)) {
		struct util_peer *p = container_of(ep->blocked.next,
						   struct util_peer, blocked);

		util_rdm_fail_peer(ep, p, FI_ECANCELED);
	}
	util_peer_map_fini(&ep->peers);
	ep_unlock(ep);
	util_bufpool_destroy(ep->tx_pool);
	util_bufpool_destroy(ep->fetch_pool);
	util_bufpool_destroy(ep->unexp_pool);
	util_bufpool_destroy(ep->rx_pool);
	weft_lock_destroy(&ep->lock);
	if (ep->local)
		ep->local_ops->close(ep->local);
	util_domain_put(ep->domain);
}

/* ---- target side of software RMA and atomics ---------------------------- */

uint64_t util_rdm_mr_events(uint32_t kind, enum fi_op op)
{
	switch (kind) {
	case UTIL_RDM_TX_WRITE:
	case UTIL_RDM_TX_ATOMIC:
		return FI_REMOTE_WRITE;
	case UTIL_RDM_TX_READ:
		return FI_REMOTE_READ;
	case UTIL_RDM_TX_FETCH_ATOMIC:
		return op == FI_ATOMIC_READ ? FI_REMOTE_READ :
					      FI_REMOTE_READ | FI_REMOTE_WRITE;
	case UTIL_RDM_TX_COMPARE_ATOMIC:
		return FI_REMOTE_READ | FI_REMOTE_WRITE;
	default:
		return 0;
	}
}

int util_rdm_target_iov(struct util_mr_map *map, const struct fi_rma_iov *rma,
			size_t count, uint64_t access, struct iovec *local,
			size_t max, size_t *nlocal)
{
	size_t i, n = 0;
	int ret;

	for (i = 0; i < count; i++) {
		size_t cnt = max - n;

		ret = util_mr_map_verify_iov(map, rma[i].key, rma[i].addr,
					     rma[i].len, access, local + n,
					     &cnt);
		if (ret)
			return ret;
		n += cnt;
	}
	*nlocal = n;
	return 0;
}

int util_rdm_target_atomic(enum fi_op op, enum fi_datatype dt,
			   const struct iovec *local, size_t nlocal,
			   const void *src, const void *cmp, void *res)
{
	size_t elem = util_atomic_dt_size(dt), i, off = 0;
	const uint8_t *s = src, *c = cmp;
	uint8_t *r = res;
	int ret;

	if (!elem)
		return -FI_EINVAL;
	for (i = 0; i < nlocal; i++) {
		size_t cnt = local[i].iov_len / elem;

		if (local[i].iov_len % elem)
			return -FI_EINVAL;
		ret = util_atomic_apply(op, dt, local[i].iov_base,
					s ? s + off : NULL, c ? c + off : NULL,
					r ? r + off : NULL, cnt);
		if (ret)
			return ret;
		off += local[i].iov_len;
	}
	return 0;
}
