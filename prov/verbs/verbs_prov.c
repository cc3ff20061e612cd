/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The verbs provider: registration, tunables, discovery (fi_getinfo) and
 * the fabric; the domain is in verbs_domain.c.
 *
 * Discovery.  An RDMA device is usable when one of its ports carries an IP
 * address: rdma_cm connects by IP.  Each up interface address (as tcp
 * lists them) is bound to an rdma_cm id; the device and port the id lands
 * on serve that address.  Each such (device, port, address) gets an
 * FI_EP_MSG and an FI_EP_RDM candidate: the domain is named after the
 * device ("rxe0"), the fabric after the address's subnet ("10.77.0.0/24",
 * as tcp names fabrics), and the limits are the device's and the port's,
 * never more.  What was found is kept for the life of the process.
 */
#include "verbs.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "weft/ofi.h"

#include "weft/stubs.h"
#include "weft/util_atomic.h"
#include "weft/util_av.h"
#include "weft/util_cntr.h"
#include "weft/util_cq.h"
#include "weft/util_nic.h"
#include "weft/util_poll.h"
#include "weft/util_wait.h"

struct verbs_params verbs_params = {
	.tx_size = 1024,
	.rx_size = 1024,
	.conn_timeout_ms = 5000,
	.ack_timeout = 14,
	.mr_cache_entries = 1024,
	.shm = true,
};

static void verbs_params_read(void)
{
	size_t v;
	char *s;
	int i;

	fi_param_define(&verbs_prov, "iface", FI_PARAM_STRING,
			"Interface whose address the provider uses "
			"(default: every interface on an RDMA device)");
	fi_param_define(&verbs_prov, "device_name", FI_PARAM_STRING,
			"RDMA device to use (default: every device)");
	fi_param_define(&verbs_prov, "tx_size", FI_PARAM_SIZE_T,
			"Default transmit queue depth, capped by the device "
			"(default %zu)", verbs_params.tx_size);
	fi_param_define(&verbs_prov, "rx_size", FI_PARAM_SIZE_T,
			"Default receive queue depth, capped by the device "
			"(default %zu)", verbs_params.rx_size);
	fi_param_define(&verbs_prov, "inline_size", FI_PARAM_SIZE_T,
			"Largest inject (inline) send, capped by the device "
			"(default: what the device accepts)");
	fi_param_define(&verbs_prov, "conn_timeout", FI_PARAM_INT,
			"Milliseconds rdma_cm may take to resolve an address "
			"or route (default %d)", verbs_params.conn_timeout_ms);

	fi_param_define(&verbs_prov, "ack_timeout", FI_PARAM_INT,
			"Reliable connections (InfiniBand, RoCE): a packet "
			"unanswered for 4.096 us x 2^N is sent again, 7 times, "
			"then the connection fails; 0 leaves rdma_cm's choice "
			"(default %d: about 67 ms, a dead peer is known within "
			"a second)", verbs_params.ack_timeout);
	fi_param_define(&verbs_prov, "mr_cache_entries", FI_PARAM_SIZE_T,
			"Registrations the provider keeps for buffers that "
			"came without a descriptor; 0 keeps none (default %zu)",
			verbs_params.mr_cache_entries);
	fi_param_define(&verbs_prov, "shm", FI_PARAM_BOOL,
			"RDM endpoints reach the peers on this host through "
			"shared memory (default yes)");
	fi_param_define(&verbs_prov, "device_atomics", FI_PARAM_BOOL,
			"RDM endpoints offer only the device's atomics (64-bit "
			"sum and compare-swap, no target progress needed) "
			"instead of every atomic, applied by the target "
			"(default no)");

	s = NULL;
	if (!fi_param_get_str(&verbs_prov, "iface", &s) && s)
		snprintf(verbs_params.iface, sizeof(verbs_params.iface), "%s",
			 s);
	s = NULL;
	if (!fi_param_get_str(&verbs_prov, "device_name", &s) && s)
		snprintf(verbs_params.device, sizeof(verbs_params.device), "%s",
			 s);
	if (!fi_param_get_size_t(&verbs_prov, "tx_size", &v) && v)
		verbs_params.tx_size = v;
	if (!fi_param_get_size_t(&verbs_prov, "rx_size", &v) && v)
		verbs_params.rx_size = v;
	if (!fi_param_get_size_t(&verbs_prov, "inline_size", &v))
		verbs_params.inline_size = v;
	if (!fi_param_get_int(&verbs_prov, "conn_timeout", &i) && i > 0)
		verbs_params.conn_timeout_ms = i;
	if (!fi_param_get_int(&verbs_prov, "ack_timeout", &i) && i >= 0 &&
	    i < 32)
		verbs_params.ack_timeout = i;
	if (!fi_param_get_size_t(&verbs_prov, "mr_cache_entries", &v))
		verbs_params.mr_cache_entries = v;
	if (!fi_param_get_bool(&verbs_prov, "shm", &i))
		verbs_params.shm = i;
	if (!fi_param_get_bool(&verbs_prov, "device_atomics", &i))
		verbs_params.device_atomics = i;
}

void verbs_params_init(void)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;

	pthread_once(&once, verbs_params_read);
}

/* ---- devices ------------------------------------------------------------ */

static int mtu_bytes(enum ibv_mtu mtu)
{
	switch (mtu) {
	case IBV_MTU_256: return 256;
	case IBV_MTU_512: return 512;
	case IBV_MTU_1024: return 1024;
	case IBV_MTU_2048: return 2048;
	case IBV_MTU_4096: return 4096;
	}
	return 0;
}

/* Bits per second of an active port (ibv_query_port(3) encodings). */
static uint64_t port_speed(const struct ibv_port_attr *pa)
{
	uint64_t lane, width;

	switch (pa->active_speed) {
	case 1: lane = 2500; break;	/* SDR */
	case 2: lane = 5000; break;	/* DDR */
	case 4: case 8: lane = 10000; break; /* QDR, FDR10 */
	case 16: lane = 14000; break;	/* FDR */
	case 32: lane = 25000; break;	/* EDR */
	case 64: lane = 50000; break;	/* HDR */
	case 128: lane = 100000; break; /* NDR */
	default: lane = 0;
	}
	switch (pa->active_width) {
	case 1: width = 1; break;
	case 2: width = 4; break;
	case 4: width = 8; break;
	case 8: width = 12; break;
	case 16: width = 2; break;
	default: width = 1;
	}
	return lane * width * 1000000ULL;
}

/* The largest inline size an RC QP on this device accepts: try sizes
 * downwards on a throwaway QP (devices report no limit of their own). */
static uint32_t probe_inline(struct ibv_context *ctx, uint32_t max_sge)
{
	static const uint32_t sizes[] = { 512, 256, 220, 160, 128, 80, 64, 32 };
	struct ibv_qp_init_attr qa;
	uint32_t got = 0;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	size_t i;

	pd = ibv_alloc_pd(ctx);
	if (!pd)
		return 0;
	cq = ibv_create_cq(ctx, 2, NULL, NULL, 0);
	if (!cq)
		goto out_pd;
	for (i = 0; i < WEFT_ARRAY_SIZE(sizes); i++) {
		memset(&qa, 0, sizeof(qa));
		qa.send_cq = cq;
		qa.recv_cq = cq;
		qa.qp_type = IBV_QPT_RC;
		qa.cap.max_send_wr = 1;
		qa.cap.max_recv_wr = 1;
		/* As endpoints will ask: the inline size may depend on it. */
		qa.cap.max_send_sge = WEFT_MIN(max_sge, (uint32_t)VERBS_IOV_MAX);
		qa.cap.max_recv_sge = qa.cap.max_send_sge;
		qa.cap.max_inline_data = sizes[i];
		qp = ibv_create_qp(pd, &qa);
		if (qp) {
			got = qa.cap.max_inline_data < sizes[i] ?
				      qa.cap.max_inline_data :
				      sizes[i];
			ibv_destroy_qp(qp);
			break;
		}
	}
	ibv_destroy_cq(cq);
out_pd:
	ibv_dealloc_pd(pd);
	return got;
}

int verbs_dev_query(struct ibv_context *ctx, uint8_t port,
		    struct verbs_dev *dev)
{
	struct ibv_device_attr da;
	struct ibv_port_attr pa;
	int ret;

	memset(dev, 0, sizeof(*dev));
	snprintf(dev->name, sizeof(dev->name), "%s",
		 ibv_get_device_name(ctx->device));
	ret = ibv_query_device(ctx, &da);
	if (ret)
		return weft_errno(ret);
	ret = ibv_query_port(ctx, port, &pa);
	if (ret)
		return weft_errno(ret);
	dev->port = port;
	dev->iwarp = ctx->device->transport_type == IBV_TRANSPORT_IWARP;
	dev->ethernet = dev->iwarp || pa.link_layer == IBV_LINK_LAYER_ETHERNET;
	dev->atomics = da.atomic_cap != IBV_ATOMIC_NONE;
	/* Soft-iWARP ("bmt"): its send queue is mapped into the process,
	 * and a QP in error takes what is written there, but its kernel
	 * flushes only what was queued when the error came. */
	dev->err_post_lost = dev->iwarp && da.vendor_id == 0x626d74;
	dev->max_cqe = (uint32_t)da.max_cqe;
	dev->max_qp_wr = (uint32_t)da.max_qp_wr;
	dev->max_sge = (uint32_t)da.max_sge;
	dev->max_sge_rd = da.max_sge_rd ? (uint32_t)da.max_sge_rd :
					  (uint32_t)da.max_sge;
	dev->max_qp_rd_atom = (uint32_t)da.max_qp_rd_atom;
	dev->max_qp_init_rd_atom = (uint32_t)da.max_qp_init_rd_atom;
	dev->max_qp = (uint32_t)da.max_qp;
	dev->max_cq = (uint32_t)da.max_cq;
	dev->max_mr = (uint32_t)da.max_mr;
	dev->max_pd = (uint32_t)da.max_pd;
	dev->max_srq = (uint32_t)da.max_srq;
	dev->max_srq_wr = (uint32_t)da.max_srq_wr;
	dev->max_srq_sge = (uint32_t)da.max_srq_sge;
	dev->max_mr_size = da.max_mr_size;
	dev->max_msg_sz = pa.max_msg_sz;
	dev->vendor_id = da.vendor_id;
	dev->vendor_part_id = da.vendor_part_id;
	dev->hw_ver = da.hw_ver;
	snprintf(dev->fw_ver, sizeof(dev->fw_ver), "%s", da.fw_ver);
	dev->state = pa.state;
	dev->mtu = mtu_bytes(pa.active_mtu);
	dev->speed = port_speed(&pa);
	dev->max_inline = probe_inline(ctx, dev->max_sge);
	if (verbs_params.inline_size &&
	    verbs_params.inline_size < dev->max_inline)
		dev->max_inline = (uint32_t)verbs_params.inline_size;
	return 0;
}

/* ---- what the provider offers ------------------------------------------- */

#define VERBS_MSG_CAPS                                                         \
	(FI_MSG | FI_RMA | FI_ATOMIC | FI_SEND | FI_RECV | FI_READ |           \
	 FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE | FI_LOCAL_COMM |         \
	 FI_REMOTE_COMM)
#define VERBS_MSG_TX_CAPS                                                      \
	(FI_MSG | FI_RMA | FI_ATOMIC | FI_SEND | FI_READ | FI_WRITE)
#define VERBS_MSG_RX_CAPS                                                      \
	(FI_MSG | FI_RMA | FI_ATOMIC | FI_RECV | FI_REMOTE_READ |             \
	 FI_REMOTE_WRITE)
/* An RC QP delivers sends and RDMA writes in order; reads may pass
 * writes' completions but not their data (InfiniBand ordering rules). */
#define VERBS_MSG_ORDER                                                        \
	(FI_ORDER_SAS | FI_ORDER_RAW | FI_ORDER_WAW | FI_ORDER_WAS |           \
	 FI_ORDER_SAW)
#define VERBS_MSG_MR_MODE                                                      \
	(FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY)

/* RDM: the engine over RC QPs (verbs_rdm.c); the attributes it offers. */
#define VERBS_RDM_CAPS                                                         \
	(FI_MSG | FI_TAGGED | FI_RMA | FI_ATOMIC | FI_SEND | FI_RECV |         \
	 FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE |               \
	 FI_MULTI_RECV | FI_DIRECTED_RECV | FI_SOURCE | FI_LOCAL_COMM |        \
	 FI_REMOTE_COMM | FI_NAMED_RX_CTX | FI_TRIGGER | FI_COLLECTIVE |        \
	 FI_FENCE)
#define VERBS_RDM_TX_CAPS                                                      \
	(FI_MSG | FI_TAGGED | FI_RMA | FI_ATOMIC | FI_SEND | FI_READ |         \
	 FI_WRITE | FI_NAMED_RX_CTX | FI_TRIGGER | FI_COLLECTIVE | FI_FENCE)
#define VERBS_RDM_RX_CAPS                                                      \
	(FI_MSG | FI_TAGGED | FI_RMA | FI_ATOMIC | FI_RECV | FI_REMOTE_READ |  \
	 FI_REMOTE_WRITE | FI_MULTI_RECV | FI_DIRECTED_RECV | FI_SOURCE |      \
	 FI_TRIGGER | FI_COLLECTIVE)
#define VERBS_RDM_ORDER (FI_ORDER_SAS | FI_ORDER_RAW | FI_ORDER_WAW)
#define VERBS_RDM_MR_MODE (FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY)
#define VERBS_RDM_INJECT 256

#define VERBS_TX_OP_FLAGS                                                      \
	(FI_COMPLETION | FI_INJECT | FI_INJECT_COMPLETE |                      \
	 FI_TRANSMIT_COMPLETE | FI_DELIVERY_COMPLETE | FI_REMOTE_CQ_DATA)

static struct fi_tx_attr verbs_msg_tx_attr = {
	.caps = VERBS_MSG_TX_CAPS,
	.op_flags = VERBS_TX_OP_FLAGS,
	.msg_order = VERBS_MSG_ORDER,
	.comp_order = FI_ORDER_STRICT,
	.rma_iov_limit = 1,
};

static struct fi_rx_attr verbs_msg_rx_attr = {
	.caps = VERBS_MSG_RX_CAPS,
	/* fi_writedata consumes a posted receive at the target. */
	.mode = FI_RX_CQ_DATA,
	.op_flags = FI_COMPLETION,
	.msg_order = VERBS_MSG_ORDER,
	.comp_order = FI_ORDER_STRICT | FI_ORDER_DATA,
};

static struct fi_tx_attr verbs_rdm_tx_attr = {
	.caps = VERBS_RDM_TX_CAPS,
	.op_flags = VERBS_TX_OP_FLAGS,
	.msg_order = VERBS_RDM_ORDER,
	.comp_order = FI_ORDER_NONE,
	.inject_size = VERBS_RDM_INJECT,
	.iov_limit = UTIL_RDM_IOV_MAX,
	.rma_iov_limit = 1,
};

static struct fi_rx_attr verbs_rdm_rx_attr = {
	.caps = VERBS_RDM_RX_CAPS,
	.op_flags = FI_COMPLETION | FI_MULTI_RECV,
	.msg_order = VERBS_RDM_ORDER,
	.comp_order = FI_ORDER_NONE,
	.iov_limit = UTIL_RDM_IOV_MAX,
};

static struct fi_ep_attr verbs_msg_ep_attr = {
	.type = FI_EP_MSG,
	.protocol = FI_PROTO_RDMA_CM_IB_RC,
	.protocol_version = 1,
	.tx_ctx_cnt = 1,
	.rx_ctx_cnt = 1,
};

static struct fi_ep_attr verbs_rdm_ep_attr = {
	.type = FI_EP_RDM,
	.protocol = FI_PROTO_RXM,
	.protocol_version = 1,
	.mem_tag_format = 0xaaaaaaaaaaaaaaaaULL,
	.tx_ctx_cnt = 1,
	.rx_ctx_cnt = 1,
};

static struct fi_domain_attr verbs_domain_attr = {
	.threading = FI_THREAD_SAFE,
	.control_progress = FI_PROGRESS_AUTO,
	.data_progress = FI_PROGRESS_AUTO,
	.resource_mgmt = FI_RM_ENABLED,
	.av_type = FI_AV_UNSPEC,
	.mr_key_size = sizeof(uint32_t),
	.cq_data_size = VERBS_CQ_DATA_SIZE,
	.max_ep_tx_ctx = 1,
	.max_ep_rx_ctx = 1,
	.mr_iov_limit = 1,
	.caps = FI_LOCAL_COMM | FI_REMOTE_COMM,
	.max_err_data = VERBS_CM_DATA_MAX,
};

static struct fi_fabric_attr verbs_fabric_attr = {
	.prov_version = WEFT_PROV_VERSION,
};

/* Templates: the caps any verbs domain may offer, for the checks
 * fi_domain and fi_endpoint make (device limits are checked there). */
static struct fi_domain_attr verbs_msg_domain_tmpl;
static struct fi_domain_attr verbs_rdm_domain_tmpl;

static struct fi_info verbs_msg_info = {
	.caps = VERBS_MSG_CAPS,
	.addr_format = FI_SOCKADDR_IN,
	.tx_attr = &verbs_msg_tx_attr,
	.rx_attr = &verbs_msg_rx_attr,
	.ep_attr = &verbs_msg_ep_attr,
	.domain_attr = &verbs_msg_domain_tmpl,
	.fabric_attr = &verbs_fabric_attr,
};

static struct fi_info verbs_rdm_info = {
	.next = &verbs_msg_info,
	.caps = VERBS_RDM_CAPS,
	.addr_format = FI_SOCKADDR_IN,
	.tx_attr = &verbs_rdm_tx_attr,
	.rx_attr = &verbs_rdm_rx_attr,
	.ep_attr = &verbs_rdm_ep_attr,
	.domain_attr = &verbs_rdm_domain_tmpl,
	.fabric_attr = &verbs_fabric_attr,
};

static void templates_init(void)
{
	verbs_msg_domain_tmpl = verbs_domain_attr;
	verbs_msg_domain_tmpl.mr_mode = VERBS_MSG_MR_MODE;
	verbs_rdm_domain_tmpl = verbs_domain_attr;
	verbs_rdm_domain_tmpl.mr_mode = VERBS_RDM_MR_MODE;
}

static const struct util_prov verbs_util_prov = {
	.prov = &verbs_prov,
	.info = &verbs_rdm_info,
	.auto_on_request = true,
};

/* ---- discovery ---------------------------------------------------------- */

#define VERBS_CANDS 4
#define VERBS_RDM_NOKEYS 3 /* the candidate without RMA */
#define VERBS_RDM_KEYED_CAPS                                                   \
	(FI_RMA | FI_ATOMIC | FI_READ | FI_WRITE | FI_REMOTE_READ |           \
	 FI_REMOTE_WRITE)

/* One device port serving one interface address. */
struct verbs_site {
	struct verbs_dev dev;
	struct util_iface ifc;
	char ipstr[INET6_ADDRSTRLEN];
	/* the candidates' parts */
	struct fi_tx_attr tx[VERBS_CANDS];
	struct fi_rx_attr rx[VERBS_CANDS];
	struct fi_ep_attr ep[VERBS_CANDS];
	struct fi_domain_attr dom[VERBS_CANDS];
	struct fi_fabric_attr fab;
	/*
	 * RDM; MSG; MSG for callers that do not accept the FI_RX_CQ_DATA
	 * mode, whose endpoints refuse remote CQ data on RMA writes (on
	 * verbs it consumes a receive); RDM without RMA and atomics, for
	 * callers that allow no mr_mode bit (an MPI's tagged path: the
	 * keys only matter to peers that access our memory).  getinfo
	 * offers the third only when the second did not match, the fourth
	 * only when the first did not.
	 */
	struct fi_info info[VERBS_CANDS];
	struct fid_nic nic;
	struct fi_device_attr nic_dev;
	struct fi_link_attr nic_link;
	struct fi_bus_attr nic_bus;
	char nic_vendor[16], nic_part[16], nic_hw[16];
};

#define VERBS_SITE_MAX 32

static struct {
	pthread_mutex_t lock;
	bool done;
	int err;	   /* -FI_ENODATA with why[], or 0 */
	char why[160];
	size_t count;
	struct verbs_site *sites;
} verbs_found = { .lock = PTHREAD_MUTEX_INITIALIZER };

static size_t cap_size(size_t want, uint32_t limit)
{
	return want < limit ? want : limit;
}

/* Fill one site's RDM and MSG candidates from its device's limits. */
static void site_fill(struct verbs_site *s)
{
	const struct verbs_dev *d = &s->dev;
	uint32_t depth = verbs_queue_depth(d);
	uint32_t sge = d->max_sge < VERBS_IOV_MAX ? d->max_sge : VERBS_IOV_MAX;
	int i;

	s->fab = verbs_fabric_attr;
	s->fab.name = s->ifc.subnet;
	for (i = 0; i < VERBS_CANDS; i++) {
		bool msg = i == 1 || i == 2;

		s->info[i] = msg ? verbs_msg_info : verbs_rdm_info;
		s->tx[i] = msg ? verbs_msg_tx_attr : verbs_rdm_tx_attr;
		s->rx[i] = msg ? verbs_msg_rx_attr : verbs_rdm_rx_attr;
		s->ep[i] = msg ? verbs_msg_ep_attr : verbs_rdm_ep_attr;
		s->dom[i] = msg ? verbs_msg_domain_tmpl : verbs_rdm_domain_tmpl;

		s->dom[i].name = s->dev.name;
		s->dom[i].cq_cnt = d->max_cq;
		s->dom[i].ep_cnt = d->max_qp;
		s->dom[i].tx_ctx_cnt = d->max_qp;
		s->dom[i].rx_ctx_cnt = d->max_qp;
		s->dom[i].cntr_cnt = d->max_cq;
		s->dom[i].mr_cnt = d->max_mr;
		s->tx[i].size = cap_size(verbs_params.tx_size, depth);
		s->rx[i].size = cap_size(verbs_params.rx_size, depth);
		s->ep[i].max_msg_size = d->max_msg_sz;
		/* RDMA reads and writes to one peer go down one RC QP in
		 * the order posted, whatever their size: the RAW and WAW
		 * that msg_order claims hold up to the largest message. */
		s->ep[i].max_order_raw_size = d->max_msg_sz;
		s->ep[i].max_order_waw_size = d->max_msg_sz;
		if (d->iwarp) {
			/* Not over iWARP: on siw0 a read posted right behind
			 * a write to the same bytes returned them as they
			 * were before it, 9 runs in 10 (rma_order), at 8 B
			 * as at 1 MiB. */
			s->tx[i].msg_order &= ~FI_ORDER_RAW;
			s->rx[i].msg_order &= ~FI_ORDER_RAW;
			s->ep[i].max_order_raw_size = 0;
		}
		if (msg) {
			s->ep[i].protocol = d->iwarp ? FI_PROTO_IWARP :
						       FI_PROTO_RDMA_CM_IB_RC;
			s->tx[i].inject_size = d->max_inline;
			s->tx[i].iov_limit = sge;
			s->rx[i].iov_limit = sge;
			/* An SRQ: fi_srx_context, ep_attr rx_ctx_cnt
			 * FI_SHARED_CONTEXT. */
			if (d->max_srq && d->max_srq_wr && d->max_srq_sge)
				s->dom[i].max_ep_srx_ctx = 1;
		} else {
			/* RDM: shared transmit contexts, a binding on the
			 * engine (util_rdm_stx), for any number of
			 * endpoints. */
			s->dom[i].max_ep_stx_ctx = s->dom[i].ep_cnt;
			/* Shared receive contexts: the engine's
			 * (util_rdm_srx), for any number of endpoints. */
			s->dom[i].max_ep_srx_ctx = s->dom[i].ep_cnt;
			/* Scalable endpoints (verbs_rdm_sep.c): each
			 * context pair has a CQ and an SRQ of its own. */
			s->dom[i].max_ep_tx_ctx = WEFT_MIN(
				(size_t)VERBS_RDM_MAX_CTX,
				WEFT_MIN((size_t)d->max_cq, (size_t)d->max_srq));
			if (!s->dom[i].max_ep_tx_ctx)
				s->dom[i].max_ep_tx_ctx = 1;
			s->dom[i].max_ep_rx_ctx = s->dom[i].max_ep_tx_ctx;
		}
		/* RDM endpoints apply atomics at the target, unless asked
		 * for the device's (verbs.h); MSG endpoints have only those. */
		if (!d->atomics && (msg || verbs_rdm_device_atomics())) {
			s->info[i].caps &= ~FI_ATOMIC;
			s->tx[i].caps &= ~FI_ATOMIC;
			s->rx[i].caps &= ~FI_ATOMIC;
		}
		s->info[i].addr_format = s->ifc.addr.ss_family == AF_INET6 ?
						 FI_SOCKADDR_IN6 :
						 FI_SOCKADDR_IN;
		s->info[i].tx_attr = &s->tx[i];
		s->info[i].rx_attr = &s->rx[i];
		s->info[i].ep_attr = &s->ep[i];
		s->info[i].domain_attr = &s->dom[i];
		s->info[i].fabric_attr = &s->fab;
		s->info[i].nic = &s->nic;
	}
	s->rx[2].mode &= ~FI_RX_CQ_DATA;
	i = VERBS_RDM_NOKEYS;
	s->info[i].caps &= ~VERBS_RDM_KEYED_CAPS;
	s->tx[i].caps &= ~VERBS_RDM_KEYED_CAPS;
	s->rx[i].caps &= ~VERBS_RDM_KEYED_CAPS;
	s->dom[i].mr_mode = 0;
	if (d->iwarp) {
		/* iWARP carries no immediate data: MSG endpoints have no
		 * remote CQ data at all (verbs_msg.c refuses it), and so no
		 * receive is consumed for it either. */
		for (i = 1; i < 3; i++) {
			s->dom[i].cq_data_size = 0;
			s->rx[i].mode &= ~FI_RX_CQ_DATA;
			s->tx[i].op_flags &= ~FI_REMOTE_CQ_DATA;
		}
	}

	snprintf(s->nic_vendor, sizeof(s->nic_vendor), "0x%04x", d->vendor_id);
	snprintf(s->nic_part, sizeof(s->nic_part), "0x%04x",
		 d->vendor_part_id);
	snprintf(s->nic_hw, sizeof(s->nic_hw), "%u", d->hw_ver);
	s->nic_dev.name = s->dev.name;
	s->nic_dev.device_id = s->nic_part;
	s->nic_dev.vendor_id = s->nic_vendor;
	s->nic_dev.device_version = s->nic_hw;
	s->nic_dev.driver = NULL;
	s->nic_dev.firmware = s->dev.fw_ver[0] ? s->dev.fw_ver : NULL;
	s->nic_link.address = s->ipstr;
	s->nic_link.mtu = (size_t)d->mtu;
	s->nic_link.speed = (size_t)d->speed;
	s->nic_link.state = d->state == IBV_PORT_ACTIVE ? FI_LINK_UP :
			    d->state == IBV_PORT_DOWN	? FI_LINK_DOWN :
							  FI_LINK_UNKNOWN;
	s->nic_link.network_type = d->ethernet ? "Ethernet" : "InfiniBand";
	/* The PCI function of the device (or of its network interface);
	 * Soft-RoCE and Soft-iWARP sit on a netdev with no bus of its own. */
	if (util_nic_bus(s->dev.name, s->ifc.name, &s->nic_bus))
		s->nic_bus.bus_type = FI_BUS_UNKNOWN;
	s->nic.fid.fclass = FI_CLASS_NIC;
	s->nic.device_attr = &s->nic_dev;
	s->nic.link_attr = &s->nic_link;
	s->nic.bus_attr = &s->nic_bus;
}

/* The device and port an interface address belongs to, through rdma_cm:
 * 0 and *ctx (the id's, valid while the id lives) or -FI_ENODATA. */
static int addr_device(const struct util_iface *ifc, struct rdma_cm_id **idp)
{
	struct sockaddr_storage sa = ifc->addr;
	struct rdma_cm_id *id;

	if (rdma_create_id(NULL, &id, NULL, RDMA_PS_TCP))
		return -FI_ENODATA;
	((struct sockaddr_in *)&sa)->sin_port = 0;
	if (rdma_bind_addr(id, (struct sockaddr *)&sa) || !id->verbs) {
		rdma_destroy_id(id);
		return -FI_ENODATA;
	}
	*idp = id;
	return 0;
}

/* Find the sites once; the result (or the reason there are none) stays. */
static int discover(void)
{
	struct util_iface *ifs = NULL;
	struct ibv_device **devs;
	size_t n, i, count = 0;
	int ndev = 0;

	devs = ibv_get_device_list(&ndev);
	if (devs)
		ibv_free_device_list(devs);
	if (ndev <= 0) {
		snprintf(verbs_found.why, sizeof(verbs_found.why),
			 "no RDMA device found");
		return -FI_ENODATA;
	}
	ifs = calloc(VERBS_SITE_MAX, sizeof(*ifs));
	verbs_found.sites = calloc(VERBS_SITE_MAX, sizeof(*verbs_found.sites));
	if (!ifs || !verbs_found.sites) {
		free(ifs);
		return -FI_ENOMEM;
	}
	n = util_iface_list(verbs_params.iface, ifs, VERBS_SITE_MAX);
	for (i = 0; i < n; i++) {
		struct verbs_site *s = &verbs_found.sites[count];
		struct rdma_cm_id *id;
		const char *name;
		const void *ip;

		if (ifs[i].loopback || addr_device(&ifs[i], &id))
			continue;
		name = ibv_get_device_name(id->verbs->device);
		if (verbs_params.device[0] &&
		    strcmp(verbs_params.device, name)) {
			rdma_destroy_id(id);
			continue;
		}
		if (verbs_dev_query(id->verbs, id->port_num ? id->port_num : 1,
				    &s->dev)) {
			rdma_destroy_id(id);
			continue;
		}
		rdma_destroy_id(id);
		s->ifc = ifs[i];
		ip = ifs[i].addr.ss_family == AF_INET6 ?
			     (const void *)&((struct sockaddr_in6 *)&ifs[i].addr)
				     ->sin6_addr :
			     (const void *)&((struct sockaddr_in *)&ifs[i].addr)
				     ->sin_addr;
		inet_ntop(ifs[i].addr.ss_family, ip, s->ipstr,
			  sizeof(s->ipstr));
		site_fill(s);
		count++;
	}
	free(ifs);
	if (!count) {
		snprintf(verbs_found.why, sizeof(verbs_found.why),
			 "%d RDMA device%s found, none with an IP address%s%s%s%s",
			 ndev, ndev == 1 ? "" : "s",
			 verbs_params.iface[0] ? " on " : "", verbs_params.iface,
			 verbs_params.device[0] ? " named " : "",
			 verbs_params.device);
		return -FI_ENODATA;
	}
	/* Chain the candidates: RDM, MSG of each site in turn. */
	for (i = 0; i < count; i++) {
		verbs_found.sites[i].info[0].next = &verbs_found.sites[i].info[1];
		verbs_found.sites[i].info[1].next = &verbs_found.sites[i].info[2];
		verbs_found.sites[i].info[2].next = &verbs_found.sites[i].info[3];
		verbs_found.sites[i].info[3].next =
			i + 1 < count ? &verbs_found.sites[i + 1].info[0] : NULL;
	}
	verbs_found.count = count;
	return 0;
}

int verbs_sites_get(void)
{
	int ret;

	pthread_mutex_lock(&verbs_found.lock);
	if (!verbs_found.done) {
		templates_init();
		verbs_found.err = discover();
		verbs_found.done = verbs_found.err != -FI_ENOMEM;
	}
	ret = verbs_found.err;
	pthread_mutex_unlock(&verbs_found.lock);
	return ret;
}

/* The discovered candidates, for fi_domain's and fi_endpoint's checks
 * (after a successful sites_get). */
const struct util_prov *verbs_sites_prov(void)
{
	static struct util_prov up;

	up = verbs_util_prov;
	up.info = &verbs_found.sites[0].info[0];
	return &up;
}

/* The port of device dev serving fabric (any, when NULL); 1 if none. */
uint8_t verbs_site_port(const char *dev, const char *fabric)
{
	size_t i;

	for (i = 0; i < verbs_found.count; i++)
		if (!strcmp(verbs_found.sites[i].dev.name, dev) &&
		    (!fabric || !strcmp(verbs_found.sites[i].ifc.subnet, fabric)))
			return verbs_found.sites[i].dev.port;
	return 1;
}

/* ---- fi_getinfo --------------------------------------------------------- */

static bool is_msg_nomode(const struct fi_info *fi)
{
	return fi->ep_attr && fi->ep_attr->type == FI_EP_MSG && fi->rx_attr &&
	       !(fi->rx_attr->mode & FI_RX_CQ_DATA);
}

static bool is_rdm(const struct fi_info *fi)
{
	return fi->ep_attr && fi->ep_attr->type == FI_EP_RDM;
}

/* The RDM candidate without RMA (mr_mode 0); the other one has RMA. */
static bool is_rdm_nokeys(const struct fi_info *fi)
{
	return is_rdm(fi) && !(fi->caps & FI_RMA);
}

static bool same_site(const struct fi_info *a, const struct fi_info *b)
{
	return a->domain_attr && b->domain_attr && a->fabric_attr &&
	       b->fabric_attr && a->domain_attr->name && b->domain_attr->name &&
	       a->fabric_attr->name && b->fabric_attr->name &&
	       !strcmp(a->domain_attr->name, b->domain_attr->name) &&
	       !strcmp(a->fabric_attr->name, b->fabric_attr->name);
}

/* The site a candidate was made from, or NULL. */
static const struct verbs_site *site_of(const struct fi_info *fi)
{
	size_t i;

	if (!fi->domain_attr || !fi->domain_attr->name || !fi->fabric_attr ||
	    !fi->fabric_attr->name)
		return NULL;
	for (i = 0; i < verbs_found.count; i++) {
		const struct verbs_site *s = &verbs_found.sites[i];

		if (!strcmp(fi->domain_attr->name, s->dev.name) &&
		    !strcmp(fi->fabric_attr->name, s->ifc.subnet))
			return s;
	}
	return NULL;
}

/*
 * Among entries that rank equal (their interfaces' class: IPv4 before
 * IPv6), those of devices near the calling thread first; devices without
 * a PCI device of their own (soft RDMA devices) keep their places.
 */
static void order_near(struct fi_info **list)
{
	struct fi_info *fi, **items;
	int *rank, *near;
	size_t n = 0, i;

	for (fi = *list; fi; fi = fi->next)
		n++;
	if (n < 2)
		return;
	items = calloc(n, sizeof(*items));
	rank = calloc(n, sizeof(*rank));
	near = calloc(n, sizeof(*near));
	if (items && rank && near) {
		for (fi = *list, i = 0; fi; fi = fi->next, i++) {
			const struct verbs_site *s = site_of(fi);

			items[i] = fi;
			rank[i] = s ? util_iface_rank(&s->ifc) : -1;
			near[i] = s ? util_nic_near(s->dev.name, s->ifc.name) :
				      -1;
		}
		if (!util_nic_order(items, n, sizeof(*items), rank, near)) {
			for (i = 0; i + 1 < n; i++)
				items[i]->next = items[i + 1];
			items[n - 1]->next = NULL;
			*list = items[0];
		}
	}
	free(items);
	free(rank);
	free(near);
}

static int verbs_getinfo(uint32_t version, const char *node,
			 const char *service, uint64_t flags,
			 const struct fi_info *hints, struct fi_info **info)
{
	struct fi_info *all = NULL, **tail = &all, *got, *fi, *next;
	struct fi_info *far = NULL, **far_tail = &far;
	struct util_prov up = verbs_util_prov;
	struct fi_info *last_msg = NULL, *last_rdm = NULL;
	int ret;

	verbs_params_init();
	ret = verbs_sites_get();
	if (ret) {
		if (ret == -FI_ENODATA)
			weft_explain(&verbs_prov, "%s", verbs_found.why);
		return ret;
	}
	up.info = &verbs_found.sites[0].info[0];
	ret = util_getinfo(&up, version, NULL, NULL, flags & ~FI_SOURCE, hints,
			   &got);
	if (ret)
		return ret;
	/* Addresses per site: drop the candidates that cannot serve. */
	for (fi = got; fi; fi = next) {
		const struct verbs_site *site;
		const struct util_iface *ifc;

		next = fi->next;
		fi->next = NULL;
		/* The MSG variant without FI_RX_CQ_DATA is for callers the
		 * other one did not suit. */
		if (is_msg_nomode(fi) && last_msg && same_site(fi, last_msg)) {
			weft_info_free_list(fi);
			continue;
		}
		/* Likewise the RDM one without RMA. */
		if (is_rdm_nokeys(fi) && last_rdm && same_site(fi, last_rdm)) {
			weft_info_free_list(fi);
			continue;
		}
		site = site_of(fi);
		ifc = site ? &site->ifc : NULL;
		ret = ifc ? util_iface_fill_addrs(fi, ifc, node, service,
						  flags) :
			    -FI_ENODATA;
		if (ret) {
			weft_info_free_list(fi);
			if (ret != -FI_ENODATA) {
				weft_info_free_list(all);
				weft_info_free_list(next);
				return ret;
			}
			continue;
		}
		if (fi->ep_attr && fi->ep_attr->type == FI_EP_MSG)
			last_msg = fi;
		if (is_rdm(fi))
			last_rdm = fi;
		/* A destination on another device's subnet: a device reaches
		 * its own subnet (RoCE cannot talk to iWARP), so those go
		 * first, and applications that take the first entry get the
		 * device that can reach the peer. */
		if (!(flags & FI_SOURCE) && fi->dest_addr &&
		    !util_iface_has(ifc, fi->dest_addr)) {
			*far_tail = fi;
			far_tail = &fi->next;
			continue;
		}
		*tail = fi;
		tail = &fi->next;
	}
	/* Then, as a tiebreak, the devices nearest the calling thread. */
	order_near(&all);
	order_near(&far);
	for (tail = &all; *tail; tail = &(*tail)->next)
		;
	*tail = far;
	if (!all) {
		weft_explain(&verbs_prov, "no RDMA device serves \"%s%s%s\"",
			     node ? node : "", service ? ":" : "",
			     service ? service : "");
		return -FI_ENODATA;
	}
	*info = all;
	return 0;
}

/* ---- fabric ------------------------------------------------------------- */

static struct fi_ops_fabric verbs_fabric_ops = {
	.size = sizeof(struct fi_ops_fabric),
	.domain = verbs_domain_open,
	.passive_ep = verbs_passive_ep,
	.eq_open = util_eq_open_op,
	.wait_open = util_wait_open,
	.trywait = util_trywait,
	.domain2 = util_fabric_domain2,
};

static int verbs_fabric_open(struct fi_fabric_attr *attr,
			     struct fid_fabric **fabric_fid, void *context)
{
	verbs_params_init();
	return util_fabric_open(&verbs_prov, attr, &verbs_fabric_ops,
				fabric_fid, context);
}

static void verbs_cleanup(void)
{
	/* Their threads run this library's code. */
	verbs_teardowns_wait();
	free(verbs_found.sites);
	verbs_found.sites = NULL;
	verbs_found.count = 0;
	verbs_found.done = false;
}

struct fi_provider verbs_prov = {
	.version = WEFT_PROV_VERSION,
	.fi_version = WEFT_API_VERSION,
	.name = "verbs",
	.getinfo = verbs_getinfo,
	.fabric = verbs_fabric_open,
	.cleanup = verbs_cleanup,
};
WEFT_PROVIDER(verbs_prov);
