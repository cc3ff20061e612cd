/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Scalable endpoints (fi_scalable_ep, fi_endpoint(3)) as MPICH's multi-VCI
 * mode, Open MPI's mtl_ofi_enable_sep and Mercury's NA OFI set them up:
 * fi_scalable_ep, fi_scalable_ep_bind of an AV opened with rx_ctx_bits,
 * fi_enable, then per context fi_tx_context / fi_rx_context, a CQ bound
 * with FI_TRANSMIT (MPICH: FI_SEND | FI_SELECTIVE_COMPLETION) or FI_RECV,
 * fi_enable of each, and every transmit addressed with fi_rx_addr.  The
 * rest of the suite runs over contexts too (CF_CONTEXTS=sep, contexts.c).
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conformance.h"

#define SC_N 4	   /* contexts of each kind */
#define SC_BITS 2  /* rx_ctx_bits */

struct sc {
	struct fi_info *info;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_av *av;
	struct fid_ep *sep[2];
	struct fid_ep *tx[2][SC_N], *rx[2][SC_N];
	struct fid_cq *cq[2][SC_N]; /* one per context pair */
	fi_addr_t addr[2];
};

static void sc_open(struct sc *s, const char *prov, enum fi_threading thr)
{
	struct cf_opts o = {.caps = FI_TAGGED | FI_MSG | FI_NAMED_RX_CTX |
				    FI_SOURCE | FI_DIRECTED_RECV,
			    .threading = thr};
	struct fi_av_attr av_attr = {.count = 16, .rx_ctx_bits = SC_BITS};
	struct fi_cq_attr cq_attr = {.size = 4096,
				     .format = FI_CQ_FORMAT_TAGGED};
	/* MPICH's: selective completion, and FI_COMPLETION by default. */
	struct fi_tx_attr tx_attr = {.op_flags = FI_COMPLETION};
	int ret, e, k;

	memset(s, 0, sizeof(*s));
	s->info = cf_getinfo(prov, &o, &ret);
	if (ret == -FI_ENODATA)
		cf_skip("fi_getinfo -61 for FI_NAMED_RX_CTX");
	cf_assert(!ret, "fi_getinfo: %d", ret);
	if (s->info->domain_attr->max_ep_tx_ctx < SC_N ||
	    s->info->domain_attr->max_ep_rx_ctx < SC_N)
		cf_skip("max_ep_tx_ctx %zu, max_ep_rx_ctx %zu: no %d contexts",
			s->info->domain_attr->max_ep_tx_ctx,
			s->info->domain_attr->max_ep_rx_ctx, SC_N);
	/* What Mercury does: the counts set in the fi_info it got. */
	s->info->ep_attr->tx_ctx_cnt = SC_N;
	s->info->ep_attr->rx_ctx_cnt = SC_N;

	cf_ok(fi_fabric(s->info->fabric_attr, &s->fabric, NULL));
	cf_ok(fi_domain(s->fabric, s->info, &s->domain, NULL));
	cf_ok(fi_av_open(s->domain, &av_attr, &s->av, NULL));
	for (e = 0; e < 2; e++) {
		uint8_t name[CF_MAX_NAME];
		size_t len = sizeof(name);

		cf_ok(fi_scalable_ep(s->domain, s->info, &s->sep[e], NULL));
		cf_ok(fi_scalable_ep_bind(s->sep[e], &s->av->fid, 0));
		cf_ok(fi_enable(s->sep[e]));
		for (k = 0; k < SC_N; k++) {
			cf_ok(fi_tx_context(s->sep[e], k, &tx_attr,
					    &s->tx[e][k], NULL));
			cf_ok(fi_rx_context(s->sep[e], k, NULL, &s->rx[e][k],
					    NULL));
			cf_ok(fi_cq_open(s->domain, &cq_attr, &s->cq[e][k],
					 NULL));
			cf_ok(fi_ep_bind(s->tx[e][k], &s->cq[e][k]->fid,
					 FI_SEND | FI_SELECTIVE_COMPLETION));
			cf_ok(fi_ep_bind(s->rx[e][k], &s->cq[e][k]->fid,
					 FI_RECV));
			cf_ok(fi_enable(s->tx[e][k]));
			cf_ok(fi_enable(s->rx[e][k]));
		}
		cf_ok(fi_getname(&s->sep[e]->fid, name, &len));
		cf_assert(fi_av_insert(s->av, name, 1, &s->addr[e], 0, NULL) ==
				  1,
			  "fi_av_insert of scalable endpoint %d", e);
	}
}

/* Close endpoint e's contexts and the scalable endpoint (not its CQs). */
static void sc_close_ep(struct sc *s, int e)
{
	int k;

	if (!s->sep[e])
		return;
	for (k = 0; k < SC_N; k++) {
		cf_ok(fi_close(&s->tx[e][k]->fid));
		cf_ok(fi_close(&s->rx[e][k]->fid));
	}
	cf_ok(fi_close(&s->sep[e]->fid));
	s->sep[e] = NULL;
}

static void sc_close(struct sc *s)
{
	int e, k;

	for (e = 0; e < 2; e++) {
		sc_close_ep(s, e);
		for (k = 0; k < SC_N; k++)
			cf_ok(fi_close(&s->cq[e][k]->fid));
	}
	cf_ok(fi_close(&s->av->fid));
	cf_ok(fi_close(&s->domain->fid));
	cf_ok(fi_close(&s->fabric->fid));
	fi_freeinfo(s->info);
}

/* One completion from cq, within CF_WAIT_MS; err: its error, or 0. */
static int sc_wait(struct fid_cq *cq, struct fi_cq_tagged_entry *c,
		   fi_addr_t *src)
{
	uint64_t end = cf_now_ms() + CF_WAIT_MS;
	ssize_t n;

	for (;;) {
		n = fi_cq_readfrom(cq, c, 1, src);
		if (n == 1)
			return 0;
		if (n == -FI_EAVAIL) {
			struct fi_cq_err_entry err = {0};

			fi_cq_readerr(cq, &err, 0);
			c->op_context = err.op_context;
			return err.err ? err.err : -1;
		}
		cf_assert(n == -FI_EAGAIN, "fi_cq_readfrom: %zd", n);
		cf_assert(cf_now_ms() < end, "no completion within %d ms",
			  CF_WAIT_MS);
	}
}

/*
 * The calls each context refuses and the scalable endpoint's rules:
 * indices past the counts, a context opened twice, receives on a
 * transmit context and transmits on a receive context (-FI_ENOSYS),
 * fi_close of a scalable endpoint whose contexts are open (-FI_EBUSY), a
 * context's name is its endpoint's; then traffic: to each receive context
 * from each transmit context, reported from the sender's fi_addr; a
 * receive directed to that fi_addr takes a message from any of its
 * transmit contexts; a context 0 message reaches fi_rx_addr(.., 0).
 */
static int case_sep_api(const char *prov)
{
	struct fi_cq_tagged_entry c;
	struct fid_ep *extra;
	uint8_t n0[CF_MAX_NAME], n1[CF_MAX_NAME];
	size_t l0 = sizeof(n0), l1 = sizeof(n1);
	char sbuf[64], rbuf[64];
	struct fi_context2 sctx, rctx;
	fi_addr_t src;
	struct sc s;
	int t, r, ret;

	sc_open(&s, prov, FI_THREAD_SAFE);
	ret = fi_tx_context(s.sep[0], SC_N, NULL, &extra, NULL);
	cf_expect(ret == -FI_EINVAL, "fi_tx_context index %d of %d: %d", SC_N,
		  SC_N, ret);
	ret = fi_rx_context(s.sep[0], -1, NULL, &extra, NULL);
	cf_expect(ret == -FI_EINVAL, "fi_rx_context index -1: %d", ret);
	ret = fi_tx_context(s.sep[0], 1, NULL, &extra, NULL);
	cf_expect(ret == -FI_EBUSY, "fi_tx_context 1 again: %d", ret);
	ret = (int)fi_trecv(s.tx[0][1], rbuf, 8, NULL, FI_ADDR_UNSPEC, 0, 0,
			    &rctx);
	cf_expect(ret == -FI_ENOSYS, "fi_trecv on a transmit context: %d",
		  ret);
	ret = (int)fi_tsend(s.rx[0][1], sbuf, 8, NULL,
			    fi_rx_addr(s.addr[1], 1, SC_BITS), 0, &sctx);
	cf_expect(ret == -FI_ENOSYS, "fi_tsend on a receive context: %d",
		  ret);
	ret = fi_close(&s.sep[0]->fid);
	cf_expect(ret == -FI_EBUSY,
		  "fi_close of a scalable endpoint with open contexts: %d",
		  ret);
	cf_ok(fi_getname(&s.sep[0]->fid, n0, &l0));
	cf_ok(fi_getname(&s.tx[0][3]->fid, n1, &l1));
	cf_expect(l0 == l1 && !memcmp(n0, n1, l0),
		  "a transmit context's name differs from its endpoint's");

	/* Every transmit context of 0 to every receive context of 1. */
	for (t = 0; t < SC_N; t++) {
		for (r = 0; r < SC_N; r++) {
			uint64_t tag = 0x100 + (uint64_t)t * SC_N + r;

			cf_fill(sbuf, sizeof(sbuf), (unsigned int)tag);
			memset(rbuf, 0, sizeof(rbuf));
			/* Directed: to the endpoint, or (Mercury's answers)
			 * to one of its contexts, which names the endpoint
			 * whichever context sends. */
			cf_ok(fi_trecv(s.rx[1][r], rbuf, sizeof(rbuf), NULL,
				       (t & 1) ? s.addr[0] :
				       (r & 1) ? fi_rx_addr(s.addr[0],
							    (t + 1) % SC_N,
							    SC_BITS) :
						 FI_ADDR_UNSPEC,
				       tag, 0, &rctx));
			cf_ok(fi_tsend(s.tx[0][t], sbuf, sizeof(sbuf), NULL,
				       fi_rx_addr(s.addr[1], r, SC_BITS), tag,
				       &sctx));
			/* Drive the sender's pair while waiting. */
			src = FI_ADDR_NOTAVAIL;
			{
				uint64_t end = cf_now_ms() + CF_WAIT_MS;
				ssize_t n;

				while ((n = fi_cq_readfrom(s.cq[1][r], &c, 1,
							   &src)) ==
				       -FI_EAGAIN) {
					(void)fi_cq_read(s.cq[0][t], NULL, 0);
					cf_assert(cf_now_ms() < end,
						  "tx %d to rx %d: nothing "
						  "arrived",
						  t, r);
				}
				cf_assert(n == 1, "tx %d to rx %d: %zd", t, r,
					  n);
			}
			cf_expect(c.op_context == &rctx && c.tag == tag &&
					  c.len == sizeof(sbuf),
				  "tx %d to rx %d: wrong completion", t, r);
			cf_expect(src == s.addr[0],
				  "tx %d to rx %d: source %llu, want the "
				  "endpoint's %llu",
				  t, r, (unsigned long long)src,
				  (unsigned long long)s.addr[0]);
			cf_check_fill(rbuf, sizeof(rbuf), (unsigned int)tag,
				      "context payload");
			cf_assert(!sc_wait(s.cq[0][t], &c, NULL) &&
					  c.op_context == &sctx,
				  "tx %d: send completion", t);
		}
	}
	sc_close(&s);
	return 0;
}

/*
 * One thread per context pair, each with its own CQ, and nothing else
 * shared: thread k sends SC_MSGS tagged messages from endpoint 0's
 * transmit context k to endpoint 1's receive context k and the same
 * back, posting receives ahead, and checks each payload and its source.
 * Under FI_THREAD_ENDPOINT no two threads touch one context, which is
 * what that model asks of scalable endpoints; run under ThreadSanitizer
 * it shows that contexts share no state without a lock.
 */
#define SC_MSGS 2000
#define SC_LEN 256
#define SC_WIN 16

struct sc_thread {
	struct sc *s;
	int k;
	int errors;
	int done;
	char fail[160];
};

static void *sc_thread_main(void *arg)
{
	struct sc_thread *th = arg;
	struct sc *s = th->s;
	int k = th->k, e, i;
	static _Thread_local char rbuf[2][SC_WIN][SC_LEN];
	static _Thread_local struct fi_context2 rctx[2][SC_WIN];
	char sbuf[SC_LEN];
	struct fi_context2 sctx;
	uint64_t end = cf_now_ms() + 40000;

	for (e = 0; e < 2; e++)
		for (i = 0; i < SC_WIN; i++)
			if (fi_trecv(s->rx[e][k], rbuf[e][i], SC_LEN, NULL,
				     FI_ADDR_UNSPEC, (uint64_t)k, 0,
				     &rctx[e][i])) {
				snprintf(th->fail, sizeof(th->fail),
					 "context %d: fi_trecv failed", k);
				return NULL;
			}
	for (i = 0; i < SC_MSGS; i++) {
		e = i & 1; /* 0 sends to 1, then 1 to 0 */
		for (size_t b = 0; b < SC_LEN; b++)
			sbuf[b] = (char)(i * 7 + k + b);
		for (;;) {
			ssize_t ret = fi_tsend(s->tx[e][k], sbuf, SC_LEN, NULL,
					       fi_rx_addr(s->addr[!e], k,
							  SC_BITS),
					       (uint64_t)k, &sctx);

			if (!ret)
				break;
			if (ret != -FI_EAGAIN || cf_now_ms() > end) {
				snprintf(th->fail, sizeof(th->fail),
					 "context %d: fi_tsend %zd", k, ret);
				return NULL;
			}
			(void)fi_cq_read(s->cq[e][k], NULL, 0);
			(void)fi_cq_read(s->cq[!e][k], NULL, 0);
		}
		/* The receive at the other end, then the send's own. */
		for (int want = 2; want;) {
			struct fi_cq_tagged_entry c;
			fi_addr_t src = FI_ADDR_NOTAVAIL;
			int side;

			for (side = 0; side < 2 && want; side++) {
				ssize_t n = fi_cq_readfrom(s->cq[side][k], &c,
							   1, &src);

				if (n == -FI_EAGAIN)
					continue;
				if (n == -FI_EAVAIL) {
					struct fi_cq_err_entry err = {0};

					fi_cq_readerr(s->cq[side][k], &err, 0);
					snprintf(th->fail, sizeof(th->fail),
						 "context %d message %d: %s "
						 "completion error %d (%s)",
						 k, i,
						 err.op_context == &sctx ?
							 "send" :
							 "receive",
						 err.err, fi_strerror(err.err));
					return NULL;
				}
				if (n != 1) {
					snprintf(th->fail, sizeof(th->fail),
						 "context %d: fi_cq_readfrom "
						 "%zd",
						 k, n);
					return NULL;
				}
				want--;
				if (c.op_context == &sctx)
					continue;
				/* A receive at `side`: check and repost. */
				{
					int slot = (int)((struct fi_context2 *)
								 c.op_context -
							 rctx[side]);
					char *p = rbuf[side][slot];

					if (src != s->addr[!side] ||
					    c.len != SC_LEN ||
					    p[1] != (char)(i * 7 + k + 1) ||
					    p[SC_LEN - 1] !=
						    (char)(i * 7 + k + SC_LEN - 1))
						th->errors++;
					if (fi_trecv(s->rx[side][k], p, SC_LEN,
						     NULL, FI_ADDR_UNSPEC,
						     (uint64_t)k, 0,
						     &rctx[side][slot])) {
						snprintf(th->fail,
							 sizeof(th->fail),
							 "context %d: repost",
							 k);
						return NULL;
					}
				}
			}
			if (cf_now_ms() > end) {
				snprintf(th->fail, sizeof(th->fail),
					 "context %d: message %d stuck", k, i);
				return NULL;
			}
		}
		th->done++;
	}
	/* Cancel what is still posted; each ends once, cancelled. */
	for (e = 0; e < 2; e++)
		for (i = 0; i < SC_WIN; i++)
			(void)fi_cancel(&s->rx[e][k]->fid, &rctx[e][i]);
	return NULL;
}

static int sc_threads(const char *prov, enum fi_threading thr)
{
	struct sc_thread th[SC_N];
	pthread_t tid[SC_N];
	struct sc s;
	int k;

	sc_open(&s, prov, thr);
	for (k = 0; k < SC_N; k++) {
		th[k] = (struct sc_thread){.s = &s, .k = k};
		cf_assert(!pthread_create(&tid[k], NULL, sc_thread_main,
					  &th[k]),
			  "pthread_create");
	}
	for (k = 0; k < SC_N; k++)
		pthread_join(tid[k], NULL);
	for (k = 0; k < SC_N; k++) {
		cf_assert(!th[k].fail[0], "%s", th[k].fail);
		cf_assert(!th[k].errors, "context %d: %d bad messages", k,
			  th[k].errors);
		cf_assert(th[k].done == SC_MSGS, "context %d: %d of %d", k,
			  th[k].done, SC_MSGS);
	}
	/* The cancelled receives, each once. */
	for (k = 0; k < SC_N; k++) {
		for (int e = 0; e < 2; e++) {
			struct fi_cq_tagged_entry c;
			int n = 0;

			while (sc_wait(s.cq[e][k], &c, NULL) == FI_ECANCELED &&
			       ++n < SC_WIN)
				;
			cf_assert(n == SC_WIN,
				  "context %d side %d: %d of %d receives "
				  "cancelled",
				  k, e, n, SC_WIN);
		}
	}
	sc_close(&s);
	return 0;
}

static int case_sep_threads(const char *prov)
{
	return sc_threads(prov, FI_THREAD_ENDPOINT);
}

static int case_sep_threads_safe(const char *prov)
{
	return sc_threads(prov, FI_THREAD_SAFE);
}

/* One message from endpoint 0's transmit context t to endpoint 1's
 * receive context r, its data and source checked. */
static void sc_one(struct sc *s, int t, int r, uint64_t tag)
{
	struct fi_cq_tagged_entry c;
	struct fi_context2 sctx, rctx;
	char sbuf[64], rbuf[64];
	uint64_t end = cf_now_ms() + CF_WAIT_MS;
	fi_addr_t src = FI_ADDR_NOTAVAIL;
	ssize_t n;

	cf_fill(sbuf, sizeof(sbuf), (unsigned int)tag);
	cf_ok(fi_trecv(s->rx[1][r], rbuf, sizeof(rbuf), NULL, FI_ADDR_UNSPEC,
		       tag, 0, &rctx));
	cf_ok(fi_tsend(s->tx[0][t], sbuf, sizeof(sbuf), NULL,
		       fi_rx_addr(s->addr[1], r, SC_BITS), tag, &sctx));
	while ((n = fi_cq_readfrom(s->cq[1][r], &c, 1, &src)) == -FI_EAGAIN) {
		(void)fi_cq_read(s->cq[0][t], NULL, 0);
		cf_assert(cf_now_ms() < end, "tx %d to rx %d: nothing arrived",
			  t, r);
	}
	cf_assert(n == 1 && c.op_context == &rctx && src == s->addr[0],
		  "tx %d to rx %d: completion %zd, source %llu", t, r, n,
		  (unsigned long long)src);
	cf_check_fill(rbuf, sizeof(rbuf), (unsigned int)tag, "payload");
	cf_assert(!sc_wait(s->cq[0][t], &c, NULL) && c.op_context == &sctx,
		  "tx %d: send completion", t);
}

/*
 * Mercury's context destroy and create: a context pair's two contexts
 * closed, then their CQ (the scalable endpoint open all along): fi_close
 * of the CQ succeeds; contexts of that index opened again with a new CQ
 * carry traffic both ways as before.
 */
static int case_sep_context_cycle(const char *prov)
{
	struct fi_cq_attr cq_attr = {.size = 4096,
				     .format = FI_CQ_FORMAT_TAGGED};
	struct fi_tx_attr tx_attr = {.op_flags = FI_COMPLETION};
	struct sc s;
	int e, round;

	sc_open(&s, prov, FI_THREAD_SAFE);
	for (round = 0; round < 3; round++) {
		sc_one(&s, 1, 1, 0x500 + round);
		for (e = 0; e < 2; e++) {
			cf_ok(fi_close(&s.tx[e][1]->fid));
			cf_ok(fi_close(&s.rx[e][1]->fid));
			cf_ok(fi_close(&s.cq[e][1]->fid));
			cf_ok(fi_cq_open(s.domain, &cq_attr, &s.cq[e][1],
					 NULL));
			cf_ok(fi_tx_context(s.sep[e], 1, &tx_attr,
					    &s.tx[e][1], NULL));
			cf_ok(fi_rx_context(s.sep[e], 1, NULL, &s.rx[e][1],
					    NULL));
			cf_ok(fi_ep_bind(s.tx[e][1], &s.cq[e][1]->fid,
					 FI_TRANSMIT));
			cf_ok(fi_ep_bind(s.rx[e][1], &s.cq[e][1]->fid,
					 FI_RECV));
			cf_ok(fi_enable(s.tx[e][1]));
			cf_ok(fi_enable(s.rx[e][1]));
		}
	}
	sc_one(&s, 1, 1, 0x600);
	sc_one(&s, 2, 1, 0x601);
	sc_close(&s);
	return 0;
}

/*
 * A peer heard from on one context and gone before a receive is directed
 * to it: endpoint 0's transmit context 1 sends to endpoint 1's receive
 * context 2 (an undirected receive takes it), endpoint 0 closes, and
 * only then do context 2, and context 3 that never heard from it, post
 * receives directed to it.  Nothing of
 * endpoint 0 is left to look at (closed, or dead with what it left swept
 * away by another process on the host): the receives end in an error
 * within CF_WAIT_MS, never wait forever.
 */
static int case_sep_peer_gone(const char *prov)
{
	struct fi_cq_tagged_entry c;
	struct fi_context2 rctx[2];
	char rbuf[2][64];
	struct sc s;
	int i, r, err;

	sc_open(&s, prov, FI_THREAD_SAFE);
	sc_one(&s, 1, 2, 0x800);
	sc_close_ep(&s, 0);
	/* Context 2 heard from it; context 3 never did. */
	for (r = 2; r < 4; r++) {
		for (i = 0; i < 2; i++)
			cf_ok(fi_trecv(s.rx[1][r], rbuf[i], sizeof(rbuf[i]),
				       NULL, s.addr[0], 0x801, 0, &rctx[i]));
		for (i = 0; i < 2; i++) {
			err = sc_wait(s.cq[1][r], &c, NULL);
			cf_assert(err > 0,
				  "receive context %d: a receive directed to "
				  "a closed peer: completion %d, want an error",
				  r, err);
			cf_assert(c.op_context == &rctx[0] ||
					  c.op_context == &rctx[1],
				  "an error for a context never posted");
		}
	}
	sc_close(&s);
	return 0;
}

/*
 * A transmit to a context the scalable endpoint does not have (index 3
 * of 2, within the AV's rx_ctx_bits): it ends in an error, not a hang,
 * and neither side's contexts suffer: the same transmit context then
 * reaches context 1.
 */
static int case_sep_no_context(const char *prov)
{
	struct cf_opts o = {.caps = FI_TAGGED | FI_NAMED_RX_CTX | FI_SOURCE,
			    .threading = FI_THREAD_SAFE};
	struct fi_av_attr av_attr = {.count = 16, .rx_ctx_bits = 2};
	struct fi_cq_attr cq_attr = {.size = 1024,
				     .format = FI_CQ_FORMAT_TAGGED};
	struct fid_ep *sep[2], *tx[2][2], *rx[2][2];
	struct fid_cq *cq[2][2];
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_av *av;
	struct fi_info *info;
	struct fi_cq_tagged_entry c;
	struct fi_context2 sctx, rctx;
	char sbuf[64], rbuf[64];
	fi_addr_t addr[2], src = FI_ADDR_NOTAVAIL;
	uint64_t end;
	ssize_t n;
	int e, k, ret, err;

	info = cf_getinfo(prov, &o, &ret);
	if (ret == -FI_ENODATA)
		cf_skip("fi_getinfo -61 for FI_NAMED_RX_CTX");
	cf_assert(!ret, "fi_getinfo: %d", ret);
	if (info->domain_attr->max_ep_tx_ctx < 2 ||
	    info->domain_attr->max_ep_rx_ctx < 2)
		cf_skip("max_ep_tx_ctx %zu", info->domain_attr->max_ep_tx_ctx);
	/* shm cannot tell a context past the count from a peer whose
	 * region is not there yet, which a sender waits for. */
	if (!strcmp(prov, "shm")) {
		fi_freeinfo(info);
		cf_skip("shm waits for a context's region to appear");
	}
	info->ep_attr->tx_ctx_cnt = info->ep_attr->rx_ctx_cnt = 2;
	cf_ok(fi_fabric(info->fabric_attr, &fabric, NULL));
	cf_ok(fi_domain(fabric, info, &domain, NULL));
	cf_ok(fi_av_open(domain, &av_attr, &av, NULL));
	for (e = 0; e < 2; e++) {
		uint8_t name[CF_MAX_NAME];
		size_t len = sizeof(name);

		cf_ok(fi_scalable_ep(domain, info, &sep[e], NULL));
		cf_ok(fi_scalable_ep_bind(sep[e], &av->fid, 0));
		cf_ok(fi_enable(sep[e]));
		for (k = 0; k < 2; k++) {
			cf_ok(fi_tx_context(sep[e], k, NULL, &tx[e][k], NULL));
			cf_ok(fi_rx_context(sep[e], k, NULL, &rx[e][k], NULL));
			cf_ok(fi_cq_open(domain, &cq_attr, &cq[e][k], NULL));
			cf_ok(fi_ep_bind(tx[e][k], &cq[e][k]->fid, FI_TRANSMIT));
			cf_ok(fi_ep_bind(rx[e][k], &cq[e][k]->fid, FI_RECV));
			cf_ok(fi_enable(tx[e][k]));
			cf_ok(fi_enable(rx[e][k]));
		}
		cf_ok(fi_getname(&sep[e]->fid, name, &len));
		cf_assert(fi_av_insert(av, name, 1, &addr[e], 0, NULL) == 1,
			  "fi_av_insert");
	}

	/* To context 3 of 2: an error, while both sides make progress
	 * (delivery complete: a send that only left would complete). */
	cf_fill(sbuf, sizeof(sbuf), 0x31);
	{
		struct iovec iov = {sbuf, sizeof(sbuf)};
		struct fi_msg_tagged m = {
			.msg_iov = &iov, .iov_count = 1,
			.addr = fi_rx_addr(addr[1], 3, 2), .tag = 0x900,
			.context = &sctx};

		cf_ok(fi_tsendmsg(tx[0][1], &m,
				  FI_COMPLETION | FI_DELIVERY_COMPLETE));
	}
	end = cf_now_ms() + CF_WAIT_MS;
	for (;;) {
		for (k = 0; k < 2; k++)
			(void)fi_cq_read(cq[1][k], NULL, 0);
		n = fi_cq_read(cq[0][1], &c, 1);
		if (n != -FI_EAGAIN)
			break;
		cf_assert(cf_now_ms() < end,
			  "a send to context 3 of 2: no completion within "
			  "%d ms", CF_WAIT_MS);
	}
	cf_assert(n == -FI_EAVAIL,
		  "a send to context 3 of 2: fi_cq_read %zd, want an error", n);
	{
		struct fi_cq_err_entry ee = {0};

		cf_assert(fi_cq_readerr(cq[0][1], &ee, 0) == 1,
			  "fi_cq_readerr");
		err = ee.err;
		cf_assert(err > 0 && ee.op_context == &sctx,
			  "the error: %d, context %p", err, ee.op_context);
		cf_note("a send to context 3 of 2: %s", fi_strerror(err));
	}

	/* The same transmit context still reaches context 1. */
	cf_fill(sbuf, sizeof(sbuf), 0x32);
	cf_ok(fi_trecv(rx[1][1], rbuf, sizeof(rbuf), NULL, FI_ADDR_UNSPEC,
		       0x901, 0, &rctx));
	cf_ok(fi_tsend(tx[0][1], sbuf, sizeof(sbuf), NULL,
		       fi_rx_addr(addr[1], 1, 2), 0x901, &sctx));
	end = cf_now_ms() + CF_WAIT_MS;
	while ((n = fi_cq_readfrom(cq[1][1], &c, 1, &src)) == -FI_EAGAIN) {
		(void)fi_cq_read(cq[0][1], NULL, 0);
		cf_assert(cf_now_ms() < end, "to context 1: nothing arrived");
	}
	cf_assert(n == 1 && c.op_context == &rctx && src == addr[0],
		  "to context 1: completion %zd, source %llu", n,
		  (unsigned long long)src);
	cf_check_fill(rbuf, sizeof(rbuf), 0x32, "payload");
	cf_assert(!sc_wait(cq[0][1], &c, NULL) && c.op_context == &sctx,
		  "to context 1: send completion");

	for (e = 0; e < 2; e++) {
		for (k = 0; k < 2; k++) {
			cf_ok(fi_close(&tx[e][k]->fid));
			cf_ok(fi_close(&rx[e][k]->fid));
		}
		cf_ok(fi_close(&sep[e]->fid));
		for (k = 0; k < 2; k++)
			cf_ok(fi_close(&cq[e][k]->fid));
	}
	cf_ok(fi_close(&av->fid));
	cf_ok(fi_close(&domain->fid));
	cf_ok(fi_close(&fabric->fid));
	fi_freeinfo(info);
	return 0;
}

/*
 * Open MPI 5's ofi MTL with mtl_ofi_enable_sep: rx_ctx_bits as few as the
 * contexts need (4 contexts: 3 bits, its loop), fi_enable of the scalable
 * endpoint before any context, then contexts made one at a time as
 * communicators come (context 0 carries traffic before context 2
 * exists), each with one CQ bound FI_TRANSMIT | FI_SELECTIVE_COMPLETION
 * and FI_RECV | FI_SELECTIVE_COMPLETION; tagged calls with FI_COMPLETION.
 * The peer is a plain endpoint's fixture partner: a second scalable
 * endpoint made the same way.
 */
static int case_sep_ompi(const char *prov)
{
	struct cf_opts o = {.caps = FI_TAGGED | FI_NAMED_RX_CTX | FI_SOURCE,
			    .threading = FI_THREAD_SAFE};
	struct fi_av_attr av_attr = {.count = 16};
	struct fi_cq_attr cq_attr = {.size = 1024,
				     .format = FI_CQ_FORMAT_TAGGED};
	struct fid_ep *sep[2], *tx[2][4] = {{0}}, *rx[2][4] = {{0}};
	struct fid_cq *cq[2][4] = {{0}};
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_av *av;
	struct fi_info *info;
	fi_addr_t addr[2];
	int bits = 0, e, k, ret, round;
	const int used[] = {0, 2};

	while (4 >> ++bits)
		;
	info = cf_getinfo(prov, &o, &ret);
	if (ret == -FI_ENODATA)
		cf_skip("fi_getinfo -61 for FI_NAMED_RX_CTX");
	cf_assert(!ret, "fi_getinfo: %d", ret);
	if (info->domain_attr->max_ep_tx_ctx < 4)
		cf_skip("max_ep_tx_ctx %zu", info->domain_attr->max_ep_tx_ctx);
	info->ep_attr->tx_ctx_cnt = info->ep_attr->rx_ctx_cnt = 4;
	av_attr.rx_ctx_bits = bits;
	cf_ok(fi_fabric(info->fabric_attr, &fabric, NULL));
	cf_ok(fi_domain(fabric, info, &domain, NULL));
	cf_ok(fi_av_open(domain, &av_attr, &av, NULL));
	for (e = 0; e < 2; e++) {
		uint8_t name[CF_MAX_NAME];
		size_t len = sizeof(name);

		cf_ok(fi_scalable_ep(domain, info, &sep[e], NULL));
		cf_ok(fi_scalable_ep_bind(sep[e], &av->fid, 0));
		cf_ok(fi_enable(sep[e]));
		cf_ok(fi_getname(&sep[e]->fid, name, &len));
		cf_assert(fi_av_insert(av, name, 1, &addr[e], 0, NULL) == 1,
			  "fi_av_insert");
	}
	for (round = 0; round < 2; round++) {
		k = used[round];
		/* A communicator arrives: its contexts, on both sides. */
		for (e = 0; e < 2; e++) {
			cf_ok(fi_tx_context(sep[e], k, NULL, &tx[e][k], NULL));
			cf_ok(fi_rx_context(sep[e], k, NULL, &rx[e][k], NULL));
			cf_ok(fi_cq_open(domain, &cq_attr, &cq[e][k], NULL));
			cf_ok(fi_ep_bind(tx[e][k], &cq[e][k]->fid,
					 FI_TRANSMIT | FI_SELECTIVE_COMPLETION));
			cf_ok(fi_ep_bind(rx[e][k], &cq[e][k]->fid,
					 FI_RECV | FI_SELECTIVE_COMPLETION));
			cf_ok(fi_enable(tx[e][k]));
			cf_ok(fi_enable(rx[e][k]));
		}
		/* Every context made so far, both ways. */
		for (int j = 0; j <= round; j++) {
			int c = used[j];

			for (e = 0; e < 2; e++) {
				uint64_t tag = 0x700 + (uint64_t)(c * 2 + e);
				char sbuf[32], rbuf[32];
				struct fi_context2 sctx, rctx;
				struct iovec siov = {sbuf, sizeof(sbuf)};
				struct iovec riov = {rbuf, sizeof(rbuf)};
				struct fi_msg_tagged rm = {
					.msg_iov = &riov, .iov_count = 1,
					.addr = FI_ADDR_UNSPEC, .tag = tag,
					.context = &rctx};
				struct fi_msg_tagged sm = {
					.msg_iov = &siov, .iov_count = 1,
					.addr = fi_rx_addr(addr[!e], c, bits),
					.tag = tag, .context = &sctx};
				struct fi_cq_tagged_entry ce;
				fi_addr_t src = FI_ADDR_NOTAVAIL;
				uint64_t end = cf_now_ms() + CF_WAIT_MS;
				ssize_t n;

				cf_fill(sbuf, sizeof(sbuf), (unsigned int)tag);
				cf_ok(fi_trecvmsg(rx[!e][c], &rm, FI_COMPLETION));
				cf_ok(fi_tsendmsg(tx[e][c], &sm, FI_COMPLETION));
				while ((n = fi_cq_readfrom(cq[!e][c], &ce, 1,
							   &src)) == -FI_EAGAIN) {
					(void)fi_cq_read(cq[e][c], NULL, 0);
					cf_assert(cf_now_ms() < end,
						  "context %d, %d to %d: "
						  "nothing arrived",
						  c, e, !e);
				}
				cf_assert(n == 1 && ce.op_context == &rctx &&
						  src == addr[e],
					  "context %d: completion %zd, source "
					  "%llu",
					  c, n, (unsigned long long)src);
				cf_check_fill(rbuf, sizeof(rbuf),
					      (unsigned int)tag, "payload");
				cf_assert(!sc_wait(cq[e][c], &ce, NULL) &&
						  ce.op_context == &sctx,
					  "context %d: send completion", c);
			}
		}
	}
	for (e = 0; e < 2; e++) {
		for (k = 0; k < 4; k++) {
			if (tx[e][k])
				cf_ok(fi_close(&tx[e][k]->fid));
			if (rx[e][k])
				cf_ok(fi_close(&rx[e][k]->fid));
			if (cq[e][k])
				cf_ok(fi_close(&cq[e][k]->fid));
		}
		cf_ok(fi_close(&sep[e]->fid));
	}
	cf_ok(fi_close(&av->fid));
	cf_ok(fi_close(&domain->fid));
	cf_ok(fi_close(&fabric->fid));
	fi_freeinfo(info);
	return 0;
}

/*
 * Shared transmit contexts (fi_stx_context) as Sandia OpenSHMEM's pool
 * uses them: opened with a NULL attr, several endpoints opened with
 * tx_ctx_cnt FI_SHARED_CONTEXT bound to one before fi_enable.  Refused:
 * fi_enable before the bind, a second bind, a bind to an endpoint not
 * opened for one or with capabilities the context lacks, fi_close of a
 * context endpoints use.  Each endpoint's sends complete on its own CQ,
 * once, and reach the receiver under that endpoint's address.  The
 * domain closes before the shared context, as MPICH closes them.
 */
#define STX_EPS 3

static int case_stx_api(const char *prov)
{
	struct cf_opts o = {.caps = FI_TAGGED | FI_MSG | FI_SOURCE,
			    .threading = FI_THREAD_SAFE};
	struct fi_av_attr av_attr = {.count = 16};
	struct fi_cq_attr cq_attr = {.size = 1024,
				     .format = FI_CQ_FORMAT_TAGGED};
	struct fi_tx_attr narrow = {.caps = FI_MSG | FI_SEND};
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_av *av;
	struct fid_stx *stx, *stx2;
	struct fid_ep *ep[STX_EPS + 1];
	struct fid_cq *cq[STX_EPS + 1];
	fi_addr_t addr[STX_EPS + 1];
	struct fi_context2 sctx[STX_EPS], rctx[STX_EPS];
	char sbuf[STX_EPS][64], rbuf[STX_EPS][64];
	int sent[STX_EPS] = {0}, got[STX_EPS] = {0};
	struct fi_info *info, *pinfo;
	uint64_t end;
	int i, ret, left;
	const int rcv = STX_EPS; /* a plain endpoint */

	info = cf_getinfo(prov, &o, &ret);
	if (ret == -FI_ENODATA)
		cf_skip("fi_getinfo -61");
	cf_assert(!ret, "fi_getinfo: %d", ret);
	if (!info->domain_attr->max_ep_stx_ctx) {
		fi_freeinfo(info);
		cf_skip("max_ep_stx_ctx 0: no shared transmit contexts");
	}
	pinfo = fi_dupinfo(info);
	cf_assert(pinfo, "fi_dupinfo");
	pinfo->ep_attr->tx_ctx_cnt = 1;
	info->ep_attr->tx_ctx_cnt = FI_SHARED_CONTEXT;
	cf_ok(fi_fabric(info->fabric_attr, &fabric, NULL));
	cf_ok(fi_domain(fabric, info, &domain, NULL));
	cf_ok(fi_av_open(domain, &av_attr, &av, NULL));
	cf_ok(fi_stx_context(domain, NULL, &stx, NULL));
	for (i = 0; i <= STX_EPS; i++) {
		cf_ok(fi_endpoint(domain, i == rcv ? pinfo : info, &ep[i],
				  NULL));
		cf_ok(fi_cq_open(domain, &cq_attr, &cq[i], NULL));
		cf_ok(fi_ep_bind(ep[i], &cq[i]->fid, FI_TRANSMIT | FI_RECV));
		cf_ok(fi_ep_bind(ep[i], &av->fid, 0));
	}
	ret = fi_enable(ep[0]);
	cf_expect(ret == -FI_EOPBADSTATE,
		  "fi_enable of an FI_SHARED_CONTEXT endpoint before a shared "
		  "transmit context is bound: %d",
		  ret);
	ret = fi_ep_bind(ep[rcv], &stx->fid, 0);
	cf_expect(ret == -FI_EINVAL,
		  "a shared transmit context bound to an endpoint not opened "
		  "for one: %d",
		  ret);
	cf_ok(fi_stx_context(domain, &narrow, &stx2, NULL));
	ret = fi_ep_bind(ep[0], &stx2->fid, 0);
	cf_expect(ret == -FI_EINVAL,
		  "an FI_TAGGED endpoint bound to an FI_MSG shared transmit "
		  "context: %d",
		  ret);
	cf_ok(fi_close(&stx2->fid));
	for (i = 0; i < STX_EPS; i++)
		cf_ok(fi_ep_bind(ep[i], &stx->fid, 0));
	ret = fi_ep_bind(ep[0], &stx->fid, 0);
	cf_expect(ret == -FI_EALREADY, "a second shared transmit context: %d",
		  ret);
	for (i = 0; i <= STX_EPS; i++) {
		uint8_t name[CF_MAX_NAME];
		size_t len = sizeof(name);

		cf_ok(fi_enable(ep[i]));
		cf_ok(fi_getname(&ep[i]->fid, name, &len));
		cf_assert(fi_av_insert(av, name, 1, &addr[i], 0, NULL) == 1,
			  "fi_av_insert %d", i);
	}
	ret = fi_close(&stx->fid);
	cf_expect(ret == -FI_EBUSY,
		  "fi_close of a shared transmit context endpoints use: %d",
		  ret);

	for (i = 0; i < STX_EPS; i++) {
		cf_fill(sbuf[i], sizeof(sbuf[i]), 0x900 + (unsigned int)i);
		cf_ok(fi_trecv(ep[rcv], rbuf[i], sizeof(rbuf[i]), NULL,
			       FI_ADDR_UNSPEC, 0x900 + (uint64_t)i, 0,
			       &rctx[i]));
	}
	for (i = 0; i < STX_EPS; i++)
		cf_ok(fi_tsend(ep[i], sbuf[i], sizeof(sbuf[i]), NULL,
			       addr[rcv], 0x900 + (uint64_t)i, &sctx[i]));
	end = cf_now_ms() + CF_WAIT_MS;
	for (left = 2 * STX_EPS; left;) {
		struct fi_cq_tagged_entry c;
		fi_addr_t src = FI_ADDR_NOTAVAIL;

		cf_assert(cf_now_ms() < end, "%d completion(s) missing", left);
		for (i = 0; i <= STX_EPS; i++) {
			ssize_t n = fi_cq_readfrom(cq[i], &c, 1, &src);
			int k;

			if (n == -FI_EAGAIN)
				continue;
			cf_assert(n == 1, "endpoint %d: fi_cq_readfrom %zd", i,
				  n);
			left--;
			if (i < STX_EPS) {
				cf_assert(c.op_context == &sctx[i] &&
						  !sent[i]++,
					  "endpoint %d: a completion not of "
					  "its one send",
					  i);
				continue;
			}
			k = (int)(c.tag - 0x900);
			cf_assert(k >= 0 && k < STX_EPS &&
					  c.op_context == &rctx[k] &&
					  !got[k]++,
				  "receiver: completion tag 0x%llx",
				  (unsigned long long)c.tag);
			cf_assert(src == addr[k],
				  "message of endpoint %d from fi_addr %llu",
				  k, (unsigned long long)src);
			cf_check_fill(rbuf[k], sizeof(rbuf[k]),
				      0x900 + (unsigned int)k, "payload");
		}
	}
	/* MPICH's order at MPI_Finalize: the domain, then the shared
	 * transmit context. */
	for (i = 0; i <= STX_EPS; i++)
		cf_ok(fi_close(&ep[i]->fid));
	for (i = 0; i <= STX_EPS; i++)
		cf_ok(fi_close(&cq[i]->fid));
	cf_ok(fi_close(&av->fid));
	cf_ok(fi_close(&domain->fid));
	cf_ok(fi_close(&stx->fid));
	cf_ok(fi_close(&fabric->fid));
	fi_freeinfo(pinfo);
	fi_freeinfo(info);
	return 0;
}

const struct cf_case cf_cases_ctx[] = {
    {"sep_api",
     "fi_scalable_ep with 4 transmit and 4 receive contexts: refused "
     "indices and sides, fi_close with open contexts, the name; every "
     "transmit context to every receive context by fi_rx_addr, FI_SOURCE "
     "the endpoint's fi_addr, directed receives by it and by fi_rx_addr "
     "of another of its contexts",
     case_sep_api},
    {"sep_context_cycle",
     "Mercury's context destroy: a pair's two contexts closed, then "
     "their CQ (fi_close succeeds), contexts of that index opened again "
     "with a new CQ, three times, traffic checked each time",
     case_sep_context_cycle},
    {"sep_ompi",
     "Open MPI 5's ofi MTL with scalable endpoints: 3 rx_ctx_bits for 4 "
     "contexts, fi_enable first, contexts made as communicators come, "
     "selective completion on both sides, CQs closed before the "
     "scalable endpoint",
     case_sep_ompi},
    {"sep_peer_gone",
     "a peer heard from on one context closes before receives are "
     "directed to it: they end in an error, never wait forever",
     case_sep_peer_gone},
    {"sep_no_context",
     "a transmit to a context index the scalable endpoint does not have "
     "(3 of 2) ends in an error within the wait, not a hang; the same "
     "transmit context then reaches context 1",
     case_sep_no_context},
    {"stx_api",
     "fi_stx_context as Sandia OpenSHMEM's pool uses it: three endpoints "
     "on one, refused binds, enable and close, each send completing "
     "once on its own endpoint's CQ under its own address",
     case_stx_api},
    {"sep_threads",
     "FI_THREAD_ENDPOINT: a thread per context pair, each with its own "
     "CQ, 2000 verified messages each way, cancelled receives once each",
     case_sep_threads},
    {"sep_threads_safe",
     "the same under FI_THREAD_SAFE",
     case_sep_threads_safe},
    {NULL, NULL, NULL},
};
