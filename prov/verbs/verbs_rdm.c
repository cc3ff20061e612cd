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
 *
 * The pieces: verbs_rdm.c the endpoint (open, close, names, the transport
 * table), verbs_rdm_conn.c connections (rdma_cm, QPs, their end),
 * verbs_rdm_tx.c what we send (posting, credits, the engine's transmit
 * calls), verbs_rdm_rx.c what arrives and the completion queue (progress);
 * verbs_rdm.h what they share.
 */
#include "verbs_rdm.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "weft/stubs.h"
#include "weft/util_coll.h"

/* ---- addresses ----------------------------------------------------------- */

/* The port of an IPv4 or IPv6 socket address (host order). */
static uint16_t sa_port(const void *sa)
{
	return ntohs(((const struct sockaddr *)sa)->sa_family == AF_INET6 ?
			     ((const struct sockaddr_in6 *)sa)->sin6_port :
			     ((const struct sockaddr_in *)sa)->sin_port);
}

/* The AV's stored form of a socket address: family, port, address. */
void vrdm_sa_stored(const void *addr, struct sockaddr_storage *out)
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

/* ---- the transport ------------------------------------------------------ */

static int verbs_rdm_wait_fd(struct util_rdm_xport *xp)
{
	struct util_rdm_ep *rdm = xp->ep;
	return vep_of(rdm)->epfd;
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
	/* A scalable endpoint's pair 0 closes last: the requests it took
	 * for pairs that never adopted them are still on its channel. */
	if (ep->sep && !ep->ctx)
		vrdm_inbox_drain(ep->sep);
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
	/* (A pair's bell closes with the scalable endpoint.) */
	if (ep->sep && ep->ctx && ep->epfd >= 0 &&
	    ep->sep->base.pair[ep->ctx].inbox.bell >= 0)
		epoll_ctl(ep->epfd, EPOLL_CTL_DEL,
			  ep->sep->base.pair[ep->ctx].inbox.bell, NULL);
	if (ep->own_epfd && ep->epfd >= 0)
		close(ep->epfd);
}

static int verbs_rdm_ep_close(struct fid *fid)
{
	struct verbs_rdm_ep *ep =
		container_of(fid, struct verbs_rdm_ep, rdm.base.ep_fid.fid);
	struct dlist_entry *e, *tmp;

	/* A pair: pair 0 rings its bell no more. */
	if (ep->sep && ep->ctx)
		util_rdm_inbox_shut(&ep->sep->base, ep->ctx);
	/* Injects its peers could not take yet still go (util_rdm.h). */
	util_rdm_ep_linger(&ep->rdm);
	weft_lock(util_rdm_lock(&ep->rdm));
	/* Everything outstanding ends as canceled, while the engine can
	 * still report it. */
	ep->closing = true;
	dlist_foreach_safe(&ep->conns, e, tmp) {
		struct vconn *conn = container_of(e, struct vconn, entry);

		vrdm_conn_lost(conn, FI_ECANCELED);
	}
	dlist_foreach_safe(&ep->ops, e, tmp) {
		struct vop *op = container_of(e, struct vop, entry);
		struct util_rdm_tx *tx;

		if (op->kind == VOP_FETCH) {
			void *cookie = op->fetch_cookie;

			vrdm_op_release(ep, op);
			util_rdm_fetch_done(&ep->rdm, cookie, FI_ECANCELED);
			continue;
		}
		tx = op->kind == VOP_CTRL || op->kind == VOP_ANSWER ?
			     NULL :
			     util_rdm_tx_of(&ep->rdm, op->tx_id);
		vrdm_op_release(ep, op);
		if (tx)
			util_rdm_tx_done(&ep->rdm, tx, FI_ECANCELED);
	}
	dlist_foreach(&ep->rdm.peers.list, e) {
		struct util_peer *peer = container_of(e, struct util_peer,
						      entry);

		util_rdm_fail_peer(&ep->rdm, peer, FI_ECANCELED);
	}
	weft_unlock(util_rdm_lock(&ep->rdm));
	util_rdm_ep_fini(&ep->rdm);
	ep_teardown(ep);
	free(ep);
	return 0;
}

static int verbs_rdm_getname(fid_t fid, void *addr, size_t *addrlen)
{
	struct verbs_rdm_ep *ep =
		container_of(fid, struct verbs_rdm_ep, rdm.base.ep_fid.fid);

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
	.join = util_coll_join,
};

static struct fi_ops verbs_rdm_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = verbs_rdm_ep_close,
	.bind = util_rdm_ep_bind,
	.control = util_rdm_ep_control,
	.ops_open = weft_no_ops_open,
	.tostr = weft_no_tostr,
	.ops_set = weft_no_ops_set,
};

/* FI_VERBS_DEVICE_ATOMICS: what the device does, nothing else. */
static int device_valid(struct util_rdm_ep *rdm, enum fi_datatype dt,
			enum fi_op op, uint64_t flags, size_t *count)
{
	struct verbs_rdm_ep *ep = vep_of(rdm);
	struct fi_atomic_attr attr;
	int ret;

	if (!(ep->rdm.base.caps & FI_ATOMIC))
		return -FI_EOPNOTSUPP;
	ret = verbs_dev_atomic(&ep->domain->dev, dt, op, flags, &attr);
	if (ret)
		return ret;
	if (count)
		*count = attr.count;
	return 0;
}

/* With device atomics, the device's set (else the engine's: every
 * atomic up to atomic_max bytes). */
static const struct util_rdm_ep_hooks verbs_rdm_amo_hooks = {
	.atomic_valid = device_valid,
};

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
	vrdm_sa_stored(&got, &ep->addr);
	ep->addrlen = sa_len(&ep->addr);
	return 0;
}

static int verbs_rdm_setname(fid_t fid, void *addr, size_t addrlen)
{
	struct verbs_rdm_ep *ep =
		container_of(fid, struct verbs_rdm_ep, rdm.base.ep_fid.fid);
	struct sockaddr_storage sa;
	int ret;

	if (!addr || addrlen < sizeof(struct sockaddr_in) ||
	    addrlen > sizeof(sa))
		return -FI_EINVAL;
	if (ep->rdm.base.enabled)
		return -FI_EOPBADSTATE;
	memset(&sa, 0, sizeof(sa));
	memcpy(&sa, addr, addrlen);
	if (addrlen < sa_len(&sa))
		return -FI_EINVAL;
	weft_lock(util_rdm_lock(&ep->rdm));
	ret = listen_at(ep, &sa);
	weft_unlock(util_rdm_lock(&ep->rdm));
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
	/* The domain's, so that one wait serves its endpoints (they sweep
	 * each other); a set of its own for a scalable endpoint's pair that
	 * takes no part in the sweeps (ep_make). */
	if (ep->own_epfd) {
		ep->epfd = epoll_create1(EPOLL_CLOEXEC);
		if (ep->epfd < 0)
			return weft_errno(errno);
	} else {
		ep->epfd = d->epfd;
	}
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
	/* Pairs but 0: the bell pair 0 rings when it hands us a request,
	 * and pair 0's event channel (in the domain's set already), so
	 * that a thread waiting here wakes for a connect request at the
	 * listener too, and takes it. */
	if (ep->sep && ep->ctx) {
		int bell = util_rdm_inbox_bell(&ep->sep->base, ep->ctx);

		if (bell < 0)
			return bell;
		ev.data.fd = bell;
		if (epoll_ctl(ep->epfd, EPOLL_CTL_ADD, bell, &ev))
			return weft_errno(errno);
	}
	if (ep->sep && ep->ctx && ep->own_epfd) {
		ev.data.fd = ep->pair0->cm_ch->fd;
		if (epoll_ctl(ep->epfd, EPOLL_CTL_ADD, ep->pair0->cm_ch->fd,
			      &ev))
			return weft_errno(errno);
	}
	/* Every posted receive and send may complete at once. */
	ep->cq_size = WEFT_MIN(d->dev.max_cqe, 32767u);
	ep->cq = ibv_create_cq(d->ctx, (int)ep->cq_size, ep, ep->comp_ch, 0);
	if (!ep->cq)
		return weft_errno(errno);
	ep->max_inline = d->dev.max_inline;
	ep->max_sge = WEFT_MIN(d->dev.max_sge, (uint32_t)UTIL_RDM_IOV_MAX + 1);
	return 0;
}

/* An endpoint of info; sep: pair ctx of that scalable endpoint. */
static int ep_make(struct verbs_domain *domain, struct fi_info *info,
		   struct verbs_sep *sep, uint32_t ctx,
		   struct verbs_rdm_ep **out, void *context)
{
	struct util_rdm_ep_attr attr = {
		/*
		 * Endpoints of a domain sweep each other (util_rdm.h): an
		 * rdma_cm handshake needs both sides' progress.  A scalable
		 * endpoint's pairs too, when their locks are real; when they
		 * are not (the application keeps to one thread per endpoint
		 * and progress is manual), a pair is driven by its own
		 * thread only, and wakes on a set of its own.
		 */
		.sweep_domain = !sep || util_domain_progress_needs_lock(
						&domain->base.util),
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
	ep->own_epfd = !attr.sweep_domain;
	if (sep) {
		ep->sep = sep;
		ep->ctx = ctx;
		if (ctx)
			ep->pair0 = vep_of(sep->base.pair[0].ep);
	}
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
	if (ep->pair0) {
		/* Pair 0 listens for the scalable endpoint; the others say
		 * its address as theirs. */
		ep->addr = ep->pair0->addr;
		ep->addrlen = ep->pair0->addrlen;
	} else {
		ret = ep_listen(ep, info);
		if (ret)
			goto err;
	}
	ep->xp.ops = &verbs_rdm_transport;
	ep->xp.eager_max = VRDM_EAGER_MAX;
	/* Sends complete at their work completion: over InfiniBand and
	 * RoCE the peer's acknowledgement, which a dead peer never gives;
	 * over iWARP only that TCP took the message, but one way for all
	 * devices (siw completes out of order: see sq_give). */
	ep->xp.eager_late = true;
	attr.xport = &ep->xp;
	ep->amo_device = verbs_rdm_device_atomics();
	if (ep->amo_device)
		attr.hooks = &verbs_rdm_amo_hooks;
	/* Same-host peers apply atomics through shared memory with the
	 * CPU, not atomically with the device's: with device atomics, all
	 * go through the device. */
	if (verbs_params.shm && !(ep->amo_device && (info->caps & FI_ATOMIC))) {
		attr.local_ops = &shm_local_ops;
		attr.local_via = "the device";
	}
	ret = util_rdm_ep_init(&ep->rdm, &domain->base.util, info, &attr,
			       context);
	if (ret)
		goto err;
	ep->rdm.base.ep_fid.fid.ops = &verbs_rdm_fi_ops;
	ep->rdm.base.ep_fid.cm = &verbs_rdm_cm_ops;
	if (sep && ctx)
		util_rdm_inbox_open(&sep->base, ctx);
	*out = ep;
	return 0;
err:
	ep_teardown(ep);
	free(ep);
	return ret;
}

int verbs_rdm_ep_open(struct verbs_domain *domain, struct fi_info *info,
		      struct fid_ep **ep_fid, void *context)
{
	struct verbs_rdm_ep *ep;
	int ret;

	ret = ep_make(domain, info, NULL, 0, &ep, context);
	if (ret)
		return ret;
	*ep_fid = &ep->rdm.base.ep_fid;
	return 0;
}

int verbs_rdm_pair_open(struct verbs_sep *sep, uint32_t ctx,
			struct verbs_rdm_ep **out)
{
	struct verbs_domain *domain =
		verbs_domain_of(&sep->base.domain->domain_fid);

	return ep_make(domain, sep->base.info, sep, ctx, out, NULL);
}
