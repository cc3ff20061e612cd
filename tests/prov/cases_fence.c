// SPDX-License-Identifier: BSD-2-Clause
/*
 * FI_FENCE (fi_msg(3), fi_rma(3)): an operation posted with FI_FENCE, and
 * every operation posted after it to the same peer, wait until every
 * operation posted to that peer before it has completed.
 *
 * What the initiator can see of it, on any provider: nothing posted from
 * the fence on completes before what was posted before it, and while an
 * earlier operation cannot complete (a 1 MiB send at FI_DELIVERY_COMPLETE
 * whose receiver posted no receive yet; an RMA to a target that calls
 * nothing of the provider, where the transport needs its progress) the
 * fenced one neither completes nor arrives.  What the target sees: the data of a write before
 * the fenced message that follows it (the put-with-signal of OpenSHMEM),
 * and a read returns the data from before the fenced write after it.
 *
 * The target process ("fence_target") registers a region and then sleeps
 * in read() on its pipe, calling nothing of the provider, until the case
 * wakes it with a command.
 *
 * fence_local          one process: a 1 MiB send at FI_DELIVERY_COMPLETE
 *                      to an endpoint with no receive posted, then a
 *                      fenced send (plain,
 *                      FI_INJECT, triggered, and by the FI_FENCE op flag):
 *                      none completes until the first did
 * cm_fence             the same over a connected FI_EP_MSG pair
 * proc_fence_read_write a read of the target's region, then a fenced
 *                      write of it: the read returns the old data, the
 *                      target ends with the new; a read, then a fenced
 *                      send: the send completes after the read
 * proc_fence_put_signal a 4 MiB (and an inject-size) write, then a fenced
 *                      send or FI_INJECT send of a flag: when the flag
 *                      arrives the whole write is there; a 1 MiB send,
 *                      then a fenced flag: delivered in that order
 * proc_fence_per_peer  with a fence to the sleeping target held back, a
 *                      fenced send to another endpoint completes at once
 * proc_fence_peer_dies the target, with a 1 MiB send and a fenced
 *                      send to it outstanding, is SIGKILLed: both
 *                      complete in error, neither hangs
 */
#include "config.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rdma/fi_trigger.h>

#include "conformance.h"
#include "proc.h"

#define FC_REGION (4u << 20) /* the target's registration */
#define FC_BIG (1u << 20)    /* a message past every eager size */
#define FC_FLAG_TAG 0xfe11ULL
#define FC_BIG_TAG 0xfe12ULL
/* The first operation of a fence: a message that completes only when a
 * receive takes it (delivery complete), whatever the transport does with
 * its bytes before (tcp writes them out and the receiver keeps them). */
#define FC_BIG_FLAGS (FI_DELIVERY_COMPLETE | FI_COMPLETION)
#define FC_ALARM_S 120
/* Progress while nothing may complete: a pass never depends on it. */
#define FC_QUIET_MS 150

#define FC_CAPS (FI_MSG | FI_TAGGED | FI_RMA | FI_FENCE)

/* Case -> target, over the pipe. */
struct fc_cmd {
	char op; /* 'F' fill, 'W' wake and receive, 'Q' quit */
	uint8_t pad[3];
	uint32_t seed; /* 'F': fill with it; 'W': what the region must hold */
	uint32_t len;  /* bytes of the region concerned */
	uint32_t big;  /* 'W': receive the 1 MiB message before the flag */
};

/* Target -> case. */
struct fc_res {
	int32_t err;   /* a receive's error, positive */
	uint32_t bad;  /* first wrong byte of the region + 1, or 0 */
	uint32_t order; /* 1: the flag completed before the big message */
	uint32_t big_bad; /* the big message's data was wrong */
};

static void fc_open(struct cf_fix *f, const char *prov, int nep)
{
	struct cf_opts o = {.caps = FC_CAPS, .nep = nep, .no_insert = nep == 1};

	cf_open(f, prov, &o);
}

static uint32_t first_bad(const uint8_t *p, size_t len, unsigned int seed)
{
	uint8_t *want = malloc(len ? len : 1);
	uint32_t bad = 0;
	size_t i;

	cf_assert(want, "out of memory");
	cf_fill(want, len, seed);
	for (i = 0; i < len; i++)
		if (p[i] != want[i]) {
			bad = (uint32_t)i + 1;
			break;
		}
	free(want);
	return bad;
}

/* ---- the target ----------------------------------------------------------- */

static int target_main(void)
{
	struct fi_context2 fc, bc;
	struct cf_mem t, big, flag;
	struct fc_cmd cmd;
	struct fc_res res;
	struct cf_comp c;
	struct cf_fix f;
	fi_addr_t peer;
	char b = 'k';
	int n;

	fc_open(&f, cf_prov, 1);
	cf_mem_reg(&f, 0, &t, FC_REGION, FI_REMOTE_READ | FI_REMOTE_WRITE);
	cf_mem_reg(&f, 0, &big, FC_BIG, FI_RECV);
	cf_mem_reg(&f, 0, &flag, 64, FI_RECV);
	cf_send_name(PEER_OUT, &f.ep[0]);
	cf_write_all(PEER_OUT, &t.key, sizeof(t.key));
	cf_write_all(PEER_OUT, &t.raddr, sizeof(t.raddr));
	peer = cf_recv_name(PEER_IN, &f);
	for (;;) {
		/* Asleep: nothing of the provider until the next command. */
		cf_read_all(PEER_IN, &cmd, sizeof(cmd), FC_ALARM_S * 1000);
		if (cmd.op == 'Q')
			break;
		if (cmd.op == 'F') {
			cf_fill(t.p, cmd.len, cmd.seed);
			cf_write_all(PEER_OUT, &b, 1);
			continue;
		}
		cf_assert(cmd.op == 'W', "target: command %c", cmd.op);
		memset(&res, 0, sizeof(res));
		if (cmd.big)
			cf_post(&f, fi_trecv(f.ep[0].ep, big.p, FC_BIG,
					     big.desc, peer, FC_BIG_TAG, 0,
					     &bc));
		cf_post(&f, fi_trecv(f.ep[0].ep, flag.p, 64, flag.desc, peer,
				     FC_FLAG_TAG, 0, &fc));
		for (n = cmd.big ? 2 : 1; n; n--) {
			c = cf_wait(&f, 0);
			if (c.err && !res.err)
				res.err = c.err;
			if (c.ctx == &fc) {
				/* The flag: what came before it is here. */
				res.order = n > 1;
				res.bad = first_bad(t.p, cmd.len, cmd.seed);
			} else if (!c.err) {
				res.big_bad = first_bad(big.p, FC_BIG,
							cmd.seed + 1) != 0;
			}
		}
		cf_write_all(PEER_OUT, &res, sizeof(res));
	}
	cf_mem_free(&flag);
	cf_mem_free(&big);
	cf_mem_free(&t);
	cf_close(&f);
	return 0;
}

bool cf_fence_is_role(const char *role)
{
	return !strcmp(role, "fence_target");
}

int cf_fence_peer_main(const char *role)
{
	(void)role;
	return target_main();
}

/* ---- the case's side ------------------------------------------------------ */

struct fc_state {
	struct cf_fix f;
	struct peer_link l;
	fi_addr_t peer;
	uint64_t key, raddr;
	struct cf_mem src, dst; /* local: what is written, what is read */
};

static void fc_start(struct fc_state *s, const char *prov, int nep)
{
	fc_open(&s->f, prov, nep);
	cf_mem_reg(&s->f, 0, &s->src, FC_REGION, FI_SEND | FI_WRITE);
	cf_mem_reg(&s->f, 0, &s->dst, FC_REGION, FI_READ | FI_RECV);
	cf_spawn_peer("fence_target", &s->l);
	s->peer = cf_recv_name(s->l.rfd, &s->f);
	cf_read_all(s->l.rfd, &s->key, sizeof(s->key), CF_WAIT_MS);
	cf_read_all(s->l.rfd, &s->raddr, sizeof(s->raddr), CF_WAIT_MS);
	cf_send_name(s->l.wfd, &s->f.ep[0]);
}

static void fc_end(struct fc_state *s)
{
	struct fc_cmd q = {.op = 'Q'};
	int status;

	cf_write_all(s->l.wfd, &q, sizeof(q));
	status = cf_reap(&s->l, CF_WAIT_MS);
	cf_expect(status == 0, "the target exited with status %d", status);
	cf_mem_free(&s->src);
	cf_mem_free(&s->dst);
	cf_close(&s->f);
}

static void fc_fill(struct fc_state *s, unsigned int seed, size_t len)
{
	struct fc_cmd cmd = {.op = 'F', .seed = seed, .len = (uint32_t)len};
	char b = 0;

	cf_write_all(s->l.wfd, &cmd, sizeof(cmd));
	cf_read_all(s->l.rfd, &b, 1, CF_WAIT_MS);
	cf_assert(b == 'k', "the target answered %c to a fill", b);
}

/* Wake the target: it receives (the 1 MiB message, then) the flag and
 * checks len bytes of its region against seed when the flag is in. */
static void fc_wake(struct fc_state *s, unsigned int seed, size_t len,
		    bool big)
{
	struct fc_cmd cmd = {.op = 'W', .seed = seed, .len = (uint32_t)len,
			     .big = big};

	cf_write_all(s->l.wfd, &cmd, sizeof(cmd));
}

static struct fc_res fc_result(struct fc_state *s, const char *what)
{
	struct fc_res r;

	cf_read_all(s->l.rfd, &r, sizeof(r), CF_WAIT_MS);
	cf_expect(!r.err, "%s: a receive at the target failed: %d", what,
		  r.err);
	cf_expect(!r.order, "%s: the fenced flag arrived before the "
			    "message sent before it",
		  what);
	cf_expect(!r.big_bad, "%s: the 1 MiB message arrived wrong",
		  what);
	return r;
}

/* A tagged send of len bytes of m to dest with flags. */
static ssize_t fc_tsend(struct cf_fix *f, int i, struct cf_mem *m,
			size_t len, fi_addr_t dest, uint64_t tag,
			uint64_t flags, void *ctx)
{
	struct iovec iov = {m->p, len};
	void *desc = m->desc;
	struct fi_msg_tagged msg = {.msg_iov = &iov, .desc = &desc,
				    .iov_count = 1, .addr = dest, .tag = tag,
				    .context = ctx};

	return fi_tsendmsg(f->ep[i].ep, &msg, flags);
}

/* Progress for a while: nothing of endpoint i may complete. */
static void fc_quiet(struct cf_fix *f, int i, const char *what)
{
	uint64_t end = cf_now_ms() + FC_QUIET_MS;

	while (cf_now_ms() < end)
		cf_progress(f);
	cf_expect(!f->ep[i].q.n,
		  "%s: %zu completion(s) while an operation before the "
		  "fence cannot complete (first: ctx %p err %d)",
		  what, f->ep[i].q.n, f->ep[i].q.n ? f->ep[i].q.v[0].ctx : NULL,
		  f->ep[i].q.n ? f->ep[i].q.v[0].err : 0);
}

/* The next two completions of endpoint i: first, then second. */
static void fc_in_order(struct cf_fix *f, int i, void *first, void *second,
			const char *what)
{
	struct cf_comp a = cf_wait(f, i), b;

	cf_expect(a.ctx == first,
		  "%s: the fenced operation completed before the one posted "
		  "before it",
		  what);
	cf_expect(!a.err, "%s: first completion err %d", what, a.err);
	b = cf_wait(f, i);
	cf_expect(b.ctx == (a.ctx == first ? second : first),
		  "%s: completion of ctx %p, not of the fenced operation", what,
		  b.ctx);
	cf_expect(!b.err, "%s: second completion err %d", what, b.err);
}

/* ---- fence_local ---------------------------------------------------------- */

/*
 * One process, two endpoints: a 1 MiB send from 0 to 1 at
 * FI_DELIVERY_COMPLETE, which cannot complete before 1 posts its receive,
 * then a small send fenced in one of four ways.  The small one must not
 * complete, nor arrive, before the big one did.
 */
enum fc_way { FC_PLAIN, FC_INJECT, FC_TRIGGER, FC_OPFLAG, FC_NWAYS };

static const char *const fc_way_name[] = {
	"fi_tsendmsg(FI_FENCE)", "fi_tsendmsg(FI_FENCE | FI_INJECT)",
	"triggered fi_tsendmsg(FI_FENCE)", "fi_tsend with FI_FENCE op flag"};

static void fence_local_run(struct cf_fix *fp)
{
	struct fi_cntr_attr ca = {.events = FI_CNTR_EVENTS_COMP};
	struct fi_triggered_context2 tc;
	struct fi_context2 bc, sc, rb, rs;
	struct cf_mem big, small, rbig, rsmall;
	struct fid_cntr *trig = NULL;
	struct cf_fix f = *fp;
	struct cf_comp c;
	int way;

	cf_mem_reg(&f, 0, &big, FC_BIG, FI_SEND);
	cf_mem_reg(&f, 0, &small, 64, FI_SEND);
	cf_mem_reg(&f, 1, &rbig, FC_BIG, FI_RECV);
	cf_mem_reg(&f, 1, &rsmall, 64, FI_RECV);
	for (way = 0; way < FC_NWAYS; way++) {
		const char *what = fc_way_name[way];
		void *sctx = &sc;

		cf_fill(big.p, FC_BIG, 0xfe00 + (unsigned int)way);
		cf_fill(small.p, 64, 0xfe10 + (unsigned int)way);
		cf_post(&f, fc_tsend(&f, 0, &big, FC_BIG, f.ep[1].addr,
				     FC_BIG_TAG, FC_BIG_FLAGS, &bc));
		switch (way) {
		case FC_PLAIN:
			cf_post(&f, fc_tsend(&f, 0, &small, 64, f.ep[1].addr,
					     FC_FLAG_TAG,
					     FI_FENCE | FI_COMPLETION, &sc));
			break;
		case FC_INJECT:
			cf_post(&f, fc_tsend(&f, 0, &small, 64, f.ep[1].addr,
					     FC_FLAG_TAG,
					     FI_FENCE | FI_INJECT |
						     FI_COMPLETION,
					     &sc));
			/* The buffer is ours again. */
			memset(small.p, 0xee, 64);
			break;
		case FC_TRIGGER:
			cf_ok(fi_cntr_open(f.domain, &ca, &trig, NULL));
			memset(&tc, 0, sizeof(tc));
			tc.event_type = FI_TRIGGER_THRESHOLD;
			tc.trigger.threshold.cntr = trig;
			tc.trigger.threshold.threshold = 1;
			sctx = &tc;
			cf_ok(fc_tsend(&f, 0, &small, 64, f.ep[1].addr,
				       FC_FLAG_TAG,
				       FI_FENCE | FI_TRIGGER | FI_COMPLETION,
				       &tc));
			cf_ok(fi_cntr_add(trig, 1));
			break;
		case FC_OPFLAG: {
			uint64_t fl = FI_TRANSMIT | FI_FENCE | FI_COMPLETION;
			int r = fi_control(&f.ep[0].ep->fid, FI_SETOPSFLAG,
					   &fl);

			cf_assert(!r, "fi_control(FI_SETOPSFLAG, FI_FENCE): %d",
				  r);
			cf_post(&f, fi_tsend(f.ep[0].ep, small.p, 64,
					     small.desc, f.ep[1].addr,
					     FC_FLAG_TAG, &sc));
			fl = FI_TRANSMIT | FI_COMPLETION;
			cf_ok(fi_control(&f.ep[0].ep->fid, FI_SETOPSFLAG,
					 &fl));
			break;
		}
		}
		fc_quiet(&f, 0, what);
		/* The small one, if it went, waits unexpected at 1: a
		 * receive of it now would find it. */
		cf_post(&f, fi_trecv(f.ep[1].ep, rsmall.p, 64, rsmall.desc,
				     FI_ADDR_UNSPEC, FC_FLAG_TAG, 0, &rs));
		fc_quiet(&f, 1, what);
		cf_post(&f, fi_trecv(f.ep[1].ep, rbig.p, FC_BIG, rbig.desc,
				     FI_ADDR_UNSPEC, FC_BIG_TAG, 0, &rb));
		fc_in_order(&f, 0, &bc, sctx, what);
		fc_in_order(&f, 1, &rb, &rs, what);
		cf_check_fill(rbig.p, FC_BIG, 0xfe00 + (unsigned int)way, what);
		cf_check_fill(rsmall.p, 64, 0xfe10 + (unsigned int)way, what);
		if (trig) {
			cf_ok(fi_close(&trig->fid));
			trig = NULL;
		}
	}
	/* Nothing in flight: a fenced send goes at once. */
	cf_post(&f, fi_trecv(f.ep[1].ep, rsmall.p, 64, rsmall.desc,
			     FI_ADDR_UNSPEC, FC_FLAG_TAG, 0, &rs));
	cf_post(&f, fc_tsend(&f, 0, &small, 64, f.ep[1].addr, FC_FLAG_TAG,
			     FI_FENCE | FI_COMPLETION, &sc));
	c = cf_wait_ctx(&f, 0, &sc);
	cf_expect(!c.err, "a fenced send with nothing before it: err %d",
		  c.err);
	c = cf_wait_ctx(&f, 1, &rs);
	cf_expect(!c.err, "its receive: err %d", c.err);
	cf_mem_free(&big);
	cf_mem_free(&small);
	cf_mem_free(&rbig);
	cf_mem_free(&rsmall);
	*fp = f;
}

static int case_fence_local(const char *prov)
{
	struct cf_opts o = {.caps = FC_CAPS | FI_TRIGGER};
	struct cf_fix f;

	cf_open(&f, prov, &o);
	fence_local_run(&f);
	cf_close(&f);
	return 0;
}

/* The same over a connected FI_EP_MSG pair (tcp's MSG endpoints). */
static int case_cm_fence(const char *prov)
{
	struct cf_fix *f = cf_msg_pair_open(prov, FC_CAPS | FI_TRIGGER);

	fence_local_run(f);
	cf_msg_pair_close(f);
	return 0;
}

/* ---- two processes -------------------------------------------------------- */

static ssize_t fc_rma(struct fc_state *s, bool write, struct cf_mem *m,
		      size_t len, uint64_t flags, void *ctx)
{
	struct iovec iov = {m->p, len};
	void *desc = m->desc;
	struct fi_rma_iov rma = {s->raddr, len, s->key};
	struct fi_msg_rma msg = {.msg_iov = &iov, .desc = &desc,
				 .iov_count = 1, .addr = s->peer,
				 .rma_iov = &rma, .rma_iov_count = 1,
				 .context = ctx};

	return write ? fi_writemsg(s->f.ep[0].ep, &msg, flags)
		     : fi_readmsg(s->f.ep[0].ep, &msg, flags);
}

/* To the sleeping target: a 1 MiB send of src (seed), which completes
 * only once the target receives it, then a fenced 8 B flag from m. */
static void fc_hold(struct fc_state *s, struct cf_mem *m, unsigned int seed,
		    void *bc, void *sc)
{
	cf_fill(s->src.p, FC_BIG, seed);
	cf_post(&s->f, fc_tsend(&s->f, 0, &s->src, FC_BIG, s->peer,
				FC_BIG_TAG, FC_BIG_FLAGS, bc));
	cf_post(&s->f, fc_tsend(&s->f, 0, m, 8, s->peer, FC_FLAG_TAG,
				FI_FENCE | FI_COMPLETION, sc));
}

/* Wake the target for what fc_hold sent: it receives both, the 1 MiB
 * message first; here they complete in that order. */
static void fc_release(struct fc_state *s, unsigned int seed, void *bc,
		       void *sc, const char *what)
{
	fc_wake(s, seed, 64, true);
	fc_in_order(&s->f, 0, bc, sc, what);
	(void)fc_result(s, what);
}

static int case_proc_fence_read_write(const char *prov)
{
	struct fi_context2 rd, wr, sc;
	struct fc_state s;
	const size_t len = 64 << 10;
	struct fc_res r;

	fc_start(&s, prov, 1);
	/* A read, then a fenced write of the same bytes: the read sees the
	 * old ones, the target ends with the new ones. */
	fc_fill(&s, 0xa1, len);
	cf_fill(s.src.p, len, 0xa2);
	memset(s.dst.p, 0, len);
	cf_post(&s.f, fc_rma(&s, false, &s.dst, len, FI_COMPLETION, &rd));
	cf_post(&s.f, fc_rma(&s, true, &s.src, len, FI_FENCE | FI_COMPLETION,
			     &wr));
	/* The target sleeps: the read may need it; then the write waits. */
	fc_wake(&s, 0xa2, len, false);
	fc_in_order(&s.f, 0, &rd, &wr, "read, then fenced write");
	cf_check_fill(s.dst.p, len, 0xa1,
		      "the read before the fenced write of its bytes");
	/* The flag tells the target to look. */
	cf_post(&s.f, fc_tsend(&s.f, 0, &s.src, 8, s.peer, FC_FLAG_TAG,
			       FI_COMPLETION, &sc));
	(void)cf_wait_ctx(&s.f, 0, &sc);
	r = fc_result(&s, "read, then fenced write");
	cf_expect(!r.bad, "the fenced write is not in place at the target "
			  "(byte %u)", r.bad - 1);

	/* A read, then a fenced send: the send after the read's data. */
	fc_fill(&s, 0xa3, len);
	memset(s.dst.p, 0, len);
	cf_post(&s.f, fc_rma(&s, false, &s.dst, len, FI_COMPLETION, &rd));
	cf_post(&s.f, fc_tsend(&s.f, 0, &s.src, 8, s.peer, FC_FLAG_TAG,
			       FI_FENCE | FI_COMPLETION, &sc));
	fc_wake(&s, 0xa3, len, false);
	fc_in_order(&s.f, 0, &rd, &sc, "read, then fenced send");
	cf_check_fill(s.dst.p, len, 0xa3, "the read before a fenced send");
	r = fc_result(&s, "read, then fenced send");
	cf_expect(!r.bad, "the target's region changed (byte %u)", r.bad - 1);
	fc_end(&s);
	return 0;
}

static int case_proc_fence_put_signal(const char *prov)
{
	static const struct {
		size_t len;
		uint64_t flags;
		const char *what;
	} rounds[] = {
		{FC_REGION, FI_FENCE | FI_COMPLETION,
		 "4 MiB write, then fenced send"},
		{FC_REGION, FI_FENCE | FI_INJECT | FI_COMPLETION,
		 "4 MiB write, then fenced FI_INJECT send"},
		{64, FI_FENCE | FI_INJECT | FI_COMPLETION,
		 "64 B write, then fenced FI_INJECT send"},
	};
	struct fi_context2 wr, sc, bc;
	struct fc_state s;
	struct cf_mem flag;
	struct fc_res r;
	size_t i;

	fc_start(&s, prov, 1);
	cf_mem_reg(&s.f, 0, &flag, 64, FI_SEND);
	for (i = 0; i < sizeof(rounds) / sizeof(rounds[0]); i++) {
		unsigned int seed = 0xb0 + (unsigned int)i;

		fc_fill(&s, 0, FC_REGION);
		cf_fill(s.src.p, rounds[i].len, seed);
		cf_post(&s.f, fc_rma(&s, true, &s.src, rounds[i].len,
				     FI_COMPLETION, &wr));
		memset(flag.p, (int)i, 64);
		cf_post(&s.f, fc_tsend(&s.f, 0, &flag, 8, s.peer, FC_FLAG_TAG,
				       rounds[i].flags, &sc));
		if (rounds[i].flags & FI_INJECT)
			memset(flag.p, 0xee, 64);
		fc_wake(&s, seed, rounds[i].len, false);
		fc_in_order(&s.f, 0, &wr, &sc, rounds[i].what);
		r = fc_result(&s, rounds[i].what);
		cf_expect(!r.bad,
			  "%s: the flag arrived before byte %u of the write",
			  rounds[i].what, r.bad - 1);
	}
	/* A 1 MiB send, then a fenced flag: the receiver's posting
	 * completes the first, and only then does the flag go. */
	fc_fill(&s, 0xc0, 64);
	fc_hold(&s, &flag, 0xc1, &bc, &sc);
	fc_quiet(&s.f, 0, "1 MiB send to a sleeping target, then fence");
	fc_release(&s, 0xc0, &bc, &sc, "1 MiB send, then fenced send");
	cf_mem_free(&flag);
	fc_end(&s);
	return 0;
}

static int case_proc_fence_per_peer(const char *prov)
{
	struct fi_context2 bc, sc, oc, orc;
	struct fc_state s;
	struct cf_mem rl;
	struct cf_comp c;

	fc_start(&s, prov, 2);
	cf_mem_reg(&s.f, 1, &rl, 64, FI_RECV);
	fc_fill(&s, 0xd0, 64);
	fc_hold(&s, &s.src, 0xd1, &bc, &sc);
	/* To the other endpoint, fenced too: it does not wait for them. */
	cf_post(&s.f, fi_trecv(s.f.ep[1].ep, rl.p, 64, rl.desc,
			       FI_ADDR_UNSPEC, FC_FLAG_TAG, 0, &orc));
	cf_post(&s.f, fc_tsend(&s.f, 0, &s.src, 64, s.f.ep[1].addr,
			       FC_FLAG_TAG, FI_FENCE | FI_COMPLETION, &oc));
	c = cf_wait(&s.f, 0);
	cf_expect(c.ctx == &oc && !c.err,
		  "the fenced send to another peer did not complete first "
		  "(ctx %p, err %d): it waited for the sleeping one's",
		  c.ctx, c.err);
	c = cf_wait_ctx(&s.f, 1, &orc);
	cf_expect(!c.err, "its receive: err %d", c.err);
	cf_check_fill(rl.p, 64, 0xd1, "the fenced send to another peer");
	fc_release(&s, 0xd0, &bc, &sc, "the sleeping target's");
	cf_mem_free(&rl);
	fc_end(&s);
	return 0;
}

static int case_proc_fence_peer_dies(const char *prov)
{
	struct fi_context2 bc, sc;
	struct fc_state s;
	struct cf_comp a, b;
	int status;

	fc_start(&s, prov, 1);
	fc_hold(&s, &s.src, 0xe1, &bc, &sc);
	fc_quiet(&s.f, 0, "a fence behind a send to a sleeping target");
	cf_assert(!kill(s.l.pid, SIGKILL), "kill %d", (int)s.l.pid);
	status = cf_reap(&s.l, CF_WAIT_MS);
	(void)status;
	a = cf_wait(&s.f, 0);
	b = cf_wait(&s.f, 0);
	if (a.ctx != &bc) {
		struct cf_comp t = a;

		a = b;
		b = t;
	}
	cf_expect(a.ctx == &bc && b.ctx == &sc,
		  "completions of ctx %p and %p, not of the two sends", a.ctx,
		  b.ctx);
	cf_expect(a.err, "the 1 MiB send to the dead peer succeeded");
	cf_expect(b.err, "the fenced send to the dead peer succeeded");
	cf_mem_free(&s.src);
	cf_mem_free(&s.dst);
	cf_close(&s.f);
	return 0;
}

const struct cf_case cf_cases_fence[] = {
    {"fence_local",
     "a 1 MiB delivery-complete send to an endpoint with no receive, then a send fenced "
     "by FI_FENCE, FI_FENCE|FI_INJECT, a triggered FI_FENCE and the "
     "FI_FENCE op flag: none completes nor arrives before the first",
     case_fence_local},
    {"cm_fence",
     "FI_EP_MSG: fence_local over a connected pair",
     case_cm_fence},
    {"proc_fence_read_write",
     "two processes: a read then a fenced write of the same bytes reads "
     "the old data; a read then a fenced send completes in that order",
     case_proc_fence_read_write},
    {"proc_fence_put_signal",
     "two processes: a 4 MiB or 64 B write then a fenced send or "
     "FI_INJECT send of a flag: the write is whole when the flag arrives; "
     "a 1 MiB send then a fenced flag, in that order",
     case_proc_fence_put_signal},
    {"proc_fence_per_peer",
     "two processes: a fence held back for a sleeping peer does not hold "
     "a fenced send to another endpoint",
     case_proc_fence_per_peer},
    {"proc_fence_peer_dies",
     "two processes: a 1 MiB send and a fenced send to a peer that "
     "is SIGKILLed both complete in error",
     case_proc_fence_peer_dies},
    {NULL},
};
