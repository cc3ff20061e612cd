/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The verbs provider's domain (fi_domain on a device found by discovery,
 * verbs_prov.c), its endpoints' dispatch by type, memory registration and
 * the registration cache, atomics the device offers, and the rdma_cm and
 * work-completion helpers both endpoint types share.
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

#include "weft/util_trigger.h"
#include "weft/ofi.h"

#include "weft/stubs.h"
#include "weft/util_coll.h"
#include "weft/util_atomic.h"
#include "weft/util_av.h"
#include "weft/util_cntr.h"
#include "weft/util_cq.h"
#include "weft/util_nic.h"
#include "weft/util_poll.h"
#include "weft/util_wait.h"

/* ---- memory registration ------------------------------------------------ */

int verbs_access_flags(uint64_t access)
{
	int f = IBV_ACCESS_LOCAL_WRITE;

	if (access & FI_REMOTE_WRITE)
		f |= IBV_ACCESS_REMOTE_WRITE;
	if (access & FI_REMOTE_READ)
		f |= IBV_ACCESS_REMOTE_READ;
	/* A registration that may be the target of remote writes may be
	 * the target of atomics too (fi_mr(3) has no separate bit). */
	if (access & FI_REMOTE_WRITE)
		f |= IBV_ACCESS_REMOTE_ATOMIC;
	return f;
}

static int verbs_mr_close(struct fid *fid)
{
	struct verbs_mr *mr = container_of(fid, struct verbs_mr, mr_fid.fid);
	int ret;

	if (mr->access & (FI_REMOTE_READ | FI_REMOTE_WRITE))
		util_mr_map_remove(&mr->domain->base.mr_map, mr->mr->rkey);
	ret = ibv_dereg_mr(mr->mr);
	if (ret)
		return weft_errno(ret);
	util_domain_put(&mr->domain->base.util);
	free(mr);
	return 0;
}

/*
 * fi_mr_bind: no counter (fi_mr(3): -FI_ENOSYS when the provider cannot
 * report events on registered memory).  The device reads and writes it
 * without the CPU, so nothing here sees an access to count; FI_RMA_EVENT
 * is not offered either.
 */
static int verbs_mr_bind(struct fid *fid, struct fid *bfid, uint64_t flags)
{
	if (bfid && bfid->fclass == FI_CLASS_CNTR)
		FI_WARN(&verbs_prov, FI_LOG_MR,
			"fi_mr_bind of a counter: verbs cannot count remote "
			"accesses to registered memory (the device makes them "
			"without the CPU; FI_RMA_EVENT is not offered)\n");
	return weft_no_bind(fid, bfid, flags);
}

static struct fi_ops verbs_mr_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = verbs_mr_close,
	.bind = verbs_mr_bind,
	.control = weft_no_control,
	.ops_open = weft_no_ops_open,
	.tostr = weft_no_tostr,
	.ops_set = weft_no_ops_set,
};

static int verbs_mr_regattr(struct fid *fid, const struct fi_mr_attr *attr,
			    uint64_t flags, struct fid_mr **mr_fid)
{
	struct verbs_domain *domain =
		container_of(fid, struct verbs_domain, base.util.domain_fid.fid);
	struct fi_mr_attr map_attr;
	struct verbs_mr *mr;
	uint64_t key;
	int ret;

	if (!attr || !mr_fid || attr->iov_count != 1 || !attr->mr_iov)
		return -FI_EINVAL;
	if (attr->access & ~UTIL_MR_ACCESS)
		return -FI_EINVAL;
	if (flags & ~UTIL_MR_FLAGS)
		return -FI_EBADFLAGS;
	if (attr->iface != FI_HMEM_SYSTEM)
		return -FI_ENOSYS;
	if (attr->mr_iov[0].iov_len > domain->dev.max_mr_size)
		return -FI_EINVAL;
	mr = calloc(1, sizeof(*mr));
	if (!mr)
		return -FI_ENOMEM;
	mr->domain = domain;
	mr->access = attr->access;
	mr->mr = ibv_reg_mr(domain->pd, attr->mr_iov[0].iov_base,
			    attr->mr_iov[0].iov_len,
			    verbs_access_flags(attr->access));
	if (!mr->mr) {
		ret = weft_errno(errno);
		goto err_free;
	}
	/* Only what peers may reach has a meaningful rkey (devices give
	 * local-only registrations rkey 0). */
	if (attr->access & (FI_REMOTE_READ | FI_REMOTE_WRITE)) {
		/* the caller's attr may be shorter than these headers' */
		memset(&map_attr, 0, sizeof(map_attr));
		memcpy(&map_attr, attr, WEFT_MR_ATTR_SIZE_1_9);
		map_attr.requested_key = mr->mr->rkey;
		ret = util_mr_map_insert(&domain->base.mr_map, &map_attr, mr,
					 &key);
		if (ret)
			goto err_dereg;
	}
	mr->mr_fid.fid.fclass = FI_CLASS_MR;
	mr->mr_fid.fid.context = attr->context;
	mr->mr_fid.fid.ops = &verbs_mr_fi_ops;
	mr->mr_fid.mem_desc = mr;
	mr->mr_fid.key = mr->mr->rkey;
	util_domain_get(&domain->base.util);
	if (domain->base.util.eq &&
	    (domain->base.util.eq_flags & FI_REG_MR)) {
		struct fi_eq_entry ev = { .fid = &mr->mr_fid.fid,
					  .context = attr->context };

		fi_eq_write(domain->base.util.eq, FI_MR_COMPLETE, &ev,
			    sizeof(ev), 0);
	}
	*mr_fid = &mr->mr_fid;
	return 0;
err_dereg:
	ibv_dereg_mr(mr->mr);
err_free:
	free(mr);
	return ret;
}

static int verbs_mr_regv(struct fid *fid, const struct iovec *iov,
			 size_t count, uint64_t access, uint64_t offset,
			 uint64_t requested_key, uint64_t flags,
			 struct fid_mr **mr, void *context)
{
	struct fi_mr_attr attr = {
		.mr_iov = iov,
		.iov_count = count,
		.access = access,
		.offset = offset,
		.requested_key = requested_key,
		.context = context,
		.iface = FI_HMEM_SYSTEM,
	};

	return verbs_mr_regattr(fid, &attr, flags, mr);
}

static int verbs_mr_reg(struct fid *fid, const void *buf, size_t len,
			uint64_t access, uint64_t offset, uint64_t requested_key,
			uint64_t flags, struct fid_mr **mr, void *context)
{
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };

	return verbs_mr_regv(fid, &iov, 1, access, offset, requested_key, flags,
			     mr, context);
}

static struct fi_ops_mr verbs_mr_ops = {
	.size = sizeof(struct fi_ops_mr),
	.reg = verbs_mr_reg,
	.regv = verbs_mr_regv,
	.regattr = verbs_mr_regattr,
};

/*
 * Before connecting or accepting on id: how long a reliable connection
 * waits for an acknowledgement.  Over RoCE rdma_cm picks the path's packet
 * lifetime, 2 s a try, some 16 s before a dead peer's QP fails; iWARP's
 * retransmission is TCP's.
 */
void verbs_qp_tune(struct rdma_cm_id *id, const struct verbs_dev *dev)
{
	uint8_t t = (uint8_t)verbs_params.ack_timeout;

	if (dev->iwarp || !t)
		return;
	if (rdma_set_option(id, RDMA_OPTION_ID, RDMA_OPTION_ID_ACK_TIMEOUT, &t,
			    sizeof(t)))
		FI_INFO(&verbs_prov, FI_LOG_EP_CTRL,
			"ACK timeout %u not set: %s\n", t, strerror(errno));
}

/*
 * A local port for an iWARP connection that siw's bind will take: one
 * with no TCP socket on it (a socket bound to port 0), else, when the
 * ephemeral range has none left (its ports in TIME_WAIT), one drawn from
 * the range that a socket with SO_REUSEADDR can bind, as siw's does.
 * 0 when none was found.
 */
static uint16_t tcp_port_free(const struct sockaddr *src, socklen_t len,
			      int attempt)
{
	struct sockaddr_storage sa;
	unsigned int lo = 32768, hi = 60999;
	int fd, one = 1;
	uint16_t port = 0;
	struct timespec ts;
	FILE *f;

	memcpy(&sa, src, len);
	if (attempt) {
		f = fopen("/proc/sys/net/ipv4/ip_local_port_range", "r");
		if (f) {
			if (fscanf(f, "%u %u", &lo, &hi) != 2 || lo > hi ||
			    hi > 65535)
				lo = 32768, hi = 60999;
			fclose(f);
		}
		/* Not rand(): that is the application's. */
		clock_gettime(CLOCK_MONOTONIC, &ts);
		port = (uint16_t)(lo + ((unsigned int)ts.tv_nsec ^
					(unsigned int)attempt * 2654435761u) %
					       (hi - lo + 1));
		if (sa.ss_family == AF_INET)
			((struct sockaddr_in *)&sa)->sin_port = htons(port);
		else
			((struct sockaddr_in6 *)&sa)->sin6_port = htons(port);
	}
	fd = socket(sa.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return 0;
	if ((attempt &&
	     setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one))) ||
	    bind(fd, (struct sockaddr *)&sa, len) ||
	    getsockname(fd, (struct sockaddr *)&sa, &len))
		port = 0;
	else
		port = ntohs(sa.ss_family == AF_INET ?
				     ((struct sockaddr_in *)&sa)->sin_port :
				     ((struct sockaddr_in6 *)&sa)->sin6_port);
	close(fd);
	return port;
}

/*
 * rdma_resolve_addr from src (or the route's address) to dst.  Over iWARP
 * the connection's TCP socket is bound to the local port rdma_cm picks
 * from a port space of its own, and rdma_connect fails with EADDRINUSE
 * when TCP holds that port (a listener, for one): with no port asked for,
 * take one TCP lets siw bind (tcp_port_free), another if rdma_cm holds it.
 */
int verbs_resolve_addr(struct rdma_cm_id *id, const struct verbs_dev *dev,
		       const struct sockaddr *src, const struct sockaddr *dst)
{
	struct sockaddr_storage sa;
	socklen_t len = 0;
	uint16_t port;
	int i;

	if (dev->iwarp && src &&
	    (src->sa_family == AF_INET || src->sa_family == AF_INET6)) {
		len = src->sa_family == AF_INET ? sizeof(struct sockaddr_in) :
						  sizeof(struct sockaddr_in6);
		memcpy(&sa, src, len);
		if (src->sa_family == AF_INET ?
			    ((struct sockaddr_in *)&sa)->sin_port :
			    ((struct sockaddr_in6 *)&sa)->sin6_port)
			len = 0; /* a port of the application's */
	}
	for (i = 0; len && i < 32; i++) {
		port = tcp_port_free(src, len, i);
		if (!port)
			continue;
		if (sa.ss_family == AF_INET)
			((struct sockaddr_in *)&sa)->sin_port = htons(port);
		else
			((struct sockaddr_in6 *)&sa)->sin6_port = htons(port);
		if (!rdma_resolve_addr(id, (struct sockaddr *)&sa,
				       (struct sockaddr *)dst,
				       verbs_params.conn_timeout_ms))
			return 0;
		if (errno != EADDRINUSE)
			return weft_errno(errno);
	}
	if (rdma_resolve_addr(id, (struct sockaddr *)src,
			      (struct sockaddr *)dst,
			      verbs_params.conn_timeout_ms))
		return weft_errno(errno);
	return 0;
}

int verbs_wc_err(enum ibv_wc_status status)
{
	switch (status) {
	case IBV_WC_SUCCESS:
		return 0;
	case IBV_WC_WR_FLUSH_ERR:
		return FI_ECANCELED;
	case IBV_WC_LOC_LEN_ERR:
		return FI_ETRUNC;
	case IBV_WC_REM_ACCESS_ERR:
	case IBV_WC_LOC_PROT_ERR:
	case IBV_WC_MW_BIND_ERR:
		return FI_EACCES;
	case IBV_WC_REM_INV_REQ_ERR:
	case IBV_WC_REM_OP_ERR:
		return FI_EREMOTEIO;
	case IBV_WC_RETRY_EXC_ERR:
	case IBV_WC_RNR_RETRY_EXC_ERR:
		return FI_ETIMEDOUT;
	case IBV_WC_REM_ABORT_ERR:
		return FI_ECONNABORTED;
	default:
		return FI_EIO;
	}
}

/* ---- domain ------------------------------------------------------------- */

__attribute__((weak)) int verbs_rdm_ep_open(struct verbs_domain *domain,
					    struct fi_info *info,
					    struct fid_ep **ep, void *context)
{
	return -FI_ENOSYS;
}

__attribute__((weak)) int verbs_rdm_sep_open(struct verbs_domain *domain,
					     struct fi_info *info,
					     struct fid_ep **sep, void *context)
{
	return -FI_ENOSYS;
}

static int verbs_endpoint(struct fid_domain *domain_fid, struct fi_info *info,
			  struct fid_ep **ep, void *context)
{
	struct verbs_domain *domain = verbs_domain_of(domain_fid);
	int ret;

	if (!info || !info->ep_attr)
		return -FI_EINVAL;
	ret = util_prov_check_ep(verbs_sites_prov(), info);
	if (ret)
		return ret;
	if ((info->caps & FI_ATOMIC) && !domain->dev.atomics &&
	    (info->ep_attr->type != FI_EP_RDM || verbs_rdm_device_atomics()))
		return -FI_EOPNOTSUPP;
	switch (info->ep_attr->type) {
	case FI_EP_MSG:
		return verbs_msg_ep_open(domain, info, ep, context);
	case FI_EP_RDM:
		return verbs_rdm_ep_open(domain, info, ep, context);
	default:
		return -FI_EINVAL;
	}
}

/* Scalable endpoints: RDM only (an MSG endpoint has one peer). */
static int verbs_scalable_ep(struct fid_domain *domain_fid,
			     struct fi_info *info, struct fid_ep **sep,
			     void *context)
{
	struct verbs_domain *domain = verbs_domain_of(domain_fid);
	int ret;

	if (!info || !info->ep_attr)
		return -FI_EINVAL;
	if (info->ep_attr->type != FI_EP_RDM)
		return -FI_EOPNOTSUPP;
	ret = util_prov_check_ep(verbs_sites_prov(), info);
	if (ret)
		return ret;
	if ((info->caps & FI_ATOMIC) && !domain->dev.atomics &&
	    verbs_rdm_device_atomics())
		return -FI_EOPNOTSUPP;
	return verbs_rdm_sep_open(domain, info, sep, context);
}

static int verbs_av_open(struct fid_domain *domain_fid,
			 struct fi_av_attr *attr, struct fid_av **av,
			 void *context)
{
	struct verbs_domain *domain = verbs_domain_of(domain_fid);

	return util_av_open(&domain->base.util, attr,
			    util_av_sockaddr_ops_of(domain->addr_format), av,
			    context);
}

int verbs_dev_atomic(const struct verbs_dev *d, enum fi_datatype dt,
		     enum fi_op op, uint64_t flags, struct fi_atomic_attr *attr)
{
	struct fi_atomic_attr a;
	int ret;

	ret = util_atomic_query(dt, op, sizeof(uint64_t), flags, &a);
	if (ret)
		return ret;
	/* A fetch-add whose result is dropped is a non-fetching sum. */
	if (!d->atomics || (dt != FI_UINT64 && dt != FI_INT64) ||
	    ((flags & FI_COMPARE_ATOMIC) ? op != FI_CSWAP : op != FI_SUM))
		return -FI_EOPNOTSUPP;
	*attr = a;
	return 0;
}

/*
 * fi_query_atomic answers for the domain's kind of endpoint: MSG (and
 * RDM with FI_VERBS_DEVICE_ATOMICS) the device's atomics, RDM every
 * atomic, which the target applies (verbs_rdm_rx.c), up to
 * VERBS_RDM_ATOMIC_MAX bytes of operands.
 */
static int verbs_query_atomic(struct fid_domain *domain_fid,
			      enum fi_datatype datatype, enum fi_op op,
			      struct fi_atomic_attr *attr, uint64_t flags)
{
	struct verbs_domain *domain = verbs_domain_of(domain_fid);

	if (!attr)
		return -FI_EINVAL;
	if (domain->ep_type == FI_EP_RDM && !verbs_rdm_device_atomics())
		return util_atomic_query(datatype, op, VERBS_RDM_ATOMIC_MAX,
					 flags, attr);
	return verbs_dev_atomic(&domain->dev, datatype, op, flags, attr);
}

static struct {
	pthread_mutex_t lock;
	pthread_cond_t done;
	unsigned int count; /* teardowns in progress, all domains */
} verbs_teardown = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER };

void verbs_domain_hold(struct verbs_domain *domain)
{
	pthread_mutex_lock(&verbs_teardown.lock);
	domain->teardowns++;
	verbs_teardown.count++;
	pthread_mutex_unlock(&verbs_teardown.lock);
}

static void domain_free(struct verbs_domain *domain)
{
	close(domain->epfd);
	util_mr_cache_fini(&domain->mr_cache);
	if (domain->fence_mr)
		ibv_dereg_mr(domain->fence_mr);
	ibv_dealloc_pd(domain->pd);
	free(domain);
}

/* The registration cache's owner calls: access is ibv_access_flags. */
static int cache_reg(void *owner, void *addr, size_t len, uint64_t access,
		     void **handle)
{
	struct verbs_domain *domain = owner;
	struct ibv_mr *mr = ibv_reg_mr(domain->pd, addr, len, (int)access);

	if (!mr)
		return weft_errno(errno);
	*handle = mr;
	return 0;
}

static void cache_dereg(void *owner, void *handle)
{
	(void)owner;
	ibv_dereg_mr(handle);
}

static const struct util_mr_cache_ops verbs_cache_ops = {
	.reg = cache_reg,
	.dereg = cache_dereg,
};

/* What the cache may keep pinned: at most a quarter of RLIMIT_MEMLOCK,
 * and 256 MiB. */
static size_t cache_max_bytes(void)
{
	struct rlimit rl;
	size_t max = (size_t)256 << 20;

	if (!getrlimit(RLIMIT_MEMLOCK, &rl) && rl.rlim_cur != RLIM_INFINITY &&
	    rl.rlim_cur / 4 < max)
		max = rl.rlim_cur / 4;
	return max;
}

void verbs_domain_release(struct verbs_domain *domain)
{
	bool last;

	pthread_mutex_lock(&verbs_teardown.lock);
	last = !--domain->teardowns && domain->closed;
	pthread_mutex_unlock(&verbs_teardown.lock);
	if (last)
		domain_free(domain);
	pthread_mutex_lock(&verbs_teardown.lock);
	if (!--verbs_teardown.count)
		pthread_cond_broadcast(&verbs_teardown.done);
	pthread_mutex_unlock(&verbs_teardown.lock);
}

void verbs_teardowns_wait(void)
{
	pthread_mutex_lock(&verbs_teardown.lock);
	while (verbs_teardown.count)
		pthread_cond_wait(&verbs_teardown.done, &verbs_teardown.lock);
	pthread_mutex_unlock(&verbs_teardown.lock);
}

static int verbs_domain_close(struct fid *fid)
{
	struct verbs_domain *domain =
		container_of(fid, struct verbs_domain, base.util.domain_fid.fid);
	bool busy;
	int ret;

	ret = util_domain_fini(&domain->base.util);
	if (ret)
		return ret;
	util_mr_map_fini(&domain->base.mr_map);
	weft_info_free_list(domain->info);
	domain->info = NULL;
	/* An endpoint's teardown still uses the PD: its end frees it. */
	pthread_mutex_lock(&verbs_teardown.lock);
	busy = domain->teardowns != 0;
	domain->closed = true;
	pthread_mutex_unlock(&verbs_teardown.lock);
	if (!busy)
		domain_free(domain);
	return 0;
}

static struct fi_ops verbs_domain_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = verbs_domain_close,
	.bind = util_domain_bind,
	.control = util_domain_control,
	.ops_open = weft_no_ops_open,
	.tostr = weft_no_tostr,
	.ops_set = weft_no_ops_set,
};

static struct fi_ops_domain verbs_domain_ops = {
	.size = sizeof(struct fi_ops_domain),
	.av_open = verbs_av_open,
	.cq_open = util_cq_open_op,
	.endpoint = verbs_endpoint,
	.scalable_ep = verbs_scalable_ep,
	.cntr_open = util_cntr_open_op,
	.poll_open = util_poll_open,
	.stx_ctx = util_rdm_stx_open,
	.srx_ctx = verbs_srx_context,
	.query_atomic = verbs_query_atomic,
	.query_collective = util_coll_query,
	.endpoint2 = util_domain_endpoint2,
};

/*
 * The context of the device named name.  rdma_cm ids live on librdmacm's
 * own contexts, and a QP for an id needs a PD and CQs of the same
 * context: the domain takes librdmacm's (which it never closes) rather
 * than opening the device again.  0 and *ctx, or -FI_ENODEV.
 */
static int device_open(const char *name, struct ibv_context **ctx)
{
	struct ibv_context **list;
	int n = 0, i, ret = -FI_ENODEV;

	list = rdma_get_devices(&n);
	if (!list)
		return -FI_ENODEV;
	for (i = 0; i < n; i++) {
		if (!strcmp(ibv_get_device_name(list[i]->device), name)) {
			*ctx = list[i];
			ret = 0;
			break;
		}
	}
	rdma_free_devices(list);
	return ret;
}

int verbs_domain_open(struct fid_fabric *fabric_fid,
			     struct fi_info *info,
			     struct fid_domain **domain_fid, void *context)
{
	struct util_fabric *fabric =
		container_of(fabric_fid, struct util_fabric, fabric_fid);
	struct verbs_domain *domain;
	int ret;

	if (!info || !info->domain_attr || !info->domain_attr->name)
		return -FI_EINVAL;
	ret = verbs_sites_get();
	if (ret)
		return ret;
	ret = util_prov_check_domain(verbs_sites_prov(), info);
	if (ret)
		return ret;
	domain = calloc(1, sizeof(*domain));
	if (!domain)
		return -FI_ENOMEM;
	domain->ep_type = info->ep_attr ? info->ep_attr->type : FI_EP_MSG;
	domain->addr_format = info->addr_format;
	domain->info = weft_info_dup(info);
	if (!domain->info) {
		ret = -FI_ENOMEM;
		goto err_free;
	}
	ret = device_open(info->domain_attr->name, &domain->ctx);
	if (ret)
		goto err_info;
	ret = verbs_dev_query(domain->ctx,
			      verbs_site_port(info->domain_attr->name,
					info->fabric_attr ?
						info->fabric_attr->name :
						NULL),
			      &domain->dev);
	if (ret)
		goto err_info;
	domain->pd = ibv_alloc_pd(domain->ctx);
	if (!domain->pd) {
		ret = weft_errno(errno);
		goto err_info;
	}
	if (domain->dev.iwarp) {
		domain->fence_mr = ibv_reg_mr(domain->pd, domain->fence_mem,
					      sizeof(domain->fence_mem),
					      IBV_ACCESS_LOCAL_WRITE |
						      IBV_ACCESS_REMOTE_READ);
		if (!domain->fence_mr) {
			ret = weft_errno(errno);
			goto err_pd;
		}
	}
	domain->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (domain->epfd < 0) {
		ret = weft_errno(errno);
		goto err_pd;
	}
	util_mr_cache_init(&domain->mr_cache, &verbs_cache_ops, domain,
			   verbs_params.mr_cache_entries, cache_max_bytes());
	ret = util_domain_init(&domain->base.util, fabric, info, context);
	if (ret)
		goto err_cache;
	/* Keys are the device's rkeys: the map records them as given (an
	 * FI_MR_BASIC domain's included: its bits, less FI_MR_PROV_KEY). */
	ret = util_mr_map_init(&domain->base.mr_map, &verbs_prov,
			       util_mr_mode_bits(domain->base.util.mr_mode) &
				       ~FI_MR_PROV_KEY,
			       1,
			       util_domain_progress_needs_lock(
				       &domain->base.util));
	if (ret)
		goto err_domain;
	domain->base.util.domain_fid.fid.ops = &verbs_domain_fi_ops;
	domain->base.util.domain_fid.ops = &verbs_domain_ops;
	domain->base.util.domain_fid.mr = &verbs_mr_ops;
	*domain_fid = &domain->base.util.domain_fid;
	return 0;
err_domain:
	util_domain_fini(&domain->base.util);
err_cache:
	util_mr_cache_fini(&domain->mr_cache);
	close(domain->epfd);
err_pd:
	if (domain->fence_mr)
		ibv_dereg_mr(domain->fence_mr);
	ibv_dealloc_pd(domain->pd);
err_info:
	weft_info_free_list(domain->info);
err_free:
	free(domain);
	return ret;
}
