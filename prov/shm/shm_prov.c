/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The shm provider: registration, fi_getinfo, fabric, domain, AV.
 */
#include "shm.h"

#include "weft/shm_local.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "weft/ofi.h"

#include "weft/stubs.h"
#include "weft/util_coll.h"
#include "weft/util_atomic.h"
#include "weft/util_cntr.h"
#include "weft/util_cq.h"
#include "weft/util_eq.h"
#include "weft/util_getinfo.h"
#include "weft/util_poll.h"
#include "weft/util_wait.h"

struct shm_params shm_params = {
	.queue_slots = 1024,
	.max_peers = 4096,
	.bounce_count = 16, /* 1 MiB of buffers: the copies stay in cache */
	/* Measured with fi_rdm_tagged_pingpong/_bw against each other:
	 * messages up to 64 KiB are fastest eager (one copy each side, no
	 * handshake), while a large message pushes fastest in 16 KiB pieces
	 * that stay in cache. */
	.bounce_size = 65536,
	.push_chunk = 16384,
	/* Every message past the bounce buffers is read by the receiver
	 * with process_vm_readv where CMA works.  Pushing through the bounce
	 * buffers needs both processes on a CPU at once for every 256 KiB
	 * (16 buffers of 16 KiB): on a host with more busy threads than
	 * cores (MPI ranks polling, threads sending at once) each refill
	 * waits for a scheduler time slice.  Measured with MPICH's
	 * threads/pt2pt/multisend2 (three threads of one rank sending up
	 * to 2 MiB to three ranks, 2 cores): 23 to 72 s pushing, 9 to 20 s
	 * with CMA (libfabric 1.17's shm, also CMA: 9 to 12 s); perf showed
	 * the receivers polling 75% of the CPU time and copying 0.3%.  A pushed pingpong with a
	 * core for each side was faster at some sizes, but not on a loaded
	 * host.  Push remains where CMA is denied or disabled. */
	.cma_min = 0,
	/* Unexpected messages an endpoint keeps before it holds its senders
	 * back: 32 MiB is 8000 messages of 4 KiB, or 500 of 64 KiB. */
	.unexp_max = 32u << 20,
};

static void shm_params_read(void)
{
	size_t v;
	int b;

	fi_param_define(&shm_prov, "queue_slots", FI_PARAM_SIZE_T,
			"Slots in an endpoint's inbound queue, a power of two "
			"(default %zu)",
			shm_params.queue_slots);
	fi_param_define(&shm_prov, "max_peers", FI_PARAM_SIZE_T,
			"Peers that may send to one endpoint (default %zu)",
			shm_params.max_peers);
	fi_param_define(&shm_prov, "bounce_size", FI_PARAM_SIZE_T,
			"Largest message sent eagerly through one of the "
			"receiver's bounce buffers; larger ones go by rendezvous "
			"(default %zu)",
			shm_params.bounce_size);
	fi_param_define(&shm_prov, "push_chunk", FI_PARAM_SIZE_T,
			"Bytes per bounce buffer when a large message is pushed "
			"through shared memory (default %zu)",
			shm_params.push_chunk);
	fi_param_define(&shm_prov, "bounce_count", FI_PARAM_SIZE_T,
			"Bounce buffers per endpoint (default %zu)",
			shm_params.bounce_count);
	fi_param_define(&shm_prov, "cma_min", FI_PARAM_SIZE_T,
			"Messages of at least this many bytes are read by the "
			"receiver with process_vm_readv instead of being "
			"copied through shared memory (default 0: every message "
			"larger than a bounce buffer, where CMA works)");
	fi_param_define(&shm_prov, "unexp_max", FI_PARAM_SIZE_T,
			"Bytes an endpoint may hold for messages that arrived "
			"before their receive was posted; past it, senders "
			"wait until receives are posted (default %zu)",
			shm_params.unexp_max);
	fi_param_define(&shm_prov, "disable_cma", FI_PARAM_BOOL,
			"Never use process_vm_readv/writev: copy large "
			"messages through shared memory (default no)");

	if (!fi_param_get_size_t(&shm_prov, "queue_slots", &v) && v >= 16 &&
	    !(v & (v - 1)) && v <= (1u << 20))
		shm_params.queue_slots = v;
	if (!fi_param_get_size_t(&shm_prov, "max_peers", &v) && v >= 2 &&
	    v <= 65535)
		shm_params.max_peers = v;
	if (!fi_param_get_size_t(&shm_prov, "bounce_size", &v) &&
	    v >= SHM_INLINE_MAX && v <= (64u << 20))
		shm_params.bounce_size = v;
	if (!fi_param_get_size_t(&shm_prov, "push_chunk", &v) && v >= 4096)
		shm_params.push_chunk = v;
	if (shm_params.push_chunk > shm_params.bounce_size)
		shm_params.push_chunk = shm_params.bounce_size;
	if (!fi_param_get_size_t(&shm_prov, "bounce_count", &v) && v >= 1 &&
	    v <= 4096)
		shm_params.bounce_count = v;
	if (!fi_param_get_size_t(&shm_prov, "cma_min", &v))
		shm_params.cma_min = v;
	if (!fi_param_get_size_t(&shm_prov, "unexp_max", &v) && v >= 4096)
		shm_params.unexp_max = v;
	if (!fi_param_get_bool(&shm_prov, "disable_cma", &b))
		shm_params.disable_cma = b;
}

/* Read the FI_SHM_* variables once, whichever thread gets here first. */
void shm_params_init(void)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;

	pthread_once(&once, shm_params_read);
}

bool shm_cma_probe(void)
{
	char src[8] = "weft", dst[8] = { 0 };
	struct iovec local = { dst, sizeof(dst) };
	struct iovec remote = { src, sizeof(src) };

	if (shm_params.disable_cma)
		return false;
	return process_vm_readv(getpid(), &local, 1, &remote, 1, 0) ==
		       (ssize_t)sizeof(src) &&
	       !memcmp(src, dst, sizeof(src));
}

/* ---- what the provider offers ------------------------------------------- */

#define SHM_CAPS                                                               \
	(FI_MSG | FI_TAGGED | FI_RMA | FI_ATOMIC | FI_SEND | FI_RECV |         \
	 FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE |               \
	 FI_MULTI_RECV | FI_DIRECTED_RECV | FI_SOURCE | FI_SOURCE_ERR |        \
	 FI_RMA_EVENT | FI_LOCAL_COMM | FI_NAMED_RX_CTX | FI_TRIGGER |         \
	 FI_COLLECTIVE | FI_RMA_PMEM | FI_SHARED_AV | FI_FENCE)
#define SHM_TX_CAPS                                                            \
	(FI_MSG | FI_TAGGED | FI_RMA | FI_ATOMIC | FI_SEND | FI_READ |         \
	 FI_WRITE | FI_NAMED_RX_CTX | FI_TRIGGER | FI_COLLECTIVE |             \
	 FI_RMA_PMEM | FI_FENCE)
#define SHM_RX_CAPS                                                            \
	(FI_MSG | FI_TAGGED | FI_RMA | FI_ATOMIC | FI_RECV | FI_REMOTE_READ |  \
	 FI_REMOTE_WRITE | FI_MULTI_RECV | FI_DIRECTED_RECV | FI_SOURCE |      \
	 FI_SOURCE_ERR | FI_RMA_EVENT | FI_TRIGGER | FI_COLLECTIVE |           \
	 FI_RMA_PMEM)
/* FI_COMMIT_COMPLETE: the target flushes FI_RMA_PMEM memory it wrote
 * (weft/util_pmem.h) before it answers. */
#define SHM_TX_OP_FLAGS                                                        \
	(FI_COMPLETION | FI_INJECT | FI_INJECT_COMPLETE |                      \
	 FI_TRANSMIT_COMPLETE | FI_DELIVERY_COMPLETE | FI_COMMIT_COMPLETE |    \
	 FI_REMOTE_CQ_DATA)
#define SHM_RX_OP_FLAGS (FI_COMPLETION | FI_MULTI_RECV)

static struct fi_tx_attr shm_tx_attr = {
	.caps = SHM_TX_CAPS,
	.op_flags = SHM_TX_OP_FLAGS,
	.msg_order = UTIL_RDM_ORDER_ALL,
	.comp_order = FI_ORDER_NONE,
	.inject_size = 4096,
	.size = 1024,
	.iov_limit = UTIL_RDM_IOV_MAX,
	.rma_iov_limit = UTIL_RDM_IOV_MAX,
};

static struct fi_rx_attr shm_rx_attr = {
	.caps = SHM_RX_CAPS,
	.op_flags = SHM_RX_OP_FLAGS,
	.msg_order = UTIL_RDM_ORDER_ALL,
	.comp_order = FI_ORDER_NONE,
	.size = 1024,
	.iov_limit = UTIL_RDM_IOV_MAX,
};

static struct fi_ep_attr shm_ep_attr = {
	.type = FI_EP_RDM,
	.protocol = FI_PROTO_SHM,
	.protocol_version = SHM_VERSION,
	.max_msg_size = SIZE_MAX,
	.max_order_raw_size = UTIL_RDM_ORDER_SIZE,
	.max_order_war_size = UTIL_RDM_ORDER_SIZE,
	.max_order_waw_size = UTIL_RDM_ORDER_SIZE,
	/* Any bit may be matched or ignored: the generic format. */
	.mem_tag_format = 0xaaaaaaaaaaaaaaaaULL,
	.tx_ctx_cnt = 1,
	.rx_ctx_cnt = 1,
};

static struct fi_domain_attr shm_domain_attr = {
	.name = "shm",
	.threading = FI_THREAD_SAFE,
	/* Both kinds are offered; manual is what callers get unless they ask
	 * for automatic progress (auto_on_request). */
	.control_progress = FI_PROGRESS_AUTO,
	.data_progress = FI_PROGRESS_AUTO,
	.resource_mgmt = FI_RM_ENABLED,
	.av_type = FI_AV_UNSPEC,
	.mr_mode = 0,
	.mr_key_size = sizeof(uint64_t),
	.cq_data_size = sizeof(uint64_t),
	.cq_cnt = 1024,
	.ep_cnt = 256,
	.tx_ctx_cnt = 256,
	.rx_ctx_cnt = 256,
	.max_ep_tx_ctx = SHM_MAX_CTX,
	.max_ep_rx_ctx = SHM_MAX_CTX,
	/* Endpoints one shared transmit context takes: any number
	 * (util_rdm_stx: each keeps its own queue behind it). */
	.max_ep_stx_ctx = 256,
	/* Endpoints one shared receive context takes: any number
	 * (util_rdm_srx: they share its receive state and lock). */
	.max_ep_srx_ctx = 256,
	.cntr_cnt = 1024,
	.mr_iov_limit = UTIL_MR_IOV_LIMIT,
	.caps = FI_LOCAL_COMM,
	.mr_cnt = 65536,
	.max_err_data = SHM_ADDRLEN,
};

static struct fi_fabric_attr shm_fabric_attr = {
	.name = "shm",
	.prov_version = WEFT_PROV_VERSION,
};

static struct fi_info shm_info = {
	.caps = SHM_CAPS,
	.addr_format = FI_ADDR_STR,
	.tx_attr = &shm_tx_attr,
	.rx_attr = &shm_rx_attr,
	.ep_attr = &shm_ep_attr,
	.domain_attr = &shm_domain_attr,
	.fabric_attr = &shm_fabric_attr,
};

/* Move a malloc'd address into an fi_info's source or destination. */
static void set_addr(void **slot, size_t *len, char *addr)
{
	free(*slot);
	*slot = addr;
	*len = strlen(addr) + 1;
}

/*
 * An address the hints gave (`what`: "source" or "destination"), read
 * within its length and handed on terminated; -FI_ENODATA, explained, when
 * it is no shm address.
 */
static int addr_from_hints(void **slot, size_t *len, const char *what)
{
	char name[SHM_NAME_MAX], *addr;

	if (shm_name_from_addr(*slot, *len, name)) {
		weft_explain(&shm_prov,
			     "the %s address in the hints is not an shm address",
			     what);
		return -FI_ENODATA;
	}
	if (asprintf(&addr, SHM_PREFIX "%s", name) < 0)
		return -FI_ENOMEM;
	set_addr(slot, len, addr);
	return 0;
}

/*
 * Addresses from node and service (shm_addr_resolve), and a source address
 * in every answer: the one the endpoint will have, drawn when neither
 * FI_SOURCE nor hints give one.  Addresses from the hints are read within
 * their lengths and handed on terminated.
 */
static int shm_resolve(const struct util_prov *uprov, uint32_t version,
		       const char *node, const char *service, uint64_t flags,
		       const struct fi_info *hints, struct fi_info *out)
{
	char *addr;
	int ret;

	if (node || service) {
		ret = shm_addr_resolve(node, service, flags & FI_SOURCE, &addr);
		if (ret == -FI_EINVAL) {
			weft_explain(&shm_prov,
				     "\"%s%s%s\" is not an shm address "
				     "(fi_shm://NAME, or node and service "
				     "making NODE:SERVICE without '/', "
				     "shorter than %d)",
				     node ? node : "", service ? ":" : "",
				     service ? service : "", SHM_NAME_MAX);
			return -FI_ENODATA;
		}
		if (ret)
			return ret;
		if (flags & FI_SOURCE)
			set_addr(&out->src_addr, &out->src_addrlen, addr);
		else
			set_addr(&out->dest_addr, &out->dest_addrlen, addr);
	}
	/* Clients insert the destination into their AV as it is. */
	if (out->dest_addr) {
		ret = addr_from_hints(&out->dest_addr, &out->dest_addrlen,
				      "destination");
		if (ret)
			return ret;
	}
	if (out->src_addr)
		return addr_from_hints(&out->src_addr, &out->src_addrlen,
				       "source");
	ret = shm_addr_resolve(NULL, NULL, true, &addr);
	if (ret)
		return ret;
	set_addr(&out->src_addr, &out->src_addrlen, addr);
	return 0;
}

static const struct util_prov shm_util_prov = {
	.prov = &shm_prov,
	.info = &shm_info,
	.resolve = shm_resolve,
	.auto_on_request = true, /* a progress thread per endpoint */
};

static int shm_getinfo(uint32_t version, const char *node, const char *service,
		       uint64_t flags, const struct fi_info *hints,
		       struct fi_info **info)
{
	struct fi_info *fi;
	int ret;

	shm_params_init();
	shm_tx_attr.inject_size = shm_inject_size();
	ret = util_getinfo(&shm_util_prov, version, node, service, flags,
			   hints, info);
	if (ret || !hints)
		return ret;
	/* RMA keeps its place behind earlier messages only when asked: the
	 * orders returned are the ones the endpoint will keep (shm.h). */
	for (fi = *info; fi; fi = fi->next) {
		if (hints->tx_attr && fi->tx_attr)
			fi->tx_attr->msg_order =
				shm_local_orders(hints->tx_attr->msg_order);
		if (hints->rx_attr && fi->rx_attr)
			fi->rx_attr->msg_order =
				shm_local_orders(hints->rx_attr->msg_order);
	}
	return 0;
}

/* ---- AV ----------------------------------------------------------------- */

/* Addresses are "fi_shm://NAME" strings; anything else is refused. */
static int shm_av_normalize(const struct util_av *av, const void *in, void *out)
{
	char buf[SHM_ADDRLEN];
	const char *s = in;

	if (strnlen(s, SHM_ADDRLEN) == SHM_ADDRLEN ||
	    strncmp(s, SHM_PREFIX, strlen(SHM_PREFIX)) ||
	    !shm_name_valid(s + strlen(SHM_PREFIX)) ||
	    strchr(s + strlen(SHM_PREFIX), SHM_CTX_MARK))
		return -FI_EINVAL;
	memset(buf, 0, sizeof(buf));
	strcpy(buf, s);
	memcpy(out, buf, sizeof(buf));
	return 0;
}

static int shm_av_resolve(const struct util_av *av, const char *node,
			  const char *service, void *addr)
{
	char *a;
	int ret;

	if (!node && !service)
		return -FI_EINVAL;
	ret = shm_addr_resolve(node, service, false, &a);
	if (ret)
		return ret;
	ret = strlen(a) < SHM_ADDRLEN ? shm_av_normalize(av, a, addr) :
					-FI_EINVAL;
	free(a);
	return ret;
}

static const struct util_av_ops shm_av_ops = {
	.addr_format = FI_ADDR_STR,
	.addrlen = SHM_ADDRLEN,
	.str_prefix = SHM_PREFIX,
	.normalize = shm_av_normalize,
	.resolve = shm_av_resolve,
};

int shm_av_open(struct fid_domain *domain_fid, struct fi_av_attr *attr,
		struct fid_av **av, void *context)
{
	struct util_domain *domain =
		container_of(domain_fid, struct util_domain, domain_fid);

	/* FI_SHARED_AV: named AVs shared by the node's processes. */
	return util_av_open_shared(domain, attr, &shm_av_ops, av, context);
}

/* ---- domain ------------------------------------------------------------- */

static int shm_query_atomic(struct fid_domain *domain,
			    enum fi_datatype datatype, enum fi_op op,
			    struct fi_atomic_attr *attr, uint64_t flags)
{
	return util_atomic_query(datatype, op, shm_params.bounce_size / 2,
				 flags, attr);
}

/* fi_endpoint: an info asking for what shm does not offer is refused. */
static int shm_endpoint(struct fid_domain *domain, struct fi_info *info,
			struct fid_ep **ep, void *context)
{
	int ret;

	if (!info)
		return -FI_EINVAL;
	ret = util_prov_check_ep(&shm_util_prov, info);
	if (ret)
		return ret;
	return shm_ep_open(domain, info, ep, context);
}

static struct fi_ops_domain shm_domain_ops = {
	.size = sizeof(struct fi_ops_domain),
	.av_open = shm_av_open,
	.cq_open = util_cq_open_op,
	.endpoint = shm_endpoint,
	.scalable_ep = shm_sep_open,
	.cntr_open = util_cntr_open_op,
	.poll_open = util_poll_open,
	.stx_ctx = util_rdm_stx_open,
	.srx_ctx = util_rdm_srx_open,
	.query_atomic = shm_query_atomic,
	.query_collective = util_coll_query,
	.endpoint2 = util_domain_endpoint2,
};

int shm_domain_open(struct fid_fabric *fabric_fid, struct fi_info *info,
		    struct fid_domain **domain_fid, void *context)
{
	return util_mr_domain_open(&shm_util_prov, fabric_fid, info,
				   &shm_domain_ops, domain_fid, context);
}

/* ---- fabric ------------------------------------------------------------- */

static struct fi_ops_fabric shm_fabric_ops = {
	.size = sizeof(struct fi_ops_fabric),
	.domain = shm_domain_open,
	.passive_ep = weft_no_passive_ep,
	.eq_open = util_eq_open_op,
	.wait_open = util_wait_open,
	.trywait = util_trywait,
	.domain2 = util_fabric_domain2,
};

int shm_fabric_open(struct fi_fabric_attr *attr, struct fid_fabric **fabric_fid,
		    void *context)
{
	if (attr->name && strcmp(attr->name, shm_fabric_attr.name))
		return -FI_EINVAL;
	shm_params_init();
	return util_fabric_open(&shm_prov, attr, &shm_fabric_ops, fabric_fid,
				context);
}

static void shm_cleanup(void)
{
}

struct fi_provider shm_prov = {
	.version = WEFT_PROV_VERSION,
	.fi_version = WEFT_API_VERSION,
	.name = "shm",
	.getinfo = shm_getinfo,
	.fabric = shm_fabric_open,
	.cleanup = shm_cleanup,
};
WEFT_PROVIDER(shm_prov);
