/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The entry points of every symbol version node: fi_getinfo, fi_freeinfo
 * and fi_dupinfo at FABRIC_1.0 to 1.9, fi_fabric at 1.0, fi_fabric2.
 *
 * FABRIC_1.0 to 1.2 had smaller attribute structs.  Their entry points
 * convert the caller's fi_info layout (include/weft/compat.h) to the current
 * one, call the core, and convert the answer back, so an old program only
 * ever sees structs of the sizes its headers declared.  Two moves do all
 * the work:
 *  unpack  an old fi_info into a current one on the stack, borrowing every
 *          pointer (strings, addresses, keys, the NIC); weft_info_dup() then
 *          makes the deep copy.
 *  pack    a current fi_info into a newly allocated old one, deep.
 * fi_dupinfo at an old node is unpack then pack, so it needs no code of its
 * own; fi_dupinfo(NULL) packs an empty fi_info whose attributes are present.
 *
 * FABRIC_1.3 to 1.9 differ only in how long domain_attr is.  weft's fi_info
 * lists have the longest, so they go out to all of them as they are; what
 * comes in (hints, fi_dupinfo's source) is read up to the caller's length.
 */
#include "weft/compat.h"

#include <stdlib.h>
#include <string.h>

/* ---- copies ------------------------------------------------------------- */

/* Allocate *dst as a copy of *src when src is set (a struct assignment). */
#define COPY_ATTR(dst, src, failed)                                            \
	do {                                                                   \
		(dst) = NULL;                                                  \
		if (src) {                                                     \
			(dst) = calloc(1, sizeof(*(dst)));                     \
			if (dst)                                               \
				*(dst) = *(src);                               \
			else                                                   \
				*(failed) = true;                              \
		}                                                              \
	} while (0)

/*
 * The NIC layout has not changed since it appeared (FABRIC_1.2), so its deep
 * copy is the core's: hand it to weft_info_dup() in an otherwise empty
 * fi_info and keep only the NIC.
 */
static struct fid_nic *nic_dup(struct fid_nic *src, bool *failed)
{
	struct fi_info holder = { .nic = src };
	struct fi_info *copy;
	struct fid_nic *nic;

	if (!src)
		return NULL;
	copy = weft_info_dup(&holder);
	if (!copy) {
		*failed = true;
		return NULL;
	}
	nic = copy->nic;
	copy->nic = NULL;
	weft_info_free(copy);
	return nic;
}

/* As fi_freeinfo does: the NIC is a fid and its close releases it. */
static void nic_free(struct fid_nic *nic)
{
	if (nic && nic->fid.ops && nic->fid.ops->close)
		nic->fid.ops->close(&nic->fid);
}

/* The fields every fi_info layout shares, none of them owned memory. */
#define COPY_INFO_SCALARS(dst, src)                                            \
	do {                                                                   \
		(dst)->caps = (src)->caps;                                     \
		(dst)->mode = (src)->mode;                                     \
		(dst)->addr_format = (src)->addr_format;                       \
		(dst)->src_addrlen = (src)->src_addrlen;                       \
		(dst)->dest_addrlen = (src)->dest_addrlen;                     \
		(dst)->handle = (src)->handle;                                 \
	} while (0)

/* ---- attribute structs, field by field --------------------------------- */

static void tx_1_0_unpack(struct fi_tx_attr *dst,
			  const struct weft_tx_attr_1_0 *src)
{
	*dst = (struct fi_tx_attr){
		.caps = src->caps,
		.mode = src->mode,
		.op_flags = src->op_flags,
		.msg_order = src->msg_order,
		.comp_order = src->comp_order,
		.inject_size = src->inject_size,
		.size = src->size,
		.iov_limit = src->iov_limit,
		.rma_iov_limit = src->rma_iov_limit,
	};
}

static struct weft_tx_attr_1_0 *tx_1_0_pack(const struct fi_tx_attr *src,
					    bool *failed)
{
	struct weft_tx_attr_1_0 *dst;

	if (!src)
		return NULL;
	dst = calloc(1, sizeof(*dst));
	if (!dst) {
		*failed = true;
		return NULL;
	}
	*dst = (struct weft_tx_attr_1_0){
		.caps = src->caps,
		.mode = src->mode,
		.op_flags = src->op_flags,
		.msg_order = src->msg_order,
		.comp_order = src->comp_order,
		.inject_size = src->inject_size,
		.size = src->size,
		.iov_limit = src->iov_limit,
		.rma_iov_limit = src->rma_iov_limit,
	};
	return dst;
}

static void ep_1_0_unpack(struct fi_ep_attr *dst,
			  const struct weft_ep_attr_1_0 *src)
{
	*dst = (struct fi_ep_attr){
		.type = src->type,
		.protocol = src->protocol,
		.protocol_version = src->protocol_version,
		.max_msg_size = src->max_msg_size,
		.msg_prefix_size = src->msg_prefix_size,
		.max_order_raw_size = src->max_order_raw_size,
		.max_order_war_size = src->max_order_war_size,
		.max_order_waw_size = src->max_order_waw_size,
		.mem_tag_format = src->mem_tag_format,
		.tx_ctx_cnt = src->tx_ctx_cnt,
		.rx_ctx_cnt = src->rx_ctx_cnt,
	};
}

static struct weft_ep_attr_1_0 *ep_1_0_pack(const struct fi_ep_attr *src,
					    bool *failed)
{
	struct weft_ep_attr_1_0 *dst;

	if (!src)
		return NULL;
	dst = calloc(1, sizeof(*dst));
	if (!dst) {
		*failed = true;
		return NULL;
	}
	*dst = (struct weft_ep_attr_1_0){
		.type = src->type,
		.protocol = src->protocol,
		.protocol_version = src->protocol_version,
		.max_msg_size = src->max_msg_size,
		.msg_prefix_size = src->msg_prefix_size,
		.max_order_raw_size = src->max_order_raw_size,
		.max_order_war_size = src->max_order_war_size,
		.max_order_waw_size = src->max_order_waw_size,
		.mem_tag_format = src->mem_tag_format,
		.tx_ctx_cnt = src->tx_ctx_cnt,
		.rx_ctx_cnt = src->rx_ctx_cnt,
	};
	return dst;
}

/* FABRIC_1.1 and 1.2 use the current ep_attr: copy it with its key. */
static struct fi_ep_attr *ep_pack(const struct fi_ep_attr *src, bool *failed)
{
	struct fi_ep_attr *dst;

	COPY_ATTR(dst, src, failed);
	if (dst)
		dst->auth_key = weft_dup_mem(src->auth_key, src->auth_key_size,
					failed);
	return dst;
}

static void ep_free(struct fi_ep_attr *ep)
{
	if (ep)
		free(ep->auth_key);
	free(ep);
}

static void domain_1_0_unpack(struct fi_domain_attr *dst,
			      const struct weft_domain_attr_1_0 *src)
{
	*dst = (struct fi_domain_attr){
		.domain = src->domain,
		.name = src->name,
		.threading = src->threading,
		.control_progress = src->control_progress,
		.data_progress = src->data_progress,
		.resource_mgmt = src->resource_mgmt,
		.av_type = src->av_type,
		.mr_mode = src->mr_mode,
		.mr_key_size = src->mr_key_size,
		.cq_data_size = src->cq_data_size,
		.cq_cnt = src->cq_cnt,
		.ep_cnt = src->ep_cnt,
		.tx_ctx_cnt = src->tx_ctx_cnt,
		.rx_ctx_cnt = src->rx_ctx_cnt,
		.max_ep_tx_ctx = src->max_ep_tx_ctx,
		.max_ep_rx_ctx = src->max_ep_rx_ctx,
		.max_ep_stx_ctx = src->max_ep_stx_ctx,
		.max_ep_srx_ctx = src->max_ep_srx_ctx,
	};
}

static struct weft_domain_attr_1_0 *
domain_1_0_pack(const struct fi_domain_attr *src, bool *failed)
{
	struct weft_domain_attr_1_0 *dst;

	if (!src)
		return NULL;
	dst = calloc(1, sizeof(*dst));
	if (!dst) {
		*failed = true;
		return NULL;
	}
	*dst = (struct weft_domain_attr_1_0){
		.domain = src->domain,
		.name = weft_dup_str(src->name, failed),
		.threading = src->threading,
		.control_progress = src->control_progress,
		.data_progress = src->data_progress,
		.resource_mgmt = src->resource_mgmt,
		.av_type = src->av_type,
		.mr_mode = src->mr_mode,
		.mr_key_size = src->mr_key_size,
		.cq_data_size = src->cq_data_size,
		.cq_cnt = src->cq_cnt,
		.ep_cnt = src->ep_cnt,
		.tx_ctx_cnt = src->tx_ctx_cnt,
		.rx_ctx_cnt = src->rx_ctx_cnt,
		.max_ep_tx_ctx = src->max_ep_tx_ctx,
		.max_ep_rx_ctx = src->max_ep_rx_ctx,
		.max_ep_stx_ctx = src->max_ep_stx_ctx,
		.max_ep_srx_ctx = src->max_ep_srx_ctx,
	};
	return dst;
}

static void domain_1_0_free(struct weft_domain_attr_1_0 *domain)
{
	if (domain)
		free(domain->name);
	free(domain);
}

static void domain_1_1_unpack(struct fi_domain_attr *dst,
			      const struct weft_domain_attr_1_1 *src)
{
	*dst = (struct fi_domain_attr){
		.domain = src->domain,
		.name = src->name,
		.threading = src->threading,
		.control_progress = src->control_progress,
		.data_progress = src->data_progress,
		.resource_mgmt = src->resource_mgmt,
		.av_type = src->av_type,
		.mr_mode = src->mr_mode,
		.mr_key_size = src->mr_key_size,
		.cq_data_size = src->cq_data_size,
		.cq_cnt = src->cq_cnt,
		.ep_cnt = src->ep_cnt,
		.tx_ctx_cnt = src->tx_ctx_cnt,
		.rx_ctx_cnt = src->rx_ctx_cnt,
		.max_ep_tx_ctx = src->max_ep_tx_ctx,
		.max_ep_rx_ctx = src->max_ep_rx_ctx,
		.max_ep_stx_ctx = src->max_ep_stx_ctx,
		.max_ep_srx_ctx = src->max_ep_srx_ctx,
		.cntr_cnt = src->cntr_cnt,
		.mr_iov_limit = src->mr_iov_limit,
		.caps = src->caps,
		.mode = src->mode,
		.auth_key = src->auth_key,
		.auth_key_size = src->auth_key_size,
		.max_err_data = src->max_err_data,
		.mr_cnt = src->mr_cnt,
	};
}

static struct weft_domain_attr_1_1 *
domain_1_1_pack(const struct fi_domain_attr *src, bool *failed)
{
	struct weft_domain_attr_1_1 *dst;

	if (!src)
		return NULL;
	dst = calloc(1, sizeof(*dst));
	if (!dst) {
		*failed = true;
		return NULL;
	}
	*dst = (struct weft_domain_attr_1_1){
		.domain = src->domain,
		.name = weft_dup_str(src->name, failed),
		.threading = src->threading,
		.control_progress = src->control_progress,
		.data_progress = src->data_progress,
		.resource_mgmt = src->resource_mgmt,
		.av_type = src->av_type,
		.mr_mode = src->mr_mode,
		.mr_key_size = src->mr_key_size,
		.cq_data_size = src->cq_data_size,
		.cq_cnt = src->cq_cnt,
		.ep_cnt = src->ep_cnt,
		.tx_ctx_cnt = src->tx_ctx_cnt,
		.rx_ctx_cnt = src->rx_ctx_cnt,
		.max_ep_tx_ctx = src->max_ep_tx_ctx,
		.max_ep_rx_ctx = src->max_ep_rx_ctx,
		.max_ep_stx_ctx = src->max_ep_stx_ctx,
		.max_ep_srx_ctx = src->max_ep_srx_ctx,
		.cntr_cnt = src->cntr_cnt,
		.mr_iov_limit = src->mr_iov_limit,
		.caps = src->caps,
		.mode = src->mode,
		.auth_key = weft_dup_mem(src->auth_key, src->auth_key_size, failed),
		.auth_key_size = src->auth_key_size,
		.max_err_data = src->max_err_data,
		.mr_cnt = src->mr_cnt,
	};
	return dst;
}

static void domain_1_1_free(struct weft_domain_attr_1_1 *domain)
{
	if (domain) {
		free(domain->name);
		free(domain->auth_key);
	}
	free(domain);
}

static void fabric_1_0_unpack(struct fi_fabric_attr *dst,
			      const struct weft_fabric_attr_1_0 *src)
{
	*dst = (struct fi_fabric_attr){
		.fabric = src->fabric,
		.name = src->name,
		.prov_name = src->prov_name,
		.prov_version = src->prov_version,
	};
}

static struct weft_fabric_attr_1_0 *
fabric_1_0_pack(const struct fi_fabric_attr *src, bool *failed)
{
	struct weft_fabric_attr_1_0 *dst;

	if (!src)
		return NULL;
	dst = calloc(1, sizeof(*dst));
	if (!dst) {
		*failed = true;
		return NULL;
	}
	*dst = (struct weft_fabric_attr_1_0){
		.fabric = src->fabric,
		.name = weft_dup_str(src->name, failed),
		.prov_name = weft_dup_str(src->prov_name, failed),
		.prov_version = src->prov_version,
	};
	return dst;
}

static void fabric_1_0_free(struct weft_fabric_attr_1_0 *fabric)
{
	if (fabric) {
		free(fabric->name);
		free(fabric->prov_name);
	}
	free(fabric);
}

/* FABRIC_1.1 and 1.2 use the current fabric_attr. */
static struct fi_fabric_attr *fabric_pack(const struct fi_fabric_attr *src,
					  bool *failed)
{
	struct fi_fabric_attr *dst;

	COPY_ATTR(dst, src, failed);
	if (dst) {
		dst->name = weft_dup_str(src->name, failed);
		dst->prov_name = weft_dup_str(src->prov_name, failed);
	}
	return dst;
}

static void fabric_free(struct fi_fabric_attr *fabric)
{
	if (fabric) {
		free(fabric->name);
		free(fabric->prov_name);
	}
	free(fabric);
}

/* ---- whole fi_info ------------------------------------------------------ */


static void unpack_1_0(struct weft_info_copy *u, const struct weft_info_1_0 *old)
{
	COPY_INFO_SCALARS(&u->info, old);
	u->info.src_addr = old->src_addr;
	u->info.dest_addr = old->dest_addr;
	if (old->tx_attr) {
		tx_1_0_unpack(&u->tx, old->tx_attr);
		u->info.tx_attr = &u->tx;
	}
	if (old->rx_attr) {
		u->rx = *old->rx_attr;
		u->info.rx_attr = &u->rx;
	}
	if (old->ep_attr) {
		ep_1_0_unpack(&u->ep, old->ep_attr);
		u->info.ep_attr = &u->ep;
	}
	if (old->domain_attr) {
		domain_1_0_unpack(&u->domain, old->domain_attr);
		u->info.domain_attr = &u->domain;
	}
	if (old->fabric_attr) {
		fabric_1_0_unpack(&u->fabric, old->fabric_attr);
		u->info.fabric_attr = &u->fabric;
	}
}

static void unpack_1_1(struct weft_info_copy *u, const struct weft_info_1_1 *old)
{
	COPY_INFO_SCALARS(&u->info, old);
	u->info.src_addr = old->src_addr;
	u->info.dest_addr = old->dest_addr;
	if (old->tx_attr) {
		tx_1_0_unpack(&u->tx, old->tx_attr);
		u->info.tx_attr = &u->tx;
	}
	if (old->rx_attr) {
		u->rx = *old->rx_attr;
		u->info.rx_attr = &u->rx;
	}
	if (old->ep_attr) {
		u->ep = *old->ep_attr;
		u->info.ep_attr = &u->ep;
	}
	if (old->domain_attr) {
		domain_1_1_unpack(&u->domain, old->domain_attr);
		u->info.domain_attr = &u->domain;
	}
	if (old->fabric_attr) {
		u->fabric = *old->fabric_attr;
		u->info.fabric_attr = &u->fabric;
	}
}

static void unpack_1_2(struct weft_info_copy *u, const struct weft_info_1_2 *old)
{
	COPY_INFO_SCALARS(&u->info, old);
	u->info.src_addr = old->src_addr;
	u->info.dest_addr = old->dest_addr;
	if (old->tx_attr) {
		tx_1_0_unpack(&u->tx, old->tx_attr);
		u->info.tx_attr = &u->tx;
	}
	if (old->rx_attr) {
		u->rx = *old->rx_attr;
		u->info.rx_attr = &u->rx;
	}
	if (old->ep_attr) {
		u->ep = *old->ep_attr;
		u->info.ep_attr = &u->ep;
	}
	if (old->domain_attr) {
		domain_1_1_unpack(&u->domain, old->domain_attr);
		u->info.domain_attr = &u->domain;
	}
	if (old->fabric_attr) {
		u->fabric = *old->fabric_attr;
		u->info.fabric_attr = &u->fabric;
	}
	u->info.nic = old->nic;
}

/* Fill u from old, borrowing its pointers; u->info.next is NULL. */
static void unpack(enum weft_abi abi, struct weft_info_copy *u, const void *old)
{
	memset(u, 0, sizeof(*u));
	switch (abi) {
	case WEFT_ABI_1_0:
		unpack_1_0(u, old);
		break;
	case WEFT_ABI_1_1:
		unpack_1_1(u, old);
		break;
	case WEFT_ABI_1_2:
		unpack_1_2(u, old);
		break;
	}
}

/* An empty fi_info with every attribute struct present, all zero. */
static void unpack_empty(struct weft_info_copy *u)
{
	memset(u, 0, sizeof(*u));
	u->info.tx_attr = &u->tx;
	u->info.rx_attr = &u->rx;
	u->info.ep_attr = &u->ep;
	u->info.domain_attr = &u->domain;
	u->info.fabric_attr = &u->fabric;
}

static void free_1_0(struct weft_info_1_0 *info)
{
	free(info->src_addr);
	free(info->dest_addr);
	free(info->tx_attr);
	free(info->rx_attr);
	free(info->ep_attr);
	domain_1_0_free(info->domain_attr);
	fabric_1_0_free(info->fabric_attr);
	free(info);
}

static void free_1_1(struct weft_info_1_1 *info)
{
	free(info->src_addr);
	free(info->dest_addr);
	free(info->tx_attr);
	free(info->rx_attr);
	ep_free(info->ep_attr);
	domain_1_1_free(info->domain_attr);
	fabric_free(info->fabric_attr);
	free(info);
}

static void free_1_2(struct weft_info_1_2 *info)
{
	nic_free(info->nic);
	free(info->src_addr);
	free(info->dest_addr);
	free(info->tx_attr);
	free(info->rx_attr);
	ep_free(info->ep_attr);
	domain_1_1_free(info->domain_attr);
	fabric_free(info->fabric_attr);
	free(info);
}

static struct weft_info_1_0 *pack_1_0(const struct fi_info *src)
{
	struct weft_info_1_0 *dst = calloc(1, sizeof(*dst));
	bool failed = false;

	if (!dst)
		return NULL;
	COPY_INFO_SCALARS(dst, src);
	dst->src_addr = weft_dup_mem(src->src_addr, src->src_addrlen, &failed);
	dst->dest_addr = weft_dup_mem(src->dest_addr, src->dest_addrlen, &failed);
	dst->tx_attr = tx_1_0_pack(src->tx_attr, &failed);
	COPY_ATTR(dst->rx_attr, src->rx_attr, &failed);
	dst->ep_attr = ep_1_0_pack(src->ep_attr, &failed);
	dst->domain_attr = domain_1_0_pack(src->domain_attr, &failed);
	dst->fabric_attr = fabric_1_0_pack(src->fabric_attr, &failed);
	if (failed) {
		free_1_0(dst);
		return NULL;
	}
	return dst;
}

static struct weft_info_1_1 *pack_1_1(const struct fi_info *src)
{
	struct weft_info_1_1 *dst = calloc(1, sizeof(*dst));
	bool failed = false;

	if (!dst)
		return NULL;
	COPY_INFO_SCALARS(dst, src);
	dst->src_addr = weft_dup_mem(src->src_addr, src->src_addrlen, &failed);
	dst->dest_addr = weft_dup_mem(src->dest_addr, src->dest_addrlen, &failed);
	dst->tx_attr = tx_1_0_pack(src->tx_attr, &failed);
	COPY_ATTR(dst->rx_attr, src->rx_attr, &failed);
	dst->ep_attr = ep_pack(src->ep_attr, &failed);
	dst->domain_attr = domain_1_1_pack(src->domain_attr, &failed);
	dst->fabric_attr = fabric_pack(src->fabric_attr, &failed);
	if (failed) {
		free_1_1(dst);
		return NULL;
	}
	return dst;
}

static struct weft_info_1_2 *pack_1_2(const struct fi_info *src)
{
	struct weft_info_1_2 *dst = calloc(1, sizeof(*dst));
	bool failed = false;

	if (!dst)
		return NULL;
	COPY_INFO_SCALARS(dst, src);
	dst->src_addr = weft_dup_mem(src->src_addr, src->src_addrlen, &failed);
	dst->dest_addr = weft_dup_mem(src->dest_addr, src->dest_addrlen, &failed);
	dst->tx_attr = tx_1_0_pack(src->tx_attr, &failed);
	COPY_ATTR(dst->rx_attr, src->rx_attr, &failed);
	dst->ep_attr = ep_pack(src->ep_attr, &failed);
	dst->domain_attr = domain_1_1_pack(src->domain_attr, &failed);
	dst->fabric_attr = fabric_pack(src->fabric_attr, &failed);
	dst->nic = nic_dup(src->nic, &failed);
	if (failed) {
		free_1_2(dst);
		return NULL;
	}
	return dst;
}

void *weft_compat_info_from_new(enum weft_abi abi, const struct fi_info *info)
{
	if (!info)
		return NULL;
	switch (abi) {
	case WEFT_ABI_1_0:
		return pack_1_0(info);
	case WEFT_ABI_1_1:
		return pack_1_1(info);
	case WEFT_ABI_1_2:
		return pack_1_2(info);
	}
	return NULL;
}

struct fi_info *weft_compat_info_to_new(enum weft_abi abi, const void *old)
{
	struct weft_info_copy u;

	if (!old)
		return NULL;
	unpack(abi, &u, old);
	return weft_info_dup(&u.info);
}

/* Link `node` after `prev` in an old-layout list. */
static void old_set_next(enum weft_abi abi, void *prev, void *node)
{
	switch (abi) {
	case WEFT_ABI_1_0:
		((struct weft_info_1_0 *)prev)->next = node;
		break;
	case WEFT_ABI_1_1:
		((struct weft_info_1_1 *)prev)->next = node;
		break;
	case WEFT_ABI_1_2:
		((struct weft_info_1_2 *)prev)->next = node;
		break;
	}
}

void weft_compat_info_free(enum weft_abi abi, void *old)
{
	while (old) {
		void *next = NULL;

		switch (abi) {
		case WEFT_ABI_1_0:
			next = ((struct weft_info_1_0 *)old)->next;
			free_1_0(old);
			break;
		case WEFT_ABI_1_1:
			next = ((struct weft_info_1_1 *)old)->next;
			free_1_1(old);
			break;
		case WEFT_ABI_1_2:
			next = ((struct weft_info_1_2 *)old)->next;
			free_1_2(old);
			break;
		}
		old = next;
	}
}

static void *compat_dupinfo(enum weft_abi abi, const void *old)
{
	struct weft_info_copy u;

	if (old)
		unpack(abi, &u, old);
	else
		unpack_empty(&u);
	return weft_compat_info_from_new(abi, &u.info);
}

/*
 * fi_getinfo at an old node: only the first entry of the hints counts, as
 * in the current version.  *info is set only on success.
 */
static int compat_getinfo(enum weft_abi abi, uint32_t version,
			  const char *node, const char *service,
			  uint64_t flags, const void *old_hints, void **info)
{
	struct fi_info *hints = NULL, *list, *cur;
	void *head = NULL, *tail = NULL;
	int ret;

	if (old_hints) {
		hints = weft_compat_info_to_new(abi, old_hints);
		if (!hints)
			return -FI_ENOMEM;
	}
	ret = weft_getinfo(version, node, service, flags, hints, &list);
	if (ret)
		goto err_free_hints;

	for (cur = list; cur; cur = cur->next) {
		void *old = weft_compat_info_from_new(abi, cur);

		if (!old) {
			ret = -FI_ENOMEM;
			goto err_free_old;
		}
		if (tail)
			old_set_next(abi, tail, old);
		else
			head = old;
		tail = old;
	}
	weft_info_free_list(list);
	weft_info_free(hints);
	*info = head;
	return 0;

err_free_old:
	weft_compat_info_free(abi, head);
	weft_info_free_list(list);
err_free_hints:
	weft_info_free(hints);
	return ret;
}

/* ---- the exported entry points ------------------------------------------ */

/*
 * WEFT_COMPAT_SYMVER puts e.g. "fi_getinfo@FABRIC_1.0" into the object
 * file.  libfabric.so.1 gets the node from libfabric.map and exports the
 * symbol under it; the weft_compat_* names themselves fall under the map's
 * "local: *".  The same object also goes into libweft.la, which the unit
 * tests link statically.  There no version script applies, and ld turns a
 * non-default ("@", not "@@") versioned name into a local symbol of the
 * executable: it clashes with neither the default fi_getinfo nor anything
 * else, and needs no node.  The tests call the weft_compat_* names directly.
 * So the binding needs no guard for static builds.
 */

WEFT_EXPORT int weft_compat_getinfo_1_0(uint32_t version, const char *node,
					const char *service, uint64_t flags,
					const struct weft_info_1_0 *hints,
					struct weft_info_1_0 **info)
{
	void *list;
	int ret;

	if (!info)
		return -FI_EINVAL;
	ret = compat_getinfo(WEFT_ABI_1_0, version, node, service, flags,
			     hints, &list);
	if (!ret)
		*info = list;
	return ret;
}
WEFT_COMPAT_SYMVER(weft_compat_getinfo_1_0, fi_getinfo, FABRIC_1.0);

WEFT_EXPORT void weft_compat_freeinfo_1_0(struct weft_info_1_0 *info)
{
	weft_compat_info_free(WEFT_ABI_1_0, info);
}
WEFT_COMPAT_SYMVER(weft_compat_freeinfo_1_0, fi_freeinfo, FABRIC_1.0);

WEFT_EXPORT struct weft_info_1_0 *
weft_compat_dupinfo_1_0(const struct weft_info_1_0 *info)
{
	return compat_dupinfo(WEFT_ABI_1_0, info);
}
WEFT_COMPAT_SYMVER(weft_compat_dupinfo_1_0, fi_dupinfo, FABRIC_1.0);

/*
 * A 1.0 caller's fabric_attr has no api_version; it was built against API
 * 1.0 to 1.4 and the provider cannot tell which, so it is told 1.0, the
 * version whose semantics (FI_MR_BASIC / FI_MR_SCALABLE) all of them share.
 */
WEFT_EXPORT int weft_compat_fabric_1_0(struct weft_fabric_attr_1_0 *attr,
				       struct fid_fabric **fabric,
				       void *context)
{
	struct fi_fabric_attr cur;

	if (!attr)
		return -FI_EINVAL;
	fabric_1_0_unpack(&cur, attr);
	cur.api_version = FI_VERSION(1, 0);
	return weft_fabric(&cur, fabric, context);
}
WEFT_COMPAT_SYMVER(weft_compat_fabric_1_0, fi_fabric, FABRIC_1.0);

WEFT_EXPORT int weft_compat_getinfo_1_1(uint32_t version, const char *node,
					const char *service, uint64_t flags,
					const struct weft_info_1_1 *hints,
					struct weft_info_1_1 **info)
{
	void *list;
	int ret;

	if (!info)
		return -FI_EINVAL;
	ret = compat_getinfo(WEFT_ABI_1_1, version, node, service, flags,
			     hints, &list);
	if (!ret)
		*info = list;
	return ret;
}
WEFT_COMPAT_SYMVER(weft_compat_getinfo_1_1, fi_getinfo, FABRIC_1.1);

WEFT_EXPORT void weft_compat_freeinfo_1_1(struct weft_info_1_1 *info)
{
	weft_compat_info_free(WEFT_ABI_1_1, info);
}
WEFT_COMPAT_SYMVER(weft_compat_freeinfo_1_1, fi_freeinfo, FABRIC_1.1);

WEFT_EXPORT struct weft_info_1_1 *
weft_compat_dupinfo_1_1(const struct weft_info_1_1 *info)
{
	return compat_dupinfo(WEFT_ABI_1_1, info);
}
WEFT_COMPAT_SYMVER(weft_compat_dupinfo_1_1, fi_dupinfo, FABRIC_1.1);

WEFT_EXPORT int weft_compat_getinfo_1_2(uint32_t version, const char *node,
					const char *service, uint64_t flags,
					const struct weft_info_1_2 *hints,
					struct weft_info_1_2 **info)
{
	void *list;
	int ret;

	if (!info)
		return -FI_EINVAL;
	ret = compat_getinfo(WEFT_ABI_1_2, version, node, service, flags,
			     hints, &list);
	if (!ret)
		*info = list;
	return ret;
}
WEFT_COMPAT_SYMVER(weft_compat_getinfo_1_2, fi_getinfo, FABRIC_1.2);

WEFT_EXPORT void weft_compat_freeinfo_1_2(struct weft_info_1_2 *info)
{
	weft_compat_info_free(WEFT_ABI_1_2, info);
}
WEFT_COMPAT_SYMVER(weft_compat_freeinfo_1_2, fi_freeinfo, FABRIC_1.2);

WEFT_EXPORT struct weft_info_1_2 *
weft_compat_dupinfo_1_2(const struct weft_info_1_2 *info)
{
	return compat_dupinfo(WEFT_ABI_1_2, info);
}
WEFT_COMPAT_SYMVER(weft_compat_dupinfo_1_2, fi_dupinfo, FABRIC_1.2);

/* ---- FABRIC_1.3 to 1.9: one fi_info layout, domain_attr grows -------------- */

/*
 * The hints' domain_attr past tclass, read up to dom_len: weft has no
 * authorization keys and no groups, and its counters take any 64-bit value.
 */
static int hints_tail_check(const struct fi_info *hints, size_t dom_len)
{
	const struct weft_domain_attr_tail *tail;

	if (!hints || !hints->domain_attr || dom_len <= WEFT_DOMAIN_ATTR_SIZE_1_3)
		return 0;
	tail = (const struct weft_domain_attr_tail *)((const char *)
							      hints->domain_attr +
						      WEFT_DOMAIN_ATTR_SIZE_1_3);
	if (tail->max_ep_auth_key) {
		FI_INFO(&weft_core_prov, FI_LOG_CORE,
			"hints ask for %zu authorization keys per endpoint: "
			"weft has none\n", tail->max_ep_auth_key);
		return -FI_ENODATA;
	}
	if (dom_len >= WEFT_DOMAIN_ATTR_SIZE_1_8 && tail->max_group_id) {
		FI_INFO(&weft_core_prov, FI_LOG_CORE,
			"hints ask for group ids up to %u: weft has no groups\n",
			tail->max_group_id);
		return -FI_ENODATA;
	}
	return 0;
}

static int getinfo_sized(size_t node_len, uint32_t version, const char *node,
			 const char *service, uint64_t flags,
			 const struct fi_info *hints, struct fi_info **info)
{
	size_t dom_len = WEFT_MIN(node_len, weft_domain_attr_size_for(version));
	int ret;

	if (!info)
		return -FI_EINVAL;
	ret = hints_tail_check(hints, dom_len);
	if (ret)
		return ret;
	return weft_getinfo(version, node, service, flags, hints, info);
}

/* fi_freeinfo is the same at every node from 1.3 on: weft allocated it all. */

WEFT_EXPORT int fi_getinfo(uint32_t version, const char *node,
			   const char *service, uint64_t flags,
			   const struct fi_info *hints, struct fi_info **info)
{
	return getinfo_sized(WEFT_DOMAIN_ATTR_SIZE_1_9, version, node, service,
			     flags, hints, info);
}

WEFT_EXPORT struct fi_info *fi_dupinfo(const struct fi_info *info)
{
	return weft_info_dup_sized(info, WEFT_DOMAIN_ATTR_SIZE_1_9);
}

WEFT_EXPORT void fi_freeinfo(struct fi_info *info)
{
	weft_info_free_list(info);
}

/* 2.0: fi_fabric with the fabric_attr of an fi_info; no flags defined. */
WEFT_EXPORT int fi_fabric2(struct fi_info *info, struct fid_fabric **fabric,
			   uint64_t flags, void *context)
{
	if (!info || flags)
		return -FI_EINVAL;
	return weft_fabric(info->fabric_attr, fabric, context);
}

#define WEFT_NODE_1_3_TO_1_8(n, size)                                          \
	WEFT_EXPORT int weft_compat_getinfo_##n(                               \
		uint32_t version, const char *node, const char *service,       \
		uint64_t flags, const struct fi_info *hints,                   \
		struct fi_info **info)                                         \
	{                                                                      \
		return getinfo_sized(size, version, node, service, flags,      \
				     hints, info);                             \
	}                                                                      \
	WEFT_EXPORT struct fi_info *weft_compat_dupinfo_##n(                   \
		const struct fi_info *info)                                    \
	{                                                                      \
		return weft_info_dup_sized(info, size);                        \
	}                                                                      \
	WEFT_EXPORT void weft_compat_freeinfo_##n(struct fi_info *info)        \
	{                                                                      \
		weft_info_free_list(info);                                     \
	}

WEFT_NODE_1_3_TO_1_8(1_3, WEFT_DOMAIN_ATTR_SIZE_1_3)
WEFT_COMPAT_SYMVER(weft_compat_getinfo_1_3, fi_getinfo, FABRIC_1.3);
WEFT_COMPAT_SYMVER(weft_compat_dupinfo_1_3, fi_dupinfo, FABRIC_1.3);
WEFT_COMPAT_SYMVER(weft_compat_freeinfo_1_3, fi_freeinfo, FABRIC_1.3);

WEFT_NODE_1_3_TO_1_8(1_7, WEFT_DOMAIN_ATTR_SIZE_1_7)
WEFT_COMPAT_SYMVER(weft_compat_getinfo_1_7, fi_getinfo, FABRIC_1.7);
WEFT_COMPAT_SYMVER(weft_compat_dupinfo_1_7, fi_dupinfo, FABRIC_1.7);
WEFT_COMPAT_SYMVER(weft_compat_freeinfo_1_7, fi_freeinfo, FABRIC_1.7);

WEFT_NODE_1_3_TO_1_8(1_8, WEFT_DOMAIN_ATTR_SIZE_1_8)
WEFT_COMPAT_SYMVER(weft_compat_getinfo_1_8, fi_getinfo, FABRIC_1.8);
WEFT_COMPAT_SYMVER(weft_compat_dupinfo_1_8, fi_dupinfo, FABRIC_1.8);
WEFT_COMPAT_SYMVER(weft_compat_freeinfo_1_8, fi_freeinfo, FABRIC_1.8);
