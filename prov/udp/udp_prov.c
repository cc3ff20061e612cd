/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The udp provider: registration, fi_getinfo, fabric, domain, AV.
 *
 * Candidates per usable interface address (FI_UDP_IFACE narrows it to one
 * interface), named as tcp's are: the interface is the domain, its subnet
 * the fabric, src_addr its address with port 0.  Under its own name: the
 * raw FI_EP_DGRAM endpoint (udp_ep.c), with the attributes 1.17's udp
 * provider reports, and FI_EP_RDM, the RDM engine over the reliable
 * transport (udp_xp.c), as 1.17's "udp;ofi_rxd".  Under the name
 * "sockets" (src/fabric.c): FI_EP_DGRAM endpoints of the RDM engine over
 * the unreliable transport, with tagged messages, multi-receive buffers
 * and directed receives as 1.17's sockets DGRAM endpoint had.
 */
#include "udp_xp.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "weft/stubs.h"
#include "weft/util_atomic.h"
#include "weft/util_av.h"
#include "weft/util_cntr.h"
#include "weft/util_coll.h"
#include "weft/util_cq.h"
#include "weft/util_ifaddr.h"
#include "weft/util_poll.h"
#include "weft/util_wait.h"

static char udp_iface[IF_NAMESIZE];

static void udp_params_read(void)
{
	char *s = NULL;
	size_t v;
	int i;

	fi_param_define(&udp_prov, "iface", FI_PARAM_STRING,
			"Interface to use (default: every interface that is up)");
	fi_param_define(&udp_prov, "eager_max", FI_PARAM_SIZE_T,
			"RDM: largest message copied and complete at once; "
			"larger ones are sent from the user's buffer "
			"(default %zu)",
			udpx_params.eager_max);
	fi_param_define(&udp_prov, "mtu", FI_PARAM_SIZE_T,
			"RDM: bytes of the IP packets to send (default: the "
			"interface's MTU)");
	fi_param_define(&udp_prov, "unexp_max", FI_PARAM_SIZE_T,
			"Bytes an endpoint may hold for messages that arrived "
			"before their receive (default %zu)",
			udpx_params.unexp_max);
	fi_param_define(&udp_prov, "rto", FI_PARAM_INT,
			"RDM: milliseconds before a packet not acknowledged "
			"is sent again, doubling up to 1000 (default %u)",
			udpx_params.rto_ms);
	fi_param_define(&udp_prov, "retry_timeout", FI_PARAM_INT,
			"RDM: milliseconds a peer may leave our packets "
			"unacknowledged before its transmits fail "
			"(default %u)",
			udpx_params.retry_ms);
	fi_param_define(&udp_prov, "ack_delay", FI_PARAM_INT,
			"RDM: microseconds an acknowledgement may wait for a "
			"packet to ride on (default %u)",
			udpx_params.ack_us);
	fi_param_define(&udp_prov, "test_drop", FI_PARAM_INT,
			"Testing only: drop every N-th datagram an endpoint "
			"of the engine sends (default 0: none)");
	if (!fi_param_get_str(&udp_prov, "iface", &s) && s)
		snprintf(udp_iface, sizeof(udp_iface), "%s", s);
	if (!fi_param_get_size_t(&udp_prov, "eager_max", &v) && v <= (1u << 20))
		udpx_params.eager_max = WEFT_MAX(v, (size_t)UDPX_INJECT);
	if (!fi_param_get_size_t(&udp_prov, "mtu", &v) && v >= 576)
		udpx_params.mtu = v;
	if (!fi_param_get_size_t(&udp_prov, "unexp_max", &v) && v >= 4096)
		udpx_params.unexp_max = v;
	if (!fi_param_get_int(&udp_prov, "rto", &i) && i > 0)
		udpx_params.rto_ms = (uint32_t)i;
	if (!fi_param_get_int(&udp_prov, "retry_timeout", &i) && i > 0)
		udpx_params.retry_ms = (uint32_t)i;
	if (!fi_param_get_int(&udp_prov, "ack_delay", &i) && i >= 0)
		udpx_params.ack_us = (uint32_t)i;
	if (!fi_param_get_int(&udp_prov, "test_drop", &i) && i > 1)
		udpx_params.drop = (uint32_t)i;
}

void udp_params_init(void)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;

	pthread_once(&once, udp_params_read);
}

/* ---- what the provider offers ------------------------------------------- */

/* FI_FENCE holds by construction: every transmit has completed when its
 * call returns (udp_send), so nothing a fenced one could wait for is
 * ever outstanding. */
#define UDP_TX_CAPS (FI_MSG | FI_MULTICAST | FI_SEND | FI_FENCE)
#define UDP_RX_CAPS (FI_MSG | FI_RECV | FI_SOURCE)
#define UDP_CAPS                                                               \
	(UDP_TX_CAPS | UDP_RX_CAPS | FI_LOCAL_COMM | FI_REMOTE_COMM)

static struct fi_tx_attr udp_tx_attr = {
	.caps = UDP_TX_CAPS,
	.op_flags = FI_COMPLETION | FI_INJECT | FI_INJECT_COMPLETE |
		    FI_TRANSMIT_COMPLETE | FI_MULTICAST,
	.msg_order = 0,
	.comp_order = FI_ORDER_STRICT,
	.inject_size = UDP_MAX_MSG,
	.size = UDP_QUEUE_SIZE,
	.iov_limit = UDP_IOV_MAX,
};

static struct fi_rx_attr udp_rx_attr = {
	.caps = UDP_RX_CAPS,
	.op_flags = FI_COMPLETION,
	.msg_order = 0,
	.comp_order = FI_ORDER_STRICT,
	.size = UDP_QUEUE_SIZE,
	.iov_limit = UDP_IOV_MAX,
};

static struct fi_ep_attr udp_ep_attr = {
	.type = FI_EP_DGRAM,
	.protocol = FI_PROTO_UDP,
	.protocol_version = 0,
	.max_msg_size = UDP_MAX_MSG,
	.tx_ctx_cnt = 1,
	.rx_ctx_cnt = 1,
};

static struct fi_domain_attr udp_domain_attr = {
	.threading = FI_THREAD_SAFE,
	.control_progress = FI_PROGRESS_AUTO,
	.data_progress = FI_PROGRESS_AUTO,
	.resource_mgmt = FI_RM_ENABLED,
	.av_type = FI_AV_UNSPEC,
	.mr_mode = 0,
	.mr_key_size = sizeof(uint64_t),
	.cq_data_size = 0,
	.cq_cnt = 256,
	.ep_cnt = 256,
	.tx_ctx_cnt = 256,
	.rx_ctx_cnt = 256,
	.max_ep_tx_ctx = 1,
	.max_ep_rx_ctx = 1,
	.cntr_cnt = 256,
	.mr_iov_limit = 1,
	.caps = FI_LOCAL_COMM | FI_REMOTE_COMM,
	.mr_cnt = 65536,
};

static struct fi_fabric_attr udp_fabric_attr = {
	.prov_version = WEFT_PROV_VERSION,
};

/* ---- RDM over the reliable transport, as 1.17's udp;ofi_rxd ------------- */

#define UDPX_TX_CAPS                                                           \
	(FI_MSG | FI_TAGGED | FI_RMA | FI_ATOMIC | FI_SEND | FI_READ |         \
	 FI_WRITE | FI_TRIGGER | FI_COLLECTIVE | FI_FENCE | FI_NAMED_RX_CTX)
#define UDPX_RX_CAPS                                                           \
	(FI_MSG | FI_TAGGED | FI_RMA | FI_ATOMIC | FI_RECV | FI_REMOTE_READ |  \
	 FI_REMOTE_WRITE | FI_MULTI_RECV | FI_DIRECTED_RECV | FI_SOURCE |      \
	 FI_SOURCE_ERR | FI_RMA_EVENT | FI_TRIGGER | FI_COLLECTIVE)
#define UDPX_CAPS                                                              \
	(UDPX_TX_CAPS | UDPX_RX_CAPS | FI_LOCAL_COMM | FI_REMOTE_COMM |         \
	 FI_SHARED_AV)
#define UDPX_SIZE 1024

static struct fi_tx_attr udpx_tx_attr = {
	.caps = UDPX_TX_CAPS,
	.op_flags = FI_COMPLETION | FI_INJECT | FI_INJECT_COMPLETE |
		    FI_TRANSMIT_COMPLETE | FI_DELIVERY_COMPLETE |
		    FI_REMOTE_CQ_DATA,
	.msg_order = UTIL_RDM_ORDER_ALL,
	.comp_order = FI_ORDER_NONE,
	.inject_size = UDPX_INJECT,
	.size = UDPX_SIZE,
	.iov_limit = UTIL_RDM_IOV_MAX,
	.rma_iov_limit = UTIL_RDM_IOV_MAX,
};

static struct fi_rx_attr udpx_rx_attr = {
	.caps = UDPX_RX_CAPS,
	.op_flags = FI_COMPLETION | FI_MULTI_RECV,
	.msg_order = UTIL_RDM_ORDER_ALL,
	.comp_order = FI_ORDER_NONE,
	.size = UDPX_SIZE,
	.iov_limit = UTIL_RDM_IOV_MAX,
};

static struct fi_ep_attr udpx_ep_attr = {
	.type = FI_EP_RDM,
	.protocol = FI_PROTO_RXD,
	.protocol_version = 1,
	.max_msg_size = (size_t)1 << 40,
	.max_order_raw_size = UTIL_RDM_ORDER_SIZE,
	.max_order_war_size = UTIL_RDM_ORDER_SIZE,
	.max_order_waw_size = UTIL_RDM_ORDER_SIZE,
	.mem_tag_format = 0xaaaaaaaaaaaaaaaaULL,
	.tx_ctx_cnt = 1,
	.rx_ctx_cnt = 1,
};

/* The engine's endpoints: remote CQ data, the sockaddr of an unknown
 * sender in error entries (FI_SOURCE_ERR), scalable endpoints
 * (udp_sep.c). */
static struct fi_domain_attr udpx_domain_attr = {
	.threading = FI_THREAD_SAFE,
	.control_progress = FI_PROGRESS_AUTO,
	.data_progress = FI_PROGRESS_AUTO,
	.resource_mgmt = FI_RM_ENABLED,
	.av_type = FI_AV_UNSPEC,
	.mr_mode = 0,
	.mr_key_size = sizeof(uint64_t),
	.cq_data_size = sizeof(uint64_t),
	.cq_cnt = 256,
	.ep_cnt = 256,
	.tx_ctx_cnt = 256,
	.rx_ctx_cnt = 256,
	.max_ep_tx_ctx = UDP_SEP_MAX_CTX,
	.max_ep_rx_ctx = UDP_SEP_MAX_CTX,
	.cntr_cnt = 256,
	.mr_iov_limit = 1,
	.caps = FI_LOCAL_COMM | FI_REMOTE_COMM,
	.mr_cnt = 65536,
	.max_err_data = sizeof(struct sockaddr_in6),
};

static struct fi_info udpx_rdm_info = {
	.caps = UDPX_CAPS,
	.addr_format = FI_SOCKADDR_IN,
	.tx_attr = &udpx_tx_attr,
	.rx_attr = &udpx_rx_attr,
	.ep_attr = &udpx_ep_attr,
	.domain_attr = &udpx_domain_attr,
	.fabric_attr = &udp_fabric_attr,
};

/* ---- "sockets" DGRAM: the engine over the unreliable transport ---------- */

#define UDPX_DG_TX_CAPS                                                        \
	(FI_MSG | FI_TAGGED | FI_SEND | FI_TRIGGER | FI_FENCE | FI_NAMED_RX_CTX)
#define UDPX_DG_RX_CAPS                                                        \
	(FI_MSG | FI_TAGGED | FI_RECV | FI_MULTI_RECV | FI_DIRECTED_RECV |     \
	 FI_SOURCE | FI_TRIGGER)
#define UDPX_DG_CAPS                                                           \
	(UDPX_DG_TX_CAPS | UDPX_DG_RX_CAPS | FI_LOCAL_COMM | FI_REMOTE_COMM |   \
	 FI_SHARED_AV)

static struct fi_tx_attr udpx_dg_tx_attr = {
	.caps = UDPX_DG_TX_CAPS,
	.op_flags = FI_COMPLETION | FI_INJECT | FI_INJECT_COMPLETE |
		    FI_TRANSMIT_COMPLETE | FI_REMOTE_CQ_DATA,
	.msg_order = 0,
	.comp_order = FI_ORDER_NONE,
	.inject_size = UDPX_DGRAM_INJECT,
	.size = UDPX_SIZE,
	.iov_limit = UTIL_RDM_IOV_MAX,
};

static struct fi_rx_attr udpx_dg_rx_attr = {
	.caps = UDPX_DG_RX_CAPS,
	.op_flags = FI_COMPLETION | FI_MULTI_RECV,
	.msg_order = 0,
	.comp_order = FI_ORDER_NONE,
	.size = UDPX_SIZE,
	.iov_limit = UTIL_RDM_IOV_MAX,
};

static struct fi_ep_attr udpx_dg_ep_attr = {
	.type = FI_EP_DGRAM,
	.protocol = FI_PROTO_SOCK_TCP,
	.protocol_version = 2,
	.max_msg_size = UDPX_DGRAM_MAX,
	.mem_tag_format = 0xaaaaaaaaaaaaaaaaULL,
	.tx_ctx_cnt = 1,
	.rx_ctx_cnt = 1,
};

static struct fi_info udpx_dgram_info = {
	.caps = UDPX_DG_CAPS,
	.addr_format = FI_SOCKADDR_IN,
	.tx_attr = &udpx_dg_tx_attr,
	.rx_attr = &udpx_dg_rx_attr,
	.ep_attr = &udpx_dg_ep_attr,
	.domain_attr = &udpx_domain_attr,
	.fabric_attr = &udp_fabric_attr,
};

/* The raw datagram endpoint: what fi_domain and fi_endpoint check an
 * application's info against (no names, no addresses). */
static struct fi_info udp_info = {
	.next = &udpx_rdm_info,
	.caps = UDP_CAPS,
	.addr_format = FI_SOCKADDR_IN,
	.tx_attr = &udp_tx_attr,
	.rx_attr = &udp_rx_attr,
	.ep_attr = &udp_ep_attr,
	.domain_attr = &udp_domain_attr,
	.fabric_attr = &udp_fabric_attr,
};

static int udp_resolve(const struct util_prov *uprov, uint32_t version,
		       const char *node, const char *service, uint64_t flags,
		       const struct fi_info *hints, struct fi_info *out)
{
	return 0; /* done per interface by util_iface_getinfo */
}

const struct util_prov udp_util_prov = {
	.prov = &udp_prov,
	.info = &udp_info,
	.resolve = udp_resolve,
	.auto_on_request = true,
};

/* Under "sockets": its datagram endpoints. */
static const struct util_prov udp_sock_util_prov = {
	.prov = &udp_prov,
	.info = &udpx_dgram_info,
	.resolve = udp_resolve,
	.auto_on_request = true,
};

/* Whether info (hints, or an entry) is of the name "sockets", whose
 * entries say its protocol (src/fabric.c): the engine's datagrams. */
static bool udp_sock_named(const struct fi_info *info)
{
	struct weft_name_look look;

	if (!info)
		return false;
	if (info->ep_attr && info->ep_attr->protocol == FI_PROTO_SOCK_TCP)
		return true;
	return info->fabric_attr && info->fabric_attr->prov_name &&
	       weft_name_look(info->fabric_attr->prov_name, &look) &&
	       look.protocol == FI_PROTO_SOCK_TCP;
}

static const struct util_prov *udp_uprov_of(const struct fi_info *info)
{
	return udp_sock_named(info) ? &udp_sock_util_prov : &udp_util_prov;
}

static int udp_getinfo(uint32_t version, const char *node, const char *service,
		       uint64_t flags, const struct fi_info *hints,
		       struct fi_info **info)
{
	udp_params_init();
	return util_iface_getinfo(udp_uprov_of(hints), udp_iface, version,
				  node, service, flags, hints, info);
}

/* ---- AV, domain --------------------------------------------------------- */

static int udp_av_open(struct fid_domain *domain_fid, struct fi_av_attr *attr,
		       struct fid_av **av, void *context)
{
	struct udp_domain *domain = container_of(
		domain_fid, struct udp_domain, base.util.domain_fid);

	/* FI_SHARED_AV: named AVs shared by the node's processes. */
	return util_av_open_shared(&domain->base.util, attr,
				   util_av_sockaddr_ops_of(domain->addr_format),
				   av, context);
}

static int udp_endpoint(struct fid_domain *domain, struct fi_info *info,
			struct fid_ep **ep, void *context)
{
	int ret;

	if (!info)
		return -FI_EINVAL;
	ret = util_prov_check_ep(udp_uprov_of(info), info);
	if (ret)
		return ret;
	if (info->ep_attr && info->ep_attr->type == FI_EP_RDM)
		return udpx_ep_open(domain, info, true, ep, context);
	if (udp_sock_named(info))
		return udpx_ep_open(domain, info, false, ep, context);
	return udp_ep_open(domain, info, ep, context);
}

/* Scalable endpoints: of the engine's endpoints, not the raw datagram
 * one. */
static int udp_scalable_ep(struct fid_domain *domain, struct fi_info *info,
			   struct fid_ep **sep, void *context)
{
	int ret;

	if (!info || !info->ep_attr)
		return -FI_EINVAL;
	ret = util_prov_check_ep(udp_uprov_of(info), info);
	if (ret)
		return ret;
	if (info->ep_attr->type != FI_EP_RDM && !udp_sock_named(info))
		return -FI_ENOSYS;
	return udp_sep_open(domain, info, sep, context);
}

/* The atomics of RDM endpoints (the reliable transport's): all that
 * util_atomic applies, one operand vector of UDPX_ATOMIC_MAX bytes. */
static int udp_query_atomic(struct fid_domain *domain,
			    enum fi_datatype datatype, enum fi_op op,
			    struct fi_atomic_attr *attr, uint64_t flags)
{
	(void)domain;
	return util_atomic_query(datatype, op, UDPX_ATOMIC_MAX, flags, attr);
}

static struct fi_ops_domain udp_domain_ops = {
	.size = sizeof(struct fi_ops_domain),
	.av_open = udp_av_open,
	.cq_open = util_cq_open_op,
	.endpoint = udp_endpoint,
	.scalable_ep = udp_scalable_ep,
	.cntr_open = util_cntr_open_op,
	.poll_open = util_poll_open,
	.stx_ctx = weft_no_stx_ctx,
	.srx_ctx = weft_no_srx_ctx,
	.query_atomic = udp_query_atomic,
	.query_collective = util_coll_query,
	.endpoint2 = util_domain_endpoint2,
};

static int udp_domain_open(struct fid_fabric *fabric_fid, struct fi_info *info,
			   struct fid_domain **domain_fid, void *context)
{
	struct util_fabric *fabric =
		container_of(fabric_fid, struct util_fabric, fabric_fid);
	struct udp_domain *domain;
	int ret;

	if (!info || !info->domain_attr)
		return -FI_EINVAL;
	ret = util_prov_check_domain(udp_uprov_of(info), info);
	if (ret)
		return ret;
	domain = calloc(1, sizeof(*domain));
	if (!domain)
		return -FI_ENOMEM;
	ret = util_mr_domain_init(&domain->base, fabric, info, context);
	if (ret) {
		free(domain);
		return ret;
	}
	domain->addr_format = info->addr_format;
	domain->base.util.domain_fid.fid.ops = &util_mr_domain_fi_ops;
	domain->base.util.domain_fid.ops = &udp_domain_ops;
	*domain_fid = &domain->base.util.domain_fid;
	return 0;
}

/* ---- fabric ------------------------------------------------------------- */

static struct fi_ops_fabric udp_fabric_ops = {
	.size = sizeof(struct fi_ops_fabric),
	.domain = udp_domain_open,
	.passive_ep = weft_no_passive_ep,
	.eq_open = util_eq_open_op,
	.wait_open = util_wait_open,
	.trywait = util_trywait,
	.domain2 = util_fabric_domain2,
};

static int udp_fabric_open(struct fi_fabric_attr *attr,
			   struct fid_fabric **fabric_fid, void *context)
{
	udp_params_init();
	return util_fabric_open(&udp_prov, attr, &udp_fabric_ops, fabric_fid,
				context);
}

static void udp_cleanup(void)
{
}

struct fi_provider udp_prov = {
	.version = WEFT_PROV_VERSION,
	.fi_version = WEFT_API_VERSION,
	.name = "udp",
	.getinfo = udp_getinfo,
	.fabric = udp_fabric_open,
	.cleanup = udp_cleanup,
};
WEFT_PROVIDER(udp_prov);
