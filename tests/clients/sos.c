/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Sandia OpenSHMEM 1.5's OFI transport, default build (FI_MR_SCALABLE-style
 * registration with keys 0 and 1, a target counter bound to the memory
 * regions, no hard polling): PE 1 puts, gets and does atomics on PE 0's
 * symmetric heap and data segment; PE 0 waits on its target counter.
 *
 * Follows, in Sandia-OpenSHMEM/SOS v1.5.3:
 *   src/transport_ofi.c: query_for_fabric (hints: FI_RMA|FI_ATOMIC|
 *     FI_RMA_EVENT, mr_mode 0, mr_key_size 1, FI_PROGRESS_AUTO,
 *     FI_DELIVERY_COMPLETE, inject_size 16, no rx_attr; the multirail
 *     choice among entries with a NIC, by NIC name, round robin by PE; the
 *     mr_key_size rewritten before fi_domain), allocate_fabric_resources
 *     (FI_AV_TABLE), shmem_transport_ofi_target_ep_init (caps rewritten,
 *     tx caps FI_RMA|FI_ATOMIC, a CQ bound FI_TRANSMIT|FI_RECV),
 *     allocate_recv_cntr_mr and ofi_mr_reg_bind (target counter, heap key 1
 *     and data key 0, fi_mr_bind of each to the counter FI_REMOTE_WRITE),
 *     publish_av_info / populate_av (fi_av_insert of all names into the
 *     table), shmem_transport_ofi_ctx_init and bind_enable_ep_resources
 *     (caps FI_RMA|FI_WRITE|FI_READ|FI_ATOMIC|FI_RECV on both sides, put
 *     and get counters, a FI_CQ_FORMAT_CONTEXT CQ bound FI_SELECTIVE_COMPLETION|
 *     FI_TRANSMIT|FI_RECV), atomic_limitations_check (fi_atomicvalid,
 *     fi_fetch_atomicvalid, fi_compare_atomicvalid over SOS's tables; the
 *     standard, extended and internal ones are required), the close order
 *     of shmem_transport_fini;
 *   src/transport_ofi.h: shmem_transport_put_scalar (fi_inject_write),
 *     shmem_transport_ofi_put_large (fi_write), shmem_transport_get
 *     (fi_read), the AMOs (fi_inject_atomic, fi_fetch_atomic,
 *     fi_compare_atomic), shmem_transport_quiet (fi_cntr_read and
 *     fi_cntr_readerr, then fi_cntr_wait with no timeout: the default poll
 *     limit is 0), shmem_transport_received_cntr_get/wait (the target
 *     counter under shmem_wait_until), shmem_transport_ofi_get_mr (keys 0
 *     and 1, offsets into the segments).
 * Shared transmit contexts are used when the provider offers them
 * (max_ep_stx_ctx > 0): that part is not replayed (shared contexts are not
 * part of this suite yet); the note says so and the context gets its own.
 *
 * NAME is SHMEM_OFI_PROVIDER.
 */
#include "harness.h"

#include <rdma/fi_atomic.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_rma.h>

#define HEAP (1024 * 1024)
#define DATA (64 * 1024)

static char heap[HEAP] __attribute__((aligned(4096)));	/* symmetric heap */
static char data[DATA] __attribute__((aligned(4096)));	/* data segment */

struct sos {
	struct cl *c;
	struct fi_info *fabrics, *p_info;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_av *av;
	struct fid_ep *target_ep, *ep;
	struct fid_cq *target_cq, *cq;
	struct fid_cntr *target_cntr, *put_cntr, *get_cntr;
	struct fid_mr *heap_mr, *data_mr;
	uint64_t pending_put, pending_get;
};

static int compare_nic_names(const void *a, const void *b)
{
	const struct fi_info *const *x = a, *const *y = b;

	return strcmp((*x)->nic->device_attr->name,
		      (*y)->nic->device_attr->name);
}

static bool nic_already_used(struct fid_nic *nic, struct fi_info **list, int n)
{
	int i;

	for (i = 0; i < n; i++) {
		struct fid_nic *o = list[i]->nic;

		if (nic->bus_attr->bus_type == FI_BUS_PCI &&
		    o->bus_attr->bus_type == FI_BUS_PCI) {
			struct fi_pci_attr *a = &nic->bus_attr->attr.pci,
					   *b = &o->bus_attr->attr.pci;

			if (a->domain_id == b->domain_id &&
			    a->bus_id == b->bus_id &&
			    a->device_id == b->device_id &&
			    a->function_id == b->function_id)
				return true;
		} else if (!strcmp(nic->device_attr->name,
				   o->device_attr->name)) {
			return true;
		}
	}
	return false;
}

static void query_for_fabric(struct sos *s)
{
	struct cl *c = s->c;
	struct fi_info hints = { 0 }, *p, *nics[64];
	struct fi_tx_attr tx_attr = { 0 };
	struct fi_domain_attr domain_attr = { 0 };
	struct fi_fabric_attr fabric_attr = { 0 };
	struct fi_ep_attr ep_attr = { 0 };
	int ret, num_nics = 0;

	fabric_attr.prov_name = (char *)c->name;
	hints.caps = FI_RMA | FI_ATOMIC | FI_RMA_EVENT;
	hints.addr_format = FI_FORMAT_UNSPEC;
	domain_attr.data_progress = FI_PROGRESS_AUTO;
	domain_attr.resource_mgmt = FI_RM_ENABLED;
	domain_attr.mr_mode = 0;
	domain_attr.mr_key_size = 1;
	domain_attr.threading = FI_THREAD_DOMAIN;
	hints.domain_attr = &domain_attr;
	ep_attr.type = FI_EP_RDM;
	ep_attr.tx_ctx_cnt = 0;
	hints.fabric_attr = &fabric_attr;
	tx_attr.op_flags = FI_DELIVERY_COMPLETE;
	tx_attr.inject_size = sizeof(long double);
	hints.tx_attr = &tx_attr;
	hints.rx_attr = NULL;
	hints.ep_attr = &ep_attr;

	ret = fi_getinfo(FI_VERSION(1, 5), NULL, NULL, 0, &hints, &s->fabrics);
	if (ret == -FI_ENODATA)
		cl_skip(c, "OFI transport did not find any valid fabric "
			"services (provider=%s): -FI_ENODATA", c->name);
	if (ret)
		cl_fail(c, "fi_getinfo returned %d (%s)", ret, fi_strerror(-ret));

	/* multirail: one entry per NIC, sorted by NIC name, round robin */
	for (p = s->fabrics; p; p = p->next)
		if (p->nic && num_nics < 64 &&
		    !nic_already_used(p->nic, nics, num_nics))
			nics[num_nics++] = p;
	if (!num_nics) {
		s->p_info = s->fabrics;
	} else {
		qsort(nics, num_nics, sizeof(nics[0]), compare_nic_names);
		s->p_info = nics[c->rank % num_nics];
	}
	if (!s->p_info->ep_attr->max_msg_size)
		cl_fail(c, "OFI provider did not set max_msg_size");
	if (s->p_info->domain_attr->max_ep_stx_ctx)
		cl_note(c, "max_ep_stx_ctx %zu: SOS would give its context a "
			"shared transmit context (fi_stx_context); not "
			"replayed, the context gets its own",
			s->p_info->domain_attr->max_ep_stx_ctx);
	s->p_info->domain_attr->mr_key_size =
		(s->p_info->domain_attr->mr_mode & FI_MR_PROV_KEY) ? 1 : 0;
	if (s->p_info->tx_attr->inject_size < sizeof(long double))
		cl_fail(c, "inject_size %zu, at least %zu needed",
			s->p_info->tx_attr->inject_size, sizeof(long double));
	cl_note(c, "%s fabric %s domain %s mr_mode 0x%x, %d NIC(s)",
		s->p_info->fabric_attr->prov_name, s->p_info->fabric_attr->name,
		s->p_info->domain_attr->name, s->p_info->domain_attr->mr_mode,
		num_nics);
}

static void target_ep_init(struct sos *s)
{
	struct cl *c = s->c;
	struct fi_info *i = s->p_info;
	struct fi_cq_attr cq_attr = { 0 };
	struct fi_cntr_attr cntr_attr = { 0 };

	i->ep_attr->tx_ctx_cnt = 0;
	i->caps = FI_RMA | FI_ATOMIC | FI_REMOTE_READ | FI_REMOTE_WRITE |
		  FI_RMA_EVENT;
	i->tx_attr->op_flags = 0;
	i->mode = 0;
	i->tx_attr->mode = 0;
	i->rx_attr->mode = 0;
	i->tx_attr->caps = FI_RMA | FI_ATOMIC;
	i->rx_attr->caps = i->caps;
	CL_CALL(c, fi_endpoint(s->domain, i, &s->target_ep, NULL));
	CL_CALL(c, fi_ep_bind(s->target_ep, &s->av->fid, 0));
	CL_CALL(c, fi_cq_open(s->domain, &cq_attr, &s->target_cq, NULL));
	CL_CALL(c, fi_ep_bind(s->target_ep, &s->target_cq->fid,
			      FI_TRANSMIT | FI_RECV));
	CL_CALL(c, fi_enable(s->target_ep));

	/* allocate_recv_cntr_mr, ofi_mr_reg_bind */
	cntr_attr.events = FI_CNTR_EVENTS_COMP;
	cntr_attr.wait_obj = FI_WAIT_UNSPEC;
	CL_CALL(c, fi_cntr_open(s->domain, &cntr_attr, &s->target_cntr, NULL));
	CL_CALL(c, fi_mr_reg(s->domain, heap, HEAP,
			     FI_REMOTE_READ | FI_REMOTE_WRITE, 0, 1, 0,
			     &s->heap_mr, NULL));
	CL_CALL(c, fi_mr_reg(s->domain, data, DATA,
			     FI_REMOTE_READ | FI_REMOTE_WRITE, 0, 0, 0,
			     &s->data_mr, NULL));
	CL_CALL(c, fi_mr_bind(s->heap_mr, &s->target_cntr->fid,
			      FI_REMOTE_WRITE));
	CL_CALL(c, fi_mr_bind(s->data_mr, &s->target_cntr->fid,
			      FI_REMOTE_WRITE));
}

static void ctx_init(struct sos *s)
{
	struct cl *c = s->c;
	struct fi_info *i = s->p_info;
	struct fi_cntr_attr put_attr = { .events = FI_CNTR_EVENTS_COMP,
					 .wait_obj = FI_WAIT_UNSPEC };
	struct fi_cntr_attr get_attr = put_attr;
	struct fi_cq_attr cq_attr = { .format = FI_CQ_FORMAT_CONTEXT };

	i->ep_attr->tx_ctx_cnt = 0;	/* FI_SHARED_CONTEXT with STXs */
	i->caps = FI_RMA | FI_WRITE | FI_READ | FI_ATOMIC | FI_RECV;
	i->tx_attr->op_flags = FI_DELIVERY_COMPLETE;
	i->mode = 0;
	i->tx_attr->mode = 0;
	i->rx_attr->mode = 0;
	i->tx_attr->caps = i->caps;
	i->rx_attr->caps = FI_RECV;	/* to drive progress on the CQ */
	CL_CALL(c, fi_cntr_open(s->domain, &put_attr, &s->put_cntr, NULL));
	CL_CALL(c, fi_cntr_open(s->domain, &get_attr, &s->get_cntr, NULL));
	CL_CALL(c, fi_cq_open(s->domain, &cq_attr, &s->cq, NULL));
	CL_CALL(c, fi_endpoint(s->domain, i, &s->ep, NULL));
	CL_CALL(c, fi_ep_bind(s->ep, &s->put_cntr->fid, FI_WRITE));
	CL_CALL(c, fi_ep_bind(s->ep, &s->get_cntr->fid, FI_READ));
	CL_CALL(c, fi_ep_bind(s->ep, &s->cq->fid,
			      FI_SELECTIVE_COMPLETION | FI_TRANSMIT | FI_RECV));
	CL_CALL(c, fi_ep_bind(s->ep, &s->av->fid, 0));
	CL_CALL(c, fi_enable(s->ep));
}

/* atomic_limitations_check: the tables that must be valid */
static void atomic_limitations_check(struct sos *s)
{
	static const int amo_dt[] = { FI_INT32, FI_INT64, FI_INT64, FI_INT32,
				      FI_INT64 };
	static const int amo_ex_dt[] = { FI_FLOAT, FI_DOUBLE, FI_INT32,
					 FI_INT64, FI_INT64, FI_INT32,
					 FI_INT64 };
	static const int red_dt[] = { FI_FLOAT, FI_DOUBLE, FI_FLOAT_COMPLEX,
				      FI_DOUBLE_COMPLEX, FI_INT16, FI_INT32,
				      FI_INT64, FI_INT64, FI_INT32, FI_INT64,
				      FI_LONG_DOUBLE };
	static const int red_ops[] = { FI_BAND, FI_BOR, FI_BXOR, FI_MAX, FI_MIN,
				       FI_SUM, FI_PROD };
	struct cl *c = s->c;
	size_t n, i, j;
	int ret, soft = 0;

#define REQUIRE(fn, dt, op)                                                   \
	do {                                                                  \
		n = 0;                                                        \
		ret = fn(s->ep, (enum fi_datatype)(dt), (enum fi_op)(op), &n);\
		if (ret || !n)                                                \
			cl_fail(c, "Provider does not support atomic %s on "  \
				"type %s (%d, %zu): SOS stops", fi_tostr(&(op),\
				FI_TYPE_ATOMIC_OP), fi_tostr(&(dt),           \
				FI_TYPE_ATOMIC_TYPE), ret, n);                \
	} while (0)
	for (i = 0; i < 5; i++) {
		int op = FI_SUM, cop = FI_CSWAP;

		REQUIRE(fi_atomicvalid, amo_dt[i], op);
		REQUIRE(fi_fetch_atomicvalid, amo_dt[i], op);
		REQUIRE(fi_compare_atomicvalid, amo_dt[i], cop);
	}
	for (i = 0; i < 7; i++) {
		int w = FI_ATOMIC_WRITE, r = FI_ATOMIC_READ;

		REQUIRE(fi_atomicvalid, amo_ex_dt[i], w);
		REQUIRE(fi_fetch_atomicvalid, amo_ex_dt[i], w);
		REQUIRE(fi_fetch_atomicvalid, amo_ex_dt[i], r);
	}
	/* reductions: done in software where not valid */
	for (i = 0; i < sizeof(red_dt) / sizeof(red_dt[0]); i++)
		for (j = 0; j < sizeof(red_ops) / sizeof(red_ops[0]); j++)
			if (fi_atomicvalid(s->ep, red_dt[i], red_ops[j], &n) ||
			    !n)
				soft++;
	{
		int dt = FI_INT32, op = FI_MSWAP;

		REQUIRE(fi_compare_atomicvalid, dt, op);
	}
#undef REQUIRE
	cl_note(c, "atomics valid; %d reduction dt x op in software", soft);
}

/* shmem_transport_quiet with the default poll limit of 0 */
static void quiet(struct sos *s)
{
	struct cl *c = s->c;
	int ret;

	if (fi_cntr_readerr(s->put_cntr) || fi_cntr_readerr(s->get_cntr))
		cl_fail(c, "Operations completed in error (%llu put, %llu get)",
			(unsigned long long)fi_cntr_readerr(s->put_cntr),
			(unsigned long long)fi_cntr_readerr(s->get_cntr));
	ret = fi_cntr_wait(s->put_cntr, s->pending_put, -1);
	if (ret)
		cl_fail(c, "fi_cntr_wait(put, %llu): %d (%s), counter %llu",
			(unsigned long long)s->pending_put, ret,
			fi_strerror(-ret),
			(unsigned long long)fi_cntr_read(s->put_cntr));
	ret = fi_cntr_wait(s->get_cntr, s->pending_get, -1);
	if (ret)
		cl_fail(c, "fi_cntr_wait(get, %llu): %d (%s), counter %llu",
			(unsigned long long)s->pending_get, ret,
			fi_strerror(-ret),
			(unsigned long long)fi_cntr_read(s->get_cntr));
}

#define TRY(s, call, what)                                                    \
	do {                                                                  \
		ssize_t r_;                                                   \
		while ((r_ = (call)) == -FI_EAGAIN)                           \
			cl_tick((s)->c, what);                                \
		if (r_)                                                       \
			cl_fail((s)->c, "%s: %zd (%s)", what, r_,             \
				fi_strerror((int)-r_));                       \
	} while (0)

/* offsets into PE 0's segments: key 1 heap, key 0 data */
#define HEAP_OFF(p) ((uint64_t)((char *)(p) - heap))
#define DATA_OFF(p) ((uint64_t)((char *)(p) - data))

static void initiator(struct sos *s)
{
	struct cl *c = s->c;
	static char src[128 * 1024];
	static int64_t val, result, compare;
	fi_addr_t pe0 = 0;	/* FI_AV_TABLE: the PE's index */
	int64_t *counter = (int64_t *)(heap + 4096);
	int64_t *flag = (int64_t *)(data + 64);

	/* shmem_long_p: a scalar put */
	val = 0x1122334455667788LL;
	s->pending_put++;
	TRY(s, fi_inject_write(s->ep, &val, 8, pe0, HEAP_OFF(heap), 1),
	    "fi_inject_write");
	/* shmem_putmem of 64 KiB into the heap */
	cl_fill(src, 65536, 61);
	s->pending_put++;
	TRY(s, fi_write(s->ep, src, 65536, NULL, pe0, HEAP_OFF(heap + 8192), 1,
			NULL), "fi_write");
	/* shmem_getmem of 16 KiB of the data segment */
	s->pending_get++;
	TRY(s, fi_read(s->ep, src + 65536, 16384, NULL, pe0,
		       DATA_OFF(data + 4096), 0, NULL), "fi_read");
	/* shmem_long_atomic_add, shmem_long_atomic_fetch_add,
	 * shmem_long_atomic_compare_swap on the counter */
	val = 5;
	s->pending_put++;
	TRY(s, fi_inject_atomic(s->ep, &val, 1, pe0, HEAP_OFF(counter), 1,
				FI_INT64, FI_SUM), "fi_inject_atomic");
	quiet(s);
	cl_check(c, src + 65536, 16384, 62, "shmem_getmem data");
	val = 6;
	s->pending_get++;
	TRY(s, fi_fetch_atomic(s->ep, &val, 1, NULL, &result, NULL, pe0,
			       HEAP_OFF(counter), 1, FI_INT64, FI_SUM, NULL),
	    "fi_fetch_atomic");
	quiet(s);
	if (result != 5)
		cl_fail(c, "fetch-add fetched %lld, 5 expected",
			(long long)result);
	val = 100;
	compare = 11;
	s->pending_get++;
	TRY(s, fi_compare_atomic(s->ep, &val, 1, NULL, &compare, NULL, &result,
				 NULL, pe0, HEAP_OFF(counter), 1, FI_INT64,
				 FI_CSWAP, NULL), "fi_compare_atomic");
	quiet(s);
	if (result != 11)
		cl_fail(c, "compare-swap fetched %lld, 11 expected",
			(long long)result);
	/* shmem_long_p of the flag PE 0 waits on (after a fence: quiet) */
	val = 1;
	s->pending_put++;
	TRY(s, fi_inject_write(s->ep, &val, 8, pe0, DATA_OFF(flag), 0),
	    "fi_inject_write (flag)");
	quiet(s);
}

static void target(struct sos *s)
{
	struct cl *c = s->c;
	volatile int64_t *flag = (int64_t *)(data + 64);
	uint64_t cnt;
	int ret;

	/* shmem_long_wait_until(flag, SHMEM_CMP_EQ, 1) */
	while (*flag != 1) {
		cnt = fi_cntr_read(s->target_cntr);
		if (*flag == 1)
			break;
		ret = fi_cntr_wait(s->target_cntr, cnt + 1, -1);
		if (ret)
			cl_fail(c, "fi_cntr_wait(target, %llu): %d (%s)",
				(unsigned long long)cnt + 1, ret,
				fi_strerror(-ret));
	}
	if (*(int64_t *)heap != 0x1122334455667788LL)
		cl_fail(c, "scalar put landed as 0x%llx",
			(unsigned long long)*(int64_t *)heap);
	cl_check(c, heap + 8192, 65536, 61, "shmem_putmem data");
	if (*(int64_t *)(heap + 4096) != 100)
		cl_fail(c, "counter after add 5, fetch-add 6, cswap 11->100: "
			"%lld", (long long)*(int64_t *)(heap + 4096));
	/*
	 * The data is in place before the counter counts it (a NIC's
	 * counters lag its writes too): the writes before the flag are
	 * counted soon, not at once.  SOS relies on no more than that.
	 */
	ret = fi_cntr_wait(s->target_cntr, 3, 5000);
	cnt = fi_cntr_read(s->target_cntr);
	cl_note(c, "target counter %llu after 2 puts, 3 atomics and the flag",
		(unsigned long long)cnt);
	if (ret || cnt < 3)
		cl_fail(c, "target counter %llu within 5 s: remote writes not "
			"counted (fi_cntr_wait %d)",
			(unsigned long long)cnt, ret);
}

static void rank_main(struct cl *c)
{
	struct sos s = { .c = c };
	struct fi_av_attr av_attr = { .type = FI_AV_TABLE };
	char name[128], peer[128], table[256];
	size_t len = sizeof(name), plen;
	int n;

	cl_lib(c);
	query_for_fabric(&s);
	CL_CALL(c, fi_fabric(s.p_info->fabric_attr, &s.fabric, NULL));
	CL_CALL(c, fi_domain(s.fabric, s.p_info, &s.domain, NULL));
	CL_CALL(c, fi_av_open(s.domain, &av_attr, &s.av, NULL));
	target_ep_init(&s);
	CL_CALL(c, fi_getname(&s.target_ep->fid, name, &len));
	if (len > sizeof(name))
		cl_fail(c, "fi_getname failed: %zu bytes", len);
	ctx_init(&s);
	atomic_limitations_check(&s);

	/* the runtime's KVS, then populate_av: every PE's name, one call,
	 * at the local name's length */
	memset(data, 0, sizeof(data));
	memset(heap, 0, sizeof(heap));
	if (c->rank == 0)
		cl_fill(data + 4096, 16384, 62);
	*(int64_t *)(heap + 4096) = 0;
	plen = cl_xchg(c, name, len, peer, sizeof(peer));
	if (plen != len)
		cl_fail(c, "names of %zu and %zu bytes: SOS assumes one length",
			len, plen);
	memcpy(table + c->rank * len, name, len);
	memcpy(table + !c->rank * len, peer, len);
	n = fi_av_insert(s.av, table, 2, NULL, 0, NULL);
	if (n != 2)
		cl_fail(c, "av insert failed: %d", n);
	cl_barrier(c);

	if (c->rank == 1)
		initiator(&s);
	else
		target(&s);
	cl_barrier(c);	/* shmem_finalize's barrier */

	/* shmem_transport_fini */
	CL_CALL(c, fi_close(&s.ep->fid));
	CL_CALL(c, fi_close(&s.put_cntr->fid));
	CL_CALL(c, fi_close(&s.get_cntr->fid));
	CL_CALL(c, fi_close(&s.cq->fid));
	CL_CALL(c, fi_close(&s.heap_mr->fid));
	CL_CALL(c, fi_close(&s.data_mr->fid));
	CL_CALL(c, fi_close(&s.target_ep->fid));
	CL_CALL(c, fi_close(&s.target_cq->fid));
	CL_CALL(c, fi_close(&s.target_cntr->fid));
	CL_CALL(c, fi_close(&s.av->fid));
	CL_CALL(c, fi_close(&s.domain->fid));
	CL_CALL(c, fi_close(&s.fabric->fid));
	fi_freeinfo(s.fabrics);
	cl_pass(c);
}

int main(int argc, char **argv)
{
	return cl_run(argc, argv, "sos", rank_main);
}
