// SPDX-License-Identifier: BSD-2-Clause
/*
 * Driver of the provider conformance suite and the fixture every case
 * shares.
 *
 *   conformance -p PROV [-c CASE]...   run all (or the named) cases
 *               [-t SECONDS]           deadline per case (default 60, or
 *                                      $CF_CASE_TIMEOUT)
 *   conformance -l                     list the cases
 *   conformance -P                     list the providers the library has
 *
 * Each case runs in a forked process with a deadline; the driver prints
 * one PASS/FAIL/SKIP line per case and a final "N passed, N failed,
 * N skipped" line, and exits non-zero if any case failed.  With CF_TIMES
 * set, a "  time: PROV CASE: N ms" line follows each case (its wall time,
 * to find where a slow run's time goes).
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/wait.h>

#include "conformance.h"

const char *cf_prov;
const char *cf_case_name = "-";
const char *cf_self_exe;
const char *_Atomic cf_cur_call = "setting up";
const char *_Atomic cf_cur_file = "";
_Atomic int cf_cur_line;

/* The case process tells the driver it printed its result line here. */
static int cf_result_fd = -1;
static int cf_nexpect;
static bool cf_in_peer;

/* Fixtures open in this process, closed best-effort if a case fails. */
static struct cf_fix *cf_open_fix[4];

static void cf_track(struct cf_fix *f, bool open)
{
	size_t i;

	for (i = 0; i < sizeof(cf_open_fix) / sizeof(cf_open_fix[0]); i++) {
		if (open && !cf_open_fix[i]) {
			cf_open_fix[i] = f;
			return;
		}
		if (!open && cf_open_fix[i] == f) {
			cf_open_fix[i] = NULL;
			return;
		}
	}
}

/*
 * After a failure: release what the provider may keep outside this
 * process (shared-memory names, sockets).  Errors are ignored and an
 * alarm bounds a provider that hangs in fi_close.
 */
static void cf_close_all(void)
{
	size_t i;
	int j, k;

	alarm(5);
	for (i = 0; i < sizeof(cf_open_fix) / sizeof(cf_open_fix[0]); i++) {
		struct cf_fix *f = cf_open_fix[i];

		if (!f)
			continue;
		cf_open_fix[i] = NULL;
		for (j = 0; j < f->nep; j++) {
			if (f->ep[j].ep)
				fi_close(&f->ep[j].ep->fid);
			if (f->ep[j].cq)
				fi_close(&f->ep[j].cq->fid);
			for (k = 0; k < CF_NCNTR; k++)
				if (f->ep[j].cntr[k])
					fi_close(&f->ep[j].cntr[k]->fid);
		}
		if (f->av)
			fi_close(&f->av->fid);
	}
}

static volatile sig_atomic_t cf_result_done;

static void cf_result_sent(void)
{
	char b = 1;

	cf_result_done = 1;
	fflush(stdout);
	if (cf_result_fd >= 0 && write(cf_result_fd, &b, 1) != 1)
		perror("write");
}

static void cf_where(const char *file, int line)
{
	const char *base = strrchr(file, '/');

	printf("%s:%d: ", base ? base + 1 : file, line);
}

void cf_expect_at(const char *file, int line, const char *fmt, ...)
{
	va_list ap;

	printf("  fail: %s %s: ", cf_prov, cf_case_name);
	cf_where(file, line);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	cf_nexpect++;
}

void cf_fail_at(const char *file, int line, const char *fmt, ...)
{
	va_list ap;

	/* A peer's failure shows in its case's result, not as one of its own.
	 */
	printf("%s: %s %s: ", cf_in_peer ? "  peer failed" : "FAIL", cf_prov,
	       cf_case_name);
	cf_where(file, line);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	cf_result_sent();
	cf_close_all();
	exit(CF_EXIT_FAIL);
}

void cf_skip(const char *fmt, ...)
{
	va_list ap;

	printf("%s: %s %s: ", cf_in_peer ? "  peer skipped" : "SKIP", cf_prov,
	       cf_case_name);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	cf_result_sent();
	cf_close_all();
	exit(CF_EXIT_SKIP);
}

void cf_note(const char *fmt, ...)
{
	va_list ap;

	printf("  note: %s %s: ", cf_prov, cf_case_name);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
}

uint64_t cf_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void cf_nap(void)
{
	struct timespec ts = {0, 20000};

	nanosleep(&ts, NULL);
}

void cf_sleep_ms(int ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};

	nanosleep(&ts, NULL);
}

void cf_fill(void *buf, size_t len, unsigned int seed)
{
	uint8_t *p = buf;
	size_t j;

	for (j = 0; j < len; j++)
		p[j] = (uint8_t)(seed * 131 + j * 7 + (j >> 8) * 13 + 1);
}

void cf_check_fill(const void *buf, size_t len, unsigned int seed,
		   const char *what)
{
	const uint8_t *p = buf;
	size_t j;

	for (j = 0; j < len; j++) {
		uint8_t want =
		    (uint8_t)(seed * 131 + j * 7 + (j >> 8) * 13 + 1);

		if (p[j] != want)
			cf_fail("%s: byte %zu of %zu is 0x%02x, want 0x%02x",
				what, j, len, p[j], want);
	}
}

const char *cf_flags_str(uint64_t flags)
{
	static char s[512];

	snprintf(s, sizeof(s), "%s", fi_tostr(&flags, FI_TYPE_CQ_EVENT_FLAGS));
	return s;
}

void cf_check_flags(const struct cf_comp *c, uint64_t want, const char *what)
{
	char have[512];

	if ((c->flags & want) != want) {
		snprintf(have, sizeof(have), "%s", cf_flags_str(c->flags));
		cf_fail("%s: completion flags [%s] lack [%s]", what, have,
			cf_flags_str(want & ~c->flags));
	}
}

size_t cf_dt_size(int dt)
{
	switch (dt) {
	case FI_INT8:
	case FI_UINT8:
		return 1;
	case FI_INT16:
	case FI_UINT16:
		return 2;
	case FI_INT32:
	case FI_UINT32:
	case FI_FLOAT:
		return 4;
	case FI_INT64:
	case FI_UINT64:
	case FI_DOUBLE:
	case FI_FLOAT_COMPLEX:
		return 8;
	case FI_INT128:
	case FI_UINT128:
	case FI_DOUBLE_COMPLEX:
	case FI_LONG_DOUBLE:
		return 16;
	case FI_LONG_DOUBLE_COMPLEX:
		return 32;
	default:
		return 0;
	}
}

bool cf_is_sockaddr(uint32_t fmt)
{
	return fmt == FI_SOCKADDR || fmt == FI_SOCKADDR_IN ||
	       fmt == FI_SOCKADDR_IN6;
}

/*
 * Whether f's endpoints run over iWARP: their own protocol says so, or,
 * for an RDM endpoint made over connections (verbs;ofi_rxm says
 * FI_PROTO_RXM), the MSG endpoints of the same provider and domain do.
 */
bool cf_iwarp(const struct cf_fix *f)
{
	struct fi_info *hints, *list = NULL, *fi;
	bool iwarp = false;

	if (f->info->ep_attr->protocol == FI_PROTO_IWARP)
		return true;
	hints = fi_allocinfo();
	if (!hints)
		return false;
	hints->ep_attr->type = FI_EP_MSG;
	/* Any mode and registration mode: only the protocol matters. */
	hints->mode = ~0ULL;
	hints->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_RAW |
				      FI_MR_VIRT_ADDR | FI_MR_ALLOCATED |
				      FI_MR_PROV_KEY | FI_MR_MMU_NOTIFY |
				      FI_MR_RMA_EVENT | FI_MR_ENDPOINT |
				      FI_MR_HMEM | FI_MR_COLLECTIVE;
	/* "verbs;ofi_rxm": the core provider names the MSG endpoints. */
	hints->fabric_attr->prov_name = strndup(
		f->info->fabric_attr->prov_name,
		strcspn(f->info->fabric_attr->prov_name, ";"));
	hints->domain_attr->name = strdup(f->info->domain_attr->name);
	if (!fi_getinfo(fi_version(), NULL, NULL, 0, hints, &list))
		for (fi = list; fi && !iwarp; fi = fi->next)
			iwarp = fi->ep_attr->protocol == FI_PROTO_IWARP;
	fi_freeinfo(list);
	fi_freeinfo(hints);
	return iwarp;
}

/* Socket traffic stays on loopback: prefer a source of 127.0.0.1 or ::1. */
static bool cf_info_is_loopback(const struct fi_info *fi)
{
	const struct sockaddr *sa = fi->src_addr;

	if (!sa || !cf_is_sockaddr(fi->addr_format))
		return false;
	if (sa->sa_family == AF_INET)
		return ((const struct sockaddr_in *)sa)->sin_addr.s_addr ==
		       htonl(INADDR_LOOPBACK);
	if (sa->sa_family == AF_INET6)
		return !memcmp(&((const struct sockaddr_in6 *)sa)->sin6_addr,
			       &in6addr_loopback, sizeof(struct in6_addr));
	return false;
}

bool cf_dgram_env(void)
{
	const char *t = getenv("CF_EP_TYPE");

	return t && !strcmp(t, "dgram");
}

struct fi_info *cf_getinfo(const char *prov, const struct cf_opts *o, int *ret)
{
	struct fi_info *hints, *list = NULL, *fi, *pick = NULL, *out;
	const char *node;

	hints = fi_allocinfo();
	cf_assert(hints, "fi_allocinfo failed");
	hints->fabric_attr->prov_name = strdup(prov);
	/* CF_EP_TYPE=dgram: the cases written for FI_EP_RDM, over datagram
	 * endpoints that offer what they need (sockets' tagged datagrams). */
	hints->ep_attr->type = o->ep_type      ? o->ep_type :
			       cf_dgram_env() ? FI_EP_DGRAM :
						FI_EP_RDM;
	hints->caps = o->caps ? o->caps : (FI_MSG | FI_TAGGED);
	/* Every operation this suite posts carries a struct fi_context2. */
	hints->mode = FI_CONTEXT | FI_CONTEXT2 | o->mode;
	hints->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR |
				      FI_MR_ALLOCATED | FI_MR_PROV_KEY |
				      FI_MR_ENDPOINT;
	if (o->mr_mode)
		hints->domain_attr->mr_mode = o->mr_mode;
	if (o->mr_mode_none)
		hints->domain_attr->mr_mode = 0;
	hints->domain_attr->resource_mgmt = o->resource_mgmt;
	hints->addr_format = o->addr_format;
	hints->domain_attr->threading = o->threading;
	hints->tx_attr->size = o->tx_size;
	hints->domain_attr->av_type = o->av_type;
	hints->domain_attr->data_progress = o->data_progress;
	hints->tx_attr->msg_order = o->msg_order;
	hints->rx_attr->msg_order = o->msg_order;
	/* Contexts are the RDM endpoints' (and, with CF_EP_TYPE=dgram,
	 * the engine's datagram endpoints'): the other cases ran already. */
	if (cf_contexts() && hints->ep_attr->type != FI_EP_RDM &&
	    (hints->ep_attr->type != FI_EP_DGRAM || o->ep_type)) {
		fi_freeinfo(hints);
		cf_skip("CF_CONTEXTS=sep: scalable endpoints are tested on "
			"RDM endpoints and with CF_EP_TYPE=dgram");
	}
	if (cf_stx() && hints->ep_attr->type != FI_EP_RDM) {
		fi_freeinfo(hints);
		cf_skip("CF_CONTEXTS=stx: shared transmit contexts are "
			"tested on RDM endpoints");
	}
	if (cf_stx())
		hints->ep_attr->tx_ctx_cnt = FI_SHARED_CONTEXT;
	if (cf_srx() && hints->ep_attr->type != FI_EP_RDM) {
		fi_freeinfo(hints);
		cf_skip("CF_CONTEXTS=srx: shared receive contexts are "
			"tested on RDM endpoints here");
	}
	if (cf_srx())
		hints->ep_attr->rx_ctx_cnt = FI_SHARED_CONTEXT;
	if (cf_contexts()) {
		hints->caps |= FI_NAMED_RX_CTX;
		hints->ep_attr->tx_ctx_cnt = CF_SEP_CTX;
		hints->ep_attr->rx_ctx_cnt = CF_SEP_CTX;
	}

	/*
	 * CF_NODE names the local address to run over, e.g. the IP address
	 * of the one RDMA device to test.
	 */
	node = getenv("CF_NODE");
	if (node && !*node)
		node = NULL;
	*ret = fi_getinfo(FI_VERSION(1, 17), node, NULL, node ? FI_SOURCE : 0,
			  hints, &list);
	fi_freeinfo(hints);
	if (*ret)
		return NULL;
	for (fi = list; fi; fi = fi->next) {
		if (cf_info_is_loopback(fi)) {
			pick = fi;
			break;
		}
	}
	/*
	 * Without a loopback entry (shm, or verbs whose addresses belong to
	 * an RDMA device) the first entry serves.
	 */
	if (!pick)
		pick = list;
	out = fi_dupinfo(pick);
	fi_freeinfo(list);
	cf_assert(out, "fi_dupinfo failed");
	return out;
}

static const uint64_t cf_cntr_flag[CF_NCNTR] = {
    [CF_CNTR_SEND] = FI_SEND,	      [CF_CNTR_RECV] = FI_RECV,
    [CF_CNTR_READ] = FI_READ,	      [CF_CNTR_WRITE] = FI_WRITE,
    [CF_CNTR_RREAD] = FI_REMOTE_READ, [CF_CNTR_RWRITE] = FI_REMOTE_WRITE,
};

void cf_ep_open(struct cf_fix *f, int i)
{
	struct cf_ep *e = &f->ep[i];
	struct fi_cq_attr cq_attr = {
	    .size = f->o.cq_size ? f->o.cq_size : 4096,
	    .format = f->o.cq_format ? f->o.cq_format : FI_CQ_FORMAT_TAGGED,
	    .wait_obj = f->o.cq_wait,
	};
	int k;

	if (cf_contexts() && f->info->ep_attr->type == FI_EP_RDM) {
		cf_sep_open(f, i);
		return;
	}
	cf_ok(fi_endpoint(f->domain, f->info, &e->ep, NULL));
	if (f->stx)
		cf_ok(fi_ep_bind(e->ep, &f->stx->fid, 0));
	if (cf_srx() && f->info->ep_attr->type == FI_EP_RDM) {
		cf_ok(fi_srx_context(f->domain, f->info->rx_attr, &e->srx,
				     NULL));
		cf_ok(fi_ep_bind(e->ep, &e->srx->fid, 0));
	}
	cf_ok(fi_cq_open(f->domain, &cq_attr, &e->cq, NULL));
	/* cq_bind_flags (FI_SELECTIVE_COMPLETION) apply to transmits only. */
	if (!f->o.no_tx_cq)
		cf_ok(fi_ep_bind(e->ep, &e->cq->fid,
				 FI_TRANSMIT | f->o.cq_bind_flags));
	cf_ok(fi_ep_bind(e->ep, &e->cq->fid, FI_RECV));
	cf_ok(fi_ep_bind(e->ep, &f->av->fid, 0));
	if (f->eq)
		cf_ok(fi_ep_bind(e->ep, &f->eq->fid, 0));
	for (k = 0; k < CF_NCNTR; k++) {
		struct fi_cntr_attr ca = {
		    .events = FI_CNTR_EVENTS_COMP,
		    .wait_obj = FI_WAIT_UNSPEC,
		};

		if (!(f->o.cntr_mask & (1ULL << k)))
			continue;
		cf_ok(fi_cntr_open(f->domain, &ca, &e->cntr[k], NULL));
		cf_ok(fi_ep_bind(e->ep, &e->cntr[k]->fid, cf_cntr_flag[k]));
	}
	if (f->o.min_multi_recv && !f->o.min_multi_recv_late)
		cf_ok(fi_setopt(&e->ep->fid, FI_OPT_ENDPOINT,
				FI_OPT_MIN_MULTI_RECV, &f->o.min_multi_recv,
				sizeof(size_t)));
	if (f->o.name && !i) {
		int ret = fi_setname(&e->ep->fid, (void *)f->o.name,
				     f->o.namelen);

		if (ret == -FI_ENOSYS)
			cf_skip("fi_setname: not supported");
		cf_assert(!ret, "fi_setname: %d (%s)", ret, fi_strerror(-ret));
	}
	if (f->o.ep_eq) {
		struct fi_eq_attr eq_attr = { .size = 64,
					      .wait_obj = FI_WAIT_UNSPEC };

		cf_ok(fi_eq_open(f->fabric, &eq_attr, &e->eq, NULL));
		cf_ok(fi_ep_bind(e->ep, &e->eq->fid, 0));
	}
	cf_ok(fi_enable(e->ep));
	if (f->o.min_multi_recv && f->o.min_multi_recv_late)
		cf_ok(fi_setopt(&e->ep->fid, FI_OPT_ENDPOINT,
				FI_OPT_MIN_MULTI_RECV, &f->o.min_multi_recv,
				sizeof(size_t)));
	e->namelen = sizeof(e->name);
	cf_ok(fi_getname(&e->ep->fid, e->name, &e->namelen));
	e->addr = FI_ADDR_NOTAVAIL;
}

void cf_open(struct cf_fix *f, const char *prov, const struct cf_opts *o)
{
	struct fi_av_attr av_attr = {0};
	int ret, i;

	memset(f, 0, sizeof(*f));
	f->o = *o;
	f->nep = o->nep ? o->nep : 2;
	cf_track(f, true);
	f->info = cf_getinfo(prov, o, &ret);
	if (ret == -FI_ENODATA) {
		uint64_t caps = o->caps ? o->caps : (FI_MSG | FI_TAGGED);

		cf_skip("fi_getinfo -61 for caps [%s]%s%s",
			fi_tostr(&caps, FI_TYPE_CAPS),
			o->msg_order ? " with msg_order " : "",
			o->msg_order
			    ? fi_tostr(&o->msg_order, FI_TYPE_MSG_ORDER)
			    : "");
	}
	cf_assert(!ret, "fi_getinfo: %d (%s)", ret, fi_strerror(-ret));
	f->info->tx_attr->op_flags = o->tx_op_flags;
	f->info->rx_attr->op_flags = o->rx_op_flags;

	cf_ok(fi_fabric(f->info->fabric_attr, &f->fabric, NULL));
	cf_ok(fi_domain(f->fabric, f->info, &f->domain, NULL));
	if (cf_stx())
		cf_ok(fi_stx_context(f->domain, f->info->tx_attr, &f->stx,
				     NULL));
	av_attr.type = o->av_type;
	av_attr.count = 16;
	av_attr.name = o->av_name;
	av_attr.flags = o->av_flags;
	if (cf_contexts())
		av_attr.rx_ctx_bits = CF_SEP_CTX_BITS;
	cf_ok(fi_av_open(f->domain, &av_attr, &f->av, NULL));
	if (o->eq) {
		struct fi_eq_attr eq_attr = {.wait_obj = FI_WAIT_UNSPEC};

		cf_ok(fi_eq_open(f->fabric, &eq_attr, &f->eq, NULL));
	}
	for (i = 0; i < f->nep; i++)
		cf_ep_open(f, i);
	if (o->no_insert)
		return;
	for (i = 0; i < f->nep; i++) {
		ret = fi_av_insert(f->av, f->ep[i].name, 1, &f->ep[i].addr, 0,
				   NULL);
		cf_assert(ret == 1, "fi_av_insert of endpoint %d: %d", i, ret);
		cf_assert(f->ep[i].addr != FI_ADDR_NOTAVAIL,
			  "fi_av_insert gave FI_ADDR_NOTAVAIL");
	}
}

void cf_close(struct cf_fix *f)
{
	int i, k;

	cf_track(f, false);
	for (i = 0; i < f->nep; i++) {
		struct cf_ep *e = &f->ep[i];

		if (e->ep)
			cf_ok(fi_close(&e->ep->fid));
		if (e->srx)
			cf_ok(fi_close(&e->srx->fid));
		if (e->eq)
			cf_ok(fi_close(&e->eq->fid));
		if (e->cq)
			cf_ok(fi_close(&e->cq->fid));
		for (k = 0; k < CF_NCNTR; k++)
			if (e->cntr[k])
				cf_ok(fi_close(&e->cntr[k]->fid));
		free(e->q.v);
	}
	if (f->stx)
		cf_ok(fi_close(&f->stx->fid));
	if (f->eq)
		cf_ok(fi_close(&f->eq->fid));
	if (f->av)
		cf_ok(fi_close(&f->av->fid));
	if (f->domain)
		cf_ok(fi_close(&f->domain->fid));
	if (f->fabric)
		cf_ok(fi_close(&f->fabric->fid));
	fi_freeinfo(f->info);
	memset(f, 0, sizeof(*f));
}

static void cf_queue_push(struct cf_queue *q, const struct cf_comp *c)
{
	if (q->n == q->cap) {
		q->cap = q->cap ? q->cap * 2 : 64;
		q->v = realloc(q->v, q->cap * sizeof(*q->v));
		cf_assert(q->v, "out of memory");
	}
	q->v[q->n++] = *c;
}

static void cf_queue_take(struct cf_queue *q, size_t at, struct cf_comp *c)
{
	*c = q->v[at];
	memmove(&q->v[at], &q->v[at + 1], (q->n - at - 1) * sizeof(*q->v));
	q->n--;
}

static size_t cf_entry_size(enum fi_cq_format fmt)
{
	switch (fmt) {
	case FI_CQ_FORMAT_CONTEXT:
		return sizeof(struct fi_cq_entry);
	case FI_CQ_FORMAT_MSG:
		return sizeof(struct fi_cq_msg_entry);
	case FI_CQ_FORMAT_DATA:
		return sizeof(struct fi_cq_data_entry);
	default:
		return sizeof(struct fi_cq_tagged_entry);
	}
}

/* Unpack one entry of the CQ's format; fields the format lacks stay 0. */
static void cf_entry_unpack(enum fi_cq_format fmt, const void *p,
			    struct cf_comp *c)
{
	const struct fi_cq_tagged_entry *t = p;

	memset(c, 0, sizeof(*c));
	c->src = FI_ADDR_UNSPEC;
	c->ctx = t->op_context;
	if (fmt == FI_CQ_FORMAT_CONTEXT)
		return;
	c->flags = t->flags;
	c->len = t->len;
	if (fmt == FI_CQ_FORMAT_MSG)
		return;
	c->buf = t->buf;
	c->data = t->data;
	if (fmt == FI_CQ_FORMAT_DATA)
		return;
	c->tag = t->tag;
}

static void cf_harvest(struct cf_fix *f, struct cf_ep *e)
{
	enum fi_cq_format fmt =
	    f->o.cq_format ? f->o.cq_format : FI_CQ_FORMAT_TAGGED;
	size_t esz = cf_entry_size(fmt);
	uint8_t raw[16 * sizeof(struct fi_cq_tagged_entry)];
	fi_addr_t src[16];
	struct cf_comp c;
	ssize_t n, j;

	for (;;) {
		if (f->o.readfrom)
			n = fi_cq_readfrom(e->cq, raw, 16, src);
		else
			n = fi_cq_read(e->cq, raw, 16);
		if (n == -FI_EAGAIN)
			return;
		if (n == -FI_EAVAIL) {
			struct fi_cq_err_entry ee = {0};

			memset(&c, 0, sizeof(c));
			ee.err_data = c.err_data;
			ee.err_data_size = sizeof(c.err_data);
			n = fi_cq_readerr(e->cq, &ee, 0);
			cf_assert(n == 1, "fi_cq_readerr after -FI_EAVAIL: %zd",
				  n);
			c.ctx = ee.op_context;
			c.flags = ee.flags;
			c.len = ee.len;
			c.buf = ee.buf;
			c.data = ee.data;
			c.tag = ee.tag;
			c.olen = ee.olen;
			c.err = ee.err < 0 ? -ee.err : ee.err;
			c.prov_errno = ee.prov_errno;
			c.src = FI_ADDR_NOTAVAIL;
			/* err_data may point into provider memory instead. */
			c.err_data_size = ee.err_data_size;
			if (ee.err_data_size && ee.err_data != c.err_data) {
				size_t m = ee.err_data_size;

				if (m > sizeof(c.err_data))
					m = sizeof(c.err_data);
				memcpy(c.err_data, ee.err_data, m);
				c.err_data_size = m;
			}
			cf_queue_push(&e->q, &c);
			continue;
		}
		cf_assert(n > 0 && n <= 16, "fi_cq_read: %zd (%s)", n,
			  fi_strerror((int)-n));
		for (j = 0; j < n; j++) {
			cf_entry_unpack(fmt, raw + j * esz, &c);
			if (f->o.readfrom)
				c.src = src[j];
			cf_queue_push(&e->q, &c);
		}
	}
}

void cf_progress(struct cf_fix *f)
{
	int i, k;

	for (i = 0; i < f->nep; i++) {
		cf_harvest(f, &f->ep[i]);
		for (k = 0; k < CF_NCNTR; k++)
			if (f->ep[i].cntr[k])
				(void)fi_cntr_read(f->ep[i].cntr[k]);
	}
}

bool cf_poll(struct cf_fix *f, int i, struct cf_comp *c, int timeout_ms)
{
	uint64_t end = cf_now_ms() + timeout_ms;
	struct cf_queue *q = &f->ep[i].q;

	for (;;) {
		if (q->n) {
			cf_queue_take(q, 0, c);
			return true;
		}
		cf_progress(f);
		if (!q->n && cf_now_ms() > end)
			return false;
		if (!q->n && f->o.nap)
			cf_nap();
	}
}

struct cf_comp cf_wait_at(const char *file, int line, struct cf_fix *f, int i)
{
	struct cf_comp c;

	if (!cf_poll(f, i, &c, CF_WAIT_MS))
		cf_fail_at(file, line,
			   "endpoint %d: no completion within %d ms", i,
			   CF_WAIT_MS);
	return c;
}

struct cf_comp cf_wait_ctx_at(const char *file, int line, struct cf_fix *f,
			      int i, void *ctx)
{
	uint64_t end = cf_now_ms() + CF_WAIT_MS;
	struct cf_queue *q = &f->ep[i].q;
	struct cf_comp c;
	size_t j;

	for (;;) {
		for (j = 0; j < q->n; j++) {
			if (q->v[j].ctx == ctx) {
				cf_queue_take(q, j, &c);
				return c;
			}
		}
		if (cf_now_ms() > end)
			cf_fail_at(file, line,
				   "endpoint %d: no completion "
				   "for context %p within %d ms (%zu others "
				   "pending)",
				   i, ctx, CF_WAIT_MS, q->n);
		cf_progress(f);
		if (f->o.nap)
			cf_nap();
	}
}

void cf_expect_none(struct cf_fix *f, int i, int ms)
{
	uint64_t end = cf_now_ms() + ms;
	struct cf_queue *q = &f->ep[i].q;

	do {
		cf_progress(f);
		if (q->n)
			cf_fail("endpoint %d: unexpected completion ctx %p "
				"flags [%s] len %zu err %d",
				i, q->v[0].ctx, cf_flags_str(q->v[0].flags),
				q->v[0].len, q->v[0].err);
	} while (cf_now_ms() < end);
}

void cf_wait_cntr(struct cf_fix *f, int i, enum cf_cntr_kind k, uint64_t want)
{
	uint64_t end = cf_now_ms() + CF_WAIT_MS, v = 0;

	cf_assert(f->ep[i].cntr[k], "counter %d of endpoint %d not open", k, i);
	while (cf_now_ms() <= end) {
		cf_progress(f);
		v = fi_cntr_read(f->ep[i].cntr[k]);
		if (v >= want)
			return;
	}
	cf_fail("counter %d of endpoint %d reads %llu, want %llu", k, i,
		(unsigned long long)v, (unsigned long long)want);
}

static uint64_t cf_next_key = 1;

void cf_mem_reg(struct cf_fix *f, int i, struct cf_mem *m, size_t len,
		uint64_t access)
{
	cf_mem_reg_flags(f, i, m, len, access, 0);
}

void cf_mem_reg_flags(struct cf_fix *f, int i, struct cf_mem *m, size_t len,
		      uint64_t access, uint64_t flags)
{
	uint64_t mode = f->info->domain_attr->mr_mode;
	size_t alloc = len ? len : 1;

	memset(m, 0, sizeof(*m));
	cf_assert(!posix_memalign((void **)&m->p, 4096, alloc),
		  "posix_memalign %zu", alloc);
	memset(m->p, 0, alloc);
	m->len = len;
	cf_ok(fi_mr_reg(f->domain, m->p, alloc, access, 0, cf_next_key++,
			flags, &m->mr, NULL));
	if (mode & FI_MR_ENDPOINT) {
		cf_ok(fi_mr_bind(m->mr,
				 cf_contexts() ?
					 &cf_sep_of(f->ep[i].ep)->fid :
					 &f->ep[i].ep->fid,
				 0));
		cf_ok(fi_mr_enable(m->mr));
	}
	m->desc = fi_mr_desc(m->mr);
	m->key = fi_mr_key(m->mr);
	/* Peers need a key; a registration they cannot reach may have none
	 * (libfabric 2.2 on: FI_KEY_NOTAVAIL, and its requested key stays
	 * free for another). */
	cf_assert(m->key != FI_KEY_NOTAVAIL ||
			  !(access & (FI_REMOTE_READ | FI_REMOTE_WRITE)),
		  "fi_mr_key: FI_KEY_NOTAVAIL");
	/* FI_MR_BASIC (asked for by name) addresses by virtual address. */
	m->raddr = (mode == FI_MR_BASIC || (mode & FI_MR_VIRT_ADDR))
		       ? (uint64_t)(uintptr_t)m->p
		       : 0;
}

void cf_mem_close(struct cf_mem *m)
{
	if (m->mr)
		cf_ok(fi_close(&m->mr->fid));
	m->mr = NULL;
}

void cf_mem_free(struct cf_mem *m)
{
	cf_mem_close(m);
	free(m->p);
	m->p = NULL;
}

static const struct cf_case *const cf_groups[] = {
    cf_cases_msg,  cf_cases_rma,  cf_cases_atomic,
    cf_cases_misc, cf_cases_proc, cf_cases_kill, cf_cases_inject, cf_cases_cm,
    cf_cases_wait, cf_cases_err,  cf_cases_getinfo,
    cf_cases_mr_cntr, cf_cases_ctx, cf_cases_trigger, cf_cases_coll,
    cf_cases_dgram, cf_cases_fence, cf_cases_shared_av,
};

#define CF_NGROUPS (sizeof(cf_groups) / sizeof(cf_groups[0]))

static int cf_list_providers(void)
{
	struct fi_info *list = NULL, *fi, *g;
	int ret;

	ret = fi_getinfo(FI_VERSION(1, 17), NULL, NULL, FI_PROV_ATTR_ONLY, NULL,
			 &list);
	if (ret == -FI_ENODATA)
		return 0;
	if (ret) {
		fprintf(stderr, "fi_getinfo: %d (%s)\n", ret,
			fi_strerror(-ret));
		return 1;
	}
	for (fi = list; fi; fi = fi->next) {
		const char *name = fi->fabric_attr->prov_name;
		bool dup = false;

		/* Utility and hook providers layer over the real ones. */
		if (!name || !strncmp(name, "ofi_", 4) || strchr(name, ';'))
			continue;
		for (g = list; g != fi; g = g->next)
			if (g->fabric_attr->prov_name &&
			    !strcmp(g->fabric_attr->prov_name, name))
				dup = true;
		if (!dup)
			printf("%s\n", name);
	}
	fi_freeinfo(list);
	return 0;
}

static bool cf_selected(const char *name, char **sel, int nsel)
{
	int i;

	if (!nsel)
		return true;
	for (i = 0; i < nsel; i++)
		if (!strcmp(sel[i], name))
			return true;
	return false;
}

/* The case's own alarm, just before the driver's deadline: say where. */
static void cf_on_alarm(int sig)
{
	const char *base = strrchr(cf_cur_file, '/');

	(void)sig;
	if (!cf_result_done) {
		printf("FAIL: %s %s: stuck at or after %s (%s:%d)\n", cf_prov,
		       cf_case_name, cf_cur_call, base ? base + 1 : cf_cur_file,
		       cf_cur_line);
		cf_result_sent();
	}
	_exit(CF_EXIT_FAIL);
}

/* Run one case in a child with a deadline; returns its CF_EXIT_* code. */
static int cf_run_case(const struct cf_case *c, int limit_s)
{
	uint64_t t0 = cf_now_ms(), end = t0 + (uint64_t)limit_s * 1000;
	const char *times = getenv("CF_TIMES");
	struct rusage ru;
	int status, ret, pfd[2];
	bool told = false;
	pid_t pid, w;
	char b;

	fflush(stdout);
	if (pipe2(pfd, O_CLOEXEC | O_NONBLOCK)) {
		printf("FAIL: %s %s: pipe: %s\n", cf_prov, c->name,
		       strerror(errno));
		return CF_EXIT_FAIL;
	}
	pid = fork();
	if (pid < 0) {
		printf("FAIL: %s %s: fork: %s\n", cf_prov, c->name,
		       strerror(errno));
		return CF_EXIT_FAIL;
	}
	if (!pid) {
		close(pfd[0]);
		cf_result_fd = pfd[1];
		cf_case_name = c->name;
		signal(SIGALRM, cf_on_alarm);
		if (limit_s > 4)
			alarm((unsigned int)limit_s - 3);
		ret = c->run(cf_prov);
		if (ret == CF_EXIT_PASS && cf_nexpect) {
			printf("FAIL: %s %s: %d check(s) failed\n", cf_prov,
			       c->name, cf_nexpect);
			ret = CF_EXIT_FAIL;
		} else if (ret == CF_EXIT_PASS) {
			printf("PASS: %s %s\n", cf_prov, c->name);
		}
		cf_result_sent();
		exit(ret);
	}
	close(pfd[1]);
	for (;;) {
		w = wait4(pid, &status, WNOHANG, &ru);
		if (w == pid)
			break;
		if (cf_now_ms() > end) {
			kill(pid, SIGKILL);
			waitpid(pid, &status, 0);
			printf("FAIL: %s %s: no result within %d s\n", cf_prov,
			       c->name, limit_s);
			return CF_EXIT_FAIL;
		}
		cf_sleep_ms(10);
	}
	/* CF_TIMES=FILE: each case's wall and CPU time, to find slow ones. */
	if (times && *times) {
		FILE *tf = fopen(times, "a");

		if (tf) {
			fprintf(tf, "%s %s %llu %llu\n", cf_prov, c->name,
				(unsigned long long)(cf_now_ms() - t0),
				(unsigned long long)(ru.ru_utime.tv_sec * 1000 +
						     ru.ru_utime.tv_usec / 1000 +
						     ru.ru_stime.tv_sec * 1000 +
						     ru.ru_stime.tv_usec / 1000));
			fclose(tf);
		}
	}
	/* The write end is closed now: read() cannot block. */
	told = read(pfd[0], &b, 1) == 1;
	close(pfd[0]);
	if (WIFSIGNALED(status)) {
		printf("FAIL: %s %s: killed by signal %d\n", cf_prov, c->name,
		       WTERMSIG(status));
		return CF_EXIT_FAIL;
	}
	ret = WEXITSTATUS(status);
	if (ret != CF_EXIT_PASS && ret != CF_EXIT_SKIP && ret != CF_EXIT_FAIL) {
		printf("FAIL: %s %s: exit status %d\n", cf_prov, c->name, ret);
		ret = CF_EXIT_FAIL;
	} else if (!told) {
		printf("FAIL: %s %s: exited with status %d without a result\n",
		       cf_prov, c->name, ret);
		ret = CF_EXIT_FAIL;
	}
	return ret;
}

static void cf_usage(const char *argv0)
{
	fprintf(stderr,
		"usage: %s -p PROVIDER [-c CASE]... [-t SECONDS]\n"
		"       %s -l        list cases\n"
		"       %s -P        list the providers the library has\n",
		argv0, argv0, argv0);
}

int main(int argc, char **argv)
{
	int npass = 0, nfail = 0, nskip = 0, nsel = 0, limit_s = 60;
	char *sel[256];
	const char *role = NULL;
	bool list = false, times = getenv("CF_TIMES") != NULL;
	uint64_t t0;
	size_t g;
	int opt, rc;

	cf_self_exe = "/proc/self/exe";
	if (getenv("CF_CASE_TIMEOUT"))
		limit_s = atoi(getenv("CF_CASE_TIMEOUT"));
	setvbuf(stdout, NULL, _IOLBF, 0);
	while ((opt = getopt(argc, argv, "p:c:t:lPR:h")) != -1) {
		switch (opt) {
		case 'p':
			cf_prov = optarg;
			break;
		case 'c':
			if (nsel < 256)
				sel[nsel++] = optarg;
			break;
		case 't':
			limit_s = atoi(optarg);
			break;
		case 'l':
			list = true;
			break;
		case 'P':
			return cf_list_providers();
		case 'R':
			role = optarg;
			break;
		default:
			cf_usage(argv[0]);
			return opt == 'h' ? 0 : 2;
		}
	}
	if (list) {
		for (g = 0; g < CF_NGROUPS; g++) {
			const struct cf_case *c;

			for (c = cf_groups[g]; c->name; c++)
				printf("%-24s %s\n", c->name, c->what);
		}
		return 0;
	}
	if (!cf_prov) {
		cf_usage(argv[0]);
		return 2;
	}
	cf_in_peer = role != NULL;
	/* "1": this process and its peers; "peer": the peer processes only. */
	if (getenv("CF_DENY_CMA") &&
	    (!strcmp(getenv("CF_DENY_CMA"), "1") ||
	     (role && !strcmp(getenv("CF_DENY_CMA"), "peer"))) &&
	    cf_deny_cma())
		return CF_EXIT_FAIL;
	if (role)
		return cf_peer_main(role, argc - optind, argv + optind);

	for (g = 0; g < CF_NGROUPS; g++) {
		const struct cf_case *c;

		for (c = cf_groups[g]; c->name; c++) {
			if (!cf_selected(c->name, sel, nsel))
				continue;
			t0 = cf_now_ms();
			rc = cf_run_case(c, limit_s);
			if (times)
				printf("  time: %s %s: %" PRIu64 " ms\n", cf_prov,
				       c->name, cf_now_ms() - t0);
			switch (rc) {
			case CF_EXIT_PASS:
				npass++;
				break;
			case CF_EXIT_SKIP:
				nskip++;
				break;
			default:
				nfail++;
			}
		}
	}
	printf("%s: %d passed, %d failed, %d skipped\n", cf_prov, npass, nfail,
	       nskip);
	if (npass + nfail + nskip == 0) {
		printf("no case matched\n");
		return 2;
	}
	return nfail ? 1 : 0;
}
