/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * fi_getinfo through the core and the shared matcher, against a mock
 * provider registered in this test program the way a real one registers.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rdma/fabric.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_ext.h>

#include "weft/core.h"
#include "weft/util_getinfo.h"

/* ---- the mock provider: an RDM endpoint and a MSG endpoint ---- */

static struct fi_tx_attr rdm_tx = {
	.caps = FI_MSG | FI_TAGGED | FI_RMA | FI_SEND | FI_READ | FI_WRITE,
	.msg_order = FI_ORDER_SAS,
	.comp_order = FI_ORDER_NONE,
	.op_flags = FI_COMPLETION | FI_INJECT_COMPLETE | FI_TRANSMIT_COMPLETE |
		    FI_DELIVERY_COMPLETE,
	.inject_size = 256,
	.size = 1024,
	.iov_limit = 4,
	.rma_iov_limit = 4,
};
static struct fi_rx_attr rdm_rx = {
	.caps = FI_MSG | FI_TAGGED | FI_RMA | FI_RECV | FI_REMOTE_READ |
		FI_REMOTE_WRITE | FI_MULTI_RECV | FI_SOURCE | FI_DIRECTED_RECV,
	.msg_order = FI_ORDER_SAS,
	.op_flags = FI_COMPLETION | FI_MULTI_RECV,
	.size = 1024,
	.iov_limit = 4,
};
static struct fi_ep_attr rdm_ep = {
	.type = FI_EP_RDM,
	.protocol = FI_PROTO_SHM,
	.protocol_version = 1,
	.max_msg_size = 1 << 30,
	.tx_ctx_cnt = 1,
	.rx_ctx_cnt = 1,
};
static struct fi_domain_attr rdm_dom = {
	.name = "mock0",
	.threading = FI_THREAD_SAFE,
	.control_progress = FI_PROGRESS_AUTO,
	.data_progress = FI_PROGRESS_MANUAL,
	.resource_mgmt = FI_RM_ENABLED,
	.av_type = FI_AV_UNSPEC,
	.mr_mode = FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY,
	.mr_key_size = 8,
	.cq_data_size = 8,
	.cq_cnt = 64,
	.ep_cnt = 64,
	.tx_ctx_cnt = 64,
	.rx_ctx_cnt = 64,
	.max_ep_tx_ctx = 1,
	.max_ep_rx_ctx = 1,
	.cntr_cnt = 64,
	.mr_iov_limit = 1,
	.caps = FI_LOCAL_COMM,
	.mr_cnt = 1024,
};
static struct fi_fabric_attr mock_fab = { .name = "mockfab" };
static struct fi_info rdm_info = {
	.caps = FI_MSG | FI_TAGGED | FI_RMA | FI_SEND | FI_RECV | FI_READ |
		FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE | FI_MULTI_RECV |
		FI_SOURCE | FI_DIRECTED_RECV | FI_LOCAL_COMM,
	.mode = FI_CONTEXT,
	.addr_format = FI_ADDR_STR,
	.tx_attr = &rdm_tx,
	.rx_attr = &rdm_rx,
	.ep_attr = &rdm_ep,
	.domain_attr = &rdm_dom,
	.fabric_attr = &mock_fab,
};

static struct fi_tx_attr msg_tx = { .caps = FI_MSG | FI_SEND, .size = 64,
				    .iov_limit = 1, .inject_size = 64 };
static struct fi_rx_attr msg_rx = { .caps = FI_MSG | FI_RECV, .size = 64,
				    .iov_limit = 1 };
static struct fi_ep_attr msg_ep = { .type = FI_EP_MSG,
				    .protocol = FI_PROTO_SOCK_TCP,
				    .max_msg_size = 1 << 20,
				    .tx_ctx_cnt = 1,
				    .rx_ctx_cnt = 1 };
static struct fi_domain_attr msg_dom = {
	.name = "mock0",
	.threading = FI_THREAD_DOMAIN,
	.control_progress = FI_PROGRESS_MANUAL,
	.data_progress = FI_PROGRESS_MANUAL,
	.av_type = FI_AV_TABLE,
	.mr_mode = FI_MR_LOCAL,
	.caps = FI_LOCAL_COMM | FI_REMOTE_COMM,
};
static struct fi_info msg_info = {
	.caps = FI_MSG | FI_SEND | FI_RECV | FI_LOCAL_COMM | FI_REMOTE_COMM,
	.addr_format = FI_SOCKADDR_IN,
	.tx_attr = &msg_tx,
	.rx_attr = &msg_rx,
	.ep_attr = &msg_ep,
	.domain_attr = &msg_dom,
	.fabric_attr = &mock_fab,
};

static struct fi_provider mock_prov;

/* Addresses for FI_ADDR_STR candidates: "fi_mock://node:service". */
static int mock_resolve(const struct util_prov *uprov, uint32_t version,
			const char *node, const char *service, uint64_t flags,
			const struct fi_info *hints, struct fi_info *out)
{
	char buf[128];
	char **slot;
	size_t *len;

	if (out->addr_format != FI_ADDR_STR || (!node && !service))
		return 0;
	if (node && !strcmp(node, "unreachable")) {
		weft_explain(uprov->prov, "cannot reach %s", node);
		return -FI_ENODATA;
	}
	snprintf(buf, sizeof(buf), "fi_mock://%s:%s", node ? node : "local",
		 service ? service : "0");
	slot = (char **)((flags & FI_SOURCE) ? &out->src_addr : &out->dest_addr);
	len = (flags & FI_SOURCE) ? &out->src_addrlen : &out->dest_addrlen;
	free(*slot);
	*slot = strdup(buf);
	*len = strlen(buf) + 1;
	return *slot ? 0 : -FI_ENOMEM;
}

static struct util_prov mock_util = { .prov = &mock_prov,
				      .resolve = mock_resolve };

static int mock_getinfo(uint32_t version, const char *node,
			const char *service, uint64_t flags,
			const struct fi_info *hints, struct fi_info **info)
{
	rdm_info.next = &msg_info;
	mock_util.info = &rdm_info;
	return util_getinfo(&mock_util, version, node, service, flags, hints,
			    info);
}

static struct fi_provider mock_prov = {
	.version = FI_VERSION(117, 0),
	.fi_version = FI_VERSION(1, 17),
	.name = "mock",
	.getinfo = mock_getinfo,
};
WEFT_PROVIDER(mock_prov);

/* ---- capture warnings through the public logging import ---- */

static char captured[4096];
static char last_msg[512];

static int cap_enabled(const struct fi_provider *prov, enum fi_log_level level,
		       enum fi_log_subsys subsys, uint64_t flags)
{
	return level == FI_LOG_WARN;
}

static void cap_log(const struct fi_provider *prov, enum fi_log_level level,
		    enum fi_log_subsys subsys, const char *func, int line,
		    const char *msg)
{
	snprintf(last_msg, sizeof(last_msg), "%s", msg);
	strncat(captured, msg, sizeof(captured) - strlen(captured) - 1);
	strncat(captured, "\n", sizeof(captured) - strlen(captured) - 1);
}

static struct fi_ops_log cap_ops = {
	.size = sizeof(struct fi_ops_log),
	.enabled = cap_enabled,
	.log = cap_log,
};
static struct fid_logging cap_fid = { .ops = &cap_ops };

static void capture_start(void)
{
	captured[0] = '\0';
	/* One import at a time: end the previous capture first. */
	if (cap_fid.fid.ops)
		cr_assert_eq(fi_close(&cap_fid.fid), 0);
	cr_assert_eq(fi_import_log(FI_VERSION(1, 17), 0, &cap_fid), 0);
}

static struct fi_info *hints_new(void)
{
	struct fi_info *h = fi_allocinfo();

	cr_assert_not_null(h);
	return h;
}

static int count(const struct fi_info *info)
{
	int n = 0;

	for (; info; info = info->next)
		n++;
	return n;
}

Test(getinfo, null_hints_lists_every_candidate)
{
	struct fi_info *info;

	cr_assert_eq(fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, NULL, &info),
		     0);
	cr_assert_eq(count(info), 2);
	cr_assert_eq(info->ep_attr->type, FI_EP_RDM);
	cr_assert_str_eq(info->fabric_attr->prov_name, "mock");
	cr_assert_eq(info->fabric_attr->prov_version, FI_VERSION(117, 0));
	cr_assert_eq(info->fabric_attr->api_version, FI_VERSION(1, 17));
	cr_assert_eq(info->mode, FI_CONTEXT);
	cr_assert_eq(info->caps, rdm_info.caps);
	fi_freeinfo(info);
}

Test(getinfo, ep_type_selects)
{
	struct fi_info *h = hints_new(), *info;

	h->ep_attr->type = FI_EP_MSG;
	h->domain_attr->mr_mode = FI_MR_LOCAL;
	cr_assert_eq(fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, h, &info), 0);
	cr_assert_eq(count(info), 1);
	cr_assert_eq(info->ep_attr->type, FI_EP_MSG);
	fi_freeinfo(info);
	fi_freeinfo(h);
}

Test(getinfo, caps_narrowed_to_request)
{
	struct fi_info *h = hints_new(), *info;

	h->caps = FI_TAGGED;
	h->mode = FI_CONTEXT;
	h->domain_attr->mr_mode = FI_MR_VIRT_ADDR | FI_MR_ALLOCATED |
				  FI_MR_PROV_KEY;
	cr_assert_eq(fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, h, &info), 0);
	cr_assert_eq(count(info), 1);
	/* Tagged with its implied modifiers; RMA not asked for, not given;
	 * FI_SOURCE costs something and was not asked for. */
	cr_assert(info->caps & FI_TAGGED);
	cr_assert(info->caps & FI_SEND);
	cr_assert(info->caps & FI_RECV);
	cr_assert_not(info->caps & FI_RMA);
	cr_assert_not(info->caps & FI_MSG);
	cr_assert_not(info->caps & FI_SOURCE);
	cr_assert(info->caps & FI_MULTI_RECV);
	cr_assert_not(info->rx_attr->caps & FI_RMA);
	fi_freeinfo(info);
	fi_freeinfo(h);
}

Test(getinfo, unsupported_cap_is_explained)
{
	struct fi_info *h = hints_new(), *info = (void *)1;

	h->caps = FI_MSG | FI_ATOMIC;
	h->mode = FI_CONTEXT;
	h->domain_attr->mr_mode = ~0 & ~(FI_MR_BASIC | FI_MR_SCALABLE);
	capture_start();
	cr_assert_eq(fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, h, &info),
		     -FI_ENODATA);
	cr_assert_null(info);
	cr_assert(strstr(captured, "mock: FI_ATOMIC is not supported"),
		  "log was: %s", captured);
	fi_freeinfo(h);
}

Test(getinfo, mode_zero_rejects_provider_needing_context)
{
	struct fi_info *h = hints_new(), *info;

	h->caps = FI_TAGGED; /* only the RDM candidate offers it */
	h->domain_attr->mr_mode = FI_MR_VIRT_ADDR | FI_MR_ALLOCATED |
				  FI_MR_PROV_KEY;
	capture_start();
	cr_assert_eq(fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, h, &info),
		     -FI_ENODATA);
	cr_assert(strstr(captured, "mock: requires mode") &&
			  strstr(captured, "FI_CONTEXT"),
		  "log was: %s", captured);

	/* FI_CONTEXT2 holds an fi_context: it serves, and is reported. */
	h->mode = FI_CONTEXT2;
	cr_assert_eq(fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, h, &info), 0);
	cr_assert_eq(info->mode & (FI_CONTEXT | FI_CONTEXT2), FI_CONTEXT2);
	fi_freeinfo(info);
	fi_freeinfo(h);
}

Test(getinfo, mr_mode_rules)
{
	struct fi_info *h = hints_new(), *info;

	h->caps = FI_RMA;
	h->mode = FI_CONTEXT;
	/* 1.5+: no mr_mode bit supported: the RDM candidate needs some. */
	cr_assert_eq(fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, h, &info),
		     -FI_ENODATA);
	/* FI_MR_BASIC stands for exactly the bits it needs. */
	h->domain_attr->mr_mode = FI_MR_BASIC;
	cr_assert_eq(fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, h, &info), 0);
	cr_assert_eq(info->domain_attr->mr_mode, FI_MR_BASIC);
	fi_freeinfo(info);
	/* FI_MR_SCALABLE cannot be met. */
	h->domain_attr->mr_mode = FI_MR_SCALABLE;
	cr_assert_eq(fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, h, &info),
		     -FI_ENODATA);
	/* Before 1.5 an unspecified mode means basic or scalable. */
	h->domain_attr->mr_mode = FI_MR_UNSPEC;
	cr_assert_eq(fi_getinfo(FI_VERSION(1, 4), NULL, NULL, 0, h, &info), 0);
	cr_assert_eq(info->domain_attr->mr_mode, FI_MR_BASIC);
	cr_assert_eq(info->fabric_attr->api_version, FI_VERSION(1, 4));
	fi_freeinfo(info);
	/* The bits themselves, with extra ones the application allows. */
	h->domain_attr->mr_mode = FI_MR_VIRT_ADDR | FI_MR_ALLOCATED |
				  FI_MR_PROV_KEY | FI_MR_LOCAL | FI_MR_ENDPOINT;
	cr_assert_eq(fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, h, &info), 0);
	cr_assert_eq(info->domain_attr->mr_mode,
		     FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY);
	fi_freeinfo(info);
	fi_freeinfo(h);
}

Test(getinfo, threading_and_progress)
{
	struct fi_info *h = hints_new(), *info;

	h->mode = FI_CONTEXT;
	h->domain_attr->mr_mode = ~0 & ~(FI_MR_BASIC | FI_MR_SCALABLE);
	h->domain_attr->threading = FI_THREAD_SAFE;
	cr_assert_eq(fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, h, &info), 0);
	/* Only the RDM candidate is thread safe. */
	cr_assert_eq(count(info), 1);
	cr_assert_eq(info->domain_attr->threading, FI_THREAD_SAFE);
	fi_freeinfo(info);

	h->domain_attr->threading = FI_THREAD_DOMAIN;
	cr_assert_eq(fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, h, &info), 0);
	cr_assert_eq(count(info), 2);
	cr_assert_eq(info->domain_attr->threading, FI_THREAD_DOMAIN);
	fi_freeinfo(info);

	/* Automatic data progress: neither candidate offers it. */
	h->domain_attr->data_progress = FI_PROGRESS_AUTO;
	capture_start();
	cr_assert_eq(fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, h, &info),
		     -FI_ENODATA);
	cr_assert(strstr(captured, "data progress"), "log was: %s", captured);
	/* Manual control progress is served by automatic. */
	h->domain_attr->data_progress = FI_PROGRESS_UNSPEC;
	h->domain_attr->control_progress = FI_PROGRESS_MANUAL;
	cr_assert_eq(fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, h, &info), 0);
	cr_assert_eq(count(info), 2);
	cr_assert_eq(info->domain_attr->control_progress, FI_PROGRESS_MANUAL);
	fi_freeinfo(info);
	fi_freeinfo(h);
}

Test(getinfo, limits_and_attributes)
{
	struct fi_info *h = hints_new(), *info;

	h->mode = FI_CONTEXT;
	h->domain_attr->mr_mode = ~0 & ~(FI_MR_BASIC | FI_MR_SCALABLE);
	h->tx_attr->inject_size = 257;
	capture_start();
	cr_assert_eq(fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, h, &info),
		     -FI_ENODATA);
	cr_assert(strstr(captured, "inject_size 257"), "log was: %s",
		  captured);
	h->tx_attr->inject_size = 256;
	h->domain_attr->cq_data_size = 8;
	h->ep_attr->max_msg_size = 1 << 30;
	h->rx_attr->msg_order = FI_ORDER_SAS;
	h->domain_attr->av_type = FI_AV_MAP;
	cr_assert_eq(fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, h, &info), 0);
	cr_assert_eq(count(info), 1);
	cr_assert_eq(info->domain_attr->av_type, FI_AV_MAP);
	fi_freeinfo(info);

	h->domain_attr->av_type = FI_AV_UNSPEC;
	h->rx_attr->msg_order = FI_ORDER_RAW;
	cr_assert_eq(fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, h, &info),
		     -FI_ENODATA);
	h->rx_attr->msg_order = 0;
	h->domain_attr->name = strdup("nosuch");
	capture_start();
	cr_assert_eq(fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, h, &info),
		     -FI_ENODATA);
	cr_assert(strstr(captured, "domain \"nosuch\" not found"),
		  "log was: %s", captured);
	free(h->domain_attr->name);
	h->domain_attr->name = strdup("mock0");
	h->fabric_attr->name = strdup("otherfab");
	cr_assert_eq(fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, h, &info),
		     -FI_ENODATA);
	fi_freeinfo(h);
}

Test(getinfo, addr_format_and_addresses)
{
	struct fi_info *h = hints_new(), *info;
	char addr[] = "fi_shm://peer";

	h->mode = FI_CONTEXT;
	h->domain_attr->mr_mode = ~0 & ~(FI_MR_BASIC | FI_MR_SCALABLE);
	h->addr_format = FI_SOCKADDR_IN6;
	cr_assert_eq(fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, h, &info),
		     -FI_ENODATA);
	/* FI_SOCKADDR is any socket address: the MSG entry's IPv4 one. */
	h->addr_format = FI_SOCKADDR;
	cr_assert_eq(fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, h, &info), 0);
	cr_assert_eq(count(info), 1);
	cr_assert_eq(info->addr_format, FI_SOCKADDR_IN);
	fi_freeinfo(info);
	h->addr_format = FI_ADDR_STR;
	h->dest_addr = strdup(addr);
	h->dest_addrlen = sizeof(addr);
	cr_assert_eq(fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, h, &info), 0);
	cr_assert_eq(count(info), 1);
	cr_assert_eq(info->dest_addrlen, sizeof(addr));
	cr_assert_str_eq(info->dest_addr, addr);
	fi_freeinfo(info);
	fi_freeinfo(h);
}

Test(getinfo, provider_selection)
{
	struct fi_info *h = hints_new(), *info;

	h->mode = FI_CONTEXT;
	h->domain_attr->mr_mode = ~0 & ~(FI_MR_BASIC | FI_MR_SCALABLE);
	h->fabric_attr->prov_name = strdup("mock;ofi_rxm");
	cr_assert_eq(fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, h, &info), 0);
	/* Clients compare the name they get back with the one they asked. */
	cr_assert_str_eq(info->fabric_attr->prov_name, "mock;ofi_rxm");
	fi_freeinfo(info);
	free(h->fabric_attr->prov_name);
	h->fabric_attr->prov_name = strdup("nosuch");
	capture_start();
	cr_assert_eq(fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, h, &info),
		     -FI_ENODATA);
	cr_assert(strstr(captured, "no provider is named \"nosuch\""),
		  "log was: %s", captured);
	fi_freeinfo(h);
}

Test(getinfo, fi_provider_env)
{
	struct fi_info *info;

	setenv("FI_PROVIDER", "^mock", 1);
	capture_start();
	cr_assert_eq(fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, NULL, &info),
		     -FI_ENODATA);
	cr_assert(strstr(captured, "excludes every provider"), "log was: %s",
		  captured);
	setenv("FI_PROVIDER", "tcp,mock", 1);
	cr_assert_eq(fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, NULL, &info),
		     0);
	fi_freeinfo(info);
	setenv("FI_PROVIDER", "^tcp", 1);
	cr_assert_eq(fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, NULL, &info),
		     0);
	fi_freeinfo(info);
	unsetenv("FI_PROVIDER");
}

Test(getinfo, prov_attr_only_and_versions)
{
	struct fi_info *info;

	cr_assert_eq(fi_getinfo(FI_VERSION(1, 17), NULL, NULL,
				FI_PROV_ATTR_ONLY, NULL, &info),
		     0);
	/* the provider, then the hooks, named as 1.17 names its own */
	cr_assert_eq(count(info), 5);
	cr_assert_str_eq(info->fabric_attr->prov_name, "mock");
	cr_assert_str_eq(info->next->fabric_attr->prov_name, "ofi_hook_perf");
	cr_assert_str_eq(info->next->next->next->next->fabric_attr->prov_name,
			 "ofi_hook_noop");
	fi_freeinfo(info);
	/* one hook asked for by name; a hook is no provider to open */
	{
		struct fi_info *h = fi_allocinfo();

		cr_assert(h);
		h->fabric_attr->prov_name = strdup("ofi_hook_trace");
		cr_assert_eq(fi_getinfo(FI_VERSION(1, 17), NULL, NULL,
					FI_PROV_ATTR_ONLY, h, &info),
			     0);
		cr_assert_eq(count(info), 1);
		cr_assert_str_eq(info->fabric_attr->prov_name,
				 "ofi_hook_trace");
		fi_freeinfo(info);
		cr_assert_eq(fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, h,
					&info),
			     -FI_ENODATA);
		fi_freeinfo(h);
	}
	/* every version up to weft's own (2.6), none past it */
	cr_assert_eq(fi_getinfo(FI_VERSION(1, 18), NULL, NULL, 0, NULL, &info),
		     0);
	cr_assert_eq(info->fabric_attr->api_version, FI_VERSION(1, 18));
	fi_freeinfo(info);
	cr_assert_eq(fi_getinfo(FI_VERSION(2, 6), NULL, NULL, 0, NULL, &info),
		     0);
	cr_assert_eq(info->fabric_attr->api_version, FI_VERSION(2, 6));
	fi_freeinfo(info);
	cr_assert_eq(fi_getinfo(FI_VERSION(2, 7), NULL, NULL, 0, NULL, &info),
		     -FI_ENOSYS);
	cr_assert_eq(fi_getinfo(FI_VERSION(3, 0), NULL, NULL, 0, NULL, &info),
		     -FI_ENOSYS);
	/* Versions before 1.0 are accepted, as 1.17 does: MPICH passes 0. */
	cr_assert_eq(fi_getinfo(0, NULL, NULL, 0, NULL, &info), 0);
	cr_assert_eq(info->fabric_attr->api_version, 0);
	cr_assert_eq(info->domain_attr->mr_mode, FI_MR_BASIC);
	fi_freeinfo(info);
	cr_assert_eq(fi_getinfo(FI_VERSION(0, 9), NULL, NULL, 0, NULL, &info),
		     0);
	fi_freeinfo(info);
	cr_assert_eq(fi_getinfo(FI_VERSION(1, 17), NULL, NULL, FI_SOURCE, NULL,
				&info),
		     -FI_EINVAL);
}

Test(getinfo, dupinfo_is_deep)
{
	struct fi_info *info, *dup;

	cr_assert_eq(fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, NULL, &info),
		     0);
	dup = fi_dupinfo(info);
	cr_assert_not_null(dup);
	cr_assert_null(dup->next);
	cr_assert_neq(dup->domain_attr, info->domain_attr);
	cr_assert_neq(dup->domain_attr->name, info->domain_attr->name);
	cr_assert_str_eq(dup->domain_attr->name, info->domain_attr->name);
	cr_assert_str_eq(dup->fabric_attr->prov_name, "mock");
	fi_freeinfo(info);
	/* Still intact after the original is gone. */
	cr_assert_str_eq(dup->domain_attr->name, "mock0");
	fi_freeinfo(dup);
}

Test(getinfo, node_service_and_fi_source)
{
	struct fi_info *h = hints_new(), *info;

	h->mode = FI_CONTEXT;
	h->domain_attr->mr_mode = ~0 & ~(FI_MR_BASIC | FI_MR_SCALABLE);
	h->ep_attr->type = FI_EP_RDM;
	cr_assert_eq(fi_getinfo(FI_VERSION(1, 17), "peer", "77", 0, h, &info),
		     0);
	cr_assert_str_eq(info->dest_addr, "fi_mock://peer:77");
	cr_assert_null(info->src_addr);
	fi_freeinfo(info);
	cr_assert_eq(fi_getinfo(FI_VERSION(1, 17), "me", "5", FI_SOURCE, h,
				&info),
		     0);
	cr_assert_str_eq(info->src_addr, "fi_mock://me:5");
	cr_assert_null(info->dest_addr);
	fi_freeinfo(info);
	capture_start();
	cr_assert_eq(fi_getinfo(FI_VERSION(1, 17), "unreachable", NULL, 0, h,
				&info),
		     -FI_ENODATA);
	cr_assert(strstr(captured, "mock: cannot reach unreachable"),
		  "log was: %s", captured);
	fi_freeinfo(h);
}

Test(getinfo, local_and_remote_comm)
{
	struct fi_info *h = hints_new(), *info;

	h->mode = FI_CONTEXT;
	h->domain_attr->mr_mode = ~0 & ~(FI_MR_BASIC | FI_MR_SCALABLE);
	/* Only the MSG candidate reaches other hosts. */
	h->caps = FI_MSG | FI_REMOTE_COMM;
	cr_assert_eq(fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, h, &info), 0);
	cr_assert_eq(count(info), 1);
	cr_assert_eq(info->ep_attr->type, FI_EP_MSG);
	cr_assert(info->caps & FI_REMOTE_COMM);
	fi_freeinfo(info);
	/* Asking for neither: both candidates, each saying what it reaches. */
	h->caps = FI_MSG;
	cr_assert_eq(fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, h, &info), 0);
	cr_assert_eq(count(info), 2);
	cr_assert_eq(info->caps & (FI_LOCAL_COMM | FI_REMOTE_COMM),
		     FI_LOCAL_COMM);
	fi_freeinfo(info);
	fi_freeinfo(h);
}

#ifdef WEFT_MISSING_TCP
Test(getinfo, provider_left_out_of_the_build_says_why)
{
	struct fi_info *h = hints_new(), *info;

	h->fabric_attr->prov_name = strdup("tcp;ofi_rxm");
	capture_start();
	cr_assert_eq(fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, h, &info),
		     -FI_ENODATA);
	cr_assert(strstr(captured, "the tcp provider is not built into this "
				   "library: " WEFT_MISSING_TCP),
		  "log was: %s", captured);
	fi_freeinfo(h);
}
#endif

Test(getinfo, automatic_progress_only_on_request)
{
	struct fi_info *h = hints_new(), *info;

	mock_util.auto_on_request = true;
	cr_assert_eq(fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, NULL, &info),
		     0);
	/* The RDM candidate offers automatic control progress. */
	cr_assert_eq(info->domain_attr->control_progress, FI_PROGRESS_MANUAL);
	fi_freeinfo(info);
	h->mode = FI_CONTEXT;
	h->domain_attr->mr_mode = ~0 & ~(FI_MR_BASIC | FI_MR_SCALABLE);
	h->domain_attr->control_progress = FI_PROGRESS_AUTO;
	cr_assert_eq(fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, h, &info), 0);
	cr_assert_eq(count(info), 1);
	cr_assert_eq(info->domain_attr->control_progress, FI_PROGRESS_AUTO);
	fi_freeinfo(info);
	mock_util.auto_on_request = false;
	fi_freeinfo(h);
}

/* Hints outside their enum cannot be honoured: refused, and said why. */
Test(getinfo, values_outside_enums_are_refused)
{
	struct fi_info *h = hints_new(), *info = (void *)1;

	h->mode = FI_CONTEXT;
	h->domain_attr->mr_mode = ~0 & ~(FI_MR_BASIC | FI_MR_SCALABLE);
	cr_assert_eq(fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, h, &info), 0);
	fi_freeinfo(info);

	h->domain_attr->threading = 99;
	capture_start();
	cr_assert_eq(fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, h, &info),
		     -FI_ENODATA);
	cr_assert_null(info);
	cr_assert(strstr(captured, "threading 99 is not a threading model"),
		  "log was: %s", captured);
	h->domain_attr->threading = FI_THREAD_UNSPEC;

	h->domain_attr->resource_mgmt = 99;
	cr_assert_eq(fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, h, &info),
		     -FI_ENODATA);
	h->domain_attr->resource_mgmt = FI_RM_UNSPEC;

	h->domain_attr->av_type = 99;
	cr_assert_eq(fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, h, &info),
		     -FI_ENODATA);
	fi_freeinfo(h);
}

/* Neither candidate offers FI_COLLECTIVE: asked for anywhere, refused. */
Test(getinfo, collective_is_refused)
{
	struct fi_info *h = hints_new(), *info = (void *)1;

	h->mode = FI_CONTEXT;
	h->domain_attr->mr_mode = ~0 & ~(FI_MR_BASIC | FI_MR_SCALABLE);
	h->caps = FI_MSG | FI_COLLECTIVE;
	capture_start();
	cr_assert_eq(fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, h, &info),
		     -FI_ENODATA);
	cr_assert_null(info);
	cr_assert(strstr(captured, "FI_COLLECTIVE is not supported"),
		  "log was: %s", captured);
	h->caps = FI_MSG;
	h->tx_attr->caps = FI_MSG | FI_COLLECTIVE;
	cr_assert_eq(fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, h, &info),
		     -FI_ENODATA);
	fi_freeinfo(h);
}

/*
 * fi_endpoint checks the info it is given against the provider: bits the
 * application added that a candidate offers pass, others are refused.
 */
Test(getinfo, endpoint_open_refuses_caps_not_offered)
{
	struct fi_info *h = hints_new(), *info;
	uint64_t caps;

	h->mode = FI_CONTEXT;
	h->domain_attr->mr_mode = ~0 & ~(FI_MR_BASIC | FI_MR_SCALABLE);
	h->caps = FI_MSG;
	h->ep_attr->type = FI_EP_RDM;
	cr_assert_eq(fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, h, &info), 0);
	rdm_info.next = &msg_info;
	mock_util.info = &rdm_info;
	cr_assert_eq(util_prov_check_ep(&mock_util, info), 0);
	caps = info->caps;
	info->caps = caps | FI_TAGGED; /* offered, not asked for */
	cr_assert_eq(util_prov_check_ep(&mock_util, info), 0);
	capture_start();
	info->caps = caps | FI_COLLECTIVE;
	cr_assert_eq(util_prov_check_ep(&mock_util, info), -FI_ENODATA);
	cr_assert(strstr(captured, "FI_COLLECTIVE is not supported"),
		  "log was: %s", captured);
	info->caps = caps | FI_ATOMIC;
	cr_assert_eq(util_prov_check_ep(&mock_util, info), -FI_ENODATA);
	info->caps = caps;
	info->tx_attr->caps |= FI_COLLECTIVE;
	cr_assert_eq(util_prov_check_ep(&mock_util, info), -FI_ENODATA);
	info->tx_attr->caps &= ~FI_COLLECTIVE;
	info->rx_attr->caps |= FI_ATOMIC;
	cr_assert_eq(util_prov_check_ep(&mock_util, info), -FI_ENODATA);
	info->rx_attr->caps &= ~FI_ATOMIC;
	/* a protocol outside the enum, which no candidate speaks */
	info->ep_attr->protocol = 99;
	cr_assert_eq(util_prov_check_ep(&mock_util, info), -FI_ENODATA);
	info->ep_attr->protocol = FI_PROTO_UNSPEC;
	cr_assert_eq(util_prov_check_ep(&mock_util, info), 0);
	/* an endpoint type no candidate has */
	info->ep_attr->type = FI_EP_DGRAM;
	cr_assert_eq(util_prov_check_ep(&mock_util, info), -FI_ENODATA);
	fi_freeinfo(info);
	fi_freeinfo(h);
}

/* fi_domain likewise: a threading model outside the enum or stronger than
 * offered, and capabilities not offered, are refused. */
Test(getinfo, domain_open_refuses_what_is_not_offered)
{
	struct fi_info *h = hints_new(), *info;

	h->mode = FI_CONTEXT;
	h->domain_attr->mr_mode = ~0 & ~(FI_MR_BASIC | FI_MR_SCALABLE);
	h->ep_attr->type = FI_EP_MSG;
	cr_assert_eq(fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, h, &info), 0);
	rdm_info.next = &msg_info;
	mock_util.info = &msg_info; /* FI_THREAD_DOMAIN only */
	cr_assert_eq(util_prov_check_domain(&mock_util, info), 0);
	info->domain_attr->threading = 99;
	capture_start();
	cr_assert_eq(util_prov_check_domain(&mock_util, info), -FI_ENODATA);
	cr_assert(strstr(captured, "threading 99 is not a threading model"),
		  "log was: %s", captured);
	info->domain_attr->threading = FI_THREAD_SAFE;
	cr_assert_eq(util_prov_check_domain(&mock_util, info), -FI_ENODATA);
	info->domain_attr->threading = FI_THREAD_DOMAIN;
	info->caps |= FI_COLLECTIVE;
	cr_assert_eq(util_prov_check_domain(&mock_util, info), -FI_ENODATA);
	info->caps &= ~FI_COLLECTIVE;
	info->domain_attr->caps |= FI_COLLECTIVE;
	cr_assert_eq(util_prov_check_domain(&mock_util, info), -FI_ENODATA);
	info->domain_attr->caps &= ~FI_COLLECTIVE;
	cr_assert_eq(util_prov_check_domain(&mock_util, info), 0);
	/* the other enums of the domain attributes, outside their range */
	info->domain_attr->control_progress = 99;
	cr_assert_eq(util_prov_check_domain(&mock_util, info), -FI_ENODATA);
	info->domain_attr->control_progress = FI_PROGRESS_UNSPEC;
	info->domain_attr->data_progress = 99;
	cr_assert_eq(util_prov_check_domain(&mock_util, info), -FI_ENODATA);
	info->domain_attr->data_progress = FI_PROGRESS_UNSPEC;
	info->domain_attr->resource_mgmt = 99;
	cr_assert_eq(util_prov_check_domain(&mock_util, info), -FI_ENODATA);
	info->domain_attr->resource_mgmt = FI_RM_UNSPEC;
	info->domain_attr->av_type = 99;
	cr_assert_eq(util_prov_check_domain(&mock_util, info), -FI_ENODATA);
	info->domain_attr->av_type = FI_AV_UNSPEC;
	cr_assert_eq(util_prov_check_domain(&mock_util, info), 0);
	mock_util.info = &rdm_info;
	fi_freeinfo(info);
	fi_freeinfo(h);
}

/*
 * Bits with no meaning on one side are ignored there, as 1.17 ignores
 * them: OpenSHMEM copies its whole caps, FI_RECV and FI_RMA_EVENT among
 * them, into tx_attr->caps, and transmit bits end up in rx_attr->caps.
 */
Test(getinfo, caps_of_the_other_side_are_ignored)
{
	struct fi_info *h = hints_new(), *info;
	uint64_t all = FI_MSG | FI_TAGGED | FI_RMA | FI_SEND | FI_RECV |
		       FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE |
		       FI_MULTI_RECV | FI_SOURCE | FI_DIRECTED_RECV;

	h->caps = all;
	h->mode = FI_CONTEXT;
	h->domain_attr->mr_mode = ~0 & ~(FI_MR_BASIC | FI_MR_SCALABLE);
	h->tx_attr->caps = all;
	h->rx_attr->caps = all;
	cr_assert_eq(fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, h, &info), 0);
	cr_assert_eq(info->ep_attr->type, FI_EP_RDM);
	/* What comes back on each side is only what applies there. */
	cr_assert_eq(info->tx_attr->caps & (FI_RECV | FI_REMOTE_WRITE |
					    FI_MULTI_RECV | FI_SOURCE), 0);
	cr_assert_eq(info->rx_attr->caps & (FI_SEND | FI_READ | FI_WRITE), 0);
	cr_assert(info->tx_attr->caps & FI_SEND);
	cr_assert(info->rx_attr->caps & FI_RECV);

	/* fi_endpoint's check takes the same info back. */
	info->tx_attr->caps |= FI_RECV | FI_REMOTE_WRITE | FI_RMA_EVENT;
	info->rx_attr->caps |= FI_SEND | FI_WRITE | FI_FENCE;
	cr_assert_eq(util_prov_check_ep(&mock_util, info), 0);
	/* A bit that applies to the side and is not offered still fails. */
	info->tx_attr->caps |= FI_ATOMIC;
	cr_assert_eq(util_prov_check_ep(&mock_util, info), -FI_ENODATA);
	fi_freeinfo(info);

	h->tx_attr->caps = all | FI_ATOMIC;
	cr_assert_eq(fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, h, &info),
		     -FI_ENODATA);
	fi_freeinfo(h);
}

/*
 * Under a layered name the entries look as 1.17's utility provider makes
 * them: RDM only, FI_PROTO_RXM, and that is the protocol clients ask for
 * (Mercury: "tcp;ofi_rxm" with ep_attr->protocol = FI_PROTO_RXM).
 */
Test(getinfo, layered_name_looks_like_1_17)
{
	struct fi_info *h = hints_new(), *info, *fi;

	h->mode = FI_CONTEXT;
	h->domain_attr->mr_mode = ~0 & ~(FI_MR_BASIC | FI_MR_SCALABLE);
	h->fabric_attr->prov_name = strdup("mock;ofi_rxm");
	cr_assert_eq(fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, h, &info), 0);
	for (fi = info; fi; fi = fi->next) {
		cr_assert_eq(fi->ep_attr->type, FI_EP_RDM);
		cr_assert_eq(fi->ep_attr->protocol, FI_PROTO_RXM);
		cr_assert_eq(fi->ep_attr->protocol_version, 1);
		/* What fi_getinfo gave, fi_endpoint takes. */
		cr_assert_eq(util_prov_check_ep(&mock_util, fi), 0);
	}
	fi_freeinfo(info);

	h->ep_attr->protocol = FI_PROTO_RXM;
	cr_assert_eq(fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, h, &info), 0);
	cr_assert_eq(count(info), 1);
	/* The answer passed back as hints finds itself. */
	free(info->fabric_attr->prov_name);
	info->fabric_attr->prov_name = strdup("mock;ofi_rxm");
	fi = NULL;
	cr_assert_eq(fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, info, &fi),
		     0);
	fi_freeinfo(fi);
	fi_freeinfo(info);

	/* The provider's own protocol is not what the name offers. */
	h->ep_attr->protocol = FI_PROTO_SHM;
	capture_start();
	cr_assert_eq(fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, h, &info),
		     -FI_ENODATA);
	cr_assert(strstr(captured, "protocol FI_PROTO_SHM is not supported by "
				   "mock;ofi_rxm (offers FI_PROTO_RXM)"),
		  "log was: %s", captured);
	h->ep_attr->protocol = FI_PROTO_RXM;
	h->ep_attr->protocol_version = 2;
	cr_assert_eq(fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, h, &info),
		     -FI_ENODATA);
	h->ep_attr->protocol_version = 0;
	/* MSG is not offered under it. */
	h->ep_attr->type = FI_EP_MSG;
	capture_start();
	cr_assert_eq(fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, h, &info),
		     -FI_ENODATA);
	cr_assert(strstr(captured, "mock;ofi_rxm offers only FI_EP_RDM"),
		  "log was: %s", captured);

	/* Under its own name the provider keeps its own protocol. */
	h->ep_attr->type = FI_EP_UNSPEC;
	h->ep_attr->protocol = FI_PROTO_UNSPEC;
	free(h->fabric_attr->prov_name);
	h->fabric_attr->prov_name = strdup("mock");
	cr_assert_eq(fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, h, &info), 0);
	cr_assert_eq(count(info), 2);
	cr_assert_eq(info->ep_attr->protocol, FI_PROTO_SHM);
	fi_freeinfo(info);
	/* NULL hints under a layered name in FI_PROVIDER: the same look. */
	setenv("FI_PROVIDER", "mock", 1);
	cr_assert_eq(fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, NULL, &info),
		     0);
	cr_assert_eq(count(info), 2);
	fi_freeinfo(info);
	unsetenv("FI_PROVIDER");
	fi_freeinfo(h);
}

/* An imported logger gets whole lines, as from 1.17 (Mercury prints them
 * as they come). */
Test(getinfo, explanations_are_whole_lines)
{
	struct fi_info *h = hints_new(), *info;

	h->caps = FI_COLLECTIVE;
	capture_start();
	cr_assert_eq(fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, h, &info),
		     -FI_ENODATA);
	cr_assert(strstr(last_msg, "is not supported"), "last: %s", last_msg);
	cr_assert_eq(last_msg[strlen(last_msg) - 1], '\n', "last: %s",
		     last_msg);
	fi_freeinfo(h);
}

/*
 * What later API versions changed in the hints, as their callers mean it:
 * bits 45, 46 and 48 are receive caps from 2.0 on (FI_TAGGED_DIRECTED_RECV,
 * FI_TAGGED_MULTI_RECV, FI_EXACT_DIRECTED_RECV; in 1.x: two MR flags and
 * FI_VARIABLE_MSG), FI_MR_BASIC and FI_MR_SCALABLE are gone from 2.0, and
 * 1.21 added FI_PROGRESS_CONTROL_UNIFIED (3).
 */
Test(getinfo, later_api_versions)
{
	const uint64_t tagged_directed = 1ULL << 45, tagged_multi = 1ULL << 46,
		       exact_directed = 1ULL << 48;
	struct fi_info *h = hints_new(), *info, *cur;

	h->mode = FI_CONTEXT;
	h->domain_attr->mr_mode =
		FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY;

	h->caps = FI_TAGGED | tagged_directed | tagged_multi;
	cr_assert_eq(fi_getinfo(FI_VERSION(2, 0), NULL, NULL, 0, h, &info), 0);
	cr_assert_eq(count(info), 1);
	cr_assert_eq(info->caps & (tagged_directed | tagged_multi),
		     tagged_directed | tagged_multi);
	cr_assert(info->caps & FI_TAGGED);
	cr_assert_eq(info->rx_attr->caps & (tagged_directed | tagged_multi),
		     tagged_directed | tagged_multi);
	fi_freeinfo(info);
	/* to a 1.x caller these bits are no caps: nothing offers them */
	cr_assert_eq(fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, h, &info),
		     -FI_ENODATA);

	h->caps = FI_MSG | exact_directed;
	cr_assert_eq(fi_getinfo(FI_VERSION(2, 6), NULL, NULL, 0, h, &info), 0);
	for (cur = info; cur; cur = cur->next) {
		cr_assert(cur->caps & exact_directed);
		cr_assert(cur->caps & FI_DIRECTED_RECV);
	}
	fi_freeinfo(info);
	/* FI_VARIABLE_MSG to 1.20, which the mock does not offer */
	cr_assert_eq(fi_getinfo(FI_VERSION(1, 20), NULL, NULL, 0, h, &info),
		     -FI_ENODATA);

	/* answers to a 2.x caller never carry bits it did not ask for */
	h->caps = FI_MSG;
	cr_assert_eq(fi_getinfo(FI_VERSION(2, 6), NULL, NULL, 0, h, &info), 0);
	for (cur = info; cur; cur = cur->next)
		cr_assert_eq(cur->caps & (tagged_directed | tagged_multi |
					  exact_directed),
			     0);
	fi_freeinfo(info);

	/* FI_MR_BASIC: a 1.x value, refused to 2.x callers with a reason */
	h->domain_attr->mr_mode = FI_MR_BASIC;
	capture_start();
	cr_assert_eq(fi_getinfo(FI_VERSION(2, 0), NULL, NULL, 0, h, &info),
		     -FI_ENODATA);
	cr_assert(strstr(captured, "FI_MR_BASIC"), "log was: %s", captured);
	h->domain_attr->mr_mode = FI_MR_SCALABLE;
	cr_assert_eq(fi_getinfo(FI_VERSION(2, 6), NULL, NULL, 0, h, &info),
		     -FI_ENODATA);

	/* authorization keys: weft has none (1.17 refused a size its
	 * providers did not have; 1.20 added FI_AV_AUTH_KEY) */
	h->domain_attr->mr_mode =
		FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY;
	h->domain_attr->auth_key_size = SIZE_MAX;
	capture_start();
	cr_assert_eq(fi_getinfo(FI_VERSION(1, 20), NULL, NULL, 0, h, &info),
		     -FI_ENODATA);
	cr_assert(strstr(captured, "FI_AV_AUTH_KEY"), "log was: %s", captured);
	h->domain_attr->auth_key_size = 0;
	h->ep_attr->auth_key_size = 8;
	cr_assert_eq(fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, h, &info),
		     -FI_ENODATA);
	h->ep_attr->auth_key_size = 0;

	/* control progress "as data progress" (1.21) */
	h->domain_attr->mr_mode =
		FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY;
	h->domain_attr->control_progress = (enum fi_progress)3;
	cr_assert_eq(fi_getinfo(FI_VERSION(1, 21), NULL, NULL, 0, h, &info),
		     0);
	for (cur = info; cur; cur = cur->next)
		cr_assert_eq(cur->domain_attr->control_progress, 3);
	fi_freeinfo(info);
	/* not a value before 1.21 */
	cr_assert_eq(fi_getinfo(FI_VERSION(1, 20), NULL, NULL, 0, h, &info),
		     -FI_ENODATA);
	fi_freeinfo(h);
}

/*
 * tx and rx sizes: a candidate's are the most an endpoint takes; a caller
 * that asks a size gets that size, one that asks none gets the provider's
 * default when it is smaller (tcp: 1024 by default, up to 65536 asked, as
 * Mercury's listeners ask 4096).
 */
Test(getinfo, sizes_asked_and_default)
{
	struct fi_info *h = hints_new(), *info;

	h->mode = FI_CONTEXT;
	h->domain_attr->mr_mode =
		FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY;
	h->ep_attr->type = FI_EP_RDM;
	mock_util.size_default = 512;
	cr_assert_eq(fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, h, &info),
		     0);
	cr_assert_eq(info->tx_attr->size, 512);
	cr_assert_eq(info->rx_attr->size, 512);
	fi_freeinfo(info);
	h->tx_attr->size = 800;
	h->rx_attr->size = 1024;
	cr_assert_eq(fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, h, &info),
		     0);
	cr_assert_eq(info->tx_attr->size, 800);
	cr_assert_eq(info->rx_attr->size, 1024);
	fi_freeinfo(info);
	h->tx_attr->size = 1025;
	cr_assert_eq(fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, h, &info),
		     -FI_ENODATA);
	mock_util.size_default = 0;
	h->tx_attr->size = 0;
	h->rx_attr->size = 0;
	cr_assert_eq(fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, h, &info),
		     0);
	cr_assert_eq(info->tx_attr->size, 1024);
	fi_freeinfo(info);
	fi_freeinfo(h);
}
