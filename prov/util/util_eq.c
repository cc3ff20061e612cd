/* SPDX-License-Identifier: BSD-2-Clause */
/* Event queues (weft/util_eq.h). */
#include "weft/util_eq.h"

#include <poll.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "weft/ofi.h"

#include "weft/stubs.h"

struct util_eq_entry {
	struct slist_entry list_entry;
	uint32_t event;
	size_t size; /* bytes in data[] handed to the reader */
	/* The event as written; for errors a struct fi_eq_err_entry whose
	 * err_data points just past it, at the copied error data. */
	uint64_t data[];
};

static bool eq_is_cm_event(uint32_t event)
{
	return event == FI_CONNREQ || event == FI_CONNECTED ||
	       event == FI_SHUTDOWN;
}

static void eq_entry_free(struct util_eq_entry *entry, bool unread)
{
	struct fi_eq_cm_entry *cm;

	/* An unread FI_CONNREQ still owns its fi_info. */
	if (unread && entry->event == FI_CONNREQ &&
	    entry->size >= sizeof(*cm)) {
		cm = (struct fi_eq_cm_entry *)entry->data;
		weft_info_free_list(cm->info);
	}
	free(entry);
}

static void eq_free_list(struct slist *list, bool unread)
{
	struct slist_entry *e;

	while ((e = slist_remove_head(list)))
		eq_entry_free(container_of(e, struct util_eq_entry, list_entry),
			      unread);
}

/* Drop the error whose err_data the application may still be reading:
 * every read of the EQ ends its life.  Called with eq->lock held. */
static void eq_release_held(struct util_eq *eq)
{
	if (eq->err_held) {
		eq_entry_free(eq->err_held, false);
		eq->err_held = NULL;
	}
}

static void eq_queue(struct util_eq *eq, struct slist *list,
		     struct util_eq_entry *entry)
{
	pthread_mutex_lock(&eq->lock);
	slist_insert_tail(&entry->list_entry, list);
	pthread_mutex_unlock(&eq->lock);
	util_waitable_signal(&eq->waitable);
}

ssize_t util_eq_write(struct util_eq *eq, uint32_t event, const void *buf,
		      size_t len, uint64_t flags)
{
	struct util_eq_entry *entry;
	int ret;

	/* Other prov/util objects (the AV) report errors through the public
	 * fi_eq_write, marked with UTIL_EQ_FLAG_ERROR. */
	if (flags == UTIL_EQ_FLAG_ERROR) {
		if (len != sizeof(struct fi_eq_err_entry) || !buf)
			return -FI_EINVAL;
		ret = util_eq_write_err(eq, buf);
		return ret ? ret : (ssize_t)len;
	}
	if (flags || (len && !buf))
		return -FI_EINVAL;
	if (eq_is_cm_event(event) && len < sizeof(struct fi_eq_cm_entry))
		return -FI_EINVAL;

	entry = malloc(sizeof(*entry) + len);
	if (!entry)
		return -FI_ENOMEM;
	entry->event = event;
	entry->size = len;
	if (len)
		memcpy(entry->data, buf, len);
	eq_queue(eq, &eq->events, entry);
	return len;
}

int util_eq_write_err(struct util_eq *eq, const struct fi_eq_err_entry *err)
{
	struct util_eq_entry *entry;
	struct fi_eq_err_entry *copy;
	size_t data_size = err->err_data ? err->err_data_size : 0;

	if (err->err <= 0)
		return -FI_EINVAL;

	entry = malloc(sizeof(*entry) + sizeof(*copy) + data_size);
	if (!entry)
		return -FI_ENOMEM;
	entry->event = 0;
	entry->size = sizeof(*copy);
	copy = (struct fi_eq_err_entry *)entry->data;
	*copy = *err;
	copy->err_data_size = data_size;
	copy->err_data = data_size ? (void *)(copy + 1) : NULL;
	if (data_size)
		memcpy(copy->err_data, err->err_data, data_size);
	eq_queue(eq, &eq->errors, entry);
	return 0;
}

/* Whether any source must be polled; called with progress_lock held. */
static void eq_update_polled(struct util_eq *eq)
{
	struct dlist_entry *e;
	bool polled = false;

	dlist_foreach(&eq->progress_list, e)
		polled |= container_of(e, struct util_progress, entry)->polled;
	atomic_store(&eq->waitable.polled, polled);
}

void util_eq_add_progress(struct util_eq *eq, struct util_progress *progress)
{
	pthread_mutex_lock(&eq->progress_lock);
	dlist_insert_tail(&progress->entry, &eq->progress_list);
	eq_update_polled(eq);
	atomic_store(&eq->nprogress, eq->nprogress + 1);
	pthread_mutex_unlock(&eq->progress_lock);
}

void util_eq_del_progress(struct util_eq *eq, struct util_progress *progress)
{
	pthread_mutex_lock(&eq->progress_lock);
	dlist_remove(&progress->entry);
	eq_update_polled(eq);
	atomic_store(&eq->nprogress, eq->nprogress - 1);
	pthread_mutex_unlock(&eq->progress_lock);
}

int util_eq_bind_cm(struct util_eq **slot, struct fid *bfid,
		    struct util_progress *progress,
		    void (*fn)(struct util_progress *progress), int fd,
		    void *context)
{
	struct util_eq *eq;

	if (!bfid || bfid->fclass != FI_CLASS_EQ)
		return -FI_EINVAL;
	if (*slot)
		return -FI_EALREADY;
	eq = util_eq_of(container_of(bfid, struct fid_eq, fid));
	util_eq_get(eq);
	progress->progress = fn;
	progress->polled = true;
	if (fd >= 0 && util_eq_wait(eq)) {
		/* Already there (endpoints sharing their domain's fd):
		 * counted, as good as added. */
		int ret = util_wait_add_fd(util_eq_wait(eq), fd, POLLIN,
					   context);

		if (!ret || ret == -FI_EALREADY)
			progress->polled = false;
	}
	util_eq_add_progress(eq, progress);
	*slot = eq;
	return 0;
}

void util_eq_unbind_cm(struct util_eq *eq, struct util_progress *progress,
		       int fd)
{
	if (!eq)
		return;
	util_eq_del_progress(eq, progress);
	if (fd >= 0 && !progress->polled && util_eq_wait(eq))
		util_wait_del_fd(util_eq_wait(eq), fd);
}

int util_cm_getopt(int level, int optname, void *optval, size_t *optlen,
		   size_t max)
{
	if (level != FI_OPT_ENDPOINT || optname != FI_OPT_CM_DATA_SIZE)
		return -FI_ENOPROTOOPT;
	if (!optval || !optlen || *optlen < sizeof(size_t)) {
		if (optlen)
			*optlen = sizeof(size_t);
		return -FI_ETOOSMALL;
	}
	*(size_t *)optval = max;
	*optlen = sizeof(size_t);
	return 0;
}

void util_eq_set_progress(struct util_eq *eq, struct util_progress *progress)
{
	if (eq->progress)
		util_eq_del_progress(eq, eq->progress);
	eq->progress = progress;
	if (progress)
		util_eq_add_progress(eq, progress);
}

static void eq_progress(struct util_eq *eq)
{
	struct dlist_entry *e;

	if (!atomic_load_explicit(&eq->nprogress, memory_order_relaxed))
		return;
	pthread_mutex_lock(&eq->progress_lock);
	dlist_foreach(&eq->progress_list, e) {
		struct util_progress *p =
			container_of(e, struct util_progress, entry);

		p->progress(p);
	}
	pthread_mutex_unlock(&eq->progress_lock);
}

/* fi_eq_read without running progress (sread runs it once per round). */
static ssize_t eq_read(struct util_eq *eq, uint32_t *event, void *buf,
		       size_t len, uint64_t flags)
{
	struct util_eq_entry *entry;
	struct slist_entry *head;
	ssize_t ret;
	size_t n;

	if (flags & ~FI_PEEK)
		return -FI_EINVAL;

	pthread_mutex_lock(&eq->lock);
	eq_release_held(eq);
	if (!slist_empty(&eq->errors)) {
		ret = -FI_EAVAIL;
		goto unlock;
	}
	head = eq->events.head;
	if (!head) {
		ret = -FI_EAGAIN;
		goto unlock;
	}
	entry = container_of(head, struct util_eq_entry, list_entry);

	n = entry->size;
	if (eq_is_cm_event(entry->event)) {
		if (len < sizeof(struct fi_eq_cm_entry)) {
			ret = -FI_ETOOSMALL;
			goto unlock;
		}
		n = WEFT_MIN(n, len);
	} else if (len < n) {
		ret = -FI_ETOOSMALL;
		goto unlock;
	}
	if (n)
		memcpy(buf, entry->data, n);
	if (event)
		*event = entry->event;
	if (!(flags & FI_PEEK)) {
		slist_remove_head(&eq->events);
		eq_entry_free(entry, false);
	}
	ret = n;
unlock:
	pthread_mutex_unlock(&eq->lock);
	return ret;
}

ssize_t util_eq_read(struct fid_eq *eq_fid, uint32_t *event, void *buf,
		     size_t len, uint64_t flags)
{
	struct util_eq *eq = util_eq_of(eq_fid);

	eq_progress(eq);
	return eq_read(eq, event, buf, len, flags);
}

/* Size of struct fi_eq_err_entry as applications of API < 1.5 know it. */
#define EQ_OLD_ERR_ENTRY_SIZE offsetof(struct fi_eq_err_entry, err_data_size)

ssize_t util_eq_readerr(struct fid_eq *eq_fid, struct fi_eq_err_entry *buf,
			uint64_t flags)
{
	struct util_eq *eq = util_eq_of(eq_fid);
	const struct fi_eq_err_entry *src;
	struct util_eq_entry *entry;
	bool lend; /* hand out our own err_data buffer */
	size_t n;
	ssize_t ret;

	if (!buf || (flags & ~FI_PEEK))
		return -FI_EINVAL;

	eq_progress(eq);
	pthread_mutex_lock(&eq->lock);
	eq_release_held(eq);
	if (slist_empty(&eq->errors)) {
		ret = -FI_EAGAIN;
		goto unlock;
	}
	entry = container_of(eq->errors.head, struct util_eq_entry, list_entry);
	src = (const struct fi_eq_err_entry *)entry->data;

	buf->fid = src->fid;
	buf->context = src->context;
	buf->data = src->data;
	buf->err = src->err;
	buf->prov_errno = src->prov_errno;
	if (eq->old_err_abi) {
		/* No err_data_size field in the caller's struct. */
		lend = true;
		buf->err_data = src->err_data;
		ret = EQ_OLD_ERR_ENTRY_SIZE;
	} else if (!buf->err_data_size || !buf->err_data) {
		lend = true;
		buf->err_data = src->err_data;
		buf->err_data_size = src->err_data_size;
		ret = sizeof(*buf);
	} else {
		lend = false;
		n = WEFT_MIN(buf->err_data_size, src->err_data_size);
		if (n)
			memcpy(buf->err_data, src->err_data, n);
		buf->err_data_size = n;
		ret = sizeof(*buf);
	}

	if (!(flags & FI_PEEK)) {
		slist_remove_head(&eq->errors);
		if (lend && src->err_data)
			eq->err_held = entry;
		else
			eq_entry_free(entry, false);
	}
unlock:
	pthread_mutex_unlock(&eq->lock);
	return ret;
}

static ssize_t util_eq_app_write(struct fid_eq *eq_fid, uint32_t event,
				 const void *buf, size_t len, uint64_t flags)
{
	return util_eq_write(util_eq_of(eq_fid), event, buf, len, flags);
}

static bool eq_queued(struct util_eq *eq)
{
	bool ret;

	pthread_mutex_lock(&eq->lock);
	ret = !slist_empty(&eq->events) || !slist_empty(&eq->errors);
	pthread_mutex_unlock(&eq->lock);
	return ret;
}

static bool eq_has_data(struct util_waitable *waitable)
{
	struct util_eq *eq = container_of(waitable, struct util_eq, waitable);

	eq_progress(eq);
	return eq_queued(eq);
}

ssize_t util_eq_sread(struct fid_eq *eq_fid, uint32_t *event, void *buf,
		      size_t len, int timeout, uint64_t flags)
{
	struct util_eq *eq = util_eq_of(eq_fid);
	struct util_wait *wait = eq->waitable.wait;
	uint64_t deadline = util_wait_deadline(timeout);
	unsigned int ticket;
	ssize_t ret;
	int left;

	for (;;) {
		eq_progress(eq);
		ret = eq_read(eq, event, buf, len, flags);
		if (ret != -FI_EAGAIN)
			return ret;
		left = util_wait_remaining(deadline);
		if (!left)
			return -FI_EAGAIN;
		if (!wait || atomic_load(&eq->waitable.polled)) {
			/* FI_WAIT_NONE (fi_eq(3) forbids sread: poll rather
			 * than fail) or progress that must be polled. */
			sched_yield();
			continue;
		}
		util_wait_arm(wait, &ticket);
		if (eq_queued(eq)) {
			util_wait_disarm(wait);
			continue;
		}
		ret = util_wait_block(wait, ticket, left);
		if (ret == -FI_ETIMEDOUT)
			continue; /* one last look, then -FI_EAGAIN */
		if (ret)
			return ret == -FI_EINTR ? -FI_EAGAIN : ret;
	}
}

static const char *util_eq_strerror(struct fid_eq *eq_fid, int prov_errno,
				    const void *err_data, char *buf, size_t len)
{
	struct util_eq *eq = util_eq_of(eq_fid);
	const char *str;

	if (eq->strerror)
		return eq->strerror(eq_fid, prov_errno, err_data, buf, len);
	str = fi_strerror(prov_errno < 0 ? -prov_errno : prov_errno);
	if (buf && len) {
		strncpy(buf, str, len - 1);
		buf[len - 1] = '\0';
		return buf;
	}
	return str;
}

int util_eq_control(struct fid *fid, int command, void *arg)
{
	struct util_eq *eq = container_of(fid, struct util_eq, eq_fid.fid);

	return util_waitable_control(&eq->waitable, command, arg);
}

static int util_eq_close(struct fid *fid)
{
	struct util_eq *eq = container_of(fid, struct util_eq, eq_fid.fid);
	int ret;

	ret = util_eq_fini(eq);
	if (ret)
		return ret;
	free(eq);
	return 0;
}

static const struct fi_ops util_eq_fi_ops = {
    .size = sizeof(struct fi_ops),
    .close = util_eq_close,
    .bind = weft_no_bind,
    .control = util_eq_control,
    .ops_open = weft_no_ops_open,
    .tostr = weft_no_tostr,
    .ops_set = weft_no_ops_set,
};

static const struct fi_ops_eq util_eq_ops = {
    .size = sizeof(struct fi_ops_eq),
    .read = util_eq_read,
    .readerr = util_eq_readerr,
    .write = util_eq_app_write,
    .sread = util_eq_sread,
    .strerror = util_eq_strerror,
};

int util_eq_init(struct util_eq *eq, struct util_fabric *fabric,
		 const struct fi_eq_attr *attr, void *context)
{
	static const struct fi_eq_attr defaults = {.wait_obj = FI_WAIT_NONE};
	uint32_t api;
	int ret;

	if (!attr)
		attr = &defaults;
	if (attr->wait_obj == FI_WAIT_SET && !attr->wait_set)
		return -FI_EINVAL;

	memset(eq, 0, sizeof(*eq));
	eq->fabric = fabric;
	eq->prov = fabric ? fabric->prov : &weft_core_prov;
	eq->flags = attr->flags;
	api = fabric ? fabric->fabric_fid.api_version : 0;
	eq->old_err_abi = api && api < FI_VERSION(1, 5);
	atomic_init(&eq->ref, 0);
	slist_init(&eq->events);
	slist_init(&eq->errors);
	eq->eq_fid.fid.fclass = FI_CLASS_EQ;
	eq->eq_fid.fid.context = context;
	/* The public fids take non-const ops; nothing writes through them. */
	eq->eq_fid.fid.ops = (struct fi_ops *)&util_eq_fi_ops;
	eq->eq_fid.ops = (struct fi_ops_eq *)&util_eq_ops;

	dlist_init(&eq->progress_list);
	pthread_mutex_init(&eq->progress_lock, NULL);
	ret = pthread_mutex_init(&eq->lock, NULL);
	if (ret)
		return weft_errno(ret);
	ret =
	    util_waitable_init(&eq->waitable, fabric, eq->prov, attr->wait_obj,
			       attr->wait_set, &eq->eq_fid.fid, eq_has_data);
	if (ret)
		goto err_destroy_lock;
	if (fabric)
		atomic_fetch_add(&fabric->ref, 1);
	return 0;

err_destroy_lock:
	pthread_mutex_destroy(&eq->lock);
	pthread_mutex_destroy(&eq->progress_lock);
	return ret;
}

int util_eq_fini(struct util_eq *eq)
{
	if (atomic_load_explicit(&eq->ref, memory_order_acquire) ||
	    util_waitable_busy(&eq->waitable))
		return -FI_EBUSY;

	util_waitable_fini(&eq->waitable);
	eq_release_held(eq);
	eq_free_list(&eq->events, true);
	eq_free_list(&eq->errors, false);
	pthread_mutex_destroy(&eq->lock);
	pthread_mutex_destroy(&eq->progress_lock);
	if (eq->fabric)
		atomic_fetch_sub(&eq->fabric->ref, 1);
	return 0;
}

int util_eq_open(struct util_fabric *fabric, const struct fi_eq_attr *attr,
		 struct fid_eq **eq_fid, void *context)
{
	struct util_eq *eq;
	int ret;

	eq = malloc(sizeof(*eq));
	if (!eq)
		return -FI_ENOMEM;
	ret = util_eq_init(eq, fabric, attr, context);
	if (ret)
		goto err_free_eq;
	*eq_fid = &eq->eq_fid;
	return 0;

err_free_eq:
	free(eq);
	return ret;
}

int util_eq_open_op(struct fid_fabric *fabric, struct fi_eq_attr *attr,
		    struct fid_eq **eq, void *context)
{
	return util_eq_open(
	    container_of(fabric, struct util_fabric, fabric_fid), attr, eq,
	    context);
}

ssize_t util_eq_write_cm(struct util_eq *eq, uint32_t event, fid_t fid,
			 struct fi_info *info, const void *cm, size_t cm_len)
{
	struct fi_eq_cm_entry *e;
	ssize_t ret;

	e = malloc(sizeof(*e) + cm_len);
	if (!e)
		return -FI_ENOMEM;
	e->fid = fid;
	e->info = info;
	if (cm_len)
		memcpy(e->data, cm, cm_len);
	ret = util_eq_write(eq, event, e, sizeof(*e) + cm_len, 0);
	free(e);
	return ret;
}

int util_eq_write_cm_err(struct util_eq *eq, fid_t fid, int err,
			 const void *cm, size_t cm_len)
{
	struct fi_eq_err_entry e = {
		.fid = fid,
		.err = err,
		.prov_errno = -err,
		.err_data = cm_len ? (void *)cm : NULL,
		.err_data_size = cm_len,
	};

	return util_eq_write_err(eq, &e);
}
