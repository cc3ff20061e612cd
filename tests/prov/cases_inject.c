// SPDX-License-Identifier: BSD-2-Clause
/*
 * Injects to a peer that sleeps (two processes).  An MPI program posts a
 * hundred MPI_Isend of 400 bytes (fi_tinjectdata) to a rank that sleeps
 * for a second: each call must be taken at once, up to what tx_attr
 * promises (tx_attr->size transmits of up to inject_size bytes), whatever
 * the peer does meanwhile.  A call that says -FI_EAGAIN there makes a
 * client that retries block in a nonblocking call for as long as the peer
 * sleeps.
 *
 * The peer ("inject_sleeper") calls nothing of the provider between
 * rounds: it blocks in read() on its pipe.  In each round the case posts
 * its injects, then wakes the peer with a command naming what to expect;
 * the peer receives them all (tagged, each with its index as remote CQ
 * data and in its payload's seed, checked byte for byte, in the order
 * they were posted) and answers over the provider, which the case waits
 * for asleep in fi_cq_sread (its own injects must still go out then),
 * and over the pipe.  At the end the peer checks that nothing more
 * arrived: no message was duplicated.
 *
 * proc_inject_sleeper   100 and tx_size injects of 400 B and 4000 B, each
 *                       0 at the first call; then injects until the first
 *                       -FI_EAGAIN (there must be one), all delivered
 * proc_inject_close     injects until -FI_EAGAIN, then fi_close of the
 *                       sender's endpoint while the peer still sleeps:
 *                       every one of them arrives all the same
 * proc_inject_killed    injects until -FI_EAGAIN, then the peer is
 *                       SIGKILLed: no completion for any of them, an
 *                       inject and a send to the dead peer end in an
 *                       error, the endpoint closes, each within 2 s
 */
#include "config.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/wait.h>

#include "conformance.h"
#include "proc.h"

#define INJ_ALARM_S 150
#define INJ_TAG(round) (0x1e000ULL + (round))
#define INJ_REPLY_TAG 0x1effffULL
#define INJ_SEED(round, i) ((unsigned int)((round) * 1000003u + (i)))
/* Receives the waking peer keeps posted. */
#define INJ_WINDOW 256
/* Posts before an -FI_EAGAIN must have come (a socket's kernel takes
 * several MiB before it pushes back). */
#define INJ_PROBE_MAX (1u << 18)
#define INJ_BOUND_MS 2000

/* Case -> peer, over the pipe: what the peer receives when it wakes. */
struct inj_cmd {
	char op; /* 'R' receive a round, 'Q' check nothing more came, quit */
	uint8_t pad[3];
	uint32_t len;
	uint32_t count;
	uint32_t round;
	uint32_t delay_ms; /* sleep on first, calling nothing */
	uint32_t data; /* 1: the injects carry remote CQ data */
	uint32_t answer; /* 1: answer over the provider too */
};

/* Peer -> case, over the pipe. */
struct inj_res {
	uint32_t got; /* delivered intact and in order */
	uint32_t bad; /* index of the first wrong one + 1, or 0 */
	int32_t err; /* a receive's error, positive */
	uint32_t len; /* the wrong one's length */
	uint64_t data; /* its remote CQ data */
};

static void inj_open(struct cf_fix *f, const char *prov, size_t tx_size)
{
	struct cf_opts o = {.caps = FI_MSG | FI_TAGGED,
			    .nep = 1,
			    .no_insert = true,
			    .msg_order = FI_ORDER_SAS,
			    .cq_wait = FI_WAIT_UNSPEC,
			    .tx_size = tx_size};

	cf_open(f, prov, &o);
}

/* ---- the peer ------------------------------------------------------------- */

/* One message each way: the two have met (as MPI_Init has them). */
static void inj_meet(struct cf_fix *f, fi_addr_t peer, bool first)
{
	struct fi_context2 rc, sc;
	uint64_t v = 0x1ec7, r = 0;
	struct cf_comp c;

	cf_post(f, fi_trecv(f->ep[0].ep, &r, sizeof(r), NULL, peer,
			    INJ_REPLY_TAG, 0, &rc));
	if (first)
		cf_post(f, fi_tsend(f->ep[0].ep, &v, sizeof(v), NULL, peer,
				    INJ_REPLY_TAG, &sc));
	c = cf_wait_ctx(f, 0, &rc);
	cf_assert(!c.err && r == v, "meeting the peer: err %d", c.err);
	if (!first)
		cf_post(f, fi_tsend(f->ep[0].ep, &v, sizeof(v), NULL, peer,
				    INJ_REPLY_TAG, &sc));
	c = cf_wait_ctx(f, 0, &sc);
	cf_assert(!c.err, "meeting the peer: send err %d", c.err);
}

/* Receive a round's messages in windows of INJ_WINDOW, checking each. */
static struct inj_res sleeper_round(struct cf_fix *f, fi_addr_t peer,
				    const struct inj_cmd *cmd)
{
	struct fi_context2 *ctx = calloc(INJ_WINDOW, sizeof(*ctx));
	uint8_t *buf = malloc((size_t)INJ_WINDOW * (cmd->len + 1));
	size_t stride = cmd->len + 1;
	struct inj_res res = {0};
	uint32_t posted = 0, done = 0, k;
	struct cf_comp c;

	cf_assert(ctx && buf, "out of memory");
	while (done < cmd->count) {
		while (posted < cmd->count && posted - done < INJ_WINDOW) {
			k = posted % INJ_WINDOW;
			cf_post(f, fi_trecv(f->ep[0].ep, buf + k * stride,
					    stride, NULL, peer,
					    INJ_TAG(cmd->round), 0, &ctx[k]));
			posted++;
		}
		k = done % INJ_WINDOW;
		c = cf_wait_ctx(f, 0, &ctx[k]);
		if (c.err || c.len != cmd->len ||
		    (cmd->data && c.data != done) ||
		    c.tag != INJ_TAG(cmd->round)) {
			res.bad = done + 1;
			res.err = c.err;
			res.len = (uint32_t)c.len;
			res.data = c.data;
			break;
		}
		{
			uint8_t *want = malloc(cmd->len ? cmd->len : 1);

			cf_assert(want, "out of memory");
			cf_fill(want, cmd->len, INJ_SEED(cmd->round, done));
			if (memcmp(want, buf + k * stride, cmd->len)) {
				res.bad = done + 1;
				res.len = (uint32_t)c.len;
				res.data = c.data;
				free(want);
				break;
			}
			free(want);
		}
		done++;
	}
	res.got = done;
	free(ctx);
	free(buf);
	return res;
}

static int sleeper_main(void)
{
	struct fi_context2 sc;
	struct inj_cmd cmd;
	struct inj_res res;
	struct cf_comp c;
	struct cf_fix f;
	fi_addr_t peer;
	uint64_t got;
	char b = 'S';

	inj_open(&f, cf_prov, 0);
	cf_send_name(PEER_OUT, &f.ep[0]);
	peer = cf_recv_name(PEER_IN, &f);
	inj_meet(&f, peer, false);
	for (;;) {
		/* Asleep from here: nothing of the provider is called until
		 * the command comes. */
		cf_write_all(PEER_OUT, &b, 1);
		cf_read_all(PEER_IN, &cmd, sizeof(cmd), INJ_ALARM_S * 1000);
		if (cmd.op == 'Q')
			break;
		cf_assert(cmd.op == 'R', "sleeper: command %c", cmd.op);
		if (cmd.delay_ms)
			cf_sleep_ms((int)cmd.delay_ms);
		res = sleeper_round(&f, peer, &cmd);
		got = res.got;
		if (cmd.answer) {
			cf_post(&f, fi_tsend(f.ep[0].ep, &got, sizeof(got),
					     NULL, peer, INJ_REPLY_TAG, &sc));
			c = cf_wait_ctx(&f, 0, &sc);
			cf_assert(!c.err, "sleeper: the answer: err %d",
				  c.err);
		}
		cf_write_all(PEER_OUT, &res, sizeof(res));
	}
	/* Nothing more came: a receive of any tag stays empty. */
	{
		struct fi_context2 rc;
		uint8_t any[8192];

		cf_post(&f, fi_trecv(f.ep[0].ep, any, sizeof(any), NULL,
				     FI_ADDR_UNSPEC, 0, ~0ULL, &rc));
		cf_expect_none(&f, 0, 300);
	}
	b = 'D';
	cf_write_all(PEER_OUT, &b, 1);
	cf_close(&f);
	return 0;
}

bool cf_inject_is_role(const char *role)
{
	return !strcmp(role, "inject_sleeper");
}

int cf_inject_peer_main(const char *role)
{
	(void)role;
	return sleeper_main();
}

/* ---- the case ------------------------------------------------------------- */

struct inj_state {
	struct cf_fix f;
	struct peer_link l;
	fi_addr_t peer;
	uint8_t *buf;
	bool data; /* remote CQ data: fi_tinjectdata, else fi_tinject */
	size_t inject_size;
	size_t tx_size;
};

static void inj_start(struct inj_state *s, const char *prov, size_t tx_size)
{
	inj_open(&s->f, prov, tx_size);
	s->data = s->f.info->domain_attr->cq_data_size >= 4;
	s->inject_size = s->f.info->tx_attr->inject_size;
	s->tx_size = s->f.info->tx_attr->size;
	cf_assert(s->inject_size > 0, "inject_size 0");
	cf_assert(s->tx_size > 0, "tx_attr->size 0");
	if (s->tx_size > 8192)
		s->tx_size = 8192;
	s->buf = malloc(s->inject_size);
	cf_assert(s->buf, "out of memory");
	cf_spawn_peer("inject_sleeper", &s->l);
	cf_send_name(s->l.wfd, &s->f.ep[0]);
	s->peer = cf_recv_name(s->l.rfd, &s->f);
	inj_meet(&s->f, s->peer, true);
}

/* The peer said it sleeps. */
static void inj_asleep(struct inj_state *s)
{
	char b = 0;

	cf_read_all(s->l.rfd, &b, 1, CF_WAIT_MS);
	cf_assert(b == 'S', "the peer said %c, not that it sleeps", b);
}

/* Inject message i of a round: its seed in the payload, i as CQ data. */
static ssize_t inj_post(struct inj_state *s, uint32_t round, uint32_t i,
			size_t len)
{
	ssize_t ret;

	cf_fill(s->buf, len, INJ_SEED(round, i));
	cf_mark("fi_tinjectdata to a peer that sleeps");
	ret = s->data ? fi_tinjectdata(s->f.ep[0].ep, s->buf, len, i, s->peer,
				       INJ_TAG(round))
		      : fi_tinject(s->f.ep[0].ep, s->buf, len, s->peer,
				   INJ_TAG(round));
	/* The buffer is ours again at once. */
	memset(s->buf, 0xee, len);
	return ret;
}

/* Wake the peer for a round of count messages of len bytes. */
static void inj_wake(struct inj_state *s, uint32_t round, size_t len,
		     uint32_t count, uint32_t delay_ms)
{
	struct inj_cmd cmd = {.op = 'R',
			      .len = (uint32_t)len,
			      .count = count,
			      .round = round,
			      .delay_ms = delay_ms,
			      .data = s->data,
			      .answer = !delay_ms};

	cf_write_all(s->l.wfd, &cmd, sizeof(cmd));
}

static void inj_check_res(const struct inj_res *r, uint32_t count,
			  const char *what)
{
	cf_assert(!r->bad,
		  "%s: message %u of %u wrong (err %d, len %u, data %llu)",
		  what, r->bad - 1, count, r->err, r->len,
		  (unsigned long long)r->data);
	cf_assert(r->got == count, "%s: %u of %u messages arrived", what,
		  r->got, count);
}

/*
 * The peer's answer to a round, waited for asleep in fi_cq_sread: what
 * waits in our queue for the peer must go out meanwhile.  Nothing else
 * may complete (injects report nothing).
 */
static void inj_answer(struct inj_state *s, uint32_t count, const char *what)
{
	uint64_t end = cf_now_ms() + CF_WAIT_MS, got = 0;
	struct fi_cq_tagged_entry e;
	struct fi_context2 rc;
	struct inj_res r;
	bool done = false;
	ssize_t ret;

	cf_post(&s->f, fi_trecv(s->f.ep[0].ep, &got, sizeof(got), NULL,
				s->peer, INJ_REPLY_TAG, 0, &rc));
	while (!done) {
		uint64_t now = cf_now_ms();

		/* One sleep for the whole wait: a sleeper nothing wakes
		 * while its injects wait for the peer would stay asleep. */
		cf_assert(now < end,
			  "%s: no answer from the peer in %d ms (asleep in "
			  "fi_cq_sread while our injects waited?)",
			  what, CF_WAIT_MS);
		cf_mark("fi_cq_sread for the peer's answer");
		ret = fi_cq_sread(s->f.ep[0].cq, &e, 1, NULL,
				  (int)(end - now));
		if (ret == -FI_EAGAIN)
			continue;
		if (ret == -FI_EAVAIL) {
			struct fi_cq_err_entry err = {0};

			fi_cq_readerr(s->f.ep[0].cq, &err, 0);
			cf_fail("%s: an error completion (ctx %p, err %d %s)",
				what, err.op_context, err.err,
				fi_strerror(err.err));
		}
		cf_assert(ret == 1, "%s: fi_cq_sread: %zd (%s)", what, ret,
			  fi_strerror((int)-ret));
		cf_assert(e.op_context == &rc,
			  "%s: a completion of something else (ctx %p, flags "
			  "[%s]): injects report nothing",
			  what, e.op_context, cf_flags_str(e.flags));
		done = true;
	}
	cf_read_all(s->l.rfd, &r, sizeof(r), CF_WAIT_MS);
	inj_check_res(&r, count, what);
	cf_assert(got == count, "%s: the peer's answer says %llu", what,
		  (unsigned long long)got);
}

static void inj_finish(struct inj_state *s)
{
	struct inj_cmd q = {.op = 'Q'};
	int status;
	char b = 0;

	cf_write_all(s->l.wfd, &q, sizeof(q));
	cf_read_all(s->l.rfd, &b, 1, CF_WAIT_MS);
	cf_assert(b == 'D', "the peer ended with %c", b);
	status = cf_reap(&s->l, CF_WAIT_MS);
	cf_assert(WIFEXITED(status) && !WEXITSTATUS(status),
		  "peer ended with status 0x%x", status);
	close(s->l.wfd);
	close(s->l.rfd);
}

/* Inject until -FI_EAGAIN (which must come); how many were taken. */
static uint32_t inj_until_eagain(struct inj_state *s, uint32_t round,
				 size_t len)
{
	uint32_t n;
	ssize_t ret = 0;

	for (n = 0; n < INJ_PROBE_MAX; n++) {
		ret = inj_post(s, round, n, len);
		if (ret == -FI_EAGAIN)
			break;
		cf_assert(!ret, "inject %u of %zu B: %zd (%s)", n, len, ret,
			  fi_strerror((int)-ret));
	}
	cf_assert(ret == -FI_EAGAIN,
		  "%u injects of %zu B to a peer that sleeps, no -FI_EAGAIN "
		  "(tx_size %zu)",
		  n, len, s->tx_size);
	cf_assert(n >= s->tx_size,
		  "-FI_EAGAIN after %u injects of %zu B, fewer than tx_size "
		  "%zu",
		  n, len, s->tx_size);
	return n;
}

static int case_proc_inject_sleeper(const char *prov)
{
	static const size_t lens[] = {400, 4000};
	struct inj_state s;
	uint32_t round = 0, counts[2], i, n;
	size_t li, ci, len;
	char what[96];
	ssize_t ret;

	memset(&s, 0, sizeof(s));
	inj_start(&s, prov, 0);
	counts[0] = 100;
	counts[1] = (uint32_t)s.tx_size;
	for (li = 0; li < 2; li++) {
		len = lens[li] < s.inject_size ? lens[li] : s.inject_size;
		for (ci = 0; ci < 2; ci++, round++) {
			snprintf(what, sizeof(what),
				 "%u injects of %zu B to a peer that sleeps",
				 counts[ci], len);
			inj_asleep(&s);
			for (i = 0; i < counts[ci]; i++) {
				ret = inj_post(&s, round, i, len);
				cf_assert(!ret,
					  "%s: inject %u: %zd (%s), not 0 at "
					  "once",
					  what, i, ret,
					  fi_strerror((int)-ret));
			}
			inj_wake(&s, round, len, counts[ci], 0);
			inj_answer(&s, counts[ci], what);
		}
	}
	/* Past what is promised: -FI_EAGAIN comes, and what was taken all
	 * arrives, once. */
	len = 4000 < s.inject_size ? 4000 : s.inject_size;
	inj_asleep(&s);
	n = inj_until_eagain(&s, round, len);
	cf_note("-FI_EAGAIN after %u injects of %zu B to a peer that sleeps "
		"(tx_size %zu)",
		n, len, s.tx_size);
	inj_wake(&s, round, len, n, 0);
	snprintf(what, sizeof(what), "%u injects of %zu B up to -FI_EAGAIN",
		 n, len);
	inj_answer(&s, n, what);
	round++;
	/* Room is back: taken at once again. */
	inj_asleep(&s);
	for (i = 0; i < 100; i++) {
		ret = inj_post(&s, round, i, len);
		cf_assert(!ret, "inject %u after the queue drained: %zd (%s)",
			  i, ret, fi_strerror((int)-ret));
	}
	inj_wake(&s, round, len, 100, 0);
	inj_answer(&s, 100, "injects after the queue drained");
	inj_asleep(&s);
	inj_finish(&s);
	free(s.buf);
	cf_close(&s.f);
	return 0;
}

/*
 * The sender closes its endpoint with injects queued for a peer that
 * still sleeps: they were reported sent, so they still arrive, each once,
 * intact, in order.
 */
/*
 * A transmit queue larger than the default, asked for as Mercury's
 * listeners ask tcp (tx_attr->size 4096): the answer says 4096, and the
 * endpoint takes that many injects to a peer that sleeps, not the default
 * 1024, then says -FI_EAGAIN; every one arrives, once.  A provider whose
 * queue is smaller says -FI_ENODATA (skipped).
 */
static int case_proc_inject_asked_size(const char *prov)
{
	struct inj_state s;
	uint32_t n;
	size_t len;
	char what[96];

	memset(&s, 0, sizeof(s));
	inj_start(&s, prov, 4096);
	cf_assert(s.f.info->tx_attr->size == 4096,
		  "hints asked tx_attr->size 4096, the answer says %zu",
		  s.f.info->tx_attr->size);
	len = 4000 < s.inject_size ? 4000 : s.inject_size;
	inj_asleep(&s);
	n = inj_until_eagain(&s, 0, len); /* at least tx_size (4096) */
	cf_note("-FI_EAGAIN after %u injects of %zu B (tx_size 4096)", n,
		len);
	inj_wake(&s, 0, len, n, 0);
	snprintf(what, sizeof(what), "%u injects of %zu B up to -FI_EAGAIN",
		 n, len);
	inj_answer(&s, n, what);
	inj_asleep(&s);
	inj_finish(&s);
	free(s.buf);
	cf_close(&s.f);
	return 0;
}

static int case_proc_inject_close(const char *prov)
{
	struct inj_state s;
	struct inj_res r;
	uint32_t n;
	size_t len;
	int status;
	char b = 0;

	memset(&s, 0, sizeof(s));
	inj_start(&s, prov, 0);
	len = 4000 < s.inject_size ? 4000 : s.inject_size;
	inj_asleep(&s);
	n = inj_until_eagain(&s, 0, len);
	cf_note("closing with %u injects of %zu B taken", n, len);
	/* The peer wakes 300 ms from now; we close at once. */
	inj_wake(&s, 0, len, n, 300);
	cf_mark("fi_close of an endpoint with injects queued");
	cf_ok(fi_close(&s.f.ep[0].ep->fid));
	s.f.ep[0].ep = NULL;
	cf_read_all(s.l.rfd, &r, sizeof(r), CF_WAIT_MS);
	inj_check_res(&r, n, "injects queued at fi_close");
	/* The peer's answer over the provider goes nowhere; then it
	 * checks that nothing more came. */
	inj_asleep(&s);
	{
		struct inj_cmd q = {.op = 'Q'};

		cf_write_all(s.l.wfd, &q, sizeof(q));
	}
	cf_read_all(s.l.rfd, &b, 1, CF_WAIT_MS);
	cf_assert(b == 'D', "the peer ended with %c", b);
	status = cf_reap(&s.l, CF_WAIT_MS);
	cf_assert(WIFEXITED(status) && !WEXITSTATUS(status),
		  "peer ended with status 0x%x", status);
	close(s.l.wfd);
	close(s.l.rfd);
	free(s.buf);
	cf_close(&s.f);
	return 0;
}

/*
 * The peer is SIGKILLed with injects queued for it: they end without a
 * completion (they have no context; they were reported sent), later
 * transmits to it fail, and the endpoint closes without waiting for it.
 */
static int case_proc_inject_killed(const char *prov)
{
	struct fi_cq_err_entry err;
	struct fi_cq_tagged_entry e;
	struct fi_context2 sc;
	struct inj_state s;
	uint64_t t0, v = 7;
	bool lenient, lenient_inject, failed = false;
	uint32_t n, late = 0;
	size_t len;
	ssize_t ret;
	int status;

	memset(&s, 0, sizeof(s));
	inj_start(&s, prov, 0);
	/* As proc_kill_random allows: a socket's kernel takes data for a
	 * peer that died until the end of the connection is read; a verbs
	 * device takes injects until the connection is known dead. */
	lenient = (!strcmp(prov, "tcp") && getenv("FI_TCP_SHM") &&
		   !strcmp(getenv("FI_TCP_SHM"), "0"));
	lenient_inject = lenient || !strcmp(prov, "verbs");
	len = 4000 < s.inject_size ? 4000 : s.inject_size;
	inj_asleep(&s);
	n = inj_until_eagain(&s, 0, len);
	cf_note("killing the peer with %u injects of %zu B taken", n, len);
	cf_assert(!kill(s.l.pid, SIGKILL), "kill %d: %s", (int)s.l.pid,
		  strerror(errno));
	status = cf_reap(&s.l, CF_WAIT_MS);
	cf_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL,
		  "peer ended with status 0x%x before being killed", status);
	close(s.l.wfd);
	close(s.l.rfd);
	t0 = cf_now_ms();

	/* An inject to the dead peer ends in an error. */
	for (;;) {
		cf_assert(cf_now_ms() - t0 <= INJ_BOUND_MS,
			  "fi_tinject to the dead peer: no error within %d ms "
			  "(%u taken)",
			  INJ_BOUND_MS, late);
		ret = inj_post(&s, 1, 0, len);
		if (!ret) {
			late++;
			continue;
		}
		if (ret == -FI_EAGAIN) {
			ret = fi_cq_read(s.f.ep[0].cq, &e, 1);
			cf_assert(ret == -FI_EAGAIN,
				  "a completion (%zd) while only injects are "
				  "under way",
				  ret);
			continue;
		}
		break;
	}
	cf_assert(!late || lenient_inject,
		  "%u inject(s) to the dead peer taken", late);
	if (late)
		cf_note("%u inject(s) to the dead peer taken before its death "
			"was known",
			late);
	/* A send with a completion: one error completion, nothing else. */
	while (!failed) {
		cf_assert(cf_now_ms() - t0 <= INJ_BOUND_MS,
			  "fi_tsend to the dead peer: no error within %d ms",
			  INJ_BOUND_MS);
		ret = fi_tsend(s.f.ep[0].ep, &v, sizeof(v), NULL, s.peer,
			       INJ_TAG(2), &sc);
		if (ret == -FI_EAGAIN) {
			ret = fi_cq_read(s.f.ep[0].cq, &e, 1);
			cf_assert(ret == -FI_EAGAIN,
				  "a completion (%zd) of nothing posted", ret);
			continue;
		}
		if (ret) {
			failed = true; /* refused at once */
			break;
		}
		for (;;) {
			cf_assert(cf_now_ms() - t0 <= INJ_BOUND_MS,
				  "fi_tsend to the dead peer: not completed "
				  "within %d ms",
				  INJ_BOUND_MS);
			ret = fi_cq_read(s.f.ep[0].cq, &e, 1);
			if (ret == -FI_EAGAIN)
				continue;
			if (ret == -FI_EAVAIL) {
				memset(&err, 0, sizeof(err));
				cf_assert(fi_cq_readerr(s.f.ep[0].cq, &err,
							0) == 1,
					  "fi_cq_readerr after -FI_EAVAIL");
				cf_assert(err.op_context == &sc,
					  "an error completion of something "
					  "else (ctx %p, err %d): queued "
					  "injects report nothing",
					  err.op_context, err.err);
				failed = true;
				break;
			}
			cf_assert(ret == 1 && e.op_context == &sc,
				  "fi_cq_read: %zd, ctx %p", ret,
				  ret == 1 ? e.op_context : NULL);
			cf_assert(lenient, "a send to the dead peer completed "
					   "successfully");
			break;
		}
	}
	/* Nothing more: the queued injects brought no entry. */
	cf_mark("fi_cq_read after the death");
	for (t0 = cf_now_ms(); cf_now_ms() - t0 < 200;) {
		ret = fi_cq_read(s.f.ep[0].cq, &e, 1);
		cf_assert(ret == -FI_EAGAIN,
			  "a completion (%zd) after the death: queued injects "
			  "report nothing",
			  ret);
	}
	t0 = cf_now_ms();
	cf_mark("fi_close with injects to a dead peer");
	cf_ok(fi_close(&s.f.ep[0].ep->fid));
	s.f.ep[0].ep = NULL;
	cf_assert(cf_now_ms() - t0 <= INJ_BOUND_MS,
		  "fi_close took %llu ms: it waited for a dead peer",
		  (unsigned long long)(cf_now_ms() - t0));
	free(s.buf);
	cf_close(&s.f);
	return 0;
}

const struct cf_case cf_cases_inject[] = {
    {"proc_inject_sleeper",
     "two processes: 100 and tx_size injects of 400 B and 4000 B to a peer "
     "that sleeps each return 0 at once, then -FI_EAGAIN comes; all "
     "arrive, intact, in order, once",
     case_proc_inject_sleeper},
    {"proc_inject_asked_size",
     "two processes: tx_attr->size 4096 asked (Mercury's listeners): "
     "4096 injects taken by a peer that sleeps, all delivered",
     case_proc_inject_asked_size},
    {"proc_inject_close",
     "two processes: the sender closes with injects queued for a peer "
     "that sleeps; every one arrives",
     case_proc_inject_close},
    {"proc_inject_killed",
     "two processes: the peer SIGKILLed with injects queued: no "
     "completion for them, later transmits fail, fi_close does not wait",
     case_proc_inject_killed},
    {NULL},
};
