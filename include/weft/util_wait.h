/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Wait objects: what a CQ, EQ or counter blocks on, and what an application
 * gets back from fi_control(FI_GETWAIT).  Also the application wait set of
 * fi_wait_open / fi_wait, and fi_trywait.
 *
 * Two structures:
 *
 *  struct util_wait      one wait object.  Either embedded in an event
 *                        object (its private FI_WAIT_FD, _POLLFD, _YIELD or
 *                        _MUTEX_COND object) or allocated by fi_wait_open
 *                        as an application wait set that several objects
 *                        share.  Its wait_obj is always resolved: never
 *                        FI_WAIT_UNSPEC and never FI_WAIT_SET.
 *
 *  struct util_waitable  what every CQ, EQ and counter embeds.  It resolves
 *                        the attr's wait_obj / wait_set into the util_wait
 *                        in use (NULL for FI_WAIT_NONE), and registers the
 *                        object with a wait set under a "has data"
 *                        callback, so that fi_wait on the set, fi_trywait
 *                        and poll sets can ask each object whether it has
 *                        something to read.
 *
 * Signalling protocol (no lost wake-ups, no syscall when nobody waits):
 *
 *   producer                          consumer (sread, fi_wait, cntr wait)
 *   --------                          ------------------------------------
 *   publish the event (store)         util_wait_arm(wait, &ticket)
 *   util_wait_signal(wait)            if (has data) {
 *                                             util_wait_disarm(wait);
 *                                             return it;
 *                                     }
 *                                     util_wait_block(wait, ticket, timeout)
 *                                     loop
 *
 * util_wait_arm announces a waiter and, for fd-based objects, drains the fd;
 * both sides pass a sequentially consistent fence, so either the consumer's
 * check sees the event or the producer sees the waiter and wakes it.
 * util_wait_signal is an inline fence and two loads while nobody waits and
 * no application fd needs re-arming.
 *
 * FI_WAIT_UNSPEC resolves to FI_WAIT_FD (an epoll fd the application can
 * poll).  Every blocking kind (FD, POLLFD, MUTEX_COND) blocks internally in
 * poll() on an eventfd plus the fds providers add; MUTEX_COND also
 * broadcasts its condition variable for applications that took it with
 * FI_GETWAIT.  YIELD spins with sched_yield and polls provider fds with a
 * zero timeout.
 *
 * Example: a counter.
 *
 *	struct util_cntr {
 *		struct fid_cntr cntr_fid;
 *		struct util_waitable waitable;
 *		atomic_uint_least64_t count;
 *		...
 *	};
 *
 *	static bool cntr_has_data(struct util_waitable *w)
 *	{
 *		struct util_cntr *c;
 *
 *		c = container_of(w, struct util_cntr, waitable);
 *		util_cntr_progress(c);          // manual progress, if any
 *		return count or error count changed since the last report;
 *	}
 *
 *	open:   ret = util_waitable_init(&c->waitable, domain->fabric,
 *	                                 domain->prov, attr->wait_obj,
 *	                                 attr->wait_set, &c->cntr_fid.fid,
 *	                                 cntr_has_data);
 *	add:    atomic_fetch_add(&c->count, n);
 *	        util_waitable_signal(&c->waitable);
 *	wait:   (fi_cntr_wait; -FI_EINVAL when c->waitable.wait == NULL)
 *	        for (;;) {
 *	                util_wait_arm(c->waitable.wait, &ticket);
 *	                if (count >= threshold) {
 *	                        util_wait_disarm(c->waitable.wait);
 *	                        return 0;
 *	                }
 *	                ret = util_wait_block(c->waitable.wait, ticket,
 *	                                      util_wait_remaining(deadline));
 *	                if (ret)
 *	                        return ret;     // -FI_ETIMEDOUT
 *	        }
 *	control: return util_waitable_control(&c->waitable, command, arg);
 *	         (answers FI_GETWAIT, FI_GETWAITOBJ and UTIL_CTRL_WAITABLE; any
 *	         other command is for the counter itself)
 *	close:  if (util_waitable_busy(&c->waitable)) return -FI_EBUSY;
 *	        util_waitable_fini(&c->waitable);
 *
 * The control op must forward UTIL_CTRL_WAITABLE: it is how fi_trywait,
 * wait sets and poll sets find the waitable behind a fid.
 */
#ifndef WEFT_UTIL_WAIT_H
#define WEFT_UTIL_WAIT_H

#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>

#include "weft/ofi.h"

#include "weft/core.h"
#include "weft/list.h"
#include "weft/util_domain.h"

struct util_waitable;

/*
 * Internal fi_control command: `arg` is a struct util_waitable **, set to
 * the object's waitable.  Every CQ, EQ and counter answers it (through
 * util_waitable_control).  The value lies far above the public FI_*
 * control commands.
 */
#define UTIL_CTRL_WAITABLE 0x77656674

/* One fd a provider added to an fd-based wait object. */
struct util_wait_fd {
	struct dlist_entry entry;
	int fd;
	uint32_t events; /* POLLIN, POLLOUT ... */
	void *context;
	unsigned int refs; /* adds of the same fd (one domain fd, many users) */
};

struct util_wait {
	struct fid_wait wait_fid;   /* set up only for fi_wait_open wait sets */
	enum fi_wait_obj wait_obj;  /* resolved: NONE, FD, POLLFD, YIELD, M_C */
	struct util_fabric *fabric; /* may be NULL; referenced by wait sets */
	const struct fi_provider *prov;
	bool is_set; /* opened by fi_wait_open */

	/* Hot: read by every producer in util_wait_signal. */
	atomic_uint waiters;	/* threads between arm and block's return */
	atomic_bool fd_drained; /* eventfd empty, must be written on signal */
	atomic_bool exported;	/* MUTEX_COND handed out by FI_GETWAIT */
	atomic_uint seq;	/* bumped by every slow-path signal */

	int signal_fd;	       /* eventfd; -1 for NONE and YIELD */
	int epoll_fd;	       /* signal_fd + provider fds; FD hands it out */
	pthread_mutex_t mutex; /* for cond, and what FI_GETWAIT hands out */
	pthread_cond_t cond;

	/* Cold: changed under `lock` (always a real mutex). */
	pthread_mutex_t lock;
	struct dlist_entry fds; /* struct util_wait_fd */
	struct pollfd *pollfds; /* signal_fd first, then provider fds */
	size_t npollfds;
	uint64_t change_index;	    /* bumped when the fd set changes */
	struct dlist_entry members; /* util_waitable.member_entry (sets) */
	atomic_int ref;		    /* waitables attached to a wait set */
};

/* "Does this object have something to read?"  May run manual progress.
 * Called without any wait lock held except the set's member lock, so it
 * must not attach or detach waitables. */
typedef bool (*util_waitable_has_data_fn)(struct util_waitable *waitable);
/* "About to sleep": have every progress source make its fd signal its next
 * event (util_progress.arm).  Returns true when events came meanwhile
 * (then there may be data: do not sleep).  Optional. */
typedef bool (*util_waitable_arm_fn)(struct util_waitable *waitable);

struct util_waitable {
	struct util_wait *wait;	   /* in use; NULL for FI_WAIT_NONE */
	struct util_wait own;	   /* when not attached to a wait set */
	enum fi_wait_obj wait_obj; /* as resolved (SET if on a wait set) */
	struct fid *owner;	   /* the CQ/EQ/counter fid */
	util_waitable_has_data_fn has_data;
	util_waitable_arm_fn arm; /* NULL: nothing to arm */
	struct dlist_entry member_entry; /* on wait->members for a set */
	atomic_int poll_ref; /* poll sets holding the object: its fi_close
			      * returns -FI_EBUSY while this is not 0 */
	atomic_bool polled;  /* its events need has_data polled (a progress
			      * source that cannot signal): fi_wait on its
			      * set then spins with sched_yield, not sleeps */
};

/*
 * A source of manual progress (an endpoint) that a CQ or counter runs
 * before it looks for completions and while it waits.  The source embeds
 * it and registers it with util_cq_bind / util_cntr_add_progress; the
 * object links it, so registering allocates nothing.
 *
 * progress() is called with the object's lock held; it may write
 * completions and take the endpoint's own locks (so the source must not be
 * unregistered with those locks held).  It must not block.  `polled`: the
 * source's events cannot wake the object's wait object (it added no fd and
 * no thread of its own signals), so blocking calls poll it instead of
 * sleeping.
 */
struct util_progress {
	struct dlist_entry entry;
	void (*progress)(struct util_progress *progress);
	/*
	 * Optional, for sources whose fd only signals once armed (a verbs
	 * completion channel): called when a thread is about to sleep on the
	 * object (fi_cq_sread, fi_cntr_wait, fi_trywait, fi_wait), never on
	 * the polling path, so progress itself can stay free of system
	 * calls.  Arms the fd and looks once more; returns true when events
	 * came meanwhile (progressed: the caller looks before sleeping).
	 */
	bool (*arm)(struct util_progress *progress);
	bool polled;
};

/* ---- one wait object ---------------------------------------------------- */

/*
 * Initialise an embedded wait object of kind wait_obj (NONE, UNSPEC, FD,
 * POLLFD, YIELD or MUTEX_COND; SET is -FI_EINVAL).  fabric may be NULL.
 * Called by util_waitable_init and fi_wait_open; creates fds (no block).
 * Returns 0, -FI_EINVAL, -FI_ENOMEM or a translated errno.
 */
int util_wait_init(struct util_wait *wait, struct util_fabric *fabric,
		   const struct fi_provider *prov, enum fi_wait_obj wait_obj);

/* Release what util_wait_init took.  The caller guarantees no waiter. */
void util_wait_fini(struct util_wait *wait);

/* Slow half of util_wait_signal; never call directly. */
void util_wait_signal_slow(struct util_wait *wait);

/*
 * Wake whoever waits on `wait` (may be NULL).  Called by producers after
 * publishing an event, from any thread, with any locks held.  Never
 * blocks; makes a syscall only when a thread waits or an fd needs
 * re-arming.
 */
static inline void util_wait_signal(struct util_wait *wait)
{
	if (!wait)
		return;
	atomic_thread_fence(memory_order_seq_cst);
	if (atomic_load_explicit(&wait->waiters, memory_order_relaxed) ||
	    atomic_load_explicit(&wait->fd_drained, memory_order_relaxed) ||
	    atomic_load_explicit(&wait->exported, memory_order_relaxed))
		util_wait_signal_slow(wait);
}

/*
 * Announce a waiter before checking for data: drains the eventfd, records
 * the signal sequence in *ticket.  Must be followed by exactly one of
 * util_wait_block or util_wait_disarm.  Never blocks.
 */
void util_wait_arm(struct util_wait *wait, unsigned int *ticket);

/* Withdraw an announcement made by util_wait_arm (data was found). */
void util_wait_disarm(struct util_wait *wait);

/*
 * Block until a signal arrives after util_wait_arm, a provider fd becomes
 * ready, or timeout_ms passes (-1 forever, 0 not at all).  Withdraws the
 * announcement.  Returns 0 when woken (the caller re-checks: wake-ups may
 * be spurious), -FI_ETIMEDOUT, or a translated errno.
 */
int util_wait_block(struct util_wait *wait, unsigned int ticket,
		    int timeout_ms);

/*
 * Add a provider fd (a socket) to an FD, POLLFD or YIELD wait object:
 * its readiness for `events` wakes waiters and shows in FI_GETWAIT's fds.
 * Called at endpoint setup, not on a fast path; never blocks.  Returns 0,
 * -FI_EALREADY (it was there: counted, each add wants its delete),
 * -FI_ENOMEM, -FI_ENOSYS (NONE, MUTEX_COND: such providers
 * progress another way) or a translated errno.
 */
int util_wait_add_fd(struct util_wait *wait, int fd, uint32_t events,
		     void *context);
/* Undo one add above: the fd goes with the last; -FI_ENOENT if it was
 * not there. */
int util_wait_del_fd(struct util_wait *wait, int fd);

/*
 * FI_GETWAIT / FI_GETWAITOBJ for a wait object: FD writes an int (epoll
 * fd), POLLFD fills a struct fi_wait_pollfd (-FI_ETOOSMALL with nfds set
 * when the array is short), MUTEX_COND a struct fi_mutex_cond.  YIELD and
 * NONE have nothing to hand out: -FI_EINVAL.
 */
int util_wait_control(struct util_wait *wait, int command, void *arg);

/* Milliseconds left until deadline_ns (CLOCK_MONOTONIC), for loops that
 * block repeatedly; -1 stays -1.  util_wait_deadline turns a timeout into
 * a deadline (-1 into UINT64_MAX). */
uint64_t util_wait_deadline(int timeout_ms);
int util_wait_remaining(uint64_t deadline_ns);

/* ---- wait sets: fi_wait_open, fi_wait ----------------------------------- */

/*
 * fi_ops_fabric.wait_open for every provider.  fabric is the fabric_fid
 * of a struct util_fabric (NULL in unit tests); the set holds a reference
 * on it until fi_close.  attr->wait_obj is UNSPEC, FD, POLLFD, YIELD or
 * MUTEX_COND; attr->flags must be 0.  Never blocks.  Returns 0,
 * -FI_EINVAL, -FI_ENOMEM or a translated errno.  The set's fi_close
 * returns -FI_EBUSY while objects are attached; fi_wait on it returns 0
 * when an attached object has data, -FI_ETIMEDOUT when the timeout (ms,
 * -1 forever) passes first.
 */
int util_wait_open(struct fid_fabric *fabric, struct fi_wait_attr *attr,
		   struct fid_wait **waitset);

/* ---- what CQ, EQ and counter embed ------------------------------------- */

/*
 * Resolve attr wait_obj / wait_set for the object `owner` (its fid, whose
 * control op answers UTIL_CTRL_WAITABLE).  FI_WAIT_SET attaches to the
 * set (which must come from util_wait_open; -FI_EINVAL otherwise),
 * anything else initialises `own`.  has_data must be set (it serves
 * fi_wait, fi_trywait and fi_poll).  Called at open; never blocks.
 */
int util_waitable_init(struct util_waitable *waitable,
		       struct util_fabric *fabric,
		       const struct fi_provider *prov,
		       enum fi_wait_obj wait_obj, struct fid_wait *wait_set,
		       struct fid *owner, util_waitable_has_data_fn has_data);

/* Whether a poll set still holds the object (fi_close: -FI_EBUSY). */
static inline bool util_waitable_busy(struct util_waitable *waitable)
{
	return atomic_load(&waitable->poll_ref) != 0;
}

/* Detach from the set or release the private object; at close. */
void util_waitable_fini(struct util_waitable *waitable);

/* Wake waiters after publishing an event (see util_wait_signal). */
static inline void util_waitable_signal(struct util_waitable *waitable)
{
	util_wait_signal(waitable->wait);
}

/*
 * The part of an object's fi_control that concerns waiting: FI_GETWAIT,
 * FI_GETWAITOBJ and UTIL_CTRL_WAITABLE.  Other commands: -FI_ENOSYS, so
 * the caller can handle its own first or after.  FI_GETWAIT on an object
 * attached to a wait set is -FI_EINVAL (ask the set).
 */
int util_waitable_control(struct util_waitable *waitable, int command,
			  void *arg);

/*
 * Find the waitable behind any CQ, EQ or counter fid (asks its control op
 * for UTIL_CTRL_WAITABLE).  Returns NULL for anything else.
 */
struct util_waitable *util_waitable_of(struct fid *fid);

/*
 * One object's share of fi_trywait: drains its wait object's fd and
 * returns -FI_EAGAIN if it has data (the caller must read instead of
 * blocking), 0 if blocking on the wait object is safe.
 */
int util_waitable_trywait(struct util_waitable *waitable);

/*
 * fi_ops_fabric.trywait for every provider.  fids may be CQs, EQs,
 * counters and wait sets.  Returns 0 when the caller may block on all of
 * them, -FI_EAGAIN if any has data, -FI_EINVAL for an object without a
 * wait object.
 */
int util_trywait(struct fid_fabric *fabric, struct fid **fids, int count);

#endif /* WEFT_UTIL_WAIT_H */
