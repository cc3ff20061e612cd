/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The RDM engine: reliable-datagram endpoint semantics over any transport.
 *
 * The engine implements what an FI_EP_RDM endpoint means to an application
 * (fi_msg(3), fi_tagged(3), fi_rma(3), fi_atomic(3) entry points, receive
 * matching, unexpected messages, multi-receive buffers, completions and
 * counters, FI_SOURCE, cancel, peek/claim/discard, the completion levels)
 * once.  A transport (shm, tcp, verbs RDM) only moves bytes:
 * it sends what the engine gives it and hands every arriving message header
 * to the engine.
 *
 *  application ──fi_tsend──▶ engine ──send_eager / send_rndv──▶ transport
 *  transport progress ──util_rdm_msg_arrived──▶ engine ──▶ matcher, CQ
 *
 * Protocols, chosen by the engine from the transport's limits:
 *  - eager: the whole message is copied by the transport during the call
 *    (inline in a queue slot, or through a bounce buffer).  The send
 *    completes at once unless FI_DELIVERY_COMPLETE asks for the receiver's
 *    acknowledgement.
 *  - rendezvous: the transport announces the message with a descriptor;
 *    the receiver fetches the payload once a receive matches (a single
 *    copy: CMA for shm, RDMA read for verbs) and the sender's buffer is
 *    held until then.
 *
 * The endpoint sits on the endpoint base (weft/util_ep.h): binding of
 * CQs, counters and the AV, FI_ENABLE and the op-flag controls, the
 * progress hooks and wait fds, automatic progress, and the reporting of
 * completions and counters (under each CQ's writer lock) are the base's;
 * the engine adds what an RDM endpoint means on top.
 *
 * Locking: every entry point takes the endpoint's lock (the base's: a
 * real lock only under FI_THREAD_SAFE); transports call the util_rdm_*
 * callbacks from their progress function, which the base runs with that
 * lock held.
 */
#ifndef WEFT_UTIL_RDM_H
#define WEFT_UTIL_RDM_H

#include <pthread.h>
#include <stdatomic.h>
#include <sys/uio.h>

#include "weft/ofi.h"

#include "weft/core.h"
#include "weft/list.h"
#include "weft/lock.h"
#include "weft/util_av.h"
#include "weft/util_bufpool.h"
#include "weft/util_cntr.h"
#include "weft/util_cq.h"
#include "weft/util_domain.h"
#include "weft/util_ep.h"
#include "weft/util_match.h"
#include "weft/util_peer.h"

#define UTIL_RDM_IOV_MAX 4
/* Transmits an endpoint keeps for its other peers when one holds the
 * rest (at most a quarter of tx_size): see back-pressure below. */
#define UTIL_RDM_PEER_RESERVE 32

/*
 * The order a transport keeps when everything from one endpoint to one
 * peer is served in the order posted, whatever its size: messages, RMA
 * and atomics alike (shm's queue, tcp's connection).  Both the classic
 * bits and 1.17's FI_ORDER_RMA_* / FI_ORDER_ATOMIC_*, with
 * max_order_{raw,war,waw}_size UTIL_RDM_ORDER_SIZE.
 */
#define UTIL_RDM_ORDER_ALL                                                     \
	(FI_ORDER_SAS | FI_ORDER_RAR | FI_ORDER_RAW | FI_ORDER_WAR |           \
	 FI_ORDER_WAW | FI_ORDER_SAR | FI_ORDER_SAW | FI_ORDER_RAS |           \
	 FI_ORDER_WAS | FI_ORDER_RMA_RAR | FI_ORDER_RMA_RAW |                  \
	 FI_ORDER_RMA_WAR | FI_ORDER_RMA_WAW | FI_ORDER_ATOMIC_RAR |           \
	 FI_ORDER_ATOMIC_RAW | FI_ORDER_ATOMIC_WAR | FI_ORDER_ATOMIC_WAW)
#define UTIL_RDM_ORDER_SIZE SIZE_MAX

/* Message classes on the wire. */
enum util_rdm_op {
	UTIL_RDM_MSG = 1,
	UTIL_RDM_TAGGED = 2,
	/* The engine's own traffic (collectives, util_coll.c): matched in a
	 * queue of its own (util_rdm_rxq.collq), never by the application's
	 * receives.  Transports carry it as a class bit beside the tagged
	 * one (UTIL_RDM_MSG | 2). */
	UTIL_RDM_COLL = 3,
};

/* Header flags (util_rdm_hdr.flags, util_rdm_msg.flags). */
#define UTIL_RDM_CQ_DATA (1u << 0) /* data carries remote CQ data */
#define UTIL_RDM_ACK_REQ (1u << 1) /* sender waits for delivery */
/* The op flags whose completion waits for the target's word: delivery,
 * and commit (fi_cq(3)), which is delivery plus, for writes and atomics
 * into FI_RMA_PMEM memory, a flush there (util_mr_map_commit). */
#define UTIL_RDM_DELIVERED (FI_DELIVERY_COMPLETE | FI_COMMIT_COMPLETE)
/* Local only, never on a wire: the send may complete late (eager_late). */
#define UTIL_RDM_LATE (1u << 7)

/* What the engine asks a transport to send. */
struct util_rdm_hdr {
	uint32_t op; /* enum util_rdm_op */
	uint32_t flags; /* UTIL_RDM_* */
	uint64_t tag;
	uint64_t data;
	uint64_t len; /* whole message */
	uint64_t tx_id; /* for the acknowledgement (UTIL_RDM_ACK_REQ) */
};

/* A transmit request the engine keeps while a transport works on it. */
/*
 * Internal op flags (bits 62 and 63 are no OFI op flag): no report to the
 * CQ, success or failure (the fi_inject* calls); a deferred work
 * request's transfer (util_trigger.c), which counts on the counter that
 * util_deferred_cntr named at its post (its work's completion counter)
 * instead of the endpoint's.
 */
#define UTIL_RDM_NO_COMPLETION UTIL_EP_NO_COMPLETION
#define UTIL_RDM_DEFERRED (1ULL << 62)
/* A transfer of the engine's own (UTIL_RDM_COLL, util_rdm_coll_send and
 * util_rdm_coll_recv): its end goes to util_coll_xfer_done, never to a CQ
 * or counter. */
#define UTIL_RDM_INTERNAL (1ULL << 61)

struct util_rdm_tx {
	void *context; /* application's */
	uint64_t flags; /* op flags in force (FI_COMPLETION, ...) */
	uint64_t cq_flags; /* FI_SEND | FI_MSG ..., for the completion */
	fi_addr_t dest;
	struct util_peer *peer;
	uint32_t gen; /* bumped at each reuse: the high half of its id */
	bool live;
	bool handing; /* inside the transport call that takes it */
	/* Reported (counted) when the engine took it, inject completion
	 * (tx_inject_complete): its end reports nothing more. */
	bool reported;
	/* Counted in peer->nflight while a transport holds it. */
	bool in_flight;
	struct util_rdm_hdr hdr;
	size_t iov_count;
	struct iovec iov[UTIL_RDM_IOV_MAX];
	void *desc[UTIL_RDM_IOV_MAX];
	/* RMA and atomics */
	size_t rma_count;
	struct fi_rma_iov rma_iov[UTIL_RDM_IOV_MAX];
	size_t res_count; /* fetch / compare atomics */
	struct iovec res_iov[UTIL_RDM_IOV_MAX];
	size_t cmp_count;
	struct iovec cmp_iov[UTIL_RDM_IOV_MAX];
	enum fi_op atomic_op;
	enum fi_datatype datatype;
	uint32_t kind; /* UTIL_RDM_TX_* */
	bool cq_reserved;
	struct util_cntr *dcntr; /* UTIL_RDM_DEFERRED: the counter */
	/* On ep->tx_waiting while the transport holds it, or on
	 * peer->queued while it waits for the transport to take it. */
	struct dlist_entry waiting;
	uint8_t inject_buf[]; /* copy of injected data, tx_inject_size bytes */
};

enum util_rdm_tx_kind {
	UTIL_RDM_TX_SEND,
	UTIL_RDM_TX_WRITE,
	UTIL_RDM_TX_READ,
	UTIL_RDM_TX_ATOMIC,
	UTIL_RDM_TX_FETCH_ATOMIC,
	UTIL_RDM_TX_COMPARE_ATOMIC,
};

/*
 * An arriving message, as the transport read it.  Valid only during the
 * util_rdm_msg_arrived call.
 */
struct util_rdm_msg {
	uint32_t op; /* enum util_rdm_op */
	uint32_t flags; /* UTIL_RDM_* */
	uint64_t tag;
	uint64_t data;
	size_t len; /* whole message */
	fi_addr_t src; /* in the endpoint's AV, or FI_ADDR_NOTAVAIL */
	const void *src_raw; /* the sender's address, for FI_SOURCE_ERR */
	size_t src_raw_len;
	/*
	 * Either the whole payload is readable now (payload non-NULL: inline,
	 * or a bounce buffer), and the engine copies what it needs before
	 * returning; or payload is NULL and the transport's descriptor of the
	 * payload (stash_len bytes at stash) is kept by the engine and handed
	 * to ->fetch or ->discard later.
	 */
	const void *payload;
	const void *stash;
	size_t stash_len;
	/* Bytes the transport keeps for a stashed payload while the message
	 * waits unexpected (a copy out of a socket): counted against
	 * unexp_max like the engine's own copies.  0: it keeps nothing. */
	size_t stash_hold;
	uint64_t tx_id; /* sender's, echoed in the acknowledgement */
	void *reply; /* the transport's handle of the sender, for acks */
	struct util_rdm_xport *xp; /* the transport it came by (the engine's) */
};

/* Largest transport descriptor the engine keeps for a rendezvous message. */
#define UTIL_RDM_STASH_MAX 192
/* Longest sender address kept with an unexpected message (FI_SOURCE_ERR). */
#define UTIL_RDM_SRC_RAW_MAX 64

struct util_rdm_ep;
struct util_rdm_srx;
struct util_rdm_xport;
struct util_coll_ep;

/*
 * What a transport provides: a const table of ops.  Its limits (eager_max,
 * ...) belong to each endpoint (util_rdm_ep_attr), since they may depend
 * on the endpoint's peers and settings.  Every op is called with the
 * endpoint lock held and never blocks.
 *
 * Back-pressure.  A send or RMA op returns -FI_EAGAIN when the transport
 * cannot take the transmit now (connection being made, socket or queue
 * full).  A transmit that will be reported by a completion then waits in
 * the peer's queue and progress hands it over, in order: later transmits
 * to that peer queue behind it.  So does one that nothing will report
 * (fi_inject, a send or write under FI_SELECTIVE_COMPLETION without
 * FI_COMPLETION) once its data, at most inject_max bytes, is copied into
 * the transmit: its caller was told it is sent, and the peer gets it when
 * it makes room, even after the endpoint's close began
 * (util_rdm_ep_linger).  The rule the application sees: a call returns
 * -FI_EAGAIN when the endpoint holds tx_size transmits already, when the
 * destination peer holds all of them but a reserve for the others
 * (UTIL_RDM_PEER_RESERVE, or a quarter of a smaller tx_size: so that one
 * peer that stops reading cannot take every transmit and stall the
 * endpoint's traffic to the others, while it still gets about what
 * tx_attr promises), when the CQ has no room for the completion, or
 * when a transmit nothing reports carries more than inject_max bytes (or
 * reads) and its peer cannot take it now; the application then drives
 * progress (fi_cq_read) and calls again (fi_msg(3)).  A transport that
 * becomes able to send may call util_rdm_peer_ready to drain at once.
 * A queued transmit nothing reports that fails (its peer died) brings no
 * CQ entry (it has no context); a bound counter counts the error.
 *
 * Fences (FI_FENCE, fi_msg(3)).  A transmit posted with FI_FENCE, and
 * every transmit to the same peer posted after it, wait until every
 * transmit posted to that peer before it has completed: it waits at the
 * head of the peer's queue (the back-pressure queue above, which keeps
 * order) while the peer's count of transmits a transport holds
 * (util_peer.nflight) is not zero, and the progress after the last of
 * them is done hands it over.  "Completed" is where the engine lets go
 * of a transmit, at the completion level it was posted with: an eager
 * send the transport took (copied into its ordered queue or socket,
 * nothing later to that peer overtakes it), or, where the transport's
 * word is waited for (eager_late, FI_DELIVERY_COMPLETE), that word; a
 * rendezvous send when the receiver fetched it or it was written out; a
 * write or atomic when the transport finished it (data in the target's
 * memory, or the target's answer), the injected ones that reported when
 * taken (inject completion) included; a read or fetching
 * atomic when its data is in place.  The collectives' own transfers
 * are not waited for.  A fenced transmit nothing reports waits only as
 * any such transmit may (its data copied, at most inject_max bytes;
 * else -FI_EAGAIN until the fence is clear).  When the peer fails,
 * the fenced transmit and those behind it fail with the peer's error.
 * Other peers' transmits never wait for it.
 *
 * Transmits that complete later.  send_rndv and rma hand over a tx the
 * transport owns until it calls util_rdm_tx_done (a partial socket write,
 * a verbs work request, a fetch by the receiver).  Memory descriptors
 * (desc, from fi_mr_desc) reach the transport with every send, receive
 * and fetch.
 */
struct util_rdm_transport {
	/*
	 * Copy a whole message (hdr->len <= xp->eager_max bytes from iov)
	 * toward peer now, or take nothing (-FI_EAGAIN).  On 0 the
	 * application's buffer is free again.  With UTIL_RDM_ACK_REQ in
	 * hdr->flags the receiver answers with ->ack, and the transport then
	 * calls util_rdm_tx_acked.  Any other error fails the call.
	 */
	int (*send_eager)(struct util_rdm_xport *xp, struct util_peer *peer,
			  const struct util_rdm_hdr *hdr,
			  const struct iovec *iov, void **desc,
			  size_t iov_count);
	/*
	 * A message larger than eager_max, from tx->iov (tx->desc): the
	 * transport owns tx until it calls util_rdm_tx_done (after the
	 * receiver fetched or discarded it, or it was written out, or on
	 * failure).
	 */
	int (*send_rndv)(struct util_rdm_xport *xp, struct util_rdm_tx *tx);
	/*
	 * Fetch the first len bytes of a stashed message into iov (len may
	 * be less than the message: truncation).  Returns 0 when the data
	 * is in place and the sender has been told, -FI_EINPROGRESS when the
	 * transport will finish later and then call util_rdm_fetch_done with
	 * `cookie`, or an error (the receive completes in error).
	 */
	int (*fetch)(struct util_rdm_xport *xp, const void *stash,
		     const struct iovec *iov, void **desc, size_t iov_count,
		     size_t len, void *cookie);
	/* Drop a stashed message (discarded, truncated to 0, or at close). */
	void (*discard)(struct util_rdm_xport *xp, const void *stash);
	/* Acknowledge delivery of a message that asked for it. */
	int (*ack)(struct util_rdm_xport *xp, void *reply, uint64_t tx_id,
		   int err);
	/*
	 * RMA and atomics (tx->kind says which): move the data and apply the
	 * operation at the target; util_rdm_tx_done when the initiator's
	 * side is finished (read data and fetched values in place).  NULL
	 * when the transport has none: the calls fail with -FI_EOPNOTSUPP.
	 */
	int (*rma)(struct util_rdm_xport *xp, struct util_rdm_tx *tx);
	/*
	 * Read and handle what arrived; returns how many events it handled
	 * (0: nothing was there), so an automatic-progress thread can back
	 * off when idle.
	 */
	int (*progress)(struct util_rdm_xport *xp);
	/*
	 * Optional: the fd that becomes readable when progress has work (a
	 * socket, an epoll fd, a completion channel), or -1.  The engine adds
	 * it to the wait objects of the CQs and counters bound to the
	 * endpoint, so fi_cq_sread and fi_cntr_wait sleep in the kernel and
	 * an FI_WAIT_FD CQ's fd works in the application's epoll.
	 */
	int (*wait_fd)(struct util_rdm_xport *xp);
	/*
	 * Optional, with wait_fd: a thread is about to sleep on it, so make
	 * it signal the next event (arm a verbs CQ's completion channel),
	 * then look once more.  Returns how many events it found and handled
	 * (not 0: the caller looks before sleeping).  Only on the way to
	 * sleep, never while polling, so progress needs no system call to
	 * keep the fd right.
	 */
	int (*arm)(struct util_rdm_xport *xp);
	/* Per-peer state (util_peer.h): bytes, and optional init / fini. */
	size_t peer_size;
	int (*peer_init)(struct util_rdm_xport *xp, struct util_peer *peer);
	void (*peer_fini)(struct util_rdm_xport *xp, struct util_peer *peer);
	/*
	 * A local transport's (util_rdm_ep_attr.local_ops): whether it reaches
	 * this new peer (its part already initialised by peer_init).  The
	 * engine sends to the peer through the first transport that says
	 * yes, for the peer's lifetime; the endpoint's primary transport
	 * takes the rest.
	 */
	bool (*reaches)(struct util_rdm_xport *xp, struct util_peer *peer);
	/*
	 * Optional: whether everything a peer that util_rdm_fail_peer named
	 * sent before it died has been offered to the engine (nothing of it
	 * waits in a queue of ours).  Until every transport says so,
	 * receives directed to that peer wait; then they fail.  Without it,
	 * the transport is taken to have offered everything when it failed
	 * the peer.  Called from progress, with the endpoint lock held.
	 */
	bool (*peer_drained)(struct util_rdm_xport *xp,
			     struct util_peer *peer);
	/*
	 * Optional: whether bytes the transport reported sent (an eager
	 * message it took, partly written) still wait in its own queues to
	 * leave, to a peer it still reaches.  util_rdm_ep_linger waits for
	 * them too.  Called with the endpoint lock held.
	 */
	bool (*lingering)(struct util_rdm_xport *xp);
};

/*
 * One transport serving one endpoint: its ops, and its limits there.  A
 * transport embeds it in its endpoint state and finds that state again
 * from the pointer the ops get (container_of).  An endpoint has a primary
 * transport and may have a local one (shm beside tcp or verbs), which it
 * asks first about each new peer: a peer on the same host is then reached
 * through shared memory, every other through the network, behind one
 * fi_addr space, one matching queue and one set of completions.
 *
 * Each transport keeps per-peer state in the peer's allocation: the
 * primary's part starts at the struct util_peer (it may embed it first);
 * a local transport's starts peer_off bytes in (util_rdm_peer_part).
 */
struct util_rdm_xport {
	const struct util_rdm_transport *ops;
	struct util_rdm_ep *ep; /* set by util_rdm_ep_init */
	/* Messages up to eager_max bytes go through send_eager. */
	size_t eager_max;
	/*
	 * Eager sends complete when the transport says (a device's work
	 * completion: the peer's transport has them), not when copied:
	 * send_eager may then answer -FI_EINPROGRESS for a hdr with
	 * UTIL_RDM_LATE, keep hdr->tx_id, and call util_rdm_tx_done (or
	 * let util_rdm_fail_peer finish it) from its progress, never from
	 * within the call.  A send to a peer that died is then never
	 * reported done.
	 */
	bool eager_late;
	size_t peer_off; /* set by util_rdm_ep_init */
	int wait_fd; /* ops->wait_fd's answer, once asked; -1 */
};

static inline void *util_rdm_peer_part(const struct util_rdm_xport *xp,
				       struct util_peer *peer)
{
	return (char *)peer + xp->peer_off;
}

/* A posted receive. */
struct util_rdm_rx {
	struct util_rx_entry m;
	uint64_t flags; /* op flags in force */
	struct util_cntr *dcntr; /* UTIL_RDM_DEFERRED: the counter */
	uint64_t cq_flags; /* FI_RECV | FI_MSG / FI_TAGGED */
	size_t iov_count;
	struct iovec iov[UTIL_RDM_IOV_MAX];
	void *desc[UTIL_RDM_IOV_MAX];
};

/* An unexpected message kept until a receive takes it. */
struct util_rdm_unexp {
	struct util_unexp_entry m;
	uint32_t op;
	uint32_t flags;
	uint64_t data;
	uint64_t tx_id;
	void *reply;
	struct util_rdm_xport *xp; /* the transport it came by */
	void *heap; /* payload copy, malloc'ed to its size, when it did not
		     * fit inline_buf */
	bool stashed; /* payload is at the transport: stash holds its descriptor */
	size_t hold; /* msg.stash_hold, counted in unexp_bytes */
	size_t stash_len;
	uint8_t stash[UTIL_RDM_STASH_MAX];
	size_t src_raw_len; /* sender's address, kept for FI_SOURCE_ERR */
	uint8_t src_raw[UTIL_RDM_SRC_RAW_MAX];
	uint8_t inline_buf[]; /* ep->unexp_inline bytes */
};

/*
 * The one way a provider changes what the engine answers for its
 * endpoints: optional hooks, a const table named in util_rdm_ep_attr
 * (never a copy of the engine's ops tables).
 */
struct util_rdm_ep_hooks {
	/* Endpoint options of the provider's own (tcp MSG: FI_OPT_CM_DATA_SIZE),
	 * asked first; -FI_ENOPROTOOPT: the engine answers. */
	int (*getopt)(struct util_rdm_ep *ep, int level, int optname,
		      void *optval, size_t *optlen);
	/* The atomics the endpoint takes, in place of every one up to
	 * atomic_max (verbs: the device's set); flags FI_FETCH_ATOMIC or
	 * FI_COMPARE_ATOMIC as util_atomic_query takes them. */
	int (*atomic_valid)(struct util_rdm_ep *ep, enum fi_datatype dt,
			    enum fi_op op, uint64_t flags, size_t *count);
};

/*
 * A transport that reaches the peers on this host beside the provider's
 * own (shm beside tcp and verbs: shm_local_ops, weft/shm_local.h).  A
 * provider names it once, in util_rdm_ep_attr.local_ops; the engine runs
 * its whole life: open with the endpoint, start at FI_ENABLE under the
 * address the endpoint's fi_getname reports, stop and free at close.  It
 * is asked first about each new peer (util_rdm_transport.reaches).
 */
struct util_rdm_local_ops {
	/* A transport for an endpoint of this info (its msg_order); NULL:
	 * no memory. */
	struct util_rdm_xport *(*open)(const struct fi_info *info);
	/*
	 * At FI_ENABLE: come up under the endpoint's address (addrlen bytes,
	 * the AV's stored form) and, behind a scalable endpoint, its pair
	 * `pair`.  Whether it is up: when not, it stays idle and every peer
	 * goes through the primary transport, which still works; it logs why
	 * as provider prov, whose primary transport `via` names.
	 */
	bool (*enable)(struct util_rdm_xport *xp, const struct fi_provider *prov,
		       const char *via, const void *addr, size_t addrlen,
		       uint32_t pair);
	/* At close, before the engine lets go of its peers: peers stop
	 * sending here.  Then close, after the engine is done with it. */
	void (*closing)(struct util_rdm_xport *xp);
	void (*close)(struct util_rdm_xport *xp);
};

struct util_rdm_ep_attr {
	/* Optional: what the provider answers itself (above). */
	const struct util_rdm_ep_hooks *hooks;
	/* The primary transport (ops and eager_max set). */
	struct util_rdm_xport *xport;
	/* Optional: a transport to same-host peers (above), and what to call
	 * the primary one in its log lines ("tcp", "the device"). */
	const struct util_rdm_local_ops *local_ops;
	const char *local_via;
	/* Bytes fi_inject may carry (<= every transport's eager_max). */
	size_t inject_max;
	/* Bytes of one atomic operand vector (and of its results). */
	size_t atomic_max;
	/* Bytes of a peer address in the AV's stored form (0: the AV's). */
	size_t peer_addr_len;
	/* A connected (FI_EP_MSG) endpoint: no AV, one peer (peers.fixed),
	 * addresses in calls ignored. */
	bool connected;
	size_t unexp_inline; /* bytes kept inline in an unexpected record */
	/* Bound on what unexpected messages may hold (records and payload
	 * copies, in bytes); 0: none.  Past it the engine refuses arrivals
	 * (util_rdm_msg_arrived), and the transport holds them back. */
	size_t unexp_max;
	/* Progress of this endpoint also moves the domain's other sweeping
	 * endpoints along, now and then, when their locks are free: a
	 * transport whose connections need each side's progress (verbs'
	 * rdma_cm handshake) then connects while the application waits on
	 * one endpoint only.  (tcp gets the same from its domain's epoll.) */
	bool sweep_domain;
};

/*
 * The receive state: posted receives and unexpected messages of both
 * classes, with the pools they come from and the bound on what the
 * unexpected ones hold.  Each endpoint has its own (own_rxq), or shares a
 * shared receive context's (util_rdm_srx) with the other endpoints bound
 * to it: their endpoint lock (util_ep.lock) is then the context's lock,
 * so the engine takes one lock whichever endpoint a message came by, and
 * no order between two locks exists.  Everything here is under that lock.
 */
struct util_rdm_rxq {
	/* What guards it: its endpoint's own lock, or the shared receive
	 * context's (which every endpoint bound to it takes as its own). */
	struct weft_lock *lock;
	uint64_t caps; /* FI_DIRECTED_RECV: receives name their source */
	struct util_match msgq, tagq;
	/* UTIL_RDM_COLL: the collectives' receives and early arrivals,
	 * matched by exact tag (util_coll.c). */
	struct util_match collq;
	/* The three by enum util_rdm_op (a load, no branch, per arrival). */
	struct util_match *queue[4];
	struct util_bufpool *rx_pool, *unexp_pool, *fetch_pool;
	size_t unexp_inline;
	size_t unexp_max; /* 0: unbounded */
	size_t unexp_bytes; /* held by unexpected messages now */
	/* Unexpected messages may wait from senders the AV did not name
	 * when they came; looked at again when the AV's inserts change. */
	bool unexp_unknown;
	uint64_t unexp_av_inserts;
	/* The AV its endpoints share (fi_endpoint(3)), or NULL. */
	struct util_av *av;
	/* Endpoints that use it (util_rdm_ep.rxq_entry): the first reports
	 * what belongs to no arrival (a canceled receive on an srx). */
	struct dlist_entry eps;
};

/*
 * An engine endpoint sits on the endpoint base (weft/util_ep.h), which
 * holds its fid, lock, op flags, bindings (CQs, counters, AV), progress
 * hooks and wait fds, the automatic-progress thread and enabled; the
 * engine fills the base's ops (util_ep_ops) with its progress over its
 * transports.  What the application holds of it is its own fid, or a
 * context of a scalable endpoint (util_rdm_ctx) whose util_ep_fid leads
 * to the engine endpoint behind it: util_rdm_ep_of finds it in one load.
 */
struct util_rdm_ep {
	struct util_ep base; /* first */
	struct util_rdm_xport *xp; /* the primary transport */
	struct util_rdm_xport *local; /* or NULL */
	const struct util_rdm_local_ops *local_ops; /* with local */
	const char *local_via;
	bool local_up; /* local started at FI_ENABLE */
	const struct util_rdm_ep_hooks *hooks; /* or NULL */
	size_t inject_max, atomic_max; /* the transports' limits */
	/* Remote CQ data as the domain's cq_data_size has it: the same
	 * bytes reach the peer whichever transport carries them. */
	uint64_t data_mask;
	bool connected; /* FI_EP_MSG: no AV, one peer */
	bool tx_shared; /* tx_ctx_cnt FI_SHARED_CONTEXT: stx bound first */
	struct util_rdm_stx *stx; /* or NULL */
	/* The receive state and the lock: own_rxq, or a shared receive
	 * context's (bound before enable, then fixed). */
	struct util_rdm_rxq *rxq;
	struct dlist_entry rxq_entry; /* on rxq->eps */
	/* Receives may be directed to a peer that is gone (util_peer.gone):
	 * progress fails them once the transports have drained it. */
	bool rx_gone;
	/* Behind a scalable endpoint's contexts (util_rdm_sep): the
	 * contexts check their own bindings; binds are taken after enable. */
	struct util_rdm_sep *sep;
	uint32_t pair; /* behind sep: its index */

	struct util_bufpool *tx_pool;
	/* Transmits one peer may hold: tx_size but a reserve for the others
	 * (UTIL_RDM_PEER_RESERVE; all of them on a connected endpoint). */
	uint32_t peer_tx_max;
	struct dlist_entry tx_waiting; /* util_rdm_tx.waiting */
	struct util_peer_map peers;
	struct dlist_entry blocked; /* util_peer.blocked: peers with queued tx */
	bool sweep; /* on domain->sweep_eps (attr.sweep_domain) */
	/* On the domain's targets (FI_RMA or FI_ATOMIC): counters bound to
	 * registrations run it under manual progress. */
	bool target;
	struct util_progress target_progress;
	unsigned int sweep_calls;
	struct dlist_entry sweep_entry;

	struct util_rdm_rxq own_rxq;

	/* Collectives (weft/util_coll.h): NULL until the first join.
	 * coll_retry: a step of theirs waits for room (a transmit or a
	 * receive the pools refused): progress posts it again. */
	struct util_coll_ep *coll;
	bool coll_retry;
};

/* The endpoint's lock: its own, or its shared receive context's when it
 * has one (util_ep.lock).  Whoever takes it and lets go keeps the
 * pointer. */
static inline struct weft_lock *util_rdm_lock(struct util_rdm_ep *ep)
{
	return ep->base.lock;
}

/*
 * Initialise the engine part of a provider's RDM endpoint from the
 * fi_info given to fi_endpoint.  Fills ep_fid's ops with the engine's;
 * the caller then sets ep_fid.fid.ops (its close, wrapping bind and
 * control) and ep_fid.cm (its names).  Returns 0, -FI_EINVAL or
 * -FI_ENOMEM.
 */
int util_rdm_ep_init(struct util_rdm_ep *ep, struct util_domain *domain,
		     const struct fi_info *info,
		     const struct util_rdm_ep_attr *attr, void *context);

/*
 * The start of a provider's close, while its transport still works: the
 * transmits queued to peers that nothing will report (injects, and sends
 * without a completion, that their peers could not take yet: their
 * callers were told they were sent) are handed over, progress running,
 * and what a transport took of them leaves its own queues
 * (->lingering), until nothing is left, their peers are found gone
 * (util_rdm_fail_peer drops them), or UTIL_RDM_LINGER_MS passed (then
 * the rest is dropped, with a warning).  Returns at once when nothing
 * waits.  May block; takes the endpoint lock.
 */
#define UTIL_RDM_LINGER_MS 5000
void util_rdm_ep_linger(struct util_rdm_ep *ep);

/*
 * Release the engine state: the base closes first (util_ep_close:
 * progress stops, bindings are undone), then posted receives complete as
 * FI_ECANCELED, unexpected messages are dropped (stashed ones through
 * ->discard), and the base is let go (util_ep_fini).  The transport must
 * have finished every tx it held.  Called from the provider's close.
 */
void util_rdm_ep_fini(struct util_rdm_ep *ep);

/* The engine's bind op: a shared transmit context, EQs (nothing to
 * report), the rest the base's (util_ep_bind_locked); binds after
 * fi_enable only behind a scalable endpoint.  Providers' binds call it. */
int util_rdm_ep_bind(struct fid *fid, struct fid *bfid, uint64_t flags);

/* fi_control: the local transport starts at FI_ENABLE, then the base's
 * (util_ep_control; the engine's FI_ENABLE checks: an AV unless
 * connected, a bound shared transmit context when asked for, then the
 * base's).  Providers' control calls it. */
int util_rdm_ep_control(struct fid *fid, int command, void *arg);

/*
 * The collectives' transfers (UTIL_RDM_COLL), with the endpoint lock held:
 * a message of len bytes from buf to dest under tag, and a receive of one
 * into buf under tag (exact match, from any sender).  Neither matches,
 * reports to or counts on anything of the application's; each ends with
 * util_coll_xfer_done(ep, ctx, err), possibly before the call returns.
 * buf stays the caller's until then.  Returns 0, -FI_EAGAIN (no transmit
 * or receive left now: post again later) or another error (nothing
 * posted).
 *
 * A send with err not 0 carries no data but that code (a member whose
 * operation failed tells those that wait for its data): the receive it
 * matches ends with err.  A receive names the member it waits for (src):
 * once that peer is gone and everything it sent was offered, a receive
 * still waiting for it will never be matched, and the engine calls
 * util_coll_peer_gone from progress.
 */
int util_rdm_coll_send(struct util_rdm_ep *ep, fi_addr_t dest, uint64_t tag,
		       const void *buf, size_t len, int err, void *ctx);
int util_rdm_coll_recv(struct util_rdm_ep *ep, fi_addr_t src, uint64_t tag,
		       void *buf, size_t len, void *ctx);
/* Take back the receives posted with ctx that nothing matched yet (they
 * end unreported); how many. */
size_t util_rdm_coll_cancel(struct util_rdm_ep *ep, void *ctx);

/* ---- transport → engine ------------------------------------------------ */

/*
 * A message arrived.  Returns 0 when the engine took it (delivered it, or
 * kept it as unexpected: a payload is copied before the call returns, a
 * stash is kept), or -FI_EAGAIN when it cannot take it now: it matches no
 * posted receive and keeping it would pass the endpoint's unexp_max (or
 * memory ran short).  Then nothing happened: the transport still owns the
 * message and must offer it again later, before anything that arrived
 * after it from the same sender (reliable endpoints drop nothing, and
 * ordering holds), and should hold its senders back meanwhile.  Posting a
 * receive, or one taking an unexpected message, makes room.  Any other
 * return is an error already dealt with (the message is gone).
 */
int util_rdm_msg_arrived(struct util_rdm_xport *xp, struct util_rdm_msg *msg);

/* A fetch that returned -FI_EINPROGRESS is finished (err positive). */
void util_rdm_fetch_done(struct util_rdm_ep *ep, void *cookie, int err);

/* A tx the transport held is finished (err 0 or a positive FI_E*). */
void util_rdm_tx_done(struct util_rdm_ep *ep, struct util_rdm_tx *tx,
		      int err);

/*
 * The peer at dest is gone (died, closed, unreachable): every transmit the
 * engine handed to the transport for it completes with err (positive).
 * Returns how many did.
 */
int util_rdm_fail_dest(struct util_rdm_ep *ep, fi_addr_t dest, int err);

/*
 * The peer is gone or unreachable: every transmit to it that the transport
 * holds or the engine queued completes with err (positive), and so do,
 * once the transports have offered whatever it sent before
 * (->peer_drained), the receives directed to it (FI_DIRECTED_RECV), those
 * posted later included, until the transport reaches it again
 * (util_rdm_peer_ready, or util_rdm_peer_back).  Returns how many
 * transmits completed.
 */
int util_rdm_fail_peer(struct util_rdm_ep *ep, struct util_peer *peer,
		       int err);

/* Complete every posted receive with err (a connected endpoint whose
 * connection ended).  Called with the endpoint lock held. */
void util_rdm_flush_rx(struct util_rdm_ep *ep, int err);

/* The transport can take transmits to peer again: hand over its queue.
 * A peer that was gone is back. */
void util_rdm_peer_ready(struct util_rdm_ep *ep, struct util_peer *peer);

/* The transport reached a peer that was gone again (a new process under
 * its address): receives directed to it wait for it again. */
static inline void util_rdm_peer_back(struct util_peer *peer)
{
	peer->gone = false;
}

/*
 * Whether transmits wait in the queue of a peer that xp reaches, for the
 * transport to take them (back-pressure).  A transport that cannot wake a
 * sleeper when such a peer makes room (shm) polls instead of sleeping
 * while this holds.  Not a fast path: it walks the blocked peers.
 */
bool util_rdm_tx_queued(const struct util_rdm_ep *ep,
			const struct util_rdm_xport *xp);

/* Whether any transmit waits on a peer (rendezvous, RMA, acknowledgement). */
static inline bool util_rdm_tx_waiting(const struct util_rdm_ep *ep);
static inline bool util_rdm_rx_directed(const struct util_rdm_ep *ep);

/* A delivery acknowledgement for tx_id arrived. */
void util_rdm_tx_acked(struct util_rdm_ep *ep, uint64_t tx_id, int err);

/*
 * The tx behind an id a transport put on the wire, or NULL when no live
 * transmit has that id (late, duplicated or forged: the generation in the
 * id's high half must match).
 */
struct util_rdm_tx *util_rdm_tx_of(struct util_rdm_ep *ep, uint64_t tx_id);
uint64_t util_rdm_tx_id(struct util_rdm_ep *ep, struct util_rdm_tx *tx);

/*
 * Target side of RMA: report a remote write or read that completed here:
 * bumps the remote counters and, with remote CQ data (FI_REMOTE_CQ_DATA
 * in flags), writes the receive-side completion.
 */
void util_rdm_remote_event(struct util_rdm_ep *ep, uint64_t flags,
			   size_t len, uint64_t data);

/*
 * What a remote operation of `kind` (UTIL_RDM_TX_*; `op` for atomics) did
 * to the target's memory, as counters bound to registrations count it
 * (util_mr_map_count, fi_mr_bind): FI_REMOTE_WRITE when it may have
 * changed it (writes, and every atomic but FI_ATOMIC_READ), FI_REMOTE_READ
 * when it handed its contents to the initiator (reads, fetching and
 * compare atomics).  The endpoint's remote counters keep fi_ep_bind's
 * classes (util_rdm_remote_event).
 */
uint64_t util_rdm_mr_events(uint32_t kind, enum fi_op op);

/*
 * Target side of software RMA and atomics, for every transport that moves
 * the data itself (shm, tcp, and verbs for its atomics):
 *  util_rdm_target_iov     checks that a peer may access each remote range
 *                          (key, bounds, access) and translates the ranges
 *                          into at most max local pieces;
 *  util_rdm_target_atomic  applies an atomic to those pieces, operands,
 *                          compare values and results packed.
 * Then util_rdm_remote_event reports it.  Return 0 or -FI_E*.
 */
struct util_mr_map;
int util_rdm_target_iov(struct util_mr_map *map, const struct fi_rma_iov *rma,
			size_t count, uint64_t access, struct iovec *local,
			size_t max, size_t *nlocal);
int util_rdm_target_atomic(enum fi_op op, enum fi_datatype dt,
			   const struct iovec *local, size_t nlocal,
			   const void *src, const void *cmp, void *res);

static inline bool util_rdm_tx_waiting(const struct util_rdm_ep *ep)
{
	return !dlist_empty(&ep->tx_waiting);
}

/* Whether any posted receive waits for one peer only (FI_DIRECTED_RECV,
 * or a collective's step, which waits for one member): a transport that
 * learns of deaths by looking should look then too. */
static inline bool util_rdm_rx_directed(const struct util_rdm_ep *ep)
{
	return ep->rxq->msgq.posted_directed || ep->rxq->tagq.posted_directed ||
	       ep->rxq->collq.nposted;
}

/* Whether ep is an endpoint or a context of the engine's (its fid_ep
 * ops are the engine's). */
bool util_rdm_is_ep(const struct fid_ep *ep);

static inline struct util_rdm_ep *util_rdm_ep_of(struct fid_ep *ep_fid)
{
	return container_of(util_ep_of(ep_fid), struct util_rdm_ep, base);
}

/* ---- scalable endpoints ------------------------------------------------ */

/*
 * A scalable endpoint (fi_scalable_ep): one address, tx_ctx_cnt transmit
 * and rx_ctx_cnt receive contexts.  Context pair i (transmit context i
 * and receive context i) is one engine endpoint of the provider's, with
 * its own transport, lock and progress: two threads on two pairs share
 * nothing.  A pair is reached at the scalable endpoint's address with
 * context index i (util_peer.ctx; fi_rx_addr names it), and says that
 * address and index as its sender's identity, so completions at a peer
 * report the scalable endpoint's fi_addr whichever pair sent.  Pair 0
 * is reached at the address itself: a plain endpoint talks to it as to
 * any other.
 *
 * The provider gives the pairs: pair_open opens its endpoint for pair i
 * (an RDM endpoint as fi_endpoint makes, its transport named for the
 * scalable endpoint's address and context i; not enabled).  The engine
 * opens a pair at first need (a context of it, or fi_enable of the
 * scalable endpoint), pair 0 before any other, enables it at the first
 * fi_enable of the scalable endpoint or of one of its contexts (pair 0
 * first), and closes it with the scalable endpoint.  Names: getname and
 * setname answer fi_getname and fi_setname (before enable); NULL, for a
 * provider whose pair 0 listens at the scalable endpoint's socket
 * address (tcp, verbs): pair 0's name, and the address pair 0 will open
 * at (info->src_addr).  release frees the provider's structure at close.
 */
struct util_rdm_sep;

struct util_rdm_sep_ops {
	int (*pair_open)(struct util_rdm_sep *sep, uint32_t index,
			 struct util_rdm_ep **ep);
	int (*getname)(struct util_rdm_sep *sep, void *addr, size_t *addrlen);
	int (*setname)(struct util_rdm_sep *sep, const void *addr,
		       size_t addrlen);
	void (*release)(struct util_rdm_sep *sep);
	uint32_t max_ctx; /* contexts of each kind a scalable endpoint may have */
	/* Pair 0 serves the whole scalable endpoint (tcp: its listener),
	 * so the other pairs' progress drives it too: its lock is real
	 * whatever the threading model. */
	bool pair0_shared;
};

/* A transmit or receive context: what fi_tx_context / fi_rx_context return. */
struct util_rdm_ctx {
	struct util_ep_fid efid; /* first: efid.ep is the pair's base */
	struct util_rdm_sep *sep;
	uint32_t index;
	bool tx;
	bool enabled;
};

/*
 * A pair's inbox (pair0_shared providers: tcp's listener, verbs' rdma_cm
 * listener): what pair 0 took for pair i (a connection, a connect
 * request) is handed over in it, under the scalable endpoint's inbox_lock
 * (a leaf: nothing is taken under it), and announced by the pair's bell,
 * an eventfd the pair puts in its wait set, so that a thread asleep on the
 * pair wakes and takes it, under the pair's own lock.  Pair 0 hands over
 * under its own lock.
 */
struct util_rdm_inbox {
	struct dlist_entry list; /* the provider's entries */
	atomic_bool ready;	 /* list is not empty */
	atomic_bool open;	 /* the pair takes: handing over rings bell */
	int bell;		 /* eventfd, or -1 (util_rdm_inbox_bell) */
};

struct util_rdm_sep {
	struct fid_ep ep_fid; /* FI_CLASS_SEP */
	struct util_domain *domain;
	const struct util_rdm_sep_ops *ops;
	struct fi_info *info; /* the scalable endpoint's; pair_open's */
	pthread_mutex_t lock; /* setup and teardown only */
	pthread_cond_t enabled_cond; /* an enable ended (enabling) */
	bool enabling; /* a pair's FI_ENABLE runs, sep->lock dropped */
	struct util_av *av;
	uint32_t ntx, nrx, npair;
	struct util_rdm_sep_pair {
		struct util_rdm_ep *ep;
		struct util_rdm_ctx *tx, *rx;
		struct util_rdm_inbox inbox;
	} *pair;
	pthread_mutex_t inbox_lock;
	bool enabled;
};

/*
 * Pair i's inbox.  util_rdm_inbox_bell makes its bell (once; the eventfd,
 * or -errno), which the pair puts in its wait set; util_rdm_inbox_open
 * says the pair takes from now on (at its fi_enable), util_rdm_inbox_shut
 * that it no longer does (at its close: when it returns, no hand-over
 * rings the bell any more).  util_rdm_inbox_post hands e over (pair 0,
 * under its lock) and rings the bell of an open pair; the pair, seeing
 * util_rdm_inbox_ready or woken by its bell, calls util_rdm_inbox_hush
 * and then util_rdm_inbox_take until NULL.  The bells close with the
 * scalable endpoint.
 */
int util_rdm_inbox_bell(struct util_rdm_sep *sep, uint32_t i);
void util_rdm_inbox_open(struct util_rdm_sep *sep, uint32_t i);
void util_rdm_inbox_shut(struct util_rdm_sep *sep, uint32_t i);
static inline bool util_rdm_inbox_is_open(struct util_rdm_sep *sep,
					  uint32_t i)
{
	return atomic_load_explicit(&sep->pair[i].inbox.open,
				    memory_order_acquire);
}
void util_rdm_inbox_post(struct util_rdm_sep *sep, uint32_t i,
			 struct dlist_entry *e);
static inline bool util_rdm_inbox_ready(struct util_rdm_sep *sep, uint32_t i)
{
	return atomic_load_explicit(&sep->pair[i].inbox.ready,
				    memory_order_acquire);
}
void util_rdm_inbox_hush(struct util_rdm_sep *sep, uint32_t i);
struct dlist_entry *util_rdm_inbox_take(struct util_rdm_sep *sep, uint32_t i);

/*
 * Set up sep (the provider's structure embeds it) for fi_scalable_ep:
 * info's ep_attr gives the contexts (0 counts as 1; at most ops->max_ctx,
 * which the provider's domain_attr says as max_ep_tx_ctx / max_ep_rx_ctx).  On 0 *sep_fid is the application's.
 */
int util_rdm_sep_init(struct util_rdm_sep *sep, struct util_domain *domain,
		      const struct fi_info *info,
		      const struct util_rdm_sep_ops *ops,
		      struct fid_ep **sep_fid, void *context);

/*
 * A shared transmit context (fi_stx_context, fi_endpoint(3)): endpoints
 * opened with ep_attr->tx_ctx_cnt FI_SHARED_CONTEXT bind one before
 * fi_enable and keep within its transmit capabilities.  Operations are
 * still posted to the endpoints and complete on their CQs; each endpoint
 * keeps its own transmit queue behind it, so nothing is serialised
 * between the endpoints that share one.  Providers name
 * util_rdm_stx_open as their domain's stx_ctx and report
 * max_ep_stx_ctx.
 */
struct util_rdm_stx {
	struct fid_stx stx_fid;
	struct util_domain *domain; /* not held: compared at bind only */
	struct fi_tx_attr attr;
	atomic_uint bound; /* endpoints bound to it */
};

int util_rdm_stx_open(struct fid_domain *domain, struct fi_tx_attr *attr,
		      struct fid_stx **stx, void *context);

/*
 * A shared receive context (fi_srx_context, fi_endpoint(3)): endpoints
 * opened with ep_attr->rx_ctx_cnt FI_SHARED_CONTEXT bind one before
 * fi_enable and then receive into the receives posted to it (or to any
 * of them: they post to it), and keep their unexpected messages there.
 * A completion goes to the CQ and counter of the endpoint the message
 * came by (the context has none of its own).  Its lock is the lock of
 * every endpoint bound to it (util_rdm_rxq).  Providers name
 * util_rdm_srx_open as their domain's srx_ctx and report max_ep_srx_ctx.
 */
struct util_rdm_srx {
	/* First.  Its lock is the lock of every endpoint bound to it (their
	 * util_ep.lock points here) and of its receive state. */
	struct util_srx base;
	struct util_rdm_rxq rxq;
};

int util_rdm_srx_open(struct fid_domain *domain, struct fi_rx_attr *attr,
		      struct fid_ep **srx, void *context);
/* The engine's shared receive context behind fid, or NULL (another kind). */
struct util_rdm_srx *util_rdm_srx_of(struct fid *fid);

#endif /* WEFT_UTIL_RDM_H */
