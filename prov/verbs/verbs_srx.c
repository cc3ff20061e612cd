/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * verbs shared receive contexts (fi_srx_context): one SRQ for the QPs of
 * the MSG endpoints bound to it (struct verbs_srx, verbs_msg.h).
 */
#include "verbs_msg.h"

#include <stdlib.h>
#include <string.h>

#include "weft/ofi.h"

#include "weft/stubs.h"

/* ---- completions -------------------------------------------------------- */

/* A receive of the bound shared context completed on ep's CQ. */
void verbs_srx_rx_complete(struct verbs_msg_ep *ep, const struct ibv_wc *wc)
{
	struct verbs_srx *srx = verbs_ep_srx(ep);
	uint64_t slot = wc->wr_id & ~(VERBS_WR_RX | VERBS_WR_SRX);
	struct verbs_rx *rx;
	void *context, *buf;
	bool completion;

	if (!srx || slot >= srx->size)
		return;
	weft_lock(&srx->base.lock);
	rx = &srx->rx[slot];
	if (!rx->on_qp) { /* reported already: never twice */
		weft_unlock(&srx->base.lock);
		return;
	}
	context = rx->context;
	buf = rx->buf;
	completion = rx->report;
	rx->on_qp = false;
	srx->free[srx->nfree++] = (uint32_t)slot;
	weft_unlock(&srx->base.lock);
	verbs_msg_rx_report(ep, context, buf, false,
			    !ep->base.rx_selective || completion, wc);
}

/* ---- shared receive contexts -------------------------------------------- */

void verbs_srx_release(struct verbs_srx *srx)
{
	util_srx_leave(&srx->base);
}

static inline struct verbs_srx *srx_of(struct fid_ep *ep_fid)
{
	return container_of(ep_fid, struct verbs_srx, base.ep_fid);
}

static ssize_t srx_post(struct verbs_srx *srx, const struct iovec *iov,
			void **desc, size_t count, void *context,
			uint64_t flags)
{
	struct ibv_recv_wr wr = { 0 }, *bad;
	struct verbs_rx *rx;
	uint32_t slot;
	size_t len;
	ssize_t ret;

	if (count > srx->max_sge)
		return -FI_EINVAL;
	weft_lock(&srx->base.lock);
	if (!srx->nfree) {
		ret = -FI_EAGAIN;
		goto out;
	}
	slot = srx->free[srx->nfree - 1];
	rx = &srx->rx[slot];
	ret = verbs_sge_fill(rx->sge, iov, desc, count, false, &len);
	if (ret)
		goto out;
	rx->context = context;
	rx->buf = count ? iov[0].iov_base : NULL;
	/* Whether it is reported depends on the endpoint it lands on
	 * (FI_SELECTIVE_COMPLETION of that endpoint's bind). */
	rx->report = flags & FI_COMPLETION;
	rx->nsge = (uint32_t)count;
	wr.wr_id = VERBS_WR_RX | VERBS_WR_SRX | slot;
	wr.sg_list = rx->sge;
	wr.num_sge = (int)count;
	ret = ibv_post_srq_recv(srx->srq, &wr, &bad);
	if (ret) {
		ret = ret == ENOMEM ? -FI_EAGAIN : weft_errno(ret);
		goto out;
	}
	rx->on_qp = true;
	srx->nfree--;
out:
	weft_unlock(&srx->base.lock);
	return ret;
}

static ssize_t srx_recvmsg(struct fid_ep *ep_fid, const struct fi_msg *msg,
			   uint64_t flags)
{
	if (!msg)
		return -FI_EINVAL;
	return srx_post(srx_of(ep_fid), msg->msg_iov, msg->desc,
			msg->iov_count, msg->context, flags);
}

static ssize_t srx_recvv(struct fid_ep *ep_fid, const struct iovec *iov,
			 void **desc, size_t count, fi_addr_t src,
			 void *context)
{
	struct verbs_srx *srx = srx_of(ep_fid);

	return srx_post(srx, iov, desc, count, context, srx->base.op_flags);
}

static ssize_t srx_recv(struct fid_ep *ep_fid, void *buf, size_t len,
			void *desc, fi_addr_t src, void *context)
{
	struct iovec iov = { .iov_base = buf, .iov_len = len };

	return srx_recvv(ep_fid, &iov, &desc, 1, src, context);
}

static struct fi_ops_msg srx_msg_ops = {
	.size = sizeof(struct fi_ops_msg),
	.recv = srx_recv,
	.recvv = srx_recvv,
	.recvmsg = srx_recvmsg,
	.send = weft_no_send,
	.sendv = weft_no_sendv,
	.sendmsg = weft_no_sendmsg,
	.inject = weft_no_inject,
	.senddata = weft_no_senddata,
	.injectdata = weft_no_injectdata,
};

static ssize_t srx_rx_size_left(struct fid_ep *ep_fid)
{
	return (ssize_t)srx_of(ep_fid)->nfree;
}

static struct fi_ops_ep srx_ep_ops = {
	.size = sizeof(struct fi_ops_ep),
	.cancel = weft_no_cancel,
	.getopt = verbs_ep_getopt,
	.setopt = verbs_ep_setopt,
	.tx_ctx = weft_no_tx_ctx,
	.rx_ctx = weft_no_rx_ctx,
	.rx_size_left = srx_rx_size_left,
	.tx_size_left = weft_no_size_left,
};

/*
 * fi_close: -FI_EBUSY while endpoints are bound (their QPs use the SRQ).
 * Receives still posted are reported FI_ECANCELED, each once, with their
 * context, on the receive CQ of the first endpoint that was bound with
 * one (held until now: fi_close of that CQ is -FI_EBUSY meanwhile); with
 * no such CQ they are discarded (fi_endpoint(3)).
 */
static int srx_close(struct fid *fid)
{
	struct verbs_srx *srx =
		container_of(fid, struct verbs_srx, base.ep_fid.fid);
	struct util_cq *cq;
	size_t i;
	int ret;

	ret = util_srx_close_check(&srx->base);
	if (ret)
		return ret;
	if (srx->srq) {
		ret = ibv_destroy_srq(srx->srq);
		if (ret)
			return weft_errno(ret);
		srx->srq = NULL;
	}
	cq = srx->cancel_cq;
	for (i = 0; srx->rx && i < srx->size; i++) {
		struct verbs_rx *rx = &srx->rx[i];
		struct fi_cq_err_entry err = {
			.op_context = rx->context,
			.flags = FI_RECV | FI_MSG,
			.buf = rx->buf,
			.err = FI_ECANCELED,
			.prov_errno = IBV_WC_WR_FLUSH_ERR,
		};

		if (!rx->on_qp)
			continue;
		rx->on_qp = false;
		util_ep_cq_error(cq, false, true, &err);
	}
	if (cq)
		util_cq_unbind(cq, NULL);
	util_srx_fini(&srx->base);
	free(srx->rx);
	free(srx->free);
	free(srx);
	return 0;
}

struct fi_ops verbs_srx_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = srx_close,
	.bind = weft_no_bind,
	.control = util_srx_control,
	.ops_open = weft_no_ops_open,
	.tostr = weft_no_tostr,
	.ops_set = weft_no_ops_set,
};

int verbs_srx_context(struct fid_domain *domain_fid, struct fi_rx_attr *attr,
		      struct fid_ep **rx_ep, void *context)
{
	struct verbs_domain *domain = verbs_domain_of(domain_fid);
	const struct verbs_dev *d = &domain->dev;
	struct ibv_srq_init_attr sa = { 0 };
	struct verbs_srx *srx;
	size_t size = WEFT_MIN(verbs_params.rx_size, (size_t)d->max_srq_wr);
	uint32_t sge = WEFT_MIN(d->max_srq_sge, (uint32_t)VERBS_IOV_MAX);
	size_t i;
	int ret;

	if (!rx_ep)
		return -FI_EINVAL;
	/* RDM endpoints match in the engine: their shared context is the
	 * engine's (util_rdm_srx), whatever carries the messages. */
	if (domain->ep_type == FI_EP_RDM)
		return util_rdm_srx_open(domain_fid, attr, rx_ep, context);
	if (!d->max_srq || !d->max_srq_wr || !d->max_srq_sge)
		return -FI_EOPNOTSUPP;
	if (attr) {
		if (attr->caps & ~(uint64_t)(FI_MSG | FI_RECV | FI_RMA |
					     FI_REMOTE_WRITE | FI_REMOTE_READ |
					     FI_ATOMIC | FI_REMOTE_COMM |
					     FI_LOCAL_COMM))
			return -FI_EOPNOTSUPP;
		if (attr->size > d->max_srq_wr || attr->iov_limit > sge)
			return -FI_EINVAL;
		if (attr->size)
			size = attr->size;
	}
	srx = calloc(1, sizeof(*srx));
	if (!srx)
		return -FI_ENOMEM;
	ret = util_srx_init(&srx->base, &domain->base.util, attr, true,
			    context);
	if (ret) {
		free(srx);
		return ret;
	}
	srx->base.ep_fid.fid.ops = &verbs_srx_fi_ops;
	srx->base.ep_fid.ops = &srx_ep_ops;
	srx->base.ep_fid.msg = &srx_msg_ops;
	if (!srx->base.op_flags)
		srx->base.op_flags = FI_COMPLETION;
	srx->size = size;
	srx->max_sge = sge;
	srx->rx = calloc(size, sizeof(*srx->rx));
	srx->free = calloc(size, sizeof(*srx->free));
	if (!srx->rx || !srx->free) {
		ret = -FI_ENOMEM;
		goto err;
	}
	/* Taken from the end: slot 0 first. */
	for (i = 0; i < size; i++)
		srx->free[i] = (uint32_t)(size - 1 - i);
	srx->nfree = size;
	sa.attr.max_wr = (uint32_t)size;
	sa.attr.max_sge = sge;
	srx->srq = ibv_create_srq(domain->pd, &sa);
	if (!srx->srq) {
		ret = weft_errno(errno);
		FI_WARN(&verbs_prov, FI_LOG_EP_CTRL,
			"ibv_create_srq (%zu, sge %u): %s\n", size, sge,
			fi_strerror(-ret));
		goto err;
	}
	*rx_ep = &srx->base.ep_fid;
	return 0;
err:
	srx_close(&srx->base.ep_fid.fid);
	return ret;
}
