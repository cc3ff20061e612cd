/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * verbs FI_EP_RDM, what arrives: the completion queue (receives, and the
 * completions of what we posted), messages handed to the engine or held,
 * answers, atomics applied for peers, receive buffers reposted with their
 * credits, and the transport's progress.  See verbs_rdm.c.
 */
#include "verbs_rdm.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* ---- arrivals ----------------------------------------------------------- */

void vrdm_rx_repost(struct verbs_rdm_ep *ep, struct vbuf *b)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)b->data,
		.length = VRDM_BUF_SIZE,
		.lkey = b->lkey,
	};
	struct ibv_recv_wr wr = {
		.wr_id = wr_id(b, VWR_RECV),
		.sg_list = &sge,
		.num_sge = 1,
	}, *bad;

	if (ibv_post_srq_recv(ep->srq, &wr, &bad))
		FI_WARN(&verbs_prov, FI_LOG_EP_DATA,
			"could not repost a receive buffer\n");
}

/* A message or RTS for the engine: 0 (taken or dropped), or -FI_EAGAIN. */
static int rx_msg(struct verbs_rdm_ep *ep, struct vconn *conn,
		  const struct vrdm_hdr *h, const struct vbuf *b)
{
	struct util_rdm_msg msg;
	struct vstash st;
	struct vpeer *vp = conn->peer;
	uint32_t refs;
	int ret;

	memset(&msg, 0, sizeof(msg));
	msg.op = (h->flags & VRDM_F_TAGGED) ?
			 UTIL_RDM_TAGGED :
			 UTIL_RDM_MSG | ((h->flags & VRDM_F_COLL) ? 2 : 0);
	msg.flags = ((h->flags & VRDM_F_CQ_DATA) ? UTIL_RDM_CQ_DATA : 0) |
		    ((h->flags & VRDM_F_ACK_REQ) ? UTIL_RDM_ACK_REQ : 0);
	msg.tag = h->tag;
	msg.data = h->data;
	msg.len = h->len;
	msg.tx_id = h->tx_id;
	msg.reply = conn;
	msg.src = FI_ADDR_NOTAVAIL;
	if (vp && (ep->rdm.base.caps & (FI_SOURCE | FI_DIRECTED_RECV))) {
		msg.src = util_peer_src(&ep->rdm.peers, &vp->peer);
		msg.src_raw = vp->peer.addr;
		msg.src_raw_len = sa_len(vp->peer.addr);
	}
	if (h->op == VRDM_OP_MSG) {
		if (vrdm_payload_decode(b->data, b->byte_len, h, &msg.payload))
			goto bad;
	} else {
		memset(&st, 0, sizeof(st));
		if (vrdm_rts_decode(b->data, b->byte_len, &st.rts))
			goto bad;
		st.conn = conn;
		st.tx_id = h->tx_id;
		st.len = h->len;
		msg.stash = &st;
		msg.stash_len = sizeof(st);
	}
	/* The engine comes back about a stash and about an ack. */
	refs = (msg.stash ? 1 : 0) + ((msg.flags & UTIL_RDM_ACK_REQ) ? 1 : 0);
	conn->refs += refs;
	ret = util_rdm_msg_arrived(&ep->xp, &msg);
	if (ret == -FI_EAGAIN) {
		conn->refs -= refs;
		return ret;
	}
	return 0;
bad:
	FI_WARN(&verbs_prov, FI_LOG_EP_DATA,
		"malformed message from a peer (%u bytes): dropped\n",
		b->byte_len);
	return 0;
}

/* An answer (FIN, ACK) names one of our transmits to that peer. */
static struct util_rdm_tx *answered_tx(struct verbs_rdm_ep *ep,
				       struct vconn *conn, uint64_t id)
{
	struct util_rdm_tx *tx = util_rdm_tx_of(&ep->rdm, id);

	if (!tx || !conn->peer || tx->peer != &conn->peer->peer) {
		FI_WARN(&verbs_prov, FI_LOG_EP_DATA,
			"answer for an unknown request %llu: ignored\n",
			(unsigned long long)id);
		return NULL;
	}
	return tx;
}

static void rx_fin(struct verbs_rdm_ep *ep, struct vconn *conn,
		   const struct vrdm_hdr *h)
{
	struct vop *op = util_bufpool_at(ep->op_pool, (uint32_t)h->data);
	struct util_rdm_tx *tx = answered_tx(ep, conn, h->tx_id);

	if (!tx)
		return;
	if (op && op->kind == VOP_RNDV && op->tx_id == h->tx_id &&
	    !dlist_empty(&op->entry))
		vrdm_op_release(ep, op);
	util_rdm_tx_done(&ep->rdm, tx, vrdm_status(h));
}

/*
 * Apply an ATOMIC request to our memory, the fetched values (if any) to
 * res; returns 0 or a positive FI_E* for the answer, with *rlen the bytes
 * of res to send.  A key, range or access the registration does not
 * allow, or a request that does not add up, is refused, never applied.
 */
static uint32_t amo_apply(struct verbs_rdm_ep *ep, const struct vrdm_hdr *h,
			  const struct vbuf *b, uint8_t *res, size_t *rlen)
{
	struct util_mr_map *map = &ep->domain->base.mr_map;
	struct iovec local[UTIL_RDM_IOV_MAX * 2];
	struct vrdm_atomic a;
	const void *src, *cmp;
	size_t len = h->len, n = 0;
	struct fi_rma_iov r;
	int ret;

	*rlen = 0;
	ret = vrdm_atomic_decode(b->data, b->byte_len, h, &a, &src, &cmp);
	if (ret)
		return (uint32_t)-ret;
	r.addr = a.addr;
	r.len = len;
	r.key = a.key;
	ret = util_rdm_target_iov(map, &r, 1,
				  FI_REMOTE_WRITE |
					  (a.kind != VRDM_AMO_WRITE ?
						   FI_REMOTE_READ :
						   0),
				  local, UTIL_RDM_IOV_MAX * 2, &n);
	/* Peers of this host may apply atomics to the same memory through
	 * shared memory (its registration table): under their lock. */
	if (!ret)
		ret = util_mr_map_atomic_lock(map);
	if (ret)
		return (uint32_t)-ret;
	ret = util_rdm_target_atomic(a.op, a.datatype, local, n, src, cmp,
				     a.kind != VRDM_AMO_WRITE ? res : NULL);
	util_mr_map_atomic_unlock(map);
	if (ret)
		return (uint32_t)-ret;
	util_rdm_remote_event(&ep->rdm, FI_REMOTE_WRITE, len, 0);
	*rlen = a.kind != VRDM_AMO_WRITE ? len : 0;
	return 0;
}

/*
 * An ATOMIC request: applied, and answered on its QP with ATOMIC_RESP
 * (status, fetched values), now or as soon as there is room.  Both the
 * answer's send buffer and what defers it are taken before the atomic is
 * applied, so an applied atomic is always answered; without them the
 * request is refused (-FI_EAGAIN: held, and offered again in order).  On
 * a connection already lost it is dropped, not applied: no answer could
 * go back, and its sender hears of the loss.
 */
static int rx_atomic(struct verbs_rdm_ep *ep, struct vconn *conn,
		     const struct vrdm_hdr *h, const struct vbuf *rb)
{
	struct vrdm_hdr r;
	struct vbuf *b;
	struct vop *op;
	uint32_t status;
	size_t rlen;
	int ret;

	if (conn->state == VC_CLOSED)
		return 0;
	b = txbuf_get(ep);
	if (!b)
		return -FI_EAGAIN;
	op = vrdm_op_get(ep, VOP_ANSWER, conn);
	if (!op) {
		txbuf_put(ep, b);
		return -FI_EAGAIN;
	}
	op->bounce = b;
	status = amo_apply(ep, h, rb, b->data + sizeof(r), &rlen);
	vrdm_hdr_put(&r, VRDM_OP_ATOMIC_RESP, 0, status, 0, 0, h->tx_id, rlen);
	memcpy(b->data, &r, sizeof(r));
	op->ans_len = (uint32_t)(sizeof(r) + rlen);
	if (dlist_empty(&conn->deferred)) {
		ret = vrdm_post_buf(ep, conn, b, op->ans_len, VRDM_ANSWER, 0);
		if (!ret)
			op->bounce = NULL; /* the SEND's now */
		if (ret != -FI_EAGAIN) {
			vrdm_op_release(ep, op);
			return 0;
		}
	}
	vrdm_op_defer(ep, op);
	return 0;
}

/* The answer to one of our ATOMIC requests: its fetched values, and the
 * transmit is done.  RMA to the peer may go once none is unanswered. */
static void rx_atomic_resp(struct verbs_rdm_ep *ep, struct vconn *conn,
			   const struct vrdm_hdr *h, const struct vbuf *b)
{
	struct util_rdm_tx *tx = answered_tx(ep, conn, h->tx_id);
	int err = vrdm_status(h);
	const void *vals;

	if (conn->amo_out)
		conn->amo_out--;
	if (!tx)
		return;
	if (tx->kind < UTIL_RDM_TX_ATOMIC) {
		FI_WARN(&verbs_prov, FI_LOG_EP_DATA,
			"atomic answer for another request: ignored\n");
		return;
	}
	if (!err && tx->kind != UTIL_RDM_TX_ATOMIC) {
		if (h->len != tx->hdr.len ||
		    vrdm_payload_decode(b->data, b->byte_len, h, &vals))
			err = FI_EIO;
		else
			util_iov_copy_to(tx->res_iov, tx->res_count, 0, vals,
					 tx->hdr.len);
	}
	util_rdm_tx_done(&ep->rdm, tx, err);
}

/*
 * One receive buffer: 0 when it may be reposted, -FI_EAGAIN when the
 * engine refused it (the caller holds it, in order).
 */
static int rx_one(struct verbs_rdm_ep *ep, struct vbuf *b)
{
	struct vconn *conn = conn_by_qpn(ep, b->qpn);
	struct vrdm_hdr hdr, *h = &hdr;

	if (weft_unlikely(!conn ||
			  vrdm_hdr_decode(b->data, b->byte_len, h))) {
		FI_WARN(&verbs_prov, FI_LOG_EP_DATA,
			"message of another protocol version or from an "
			"unknown QP: dropped\n");
		return 0;
	}
	if (weft_unlikely(conn->state != VC_OPEN))
		vrdm_conn_open(conn); /* something arrived: the peer is there */
	switch (h->op) {
	case VRDM_OP_MSG:
	case VRDM_OP_RTS:
		return rx_msg(ep, conn, h, b);
	case VRDM_OP_FIN:
		rx_fin(ep, conn, h);
		return 0;
	case VRDM_OP_ATOMIC:
		return rx_atomic(ep, conn, h, b);
	case VRDM_OP_ATOMIC_RESP:
		rx_atomic_resp(ep, conn, h, b);
		return 0;
	case VRDM_OP_ACK: {
		struct util_rdm_tx *tx = answered_tx(ep, conn, h->tx_id);

		if (tx)
			util_rdm_tx_acked(&ep->rdm, h->tx_id, vrdm_status(h));
		return 0;
	}
	case VRDM_OP_HELLO:
	case VRDM_OP_CREDIT:
		return 0;
	case VRDM_OP_WDATA:
		util_rdm_remote_event(&ep->rdm,
				      FI_REMOTE_WRITE | FI_REMOTE_CQ_DATA,
				      h->len, h->data);
		return 0;
	default:
		FI_WARN(&verbs_prov, FI_LOG_EP_DATA,
			"unknown message %u from a peer: dropped\n", h->op);
		return 0;
	}
}

/*
 * Put the buffers rx_done collected back in the SRQ, in one call, and
 * only then give the credits they stand for to the QPs whose messages
 * used them (a peer never sends to a buffer not posted: iWARP would
 * break the connection).
 */
void vrdm_repost_flush(struct verbs_rdm_ep *ep)
{
	struct ibv_recv_wr wr[VRDM_REPOST_MAX], *bad;
	struct ibv_sge sge[VRDM_REPOST_MAX];
	uint32_t i, n = ep->nrepost;

	ep->nrepost = 0;
	for (i = 0; i < n; i++) {
		struct vbuf *b = ep->repost[i];

		sge[i].addr = (uintptr_t)b->data;
		sge[i].length = VRDM_BUF_SIZE;
		sge[i].lkey = b->lkey;
		wr[i].wr_id = wr_id(b, VWR_RECV);
		wr[i].sg_list = &sge[i];
		wr[i].num_sge = 1;
		wr[i].next = i + 1 < n ? &wr[i + 1] : NULL;
	}
	if (ibv_post_srq_recv(ep->srq, wr, &bad)) {
		FI_WARN(&verbs_prov, FI_LOG_EP_DATA,
			"could not repost %u receive buffers\n",
			(unsigned int)(n - (uint32_t)(bad - wr)));
		n = (uint32_t)(bad - wr);
	}
	for (i = 0; i < n; i++) {
		struct vconn *conn = conn_by_qpn(ep, ep->repost[i]->qpn);

		if (weft_likely(conn != NULL)) {
			conn->credit_return++;
			credit_maybe(conn);
		}
	}
}

/*
 * A receive buffer is free again: back to the SRQ, and the credit it
 * stands for to the QP (b->qpn) whose message used it.  Not at once: the
 * repost waits for the next empty look at the CQ (verbs_rdm_progress), so
 * that it is off the path from a message's arrival to the application's
 * answer; the credit goes back in a later header.
 */
static void rx_done(struct verbs_rdm_ep *ep, struct vbuf *b)
{
	ep->repost[ep->nrepost++] = b;
	if (weft_unlikely(ep->nrepost == VRDM_REPOST_MAX))
		vrdm_repost_flush(ep);
}

/* Offer the held receives again, oldest first. */
static int held_run(struct verbs_rdm_ep *ep)
{
	int n = 0;

	while (!dlist_empty(&ep->held)) {
		struct vbuf *b = container_of(ep->held.next, struct vbuf,
					      entry);

		if (rx_one(ep, b) == -FI_EAGAIN)
			break;
		dlist_remove(&b->entry);
		rx_done(ep, b);
		n++;
	}
	return n;
}

static void wc_recv(struct verbs_rdm_ep *ep, struct ibv_wc *wc,
		    struct vbuf *b)
{
	struct vrdm_hdr h;
	struct vconn *conn;
	bool ours;

	if (weft_unlikely(wc->status != IBV_WC_SUCCESS)) {
		if (wc->status != IBV_WC_WR_FLUSH_ERR)
			FI_WARN(&verbs_prov, FI_LOG_EP_DATA,
				"receive failed: %s\n",
				ibv_wc_status_str(wc->status));
		if (!ep->closing)
			vrdm_rx_repost(ep, b);
		return;
	}
	conn = conn_by_qpn(ep, wc->qp_num);
	if (weft_unlikely(conn && conn->state != VC_OPEN))
		vrdm_conn_open(conn); /* something arrived: the peer is there */
	b->byte_len = wc->byte_len;
	b->qpn = wc->qp_num;
	if (wc->opcode == IBV_WC_RECV_RDMA_WITH_IMM) {
		util_rdm_remote_event(&ep->rdm,
				      FI_REMOTE_WRITE | FI_REMOTE_CQ_DATA,
				      wc->byte_len, wc->imm_data);
		rx_done(ep, b);
		return;
	}
	ours = !vrdm_hdr_decode(b->data, wc->byte_len, &h);
	if (weft_likely(conn && ours))
		conn->credits += h.credits;
	/* Behind a held one, or refused now: keep it, in order. */
	if (weft_unlikely(!dlist_empty(&ep->held)) ||
	    weft_unlikely(rx_one(ep, b) == -FI_EAGAIN)) {
		if (dlist_empty(&ep->held) ||
		    (ours && (h.op == VRDM_OP_MSG || h.op == VRDM_OP_RTS ||
			      h.op == VRDM_OP_ATOMIC))) {
			dlist_insert_tail(&b->entry, &ep->held);
			return;
		}
		/* Answers pass held messages: they are not the engine's. */
		rx_one(ep, b);
	}
	rx_done(ep, b);
}

/*
 * A work request failed for a reason of its own (not flushed): its QP is
 * in error now, and everything behind it on that QP will be flushed.  The
 * connection is lost: the peer hears of it (rdma_disconnect), and the next
 * transmit makes a new one, as the man pages want of a reliable endpoint
 * after a bad RMA key, instead of every later operation failing on the
 * dead QP.
 */
static inline void wc_broke(struct vconn *conn, struct ibv_wc *wc)
{
	if (weft_unlikely(wc->status != IBV_WC_SUCCESS &&
			  wc->status != IBV_WC_WR_FLUSH_ERR)) {
		FI_WARN(&verbs_prov, FI_LOG_EP_DATA, "work request failed: %s\n",
			ibv_wc_status_str(wc->status));
		vrdm_conn_lost(conn, verbs_wc_err(wc->status));
	}
}

static void wc_op(struct verbs_rdm_ep *ep, struct ibv_wc *wc, struct vop *op)
{
	struct vconn *conn = op->conn;
	struct util_rdm_tx *tx;
	int err;

	sq_done(ep, conn, wc);
	if (wc->status != IBV_WC_SUCCESS && !op->err)
		op->err = verbs_wc_err(wc->status);
	if (--op->pending) {
		wc_broke(conn, wc);
		return;
	}
	if (op->kind == VOP_FETCH) {
		vrdm_fetch_finish(ep, op);
		wc_broke(conn, wc);
		return;
	}
	err = op->err;
	tx = util_rdm_tx_of(&ep->rdm, op->tx_id);
	if (tx && !err && op->bounce && tx->res_count)
		util_iov_copy_to(tx->res_iov, tx->res_count, 0,
				 op->bounce->data, sizeof(uint64_t));
	vrdm_op_release(ep, op);
	if (tx)
		util_rdm_tx_done(&ep->rdm, tx, err);
	/* After its own completion: the others to the peer fail behind. */
	wc_broke(conn, wc);
}

static void wc_one(struct verbs_rdm_ep *ep, struct ibv_wc *wc)
{
	void *p = (void *)(uintptr_t)(wc->wr_id & ~VWR_KIND_MASK);
	struct vconn *conn;

	switch (wc->wr_id & VWR_KIND_MASK) {
	case VWR_RECV:
		wc_recv(ep, wc, p);
		return;
	case VWR_SEND:
		conn = ((struct vbuf *)p)->conn;
		txbuf_put(ep, p);
		break;
	case VWR_INLINE:
		conn = p;
		break;
	case VWR_OP:
		wc_op(ep, wc, p);
		return;
	case VWR_DRAIN:
		((struct vconn *)p)->drained = true;
		ep->sq_total--;
		return;
	default:
		return;
	}
	sq_done(ep, conn, wc);
	wc_broke(conn, wc);
}

static int poll_cq(struct verbs_rdm_ep *ep)
{
	struct ibv_wc wc[VRDM_POLL];
	int i, k;

	k = ibv_poll_cq(ep->cq, VRDM_POLL, wc);
	for (i = 0; i < k; i++)
		wc_one(ep, &wc[i]);
	return k > 0 ? k : 0;
}

/*
 * conn's QP went to error before the CQ was last found empty, on a
 * device that never completes what was posted after that (see
 * conn_drain): complete it here, as the device would have, flushed.
 * Its ops, its send buffers, then the signaled inline sends its slot
 * batches still count; unsignaled ones name nothing.
 */
static void self_flush(struct verbs_rdm_ep *ep, struct vconn *conn)
{
	struct ibv_wc wc = { .status = IBV_WC_WR_FLUSH_ERR };
	struct dlist_entry *e;
	struct vop *op;
	size_t i;

	/* A completion may end other ops: look again after each. */
	do {
		op = NULL;
		dlist_foreach(&ep->ops, e) {
			struct vop *o = container_of(e, struct vop, entry);

			if (o->conn == conn && o->pending) {
				op = o;
				break;
			}
		}
		if (op) {
			wc.wr_id = wr_id(op, VWR_OP);
			wc_one(ep, &wc);
		}
	} while (op);
	for (i = 0; i < VRDM_TX_BUFS; i++)
		if (ep->tx_bufs[i].conn == conn) {
			wc.wr_id = wr_id(&ep->tx_bufs[i], VWR_SEND);
			wc_one(ep, &wc);
		}
	while (conn->batch_head != conn->batch_tail) {
		wc.wr_id = wr_id(conn, VWR_INLINE);
		wc_one(ep, &wc);
	}
	conn->self_flush = false;
	conn->drained = true;
	ep->nself_flush--;
}

/* The CQ was found empty: the conns due for self_flush; how many. */
static int cq_empty(struct verbs_rdm_ep *ep)
{
	struct dlist_entry *e;
	int n = 0;

	ep->empty_seq++;
	if (!ep->nself_flush)
		return 0;
	dlist_foreach(&ep->conns, e) {
		struct vconn *conn = container_of(e, struct vconn, entry);

		if (conn->self_flush && conn->flush_seq < ep->empty_seq) {
			self_flush(ep, conn);
			n++;
		}
	}
	return n;
}

/* The CQ was empty: what waits for that (reposts), or for time. */
static __attribute__((noinline)) int progress_idle(struct verbs_rdm_ep *ep)
{
	int n;

	n = cq_empty(ep);
	if (ep->nrepost)
		vrdm_repost_flush(ep);
	if (ep->cm_busy || !(ep->calls & 4095))
		n += vrdm_cm_progress(ep);
	/* A scalable endpoint's pair: requests pair 0 handed it, and now
	 * and then pair 0's listener. */
	if (ep->sep)
		n += vrdm_pair_progress(ep, !(ep->calls & 4095));
	if (ep->ndead && !(ep->calls & 63))
		vrdm_conn_reap(ep);
	return n;
}

/* Progress: the CQ, and what waits on credits or buffers; connection
 * events only now and then once connections are made, since each look at
 * the rdma_cm channel is a system call.  The completion channel is left
 * alone here: verbs_rdm_arm arms it when a thread is about to sleep.  An
 * empty look at the CQ, what a busy-polling reader does most, costs a few
 * tests besides the device's poll. */
int verbs_rdm_progress(struct util_rdm_xport *xp)
{
	struct util_rdm_ep *rdm = xp->ep;
	struct verbs_rdm_ep *ep = vep_of(rdm);
	int k, n;

	if (weft_unlikely(ep->closing))
		return 0;
	n = k = poll_cq(ep);
	ep->calls++;
	if (!k && (ep->nrepost || ep->cm_busy || ep->nself_flush ||
		   (ep->ndead && !(ep->calls & 63)) || !(ep->calls & 4095) ||
		   (ep->sep && util_rdm_inbox_ready(&ep->sep->base, ep->ctx))))
		n += progress_idle(ep);
	if (weft_unlikely(!dlist_empty(&ep->held)))
		n += held_run(ep);
	if (weft_unlikely(ep->ndeferred))
		vrdm_deferred_run(ep);
	if (k && (ep->cm_busy || !(ep->calls & 16383)))
		n += vrdm_cm_progress(ep);
	return n;
}

/*
 * A thread is about to sleep on the wait fd (the completion channel and
 * the rdma_cm channel): take the connection events (the channel stays
 * readable while any are pending), take the completion channel's events
 * and arm the CQ for the next completion, then look once more, since one
 * may have come before the arming.
 */
int verbs_rdm_arm(struct util_rdm_xport *xp)
{
	struct util_rdm_ep *rdm = xp->ep;
	struct verbs_rdm_ep *ep = vep_of(rdm);
	struct ibv_cq *cq;
	void *ctx;
	int n, k;

	if (weft_unlikely(ep->closing))
		return 0;
	n = vrdm_cm_progress(ep);
	if (ep->sep)
		n += vrdm_pair_progress(ep, true);
	vrdm_conn_reap(ep);
	/* Credits a sleeping peer may wait for go back before we sleep. */
	if (ep->nrepost)
		vrdm_repost_flush(ep);
	while (!ibv_get_cq_event(ep->comp_ch, &cq, &ctx)) {
		ibv_ack_cq_events(cq, 1);
		ep->cq_armed = false;
	}
	if (!ep->cq_armed && !ibv_req_notify_cq(ep->cq, 0))
		ep->cq_armed = true;
	k = poll_cq(ep);
	/* What the device will never complete raises no CQ event: end
	 * it now rather than sleep on it. */
	if (!k)
		k = cq_empty(ep);
	return n + k;
}
