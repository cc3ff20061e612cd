/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Open MPI's ofi BTL (pml ob1, osc rdma), with btl_ofi_mode 2: one-sided
 * (RMA and atomics) and two-sided (messages) together.
 *
 * Follows, in open-mpi/ompi, v4.1.8 and v5.0.10:
 *   opal/mca/btl/ofi/btl_ofi_component.c: mca_btl_ofi_component_init
 *     (hints, fi_getinfo, the FI_HMEM retry of v5), validate_info (include
 *     list, "ofi_rxm" refused, caps, FI_EP_RDM, mr_mode),
 *     mca_btl_ofi_init_device (fabric, domain, FI_AV_MAP, the regular
 *     endpoint when max_ep_tx_ctx is 1, fi_enable, fi_getname, receives);
 *   btl_ofi_context.c: mca_btl_ofi_context_alloc_normal (FI_CQ_FORMAT_CONTEXT
 *     CQ, FI_WAIT_NONE, bound FI_TRANSMIT|FI_SEND|FI_RECV),
 *     mca_btl_ofi_context_progress (fi_cq_read, fi_cq_readerr);
 *   btl_ofi_module.c: mca_btl_ofi_add_procs (fi_av_insert),
 *     mca_btl_ofi_reg_mem (v4 fi_mr_reg, v5 fi_mr_regattr + fi_mr_bind and
 *     fi_mr_enable under FI_MR_ENDPOINT; the requested key is the
 *     registration's address), mca_btl_ofi_post_recvs (fi_recv),
 *     mca_btl_ofi_finalize (close order);
 *   btl_ofi_frag.c (v5) / btl_ofi_module.c (v4): mca_btl_ofi_send (v5
 *     fi_inject up to inject_size, else fi_send);
 *   btl_ofi_rdma.c: fi_read, fi_write (remote address less base_addr,
 *     which is 0 under FI_MR_VIRT_ADDR);
 *   btl_ofi_atomics.c: fi_fetch_atomic, fi_atomic, fi_compare_atomic on
 *     FI_UINT64 with FI_SUM and FI_CSWAP;
 *   opal/mca/common/ofi/common_ofi.c: prefix match of the include list, the
 *     round-robin choice among alike infos.
 * Where the provider offers more than one transmit context per endpoint
 * (max_ep_tx_ctx > 1), the BTL would open a scalable endpoint: that path is
 * not replayed (scalable endpoints are not part of this suite yet); the
 * regular endpoint is opened instead, and the note says so.
 *
 * NAME is btl_ofi_provider_include.  -v 4 (default) or -v 5.
 */
#include "harness.h"

#include <rdma/fi_atomic.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_rma.h>

#define REQ_CAPS (FI_RMA | FI_ATOMIC | FI_MSG)
#define CQE_READ 64		/* MCA_BTL_OFI_NUM_CQE_READ */
#define RD_NUM 10		/* MCA_BTL_OFI_DEFAULT_RD_NUM */
#define FRAG 4096		/* MCA_BTL_OFI_FRAG_SIZE */
#define WIN 65536

struct hdr {			/* mca_btl_ofi_header_t */
	uint64_t tag;
	uint64_t len;
	char payload[FRAG];
};

struct btl {
	struct cl *c;
	int v5;
	struct fi_info *info;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_ep *ep;
	struct fid_av *av;
	struct fid_cq *cq;
	struct fid_mr *mr;
	fi_addr_t peer;
	bool virt_addr;
	int comps[RD_NUM + 8];	/* completion contexts, counted per index */
	struct hdr rx[RD_NUM];
	int rx_done[RD_NUM];
};

struct reg {			/* what a rank publishes of its window */
	uint64_t base, rkey, base_addr;
};

/* validate_info: NULL when the BTL takes this info, else why not. */
static const char *refuse(struct btl *b, const struct fi_info *i, uint64_t req)
{
	uint64_t mr = i->domain_attr->mr_mode;
	uint64_t ok = FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY;

	if (b->v5)
		ok |= FI_MR_ENDPOINT | FI_MR_HMEM;
	if (strncasecmp(i->fabric_attr->prov_name, b->c->name,
			strlen(b->c->name)))
		return "not in the include list";
	if (strstr(i->fabric_attr->prov_name, "ofi_rxm"))
		return "ofi_rxm does not support FI_DELIVERY_COMPLETE";
	if ((i->caps & req) != req)
		return "unsupported caps";
	if (i->ep_attr->type != FI_EP_RDM)
		return "unsupported EP type";
	if (!(mr == FI_MR_BASIC || mr == FI_MR_SCALABLE || !(mr & ~ok)))
		return "unsupported MR mode";
	return NULL;
}

static void select_info(struct btl *b)
{
	struct cl *c = b->c;
	struct fi_fabric_attr fabric_attr = { 0 };
	struct fi_domain_attr domain_attr = { 0 };
	struct fi_ep_attr ep_attr = { 0 };
	struct fi_tx_attr tx_attr = { 0 };
	struct fi_rx_attr rx_attr = { 0 };
	struct fi_info hints = { 0 }, *list = NULL, *p, *pick;
	const char *why = NULL;
	char seen[256] = "";
	uint64_t req = REQ_CAPS;
	int ret, n = 0, i = 0;

	domain_attr.mr_mode = FI_MR_ALLOCATED | FI_MR_PROV_KEY | FI_MR_VIRT_ADDR;
	if (b->v5)
		domain_attr.mr_mode |= FI_MR_ENDPOINT;
	domain_attr.control_progress = FI_PROGRESS_UNSPEC;
	domain_attr.data_progress = FI_PROGRESS_UNSPEC;
	if (b->v5)
		domain_attr.threading = FI_THREAD_DOMAIN;
	ep_attr.type = FI_EP_RDM;
	hints.caps = REQ_CAPS;
	hints.mode = FI_CONTEXT | FI_CONTEXT2;
	hints.fabric_attr = &fabric_attr;
	hints.domain_attr = &domain_attr;
	hints.ep_attr = &ep_attr;
	hints.tx_attr = &tx_attr;
	hints.rx_attr = &rx_attr;
	tx_attr.iov_limit = 1;
	rx_attr.iov_limit = 1;
	tx_attr.op_flags = FI_DELIVERY_COMPLETE;
	if (b->v5) {
		tx_attr.op_flags |= FI_COMPLETION;
		rx_attr.op_flags = FI_COMPLETION;
		hints.caps |= FI_HMEM;
		domain_attr.mr_mode |= FI_MR_HMEM;
	}
again:
	if (b->v5) {
		ret = fi_getinfo(FI_VERSION(1, 18), NULL, NULL, 0, &hints, &list);
		if (ret == -FI_ENOSYS)
			ret = fi_getinfo(FI_VERSION(1, 9), NULL, NULL, 0, &hints,
					 &list);
		for (p = ret ? NULL : list; p; p = p->next)
			if (!strncasecmp(p->fabric_attr->prov_name, c->name,
					 strlen(c->name)))
				break;
		if ((ret == -FI_ENODATA || (!ret && !p)) &&
		    (hints.caps & FI_HMEM)) {
			cl_note(c, "no answer with FI_HMEM: asking again without");
			hints.caps &= ~FI_HMEM;
			domain_attr.mr_mode &= ~FI_MR_HMEM;
			fi_freeinfo(list);
			list = NULL;
			goto again;
		}
		if (!ret && (hints.caps & FI_HMEM))
			req |= FI_HMEM;
	} else {
		ret = fi_getinfo(FI_VERSION(1, 5), NULL, NULL, 0, &hints, &list);
	}
	if (ret == -FI_ENODATA)
		cl_skip(c, "fi_getinfo: -FI_ENODATA for the BTL's hints");
	if (ret)
		cl_fail(c, "fi_getinfo returned %d (%s)", ret, fi_strerror(-ret));
	for (p = list; p; p = p->next) {
		const char *w = refuse(b, p, req);

		if (!w)
			break;
		if (strcmp(w, "not in the include list"))
			why = w;
		else if (!strstr(seen, p->fabric_attr->prov_name) &&
			 strlen(seen) + strlen(p->fabric_attr->prov_name) + 3 <
			 sizeof(seen))
			sprintf(seen + strlen(seen), "%s%s", *seen ? ", " : "",
				p->fabric_attr->prov_name);
		cl_note(c, "refused %s (%s): %s", p->fabric_attr->prov_name,
			p->domain_attr->name, w);
	}
	if (!p && why)
		cl_skip(c, "the BTL takes no answer for \"%s\": %s", c->name,
			why);
	if (!p)
		cl_skip(c, "no answer's prov_name starts with \"%s\" (answers: "
			"%s)", c->name, seen);
	for (pick = p; pick; pick = pick->next)
		n += cl_ompi_alike(p, pick);
	for (pick = p; pick; pick = pick->next)
		if (cl_ompi_alike(p, pick) && i++ == c->rank % n)
			break;
	b->info = fi_dupinfo(pick);
	fi_freeinfo(list);
	cl_note(c, "%s, domain %s, mr_mode 0x%x, inject %zu",
		b->info->fabric_attr->prov_name, b->info->domain_attr->name,
		b->info->domain_attr->mr_mode, b->info->tx_attr->inject_size);
}

/* mca_btl_ofi_context_progress */
static void progress(struct btl *b);

static void progress_cb(void *b)
{
	progress(b);
}

static void progress(struct btl *b)
{
	struct cl *c = b->c;
	struct fi_cq_entry e[128];
	struct fi_cq_err_entry err;
	ssize_t n, i;

	n = fi_cq_read(b->cq, e, CQE_READ);
	if (n > 0) {
		for (i = 0; i < n; i++) {
			int *ctx = e[i].op_context;

			if (!ctx || ctx < b->comps ||
			    ctx >= b->comps + RD_NUM + 8)
				cl_fail(c, "completion with a foreign context %p",
					(void *)ctx);
			(*ctx)++;
		}
	} else if (n == -FI_EAVAIL) {
		memset(&err, 0, sizeof(err));
		n = fi_cq_readerr(b->cq, &err, 0);
		cl_fail(c, "error completion: %zd, err %d (%s)", n, err.err,
			fi_strerror(err.err));
	} else if (n != -FI_EAGAIN) {
		cl_fail(c, "fi_cq_read: %zd (%s)", n, fi_strerror((int)-n));
	}
}

static void wait_comp(struct btl *b, int idx, int want, const char *what)
{
	while (b->comps[idx] < want) {
		progress(b);
		cl_tick(b->c, what);
	}
}

/* mca_btl_ofi_reg_mem */
static void reg_mem(struct btl *b, void *base, size_t size, struct reg *r)
{
	struct cl *c = b->c;
	uint64_t access = FI_REMOTE_WRITE | FI_REMOTE_READ | FI_READ | FI_WRITE;
	static char registration[64];	/* the rcache entry, used as key */

	if (!b->v5) {
		CL_CALL(c, fi_mr_reg(b->domain, base, size, access, 0,
				     (uint64_t)(uintptr_t)registration, 0,
				     &b->mr, NULL));
	} else {
		struct iovec iov = { .iov_base = base, .iov_len = size };
		struct fi_mr_attr attr = {
			.mr_iov = &iov, .iov_count = 1, .access = access,
			.offset = 0, .context = NULL,
			.requested_key = (uint64_t)(uintptr_t)registration,
		};

		CL_CALL(c, fi_mr_regattr(b->domain, &attr, 0, &b->mr));
		if (b->info->domain_attr->mr_mode & FI_MR_ENDPOINT) {
			CL_CALL(c, fi_mr_bind(b->mr, &b->ep->fid, 0ULL));
			CL_CALL(c, fi_mr_enable(b->mr));
		}
	}
	r->base = (uint64_t)(uintptr_t)base;
	r->rkey = fi_mr_key(b->mr);
	r->base_addr = b->virt_addr ? 0 : (uint64_t)(uintptr_t)base;
}

static void send_frag(struct btl *b, struct hdr *h, size_t len)
{
	struct cl *c = b->c;
	size_t sz = offsetof(struct hdr, payload) + len;
	int idx = RD_NUM, before = b->comps[idx];
	ssize_t r;

	h->len = len;
	if (b->v5 && sz <= b->info->tx_attr->inject_size) {
		r = fi_inject(b->ep, h, sz, b->peer);
		if (!r)
			return;
		if (r != -FI_EAGAIN)
			cl_fail(c, "fi_inject: %zd (%s)", r,
				fi_strerror((int)-r));
	}
	while ((r = fi_send(b->ep, h, sz, NULL, b->peer, &b->comps[idx])) ==
	       -FI_EAGAIN) {
		progress(b);
		cl_tick(c, "room to send");
	}
	if (r)
		cl_fail(c, "fi_send: %zd (%s)", r, fi_strerror((int)-r));
	wait_comp(b, idx, before + 1, "a send's completion");
}

/* The BTL returns OUT_OF_RESOURCE on -FI_EAGAIN; its caller progresses and
 * tries again. */
#define RMA(b, call, what)                                                    \
	do {                                                                  \
		ssize_t r_;                                                   \
		while ((r_ = (call)) == -FI_EAGAIN) {                         \
			progress(b);                                          \
			cl_tick((b)->c, what);                                \
		}                                                             \
		if (r_)                                                       \
			cl_fail((b)->c, "%s: %zd (%s)", what, r_,             \
				fi_strerror((int)-r_));                       \
	} while (0)

/* Progresses until a posted receive holds a fragment; returns its index. */
static int wait_frag(struct btl *b, uint64_t tag, uint64_t len,
		     const char *what)
{
	int k;

	for (;;) {
		for (k = 0; k < RD_NUM; k++)
			if (b->comps[k]) {
				if (b->rx[k].tag != tag || b->rx[k].len != len)
					cl_fail(b->c, "%s: tag 0x%llx, %llu bytes",
						what,
						(unsigned long long)b->rx[k].tag,
						(unsigned long long)b->rx[k].len);
				return k;
			}
		progress(b);
		cl_tick(b->c, what);
	}
}

static void rank_main(struct cl *c)
{
	struct btl b = { .c = c, .v5 = !strcmp(c->variant, "5") };
	struct fi_av_attr av_attr = { 0 };
	struct fi_cq_attr cq_attr = { 0 };
	char name[FI_NAME_MAX], peer_name[FI_NAME_MAX];
	size_t namelen = sizeof(name);
	static uint64_t win[WIN / 8] __attribute__((aligned(64)));
	static struct hdr sh;
	struct reg mine, peer;
	uint64_t operand, compare, result[4];
	int i, k;

	cl_lib(c);
	select_info(&b);

	/* mca_btl_ofi_init_device */
	CL_CALL(c, fi_fabric(b.info->fabric_attr, &b.fabric, NULL));
	CL_CALL(c, fi_domain(b.fabric, b.info, &b.domain, NULL));
	av_attr.type = FI_AV_MAP;
	CL_CALL(c, fi_av_open(b.domain, &av_attr, &b.av, NULL));
	if (b.info->domain_attr->max_ep_tx_ctx > 1)
		cl_note(c, "max_ep_tx_ctx %zu: the BTL would open a scalable "
			"endpoint here; not replayed, the regular endpoint is "
			"opened instead", b.info->domain_attr->max_ep_tx_ctx);
	CL_CALL(c, fi_endpoint(b.domain, b.info, &b.ep, NULL));
	cq_attr.format = FI_CQ_FORMAT_CONTEXT;
	cq_attr.wait_obj = FI_WAIT_NONE;
	CL_CALL(c, fi_cq_open(b.domain, &cq_attr, &b.cq, NULL));
	CL_CALL(c, fi_ep_bind(b.ep, &b.av->fid, 0));
	CL_CALL(c, fi_ep_bind(b.ep, &b.cq->fid,
			      FI_TRANSMIT | FI_SEND | FI_RECV));
	CL_CALL(c, fi_enable(b.ep));
	b.virt_addr = b.info->domain_attr->mr_mode == FI_MR_BASIC ||
		      (b.info->domain_attr->mr_mode & FI_MR_VIRT_ADDR);
	CL_CALL(c, fi_getname(&b.ep->fid, name, &namelen));
	for (i = 0; i < RD_NUM; i++)
		CL_CALL(c, fi_recv(b.ep, &b.rx[i], sizeof(b.rx[i]), NULL,
				   FI_ADDR_UNSPEC, &b.comps[i]));

	/* modex, add_procs */
	cl_xchg(c, name, namelen, peer_name, sizeof(peer_name));
	k = fi_av_insert(b.av, peer_name, 1, &b.peer, 0, NULL);
	if (k != 1)
		cl_fail(c, "fi_av_insert: %d", k);

	/* osc rdma: each rank registers its window and publishes it */
	memset(win, 0, sizeof(win));
	if (c->rank == 0)
		cl_fill(win + 1024, 4096, 20);	/* what rank 1 will read */
	reg_mem(&b, win, sizeof(win), &mine);
	cl_xchg(c, &mine, sizeof(mine), &peer, sizeof(peer));

	if (c->rank == 1) {
		static uint64_t local[WIN / 8] __attribute__((aligned(64)));
		struct fid_mr *lmr = b.mr;	/* local buffers in the window */
		void *desc = fi_mr_desc(lmr);
		uint64_t raddr;
		int idx = RD_NUM + 1;

		/* put 8 KiB at offset 0 of rank 0's window */
		cl_fill(local, 8192, 21);
		memcpy(win, local, 8192);
		raddr = peer.base - peer.base_addr;
		RMA(&b, fi_write(b.ep, win, 8192, desc, b.peer, raddr,
				 peer.rkey, &b.comps[idx]), "fi_write");
		wait_comp(&b, idx, 1, "fi_write");
		/* get 4 KiB from offset 8 KiB */
		raddr = peer.base + 8192 - peer.base_addr;
		RMA(&b, fi_read(b.ep, win + 2048, 4096, desc, b.peer, raddr,
				peer.rkey, &b.comps[idx]), "fi_read");
		wait_comp(&b, idx, 2, "fi_read");
		cl_check(c, win + 2048, 4096, 20, "fi_read data");
		/* MPI_Fetch_and_op(SUM), MPI_Accumulate(SUM), MPI_Compare_and_swap
		 * on the uint64 at offset 32 KiB of rank 0's window, which is 0 */
		raddr = peer.base + 32768 - peer.base_addr;
		operand = 5;
		RMA(&b, fi_fetch_atomic(b.ep, &operand, 1, NULL, &win[4096],
					desc, b.peer, raddr, peer.rkey, FI_UINT64,
					FI_SUM, &b.comps[idx]), "fi_fetch_atomic");
		wait_comp(&b, idx, 3, "fi_fetch_atomic");
		result[0] = win[4096];
		operand = 7;
		RMA(&b, fi_atomic(b.ep, &operand, 1, NULL, b.peer, raddr,
				  peer.rkey, FI_UINT64, FI_SUM, &b.comps[idx]),
		    "fi_atomic");
		wait_comp(&b, idx, 4, "fi_atomic");
		operand = 100;
		compare = 12;
		RMA(&b, fi_compare_atomic(b.ep, &operand, 1, NULL, &compare,
					  NULL, &win[4097], desc, b.peer, raddr,
					  peer.rkey, FI_UINT64, FI_CSWAP,
					  &b.comps[idx]), "fi_compare_atomic");
		wait_comp(&b, idx, 5, "fi_compare_atomic");
		result[1] = win[4097];
		if (result[0] != 0 || result[1] != 12)
			cl_fail(c, "atomics fetched %llu and %llu, 0 and 12 "
				"expected", (unsigned long long)result[0],
				(unsigned long long)result[1]);
		/* two-sided: a fragment, after which rank 0 looks at its
		 * window, then rank 0's reply */
		cl_fill(sh.payload, 3000, 22);
		sh.tag = 0x41;
		send_frag(&b, &sh, 3000);
		k = wait_frag(&b, 0x42, 100, "the reply fragment");
		cl_check(c, b.rx[k].payload, 100, 23, "reply");
	} else {
		/* the target progresses (as osc and ob1 do) until the fragment
		 * rank 1 sends after its one-sided operations */
		k = wait_frag(&b, 0x41, 3000, "a fragment");
		cl_check(c, b.rx[k].payload, 3000, 22, "fragment");
		cl_check(c, win, 8192, 21, "fi_write data at the target");
		if (win[4096] != 100)
			cl_fail(c, "target word after fetch-add 5, add 7, cswap "
				"12->100 is %llu, 100 expected",
				(unsigned long long)win[4096]);
		cl_fill(sh.payload, 100, 23);
		sh.tag = 0x42;
		send_frag(&b, &sh, 100);
	}
	cl_barrier_p(c, progress_cb, &b);

	/* the registration cache empties, then mca_btl_ofi_finalize */
	CL_CALL(c, fi_close(&b.mr->fid));
	CL_CALL(c, fi_close(&b.ep->fid));
	CL_CALL(c, fi_close(&b.cq->fid));
	CL_CALL(c, fi_close(&b.av->fid));
	CL_CALL(c, fi_close(&b.domain->fid));
	CL_CALL(c, fi_close(&b.fabric->fid));
	fi_freeinfo(b.info);
	cl_pass(c);
}

int main(int argc, char **argv)
{
	return cl_run(argc, argv, "ompi-btl", rank_main);
}
