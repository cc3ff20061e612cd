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

#include "weft/stubs.h"

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
		fd = accept4(pep->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			return;
		}
		tcp_sock_opts(fd);
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
	struct sockaddr_storage sa;
	socklen_t len = sizeof(sa);
	struct fi_info *info;

	if (!pep->eq)
		goto refuse;
	info = weft_info_dup(pep->info);
	if (!info)
		goto refuse;
	info->handle = &conn->handle;
	free(info->dest_addr);
	info->dest_addr = NULL;
	info->dest_addrlen = 0;
	if (!getpeername(conn->fd, (struct sockaddr *)&sa, &len)) {
		info->dest_addr = malloc(len);
		if (info->dest_addr) {
			memcpy(info->dest_addr, &sa, len);
			info->dest_addrlen = len;
		}
	}
	len = sizeof(sa);
	if (!getsockname(conn->fd, (struct sockaddr *)&sa, &len)) {
		free(info->src_addr);
		info->src_addr = malloc(len);
		info->src_addrlen = info->src_addr ? len : 0;
		if (info->src_addr)
			memcpy(info->src_addr, &sa, len);
	}
	if (util_eq_write_cm(pep->eq, FI_CONNREQ, &pep->pep_fid.fid, info,
			     conn->cm_data, conn->cm_len) < 0) {
		weft_info_free_list(info);
		goto refuse;
	}
	conn->reported = true;
	return;
refuse:
	tcp_send_hello_ack(conn, FI_ENOMEM, NULL, 0);
	tcp_conn_close(conn, FI_ENOMEM);
}

static void pep_progress(struct util_progress *p)
{
	struct tcp_pep *pep = container_of(p, struct tcp_pep, cm_progress);
	struct epoll_event ev[16];
	struct dlist_entry *e, *tmp;
	int i, k;

	pthread_mutex_lock(&pep->lock);
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
		    tcp_now_ms() > conn->deadline_ms)
			tcp_conn_close(conn, FI_ETIMEDOUT);
		if (conn->state == TCP_CONN_CLOSED && !conn->reported)
			pep_drop(conn);
	}
	pthread_mutex_unlock(&pep->lock);
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
	pthread_mutex_lock(&pep->lock);
	dlist_remove(&conn->entry);
	conn->pep = NULL;
	pthread_mutex_unlock(&pep->lock);
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

/* ---- fid ops ------------------------------------------------------------ */

static int pep_close(struct fid *fid)
{
	struct tcp_pep *pep = container_of(fid, struct tcp_pep, pep_fid.fid);

	if (pep->eq) {
		util_eq_unbind_cm(pep->eq, &pep->cm_progress, pep->epfd);
		util_eq_put(pep->eq);
	}
	while (!dlist_empty(&pep->pending))
		pep_drop(container_of(pep->pending.next, struct tcp_conn,
				      entry));
	if (pep->lfd >= 0)
		close(pep->lfd);
	close(pep->epfd);
	weft_info_free_list(pep->info);
	pthread_mutex_destroy(&pep->lock);
	free(pep);
	return 0;
}

static int pep_bind(struct fid *fid, struct fid *bfid, uint64_t flags)
{
	struct tcp_pep *pep = container_of(fid, struct tcp_pep, pep_fid.fid);

	return util_eq_bind_cm(&pep->eq, bfid, &pep->cm_progress, pep_progress,
			       pep->epfd, pep);
}

static struct fi_ops pep_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = pep_close,
	.bind = pep_bind,
	.control = weft_no_control,
	.ops_open = weft_no_ops_open,
	.tostr = weft_no_tostr,
	.ops_set = weft_no_ops_set,
};

static int pep_getname(fid_t fid, void *addr, size_t *addrlen)
{
	struct tcp_pep *pep = container_of(fid, struct tcp_pep, pep_fid.fid);
	struct sockaddr_storage sa;
	socklen_t len = sizeof(sa);

	if (!addrlen)
		return -FI_EINVAL;
	if (getsockname(pep->lfd, (struct sockaddr *)&sa, &len))
		return -tcp_errno_fi(errno);
	if (!addr || *addrlen < len) {
		*addrlen = len;
		return -FI_ETOOSMALL;
	}
	memcpy(addr, &sa, len);
	*addrlen = len;
	return 0;
}

static int pep_setname(fid_t fid, void *addr, size_t addrlen)
{
	struct tcp_pep *pep = container_of(fid, struct tcp_pep, pep_fid.fid);
	struct sockaddr_storage sa = { 0 };
	int fd, one = 1;

	if (!addr || addrlen < sizeof(struct sockaddr_in) ||
	    addrlen > sizeof(sa))
		return -FI_EINVAL;
	if (pep->listening)
		return -FI_EOPBADSTATE;
	memcpy(&sa, addr, addrlen);
	if (sa.ss_family != AF_INET && sa.ss_family != AF_INET6)
		return -FI_EINVAL;
	fd = socket(sa.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -tcp_errno_fi(errno);
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&sa, (socklen_t)tcp_sockaddr_len(&sa))) {
		int err = errno;

		close(fd);
		return -tcp_errno_fi(err);
	}
	if (pep->lfd >= 0)
		close(pep->lfd);
	pep->lfd = fd;
	return 0;
}

static int pep_listen(struct fid_pep *pep_fid)
{
	struct tcp_pep *pep = container_of(pep_fid, struct tcp_pep, pep_fid);
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = &pep->lfd };

	if (!pep->eq)
		return -FI_ENOEQ;
	if (pep->listening)
		return 0;
	if (listen(pep->lfd, 1024) ||
	    epoll_ctl(pep->epfd, EPOLL_CTL_ADD, pep->lfd, &ev))
		return -tcp_errno_fi(errno);
	pep->listening = true;
	return 0;
}

static int pep_reject(struct fid_pep *pep_fid, fid_t handle, const void *param,
		      size_t paramlen)
{
	struct tcp_pep *pep = container_of(pep_fid, struct tcp_pep, pep_fid);
	struct tcp_conn *conn;
	struct pollfd pfd;
	int i;

	if (!handle || handle->fclass != FI_CLASS_CONNREQ ||
	    paramlen > TCP_CM_DATA_MAX || (paramlen && !param))
		return -FI_EINVAL;
	conn = container_of(handle, struct tcp_conn, handle);
	if (conn->pep != pep)
		return -FI_EINVAL;
	pthread_mutex_lock(&pep->lock);
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
	pthread_mutex_unlock(&pep->lock);
	return 0;
}

static struct fi_ops_cm pep_cm_ops = {
	.size = sizeof(struct fi_ops_cm),
	.setname = pep_setname,
	.getname = pep_getname,
	.getpeer = weft_no_getpeer,
	.connect = weft_no_connect,
	.listen = pep_listen,
	.accept = weft_no_accept,
	.reject = pep_reject,
	.shutdown = weft_no_shutdown,
	.join = weft_no_join,
};

int tcp_cm_getopt(int level, int optname, void *optval, size_t *optlen)
{
	return util_cm_getopt(level, optname, optval, optlen, TCP_CM_DATA_MAX);
}

static int pep_getopt(fid_t fid, int level, int optname, void *optval,
		      size_t *optlen)
{
	return tcp_cm_getopt(level, optname, optval, optlen);
}

static int pep_setopt(fid_t fid, int level, int optname, const void *optval,
		      size_t optlen)
{
	return -FI_ENOPROTOOPT;
}

static struct fi_ops_ep pep_ep_ops = {
	.size = sizeof(struct fi_ops_ep),
	.cancel = weft_no_cancel,
	.getopt = pep_getopt,
	.setopt = pep_setopt,
	.tx_ctx = weft_no_tx_ctx,
	.rx_ctx = weft_no_rx_ctx,
	.rx_size_left = weft_no_size_left,
	.tx_size_left = weft_no_size_left,
};

int tcp_passive_ep(struct fid_fabric *fabric, struct fi_info *info,
		   struct fid_pep **pep_fid, void *context)
{
	struct sockaddr_in any = { .sin_family = AF_INET };
	struct tcp_pep *pep;
	int ret;

	if (!info || !info->ep_attr || info->ep_attr->type != FI_EP_MSG)
		return -FI_EINVAL;
	pep = calloc(1, sizeof(*pep));
	if (!pep)
		return -FI_ENOMEM;
	pep->lfd = -1;
	dlist_init(&pep->pending);
	pthread_mutex_init(&pep->lock, NULL);
	pep->pep_fid.fid.fclass = FI_CLASS_PEP;
	pep->pep_fid.fid.context = context;
	pep->pep_fid.fid.ops = &pep_fi_ops;
	pep->pep_fid.cm = &pep_cm_ops;
	pep->pep_fid.ops = &pep_ep_ops;
	pep->epfd = epoll_create1(EPOLL_CLOEXEC);
	pep->info = weft_info_dup(info);
	if (pep->epfd < 0 || !pep->info) {
		ret = pep->epfd < 0 ? -tcp_errno_fi(errno) : -FI_ENOMEM;
		goto err;
	}
	if (info->src_addr && info->src_addrlen >= sizeof(struct sockaddr_in))
		ret = pep_setname(&pep->pep_fid.fid, info->src_addr,
				  info->src_addrlen);
	else
		ret = pep_setname(&pep->pep_fid.fid, &any, sizeof(any));
	if (ret)
		goto err;
	*pep_fid = &pep->pep_fid;
	return 0;
err:
	pep_close(&pep->pep_fid.fid);
	return ret;
}
