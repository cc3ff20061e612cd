/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * tcp endpoints: the engine's transport over connections (tcp_conn.c),
 * their events and handoff, progress, and the RDM and MSG endpoints; the
 * transport's data path is tcp_xp.c.
 *
 *  RDM  listens from fi_endpoint on; a peer's connection is made on the
 *       first transmit to it (the engine queues transmits meanwhile) and
 *       announces our listening address in HELLO, so the acceptor names
 *       us by the address in its AV.  A connection serves both ways: the
 *       side that accepted it sends on it too, so a pair of endpoints
 *       normally shares one socket.  Two endpoints that connect to each
 *       other at once keep both sockets, each sending on its own: nothing
 *       is lost or reordered.  A process may talk to itself (it connects
 *       to its own listening socket).
 *  MSG  one connection, made by fi_connect / fi_accept (fi_cm(3)); the
 *       engine's fixed peer.
 */
#include "tcp.h"

#include "weft/shm_local.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "weft/stubs.h"
#include "weft/util_coll.h"
#include "weft/util_iov.h"
#include "tcp_ep_priv.h"

/* ---- control frames ----------------------------------------------------- */

/*
 * Send a frame whose header and payload are copied (control frames:
 * HELLO, ACK, RESP with results): written now if nothing waits before
 * it, else queued behind.
 */
static int conn_send_copy(struct tcp_conn *conn, const void *hdr,
			  size_t hdr_len, const struct iovec *iov,
			  size_t count)
{
	size_t len = util_iov_len(iov, count);
	struct tcp_out *out;
	int ret;

	if (conn->fd < 0)
		return -FI_ENOTCONN;
	if (dlist_empty(&conn->outq) && conn->state != TCP_CONN_CONNECTING) {
		ret = tcp_conn_write_copy(conn, hdr, hdr_len, iov, count, len);
		if (ret != -FI_EAGAIN)
			return ret;
	}
	out = tcp_out_new(hdr_len + len);
	if (!out)
		return -FI_ENOMEM;
	memcpy(out->copy, hdr, hdr_len);
	util_iov_copy_from((char *)out->copy + hdr_len, iov, count, 0, len);
	out->iov[0].iov_base = out->copy;
	out->iov[0].iov_len = hdr_len + len;
	out->iov_count = 1;
	tcp_conn_queue(conn, out);
	tcp_conn_watch(conn, true);
	return 0;
}

int tcp_send_hello(struct tcp_conn *conn, const void *addr, size_t alen,
		   const void *cm, size_t cm_len, uint8_t src_ctx,
		   uint8_t dst_ctx)
{
	uint8_t hdr[TCP_HDR_MAX];
	struct iovec iov[2] = { { (void *)addr, alen }, { (void *)cm, cm_len } };
	size_t hl = tcp_put_hello_ctx(
		hdr,
		conn->ep && conn->ep->type == FI_EP_RDM ? TCP_EPK_RDM :
							  TCP_EPK_MSG,
		(uint16_t)alen, (uint16_t)cm_len, src_ctx, dst_ctx);

	return conn_send_copy(conn, hdr, hl, iov, 2);
}

int tcp_send_hello_ack(struct tcp_conn *conn, uint32_t status, const void *cm,
		       size_t cm_len)
{
	uint8_t hdr[TCP_HDR_MAX];
	struct iovec iov = { (void *)cm, cm_len };
	size_t hl = tcp_put_hello_ack(hdr, status, (uint16_t)cm_len);

	return conn_send_copy(conn, hdr, hl, &iov, 1);
}

int send_resp(struct tcp_conn *conn, uint8_t op, uint64_t tx_id,
	      uint32_t status, const void *data, size_t len)
{
	uint8_t hdr[TCP_HDR_MAX];
	struct iovec iov = { (void *)data, len };
	size_t hl = tcp_put_resp(hdr, op, tx_id, status, len);

	return conn_send_copy(conn, hdr, hl, &iov, 1);
}

void tcp_proto_error(struct tcp_conn *conn, const char *why)
{
	FI_WARN(&tcp_prov, FI_LOG_EP_DATA,
		"malformed frame from a peer (%s): connection closed\n",
		why ? why : "?");
	tcp_conn_close(conn, FI_EPROTO);
}

/* ---- connection events -------------------------------------------------- */

/*
 * conn->ep is the owner tcp_conn_new named before the fd entered the
 * domain's set; from then on another endpoint's progress reads it without
 * our lock (dom_event), so it is not written again here.
 */
static void ep_conn_link(struct tcp_ep *ep, struct tcp_conn *conn)
{
	dlist_insert_tail(&conn->entry, &ep->conns);
}

void tcp_conn_drained(struct tcp_conn *conn)
{
	struct tcp_peer *tp = conn->peer;

	if (conn->ep && tp && tp->conn == conn && conn->state == TCP_CONN_OPEN)
		util_rdm_peer_ready(&conn->ep->rdm, &tp->peer);
}

static void eq_write_cm(struct tcp_ep *ep, uint32_t event, const void *cm,
			size_t cm_len)
{
	if (ep->eq)
		util_eq_write_cm(ep->eq, event, &ep->rdm.base.ep_fid.fid, NULL,
				 cm, cm_len);
}

static void eq_write_err(struct tcp_ep *ep, int err, const void *cm,
			 size_t cm_len)
{
	if (ep->eq)
		util_eq_write_cm_err(ep->eq, &ep->rdm.base.ep_fid.fid, err, cm,
				     cm_len);
}

void tcp_conn_lost(struct tcp_conn *conn)
{
	struct tcp_ep *ep = conn->ep;
	struct tcp_peer *tp = conn->peer;
	int err = conn->error ? conn->error : FI_ECONNRESET;

	if (!ep) /* a passive endpoint's, not claimed yet */
		return;
	if (conn == ep->hot)
		ep->hot = NULL;
	if (conn->prev_state == TCP_CONN_OPEN)
		ep->nopen--;
	else if (conn->prev_state == TCP_CONN_ACCEPTED)
		ep->npending--;
	if (tp && tp->conn == conn) {
		tp->conn = NULL;
		tp->peer.state = conn->error ? UTIL_PEER_FAILED : UTIL_PEER_IDLE;
		if (conn->refused) {
			tp->refused = err;
			tp->retry_ms = weft_coarse_ms() + TCP_REFUSED_MS;
		}
		if (!ep->closing)
			FI_INFO(&tcp_prov, FI_LOG_EP_CTRL,
				"connection to a peer lost: %s\n",
				fi_strerror(err));
		util_rdm_fail_peer(&ep->rdm, &tp->peer, err);
	}
	if (ep->type != FI_EP_MSG || ep->closing || conn != ep->conn)
		return;
	switch (conn->prev_state) {
	case TCP_CONN_OPEN:
		/* Nothing more can arrive: posted receives end.  FI_SHUTDOWN
		 * goes to our EQ whichever side shut down first, once. */
		util_rdm_flush_rx(&ep->rdm, FI_ECANCELED);
		if (!ep->shutdown_reported) {
			ep->shutdown_reported = true;
			eq_write_cm(ep, FI_SHUTDOWN, NULL, 0);
		}
		break;
	case TCP_CONN_CONNECTING:
	case TCP_CONN_HELLO:
		/* Our own fi_shutdown of a connect under way reports
		 * nothing: the application ended it. */
		if (!conn->rejected && !ep->shutdown_local)
			eq_write_err(ep, err == FI_ECONNRESET ? FI_ECONNREFUSED :
								 err,
				     NULL, 0);
		break;
	default:
		break;
	}
}

static void conn_opened(struct tcp_conn *conn)
{
	struct tcp_ep *ep = conn->ep;

	if (conn->state == TCP_CONN_ACCEPTED)
		ep->npending--;
	conn->state = TCP_CONN_OPEN;
	ep->nopen++;
	ep->hot = ep->nopen == 1 ? conn : NULL;
	/* MSG: the one peer is the address fi_getpeer reports, which an AV
	 * bound to the endpoint may hold (FI_SOURCE, FI_DIRECTED_RECV). */
	if (ep->type == FI_EP_MSG && conn->peer && conn->fd >= 0) {
		struct sockaddr_storage sa = { 0 };
		socklen_t len = sizeof(sa);

		if (!getpeername(conn->fd, (struct sockaddr *)&sa, &len) &&
		    len <= ep->rdm.peers.attr.addr_len) {
			memset(conn->peer->peer.addr, 0,
			       ep->rdm.peers.attr.addr_len);
			memcpy(conn->peer->peer.addr, &sa, len);
			conn->peer->peer.fi_addr = FI_ADDR_NOTAVAIL;
		}
	}
}

/* The outgoing connection is up (or failed): say hello. */
static void conn_connected(struct tcp_conn *conn)
{
	struct tcp_ep *ep = conn->ep;
	socklen_t len = sizeof(int);
	int err = 0;

	if (getsockopt(conn->fd, SOL_SOCKET, SO_ERROR, &err, &len) || err) {
		tcp_conn_close(conn, tcp_errno_fi(err ? err : errno));
		return;
	}
	conn->state = TCP_CONN_HELLO;
	tcp_conn_watch(conn, false);
	conn->deadline_ms = weft_coarse_ms() + (uint64_t)tcp_params.conn_timeout_ms;
	if (ep->type != FI_EP_RDM) {
		tcp_send_hello(conn, NULL, 0, conn->cm_data, conn->cm_len, 0,
			       0);
		return;
	}
	/* RDM: our frames may follow HELLO at once; the acceptor reads them
	 * after it, and a refusal fails them.  No round trip is waited. */
	if (tcp_send_hello(conn, &ep->addr, ep->addrlen, NULL, 0, ep->ctx,
			   conn->peer ? (uint8_t)conn->peer->peer.ctx : 0))
		return;
	conn->await_ack = true;
	conn_opened(conn);
	if (conn->peer && conn->peer->conn == conn) {
		conn->peer->peer.state = UTIL_PEER_CONNECTED;
		util_rdm_peer_ready(&ep->rdm, &conn->peer->peer);
	}
}


static int hello_accept(struct tcp_conn *conn,
			const struct sockaddr_storage *sa, uint8_t src_ctx);
static int conn_handoff(struct tcp_conn *conn,
			const struct sockaddr_storage *sa, uint8_t src_ctx,
			uint8_t dst_ctx);

/* HELLO on a connection we accepted (RDM endpoint or passive endpoint). */
int tcp_conn_hello_in(struct tcp_conn *conn, const void *payload)
{
	const struct tcp_frame *f = &conn->frame;
	struct tcp_ep *ep = conn->ep;
	struct sockaddr_storage sa;
	const char *why;

	why = tcp_hello_check(f, payload,
			      conn->pep ? TCP_EPK_MSG : TCP_EPK_RDM, &sa);
	if (why)
		goto refuse;
	if (conn->pep) {
		memcpy(conn->cm_data, (const uint8_t *)payload +
					      f->hello.addr_len,
		       f->hello.cm_len);
		conn->cm_len = f->hello.cm_len;
		conn->state = TCP_CONN_CMWAIT;
		tcp_pep_connreq(conn->pep, conn);
		return 0;
	}
	why = "HELLO: not an address of this AV's format";
	if (ep->rdm.base.av && ep->rdm.base.av->ops.normalize &&
	    ep->rdm.base.av->ops.normalize(ep->rdm.base.av, &sa, &sa))
		goto refuse;
	if (f->hello.dst_ctx != ep->ctx) {
		why = "HELLO: no such context";
		return conn_handoff(conn, &sa, f->hello.src_ctx,
				    f->hello.dst_ctx) ?
			       (tcp_send_hello_ack(conn, FI_ECONNREFUSED, NULL,
						   0),
				tcp_proto_error(conn, why), -1) :
			       0;
	}
	return hello_accept(conn, &sa, f->hello.src_ctx);

refuse:
	tcp_send_hello_ack(conn, FI_EPROTO, NULL, 0);
	tcp_proto_error(conn, why);
	return -1;
}

/* An RDM HELLO of sa's context src_ctx, for this endpoint: it is a peer. */
static int hello_accept(struct tcp_conn *conn,
			const struct sockaddr_storage *sa, uint8_t src_ctx)
{
	struct tcp_ep *ep = conn->ep;
	struct util_peer *peer;
	struct tcp_peer *tp;
	int ret;

	ret = util_peer_add(&ep->rdm.peers, sa, src_ctx, &peer);
	if (ret) {
		tcp_send_hello_ack(conn, FI_ENOMEM, NULL, 0);
		tcp_conn_close(conn, -ret);
		return -1;
	}
	tp = tcp_peer_of(peer);
	conn->peer = tp;
	if (tcp_send_hello_ack(conn, 0, NULL, 0))
		return -1;
	conn_opened(conn);
	if (!tp->conn) {
		/* It connected first: we answer on its connection. */
		tp->conn = conn;
		tp->peer.state = UTIL_PEER_CONNECTED;
		util_rdm_peer_ready(&ep->rdm, &tp->peer);
	}
	return 0;
}

/*
 * A scalable endpoint's pair 0 accepted a connection for pair dst: hand it
 * over (under pair 0's lock).  It leaves pair 0's connections, silenced in
 * pair 0's epoll set; once pair 0's read of it has returned (conn_event),
 * handoff_publish puts it in dst's inbox (util_rdm_inbox_post: its bell,
 * an eventfd in its own set, rings), and dst adopts it under its own
 * lock.  What pair 0 wrote before the inbox's lock is dst's after it, and
 * pair 0 touches it no more: nothing is shared unlocked.  -1: no such
 * pair, or not taking connections (refused).
 */
static int conn_handoff(struct tcp_conn *conn,
			const struct sockaddr_storage *sa, uint8_t src_ctx,
			uint8_t dst_ctx)
{
	struct tcp_ep *ep = conn->ep;
	struct tcp_sep *sep = ep->sep;
	struct epoll_event ev = { .events = 0, .data.ptr = conn };

	if (!sep || ep->ctx || !dst_ctx || dst_ctx >= sep->base.npair ||
	    !util_rdm_inbox_is_open(&sep->base, dst_ctx) ||
	    epoll_ctl(conn->epfd, EPOLL_CTL_MOD, conn->fd, &ev))
		return -1;
	conn->want_out = false;
	dlist_remove(&conn->entry);
	ep->npending--;
	conn->hello_sa = *sa;
	conn->hello_src_ctx = src_ctx;
	conn->handoff_ctx = dst_ctx;
	conn->rx_state = TCP_RX_HANDOFF;
	return 0;
}

/* The read that handed conn over returned: now it is the pair's. */
static void handoff_publish(struct tcp_conn *conn)
{
	util_rdm_inbox_post(&conn->ep->sep->base, conn->handoff_ctx,
			    &conn->entry);
}

/* Take over a connection pair 0 handed us (under our lock, out of the
 * inbox): into our set, the HELLO answered, what came after it read. */
static void conn_adopt(struct tcp_ep *ep, struct tcp_conn *conn)
{
	conn->ep = ep;
	ep_conn_link(ep, conn);
	ep->npending++; /* (TCP_CONN_ACCEPTED until opened) */
	conn->rx_state = TCP_RX_HDR;
	if (tcp_conn_move(conn, ep->epfd)) {
		tcp_conn_close(conn, FI_ENOMEM);
		return;
	}
	if (hello_accept(conn, &conn->hello_sa, conn->hello_src_ctx))
		return;
	tcp_conn_watch(conn, !dlist_empty(&conn->outq));
	(void)tcp_conn_read(conn);
}

static void inbox_adopt(struct tcp_ep *ep)
{
	struct dlist_entry *e;

	util_rdm_inbox_hush(&ep->sep->base, ep->ctx);
	while ((e = util_rdm_inbox_take(&ep->sep->base, ep->ctx)))
		conn_adopt(ep, container_of(e, struct tcp_conn, entry));
}

void tcp_conn_hello_ack_in(struct tcp_conn *conn, uint32_t status,
			   const void *cm, size_t cm_len)
{
	struct tcp_ep *ep = conn->ep;
	struct tcp_peer *tp = conn->peer;

	conn->await_ack = false;
	if (status) {
		if (ep->type == FI_EP_RDM) {
			conn->refused = true;
			tcp_refused_warn(status);
		}
		if (ep->type == FI_EP_MSG) {
			conn->rejected = true;
			eq_write_err(ep, status == FI_ECONNREFUSED ?
						 FI_ECONNREFUSED :
						 (int)status,
				     cm, cm_len);
		}
		tcp_conn_close(conn, (int)status);
		return;
	}
	if (ep->type == FI_EP_MSG) {
		conn_opened(conn);
		eq_write_cm(ep, FI_CONNECTED, cm, cm_len);
		return;
	}
	/* RDM: open since HELLO left (conn_connected). */
	(void)tp;
}

/* Start a connection to an RDM peer. */
int peer_connect(struct tcp_ep *ep, struct tcp_peer *tp)
{
	const struct sockaddr *sa = tp->peer.addr;
	struct tcp_conn *conn;
	int fd, ret, err;

	fd = socket(sa->sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC,
		    0);
	if (fd < 0) {
		err = errno;
		if (err == EMFILE || err == ENFILE)
			tcp_fd_warn(err, "RDM endpoint, connecting", false, 0);
		return -tcp_errno_fi(err);
	}
	tcp_sock_opts(fd);
	ret = connect(fd, sa, (socklen_t)tcp_sockaddr_len(sa));
	if (ret && errno != EINPROGRESS) {
		err = errno;
		close(fd);
		return -tcp_errno_fi(err);
	}
	conn = tcp_conn_new(ep, ep->epfd, fd, TCP_CONN_CONNECTING);
	if (!conn) {
		close(fd);
		return -FI_ENOMEM;
	}
	ep_conn_link(ep, conn);
	conn->peer = tp;
	conn->outgoing = true;
	tp->conn = conn;
	tp->peer.state = UTIL_PEER_CONNECTING;
	/* A near peer (this host) is often connected already: then the
	 * first message leaves now rather than at the next progress. */
	{
		struct pollfd pfd = { .fd = fd, .events = POLLOUT };

		if (!ret || poll(&pfd, 1, 0) == 1)
			conn_connected(conn);
	}
	/* Refused at once (nobody listens there): say so now. */
	if (conn->state == TCP_CONN_CLOSED)
		return -(conn->error ? conn->error : FI_ECONNREFUSED);
	return 0;
}

/* ---- progress ----------------------------------------------------------- */

static void ep_accept(struct tcp_ep *ep)
{
	struct tcp_conn *conn;
	int fd, i;

	/* A bounded number per call: a flood of connections does not keep
	 * the endpoint from its established ones. */
	for (i = 0; i < TCP_ACCEPT_BURST; i++) {
		fd = tcp_sock_accept(ep->lfd, "RDM endpoint");
		if (fd < 0)
			return;
		if (ep->npending >= tcp_params.pending_max)
			tcp_pending_evict(&ep->conns);
		conn = tcp_conn_new(ep, ep->epfd, fd, TCP_CONN_ACCEPTED);
		if (!conn) {
			close(fd);
			continue;
		}
		ep_conn_link(ep, conn);
		ep->npending++;
	}
}

static void conn_event(struct tcp_conn *conn, uint32_t events, int *n)
{
	int r;

	if (conn->state == TCP_CONN_CLOSED)
		return;

	if (conn->state == TCP_CONN_CONNECTING) {
		if (events & (EPOLLOUT | EPOLLERR | EPOLLHUP))
			conn_connected(conn);
		return;
	}
	if (events & EPOLLOUT)
		tcp_conn_flush(conn);
	if (events & (EPOLLIN | EPOLLERR | EPOLLHUP)) {
		r = tcp_conn_read(conn);
		if (r > 0)
			*n += r;
		/* Its HELLO named another pair (conn_handoff). */
		if (weft_unlikely(conn->rx_state == TCP_RX_HANDOFF))
			handoff_publish(conn);
	}
}

/*
 * Receives directed to a peer a scalable endpoint's pair has no
 * connection with (a receive pair only hears from its peers) would not
 * learn that it died: connect to it, and a refusal fails it
 * (tcp_conn_lost), and the receives with it.  Peers reached through
 * shared memory are watched there.
 */
static void probe_directed(struct tcp_ep *ep)
{
	struct dlist_entry *e;

	dlist_foreach(&ep->rdm.peers.list, e) {
		struct util_peer *peer =
			container_of(e, struct util_peer, entry);
		struct tcp_peer *tp = tcp_peer_of(peer);

		if (tp->conn || peer->gone || peer->xp != &ep->xp ||
		    peer->fi_addr == FI_ADDR_NOTAVAIL ||
		    peer->state == UTIL_PEER_FAILED)
			continue;
		(void)peer_connect(ep, tp);
	}
}

/* Connections that stopped reading with frames left, or held by the
 * engine, are read again; connection attempts past their time fail. */
static void ep_sweep(struct tcp_ep *ep, int *n)
{
	uint64_t now = 0;
	struct dlist_entry *e, *tmp;

	struct dlist_entry gone;

	/* (A plain endpoint sends to the peers it waits for.) */
	if (ep->sep && util_rdm_rx_directed(&ep->rdm))
		probe_directed(ep);

	/* Closed connections go here, where no read is under way; an MSG
	 * endpoint's one stays (fi_getpeer, its state) with its staging
	 * buffer freed.  Nothing else names a closed connection: unexpected
	 * messages name their peer, and its stash lets go at the close. */
	dlist_init(&gone);
	dlist_foreach_safe(&ep->conns, e, tmp) {
		struct tcp_conn *conn = container_of(e, struct tcp_conn, entry);

		if (conn->state == TCP_CONN_CLOSED) {
			dlist_remove(e);
			if (conn == ep->conn) {
				dlist_insert_tail(e, &ep->closed);
				free(conn->rbuf);
				conn->rbuf = NULL;
				conn->rbuf_size = conn->rstart = conn->rend = 0;
			} else {
				dlist_insert_tail(e, &gone);
			}
			continue;
		}
		if (conn->state == TCP_CONN_OPEN && conn->rstart != conn->rend)
			conn_event(conn, EPOLLIN, n);
		else if (conn->state != TCP_CONN_OPEN &&
			 conn->state != TCP_CONN_CLOSED &&
			 conn->state != TCP_CONN_CMWAIT) {
			if (!now)
				now = weft_coarse_ms();
			if (now > conn->deadline_ms)
				tcp_conn_close(conn, FI_ETIMEDOUT);
		}
	}
	if (dlist_empty(&gone))
		return;
	/* Another endpoint's progress may hold an event it read before the
	 * socket closed: it finishes under the domain's lock. */
	weft_lock(&ep->domain->prog_lock);
	weft_unlock(&ep->domain->prog_lock);
	dlist_foreach_safe(&gone, e, tmp) {
		dlist_remove(e);
		tcp_conn_free(container_of(e, struct tcp_conn, entry));
	}
}

/* A listening socket's epoll tag: its endpoint, low bit set (a
 * connection's tag is the connection, whose address has it clear). */
static inline void *lfd_tag(struct tcp_ep *ep)
{
	return (void *)((uintptr_t)ep | 1);
}

/*
 * Handle one ready event of the domain's set for whichever endpoint owns
 * it, if its lock can be taken now (own: ours, held already).  Returns
 * whether it was handled; one that was not stays ready.
 */
static int progress_ep(struct tcp_ep *ep, bool own_only);

/* A scalable endpoint's pair 0 set, as the other pairs' sets hold it. */
static inline void *pair0_tag(struct tcp_sep *sep)
{
	return (void *)((uintptr_t)sep | 1);
}

static bool dom_event(struct tcp_ep *ep, void *tag, uint32_t events, int *n)
{
	struct tcp_conn *conn = NULL;
	struct tcp_ep *owner;
	struct weft_lock *l;

	/* Pair 0 has work (its listener: peers of any pair connect there):
	 * its progress, if its lock is free. */
	if (ep->sep && ep->ctx && tag == pair0_tag(ep->sep)) {
		owner = tcp_ep_of(ep->sep->base.pair[0].ep);
		l = util_rdm_lock(&owner->rdm);
		if (!weft_trylock(l))
			return false;
		if (!owner->closing && owner->rdm.base.enabled)
			*n += progress_ep(owner, false);
		weft_unlock(l);
		return true;
	}

	if ((uintptr_t)tag & 1)
		owner = (struct tcp_ep *)((uintptr_t)tag & ~(uintptr_t)1);
	else
		owner = (conn = tag)->ep;
	l = util_rdm_lock(&owner->rdm);
	if (owner != ep && !weft_trylock(l))
		return false;
	/* An endpoint not enabled yet has nowhere to report: its own calls
	 * pick its events up once it is. */
	if (!owner->closing && (owner == ep || owner->rdm.base.enabled)) {
		if (!conn) {
			/* The listener, or a pair's bell (it has no listener:
			 * pair 0 handed it connections). */
			if (owner->lfd >= 0)
				ep_accept(owner);
			else
				inbox_adopt(owner);
			(*n)++;
		} else {
			conn_event(conn, events, n);
		}
	}
	if (owner != ep)
		weft_unlock(l);
	return true;
}

/*
 * own_only: handle only this endpoint's events (progress driven by an EQ,
 * which may run beside the application's calls on the domain's other
 * endpoints).
 */
#define TCP_IDLE_LOOK_NS 20000

/*
 * Whether this poll may leave the domain's set alone.  The clock is read
 * every 16th poll while polls come fast, and at each when they come
 * slowly (an application that sleeps between them looks every time).
 */
static bool idle_skip(struct tcp_ep *ep)
{
	uint64_t t;

	if (ep->idle_skip) {
		ep->idle_skip--;
		return true;
	}
	t = weft_now_ns();
	if (t - ep->idle_clock_ns < TCP_IDLE_LOOK_NS) {
		ep->idle_skip = 15;
		if (t - ep->idle_look_ns < TCP_IDLE_LOOK_NS) {
			ep->idle_clock_ns = t;
			return true;
		}
	}
	ep->idle_clock_ns = t;
	ep->idle_look_ns = t;
	return false;
}

static int progress_ep(struct tcp_ep *ep, bool own_only)
{
	struct epoll_event ev[32];
	int i, k, n = 0;

	if (weft_unlikely(ep->closing))
		return 0;
	if (weft_unlikely(ep->sep &&
			  util_rdm_inbox_ready(&ep->sep->base, ep->ctx))) {
		inbox_adopt(ep);
		n++;
	}
	/* No connection: the peers so far are on this host and come through
	 * shared memory.  Look at the domain's set (new connections) every
	 * TCP_IDLE_LOOK_NS rather than with a system call at each poll. */
	if (ep->rdm.local_up && dlist_empty(&ep->conns) && idle_skip(ep))
		return 0;

	/*
	 * One connection and nothing else going on: read it directly (one
	 * syscall per poll, as a raw socket loop does), and look at the
	 * domain's set (accepts, other endpoints) every 64th call.  Not
	 * while the socket is full or a large payload is arriving and the
	 * last read found nothing: then retrying the socket itself takes its
	 * lock against the kernel moving the data, and epoll, which does
	 * not, says when.
	 */
	if (weft_likely(ep->hot && (++ep->calls & 63))) {
		struct tcp_conn *conn = ep->hot;

		if (weft_likely(!conn->want_out && !conn->rx_dry &&
				conn->state == TCP_CONN_OPEN)) {
			k = tcp_conn_read(conn);
			return k > 0 ? k : 0;
		}
	}
	/* A set of its own holds only its sockets: no other endpoint's
	 * progress reads it, nothing to share (tcp_ep.own_set). */
	if (!ep->own_set)
		weft_lock(&ep->domain->prog_lock);
	k = epoll_wait(ep->epfd, ev, 32, 0);
	for (i = 0; i < k; i++) {
		void *tag = ev[i].data.ptr;

		if (own_only &&
		    ((uintptr_t)tag & 1 ? tag != lfd_tag(ep) :
					  ((struct tcp_conn *)tag)->ep != ep))
			continue;
		dom_event(ep, tag, ev[i].events, &n);
	}
	if (!ep->own_set)
		weft_unlock(&ep->domain->prog_lock);
	/* (Counted here: `calls` moves only while a connection is hot.) */
	if (!(++ep->looks & 63) || k == 32)
		ep_sweep(ep, &n);
	return n + k;
}

int tcp_progress_ep(struct tcp_ep *ep)
{
	return progress_ep(ep, false);
}

/* ---- endpoint fid ops --------------------------------------------------- */

static void ep_close_conns(struct tcp_ep *ep)
{
	struct dlist_entry *e, *tmp;

	/* From here progress does nothing (a thread or another endpoint's
	 * CQ may still call it until the engine stops them), and nobody
	 * connects to us any more. */
	ep->closing = true;
	/* Connections handed over and not adopted are ours to close; none
	 * comes after util_rdm_inbox_shut. */
	if (ep->sep && ep->ctx) {
		struct dlist_entry *c;

		util_rdm_inbox_shut(&ep->sep->base, ep->ctx);
		while ((c = util_rdm_inbox_take(&ep->sep->base, ep->ctx))) {
			struct tcp_conn *conn =
				container_of(c, struct tcp_conn, entry);

			conn->ep = ep;
			ep->npending++; /* its close counts it off */
			dlist_insert_tail(c, &ep->conns);
		}
	}
	if (ep->lfd >= 0) {
		epoll_ctl(ep->epfd, EPOLL_CTL_DEL, ep->lfd, NULL);
		close(ep->lfd);
		ep->lfd = -1;
	}
	dlist_foreach_safe(&ep->conns, e, tmp) {
		struct tcp_conn *conn = container_of(e, struct tcp_conn, entry);

		/* Give what is queued a last chance to leave. */
		if (conn->state == TCP_CONN_OPEN)
			tcp_conn_flush(conn);
		tcp_conn_close(conn, FI_ECANCELED);
	}
}

static int tcp_ep_close(struct fid *fid)
{
	struct tcp_ep *ep =
		container_of(fid, struct tcp_ep, rdm.base.ep_fid.fid);
	struct dlist_entry *e, *tmp;

	/* Injects its peers could not take yet still go (util_rdm.h). */
	util_rdm_ep_linger(&ep->rdm);
	util_eq_unbind_cm(ep->eq, &ep->cm_progress, ep->epfd);
	weft_lock(util_rdm_lock(&ep->rdm));
	ep_close_conns(ep);
	weft_unlock(util_rdm_lock(&ep->rdm));
	util_rdm_ep_fini(&ep->rdm);
	/* The domain's set no longer holds our sockets; another endpoint
	 * handling events it read before may still name them: wait for it. */
	weft_lock(&ep->domain->prog_lock);
	weft_unlock(&ep->domain->prog_lock);
	dlist_foreach_safe(&ep->conns, e, tmp) {
		struct tcp_conn *conn = container_of(e, struct tcp_conn, entry);

		dlist_remove(e);
		tcp_conn_free(conn);
	}
	dlist_foreach_safe(&ep->closed, e, tmp) {
		struct tcp_conn *conn = container_of(e, struct tcp_conn, entry);

		dlist_remove(e);
		tcp_conn_free(conn);
	}
	while (ep->nstage_spare)
		free(ep->stage_spare[--ep->nstage_spare].buf);
	if (ep->lfd >= 0)
		close(ep->lfd);
	if (ep->own_set && ep->epfd >= 0)
		close(ep->epfd);
	if (ep->eq)
		util_eq_put(ep->eq);
	free(ep);
	return 0;
}

static void ep_cm_progress(struct util_progress *p)
{
	struct tcp_ep *ep = container_of(p, struct tcp_ep, cm_progress);

	weft_lock(util_rdm_lock(&ep->rdm));
	progress_ep(ep, true);
	weft_unlock(util_rdm_lock(&ep->rdm));
}

static int tcp_ep_bind(struct fid *fid, struct fid *bfid, uint64_t flags)
{
	struct tcp_ep *ep =
		container_of(fid, struct tcp_ep, rdm.base.ep_fid.fid);

	/* MSG endpoints report connection events; RDM ones leave their EQ
	 * to the engine (collectives' joins). */
	if (bfid && bfid->fclass == FI_CLASS_EQ && ep->type == FI_EP_MSG)
		return util_eq_bind_cm(&ep->eq, bfid, &ep->cm_progress,
				       ep_cm_progress, ep->epfd, ep);
	return util_rdm_ep_bind(fid, bfid, flags);
}

static int tcp_getname(fid_t fid, void *addr, size_t *addrlen)
{
	struct tcp_ep *ep =
		container_of(fid, struct tcp_ep, rdm.base.ep_fid.fid);
	struct sockaddr_storage sa;
	socklen_t len = sizeof(sa);
	size_t need;

	if (!addrlen)
		return -FI_EINVAL;
	if (ep->type == FI_EP_RDM) {
		memcpy(&sa, &ep->addr, sizeof(sa));
		len = ep->addrlen;
	} else if (ep->conn && ep->conn->fd >= 0) {
		if (getsockname(ep->conn->fd, (struct sockaddr *)&sa, &len))
			return -errno;
	} else if (ep->src_addrlen) {
		memcpy(&sa, &ep->src_addr, sizeof(sa));
		len = ep->src_addrlen;
	} else {
		return -FI_EADDRNOTAVAIL;
	}
	need = len;
	if (!addr || *addrlen < need) {
		*addrlen = need;
		return -FI_ETOOSMALL;
	}
	memcpy(addr, &sa, need);
	*addrlen = need;
	return 0;
}

static int tcp_getpeer(struct fid_ep *ep_fid, void *addr, size_t *addrlen)
{
	struct tcp_ep *ep =
		container_of(ep_fid, struct tcp_ep, rdm.base.ep_fid);
	struct sockaddr_storage sa;
	socklen_t len = sizeof(sa);

	if (ep->type != FI_EP_MSG)
		return -FI_ENOSYS;
	if (!addrlen)
		return -FI_EINVAL;
	if (!ep->conn || ep->conn->fd < 0 ||
	    getpeername(ep->conn->fd, (struct sockaddr *)&sa, &len))
		return -FI_ENOTCONN;
	if (!addr || *addrlen < len) {
		*addrlen = len;
		return -FI_ETOOSMALL;
	}
	memcpy(addr, &sa, len);
	*addrlen = len;
	return 0;
}

static int rdm_listen_at(struct tcp_ep *ep, const void *addr, size_t len);

static int tcp_setname(fid_t fid, void *addr, size_t addrlen)
{
	struct tcp_ep *ep =
		container_of(fid, struct tcp_ep, rdm.base.ep_fid.fid);

	if (!addr || addrlen > sizeof(ep->src_addr) ||
	    addrlen < sizeof(struct sockaddr_in))
		return -FI_EINVAL;
	if (ep->type == FI_EP_RDM) {
		int ret;

		if (ep->rdm.base.enabled)
			return -FI_EOPBADSTATE;
		weft_lock(util_rdm_lock(&ep->rdm));
		ret = rdm_listen_at(ep, addr, addrlen);
		weft_unlock(util_rdm_lock(&ep->rdm));
		return ret;
	}
	if (ep->conn)
		return -FI_EOPBADSTATE;
	memset(&ep->src_addr, 0, sizeof(ep->src_addr));
	memcpy(&ep->src_addr, addr, addrlen);
	ep->src_addrlen = (socklen_t)addrlen;
	return 0;
}

/* MSG endpoints enable when they connect or accept, if not before. */
static int msg_enable(struct tcp_ep *ep)
{
	int ret;

	if (ep->rdm.base.enabled)
		return 0;
	ret = util_rdm_ep_control(&ep->rdm.base.ep_fid.fid, FI_ENABLE, NULL);
	return ret;
}

static int tcp_connect(struct fid_ep *ep_fid, const void *addr,
		       const void *param, size_t paramlen)
{
	struct tcp_ep *ep =
		container_of(ep_fid, struct tcp_ep, rdm.base.ep_fid);
	const struct sockaddr *sa = addr;
	struct tcp_conn *conn;
	int fd, ret, err;

	if (ep->type != FI_EP_MSG)
		return -FI_ENOSYS;
	if (!addr || paramlen > TCP_CM_DATA_MAX || (paramlen && !param) ||
	    (sa->sa_family != AF_INET && sa->sa_family != AF_INET6))
		return -FI_EINVAL;
	if (!ep->eq)
		return -FI_ENOEQ;
	weft_lock(util_rdm_lock(&ep->rdm));
	if (ep->conn) {
		ret = -FI_EISCONN;
		goto out;
	}
	weft_unlock(util_rdm_lock(&ep->rdm));
	ret = msg_enable(ep);
	weft_lock(util_rdm_lock(&ep->rdm));
	if (ret)
		goto out;
	fd = socket(sa->sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC,
		    0);
	if (fd < 0) {
		ret = -tcp_errno_fi(errno);
		goto out;
	}
	tcp_sock_opts(fd);
	if (ep->src_addrlen &&
	    bind(fd, (struct sockaddr *)&ep->src_addr, ep->src_addrlen)) {
		err = errno;
		close(fd);
		ret = -tcp_errno_fi(err);
		goto out;
	}
	if (connect(fd, sa, (socklen_t)tcp_sockaddr_len(sa)) &&
	    errno != EINPROGRESS) {
		err = errno;
		close(fd);
		ret = -tcp_errno_fi(err);
		goto out;
	}
	conn = tcp_conn_new(ep, ep->epfd, fd, TCP_CONN_CONNECTING);
	if (!conn) {
		close(fd);
		ret = -FI_ENOMEM;
		goto out;
	}
	ep_conn_link(ep, conn);
	conn->outgoing = true;
	conn->peer = ep->mpeer;
	if (paramlen)
		memcpy(conn->cm_data, param, paramlen);
	conn->cm_len = paramlen;
	ep->conn = conn;
	ep->mpeer->conn = conn;
	ret = 0;
out:
	weft_unlock(util_rdm_lock(&ep->rdm));
	return ret;
}

static int tcp_accept(struct fid_ep *ep_fid, const void *param,
		      size_t paramlen)
{
	struct tcp_ep *ep =
		container_of(ep_fid, struct tcp_ep, rdm.base.ep_fid);
	struct tcp_conn *conn;
	int ret;

	if (ep->type != FI_EP_MSG)
		return -FI_ENOSYS;
	if (paramlen > TCP_CM_DATA_MAX || (paramlen && !param))
		return -FI_EINVAL;
	if (!ep->eq)
		return -FI_ENOEQ;
	ret = msg_enable(ep);
	if (ret)
		return ret;
	weft_lock(util_rdm_lock(&ep->rdm));
	conn = ep->conn;
	if (!conn || conn->state != TCP_CONN_CMWAIT) {
		ret = conn && conn->state == TCP_CONN_CLOSED ? -FI_ECONNRESET :
							       -FI_EOPBADSTATE;
		goto out;
	}
	ret = tcp_send_hello_ack(conn, 0, param, paramlen);
	if (ret)
		goto out;
	conn_opened(conn);
	eq_write_cm(ep, FI_CONNECTED, NULL, 0);
	util_rdm_peer_ready(&ep->rdm, &ep->mpeer->peer);
out:
	weft_unlock(util_rdm_lock(&ep->rdm));
	return ret;
}

static int tcp_shutdown(struct fid_ep *ep_fid, uint64_t flags)
{
	struct tcp_ep *ep =
		container_of(ep_fid, struct tcp_ep, rdm.base.ep_fid);

	if (ep->type != FI_EP_MSG)
		return -FI_ENOSYS;
	weft_lock(util_rdm_lock(&ep->rdm));
	if (ep->conn && ep->conn->state != TCP_CONN_CLOSED) {
		ep->shutdown_local = true;
		if (ep->conn->state == TCP_CONN_OPEN)
			tcp_conn_flush(ep->conn);
		tcp_conn_close(ep->conn, FI_ECONNRESET);
	}
	weft_unlock(util_rdm_lock(&ep->rdm));
	return 0;
}

static struct fi_ops_cm tcp_cm_ops = {
	.size = sizeof(struct fi_ops_cm),
	.setname = tcp_setname,
	.getname = tcp_getname,
	.getpeer = tcp_getpeer,
	.connect = tcp_connect,
	.listen = weft_no_listen,
	.accept = tcp_accept,
	.reject = weft_no_reject,
	.shutdown = tcp_shutdown,
	.join = util_coll_join,
};

/* MSG endpoints answer FI_OPT_CM_DATA_SIZE; the engine the rest. */
static int tcp_ep_getopt(struct util_rdm_ep *rdm, int level, int optname,
			 void *optval, size_t *optlen)
{
	if (tcp_ep_of(rdm)->type == FI_EP_MSG && level == FI_OPT_ENDPOINT &&
	    optname == FI_OPT_CM_DATA_SIZE)
		return tcp_cm_getopt(level, optname, optval, optlen);
	return -FI_ENOPROTOOPT;
}

static const struct util_rdm_ep_hooks tcp_ep_hooks = {
	.getopt = tcp_ep_getopt,
};

static int tcp_ep_control(struct fid *fid, int command, void *arg)
{
	struct tcp_ep *ep =
		container_of(fid, struct tcp_ep, rdm.base.ep_fid.fid);

	bool enabling = command == FI_ENABLE && !ep->rdm.base.enabled;
	int ret;

	ret = util_rdm_ep_control(fid, command, arg);
	/* A scalable endpoint's pair takes connections from now on. */
	if (!ret && enabling && ep->sep && ep->ctx)
		util_rdm_inbox_open(&ep->sep->base, ep->ctx);
	return ret;
}

static struct fi_ops tcp_ep_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = tcp_ep_close,
	.bind = tcp_ep_bind,
	.control = tcp_ep_control,
	.ops_open = weft_no_ops_open,
	.tostr = weft_no_tostr,
	.ops_set = weft_no_ops_set,
};

/* RDM: listen on the source address (every address when it has no IP),
 * and name the endpoint by an address peers can reach. */
static int rdm_listen(struct tcp_ep *ep, const struct fi_info *info)
{
	struct tcp_domain *domain = ep_domain(ep);
	struct sockaddr_storage sa = { 0 };
	int family = domain->addr_format == FI_SOCKADDR_IN6 ? AF_INET6 :
							      AF_INET;

	if (info->src_addr && info->src_addrlen >= sizeof(struct sockaddr_in)) {
		memcpy(&sa, info->src_addr,
		       WEFT_MIN(info->src_addrlen, sizeof(sa)));
	} else if (tcp_iface_addr(domain->ifname, family, &sa)) {
		sa.ss_family = (sa_family_t)family;
	}
	return rdm_listen_at(ep, &sa, sizeof(sa));
}

static int rdm_listen_at(struct tcp_ep *ep, const void *addr, size_t alen)
{
	struct tcp_domain *domain = ep_domain(ep);
	struct sockaddr_storage sa = { 0 };
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = lfd_tag(ep) };
	socklen_t len = sizeof(sa);
	int family, one = 1, fd;

	memcpy(&sa, addr, WEFT_MIN(alen, sizeof(sa)));
	family = sa.ss_family;
	if ((family != AF_INET && family != AF_INET6) ||
	    alen < tcp_sockaddr_len(&sa))
		return -FI_EINVAL;
	fd = socket(family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -tcp_errno_fi(errno);
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&sa, (socklen_t)tcp_sockaddr_len(&sa)) ||
	    listen(fd, 1024) ||
	    getsockname(fd, (struct sockaddr *)&ep->addr, &len)) {
		int err = errno;

		close(fd);
		return -tcp_errno_fi(err);
	}
	if (ep->lfd >= 0) {
		epoll_ctl(ep->epfd, EPOLL_CTL_DEL, ep->lfd, NULL);
		close(ep->lfd);
	}
	ep->lfd = fd;
	tcp_fd_reserve();
	if (epoll_ctl(ep->epfd, EPOLL_CTL_ADD, ep->lfd, &ev))
		return -tcp_errno_fi(errno);
	ep->addrlen = (socklen_t)tcp_sockaddr_len(&ep->addr);
	/* Listening on every address: peers reach us at the interface's. */
	if ((family == AF_INET &&
	     ((struct sockaddr_in *)&ep->addr)->sin_addr.s_addr == INADDR_ANY) ||
	    (family == AF_INET6 &&
	     IN6_IS_ADDR_UNSPECIFIED(&((struct sockaddr_in6 *)&ep->addr)->sin6_addr))) {
		uint16_t port = ((struct sockaddr_in *)&ep->addr)->sin_port;

		if (!tcp_iface_addr(domain->ifname, family, &sa)) {
			memcpy(&ep->addr, &sa, sizeof(sa));
			((struct sockaddr_in *)&ep->addr)->sin_port = port;
		}
	}
	/* The AV's stored form, so HELLO names us as peers' AVs do. */
	{
		struct sockaddr_storage n = { 0 };

		n.ss_family = ep->addr.ss_family;
		if (family == AF_INET) {
			((struct sockaddr_in *)&n)->sin_port =
				((struct sockaddr_in *)&ep->addr)->sin_port;
			((struct sockaddr_in *)&n)->sin_addr =
				((struct sockaddr_in *)&ep->addr)->sin_addr;
		} else {
			((struct sockaddr_in6 *)&n)->sin6_port =
				((struct sockaddr_in6 *)&ep->addr)->sin6_port;
			((struct sockaddr_in6 *)&n)->sin6_addr =
				((struct sockaddr_in6 *)&ep->addr)->sin6_addr;
			((struct sockaddr_in6 *)&n)->sin6_scope_id =
				((struct sockaddr_in6 *)&ep->addr)
					->sin6_scope_id;
		}
		ep->addr = n;
	}
	return 0;
}

/* An endpoint of info; sep: pair ctx of that scalable endpoint. */
static int ep_make(struct util_domain *domain, struct fi_info *info,
		   struct tcp_sep *sep, uint32_t ctx, struct tcp_ep **out,
		   void *context)
{
	struct util_rdm_ep_attr attr = {
		.unexp_inline = 256,
		.peer_addr_len = sizeof(struct sockaddr_in6),
	};
	struct tcp_ep *ep;
	struct util_peer *peer;
	int ret;

	if (!info || !info->ep_attr ||
	    (info->ep_attr->type != FI_EP_RDM &&
	     info->ep_attr->type != FI_EP_MSG))
		return -FI_EINVAL;
	tcp_params_init();
	attr.inject_max = WEFT_MIN(tcp_params.eager_max, 4096);
	attr.atomic_max = tcp_atomic_max();
	attr.unexp_max = tcp_params.unexp_max;
	attr.connected = info->ep_attr->type == FI_EP_MSG;
	if (container_of(util_mr_domain_of(domain), struct tcp_domain, base)
		    ->addr_format ==
	    FI_SOCKADDR_IN)
		attr.peer_addr_len = sizeof(struct sockaddr_in);

	ep = calloc(1, sizeof(*ep));
	if (!ep)
		return -FI_ENOMEM;
	ep->type = info->ep_attr->type;
	ep->lfd = -1;
	ep->sep = sep;
	ep->ctx = (uint8_t)ctx;
	dlist_init(&ep->conns);
	dlist_init(&ep->closed);
	ep->domain = container_of(util_mr_domain_of(domain), struct tcp_domain,
				  base);
	ep->epfd = -1;
	ep->xp.ops = &tcp_transport;
	ep->xp.eager_max = tcp_params.eager_max;
	attr.xport = &ep->xp;
	attr.hooks = &tcp_ep_hooks;
	if (ep->type == FI_EP_RDM && tcp_params.shm) {
		attr.local_ops = &shm_local_ops;
		attr.local_via = "tcp";
	}
	ret = util_rdm_ep_init(&ep->rdm, domain, info, &attr, context);
	if (ret) {
		free(ep);
		return ret;
	}
	ep->rdm.base.ep_fid.fid.ops = &tcp_ep_fi_ops;
	ep->rdm.base.ep_fid.cm = &tcp_cm_ops;
	/*
	 * The domain's set lets one thread's progress serve every endpoint
	 * whose lock it can take.  A scalable endpoint's pair shares nothing
	 * with the other pairs, and an endpoint without a real lock
	 * (FI_THREAD_ENDPOINT, FI_THREAD_DOMAIN...) must not be served by
	 * another thread: each has a set of its own.
	 */
	ep->own_set = sep || !ep->rdm.base.own_lock.needed;
	ep->epfd = ep->own_set ? epoll_create1(EPOLL_CLOEXEC) :
				 ep->domain->epfd;
	if (ep->epfd < 0) {
		ret = -tcp_errno_fi(errno);
		goto err;
	}
	/* Pairs other than 0: the bell pair 0 rings when it hands one a
	 * connection, tagged as a listener would be. */
	if (sep && ctx) {
		struct epoll_event wev = { .events = EPOLLIN,
					   .data.ptr = lfd_tag(ep) };
		struct epoll_event pev = { .events = EPOLLIN,
					   .data.ptr = pair0_tag(sep) };

		int bell = util_rdm_inbox_bell(&sep->base, ctx);

		if (bell < 0) {
			ret = bell;
			goto err;
		}
		if (epoll_ctl(ep->epfd, EPOLL_CTL_ADD, bell, &wev) ||
		    /* Pair 0's set inside ours: whoever waits here wakes
		     * for a connection to accept, and accepts it. */
		    epoll_ctl(ep->epfd, EPOLL_CTL_ADD,
			      tcp_ep_of(sep->base.pair[0].ep)->epfd, &pev)) {
			ret = -tcp_errno_fi(errno);
			goto err;
		}
	}

	if (ep->type == FI_EP_RDM && sep && ctx) {
		/* Pair 0 listens for the scalable endpoint; the others say
		 * its address as theirs. */
		struct tcp_ep *first =
			tcp_ep_of(sep->base.pair[0].ep);

		ep->addr = first->addr;
		ep->addrlen = first->addrlen;
	} else if (ep->type == FI_EP_RDM) {
		ret = rdm_listen(ep, info);
		if (ret)
			goto err;
	} else {
		struct sockaddr_storage none = { 0 };

		ret = util_peer_add(&ep->rdm.peers, &none, 0, &peer);
		if (ret)
			goto err;
		ep->mpeer = tcp_peer_of(peer);
		ep->rdm.peers.fixed = peer;
		if (info->src_addr &&
		    info->src_addrlen <= sizeof(ep->src_addr) && !info->handle) {
			memcpy(&ep->src_addr, info->src_addr, info->src_addrlen);
			((struct sockaddr_in *)&ep->src_addr)->sin_port = 0;
			ep->src_addrlen = (socklen_t)info->src_addrlen;
		}
		if (info->handle) {
			ret = tcp_pep_claim(info->handle, ep);
			if (ret)
				goto err;
		}
	}
	*out = ep;
	return 0;

err:
	tcp_ep_close(&ep->rdm.base.ep_fid.fid);
	return ret;
}

int tcp_ep_open(struct fid_domain *domain_fid, struct fi_info *info,
		struct fid_ep **ep_fid, void *context)
{
	struct util_domain *domain =
		container_of(domain_fid, struct util_domain, domain_fid);
	struct tcp_ep *ep;
	int ret;

	ret = ep_make(domain, info, NULL, 0, &ep, context);
	if (ret)
		return ret;
	*ep_fid = &ep->rdm.base.ep_fid;
	return 0;
}

int tcp_pair_open(struct tcp_sep *sep, uint32_t ctx, struct tcp_ep **out)
{
	return ep_make(sep->base.domain, sep->base.info, sep, ctx, out, NULL);
}
