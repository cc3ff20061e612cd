// SPDX-License-Identifier: BSD-2-Clause
/*
 * Conformance cases for the error semantics of the OFI man pages: one
 * FI_ECANCELED per cancelled receive (fi_endpoint(3)), a CQ too small for
 * its completions (fi_cq(3): overrun reported, never silent), -FI_EAGAIN
 * from a full transmit queue and its clearing (fi_msg(3)), FI_ADDR_NOTAVAIL
 * and FI_SYNC_ERR for the bad entries of a batch insert (fi_av(3)), and
 * -FI_EBUSY from fi_close of an object that still has children or bound
 * objects (fi_domain(3), fi_fabric(3), fi_cq(3)).
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "conformance.h"

static void msg_to(struct cf_fix *f, fi_addr_t dst, const char *what);

/* Index of ctx in ctxs[0..n), or -1. */
static int ctx_index(struct fi_context2 *ctxs, int n, void *ctx)
{
	if ((struct fi_context2 *)ctx < ctxs ||
	    (struct fi_context2 *)ctx >= ctxs + n)
		return -1;
	return (int)((struct fi_context2 *)ctx - ctxs);
}

/* Progress for ms, harvesting every endpoint's CQ into its queue. */
static void progress_for(struct cf_fix *f, int ms)
{
	uint64_t end = cf_now_ms() + ms;

	do
		cf_progress(f);
	while (cf_now_ms() < end);
}

/*
 * Cancel N posted receives: untagged, tagged and an FI_MULTI_RECV buffer.
 * Reading the CQ until it is empty gives exactly one FI_ECANCELED entry per
 * receive, with its op_context, and no success entry (the multi-recv
 * buffer's with FI_MULTI_RECV: released); cancelling the same contexts
 * again adds nothing.  The buffers stay untouched.
 */
#define CC_N 8
#define CC_LEN 256

static int case_cancel_count(const char *prov)
{
	struct cf_opts o = {.caps = FI_MSG | FI_TAGGED | FI_MULTI_RECV};
	struct fi_context2 ctx[2 * CC_N + 1];
	int seen[2 * CC_N + 1];
	struct cf_mem rm;
	struct iovec iov;
	void *desc;
	struct fi_msg msg = {.iov_count = 1, .addr = FI_ADDR_UNSPEC};
	struct cf_queue *q;
	struct cf_fix f;
	uint64_t end;
	int i, k, nctx = 2 * CC_N + 1, got = 0, ret;
	bool multi = true;
	size_t j;

	{
		struct fi_info *fi = cf_getinfo(prov, &o, &ret);

		if (ret) {
			o.caps = FI_MSG | FI_TAGGED;
			multi = false;
			cf_note("no FI_MULTI_RECV: only single receives");
			nctx = 2 * CC_N;
		}
		fi_freeinfo(fi);
	}
	cf_open(&f, prov, &o);
	q = &f.ep[1].q;
	cf_mem_reg(&f, 1, &rm, (size_t)(2 * CC_N + 1) * CC_LEN * 4, FI_RECV);
	memset(rm.p, 0x3c, rm.len);
	for (i = 0; i < CC_N; i++) {
		cf_post(&f, fi_recv(f.ep[1].ep, rm.p + i * CC_LEN, CC_LEN,
				    rm.desc, FI_ADDR_UNSPEC, &ctx[i]));
		cf_post(&f, fi_trecv(f.ep[1].ep, rm.p + (CC_N + i) * CC_LEN,
				     CC_LEN, rm.desc, FI_ADDR_UNSPEC, 100 + i,
				     0, &ctx[CC_N + i]));
	}
	if (multi) {
		iov.iov_base = rm.p + 2 * CC_N * CC_LEN;
		iov.iov_len = 4 * CC_LEN;
		desc = rm.desc;
		msg.msg_iov = &iov;
		msg.desc = &desc;
		msg.context = &ctx[2 * CC_N];
		cf_post(&f, fi_recvmsg(f.ep[1].ep, &msg, FI_MULTI_RECV));
	}
	for (i = 0; i < nctx; i++) {
		cf_mark("fi_cancel");
		ret = (int)fi_cancel(&f.ep[1].ep->fid, &ctx[i]);
		cf_expect(!ret, "fi_cancel of posted receive %d: %d (%s)", i,
			  ret, fi_strerror(-ret));
	}
	/* Until every receive has its entry, then a while longer. */
	end = cf_now_ms() + CF_WAIT_MS;
	while ((int)q->n < nctx && cf_now_ms() < end)
		cf_progress(&f);
	progress_for(&f, 100);
	memset(seen, 0, sizeof(seen));
	for (j = 0; j < q->n; j++) {
		struct cf_comp *c = &q->v[j];

		k = ctx_index(ctx, nctx, c->ctx);
		cf_expect(k >= 0, "an entry for unknown context %p, err %d",
			  c->ctx, c->err);
		if (k < 0)
			continue;
		cf_expect(c->err == FI_ECANCELED,
			  "receive %d: entry with err %d (%s), want "
			  "FI_ECANCELED",
			  k, c->err, fi_strerror(c->err));
		/* the multi-recv buffer is released: FI_MULTI_RECV says so
		 * (libfabric 2.1 on; Mercury waits for it) */
		if (k == 2 * CC_N)
			cf_expect(c->flags & FI_MULTI_RECV,
				  "the cancelled multi-recv buffer's entry "
				  "has flags %#llx, without FI_MULTI_RECV",
				  (unsigned long long)c->flags);
		seen[k]++;
		if (c->err == FI_ECANCELED)
			got++;
	}
	for (k = 0; k < nctx; k++)
		cf_expect(seen[k] == 1, "receive %d (%s): %d entries, want 1", k,
			  k < CC_N ? "msg" : k < 2 * CC_N ? "tagged" : "multi",
			  seen[k]);
	cf_expect(got == nctx && (int)q->n == nctx,
		  "%d FI_ECANCELED of %zu entries for %d cancelled receives",
		  got, q->n, nctx);
	q->n = 0;

	/* A second cancel of the same operations finds nothing. */
	for (i = 0; i < nctx; i++) {
		ret = (int)fi_cancel(&f.ep[1].ep->fid, &ctx[i]);
		cf_expect(ret == 0 || ret == -FI_ENOENT,
			  "second fi_cancel of %d: %d (%s)", i, ret,
			  fi_strerror(-ret));
	}
	progress_for(&f, 100);
	cf_expect(!q->n, "%zu entries after cancelling again", q->n);
	for (j = 0; j < rm.len; j++)
		if (rm.p[j] != 0x3c)
			break;
	cf_expect(j == rm.len, "cancelled receive buffers written at %zu", j);
	cf_expect_none(&f, 0, 0);
	cf_mem_free(&rm);
	cf_close(&f);
	return 0;
}

/*
 * What one CQ gave: the success entries per context, FI_EOVERRUN reports
 * and the completions they say were lost, and any other error.
 */
struct tally {
	struct fi_context2 *ctxs;
	int n;
	int *seen;
	int total;
	int overruns;
	uint64_t lost;
	int errors;
};

/* Read cq until it says -FI_EAGAIN; count what it held. */
static void tally_read(struct fid_cq *cq, struct tally *t, const char *what)
{
	struct fi_cq_tagged_entry e[8];
	struct fi_cq_err_entry err;
	ssize_t ret;
	int i, k;

	for (;;) {
		cf_mark("fi_cq_read");
		ret = fi_cq_read(cq, e, 8);
		if (ret == -FI_EAGAIN)
			return;
		if (ret == -FI_EAVAIL) {
			memset(&err, 0, sizeof(err));
			cf_mark("fi_cq_readerr");
			ret = fi_cq_readerr(cq, &err, 0);
			cf_assert(ret == 1, "%s: fi_cq_readerr %zd after "
					    "-FI_EAVAIL",
				  what, ret);
			if (err.err == FI_EOVERRUN) {
				t->overruns++;
				t->lost += err.olen;
			} else {
				cf_expect(0, "%s: error entry %d (%s), ctx %p",
					  what, err.err, fi_strerror(err.err),
					  err.op_context);
				t->errors++;
			}
			continue;
		}
		cf_assert(ret > 0, "%s: fi_cq_read %zd (%s)", what, ret,
			  fi_strerror((int)-ret));
		for (i = 0; i < ret; i++) {
			k = ctx_index(t->ctxs, t->n, e[i].op_context);
			cf_expect(k >= 0, "%s: entry for unknown context %p",
				  what, e[i].op_context);
			if (k < 0)
				continue;
			cf_expect(!t->seen[k]++, "%s: operation %d completed "
						 "twice",
				  what, k);
			t->total++;
		}
	}
}

static void tally_check(const struct tally *t, const char *what)
{
	cf_expect(t->total == t->n || (t->overruns && t->lost &&
				       t->total + t->lost >= (uint64_t)t->n),
		  "%s: %d of %d completions, %d FI_EOVERRUN reports, %llu "
		  "reported lost",
		  what, t->total, t->n, t->overruns,
		  (unsigned long long)t->lost);
	cf_note("%s: %d of %d completions, %d FI_EOVERRUN report(s)%s", what,
		t->total, t->n, t->overruns,
		t->lost ? ", some lost" : "");
}

/*
 * A CQ of 4 entries, resource management off, and 64 messages: each side
 * either holds the extra completions and delivers every one later, or
 * reports FI_EOVERRUN (fi_cq(3)); fewer completions than operations
 * without that report is a silent loss.  The receiver's CQ is read only
 * after every message was sent, so its completions pile up.
 */
#define OV_N 64
#define OV_LEN 100

static int case_cq_overrun(const char *prov)
{
	struct cf_opts o = {.caps = FI_MSG,
			    .cq_size = 4,
			    .resource_mgmt = FI_RM_DISABLED};
	struct fi_context2 sctx[OV_N], rctx[OV_N];
	int sseen[OV_N] = {0}, rseen[OV_N] = {0};
	struct tally st = {sctx, OV_N, sseen, 0, 0, 0, 0};
	struct tally rt = {rctx, OV_N, rseen, 0, 0, 0, 0};
	struct cf_mem sm, rm;
	struct cf_fix f;
	uint64_t end;
	ssize_t ret;
	int i;

	cf_open(&f, prov, &o);
	/* A provider may connect on the first message: not the point here. */
	msg_to(&f, f.ep[1].addr, "a first message");
	cf_mem_reg(&f, 0, &sm, OV_LEN, FI_SEND);
	cf_mem_reg(&f, 1, &rm, OV_N * OV_LEN, FI_RECV);
	cf_fill(sm.p, OV_LEN, 91);
	for (i = 0; i < OV_N; i++) {
		cf_mark("fi_recv");
		ret = fi_recv(f.ep[1].ep, rm.p + i * OV_LEN, OV_LEN, rm.desc,
			      FI_ADDR_UNSPEC, &rctx[i]);
		cf_assert(!ret, "fi_recv %d: %zd (%s)", i, ret,
			  fi_strerror((int)-ret));
	}
	end = cf_now_ms() + CF_WAIT_MS;
	for (i = 0; i < OV_N; i++) {
		cf_mark("fi_send");
		while ((ret = fi_send(f.ep[0].ep, sm.p, OV_LEN, sm.desc,
				      f.ep[1].addr, &sctx[i])) == -FI_EAGAIN) {
			tally_read(f.ep[0].cq, &st, "sender");
			cf_assert(cf_now_ms() < end, "fi_send %d: -FI_EAGAIN "
						     "for %d ms",
				  i, CF_WAIT_MS);
		}
		cf_assert(!ret, "fi_send %d: %zd (%s)", i, ret,
			  fi_strerror((int)-ret));
	}
	/* The sender's CQ, read as needed; the receiver's left alone. */
	while (st.total < OV_N && cf_now_ms() < end)
		tally_read(f.ep[0].cq, &st, "sender");
	/* Let the sender's progress deliver into the receiver's CQ. */
	end = cf_now_ms() + 200;
	while (cf_now_ms() < end)
		tally_read(f.ep[0].cq, &st, "sender");
	end = cf_now_ms() + CF_WAIT_MS;
	while (rt.total < OV_N && cf_now_ms() < end &&
	       !(rt.lost && rt.total + rt.lost >= OV_N))
		tally_read(f.ep[1].cq, &rt, "receiver");
	/* Nothing more, nothing twice. */
	end = cf_now_ms() + 100;
	while (cf_now_ms() < end) {
		tally_read(f.ep[0].cq, &st, "sender");
		tally_read(f.ep[1].cq, &rt, "receiver");
	}
	tally_check(&st, "sender, CQ size 4");
	tally_check(&rt, "receiver, CQ size 4");
	for (i = 0; i < OV_N; i++)
		if (rseen[i])
			cf_check_fill(rm.p + i * OV_LEN, OV_LEN, 91,
				      "a message received past the CQ's size");
	cf_mem_free(&sm);
	cf_mem_free(&rm);
	cf_close(&f);
	return 0;
}

/*
 * An EQ of 4 entries and 16 FI_EVENT inserts into an AV bound to it: 16
 * FI_AV_COMPLETE events, each with its context, or an FI_EOVERRUN error
 * (fi_eq(3)); fewer events without it is a silent loss.
 */
static int case_eq_overrun(const char *prov)
{
	struct cf_opts o = {.caps = FI_MSG};
	struct fi_eq_attr ea = {.size = 4, .wait_obj = FI_WAIT_NONE};
	struct fi_av_attr aa = {.count = 64, .flags = FI_EVENT};
	struct fi_context2 ctx[16];
	int seen[16] = {0}, total = 0, overruns = 0, k, i, ret;
	struct fi_eq_entry ev;
	struct fi_eq_err_entry err;
	fi_addr_t fa[16];
	struct fid_eq *eq;
	struct fid_av *av;
	struct cf_fix f;
	uint32_t event;
	uint64_t end;
	ssize_t n;

	cf_open(&f, prov, &o);
	cf_ok(fi_eq_open(f.fabric, &ea, &eq, NULL));
	aa.type = f.info->domain_attr->av_type;
	cf_ok(fi_av_open(f.domain, &aa, &av, NULL));
	ret = fi_av_bind(av, &eq->fid, 0);
	if (ret) {
		cf_ok(fi_close(&av->fid));
		cf_ok(fi_close(&eq->fid));
		cf_close(&f);
		cf_skip("fi_av_bind of an EQ: %d (%s)", ret, fi_strerror(-ret));
	}
	for (i = 0; i < 16; i++) {
		cf_mark("fi_av_insert");
		ret = fi_av_insert(av, f.ep[i & 1].name, 1, &fa[i], 0, &ctx[i]);
		cf_assert(ret == 0 || ret == 1, "FI_EVENT fi_av_insert %d: %d",
			  i, ret);
	}
	end = cf_now_ms() + CF_WAIT_MS;
	while (total < 16 && cf_now_ms() < end) {
		cf_mark("fi_eq_read");
		n = fi_eq_read(eq, &event, &ev, sizeof(ev), 0);
		if (n == -FI_EAGAIN) {
			cf_progress(&f);
			continue;
		}
		if (n == -FI_EAVAIL) {
			memset(&err, 0, sizeof(err));
			n = fi_eq_readerr(eq, &err, 0);
			cf_assert(n > 0, "fi_eq_readerr: %zd", n);
			if (err.err == FI_EOVERRUN) {
				overruns++;
				continue;
			}
			cf_fail("EQ error entry %d (%s)", err.err,
				fi_strerror(err.err));
		}
		cf_assert(n == sizeof(ev), "fi_eq_read: %zd", n);
		cf_assert(event == FI_AV_COMPLETE, "event %u, want FI_AV_COMPLETE",
			  event);
		k = ctx_index(ctx, 16, ev.context);
		cf_assert(k >= 0, "FI_AV_COMPLETE with context %p", ev.context);
		cf_expect(!seen[k]++, "insert %d reported twice", k);
		cf_expect(ev.data == 1, "insert %d: data %llu, want 1", k,
			  (unsigned long long)ev.data);
		total++;
	}
	n = fi_eq_read(eq, &event, &ev, sizeof(ev), 0);
	cf_expect(n == -FI_EAGAIN, "an extra EQ event: %zd", n);
	cf_expect(total == 16 || overruns, "%d of 16 events, no FI_EOVERRUN",
		  total);
	cf_note("%d of 16 events in an EQ of 4, %d FI_EOVERRUN", total,
		overruns);
	cf_ok(fi_close(&av->fid));
	cf_ok(fi_close(&eq->fid));
	cf_close(&f);
	return 0;
}

/*
 * Sends (then injects) without reading the CQ or posting receives until the
 * endpoint answers -FI_EAGAIN (within tx_size plus 4096 posts of
 * inject_size bytes, at most 4 KiB: more than the socket buffers a
 * provider may hand injects to); once the
 * peer posts receives and both CQs are read, every posted send completes
 * exactly once, every message arrives intact, and posting succeeds again
 * at the first try.
 */
static int case_tx_eagain(const char *prov)
{
	struct cf_opts o = {.caps = FI_MSG};
	struct fi_context2 *sctx, *rctx, one;
	struct cf_mem sm, rm;
	struct cf_fix f;
	size_t cap, posted, i, injected;
	struct cf_comp c;
	ssize_t ret;
	size_t ea_len;
	int round;

	cf_open(&f, prov, &o);
	ea_len = f.info->tx_attr->inject_size;
	ea_len = ea_len > 4096 ? 4096 : ea_len ? ea_len : 1;
	cap = f.info->tx_attr->size + 4096;
	cf_assert(cap < (1 << 20), "tx_size %zu", f.info->tx_attr->size);
	sctx = calloc(cap, sizeof(*sctx));
	rctx = calloc(cap, sizeof(*rctx));
	cf_assert(sctx && rctx, "calloc");
	cf_mem_reg(&f, 0, &sm, ea_len, FI_SEND);
	cf_mem_reg(&f, 1, &rm, cap * ea_len, FI_RECV);
	cf_fill(sm.p, ea_len, 95);
	/* A provider may connect on the first message: not the point here. */
	msg_to(&f, f.ep[1].addr, "a first message");

	for (round = 0; round < 2; round++) {
		const char *what = round ? "fi_inject" : "fi_send";

		memset(rm.p, 0, cap * ea_len);
		for (posted = 0; posted < cap; posted++) {
			cf_mark(what);
			ret = round ? fi_inject(f.ep[0].ep, sm.p, ea_len,
						f.ep[1].addr)
				    : fi_send(f.ep[0].ep, sm.p, ea_len, sm.desc,
					      f.ep[1].addr, &sctx[posted]);
			if (ret == -FI_EAGAIN)
				break;
			cf_assert(!ret, "%s %zu: %zd (%s)", what, posted, ret,
				  fi_strerror((int)-ret));
		}
		cf_assert(posted < cap,
			  "%s: no -FI_EAGAIN after %zu posts without reading "
			  "the CQ (tx_size %zu)",
			  what, posted, f.info->tx_attr->size);
		cf_note("%s: -FI_EAGAIN after %zu posts (tx_size %zu)", what,
			posted, f.info->tx_attr->size);
		cf_assert(posted > 0, "%s: -FI_EAGAIN at once", what);
		for (i = 0; i < posted; i++)
			cf_post(&f, fi_recv(f.ep[1].ep, rm.p + i * ea_len,
					    ea_len, rm.desc, FI_ADDR_UNSPEC,
					    &rctx[i]));
		for (i = 0; i < posted; i++) {
			c = cf_wait_ctx(&f, 1, &rctx[i]);
			cf_assert(!c.err && c.len == ea_len,
				  "%s: receive %zu: err %d len %zu", what, i,
				  c.err, c.len);
			cf_check_fill(rm.p + i * ea_len, ea_len, 95, what);
			if (!round) {
				c = cf_wait_ctx(&f, 0, &sctx[i]);
				cf_assert(!c.err, "%s %zu: err %d (%s)", what,
					  i, c.err, fi_strerror(c.err));
			}
		}
		progress_for(&f, 50);
		cf_expect(!f.ep[0].q.n && !f.ep[1].q.n,
			  "%s: %zu and %zu extra completions", what,
			  f.ep[0].q.n, f.ep[1].q.n);
		/* The queue has room again: the next post is taken at once. */
		for (injected = 0; injected < 4; injected++) {
			cf_post(&f, fi_recv(f.ep[1].ep, rm.p, ea_len, rm.desc,
					    FI_ADDR_UNSPEC, &rctx[0]));
			ret = round ? fi_inject(f.ep[0].ep, sm.p, ea_len,
						f.ep[1].addr)
				    : fi_send(f.ep[0].ep, sm.p, ea_len, sm.desc,
					      f.ep[1].addr, &one);
			cf_assert(!ret, "%s after the queue drained: %zd (%s)",
				  what, ret, fi_strerror((int)-ret));
			c = cf_wait_ctx(&f, 1, &rctx[0]);
			cf_assert(!c.err, "receive after drain: err %d", c.err);
			if (!round) {
				c = cf_wait_ctx(&f, 0, &one);
				cf_assert(!c.err, "send after drain: err %d",
					  c.err);
			}
		}
	}
	cf_expect_none(&f, 0, 20);
	cf_expect_none(&f, 1, 0);
	cf_mem_free(&sm);
	cf_mem_free(&rm);
	free(sctx);
	free(rctx);
	cf_close(&f);
	return 0;
}

/* One message from endpoint 0 to fi_addr dst, which must be endpoint 1. */
static void msg_to(struct cf_fix *f, fi_addr_t dst, const char *what)
{
	struct fi_context2 sc, rc;
	struct cf_mem sm, rm;
	struct cf_comp c;

	cf_mem_reg(f, 0, &sm, 32, FI_SEND);
	cf_mem_reg(f, 1, &rm, 32, FI_RECV);
	cf_fill(sm.p, 32, 97);
	cf_post(f, fi_recv(f->ep[1].ep, rm.p, 32, rm.desc, FI_ADDR_UNSPEC,
			   &rc));
	cf_post(f, fi_send(f->ep[0].ep, sm.p, 32, sm.desc, dst, &sc));
	c = cf_wait_ctx(f, 1, &rc);
	cf_assert(!c.err && c.len == 32, "%s: err %d len %zu", what, c.err,
		  c.len);
	cf_check_fill(rm.p, 32, 97, what);
	c = cf_wait_ctx(f, 0, &sc);
	cf_assert(!c.err, "%s: send err %d", what, c.err);
	cf_mem_free(&sm);
	cf_mem_free(&rm);
}

/*
 * A batch of four addresses, the second and fourth malformed (sockaddr
 * formats: a wrong family and all zeros; FI_ADDR_STR: garbage and an empty
 * string): fi_av_insert returns 2, fi_addr holds FI_ADDR_NOTAVAIL for
 * exactly the bad ones, and with FI_SYNC_ERR the int array in context is
 * 0 for the good entries and a positive FI_E* code for the bad ones
 * (fi_av(3)).  The
 * good entries reach their endpoint.  Over FI_AV_MAP and FI_AV_TABLE.
 */
static int av_batch(struct cf_fix *f, uint64_t flags, int *errs,
		    fi_addr_t *fa, const char *what)
{
	uint32_t fmt = f->info->addr_format;
	size_t len = f->ep[0].namelen, i;
	uint8_t packed[4 * CF_MAX_NAME];
	const char *names[4];
	int ret;

	for (i = 0; i < 4; i++)
		fa[i] = 12345;
	cf_mark("fi_av_insert");
	if (fmt == FI_ADDR_STR) {
		names[0] = (const char *)f->ep[0].name;
		names[1] = "garbage, not an address";
		names[2] = (const char *)f->ep[1].name;
		names[3] = "";
		ret = fi_av_insert(f->av, names, 4, fa, flags, errs);
	} else {
		struct sockaddr *bad;

		cf_assert(f->ep[1].namelen == len && 4 * len <= sizeof(packed),
			  "names of %zu and %zu bytes", len, f->ep[1].namelen);
		memcpy(packed, f->ep[0].name, len);
		memcpy(packed + len, f->ep[0].name, len);
		memcpy(packed + 2 * len, f->ep[1].name, len);
		memset(packed + 3 * len, 0, len);
		bad = (struct sockaddr *)(packed + len);
		bad->sa_family = AF_UNIX;
		ret = fi_av_insert(f->av, packed, 4, fa, flags, errs);
	}
	cf_expect(ret == 2, "%s: fi_av_insert returned %d, want 2", what, ret);
	for (i = 0; i < 4; i++)
		cf_expect((i & 1) == (fa[i] == FI_ADDR_NOTAVAIL),
			  "%s: entry %zu (%s): fi_addr %llu", what, i,
			  i & 1 ? "bad" : "good", (unsigned long long)fa[i]);
	return ret;
}

static int case_av_notavail(const char *prov)
{
	static const enum fi_av_type types[2] = {FI_AV_MAP, FI_AV_TABLE};
	uint32_t fmt, want_fmt = 0;
	fi_addr_t fa[4];
	int errs[4], t, i, ret;
	char what[96];

	/* The provider's own format, then FI_ADDR_STR if it offers both. */
	for (t = 0; t < 4; t++) {
		struct cf_opts o = {.caps = FI_MSG,
				    .av_type = types[t & 1],
				    .addr_format = want_fmt};
		struct cf_fix f;

		if (t == 2) {
			struct fi_info *fi = cf_getinfo(prov, &o, &ret);

			fmt = ret ? FI_ADDR_STR : fi->addr_format;
			fi_freeinfo(fi);
			o.addr_format = want_fmt = FI_ADDR_STR;
			fi = cf_getinfo(prov, &o, &ret);
			fi_freeinfo(fi);
			if (fmt == FI_ADDR_STR || ret) {
				cf_note("FI_ADDR_STR %s",
					fmt == FI_ADDR_STR ? "is the default"
							   : "not offered");
				break;
			}
		}
		cf_open(&f, prov, &o);
		fmt = f.info->addr_format;
		if (fmt != FI_ADDR_STR && fmt != FI_SOCKADDR &&
		    fmt != FI_SOCKADDR_IN && fmt != FI_SOCKADDR_IN6) {
			cf_close(&f);
			cf_skip("address format %u is neither a sockaddr nor "
				"FI_ADDR_STR",
				fmt);
		}
		snprintf(what, sizeof(what), "%s, %s",
			 fmt == FI_ADDR_STR ? "FI_ADDR_STR" : "sockaddr",
			 t & 1 ? "FI_AV_TABLE" : "FI_AV_MAP");
		av_batch(&f, 0, NULL, fa, what);
		if (fa[2] != FI_ADDR_NOTAVAIL)
			msg_to(&f, fa[2], "a message to a good batch entry");

		snprintf(what, sizeof(what), "%s, %s, FI_SYNC_ERR",
			 fmt == FI_ADDR_STR ? "FI_ADDR_STR" : "sockaddr",
			 t & 1 ? "FI_AV_TABLE" : "FI_AV_MAP");
		for (i = 0; i < 4; i++)
			errs[i] = 12345;
		av_batch(&f, FI_SYNC_ERR, errs, fa, what);
		/* fi_av(3): 0, or "a fabric errno code": FI_E*, positive
		 * as in every error entry (the 1.17 library writes them so). */
		for (i = 0; i < 4; i++)
			cf_expect((i & 1) ? errs[i] > 0 && errs[i] != 12345
					  : errs[i] == 0,
				  "%s: entry %d (%s): error %d", what, i,
				  i & 1 ? "bad" : "good", errs[i]);
		if (!(t & 1))
			cf_note("%s: FI_SYNC_ERR codes of the bad entries: "
				"%d, %d",
				what, errs[1], errs[3]);
		if (fa[2] != FI_ADDR_NOTAVAIL)
			msg_to(&f, fa[2], "a message to a good entry, FI_SYNC_ERR");
		cf_close(&f);
	}
	return 0;
}

/* fi_close of fid must be -FI_EBUSY: it still has children or bindings. */
#define busy(fid, what)                                                        \
	do {                                                                   \
		int busy_ret_;                                                 \
		cf_mark("fi_close of " what);                                  \
		busy_ret_ = fi_close(fid);                                     \
		cf_expect(busy_ret_ == -FI_EBUSY,                              \
			  "fi_close of %s: %d (%s), want -FI_EBUSY", what,     \
			  busy_ret_, fi_strerror(-busy_ret_));                 \
		if (!busy_ret_)                                                \
			cf_fail("%s closed under its users", what);            \
	} while (0)

/*
 * fi_close in the wrong order: a fabric with a domain, an EQ or a wait
 * set, a domain with its endpoints, CQs, AV, counter, MR or poll set, a
 * CQ, AV and counter bound to an endpoint, an EQ bound to an AV, a wait
 * set a CQ waits on all answer -FI_EBUSY and stay
 * usable (a message still goes through); closed children first, each
 * parent closes with 0.
 */
static int case_close_busy(const char *prov)
{
	struct cf_opts o = {.caps = FI_MSG, .cntr_mask = 1 << CF_CNTR_SEND};
	struct fi_cntr_attr ca = {.events = FI_CNTR_EVENTS_COMP};
	struct fi_cq_attr qa = {.format = FI_CQ_FORMAT_CONTEXT};
	struct fi_eq_attr ea = {.size = 16, .wait_obj = FI_WAIT_NONE};
	struct fi_av_attr aa = {.count = 4};
	struct fi_poll_attr pa = {0};
	struct fi_wait_attr wa = {.wait_obj = FI_WAIT_UNSPEC};
	struct fid_poll *ps;
	struct fid_wait *ws;
	struct fid_cntr *cntr;
	struct fid_eq *eq;
	struct fid_av *av;
	struct fid_cq *cq;
	struct fid_mr *mr;
	struct cf_fix f;
	uint8_t buf[64];
	int i;

	cf_open(&f, prov, &o);
	busy(&f.fabric->fid, "a fabric with a domain");
	busy(&f.domain->fid, "a domain with endpoints, CQs, AV, counters");
	busy(&f.ep[0].cq->fid, "a CQ bound to an endpoint");
	busy(&f.av->fid, "an AV bound to endpoints");
	if (f.stx)
		busy(&f.stx->fid, "a shared transmit context endpoints use");
	if (f.ep[0].srx)
		busy(&f.ep[0].srx->fid,
		     "a shared receive context an endpoint uses");
	busy(&f.ep[0].cntr[CF_CNTR_SEND]->fid,
	     "a counter bound to an endpoint");
	/* Everything is still alive and works. */
	msg_to(&f, f.ep[1].addr, "a message after refused closes");
	cf_assert(fi_cntr_read(f.ep[0].cntr[CF_CNTR_SEND]) == 1,
		  "send counter %llu after one send",
		  (unsigned long long)fi_cntr_read(
		      f.ep[0].cntr[CF_CNTR_SEND]));

	/* Endpoints gone: CQs, AV, counters close; the domain still has an
	 * MR, a CQ and a counter of its own. */
	cf_ok(fi_mr_reg(f.domain, buf, sizeof(buf), FI_SEND, 0, 0xc105e, 0,
			&mr, NULL));
	cf_ok(fi_cq_open(f.domain, &qa, &cq, NULL));
	cf_ok(fi_cntr_open(f.domain, &ca, &cntr, NULL));
	for (i = 0; i < f.nep; i++) {
		cf_ok(fi_close(&f.ep[i].ep->fid));
		f.ep[i].ep = NULL;
	}
	for (i = 0; i < f.nep; i++) {
		int k;

		cf_ok(fi_close(&f.ep[i].cq->fid));
		f.ep[i].cq = NULL;
		for (k = 0; k < CF_NCNTR; k++)
			if (f.ep[i].cntr[k]) {
				cf_ok(fi_close(&f.ep[i].cntr[k]->fid));
				f.ep[i].cntr[k] = NULL;
			}
	}
	cf_ok(fi_close(&f.av->fid));
	f.av = NULL;
	if (f.stx) {
		cf_ok(fi_close(&f.stx->fid));
		f.stx = NULL;
	}
	busy(&f.domain->fid, "a domain with an MR, a CQ and a counter");
	cf_ok(fi_close(&cq->fid));
	busy(&f.domain->fid, "a domain with an MR and a counter");
	cf_ok(fi_close(&cntr->fid));
	busy(&f.domain->fid, "a domain with an MR");
	busy(&f.fabric->fid, "a fabric with a domain");
	cf_ok(fi_close(&mr->fid));
	/* An EQ with an AV bound to it, then a fabric with an EQ. */
	cf_ok(fi_eq_open(f.fabric, &ea, &eq, NULL));
	cf_ok(fi_av_open(f.domain, &aa, &av, NULL));
	if (!fi_av_bind(av, &eq->fid, 0))
		busy(&eq->fid, "an EQ bound to an AV");
	cf_ok(fi_close(&av->fid));
	/* A poll set is the domain's, a wait set the fabric's. */
	if (!fi_poll_open(f.domain, &pa, &ps)) {
		busy(&f.domain->fid, "a domain with a poll set");
		cf_ok(fi_close(&ps->fid));
	} else {
		cf_note("no fi_poll_open: poll set not tried");
	}
	if (!fi_wait_open(f.fabric, &wa, &ws)) {
		struct fi_cq_attr wqa = {.format = FI_CQ_FORMAT_CONTEXT,
					 .wait_obj = FI_WAIT_SET,
					 .wait_set = ws};

		busy(&f.fabric->fid, "a fabric with a wait set");
		if (!fi_cq_open(f.domain, &wqa, &cq, NULL)) {
			busy(&ws->fid, "a wait set a CQ waits on");
			cf_ok(fi_close(&cq->fid));
		} else {
			cf_note("no CQ on a wait set: not tried");
		}
		cf_ok(fi_close(&ws->fid));
	} else {
		cf_note("no fi_wait_open: wait set not tried");
	}
	cf_ok(fi_close(&f.domain->fid));
	f.domain = NULL;
	busy(&f.fabric->fid, "a fabric with an EQ");
	cf_ok(fi_close(&eq->fid));
	cf_ok(fi_close(&f.fabric->fid));
	f.fabric = NULL;
	cf_close(&f);
	return 0;
}

const struct cf_case cf_cases_err[] = {
    {"cancel_count",
     "cancelled msg, tagged, multi-recv receives: one FI_ECANCELED each",
     case_cancel_count},
    {"cq_overrun",
     "CQ of 4, 64 messages: every completion later or FI_EOVERRUN",
     case_cq_overrun},
    {"eq_overrun",
     "EQ of 4, 16 FI_AV_COMPLETE events: all of them or FI_EOVERRUN",
     case_eq_overrun},
    {"tx_eagain",
     "full transmit queue gives -FI_EAGAIN, cleared by reading the CQ",
     case_tx_eagain},
    {"av_notavail",
     "batch insert with bad entries: FI_ADDR_NOTAVAIL, FI_SYNC_ERR",
     case_av_notavail},
    {"close_busy", "fi_close of objects still in use: -FI_EBUSY",
     case_close_busy},
    {NULL},
};
