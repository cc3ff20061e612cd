/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * tcp passive endpoints (fi_cm(3)): fi_listen, FI_CONNREQ, fi_reject.
 *
 * A passive endpoint accepts sockets and reads each one's HELLO; its
 * private data goes out in an FI_CONNREQ event whose info->handle is the
 * connection.  fi_endpoint with that info moves the connection to the new
 * endpoint, whose fi_accept answers HELLO_ACK; fi_reject answers with a
 * refusal and closes it.  The work is done by the EQ's progress (the
 * application reading the EQ), and the listening socket's readiness wakes
 * fi_eq_sread.
 */
#include "tcp.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>


static void pep_drop(struct tcp_conn *conn)
{
	dlist_remove(&conn->entry);
	tcp_conn_free(conn);
}

/* Accepted connections that have not said HELLO yet. */
static int pep_npending(struct tcp_pep *pep)
{
	struct dlist_entry *e;
	int n = 0;

	dlist_foreach(&pep->pending, e)
		n += container_of(e, struct tcp_conn, entry)->state ==
		     TCP_CONN_ACCEPTED;
	return n;
}

/* As an RDM endpoint does (ep_accept): a bounded number per call, and at
 * most tcp_params.pending_max waiting for their HELLO. */
static void pep_accept(struct tcp_pep *pep)
{
	struct tcp_conn *conn;
	int fd, i, npending = pep_npending(pep);

	for (i = 0; i < TCP_ACCEPT_BURST; i++) {
		fd = tcp_sock_accept(pep->lfd, "passive endpoint");
		if (fd < 0)
			return;
		if (npending >= tcp_params.pending_max)
			tcp_pending_evict(&pep->pending);
		else
			npending++;
		conn = tcp_conn_new(NULL, pep->epfd, fd, TCP_CONN_ACCEPTED);
		if (!conn) {
			close(fd);
			continue;
		}
		conn->pep = pep;
		dlist_insert_tail(&conn->entry, &pep->pending);
	}
}

void tcp_pep_connreq(struct tcp_pep *pep, struct tcp_conn *conn)
{
	struct sockaddr_storage peer, local;
	socklen_t plen = sizeof(peer), llen = sizeof(local);
	bool have_peer, have_local;

	have_peer = !getpeername(conn->fd, (struct sockaddr *)&peer, &plen);
	have_local = !getsockname(conn->fd, (struct sockaddr *)&local, &llen);
	if (util_pep_connreq(&pep->util, &conn->handle,
			     have_peer ? (struct sockaddr *)&peer : NULL,
			     have_local ? (struct sockaddr *)&local : NULL,
			     conn->cm_data, conn->cm_len)) {
		tcp_send_hello_ack(conn, FI_ENOMEM, NULL, 0);
		tcp_conn_close(conn, FI_ENOMEM);
		return;
	}
	conn->reported = true;
}

static void pep_progress(struct util_pep *upep)
{
	struct tcp_pep *pep = tcp_pep_of(upep);
	struct epoll_event ev[16];
	struct dlist_entry *e, *tmp;
	int i, k;

	k = epoll_wait(pep->epfd, ev, 16, 0);
	for (i = 0; i < k; i++) {
		struct tcp_conn *conn = ev[i].data.ptr;

		if (ev[i].data.ptr == &pep->lfd) {
			pep_accept(pep);
			continue;
		}
		if (ev[i].events & EPOLLOUT)
			tcp_conn_flush(conn);
		if (conn->state != TCP_CONN_CLOSED)
			tcp_conn_read(conn);
	}
	/* Connections that went away before anyone heard of them, or that
	 * never said hello in time. */
	dlist_foreach_safe(&pep->pending, e, tmp) {
		struct tcp_conn *conn = container_of(e, struct tcp_conn, entry);

		if (conn->state == TCP_CONN_ACCEPTED &&
		    weft_coarse_ms() > conn->deadline_ms)
			tcp_conn_close(conn, FI_ETIMEDOUT);
		if (conn->state == TCP_CONN_CLOSED && !conn->reported)
			pep_drop(conn);
	}
}

int tcp_pep_claim(fid_t handle, struct tcp_ep *ep)
{
	struct tcp_conn *conn;
	struct tcp_pep *pep;
	int ret;

	if (!handle || handle->fclass != FI_CLASS_CONNREQ)
		return -FI_EINVAL;
	conn = container_of(handle, struct tcp_conn, handle);
	pep = conn->pep;
	if (!pep)
		return -FI_EINVAL;
	pthread_mutex_lock(&pep->util.lock);
	dlist_remove(&conn->entry);
	conn->pep = NULL;
	pthread_mutex_unlock(&pep->util.lock);
	/* Named before it enters the domain's set, where the progress of
	 * the domain's other endpoints looks for its owner. */
	conn->ep = ep;
	conn->peer = ep->mpeer;
	ret = conn->fd >= 0 ? tcp_conn_move(conn, ep->epfd) : 0;
	dlist_insert_tail(&conn->entry, &ep->conns);
	ep->conn = conn;
	ep->mpeer->conn = conn;
	return ret;
}

/* ---- the passive endpoint's own part (weft/util_pep.h) ------------------ */

static void pep_close(struct util_pep *upep)
{
	struct tcp_pep *pep = tcp_pep_of(upep);

	while (!dlist_empty(&pep->pending))
		pep_drop(container_of(pep->pending.next, struct tcp_conn,
				      entry));
	if (pep->lfd >= 0)
		close(pep->lfd);
	if (pep->epfd >= 0)
		close(pep->epfd);
	free(pep);
}

static int pep_local(struct util_pep *upep, struct sockaddr_storage *sa)
{
	socklen_t len = sizeof(*sa);

	if (getsockname(tcp_pep_of(upep)->lfd, (struct sockaddr *)sa, &len))
		return -tcp_errno_fi(errno);
	return 0;
}

static int pep_bind_addr(struct util_pep *upep,
			 const struct sockaddr_storage *sa, size_t len)
{
	struct tcp_pep *pep = tcp_pep_of(upep);
	int fd, one = 1;

	fd = socket(sa->ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC,
		    0);
	if (fd < 0)
		return -tcp_errno_fi(errno);
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (const struct sockaddr *)sa,
		 (socklen_t)tcp_sockaddr_len(sa))) {
		int err = errno;

		close(fd);
		return -tcp_errno_fi(err);
	}
	if (pep->lfd >= 0)
		close(pep->lfd);
	pep->lfd = fd;
	return 0;
}

static int pep_listen(struct util_pep *upep)
{
	struct tcp_pep *pep = tcp_pep_of(upep);
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = &pep->lfd };

	tcp_fd_reserve();
	if (listen(pep->lfd, 1024) ||
	    epoll_ctl(pep->epfd, EPOLL_CTL_ADD, pep->lfd, &ev))
		return -tcp_errno_fi(errno);
	return 0;
}

static int pep_reject(struct util_pep *upep, fid_t handle, const void *param,
		      size_t paramlen)
{
	struct tcp_pep *pep = tcp_pep_of(upep);
	struct tcp_conn *conn;
	struct pollfd pfd;
	int i;

	conn = container_of(handle, struct tcp_conn, handle);
	if (conn->pep != pep)
		return -FI_EINVAL;
	pthread_mutex_lock(&upep->lock);
	if (conn->state == TCP_CONN_CMWAIT) {
		tcp_send_hello_ack(conn, FI_ECONNREFUSED, param, paramlen);
		/* Let the refusal leave before the socket closes (bounded:
		 * a peer that reads nothing cannot hold us). */
		for (i = 0; i < 20 && conn->fd >= 0 &&
			    !dlist_empty(&conn->outq); i++) {
			pfd.fd = conn->fd;
			pfd.events = POLLOUT;
			poll(&pfd, 1, 5);
			tcp_conn_flush(conn);
		}
	}
	pep_drop(conn);
	pthread_mutex_unlock(&upep->lock);
	return 0;
}

static const struct util_pep_ops tcp_pep_ops = {
	.progress = pep_progress,
	.bind = pep_bind_addr,
	.local = pep_local,
	.listen = pep_listen,
	.reject = pep_reject,
	.close = pep_close,
	.cm_data_max = TCP_CM_DATA_MAX,
};

int tcp_cm_getopt(int level, int optname, void *optval, size_t *optlen)
{
	return util_cm_getopt(level, optname, optval, optlen, TCP_CM_DATA_MAX);
}

int tcp_passive_ep(struct fid_fabric *fabric, struct fi_info *info,
		   struct fid_pep **pep_fid, void *context)
{
	struct tcp_pep *pep;
	int ret;

	pep = calloc(1, sizeof(*pep));
	if (!pep)
		return -FI_ENOMEM;
	pep->lfd = -1;
	dlist_init(&pep->pending);
	ret = util_pep_init(&pep->util, info, &tcp_pep_ops, context);
	if (ret) {
		free(pep);
		return ret;
	}
	pep->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (pep->epfd < 0) {
		ret = -tcp_errno_fi(errno);
		util_pep_close(&pep->util.pep_fid.fid);
		return ret;
	}
	return util_pep_start(&pep->util, pep->epfd, pep_fid);
}
