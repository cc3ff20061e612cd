/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * verbs FI_EP_MSG endpoints: the data path straight onto one RC QP.
 *
 * The endpoint is the RDM engine's endpoint object in its connected form
 * (util_rdm_ep_init with attr.connected): binding CQs and counters,
 * fi_enable, op flags and automatic progress are the engine's.  The data
 * calls bypass its matching: fi_send is ibv_post_send, fi_recv is
 * ibv_post_recv into the application's buffer, fi_read / fi_write are
 * RDMA READ / WRITE, 64-bit FI_SUM and FI_CSWAP are the device's atomics.
 *
 * Completions.  Each endpoint has one ibv_cq for both queues, on a
 * completion channel.  The engine runs the transport's progress
 * (verbs_msg_progress) from fi_cq_read and friends, which polls the ibv_cq
 * and writes the bound util_cq and counters; the channel's fd is the
 * transport's wait_fd, so fi_cq_sread and FI_WAIT_FD CQs sleep on it.
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
 * QP when it is created.
 *
 * Connection management is verbs_cm.c's, shared receive contexts
 * verbs_srx.c's; what the three share is in verbs_msg.h.
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

static struct util_cntr *tx_cntr(struct verbs_msg_ep *ep, uint8_t kind)
{
	switch (kind) {
	case VERBS_CNTR_READ:
		return ep->rdm.read_cntr;
	case VERBS_CNTR_WRITE:
		return ep->rdm.write_cntr;
	default:
		return ep->rdm.send_cntr;
	}
}

/*
 * A work request completed in error.  reserved: the operation holds a CQ
 * slot; wanted: it asked for a completion.  A flushed one that asked for
 * none is discarded (see Errors above); anything else becomes an error
 * entry.
 */
static void report_err(struct util_cq *cq, bool reserved, bool wanted,
		       void *context, uint64_t flags, void *buf,
		       const struct ibv_wc *wc)
{
	struct fi_cq_err_entry err = {
		.op_context = context,
		.flags = flags,
		.buf = buf,
		.err = verbs_wc_err(wc->status),
		.prov_errno = (int)wc->status,
	};

	if (!cq)
		return;
	if (reserved)
		util_cq_unreserve(cq, 1);
	if (!wanted && wc->status == IBV_WC_WR_FLUSH_ERR)
		return;
	util_cq_write_err(cq, &err);
}

/* Send work requests a transmit may take: a fenced write takes two. */
static inline size_t tx_wrs(const struct verbs_msg_ep *ep)
{
	return ep->domain->fence_mr ? 2 : 1;
}

static void tx_complete(struct verbs_msg_ep *ep, const struct ibv_wc *wc)
{
	struct verbs_tx *tx = &ep->tx[wc->wr_id % ep->tx_size];
	struct util_cntr *cntr = tx_cntr(ep, tx->cntr);
	struct util_cq *cq = ep->rdm.tx_cq;

	/* The second work request of a transmit already done: a fenced
	 * write that failed, then its fence read flushed. */
	if (weft_unlikely(wc->wr_id < ep->tx_tail || tx->done))
		return;
	if (cq)
		util_cq_writer_lock(cq);
	if (wc->status == IBV_WC_SUCCESS) {
		if (tx->report)
			util_cq_write_reserved(cq, tx->context, tx->cq_flags, 0,
					       NULL, 0, 0, FI_ADDR_NOTAVAIL);
		if (cntr)
			util_cntr_inc(cntr);
	} else {
		/* Reported whatever its flags asked, unless flushed. */
		report_err(cq, tx->report, tx->report, tx->context, tx->cq_flags,
			   NULL, wc);
		if (cntr)
			util_cntr_inc_err(cntr);
	}
	if (cq)
		util_cq_writer_unlock(cq);
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
	struct util_cq *cq = ep->rdm.rx_cq;
	struct util_cntr *cntr = ep->rdm.recv_cntr;
	uint64_t flags = FI_RECV | FI_MSG, data = 0;

	if (wc->status == IBV_WC_SUCCESS && (wc->wc_flags & IBV_WC_WITH_IMM)) {
		flags |= FI_REMOTE_CQ_DATA;
		data = be32toh(wc->imm_data);
	}
	if (wc->status == IBV_WC_SUCCESS &&
	    wc->opcode == IBV_WC_RECV_RDMA_WITH_IMM) {
		/* fi_writedata: the data went to the target's buffer; the
		 * receive only carries the completion (FI_RX_CQ_DATA). */
		flags = FI_RMA | FI_REMOTE_WRITE | FI_REMOTE_CQ_DATA;
		buf = NULL;
		cntr = NULL;
	}
	if (!cq)
		reserved = wanted = false;
	if (cq)
		util_cq_writer_lock(cq);
	if (wc->status == IBV_WC_SUCCESS) {
		if (reserved)
			util_cq_write_reserved(cq, context, flags,
					       wc->byte_len, buf, data, 0,
					       FI_ADDR_NOTAVAIL);
		else if (wanted)
			util_cq_write(cq, context, flags, wc->byte_len, buf,
				      data, 0, FI_ADDR_NOTAVAIL);
		if (cntr)
			util_cntr_inc(cntr);
	} else {
		report_err(cq, reserved, wanted, context, FI_RECV | FI_MSG,
			   buf, wc);
		if (ep->rdm.recv_cntr)
			util_cntr_inc_err(ep->rdm.recv_cntr);
	}
	if (cq)
		util_cq_writer_unlock(cq);
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
 * The transport's progress (called by the engine, endpoint lock held):
 * read the CQ, nothing more, so that polling costs no system call.
 */
static int verbs_msg_progress(struct util_rdm_xport *xp)
{
	struct util_rdm_ep *rdm = xp->ep;
	struct verbs_msg_ep *ep = container_of(rdm, struct verbs_msg_ep, rdm);

	return ep->cq ? poll_cq(ep) : 0;
}

/*
 * A thread is about to sleep on the completion channel's fd: take the
 * channel's pending events (they keep the fd readable), arm the CQ for the
 * next completion, and look once more, since one may have come before
 * the arming.
 */
static int verbs_msg_arm(struct util_rdm_xport *xp)
{
	struct util_rdm_ep *rdm = xp->ep;
	struct verbs_msg_ep *ep = container_of(rdm, struct verbs_msg_ep, rdm);
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

static int verbs_msg_wait_fd(struct util_rdm_xport *xp)
{
	struct util_rdm_ep *rdm = xp->ep;
	struct verbs_msg_ep *ep = container_of(rdm, struct verbs_msg_ep, rdm);

	return ep->comp_ch ? ep->comp_ch->fd : -1;
}

static int verbs_msg_no_eager(struct util_rdm_xport *xp, struct util_peer *peer,
			      const struct util_rdm_hdr *hdr,
			      const struct iovec *iov, void **desc,
			      size_t iov_count)
{
	(void)xp;
	(void)peer;
	(void)hdr;
	(void)iov;
	(void)desc;
	(void)iov_count;
	return -FI_ENOSYS; /* the MSG data calls never reach the engine's */
}

static const struct util_rdm_transport verbs_msg_transport = {
	.send_eager = verbs_msg_no_eager,
	.progress = verbs_msg_progress,
	.arm = verbs_msg_arm,
	.wait_fd = verbs_msg_wait_fd,
};

/* ---- QP ----------------------------------------------------------------- */

/* Hand receives posted before the QP existed to it. */
static int rx_flush_pending(struct verbs_msg_ep *ep)
{
	struct ibv_recv_wr wr, *bad;

	while (ep->qp && ep->rx_on_qp < ep->rx_head) {
		struct verbs_rx *rx = &ep->rx[ep->rx_on_qp % ep->rx_size];

		memset(&wr, 0, sizeof(wr));
		wr.wr_id = VERBS_WR_RX | ep->rx_on_qp;
		wr.sg_list = rx->sge;
		wr.num_sge = (int)rx->nsge;
		if (ibv_post_recv(ep->qp, &wr, &bad))
			return -FI_EIO;
		rx->on_qp = true;
		ep->rx_on_qp++;
	}
	return 0;
}

int verbs_msg_qp_create(struct verbs_msg_ep *ep)
{
	struct ibv_qp_init_attr qa = {
		.send_cq = ep->cq,
		.recv_cq = ep->cq,
		.qp_type = IBV_QPT_RC,
		.sq_sig_all = 0,
		.cap = {
			.max_send_wr = (uint32_t)(ep->tx_size * tx_wrs(ep)),
			.max_recv_wr = (uint32_t)ep->rx_size,
			.max_send_sge = ep->max_sge,
			.max_recv_sge = ep->max_sge,
			.max_inline_data = ep->inline_max,
		},
	};

	if (ep->qp)
		return 0;
	if (ep->srx) {
		qa.srq = ep->srx->srq;
		qa.cap.max_recv_wr = 0;
		qa.cap.max_recv_sge = 0;
	}
	if (rdma_create_qp(ep->id, ep->domain->pd, &qa)) {
		int err = errno;

		FI_WARN(&verbs_prov, FI_LOG_EP_CTRL,
			"rdma_create_qp (send %zu, recv %zu, sge %u, inline %u): %s\n",
			ep->tx_size, ep->rx_size, ep->max_sge, ep->inline_max,
			strerror(err));
		return weft_errno(err);
	}
	verbs_qp_tune(ep->id, &ep->domain->dev);
	ep->qp = ep->id->qp;
	return rx_flush_pending(ep);
}

/* ---- posting ------------------------------------------------------------ */

static inline bool tx_wants_completion(struct verbs_msg_ep *ep,
				       uint64_t flags)
{
	return !ep->rdm.tx_selective || (flags & FI_COMPLETION);
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

static ssize_t post_send(struct verbs_msg_ep *ep, const struct verbs_post *p)
{
	struct ibv_sge sge[VERBS_IOV_MAX], fsge;
	struct ibv_send_wr wr, fwr, *bad = NULL;
	struct verbs_tx *tx;
	struct util_cq *cq = ep->rdm.tx_cq;
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
	report = !inject && !p->silent && tx_wants_completion(ep, p->flags);

	weft_lock(util_rdm_lock(&ep->rdm));
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
		util_cq_writer_lock(cq);
		ret = util_cq_reserve(cq, 1);
		util_cq_writer_unlock(cq);
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
	if (report || tx_cntr(ep, p->cntr) ||
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
		if (report) {
			util_cq_writer_lock(cq);
			util_cq_unreserve(cq, 1);
			util_cq_writer_unlock(cq);
		}
		ret = ret == ENOMEM ? -FI_EAGAIN : weft_errno(ret);
		goto out;
	}
	ep->tx_head++;
	if (signaled)
		ep->tx_signaled = ep->tx_head;
out:
	weft_unlock(util_rdm_lock(&ep->rdm));
	return ret;
}

static ssize_t post_recv(struct verbs_msg_ep *ep, const struct iovec *iov,
			 void **desc, size_t count, void *context,
			 uint64_t flags)
{
	struct util_cq *cq = ep->rdm.rx_cq;
	struct ibv_recv_wr wr, *bad;
	struct verbs_rx *rx;
	bool report;
	size_t len;
	ssize_t ret;

	if (ep->srx)
		return -FI_EOPNOTSUPP; /* receives go to the shared context */
	if (count > ep->max_sge)
		return -FI_EINVAL;
	report = !ep->rdm.rx_selective || (flags & FI_COMPLETION);
	weft_lock(util_rdm_lock(&ep->rdm));
	if (ep->rx_head - ep->rx_tail >= ep->rx_size) {
		ret = -FI_EAGAIN;
		goto out;
	}
	rx = &ep->rx[ep->rx_head % ep->rx_size];
	ret = verbs_sge_fill(rx->sge, iov, desc, count, false, &len);
	if (ret)
		goto out;
	if (report && cq) {
		util_cq_writer_lock(cq);
		ret = util_cq_reserve(cq, 1);
		util_cq_writer_unlock(cq);
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
			if (rx->report) {
				util_cq_writer_lock(cq);
				util_cq_unreserve(cq, 1);
				util_cq_writer_unlock(cq);
			}
			ret = ret == ENOMEM ? -FI_EAGAIN : weft_errno(ret);
			goto out;
		}
		rx->on_qp = true;
		ep->rx_on_qp++;
	}
out:
	weft_unlock(util_rdm_lock(&ep->rdm));
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

	return post_recv(ep, iov, desc, count, context, ep->rdm.rx_op_flags);
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
		.cntr = VERBS_CNTR_SEND,
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
			       ep->rdm.tx_op_flags & ~FI_REMOTE_CQ_DATA);
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
			       ep->rdm.tx_op_flags | FI_REMOTE_CQ_DATA);
}

static ssize_t msg_inject(struct fid_ep *ep_fid, const void *buf, size_t len,
			  fi_addr_t dest)
{
	struct verbs_msg_ep *ep = msg_ep_of(ep_fid);
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };

	return msg_send_common(ep, &iov, NULL, 1, 0, NULL,
			       (ep->rdm.tx_op_flags & ~FI_REMOTE_CQ_DATA) |
				       FI_INJECT);
}

static ssize_t msg_injectdata(struct fid_ep *ep_fid, const void *buf,
			      size_t len, uint64_t data, fi_addr_t dest)
{
	struct verbs_msg_ep *ep = msg_ep_of(ep_fid);
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };

	return msg_send_common(ep, &iov, NULL, 1, data, NULL,
			       ep->rdm.tx_op_flags | FI_INJECT |
				       FI_REMOTE_CQ_DATA);
}

static struct fi_ops_msg verbs_msg_ops = {
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
		.cntr = read ? VERBS_CNTR_READ : VERBS_CNTR_WRITE,
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
			  ep->rdm.tx_op_flags & ~FI_REMOTE_CQ_DATA);
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
			  ep->rdm.tx_op_flags & ~FI_REMOTE_CQ_DATA);
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
			  ep->rdm.tx_op_flags | FI_REMOTE_CQ_DATA);
}

static ssize_t rma_inject(struct fid_ep *ep_fid, const void *buf, size_t len,
			  fi_addr_t dest, uint64_t addr, uint64_t key)
{
	struct verbs_msg_ep *ep = msg_ep_of(ep_fid);
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };

	return rma_common(ep, false, &iov, NULL, 1, addr, key, 0, NULL,
			  (ep->rdm.tx_op_flags & ~FI_REMOTE_CQ_DATA) |
				  FI_INJECT);
}

static ssize_t rma_injectdata(struct fid_ep *ep_fid, const void *buf,
			      size_t len, uint64_t data, fi_addr_t dest,
			      uint64_t addr, uint64_t key)
{
	struct verbs_msg_ep *ep = msg_ep_of(ep_fid);
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };

	return rma_common(ep, false, &iov, NULL, 1, addr, key, data, NULL,
			  ep->rdm.tx_op_flags | FI_INJECT | FI_REMOTE_CQ_DATA);
}

static struct fi_ops_rma verbs_rma_ops = {
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
		.cntr = fetch ? VERBS_CNTR_READ : VERBS_CNTR_WRITE,
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
			   context, ep->rdm.tx_op_flags, false);
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
			   NULL, (ep->rdm.tx_op_flags | FI_INJECT) &
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
			   ep->rdm.tx_op_flags, true);
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
			   ep->rdm.tx_op_flags, true);
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

static struct fi_ops_atomic verbs_atomic_ops = {
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

/* ---- fi_ops_ep, fi_ops -------------------------------------------------- */

static ssize_t ep_rx_size_left(struct fid_ep *ep_fid)
{
	struct verbs_msg_ep *ep = msg_ep_of(ep_fid);

	if (ep->srx)
		return (ssize_t)ep->srx->nfree;
	return (ssize_t)(ep->rx_size - (ep->rx_head - ep->rx_tail));
}

static ssize_t ep_tx_size_left(struct fid_ep *ep_fid)
{
	struct verbs_msg_ep *ep = msg_ep_of(ep_fid);

	return (ssize_t)(ep->tx_size - (ep->tx_head - ep->tx_tail));
}

static struct fi_ops_ep verbs_ep_ops = {
	.size = sizeof(struct fi_ops_ep),
	.cancel = weft_no_cancel,
	.getopt = verbs_ep_getopt,
	.setopt = verbs_ep_setopt,
	.tx_ctx = weft_no_tx_ctx,
	.rx_ctx = weft_no_rx_ctx,
	.rx_size_left = ep_rx_size_left,
	.tx_size_left = ep_tx_size_left,
};

/*
 * What of a closed endpoint the device and rdma_cm still use: its id and
 * QP, its CQ and channels, the scratch registration.
 */
struct verbs_teardown {
	struct verbs_domain *domain;
	struct rdma_cm_id *id;
	bool qp, armed;
	struct ibv_cq *cq;
	struct ibv_comp_channel *comp_ch;
	struct rdma_event_channel *cm_ch;
	struct ibv_mr *scratch_mr;
	uint64_t *scratch;
	struct verbs_srx *srx; /* released once the QP is gone */
};

/* Destroy in the order the libraries ask: QP, id, CQ, channels. */
static void teardown_run(struct verbs_teardown *t)
{
	if (t->qp)
		rdma_destroy_qp(t->id);
	if (t->srx)
		verbs_srx_release(t->srx);
	if (t->id)
		rdma_destroy_id(t->id);
	if (t->cq) {
		if (t->armed) {
			struct ibv_cq *c;
			void *x;

			if (!ibv_get_cq_event(t->comp_ch, &c, &x))
				ibv_ack_cq_events(c, 1);
		}
		ibv_destroy_cq(t->cq);
	}
	if (t->scratch_mr)
		ibv_dereg_mr(t->scratch_mr);
	if (t->comp_ch)
		ibv_destroy_comp_channel(t->comp_ch);
	if (t->cm_ch)
		rdma_destroy_event_channel(t->cm_ch);
	free(t->scratch);
}

static void *teardown_thread(void *arg)
{
	struct verbs_teardown *t = arg;

	teardown_run(t);
	verbs_domain_release(t->domain);
	free(t);
	return NULL;
}

/*
 * Hand a teardown that would block to a thread of its own; false if it
 * could not be (the caller then runs it).
 */
static bool teardown_defer(const struct verbs_teardown *t)
{
	struct verbs_teardown *copy = malloc(sizeof(*copy));
	pthread_attr_t attr;
	pthread_t thr;
	int ret;

	if (!copy)
		return false;
	*copy = *t;
	verbs_domain_hold(t->domain);
	ret = pthread_attr_init(&attr);
	if (!ret) {
		pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
		ret = pthread_create(&thr, &attr, teardown_thread, copy);
		pthread_attr_destroy(&attr);
	}
	if (ret) {
		verbs_domain_release(t->domain);
		free(copy);
		return false;
	}
	return true;
}

/*
 * fi_close.  A connected endpoint disconnects first (the peer sees
 * FI_SHUTDOWN).  One still connecting does not: on iWARP the kernel's
 * iw_cm makes rdma_disconnect, rdma_destroy_id and the QP's destruction
 * wait until the connection attempt has an answer (siw: the MPA reply, or
 * its timeout, seconds away when the peer never answers), so that
 * endpoint's teardown goes to a thread and fi_close returns at once.  An
 * InfiniBand or RoCE id in that state is destroyed at once (the CM
 * rejects the attempt), as is one still resolving.
 */
static int ep_close(struct fid *fid)
{
	struct verbs_msg_ep *ep =
		container_of(fid, struct verbs_msg_ep, rdm.ep_fid.fid);
	struct verbs_teardown t = {
		.domain = ep->domain,
		.id = ep->id,
		.qp = ep->qp != NULL,
		.armed = ep->armed,
		.cq = ep->cq,
		.comp_ch = ep->comp_ch,
		.cm_ch = ep->cm_ch,
		.scratch_mr = ep->scratch_mr,
		.scratch = ep->scratch,
		.srx = ep->srx,
	};

	/* Injects its peer could not take yet still go (util_rdm.h). */
	util_rdm_ep_linger(&ep->rdm);
	util_eq_unbind_cm(ep->eq, &ep->cm_progress, ep->cm_ch->fd);
	if (ep->state == VERBS_CM_CONNECTED)
		rdma_disconnect(ep->id);
	util_rdm_ep_fini(&ep->rdm);
	if (!(ep->state == VERBS_CM_CONNECTING && ep->domain->dev.iwarp &&
	      teardown_defer(&t)))
		teardown_run(&t);
	if (ep->eq)
		util_eq_put(ep->eq);
	free(ep->tx);
	free(ep->rx);
	free(ep);
	return 0;
}

static int ep_bind(struct fid *fid, struct fid *bfid, uint64_t flags)
{
	struct verbs_msg_ep *ep =
		container_of(fid, struct verbs_msg_ep, rdm.ep_fid.fid);

	if (bfid && bfid->fclass == FI_CLASS_EQ)
		return util_eq_bind_cm(&ep->eq, bfid, &ep->cm_progress,
				       verbs_msg_cm_progress, ep->cm_ch->fd, ep);
	if (bfid && bfid->fclass == FI_CLASS_SRX_CTX) {
		struct verbs_srx *srx =
			container_of(bfid, struct verbs_srx, ep_fid.fid);

		if (srx->domain != ep->domain)
			return -FI_EINVAL;
		weft_lock(util_rdm_lock(&ep->rdm));
		if (ep->srx || ep->cq) {
			weft_unlock(util_rdm_lock(&ep->rdm));
			return ep->srx ? -FI_EALREADY : -FI_EOPBADSTATE;
		}
		weft_lock(&srx->lock);
		srx->eps++;
		weft_unlock(&srx->lock);
		ep->srx = srx;
		weft_unlock(util_rdm_lock(&ep->rdm));
		return 0;
	}
	return util_rdm_ep_bind(fid, bfid, flags);
}

static int ep_enable(struct verbs_msg_ep *ep)
{
	size_t cqe;
	int ret;

	if (ep->cq)
		return 0;
	if (ep->shared_rx && !ep->srx) {
		FI_WARN(&verbs_prov, FI_LOG_EP_CTRL,
			"rx_ctx_cnt FI_SHARED_CONTEXT: bind a shared receive context before fi_enable\n");
		return -FI_EOPBADSTATE;
	}
	/* Every receive of the shared context may complete here. */
	cqe = ep->tx_size * tx_wrs(ep) + (ep->srx ? ep->srx->size : ep->rx_size);
	cqe = WEFT_MIN(cqe, (size_t)ep->domain->dev.max_cqe);
	ep->cq = ibv_create_cq(ep->domain->ctx, (int)cqe, ep, ep->comp_ch, 0);
	if (!ep->cq)
		return weft_errno(errno);
	if (ibv_req_notify_cq(ep->cq, 0))
		return -FI_EIO;
	ep->armed = true;
	if (ep->domain->dev.atomics) {
		ep->scratch_mr = ibv_reg_mr(ep->domain->pd, ep->scratch,
					    ep->tx_size * sizeof(uint64_t),
					    IBV_ACCESS_LOCAL_WRITE);
		if (!ep->scratch_mr)
			return weft_errno(errno);
	}
	if (ep->srx && ep->rdm.rx_cq) {
		weft_lock(&ep->srx->lock);
		if (!ep->srx->cancel_cq) {
			util_cq_bind(ep->rdm.rx_cq, NULL);
			ep->srx->cancel_cq = ep->rdm.rx_cq;
		}
		weft_unlock(&ep->srx->lock);
	}
	/* A connection request's id knows its device already: the QP can
	 * take receives before fi_accept. */
	if (ep->id->verbs) {
		ret = verbs_msg_qp_create(ep);
		if (ret)
			return ret;
	}
	return 0;
}

static int ep_control(struct fid *fid, int command, void *arg)
{
	struct verbs_msg_ep *ep =
		container_of(fid, struct verbs_msg_ep, rdm.ep_fid.fid);
	int ret;

	if (command == FI_ENABLE) {
		if (!ep->eq)
			return -FI_ENOEQ;
		weft_lock(util_rdm_lock(&ep->rdm));
		ret = ep_enable(ep);
		weft_unlock(util_rdm_lock(&ep->rdm));
		if (ret)
			return ret;
	}
	return util_rdm_ep_control(fid, command, arg);
}

static struct fi_ops verbs_ep_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = ep_close,
	.bind = ep_bind,
	.control = ep_control,
	.ops_open = weft_no_ops_open,
	.tostr = weft_no_tostr,
	.ops_set = weft_no_ops_set,
};

int verbs_msg_ep_open(struct verbs_domain *domain, struct fi_info *info,
		      struct fid_ep **ep_fid, void *context)
{
	struct util_rdm_ep_attr attr = {
		.connected = true,
	};
	const struct verbs_dev *d = &domain->dev;
	uint32_t depth = verbs_queue_depth(d);
	struct verbs_msg_ep *ep;
	int ret;

	if (info->tx_attr && info->tx_attr->size > depth)
		return -FI_EINVAL;
	if (info->rx_attr && info->rx_attr->size > depth)
		return -FI_EINVAL;
	ep = calloc(1, sizeof(*ep));
	if (!ep)
		return -FI_ENOMEM;
	ep->domain = domain;
	ep->rx_cq_data = info->rx_attr && (info->rx_attr->mode & FI_RX_CQ_DATA);
	ep->imm = !d->iwarp;
	ep->shared_rx = info->ep_attr &&
			info->ep_attr->rx_ctx_cnt == FI_SHARED_CONTEXT;
	if (ep->shared_rx && !d->max_srq) {
		free(ep);
		return -FI_EOPNOTSUPP;
	}
	ep->tx_size = info->tx_attr && info->tx_attr->size ?
			      info->tx_attr->size :
			      WEFT_MIN(verbs_params.tx_size, depth);
	ep->rx_size = info->rx_attr && info->rx_attr->size ?
			      info->rx_attr->size :
			      WEFT_MIN(verbs_params.rx_size, depth);
	ep->max_sge = WEFT_MIN(d->max_sge, (uint32_t)VERBS_IOV_MAX);
	ep->inline_max = d->max_inline;
	if (info->tx_attr && info->tx_attr->inject_size &&
	    info->tx_attr->inject_size < ep->inline_max)
		ep->inline_max = (uint32_t)info->tx_attr->inject_size;
	ep->tx_signal_every = (uint32_t)(ep->tx_size / 2); /* < tx_size */
	ep->tx = calloc(ep->tx_size, sizeof(*ep->tx));
	ep->rx = calloc(ep->rx_size, sizeof(*ep->rx));
	ep->scratch = calloc(ep->tx_size, sizeof(uint64_t));
	if (!ep->tx || !ep->rx || !ep->scratch) {
		free(ep->tx);
		free(ep->rx);
		free(ep->scratch);
		free(ep);
		return -FI_ENOMEM;
	}
	attr.inject_max = ep->inline_max;
	ep->xp.ops = &verbs_msg_transport;
	ep->xp.eager_max = ep->inline_max;
	attr.xport = &ep->xp;
	ret = util_rdm_ep_init(&ep->rdm, &domain->base.util, info, &attr,
			       context);
	if (ret) {
		free(ep->tx);
		free(ep->rx);
		free(ep->scratch);
		free(ep);
		return ret;
	}
	ep->rdm.ep_fid.fid.ops = &verbs_ep_fi_ops;
	ep->rdm.ep_fid.ops = &verbs_ep_ops;
	ep->rdm.ep_fid.cm = &verbs_msg_cm_ops;
	ep->rdm.ep_fid.msg = &verbs_msg_ops;
	ep->rdm.ep_fid.rma = &verbs_rma_ops;
	ep->rdm.ep_fid.atomic = &verbs_atomic_ops;
	ep->rdm.ep_fid.tagged = NULL;

	ep->comp_ch = ibv_create_comp_channel(domain->ctx);
	ep->cm_ch = rdma_create_event_channel();
	if (!ep->comp_ch || !ep->cm_ch) {
		ret = weft_errno(errno);
		goto err;
	}
	ret = verbs_set_nonblock(ep->comp_ch->fd);
	if (!ret)
		ret = verbs_set_nonblock(ep->cm_ch->fd);
	if (ret)
		goto err;
	if (info->handle) {
		struct verbs_connreq *cr;

		if (info->handle->fclass != FI_CLASS_CONNREQ) {
			ret = -FI_EINVAL;
			goto err;
		}
		cr = container_of(info->handle, struct verbs_connreq, handle);
		if (rdma_migrate_id(cr->id, ep->cm_ch)) {
			ret = weft_errno(errno);
			goto err;
		}
		ep->id = cr->id;
		ep->id->context = ep;
		if (domain->fence_mr)
			ep->fence = cr->fence;
		free(cr);
		info->handle = NULL;
	} else {
		if (rdma_create_id(ep->cm_ch, &ep->id, ep, RDMA_PS_TCP)) {
			ret = weft_errno(errno);
			goto err;
		}
		if (info->src_addr &&
		    info->src_addrlen <= sizeof(ep->src_addr)) {
			memcpy(&ep->src_addr, info->src_addr,
			       info->src_addrlen);
			((struct sockaddr_in *)&ep->src_addr)->sin_port = 0;
		}
	}
	*ep_fid = &ep->rdm.ep_fid;
	return 0;
err:
	ep_close(&ep->rdm.ep_fid.fid);
	return ret;
}
