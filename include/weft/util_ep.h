/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The endpoint base: what every endpoint of every provider needs whatever
 * its type, once.
 *
 *  - fi_ep_bind of CQs (FI_TRANSMIT, FI_RECV, FI_SELECTIVE_COMPLETION),
 *    counters (the six classes) and an AV, with fi_endpoint(3)'s checks:
 *    flags, classes, already bound, nothing after fi_enable;
 *  - progress: the owner's progress runs from fi_cq_read and friends and
 *    from fi_cntr_read of what it is bound to (util_progress hooks
 *    registered with each CQ and each distinct counter), the owner's wait
 *    fds are added to their wait objects (fi_cq_sread, fi_cntr_wait and
 *    FI_WAIT_FD then sleep in the kernel), armed before a sleep; under
 *    FI_PROGRESS_AUTO a thread runs it;
 *  - fi_control: FI_ENABLE (the bindings the capabilities need), and
 *    FI_GETOPSFLAG / FI_SETOPSFLAG;
 *  - completions and counters: a CQ slot reserved when an operation is
 *    posted, the success or error entry written into it when it ends, the
 *    counter of its kind bumped (util_ep_tx_success ...), under the CQ's
 *    writer lock, since endpoints with different locks may share a CQ;
 *  - close ordering: util_ep_close then util_ep_fini.
 *
 * Its owners: the RDM engine (weft/util_rdm.h: shm, tcp, verbs RDM and
 * tcp MSG endpoints sit on it through the engine) and verbs MSG
 * endpoints, which map the data calls straight onto a QP.  An owner embeds
 * struct util_ep first in its endpoint, names a const util_ep_ops, and
 * fills ep_fid's ops tables itself.
 *
 * Locking: `lock` is the endpoint's (a real lock only when the domain's
 * threading model asks for one); the owner's entry points take it, and
 * the base takes it around the owner's progress.
 */
#ifndef WEFT_UTIL_EP_H
#define WEFT_UTIL_EP_H

#include <pthread.h>
#include <stdatomic.h>

#include "weft/ofi.h"

#include "weft/core.h"
#include "weft/lock.h"
#include "weft/util_av.h"
#include "weft/util_cntr.h"
#include "weft/util_cq.h"
#include "weft/util_domain.h"
#include "weft/util_eq.h"

struct util_ep;

/* Wait fds an endpoint may have: one per source of events. */
#define UTIL_EP_WAIT_FDS 2

/*
 * What the owner of an endpoint provides: a const table.  progress, arm
 * and enable are called with the endpoint lock held and never block.
 */
struct util_ep_ops {
	/*
	 * Read and handle what arrived; returns how many events it handled
	 * (0: nothing was there), so that the automatic-progress thread can
	 * back off when idle.  Called only once the endpoint is enabled.
	 */
	int (*progress)(struct util_ep *ep);
	/*
	 * Optional: the fds that become readable when progress has work (a
	 * socket, an epoll fd, a completion channel): fills fds, returns how
	 * many (at most UTIL_EP_WAIT_FDS), or 0 when a source of events has
	 * none (waits then poll).  Asked at each bind until it answers.
	 */
	int (*wait_fds)(struct util_ep *ep, int *fds);
	/*
	 * Optional, with wait_fds: a thread is about to sleep on them, so
	 * make them signal the next event (arm a verbs CQ's completion
	 * channel), then look once more.  Returns how many events it found
	 * (not 0: the base runs progress, and the caller looks before
	 * sleeping).  Only on the way to sleep, never while polling.
	 */
	int (*arm)(struct util_ep *ep);
	/*
	 * Optional: after arm, the lock dropped: arm what else the wait fds
	 * serve (the engine: the domain's other sweeping endpoints).
	 * Returns how many events that found.
	 */
	int (*arm_shared)(struct util_ep *ep);
	/*
	 * Optional: FI_ENABLE's checks and setup; 0 enables.  Without it,
	 * util_ep_enable_check decides.
	 */
	int (*enable)(struct util_ep *ep);
};

/*
 * What the application holds: the endpoint's own fid, or another object
 * that leads to the endpoint behind it (a context of a scalable
 * endpoint).  The owner's entry points find their endpoint through `ep`
 * (util_ep_of): one load, the same for both.
 */
struct util_ep_fid {
	struct fid_ep fid;
	struct util_ep *ep;
};

/* The progress registered with one counter bound (once per counter). */
struct util_ep_cntr_hook {
	struct util_progress p;
	struct util_ep *ep;
	struct util_cntr *cntr;
};

struct util_srx;

struct util_ep {
	union {
		struct fid_ep ep_fid;
		struct util_ep_fid efid; /* efid.ep: this endpoint */
	};
	const struct util_ep_ops *ops;
	struct util_domain *domain;
	/* The endpoint's lock: own_lock, or one the owner shares between
	 * endpoints before enable (the engine: a shared receive context's,
	 * so that the endpoints bound to it take one lock). */
	struct weft_lock *lock;
	struct weft_lock own_lock;
	uint64_t caps;
	uint64_t tx_op_flags;
	uint64_t rx_op_flags;
	bool enabled;
	/* Opened with rx_ctx_cnt FI_SHARED_CONTEXT: receives come from the
	 * shared receive context bound to it (srx), which fi_enable needs. */
	bool rx_shared;
	struct util_srx *srx;

	struct util_av *av;
	struct util_eq *eq; /* connection events (util_eq_bind_cm), or NULL */
	struct util_progress cm_progress; /* registered with eq */
	struct util_cq *tx_cq, *rx_cq;
	bool tx_selective, rx_selective;
	struct util_cntr *send_cntr, *recv_cntr, *read_cntr, *write_cntr;
	struct util_cntr *rem_read_cntr, *rem_write_cntr;
	/* Registered with the bound CQs: the base's run ops->progress under
	 * the lock when enabled.  An owner whose progress is the fast path
	 * (the engine) may point .progress at its own function after
	 * util_ep_init, one that does the same with its progress inlined:
	 * one indirect call per fi_cq_read instead of two. */
	struct util_progress tx_progress, rx_progress;
	struct util_ep_cntr_hook cntr_hook[6];
	/* The owner's wait fds are in the bound wait objects. */
	bool wait_fds;
	uint8_t nwait_fd;
	int wait_fd[UTIL_EP_WAIT_FDS];

	/* FI_PROGRESS_AUTO: a thread runs progress. */
	pthread_t progress_thread;
	bool progress_running;
	atomic_bool progress_stop;
};

/*
 * Set up ep (zeroed by the caller) from the fi_info given to fi_endpoint:
 * caps, op flags, fid class FI_CLASS_EP and context, the lock; holds the
 * domain.  The owner then fills ep_fid's ops tables.  0 or -FI_E*.
 */
int util_ep_init(struct util_ep *ep, struct util_domain *domain,
		 const struct fi_info *info, const struct util_ep_ops *ops,
		 void *context);

/*
 * fi_ep_bind of a CQ, counter or AV, with the lock held, whatever the
 * endpoint's state (callers check it): -FI_EBADFLAGS, -FI_EALREADY,
 * -FI_EINVAL for any other class.
 */
int util_ep_bind_locked(struct util_ep *ep, struct fid *bfid, uint64_t flags);

/* fi_ep_bind: the lock taken, -FI_EOPBADSTATE once enabled. */
int util_ep_bind(struct util_ep *ep, struct fid *bfid, uint64_t flags);

/* Whether the bindings the capabilities need are there (FI_ENABLE):
 * 0, -FI_ENOCQ, or -FI_EOPBADSTATE (opened for a shared receive context
 * and none bound: fi_endpoint(3)). */
int util_ep_enable_check(const struct util_ep *ep);

/*
 * FI_ENABLE (ops->enable, or util_ep_enable_check; then the automatic
 * progress thread), FI_GETOPSFLAG, FI_SETOPSFLAG; -FI_ENOSYS for others.
 * util_ep_control_op is it as fi_ops.control, for an owner that adds
 * nothing to it.
 */
int util_ep_control(struct util_ep *ep, int command, void *arg);
int util_ep_control_op(struct fid *fid, int command, void *arg);

/*
 * Undo every CQ and counter binding; the endpoint goes on (its
 * completions go nowhere until new ones).  With the lock held.
 */
void util_ep_unbind(struct util_ep *ep);

/*
 * The first half of a close: the automatic-progress thread stops, the
 * hooks and wait fds leave the CQs and counters, the AV is let go.  The
 * CQs stay known, so that what is still outstanding may yet complete
 * into them (FI_ECANCELED) before util_ep_fini.
 */
void util_ep_close(struct util_ep *ep);

/* The end of a close: the EQ and the domain are let go, the lock goes. */
void util_ep_fini(struct util_ep *ep);

/* ---- shared receive contexts ------------------------------------------- */

/*
 * What every shared receive context (fi_srx_context) is: the engine's
 * (util_rdm_srx: the endpoints bound to it share its receive state and
 * lock) and verbs MSG's (an SRQ under the endpoints' QPs) embed it first,
 * so that the rules of binding, enabling and closing are one.
 */
struct util_srx {
	struct fid_ep ep_fid; /* FI_CLASS_SRX_CTX; the owner fills the ops */
	struct util_domain *domain; /* not held: compared at bind only */
	struct fi_rx_attr attr;
	uint64_t op_flags; /* FI_GETOPSFLAG, FI_SETOPSFLAG */
	struct weft_lock lock;
	size_t bound; /* endpoints bound to it, under lock */
};

/* Set up srx (zeroed by the caller): attr (or none), op_flags from it,
 * the fid's class and context.  0 or -FI_E*. */
int util_srx_init(struct util_srx *srx, struct util_domain *domain,
		  const struct fi_rx_attr *attr, bool needs_lock,
		  void *context);

/*
 * Whether srx may be bound to ep (fi_ep_bind, before fi_enable):
 * -FI_EALREADY if ep has one, -FI_EOPBADSTATE once enabled, -FI_EINVAL
 * (with a warning) if ep was not opened for one or is of another domain.
 * Then the owner joins them, srx's lock held (util_srx_join_locked).
 */
int util_srx_bind_check(const struct util_ep *ep, const struct util_srx *srx);
static inline void util_srx_join_locked(struct util_srx *srx,
					struct util_ep *ep)
{
	srx->bound++;
	ep->srx = srx;
}

/* An endpoint bound to srx is gone: how many are left (srx's lock held,
 * or taken). */
static inline size_t util_srx_leave_locked(struct util_srx *srx)
{
	return --srx->bound;
}
void util_srx_leave(struct util_srx *srx);

/* fi_close's first check: -FI_EBUSY while endpoints are bound. */
int util_srx_close_check(struct util_srx *srx);
/* The end of a close, srx's resources gone: its lock goes. */
void util_srx_fini(struct util_srx *srx);
/* fi_control of a shared receive context: FI_ENABLE (nothing to do),
 * FI_GETOPSFLAG, FI_SETOPSFLAG; -FI_ENOSYS for others. */
int util_srx_control(struct fid *fid, int command, void *arg);

static inline struct util_ep *util_ep_of(struct fid_ep *ep_fid)
{
	return container_of(ep_fid, struct util_ep_fid, fid)->ep;
}

static inline void util_ep_lock(struct util_ep *ep)
{
	weft_lock(ep->lock);
}

static inline void util_ep_unlock(struct util_ep *ep)
{
	weft_unlock(ep->lock);
}

/* ---- completions and counters ------------------------------------------ */

/*
 * An internal operation flag, beside the FI_* ones of a post: the
 * operation writes no CQ entry whatever the endpoint's completion flags
 * (fi_inject: FI_INJECT alone on fi_sendmsg still asks for one).
 */
#define UTIL_EP_NO_COMPLETION (1ULL << 63)

/* The counter a transmit of each kind counts on. */
enum util_ep_tx_kind {
	UTIL_EP_TX_SEND,
	UTIL_EP_TX_READ,
	UTIL_EP_TX_WRITE,
};

static inline struct util_cntr *util_ep_tx_cntr(const struct util_ep *ep,
						 enum util_ep_tx_kind kind)
{
	switch (kind) {
	case UTIL_EP_TX_READ:
		return ep->read_cntr;
	case UTIL_EP_TX_WRITE:
		return ep->write_cntr;
	default:
		return ep->send_cntr;
	}
}

/*
 * At post: reserve the slot of cq (the endpoint's tx_cq or rx_cq) that
 * the operation's completion will take, so that a full CQ refuses the
 * post (-FI_EAGAIN) rather than lose the completion.  With no CQ bound
 * there is nothing to reserve: the operation is only counted (fi_enable
 * made sure a counter is bound), whatever completion it asked for.  A
 * post that fails after it gives the slot back.
 */
static inline int util_ep_cq_reserve(struct util_cq *cq)
{
	int ret;

	if (!cq)
		return 0;
	util_cq_writer_lock(cq);
	ret = util_cq_reserve(cq, 1);
	util_cq_writer_unlock(cq);
	return ret;
}

static inline void util_ep_cq_unreserve(struct util_cq *cq)
{
	if (!cq)
		return;
	util_cq_writer_lock(cq);
	util_cq_unreserve(cq, 1);
	util_cq_writer_unlock(cq);
}

/*
 * An operation ended well: its entry goes into the slot of cq it reserved
 * (reserved), or is written (wanted).
 */
static inline void util_ep_cq_success(struct util_cq *cq, bool reserved,
				      bool wanted, void *context,
				      uint64_t flags, size_t len, void *buf,
				      uint64_t data, uint64_t tag,
				      fi_addr_t src)
{
	if (!cq || !(reserved || wanted))
		return;
	util_cq_writer_lock(cq);
	if (reserved)
		util_cq_write_reserved(cq, context, flags, len, buf, data, tag,
				       src);
	else
		util_cq_write(cq, context, flags, len, buf, data, tag, src);
	util_cq_writer_unlock(cq);
}

/*
 * A transmit ended well: its entry goes into the slot it reserved
 * (reserved), and cntr (util_ep_tx_cntr, or NULL) counts it.
 */
static inline void util_ep_tx_success(struct util_ep *ep, bool reserved,
				      void *context, uint64_t flags,
				      struct util_cntr *cntr)
{
	util_ep_cq_success(ep->tx_cq, reserved, false, context, flags, 0,
			   NULL, 0, 0, FI_ADDR_NOTAVAIL);
	if (cntr)
		util_cntr_inc(cntr);
}

/*
 * An operation failed (e->err positive): its error entry goes to cq when
 * it reserved a slot there (reserved: given back, the entry takes the
 * error queue) or when report says it has one to get (fi_cq(3):
 * selective completion suppresses successes, not failures; an operation
 * with no context the application would know, such as an inject, gets
 * none).
 */
static inline void util_ep_cq_error(struct util_cq *cq, bool reserved,
				    bool report,
				    const struct fi_cq_err_entry *e)
{
	if (!cq || !(reserved || report))
		return;
	util_cq_writer_lock(cq);
	if (reserved)
		util_cq_unreserve(cq, 1);
	util_cq_write_err(cq, e);
	util_cq_writer_unlock(cq);
}

/* A transmit failed: util_ep_cq_error on the transmit CQ, and cntr
 * counts an error. */
static inline void util_ep_tx_error(struct util_ep *ep, bool reserved,
				    bool report,
				    const struct fi_cq_err_entry *e,
				    struct util_cntr *cntr)
{
	util_ep_cq_error(ep->tx_cq, reserved, report, e);
	if (cntr)
		util_cntr_inc_err(cntr);
}

/*
 * A receive (or a remote event with CQ data) ended well: its entry goes
 * into its reserved slot (reserved) or is written (wanted), and cntr
 * (the endpoint's recv_cntr, a remote counter, or NULL) counts it.
 */
static inline void util_ep_rx_success(struct util_ep *ep, bool reserved,
				      bool wanted, void *context,
				      uint64_t flags, size_t len, void *buf,
				      uint64_t data, uint64_t tag,
				      fi_addr_t src, struct util_cntr *cntr)
{
	util_ep_cq_success(ep->rx_cq, reserved, wanted, context, flags, len,
			   buf, data, tag, src);
	if (cntr)
		util_cntr_inc(cntr);
}

/*
 * A receive failed: util_ep_cq_error on the receive CQ, and cntr counts
 * an error.  A message from an unknown sender under FI_SOURCE_ERR
 * (FI_EADDRNOTAVAIL) did arrive: cntr counts it as received.
 */
static inline void util_ep_rx_error(struct util_ep *ep, bool reserved,
				    bool report,
				    const struct fi_cq_err_entry *e,
				    struct util_cntr *cntr)
{
	util_ep_cq_error(ep->rx_cq, reserved, report, e);
	if (!cntr)
		return;
	if (e->err == FI_EADDRNOTAVAIL)
		util_cntr_inc(cntr);
	else
		util_cntr_inc_err(cntr);
}

#endif /* WEFT_UTIL_EP_H */
