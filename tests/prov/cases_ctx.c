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
#include <unistd.h>
#include <errno.h>
#include <netinet/in.h>
#include <sys/socket.h>
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

	if (cf_dgram_env())
		cf_skip("datagram endpoints: nothing tells of a peer gone");
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

	if (cf_dgram_env())
		cf_skip("datagram endpoints: a datagram to no context is lost");
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
	/* Whatever CF_CONTEXTS says, receives are the endpoints' own. */
	if (info->ep_attr->rx_ctx_cnt == FI_SHARED_CONTEXT)
		info->ep_attr->rx_ctx_cnt = 1;
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

/*
 * Shared receive contexts (fi_srx_context, fi_endpoint(3)) in upstream
 * fabtests' order (functional/shared_ctx.c): fi_srx_context with the
 * fi_info's rx_attr, endpoints opened with rx_ctx_cnt FI_SHARED_CONTEXT
 * bound to it before fi_enable, receives posted to the context.  Refused:
 * fi_enable before the bind, a second bind, a bind to an endpoint not
 * opened for one or of another domain, fi_close of a context endpoints
 * use.  Two endpoints (R0, R1) on one context receive from two plain
 * senders: every message, expected or unexpected (come before its
 * receive, through either endpoint, one of rendezvous size), lands in
 * the context's receives and completes once, on the CQ of the endpoint
 * it came by, with its length, tag, data and sender.
 */
#define SX_R0 0
#define SX_R1 1
#define SX_S0 2
#define SX_S1 3
#define SX_EPS 4
#define SX_BIG (1u << 20) /* past every eager limit */
#define SX_MAXC 64

struct sx_comp {
	int ep; /* whose CQ */
	struct fi_cq_tagged_entry c;
	fi_addr_t src;
	int err;
};

struct sx {
	struct fid_cq *cq[SX_EPS];
	struct sx_comp got[SX_MAXC];
	int n;
};

static void sx_poll(struct sx *x)
{
	int i;

	for (i = 0; i < SX_EPS; i++) {
		struct fi_cq_tagged_entry c;
		fi_addr_t src = FI_ADDR_NOTAVAIL;
		ssize_t n = fi_cq_readfrom(x->cq[i], &c, 1, &src);

		if (n == -FI_EAGAIN)
			continue;
		cf_assert(x->n < SX_MAXC, "too many completions");
		if (n == -FI_EAVAIL) {
			struct fi_cq_err_entry e = {0};

			cf_assert(fi_cq_readerr(x->cq[i], &e, 0) == 1,
				  "fi_cq_readerr");
			x->got[x->n].ep = i;
			x->got[x->n].c.op_context = e.op_context;
			x->got[x->n].c.flags = e.flags;
			x->got[x->n].c.tag = e.tag;
			x->got[x->n].err = e.err;
			x->got[x->n++].src = FI_ADDR_NOTAVAIL;
			continue;
		}
		cf_assert(n == 1, "endpoint %d: fi_cq_readfrom %zd", i, n);
		x->got[x->n].ep = i;
		x->got[x->n].c = c;
		x->got[x->n].err = 0;
		x->got[x->n++].src = src;
	}
}

/* The completion of ctx (taken off the list), from whichever CQ. */
static struct sx_comp sx_wait(struct sx *x, void *ctx)
{
	uint64_t end = cf_now_ms() + CF_WAIT_MS;
	struct sx_comp r;
	int k;

	for (;;) {
		for (k = 0; k < x->n; k++) {
			if (x->got[k].c.op_context != ctx)
				continue;
			r = x->got[k];
			x->got[k] = x->got[--x->n];
			for (; k < x->n; k++)
				cf_assert(x->got[k].c.op_context != ctx,
					  "a context completed twice");
			return r;
		}
		cf_assert(cf_now_ms() < end, "no completion within %d ms",
			  CF_WAIT_MS);
		sx_poll(x);
	}
}

/* A transmit, tried again on -FI_EAGAIN with progress in between. */
#define sx_post(x, call)                                                       \
	do {                                                                   \
		uint64_t sx_end_ = cf_now_ms() + CF_WAIT_MS;                   \
		ssize_t sx_p_;                                                 \
		cf_mark(#call);                                                \
		while ((sx_p_ = (call)) == -FI_EAGAIN) {                       \
			sx_poll(x);                                            \
			cf_assert(cf_now_ms() < sx_end_, "%s: -FI_EAGAIN",     \
				  #call);                                      \
		}                                                              \
		cf_assert(sx_p_ == 0, "%s: %zd", #call, sx_p_);                \
	} while (0)

/* Progress every endpoint for ms: messages reach their receivers. */
static void sx_spin(struct sx *x, int ms)
{
	uint64_t end = cf_now_ms() + (uint64_t)ms;

	while (cf_now_ms() < end)
		sx_poll(x);
}

/* A receive completion of ctx on endpoint ep: len, tag, data, sender. */
static void sx_check(struct sx *x, void *ctx, int ep, size_t len,
		     uint64_t tag, uint64_t data, fi_addr_t src,
		     const char *what)
{
	struct sx_comp c = sx_wait(x, ctx);

	cf_assert(!c.err, "%s: error %d", what, c.err);
	cf_expect(c.ep == ep, "%s: on endpoint %d's CQ, not %d's", what, c.ep,
		  ep);
	cf_expect(c.c.len == len, "%s: len %zu, not %zu", what, c.c.len, len);
	cf_expect(c.c.flags & FI_RECV, "%s: flags %s", what,
		  cf_flags_str(c.c.flags));
	if (c.c.flags & FI_TAGGED)
		cf_expect(c.c.tag == tag, "%s: tag 0x%llx", what,
			  (unsigned long long)c.c.tag);
	if (data) {
		cf_expect((c.c.flags & FI_REMOTE_CQ_DATA) && c.c.data == data,
			  "%s: data 0x%llx, flags %s", what,
			  (unsigned long long)c.c.data,
			  cf_flags_str(c.c.flags));
	}
	cf_expect(c.src == src, "%s: from fi_addr %llu, not %llu", what,
		  (unsigned long long)c.src, (unsigned long long)src);
}

static void sx_sent(struct sx *x, void *ctx, int ep, const char *what)
{
	struct sx_comp c = sx_wait(x, ctx);

	cf_assert(!c.err, "%s: error %d", what, c.err);
	cf_expect(c.ep == ep && (c.c.flags & FI_SEND),
		  "%s: on endpoint %d with flags %s", what, c.ep,
		  cf_flags_str(c.c.flags));
}

static int case_srx_api(const char *prov)
{
	struct cf_opts o = {.caps = FI_TAGGED | FI_MSG | FI_SOURCE};
	struct fi_av_attr av_attr = {.count = 16};
	struct fi_cq_attr cq_attr = {.size = 1024,
				     .format = FI_CQ_FORMAT_TAGGED};
	struct fid_fabric *fabric;
	struct fid_domain *domain, *domain2;
	struct fid_av *av;
	struct fid_ep *srx, *srx2, *ep[SX_EPS];
	fi_addr_t addr[SX_EPS];
	struct fi_context2 ctx[16], sctx[16];
	static char sbuf[8][64], rbuf[8][64];
	char *big, *bigr;
	struct fi_info *info, *pinfo;
	struct sx x = {0};
	size_t v, vlen;
	int i, ret;

	info = cf_getinfo(prov, &o, &ret);
	if (ret == -FI_ENODATA)
		cf_skip("fi_getinfo -61");
	cf_assert(!ret, "fi_getinfo: %d", ret);
	if (!info->domain_attr->max_ep_srx_ctx) {
		fi_freeinfo(info);
		cf_skip("max_ep_srx_ctx 0: no shared receive contexts");
	}
	/* Whatever CF_CONTEXTS says, transmits are the endpoints' own. */
	info->ep_attr->tx_ctx_cnt = 1;
	pinfo = fi_dupinfo(info);
	cf_assert(pinfo, "fi_dupinfo");
	pinfo->ep_attr->rx_ctx_cnt = 1;
	/* Hints asking for a shared receive context are met (fabtests). */
	{
		struct fi_info *h = fi_dupinfo(info), *got = NULL;

		cf_assert(h, "fi_dupinfo");
		h->ep_attr->rx_ctx_cnt = FI_SHARED_CONTEXT;
		ret = fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, h, &got);
		cf_expect(!ret && got &&
				  got->ep_attr->rx_ctx_cnt == FI_SHARED_CONTEXT,
			  "fi_getinfo, hints with rx_ctx_cnt "
			  "FI_SHARED_CONTEXT: %d, rx_ctx_cnt %zu",
			  ret, got ? got->ep_attr->rx_ctx_cnt : 0);
		fi_freeinfo(got);
		fi_freeinfo(h);
	}
	info->ep_attr->rx_ctx_cnt = FI_SHARED_CONTEXT;
	big = malloc(SX_BIG);
	bigr = malloc(SX_BIG);
	cf_assert(big && bigr, "malloc");
	cf_ok(fi_fabric(info->fabric_attr, &fabric, NULL));
	cf_ok(fi_domain(fabric, info, &domain, NULL));
	cf_ok(fi_av_open(domain, &av_attr, &av, NULL));
	cf_ok(fi_srx_context(domain, info->rx_attr, &srx, NULL));
	for (i = 0; i < SX_EPS; i++) {
		cf_ok(fi_endpoint(domain, i <= SX_R1 ? info : pinfo, &ep[i],
				  NULL));
		cf_ok(fi_cq_open(domain, &cq_attr, &x.cq[i], NULL));
		cf_ok(fi_ep_bind(ep[i], &x.cq[i]->fid, FI_TRANSMIT | FI_RECV));
		cf_ok(fi_ep_bind(ep[i], &av->fid, 0));
	}
	ret = fi_enable(ep[SX_R0]);
	cf_expect(ret == -FI_EOPBADSTATE,
		  "fi_enable of an FI_SHARED_CONTEXT endpoint before a shared "
		  "receive context is bound: %d",
		  ret);
	ret = fi_ep_bind(ep[SX_S0], &srx->fid, 0);
	cf_expect(ret == -FI_EINVAL,
		  "a shared receive context bound to an endpoint not opened "
		  "for one: %d",
		  ret);
	cf_ok(fi_domain(fabric, info, &domain2, NULL));
	cf_ok(fi_srx_context(domain2, info->rx_attr, &srx2, NULL));
	ret = fi_ep_bind(ep[SX_R0], &srx2->fid, 0);
	cf_expect(ret == -FI_EINVAL,
		  "another domain's shared receive context: %d", ret);
	cf_ok(fi_close(&srx2->fid));
	cf_ok(fi_close(&domain2->fid));
	cf_ok(fi_ep_bind(ep[SX_R0], &srx->fid, 0));
	cf_ok(fi_ep_bind(ep[SX_R1], &srx->fid, 0));
	ret = fi_ep_bind(ep[SX_R0], &srx->fid, 0);
	cf_expect(ret == -FI_EALREADY, "a second shared receive context: %d",
		  ret);
	for (i = 0; i < SX_EPS; i++) {
		uint8_t name[CF_MAX_NAME];
		size_t len = sizeof(name);

		cf_ok(fi_enable(ep[i]));
		cf_ok(fi_getname(&ep[i]->fid, name, &len));
		cf_assert(fi_av_insert(av, name, 1, &addr[i], 0, NULL) == 1,
			  "fi_av_insert %d", i);
	}
	ret = fi_close(&srx->fid);
	cf_expect(ret == -FI_EBUSY,
		  "fi_close of a shared receive context endpoints use: %d",
		  ret);
	v = 128;
	cf_ok(fi_setopt(&srx->fid, FI_OPT_ENDPOINT, FI_OPT_MIN_MULTI_RECV, &v,
			sizeof(v)));
	v = 0;
	vlen = sizeof(v);
	cf_ok(fi_getopt(&srx->fid, FI_OPT_ENDPOINT, FI_OPT_MIN_MULTI_RECV, &v,
			&vlen));
	cf_expect(v == 128, "FI_OPT_MIN_MULTI_RECV of the context: %zu", v);

	/* Expected: receives posted first, to the context. */
	for (i = 0; i < 8; i++)
		cf_fill(sbuf[i], sizeof(sbuf[i]), 0x500 + (unsigned int)i);
	cf_ok(fi_trecv(srx, rbuf[0], 64, NULL, FI_ADDR_UNSPEC, 0x10, 0,
		       &ctx[0]));
	cf_ok(fi_trecv(srx, rbuf[1], 64, NULL, FI_ADDR_UNSPEC, 0x11, 0,
		       &ctx[1]));
	cf_ok(fi_recv(srx, rbuf[2], 64, NULL, FI_ADDR_UNSPEC, &ctx[2]));
	sx_post(&x, fi_tsend(ep[SX_S0], sbuf[0], 64, NULL, addr[SX_R0], 0x10,
			     &sctx[0]));
	sx_post(&x, fi_tsend(ep[SX_S1], sbuf[1], 48, NULL, addr[SX_R1], 0x11,
			     &sctx[1]));
	sx_post(&x, fi_senddata(ep[SX_S0], sbuf[2], 40, NULL, 0xdada,
				addr[SX_R1], &sctx[2]));
	sx_check(&x, &ctx[0], SX_R0, 64, 0x10, 0, addr[SX_S0],
		 "tagged, S0 to R0");
	sx_check(&x, &ctx[1], SX_R1, 48, 0x11, 0, addr[SX_S1],
		 "tagged, S1 to R1");
	sx_check(&x, &ctx[2], SX_R1, 40, 0, 0xdada, addr[SX_S0],
		 "untagged with data, S0 to R1");
	cf_check_fill(rbuf[0], 64, 0x500, "tagged to R0");
	cf_check_fill(rbuf[1], 48, 0x501, "tagged to R1");
	cf_check_fill(rbuf[2], 40, 0x502, "untagged to R1");
	for (i = 0; i < 3; i++)
		sx_sent(&x, &sctx[i], i == 1 ? SX_S1 : SX_S0, "send");

	/* Unexpected: sent first, through both endpoints, one of them of
	 * rendezvous size; then received by receives posted to the
	 * context (and one posted to R1, which posts to it). */
	cf_fill(big, SX_BIG, 0x777);
	sx_post(&x, fi_tsend(ep[SX_S0], sbuf[3], 64, NULL, addr[SX_R0], 0x20,
			     &sctx[3]));
	sx_post(&x, fi_tsend(ep[SX_S1], sbuf[4], 64, NULL, addr[SX_R1], 0x21,
			     &sctx[4]));
	sx_post(&x, fi_tsend(ep[SX_S1], big, SX_BIG, NULL, addr[SX_R1], 0x22,
			     &sctx[5]));
	sx_post(&x, fi_send(ep[SX_S1], sbuf[6], 32, NULL, addr[SX_R0],
			    &sctx[6]));
	sx_spin(&x, 300);
	/* (Sends may complete: tcp writes a large one out.) */
	for (i = 0; i < x.n; i++)
		cf_expect(!(x.got[i].c.flags & FI_RECV),
			  "a receive completion before any receive");
	cf_ok(fi_trecv(srx, bigr, SX_BIG, NULL, FI_ADDR_UNSPEC, 0x22, 0,
		       &ctx[5]));
	cf_ok(fi_trecv(srx, rbuf[4], 64, NULL, FI_ADDR_UNSPEC, 0x21, 0,
		       &ctx[4]));
	cf_ok(fi_trecv(ep[SX_R1], rbuf[3], 64, NULL, FI_ADDR_UNSPEC, 0x20, 0,
		       &ctx[3]));
	cf_ok(fi_recv(srx, rbuf[6], 64, NULL, FI_ADDR_UNSPEC, &ctx[6]));
	sx_check(&x, &ctx[5], SX_R1, SX_BIG, 0x22, 0, addr[SX_S1],
		 "unexpected rendezvous, S1 to R1");
	sx_check(&x, &ctx[4], SX_R1, 64, 0x21, 0, addr[SX_S1],
		 "unexpected tagged, S1 to R1");
	sx_check(&x, &ctx[3], SX_R0, 64, 0x20, 0, addr[SX_S0],
		 "unexpected tagged, S0 to R0, received on R1");
	sx_check(&x, &ctx[6], SX_R0, 32, 0, 0, addr[SX_S1],
		 "unexpected untagged, S1 to R0");
	cf_check_fill(bigr, SX_BIG, 0x777, "rendezvous payload");
	cf_check_fill(rbuf[4], 64, 0x504, "unexpected to R1");
	cf_check_fill(rbuf[3], 64, 0x503, "unexpected to R0");
	cf_check_fill(rbuf[6], 32, 0x506, "unexpected untagged to R0");
	for (i = 3; i <= 6; i++)
		sx_sent(&x, &sctx[i], i == 3 ? SX_S0 : SX_S1, "send");

	/* A receive canceled on the context is reported once, on an
	 * endpoint bound to it. */
	cf_ok(fi_trecv(srx, rbuf[7], 64, NULL, FI_ADDR_UNSPEC, 0x99, 0,
		       &ctx[7]));
	cf_ok(fi_cancel(&srx->fid, &ctx[7]));
	{
		struct sx_comp c = sx_wait(&x, &ctx[7]);

		cf_expect(c.err == FI_ECANCELED &&
				  (c.ep == SX_R0 || c.ep == SX_R1),
			  "canceled: error %d on endpoint %d", c.err, c.ep);
	}
	sx_spin(&x, 100);
	cf_expect(x.n == 0, "%d completion(s) more than sent", x.n);

	/* fi_endpoint(3): connectionless endpoints on one context share
	 * one AV. */
	{
		struct fid_av *av2;
		struct fid_ep *e2;

		cf_ok(fi_av_open(domain, &av_attr, &av2, NULL));
		cf_ok(fi_endpoint(domain, info, &e2, NULL));
		cf_ok(fi_ep_bind(e2, &x.cq[SX_R0]->fid, FI_TRANSMIT | FI_RECV));
		cf_ok(fi_ep_bind(e2, &av2->fid, 0));
		cf_ok(fi_ep_bind(e2, &srx->fid, 0));
		ret = fi_enable(e2);
		cf_expect(ret == -FI_EINVAL,
			  "fi_enable of an endpoint on the context with "
			  "another AV: %d",
			  ret);
		cf_ok(fi_close(&e2->fid));
		cf_ok(fi_close(&av2->fid));
	}

	/* An endpoint that closes takes what came by it and waits
	 * unexpected (a rendezvous one too) along: the context's next
	 * receive does not get it, and nothing touches the endpoint. */
	sx_post(&x, fi_tsend(ep[SX_S0], big, SX_BIG, NULL, addr[SX_R0], 0x30,
			     &sctx[7]));
	sx_spin(&x, 300);
	cf_ok(fi_close(&ep[SX_R0]->fid));
	ep[SX_R0] = NULL;
	cf_ok(fi_trecv(srx, bigr, SX_BIG, NULL, FI_ADDR_UNSPEC, 0x30, 0,
		       &ctx[8]));
	sx_spin(&x, 300);
	for (i = 0; i < x.n; i++)
		cf_expect(x.got[i].c.op_context != &ctx[8],
			  "a receive took a message of a closed endpoint");
	cf_ok(fi_cancel(&srx->fid, &ctx[8]));
	{
		struct sx_comp c = sx_wait(&x, &ctx[8]);

		cf_expect(c.err == FI_ECANCELED && c.ep == SX_R1,
			  "canceled after R0 closed: error %d on endpoint %d",
			  c.err, c.ep);
	}

	for (i = 0; i < SX_EPS; i++)
		if (ep[i])
			cf_ok(fi_close(&ep[i]->fid));
	cf_ok(fi_close(&srx->fid));
	for (i = 0; i < SX_EPS; i++)
		cf_ok(fi_close(&x.cq[i]->fid));
	cf_ok(fi_close(&av->fid));
	cf_ok(fi_close(&domain->fid));
	cf_ok(fi_close(&fabric->fid));
	free(big);
	free(bigr);
	fi_freeinfo(pinfo);
	fi_freeinfo(info);
	return 0;
}

/*
 * Two threads under FI_THREAD_SAFE, each driving its own receiving
 * endpoint on one shared receive context (and a sender of its own):
 * thread t posts to the context the receives for the messages that
 * arrive at the other thread's endpoint, so every match crosses between
 * the threads' endpoints, one lock serving both.  Every message is
 * received once, checked, and reported on the endpoint it came by.
 */
#define SXT_N 2000
#define SXT_WIN 64

struct sxt {
	struct fid_ep *srx, *r[2], *s[2];
	struct fid_cq *rcq[2], *scq[2];
	fi_addr_t raddr[2];
	struct fi_context2 rctx[2][SXT_N], sctx[2][SXT_N];
	char rbuf[2][SXT_N][64];
	char sbuf[2][64];
	const char *_Atomic fail;
};

static struct sxt *sxt;

/* Completions of thread t's endpoints; false (and sxt->fail) if wrong. */
static bool sxt_poll(int t, int *rcvd, int *sent)
{
	struct fi_cq_tagged_entry c;
	ssize_t n;

	n = fi_cq_read(sxt->rcq[t], &c, 1);
	if (n == 1) {
		/* A message that came by endpoint t: from sender t, into a
		 * receive the other thread posted for it. */
		int i = (int)(c.tag & 0xffff);

		if ((c.tag >> 16) != (uint64_t)t || i >= SXT_N ||
		    c.op_context != &sxt->rctx[t][i] || c.len != 64) {
			sxt->fail = "a receive completion of the wrong "
				    "message or endpoint";
			return false;
		}
		(*rcvd)++;
	} else if (n != -FI_EAGAIN) {
		sxt->fail = "an error on a receiving CQ";
		return false;
	}
	n = fi_cq_read(sxt->scq[t], &c, 1);
	if (n == 1) {
		(*sent)++;
	} else if (n != -FI_EAGAIN) {
		sxt->fail = "an error on a sending CQ";
		return false;
	}
	return true;
}

static void *sxt_main(void *arg)
{
	int t = (int)(intptr_t)arg, o = 1 - t;
	int rcvd = 0, sent = 0, i;
	uint64_t end = cf_now_ms() + 4 * CF_WAIT_MS;
	ssize_t ret;

	for (i = 0; i < SXT_N; i++) {
		/* The receive for the other thread's message i. */
		do {
			ret = fi_trecv(sxt->srx, sxt->rbuf[o][i], 64, NULL,
				       FI_ADDR_UNSPEC,
				       ((uint64_t)o << 16) | (uint64_t)i, 0,
				       &sxt->rctx[o][i]);
			if (ret == -FI_EAGAIN && !sxt_poll(t, &rcvd, &sent))
				return NULL;
		} while (ret == -FI_EAGAIN);
		if (ret) {
			sxt->fail = "fi_trecv on the shared context";
			return NULL;
		}
		do {
			ret = fi_tsend(sxt->s[t], sxt->sbuf[t], 64, NULL,
				       sxt->raddr[t],
				       ((uint64_t)t << 16) | (uint64_t)i,
				       &sxt->sctx[t][i]);
			if (ret == -FI_EAGAIN && !sxt_poll(t, &rcvd, &sent))
				return NULL;
		} while (ret == -FI_EAGAIN);
		if (ret) {
			sxt->fail = "fi_tsend";
			return NULL;
		}
		while (rcvd + SXT_WIN < i || sent + SXT_WIN < i) {
			if (!sxt_poll(t, &rcvd, &sent))
				return NULL;
			if (cf_now_ms() > end) {
				sxt->fail = "messages missing";
				return NULL;
			}
		}
	}
	while (rcvd < SXT_N || sent < SXT_N) {
		if (!sxt_poll(t, &rcvd, &sent))
			return NULL;
		if (cf_now_ms() > end) {
			sxt->fail = "messages missing at the end";
			return NULL;
		}
	}
	return NULL;
}

static int case_srx_threads(const char *prov)
{
	struct cf_opts o = {.caps = FI_TAGGED | FI_MSG,
			    .threading = FI_THREAD_SAFE};
	struct fi_av_attr av_attr = {.count = 16};
	struct fi_cq_attr cq_attr = {.size = 4096,
				     .format = FI_CQ_FORMAT_TAGGED};
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_av *av;
	struct fi_info *info, *pinfo;
	pthread_t th[2];
	int t, i, ret;

	info = cf_getinfo(prov, &o, &ret);
	if (ret == -FI_ENODATA)
		cf_skip("fi_getinfo -61");
	cf_assert(!ret, "fi_getinfo: %d", ret);
	if (!info->domain_attr->max_ep_srx_ctx) {
		fi_freeinfo(info);
		cf_skip("max_ep_srx_ctx 0: no shared receive contexts");
	}
	info->ep_attr->tx_ctx_cnt = 1;
	pinfo = fi_dupinfo(info);
	cf_assert(pinfo, "fi_dupinfo");
	pinfo->ep_attr->rx_ctx_cnt = 1;
	info->ep_attr->rx_ctx_cnt = FI_SHARED_CONTEXT;
	sxt = calloc(1, sizeof(*sxt));
	cf_assert(sxt, "calloc");
	cf_ok(fi_fabric(info->fabric_attr, &fabric, NULL));
	cf_ok(fi_domain(fabric, info, &domain, NULL));
	cf_ok(fi_av_open(domain, &av_attr, &av, NULL));
	cf_ok(fi_srx_context(domain, info->rx_attr, &sxt->srx, NULL));
	for (t = 0; t < 2; t++) {
		uint8_t name[CF_MAX_NAME];
		size_t len = sizeof(name);

		cf_ok(fi_endpoint(domain, info, &sxt->r[t], NULL));
		cf_ok(fi_endpoint(domain, pinfo, &sxt->s[t], NULL));
		cf_ok(fi_cq_open(domain, &cq_attr, &sxt->rcq[t], NULL));
		cf_ok(fi_cq_open(domain, &cq_attr, &sxt->scq[t], NULL));
		cf_ok(fi_ep_bind(sxt->r[t], &sxt->srx->fid, 0));
		cf_ok(fi_ep_bind(sxt->r[t], &sxt->rcq[t]->fid,
				 FI_TRANSMIT | FI_RECV));
		cf_ok(fi_ep_bind(sxt->s[t], &sxt->scq[t]->fid,
				 FI_TRANSMIT | FI_RECV));
		cf_ok(fi_ep_bind(sxt->r[t], &av->fid, 0));
		cf_ok(fi_ep_bind(sxt->s[t], &av->fid, 0));
		cf_ok(fi_enable(sxt->r[t]));
		cf_ok(fi_enable(sxt->s[t]));
		cf_ok(fi_getname(&sxt->r[t]->fid, name, &len));
		cf_assert(fi_av_insert(av, name, 1, &sxt->raddr[t], 0, NULL) ==
				  1,
			  "fi_av_insert");
		cf_fill(sxt->sbuf[t], 64, 0x40 + (unsigned int)t);
	}
	for (t = 0; t < 2; t++)
		cf_assert(!pthread_create(&th[t], NULL, sxt_main,
					  (void *)(intptr_t)t),
			  "pthread_create");
	for (t = 0; t < 2; t++)
		pthread_join(th[t], NULL);
	cf_assert(!sxt->fail, "%s", sxt->fail);
	for (t = 0; t < 2; t++)
		for (i = 0; i < SXT_N; i++)
			cf_check_fill(sxt->rbuf[t][i], 64,
				      0x40 + (unsigned int)t, "payload");
	for (t = 0; t < 2; t++) {
		cf_ok(fi_close(&sxt->r[t]->fid));
		cf_ok(fi_close(&sxt->s[t]->fid));
	}
	cf_ok(fi_close(&sxt->srx->fid));
	for (t = 0; t < 2; t++) {
		cf_ok(fi_close(&sxt->rcq[t]->fid));
		cf_ok(fi_close(&sxt->scq[t]->fid));
	}
	cf_ok(fi_close(&av->fid));
	cf_ok(fi_close(&domain->fid));
	cf_ok(fi_close(&fabric->fid));
	free(sxt);
	fi_freeinfo(pinfo);
	fi_freeinfo(info);
	return 0;
}

/*
 * Stray datagrams at a scalable endpoint's address (an attacker's, a
 * confused program's): empty, shorter than any header, weft's magic with
 * a context byte past the count and with every byte value at the offsets
 * a header's context would be, random bytes.  Over a provider whose
 * address is a socket address.  Nothing is reported for them, and every
 * transmit context still reaches every receive context, each message
 * once and intact.
 */
static int case_sep_stray(const char *prov)
{
	struct fi_cq_tagged_entry c;
	uint8_t name[CF_MAX_NAME], pkt[256];
	size_t len = sizeof(name);
	struct sc s;
	uint64_t end;
	int fd, t, r, i;
	ssize_t n;

	sc_open(&s, prov, FI_THREAD_SAFE);
	cf_ok(fi_getname(&s.sep[1]->fid, name, &len));
	if (!cf_is_sockaddr(s.info->addr_format) ||
	    len < sizeof(struct sockaddr_in)) {
		sc_close(&s);
		cf_skip("the address is not a socket address");
	}
	fd = socket(((struct sockaddr *)name)->sa_family, SOCK_DGRAM, 0);
	cf_assert(fd >= 0, "socket: %s", strerror(errno));
	srand(0x5ca1ab1e);
	for (i = 0; i < 300; i++) {
		size_t plen;

		if (i == 0) {
			plen = 0;
		} else if (i < 8) {
			plen = (size_t)i;
			memset(pkt, 0xff, plen);
		} else if (i < 8 + 256) {
			/* weft's magic and version, then every context byte */
			memset(pkt, 0, sizeof(pkt));
			pkt[0] = 0x46;
			pkt[1] = 0x57;
			pkt[2] = 1;
			pkt[3] = (uint8_t)(1 + (i % 9));
			pkt[6] = (uint8_t)(i - 8);
			pkt[7] = (uint8_t)(i * 7);
			plen = 64 + (size_t)(i % 5) * 16;
		} else {
			plen = 1 + (size_t)rand() % sizeof(pkt);
			for (size_t k = 0; k < plen; k++)
				pkt[k] = (uint8_t)rand();
		}
		(void)sendto(fd, pkt, plen, 0, (struct sockaddr *)name,
			     (socklen_t)len);
	}
	close(fd);
	/* The target's progress takes them (a datagram endpoint's socket
	 * buffer full of them would drop the next one, as a network may):
	 * nothing is reported. */
	for (end = cf_now_ms() + 300; cf_now_ms() < end;)
		for (r = 0; r < SC_N; r++) {
			n = fi_cq_read(s.cq[1][r], &c, 1);
			cf_assert(n == -FI_EAGAIN,
				  "receive context %d: %zd for a stray "
				  "datagram", r, n);
		}
	for (t = 0; t < SC_N; t++)
		for (r = 0; r < SC_N; r++)
			sc_one(&s, t, r, 0xa00 + (uint64_t)(t * SC_N + r));
	/* Nothing else on any queue of the target. */
	for (r = 0; r < SC_N; r++) {
		n = fi_cq_read(s.cq[1][r], &c, 1);
		cf_assert(n == -FI_EAGAIN,
			  "receive context %d: %zd after the stray datagrams",
			  r, n);
	}
	sc_close(&s);
	return 0;
}

/*
 * A transmit to receive context 1 of a plain endpoint (a client that takes
 * its peer for a scalable endpoint): an error within the wait, not a
 * retransmission for minutes or a message in context 0; the same
 * endpoint then reaches the peer as it is.
 */
static int case_ctx_of_plain_ep(const char *prov)
{
	struct cf_opts o = {.caps = FI_TAGGED | FI_NAMED_RX_CTX,
			    .threading = FI_THREAD_SAFE};
	struct fi_av_attr av_attr = {.count = 16, .rx_ctx_bits = 2};
	struct fi_cq_attr cq_attr = {.size = 64, .format = FI_CQ_FORMAT_TAGGED};
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_av *av;
	struct fid_ep *ep[2];
	struct fid_cq *cq[2];
	struct fi_info *info;
	struct fi_cq_tagged_entry c;
	struct fi_cq_err_entry ee = {0};
	struct fi_context2 sctx, rctx;
	char sbuf[64], rbuf[64];
	fi_addr_t addr[2];
	uint64_t end;
	ssize_t n;
	int e, ret;

	if (cf_dgram_env())
		cf_skip("datagram endpoints: a datagram to no context is lost");
	info = cf_getinfo(prov, &o, &ret);
	if (ret == -FI_ENODATA)
		cf_skip("fi_getinfo -61 for FI_NAMED_RX_CTX");
	cf_assert(!ret, "fi_getinfo: %d", ret);
	if (!strcmp(prov, "shm")) {
		fi_freeinfo(info);
		cf_skip("shm waits for a context's region to appear");
	}
	if (!strcmp(prov, "verbs")) {
		fi_freeinfo(info);
		cf_skip("not yet run over verbs' connection requests");
	}
	info->ep_attr->tx_ctx_cnt = info->ep_attr->rx_ctx_cnt = 1;
	cf_ok(fi_fabric(info->fabric_attr, &fabric, NULL));
	cf_ok(fi_domain(fabric, info, &domain, NULL));
	cf_ok(fi_av_open(domain, &av_attr, &av, NULL));
	for (e = 0; e < 2; e++) {
		uint8_t name[CF_MAX_NAME];
		size_t len = sizeof(name);

		cf_ok(fi_endpoint(domain, info, &ep[e], NULL));
		cf_ok(fi_cq_open(domain, &cq_attr, &cq[e], NULL));
		cf_ok(fi_ep_bind(ep[e], &av->fid, 0));
		cf_ok(fi_ep_bind(ep[e], &cq[e]->fid, FI_TRANSMIT | FI_RECV));
		cf_ok(fi_enable(ep[e]));
		cf_ok(fi_getname(&ep[e]->fid, name, &len));
		cf_assert(fi_av_insert(av, name, 1, &addr[e], 0, NULL) == 1,
			  "fi_av_insert");
	}
	cf_ok(fi_trecv(ep[1], rbuf, sizeof(rbuf), NULL, FI_ADDR_UNSPEC, 0x951,
		       0, &rctx));
	cf_fill(sbuf, sizeof(sbuf), 0x41);
	{
		struct iovec iov = {sbuf, sizeof(sbuf)};
		struct fi_msg_tagged m = {
			.msg_iov = &iov, .iov_count = 1,
			.addr = fi_rx_addr(addr[1], 1, 2), .tag = 0x950,
			.context = &sctx};

		cf_ok(fi_tsendmsg(ep[0], &m,
				  FI_COMPLETION | FI_DELIVERY_COMPLETE));
	}
	end = cf_now_ms() + CF_WAIT_MS;
	while ((n = fi_cq_read(cq[0], &c, 1)) == -FI_EAGAIN) {
		n = fi_cq_read(cq[1], &c, 1);
		cf_assert(n == -FI_EAGAIN,
			  "the plain endpoint reported %zd for a message to its "
			  "context 1", n);
		cf_assert(cf_now_ms() < end,
			  "a send to context 1 of a plain endpoint: no "
			  "completion within %d ms", CF_WAIT_MS);
	}
	cf_assert(n == -FI_EAVAIL,
		  "a send to context 1 of a plain endpoint: %zd, want an "
		  "error", n);
	cf_assert(fi_cq_readerr(cq[0], &ee, 0) == 1 && ee.err > 0 &&
			  ee.op_context == &sctx,
		  "the error: %d", ee.err);
	cf_note("a send to context 1 of a plain endpoint: %s",
		fi_strerror(ee.err));
	/* The endpoint itself is still reached. */
	cf_fill(sbuf, sizeof(sbuf), 0x42);
	cf_ok(fi_tsend(ep[0], sbuf, sizeof(sbuf), NULL, addr[1], 0x951,
		       &sctx));
	end = cf_now_ms() + CF_WAIT_MS;
	while ((n = fi_cq_read(cq[1], &c, 1)) == -FI_EAGAIN) {
		(void)fi_cq_read(cq[0], NULL, 0);
		cf_assert(cf_now_ms() < end, "to the endpoint: nothing arrived");
	}
	cf_assert(n == 1 && c.op_context == &rctx, "to the endpoint: %zd", n);
	cf_check_fill(rbuf, sizeof(rbuf), 0x42, "payload");
	for (e = 0; e < 2; e++) {
		cf_ok(fi_close(&ep[e]->fid));
		cf_ok(fi_close(&cq[e]->fid));
	}
	cf_ok(fi_close(&av->fid));
	cf_ok(fi_close(&domain->fid));
	cf_ok(fi_close(&fabric->fid));
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
    {"ctx_of_plain_ep",
     "a transmit to receive context 1 of a plain endpoint ends in an "
     "error within the wait, nothing arrives at context 0; the "
     "endpoint is then reached as it is",
     case_ctx_of_plain_ep},
    {"sep_stray",
     "stray datagrams at a scalable endpoint's socket address (empty, "
     "short, weft's magic with every context byte, random): nothing is "
     "reported, every transmit context still reaches every receive "
     "context",
     case_sep_stray},
    {"stx_api",
     "fi_stx_context as Sandia OpenSHMEM's pool uses it: three endpoints "
     "on one, refused binds, enable and close, each send completing "
     "once on its own endpoint's CQ under its own address",
     case_stx_api},
    {"srx_api",
     "fi_srx_context as fabtests' shared_ctx uses it: refused binds, "
     "enable and close; two endpoints on one context, expected and "
     "unexpected messages through both (one of rendezvous size) taken "
     "by the context's receives, each completing once on the CQ of the "
     "endpoint it came by with its length, tag, data and sender",
     case_srx_api},
    {"srx_threads",
     "FI_THREAD_SAFE: two threads, each driving its own endpoint on one "
     "shared receive context, each posting the receives the other's "
     "messages take: 2000 verified messages each, every one once",
     case_srx_threads},
    {"sep_threads",
     "FI_THREAD_ENDPOINT: a thread per context pair, each with its own "
     "CQ, 2000 verified messages each way, cancelled receives once each",
     case_sep_threads},
    {"sep_threads_safe",
     "the same under FI_THREAD_SAFE",
     case_sep_threads_safe},
    {NULL, NULL, NULL},
};
