/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Completion queues shared by every provider.
 *
 * A provider opens a CQ with util_cq_open (or embeds struct util_cq and
 * calls util_cq_init), binds its endpoints with util_cq_bind, and reports
 * completions with util_cq_write / util_cq_write_err.  The application
 * side (fi_cq_read, readfrom, readerr, sread, sreadfrom, signal,
 * strerror, fi_control) is implemented here once.
 *
 * Storage: a power-of-two ring of 64-byte slots, one slot per completion
 * whatever the format; the format is applied when the application reads.
 * Error completions take a slot too, in order: fi_cq_read returns the
 * entries before an error and then -FI_EAVAIL until fi_cq_readerr takes
 * it.  (fi_cq_readerr returns -FI_EAGAIN while the next entry is not an
 * error.)
 *
 * Ownership of the ring:
 *   writer (the provider)  owns tail, head_cache and reserved; fills a
 *                          slot, then publishes it with a release store
 *                          of tail.
 *   reader (the app)       owns head and tail_cache; loads tail with
 *                          acquire, copies slots out, then frees them
 *                          with a release store of head.
 * The two sides live on separate cache lines.  Neither takes a lock,
 * allocates or makes a syscall on the fast path; the writer pays one
 * memory fence when the CQ has a wait object, and makes a syscall (an
 * eventfd write) only when a thread may be blocked in sread / fi_wait or
 * an exported fd needs re-arming; once an application has taken a
 * MUTEX_COND object with FI_GETWAIT, every write also broadcasts its
 * condition variable under its mutex (see weft/util_wait.h).
 *
 * Threading contract:
 *   - Writer-side calls (util_cq_write*, util_cq_reserve, _unreserve) are
 *     serialised by the provider.  A provider whose endpoints write to one
 *     CQ from different threads brackets them with util_cq_writer_lock /
 *     _unlock (a real lock only under FI_THREAD_SAFE).
 *   - Reader-side calls (the fi_ops_cq ops) are serialised by the CQ's
 *     weft_lock under FI_THREAD_SAFE, by the application otherwise.
 *     Progress callbacks run with that lock held.
 *
 * Space and overrun (fi_domain(3) "Resource Management", fi_cq(3) NOTES):
 *   - Operations the provider posts on behalf of the application reserve
 *     their completion slot first: util_cq_reserve(cq, 1) returns
 *     -FI_EAGAIN when the CQ could overrun, and the provider fails the
 *     post with -FI_EAGAIN.  The completion is later written with
 *     util_cq_write_reserved (or the slot is given back with
 *     util_cq_unreserve, e.g. before util_cq_write_err for a failed op).
 *   - Unsolicited completions (remote CQ data, errors of unposted work)
 *     and those of posted receives use util_cq_write, which takes a slot
 *     that nobody reserved.  When none is free, the completion goes to an
 *     overflow list (allocated, in order) instead of being lost: every
 *     completion is still delivered in order.  While the list is not
 *     empty, later writes append to it too, to keep the order, and
 *     util_cq_reserve fails with -FI_EAGAIN.
 *   - Under FI_RM_ENABLED (the default) that parking is the provider's
 *     own business, hidden from the application as fi_domain(3) asks:
 *     nothing is reported unless a completion was lost for lack of
 *     memory.  Under FI_RM_DISABLED, and whenever one was lost, the CQ
 *     enters the overrun state: once the ring and the list are empty,
 *     fi_cq_read returns -FI_EAVAIL until fi_cq_readerr takes the report:
 *     err = FI_EOVERRUN (op_context NULL), data = the number of
 *     completions that overflowed and olen = the number lost (0 unless
 *     malloc failed).  A receive-heavy application (an MPI library
 *     posting more receives than its CQ has slots) must not see it: it
 *     cannot tell it from the failure of an operation of its own.
 *
 * Manual progress: endpoints bind a struct util_progress (util_wait.h); fi_cq_read,
 * readfrom, sread, sreadfrom and the wait-set / poll-set "has data" check
 * call every bound progress function before looking for entries.  A
 * progress source whose events cannot wake the CQ's wait object (no fd
 * added with util_wait_add_fd and no signal from its own thread) sets
 * `polled`: sread, fi_wait on the CQ's wait set then poll it with
 * sched_yield instead of sleeping, and fi_trywait answers -FI_EAGAIN.
 *
 * fi_cq_signal sets a one-shot flag and wakes the wait object: a thread
 * blocked in sread (or the next one to call it, if none was blocked)
 * returns -FI_EAGAIN unless completions are available.  (A CQ attached to
 * a wait set cannot be read with sread; fi_wait on the set returns only
 * for data.)
 */
#ifndef WEFT_UTIL_CQ_H
#define WEFT_UTIL_CQ_H

#include <assert.h>
#include <stdatomic.h>
#include <pthread.h>

#include "weft/ofi.h"

#include "weft/core.h"
#include "weft/list.h"
#include "weft/lock.h"
#include "weft/util_domain.h"
#include "weft/util_wait.h"

#define UTIL_CQ_DEFAULT_SIZE 1024
#define UTIL_CQ_MAX_SIZE (1u << 24)

struct util_cq_err;

/* One completion as the provider wrote it; 64 bytes, one cache line. */
struct util_cq_slot {
	void *op_context;
	uint64_t flags;
	size_t len;
	void *buf;
	uint64_t data;
	uint64_t tag;
	fi_addr_t src_addr;
	struct util_cq_err *err; /* non-NULL: an error completion */
};
static_assert(sizeof(struct util_cq_slot) == 64, "CQ slot is a cache line");

/* An error completion: the entry and a private copy of its err_data. */
struct util_cq_err {
	struct fi_cq_err_entry entry; /* entry.err_data = the copy, or NULL */
};

/* A completion parked by the overrun path. */
struct util_cq_overflow {
	struct slist_entry entry;
	struct util_cq_slot slot;
	bool reserved; /* it consumed a reservation */
};

struct util_cq_ring {
	/* Writer's line. */
	atomic_size_t tail weft_cacheline_aligned; /* next slot to fill */
	size_t head_cache; /* writer's last view of head */
	size_t reserved;   /* slots promised by util_cq_reserve */
	/* Reader's line. */
	atomic_size_t head weft_cacheline_aligned; /* next slot to read */
	size_t tail_cache; /* reader's last view of tail */
	struct util_cq_slot slots[] weft_cacheline_aligned;
};

/* Provider text for fi_cq_strerror; NULL in util_cq means the default. */
typedef const char *(*util_cq_strerror_fn)(struct fid_cq *cq, int prov_errno,
					   const void *err_data, char *buf,
					   size_t len);

struct util_cq {
	struct fid_cq cq_fid;
	struct util_domain *domain;
	struct util_waitable waitable;
	enum fi_cq_format format; /* resolved, never UNSPEC */
	enum fi_cq_wait_cond wait_cond;
	size_t entry_size;	      /* of the application's format */
	uint32_t api_version;	      /* err_data rules of fi_cq_readerr */
	util_cq_strerror_fn strerror; /* set by the provider, may be NULL */
	bool allocated;		      /* by util_cq_open: freed on close */

	struct util_cq_ring *ring;
	size_t mask; /* capacity - 1 */

	struct weft_lock lock;		  /* readers, progress list, last_err */
	struct weft_lock write_lock;	  /* see util_cq_writer_lock */
	struct dlist_entry progress_list; /* struct util_progress */
	unsigned int read_skips;	  /* reads that found entries waiting */
	size_t npolled;			  /* bound sources with polled set */
	struct util_cq_err *last_err;	  /* its err_data lent to the app */

	/* Overrun path, rarely touched. */
	atomic_size_t overflow_count; /* entries on `overflow` */
	pthread_mutex_t overflow_lock;
	struct slist overflow;
	atomic_size_t overrun_entries; /* overflowed since last report */
	atomic_size_t overrun_lost;    /* lost (no memory) since last report */
	atomic_bool overrun_pending;   /* an FI_EOVERRUN report is owed */
	bool overrun_report; /* FI_RM_DISABLED: report every overflow */
	bool overrun_next; /* reader: fi_cq_read announced the report */
	struct util_cq_err overrun_err; /* handed out by readerr */

	atomic_bool signalled; /* fi_cq_signal, consumed by sread */
	atomic_int bind_count; /* endpoints bound: fi_close -> -FI_EBUSY */
};

/* ---- opening and closing ------------------------------------------------ */

/*
 * Initialise a CQ in place for `domain` (takes a domain reference) from
 * the application's attributes: size (0: UTIL_CQ_DEFAULT_SIZE, rounded up
 * to a power of two), format (UNSPEC: FI_CQ_FORMAT_CONTEXT), wait_obj
 * (NONE, UNSPEC, FD, POLLFD, YIELD, MUTEX_COND, SET with wait_set),
 * wait_cond (NONE, THRESHOLD), flags (FI_AFFINITY is accepted, the
 * signaling vector ignored).  attr NULL means all defaults.  Sets
 * cq_fid.fid.ops and cq_fid.ops to the util tables; a provider may
 * replace fid.ops (its close then calls util_cq_fini).  Called from the
 * provider's cq_open; never blocks.  Returns 0, -FI_EINVAL, -FI_EBADFLAGS,
 * -FI_ENOMEM or a translated errno.
 */
int util_cq_init(struct util_cq *cq, struct util_domain *domain,
		 const struct fi_cq_attr *attr, void *context);

/*
 * Release a CQ: -FI_EBUSY while endpoints are bound or a poll set holds
 * it; otherwise frees the ring and any unread entries and drops the
 * domain reference.  Does not free `cq`.
 */
int util_cq_fini(struct util_cq *cq);

/* util_cq_init on an allocation that fi_close frees.  *cq on success. */
int util_cq_open(struct util_domain *domain, const struct fi_cq_attr *attr,
		 struct util_cq **cq, void *context);

/*
 * fi_ops_domain.cq_open for a provider whose domain embeds struct
 * util_domain at domain_fid.
 */
int util_cq_open_op(struct fid_domain *domain, struct fi_cq_attr *attr,
		    struct fid_cq **cq, void *context);

static inline struct util_cq *util_cq_from_fid(struct fid_cq *cq_fid)
{
	return container_of(cq_fid, struct util_cq, cq_fid);
}

/* The CQ's wait object (NULL for FI_WAIT_NONE; a wait set's when
 * FI_WAIT_SET): providers add their fds to it with util_wait_add_fd. */
static inline struct util_wait *util_cq_wait(struct util_cq *cq)
{
	return cq->waitable.wait;
}

/* ---- endpoints ---------------------------------------------------------- */

/*
 * Record that an endpoint is bound (fi_ep_bind), with its progress
 * source (NULL if it has none).  Takes the reader lock; never blocks
 * otherwise.  Returns 0.
 */
int util_cq_bind(struct util_cq *cq, struct util_progress *progress);

/* Undo util_cq_bind (endpoint close).  Takes the reader lock. */
void util_cq_unbind(struct util_cq *cq, struct util_progress *progress);

/* Run the bound progress functions.  Called with the reader lock held. */
void util_cq_progress(struct util_cq *cq);

/* ---- writer side (provider) --------------------------------------------- */

static inline void util_cq_writer_lock(struct util_cq *cq)
{
	weft_lock(&cq->write_lock);
}

static inline void util_cq_writer_unlock(struct util_cq *cq)
{
	weft_unlock(&cq->write_lock);
}

/* Park a completion on the overflow list; the slow half of the writes. */
int util_cq_write_overflow(struct util_cq *cq, const struct util_cq_slot *slot,
			   bool reserved);

/* Wake sread / fi_wait after publishing (they re-check their condition). */
static inline void util_cq_signal_wait(struct util_cq *cq)
{
	util_waitable_signal(&cq->waitable);
}

static inline size_t util_cq_capacity(const struct util_cq *cq)
{
	return cq->mask + 1;
}

/* Slots neither filled nor reserved, as the writer sees them. */
static inline size_t util_cq_writer_free(struct util_cq *cq)
{
	struct util_cq_ring *ring = cq->ring;
	size_t tail = atomic_load_explicit(&ring->tail, memory_order_relaxed);
	size_t used = tail - ring->head_cache;

	if (used + ring->reserved >= util_cq_capacity(cq)) {
		ring->head_cache =
		    atomic_load_explicit(&ring->head, memory_order_acquire);
		used = tail - ring->head_cache;
	}
	return util_cq_capacity(cq) - used - ring->reserved;
}

/* Fill and publish the next slot; the caller made sure there is room. */
static inline void util_cq_push(struct util_cq *cq,
				const struct util_cq_slot *slot)
{
	struct util_cq_ring *ring = cq->ring;
	size_t tail = atomic_load_explicit(&ring->tail, memory_order_relaxed);

	ring->slots[tail & cq->mask] = *slot;
	atomic_store_explicit(&ring->tail, tail + 1, memory_order_release);
	util_cq_signal_wait(cq);
}

/*
 * Report one successful completion nobody reserved a slot for.  Writer
 * side; never blocks.  src_addr is FI_ADDR_NOTAVAIL when unknown.
 * Returns 0 (the completion is queued, in the ring or on the overflow
 * list) or -FI_ENOMEM when even the overflow list could not take it (it
 * is then counted as lost in the FI_EOVERRUN report).
 */
static inline int util_cq_write(struct util_cq *cq, void *context,
				uint64_t flags, size_t len, void *buf,
				uint64_t data, uint64_t tag, fi_addr_t src_addr)
{
	struct util_cq_slot slot = {
	    .op_context = context,
	    .flags = flags,
	    .len = len,
	    .buf = buf,
	    .data = data,
	    .tag = tag,
	    .src_addr = src_addr,
	};

	if (weft_unlikely(atomic_load_explicit(&cq->overflow_count,
					       memory_order_relaxed) ||
			  !util_cq_writer_free(cq)))
		return util_cq_write_overflow(cq, &slot, false);
	util_cq_push(cq, &slot);
	return 0;
}

/*
 * Report a completion whose slot util_cq_reserve promised.  Same contract
 * as util_cq_write; the reservation is consumed.
 */
static inline int util_cq_write_reserved(struct util_cq *cq, void *context,
					 uint64_t flags, size_t len, void *buf,
					 uint64_t data, uint64_t tag,
					 fi_addr_t src_addr)
{
	struct util_cq_slot slot = {
	    .op_context = context,
	    .flags = flags,
	    .len = len,
	    .buf = buf,
	    .data = data,
	    .tag = tag,
	    .src_addr = src_addr,
	};

	assert(cq->ring->reserved > 0);
	cq->ring->reserved--;
	if (weft_unlikely(atomic_load_explicit(&cq->overflow_count,
					       memory_order_relaxed)))
		return util_cq_write_overflow(cq, &slot, true);
	util_cq_push(cq, &slot);
	return 0;
}

/*
 * Report a failed operation.  err->err is the positive FI_E* code;
 * err->err_data (err_data_size bytes) is copied, the caller keeps its
 * buffer.  Takes an unreserved slot like util_cq_write (give a
 * reservation back first with util_cq_unreserve).  Writer side; allocates
 * (not a fast path).  Returns 0, -FI_EINVAL (err->err == 0) or
 * -FI_ENOMEM.
 */
int util_cq_write_err(struct util_cq *cq, const struct fi_cq_err_entry *err);

/*
 * Promise n slots to operations being posted.  Writer side.  Returns 0,
 * or -FI_EAGAIN when the ring could not hold them besides what it holds
 * and has promised (the post must fail with -FI_EAGAIN).
 */
int util_cq_reserve(struct util_cq *cq, size_t n);

/* Give back n promised slots (operations that will report no success). */
void util_cq_unreserve(struct util_cq *cq, size_t n);

/* ---- reader side helpers ------------------------------------------------ */

/* Entries (success or error) waiting to be read, overrun report included. */
size_t util_cq_pending(struct util_cq *cq);

#endif /* WEFT_UTIL_CQ_H */
