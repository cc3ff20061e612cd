/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The shm endpoint: an RDM engine endpoint whose transport is shm_xp
 * (shm_xp.c).  Its fid ops, starting and stopping the transport (the
 * region, its owner mutex, the bell), names, scalable endpoints, and
 * shm_xp_init, which the tcp and verbs endpoints that embed shm call too.
 */
#include "shm.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "weft/ofi.h"

#include "weft/stubs.h"
#include "weft/util_coll.h"
#include "shm_ep_priv.h"

static pthread_once_t sweep_once = PTHREAD_ONCE_INIT;

/* ---- fid ops ------------------------------------------------------------ */

static int shm_ep_close(struct fid *fid)
{
	struct shm_ep *sep =
		container_of(fid, struct shm_ep, rdm.base.ep_fid.fid);

	/* Injects its peers could not take yet still go (util_rdm.h). */
	util_rdm_ep_linger(&sep->rdm);
	shm_xp_closing(&sep->x);
	util_rdm_ep_fini(&sep->rdm);
	shm_xp_fini(&sep->x);
	free(sep);
	return 0;
}

void shm_xp_closing(struct shm_xp *ep)
{
	/* Peers stop sending here, and look for a successor of the name. */
	if (ep->own.hdr)
		atomic_store_explicit(&ep->own.hdr->gone, 1,
				      memory_order_release);
}

static void xp_mrt_put(struct shm_xp *ep);

void shm_xp_fini(struct shm_xp *ep)
{
	struct dlist_entry *e, *tmp;
	struct slist_entry *p;

	dlist_foreach_safe(&ep->pushes, e, tmp) {
		dlist_remove(e);
		util_bufpool_put(ep->push_pool,
				 container_of(e, struct shm_push, entry));
	}
	util_bufpool_destroy(ep->push_pool);
	dlist_foreach_safe(&ep->chunked, e, tmp) {
		dlist_remove(e);
		free(container_of(e, struct shm_rma_chunked, entry));
	}
	util_bufpool_destroy(ep->pulls);
	while ((p = slist_remove_head(&ep->pending)))
		free(container_of(p, struct shm_pending, entry));
	bell_remove(ep);
	if (ep->wait_fd >= 0)
		close(ep->wait_fd);
	ep->wait_fd = -1;
	if (ep->own.hdr)
		owner_unmap(ep);
	xp_mrt_put(ep);
	shm_name_release(ep);
	free(ep->rxpeers);
	free(ep->out_reader);
	if (ep->held_pool) {
		while (!dlist_empty(&ep->held_list)) {
			struct shm_held *h = container_of(ep->held_list.next,
							  struct shm_held,
							  entry);

			dlist_remove(&h->entry);
			free(h->copy);
			util_bufpool_put(ep->held_pool, h);
		}
		util_bufpool_destroy(ep->held_pool);
	}
}

/*
 * Create the endpoint's region under its name, which shm_name_hold made
 * unique in this process.  A drawn name whose file is taken (another
 * user's file, another process's endpoint) draws again; a chosen name
 * taken so is refused.  fi_getname reports the name the region got.
 */
static int region_create_named(struct shm_xp *ep,
			       const struct shm_region_attr *attr)
{
	int ret, tries;

	ret = shm_name_hold(ep);
	if (ret)
		return ret;
	for (tries = 0;; tries++) {
		ret = shm_region_create(ep->name, attr, &ep->own);
		if (ret != -FI_EADDRINUSE || !shm_name_drawn(ep->name) ||
		    ep->name_fixed || tries == 16)
			break;
		ret = shm_name_redraw_held(ep);
		if (ret)
			break;
	}
	if (ret)
		shm_name_release(ep);
	return ret;
}

static int shm_ep_control(struct fid *fid, int command, void *arg)
{
	struct shm_ep *sep =
		container_of(fid, struct shm_ep, rdm.base.ep_fid.fid);
	int ret;

	if (command != FI_ENABLE)
		return util_rdm_ep_control(fid, command, arg);
	if (sep->x.own.hdr)
		return 0;
	ret = shm_xp_start(&sep->x);
	if (ret)
		return ret;
	ret = util_rdm_ep_control(fid, command, arg);
	if (ret)
		shm_xp_stop(&sep->x);
	return ret;
}

int shm_xp_start(struct shm_xp *ep)
{
	struct shm_region_attr attr;
	int ret;

	pthread_once(&sweep_once, shm_region_sweep);
	attr.queue_slots = (uint32_t)shm_params.queue_slots;
	attr.max_peers = (uint32_t)shm_params.max_peers;
	attr.bounce_count = (uint32_t)shm_params.bounce_count;
	attr.bounce_size = (uint32_t)shm_params.bounce_size;
	/* As many small buffers as slots: a queue full of injects fits.
	 * Bounce buffers no larger than an inject serve on their own. */
	attr.small_size = (uint32_t)shm_inject_size();
	attr.small_count = shm_params.bounce_size > attr.small_size ?
				   (uint32_t)shm_params.queue_slots :
				   0;
	attr.flags = ep->cma ? SHM_REGION_CMA : 0;
	/* A scalable endpoint's pair starts before its receive context
	 * binds counters: it asks for the events whenever it may. */
	if (ep->base.ep->base.rem_write_cntr ||
	    ep->base.ep->base.rem_read_cntr ||
	    (ep->base.ep->sep && (ep->base.ep->base.caps & FI_RMA_EVENT)))
		attr.flags |= SHM_REGION_RMA_EVENT;
	attr.mrt = NULL;
	/* With CMA, peers reach registered memory through the domain's
	 * table; without one they ask us (and still can). */
	if (ep->cma && !ep->mrt &&
	    shm_mrt_get(&util_mr_domain_of(ep->base.ep->base.domain)->mr_map,
			&ep->mrt))
		ep->mrt = NULL;
	if (ep->mrt)
		attr.mrt = ep->mrt->name;
	/* Kept from an enable that failed: fi_close frees it. */
	if (!ep->rxpeers)
		ep->rxpeers = calloc(attr.max_peers, sizeof(*ep->rxpeers));
	if (!ep->rxpeers)
		return -FI_ENOMEM;
	if (!ep->out_reader)
		ep->out_reader = calloc(attr.bounce_count,
					sizeof(*ep->out_reader));
	if (!ep->out_reader)
		return -FI_ENOMEM;
	if (!ep->held_pool) {
		struct util_bufpool_attr pattr = {
			.name = "shm held",
			.size = sizeof(struct shm_held),
		};

		ret = util_bufpool_create(&pattr, &ep->held_pool);
		if (ret)
			return ret;
	}
	ret = region_create_named(ep, &attr);
	if (ret) {
		FI_WARN(&shm_prov, FI_LOG_EP_CTRL,
			"cannot create the region of %s: %s\n", ep->name,
			fi_strerror(-ret));
		return ret;
	}
	ret = owner_lock(ep);
	if (ret) {
		shm_region_unmap(&ep->own);
		shm_name_release(ep);
		return ret;
	}
	bell_make(ep);
	return 0;
}

static void xp_mrt_put(struct shm_xp *ep)
{
	if (ep->mrt)
		shm_mrt_put(ep->mrt);
	ep->mrt = NULL;
}

void shm_xp_stop(struct shm_xp *ep)
{
	xp_mrt_put(ep);
	bell_remove(ep);
	pthread_mutex_unlock(&ep->own.queue->owner.lock);
	shm_region_unmap(&ep->own);
	shm_name_release(ep);
}

static struct fi_ops shm_ep_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = shm_ep_close,
	.bind = util_rdm_ep_bind,
	.control = shm_ep_control,
	.ops_open = weft_no_ops_open,
	.tostr = weft_no_tostr,
	.ops_set = weft_no_ops_set,
};

static int shm_getname(fid_t fid, void *addr, size_t *addrlen)
{
	struct shm_ep *sep =
		container_of(fid, struct shm_ep, rdm.base.ep_fid.fid);
	struct shm_xp *ep = &sep->x;
	char buf[SHM_ADDRLEN];
	size_t len;

	if (!addrlen)
		return -FI_EINVAL;
	snprintf(buf, sizeof(buf), SHM_PREFIX "%s", ep->name);
	len = strlen(buf) + 1;
	if (!addr || *addrlen < len) {
		*addrlen = len;
		return -FI_ETOOSMALL;
	}
	memcpy(addr, buf, len);
	*addrlen = len;
	return 0;
}

static int shm_setname(fid_t fid, void *addr, size_t addrlen)
{
	struct shm_ep *sep =
		container_of(fid, struct shm_ep, rdm.base.ep_fid.fid);
	struct shm_xp *ep = &sep->x;
	char name[SHM_NAME_MAX];

	if (shm_name_from_addr(addr, addrlen, name))
		return -FI_EINVAL;
	if (ep->own.hdr)
		return -FI_EOPBADSTATE; /* the region is named already */
	memcpy(ep->name, name, sizeof(name));
	return 0;
}

static struct fi_ops_cm shm_cm_ops = {
	.size = sizeof(struct fi_ops_cm),
	.setname = shm_setname,
	.getname = shm_getname,
	.getpeer = weft_no_getpeer,
	.connect = weft_no_connect,
	.listen = weft_no_listen,
	.accept = weft_no_accept,
	.reject = weft_no_reject,
	.shutdown = weft_no_shutdown,
	.join = util_coll_join,
};

/* An endpoint named `name` (NULL: src_addr's, else drawn). */
static int ep_make(struct util_domain *domain, const struct fi_info *info,
		   const char *name, struct shm_ep **out, void *context)
{
	struct util_rdm_ep_attr attr = {
		.unexp_inline = SHM_INLINE_MAX,
		.peer_addr_len = SHM_ADDRLEN,
	};
	struct shm_ep *sep;
	int ret;

	if (!info || !info->ep_attr || info->ep_attr->type != FI_EP_RDM)
		return -FI_EINVAL;
	shm_params_init();
	attr.unexp_max = shm_params.unexp_max;
	attr.inject_max = shm_inject_size();
	attr.atomic_max = shm_params.bounce_size / 2;

	sep = calloc(1, sizeof(*sep));
	if (!sep)
		return -FI_ENOMEM;
	/* fi_getinfo gave the name in src_addr; without one, draw it.  One
	 * that names no region is refused, never replaced. */
	if (name) {
		snprintf(sep->x.name, sizeof(sep->x.name), "%s", name);
		sep->x.name_fixed = true;
	} else if (info->src_addr && info->src_addrlen) {
		if (shm_name_from_addr(info->src_addr, info->src_addrlen,
				       sep->x.name)) {
			free(sep);
			return -FI_EINVAL;
		}
	} else {
		ret = shm_name_draw(sep->x.name, "");
		if (ret) {
			free(sep);
			return ret;
		}
	}
	ret = shm_xp_init(&sep->x, &shm_own_naming, SHM_ADDRLEN);
	if (ret) {
		free(sep);
		return ret;
	}
	sep->x.rma_order = !info->tx_attr || !info->rx_attr ||
			   ((info->tx_attr->msg_order |
			     info->rx_attr->msg_order) & SHM_ORDER_RMA);
	attr.xport = &sep->x.base;
	ret = util_rdm_ep_init(&sep->rdm, domain, info, &attr, context);
	if (ret) {
		shm_xp_fini(&sep->x);
		free(sep);
		return ret;
	}
	sep->rdm.base.ep_fid.fid.ops = &shm_ep_fi_ops;
	sep->rdm.base.ep_fid.cm = &shm_cm_ops;
	*out = sep;
	return 0;
}

int shm_ep_open(struct fid_domain *domain_fid, struct fi_info *info,
		struct fid_ep **ep_fid, void *context)
{
	struct util_domain *domain =
		container_of(domain_fid, struct util_domain, domain_fid);
	struct shm_ep *sep;
	int ret;

	ret = ep_make(domain, info, NULL, &sep, context);
	if (ret)
		return ret;
	*ep_fid = &sep->rdm.base.ep_fid;
	return 0;
}

/* ---- scalable endpoints -------------------------------------------------- */

/* One name; context pair i is the endpoint named name#i (shm.h). */
struct shm_sep {
	struct util_rdm_sep sep;
	char name[SHM_NAME_MAX];
};

static struct shm_sep *shm_sep_of(struct util_rdm_sep *sep)
{
	return container_of(sep, struct shm_sep, sep);
}

static int shm_sep_pair_open(struct util_rdm_sep *usep, uint32_t index,
			     struct util_rdm_ep **out)
{
	struct shm_sep *s = shm_sep_of(usep);
	char name[SHM_NAME_MAX];
	struct shm_ep *ep;
	int ret;

	ret = shm_name_ctx(name, s->name, index);
	if (ret)
		return ret;
	ret = ep_make(usep->domain, usep->info, name, &ep, NULL);
	if (ret)
		return ret;
	*out = &ep->rdm;
	return 0;
}

static int shm_sep_getname(struct util_rdm_sep *usep, void *addr,
			   size_t *addrlen)
{
	struct shm_sep *s = shm_sep_of(usep);
	char buf[SHM_ADDRLEN];
	size_t len;

	if (!addrlen)
		return -FI_EINVAL;
	snprintf(buf, sizeof(buf), SHM_PREFIX "%s", s->name);
	len = strlen(buf) + 1;
	if (!addr || *addrlen < len) {
		*addrlen = len;
		return -FI_ETOOSMALL;
	}
	memcpy(addr, buf, len);
	*addrlen = len;
	return 0;
}

/* Room for every context's suffix after the name. */
static bool sep_name_fits(const char *name)
{
	return strlen(name) + SHM_CTX_SUFFIX_MAX < SHM_NAME_MAX;
}

static int shm_sep_setname(struct util_rdm_sep *usep, const void *addr,
			   size_t addrlen)
{
	struct shm_sep *s = shm_sep_of(usep);
	char name[SHM_NAME_MAX];

	if (shm_name_from_addr(addr, addrlen, name) || !sep_name_fits(name))
		return -FI_EINVAL;
	memcpy(s->name, name, sizeof(name));
	return 0;
}

static void shm_sep_release(struct util_rdm_sep *usep)
{
	free(shm_sep_of(usep));
}

static const struct util_rdm_sep_ops shm_sep_ops = {
	.pair_open = shm_sep_pair_open,
	.getname = shm_sep_getname,
	.setname = shm_sep_setname,
	.release = shm_sep_release,
	.max_ctx = SHM_MAX_CTX,
};

int shm_sep_open(struct fid_domain *domain_fid, struct fi_info *info,
		 struct fid_ep **sep_fid, void *context)
{
	struct util_domain *domain =
		container_of(domain_fid, struct util_domain, domain_fid);
	struct shm_sep *s;
	int ret;

	s = calloc(1, sizeof(*s));
	if (!s)
		return -FI_ENOMEM;
	if (info && info->src_addr && info->src_addrlen) {
		if (shm_name_from_addr(info->src_addr, info->src_addrlen,
				       s->name) ||
		    !sep_name_fits(s->name)) {
			free(s);
			return -FI_EINVAL;
		}
		/* fi_getinfo drew it, and may give the same info to others:
		 * this endpoint's pairs need a name of their own. */
		ret = shm_name_drawn(s->name) ? shm_name_redraw(s->name) : 0;
		if (ret) {
			free(s);
			return ret;
		}
	} else {
		ret = shm_name_draw(s->name, "");
		if (ret) {
			free(s);
			return ret;
		}
	}
	ret = util_rdm_sep_init(&s->sep, domain, info, &shm_sep_ops, sep_fid,
				context);
	if (ret)
		free(s);
	return ret;
}

/* shm's own addresses: "fi_shm://NAME", NUL-padded to SHM_ADDRLEN. */
static int own_name_of(const struct shm_xp *x, const void *addr,
		       char name[SHM_NAME_MAX])
{
	(void)x;
	return shm_name_from_addr(addr, SHM_ADDRLEN, name);
}

static int own_addr_of(const struct shm_xp *x, const char *name, void *addr)
{
	(void)x;
	memset(addr, 0, SHM_ADDRLEN);
	snprintf(addr, SHM_ADDRLEN, SHM_PREFIX "%s", name);
	return (int)strlen(addr) + 1;
}

const struct shm_naming shm_own_naming = {
	.name_of = own_name_of,
	.addr_of = own_addr_of,
};

int shm_xp_init(struct shm_xp *ep, const struct shm_naming *naming,
		size_t addr_len)
{
	int ret;

	shm_params_init();
	ep->base.ops = &shm_transport;
	ep->base.eager_max = shm_params.bounce_size;
	ep->naming = naming;
	ep->addr_len = addr_len;
	ep->bell_fd = -1;
	ep->wait_fd = epoll_create1(EPOLL_CLOEXEC);
	ep->cma = shm_cma_probe();
	ep->rma_order = true; /* another provider's endpoint: its orders */
	slist_init(&ep->pending);
	dlist_init(&ep->pushes);
	dlist_init(&ep->chunked);
	dlist_init(&ep->pull_list);
	dlist_init(&ep->held_list);
	{
		struct util_bufpool_attr pattr = {
			.name = "shm pulls",
			.size = sizeof(struct shm_pull),
		};

		ret = util_bufpool_create(&pattr, &ep->pulls);
		if (ret)
			return ret;
		pattr.name = "shm pushes";
		pattr.size = sizeof(struct shm_push);
		ret = util_bufpool_create(&pattr, &ep->push_pool);
		if (ret) {
			util_bufpool_destroy(ep->pulls);
			ep->pulls = NULL;
			return ret;
		}
	}
	if (!ep->cma)
		cma_unavailable(ep, 0);
	return 0;
}
