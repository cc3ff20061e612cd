/* SPDX-License-Identifier: BSD-2-Clause */
/* Counters (weft/util_cntr.h). */
#include "weft/util_cntr.h"
#include "weft/util_trigger.h"

#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "weft/stubs.h"

/* About to sleep: arm the progress sources; true if events came. */
static bool util_cntr_arm_sources(struct util_cntr *cntr)
{
	struct dlist_entry *e;
	bool came = false;

	if (!atomic_load_explicit(&cntr->nprogress, memory_order_acquire))
		return false;
	weft_lock(&cntr->progress_lock);
	dlist_foreach(&cntr->progress_list, e) {
		struct util_progress *p =
			container_of(e, struct util_progress, entry);

		if (p->arm && p->arm(p))
			came = true;
	}
	weft_unlock(&cntr->progress_lock);
	return came;
}

static bool cntr_arm(struct util_waitable *waitable)
{
	return util_cntr_arm_sources(
		container_of(waitable, struct util_cntr, waitable));
}

void util_cntr_progress(struct util_cntr *cntr)
{
	struct dlist_entry *e;

	if (!atomic_load_explicit(&cntr->nprogress, memory_order_acquire))
		return;
	weft_lock(&cntr->progress_lock);
	dlist_foreach(&cntr->progress_list, e) {
		struct util_progress *p =
			container_of(e, struct util_progress, entry);

		p->progress(p);
	}
	weft_unlock(&cntr->progress_lock);
}

/* progress_lock held. */
static void cntr_add_progress_locked(struct util_cntr *cntr,
				     struct util_progress *progress)
{
	dlist_insert_tail(&progress->entry, &cntr->progress_list);
	if (progress->polled && atomic_fetch_add(&cntr->npoll, 1) == 0)
		atomic_store(&cntr->waitable.polled, true);
	atomic_fetch_add(&cntr->nprogress, 1);
}

/* progress_lock held; whether progress was registered. */
static bool cntr_del_progress_locked(struct util_cntr *cntr,
				     struct util_progress *progress)
{
	struct dlist_entry *e;

	dlist_foreach(&cntr->progress_list, e) {
		if (e != &progress->entry)
			continue;
		dlist_remove(&progress->entry);
		if (progress->polled && atomic_fetch_sub(&cntr->npoll, 1) == 1)
			atomic_store(&cntr->waitable.polled, false);
		atomic_fetch_sub(&cntr->nprogress, 1);
		return true;
	}
	return false;
}

int util_cntr_add_progress(struct util_cntr *cntr,
			   struct util_progress *progress)
{
	if (!progress || !progress->progress)
		return -FI_EINVAL;
	weft_lock(&cntr->progress_lock);
	cntr_add_progress_locked(cntr, progress);
	weft_unlock(&cntr->progress_lock);
	return 0;
}

int util_cntr_del_progress(struct util_cntr *cntr,
			   struct util_progress *progress)
{
	bool found;

	weft_lock(&cntr->progress_lock);
	found = cntr_del_progress_locked(cntr, progress);
	weft_unlock(&cntr->progress_lock);
	return found ? 0 : -FI_ENOENT;
}

static void cntr_mr_progress(struct util_progress *p)
{
	struct util_cntr *cntr = container_of(p, struct util_cntr, mr_hook);

	util_domain_target_progress(cntr->domain);
}

/* Whether registrations bound to the counter need their targets run. */
static bool cntr_mr_hooked(const struct util_cntr *cntr)
{
	return cntr->domain &&
	       cntr->domain->data_progress != FI_PROGRESS_AUTO;
}

void util_cntr_mr_get(struct util_cntr *cntr)
{
	util_cntr_get(cntr);
	weft_lock(&cntr->progress_lock);
	if (!cntr->mr_binds++ && cntr_mr_hooked(cntr)) {
		cntr->mr_hook.progress = cntr_mr_progress;
		cntr->mr_hook.arm = NULL;
		cntr->mr_hook.polled = true;
		cntr_add_progress_locked(cntr, &cntr->mr_hook);
	}
	weft_unlock(&cntr->progress_lock);
}

void util_cntr_mr_put(struct util_cntr *cntr)
{
	weft_lock(&cntr->progress_lock);
	if (!--cntr->mr_binds && cntr_mr_hooked(cntr))
		cntr_del_progress_locked(cntr, &cntr->mr_hook);
	weft_unlock(&cntr->progress_lock);
	util_cntr_put(cntr);
}

static uint64_t util_cntr_read(struct fid_cntr *cntr_fid)
{
	struct util_cntr *cntr = util_cntr_of(cntr_fid);

	util_cntr_progress(cntr);
	/* Triggered operations due, posted with no lock held (not from
	 * the wait and poll sets' looks, which hold theirs). */
	util_trigger_run(cntr->domain);
	return atomic_load_explicit(&cntr->count, memory_order_acquire);
}

static uint64_t util_cntr_readerr(struct fid_cntr *cntr_fid)
{
	struct util_cntr *cntr = util_cntr_of(cntr_fid);

	util_cntr_progress(cntr);
	util_trigger_run(cntr->domain);
	return atomic_load_explicit(&cntr->errcount, memory_order_acquire);
}

/*
 * fi_poll(3): a counter is reported when a value changed "since the last
 * time fi_poll, fi_cntr_set, or fi_cntr_add were called", so the
 * application's own updates move the mark.
 */
static int util_cntr_add(struct fid_cntr *cntr_fid, uint64_t value)
{
	struct util_cntr *cntr = util_cntr_of(cntr_fid);
	uint64_t now;

	now = atomic_fetch_add(&cntr->count, value) + value;
	atomic_store(&cntr->seen, now);
	util_waitable_signal(&cntr->waitable);
	util_trigger_run(cntr->domain);
	return 0;
}

static int util_cntr_set(struct fid_cntr *cntr_fid, uint64_t value)
{
	struct util_cntr *cntr = util_cntr_of(cntr_fid);

	atomic_store(&cntr->count, value);
	atomic_store(&cntr->seen, value);
	util_waitable_signal(&cntr->waitable);
	util_trigger_run(cntr->domain);
	return 0;
}

static int util_cntr_adderr(struct fid_cntr *cntr_fid, uint64_t value)
{
	struct util_cntr *cntr = util_cntr_of(cntr_fid);
	uint64_t now;

	now = atomic_fetch_add(&cntr->errcount, value) + value;
	atomic_store(&cntr->seen_err, now);
	util_waitable_signal(&cntr->waitable);
	util_trigger_run(cntr->domain);
	return 0;
}

static int util_cntr_seterr(struct fid_cntr *cntr_fid, uint64_t value)
{
	struct util_cntr *cntr = util_cntr_of(cntr_fid);

	atomic_store(&cntr->errcount, value);
	atomic_store(&cntr->seen_err, value);
	util_waitable_signal(&cntr->waitable);
	util_trigger_run(cntr->domain);
	return 0;
}

/* Whether to stop waiting: 0 reached, -FI_EAVAIL error count moved,
 * -FI_EAGAIN neither. */
static int cntr_wait_check(struct util_cntr *cntr, uint64_t threshold,
			   uint64_t err0)
{
	if (atomic_load(&cntr->count) >= threshold)
		return 0;
	if (atomic_load(&cntr->errcount) != err0)
		return -FI_EAVAIL;
	return -FI_EAGAIN;
}

static int util_cntr_wait(struct fid_cntr *cntr_fid, uint64_t threshold,
			  int timeout)
{
	struct util_cntr *cntr = util_cntr_of(cntr_fid);
	struct util_wait *wait = cntr->waitable.wait;
	uint64_t deadline = util_wait_deadline(timeout);
	uint64_t err0 = atomic_load(&cntr->errcount);
	unsigned int ticket;
	int left, ret;

	for (;;) {
		util_cntr_progress(cntr);
		util_trigger_run(cntr->domain);
		ret = cntr_wait_check(cntr, threshold, err0);
		if (ret != -FI_EAGAIN)
			return ret;
		left = util_wait_remaining(deadline);
		if (!left)
			return -FI_ETIMEDOUT;
		/* FI_WAIT_NONE (fi_cntr_wait is not meant for it: poll
		 * rather than fail) or callbacks that must be polled. */
		if (!wait || atomic_load(&cntr->npoll)) {
			sched_yield();
			continue;
		}
		util_wait_arm(wait, &ticket);
		if (cntr_wait_check(cntr, threshold, err0) != -FI_EAGAIN ||
		    util_cntr_arm_sources(cntr)) {
			util_wait_disarm(wait);
			continue;
		}
		ret = util_wait_block(wait, ticket, left);
		if (ret && ret != -FI_ETIMEDOUT && ret != -FI_EINTR)
			return ret;
		/* Woken, interrupted or timed out: look again; the deadline
		 * decides when to give up. */
	}
}

/*
 * "Has data" for wait sets, poll sets and fi_trywait: a value changed
 * since it was last reported here or set by the application.
 */
static bool cntr_has_data(struct util_waitable *waitable)
{
	struct util_cntr *cntr =
	    container_of(waitable, struct util_cntr, waitable);
	uint64_t count, err;
	bool changed;

	util_cntr_progress(cntr);
	count = atomic_load(&cntr->count);
	err = atomic_load(&cntr->errcount);
	changed = atomic_exchange(&cntr->seen, count) != count;
	changed |= atomic_exchange(&cntr->seen_err, err) != err;
	return changed;
}

int util_cntr_control(struct fid *fid, int command, void *arg)
{
	struct util_cntr *cntr =
	    container_of(fid, struct util_cntr, cntr_fid.fid);

	switch (command) {
	case FI_GETOPSFLAG:
		if (!arg)
			return -FI_EINVAL;
		*(uint64_t *)arg = cntr->ops_flags;
		return 0;
	case FI_SETOPSFLAG:
		if (!arg)
			return -FI_EINVAL;
		cntr->ops_flags = *(uint64_t *)arg;
		return 0;
	default:
		return util_waitable_control(&cntr->waitable, command, arg);
	}
}

static int util_cntr_close(struct fid *fid)
{
	struct util_cntr *cntr =
	    container_of(fid, struct util_cntr, cntr_fid.fid);
	int ret;

	ret = util_cntr_fini(cntr);
	if (ret)
		return ret;
	free(cntr);
	return 0;
}

static const struct fi_ops util_cntr_fi_ops = {
    .size = sizeof(struct fi_ops),
    .close = util_cntr_close,
    .bind = weft_no_bind,
    .control = util_cntr_control,
    .ops_open = weft_no_ops_open,
    .tostr = weft_no_tostr,
    .ops_set = weft_no_ops_set,
};

static const struct fi_ops_cntr util_cntr_ops = {
    .size = sizeof(struct fi_ops_cntr),
    .read = util_cntr_read,
    .readerr = util_cntr_readerr,
    .add = util_cntr_add,
    .set = util_cntr_set,
    .wait = util_cntr_wait,
    .adderr = util_cntr_adderr,
    .seterr = util_cntr_seterr,
};

int util_cntr_init(struct util_cntr *cntr, struct util_domain *domain,
		   const struct fi_cntr_attr *attr, void *context)
{
	static const struct fi_cntr_attr defaults = {
	    .events = FI_CNTR_EVENTS_COMP,
	    .wait_obj = FI_WAIT_NONE,
	};
	int ret;

	if (!attr)
		attr = &defaults;
	if (attr->events != FI_CNTR_EVENTS_COMP || attr->flags)
		return -FI_EINVAL;
	if (attr->wait_obj == FI_WAIT_SET && !attr->wait_set)
		return -FI_EINVAL;

	memset(cntr, 0, sizeof(*cntr));
	cntr->domain = domain;
	cntr->prov = domain ? domain->prov : &weft_core_prov;
	atomic_init(&cntr->ref, 0);
	atomic_init(&cntr->count, 0);
	atomic_init(&cntr->errcount, 0);
	atomic_init(&cntr->seen, 0);
	atomic_init(&cntr->seen_err, 0);
	atomic_init(&cntr->nprogress, 0);
	atomic_init(&cntr->npoll, 0);
	dlist_init(&cntr->progress_list);
	cntr->cntr_fid.fid.fclass = FI_CLASS_CNTR;
	cntr->cntr_fid.fid.context = context;
	/* The public fids take non-const ops; nothing writes through them. */
	cntr->cntr_fid.fid.ops = (struct fi_ops *)&util_cntr_fi_ops;
	cntr->cntr_fid.ops = (struct fi_ops_cntr *)&util_cntr_ops;

	ret = weft_lock_init(&cntr->progress_lock,
			     util_domain_needs_lock(domain));
	if (ret)
		return ret;
	ret = util_waitable_init(
	    &cntr->waitable, domain ? domain->fabric : NULL, cntr->prov,
	    attr->wait_obj, attr->wait_set, &cntr->cntr_fid.fid, cntr_has_data);
	if (ret)
		goto err_destroy_lock;
	cntr->waitable.arm = cntr_arm;
	util_domain_get(domain);
	return 0;

err_destroy_lock:
	weft_lock_destroy(&cntr->progress_lock);
	return ret;
}

int util_cntr_fini(struct util_cntr *cntr)
{
	if (atomic_load_explicit(&cntr->ref, memory_order_acquire) ||
	    atomic_load(&cntr->nprogress) ||
	    util_waitable_busy(&cntr->waitable))
		return -FI_EBUSY;

	util_trigger_drop_cntr(cntr);
	util_waitable_fini(&cntr->waitable);
	weft_lock_destroy(&cntr->progress_lock);
	util_domain_put(cntr->domain);
	return 0;
}

int util_cntr_open(struct util_domain *domain, const struct fi_cntr_attr *attr,
		   struct fid_cntr **cntr_fid, void *context)
{
	struct util_cntr *cntr;
	int ret;

	cntr = malloc(sizeof(*cntr));
	if (!cntr)
		return -FI_ENOMEM;
	ret = util_cntr_init(cntr, domain, attr, context);
	if (ret)
		goto err_free_cntr;
	*cntr_fid = &cntr->cntr_fid;
	return 0;

err_free_cntr:
	free(cntr);
	return ret;
}

int util_cntr_open_op(struct fid_domain *domain, struct fi_cntr_attr *attr,
		      struct fid_cntr **cntr, void *context)
{
	return util_cntr_open(
	    container_of(domain, struct util_domain, domain_fid), attr, cntr,
	    context);
}
