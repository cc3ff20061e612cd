/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * udp datagram endpoints: the socket, sends, the receive ring and its
 * progress, multicast groups (fi_join).
 *
 * Sends take no lock of the endpoint: one sendmsg to the address the AV
 * (or a joined group) names, then the completion, under the CQ's writer
 * lock, in a slot reserved before the datagram went.  Receives are a
 * ring of rx_size slots under the endpoint lock; each slot has its
 * struct mmsghdr made when it is posted, so the progress hands a run of
 * posted slots to one recvmmsg and completes what it filled, oldest
 * first.  MSG_TRUNC makes the kernel say how long a datagram was that
 * did not fit: the receive completes with FI_ETRUNC and olen.
 */
#include "udp_xp.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "weft/stubs.h"
#include "weft/util_iov.h"
#include "weft/util_ifaddr.h"

struct udp_ep;

/* A joined group (fi_join): its socket, bound to the group's address and
 * port, receives for the endpoint; fi_mc_addr sends to the group. */
struct udp_mc {
	struct fid_mc mc;
	struct udp_ep *ep;
	int fd; /* -1: joined to send only */
	unsigned int index;
	struct sockaddr_in group;
};

/* A posted receive. */
struct udp_rx {
	void *context;
	size_t len; /* posted bytes */
	bool comp;  /* a completion is wanted (its CQ slot reserved) */
	struct iovec iov[UDP_IOV_MAX];
};

struct udp_ep {
	struct util_ep base; /* first */
	int fd;
	/* The socket and the groups' sockets: the wait fd, made when a wait
	 * object first asks for it (an fd in an epoll set costs every
	 * arriving datagram a wakeup callback). */
	int epfd;
	struct sockaddr_storage name;
	socklen_t namelen;
	size_t max_msg;
	size_t inject_max;

	/* The receive ring, under the endpoint lock: slots [tail, head). */
	size_t rx_size;
	uint64_t rx_head, rx_tail;
	struct udp_rx *rx;
	struct mmsghdr *rx_hdr;
	struct sockaddr_storage *rx_src;

	/* Joined groups, under the endpoint lock. */
	struct udp_mc *mc[UDP_MC_MAX];
	unsigned int nmc;
	struct util_progress eq_progress;
};

static inline struct udp_ep *udp_ep_of(struct fid_ep *ep_fid)
{
	return container_of(util_ep_of(ep_fid), struct udp_ep, base);
}

int udp_errno(int err)
{
	switch (err) {
	case EAGAIN:
	case ENOBUFS:
		return -FI_EAGAIN;
	case EMSGSIZE:
		return -FI_EMSGSIZE;
	case EHOSTUNREACH:
	case ENETUNREACH:
		return -FI_EHOSTUNREACH;
	default:
		return weft_errno(err);
	}
}

/* ---- sends -------------------------------------------------------------- */

/* The socket address a send goes to, or NULL; a group's is copied into
 * *group under the lock, since fi_close of its fid_mc may free it. */
static const void *dest_of(struct udp_ep *ep, fi_addr_t dest, socklen_t *len,
			   struct sockaddr_in *group)
{
	const void *sa;

	if (weft_unlikely(dest & UDP_MC_ADDR) && dest != FI_ADDR_NOTAVAIL) {
		unsigned int i = (unsigned int)(dest & ~UDP_MC_ADDR);
		struct udp_mc *mc;

		util_ep_lock(&ep->base);
		mc = i < UDP_MC_MAX ? ep->mc[i] : NULL;
		if (mc)
			*group = mc->group;
		util_ep_unlock(&ep->base);
		*len = sizeof(*group);
		return mc ? group : NULL;
	}
	sa = util_av_addr(ep->base.av, dest);
	if (sa)
		*len = (socklen_t)util_sockaddr_len(sa);
	return sa;
}

static ssize_t udp_send(struct udp_ep *ep, const struct iovec *iov,
			size_t count, fi_addr_t dest, void *context,
			uint64_t flags)
{
	struct msghdr mh = { .msg_iov = (struct iovec *)iov,
			     .msg_iovlen = count };
	struct sockaddr_in group;
	struct util_cq *cq = NULL;
	size_t len;
	ssize_t n;
	int ret;

	if (weft_unlikely(count > UDP_IOV_MAX || (count && !iov)))
		return -FI_EINVAL;
	len = util_iov_len(iov, count);
	/* A datagram that does not fit fails here, not on the wire. */
	if (weft_unlikely(len > ep->max_msg))
		return -FI_EMSGSIZE;
	if (weft_unlikely((flags & FI_INJECT) && len > ep->inject_max))
		return -FI_EINVAL;
	if (weft_unlikely(!ep->base.enabled))
		return -FI_EOPBADSTATE;
	mh.msg_name = (void *)dest_of(ep, dest, &mh.msg_namelen, &group);
	if (weft_unlikely(!mh.msg_name))
		return -FI_EINVAL;
	/* The datagram is copied by the kernel during the call, so FI_INJECT
	 * holds of every send; only fi_inject goes without a completion.
	 * For the same reason nothing is ever outstanding for FI_FENCE to
	 * wait for. */
	if (!(flags & UTIL_EP_NO_COMPLETION) &&
	    (!ep->base.tx_selective || (flags & FI_COMPLETION))) {
		cq = ep->base.tx_cq;
		ret = util_ep_cq_reserve(cq);
		if (weft_unlikely(ret))
			return ret;
	}
	do
		n = sendmsg(ep->fd, &mh, MSG_DONTWAIT | MSG_NOSIGNAL);
	/* An ICMP error of an earlier datagram: this one is not concerned. */
	while (weft_unlikely(n < 0) && errno == ECONNREFUSED);
	if (weft_unlikely(n < 0)) {
		ret = udp_errno(errno);
		util_ep_cq_unreserve(cq);
		return ret;
	}
	/* Handed to the kernel: done (a datagram's loss is not known). */
	util_ep_tx_success(&ep->base, cq != NULL, context, FI_SEND | FI_MSG,
			   ep->base.send_cntr);
	return 0;
}

static ssize_t udp_ep_send(struct fid_ep *ep_fid, const void *buf, size_t len,
			   void *desc, fi_addr_t dest, void *context)
{
	struct udp_ep *ep = udp_ep_of(ep_fid);
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };

	return udp_send(ep, &iov, 1, dest, context, ep->base.tx_op_flags);
}

static ssize_t udp_ep_sendv(struct fid_ep *ep_fid, const struct iovec *iov,
			    void **desc, size_t count, fi_addr_t dest,
			    void *context)
{
	struct udp_ep *ep = udp_ep_of(ep_fid);

	return udp_send(ep, iov, count, dest, context, ep->base.tx_op_flags);
}

static ssize_t udp_ep_sendmsg(struct fid_ep *ep_fid, const struct fi_msg *msg,
			      uint64_t flags)
{
	struct udp_ep *ep = udp_ep_of(ep_fid);

	if (!msg)
		return -FI_EINVAL;
	if (flags & FI_REMOTE_CQ_DATA)
		return -FI_EINVAL; /* cq_data_size is 0 */
	return udp_send(ep, msg->msg_iov, msg->iov_count, msg->addr,
			msg->context, flags & ~UTIL_EP_NO_COMPLETION);
}

static ssize_t udp_ep_inject(struct fid_ep *ep_fid, const void *buf,
			     size_t len, fi_addr_t dest)
{
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };

	return udp_send(udp_ep_of(ep_fid), &iov, 1, dest, NULL,
			FI_INJECT | UTIL_EP_NO_COMPLETION);
}

/* ---- receives ----------------------------------------------------------- */

static ssize_t udp_recv(struct udp_ep *ep, const struct iovec *iov,
			size_t count, void *context, uint64_t flags)
{
	struct udp_rx *rx;
	struct msghdr *mh;
	size_t i;
	bool comp;
	int ret;

	if (weft_unlikely(count > UDP_IOV_MAX || (count && !iov)))
		return -FI_EINVAL;
	comp = !ep->base.rx_selective || (flags & FI_COMPLETION);
	util_ep_lock(&ep->base);
	if (weft_unlikely(ep->rx_head - ep->rx_tail == ep->rx_size)) {
		util_ep_unlock(&ep->base);
		return -FI_EAGAIN;
	}
	if (comp) {
		ret = util_ep_cq_reserve(ep->base.rx_cq);
		if (weft_unlikely(ret)) {
			util_ep_unlock(&ep->base);
			return ret;
		}
	}
	i = ep->rx_head % ep->rx_size;
	rx = &ep->rx[i];
	rx->context = context;
	rx->comp = comp;
	util_iov_assign(rx->iov, iov, count);
	rx->len = util_iov_len(iov, count);
	mh = &ep->rx_hdr[i].msg_hdr;
	mh->msg_iov = rx->iov;
	mh->msg_iovlen = count;
	mh->msg_name = &ep->rx_src[i];
	mh->msg_namelen = sizeof(ep->rx_src[i]);
	mh->msg_flags = 0;
	ep->rx_head++;
	util_ep_unlock(&ep->base);
	return 0;
}

static ssize_t udp_ep_recv(struct fid_ep *ep_fid, void *buf, size_t len,
			   void *desc, fi_addr_t src, void *context)
{
	struct udp_ep *ep = udp_ep_of(ep_fid);
	struct iovec iov = { .iov_base = buf, .iov_len = len };

	return udp_recv(ep, &iov, 1, context, ep->base.rx_op_flags);
}

static ssize_t udp_ep_recvv(struct fid_ep *ep_fid, const struct iovec *iov,
			    void **desc, size_t count, fi_addr_t src,
			    void *context)
{
	struct udp_ep *ep = udp_ep_of(ep_fid);

	return udp_recv(ep, iov, count, context, ep->base.rx_op_flags);
}

static ssize_t udp_ep_recvmsg(struct fid_ep *ep_fid, const struct fi_msg *msg,
			      uint64_t flags)
{
	if (!msg)
		return -FI_EINVAL;
	return udp_recv(udp_ep_of(ep_fid), msg->msg_iov, msg->iov_count,
			msg->context, flags);
}

/* The sender's fi_addr_t (FI_SOURCE), or FI_ADDR_NOTAVAIL. */
static fi_addr_t source_of(struct udp_ep *ep, const struct sockaddr *sa,
			   socklen_t len)
{
	struct util_av *av = ep->base.av;
	struct sockaddr_in6 key;

	if (!(ep->base.caps & FI_SOURCE) || !av || len > sizeof(key) ||
	    (size_t)len < av->addrlen)
		return FI_ADDR_NOTAVAIL;
	memset(&key, 0, sizeof(key));
	memcpy(&key, sa, av->addrlen);
	if (av->ops.normalize && av->ops.normalize(av, &key, &key))
		return FI_ADDR_NOTAVAIL;
	return util_av_lookup_addr(av, &key);
}

/* Receive slot i got a datagram of `got` bytes (its real length). */
static void rx_complete(struct udp_ep *ep, size_t i, size_t got)
{
	struct udp_rx *rx = &ep->rx[i];
	struct msghdr *mh = &ep->rx_hdr[i].msg_hdr;
	fi_addr_t src = source_of(ep, mh->msg_name, mh->msg_namelen);
	void *buf = mh->msg_iovlen ? rx->iov[0].iov_base : NULL;

	if (weft_likely(!(mh->msg_flags & MSG_TRUNC) && got <= rx->len)) {
		util_ep_rx_success(&ep->base, rx->comp, false, rx->context,
				   FI_RECV | FI_MSG, got, buf, 0, 0, src,
				   ep->base.recv_cntr);
	} else {
		struct fi_cq_err_entry e = {
			.op_context = rx->context,
			.flags = FI_RECV | FI_MSG,
			.len = rx->len,
			.buf = buf,
			.olen = got > rx->len ? got - rx->len : 0,
			.err = FI_ETRUNC,
			.prov_errno = FI_ETRUNC,
		};

		util_ep_rx_error(&ep->base, rx->comp, true, &e,
				 ep->base.recv_cntr);
	}
}

/* Fill posted receives from fd, oldest first; how many completed. */
static int rx_drain(struct udp_ep *ep, int fd)
{
	int done = 0, n, k;

	while (ep->rx_tail != ep->rx_head) {
		size_t i = ep->rx_tail % ep->rx_size;
		size_t run = WEFT_MIN(ep->rx_head - ep->rx_tail,
				      ep->rx_size - i);

		/* One posted slot (a pingpong's): recvmsg, which costs the
		 * kernel less than a recvmmsg of one, found empty or not. */
		if (run == 1) {
			struct mmsghdr *h = &ep->rx_hdr[i];
			ssize_t got = recvmsg(fd, &h->msg_hdr,
					      MSG_DONTWAIT | MSG_TRUNC);

			n = got < 0 ? -1 : 1;
			if (got >= 0)
				h->msg_len = (unsigned int)got;
		} else {
			n = recvmmsg(fd, &ep->rx_hdr[i], (unsigned int)run,
				     MSG_DONTWAIT | MSG_TRUNC, NULL);
		}
		if (n < 0) {
			/* An ICMP error from an earlier send: no datagram. */
			if (errno == ECONNREFUSED || errno == EINTR)
				continue;
			break;
		}
		for (k = 0; k < n; k++)
			rx_complete(ep, i + (size_t)k, ep->rx_hdr[i + k].msg_len);
		ep->rx_tail += (uint64_t)n;
		done += n;
		if ((size_t)n < run)
			break;
	}
	return done;
}

static int udp_progress(struct util_ep *base)
{
	struct udp_ep *ep = container_of(base, struct udp_ep, base);
	unsigned int j;
	int done;

	if (ep->rx_tail == ep->rx_head)
		return 0;
	done = rx_drain(ep, ep->fd);
	for (j = 0; j < UDP_MC_MAX && ep->nmc; j++)
		if (ep->mc[j] && ep->mc[j]->fd >= 0)
			done += rx_drain(ep, ep->mc[j]->fd);
	return done;
}

/* Called under the endpoint lock (a bind), as join and leave are. */
static int udp_wait_fds(struct util_ep *base, int *fds)
{
	struct udp_ep *ep = container_of(base, struct udp_ep, base);
	struct epoll_event ev = { .events = EPOLLIN };
	unsigned int i;
	int epfd, err;

	if (ep->epfd < 0) {
		epfd = epoll_create1(EPOLL_CLOEXEC);
		if (epfd < 0)
			return weft_errno(errno);
		ev.data.fd = ep->fd;
		if (epoll_ctl(epfd, EPOLL_CTL_ADD, ep->fd, &ev))
			goto err;
		for (i = 0; i < UDP_MC_MAX; i++) {
			if (!ep->mc[i] || ep->mc[i]->fd < 0)
				continue;
			ev.data.fd = ep->mc[i]->fd;
			if (epoll_ctl(epfd, EPOLL_CTL_ADD, ep->mc[i]->fd, &ev))
				goto err;
		}
		ep->epfd = epfd;
	}
	fds[0] = ep->epfd;
	return 1;
err:
	err = errno;
	close(epfd);
	return weft_errno(err);
}

/* Receives still posted at close complete as canceled. */
static void rx_cancel_all(struct udp_ep *ep)
{
	for (; ep->rx_tail != ep->rx_head; ep->rx_tail++) {
		struct udp_rx *rx = &ep->rx[ep->rx_tail % ep->rx_size];
		struct fi_cq_err_entry e = {
			.op_context = rx->context,
			.flags = FI_RECV | FI_MSG,
			.err = FI_ECANCELED,
			.prov_errno = FI_ECANCELED,
		};

		util_ep_cq_error(ep->base.rx_cq, rx->comp, false, &e);
	}
}

/*
 * fi_cancel: a posted receive completes with FI_ECANCELED and leaves the
 * ring; the ones after it move up one slot, so that the ring stays a run
 * of posted receives.
 */
static ssize_t udp_ep_cancel(fid_t fid, void *context)
{
	struct udp_ep *ep = container_of(fid, struct udp_ep, base.ep_fid.fid);
	uint64_t s;

	util_ep_lock(&ep->base);
	for (s = ep->rx_tail; s != ep->rx_head; s++) {
		size_t i = s % ep->rx_size;
		struct udp_rx *rx = &ep->rx[i];
		struct fi_cq_err_entry e = {
			.op_context = rx->context,
			.flags = FI_RECV | FI_MSG,
			.err = FI_ECANCELED,
			.prov_errno = FI_ECANCELED,
		};
		uint64_t t;

		if (rx->context != context)
			continue;
		util_ep_cq_error(ep->base.rx_cq, rx->comp, true, &e);
		for (t = s; t + 1 != ep->rx_head; t++) {
			size_t a = t % ep->rx_size, b = (t + 1) % ep->rx_size;

			ep->rx[a] = ep->rx[b];
			ep->rx_hdr[a] = ep->rx_hdr[b];
			ep->rx_hdr[a].msg_hdr.msg_iov = ep->rx[a].iov;
			ep->rx_hdr[a].msg_hdr.msg_name = &ep->rx_src[a];
		}
		ep->rx_head--;
		break;
	}
	util_ep_unlock(&ep->base);
	return 0;
}

/* ---- multicast ---------------------------------------------------------- */

static int udp_mc_close(struct fid *fid)
{
	struct udp_mc *mc = container_of(fid, struct udp_mc, mc.fid);
	struct udp_ep *ep = mc->ep;

	util_ep_lock(&ep->base);
	ep->mc[mc->index] = NULL;
	ep->nmc--;
	if (mc->fd >= 0 && ep->epfd >= 0)
		epoll_ctl(ep->epfd, EPOLL_CTL_DEL, mc->fd, NULL);
	util_ep_unlock(&ep->base);
	if (mc->fd >= 0)
		close(mc->fd); /* leaves the group */
	free(mc);
	return 0;
}

static struct fi_ops udp_mc_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = udp_mc_close,
	.bind = weft_no_bind,
	.control = weft_no_control,
	.ops_open = weft_no_ops_open,
	.tostr = weft_no_tostr,
	.ops_set = weft_no_ops_set,
};

/* A socket bound to the group's address and port, a member of it on the
 * endpoint's interface: what is sent to the group reaches it. */
static int mc_socket(struct udp_ep *ep, const struct sockaddr_in *group)
{
	struct ip_mreq mreq = { .imr_multiaddr = group->sin_addr };
	const struct sockaddr_in *own = (const void *)&ep->name;
	int fd, one = 1, ret;

	mreq.imr_interface = own->sin_addr;
	fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return weft_errno(errno);
	if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(fd, (const struct sockaddr *)group, sizeof(*group)) ||
	    setsockopt(fd, IPPROTO_IP, IP_ADD_MEMBERSHIP, &mreq,
		       sizeof(mreq))) {
		ret = weft_errno(errno);
		close(fd);
		return ret;
	}
	return fd;
}

static int udp_join(struct fid_ep *ep_fid, const void *addr, uint64_t flags,
		    struct fid_mc **mc_fid, void *context)
{
	struct udp_ep *ep = udp_ep_of(ep_fid);
	const struct sockaddr_in *group = addr;
	struct fi_eq_entry entry = { .context = context };
	struct udp_mc *mc;
	unsigned int i;
	int ret;

	if (!addr || !mc_fid)
		return -FI_EINVAL;
	if (!(ep->base.caps & FI_MULTICAST))
		return -FI_EOPNOTSUPP;
	if (group->sin_family != AF_INET || ep->name.ss_family != AF_INET ||
	    !IN_MULTICAST(ntohl(group->sin_addr.s_addr)))
		return -FI_EINVAL; /* IPv4 groups only */
	if (!ep->base.eq)
		return -FI_ENOEQ;
	mc = calloc(1, sizeof(*mc));
	if (!mc)
		return -FI_ENOMEM;
	mc->ep = ep;
	mc->group = *group;
	memset(mc->group.sin_zero, 0, sizeof(mc->group.sin_zero));
	mc->fd = -1;
	/* Joined to send only, no membership is needed. */
	if ((flags & (FI_SEND | FI_RECV)) != FI_SEND) {
		ret = mc_socket(ep, &mc->group);
		if (ret < 0)
			goto err_free;
		mc->fd = ret;
	}
	mc->mc.fid.fclass = FI_CLASS_MC;
	mc->mc.fid.context = context;
	mc->mc.fid.ops = &udp_mc_fi_ops;

	util_ep_lock(&ep->base);
	for (i = 0; i < UDP_MC_MAX && ep->mc[i]; i++)
		;
	if (i == UDP_MC_MAX) {
		util_ep_unlock(&ep->base);
		ret = -FI_ENOSPC;
		goto err_close;
	}
	if (mc->fd >= 0 && ep->epfd >= 0) {
		struct epoll_event ev = { .events = EPOLLIN };

		ev.data.fd = mc->fd;
		if (epoll_ctl(ep->epfd, EPOLL_CTL_ADD, mc->fd, &ev)) {
			ret = weft_errno(errno);
			util_ep_unlock(&ep->base);
			goto err_close;
		}
	}
	mc->index = i;
	mc->mc.fi_addr = UDP_MC_ADDR | i;
	ep->mc[i] = mc;
	ep->nmc++;
	util_ep_unlock(&ep->base);

	/* The membership is in place at once: say so (fi_cm(3)). */
	entry.fid = &mc->mc.fid;
	ret = (int)util_eq_write(ep->base.eq, FI_JOIN_COMPLETE, &entry,
				 sizeof(entry), 0);
	if (ret < 0) {
		udp_mc_close(&mc->mc.fid);
		return ret;
	}
	*mc_fid = &mc->mc;
	return 0;

err_close:
	if (mc->fd >= 0)
		close(mc->fd);
err_free:
	free(mc);
	return ret;
}

/* ---- fi_ops_cm, fi_ops_ep ----------------------------------------------- */

int udp_name_copy(const struct sockaddr_storage *name, socklen_t namelen,
		  void *addr, size_t *addrlen)
{
	size_t len = namelen;

	if (!addrlen)
		return -FI_EINVAL;
	if (!addr || *addrlen < len) {
		*addrlen = len;
		return -FI_ETOOSMALL;
	}
	memcpy(addr, name, len);
	*addrlen = len;
	return 0;
}

static int udp_getname(fid_t fid, void *addr, size_t *addrlen)
{
	struct udp_ep *ep = container_of(fid, struct udp_ep, base.ep_fid.fid);

	return udp_name_copy(&ep->name, ep->namelen, addr, addrlen);
}

static struct fi_ops_cm udp_cm_ops = {
	.size = sizeof(struct fi_ops_cm),
	.setname = weft_no_setname,
	.getname = udp_getname,
	.getpeer = weft_no_getpeer,
	.connect = weft_no_connect,
	.listen = weft_no_listen,
	.accept = weft_no_accept,
	.reject = weft_no_reject,
	.shutdown = weft_no_shutdown,
	.join = udp_join,
};

static struct fi_ops_msg udp_msg_ops = {
	.size = sizeof(struct fi_ops_msg),
	.recv = udp_ep_recv,
	.recvv = udp_ep_recvv,
	.recvmsg = udp_ep_recvmsg,
	.send = udp_ep_send,
	.sendv = udp_ep_sendv,
	.sendmsg = udp_ep_sendmsg,
	.inject = udp_ep_inject,
	.senddata = weft_no_senddata,
	.injectdata = weft_no_injectdata,
};

static struct fi_ops_tagged udp_tagged_ops = {
	.size = sizeof(struct fi_ops_tagged),
	.recv = weft_no_trecv,
	.recvv = weft_no_trecvv,
	.recvmsg = weft_no_trecvmsg,
	.send = weft_no_tsend,
	.sendv = weft_no_tsendv,
	.sendmsg = weft_no_tsendmsg,
	.inject = weft_no_tinject,
	.senddata = weft_no_tsenddata,
	.injectdata = weft_no_tinjectdata,
};

static ssize_t udp_rx_size_left(struct fid_ep *ep_fid)
{
	struct udp_ep *ep = udp_ep_of(ep_fid);
	ssize_t left;

	util_ep_lock(&ep->base);
	left = (ssize_t)(ep->rx_size - (ep->rx_head - ep->rx_tail));
	util_ep_unlock(&ep->base);
	return left;
}

static ssize_t udp_tx_size_left(struct fid_ep *ep_fid)
{
	/* Sends complete as they are posted. */
	return (ssize_t)UDP_QUEUE_SIZE;
}

static struct fi_ops_ep udp_ep_ops = {
	.size = sizeof(struct fi_ops_ep),
	.cancel = udp_ep_cancel,
	.getopt = weft_no_getopt,
	.setopt = weft_no_setopt,
	.tx_ctx = weft_no_tx_ctx,
	.rx_ctx = weft_no_rx_ctx,
	.rx_size_left = udp_rx_size_left,
	.tx_size_left = udp_tx_size_left,
};

/* ---- fi_ops, open, close ------------------------------------------------ */

static void udp_ep_free(struct udp_ep *ep)
{
	if (ep->epfd >= 0)
		close(ep->epfd);
	if (ep->fd >= 0)
		close(ep->fd);
	free(ep->rx);
	free(ep->rx_hdr);
	free(ep->rx_src);
	free(ep);
}

static int udp_ep_close(struct fid *fid)
{
	struct udp_ep *ep = container_of(fid, struct udp_ep, base.ep_fid.fid);

	util_ep_lock(&ep->base);
	if (ep->nmc) {
		util_ep_unlock(&ep->base);
		return -FI_EBUSY; /* groups joined: fi_close them first */
	}
	util_ep_unlock(&ep->base);
	util_eq_unbind_cm(ep->base.eq, &ep->eq_progress, -1);
	util_ep_close(&ep->base);
	util_ep_lock(&ep->base);
	rx_cancel_all(ep);
	util_ep_unlock(&ep->base);
	util_ep_fini(&ep->base);
	udp_ep_free(ep);
	return 0;
}

static void udp_eq_progress(struct util_progress *p)
{
	/* Joins complete at once: nothing to drive. */
}

static int udp_ep_bind(struct fid *fid, struct fid *bfid, uint64_t flags)
{
	struct udp_ep *ep = container_of(fid, struct udp_ep, base.ep_fid.fid);

	if (bfid && bfid->fclass == FI_CLASS_EQ)
		return util_eq_bind_cm(&ep->base.eq, bfid, &ep->eq_progress,
				       udp_eq_progress, -1, ep);
	return util_ep_bind(&ep->base, bfid, flags);
}

static int udp_enable(struct util_ep *base)
{
	if (!base->av)
		return -FI_ENOAV;
	return util_ep_enable_check(base);
}

static const struct util_ep_ops udp_base_ops = {
	.progress = udp_progress,
	.wait_fds = udp_wait_fds,
	.enable = udp_enable,
};

static struct fi_ops udp_ep_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = udp_ep_close,
	.bind = udp_ep_bind,
	.control = util_ep_control_op,
	.ops_open = weft_no_ops_open,
	.tostr = weft_no_tostr,
	.ops_set = weft_no_ops_set,
};

int udp_socket_open(const struct fi_info *info, uint32_t addr_format,
		    struct sockaddr_storage *name, socklen_t *namelen)
{
	struct sockaddr_storage src = { 0 };
	int family = addr_format == FI_SOCKADDR_IN6 ? AF_INET6 : AF_INET;
	int fd, ret;

	if (info->src_addr && info->src_addrlen <= sizeof(src))
		memcpy(&src, info->src_addr, info->src_addrlen);
	else
		src.ss_family = (sa_family_t)family;
	if (src.ss_family != family)
		return -FI_EINVAL;
	fd = socket(family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return weft_errno(errno);
	*namelen = sizeof(*name);
	if (bind(fd, (struct sockaddr *)&src, util_sockaddr_len(&src)) ||
	    getsockname(fd, (struct sockaddr *)name, namelen)) {
		ret = weft_errno(errno);
		close(fd);
		return ret;
	}
	return fd;
}

/* The socket (udp_socket_open), sending multicast from its interface. */
static int udp_socket(struct udp_ep *ep, const struct fi_info *info,
		      uint32_t addr_format)
{
	int one = 1;

	ep->fd = udp_socket_open(info, addr_format, &ep->name, &ep->namelen);
	if (ep->fd < 0)
		return ep->fd;
	if (ep->name.ss_family == AF_INET && (ep->base.caps & FI_MULTICAST)) {
		const struct sockaddr_in *own = (const void *)&ep->name;

		if (own->sin_addr.s_addr != htonl(INADDR_ANY) &&
		    setsockopt(ep->fd, IPPROTO_IP, IP_MULTICAST_IF,
			       &own->sin_addr, sizeof(own->sin_addr)))
			return weft_errno(errno);
		if (setsockopt(ep->fd, IPPROTO_IP, IP_MULTICAST_LOOP, &one,
			       sizeof(one)))
			return weft_errno(errno);
	}
	return 0;
}

int udp_ep_open(struct fid_domain *domain_fid, struct fi_info *info,
		struct fid_ep **ep_fid, void *context)
{
	struct udp_domain *domain = container_of(
		domain_fid, struct udp_domain, base.util.domain_fid);
	struct udp_ep *ep;
	int ret;

	if (info->ep_attr && info->ep_attr->max_msg_size > UDP_MAX_MSG)
		return -FI_EINVAL;
	if (info->tx_attr && info->tx_attr->inject_size > UDP_MAX_MSG)
		return -FI_EINVAL;
	ep = calloc(1, sizeof(*ep));
	if (!ep)
		return -FI_ENOMEM;
	ep->fd = ep->epfd = -1;
	ep->max_msg = info->ep_attr && info->ep_attr->max_msg_size ?
			      info->ep_attr->max_msg_size :
			      UDP_MAX_MSG;
	ep->inject_max = info->tx_attr && info->tx_attr->inject_size ?
				 info->tx_attr->inject_size :
				 UDP_MAX_MSG;
	ep->rx_size = info->rx_attr && info->rx_attr->size ?
			      info->rx_attr->size :
			      UDP_QUEUE_SIZE;
	if (ep->rx_size > UDP_QUEUE_SIZE)
		ep->rx_size = UDP_QUEUE_SIZE;
	ep->rx = calloc(ep->rx_size, sizeof(*ep->rx));
	ep->rx_hdr = calloc(ep->rx_size, sizeof(*ep->rx_hdr));
	ep->rx_src = calloc(ep->rx_size, sizeof(*ep->rx_src));
	if (!ep->rx || !ep->rx_hdr || !ep->rx_src) {
		udp_ep_free(ep);
		return -FI_ENOMEM;
	}
	ret = util_ep_init(&ep->base, &domain->base.util, info, &udp_base_ops,
			   context);
	if (ret) {
		udp_ep_free(ep);
		return ret;
	}
	ret = udp_socket(ep, info, domain->addr_format);
	if (ret) {
		util_ep_fini(&ep->base);
		udp_ep_free(ep);
		return ret;
	}
	ep->base.ep_fid.fid.ops = &udp_ep_fi_ops;
	ep->base.ep_fid.ops = &udp_ep_ops;
	ep->base.ep_fid.cm = &udp_cm_ops;
	ep->base.ep_fid.msg = &udp_msg_ops;
	ep->base.ep_fid.tagged = &udp_tagged_ops;
	*ep_fid = &ep->base.ep_fid;
	return 0;
}
