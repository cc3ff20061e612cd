/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The tcp provider: registration, fi_getinfo, fabric, domain, AV, MR.
 *
 * fi_getinfo offers one RDM and one MSG candidate per usable interface
 * address (FI_TCP_IFACE narrows it to one interface): the domain name is
 * the interface ("eth0", "lo"), the fabric name its IP subnet, as 1.17's
 * tcp provider names them, and src_addr is the interface's address with
 * port 0 (the kernel picks one at fi_enable / fi_listen).
 */
#include "tcp.h"

#include "weft/shm_local.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netdb.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "weft/ofi.h"

#include "weft/stubs.h"
#include "weft/util_coll.h"
#include "weft/util_atomic.h"
#include "weft/util_cntr.h"
#include "weft/util_cq.h"
#include "weft/util_getinfo.h"
#include "weft/util_ifaddr.h"
#include "weft/util_poll.h"
#include "weft/util_wait.h"

struct tcp_params tcp_params = {
	/* Measured with fi_rdm_tagged_bw over loopback: up to 16 KiB a copy
	 * of a message that did not fit the socket costs less than holding
	 * the request; larger ones stream from the user's buffer. */
	.eager_max = 16384,
	.rx_stage = 16384,
	.staging = 65536 + TCP_HDR_MAX,
	.unexp_max = 64u << 20,
	.conn_timeout_ms = 10000,
	.pending_max = 1024,
	.max_msg = (size_t)1 << 40,
	.nodelay = true,
	.shm = true,
};

static void tcp_params_read(void)
{
	char *s = NULL;
	size_t v;
	int b;

	fi_param_define(&tcp_prov, "iface", FI_PARAM_STRING,
			"Interface to use (default: every interface that is up)");
	fi_param_define(&tcp_prov, "eager_max", FI_PARAM_SIZE_T,
			"Largest message copied when the socket cannot take "
			"it at once; larger ones are written from the user's "
			"buffer (default %zu)",
			tcp_params.eager_max);
	fi_param_define(&tcp_prov, "unexp_max", FI_PARAM_SIZE_T,
			"Bytes an endpoint may hold for messages that arrived "
			"before their receive; past it, it stops reading from "
			"their senders (default %zu)",
			tcp_params.unexp_max);
	fi_param_define(&tcp_prov, "conn_timeout", FI_PARAM_INT,
			"Milliseconds a connection attempt may take "
			"(default %d)",
			tcp_params.conn_timeout_ms);
	fi_param_define(&tcp_prov, "pending_max", FI_PARAM_INT,
			"Connections an RDM endpoint accepted and still waits "
			"on for a HELLO; past it the oldest is closed "
			"(default %d)",
			tcp_params.pending_max);
	fi_param_define(&tcp_prov, "nodelay", FI_PARAM_BOOL,
			"Set TCP_NODELAY on every socket (default yes)");
	fi_param_define(&tcp_prov, "shm", FI_PARAM_BOOL,
			"RDM endpoints reach the peers on this host through "
			"shared memory (default yes)");

	if (!fi_param_get_str(&tcp_prov, "iface", &s) && s)
		snprintf(tcp_params.iface, sizeof(tcp_params.iface), "%s", s);
	if (!fi_param_get_size_t(&tcp_prov, "eager_max", &v) && v >= 64 &&
	    v <= (1u << 20))
		tcp_params.eager_max = v;
	if (!fi_param_get_size_t(&tcp_prov, "unexp_max", &v) && v >= 4096)
		tcp_params.unexp_max = v;
	if (!fi_param_get_int(&tcp_prov, "conn_timeout", &b) && b > 0)
		tcp_params.conn_timeout_ms = b;
	if (!fi_param_get_int(&tcp_prov, "pending_max", &b) && b > 0)
		tcp_params.pending_max = b;
	if (!fi_param_get_bool(&tcp_prov, "nodelay", &b))
		tcp_params.nodelay = b;
	if (!fi_param_get_bool(&tcp_prov, "shm", &b))
		tcp_params.shm = b;
}

void tcp_params_init(void)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;

	pthread_once(&once, tcp_params_read);
}

size_t tcp_sockaddr_len(const void *addr)
{
	return util_sockaddr_len(addr);
}

/* ---- what the provider offers ------------------------------------------- */

#define TCP_CAPS                                                               \
	(FI_MSG | FI_TAGGED | FI_RMA | FI_ATOMIC | FI_SEND | FI_RECV |         \
	 FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE |               \
	 FI_MULTI_RECV | FI_DIRECTED_RECV | FI_SOURCE | FI_SOURCE_ERR |        \
	 FI_RMA_EVENT | FI_LOCAL_COMM | FI_REMOTE_COMM | FI_NAMED_RX_CTX |      \
	 FI_TRIGGER | FI_COLLECTIVE | FI_RMA_PMEM | FI_SHARED_AV | FI_FENCE)
#define TCP_TX_CAPS                                                            \
	(FI_MSG | FI_TAGGED | FI_RMA | FI_ATOMIC | FI_SEND | FI_READ |         \
	 FI_WRITE | FI_NAMED_RX_CTX | FI_TRIGGER | FI_COLLECTIVE |             \
	 FI_RMA_PMEM | FI_FENCE)
#define TCP_RX_CAPS                                                            \
	(FI_MSG | FI_TAGGED | FI_RMA | FI_ATOMIC | FI_RECV | FI_REMOTE_READ |  \
	 FI_REMOTE_WRITE | FI_MULTI_RECV | FI_DIRECTED_RECV | FI_SOURCE |      \
	 FI_SOURCE_ERR | FI_RMA_EVENT | FI_TRIGGER | FI_COLLECTIVE |           \
	 FI_RMA_PMEM)
#define TCP_MSG_CAPS                                                           \
	(FI_MSG | FI_TAGGED | FI_RMA | FI_ATOMIC | FI_SEND | FI_RECV |         \
	 FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE |               \
	 FI_MULTI_RECV | FI_RMA_EVENT | FI_LOCAL_COMM | FI_REMOTE_COMM |       \
	 FI_TRIGGER | FI_DIRECTED_RECV | FI_SOURCE | FI_RMA_PMEM |             \
	 FI_SHARED_AV | FI_FENCE)
/* FI_COMMIT_COMPLETE: the target flushes FI_RMA_PMEM memory it wrote
 * (weft/util_pmem.h) before it answers. */
#define TCP_TX_OP_FLAGS                                                        \
	(FI_COMPLETION | FI_INJECT | FI_INJECT_COMPLETE |                      \
	 FI_TRANSMIT_COMPLETE | FI_DELIVERY_COMPLETE | FI_COMMIT_COMPLETE |    \
	 FI_REMOTE_CQ_DATA)
#define TCP_RX_OP_FLAGS (FI_COMPLETION | FI_MULTI_RECV)
#define TCP_INJECT 4096

/*
 * RDM holds up to 65536 transmits and posted receives when asked, as
 * libfabric 1.18 and later say of tcp's RDM endpoint: a client that asks
 * for more than 1024 (Mercury's listeners: 4096) is answered, with the
 * size it asked.  One that asks none gets 1024 (tcp_util_prov), which
 * bounds what a peer that reads nothing makes an endpoint hold.
 */
#define TCP_RDM_SIZE 65536

/* RDM and MSG transmit alike; they differ in how many they hold. */
#define TCP_TX_ATTR(sz, caps_)                                                 \
	{                                                                      \
		.caps = (caps_), .op_flags = TCP_TX_OP_FLAGS,                  \
		.msg_order = UTIL_RDM_ORDER_ALL, .comp_order = FI_ORDER_NONE,  \
		.inject_size = TCP_INJECT, .size = (sz),                       \
		.iov_limit = UTIL_RDM_IOV_MAX,                                 \
		.rma_iov_limit = TCP_RMA_IOV_MAX,                              \
	}

static struct fi_tx_attr tcp_tx_attr = TCP_TX_ATTR(TCP_RDM_SIZE, TCP_TX_CAPS);
/* (No FI_NAMED_RX_CTX: an MSG endpoint has one peer.) */
static struct fi_tx_attr tcp_msg_tx_attr =
	TCP_TX_ATTR(1024, TCP_TX_CAPS & TCP_MSG_CAPS);

static struct fi_rx_attr tcp_rx_attr = {
	.caps = TCP_RX_CAPS,
	.op_flags = TCP_RX_OP_FLAGS,
	.msg_order = UTIL_RDM_ORDER_ALL,
	.comp_order = FI_ORDER_NONE,
	.size = TCP_RDM_SIZE,
	.iov_limit = UTIL_RDM_IOV_MAX,
};

/* RDM says what 1.17 says of RDM over tcp (its tcp;ofi_rxm): clients
 * select it by that protocol. */
/* MSG receives: FI_SOURCE reports the one peer's fi_addr_t when an AV
 * bound to the endpoint holds its address (fi_getpeer's), else
 * FI_ADDR_NOTAVAIL; FI_DIRECTED_RECV takes only that peer's messages
 * under such an AV and ignores the address without one.  No
 * FI_SOURCE_ERR: there is no unknown sender to report. */
static struct fi_rx_attr tcp_msg_rx_attr = {
	.caps = TCP_RX_CAPS & TCP_MSG_CAPS,
	.op_flags = TCP_RX_OP_FLAGS,
	.msg_order = UTIL_RDM_ORDER_ALL,
	.comp_order = FI_ORDER_NONE,
	.size = 1024,
	.iov_limit = UTIL_RDM_IOV_MAX,
};

/*
 * Under the name "tcp" the RDM endpoint says what libfabric 1.18 and later
 * say of theirs (FI_PROTO_XNET, version 1): clients that see fi_version()
 * >= 1.18 ask for it so (Mercury).  Under "tcp;ofi_rxm" and "sockets" it
 * says what those names said in 1.17 (src/fabric.c).
 */
static struct fi_ep_attr tcp_rdm_ep_attr = {
	.type = FI_EP_RDM,
	.protocol = FI_PROTO_XNET,
	.protocol_version = 1,
	.max_msg_size = (size_t)1 << 40,
	.max_order_raw_size = UTIL_RDM_ORDER_SIZE,
	.max_order_war_size = UTIL_RDM_ORDER_SIZE,
	.max_order_waw_size = UTIL_RDM_ORDER_SIZE,
	.mem_tag_format = 0xaaaaaaaaaaaaaaaaULL,
	.tx_ctx_cnt = 1,
	.rx_ctx_cnt = 1,
};

static struct fi_ep_attr tcp_msg_ep_attr = {
	.type = FI_EP_MSG,
	.protocol = FI_PROTO_SOCK_TCP,
	.protocol_version = TCP_PROTO_VERSION,
	.max_msg_size = (size_t)1 << 40,
	.max_order_raw_size = UTIL_RDM_ORDER_SIZE,
	.max_order_war_size = UTIL_RDM_ORDER_SIZE,
	.max_order_waw_size = UTIL_RDM_ORDER_SIZE,
	.mem_tag_format = 0xaaaaaaaaaaaaaaaaULL,
	.tx_ctx_cnt = 1,
	.rx_ctx_cnt = 1,
};

static struct fi_domain_attr tcp_domain_attr = {
	.threading = FI_THREAD_SAFE,
	.control_progress = FI_PROGRESS_AUTO,
	.data_progress = FI_PROGRESS_AUTO,
	.resource_mgmt = FI_RM_ENABLED,
	.av_type = FI_AV_UNSPEC,
	.mr_mode = 0,
	.mr_key_size = sizeof(uint64_t),
	.cq_data_size = sizeof(uint64_t),
	.cq_cnt = 1024,
	.ep_cnt = 8192,
	.tx_ctx_cnt = 8192,
	.rx_ctx_cnt = 8192,
	/* RDM: scalable endpoints (tcp_sep.c). */
	.max_ep_tx_ctx = TCP_MAX_CTX,
	.max_ep_rx_ctx = TCP_MAX_CTX,
	/* Endpoints one shared transmit context takes: any number
	 * (util_rdm_stx: each keeps its own queue behind it). */
	.max_ep_stx_ctx = 8192,
	/* Endpoints one shared receive context takes: any number
	 * (util_rdm_srx: they share its receive state and lock). */
	.max_ep_srx_ctx = 8192,
	.cntr_cnt = 1024,
	.mr_iov_limit = UTIL_MR_IOV_LIMIT,
	.caps = FI_LOCAL_COMM | FI_REMOTE_COMM,
	.mr_cnt = 65536,
	.max_err_data = sizeof(struct sockaddr_in6),
};

static struct fi_fabric_attr tcp_fabric_attr = {
	.prov_version = WEFT_PROV_VERSION,
};

/* The template candidates (no names, no addresses): what fi_domain and
 * fi_endpoint check an application's info against. */
static struct fi_info tcp_msg_info = {
	.caps = TCP_MSG_CAPS,
	.addr_format = FI_SOCKADDR_IN,
	.tx_attr = &tcp_msg_tx_attr,
	.rx_attr = &tcp_msg_rx_attr,
	.ep_attr = &tcp_msg_ep_attr,
	.domain_attr = &tcp_domain_attr,
	.fabric_attr = &tcp_fabric_attr,
};

static struct fi_info tcp_rdm_info = {
	.next = &tcp_msg_info,
	.caps = TCP_CAPS,
	.addr_format = FI_SOCKADDR_IN,
	.tx_attr = &tcp_tx_attr,
	.rx_attr = &tcp_rx_attr,
	.ep_attr = &tcp_rdm_ep_attr,
	.domain_attr = &tcp_domain_attr,
	.fabric_attr = &tcp_fabric_attr,
};

/* ---- interfaces --------------------------------------------------------- */

#define TCP_IFACE_MAX_LOOKUP 16

int tcp_iface_addr(const char *name, int family,
		   struct sockaddr_storage *out)
{
	struct util_iface ifs[TCP_IFACE_MAX_LOOKUP];
	size_t n = util_iface_list(tcp_params.iface, ifs,
				   TCP_IFACE_MAX_LOOKUP), i;

	for (i = 0; i < n; i++) {
		if (ifs[i].addr.ss_family == family &&
		    (!name || !name[0] || !strcmp(name, ifs[i].name))) {
			*out = ifs[i].addr;
			return 0;
		}
	}
	return -FI_ENODATA;
}

/* ---- fi_getinfo --------------------------------------------------------- */

static int tcp_resolve(const struct util_prov *uprov, uint32_t version,
		       const char *node, const char *service, uint64_t flags,
		       const struct fi_info *hints, struct fi_info *out)
{
	return 0; /* done by tcp_getinfo per interface */
}

static const struct util_prov tcp_util_prov = {
	.prov = &tcp_prov,
	.info = &tcp_rdm_info,
	.resolve = tcp_resolve,
	.auto_on_request = true,
	.size_default = 1024,
};

static int tcp_getinfo(uint32_t version, const char *node, const char *service,
		       uint64_t flags, const struct fi_info *hints,
		       struct fi_info **info)
{
	struct fi_info *all, *fi;
	int ret;

	tcp_params_init();
	ret = util_iface_getinfo(&tcp_util_prov, tcp_params.iface, version,
				 node, service, flags, hints, &all);
	if (ret)
		return ret;
	/* An RDM endpoint reaches the peers of its host through shm: the
	 * orders it keeps are shm's (weft/shm_local.h). */
	for (fi = all; hints && tcp_params.shm && fi; fi = fi->next) {
		if (fi->ep_attr->type != FI_EP_RDM)
			continue;
		if (hints->tx_attr)
			fi->tx_attr->msg_order =
				shm_local_orders(hints->tx_attr->msg_order);
		if (hints->rx_attr)
			fi->rx_attr->msg_order =
				shm_local_orders(hints->rx_attr->msg_order);
	}
	*info = all;
	return 0;
}

/* ---- AV ----------------------------------------------------------------- */

static int tcp_av_open(struct fid_domain *domain_fid, struct fi_av_attr *attr,
		       struct fid_av **av, void *context)
{
	struct tcp_domain *domain =
		container_of(domain_fid, struct tcp_domain, base.util.domain_fid);

	/* FI_SHARED_AV: named AVs shared by the node's processes. */
	return util_av_open_shared(&domain->base.util, attr,
				   util_av_sockaddr_ops_of(domain->addr_format),
				   av, context);
}

/* ---- domain ------------------------------------------------------------- */

static int tcp_query_atomic(struct fid_domain *domain,
			    enum fi_datatype datatype, enum fi_op op,
			    struct fi_atomic_attr *attr, uint64_t flags)
{
	return util_atomic_query(datatype, op, tcp_atomic_max(), flags, attr);
}

static int tcp_endpoint(struct fid_domain *domain, struct fi_info *info,
			struct fid_ep **ep, void *context)
{
	int ret;

	if (!info)
		return -FI_EINVAL;
	ret = util_prov_check_ep(&tcp_util_prov, info);
	if (ret)
		return ret;
	return tcp_ep_open(domain, info, ep, context);
}

static struct fi_ops_domain tcp_domain_ops = {
	.size = sizeof(struct fi_ops_domain),
	.av_open = tcp_av_open,
	.cq_open = util_cq_open_op,
	.endpoint = tcp_endpoint,
	.scalable_ep = tcp_sep_open,
	.cntr_open = util_cntr_open_op,
	.poll_open = util_poll_open,
	.stx_ctx = util_rdm_stx_open,
	.srx_ctx = util_rdm_srx_open,
	.query_atomic = tcp_query_atomic,
	.query_collective = util_coll_query,
	.endpoint2 = util_domain_endpoint2,
};

static int tcp_domain_close(struct fid *fid)
{
	struct tcp_domain *domain =
		container_of(fid, struct tcp_domain, base.util.domain_fid.fid);
	int epfd = domain->epfd, ret;

	ret = util_mr_domain_close(fid);
	if (!ret)
		close(epfd);
	return ret;
}

static struct fi_ops tcp_domain_fi_ops;
static pthread_once_t tcp_domain_fi_ops_once = PTHREAD_ONCE_INIT;

static void tcp_domain_fi_ops_init(void)
{
	tcp_domain_fi_ops = util_mr_domain_fi_ops;
	tcp_domain_fi_ops.close = tcp_domain_close;
}

static int tcp_domain_open(struct fid_fabric *fabric_fid, struct fi_info *info,
			   struct fid_domain **domain_fid, void *context)
{
	struct util_fabric *fabric =
		container_of(fabric_fid, struct util_fabric, fabric_fid);
	struct tcp_domain *domain;
	int ret;

	if (!info || !info->domain_attr)
		return -FI_EINVAL;
	ret = util_prov_check_domain(&tcp_util_prov, info);
	if (ret)
		return ret;
	domain = calloc(1, sizeof(*domain));
	if (!domain)
		return -FI_ENOMEM;
	domain->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (domain->epfd < 0) {
		ret = -tcp_errno_fi(errno);
		free(domain);
		return ret;
	}
	ret = util_mr_domain_init(&domain->base, fabric, info, context);
	if (ret) {
		close(domain->epfd);
		free(domain);
		return ret;
	}
	weft_lock_init(&domain->prog_lock,
		       util_domain_progress_needs_lock(&domain->base.util));
	pthread_once(&tcp_domain_fi_ops_once, tcp_domain_fi_ops_init);
	domain->base.util.domain_fid.fid.ops = &tcp_domain_fi_ops;
	domain->addr_format = info->addr_format;
	if (info->domain_attr->name)
		snprintf(domain->ifname, sizeof(domain->ifname), "%s",
			 info->domain_attr->name);
	domain->base.util.domain_fid.ops = &tcp_domain_ops;
	*domain_fid = &domain->base.util.domain_fid;
	return 0;
}

/* ---- fabric ------------------------------------------------------------- */

static struct fi_ops_fabric tcp_fabric_ops = {
	.size = sizeof(struct fi_ops_fabric),
	.domain = tcp_domain_open,
	.passive_ep = tcp_passive_ep,
	.eq_open = util_eq_open_op,
	.wait_open = util_wait_open,
	.trywait = util_trywait,
	.domain2 = util_fabric_domain2,
};

int tcp_fabric_open(struct fi_fabric_attr *attr, struct fid_fabric **fabric_fid,
		    void *context)
{
	tcp_params_init();
	return util_fabric_open(&tcp_prov, attr, &tcp_fabric_ops, fabric_fid,
				context);
}

static void tcp_cleanup(void)
{
}

struct fi_provider tcp_prov = {
	.version = WEFT_PROV_VERSION,
	.fi_version = WEFT_API_VERSION,
	.name = "tcp",
	.getinfo = tcp_getinfo,
	.fabric = tcp_fabric_open,
	.cleanup = tcp_cleanup,
};
WEFT_PROVIDER(tcp_prov);
