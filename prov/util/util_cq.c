/* SPDX-License-Identifier: BSD-2-Clause */
/* Completion queues (weft/util_cq.h). */
#include "weft/util_cq.h"
#include "weft/util_trigger.h"
#include "weft/compat.h"
#include "weft/stubs.h"

#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- formats ------------------------------------------------------------ */

static size_t util_cq_entry_size(enum fi_cq_format format)
{
	switch (format) {
	case FI_CQ_FORMAT_CONTEXT:
		return sizeof(struct fi_cq_entry);
	case FI_CQ_FORMAT_MSG:
		return sizeof(struct fi_cq_msg_entry);
	case FI_CQ_FORMAT_DATA:
		return sizeof(struct fi_cq_data_entry);
	case FI_CQ_FORMAT_TAGGED:
		return sizeof(struct fi_cq_tagged_entry);
	default:
		return 0;
	}
}

static inline void util_cq_copy(const struct util_cq *cq, void *dst,
				const struct util_cq_slot *slot)
{
	struct fi_cq_tagged_entry *t = dst;
	struct fi_cq_data_entry *d = dst;
	struct fi_cq_msg_entry *m = dst;
	struct fi_cq_entry *c = dst;

	switch (cq->format) {
	case FI_CQ_FORMAT_CONTEXT:
		c->op_context = slot->op_context;
		break;
	case FI_CQ_FORMAT_MSG:
		m->op_context = slot->op_context;
		m->flags = slot->flags;
		m->len = slot->len;
		break;
	case FI_CQ_FORMAT_DATA:
		d->op_context = slot->op_context;
		d->flags = slot->flags;
		d->len = slot->len;
		d->buf = slot->buf;
		d->data = slot->data;
		break;
	default:
		t->op_context = slot->op_context;
		t->flags = slot->flags;
		t->len = slot->len;
		t->buf = slot->buf;
		t->data = slot->data;
		t->tag = slot->tag;
		break;
	}
}

/* ---- writer side -------------------------------------------------------- */

int util_cq_write_overflow(struct util_cq *cq, const struct util_cq_slot *slot,
			   bool reserved)
{
	struct util_cq_overflow *node;
	int ret = 0;

	node = malloc(sizeof(*node));
	if (!node) {
		atomic_fetch_add(&cq->overrun_lost, 1);
		ret = -FI_ENOMEM;
		goto out;
	}
	node->slot = *slot;
	node->reserved = reserved;
	pthread_mutex_lock(&cq->overflow_lock);
	slist_insert_tail(&node->entry, &cq->overflow);
	atomic_fetch_add_explicit(&cq->overflow_count, 1, memory_order_release);
	pthread_mutex_unlock(&cq->overflow_lock);
	if (!cq->overrun_report) {
		/* Resource management hides the parking: no report. */
		util_cq_signal_wait(cq);
		return 0;
	}
	atomic_fetch_add(&cq->overrun_entries, 1);
out:
	if (!atomic_exchange(&cq->overrun_pending, true))
		FI_WARN(cq->domain ? cq->domain->prov : &weft_core_prov,
			FI_LOG_CQ, "CQ %p overrun: completions parked\n",
			(void *)cq);
	util_cq_signal_wait(cq);
	return ret;
}

int util_cq_write_err(struct util_cq *cq, const struct fi_cq_err_entry *err)
{
	struct util_cq_slot slot = {.src_addr = FI_ADDR_NOTAVAIL};
	struct util_cq_err *node;
	int ret;

	if (!err || !err->err)
		return -FI_EINVAL;
	node = calloc(1, sizeof(*node));
	if (!node)
		return -FI_ENOMEM;
	node->entry = *err;
	if (node->entry.err < 0)
		node->entry.err = -node->entry.err;
	node->entry.err_data = NULL;
	node->entry.err_data_size = 0;
	if (err->err_data && err->err_data_size) {
		node->entry.err_data = malloc(err->err_data_size);
		if (!node->entry.err_data) {
			ret = -FI_ENOMEM;
			goto err_free_node;
		}
		memcpy(node->entry.err_data, err->err_data, err->err_data_size);
		node->entry.err_data_size = err->err_data_size;
	}
	slot.op_context = err->op_context;
	slot.flags = err->flags;
	slot.len = err->len;
	slot.buf = err->buf;
	slot.data = err->data;
	slot.tag = err->tag;
	slot.err = node;

	if (atomic_load_explicit(&cq->overflow_count, memory_order_relaxed) ||
	    !util_cq_writer_free(cq)) {
		ret = util_cq_write_overflow(cq, &slot, false);
		if (ret)
			goto err_free_data;
		return 0;
	}
	util_cq_push(cq, &slot);
	return 0;

err_free_data:
	free(node->entry.err_data);
err_free_node:
	free(node);
	return ret;
}

int util_cq_reserve(struct util_cq *cq, size_t n)
{
	if (atomic_load_explicit(&cq->overflow_count, memory_order_relaxed))
		return -FI_EAGAIN;
	if (util_cq_writer_free(cq) < n)
		return -FI_EAGAIN;
	cq->ring->reserved += n;
	return 0;
}

void util_cq_unreserve(struct util_cq *cq, size_t n)
{
	struct util_cq_ring *ring = cq->ring;

	ring->reserved -= WEFT_MIN(n, ring->reserved);
}

/* ---- reader side -------------------------------------------------------- */

size_t util_cq_pending(struct util_cq *cq)
{
	struct util_cq_ring *ring = cq->ring;
	size_t head = atomic_load_explicit(&ring->head, memory_order_acquire);
	size_t tail = atomic_load_explicit(&ring->tail, memory_order_acquire);

	return tail - head + atomic_load(&cq->overflow_count) +
	       (atomic_load(&cq->overrun_pending) ? 1 : 0);
}

/*
 * Nothing to hand out (reader lock held): no entry in the ring or on the
 * overflow list, no overrun report owed or announced.  What
 * util_cq_read_locked would answer -FI_EAGAIN for, in a few loads.
 */
static inline bool util_cq_idle(struct util_cq *cq)
{
	struct util_cq_ring *ring = cq->ring;
	size_t head = atomic_load_explicit(&ring->head, memory_order_relaxed);

	return head == atomic_load_explicit(&ring->tail, memory_order_acquire) &&
	       !atomic_load_explicit(&cq->overflow_count,
				     memory_order_acquire) &&
	       !atomic_load_explicit(&cq->overrun_pending,
				     memory_order_acquire) &&
	       !cq->overrun_next;
}

/* About to sleep: arm the progress sources; true if events came. */
static bool util_cq_arm_sources(struct util_cq *cq)
{
	struct dlist_entry *item;
	bool came = false;

	dlist_foreach(&cq->progress_list, item)
	{
		struct util_progress *p =
		    container_of(item, struct util_progress, entry);

		if (p->arm && p->arm(p))
			came = true;
	}
	return came;
}

void util_cq_progress(struct util_cq *cq)
{
	struct dlist_entry *item;

	dlist_foreach(&cq->progress_list, item)
	{
		struct util_progress *p =
		    container_of(item, struct util_progress, entry);

		p->progress(p);
	}
}

/*
 * Copy up to count entries from the overflow list (the ring is empty).
 * Returns how many; *err_next tells whether an error entry stopped it.
 */
static size_t util_cq_read_overflow(struct util_cq *cq, char *dst, size_t count,
				    fi_addr_t *src_addr, bool *err_next)
{
	struct util_cq_overflow *node;
	size_t n = 0;

	*err_next = false;
	pthread_mutex_lock(&cq->overflow_lock);
	while (!slist_empty(&cq->overflow)) {
		node = container_of(cq->overflow.head, struct util_cq_overflow,
				    entry);
		if (node->slot.err) {
			*err_next = true;
			break;
		}
		if (n == count)
			break;
		util_cq_copy(cq, dst, &node->slot);
		if (src_addr)
			src_addr[n] = node->slot.src_addr;
		dst += cq->entry_size;
		n++;
		slist_remove_head(&cq->overflow);
		atomic_fetch_sub(&cq->overflow_count, 1);
		free(node);
	}
	pthread_mutex_unlock(&cq->overflow_lock);
	return n;
}

/*
 * fi_cq_readfrom with the reader lock held.  Returns the number copied
 * (0 only when count is 0 and entries wait), -FI_EAVAIL when an error
 * entry (or the overrun report) is next, -FI_EAGAIN when empty.
 */
static ssize_t util_cq_read_locked(struct util_cq *cq, void *buf, size_t count,
				   fi_addr_t *src_addr)
{
	struct util_cq_ring *ring = cq->ring;
	size_t head = atomic_load_explicit(&ring->head, memory_order_relaxed);
	size_t tail = ring->tail_cache;
	const struct util_cq_slot *slot = NULL;
	char *dst = buf;
	bool err_next;
	size_t n = 0;

	if (weft_unlikely(cq->overrun_next))
		return -FI_EAVAIL;
again:
	for (;;) {
		if (head == tail) {
			tail = atomic_load_explicit(&ring->tail,
						    memory_order_acquire);
			ring->tail_cache = tail;
			if (head == tail)
				break;
		}
		slot = &ring->slots[head & cq->mask];
		if (slot->err || n == count)
			break;
		util_cq_copy(cq, dst, slot);
		if (src_addr)
			src_addr[n] = slot->src_addr;
		dst += cq->entry_size;
		head++;
		n++;
	}
	if (n)
		atomic_store_explicit(&ring->head, head, memory_order_release);
	if (head != tail)
		return n ? (ssize_t)n : (slot->err ? -FI_EAVAIL : 0);

	/* The ring is empty: older entries may wait on the overflow list. */
	if (weft_unlikely(atomic_load_explicit(&cq->overflow_count,
					       memory_order_acquire))) {
		/*
		 * The writer published whatever it put in the ring before it
		 * parked its first entry: look again, or a ring entry written
		 * after our look but before the parking would come out late.
		 */
		tail = atomic_load_explicit(&ring->tail, memory_order_acquire);
		ring->tail_cache = tail;
		if (head != tail)
			goto again;
		n += util_cq_read_overflow(cq, dst, count - n,
					   src_addr ? src_addr + n : NULL,
					   &err_next);
		if (n)
			return n;
		return err_next ? -FI_EAVAIL : 0;
	}
	if (n)
		return n;
	if (weft_unlikely(atomic_load(&cq->overrun_pending))) {
		/* The report takes its place now: later entries follow it. */
		cq->overrun_next = true;
		return -FI_EAVAIL;
	}
	return -FI_EAGAIN;
}

static ssize_t util_cq_readfrom(struct fid_cq *cq_fid, void *buf, size_t count,
				fi_addr_t *src_addr)
{
	struct util_cq *cq = util_cq_from_fid(cq_fid);
	ssize_t ret;

	if (count && !buf)
		return -FI_EINVAL;
	weft_lock(&cq->lock);
	/* Completions waiting are handed out first: progress (a syscall
	 * for a socket transport) runs when the CQ is empty, and at least
	 * every 16th read so arrivals are never starved.  A read that finds
	 * nothing after progress answers at once: it is what a busy-polling
	 * reader does most. */
	if (util_cq_idle(cq) || !(++cq->read_skips & 15)) {
		util_cq_progress(cq);
		if (util_cq_idle(cq)) {
			weft_unlock(&cq->lock);
			/* Triggered operations due, posted with no lock
			 * held (their posts may write here). */
			util_trigger_run(cq->domain);
			return -FI_EAGAIN;
		}
	}
	ret = util_cq_read_locked(cq, buf, count, src_addr);
	weft_unlock(&cq->lock);
	return ret;
}

static ssize_t util_cq_read(struct fid_cq *cq_fid, void *buf, size_t count)
{
	return util_cq_readfrom(cq_fid, buf, count, NULL);
}

/* Hand an error entry to the application (fi_cq_readerr rules). */
static void util_cq_fill_err(const struct util_cq *cq,
			     struct fi_cq_err_entry *buf,
			     const struct util_cq_err *node)
{
	const struct fi_cq_err_entry *e = &node->entry;
	bool has_size = FI_VERSION_GE(cq->api_version, FI_VERSION(1, 5));
	void *user_data = buf->err_data;
	size_t user_size = has_size ? buf->err_data_size : 0;
	size_t n;

	buf->op_context = e->op_context;
	buf->flags = e->flags;
	buf->len = e->len;
	buf->buf = e->buf;
	buf->data = e->data;
	buf->tag = e->tag;
	buf->olen = e->olen;
	buf->err = e->err;
	buf->prov_errno = e->prov_errno;
	/*
	 * 1.20 put src_addr after err_data_size: for a caller of 1.20 or
	 * later, FI_ADDR_NOTAVAIL (weft has no FI_AV_AUTH_KEY); an older
	 * caller's entry ends before it.
	 */
	if (FI_VERSION_GE(cq->api_version, FI_VERSION(1, 20)))
		weft_cq_err_tail(buf)->src_addr = FI_ADDR_NOTAVAIL;
	if (user_size && user_data) {
		/* 1.5+: copy into the caller's buffer. */
		n = WEFT_MIN(user_size, e->err_data_size);
		if (n)
			memcpy(user_data, e->err_data, n);
		buf->err_data_size = n;
		return;
	}
	/* Lend our copy, valid until the next fi_cq_readerr. */
	buf->err_data = e->err_data;
	if (has_size)
		buf->err_data_size = e->err_data_size;
}

static void util_cq_free_err(struct util_cq *cq, struct util_cq_err *node)
{
	if (!node || node == &cq->overrun_err)
		return;
	free(node->entry.err_data);
	free(node);
}

/* The FI_EOVERRUN report, built when it is handed out. */
static struct util_cq_err *util_cq_take_overrun(struct util_cq *cq)
{
	struct util_cq_err *node = &cq->overrun_err;

	cq->overrun_next = false;
	atomic_exchange(&cq->overrun_pending, false);
	memset(&node->entry, 0, sizeof(node->entry));
	node->entry.err = FI_EOVERRUN;
	node->entry.data = atomic_exchange(&cq->overrun_entries, 0);
	node->entry.olen = atomic_exchange(&cq->overrun_lost, 0);
	return node;
}

/* Pop the error at the head of the overflow list; NULL if not an error. */
static struct util_cq_err *util_cq_pop_overflow_err(struct util_cq *cq)
{
	struct util_cq_overflow *ovf;
	struct util_cq_err *node;

	pthread_mutex_lock(&cq->overflow_lock);
	ovf = container_of(cq->overflow.head, struct util_cq_overflow, entry);
	node = ovf->slot.err;
	if (node) {
		slist_remove_head(&cq->overflow);
		atomic_fetch_sub(&cq->overflow_count, 1);
		free(ovf);
	}
	pthread_mutex_unlock(&cq->overflow_lock);
	return node;
}

/*
 * The error entry that comes next, taken off the queue; NULL when the
 * next entry is a success or there is none.  Reader lock held.
 */
static struct util_cq_err *util_cq_pop_err(struct util_cq *cq)
{
	struct util_cq_ring *ring = cq->ring;
	struct util_cq_err *node;
	size_t head, tail;

	if (cq->overrun_next)
		return util_cq_take_overrun(cq);
	head = atomic_load_explicit(&ring->head, memory_order_relaxed);
	tail = atomic_load_explicit(&ring->tail, memory_order_acquire);
	if (head == tail &&
	    atomic_load_explicit(&cq->overflow_count, memory_order_acquire)) {
		/* Ring entries published before the parking come first. */
		tail = atomic_load_explicit(&ring->tail, memory_order_acquire);
		if (head == tail)
			return util_cq_pop_overflow_err(cq);
	}
	ring->tail_cache = tail;
	if (head != tail) {
		node = ring->slots[head & cq->mask].err;
		if (node)
			atomic_store_explicit(&ring->head, head + 1,
					      memory_order_release);
		return node;
	}
	if (atomic_load(&cq->overrun_pending))
		return util_cq_take_overrun(cq);
	return NULL;
}

static ssize_t util_cq_readerr(struct fid_cq *cq_fid,
			       struct fi_cq_err_entry *buf, uint64_t flags)
{
	struct util_cq *cq = util_cq_from_fid(cq_fid);
	struct util_cq_err *node;

	if (!buf)
		return -FI_EINVAL;
	weft_lock(&cq->lock);
	util_cq_free_err(cq, cq->last_err);
	cq->last_err = NULL;
	node = util_cq_pop_err(cq);
	if (node) {
		util_cq_fill_err(cq, buf, node);
		cq->last_err = node;
	}
	weft_unlock(&cq->lock);
	return node ? 1 : -FI_EAGAIN;
}

static size_t util_cq_threshold(struct util_cq *cq, const void *cond,
				size_t count)
{
	size_t threshold = 1;

	if (cq->wait_cond == FI_CQ_COND_THRESHOLD && cond)
		threshold = *(const size_t *)cond;
	threshold = WEFT_MIN(threshold, count);
	return threshold ? threshold : 1;
}

static ssize_t util_cq_sreadfrom(struct fid_cq *cq_fid, void *buf, size_t count,
				 fi_addr_t *src_addr, const void *cond,
				 int timeout)
{
	struct util_cq *cq = util_cq_from_fid(cq_fid);
	struct util_wait *wait = util_cq_wait(cq);
	size_t threshold = util_cq_threshold(cq, cond, count);
	uint64_t deadline = util_wait_deadline(timeout);
	bool expired = false;
	unsigned int ticket;
	ssize_t ret;
	bool came;
	int rem;

	if (!wait || cq->waitable.wait_obj == FI_WAIT_SET)
		return -FI_EINVAL;
	if (count && !buf)
		return -FI_EINVAL;
	for (;;) {
		util_trigger_run(cq->domain);
		weft_lock(&cq->lock);
		util_cq_progress(cq);
		if (expired || util_cq_pending(cq) >= threshold) {
			ret = util_cq_read_locked(cq, buf, count, src_addr);
			if (ret != -FI_EAGAIN || expired) {
				weft_unlock(&cq->lock);
				return ret;
			}
		}
		weft_unlock(&cq->lock);
		if (atomic_exchange(&cq->signalled, false))
			return -FI_EAGAIN;

		util_wait_arm(wait, &ticket);
		if (util_cq_pending(cq) >= threshold ||
		    atomic_load(&cq->signalled)) {
			util_wait_disarm(wait);
			continue;
		}
		weft_lock(&cq->lock);
		came = util_cq_arm_sources(cq);
		weft_unlock(&cq->lock);
		if (came) {
			util_wait_disarm(wait);
			continue;
		}
		rem = util_wait_remaining(deadline);
		if (cq->npolled) {
			/* A progress source that cannot wake us: poll it. */
			util_wait_disarm(wait);
			if (!rem)
				expired = true;
			else
				sched_yield();
			continue;
		}
		ret = util_wait_block(wait, ticket, rem);
		if (ret == -FI_ETIMEDOUT)
			expired = true;
		else if (ret)
			return ret;
	}
}

static ssize_t util_cq_sread(struct fid_cq *cq_fid, void *buf, size_t count,
			     const void *cond, int timeout)
{
	return util_cq_sreadfrom(cq_fid, buf, count, NULL, cond, timeout);
}

static int util_cq_signal(struct fid_cq *cq_fid)
{
	struct util_cq *cq = util_cq_from_fid(cq_fid);
	struct util_wait *wait = util_cq_wait(cq);

	if (!wait)
		return -FI_EINVAL;
	atomic_store(&cq->signalled, true);
	util_wait_signal_slow(wait);
	return 0;
}

static const char *util_cq_strerror_op(struct fid_cq *cq_fid, int prov_errno,
				       const void *err_data, char *buf,
				       size_t len)
{
	struct util_cq *cq = util_cq_from_fid(cq_fid);
	const char *str;

	if (cq->strerror)
		return cq->strerror(cq_fid, prov_errno, err_data, buf, len);
	str = fi_strerror(prov_errno < 0 ? -prov_errno : prov_errno);
	if (buf && len) {
		snprintf(buf, len, "%s", str);
		return buf;
	}
	return str;
}

/* ---- the object --------------------------------------------------------- */

static bool util_cq_has_data(struct util_waitable *waitable)
{
	struct util_cq *cq = container_of(waitable, struct util_cq, waitable);

	weft_lock(&cq->lock);
	util_cq_progress(cq);
	weft_unlock(&cq->lock);
	return util_cq_pending(cq) > 0;
}

static bool util_cq_arm(struct util_waitable *waitable)
{
	struct util_cq *cq = container_of(waitable, struct util_cq, waitable);
	bool came;

	weft_lock(&cq->lock);
	came = util_cq_arm_sources(cq);
	weft_unlock(&cq->lock);
	return came;
}

static int util_cq_close(struct fid *fid)
{
	struct util_cq *cq = container_of(fid, struct util_cq, cq_fid.fid);
	int ret;

	ret = util_cq_fini(cq);
	if (ret)
		return ret;
	if (cq->allocated)
		free(cq);
	return 0;
}

static int util_cq_control(struct fid *fid, int command, void *arg)
{
	struct util_cq *cq = container_of(fid, struct util_cq, cq_fid.fid);

	return util_waitable_control(&cq->waitable, command, arg);
}

static const struct fi_ops util_cq_fi_ops = {
    .size = sizeof(struct fi_ops),
    .close = util_cq_close,
    .bind = weft_no_bind,
    .control = util_cq_control,
    .ops_open = weft_no_ops_open,
    .tostr = weft_no_tostr,
    .ops_set = weft_no_ops_set,
};

static const struct fi_ops_cq util_cq_ops = {
    .size = sizeof(struct fi_ops_cq),
    .read = util_cq_read,
    .readfrom = util_cq_readfrom,
    .readerr = util_cq_readerr,
    .sread = util_cq_sread,
    .sreadfrom = util_cq_sreadfrom,
    .signal = util_cq_signal,
    .strerror = util_cq_strerror_op,
};

static size_t util_cq_roundup(size_t size)
{
	size_t cap = 1;

	while (cap < size)
		cap <<= 1;
	return cap;
}

int util_cq_init(struct util_cq *cq, struct util_domain *domain,
		 const struct fi_cq_attr *attr, void *context)
{
	static const struct fi_cq_attr defaults = {
	    .format = FI_CQ_FORMAT_CONTEXT,
	    .wait_obj = FI_WAIT_NONE,
	};
	bool needs_lock = util_domain_needs_lock(domain);
	size_t size, cap;
	void *mem;
	int ret;

	memset(cq, 0, sizeof(*cq));
	if (!attr)
		attr = &defaults;
	if (attr->flags & ~FI_AFFINITY)
		return -FI_EBADFLAGS;
	if (attr->wait_cond != FI_CQ_COND_NONE &&
	    attr->wait_cond != FI_CQ_COND_THRESHOLD)
		return -FI_EINVAL;
	cq->format = attr->format == FI_CQ_FORMAT_UNSPEC ? FI_CQ_FORMAT_CONTEXT
							 : attr->format;
	cq->entry_size = util_cq_entry_size(cq->format);
	if (!cq->entry_size)
		return -FI_EINVAL;
	size = attr->size ? attr->size : UTIL_CQ_DEFAULT_SIZE;
	if (size > UTIL_CQ_MAX_SIZE)
		return -FI_EINVAL;
	cap = util_cq_roundup(size);

	cq->domain = domain;
	cq->wait_cond = attr->wait_cond;
	cq->overrun_report = domain && domain->resource_mgmt == FI_RM_DISABLED;
	cq->mask = cap - 1;
	cq->api_version =
	    domain && domain->fabric && domain->fabric->fabric_fid.api_version
		? domain->fabric->fabric_fid.api_version
		: WEFT_API_VERSION_UNSAID;
	cq->cq_fid.fid.fclass = FI_CLASS_CQ;
	cq->cq_fid.fid.context = context;
	/* The public tables are not const; weft never writes through them. */
	cq->cq_fid.fid.ops = (struct fi_ops *)&util_cq_fi_ops;
	cq->cq_fid.ops = (struct fi_ops_cq *)&util_cq_ops;
	dlist_init(&cq->progress_list);
	slist_init(&cq->overflow);
	atomic_init(&cq->overflow_count, 0);
	atomic_init(&cq->overrun_entries, 0);
	atomic_init(&cq->overrun_lost, 0);
	atomic_init(&cq->overrun_pending, false);
	atomic_init(&cq->signalled, false);
	atomic_init(&cq->bind_count, 0);

	ret = posix_memalign(&mem, WEFT_CACHELINE,
			     sizeof(*cq->ring) +
				 cap * sizeof(cq->ring->slots[0]));
	if (ret)
		return -FI_ENOMEM;
	cq->ring = mem;
	memset(cq->ring, 0, sizeof(*cq->ring));
	atomic_init(&cq->ring->tail, 0);
	atomic_init(&cq->ring->head, 0);

	ret = weft_lock_init(&cq->lock, needs_lock);
	if (ret)
		goto err_free_ring;
	/* Progress threads (FI_PROGRESS_AUTO) write from their own thread. */
	ret = weft_lock_init(&cq->write_lock,
			     needs_lock || (domain && domain->data_progress ==
							  FI_PROGRESS_AUTO));
	if (ret)
		goto err_destroy_lock;
	ret = pthread_mutex_init(&cq->overflow_lock, NULL);
	if (ret) {
		ret = weft_errno(ret);
		goto err_destroy_write_lock;
	}
	ret = util_waitable_init(&cq->waitable, domain ? domain->fabric : NULL,
				 domain ? domain->prov : NULL, attr->wait_obj,
				 attr->wait_set, &cq->cq_fid.fid,
				 util_cq_has_data);
	if (ret)
		goto err_destroy_overflow_lock;
	cq->waitable.arm = util_cq_arm;
	util_domain_get(domain);
	return 0;

err_destroy_overflow_lock:
	pthread_mutex_destroy(&cq->overflow_lock);
err_destroy_write_lock:
	weft_lock_destroy(&cq->write_lock);
err_destroy_lock:
	weft_lock_destroy(&cq->lock);
err_free_ring:
	free(cq->ring);
	cq->ring = NULL;
	return ret;
}

int util_cq_fini(struct util_cq *cq)
{
	struct util_cq_ring *ring = cq->ring;
	struct util_cq_overflow *ovf;
	struct slist_entry *e;
	size_t head, tail;

	if (atomic_load(&cq->bind_count) || util_waitable_busy(&cq->waitable))
		return -FI_EBUSY;
	util_waitable_fini(&cq->waitable);
	head = atomic_load(&ring->head);
	tail = atomic_load(&ring->tail);
	for (; head != tail; head++)
		util_cq_free_err(cq, ring->slots[head & cq->mask].err);
	while ((e = slist_remove_head(&cq->overflow))) {
		ovf = container_of(e, struct util_cq_overflow, entry);
		util_cq_free_err(cq, ovf->slot.err);
		free(ovf);
	}
	util_cq_free_err(cq, cq->last_err);
	cq->last_err = NULL;
	pthread_mutex_destroy(&cq->overflow_lock);
	weft_lock_destroy(&cq->write_lock);
	weft_lock_destroy(&cq->lock);
	free(ring);
	cq->ring = NULL;
	util_domain_put(cq->domain);
	return 0;
}

int util_cq_open(struct util_domain *domain, const struct fi_cq_attr *attr,
		 struct util_cq **cq_out, void *context)
{
	struct util_cq *cq;
	int ret;

	if (!cq_out)
		return -FI_EINVAL;
	cq = malloc(sizeof(*cq));
	if (!cq)
		return -FI_ENOMEM;
	ret = util_cq_init(cq, domain, attr, context);
	if (ret)
		goto err_free;
	cq->allocated = true;
	*cq_out = cq;
	return 0;

err_free:
	free(cq);
	return ret;
}

int util_cq_open_op(struct fid_domain *domain_fid, struct fi_cq_attr *attr,
		    struct fid_cq **cq_fid, void *context)
{
	struct util_domain *domain =
	    container_of(domain_fid, struct util_domain, domain_fid);
	struct util_cq *cq;
	int ret;

	ret = util_cq_open(domain, attr, &cq, context);
	if (ret)
		return ret;
	*cq_fid = &cq->cq_fid;
	return 0;
}

int util_cq_bind(struct util_cq *cq, struct util_progress *progress)
{
	weft_lock(&cq->lock);
	if (progress) {
		dlist_insert_tail(&progress->entry, &cq->progress_list);
		if (progress->polled)
			cq->npolled++;
		atomic_store(&cq->waitable.polled, cq->npolled > 0);
	}
	atomic_fetch_add(&cq->bind_count, 1);
	weft_unlock(&cq->lock);
	return 0;
}

void util_cq_unbind(struct util_cq *cq, struct util_progress *progress)
{
	weft_lock(&cq->lock);
	if (progress) {
		dlist_remove(&progress->entry);
		if (progress->polled)
			cq->npolled--;
		atomic_store(&cq->waitable.polled, cq->npolled > 0);
	}
	atomic_fetch_sub(&cq->bind_count, 1);
	weft_unlock(&cq->lock);
}
