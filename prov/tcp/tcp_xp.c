/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * tcp's transport for the engine, its data path (tcp_ep.c has the
 * connections and the endpoints): transmits (eager, rendezvous, RMA and
 * atomics), fetches and acknowledgements, frames arriving from a
 * connection's receive state machine (tcp_conn.c), and the transport's
 * ops table.
 */
#include "tcp.h"

#include <poll.h>
#include <stdlib.h>
#include <string.h>

#include "weft/util_atomic.h"
#include "weft/util_iov.h"
#include "tcp_ep_priv.h"

/* ---- the transport ------------------------------------------------------ */

/* A message's frame flags: the engine's flags, and the collectives'
 * class (an untagged frame with TCP_F_COLL). */
static uint16_t frame_flags(uint32_t op, uint32_t rdm_flags)
{
	return (uint16_t)(((rdm_flags & UTIL_RDM_CQ_DATA) ? TCP_F_CQ_DATA : 0) |
			  ((rdm_flags & UTIL_RDM_ACK_REQ) ? TCP_F_ACK_REQ : 0) |
			  (op == UTIL_RDM_COLL ? TCP_F_COLL : 0));
}

static int tcp_send_eager(struct util_rdm_xport *xp, struct util_peer *peer,
			  const struct util_rdm_hdr *hdr,
			  const struct iovec *iov, void **desc,
			  size_t iov_count)
{
	struct util_rdm_ep *rdm = xp->ep;
	struct tcp_ep *ep = tcp_ep_of(rdm);
	uint8_t buf[TCP_MSG_HDR_LEN];
	struct tcp_conn *conn;
	int ret;

	(void)desc;
	ret = peer_conn(ep, peer, &conn);
	if (weft_unlikely(ret))
		return ret;
	tcp_put_msg(buf, hdr->op == UTIL_RDM_TAGGED ? TCP_OP_TAGGED : TCP_OP_MSG,
		    frame_flags(hdr->op, hdr->flags), hdr->tag, hdr->data, hdr->tx_id,
		    hdr->len);
	return tcp_conn_write_copy(conn, buf, sizeof(buf), iov, iov_count,
				   hdr->len);
}

/* A large message streams from the user's buffer; done when written (or
 * when the receiver acknowledges it, for FI_DELIVERY_COMPLETE). */
static int tcp_send_rndv(struct util_rdm_xport *xp, struct util_rdm_tx *tx)
{
	struct util_rdm_ep *rdm = xp->ep;
	struct tcp_ep *ep = tcp_ep_of(rdm);
	struct tcp_conn *conn;
	struct tcp_out *out;
	uint32_t fl = tx->hdr.flags;
	int ret;

	ret = peer_conn(ep, tx->peer, &conn);
	if (ret)
		return ret;
	out = tcp_out_new(0);
	if (!out)
		return -FI_ENOMEM;
	if (tx->flags & UTIL_RDM_DELIVERED)
		fl |= UTIL_RDM_ACK_REQ;
	out->iov[0].iov_base = out->hdr;
	out->iov[0].iov_len = tcp_put_msg(out->hdr,
					  tx->hdr.op == UTIL_RDM_TAGGED ?
						  TCP_OP_TAGGED :
						  TCP_OP_MSG,
					  frame_flags(tx->hdr.op, fl),
					  tx->hdr.tag,
					  tx->hdr.data, tx->hdr.tx_id,
					  tx->hdr.len);
	memcpy(out->iov + 1, tx->iov, tx->iov_count * sizeof(*tx->iov));
	out->iov_count = tx->iov_count + 1;
	out->tx = (fl & UTIL_RDM_ACK_REQ) ? NULL : tx;
	tcp_conn_queue(conn, out);
	tcp_conn_flush(conn);
	return 0;
}

static int tcp_rma(struct util_rdm_xport *xp, struct util_rdm_tx *tx)
{
	struct util_rdm_ep *rdm = xp->ep;
	struct tcp_ep *ep = tcp_ep_of(rdm);
	uint16_t fl = (tx->hdr.flags & UTIL_RDM_CQ_DATA) ? TCP_F_CQ_DATA : 0;
	uint16_t commit = (tx->flags & FI_COMMIT_COMPLETE) &&
				  tx->kind != UTIL_RDM_TX_READ ?
			  TCP_F_COMMIT :
			  0;
	size_t elem, count, n, pay;
	struct tcp_conn *conn;
	struct tcp_out *out;
	uint8_t kind;
	int ret;

	if (tx->kind >= UTIL_RDM_TX_ATOMIC && tx->rma_count != 1)
		return -FI_EOPNOTSUPP;
	ret = peer_conn(ep, tx->peer, &conn);
	if (ret)
		return ret;
	switch (tx->kind) {
	case UTIL_RDM_TX_WRITE:
	case UTIL_RDM_TX_READ:
		out = tcp_out_new(0);
		if (!out)
			return -FI_ENOMEM;
		pay = tx->kind == UTIL_RDM_TX_WRITE ? tx->hdr.len : 0;
		out->iov[0].iov_base = out->hdr;
		out->iov[0].iov_len = tcp_put_rma(
			out->hdr,
			tx->kind == UTIL_RDM_TX_WRITE ? TCP_OP_WRITE :
							TCP_OP_READ_REQ,
			fl | commit, tx->hdr.tx_id, tx->hdr.data, tx->rma_iov,
			tx->rma_count, pay);
		out->iov_count = 1;
		if (pay) {
			memcpy(out->iov + 1, tx->iov,
			       tx->iov_count * sizeof(*tx->iov));
			out->iov_count += tx->iov_count;
		}
		break;
	default:
		elem = util_atomic_dt_size(tx->datatype);
		count = elem ? tx->hdr.len / elem : 0;
		kind = tx->kind == UTIL_RDM_TX_ATOMIC	    ? TCP_ATOMIC_WRITE :
		       tx->kind == UTIL_RDM_TX_FETCH_ATOMIC ? TCP_ATOMIC_FETCH :
							      TCP_ATOMIC_COMPARE;
		pay = tx->hdr.len * (kind == TCP_ATOMIC_COMPARE ? 2 : 1);
		/* FI_ATOMIC_READ has no operand: send zeros in its place. */
		out = tcp_out_new(tx->iov_count ? 0 : tx->hdr.len);
		if (!out)
			return -FI_ENOMEM;
		out->iov[0].iov_base = out->hdr;
		/* Atomics carry no remote CQ data (docs/tcp-protocol.md). */
		out->iov[0].iov_len = tcp_put_atomic(
			out->hdr, commit, tx->hdr.tx_id, tx->rma_iov[0].addr,
			tx->rma_iov[0].key, kind, (uint8_t)tx->atomic_op,
			(uint8_t)tx->datatype, (uint32_t)count, pay);
		n = 1;
		if (tx->iov_count) {
			memcpy(out->iov + n, tx->iov,
			       tx->iov_count * sizeof(*tx->iov));
			n += tx->iov_count;
		} else {
			memset(out->copy, 0, tx->hdr.len);
			out->iov[n].iov_base = out->copy;
			out->iov[n++].iov_len = tx->hdr.len;
		}
		if (kind == TCP_ATOMIC_COMPARE) {
			memcpy(out->iov + n, tx->cmp_iov,
			       tx->cmp_count * sizeof(*tx->cmp_iov));
			n += tx->cmp_count;
		}
		out->iov_count = n;
		break;
	}
	tcp_conn_queue(conn, out);
	tcp_conn_flush(conn);
	return 0;
}

static inline struct tcp_stash *stash_of(const void *stash)
{
	struct tcp_stash *st;

	memcpy(&st, stash, sizeof(st));
	return st;
}

static void stash_free(struct tcp_stash *st)
{
	free(st->data);
	free(st);
}

static void large_done(struct tcp_conn *conn);

static int tcp_fetch(struct util_rdm_xport *xp, const void *stash,
		     const struct iovec *iov, void **desc, size_t iov_count,
		     size_t len, void *cookie)
{
	struct util_rdm_ep *rdm = xp->ep;
	struct tcp_stash *st = stash_of(stash);
	int err;

	(void)rdm;
	(void)desc;
	if (!st->conn) {
		/* Read already (it was unexpected), or cut short. */
		err = st->error;
		if (!err)
			util_iov_copy_to(iov, iov_count, 0, st->data, len);
		stash_free(st);
		return -err;
	}
	/* Still arriving: the rest goes straight to the receive buffer. */
	st->fetched = true;
	st->cookie = cookie;
	st->want = len;
	st->iov_count = util_iov_slice(iov, iov_count, 0, len, st->iov);
	if (st->waiting) {
		/* It waited in the socket: read it now (at the next
		 * progress), straight into the buffer. */
		st->waiting = false;
		tcp_rx_into(st->conn, st->iov, st->iov_count, st->want, st->len,
			    large_done);
	}
	return -FI_EINPROGRESS;
}

static void tcp_discard(struct util_rdm_xport *xp, const void *stash)
{
	struct util_rdm_ep *rdm = xp->ep;
	struct tcp_stash *st = stash_of(stash);

	(void)rdm;
	if (!st->conn) {
		stash_free(st);
		return;
	}
	st->discarded = true;
	if (st->waiting) {
		st->waiting = false;
		tcp_rx_into(st->conn, NULL, 0, 0, st->len, large_done);
	}
}

/*
 * Acknowledge a message of the peer `reply` names (a struct tcp_peer, so
 * that a message kept unexpected names no connection, which may close and
 * be freed before a receive takes it): on the connection we send on, or
 * else any open one from that peer.
 */
static int tcp_ack(struct util_rdm_xport *xp, void *reply, uint64_t tx_id,
		   int err)
{
	struct util_rdm_ep *rdm = xp->ep;
	struct tcp_peer *tp = reply;
	struct tcp_conn *conn = tp->conn;
	struct dlist_entry *e;

	if (!conn || conn->state != TCP_CONN_OPEN) {
		conn = NULL;
		dlist_foreach(&tcp_ep_of(rdm)->conns, e) {
			struct tcp_conn *c =
				container_of(e, struct tcp_conn, entry);

			if (c->peer == tp && c->state == TCP_CONN_OPEN) {
				conn = c;
				break;
			}
		}
		if (!conn)
			return -FI_ENOTCONN;
	}
	return send_resp(conn, TCP_OP_ACK, tx_id, (uint32_t)err, NULL, 0);
}

static int tcp_wait_fd(struct util_rdm_xport *xp)
{
	struct util_rdm_ep *rdm = xp->ep;
	return tcp_ep_of(rdm)->epfd;
}

/* ---- arrivals ----------------------------------------------------------- */

static void msg_fill(struct tcp_conn *conn, struct util_rdm_msg *msg)
{
	struct tcp_ep *ep = conn->ep;
	const struct tcp_frame *f = &conn->frame;
	struct tcp_peer *tp = conn_tpeer(conn);

	memset(msg, 0, sizeof(*msg));
	msg->op = f->op == TCP_OP_TAGGED ?
			  UTIL_RDM_TAGGED :
			  UTIL_RDM_MSG | ((f->flags & TCP_F_COLL) ? 2 : 0);
	msg->flags = ((f->flags & TCP_F_CQ_DATA) ? UTIL_RDM_CQ_DATA : 0) |
		     ((f->flags & TCP_F_ACK_REQ) ? UTIL_RDM_ACK_REQ : 0);
	msg->tag = f->msg.tag;
	msg->data = f->msg.data;
	msg->len = f->payload_len;
	msg->tx_id = f->msg.tx_id;
	msg->reply = tp;
	msg->src = FI_ADDR_NOTAVAIL;
	/* MSG too: its one peer, if an AV bound to it holds the address. */
	if (tp && (ep->rdm.base.caps & (FI_SOURCE | FI_DIRECTED_RECV))) {
		msg->src = util_peer_src(&ep->rdm.peers, &tp->peer);
		if (ep->type == FI_EP_RDM) {
			msg->src_raw = tp->peer.addr;
			msg->src_raw_len = tcp_sockaddr_len(tp->peer.addr);
		}
	}
}

/* A large message's payload is all read. */
static void large_done(struct tcp_conn *conn)
{
	struct tcp_stash *st = conn->rx_stash;
	struct tcp_ep *ep = conn->ep;

	conn->rx_stash = NULL;
	st->conn = NULL;
	if (st->discarded) {
		stash_free(st);
	} else if (st->fetched) {
		if (st->data)
			util_iov_copy_to(st->iov, st->iov_count, 0, st->data,
					 st->want);
		if (st->flags & TCP_F_ACK_REQ)
			tcp_ack(&ep->xp, conn_tpeer(conn), st->tx_id,
				st->error);
		util_rdm_fetch_done(&ep->rdm, st->cookie, st->error);
		stash_free(st);
	}
	/* else: unexpected, kept until a receive takes it */
}

void tcp_rx_abort(struct tcp_conn *conn, int err)
{
	struct tcp_stash *st = conn->rx_stash;

	if (!st)
		return;
	conn->rx_stash = NULL;
	st->conn = NULL;
	st->error = err;
	if (st->discarded) {
		stash_free(st);
	} else if (st->fetched) {
		util_rdm_fetch_done(&conn->ep->rdm, st->cookie, err);
		stash_free(st);
	}
}

static int msg_large(struct tcp_conn *conn)
{
	struct util_rdm_msg msg;
	struct tcp_stash *st;
	struct iovec v;
	int ret;

	st = calloc(1, sizeof(*st));
	if (!st)
		return -FI_EAGAIN;
	st->conn = conn;
	st->len = conn->frame.payload_len;
	st->tx_id = conn->frame.msg.tx_id;
	st->flags = conn->frame.flags;
	msg_fill(conn, &msg);
	msg.stash = &st;
	msg.stash_len = sizeof(st);
	/* Kept in memory if it waits unexpected, unless it alone is larger
	 * than the bound: then it waits in the socket. */
	msg.stash_hold = st->len <= tcp_params.unexp_max ? st->len : 0;
	conn->rx_stash = st;
	ret = util_rdm_msg_arrived(&conn->ep->xp, &msg);
	if (ret == -FI_EAGAIN) {
		conn->rx_stash = NULL;
		free(st);
		return ret;
	}
	if (st->fetched) {
		tcp_rx_into(conn, st->iov, st->iov_count, st->want, st->len,
			    large_done);
	} else if (st->discarded || ret) {
		st->discarded = true;
		tcp_rx_into(conn, NULL, 0, 0, st->len, large_done);
	} else if (!msg.stash_hold) {
		/* Unexpected, and larger than all unexpected messages may
		 * hold: it stays in the socket (and the sender's later
		 * messages behind it) until a receive takes it. */
		st->waiting = true;
		conn->rx_state = TCP_RX_WAIT;
	} else {
		/* Unexpected: read it out of the socket now, so the sender's
		 * later messages are not held up behind it. */
		st->data = malloc(st->len);
		if (!st->data) {
			/* Nowhere to keep it: the payload is dropped and the
			 * receive that takes it fails.  The engine holds the
			 * stash: it is freed when taken or discarded. */
			st->error = FI_ENOMEM;
			tcp_rx_into(conn, NULL, 0, 0, st->len, large_done);
			return 0;
		}
		v.iov_base = st->data;
		v.iov_len = st->len;
		tcp_rx_into(conn, &v, 1, st->len, st->len, large_done);
	}
	return 0;
}

/* RESP to a READ or fetching atomic: its payload is in place. */
static void resp_done(struct tcp_conn *conn)
{
	struct util_rdm_tx *tx = conn->rx_tx;

	conn->rx_tx = NULL;
	if (tx)
		util_rdm_tx_done(&conn->ep->rdm, tx, (int)conn->rx_status);
}

static void drop_done(struct tcp_conn *conn)
{
	(void)conn;
}

/* The request an answer names, if it is ours, live, and went to this
 * peer: a late, duplicated or forged answer finds nothing. */
static struct util_rdm_tx *answered_tx(struct tcp_conn *conn, uint64_t id)
{
	struct util_rdm_tx *tx = util_rdm_tx_of(&conn->ep->rdm, id);
	struct tcp_peer *tp = conn_tpeer(conn);

	if (!tx || !tp || tx->peer != &tp->peer) {
		FI_INFO(&tcp_prov, FI_LOG_EP_DATA,
			"an answer for no request of ours (id %#llx): "
			"ignored\n",
			(unsigned long long)id);
		return NULL;
	}
	return tx;
}

static struct util_mr_map *ep_mr_map(struct tcp_ep *ep)
{
	return &ep_domain(ep)->base.mr_map;
}

/* A remote operation on our memory succeeded: the counters bound to the
 * registrations it named count it (fi_mr_bind). */
static void count_target(struct tcp_ep *ep, const struct fi_rma_iov *rma,
			 size_t n, uint32_t kind, enum fi_op op)
{
	struct util_mr_map *map = ep_mr_map(ep);

	if (util_mr_map_counting(map))
		util_mr_map_count(map, rma, n, util_rdm_mr_events(kind, op));
}

/* WRITE: the data is in the target's memory (or was dropped). */
static void write_done(struct tcp_conn *conn)
{
	struct tcp_ep *ep = conn->ep;
	const struct tcp_frame *f = &conn->frame;

	if (!conn->rx_status) {
		/* FI_COMMIT_COMPLETE: durable before the initiator hears. */
		if (f->flags & TCP_F_COMMIT)
			util_mr_map_commit(ep_mr_map(ep), f->rma.iov,
					   f->rma.iov_count);
		count_target(ep, f->rma.iov, f->rma.iov_count,
			     UTIL_RDM_TX_WRITE, WEFT_ATOMIC_OP_COUNT);
		util_rdm_remote_event(&ep->rdm,
				      FI_REMOTE_WRITE |
					      ((f->flags & TCP_F_CQ_DATA) ?
						       FI_REMOTE_CQ_DATA :
						       0),
				      f->rma.len, f->rma.data);
	}
	send_resp(conn, TCP_OP_RESP, f->rma.tx_id, conn->rx_status, NULL, 0);
}

static int rma_target(struct tcp_conn *conn, uint64_t access,
		      struct iovec *local, size_t *n)
{
	const struct tcp_frame *f = &conn->frame;

	if (conn->ep->type == FI_EP_RDM && !(conn->ep->rdm.base.caps & FI_RMA))
		return -FI_EOPNOTSUPP;
	return util_rdm_target_iov(ep_mr_map(conn->ep), f->rma.iov,
				   f->rma.iov_count, access, local,
				   UTIL_RDM_IOV_MAX * 2, n);
}

void tcp_rx_recheck(struct tcp_conn *conn)
{
	struct iovec local[UTIL_RDM_IOV_MAX * 2];
	size_t n = 0;
	int ret;

	conn->rx_map_gen = util_mr_map_gen(conn->rx_map);
	ret = rma_target(conn, FI_REMOTE_WRITE, local, &n);
	if (!ret)
		return;
	/* A registration it lands in was closed: nothing more of it is
	 * written, and the initiator hears why. */
	conn->rx_status = (uint32_t)-ret;
	conn->rx_drop = conn->rx_left;
	conn->rx_map = NULL;
}

static int read_req_in(struct tcp_conn *conn)
{
	const struct tcp_frame *f = &conn->frame;
	struct iovec local[UTIL_RDM_IOV_MAX * 2];
	struct tcp_out *out;
	size_t n = 0;
	int ret;

	ret = rma_target(conn, FI_REMOTE_READ, local, &n);
	if (ret)
		return send_resp(conn, TCP_OP_RESP, f->rma.tx_id, (uint32_t)-ret,
				 NULL, 0);
	/* The data goes out of the registered memory, no copy. */
	out = tcp_out_new(0);
	if (!out)
		return -FI_ENOMEM;
	out->iov[0].iov_base = out->hdr;
	out->iov[0].iov_len =
		tcp_put_resp(out->hdr, TCP_OP_RESP, f->rma.tx_id, 0, f->rma.len);
	memcpy(out->iov + 1, local, n * sizeof(*local));
	out->iov_count = n + 1;
	tcp_conn_queue(conn, out);
	tcp_conn_flush(conn);
	if (conn->state == TCP_CONN_OPEN) {
		count_target(conn->ep, f->rma.iov, f->rma.iov_count,
			     UTIL_RDM_TX_READ, WEFT_ATOMIC_OP_COUNT);
		util_rdm_remote_event(&conn->ep->rdm, FI_REMOTE_READ, f->rma.len,
				      0);
	}
	return 0;
}

static int atomic_in(struct tcp_conn *conn, const uint8_t *payload)
{
	const struct tcp_frame *f = &conn->frame;
	size_t len = (size_t)f->atomic.count * f->atomic.dt_size;
	struct fi_rma_iov r = { f->atomic.addr, len, f->atomic.key };
	struct iovec local[UTIL_RDM_IOV_MAX * 2];
	uint8_t *res = NULL;
	uint64_t access = FI_REMOTE_WRITE;
	size_t n = 0;
	int ret;

	if (f->atomic.kind != TCP_ATOMIC_WRITE) {
		access |= FI_REMOTE_READ;
		res = malloc(len);
		if (!res)
			return send_resp(conn, TCP_OP_RESP, f->atomic.tx_id,
					 FI_ENOMEM, NULL, 0);
	}
	ret = util_rdm_target_iov(ep_mr_map(conn->ep), &r, 1, access, local,
				  UTIL_RDM_IOV_MAX * 2, &n);
	if (!ret) {
		/* Peers of this host may apply atomics to the same memory
		 * themselves (shm's registration table): take their lock. */
		ret = util_mr_map_atomic_lock(ep_mr_map(conn->ep));
	}
	if (!ret) {
		ret = util_rdm_target_atomic(
			f->atomic.op, f->atomic.datatype, local, n, payload,
			f->atomic.kind == TCP_ATOMIC_COMPARE ? payload + len :
							       NULL,
			res);
		util_mr_map_atomic_unlock(ep_mr_map(conn->ep));
	}
	if (!ret && (f->flags & TCP_F_COMMIT))
		util_mr_map_commit(ep_mr_map(conn->ep), &r, 1);
	if (!ret) {
		count_target(conn->ep, &r, 1,
			     f->atomic.kind == TCP_ATOMIC_WRITE ?
				     UTIL_RDM_TX_ATOMIC :
			     f->atomic.kind == TCP_ATOMIC_FETCH ?
				     UTIL_RDM_TX_FETCH_ATOMIC :
				     UTIL_RDM_TX_COMPARE_ATOMIC,
			     f->atomic.op);
		util_rdm_remote_event(&conn->ep->rdm, FI_REMOTE_WRITE, len, 0);
	}
	ret = send_resp(conn, TCP_OP_RESP, f->atomic.tx_id, (uint32_t)-ret,
			res, ret || !res ? 0 : len);
	free(res);
	return ret;
}

static void resp_in(struct tcp_conn *conn)
{
	const struct tcp_frame *f = &conn->frame;
	struct util_rdm_tx *tx = answered_tx(conn, f->resp.tx_id);
	size_t want = 0;

	conn->rx_tx = NULL;
	conn->rx_status = f->resp.status;
	if (!tx || tx->kind == UTIL_RDM_TX_SEND) {
		tcp_rx_into(conn, NULL, 0, 0, f->payload_len, drop_done);
		return;
	}
	if (!f->resp.status && (tx->kind == UTIL_RDM_TX_READ ||
				tx->kind == UTIL_RDM_TX_FETCH_ATOMIC ||
				tx->kind == UTIL_RDM_TX_COMPARE_ATOMIC))
		want = tx->hdr.len;
	if (f->payload_len != want && !f->resp.status) {
		tcp_proto_error(conn, "answer of the wrong length");
		return;
	}
	conn->rx_tx = tx;
	if (tx->kind == UTIL_RDM_TX_READ)
		tcp_rx_into(conn, tx->iov, tx->iov_count, want, f->payload_len,
			    resp_done);
	else
		tcp_rx_into(conn, tx->res_iov, tx->res_count, want,
			    f->payload_len, resp_done);
}

/*
 * A frame header was parsed: set up for its payload.  Returns 0, or -1
 * when the connection closed.
 */
int tcp_frame_start(struct tcp_conn *conn)
{
	const struct tcp_frame *f = &conn->frame;
	struct iovec local[UTIL_RDM_IOV_MAX * 2];
	struct util_rdm_tx *tx;
	size_t n = 0;
	int ret;

	conn->stage_need = 0;
	switch (f->op) {
	case TCP_OP_HELLO:
	case TCP_OP_HELLO_ACK:
		conn->stage_need = f->payload_len;
		break;
	case TCP_OP_MSG:
	case TCP_OP_TAGGED:
		if (f->payload_len <= tcp_params.rx_stage)
			conn->stage_need = f->payload_len;
		break;
	case TCP_OP_ATOMIC:
		if (f->payload_len > tcp_params.rx_stage) {
			tcp_proto_error(conn, "atomic operands too long");
			return -1;
		}
		conn->stage_need = f->payload_len;
		break;
	case TCP_OP_ACK:
		tx = answered_tx(conn, f->resp.tx_id);
		if (tx && tx->kind == UTIL_RDM_TX_SEND)
			util_rdm_tx_done(&conn->ep->rdm, tx, (int)f->resp.status);
		return conn->state == TCP_CONN_CLOSED ? -1 : 0;
	case TCP_OP_READ_REQ:
		ret = read_req_in(conn);
		return ret || conn->state == TCP_CONN_CLOSED ? -1 : 0;
	case TCP_OP_WRITE:
		ret = rma_target(conn, FI_REMOTE_WRITE, local, &n);
		conn->rx_status = (uint32_t)-ret;
		tcp_rx_into(conn, local, n, ret ? 0 : f->payload_len,
			    f->payload_len, write_done);
		if (!ret) {
			conn->rx_map = ep_mr_map(conn->ep);
			conn->rx_map_gen = util_mr_map_gen(conn->rx_map);
		}
		return 0;
	case TCP_OP_RESP:
		resp_in(conn);
		return conn->state == TCP_CONN_CLOSED ? -1 : 0;
	default:
		tcp_proto_error(conn, "unexpected frame");
		return -1;
	}
	conn->rx_state = TCP_RX_STAGE;
	return 0;
}

/*
 * The frame's first stage_need payload bytes are staged at rbuf + rstart:
 * handle it.  Returns 0 (done: the handler consumed what it took and set
 * the next state), -FI_EAGAIN (the engine cannot take it now: offer it
 * again later), or -1 (the connection closed).
 */
int tcp_frame_staged(struct tcp_conn *conn)
{
	const struct tcp_frame *f = &conn->frame;
	const uint8_t *p = (const uint8_t *)conn->rbuf + conn->rstart;
	struct util_rdm_msg msg;
	int ret;

	switch (f->op) {
	case TCP_OP_HELLO:
		conn->rstart += f->payload_len;
		conn->rx_state = TCP_RX_HDR;
		ret = tcp_conn_hello_in(conn, p);
		return ret ? -1 : 0;
	case TCP_OP_HELLO_ACK:
		conn->rstart += f->payload_len;
		conn->rx_state = TCP_RX_HDR;
		tcp_conn_hello_ack_in(conn, f->hello_ack.status, p,
				      f->payload_len);
		return conn->state == TCP_CONN_CLOSED ? -1 : 0;
	case TCP_OP_ATOMIC:
		ret = atomic_in(conn, p);
		conn->rstart += f->payload_len;
		conn->rx_state = TCP_RX_HDR;
		return ret || conn->state == TCP_CONN_CLOSED ? -1 : 0;
	default: /* MSG, TAGGED */
		if (conn->stage_need < f->payload_len ||
		    (f->payload_len == 0 && f->payload_len > tcp_params.rx_stage))
			return msg_large(conn);
		msg_fill(conn, &msg);
		msg.payload = p;
		ret = util_rdm_msg_arrived(&conn->ep->xp, &msg);
		if (ret == -FI_EAGAIN)
			return ret;
		conn->rstart += f->payload_len;
		conn->rx_state = TCP_RX_HDR;
		return conn->state == TCP_CONN_CLOSED ? -1 : 0;
	}
}

/* ---- the transport's ops ------------------------------------------------ */

static int tcp_progress(struct util_rdm_xport *xp)
{
	struct util_rdm_ep *rdm = xp->ep;
	return tcp_progress_ep(tcp_ep_of(rdm));
}

static int tcp_peer_init(struct util_rdm_xport *xp, struct util_peer *peer)
{
	struct util_rdm_ep *rdm = xp->ep;
	(void)rdm;
	tcp_peer_of(peer)->conn = NULL;
	return 0;
}

/*
 * Whether everything a failed peer sent has reached the engine.  Each side
 * of a pair sends on the connection it made itself (or on the other's,
 * when that came first), so one of its connections ending says nothing of
 * the other: a peer that sent on its own connection and then closed its
 * endpoint may have its messages waiting in that connection, not even
 * accepted yet, after ours to it ended.  Not drained while a connection
 * of that peer is open, while an accepted one has not said whose it is
 * (HELLO not read), or while one waits to be accepted.
 */
static bool tcp_peer_drained(struct util_rdm_xport *xp, struct util_peer *peer)
{
	struct tcp_ep *ep = tcp_ep_of(xp->ep);
	struct tcp_peer *tp = tcp_peer_of(peer);
	struct pollfd pfd = { .fd = ep->lfd, .events = POLLIN };
	struct dlist_entry *e;

	dlist_foreach(&ep->conns, e) {
		struct tcp_conn *conn = container_of(e, struct tcp_conn, entry);

		if (conn->state == TCP_CONN_CLOSED)
			continue;
		if (conn->state == TCP_CONN_ACCEPTED || conn->peer == tp)
			return false;
	}
	return ep->lfd < 0 || poll(&pfd, 1, 0) <= 0;
}

/* Bytes reported sent (eager copies, partly written) wait to leave. */
static bool tcp_lingering(struct util_rdm_xport *xp)
{
	struct tcp_ep *ep = tcp_ep_of(xp->ep);
	struct dlist_entry *e, *o;

	dlist_foreach(&ep->conns, e) {
		struct tcp_conn *conn = container_of(e, struct tcp_conn, entry);

		if (conn->state != TCP_CONN_OPEN)
			continue;
		dlist_foreach(&conn->outq, o)
			if (!container_of(o, struct tcp_out, entry)->tx)
				return true;
	}
	return false;
}

const struct util_rdm_transport tcp_transport = {
	.send_eager = tcp_send_eager,
	.send_rndv = tcp_send_rndv,
	.fetch = tcp_fetch,
	.discard = tcp_discard,
	.ack = tcp_ack,
	.rma = tcp_rma,
	.progress = tcp_progress,
	.wait_fd = tcp_wait_fd,
	.peer_size = sizeof(struct tcp_peer),
	.peer_init = tcp_peer_init,
	.peer_drained = tcp_peer_drained,
	.lingering = tcp_lingering,
};
