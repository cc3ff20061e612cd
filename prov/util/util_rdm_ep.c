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
#include "weft/util_coll.h"
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

bool util_rdm_is_ep(const struct fid_ep *ep)
{
	return ep && ep->ops == &util_rdm_ep_ops;
}

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
	struct util_domain *d = ep->base.domain;
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
		if (o->base.enabled)
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
	struct util_domain *d = ep->base.domain;
	struct dlist_entry *e;
	int n = 0, k;

	pthread_mutex_lock(&d->sweep_lock);
	dlist_foreach(&d->sweep_eps, e) {
		struct util_rdm_ep *o =
			container_of(e, struct util_rdm_ep, sweep_entry);
		struct weft_lock *l = util_rdm_lock(o);

		if (o == ep || !weft_trylock(l))
			continue;
		if (o->base.enabled) {
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
	if (ep->coll_retry)
		n += util_coll_retry(ep);
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

	if (weft_unlikely(!dlist_empty(&ep->blocked) || sweep ||
			  ep->coll_retry))
		n += rdm_progress_more(ep, sweep);
	if (weft_unlikely(ep->rx_gone))
		rx_fail_gone(ep);
	return n;
}

/* The base's progress (util_ep_ops), lock held. */
static int rdm_ep_progress(struct util_ep *base)
{
	return rdm_progress_once(container_of(base, struct util_rdm_ep, base));
}

/* fi_cq_read's progress: the base's hook with rdm_progress_once inlined
 * (util_ep.h, tx_progress), as every poll runs it. */
static inline void rdm_cq_progress(struct util_rdm_ep *ep)
{
	struct weft_lock *l = util_rdm_lock(ep);

	weft_lock(l);
	if (ep->base.enabled)
		rdm_progress_once(ep);
	weft_unlock(l);
}

static void rdm_tx_cq_progress(struct util_progress *p)
{
	rdm_cq_progress(container_of(p, struct util_rdm_ep, base.tx_progress));
}

static void rdm_rx_cq_progress(struct util_progress *p)
{
	rdm_cq_progress(container_of(p, struct util_rdm_ep, base.rx_progress));
}

static void rdm_eq_progress(struct util_progress *p)
{
	rdm_cq_progress(container_of(p, struct util_rdm_ep, base.cm_progress));
}

static int rdm_ep_arm(struct util_ep *base)
{
	return rdm_arm_xports(container_of(base, struct util_rdm_ep, base));
}

/* The wait fd serves the domain's sweeping endpoints: arm theirs too, or
 * a sleeper would not wake for their events. */
static int rdm_ep_arm_shared(struct util_ep *base)
{
	struct util_rdm_ep *ep = container_of(base, struct util_rdm_ep, base);

	return ep->sweep ? domain_arm(ep) : 0;
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
	if (ep->base.enabled)
		rdm_progress_once(ep);
	weft_unlock(l);
}

/* ---- binding, enabling -------------------------------------------------- */

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
static int rdm_ep_wait_fds(struct util_ep *base, int *fds)
{
	struct util_rdm_ep *ep = container_of(base, struct util_rdm_ep, base);
	int fd0 = xport_wait_fd(ep->xp), fd1 = xport_wait_fd(ep->local);

	if (fd0 < 0 || fd1 == -1)
		return 0;
	fds[0] = fd0;
	if (fd1 < 0)
		return 1;
	fds[1] = fd1;
	return 2;
}

/* The transmit capabilities an endpoint keeps within a shared context's. */
#define STX_CAPS (FI_MSG | FI_TAGGED | FI_RMA | FI_ATOMIC)

static int bind_stx(struct util_rdm_ep *ep, struct util_rdm_stx *stx)
{
	uint64_t caps = ep->base.caps & STX_CAPS;

	if (ep->stx)
		return -FI_EALREADY;
	if (!ep->tx_shared || stx->domain != ep->base.domain ||
	    (stx->attr.caps && (caps & ~stx->attr.caps))) {
		FI_WARN(ep->base.domain->prov, FI_LOG_EP_CTRL,
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

	ret = util_srx_bind_check(&ep->base, &srx->base);
	if (ret)
		return ret;
	if (ep->sep) {
		FI_WARN(ep->base.domain->prov, FI_LOG_EP_CTRL,
			"a shared receive context binds to no context of a "
			"scalable endpoint\n");
		return -FI_EINVAL;
	}
	weft_lock(&srx->base.lock);
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
		util_srx_join_locked(&srx->base, &ep->base);
		ep->rxq = q;
		ep->base.lock = &srx->base.lock;
	}
	weft_unlock(&srx->base.lock);
	return ret;
}

int util_rdm_bind_locked(struct util_rdm_ep *ep, struct fid *bfid,
			 uint64_t flags)
{
	int ret;

	switch (bfid->fclass) {
	case FI_CLASS_AV:
		ret = util_ep_bind_locked(&ep->base, bfid, flags);
		if (!ret) {
			util_peer_map_set_av(&ep->peers, ep->base.av);
			ep->own_rxq.av = ep->base.av;
		}
		return ret;
	case FI_CLASS_EQ:
		/* No connection events; collectives report their joins
		 * (FI_JOIN_COMPLETE), and reading it moves them along. */
		if (!(ep->base.caps & FI_COLLECTIVE))
			return 0;
		return util_eq_bind_cm(&ep->base.eq, bfid,
				       &ep->base.cm_progress, rdm_eq_progress,
				       -1, ep);
	case FI_CLASS_STX_CTX:
		return bind_stx(ep, container_of(bfid, struct util_rdm_stx,
						 stx_fid.fid));
	case FI_CLASS_SRX_CTX:
		if (!util_rdm_srx_of(bfid))
			return -FI_EINVAL;
		return bind_srx(ep, util_rdm_srx_of(bfid));
	default:
		return util_ep_bind_locked(&ep->base, bfid, flags);
	}
}

int util_rdm_ep_bind(struct fid *fid, struct fid *bfid, uint64_t flags)
{
	struct util_rdm_ep *ep = container_of(fid, struct util_rdm_ep,
					      base.ep_fid.fid);
	struct weft_lock *l;
	int ret;

	if (!bfid)
		return -FI_EINVAL;
	/* The lock taken is the one let go: a shared receive context's
	 * bind changes the endpoint's. */
	l = util_rdm_lock(ep);
	weft_lock(l);
	ret = ep->base.enabled && !ep->sep ?
		      -FI_EOPBADSTATE :
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
	    fi_getname(&ep->base.ep_fid.fid, &addr, &len))
		return;
	ep->local_up = ep->local_ops->enable(ep->local, ep->base.domain->prov,
					     ep->local_via, &addr,
					     ep->peers.attr.addr_len, ep->pair);
}

/* FI_ENABLE's checks (util_ep_ops.enable), lock held. */
static int rdm_ep_enable(struct util_ep *base)
{
	struct util_rdm_ep *ep = container_of(base, struct util_rdm_ep, base);

	if (!base->av && !ep->connected)
		return -FI_ENOAV;
	if (ep->tx_shared && !ep->stx)
		return -FI_EOPBADSTATE; /* fi_endpoint(3): bind it */
	/* (No shared receive context bound: util_ep_enable_check.)
	 * fi_endpoint(3): connectionless endpoints on one shared receive
	 * context share one AV. */
	if (base->srx && base->av && ep->rxq->av && ep->rxq->av != base->av)
		return -FI_EINVAL;
	if (!ep->sep) { /* else its contexts check their own */
		int ret = util_ep_enable_check(base);

		if (ret)
			return ret;
	}
	if (base->srx && !ep->rxq->av)
		ep->rxq->av = base->av;
	/* A connected endpoint without an AV has no name for its peer: a
	 * receive's source names nobody, and it takes what the one peer
	 * sends (fi_endpoint(3): connected endpoints ignore addresses). */
	if (ep->connected && !base->av)
		ep->rxq->caps &= ~FI_DIRECTED_RECV;
	return 0;
}

int util_rdm_ep_control(struct fid *fid, int command, void *arg)
{
	struct util_rdm_ep *ep = container_of(fid, struct util_rdm_ep,
					      base.ep_fid.fid);

	if (command == FI_ENABLE && ep->local && !ep->local_up &&
	    !ep->base.enabled)
		local_enable(ep);
	return util_ep_control(&ep->base, command, arg);
}

static const struct util_ep_ops rdm_ep_base_ops = {
	.progress = rdm_ep_progress,
	.wait_fds = rdm_ep_wait_fds,
	.arm = rdm_ep_arm,
	.arm_shared = rdm_ep_arm_shared,
	.enable = rdm_ep_enable,
};

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
	ret = util_ep_init(&ep->base, domain, info, &rdm_ep_base_ops, context);
	if (ret)
		goto err_local;
	ep->base.tx_progress.progress = rdm_tx_cq_progress;
	ep->base.rx_progress.progress = rdm_rx_cq_progress;
	ep->base.ep_fid.ops = &util_rdm_ep_ops;
	ep->base.ep_fid.msg = &rdm_msg_ops;
	ep->base.ep_fid.tagged = &rdm_tagged_ops;
	ep->base.ep_fid.rma = &util_rdm_rma_ops;
	ep->base.ep_fid.atomic = &util_rdm_atomic_ops;
	ep->base.ep_fid.collective = &util_coll_ops;

	ret = rxq_init(&ep->own_rxq, ep->base.caps);
	if (ret)
		goto err_base;
	ep->own_rxq.lock = &ep->base.own_lock;
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
	if (attr->sweep_domain) {
		pthread_mutex_lock(&domain->sweep_lock);
		dlist_insert_tail(&ep->sweep_entry, &domain->sweep_eps);
		pthread_mutex_unlock(&domain->sweep_lock);
		ep->sweep = true;
	}
	if (ep->base.caps & (FI_RMA | FI_ATOMIC)) {
		ep->target_progress.progress = rdm_target_progress;
		util_domain_add_target(domain, &ep->target_progress);
		ep->target = true;
	}
	return 0;

err_rxq:
	rxq_fini(&ep->own_rxq);
err_base:
	util_ep_fini(&ep->base);
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
	while (ep->base.enabled &&
	       ((n = quiet_queued(ep)) || xports_lingering(ep))) {
		if (!end) {
			end = (weft_now_ns() / 1000000) + UTIL_RDM_LINGER_MS;
		} else if ((weft_now_ns() / 1000000) >= end) {
			FI_WARN(ep->base.domain->prov, FI_LOG_EP_CTRL,
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

void util_rdm_unbind_all(struct util_rdm_ep *ep)
{
	util_ep_unbind(&ep->base);
}

void util_rdm_ep_fini(struct util_rdm_ep *ep)
{
	if (ep->local)
		ep->local_ops->closing(ep->local);
	if (ep->sweep) {
		/* No sweep reaches it from here on. */
		pthread_mutex_lock(&ep->base.domain->sweep_lock);
		dlist_remove(&ep->sweep_entry);
		pthread_mutex_unlock(&ep->base.domain->sweep_lock);
		ep->sweep = false;
	}
	if (ep->target) {
		util_domain_del_target(ep->base.domain, &ep->target_progress);
		ep->target = false;
	}
	util_ep_close(&ep->base);
	if (ep->stx)
		atomic_fetch_sub(&ep->stx->bound, 1);
	ep_lock(ep);
	/* What came by this endpoint cannot be fetched or answered once its
	 * transports are gone; a shared context's receives stay. */
	rxq_drop_ep(ep->rxq, ep);
	if (ep->base.srx) {
		dlist_remove(&ep->rxq_entry);
		if (!util_srx_leave_locked(ep->base.srx))
			ep->rxq->av = NULL;
	}
	/* Transmits never handed over complete as canceled. */
	while (!dlist_empty(&ep->blocked)) {
		struct util_peer *p = container_of(ep->blocked.next,
						   struct util_peer, blocked);

		util_rdm_fail_peer(ep, p, FI_ECANCELED);
	}
	util_peer_map_fini(&ep->peers);
	/* Nothing of theirs is with a transport any more. */
	util_coll_ep_fini(ep);
	ep_unlock(ep);
	util_eq_unbind_cm(ep->base.eq, &ep->base.cm_progress, -1);
	util_bufpool_destroy(ep->tx_pool);
	rxq_fini(&ep->own_rxq);
	if (ep->local)
		ep->local_ops->close(ep->local);
	util_ep_fini(&ep->base);
}
