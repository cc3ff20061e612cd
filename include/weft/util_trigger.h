/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Triggered operations (fi_trigger(3)) and the deferred work queue, for
 * every endpoint built on the RDM engine.
 *
 * An operation posted with FI_TRIGGER (its context a struct
 * fi_triggered_context[2] naming a counter and a threshold) is copied,
 * iovecs and all, into a struct util_trigger on its domain's list, kept in
 * the order of thresholds (and of posting for equal ones), and holds its
 * counter.  When the counter's successes plus errors reach the threshold,
 * the operation is posted as the application would have (the same
 * endpoint or context, the same message, its flags without FI_TRIGGER),
 * and completes with its own context as any other.  Work queued on the
 * domain with fi_control(FI_QUEUE_WORK) waits on the same list; its data
 * transfers are posted with UTIL_RDM_DEFERRED and count on their work's
 * completion counter, not the endpoint's, and reach the CQ only with
 * FI_COMPLETION (fi_trigger(3)).
 *
 * Counters are bumped under endpoint locks, where nothing may be posted,
 * so the list is looked at from the calls that move things along with no
 * lock held: fi_cq_read and friends after progress, fi_cntr_read and
 * fi_cntr_wait, fi_cntr_add and fi_cntr_set, the automatic-progress
 * thread, and the post of a triggered operation itself (a threshold
 * already reached fires at once).  With nothing pending that is one load
 * (util_trigger_run).
 */
#ifndef WEFT_UTIL_TRIGGER_H
#define WEFT_UTIL_TRIGGER_H

#include <stdatomic.h>

#include "weft/ofi.h"

#include "weft/util_domain.h"

struct util_ep;

/*
 * Defer an operation posted with FI_TRIGGER on fid (an endpoint or a
 * context whose base is ep): 0, -FI_EINVAL (ep lacks FI_TRIGGER, no
 * threshold context, another domain's counter), -FI_ENOSYS (a trigger
 * other than FI_TRIGGER_THRESHOLD), -FI_ENOMEM.
 */
ssize_t util_trigger_msg(struct util_ep *ep, struct fid_ep *fid,
			 enum fi_op_type op, const struct fi_msg *msg,
			 uint64_t flags);
ssize_t util_trigger_tagged(struct util_ep *ep, struct fid_ep *fid,
			    enum fi_op_type op, const struct fi_msg_tagged *msg,
			    uint64_t flags);
ssize_t util_trigger_rma(struct util_ep *ep, struct fid_ep *fid,
			 enum fi_op_type op, const struct fi_msg_rma *msg,
			 uint64_t flags);
/* FI_OP_ATOMIC, FI_OP_FETCH_ATOMIC (res), FI_OP_COMPARE_ATOMIC (cmp,
 * res). */
ssize_t util_trigger_atomic(struct util_ep *ep, struct fid_ep *fid,
			    enum fi_op_type op, const struct fi_msg_atomic *msg,
			    const struct fi_ioc *cmp, void **cmp_desc,
			    size_t cmp_count, struct fi_ioc *res,
			    void **res_desc, size_t res_count, uint64_t flags);

/* While a deferred work request's transfer is posted: its completion
 * counter (or NULL), which the engine keeps with the operation
 * (UTIL_RDM_DEFERRED, weft/util_rdm.h). */
extern __thread struct util_cntr *util_deferred_cntr;

void util_trigger_run_slow(struct util_domain *domain);
/* Post what has reached its threshold (no lock held by the caller). */
static inline void util_trigger_run(struct util_domain *domain)
{
	if (weft_unlikely(atomic_load_explicit(&domain->ntrig,
					       memory_order_relaxed)))
		util_trigger_run_slow(domain);
}

/*
 * fi_cancel of a triggered operation not fired yet, through ep or any
 * endpoint or context of its domain (a scalable endpoint's receive
 * context may be asked for a send's): it ends with an FI_ECANCELED error
 * entry on the CQ of its own endpoint and direction.  Whether one with
 * that context was there.
 */
bool util_trigger_cancel(struct util_ep *ep, void *context);
/* The endpoint closes: its operations not fired yet go, unreported. */
void util_trigger_drop_ep(struct util_ep *ep);
/* The counter closes: what waits on it, or would set or add to it, goes
 * unreported. */
struct util_cntr;
void util_trigger_drop_cntr(struct util_cntr *cntr);

/* fi_control(domain, FI_QUEUE_WORK, FI_CANCEL_WORK or FI_FLUSH_WORK);
 * -FI_ENOSYS for other commands.  util_domain_control is it as a
 * domain's fi_ops.control. */
int util_domain_work(struct util_domain *domain, int command, void *arg);
int util_domain_control(struct fid *fid, int command, void *arg);

#endif /* WEFT_UTIL_TRIGGER_H */
