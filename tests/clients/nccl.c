/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * aws-ofi-nccl's SENDRECV protocol with host memory: a listen/connect
 * handshake and tagged transfers between two ranks, as NCCL drives the
 * plugin.
 *
 * Follows, in aws/aws-ofi-nccl v1.14.2:
 *   src/nccl_ofi_net.c: nccl_net_ofi_create_plugin (off AWS no provider
 *     filter, FI_PROVIDER picks; the RDMA protocol is only kept with several
 *     rails, so a one-NIC host ends in SENDRECV, which is what is replayed),
 *     nccl_net_ofi_query_provider_capabilities (FI_MR_VIRT_ADDR,
 *     FI_MR_ENDPOINT, data_progress), the domain's MR key pool;
 *   src/nccl_ofi_sendrecv.c: sendrecv_get_hints (FI_LOCAL_COMM|
 *     FI_REMOTE_COMM|FI_TAGGED|FI_MSG, FI_HMEM with FI_RMA|FI_READ when GDR
 *     is asked, mr_mode FI_MR_LOCAL|FI_MR_ENDPOINT|FI_MR_VIRT_ADDR|
 *     FI_MR_ALLOCATED|FI_MR_PROV_KEY (+FI_MR_HMEM), mr_key_size 2,
 *     FI_CONTEXT|FI_CONTEXT2, FI_THREAD_SAFE, FI_PROGRESS_UNSPEC,
 *     FI_ORDER_SAS), nccl_net_ofi_sendrecv_init (API 1.18 with GDR, then
 *     1.6 with GDR, then 1.6 without; FI_RMA added to "tcp" before 2.2),
 *     the device's tag bits from mem_tag_format, sendrecv_mr_buffers_register
 *     (fi_mr_regattr, a key from the pool unless the provider picks it,
 *     fi_mr_bind + fi_mr_enable under FI_MR_ENDPOINT), listen (fi_trecv of
 *     the connect message with the control tag bit), connect (fi_av_insert,
 *     fi_tsend of the connect message), accept (fi_av_insert of the
 *     sender's name), isend / irecv (fi_tsend / fi_trecv from
 *     FI_ADDR_UNSPEC), sendrecv_cq_process (fi_cq_read of 4, fi_cq_readerr);
 *   src/nccl_ofi_ofiutils.c: nccl_ofi_ofiutils_get_providers (the "lo"
 *     and "docker0" tcp domains excluded, IPv4 only for tcp, entries alike
 *     the first kept), nccl_ofi_ofiutils_init_connection (fi_endpoint,
 *     FI_CQ_FORMAT_TAGGED, a default AV, binds FI_SEND|FI_RECV, the
 *     endpoint options below, fi_enable), nccl_ofi_ofiutils_ep_release;
 *   the endpoint options: built against 1.17 headers (default) the plugin
 *     sets none; built against 1.19 or later (-v hdr119) it sets
 *     FI_OPT_SHARED_MEMORY_PERMITTED (option 11) to false, and, with the
 *     1.18 API and GDR not ruled out, FI_OPT_CUDA_API_PERMITTED (option 10)
 *     to false, taking -FI_ENOPROTOOPT / -FI_EOPNOTSUPP as "not supported".
 *
 * NAME is FI_PROVIDER.
 */
#include "harness.h"

#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_tagged.h>

#define OPT_CUDA_API_PERMITTED 10	/* values of libfabric >= 1.19 */
#define OPT_SHARED_MEMORY_PERMITTED 11
#define MIN_TAG_BITS_FOR_RING_ID 33
#define CQ_READ_COUNT 4
#define MR_KEY_SIZE 2
#define XFER (1024 * 1024)

enum gdr { GDR_UNKNOWN, GDR_SUPPORTED, GDR_UNSUPPORTED };

struct nccl {
	struct cl *c;
	bool hdr119;
	uint32_t api;
	enum gdr gdr;
	struct fi_info *info;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_ep *ep;
	struct fid_av *av;
	struct fid_cq *cq;
	uint64_t max_tag;
	bool own_keys, endpoint_mr, support_rma;
	uint16_t next_key;
	int done[4], errs[4];
	struct fi_cq_tagged_entry wc[4];
};

static void get_hints(struct fi_info *h, bool gdr)
{
	h->caps = FI_LOCAL_COMM | FI_REMOTE_COMM | FI_TAGGED | FI_MSG;
	h->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_ENDPOINT;
	h->domain_attr->mr_key_size = MR_KEY_SIZE;
	if (gdr) {
		h->caps |= FI_HMEM | FI_RMA | FI_READ;	/* no CUDA flush */
		h->domain_attr->mr_mode |= FI_MR_HMEM;
	}
	h->mode = FI_CONTEXT | FI_CONTEXT2;
	h->ep_attr->type = FI_EP_RDM;
	h->domain_attr->threading = FI_THREAD_SAFE;
	h->domain_attr->control_progress = FI_PROGRESS_UNSPEC;
	h->domain_attr->data_progress = FI_PROGRESS_UNSPEC;
	h->domain_attr->mr_mode |= FI_MR_VIRT_ADDR | FI_MR_ALLOCATED |
				   FI_MR_PROV_KEY;
	h->tx_attr->msg_order = FI_ORDER_SAS;
	h->rx_attr->msg_order = FI_ORDER_SAS;
}

static bool alike(const struct fi_info *a, const struct fi_info *b)
{
	return a->caps == b->caps && a->mode == b->mode &&
	       a->addr_format == b->addr_format &&
	       a->ep_attr->type == b->ep_attr->type &&
	       a->ep_attr->protocol == b->ep_attr->protocol &&
	       a->ep_attr->protocol_version == b->ep_attr->protocol_version &&
	       !strcmp(a->fabric_attr->prov_name, b->fabric_attr->prov_name) &&
	       !strcmp(a->fabric_attr->name, b->fabric_attr->name);
}

static bool keep(const struct fi_info *p, const struct fi_info *first)
{
	if (!strncmp(p->fabric_attr->prov_name, "tcp", 3) &&
	    (!strcmp(p->domain_attr->name, "lo") ||
	     !strcmp(p->domain_attr->name, "docker0") ||
	     p->addr_format != FI_SOCKADDR_IN))
		return false;
	return !first || alike(p, first);
}

/* nccl_ofi_ofiutils_get_providers; returns the list or NULL with *ret */
static struct fi_info *get_providers(struct nccl *n, uint32_t version,
				     bool gdr, int *ret)
{
	struct fi_info *hints = fi_allocinfo(), *list = NULL, *p, *out = NULL,
		       **tail = &out, *first = NULL, *next;

	get_hints(hints, gdr);
	*ret = fi_getinfo(version, NULL, NULL, 0ULL, hints, &list);
	fi_freeinfo(hints);
	cl_note(n->c, "fi_getinfo(%u.%u, %s GDR): %d", FI_MAJOR(version),
		FI_MINOR(version), gdr ? "with" : "without", *ret);
	if (*ret)
		return NULL;
	for (p = list; p; p = next) {
		next = p->next;
		p->next = NULL;
		if (keep(p, NULL) && (!first || alike(p, first))) {
			if (!first)
				first = p;
			*tail = p;
			tail = &p->next;
		} else {
			fi_freeinfo(p);
		}
	}
	if (!out)
		*ret = -FI_ENODATA;
	return out;
}

static void select_providers(struct nccl *n)
{
	struct cl *c = n->c;
	struct fi_info *list, *p;
	int ret;

	n->api = FI_VERSION(1, 18);
	n->gdr = GDR_UNKNOWN;
	list = get_providers(n, n->api, true, &ret);
	if (!list) {
		n->api = FI_VERSION(1, 6);
		n->gdr = GDR_SUPPORTED;
		list = get_providers(n, n->api, true, &ret);
	}
	if (!list) {
		n->gdr = GDR_UNSUPPORTED;
		list = get_providers(n, n->api, false, &ret);
	}
	if (!list && (ret == -FI_ENODATA || !ret))
		cl_skip(c, "no provider for the plugin's hints (last "
			"fi_getinfo: %d)", ret);
	if (!list)
		cl_fail(c, "OFI fi_getinfo() call failed: %s", fi_strerror(-ret));
	if (FI_VERSION_LT(fi_version(), FI_VERSION(2, 2)) &&
	    !strcmp(list->fabric_attr->prov_name, "tcp"))
		for (p = list; p; p = p->next)
			p->caps |= FI_RMA;
	n->support_rma = list->caps & FI_RMA;
	n->endpoint_mr = list->domain_attr->mr_mode & FI_MR_ENDPOINT;
	n->own_keys = (list->caps & FI_RMA) &&
		      !(list->domain_attr->mr_mode & FI_MR_PROV_KEY);
	if (n->own_keys && list->domain_attr->mr_key_size < MR_KEY_SIZE)
		cl_fail(c, "Provider %s supports MR key size of %zu, but %d was "
			"requested", list->fabric_attr->prov_name,
			list->domain_attr->mr_key_size, MR_KEY_SIZE);
	/* one device per entry; NCCL's first device is used here */
	n->info = fi_dupinfo(list);
	fi_freeinfo(list);
	cl_note(c, "%s domain %s, API %u.%u, GDR %d, mr_mode 0x%x, caps %s",
		n->info->fabric_attr->prov_name, n->info->domain_attr->name,
		FI_MAJOR(n->api), FI_MINOR(n->api), n->gdr,
		n->info->domain_attr->mr_mode,
		fi_tostr(&n->info->caps, FI_TYPE_CAPS));
}

static void device_init(struct nccl *n)
{
	struct cl *c = n->c;
	int zeros = 0, bits = 64;

	CL_CALL(c, fi_fabric(n->info->fabric_attr, &n->fabric, NULL));
	while (!((n->info->ep_attr->mem_tag_format << zeros++) &
		 (uint64_t)1 << 63) && bits >= MIN_TAG_BITS_FOR_RING_ID)
		bits--;
	if (bits < MIN_TAG_BITS_FOR_RING_ID)
		cl_fail(c, "provider %s: %d tag bits for the ring id, at least %d",
			n->info->fabric_attr->prov_name, bits,
			MIN_TAG_BITS_FOR_RING_ID);
	n->max_tag = (1ULL << (bits - 1)) - 1;
	CL_CALL(c, fi_domain(n->fabric, n->info, &n->domain, NULL));
}

static void set_opt(struct nccl *n, int opt, const char *name)
{
	bool val = false;
	int ret = fi_setopt(&n->ep->fid, FI_OPT_ENDPOINT, opt, &val,
			    sizeof(val));

	if (ret == -FI_EOPNOTSUPP || ret == -FI_ENOPROTOOPT) {
		cl_note(n->c, "%s: not supported (%d)", name, ret);
		if (opt == OPT_CUDA_API_PERMITTED) {
			if (n->gdr == GDR_SUPPORTED)
				cl_fail(n->c, "GDR support reported to NCCL but "
					"then couldn't be configured");
			n->gdr = GDR_UNSUPPORTED;
		}
	} else if (ret) {
		cl_fail(n->c, "fi_setopt(%s): %d (%s)", name, ret,
			fi_strerror(-ret));
	} else if (opt == OPT_CUDA_API_PERMITTED) {
		n->gdr = GDR_SUPPORTED;
	}
}

/* nccl_ofi_ofiutils_init_connection */
static void init_connection(struct nccl *n)
{
	struct cl *c = n->c;
	struct fi_av_attr av_attr = { 0 };
	struct fi_cq_attr cq_attr = { 0 };

	CL_CALL(c, fi_endpoint(n->domain, n->info, &n->ep, NULL));
	cq_attr.format = (n->info->caps & FI_TAGGED) ? FI_CQ_FORMAT_TAGGED :
		FI_CQ_FORMAT_DATA;
	CL_CALL(c, fi_cq_open(n->domain, &cq_attr, &n->cq, NULL));
	CL_CALL(c, fi_av_open(n->domain, &av_attr, &n->av, NULL));
	CL_CALL(c, fi_ep_bind(n->ep, &n->cq->fid, FI_SEND | FI_RECV));
	CL_CALL(c, fi_ep_bind(n->ep, &n->av->fid, 0));
	if (n->hdr119) {
		set_opt(n, OPT_SHARED_MEMORY_PERMITTED,
			"FI_OPT_SHARED_MEMORY_PERMITTED");
		if (FI_VERSION_GE(n->info->fabric_attr->api_version,
				  FI_VERSION(1, 18)) && n->gdr != GDR_UNSUPPORTED)
			set_opt(n, OPT_CUDA_API_PERMITTED,
				"FI_OPT_CUDA_API_PERMITTED");
	}
	CL_CALL(c, fi_enable(n->ep));
}

struct mr {
	struct fid_mr *mr;
	void *desc;
};

/* sendrecv_mr_buffers_register, NCCL_PTR_HOST */
static void reg(struct nccl *n, void *buf, size_t len, struct mr *m)
{
	struct cl *c = n->c;
	struct iovec iov = { .iov_base = buf, .iov_len = len };
	struct fi_mr_attr attr = { .mr_iov = &iov, .iov_count = 1 };

	attr.access = FI_SEND | FI_RECV;
	if (n->support_rma)
		attr.access |= FI_READ;
	attr.iface = FI_HMEM_SYSTEM;
	if (n->own_keys)
		attr.requested_key = n->next_key++;
	CL_CALL(c, fi_mr_regattr(n->domain, &attr, 0, &m->mr));
	if (n->endpoint_mr) {
		CL_CALL(c, fi_mr_bind(m->mr, &n->ep->fid, 0));
		CL_CALL(c, fi_mr_enable(m->mr));
	}
	m->desc = fi_mr_desc(m->mr);
}

/* sendrecv_cq_process */
static void cq_process(struct nccl *n)
{
	struct fi_cq_tagged_entry e[CQ_READ_COUNT];
	struct fi_cq_err_entry err = { 0 };
	ssize_t rc, i;

	for (;;) {
		rc = fi_cq_read(n->cq, e, CQ_READ_COUNT);
		if (rc > 0) {
			for (i = 0; i < rc; i++) {
				int *k = e[i].op_context;

				if (!k || *k < 0 || *k > 3)
					cl_fail(n->c, "completion with a foreign "
						"context");
				n->done[*k]++;
				n->wc[*k] = e[i];
			}
		} else if (rc == -FI_EAVAIL) {
			rc = fi_cq_readerr(n->cq, &err, 0);
			if (rc == -FI_EAGAIN)
				break;
			if (rc < 0)
				cl_fail(n->c, "Unable to read from fi_cq_readerr: "
					"%zd", rc);
			cl_fail(n->c, "Request completed with error: %d (%s), "
				"%zu bytes", err.err, fi_strerror(err.err),
				err.len);
		} else if (rc == -FI_EAGAIN) {
			break;
		} else {
			cl_fail(n->c, "Unable to retrieve completion queue "
				"entries: %zd (%s)", rc, fi_strerror((int)-rc));
		}
	}
}

static void progress_cb(void *n)
{
	cq_process(n);
}

static int ctx[4] = { 0, 1, 2, 3 };

static void test(struct nccl *n, int k, int want, const char *what)
{
	while (n->done[k] < want) {
		cq_process(n);
		cl_tick(n->c, what);
	}
}

#define POST(n, call, what)                                                   \
	do {                                                                  \
		ssize_t r_;                                                   \
		while ((r_ = (call)) == -FI_EAGAIN) {                         \
			cq_process(n);                                        \
			cl_tick((n)->c, what);                                \
		}                                                             \
		if (r_)                                                       \
			cl_fail((n)->c, "%s: %zd (%s)", what, r_,             \
				fi_strerror((int)-r_));                       \
	} while (0)

struct handle {			/* nccl_net_ofi_conn_handle_t */
	char name[64];
	uint64_t tag;
};

struct conn_info {		/* nccl_ofi_connection_info_t */
	char name[64];
	uint64_t ep_namelen;
	int connect_to_self;
	void *req;
};

static void rank_main(struct cl *c)
{
	struct nccl n = { .c = c, .hdr119 = !strcmp(c->variant, "hdr119") };
	static char buf[XFER] __attribute__((aligned(4096)));
	static struct conn_info conn;
	struct handle h = { 0 };
	struct mr conn_mr, buf_mr;
	size_t len = sizeof(h.name);
	fi_addr_t self, peer;
	uint64_t tag = 1;	/* the listen comm's tag */

	setenv("FI_PROVIDER", c->name, 1);
	cl_lib(c);
	select_providers(&n);
	device_init(&n);
	init_connection(&n);
	CL_CALL(c, fi_getname(&n.ep->fid, h.name, &len));
	if (fi_av_insert(n.av, h.name, 1, &self, 0, NULL) != 1)
		cl_fail(c, "fi_av_insert of the local name failed");
	reg(&n, &conn, sizeof(conn), &conn_mr);
	reg(&n, buf, sizeof(buf), &buf_mr);

	if (c->rank == 0) {
		/* listen: the handle goes to the peer through NCCL's
		 * bootstrap; the connect message is received with the
		 * control bit above max_tag */
		h.tag = tag;
		POST(&n, fi_trecv(n.ep, &conn, sizeof(conn), conn_mr.desc,
				  FI_ADDR_UNSPEC, h.tag | (n.max_tag + 1), 0,
				  &ctx[0]), "fi_trecv (connect message)");
		cl_send(c, &h, sizeof(h));
		test(&n, 0, 1, "the connect message");
		if (conn.connect_to_self)
			cl_fail(c, "connect message says connect-to-self");
		/* accept */
		if (fi_av_insert(n.av, conn.name, 1, &peer, 0, NULL) != 1)
			cl_fail(c, "Unable to insert remote address");
		/* irecv of 1 MiB, then of 8 bytes */
		POST(&n, fi_trecv(n.ep, buf, XFER, buf_mr.desc, FI_ADDR_UNSPEC,
				  h.tag, 0, &ctx[1]), "fi_trecv");
		test(&n, 1, 1, "a 1 MiB receive");
		if (n.wc[1].len != XFER)
			cl_fail(c, "received %zu bytes", n.wc[1].len);
		cl_check(c, buf, XFER, 71, "1 MiB transfer");
		POST(&n, fi_trecv(n.ep, buf, XFER, buf_mr.desc, FI_ADDR_UNSPEC,
				  h.tag, 0, &ctx[1]), "fi_trecv");
		test(&n, 1, 2, "an 8-byte receive");
		cl_check(c, buf, 8, 72, "8-byte transfer");
		/* and one back */
		cl_fill(buf, 65536, 73);
		POST(&n, fi_tsend(n.ep, buf, 65536, buf_mr.desc, peer, h.tag,
				  &ctx[2]), "fi_tsend");
		test(&n, 2, 1, "the send's completion");
	} else {
		cl_recv(c, &h, sizeof(h));
		/* connect */
		if (fi_av_insert(n.av, h.name, 1, &peer, 0, NULL) != 1)
			cl_fail(c, "Unable to insert remote address");
		memset(&conn, 0, sizeof(conn));
		len = sizeof(conn.name);
		CL_CALL(c, fi_getname(&n.ep->fid, conn.name, &len));
		conn.ep_namelen = len;
		POST(&n, fi_tsend(n.ep, &conn, sizeof(conn), conn_mr.desc, peer,
				  h.tag | (n.max_tag + 1), &ctx[0]),
		     "fi_tsend (connect message)");
		test(&n, 0, 1, "the connect message's completion");
		cl_fill(buf, XFER, 71);
		POST(&n, fi_tsend(n.ep, buf, XFER, buf_mr.desc, peer, h.tag,
				  &ctx[2]), "fi_tsend");
		test(&n, 2, 1, "the 1 MiB send's completion");
		cl_fill(buf, 8, 72);
		POST(&n, fi_tsend(n.ep, buf, 8, buf_mr.desc, peer, h.tag,
				  &ctx[2]), "fi_tsend");
		test(&n, 2, 2, "the 8-byte send's completion");
		POST(&n, fi_trecv(n.ep, buf, XFER, buf_mr.desc, FI_ADDR_UNSPEC,
				  h.tag, 0, &ctx[1]), "fi_trecv");
		test(&n, 1, 1, "the 64 KiB receive");
		if (n.wc[1].len != 65536)
			cl_fail(c, "received %zu bytes", n.wc[1].len);
		cl_check(c, buf, 65536, 73, "64 KiB transfer");
	}
	cl_barrier_p(c, progress_cb, &n);

	/* deregMr, then nccl_ofi_ofiutils_ep_release, domain, device */
	CL_CALL(c, fi_close(&buf_mr.mr->fid));
	CL_CALL(c, fi_close(&conn_mr.mr->fid));
	CL_CALL(c, fi_close(&n.ep->fid));
	CL_CALL(c, fi_close(&n.av->fid));
	CL_CALL(c, fi_close(&n.cq->fid));
	CL_CALL(c, fi_close(&n.domain->fid));
	CL_CALL(c, fi_close(&n.fabric->fid));
	fi_freeinfo(n.info);
	cl_pass(c);
}

int main(int argc, char **argv)
{
	return cl_run(argc, argv, "nccl", rank_main);
}
