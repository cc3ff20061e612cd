/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The RDM engine (prov/util/util_rdm_*.c) over an in-memory transport.
 *
 * Endpoints live in one process.  The mock transport keeps, per endpoint,
 * a FIFO of messages addressed to it and a list of acknowledgements for
 * it; its progress hands them to the engine.  A per-peer switch makes it
 * refuse transmits (-FI_EAGAIN), as a full socket or queue would.
 * Rendezvous descriptors name the sender's transmit by its wire id, so a
 * fetch after the sender gave up finds nothing (util_rdm_tx_of).
 */
#include <criterion/criterion.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <rdma/fi_domain.h>
#include <rdma/fi_eq.h>

#include "weft/util_av.h"
#include "weft/util_cq.h"
#include "weft/util_domain.h"
#include "weft/util_rdm.h"

#define NEP 3 /* A, B, and C (a connected endpoint) */
#define EP_A 0
#define EP_B 1
#define EP_C 2

#define EAGER_MAX 256
#define INJECT_MAX 64
#define FIFO_CAP 32
#define ACK_CAP 256
#define FETCH_CAP 16
#define REC_CAP 1024
#define CQ_SIZE 512

#define CTX(i) ((void *)(uintptr_t)(0x1000 + (i)))
#define RCTX(i) ((void *)(uintptr_t)(0x200000 + (i)))

struct mock_stash {
	int from;
	uint64_t tx_id;
};

struct mock_msg {
	struct util_rdm_hdr hdr;
	int from;
	bool rndv;
	struct mock_stash stash;
	uint8_t data[EAGER_MAX];
};

struct mock_ack {
	uint64_t tx_id;
	int err;
};

struct mock_fetch {
	struct util_rdm_ep *ep;
	struct mock_stash stash;
	struct iovec iov[UTIL_RDM_IOV_MAX];
	size_t iov_count;
	size_t len;
	void *cookie;
};

struct rec {
	void *ctx;
	uint64_t flags;
	size_t len;
	uint64_t tag;
	uint64_t data;
	fi_addr_t src;
	int err;
	size_t olen;
};

struct mock_ep {
	struct util_rdm_ep rdm;
	struct util_rdm_xport xp;
	int idx;
	bool open;
	struct fid_av *av;
	struct util_cq *cq;
	fi_addr_t addr_of[NEP]; /* this endpoint's fi_addr for each other */
	struct mock_msg fifo[FIFO_CAP];
	size_t head, count;
	struct mock_ack acks[ACK_CAP];
	size_t nacks;
	/* what the application saw */
	struct rec recs[REC_CAP];
	size_t nrecs;
};

struct mock_peer {
	struct util_peer p; /* first */
	int to;
	bool blocked;
};

static struct util_domain domain;
static struct fi_domain_attr domain_attr;
static struct mock_ep eps[NEP];

/* Transport behaviour and what it saw. */
static struct {
	bool fetch_async;
	bool ready_in_send; /* a send makes room and says the peer is ready */
	struct util_peer *fail_in_send; /* a send finds this peer dead */
	struct mock_fetch fetches[FETCH_CAP];
	size_t nfetches;
	int send_eager_calls, send_rndv_calls, fetch_calls, discard_calls;
	int ack_calls;
} mock;

static struct mock_ep *mock_ep_of(struct util_rdm_ep *ep)
{
	return container_of(ep, struct mock_ep, rdm);
}

static struct sockaddr_in addr_of_idx(int idx)
{
	struct sockaddr_in sin = { .sin_family = AF_INET };

	sin.sin_addr.s_addr = htonl(0x0a000001u + (uint32_t)idx);
	sin.sin_port = htons((in_port_t)(1000 + idx));
	return sin;
}

/* ---- the mock transport ----------------------------------------------- */

static int mock_peer_init(struct util_rdm_xport *xp __attribute__((unused)), struct util_peer *peer)
{
	struct mock_peer *mp = (struct mock_peer *)peer;
	const struct sockaddr_in *sin = peer->addr;

	mp->to = ntohs(sin->sin_port) - 1000;
	mp->blocked = false;
	return 0;
}

static struct mock_msg *fifo_push(int to)
{
	struct mock_ep *d = &eps[to];
	struct mock_msg *m;

	if (!d->open || d->count == FIFO_CAP)
		return NULL;
	m = &d->fifo[(d->head + d->count) % FIFO_CAP];
	d->count++;
	memset(m, 0, sizeof(*m));
	return m;
}

static int mock_send_eager(struct util_rdm_xport *xp, struct util_peer *peer,
			   const struct util_rdm_hdr *hdr,
			   const struct iovec *iov, void **desc,
			   size_t iov_count)
{
	struct util_rdm_ep *ep = xp->ep;
	struct mock_peer *mp = (struct mock_peer *)peer;
	struct mock_msg *m;
	size_t i, off = 0;

	mock.send_eager_calls++;
	cr_assert_leq(hdr->len, EAGER_MAX);
	if (mp->blocked)
		return -FI_EAGAIN;
	/* As a socket transport does when writing out its backlog while
	 * taking this message: it tells the engine the peer can take more. */
	if (mock.ready_in_send)
		util_rdm_peer_ready(ep, peer);
	/* As shm does when a full queue makes it look for dead peers: it
	 * fails another peer, then cannot take this message yet. */
	if (mock.fail_in_send && mock.fail_in_send != peer) {
		struct util_peer *dead = mock.fail_in_send;

		mock.fail_in_send = NULL;
		util_rdm_fail_peer(ep, dead, FI_EHOSTUNREACH);
		return -FI_EAGAIN;
	}
	m = fifo_push(mp->to);
	if (!m)
		return -FI_EAGAIN;
	m->hdr = *hdr;
	m->from = mock_ep_of(ep)->idx;
	for (i = 0; i < iov_count; i++) {
		memcpy(m->data + off, iov[i].iov_base, iov[i].iov_len);
		off += iov[i].iov_len;
	}
	cr_assert_eq(off, hdr->len);
	return 0;
}

static int mock_send_rndv(struct util_rdm_xport *xp, struct util_rdm_tx *tx)
{
	struct util_rdm_ep *ep = xp->ep;
	struct mock_peer *mp = (struct mock_peer *)tx->peer;
	struct mock_msg *m;

	mock.send_rndv_calls++;
	cr_assert_gt(tx->hdr.len, EAGER_MAX);
	cr_assert_eq(tx->hdr.tx_id, util_rdm_tx_id(ep, tx));
	if (mp->blocked)
		return -FI_EAGAIN;
	m = fifo_push(mp->to);
	if (!m)
		return -FI_EAGAIN;
	m->hdr = tx->hdr;
	m->from = mock_ep_of(ep)->idx;
	m->rndv = true;
	m->stash.from = m->from;
	m->stash.tx_id = tx->hdr.tx_id;
	return 0;
}

/* Copy the sender's data and finish its transmit; -FI_EIO if it is gone. */
static int fetch_copy(const struct mock_stash *s, const struct iovec *iov,
		      size_t iov_count, size_t len)
{
	struct util_rdm_ep *sender = &eps[s->from].rdm;
	struct util_rdm_tx *tx = util_rdm_tx_of(sender, s->tx_id);
	size_t i, off = 0, n;
	uint8_t *tmp;

	if (!tx)
		return -FI_EIO;
	tmp = malloc(tx->hdr.len);
	cr_assert_not_null(tmp);
	for (i = 0; i < tx->iov_count; i++) {
		memcpy(tmp + off, tx->iov[i].iov_base, tx->iov[i].iov_len);
		off += tx->iov[i].iov_len;
	}
	cr_assert_leq(len, off);
	for (i = 0, off = 0; i < iov_count && off < len; i++) {
		n = WEFT_MIN(iov[i].iov_len, len - off);
		memcpy(iov[i].iov_base, tmp + off, n);
		off += n;
	}
	cr_assert_eq(off, len);
	free(tmp);
	util_rdm_tx_done(sender, tx, 0);
	return 0;
}

static int mock_fetch(struct util_rdm_xport *xp, const void *stash,
		      const struct iovec *iov, void **desc, size_t iov_count,
		      size_t len, void *cookie)
{
	struct util_rdm_ep *ep = xp->ep;
	struct mock_fetch *f;

	mock.fetch_calls++;
	if (!mock.fetch_async)
		return fetch_copy(stash, iov, iov_count, len);
	cr_assert_lt(mock.nfetches, FETCH_CAP);
	f = &mock.fetches[mock.nfetches++];
	f->ep = ep;
	memcpy(&f->stash, stash, sizeof(f->stash));
	memcpy(f->iov, iov, iov_count * sizeof(*iov));
	f->iov_count = iov_count;
	f->len = len;
	f->cookie = cookie;
	return -FI_EINPROGRESS;
}

/* Finish the fetches that returned -FI_EINPROGRESS. */
static void mock_fetches_done(void)
{
	size_t i;
	int ret;

	for (i = 0; i < mock.nfetches; i++) {
		struct mock_fetch *f = &mock.fetches[i];

		ret = fetch_copy(&f->stash, f->iov, f->iov_count, f->len);
		util_rdm_fetch_done(f->ep, f->cookie, -ret);
	}
	mock.nfetches = 0;
}

static void mock_discard(struct util_rdm_xport *xp __attribute__((unused)), const void *stash)
{
	const struct mock_stash *s = stash;
	struct util_rdm_ep *sender = &eps[s->from].rdm;
	struct util_rdm_tx *tx = util_rdm_tx_of(sender, s->tx_id);

	mock.discard_calls++;
	if (tx)
		util_rdm_tx_done(sender, tx, 0);
}

static int mock_ack(struct util_rdm_xport *xp __attribute__((unused)), void *reply, uint64_t tx_id,
		    int err)
{
	struct mock_ep *to = &eps[(uintptr_t)reply - 1];

	mock.ack_calls++;
	cr_assert_lt(to->nacks, ACK_CAP);
	to->acks[to->nacks].tx_id = tx_id;
	to->acks[to->nacks].err = err;
	to->nacks++;
	return 0;
}

static int mock_progress(struct util_rdm_xport *xp)
{
	struct util_rdm_ep *ep = xp->ep;
	struct mock_ep *me = mock_ep_of(ep);
	size_t i, nacks = me->nacks;
	int n = 0, ret;

	/* Acknowledgements first; one may come in while we hand them. */
	for (i = 0; i < nacks; i++, n++)
		util_rdm_tx_acked(ep, me->acks[i].tx_id, me->acks[i].err);
	memmove(me->acks, me->acks + nacks,
		(me->nacks - nacks) * sizeof(me->acks[0]));
	me->nacks -= nacks;

	while (me->count) {
		struct mock_msg *m = &me->fifo[me->head];
		struct sockaddr_in src_raw = addr_of_idx(m->from);
		struct util_rdm_msg msg = {
			.op = m->hdr.op,
			.flags = m->hdr.flags,
			.tag = m->hdr.tag,
			.data = m->hdr.data,
			.len = m->hdr.len,
			.src = me->addr_of[m->from],
			.src_raw = &src_raw,
			.src_raw_len = sizeof(src_raw),
			.tx_id = m->hdr.tx_id,
			.reply = (void *)(uintptr_t)(m->from + 1),
		};

		if (m->rndv) {
			msg.stash = &m->stash;
			msg.stash_len = sizeof(m->stash);
		} else {
			msg.payload = m->data;
		}
		ret = util_rdm_msg_arrived(&mock_ep_of(ep)->xp, &msg);
		if (ret == -FI_EAGAIN)
			break; /* kept: offered again, first, next time */
		cr_assert_eq(ret, 0, "arrival failed: %d", ret);
		me->head = (me->head + 1) % FIFO_CAP;
		me->count--;
		n++;
	}
	return n;
}

static const struct util_rdm_transport mock_tp = {
	.send_eager = mock_send_eager,
	.send_rndv = mock_send_rndv,
	.fetch = mock_fetch,
	.discard = mock_discard,
	.ack = mock_ack,
	.rma = NULL,
	.progress = mock_progress,
	.peer_size = sizeof(struct mock_peer),
	.peer_init = mock_peer_init,
};

/* ---- endpoints ---------------------------------------------------------- */

struct ep_cfg {
	size_t tx_size; /* 0: 1024 */
	size_t unexp_max;
	bool connected;
};

static void ep_open(int idx, const struct ep_cfg *cfg)
{
	struct mock_ep *me = &eps[idx];
	struct fi_tx_attr tx_attr = { .size = cfg->tx_size ? cfg->tx_size : 1024 };
	struct fi_rx_attr rx_attr = { .size = 1024 };
	struct fi_info info = {
		.caps = FI_MSG | FI_TAGGED | FI_SEND | FI_RECV | FI_RMA,
		.tx_attr = &tx_attr,
		.rx_attr = &rx_attr,
		.domain_attr = &domain_attr,
	};
	struct util_rdm_ep_attr attr = {
		.xport = &eps[idx].xp,
		.inject_max = INJECT_MAX,
		.atomic_max = 64,
		.peer_addr_len = cfg->connected ? sizeof(struct sockaddr_in) : 0,
		.connected = cfg->connected,
		.unexp_inline = 64,
		.unexp_max = cfg->unexp_max,
	};
	struct fi_cq_attr cq_attr = {
		.size = CQ_SIZE,
		.format = FI_CQ_FORMAT_TAGGED,
	};
	struct fi_av_attr av_attr = { .type = FI_AV_TABLE };
	int i;

	memset(me, 0, sizeof(*me));
	me->xp.ops = &mock_tp;
	me->xp.eager_max = EAGER_MAX;
	me->idx = idx;
	for (i = 0; i < NEP; i++)
		me->addr_of[i] = FI_ADDR_NOTAVAIL;
	cr_assert_eq(util_rdm_ep_init(&me->rdm, &domain, &info, &attr, me), 0);
	cr_assert_eq(util_cq_open(&domain, &cq_attr, &me->cq, me), 0);
	cr_assert_eq(util_rdm_ep_bind(&me->rdm.base.ep_fid.fid,
				      &me->cq->cq_fid.fid,
				      FI_TRANSMIT | FI_RECV),
		     0);
	if (!cfg->connected) {
		cr_assert_eq(util_av_open(&domain, &av_attr,
					  &util_av_sockaddr_in_ops, &me->av,
					  NULL), 0);
		cr_assert_eq(util_rdm_ep_bind(&me->rdm.base.ep_fid.fid,
					      &me->av->fid, 0), 0);
		for (i = 0; i < NEP; i++) {
			struct sockaddr_in sin = addr_of_idx(i);

			if (i == idx || (i == EP_C))
				continue;
			cr_assert_eq(fi_av_insert(me->av, &sin, 1,
						  &me->addr_of[i], 0, NULL), 1);
		}
	}
	cr_assert_eq(util_rdm_ep_control(&me->rdm.base.ep_fid.fid, FI_ENABLE,
					 NULL),
		     0);
	me->open = true;
}

static void ep_close(int idx)
{
	struct mock_ep *me = &eps[idx];

	if (!me->open)
		return;
	/* The transport gives back what it still holds. */
	while (!dlist_empty(&me->rdm.tx_waiting))
		util_rdm_tx_done(&me->rdm,
				 container_of(me->rdm.tx_waiting.next,
					      struct util_rdm_tx, waiting),
				 FI_ECANCELED);
	util_rdm_ep_fini(&me->rdm);
	cr_assert_eq(fi_close(&me->cq->cq_fid.fid), 0);
	if (me->av)
		cr_assert_eq(fi_close(&me->av->fid), 0);
	me->open = false;
}

static void setup(void)
{
	struct ep_cfg cfg = { 0 };
	struct fi_info info = { .domain_attr = &domain_attr };

	memset(&mock, 0, sizeof(mock));
	memset(&domain_attr, 0, sizeof(domain_attr));
	domain_attr.threading = FI_THREAD_DOMAIN;
	domain_attr.data_progress = FI_PROGRESS_MANUAL;
	cr_assert_eq(util_domain_init(&domain, NULL, &info, NULL), 0);
	ep_open(EP_A, &cfg);
	ep_open(EP_B, &cfg);
}

static void teardown(void)
{
	int i;

	mock_fetches_done();
	for (i = 0; i < NEP; i++)
		ep_close(i);
	cr_assert_eq(util_domain_fini(&domain), 0, "everything was closed");
}

/* Reopen A with another configuration. */
static void reopen_a(const struct ep_cfg *cfg)
{
	ep_close(EP_A);
	ep_open(EP_A, cfg);
}

TestSuite(rdm_engine, .init = setup, .fini = teardown);

/* ---- helpers ------------------------------------------------------------- */

static struct fid_ep *fep(int idx)
{
	return &eps[idx].rdm.base.ep_fid;
}

static fi_addr_t to(int from, int dest)
{
	return eps[from].addr_of[dest];
}

static struct mock_peer *peer_of(int from, int dest)
{
	struct util_peer *p;

	cr_assert_eq(util_peer_get(&eps[from].rdm.peers, to(from, dest), &p),
		     0);
	return (struct mock_peer *)p;
}

static void set_blocked(int from, int dest, bool on)
{
	peer_of(from, dest)->blocked = on;
}

/* Read everything the endpoint's CQ has (which runs its progress). */
static int collect(int idx)
{
	struct mock_ep *me = &eps[idx];
	struct fi_cq_tagged_entry e[16];
	struct fi_cq_err_entry err;
	fi_addr_t src[16];
	int got = 0;
	ssize_t n, i;

	if (!me->open)
		return 0;
	for (;;) {
		n = fi_cq_readfrom(&me->cq->cq_fid, e, 16, src);
		if (n == -FI_EAGAIN)
			break;
		if (n == -FI_EAVAIL) {
			memset(&err, 0, sizeof(err));
			cr_assert_eq(fi_cq_readerr(&me->cq->cq_fid, &err, 0), 1);
			cr_assert_lt(me->nrecs, REC_CAP);
			me->recs[me->nrecs++] = (struct rec){
				.ctx = err.op_context, .flags = err.flags,
				.len = err.len, .tag = err.tag,
				.data = err.data, .src = FI_ADDR_NOTAVAIL,
				.err = err.err, .olen = err.olen,
			};
			got++;
			continue;
		}
		cr_assert_gt(n, 0, "fi_cq_read: %zd", n);
		for (i = 0; i < n; i++) {
			cr_assert_lt(me->nrecs, REC_CAP);
			me->recs[me->nrecs++] = (struct rec){
				.ctx = e[i].op_context, .flags = e[i].flags,
				.len = e[i].len, .tag = e[i].tag,
				.data = e[i].data, .src = src[i],
			};
		}
		got += (int)n;
	}
	return got;
}

/* What progress may change: when it stops changing, all has settled. */
static uint64_t progress_sig(void)
{
	uint64_t sig = 0;
	int i;

	for (i = 0; i < NEP; i++) {
		if (!eps[i].open)
			continue;
		sig = sig * 1000003 + eps[i].count;
		sig = sig * 1000003 + eps[i].head;
		sig = sig * 1000003 + eps[i].nacks;
		sig = sig * 1000003 + eps[i].nrecs;
		sig = sig * 1000003 + eps[i].rdm.rxq->unexp_bytes;
		sig = sig * 1000003 + util_bufpool_inuse(eps[i].rdm.tx_pool);
	}
	return sig;
}

/* Progress every endpoint until nothing moves. */
static void pump(void)
{
	uint64_t sig = progress_sig(), next;
	int round, i;

	for (round = 0; round < 1000; round++) {
		for (i = 0; i < NEP; i++)
			collect(i);
		next = progress_sig();
		if (next == sig && round > 0)
			return;
		sig = next;
	}
	cr_assert_fail("progress never settles");
}

/* How many completions of idx name ctx; the error of the last one. */
static int count_ctx(int idx, void *ctx, int *err)
{
	int n = 0;
	size_t i;

	for (i = 0; i < eps[idx].nrecs; i++) {
		if (eps[idx].recs[i].ctx != ctx)
			continue;
		n++;
		if (err)
			*err = eps[idx].recs[i].err;
	}
	return n;
}

static const struct rec *rec_of(int idx, void *ctx)
{
	size_t i;

	for (i = 0; i < eps[idx].nrecs; i++)
		if (eps[idx].recs[i].ctx == ctx)
			return &eps[idx].recs[i];
	cr_assert_fail("no completion for %p", ctx);
	return NULL;
}

static void fill(uint8_t *buf, size_t len, unsigned int seed)
{
	size_t i;

	for (i = 0; i < len; i++)
		buf[i] = (uint8_t)(seed * 31 + i * 7 + (i >> 8));
}

static bool check(const uint8_t *buf, size_t len, unsigned int seed)
{
	size_t i;

	for (i = 0; i < len; i++)
		if (buf[i] != (uint8_t)(seed * 31 + i * 7 + (i >> 8)))
			return false;
	return true;
}

static size_t tx_inuse(int idx)
{
	return util_bufpool_inuse(eps[idx].rdm.tx_pool);
}

/* ---- eager --------------------------------------------------------------- */

Test(rdm_engine, eager_send_recv)
{
	uint8_t sbuf[100], rbuf[100];
	const struct rec *r;

	fill(sbuf, sizeof(sbuf), 1);
	memset(rbuf, 0, sizeof(rbuf));
	cr_assert_eq(fi_recv(fep(EP_B), rbuf, sizeof(rbuf), NULL,
			     FI_ADDR_UNSPEC, RCTX(0)), 0);
	cr_assert_eq(fi_senddata(fep(EP_A), sbuf, sizeof(sbuf), NULL, 0xabc,
				 to(EP_A, EP_B), CTX(0)), 0);
	/* Copied during the call: the buffer is free again. */
	memset(sbuf, 0, sizeof(sbuf));
	pump();
	cr_assert(check(rbuf, sizeof(rbuf), 1));
	cr_assert_eq(eps[EP_A].nrecs, 1);
	cr_assert_eq(count_ctx(EP_A, CTX(0), NULL), 1);
	cr_assert_eq(rec_of(EP_A, CTX(0))->flags, FI_SEND | FI_MSG);
	cr_assert_eq(eps[EP_B].nrecs, 1);
	r = rec_of(EP_B, RCTX(0));
	cr_assert_eq(r->err, 0);
	cr_assert_eq(r->len, sizeof(rbuf));
	cr_assert_eq(r->flags, FI_RECV | FI_MSG | FI_REMOTE_CQ_DATA);
	cr_assert_eq(r->data, 0xabc);
	cr_assert_eq(r->src, to(EP_B, EP_A));
	cr_assert_eq(mock.send_rndv_calls, 0);
	cr_assert_eq(tx_inuse(EP_A), 0);
}

Test(rdm_engine, tagged_matching)
{
	uint64_t s1 = 111, s2 = 222, r1 = 0, r2 = 0;

	cr_assert_eq(fi_trecv(fep(EP_B), &r1, sizeof(r1), NULL, FI_ADDR_UNSPEC,
			      1, 0, RCTX(1)), 0);
	cr_assert_eq(fi_trecv(fep(EP_B), &r2, sizeof(r2), NULL, FI_ADDR_UNSPEC,
			      2, 0, RCTX(2)), 0);
	cr_assert_eq(fi_tsend(fep(EP_A), &s2, sizeof(s2), NULL,
			      to(EP_A, EP_B), 2, CTX(2)), 0);
	cr_assert_eq(fi_tsend(fep(EP_A), &s1, sizeof(s1), NULL,
			      to(EP_A, EP_B), 1, CTX(1)), 0);
	pump();
	cr_assert_eq(r1, 111);
	cr_assert_eq(r2, 222);
	cr_assert_eq(rec_of(EP_B, RCTX(1))->tag, 1);
	cr_assert_eq(rec_of(EP_B, RCTX(2))->tag, 2);
	cr_assert_eq(rec_of(EP_B, RCTX(2))->flags, FI_RECV | FI_TAGGED);
	cr_assert_eq(eps[EP_B].nrecs, 2);
	cr_assert_eq(eps[EP_A].nrecs, 2);
	/* An untagged send does not meet a tagged receive. */
	cr_assert_eq(fi_trecv(fep(EP_B), &r1, sizeof(r1), NULL, FI_ADDR_UNSPEC,
			      0, ~0ULL, RCTX(3)), 0);
	cr_assert_eq(fi_send(fep(EP_A), &s1, sizeof(s1), NULL, to(EP_A, EP_B),
			     CTX(3)), 0);
	pump();
	cr_assert_eq(count_ctx(EP_B, RCTX(3), NULL), 0);
}

Test(rdm_engine, unexpected_then_posted)
{
	uint32_t v[3] = { 10, 20, 30 }, r[3] = { 0 };
	uint64_t tags[3] = { 5, 6, 5 };
	int i;

	for (i = 0; i < 3; i++)
		cr_assert_eq(fi_tsend(fep(EP_A), &v[i], sizeof(v[i]), NULL,
				      to(EP_A, EP_B), tags[i], CTX(i)), 0);
	pump();
	cr_assert_eq(eps[EP_B].nrecs, 0);
	cr_assert_eq(eps[EP_B].count, 0, "the engine kept them");
	cr_assert_eq(fi_trecv(fep(EP_B), &r[1], sizeof(r[1]), NULL,
			      FI_ADDR_UNSPEC, 6, 0, RCTX(1)), 0);
	cr_assert_eq(r[1], 20);
	cr_assert_eq(fi_trecv(fep(EP_B), &r[0], sizeof(r[0]), NULL,
			      FI_ADDR_UNSPEC, 5, 0, RCTX(0)), 0);
	cr_assert_eq(fi_trecv(fep(EP_B), &r[2], sizeof(r[2]), NULL,
			      FI_ADDR_UNSPEC, 5, 0, RCTX(2)), 0);
	cr_assert_eq(r[0], 10, "same tag: in order of arrival");
	cr_assert_eq(r[2], 30);
	pump();
	for (i = 0; i < 3; i++) {
		cr_assert_eq(count_ctx(EP_B, RCTX(i), NULL), 1);
		cr_assert_eq(rec_of(EP_B, RCTX(i))->tag, tags[i]);
		cr_assert_eq(count_ctx(EP_A, CTX(i), NULL), 1);
	}
	cr_assert_eq(eps[EP_B].rdm.rxq->unexp_bytes, 0);
}

Test(rdm_engine, rma_without_transport_support)
{
	uint64_t v = 1;

	cr_assert_eq(fi_write(fep(EP_A), &v, sizeof(v), NULL, to(EP_A, EP_B),
			      0, 0, CTX(0)), -FI_EOPNOTSUPP);
	cr_assert_eq(fi_read(fep(EP_A), &v, sizeof(v), NULL, to(EP_A, EP_B),
			     0, 0, CTX(0)), -FI_EOPNOTSUPP);
	cr_assert_eq(tx_inuse(EP_A), 0);
}

/* ---- rendezvous ----------------------------------------------------------- */

#define BIG 5000

Test(rdm_engine, rndv_posted_first)
{
	static uint8_t sbuf[BIG], rbuf[BIG];

	fill(sbuf, BIG, 7);
	cr_assert_eq(fi_recv(fep(EP_B), rbuf, BIG, NULL, FI_ADDR_UNSPEC,
			     RCTX(0)), 0);
	cr_assert_eq(fi_send(fep(EP_A), sbuf, BIG, NULL, to(EP_A, EP_B),
			     CTX(0)), 0);
	cr_assert_eq(mock.send_rndv_calls, 1);
	/* The sender's buffer is held until the receiver fetched it. */
	collect(EP_A);
	cr_assert_eq(eps[EP_A].nrecs, 0);
	cr_assert(util_rdm_tx_waiting(&eps[EP_A].rdm));
	pump();
	cr_assert_eq(mock.fetch_calls, 1);
	cr_assert(check(rbuf, BIG, 7));
	cr_assert_eq(count_ctx(EP_A, CTX(0), NULL), 1);
	cr_assert_eq(rec_of(EP_A, CTX(0))->err, 0);
	cr_assert_eq(count_ctx(EP_B, RCTX(0), NULL), 1);
	cr_assert_eq(rec_of(EP_B, RCTX(0))->len, BIG);
	cr_assert_eq(rec_of(EP_B, RCTX(0))->err, 0);
	cr_assert_eq(tx_inuse(EP_A), 0);
}

Test(rdm_engine, rndv_unexpected_then_posted)
{
	static uint8_t sbuf[BIG], rbuf[BIG];

	fill(sbuf, BIG, 8);
	cr_assert_eq(fi_tsend(fep(EP_A), sbuf, BIG, NULL, to(EP_A, EP_B), 9,
			      CTX(0)), 0);
	pump();
	cr_assert_eq(eps[EP_A].nrecs, 0);
	cr_assert_eq(mock.fetch_calls, 0);
	cr_assert_eq(fi_trecv(fep(EP_B), rbuf, BIG, NULL, FI_ADDR_UNSPEC, 9, 0,
			      RCTX(0)), 0);
	pump();
	cr_assert(check(rbuf, BIG, 8));
	cr_assert_eq(count_ctx(EP_A, CTX(0), NULL), 1);
	cr_assert_eq(count_ctx(EP_B, RCTX(0), NULL), 1);
	cr_assert_eq(rec_of(EP_B, RCTX(0))->tag, 9);
	cr_assert_eq(mock.discard_calls, 0);
	cr_assert_eq(eps[EP_B].rdm.rxq->unexp_bytes, 0);
}

Test(rdm_engine, rndv_fetch_in_progress)
{
	static uint8_t sbuf[2][BIG], rbuf[2][BIG];
	int i;

	mock.fetch_async = true;
	for (i = 0; i < 2; i++) {
		fill(sbuf[i], BIG, 20 + i);
		memset(rbuf[i], 0, BIG);
	}
	/* One posted before it arrives, one found unexpected. */
	cr_assert_eq(fi_recv(fep(EP_B), rbuf[0], BIG, NULL, FI_ADDR_UNSPEC,
			     RCTX(0)), 0);
	for (i = 0; i < 2; i++)
		cr_assert_eq(fi_send(fep(EP_A), sbuf[i], BIG, NULL,
				     to(EP_A, EP_B), CTX(i)), 0);
	pump();
	cr_assert_eq(fi_recv(fep(EP_B), rbuf[1], BIG, NULL, FI_ADDR_UNSPEC,
			     RCTX(1)), 0);
	pump();
	cr_assert_eq(mock.nfetches, 2);
	cr_assert_eq(eps[EP_A].nrecs, 0, "senders wait for the fetch");
	cr_assert_eq(eps[EP_B].nrecs, 0, "receives wait for the fetch");
	mock_fetches_done();
	pump();
	for (i = 0; i < 2; i++) {
		cr_assert(check(rbuf[i], BIG, 20 + i));
		cr_assert_eq(count_ctx(EP_A, CTX(i), NULL), 1);
		cr_assert_eq(count_ctx(EP_B, RCTX(i), NULL), 1);
		cr_assert_eq(rec_of(EP_B, RCTX(i))->err, 0);
		cr_assert_eq(rec_of(EP_B, RCTX(i))->len, BIG);
	}
	cr_assert_eq(eps[EP_B].nrecs, 2);
	cr_assert_eq(eps[EP_A].nrecs, 2);
	cr_assert_eq(tx_inuse(EP_A), 0);
}

Test(rdm_engine, rndv_truncated)
{
	static uint8_t sbuf[BIG], rbuf[BIG];
	const struct rec *r;

	fill(sbuf, BIG, 3);
	memset(rbuf, 0xee, BIG);
	cr_assert_eq(fi_recv(fep(EP_B), rbuf, 1000, NULL, FI_ADDR_UNSPEC,
			     RCTX(0)), 0);
	cr_assert_eq(fi_send(fep(EP_A), sbuf, BIG, NULL, to(EP_A, EP_B),
			     CTX(0)), 0);
	pump();
	cr_assert(check(rbuf, 1000, 3));
	cr_assert_eq(rbuf[1000], 0xee, "nothing past the buffer");
	r = rec_of(EP_B, RCTX(0));
	cr_assert_eq(count_ctx(EP_B, RCTX(0), NULL), 1);
	cr_assert_eq(r->err, FI_ETRUNC);
	cr_assert_eq(r->len, 1000);
	cr_assert_eq(r->olen, BIG - 1000);
	/* The sender's side of it succeeded, once. */
	cr_assert_eq(count_ctx(EP_A, CTX(0), NULL), 1);
	cr_assert_eq(rec_of(EP_A, CTX(0))->err, 0);
	cr_assert_eq(tx_inuse(EP_A), 0);
}

Test(rdm_engine, rndv_discarded)
{
	static uint8_t sbuf[BIG];
	struct fi_msg_tagged m = {
		.addr = FI_ADDR_UNSPEC, .tag = 4, .context = RCTX(0),
	};

	fill(sbuf, BIG, 4);
	cr_assert_eq(fi_tsend(fep(EP_A), sbuf, BIG, NULL, to(EP_A, EP_B), 4,
			      CTX(0)), 0);
	pump();
	cr_assert_eq(fi_trecvmsg(fep(EP_B), &m, FI_PEEK | FI_DISCARD), 0);
	pump();
	cr_assert_eq(mock.discard_calls, 1);
	cr_assert_eq(mock.fetch_calls, 0);
	cr_assert_eq(count_ctx(EP_A, CTX(0), NULL), 1);
	cr_assert_eq(count_ctx(EP_B, RCTX(0), NULL), 1);
	cr_assert_eq(eps[EP_B].rdm.rxq->unexp_bytes, 0);
}

/* ---- back-pressure -------------------------------------------------------- */

#define NSEQ 100

Test(rdm_engine, queued_sends_keep_order)
{
	static uint32_t seq[NSEQ], got[NSEQ];
	int i, eagain = 0;

	for (i = 0; i < NSEQ; i++) {
		seq[i] = 0x5eed0000u + i;
		got[i] = 0;
		cr_assert_eq(fi_recv(fep(EP_B), &got[i], sizeof(got[i]), NULL,
				     FI_ADDR_UNSPEC, RCTX(i)), 0);
	}
	for (i = 0; i < NSEQ; i++) {
		/* On for 7 sends, off for 7, ...; progress now and then. */
		set_blocked(EP_A, EP_B, (i / 7) % 2 == 1);
		cr_assert_eq(fi_send(fep(EP_A), &seq[i], sizeof(seq[i]), NULL,
				     to(EP_A, EP_B), CTX(i)), 0,
			     "a send with a completion is queued, not refused");
		if (!dlist_empty(&peer_of(EP_A, EP_B)->p.queued))
			eagain++;
		if (i % 5 == 0)
			collect(EP_A);
		if (i % 11 == 0)
			collect(EP_B);
	}
	cr_assert_gt(eagain, 0, "some sends had to wait");
	set_blocked(EP_A, EP_B, false);
	pump();
	for (i = 0; i < NSEQ; i++) {
		cr_assert_eq(got[i], 0x5eed0000u + i,
			     "receive %d got %#x: out of order", i, got[i]);
		cr_assert_eq(count_ctx(EP_A, CTX(i), NULL), 1);
		cr_assert_eq(count_ctx(EP_B, RCTX(i), NULL), 1);
	}
	cr_assert_eq(eps[EP_A].nrecs, NSEQ);
	cr_assert_eq(eps[EP_B].nrecs, NSEQ);
	cr_assert_eq(tx_inuse(EP_A), 0);
	cr_assert(dlist_empty(&eps[EP_A].rdm.blocked));
}

/* A transport that reports the peer ready from inside the call taking the
 * queue's head must not get the ones behind it first. */
Test(rdm_engine, ready_inside_send_keeps_order)
{
	static uint32_t v[8], r[8];
	int i;

	set_blocked(EP_A, EP_B, true);
	for (i = 0; i < 8; i++) {
		v[i] = 100 + i;
		r[i] = 0;
		cr_assert_eq(fi_send(fep(EP_A), &v[i], sizeof(v[i]), NULL,
				     to(EP_A, EP_B), CTX(i)), 0);
		cr_assert_eq(fi_recv(fep(EP_B), &r[i], sizeof(r[i]), NULL,
				     FI_ADDR_UNSPEC, RCTX(i)), 0);
	}
	mock.ready_in_send = true;
	set_blocked(EP_A, EP_B, false);
	pump();
	mock.ready_in_send = false;
	for (i = 0; i < 8; i++) {
		cr_assert_eq(r[i], 100u + (uint32_t)i,
			     "receive %d got %u: out of order", i, r[i]);
		cr_assert_eq(count_ctx(EP_A, CTX(i), NULL), 1);
	}
}

/* A send that fails another queued peer and then cannot go: progress
 * ends, the failed peer's transmits complete once in error, and this
 * peer's queue is handed over later. */
Test(rdm_engine, fail_other_peer_inside_drain, .timeout = 20)
{
	static uint32_t v[4], r[2];
	struct sockaddr_in sin = addr_of_idx(EP_C);
	struct util_peer *other;
	fi_addr_t fa;
	int i;

	/* A second peer for A: C's address, which nobody serves (a send
	 * to it cannot go). */
	cr_assert_eq(fi_av_insert(eps[EP_A].av, &sin, 1, &fa, 0, NULL), 1);
	cr_assert_eq(util_peer_get(&eps[EP_A].rdm.peers, fa, &other), 0);
	set_blocked(EP_A, EP_B, true);
	for (i = 0; i < 2; i++) {
		v[i] = 10 + i;
		cr_assert_eq(fi_send(fep(EP_A), &v[i], sizeof(v[i]), NULL,
				     to(EP_A, EP_B), CTX(i)), 0);
		cr_assert_eq(fi_recv(fep(EP_B), &r[i], sizeof(r[i]), NULL,
				     FI_ADDR_UNSPEC, RCTX(i)), 0);
	}
	for (i = 2; i < 4; i++)
		cr_assert_eq(fi_send(fep(EP_A), &v[i], sizeof(v[i]), NULL, fa,
				     CTX(i)), 0);
	mock.fail_in_send = other;
	set_blocked(EP_A, EP_B, false);
	collect(EP_A); /* B's head fails A's own peer, then says "again" */
	cr_assert_null(mock.fail_in_send);
	for (i = 2; i < 4; i++) {
		int err = 0;

		cr_assert_eq(count_ctx(EP_A, CTX(i), &err), 1);
		cr_assert_eq(err, FI_EHOSTUNREACH);
	}
	pump();
	for (i = 0; i < 2; i++) {
		cr_assert_eq(r[i], 10u + (uint32_t)i, "receive %d got %u", i,
			     r[i]);
		cr_assert_eq(count_ctx(EP_A, CTX(i), NULL), 1);
	}
}

Test(rdm_engine, later_sends_queue_behind)
{
	uint32_t x = 1, y = 2, r[2] = { 0 };

	set_blocked(EP_A, EP_B, true);
	cr_assert_eq(fi_send(fep(EP_A), &x, sizeof(x), NULL, to(EP_A, EP_B),
			     CTX(0)), 0);
	set_blocked(EP_A, EP_B, false);
	/* The transport would take it, but x waits ahead of it. */
	cr_assert_eq(fi_send(fep(EP_A), &y, sizeof(y), NULL, to(EP_A, EP_B),
			     CTX(1)), 0);
	cr_assert_eq(eps[EP_B].count, 0, "nothing overtook the queue");
	cr_assert_eq(fi_recv(fep(EP_B), &r[0], sizeof(r[0]), NULL,
			     FI_ADDR_UNSPEC, RCTX(0)), 0);
	cr_assert_eq(fi_recv(fep(EP_B), &r[1], sizeof(r[1]), NULL,
			     FI_ADDR_UNSPEC, RCTX(1)), 0);
	pump();
	cr_assert_eq(r[0], 1);
	cr_assert_eq(r[1], 2);
	cr_assert_eq(count_ctx(EP_A, CTX(0), NULL), 1);
	cr_assert_eq(count_ctx(EP_A, CTX(1), NULL), 1);
}

/*
 * An inject its peer cannot take now waits in the peer's queue with a copy
 * of its data: the call returns 0 at once and the caller's buffer is its
 * own again.  It keeps its place among the peer's transmits, arrives
 * once, and reports nothing.
 */
Test(rdm_engine, inject_to_blocked_peer)
{
	uint32_t v = 42, r[3] = { 0 }, w = 43;
	int i;

	set_blocked(EP_A, EP_B, true);
	cr_assert_eq(fi_inject(fep(EP_A), &v, sizeof(v), to(EP_A, EP_B)), 0,
		     "an inject the transport cannot take waits");
	cr_assert_eq(tx_inuse(EP_A), 1, "queued");
	v = 0;
	/* Behind it a send with a completion, and another inject. */
	cr_assert_eq(fi_send(fep(EP_A), &w, sizeof(w), NULL, to(EP_A, EP_B),
			     CTX(0)), 0);
	v = 44;
	cr_assert_eq(fi_inject(fep(EP_A), &v, sizeof(v), to(EP_A, EP_B)), 0,
		     "behind a queued send it waits too");
	v = 0;
	cr_assert_eq(tx_inuse(EP_A), 3);
	pump();
	cr_assert_eq(eps[EP_A].nrecs, 0);
	cr_assert_eq(eps[EP_B].count, 0);
	set_blocked(EP_A, EP_B, false);
	for (i = 0; i < 3; i++)
		cr_assert_eq(fi_recv(fep(EP_B), &r[i], sizeof(r[i]), NULL,
				     FI_ADDR_UNSPEC, RCTX(i)), 0);
	pump();
	cr_assert_eq(r[0], 42, "the first inject first, its data as it was");
	cr_assert_eq(r[1], 43, "then the send");
	cr_assert_eq(r[2], 44, "then the second inject");
	/* The injects report nothing; the send once. */
	cr_assert_eq(eps[EP_A].nrecs, 1);
	cr_assert_eq(count_ctx(EP_A, CTX(0), NULL), 1);
	cr_assert_eq(tx_inuse(EP_A), 0);
	cr_assert_eq(eps[EP_B].nrecs, 3);
}

/*
 * Injects waiting for a blocked peer count against its share of tx_size:
 * past it the call says -FI_EAGAIN and takes nothing.  Once the peer
 * takes them, each arrives exactly once, in order, and room is back.
 */
Test(rdm_engine, inject_queue_bounded)
{
	struct ep_cfg cfg = { .tx_size = 8 };
	uint32_t v, r[8];
	int i, n;

	reopen_a(&cfg);
	set_blocked(EP_A, EP_B, true);
	for (n = 0; n < 16; n++) {
		v = 100 + (uint32_t)n;
		if (fi_inject(fep(EP_A), &v, sizeof(v), to(EP_A, EP_B)))
			break;
	}
	/* One peer holds all but a quarter of a tx_size this small
	 * (tx_size_exhausted); the rest is for the others. */
	cr_assert_eq(n, 6, "%d injects queued, not 6", n);
	cr_assert_eq(fi_inject(fep(EP_A), &v, sizeof(v), to(EP_A, EP_B)),
		     -FI_EAGAIN, "and no more");
	cr_assert_eq(tx_inuse(EP_A), 6);
	set_blocked(EP_A, EP_B, false);
	pump();
	cr_assert_eq(tx_inuse(EP_A), 0);
	v = 106;
	cr_assert_eq(fi_inject(fep(EP_A), &v, sizeof(v), to(EP_A, EP_B)), 0,
		     "room again once the peer took them");
	for (i = 0; i < 8; i++) {
		r[i] = 0;
		cr_assert_eq(fi_recv(fep(EP_B), &r[i], sizeof(r[i]), NULL,
				     FI_ADDR_UNSPEC, RCTX(i)), 0);
	}
	pump();
	for (i = 0; i < 7; i++)
		cr_assert_eq(r[i], 100 + (uint32_t)i, "message %d: %u", i, r[i]);
	cr_assert_eq(eps[EP_B].nrecs, 7, "each once, nothing more");
	cr_assert_eq(eps[EP_A].nrecs, 0);
}

/*
 * A peer that takes nothing may hold all of tx_size but the reserve kept
 * for the others (UTIL_RDM_PEER_RESERVE), so that with what a transport
 * takes on its own (a socket, a queue in shared memory, a device's
 * credits) an application gets the tx_size injects tx_attr promises.
 * Each then arrives once, in order.
 */
Test(rdm_engine, inject_share_of_large_tx_size)
{
	struct ep_cfg cfg = { .tx_size = 1024 };
	static uint32_t r[FIFO_CAP];
	uint32_t v;
	int i, n, got = 0;

	reopen_a(&cfg);
	set_blocked(EP_A, EP_B, true);
	for (n = 0; n < 2048; n++) {
		v = (uint32_t)n;
		if (fi_inject(fep(EP_A), &v, sizeof(v), to(EP_A, EP_B)))
			break;
	}
	cr_assert_eq(n, 1024 - UTIL_RDM_PEER_RESERVE,
		     "%d injects queued for a peer that takes nothing", n);
	cr_assert_eq(fi_inject(fep(EP_A), &v, sizeof(v), to(EP_A, EP_B)),
		     -FI_EAGAIN);
	set_blocked(EP_A, EP_B, false);
	/* The mock's queue holds FIFO_CAP: take them in rounds. */
	while (got < n) {
		for (i = 0; i < FIFO_CAP && got + i < n; i++)
			cr_assert_eq(fi_recv(fep(EP_B), &r[i], sizeof(r[i]),
					     NULL, FI_ADDR_UNSPEC, RCTX(i)),
				     0);
		pump();
		for (i = 0; i < FIFO_CAP && got < n; i++, got++)
			cr_assert_eq(r[i], (uint32_t)got, "message %d: %u",
				     got, r[i]);
	}
	cr_assert_eq(tx_inuse(EP_A), 0);
	cr_assert_eq(eps[EP_A].nrecs, 0);
}

/*
 * Queued injects to a peer found gone end without a CQ entry (they have
 * no context; their callers were told they were sent), beside the
 * queued send's error, and never go out afterwards.
 */
Test(rdm_engine, inject_queued_peer_fails)
{
	struct mock_peer *p = peer_of(EP_A, EP_B);
	uint32_t v = 1, w = 2, r = 0;
	int err;

	set_blocked(EP_A, EP_B, true);
	cr_assert_eq(fi_inject(fep(EP_A), &v, sizeof(v), to(EP_A, EP_B)), 0);
	cr_assert_eq(fi_send(fep(EP_A), &w, sizeof(w), NULL, to(EP_A, EP_B),
			     CTX(0)), 0);
	cr_assert_eq(fi_inject(fep(EP_A), &v, sizeof(v), to(EP_A, EP_B)), 0);
	cr_assert_eq(util_rdm_fail_peer(&eps[EP_A].rdm, &p->p, FI_EHOSTUNREACH),
		     3);
	cr_assert_eq(tx_inuse(EP_A), 0);
	collect(EP_A);
	cr_assert_eq(eps[EP_A].nrecs, 1, "the send's error alone");
	cr_assert_eq(count_ctx(EP_A, CTX(0), &err), 1);
	cr_assert_eq(err, FI_EHOSTUNREACH);
	set_blocked(EP_A, EP_B, false);
	cr_assert_eq(fi_recv(fep(EP_B), &r, sizeof(r), NULL, FI_ADDR_UNSPEC,
			     RCTX(0)), 0);
	pump();
	cr_assert_eq(eps[EP_B].count, 0);
	cr_assert_eq(eps[EP_B].nrecs, 0, "nothing failed went out");
}

/*
 * The start of a close hands queued injects over while the peer takes
 * them (util_rdm_ep_linger), and gives up on a peer that takes nothing
 * within UTIL_RDM_LINGER_MS.  Sends with a completion wait for nobody:
 * the close cancels them.
 */
Test(rdm_engine, inject_linger_at_close, .timeout = 60)
{
	uint32_t v, r[4] = { 0 };
	int i;

	/* A peer that takes them: they go before the close goes on. */
	set_blocked(EP_A, EP_B, true);
	for (i = 0; i < 3; i++) {
		v = 200 + (uint32_t)i;
		cr_assert_eq(fi_inject(fep(EP_A), &v, sizeof(v),
				       to(EP_A, EP_B)), 0);
	}
	cr_assert_eq(eps[EP_B].count, 0);
	set_blocked(EP_A, EP_B, false);
	util_rdm_ep_linger(&eps[EP_A].rdm);
	cr_assert_eq(eps[EP_B].count, 3, "handed over at close");
	cr_assert_eq(tx_inuse(EP_A), 0);
	ep_close(EP_A);
	for (i = 0; i < 4; i++)
		cr_assert_eq(fi_recv(fep(EP_B), &r[i], sizeof(r[i]), NULL,
				     FI_ADDR_UNSPEC, RCTX(i)), 0);
	pump();
	for (i = 0; i < 3; i++)
		cr_assert_eq(r[i], 200 + (uint32_t)i);
	cr_assert_eq(eps[EP_B].nrecs, 3);

	/* Nothing quiet queued: the close does not wait, even for a peer
	 * that takes nothing. */
	ep_open(EP_A, &(struct ep_cfg){ 0 });
	set_blocked(EP_A, EP_B, true);
	cr_assert_eq(fi_send(fep(EP_A), &v, sizeof(v), NULL, to(EP_A, EP_B),
			     CTX(0)), 0);
	util_rdm_ep_linger(&eps[EP_A].rdm);
	cr_assert_eq(tx_inuse(EP_A), 1, "the send still waits");

	/* A peer that takes nothing: the close goes on without them
	 * (after UTIL_RDM_LINGER_MS), and they never go out. */
	cr_assert_eq(fi_inject(fep(EP_A), &v, sizeof(v), to(EP_A, EP_B)), 0);
	util_rdm_ep_linger(&eps[EP_A].rdm);
	cr_assert_eq(tx_inuse(EP_A), 2);
	ep_close(EP_A);
	pump();
	cr_assert_eq(eps[EP_B].count, 0, "nothing more reached B");
	cr_assert_eq(eps[EP_B].nrecs, 3);
}

Test(rdm_engine, queued_inject_flag_copies_buffer)
{
	uint32_t v = 77, r = 0;
	struct iovec iov = { &v, sizeof(v) };
	struct fi_msg m = {
		.msg_iov = &iov, .iov_count = 1, .addr = to(EP_A, EP_B),
		.context = CTX(0),
	};

	set_blocked(EP_A, EP_B, true);
	cr_assert_eq(fi_sendmsg(fep(EP_A), &m, FI_INJECT | FI_COMPLETION), 0);
	v = 0; /* FI_INJECT: the buffer is ours again */
	set_blocked(EP_A, EP_B, false);
	cr_assert_eq(fi_recv(fep(EP_B), &r, sizeof(r), NULL, FI_ADDR_UNSPEC,
			     RCTX(0)), 0);
	pump();
	cr_assert_eq(r, 77);
	cr_assert_eq(count_ctx(EP_A, CTX(0), NULL), 1);
}

Test(rdm_engine, tx_size_exhausted)
{
	struct ep_cfg cfg = { .tx_size = 4 };
	uint32_t v[6] = { 0, 1, 2, 3, 4, 5 }, r[6] = { 0 };
	int i;

	reopen_a(&cfg);
	set_blocked(EP_A, EP_B, true);
	for (i = 0; i < 3; i++)
		cr_assert_eq(fi_send(fep(EP_A), &v[i], sizeof(v[i]), NULL,
				     to(EP_A, EP_B), CTX(i)), 0);
	/* One peer holds at most three quarters of them: the rest is for
	 * the others. */
	cr_assert_eq(fi_send(fep(EP_A), &v[3], sizeof(v[3]), NULL,
			     to(EP_A, EP_B), CTX(3)), -FI_EAGAIN,
		     "a peer holds three quarters of tx_size transmits");
	cr_assert_eq(tx_inuse(EP_A), 3);
	set_blocked(EP_A, EP_B, false);
	pump();
	cr_assert_eq(tx_inuse(EP_A), 0);
	for (i = 3; i < 6; i++)
		cr_assert_eq(fi_send(fep(EP_A), &v[i], sizeof(v[i]), NULL,
				     to(EP_A, EP_B), CTX(i)), 0);
	for (i = 0; i < 6; i++)
		cr_assert_eq(fi_recv(fep(EP_B), &r[i], sizeof(r[i]), NULL,
				     FI_ADDR_UNSPEC, RCTX(i)), 0);
	pump();
	for (i = 0; i < 6; i++) {
		cr_assert_eq(r[i], (uint32_t)i);
		cr_assert_eq(count_ctx(EP_A, CTX(i), NULL), 1);
	}
	cr_assert_eq(eps[EP_A].nrecs, 6);
}

Test(rdm_engine, tx_size_counts_rendezvous)
{
	struct ep_cfg cfg = { .tx_size = 2 };
	static uint8_t sbuf[3][BIG], rbuf[3][BIG];
	int i;

	reopen_a(&cfg);
	for (i = 0; i < 2; i++)
		cr_assert_eq(fi_send(fep(EP_A), sbuf[i], BIG, NULL,
				     to(EP_A, EP_B), CTX(i)), 0);
	cr_assert_eq(fi_send(fep(EP_A), sbuf[2], BIG, NULL, to(EP_A, EP_B),
			     CTX(2)), -FI_EAGAIN);
	for (i = 0; i < 2; i++)
		cr_assert_eq(fi_recv(fep(EP_B), rbuf[i], BIG, NULL,
				     FI_ADDR_UNSPEC, RCTX(i)), 0);
	pump();
	cr_assert_eq(fi_send(fep(EP_A), sbuf[2], BIG, NULL, to(EP_A, EP_B),
			     CTX(2)), 0);
	cr_assert_eq(fi_recv(fep(EP_B), rbuf[2], BIG, NULL, FI_ADDR_UNSPEC,
			     RCTX(2)), 0);
	pump();
	cr_assert_eq(eps[EP_A].nrecs, 3);
	cr_assert_eq(eps[EP_B].nrecs, 3);
}

/* ---- dead peer ------------------------------------------------------------ */

Test(rdm_engine, fail_peer)
{
	static uint8_t big[BIG], rbuf[BIG];
	uint32_t d = 5, s[3] = { 6, 7, 8 }, r = 0, r2 = 0;
	struct iovec iov = { &d, sizeof(d) };
	struct fi_msg m = {
		.msg_iov = &iov, .iov_count = 1, .addr = to(EP_A, EP_B),
		.context = CTX(1),
	};
	struct mock_peer *p = peer_of(EP_A, EP_B);
	int i, err;

	/* Handed over: a rendezvous, an acknowledged eager send. */
	cr_assert_eq(fi_send(fep(EP_A), big, BIG, NULL, to(EP_A, EP_B),
			     CTX(0)), 0);
	cr_assert_eq(fi_sendmsg(fep(EP_A), &m,
				FI_DELIVERY_COMPLETE | FI_COMPLETION), 0);
	/* Queued: two sends the transport refused. */
	set_blocked(EP_A, EP_B, true);
	for (i = 0; i < 2; i++)
		cr_assert_eq(fi_send(fep(EP_A), &s[i], sizeof(s[i]), NULL,
				     to(EP_A, EP_B), CTX(2 + i)), 0);
	cr_assert_eq(eps[EP_B].count, 2);
	cr_assert_eq(util_rdm_fail_peer(&eps[EP_A].rdm, &p->p, FI_EHOSTUNREACH),
		     4);
	cr_assert_eq(util_rdm_fail_peer(&eps[EP_A].rdm, &p->p, FI_EHOSTUNREACH),
		     0, "nothing is failed twice");
	cr_assert_eq(tx_inuse(EP_A), 0);
	collect(EP_A);
	for (i = 0; i < 4; i++) {
		cr_assert_eq(count_ctx(EP_A, CTX(i), &err), 1,
			     "transmit %d completed once", i);
		cr_assert_eq(err, FI_EHOSTUNREACH);
		cr_assert(rec_of(EP_A, CTX(i))->flags & FI_SEND);
	}
	cr_assert_eq(eps[EP_A].nrecs, 4);

	/* What the transport had carried still shows up at B: the fetch
	 * and the acknowledgement find nothing at A any more. */
	cr_assert_eq(fi_recv(fep(EP_B), rbuf, BIG, NULL, FI_ADDR_UNSPEC,
			     RCTX(0)), 0);
	cr_assert_eq(fi_recv(fep(EP_B), &r, sizeof(r), NULL, FI_ADDR_UNSPEC,
			     RCTX(1)), 0);
	pump();
	cr_assert_eq(rec_of(EP_B, RCTX(0))->err, FI_EIO);
	cr_assert_eq(r, 5);
	cr_assert_eq(mock.ack_calls, 1);
	cr_assert_eq(eps[EP_A].nrecs, 4, "a stale acknowledgement completes nothing");

	/* The peer comes back: a later send works. */
	set_blocked(EP_A, EP_B, false);
	cr_assert_eq(fi_send(fep(EP_A), &s[2], sizeof(s[2]), NULL,
			     to(EP_A, EP_B), CTX(4)), 0);
	cr_assert_eq(fi_recv(fep(EP_B), &r2, sizeof(r2), NULL, FI_ADDR_UNSPEC,
			     RCTX(2)), 0);
	pump();
	cr_assert_eq(r2, 8, "the failed sends never went out");
	cr_assert_eq(count_ctx(EP_A, CTX(4), &err), 1);
	cr_assert_eq(err, 0);
	cr_assert_eq(eps[EP_A].nrecs, 5);
}

Test(rdm_engine, fail_dest)
{
	static uint8_t big[BIG];
	uint32_t v = 1;
	int err;

	cr_assert_eq(fi_send(fep(EP_A), big, BIG, NULL, to(EP_A, EP_B),
			     CTX(0)), 0);
	set_blocked(EP_A, EP_B, true);
	cr_assert_eq(fi_send(fep(EP_A), &v, sizeof(v), NULL, to(EP_A, EP_B),
			     CTX(1)), 0);
	cr_assert_eq(util_rdm_fail_dest(&eps[EP_A].rdm, to(EP_A, EP_B),
					FI_ECONNRESET), 2);
	collect(EP_A);
	cr_assert_eq(count_ctx(EP_A, CTX(0), &err), 1);
	cr_assert_eq(err, FI_ECONNRESET);
	cr_assert_eq(count_ctx(EP_A, CTX(1), &err), 1);
	cr_assert_eq(err, FI_ECONNRESET);
	cr_assert_eq(eps[EP_A].nrecs, 2);
}

/* ---- generations ---------------------------------------------------------- */

/* The tx id of the last message in B's FIFO. */
static uint64_t last_wire_id(void)
{
	struct mock_ep *b = &eps[EP_B];

	cr_assert_gt(b->count, 0);
	return b->fifo[(b->head + b->count - 1) % FIFO_CAP].hdr.tx_id;
}

static void send_dc(uint32_t *v, void *ctx)
{
	struct iovec iov = { v, sizeof(*v) };
	struct fi_msg m = {
		.msg_iov = &iov, .iov_count = 1, .addr = to(EP_A, EP_B),
		.context = ctx,
	};

	cr_assert_eq(fi_sendmsg(fep(EP_A), &m,
				FI_DELIVERY_COMPLETE | FI_COMPLETION), 0);
}

Test(rdm_engine, generations)
{
	struct util_rdm_ep *a = &eps[EP_A].rdm;
	uint32_t v = 1, r = 0;
	uint64_t old_id, new_id, forged;
	struct util_rdm_tx *tx;

	send_dc(&v, CTX(0));
	old_id = last_wire_id();
	cr_assert_not_null(util_rdm_tx_of(a, old_id));
	eps[EP_B].count = 0; /* lost on the way: we answer by hand */
	util_rdm_tx_acked(a, old_id, 0);
	collect(EP_A);
	cr_assert_eq(count_ctx(EP_A, CTX(0), NULL), 1);
	cr_assert_null(util_rdm_tx_of(a, old_id), "finished: no longer live");
	util_rdm_tx_acked(a, old_id, 0);
	collect(EP_A);
	cr_assert_eq(eps[EP_A].nrecs, 1, "a duplicate completes nothing");

	/* The same request is reused with a new generation. */
	send_dc(&v, CTX(1));
	new_id = last_wire_id();
	cr_assert_eq(new_id & UINT32_MAX, old_id & UINT32_MAX);
	cr_assert_neq(new_id, old_id);
	tx = util_rdm_tx_of(a, new_id);
	cr_assert_not_null(tx);
	cr_assert_eq(tx->context, CTX(1));
	cr_assert_null(util_rdm_tx_of(a, old_id));
	util_rdm_tx_acked(a, old_id, 0);
	forged = (new_id & UINT32_MAX) |
		 ((uint64_t)((uint32_t)(new_id >> 32) ^ 0x5a5a1234u) << 32);
	cr_assert_null(util_rdm_tx_of(a, forged));
	util_rdm_tx_acked(a, forged, 0);
	cr_assert_null(util_rdm_tx_of(a, (uint64_t)0x7777 << 32 | 12345));
	util_rdm_tx_acked(a, (uint64_t)0x7777 << 32 | 12345, 0);
	collect(EP_A);
	cr_assert_eq(eps[EP_A].nrecs, 1, "stale and forged ids complete nothing");

	/* The live one, through the transport. */
	cr_assert_eq(fi_recv(fep(EP_B), &r, sizeof(r), NULL, FI_ADDR_UNSPEC,
			     RCTX(0)), 0);
	pump();
	cr_assert_eq(count_ctx(EP_A, CTX(1), NULL), 1);
	util_rdm_tx_acked(a, new_id, 0);
	collect(EP_A);
	cr_assert_eq(count_ctx(EP_A, CTX(1), NULL), 1, "acknowledged once");
	cr_assert_eq(eps[EP_A].nrecs, 2);
	cr_assert_eq(tx_inuse(EP_A), 0);
}

/* ---- completion levels ---------------------------------------------------- */

Test(rdm_engine, delivery_complete_waits_for_ack)
{
	uint32_t v = 99, r = 0;

	send_dc(&v, CTX(0));
	collect(EP_A);
	cr_assert_eq(eps[EP_A].nrecs, 0);
	/* Arrived but unexpected: not delivered yet. */
	collect(EP_B);
	cr_assert_eq(eps[EP_B].count, 0);
	cr_assert_eq(mock.ack_calls, 0);
	collect(EP_A);
	cr_assert_eq(eps[EP_A].nrecs, 0, "no completion before delivery");
	cr_assert_eq(fi_recv(fep(EP_B), &r, sizeof(r), NULL, FI_ADDR_UNSPEC,
			     RCTX(0)), 0);
	cr_assert_eq(r, 99);
	cr_assert_eq(mock.ack_calls, 1);
	collect(EP_A);
	cr_assert_eq(count_ctx(EP_A, CTX(0), NULL), 1);
	cr_assert_eq(rec_of(EP_A, CTX(0))->err, 0);
	pump();
	cr_assert_eq(eps[EP_A].nrecs, 1);

	/* Without FI_DELIVERY_COMPLETE it completes at once. */
	cr_assert_eq(fi_send(fep(EP_A), &v, sizeof(v), NULL, to(EP_A, EP_B),
			     CTX(1)), 0);
	collect(EP_A);
	cr_assert_eq(count_ctx(EP_A, CTX(1), NULL), 1);
}

/* ---- unexpected bound ----------------------------------------------------- */

Test(rdm_engine, unexp_max_holds_back)
{
	struct ep_cfg cfg = {
		.unexp_max = 3 * (sizeof(struct util_rdm_unexp) + 64),
	};
	uint32_t v[10], r[10];
	int i;

	ep_close(EP_B);
	ep_open(EP_B, &cfg);
	for (i = 0; i < 10; i++) {
		v[i] = 0xa000 + i;
		r[i] = 0;
		cr_assert_eq(fi_send(fep(EP_A), &v[i], sizeof(v[i]), NULL,
				     to(EP_A, EP_B), CTX(i)), 0);
	}
	pump();
	cr_assert_eq(eps[EP_A].nrecs, 10);
	cr_assert_eq(eps[EP_B].count, 7, "the transport keeps what the engine refused");
	cr_assert_leq(eps[EP_B].rdm.rxq->unexp_bytes, cfg.unexp_max);
	cr_assert_eq(util_rdm_msg_arrived(&eps[EP_B].xp, &(struct util_rdm_msg){
			     .op = UTIL_RDM_MSG, .len = 4, .payload = &v[0],
			     .src = to(EP_B, EP_A) }),
		     -FI_EAGAIN);
	for (i = 0; i < 10; i++) {
		cr_assert_eq(fi_recv(fep(EP_B), &r[i], sizeof(r[i]), NULL,
				     FI_ADDR_UNSPEC, RCTX(i)), 0);
		pump();
	}
	for (i = 0; i < 10; i++) {
		cr_assert_eq(r[i], 0xa000u + i, "receive %d got %#x", i, r[i]);
		cr_assert_eq(count_ctx(EP_B, RCTX(i), NULL), 1);
	}
	cr_assert_eq(eps[EP_B].nrecs, 10);
	cr_assert_eq(eps[EP_B].count, 0);
	cr_assert_eq(eps[EP_B].rdm.rxq->unexp_bytes, 0);
}

/* ---- flush ----------------------------------------------------------------- */

Test(rdm_engine, flush_rx)
{
	uint32_t r[3], v = 3;
	int i, err;

	for (i = 0; i < 2; i++)
		cr_assert_eq(fi_recv(fep(EP_B), &r[i], sizeof(r[i]), NULL,
				     FI_ADDR_UNSPEC, RCTX(i)), 0);
	cr_assert_eq(fi_trecv(fep(EP_B), &r[2], sizeof(r[2]), NULL,
			      FI_ADDR_UNSPEC, 1, 0, RCTX(2)), 0);
	util_rdm_flush_rx(&eps[EP_B].rdm, FI_ECANCELED);
	collect(EP_B);
	for (i = 0; i < 3; i++) {
		cr_assert_eq(count_ctx(EP_B, RCTX(i), &err), 1);
		cr_assert_eq(err, FI_ECANCELED);
	}
	cr_assert(rec_of(EP_B, RCTX(2))->flags & FI_TAGGED);
	cr_assert_eq(eps[EP_B].nrecs, 3);
	/* Nothing is posted any more: a message is unexpected. */
	cr_assert_eq(fi_send(fep(EP_A), &v, sizeof(v), NULL, to(EP_A, EP_B),
			     CTX(0)), 0);
	pump();
	cr_assert_eq(eps[EP_B].nrecs, 3);
	cr_assert_gt(eps[EP_B].rdm.rxq->unexp_bytes, 0);
}

/* ---- connected endpoints --------------------------------------------------- */

Test(rdm_engine, connected_any_dest)
{
	struct ep_cfg cfg = { .connected = true };
	struct sockaddr_in b = addr_of_idx(EP_B);
	struct util_peer *peer;
	uint32_t v[2] = { 11, 12 }, r[2] = { 0 };
	static uint8_t big[BIG], rbuf[BIG];

	ep_open(EP_C, &cfg);
	cr_assert_eq(util_peer_add(&eps[EP_C].rdm.peers, &b, 0, &peer), 0);
	eps[EP_C].rdm.peers.fixed = peer;
	cr_assert_eq(((struct mock_peer *)peer)->to, EP_B);
	fill(big, BIG, 12);
	cr_assert_eq(fi_send(fep(EP_C), &v[0], sizeof(v[0]), NULL, 12345,
			     CTX(0)), 0);
	cr_assert_eq(fi_send(fep(EP_C), &v[1], sizeof(v[1]), NULL,
			     FI_ADDR_UNSPEC, CTX(1)), 0);
	cr_assert_eq(fi_send(fep(EP_C), big, BIG, NULL, FI_ADDR_NOTAVAIL,
			     CTX(2)), 0);
	cr_assert_eq(fi_recv(fep(EP_B), &r[0], sizeof(r[0]), NULL,
			     FI_ADDR_UNSPEC, RCTX(0)), 0);
	cr_assert_eq(fi_recv(fep(EP_B), &r[1], sizeof(r[1]), NULL,
			     FI_ADDR_UNSPEC, RCTX(1)), 0);
	cr_assert_eq(fi_recv(fep(EP_B), rbuf, BIG, NULL, FI_ADDR_UNSPEC,
			     RCTX(2)), 0);
	pump();
	cr_assert_eq(r[0], 11);
	cr_assert_eq(r[1], 12);
	cr_assert(check(rbuf, BIG, 12));
	cr_assert_eq(eps[EP_C].nrecs, 3);
	cr_assert_eq(count_ctx(EP_C, CTX(2), NULL), 1);
	/* B does not know C: the source is not available. */
	cr_assert_eq(rec_of(EP_B, RCTX(0))->src, FI_ADDR_NOTAVAIL);
	/* Back-pressure on the one peer queues as on any other. */
	((struct mock_peer *)peer)->blocked = true;
	cr_assert_eq(fi_send(fep(EP_C), &v[0], sizeof(v[0]), NULL, 0,
			     CTX(3)), 0);
	/* And an inject waits behind it. */
	cr_assert_eq(fi_inject(fep(EP_C), &v[1], sizeof(v[1]), 0), 0);
	((struct mock_peer *)peer)->blocked = false;
	pump();
	cr_assert_eq(count_ctx(EP_C, CTX(3), NULL), 1);
	cr_assert_eq(eps[EP_B].rdm.rxq->unexp_bytes > 0, true);
}
