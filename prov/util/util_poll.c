/* SPDX-License-Identifier: BSD-2-Clause */
/* Poll sets (weft/util_poll.h). */
#include "weft/util_poll.h"
#include "weft/stubs.h"

#include <stdlib.h>

static struct util_poll *util_poll_from_fid(struct fid *fid)
{
	return container_of(fid, struct util_poll, poll_fid.fid);
}

/* Find a member by fid; called with poll->lock held. */
static struct util_poll_member *util_poll_find(struct util_poll *poll,
					       struct fid *fid)
{
	struct dlist_entry *item;

	dlist_foreach(&poll->members, item)
	{
		struct util_poll_member *m =
		    container_of(item, struct util_poll_member, entry);

		if (m->fid == fid)
			return m;
	}
	return NULL;
}

static int util_poll_add(struct fid_poll *pollset, struct fid *event_fid,
			 uint64_t flags)
{
	struct util_poll *poll = util_poll_from_fid(&pollset->fid);
	struct util_waitable *waitable;
	struct util_poll_member *m;
	int ret;

	if (flags)
		return -FI_EBADFLAGS;
	waitable = util_waitable_of(event_fid);
	if (!waitable)
		return -FI_EINVAL;
	m = calloc(1, sizeof(*m));
	if (!m)
		return -FI_ENOMEM;
	m->fid = event_fid;
	m->waitable = waitable;

	pthread_mutex_lock(&poll->lock);
	ret = -FI_EALREADY;
	if (util_poll_find(poll, event_fid))
		goto err_unlock;
	dlist_insert_tail(&m->entry, &poll->members);
	atomic_fetch_add(&waitable->poll_ref, 1);
	pthread_mutex_unlock(&poll->lock);
	return 0;

err_unlock:
	pthread_mutex_unlock(&poll->lock);
	free(m);
	return ret;
}

static int util_poll_del(struct fid_poll *pollset, struct fid *event_fid,
			 uint64_t flags)
{
	struct util_poll *poll = util_poll_from_fid(&pollset->fid);
	struct util_poll_member *m;

	if (flags)
		return -FI_EBADFLAGS;
	pthread_mutex_lock(&poll->lock);
	m = util_poll_find(poll, event_fid);
	if (m) {
		dlist_remove(&m->entry);
		atomic_fetch_sub(&m->waitable->poll_ref, 1);
	}
	pthread_mutex_unlock(&poll->lock);
	if (!m)
		return -FI_ENOENT;
	free(m);
	return 0;
}

static int util_poll_poll(struct fid_poll *pollset, void **context, int count)
{
	struct util_poll *poll = util_poll_from_fid(&pollset->fid);
	struct dlist_entry *item;
	int n = 0;

	if (count < 0 || (count && !context))
		return -FI_EINVAL;
	pthread_mutex_lock(&poll->lock);
	dlist_foreach(&poll->members, item)
	{
		struct util_poll_member *m =
		    container_of(item, struct util_poll_member, entry);

		if (n == count)
			break;
		if (m->waitable->has_data(m->waitable))
			context[n++] = m->fid->context;
	}
	pthread_mutex_unlock(&poll->lock);
	return n;
}

static int util_poll_close(struct fid *fid)
{
	struct util_poll *poll = util_poll_from_fid(fid);

	if (!dlist_empty(&poll->members))
		return -FI_EBUSY;
	pthread_mutex_destroy(&poll->lock);
	util_domain_put(poll->domain);
	free(poll);
	return 0;
}

static const struct fi_ops util_poll_fi_ops = {
    .size = sizeof(struct fi_ops),
    .close = util_poll_close,
    .bind = weft_no_bind,
    .control = weft_no_control,
    .ops_open = weft_no_ops_open,
    .tostr = weft_no_tostr,
    .ops_set = weft_no_ops_set,
};

static const struct fi_ops_poll util_poll_ops = {
    .size = sizeof(struct fi_ops_poll),
    .poll = util_poll_poll,
    .poll_add = util_poll_add,
    .poll_del = util_poll_del,
};

int util_poll_open(struct fid_domain *domain_fid, struct fi_poll_attr *attr,
		   struct fid_poll **pollset)
{
	struct util_domain *domain =
	    domain_fid
		? container_of(domain_fid, struct util_domain, domain_fid)
		: NULL;
	struct util_poll *poll;
	int ret;

	if (!pollset || (attr && attr->flags))
		return -FI_EINVAL;
	if (domain && domain->fabric &&
	    FI_VERSION_GE(domain->fabric->fabric_fid.api_version,
			  FI_VERSION(2, 0))) {
		FI_WARN(domain->prov, FI_LOG_CORE,
			"poll sets are gone from API 2.0: read each CQ and "
			"counter\n");
		return -FI_ENOSYS;
	}
	poll = calloc(1, sizeof(*poll));
	if (!poll)
		return -FI_ENOMEM;
	ret = pthread_mutex_init(&poll->lock, NULL);
	if (ret) {
		ret = weft_errno(ret);
		goto err_free;
	}
	dlist_init(&poll->members);
	poll->domain = domain;
	poll->poll_fid.fid.fclass = FI_CLASS_POLL;
	/* The public tables are not const; weft never writes through them. */
	poll->poll_fid.fid.ops = (struct fi_ops *)&util_poll_fi_ops;
	poll->poll_fid.ops = (struct fi_ops_poll *)&util_poll_ops;
	util_domain_get(domain);
	*pollset = &poll->poll_fid;
	return 0;

err_free:
	free(poll);
	return ret;
}
