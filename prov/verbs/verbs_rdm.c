/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * verbs FI_EP_RDM: the RDM engine (weft/util_rdm.h) over RC QPs that are
 * connected on demand through rdma_cm.  The wire protocol is described in
 * docs/verbs-protocol.md.
 *
 *  endpoint   an rdma_cm listening id on the device's IP address (its
 *             sockaddr is the endpoint's name), one CQ on a completion
 *             channel, one SRQ filled with registered bounce buffers, a
 *             pool of registered send bounce buffers.
 *  peers      a peer's QP is made on the first transmit to it; the
 *             connect request carries our listening address so that the
 *             acceptor names us as its AV does.  Two endpoints connecting
 *             to each other at once keep both QPs, each side sending on
 *             its own.  The connecting side speaks first (HELLO: iWARP
 *             requires it); the accepting side sends nothing on a QP
 *             before something arrived on it.
 *  eager      header and payload copied into a send buffer (or inline),
 *             one SEND; the receiver hands the bounce buffer to the engine
 *             in place and reposts it.
 *  rendezvous RTS names the sender's buffer (address, rkey, length); the
 *             receiver RDMA-reads it into the receive buffer and answers
 *             FIN, on which the sender's transmit completes.
 *  RMA        RDMA WRITE / READ / WRITE_WITH_IMM, straight from the
 *             initiator.
 *  atomics    every one of fi_atomic(3): an ATOMIC message that the
 *             target's progress applies to its memory (util_atomic, under
 *             the same lock as same-host peers' through shared memory),
 *             answered by ATOMIC_RESP with the fetched values.  RMA to a
 *             peer waits while an atomic to it is unanswered (write after
 *             atomic stays ordered).  With FI_VERBS_DEVICE_ATOMICS the
 *             device's 64-bit fetch-add and compare-swap instead, and
 *             nothing else (never a mix: docs/verbs-protocol.md).
 *  same host  peers whose endpoint lives on this host (same network
 *             namespace, same user) are reached through shared memory
 *             (weft/shm_local.h), as tcp does: the region is named after
 *             our listening address, the one peers insert.  FI_VERBS_SHM=0
 *             sends everything through the device.
 *
 * Work request ids: a pointer (8-byte aligned) with a kind in the low bits.
 */
#include "verbs.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "weft/shm_local.h"
#include "weft/stubs.h"
#include "weft/util_atomic.h"
#include "weft/util_bufpool.h"
#include "weft/util_iov.h"
#include "weft/util_wait.h"

/* The wire format is verbs_proto.h's (docs/verbs-protocol.md). */
_Static_assert(VRDM_RTS_SEG_MAX == UTIL_RDM_IOV_MAX,
	       "an RTS names every segment of a send");
_Static_assert(VRDM_ATOMIC_MAX == VERBS_RDM_ATOMIC_MAX, "what we offer");

/* ---- sizes ---------------------------------------------------------------- */

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
	struct fi_ops_atomic atomic_ops;
	/* Receive buffers of freed QPs, in the SRQ, for the next QPs
	 * (in VRDM_CREDITS: a QP's share). */
	uint32_t spare_chunks;
	uint32_t ndead; /* conns closed, not freed yet */
	uint32_t nself_flush; /* of those, waiting for self_flush */
	uint64_t empty_seq;   /* the CQ was found empty (progress_idle) */
	uint64_t conns_freed; /* since the endpoint opened (logged) */
	struct shm_xp *local; /* peers on this host; NULL: FI_VERBS_SHM=0 */
	bool local_up;	      /* its region exists */
	bool amo_device;      /* FI_VERBS_DEVICE_ATOMICS: the device's only */
};

static inline struct verbs_rdm_ep *vep_of(struct util_rdm_ep *rdm)
{
	return container_of(rdm, struct verbs_rdm_ep, rdm);
}

static inline struct vpeer *vpeer_of(struct util_peer *peer)
{
	return container_of(peer, struct vpeer, peer);
}

static size_t sa_len(const void *sa)
{
	return ((const struct sockaddr *)sa)->sa_family == AF_INET6 ?
		       sizeof(struct sockaddr_in6) :
		       sizeof(struct sockaddr_in);
}

/* The port of an IPv4 or IPv6 socket address (host order). */
static uint16_t sa_port(const void *sa)
{
	return ntohs(((const struct sockaddr *)sa)->sa_family == AF_INET6 ?
			     ((const struct sockaddr_in6 *)sa)->sin6_port :
			     ((const struct sockaddr_in *)sa)->sin_port);
}

/* The AV's stored form of a socket address: family, port, address. */
static void sa_stored(const void *addr, struct sockaddr_storage *out)
{
	struct sockaddr_storage copy;
	const void *in = &copy;
	const struct sockaddr *sa = in;

	memcpy(&copy, addr, sa_len(addr));
	memset(out, 0, sizeof(*out));
	out->ss_family = sa->sa_family;
	if (sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *s6 = in;
		struct sockaddr_in6 *o6 = (struct sockaddr_in6 *)out;

		o6->sin6_port = s6->sin6_port;
		o6->sin6_addr = s6->sin6_addr;
		o6->sin6_scope_id = s6->sin6_scope_id;
	} else {
		const struct sockaddr_in *s4 = in;
		struct sockaddr_in *o4 = (struct sockaddr_in *)out;

		o4->sin_port = s4->sin_port;
		o4->sin_addr = s4->sin_addr;
	}
}

/* ibv_post_* return an errno, positive or (some providers) negative. */
static inline int post_errno(int ret)
{
	return weft_errno(ret < 0 ? -ret : ret);
}

/* ---- connections ---------------------------------------------------------- */

static void conn_hash(struct vconn *conn)
{
	struct verbs_rdm_ep *ep = conn->ep;
	unsigned int b = conn->qpn % VRDM_HASH;

	conn->hash_next = ep->hash[b];
	ep->hash[b] = conn;
	conn->hashed = true;
}

static struct vconn *conn_by_qpn(struct verbs_rdm_ep *ep, uint32_t qpn)
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

static struct vconn *conn_new(struct verbs_rdm_ep *ep, struct rdma_cm_id *id,
			      struct vpeer *peer, bool outgoing)
{
	struct vconn *conn = calloc(1, sizeof(*conn));

	if (!conn)
		return NULL;
	conn->ep = ep;
	conn->id = id;
	conn->peer = peer;
	conn->outgoing = outgoing;
	dlist_init(&conn->deferred);
	dlist_insert_tail(&conn->entry, &ep->conns);
	id->context = conn;
	return conn;
}

static void rx_repost(struct verbs_rdm_ep *ep, struct vbuf *b);

/* VRDM_CREDITS more receive buffers in the SRQ, for a new QP's sends. */
static int chunk_add(struct verbs_rdm_ep *ep)
{
	size_t bytes = (size_t)VRDM_CREDITS * VRDM_BUF_SIZE;
	struct vchunk *c;
	int i, ret;

	if (ep->rx_posted + VRDM_CREDITS > VRDM_SRQ_MAX ||
	    ep->rx_posted + VRDM_CREDITS + ep->sq_total +
			    WEFT_MIN(VRDM_SQ_DEPTH, ep->domain->dev.max_qp_wr) >
		    ep->cq_size)
		return -FI_ENOSPC; /* the CQ could overrun */
	c = calloc(1, sizeof(*c));
	if (!c)
		return -FI_ENOMEM;
	c->mem = aligned_alloc(4096, bytes);
	if (!c->mem) {
		ret = -FI_ENOMEM;
		goto err_free;
	}
	/* The device writes here unseen by memory checkers: start defined. */
	memset(c->mem, 0, bytes);
	c->mr = ibv_reg_mr(ep->domain->pd, c->mem, bytes,
			   IBV_ACCESS_LOCAL_WRITE);
	if (!c->mr) {
		ret = weft_errno(errno);
		goto err_mem;
	}
	dlist_insert_tail(&c->entry, &ep->chunks);
	for (i = 0; i < VRDM_CREDITS; i++) {
		c->bufs[i].data = c->mem + (size_t)i * VRDM_BUF_SIZE;
		c->bufs[i].lkey = c->mr->lkey;
		dlist_init(&c->bufs[i].entry);
		rx_repost(ep, &c->bufs[i]);
	}
	ep->rx_posted += VRDM_CREDITS;
	return 0;
err_mem:
	free(c->mem);
err_free:
	free(c);
	return ret;
}

static int conn_make_qp(struct vconn *conn)
{
	struct verbs_rdm_ep *ep = conn->ep;
	struct ibv_qp_init_attr qa;
	int ret;

	memset(&qa, 0, sizeof(qa));
	qa.send_cq = ep->cq;
	qa.recv_cq = ep->cq;
	qa.srq = ep->srq;
	qa.qp_type = IBV_QPT_RC;
	qa.cap.max_send_wr = WEFT_MIN(VRDM_SQ_DEPTH, ep->domain->dev.max_qp_wr);
	qa.cap.max_send_sge = ep->max_sge;
	qa.cap.max_inline_data = ep->max_inline;
	qa.sq_sig_all = 0; /* inline sends are signaled now and then */
	if (ep->spare_chunks) {
		ep->spare_chunks--; /* a freed QP's buffers */
	} else {
		ret = chunk_add(ep);
		if (ret)
			return ret;
	}
	if (rdma_create_qp(conn->id, ep->domain->pd, &qa)) {
		ep->spare_chunks++;
		return weft_errno(errno);
	}
	verbs_qp_tune(conn->id, &ep->domain->dev);
	conn->qp = conn->id->qp;
	conn->qpn = conn->qp->qp_num;
	conn->credits = VRDM_CREDITS;
	conn_hash(conn);
	return 0;
}

static void conn_param_fill(struct verbs_rdm_ep *ep,
			    struct rdma_conn_param *cp, const void *priv,
			    size_t priv_len)
{
	memset(cp, 0, sizeof(*cp));
	cp->private_data = priv;
	cp->private_data_len = (uint8_t)priv_len;
	cp->responder_resources =
		(uint8_t)WEFT_MIN(ep->domain->dev.max_qp_rd_atom, 16u);
	cp->initiator_depth =
		(uint8_t)WEFT_MIN(ep->domain->dev.max_qp_init_rd_atom, 16u);
	cp->retry_count = 7;
	cp->rnr_retry_count = 7; /* a full SRQ holds the sender back */
}

/* Our side of the private data: who we are, where to read for a fence. */
static void priv_fill(struct verbs_rdm_ep *ep, struct vrdm_cm_priv *pd)
{
	struct verbs_fence f;

	vrdm_cm_priv_put(pd, &ep->addr, ep->addrlen,
			 verbs_domain_fence(ep->domain, &f));
}

/* The peer's fence region, from its private data (if it is ours). */
static void priv_fence(struct vconn *conn, const void *priv, size_t len)
{
	struct vrdm_cm_priv pd;

	if (!vrdm_cm_priv_decode(priv, len, &pd))
		vrdm_cm_priv_fence(&pd, &conn->fence);
}

static void op_release(struct verbs_rdm_ep *ep, struct vop *op);
static void fetch_finish(struct verbs_rdm_ep *ep, struct vop *op);

/*
 * A dead QP's work requests all end: to the error state, where every one
 * still queued completes as flushed, then one more, signaled, behind
 * them; its completion (VWR_DRAIN) says no work request names the conn
 * any more.  A QP that takes no marker is never freed (kept until the
 * endpoint closes, as before).
 *
 * A device that loses what is posted to a QP in error (err_post_lost:
 * siw) would lose the marker too, and the requests posted between the
 * error and now: there, by the time ibv_modify_qp returns, the device
 * has put every flushed completion in the CQ.  Once the CQ is found
 * empty after that, what is still posted will never complete, and
 * self_flush ends it as flushed.
 */
static bool conn_drain(struct vconn *conn)
{
	struct ibv_qp_attr qa = { .qp_state = IBV_QPS_ERR };
	struct ibv_send_wr wr, *bad;
	struct verbs_rdm_ep *ep = conn->ep;

	ibv_modify_qp(conn->qp, &qa, IBV_QP_STATE);
	if (ep->domain->dev.err_post_lost) {
		conn->self_flush = true;
		conn->flush_seq = ep->empty_seq;
		ep->nself_flush++;
		return true;
	}
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = wr_id(conn, VWR_DRAIN);
	wr.opcode = IBV_WR_SEND;
	wr.send_flags = IBV_SEND_SIGNALED;
	if (ibv_post_send(conn->qp, &wr, &bad)) {
		FI_INFO(&verbs_prov, FI_LOG_EP_CTRL,
			"a dead QP takes no drain marker: kept until the "
			"endpoint closes\n");
		return false;
	}
	conn->ep->sq_total++; /* its completion takes a CQ entry */
	return true;
}

/*
 * A connection ended (refused, unreachable, disconnected, or its QP broke):
 * transmits that were waiting on it fail, and its QP is drained.  The conn
 * is freed by conn_reap once nothing names it any more; a new transmit to
 * the peer makes a new connection.
 */
static void conn_lost(struct vconn *conn, int err)
{
	struct verbs_rdm_ep *ep = conn->ep;
	struct vpeer *vp = conn->peer;
	struct dlist_entry *e, *tmp;

	if (conn->state == VC_CLOSED)
		return;
	if (conn->state < VC_ACCEPTED)
		ep->cm_busy--;
	if (vp && vp->conn == conn && conn->outgoing &&
	    conn->state < VC_OPEN)
		vp->conn_err = err;
	conn->state = VC_CLOSED;
	if (conn->qp) {
		rdma_disconnect(conn->id);
		if (!ep->closing && conn_drain(conn))
			ep->ndead++;
	} else {
		conn->drained = true; /* no work request was ever posted */
		ep->ndead++;
	}
	dlist_foreach_safe(&conn->deferred, e, tmp) {
		struct vop *op = container_of(e, struct vop, dentry);

		dlist_remove(&op->dentry);
		ep->ndeferred--;
		if (op->kind == VOP_FETCH) {
			op->err = err;
			op->pending = 0;
			fetch_finish(ep, op);
		} else {
			op_release(ep, op);
		}
	}
	/* Rendezvous sends on it wait for a FIN that will not come. */
	dlist_foreach_safe(&ep->ops, e, tmp) {
		struct vop *op = container_of(e, struct vop, entry);
		struct util_rdm_tx *tx;

		if (op->kind != VOP_RNDV || op->conn != conn)
			continue;
		tx = util_rdm_tx_of(&ep->rdm, op->tx_id);
		op_release(ep, op);
		if (tx)
			util_rdm_tx_done(&ep->rdm, tx, err);
	}
	if (vp && vp->conn == conn) {
		vp->conn = NULL;
		vp->connect_until = 0;
		vp->peer.state = UTIL_PEER_FAILED;
		if (!ep->closing)
			FI_INFO(&verbs_prov, FI_LOG_EP_CTRL,
				"connection to a peer lost: %s\n",
				fi_strerror(err));
		util_rdm_fail_peer(&ep->rdm, &vp->peer, err);
	}
}

static int ctrl_send(struct vconn *conn, uint8_t op, uint64_t tx_id,
		     uint64_t data, uint32_t status);

/* The connection can carry our transmits now. */
static void conn_open(struct vconn *conn)
{
	struct verbs_rdm_ep *ep = conn->ep;
	struct vpeer *vp = conn->peer;

	if (conn->state == VC_OPEN || conn->state == VC_CLOSED)
		return;
	if (conn->state < VC_ACCEPTED)
		ep->cm_busy--;
	conn->state = VC_OPEN;
	if (conn->outgoing)
		ctrl_send(conn, VRDM_OP_HELLO, 0, 0, 0);
	if (!vp)
		return;
	vp->conn_err = 0;
	vp->port_busy = 0;
	vp->connect_until = 0;
	if (!vp->conn) /* it connected first: we answer on its QP */
		vp->conn = conn;
	if (vp->conn == conn) {
		vp->peer.state = UTIL_PEER_CONNECTED;
		util_rdm_peer_ready(&ep->rdm, &vp->peer);
	}
}

static void conn_unhash(struct vconn *conn)
{
	struct verbs_rdm_ep *ep = conn->ep;
	struct vconn **pp = &ep->hash[conn->qpn % VRDM_HASH];

	for (; *pp; pp = &(*pp)->hash_next)
		if (*pp == conn) {
			*pp = conn->hash_next;
			break;
		}
	conn->hashed = false;
	if (ep->last == conn)
		ep->last = NULL;
}

/* A held receive came on conn's QP (its QP number could be reused). */
static bool conn_held(struct verbs_rdm_ep *ep, struct vconn *conn)
{
	struct dlist_entry *e;

	dlist_foreach(&ep->held, e)
		if (container_of(e, struct vbuf, entry)->qpn == conn->qpn)
			return true;
	return false;
}

static void repost_flush(struct verbs_rdm_ep *ep);

/*
 * Free the dead conns nothing names any more: drained (no work request
 * left), no message of theirs held by the engine or by us, no receive
 * waiting to give them a credit.  Their receive buffers stay in the SRQ
 * for the next QP.  Outside the rdma_cm event loop (it destroys ids).
 */
static void conn_reap(struct verbs_rdm_ep *ep)
{
	struct dlist_entry *e, *tmp;

	if (weft_likely(!ep->ndead) || ep->closing)
		return;
	if (ep->nrepost)
		repost_flush(ep);
	dlist_foreach_safe(&ep->conns, e, tmp) {
		struct vconn *conn = container_of(e, struct vconn, entry);

		if (conn->state != VC_CLOSED || !conn->drained || conn->refs ||
		    !dlist_empty(&conn->deferred) || conn_held(ep, conn))
			continue;
		if (conn->peer && conn->peer->conn == conn)
			conn->peer->conn = NULL;
		if (conn->hashed)
			conn_unhash(conn);
		dlist_remove(&conn->entry);
		if (conn->qp) {
			rdma_destroy_qp(conn->id);
			ep->spare_chunks++;
		}
		rdma_destroy_id(conn->id);
		free(conn);
		ep->ndead--;
		ep->conns_freed++;
		FI_INFO(&verbs_prov, FI_LOG_EP_CTRL,
			"a dead connection's QP freed (%llu so far)\n",
			(unsigned long long)ep->conns_freed);
	}
}

static int peer_connect(struct verbs_rdm_ep *ep, struct vpeer *vp)
{
	struct sockaddr_storage src, dst;
	struct rdma_cm_id *id;
	struct vconn *conn;
	int ret;

	if (rdma_create_id(ep->cm_ch, &id, NULL, RDMA_PS_TCP))
		return weft_errno(errno);
	conn = conn_new(ep, id, vp, true);
	if (!conn) {
		rdma_destroy_id(id);
		return -FI_ENOMEM;
	}
	memcpy(&src, &ep->addr, sizeof(src));
	((struct sockaddr_in *)&src)->sin_port = 0; /* same offset in in6 */
	memset(&dst, 0, sizeof(dst));
	memcpy(&dst, vp->peer.addr, sa_len(vp->peer.addr));
	conn->state = VC_ADDR;
	ep->cm_busy++;
	vp->conn = conn;
	vp->peer.state = UTIL_PEER_CONNECTING;
	if (!vp->connect_until)
		vp->connect_until = util_wait_deadline(VRDM_IWARP_CONNECT_MS);
	ret = verbs_resolve_addr(id, &ep->domain->dev,
				 (struct sockaddr *)&src,
				 (struct sockaddr *)&dst);
	if (ret) {
		conn_lost(conn, -ret);
		return ret;
	}
	return 0;
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
	ret = peer_connect(ep, vp);
	return ret ? ret : -FI_EAGAIN;
}

/* A peer connects to us.  Returns true when the request's id is to be
 * destroyed (refused) once the event is acknowledged. */
static bool conn_request(struct verbs_rdm_ep *ep, struct rdma_cm_event *ev)
{
	struct vrdm_cm_priv pd, mine;
	struct sockaddr_storage sa;
	struct rdma_conn_param cp;
	struct util_peer *peer;
	struct vconn *conn;
	const char *why = "bad private data";
	int ret;

	memset(&pd, 0, sizeof(pd));
	if (ep->closing ||
	    vrdm_cm_priv_decode(ev->param.conn.private_data,
				ev->param.conn.private_data_len, &pd))
		goto reject;
	ret = vrdm_cm_priv_addr(&pd, &sa);
	if (ret == -FI_EADDRNOTAVAIL)
		why = "not an address of our AV's format";
	if (ret)
		goto reject;
	sa_stored(&sa, &sa);
	if (ep->rdm.av && ep->rdm.av->ops.normalize &&
	    ep->rdm.av->ops.normalize(ep->rdm.av, &sa, &sa))
		goto reject;
	why = "out of memory";
	if (util_peer_add(&ep->rdm.peers, &sa, &peer))
		goto reject;
	conn = conn_new(ep, ev->id, vpeer_of(peer), false);
	if (!conn)
		goto reject;
	vrdm_cm_priv_fence(&pd, &conn->fence);
	if (conn_make_qp(conn))
		goto lost;
	priv_fill(ep, &mine);
	conn_param_fill(ep, &cp, &mine, sizeof(mine));
	cp.responder_resources = WEFT_MIN(cp.responder_resources,
					  ev->param.conn.initiator_depth);
	cp.initiator_depth = WEFT_MIN(cp.initiator_depth,
				      ev->param.conn.responder_resources);
	if (rdma_accept(ev->id, &cp))
		goto lost;
	conn->state = VC_ACCEPTED;
	return false;
lost:
	/* The conn keeps the id until the endpoint closes. */
	rdma_reject(ev->id, NULL, 0);
	conn->state = VC_ACCEPTED;
	conn_lost(conn, FI_ECONNABORTED);
	return false;
reject:
	FI_INFO(&verbs_prov, FI_LOG_EP_CTRL,
		"connection request refused: %s (family %d, %u bytes)\n", why,
		pd.addr[0] | pd.addr[1] << 8, pd.addr_len);
	rdma_reject(ev->id, NULL, 0);
	ev->id->context = NULL;
	return true;
}

static void route_resolved(struct vconn *conn)
{
	struct verbs_rdm_ep *ep = conn->ep;
	struct vrdm_cm_priv pd;
	struct rdma_conn_param cp;
	int ret;

	ret = conn_make_qp(conn);
	if (ret) {
		conn_lost(conn, -ret);
		return;
	}
	priv_fill(ep, &pd);
	conn_param_fill(ep, &cp, &pd, sizeof(pd));
	if (rdma_connect(conn->id, &cp)) {
		struct vpeer *vp = conn->peer;

		ret = weft_errno(errno);
		/* iWARP: siw binds its TCP socket to the port rdma_cm gave
		 * this id, which TCP may have taken since verbs_resolve_addr
		 * chose it: another id, another port.  The peer's transmits
		 * wait for that one instead of failing. */
		if (ret == -FI_EADDRINUSE && vp && vp->conn == conn &&
		    vp->port_busy < 8) {
			FI_INFO(&verbs_prov, FI_LOG_EP_CTRL,
				"local port busy: connecting again\n");
			vp->port_busy++;
			vp->conn = NULL;
			conn_lost(conn, -ret);
			peer_connect(ep, vp); /* its failure fails the peer */
			return;
		}
		conn_lost(conn, -ret);
		return;
	}
	conn->state = VC_CONNECTING;
}

/*
 * iWARP: a connect request the peer's endpoint has not accepted (it has
 * not called the provider since: the process is busy, or waits on
 * something else) ends UNREACHABLE once the device gives up waiting for
 * the answer (siw: about 13 s), though the peer is there and may accept
 * later.  Connect again, the transmits still waiting, until
 * VRDM_IWARP_CONNECT_MS after the first attempt, as InfiniBand's CM
 * retries a request by itself.  Whether conn was made again.
 */
static bool conn_retry(struct vconn *conn)
{
	struct verbs_rdm_ep *ep = conn->ep;
	struct vpeer *vp = conn->peer;

	if (!ep->domain->dev.iwarp || !conn->outgoing || ep->closing ||
	    conn->state != VC_CONNECTING || !vp || vp->conn != conn ||
	    !util_wait_remaining(vp->connect_until))
		return false;
	FI_INFO(&verbs_prov, FI_LOG_EP_CTRL,
		"connect request not answered: connecting again\n");
	vp->conn = NULL;
	conn_lost(conn, FI_EHOSTUNREACH); /* not the peer's: vp->conn */
	peer_connect(ep, vp);		  /* its failure fails the peer */
	return true;
}

static int cm_progress(struct verbs_rdm_ep *ep)
{
	struct rdma_cm_event *ev;
	struct vconn *conn;
	int n = 0;

	while (!rdma_get_cm_event(ep->cm_ch, &ev)) {
		n++;
		conn = ev->id ? ev->id->context : NULL;
		if (ev->event == RDMA_CM_EVENT_CONNECT_REQUEST) {
			struct rdma_cm_id *id = ev->id;
			bool refused = conn_request(ep, ev);

			rdma_ack_cm_event(ev);
			if (refused)
				rdma_destroy_id(id);
			continue;
		}
		if (!conn || (void *)conn == (void *)ep) {
			rdma_ack_cm_event(ev);
			continue;
		}
		switch (ev->event) {
		case RDMA_CM_EVENT_ADDR_RESOLVED:
			conn->state = VC_ROUTE;
			if (rdma_resolve_route(conn->id,
					       verbs_params.conn_timeout_ms))
				conn_lost(conn, -weft_errno(errno));
			break;
		case RDMA_CM_EVENT_ROUTE_RESOLVED:
			route_resolved(conn);
			break;
		case RDMA_CM_EVENT_ESTABLISHED:
			/* The accepting side waits for the first message. */
			if (conn->outgoing) {
				priv_fence(conn, ev->param.conn.private_data,
					   ev->param.conn.private_data_len);
				conn_open(conn);
			}
			break;
		case RDMA_CM_EVENT_REJECTED:
			conn_lost(conn, FI_ECONNREFUSED);
			break;
		case RDMA_CM_EVENT_UNREACHABLE:
			if (conn_retry(conn))
				break;
			/* fall through */
		case RDMA_CM_EVENT_ADDR_ERROR:
		case RDMA_CM_EVENT_ROUTE_ERROR:
			conn_lost(conn, FI_EHOSTUNREACH);
			break;
		case RDMA_CM_EVENT_CONNECT_ERROR:
		case RDMA_CM_EVENT_DEVICE_REMOVAL:
			conn_lost(conn, FI_ECONNABORTED);
			break;
		case RDMA_CM_EVENT_DISCONNECTED:
			conn_lost(conn, FI_ECONNRESET);
			break;
		default:
			break;
		}
		rdma_ack_cm_event(ev);
	}
	return n;
}

/* ---- posting ----------------------------------------------------------- */

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

/* What a SEND may use of the peer's receives (credits kept back). */
enum vrdm_class {
	VRDM_DATA,   /* messages, RTS, writes with remote CQ data */
	VRDM_ANSWER, /* FIN, ACK, HELLO */
	VRDM_RETURN, /* CREDIT */
};

static const uint32_t vrdm_keep[] = {
	[VRDM_DATA] = VRDM_CREDIT_DATA,
	[VRDM_ANSWER] = 1,
	[VRDM_RETURN] = 0,
};

/*
 * Send the len bytes of send buffer b (a header, whose credits are filled
 * in here, and what follows it) as one SEND on conn; b goes back to the
 * free list at its completion.  0, -FI_EAGAIN (no room or credit) or an
 * error from the device: then b is still the caller's.
 */
static int post_buf(struct verbs_rdm_ep *ep, struct vconn *conn,
		    struct vbuf *b, size_t len, enum vrdm_class cls,
		    uint64_t late)
{
	struct ibv_send_wr wr, *bad;
	struct ibv_sge sge;
	uint16_t give;
	int ret;

	if (weft_unlikely(conn->credits <= vrdm_keep[cls] ||
			  !sq_room(ep, conn, 1, cls == VRDM_DATA)))
		return -FI_EAGAIN;
	give = (uint16_t)WEFT_MIN(conn->credit_return, (uint32_t)UINT16_MAX);
	vrdm_hdr_put_credits(b->data, give);
	sge.addr = (uintptr_t)b->data;
	sge.length = (uint32_t)len;
	sge.lkey = ep->tx_mr->lkey;
	memset(&wr, 0, sizeof(wr));
	wr.opcode = IBV_WR_SEND;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.wr_id = wr_id(b, VWR_SEND);
	b->conn = conn;
	ret = ibv_post_send(conn->qp, &wr, &bad);
	if (weft_unlikely(ret)) {
		b->conn = NULL;
		return ret == ENOMEM ? -FI_EAGAIN : post_errno(ret);
	}
	sq_take(ep, conn, 1);
	conn->late[(conn->batch_tail - 1) % VRDM_SQ_DEPTH] = late;
	conn->credits--;
	conn->credit_return -= give;
	return 0;
}

/*
 * Send hdr (hdr_len bytes, its credits filled in here) and len bytes of
 * iov as one SEND on conn: inline when it fits, else through a send
 * buffer.  0, or -FI_EAGAIN (no room, credit or buffer), or an error from
 * the device.
 */
static int post_msg(struct verbs_rdm_ep *ep, struct vconn *conn,
		    struct vrdm_hdr *hdr, size_t hdr_len,
		    const struct iovec *iov, size_t count, size_t len,
		    enum vrdm_class cls, uint64_t late)
{
	struct ibv_sge sge[UTIL_RDM_IOV_MAX + 1];
	struct ibv_send_wr wr, *bad;
	uint32_t give;
	size_t i, n;
	int ret;

	if (weft_unlikely(conn->credits <= vrdm_keep[cls] ||
			  !sq_room(ep, conn, 1, cls == VRDM_DATA)))
		return -FI_EAGAIN;
	give = WEFT_MIN(conn->credit_return, (uint32_t)UINT16_MAX);
	hdr->credits = (uint16_t)give;
	memset(&wr, 0, sizeof(wr));
	wr.opcode = IBV_WR_SEND;
	wr.sg_list = sge;
	if (hdr_len + len <= ep->max_inline && count < ep->max_sge) {
		sge[0].addr = (uintptr_t)hdr;
		sge[0].length = (uint32_t)hdr_len;
		sge[0].lkey = 0;
		for (i = 0, n = 1; i < count; i++) {
			if (!iov[i].iov_len)
				continue;
			sge[n].addr = (uintptr_t)iov[i].iov_base;
			sge[n].length = (uint32_t)iov[i].iov_len;
			sge[n++].lkey = 0;
		}
		wr.num_sge = (int)n;
		wr.send_flags = IBV_SEND_INLINE;
		/* Nothing to free at its completion: ask for one every 16th
		 * send only (or when the queue fills), for slot accounting. */
		if (late || conn->unsig >= 15 || !sq_room(ep, conn, 8, true))
			wr.send_flags |= IBV_SEND_SIGNALED;
		wr.wr_id = wr_id(conn, VWR_INLINE);
	} else {
		struct vbuf *b = txbuf_get(ep);

		if (!b)
			return -FI_EAGAIN;
		memcpy(b->data, hdr, hdr_len);
		util_iov_copy_from(b->data + hdr_len, iov, count, 0, len);
		ret = post_buf(ep, conn, b, hdr_len + len, cls, late);
		if (weft_unlikely(ret))
			txbuf_put(ep, b);
		return ret;
	}
	ret = ibv_post_send(conn->qp, &wr, &bad);
	if (weft_unlikely(ret))
		return ret == ENOMEM ? -FI_EAGAIN : post_errno(ret);
	if (wr.send_flags & IBV_SEND_SIGNALED) {
		sq_take(ep, conn, 1);
		conn->late[(conn->batch_tail - 1) % VRDM_SQ_DEPTH] = late;
	} else {
		conn->unsig++;
		conn->sq_used++;
	}
	conn->credits--;
	conn->credit_return -= give;
	return 0;
}

static struct vop *op_get(struct verbs_rdm_ep *ep, enum vop_kind kind,
			  struct vconn *conn)
{
	struct vop *op = util_bufpool_get(ep->op_pool);

	if (!op)
		return NULL;
	memset(op, 0, offsetof(struct vop, wr));
	op->kind = kind;
	op->conn = conn;
	dlist_init(&op->dentry);
	dlist_insert_tail(&op->entry, &ep->ops);
	return op;
}

static void op_release(struct verbs_rdm_ep *ep, struct vop *op)
{
	size_t i;

	for (i = 0; i < op->nmr; i++)
		util_mr_cache_put(&ep->domain->mr_cache, op->mr[i]);
	if (op->bounce)
		txbuf_put(ep, op->bounce);
	if (op->copy)
		txbuf_put(ep, op->copy);
	dlist_remove(&op->entry);
	util_bufpool_put(ep->op_pool, op);
}

/* Post an op's prepared work requests: 0, or -FI_EAGAIN (no room). */
static int op_post(struct verbs_rdm_ep *ep, struct vop *op, bool data)
{
	struct ibv_send_wr *bad;
	size_t i;
	int ret;

	if (!sq_room(ep, op->conn, (uint32_t)op->nwr, data))
		return -FI_EAGAIN;
	for (i = 0; i < op->nwr; i++) {
		op->wr[i].wr_id = wr_id(op, VWR_OP);
		op->wr[i].send_flags |= IBV_SEND_SIGNALED;
		op->wr[i].next = i + 1 < op->nwr ? &op->wr[i + 1] : NULL;
	}
	ret = ibv_post_send(op->conn->qp, op->wr, &bad);
	if (ret) {
		/* Some may have gone: count those, they will complete. */
		size_t posted = (size_t)(bad - op->wr);

		sq_take(ep, op->conn, (uint32_t)posted);
		op->pending = (uint32_t)posted;
		return ret == ENOMEM && !posted ? -FI_EAGAIN : post_errno(ret);
	}
	sq_take(ep, op->conn, (uint32_t)op->nwr);
	op->pending = (uint32_t)op->nwr;
	return 0;
}

static void op_defer(struct verbs_rdm_ep *ep, struct vop *op)
{
	dlist_insert_tail(&op->dentry, &op->conn->deferred);
	ep->ndeferred++;
}

/* FIN, ACK, HELLO: now, or behind what waits for room on the conn. */
static int ctrl_send(struct vconn *conn, uint8_t opc, uint64_t tx_id,
		     uint64_t data, uint32_t status)
{
	struct verbs_rdm_ep *ep = conn->ep;
	struct vrdm_hdr h;
	struct vop *op;
	int ret;

	if (conn->state != VC_OPEN)
		return -FI_ENOTCONN;
	vrdm_hdr_put(&h, opc, 0, status, 0, data, tx_id, 0);
	/* A CREDIT need not keep its place behind what waits (credit_run). */
	if (dlist_empty(&conn->deferred) || opc == VRDM_OP_CREDIT) {
		ret = post_msg(ep, conn, &h, sizeof(h), NULL, 0, 0,
			       opc == VRDM_OP_CREDIT ? VRDM_RETURN :
						       VRDM_ANSWER, 0);
		if (ret != -FI_EAGAIN)
			return ret;
	}
	op = op_get(ep, VOP_CTRL, conn);
	if (!op)
		return -FI_ENOMEM;
	op->ctrl = h;
	if (opc == VRDM_OP_CREDIT)
		conn->credit_queued = true;
	op_defer(ep, op);
	return 0;
}

/* Half the peer's credits are owed: tell it, unless a message will. */
static inline void credit_maybe(struct vconn *conn)
{
	if (weft_unlikely(conn->credit_return >= VRDM_CREDITS / 2) &&
	    !conn->credit_queued && conn->state == VC_OPEN)
		ctrl_send(conn, VRDM_OP_CREDIT, 0, 0, 0);
}

static int fetch_start(struct verbs_rdm_ep *ep, struct vop *op);

/*
 * The CREDIT waiting on conn, ahead of what waits before it.  What waits
 * (a FIN, an ACK, data) may wait for credits that the peer can give only
 * once it has ours: when both sides are down to their last credits with
 * answers queued, each holding back the other's CREDIT behind them would
 * stop both for good.  A CREDIT carries nothing else, so it may pass.
 */
static void credit_run(struct verbs_rdm_ep *ep, struct vconn *conn)
{
	struct dlist_entry *e;

	dlist_foreach(&conn->deferred, e) {
		struct vop *op = container_of(e, struct vop, dentry);

		if (op->kind != VOP_CTRL || op->ctrl.op != VRDM_OP_CREDIT)
			continue;
		if (conn->credit_return &&
		    post_msg(ep, conn, &op->ctrl, sizeof(op->ctrl), NULL, 0, 0,
			     VRDM_RETURN, 0) == -FI_EAGAIN)
			return;
		conn->credit_queued = false;
		dlist_remove(&op->dentry);
		ep->ndeferred--;
		op_release(ep, op);
		return;
	}
}

/* Post what waits on each conn, in order, while there is room; a
 * waiting CREDIT first (credit_run). */
static void deferred_run(struct verbs_rdm_ep *ep)
{
	struct dlist_entry *ce;

	dlist_foreach(&ep->conns, ce) {
		struct vconn *conn = container_of(ce, struct vconn, entry);

		if (weft_unlikely(conn->credit_queued))
			credit_run(ep, conn);
		while (!dlist_empty(&conn->deferred)) {
			struct vop *op = container_of(conn->deferred.next,
						      struct vop, dentry);
			int ret;

			if (op->kind == VOP_CTRL &&
			    op->ctrl.op == VRDM_OP_CREDIT) {
				conn->credit_queued = false;
				ret = conn->credit_return ?
					      post_msg(ep, conn, &op->ctrl,
						       sizeof(op->ctrl), NULL,
						       0, 0, VRDM_RETURN, 0) :
					      0;
				if (ret == -FI_EAGAIN)
					conn->credit_queued = true;
			} else if (op->kind == VOP_CTRL) {
				ret = post_msg(ep, conn, &op->ctrl,
					       sizeof(op->ctrl), NULL, 0, 0,
					       VRDM_ANSWER, 0);
			} else if (op->kind == VOP_ANSWER) {
				ret = post_buf(ep, conn, op->bounce,
					       op->ans_len, VRDM_ANSWER, 0);
				if (!ret)
					op->bounce = NULL; /* the SEND's */
			} else {
				ret = op_post(ep, op, false);
			}
			if (ret == -FI_EAGAIN)
				break;
			dlist_remove(&op->dentry);
			ep->ndeferred--;
			if (op->kind == VOP_CTRL || op->kind == VOP_ANSWER) {
				op_release(ep, op);
			} else if (ret && !op->pending) {
				op->err = -ret;
				fetch_finish(ep, op);
			} else if (ret) {
				op->err = -ret;
			}
		}
	}
}

/* ---- the transport ------------------------------------------------------ */

static inline uint16_t wire_flags(uint32_t op, uint32_t rdm_flags)
{
	return (uint16_t)((op == UTIL_RDM_TAGGED ? VRDM_F_TAGGED : 0) |
			  ((rdm_flags & UTIL_RDM_CQ_DATA) ? VRDM_F_CQ_DATA : 0) |
			  ((rdm_flags & UTIL_RDM_ACK_REQ) ? VRDM_F_ACK_REQ : 0));
}

static int verbs_rdm_send_eager(struct util_rdm_xport *xp,
				struct util_peer *peer,
				const struct util_rdm_hdr *hdr,
				const struct iovec *iov, void **desc,
				size_t iov_count)
{
	struct util_rdm_ep *rdm = xp->ep;
	struct verbs_rdm_ep *ep = vep_of(rdm);
	struct vrdm_hdr h;
	struct vconn *conn;
	bool late;
	int ret;

	(void)desc;
	ret = peer_conn(ep, peer, &conn);
	if (weft_unlikely(ret))
		return ret;
	vrdm_hdr_put(&h, VRDM_OP_MSG, wire_flags(hdr->op, hdr->flags), 0,
		     hdr->tag, (uint32_t)hdr->data /* cq_data_size */,
		     hdr->tx_id, hdr->len);
	/* UTIL_RDM_LATE: done at the work completion, once the peer's
	 * device acknowledged it (a dead peer's never does). */
	late = hdr->flags & UTIL_RDM_LATE;
	ret = post_msg(ep, conn, &h, sizeof(h), iov, iov_count, hdr->len,
		       VRDM_DATA, late ? hdr->tx_id : 0);
	return !ret && late ? -FI_EINPROGRESS : ret;
}

/* A registration covering [addr, addr+len) with access, or a new one. */
static int mr_for(struct verbs_rdm_ep *ep, struct vop *op, void *desc,
		  void *addr, size_t len, uint64_t need, uint32_t *lkey,
		  uint32_t *rkey)
{
	struct verbs_mr *vm = desc;
	struct util_mr_cache_entry *e;
	struct ibv_mr *mr;
	int ret;

	if (vm && (!need || (vm->access & need) == need)) {
		*lkey = vm->mr->lkey;
		if (rkey)
			*rkey = vm->mr->rkey;
		return 0;
	}
	if (op->nmr == VRDM_OP_WR_MAX)
		return -FI_EINVAL;
	/* Kept by the domain's cache: the next message from the same
	 * buffer needs no registration, and freed memory drops it. */
	ret = util_mr_cache_get(&ep->domain->mr_cache, addr, len,
				IBV_ACCESS_LOCAL_WRITE |
					((need & FI_REMOTE_READ) ?
						 IBV_ACCESS_REMOTE_READ :
						 0),
				&e);
	if (ret)
		return ret;
	op->mr[op->nmr++] = e;
	mr = e->handle;
	*lkey = mr->lkey;
	if (rkey)
		*rkey = mr->rkey;
	return 0;
}

static int verbs_rdm_send_rndv(struct util_rdm_xport *xp, struct util_rdm_tx *tx)
{
	struct util_rdm_ep *rdm = xp->ep;
	struct verbs_rdm_ep *ep = vep_of(rdm);
	struct {
		struct vrdm_hdr h;
		struct vrdm_rts rts;
	} m;
	struct vconn *conn;
	struct vop *op;
	uint32_t lkey, rkey;
	size_t i, n = 0;
	int ret;

	ret = peer_conn(ep, tx->peer, &conn);
	if (ret)
		return ret;
	if (!sq_room(ep, conn, 1, true))
		return -FI_EAGAIN;
	op = op_get(ep, VOP_RNDV, conn);
	if (!op)
		return -FI_EAGAIN;
	op->tx_id = tx->hdr.tx_id;
	memset(&m, 0, sizeof(m));
	for (i = 0; i < tx->iov_count; i++) {
		if (!tx->iov[i].iov_len)
			continue;
		ret = mr_for(ep, op, tx->desc[i], tx->iov[i].iov_base,
			     tx->iov[i].iov_len, FI_REMOTE_READ, &lkey, &rkey);
		if (ret)
			goto err;
		vrdm_rts_put_seg(&m.rts, (uint32_t)n++,
				 (uintptr_t)tx->iov[i].iov_base, rkey,
				 tx->iov[i].iov_len);
	}
	m.rts.count = (uint32_t)n;
	m.rts.cookie = (uint32_t)util_bufpool_index(ep->op_pool, op);
	vrdm_hdr_put(&m.h, VRDM_OP_RTS, wire_flags(tx->hdr.op, tx->hdr.flags),
		     0, tx->hdr.tag, (uint32_t)tx->hdr.data, tx->hdr.tx_id,
		     tx->hdr.len);
	ret = post_msg(ep, conn, &m.h, sizeof(m.h) + VRDM_RTS_LEN(n), NULL, 0,
		       0, VRDM_DATA, 0);
	if (ret)
		goto err;
	return 0;
err:
	op_release(ep, op);
	return ret;
}

/* The largest message one work request may carry. */
static inline size_t wr_max(struct verbs_rdm_ep *ep)
{
	return ep->domain->dev.max_msg_sz ? ep->domain->dev.max_msg_sz :
					    (1u << 31);
}

/*
 * An atomic for the target to apply: one ATOMIC message (header, struct
 * vrdm_atomic, operands, compare values), as data.  The transmit completes
 * at the answer (rx_atomic_resp), once the target applied it.
 */
static int amo_send(struct verbs_rdm_ep *ep, struct util_rdm_tx *tx)
{
	struct {
		struct vrdm_hdr h;
		struct vrdm_atomic a;
	} m;
	struct iovec iov[2 * UTIL_RDM_IOV_MAX];
	size_t n = 0, len = tx->hdr.len, plen = 0;
	struct vconn *conn;
	int ret;

	if (len > VRDM_ATOMIC_MAX || tx->rma_iov[0].key > UINT32_MAX)
		return -FI_EINVAL;
	ret = peer_conn(ep, tx->peer, &conn);
	if (ret)
		return ret;
	vrdm_hdr_put(&m.h, VRDM_OP_ATOMIC, 0, 0, 0, 0, tx->hdr.tx_id, len);
	vrdm_atomic_put(&m.a, tx->rma_iov[0].addr,
			(uint32_t)tx->rma_iov[0].key,
			tx->kind == UTIL_RDM_TX_ATOMIC	     ? VRDM_AMO_WRITE :
			tx->kind == UTIL_RDM_TX_FETCH_ATOMIC ? VRDM_AMO_FETCH :
							       VRDM_AMO_COMPARE,
			(uint8_t)tx->atomic_op, (uint8_t)tx->datatype);
	if (tx->atomic_op != FI_ATOMIC_READ) {
		memcpy(iov, tx->iov, tx->iov_count * sizeof(*iov));
		n = tx->iov_count;
		plen = len;
	}
	if (tx->kind == UTIL_RDM_TX_COMPARE_ATOMIC) {
		memcpy(iov + n, tx->cmp_iov, tx->cmp_count * sizeof(*iov));
		n += tx->cmp_count;
		plen += len;
	}
	ret = post_msg(ep, conn, &m.h, sizeof(m), iov, n, plen, VRDM_DATA, 0);
	if (!ret)
		conn->amo_out++;
	return ret;
}

static int verbs_rdm_rma(struct util_rdm_xport *xp, struct util_rdm_tx *tx)
{
	struct util_rdm_ep *rdm = xp->ep;
	struct verbs_rdm_ep *ep = vep_of(rdm);
	struct vconn *conn;
	struct vop *op;
	uint64_t raddr;
	uint32_t lkey;
	size_t i, n = 0;
	bool imm;
	int ret;

	if (tx->rma_count != 1)
		return -FI_EOPNOTSUPP;
	if (tx->kind >= UTIL_RDM_TX_ATOMIC && !ep->amo_device)
		return amo_send(ep, tx);
	if (tx->kind >= UTIL_RDM_TX_ATOMIC &&
	    (!ep->domain->dev.atomics || tx->hdr.len != sizeof(uint64_t) ||
	     (tx->datatype != FI_UINT64 && tx->datatype != FI_INT64) ||
	     (tx->kind == UTIL_RDM_TX_COMPARE_ATOMIC ? tx->atomic_op != FI_CSWAP :
						      tx->atomic_op != FI_SUM) ||
	     !tx->iov_count))
		return -FI_EOPNOTSUPP;
	ret = peer_conn(ep, tx->peer, &conn);
	if (ret)
		return ret;
	/* Not past an atomic the target has still to apply: the write
	 * would land first (FI_ORDER_WAW, and reads FI_ORDER_RAW).  The
	 * engine keeps it queued, in order, until the answer. */
	if (weft_unlikely(conn->amo_out))
		return -FI_EAGAIN;
	/* Remote CQ data takes one of the target's receives. */
	imm = tx->kind == UTIL_RDM_TX_WRITE &&
	      (tx->hdr.flags & UTIL_RDM_CQ_DATA);
	if (imm && conn->credits <= VRDM_CREDIT_DATA)
		return -FI_EAGAIN;
	op = op_get(ep, VOP_RMA, conn);
	if (!op)
		return -FI_EAGAIN;
	op->tx_id = tx->hdr.tx_id;
	raddr = tx->rma_iov[0].addr;
	memset(op->wr, 0, sizeof(op->wr));
	if (tx->kind >= UTIL_RDM_TX_ATOMIC) {
		uint64_t operand = 0, cmp = 0;

		util_iov_copy_from(&operand, tx->iov, tx->iov_count, 0, 8);
		if (tx->kind == UTIL_RDM_TX_COMPARE_ATOMIC)
			util_iov_copy_from(&cmp, tx->cmp_iov, tx->cmp_count, 0,
					   8);
		op->bounce = txbuf_get(ep);
		if (!op->bounce) {
			ret = -FI_EAGAIN;
			goto err;
		}
		op->sge[0].addr = (uintptr_t)op->bounce->data;
		op->sge[0].length = 8;
		op->sge[0].lkey = ep->tx_mr->lkey;
		op->wr[0].sg_list = op->sge;
		op->wr[0].num_sge = 1;
		op->wr[0].wr.atomic.remote_addr = raddr;
		op->wr[0].wr.atomic.rkey = (uint32_t)tx->rma_iov[0].key;
		if (tx->kind == UTIL_RDM_TX_COMPARE_ATOMIC) {
			op->wr[0].opcode = IBV_WR_ATOMIC_CMP_AND_SWP;
			op->wr[0].wr.atomic.compare_add = cmp;
			op->wr[0].wr.atomic.swap = operand;
		} else {
			op->wr[0].opcode = IBV_WR_ATOMIC_FETCH_AND_ADD;
			op->wr[0].wr.atomic.compare_add = operand;
		}
		n = 1;
	} else {
		bool wr = tx->kind == UTIL_RDM_TX_WRITE;
		bool inl = wr && tx->hdr.len <= ep->max_inline;

		/* Injected data is the caller's again when we return, and
		 * the device reads it later: write it from a copy. */
		if (wr && !inl && (tx->flags & FI_INJECT) && tx->hdr.len &&
		    tx->hdr.len <= VRDM_BUF_SIZE) {
			op->copy = txbuf_get(ep);
			if (!op->copy) {
				ret = -FI_EAGAIN;
				goto err;
			}
			util_iov_copy_from(op->copy->data, tx->iov,
					   tx->iov_count, 0, tx->hdr.len);
			op->sge[0].addr = (uintptr_t)op->copy->data;
			op->sge[0].length = (uint32_t)tx->hdr.len;
			op->sge[0].lkey = ep->tx_mr->lkey;
			op->wr[0].sg_list = op->sge;
			op->wr[0].num_sge = 1;
			op->wr[0].opcode = IBV_WR_RDMA_WRITE;
			op->wr[0].wr.rdma.remote_addr = raddr;
			op->wr[0].wr.rdma.rkey = (uint32_t)tx->rma_iov[0].key;
			n = 1;
		}
		for (i = 0; i < tx->iov_count && !op->copy; i++) {
			size_t off = 0, len = tx->iov[i].iov_len;

			while (off < len) {
				size_t chunk = WEFT_MIN(len - off, wr_max(ep));

				/* Room for the immediate's message and the
				 * delivery read behind the writes. */
				if (n >= VRDM_OP_WR_MAX - 2) {
					ret = -FI_EINVAL;
					goto err;
				}
				lkey = 0;
				if (!inl) {
					ret = mr_for(ep, op, tx->desc[i],
						     tx->iov[i].iov_base,
						     tx->iov[i].iov_len, 0,
						     &lkey, NULL);
					if (ret)
						goto err;
				}
				op->sge[n].addr =
					(uintptr_t)tx->iov[i].iov_base + off;
				op->sge[n].length = (uint32_t)chunk;
				op->sge[n].lkey = lkey;
				op->wr[n].sg_list = &op->sge[n];
				op->wr[n].num_sge = 1;
				op->wr[n].opcode = wr ? IBV_WR_RDMA_WRITE :
							IBV_WR_RDMA_READ;
				op->wr[n].send_flags = inl ? IBV_SEND_INLINE : 0;
				op->wr[n].wr.rdma.remote_addr = raddr;
				op->wr[n].wr.rdma.rkey =
					(uint32_t)tx->rma_iov[0].key;
				raddr += chunk;
				off += chunk;
				n++;
			}
		}
		if (wr && (tx->hdr.flags & UTIL_RDM_CQ_DATA)) {
			if (!n) { /* zero bytes: the immediate alone */
				op->wr[0].opcode = IBV_WR_RDMA_WRITE;
				op->wr[0].wr.rdma.remote_addr = raddr;
				op->wr[0].wr.rdma.rkey =
					(uint32_t)tx->rma_iov[0].key;
				n = 1;
			}
			if (ep->domain->dev.iwarp) {
				/* iWARP has no immediate data: a message
				 * behind the write, which it cannot pass. */
				struct vrdm_hdr wd;

				vrdm_hdr_put(&wd, VRDM_OP_WDATA, 0, 0, 0,
					     (uint32_t)tx->hdr.data, 0,
					     tx->hdr.len);
				op->bounce = txbuf_get(ep);
				if (!op->bounce) {
					ret = -FI_EAGAIN;
					goto err;
				}
				memcpy(op->bounce->data, &wd, sizeof(wd));
				op->sge[n].addr = (uintptr_t)op->bounce->data;
				op->sge[n].length = sizeof(wd);
				op->sge[n].lkey = ep->tx_mr->lkey;
				op->wr[n].sg_list = &op->sge[n];
				op->wr[n].num_sge = 1;
				op->wr[n].opcode = IBV_WR_SEND;
				n++;
			} else {
				op->wr[n - 1].opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
				op->wr[n - 1].imm_data = (uint32_t)tx->hdr.data;
			}
		}
		if (!n) { /* a zero-byte read or write: nothing to move */
			op_release(ep, op);
			util_rdm_tx_done(rdm, tx, 0);
			return 0;
		}
		/*
		 * On iWARP a write completes once the data has left (TCP took
		 * it), before the target has checked the key and placed it.
		 * A completion of a reliable endpoint says more (fi_cq(3):
		 * FI_TRANSMIT_COMPLETE, the default, has the peer's transport
		 * holding the data; FI_DELIVERY_COMPLETE has it placed), and
		 * a write with a bad key must complete in error: a
		 * small read behind the writes is answered only after
		 * they were placed, and fails with them (the target ends the
		 * stream on an access error).  Writes without a completion
		 * take it too: a counter counts their errors.
		 */
		if (wr && ep->domain->fence_mr && conn->fence.rkey) {
			/* The peer's own fence region: the user's may not
			 * allow reads. */
			verbs_fence_wr(ep->domain, &conn->fence, &op->wr[n],
				       &op->sge[n]);
			n++;
		}
	}
	op->nwr = n;
	ret = op_post(ep, op, true);
	if (ret && !op->pending)
		goto err;
	if (imm)
		conn->credits--;
	if (ret)
		op->err = -ret; /* the posted ones complete, then it fails */
	return 0;
err:
	op_release(ep, op);
	return ret;
}

static void stash_get(const void *stash, struct vstash *st)
{
	memcpy(st, stash, sizeof(*st));
}

/* The reads of a fetch are done (or failed): tell the sender and the
 * engine. */
static void fetch_finish(struct verbs_rdm_ep *ep, struct vop *op)
{
	void *cookie = op->fetch_cookie;
	int err = op->err;

	if (op->conn->state == VC_OPEN && !ep->closing)
		ctrl_send(op->conn, VRDM_OP_FIN, op->tx_id, op->cookie,
			  (uint32_t)err);
	op_release(ep, op);
	util_rdm_fetch_done(&ep->rdm, cookie, err);
}

static int verbs_rdm_fetch(struct util_rdm_xport *xp, const void *stash,
			   const struct iovec *iov, void **desc,
			   size_t iov_count, size_t len, void *cookie)
{
	struct util_rdm_ep *rdm = xp->ep;
	struct verbs_rdm_ep *ep = vep_of(rdm);
	struct vstash st;
	struct vop *op;
	size_t li = 0, loff = 0, ri = 0, roff = 0, left, n = 0;
	uint32_t lkey;
	int ret;

	stash_get(stash, &st);
	st.conn->refs--; /* the stash is used up; an op names conn now */
	if (st.conn->state != VC_OPEN)
		return -FI_ECONNRESET;
	op = op_get(ep, VOP_FETCH, st.conn);
	if (!op)
		return -FI_ENOMEM;
	op->tx_id = st.tx_id;
	op->cookie = st.rts.cookie;
	op->fetch_cookie = cookie;
	memset(op->wr, 0, sizeof(op->wr));
	left = WEFT_MIN(len, st.len);
	/* One read per piece where a local and a remote segment overlap
	 * (devices such as siw read into one SGE only). */
	while (left) {
		size_t chunk;

		while (li < iov_count && loff == iov[li].iov_len) {
			li++;
			loff = 0;
		}
		while (ri < st.rts.count && roff == st.rts.seg[ri].len) {
			ri++;
			roff = 0;
		}
		if (li == iov_count || ri == st.rts.count ||
		    n == VRDM_OP_WR_MAX) {
			ret = -FI_EINVAL;
			goto err;
		}
		chunk = WEFT_MIN(iov[li].iov_len - loff,
				 st.rts.seg[ri].len - roff);
		chunk = WEFT_MIN(chunk, left);
		chunk = WEFT_MIN(chunk, wr_max(ep));
		ret = mr_for(ep, op, desc ? desc[li] : NULL, iov[li].iov_base,
			     iov[li].iov_len, 0, &lkey, NULL);
		if (ret)
			goto err;
		op->sge[n].addr = (uintptr_t)iov[li].iov_base + loff;
		op->sge[n].length = (uint32_t)chunk;
		op->sge[n].lkey = lkey;
		op->wr[n].sg_list = &op->sge[n];
		op->wr[n].num_sge = 1;
		op->wr[n].opcode = IBV_WR_RDMA_READ;
		op->wr[n].wr.rdma.remote_addr = st.rts.seg[ri].addr + roff;
		op->wr[n].wr.rdma.rkey = st.rts.seg[ri].rkey;
		n++;
		loff += chunk;
		roff += chunk;
		left -= chunk;
	}
	op->nwr = n;
	ret = fetch_start(ep, op);
	if (ret)
		return ret;
	return -FI_EINPROGRESS;
err:
	op_release(ep, op);
	return ret;
}

/* Post a fetch's reads, or queue them; a fetch of nothing finishes now. */
static int fetch_start(struct verbs_rdm_ep *ep, struct vop *op)
{
	int ret;

	if (!op->nwr) {
		fetch_finish(ep, op);
		return 0;
	}
	if (dlist_empty(&op->conn->deferred)) {
		ret = op_post(ep, op, false);
		if (!ret)
			return 0;
		if (ret != -FI_EAGAIN) {
			op->err = -ret;
			if (!op->pending)
				fetch_finish(ep, op);
			return 0;
		}
	}
	op_defer(ep, op);
	return 0;
}

static void verbs_rdm_discard(struct util_rdm_xport *xp, const void *stash)
{
	struct util_rdm_ep *rdm = xp->ep;
	struct verbs_rdm_ep *ep = vep_of(rdm);
	struct vstash st;

	stash_get(stash, &st);
	st.conn->refs--;
	if (ep->closing)
		return;
	if (st.conn->state == VC_OPEN)
		ctrl_send(st.conn, VRDM_OP_FIN, st.tx_id, st.rts.cookie, 0);
}

static int verbs_rdm_ack(struct util_rdm_xport *xp, void *reply, uint64_t tx_id,
			 int err)
{
	struct vconn *conn = reply;
	int ret;

	(void)xp;
	ret = ctrl_send(conn, VRDM_OP_ACK, tx_id, 0, (uint32_t)err);
	conn->refs--;
	return ret;
}

static int verbs_rdm_wait_fd(struct util_rdm_xport *xp)
{
	struct util_rdm_ep *rdm = xp->ep;
	return vep_of(rdm)->epfd;
}

/* ---- arrivals ----------------------------------------------------------- */

static void rx_repost(struct verbs_rdm_ep *ep, struct vbuf *b)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)b->data,
		.length = VRDM_BUF_SIZE,
		.lkey = b->lkey,
	};
	struct ibv_recv_wr wr = {
		.wr_id = wr_id(b, VWR_RECV),
		.sg_list = &sge,
		.num_sge = 1,
	}, *bad;

	if (ibv_post_srq_recv(ep->srq, &wr, &bad))
		FI_WARN(&verbs_prov, FI_LOG_EP_DATA,
			"could not repost a receive buffer\n");
}

/* A message or RTS for the engine: 0 (taken or dropped), or -FI_EAGAIN. */
static int rx_msg(struct verbs_rdm_ep *ep, struct vconn *conn,
		  const struct vrdm_hdr *h, const struct vbuf *b)
{
	struct util_rdm_msg msg;
	struct vstash st;
	struct vpeer *vp = conn->peer;
	uint32_t refs;
	int ret;

	memset(&msg, 0, sizeof(msg));
	msg.op = (h->flags & VRDM_F_TAGGED) ? UTIL_RDM_TAGGED : UTIL_RDM_MSG;
	msg.flags = ((h->flags & VRDM_F_CQ_DATA) ? UTIL_RDM_CQ_DATA : 0) |
		    ((h->flags & VRDM_F_ACK_REQ) ? UTIL_RDM_ACK_REQ : 0);
	msg.tag = h->tag;
	msg.data = h->data;
	msg.len = h->len;
	msg.tx_id = h->tx_id;
	msg.reply = conn;
	msg.src = FI_ADDR_NOTAVAIL;
	if (vp && (ep->rdm.caps & (FI_SOURCE | FI_DIRECTED_RECV))) {
		msg.src = util_peer_src(&ep->rdm.peers, &vp->peer);
		msg.src_raw = vp->peer.addr;
		msg.src_raw_len = sa_len(vp->peer.addr);
	}
	if (h->op == VRDM_OP_MSG) {
		if (vrdm_payload_decode(b->data, b->byte_len, h, &msg.payload))
			goto bad;
	} else {
		memset(&st, 0, sizeof(st));
		if (vrdm_rts_decode(b->data, b->byte_len, &st.rts))
			goto bad;
		st.conn = conn;
		st.tx_id = h->tx_id;
		st.len = h->len;
		msg.stash = &st;
		msg.stash_len = sizeof(st);
	}
	/* The engine comes back about a stash and about an ack. */
	refs = (msg.stash ? 1 : 0) + ((msg.flags & UTIL_RDM_ACK_REQ) ? 1 : 0);
	conn->refs += refs;
	ret = util_rdm_msg_arrived(&ep->xp, &msg);
	if (ret == -FI_EAGAIN) {
		conn->refs -= refs;
		return ret;
	}
	return 0;
bad:
	FI_WARN(&verbs_prov, FI_LOG_EP_DATA,
		"malformed message from a peer (%u bytes): dropped\n",
		b->byte_len);
	return 0;
}

/* An answer (FIN, ACK) names one of our transmits to that peer. */
static struct util_rdm_tx *answered_tx(struct verbs_rdm_ep *ep,
				       struct vconn *conn, uint64_t id)
{
	struct util_rdm_tx *tx = util_rdm_tx_of(&ep->rdm, id);

	if (!tx || !conn->peer || tx->peer != &conn->peer->peer) {
		FI_WARN(&verbs_prov, FI_LOG_EP_DATA,
			"answer for an unknown request %llu: ignored\n",
			(unsigned long long)id);
		return NULL;
	}
	return tx;
}

static void rx_fin(struct verbs_rdm_ep *ep, struct vconn *conn,
		   const struct vrdm_hdr *h)
{
	struct vop *op = util_bufpool_at(ep->op_pool, (uint32_t)h->data);
	struct util_rdm_tx *tx = answered_tx(ep, conn, h->tx_id);

	if (!tx)
		return;
	if (op && op->kind == VOP_RNDV && op->tx_id == h->tx_id &&
	    !dlist_empty(&op->entry))
		op_release(ep, op);
	util_rdm_tx_done(&ep->rdm, tx, vrdm_status(h));
}

/*
 * Apply an ATOMIC request to our memory, the fetched values (if any) to
 * res; returns 0 or a positive FI_E* for the answer, with *rlen the bytes
 * of res to send.  A key, range or access the registration does not
 * allow, or a request that does not add up, is refused, never applied.
 */
static uint32_t amo_apply(struct verbs_rdm_ep *ep, const struct vrdm_hdr *h,
			  const struct vbuf *b, uint8_t *res, size_t *rlen)
{
	struct util_mr_map *map = &ep->domain->base.mr_map;
	struct iovec local[UTIL_RDM_IOV_MAX * 2];
	struct vrdm_atomic a;
	const void *src, *cmp;
	size_t len = h->len, n = 0;
	struct fi_rma_iov r;
	int ret;

	*rlen = 0;
	ret = vrdm_atomic_decode(b->data, b->byte_len, h, &a, &src, &cmp);
	if (ret)
		return (uint32_t)-ret;
	r.addr = a.addr;
	r.len = len;
	r.key = a.key;
	ret = util_rdm_target_iov(map, &r, 1,
				  FI_REMOTE_WRITE |
					  (a.kind != VRDM_AMO_WRITE ?
						   FI_REMOTE_READ :
						   0),
				  local, UTIL_RDM_IOV_MAX * 2, &n);
	/* Peers of this host may apply atomics to the same memory through
	 * shared memory (its registration table): under their lock. */
	if (!ret)
		ret = util_mr_map_atomic_lock(map);
	if (ret)
		return (uint32_t)-ret;
	ret = util_rdm_target_atomic(a.op, a.datatype, local, n, src, cmp,
				     a.kind != VRDM_AMO_WRITE ? res : NULL);
	util_mr_map_atomic_unlock(map);
	if (ret)
		return (uint32_t)-ret;
	util_rdm_remote_event(&ep->rdm, FI_REMOTE_WRITE, len, 0);
	*rlen = a.kind != VRDM_AMO_WRITE ? len : 0;
	return 0;
}

/*
 * An ATOMIC request: applied, and answered on its QP with ATOMIC_RESP
 * (status, fetched values), now or as soon as there is room.  Both the
 * answer's send buffer and what defers it are taken before the atomic is
 * applied, so an applied atomic is always answered; without them the
 * request is refused (-FI_EAGAIN: held, and offered again in order).  On
 * a connection already lost it is dropped, not applied: no answer could
 * go back, and its sender hears of the loss.
 */
static int rx_atomic(struct verbs_rdm_ep *ep, struct vconn *conn,
		     const struct vrdm_hdr *h, const struct vbuf *rb)
{
	struct vrdm_hdr r;
	struct vbuf *b;
	struct vop *op;
	uint32_t status;
	size_t rlen;
	int ret;

	if (conn->state == VC_CLOSED)
		return 0;
	b = txbuf_get(ep);
	if (!b)
		return -FI_EAGAIN;
	op = op_get(ep, VOP_ANSWER, conn);
	if (!op) {
		txbuf_put(ep, b);
		return -FI_EAGAIN;
	}
	op->bounce = b;
	status = amo_apply(ep, h, rb, b->data + sizeof(r), &rlen);
	vrdm_hdr_put(&r, VRDM_OP_ATOMIC_RESP, 0, status, 0, 0, h->tx_id, rlen);
	memcpy(b->data, &r, sizeof(r));
	op->ans_len = (uint32_t)(sizeof(r) + rlen);
	if (dlist_empty(&conn->deferred)) {
		ret = post_buf(ep, conn, b, op->ans_len, VRDM_ANSWER, 0);
		if (!ret)
			op->bounce = NULL; /* the SEND's now */
		if (ret != -FI_EAGAIN) {
			op_release(ep, op);
			return 0;
		}
	}
	op_defer(ep, op);
	return 0;
}

/* The answer to one of our ATOMIC requests: its fetched values, and the
 * transmit is done.  RMA to the peer may go once none is unanswered. */
static void rx_atomic_resp(struct verbs_rdm_ep *ep, struct vconn *conn,
			   const struct vrdm_hdr *h, const struct vbuf *b)
{
	struct util_rdm_tx *tx = answered_tx(ep, conn, h->tx_id);
	int err = vrdm_status(h);
	const void *vals;

	if (conn->amo_out)
		conn->amo_out--;
	if (!tx)
		return;
	if (tx->kind < UTIL_RDM_TX_ATOMIC) {
		FI_WARN(&verbs_prov, FI_LOG_EP_DATA,
			"atomic answer for another request: ignored\n");
		return;
	}
	if (!err && tx->kind != UTIL_RDM_TX_ATOMIC) {
		if (h->len != tx->hdr.len ||
		    vrdm_payload_decode(b->data, b->byte_len, h, &vals))
			err = FI_EIO;
		else
			util_iov_copy_to(tx->res_iov, tx->res_count, 0, vals,
					 tx->hdr.len);
	}
	util_rdm_tx_done(&ep->rdm, tx, err);
}

/*
 * One receive buffer: 0 when it may be reposted, -FI_EAGAIN when the
 * engine refused it (the caller holds it, in order).
 */
static int rx_one(struct verbs_rdm_ep *ep, struct vbuf *b)
{
	struct vconn *conn = conn_by_qpn(ep, b->qpn);
	struct vrdm_hdr hdr, *h = &hdr;

	if (weft_unlikely(!conn ||
			  vrdm_hdr_decode(b->data, b->byte_len, h))) {
		FI_WARN(&verbs_prov, FI_LOG_EP_DATA,
			"message of another protocol version or from an "
			"unknown QP: dropped\n");
		return 0;
	}
	if (weft_unlikely(conn->state != VC_OPEN))
		conn_open(conn); /* something arrived: the peer is there */
	switch (h->op) {
	case VRDM_OP_MSG:
	case VRDM_OP_RTS:
		return rx_msg(ep, conn, h, b);
	case VRDM_OP_FIN:
		rx_fin(ep, conn, h);
		return 0;
	case VRDM_OP_ATOMIC:
		return rx_atomic(ep, conn, h, b);
	case VRDM_OP_ATOMIC_RESP:
		rx_atomic_resp(ep, conn, h, b);
		return 0;
	case VRDM_OP_ACK: {
		struct util_rdm_tx *tx = answered_tx(ep, conn, h->tx_id);

		if (tx)
			util_rdm_tx_acked(&ep->rdm, h->tx_id, vrdm_status(h));
		return 0;
	}
	case VRDM_OP_HELLO:
	case VRDM_OP_CREDIT:
		return 0;
	case VRDM_OP_WDATA:
		util_rdm_remote_event(&ep->rdm,
				      FI_REMOTE_WRITE | FI_REMOTE_CQ_DATA,
				      h->len, h->data);
		return 0;
	default:
		FI_WARN(&verbs_prov, FI_LOG_EP_DATA,
			"unknown message %u from a peer: dropped\n", h->op);
		return 0;
	}
}

/*
 * Put the buffers rx_done collected back in the SRQ, in one call, and
 * only then give the credits they stand for to the QPs whose messages
 * used them (a peer never sends to a buffer not posted: iWARP would
 * break the connection).
 */
static void repost_flush(struct verbs_rdm_ep *ep)
{
	struct ibv_recv_wr wr[VRDM_REPOST_MAX], *bad;
	struct ibv_sge sge[VRDM_REPOST_MAX];
	uint32_t i, n = ep->nrepost;

	ep->nrepost = 0;
	for (i = 0; i < n; i++) {
		struct vbuf *b = ep->repost[i];

		sge[i].addr = (uintptr_t)b->data;
		sge[i].length = VRDM_BUF_SIZE;
		sge[i].lkey = b->lkey;
		wr[i].wr_id = wr_id(b, VWR_RECV);
		wr[i].sg_list = &sge[i];
		wr[i].num_sge = 1;
		wr[i].next = i + 1 < n ? &wr[i + 1] : NULL;
	}
	if (ibv_post_srq_recv(ep->srq, wr, &bad)) {
		FI_WARN(&verbs_prov, FI_LOG_EP_DATA,
			"could not repost %u receive buffers\n",
			(unsigned int)(n - (uint32_t)(bad - wr)));
		n = (uint32_t)(bad - wr);
	}
	for (i = 0; i < n; i++) {
		struct vconn *conn = conn_by_qpn(ep, ep->repost[i]->qpn);

		if (weft_likely(conn != NULL)) {
			conn->credit_return++;
			credit_maybe(conn);
		}
	}
}

/*
 * A receive buffer is free again: back to the SRQ, and the credit it
 * stands for to the QP (b->qpn) whose message used it.  Not at once: the
 * repost waits for the next empty look at the CQ (verbs_rdm_progress), so
 * that it is off the path from a message's arrival to the application's
 * answer; the credit goes back in a later header.
 */
static void rx_done(struct verbs_rdm_ep *ep, struct vbuf *b)
{
	ep->repost[ep->nrepost++] = b;
	if (weft_unlikely(ep->nrepost == VRDM_REPOST_MAX))
		repost_flush(ep);
}

/* Offer the held receives again, oldest first. */
static int held_run(struct verbs_rdm_ep *ep)
{
	int n = 0;

	while (!dlist_empty(&ep->held)) {
		struct vbuf *b = container_of(ep->held.next, struct vbuf,
					      entry);

		if (rx_one(ep, b) == -FI_EAGAIN)
			break;
		dlist_remove(&b->entry);
		rx_done(ep, b);
		n++;
	}
	return n;
}

static void wc_recv(struct verbs_rdm_ep *ep, struct ibv_wc *wc,
		    struct vbuf *b)
{
	struct vrdm_hdr h;
	struct vconn *conn;
	bool ours;

	if (weft_unlikely(wc->status != IBV_WC_SUCCESS)) {
		if (wc->status != IBV_WC_WR_FLUSH_ERR)
			FI_WARN(&verbs_prov, FI_LOG_EP_DATA,
				"receive failed: %s\n",
				ibv_wc_status_str(wc->status));
		if (!ep->closing)
			rx_repost(ep, b);
		return;
	}
	conn = conn_by_qpn(ep, wc->qp_num);
	if (weft_unlikely(conn && conn->state != VC_OPEN))
		conn_open(conn); /* something arrived: the peer is there */
	b->byte_len = wc->byte_len;
	b->qpn = wc->qp_num;
	if (wc->opcode == IBV_WC_RECV_RDMA_WITH_IMM) {
		util_rdm_remote_event(&ep->rdm,
				      FI_REMOTE_WRITE | FI_REMOTE_CQ_DATA,
				      wc->byte_len, wc->imm_data);
		rx_done(ep, b);
		return;
	}
	ours = !vrdm_hdr_decode(b->data, wc->byte_len, &h);
	if (weft_likely(conn && ours))
		conn->credits += h.credits;
	/* Behind a held one, or refused now: keep it, in order. */
	if (weft_unlikely(!dlist_empty(&ep->held)) ||
	    weft_unlikely(rx_one(ep, b) == -FI_EAGAIN)) {
		if (dlist_empty(&ep->held) ||
		    (ours && (h.op == VRDM_OP_MSG || h.op == VRDM_OP_RTS ||
			      h.op == VRDM_OP_ATOMIC))) {
			dlist_insert_tail(&b->entry, &ep->held);
			return;
		}
		/* Answers pass held messages: they are not the engine's. */
		rx_one(ep, b);
	}
	rx_done(ep, b);
}

/*
 * A work request failed for a reason of its own (not flushed): its QP is
 * in error now, and everything behind it on that QP will be flushed.  The
 * connection is lost: the peer hears of it (rdma_disconnect), and the next
 * transmit makes a new one, as the man pages want of a reliable endpoint
 * after a bad RMA key, instead of every later operation failing on the
 * dead QP.
 */
static inline void wc_broke(struct vconn *conn, struct ibv_wc *wc)
{
	if (weft_unlikely(wc->status != IBV_WC_SUCCESS &&
			  wc->status != IBV_WC_WR_FLUSH_ERR)) {
		FI_WARN(&verbs_prov, FI_LOG_EP_DATA, "work request failed: %s\n",
			ibv_wc_status_str(wc->status));
		conn_lost(conn, verbs_wc_err(wc->status));
	}
}

static void wc_op(struct verbs_rdm_ep *ep, struct ibv_wc *wc, struct vop *op)
{
	struct vconn *conn = op->conn;
	struct util_rdm_tx *tx;
	int err;

	sq_done(ep, conn, wc);
	if (wc->status != IBV_WC_SUCCESS && !op->err)
		op->err = verbs_wc_err(wc->status);
	if (--op->pending) {
		wc_broke(conn, wc);
		return;
	}
	if (op->kind == VOP_FETCH) {
		fetch_finish(ep, op);
		wc_broke(conn, wc);
		return;
	}
	err = op->err;
	tx = util_rdm_tx_of(&ep->rdm, op->tx_id);
	if (tx && !err && op->bounce && tx->res_count)
		util_iov_copy_to(tx->res_iov, tx->res_count, 0,
				 op->bounce->data, sizeof(uint64_t));
	op_release(ep, op);
	if (tx)
		util_rdm_tx_done(&ep->rdm, tx, err);
	/* After its own completion: the others to the peer fail behind. */
	wc_broke(conn, wc);
}

static void wc_one(struct verbs_rdm_ep *ep, struct ibv_wc *wc)
{
	void *p = (void *)(uintptr_t)(wc->wr_id & ~VWR_KIND_MASK);
	struct vconn *conn;

	switch (wc->wr_id & VWR_KIND_MASK) {
	case VWR_RECV:
		wc_recv(ep, wc, p);
		return;
	case VWR_SEND:
		conn = ((struct vbuf *)p)->conn;
		txbuf_put(ep, p);
		break;
	case VWR_INLINE:
		conn = p;
		break;
	case VWR_OP:
		wc_op(ep, wc, p);
		return;
	case VWR_DRAIN:
		((struct vconn *)p)->drained = true;
		ep->sq_total--;
		return;
	default:
		return;
	}
	sq_done(ep, conn, wc);
	wc_broke(conn, wc);
}

static int poll_cq(struct verbs_rdm_ep *ep)
{
	struct ibv_wc wc[VRDM_POLL];
	int i, k;

	k = ibv_poll_cq(ep->cq, VRDM_POLL, wc);
	for (i = 0; i < k; i++)
		wc_one(ep, &wc[i]);
	return k > 0 ? k : 0;
}

/*
 * conn's QP went to error before the CQ was last found empty, on a
 * device that never completes what was posted after that (see
 * conn_drain): complete it here, as the device would have, flushed.
 * Its ops, its send buffers, then the signaled inline sends its slot
 * batches still count; unsignaled ones name nothing.
 */
static void self_flush(struct verbs_rdm_ep *ep, struct vconn *conn)
{
	struct ibv_wc wc = { .status = IBV_WC_WR_FLUSH_ERR };
	struct dlist_entry *e;
	struct vop *op;
	size_t i;

	/* A completion may end other ops: look again after each. */
	do {
		op = NULL;
		dlist_foreach(&ep->ops, e) {
			struct vop *o = container_of(e, struct vop, entry);

			if (o->conn == conn && o->pending) {
				op = o;
				break;
			}
		}
		if (op) {
			wc.wr_id = wr_id(op, VWR_OP);
			wc_one(ep, &wc);
		}
	} while (op);
	for (i = 0; i < VRDM_TX_BUFS; i++)
		if (ep->tx_bufs[i].conn == conn) {
			wc.wr_id = wr_id(&ep->tx_bufs[i], VWR_SEND);
			wc_one(ep, &wc);
		}
	while (conn->batch_head != conn->batch_tail) {
		wc.wr_id = wr_id(conn, VWR_INLINE);
		wc_one(ep, &wc);
	}
	conn->self_flush = false;
	conn->drained = true;
	ep->nself_flush--;
}

/* The CQ was found empty: the conns due for self_flush; how many. */
static int cq_empty(struct verbs_rdm_ep *ep)
{
	struct dlist_entry *e;
	int n = 0;

	ep->empty_seq++;
	if (!ep->nself_flush)
		return 0;
	dlist_foreach(&ep->conns, e) {
		struct vconn *conn = container_of(e, struct vconn, entry);

		if (conn->self_flush && conn->flush_seq < ep->empty_seq) {
			self_flush(ep, conn);
			n++;
		}
	}
	return n;
}

/* The CQ was empty: what waits for that (reposts), or for time. */
static __attribute__((noinline)) int progress_idle(struct verbs_rdm_ep *ep)
{
	int n;

	n = cq_empty(ep);
	if (ep->nrepost)
		repost_flush(ep);
	if (ep->cm_busy || !(ep->calls & 4095))
		n += cm_progress(ep);
	if (ep->ndead && !(ep->calls & 63))
		conn_reap(ep);
	return n;
}

/* Progress: the CQ, and what waits on credits or buffers; connection
 * events only now and then once connections are made, since each look at
 * the rdma_cm channel is a system call.  The completion channel is left
 * alone here: verbs_rdm_arm arms it when a thread is about to sleep.  An
 * empty look at the CQ, what a busy-polling reader does most, costs a few
 * tests besides the device's poll. */
static int verbs_rdm_progress(struct util_rdm_xport *xp)
{
	struct util_rdm_ep *rdm = xp->ep;
	struct verbs_rdm_ep *ep = vep_of(rdm);
	int k, n;

	if (weft_unlikely(ep->closing))
		return 0;
	n = k = poll_cq(ep);
	ep->calls++;
	if (!k && (ep->nrepost || ep->cm_busy || ep->nself_flush ||
		   (ep->ndead && !(ep->calls & 63)) || !(ep->calls & 4095)))
		n += progress_idle(ep);
	if (weft_unlikely(!dlist_empty(&ep->held)))
		n += held_run(ep);
	if (weft_unlikely(ep->ndeferred))
		deferred_run(ep);
	if (k && (ep->cm_busy || !(ep->calls & 16383)))
		n += cm_progress(ep);
	return n;
}

/*
 * A thread is about to sleep on the wait fd (the completion channel and
 * the rdma_cm channel): take the connection events (the channel stays
 * readable while any are pending), take the completion channel's events
 * and arm the CQ for the next completion, then look once more, since one
 * may have come before the arming.
 */
static int verbs_rdm_arm(struct util_rdm_xport *xp)
{
	struct util_rdm_ep *rdm = xp->ep;
	struct verbs_rdm_ep *ep = vep_of(rdm);
	struct ibv_cq *cq;
	void *ctx;
	int n, k;

	if (weft_unlikely(ep->closing))
		return 0;
	n = cm_progress(ep);
	conn_reap(ep);
	/* Credits a sleeping peer may wait for go back before we sleep. */
	if (ep->nrepost)
		repost_flush(ep);
	while (!ibv_get_cq_event(ep->comp_ch, &cq, &ctx)) {
		ibv_ack_cq_events(cq, 1);
		ep->cq_armed = false;
	}
	if (!ep->cq_armed && !ibv_req_notify_cq(ep->cq, 0))
		ep->cq_armed = true;
	k = poll_cq(ep);
	/* What the device will never complete raises no CQ event: end
	 * it now rather than sleep on it. */
	if (!k)
		k = cq_empty(ep);
	return n + k;
}

static int verbs_rdm_peer_init(struct util_rdm_xport *xp, struct util_peer *peer)
{
	struct util_rdm_ep *rdm = xp->ep;
	(void)rdm;
	vpeer_of(peer)->conn = NULL;
	return 0;
}

static const struct util_rdm_transport verbs_rdm_transport = {
	.send_eager = verbs_rdm_send_eager,
	.send_rndv = verbs_rdm_send_rndv,
	.fetch = verbs_rdm_fetch,
	.discard = verbs_rdm_discard,
	.ack = verbs_rdm_ack,
	.rma = verbs_rdm_rma,
	.progress = verbs_rdm_progress,
	.wait_fd = verbs_rdm_wait_fd,
	.arm = verbs_rdm_arm,
	.peer_size = sizeof(struct vpeer),
	.peer_init = verbs_rdm_peer_init,
};

/* ---- endpoint ------------------------------------------------------------ */

static void ep_teardown(struct verbs_rdm_ep *ep)
{
	struct dlist_entry *e, *tmp;
	struct ibv_cq *cq;
	void *ctx;

	dlist_foreach_safe(&ep->conns, e, tmp) {
		struct vconn *conn = container_of(e, struct vconn, entry);

		dlist_remove(e);
		if (conn->qp)
			rdma_destroy_qp(conn->id);
		rdma_destroy_id(conn->id);
		free(conn);
	}
	if (ep->lid)
		rdma_destroy_id(ep->lid);
	if (ep->cm_ch) {
		if (ep->epfd >= 0)
			epoll_ctl(ep->epfd, EPOLL_CTL_DEL, ep->cm_ch->fd, NULL);
		rdma_destroy_event_channel(ep->cm_ch);
	}
	if (ep->srq)
		ibv_destroy_srq(ep->srq);
	if (ep->cq) {
		if (ep->cq_armed)
			while (!ibv_get_cq_event(ep->comp_ch, &cq, &ctx))
				ibv_ack_cq_events(cq, 1);
		ibv_destroy_cq(ep->cq);
	}
	if (ep->comp_ch) {
		if (ep->epfd >= 0)
			epoll_ctl(ep->epfd, EPOLL_CTL_DEL, ep->comp_ch->fd,
				  NULL);
		ibv_destroy_comp_channel(ep->comp_ch);
	}
	dlist_foreach_safe(&ep->chunks, e, tmp) {
		struct vchunk *c = container_of(e, struct vchunk, entry);

		dlist_remove(e);
		ibv_dereg_mr(c->mr);
		free(c->mem);
		free(c);
	}
	if (ep->tx_mr)
		ibv_dereg_mr(ep->tx_mr);
	free(ep->tx_mem);
	free(ep->tx_bufs);
	if (ep->op_pool)
		util_bufpool_destroy(ep->op_pool);
}

static int verbs_rdm_ep_close(struct fid *fid)
{
	struct verbs_rdm_ep *ep =
		container_of(fid, struct verbs_rdm_ep, rdm.ep_fid.fid);
	struct dlist_entry *e, *tmp;

	/* Injects its peers could not take yet still go (util_rdm.h). */
	util_rdm_ep_linger(&ep->rdm);
	weft_lock(&ep->rdm.lock);
	/* Everything outstanding ends as canceled, while the engine can
	 * still report it. */
	ep->closing = true;
	dlist_foreach_safe(&ep->conns, e, tmp) {
		struct vconn *conn = container_of(e, struct vconn, entry);

		conn_lost(conn, FI_ECANCELED);
	}
	dlist_foreach_safe(&ep->ops, e, tmp) {
		struct vop *op = container_of(e, struct vop, entry);
		struct util_rdm_tx *tx;

		if (op->kind == VOP_FETCH) {
			void *cookie = op->fetch_cookie;

			op_release(ep, op);
			util_rdm_fetch_done(&ep->rdm, cookie, FI_ECANCELED);
			continue;
		}
		tx = op->kind == VOP_CTRL || op->kind == VOP_ANSWER ?
			     NULL :
			     util_rdm_tx_of(&ep->rdm, op->tx_id);
		op_release(ep, op);
		if (tx)
			util_rdm_tx_done(&ep->rdm, tx, FI_ECANCELED);
	}
	dlist_foreach(&ep->rdm.peers.list, e) {
		struct util_peer *peer = container_of(e, struct util_peer,
						      entry);

		util_rdm_fail_peer(&ep->rdm, peer, FI_ECANCELED);
	}
	weft_unlock(&ep->rdm.lock);
	if (ep->local)
		shm_local_closing(ep->local);
	util_rdm_ep_fini(&ep->rdm);
	if (ep->local)
		shm_local_free(ep->local);
	ep_teardown(ep);
	free(ep);
	return 0;
}

static int verbs_rdm_getname(fid_t fid, void *addr, size_t *addrlen)
{
	struct verbs_rdm_ep *ep =
		container_of(fid, struct verbs_rdm_ep, rdm.ep_fid.fid);

	if (!addrlen)
		return -FI_EINVAL;
	if (!addr || *addrlen < ep->addrlen) {
		*addrlen = ep->addrlen;
		return -FI_ETOOSMALL;
	}
	memcpy(addr, &ep->addr, ep->addrlen);
	*addrlen = ep->addrlen;
	return 0;
}

static int verbs_rdm_setname(fid_t fid, void *addr, size_t addrlen);

static struct fi_ops_cm verbs_rdm_cm_ops = {
	.size = sizeof(struct fi_ops_cm),
	.setname = verbs_rdm_setname,
	.getname = verbs_rdm_getname,
	.getpeer = weft_no_getpeer,
	.connect = weft_no_connect,
	.listen = weft_no_listen,
	.accept = weft_no_accept,
	.reject = weft_no_reject,
	.shutdown = weft_no_shutdown,
	.join = weft_no_join,
};

/* FI_ENABLE: the shared memory region first, named after our address. */
static int verbs_rdm_control(struct fid *fid, int command, void *arg)
{
	struct verbs_rdm_ep *ep =
		container_of(fid, struct verbs_rdm_ep, rdm.ep_fid.fid);

	/* Without it every peer goes through the device, which works. */
	if (command == FI_ENABLE && ep->local && !ep->rdm.enabled &&
	    !ep->local_up)
		ep->local_up = shm_local_enable(
			ep->local, &verbs_prov, "the device",
			(const struct sockaddr *)&ep->addr,
			ep->rdm.peers.attr.addr_len);
	return util_rdm_ep_control(fid, command, arg);
}

static struct fi_ops verbs_rdm_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = verbs_rdm_ep_close,
	.bind = util_rdm_ep_bind,
	.control = verbs_rdm_control,
	.ops_open = weft_no_ops_open,
	.tostr = weft_no_tostr,
	.ops_set = weft_no_ops_set,
};

/* FI_VERBS_DEVICE_ATOMICS: what the device does, nothing else. */
static int device_valid(struct fid_ep *ep_fid, enum fi_datatype dt,
			enum fi_op op, uint64_t flags, size_t *count)
{
	struct verbs_rdm_ep *ep = vep_of(util_rdm_ep_of(ep_fid));
	struct fi_atomic_attr attr;
	int ret;

	if (!(ep->rdm.caps & FI_ATOMIC))
		return -FI_EOPNOTSUPP;
	ret = verbs_dev_atomic(&ep->domain->dev, dt, op, flags, &attr);
	if (ret)
		return ret;
	if (count)
		*count = attr.count;
	return 0;
}

static int verbs_rdm_writevalid(struct fid_ep *ep, enum fi_datatype dt,
				enum fi_op op, size_t *count)
{
	return device_valid(ep, dt, op, 0, count);
}

static int verbs_rdm_readwritevalid(struct fid_ep *ep, enum fi_datatype dt,
				    enum fi_op op, size_t *count)
{
	return device_valid(ep, dt, op, FI_FETCH_ATOMIC, count);
}

static int verbs_rdm_compwritevalid(struct fid_ep *ep, enum fi_datatype dt,
				    enum fi_op op, size_t *count)
{
	return device_valid(ep, dt, op, FI_COMPARE_ATOMIC, count);
}

/* Listen at sa (its port 0: one the kernel picks); the endpoint is named
 * by where it listens.  Replaces a listener it had. */
static int listen_at(struct verbs_rdm_ep *ep, const struct sockaddr_storage *sa)
{
	struct sockaddr_storage got;
	struct rdma_cm_id *id;
	int ret, tries = 0;

	if (sa->ss_family != AF_INET && sa->ss_family != AF_INET6)
		return -FI_EINVAL;
again:
	if (rdma_create_id(ep->cm_ch, &id, ep, RDMA_PS_TCP))
		return weft_errno(errno);
	if (rdma_bind_addr(id, (struct sockaddr *)sa) || rdma_listen(id, 1024)) {
		ret = weft_errno(errno);
		rdma_destroy_id(id);
		/* On iWARP the port rdma_cm picked must be free in the
		 * kernel's TCP too, where an earlier connection may still
		 * hold it (TIME_WAIT): pick another. */
		if (ret == -FI_EADDRINUSE && sa_port(sa) == 0 && ++tries < 16)
			goto again;
		return ret;
	}
	if (ep->lid)
		rdma_destroy_id(ep->lid);
	ep->lid = id;
	memcpy(&got, rdma_get_local_addr(id), sa_len(rdma_get_local_addr(id)));
	sa_stored(&got, &ep->addr);
	ep->addrlen = sa_len(&ep->addr);
	return 0;
}

static int verbs_rdm_setname(fid_t fid, void *addr, size_t addrlen)
{
	struct verbs_rdm_ep *ep =
		container_of(fid, struct verbs_rdm_ep, rdm.ep_fid.fid);
	struct sockaddr_storage sa;
	int ret;

	if (!addr || addrlen < sizeof(struct sockaddr_in) ||
	    addrlen > sizeof(sa))
		return -FI_EINVAL;
	if (ep->rdm.enabled)
		return -FI_EOPBADSTATE;
	memset(&sa, 0, sizeof(sa));
	memcpy(&sa, addr, addrlen);
	if (addrlen < sa_len(&sa))
		return -FI_EINVAL;
	weft_lock(&ep->rdm.lock);
	ret = listen_at(ep, &sa);
	weft_unlock(&ep->rdm.lock);
	return ret;
}

/* Listen on the device's address; the endpoint is named by it. */
static int ep_listen(struct verbs_rdm_ep *ep, const struct fi_info *info)
{
	const struct fi_info *di = ep->domain->info;
	struct sockaddr_storage sa;

	memset(&sa, 0, sizeof(sa));
	if (info->src_addr && info->src_addrlen >= sizeof(struct sockaddr_in))
		memcpy(&sa, info->src_addr,
		       WEFT_MIN(info->src_addrlen, sizeof(sa)));
	else if (di && di->src_addr &&
		 di->src_addrlen >= sizeof(struct sockaddr_in)) {
		memcpy(&sa, di->src_addr, WEFT_MIN(di->src_addrlen, sizeof(sa)));
		((struct sockaddr_in *)&sa)->sin_port = 0;
	} else
		return -FI_EADDRNOTAVAIL;
	return listen_at(ep, &sa);
}

/* Send buffers, and the SRQ (QPs bring their receive buffers). */
static int ep_buffers(struct verbs_rdm_ep *ep)
{
	struct verbs_domain *d = ep->domain;
	struct ibv_srq_init_attr sa;
	size_t i;

	ep->tx_mem = aligned_alloc(4096, (size_t)VRDM_TX_BUFS * VRDM_BUF_SIZE);
	ep->tx_bufs = calloc(VRDM_TX_BUFS, sizeof(*ep->tx_bufs));
	if (!ep->tx_mem || !ep->tx_bufs)
		return -FI_ENOMEM;
	memset(ep->tx_mem, 0, (size_t)VRDM_TX_BUFS * VRDM_BUF_SIZE);
	ep->tx_mr = ibv_reg_mr(d->pd, ep->tx_mem,
			       (size_t)VRDM_TX_BUFS * VRDM_BUF_SIZE,
			       IBV_ACCESS_LOCAL_WRITE);
	if (!ep->tx_mr)
		return weft_errno(errno);
	for (i = 0; i < VRDM_TX_BUFS; i++) {
		ep->tx_bufs[i].data = ep->tx_mem + i * VRDM_BUF_SIZE;
		ep->tx_bufs[i].lkey = ep->tx_mr->lkey;
		dlist_insert_tail(&ep->tx_bufs[i].entry, &ep->tx_free);
	}
	memset(&sa, 0, sizeof(sa));
	sa.attr.max_wr = VRDM_SRQ_MAX;
	sa.attr.max_sge = 1;
	ep->srq = ibv_create_srq(d->pd, &sa);
	if (!ep->srq)
		return weft_errno(errno);
	return 0;
}

static int ep_queues(struct verbs_rdm_ep *ep)
{
	struct verbs_domain *d = ep->domain;
	struct epoll_event ev = { .events = EPOLLIN };
	struct util_bufpool_attr pa = {
		.name = "verbs_rdm_op",
		.size = sizeof(struct vop),
		.alignment = 64,
		.chunk_cnt = 64,
	};
	int ret;

	ret = util_bufpool_create(&pa, &ep->op_pool);
	if (ret)
		return ret;
	ep->epfd = d->epfd; /* the domain's */
	ep->cm_ch = rdma_create_event_channel();
	if (!ep->cm_ch)
		return weft_errno(errno);
	ep->comp_ch = ibv_create_comp_channel(d->ctx);
	if (!ep->comp_ch)
		return weft_errno(errno);
	if (fcntl(ep->cm_ch->fd, F_SETFL,
		  fcntl(ep->cm_ch->fd, F_GETFL) | O_NONBLOCK) ||
	    fcntl(ep->comp_ch->fd, F_SETFL,
		  fcntl(ep->comp_ch->fd, F_GETFL) | O_NONBLOCK))
		return weft_errno(errno);
	ev.data.fd = ep->cm_ch->fd;
	if (epoll_ctl(ep->epfd, EPOLL_CTL_ADD, ep->cm_ch->fd, &ev))
		return weft_errno(errno);
	ev.data.fd = ep->comp_ch->fd;
	if (epoll_ctl(ep->epfd, EPOLL_CTL_ADD, ep->comp_ch->fd, &ev))
		return weft_errno(errno);
	/* Every posted receive and send may complete at once. */
	ep->cq_size = WEFT_MIN(d->dev.max_cqe, 32767u);
	ep->cq = ibv_create_cq(d->ctx, (int)ep->cq_size, ep, ep->comp_ch, 0);
	if (!ep->cq)
		return weft_errno(errno);
	ep->max_inline = d->dev.max_inline;
	ep->max_sge = WEFT_MIN(d->dev.max_sge, (uint32_t)UTIL_RDM_IOV_MAX + 1);
	return 0;
}

int verbs_rdm_ep_open(struct verbs_domain *domain, struct fi_info *info,
		      struct fid_ep **ep_fid, void *context)
{
	struct util_rdm_ep_attr attr = {
		.sweep_domain = true,
		.inject_max = WEFT_MIN(info->tx_attr && info->tx_attr->inject_size ?
					       info->tx_attr->inject_size :
					       256,
				       (size_t)VRDM_EAGER_MAX),
		.atomic_max = verbs_rdm_device_atomics() ? sizeof(uint64_t) :
							   VRDM_ATOMIC_MAX,
		.unexp_inline = 256,
		.unexp_max = 64u << 20,
		.peer_addr_len = domain->addr_format == FI_SOCKADDR_IN6 ?
					 sizeof(struct sockaddr_in6) :
					 sizeof(struct sockaddr_in),
	};
	struct verbs_rdm_ep *ep;
	int ret;

	ep = calloc(1, sizeof(*ep));
	if (!ep)
		return -FI_ENOMEM;
	ep->domain = domain;
	ep->epfd = -1;
	dlist_init(&ep->tx_free);
	dlist_init(&ep->held);
	dlist_init(&ep->conns);
	dlist_init(&ep->ops);
	dlist_init(&ep->chunks);
	ret = ep_queues(ep);
	if (ret)
		goto err;
	ret = ep_buffers(ep);
	if (ret)
		goto err;
	ret = ep_listen(ep, info);
	if (ret)
		goto err;
	ep->xp.ops = &verbs_rdm_transport;
	ep->xp.eager_max = VRDM_EAGER_MAX;
	/* Sends complete at their work completion: over InfiniBand and
	 * RoCE the peer's acknowledgement, which a dead peer never gives;
	 * over iWARP only that TCP took the message, but one way for all
	 * devices (siw completes out of order: see sq_give). */
	ep->xp.eager_late = true;
	attr.xport = &ep->xp;
	ep->amo_device = verbs_rdm_device_atomics();
	/* Same-host peers apply atomics through shared memory with the
	 * CPU, not atomically with the device's: with device atomics, all
	 * go through the device. */
	if (verbs_params.shm && !(ep->amo_device && (info->caps & FI_ATOMIC))) {
		ep->local = shm_local_new();
		if (!ep->local) {
			ret = -FI_ENOMEM;
			goto err;
		}
		attr.local = shm_local_xport(ep->local);
	}
	ret = util_rdm_ep_init(&ep->rdm, &domain->base.util, info, &attr,
			       context);
	if (ret)
		goto err;
	ep->rdm.ep_fid.fid.ops = &verbs_rdm_fi_ops;
	ep->rdm.ep_fid.cm = &verbs_rdm_cm_ops;
	/* Else the engine's: every atomic, up to atomic_max bytes. */
	if (ep->rdm.ep_fid.atomic && ep->amo_device) {
		ep->atomic_ops = *ep->rdm.ep_fid.atomic;
		ep->atomic_ops.writevalid = verbs_rdm_writevalid;
		ep->atomic_ops.readwritevalid = verbs_rdm_readwritevalid;
		ep->atomic_ops.compwritevalid = verbs_rdm_compwritevalid;
		ep->rdm.ep_fid.atomic = &ep->atomic_ops;
	}
	*ep_fid = &ep->rdm.ep_fid;
	return 0;
err:
	if (ep->local)
		shm_local_free(ep->local);
	ep_teardown(ep);
	free(ep);
	return ret;
}
