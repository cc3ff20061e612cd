/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * "loop": the smallest provider weft can have, the worked example of
 * docs/ARCHITECTURE.md ("Adding a provider").  It lives in the test tree and
 * is compiled into its test program only, never into libfabric.so.
 *
 * FI_EP_RDM endpoints of one process, reached through an in-process
 * loopback: a send copies the message into the destination endpoint's
 * inbound queue; the destination's progress hands it to the RDM engine
 * (util_rdm_msg_arrived), which does everything an application sees
 * (matching, unexpected messages, FI_SOURCE, cancel, truncation,
 * completions, counters).  Eager messages only, up to LOOP_EAGER_MAX bytes,
 * which is also max_msg_size; no RMA or atomics.
 *
 * One process-wide mutex guards the table of endpoints and every inbound
 * queue: it is taken once per message, which a real transport would not do
 * (a queue per sender, or a lock-free ring).  Endpoint ids are never reused
 * in a process, so an address kept after its endpoint closed reaches
 * nothing (sends to it fail with -FI_EHOSTUNREACH).
 */
#include "weft/core.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <stdio.h>

#include "weft/stubs.h"
#include "weft/util_av.h"
#include "weft/util_bufpool.h"
#include "weft/util_cntr.h"
#include "weft/util_cq.h"
#include "weft/util_eq.h"
#include "weft/util_getinfo.h"
#include "weft/util_iov.h"
#include "weft/util_mr.h"
#include "weft/util_poll.h"
#include "weft/util_rdm.h"
#include "weft/util_wait.h"

#define LOOP_PREFIX "fi_loop://"
#define LOOP_ADDRLEN 32 /* "fi_loop://ID", NUL-padded */
#define LOOP_EAGER_MAX 4096
#define LOOP_INJECT_MAX 256
#define LOOP_MAX_EPS 1024 /* endpoints a process may open */
#define LOOP_QUEUE_MAX 64 /* messages waiting in one inbound queue */

static struct fi_provider loop_prov;

/* ---- what the provider offers (util_getinfo's candidate) ---------------- */

#define LOOP_TX_CAPS (FI_MSG | FI_TAGGED | FI_SEND)
#define LOOP_RX_CAPS                                                           \
	(FI_MSG | FI_TAGGED | FI_RECV | FI_MULTI_RECV | FI_DIRECTED_RECV |    \
	 FI_SOURCE)

static struct fi_tx_attr loop_tx_attr = {
	.caps = LOOP_TX_CAPS,
	.op_flags = FI_COMPLETION | FI_INJECT | FI_INJECT_COMPLETE |
		    FI_TRANSMIT_COMPLETE | FI_DELIVERY_COMPLETE |
		    FI_REMOTE_CQ_DATA,
	/* One FIFO per receiver: what one sender sends arrives in order. */
	.msg_order = FI_ORDER_SAS,
	.comp_order = FI_ORDER_NONE,
	.inject_size = LOOP_INJECT_MAX,
	.size = 256,
	.iov_limit = UTIL_RDM_IOV_MAX,
};

static struct fi_rx_attr loop_rx_attr = {
	.caps = LOOP_RX_CAPS,
	.op_flags = FI_COMPLETION | FI_MULTI_RECV,
	.msg_order = FI_ORDER_SAS,
	.comp_order = FI_ORDER_NONE,
	.size = 256,
	.iov_limit = UTIL_RDM_IOV_MAX,
};

static struct fi_ep_attr loop_ep_attr = {
	.type = FI_EP_RDM,
	/* No protocol of fi_endpoint(3)'s list: one of its own. */
	.protocol = FI_PROV_SPECIFIC | 1,
	.protocol_version = 1,
	.max_msg_size = LOOP_EAGER_MAX,
	.mem_tag_format = 0xaaaaaaaaaaaaaaaaULL,
	.tx_ctx_cnt = 1,
	.rx_ctx_cnt = 1,
};

static struct fi_domain_attr loop_domain_attr = {
	.name = "loop",
	.threading = FI_THREAD_SAFE,
	.control_progress = FI_PROGRESS_AUTO,
	.data_progress = FI_PROGRESS_MANUAL,
	.resource_mgmt = FI_RM_ENABLED,
	.av_type = FI_AV_UNSPEC,
	.mr_mode = 0,
	.mr_key_size = sizeof(uint64_t),
	.cq_data_size = sizeof(uint64_t),
	.cq_cnt = 64,
	.ep_cnt = LOOP_MAX_EPS,
	.tx_ctx_cnt = LOOP_MAX_EPS,
	.rx_ctx_cnt = LOOP_MAX_EPS,
	.max_ep_tx_ctx = 1,
	.max_ep_rx_ctx = 1,
	.cntr_cnt = 64,
	.mr_iov_limit = UTIL_MR_IOV_LIMIT,
	.caps = FI_LOCAL_COMM,
	.mr_cnt = 1024,
};

static struct fi_fabric_attr loop_fabric_attr = {
	.name = "loop",
	.prov_version = WEFT_PROV_VERSION,
};

static struct fi_info loop_info = {
	.caps = LOOP_TX_CAPS | LOOP_RX_CAPS | FI_LOCAL_COMM,
	.addr_format = FI_ADDR_STR,
	.tx_attr = &loop_tx_attr,
	.rx_attr = &loop_rx_attr,
	.ep_attr = &loop_ep_attr,
	.domain_attr = &loop_domain_attr,
	.fabric_attr = &loop_fabric_attr,
};

static const struct util_prov loop_util_prov = {
	.prov = &loop_prov,
	.info = &loop_info,
	/* No resolve: node and service mean nothing to loop. */
};

static int loop_getinfo(uint32_t version, const char *node,
			const char *service, uint64_t flags,
			const struct fi_info *hints, struct fi_info **info)
{
	return util_getinfo(&loop_util_prov, version, node, service, flags,
			    hints, info);
}

/* ---- the transport ------------------------------------------------------ */

enum loop_kind {
	LOOP_MSG,
	LOOP_ACK, /* hdr.tx_id delivered, with err (FI_DELIVERY_COMPLETE) */
};

/* One entry of an inbound queue, from the receiver's pool. */
struct loop_slot {
	struct dlist_entry entry;
	uint32_t kind; /* enum loop_kind */
	uint32_t src; /* the sender's endpoint id */
	int err; /* LOOP_ACK */
	struct util_rdm_hdr hdr;
	uint8_t payload[LOOP_EAGER_MAX];
};

struct loop_ep {
	struct util_rdm_ep rdm; /* first: the engine's endpoint */
	struct util_rdm_xport xp; /* the transport serving it */
	uint32_t id;
	/* Under loop_lock: */
	struct util_bufpool *pool; /* struct loop_slot */
	struct dlist_entry inbox; /* struct loop_slot.entry, oldest first */
	size_t queued; /* LOOP_MSG slots in inbox */
};

/* The transport's part of a peer: the peer map allocates it. */
struct loop_peer {
	struct util_peer peer; /* first */
	uint32_t id; /* the endpoint its address names */
};

static pthread_mutex_t loop_lock = PTHREAD_MUTEX_INITIALIZER;
static struct loop_ep *loop_eps[LOOP_MAX_EPS]; /* by id, under loop_lock */
static uint32_t loop_next_id = 1; /* under loop_lock */

static void loop_addr(uint32_t id, char addr[LOOP_ADDRLEN])
{
	memset(addr, 0, LOOP_ADDRLEN);
	snprintf(addr, LOOP_ADDRLEN, LOOP_PREFIX "%u", id);
}

static struct loop_ep *loop_ep_of(struct util_rdm_xport *xp)
{
	return container_of(xp, struct loop_ep, xp);
}

/* The endpoint id an address names ("fi_loop://ID"): 0 or -FI_EINVAL. */
static int loop_id_of(const char *addr, uint32_t *id)
{
	unsigned long n;
	char *end;

	if (strncmp(addr, LOOP_PREFIX, strlen(LOOP_PREFIX)))
		return -FI_EINVAL;
	n = strtoul(addr + strlen(LOOP_PREFIX), &end, 10);
	if (*end || n == 0 || n >= LOOP_MAX_EPS)
		return -FI_EINVAL;
	*id = (uint32_t)n;
	return 0;
}

/* A new peer: which endpoint its address (the AV's stored form) names. */
static int loop_peer_init(struct util_rdm_xport *xp, struct util_peer *peer)
{
	return loop_id_of(peer->addr,
			  &container_of(peer, struct loop_peer, peer)->id);
}

/*
 * Append a slot to endpoint id's inbound queue: a message (its hdr and the
 * hdr->len bytes of iov) or an acknowledgement (hdr->tx_id and err).
 */
static int loop_push(uint32_t id, uint32_t kind, uint32_t src,
		     const struct util_rdm_hdr *hdr, const struct iovec *iov,
		     size_t iov_count, int err)
{
	struct loop_ep *dst;
	struct loop_slot *s;
	int ret = 0;

	pthread_mutex_lock(&loop_lock);
	dst = loop_eps[id];
	if (!dst) {
		ret = -FI_EHOSTUNREACH;
		goto out;
	}
	/* Acknowledgements are bounded by their senders' transmits: only
	 * messages wait for room. */
	if (kind == LOOP_MSG && dst->queued >= LOOP_QUEUE_MAX) {
		ret = -FI_EAGAIN;
		goto out;
	}
	s = util_bufpool_get(dst->pool);
	if (!s) {
		ret = kind == LOOP_MSG ? -FI_EAGAIN : -FI_ENOMEM;
		goto out;
	}
	s->kind = kind;
	s->src = src;
	s->err = err;
	s->hdr = *hdr;
	if (kind == LOOP_MSG) {
		util_iov_copy_from(s->payload, iov, iov_count, 0, hdr->len);
		dst->queued++;
	}
	dlist_insert_tail(&s->entry, &dst->inbox);
out:
	pthread_mutex_unlock(&loop_lock);
	return ret;
}

/* The whole message into the destination's queue now, or -FI_EAGAIN. */
static int loop_send_eager(struct util_rdm_xport *xp, struct util_peer *peer,
			   const struct util_rdm_hdr *hdr,
			   const struct iovec *iov, void **desc,
			   size_t iov_count)
{
	return loop_push(container_of(peer, struct loop_peer, peer)->id,
			 LOOP_MSG, loop_ep_of(xp)->id, hdr, iov, iov_count, 0);
}

/* Nothing is larger than max_msg_size (LOOP_EAGER_MAX): no rendezvous. */
static int loop_send_rndv(struct util_rdm_xport *xp, struct util_rdm_tx *tx)
{
	return -FI_EMSGSIZE;
}

/* Never called: no message is stashed (every payload comes inline). */
static int loop_fetch(struct util_rdm_xport *xp, const void *stash,
		      const struct iovec *iov, void **desc, size_t iov_count,
		      size_t len, void *cookie)
{
	return -FI_ENOSYS;
}

static void loop_discard(struct util_rdm_xport *xp, const void *stash)
{
}

/* A message that asked for it is delivered: tell its sender (`reply`). */
static int loop_ack(struct util_rdm_xport *xp, void *reply, uint64_t tx_id,
		    int err)
{
	struct util_rdm_hdr hdr = { .tx_id = tx_id };

	return loop_push((uint32_t)(uintptr_t)reply, LOOP_ACK,
			 loop_ep_of(xp)->id, &hdr, NULL, 0, err);
}

static int loop_deliver(struct loop_ep *ep, const struct loop_slot *s)
{
	char src[LOOP_ADDRLEN];
	struct util_rdm_msg msg = {
		.op = s->hdr.op,
		.flags = s->hdr.flags & (UTIL_RDM_CQ_DATA | UTIL_RDM_ACK_REQ),
		.tag = s->hdr.tag,
		.data = s->hdr.data,
		.len = s->hdr.len,
		.src = FI_ADDR_NOTAVAIL,
		.src_raw = src,
		.src_raw_len = sizeof(src),
		.payload = s->payload,
		.tx_id = s->hdr.tx_id,
		.reply = (void *)(uintptr_t)s->src,
	};

	loop_addr(s->src, src);
	if (ep->rdm.base.av &&
	    (ep->rdm.base.caps & (FI_SOURCE | FI_DIRECTED_RECV)))
		msg.src = util_av_lookup_addr(ep->rdm.base.av, src);
	return util_rdm_msg_arrived(&ep->xp, &msg);
}

/*
 * Hand what arrived to the engine, oldest first.  Senders append at the
 * tail under loop_lock while the head is read without it: only this
 * endpoint's progress (engine lock held) takes slots out.
 */
static int loop_progress(struct util_rdm_xport *xp)
{
	struct loop_ep *ep = loop_ep_of(xp);
	struct loop_slot *s;
	int n;

	for (n = 0; n < LOOP_QUEUE_MAX; n++) {
		pthread_mutex_lock(&loop_lock);
		s = dlist_empty(&ep->inbox) ?
			    NULL :
			    container_of(ep->inbox.next, struct loop_slot,
					 entry);
		pthread_mutex_unlock(&loop_lock);
		if (!s)
			break;
		if (s->kind == LOOP_ACK)
			util_rdm_tx_acked(&ep->rdm, s->hdr.tx_id, s->err);
		else if (loop_deliver(ep, s) == -FI_EAGAIN)
			break; /* kept, offered again before anything later */
		pthread_mutex_lock(&loop_lock);
		dlist_remove(&s->entry);
		ep->queued -= s->kind == LOOP_MSG;
		util_bufpool_put(ep->pool, s);
		pthread_mutex_unlock(&loop_lock);
	}
	return n;
}

static const struct util_rdm_transport loop_transport = {
	.send_eager = loop_send_eager,
	.send_rndv = loop_send_rndv,
	.fetch = loop_fetch,
	.discard = loop_discard,
	.ack = loop_ack,
	.progress = loop_progress,
	.peer_size = sizeof(struct loop_peer),
	.peer_init = loop_peer_init,
	/* rma NULL: fi_write and fi_atomic fail with -FI_EOPNOTSUPP.  No
	 * wait_fd: waits poll. */
};

/* ---- endpoint ----------------------------------------------------------- */

static int loop_ep_close(struct fid *fid)
{
	struct loop_ep *ep =
		container_of(fid, struct loop_ep, rdm.base.ep_fid.fid);
	struct loop_slot *s;

	/* Injects the destination could not take yet still go. */
	util_rdm_ep_linger(&ep->rdm);
	pthread_mutex_lock(&loop_lock);
	loop_eps[ep->id] = NULL;
	pthread_mutex_unlock(&loop_lock);
	util_rdm_ep_fini(&ep->rdm);
	while (!dlist_empty(&ep->inbox)) {
		s = container_of(ep->inbox.next, struct loop_slot, entry);
		dlist_remove(&s->entry);
		util_bufpool_put(ep->pool, s);
	}
	util_bufpool_destroy(ep->pool);
	free(ep);
	return 0;
}

static struct fi_ops loop_ep_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = loop_ep_close,
	.bind = util_rdm_ep_bind,
	.control = util_rdm_ep_control,
	.ops_open = weft_no_ops_open,
	.tostr = weft_no_tostr,
	.ops_set = weft_no_ops_set,
};

static int loop_getname(fid_t fid, void *addr, size_t *addrlen)
{
	struct loop_ep *ep =
		container_of(fid, struct loop_ep, rdm.base.ep_fid.fid);
	char buf[LOOP_ADDRLEN];
	size_t len;

	if (!addrlen)
		return -FI_EINVAL;
	loop_addr(ep->id, buf);
	len = strlen(buf) + 1;
	if (!addr || *addrlen < len) {
		*addrlen = len;
		return -FI_ETOOSMALL;
	}
	memcpy(addr, buf, len);
	*addrlen = len;
	return 0;
}

static struct fi_ops_cm loop_cm_ops = {
	.size = sizeof(struct fi_ops_cm),
	.setname = weft_no_setname,
	.getname = loop_getname,
	.getpeer = weft_no_getpeer,
	.connect = weft_no_connect,
	.listen = weft_no_listen,
	.accept = weft_no_accept,
	.reject = weft_no_reject,
	.shutdown = weft_no_shutdown,
	.join = weft_no_join,
};

static int loop_ep_open(struct fid_domain *domain_fid, struct fi_info *info,
			struct fid_ep **ep_fid, void *context)
{
	struct util_domain *domain =
		container_of(domain_fid, struct util_domain, domain_fid);
	struct util_bufpool_attr pattr = {
		.name = "loop inbox",
		.size = sizeof(struct loop_slot),
	};
	struct util_rdm_ep_attr attr = {
		.inject_max = LOOP_INJECT_MAX,
		.peer_addr_len = LOOP_ADDRLEN,
		.unexp_inline = 64,
	};
	struct loop_ep *ep;
	int ret;

	if (!info || !info->ep_attr || info->ep_attr->type != FI_EP_RDM)
		return -FI_EINVAL;
	ret = util_prov_check_ep(&loop_util_prov, info);
	if (ret)
		return ret;
	ep = calloc(1, sizeof(*ep));
	if (!ep)
		return -FI_ENOMEM;
	dlist_init(&ep->inbox);
	ret = util_bufpool_create(&pattr, &ep->pool);
	if (ret)
		goto err_free;
	ep->xp.ops = &loop_transport;
	ep->xp.eager_max = LOOP_EAGER_MAX;
	attr.xport = &ep->xp;
	ret = util_rdm_ep_init(&ep->rdm, domain, info, &attr, context);
	if (ret)
		goto err_pool;
	ep->rdm.base.ep_fid.fid.ops = &loop_ep_fi_ops;
	ep->rdm.base.ep_fid.cm = &loop_cm_ops;

	pthread_mutex_lock(&loop_lock);
	if (loop_next_id < LOOP_MAX_EPS) {
		ep->id = loop_next_id++;
		loop_eps[ep->id] = ep;
	}
	pthread_mutex_unlock(&loop_lock);
	if (!ep->id) {
		ret = -FI_ENOSPC;
		goto err_rdm;
	}
	*ep_fid = &ep->rdm.base.ep_fid;
	return 0;

err_rdm:
	util_rdm_ep_fini(&ep->rdm);
err_pool:
	util_bufpool_destroy(ep->pool);
err_free:
	free(ep);
	return ret;
}

/* ---- domain and fabric -------------------------------------------------- */

/* fi_av_insert takes loop addresses only, kept as they are (NUL-padded). */
static int loop_av_normalize(const struct util_av *av, const void *in,
			     void *out)
{
	uint32_t id;

	if (strnlen(in, LOOP_ADDRLEN) == LOOP_ADDRLEN || loop_id_of(in, &id))
		return -FI_EINVAL;
	loop_addr(id, out);
	return 0;
}

static const struct util_av_ops loop_av_ops = {
	.addr_format = FI_ADDR_STR,
	.normalize = loop_av_normalize,
	.addrlen = LOOP_ADDRLEN,
	.str_prefix = LOOP_PREFIX,
};

static int loop_av_open(struct fid_domain *domain_fid, struct fi_av_attr *attr,
			struct fid_av **av, void *context)
{
	return util_av_open(container_of(domain_fid, struct util_domain,
					 domain_fid),
			    attr, &loop_av_ops, av, context);
}

static int loop_query_atomic(struct fid_domain *domain,
			     enum fi_datatype datatype, enum fi_op op,
			     struct fi_atomic_attr *attr, uint64_t flags)
{
	return -FI_EOPNOTSUPP;
}

static struct fi_ops_domain loop_domain_ops = {
	.size = sizeof(struct fi_ops_domain),
	.av_open = loop_av_open,
	.cq_open = util_cq_open_op,
	.endpoint = loop_ep_open,
	.scalable_ep = weft_no_scalable_ep,
	.cntr_open = util_cntr_open_op,
	.poll_open = util_poll_open,
	.stx_ctx = weft_no_stx_ctx,
	.srx_ctx = weft_no_srx_ctx,
	.query_atomic = loop_query_atomic,
	.query_collective = weft_no_query_collective,
	.endpoint2 = util_domain_endpoint2,
};

static int loop_domain_open(struct fid_fabric *fabric_fid,
			    struct fi_info *info,
			    struct fid_domain **domain_fid, void *context)
{
	return util_mr_domain_open(&loop_util_prov, fabric_fid, info,
				   &loop_domain_ops, domain_fid, context);
}

static struct fi_ops_fabric loop_fabric_ops = {
	.size = sizeof(struct fi_ops_fabric),
	.domain = loop_domain_open,
	.passive_ep = weft_no_passive_ep,
	.eq_open = util_eq_open_op,
	.wait_open = util_wait_open,
	.trywait = util_trywait,
	.domain2 = util_fabric_domain2,
};

static int loop_fabric_open(struct fi_fabric_attr *attr,
			    struct fid_fabric **fabric_fid, void *context)
{
	if (attr->name && strcmp(attr->name, loop_fabric_attr.name))
		return -FI_EINVAL;
	return util_fabric_open(&loop_prov, attr, &loop_fabric_ops, fabric_fid,
				context);
}

static void loop_cleanup(void)
{
}

static struct fi_provider loop_prov = {
	.version = WEFT_PROV_VERSION,
	.fi_version = WEFT_API_VERSION,
	.name = "loop",
	.getinfo = loop_getinfo,
	.fabric = loop_fabric_open,
	.cleanup = loop_cleanup,
};
WEFT_PROVIDER(loop_prov);
