// SPDX-License-Identifier: BSD-2-Clause
/*
 * Triggered operations (fi_trigger(3)) and the deferred work queue.
 */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <rdma/fi_atomic.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>
#include <rdma/fi_trigger.h>

#include "conformance.h"
#include "proc.h"

#define TG_LEN 64
#define TG_NW 4 /* deferred writes in trigger_work */

/* A threshold context on cntr. */
static void tg_ctx(struct fi_triggered_context2 *tc, struct fid_cntr *cntr,
		   size_t threshold)
{
	memset(tc, 0, sizeof(*tc));
	tc->event_type = FI_TRIGGER_THRESHOLD;
	tc->trigger.threshold.cntr = cntr;
	tc->trigger.threshold.threshold = threshold;
}

/* A triggered fi_sendmsg of len bytes of m at off to ep 1. */
static ssize_t tg_send(struct cf_fix *f, struct cf_mem *m, size_t off,
		       struct fi_triggered_context2 *tc)
{
	struct iovec iov = { m->p + off, TG_LEN };
	void *desc = m->desc;
	struct fi_msg msg = { .msg_iov = &iov, .desc = &desc, .iov_count = 1,
			      .addr = f->ep[1].addr, .context = tc };

	return fi_sendmsg(f->ep[0].ep, &msg, FI_TRIGGER | FI_COMPLETION);
}

/* Nothing arrives at ep 1 (and nothing completes at ep 0) for a while,
 * the trigger counter read meanwhile. */
static void tg_quiet(struct cf_fix *f, struct fid_cntr *tc, const char *what)
{
	uint64_t end = cf_now_ms() + 150;

	while (cf_now_ms() < end) {
		(void)fi_cntr_read(tc);
		cf_progress(f);
	}
	cf_expect(!f->ep[1].q.n && !f->ep[0].q.n,
		  "%s: %zu completion(s) at the target, %zu at the initiator",
		  what, f->ep[1].q.n, f->ep[0].q.n);
}

/*
 * A chain on one counter: triggered sends, a tagged send, a write and an
 * atomic (FI_INJECT: its operand changed after the post) wait until the
 * counter reaches their thresholds (none before),
 * fire in threshold order (posting order for equal ones) however far
 * the counter jumps, complete with their own contexts, and deliver.
 * A triggered send canceled before its threshold ends FI_ECANCELED and
 * never goes.  A counter bumped by the target's receives fires its
 * triggered answer with no call of the application in between.
 */
static int case_trigger_chain(const char *prov)
{
	struct cf_opts o = {
		.caps = FI_MSG | FI_TAGGED | FI_RMA | FI_ATOMIC | FI_TRIGGER,
		.cntr_mask = 1 << CF_CNTR_RECV,
	};
	struct fi_triggered_context2 tc[8];
	struct fi_context2 rc[8];
	struct cf_mem sm, rm, tm, am;
	struct fi_cntr_attr ca = { .events = FI_CNTR_EVENTS_COMP };
	struct fid_cntr *trig;
	struct cf_comp c;
	struct cf_fix f;
	uint64_t *sum;
	int i;

	cf_open(&f, prov, &o);
	cf_ok(fi_cntr_open(f.domain, &ca, &trig, NULL));
	cf_mem_reg(&f, 0, &sm, 8 * TG_LEN, FI_SEND | FI_WRITE | FI_READ);
	cf_mem_reg(&f, 1, &rm, 8 * TG_LEN, FI_RECV);
	cf_mem_reg(&f, 1, &tm, TG_LEN, FI_REMOTE_WRITE);
	cf_mem_reg(&f, 1, &am, sizeof(uint64_t), FI_REMOTE_WRITE | FI_REMOTE_READ);
	for (i = 0; i < 8; i++)
		cf_fill(sm.p + i * TG_LEN, TG_LEN, 0x700 + (unsigned int)i);
	memset(tm.p, 0, TG_LEN);
	sum = (uint64_t *)am.p;
	*sum = 5;

	/* Receives for the messages, in the order they must come. */
	cf_post(&f, fi_trecv(f.ep[1].ep, rm.p, TG_LEN, rm.desc,
			     FI_ADDR_UNSPEC, 0x11, 0, &rc[0]));
	for (i = 1; i < 3; i++)
		cf_post(&f, fi_recv(f.ep[1].ep, rm.p + i * TG_LEN, TG_LEN,
				    rm.desc, FI_ADDR_UNSPEC, &rc[i]));

	/* 1: a tagged send; 3: a write, then an atomic (posted in that
	 * order, one threshold); 5, then 4: two sends posted out of their
	 * thresholds' order; 100: a send canceled before it. */
	{
		struct iovec iov = { sm.p, TG_LEN };
		void *desc = sm.desc;
		struct fi_msg_tagged tmsg = {
			.msg_iov = &iov, .desc = &desc, .iov_count = 1,
			.addr = f.ep[1].addr, .tag = 0x11, .context = &tc[0] };

		tg_ctx(&tc[0], trig, 1);
		cf_ok(fi_tsendmsg(f.ep[0].ep, &tmsg,
				  FI_TRIGGER | FI_COMPLETION));
	}
	{
		struct iovec iov = { sm.p + TG_LEN, TG_LEN };
		void *desc = sm.desc;
		struct fi_rma_iov rma = { tm.raddr, TG_LEN, tm.key };
		struct fi_msg_rma wmsg = {
			.msg_iov = &iov, .desc = &desc, .iov_count = 1,
			.addr = f.ep[1].addr, .rma_iov = &rma,
			.rma_iov_count = 1, .context = &tc[1] };

		tg_ctx(&tc[1], trig, 3);
		cf_ok(fi_writemsg(f.ep[0].ep, &wmsg,
				  FI_TRIGGER | FI_COMPLETION));
	}
	{
		/* FI_INJECT: the operand may change once the post
		 * returned, long before the trigger. */
		uint64_t two = 2;
		struct fi_ioc ioc = { &two, 1 };
		struct fi_rma_ioc rioc = { am.raddr, 1, am.key };
		struct fi_msg_atomic amsg = {
			.msg_iov = &ioc, .iov_count = 1,
			.addr = f.ep[1].addr, .rma_iov = &rioc,
			.rma_iov_count = 1, .datatype = FI_UINT64,
			.op = FI_SUM, .context = &tc[2] };

		tg_ctx(&tc[2], trig, 3);
		cf_ok(fi_atomicmsg(f.ep[0].ep, &amsg,
				   FI_TRIGGER | FI_COMPLETION | FI_INJECT));
		two = 1000;
	}
	tg_ctx(&tc[3], trig, 5);
	cf_ok(tg_send(&f, &sm, 3 * TG_LEN, &tc[3]));
	tg_ctx(&tc[4], trig, 4);
	cf_ok(tg_send(&f, &sm, 2 * TG_LEN, &tc[4]));
	tg_ctx(&tc[5], trig, 100);
	cf_ok(tg_send(&f, &sm, 7 * TG_LEN, &tc[5]));
	tg_quiet(&f, trig, "before the counter moved");

	/* The first threshold: the tagged send alone. */
	cf_ok(fi_cntr_add(trig, 1));
	c = cf_wait_ctx(&f, 1, &rc[0]);
	cf_assert(!c.err, "triggered tagged send: error %d", c.err);
	cf_check_fill(rm.p, TG_LEN, 0x700, "the triggered tagged send");
	c = cf_wait_ctx(&f, 0, &tc[0]);
	cf_assert(!c.err && (c.flags & FI_SEND),
		  "the triggered tagged send's completion: error %d", c.err);
	tg_quiet(&f, trig, "at 1 of 3");

	/* 3, then straight to 5: the write and the atomic, then both
	 * sends, threshold 4 first. */
	cf_ok(fi_cntr_add(trig, 2));
	c = cf_wait_ctx(&f, 0, &tc[1]);
	cf_assert(!c.err, "triggered write: error %d", c.err);
	c = cf_wait_ctx(&f, 0, &tc[2]);
	cf_assert(!c.err, "triggered atomic: error %d", c.err);
	cf_check_fill(tm.p, TG_LEN, 0x701, "the triggered write");
	cf_expect(*(volatile uint64_t *)sum == 7,
		  "the triggered atomic sum: %llu, want 7",
		  (unsigned long long)*(volatile uint64_t *)sum);
	tg_quiet(&f, trig, "at 3");
	cf_ok(fi_cntr_set(trig, 5));
	c = cf_wait_ctx(&f, 1, &rc[1]);
	cf_assert(!c.err, "threshold 4's send: error %d", c.err);
	c = cf_wait_ctx(&f, 1, &rc[2]);
	cf_assert(!c.err, "threshold 5's send: error %d", c.err);
	cf_check_fill(rm.p + TG_LEN, TG_LEN, 0x702,
		      "the first message once the counter jumped to 5 "
		      "(threshold 4's)");
	cf_check_fill(rm.p + 2 * TG_LEN, TG_LEN, 0x703,
		      "the second (threshold 5's)");
	cf_wait_ctx(&f, 0, &tc[4]);
	cf_wait_ctx(&f, 0, &tc[3]);

	/* Canceled before its threshold: FI_ECANCELED, never sent. */
	cf_ok(fi_cancel(&f.ep[0].ep->fid, &tc[5]));
	c = cf_wait_ctx(&f, 0, &tc[5]);
	cf_expect(c.err == FI_ECANCELED,
		  "a canceled triggered send: error %d, want FI_ECANCELED",
		  c.err);
	cf_ok(fi_cntr_set(trig, 200));
	tg_quiet(&f, trig, "a canceled triggered send past its threshold");

	/* The target answers from its receive counter: one message in,
	 * its triggered send out, nothing of the target's application in
	 * between but reading its CQ. */
	{
		struct fid_cntr *rx = f.ep[1].cntr[CF_CNTR_RECV];
		struct iovec iov = { rm.p + 5 * TG_LEN, TG_LEN };
		void *desc = rm.desc;
		struct fi_msg msg = { .msg_iov = &iov, .desc = &desc,
				      .iov_count = 1, .addr = f.ep[0].addr,
				      .context = &tc[6] };
		struct cf_mem back;
		uint64_t n = fi_cntr_read(rx);

		cf_mem_reg(&f, 0, &back, TG_LEN, FI_RECV);
		cf_fill(rm.p + 5 * TG_LEN, TG_LEN, 0x7a0);
		tg_ctx(&tc[6], rx, n + 1);
		cf_ok(fi_sendmsg(f.ep[1].ep, &msg, FI_TRIGGER | FI_COMPLETION));
		cf_post(&f, fi_recv(f.ep[0].ep, back.p, TG_LEN, back.desc,
				    FI_ADDR_UNSPEC, &rc[6]));
		cf_post(&f, fi_recv(f.ep[1].ep, rm.p + 4 * TG_LEN, TG_LEN,
				    rm.desc, FI_ADDR_UNSPEC, &rc[4]));
		cf_post(&f, fi_send(f.ep[0].ep, sm.p + 6 * TG_LEN, TG_LEN,
				    sm.desc, f.ep[1].addr, &rc[5]));
		c = cf_wait_ctx(&f, 0, &rc[6]);
		cf_assert(!c.err, "the triggered answer: error %d", c.err);
		cf_check_fill(back.p, TG_LEN, 0x7a0, "the triggered answer");
		cf_wait_ctx(&f, 1, &rc[4]);
		cf_wait_ctx(&f, 1, &tc[6]);
		cf_wait_ctx(&f, 0, &rc[5]);
		cf_mem_free(&back);
	}
	cf_expect_none(&f, 0, 50);
	cf_expect_none(&f, 1, 50);
	cf_mem_free(&sm);
	cf_mem_free(&rm);
	cf_mem_free(&tm);
	cf_mem_free(&am);
	cf_ok(fi_close(&trig->fid));
	cf_close(&f);
	return 0;
}

/*
 * The rules: FI_TRIGGER needs the capability and a threshold context
 * naming a counter of the domain; a counter closed with triggered
 * operations pending on it lets them go; the deferred work queue runs counter
 * operations at their thresholds, cancels one, flushes the rest, and
 * says it cannot queue data transfers yet.
 */
static int case_trigger_rules(const char *prov)
{
	struct cf_opts o = { .caps = FI_MSG | FI_TRIGGER };
	struct cf_opts plain = { .caps = FI_MSG };
	struct fi_cntr_attr ca = { .events = FI_CNTR_EVENTS_COMP };
	struct fi_triggered_context2 tc;
	struct fi_deferred_work w[3];
	struct fi_op_cntr oc[3];
	struct fi_op_msg om;
	struct fid_cntr *trig, *x;
	struct cf_mem sm;
	struct cf_fix f, g;
	int ret;

	cf_open(&g, prov, &plain);
	cf_mem_reg(&g, 0, &sm, TG_LEN, FI_SEND);
	cf_ok(fi_cntr_open(g.domain, &ca, &trig, NULL));
	tg_ctx(&tc, trig, 1);
	ret = (int)tg_send(&g, &sm, 0, &tc);
	if (ret == -FI_EINVAL)
		cf_note("%s: FI_TRIGGER without the capability: -FI_EINVAL",
			prov);
	cf_expect(ret == -FI_EINVAL,
		  "FI_TRIGGER on an endpoint without FI_TRIGGER: %d", ret);
	cf_mem_free(&sm);
	cf_ok(fi_close(&trig->fid));
	cf_close(&g);

	cf_open(&f, prov, &o);
	cf_mem_reg(&f, 0, &sm, TG_LEN, FI_SEND);
	cf_ok(fi_cntr_open(f.domain, &ca, &trig, NULL));
	cf_ok(fi_cntr_open(f.domain, &ca, &x, NULL));
	{
		struct iovec iov = { sm.p, TG_LEN };
		void *desc = sm.desc;
		struct fi_msg msg = { .msg_iov = &iov, .desc = &desc,
				      .iov_count = 1, .addr = f.ep[1].addr,
				      .context = NULL };

		cf_expect(fi_sendmsg(f.ep[0].ep, &msg, FI_TRIGGER) ==
				  -FI_EINVAL,
			  "FI_TRIGGER without a triggered context");
		tg_ctx(&tc, NULL, 1);
		msg.context = &tc;
		cf_expect(fi_sendmsg(f.ep[0].ep, &msg, FI_TRIGGER) ==
				  -FI_EINVAL,
			  "FI_TRIGGER with no counter");
	}

	/* Deferred work: add 5 to x at 2, set x to 40 at 3 (canceled), add
	 * 1 at 10 (flushed). */
	memset(w, 0, sizeof(w));
	oc[0] = (struct fi_op_cntr){ x, 5 };
	oc[1] = (struct fi_op_cntr){ x, 40 };
	oc[2] = (struct fi_op_cntr){ x, 1 };
	w[0] = (struct fi_deferred_work){ .threshold = 2,
		.triggering_cntr = trig, .op_type = FI_OP_CNTR_ADD,
		.op.cntr = &oc[0] };
	w[1] = (struct fi_deferred_work){ .threshold = 3,
		.triggering_cntr = trig, .op_type = FI_OP_CNTR_SET,
		.op.cntr = &oc[1] };
	w[2] = (struct fi_deferred_work){ .threshold = 10,
		.triggering_cntr = trig, .op_type = FI_OP_CNTR_ADD,
		.op.cntr = &oc[2] };
	cf_ok(fi_control(&f.domain->fid, FI_QUEUE_WORK, &w[0]));
	cf_ok(fi_control(&f.domain->fid, FI_QUEUE_WORK, &w[1]));
	cf_ok(fi_control(&f.domain->fid, FI_QUEUE_WORK, &w[2]));
	cf_ok(fi_cntr_add(trig, 1));
	cf_expect(fi_cntr_read(x) == 0, "x at 1 of 2: %llu",
		  (unsigned long long)fi_cntr_read(x));
	cf_ok(fi_control(&f.domain->fid, FI_CANCEL_WORK, &w[1]));
	cf_expect(fi_control(&f.domain->fid, FI_CANCEL_WORK, &w[1]) ==
			  -FI_ENOENT,
		  "FI_CANCEL_WORK of work canceled already");
	cf_ok(fi_cntr_add(trig, 2));
	cf_expect(fi_cntr_read(x) == 5,
		  "x once the trigger counter passed 2 and 3 (the set "
		  "canceled): %llu, want 5",
		  (unsigned long long)fi_cntr_read(x));
	cf_ok(fi_control(&f.domain->fid, FI_FLUSH_WORK, NULL));
	cf_ok(fi_cntr_set(trig, 20));
	cf_expect(fi_cntr_read(x) == 5, "x after a flushed add's threshold: "
		  "%llu, want 5", (unsigned long long)fi_cntr_read(x));
	/* A transfer on another domain's endpoint, or on none: refused. */
	memset(&om, 0, sizeof(om));
	w[0] = (struct fi_deferred_work){ .threshold = 30,
		.triggering_cntr = trig, .op_type = FI_OP_SEND,
		.op.msg = &om };
	ret = fi_control(&f.domain->fid, FI_QUEUE_WORK, &w[0]);
	cf_expect(ret == -FI_EINVAL, "FI_QUEUE_WORK of a send on no "
		  "endpoint: %d", ret);

	/* Pending when its counter closes: it goes with the counter. */
	tg_ctx(&tc, x, 1000);
	cf_ok(tg_send(&f, &sm, 0, &tc));
	cf_ok(fi_close(&x->fid));
	cf_ok(fi_cntr_set(trig, 2000));
	tg_quiet(&f, trig, "a triggered send whose counter closed");
	cf_mem_free(&sm);
	cf_ok(fi_close(&trig->fid));
	cf_close(&f);
	return 0;
}

/*
 * Two processes: the relay posts a receive and, behind it, a triggered
 * send of that receive's buffer back, at the next value of its receive
 * counter, for each of TG_N messages; then it only reads its CQ.  Each
 * message comes back intact and in order: each send waited for its
 * receive.
 */
#define TG_N 8
#define TG_SEED 0x7c0

static struct cf_opts tg_proc_opts = {
	.caps = FI_MSG | FI_TRIGGER,
	.nep = 1,
	.no_insert = true,
	.cntr_mask = 1 << CF_CNTR_RECV,
};

bool cf_trigger_is_role(const char *role)
{
	return !strcmp(role, "trigger_relay") ||
	       !strcmp(role, "trigger_victim");
}

/* The victim: its name out, the case's in, then it waits to be killed. */
static int trigger_victim_main(void)
{
	struct cf_fix f;
	char b = 'R';

	cf_open(&f, cf_prov, &tg_proc_opts);
	cf_send_name(PEER_OUT, &f.ep[0]);
	(void)cf_recv_name(PEER_IN, &f);
	cf_write_all(PEER_OUT, &b, 1);
	cf_read_all(PEER_IN, &b, 1, 6 * CF_WAIT_MS);
	return 0;
}

int cf_trigger_peer_main(const char *role)
{
	struct fi_triggered_context2 tc[TG_N];
	struct fi_context2 rc[TG_N];
	struct cf_mem m;
	struct cf_fix f;
	fi_addr_t peer;
	char b = 'D';
	int i;

	if (!strcmp(role, "trigger_victim"))
		return trigger_victim_main();
	cf_open(&f, cf_prov, &tg_proc_opts);
	cf_send_name(PEER_OUT, &f.ep[0]);
	peer = cf_recv_name(PEER_IN, &f);
	cf_mem_reg(&f, 0, &m, TG_N * TG_LEN, FI_SEND | FI_RECV);
	for (i = 0; i < TG_N; i++) {
		struct iovec iov = { m.p + i * TG_LEN, TG_LEN };
		void *desc = m.desc;
		struct fi_msg msg = { .msg_iov = &iov, .desc = &desc,
				      .iov_count = 1, .addr = peer,
				      .context = &tc[i] };

		cf_post(&f, fi_recv(f.ep[0].ep, m.p + i * TG_LEN, TG_LEN,
				    m.desc, peer, &rc[i]));
		tg_ctx(&tc[i], f.ep[0].cntr[CF_CNTR_RECV], (size_t)i + 1);
		cf_ok(fi_sendmsg(f.ep[0].ep, &msg, FI_TRIGGER | FI_COMPLETION));
	}
	cf_write_all(PEER_OUT, &b, 1); /* ready */
	for (i = 0; i < TG_N; i++) {
		struct cf_comp c = cf_wait_ctx(&f, 0, &rc[i]);

		cf_assert(!c.err, "relay: receive %d: error %d", i, c.err);
		c = cf_wait_ctx(&f, 0, &tc[i]);
		cf_assert(!c.err, "relay: triggered send %d: error %d", i,
			  c.err);
	}
	cf_write_all(PEER_OUT, &b, 1);
	cf_mem_free(&m);
	cf_close(&f);
	return 0;
}

static int case_proc_trigger(const char *prov)
{
	struct fi_context2 sc[TG_N], rc[TG_N];
	struct peer_link l;
	struct cf_mem sm, rm;
	struct cf_comp c;
	struct cf_fix f;
	fi_addr_t peer;
	int i, status;
	char b;

	cf_open(&f, prov, &tg_proc_opts);
	cf_spawn_peer("trigger_relay", &l);
	cf_send_name(l.wfd, &f.ep[0]);
	peer = cf_recv_name(l.rfd, &f);
	cf_mem_reg(&f, 0, &sm, TG_N * TG_LEN, FI_SEND);
	cf_mem_reg(&f, 0, &rm, TG_N * TG_LEN, FI_RECV);
	for (i = 0; i < TG_N; i++) {
		cf_fill(sm.p + i * TG_LEN, TG_LEN, TG_SEED + (unsigned int)i);
		cf_post(&f, fi_recv(f.ep[0].ep, rm.p + i * TG_LEN, TG_LEN,
				    rm.desc, peer, &rc[i]));
	}
	cf_read_all(l.rfd, &b, 1, CF_WAIT_MS);
	for (i = 0; i < TG_N; i++)
		cf_post(&f, fi_send(f.ep[0].ep, sm.p + i * TG_LEN, TG_LEN,
				    sm.desc, peer, &sc[i]));
	for (i = 0; i < TG_N; i++) {
		c = cf_wait_ctx(&f, 0, &rc[i]);
		cf_assert(!c.err && c.len == TG_LEN,
			  "relayed message %d: error %d, %zu bytes", i, c.err,
			  c.len);
		cf_check_fill(rm.p + i * TG_LEN, TG_LEN,
			      TG_SEED + (unsigned int)i,
			      "a message the relay's triggered send carried "
			      "back");
		c = cf_wait_ctx(&f, 0, &sc[i]);
		cf_assert(!c.err, "send %d: error %d", i, c.err);
	}
	cf_read_all(l.rfd, &b, 1, CF_WAIT_MS);
	status = cf_reap(&l, CF_WAIT_MS);
	cf_assert(WIFEXITED(status) && !WEXITSTATUS(status),
		  "relay ended with status 0x%x", status);
	cf_expect_none(&f, 0, 50);
	cf_mem_free(&sm);
	cf_mem_free(&rm);
	cf_close(&f);
	close(l.wfd);
	close(l.rfd);
	return 0;
}

/*
 * Deferred data transfers (FI_QUEUE_WORK): a send and a receive wait for
 * their threshold, then count on their work's completion counter and not
 * on the endpoint's; the send, without FI_COMPLETION, writes no CQ entry;
 * the receive, with it, does, with its own context.
 */
static int case_trigger_work(const char *prov)
{
	struct cf_opts o = {
		.caps = FI_MSG | FI_RMA,
		.cntr_mask = (1 << CF_CNTR_SEND) | (1 << CF_CNTR_RECV),
	};
	struct fi_cntr_attr ca = { .events = FI_CNTR_EVENTS_COMP };
	struct fi_context2 cw[2], rc, sc;
	struct fi_deferred_work w[2];
	struct fi_op_msg om[2];
	struct fid_cntr *trig, *done;
	struct iovec iov[2];
	void *sdesc, *rdesc;
	struct cf_mem sm, rm;
	struct cf_comp c;
	struct cf_fix f;
	uint64_t end;

	/* The work names endpoints and addresses itself, which the suite's
	 * stand-ins for contexts cannot translate (trigger_chain covers
	 * contexts). */
	if (cf_contexts())
		cf_skip("CF_CONTEXTS=sep: deferred work names the library's "
			"endpoints, not the suite's stand-ins");
	cf_open(&f, prov, &o);
	cf_ok(fi_cntr_open(f.domain, &ca, &trig, NULL));
	cf_ok(fi_cntr_open(f.domain, &ca, &done, NULL));
	cf_mem_reg(&f, 0, &sm, 2 * TG_LEN, FI_SEND);
	cf_mem_reg(&f, 1, &rm, 2 * TG_LEN, FI_RECV);
	cf_fill(sm.p, TG_LEN, 0x7e0);
	cf_fill(sm.p + TG_LEN, TG_LEN, 0x7e1);
	sdesc = sm.desc;
	rdesc = rm.desc;

	/* A plain receive for the deferred send. */
	cf_post(&f, fi_recv(f.ep[1].ep, rm.p, TG_LEN, rm.desc, FI_ADDR_UNSPEC,
			    &rc));
	memset(om, 0, sizeof(om));
	iov[0] = (struct iovec){ sm.p, TG_LEN };
	om[0].ep = f.ep[0].ep;
	om[0].msg = (struct fi_msg){ .msg_iov = &iov[0], .desc = &sdesc,
				     .iov_count = 1, .addr = f.ep[1].addr,
				     .context = &cw[0] };
	iov[1] = (struct iovec){ rm.p + TG_LEN, TG_LEN };
	om[1].ep = f.ep[1].ep;
	om[1].msg = (struct fi_msg){ .msg_iov = &iov[1], .desc = &rdesc,
				     .iov_count = 1, .addr = FI_ADDR_UNSPEC,
				     .context = &cw[1] };
	om[1].flags = FI_COMPLETION;
	w[0] = (struct fi_deferred_work){ .threshold = 1,
		.triggering_cntr = trig, .completion_cntr = done,
		.op_type = FI_OP_SEND, .op.msg = &om[0] };
	w[1] = (struct fi_deferred_work){ .threshold = 1,
		.triggering_cntr = trig, .completion_cntr = done,
		.op_type = FI_OP_RECV, .op.msg = &om[1] };
	cf_ok(fi_control(&f.domain->fid, FI_QUEUE_WORK, &w[0]));
	cf_ok(fi_control(&f.domain->fid, FI_QUEUE_WORK, &w[1]));
	tg_quiet(&f, trig, "deferred work before its threshold");
	cf_expect(fi_cntr_read(done) == 0, "the completion counter before "
		  "the threshold: %llu", (unsigned long long)fi_cntr_read(done));

	cf_ok(fi_cntr_add(trig, 1));
	c = cf_wait_ctx(&f, 1, &rc);
	cf_assert(!c.err, "the deferred send's message: error %d", c.err);
	cf_check_fill(rm.p, TG_LEN, 0x7e0, "the deferred send's message");
	/* A plain send, into the deferred receive. */
	cf_post(&f, fi_send(f.ep[0].ep, sm.p + TG_LEN, TG_LEN, sm.desc,
			    f.ep[1].addr, &sc));
	c = cf_wait_ctx(&f, 1, &cw[1]);
	cf_assert(!c.err && c.len == TG_LEN && (c.flags & FI_RECV),
		  "the deferred receive (FI_COMPLETION): error %d, %zu bytes",
		  c.err, c.len);
	cf_check_fill(rm.p + TG_LEN, TG_LEN, 0x7e1, "the deferred receive");
	c = cf_wait_ctx(&f, 0, &sc);
	cf_assert(!c.err, "the plain send: error %d", c.err);
	end = cf_now_ms() + CF_WAIT_MS;
	while (fi_cntr_read(done) < 2 && cf_now_ms() < end)
		cf_progress(&f);
	cf_expect(fi_cntr_read(done) == 2 && !fi_cntr_readerr(done),
		  "the completion counter: %llu (%llu errors), want 2",
		  (unsigned long long)fi_cntr_read(done),
		  (unsigned long long)fi_cntr_readerr(done));
	/* The deferred send reported nothing at its endpoint. */
	cf_expect_none(&f, 0, 100);
	cf_expect_none(&f, 1, 50);
	cf_expect(fi_cntr_read(f.ep[0].cntr[CF_CNTR_SEND]) == 1,
		  "the endpoint's send counter: %llu, want 1 (the plain send "
		  "alone)",
		  (unsigned long long)fi_cntr_read(f.ep[0].cntr[CF_CNTR_SEND]));
	cf_expect(fi_cntr_read(f.ep[1].cntr[CF_CNTR_RECV]) == 1,
		  "the endpoint's receive counter: %llu, want 1 (the plain "
		  "receive alone)",
		  (unsigned long long)fi_cntr_read(f.ep[1].cntr[CF_CNTR_RECV]));
	cf_expect(fi_control(&f.domain->fid, FI_CANCEL_WORK, &w[0]) ==
			  -FI_ENOENT,
		  "FI_CANCEL_WORK of work done already");

	/* Deferred writes, each at a threshold of its own, as a client of
	 * the queue chains them: none before its turn, all land, each is
	 * counted once on the completion counter, none reaches the CQ. */
	{
		struct fi_deferred_work ww[TG_NW];
		struct fi_rma_iov riov[TG_NW];
		struct fi_context2 wc[TG_NW];
		struct fi_op_rma orma[TG_NW];
		struct iovec wiov[TG_NW];
		struct cf_mem wm, tm;
		void *wdesc;
		int i;

		cf_mem_reg(&f, 0, &wm, TG_NW * TG_LEN, FI_WRITE);
		cf_mem_reg(&f, 1, &tm, TG_NW * TG_LEN, FI_REMOTE_WRITE);
		memset(tm.p, 0, TG_NW * TG_LEN);
		wdesc = wm.desc;
		for (i = 0; i < TG_NW; i++) {
			cf_fill(wm.p + i * TG_LEN, TG_LEN,
				0x7f0 + (unsigned int)i);
			wiov[i] = (struct iovec){ wm.p + i * TG_LEN, TG_LEN };
			riov[i] = (struct fi_rma_iov){
				tm.raddr + (uint64_t)i * TG_LEN, TG_LEN,
				tm.key };
			memset(&orma[i], 0, sizeof(orma[i]));
			orma[i].ep = f.ep[0].ep;
			orma[i].msg = (struct fi_msg_rma){
				.msg_iov = &wiov[i], .desc = &wdesc,
				.iov_count = 1, .addr = f.ep[1].addr,
				.rma_iov = &riov[i], .rma_iov_count = 1,
				.context = &wc[i] };
			/* The trigger counter is at 1: 2, 3, 4, 5. */
			ww[i] = (struct fi_deferred_work){
				.threshold = 2 + (uint64_t)i,
				.triggering_cntr = trig,
				.completion_cntr = done,
				.op_type = FI_OP_WRITE, .op.rma = &orma[i] };
			cf_ok(fi_control(&f.domain->fid, FI_QUEUE_WORK,
					 &ww[i]));
		}
		cf_ok(fi_cntr_add(trig, 2)); /* 3: the first two */
		end = cf_now_ms() + CF_WAIT_MS;
		while (fi_cntr_read(done) < 4 && cf_now_ms() < end)
			cf_progress(&f);
		cf_expect(fi_cntr_read(done) == 4,
			  "completion counter after 2 of 4 deferred writes' "
			  "thresholds: %llu, want 4",
			  (unsigned long long)fi_cntr_read(done));
		cf_ok(fi_cntr_add(trig, 2)); /* 5: the last two */
		end = cf_now_ms() + CF_WAIT_MS;
		while (fi_cntr_read(done) < 2 + TG_NW && cf_now_ms() < end)
			cf_progress(&f);
		cf_expect(fi_cntr_read(done) == 2 + TG_NW &&
				  !fi_cntr_readerr(done),
			  "completion counter after %d deferred writes: %llu "
			  "(%llu errors)", TG_NW,
			  (unsigned long long)fi_cntr_read(done),
			  (unsigned long long)fi_cntr_readerr(done));
		for (i = 0; i < TG_NW; i++)
			cf_check_fill(tm.p + i * TG_LEN, TG_LEN,
				      0x7f0 + (unsigned int)i,
				      "a deferred write's bytes");
		cf_expect_none(&f, 0, 50);
		cf_mem_free(&wm);
		cf_mem_free(&tm);
	}
	cf_mem_free(&sm);
	cf_mem_free(&rm);
	cf_ok(fi_close(&trig->fid));
	cf_ok(fi_close(&done->fid));
	cf_close(&f);
	return 0;
}

/*
 * A peer killed between the post of triggered sends to it and their
 * threshold: once the threshold comes, each completes exactly once (in
 * error, or sent into what is left of the peer), none is lost, none
 * hangs; and a triggered send still below its threshold goes with its
 * endpoint at close.
 */
static int case_proc_trigger_dead_peer(const char *prov)
{
	struct fi_cntr_attr ca = { .events = FI_CNTR_EVENTS_COMP };
	struct fi_triggered_context2 tc[TG_N + 1];
	bool done[TG_N] = { false };
	struct peer_link l;
	struct fid_cntr *trig;
	struct cf_mem sm;
	struct cf_comp c;
	struct cf_fix f;
	fi_addr_t peer;
	int i, n = 0, nerr = 0, status;
	uint64_t end;
	char b;

	cf_open(&f, prov, &tg_proc_opts);
	cf_spawn_peer("trigger_victim", &l);
	cf_send_name(l.wfd, &f.ep[0]);
	peer = cf_recv_name(l.rfd, &f);
	cf_read_all(l.rfd, &b, 1, CF_WAIT_MS);
	cf_ok(fi_cntr_open(f.domain, &ca, &trig, NULL));
	cf_mem_reg(&f, 0, &sm, (TG_N + 1) * TG_LEN, FI_SEND);
	for (i = 0; i <= TG_N; i++) {
		struct iovec iov = { sm.p + i * TG_LEN, TG_LEN };
		void *desc = sm.desc;
		struct fi_msg msg = { .msg_iov = &iov, .desc = &desc,
				      .iov_count = 1, .addr = peer,
				      .context = &tc[i] };

		tg_ctx(&tc[i], trig, i < TG_N ? 1 : 1000);
		cf_ok(fi_sendmsg(f.ep[0].ep, &msg,
				 FI_TRIGGER | FI_COMPLETION));
	}
	cf_assert(!kill(l.pid, SIGKILL), "kill: %s", strerror(errno));
	status = cf_reap(&l, CF_WAIT_MS);
	cf_assert(WIFSIGNALED(status), "the peer ended with status 0x%x",
		  status);
	cf_ok(fi_cntr_add(trig, 1));
	end = cf_now_ms() + CF_WAIT_MS;
	while (n < TG_N) {
		cf_assert(cf_now_ms() < end,
			  "%d of %d triggered sends to a dead peer completed "
			  "within %d ms", n, TG_N, CF_WAIT_MS);
		if (!cf_poll(&f, 0, &c, 10))
			continue;
		for (i = 0; i < TG_N && c.ctx != &tc[i]; i++)
			;
		cf_assert(i < TG_N, "a completion of nothing posted (%p)",
			  c.ctx);
		cf_assert(!done[i], "triggered send %d completed twice", i);
		done[i] = true;
		n++;
		nerr += c.err != 0;
	}
	cf_note("%d of %d triggered sends to the dead peer ended in error",
		nerr, TG_N);
	cf_expect_none(&f, 0, 100);
	/* tc[TG_N] (threshold 1000) still waits: it goes with its
	 * endpoint, closed before its counter. */
	if (!cf_contexts()) {
		cf_ok(fi_close(&f.ep[0].ep->fid));
		f.ep[0].ep = NULL;
	}
	cf_ok(fi_close(&trig->fid));
	cf_mem_free(&sm);
	cf_close(&f);
	close(l.wfd);
	close(l.rfd);
	return 0;
}

const struct cf_case cf_cases_trigger[] = {
    {"proc_trigger_dead_peer",
     "FI_TRIGGER to a peer killed before the threshold: each triggered "
     "send completes exactly once when it fires, none hangs",
     case_proc_trigger_dead_peer},
    {"trigger_work",
     "FI_QUEUE_WORK of a send and a receive: each waits for its threshold, "
     "counts on its completion counter and not the endpoint's; CQ entries "
     "only with FI_COMPLETION",
     case_trigger_work},
    {"proc_trigger",
     "FI_TRIGGER across processes: a relay's triggered sends, each "
     "behind its receive on the receive counter, carry every message "
     "back intact and in order",
     case_proc_trigger},
    {"trigger_chain",
     "FI_TRIGGER: a tagged send, a write, an atomic and sends wait for "
     "their thresholds on one counter, fire in threshold order however "
     "it jumps; a cancel before the threshold; a triggered answer to a "
     "receive counter",
     case_trigger_chain},
    {"trigger_rules",
     "FI_TRIGGER needs the capability and a counter; FI_QUEUE_WORK, "
     "FI_CANCEL_WORK and FI_FLUSH_WORK of counter operations; pending "
     "operations go with their counter",
     case_trigger_rules},
    {NULL},
};
