/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * verbs FI_EP_MSG endpoints: the data path straight onto one RC QP.
 *
 * The endpoint sits on the endpoint base (weft/util_ep.h), not on the RDM
 * engine: binding CQs, counters and the EQ, fi_enable, op flags, the
 * progress hooks and automatic progress, and completion and counter
 * reporting are the base's.  The data calls map straight onto verbs:
 * fi_send is ibv_post_send, fi_recv is ibv_post_recv into the
 * application's buffer, fi_read / fi_write are RDMA READ / WRITE, 64-bit
 * FI_SUM and FI_CSWAP are the device's atomics.
 *
 * Completions.  Each endpoint has one ibv_cq for both queues, on a
 * completion channel.  The base runs the endpoint's progress
 * (verbs_msg_progress) from fi_cq_read and friends, which polls the ibv_cq
 * and reports to the bound util_cq and counters; the channel's fd is the
 * endpoint's wait fd, so fi_cq_sread and FI_WAIT_FD CQs sleep on it.
 * A work request's wr_id is its slot in a ring of transmits or receives,
 * which holds the application's context, with VERBS_WR_RX set for
 * receives: a completion in error has
 * only wr_id and status valid (ibv_poll_cq(3); rxe leaves the opcode of a
 * flushed receive 0, IBV_WC_SEND), so the queue it belongs to is read
 * from wr_id, never from the opcode.  A completion's CQ slot is reserved
 * when the operation is posted (util_cq_reserve), so a full CQ makes the
 * post return -FI_EAGAIN rather than lose a completion.
 *
 * Receives, reads and atomics are always signalled.  A send or write that
 * reports nothing (fi_inject, FI_SELECTIVE_COMPLETION without
 * FI_COMPLETION) and counts nothing (no counter bound for it) is posted
 * unsignalled: the device then writes no completion and the progress
 * loop reads none.  A signalled completion retires the unsignalled
 * transmits before it too, and after tx_size / 2 unsignalled transmits
 * the next is signalled whatever it asked, so that the ring never fills
 * with transmits nothing would retire.  A work request that fails
 * completes in error whether signalled or not.
 *
 * Completion order.  A receive queue completes in order.  A send queue
 * is processed in order, but a read's (or an atomic's) completion waits
 * for the peer's answer while later sends and writes may complete first:
 * siw completes a send once TCP took it.  So each transmit slot is done
 * on its own completion, or, unsignalled, once a later slot completed;
 * the ring's tail moves over the done slots at its front.
 *
 * Errors.  A work request that fails is reported in error whatever its
 * flags asked (fi_cq(3): error completions are generated for all
 * operations), except a flush (IBV_WC_WR_FLUSH_ERR: the QP went to the
 * error state on a disconnect or an earlier failure): fi_cm(3) lets a
 * provider cancel or discard what is outstanding at a shutdown, and an
 * operation that asked for no completion (fi_inject, FI_SELECTIVE_COMPLETION
 * without FI_COMPLETION) is discarded, since its entry would carry no
 * context the application could recognise.  One that asked for a
 * completion is canceled: FI_ECANCELED with its context and flags
 * (FI_RECV | FI_MSG for a receive).  Counters count both as errors.
 *
 * Write fences.  On iWARP a write completes once TCP took it, before the
 * target checked its key, so a write with a bad key would be reported
 * done.  Each side offers its domain's fence region in the connection's
 * private data (VERBS_CM_F_FENCE), and every write is posted unsignalled
 * and followed by an 8-byte read of the peer's region (verbs_fence_wr) in
 * the same slot, carrying the write's signal: the read is answered only
 * after the target placed the write, and never if it refused it (it ends
 * the connection, and the read is flushed), so the read's completion is
 * the write's.  A failed write completes its slot first; the flushed read
 * behind it, in a slot already retired, is dropped.  The QP and CQ are
 * sized for two work requests per transmit.
 *
 * Receives posted before the QP exists (before fi_connect has resolved a
 * route, or before fi_accept) wait in their ring and are handed to the
 * QP when it is created (verbs_msg_ep.c).
 *
 * The endpoint's setup, QP and close are verbs_msg_ep.c's, connection
 * management verbs_cm.c's, shared receive contexts verbs_srx.c's; what
 * they share is in verbs_msg.h.
 */
#include "verbs_msg.h"

#include <endian.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "weft/ofi.h"

#include "weft/stubs.h"
#include "weft/util_cntr.h"
#include "weft/util_cq.h"

/* ---- completions -------------------------------------------------------- */

/* The error entry of a work request that failed. */
static void wc_err_entry(struct fi_cq_err_entry *e, void *context,
			 uint64_t flags, void *buf, const struct ibv_wc *wc)
{
	*e = (struct fi_cq_err_entry){
		.op_context = context,
		.flags = flags,
		.buf = buf,
		.err = verbs_wc_err(wc->status),
		.prov_errno = (int)wc->status,
	};
}

static void tx_complete(struct verbs_msg_ep *ep, const struct ibv_wc *wc)
{
	struct verbs_tx *tx = &ep->tx[wc->wr_id % ep->tx_size];
	struct util_cntr *cntr = util_ep_tx_cntr(&ep->base, tx->cntr);

	/* The second work request of a transmit already done: a fenced
	 * write that failed, then its fence read flushed. */
	if (weft_unlikely(wc->wr_id < ep->tx_tail || tx->done))
		return;
	if (wc->status == IBV_WC_SUCCESS) {
		util_ep_tx_success(&ep->base, tx->report, tx->context,
				   tx->cq_flags, cntr);
	} else {
		struct fi_cq_err_entry e;

		/* Reported whatever its flags asked, unless flushed (see
		 * Errors above). */
		wc_err_entry(&e, tx->context, tx->cq_flags, NULL, wc);
		util_ep_tx_error(&ep->base, tx->report,
				 wc->status != IBV_WC_WR_FLUSH_ERR, &e, cntr);
	}
	tx->done = true;
	/* The unsignalled transmits before it are done too; a signalled
	 * one (a read still waiting for its answer) waits for its own. */
	if (wc->wr_id >= ep->tx_seen)
		ep->tx_seen = wc->wr_id + 1;
	while (ep->tx_tail < ep->tx_seen) {
		tx = &ep->tx[ep->tx_tail % ep->tx_size];
		if (tx->signaled && !tx->done)
			break;
		ep->tx_tail++;
	}
}

/*
 * The one receive-completion path, for the endpoint's own receives and
 * for those of its shared receive context: report a receive whose
 * completion came on ep's CQ.  reserved: it holds a slot of the receive
 * CQ; wanted: it asked for a completion.
 */
void verbs_msg_rx_report(struct verbs_msg_ep *ep, void *context, void *buf,
			 bool reserved, bool wanted, const struct ibv_wc *wc)
{
	struct util_cntr *cntr = ep->base.recv_cntr;
	uint64_t flags = FI_RECV | FI_MSG, data = 0;
	struct fi_cq_err_entry e;

	if (wc->status != IBV_WC_SUCCESS) {
		wc_err_entry(&e, context, flags, buf, wc);
		util_ep_rx_error(&ep->base, reserved,
				 wanted || wc->status != IBV_WC_WR_FLUSH_ERR,
				 &e, cntr);
		return;
	}
	if (wc->wc_flags & IBV_WC_WITH_IMM) {
		flags |= FI_REMOTE_CQ_DATA;
		data = be32toh(wc->imm_data);
	}
	if (wc->opcode == IBV_WC_RECV_RDMA_WITH_IMM) {
		/* fi_writedata: the data went to the target's buffer; the
		 * receive only carries the completion (FI_RX_CQ_DATA). */
		flags = FI_RMA | FI_REMOTE_WRITE | FI_REMOTE_CQ_DATA;
		buf = NULL;
		cntr = NULL;
	}
	util_ep_rx_success(&ep->base, reserved, wanted, context, flags,
			   wc->byte_len, buf, data, 0, FI_ADDR_NOTAVAIL, cntr);
}

static void rx_complete(struct verbs_msg_ep *ep, const struct ibv_wc *wc)
{
	struct verbs_rx *rx = &ep->rx[(wc->wr_id & ~VERBS_WR_RX) % ep->rx_size];

	verbs_msg_rx_report(ep, rx->context, rx->buf, rx->report, rx->report, wc);
	ep->rx_tail++;
}

#define VERBS_POLL_BATCH 16

/*
 * err_flush: the QP went to the error state before this look at the CQ,
 * which found it empty.  Such a device put every flushed completion in
 * the CQ as the QP went to error, and will never complete what was
 * posted after: complete that here, flushed, as the device would have.
 */
static void err_flush(struct verbs_msg_ep *ep)
{
	struct ibv_wc wc = { .status = IBV_WC_WR_FLUSH_ERR };
	uint64_t id;

	for (id = ep->tx_tail; id < ep->tx_head; id++) {
		wc.wr_id = id;
		tx_complete(ep, &wc); /* once per slot not yet done */
	}
	while (ep->rx_tail < ep->rx_on_qp) {
		wc.wr_id = VERBS_WR_RX | ep->rx_tail;
		rx_complete(ep, &wc); /* rx_tail++ */
	}
}

static int poll_cq(struct verbs_msg_ep *ep)
{
	struct ibv_wc wc[VERBS_POLL_BATCH];
	int n, i, total = 0;
	bool flush = ep->err_flush;

	do {
		n = ibv_poll_cq(ep->cq, VERBS_POLL_BATCH, wc);
		for (i = 0; i < n; i++) {
			/* Not the opcode: undefined in an error. */
			if (wc[i].wr_id & VERBS_WR_SRX)
				verbs_srx_rx_complete(ep, &wc[i]);
			else if (wc[i].wr_id & VERBS_WR_RX)
				rx_complete(ep, &wc[i]);
			else
				tx_complete(ep, &wc[i]);
		}
		total += n > 0 ? n : 0;
	} while (n == VERBS_POLL_BATCH);
	if (weft_unlikely(flush) && n >= 0)
		err_flush(ep); /* the last look found the CQ empty */
	return total;
}

/*
 * The endpoint's progress (util_ep_ops, endpoint lock held): read the CQ,
 * nothing more, so that polling costs no system call.
 */
int verbs_msg_progress(struct util_ep *base)
{
	struct verbs_msg_ep *ep = container_of(base, struct verbs_msg_ep, base);

	return ep->cq ? poll_cq(ep) : 0;
}

/*
 * A thread is about to sleep on the completion channel's fd: take the
 * channel's pending events (they keep the fd readable), arm the CQ for the
 * next completion, and look once more, since one may have come before
 * the arming.
 */
int verbs_msg_arm(struct util_ep *base)
{
	struct verbs_msg_ep *ep = container_of(base, struct verbs_msg_ep, base);
	struct ibv_cq *ev_cq;
	void *ev_ctx;

	if (!ep->cq)
		return 0;
	while (!ibv_get_cq_event(ep->comp_ch, &ev_cq, &ev_ctx)) {
		ibv_ack_cq_events(ev_cq, 1);
		ep->armed = false;
	}
	if (!ep->armed) {
		if (ibv_req_notify_cq(ep->cq, 0))
			return 0;
		ep->armed = true;
	}
	return poll_cq(ep);
}

int verbs_msg_wait_fds(struct util_ep *base, int *fds)
{
	struct verbs_msg_ep *ep = container_of(base, struct verbs_msg_ep, base);

	if (!ep->comp_ch)
		return 0;
	fds[0] = ep->comp_ch->fd;
	return 1;
}

/* ---- posting ------------------------------------------------------------ */

static inline bool tx_wants_completion(struct verbs_msg_ep *ep,
				       uint64_t flags)
{
	return !ep->base.tx_selective || (flags & FI_COMPLETION);
}

/* Fill sge from iov/desc: 0, or -FI_EINVAL (no descriptor under
 * FI_MR_LOCAL for a non-empty buffer that is not sent inline). */
int verbs_sge_fill(struct ibv_sge *sge, const struct iovec *iov, void **desc,
		   size_t count, bool inline_ok, size_t *total)
{
	size_t i, len = 0;

	for (i = 0; i < count; i++) {
		sge[i].addr = (uintptr_t)iov[i].iov_base;
		sge[i].length = (uint32_t)iov[i].iov_len;
		if (desc && desc[i])
			sge[i].lkey = verbs_desc_lkey(desc[i]);
		else if (!inline_ok && iov[i].iov_len)
			return -FI_EINVAL;
		else
			sge[i].lkey = 0;
		len += iov[i].iov_len;
	}
	*total = len;
	return 0;
}

struct verbs_post {
	enum ibv_wr_opcode opcode;
	const struct iovec *iov;
	void **desc;
	size_t count;
	uint64_t flags;	   /* op flags in force */
	uint64_t cq_flags; /* for the completion */
	void *context;
	uint64_t data;	   /* FI_REMOTE_CQ_DATA */
	uint64_t raddr;
	uint64_t rkey;
	uint64_t compare_add, swap; /* atomics */
	uint8_t cntr;
	bool silent; /* no completion whatever the flags (an atomic inject) */
};

/*
 * What a post the device refused (ret: what ibv_post_* returned) says to
 * the application: -FI_EAGAIN for a full queue; the connection's end when
 * the QP is in error, whatever the device's words for it (siw's library
 * answers a negative errno, or -1 with errno set); else the errno.
 */
static int post_refused(struct verbs_msg_ep *ep, int ret)
{
	struct ibv_qp_init_attr ia;
	struct ibv_qp_attr qa;

	if (ret < 0)
		ret = ret == -1 ? errno : -ret;
	if (ret == ENOMEM)
		return -FI_EAGAIN;
	if (!ibv_query_qp(ep->qp, &qa, IBV_QP_STATE, &ia) &&
	    (qa.qp_state == IBV_QPS_ERR || qa.qp_state == IBV_QPS_SQE))
		return -FI_ECONNRESET;
	return weft_errno(ret);
}

static ssize_t post_send(struct verbs_msg_ep *ep, const struct verbs_post *p)
{
	struct ibv_sge sge[VERBS_IOV_MAX], fsge;
	struct ibv_send_wr wr, fwr, *bad = NULL;
	struct verbs_tx *tx;
	struct util_cq *cq = ep->base.tx_cq;
	bool report, signaled, inject = p->flags & FI_INJECT;
	size_t len = 0;
	ssize_t ret;

	if ((p->flags & FI_REMOTE_CQ_DATA) && !ep->imm)
		return -FI_EOPNOTSUPP; /* cq_data_size 0 */
	if (p->count > ep->max_sge ||
	    (p->opcode == IBV_WR_RDMA_READ &&
	     p->count > ep->domain->dev.max_sge_rd))
		return -FI_EINVAL;
	memset(&wr, 0, sizeof(wr));
	ret = verbs_sge_fill(sge, p->iov, p->desc, p->count,
			     p->opcode != IBV_WR_RDMA_READ &&
				     p->opcode != IBV_WR_ATOMIC_FETCH_AND_ADD &&
				     p->opcode != IBV_WR_ATOMIC_CMP_AND_SWP,
			     &len);
	if (ret)
		return ret;
	if (p->opcode != IBV_WR_RDMA_READ && len <= ep->inline_max &&
	    p->opcode != IBV_WR_ATOMIC_FETCH_AND_ADD &&
	    p->opcode != IBV_WR_ATOMIC_CMP_AND_SWP)
		wr.send_flags |= IBV_SEND_INLINE;
	else if (inject)
		return -FI_EINVAL; /* larger than inject_size */
	else {
		size_t i;

		for (i = 0; i < p->count; i++)
			if (p->iov[i].iov_len && !(p->desc && p->desc[i]))
				return -FI_EINVAL;
	}
	/* A counter alone (no CQ bound) counts it; nothing to report. */
	report = cq && !inject && !p->silent &&
		 tx_wants_completion(ep, p->flags);

	util_ep_lock(&ep->base);
	if (weft_unlikely(ep->state != VERBS_CM_CONNECTED || !ep->qp)) {
		ret = ep->state == VERBS_CM_SHUTDOWN ? -FI_ECONNRESET :
						       -FI_EOPBADSTATE;
		goto out;
	}
	if (ep->tx_head - ep->tx_tail >= ep->tx_size) {
		ret = -FI_EAGAIN;
		goto out;
	}
	if (report) {
		ret = util_ep_cq_reserve(cq);
		if (ret)
			goto out;
	}
	tx = &ep->tx[ep->tx_head % ep->tx_size];
	tx->context = p->context;
	tx->cq_flags = p->cq_flags;
	tx->len = len;
	tx->report = report;
	tx->cntr = p->cntr;
	tx->done = false;

	wr.wr_id = ep->tx_head;
	wr.opcode = p->opcode;
	wr.sg_list = sge;
	wr.num_sge = (int)p->count;
	if (p->flags & FI_REMOTE_CQ_DATA)
		wr.imm_data = htobe32((uint32_t)p->data);
	if (p->opcode == IBV_WR_ATOMIC_FETCH_AND_ADD ||
	    p->opcode == IBV_WR_ATOMIC_CMP_AND_SWP) {
		wr.wr.atomic.remote_addr = p->raddr;
		wr.wr.atomic.rkey = (uint32_t)p->rkey;
		wr.wr.atomic.compare_add = p->compare_add;
		wr.wr.atomic.swap = p->swap;
	} else {
		wr.wr.rdma.remote_addr = p->raddr;
		wr.wr.rdma.rkey = (uint32_t)p->rkey;
	}
	if (p->flags & FI_FENCE)
		wr.send_flags |= IBV_SEND_FENCE;
	/* Unsignalled: nothing to report or count, a send or a write (see
	 * Completions above); else signalled, and so every Nth. */
	if (report || util_ep_tx_cntr(&ep->base, p->cntr) ||
	    (p->opcode != IBV_WR_SEND && p->opcode != IBV_WR_SEND_WITH_IMM &&
	     p->opcode != IBV_WR_RDMA_WRITE &&
	     p->opcode != IBV_WR_RDMA_WRITE_WITH_IMM) ||
	    ep->tx_head - ep->tx_signaled >= ep->tx_signal_every)
		wr.send_flags |= IBV_SEND_SIGNALED;
	signaled = wr.send_flags & IBV_SEND_SIGNALED;
	tx->signaled = signaled;
	if (ep->fence.rkey && p->opcode == IBV_WR_RDMA_WRITE) {
		/* iWARP: the write's verdict is its fence read's (see Write
		 * fences above), which takes its slot and signal. */
		memset(&fwr, 0, sizeof(fwr));
		verbs_fence_wr(ep->domain, &ep->fence, &fwr, &fsge);
		fwr.wr_id = wr.wr_id;
		fwr.send_flags = wr.send_flags & IBV_SEND_SIGNALED;
		wr.send_flags &= ~IBV_SEND_SIGNALED;
		wr.next = &fwr;
	}
	ret = ibv_post_send(ep->qp, &wr, &bad);
	if (weft_unlikely(ret && bad == &fwr)) {
		/* The write is posted and its fence is not (the queue has
		 * room for both: a device gone bad).  Nothing would complete
		 * the write: end the QP, which flushes it, reported. */
		struct ibv_qp_attr qa = { .qp_state = IBV_QPS_ERR };

		FI_WARN(&verbs_prov, FI_LOG_EP_DATA,
			"fence read refused (%s): connection ended\n",
			strerror(ret));
		ibv_modify_qp(ep->qp, &qa, IBV_QP_STATE);
		ep->err_flush = ep->domain->dev.err_post_lost;
		ret = 0;
	}
	if (ret) {
		if (report)
			util_ep_cq_unreserve(cq);
		ret = post_refused(ep, ret);
		goto out;
	}
	ep->tx_head++;
	if (signaled)
		ep->tx_signaled = ep->tx_head;
out:
	util_ep_unlock(&ep->base);
	return ret;
}

static ssize_t post_recv(struct verbs_msg_ep *ep, const struct iovec *iov,
			 void **desc, size_t count, void *context,
			 uint64_t flags)
{
	struct util_cq *cq = ep->base.rx_cq;
	struct ibv_recv_wr wr, *bad;
	struct verbs_rx *rx;
	bool report;
	size_t len;
	ssize_t ret;

	if (ep->base.srx)
		return -FI_EOPNOTSUPP; /* receives go to the shared context */
	if (count > ep->max_sge)
		return -FI_EINVAL;
	report = !ep->base.rx_selective || (flags & FI_COMPLETION);
	util_ep_lock(&ep->base);
	if (ep->rx_head - ep->rx_tail >= ep->rx_size) {
		ret = -FI_EAGAIN;
		goto out;
	}
	rx = &ep->rx[ep->rx_head % ep->rx_size];
	ret = verbs_sge_fill(rx->sge, iov, desc, count, false, &len);
	if (ret)
		goto out;
	if (report && cq) {
		ret = util_ep_cq_reserve(cq);
		if (ret)
			goto out;
	}
	rx->context = context;
	rx->buf = count ? iov[0].iov_base : NULL;
	rx->report = report && cq;
	rx->nsge = (uint32_t)count;
	rx->on_qp = false;
	ep->rx_head++;
	if (ep->qp && ep->rx_on_qp == ep->rx_head - 1) {
		memset(&wr, 0, sizeof(wr));
		wr.wr_id = VERBS_WR_RX | (ep->rx_head - 1);
		wr.sg_list = rx->sge;
		wr.num_sge = (int)count;
		ret = ibv_post_recv(ep->qp, &wr, &bad);
		if (ret) {
			ep->rx_head--;
			if (rx->report)
				util_ep_cq_unreserve(cq);
			ret = post_refused(ep, ret);
			goto out;
		}
		rx->on_qp = true;
		ep->rx_on_qp++;
	}
out:
	util_ep_unlock(&ep->base);
	return ret;
}

/* ---- fi_ops_msg --------------------------------------------------------- */

static ssize_t msg_recvmsg(struct fid_ep *ep_fid, const struct fi_msg *msg,
			   uint64_t flags)
{
	if (!msg)
		return -FI_EINVAL;
	return post_recv(msg_ep_of(ep_fid), msg->msg_iov, msg->desc,
			 msg->iov_count, msg->context, flags);
}

static ssize_t msg_recvv(struct fid_ep *ep_fid, const struct iovec *iov,
			 void **desc, size_t count, fi_addr_t src,
			 void *context)
{
	struct verbs_msg_ep *ep = msg_ep_of(ep_fid);

	return post_recv(ep, iov, desc, count, context, ep->base.rx_op_flags);
}

static ssize_t msg_recv(struct fid_ep *ep_fid, void *buf, size_t len,
			void *desc, fi_addr_t src, void *context)
{
	struct iovec iov = { .iov_base = buf, .iov_len = len };

	return msg_recvv(ep_fid, &iov, &desc, 1, src, context);
}

static ssize_t msg_send_common(struct verbs_msg_ep *ep,
			       const struct iovec *iov, void **desc,
			       size_t count, uint64_t data, void *context,
			       uint64_t flags)
{
	struct verbs_post p = {
		.opcode = (flags & FI_REMOTE_CQ_DATA) ? IBV_WR_SEND_WITH_IMM :
							IBV_WR_SEND,
		.iov = iov,
		.desc = desc,
		.count = count,
		.flags = flags,
		.cq_flags = FI_SEND | FI_MSG,
		.context = context,
		.data = data,
		.cntr = UTIL_EP_TX_SEND,
	};

	return post_send(ep, &p);
}

static ssize_t msg_sendmsg(struct fid_ep *ep_fid, const struct fi_msg *msg,
			   uint64_t flags)
{
	if (!msg)
		return -FI_EINVAL;
	return msg_send_common(msg_ep_of(ep_fid), msg->msg_iov, msg->desc,
			       msg->iov_count, msg->data, msg->context, flags);
}

static ssize_t msg_sendv(struct fid_ep *ep_fid, const struct iovec *iov,
			 void **desc, size_t count, fi_addr_t dest,
			 void *context)
{
	struct verbs_msg_ep *ep = msg_ep_of(ep_fid);

	return msg_send_common(ep, iov, desc, count, 0, context,
			       ep->base.tx_op_flags & ~FI_REMOTE_CQ_DATA);
}

static ssize_t msg_send(struct fid_ep *ep_fid, const void *buf, size_t len,
			void *desc, fi_addr_t dest, void *context)
{
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };

	return msg_sendv(ep_fid, &iov, &desc, 1, dest, context);
}

static ssize_t msg_senddata(struct fid_ep *ep_fid, const void *buf,
			    size_t len, void *desc, uint64_t data,
			    fi_addr_t dest, void *context)
{
	struct verbs_msg_ep *ep = msg_ep_of(ep_fid);
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };

	return msg_send_common(ep, &iov, &desc, 1, data, context,
			       ep->base.tx_op_flags | FI_REMOTE_CQ_DATA);
}

static ssize_t msg_inject(struct fid_ep *ep_fid, const void *buf, size_t len,
			  fi_addr_t dest)
{
	struct verbs_msg_ep *ep = msg_ep_of(ep_fid);
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };

	return msg_send_common(ep, &iov, NULL, 1, 0, NULL,
			       (ep->base.tx_op_flags & ~FI_REMOTE_CQ_DATA) |
				       FI_INJECT);
}

static ssize_t msg_injectdata(struct fid_ep *ep_fid, const void *buf,
			      size_t len, uint64_t data, fi_addr_t dest)
{
	struct verbs_msg_ep *ep = msg_ep_of(ep_fid);
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };

	return msg_send_common(ep, &iov, NULL, 1, data, NULL,
			       ep->base.tx_op_flags | FI_INJECT |
				       FI_REMOTE_CQ_DATA);
}

struct fi_ops_msg verbs_msg_ops = {
	.size = sizeof(struct fi_ops_msg),
	.recv = msg_recv,
	.recvv = msg_recvv,
	.recvmsg = msg_recvmsg,
	.send = msg_send,
	.sendv = msg_sendv,
	.sendmsg = msg_sendmsg,
	.inject = msg_inject,
	.senddata = msg_senddata,
	.injectdata = msg_injectdata,
};

/* ---- fi_ops_rma --------------------------------------------------------- */

static ssize_t rma_common(struct verbs_msg_ep *ep, bool read,
			  const struct iovec *iov, void **desc, size_t count,
			  uint64_t addr, uint64_t key, uint64_t data,
			  void *context, uint64_t flags)
{
	if ((flags & FI_REMOTE_CQ_DATA) && !read && !ep->rx_cq_data)
		return -FI_EOPNOTSUPP;

	struct verbs_post p = {
		.opcode = read ? IBV_WR_RDMA_READ :
			  (flags & FI_REMOTE_CQ_DATA) ?
				 IBV_WR_RDMA_WRITE_WITH_IMM :
				 IBV_WR_RDMA_WRITE,
		.iov = iov,
		.desc = desc,
		.count = count,
		.flags = flags,
		.cq_flags = FI_RMA | (read ? FI_READ : FI_WRITE),
		.context = context,
		.data = data,
		.raddr = addr,
		.rkey = key,
		.cntr = read ? UTIL_EP_TX_READ : UTIL_EP_TX_WRITE,
	};

	return post_send(ep, &p);
}

static ssize_t rma_msg(struct fid_ep *ep_fid, const struct fi_msg_rma *msg,
		       uint64_t flags, bool read)
{
	if (!msg || msg->rma_iov_count != 1 || !msg->rma_iov)
		return -FI_EINVAL;
	return rma_common(msg_ep_of(ep_fid), read, msg->msg_iov, msg->desc,
			  msg->iov_count, msg->rma_iov[0].addr,
			  msg->rma_iov[0].key, msg->data, msg->context, flags);
}

static ssize_t rma_readmsg(struct fid_ep *ep_fid,
			   const struct fi_msg_rma *msg, uint64_t flags)
{
	return rma_msg(ep_fid, msg, flags & ~FI_REMOTE_CQ_DATA, true);
}

static ssize_t rma_writemsg(struct fid_ep *ep_fid,
			    const struct fi_msg_rma *msg, uint64_t flags)
{
	return rma_msg(ep_fid, msg, flags, false);
}

static ssize_t rma_readv(struct fid_ep *ep_fid, const struct iovec *iov,
			 void **desc, size_t count, fi_addr_t src,
			 uint64_t addr, uint64_t key, void *context)
{
	struct verbs_msg_ep *ep = msg_ep_of(ep_fid);

	return rma_common(ep, true, iov, desc, count, addr, key, 0, context,
			  ep->base.tx_op_flags & ~FI_REMOTE_CQ_DATA);
}

static ssize_t rma_read(struct fid_ep *ep_fid, void *buf, size_t len,
			void *desc, fi_addr_t src, uint64_t addr, uint64_t key,
			void *context)
{
	struct iovec iov = { .iov_base = buf, .iov_len = len };

	return rma_readv(ep_fid, &iov, &desc, 1, src, addr, key, context);
}

static ssize_t rma_writev(struct fid_ep *ep_fid, const struct iovec *iov,
			  void **desc, size_t count, fi_addr_t dest,
			  uint64_t addr, uint64_t key, void *context)
{
	struct verbs_msg_ep *ep = msg_ep_of(ep_fid);

	return rma_common(ep, false, iov, desc, count, addr, key, 0, context,
			  ep->base.tx_op_flags & ~FI_REMOTE_CQ_DATA);
}

static ssize_t rma_write(struct fid_ep *ep_fid, const void *buf, size_t len,
			 void *desc, fi_addr_t dest, uint64_t addr,
			 uint64_t key, void *context)
{
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };

	return rma_writev(ep_fid, &iov, &desc, 1, dest, addr, key, context);
}

static ssize_t rma_writedata(struct fid_ep *ep_fid, const void *buf,
			     size_t len, void *desc, uint64_t data,
			     fi_addr_t dest, uint64_t addr, uint64_t key,
			     void *context)
{
	struct verbs_msg_ep *ep = msg_ep_of(ep_fid);
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };

	return rma_common(ep, false, &iov, &desc, 1, addr, key, data, context,
			  ep->base.tx_op_flags | FI_REMOTE_CQ_DATA);
}

static ssize_t rma_inject(struct fid_ep *ep_fid, const void *buf, size_t len,
			  fi_addr_t dest, uint64_t addr, uint64_t key)
{
	struct verbs_msg_ep *ep = msg_ep_of(ep_fid);
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };

	return rma_common(ep, false, &iov, NULL, 1, addr, key, 0, NULL,
			  (ep->base.tx_op_flags & ~FI_REMOTE_CQ_DATA) |
				  FI_INJECT);
}

static ssize_t rma_injectdata(struct fid_ep *ep_fid, const void *buf,
			      size_t len, uint64_t data, fi_addr_t dest,
			      uint64_t addr, uint64_t key)
{
	struct verbs_msg_ep *ep = msg_ep_of(ep_fid);
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };

	return rma_common(ep, false, &iov, NULL, 1, addr, key, data, NULL,
			  ep->base.tx_op_flags | FI_INJECT | FI_REMOTE_CQ_DATA);
}

struct fi_ops_rma verbs_rma_ops = {
	.size = sizeof(struct fi_ops_rma),
	.read = rma_read,
	.readv = rma_readv,
	.readmsg = rma_readmsg,
	.write = rma_write,
	.writev = rma_writev,
	.writemsg = rma_writemsg,
	.inject = rma_inject,
	.writedata = rma_writedata,
	.injectdata = rma_injectdata,
};

/* ---- fi_ops_atomic: 64-bit FI_SUM and FI_CSWAP on the device ------------ */

static bool atomic_ok(struct verbs_msg_ep *ep, enum fi_datatype dt,
		      enum fi_op op, uint64_t flags)
{
	struct fi_atomic_attr attr;

	return !verbs_dev_atomic(&ep->domain->dev, dt, op, flags, &attr);
}

static ssize_t atomic_post(struct verbs_msg_ep *ep, enum fi_op op,
			   enum fi_datatype dt, const struct fi_ioc *src,
			   const struct fi_ioc *cmp, const struct fi_ioc *res,
			   void *res_desc, const struct fi_rma_ioc *rma,
			   void *context, uint64_t flags, bool fetch)
{
	struct iovec iov;
	void *desc;
	struct verbs_post p = {
		.iov = &iov,
		.desc = &desc,
		.count = 1,
		.flags = flags & ~FI_INJECT,
		.cq_flags = FI_ATOMIC | (fetch ? FI_READ : FI_WRITE),
		.context = context,
		.raddr = rma->addr,
		.rkey = rma->key,
		.cntr = fetch ? UTIL_EP_TX_READ : UTIL_EP_TX_WRITE,
	};

	if (!atomic_ok(ep, dt, op,
		       cmp ? FI_COMPARE_ATOMIC : fetch ? FI_FETCH_ATOMIC : 0) ||
	    !src || src->count != 1 || rma->count != 1 ||
	    (cmp && cmp->count != 1) || (res && res->count != 1))
		return -FI_EOPNOTSUPP;
	p.opcode = cmp ? IBV_WR_ATOMIC_CMP_AND_SWP :
			 IBV_WR_ATOMIC_FETCH_AND_ADD;
	if (cmp) {
		p.compare_add = *(const uint64_t *)cmp->addr;
		p.swap = *(const uint64_t *)src->addr;
	} else {
		p.compare_add = *(const uint64_t *)src->addr;
	}
	iov.iov_len = sizeof(uint64_t);
	if (res) {
		iov.iov_base = res->addr;
		desc = res_desc;
		return post_send(ep, &p);
	} else {
		/* The old value lands in a scratch word of the endpoint's. */
		struct verbs_mr scratch = { .mr = ep->scratch_mr };

		iov.iov_base = &ep->scratch[ep->tx_head % ep->tx_size];
		desc = &scratch;
		p.silent = flags & FI_INJECT;
		return post_send(ep, &p);
	}
}

static ssize_t atomic_writemsg(struct fid_ep *ep_fid,
			       const struct fi_msg_atomic *msg, uint64_t flags)
{
	if (!msg || msg->iov_count != 1 || msg->rma_iov_count != 1)
		return -FI_EINVAL;
	return atomic_post(msg_ep_of(ep_fid), msg->op, msg->datatype,
			   msg->msg_iov, NULL, NULL, NULL, msg->rma_iov,
			   msg->context, flags, false);
}

static ssize_t atomic_writev(struct fid_ep *ep_fid, const struct fi_ioc *iov,
			     void **desc, size_t count, fi_addr_t dest,
			     uint64_t addr, uint64_t key,
			     enum fi_datatype datatype, enum fi_op op,
			     void *context)
{
	struct verbs_msg_ep *ep = msg_ep_of(ep_fid);
	struct fi_rma_ioc rma = { .addr = addr, .count = 1, .key = key };

	if (count != 1)
		return -FI_EINVAL;
	return atomic_post(ep, op, datatype, iov, NULL, NULL, NULL, &rma,
			   context, ep->base.tx_op_flags, false);
}

static ssize_t atomic_write(struct fid_ep *ep_fid, const void *buf,
			    size_t count, void *desc, fi_addr_t dest,
			    uint64_t addr, uint64_t key,
			    enum fi_datatype datatype, enum fi_op op,
			    void *context)
{
	struct fi_ioc ioc = { .addr = (void *)buf, .count = count };

	return atomic_writev(ep_fid, &ioc, &desc, 1, dest, addr, key, datatype,
			     op, context);
}

static ssize_t atomic_inject(struct fid_ep *ep_fid, const void *buf,
			     size_t count, fi_addr_t dest, uint64_t addr,
			     uint64_t key, enum fi_datatype datatype,
			     enum fi_op op)
{
	struct verbs_msg_ep *ep = msg_ep_of(ep_fid);
	struct fi_ioc ioc = { .addr = (void *)buf, .count = count };
	struct fi_rma_ioc rma = { .addr = addr, .count = 1, .key = key };

	/* The operand travels in the work request: the buffer is free at
	 * once, and no completion is reported. */
	return atomic_post(ep, op, datatype, &ioc, NULL, NULL, NULL, &rma,
			   NULL, (ep->base.tx_op_flags | FI_INJECT) &
					 ~FI_COMPLETION,
			   false);
}

static ssize_t atomic_readwritemsg(struct fid_ep *ep_fid,
				   const struct fi_msg_atomic *msg,
				   struct fi_ioc *resultv, void **result_desc,
				   size_t result_count, uint64_t flags)
{
	if (!msg || msg->iov_count != 1 || result_count != 1 ||
	    msg->rma_iov_count != 1)
		return -FI_EINVAL;
	return atomic_post(msg_ep_of(ep_fid), msg->op, msg->datatype,
			   msg->msg_iov, NULL, resultv,
			   result_desc ? result_desc[0] : NULL, msg->rma_iov,
			   msg->context, flags, true);
}

static ssize_t atomic_readwritev(struct fid_ep *ep_fid,
				 const struct fi_ioc *iov, void **desc,
				 size_t count, struct fi_ioc *resultv,
				 void **result_desc, size_t result_count,
				 fi_addr_t dest, uint64_t addr, uint64_t key,
				 enum fi_datatype datatype, enum fi_op op,
				 void *context)
{
	struct verbs_msg_ep *ep = msg_ep_of(ep_fid);
	struct fi_rma_ioc rma = { .addr = addr, .count = 1, .key = key };

	if (count != 1 || result_count != 1)
		return -FI_EINVAL;
	return atomic_post(ep, op, datatype, iov, NULL, resultv,
			   result_desc ? result_desc[0] : NULL, &rma, context,
			   ep->base.tx_op_flags, true);
}

static ssize_t atomic_readwrite(struct fid_ep *ep_fid, const void *buf,
				size_t count, void *desc, void *result,
				void *result_desc, fi_addr_t dest,
				uint64_t addr, uint64_t key,
				enum fi_datatype datatype, enum fi_op op,
				void *context)
{
	struct fi_ioc ioc = { .addr = (void *)buf, .count = count };
	struct fi_ioc res = { .addr = result, .count = count };

	return atomic_readwritev(ep_fid, &ioc, &desc, 1, &res, &result_desc, 1,
				 dest, addr, key, datatype, op, context);
}

static ssize_t atomic_compwritemsg(struct fid_ep *ep_fid,
				   const struct fi_msg_atomic *msg,
				   const struct fi_ioc *comparev,
				   void **compare_desc, size_t compare_count,
				   struct fi_ioc *resultv, void **result_desc,
				   size_t result_count, uint64_t flags)
{
	if (!msg || msg->iov_count != 1 || compare_count != 1 ||
	    result_count != 1 || msg->rma_iov_count != 1)
		return -FI_EINVAL;
	return atomic_post(msg_ep_of(ep_fid), msg->op, msg->datatype,
			   msg->msg_iov, comparev, resultv,
			   result_desc ? result_desc[0] : NULL, msg->rma_iov,
			   msg->context, flags, true);
}

static ssize_t atomic_compwritev(struct fid_ep *ep_fid,
				 const struct fi_ioc *iov, void **desc,
				 size_t count, const struct fi_ioc *comparev,
				 void **compare_desc, size_t compare_count,
				 struct fi_ioc *resultv, void **result_desc,
				 size_t result_count, fi_addr_t dest,
				 uint64_t addr, uint64_t key,
				 enum fi_datatype datatype, enum fi_op op,
				 void *context)
{
	struct verbs_msg_ep *ep = msg_ep_of(ep_fid);
	struct fi_rma_ioc rma = { .addr = addr, .count = 1, .key = key };

	if (count != 1 || compare_count != 1 || result_count != 1)
		return -FI_EINVAL;
	return atomic_post(ep, op, datatype, iov, comparev, resultv,
			   result_desc ? result_desc[0] : NULL, &rma, context,
			   ep->base.tx_op_flags, true);
}

static ssize_t atomic_compwrite(struct fid_ep *ep_fid, const void *buf,
				size_t count, void *desc, const void *compare,
				void *compare_desc, void *result,
				void *result_desc, fi_addr_t dest,
				uint64_t addr, uint64_t key,
				enum fi_datatype datatype, enum fi_op op,
				void *context)
{
	struct fi_ioc ioc = { .addr = (void *)buf, .count = count };
	struct fi_ioc cmp = { .addr = (void *)compare, .count = count };
	struct fi_ioc res = { .addr = result, .count = count };

	return atomic_compwritev(ep_fid, &ioc, &desc, 1, &cmp, &compare_desc,
				 1, &res, &result_desc, 1, dest, addr, key,
				 datatype, op, context);
}

static int atomic_valid(struct verbs_msg_ep *ep, enum fi_datatype dt,
			enum fi_op op, size_t *count, uint64_t flags)
{
	struct fi_atomic_attr attr;
	int ret;

	if (!count)
		return -FI_EINVAL;
	ret = verbs_dev_atomic(&ep->domain->dev, dt, op, flags, &attr);
	if (ret)
		return ret;
	*count = attr.count;
	return 0;
}

static int atomic_writevalid(struct fid_ep *ep_fid, enum fi_datatype dt,
			     enum fi_op op, size_t *count)
{
	return atomic_valid(msg_ep_of(ep_fid), dt, op, count, 0);
}

static int atomic_readwritevalid(struct fid_ep *ep_fid, enum fi_datatype dt,
				 enum fi_op op, size_t *count)
{
	return atomic_valid(msg_ep_of(ep_fid), dt, op, count, FI_FETCH_ATOMIC);
}

static int atomic_compwritevalid(struct fid_ep *ep_fid, enum fi_datatype dt,
				 enum fi_op op, size_t *count)
{
	return atomic_valid(msg_ep_of(ep_fid), dt, op, count,
			    FI_COMPARE_ATOMIC);
}

struct fi_ops_atomic verbs_atomic_ops = {
	.size = sizeof(struct fi_ops_atomic),
	.write = atomic_write,
	.writev = atomic_writev,
	.writemsg = atomic_writemsg,
	.inject = atomic_inject,
	.readwrite = atomic_readwrite,
	.readwritev = atomic_readwritev,
	.readwritemsg = atomic_readwritemsg,
	.compwrite = atomic_compwrite,
	.compwritev = atomic_compwritev,
	.compwritemsg = atomic_compwritemsg,
	.writevalid = atomic_writevalid,
	.readwritevalid = atomic_readwritevalid,
	.compwritevalid = atomic_compwritevalid,
};
