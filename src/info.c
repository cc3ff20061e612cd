/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * fi_info lists: allocation, deep copy and release (fi_dupinfo,
 * fi_freeinfo; fi_allocinfo is fi_dupinfo(NULL) in the public header).
 */
#include "weft/core.h"

#include <stdlib.h>
#include <string.h>

#include "weft/compat.h"
#include "weft/stubs.h"

void *weft_dup_mem(const void *src, size_t len, bool *failed)
{
	void *dst;

	if (!src || !len)
		return NULL;
	dst = malloc(len);
	if (!dst) {
		*failed = true;
		return NULL;
	}
	memcpy(dst, src, len);
	return dst;
}

char *weft_dup_str(const char *src, bool *failed)
{
	char *dst;

	if (!src)
		return NULL;
	dst = strdup(src);
	if (!dst)
		*failed = true;
	return dst;
}

#define DUP_ATTR(dst, src, field, failed)                                      \
	do {                                                                   \
		(dst)->field = NULL;                                           \
		if ((src)->field) {                                            \
			(dst)->field = malloc(sizeof(*(src)->field));          \
			if ((dst)->field)                                      \
				*(dst)->field = *(src)->field;                 \
			else                                                   \
				*(failed) = true;                              \
		}                                                              \
	} while (0)

/*
 * Deep copy of a fid_nic's attributes.  The copy is owned by the fi_info it
 * hangs from and released by weft_info_free().
 */
static int nic_close(struct fid *fid);

static struct fi_ops nic_ops = {
	.size = sizeof(struct fi_ops),
	.close = nic_close,
	.bind = weft_no_bind,
	.control = weft_no_control,
	.ops_open = weft_no_ops_open,
	.tostr = weft_tostr_nic,
	.ops_set = weft_no_ops_set,
};

static void nic_free(struct fid_nic *nic)
{
	if (!nic)
		return;
	if (nic->device_attr) {
		free(nic->device_attr->name);
		free(nic->device_attr->device_id);
		free(nic->device_attr->device_version);
		free(nic->device_attr->vendor_id);
		free(nic->device_attr->driver);
		free(nic->device_attr->firmware);
		free(nic->device_attr);
	}
	free(nic->bus_attr);
	if (nic->link_attr) {
		free(nic->link_attr->address);
		free(nic->link_attr->network_type);
		free(nic->link_attr);
	}
	free(nic);
}

static int nic_close(struct fid *fid)
{
	nic_free(container_of(fid, struct fid_nic, fid));
	return 0;
}

static struct fid_nic *nic_dup(const struct fid_nic *src, bool *failed)
{
	struct fid_nic *nic;

	if (!src)
		return NULL;
	nic = calloc(1, sizeof(*nic));
	if (!nic) {
		*failed = true;
		return NULL;
	}
	nic->fid.fclass = FI_CLASS_NIC;
	nic->fid.ops = &nic_ops;
	if (src->device_attr) {
		struct fi_device_attr *d = calloc(1, sizeof(*d));

		nic->device_attr = d;
		if (!d) {
			*failed = true;
		} else {
			d->name = weft_dup_str(src->device_attr->name, failed);
			d->device_id = weft_dup_str(src->device_attr->device_id, failed);
			d->device_version =
				weft_dup_str(src->device_attr->device_version, failed);
			d->vendor_id = weft_dup_str(src->device_attr->vendor_id, failed);
			d->driver = weft_dup_str(src->device_attr->driver, failed);
			d->firmware = weft_dup_str(src->device_attr->firmware, failed);
		}
	}
	DUP_ATTR(nic, src, bus_attr, failed);
	if (src->link_attr) {
		struct fi_link_attr *l = malloc(sizeof(*l));

		nic->link_attr = l;
		if (!l) {
			*failed = true;
		} else {
			*l = *src->link_attr;
			l->address = weft_dup_str(src->link_attr->address, failed);
			l->network_type =
				weft_dup_str(src->link_attr->network_type, failed);
		}
	}
	nic->prov_attr = src->prov_attr;
	return nic;
}

void weft_info_free(struct fi_info *info)
{
	if (!info)
		return;
	free(info->src_addr);
	free(info->dest_addr);
	free(info->tx_attr);
	free(info->rx_attr);
	if (info->ep_attr) {
		free(info->ep_attr->auth_key);
		free(info->ep_attr);
	}
	if (info->domain_attr) {
		free(info->domain_attr->name);
		free(info->domain_attr->auth_key);
		free(info->domain_attr);
	}
	if (info->fabric_attr) {
		free(info->fabric_attr->name);
		free(info->fabric_attr->prov_name);
		free(info->fabric_attr);
	}
	nic_free(info->nic);
	free(info);
}

/*
 * fi_dupinfo(NULL) allocates an empty fi_info with every attribute struct
 * present and zeroed, as fi_allocinfo promises.
 */
static struct fi_info *info_alloc(void)
{
	struct fi_info *info = calloc(1, sizeof(*info));

	if (!info)
		return NULL;
	info->tx_attr = calloc(1, sizeof(*info->tx_attr));
	info->rx_attr = calloc(1, sizeof(*info->rx_attr));
	info->ep_attr = calloc(1, sizeof(*info->ep_attr));
	info->domain_attr = calloc(1, WEFT_DOMAIN_ATTR_ALLOC);
	info->fabric_attr = calloc(1, sizeof(*info->fabric_attr));
	if (!info->tx_attr || !info->rx_attr || !info->ep_attr ||
	    !info->domain_attr || !info->fabric_attr) {
		weft_info_free(info);
		return NULL;
	}
	return info;
}

void weft_info_copy_shallow(struct weft_info_copy *c,
			    const struct fi_info *src)
{
	memset(c, 0, sizeof(*c));
	c->info = *src;
	c->info.next = NULL;
	if (src->tx_attr) {
		c->tx = *src->tx_attr;
		c->info.tx_attr = &c->tx;
	}
	if (src->rx_attr) {
		c->rx = *src->rx_attr;
		c->info.rx_attr = &c->rx;
	}
	if (src->ep_attr) {
		c->ep = *src->ep_attr;
		c->info.ep_attr = &c->ep;
	}
	if (src->domain_attr) {
		memcpy(&c->domain, src->domain_attr, WEFT_DOMAIN_ATTR_SIZE_1_3);
		c->info.domain_attr = &c->domain;
	}
	if (src->fabric_attr) {
		c->fabric = *src->fabric_attr;
		c->info.fabric_attr = &c->fabric;
	}
}

void weft_domain_tail_fill(struct fi_domain_attr *attr)
{
	*weft_domain_tail(attr) = (struct weft_domain_attr_tail){
		/* no authorization keys, no groups */
		.max_ep_auth_key = 0,
		.max_group_id = 0,
		/* counters are full 64-bit values */
		.max_cntr_value = UINT64_MAX,
		.max_err_cntr_value = UINT64_MAX,
	};
}

struct fi_info *weft_info_dup_sized(const struct fi_info *src, size_t dom_len)
{
	struct fi_info *dst;
	bool failed = false;

	if (!src)
		return info_alloc();

	dst = calloc(1, sizeof(*dst));
	if (!dst)
		return NULL;
	*dst = *src;
	dst->next = NULL;
	dst->src_addr = weft_dup_mem(src->src_addr, src->src_addrlen, &failed);
	dst->dest_addr = weft_dup_mem(src->dest_addr, src->dest_addrlen, &failed);
	DUP_ATTR(dst, src, tx_attr, &failed);
	DUP_ATTR(dst, src, rx_attr, &failed);
	DUP_ATTR(dst, src, ep_attr, &failed);
	if (dst->ep_attr)
		dst->ep_attr->auth_key =
			weft_dup_mem(src->ep_attr->auth_key,
				src->ep_attr->auth_key_size, &failed);
	/* the caller's layout ends at dom_len; weft's copy is the newest */
	dst->domain_attr = NULL;
	if (src->domain_attr) {
		dst->domain_attr = calloc(1, WEFT_DOMAIN_ATTR_ALLOC);
		if (!dst->domain_attr) {
			failed = true;
		} else {
			memcpy(dst->domain_attr, src->domain_attr,
			       WEFT_MIN(dom_len, WEFT_DOMAIN_ATTR_SIZE_1_9));
			dst->domain_attr->name =
				weft_dup_str(src->domain_attr->name, &failed);
			dst->domain_attr->auth_key = weft_dup_mem(
				src->domain_attr->auth_key,
				src->domain_attr->auth_key_size, &failed);
		}
	}
	DUP_ATTR(dst, src, fabric_attr, &failed);
	if (dst->fabric_attr) {
		dst->fabric_attr->name =
			weft_dup_str(src->fabric_attr->name, &failed);
		dst->fabric_attr->prov_name =
			weft_dup_str(src->fabric_attr->prov_name, &failed);
	}
	dst->nic = nic_dup(src->nic, &failed);
	if (failed) {
		weft_info_free(dst);
		return NULL;
	}
	return dst;
}

/*
 * Inside the library a source fi_info is weft's own or a caller's of any
 * node from 1.3 on: read the part every one of them has, and answer the
 * tail with weft's values.
 */
struct fi_info *weft_info_dup(const struct fi_info *src)
{
	struct fi_info *dst = weft_info_dup_sized(src, WEFT_DOMAIN_ATTR_SIZE_1_3);

	if (src && dst && dst->domain_attr)
		weft_domain_tail_fill(dst->domain_attr);
	return dst;
}

void weft_info_free_list(struct fi_info *info)
{
	struct fi_info *next;

	for (; info; info = next) {
		next = info->next;
		weft_info_free(info);
	}
}
