/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Passive endpoints: what fi_cm(3) asks of every one (weft/util_pep.h).
 */
#include "weft/util_pep.h"

#include <stdlib.h>
#include <string.h>

#include "weft/core.h"
#include "weft/stubs.h"
#include "weft/util_ifaddr.h"

static struct util_pep *pep_of(struct fid *fid)
{
	return container_of(fid, struct util_pep, pep_fid.fid);
}

int util_name_out(const void *sa, size_t len, void *addr, size_t *addrlen)
{
	if (!addrlen)
		return -FI_EINVAL;
	if (!addr || *addrlen < len) {
		*addrlen = len;
		return -FI_ETOOSMALL;
	}
	memcpy(addr, sa, len);
	*addrlen = len;
	return 0;
}

static void pep_progress(struct util_progress *p)
{
	struct util_pep *pep = container_of(p, struct util_pep, cm_progress);

	pthread_mutex_lock(&pep->lock);
	pep->ops->progress(pep);
	pthread_mutex_unlock(&pep->lock);
}

int util_pep_close(struct fid *fid)
{
	struct util_pep *pep = pep_of(fid);

	if (pep->eq) {
		util_eq_unbind_cm(pep->eq, &pep->cm_progress, pep->fd);
		util_eq_put(pep->eq);
	}
	weft_info_free_list(pep->info);
	pthread_mutex_destroy(&pep->lock);
	pep->ops->close(pep);
	return 0;
}

static int pep_bind(struct fid *fid, struct fid *bfid, uint64_t flags)
{
	struct util_pep *pep = pep_of(fid);

	return util_eq_bind_cm(&pep->eq, bfid, &pep->cm_progress, pep_progress,
			       pep->fd, pep);
}

static struct fi_ops pep_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = util_pep_close,
	.bind = pep_bind,
	.control = weft_no_control,
	.ops_open = weft_no_ops_open,
	.tostr = weft_no_tostr,
	.ops_set = weft_no_ops_set,
};

static int pep_getname(fid_t fid, void *addr, size_t *addrlen)
{
	struct util_pep *pep = pep_of(fid);
	struct sockaddr_storage sa;
	int ret;

	if (!addrlen)
		return -FI_EINVAL;
	ret = pep->ops->local(pep, &sa);
	if (ret)
		return ret;
	if (sa.ss_family != AF_INET && sa.ss_family != AF_INET6)
		return -FI_EADDRNOTAVAIL;
	return util_name_out(&sa, util_sockaddr_len(&sa), addr, addrlen);
}

static int pep_setname(fid_t fid, void *addr, size_t addrlen)
{
	struct util_pep *pep = pep_of(fid);
	struct sockaddr_storage sa = { 0 };

	if (!addr || addrlen < sizeof(struct sockaddr_in) ||
	    addrlen > sizeof(sa))
		return -FI_EINVAL;
	if (pep->listening)
		return -FI_EOPBADSTATE;
	memcpy(&sa, addr, addrlen);
	if (sa.ss_family != AF_INET && sa.ss_family != AF_INET6)
		return -FI_EINVAL;
	return pep->ops->bind(pep, &sa, addrlen);
}

static int pep_listen(struct fid_pep *pep_fid)
{
	struct util_pep *pep = container_of(pep_fid, struct util_pep, pep_fid);
	int ret;

	if (!pep->eq)
		return -FI_ENOEQ;
	if (pep->listening)
		return 0;
	ret = pep->ops->listen(pep);
	if (!ret)
		pep->listening = true;
	return ret;
}

static int pep_reject(struct fid_pep *pep_fid, fid_t handle, const void *param,
		      size_t paramlen)
{
	struct util_pep *pep = container_of(pep_fid, struct util_pep, pep_fid);

	if (!handle || handle->fclass != FI_CLASS_CONNREQ ||
	    paramlen > pep->ops->cm_data_max || (paramlen && !param))
		return -FI_EINVAL;
	return pep->ops->reject(pep, handle, param, paramlen);
}

static struct fi_ops_cm pep_cm_ops = {
	.size = sizeof(struct fi_ops_cm),
	.setname = pep_setname,
	.getname = pep_getname,
	.getpeer = weft_no_getpeer,
	.connect = weft_no_connect,
	.listen = pep_listen,
	.accept = weft_no_accept,
	.reject = pep_reject,
	.shutdown = weft_no_shutdown,
	.join = weft_no_join,
};

static int pep_getopt(fid_t fid, int level, int optname, void *optval,
		      size_t *optlen)
{
	return util_cm_getopt(level, optname, optval, optlen,
			      pep_of(fid)->ops->cm_data_max);
}

static int pep_setopt(fid_t fid, int level, int optname, const void *optval,
		      size_t optlen)
{
	return -FI_ENOPROTOOPT;
}

static struct fi_ops_ep pep_ep_ops = {
	.size = sizeof(struct fi_ops_ep),
	.cancel = weft_no_cancel,
	.getopt = pep_getopt,
	.setopt = pep_setopt,
	.tx_ctx = weft_no_tx_ctx,
	.rx_ctx = weft_no_rx_ctx,
	.rx_size_left = weft_no_size_left,
	.tx_size_left = weft_no_size_left,
};

int util_pep_init(struct util_pep *pep, const struct fi_info *info,
		  const struct util_pep_ops *ops, void *context)
{
	if (!info || !info->ep_attr || info->ep_attr->type != FI_EP_MSG)
		return -FI_EINVAL;
	pep->info = weft_info_dup(info);
	if (!pep->info)
		return -FI_ENOMEM;
	pep->ops = ops;
	pep->fd = -1;
	pthread_mutex_init(&pep->lock, NULL);
	pep->pep_fid.fid.fclass = FI_CLASS_PEP;
	pep->pep_fid.fid.context = context;
	pep->pep_fid.fid.ops = &pep_fi_ops;
	pep->pep_fid.cm = &pep_cm_ops;
	pep->pep_fid.ops = &pep_ep_ops;
	return 0;
}

int util_pep_start(struct util_pep *pep, int fd, struct fid_pep **pep_fid)
{
	struct sockaddr_in any = { .sin_family = AF_INET };
	const struct fi_info *info = pep->info;
	int ret;

	pep->fd = fd;
	if (info->src_addr && info->src_addrlen >= sizeof(struct sockaddr_in))
		ret = pep_setname(&pep->pep_fid.fid, info->src_addr,
				  info->src_addrlen);
	else
		ret = pep_setname(&pep->pep_fid.fid, &any, sizeof(any));
	if (ret) {
		util_pep_close(&pep->pep_fid.fid);
		return ret;
	}
	*pep_fid = &pep->pep_fid;
	return 0;
}

/* A copy of len bytes of sa for an fi_info's address, or NULL. */
static void *addr_dup(const struct sockaddr *sa, size_t *len)
{
	void *p;

	*len = 0;
	if (!sa || (sa->sa_family != AF_INET && sa->sa_family != AF_INET6))
		return NULL;
	p = malloc(util_sockaddr_len(sa));
	if (p) {
		*len = util_sockaddr_len(sa);
		memcpy(p, sa, *len);
	}
	return p;
}

int util_pep_connreq(struct util_pep *pep, struct fid *handle,
		     const struct sockaddr *peer, const struct sockaddr *local,
		     const void *cm, size_t cm_len)
{
	struct fi_info *info;

	if (!pep->eq)
		return -FI_ENOEQ;
	info = weft_info_dup(pep->info);
	if (!info)
		return -FI_ENOMEM;
	info->handle = handle;
	free(info->dest_addr);
	info->dest_addr = addr_dup(peer, &info->dest_addrlen);
	if (local) {
		free(info->src_addr);
		info->src_addr = addr_dup(local, &info->src_addrlen);
	}
	if (util_eq_write_cm(pep->eq, FI_CONNREQ, &pep->pep_fid.fid, info, cm,
			     cm_len) < 0) {
		weft_info_free_list(info);
		return -FI_ENOMEM;
	}
	return 0;
}
