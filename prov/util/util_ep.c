/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The endpoint base (weft/util_ep.h): binding, progress hooks and wait
 * fds, the automatic-progress thread, fi_control, close.
 */
#include "weft/util_ep.h"

#include <poll.h>
#include <sched.h>
#include <string.h>
#include <time.h>

#include "weft/ofi.h"

#include "weft/util_trigger.h"

/* ---- progress ----------------------------------------------------------- */

static void ep_progress(struct util_ep *ep)
{
	util_ep_lock(ep);
	if (ep->enabled)
		ep->ops->progress(ep);
	util_ep_unlock(ep);
}

/*
 * FI_PROGRESS_AUTO: progress without the application's calls.  Busy while
 * there is traffic; when idle, yields, then sleeps with a growing pause
 * (at most EP_AUTO_SLEEP_MAX_US), so an idle endpoint costs little CPU.
 */
#define EP_AUTO_SPIN 256
#define EP_AUTO_SLEEP_MAX_US 1000

static void *ep_progress_thread(void *arg)
{
	struct util_ep *ep = arg;
	unsigned int idle = 0, pause_us = 1;
	struct timespec ts;
	int n;

	while (!atomic_load_explicit(&ep->progress_stop, memory_order_acquire)) {
		util_ep_lock(ep);
		n = ep->ops->progress(ep);
		util_ep_unlock(ep);
		util_trigger_run(ep->domain);
		if (n) {
			idle = 0;
			pause_us = 1;
			continue;
		}
		if (++idle < EP_AUTO_SPIN) {
			sched_yield();
			continue;
		}
		ts.tv_sec = 0;
		ts.tv_nsec = (long)pause_us * 1000;
		nanosleep(&ts, NULL);
		if (pause_us < EP_AUTO_SLEEP_MAX_US)
			pause_us *= 2;
	}
	return NULL;
}

/* About to sleep on a wait object the owner's fds are in. */
static bool ep_arm(struct util_ep *ep)
{
	int n = 0;

	if (!ep->wait_fds)
		return false;
	util_ep_lock(ep);
	if (ep->enabled && ep->ops->arm) {
		n = ep->ops->arm(ep);
		if (n > 0)
			ep->ops->progress(ep);
	}
	util_ep_unlock(ep);
	if (ep->ops->arm_shared)
		n += ep->ops->arm_shared(ep);
	return n > 0;
}

static bool ep_tx_cq_arm(struct util_progress *p)
{
	return ep_arm(container_of(p, struct util_ep, tx_progress));
}

static bool ep_rx_cq_arm(struct util_progress *p)
{
	return ep_arm(container_of(p, struct util_ep, rx_progress));
}

static bool ep_cntr_arm(struct util_progress *p)
{
	return ep_arm(container_of(p, struct util_ep_cntr_hook, p)->ep);
}

static void ep_tx_cq_progress(struct util_progress *p)
{
	ep_progress(container_of(p, struct util_ep, tx_progress));
}

static void ep_rx_cq_progress(struct util_progress *p)
{
	ep_progress(container_of(p, struct util_ep, rx_progress));
}

static void ep_cntr_progress(struct util_progress *p)
{
	ep_progress(container_of(p, struct util_ep_cntr_hook, p)->ep);
}

/* ---- binding ------------------------------------------------------------ */

/*
 * Let the owner's fds wake the wait object w: then waiting on it sleeps
 * in the kernel instead of polling our progress.  Returns whether they
 * can: a source without an fd makes waits poll.
 */
static bool wait_add_fds(struct util_ep *ep, struct util_wait *w)
{
	int fds[UTIL_EP_WAIT_FDS];
	int n, i, ret;

	if (!w || !ep->ops->wait_fds)
		return false;
	n = ep->ops->wait_fds(ep, fds);
	if (n <= 0 || n > UTIL_EP_WAIT_FDS)
		return false;
	for (i = 0; i < n; i++) {
		ret = util_wait_add_fd(w, fds[i], POLLIN, ep);
		if (ret && ret != -FI_EALREADY) {
			while (i--)
				util_wait_del_fd(w, fds[i]);
			return false;
		}
	}
	memcpy(ep->wait_fd, fds, (size_t)n * sizeof(fds[0]));
	ep->nwait_fd = (uint8_t)n;
	ep->wait_fds = true;
	return true;
}

static void wait_del_fds(struct util_ep *ep, struct util_wait *w)
{
	unsigned int i;

	if (!w || !ep->wait_fds)
		return;
	for (i = 0; i < ep->nwait_fd; i++)
		util_wait_del_fd(w, ep->wait_fd[i]);
}

static int bind_cq(struct util_ep *ep, struct util_cq *cq, uint64_t flags)
{
	int ret;

	if (flags & ~(FI_TRANSMIT | FI_RECV | FI_SELECTIVE_COMPLETION))
		return -FI_EBADFLAGS;
	if (((flags & FI_TRANSMIT) && ep->tx_cq) ||
	    ((flags & FI_RECV) && ep->rx_cq))
		return -FI_EALREADY;
	if (flags & FI_TRANSMIT) {
		ep->tx_progress.polled = !wait_add_fds(ep, util_cq_wait(cq));
		ret = util_cq_bind(cq, &ep->tx_progress);
		if (ret)
			return ret;
		ep->tx_cq = cq;
		ep->tx_selective = flags & FI_SELECTIVE_COMPLETION;
	}
	if (flags & FI_RECV) {
		ep->rx_progress.polled = !wait_add_fds(ep, util_cq_wait(cq));
		ret = util_cq_bind(cq, cq == ep->tx_cq ? NULL :
						       &ep->rx_progress);
		if (ret)
			return ret;
		ep->rx_cq = cq;
		ep->rx_selective = flags & FI_SELECTIVE_COMPLETION;
	}
	return 0;
}

static int bind_cntr(struct util_ep *ep, struct util_cntr *cntr,
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
		struct util_ep_cntr_hook *hook = &ep->cntr_hook[i];

		hook->ep = ep;
		hook->p.progress = ep_cntr_progress;
		hook->p.arm = ep_cntr_arm;
		hook->p.polled = !wait_add_fds(ep, cntr->waitable.wait);
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

int util_ep_bind_locked(struct util_ep *ep, struct fid *bfid, uint64_t flags)
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
		return 0;
	default:
		return -FI_EINVAL;
	}
}

int util_ep_bind(struct util_ep *ep, struct fid *bfid, uint64_t flags)
{
	int ret;

	if (!bfid)
		return -FI_EINVAL;
	util_ep_lock(ep);
	ret = ep->enabled ? -FI_EOPBADSTATE :
			    util_ep_bind_locked(ep, bfid, flags);
	util_ep_unlock(ep);
	return ret;
}

/* ---- enabling ----------------------------------------------------------- */

int util_ep_enable_check(const struct util_ep *ep)
{
	if (ep->rx_shared && !ep->srx)
		return -FI_EOPBADSTATE; /* fi_endpoint(3): bind one first */
	if (((ep->caps & (FI_SEND | FI_RMA | FI_ATOMIC)) && !ep->tx_cq &&
	     !ep->send_cntr && !ep->write_cntr && !ep->read_cntr) ||
	    ((ep->caps & FI_RECV) && !ep->rx_cq && !ep->recv_cntr))
		return -FI_ENOCQ;
	return 0;
}

int util_ep_control(struct util_ep *ep, int command, void *arg)
{
	uint64_t *flags = arg;
	int ret;

	switch (command) {
	case FI_ENABLE:
		util_ep_lock(ep);
		ret = ep->ops->enable ? ep->ops->enable(ep) :
					util_ep_enable_check(ep);
		if (!ret)
			ep->enabled = true;
		util_ep_unlock(ep);
		if (!ret && ep->domain->data_progress == FI_PROGRESS_AUTO &&
		    !ep->progress_running) {
			atomic_store(&ep->progress_stop, false);
			ret = -pthread_create(&ep->progress_thread, NULL,
					      ep_progress_thread, ep);
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

int util_ep_control_op(struct fid *fid, int command, void *arg)
{
	return util_ep_control(container_of(fid, struct util_ep, ep_fid.fid),
			       command, arg);
}

/* ---- setup and teardown ------------------------------------------------- */

int util_ep_init(struct util_ep *ep, struct util_domain *domain,
		 const struct fi_info *info, const struct util_ep_ops *ops,
		 void *context)
{
	int ret;

	ep->ops = ops;
	ep->domain = domain;
	ep->caps = info->caps;
	ep->tx_op_flags = info->tx_attr ? info->tx_attr->op_flags : 0;
	ep->rx_op_flags = info->rx_attr ? info->rx_attr->op_flags : 0;
	ep->rx_shared = info->ep_attr &&
			info->ep_attr->rx_ctx_cnt == FI_SHARED_CONTEXT;
	ep->ep_fid.fid.fclass = FI_CLASS_EP;
	ep->ep_fid.fid.context = context;
	ep->efid.ep = ep;
	ep->tx_progress.progress = ep_tx_cq_progress;
	ep->rx_progress.progress = ep_rx_cq_progress;
	ep->tx_progress.arm = ep_tx_cq_arm;
	ep->rx_progress.arm = ep_rx_cq_arm;
	ep->tx_progress.polled = true;
	ep->rx_progress.polled = true;
	ep->lock = &ep->own_lock;
	ret = weft_lock_init(&ep->own_lock,
			     util_domain_progress_needs_lock(domain));
	if (ret)
		return ret;
	util_domain_get(domain);
	return 0;
}

static void unbind_all(struct util_ep *ep, bool forget)
{
	struct util_cntr *cntrs[] = { ep->send_cntr,	 ep->recv_cntr,
				       ep->read_cntr,	 ep->write_cntr,
				       ep->rem_read_cntr, ep->rem_write_cntr };
	size_t i;

	if (ep->tx_cq)
		wait_del_fds(ep, util_cq_wait(ep->tx_cq));
	if (ep->rx_cq && ep->rx_cq != ep->tx_cq)
		wait_del_fds(ep, util_cq_wait(ep->rx_cq));
	for (i = 0; i < WEFT_ARRAY_SIZE(ep->cntr_hook); i++)
		if (ep->cntr_hook[i].cntr)
			wait_del_fds(ep, ep->cntr_hook[i].cntr->waitable.wait);
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
	/* At the close, what is outstanding still completes (FI_ECANCELED)
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

void util_ep_unbind(struct util_ep *ep)
{
	unbind_all(ep, true);
}

void util_ep_close(struct util_ep *ep)
{
	if (ep->progress_running) {
		atomic_store_explicit(&ep->progress_stop, true,
				      memory_order_release);
		pthread_join(ep->progress_thread, NULL);
		ep->progress_running = false;
	}
	/* Triggered operations not posted yet go with it. */
	util_trigger_drop_ep(ep);
	unbind_all(ep, false);
	if (ep->av)
		util_av_put(ep->av);
}

void util_ep_fini(struct util_ep *ep)
{
	if (ep->eq) {
		util_eq_put(ep->eq);
		ep->eq = NULL;
	}
	weft_lock_destroy(&ep->own_lock);
	util_domain_put(ep->domain);
}

/* ---- shared receive contexts -------------------------------------------- */

int util_srx_init(struct util_srx *srx, struct util_domain *domain,
		  const struct fi_rx_attr *attr, bool needs_lock,
		  void *context)
{
	int ret = weft_lock_init(&srx->lock, needs_lock);

	if (ret)
		return ret;
	if (attr)
		srx->attr = *attr;
	srx->op_flags = srx->attr.op_flags;
	srx->domain = domain;
	srx->ep_fid.fid.fclass = FI_CLASS_SRX_CTX;
	srx->ep_fid.fid.context = context;
	return 0;
}

int util_srx_bind_check(const struct util_ep *ep, const struct util_srx *srx)
{
	if (ep->srx)
		return -FI_EALREADY;
	if (ep->enabled)
		return -FI_EOPBADSTATE;
	if (!ep->rx_shared || srx->domain != ep->domain) {
		FI_WARN(ep->domain->prov, FI_LOG_EP_CTRL,
			"a shared receive context binds to an endpoint of "
			"its domain opened with rx_ctx_cnt FI_SHARED_CONTEXT\n");
		return -FI_EINVAL;
	}
	return 0;
}

void util_srx_leave(struct util_srx *srx)
{
	weft_lock(&srx->lock);
	util_srx_leave_locked(srx);
	weft_unlock(&srx->lock);
}

int util_srx_close_check(struct util_srx *srx)
{
	size_t bound;

	weft_lock(&srx->lock);
	bound = srx->bound;
	weft_unlock(&srx->lock);
	return bound ? -FI_EBUSY : 0;
}

void util_srx_fini(struct util_srx *srx)
{
	weft_lock_destroy(&srx->lock);
}

int util_srx_control(struct fid *fid, int command, void *arg)
{
	struct util_srx *srx = container_of(fid, struct util_srx, ep_fid.fid);
	uint64_t *flags = arg;

	switch (command) {
	case FI_ENABLE:
		return 0; /* ready from the start */
	case FI_GETOPSFLAG:
		if (!flags)
			return -FI_EINVAL;
		*flags = srx->op_flags;
		return 0;
	case FI_SETOPSFLAG:
		if (!flags)
			return -FI_EINVAL;
		srx->op_flags = *flags & ~FI_RECV;
		return 0;
	default:
		return -FI_ENOSYS;
	}
}
