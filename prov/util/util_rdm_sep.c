/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Scalable endpoints on the RDM engine (weft/util_rdm.h): fi_scalable_ep,
 * fi_tx_context, fi_rx_context.  Context pair i is an engine endpoint of
 * the provider's; the contexts are views of it, one side each.  And
 * shared transmit contexts (fi_stx_context), at the end.
 */
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>
#include <errno.h>

#include "weft/ofi.h"

#include "weft/stubs.h"

#include "util_rdm_priv.h"

/* Bits of fi_ep_bind each side takes (the rest of a flag set is the other
 * side's, and ignored: a client may bind one CQ with both). */
#define CTX_TX_CQ (FI_TRANSMIT | FI_SELECTIVE_COMPLETION)
#define CTX_RX_CQ (FI_RECV | FI_SELECTIVE_COMPLETION)
#define CTX_TX_CNTR (FI_SEND | FI_READ | FI_WRITE)
#define CTX_RX_CNTR (FI_RECV | FI_REMOTE_READ | FI_REMOTE_WRITE)

static struct util_rdm_sep *sep_of(struct fid *fid)
{
	return container_of(fid, struct util_rdm_sep, ep_fid.fid);
}

static struct util_rdm_ctx *ctx_of(struct fid *fid)
{
	return container_of(fid, struct util_rdm_ctx, efid.fid.fid);
}

static int pair_open(struct util_rdm_sep *sep, uint32_t i);

/*
 * The provider's FI_ENABLE of a pair, with sep->lock held on entry and
 * exit but not across the call: a transport may take locks there that its
 * endpoint then holds for its life (shm's owner mutex), which must never
 * be taken under sep->lock.  One enable at a time (sep->enabling).
 */
static int enable_one(struct util_rdm_sep *sep, struct util_rdm_ep *ep)
{
	int ret;

	while (sep->enabling)
		pthread_cond_wait(&sep->enabled_cond, &sep->lock);
	if (ep->base.enabled)
		return 0;
	sep->enabling = true;
	pthread_mutex_unlock(&sep->lock);
	ret = fi_control(&ep->base.ep_fid.fid, FI_ENABLE, NULL);
	pthread_mutex_lock(&sep->lock);
	sep->enabling = false;
	pthread_cond_broadcast(&sep->enabled_cond);
	return ret;
}

/* Enable pair ep (its transport starts), after pair 0, which holds the
 * address the others are named after.  With sep->lock held. */
static int pair_enable(struct util_rdm_sep *sep, struct util_rdm_ep *ep)
{
	int ret;

	if (ep->base.enabled)
		return 0;
	if (!sep->av)
		return -FI_ENOAV;
	if (ep != sep->pair[0].ep) {
		ret = pair_open(sep, 0);
		if (!ret)
			ret = enable_one(sep, sep->pair[0].ep);
		if (ret)
			return ret;
	}
	return enable_one(sep, ep);
}

/* Open pair i's endpoint if it is not (pair 0 first: it holds the
 * address the others are named after).  With sep->lock held. */
static int pair_open(struct util_rdm_sep *sep, uint32_t i)
{
	struct util_rdm_ep *ep;
	int ret;

	if (sep->pair[i].ep)
		return 0;
	if (i) {
		ret = pair_open(sep, 0);
		if (ret)
			return ret;
	}
	ret = sep->ops->pair_open(sep, i, &ep);
	if (ret)
		return ret;
	ep->sep = sep;
	ep->pair = i;
	if (!i && sep->ops->pair0_shared && !ep->base.own_lock.needed) {
		weft_lock_destroy(&ep->base.own_lock);
		weft_lock_init(&ep->base.own_lock, true);
	}
	if (sep->av) {
		ep_lock(ep);
		ret = util_rdm_bind_locked(ep, &sep->av->av_fid.fid, 0);
		ep_unlock(ep);
		if (ret) {
			fi_close(&ep->base.ep_fid.fid);
			return ret;
		}
	}
	sep->pair[i].ep = ep;
	return 0;
}

/* Pair i's endpoint, opened on first use (enabled if the scalable
 * endpoint is).  With sep->lock held. */
static int pair_get(struct util_rdm_sep *sep, uint32_t i,
		    struct util_rdm_ep **out)
{
	int ret = pair_open(sep, i);

	if (!ret && sep->enabled)
		ret = pair_enable(sep, sep->pair[i].ep);
	if (ret)
		return ret;
	*out = sep->pair[i].ep;
	return 0;
}

/* ---- contexts ----------------------------------------------------------- */

/*
 * The last context of a pair closed: its CQs and counters are let go, so
 * that the application may close them with the scalable endpoint still
 * open (Mercury destroys a context so: its two contexts, then their CQ),
 * and a context opened again binds new ones.
 */
static int ctx_close(struct fid *fid)
{
	struct util_rdm_ctx *ctx = ctx_of(fid);
	struct util_rdm_sep *sep = ctx->sep;
	struct util_rdm_sep_pair *pair = &sep->pair[ctx->index];

	pthread_mutex_lock(&sep->lock);
	if (ctx->tx)
		pair->tx = NULL;
	else
		pair->rx = NULL;
	if (!pair->tx && !pair->rx && pair->ep) {
		ep_lock(pair->ep);
		util_rdm_unbind_all(pair->ep);
		ep_unlock(pair->ep);
	}
	pthread_mutex_unlock(&sep->lock);
	free(ctx);
	return 0;
}

static int ctx_bind(struct fid *fid, struct fid *bfid, uint64_t flags)
{
	struct util_rdm_ctx *ctx = ctx_of(fid);
	struct util_rdm_ep *ep = util_rdm_ep_of(&ctx->efid.fid);
	int ret;

	if (!bfid)
		return -FI_EINVAL;
	if (ctx->enabled)
		return -FI_EOPBADSTATE;
	switch (bfid->fclass) {
	case FI_CLASS_CQ:
		flags &= ctx->tx ? CTX_TX_CQ : CTX_RX_CQ;
		if (!(flags & (FI_TRANSMIT | FI_RECV)))
			return -FI_EBADFLAGS;
		break;
	case FI_CLASS_CNTR:
		flags &= ctx->tx ? CTX_TX_CNTR : CTX_RX_CNTR;
		if (!flags)
			return -FI_EBADFLAGS;
		break;
	default:
		/* The AV is the scalable endpoint's (fi_scalable_ep_bind). */
		return -FI_EINVAL;
	}
	ep_lock(ep);
	ret = util_rdm_bind_locked(ep, bfid, flags);
	ep_unlock(ep);
	return ret;
}

static int ctx_enable(struct util_rdm_ctx *ctx)
{
	struct util_rdm_ep *ep = util_rdm_ep_of(&ctx->efid.fid);
	struct util_rdm_sep *sep = ctx->sep;
	bool bound;
	int ret;

	ep_lock(ep);
	bound = ctx->tx ? ep->base.tx_cq || ep->base.send_cntr ||
				  ep->base.write_cntr || ep->base.read_cntr :
			  ep->base.rx_cq || ep->base.recv_cntr;
	ep_unlock(ep);
	if (!bound)
		return -FI_ENOCQ;
	pthread_mutex_lock(&sep->lock);
	ret = pair_enable(sep, ep);
	pthread_mutex_unlock(&sep->lock);
	if (!ret)
		ctx->enabled = true;
	return ret;
}

static int ctx_control(struct fid *fid, int command, void *arg)
{
	struct util_rdm_ctx *ctx = ctx_of(fid);
	struct util_rdm_ep *ep = util_rdm_ep_of(&ctx->efid.fid);
	uint64_t *flags = arg;

	switch (command) {
	case FI_ENABLE:
		return ctx_enable(ctx);
	case FI_GETOPSFLAG:
	case FI_SETOPSFLAG:
		/* The engine's, for this context's side: a context's flags
		 * need not say which side it is. */
		if (!flags)
			return -FI_EINVAL;
		*flags = (*flags & ~(FI_TRANSMIT | FI_RECV)) |
			 (ctx->tx ? FI_TRANSMIT : FI_RECV);
		return util_rdm_ep_control(&ep->base.ep_fid.fid, command,
					   flags);
	default:
		return -FI_ENOSYS;
	}
}

static struct fi_ops ctx_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = ctx_close,
	.bind = ctx_bind,
	.control = ctx_control,
	.ops_open = weft_no_ops_open,
	.tostr = weft_no_tostr,
	.ops_set = weft_no_ops_set,
};

static int ctx_open(struct util_rdm_sep *sep, int index, bool tx,
		    uint64_t op_flags, struct fid_ep **out, void *context)
{
	struct util_rdm_ctx *ctx, **slot;
	struct util_rdm_ep *ep;
	int ret;

	if (!out || index < 0 || (uint32_t)index >= (tx ? sep->ntx : sep->nrx))
		return -FI_EINVAL;
	ctx = calloc(1, sizeof(*ctx));
	if (!ctx)
		return -FI_ENOMEM;
	pthread_mutex_lock(&sep->lock);
	slot = tx ? &sep->pair[index].tx : &sep->pair[index].rx;
	if (*slot) {
		ret = -FI_EBUSY;
		goto err;
	}
	ret = pair_get(sep, (uint32_t)index, &ep);
	if (ret)
		goto err;
	ctx->sep = sep;
	ctx->index = (uint32_t)index;
	ctx->tx = tx;
	ctx->efid.ep = &ep->base;
	ctx->efid.fid.fid.fclass = tx ? FI_CLASS_TX_CTX : FI_CLASS_RX_CTX;
	ctx->efid.fid.fid.context = context;
	ctx->efid.fid.fid.ops = &ctx_fi_ops;
	ctx->efid.fid.ops = &util_rdm_ep_ops;
	ctx->efid.fid.cm = sep->ep_fid.cm;
	if (tx) {
		ctx->efid.fid.msg = &util_rdm_tx_msg_ops;
		ctx->efid.fid.tagged = &util_rdm_tx_tagged_ops;
		ctx->efid.fid.rma = &util_rdm_rma_ops;
		ctx->efid.fid.atomic = &util_rdm_atomic_ops;
		ep->base.tx_op_flags = op_flags;
	} else {
		ctx->efid.fid.msg = &util_rdm_rx_msg_ops;
		ctx->efid.fid.tagged = &util_rdm_rx_tagged_ops;
		/* One-sided calls work from either context of the pair (and
		 * the valid queries answer); nothing is left NULL. */
		ctx->efid.fid.rma = &util_rdm_rma_ops;
		ctx->efid.fid.atomic = &util_rdm_atomic_ops;
		ep->base.rx_op_flags = op_flags;
	}
	*slot = ctx;
	pthread_mutex_unlock(&sep->lock);
	*out = &ctx->efid.fid;
	return 0;
err:
	pthread_mutex_unlock(&sep->lock);
	free(ctx);
	return ret;
}

static int sep_tx_ctx(struct fid_ep *sep_fid, int index,
		      struct fi_tx_attr *attr, struct fid_ep **tx, void *context)
{
	struct util_rdm_sep *sep = sep_of(&sep_fid->fid);

	return ctx_open(sep, index, true,
			attr ? attr->op_flags :
			       (sep->info->tx_attr ? sep->info->tx_attr->op_flags
						   : 0),
			tx, context);
}

static int sep_rx_ctx(struct fid_ep *sep_fid, int index,
		      struct fi_rx_attr *attr, struct fid_ep **rx, void *context)
{
	struct util_rdm_sep *sep = sep_of(&sep_fid->fid);

	return ctx_open(sep, index, false,
			attr ? attr->op_flags :
			       (sep->info->rx_attr ? sep->info->rx_attr->op_flags
						   : 0),
			rx, context);
}

/* ---- the scalable endpoint ---------------------------------------------- */

static int sep_close(struct fid *fid)
{
	struct util_rdm_sep *sep = sep_of(fid);
	uint32_t i;
	int ret;

	pthread_mutex_lock(&sep->lock);
	for (i = 0; i < sep->npair; i++) {
		if (sep->pair[i].tx || sep->pair[i].rx) {
			pthread_mutex_unlock(&sep->lock);
			return -FI_EBUSY; /* close its contexts first */
		}
	}
	/* Pair 0 last: the others may drive it (pair0_shared). */
	for (i = sep->npair; i-- > 0;) {
		if (!sep->pair[i].ep)
			continue;
		ret = fi_close(&sep->pair[i].ep->base.ep_fid.fid);
		if (ret)
			FI_WARN(sep->domain->prov, FI_LOG_EP_CTRL,
				"context pair %u: close: %s\n", i,
				fi_strerror(-ret));
		sep->pair[i].ep = NULL;
	}
	pthread_mutex_unlock(&sep->lock);
	if (sep->av)
		util_av_put(sep->av);
	util_domain_put(sep->domain);
	for (i = 0; i < sep->npair; i++)
		if (sep->pair[i].inbox.bell >= 0)
			close(sep->pair[i].inbox.bell);
	pthread_mutex_destroy(&sep->inbox_lock);
	pthread_cond_destroy(&sep->enabled_cond);
	pthread_mutex_destroy(&sep->lock);
	free(sep->pair);
	fi_freeinfo(sep->info);
	sep->ops->release(sep);
	return 0;
}

static int sep_bind(struct fid *fid, struct fid *bfid, uint64_t flags)
{
	struct util_rdm_sep *sep = sep_of(fid);
	struct util_av *av;
	uint32_t i;
	int ret = 0;

	if (!bfid)
		return -FI_EINVAL;
	if (bfid->fclass == FI_CLASS_EQ)
		return 0; /* RDM: no connection events */
	/* CQs and counters belong to the contexts. */
	if (bfid->fclass != FI_CLASS_AV)
		return -FI_EINVAL;
	av = util_av_from_fid(container_of(bfid, struct fid_av, fid));
	pthread_mutex_lock(&sep->lock);
	if (sep->av) {
		ret = -FI_EALREADY;
		goto out;
	}
	sep->av = av;
	util_av_get(av);
	for (i = 0; i < sep->npair && !ret; i++) {
		struct util_rdm_ep *ep = sep->pair[i].ep;

		if (!ep)
			continue;
		ep_lock(ep);
		ret = util_rdm_bind_locked(ep, bfid, flags);
		ep_unlock(ep);
	}
out:
	pthread_mutex_unlock(&sep->lock);
	return ret;
}

static int sep_control(struct fid *fid, int command, void *arg)
{
	struct util_rdm_sep *sep = sep_of(fid);
	struct util_rdm_ep *ep;
	uint32_t i;
	int ret = 0;

	if (command != FI_ENABLE)
		return -FI_ENOSYS;
	pthread_mutex_lock(&sep->lock);
	if (!sep->av) {
		ret = -FI_ENOAV;
		goto out;
	}
	sep->enabled = true;
	/* Pair 0 holds the address itself; the others start with their
	 * first context. */
	ret = pair_get(sep, 0, &ep);
	for (i = 1; i < sep->npair && !ret; i++)
		if (sep->pair[i].ep)
			ret = pair_enable(sep, sep->pair[i].ep);
	if (ret)
		sep->enabled = false;
out:
	pthread_mutex_unlock(&sep->lock);
	return ret;
}

static struct fi_ops sep_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = sep_close,
	.bind = sep_bind,
	.control = sep_control,
	.ops_open = weft_no_ops_open,
	.tostr = weft_no_tostr,
	.ops_set = weft_no_ops_set,
};

static struct fi_ops_ep sep_ep_ops = {
	.size = sizeof(struct fi_ops_ep),
	.cancel = weft_no_cancel,
	.getopt = weft_no_getopt,
	.setopt = weft_no_setopt,
	.tx_ctx = sep_tx_ctx,
	.rx_ctx = sep_rx_ctx,
	.rx_size_left = weft_no_size_left,
	.tx_size_left = weft_no_size_left,
};

/* Without ops->getname: pair 0's name, once it is open (a provider whose
 * pair 0 listens at the scalable endpoint's address: tcp, verbs). */
static int pair0_getname(struct util_rdm_sep *sep, void *addr,
			 size_t *addrlen)
{
	if (!sep->pair[0].ep)
		return -FI_EOPBADSTATE;
	return fi_getname(&sep->pair[0].ep->base.ep_fid.fid, addr, addrlen);
}

/* Without ops->setname: before pair 0 opens, the socket address it will
 * open at (the info pair_open gets). */
static int pair0_setname(struct util_rdm_sep *sep, const void *addr,
			 size_t addrlen)
{
	struct fi_info *info = sep->info;
	void *copy;

	if (!addr || addrlen < sizeof(struct sockaddr_in) ||
	    addrlen > sizeof(struct sockaddr_storage))
		return -FI_EINVAL;
	copy = malloc(addrlen);
	if (!copy)
		return -FI_ENOMEM;
	memcpy(copy, addr, addrlen);
	free(info->src_addr);
	info->src_addr = copy;
	info->src_addrlen = addrlen;
	return 0;
}

static int sep_getname(fid_t fid, void *addr, size_t *addrlen)
{
	struct fid_ep *ep = container_of(fid, struct fid_ep, fid);
	struct util_rdm_sep *sep;

	/* A context answers for its scalable endpoint. */
	if (fid->fclass == FI_CLASS_SEP)
		sep = sep_of(fid);
	else
		sep = container_of(ep, struct util_rdm_ctx, efid.fid)->sep;
	return sep->ops->getname ? sep->ops->getname(sep, addr, addrlen) :
				   pair0_getname(sep, addr, addrlen);
}

static int sep_setname(fid_t fid, void *addr, size_t addrlen)
{
	struct util_rdm_sep *sep;
	int ret;

	if (fid->fclass != FI_CLASS_SEP)
		return -FI_EOPBADSTATE;
	sep = sep_of(fid);
	pthread_mutex_lock(&sep->lock);
	ret = sep->enabled || sep->pair[0].ep ?
		      -FI_EOPBADSTATE :
		      (sep->ops->setname ?
			       sep->ops->setname(sep, addr, addrlen) :
			       pair0_setname(sep, addr, addrlen));
	pthread_mutex_unlock(&sep->lock);
	return ret;
}

static struct fi_ops_cm sep_cm_ops = {
	.size = sizeof(struct fi_ops_cm),
	.setname = sep_setname,
	.getname = sep_getname,
	.getpeer = weft_no_getpeer,
	.connect = weft_no_connect,
	.listen = weft_no_listen,
	.accept = weft_no_accept,
	.reject = weft_no_reject,
	.shutdown = weft_no_shutdown,
	.join = weft_no_join,
};

int util_rdm_sep_init(struct util_rdm_sep *sep, struct util_domain *domain,
		      const struct fi_info *info,
		      const struct util_rdm_sep_ops *ops,
		      struct fid_ep **sep_fid, void *context)
{
	size_t ntx, nrx;
	uint32_t i;
	int ret;

	/* (Datagram endpoints of the engine too: udp's.) */
	if (!info || !info->ep_attr ||
	    (info->ep_attr->type != FI_EP_RDM &&
	     info->ep_attr->type != FI_EP_DGRAM))
		return -FI_EINVAL;
	ntx = info->ep_attr->tx_ctx_cnt ? info->ep_attr->tx_ctx_cnt : 1;
	nrx = info->ep_attr->rx_ctx_cnt ? info->ep_attr->rx_ctx_cnt : 1;
	if (ntx == FI_SHARED_CONTEXT || nrx == FI_SHARED_CONTEXT ||
	    ntx > ops->max_ctx || nrx > ops->max_ctx) {
		FI_WARN(domain->prov, FI_LOG_EP_CTRL,
			"fi_scalable_ep: %zu transmit and %zu receive contexts: "
			"at most %u of each\n",
			ntx, nrx, ops->max_ctx);
		return -FI_EINVAL;
	}
	memset(sep, 0, sizeof(*sep));
	sep->info = weft_info_dup(info);
	if (!sep->info)
		return -FI_ENOMEM;
	sep->ntx = (uint32_t)ntx;
	sep->nrx = (uint32_t)nrx;
	sep->npair = (uint32_t)WEFT_MAX(ntx, nrx);
	sep->pair = calloc(sep->npair, sizeof(*sep->pair));
	if (!sep->pair) {
		ret = -FI_ENOMEM;
		goto err_info;
	}
	for (i = 0; i < sep->npair; i++) {
		dlist_init(&sep->pair[i].inbox.list);
		sep->pair[i].inbox.bell = -1;
	}
	ret = -pthread_mutex_init(&sep->lock, NULL);
	if (ret)
		goto err_pair;
	ret = -pthread_mutex_init(&sep->inbox_lock, NULL);
	if (ret)
		goto err_lock;
	ret = -pthread_cond_init(&sep->enabled_cond, NULL);
	if (ret)
		goto err_inbox_lock;
	sep->domain = domain;
	sep->ops = ops;
	sep->ep_fid.fid.fclass = FI_CLASS_SEP;
	sep->ep_fid.fid.context = context;
	sep->ep_fid.fid.ops = &sep_fi_ops;
	sep->ep_fid.ops = &sep_ep_ops;
	sep->ep_fid.cm = &sep_cm_ops;
	util_domain_get(domain);
	*sep_fid = &sep->ep_fid;
	return 0;

err_inbox_lock:
	pthread_mutex_destroy(&sep->inbox_lock);
err_lock:
	pthread_mutex_destroy(&sep->lock);
err_pair:
	free(sep->pair);
err_info:
	fi_freeinfo(sep->info);
	return ret;
}

/* ---- handing pair 0's peers over ---------------------------------------- */

int util_rdm_inbox_bell(struct util_rdm_sep *sep, uint32_t i)
{
	struct util_rdm_inbox *in = &sep->pair[i].inbox;

	if (in->bell < 0) {
		in->bell = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
		if (in->bell < 0)
			return weft_errno(errno);
	}
	return in->bell;
}

void util_rdm_inbox_open(struct util_rdm_sep *sep, uint32_t i)
{
	atomic_store_explicit(&sep->pair[i].inbox.open, true,
			      memory_order_release);
}

void util_rdm_inbox_shut(struct util_rdm_sep *sep, uint32_t i)
{
	struct util_rdm_ep *p0 = sep->pair[0].ep;

	atomic_store(&sep->pair[i].inbox.open, false);
	/* Hand-overs run under pair 0's lock: one that saw the pair open
	 * has rung by the time we have the lock. */
	if (i && p0) {
		weft_lock(util_rdm_lock(p0));
		weft_unlock(util_rdm_lock(p0));
	}
}

void util_rdm_inbox_post(struct util_rdm_sep *sep, uint32_t i,
			 struct dlist_entry *e)
{
	struct util_rdm_inbox *in = &sep->pair[i].inbox;
	uint64_t one = 1;

	/* The bell rings, and is silenced (take), under the lock: it never
	 * stays set over an empty inbox, which would wake a sleeping pair
	 * again and again for nothing. */
	pthread_mutex_lock(&sep->inbox_lock);
	dlist_insert_tail(e, &in->list);
	atomic_store_explicit(&in->ready, true, memory_order_release);
	if (util_rdm_inbox_is_open(sep, i) && in->bell >= 0)
		(void)!write(in->bell, &one, sizeof(one));
	pthread_mutex_unlock(&sep->inbox_lock);
}

void util_rdm_inbox_hush(struct util_rdm_sep *sep, uint32_t i)
{
	uint64_t v;

	if (sep->pair[i].inbox.bell >= 0)
		(void)!read(sep->pair[i].inbox.bell, &v, sizeof(v));
}

struct dlist_entry *util_rdm_inbox_take(struct util_rdm_sep *sep, uint32_t i)
{
	struct util_rdm_inbox *in = &sep->pair[i].inbox;
	struct dlist_entry *e;

	uint64_t v;

	pthread_mutex_lock(&sep->inbox_lock);
	e = dlist_pop_front(&in->list);
	if (!e) {
		atomic_store_explicit(&in->ready, false, memory_order_relaxed);
		if (in->bell >= 0)
			(void)!read(in->bell, &v, sizeof(v));
	}
	pthread_mutex_unlock(&sep->inbox_lock);
	return e;
}

/* ---- shared transmit contexts -------------------------------------------- */

static int stx_close(struct fid *fid)
{
	struct util_rdm_stx *stx =
		container_of(fid, struct util_rdm_stx, stx_fid.fid);

	if (atomic_load(&stx->bound))
		return -FI_EBUSY;
	free(stx);
	return 0;
}

static struct fi_ops stx_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = stx_close,
	.bind = weft_no_bind,
	.control = weft_no_control,
	.ops_open = weft_no_ops_open,
};

static struct fi_ops_ep stx_ep_ops = {
	.size = sizeof(struct fi_ops_ep),
	.cancel = weft_no_cancel,
	.getopt = weft_no_getopt,
	.setopt = weft_no_setopt,
	.tx_ctx = weft_no_tx_ctx,
	.rx_ctx = weft_no_rx_ctx,
	.rx_size_left = weft_no_size_left,
	.tx_size_left = weft_no_size_left,
};

int util_rdm_stx_open(struct fid_domain *domain_fid, struct fi_tx_attr *attr,
		      struct fid_stx **stx_fid, void *context)
{
	struct util_domain *domain;
	struct util_rdm_stx *stx;

	if (!domain_fid || !stx_fid)
		return -FI_EINVAL;
	domain = container_of(domain_fid, struct util_domain, domain_fid);
	stx = calloc(1, sizeof(*stx));
	if (!stx)
		return -FI_ENOMEM;
	if (attr)
		stx->attr = *attr;
	stx->domain = domain;
	atomic_init(&stx->bound, 0);
	stx->stx_fid.fid.fclass = FI_CLASS_STX_CTX;
	stx->stx_fid.fid.context = context;
	stx->stx_fid.fid.ops = &stx_fi_ops;
	stx->stx_fid.ops = &stx_ep_ops;
	/* No hold on the domain: it holds nothing but a binding, and MPICH
	 * closes its domain before its shared transmit context.  The
	 * endpoints bound to it hold the domain. */
	*stx_fid = &stx->stx_fid;
	return 0;
}

/* ---- shared receive contexts --------------------------------------------- */

static struct util_rdm_srx *srx_of(struct fid_ep *ep_fid)
{
	return container_of(ep_fid, struct util_rdm_srx, base.ep_fid);
}

static ssize_t srx_recv(struct fid_ep *ep_fid, void *buf, size_t len,
			void *desc, fi_addr_t src, void *context)
{
	struct util_rdm_srx *srx = srx_of(ep_fid);
	struct iovec iov = { buf, len };

	return rdm_recv(NULL, &srx->rxq, &iov, &desc, 1, src, 0, ~0ULL,
			context, srx->base.op_flags, UTIL_RDM_MSG);
}

static ssize_t srx_recvv(struct fid_ep *ep_fid, const struct iovec *iov,
			 void **desc, size_t count, fi_addr_t src,
			 void *context)
{
	struct util_rdm_srx *srx = srx_of(ep_fid);

	return rdm_recv(NULL, &srx->rxq, iov, desc, count, src, 0, ~0ULL,
			context, srx->base.op_flags, UTIL_RDM_MSG);
}

static ssize_t srx_recvmsg(struct fid_ep *ep_fid, const struct fi_msg *msg,
			   uint64_t flags)
{
	return rdm_recv(NULL, &srx_of(ep_fid)->rxq, msg->msg_iov, msg->desc,
			msg->iov_count, msg->addr, 0, ~0ULL, msg->context,
			flags, UTIL_RDM_MSG);
}

static ssize_t srx_trecv(struct fid_ep *ep_fid, void *buf, size_t len,
			 void *desc, fi_addr_t src, uint64_t tag,
			 uint64_t ignore, void *context)
{
	struct util_rdm_srx *srx = srx_of(ep_fid);
	struct iovec iov = { buf, len };

	return rdm_recv(NULL, &srx->rxq, &iov, &desc, 1, src, tag, ignore,
			context, srx->base.op_flags & ~FI_MULTI_RECV,
			UTIL_RDM_TAGGED);
}

static ssize_t srx_trecvv(struct fid_ep *ep_fid, const struct iovec *iov,
			  void **desc, size_t count, fi_addr_t src,
			  uint64_t tag, uint64_t ignore, void *context)
{
	struct util_rdm_srx *srx = srx_of(ep_fid);

	return rdm_recv(NULL, &srx->rxq, iov, desc, count, src, tag, ignore,
			context, srx->base.op_flags & ~FI_MULTI_RECV,
			UTIL_RDM_TAGGED);
}

static ssize_t srx_trecvmsg(struct fid_ep *ep_fid,
			    const struct fi_msg_tagged *msg, uint64_t flags)
{
	return rdm_recv(NULL, &srx_of(ep_fid)->rxq, msg->msg_iov, msg->desc,
			msg->iov_count, msg->addr, msg->tag, msg->ignore,
			msg->context, flags, UTIL_RDM_TAGGED);
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

static struct fi_ops_tagged srx_tagged_ops = {
	.size = sizeof(struct fi_ops_tagged),
	.recv = srx_trecv,
	.recvv = srx_trecvv,
	.recvmsg = srx_trecvmsg,
	.send = weft_no_tsend,
	.sendv = weft_no_tsendv,
	.sendmsg = weft_no_tsendmsg,
	.inject = weft_no_tinject,
	.senddata = weft_no_tsenddata,
	.injectdata = weft_no_tinjectdata,
};

static ssize_t srx_cancel(fid_t fid, void *context)
{
	/* Reported on the first bound endpoint's CQ: it has none. */
	rxq_cancel(&srx_of(container_of(fid, struct fid_ep, fid))->rxq, NULL,
		   context);
	return 0;
}

static int srx_getopt(fid_t fid, int level, int optname, void *optval,
		      size_t *optlen)
{
	struct util_rdm_srx *srx = srx_of(container_of(fid, struct fid_ep, fid));

	if (level != FI_OPT_ENDPOINT || optname != FI_OPT_MIN_MULTI_RECV)
		return -FI_ENOPROTOOPT;
	if (!optval || !optlen || *optlen < sizeof(size_t))
		return -FI_ETOOSMALL;
	weft_lock(&srx->base.lock);
	*(size_t *)optval = srx->rxq.msgq.min_multi_recv;
	weft_unlock(&srx->base.lock);
	*optlen = sizeof(size_t);
	return 0;
}

static int srx_setopt(fid_t fid, int level, int optname, const void *optval,
		      size_t optlen)
{
	struct util_rdm_srx *srx = srx_of(container_of(fid, struct fid_ep, fid));

	if (level != FI_OPT_ENDPOINT || optname != FI_OPT_MIN_MULTI_RECV)
		return -FI_ENOPROTOOPT;
	if (!optval || optlen < sizeof(size_t))
		return -FI_EINVAL;
	weft_lock(&srx->base.lock);
	util_match_set_min_multi_recv(&srx->rxq.msgq, *(const size_t *)optval);
	weft_unlock(&srx->base.lock);
	return 0;
}

static struct fi_ops_ep srx_ep_ops = {
	.size = sizeof(struct fi_ops_ep),
	.cancel = srx_cancel,
	.getopt = srx_getopt,
	.setopt = srx_setopt,
	.tx_ctx = weft_no_tx_ctx,
	.rx_ctx = weft_no_rx_ctx,
	.rx_size_left = weft_no_size_left,
	.tx_size_left = weft_no_size_left,
};

static int srx_close(struct fid *fid)
{
	struct util_rdm_srx *srx =
		srx_of(container_of(fid, struct fid_ep, fid));
	int ret = util_srx_close_check(&srx->base);

	if (ret)
		return ret;
	/* Receives still posted end without a completion: there is no
	 * endpoint to report them. */
	rxq_fini(&srx->rxq);
	util_srx_fini(&srx->base);
	free(srx);
	return 0;
}

static struct fi_ops srx_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = srx_close,
	.bind = weft_no_bind,
	.control = util_srx_control,
	.ops_open = weft_no_ops_open,
};

struct util_rdm_srx *util_rdm_srx_of(struct fid *fid)
{
	if (!fid || fid->fclass != FI_CLASS_SRX_CTX || fid->ops != &srx_fi_ops)
		return NULL;
	return srx_of(container_of(fid, struct fid_ep, fid));
}

int util_rdm_srx_open(struct fid_domain *domain_fid, struct fi_rx_attr *attr,
		      struct fid_ep **srx_fid, void *context)
{
	struct util_domain *domain;
	struct util_rdm_srx *srx;
	bool needs_lock;
	int ret;

	if (!domain_fid || !srx_fid)
		return -FI_EINVAL;
	domain = container_of(domain_fid, struct util_domain, domain_fid);
	srx = calloc(1, sizeof(*srx));
	if (!srx)
		return -FI_ENOMEM;
	/* Its lock is the lock of every endpoint bound to it, and those
	 * may be driven by different threads unless the application
	 * serialises the whole domain. */
	needs_lock = util_domain_progress_needs_lock(domain) ||
		     domain->threading == FI_THREAD_ENDPOINT;
	ret = util_srx_init(&srx->base, domain, attr, needs_lock, context);
	if (ret) {
		free(srx);
		return ret;
	}
	ret = rxq_init(&srx->rxq, srx->base.attr.caps);
	if (ret) {
		util_srx_fini(&srx->base);
		free(srx);
		return ret;
	}
	srx->rxq.lock = &srx->base.lock;
	srx->base.ep_fid.fid.ops = &srx_fi_ops;
	srx->base.ep_fid.ops = &srx_ep_ops;
	srx->base.ep_fid.cm = NULL;
	srx->base.ep_fid.msg = &srx_msg_ops;
	srx->base.ep_fid.tagged = &srx_tagged_ops;
	/* As a shared transmit context: no hold on the domain. */
	*srx_fid = &srx->base.ep_fid;
	return 0;
}
