/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The RDM engine (weft/util_rdm.h), the endpoint: options, the ops tables
 * of the msg and tagged entry points, progress (manual, and the thread of
 * automatic progress), binding, fi_control, setup, lingering and teardown.
 */
#include "weft/util_rdm.h"

#include <sched.h>
#include <sys/socket.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "weft/ofi.h"

#include "weft/stubs.h"
#include "weft/util_mr.h"

#include "util_rdm_priv.h"

/* ---- options ------------------------------------------------------------ */

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
		*(size_t *)optval = ep->rxq->msgq.min_multi_recv;
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
		util_match_set_min_multi_recv(&ep->rxq->msgq,
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
		struct weft_lock *l = util_rdm_lock(o);

		if (o == ep || !weft_trylock(l))
			continue;
		if (o->enabled)
			n += rdm_progress_once(o);
		weft_unlock(l);
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
		struct weft_lock *l = util_rdm_lock(o);

		if (o == ep || !weft_trylock(l))
			continue;
		if (o->enabled) {
			k = rdm_arm_xports(o);
			if (k > 0)
				n += k + rdm_progress_once(o);
		}
		weft_unlock(l);
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

	struct weft_lock *l = util_rdm_lock(ep);

	if (!weft_trylock(l))
		return;
	if (ep->enabled)
		rdm_progress_once(ep);
	weft_unlock(l);
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

/*
 * A shared receive context: from now on the endpoint's receive state and
 * lock are the context's.  With the endpoint's own lock held (before
 * enable, so nothing else runs on the endpoint); takes the context's.
 */
static int bind_srx(struct util_rdm_ep *ep, struct util_rdm_srx *srx)
{
	struct util_rdm_rxq *q = &srx->rxq;
	int ret = 0;

	if (ep->srx)
		return -FI_EALREADY;
	if (!ep->rx_shared || srx->domain != ep->domain || ep->sep) {
		FI_WARN(ep->domain->prov, FI_LOG_EP_CTRL,
			"a shared receive context binds to an endpoint of "
			"its domain opened with rx_ctx_cnt FI_SHARED_CONTEXT\n");
		return -FI_EINVAL;
	}
	weft_lock(&q->lock);
	/* Its unexpected records are the endpoints' size: made at the
	 * first bind, the same for every endpoint of the provider. */
	if (!q->unexp_pool)
		ret = rxq_unexp_init(q, ep->own_rxq.unexp_inline,
				     ep->own_rxq.unexp_max);
	else if (q->unexp_inline != ep->own_rxq.unexp_inline)
		ret = -FI_EINVAL;
	if (!ret) {
		dlist_remove(&ep->rxq_entry);
		dlist_insert_tail(&ep->rxq_entry, &q->eps);
		srx->bound++;
		ep->srx = srx;
		ep->rxq = q;
	}
	weft_unlock(&q->lock);
	return ret;
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
		ep->own_rxq.av = ep->av;
		return 0;
	case FI_CLASS_EQ:
		/* RDM endpoints have no connection events to report. */
		return 0;
	case FI_CLASS_STX_CTX:
		return bind_stx(ep, container_of(bfid, struct util_rdm_stx,
						 stx_fid.fid));
	case FI_CLASS_SRX_CTX:
		if (!util_rdm_srx_of(bfid))
			return -FI_EINVAL;
		return bind_srx(ep, util_rdm_srx_of(bfid));
	default:
		return -FI_EINVAL;
	}
}

int util_rdm_ep_bind(struct fid *fid, struct fid *bfid, uint64_t flags)
{
	struct util_rdm_ep *ep = container_of(fid, struct util_rdm_ep,
					      ep_fid.fid);
	struct weft_lock *l;
	int ret;

	if (!bfid)
		return -FI_EINVAL;
	/* The lock taken is the one let go: a shared receive context's
	 * bind changes the endpoint's. */
	l = util_rdm_lock(ep);
	weft_lock(l);
	ret = ep->enabled && !ep->sep ? -FI_EOPBADSTATE :
					util_rdm_bind_locked(ep, bfid, flags);
	weft_unlock(l);
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
		else if (ep->rx_shared && !ep->srx)
			ret = -FI_EOPBADSTATE;
		/* fi_endpoint(3): connectionless endpoints on one shared
		 * receive context share one AV. */
		else if (ep->srx && ep->av && ep->rxq->av &&
			 ep->rxq->av != ep->av)
			ret = -FI_EINVAL;
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
		if (ep->enabled && ep->srx && !ep->rxq->av)
			ep->rxq->av = ep->av;
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
	ep->rx_shared = info->ep_attr &&
			info->ep_attr->rx_ctx_cnt == FI_SHARED_CONTEXT;
	ep->caps = info->caps;
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

	ret = rxq_init(&ep->own_rxq, ep->caps,
		       util_domain_progress_needs_lock(domain));
	if (ret)
		goto err_local;
	ret = rxq_unexp_init(&ep->own_rxq, attr->unexp_inline,
			     attr->unexp_max);
	if (ret)
		goto err_rxq;
	ep->rxq = &ep->own_rxq;
	dlist_insert_tail(&ep->rxq_entry, &ep->own_rxq.eps);
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
		goto err_rxq;
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

err_rxq:
	rxq_fini(&ep->own_rxq);
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
	/* What came by this endpoint cannot be fetched or answered once its
	 * transports are gone; a shared context's receives stay. */
	rxq_drop_ep(ep->rxq, ep);
	if (ep->srx) {
		dlist_remove(&ep->rxq_entry);
		if (!--ep->srx->bound)
			ep->rxq->av = NULL;
	}
	/* Transmits never handed over complete as canceled. */
	while (!dlist_empty(&ep->blocked)) {
		struct util_peer *p = container_of(ep->blocked.next,
						   struct util_peer, blocked);

		util_rdm_fail_peer(ep, p, FI_ECANCELED);
	}
	util_peer_map_fini(&ep->peers);
	ep_unlock(ep);
	util_bufpool_destroy(ep->tx_pool);
	rxq_fini(&ep->own_rxq);
	if (ep->local)
		ep->local_ops->close(ep->local);
	util_domain_put(ep->domain);
}
