/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * tcp connections: non-blocking sockets, the ordered queue of what is to
 * be written, and the receive state machine that cuts the byte stream
 * into frames (tcp_proto.c checks every header) and places payloads.
 *
 * Receiving.  A connection reads into its staging buffer, many frames per
 * recv when they are small.  A frame header is parsed there; a small
 * payload is handled in place (TCP_RX_STAGE); a large one is read straight
 * into its destination (TCP_RX_PAYLOAD: a posted receive's buffer, a
 * registered region, a request's result buffer), after the bytes the
 * staging buffer already holds.  When the engine cannot take a message
 * now, the connection stops reading (rx_held) and offers it again at the
 * next progress: nothing is dropped, and later frames wait behind it.
 */
#include "tcp.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <unistd.h>

#include "weft/util_iov.h"

/* Frames handled per connection per progress call, so one busy peer
 * cannot starve the others. */
#define TCP_FRAMES_PER_READ 64

/* ---- file descriptors running out --------------------------------------- */

/*
 * A descriptor the process keeps in reserve (/dev/null), so that it can
 * still accept a connection to refuse it when it has no other left.
 * Taken by one listener at a time.
 */
static pthread_mutex_t fd_lock = PTHREAD_MUTEX_INITIALIZER;
static int fd_reserve = -1;
static uint64_t fd_warned_ms;
static unsigned long fd_refused;

void tcp_fd_reserve(void)
{
	pthread_mutex_lock(&fd_lock);
	if (fd_reserve < 0)
		fd_reserve = open("/dev/null", O_RDONLY | O_CLOEXEC);
	pthread_mutex_unlock(&fd_lock);
}

void tcp_fd_warn(int err, const char *what, bool accepting,
		 unsigned long refused)
{
	struct rlimit rl = { 0 };
	uint64_t now = weft_coarse_ms();
	char limit[96], then[128];

	pthread_mutex_lock(&fd_lock);
	fd_refused += refused;
	/* One line a second at most: the condition lasts. */
	if (fd_warned_ms && now - fd_warned_ms < 1000) {
		pthread_mutex_unlock(&fd_lock);
		return;
	}
	fd_warned_ms = now;
	refused = fd_refused;
	fd_refused = 0;
	pthread_mutex_unlock(&fd_lock);
	getrlimit(RLIMIT_NOFILE, &rl);
	if (err == ENFILE)
		snprintf(limit, sizeof(limit),
			 "the system's file table is full (ENFILE, fs.file-max)");
	else
		snprintf(limit, sizeof(limit),
			 "no file descriptor left (EMFILE: RLIMIT_NOFILE is "
			 "%llu, ulimit -n)",
			 (unsigned long long)rl.rlim_cur);
	if (accepting)
		snprintf(then, sizeof(then),
			 "%lu new peer connections refused with FI_EMFILE",
			 refused);
	else
		snprintf(then, sizeof(then),
			 "transmits to peers not connected yet fail with "
			 "FI_EMFILE");
	FI_WARN(&tcp_prov, FI_LOG_EP_CTRL,
		"%s: %s; %s, the open connections are served\n", what, limit,
		then);
}

/*
 * The process has no descriptor left for a connection waiting on lfd:
 * accept it with the reserve and refuse it (HELLO_ACK with FI_EMFILE, as
 * an RDM acceptor refuses at once: docs/tcp-protocol.md), so the peer
 * learns why now rather than at its connect timeout, and the listening
 * socket does not stay readable and spin progress.  Returns whether one
 * was refused.
 */
static bool accept_refuse(int lfd)
{
	uint8_t hdr[TCP_HDR_MAX], sink[512];
	size_t hl = tcp_put_hello_ack(hdr, FI_EMFILE, 0);
	bool done = false;
	int fd;

	pthread_mutex_lock(&fd_lock);
	if (fd_reserve >= 0) {
		close(fd_reserve);
		fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd >= 0) {
			(void)!send(fd, hdr, hl, MSG_NOSIGNAL | MSG_DONTWAIT);
			/* Read what came (its HELLO), so that the close
			 * sends a FIN after our answer rather than a reset
			 * that could overtake it. */
			while (recv(fd, sink, sizeof(sink), MSG_DONTWAIT) > 0)
				;
			close(fd);
			done = true;
		}
		fd_reserve = open("/dev/null", O_RDONLY | O_CLOEXEC);
	}
	pthread_mutex_unlock(&fd_lock);
	return done;
}

int tcp_sock_accept(int lfd, const char *who)
{
	unsigned long refused = 0;
	int fd, err;

	for (;;) {
		fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd >= 0) {
			tcp_sock_opts(fd);
			return fd;
		}
		err = errno;
		if (err == EINTR || err == ECONNABORTED)
			continue;
		if (err != EMFILE && err != ENFILE) {
			if (err != EAGAIN && err != EWOULDBLOCK)
				FI_WARN(&tcp_prov, FI_LOG_EP_CTRL,
					"%s: accept: %s\n", who,
					strerror(err));
			return -1;
		}
		/* Each waiting connection is refused, a bounded number. */
		while (refused < TCP_ACCEPT_BURST && accept_refuse(lfd))
			refused++;
		tcp_fd_warn(err, who, true, refused);
		return -1;
	}
}

void tcp_refused_warn(uint32_t status)
{
	static uint64_t warned_ms;
	static unsigned long count;
	uint64_t now = weft_coarse_ms();
	unsigned long n;

	/* One line a second at most, with the count since. */
	pthread_mutex_lock(&fd_lock);
	n = ++count;
	if (warned_ms && now - warned_ms < 1000) {
		pthread_mutex_unlock(&fd_lock);
		return;
	}
	warned_ms = now;
	count = 0;
	pthread_mutex_unlock(&fd_lock);
	FI_WARN(&tcp_prov, FI_LOG_EP_DATA,
		"%lu connection%s refused by peers: %s%s; transmits to them "
		"fail with it\n",
		n, n == 1 ? "" : "s", fi_strerror((int)status),
		status == FI_EMFILE ? " (the peer has no file descriptor left)" :
				      "");
}

void tcp_sock_opts(int fd)
{
	int one = 1;

	if (tcp_params.nodelay)
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

int tcp_errno_fi(int err)
{
	switch (err) {
	case ECONNREFUSED:
		return FI_ECONNREFUSED;
	case ETIMEDOUT:
		return FI_ETIMEDOUT;
	case EHOSTUNREACH:
	case ENETUNREACH:
		return FI_EHOSTUNREACH;
	case EPIPE:
	case ECONNRESET:
		return FI_ECONNRESET;
	default:
		return err > 0 && err < 256 ? err : FI_EIO;
	}
}

struct tcp_conn *tcp_conn_new(struct tcp_ep *ep, int epfd, int fd,
			      uint8_t state)
{
	struct tcp_conn *conn = calloc(1, sizeof(*conn));
	struct epoll_event ev = { 0 };

	if (!conn)
		return NULL;
	/* No staging buffer until bytes come (stage_take). */
	/* An endpoint's set is the domain's: once the fd is in it, another
	 * endpoint's progress may read its event and look for the owner. */
	conn->ep = ep;
	conn->fd = fd;
	conn->epfd = epfd;
	conn->state = state;
	conn->rx_state = TCP_RX_HDR;
	conn->handle.fclass = FI_CLASS_CONNREQ;
	dlist_init(&conn->outq);
	dlist_init(&conn->entry);
	conn->want_out = state == TCP_CONN_CONNECTING;
	ev.events = EPOLLIN | (conn->want_out ? EPOLLOUT : 0);
	ev.data.ptr = conn;
	if (epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev)) {
		free(conn);
		return NULL;
	}
	conn->deadline_ms = weft_coarse_ms() + (uint64_t)tcp_params.conn_timeout_ms;
	return conn;
}

/*
 * Close the oldest connection of list (struct tcp_conn.entry, oldest
 * first) that was accepted and still waits for its HELLO: an endpoint
 * that holds tcp_params.pending_max of them makes room so for one more.
 * A peer that connects and says nothing (or half a HELLO) holds one
 * socket until its handshake times out or newer ones push it out,
 * whatever their number.
 */
void tcp_pending_evict(struct dlist_entry *list)
{
	struct tcp_conn *conn;
	struct dlist_entry *e;

	dlist_foreach(list, e) {
		conn = container_of(e, struct tcp_conn, entry);
		if (conn->state != TCP_CONN_ACCEPTED)
			continue;
		FI_INFO(&tcp_prov, FI_LOG_EP_CTRL,
			"%d connections wait for a HELLO: the oldest is "
			"closed\n", tcp_params.pending_max);
		tcp_conn_close(conn, FI_ETIMEDOUT);
		return;
	}
}

/* Move a connection to another epoll set (a passive endpoint's to an
 * endpoint's). */
int tcp_conn_move(struct tcp_conn *conn, int epfd)
{
	struct epoll_event ev = {
		.events = EPOLLIN | (conn->want_out ? EPOLLOUT : 0),
		.data.ptr = conn,
	};

	if (conn->fd < 0)
		return -FI_ENOTCONN;
	epoll_ctl(conn->epfd, EPOLL_CTL_DEL, conn->fd, NULL);
	if (epoll_ctl(epfd, EPOLL_CTL_ADD, conn->fd, &ev))
		return -errno;
	conn->epfd = epfd;
	return 0;
}

int tcp_conn_watch(struct tcp_conn *conn, bool want_out)
{
	struct epoll_event ev = {
		.events = EPOLLIN | (want_out ? EPOLLOUT : 0),
		.data.ptr = conn,
	};

	if (conn->want_out == want_out || conn->fd < 0)
		return 0;
	conn->want_out = want_out;
	return epoll_ctl(conn->epfd, EPOLL_CTL_MOD, conn->fd, &ev) ? -errno : 0;
}

struct tcp_out *tcp_out_new(size_t copy_len)
{
	struct tcp_out *out = malloc(sizeof(*out) + copy_len);

	if (!out)
		return NULL;
	out->total = out->sent = 0;
	out->iov_count = 0;
	out->tx = NULL;
	out->copy = copy_len ? (char *)(out + 1) : NULL;
	return out;
}

void tcp_conn_queue(struct tcp_conn *conn, struct tcp_out *out)
{
	size_t i;

	out->total = 0;
	for (i = 0; i < out->iov_count; i++)
		out->total += out->iov[i].iov_len;
	dlist_insert_tail(&out->entry, &conn->outq);
}

static void out_done(struct tcp_conn *conn, struct tcp_out *out, int err)
{
	dlist_remove(&out->entry);
	if (out->tx && conn->ep)
		util_rdm_tx_done(&conn->ep->rdm, out->tx, err);
	free(out);
}

int tcp_conn_flush(struct tcp_conn *conn)
{
	struct iovec iov[UTIL_RDM_IOV_MAX * 2 + 2];
	struct msghdr mh = { .msg_iov = iov };
	struct tcp_out *out;
	ssize_t n;

	if (conn->state == TCP_CONN_CLOSED || conn->state == TCP_CONN_CONNECTING)
		return 0;
	while (!dlist_empty(&conn->outq)) {
		out = container_of(conn->outq.next, struct tcp_out, entry);
		mh.msg_iovlen = util_iov_slice(out->iov, out->iov_count,
					       out->sent,
					       out->total - out->sent, iov);
		n = sendmsg(conn->fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n < 0) {
			if (errno == EAGAIN || errno == EWOULDBLOCK) {
				tcp_conn_watch(conn, true);
				return 0;
			}
			if (errno == EINTR)
				continue;
			tcp_conn_close(conn, tcp_errno_fi(errno));
			return -FI_ECONNRESET;
		}
		out->sent += (size_t)n;
		if (out->sent < out->total) {
			tcp_conn_watch(conn, true);
			return 0;
		}
		out_done(conn, out, 0);
	}
	tcp_conn_watch(conn, false);
	tcp_conn_drained(conn);
	return 0;
}

/*
 * Write hdr then iov now, as much as the socket takes.  Returns 0 when all
 * of it went, or was partly written and the rest copied into the queue
 * (the caller's buffers are free either way), -FI_EAGAIN when nothing
 * could be written, or an error (the connection closed).
 */
int tcp_conn_write_copy(struct tcp_conn *conn, const void *hdr,
			size_t hdr_len, const struct iovec *iov, size_t count,
			size_t len)
{
	struct iovec v[UTIL_RDM_IOV_MAX * 2 + 1];
	struct msghdr mh = { .msg_iov = v, .msg_iovlen = count + 1 };
	size_t total = hdr_len + len, left;
	struct tcp_out *out;
	ssize_t n;

	v[0].iov_base = (void *)hdr;
	v[0].iov_len = hdr_len;
	memcpy(v + 1, iov, count * sizeof(*iov));
	do {
		n = sendmsg(conn->fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
	} while (n < 0 && errno == EINTR);
	if (weft_likely((size_t)n == total))
		return 0;
	if (n < 0) {
		if (errno == EAGAIN || errno == EWOULDBLOCK) {
			tcp_conn_watch(conn, true);
			return -FI_EAGAIN;
		}
		n = -tcp_errno_fi(errno);
		tcp_conn_close(conn, (int)-n);
		return (int)n;
	}
	/* Partly written: the rest waits in a copy of its own. */
	left = total - (size_t)n;
	out = tcp_out_new(left);
	if (!out) {
		tcp_conn_close(conn, FI_ENOMEM);
		return -FI_ENOMEM;
	}
	util_iov_copy_from(out->copy, v, count + 1, (size_t)n, left);
	out->iov[0].iov_base = out->copy;
	out->iov[0].iov_len = left;
	out->iov_count = 1;
	tcp_conn_queue(conn, out);
	tcp_conn_watch(conn, true);
	return 0;
}

/*
 * A connection of ours reset before its HELLO_ACK was read: an acceptor
 * that refused it at once (tcp_sock_accept) may have said why before it
 * closed, and the reset overtook our reading it.  Its status, or err.
 */
static inline size_t staged(const struct tcp_conn *conn);

static int refusal_of(struct tcp_conn *conn, int err)
{
	struct tcp_proto_limits lim = {
		.allowed_ops = TCP_OPBIT(TCP_OP_HELLO_ACK),
	};
	uint8_t buf[TCP_HDR_MAX];
	struct tcp_frame f;
	const char *why;
	ssize_t n;

	if (!conn->outgoing || (conn->state != TCP_CONN_HELLO &&
				!(conn->state == TCP_CONN_OPEN && conn->await_ack)))
		return err;
	if (conn->rend > conn->rstart) {
		n = (ssize_t)WEFT_MIN(staged(conn), sizeof(buf));
		memcpy(buf, conn->rbuf + conn->rstart, (size_t)n);
	} else {
		n = recv(conn->fd, buf, sizeof(buf), MSG_DONTWAIT);
	}
	if (n <= 0 || tcp_frame_parse(buf, (size_t)n, &lim, &f, &why) <= 0 ||
	    !f.hello_ack.status)
		return err;
	conn->refused = true;
	tcp_refused_warn(f.hello_ack.status);
	return (int)f.hello_ack.status;
}

void tcp_conn_close(struct tcp_conn *conn, int err)
{
	struct tcp_out *out;

	if (conn->state == TCP_CONN_CLOSED)
		return;
	if (err == FI_ECONNRESET && conn->fd >= 0)
		err = refusal_of(conn, err);
	conn->prev_state = conn->state;
	conn->state = TCP_CONN_CLOSED;
	conn->error = err;
	if (conn->fd >= 0) {
		epoll_ctl(conn->epfd, EPOLL_CTL_DEL, conn->fd, NULL);
		close(conn->fd);
		conn->fd = -1;
	}
	while (!dlist_empty(&conn->outq)) {
		out = container_of(conn->outq.next, struct tcp_out, entry);
		out_done(conn, out, err ? err : FI_ECONNRESET);
	}
	tcp_rx_abort(conn, err ? err : FI_ECONNRESET);
	tcp_conn_lost(conn);
}

void tcp_conn_free(struct tcp_conn *conn)
{
	tcp_conn_close(conn, FI_ECANCELED);
	free(conn->rbuf);
	free(conn);
}

/* ---- receiving ---------------------------------------------------------- */

static inline size_t staged(const struct tcp_conn *conn)
{
	return conn->rend - conn->rstart;
}

/*
 * The staging buffer is the connection's only while bytes are staged in
 * it: a connection with nothing staged gives it to its endpoint's spares
 * (stage_idle), and takes a spare back, or a small new one, when bytes
 * come (stage_take).  An idle connection holds no buffer, and up to
 * TCP_STAGE_SPARES busy at once swap a pointer per read, never allocate.
 * Under the endpoint's lock, like every read; a passive endpoint's
 * connections (no endpoint yet) keep theirs.
 */
static bool stage_take(struct tcp_conn *conn)
{
	struct tcp_ep *ep = conn->ep;

	if (weft_likely(conn->rbuf))
		return true;
	if (ep && ep->nstage_spare) {
		unsigned int i = --ep->nstage_spare;

		conn->rbuf = ep->stage_spare[i].buf;
		conn->rbuf_size = ep->stage_spare[i].size;
	} else {
		conn->rbuf = malloc(TCP_STAGE_MIN);
		if (!conn->rbuf)
			return false;
		conn->rbuf_size = TCP_STAGE_MIN;
	}
	conn->rstart = conn->rend = 0;
	return true;
}

static void stage_idle(struct tcp_conn *conn)
{
	struct tcp_ep *ep = conn->ep;

	/* A frame being staged or handed over keeps its place. */
	if (!conn->rbuf || conn->rstart != conn->rend || !ep ||
	    conn->rx_state == TCP_RX_STAGE || conn->rx_state == TCP_RX_HANDOFF)
		return;
	if (ep->nstage_spare < TCP_STAGE_SPARES) {
		ep->stage_spare[ep->nstage_spare].buf = conn->rbuf;
		ep->stage_spare[ep->nstage_spare].size = conn->rbuf_size;
		ep->nstage_spare++;
	} else {
		/* The larger stays spare: the last slot's if it is smaller. */
		unsigned int i = TCP_STAGE_SPARES - 1;

		if (ep->stage_spare[i].size < conn->rbuf_size) {
			free(ep->stage_spare[i].buf);
			ep->stage_spare[i].buf = conn->rbuf;
			ep->stage_spare[i].size = conn->rbuf_size;
		} else {
			free(conn->rbuf);
		}
	}
	conn->rbuf = NULL;
	conn->rbuf_size = conn->rstart = conn->rend = 0;
}

/* Grow the staging buffer to the full size (a frame needs it, or reads
 * fill it: the connection is busy).  false: no memory. */
static bool stage_grow(struct tcp_conn *conn)
{
	char *b;

	if (conn->rbuf_size >= tcp_params.staging)
		return true;
	b = realloc(conn->rbuf, tcp_params.staging);
	if (!b)
		return false;
	conn->rbuf = b;
	conn->rbuf_size = tcp_params.staging;
	return true;
}

/* Make room for want bytes from rstart on: move the staged bytes to the
 * front when they do not fit behind it. */
static void stage_room(struct tcp_conn *conn, size_t want)
{
	if (weft_unlikely(!conn->rbuf) && !stage_take(conn))
		return;
	if (want > conn->rbuf_size - TCP_HDR_MAX && !stage_grow(conn))
		return;
	if (conn->rstart && conn->rbuf_size - conn->rstart < want) {
		memmove(conn->rbuf, conn->rbuf + conn->rstart, staged(conn));
		conn->rend -= conn->rstart;
		conn->rstart = 0;
	}
	if (conn->rstart == conn->rend)
		conn->rstart = conn->rend = 0;
}

/*
 * recv into the staging buffer.  Returns bytes read (> 0), 0 when nothing
 * is there, or -1 when the connection closed (it has been closed here).
 * *full: the read filled what was offered (more may be waiting).
 */
static ssize_t stage_fill(struct tcp_conn *conn, bool *full)
{
	size_t room = conn->rbuf_size - conn->rend;
	ssize_t n;

	if (weft_unlikely(!room)) {
		/* Only when memory to grow the buffer ran out. */
		*full = false;
		return 0;
	}

	do {
		n = recv(conn->fd, conn->rbuf + conn->rend, room, MSG_DONTWAIT);
	} while (n < 0 && errno == EINTR);
	if (n > 0) {
		conn->rend += (size_t)n;
		*full = (size_t)n == room;
		if (*full)
			stage_grow(conn);
		return n;
	}
	if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
		return 0;
	tcp_conn_close(conn, n ? tcp_errno_fi(errno) : 0);
	return -1;
}

static uint32_t allowed_ops(const struct tcp_conn *conn)
{
	switch (conn->state) {
	case TCP_CONN_OPEN:
		/* An RDM connection sends from HELLO on, but its first
		 * frame in must be the answer to it. */
		return conn->await_ack ? TCP_OPBIT(TCP_OP_HELLO_ACK) :
					 TCP_OPS_DATA;
	case TCP_CONN_ACCEPTED:
		return TCP_OPBIT(TCP_OP_HELLO);
	case TCP_CONN_HELLO:
		return TCP_OPBIT(TCP_OP_HELLO_ACK);
	default:
		return 0;
	}
}

/* Whether registered memory the payload lands in may still be written. */
static inline void payload_check(struct tcp_conn *conn)
{
	if (weft_unlikely(conn->rx_map &&
			  util_mr_map_gen(conn->rx_map) != conn->rx_map_gen))
		tcp_rx_recheck(conn);
}

/* Copy staged bytes into the payload's destination (or drop them). */
static void payload_from_stage(struct tcp_conn *conn)
{
	size_t take = WEFT_MIN(staged(conn), conn->rx_left);

	if (!take)
		return;
	payload_check(conn);
	if (conn->rx_drop < conn->rx_left) {
		size_t use = WEFT_MIN(take, conn->rx_left - conn->rx_drop);

		util_iov_copy_to(conn->rx_iov, conn->rx_iov_count, 0,
				 conn->rbuf + conn->rstart, use);
		util_iov_advance(conn->rx_iov, &conn->rx_iov_count, use);
	}
	conn->rstart += take;
	conn->rx_left -= take;
	if (conn->rx_drop > conn->rx_left)
		conn->rx_drop = conn->rx_left;
}

/* Read payload bytes straight into the destination; -1: closed. */
static ssize_t payload_read(struct tcp_conn *conn)
{
	size_t want;
	ssize_t n;

	payload_check(conn);
	want = conn->rx_left - conn->rx_drop;

	if (!want) {
		/* Only dropped bytes are left: read them through staging. */
		bool full;

		stage_take(conn);
		stage_room(conn, conn->rbuf_size);
		n = stage_fill(conn, &full);
		if (n > 0)
			payload_from_stage(conn);
		return n;
	}
	do {
		n = readv(conn->fd, conn->rx_iov,
			  (int)WEFT_MIN(conn->rx_iov_count, (size_t)IOV_MAX));
	} while (n < 0 && errno == EINTR);
	if (n > 0) {
		size_t got = WEFT_MIN((size_t)n, want);

		util_iov_advance(conn->rx_iov, &conn->rx_iov_count, got);
		conn->rx_left -= got;
		conn->rx_dry = false;
		return n;
	}
	if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
		/* A large payload still to come: wait for epoll to say. */
		conn->rx_dry = conn->rx_left >= TCP_DRY_MIN;
		return 0;
	}
	tcp_conn_close(conn, n ? tcp_errno_fi(errno) : 0);
	return -1;
}

/*
 * Prepare to receive `len` payload bytes into iov (count entries), keeping
 * only the first `keep` of them (the rest is dropped: truncation, or
 * nowhere to put them).  done runs when they are all read.
 */
void tcp_rx_into(struct tcp_conn *conn, const struct iovec *iov, size_t count,
		 size_t keep, size_t len, void (*done)(struct tcp_conn *))
{
	size_t n = 0;

	if (keep)
		n = util_iov_slice(iov, count, 0, keep, conn->rx_iov);
	conn->rx_iov_count = n;
	conn->rx_left = len;
	conn->rx_drop = len - keep;
	conn->rx_map = NULL;
	conn->rx_done = done;
	conn->rx_state = TCP_RX_PAYLOAD;
}

static int conn_read_frames(struct tcp_conn *conn);

int tcp_conn_read(struct tcp_conn *conn)
{
	int ret = conn_read_frames(conn);

	if (ret >= 0)
		stage_idle(conn);
	return ret;
}

static int conn_read_frames(struct tcp_conn *conn)
{
	struct tcp_proto_limits lim = { .max_payload = tcp_params.max_msg };
	int events = 0, frames = 0;
	bool more = true, full = false;
	const char *why;
	ssize_t n;
	int ret;

	while (conn->state != TCP_CONN_CLOSED && frames < TCP_FRAMES_PER_READ) {
		switch (conn->rx_state) {
		case TCP_RX_HDR:
			if (staged(conn)) {
				lim.allowed_ops = allowed_ops(conn);
				n = tcp_frame_parse(conn->rbuf + conn->rstart,
						    staged(conn), &lim,
						    &conn->frame, &why);
				if (n < 0) {
					/* A HELLO we cannot take is answered,
					 * as best we can, before the close
					 * (docs/tcp-protocol.md, Versioning). */
					if (conn->state == TCP_CONN_ACCEPTED &&
					    (uint8_t)conn->rbuf[conn->rstart] ==
						    TCP_OP_HELLO)
						tcp_send_hello_ack(conn,
								   FI_EPROTO,
								   NULL, 0);
					tcp_proto_error(conn, why);
					return -1;
				}
				if (n > 0) {
					conn->rstart += (size_t)n;
					frames++;
					events++;
					ret = tcp_frame_start(conn);
					if (ret < 0)
						return -1;
					continue;
				}
			}
			break;
		case TCP_RX_STAGE:
			if (staged(conn) >= conn->stage_need) {
				/* The handler consumes what it used and sets
				 * the next state. */
				ret = tcp_frame_staged(conn);
				if (ret == -FI_EAGAIN) {
					conn->rx_held = true;
					return events;
				}
				conn->rx_held = false;
				if (ret < 0)
					return -1;
				continue;
			}
			stage_room(conn, conn->stage_need);
			break;
		case TCP_RX_WAIT:
		case TCP_RX_HANDOFF:
			return events;
		case TCP_RX_PAYLOAD:
			payload_from_stage(conn);
			if (!conn->rx_left) {
				conn->rx_state = TCP_RX_HDR;
				conn->rx_dry = false;
				conn->rx_done(conn);
				continue;
			}
			if (!more)
				return events;
			n = payload_read(conn);
			if (n < 0)
				return -1;
			if (n == 0)
				return events;
			continue;
		}
		/* The frame needs bytes not read yet. */
		if (!more)
			return events;
		stage_room(conn, TCP_HDR_MAX);
		n = stage_fill(conn, &full);
		if (n < 0)
			return -1;
		if (n == 0)
			return events;
		/* A short read emptied the socket: parse what came, then
		 * stop rather than pay a recv that finds nothing. */
		more = full;
	}
	return events;
}
