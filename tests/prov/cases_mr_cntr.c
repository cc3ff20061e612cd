// SPDX-License-Identifier: BSD-2-Clause
/*
 * Counters bound to registrations: fi_mr_bind(mr, &cntr->fid,
 * FI_REMOTE_WRITE) counts the remote writes and atomics that change the
 * registration (fi_mr(3)), FI_REMOTE_READ the reads and the fetching and
 * compare atomics that hand its contents back (fi_endpoint(3)'s classes
 * for remote reads); a counter stays open while a registration counts
 * into it (fi_cntr(3): -FI_EBUSY).
 *
 * The two-process cases follow Sandia OpenSHMEM 1.5's target side
 * (src/transport_ofi.c, default build): hints FI_RMA | FI_ATOMIC |
 * FI_RMA_EVENT, mr_mode 0, FI_RM_ENABLED, FI_THREAD_DOMAIN and
 * FI_PROGRESS_AUTO; a target endpoint with FI_RMA | FI_ATOMIC |
 * FI_REMOTE_READ | FI_REMOTE_WRITE | FI_RMA_EVENT bound to its AV and a CQ,
 * enabled; then a counter (FI_CNTR_EVENTS_COMP, FI_WAIT_UNSPEC), the heap
 * and data registrations (requested keys 1 and 0) and fi_mr_bind of the
 * counter to each with FI_REMOTE_WRITE, after fi_enable, the counter bound
 * to no endpoint.  The target waits as shmem_wait_until does (fi_cntr_read,
 * then fi_cntr_wait for one more) and reads nothing else; it closes the
 * registrations, the endpoint, the CQ and the counter in that order.
 * Here a second counter counts FI_REMOTE_READ on the same two
 * registrations, and a third registration has no counter.
 */
#include "config.h"

#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/wait.h>

#include "conformance.h"
#include "proc.h"

/* The target's registrations, with the keys asked for (SOS: heap 1, data
 * 0); `plain` has no counter. */
enum { MC_HEAP, MC_DATA, MC_PLAIN, MC_NREG };
static const size_t mc_len[MC_NREG] = {2 << 20, 65536, 4096};
static const uint64_t mc_want_key[MC_NREG] = {1, 0, 2};

/* Where each operation lands: heap ... */
#define H_W1 0
#define H_W2 64
#define H_W6 4352
#define H_W3 8192
#define H_ATOM 73792
#define H_W4 (1 << 20)
/* ... data ... */
#define D_W5 0
#define D_W6 64
#define D_W7A 256
#define D_W7B 512
#define D_FLAG 1024
#define D_RD 32768
/* ... and plain. */
#define P_W 0

#define MC_SEED 7000
#define MC_RD_SEED 7100
#define MC_INJECT 0x5555aaaa5555aaaaULL
#define MC_FLAG 0xc0ffee5eedULL

/* The four plain writes (and reads back): heap offsets and lengths. */
static const struct {
	uint64_t off;
	size_t len;
} mc_rw[] = {{H_W1, 1}, {H_W2, 4096}, {H_W3, 65537}, {H_W4, 1 << 20}};
#define MC_NRW (sizeof(mc_rw) / sizeof(mc_rw[0]))

/* Seeds of the two-range writes and of the plain registration's. */
#define S6 (MC_SEED + 10)
#define S7 (MC_SEED + 11)
#define SP (MC_SEED + 12)

/* What the initiator tells the target before it starts. */
struct mc_plan {
	uint64_t writes, reads; /* what the two counters must reach */
};

/* What the target tells the initiator of its registrations. */
struct mc_keys {
	uint64_t key[MC_NREG];
	uint64_t raddr[MC_NREG];
};

/* The target's verdict: what[0] == 0, or the first thing that was wrong. */
struct mc_verdict {
	char what[160];
	uint64_t writes, reads, werr, rerr;
};

static bool mc_holds(const uint8_t *p, size_t len, unsigned int seed,
		     size_t from, size_t total)
{
	uint8_t *want = malloc(total);
	bool ok;

	cf_assert(want, "malloc");
	cf_fill(want, total, seed);
	ok = !memcmp(p, want + from, len);
	free(want);
	return ok;
}

static bool mc_zero(const uint8_t *p, size_t len)
{
	size_t i;

	for (i = 0; i < len; i++)
		if (p[i])
			return false;
	return true;
}

/* ---- the target ---------------------------------------------------------- */

static struct cf_opts mc_target_opts(bool manual)
{
	struct cf_opts o = {
	    .caps = FI_RMA | FI_ATOMIC | FI_RMA_EVENT,
	    .mr_mode_none = true,
	    .resource_mgmt = FI_RM_ENABLED,
	    .threading = FI_THREAD_DOMAIN,
	    .data_progress = manual ? FI_PROGRESS_MANUAL : FI_PROGRESS_AUTO,
	};

	return o;
}

#define MC_BAD(v, ...)                                                         \
	do {                                                                   \
		if (!(v)->what[0])                                             \
			snprintf((v)->what, sizeof((v)->what), __VA_ARGS__);   \
	} while (0)

/* The data every operation left, as the target sees it. */
static void mc_check_data(uint8_t *const *r, struct mc_verdict *v)
{
	const uint64_t want[4] = {12, 15, 42, 99};
	uint64_t w;
	size_t i;

	for (i = 0; i < MC_NRW; i++)
		if (!mc_holds(r[MC_HEAP] + mc_rw[i].off, mc_rw[i].len,
			      MC_SEED + (unsigned int)i, 0, mc_rw[i].len))
			MC_BAD(v, "heap: write %zu (%zu bytes) not in place", i,
			       mc_rw[i].len);
	memcpy(&w, r[MC_DATA] + D_W5, 8);
	if (w != MC_INJECT)
		MC_BAD(v, "data: the injected write not in place");
	if (!mc_holds(r[MC_DATA] + D_W6, 100, S6, 0, 200) ||
	    !mc_holds(r[MC_HEAP] + H_W6, 100, S6, 100, 200))
		MC_BAD(v, "the write to data and heap not in place");
	if (!mc_holds(r[MC_DATA] + D_W7A, 100, S7, 0, 200) ||
	    !mc_holds(r[MC_DATA] + D_W7B, 100, S7, 100, 200))
		MC_BAD(v, "the write of two ranges of data not in place");
	if (!mc_holds(r[MC_PLAIN] + P_W, 256, SP, 0, 256))
		MC_BAD(v, "plain: the write not in place");
	for (i = 0; i < 4; i++) {
		memcpy(&w, r[MC_HEAP] + H_ATOM + 8 * i, 8);
		if (w != want[i])
			MC_BAD(v, "heap: atomic word %zu is %llu, want %llu",
			       i, (unsigned long long)w,
			       (unsigned long long)want[i]);
	}
	if (!mc_zero(r[MC_DATA] + mc_len[MC_DATA] - 64, 64))
		MC_BAD(v, "data: the write past its end changed it");
}

/* Wait for the initiator's byte while reading the counters (the only
 * calls of ours that make progress, as in SOS). */
static void mc_await_pipe(struct fid_cntr *w, struct fid_cntr *r)
{
	uint64_t end = cf_now_ms() + CF_WAIT_MS;
	struct pollfd pfd = {PEER_IN, POLLIN, 0};

	while (poll(&pfd, 1, 0) <= 0) {
		cf_assert(cf_now_ms() < end, "the initiator said nothing");
		fi_cntr_read(w);
		fi_cntr_read(r);
		cf_sleep_ms(1);
	}
}

static int mc_target(bool manual)
{
	struct cf_opts o = mc_target_opts(manual);
	struct fi_av_attr av_attr = {.count = 16};
	struct fi_cntr_attr cntr_attr = {0};
	struct fi_cq_attr cq_attr = {0};
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_av *av;
	struct fid_ep *ep;
	struct fid_cq *cq;
	struct fid_cntr *wcntr, *rcntr;
	struct fid_mr *mr[MC_NREG];
	uint8_t *reg[MC_NREG];
	struct mc_verdict v = {{0}};
	struct mc_plan plan;
	struct mc_keys keys;
	struct peer_name pn;
	uint8_t name[CF_MAX_NAME];
	size_t namelen = sizeof(name);
	volatile uint64_t *flag;
	struct fi_info *info;
	uint32_t len;
	uint64_t end, c;
	fi_addr_t peer;
	int ret, i;
	char op;

	info = cf_getinfo(cf_prov, &o, &ret);
	cf_assert(!ret, "target: fi_getinfo: %d", ret);
	cf_ok(fi_fabric(info->fabric_attr, &fabric, NULL));
	cf_ok(fi_domain(fabric, info, &domain, NULL));
	cf_ok(fi_av_open(domain, &av_attr, &av, NULL));

	/* shmem_transport_ofi_target_ep_init */
	info->ep_attr->tx_ctx_cnt = 0;
	/* (CF_CONTEXTS=srx asked for shared receives: not SOS's.) */
	if (info->ep_attr->rx_ctx_cnt == FI_SHARED_CONTEXT)
		info->ep_attr->rx_ctx_cnt = 0;
	info->caps = FI_RMA | FI_ATOMIC | FI_REMOTE_READ | FI_REMOTE_WRITE |
		     FI_RMA_EVENT;
	info->tx_attr->op_flags = 0;
	info->mode = 0;
	info->tx_attr->mode = 0;
	info->rx_attr->mode = 0;
	info->tx_attr->caps = FI_RMA | FI_ATOMIC;
	info->rx_attr->caps = info->caps;
	cf_ok(fi_endpoint(domain, info, &ep, NULL));
	cf_ok(fi_ep_bind(ep, &av->fid, 0));
	cf_ok(fi_cq_open(domain, &cq_attr, &cq, NULL));
	cf_ok(fi_ep_bind(ep, &cq->fid, FI_TRANSMIT | FI_RECV));
	cf_ok(fi_enable(ep));

	/* allocate_recv_cntr_mr, then ofi_mr_reg_bind */
	cntr_attr.events = FI_CNTR_EVENTS_COMP;
	cntr_attr.wait_obj = FI_WAIT_UNSPEC;
	cf_ok(fi_cntr_open(domain, &cntr_attr, &wcntr, NULL));
	cf_ok(fi_cntr_open(domain, &cntr_attr, &rcntr, NULL));
	for (i = 0; i < MC_NREG; i++) {
		cf_assert(!posix_memalign((void **)&reg[i], 4096, mc_len[i]),
			  "posix_memalign");
		memset(reg[i], 0, mc_len[i]);
		cf_ok(fi_mr_reg(domain, reg[i], mc_len[i],
				FI_REMOTE_READ | FI_REMOTE_WRITE, 0,
				mc_want_key[i], 0, &mr[i], NULL));
	}
	cf_fill(reg[MC_DATA] + D_RD, 4096, MC_RD_SEED);
	cf_ok(fi_mr_bind(mr[MC_HEAP], &wcntr->fid, FI_REMOTE_WRITE));
	cf_ok(fi_mr_bind(mr[MC_DATA], &wcntr->fid, FI_REMOTE_WRITE));
	cf_ok(fi_mr_bind(mr[MC_HEAP], &rcntr->fid, FI_REMOTE_READ));
	cf_ok(fi_mr_bind(mr[MC_DATA], &rcntr->fid, FI_REMOTE_READ));

	cf_ok(fi_getname(&ep->fid, name, &namelen));
	len = (uint32_t)namelen;
	cf_write_all(PEER_OUT, &len, sizeof(len));
	cf_write_all(PEER_OUT, name, len);
	cf_read_name(PEER_IN, &pn);
	cf_assert(fi_av_insert(av, pn.v, 1, &peer, 0, NULL) == 1,
		  "target: fi_av_insert");
	for (i = 0; i < MC_NREG; i++) {
		keys.key[i] = fi_mr_key(mr[i]);
		keys.raddr[i] = info->domain_attr->mr_mode & FI_MR_VIRT_ADDR
					? (uint64_t)(uintptr_t)reg[i]
					: 0;
	}
	cf_write_all(PEER_OUT, &keys, sizeof(keys));
	cf_read_all(PEER_IN, &plan, sizeof(plan), CF_WAIT_MS);

	/* shmem_wait_until on the flag the initiator writes last */
	flag = (volatile uint64_t *)(reg[MC_DATA] + D_FLAG);
	end = cf_now_ms() + CF_WAIT_MS;
	while (*flag != MC_FLAG) {
		c = fi_cntr_read(wcntr);
		if (*flag == MC_FLAG)
			break;
		if (cf_now_ms() > end) {
			MC_BAD(&v, "the flag never came (write counter %llu)",
			       (unsigned long long)c);
			goto report;
		}
		ret = fi_cntr_wait(wcntr, c + 1, CF_WAIT_MS);
		if (ret) {
			MC_BAD(&v,
			       "fi_cntr_wait(write counter, %llu): %d while "
			       "waiting for the flag",
			       (unsigned long long)c + 1, ret);
			goto report;
		}
	}
	ret = fi_cntr_wait(wcntr, plan.writes, CF_WAIT_MS);
	if (ret)
		MC_BAD(&v, "fi_cntr_wait(write counter, %llu): %d (at %llu)",
		       (unsigned long long)plan.writes, ret,
		       (unsigned long long)fi_cntr_read(wcntr));
	ret = fi_cntr_wait(rcntr, plan.reads, CF_WAIT_MS);
	if (ret)
		MC_BAD(&v, "fi_cntr_wait(read counter, %llu): %d (at %llu)",
		       (unsigned long long)plan.reads, ret,
		       (unsigned long long)fi_cntr_read(rcntr));
	/* Every count came after its data. */
	mc_check_data(reg, &v);
	/* Nothing more comes. */
	ret = fi_cntr_wait(wcntr, plan.writes + 1, 300);
	if (ret != -FI_ETIMEDOUT)
		MC_BAD(&v, "write counter passed %llu: %llu (wait %d)",
		       (unsigned long long)plan.writes,
		       (unsigned long long)fi_cntr_read(wcntr), ret);
	ret = fi_cntr_wait(rcntr, plan.reads + 1, 100);
	if (ret != -FI_ETIMEDOUT)
		MC_BAD(&v, "read counter passed %llu: %llu (wait %d)",
		       (unsigned long long)plan.reads,
		       (unsigned long long)fi_cntr_read(rcntr), ret);

report:
	mc_await_pipe(wcntr, rcntr);
	cf_read_all(PEER_IN, &op, 1, CF_WAIT_MS);
	cf_assert(op == 'C', "target: unexpected request %c", op);
	v.writes = fi_cntr_read(wcntr);
	v.reads = fi_cntr_read(rcntr);
	v.werr = fi_cntr_readerr(wcntr);
	v.rerr = fi_cntr_readerr(rcntr);

	/* fi_cntr(3): not while registrations count into it */
	ret = fi_close(&wcntr->fid);
	if (ret != -FI_EBUSY)
		MC_BAD(&v, "fi_close of a counter registrations count into: "
			   "%d, want -FI_EBUSY",
		       ret);
	/* SOS's order: registrations, endpoint, CQ, counter */
	ret = 0;
	for (i = 0; i < MC_NREG && !ret; i++) {
		ret = fi_close(&mr[i]->fid);
		if (ret)
			MC_BAD(&v, "fi_close of registration %d: %d", i, ret);
	}
	if (!ret)
		ret = fi_close(&ep->fid);
	if (!ret)
		ret = fi_close(&cq->fid);
	if (!ret) {
		ret = fi_close(&wcntr->fid);
		if (ret)
			MC_BAD(&v, "fi_close of the write counter once its "
				   "registrations closed: %d",
			       ret);
	}
	if (!ret) {
		ret = fi_close(&rcntr->fid);
		if (ret)
			MC_BAD(&v, "fi_close of the read counter: %d", ret);
	}
	if (!ret)
		ret = fi_close(&av->fid);
	if (!ret)
		ret = fi_close(&domain->fid);
	if (!ret)
		ret = fi_close(&fabric->fid);
	if (ret)
		MC_BAD(&v, "closing: %d (%s)", ret, fi_strerror(-ret));
	cf_write_all(PEER_OUT, &v, sizeof(v));
	for (i = 0; i < MC_NREG; i++)
		free(reg[i]);
	fi_freeinfo(info);
	return 0;
}

bool cf_mr_cntr_is_role(const char *role)
{
	return !strcmp(role, "mr_cntr") || !strcmp(role, "mr_cntr_manual");
}

int cf_mr_cntr_peer_main(const char *role)
{
	return mc_target(!strcmp(role, "mr_cntr_manual"));
}

/* ---- the initiator -------------------------------------------------------- */

struct mc_ini {
	struct cf_fix f;
	fi_addr_t peer;
	struct mc_keys k;
	struct fi_context2 ctx;
};

static void mc_done(struct mc_ini *m, const char *what)
{
	struct cf_comp c = cf_wait_ctx(&m->f, 0, &m->ctx);

	cf_assert(!c.err, "%s: error %d (%s)", what, c.err,
		  fi_strerror(c.err));
}

static struct fi_rma_iov mc_at(const struct mc_ini *m, int reg, uint64_t off,
			       size_t len)
{
	struct fi_rma_iov r = {m->k.raddr[reg] + off, len, m->k.key[reg]};

	return r;
}

static void mc_write(struct mc_ini *m, struct cf_mem *lm, size_t len,
		     int reg, uint64_t off)
{
	cf_post(&m->f, fi_write(m->f.ep[0].ep, lm->p, len, lm->desc, m->peer,
				m->k.raddr[reg] + off, m->k.key[reg],
				&m->ctx));
	mc_done(m, "fi_write");
}

static void mc_read(struct mc_ini *m, struct cf_mem *lm, size_t len, int reg,
		    uint64_t off)
{
	cf_post(&m->f, fi_read(m->f.ep[0].ep, lm->p, len, lm->desc, m->peer,
			       m->k.raddr[reg] + off, m->k.key[reg],
			       &m->ctx));
	mc_done(m, "fi_read");
}

/*
 * A write or read of two ranges (200 bytes from lm): one fi_writemsg /
 * fi_readmsg where the provider takes two remote ranges, else two calls.
 * Returns how many operations that was.
 */
static int mc_two(struct mc_ini *m, struct cf_mem *lm, bool rd,
		  struct fi_rma_iov a, struct fi_rma_iov b)
{
	struct iovec iov = {lm->p, 200};
	struct fi_rma_iov r[2] = {a, b};
	struct fi_msg_rma msg = {
	    .msg_iov = &iov,
	    .desc = &lm->desc,
	    .iov_count = 1,
	    .addr = m->peer,
	    .rma_iov = r,
	    .rma_iov_count = 2,
	    .context = &m->ctx,
	};

	if (m->f.info->tx_attr->rma_iov_limit < 2) {
		if (rd) {
			cf_post(&m->f, fi_read(m->f.ep[0].ep, lm->p, 100,
					       lm->desc, m->peer, a.addr, a.key,
					       &m->ctx));
			mc_done(m, "fi_read");
			cf_post(&m->f, fi_read(m->f.ep[0].ep, lm->p + 100, 100,
					       lm->desc, m->peer, b.addr, b.key,
					       &m->ctx));
			mc_done(m, "fi_read");
		} else {
			cf_post(&m->f, fi_write(m->f.ep[0].ep, lm->p, 100,
						lm->desc, m->peer, a.addr,
						a.key, &m->ctx));
			mc_done(m, "fi_write");
			cf_post(&m->f, fi_write(m->f.ep[0].ep, lm->p + 100,
						100, lm->desc, m->peer, b.addr,
						b.key, &m->ctx));
			mc_done(m, "fi_write");
		}
		return 2;
	}
	if (rd)
		cf_post(&m->f, fi_readmsg(m->f.ep[0].ep, &msg,
					  FI_COMPLETION | FI_DELIVERY_COMPLETE));
	else
		cf_post(&m->f, fi_writemsg(m->f.ep[0].ep, &msg,
					   FI_COMPLETION |
					       FI_DELIVERY_COMPLETE));
	mc_done(m, rd ? "fi_readmsg" : "fi_writemsg");
	return 1;
}

static void mc_atomic(struct mc_ini *m, struct cf_mem *am, uint64_t *v,
		      int word, enum fi_op op)
{
	cf_post(&m->f, fi_atomic(m->f.ep[0].ep, v, 1, am->desc, m->peer,
				 m->k.raddr[MC_HEAP] + H_ATOM + 8 * word,
				 m->k.key[MC_HEAP], FI_UINT64, op, &m->ctx));
	mc_done(m, "fi_atomic");
}

static uint64_t mc_fetch(struct mc_ini *m, struct cf_mem *am, uint64_t *v,
			 uint64_t *res, int word, enum fi_op op)
{
	*res = ~0ULL;
	cf_post(&m->f, fi_fetch_atomic(m->f.ep[0].ep, v, 1, am->desc, res,
				       am->desc, m->peer,
				       m->k.raddr[MC_HEAP] + H_ATOM + 8 * word,
				       m->k.key[MC_HEAP], FI_UINT64, op,
				       &m->ctx));
	mc_done(m, "fi_fetch_atomic");
	return *res;
}

static int mc_case(const char *prov, bool manual)
{
	struct cf_opts probe = mc_target_opts(manual);
	struct cf_opts o = {.caps = FI_RMA | FI_ATOMIC,
			    .nep = 1,
			    .no_insert = true,
			    .plain_peers = true, /* SOS's endpoint */
			    .tx_op_flags = FI_DELIVERY_COMPLETE};
	struct mc_plan plan = {0};
	struct mc_verdict v;
	struct cf_mem lm, rm, am;
	struct mc_ini m;
	struct peer_link l;
	struct fi_info *fi;
	uint64_t *a, *res;
	ssize_t pret;
	int ret, i, status, one;
	size_t k;
	char b = 'C';

	fi = cf_getinfo(prov, &probe, &ret);
	fi_freeinfo(fi);
	if (ret == -FI_ENODATA)
		cf_skip("fi_getinfo -61 for FI_RMA | FI_ATOMIC | FI_RMA_EVENT "
			"with mr_mode 0 and %s progress",
			manual ? "manual" : "automatic");
	cf_assert(!ret, "fi_getinfo: %d", ret);

	memset(&m, 0, sizeof(m));
	cf_open(&m.f, prov, &o);
	cf_spawn_peer(manual ? "mr_cntr_manual" : "mr_cntr", &l);
	cf_send_name(l.wfd, &m.f.ep[0]);
	m.peer = cf_recv_name(l.rfd, &m.f);
	cf_read_all(l.rfd, &m.k, sizeof(m.k), CF_WAIT_MS);
	cf_mem_reg(&m.f, 0, &lm, 1 << 20, FI_READ | FI_WRITE);
	cf_mem_reg(&m.f, 0, &rm, 1 << 20, FI_READ | FI_WRITE);
	cf_mem_reg(&m.f, 0, &am, 4096, FI_READ | FI_WRITE);
	a = (uint64_t *)am.p;
	res = a + 64;

	/*
	 * The counts.  An operation on ranges of two registrations counts
	 * in each; one on two ranges of a registration counts once, or
	 * twice when the provider takes one remote range per call
	 * (mc_two).  Fetching and compare atomics count as writes and as
	 * reads, FI_ATOMIC_READ as a read, a compare-swap that does not
	 * swap as a write too; the registration without a counter and
	 * the write that fails count nothing.
	 */
	one = m.f.info->tx_attr->rma_iov_limit >= 2 ? 1 : 2;
	plan.writes = MC_NRW + 1 /* injected */ + 2 /* data and heap */ +
		      (uint64_t)one /* two ranges of data */ +
		      12 /* FI_SUM */ + 3 /* fetching FI_SUM */ +
		      2 /* FI_CSWAP */ + 1 /* FI_ATOMIC_WRITE */ +
		      1 /* the flag */;
	plan.reads = MC_NRW + 2 /* data and heap */ + 1 /* data */ +
		     (uint64_t)one /* two ranges of data */ +
		     3 /* fetching FI_SUM */ + 2 /* FI_ATOMIC_READ */ +
		     2 /* FI_CSWAP */;
	cf_write_all(l.wfd, &plan, sizeof(plan));

	/* writes, each read back */
	for (k = 0; k < MC_NRW; k++) {
		cf_fill(lm.p, mc_rw[k].len, MC_SEED + (unsigned int)k);
		mc_write(&m, &lm, mc_rw[k].len, MC_HEAP, mc_rw[k].off);
		memset(rm.p, 0, mc_rw[k].len);
		mc_read(&m, &rm, mc_rw[k].len, MC_HEAP, mc_rw[k].off);
		cf_check_fill(rm.p, mc_rw[k].len, MC_SEED + (unsigned int)k,
			      "data read back");
	}
	a[0] = MC_INJECT;
	cf_post(&m.f, fi_inject_write(m.f.ep[0].ep, &a[0], 8, m.peer,
				      m.k.raddr[MC_DATA] + D_W5,
				      m.k.key[MC_DATA]));
	cf_fill(lm.p, 200, S6);
	mc_two(&m, &lm, false, mc_at(&m, MC_DATA, D_W6, 100),
	       mc_at(&m, MC_HEAP, H_W6, 100));
	cf_fill(lm.p, 200, S7);
	cf_assert(mc_two(&m, &lm, false, mc_at(&m, MC_DATA, D_W7A, 100),
			 mc_at(&m, MC_DATA, D_W7B, 100)) == one,
		  "two-range write");
	memset(rm.p, 0, 200);
	mc_two(&m, &rm, true, mc_at(&m, MC_DATA, D_W6, 100),
	       mc_at(&m, MC_HEAP, H_W6, 100));
	cf_check_fill(rm.p, 200, S6, "two ranges of data and heap read back");
	memset(rm.p, 0, 4096);
	mc_read(&m, &rm, 4096, MC_DATA, D_RD);
	cf_check_fill(rm.p, 4096, MC_RD_SEED, "data the target wrote");
	memset(rm.p, 0, 200);
	mc_two(&m, &rm, true, mc_at(&m, MC_DATA, D_W7A, 100),
	       mc_at(&m, MC_DATA, D_W7B, 100));
	cf_check_fill(rm.p, 200, S7, "two ranges of data read back");
	/* the registration without a counter */
	cf_fill(lm.p, 256, SP);
	mc_write(&m, &lm, 256, MC_PLAIN, P_W);
	memset(rm.p, 0, 256);
	mc_read(&m, &rm, 256, MC_PLAIN, P_W);
	cf_check_fill(rm.p, 256, SP, "plain read back");

	/* atomics: word 0 FI_SUM 10 + 2 injected; word 1 fetch-add 5
	 * three times, then FI_ATOMIC_READ twice; word 2 compare-swap
	 * 0 -> 42 (swaps), 0 -> 7 (does not); word 3 FI_ATOMIC_WRITE 99 */
	a[1] = 1;
	for (i = 0; i < 10; i++)
		mc_atomic(&m, &am, &a[1], 0, FI_SUM);
	for (i = 0; i < 2; i++)
		cf_post(&m.f, fi_inject_atomic(m.f.ep[0].ep, &a[1], 1, m.peer,
					       m.k.raddr[MC_HEAP] + H_ATOM,
					       m.k.key[MC_HEAP], FI_UINT64,
					       FI_SUM));
	a[2] = 5;
	for (i = 0; i < 3; i++)
		cf_expect(mc_fetch(&m, &am, &a[2], &res[0], 1, FI_SUM) ==
			      (uint64_t)(5 * i),
			  "fetch-add %d fetched %llu", i,
			  (unsigned long long)res[0]);
	for (i = 0; i < 2; i++)
		cf_expect(mc_fetch(&m, &am, NULL, &res[0], 1,
				   FI_ATOMIC_READ) == 15,
			  "FI_ATOMIC_READ fetched %llu",
			  (unsigned long long)res[0]);
	for (i = 0; i < 2; i++) {
		a[3] = i ? 7 : 42;
		a[4] = 0;
		res[1] = ~0ULL;
		cf_post(&m.f,
			fi_compare_atomic(
			    m.f.ep[0].ep, &a[3], 1, am.desc, &a[4], am.desc,
			    &res[1], am.desc, m.peer,
			    m.k.raddr[MC_HEAP] + H_ATOM + 16, m.k.key[MC_HEAP],
			    FI_UINT64, FI_CSWAP, &m.ctx));
		mc_done(&m, "fi_compare_atomic");
		cf_expect(res[1] == (uint64_t)(i ? 42 : 0),
			  "compare-swap %d fetched %llu", i,
			  (unsigned long long)res[1]);
	}
	a[5] = 99;
	mc_atomic(&m, &am, &a[5], 3, FI_ATOMIC_WRITE);

	/* one byte past the end of data: fails, counts nothing */
	cf_fill(lm.p, 64, MC_SEED + 20);
	cf_mark("fi_write past the end");
	do {
		pret = fi_write(m.f.ep[0].ep, lm.p, 64, lm.desc, m.peer,
				m.k.raddr[MC_DATA] + mc_len[MC_DATA] - 63,
				m.k.key[MC_DATA], &m.ctx);
		if (pret == -FI_EAGAIN)
			cf_progress(&m.f);
	} while (pret == -FI_EAGAIN);
	if (!pret) {
		struct cf_comp c = cf_wait_ctx(&m.f, 0, &m.ctx);

		cf_expect(c.err, "a write past the end completed");
	}

	/* last, the flag the target waits for */
	a[6] = MC_FLAG;
	cf_post(&m.f, fi_write(m.f.ep[0].ep, &a[6], 8, am.desc, m.peer,
			       m.k.raddr[MC_DATA] + D_FLAG, m.k.key[MC_DATA],
			       &m.ctx));
	mc_done(&m, "the flag's fi_write");

	cf_write_all(l.wfd, &b, 1);
	cf_read_all(l.rfd, &v, sizeof(v), 2 * CF_WAIT_MS);
	v.what[sizeof(v.what) - 1] = '\0';
	cf_expect(!v.what[0], "the target: %s", v.what);
	cf_expect(v.writes == plan.writes,
		  "the write counter of heap and data: %llu, want %llu",
		  (unsigned long long)v.writes,
		  (unsigned long long)plan.writes);
	cf_expect(v.reads == plan.reads,
		  "the read counter of heap and data: %llu, want %llu",
		  (unsigned long long)v.reads, (unsigned long long)plan.reads);
	cf_expect(!v.werr && !v.rerr, "error counts %llu and %llu",
		  (unsigned long long)v.werr, (unsigned long long)v.rerr);
	status = cf_reap(&l, CF_WAIT_MS);
	cf_assert(WIFEXITED(status) && !WEXITSTATUS(status),
		  "target ended with status 0x%x", status);
	cf_expect_none(&m.f, 0, 50);
	cf_mem_free(&lm);
	cf_mem_free(&rm);
	cf_mem_free(&am);
	cf_close(&m.f);
	close(l.wfd);
	close(l.rfd);
	return 0;
}

static int case_proc_mr_cntr(const char *prov)
{
	return mc_case(prov, false);
}

static int case_proc_mr_cntr_manual(const char *prov)
{
	return mc_case(prov, true);
}

/* ---- one process: binding and closing ------------------------------------ */

/*
 * fi_mr_bind of counters over the public API, in one process: where
 * FI_RMA_EVENT is offered, a registration counts writes into one counter
 * and reads into another (read with fi_cntr_wait alone, whatever the
 * progress model), a counter registrations count into does not close
 * (-FI_EBUSY, fi_cntr(3)), a registration closed while bound lets it go,
 * and a counter of another domain or flags other than FI_REMOTE_WRITE and
 * FI_REMOTE_READ are refused (codes noted).  Where FI_RMA_EVENT is not
 * offered, the bind fails with -FI_ENOSYS (fi_mr(3)).
 */
static int case_mr_cntr_bind(const char *prov)
{
	struct cf_opts probe = {.caps = FI_RMA | FI_RMA_EVENT};
	struct cf_opts o = {.caps = FI_RMA};
	struct fi_cntr_attr ca = {.events = FI_CNTR_EVENTS_COMP,
				  .wait_obj = FI_WAIT_UNSPEC};
	struct fid_cntr *wc, *rc, *oc;
	struct fid_domain *od;
	struct fi_context2 ctx[5];
	struct cf_mem lm, tm;
	struct fi_info *fi;
	struct cf_fix f;
	bool event;
	int ret, i;

	fi = cf_getinfo(prov, &probe, &ret);
	event = !ret;
	fi_freeinfo(fi);
	if (event)
		o.caps |= FI_RMA_EVENT;
	cf_open(&f, prov, &o);
	cf_mem_reg(&f, 0, &lm, 8192, FI_READ | FI_WRITE);
	cf_mem_reg(&f, 1, &tm, 8192, FI_REMOTE_READ | FI_REMOTE_WRITE);
	cf_ok(fi_cntr_open(f.domain, &ca, &wc, NULL));
	cf_ok(fi_cntr_open(f.domain, &ca, &rc, NULL));
	if (!event) {
		ret = fi_mr_bind(tm.mr, &wc->fid, FI_REMOTE_WRITE);
		cf_expect(ret == -FI_ENOSYS,
			  "no FI_RMA_EVENT: fi_mr_bind of a counter %d, want "
			  "-FI_ENOSYS",
			  ret);
		cf_note("no FI_RMA_EVENT: fi_mr_bind of a counter refused");
		goto close;
	}

	ret = fi_mr_bind(tm.mr, &wc->fid, FI_SEND);
	cf_expect(ret < 0, "fi_mr_bind with FI_SEND: %d", ret);
	cf_note("fi_mr_bind with FI_SEND: %d", ret);
	cf_ok(fi_domain(f.fabric, f.info, &od, NULL));
	cf_ok(fi_cntr_open(od, &ca, &oc, NULL));
	ret = fi_mr_bind(tm.mr, &oc->fid, FI_REMOTE_WRITE);
	cf_expect(ret < 0, "fi_mr_bind of another domain's counter: %d", ret);
	cf_note("fi_mr_bind of another domain's counter: %d", ret);
	cf_ok(fi_close(&oc->fid));
	cf_ok(fi_close(&od->fid));

	cf_ok(fi_mr_bind(tm.mr, &wc->fid, FI_REMOTE_WRITE));
	cf_ok(fi_mr_bind(tm.mr, &rc->fid, FI_REMOTE_READ));
	cf_fill(lm.p, 8192, 5);
	for (i = 0; i < 3; i++)
		cf_post(&f, fi_write(f.ep[0].ep, lm.p + i * 100, 100, lm.desc,
				     f.ep[1].addr, tm.raddr + i * 100, tm.key,
				     &ctx[i]));
	for (i = 3; i < 5; i++)
		cf_post(&f, fi_read(f.ep[0].ep, lm.p + 4096, 1000, lm.desc,
				    f.ep[1].addr, tm.raddr, tm.key, &ctx[i]));
	for (i = 0; i < 5; i++) {
		struct cf_comp c = cf_wait_ctx(&f, 0, &ctx[i]);

		cf_assert(!c.err, "RMA %d: error %d", i, c.err);
	}
	/* The counters alone: nothing else of the target is called. */
	ret = fi_cntr_wait(wc, 3, CF_WAIT_MS);
	cf_expect(!ret, "fi_cntr_wait(write counter, 3): %d, at %llu", ret,
		  (unsigned long long)fi_cntr_read(wc));
	ret = fi_cntr_wait(rc, 2, CF_WAIT_MS);
	cf_expect(!ret, "fi_cntr_wait(read counter, 2): %d, at %llu", ret,
		  (unsigned long long)fi_cntr_read(rc));
	cf_expect(fi_cntr_wait(wc, 4, 100) == -FI_ETIMEDOUT &&
		      fi_cntr_read(wc) == 3,
		  "write counter %llu, want 3",
		  (unsigned long long)fi_cntr_read(wc));
	cf_expect(fi_cntr_read(rc) == 2, "read counter %llu, want 2",
		  (unsigned long long)fi_cntr_read(rc));
	cf_check_fill(tm.p, 300, 5, "written data");

	ret = fi_close(&wc->fid);
	cf_expect(ret == -FI_EBUSY,
		  "fi_close of a counter a registration counts into: %d, "
		  "want -FI_EBUSY",
		  ret);
	/* The registration goes first and lets its counters go. */
	cf_mem_close(&tm);

close:
	cf_ok(fi_close(&wc->fid));
	cf_ok(fi_close(&rc->fid));
	cf_mem_free(&tm);
	cf_mem_free(&lm);
	cf_close(&f);
	return 0;
}

const struct cf_case cf_cases_mr_cntr[] = {
    {"mr_cntr_bind",
     "fi_mr_bind of counters: writes and reads counted, read with "
     "fi_cntr_wait alone; -FI_EBUSY closing a bound counter; another "
     "domain's counter and other flags refused; -FI_ENOSYS without "
     "FI_RMA_EVENT",
     case_mr_cntr_bind},
    {"proc_mr_cntr",
     "two processes, Sandia OpenSHMEM's sequence (FI_PROGRESS_AUTO): "
     "counters bound to two registrations count writes and atomics, reads "
     "and fetches, exactly, after the data; closed in its order",
     case_proc_mr_cntr},
    {"proc_mr_cntr_manual",
     "proc_mr_cntr under FI_PROGRESS_MANUAL: the target calls nothing but "
     "fi_cntr_read and fi_cntr_wait on the two counters",
     case_proc_mr_cntr_manual},
    {NULL},
};
