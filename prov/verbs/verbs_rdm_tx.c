/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * verbs FI_EP_RDM, what we send: posting SENDs within the peer's credits
 * and the send queue's room, what waits for either, and the engine's
 * transmit calls (eager, rendezvous, RMA, atomics, fetch of a rendezvous
 * message, its discard, acknowledgements).  See verbs_rdm.c.
 */
#include "verbs_rdm.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static int fetch_start(struct verbs_rdm_ep *ep, struct vop *op);

/* ---- posting ----------------------------------------------------------- */

static const uint32_t vrdm_keep[] = {
	[VRDM_DATA] = VRDM_CREDIT_DATA,
	[VRDM_ANSWER] = 1,
	[VRDM_RETURN] = 0,
};

/*
 * Send the len bytes of send buffer b (a header, whose credits are filled
 * in here, and what follows it) as one SEND on conn; b goes back to the
 * free list at its completion.  0, -FI_EAGAIN (no room or credit) or an
 * error from the device: then b is still the caller's.
 */
int vrdm_post_buf(struct verbs_rdm_ep *ep, struct vconn *conn,
		  struct vbuf *b, size_t len, enum vrdm_class cls,
		  uint64_t late)
{
	struct ibv_send_wr wr, *bad;
	struct ibv_sge sge;
	uint16_t give;
	int ret;

	if (weft_unlikely(conn->credits <= vrdm_keep[cls] ||
			  !sq_room(ep, conn, 1, cls == VRDM_DATA)))
		return -FI_EAGAIN;
	give = (uint16_t)WEFT_MIN(conn->credit_return, (uint32_t)UINT16_MAX);
	vrdm_hdr_put_credits(b->data, give);
	sge.addr = (uintptr_t)b->data;
	sge.length = (uint32_t)len;
	sge.lkey = ep->tx_mr->lkey;
	memset(&wr, 0, sizeof(wr));
	wr.opcode = IBV_WR_SEND;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.wr_id = wr_id(b, VWR_SEND);
	b->conn = conn;
	ret = ibv_post_send(conn->qp, &wr, &bad);
	if (weft_unlikely(ret)) {
		b->conn = NULL;
		return ret == ENOMEM ? -FI_EAGAIN : post_errno(ret);
	}
	sq_take(ep, conn, 1);
	conn->late[(conn->batch_tail - 1) % VRDM_SQ_DEPTH] = late;
	conn->credits--;
	conn->credit_return -= give;
	return 0;
}

/*
 * Send hdr (hdr_len bytes, its credits filled in here) and len bytes of
 * iov as one SEND on conn: inline when it fits, else through a send
 * buffer.  0, or -FI_EAGAIN (no room, credit or buffer), or an error from
 * the device.
 */
static int post_msg(struct verbs_rdm_ep *ep, struct vconn *conn,
		    struct vrdm_hdr *hdr, size_t hdr_len,
		    const struct iovec *iov, size_t count, size_t len,
		    enum vrdm_class cls, uint64_t late)
{
	struct ibv_sge sge[UTIL_RDM_IOV_MAX + 1];
	struct ibv_send_wr wr, *bad;
	uint32_t give;
	size_t i, n;
	int ret;

	if (weft_unlikely(conn->credits <= vrdm_keep[cls] ||
			  !sq_room(ep, conn, 1, cls == VRDM_DATA)))
		return -FI_EAGAIN;
	give = WEFT_MIN(conn->credit_return, (uint32_t)UINT16_MAX);
	hdr->credits = (uint16_t)give;
	memset(&wr, 0, sizeof(wr));
	wr.opcode = IBV_WR_SEND;
	wr.sg_list = sge;
	if (hdr_len + len <= ep->max_inline && count < ep->max_sge) {
		sge[0].addr = (uintptr_t)hdr;
		sge[0].length = (uint32_t)hdr_len;
		sge[0].lkey = 0;
		for (i = 0, n = 1; i < count; i++) {
			if (!iov[i].iov_len)
				continue;
			sge[n].addr = (uintptr_t)iov[i].iov_base;
			sge[n].length = (uint32_t)iov[i].iov_len;
			sge[n++].lkey = 0;
		}
		wr.num_sge = (int)n;
		wr.send_flags = IBV_SEND_INLINE;
		/* Nothing to free at its completion: ask for one every 16th
		 * send only (or when the queue fills), for slot accounting. */
		if (late || conn->unsig >= 15 || !sq_room(ep, conn, 8, true))
			wr.send_flags |= IBV_SEND_SIGNALED;
		wr.wr_id = wr_id(conn, VWR_INLINE);
	} else {
		struct vbuf *b = txbuf_get(ep);

		if (!b)
			return -FI_EAGAIN;
		memcpy(b->data, hdr, hdr_len);
		util_iov_copy_from(b->data + hdr_len, iov, count, 0, len);
		ret = vrdm_post_buf(ep, conn, b, hdr_len + len, cls, late);
		if (weft_unlikely(ret))
			txbuf_put(ep, b);
		return ret;
	}
	ret = ibv_post_send(conn->qp, &wr, &bad);
	if (weft_unlikely(ret))
		return ret == ENOMEM ? -FI_EAGAIN : post_errno(ret);
	if (wr.send_flags & IBV_SEND_SIGNALED) {
		sq_take(ep, conn, 1);
		conn->late[(conn->batch_tail - 1) % VRDM_SQ_DEPTH] = late;
	} else {
		conn->unsig++;
		conn->sq_used++;
	}
	conn->credits--;
	conn->credit_return -= give;
	return 0;
}

struct vop *vrdm_op_get(struct verbs_rdm_ep *ep, enum vop_kind kind,
			struct vconn *conn)
{
	struct vop *op = util_bufpool_get(ep->op_pool);

	if (!op)
		return NULL;
	memset(op, 0, offsetof(struct vop, wr));
	op->kind = kind;
	op->conn = conn;
	dlist_init(&op->dentry);
	dlist_insert_tail(&op->entry, &ep->ops);
	return op;
}

void vrdm_op_release(struct verbs_rdm_ep *ep, struct vop *op)
{
	size_t i;

	for (i = 0; i < op->nmr; i++)
		util_mr_cache_put(&ep->domain->mr_cache, op->mr[i]);
	if (op->bounce)
		txbuf_put(ep, op->bounce);
	if (op->copy)
		txbuf_put(ep, op->copy);
	dlist_remove(&op->entry);
	util_bufpool_put(ep->op_pool, op);
}

/* Post an op's prepared work requests: 0, or -FI_EAGAIN (no room). */
static int op_post(struct verbs_rdm_ep *ep, struct vop *op, bool data)
{
	struct ibv_send_wr *bad;
	size_t i;
	int ret;

	if (!sq_room(ep, op->conn, (uint32_t)op->nwr, data))
		return -FI_EAGAIN;
	for (i = 0; i < op->nwr; i++) {
		op->wr[i].wr_id = wr_id(op, VWR_OP);
		op->wr[i].send_flags |= IBV_SEND_SIGNALED;
		op->wr[i].next = i + 1 < op->nwr ? &op->wr[i + 1] : NULL;
	}
	ret = ibv_post_send(op->conn->qp, op->wr, &bad);
	if (ret) {
		/* Some may have gone: count those, they will complete. */
		size_t posted = (size_t)(bad - op->wr);

		sq_take(ep, op->conn, (uint32_t)posted);
		op->pending = (uint32_t)posted;
		return ret == ENOMEM && !posted ? -FI_EAGAIN : post_errno(ret);
	}
	sq_take(ep, op->conn, (uint32_t)op->nwr);
	op->pending = (uint32_t)op->nwr;
	return 0;
}

void vrdm_op_defer(struct verbs_rdm_ep *ep, struct vop *op)
{
	dlist_insert_tail(&op->dentry, &op->conn->deferred);
	ep->ndeferred++;
}

/* FIN, ACK, HELLO: now, or behind what waits for room on the conn. */
int vrdm_ctrl_send(struct vconn *conn, uint8_t opc, uint64_t tx_id,
		   uint64_t data, uint32_t status)
{
	struct verbs_rdm_ep *ep = conn->ep;
	struct vrdm_hdr h;
	struct vop *op;
	int ret;

	if (conn->state != VC_OPEN)
		return -FI_ENOTCONN;
	vrdm_hdr_put(&h, opc, 0, status, 0, data, tx_id, 0);
	/* A CREDIT need not keep its place behind what waits (credit_run). */
	if (dlist_empty(&conn->deferred) || opc == VRDM_OP_CREDIT) {
		ret = post_msg(ep, conn, &h, sizeof(h), NULL, 0, 0,
			       opc == VRDM_OP_CREDIT ? VRDM_RETURN :
						       VRDM_ANSWER, 0);
		if (ret != -FI_EAGAIN)
			return ret;
	}
	op = vrdm_op_get(ep, VOP_CTRL, conn);
	if (!op)
		return -FI_ENOMEM;
	op->ctrl = h;
	if (opc == VRDM_OP_CREDIT)
		conn->credit_queued = true;
	vrdm_op_defer(ep, op);
	return 0;
}

/*
 * The CREDIT waiting on conn, ahead of what waits before it.  What waits
 * (a FIN, an ACK, data) may wait for credits that the peer can give only
 * once it has ours: when both sides are down to their last credits with
 * answers queued, each holding back the other's CREDIT behind them would
 * stop both for good.  A CREDIT carries nothing else, so it may pass.
 */
static void credit_run(struct verbs_rdm_ep *ep, struct vconn *conn)
{
	struct dlist_entry *e;

	dlist_foreach(&conn->deferred, e) {
		struct vop *op = container_of(e, struct vop, dentry);

		if (op->kind != VOP_CTRL || op->ctrl.op != VRDM_OP_CREDIT)
			continue;
		if (conn->credit_return &&
		    post_msg(ep, conn, &op->ctrl, sizeof(op->ctrl), NULL, 0, 0,
			     VRDM_RETURN, 0) == -FI_EAGAIN)
			return;
		conn->credit_queued = false;
		dlist_remove(&op->dentry);
		ep->ndeferred--;
		vrdm_op_release(ep, op);
		return;
	}
}

/* Post what waits on each conn, in order, while there is room; a
 * waiting CREDIT first (credit_run). */
void vrdm_deferred_run(struct verbs_rdm_ep *ep)
{
	struct dlist_entry *ce;

	dlist_foreach(&ep->conns, ce) {
		struct vconn *conn = container_of(ce, struct vconn, entry);

		if (weft_unlikely(conn->credit_queued))
			credit_run(ep, conn);
		while (!dlist_empty(&conn->deferred)) {
			struct vop *op = container_of(conn->deferred.next,
						      struct vop, dentry);
			int ret;

			if (op->kind == VOP_CTRL &&
			    op->ctrl.op == VRDM_OP_CREDIT) {
				conn->credit_queued = false;
				ret = conn->credit_return ?
					      post_msg(ep, conn, &op->ctrl,
						       sizeof(op->ctrl), NULL,
						       0, 0, VRDM_RETURN, 0) :
					      0;
				if (ret == -FI_EAGAIN)
					conn->credit_queued = true;
			} else if (op->kind == VOP_CTRL) {
				ret = post_msg(ep, conn, &op->ctrl,
					       sizeof(op->ctrl), NULL, 0, 0,
					       VRDM_ANSWER, 0);
			} else if (op->kind == VOP_ANSWER) {
				ret = vrdm_post_buf(ep, conn, op->bounce,
						    op->ans_len, VRDM_ANSWER, 0);
				if (!ret)
					op->bounce = NULL; /* the SEND's */
			} else {
				ret = op_post(ep, op, false);
			}
			if (ret == -FI_EAGAIN)
				break;
			dlist_remove(&op->dentry);
			ep->ndeferred--;
			if (op->kind == VOP_CTRL || op->kind == VOP_ANSWER) {
				vrdm_op_release(ep, op);
			} else if (ret && !op->pending) {
				op->err = -ret;
				vrdm_fetch_finish(ep, op);
			} else if (ret) {
				op->err = -ret;
			}
		}
	}
}

/* ---- the transport ------------------------------------------------------ */

static inline uint16_t wire_flags(uint32_t op, uint32_t rdm_flags)
{
	return (uint16_t)((op == UTIL_RDM_TAGGED ? VRDM_F_TAGGED : 0) |
			  (op == UTIL_RDM_COLL ? VRDM_F_COLL : 0) |
			  ((rdm_flags & UTIL_RDM_CQ_DATA) ? VRDM_F_CQ_DATA : 0) |
			  ((rdm_flags & UTIL_RDM_ACK_REQ) ? VRDM_F_ACK_REQ : 0));
}

int verbs_rdm_send_eager(struct util_rdm_xport *xp,
			 struct util_peer *peer,
			 const struct util_rdm_hdr *hdr,
			 const struct iovec *iov, void **desc,
			 size_t iov_count)
{
	struct util_rdm_ep *rdm = xp->ep;
	struct verbs_rdm_ep *ep = vep_of(rdm);
	struct vrdm_hdr h;
	struct vconn *conn;
	bool late;
	int ret;

	(void)desc;
	ret = peer_conn(ep, peer, &conn);
	if (weft_unlikely(ret))
		return ret;
	vrdm_hdr_put(&h, VRDM_OP_MSG, wire_flags(hdr->op, hdr->flags), 0,
		     hdr->tag, (uint32_t)hdr->data /* cq_data_size */,
		     hdr->tx_id, hdr->len);
	/* UTIL_RDM_LATE: done at the work completion, once the peer's
	 * device acknowledged it (a dead peer's never does). */
	late = hdr->flags & UTIL_RDM_LATE;
	ret = post_msg(ep, conn, &h, sizeof(h), iov, iov_count, hdr->len,
		       VRDM_DATA, late ? hdr->tx_id : 0);
	return !ret && late ? -FI_EINPROGRESS : ret;
}

/* A registration covering [addr, addr+len) with access, or a new one. */
static int mr_for(struct verbs_rdm_ep *ep, struct vop *op, void *desc,
		  void *addr, size_t len, uint64_t need, uint32_t *lkey,
		  uint32_t *rkey)
{
	struct verbs_mr *vm = desc;
	struct util_mr_cache_entry *e;
	struct ibv_mr *mr;
	int ret;

	if (vm && (!need || (vm->access & need) == need)) {
		*lkey = vm->mr->lkey;
		if (rkey)
			*rkey = vm->mr->rkey;
		return 0;
	}
	if (op->nmr == VRDM_OP_WR_MAX)
		return -FI_EINVAL;
	/* Kept by the domain's cache: the next message from the same
	 * buffer needs no registration, and freed memory drops it. */
	ret = util_mr_cache_get(&ep->domain->mr_cache, addr, len,
				IBV_ACCESS_LOCAL_WRITE |
					((need & FI_REMOTE_READ) ?
						 IBV_ACCESS_REMOTE_READ :
						 0),
				&e);
	if (ret)
		return ret;
	op->mr[op->nmr++] = e;
	mr = e->handle;
	*lkey = mr->lkey;
	if (rkey)
		*rkey = mr->rkey;
	return 0;
}

int verbs_rdm_send_rndv(struct util_rdm_xport *xp, struct util_rdm_tx *tx)
{
	struct util_rdm_ep *rdm = xp->ep;
	struct verbs_rdm_ep *ep = vep_of(rdm);
	struct {
		struct vrdm_hdr h;
		struct vrdm_rts rts;
	} m;
	struct vconn *conn;
	struct vop *op;
	uint32_t lkey, rkey;
	size_t i, n = 0;
	int ret;

	ret = peer_conn(ep, tx->peer, &conn);
	if (ret)
		return ret;
	if (!sq_room(ep, conn, 1, true))
		return -FI_EAGAIN;
	op = vrdm_op_get(ep, VOP_RNDV, conn);
	if (!op)
		return -FI_EAGAIN;
	op->tx_id = tx->hdr.tx_id;
	memset(&m, 0, sizeof(m));
	for (i = 0; i < tx->iov_count; i++) {
		if (!tx->iov[i].iov_len)
			continue;
		ret = mr_for(ep, op, tx->desc[i], tx->iov[i].iov_base,
			     tx->iov[i].iov_len, FI_REMOTE_READ, &lkey, &rkey);
		if (ret)
			goto err;
		vrdm_rts_put_seg(&m.rts, (uint32_t)n++,
				 (uintptr_t)tx->iov[i].iov_base, rkey,
				 tx->iov[i].iov_len);
	}
	m.rts.count = (uint32_t)n;
	m.rts.cookie = (uint32_t)util_bufpool_index(ep->op_pool, op);
	vrdm_hdr_put(&m.h, VRDM_OP_RTS, wire_flags(tx->hdr.op, tx->hdr.flags),
		     0, tx->hdr.tag, (uint32_t)tx->hdr.data, tx->hdr.tx_id,
		     tx->hdr.len);
	ret = post_msg(ep, conn, &m.h, sizeof(m.h) + VRDM_RTS_LEN(n), NULL, 0,
		       0, VRDM_DATA, 0);
	if (ret)
		goto err;
	return 0;
err:
	vrdm_op_release(ep, op);
	return ret;
}

/* The largest message one work request may carry. */
static inline size_t wr_max(struct verbs_rdm_ep *ep)
{
	return ep->domain->dev.max_msg_sz ? ep->domain->dev.max_msg_sz :
					    (1u << 31);
}

/*
 * An atomic for the target to apply: one ATOMIC message (header, struct
 * vrdm_atomic, operands, compare values), as data.  The transmit completes
 * at the answer (rx_atomic_resp), once the target applied it.
 */
static int amo_send(struct verbs_rdm_ep *ep, struct util_rdm_tx *tx)
{
	struct {
		struct vrdm_hdr h;
		struct vrdm_atomic a;
	} m;
	struct iovec iov[2 * UTIL_RDM_IOV_MAX];
	size_t n = 0, len = tx->hdr.len, plen = 0;
	struct vconn *conn;
	int ret;

	if (len > VRDM_ATOMIC_MAX || tx->rma_iov[0].key > UINT32_MAX)
		return -FI_EINVAL;
	ret = peer_conn(ep, tx->peer, &conn);
	if (ret)
		return ret;
	vrdm_hdr_put(&m.h, VRDM_OP_ATOMIC, 0, 0, 0, 0, tx->hdr.tx_id, len);
	vrdm_atomic_put(&m.a, tx->rma_iov[0].addr,
			(uint32_t)tx->rma_iov[0].key,
			tx->kind == UTIL_RDM_TX_ATOMIC	     ? VRDM_AMO_WRITE :
			tx->kind == UTIL_RDM_TX_FETCH_ATOMIC ? VRDM_AMO_FETCH :
							       VRDM_AMO_COMPARE,
			(uint8_t)tx->atomic_op, (uint8_t)tx->datatype);
	if (tx->atomic_op != FI_ATOMIC_READ) {
		memcpy(iov, tx->iov, tx->iov_count * sizeof(*iov));
		n = tx->iov_count;
		plen = len;
	}
	if (tx->kind == UTIL_RDM_TX_COMPARE_ATOMIC) {
		memcpy(iov + n, tx->cmp_iov, tx->cmp_count * sizeof(*iov));
		n += tx->cmp_count;
		plen += len;
	}
	ret = post_msg(ep, conn, &m.h, sizeof(m), iov, n, plen, VRDM_DATA, 0);
	if (!ret)
		conn->amo_out++;
	return ret;
}

int verbs_rdm_rma(struct util_rdm_xport *xp, struct util_rdm_tx *tx)
{
	struct util_rdm_ep *rdm = xp->ep;
	struct verbs_rdm_ep *ep = vep_of(rdm);
	struct vconn *conn;
	struct vop *op;
	uint64_t raddr;
	uint32_t lkey;
	size_t i, n = 0;
	bool imm;
	int ret;

	if (tx->rma_count != 1)
		return -FI_EOPNOTSUPP;
	if (tx->kind >= UTIL_RDM_TX_ATOMIC && !ep->amo_device)
		return amo_send(ep, tx);
	if (tx->kind >= UTIL_RDM_TX_ATOMIC &&
	    (!ep->domain->dev.atomics || tx->hdr.len != sizeof(uint64_t) ||
	     (tx->datatype != FI_UINT64 && tx->datatype != FI_INT64) ||
	     (tx->kind == UTIL_RDM_TX_COMPARE_ATOMIC ? tx->atomic_op != FI_CSWAP :
						      tx->atomic_op != FI_SUM) ||
	     !tx->iov_count))
		return -FI_EOPNOTSUPP;
	ret = peer_conn(ep, tx->peer, &conn);
	if (ret)
		return ret;
	/* Not past an atomic the target has still to apply: the write
	 * would land first (FI_ORDER_WAW, and reads FI_ORDER_RAW).  The
	 * engine keeps it queued, in order, until the answer. */
	if (weft_unlikely(conn->amo_out))
		return -FI_EAGAIN;
	/* Remote CQ data takes one of the target's receives. */
	imm = tx->kind == UTIL_RDM_TX_WRITE &&
	      (tx->hdr.flags & UTIL_RDM_CQ_DATA);
	if (imm && conn->credits <= VRDM_CREDIT_DATA)
		return -FI_EAGAIN;
	op = vrdm_op_get(ep, VOP_RMA, conn);
	if (!op)
		return -FI_EAGAIN;
	op->tx_id = tx->hdr.tx_id;
	raddr = tx->rma_iov[0].addr;
	memset(op->wr, 0, sizeof(op->wr));
	if (tx->kind >= UTIL_RDM_TX_ATOMIC) {
		uint64_t operand = 0, cmp = 0;

		util_iov_copy_from(&operand, tx->iov, tx->iov_count, 0, 8);
		if (tx->kind == UTIL_RDM_TX_COMPARE_ATOMIC)
			util_iov_copy_from(&cmp, tx->cmp_iov, tx->cmp_count, 0,
					   8);
		op->bounce = txbuf_get(ep);
		if (!op->bounce) {
			ret = -FI_EAGAIN;
			goto err;
		}
		op->sge[0].addr = (uintptr_t)op->bounce->data;
		op->sge[0].length = 8;
		op->sge[0].lkey = ep->tx_mr->lkey;
		op->wr[0].sg_list = op->sge;
		op->wr[0].num_sge = 1;
		op->wr[0].wr.atomic.remote_addr = raddr;
		op->wr[0].wr.atomic.rkey = (uint32_t)tx->rma_iov[0].key;
		if (tx->kind == UTIL_RDM_TX_COMPARE_ATOMIC) {
			op->wr[0].opcode = IBV_WR_ATOMIC_CMP_AND_SWP;
			op->wr[0].wr.atomic.compare_add = cmp;
			op->wr[0].wr.atomic.swap = operand;
		} else {
			op->wr[0].opcode = IBV_WR_ATOMIC_FETCH_AND_ADD;
			op->wr[0].wr.atomic.compare_add = operand;
		}
		n = 1;
	} else {
		bool wr = tx->kind == UTIL_RDM_TX_WRITE;
		bool inl = wr && tx->hdr.len <= ep->max_inline;

		/* Injected data is the caller's again when we return, and
		 * the device reads it later: write it from a copy. */
		if (wr && !inl && (tx->flags & FI_INJECT) && tx->hdr.len &&
		    tx->hdr.len <= VRDM_BUF_SIZE) {
			op->copy = txbuf_get(ep);
			if (!op->copy) {
				ret = -FI_EAGAIN;
				goto err;
			}
			util_iov_copy_from(op->copy->data, tx->iov,
					   tx->iov_count, 0, tx->hdr.len);
			op->sge[0].addr = (uintptr_t)op->copy->data;
			op->sge[0].length = (uint32_t)tx->hdr.len;
			op->sge[0].lkey = ep->tx_mr->lkey;
			op->wr[0].sg_list = op->sge;
			op->wr[0].num_sge = 1;
			op->wr[0].opcode = IBV_WR_RDMA_WRITE;
			op->wr[0].wr.rdma.remote_addr = raddr;
			op->wr[0].wr.rdma.rkey = (uint32_t)tx->rma_iov[0].key;
			n = 1;
		}
		for (i = 0; i < tx->iov_count && !op->copy; i++) {
			size_t off = 0, len = tx->iov[i].iov_len;

			while (off < len) {
				size_t chunk = WEFT_MIN(len - off, wr_max(ep));

				/* Room for the immediate's message and the
				 * delivery read behind the writes. */
				if (n >= VRDM_OP_WR_MAX - 2) {
					ret = -FI_EINVAL;
					goto err;
				}
				lkey = 0;
				if (!inl) {
					ret = mr_for(ep, op, tx->desc[i],
						     tx->iov[i].iov_base,
						     tx->iov[i].iov_len, 0,
						     &lkey, NULL);
					if (ret)
						goto err;
				}
				op->sge[n].addr =
					(uintptr_t)tx->iov[i].iov_base + off;
				op->sge[n].length = (uint32_t)chunk;
				op->sge[n].lkey = lkey;
				op->wr[n].sg_list = &op->sge[n];
				op->wr[n].num_sge = 1;
				op->wr[n].opcode = wr ? IBV_WR_RDMA_WRITE :
							IBV_WR_RDMA_READ;
				op->wr[n].send_flags = inl ? IBV_SEND_INLINE : 0;
				op->wr[n].wr.rdma.remote_addr = raddr;
				op->wr[n].wr.rdma.rkey =
					(uint32_t)tx->rma_iov[0].key;
				raddr += chunk;
				off += chunk;
				n++;
			}
		}
		if (wr && (tx->hdr.flags & UTIL_RDM_CQ_DATA)) {
			if (!n) { /* zero bytes: the immediate alone */
				op->wr[0].opcode = IBV_WR_RDMA_WRITE;
				op->wr[0].wr.rdma.remote_addr = raddr;
				op->wr[0].wr.rdma.rkey =
					(uint32_t)tx->rma_iov[0].key;
				n = 1;
			}
			if (ep->domain->dev.iwarp) {
				/* iWARP has no immediate data: a message
				 * behind the write, which it cannot pass. */
				struct vrdm_hdr wd;

				vrdm_hdr_put(&wd, VRDM_OP_WDATA, 0, 0, 0,
					     (uint32_t)tx->hdr.data, 0,
					     tx->hdr.len);
				op->bounce = txbuf_get(ep);
				if (!op->bounce) {
					ret = -FI_EAGAIN;
					goto err;
				}
				memcpy(op->bounce->data, &wd, sizeof(wd));
				op->sge[n].addr = (uintptr_t)op->bounce->data;
				op->sge[n].length = sizeof(wd);
				op->sge[n].lkey = ep->tx_mr->lkey;
				op->wr[n].sg_list = &op->sge[n];
				op->wr[n].num_sge = 1;
				op->wr[n].opcode = IBV_WR_SEND;
				n++;
			} else {
				op->wr[n - 1].opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
				op->wr[n - 1].imm_data = (uint32_t)tx->hdr.data;
			}
		}
		if (!n) { /* a zero-byte read or write: nothing to move */
			vrdm_op_release(ep, op);
			util_rdm_tx_done(rdm, tx, 0);
			return 0;
		}
		/*
		 * On iWARP a write completes once the data has left (TCP took
		 * it), before the target has checked the key and placed it.
		 * A completion of a reliable endpoint says more (fi_cq(3):
		 * FI_TRANSMIT_COMPLETE, the default, has the peer's transport
		 * holding the data; FI_DELIVERY_COMPLETE has it placed), and
		 * a write with a bad key must complete in error: a
		 * small read behind the writes is answered only after
		 * they were placed, and fails with them (the target ends the
		 * stream on an access error).  Writes without a completion
		 * take it too: a counter counts their errors.
		 */
		if (wr && ep->domain->fence_mr && conn->fence.rkey) {
			/* The peer's own fence region: the user's may not
			 * allow reads. */
			verbs_fence_wr(ep->domain, &conn->fence, &op->wr[n],
				       &op->sge[n]);
			n++;
		}
	}
	op->nwr = n;
	ret = op_post(ep, op, true);
	if (ret && !op->pending)
		goto err;
	if (imm)
		conn->credits--;
	if (ret)
		op->err = -ret; /* the posted ones complete, then it fails */
	return 0;
err:
	vrdm_op_release(ep, op);
	return ret;
}

static void stash_get(const void *stash, struct vstash *st)
{
	memcpy(st, stash, sizeof(*st));
}

/* The reads of a fetch are done (or failed): tell the sender and the
 * engine. */
void vrdm_fetch_finish(struct verbs_rdm_ep *ep, struct vop *op)
{
	void *cookie = op->fetch_cookie;
	int err = op->err;

	if (op->conn->state == VC_OPEN && !ep->closing)
		vrdm_ctrl_send(op->conn, VRDM_OP_FIN, op->tx_id, op->cookie,
			       (uint32_t)err);
	vrdm_op_release(ep, op);
	util_rdm_fetch_done(&ep->rdm, cookie, err);
}

int verbs_rdm_fetch(struct util_rdm_xport *xp, const void *stash,
		    const struct iovec *iov, void **desc,
		    size_t iov_count, size_t len, void *cookie)
{
	struct util_rdm_ep *rdm = xp->ep;
	struct verbs_rdm_ep *ep = vep_of(rdm);
	struct vstash st;
	struct vop *op;
	size_t li = 0, loff = 0, ri = 0, roff = 0, left, n = 0;
	uint32_t lkey;
	int ret;

	stash_get(stash, &st);
	st.conn->refs--; /* the stash is used up; an op names conn now */
	if (st.conn->state != VC_OPEN)
		return -FI_ECONNRESET;
	op = vrdm_op_get(ep, VOP_FETCH, st.conn);
	if (!op)
		return -FI_ENOMEM;
	op->tx_id = st.tx_id;
	op->cookie = st.rts.cookie;
	op->fetch_cookie = cookie;
	memset(op->wr, 0, sizeof(op->wr));
	left = WEFT_MIN(len, st.len);
	/* One read per piece where a local and a remote segment overlap
	 * (devices such as siw read into one SGE only). */
	while (left) {
		size_t chunk;

		while (li < iov_count && loff == iov[li].iov_len) {
			li++;
			loff = 0;
		}
		while (ri < st.rts.count && roff == st.rts.seg[ri].len) {
			ri++;
			roff = 0;
		}
		if (li == iov_count || ri == st.rts.count ||
		    n == VRDM_OP_WR_MAX) {
			ret = -FI_EINVAL;
			goto err;
		}
		chunk = WEFT_MIN(iov[li].iov_len - loff,
				 st.rts.seg[ri].len - roff);
		chunk = WEFT_MIN(chunk, left);
		chunk = WEFT_MIN(chunk, wr_max(ep));
		ret = mr_for(ep, op, desc ? desc[li] : NULL, iov[li].iov_base,
			     iov[li].iov_len, 0, &lkey, NULL);
		if (ret)
			goto err;
		op->sge[n].addr = (uintptr_t)iov[li].iov_base + loff;
		op->sge[n].length = (uint32_t)chunk;
		op->sge[n].lkey = lkey;
		op->wr[n].sg_list = &op->sge[n];
		op->wr[n].num_sge = 1;
		op->wr[n].opcode = IBV_WR_RDMA_READ;
		op->wr[n].wr.rdma.remote_addr = st.rts.seg[ri].addr + roff;
		op->wr[n].wr.rdma.rkey = st.rts.seg[ri].rkey;
		n++;
		loff += chunk;
		roff += chunk;
		left -= chunk;
	}
	op->nwr = n;
	ret = fetch_start(ep, op);
	if (ret)
		return ret;
	return -FI_EINPROGRESS;
err:
	vrdm_op_release(ep, op);
	return ret;
}

/* Post a fetch's reads, or queue them; a fetch of nothing finishes now. */
static int fetch_start(struct verbs_rdm_ep *ep, struct vop *op)
{
	int ret;

	if (!op->nwr) {
		vrdm_fetch_finish(ep, op);
		return 0;
	}
	if (dlist_empty(&op->conn->deferred)) {
		ret = op_post(ep, op, false);
		if (!ret)
			return 0;
		if (ret != -FI_EAGAIN) {
			op->err = -ret;
			if (!op->pending)
				vrdm_fetch_finish(ep, op);
			return 0;
		}
	}
	vrdm_op_defer(ep, op);
	return 0;
}

void verbs_rdm_discard(struct util_rdm_xport *xp, const void *stash)
{
	struct util_rdm_ep *rdm = xp->ep;
	struct verbs_rdm_ep *ep = vep_of(rdm);
	struct vstash st;

	stash_get(stash, &st);
	st.conn->refs--;
	if (ep->closing)
		return;
	if (st.conn->state == VC_OPEN)
		vrdm_ctrl_send(st.conn, VRDM_OP_FIN, st.tx_id, st.rts.cookie, 0);
}

int verbs_rdm_ack(struct util_rdm_xport *xp, void *reply, uint64_t tx_id,
		  int err)
{
	struct vconn *conn = reply;
	int ret;

	(void)xp;
	ret = vrdm_ctrl_send(conn, VRDM_OP_ACK, tx_id, 0, (uint32_t)err);
	conn->refs--;
	return ret;
}
