/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * FI_HOOK=debug: checks rules of the API as calls go by and reports what
 * breaks them through the log at warn level (the application's calls are
 * not changed):
 *
 *  - a receive buffer posted while an earlier receive of the same endpoint
 *    over an overlapping range has not had its completion read;
 *  - a CQ with more operations outstanding (posted with a completion to
 *    come to it, not yet read) than its size;
 *  - an endpoint closed while operations posted on it have not had their
 *    completions read (how many, and their contexts);
 *  - a domain closed while objects opened from it are still open, when
 *    the provider lets it close.
 *
 * Each operation that will produce a completion is recorded against the
 * CQ it will reach (found from the endpoint's binds: FI_TRANSMIT,
 * FI_RECV, FI_SELECTIVE_COMPLETION) under its context, and removed when
 * that context is read back (fi_cq_read*, fi_cq_sread*, fi_cq_readerr).
 * Records come from a pool grown by chunks; one mutex guards them (no
 * system call while it is free).
 */
#include "weft/hook.h"

#include "weft/core.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

static struct fi_provider debug_prov = {
	.version = WEFT_PROV_VERSION,
	.fi_version = WEFT_API_VERSION,
	.name = "hook_debug",
};

#define DBG_BUCKETS 256
/* warnings of one kind per object, then one saying the rest are quiet */
#define DBG_WARN_MAX 8

struct dbg_cq;
struct dbg_ep;

struct dbg_rec {
	void *context;
	struct dbg_ep *ep;
	struct dbg_cq *cq;
	uintptr_t lo, hi; /* a receive's buffer, [lo, hi); hi 0: none */
	bool multi;	  /* FI_MULTI_RECV: stays until its last completion */
	struct dbg_rec *hnext;	/* the CQ's bucket; the pool's free list */
	struct dbg_rec *eprev, *enext; /* the endpoint's */
};

struct dbg_cq {
	struct weft_hook_fid *hf; /* NULL once closed */
	/* endpoints bound to it: a CQ closed before them (the provider may
	 * allow it) stays here, dead, until the last one closes */
	unsigned bound;
	struct dbg_rec *bucket[DBG_BUCKETS];
	size_t outstanding;
	bool overrun_warned;
};

struct dbg_ep {
	struct weft_hook_fid *hf;
	struct dbg_cq *txcq, *rxcq;
	bool tx_selective, rx_selective;
	struct dbg_rec *recs; /* every record of its operations */
	size_t outstanding;
	unsigned overlap_warned;
};

static pthread_mutex_t dbg_lock = PTHREAD_MUTEX_INITIALIZER;
static struct dbg_rec *dbg_free;
/* chunks of records, kept for the life of the process */
struct dbg_chunk {
	struct dbg_chunk *next;
	struct dbg_rec rec[64];
};
static struct dbg_chunk *dbg_chunks;

static bool is_ep(size_t fclass)
{
	return fclass == FI_CLASS_EP || fclass == FI_CLASS_TX_CTX ||
	       fclass == FI_CLASS_RX_CTX || fclass == FI_CLASS_SEP;
}

static int debug_open(struct weft_hook_fid *hf, unsigned slot)
{
	size_t fclass = weft_hook_fclass(hf);

	if (fclass == FI_CLASS_CQ) {
		struct dbg_cq *cq = calloc(1, sizeof(*cq));

		if (!cq)
			return -FI_ENOMEM;
		cq->hf = hf;
		hf->priv[slot] = cq;
	} else if (is_ep(fclass)) {
		struct dbg_ep *ep = calloc(1, sizeof(*ep));

		if (!ep)
			return -FI_ENOMEM;
		ep->hf = hf;
		hf->priv[slot] = ep;
	}
	return 0;
}

/* Under dbg_lock. */
static struct dbg_rec *rec_get(void)
{
	struct dbg_rec *r = dbg_free;
	struct dbg_chunk *ch;
	size_t i;

	if (!r) {
		ch = calloc(1, sizeof(*ch));
		if (!ch)
			return NULL;
		ch->next = dbg_chunks;
		dbg_chunks = ch;
		for (i = 0; i < WEFT_ARRAY_SIZE(ch->rec); i++) {
			ch->rec[i].hnext = dbg_free;
			dbg_free = &ch->rec[i];
		}
		r = dbg_free;
	}
	dbg_free = r->hnext;
	return r;
}

static size_t bucket_of(const void *context)
{
	uintptr_t v = (uintptr_t)context;

	return (v ^ (v >> 8) ^ (v >> 16)) % DBG_BUCKETS;
}

/* Unlink a record from its CQ and endpoint and return it; dbg_lock held. */
static void rec_drop(struct dbg_rec *r)
{
	struct dbg_rec **p;

	for (p = &r->cq->bucket[bucket_of(r->context)]; *p;
	     p = &(*p)->hnext)
		if (*p == r) {
			*p = r->hnext;
			break;
		}
	r->cq->outstanding--;
	if (r->eprev)
		r->eprev->enext = r->enext;
	else
		r->ep->recs = r->enext;
	if (r->enext)
		r->enext->eprev = r->eprev;
	r->ep->outstanding--;
	r->hnext = dbg_free;
	dbg_free = r;
}

static bool is_recv(enum weft_hook_kind k)
{
	return k == WEFT_HK_RECV || k == WEFT_HK_TRECV;
}

static bool is_tx_with_completion(enum weft_hook_kind k)
{
	switch (k) {
	case WEFT_HK_SEND:
	case WEFT_HK_TSEND:
	case WEFT_HK_READ:
	case WEFT_HK_WRITE:
	case WEFT_HK_ATOMIC:
	case WEFT_HK_FETCH_ATOMIC:
	case WEFT_HK_COMPARE_ATOMIC:
		return true;
	default:
		return false;
	}
}

/* The range a receive writes to: its buffer, or its iovs' hull. */
static void recv_range(const struct weft_hook_call *c, uintptr_t *lo,
		       uintptr_t *hi)
{
	size_t i;

	*lo = *hi = 0;
	if (c->args & WEFT_HA_BUF) {
		if (c->buf && c->len) {
			*lo = (uintptr_t)c->buf;
			*hi = *lo + c->len;
		}
		return;
	}
	for (i = 0; c->iov && i < c->count; i++) {
		uintptr_t b = (uintptr_t)c->iov[i].iov_base;

		if (!b || !c->iov[i].iov_len)
			continue;
		if (!*hi || b < *lo)
			*lo = b;
		if (b + c->iov[i].iov_len > *hi)
			*hi = b + c->iov[i].iov_len;
	}
}

/* Before a data call: record it if a completion will come of it. */
static void debug_post(struct weft_hook_call *c, unsigned slot)
{
	struct dbg_ep *ep = c->hf->priv[slot];
	bool recv = is_recv(c->kind), explicit;
	uint64_t flags = c->args & WEFT_HA_FLAGS ? c->flags : 0;
	struct dbg_cq *cq;
	struct dbg_rec *r, *o;
	uintptr_t lo = 0, hi = 0;

	if (!recv && !is_tx_with_completion(c->kind))
		return;
	cq = recv ? ep->rxcq : ep->txcq;
	if (!cq)
		return;
	explicit = (flags & FI_COMPLETION) != 0;
	if ((recv ? ep->rx_selective : ep->tx_selective) && !explicit)
		return;
	if (recv && !(flags & (FI_PEEK | FI_CLAIM | FI_DISCARD)))
		recv_range(c, &lo, &hi);

	pthread_mutex_lock(&dbg_lock);
	if (!cq->hf)
		goto unlock; /* closed before the endpoint */
	for (o = ep->recs; hi && o; o = o->enext) {
		if (!o->hi || o->lo >= hi || lo >= o->hi)
			continue;
		if (ep->overlap_warned++ < DBG_WARN_MAX)
			FI_WARN(&debug_prov, FI_LOG_EP_DATA,
				"%s(ep %p): buffer [%p, %p) overlaps the "
				"buffer [%p, %p) of a receive still posted "
				"(context %p, new context %p)%s\n",
				c->fn, (void *)&ep->hf->u.fid, (void *)lo,
				(void *)hi, (void *)o->lo, (void *)o->hi,
				o->context, c->context,
				ep->overlap_warned == DBG_WARN_MAX ?
					"; further overlaps on this endpoint "
					"are not reported" :
					"");
		break;
	}
	r = rec_get();
	if (!r)
		goto unlock;
	*r = (struct dbg_rec){
		.context = c->context,
		.ep = ep,
		.cq = cq,
		.lo = lo,
		.hi = hi,
		.multi = recv && (flags & FI_MULTI_RECV),
	};
	r->hnext = cq->bucket[bucket_of(c->context)];
	cq->bucket[bucket_of(c->context)] = r;
	r->enext = ep->recs;
	if (ep->recs)
		ep->recs->eprev = r;
	ep->recs = r;
	ep->outstanding++;
	cq->outstanding++;
	if (cq->hf->cq_size && cq->outstanding > cq->hf->cq_size &&
	    !cq->overrun_warned) {
		cq->overrun_warned = true;
		FI_WARN(&debug_prov, FI_LOG_CQ,
			"cq %p: %zu operations outstanding with completions to "
			"come to it, more than its size %zu: it may overrun "
			"(reported once per CQ)\n",
			(void *)&cq->hf->u.fid, cq->outstanding,
			cq->hf->cq_size);
	}
	c->scratch[slot] = (uintptr_t)r;
unlock:
	pthread_mutex_unlock(&dbg_lock);
}

/* After a data call: a post that failed produces no completion. */
static void debug_posted(struct weft_hook_call *c, unsigned slot)
{
	struct dbg_rec *r = (struct dbg_rec *)(uintptr_t)c->scratch[slot];

	if (!r || !c->ret)
		return;
	pthread_mutex_lock(&dbg_lock);
	rec_drop(r);
	pthread_mutex_unlock(&dbg_lock);
}

/* A completion read: its context's record is done (a multi-receive
 * buffer's with its last completion). */
static void debug_completed(struct dbg_cq *cq, void *context, bool has_flags,
			    uint64_t flags)
{
	struct dbg_rec *r;

	for (r = cq->bucket[bucket_of(context)]; r; r = r->hnext)
		if (r->context == context)
			break;
	if (!r || (r->multi && has_flags && !(flags & FI_MULTI_RECV)))
		return;
	rec_drop(r);
}

static void debug_cq_read(struct weft_hook_call *c, unsigned slot)
{
	static const size_t sizes[] = {
		[FI_CQ_FORMAT_UNSPEC] = sizeof(struct fi_cq_entry),
		[FI_CQ_FORMAT_CONTEXT] = sizeof(struct fi_cq_entry),
		[FI_CQ_FORMAT_MSG] = sizeof(struct fi_cq_msg_entry),
		[FI_CQ_FORMAT_DATA] = sizeof(struct fi_cq_data_entry),
		[FI_CQ_FORMAT_TAGGED] = sizeof(struct fi_cq_tagged_entry),
	};
	struct dbg_cq *cq = c->hf->priv[slot];
	enum fi_cq_format f = c->hf->cq_format;
	bool has_flags = f != FI_CQ_FORMAT_UNSPEC && f != FI_CQ_FORMAT_CONTEXT;
	ssize_t i;

	if (!cq || c->ret <= 0 || !c->entries ||
	    (unsigned)f >= WEFT_ARRAY_SIZE(sizes))
		return;
	pthread_mutex_lock(&dbg_lock);
	if (c->kind == WEFT_HK_CQ_READERR) {
		struct fi_cq_err_entry *e = c->entries;

		debug_completed(cq, e->op_context, true, e->flags);
	} else {
		for (i = 0; i < c->ret; i++) {
			char *e = (char *)c->entries + (size_t)i * sizes[f];

			debug_completed(cq, *(void **)e, has_flags,
					has_flags ? ((struct fi_cq_msg_entry *)
							     (void *)e)
							    ->flags :
						    0);
		}
	}
	pthread_mutex_unlock(&dbg_lock);
}

/* An endpoint lets go of a CQ; a dead one goes with its last.  Under
 * dbg_lock. */
static void cq_unbind(struct dbg_cq *cq)
{
	if (cq && !--cq->bound && !cq->hf)
		free(cq);
}

static void debug_bind(struct weft_hook_call *c, unsigned slot)
{
	struct dbg_ep *ep = c->hf->priv[slot];
	struct weft_hook_fid *bound;
	struct dbg_cq *cq;

	if (!ep || c->ret || !weft_hook_is_wrapped(c->arg))
		return;
	bound = (struct weft_hook_fid *)(void *)c->arg;
	if (weft_hook_fclass(bound) != FI_CLASS_CQ)
		return;
	cq = bound->priv[slot];
	pthread_mutex_lock(&dbg_lock);
	if (c->flags & FI_TRANSMIT) {
		cq_unbind(ep->txcq);
		cq->bound++;
		ep->txcq = cq;
		ep->tx_selective = (c->flags & FI_SELECTIVE_COMPLETION) != 0;
	}
	if (c->flags & FI_RECV) {
		cq_unbind(ep->rxcq);
		cq->bound++;
		ep->rxcq = cq;
		ep->rx_selective = (c->flags & FI_SELECTIVE_COMPLETION) != 0;
	}
	pthread_mutex_unlock(&dbg_lock);
}

static void debug_ep_closed(struct dbg_ep *ep)
{
	char ctxs[160];
	size_t n = 0, shown = 0;
	struct dbg_rec *r;

	pthread_mutex_lock(&dbg_lock);
	if (ep->outstanding) {
		ctxs[0] = '\0';
		for (r = ep->recs; r && shown < 4; r = r->enext, shown++)
			n += (size_t)snprintf(ctxs + n, sizeof(ctxs) - n,
					      "%s%p", shown ? " " : "",
					      r->context);
		FI_WARN(&debug_prov, FI_LOG_EP_CTRL,
			"fi_close(ep %p): %zu operation(s) posted on it have "
			"not had their completions read (contexts %s%s)\n",
			(void *)&ep->hf->u.fid, ep->outstanding, ctxs,
			ep->outstanding > shown ? " ..." : "");
	}
	while (ep->recs)
		rec_drop(ep->recs);
	cq_unbind(ep->txcq);
	cq_unbind(ep->rxcq);
	ep->txcq = ep->rxcq = NULL;
	pthread_mutex_unlock(&dbg_lock);
}

static void debug_cq_closed(struct dbg_cq *cq)
{
	size_t b;

	pthread_mutex_lock(&dbg_lock);
	for (b = 0; b < DBG_BUCKETS; b++)
		while (cq->bucket[b])
			rec_drop(cq->bucket[b]);
	pthread_mutex_unlock(&dbg_lock);
}

static void debug_before(struct weft_hook_call *c, unsigned slot)
{
	if (c->kind > WEFT_HK_OTHER && c->kind < WEFT_HK_CQ_READ &&
	    c->hf->priv[slot])
		debug_post(c, slot);
}

static void debug_after(struct weft_hook_call *c, unsigned slot)
{
	size_t fclass = weft_hook_fclass(c->hf);

	switch (c->kind) {
	case WEFT_HK_CQ_READ:
	case WEFT_HK_CQ_READFROM:
	case WEFT_HK_CQ_READERR:
	case WEFT_HK_CQ_SREAD:
	case WEFT_HK_CQ_SREADFROM:
		debug_cq_read(c, slot);
		return;
	case WEFT_HK_BIND:
		debug_bind(c, slot);
		return;
	case WEFT_HK_CLOSE:
		if (c->ret)
			return;
		if (is_ep(fclass))
			debug_ep_closed(c->hf->priv[slot]);
		else if (fclass == FI_CLASS_CQ)
			debug_cq_closed(c->hf->priv[slot]);
		else if (fclass == FI_CLASS_DOMAIN &&
			 atomic_load(&c->hf->children))
			FI_WARN(&debug_prov, FI_LOG_DOMAIN,
				"fi_close(domain %p): %d object(s) opened "
				"from it are still open\n",
				(void *)&c->hf->u.fid,
				atomic_load(&c->hf->children));
		return;
	default:
		if (c->kind > WEFT_HK_OTHER && c->kind < WEFT_HK_CQ_READ)
			debug_posted(c, slot);
		return;
	}
}

static void debug_release(struct weft_hook_fid *hf, unsigned slot)
{
	struct dbg_cq *cq = hf->priv[slot];

	hf->priv[slot] = NULL;
	if (weft_hook_fclass(hf) != FI_CLASS_CQ || !cq) {
		free(cq);
		return;
	}
	pthread_mutex_lock(&dbg_lock);
	cq->hf = NULL;
	if (!cq->bound)
		free(cq);
	pthread_mutex_unlock(&dbg_lock);
}

const struct weft_hook_ops weft_hook_debug = {
	.name = "debug",
	.open = debug_open,
	.before = debug_before,
	.after = debug_after,
	.release = debug_release,
};
