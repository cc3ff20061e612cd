/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The older fi_info layouts: conversions both ways, and the compat
 * fi_getinfo / fi_dupinfo / fi_freeinfo / fi_fabric over a mock provider
 * built into this program.
 */
#include <criterion/criterion.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "weft/compat.h"

/* ---- a current fi_info with every field set ------------------------------ */

static uint8_t src_addr[] = { 1, 2, 3, 4, 5, 6, 7, 8, 9 };
static uint8_t dest_addr[] = { 10, 11, 12, 13 };
static uint8_t ep_key[] = { 0xe1, 0xe2, 0xe3 };
static uint8_t domain_key[] = { 0xd1, 0xd2, 0xd3, 0xd4, 0xd5 };

/* Distinct non-zero values, so that a field copied into its neighbour shows. */
static struct fi_tx_attr tx_template = {
	.caps = FI_MSG | FI_SEND,
	.mode = FI_CONTEXT,
	.op_flags = FI_COMPLETION,
	.msg_order = FI_ORDER_SAS,
	.comp_order = FI_ORDER_STRICT,
	.inject_size = 101,
	.size = 102,
	.iov_limit = 103,
	.rma_iov_limit = 104,
	.tclass = FI_TC_LOW_LATENCY,
};

static struct fi_rx_attr rx_template = {
	.caps = FI_MSG | FI_RECV,
	.mode = FI_CONTEXT2,
	.op_flags = FI_MULTI_RECV,
	.msg_order = FI_ORDER_RAW,
	.comp_order = FI_ORDER_DATA,
	.total_buffered_recv = 201,
	.size = 202,
	.iov_limit = 203,
};

static struct fi_ep_attr ep_template = {
	.type = FI_EP_RDM,
	.protocol = FI_PROTO_RXM,
	.protocol_version = 3,
	.max_msg_size = 301,
	.msg_prefix_size = 302,
	.max_order_raw_size = 303,
	.max_order_war_size = 304,
	.max_order_waw_size = 305,
	.mem_tag_format = 0xaaaa5555aaaa5555ULL,
	.tx_ctx_cnt = 306,
	.rx_ctx_cnt = 307,
	.auth_key_size = sizeof(ep_key),
	.auth_key = ep_key,
};

static struct fi_domain_attr domain_template = {
	.domain = (struct fid_domain *)0x1000,
	.name = "mock-domain",
	.threading = FI_THREAD_DOMAIN,
	.control_progress = FI_PROGRESS_MANUAL,
	.data_progress = FI_PROGRESS_AUTO,
	.resource_mgmt = FI_RM_ENABLED,
	.av_type = FI_AV_TABLE,
	.mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR,
	.mr_key_size = 401,
	.cq_data_size = 402,
	.cq_cnt = 403,
	.ep_cnt = 404,
	.tx_ctx_cnt = 405,
	.rx_ctx_cnt = 406,
	.max_ep_tx_ctx = 407,
	.max_ep_rx_ctx = 408,
	.max_ep_stx_ctx = 409,
	.max_ep_srx_ctx = 410,
	.cntr_cnt = 411,
	.mr_iov_limit = 412,
	.caps = FI_LOCAL_COMM,
	.mode = FI_RESTRICTED_COMP,
	.auth_key = domain_key,
	.auth_key_size = sizeof(domain_key),
	.max_err_data = 413,
	.mr_cnt = 414,
	.tclass = FI_TC_BULK_DATA,
};

static struct fi_fabric_attr fabric_template = {
	.fabric = (struct fid_fabric *)0x2000,
	.name = "mock-fabric",
	.prov_name = "mock",
	.prov_version = FI_VERSION(3, 7),
	.api_version = FI_VERSION(1, 17),
};

static struct fi_device_attr device_template = {
	.name = "mock0",
	.device_id = "0x1234",
	.device_version = "2",
	.vendor_id = "0x8086",
	.driver = "mockdrv",
	.firmware = "1.2.3",
};

static struct fi_bus_attr bus_template = {
	.bus_type = FI_BUS_PCI,
	.attr.pci = { .domain_id = 1, .bus_id = 2, .device_id = 3,
		      .function_id = 4 },
};

static struct fi_link_attr link_template = {
	.address = "10.0.0.1",
	.mtu = 4096,
	.speed = 100000000000ULL,
	.state = FI_LINK_UP,
	.network_type = "Ethernet",
};

static struct fid_nic nic_template = {
	.fid.fclass = FI_CLASS_NIC,
	.device_attr = &device_template,
	.bus_attr = &bus_template,
	.link_attr = &link_template,
};

/* A heap copy the caller frees with weft_info_free(). */
static struct fi_info *full_info(void)
{
	struct fi_info info = {
		.caps = FI_MSG | FI_TAGGED | FI_RMA,
		.mode = FI_CONTEXT | FI_RX_CQ_DATA,
		.addr_format = FI_SOCKADDR_IN,
		.src_addrlen = sizeof(src_addr),
		.dest_addrlen = sizeof(dest_addr),
		.src_addr = src_addr,
		.dest_addr = dest_addr,
		.handle = (fid_t)0x3000,
		.tx_attr = &tx_template,
		.rx_attr = &rx_template,
		.ep_attr = &ep_template,
		.domain_attr = &domain_template,
		.fabric_attr = &fabric_template,
		.nic = &nic_template,
	};
	struct fi_info *copy = weft_info_dup(&info);

	cr_assert_not_null(copy);
	return copy;
}

static void assert_mem(const void *got, size_t got_len, const void *want,
		       size_t want_len)
{
	cr_assert_eq(got_len, want_len);
	if (!want) {
		cr_assert_null(got);
		return;
	}
	cr_assert_not_null(got);
	cr_assert_eq(memcmp(got, want, want_len), 0);
}

static void assert_str(const char *got, const char *want)
{
	if (!want) {
		cr_assert_null(got);
		return;
	}
	cr_assert_not_null(got);
	cr_assert_str_eq(got, want);
}

/*
 * `got` came from `want` through the abi layout: every field that layout has
 * is equal, every field it lacks is zero.
 */
static void assert_through(enum weft_abi abi, const struct fi_info *got,
			   const struct fi_info *want)
{
	const struct fi_domain_attr *gd = got->domain_attr;
	const struct fi_domain_attr *wd = want->domain_attr;

	cr_assert_null(got->next);
	cr_assert_eq(got->caps, want->caps);
	cr_assert_eq(got->mode, want->mode);
	cr_assert_eq(got->addr_format, want->addr_format);
	assert_mem(got->src_addr, got->src_addrlen, want->src_addr,
		   want->src_addrlen);
	assert_mem(got->dest_addr, got->dest_addrlen, want->dest_addr,
		   want->dest_addrlen);
	cr_assert_eq(got->handle, want->handle);

	cr_assert_eq(got->tx_attr->caps, want->tx_attr->caps);
	cr_assert_eq(got->tx_attr->mode, want->tx_attr->mode);
	cr_assert_eq(got->tx_attr->op_flags, want->tx_attr->op_flags);
	cr_assert_eq(got->tx_attr->msg_order, want->tx_attr->msg_order);
	cr_assert_eq(got->tx_attr->comp_order, want->tx_attr->comp_order);
	cr_assert_eq(got->tx_attr->inject_size, want->tx_attr->inject_size);
	cr_assert_eq(got->tx_attr->size, want->tx_attr->size);
	cr_assert_eq(got->tx_attr->iov_limit, want->tx_attr->iov_limit);
	cr_assert_eq(got->tx_attr->rma_iov_limit, want->tx_attr->rma_iov_limit);
	cr_assert_eq(got->tx_attr->tclass, 0, "no tclass before FABRIC_1.3");

	cr_assert_eq(memcmp(got->rx_attr, want->rx_attr, sizeof(*got->rx_attr)),
		     0);

	cr_assert_eq(got->ep_attr->type, want->ep_attr->type);
	cr_assert_eq(got->ep_attr->protocol, want->ep_attr->protocol);
	cr_assert_eq(got->ep_attr->protocol_version,
		     want->ep_attr->protocol_version);
	cr_assert_eq(got->ep_attr->max_msg_size, want->ep_attr->max_msg_size);
	cr_assert_eq(got->ep_attr->msg_prefix_size,
		     want->ep_attr->msg_prefix_size);
	cr_assert_eq(got->ep_attr->max_order_raw_size,
		     want->ep_attr->max_order_raw_size);
	cr_assert_eq(got->ep_attr->max_order_war_size,
		     want->ep_attr->max_order_war_size);
	cr_assert_eq(got->ep_attr->max_order_waw_size,
		     want->ep_attr->max_order_waw_size);
	cr_assert_eq(got->ep_attr->mem_tag_format,
		     want->ep_attr->mem_tag_format);
	cr_assert_eq(got->ep_attr->tx_ctx_cnt, want->ep_attr->tx_ctx_cnt);
	cr_assert_eq(got->ep_attr->rx_ctx_cnt, want->ep_attr->rx_ctx_cnt);
	if (abi >= WEFT_ABI_1_1)
		assert_mem(got->ep_attr->auth_key, got->ep_attr->auth_key_size,
			   want->ep_attr->auth_key,
			   want->ep_attr->auth_key_size);
	else
		assert_mem(got->ep_attr->auth_key, got->ep_attr->auth_key_size,
			   NULL, 0);

	cr_assert_eq(gd->domain, wd->domain);
	assert_str(gd->name, wd->name);
	cr_assert_eq(gd->threading, wd->threading);
	cr_assert_eq(gd->control_progress, wd->control_progress);
	cr_assert_eq(gd->data_progress, wd->data_progress);
	cr_assert_eq(gd->resource_mgmt, wd->resource_mgmt);
	cr_assert_eq(gd->av_type, wd->av_type);
	cr_assert_eq(gd->mr_mode, wd->mr_mode);
	cr_assert_eq(gd->mr_key_size, wd->mr_key_size);
	cr_assert_eq(gd->cq_data_size, wd->cq_data_size);
	cr_assert_eq(gd->cq_cnt, wd->cq_cnt);
	cr_assert_eq(gd->ep_cnt, wd->ep_cnt);
	cr_assert_eq(gd->tx_ctx_cnt, wd->tx_ctx_cnt);
	cr_assert_eq(gd->rx_ctx_cnt, wd->rx_ctx_cnt);
	cr_assert_eq(gd->max_ep_tx_ctx, wd->max_ep_tx_ctx);
	cr_assert_eq(gd->max_ep_rx_ctx, wd->max_ep_rx_ctx);
	cr_assert_eq(gd->max_ep_stx_ctx, wd->max_ep_stx_ctx);
	cr_assert_eq(gd->max_ep_srx_ctx, wd->max_ep_srx_ctx);
	if (abi >= WEFT_ABI_1_1) {
		cr_assert_eq(gd->cntr_cnt, wd->cntr_cnt);
		cr_assert_eq(gd->mr_iov_limit, wd->mr_iov_limit);
		cr_assert_eq(gd->caps, wd->caps);
		cr_assert_eq(gd->mode, wd->mode);
		assert_mem(gd->auth_key, gd->auth_key_size, wd->auth_key,
			   wd->auth_key_size);
		cr_assert_eq(gd->max_err_data, wd->max_err_data);
		cr_assert_eq(gd->mr_cnt, wd->mr_cnt);
	} else {
		cr_assert_eq(gd->cntr_cnt, 0);
		cr_assert_eq(gd->mr_iov_limit, 0);
		cr_assert_eq(gd->caps, 0);
		cr_assert_eq(gd->mode, 0);
		assert_mem(gd->auth_key, gd->auth_key_size, NULL, 0);
		cr_assert_eq(gd->max_err_data, 0);
		cr_assert_eq(gd->mr_cnt, 0);
	}
	cr_assert_eq(gd->tclass, 0, "no tclass before FABRIC_1.3");

	cr_assert_eq(got->fabric_attr->fabric, want->fabric_attr->fabric);
	assert_str(got->fabric_attr->name, want->fabric_attr->name);
	assert_str(got->fabric_attr->prov_name, want->fabric_attr->prov_name);
	cr_assert_eq(got->fabric_attr->prov_version,
		     want->fabric_attr->prov_version);
	cr_assert_eq(got->fabric_attr->api_version,
		     abi >= WEFT_ABI_1_1 ? want->fabric_attr->api_version : 0);

	if (abi < WEFT_ABI_1_2) {
		cr_assert_null(got->nic);
		return;
	}
	cr_assert_not_null(got->nic);
	cr_assert_neq(got->nic, want->nic);
	assert_str(got->nic->device_attr->name, want->nic->device_attr->name);
	assert_str(got->nic->device_attr->firmware,
		   want->nic->device_attr->firmware);
	cr_assert_eq(got->nic->bus_attr->attr.pci.function_id,
		     want->nic->bus_attr->attr.pci.function_id);
	assert_str(got->nic->link_attr->address,
		   want->nic->link_attr->address);
	cr_assert_eq(got->nic->link_attr->speed, want->nic->link_attr->speed);
}

static void roundtrip(enum weft_abi abi)
{
	struct fi_info *orig = full_info();
	struct fi_info *back;
	void *old;

	old = weft_compat_info_from_new(abi, orig);
	cr_assert_not_null(old);
	back = weft_compat_info_to_new(abi, old);
	cr_assert_not_null(back);
	assert_through(abi, back, orig);

	weft_info_free(back);
	weft_compat_info_free(abi, old);
	weft_info_free(orig);
}

Test(compat_convert, roundtrip_1_0)
{
	roundtrip(WEFT_ABI_1_0);
}

Test(compat_convert, roundtrip_1_1)
{
	roundtrip(WEFT_ABI_1_1);
}

Test(compat_convert, roundtrip_1_2)
{
	roundtrip(WEFT_ABI_1_2);
}

/* The old structs themselves hold the values, in the old places. */
Test(compat_convert, old_layout_values)
{
	struct fi_info *orig = full_info();
	struct weft_info_1_0 *v0 = weft_compat_info_from_new(WEFT_ABI_1_0, orig);
	struct weft_info_1_1 *v1 = weft_compat_info_from_new(WEFT_ABI_1_1, orig);
	struct weft_info_1_2 *v2 = weft_compat_info_from_new(WEFT_ABI_1_2, orig);

	cr_assert(v0 && v1 && v2);
	cr_assert_eq(v0->tx_attr->rma_iov_limit, 104);
	cr_assert_eq(v0->ep_attr->rx_ctx_cnt, 307);
	cr_assert_eq(v0->domain_attr->max_ep_srx_ctx, 410);
	cr_assert_str_eq(v0->domain_attr->name, "mock-domain");
	cr_assert_str_eq(v0->fabric_attr->prov_name, "mock");
	cr_assert_eq(v0->fabric_attr->prov_version, FI_VERSION(3, 7));

	cr_assert_eq(v1->ep_attr->auth_key_size, sizeof(ep_key));
	cr_assert_neq(v1->ep_attr->auth_key, orig->ep_attr->auth_key);
	cr_assert_eq(v1->domain_attr->mr_cnt, 414);
	cr_assert_eq(v1->fabric_attr->api_version, FI_VERSION(1, 17));

	cr_assert_eq(v2->domain_attr->max_err_data, 413);
	cr_assert_not_null(v2->nic);
	cr_assert_str_eq(v2->nic->device_attr->driver, "mockdrv");

	weft_compat_freeinfo_1_0(v0);
	weft_compat_freeinfo_1_1(v1);
	weft_compat_freeinfo_1_2(v2);
	weft_info_free(orig);
}

/* fi_dupinfo(NULL) at an old node: every attribute present and zero. */
Test(compat_convert, alloc_empty)
{
	static const struct weft_tx_attr_1_0 tx0;
	static const struct fi_rx_attr rx0;
	static const struct weft_ep_attr_1_0 ep0;
	static const struct weft_domain_attr_1_0 dom0;
	static const struct weft_fabric_attr_1_0 fab0;
	static const struct fi_ep_attr ep1;
	static const struct weft_domain_attr_1_1 dom1;
	static const struct fi_fabric_attr fab1;
	struct weft_info_1_0 *v0 = weft_compat_dupinfo_1_0(NULL);
	struct weft_info_1_1 *v1 = weft_compat_dupinfo_1_1(NULL);
	struct weft_info_1_2 *v2 = weft_compat_dupinfo_1_2(NULL);

	cr_assert(v0 && v1 && v2);
	cr_assert(v0->tx_attr && v0->rx_attr && v0->ep_attr &&
		  v0->domain_attr && v0->fabric_attr);
	cr_assert_eq(memcmp(v0->tx_attr, &tx0, sizeof(tx0)), 0);
	cr_assert_eq(memcmp(v0->rx_attr, &rx0, sizeof(rx0)), 0);
	cr_assert_eq(memcmp(v0->ep_attr, &ep0, sizeof(ep0)), 0);
	cr_assert_eq(memcmp(v0->domain_attr, &dom0, sizeof(dom0)), 0);
	cr_assert_eq(memcmp(v0->fabric_attr, &fab0, sizeof(fab0)), 0);
	cr_assert(v1->tx_attr && v1->rx_attr && v1->ep_attr &&
		  v1->domain_attr && v1->fabric_attr);
	cr_assert_eq(memcmp(v1->ep_attr, &ep1, sizeof(ep1)), 0);
	cr_assert_eq(memcmp(v1->domain_attr, &dom1, sizeof(dom1)), 0);
	cr_assert_eq(memcmp(v1->fabric_attr, &fab1, sizeof(fab1)), 0);
	cr_assert(v2->tx_attr && v2->rx_attr && v2->ep_attr &&
		  v2->domain_attr && v2->fabric_attr);
	cr_assert_null(v2->nic);
	cr_assert_null(v0->next);

	weft_compat_freeinfo_1_0(v0);
	weft_compat_freeinfo_1_1(v1);
	weft_compat_freeinfo_1_2(v2);
}

/* fi_dupinfo at an old node: a deep copy in the same layout. */
Test(compat_convert, dup_old)
{
	struct fi_info *orig = full_info();
	struct weft_info_1_2 *v2 = weft_compat_info_from_new(WEFT_ABI_1_2, orig);
	struct weft_info_1_2 *copy;
	struct fi_info *back;

	cr_assert_not_null(v2);
	v2->next = v2; /* not followed */
	copy = weft_compat_dupinfo_1_2(v2);
	v2->next = NULL;
	cr_assert_not_null(copy);
	cr_assert_null(copy->next);
	cr_assert_neq(copy->src_addr, v2->src_addr);
	cr_assert_neq(copy->domain_attr->name, v2->domain_attr->name);
	cr_assert_neq(copy->domain_attr->auth_key, v2->domain_attr->auth_key);
	cr_assert_neq(copy->fabric_attr->prov_name, v2->fabric_attr->prov_name);
	cr_assert_neq(copy->nic, v2->nic);
	back = weft_compat_info_to_new(WEFT_ABI_1_2, copy);
	assert_through(WEFT_ABI_1_2, back, orig);

	/* fi_freeinfo at an old node follows the list. */
	v2->next = copy;
	weft_compat_freeinfo_1_2(v2);
	weft_info_free(back);
	weft_info_free(orig);
}

Test(compat_convert, null_arguments)
{
	weft_compat_freeinfo_1_0(NULL);
	weft_compat_freeinfo_1_1(NULL);
	weft_compat_freeinfo_1_2(NULL);
	cr_assert_null(weft_compat_info_from_new(WEFT_ABI_1_0, NULL));
	cr_assert_null(weft_compat_info_to_new(WEFT_ABI_1_0, NULL));
	cr_assert_eq(weft_compat_getinfo_1_0(FI_VERSION(1, 4), NULL, NULL, 0,
					     NULL, NULL),
		     -FI_EINVAL);
	cr_assert_eq(weft_compat_fabric_1_0(NULL, NULL, NULL), -FI_EINVAL);
}

/* ---- a mock provider: what the core passes it, what callers get back ---- */

#define MOCK_ENTRIES 2
#define MOCK_FABRIC_RET (-FI_EOPNOTSUPP)

static struct fi_info *mock_hints;  /* what its getinfo last received */
static struct fi_fabric_attr mock_fabric_attr; /* what fi_fabric passed */
static char mock_fabric_name[64];

static int mock_getinfo(uint32_t version, const char *node,
			const char *service, uint64_t flags,
			const struct fi_info *hints, struct fi_info **info)
{
	struct fi_info *head = NULL;
	int i;

	weft_info_free(mock_hints);
	mock_hints = hints ? weft_info_dup(hints) : NULL;
	for (i = 0; i < MOCK_ENTRIES; i++) {
		struct fi_info *cur = full_info();

		cur->next = head;
		head = cur;
	}
	*info = head;
	return 0;
}

static int mock_fabric(struct fi_fabric_attr *attr, struct fid_fabric **fabric,
		       void *context)
{
	mock_fabric_attr = *attr;
	snprintf(mock_fabric_name, sizeof(mock_fabric_name), "%s",
		 attr->name ? attr->name : "");
	mock_fabric_attr.name = NULL;
	mock_fabric_attr.prov_name = NULL;
	return MOCK_FABRIC_RET;
}

static struct fi_provider mock_prov = {
	.version = FI_VERSION(3, 7),
	.fi_version = FI_VERSION(1, 17),
	.name = "mock",
	.getinfo = mock_getinfo,
	.fabric = mock_fabric,
};
WEFT_PROVIDER(mock_prov);

static void mock_setup(void)
{
	unsetenv("FI_PROVIDER");
}

static void mock_teardown(void)
{
	weft_info_free(mock_hints);
	mock_hints = NULL;
}

TestSuite(compat_getinfo, .init = mock_setup, .fini = mock_teardown);

/* What every entry the mock returned looks like after the core labels it. */
static struct fi_info *labelled_template(uint32_t version)
{
	struct fi_info *want = full_info();

	want->fabric_attr->prov_version = mock_prov.version;
	want->fabric_attr->api_version = version;
	return want;
}

/* Hints at 1.0, allocated by the 1.0 fi_dupinfo so exactly 1.0-sized. */
Test(compat_getinfo, v1_0)
{
	const uint32_t version = FI_VERSION(1, 4);
	struct weft_info_1_0 *hints = weft_compat_dupinfo_1_0(NULL);
	struct weft_info_1_0 *info = NULL, *cur;
	struct fi_info *want = labelled_template(version);
	int n = 0;

	cr_assert_not_null(hints);
	hints->caps = FI_MSG | FI_TAGGED;
	hints->tx_attr->inject_size = 64;
	hints->ep_attr->type = FI_EP_RDM;
	hints->ep_attr->rx_ctx_cnt = 2;
	hints->domain_attr->mr_mode = FI_MR_BASIC;
	hints->domain_attr->max_ep_srx_ctx = 5;
	hints->fabric_attr->prov_name = strdup("mock");

	cr_assert_eq(weft_compat_getinfo_1_0(version, NULL, NULL, 0, hints,
					     &info),
		     0);

	cr_assert_not_null(mock_hints);
	cr_assert_eq(mock_hints->caps, FI_MSG | FI_TAGGED);
	cr_assert_eq(mock_hints->tx_attr->inject_size, 64);
	cr_assert_eq(mock_hints->tx_attr->tclass, 0);
	cr_assert_eq(mock_hints->ep_attr->type, FI_EP_RDM);
	cr_assert_eq(mock_hints->ep_attr->rx_ctx_cnt, 2);
	cr_assert_null(mock_hints->ep_attr->auth_key);
	cr_assert_eq(mock_hints->ep_attr->auth_key_size, 0);
	cr_assert_eq(mock_hints->domain_attr->mr_mode, FI_MR_BASIC);
	cr_assert_eq(mock_hints->domain_attr->max_ep_srx_ctx, 5);
	cr_assert_eq(mock_hints->domain_attr->mr_cnt, 0);
	cr_assert_str_eq(mock_hints->fabric_attr->prov_name, "mock");
	cr_assert_eq(mock_hints->fabric_attr->api_version, 0);
	cr_assert_null(mock_hints->nic);

	for (cur = info; cur; cur = cur->next, n++) {
		struct fi_info *back = weft_compat_info_to_new(WEFT_ABI_1_0,
							       cur);

		cr_assert_not_null(back);
		assert_through(WEFT_ABI_1_0, back, want);
		weft_info_free(back);
	}
	cr_assert_eq(n, MOCK_ENTRIES);

	weft_compat_freeinfo_1_0(info);
	weft_compat_freeinfo_1_0(hints);
	weft_info_free(want);
}

Test(compat_getinfo, v1_1)
{
	const uint32_t version = FI_VERSION(1, 5);
	struct weft_info_1_1 *hints = weft_compat_dupinfo_1_1(NULL);
	struct weft_info_1_1 *info = NULL, *cur;
	struct fi_info *want = labelled_template(version);
	uint8_t key[] = { 7, 7, 7 };
	int n = 0;

	cr_assert_not_null(hints);
	hints->ep_attr->auth_key = malloc(sizeof(key));
	memcpy(hints->ep_attr->auth_key, key, sizeof(key));
	hints->ep_attr->auth_key_size = sizeof(key);
	hints->domain_attr->mr_cnt = 9;
	hints->domain_attr->mr_mode = FI_MR_LOCAL;
	hints->fabric_attr->prov_name = strdup("mock");
	hints->fabric_attr->api_version = version;

	/* the 1.1 layout's key reaches the current one ... */
	{
		struct fi_info *conv =
			weft_compat_info_to_new(WEFT_ABI_1_1, hints);

		cr_assert_not_null(conv);
		assert_mem(conv->ep_attr->auth_key,
			   conv->ep_attr->auth_key_size, key, sizeof(key));
		weft_info_free(conv);
	}
	/* ... and fi_getinfo refuses it: weft has no authorization keys */
	cr_assert_eq(weft_compat_getinfo_1_1(version, NULL, NULL, 0, hints,
					     &info),
		     -FI_ENODATA);
	free(hints->ep_attr->auth_key);
	hints->ep_attr->auth_key = NULL;
	hints->ep_attr->auth_key_size = 0;

	cr_assert_eq(weft_compat_getinfo_1_1(version, NULL, NULL, 0, hints,
					     &info),
		     0);

	cr_assert_not_null(mock_hints);
	cr_assert_eq(mock_hints->domain_attr->mr_cnt, 9);
	cr_assert_eq(mock_hints->domain_attr->mr_mode, FI_MR_LOCAL);
	cr_assert_eq(mock_hints->domain_attr->tclass, 0);
	cr_assert_eq(mock_hints->fabric_attr->api_version, version);

	for (cur = info; cur; cur = cur->next, n++) {
		struct fi_info *back = weft_compat_info_to_new(WEFT_ABI_1_1,
							       cur);

		cr_assert_not_null(back);
		assert_through(WEFT_ABI_1_1, back, want);
		weft_info_free(back);
	}
	cr_assert_eq(n, MOCK_ENTRIES);

	weft_compat_freeinfo_1_1(info);
	weft_compat_freeinfo_1_1(hints);
	weft_info_free(want);
}

Test(compat_getinfo, v1_2)
{
	const uint32_t version = FI_VERSION(1, 7);
	struct weft_info_1_2 *info = NULL, *cur;
	struct fi_info *want = labelled_template(version);
	int n = 0;

	cr_assert_eq(weft_compat_getinfo_1_2(version, NULL, NULL, 0, NULL,
					     &info),
		     0);
	cr_assert_null(mock_hints);

	for (cur = info; cur; cur = cur->next, n++) {
		struct fi_info *back = weft_compat_info_to_new(WEFT_ABI_1_2,
							       cur);

		cr_assert_not_null(cur->nic);
		cr_assert_not_null(back);
		assert_through(WEFT_ABI_1_2, back, want);
		weft_info_free(back);
	}
	cr_assert_eq(n, MOCK_ENTRIES);

	weft_compat_freeinfo_1_2(info);
	weft_info_free(want);
}

Test(compat_getinfo, no_match_leaves_info)
{
	struct weft_info_1_0 *hints = weft_compat_dupinfo_1_0(NULL);
	struct weft_info_1_0 *info = (struct weft_info_1_0 *)0x1;

	cr_assert_not_null(hints);
	hints->fabric_attr->prov_name = strdup("no-such-provider");
	cr_assert_eq(weft_compat_getinfo_1_0(FI_VERSION(1, 4), NULL, NULL, 0,
					     hints, &info),
		     -FI_ENODATA);
	cr_assert_eq(info, (struct weft_info_1_0 *)0x1);
	weft_compat_freeinfo_1_0(hints);
}

/* fi_fabric at 1.0: the 1.0 attr has no api_version; the provider sees 1.0. */
Test(compat_getinfo, fabric_1_0)
{
	struct weft_fabric_attr_1_0 attr = {
		.fabric = NULL,
		.name = "fab0",
		.prov_name = "mock",
		.prov_version = FI_VERSION(3, 7),
	};
	struct fid_fabric *fabric = NULL;

	cr_assert_eq(weft_compat_fabric_1_0(&attr, &fabric, NULL),
		     MOCK_FABRIC_RET);
	cr_assert_str_eq(mock_fabric_name, "fab0");
	cr_assert_eq(mock_fabric_attr.prov_version, FI_VERSION(3, 7));
	cr_assert_eq(mock_fabric_attr.api_version, FI_VERSION(1, 0));

	attr.prov_name = "no-such-provider";
	cr_assert_eq(weft_compat_fabric_1_0(&attr, &fabric, NULL), -FI_ENODEV);
}
