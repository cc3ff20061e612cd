/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Triggered operations and the deferred work queue (weft/util_trigger.h).
 */
#include "weft/util_trigger.h"

#include <stdlib.h>
#include <string.h>

#include <rdma/fi_atomic.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>
#include <rdma/fi_trigger.h>

#include "weft/hook.h"
#include "weft/util_atomic.h"
#include "weft/util_cntr.h"
#include "weft/util_ep.h"
#include "weft/util_rdm.h"

/* One operation waiting for its counter. */
struct util_trigger {
	struct dlist_entry entry; /* on domain->triggers */
	uint64_t seq;		  /* posting order, for equal thresholds */
	struct util_cntr *cntr;
	uint64_t threshold;
	enum fi_op_type op;
	struct util_cntr *target; /* FI_OP_CNTR_*: the counter it changes */
	struct fid_ep *fid; /* as posted: an endpoint or a context */
	struct util_ep *ep; /* its base (cancel, close, errors) */
	struct fi_deferred_work *work; /* FI_QUEUE_WORK's, or NULL */
	uint64_t flags;
	union {
		struct fi_msg msg;
		struct fi_msg_tagged tagged;
		struct fi_msg_rma rma;
		struct fi_msg_atomic atomic;
		struct fi_op_cntr cntr;
	} m;
	struct fi_ioc *cmp, *res;
	void **cmp_desc, **res_desc;
	size_t cmp_count, res_count;
	/* The copies of the arrays the message points to. */
	char mem[];
};

/* The counter of d behind cf (the application's: FI_HOOK may wrap it),
 * or NULL. */
static struct util_cntr *cntr_in(struct fid_cntr *cf, struct util_domain *d)
{
	struct fid *fid = cf ? weft_hook_inner(&cf->fid) : NULL;
	struct util_cntr *cntr;

	if (!fid || fid->fclass != FI_CLASS_CNTR)
		return NULL;
	cntr = container_of(fid, struct util_cntr, cntr_fid.fid);
	return cntr->domain == d ? cntr : NULL;
}

__thread struct util_cntr *util_deferred_cntr;

/* FI_QUEUE_WORK of a data transfer being copied: trigger_new takes its
 * counter and threshold from it rather than from a triggered context. */
static __thread const struct fi_deferred_work *queuing;
static __thread struct util_cntr *queuing_cntr; /* its completion counter */

static uint64_t cntr_events(struct util_cntr *cntr)
{
	return atomic_load_explicit(&cntr->count, memory_order_acquire) +
	       atomic_load_explicit(&cntr->errcount, memory_order_acquire);
}

/* Bump-allocate n bytes of t->mem (sizes were summed before). */
static void *carve(char **p, const void *src, size_t n)
{
	void *dst = *p;

	if (!n)
		return NULL;
	if (src)
		memcpy(dst, src, n);
	*p += (n + 7) & ~(size_t)7;
	return dst;
}

static size_t span(size_t n)
{
	return (n + 7) & ~(size_t)7;
}

/*
 * FI_INJECT: the application may reuse its buffers once the post
 * returns, long before the trigger, so the bytes are copied too: into
 * one buffer, which one iovec (n 1, no descriptor) names.  Bytes of iov.
 */
static size_t iov_bytes(const struct iovec *iov, size_t n)
{
	size_t i, len = 0;

	for (i = 0; i < n; i++)
		len += iov[i].iov_len;
	return len;
}

/* The copy of iov's bytes and the iovec naming it, carved from *p. */
static struct iovec *inject_copy(char **p, const struct iovec *iov, size_t n,
				 size_t len)
{
	struct iovec *one = carve(p, NULL, sizeof(*one));
	char *buf = *p;
	size_t i, off = 0;

	for (i = 0; i < n; i++) {
		memcpy(buf + off, iov[i].iov_base, iov[i].iov_len);
		off += iov[i].iov_len;
	}
	*p += span(len);
	one->iov_base = buf;
	one->iov_len = len;
	return one;
}

/* Room inject_copy takes. */
static size_t inject_room(size_t len)
{
	return span(sizeof(struct iovec)) + span(len);
}

/*
 * A new trigger for an operation of ep posted with FI_TRIGGER and
 * context: the counter and threshold checked, extra bytes for the
 * arrays.  NULL with *ret set on error.
 */
static struct util_trigger *trigger_new(struct util_ep *ep, void *context,
					size_t extra, ssize_t *ret)
{
	struct fi_triggered_context *tc = context;
	struct util_trigger *t;
	struct util_cntr *cntr;
	uint64_t threshold;

	*ret = -FI_EINVAL;
	if (queuing) {
		cntr = cntr_in(queuing->triggering_cntr, ep->domain);
		threshold = queuing->threshold;
		goto make;
	}
	if (!(ep->caps & FI_TRIGGER)) {
		FI_WARN(ep->domain->prov, FI_LOG_EP_DATA,
			"FI_TRIGGER on an endpoint without the FI_TRIGGER "
			"capability\n");
		return NULL;
	}
	if (!tc)
		return NULL;
	if (tc->event_type != FI_TRIGGER_THRESHOLD) {
		*ret = -FI_ENOSYS; /* FI_TRIGGER_XPU: no FI_XPU */
		return NULL;
	}
	cntr = cntr_in(tc->trigger.threshold.cntr, ep->domain);
	threshold = tc->trigger.threshold.threshold;
make:
	if (!cntr)
		return NULL;
	t = calloc(1, sizeof(*t) + extra);
	if (!t) {
		*ret = -FI_ENOMEM;
		return NULL;
	}
	t->cntr = cntr;
	t->threshold = threshold;
	t->ep = ep;
	if (queuing) {
		t->work = (struct fi_deferred_work *)queuing;
		t->target = queuing_cntr;
	}
	*ret = 0;
	return t;
}

/* Into the domain's list, after every trigger of a lower or equal
 * threshold; then whatever is due fires. */
static void trigger_queue(struct util_domain *d, struct util_trigger *t)
{
	struct dlist_entry *e;

	pthread_mutex_lock(&d->trig_lock);
	t->seq = d->trig_seq++;
	dlist_foreach(&d->triggers, e) {
		struct util_trigger *o =
			container_of(e, struct util_trigger, entry);

		if (o->threshold > t->threshold)
			break;
	}
	dlist_insert_tail(&t->entry, e); /* before e */
	atomic_fetch_add(&d->ntrig, 1);
	pthread_mutex_unlock(&d->trig_lock);
	util_trigger_run(d);
}

/* Put back at its place a trigger taken off to fire (-FI_EAGAIN). */
static void trigger_requeue_locked(struct util_domain *d,
				   struct util_trigger *t)
{
	struct dlist_entry *e;

	dlist_foreach(&d->triggers, e) {
		struct util_trigger *o =
			container_of(e, struct util_trigger, entry);

		if (o->threshold > t->threshold ||
		    (o->threshold == t->threshold && o->seq > t->seq))
			break;
	}
	dlist_insert_tail(&t->entry, e); /* before e */
	atomic_fetch_add(&d->ntrig, 1);
}

/*
 * The trigger of an operation whose local buffers are *iov, *desc, *n
 * (inject: their bytes copied), with more bytes besides for the caller's
 * arrays: the copies replace them, *p is where the caller's room starts.
 */
static struct util_trigger *trigger_iov(struct util_ep *ep, struct fid_ep *fid,
					enum fi_op_type op, uint64_t flags,
					void *context, bool inject,
					const struct iovec **iov, void ***desc,
					size_t *n, size_t more, char **p,
					ssize_t *ret)
{
	size_t len = inject ? iov_bytes(*iov, *n) : 0;
	struct util_trigger *t;

	if (*n && !*iov) {
		*ret = -FI_EINVAL;
		return NULL;
	}
	t = trigger_new(ep, context,
			(inject ? inject_room(len) :
				  span(*n * sizeof(struct iovec)) +
					  span(*n * sizeof(void *))) +
				more,
			ret);
	if (!t)
		return NULL;
	*p = t->mem;
	if (inject) {
		*iov = inject_copy(p, *iov, *n, len);
		*n = 1;
		*desc = NULL;
	} else {
		*iov = carve(p, *iov, *n * sizeof(struct iovec));
		*desc = carve(p, *desc, *desc ? *n * sizeof(void *) : 0);
	}
	t->op = op;
	t->fid = fid;
	t->flags = flags & ~FI_TRIGGER;
	return t;
}

ssize_t util_trigger_msg(struct util_ep *ep, struct fid_ep *fid,
			 enum fi_op_type op, const struct fi_msg *msg,
			 uint64_t flags)
{
	struct util_trigger *t;
	struct fi_msg m;
	ssize_t ret;
	char *p;

	if (!msg)
		return -FI_EINVAL;
	m = *msg;
	t = trigger_iov(ep, fid, op, flags, m.context, flags & FI_INJECT,
			&m.msg_iov, &m.desc, &m.iov_count, 0, &p, &ret);
	if (!t)
		return ret;
	t->m.msg = m;
	trigger_queue(ep->domain, t);
	return 0;
}

ssize_t util_trigger_tagged(struct util_ep *ep, struct fid_ep *fid,
			    enum fi_op_type op, const struct fi_msg_tagged *msg,
			    uint64_t flags)
{
	struct fi_msg_tagged m;
	struct util_trigger *t;
	ssize_t ret;
	char *p;

	if (!msg)
		return -FI_EINVAL;
	m = *msg;
	t = trigger_iov(ep, fid, op, flags, m.context, flags & FI_INJECT,
			&m.msg_iov, &m.desc, &m.iov_count, 0, &p, &ret);
	if (!t)
		return ret;
	t->m.tagged = m;
	trigger_queue(ep->domain, t);
	return 0;
}

ssize_t util_trigger_rma(struct util_ep *ep, struct fid_ep *fid,
			 enum fi_op_type op, const struct fi_msg_rma *msg,
			 uint64_t flags)
{
	struct util_trigger *t;
	struct fi_msg_rma m;
	ssize_t ret;
	char *p;

	if (!msg || (msg->rma_iov_count && !msg->rma_iov))
		return -FI_EINVAL;
	m = *msg;
	/* (FI_INJECT is for writes: a read's buffer is written.) */
	t = trigger_iov(ep, fid, op, flags, m.context,
			(flags & FI_INJECT) && op == FI_OP_WRITE, &m.msg_iov,
			&m.desc, &m.iov_count,
			span(m.rma_iov_count * sizeof(struct fi_rma_iov)), &p,
			&ret);
	if (!t)
		return ret;
	m.rma_iov = carve(&p, m.rma_iov,
			  m.rma_iov_count * sizeof(struct fi_rma_iov));
	t->m.rma = m;
	trigger_queue(ep->domain, t);
	return 0;
}

ssize_t util_trigger_atomic(struct util_ep *ep, struct fid_ep *fid,
			    enum fi_op_type op, const struct fi_msg_atomic *msg,
			    const struct fi_ioc *cmp, void **cmp_desc,
			    size_t cmp_count, struct fi_ioc *res,
			    void **res_desc, size_t res_count, uint64_t flags)
{
	size_t n = msg ? msg->iov_count : 0;
	size_t r = msg ? msg->rma_iov_count : 0;
	struct util_trigger *t;
	ssize_t ret;
	char *p;

	size_t dt = msg ? util_atomic_dt_size(msg->datatype) : 0;
	size_t i, elems = 0;

	if (!msg || (n && !msg->msg_iov) || (r && !msg->rma_iov) ||
	    (cmp_count && !cmp) || (res_count && !res))
		return -FI_EINVAL;
	/* FI_INJECT: the operands are copied (one fi_ioc names them). */
	for (i = 0; (flags & FI_INJECT) && i < n; i++)
		elems += msg->msg_iov[i].count;
	t = trigger_new(ep, msg->context,
			span(elems * dt) +
			span(n * sizeof(struct fi_ioc)) +
				span(n * sizeof(void *)) +
				span(r * sizeof(struct fi_rma_ioc)) +
				span(cmp_count * sizeof(struct fi_ioc)) +
				span(cmp_count * sizeof(void *)) +
				span(res_count * sizeof(struct fi_ioc)) +
				span(res_count * sizeof(void *)),
			&ret);
	if (!t)
		return ret;
	p = t->mem;
	t->m.atomic = *msg;
	t->m.atomic.msg_iov = carve(&p, msg->msg_iov, n * sizeof(struct fi_ioc));
	t->m.atomic.desc = carve(&p, msg->desc,
				 msg->desc ? n * sizeof(void *) : 0);
	if ((flags & FI_INJECT) && n) {
		struct fi_ioc *one = (struct fi_ioc *)t->m.atomic.msg_iov;
		char *buf = p;
		size_t off = 0;

		for (i = 0; i < n; i++) {
			memcpy(buf + off, msg->msg_iov[i].addr,
			       msg->msg_iov[i].count * dt);
			off += msg->msg_iov[i].count * dt;
		}
		p += span(elems * dt);
		one[0].addr = buf;
		one[0].count = elems;
		t->m.atomic.iov_count = 1;
		t->m.atomic.desc = NULL;
	}
	t->m.atomic.rma_iov = carve(&p, msg->rma_iov,
				    r * sizeof(struct fi_rma_ioc));
	t->cmp = carve(&p, cmp, cmp_count * sizeof(struct fi_ioc));
	t->cmp_desc = carve(&p, cmp_desc,
			    cmp_desc ? cmp_count * sizeof(void *) : 0);
	t->cmp_count = cmp_count;
	t->res = carve(&p, res, res_count * sizeof(struct fi_ioc));
	t->res_desc = carve(&p, res_desc,
			    res_desc ? res_count * sizeof(void *) : 0);
	t->res_count = res_count;
	t->op = op;
	t->fid = fid;
	t->flags = flags & ~FI_TRIGGER;
	trigger_queue(ep->domain, t);
	return 0;
}

/* ---- firing -------------------------------------------------------------- */

static ssize_t trigger_post(struct util_trigger *t)
{
	switch (t->op) {
	case FI_OP_SEND:
		return fi_sendmsg(t->fid, &t->m.msg, t->flags);
	case FI_OP_RECV:
		return fi_recvmsg(t->fid, &t->m.msg, t->flags);
	case FI_OP_TSEND:
		return fi_tsendmsg(t->fid, &t->m.tagged, t->flags);
	case FI_OP_TRECV:
		return fi_trecvmsg(t->fid, &t->m.tagged, t->flags);
	case FI_OP_READ:
		return fi_readmsg(t->fid, &t->m.rma, t->flags);
	case FI_OP_WRITE:
		return fi_writemsg(t->fid, &t->m.rma, t->flags);
	case FI_OP_ATOMIC:
		return fi_atomicmsg(t->fid, &t->m.atomic, t->flags);
	case FI_OP_FETCH_ATOMIC:
		return fi_fetch_atomicmsg(t->fid, &t->m.atomic, t->res,
					  t->res_desc, t->res_count, t->flags);
	case FI_OP_COMPARE_ATOMIC:
		return fi_compare_atomicmsg(t->fid, &t->m.atomic, t->cmp,
					    t->cmp_desc, t->cmp_count, t->res,
					    t->res_desc, t->res_count,
					    t->flags);
	case FI_OP_CNTR_SET:
		return fi_cntr_set(t->m.cntr.cntr, t->m.cntr.value);
	case FI_OP_CNTR_ADD:
		return fi_cntr_add(t->m.cntr.cntr, t->m.cntr.value);
	default:
		return -FI_ENOSYS;
	}
}

static ssize_t trigger_fire(struct util_trigger *t)
{
	ssize_t ret;

	/* A work request's transfer counts on its completion counter. */
	util_deferred_cntr = t->work ? t->target : NULL;
	ret = trigger_post(t);
	util_deferred_cntr = NULL;
	return ret;
}

static void *trigger_context(const struct util_trigger *t)
{
	switch (t->op) {
	case FI_OP_SEND:
	case FI_OP_RECV:
		return t->m.msg.context;
	case FI_OP_TSEND:
	case FI_OP_TRECV:
		return t->m.tagged.context;
	case FI_OP_READ:
	case FI_OP_WRITE:
		return t->m.rma.context;
	case FI_OP_ATOMIC:
	case FI_OP_FETCH_ATOMIC:
	case FI_OP_COMPARE_ATOMIC:
		return t->m.atomic.context;
	default:
		return NULL;
	}
}

/*
 * A triggered operation that will never be posted (err: canceled, or its
 * post failed): an error entry with its context on the endpoint's CQ of
 * its direction, and its counter's error count.
 */
static void trigger_report(struct util_trigger *t, int err)
{
	static const uint64_t flags[] = {
		[FI_OP_RECV] = FI_RECV | FI_MSG,
		[FI_OP_SEND] = FI_SEND | FI_MSG,
		[FI_OP_TRECV] = FI_RECV | FI_TAGGED,
		[FI_OP_TSEND] = FI_SEND | FI_TAGGED,
		[FI_OP_READ] = FI_READ | FI_RMA,
		[FI_OP_WRITE] = FI_WRITE | FI_RMA,
		[FI_OP_ATOMIC] = FI_WRITE | FI_ATOMIC,
		[FI_OP_FETCH_ATOMIC] = FI_READ | FI_ATOMIC,
		[FI_OP_COMPARE_ATOMIC] = FI_READ | FI_ATOMIC,
	};
	struct fi_cq_err_entry e = {
		.op_context = trigger_context(t),
		.err = err,
		.prov_errno = -err,
	};
	struct util_ep *ep = t->ep;
	bool rx = t->op == FI_OP_RECV || t->op == FI_OP_TRECV;
	struct util_cntr *cntr;

	if (t->op > FI_OP_COMPARE_ATOMIC)
		return;
	if (t->work) {
		/* Its completion counter takes its failure. */
		if (t->target)
			util_cntr_inc_err(t->target);
		return;
	}
	if (!ep)
		return;
	e.flags = flags[t->op];
	if (t->op == FI_OP_TRECV || t->op == FI_OP_TSEND)
		e.tag = t->m.tagged.tag;
	if (rx) {
		cntr = ep->recv_cntr;
	} else {
		cntr = util_ep_tx_cntr(ep, t->op == FI_OP_SEND ||
						   t->op == FI_OP_TSEND ?
					       UTIL_EP_TX_SEND :
				       (e.flags & FI_READ) ? UTIL_EP_TX_READ :
							     UTIL_EP_TX_WRITE);
	}
	util_ep_cq_error(rx ? ep->rx_cq : ep->tx_cq, false, true, &e);
	if (cntr)
		util_cntr_inc_err(cntr);
}

void util_trigger_run_slow(struct util_domain *d)
{
	static __thread bool running;
	struct dlist_entry *e;
	struct util_trigger *t;
	ssize_t ret;

	/* A fired fi_cntr_add comes back here: the loop below sees what
	 * it made due. */
	if (running)
		return;
	running = true;
	pthread_mutex_lock(&d->trig_lock);
again:
	dlist_foreach(&d->triggers, e) {
		t = container_of(e, struct util_trigger, entry);
		if (cntr_events(t->cntr) < t->threshold)
			continue;
		dlist_remove(&t->entry);
		atomic_fetch_sub(&d->ntrig, 1);
		pthread_mutex_unlock(&d->trig_lock);
		ret = trigger_fire(t);
		if (ret == -FI_EAGAIN) {
			/* No room now: the next look tries again, in
			 * order. */
			pthread_mutex_lock(&d->trig_lock);
			trigger_requeue_locked(d, t);
			break;
		}
		if (ret) {
			FI_WARN(d->prov, FI_LOG_EP_DATA,
				"a triggered operation's post failed: %s\n",
				fi_strerror((int)-ret));
			trigger_report(t, (int)-ret);
		}
		free(t);
		pthread_mutex_lock(&d->trig_lock);
		goto again;
	}
	pthread_mutex_unlock(&d->trig_lock);
	running = false;
}

/* ---- cancel, close ------------------------------------------------------- */

bool util_trigger_cancel(struct util_ep *ep, void *context)
{
	struct util_domain *d = ep->domain;
	struct util_trigger *t = NULL;
	struct dlist_entry *e;

	if (!atomic_load_explicit(&d->ntrig, memory_order_relaxed))
		return false;
	pthread_mutex_lock(&d->trig_lock);
	dlist_foreach(&d->triggers, e) {
		struct util_trigger *o =
			container_of(e, struct util_trigger, entry);

		/* By context alone: the same operation may be canceled
		 * through another context of its scalable endpoint. */
		if (!o->work && trigger_context(o) == context) {
			t = o;
			dlist_remove(&t->entry);
			atomic_fetch_sub(&d->ntrig, 1);
			break;
		}
	}
	pthread_mutex_unlock(&d->trig_lock);
	if (!t)
		return false;
	trigger_report(t, FI_ECANCELED);
	free(t);
	return true;
}

/* Take off (and free) the triggers match says go; how many. */
static size_t trigger_drop(struct util_domain *d,
			   bool (*match)(const struct util_trigger *,
					 const void *),
			   const void *arg)
{
	struct dlist_entry *e, *tmp;
	size_t n = 0;

	pthread_mutex_lock(&d->trig_lock);
	dlist_foreach_safe(&d->triggers, e, tmp) {
		struct util_trigger *t =
			container_of(e, struct util_trigger, entry);

		if (!match(t, arg))
			continue;
		dlist_remove(&t->entry);
		atomic_fetch_sub(&d->ntrig, 1);
		free(t);
		n++;
	}
	pthread_mutex_unlock(&d->trig_lock);
	return n;
}

static bool of_ep(const struct util_trigger *t, const void *ep)
{
	return t->ep == ep;
}

void util_trigger_drop_ep(struct util_ep *ep)
{
	if (atomic_load(&ep->domain->ntrig))
		trigger_drop(ep->domain, of_ep, ep);
}

static bool of_cntr(const struct util_trigger *t, const void *cntr)
{
	return t->cntr == cntr || t->target == cntr;
}

void util_trigger_drop_cntr(struct util_cntr *cntr)
{
	if (cntr->domain && atomic_load(&cntr->domain->ntrig))
		trigger_drop(cntr->domain, of_cntr, cntr);
}

/* ---- the deferred work queue --------------------------------------------- */

static bool is_work(const struct util_trigger *t, const void *work)
{
	return t->work && (!work || t->work == work);
}

/* The endpoint of a work request's transfer: an engine endpoint (or
 * context) of d, behind the application's fid; NULL if not. */
static struct util_ep *work_ep(struct util_domain *d, struct fid_ep *fid)
{
	struct fid_ep *in;
	struct util_ep *ep;

	if (!fid)
		return NULL;
	in = container_of(weft_hook_inner(&fid->fid), struct fid_ep, fid);
	if (!util_rdm_is_ep(in))
		return NULL;
	ep = &util_rdm_ep_of(in)->base;
	return ep->domain == d ? ep : NULL;
}

/* A data transfer of work w: copied as a triggered operation would be,
 * its counter and threshold w's (queuing), posted with
 * UTIL_RDM_DEFERRED so that it counts on w's completion counter, and
 * without a CQ entry unless its flags ask FI_COMPLETION. */
static int work_transfer(struct util_domain *d, struct fi_deferred_work *w,
			 struct util_cntr *done)
{
	struct fid_ep *fid;
	struct util_ep *ep;
	uint64_t flags;
	ssize_t ret;

	switch (w->op_type) {
	case FI_OP_SEND:
	case FI_OP_RECV:
		if (!w->op.msg)
			return -FI_EINVAL;
		fid = w->op.msg->ep;
		flags = w->op.msg->flags;
		break;
	case FI_OP_TSEND:
	case FI_OP_TRECV:
		if (!w->op.tagged)
			return -FI_EINVAL;
		fid = w->op.tagged->ep;
		flags = w->op.tagged->flags;
		break;
	case FI_OP_READ:
	case FI_OP_WRITE:
		if (!w->op.rma)
			return -FI_EINVAL;
		fid = w->op.rma->ep;
		flags = w->op.rma->flags;
		break;
	case FI_OP_ATOMIC:
		if (!w->op.atomic)
			return -FI_EINVAL;
		fid = w->op.atomic->ep;
		flags = w->op.atomic->flags;
		break;
	case FI_OP_FETCH_ATOMIC:
		if (!w->op.fetch_atomic)
			return -FI_EINVAL;
		fid = w->op.fetch_atomic->ep;
		flags = w->op.fetch_atomic->flags;
		break;
	case FI_OP_COMPARE_ATOMIC:
		if (!w->op.compare_atomic)
			return -FI_EINVAL;
		fid = w->op.compare_atomic->ep;
		flags = w->op.compare_atomic->flags;
		break;
	default:
		return -FI_EINVAL;
	}
	ep = work_ep(d, fid);
	if (!ep) {
		FI_WARN(d->prov, FI_LOG_DOMAIN,
			"FI_QUEUE_WORK: the transfer's endpoint is not one of "
			"this domain's\n");
		return -FI_EINVAL;
	}
	flags = (flags & ~FI_TRIGGER) | UTIL_RDM_DEFERRED |
		((flags & FI_COMPLETION) ? 0 : UTIL_RDM_NO_COMPLETION);
	queuing = w;
	queuing_cntr = done;
	switch (w->op_type) {
	case FI_OP_SEND:
	case FI_OP_RECV:
		ret = util_trigger_msg(ep, fid, w->op_type, &w->op.msg->msg,
				       flags);
		break;
	case FI_OP_TSEND:
	case FI_OP_TRECV:
		ret = util_trigger_tagged(ep, fid, w->op_type,
					  &w->op.tagged->msg, flags);
		break;
	case FI_OP_READ:
	case FI_OP_WRITE:
		ret = util_trigger_rma(ep, fid, w->op_type, &w->op.rma->msg,
				       flags);
		break;
	case FI_OP_ATOMIC:
		ret = util_trigger_atomic(ep, fid, FI_OP_ATOMIC,
					  &w->op.atomic->msg, NULL, NULL, 0,
					  NULL, NULL, 0, flags);
		break;
	case FI_OP_FETCH_ATOMIC: {
		struct fi_op_fetch_atomic *o = w->op.fetch_atomic;

		ret = util_trigger_atomic(ep, fid, FI_OP_FETCH_ATOMIC, &o->msg,
					  NULL, NULL, 0, o->fetch.msg_iov,
					  o->fetch.desc, o->fetch.iov_count,
					  flags);
		break;
	}
	default: {
		struct fi_op_compare_atomic *o = w->op.compare_atomic;

		ret = util_trigger_atomic(ep, fid, FI_OP_COMPARE_ATOMIC,
					  &o->msg, o->compare.msg_iov,
					  o->compare.desc, o->compare.iov_count,
					  o->fetch.msg_iov, o->fetch.desc,
					  o->fetch.iov_count, flags);
		break;
	}
	}
	queuing = NULL;
	queuing_cntr = NULL;
	return (int)ret;
}

/* FI_QUEUE_WORK: counter operations and data transfers. */
static int work_queue(struct util_domain *d, struct fi_deferred_work *w)
{
	struct util_cntr *trig, *target, *done = NULL;
	struct util_trigger *t;

	trig = w ? cntr_in(w->triggering_cntr, d) : NULL;
	if (!trig)
		return -FI_EINVAL;
	if (w->completion_cntr) {
		done = cntr_in(w->completion_cntr, d);
		if (!done)
			return -FI_EINVAL;
	}
	if (w->op_type != FI_OP_CNTR_SET && w->op_type != FI_OP_CNTR_ADD)
		return work_transfer(d, w, done);
	target = w->op.cntr ? cntr_in(w->op.cntr->cntr, d) : NULL;
	if (!target || done)
		return -FI_EINVAL; /* completion_cntr: NULL for these */
	t = calloc(1, sizeof(*t));
	if (!t)
		return -FI_ENOMEM;
	t->cntr = trig;
	t->target = target;
	t->threshold = w->threshold;
	t->op = w->op_type;
	t->work = w;
	t->m.cntr = *w->op.cntr;
	trigger_queue(d, t);
	return 0;
}

int util_domain_work(struct util_domain *d, int command, void *arg)
{
	switch (command) {
	case FI_QUEUE_WORK:
		return work_queue(d, arg);
	case FI_CANCEL_WORK:
		if (!arg)
			return -FI_EINVAL;
		return trigger_drop(d, is_work, arg) ? 0 : -FI_ENOENT;
	case FI_FLUSH_WORK:
		trigger_drop(d, is_work, NULL);
		return 0;
	default:
		return -FI_ENOSYS;
	}
}

int util_domain_control(struct fid *fid, int command, void *arg)
{
	return util_domain_work(container_of(fid, struct util_domain,
					     domain_fid.fid),
				command, arg);
}
