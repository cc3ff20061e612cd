/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Base fabric and domain objects every provider embeds first in its own
 * (struct shm_domain { struct util_domain util; ... }), and converts back
 * with container_of.  The shared building blocks (CQ, EQ, AV, counters,
 * wait sets) hang off these and read the threading model and provider
 * identity from them.
 */
#ifndef WEFT_UTIL_DOMAIN_H
#define WEFT_UTIL_DOMAIN_H

#include <pthread.h>
#include <stdatomic.h>

#include "weft/ofi.h"

#include "weft/core.h"
#include "weft/list.h"
#include "weft/lock.h"

struct util_progress; /* util_wait.h */

struct util_fabric {
	struct fid_fabric fabric_fid;
	const struct fi_provider *prov;
	char *name;
	atomic_int ref; /* domains, EQs and wait sets opened on it */
	struct weft_lock lock;
};

struct util_domain {
	struct fid_domain domain_fid;
	struct util_fabric *fabric;
	const struct fi_provider *prov;
	char *name;
	enum fi_threading threading;
	enum fi_resource_mgmt resource_mgmt; /* FI_RM_UNSPEC: enabled */
	enum fi_progress control_progress;
	enum fi_progress data_progress;
	enum fi_av_type av_type;
	uint64_t caps;
	uint64_t mode;
	int mr_mode;
	size_t cq_data_size;
	atomic_int ref; /* objects opened on it */
	struct weft_lock lock;
	struct fid_eq *eq; /* bound with fi_domain_bind, may be NULL */
	uint64_t eq_flags;
	/* Endpoints whose progress moves the domain's others along
	 * (util_rdm_ep_attr.sweep_domain), under sweep_lock. */
	struct dlist_entry sweep_eps;
	pthread_mutex_t sweep_lock;
	/* What serves the domain's registrations to peers (the RDM
	 * engine's endpoints: struct util_progress), under target_lock. */
	struct dlist_entry targets;
	pthread_mutex_t target_lock;
	/* Triggered operations and deferred work not posted yet (struct
	 * util_trigger, weft/util_trigger.h), in threshold order, under
	 * trig_lock; ntrig counts them for the readers' quick look. */
	struct dlist_entry triggers;
	pthread_mutex_t trig_lock;
	atomic_uint ntrig;
	uint64_t trig_seq;
};

/*
 * Initialise the base of a provider's fabric.  The caller fills
 * fabric_fid.fid.ops and fabric_fid.ops afterwards.  Returns 0 or -FI_ENOMEM.
 */
int util_fabric_init(struct util_fabric *fabric, const struct fi_provider *prov,
		     const struct fi_fabric_attr *attr, void *context);
/* Release what util_fabric_init took; -FI_EBUSY while objects remain open. */
int util_fabric_fini(struct util_fabric *fabric);

/*
 * fi_fabric for a provider whose fabric is a util_fabric and nothing more:
 * allocates it, with `ops` as its fi_ops_fabric and a close that frees it.
 * Returns 0, -FI_EINVAL (attr names another fabric) or -FI_ENOMEM.
 */
int util_fabric_open(const struct fi_provider *prov,
		     struct fi_fabric_attr *attr, struct fi_ops_fabric *ops,
		     struct fid_fabric **fabric_fid, void *context);

/*
 * Initialise the base of a domain from the fi_info the application passed to
 * fi_domain (info->domain_attr may be NULL: defaults are then used).  Takes
 * a reference on the fabric.  The caller fills domain_fid.fid.ops,
 * domain_fid.ops and domain_fid.mr afterwards.
 */
int util_domain_init(struct util_domain *domain, struct util_fabric *fabric,
		     const struct fi_info *info, void *context);
/* -FI_EBUSY while objects remain open on the domain; else releases it. */
int util_domain_fini(struct util_domain *domain);

/*
 * fi_domain2 and fi_endpoint2 of a provider with no flags of its own: any
 * flag is -FI_EBADFLAGS, otherwise the fabric's domain op / the domain's
 * endpoint op does the work.
 */
int util_fabric_domain2(struct fid_fabric *fabric, struct fi_info *info,
			struct fid_domain **domain, uint64_t flags,
			void *context);
int util_domain_endpoint2(struct fid_domain *domain, struct fi_info *info,
			  struct fid_ep **ep, uint64_t flags, void *context);

/* fi_domain_bind of an EQ (the only object a domain binds). */
int util_domain_bind(struct fid *fid, struct fid *bfid, uint64_t flags);

/*
 * The progress of what serves the domain's registrations to peers: the
 * RDM engine adds each endpoint with FI_RMA or FI_ATOMIC when it opens it
 * and removes it at close.  A
 * counter bound to registrations (fi_mr_bind) runs them, under manual
 * progress, when it is read or waited on: no endpoint it is bound to
 * would.  A source's progress runs with target_lock and the counter's
 * progress lock held, so it must not wait for a lock of its own (it takes
 * its endpoint's lock only if that is free); add and del take
 * target_lock, and del returns once no call of the source runs.  Control
 * path.
 */
void util_domain_add_target(struct util_domain *domain,
			    struct util_progress *source);
void util_domain_del_target(struct util_domain *domain,
			    struct util_progress *source);
void util_domain_target_progress(struct util_domain *domain);

static inline void util_domain_get(struct util_domain *domain)
{
	if (domain)
		atomic_fetch_add_explicit(&domain->ref, 1,
					  memory_order_relaxed);
}

static inline void util_domain_put(struct util_domain *domain)
{
	if (domain)
		atomic_fetch_sub_explicit(&domain->ref, 1,
					  memory_order_release);
}

static inline bool util_domain_needs_lock(const struct util_domain *domain)
{
	return !domain || weft_threading_needs_lock(domain->threading);
}

/*
 * For what endpoints' progress reads or writes beside the application's
 * calls: under FI_PROGRESS_AUTO their threads do so whatever the
 * threading model, so the lock is needed then too.
 */
static inline bool util_domain_progress_needs_lock(
	const struct util_domain *domain)
{
	return util_domain_needs_lock(domain) ||
	       domain->data_progress == FI_PROGRESS_AUTO;
}

#endif /* WEFT_UTIL_DOMAIN_H */
