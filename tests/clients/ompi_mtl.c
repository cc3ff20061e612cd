/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Open MPI's ofi MTL (pml cm), as it drives OFI between two ranks.
 *
 * Follows, in open-mpi/ompi:
 *   v4.1.8 and v5.0.10 ompi/mca/mtl/ofi/mtl_ofi_component.c:
 *     ompi_mtl_ofi_component_init (hints, fi_getinfo, the FI_HMEM retry of
 *     v5, select_ofi_provider, tag mode, fi_fabric/fi_domain),
 *     ompi_mtl_ofi_init_regular_ep (endpoint, AV, CQ and their binds),
 *     ompi_mtl_ofi_finalize (close order);
 *   ompi/mca/mtl/ofi/mtl_ofi.c: ompi_mtl_ofi_add_procs (fi_av_insert);
 *   ompi/mca/mtl/ofi/mtl_ofi.h: ompi_mtl_ofi_context_progress (fi_cq_read,
 *     fi_cq_readerr), send_generic/isend_generic (fi_tinjectdata up to
 *     inject_size, fi_tsenddata above, the synchronous-send ack),
 *     irecv_generic, recv_callback (ack by fi_tsendmsg, no completion),
 *     iprobe_generic (fi_trecvmsg FI_PEEK);
 *   ompi/mca/mtl/ofi/mtl_ofi_types.h: the tag layouts;
 *   opal/mca/common/ofi/common_ofi.c: opal_common_ofi_is_in_list (prefix
 *     match of mtl_ofi_provider_include), the round-robin choice among alike
 *     infos by local rank, opal_common_ofi_export_memory_monitor
 *     (fi_open "mr_cache" + fi_import_fid, failures tolerated).
 *
 * NAME is mtl_ofi_provider_include.  -v 4 (default) or -v 5.
 */
#include "harness.h"

#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_ext.h>
#include <rdma/fi_tagged.h>

#define PROG_EVENTS 100		/* MTL_OFI_MAX_PROG_EVENT_COUNT */
#define MIN_CID_BITS 8		/* MTL_OFI_MINIMUM_CID_BITS */
#define HIGHEST_TAG_BIT 0x8000000000000000ULL
#define CID 3			/* a communicator id */

struct mtl {
	struct cl *c;
	int v5;
	struct fi_info *info;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_ep *ep;
	struct fid_av *av;
	struct fid_cq *cq;
	struct fid *cache;
	struct fid_mem_monitor *monitor;
	fi_addr_t addr[2];
	bool cq_data;		/* ofi_tag_full: source rank in CQ data */
	int cid_bits;
	uint64_t sync_send, sync_ack, proto_mask, tag_mask;
	int source_shift;
	/* what the progress loop has seen, per request context */
	int done[8];
	struct fi_cq_tagged_entry last[8];
	int probe_err;
	int posted;		/* sends that will complete (not injected) */
};

/* The memory monitor Open MPI exports: it never invalidates anything. */
static int mon_start(struct fid_mem_monitor *m) { (void)m; return 0; }
static void mon_stop(struct fid_mem_monitor *m) { (void)m; }
static int mon_sub(struct fid_mem_monitor *m, const void *a, size_t l)
{ (void)m; (void)a; (void)l; return 0; }
static void mon_unsub(struct fid_mem_monitor *m, const void *a, size_t l)
{ (void)m; (void)a; (void)l; }
static bool mon_valid(struct fid_mem_monitor *m, const void *a, size_t l)
{ (void)m; (void)a; (void)l; return true; }
static struct fi_ops_mem_monitor mon_ops = {
	.size = sizeof(struct fi_ops_mem_monitor),
	.start = mon_start, .stop = mon_stop, .subscribe = mon_sub,
	.unsubscribe = mon_unsub, .valid = mon_valid,
};

static bool in_list(const char *list, const char *item)
{
	return !strncasecmp(item, list, strlen(list));
}

static void set_hints(struct mtl *m, struct fi_info *hints)
{
	hints->mode = FI_CONTEXT | FI_CONTEXT2;
	hints->ep_attr->type = FI_EP_RDM;
	hints->caps |= (m->v5 ? FI_MSG : 0) | FI_TAGGED | FI_LOCAL_COMM |
		       FI_REMOTE_COMM | FI_DIRECTED_RECV;
	hints->tx_attr->msg_order = FI_ORDER_SAS;
	hints->rx_attr->msg_order = FI_ORDER_SAS;
	hints->rx_attr->op_flags = FI_COMPLETION;
	hints->tx_attr->op_flags = FI_COMPLETION;
	hints->domain_attr->threading = FI_THREAD_DOMAIN;
	hints->domain_attr->cq_data_size = sizeof(int);	/* tag mode auto */
	hints->domain_attr->control_progress = FI_PROGRESS_UNSPEC;
	hints->domain_attr->data_progress = FI_PROGRESS_UNSPEC;
	hints->domain_attr->av_type = FI_AV_MAP;
	hints->domain_attr->resource_mgmt = FI_RM_ENABLED;
}

static int getinfo(struct mtl *m, struct fi_info *hints, struct fi_info **list)
{
	int ret;

	if (!m->v5)
		return fi_getinfo(FI_VERSION(1, 5), NULL, NULL, 0, hints, list);
	ret = fi_getinfo(FI_VERSION(1, 18), NULL, NULL, 0, hints, list);
	if (ret == -FI_ENOSYS)
		ret = fi_getinfo(FI_VERSION(1, 9), NULL, NULL, 0, hints, list);
	return ret;
}

static void select_info(struct mtl *m)
{
	struct cl *c = m->c;
	struct fi_info *hints = fi_allocinfo(), *list = NULL, *p, *pick;
	int ret, n = 0, i = 0;

	if (m->v5) {
		hints->caps |= FI_HMEM;
		hints->domain_attr->mr_mode |= FI_MR_HMEM | FI_MR_ALLOCATED;
	}
again:
	set_hints(m, hints);
	ret = getinfo(m, hints, &list);
	for (p = ret ? NULL : list; p && !in_list(c->name, p->fabric_attr->prov_name);)
		p = p->next;
	if (m->v5 && (ret == -FI_ENODATA || (!ret && !p)) &&
	    (hints->caps & FI_HMEM)) {
		cl_note(c, "no answer with FI_HMEM (%d): asking again without",
			ret);
		hints->caps &= ~FI_HMEM;
		hints->domain_attr->mr_mode &= ~FI_MR_HMEM;
		fi_freeinfo(list);
		list = NULL;
		goto again;
	}
	if (ret == -FI_ENODATA)
		cl_skip(c, "fi_getinfo: -FI_ENODATA for the MTL's hints");
	if (ret)
		cl_fail(c, "fi_getinfo returned %d (%s)", ret, fi_strerror(-ret));
	if (!p) {
		char seen[256] = "";

		for (p = list; p; p = p->next)
			if (!strstr(seen, p->fabric_attr->prov_name) &&
			    strlen(seen) + strlen(p->fabric_attr->prov_name) + 3 <
			    sizeof(seen))
				sprintf(seen + strlen(seen), "%s%s",
					*seen ? ", " : "",
					p->fabric_attr->prov_name);
		cl_skip(c, "no answer's prov_name starts with \"%s\" "
			"(answers: %s)", c->name, seen);
	}
	/* Alike infos from the first one included; unbound ranks take them
	 * round robin by local rank. */
	for (pick = p; pick; pick = pick->next)
		n += cl_ompi_alike(p, pick);
	for (pick = p; pick; pick = pick->next)
		if (cl_ompi_alike(p, pick) && i++ == c->rank % n)
			break;
	m->info = fi_dupinfo(pick);
	fi_freeinfo(list);
	fi_freeinfo(hints);
	cl_note(c, "%s, domain %s, protocol %u, %d alike", 
		m->info->fabric_attr->prov_name, m->info->domain_attr->name,
		m->info->ep_attr->protocol, n);
}

static void tag_mode(struct mtl *m)
{
	struct cl *c = m->c;
	int zeros = 0;

	if (m->info->domain_attr->cq_data_size >= sizeof(int) &&
	    (m->info->caps & FI_DIRECTED_RECV)) {
		m->cq_data = true;		/* ofi_tag_full */
		m->cid_bits = 30;
		m->tag_mask = 0xFFFFFFFFULL;
		m->sync_send = 0x100000000ULL;
		m->sync_ack = 0x200000000ULL;
		m->proto_mask = 0x300000000ULL;
		m->source_shift = 0;
	} else {
		m->cq_data = false;		/* ofi_tag_1 */
		m->cid_bits = 12;
		m->tag_mask = 0xFFFFFFFFULL;
		m->sync_send = 0x100000000ULL;
		m->sync_ack = 0x200000000ULL;
		m->proto_mask = 0x300000000ULL;
		m->source_shift = 34;
	}
	/* Bits the provider keeps for itself (mem_tag_format) shrink the cid. */
	while (!((m->info->ep_attr->mem_tag_format << zeros++) &
		 HIGHEST_TAG_BIT) && m->cid_bits >= MIN_CID_BITS)
		m->cid_bits--;
	if (m->cid_bits < MIN_CID_BITS)
		cl_fail(c, "not enough tag bits for a communicator id: "
			"mem_tag_format 0x%llx",
			(unsigned long long)m->info->ep_attr->mem_tag_format);
	cl_note(c, "tag mode %s, %d cid bits, cq_data_size %zu",
		m->cq_data ? "full (FI_REMOTE_CQ_DATA)" : "ofi_tag_1",
		m->cid_bits, m->info->domain_attr->cq_data_size);
}

static uint64_t send_tag(struct mtl *m, int tag)
{
	if (m->cq_data)
		return ((uint64_t)CID << 34) | (uint32_t)tag;
	return ((uint64_t)CID << 52) | ((uint64_t)m->c->rank << 34) |
	       (uint32_t)tag;
}

/* A receive for source src (-1: any) and tag (-1: any non-negative). */
static void recv_tag(struct mtl *m, int src, int tag, uint64_t *match,
		     uint64_t *mask)
{
	*mask = m->proto_mask;
	*match = (uint64_t)CID << (m->cq_data ? 34 : 52);
	if (!m->cq_data) {
		if (src < 0)
			*mask |= 0x3FFFFULL << 34;
		else
			*match |= (uint64_t)src << 34;
	}
	if (tag < 0)
		*mask |= m->tag_mask >> 1;
	else
		*match |= (uint32_t)tag;
}

static void export_monitor(struct mtl *m)
{
	struct cl *c = m->c;
	int ret;

	if (FI_VERSION_LT(fi_version(), FI_VERSION(1, 14)))
		return;
	ret = fi_open(FI_VERSION(1, 13), "mr_cache", NULL, 0, 0, &m->cache,
		      NULL);
	if (ret) {
		cl_note(c, "fi_open(\"mr_cache\"): %d (%s), carrying on as "
			"Open MPI does", ret, fi_strerror(-ret));
		m->cache = NULL;
		return;
	}
	m->monitor = calloc(1, sizeof(*m->monitor));
	m->monitor->fid.fclass = FI_CLASS_MEM_MONITOR;
	m->monitor->export_ops = &mon_ops;
	ret = fi_import_fid(m->cache, &m->monitor->fid, 0);
	if (ret) {
		cl_note(c, "fi_import_fid(mr_cache): %d (%s), carrying on",
			ret, fi_strerror(-ret));
		fi_close(m->cache);
		free(m->monitor);
		m->cache = NULL;
		m->monitor = NULL;
	}
}

/* ompi_mtl_ofi_context_progress: up to PROG_EVENTS entries a call. */
static int progress(struct mtl *m);

static void progress_cb(void *m)
{
	progress(m);
}

static int progress(struct mtl *m)
{
	struct cl *c = m->c;
	struct fi_cq_tagged_entry wc[PROG_EVENTS];
	struct fi_cq_err_entry err;
	ssize_t n, i;
	int count = 0;

	for (;;) {
		n = fi_cq_read(m->cq, wc, PROG_EVENTS);
		if (n > 0) {
			for (i = 0; i < n; i++) {
				int *ctx = wc[i].op_context;

				if (!ctx)
					continue;
				if (*ctx < 0 || *ctx >= 8)
					cl_fail(c, "completion with a context "
						"that is not ours: %p", ctx);
				m->done[*ctx]++;
				m->last[*ctx] = wc[i];
			}
			count += (int)n;
		} else if (n == -FI_EAVAIL) {
			memset(&err, 0, sizeof(err));
			n = fi_cq_readerr(m->cq, &err, 0);
			if (n == -FI_EAGAIN)
				return count;
			if (n < 0)
				cl_fail(c, "fi_cq_readerr: %zd", n);
			if (!err.op_context)
				cl_fail(c, "error completion without a context, "
					"flags 0x%llx",
					(unsigned long long)err.flags);
			if (err.err == FI_ENOMSG) {	/* a probe found nothing */
				m->probe_err++;
				m->done[*(int *)err.op_context]++;
				continue;
			}
			cl_fail(c, "error completion: %d (%s)", err.err,
				fi_strerror(err.err));
		} else if (n == -FI_EAGAIN || n == -EINTR) {
			return count;
		} else {
			cl_fail(c, "fi_cq_read: %zd (%s)", n,
				fi_strerror((int)-n));
		}
	}
}

static void wait_done(struct mtl *m, int ctx, int want, const char *what)
{
	while (m->done[ctx] < want) {
		progress(m);
		cl_tick(m->c, what);
	}
}

/* MTL_OFI_RETRY_UNTIL_DONE */
#define RETRY(m, call, what)                                                  \
	do {                                                                  \
		ssize_t r_;                                                   \
		while ((r_ = (call)) == -FI_EAGAIN) {                         \
			progress(m);                                          \
			cl_tick((m)->c, what);                                \
		}                                                             \
		if (r_)                                                       \
			cl_fail((m)->c, "%s: %zd (%s)", what, r_,             \
				fi_strerror((int)-r_));                       \
	} while (0)

static int ctxs[8] = { 0, 1, 2, 3, 4, 5, 6, 7 };

/* MPI_Isend / MPI_Issend of len bytes to rank dst; returns the number of
 * send completions to wait for (mpi_wait). */
static int mpi_isend(struct mtl *m, const void *buf, size_t len, int dst,
		     int tag, bool sync);

static void mpi_wait(struct mtl *m, int want)
{
	wait_done(m, 1, want, "the send's completion");
}

/* MPI_Send / MPI_Ssend */
static void mpi_send(struct mtl *m, const void *buf, size_t len, int dst,
		     int tag, bool sync)
{
	mpi_wait(m, mpi_isend(m, buf, len, dst, tag, sync));
}

static int mpi_isend(struct mtl *m, const void *buf, size_t len, int dst,
		     int tag, bool sync)
{
	uint64_t bits = send_tag(m, tag), match, mask;
	fi_addr_t to = m->addr[dst];
	int inject = len <= m->info->tx_attr->inject_size;
	int acks = m->done[2];
	char ack;

	if (sync) {
		/* The ack's receive goes first (ompi_mtl_ofi_ssend_recv). */
		match = (bits | m->sync_ack) & ~m->sync_send;
		mask = 0;
		RETRY(m, fi_trecv(m->ep, &ack, 0, NULL, to, match, mask,
				  &ctxs[2]), "fi_trecv (ssend ack)");
		bits |= m->sync_send;
	}
	if (inject) {
		if (m->cq_data)
			RETRY(m, fi_tinjectdata(m->ep, buf, len, m->c->rank, to,
						bits), "fi_tinjectdata");
		else
			RETRY(m, fi_tinject(m->ep, buf, len, to, bits),
			      "fi_tinject");
	} else {
		if (m->cq_data)
			RETRY(m, fi_tsenddata(m->ep, buf, len, NULL,
					      m->c->rank, to, bits, &ctxs[1]),
			      "fi_tsenddata");
		else
			RETRY(m, fi_tsend(m->ep, buf, len, NULL, to, bits,
					  &ctxs[1]), "fi_tsend");
		m->posted++;
	}
	if (sync)
		wait_done(m, 2, acks + 1, "the synchronous send's ack");
	return m->posted;
}

/* MPI_Recv; src -1 is MPI_ANY_SOURCE.  Returns the source reported. */
static int mpi_recv(struct mtl *m, void *buf, size_t len, int src, int tag,
		    size_t *got)
{
	struct cl *c = m->c;
	uint64_t match, mask;
	fi_addr_t from = src < 0 || !m->cq_data ? FI_ADDR_UNSPEC : m->addr[src];
	int before = m->done[0], source;
	struct fi_cq_tagged_entry *wc = &m->last[0];

	recv_tag(m, src, tag, &match, &mask);
	RETRY(m, fi_trecv(m->ep, buf, len, NULL, from, match, mask, &ctxs[0]),
	      "fi_trecv");
	wait_done(m, 0, before + 1, "a receive");
	source = m->cq_data ? (int)wc->data :
		 (int)((wc->tag >> 34) & 0x3FFFF);
	/* Open MPI reads the source from the entry's data (full mode) or
	 * tag, the length from len, and the protocol bits from tag: checked
	 * below by the callers; it does not look at the flags. */
	(void)c;
	*got = wc->len;
	/* The receiver acks a synchronous send, with no completion asked. */
	if ((wc->tag & m->proto_mask) == m->sync_send) {
		struct fi_msg_tagged msg = {
			.msg_iov = NULL, .desc = NULL, .iov_count = 0,
			.addr = m->addr[source],
			.tag = (wc->tag | m->sync_ack) & ~m->sync_send,
			.context = NULL, .data = 0,
		};
		RETRY(m, fi_tsendmsg(m->ep, &msg, 0), "fi_tsendmsg (ack)");
	}
	return source;
}

/* MPI_Iprobe: 1 found (length in *len), 0 not. */
static int mpi_iprobe(struct mtl *m, int src, int tag, size_t *len)
{
	uint64_t match, mask;
	int before = m->done[3], errs = m->probe_err;
	struct fi_msg_tagged msg = { 0 };

	recv_tag(m, src, tag, &match, &mask);
	msg.addr = src < 0 || !m->cq_data ? FI_ADDR_UNSPEC : m->addr[src];
	msg.tag = match;
	msg.ignore = mask;
	msg.context = &ctxs[3];
	RETRY(m, fi_trecvmsg(m->ep, &msg, FI_PEEK | FI_COMPLETION),
	      "fi_trecvmsg(FI_PEEK)");
	wait_done(m, 3, before + 1, "the probe's completion");
	if (m->probe_err > errs)
		return 0;
	*len = m->last[3].len;
	return 1;
}

static void rank_main(struct cl *c)
{
	struct mtl m = { .c = c, .v5 = !strcmp(c->variant, "5") };
	struct fi_av_attr av_attr = { 0 };
	struct fi_cq_attr cq_attr = { 0 };
	char name[FI_NAME_MAX], names[2][FI_NAME_MAX];
	size_t namelen = sizeof(name), len, got;
	static char big[256 * 1024], small[64], rbuf[256 * 1024];
	int i, src;

	cl_lib(c);
	select_info(&m);
	tag_mode(&m);
	export_monitor(&m);

	CL_CALL(c, fi_fabric(m.info->fabric_attr, &m.fabric, NULL));
	CL_CALL(c, fi_domain(m.fabric, m.info, &m.domain, NULL));

	/* ompi_mtl_ofi_init_regular_ep */
	CL_CALL(c, fi_endpoint(m.domain, m.info, &m.ep, NULL));
	av_attr.type = FI_AV_MAP;
	av_attr.count = 2;
	CL_CALL(c, fi_av_open(m.domain, &av_attr, &m.av, NULL));
	CL_CALL(c, fi_ep_bind(m.ep, &m.av->fid, 0));
	cq_attr.format = FI_CQ_FORMAT_TAGGED;
	cq_attr.size = PROG_EVENTS;
	CL_CALL(c, fi_cq_open(m.domain, &cq_attr, &m.cq, NULL));
	CL_CALL(c, fi_ep_bind(m.ep, &m.cq->fid,
			      FI_TRANSMIT | FI_RECV | FI_SELECTIVE_COMPLETION));
	CL_CALL(c, fi_enable(m.ep));

	/* The modex, then ompi_mtl_ofi_add_procs for every rank, self too. */
	CL_CALL(c, fi_getname(&m.ep->fid, name, &namelen));
	memset(names, 0, sizeof(names));
	memcpy(names[c->rank], name, namelen);
	len = cl_xchg(c, name, namelen, names[!c->rank], FI_NAME_MAX);
	for (i = 0; i < 2; i++) {
		int n = fi_av_insert(m.av, names[i], 1, &m.addr[i], 0, NULL);

		if (n != 1)
			cl_fail(c, "fi_av_insert of rank %d's name (%zu bytes): "
				"%d", i, i == c->rank ? namelen : len, n);
	}

	if (c->rank == 1) {
		/* an eager send, a large one, a synchronous one */
		cl_fill(small, sizeof(small), 1);
		mpi_send(&m, small, sizeof(small), 0, 7, false);
		cl_fill(big, sizeof(big), 2);
		mpi_send(&m, big, sizeof(big), 0, 8, false);
		cl_fill(small, sizeof(small), 3);
		mpi_send(&m, small, 16, 0, 9, true);
		cl_fill(big, sizeof(big), 4);
		i = mpi_isend(&m, big, 1000, 0, 10, false);
		/* rank 0 probes for tag 10, which is there */
		cl_barrier_p(c, progress_cb, &m);
		mpi_wait(&m, i);
		/* and the reply */
		src = mpi_recv(&m, rbuf, sizeof(rbuf), 0, 11, &got);
		if (src != 0 || got != 4096)
			cl_fail(c, "reply from %d of %zu bytes", src, got);
		cl_check(c, rbuf, got, 5, "reply");
	} else {
		/* a probe that finds nothing first */
		if (mpi_iprobe(&m, 1, 12, &len))
			cl_fail(c, "MPI_Iprobe found a message never sent");
		src = mpi_recv(&m, rbuf, sizeof(rbuf), 1, 7, &got);
		if (src != 1 || got != sizeof(small))
			cl_fail(c, "eager message from %d of %zu bytes", src, got);
		cl_check(c, rbuf, got, 1, "eager message");
		src = mpi_recv(&m, rbuf, sizeof(rbuf), -1, 8, &got);
		if (src != 1 || got != sizeof(big))
			cl_fail(c, "large message from %d of %zu bytes", src, got);
		cl_check(c, rbuf, got, 2, "large message (MPI_ANY_SOURCE)");
		src = mpi_recv(&m, rbuf, sizeof(rbuf), 1, -1, &got);
		if (src != 1 || got != 16)
			cl_fail(c, "synchronous message from %d of %zu bytes",
				src, got);
		cl_check(c, rbuf, got, 3, "synchronous message (MPI_ANY_TAG)");
		cl_barrier_p(c, progress_cb, &m);
		for (i = 0; !mpi_iprobe(&m, 1, 10, &len); i++)
			cl_tick(c, "MPI_Iprobe to find a message sent");
		if (len != 1000)
			cl_fail(c, "MPI_Iprobe reported %zu bytes, 1000 sent",
				len);
		src = mpi_recv(&m, rbuf, sizeof(rbuf), 1, 10, &got);
		cl_check(c, rbuf, got, 4, "probed message");
		cl_fill(big, 4096, 5);
		mpi_send(&m, big, 4096, 1, 11, false);
	}
	cl_barrier_p(c, progress_cb, &m);

	/* ompi_mtl_ofi_finalize, then opal_common_ofi_close */
	CL_CALL(c, fi_close(&m.ep->fid));
	CL_CALL(c, fi_close(&m.av->fid));
	CL_CALL(c, fi_close(&m.cq->fid));
	CL_CALL(c, fi_close(&m.domain->fid));
	CL_CALL(c, fi_close(&m.fabric->fid));
	if (m.cache) {
		CL_CALL(c, fi_close(m.cache));
		CL_CALL(c, fi_close(&m.monitor->fid));
		free(m.monitor);
	}
	fi_freeinfo(m.info);
	cl_pass(c);
}

int main(int argc, char **argv)
{
	return cl_run(argc, argv, "ompi-mtl", rank_main);
}
