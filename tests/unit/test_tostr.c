/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * fi_tostr / fi_tostr_r.  The main check prints the same input with weft
 * and with a reference libfabric 1.17 ($REF_LIBDIR/libfabric.so.1, loaded
 * privately) and requires identical text: every value of every enum type,
 * flag combinations, structures filled with varied values, and the fi_info
 * lists the reference's own fi_getinfo returns.  The other checks need no
 * reference: truncation, NULL inputs, unknown types, fid printing.
 */
#include <criterion/criterion.h>

#include <arpa/inet.h>
#include <dlfcn.h>
#include <limits.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "weft/core.h"

#include "ref_lib.h"

#include <rdma/fi_domain.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_trigger.h>

#define OUT_SIZE 65536

/* ---- the reference library ---------------------------------------------- */

typedef char *(*tostr_r_fn)(char *, size_t, const void *, enum fi_type);
typedef int (*getinfo_fn)(uint32_t, const char *, const char *, uint64_t,
			  const struct fi_info *, struct fi_info **);
typedef void (*freeinfo_fn)(struct fi_info *);
typedef struct fi_info *(*dupinfo_fn)(const struct fi_info *);

static struct {
	void *dl;
	tostr_r_fn tostr_r;
	getinfo_fn getinfo;
	freeinfo_fn freeinfo;
	dupinfo_fn dupinfo;
} ref;

/* Load the reference, or skip the calling test when there is none. */
static void ref_load(void)
{
	ref.dl = ref_lib_open();
	ref.tostr_r = (tostr_r_fn)dlsym(ref.dl, "fi_tostr_r");
	ref.getinfo = (getinfo_fn)dlsym(ref.dl, "fi_getinfo");
	ref.freeinfo = (freeinfo_fn)dlsym(ref.dl, "fi_freeinfo");
	ref.dupinfo = (dupinfo_fn)dlsym(ref.dl, "fi_dupinfo");
	cr_assert(ref.tostr_r && ref.getinfo && ref.freeinfo && ref.dupinfo,
		  "reference lacks fi_tostr_r/fi_getinfo/fi_freeinfo/fi_dupinfo");
	cr_assert_neq((void *)ref.tostr_r, (void *)fi_tostr_r,
		      "reference resolved to weft's own fi_tostr_r");
}

static char weft_out[OUT_SIZE], ref_out[OUT_SIZE];
static unsigned int compared;

/* Print data with both libraries; the texts must be equal. */
static void same(const void *data, enum fi_type type, const char *what)
{
	char *w, *r;

	memset(weft_out, 0x5a, sizeof(weft_out));
	memset(ref_out, 0x5a, sizeof(ref_out));
	w = fi_tostr_r(weft_out, sizeof(weft_out), data, type);
	r = ref.tostr_r(ref_out, sizeof(ref_out), data, type);
	cr_assert_eq(w == NULL, r == NULL, "%s (type %d): weft returned %p, "
		     "reference %p", what, type, (void *)w, (void *)r);
	if (!w)
		return;
	cr_assert_eq(w, weft_out);
	cr_assert_str_eq(weft_out, ref_out,
			 "%s (type %d) differs\n--- weft:\n%s\n--- reference:\n%s",
			 what, type, weft_out, ref_out);
	compared++;
}

/* A small deterministic generator for varied field values. */
static uint64_t rng_state = 0x9e3779b97f4a7c15ULL;

static uint64_t rnd(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

/* A value of the kind a size_t field holds: small, huge or random. */
static size_t rnd_size(void)
{
	switch (rnd() % 4) {
	case 0:
		return 0;
	case 1:
		return rnd() % 4096;
	case 2:
		return SIZE_MAX;
	default:
		return (size_t)rnd();
	}
}

/* An enum value: mostly in range, sometimes not. */
static int rnd_enum(int nvals)
{
	switch (rnd() % 6) {
	case 0:
		return -1;
	case 1:
		return nvals + (int)(rnd() % 5);
	case 2:
		return (int)(FI_PROV_SPECIFIC | (rnd() % 8));
	default:
		return (int)(rnd() % (uint64_t)nvals);
	}
}

static const enum fi_type enum_types[] = {
	FI_TYPE_EP_TYPE,       FI_TYPE_ADDR_FORMAT,  FI_TYPE_THREADING,
	FI_TYPE_PROGRESS,      FI_TYPE_PROTOCOL,     FI_TYPE_AV_TYPE,
	FI_TYPE_ATOMIC_TYPE,   FI_TYPE_ATOMIC_OP,    FI_TYPE_EQ_EVENT,
	FI_TYPE_OP_TYPE,       FI_TYPE_COLLECTIVE_OP, FI_TYPE_HMEM_IFACE,
	FI_TYPE_CQ_FORMAT,     FI_TYPE_LOG_LEVEL,    FI_TYPE_LOG_SUBSYS,
};

static const enum fi_type flag_types[] = {
	FI_TYPE_CAPS,	     FI_TYPE_OP_FLAGS,	     FI_TYPE_MSG_ORDER,
	FI_TYPE_MODE,	     FI_TYPE_CQ_EVENT_FLAGS, FI_TYPE_MR_MODE,
};

/* ---- reference comparisons ---------------------------------------------- */

Test(tostr_ref, enum_values)
{
	size_t t;
	int v;

	ref_load();
	for (t = 0; t < WEFT_ARRAY_SIZE(enum_types); t++) {
		for (v = -4; v < 300; v++) {
			/* The high half must not matter: enums are ints. */
			uint64_t data = (uint32_t)v | 0xdead000000000000ULL;

			same(&data, enum_types[t], "enum value");
		}
		for (v = 0; v < 8; v++) {
			uint64_t data = FI_PROV_SPECIFIC | (uint32_t)v;

			same(&data, enum_types[t], "provider-specific value");
			data = (uint64_t)(INT32_MAX - v);
			same(&data, enum_types[t], "large value");
		}
	}
}

Test(tostr_ref, flag_values)
{
	uint64_t data;
	size_t t;
	int b, i;

	ref_load();
	for (t = 0; t < WEFT_ARRAY_SIZE(flag_types); t++) {
		data = 0;
		same(&data, flag_types[t], "no flags");
		data = ~0ULL;
		same(&data, flag_types[t], "all flags");
		for (b = 0; b < 64; b++) {
			data = 1ULL << b;
			same(&data, flag_types[t], "one flag");
			data = ~(1ULL << b);
			same(&data, flag_types[t], "all flags but one");
		}
		for (i = 0; i < 2000; i++) {
			data = rnd() & rnd();
			same(&data, flag_types[t], "flag combination");
		}
	}
}

Test(tostr_ref, version_and_unknown_type)
{
	uint64_t data = 0x123456789abcdefULL;
	int t;

	ref_load();
	/* FI_TYPE_VERSION differs by design: the reference names its 1.17,
	 * weft the API it implements (2.6.0, checked in tostr/known_text) */
	for (t = FI_TYPE_LOG_SUBSYS + 1; t < FI_TYPE_LOG_SUBSYS + 20; t++)
		same(&data, (enum fi_type)t, "unknown type");
	same(&data, (enum fi_type)-1, "negative type");
	same(&data, (enum fi_type)INT_MAX, "huge type");
}

Test(tostr_ref, null_data)
{
	int t;

	ref_load();
	for (t = 0; t <= FI_TYPE_LOG_SUBSYS + 1; t++)
		same(NULL, (enum fi_type)t, "NULL data");
}

static void fill_tx(struct fi_tx_attr *a)
{
	a->caps = rnd() & rnd();
	a->mode = rnd() & rnd();
	a->op_flags = rnd() & rnd();
	a->msg_order = rnd() & rnd();
	a->comp_order = rnd() % 3 ? rnd() & rnd() :
				    (rnd() % 2 ? FI_ORDER_STRICT : 0) |
					    (rnd() % 2 ? FI_ORDER_DATA : 0);
	a->inject_size = rnd_size();
	a->size = rnd_size();
	a->iov_limit = rnd_size();
	a->rma_iov_limit = rnd_size();
	a->tclass = rnd() % 2 ? (uint32_t)rnd() : FI_TC_BULK_DATA;
}

static void fill_rx(struct fi_rx_attr *a)
{
	a->caps = rnd() & rnd();
	a->mode = rnd() & rnd();
	a->op_flags = rnd() & rnd();
	a->msg_order = rnd() & rnd();
	a->comp_order = rnd() & rnd() & (FI_ORDER_STRICT | FI_ORDER_DATA);
	a->total_buffered_recv = rnd_size();
	a->size = rnd_size();
	a->iov_limit = rnd_size();
}

static void fill_ep(struct fi_ep_attr *a)
{
	a->type = (enum fi_ep_type)rnd_enum(FI_EP_SOCK_DGRAM + 1);
	a->protocol = (uint32_t)rnd_enum(FI_PROTO_XNET + 1);
	a->protocol_version = (uint32_t)rnd();
	a->max_msg_size = rnd_size();
	a->msg_prefix_size = rnd_size();
	a->max_order_raw_size = rnd_size();
	a->max_order_war_size = rnd_size();
	a->max_order_waw_size = rnd_size();
	a->mem_tag_format = rnd() % 2 ? rnd() : rnd() % 256;
	a->tx_ctx_cnt = rnd() % 3 ? rnd_size() : FI_SHARED_CONTEXT;
	a->rx_ctx_cnt = rnd() % 3 ? rnd_size() : FI_SHARED_CONTEXT;
	a->auth_key_size = rnd_size();
	a->auth_key = NULL;
}

static char *names[] = { NULL, "", "eth0", "a name with spaces",
			 "192.168.0.0/16", "mlx5_0", "tcp;ofi_rxm" };

static char *rnd_name(void)
{
	return names[rnd() % WEFT_ARRAY_SIZE(names)];
}

static void fill_domain(struct fi_domain_attr *a)
{
	a->domain = (struct fid_domain *)(uintptr_t)(rnd() % 2 ? rnd() : 0);
	a->name = rnd_name();
	a->threading = (enum fi_threading)rnd_enum(FI_THREAD_ENDPOINT + 1);
	a->control_progress = (enum fi_progress)rnd_enum(3);
	a->data_progress = (enum fi_progress)rnd_enum(3);
	a->resource_mgmt = (enum fi_resource_mgmt)rnd_enum(3);
	a->av_type = (enum fi_av_type)rnd_enum(3);
	a->mr_mode = (int)rnd();
	a->mr_key_size = rnd_size();
	a->cq_data_size = rnd_size();
	a->cq_cnt = rnd_size();
	a->ep_cnt = rnd_size();
	a->tx_ctx_cnt = rnd_size();
	a->rx_ctx_cnt = rnd_size();
	a->max_ep_tx_ctx = rnd_size();
	a->max_ep_rx_ctx = rnd_size();
	a->max_ep_stx_ctx = rnd_size();
	a->max_ep_srx_ctx = rnd_size();
	a->cntr_cnt = rnd_size();
	a->mr_iov_limit = rnd_size();
	a->caps = rnd() & rnd();
	a->mode = rnd() & rnd();
	a->auth_key = NULL;
	a->auth_key_size = rnd_size();
	a->max_err_data = rnd_size();
	a->mr_cnt = rnd_size();
	a->tclass = (uint32_t)rnd();
}

static void fill_fabric(struct fi_fabric_attr *a)
{
	a->fabric = (struct fid_fabric *)(uintptr_t)rnd();
	a->name = rnd_name();
	a->prov_name = rnd_name();
	a->prov_version = rnd() % 2 ? (uint32_t)rnd() : FI_VERSION(117, 0);
	a->api_version = rnd() % 2 ? (uint32_t)rnd() : FI_VERSION(1, 17);
}

Test(tostr_ref, attrs)
{
	struct fi_tx_attr tx;
	struct fi_rx_attr rx;
	struct fi_ep_attr ep;
	struct fi_domain_attr dom;
	struct fi_fabric_attr fab;
	int i;

	ref_load();
	memset(&tx, 0, sizeof(tx));
	memset(&rx, 0, sizeof(rx));
	memset(&ep, 0, sizeof(ep));
	memset(&dom, 0, sizeof(dom));
	memset(&fab, 0, sizeof(fab));
	same(&tx, FI_TYPE_TX_ATTR, "zero tx_attr");
	same(&rx, FI_TYPE_RX_ATTR, "zero rx_attr");
	same(&ep, FI_TYPE_EP_ATTR, "zero ep_attr");
	same(&dom, FI_TYPE_DOMAIN_ATTR, "zero domain_attr");
	same(&fab, FI_TYPE_FABRIC_ATTR, "zero fabric_attr");

	memset(&tx, 0xff, sizeof(tx));
	memset(&rx, 0xff, sizeof(rx));
	memset(&ep, 0xff, sizeof(ep));
	ep.auth_key = NULL;
	same(&tx, FI_TYPE_TX_ATTR, "all-ones tx_attr");
	same(&rx, FI_TYPE_RX_ATTR, "all-ones rx_attr");
	same(&ep, FI_TYPE_EP_ATTR, "all-ones ep_attr");

	for (i = 0; i < 500; i++) {
		fill_tx(&tx);
		fill_rx(&rx);
		fill_ep(&ep);
		fill_domain(&dom);
		fill_fabric(&fab);
		same(&tx, FI_TYPE_TX_ATTR, "tx_attr");
		same(&rx, FI_TYPE_RX_ATTR, "rx_attr");
		same(&ep, FI_TYPE_EP_ATTR, "ep_attr");
		same(&dom, FI_TYPE_DOMAIN_ATTR, "domain_attr");
		same(&fab, FI_TYPE_FABRIC_ATTR, "fabric_attr");
	}
}

/* Addresses of every format, each in a buffer big enough for any. */
struct addr_case {
	uint32_t format;
	uint8_t bytes[64];
};

static size_t make_addrs(struct addr_case *c, size_t max)
{
	struct sockaddr_in sin = { .sin_family = AF_INET };
	struct sockaddr_in6 sin6 = { .sin6_family = AF_INET6 };
	size_t n = 0;
	uint32_t f;
	int i, k;

	/* Every format over three byte patterns. */
	for (f = FI_FORMAT_UNSPEC; f <= FI_ADDR_CXI + 2; f++) {
		for (k = 0; k < 3 && n < max; k++, n++) {
			c[n].format = f;
			for (i = 0; i < 64; i++)
				c[n].bytes[i] = k == 0 ? 0 :
						k == 1 ? (uint8_t)(i * 17 + 3) :
							 0xff;
			/* FI_ADDR_STR text ends inside the buffer. */
			c[n].bytes[63] = 0;
		}
	}

	/* Real socket addresses, as the sockaddr formats expect. */
	sin.sin_port = htons(4242);
	inet_pton(AF_INET, "10.1.2.3", &sin.sin_addr);
	sin6.sin6_port = htons(65535);
	inet_pton(AF_INET6, "fe80::1:2", &sin6.sin6_addr);
	for (f = FI_SOCKADDR; f <= FI_SOCKADDR_IN6 && n + 4 <= max; f++) {
		c[n].format = f;
		memset(c[n].bytes, 0, sizeof(c[n].bytes));
		memcpy(c[n++].bytes, &sin, sizeof(sin));
		c[n].format = f;
		memset(c[n].bytes, 0, sizeof(c[n].bytes));
		memcpy(c[n++].bytes, &sin6, sizeof(sin6));
		/* A family no format knows. */
		c[n].format = f;
		memset(c[n].bytes, 0, sizeof(c[n].bytes));
		sin.sin_family = AF_UNIX;
		memcpy(c[n++].bytes, &sin, sizeof(sin));
		sin.sin_family = AF_INET;
		c[n].format = f;
		memset(c[n].bytes, 0, sizeof(c[n].bytes));
		inet_pton(AF_INET6, "::ffff:10.0.0.1", &sin6.sin6_addr);
		memcpy(c[n++].bytes, &sin6, sizeof(sin6));
		inet_pton(AF_INET6, "fe80::1:2", &sin6.sin6_addr);
	}
	if (n < max) {
		c[n].format = FI_ADDR_STR;
		memset(c[n].bytes, 0, sizeof(c[n].bytes));
		strcpy((char *)c[n++].bytes, "fi_shm://12345");
	}
	return n;
}

Test(tostr_ref, info_structures)
{
	static struct addr_case addrs[128];
	struct fi_tx_attr tx;
	struct fi_rx_attr rx;
	struct fi_ep_attr ep;
	struct fi_domain_attr dom;
	struct fi_fabric_attr fab;
	struct fi_info info;
	size_t naddrs, i;

	ref_load();
	memset(&info, 0, sizeof(info));
	same(&info, FI_TYPE_INFO, "empty fi_info");

	naddrs = make_addrs(addrs, WEFT_ARRAY_SIZE(addrs));
	for (i = 0; i < 600; i++) {
		struct addr_case *src = &addrs[i % naddrs];
		struct addr_case *dst = &addrs[(i * 7 + 3) % naddrs];

		memset(&info, 0, sizeof(info));
		fill_tx(&tx);
		fill_rx(&rx);
		fill_ep(&ep);
		fill_domain(&dom);
		fill_fabric(&fab);
		info.caps = rnd() & rnd();
		info.mode = rnd() & rnd();
		/* The addresses of one fi_info share its format. */
		info.addr_format = src->format;
		if (dst->format != src->format)
			dst = src;
		info.src_addr = rnd() % 5 ? src->bytes : NULL;
		info.dest_addr = rnd() % 2 ? dst->bytes : NULL;
		info.src_addrlen = rnd() % 2 ? sizeof(src->bytes) : rnd_size();
		info.dest_addrlen = rnd_size();
		info.tx_attr = rnd() % 6 ? &tx : NULL;
		info.rx_attr = rnd() % 6 ? &rx : NULL;
		info.ep_attr = rnd() % 6 ? &ep : NULL;
		info.domain_attr = rnd() % 6 ? &dom : NULL;
		info.fabric_attr = rnd() % 6 ? &fab : NULL;
		same(&info, FI_TYPE_INFO, "filled fi_info");
	}
}

/* A tostr op that appends, the way a fid's tostr must. */
static int append_tostr(const struct fid *fid, char *buf, size_t len)
{
	size_t used = strnlen(buf, len);

	if (used < len)
		snprintf(buf + used, len - used, "    object %zu\n",
			 fid->fclass);
	return 0;
}

Test(tostr_ref, fids)
{
	struct fi_ops ops = { .size = sizeof(ops), .tostr = append_tostr };
	struct fi_ops short_ops = { .size = offsetof(struct fi_ops, tostr),
				    .tostr = append_tostr };
	struct fi_ops no_tostr = { .size = sizeof(ops) };
	struct fid plain = { .fclass = FI_CLASS_EP };
	struct fid with_op = { .fclass = FI_CLASS_DOMAIN, .ops = &ops };
	struct fid too_short = { .fclass = FI_CLASS_CQ, .ops = &short_ops };
	struct fid without = { .fclass = FI_CLASS_CQ, .ops = &no_tostr };
	struct fid_nic nic = { .fid = { .fclass = FI_CLASS_NIC } };
	struct fi_info info;

	ref_load();
	same(&plain, FI_TYPE_FID, "fid without ops");
	same(&with_op, FI_TYPE_FID, "fid with tostr");
	same(&too_short, FI_TYPE_FID, "fid with short ops");
	same(&without, FI_TYPE_FID, "fid with ops but no tostr");

	memset(&info, 0, sizeof(info));
	info.handle = &plain;
	same(&info, FI_TYPE_INFO, "handle without tostr");
	info.handle = &with_op;
	same(&info, FI_TYPE_INFO, "handle with tostr");
	info.nic = &nic;
	same(&info, FI_TYPE_INFO, "nic without ops");
	nic.fid.ops = &ops;
	same(&info, FI_TYPE_INFO, "nic with tostr");
	info.handle = &without;
	nic.fid.ops = &short_ops;
	same(&info, FI_TYPE_INFO, "nic with short ops");
}

/* Every fi_info the reference's fi_getinfo returns for one provider. */
static void same_getinfo(const char *prov)
{
	struct fi_info *hints = NULL, *list = NULL, *cur;
	unsigned int n = 0;
	int ret;

	if (prov) {
		hints = ref.dupinfo(NULL);
		cr_assert_not_null(hints);
		hints->fabric_attr->prov_name = strdup(prov);
	}
	ret = ref.getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints, &list);
	if (hints)
		ref.freeinfo(hints);
	if (ret) {
		cr_log_warn("reference fi_getinfo(%s) failed: %d",
			    prov ? prov : "any", ret);
		return;
	}
	for (cur = list; cur; cur = cur->next, n++) {
		same(cur, FI_TYPE_INFO, "reference fi_getinfo result");
		same(cur->tx_attr, FI_TYPE_TX_ATTR, "reference tx_attr");
		same(cur->rx_attr, FI_TYPE_RX_ATTR, "reference rx_attr");
		same(cur->ep_attr, FI_TYPE_EP_ATTR, "reference ep_attr");
		same(cur->domain_attr, FI_TYPE_DOMAIN_ATTR,
		     "reference domain_attr");
		same(cur->fabric_attr, FI_TYPE_FABRIC_ATTR,
		     "reference fabric_attr");
	}
	ref.freeinfo(list);
	cr_log_info("%u fi_info from reference provider %s", n,
		    prov ? prov : "(any)");
}

Test(tostr_ref, reference_getinfo)
{
	ref_load();
	compared = 0;
	same_getinfo("tcp");
	same_getinfo("shm");
	same_getinfo(NULL);
	cr_assert_gt(compared, 0, "the reference returned no fi_info at all");
}

/* ---- checks without a reference ----------------------------------------- */

Test(tostr, known_text)
{
	struct fi_fabric_attr fab = { .name = "f", .prov_name = "tcp",
				      .prov_version = FI_VERSION(117, 0),
				      .api_version = FI_VERSION(1, 17) };
	uint64_t caps = FI_MSG | FI_RMA | FI_REMOTE_COMM | (1ULL << 63);
	uint64_t order = FI_ORDER_DATA;
	int ep = FI_EP_RDM, proto = (int)(FI_PROV_SPECIFIC | 3), bad = 99;
	char buf[512];

	cr_assert_str_eq(fi_tostr_r(buf, sizeof(buf), &ep, FI_TYPE_EP_TYPE),
			 "FI_EP_RDM");
	cr_assert_str_eq(fi_tostr_r(buf, sizeof(buf), &bad, FI_TYPE_EP_TYPE),
			 "Unknown");
	cr_assert_str_eq(fi_tostr_r(buf, sizeof(buf), &proto,
				    FI_TYPE_PROTOCOL),
			 "Provider specific");
	cr_assert_str_eq(fi_tostr_r(buf, sizeof(buf), &caps, FI_TYPE_CAPS),
			 "FI_MSG, FI_RMA, FI_REMOTE_COMM");
	cr_assert_str_eq(fi_tostr_r(buf, sizeof(buf), &order,
				    FI_TYPE_MSG_ORDER),
			 "");
	cr_assert_str_eq(fi_tostr_r(buf, sizeof(buf), &ep, FI_TYPE_VERSION),
			 "2.6.0");
	cr_assert_str_eq(fi_tostr_r(buf, sizeof(buf), &ep, (enum fi_type)99),
			 "Unknown type");
	cr_assert_str_eq(fi_tostr_r(buf, sizeof(buf), &fab,
				    FI_TYPE_FABRIC_ATTR),
			 "fi_fabric_attr:\n"
			 "    name: f\n"
			 "    prov_name: tcp\n"
			 "    prov_version: 117.0\n"
			 "    api_version: 1.17\n");
}

Test(tostr, null_inputs)
{
	char buf[16] = "xxxxxxxxxxxxxxx";
	int v = 0;

	cr_assert_null(fi_tostr_r(buf, sizeof(buf), NULL, FI_TYPE_INFO));
	cr_assert_eq(buf[0], '\0', "buffer not emptied for NULL data");
	cr_assert_null(fi_tostr_r(NULL, 16, &v, FI_TYPE_EP_TYPE));
	buf[0] = 'x';
	cr_assert_null(fi_tostr_r(buf, 0, &v, FI_TYPE_EP_TYPE));
	cr_assert_eq(buf[0], 'x', "len 0 must not write");
	cr_assert_null(fi_tostr(NULL, FI_TYPE_CAPS));
	cr_assert_null(fi_tostr(NULL, (enum fi_type)1000));
}

/* A full fi_info with every section, addresses and a NIC. */
static int nic_tostr(const struct fid *fid, char *buf, size_t len)
{
	return weft_tostr_nic(fid, buf, len);
}

static struct fi_ops nic_ops = { .size = sizeof(nic_ops), .tostr = nic_tostr };

static struct fi_device_attr dev_attr = { "mlx5_0", "0x1017", "0",
					  "0x15b3", "mlx5_core", "16.35" };
static struct fi_bus_attr bus_attr = {
	.bus_type = FI_BUS_PCI,
	.attr.pci = { .domain_id = 1, .bus_id = 0x3b, .device_id = 0,
		      .function_id = 1 }
};
static struct fi_link_attr link_attr = { "fe80::1", 4096, 100000000000ULL,
					 FI_LINK_UP, "Ethernet" };

static void full_info(struct fi_info *info, struct fi_tx_attr *tx,
		      struct fi_rx_attr *rx, struct fi_ep_attr *ep,
		      struct fi_domain_attr *dom, struct fi_fabric_attr *fab,
		      struct fid_nic *nic, struct sockaddr_in *sin)
{
	memset(info, 0, sizeof(*info));
	memset(tx, 0xff, sizeof(*tx));
	memset(rx, 0xff, sizeof(*rx));
	memset(ep, 0xff, sizeof(*ep));
	ep->auth_key = NULL;
	memset(dom, 0, sizeof(*dom));
	dom->name = "mlx5_0";
	dom->caps = ~0ULL;
	dom->mode = ~0ULL;
	dom->mr_mode = ~0;
	memset(fab, 0, sizeof(*fab));
	fab->name = "IB-0xfe80000000000000";
	fab->prov_name = "verbs;ofi_rxm";
	memset(sin, 0, sizeof(*sin));
	sin->sin_family = AF_INET;
	sin->sin_port = htons(7471);
	inet_pton(AF_INET, "192.168.10.20", &sin->sin_addr);
	memset(nic, 0, sizeof(*nic));
	nic->fid.fclass = FI_CLASS_NIC;
	nic->fid.ops = &nic_ops;
	nic->device_attr = &dev_attr;
	nic->bus_attr = &bus_attr;
	nic->link_attr = &link_attr;

	info->caps = ~0ULL;
	info->mode = ~0ULL;
	info->addr_format = FI_SOCKADDR_IN;
	info->src_addr = sin;
	info->src_addrlen = sizeof(*sin);
	info->dest_addr = sin;
	info->dest_addrlen = sizeof(*sin);
	info->tx_attr = tx;
	info->rx_attr = rx;
	info->ep_attr = ep;
	info->domain_attr = dom;
	info->fabric_attr = fab;
	info->nic = nic;
}

static const char nic_text[] =
	"    nic:\n"
	"        fi_device_attr:\n"
	"            name: mlx5_0\n"
	"            device_id: 0x1017\n"
	"            device_version: 0\n"
	"            vendor_id: 0x15b3\n"
	"            driver: mlx5_core\n"
	"            firmware: 16.35\n"
	"        fi_bus_attr:\n"
	"            bus_type: FI_BUS_PCI\n"
	"            fi_pci_attr:\n"
	"                domain_id: 1\n"
	"                bus_id: 59\n"
	"                device_id: 0\n"
	"                function_id: 1\n"
	"        fi_link_attr:\n"
	"            address: fe80::1\n"
	"            mtu: 4096\n"
	"            speed: 100000000000\n"
	"            state: FI_LINK_UP\n"
	"            network_type: Ethernet\n";

Test(tostr, nic_section)
{
	struct fi_tx_attr tx;
	struct fi_rx_attr rx;
	struct fi_ep_attr ep;
	struct fi_domain_attr dom;
	struct fi_fabric_attr fab;
	struct fid_nic nic;
	struct sockaddr_in sin;
	struct fi_info info;
	static char buf[OUT_SIZE];
	struct fi_bus_attr other_bus = { .bus_type = (enum fi_bus_type)7 };
	struct fi_link_attr down = link_attr;
	const char *s;
	size_t n;

	full_info(&info, &tx, &rx, &ep, &dom, &fab, &nic, &sin);
	s = fi_tostr_r(buf, sizeof(buf), &nic, FI_TYPE_FID);
	cr_assert_str_eq(s, nic_text);

	s = fi_tostr_r(buf, sizeof(buf), &info, FI_TYPE_INFO);
	n = strlen(s);
	cr_assert_geq(n, sizeof(nic_text) - 1);
	cr_assert_str_eq(s + n - (sizeof(nic_text) - 1), nic_text,
			 "fi_info does not end with its nic section:\n%s", s);
	cr_assert_not_null(strstr(s, "    fi_fabric_attr:\n"
				     "        name: IB-0xfe80000000000000\n"
				     "        prov_name: verbs;ofi_rxm\n"
				     "        prov_version: 0.0\n"
				     "        api_version: 0.0\n    nic:\n"));
	cr_assert_not_null(strstr(s, "    src_addr: fi_sockaddr_in://"
				     "192.168.10.20:7471\n"));

	/* Missing parts and unnamed values do not crash. */
	nic.bus_attr = &other_bus;
	down.state = FI_LINK_DOWN;
	down.address = NULL;
	nic.link_attr = &down;
	nic.device_attr = NULL;
	s = fi_tostr_r(buf, sizeof(buf), &nic, FI_TYPE_FID);
	cr_assert_not_null(strstr(s, "            bus_type: Unknown\n"
				     "        fi_link_attr:\n"
				     "            address: (null)\n"));
	cr_assert_not_null(strstr(s, "state: FI_LINK_DOWN\n"));
	cr_assert_null(strstr(s, "fi_pci_attr"));
	nic.bus_attr = NULL;
	nic.link_attr = NULL;
	s = fi_tostr_r(buf, sizeof(buf), &nic, FI_TYPE_FID);
	cr_assert_str_eq(s, "    nic:\n"
			    "        fi_device_attr: (null)\n"
			    "        fi_bus_attr: (null)\n"
			    "        fi_link_attr: (null)\n");
}

/* A failing tostr op leaves the fid printed by address. */
static int failing_tostr(const struct fid *fid, char *buf, size_t len)
{
	snprintf(buf, len, "garbage");
	return -FI_ENOSYS;
}

Test(tostr, failing_fid_op)
{
	struct fi_ops ops = { .size = sizeof(ops), .tostr = failing_tostr };
	struct fid fid = { .fclass = FI_CLASS_EP, .ops = &ops };
	char buf[128], expect[128];

	snprintf(expect, sizeof(expect), "fid: %p\n", (void *)&fid);
	cr_assert_str_eq(fi_tostr_r(buf, sizeof(buf), &fid, FI_TYPE_FID),
			 expect);
}

/*
 * Every length from 0 to past the full text gives a NUL-terminated prefix
 * of the full text and writes nothing beyond len.
 */
static void check_truncation(const void *data, enum fi_type type)
{
	static char full[OUT_SIZE], buf[OUT_SIZE + 64];
	size_t n, len, got;
	char *s;

	s = fi_tostr_r(full, sizeof(full), data, type);
	cr_assert_not_null(s);
	n = strlen(full);
	cr_assert_lt(n, sizeof(full) - 1, "text unexpectedly long");
	for (len = 0; len <= n + 2; len++) {
		memset(buf, 0x7e, sizeof(buf));
		s = fi_tostr_r(buf, len, data, type);
		if (!len) {
			cr_assert_null(s);
			cr_assert_eq(buf[0], 0x7e, "len 0 wrote a byte");
			continue;
		}
		cr_assert_eq(s, buf);
		got = strnlen(buf, len);
		cr_assert_lt(got, len, "type %d len %zu: not NUL-terminated",
			     type, len);
		cr_assert_eq(got, len - 1 < n ? len - 1 : n,
			     "type %d len %zu: %zu characters, not %zu", type,
			     len, got, len - 1 < n ? len - 1 : n);
		cr_assert_eq(memcmp(buf, full, got), 0,
			     "type %d len %zu: not a prefix", type, len);
		cr_assert_eq((unsigned char)buf[len], 0x7e,
			     "type %d len %zu: wrote past the buffer", type,
			     len);
	}
}

Test(tostr, truncation)
{
	struct fi_tx_attr tx;
	struct fi_rx_attr rx;
	struct fi_ep_attr ep;
	struct fi_domain_attr dom;
	struct fi_fabric_attr fab;
	struct fid_nic nic;
	struct sockaddr_in sin;
	struct fi_info info;
	uint64_t all = ~0ULL;
	int t;

	full_info(&info, &tx, &rx, &ep, &dom, &fab, &nic, &sin);
	check_truncation(&info, FI_TYPE_INFO);
	check_truncation(&nic, FI_TYPE_FID);
	check_truncation(&tx, FI_TYPE_TX_ATTR);
	check_truncation(&rx, FI_TYPE_RX_ATTR);
	check_truncation(&ep, FI_TYPE_EP_ATTR);
	check_truncation(&dom, FI_TYPE_DOMAIN_ATTR);
	check_truncation(&fab, FI_TYPE_FABRIC_ATTR);
	for (t = FI_TYPE_EP_TYPE; t <= FI_TYPE_LOG_SUBSYS + 1; t++) {
		if (t >= FI_TYPE_TX_ATTR && t <= FI_TYPE_FABRIC_ATTR)
			continue;
		if (t == FI_TYPE_FID)
			continue;
		check_truncation(&all, (enum fi_type)t);
	}
}

static void *thread_tostr(void *arg)
{
	int ep = FI_EP_MSG;

	return fi_tostr(&ep, FI_TYPE_EP_TYPE);
}

Test(tostr, thread_local_buffer)
{
	int ep = FI_EP_DGRAM;
	pthread_t th;
	char *mine, *again, *theirs;

	mine = fi_tostr(&ep, FI_TYPE_EP_TYPE);
	cr_assert_str_eq(mine, "FI_EP_DGRAM");
	cr_assert_eq(pthread_create(&th, NULL, thread_tostr, NULL), 0);
	cr_assert_eq(pthread_join(th, (void **)&theirs), 0);
	cr_assert_neq(mine, theirs, "threads share one fi_tostr buffer");
	cr_assert_str_eq(mine, "FI_EP_DGRAM");
	ep = FI_EP_RDM;
	again = fi_tostr(&ep, FI_TYPE_EP_TYPE);
	cr_assert_eq(again, mine);
	cr_assert_str_eq(again, "FI_EP_RDM");
}
