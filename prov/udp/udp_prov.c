/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The udp provider: registration, fi_getinfo, fabric, domain, AV.
 *
 * One FI_EP_DGRAM candidate per usable interface address (FI_UDP_IFACE
 * narrows it to one interface), named as tcp's are: the interface is the
 * domain, its subnet the fabric, src_addr its address with port 0.  The
 * attributes are those 1.17's udp provider reports, so that a client
 * sees the same limits from either library.
 */
#include "udp.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "weft/stubs.h"
#include "weft/util_av.h"
#include "weft/util_cntr.h"
#include "weft/util_cq.h"
#include "weft/util_ifaddr.h"
#include "weft/util_poll.h"
#include "weft/util_wait.h"

static char udp_iface[IF_NAMESIZE];

static void udp_params_read(void)
{
	char *s = NULL;

	fi_param_define(&udp_prov, "iface", FI_PARAM_STRING,
			"Interface to use (default: every interface that is up)");
	if (!fi_param_get_str(&udp_prov, "iface", &s) && s)
		snprintf(udp_iface, sizeof(udp_iface), "%s", s);
}

static void udp_params_init(void)
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

/* The template (no names, no addresses): what fi_domain and fi_endpoint
 * check an application's info against. */
static struct fi_info udp_info = {
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

static int udp_getinfo(uint32_t version, const char *node, const char *service,
		       uint64_t flags, const struct fi_info *hints,
		       struct fi_info **info)
{
	udp_params_init();
	return util_iface_getinfo(&udp_util_prov, udp_iface, version, node,
				  service, flags, hints, info);
}

/* ---- AV, domain --------------------------------------------------------- */

static int udp_av_open(struct fid_domain *domain_fid, struct fi_av_attr *attr,
		       struct fid_av **av, void *context)
{
	struct udp_domain *domain = container_of(
		domain_fid, struct udp_domain, base.util.domain_fid);

	return util_av_open(&domain->base.util, attr,
			    util_av_sockaddr_ops_of(domain->addr_format), av,
			    context);
}

static int udp_endpoint(struct fid_domain *domain, struct fi_info *info,
			struct fid_ep **ep, void *context)
{
	int ret;

	if (!info)
		return -FI_EINVAL;
	ret = util_prov_check_ep(&udp_util_prov, info);
	if (ret)
		return ret;
	return udp_ep_open(domain, info, ep, context);
}

static int udp_query_atomic(struct fid_domain *domain,
			    enum fi_datatype datatype, enum fi_op op,
			    struct fi_atomic_attr *attr, uint64_t flags)
{
	return -FI_EOPNOTSUPP;
}

static struct fi_ops_domain udp_domain_ops = {
	.size = sizeof(struct fi_ops_domain),
	.av_open = udp_av_open,
	.cq_open = util_cq_open_op,
	.endpoint = udp_endpoint,
	.scalable_ep = weft_no_scalable_ep,
	.cntr_open = util_cntr_open_op,
	.poll_open = util_poll_open,
	.stx_ctx = weft_no_stx_ctx,
	.srx_ctx = weft_no_srx_ctx,
	.query_atomic = udp_query_atomic,
	.query_collective = weft_no_query_collective,
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
	ret = util_prov_check_domain(&udp_util_prov, info);
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
