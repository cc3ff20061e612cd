/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * MPICH 4's ch4:ofi netmod (the default, runtime-checked build: one domain
 * per VCI, FI_THREAD_DOMAIN) between two ranks.
 *
 * Follows, in pmodels/mpich v4.2.3, src/mpid/ch4/netmod/ofi/:
 *   init_provider.c: find_provider (fi_getinfo with version 0 and no hints,
 *     pick_provider_from_list with provider_preference, then refined hints
 *     with the picked prov_name and caps, relaxing msg_order then mr_mode),
 *     the FI_THREAD_DOMAIN check;
 *   init_settings.c: MPIDI_OFI_init_hints, MPIDI_OFI_init_settings,
 *     MPIDI_OFI_match_provider, MPIDI_OFI_update_global_settings;
 *   ofi_capability_sets.h: the DEFAULT, MINIMAL, SOCKETS, RXM and
 *     VERBS_RXM sets (provider name to set, version wanted, mr_mode bits,
 *     AV type, atomics);
 *   ofi_nic.c: MPIDI_OFI_nic_is_up, the single-NIC choice;
 *   ofi_init.c: create_vci_domain (fi_domain, the read-only named AV tried
 *     first, the local AV, the FI_CNTR_EVENTS_COMP counter), create_cq,
 *     the endpoint binds, ofi_am_post_recv (FI_OPT_MIN_MULTI_RECV, eight
 *     FI_MULTI_RECV buffers), the close order;
 *   init_addrxchg.c: MPIDI_OFI_addr_exchange_root_ctx (one fi_av_insert of
 *     the whole name table);
 *   util.c: create_dt_map (fi_atomicvalid, fi_fetch_atomicvalid,
 *     fi_compare_atomicvalid over datatypes and ops);
 *   ofi_send.h, ofi_recv.h, ofi_progress.h: fi_tinjectdata / fi_tsenddata,
 *     fi_trecv, fi_cq_read of 8 entries;
 *   ofi_am_impl.h: fi_inject / fi_send of active messages;
 *   ofi_win.c, ofi_win.h, ofi_rma.h: win_allgather (fi_mr_reg with the
 *     window's key unless FI_MR_PROV_KEY, fi_mr_bind/fi_mr_enable under
 *     FI_MR_ENDPOINT), fi_inject_write / fi_writemsg(FI_DELIVERY_COMPLETE),
 *     fi_readmsg(0), fi_fetch_atomicmsg, fi_compare_atomicmsg, fi_atomicmsg,
 *     completion counted by fi_cntr_read against the issued count, with
 *     fi_cntr_wait(timeout 0) every 1000 polls (MPIDI_OFI_win_do_progress).
 * Shared transmit contexts (MPIR_CVAR_CH4_OFI_ENABLE_SHARED_CONTEXTS) are
 * off by default and not replayed.
 *
 * NAME is FI_PROVIDER, which is how MPICH users pick a provider.
 */
#include "harness.h"

#include <rdma/fi_atomic.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>

#define ATOMIC_ORDER (FI_ORDER_ATOMIC_RAR | FI_ORDER_ATOMIC_RAW | \
		      FI_ORDER_ATOMIC_WAR | FI_ORDER_ATOMIC_WAW)
#define PROTOCOL_MASK 0x00C0000000000000ULL	/* 20 context, 31 tag bits */
#define TAG_MASK 0x7FFFFFFFULL
#define CONTEXT_SHIFT 31
#define NUM_AM 8
#define AM_BUF (2 * 1024 * 1024)
#define SHORT_SEND (16 * 1024)
#define CQ_ENTRIES 8
#define WIN (64 * 1024)

struct set {			/* a capability set of ofi_capability_sets.h */
	const char *name;
	bool data, av_table, mr_virt, mr_alloc, mr_prov_key, tagged, am, rma,
	     atomics;
	int major, minor;
};

static const struct set sets[] = {
	{ "default", true, true, false, false, false, true, true, true, true,
	  FI_MAJOR_VERSION, FI_MINOR_VERSION },
	{ "sockets", true, true, false, false, false, true, true, true, true,
	  1, 5 },
	{ "rxm", true, false, true, true, true, true, true, true, false, 1, 6 },
	{ "verbs;ofi_rxm", true, true, true, true, true, true, true, true, false,
	  1, 5 },
};
/* the MINIMAL set, for the pick: only active messages are required */
static const struct set minimal = { "minimal", false, true, true, true, true,
				    false, true, false, false, 1, 17 };

static const struct set *set_for(const char *prov)
{
	if (!strcmp(prov, "sockets"))
		return &sets[1];
	if (!strcmp(prov, "verbs;ofi_rxm"))
		return &sets[3];
	if (strstr(prov, "ofi_rxm"))
		return &sets[2];
	return &sets[0];
}

struct mpi {
	struct cl *c;
	const struct set *set;
	struct fi_info *prov;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_av *av;
	struct fid_cntr *cntr;
	struct fid_cq *cq;
	struct fid_ep *ep;
	fi_addr_t addr[2];
	bool data, atomics, prov_key, virt_addr;
	uint64_t issued;	/* RMA operations counted by cntr */
	char *am_bufs;
	struct iovec am_iov[NUM_AM];
	struct fi_msg am_msg[NUM_AM];
	int am_ctx[NUM_AM];
	int am_seen;		/* active messages received */
	char am_last[256];
	int req_ctx[4];
	int req_done[4];
	struct fi_cq_tagged_entry req_wc[4];
};

/* MPIDI_OFI_match_provider against DEFAULT (optimal) and MINIMAL */
static int match(const struct fi_info *p)
{
	const struct set *opt = &sets[0], *min = &minimal;
	int score = 0;
	bool bad;

#define CHECK(field, cond)                                                    \
	do {                                                                  \
		bad = (cond);                                                 \
		if (min->field && bad)                                        \
			return 0;                                             \
		if (opt->field && !bad)                                       \
			score++;                                              \
	} while (0)
	CHECK(data, p->domain_attr->cq_data_size < 4);
	CHECK(tagged, !(p->caps & FI_TAGGED));
	CHECK(am, (p->caps & (FI_MSG | FI_MULTI_RECV)) !=
		  (FI_MSG | FI_MULTI_RECV));
	CHECK(rma, !(p->caps & FI_RMA));
	CHECK(atomics, !(p->caps & FI_ATOMICS) ||
		       (p->tx_attr->msg_order & ATOMIC_ORDER) != ATOMIC_ORDER);
#undef CHECK
	return score;
}

static int preference(const char *prov)
{
	size_t n = strlen(prov);

	if (n > 8 && !strcmp(prov + n - 8, ";ofi_rxd"))
		return -2;
	if (!strcmp(prov, "shm"))
		return -2;
	return 0;
}

static bool nic_is_up(const struct fi_info *p)
{
	return !(p->nic && p->nic->link_attr->state == FI_LINK_DOWN);
}

static void init_hints(struct mpi *m, struct fi_info *h)
{
	const struct set *s = m->set;

	h->mode = FI_CONTEXT | FI_ASYNC_IOV | FI_RX_CQ_DATA | FI_CONTEXT2;
	h->caps = FI_RMA | FI_WRITE | FI_READ | FI_REMOTE_WRITE | FI_REMOTE_READ;
	if (s->atomics)
		h->caps |= FI_ATOMICS;
	if (s->data) {
		h->caps |= FI_DIRECTED_RECV;
		h->domain_attr->cq_data_size = 4;
	}
	if (s->tagged)
		h->caps |= FI_TAGGED;
	if (s->am)
		h->caps |= FI_MSG | FI_MULTI_RECV;
	h->addr_format = FI_FORMAT_UNSPEC;
	h->domain_attr->threading = FI_THREAD_DOMAIN;
	h->domain_attr->data_progress = FI_PROGRESS_MANUAL;
	h->domain_attr->control_progress = FI_PROGRESS_MANUAL;
	h->domain_attr->resource_mgmt = FI_RM_ENABLED;
	h->domain_attr->av_type = s->av_table ? FI_AV_TABLE : FI_AV_MAP;
	h->domain_attr->mr_mode = (s->mr_virt ? FI_MR_VIRT_ADDR : 0) |
				  (s->mr_alloc ? FI_MR_ALLOCATED : 0) |
				  (s->mr_prov_key ? FI_MR_PROV_KEY : 0) |
				  FI_MR_ENDPOINT;
	h->domain_attr->mode = FI_RESTRICTED_COMP;
	h->tx_attr->op_flags = FI_COMPLETION;
	h->tx_attr->msg_order = FI_ORDER_SAS;
	h->rx_attr->msg_order = FI_ORDER_SAS;
	if (s->rma || s->atomics) {
		h->tx_attr->op_flags |= FI_DELIVERY_COMPLETE;
		if (s->atomics)
			h->tx_attr->msg_order |= ATOMIC_ORDER;
	}
	h->tx_attr->comp_order = FI_ORDER_NONE;
	h->rx_attr->op_flags = FI_COMPLETION;
	h->rx_attr->total_buffered_recv = 0;
	h->ep_attr->type = FI_EP_RDM;
	h->ep_attr->mem_tag_format = PROTOCOL_MASK | TAG_MASK;
}

static void find_provider(struct mpi *m)
{
	struct cl *c = m->c;
	struct fi_info *list = NULL, *old, *p, *best = NULL, *hints;
	int ret, best_score = 0;
	uint32_t version;

	ret = fi_getinfo(0, NULL, NULL, 0, NULL, &list);
	if (ret == -FI_ENODATA)
		cl_skip(c, "fi_getinfo(0, no hints): -FI_ENODATA");
	if (ret)
		cl_fail(c, "fi_getinfo(0, no hints) returned %d (%s)", ret,
			fi_strerror(-ret));
	for (p = list; p; p = p->next) {
		int score;

		if (!nic_is_up(p))
			continue;
		score = match(p) + preference(p->fabric_attr->prov_name);
		if (best_score < score) {
			best_score = score;
			best = p;
		}
	}
	if (!best)
		cl_skip(c, "no provider meets MPICH's minimal set (FI_MSG and "
			"FI_MULTI_RECV)");
	m->set = set_for(best->fabric_attr->prov_name);
	version = FI_VERSION(m->set->major, m->set->minor);
	cl_note(c, "picked %s (score %d), capability set %s, version %u.%u",
		best->fabric_attr->prov_name, best_score, m->set->name,
		m->set->major, m->set->minor);

	hints = fi_allocinfo();
	init_hints(m, hints);
	hints->fabric_attr->prov_name = strdup(best->fabric_attr->prov_name);
	hints->caps = best->caps;
	old = list;
	list = NULL;
	ret = fi_getinfo(version, NULL, NULL, 0, hints, &list);
	if (ret || !list) {
		cl_note(c, "no answer (%d): msg_order relaxed to the picked "
			"provider's", ret);
		hints->tx_attr->msg_order = best->tx_attr->msg_order;
		ret = fi_getinfo(version, NULL, NULL, 0, hints, &list);
	}
	if (ret || !list) {
		cl_note(c, "no answer (%d): mr_mode relaxed to the picked "
			"provider's", ret);
		hints->domain_attr->mr_mode = best->domain_attr->mr_mode;
		ret = fi_getinfo(version, NULL, NULL, 0, hints, &list);
	}
	fi_freeinfo(old);
	fi_freeinfo(hints);
	if (!list)
		cl_skip(c, "the refined hints get no answer (%d, %s)", ret,
			fi_strerror(-ret));
	if (list->domain_attr->threading != FI_THREAD_DOMAIN)
		cl_fail(c, "threading %d, FI_THREAD_DOMAIN asked: MPICH stops "
			"with ofi_provider_mismatch",
			list->domain_attr->threading);
	/* MPIDI_OFI_init_multi_nic: no IPv6, a NIC that is up, the first */
	for (p = list; p; p = p->next)
		if (p->addr_format != FI_SOCKADDR_IN6 && nic_is_up(p))
			break;
	if (!p)
		cl_fail(c, "no usable entry (all IPv6 or down)");
	m->prov = fi_dupinfo(p);
	fi_freeinfo(list);

	/* MPIDI_OFI_update_global_settings */
	m->data = (m->prov->caps & FI_DIRECTED_RECV) &&
		  m->prov->domain_attr->cq_data_size >= 4;
	m->atomics = m->set->atomics && (m->prov->caps & FI_ATOMICS);
	m->prov_key = m->prov->domain_attr->mr_mode &
		      (FI_MR_PROV_KEY | FI_MR_BASIC);
	m->virt_addr = m->prov->domain_attr->mr_mode &
		       (FI_MR_VIRT_ADDR | FI_MR_BASIC);
	if ((m->prov->caps & (FI_MSG | FI_MULTI_RECV)) !=
	    (FI_MSG | FI_MULTI_RECV) || !(m->prov->caps & FI_TAGGED) ||
	    !(m->prov->caps & FI_RMA))
		cl_fail(c, "final caps %s lack what the set needs",
			fi_tostr(&m->prov->caps, FI_TYPE_CAPS));
	cl_note(c, "using %s domain %s: data %d atomics %d mr_mode 0x%x "
		"av_type %d", m->prov->fabric_attr->prov_name,
		m->prov->domain_attr->name, m->data, m->atomics,
		m->prov->domain_attr->mr_mode, m->prov->domain_attr->av_type);
}

static void cq_error(struct mpi *m, ssize_t ret)
{
	struct fi_cq_err_entry e = { 0 };

	if (ret != -FI_EAVAIL)
		cl_fail(m->c, "fi_cq_read: %zd (%s)", ret, fi_strerror((int)-ret));
	fi_cq_readerr(m->cq, &e, 0);
	cl_fail(m->c, "error completion: %d (%s)", e.err, fi_strerror(e.err));
}

/* MPIDI_NM_progress with the dispatch of what MPICH posts */
static void progress(struct mpi *m);

static void progress_cb(void *m)
{
	progress(m);
}

static void progress(struct mpi *m)
{
	struct fi_cq_tagged_entry wc[CQ_ENTRIES];
	ssize_t n, i;

	n = fi_cq_read(m->cq, wc, CQ_ENTRIES);
	if (n == -FI_EAGAIN)
		return;
	if (n < 0)
		cq_error(m, n);
	for (i = 0; i < n; i++) {
		int *ctx = wc[i].op_context;

		if (ctx >= m->am_ctx && ctx < m->am_ctx + NUM_AM) {
			int k = *ctx;

			if (wc[i].flags & FI_RECV) {
				if (wc[i].len > sizeof(m->am_last) || !wc[i].buf)
					cl_fail(m->c, "active message of %zu "
						"bytes at %p", wc[i].len,
						wc[i].buf);
				memcpy(m->am_last, wc[i].buf, wc[i].len);
				m->am_seen++;
			}
			/* the buffer is released: post it again */
			if (wc[i].flags & FI_MULTI_RECV)
				CL_CALL(m->c, fi_recvmsg(m->ep, &m->am_msg[k],
							 FI_MULTI_RECV |
							 FI_COMPLETION));
		} else if (ctx >= m->req_ctx && ctx < m->req_ctx + 4) {
			m->req_done[*ctx]++;
			m->req_wc[*ctx] = wc[i];
		} else {
			cl_fail(m->c, "completion with a foreign context %p",
				(void *)ctx);
		}
	}
}

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

static void wait_req(struct mpi *m, int k, int want, const char *what)
{
	while (m->req_done[k] < want) {
		progress(m);
		cl_tick(m->c, what);
	}
}

static uint64_t match_bits(int context, int tag)
{
	return ((uint64_t)context << CONTEXT_SHIFT) | (uint32_t)tag;
}

static void open_resources(struct mpi *m)
{
	struct cl *c = m->c;
	struct fi_av_attr av_attr = { 0 };
	struct fi_cntr_attr cntr_attr = { 0 };
	struct fi_cq_attr cq_attr = { 0 };
	char av_name[128];
	size_t optlen = SHORT_SEND;
	int i;

	CL_CALL(c, fi_fabric(m->prov->fabric_attr, &m->fabric, NULL));
	CL_CALL(c, fi_domain(m->fabric, m->prov, &m->domain, NULL));
	/* try_open_shared_av: there is none, so this must fail */
	av_attr.type = m->set->av_table ? FI_AV_TABLE : FI_AV_MAP;
	av_attr.rx_ctx_bits = 0;
	av_attr.count = 2;
	snprintf(av_name, sizeof(av_name), "FI_NAMED_AV_%d\n", 0);
	av_attr.name = av_name;
	av_attr.flags = FI_READ;
	av_attr.map_addr = 0;
	if (fi_av_open(m->domain, &av_attr, &m->av, NULL) == 0) {
		if (!av_attr.map_addr)
			cl_fail(c, "fi_av_open of a named AV read-only, which "
				"nobody made, succeeded with no map_addr: MPICH "
				"would read its address table from it");
		cl_note(c, "a named AV opened read-only: MPICH reads the "
			"addresses from map_addr");
	} else {
		memset(&av_attr, 0, sizeof(av_attr));
		av_attr.type = m->set->av_table ? FI_AV_TABLE : FI_AV_MAP;
		av_attr.rx_ctx_bits = 0;
		av_attr.count = 2;
		CL_CALL(c, fi_av_open(m->domain, &av_attr, &m->av, NULL));
	}
	cntr_attr.events = FI_CNTR_EVENTS_COMP;
	cntr_attr.wait_obj = FI_WAIT_UNSPEC;
	CL_CALL(c, fi_cntr_open(m->domain, &cntr_attr, &m->cntr, NULL));
	cq_attr.format = FI_CQ_FORMAT_TAGGED;
	CL_CALL(c, fi_cq_open(m->domain, &cq_attr, &m->cq, NULL));

	CL_CALL(c, fi_endpoint(m->domain, m->prov, &m->ep, NULL));
	CL_CALL(c, fi_ep_bind(m->ep, &m->av->fid, 0));
	CL_CALL(c, fi_ep_bind(m->ep, &m->cq->fid,
			      FI_SEND | FI_RECV | FI_SELECTIVE_COMPLETION));
	CL_CALL(c, fi_ep_bind(m->ep, &m->cntr->fid, FI_READ | FI_WRITE));
	CL_CALL(c, fi_enable(m->ep));

	/* ofi_am_post_recv */
	CL_CALL(c, fi_setopt(&m->ep->fid, FI_OPT_ENDPOINT,
			     FI_OPT_MIN_MULTI_RECV, &optlen, sizeof(optlen)));
	m->am_bufs = malloc((size_t)AM_BUF * NUM_AM);
	if (!m->am_bufs)
		cl_fail(c, "no memory for the active message buffers");
	for (i = 0; i < NUM_AM; i++) {
		m->am_ctx[i] = i;
		m->am_iov[i].iov_base = m->am_bufs + (size_t)AM_BUF * i;
		m->am_iov[i].iov_len = AM_BUF;
		m->am_msg[i].msg_iov = &m->am_iov[i];
		m->am_msg[i].desc = NULL;
		m->am_msg[i].addr = FI_ADDR_UNSPEC;
		m->am_msg[i].context = &m->am_ctx[i];
		m->am_msg[i].iov_count = 1;
		RETRY(m, fi_recvmsg(m->ep, &m->am_msg[i],
				    FI_MULTI_RECV | FI_COMPLETION),
		      "fi_recvmsg(FI_MULTI_RECV)");
	}
	for (i = 0; i < 4; i++)
		m->req_ctx[i] = i;
}

static void exchange_addresses(struct mpi *m)
{
	struct cl *c = m->c;
	char name[FI_NAME_MAX], peer[FI_NAME_MAX], table[2 * FI_NAME_MAX];
	size_t len = FI_NAME_MAX, plen;
	int n;

	CL_CALL(c, fi_getname(&m->ep->fid, name, &len));
	plen = cl_xchg(c, name, len, peer, sizeof(peer));
	if (plen != len)
		cl_note(c, "names of %zu and %zu bytes: MPICH's table assumes "
			"one length", len, plen);
	/* the business-card table: one name per rank, at a stride of ours */
	memset(table, 0, sizeof(table));
	memcpy(table + c->rank * len, name, len);
	memcpy(table + (!c->rank) * len, peer, plen < len ? plen : len);
	n = fi_av_insert(m->av, table, 2, m->addr, 0ULL, NULL);
	if (n != 2)
		cl_fail(c, "fi_av_insert of the 2-name table: %d", n);
	if (m->addr[0] == FI_ADDR_NOTAVAIL || m->addr[1] == FI_ADDR_NOTAVAIL)
		cl_fail(c, "fi_av_insert left FI_ADDR_NOTAVAIL");
}

/* create_dt_map: MPICH asks about every datatype and op */
static void index_datatypes(struct mpi *m)
{
	int dt, op, valid = 0, fvalid = 0, cvalid = 0;
	size_t count;

	for (dt = FI_INT8; dt < FI_DATATYPE_LAST; dt++)
		for (op = FI_MIN; op < FI_ATOMIC_OP_LAST; op++) {
			if (!fi_atomicvalid(m->ep, dt, op, &count) && count)
				valid++;
			if (!fi_fetch_atomicvalid(m->ep, dt, op, &count) &&
			    count)
				fvalid++;
			if (!fi_compare_atomicvalid(m->ep, dt, op, &count) &&
			    count)
				cvalid++;
		}
	cl_note(m->c, "atomic dt x op valid: %d plain, %d fetch, %d compare",
		valid, fvalid, cvalid);
	if (!fi_atomicvalid(m->ep, FI_INT64, FI_SUM, &count) && count &&
	    !fi_fetch_atomicvalid(m->ep, FI_INT64, FI_SUM, &count) && count &&
	    !fi_compare_atomicvalid(m->ep, FI_INT64, FI_CSWAP, &count) && count)
		return;
	cl_note(m->c, "INT64 SUM/CSWAP not all valid: MPICH takes its "
		"active-message path for them");
	m->atomics = false;
}

static void pt2pt(struct mpi *m)
{
	struct cl *c = m->c;
	static char sbuf[128 * 1024], rbuf[128 * 1024];
	struct fi_cq_tagged_entry *wc;
	int peer = !c->rank, am_before = m->am_seen;
	char am[64];

	if (c->rank == 1) {
		/* MPI_Send, eager then large; data carries the source rank */
		cl_fill(sbuf, 200, 31);
		if (200 <= m->prov->tx_attr->inject_size && m->data)
			RETRY(m, fi_tinjectdata(m->ep, sbuf, 200, c->rank,
						m->addr[peer], match_bits(1, 5)),
			      "fi_tinjectdata");
		else
			RETRY(m, fi_tinject(m->ep, sbuf, 200, m->addr[peer],
					    match_bits(1, 5)), "fi_tinject");
		cl_fill(sbuf, sizeof(sbuf), 32);
		RETRY(m, fi_tsenddata(m->ep, sbuf, sizeof(sbuf), NULL, c->rank,
				      m->addr[peer], match_bits(1, 6),
				      &m->req_ctx[1]), "fi_tsenddata");
		wait_req(m, 1, 1, "the large send's completion");
		/* an active message (control) into the peer's buffers */
		memset(am, 0, sizeof(am));
		snprintf(am, sizeof(am), "am-from-%d", c->rank);
		RETRY(m, fi_inject(m->ep, am, sizeof(am), m->addr[peer]),
		      "fi_inject (active message)");
		while (m->am_seen == am_before) {
			progress(m);
			cl_tick(c, "the answering active message");
		}
		if (strcmp(m->am_last, "am-from-0"))
			cl_fail(c, "active message \"%.32s\"", m->am_last);
	} else {
		RETRY(m, fi_trecv(m->ep, rbuf, sizeof(rbuf), NULL,
				  m->addr[peer], match_bits(1, 5), 0,
				  &m->req_ctx[0]), "fi_trecv");
		wait_req(m, 0, 1, "the eager message");
		wc = &m->req_wc[0];
		if (wc->len != 200 || (m->data && wc->data != 1))
			cl_fail(c, "eager message: %zu bytes, data %llu",
				wc->len, (unsigned long long)wc->data);
		cl_check(c, rbuf, 200, 31, "eager message");
		RETRY(m, fi_trecv(m->ep, rbuf, sizeof(rbuf), NULL,
				  m->addr[peer], match_bits(1, 6), 0,
				  &m->req_ctx[0]), "fi_trecv");
		wait_req(m, 0, 2, "the large message");
		if (wc->len != sizeof(sbuf))
			cl_fail(c, "large message of %zu bytes", wc->len);
		cl_check(c, rbuf, sizeof(sbuf), 32, "large message");
		while (m->am_seen == am_before) {
			progress(m);
			cl_tick(c, "an active message");
		}
		if (strcmp(m->am_last, "am-from-1"))
			cl_fail(c, "active message \"%.32s\"", m->am_last);
		memset(am, 0, sizeof(am));
		snprintf(am, sizeof(am), "am-from-%d", c->rank);
		RETRY(m, fi_send(m->ep, am, sizeof(am), NULL, m->addr[peer],
				 &m->req_ctx[2]), "fi_send (active message)");
		wait_req(m, 2, 1, "the active message's completion");
	}
}

/*
 * Small MPI_Sends to a rank that is busy elsewhere (not in MPI): each is
 * an fi_tinjectdata, complete when it returns, so the sender goes on
 * without the receiver (MPIDI_OFI_CALL_RETRY only progresses its own CQ on
 * -FI_EAGAIN).  The receiver then takes them all.
 */
#define BURST 32
#define BURST_LEN 400

static void burst(struct mpi *m)
{
	struct cl *c = m->c;
	static char sbuf[BURST_LEN], rbuf[BURST_LEN];
	int i;

	if (BURST_LEN > m->prov->tx_attr->inject_size || !m->data) {
		cl_note(c, "inject_size %zu: no burst of injected sends",
			m->prov->tx_attr->inject_size);
		return;
	}
	cl_barrier_p(c, progress_cb, m);	/* nothing left in flight */
	if (c->rank == 1) {
		time_t start = time(NULL);

		for (i = 0; i < BURST; i++) {
			ssize_t r;

			cl_fill(sbuf, BURST_LEN, 100 + i);
			while ((r = fi_tinjectdata(m->ep, sbuf, BURST_LEN,
						   c->rank, m->addr[0],
						   match_bits(2, i))) ==
			       -FI_EAGAIN) {
				progress(m);
				if (time(NULL) - start > 3)
					cl_fail(c, "MPI_Send %d of %d (%d bytes, "
						"injected) to a busy receiver: "
						"-FI_EAGAIN for 3 s", i + 1,
						BURST, BURST_LEN);
			}
			if (r)
				cl_fail(c, "fi_tinjectdata: %zd (%s)", r,
					fi_strerror((int)-r));
		}
		cl_send(c, "sent", 5);
	} else {
		char word[8];

		cl_recv(c, word, sizeof(word));	/* busy until then */
		for (i = 0; i < BURST; i++) {
			int before = m->req_done[0];

			RETRY(m, fi_trecv(m->ep, rbuf, sizeof(rbuf), NULL,
					  m->addr[1], match_bits(2, i), 0,
					  &m->req_ctx[0]), "fi_trecv");
			wait_req(m, 0, before + 1, "a burst message");
			cl_check(c, rbuf, BURST_LEN, 100 + i, "burst message");
		}
	}
}

/* MPIDI_OFI_win_do_progress */
static void win_flush(struct mpi *m)
{
	int iter = 0;

	while (fi_cntr_read(m->cntr) < m->issued) {
		progress(m);
		cl_tick(m->c, "the RMA counter to reach the issued count");
		if (++iter == 1000) {
			int ret = fi_cntr_wait(m->cntr, m->issued, 0);

			if (ret < 0 && ret != -FI_ETIMEDOUT)
				cl_fail(m->c, "fi_cntr_wait: %d (%s)", ret,
					fi_strerror(-ret));
			iter = 0;
		}
	}
	if (fi_cntr_read(m->cntr) != m->issued)
		cl_fail(m->c, "RMA counter %llu, %llu operations issued",
			(unsigned long long)fi_cntr_read(m->cntr),
			(unsigned long long)m->issued);
}

struct winfo {
	uint64_t base, key;
};

static void rma(struct mpi *m)
{
	struct cl *c = m->c;
	static uint64_t win[WIN / 8] __attribute__((aligned(64)));
	static char local[WIN];
	struct fid_mr *mr;
	struct winfo mine, peer;
	uint64_t key = 0 + 1;	/* optimized MRs (0) + win_id */
	struct iovec iov;
	struct fi_rma_iov riov;
	struct fi_msg_rma msg = { 0 };
	int p = !c->rank;

	memset(win, 0, sizeof(win));
	if (c->rank == 0)
		cl_fill(win + 4096, 8192, 41);
	if (m->prov_key)
		key = 0;
	CL_CALL(c, fi_mr_reg(m->domain, win, sizeof(win),
			     FI_REMOTE_READ | FI_REMOTE_WRITE, 0ULL, key, 0ULL,
			     &mr, NULL));
	if (m->prov->domain_attr->mr_mode & FI_MR_ENDPOINT) {
		CL_CALL(c, fi_mr_bind(mr, &m->ep->fid, 0ULL));
		CL_CALL(c, fi_mr_enable(mr));
	}
	mine.base = m->virt_addr ? (uint64_t)(uintptr_t)win : 0;
	mine.key = m->prov_key || m->virt_addr ? fi_mr_key(mr) : key;
	cl_xchg(c, &mine, sizeof(mine), &peer, sizeof(peer));

	if (c->rank == 1) {
		/* each operation has its own origin buffer, as the user's
		 * buffers are, untouched until the flush */
		static uint64_t operand[3], compare, result[2];

		/* MPI_Put of 64 bytes: fi_inject_write up to inject_size */
		cl_fill(local, 64, 42);
		iov.iov_base = local;
		iov.iov_len = 64;
		riov.addr = peer.base;
		riov.len = 64;
		riov.key = peer.key;
		msg.msg_iov = &iov;
		msg.iov_count = 1;
		msg.addr = m->addr[p];
		msg.rma_iov = &riov;
		msg.rma_iov_count = 1;
		m->issued++;
		if (64 <= m->prov->tx_attr->inject_size)
			RETRY(m, fi_inject_write(m->ep, local, 64, m->addr[p],
						 peer.base, peer.key),
			      "fi_inject_write");
		else
			RETRY(m, fi_writemsg(m->ep, &msg, FI_DELIVERY_COMPLETE),
			      "fi_writemsg");
		win_flush(m);
		/* MPI_Put of 16 KiB at offset 1 KiB */
		cl_fill(local, 16384, 43);
		iov.iov_len = 16384;
		riov.addr = peer.base + 1024;
		riov.len = 16384;
		m->issued++;
		RETRY(m, fi_writemsg(m->ep, &msg, FI_DELIVERY_COMPLETE),
		      "fi_writemsg");
		/* MPI_Get of 8 KiB at offset 32 KiB */
		iov.iov_base = local + 32768;
		iov.iov_len = 8192;
		riov.addr = peer.base + 32768;
		riov.len = 8192;
		m->issued++;
		RETRY(m, fi_readmsg(m->ep, &msg, 0), "fi_readmsg");
		win_flush(m);
		cl_check(c, local + 32768, 8192, 41, "MPI_Get data");
		if (m->atomics) {
			struct fi_ioc ioc = { .addr = &operand[0], .count = 1 };
			struct fi_ioc cmp = { .addr = &compare, .count = 1 };
			struct fi_ioc res = { .addr = &result[0], .count = 1 };
			struct fi_rma_ioc rioc = {
				.addr = peer.base + 60000 - 60000 % 8,
				.count = 1, .key = peer.key,
			};
			struct fi_msg_atomic am = {
				.msg_iov = &ioc, .iov_count = 1,
				.addr = m->addr[p], .rma_iov = &rioc,
				.rma_iov_count = 1, .datatype = FI_INT64,
				.op = FI_SUM,
			};
			void *rdesc = NULL, *cdesc = NULL;

			/* MPI_Accumulate(SUM 3), MPI_Fetch_and_op(SUM 4),
			 * MPI_Compare_and_swap(7 -> 50) */
			operand[0] = 3;
			m->issued++;
			RETRY(m, fi_atomicmsg(m->ep, &am, FI_DELIVERY_COMPLETE),
			      "fi_atomicmsg");
			operand[1] = 4;
			ioc.addr = &operand[1];
			m->issued++;
			RETRY(m, fi_fetch_atomicmsg(m->ep, &am, &res, &rdesc, 1,
						    FI_DELIVERY_COMPLETE),
			      "fi_fetch_atomicmsg");
			win_flush(m);
			if (result[0] != 3)
				cl_fail(c, "MPI_Fetch_and_op fetched %llu, 3 "
					"expected", (unsigned long long)result[0]);
			operand[2] = 50;
			ioc.addr = &operand[2];
			res.addr = &result[1];
			compare = 7;
			am.op = FI_CSWAP;
			m->issued++;
			RETRY(m, fi_compare_atomicmsg(m->ep, &am, &cmp, &cdesc,
						      1, &res, &rdesc, 1,
						      FI_DELIVERY_COMPLETE),
			      "fi_compare_atomicmsg");
			win_flush(m);
			if (result[1] != 7)
				cl_fail(c, "MPI_Compare_and_swap fetched %llu, "
					"7 expected", (unsigned long long)result[1]);
		}
		/* MPI_Win_fence: tell the target, whose progress may be
		 * needed, that we are done */
		RETRY(m, fi_inject(m->ep, "fence", 6, m->addr[p]),
		      "fi_inject (fence)");
	} else {
		int before = m->am_seen;

		while (m->am_seen == before) {
			progress(m);
			cl_tick(c, "the origin's fence");
		}
		cl_check(c, win, 64, 42, "MPI_Put data (64 bytes)");
		cl_check(c, (char *)win + 1024, 16384, 43, "MPI_Put data");
		if (m->atomics && win[60000 / 8] != 50)
			cl_fail(c, "target word %lld after +3 +4 cswap(7->50)",
				(long long)win[60000 / 8]);
	}
	cl_barrier_p(c, progress_cb, m);
	CL_CALL(c, fi_close(&mr->fid));
}

static void rank_main(struct cl *c)
{
	struct mpi m = { .c = c };

	setenv("FI_PROVIDER", c->name, 1);
	cl_lib(c);
	find_provider(&m);
	open_resources(&m);
	exchange_addresses(&m);
	if (m.atomics)
		index_datatypes(&m);
	pt2pt(&m);
	burst(&m);
	rma(&m);
	cl_barrier_p(c, progress_cb, &m);

	/* MPIDI_OFI_mpi_finalize_hook: the VCI's objects, then the fabric */
	CL_CALL(c, fi_close(&m.ep->fid));
	CL_CALL(c, fi_close(&m.cq->fid));
	CL_CALL(c, fi_close(&m.av->fid));
	CL_CALL(c, fi_close(&m.cntr->fid));
	CL_CALL(c, fi_close(&m.domain->fid));
	CL_CALL(c, fi_close(&m.fabric->fid));
	fi_freeinfo(m.prov);
	free(m.am_bufs);
	cl_pass(c);
}

int main(int argc, char **argv)
{
	return cl_run(argc, argv, "mpich", rank_main);
}
