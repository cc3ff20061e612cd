/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * verbs FI_EP_MSG connection management: rdma_cm events of an endpoint
 * (connect, accept, shutdown), its fi_ops_cm, and passive endpoints.
 *
 * Connection management.  Each endpoint and passive endpoint has its own
 * rdma_cm event channel; its fd is added to the bound EQ's wait object
 * and its progress to the EQ (util_eq_add_progress), so reading the EQ
 * turns rdma_cm events into FI_CONNREQ / FI_CONNECTED / FI_SHUTDOWN and
 * errors.  An FI_CONNREQ's handle is the new rdma_cm id; fi_endpoint with
 * that info migrates it to the endpoint's channel.  Private data travels
 * behind a struct verbs_cm_hdr (verbs_proto.h, docs/verbs-cm.md).
 */
#include "verbs_msg.h"

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>

#include "weft/ofi.h"

#include "weft/stubs.h"
#include "weft/util_pep.h"

struct verbs_pep {
	struct util_pep util; /* first */
	struct rdma_event_channel *cm_ch;
	struct rdma_cm_id *id;
	bool any_port; /* bound with port 0: listen may take another */
};

static struct verbs_pep *verbs_pep_of(struct util_pep *pep)
{
	return container_of(pep, struct verbs_pep, util);
}

/* ---- private data ------------------------------------------------------- */

int verbs_set_nonblock(int fd)
{
	int fl = fcntl(fd, F_GETFL);

	if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK))
		return weft_errno(errno);
	return 0;
}

/*
 * Private data into out (VERBS_CM_PRIV_BUF bytes): the header, the
 * application's len bytes, and fence_of's fence region if it has one (a
 * connect or accept on iWARP; NULL for a reject).  Its length, or
 * -FI_EINVAL.
 */
static int cm_pack(uint8_t *out, const void *param, size_t len,
		   const struct verbs_domain *fence_of)
{
	struct verbs_fence f;

	return verbs_cm_priv_encode(out, param, len,
				    fence_of ? verbs_domain_fence(fence_of, &f) :
					       NULL);
}

/*
 * The application's part of a peer's private data (NULL, 0 if none), and
 * into fence, if not NULL, the peer's fence region (rkey 0 if none).
 */
static const void *cm_unpack(const void *priv, size_t priv_len, size_t *len,
			     struct verbs_fence *fence)
{
	const void *data;

	/* Data that is not ours is none (docs/verbs-cm.md). */
	verbs_cm_priv_decode(priv, priv_len, &data, len, fence);
	return data;
}

/* ---- connection management (endpoint side) ----------------------------- */

static void conn_param_fill(struct verbs_msg_ep *ep,
			    struct rdma_conn_param *cp)
{
	const struct verbs_dev *d = &ep->domain->dev;

	memset(cp, 0, sizeof(*cp));
	cp->private_data = ep->cm_priv;
	cp->private_data_len = ep->cm_priv_len;
	cp->responder_resources = (uint8_t)WEFT_MIN(d->max_qp_rd_atom, 255u);
	cp->initiator_depth = (uint8_t)WEFT_MIN(d->max_qp_init_rd_atom, 255u);
	cp->retry_count = 7;
	cp->rnr_retry_count = 7; /* retry until the peer posts a receive */
}

static void ep_cm_error(struct verbs_msg_ep *ep, int err, const void *priv,
			size_t priv_len)
{
	size_t len;
	const void *data = cm_unpack(priv, priv_len, &len, NULL);

	ep->state = VERBS_CM_FAILED;
	if (ep->base.eq)
		util_eq_write_cm_err(ep->base.eq, &ep->base.ep_fid.fid, err,
				     data, len);
}

static void ep_cm_event(struct verbs_msg_ep *ep, struct rdma_cm_event *ev)
{
	struct verbs_fence fence;
	struct rdma_conn_param cp;
	const void *data;
	bool was_open;
	size_t len;

	switch (ev->event) {
	case RDMA_CM_EVENT_ADDR_RESOLVED:
		if (rdma_resolve_route(ep->id, verbs_params.conn_timeout_ms))
			ep_cm_error(ep, FI_EHOSTUNREACH, NULL, 0);
		break;
	case RDMA_CM_EVENT_ROUTE_RESOLVED:
		if (verbs_msg_qp_create(ep)) {
			ep_cm_error(ep, FI_ENOMEM, NULL, 0);
			break;
		}
		conn_param_fill(ep, &cp);
		if (rdma_connect(ep->id, &cp)) {
			ep_cm_error(ep, FI_ECONNREFUSED, NULL, 0);
			break;
		}
		ep->state = VERBS_CM_CONNECTING;
		break;
	case RDMA_CM_EVENT_ESTABLISHED:
		ep->state = VERBS_CM_CONNECTED;
		data = cm_unpack(ev->param.conn.private_data,
				 ev->param.conn.private_data_len, &len,
				 &fence);
		/* The accept's (the passive side had the request's). */
		if (fence.rkey && ep->domain->fence_mr)
			ep->fence = fence;
		if (ep->base.eq)
			util_eq_write_cm(ep->base.eq, FI_CONNECTED,
					 &ep->base.ep_fid.fid, NULL, data, len);
		break;
	case RDMA_CM_EVENT_REJECTED:
		ep_cm_error(ep, FI_ECONNREFUSED, ev->param.conn.private_data,
			    ev->param.conn.private_data_len);
		break;
	case RDMA_CM_EVENT_ADDR_ERROR:
	case RDMA_CM_EVENT_ROUTE_ERROR:
	case RDMA_CM_EVENT_UNREACHABLE:
		ep_cm_error(ep, FI_EHOSTUNREACH, NULL, 0);
		break;
	case RDMA_CM_EVENT_CONNECT_ERROR:
		ep_cm_error(ep, FI_ECONNABORTED, NULL, 0);
		break;
	case RDMA_CM_EVENT_DISCONNECTED:
	case RDMA_CM_EVENT_DEVICE_REMOVAL:
		if (ep->state == VERBS_CM_SHUTDOWN)
			break;
		was_open = ep->state == VERBS_CM_CONNECTED;
		/* The QP to the error state: what is still posted completes
		 * as FI_ECANCELED.  (rdma_disconnect does that on InfiniBand
		 * and RoCE; over iWARP it may leave the QP closing, with
		 * its send queue not flushed.) */
		rdma_disconnect(ep->id);
		if (ep->qp) {
			struct ibv_qp_attr qa = { .qp_state = IBV_QPS_ERR };

			ibv_modify_qp(ep->qp, &qa, IBV_QP_STATE);
			ep->err_flush = ep->domain->dev.err_post_lost;
		}
		ep->state = VERBS_CM_SHUTDOWN;
		/* Whichever side shut the connection down (clients wait for
		 * it after their own fi_shutdown), once; nothing for a
		 * connect the application itself ended. */
		if (ep->base.eq && (was_open || !ep->local_shutdown))
			util_eq_write_cm(ep->base.eq, FI_SHUTDOWN,
					 &ep->base.ep_fid.fid, NULL, NULL, 0);
		break;
	default:
		break;
	}
}

void verbs_msg_cm_progress(struct util_progress *p)
{
	struct verbs_msg_ep *ep =
		container_of(p, struct verbs_msg_ep, base.cm_progress);
	struct rdma_cm_event *ev, copy;
	uint8_t priv[256];

	util_ep_lock(&ep->base);
	while (!rdma_get_cm_event(ep->cm_ch, &ev)) {
		/* Ack first (rdma_destroy_id waits for acks); keep what the
		 * handler reads. */
		copy = *ev;
		if (ev->param.conn.private_data &&
		    ev->param.conn.private_data_len) {
			size_t n = WEFT_MIN(sizeof(priv),
					    (size_t)ev->param.conn.private_data_len);

			memcpy(priv, ev->param.conn.private_data, n);
			copy.param.conn.private_data = priv;
			copy.param.conn.private_data_len = (uint8_t)n;
		}
		rdma_ack_cm_event(ev);
		ep_cm_event(ep, &copy);
	}
	util_ep_unlock(&ep->base);
}

/* ---- fi_ops_cm (endpoint) ----------------------------------------------- */

static int sockaddr_out(const struct sockaddr *sa, void *addr,
			size_t *addrlen)
{
	if (!addrlen)
		return -FI_EINVAL;
	if (!sa || (sa->sa_family != AF_INET && sa->sa_family != AF_INET6))
		return -FI_EADDRNOTAVAIL;
	return util_name_out(sa, util_sockaddr_len(sa), addr, addrlen);
}

static int ep_getname(fid_t fid, void *addr, size_t *addrlen)
{
	struct verbs_msg_ep *ep =
		container_of(fid, struct verbs_msg_ep, base.ep_fid.fid);
	struct sockaddr *sa = rdma_get_local_addr(ep->id);

	if (sa->sa_family != AF_INET && sa->sa_family != AF_INET6)
		sa = (struct sockaddr *)&ep->src_addr;
	return sockaddr_out(sa, addr, addrlen);
}

static int ep_getpeer(struct fid_ep *ep_fid, void *addr, size_t *addrlen)
{
	struct verbs_msg_ep *ep = msg_ep_of(ep_fid);

	if (ep->state != VERBS_CM_CONNECTED &&
	    ep->state != VERBS_CM_CONNECTING)
		return -FI_ENOTCONN;
	return sockaddr_out(rdma_get_peer_addr(ep->id), addr, addrlen);
}

static int ep_connect(struct fid_ep *ep_fid, const void *addr,
		      const void *param, size_t paramlen)
{
	struct verbs_msg_ep *ep = msg_ep_of(ep_fid);
	struct sockaddr *src = NULL;
	int ret;

	if (!addr)
		return -FI_EINVAL;
	if (!ep->base.eq)
		return -FI_ENOEQ;
	ret = cm_pack(ep->cm_priv, param, paramlen, ep->domain);
	if (ret < 0)
		return ret;
	ep->cm_priv_len = (uint8_t)ret;
	util_ep_lock(&ep->base);
	if (ep->state != VERBS_CM_IDLE) {
		util_ep_unlock(&ep->base);
		return -FI_EISCONN;
	}
	if (ep->src_addr.ss_family)
		src = (struct sockaddr *)&ep->src_addr;
	ret = verbs_resolve_addr(ep->id, &ep->domain->dev, src, addr);
	if (ret) {
		util_ep_unlock(&ep->base);
		return ret;
	}
	ep->state = VERBS_CM_RESOLVING;
	util_ep_unlock(&ep->base);
	return 0;
}

static int ep_accept(struct fid_ep *ep_fid, const void *param,
		     size_t paramlen)
{
	struct verbs_msg_ep *ep = msg_ep_of(ep_fid);
	struct rdma_conn_param cp;
	int ret;

	ret = cm_pack(ep->cm_priv, param, paramlen, ep->domain);
	if (ret < 0)
		return ret;
	ep->cm_priv_len = (uint8_t)ret;
	util_ep_lock(&ep->base);
	if (ep->state != VERBS_CM_IDLE || !ep->id->verbs) {
		ret = -FI_EOPBADSTATE;
		goto out;
	}
	if (!ep->base.enabled) {
		ret = -FI_EOPBADSTATE;
		goto out;
	}
	ret = verbs_msg_qp_create(ep);
	if (ret)
		goto out;
	conn_param_fill(ep, &cp);
	if (rdma_accept(ep->id, &cp)) {
		ret = weft_errno(errno);
		goto out;
	}
	ep->state = VERBS_CM_CONNECTING;
out:
	util_ep_unlock(&ep->base);
	return ret;
}

static int ep_shutdown(struct fid_ep *ep_fid, uint64_t flags)
{
	struct verbs_msg_ep *ep = msg_ep_of(ep_fid);

	util_ep_lock(&ep->base);
	ep->local_shutdown = true;
	if (ep->state == VERBS_CM_CONNECTED ||
	    ep->state == VERBS_CM_CONNECTING)
		rdma_disconnect(ep->id);
	util_ep_unlock(&ep->base);
	return 0;
}

static int ep_setname(fid_t fid, void *addr, size_t addrlen)
{
	struct verbs_msg_ep *ep =
		container_of(fid, struct verbs_msg_ep, base.ep_fid.fid);

	if (!addr || addrlen > sizeof(ep->src_addr) ||
	    addrlen < sizeof(struct sockaddr_in))
		return -FI_EINVAL;
	if (ep->state != VERBS_CM_IDLE)
		return -FI_EOPBADSTATE;
	memcpy(&ep->src_addr, addr, addrlen);
	return 0;
}

struct fi_ops_cm verbs_msg_cm_ops = {
	.size = sizeof(struct fi_ops_cm),
	.setname = ep_setname,
	.getname = ep_getname,
	.getpeer = ep_getpeer,
	.connect = ep_connect,
	.listen = weft_no_listen,
	.accept = ep_accept,
	.reject = weft_no_reject,
	.shutdown = ep_shutdown,
	.join = weft_no_join,
};

/* ---- fi_ops_ep, fi_ops -------------------------------------------------- */

static int cm_getopt(int level, int optname, void *optval, size_t *optlen)
{
	return util_cm_getopt(level, optname, optval, optlen,
			      VERBS_CM_DATA_MAX);
}

int verbs_ep_getopt(fid_t fid, int level, int optname, void *optval,
		    size_t *optlen)
{
	return cm_getopt(level, optname, optval, optlen);
}

int verbs_ep_setopt(fid_t fid, int level, int optname, const void *optval,
		    size_t optlen)
{
	return -FI_ENOPROTOOPT;
}

/* ---- passive endpoints -------------------------------------------------- */

static void pep_connreq(struct verbs_pep *pep, struct rdma_cm_event *ev)
{
	struct verbs_connreq *cr;
	const void *data;
	size_t len;

	cr = calloc(1, sizeof(*cr));
	if (!cr)
		goto refuse;
	cr->handle.fclass = FI_CLASS_CONNREQ;
	cr->id = ev->id;
	data = cm_unpack(ev->param.conn.private_data,
			 ev->param.conn.private_data_len, &len, &cr->fence);
	if (util_pep_connreq(&pep->util, &cr->handle,
			     rdma_get_peer_addr(ev->id), NULL, data, len))
		goto refuse;
	return;
refuse:
	free(cr);
	rdma_reject(ev->id, NULL, 0);
	rdma_destroy_id(ev->id);
}

static void pep_progress(struct util_pep *upep)
{
	struct verbs_pep *pep = verbs_pep_of(upep);
	struct rdma_cm_event *ev;

	while (!rdma_get_cm_event(pep->cm_ch, &ev)) {
		if (ev->event == RDMA_CM_EVENT_CONNECT_REQUEST) {
			struct rdma_cm_event copy = *ev;
			uint8_t priv[256];
			size_t n = WEFT_MIN(sizeof(priv),
					    (size_t)ev->param.conn.private_data_len);

			if (n)
				memcpy(priv, ev->param.conn.private_data, n);
			copy.param.conn.private_data = priv;
			copy.param.conn.private_data_len = (uint8_t)n;
			rdma_ack_cm_event(ev);
			pep_connreq(pep, &copy);
			continue;
		}
		rdma_ack_cm_event(ev);
	}
}

static void pep_close(struct util_pep *upep)
{
	struct verbs_pep *pep = verbs_pep_of(upep);

	if (pep->id)
		rdma_destroy_id(pep->id);
	if (pep->cm_ch)
		rdma_destroy_event_channel(pep->cm_ch);
	free(pep);
}

static int pep_local(struct util_pep *upep, struct sockaddr_storage *sa)
{
	const struct sockaddr *a = rdma_get_local_addr(verbs_pep_of(upep)->id);

	if (!a || (a->sa_family != AF_INET && a->sa_family != AF_INET6))
		return -FI_EADDRNOTAVAIL;
	memcpy(sa, a, util_sockaddr_len(a));
	return 0;
}

static int pep_bind_addr(struct util_pep *upep,
			 const struct sockaddr_storage *sa, size_t len)
{
	struct verbs_pep *pep = verbs_pep_of(upep);

	if (rdma_bind_addr(pep->id, (struct sockaddr *)sa))
		return weft_errno(errno);
	pep->any_port = !((const struct sockaddr_in *)sa)->sin_port;
	return 0;
}

static int pep_listen(struct util_pep *upep)
{
	struct verbs_pep *pep = verbs_pep_of(upep);
	struct sockaddr_storage sa;
	struct rdma_cm_id *id;
	int ret, tries = 0;

	while (rdma_listen(pep->id, 1024)) {
		ret = weft_errno(errno);
		/* On iWARP the port rdma_cm picked must be free in the
		 * kernel's TCP too, where an earlier connection may hold it
		 * (TIME_WAIT): with no port asked for, take another. */
		if (ret != -FI_EADDRINUSE || !pep->any_port || ++tries == 16)
			return ret;
		memcpy(&sa, rdma_get_local_addr(pep->id), sizeof(sa));
		((struct sockaddr_in *)&sa)->sin_port = 0; /* same offset in 6 */
		if (rdma_create_id(pep->cm_ch, &id, pep, RDMA_PS_TCP))
			return weft_errno(errno);
		if (rdma_bind_addr(id, (struct sockaddr *)&sa)) {
			ret = weft_errno(errno);
			rdma_destroy_id(id);
			return ret;
		}
		rdma_destroy_id(pep->id);
		pep->id = id;
	}
	return 0;
}

static int pep_reject(struct util_pep *upep, fid_t handle, const void *param,
		      size_t paramlen)
{
	struct verbs_connreq *cr;
	uint8_t priv[VERBS_CM_PRIV_MAX];
	int len;

	len = cm_pack(priv, param, paramlen, NULL);
	if (len < 0)
		return len;
	cr = container_of(handle, struct verbs_connreq, handle);
	rdma_reject(cr->id, priv, (uint8_t)len);
	rdma_destroy_id(cr->id);
	free(cr);
	return 0;
}

static const struct util_pep_ops verbs_pep_ops = {
	.progress = pep_progress,
	.bind = pep_bind_addr,
	.local = pep_local,
	.listen = pep_listen,
	.reject = pep_reject,
	.close = pep_close,
	.cm_data_max = VERBS_CM_DATA_MAX,
};

int verbs_passive_ep(struct fid_fabric *fabric, struct fi_info *info,
		     struct fid_pep **pep_fid, void *context)
{
	struct verbs_pep *pep;
	int ret;

	pep = calloc(1, sizeof(*pep));
	if (!pep)
		return -FI_ENOMEM;
	ret = util_pep_init(&pep->util, info, &verbs_pep_ops, context);
	if (ret) {
		free(pep);
		return ret;
	}
	pep->cm_ch = rdma_create_event_channel();
	ret = pep->cm_ch ? verbs_set_nonblock(pep->cm_ch->fd) : weft_errno(errno);
	if (!ret && rdma_create_id(pep->cm_ch, &pep->id, pep, RDMA_PS_TCP))
		ret = weft_errno(errno);
	if (ret) {
		util_pep_close(&pep->util.pep_fid.fid);
		return ret;
	}
	pep->any_port = true;
	return util_pep_start(&pep->util, pep->cm_ch->fd, pep_fid);
}
