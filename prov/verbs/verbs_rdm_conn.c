/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * verbs FI_EP_RDM connections: a peer's QP made on demand through rdma_cm
 * (resolve, connect with our name in the private data, accept), the
 * receive buffers each QP brings, and a connection's end (its transmits
 * failed, its QP drained, then freed).  See verbs_rdm.c.
 */
#include "verbs_rdm.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- connections --------------------------------------------------------- */

static void conn_hash(struct vconn *conn)
{
	struct verbs_rdm_ep *ep = conn->ep;
	unsigned int b = conn->qpn % VRDM_HASH;

	conn->hash_next = ep->hash[b];
	ep->hash[b] = conn;
	conn->hashed = true;
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
		vrdm_rx_repost(ep, &c->bufs[i]);
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

/* Our side of the private data: who we are (our context too), where to
 * read for a fence, the peer's context we want. */
static void priv_fill(struct verbs_rdm_ep *ep, struct vrdm_cm_priv *pd,
		      uint32_t dst_ctx)
{
	struct verbs_fence f;

	vrdm_cm_priv_put(pd, &ep->addr, ep->addrlen,
			 verbs_domain_fence(ep->domain, &f), (uint16_t)ep->ctx,
			 (uint16_t)dst_ctx);
}

/* The peer's fence region, from its private data (if it is ours). */
static void priv_fence(struct vconn *conn, const void *priv, size_t len)
{
	struct vrdm_cm_priv pd;

	if (!vrdm_cm_priv_decode(priv, len, &pd))
		vrdm_cm_priv_fence(&pd, &conn->fence);
}

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
 * is freed by vrdm_conn_reap once nothing names it any more; a new transmit to
 * the peer makes a new connection.
 */
void vrdm_conn_lost(struct vconn *conn, int err)
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
			vrdm_fetch_finish(ep, op);
		} else {
			vrdm_op_release(ep, op);
		}
	}
	/* Rendezvous sends on it wait for a FIN that will not come. */
	dlist_foreach_safe(&ep->ops, e, tmp) {
		struct vop *op = container_of(e, struct vop, entry);
		struct util_rdm_tx *tx;

		if (op->kind != VOP_RNDV || op->conn != conn)
			continue;
		tx = util_rdm_tx_of(&ep->rdm, op->tx_id);
		vrdm_op_release(ep, op);
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

/* The connection can carry our transmits now. */
void vrdm_conn_open(struct vconn *conn)
{
	struct verbs_rdm_ep *ep = conn->ep;
	struct vpeer *vp = conn->peer;

	if (conn->state == VC_OPEN || conn->state == VC_CLOSED)
		return;
	if (conn->state < VC_ACCEPTED)
		ep->cm_busy--;
	conn->state = VC_OPEN;
	if (conn->outgoing)
		vrdm_ctrl_send(conn, VRDM_OP_HELLO, 0, 0, 0);
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

/*
 * Free the dead conns nothing names any more: drained (no work request
 * left), no message of theirs held by the engine or by us, no receive
 * waiting to give them a credit.  Their receive buffers stay in the SRQ
 * for the next QP.  Outside the rdma_cm event loop (it destroys ids).
 */
void vrdm_conn_reap(struct verbs_rdm_ep *ep)
{
	struct dlist_entry *e, *tmp;

	if (weft_likely(!ep->ndead) || ep->closing)
		return;
	if (ep->nrepost)
		vrdm_repost_flush(ep);
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

int vrdm_peer_connect(struct verbs_rdm_ep *ep, struct vpeer *vp)
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
		vrdm_conn_lost(conn, -ret);
		return ret;
	}
	return 0;
}

/*
 * Accept a connect request on id (its event's private data pd, the
 * peer's read depths) as pair ep: a peer of the sender's address and
 * context, a QP on our CQ and SRQ.  Returns true when id is to be
 * destroyed (refused).
 */
static bool conn_accept(struct verbs_rdm_ep *ep, struct rdma_cm_id *id,
			const struct vrdm_cm_priv *pd, uint8_t initiator_depth,
			uint8_t responder_resources)
{
	struct vrdm_cm_priv mine;
	struct sockaddr_storage sa;
	struct rdma_conn_param cp;
	struct util_peer *peer;
	struct vconn *conn;
	const char *why = "bad private data";
	int ret;

	if (ep->closing)
		goto reject;
	ret = vrdm_cm_priv_addr(pd, &sa);
	if (ret == -FI_EADDRNOTAVAIL)
		why = "not an address of our AV's format";
	if (ret)
		goto reject;
	vrdm_sa_stored(&sa, &sa);
	if (ep->rdm.base.av && ep->rdm.base.av->ops.normalize &&
	    ep->rdm.base.av->ops.normalize(ep->rdm.base.av, &sa, &sa))
		goto reject;
	why = "out of memory";
	if (util_peer_add(&ep->rdm.peers, &sa, pd->src_ctx, &peer))
		goto reject;
	conn = conn_new(ep, id, vpeer_of(peer), false);
	if (!conn)
		goto reject;
	vrdm_cm_priv_fence(pd, &conn->fence);
	if (conn_make_qp(conn))
		goto lost;
	priv_fill(ep, &mine, pd->src_ctx);
	conn_param_fill(ep, &cp, &mine, sizeof(mine));
	cp.responder_resources = WEFT_MIN(cp.responder_resources,
					  initiator_depth);
	cp.initiator_depth = WEFT_MIN(cp.initiator_depth, responder_resources);
	if (rdma_accept(id, &cp))
		goto lost;
	conn->state = VC_ACCEPTED;
	return false;
lost:
	/* The conn keeps the id until the endpoint closes. */
	rdma_reject(id, NULL, 0);
	conn->state = VC_ACCEPTED;
	vrdm_conn_lost(conn, FI_ECONNABORTED);
	return false;
reject:
	FI_INFO(&verbs_prov, FI_LOG_EP_CTRL,
		"connection request refused: %s (family %d, %u bytes)\n", why,
		pd->addr[0] | pd->addr[1] << 8, pd->addr_len);
	rdma_reject(id, NULL, 0);
	id->context = NULL;
	return true;
}

/*
 * A scalable endpoint's pair 0 took a request for pair dst: into dst's
 * inbox, and its bell rung.  The id stays on our event channel, where
 * nothing more is looked at for it (its context NULL), until dst takes
 * it onto its own (inbox_adopt).  Under pair 0's lock.  Returns true
 * when the id is to be destroyed (refused: no memory).
 */
static bool conn_handoff(struct verbs_rdm_ep *ep, struct rdma_cm_event *ev,
			 const struct vrdm_cm_priv *pd)
{
	struct vreq *r = calloc(1, sizeof(*r));

	if (!r) {
		rdma_reject(ev->id, NULL, 0);
		ev->id->context = NULL;
		return true;
	}
	r->id = ev->id;
	r->pd = *pd;
	r->initiator_depth = ev->param.conn.initiator_depth;
	r->responder_resources = ev->param.conn.responder_resources;
	ev->id->context = NULL;
	util_rdm_inbox_post(&ep->sep->base, pd->dst_ctx, &r->entry);
	return false;
}

/* A peer connects to us.  Returns true when the request's id is to be
 * destroyed (refused) once the event is acknowledged. */
static bool conn_request(struct verbs_rdm_ep *ep, struct rdma_cm_event *ev)
{
	struct vrdm_cm_priv pd;
	const char *why = "bad private data";

	memset(&pd, 0, sizeof(pd));
	if (ep->closing ||
	    vrdm_cm_priv_decode(ev->param.conn.private_data,
				ev->param.conn.private_data_len, &pd))
		goto reject;
	if (pd.dst_ctx != ep->ctx) {
		/* Another context of our scalable endpoint's (we are its
		 * pair 0, the one that listens), or none of ours. */
		why = "no such context";
		if (!ep->sep || ep->ctx || pd.dst_ctx >= ep->sep->base.npair)
			goto reject;
		return conn_handoff(ep, ev, &pd);
	}
	return conn_accept(ep, ev->id, &pd, ev->param.conn.initiator_depth,
			   ev->param.conn.responder_resources);
reject:
	FI_INFO(&verbs_prov, FI_LOG_EP_CTRL,
		"connection request refused: %s (context %u)\n", why,
		pd.dst_ctx);
	rdma_reject(ev->id, NULL, 0);
	ev->id->context = NULL;
	return true;
}

/* Take the requests pair 0 handed us onto our event channel, and accept
 * them; how many. */
static int inbox_adopt(struct verbs_rdm_ep *ep)
{
	struct util_rdm_sep *sep = &ep->sep->base;
	struct dlist_entry *e;
	int n = 0;

	util_rdm_inbox_hush(sep, ep->ctx);
	while ((e = util_rdm_inbox_take(sep, ep->ctx))) {
		struct vreq *r;

		r = container_of(e, struct vreq, entry);
		n++;
		/* Its events come to us from now on. */
		if (rdma_migrate_id(r->id, ep->cm_ch)) {
			FI_INFO(&verbs_prov, FI_LOG_EP_CTRL,
				"connection request for context %u: "
				"rdma_migrate_id: %s\n", ep->ctx,
				strerror(errno));
			rdma_reject(r->id, NULL, 0);
			rdma_destroy_id(r->id);
		} else if (conn_accept(ep, r->id, &r->pd, r->initiator_depth,
				       r->responder_resources)) {
			rdma_destroy_id(r->id);
		}
		free(r);
	}
	return n;
}

void vrdm_inbox_drain(struct verbs_sep *sep)
{
	struct dlist_entry *e;
	uint32_t i;

	for (i = 0; i < sep->base.npair; i++) {
		while ((e = util_rdm_inbox_take(&sep->base, i))) {
			struct vreq *r = container_of(e, struct vreq, entry);

			rdma_reject(r->id, NULL, 0);
			rdma_destroy_id(r->id);
			free(r);
		}
	}
}

/*
 * Receives directed to a peer this pair has no connection with (a pair
 * hears only from the peers that chose its context) would not learn that
 * it died: connect to it, and a refusal fails it (vrdm_conn_lost), and
 * the receives with it.  Peers reached through shared memory are watched
 * there.
 */
static void probe_directed(struct verbs_rdm_ep *ep)
{
	struct dlist_entry *e;

	dlist_foreach(&ep->rdm.peers.list, e) {
		struct util_peer *peer =
			container_of(e, struct util_peer, entry);
		struct vpeer *vp = vpeer_of(peer);

		if (vp->conn || peer->gone || peer->xp != &ep->xp ||
		    peer->fi_addr == FI_ADDR_NOTAVAIL ||
		    peer->state == UTIL_PEER_FAILED)
			continue;
		(void)vrdm_peer_connect(ep, vp);
	}
}

int vrdm_pair_progress(struct verbs_rdm_ep *ep, bool listener)
{
	struct verbs_rdm_ep *p0 = ep->pair0;
	int n = 0;

	if (util_rdm_inbox_ready(&ep->sep->base, ep->ctx))
		n += inbox_adopt(ep);
	if (listener && p0 && weft_trylock(util_rdm_lock(&p0->rdm))) {
		if (p0->rdm.base.enabled && !p0->closing)
			n += vrdm_cm_progress(p0);
		weft_unlock(util_rdm_lock(&p0->rdm));
	}
	if (listener && util_rdm_rx_directed(&ep->rdm))
		probe_directed(ep);
	return n;
}

static void route_resolved(struct vconn *conn)
{
	struct verbs_rdm_ep *ep = conn->ep;
	struct vrdm_cm_priv pd;
	struct rdma_conn_param cp;
	int ret;

	ret = conn_make_qp(conn);
	if (ret) {
		vrdm_conn_lost(conn, -ret);
		return;
	}
	priv_fill(ep, &pd, conn->peer ? conn->peer->peer.ctx : 0);
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
			vrdm_conn_lost(conn, -ret);
			vrdm_peer_connect(ep, vp); /* its failure fails the peer */
			return;
		}
		vrdm_conn_lost(conn, -ret);
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
	vrdm_conn_lost(conn, FI_EHOSTUNREACH); /* not the peer's: vp->conn */
	vrdm_peer_connect(ep, vp);		  /* its failure fails the peer */
	return true;
}

int vrdm_cm_progress(struct verbs_rdm_ep *ep)
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
				vrdm_conn_lost(conn, -weft_errno(errno));
			break;
		case RDMA_CM_EVENT_ROUTE_RESOLVED:
			route_resolved(conn);
			break;
		case RDMA_CM_EVENT_ESTABLISHED:
			/* The accepting side waits for the first message. */
			if (conn->outgoing) {
				priv_fence(conn, ev->param.conn.private_data,
					   ev->param.conn.private_data_len);
				vrdm_conn_open(conn);
			}
			break;
		case RDMA_CM_EVENT_REJECTED:
			vrdm_conn_lost(conn, FI_ECONNREFUSED);
			break;
		case RDMA_CM_EVENT_UNREACHABLE:
			if (conn_retry(conn))
				break;
			/* fall through */
		case RDMA_CM_EVENT_ADDR_ERROR:
		case RDMA_CM_EVENT_ROUTE_ERROR:
			vrdm_conn_lost(conn, FI_EHOSTUNREACH);
			break;
		case RDMA_CM_EVENT_CONNECT_ERROR:
		case RDMA_CM_EVENT_DEVICE_REMOVAL:
			vrdm_conn_lost(conn, FI_ECONNABORTED);
			break;
		case RDMA_CM_EVENT_DISCONNECTED:
			vrdm_conn_lost(conn, FI_ECONNRESET);
			break;
		default:
			break;
		}
		rdma_ack_cm_event(ev);
	}
	return n;
}
