/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * What the pieces of the verbs RDM endpoint share (verbs_rdm.c,
 * verbs_rdm_conn.c, verbs_rdm_tx.c, verbs_rdm_rx.c): sizes, objects, the
 * send queue's accounting, and the functions one piece calls in another.
 * Private to prov/verbs.
 */
#ifndef WEFT_VERBS_RDM_H
#define WEFT_VERBS_RDM_H

#include "verbs.h"

#include "weft/shm_local.h"
#include "weft/util_atomic.h"
#include "weft/util_bufpool.h"
#include "weft/util_iov.h"
#include "weft/util_wait.h"

/* ---- sizes --------------------------------------------------------------- */

/* The wire format is verbs_proto.h's (docs/verbs-protocol.md). */
_Static_assert(VRDM_RTS_SEG_MAX == UTIL_RDM_IOV_MAX,
	       "an RTS names every segment of a send");
_Static_assert(VRDM_ATOMIC_MAX == VERBS_RDM_ATOMIC_MAX, "what we offer");
_Static_assert(VRDM_BUF_SIZE % 64 == 0, "buffers stay aligned");

/*
 * Flow control by credits (iWARP has no RNR retry: a SEND finding no
 * receive breaks the connection).  Each QP brings VRDM_CREDITS receive
 * buffers to the SRQ and each side may have that many SENDs (and writes
 * with immediate data) unanswered; reposted buffers go back in every
 * header's credits, or in a CREDIT message once half are owed.  The last
 * credits are kept for answers (FIN, ACK) and the very last for CREDIT,
 * so that flow can always resume.
 */
#define VRDM_CREDIT_DATA 8 /* left for answers when data stops */
#define VRDM_SRQ_MAX 8192
#define VRDM_TX_BUFS 256
#define VRDM_SQ_DEPTH 256
#define VRDM_SQ_CTRL 32 /* send queue slots only FIN / ACK / reads use */
#define VRDM_POLL 32
#define VRDM_HASH 256
#define VRDM_OP_WR_MAX 8
/* Receive buffers handed back at most, before they go to the SRQ. */
#define VRDM_REPOST_MAX 16
/* iWARP: how long connect requests a live peer leaves unanswered are
 * made again (conn_retry), about as long as InfiniBand's CM retries. */
#define VRDM_IWARP_CONNECT_MS 60000

/* ---- objects ------------------------------------------------------------- */

enum vwr_kind {
	VWR_RECV = 1,
	VWR_SEND = 2,	/* a send buffer */
	VWR_INLINE = 3, /* an inline send: the pointer is the conn */
	VWR_OP = 4,	/* a struct vop */
	VWR_DRAIN = 5,	/* the last work request of a dead QP: the conn */
};
#define VWR_KIND_MASK 7ULL

static inline uint64_t wr_id(const void *p, enum vwr_kind k)
{
	return (uint64_t)(uintptr_t)p | (uint64_t)k;
}

enum vconn_state {
	VC_ADDR,      /* resolving the address */
	VC_ROUTE,     /* resolving the route */
	VC_CONNECTING,/* connect request sent */
	VC_ACCEPTED,  /* accepted, nothing arrived yet */
	VC_OPEN,
	VC_CLOSED,
};

struct verbs_rdm_ep;
struct vpeer;

struct vconn {
	struct dlist_entry entry; /* ep->conns */
	struct vconn *hash_next;
	struct verbs_rdm_ep *ep;
	struct vpeer *peer;
	struct rdma_cm_id *id;
	struct ibv_qp *qp;
	uint32_t qpn;
	bool hashed;
	bool outgoing;
	enum vconn_state state;
	uint32_t sq_used;   /* send queue slots taken */
	uint32_t unsig;	    /* unsignaled sends since the last signaled one */
	/* Slots each signaled work request frees when it completes (the
	 * unsignaled ones before it too), in posting order. */
	uint32_t batch_head, batch_tail;
	uint16_t batch[VRDM_SQ_DEPTH];
	/* The engine's tx a signaled send completes (eager_late), or 0. */
	uint64_t late[VRDM_SQ_DEPTH];
	uint32_t credits;	/* SENDs the peer has receives for */
	uint32_t credit_return; /* receives of its we reposted, not told */
	bool credit_queued;	/* a CREDIT waits on deferred */
	struct dlist_entry deferred; /* struct vop.dentry: waiting for room */
	/* Messages of this QP the engine holds and will come back about
	 * (a stash for ->fetch or ->discard, a reply for ->ack). */
	uint32_t refs;
	bool drained; /* closed, and its drain marker completed */
	/* err_post_lost: closed, its QP in error at empty_seq flush_seq;
	 * what is still posted after the next empty CQ is ours to end. */
	bool self_flush;
	uint64_t flush_seq;
	/* The peer's fence region (struct vrdm_cm_priv); rkey 0: none. */
	struct verbs_fence fence;
	/* ATOMIC requests sent on this QP and not answered yet: RMA waits
	 * for them, or an RDMA write could land before an atomic the
	 * target has still to apply. */
	uint32_t amo_out;
};

struct vpeer {
	struct util_peer peer; /* first */
	struct vconn *conn;    /* the QP this side sends on */
	/* Our last attempt to connect failed with this (refused,
	 * unreachable): the next transmit is told, the one after tries
	 * again (a peer restarted under the address is reached). */
	int conn_err;
	/* Connects refused a busy local port in a row (route_resolved). */
	uint8_t port_busy;
	/* iWARP: until when (CLOCK_MONOTONIC ns) an unanswered connect is
	 * made again (conn_retry); 0 while no attempt is under way. */
	uint64_t connect_until;
};

struct vbuf {
	struct dlist_entry entry; /* free list, or ep->held */
	struct vconn *conn;	  /* sends: the QP it went on */
	uint8_t *data;
	uint32_t lkey;
	uint32_t byte_len; /* held receive */
	uint32_t qpn;
};

/* Receive buffers a QP brought to the SRQ. */
struct vchunk {
	struct dlist_entry entry; /* ep->chunks */
	struct ibv_mr *mr;
	uint8_t *mem;
	struct vbuf bufs[VRDM_CREDITS];
};

enum vop_kind {
	VOP_FETCH, /* rendezvous reads at the receiver */
	VOP_RNDV,  /* a rendezvous send waiting for FIN */
	VOP_RMA,   /* write, read, atomic */
	VOP_CTRL,  /* a FIN / ACK waiting for send queue room */
	VOP_ANSWER, /* an ATOMIC_RESP in its send buffer (bounce), waiting */
};

struct vop {
	enum vop_kind kind;
	struct dlist_entry entry;  /* ep->ops while in flight */
	struct dlist_entry dentry; /* conn->deferred */
	struct vconn *conn;
	uint64_t tx_id;	 /* ours (RNDV, RMA) or the sender's (FETCH) */
	uint32_t cookie; /* FETCH: the sender's RTS cookie */
	void *fetch_cookie;
	uint32_t pending; /* work requests not completed */
	int err;
	size_t nmr; /* registrations of the domain's cache it holds */
	struct util_mr_cache_entry *mr[VRDM_OP_WR_MAX];
	struct vbuf *bounce; /* device atomics: the result lands here;
			      * VOP_ANSWER: the answer, ans_len bytes */
	uint32_t ans_len;
	struct vbuf *copy;   /* an injected write's data */
	size_t nwr;	     /* prepared, for a deferred post */
	struct ibv_send_wr wr[VRDM_OP_WR_MAX];
	struct ibv_sge sge[VRDM_OP_WR_MAX];
	struct vrdm_hdr ctrl; /* VOP_CTRL */
};

/* What the engine keeps of an RTS while the message waits for a receive. */
struct vstash {
	struct vconn *conn;
	uint64_t tx_id;
	uint64_t len;
	struct vrdm_rts rts;
};
_Static_assert(sizeof(struct vstash) <= UTIL_RDM_STASH_MAX, "stash fits");

struct verbs_rdm_ep {
	struct util_rdm_ep rdm; /* first */
	struct util_rdm_xport xp; /* the engine's handle of this transport */
	struct verbs_domain *domain;
	struct sockaddr_storage addr; /* AV stored form */
	size_t addrlen;
	struct rdma_event_channel *cm_ch;
	struct rdma_cm_id *lid;
	struct ibv_comp_channel *comp_ch;
	struct ibv_cq *cq;
	struct ibv_srq *srq;
	int epfd; /* the domain's: our channels are in it */
	uint32_t cq_size, sq_total;
	uint32_t max_inline, max_sge;
	bool cq_armed; /* the CQ raises its next event on comp_ch */
	bool closing;
	unsigned int calls, cm_busy;
	uint8_t *tx_mem;
	struct ibv_mr *tx_mr;
	struct vbuf *tx_bufs;
	struct dlist_entry chunks; /* struct vchunk */
	uint32_t rx_posted; /* receive buffers the SRQ holds, all told */
	struct dlist_entry tx_free; /* struct vbuf */
	struct dlist_entry held;    /* receives the engine refused, in order */
	struct dlist_entry conns;
	struct dlist_entry ops; /* struct vop in flight */
	size_t ndeferred;
	struct util_bufpool *op_pool;
	struct vconn *hash[VRDM_HASH];
	struct vconn *last; /* the conn of the last receive */
	/* Receive buffers done with, not yet back in the SRQ (rx_done):
	 * reposted together when the CQ is found empty or this fills. */
	uint32_t nrepost;
	struct vbuf *repost[VRDM_REPOST_MAX];
	/* Receive buffers of freed QPs, in the SRQ, for the next QPs
	 * (in VRDM_CREDITS: a QP's share). */
	uint32_t spare_chunks;
	uint32_t ndead; /* conns closed, not freed yet */
	uint32_t nself_flush; /* of those, waiting for self_flush */
	uint64_t empty_seq;   /* the CQ was found empty (progress_idle) */
	uint64_t conns_freed; /* since the endpoint opened (logged) */
	bool amo_device;      /* FI_VERBS_DEVICE_ATOMICS: the device's only */
	/* A scalable endpoint's pair (verbs_rdm_sep.c): its sep and index
	 * (the connect requests pair 0 took for it come through its inbox
	 * there, util_rdm_inbox); pair 0, whose listener it drives too (NULL:
	 * this is pair 0).  A pair has an epoll set of its own: sep NULL on a
	 * plain endpoint. */
	struct verbs_sep *sep;
	uint32_t ctx;
	struct verbs_rdm_ep *pair0;
	bool own_epfd;
};

/* A connect request pair 0 took for another pair: the id (on pair 0's
 * event channel until the pair adopts it), what its event said. */
struct vreq {
	struct dlist_entry entry; /* on the pair's util_rdm_inbox */
	struct rdma_cm_id *id;
	struct vrdm_cm_priv pd;
	uint8_t initiator_depth, responder_resources;
};

/*
 * A scalable endpoint (weft/util_rdm.h): pair i is a verbs RDM endpoint
 * of its own (CQ, SRQ, QPs, event channel, lock).  Pair 0 listens at the
 * scalable endpoint's address; a connect request names the context it
 * wants (struct vrdm_cm_priv dst_ctx), and pair 0 hands those for pair i
 * to pair i's inbox (util_rdm_inbox), where pair i takes the id onto its
 * own event channel (rdma_migrate_id) and accepts it.
 */
struct verbs_sep {
	struct util_rdm_sep base; /* first */
};

static inline struct verbs_rdm_ep *vep_of(struct util_rdm_ep *rdm)
{
	return container_of(rdm, struct verbs_rdm_ep, rdm);
}

static inline struct vpeer *vpeer_of(struct util_peer *peer)
{
	return container_of(peer, struct vpeer, peer);
}

static inline size_t sa_len(const void *sa)
{
	return ((const struct sockaddr *)sa)->sa_family == AF_INET6 ?
		       sizeof(struct sockaddr_in6) :
		       sizeof(struct sockaddr_in);
}

/* ibv_post_* return an errno, positive or (some providers) negative. */
static inline int post_errno(int ret)
{
	return weft_errno(ret < 0 ? -ret : ret);
}

/* What a SEND may use of the peer's receives (credits kept back). */
enum vrdm_class {
	VRDM_DATA,   /* messages, RTS, writes with remote CQ data */
	VRDM_ANSWER, /* FIN, ACK, HELLO */
	VRDM_RETURN, /* CREDIT */
};

/* ---- verbs_rdm.c --------------------------------------------------------- */

/* Open pair ctx of sep (not enabled): an RDM endpoint; pair 0 listens. */
int verbs_rdm_pair_open(struct verbs_sep *sep, uint32_t ctx,
			struct verbs_rdm_ep **out);

/* The AV's stored form of a socket address: family, port, address. */
void vrdm_sa_stored(const void *addr, struct sockaddr_storage *out);

/* ---- verbs_rdm_conn.c ---------------------------------------------------- */

/*
 * A connection ended (refused, unreachable, disconnected, or its QP
 * broke): transmits waiting on it fail, its QP is drained, and it is
 * freed by vrdm_conn_reap once nothing names it.
 */
void vrdm_conn_lost(struct vconn *conn, int err);
/* The connection can carry our transmits now. */
void vrdm_conn_open(struct vconn *conn);
/* Free the dead conns nothing names any more. */
void vrdm_conn_reap(struct verbs_rdm_ep *ep);
/* Start a connection to vp: 0 or -FI_E*. */
int vrdm_peer_connect(struct verbs_rdm_ep *ep, struct vpeer *vp);
/* Take the rdma_cm events; how many. */
int vrdm_cm_progress(struct verbs_rdm_ep *ep);
/* A scalable endpoint's pair: accept what pair 0 handed it, drive pair
 * 0's listener when its lock is free, probe the peers directed receives
 * wait for; how many events that was. */
int vrdm_pair_progress(struct verbs_rdm_ep *ep, bool listener);
/* Pair 0 closes: the requests no pair adopted are refused. */
void vrdm_inbox_drain(struct verbs_sep *sep);

/* ---- verbs_rdm_tx.c ------------------------------------------------------ */

int vrdm_post_buf(struct verbs_rdm_ep *ep, struct vconn *conn,
		  struct vbuf *b, size_t len, enum vrdm_class cls,
		  uint64_t late);
struct vop *vrdm_op_get(struct verbs_rdm_ep *ep, enum vop_kind kind,
			struct vconn *conn);
void vrdm_op_release(struct verbs_rdm_ep *ep, struct vop *op);
void vrdm_op_defer(struct verbs_rdm_ep *ep, struct vop *op);
/* FIN, ACK, HELLO, CREDIT: now, or behind what waits for room on conn. */
int vrdm_ctrl_send(struct vconn *conn, uint8_t opc, uint64_t tx_id,
		   uint64_t data, uint32_t status);
/* Post what waits on each conn, in order, while there is room. */
void vrdm_deferred_run(struct verbs_rdm_ep *ep);
/* The reads of a fetch are done (or failed): tell the sender and the
 * engine. */
void vrdm_fetch_finish(struct verbs_rdm_ep *ep, struct vop *op);
/* The engine's transmit calls (struct util_rdm_transport). */
int verbs_rdm_send_eager(struct util_rdm_xport *xp, struct util_peer *peer,
			 const struct util_rdm_hdr *hdr,
			 const struct iovec *iov, void **desc,
			 size_t iov_count);
int verbs_rdm_send_rndv(struct util_rdm_xport *xp, struct util_rdm_tx *tx);
int verbs_rdm_rma(struct util_rdm_xport *xp, struct util_rdm_tx *tx);
int verbs_rdm_fetch(struct util_rdm_xport *xp, const void *stash,
		    const struct iovec *iov, void **desc, size_t iov_count,
		    size_t len, void *cookie);
void verbs_rdm_discard(struct util_rdm_xport *xp, const void *stash);
int verbs_rdm_ack(struct util_rdm_xport *xp, void *reply, uint64_t tx_id,
		  int err);

/* ---- verbs_rdm_rx.c ------------------------------------------------------ */

/* Post receive buffer b to the SRQ now. */
void vrdm_rx_repost(struct verbs_rdm_ep *ep, struct vbuf *b);
/* Put the receive buffers done with back in the SRQ, and their credits
 * to their QPs. */
void vrdm_repost_flush(struct verbs_rdm_ep *ep);
/* The engine's progress calls (struct util_rdm_transport). */
int verbs_rdm_progress(struct util_rdm_xport *xp);
int verbs_rdm_arm(struct util_rdm_xport *xp);

/* ---- the send queue's accounting, and lookups ---------------------------- */

static inline bool sq_room(struct verbs_rdm_ep *ep, struct vconn *conn,
			   uint32_t n, bool data)
{
	uint32_t lim = WEFT_MIN(VRDM_SQ_DEPTH, ep->domain->dev.max_qp_wr);

	if (data)
		lim -= VRDM_SQ_CTRL;
	return conn->sq_used + n <= lim &&
	       ep->sq_total + n + ep->rx_posted <= ep->cq_size;
}

/* n signaled work requests were posted on conn. */
static inline void sq_take(struct verbs_rdm_ep *ep, struct vconn *conn,
			   uint32_t n)
{
	uint32_t i;

	for (i = 0; i < n; i++) {
		conn->late[conn->batch_tail % VRDM_SQ_DEPTH] = 0;
		conn->batch[conn->batch_tail++ % VRDM_SQ_DEPTH] =
			(uint16_t)(1 + (i ? 0 : conn->unsig));
	}
	if (n)
		conn->unsig = 0;
	conn->sq_used += n;
	ep->sq_total += n;
}

/*
 * A signaled work request of conn completed: free the oldest batch of
 * slots, and return the engine's tx that batch's request completes (a
 * late eager send), or 0.  The batches pop in posting order, whatever
 * request completed: InfiniBand completes a send queue in order, but siw
 * completes a SEND as soon as TCP took it, before the answer to an
 * earlier READ arrived.  A late send's tx then comes out at that READ's
 * completion, which can only be later than its own: the caller must
 * finish it (sq_done), whatever kind of request it is looking at.
 */
static inline uint64_t sq_give(struct verbs_rdm_ep *ep, struct vconn *conn)
{
	uint32_t i = conn->batch_head % VRDM_SQ_DEPTH;

	if (weft_unlikely(conn->batch_head == conn->batch_tail))
		return 0; /* a flushed unsignaled one */
	conn->batch_head++;
	conn->sq_used -= conn->batch[i];
	ep->sq_total--;
	return conn->late[i];
}

/* sq_give, and the late tx it names finished with wc's status. */
static inline void sq_done(struct verbs_rdm_ep *ep, struct vconn *conn,
			   const struct ibv_wc *wc)
{
	uint64_t late = sq_give(ep, conn);
	struct util_rdm_tx *tx;

	if (!late)
		return;
	tx = util_rdm_tx_of(&ep->rdm, late);
	/* (Gone: the peer's failure finished it first.) */
	if (tx)
		util_rdm_tx_done(&ep->rdm, tx, verbs_wc_err(wc->status));
}

static inline struct vbuf *txbuf_get(struct verbs_rdm_ep *ep)
{
	struct dlist_entry *e = dlist_pop_front(&ep->tx_free);

	return e ? container_of(e, struct vbuf, entry) : NULL;
}

static inline void txbuf_put(struct verbs_rdm_ep *ep, struct vbuf *b)
{
	b->conn = NULL; /* set while a SEND of it is posted (self_flush) */
	dlist_insert_head(&b->entry, &ep->tx_free);
}

static inline struct vconn *conn_by_qpn(struct verbs_rdm_ep *ep, uint32_t qpn)
{
	struct vconn *c;

	if (weft_likely(ep->last && ep->last->qpn == qpn && ep->last->hashed))
		return ep->last;
	for (c = ep->hash[qpn % VRDM_HASH]; c; c = c->hash_next)
		if (c->qpn == qpn) {
			ep->last = c;
			return c;
		}
	return NULL;
}

/* Half the peer's credits are owed: tell it, unless a message will. */
static inline void credit_maybe(struct vconn *conn)
{
	if (weft_unlikely(conn->credit_return >= VRDM_CREDITS / 2) &&
	    !conn->credit_queued && conn->state == VC_OPEN)
		vrdm_ctrl_send(conn, VRDM_OP_CREDIT, 0, 0, 0);
}

/*
 * The QP a transmit to peer goes on: 0 and *out, -FI_EAGAIN while it is
 * being made (started here when there is none), or the error of starting.
 */
static inline int peer_conn(struct verbs_rdm_ep *ep, struct util_peer *peer,
			    struct vconn **out)
{
	struct vpeer *vp = vpeer_of(peer);
	int ret;

	if (weft_likely(vp->conn && vp->conn->state == VC_OPEN)) {
		*out = vp->conn;
		return 0;
	}
	if (vp->conn)
		return -FI_EAGAIN;
	if (ep->closing)
		return -FI_ECANCELED;
	if (weft_unlikely(vp->conn_err)) {
		ret = -vp->conn_err;
		vp->conn_err = 0;
		return ret;
	}
	ret = vrdm_peer_connect(ep, vp);
	return ret ? ret : -FI_EAGAIN;
}

#endif /* WEFT_VERBS_RDM_H */
