/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Event queues (fi_eq_open), shared by every provider.
 *
 * An EQ is control path: every entry is one allocation and every operation
 * takes the EQ's mutex, so providers may write events from a progress or
 * connection-manager thread while the application reads.
 *
 * Entries keep their size.  A read copies one whole event:
 *  - FI_CONNREQ, FI_CONNECTED, FI_SHUTDOWN carry a struct fi_eq_cm_entry
 *    followed by the connection's private data.  The buffer must hold the
 *    fi_eq_cm_entry; private data is copied up to the space left (fi_eq(3):
 *    "limited to the buffer space provided"), and the return value tells
 *    how much came.
 *  - any other event (FI_NOTIFY, FI_MR_COMPLETE, FI_AV_COMPLETE,
 *    FI_JOIN_COMPLETE, application events) must fit whole.
 * A buffer too small gets -FI_ETOOSMALL and the event stays queued.
 *
 * Errors wait on a queue of their own: while one is pending, fi_eq_read
 * returns -FI_EAVAIL and fi_eq_readerr hands it out.
 *
 * Provider use:
 *
 *	struct tcp_eq { struct util_eq util; ... };
 *	ret = util_eq_init(&eq->util, fabric, attr, context);
 *	... override eq->util.eq_fid.ops / fid.ops if needed ...
 *	util_eq_write(&eq->util, FI_CONNREQ, cm, sizeof(*cm) + n, 0);
 *	util_eq_write_err(&eq->util, &err_entry);
 *	util_eq_get(eq) when an endpoint binds, util_eq_put at its close.
 *
 * Providers that need nothing of their own call util_eq_open.
 *
 * Manual control progress (a tcp listener, an rdma_cm event channel): the
 * provider calls util_eq_set_progress after util_eq_init.  Every read,
 * readerr, sread and wait-set / poll-set check calls it before looking at
 * the queues; it turns whatever its sources hold into util_eq_write calls.
 * Its sources' fds go into the EQ's wait object (util_wait_add_fd on
 * util_eq_wait(eq)) so that sread and an application polling FI_GETWAIT's
 * fd wake up when they become ready.  A source without an fd is marked
 * polled: sread, wait sets and fi_trywait then poll instead of sleeping.
 */
#ifndef WEFT_UTIL_EQ_H
#define WEFT_UTIL_EQ_H

#include <stdatomic.h>
#include <pthread.h>

#include "weft/ofi.h"

#include "weft/core.h"
#include "weft/list.h"
#include "weft/util_domain.h"
#include "weft/util_wait.h"

struct util_eq_entry;

/* Provider text for fi_eq_strerror (rdma_cm reject reasons, say). */
typedef const char *(*util_eq_strerror_fn)(struct fid_eq *eq, int prov_errno,
					   const void *err_data, char *buf,
					   size_t len);

struct util_eq {
	struct fid_eq eq_fid;
	struct util_fabric *fabric;
	const struct fi_provider *prov;
	uint64_t flags; /* attr->flags */
	/* Fabric API version < 1.5: error entries without err_data_size. */
	bool old_err_abi;
	atomic_int ref; /* objects bound to the EQ */
	struct util_waitable waitable;

	/* Optional manual progress: see util_eq_add_progress. */
	struct util_progress *progress; /* the one util_eq_set_progress set */
	pthread_mutex_t progress_lock;	 /* serialises the sources */
	struct dlist_entry progress_list; /* struct util_progress */
	atomic_int nprogress;
	/* Set by the provider, may be NULL: fi_strerror of prov_errno. */
	util_eq_strerror_fn strerror;

	pthread_mutex_t lock; /* protects everything below */
	struct slist events;  /* struct util_eq_entry, oldest first */
	struct slist errors;  /* error entries, oldest first */
	/* Last error handed out with a provider-owned err_data buffer: kept
	 * until the next read of any kind (fi_eq(3) compatibility rule). */
	struct util_eq_entry *err_held;
};

/*
 * Initialise an EQ embedded in a provider's own.  Validates attr (NULL
 * means defaults: FI_WAIT_NONE), sets up the wait object through
 * util_waitable_init and takes a fabric reference.  Fills eq_fid with the
 * shared ops; a provider may replace them afterwards.  Called from
 * fi_eq_open; never blocks.  Returns 0, -FI_EINVAL, -FI_ENOMEM or what the
 * wait object returned.
 */
int util_eq_init(struct util_eq *eq, struct util_fabric *fabric,
		 const struct fi_eq_attr *attr, void *context);

/*
 * Release an EQ set up by util_eq_init: -FI_EBUSY while objects are
 * bound (util_eq_get without util_eq_put) or a poll set holds it; the
 * caller guarantees no thread is inside its ops.  Otherwise drops events
 * (freeing the fi_info of unread FI_CONNREQ events), the wait object and
 * the fabric reference.  The caller frees the memory.
 */
int util_eq_fini(struct util_eq *eq);

/*
 * fi_ops_fabric.eq_open for providers with nothing of their own in the
 * EQ: allocates a struct util_eq, whose fi_close frees it.
 */
int util_eq_open(struct util_fabric *fabric, const struct fi_eq_attr *attr,
		 struct fid_eq **eq, void *context);

/* util_eq_open in the shape of fi_ops_fabric.eq_open, for a provider
 * whose fabric embeds struct util_fabric at fabric_fid. */
int util_eq_open_op(struct fid_fabric *fabric, struct fi_eq_attr *attr,
		    struct fid_eq **eq, void *context);

/*
 * Flag of fi_eq_write (weft's own, above the public flag bits): the entry
 * is a struct fi_eq_err_entry to queue as an error.  prov/util objects that
 * hold only the public fid of an EQ (the AV) report errors with it.
 */
#define UTIL_EQ_FLAG_ERROR (1ULL << 60)

/*
 * Queue one event: len bytes from buf (len may be 0).  CM events
 * (FI_CONNREQ, FI_CONNECTED, FI_SHUTDOWN) need len >= sizeof(struct
 * fi_eq_cm_entry); the bytes after it are the private data.  For
 * FI_CONNREQ the fi_info in the entry passes to the EQ on success (then to
 * the reader, who frees it with fi_freeinfo; fi_close frees it if unread).
 * flags must be 0.  Callable from any thread; takes the EQ mutex,
 * allocates, wakes a waiter; never blocks otherwise.  Returns len,
 * -FI_EINVAL or -FI_ENOMEM.  fi_eq_write by the application goes through
 * here.
 */
ssize_t util_eq_write(struct util_eq *eq, uint32_t event, const void *buf,
		      size_t len, uint64_t flags);

/*
 * Queue an error event.  err->err is the positive FI_E* code; the
 * err_data_size bytes at err->err_data are copied (the caller keeps its
 * buffer).  Callable from any thread, like util_eq_write.  Returns 0,
 * -FI_EINVAL or -FI_ENOMEM.
 */
int util_eq_write_err(struct util_eq *eq, const struct fi_eq_err_entry *err);

/*
 * Count an object bound to the EQ (an endpoint, passive endpoint, domain,
 * AV or MR); fi_close of the EQ returns -FI_EBUSY until the matching
 * util_eq_put.  Take it in the bind op, drop it when the object closes.
 */
static inline void util_eq_get(struct util_eq *eq)
{
	atomic_fetch_add_explicit(&eq->ref, 1, memory_order_relaxed);
}

static inline void util_eq_put(struct util_eq *eq)
{
	atomic_fetch_sub_explicit(&eq->ref, 1, memory_order_release);
}

/* The util_eq behind an EQ fid opened by util_eq_init / util_eq_open. */
static inline struct util_eq *util_eq_of(struct fid_eq *eq_fid)
{
	return container_of(eq_fid, struct util_eq, eq_fid);
}

/*
 * Install the provider's manual progress for this EQ (NULL removes it), in
 * the same form CQs and counters take (struct util_progress, util_wait.h).
 * Its progress() is called without the EQ lock, possibly from several
 * threads at once (the provider serialises its own sources); it must not
 * block, nor attach or detach waitables.  progress->polled: its sources
 * cannot wake the wait object (no fd added), so waiters must poll.  Call
 * it before the application can read the EQ (at open or bind); never
 * blocks.
 */
void util_eq_set_progress(struct util_eq *eq, struct util_progress *progress);

/*
 * Several sources on one EQ (a passive endpoint and the connected
 * endpoints bound to the same EQ): each is called, one at a time, under a
 * lock of their own (not the EQ's).  Add before the source can produce
 * events, remove before it goes away (not from inside a progress call).
 */
void util_eq_add_progress(struct util_eq *eq, struct util_progress *progress);
void util_eq_del_progress(struct util_eq *eq, struct util_progress *progress);

/* The EQ's wait object (NULL for FI_WAIT_NONE; a wait set's when
 * FI_WAIT_SET): providers add their CM fds to it with util_wait_add_fd. */
static inline struct util_wait *util_eq_wait(struct util_eq *eq)
{
	return eq->waitable.wait;
}

/*
 * fi_ep_bind / fi_pep_bind of an EQ to an object that manages connections
 * (an active or a passive endpoint): takes a reference on the EQ named by
 * bfid into *slot, registers `progress` (calling fn) with it, and adds fd
 * (readable when the object has CM work; -1: none) to the EQ's wait
 * object, so fi_eq_sread sleeps on it (else the source is polled).
 * Returns 0, -FI_EINVAL (bfid is no EQ) or -FI_EALREADY (one is bound).
 */
int util_eq_bind_cm(struct util_eq **slot, struct fid *bfid,
		    struct util_progress *progress,
		    void (*fn)(struct util_progress *progress), int fd,
		    void *context);
/* At close: undo the registration and the fd of util_eq_bind_cm (the
 * reference stays for the caller's util_eq_put, once it writes no more
 * events).  Nothing bound: nothing to do. */
void util_eq_unbind_cm(struct util_eq *eq, struct util_progress *progress,
		       int fd);

/* fi_getopt's FI_OPT_CM_DATA_SIZE (FI_OPT_ENDPOINT level): max bytes of
 * private data fi_connect, fi_accept and fi_reject carry. */
int util_cm_getopt(int level, int optname, void *optval, size_t *optlen,
		   size_t max);

/*
 * Connection-management events of connected endpoints (fi_cm(3)), the same
 * for every provider: FI_CONNREQ (info passes to the EQ, with its handle),
 * FI_CONNECTED and FI_SHUTDOWN for fid, with cm_len bytes of private data;
 * and an error for fid (a refused or failed connection) whose err_data is
 * the peer's private data, if any.  Return util_eq_write's values.
 */
ssize_t util_eq_write_cm(struct util_eq *eq, uint32_t event, fid_t fid,
			 struct fi_info *info, const void *cm, size_t cm_len);
int util_eq_write_cm_err(struct util_eq *eq, fid_t fid, int err,
			 const void *cm, size_t cm_len);

/* The shared ops, for providers that wrap some of them. */
ssize_t util_eq_read(struct fid_eq *eq_fid, uint32_t *event, void *buf,
		     size_t len, uint64_t flags);
ssize_t util_eq_readerr(struct fid_eq *eq_fid, struct fi_eq_err_entry *buf,
			uint64_t flags);
ssize_t util_eq_sread(struct fid_eq *eq_fid, uint32_t *event, void *buf,
		      size_t len, int timeout, uint64_t flags);
int util_eq_control(struct fid *fid, int command, void *arg);

#endif /* WEFT_UTIL_EQ_H */
