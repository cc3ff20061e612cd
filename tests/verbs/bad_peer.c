/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A hostile peer of a verbs RDM endpoint: a raw librdmacm client that
 * connects with the provider's own connect data and then sends messages a
 * weft peer never would.  The endpoint must neither deliver nor crash on
 * them, and must still take the honest message that follows:
 *  - an eager message whose length field claims about 2^64 bytes (a sum
 *    of header size and length would wrap);
 *  - an eager message longer than what arrived;
 *  - a message of another protocol version;
 *  - a rendezvous announcement with no segments, and one with too many;
 *  - atomics that do not add up (shorter than their own header, a kind,
 *    op or datatype that does not go together, too long, operands
 *    missing) or name memory they may not touch (a key never issued, a
 *    range past the registration): each is answered with an error and
 *    changes nothing, and an honest one after them is applied.
 * Before that, connection requests in the earlier wire versions (1: 32
 * bytes of private data, no fence region; 2: no atomics applied by the
 * target) must be refused.  After it,
 * the endpoint writes into the peer, which named a fence region with a
 * key that does not exist: over iWARP, where every write is followed by
 * a read of that region, the write must fail at the endpoint (not
 * succeed, not hang); over RoCE, where there is no fence, it lands.
 * Run in the test VM by tests/verbs/bad-peer.sh: bad_peer DEVICE_IP.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>

/* The wire format of docs/verbs-protocol.md, version 3. */
#define WIRE_VERSION 3
struct hdr {
	uint8_t version, op;
	uint16_t flags;
	uint32_t status;
	uint16_t credits, reserved;
	uint32_t reserved2;
	uint64_t tag, data, tx_id, len;
};
struct cm_priv {
	uint8_t version, reserved;
	uint16_t addr_len;
	uint8_t addr[28];
	uint64_t fence_addr; /* a region of ours the target reads */
	uint32_t fence_rkey, reserved2; /* here: a key never issued */
} __attribute__((packed));
struct amo {
	uint64_t addr;
	uint32_t key;
	uint8_t kind, op, datatype, reserved;
};
_Static_assert(sizeof(struct cm_priv) == 48, "private data");
_Static_assert(sizeof(struct hdr) == 48, "header");
_Static_assert(sizeof(struct amo) == 16, "atomic request");
enum { OP_MSG = 1, OP_RTS = 2, OP_HELLO = 5, OP_ATOMIC = 8,
       OP_ATOMIC_RESP = 9 };
enum { AMO_WRITE = 0, AMO_FETCH = 1, AMO_COMPARE = 2 };
#define NRECV 8 /* receives of 512 bytes posted for what the target sends */

static int failures;
#define FAIL(...)                                                              \
	do {                                                                   \
		printf("FAIL: " __VA_ARGS__);                                  \
		printf("\n");                                                  \
		failures++;                                                    \
	} while (0)
#define CHECK(x)                                                               \
	do {                                                                   \
		int r_ = (int)(x);                                             \
		if (r_) {                                                      \
			printf("FAIL: %s: %d\n", #x, r_);                      \
			exit(1);                                               \
		}                                                              \
	} while (0)

static struct fid_cq *cq;
static struct fid_ep *ep;

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* Drive the target for ms; the completion it gave, if any (1), or 0. */
static int target_poll(int ms, struct fi_cq_tagged_entry *e)
{
	uint64_t end = now_ms() + (uint64_t)ms;
	struct fi_cq_err_entry err;
	ssize_t n;

	do {
		n = fi_cq_read(cq, e, 1);
		if (n == 1)
			return 1;
		if (n == -FI_EAVAIL) {
			memset(&err, 0, sizeof(err));
			fi_cq_readerr(cq, &err, 0);
			FAIL("error completion at the target: %d", err.err);
			return 0;
		}
	} while (now_ms() < end);
	return 0;
}

/* Wait for one rdma_cm event of type want, driving the target. */
static void cm_wait(struct rdma_event_channel *ch, enum rdma_cm_event_type want)
{
	struct fi_cq_tagged_entry e;
	struct rdma_cm_event *ev;
	uint64_t end = now_ms() + 20000;

	while (now_ms() < end) {
		if (!rdma_get_cm_event(ch, &ev)) {
			enum rdma_cm_event_type got = ev->event;

			rdma_ack_cm_event(ev);
			if (got != want) {
				printf("FAIL: rdma_cm event %s, want %s\n",
				       rdma_event_str(got), rdma_event_str(want));
				exit(1);
			}
			return;
		}
		if (target_poll(1, &e))
			FAIL("a completion while connecting");
	}
	printf("FAIL: no %s\n", rdma_event_str(want));
	exit(1);
}

/*
 * Send hdr + amo + n bytes (sbuf) as an ATOMIC with tx_id id, drive the
 * target until its ATOMIC_RESP for id arrives (reposting each receive),
 * and return its status (-1: none came, or it was malformed); *old gets
 * the first 8 bytes fetched.
 */
static int amo_ask(struct ibv_qp *qp, struct ibv_cq *scq, struct ibv_mr *mr,
		   char *sbuf, uint32_t n, struct ibv_mr *pmr, char *pbuf,
		   uint64_t id, uint64_t *old)
{
	struct ibv_sge sge = { (uintptr_t)sbuf, n, mr->lkey };
	struct ibv_send_wr wr = { 0 }, *bad;
	struct fi_cq_tagged_entry e;
	bool sent = false;
	int status = -1;
	uint64_t end;
	struct ibv_wc wc;

	((struct hdr *)sbuf)->tx_id = id;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_SEND;
	wr.send_flags = IBV_SEND_SIGNALED;
	CHECK(ibv_post_send(qp, &wr, &bad));
	end = now_ms() + 5000;
	while ((!sent || status < 0) && now_ms() < end) {
		const struct hdr *r;
		struct ibv_sge rs;
		struct ibv_recv_wr rwr = { .sg_list = &rs, .num_sge = 1 },
				   *rbad;

		if (ibv_poll_cq(scq, 1, &wc) != 1) {
			if (target_poll(1, &e))
				FAIL("a completion at the target for an atomic");
			continue;
		}
		if (wc.status != IBV_WC_SUCCESS) {
			FAIL("atomic %llu: %s", (unsigned long long)id,
			     ibv_wc_status_str(wc.status));
			return -1;
		}
		if (!(wc.opcode & IBV_WC_RECV)) {
			sent = true;
			continue;
		}
		r = (const struct hdr *)(pbuf + wc.wr_id * 512);
		if (r->op == OP_ATOMIC_RESP && r->tx_id == id &&
		    wc.byte_len >= sizeof(*r) + r->len) {
			status = (int)r->status;
			if (r->len >= 8 && old)
				memcpy(old, r + 1, 8);
		}
		rs.addr = (uintptr_t)pbuf + wc.wr_id * 512;
		rs.length = 512;
		rs.lkey = pmr->lkey;
		rwr.wr_id = wc.wr_id;
		CHECK(ibv_post_recv(qp, &rwr, &rbad));
	}
	return status;
}

int main(int argc, char **argv)
{
	static char rbuf[1 << 20], sbuf[8256], tbuf[4096], pbuf[NRECV * 512];
	static uint64_t abuf[8]; /* the target's memory for atomics */
	struct fid_mr *amr;
	uint64_t old;
	static char wbuf[64] = "written by the target, fenced";
	struct fi_info *hints, *info;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_av *av;
	struct fi_av_attr av_attr = { .type = FI_AV_MAP };
	struct fi_cq_attr cq_attr = { .format = FI_CQ_FORMAT_TAGGED };
	struct fi_cq_tagged_entry e;
	struct sockaddr_in tgt, me;
	size_t len = sizeof(tgt);
	struct rdma_event_channel *ch;
	struct rdma_cm_id *id;
	struct ibv_qp_init_attr qa = { 0 }, qa_old = { 0 };
	struct rdma_conn_param cp = { 0 };
	struct cm_priv pd = { .version = WIRE_VERSION };
	struct ibv_mr *mr, *tmr, *pmr;
	struct fid_mr *wmr;
	struct fi_cq_err_entry err;
	fi_addr_t peer;
	bool iwarp;
	ssize_t n;
	uint64_t end;
	struct ibv_cq *scq;
	struct ibv_wc wc;
	struct fi_context2 rctx;
	struct hdr *h = (struct hdr *)sbuf;
	int i, flags;

	if (argc != 2) {
		fprintf(stderr, "usage: %s DEVICE_IP\n", argv[0]);
		return 2;
	}
	hints = fi_allocinfo();
	hints->ep_attr->type = FI_EP_RDM;
	hints->caps = FI_MSG | FI_RMA | FI_ATOMIC;
	hints->mode = FI_CONTEXT | FI_CONTEXT2;
	hints->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR |
				      FI_MR_ALLOCATED | FI_MR_PROV_KEY;
	hints->fabric_attr->prov_name = strdup("verbs");
	if (fi_getinfo(FI_VERSION(1, 17), argv[1], NULL, FI_SOURCE, hints,
		       &info)) {
		printf("SKIP: no verbs RDM endpoint on %s\n", argv[1]);
		return 77;
	}
	CHECK(fi_fabric(info->fabric_attr, &fabric, NULL));
	CHECK(fi_domain(fabric, info, &domain, NULL));
	CHECK(fi_av_open(domain, &av_attr, &av, NULL));
	CHECK(fi_cq_open(domain, &cq_attr, &cq, NULL));
	CHECK(fi_endpoint(domain, info, &ep, NULL));
	CHECK(fi_ep_bind(ep, &av->fid, 0));
	CHECK(fi_ep_bind(ep, &cq->fid, FI_TRANSMIT | FI_RECV));
	CHECK(fi_enable(ep));
	CHECK(fi_getname(&ep->fid, &tgt, &len));
	/* Receives larger than any bounce buffer: a wrong length would read
	 * past the one the message came in. */
	CHECK(fi_recv(ep, rbuf, sizeof(rbuf), NULL, FI_ADDR_UNSPEC, &rctx));
	CHECK(fi_mr_reg(domain, wbuf, sizeof(wbuf), FI_WRITE, 0, 0, 0, &wmr,
			NULL));
	CHECK(fi_mr_reg(domain, abuf, sizeof(abuf),
			FI_REMOTE_READ | FI_REMOTE_WRITE, 0, 0, 0, &amr, NULL));

	ch = rdma_create_event_channel();
	CHECK(!ch);
	flags = fcntl(ch->fd, F_GETFL);
	CHECK(fcntl(ch->fd, F_SETFL, flags | O_NONBLOCK) < 0);
	memset(&me, 0, sizeof(me));
	me.sin_family = AF_INET;
	me.sin_addr = tgt.sin_addr;

	/* Peers of the earlier wire versions (1: 32 bytes of private
	 * data, no fence region; 2: the same 48 bytes, but no atomics
	 * applied by the target) are refused, not half understood. */
	for (i = 1; i < WIRE_VERSION; i++) {
		struct rdma_cm_id *old_id;
		struct cm_priv prev = { .version = (uint8_t)i };

		CHECK(rdma_create_id(ch, &old_id, NULL, RDMA_PS_TCP));
		CHECK(rdma_resolve_addr(old_id, (struct sockaddr *)&me,
					(struct sockaddr *)&tgt, 5000));
		cm_wait(ch, RDMA_CM_EVENT_ADDR_RESOLVED);
		CHECK(rdma_resolve_route(old_id, 5000));
		cm_wait(ch, RDMA_CM_EVENT_ROUTE_RESOLVED);
		me.sin_port = htons(9);
		prev.addr_len = sizeof(me);
		memcpy(prev.addr, &me, sizeof(me));
		me.sin_port = 0;
		cp.private_data = &prev;
		cp.private_data_len = i == 1 ? 32 : sizeof(prev);
		cp.responder_resources = cp.initiator_depth = 1;
		cp.retry_count = 7;
		cp.rnr_retry_count = 7;
		memset(&qa_old, 0, sizeof(qa_old));
		qa_old.qp_type = IBV_QPT_RC;
		qa_old.cap.max_send_wr = qa_old.cap.max_recv_wr = 4;
		qa_old.cap.max_send_sge = qa_old.cap.max_recv_sge = 1;
		CHECK(rdma_create_qp(old_id, NULL, &qa_old));
		CHECK(rdma_connect(old_id, &cp));
		cm_wait(ch, RDMA_CM_EVENT_REJECTED);
		printf("ok: a peer of wire version %d is refused\n", i);
		rdma_destroy_qp(old_id);
		rdma_destroy_id(old_id);
		memset(&cp, 0, sizeof(cp));
	}
	CHECK(rdma_create_id(ch, &id, NULL, RDMA_PS_TCP));
	CHECK(rdma_resolve_addr(id, (struct sockaddr *)&me,
				(struct sockaddr *)&tgt, 5000));
	cm_wait(ch, RDMA_CM_EVENT_ADDR_RESOLVED);
	CHECK(rdma_resolve_route(id, 5000));
	cm_wait(ch, RDMA_CM_EVENT_ROUTE_RESOLVED);
	scq = ibv_create_cq(id->verbs, 64, NULL, NULL, 0);
	CHECK(!scq);
	qa.send_cq = qa.recv_cq = scq;
	qa.qp_type = IBV_QPT_RC;
	qa.cap.max_send_wr = qa.cap.max_recv_wr = 16;
	qa.cap.max_send_sge = qa.cap.max_recv_sge = 1;
	qa.sq_sig_all = 1;
	CHECK(rdma_create_qp(id, NULL, &qa));
	mr = ibv_reg_mr(id->pd, sbuf, sizeof(sbuf), IBV_ACCESS_LOCAL_WRITE);
	CHECK(!mr);
	/* What the target writes into, and receives for what it may send
	 * (a credit return): iWARP has no receiver-not-ready retry. */
	tmr = ibv_reg_mr(id->pd, tbuf, sizeof(tbuf),
			 IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	CHECK(!tmr);
	pmr = ibv_reg_mr(id->pd, pbuf, sizeof(pbuf), IBV_ACCESS_LOCAL_WRITE);
	CHECK(!pmr);
	for (i = 0; i < NRECV; i++) {
		struct ibv_sge sge = { (uintptr_t)pbuf + (uint64_t)i * 512, 512,
				       pmr->lkey };
		struct ibv_recv_wr rwr = { .wr_id = (uint64_t)i, .sg_list = &sge,
					   .num_sge = 1 },
				   *rbad;

		CHECK(ibv_post_recv(id->qp, &rwr, &rbad));
	}
	iwarp = id->verbs->device->transport_type == IBV_TRANSPORT_IWARP;
	/* Named by an address nobody listens at: the target never
	 * connects back, it answers on this connection. */
	me.sin_port = htons(9);
	pd.addr_len = sizeof(me);
	memcpy(pd.addr, &me, sizeof(me));
	CHECK(fi_av_insert(av, &me, 1, &peer, 0, NULL) != 1);
	pd.fence_addr = (uintptr_t)tbuf;
	pd.fence_rkey = tmr->rkey ^ 0x5a5a5a00; /* no region has it */
	cp.private_data = &pd;
	cp.private_data_len = sizeof(pd);
	cp.responder_resources = cp.initiator_depth = 1;
	cp.retry_count = 7;
	cp.rnr_retry_count = 7;
	CHECK(rdma_connect(id, &cp));
	cm_wait(ch, RDMA_CM_EVENT_ESTABLISHED);

	for (i = 0; i < 7; i++) {
		struct ibv_sge sge = { (uintptr_t)sbuf, 0, mr->lkey };
		struct ibv_send_wr wr = { 0 }, *bad;
		const char *what;

		memset(sbuf, 0, sizeof(sbuf));
		h->version = WIRE_VERSION;
		h->op = OP_MSG;
		h->credits = 0;
		sge.length = sizeof(*h) + 16;
		switch (i) {
		case 0: what = "HELLO"; h->op = OP_HELLO; sge.length = sizeof(*h); break;
		case 1: what = "length near 2^64"; h->len = UINT64_MAX - 40; break;
		case 2: what = "length past what arrived"; h->len = 4000; break;
		case 3: what = "another version"; h->version = 9; h->len = 16; break;
		case 4: what = "RTS with no segment"; h->op = OP_RTS; h->len = 1 << 20; break;
		case 5: what = "RTS with 1000 segments"; h->op = OP_RTS; h->len = 1 << 20;
			*(uint32_t *)(h + 1) = 1000; break;
		default: what = "an honest message"; h->len = 16;
			memcpy(h + 1, "honest payload!", 16); break;
		}
		wr.sg_list = &sge;
		wr.num_sge = 1;
		wr.opcode = IBV_WR_SEND;
		wr.send_flags = IBV_SEND_SIGNALED;
		CHECK(ibv_post_send(id->qp, &wr, &bad));
		for (;;) {
			if (ibv_poll_cq(scq, 1, &wc) == 1)
				break;
			target_poll(1, &e);
		}
		if (wc.status != IBV_WC_SUCCESS) {
			FAIL("%s: the send failed: %s", what,
			     ibv_wc_status_str(wc.status));
			break;
		}
		if (i < 6) {
			if (target_poll(200, &e))
				FAIL("%s was delivered: len %zu", what, e.len);
			else
				printf("ok: %s not delivered\n", what);
		} else if (!target_poll(5000, &e)) {
			FAIL("the honest message after them never came");
		} else if (e.len != 16 || memcmp(rbuf, "honest payload!", 16)) {
			FAIL("the honest message arrived wrong: len %zu", e.len);
		} else {
			printf("ok: the honest message arrived intact\n");
		}
	}

	/* Atomics: each bad one answered with an error, nothing changed;
	 * then an honest fetching sum applied. */
	abuf[0] = 7;
	for (i = 0; i < 8; i++) {
		struct amo *a = (struct amo *)(h + 1);
		uint32_t sz = sizeof(*h) + sizeof(*a) + 8;
		const char *what;
		int st;

		memset(sbuf, 0, sizeof(sbuf));
		h->version = WIRE_VERSION;
		h->op = OP_ATOMIC;
		h->len = 8;
		a->addr = (uintptr_t)abuf;
		a->key = (uint32_t)fi_mr_key(amr);
		a->kind = AMO_FETCH;
		a->op = FI_SUM;
		a->datatype = FI_UINT64;
		memcpy(a + 1, &(uint64_t){ 5 }, 8);
		switch (i) {
		case 0: what = "an atomic shorter than its header"; sz = sizeof(*h) + 8; break;
		case 1: what = "an atomic of kind 7"; a->kind = 7; break;
		case 2: what = "FI_BOR on FI_FLOAT"; a->op = FI_BOR; a->datatype = FI_FLOAT; h->len = 4; break;
		case 3: what = "an atomic of 5000 bytes"; h->len = 5000; sz = sizeof(*h) + sizeof(*a) + 5000; break;
		case 4: what = "a compare atomic without its compare values"; a->kind = AMO_COMPARE; a->op = FI_CSWAP; break;
		case 5: what = "an atomic with a key never issued"; a->key ^= 0x5a5a5a00; break;
		case 6: what = "an atomic past the registration"; a->addr += sizeof(abuf); break;
		default: what = "an honest fetching sum"; break;
		}
		old = ~0ULL;
		st = amo_ask(id->qp, scq, mr, sbuf, sz, pmr, pbuf,
			     1000 + (uint64_t)i, &old);
		if (i < 7) {
			if (st <= 0)
				FAIL("%s: answered %d, not an error", what, st);
			else if (abuf[0] != 7)
				FAIL("%s: the target's memory changed", what);
			else
				printf("ok: %s refused: %s\n", what,
				       fi_strerror(st));
		} else if (st != 0 || old != 7 || abuf[0] != 12) {
			FAIL("%s: status %d, fetched %llu, memory %llu", what,
			     st, (unsigned long long)old,
			     (unsigned long long)abuf[0]);
		} else {
			printf("ok: %s applied, the old value fetched\n", what);
		}
	}

	/* The target writes into us: over iWARP its fence read uses the
	 * key we named, which does not exist. */
	CHECK(fi_write(ep, wbuf, sizeof(wbuf), fi_mr_desc(wmr), peer,
		       (uintptr_t)tbuf, tmr->rkey, &rctx));
	end = now_ms() + 5000;
	do {
		n = fi_cq_read(cq, &e, 1);
	} while (n == -FI_EAGAIN && now_ms() < end);
	if (n == -FI_EAGAIN) {
		FAIL("a write to a peer naming a bogus fence key never "
		     "completed");
	} else if (n == -FI_EAVAIL) {
		memset(&err, 0, sizeof(err));
		fi_cq_readerr(cq, &err, 0);
		if (!iwarp)
			FAIL("the write failed without a fence: %d", err.err);
		else if (err.op_context != &rctx)
			FAIL("an error completion of something else: %d",
			     err.err);
		else
			printf("ok: the write fenced with a bogus key failed "
			       "at the target: %s\n", fi_strerror(err.err));
	} else if (n != 1 || e.op_context != &rctx) {
		FAIL("the write completed as %zd", n);
	} else if (iwarp) {
		FAIL("the write completed successfully though its fence read "
		     "had a bogus key");
	} else if (memcmp(tbuf, wbuf, sizeof(wbuf))) {
		FAIL("the write completed but did not land");
	} else {
		printf("ok: no fence over RoCE: the write landed\n");
	}

	rdma_disconnect(id);
	rdma_destroy_qp(id);
	ibv_dereg_mr(tmr);
	ibv_dereg_mr(pmr);
	ibv_dereg_mr(mr);
	ibv_destroy_cq(scq);
	rdma_destroy_id(id);
	rdma_destroy_event_channel(ch);
	CHECK(fi_close(&ep->fid));
	CHECK(fi_close(&wmr->fid));
	CHECK(fi_close(&amr->fid));
	CHECK(fi_close(&cq->fid));
	CHECK(fi_close(&av->fid));
	CHECK(fi_close(&domain->fid));
	CHECK(fi_close(&fabric->fid));
	fi_freeinfo(info);
	fi_freeinfo(hints);
	printf("%s: %d failure(s)\n", failures ? "FAIL" : "PASS", failures);
	return failures ? 1 : 0;
}
