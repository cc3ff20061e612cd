/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The hook layer (FI_HOOK): one wrapper per object the application opens
 * from a hooked fabric, each op of which describes its call once and shows
 * it to the fabric's hooks around the provider's op.  See weft/hook.h.
 */
#include "hook_priv.h"

#include "weft/core.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "weft/util_atomic.h"


/* Every wrapped object's struct fid_* keeps ops (and an endpoint's cm)
 * where struct fid_ep has them: one reading of the provider's object. */
static_assert(offsetof(struct fid_pep, ops) == offsetof(struct fid_ep, ops) &&
		      offsetof(struct fid_pep, cm) == offsetof(struct fid_ep, cm) &&
		      offsetof(struct fid_stx, ops) == offsetof(struct fid_ep, ops),
	      "fid_pep, fid_stx as fid_ep");

static const struct weft_hook_ops *const hook_table[] = {
	&weft_hook_perf,
	&weft_hook_trace,
	&weft_hook_debug,
	&weft_hook_noop,
};

static const char *const kind_names[WEFT_HK_COUNT] = {
	[WEFT_HK_OTHER] = "other",
	[WEFT_HK_SEND] = "send",
	[WEFT_HK_INJECT] = "inject",
	[WEFT_HK_RECV] = "recv",
	[WEFT_HK_TSEND] = "tsend",
	[WEFT_HK_TINJECT] = "tinject",
	[WEFT_HK_TRECV] = "trecv",
	[WEFT_HK_READ] = "read",
	[WEFT_HK_WRITE] = "write",
	[WEFT_HK_INJECT_WRITE] = "inject_write",
	[WEFT_HK_ATOMIC] = "atomic",
	[WEFT_HK_FETCH_ATOMIC] = "fetch_atomic",
	[WEFT_HK_COMPARE_ATOMIC] = "compare_atomic",
	[WEFT_HK_INJECT_ATOMIC] = "inject_atomic",
	[WEFT_HK_CQ_READ] = "cq_read",
	[WEFT_HK_CQ_READFROM] = "cq_readfrom",
	[WEFT_HK_CQ_READERR] = "cq_readerr",
	[WEFT_HK_CQ_SREAD] = "cq_sread",
	[WEFT_HK_CQ_SREADFROM] = "cq_sreadfrom",
	[WEFT_HK_CNTR_READ] = "cntr_read",
	[WEFT_HK_CNTR_READERR] = "cntr_readerr",
	[WEFT_HK_CNTR_WAIT] = "cntr_wait",
	[WEFT_HK_EQ_READ] = "eq_read",
	[WEFT_HK_EQ_SREAD] = "eq_sread",
	[WEFT_HK_EQ_READERR] = "eq_readerr",
	[WEFT_HK_CLOSE] = "close",
	[WEFT_HK_BIND] = "bind",
};

const char *weft_hook_class_name(size_t fclass)
{
	switch (fclass) {
	case FI_CLASS_FABRIC:
		return "fabric";
	case FI_CLASS_DOMAIN:
		return "domain";
	case FI_CLASS_EP:
		return "ep";
	case FI_CLASS_SEP:
		return "sep";
	case FI_CLASS_TX_CTX:
		return "tx_ctx";
	case FI_CLASS_RX_CTX:
		return "rx_ctx";
	case FI_CLASS_SRX_CTX:
		return "srx_ctx";
	case FI_CLASS_STX_CTX:
		return "stx_ctx";
	case FI_CLASS_PEP:
		return "pep";
	case FI_CLASS_CQ:
		return "cq";
	case FI_CLASS_CNTR:
		return "cntr";
	case FI_CLASS_EQ:
		return "eq";
	case FI_CLASS_AV:
		return "av";
	case FI_CLASS_MR:
		return "mr";
	case FI_CLASS_WAIT:
		return "wait";
	case FI_CLASS_POLL:
		return "poll";
	default:
		return "fid";
	}
}

const char *weft_hook_kind_name(enum weft_hook_kind kind)
{
	return (unsigned)kind < WEFT_HK_COUNT ? kind_names[kind] : "?";
}

/* ---- the map from the provider's fids to the layer's ---------------------- */

static size_t map_bucket(const struct fid *inner)
{
	return ((uintptr_t)inner >> 4) % 64;
}

static void map_insert(struct weft_hook_fid *hf)
{
	struct weft_hook_fab *fab = hf->fab;
	size_t b = map_bucket(hf->inner);

	pthread_mutex_lock(&fab->map_lock);
	hf->map_next = fab->map[b];
	fab->map[b] = hf;
	pthread_mutex_unlock(&fab->map_lock);
}

static void map_remove(struct weft_hook_fid *hf)
{
	struct weft_hook_fab *fab = hf->fab;
	struct weft_hook_fid **p;

	pthread_mutex_lock(&fab->map_lock);
	for (p = &fab->map[map_bucket(hf->inner)]; *p; p = &(*p)->map_next)
		if (*p == hf) {
			*p = hf->map_next;
			break;
		}
	pthread_mutex_unlock(&fab->map_lock);
}

/* The application's fid for a provider fid an EQ reported, else itself. */
static struct fid *map_outer(struct weft_hook_fab *fab, struct fid *inner)
{
	struct weft_hook_fid *hf;
	struct fid *out = inner;

	if (!inner)
		return NULL;
	pthread_mutex_lock(&fab->map_lock);
	for (hf = fab->map[map_bucket(inner)]; hf; hf = hf->map_next)
		if (hf->inner == inner && !hf->closed) {
			out = &hf->u.fid;
			break;
		}
	pthread_mutex_unlock(&fab->map_lock);
	return out;
}

/* ---- wrapping and releasing ------------------------------------------------ */

static const struct fi_ops hook_fi_ops;
static const struct fi_ops_fabric hook_fabric_ops;
static const struct fi_ops_domain hook_domain_ops;
static const struct fi_ops_mr hook_mr_ops;
static const struct fi_ops_ep hook_ep_ops;
static const struct fi_ops_cm hook_cm_ops;
static const struct fi_ops_cq hook_cq_ops;
static const struct fi_ops_cntr hook_cntr_ops;
static const struct fi_ops_eq hook_eq_ops;
static const struct fi_ops_av hook_av_ops;
static const struct fi_ops_wait hook_wait_ops;
static const struct fi_ops_poll hook_poll_ops;

bool weft_hook_is_wrapped(const struct fid *fid)
{
	return fid && fid->ops == &hook_fi_ops;
}

struct fid *weft_hook_inner(struct fid *fid)
{
	return weft_hook_is_wrapped(fid) ? HF(fid)->inner : fid;
}

static void release_hooks(struct weft_hook_fid *hf, unsigned upto)
{
	unsigned i;

	for (i = 0; i < upto; i++)
		if (hf->fab->hooks[i]->release)
			hf->fab->hooks[i]->release(hf, i);
}

/* Drop one reference; the last frees hf, and drops its parent's. */
static void hook_unref(struct weft_hook_fid *hf)
{
	struct weft_hook_fid *parent;

	while (hf && atomic_fetch_sub(&hf->refs, 1) == 1) {
		parent = hf->parent;
		release_hooks(hf, hf->fab->n);
		if (!parent) {
			pthread_mutex_destroy(&hf->fab->map_lock);
			free(hf->fab);
		} else {
			atomic_fetch_sub(&parent->children, 1);
		}
		free(hf);
		hf = parent;
	}
}

/* The provider's endpoint-like ops in the layer's, where it has them. */
static void set_ep_ops(struct weft_hook_fid *hf)
{
	struct fid_ep *in = INNER(hf, struct fid_ep);

	hf->u.ep.ops = in->ops ? (struct fi_ops_ep *)&hook_ep_ops : NULL;
	hf->u.ep.cm = in->cm ? (struct fi_ops_cm *)&hook_cm_ops : NULL;
	if (hf->u.fid.fclass == FI_CLASS_PEP || hf->u.fid.fclass == FI_CLASS_STX_CTX)
		return;
	hf->u.ep.msg = in->msg ? (struct fi_ops_msg *)&hook_msg_ops : NULL;
	hf->u.ep.rma = in->rma ? (struct fi_ops_rma *)&hook_rma_ops : NULL;
	hf->u.ep.tagged =
		in->tagged ? (struct fi_ops_tagged *)&hook_tagged_ops : NULL;
	hf->u.ep.atomic =
		in->atomic ? (struct fi_ops_atomic *)&hook_atomic_ops : NULL;
	hf->u.ep.collective = in->collective ?
		(struct fi_ops_collective *)&hook_collective_ops : NULL;
}

/* An MR's key and descriptor are the provider's, read again after each
 * call that may set them (registration, enable, bind). */
static void mr_refresh(struct weft_hook_fid *hf)
{
	struct fid_mr *in = INNER(hf, struct fid_mr);

	hf->u.mr.mem_desc = in->mem_desc;
	hf->u.mr.key = in->key;
}

static void set_class_ops(struct weft_hook_fid *hf)
{
	switch (hf->u.fid.fclass) {
	case FI_CLASS_FABRIC:
		hf->u.fabric.ops = (struct fi_ops_fabric *)&hook_fabric_ops;
		hf->u.fabric.api_version =
			INNER(hf, struct fid_fabric)->api_version;
		break;
	case FI_CLASS_DOMAIN:
		hf->u.domain.ops = (struct fi_ops_domain *)&hook_domain_ops;
		hf->u.domain.mr = INNER(hf, struct fid_domain)->mr ?
					  (struct fi_ops_mr *)&hook_mr_ops :
					  NULL;
		break;
	case FI_CLASS_EP:
	case FI_CLASS_SEP:
	case FI_CLASS_TX_CTX:
	case FI_CLASS_RX_CTX:
	case FI_CLASS_SRX_CTX:
	case FI_CLASS_PEP:
	case FI_CLASS_STX_CTX:
		set_ep_ops(hf);
		break;
	case FI_CLASS_CQ:
		hf->u.cq.ops = (struct fi_ops_cq *)&hook_cq_ops;
		break;
	case FI_CLASS_CNTR:
		hf->u.cntr.ops = (struct fi_ops_cntr *)&hook_cntr_ops;
		break;
	case FI_CLASS_EQ:
		hf->u.eq.ops = (struct fi_ops_eq *)&hook_eq_ops;
		break;
	case FI_CLASS_AV:
		hf->u.av.ops = (struct fi_ops_av *)&hook_av_ops;
		break;
	case FI_CLASS_MR:
		mr_refresh(hf);
		break;
	case FI_CLASS_WAIT:
		hf->u.wait.ops = (struct fi_ops_wait *)&hook_wait_ops;
		break;
	case FI_CLASS_POLL:
		hf->u.poll.ops = (struct fi_ops_poll *)&hook_poll_ops;
		break;
	default:
		break;
	}
}

/*
 * Wrap `inner`, which the provider just opened from `parent` (NULL for the
 * fabric, then `fab` is the new fabric's), and set *out to the
 * application's fid.  On failure the provider's object is closed.
 * Returns 0 or -FI_ENOMEM (or what a hook's open said).
 */
static int hook_wrap(struct weft_hook_fid *parent, struct weft_hook_fab *fab,
		     struct fid *inner, struct weft_hook_fid **out)
{
	struct weft_hook_fid *hf = calloc(1, sizeof(*hf));
	unsigned i;
	int ret = -FI_ENOMEM;

	if (!hf)
		goto err_close;
	hf->u.fid.fclass = inner->fclass;
	hf->u.fid.context = inner->context;
	hf->u.fid.ops = (struct fi_ops *)&hook_fi_ops;
	hf->inner = inner;
	hf->parent = parent;
	hf->fab = parent ? parent->fab : fab;
	atomic_init(&hf->refs, 1);
	atomic_init(&hf->children, 0);
	set_class_ops(hf);
	for (i = 0; i < hf->fab->n; i++) {
		if (!hf->fab->hooks[i]->open)
			continue;
		ret = hf->fab->hooks[i]->open(hf, i);
		if (ret)
			goto err_release;
	}
	if (parent) {
		atomic_fetch_add(&parent->refs, 1);
		atomic_fetch_add(&parent->children, 1);
	}
	map_insert(hf);
	*out = hf;
	return 0;

err_release:
	release_hooks(hf, i);
	free(hf);
err_close:
	inner->ops->close(inner);
	return ret;
}

/* Wrap what an open of `parent` made, into *out (the application's). */
static int wrap_child(struct weft_hook_fid *parent, struct fid *inner,
		      void *out)
{
	struct weft_hook_fid *hf;
	int ret = hook_wrap(parent, NULL, inner, &hf);

	if (!ret)
		*(struct fid **)out = &hf->u.fid;
	return ret;
}

const char *weft_hook_name_at(size_t i)
{
	return i < WEFT_ARRAY_SIZE(hook_table) ? hook_table[i]->name : NULL;
}

static const struct weft_hook_ops *hook_find(const char *name, size_t len)
{
	size_t i;

	if (len > 9 && !strncasecmp(name, "ofi_hook_", 9)) {
		name += 9;
		len -= 9;
	}
	for (i = 0; i < WEFT_ARRAY_SIZE(hook_table); i++)
		if (strlen(hook_table[i]->name) == len &&
		    !strncasecmp(name, hook_table[i]->name, len))
			return hook_table[i];
	return NULL;
}

int weft_hook_fabric(struct fid_fabric *inner, struct fid_fabric **fabric)
{
	const char *env = getenv("FI_HOOK"), *p;
	struct weft_hook_fab *fab;
	struct weft_hook_fid *hf;
	int ret;

	*fabric = inner;
	if (!env || !*env)
		return 0;
	fab = calloc(1, sizeof(*fab));
	if (!fab) {
		inner->fid.ops->close(&inner->fid);
		return -FI_ENOMEM;
	}
	for (p = env; *p;) {
		size_t len = strcspn(p, ",;");
		const struct weft_hook_ops *hook;

		while (len && (*p == ' ' || *p == '\t')) {
			p++;
			len--;
		}
		if (len) {
			hook = hook_find(p, len);
			if (!hook)
				FI_WARN(&weft_core_prov, FI_LOG_CORE,
					"FI_HOOK: no hook is named \"%.*s\" "
					"(weft has perf, trace, debug, noop); "
					"ignored\n",
					(int)len, p);
			else if (fab->n == WEFT_HOOK_MAX)
				FI_WARN(&weft_core_prov, FI_LOG_CORE,
					"FI_HOOK: more than %d hooks; \"%.*s\" "
					"ignored\n",
					WEFT_HOOK_MAX, (int)len, p);
			else
				fab->hooks[fab->n++] = hook;
		}
		p += len;
		if (*p)
			p++;
	}
	if (!fab->n) {
		free(fab);
		return 0;
	}
	pthread_mutex_init(&fab->map_lock, NULL);
	ret = hook_wrap(NULL, fab, &inner->fid, &hf);
	if (ret) {
		pthread_mutex_destroy(&fab->map_lock);
		free(fab);
		return ret;
	}
	*fabric = &hf->u.fabric;
	return 0;
}

/* ---- struct fi_ops ------------------------------------------------------ */

static int hook_close(struct fid *fid)
{
	struct weft_hook_fid *hf = HF(fid);
	CALL(hf, "fi_close", WEFT_HK_CLOSE, 0);

	RUN(hf->inner->ops->close(hf->inner));
	if (c.ret)
		return (int)c.ret;
	map_remove(hf);
	hf->closed = true;
	hook_unref(hf);
	return 0;
}

static int hook_bind(struct fid *fid, struct fid *bfid, uint64_t flags)
{
	struct weft_hook_fid *hf = HF(fid);
	CALL(hf, "fi_bind", WEFT_HK_BIND, WEFT_HA_FID | WEFT_HA_FLAGS);

	c.arg = bfid;
	c.flags = flags;
	RUN(hf->inner->ops->bind(hf->inner, weft_hook_inner(bfid), flags));
	if (!c.ret && hf->u.fid.fclass == FI_CLASS_MR)
		mr_refresh(hf);
	return (int)c.ret;
}

static int hook_control(struct fid *fid, int command, void *arg)
{
	struct weft_hook_fid *hf = HF(fid);
	struct fi_alias *alias = arg;
	CALL(hf, "fi_control", WEFT_HK_OTHER, WEFT_HA_IVAL);

	c.ival = command;
	RUN(hf->inner->ops->control(hf->inner, command, arg));
	if (c.ret)
		return (int)c.ret;
	if (hf->u.fid.fclass == FI_CLASS_MR)
		mr_refresh(hf);
	/* an alias is an endpoint of its own to the application */
	if (command == FI_ALIAS && alias && alias->fid && *alias->fid)
		return wrap_child(hf, *alias->fid, alias->fid);
	return 0;
}

static int hook_ops_open(struct fid *fid, const char *name, uint64_t flags,
			 void **ops, void *context)
{
	struct fid *in = HF(fid)->inner;

	return in->ops->ops_open(in, name, flags, ops, context);
}

static int hook_tostr(const struct fid *fid, char *buf, size_t len)
{
	struct fid *in = HF(fid)->inner;

	return in->ops->tostr(in, buf, len);
}

static int hook_ops_set(struct fid *fid, const char *name, uint64_t flags,
			void *ops, void *context)
{
	struct fid *in = HF(fid)->inner;

	return HAS_OP(in->ops, struct fi_ops, ops_set) ?
		       in->ops->ops_set(in, name, flags, ops, context) :
		       -FI_ENOSYS;
}

static const struct fi_ops hook_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = hook_close,
	.bind = hook_bind,
	.control = hook_control,
	.ops_open = hook_ops_open,
	.tostr = hook_tostr,
	.ops_set = hook_ops_set,
};

/* ---- fabric --------------------------------------------------------------- */

/* A wait set the application named in an attr, as the provider's. */
#define INNER_WAIT_SET(attr)                                                   \
	((attr) && (attr)->wait_obj == FI_WAIT_SET && (attr)->wait_set ?       \
		 (struct fid_wait *)(void *)weft_hook_inner(                   \
			 &(attr)->wait_set->fid) :                             \
		 NULL)

/*
 * ret = open, made with attr->wait_set (a wait set of the layer's) swapped
 * for the provider's behind it for the time of the call: what the EQ, CQ
 * and counter opens share.  attr is the application's, given back as it
 * came.
 */
#define OPEN_ON_INNER_WAIT(ret, attr, open)                                    \
	do {                                                                   \
		struct fid_wait *iwait_ = INNER_WAIT_SET(attr), *own_;         \
                                                                               \
		if (iwait_) {                                                  \
			own_ = (attr)->wait_set;                               \
			(attr)->wait_set = iwait_;                             \
			(ret) = (open);                                        \
			(attr)->wait_set = own_;                               \
		} else {                                                       \
			(ret) = (open);                                        \
		}                                                              \
	} while (0)

static int hook_domain2(struct fid_fabric *fabric, struct fi_info *info,
			struct fid_domain **dom, uint64_t flags, void *context)
{
	struct weft_hook_fid *hf = HF(fabric);
	struct fid_fabric *in = INNER(hf, struct fid_fabric);
	struct fid_domain *idom = NULL;
	CALL(hf, "fi_domain", WEFT_HK_OTHER, WEFT_HA_FLAGS | WEFT_HA_CTX);

	c.flags = flags;
	c.context = context;
	run_before(&c);
	if (flags)
		c.ret = HAS_OP(in->ops, struct fi_ops_fabric, domain2) ?
				in->ops->domain2(in, info, &idom, flags,
						 context) :
				-FI_ENOSYS;
	else
		c.ret = in->ops->domain(in, info, &idom, context);
	if (!c.ret)
		c.ret = wrap_child(hf, &idom->fid, dom);
	run_after(&c);
	return (int)c.ret;
}

static int hook_domain(struct fid_fabric *fabric, struct fi_info *info,
		       struct fid_domain **dom, void *context)
{
	return hook_domain2(fabric, info, dom, 0, context);
}

static int hook_passive_ep(struct fid_fabric *fabric, struct fi_info *info,
			   struct fid_pep **pep, void *context)
{
	struct weft_hook_fid *hf = HF(fabric);
	struct fid_fabric *in = INNER(hf, struct fid_fabric);
	struct fid_pep *ipep = NULL;
	CALL(hf, "fi_passive_ep", WEFT_HK_OTHER, WEFT_HA_CTX);

	c.context = context;
	run_before(&c);
	c.ret = in->ops->passive_ep(in, info, &ipep, context);
	if (!c.ret)
		c.ret = wrap_child(hf, &ipep->fid, pep);
	run_after(&c);
	return (int)c.ret;
}

static int hook_eq_open(struct fid_fabric *fabric, struct fi_eq_attr *attr,
			struct fid_eq **eq, void *context)
{
	struct weft_hook_fid *hf = HF(fabric);
	struct fid_fabric *in = INNER(hf, struct fid_fabric);
	struct fid_eq *ieq = NULL;
	CALL(hf, "fi_eq_open", WEFT_HK_OTHER, WEFT_HA_CTX);

	c.context = context;
	run_before(&c);
	OPEN_ON_INNER_WAIT(c.ret, attr,
			   in->ops->eq_open(in, attr, &ieq, context));
	if (!c.ret)
		c.ret = wrap_child(hf, &ieq->fid, eq);
	run_after(&c);
	return (int)c.ret;
}

static int hook_wait_open(struct fid_fabric *fabric, struct fi_wait_attr *attr,
			  struct fid_wait **waitset)
{
	struct weft_hook_fid *hf = HF(fabric);
	struct fid_fabric *in = INNER(hf, struct fid_fabric);
	struct fid_wait *iwait = NULL;
	CALL(hf, "fi_wait_open", WEFT_HK_OTHER, 0);

	run_before(&c);
	c.ret = in->ops->wait_open(in, attr, &iwait);
	if (!c.ret)
		c.ret = wrap_child(hf, &iwait->fid, waitset);
	run_after(&c);
	return (int)c.ret;
}

static int hook_trywait(struct fid_fabric *fabric, struct fid **fids,
			int count)
{
	struct weft_hook_fid *hf = HF(fabric);
	struct fid_fabric *in = INNER(hf, struct fid_fabric);
	struct fid *small[16], **inner = small;
	int i;
	CALL(hf, "fi_trywait", WEFT_HK_OTHER, WEFT_HA_COUNT);

	c.count = count > 0 ? (size_t)count : 0;
	if (count > (int)WEFT_ARRAY_SIZE(small)) {
		inner = malloc(sizeof(*inner) * (size_t)count);
		if (!inner)
			return -FI_ENOMEM;
	}
	for (i = 0; fids && i < count; i++)
		inner[i] = weft_hook_inner(fids[i]);
	RUN(in->ops->trywait(in, fids ? inner : NULL, count));
	if (inner != small)
		free(inner);
	return (int)c.ret;
}

static const struct fi_ops_fabric hook_fabric_ops = {
	.size = sizeof(struct fi_ops_fabric),
	.domain = hook_domain,
	.passive_ep = hook_passive_ep,
	.eq_open = hook_eq_open,
	.wait_open = hook_wait_open,
	.trywait = hook_trywait,
	.domain2 = hook_domain2,
};

/* ---- domain --------------------------------------------------------------- */

static int hook_av_open(struct fid_domain *domain, struct fi_av_attr *attr,
			struct fid_av **av, void *context)
{
	struct weft_hook_fid *hf = HF(domain);
	struct fid_domain *in = INNER(hf, struct fid_domain);
	struct fid_av *iav = NULL;
	CALL(hf, "fi_av_open", WEFT_HK_OTHER, WEFT_HA_CTX);

	c.context = context;
	run_before(&c);
	c.ret = in->ops->av_open(in, attr, &iav, context);
	if (!c.ret)
		c.ret = wrap_child(hf, &iav->fid, av);
	run_after(&c);
	return (int)c.ret;
}

static int hook_cq_open(struct fid_domain *domain, struct fi_cq_attr *attr,
			struct fid_cq **cq, void *context)
{
	struct weft_hook_fid *hf = HF(domain);
	struct fid_domain *in = INNER(hf, struct fid_domain);
	struct fid_cq *icq = NULL;
	CALL(hf, "fi_cq_open", WEFT_HK_OTHER, WEFT_HA_CTX);

	c.context = context;
	run_before(&c);
	OPEN_ON_INNER_WAIT(c.ret, attr,
			   in->ops->cq_open(in, attr, &icq, context));
	if (!c.ret) {
		struct weft_hook_fid *hcq;

		c.ret = wrap_child(hf, &icq->fid, cq);
		if (!c.ret) {
			hcq = HF(*cq);
			hcq->cq_format = attr ? attr->format :
						FI_CQ_FORMAT_UNSPEC;
			hcq->cq_size = attr ? attr->size : 0;
		}
	}
	run_after(&c);
	return (int)c.ret;
}

/* info with its handle (a passive endpoint, say) as the provider's. */
static int hook_endpoint2(struct fid_domain *domain, struct fi_info *info,
			  struct fid_ep **ep, uint64_t flags, void *context)
{
	struct weft_hook_fid *hf = HF(domain);
	struct fid_domain *in = INNER(hf, struct fid_domain);
	struct fi_info copy, *use = info;
	struct fid_ep *iep = NULL;
	CALL(hf, "fi_endpoint", WEFT_HK_OTHER, WEFT_HA_FLAGS | WEFT_HA_CTX);

	c.flags = flags;
	c.context = context;
	if (info && weft_hook_is_wrapped(info->handle)) {
		copy = *info;
		copy.handle = weft_hook_inner(info->handle);
		use = &copy;
	}
	run_before(&c);
	if (flags)
		c.ret = HAS_OP(in->ops, struct fi_ops_domain, endpoint2) ?
				in->ops->endpoint2(in, use, &iep, flags,
						   context) :
				-FI_ENOSYS;
	else
		c.ret = in->ops->endpoint(in, use, &iep, context);
	if (!c.ret)
		c.ret = wrap_child(hf, &iep->fid, ep);
	run_after(&c);
	return (int)c.ret;
}

static int hook_endpoint(struct fid_domain *domain, struct fi_info *info,
			 struct fid_ep **ep, void *context)
{
	return hook_endpoint2(domain, info, ep, 0, context);
}

static int hook_scalable_ep(struct fid_domain *domain, struct fi_info *info,
			    struct fid_ep **sep, void *context)
{
	struct weft_hook_fid *hf = HF(domain);
	struct fid_domain *in = INNER(hf, struct fid_domain);
	struct fid_ep *isep = NULL;
	CALL(hf, "fi_scalable_ep", WEFT_HK_OTHER, WEFT_HA_CTX);

	c.context = context;
	run_before(&c);
	c.ret = in->ops->scalable_ep ? in->ops->scalable_ep(in, info, &isep,
							    context) :
				       -FI_ENOSYS;
	if (!c.ret)
		c.ret = wrap_child(hf, &isep->fid, sep);
	run_after(&c);
	return (int)c.ret;
}

static int hook_cntr_open(struct fid_domain *domain, struct fi_cntr_attr *attr,
			  struct fid_cntr **cntr, void *context)
{
	struct weft_hook_fid *hf = HF(domain);
	struct fid_domain *in = INNER(hf, struct fid_domain);
	struct fid_cntr *icntr = NULL;
	CALL(hf, "fi_cntr_open", WEFT_HK_OTHER, WEFT_HA_CTX);

	c.context = context;
	run_before(&c);
	OPEN_ON_INNER_WAIT(c.ret, attr,
			   in->ops->cntr_open(in, attr, &icntr, context));
	if (!c.ret)
		c.ret = wrap_child(hf, &icntr->fid, cntr);
	run_after(&c);
	return (int)c.ret;
}

static int hook_poll_open(struct fid_domain *domain, struct fi_poll_attr *attr,
			  struct fid_poll **pollset)
{
	struct weft_hook_fid *hf = HF(domain);
	struct fid_domain *in = INNER(hf, struct fid_domain);
	struct fid_poll *ipoll = NULL;
	CALL(hf, "fi_poll_open", WEFT_HK_OTHER, 0);

	run_before(&c);
	c.ret = in->ops->poll_open(in, attr, &ipoll);
	if (!c.ret)
		c.ret = wrap_child(hf, &ipoll->fid, pollset);
	run_after(&c);
	return (int)c.ret;
}

static int hook_stx_ctx(struct fid_domain *domain, struct fi_tx_attr *attr,
			struct fid_stx **stx, void *context)
{
	struct weft_hook_fid *hf = HF(domain);
	struct fid_domain *in = INNER(hf, struct fid_domain);
	struct fid_stx *istx = NULL;
	CALL(hf, "fi_stx_context", WEFT_HK_OTHER, WEFT_HA_CTX);

	c.context = context;
	run_before(&c);
	c.ret = in->ops->stx_ctx(in, attr, &istx, context);
	if (!c.ret)
		c.ret = wrap_child(hf, &istx->fid, stx);
	run_after(&c);
	return (int)c.ret;
}

static int hook_srx_ctx(struct fid_domain *domain, struct fi_rx_attr *attr,
			struct fid_ep **rx_ep, void *context)
{
	struct weft_hook_fid *hf = HF(domain);
	struct fid_domain *in = INNER(hf, struct fid_domain);
	struct fid_ep *isrx = NULL;
	CALL(hf, "fi_srx_context", WEFT_HK_OTHER, WEFT_HA_CTX);

	c.context = context;
	run_before(&c);
	c.ret = in->ops->srx_ctx(in, attr, &isrx, context);
	if (!c.ret)
		c.ret = wrap_child(hf, &isrx->fid, rx_ep);
	run_after(&c);
	return (int)c.ret;
}

static int hook_query_atomic(struct fid_domain *domain,
			     enum fi_datatype datatype, enum fi_op op,
			     struct fi_atomic_attr *attr, uint64_t flags)
{
	struct weft_hook_fid *hf = HF(domain);
	struct fid_domain *in = INNER(hf, struct fid_domain);
	CALL(hf, "fi_query_atomic", WEFT_HK_OTHER,
	     WEFT_HA_ATOMIC | WEFT_HA_FLAGS);

	c.datatype = datatype;
	c.op = op;
	c.flags = flags;
	RUN(in->ops->query_atomic(in, datatype, op, attr, flags));
	return (int)c.ret;
}

static int hook_query_collective(struct fid_domain *domain,
				 enum fi_collective_op coll,
				 struct fi_collective_attr *attr,
				 uint64_t flags)
{
	struct fid_domain *in = INNER(HF(domain), struct fid_domain);

	return HAS_OP(in->ops, struct fi_ops_domain, query_collective) ?
		       in->ops->query_collective(in, coll, attr, flags) :
		       -FI_ENOSYS;
}

static const struct fi_ops_domain hook_domain_ops = {
	.size = sizeof(struct fi_ops_domain),
	.av_open = hook_av_open,
	.cq_open = hook_cq_open,
	.endpoint = hook_endpoint,
	.scalable_ep = hook_scalable_ep,
	.cntr_open = hook_cntr_open,
	.poll_open = hook_poll_open,
	.stx_ctx = hook_stx_ctx,
	.srx_ctx = hook_srx_ctx,
	.query_atomic = hook_query_atomic,
	.query_collective = hook_query_collective,
	.endpoint2 = hook_endpoint2,
};

/* ---- memory registration ------------------------------------------------- */

static int hook_mr_done(struct weft_hook_fid *hf, struct weft_hook_call *c,
			struct fid_mr *imr, struct fid_mr **mr)
{
	if (!c->ret)
		c->ret = wrap_child(hf, &imr->fid, mr);
	run_after(c);
	return (int)c->ret;
}

static int hook_mr_reg(struct fid *fid, const void *buf, size_t len,
		       uint64_t access, uint64_t offset,
		       uint64_t requested_key, uint64_t flags,
		       struct fid_mr **mr, void *context)
{
	struct weft_hook_fid *hf = HF(fid);
	struct fid_domain *in = INNER(hf, struct fid_domain);
	struct fid_mr *imr = NULL;
	CALL(hf, "fi_mr_reg", WEFT_HK_OTHER,
	     WEFT_HA_BUF | WEFT_HA_FLAGS | WEFT_HA_CTX);

	c.buf = buf;
	c.len = len;
	c.flags = flags;
	c.context = context;
	run_before(&c);
	c.ret = in->mr->reg(&in->fid, buf, len, access, offset, requested_key,
			    flags, &imr, context);
	return hook_mr_done(hf, &c, imr, mr);
}

static int hook_mr_regv(struct fid *fid, const struct iovec *iov,
			size_t count, uint64_t access, uint64_t offset,
			uint64_t requested_key, uint64_t flags,
			struct fid_mr **mr, void *context)
{
	struct weft_hook_fid *hf = HF(fid);
	struct fid_domain *in = INNER(hf, struct fid_domain);
	struct fid_mr *imr = NULL;
	CALL(hf, "fi_mr_regv", WEFT_HK_OTHER,
	     WEFT_HA_IOV | WEFT_HA_FLAGS | WEFT_HA_CTX);

	c.iov = iov;
	c.count = count;
	c.len = iov_total(iov, count);
	c.flags = flags;
	c.context = context;
	run_before(&c);
	c.ret = in->mr->regv(&in->fid, iov, count, access, offset,
			     requested_key, flags, &imr, context);
	return hook_mr_done(hf, &c, imr, mr);
}

static int hook_mr_regattr(struct fid *fid, const struct fi_mr_attr *attr,
			   uint64_t flags, struct fid_mr **mr)
{
	struct weft_hook_fid *hf = HF(fid);
	struct fid_domain *in = INNER(hf, struct fid_domain);
	struct fid_mr *imr = NULL;
	CALL(hf, "fi_mr_regattr", WEFT_HK_OTHER, WEFT_HA_FLAGS);

	c.flags = flags;
	if (attr) {
		c.args |= WEFT_HA_IOV | WEFT_HA_CTX;
		c.iov = attr->mr_iov;
		c.count = attr->iov_count;
		c.len = iov_total(attr->mr_iov, attr->iov_count);
		c.context = attr->context;
	}
	run_before(&c);
	c.ret = in->mr->regattr(&in->fid, attr, flags, &imr);
	return hook_mr_done(hf, &c, imr, mr);
}

static const struct fi_ops_mr hook_mr_ops = {
	.size = sizeof(struct fi_ops_mr),
	.reg = hook_mr_reg,
	.regv = hook_mr_regv,
	.regattr = hook_mr_regattr,
};

/* ---- endpoint control ----------------------------------------------------- */

static ssize_t hook_cancel(fid_t fid, void *context)
{
	struct weft_hook_fid *hf = HF(fid);
	struct fid_ep *in = INNER(hf, struct fid_ep);
	CALL(hf, "fi_cancel", WEFT_HK_OTHER, WEFT_HA_CTX);

	c.context = context;
	RUN(in->ops->cancel(&in->fid, context));
	return c.ret;
}

static int hook_getopt(fid_t fid, int level, int optname, void *optval,
		       size_t *optlen)
{
	struct weft_hook_fid *hf = HF(fid);
	struct fid_ep *in = INNER(hf, struct fid_ep);
	CALL(hf, "fi_getopt", WEFT_HK_OTHER, WEFT_HA_IVAL);

	c.ival = optname;
	RUN(in->ops->getopt(&in->fid, level, optname, optval, optlen));
	return (int)c.ret;
}

static int hook_setopt(fid_t fid, int level, int optname, const void *optval,
		       size_t optlen)
{
	struct weft_hook_fid *hf = HF(fid);
	struct fid_ep *in = INNER(hf, struct fid_ep);
	CALL(hf, "fi_setopt", WEFT_HK_OTHER, WEFT_HA_IVAL);

	c.ival = optname;
	RUN(in->ops->setopt(&in->fid, level, optname, optval, optlen));
	return (int)c.ret;
}

static int hook_tx_ctx(struct fid_ep *sep, int index, struct fi_tx_attr *attr,
		       struct fid_ep **tx_ep, void *context)
{
	struct weft_hook_fid *hf = HF(sep);
	struct fid_ep *in = INNER(hf, struct fid_ep), *ictx = NULL;
	CALL(hf, "fi_tx_context", WEFT_HK_OTHER, WEFT_HA_IVAL | WEFT_HA_CTX);

	c.ival = index;
	c.context = context;
	run_before(&c);
	c.ret = in->ops->tx_ctx(in, index, attr, &ictx, context);
	if (!c.ret)
		c.ret = wrap_child(hf, &ictx->fid, tx_ep);
	run_after(&c);
	return (int)c.ret;
}

static int hook_rx_ctx(struct fid_ep *sep, int index, struct fi_rx_attr *attr,
		       struct fid_ep **rx_ep, void *context)
{
	struct weft_hook_fid *hf = HF(sep);
	struct fid_ep *in = INNER(hf, struct fid_ep), *ictx = NULL;
	CALL(hf, "fi_rx_context", WEFT_HK_OTHER, WEFT_HA_IVAL | WEFT_HA_CTX);

	c.ival = index;
	c.context = context;
	run_before(&c);
	c.ret = in->ops->rx_ctx(in, index, attr, &ictx, context);
	if (!c.ret)
		c.ret = wrap_child(hf, &ictx->fid, rx_ep);
	run_after(&c);
	return (int)c.ret;
}

static ssize_t hook_rx_size_left(struct fid_ep *ep)
{
	struct fid_ep *in = INNER(HF(ep), struct fid_ep);

	return in->ops->rx_size_left(in);
}

static ssize_t hook_tx_size_left(struct fid_ep *ep)
{
	struct fid_ep *in = INNER(HF(ep), struct fid_ep);

	return in->ops->tx_size_left(in);
}

static const struct fi_ops_ep hook_ep_ops = {
	.size = sizeof(struct fi_ops_ep),
	.cancel = hook_cancel,
	.getopt = hook_getopt,
	.setopt = hook_setopt,
	.tx_ctx = hook_tx_ctx,
	.rx_ctx = hook_rx_ctx,
	.rx_size_left = hook_rx_size_left,
	.tx_size_left = hook_tx_size_left,
};

/* ---- connection management ------------------------------------------------ */

#define CM_CALL(fid_, fn_)                                                     \
	struct weft_hook_fid *hf = HF(fid_);                                   \
	struct fid_ep *in = INNER(hf, struct fid_ep);                          \
	CALL(hf, fn_, WEFT_HK_OTHER, 0)

static int hook_setname(fid_t fid, void *addr, size_t addrlen)
{
	CM_CALL(fid, "fi_setname");
	RUN(in->cm->setname(&in->fid, addr, addrlen));
	return (int)c.ret;
}

static int hook_getname(fid_t fid, void *addr, size_t *addrlen)
{
	CM_CALL(fid, "fi_getname");
	RUN(in->cm->getname(&in->fid, addr, addrlen));
	return (int)c.ret;
}

static int hook_getpeer(struct fid_ep *ep, void *addr, size_t *addrlen)
{
	CM_CALL(ep, "fi_getpeer");
	RUN(in->cm->getpeer(in, addr, addrlen));
	return (int)c.ret;
}

static int hook_connect(struct fid_ep *ep, const void *addr,
			const void *param, size_t paramlen)
{
	CM_CALL(ep, "fi_connect");
	RUN(in->cm->connect(in, addr, param, paramlen));
	return (int)c.ret;
}

static int hook_listen(struct fid_pep *pep)
{
	CM_CALL(pep, "fi_listen");
	RUN(in->cm->listen((struct fid_pep *)(void *)in));
	return (int)c.ret;
}

static int hook_accept(struct fid_ep *ep, const void *param, size_t paramlen)
{
	CM_CALL(ep, "fi_accept");
	RUN(in->cm->accept(in, param, paramlen));
	return (int)c.ret;
}

static int hook_reject(struct fid_pep *pep, fid_t handle, const void *param,
		       size_t paramlen)
{
	CM_CALL(pep, "fi_reject");
	RUN(in->cm->reject((struct fid_pep *)(void *)in,
			   weft_hook_inner(handle), param, paramlen));
	return (int)c.ret;
}

static int hook_shutdown(struct fid_ep *ep, uint64_t flags)
{
	CM_CALL(ep, "fi_shutdown");
	c.args = WEFT_HA_FLAGS;
	c.flags = flags;
	RUN(in->cm->shutdown(in, flags));
	return (int)c.ret;
}

static int hook_join(struct fid_ep *ep, const void *addr, uint64_t flags,
		     struct fid_mc **mc, void *context)
{
	CM_CALL(ep, "fi_join");
	RUN(HAS_OP(in->cm, struct fi_ops_cm, join) ?
		    in->cm->join(in, addr, flags, mc, context) :
		    -FI_ENOSYS);
	return (int)c.ret;
}

static const struct fi_ops_cm hook_cm_ops = {
	.size = sizeof(struct fi_ops_cm),
	.setname = hook_setname,
	.getname = hook_getname,
	.getpeer = hook_getpeer,
	.connect = hook_connect,
	.listen = hook_listen,
	.accept = hook_accept,
	.reject = hook_reject,
	.shutdown = hook_shutdown,
	.join = hook_join,
};

/* ---- completion queues ---------------------------------------------------- */

#define CQ_CALL(cq_, fn_, kind_, args_)                                        \
	struct weft_hook_fid *hf = HF(cq_);                                    \
	struct fid_cq *in = INNER(hf, struct fid_cq);                          \
	CALL(hf, fn_, kind_, args_)

static ssize_t hook_cq_read(struct fid_cq *cq, void *buf, size_t count)
{
	CQ_CALL(cq, "fi_cq_read", WEFT_HK_CQ_READ, WEFT_HA_COUNT);
	c.count = count;
	c.entries = buf;
	RUN(in->ops->read(in, buf, count));
	return c.ret;
}

static ssize_t hook_cq_readfrom(struct fid_cq *cq, void *buf, size_t count,
				fi_addr_t *src_addr)
{
	CQ_CALL(cq, "fi_cq_readfrom", WEFT_HK_CQ_READFROM, WEFT_HA_COUNT);
	c.count = count;
	c.entries = buf;
	c.src_addr = src_addr;
	RUN(in->ops->readfrom(in, buf, count, src_addr));
	return c.ret;
}

static ssize_t hook_cq_readerr(struct fid_cq *cq, struct fi_cq_err_entry *buf,
			       uint64_t flags)
{
	CQ_CALL(cq, "fi_cq_readerr", WEFT_HK_CQ_READERR, WEFT_HA_FLAGS);
	c.flags = flags;
	c.entries = buf;
	RUN(in->ops->readerr(in, buf, flags));
	return c.ret;
}

static ssize_t hook_cq_sread(struct fid_cq *cq, void *buf, size_t count,
			     const void *cond, int timeout)
{
	CQ_CALL(cq, "fi_cq_sread", WEFT_HK_CQ_SREAD,
		WEFT_HA_COUNT | WEFT_HA_IVAL);
	c.count = count;
	c.ival = timeout;
	c.entries = buf;
	RUN(in->ops->sread(in, buf, count, cond, timeout));
	return c.ret;
}

static ssize_t hook_cq_sreadfrom(struct fid_cq *cq, void *buf, size_t count,
				 fi_addr_t *src_addr, const void *cond,
				 int timeout)
{
	CQ_CALL(cq, "fi_cq_sreadfrom", WEFT_HK_CQ_SREADFROM,
		WEFT_HA_COUNT | WEFT_HA_IVAL);
	c.count = count;
	c.ival = timeout;
	c.entries = buf;
	c.src_addr = src_addr;
	RUN(in->ops->sreadfrom(in, buf, count, src_addr, cond, timeout));
	return c.ret;
}

static int hook_cq_signal(struct fid_cq *cq)
{
	CQ_CALL(cq, "fi_cq_signal", WEFT_HK_OTHER, 0);
	RUN(in->ops->signal(in));
	return (int)c.ret;
}

static const char *hook_cq_strerror(struct fid_cq *cq, int prov_errno,
				    const void *err_data, char *buf,
				    size_t len)
{
	struct fid_cq *in = INNER(HF(cq), struct fid_cq);

	return in->ops->strerror(in, prov_errno, err_data, buf, len);
}

static const struct fi_ops_cq hook_cq_ops = {
	.size = sizeof(struct fi_ops_cq),
	.read = hook_cq_read,
	.readfrom = hook_cq_readfrom,
	.readerr = hook_cq_readerr,
	.sread = hook_cq_sread,
	.sreadfrom = hook_cq_sreadfrom,
	.signal = hook_cq_signal,
	.strerror = hook_cq_strerror,
};

/* ---- counters ------------------------------------------------------------- */

#define CNTR_CALL(cntr_, fn_, kind_, args_)                                    \
	struct weft_hook_fid *hf = HF(cntr_);                                  \
	struct fid_cntr *in = INNER(hf, struct fid_cntr);                      \
	CALL(hf, fn_, kind_, args_)

static uint64_t hook_cntr_read(struct fid_cntr *cntr)
{
	CNTR_CALL(cntr, "fi_cntr_read", WEFT_HK_CNTR_READ, 0);
	RUN((ssize_t)in->ops->read(in));
	return (uint64_t)c.ret;
}

static uint64_t hook_cntr_readerr(struct fid_cntr *cntr)
{
	CNTR_CALL(cntr, "fi_cntr_readerr", WEFT_HK_CNTR_READERR, 0);
	RUN((ssize_t)in->ops->readerr(in));
	return (uint64_t)c.ret;
}

static int hook_cntr_add(struct fid_cntr *cntr, uint64_t value)
{
	CNTR_CALL(cntr, "fi_cntr_add", WEFT_HK_OTHER, WEFT_HA_DATA);
	c.data = value;
	RUN(in->ops->add(in, value));
	return (int)c.ret;
}

static int hook_cntr_set(struct fid_cntr *cntr, uint64_t value)
{
	CNTR_CALL(cntr, "fi_cntr_set", WEFT_HK_OTHER, WEFT_HA_DATA);
	c.data = value;
	RUN(in->ops->set(in, value));
	return (int)c.ret;
}

static int hook_cntr_wait(struct fid_cntr *cntr, uint64_t threshold,
			  int timeout)
{
	CNTR_CALL(cntr, "fi_cntr_wait", WEFT_HK_CNTR_WAIT,
		  WEFT_HA_DATA | WEFT_HA_IVAL);
	c.data = threshold;
	c.ival = timeout;
	RUN(in->ops->wait(in, threshold, timeout));
	return (int)c.ret;
}

static int hook_cntr_adderr(struct fid_cntr *cntr, uint64_t value)
{
	CNTR_CALL(cntr, "fi_cntr_adderr", WEFT_HK_OTHER, WEFT_HA_DATA);
	c.data = value;
	RUN(HAS_OP(in->ops, struct fi_ops_cntr, adderr) ?
		    in->ops->adderr(in, value) :
		    -FI_ENOSYS);
	return (int)c.ret;
}

static int hook_cntr_seterr(struct fid_cntr *cntr, uint64_t value)
{
	CNTR_CALL(cntr, "fi_cntr_seterr", WEFT_HK_OTHER, WEFT_HA_DATA);
	c.data = value;
	RUN(HAS_OP(in->ops, struct fi_ops_cntr, seterr) ?
		    in->ops->seterr(in, value) :
		    -FI_ENOSYS);
	return (int)c.ret;
}

static const struct fi_ops_cntr hook_cntr_ops = {
	.size = sizeof(struct fi_ops_cntr),
	.read = hook_cntr_read,
	.readerr = hook_cntr_readerr,
	.add = hook_cntr_add,
	.set = hook_cntr_set,
	.wait = hook_cntr_wait,
	.adderr = hook_cntr_adderr,
	.seterr = hook_cntr_seterr,
};

/* ---- event queues --------------------------------------------------------- */

/* The fid of each event read as the application's. */
static void eq_map_entry(struct weft_hook_fab *fab, uint32_t event, void *buf,
			 ssize_t len)
{
	if (!buf || len < (ssize_t)sizeof(struct fid *))
		return;
	/* every entry type starts with the fid (fi_eq_entry,
	 * fi_eq_cm_entry, fi_eq_err_entry) */
	(void)event;
	*(struct fid **)buf = map_outer(fab, *(struct fid **)buf);
}

#define EQ_CALL(eq_, fn_, kind_, args_)                                        \
	struct weft_hook_fid *hf = HF(eq_);                                    \
	struct fid_eq *in = INNER(hf, struct fid_eq);                          \
	CALL(hf, fn_, kind_, args_)

static ssize_t hook_eq_read(struct fid_eq *eq, uint32_t *event, void *buf,
			    size_t len, uint64_t flags)
{
	EQ_CALL(eq, "fi_eq_read", WEFT_HK_EQ_READ, WEFT_HA_FLAGS);
	c.flags = flags;
	c.entries = buf;
	run_before(&c);
	c.ret = in->ops->read(in, event, buf, len, flags);
	if (c.ret > 0)
		eq_map_entry(hf->fab, event ? *event : 0, buf, c.ret);
	if (c.ret > 0 && event)
		c.ival = *event;
	run_after(&c);
	return c.ret;
}

static ssize_t hook_eq_readerr(struct fid_eq *eq, struct fi_eq_err_entry *buf,
			       uint64_t flags)
{
	EQ_CALL(eq, "fi_eq_readerr", WEFT_HK_EQ_READERR, WEFT_HA_FLAGS);
	c.flags = flags;
	c.entries = buf;
	run_before(&c);
	c.ret = in->ops->readerr(in, buf, flags);
	if (c.ret > 0)
		eq_map_entry(hf->fab, 0, buf, c.ret);
	run_after(&c);
	return c.ret;
}

static ssize_t hook_eq_write(struct fid_eq *eq, uint32_t event,
			     const void *buf, size_t len, uint64_t flags)
{
	EQ_CALL(eq, "fi_eq_write", WEFT_HK_OTHER, WEFT_HA_FLAGS | WEFT_HA_IVAL);
	c.flags = flags;
	c.ival = event;
	RUN(in->ops->write(in, event, buf, len, flags));
	return c.ret;
}

static ssize_t hook_eq_sread(struct fid_eq *eq, uint32_t *event, void *buf,
			     size_t len, int timeout, uint64_t flags)
{
	EQ_CALL(eq, "fi_eq_sread", WEFT_HK_EQ_SREAD, WEFT_HA_FLAGS);
	c.flags = flags;
	c.entries = buf;
	run_before(&c);
	c.ret = in->ops->sread(in, event, buf, len, timeout, flags);
	if (c.ret > 0)
		eq_map_entry(hf->fab, event ? *event : 0, buf, c.ret);
	if (c.ret > 0 && event)
		c.ival = *event;
	run_after(&c);
	return c.ret;
}

static const char *hook_eq_strerror(struct fid_eq *eq, int prov_errno,
				    const void *err_data, char *buf,
				    size_t len)
{
	struct fid_eq *in = INNER(HF(eq), struct fid_eq);

	return in->ops->strerror(in, prov_errno, err_data, buf, len);
}

static const struct fi_ops_eq hook_eq_ops = {
	.size = sizeof(struct fi_ops_eq),
	.read = hook_eq_read,
	.readerr = hook_eq_readerr,
	.write = hook_eq_write,
	.sread = hook_eq_sread,
	.strerror = hook_eq_strerror,
};

/* ---- address vectors ------------------------------------------------------ */

#define AV_CALL(av_, fn_, args_)                                               \
	struct weft_hook_fid *hf = HF(av_);                                    \
	struct fid_av *in = INNER(hf, struct fid_av);                          \
	CALL(hf, fn_, WEFT_HK_OTHER, args_)

static int hook_av_insert(struct fid_av *av, const void *addr, size_t count,
			  fi_addr_t *fi_addr, uint64_t flags, void *context)
{
	AV_CALL(av, "fi_av_insert", WEFT_HA_COUNT | WEFT_HA_FLAGS);
	c.count = count;
	c.flags = flags;
	RUN(in->ops->insert(in, addr, count, fi_addr, flags, context));
	return (int)c.ret;
}

static int hook_av_insertsvc(struct fid_av *av, const char *node,
			     const char *service, fi_addr_t *fi_addr,
			     uint64_t flags, void *context)
{
	AV_CALL(av, "fi_av_insertsvc", WEFT_HA_FLAGS);
	c.flags = flags;
	RUN(in->ops->insertsvc(in, node, service, fi_addr, flags, context));
	return (int)c.ret;
}

static int hook_av_insertsym(struct fid_av *av, const char *node,
			     size_t nodecnt, const char *service,
			     size_t svccnt, fi_addr_t *fi_addr,
			     uint64_t flags, void *context)
{
	AV_CALL(av, "fi_av_insertsym", WEFT_HA_FLAGS);
	c.flags = flags;
	RUN(in->ops->insertsym(in, node, nodecnt, service, svccnt, fi_addr,
			       flags, context));
	return (int)c.ret;
}

static int hook_av_remove(struct fid_av *av, fi_addr_t *fi_addr, size_t count,
			  uint64_t flags)
{
	AV_CALL(av, "fi_av_remove", WEFT_HA_COUNT | WEFT_HA_FLAGS);
	c.count = count;
	c.flags = flags;
	RUN(in->ops->remove(in, fi_addr, count, flags));
	return (int)c.ret;
}

static int hook_av_lookup(struct fid_av *av, fi_addr_t fi_addr, void *addr,
			  size_t *addrlen)
{
	AV_CALL(av, "fi_av_lookup", WEFT_HA_ADDR);
	c.addr = fi_addr;
	RUN(in->ops->lookup(in, fi_addr, addr, addrlen));
	return (int)c.ret;
}

static const char *hook_av_straddr(struct fid_av *av, const void *addr,
				   char *buf, size_t *len)
{
	struct fid_av *in = INNER(HF(av), struct fid_av);

	return in->ops->straddr(in, addr, buf, len);
}

/* The set is the provider's own, not wrapped: it goes back to the
 * provider only (set operations, fi_join_collective). */
static int hook_av_set(struct fid_av *av, struct fi_av_set_attr *attr,
		       struct fid_av_set **av_set, void *context)
{
	AV_CALL(av, "fi_av_set", WEFT_HA_CTX);
	c.context = context;
	RUN(HAS_OP(in->ops, struct fi_ops_av, av_set) ?
		    in->ops->av_set(in, attr, av_set, context) :
		    -FI_ENOSYS);
	return (int)c.ret;
}

static const struct fi_ops_av hook_av_ops = {
	.size = WEFT_OPS_AV_SIZE,
	.insert = hook_av_insert,
	.insertsvc = hook_av_insertsvc,
	.insertsym = hook_av_insertsym,
	.remove = hook_av_remove,
	.lookup = hook_av_lookup,
	.straddr = hook_av_straddr,
	.av_set = hook_av_set,
};

/* ---- wait and poll sets --------------------------------------------------- */

static int hook_wait(struct fid_wait *waitset, int timeout)
{
	struct weft_hook_fid *hf = HF(waitset);
	struct fid_wait *in = INNER(hf, struct fid_wait);
	CALL(hf, "fi_wait", WEFT_HK_OTHER, WEFT_HA_IVAL);

	c.ival = timeout;
	RUN(in->ops->wait(in, timeout));
	return (int)c.ret;
}

static const struct fi_ops_wait hook_wait_ops = {
	.size = sizeof(struct fi_ops_wait),
	.wait = hook_wait,
};

static int hook_poll(struct fid_poll *pollset, void **context, int count)
{
	struct weft_hook_fid *hf = HF(pollset);
	struct fid_poll *in = INNER(hf, struct fid_poll);
	CALL(hf, "fi_poll", WEFT_HK_OTHER, WEFT_HA_COUNT);

	c.count = count > 0 ? (size_t)count : 0;
	RUN(in->ops->poll(in, context, count));
	return (int)c.ret;
}

static int hook_poll_add(struct fid_poll *pollset, struct fid *event_fid,
			 uint64_t flags)
{
	struct weft_hook_fid *hf = HF(pollset);
	struct fid_poll *in = INNER(hf, struct fid_poll);
	CALL(hf, "fi_poll_add", WEFT_HK_OTHER, WEFT_HA_FID | WEFT_HA_FLAGS);

	c.arg = event_fid;
	c.flags = flags;
	RUN(in->ops->poll_add(in, weft_hook_inner(event_fid), flags));
	return (int)c.ret;
}

static int hook_poll_del(struct fid_poll *pollset, struct fid *event_fid,
			 uint64_t flags)
{
	struct weft_hook_fid *hf = HF(pollset);
	struct fid_poll *in = INNER(hf, struct fid_poll);
	CALL(hf, "fi_poll_del", WEFT_HK_OTHER, WEFT_HA_FID | WEFT_HA_FLAGS);

	c.arg = event_fid;
	c.flags = flags;
	RUN(in->ops->poll_del(in, weft_hook_inner(event_fid), flags));
	return (int)c.ret;
}

static const struct fi_ops_poll hook_poll_ops = {
	.size = sizeof(struct fi_ops_poll),
	.poll = hook_poll,
	.poll_add = hook_poll_add,
	.poll_del = hook_poll_del,
};

/* ---- noop: the layer alone, for measuring it ------------------------------ */

const struct weft_hook_ops weft_hook_noop = {
	.name = "noop",
};
