/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * verbs FI_EP_MSG endpoints (verbs_msg.c has the data path): opening one
 * on the endpoint base, its QP, fi_enable, binding, and its close.
 */
#include "verbs_msg.h"

#include <stdlib.h>
#include <string.h>

#include "weft/ofi.h"

#include "weft/stubs.h"

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
	if (verbs_ep_srx(ep)) {
		qa.srq = verbs_ep_srx(ep)->srq;
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

/* ---- fi_ops_ep, fi_ops -------------------------------------------------- */

static ssize_t ep_rx_size_left(struct fid_ep *ep_fid)
{
	struct verbs_msg_ep *ep = msg_ep_of(ep_fid);

	if (verbs_ep_srx(ep))
		return (ssize_t)verbs_ep_srx(ep)->nfree;
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
		container_of(fid, struct verbs_msg_ep, base.ep_fid.fid);
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
		.srx = verbs_ep_srx(ep),
	};

	util_eq_unbind_cm(ep->base.eq, &ep->base.cm_progress,
			  ep->cm_ch ? ep->cm_ch->fd : -1);
	if (ep->state == VERBS_CM_CONNECTED)
		rdma_disconnect(ep->id);
	util_ep_close(&ep->base);
	util_ep_fini(&ep->base);
	if (!(ep->state == VERBS_CM_CONNECTING && ep->domain->dev.iwarp &&
	      teardown_defer(&t)))
		teardown_run(&t);
	free(ep->tx);
	free(ep->rx);
	free(ep);
	return 0;
}

static int ep_bind(struct fid *fid, struct fid *bfid, uint64_t flags)
{
	struct verbs_msg_ep *ep =
		container_of(fid, struct verbs_msg_ep, base.ep_fid.fid);

	if (bfid && bfid->fclass == FI_CLASS_EQ)
		return util_eq_bind_cm(&ep->base.eq, bfid, &ep->base.cm_progress,
				       verbs_msg_cm_progress, ep->cm_ch->fd, ep);
	if (bfid && bfid->fclass == FI_CLASS_SRX_CTX) {
		struct verbs_srx *srx =
			container_of(bfid, struct verbs_srx, base.ep_fid.fid);
		int ret;

		if (bfid->ops != &verbs_srx_fi_ops)
			return -FI_EINVAL; /* another provider's */
		util_ep_lock(&ep->base);
		ret = util_srx_bind_check(&ep->base, &srx->base);
		if (!ret) {
			weft_lock(&srx->base.lock);
			util_srx_join_locked(&srx->base, &ep->base);
			weft_unlock(&srx->base.lock);
		}
		util_ep_unlock(&ep->base);
		return ret;
	}
	return util_ep_bind(&ep->base, bfid, flags);
}

static int ep_enable(struct verbs_msg_ep *ep)
{
	struct verbs_srx *srx = verbs_ep_srx(ep);
	size_t cqe;
	int ret;

	if (ep->cq)
		return 0;
	/* Every receive of the shared context may complete here. */
	cqe = ep->tx_size * tx_wrs(ep) + (srx ? srx->size : ep->rx_size);
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
	if (srx && ep->base.rx_cq) {
		weft_lock(&srx->base.lock);
		if (!srx->cancel_cq) {
			util_cq_bind(ep->base.rx_cq, NULL);
			srx->cancel_cq = ep->base.rx_cq;
		}
		weft_unlock(&srx->base.lock);
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

/* FI_ENABLE (util_ep_ops.enable), lock held: an EQ, the device's objects,
 * and the bindings the capabilities need. */
static int verbs_msg_enable(struct util_ep *base)
{
	struct verbs_msg_ep *ep = container_of(base, struct verbs_msg_ep, base);
	int ret;

	if (!base->eq)
		return -FI_ENOEQ;
	ret = util_ep_enable_check(base);
	if (ret == -FI_EOPBADSTATE)
		FI_WARN(&verbs_prov, FI_LOG_EP_CTRL,
			"rx_ctx_cnt FI_SHARED_CONTEXT: bind a shared receive "
			"context before fi_enable\n");
	return ret ? ret : ep_enable(ep);
}

static const struct util_ep_ops verbs_msg_base_ops = {
	.progress = verbs_msg_progress,
	.wait_fds = verbs_msg_wait_fds,
	.arm = verbs_msg_arm,
	.enable = verbs_msg_enable,
};

static struct fi_ops verbs_ep_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = ep_close,
	.bind = ep_bind,
	.control = util_ep_control_op,
	.ops_open = weft_no_ops_open,
	.tostr = weft_no_tostr,
	.ops_set = weft_no_ops_set,
};

int verbs_msg_ep_open(struct verbs_domain *domain, struct fi_info *info,
		      struct fid_ep **ep_fid, void *context)
{
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
	if (info->ep_attr && info->ep_attr->rx_ctx_cnt == FI_SHARED_CONTEXT &&
	    !d->max_srq) {
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
	ret = util_ep_init(&ep->base, &domain->base.util, info,
			   &verbs_msg_base_ops, context);
	if (ret) {
		free(ep->tx);
		free(ep->rx);
		free(ep->scratch);
		free(ep);
		return ret;
	}
	ep->base.ep_fid.fid.ops = &verbs_ep_fi_ops;
	ep->base.ep_fid.ops = &verbs_ep_ops;
	ep->base.ep_fid.cm = &verbs_msg_cm_ops;
	ep->base.ep_fid.msg = &verbs_msg_ops;
	ep->base.ep_fid.rma = &verbs_rma_ops;
	ep->base.ep_fid.atomic = &verbs_atomic_ops;

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
	*ep_fid = &ep->base.ep_fid;
	return 0;
err:
	ep_close(&ep->base.ep_fid.fid);
	return ret;
}
