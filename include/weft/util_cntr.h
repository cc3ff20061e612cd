/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Counters (fi_cntr_open), shared by every provider.
 *
 * A counter is two 64-bit atomics, the success and the error count.  The
 * provider's completion path bumps them with util_cntr_inc /
 * util_cntr_inc_err: one atomic add plus util_wait_signal's check for a
 * waiter, so no lock and no syscall while nobody waits.
 *
 * Manual progress: an endpoint bound to a counter whose domain progresses
 * manually registers a callback with util_cntr_add_progress.  fi_cntr_read,
 * fi_cntr_readerr, fi_cntr_wait and the wait/poll set "has data" check run
 * every callback before looking at the values.  A callback whose events do
 * not wake the counter's wait object by themselves (no fd added with
 * util_wait_add_fd, e.g. shared-memory rings) is registered with
 * `polled`; fi_cntr_wait then polls it, yielding the CPU between
 * rounds, instead of blocking (and wait sets and fi_trywait poll too).
 *
 * Provider use:
 *
 *	struct verbs_cntr { struct util_cntr util; ... };
 *	open:       util_cntr_init(&c->util, domain, attr, context);
 *	            (or util_cntr_open when there is nothing of its own)
 *	bind:       util_cntr_get(cntr);
 *	            util_cntr_add_progress(cntr, fn, ep, 0);
 *	completion: util_cntr_inc(cntr) or util_cntr_inc_err(cntr);
 *	ep close:   util_cntr_del_progress(cntr, fn, ep); util_cntr_put(cntr);
 */
#ifndef WEFT_UTIL_CNTR_H
#define WEFT_UTIL_CNTR_H

#include <stdatomic.h>

#include "weft/ofi.h"

#include "weft/core.h"
#include "weft/list.h"
#include "weft/lock.h"
#include "weft/util_domain.h"
#include "weft/util_wait.h"

struct util_cntr {
	struct fid_cntr cntr_fid;
	struct util_domain *domain;
	const struct fi_provider *prov;
	atomic_int ref;	    /* endpoints and MRs bound to the counter */
	uint64_t ops_flags; /* FI_GETOPSFLAG / FI_SETOPSFLAG */
	struct util_waitable waitable;

	/* Values last reported by the "has data" check (fi_poll, wait
	 * sets, fi_trywait) or set by fi_cntr_add/set. */
	atomic_uint_least64_t seen;
	atomic_uint_least64_t seen_err;

	/* Manual progress; nprogress lets the readers skip the lock. */
	atomic_int nprogress;
	atomic_int npoll; /* registered sources that are polled */
	struct weft_lock progress_lock;
	struct dlist_entry progress_list;

	/* Registrations counting into it (fi_mr_bind), under progress_lock;
	 * under manual progress, while there are any, mr_hook runs the
	 * domain's target progress (util_domain_target_progress). */
	unsigned int mr_binds;
	struct util_progress mr_hook;

	/* Hot: written by every completion.  The pad keeps the fields above
	 * off their cache line without asking heap allocations for more
	 * than malloc's alignment. */
	char pad_hot[WEFT_CACHELINE];
	atomic_uint_least64_t count;
	atomic_uint_least64_t errcount;
};

/*
 * Initialise a counter embedded in a provider's own.  attr NULL means
 * FI_CNTR_EVENTS_COMP and FI_WAIT_NONE; attr->flags must be 0.  Sets up the
 * wait object and takes a domain reference.  Fills cntr_fid with the shared
 * ops; a provider may replace them afterwards.  Called from fi_cntr_open;
 * never blocks.  Returns 0, -FI_EINVAL, -FI_ENOMEM or what the wait object
 * returned.
 */
int util_cntr_init(struct util_cntr *cntr, struct util_domain *domain,
		   const struct fi_cntr_attr *attr, void *context);

/*
 * Release what util_cntr_init took: -FI_EBUSY while objects are bound
 * (util_cntr_get without util_cntr_put), progress callbacks remain or a
 * poll set holds it.  The
 * caller frees the memory.
 */
int util_cntr_fini(struct util_cntr *cntr);

/*
 * fi_ops_domain.cntr_open for providers with nothing of their own in the
 * counter: allocates a struct util_cntr, whose fi_close frees it.
 */
int util_cntr_open(struct util_domain *domain, const struct fi_cntr_attr *attr,
		   struct fid_cntr **cntr, void *context);

/* util_cntr_open in the shape of fi_ops_domain.cntr_open, for a provider
 * whose domain embeds struct util_domain at domain_fid. */
int util_cntr_open_op(struct fid_domain *domain, struct fi_cntr_attr *attr,
		      struct fid_cntr **cntr, void *context);

/*
 * Count n successful completions.  The provider's fast path: callable
 * from any thread, lock-free; makes a syscall only when a thread waits on
 * the counter or an application fd needs re-arming.
 */
static inline void util_cntr_add_n(struct util_cntr *cntr, uint64_t n)
{
	atomic_fetch_add_explicit(&cntr->count, n, memory_order_release);
	util_waitable_signal(&cntr->waitable);
}

static inline void util_cntr_inc(struct util_cntr *cntr)
{
	util_cntr_add_n(cntr, 1);
}

/* Count one completion in error; wakes fi_cntr_wait (-FI_EAVAIL there). */
static inline void util_cntr_inc_err(struct util_cntr *cntr)
{
	atomic_fetch_add_explicit(&cntr->errcount, 1, memory_order_release);
	util_waitable_signal(&cntr->waitable);
}

/*
 * Register an endpoint's progress (see struct util_progress in
 * util_wait.h), typically when it binds the counter.  An endpoint bound to
 * the counter for several events registers once.  Control path: takes the
 * progress lock, allocates nothing.  Returns 0 or -FI_EINVAL.
 */
int util_cntr_add_progress(struct util_cntr *cntr,
			   struct util_progress *progress);

/*
 * Unregister; the callback is not running when this returns.  Must not be
 * called with a lock the callback takes.  Returns 0 or -FI_ENOENT.
 */
int util_cntr_del_progress(struct util_cntr *cntr,
			   struct util_progress *progress);

/* Run the registered progress callbacks (nothing if there are none). */
void util_cntr_progress(struct util_cntr *cntr);

/* Count an object bound to the counter; fi_close returns -FI_EBUSY until
 * the matching put. */
static inline void util_cntr_get(struct util_cntr *cntr)
{
	atomic_fetch_add_explicit(&cntr->ref, 1, memory_order_relaxed);
}

static inline void util_cntr_put(struct util_cntr *cntr)
{
	atomic_fetch_sub_explicit(&cntr->ref, 1, memory_order_release);
}

/*
 * A registration counts into the counter (fi_mr_bind; util_mr.c): one
 * reference as util_cntr_get takes, and, for the first registration of a
 * domain with manual progress, the domain's target progress among the
 * counter's progress sources (polled: the targets' fds are not in the
 * counter's wait object), since the application may read or wait on the
 * counter alone.  util_cntr_mr_put undoes one; it must not be called with
 * a lock that the targets' progress takes (the key map's).  Control path.
 */
void util_cntr_mr_get(struct util_cntr *cntr);
void util_cntr_mr_put(struct util_cntr *cntr);

/* The util_cntr behind a counter fid opened by util_cntr_init / _open. */
static inline struct util_cntr *util_cntr_of(struct fid_cntr *cntr_fid)
{
	return container_of(cntr_fid, struct util_cntr, cntr_fid);
}

/* The shared control op (FI_GETWAIT, FI_GETWAITOBJ, FI_GET/SETOPSFLAG),
 * for providers that wrap it. */
int util_cntr_control(struct fid *fid, int command, void *arg);

#endif /* WEFT_UTIL_CNTR_H */
