// SPDX-License-Identifier: BSD-2-Clause
/*
 * Peers killed at random points.  The case process (the survivor) talks
 * to two peer processes: a victim, to which it keeps a window of
 * operations of every kind under way (sends small, medium and large, so
 * eager and rendezvous; receives directed to it, answered by the victim;
 * RMA writes and reads up to 1 MiB; atomics with and without fetch), and
 * a bystander that echoes verified messages all along.  After a random
 * time (a seed printed in a note line, CF_KILL_SEED replays it) the
 * victim is SIGKILLed.  From the moment waitpid returns:
 *
 *  - every operation under way completes, once, within KILL_BOUND_MS
 *    (successfully or not: some were done before the kill);
 *  - every operation posted to the dead peer afterwards (send, inject,
 *    large send, write, read, atomic, fetching atomic, directed receive)
 *    ends in an error within KILL_BOUND_MS, never in success or silence;
 *  - the bystander's echoes go on, verified, during and after.
 *
 * The bound is 2 s (CF_KILL_BOUND_MS changes it).  CF_KILL_ITERS victims
 * are killed in turn (default 20, fewer if a third
 * of the case's time limit is used up first); the times from waitpid to
 * each error are reported as note lines per operation kind.
 */
#include "config.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/wait.h>

#include "conformance.h"
#include "proc.h"

#define KILL_ITERS_DEF 20
#define KILL_BOUND_MS_DEF 2000
/* CF_KILL_BOUND_MS overrides the bound (a loaded or emulated machine). */
static long kill_bound_ms = KILL_BOUND_MS_DEF;
#define KILL_BOUND_MS kill_bound_ms
#define KILL_DELAY_MAX_MS 150
#define KILL_TAG 7
#define BIG (1 << 20)
#define MED 20000
#define ECHO_MAX 131072
#define WINDOW 8
#define NRX_VICTIM 4
/* The victim's region: reads in [0, RD_SPAN), writes in [WR_OFF, +BIG),
 * atomics on the 8 bytes at AT_OFF. */
#define RD_SPAN (2 * BIG)
#define WR_OFF (2 * BIG)
#define AT_OFF (3 * BIG)
#define REGION (3 * BIG + 64)
#define REGION_SEED 77

enum kop_kind {
	K_SEND_SMALL,
	K_SEND_MED,
	K_SEND_BIG,
	K_TRECV,
	K_WRITE,
	K_READ,
	K_ATOMIC,
	K_FETCH,
	K_INJECT, /* after the kill only: no completion, the call tells */
	K_NKIND,
};

static const char *const kind_name[K_NKIND] = {
    "send 64 B", "send 20000 B", "send 1 MiB", "directed trecv",
    "write",     "read",	 "atomic",     "fetch atomic",
    "inject",
};

/* What both processes open: the victim must ask for what we ask for. */
static uint64_t kill_caps(const char *prov, bool *directed)
{
	static const uint64_t want[] = {
	    FI_MSG | FI_TAGGED | FI_RMA | FI_ATOMIC | FI_DIRECTED_RECV,
	    FI_MSG | FI_TAGGED | FI_RMA | FI_DIRECTED_RECV,
	    FI_MSG | FI_TAGGED | FI_DIRECTED_RECV,
	};
	size_t i;
	int ret;

	*directed = true;
	for (i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		struct cf_opts o = {.caps = want[i]};
		struct fi_info *fi = cf_getinfo(prov, &o, &ret);

		if (fi) {
			fi_freeinfo(fi);
			return want[i];
		}
	}
	*directed = false;
	return FI_MSG | FI_TAGGED;
}

static void open_kill(struct cf_fix *f, const char *prov, uint64_t caps)
{
	struct cf_opts o = {.caps = caps, .nep = 1, .no_insert = true};

	cf_open(f, prov, &o);
}

/* ---- the peers ----------------------------------------------------------- */

/* Echo verified messages back until a 0-byte one. */
static int echo_main(void)
{
	struct fi_context2 rc, sc;
	unsigned int seed = 0;
	struct cf_mem m;
	struct cf_comp c;
	struct cf_fix f;
	fi_addr_t peer;
	char b = 'D';

	open_kill(&f, cf_prov, FI_MSG);
	cf_send_name(PEER_OUT, &f.ep[0]);
	peer = cf_recv_name(PEER_IN, &f);
	cf_mem_reg(&f, 0, &m, ECHO_MAX, FI_SEND | FI_RECV);
	for (;; seed++) {
		cf_post(&f, fi_recv(f.ep[0].ep, m.p, ECHO_MAX, m.desc, peer,
				    &rc));
		c = cf_wait_ctx(&f, 0, &rc);
		cf_assert(!c.err, "echo %u: receive error %d", seed, c.err);
		if (!c.len)
			break;
		cf_check_fill(m.p, c.len, seed, "a message to echo");
		cf_post(&f, fi_send(f.ep[0].ep, m.p, c.len, m.desc, peer, &sc));
		c = cf_wait_ctx(&f, 0, &sc);
		cf_assert(!c.err, "echo %u: send error %d", seed, c.err);
	}
	cf_mem_free(&m);
	cf_close(&f);
	cf_write_all(PEER_OUT, &b, 1);
	return 0;
}

/*
 * The victim: serves RMA on its region, takes messages (verified) into
 * NRX_VICTIM receives it keeps posted, and answers each with a tagged
 * message of its own; runs until it is killed.
 */
static int victim_main(void)
{
	struct fi_context2 rc[NRX_VICTIM], sc;
	static const size_t reply_len[] = {64, MED, BIG};
	struct cf_mem region, rm[NRX_VICTIM], sm;
	unsigned int owed = 0, nreply = 0;
	bool sending = false, directed;
	struct cf_comp c;
	struct cf_fix f;
	fi_addr_t peer;
	uint64_t caps;
	char b = 'R';
	int i;

	caps = kill_caps(cf_prov, &directed);
	open_kill(&f, cf_prov, caps);
	cf_send_name(PEER_OUT, &f.ep[0]);
	peer = cf_recv_name(PEER_IN, &f);
	cf_mem_reg(&f, 0, &region, REGION,
		   (caps & FI_RMA) ? FI_REMOTE_READ | FI_REMOTE_WRITE : FI_RECV);
	cf_fill(region.p, RD_SPAN, REGION_SEED);
	cf_write_all(PEER_OUT, &region.key, sizeof(region.key));
	cf_write_all(PEER_OUT, &region.raddr, sizeof(region.raddr));
	cf_mem_reg(&f, 0, &sm, BIG, FI_SEND);
	for (i = 0; i < NRX_VICTIM; i++) {
		cf_mem_reg(&f, 0, &rm[i], BIG, FI_RECV);
		cf_post(&f, fi_recv(f.ep[0].ep, rm[i].p, BIG, rm[i].desc, peer,
				    &rc[i]));
	}
	cf_write_all(PEER_OUT, &b, 1);
	for (;;) {
		if (owed && !sending) {
			size_t len = reply_len[nreply % 3];
			ssize_t ret;

			cf_fill(sm.p, len, (unsigned int)len);
			cf_mark("fi_tsend from the victim");
			ret = fi_tsend(f.ep[0].ep, sm.p, len, sm.desc, peer,
				       KILL_TAG, &sc);
			cf_assert(!ret || ret == -FI_EAGAIN,
				  "victim: fi_tsend: %zd", ret);
			if (!ret) {
				sending = true;
				owed--;
				nreply++;
			}
		}
		if (!cf_poll(&f, 0, &c, 0))
			continue;
		if (c.ctx == &sc) {
			cf_assert(!c.err, "victim: a reply failed: %d", c.err);
			sending = false;
			continue;
		}
		for (i = 0; i < NRX_VICTIM && c.ctx != &rc[i]; i++)
			;
		cf_assert(i < NRX_VICTIM, "victim: a completion of nothing");
		cf_assert(!c.err, "victim: receive error %d", c.err);
		cf_check_fill(rm[i].p, c.len, (unsigned int)c.len,
			      "a message in the victim");
		owed++;
		cf_post(&f, fi_recv(f.ep[0].ep, rm[i].p, BIG, rm[i].desc, peer,
				    &rc[i]));
	}
	return 0;
}

bool cf_kill_is_role(const char *role)
{
	return !strcmp(role, "kill_echo") || !strcmp(role, "kill_victim") ||
	       !strcmp(role, "cm_victim");
}

int cf_kill_peer_main(const char *role)
{
	if (!strcmp(role, "cm_victim"))
		return cf_cm_victim_main();
	return !strcmp(role, "kill_echo") ? echo_main() : victim_main();
}

/* ---- the survivor ------------------------------------------------------ */

struct kop {
	struct fi_context2 ctx;
	enum kop_kind kind;
	bool busy;
	bool after; /* posted after the victim died */
	bool repost; /* after: reported done (a socket took it): again */
	size_t len;
	uint64_t off; /* read: offset in the victim's region */
	uint8_t *buf; /* BIG bytes of the local buffer */
	uint8_t *res; /* fetch result, 8 bytes */
};

struct kill_state {
	struct cf_fix f;
	struct cf_mem local;
	uint8_t *region_ref; /* what the victim's read span holds */
	uint64_t caps;
	bool directed;
	unsigned int seed;
	int iter;
	/* The victim of this round. */
	fi_addr_t victim;
	uint64_t key, raddr;
	struct kop op[WINDOW + K_NKIND];
	int busy;
	/* Sends the kernel may take for a peer that died (sockets): they
	 * may be reported done until the end of the connection is read,
	 * and are then posted again until one fails. */
	bool lenient;
	bool lenient_inject; /* an inject taken before the death is known */
	bool lenient_trecv; /* a receive takes a message sent before */
	unsigned int late_trecv;
	int nrepost;
	unsigned int late_done;
	/* The bystander. */
	fi_addr_t echo;
	struct cf_mem em, er;
	struct fi_context2 esc, erc;
	bool e_sent, e_recvd, e_busy;
	unsigned int e_seed;
	size_t e_len;
	unsigned int echoes;
	/* Milliseconds from waitpid to each error, per kind. */
	uint32_t *ms[K_NKIND];
	int nms[K_NKIND];
};

static unsigned int krand(struct kill_state *s)
{
	s->seed = s->seed * 1103515245u + 12345u;
	return (s->seed >> 16) & 0x7fff;
}

/* Start the next echo once the last one is back and verified. */
static void echo_step(struct kill_state *s)
{
	static const size_t lens[] = {64, 4096, 70000};
	struct cf_fix *f = &s->f;

	if (s->e_busy)
		return;
	s->e_len = lens[s->e_seed % 3];
	cf_fill(s->em.p, s->e_len, s->e_seed);
	memset(s->er.p, 0, s->e_len);
	cf_post(f, fi_recv(f->ep[0].ep, s->er.p, ECHO_MAX, s->er.desc, s->echo,
			   &s->erc));
	cf_post(f, fi_send(f->ep[0].ep, s->em.p, s->e_len, s->em.desc, s->echo,
			   &s->esc));
	s->e_busy = true;
	s->e_sent = s->e_recvd = false;
}

static void echo_done(struct kill_state *s, const struct cf_comp *c)
{
	if (c->ctx == &s->esc) {
		cf_assert(!c->err, "round %d: a send to the bystander failed: "
				   "%d (%s)",
			  s->iter, c->err, fi_strerror(c->err));
		s->e_sent = true;
	} else {
		cf_assert(!c->err && c->len == s->e_len,
			  "round %d: the bystander's echo: err %d len %zu, "
			  "want %zu",
			  s->iter, c->err, c->len, s->e_len);
		cf_check_fill(s->er.p, s->e_len, s->e_seed,
			      "the bystander's echo");
		s->e_recvd = true;
	}
	if (s->e_sent && s->e_recvd) {
		s->e_busy = false;
		s->e_seed++;
		s->echoes++;
	}
}

/*
 * Post one operation of kind k to the victim on slot o.  Returns 0 when it
 * is under way, -FI_EAGAIN when the provider cannot take it now, or the
 * call's error (after the kill an immediate error is an answer too).
 */
static ssize_t kop_post(struct kill_state *s, struct kop *o, enum kop_kind k)
{
	struct fid_ep *ep = s->f.ep[0].ep;
	void *desc = s->local.desc;
	ssize_t ret;

	o->kind = k;
	switch (k) {
	case K_SEND_SMALL:
	case K_SEND_MED:
	case K_SEND_BIG:
		o->len = k == K_SEND_SMALL ? 64 : k == K_SEND_MED ? MED : BIG;
		cf_fill(o->buf, o->len, (unsigned int)o->len);
		cf_mark("fi_send to the victim");
		ret = fi_send(ep, o->buf, o->len, desc, s->victim, &o->ctx);
		break;
	case K_TRECV:
		o->len = BIG;
		cf_mark("fi_trecv from the victim");
		ret = fi_trecv(ep, o->buf, BIG, desc,
			       s->directed ? s->victim : FI_ADDR_UNSPEC,
			       KILL_TAG, 0, &o->ctx);
		break;
	case K_WRITE:
		o->len = 4096 + krand(s) * 31 % (BIG - 4096);
		cf_fill(o->buf, o->len, 5);
		cf_mark("fi_write to the victim");
		ret = fi_write(ep, o->buf, o->len, desc, s->victim,
			       s->raddr + WR_OFF, s->key, &o->ctx);
		break;
	case K_READ:
		o->len = 4096 + krand(s) * 31 % (BIG - 4096);
		o->off = krand(s) % (RD_SPAN - o->len);
		cf_mark("fi_read from the victim");
		ret = fi_read(ep, o->buf, o->len, desc, s->victim,
			      s->raddr + o->off, s->key, &o->ctx);
		break;
	case K_ATOMIC:
		*(uint64_t *)o->buf = 1;
		cf_mark("fi_atomic to the victim");
		ret = fi_atomic(ep, o->buf, 1, desc, s->victim,
				s->raddr + AT_OFF, s->key, FI_UINT64, FI_SUM,
				&o->ctx);
		break;
	case K_FETCH:
		*(uint64_t *)o->buf = 1;
		cf_mark("fi_fetch_atomic to the victim");
		ret = fi_fetch_atomic(ep, o->buf, 1, desc, o->res, desc,
				      s->victim, s->raddr + AT_OFF, s->key,
				      FI_UINT64, FI_SUM, &o->ctx);
		break;
	default:
		cf_fail("kind %d", k);
	}
	if (!ret) {
		o->busy = true;
		s->busy++;
	}
	return ret;
}

static bool kind_ok(const struct kill_state *s, enum kop_kind k)
{
	if (k == K_WRITE || k == K_READ)
		return s->caps & FI_RMA;
	if (k == K_ATOMIC || k == K_FETCH)
		return s->caps & FI_ATOMIC;
	return true;
}

/* A random kind the provider offers; a send comes with its reply's
 * receive (the victim answers every message). */
static void window_fill(struct kill_state *s)
{
	int i, j;

	for (i = 0; i < WINDOW; i++) {
		enum kop_kind k;

		if (s->op[i].busy)
			continue;
		k = (enum kop_kind)(krand(s) % (K_FETCH + 1));
		if (!kind_ok(s, k) || k == K_TRECV)
			k = (enum kop_kind)(krand(s) % 3);
		if (k <= K_SEND_BIG) {
			for (j = 0; j < WINDOW && (s->op[j].busy || j == i);
			     j++)
				;
			if (j == WINDOW)
				continue;
			if (kop_post(s, &s->op[j], K_TRECV))
				continue;
		}
		(void)kop_post(s, &s->op[i], k);
	}
}

static struct kop *kop_of(struct kill_state *s, void *ctx)
{
	size_t i;

	for (i = 0; i < WINDOW + K_NKIND; i++)
		if (ctx == &s->op[i].ctx)
			return &s->op[i];
	return NULL;
}

static void record_ms(struct kill_state *s, enum kop_kind k, uint64_t ms)
{
	s->ms[k][s->nms[k]++] = (uint32_t)ms;
}

/* A completion of ours before or after the kill: check and retire it. */
static void kop_done(struct kill_state *s, struct kop *o,
		     const struct cf_comp *c, uint64_t t0)
{
	cf_assert(o->busy, "round %d: %s completed twice (err %d)", s->iter,
		  kind_name[o->kind], c->err);
	o->busy = false;
	s->busy--;
	if (o->after) {
		/* A scalable endpoint's contexts learn of a death each on
		 * its own: a receive context may not know yet, and take a
		 * message the victim sent before it died.  Whole, or it is
		 * a fault. */
		if (!c->err && o->kind == K_TRECV && s->lenient_trecv) {
			cf_check_fill(o->buf, c->len, (unsigned int)c->len,
				      "a message of the victim");
			s->late_trecv++;
			o->repost = true;
			s->nrepost++;
			return;
		}
		if (!c->err && s->lenient && o->kind <= K_SEND_BIG) {
			s->late_done++;
			o->repost = true;
			s->nrepost++;
			return;
		}
		cf_assert(c->err, "round %d: %s posted to the dead peer "
				  "completed successfully",
			  s->iter, kind_name[o->kind]);
		record_ms(s, o->kind, cf_now_ms() - t0);
		return;
	}
	if (c->err)
		return; /* under way at the kill: an error is its answer */
	if (o->kind == K_TRECV)
		cf_check_fill(o->buf, c->len, (unsigned int)c->len,
			      "a message of the victim");
	else if (o->kind == K_READ)
		cf_assert(!memcmp(o->buf, s->region_ref + o->off, o->len),
			  "round %d: %zu bytes read from the victim differ",
			  s->iter, o->len);
}

/* Harvest and dispatch what completed; false if nothing did. */
static bool dispatch(struct kill_state *s, uint64_t t0)
{
	struct cf_comp c;
	struct kop *o;

	if (!cf_poll(&s->f, 0, &c, 0))
		return false;
	if (c.ctx == &s->esc || c.ctx == &s->erc) {
		echo_done(s, &c);
		return true;
	}
	o = kop_of(s, c.ctx);
	cf_assert(o, "round %d: a completion for an unknown context %p "
		     "(err %d)",
		  s->iter, c.ctx, c.err);
	kop_done(s, o, &c, t0);
	return true;
}

/* fi_inject to the dead peer until it says so. */
static void inject_dead(struct kill_state *s, uint64_t t0)
{
	uint8_t *buf = s->op[WINDOW + K_INJECT].buf;
	int done = 0;
	ssize_t ret;

	cf_fill(buf, 16, 16);
	for (;;) {
		cf_assert(cf_now_ms() - t0 <= (uint64_t)KILL_BOUND_MS,
			  "round %d: fi_inject to the dead peer: no error "
			  "within %ld ms (%d reported done)",
			  s->iter, KILL_BOUND_MS, done);
		cf_mark("fi_inject to the dead peer");
		ret = fi_inject(s->f.ep[0].ep, buf, 16, s->victim);
		if (ret == -FI_EAGAIN) {
			while (dispatch(s, t0))
				;
			continue;
		}
		if (ret)
			break;
		done++;
	}
	cf_assert(!done || s->lenient || s->lenient_inject,
		  "round %d: %d fi_inject(s) to the dead peer reported done",
		  s->iter, done);
	s->late_done += (unsigned int)done;
	record_ms(s, K_INJECT, cf_now_ms() - t0);
}

/* Post one operation of each kind to the dead peer. */
static void post_dead(struct kill_state *s, uint64_t t0)
{
	int k;

	for (k = 0; k < K_INJECT; k++) {
		struct kop *o = &s->op[WINDOW + k];
		ssize_t ret;

		if (!kind_ok(s, (enum kop_kind)k))
			continue;
		if (k == K_TRECV && !s->directed)
			continue;
		o->after = true;
		for (;;) {
			cf_assert(cf_now_ms() - t0 <= (uint64_t)KILL_BOUND_MS,
				  "round %d: %s to the dead peer: -FI_EAGAIN "
				  "for %ld ms",
				  s->iter, kind_name[k], KILL_BOUND_MS);
			ret = kop_post(s, o, (enum kop_kind)k);
			if (ret != -FI_EAGAIN)
				break;
			while (dispatch(s, t0))
				;
		}
		if (ret) /* refused at once: an error in time */
			record_ms(s, (enum kop_kind)k, cf_now_ms() - t0);
	}
	inject_dead(s, t0);
}

/* Sends a socket took for the dead peer go again until one fails. */
static void repost(struct kill_state *s, uint64_t t0)
{
	int i;

	for (i = 0; s->nrepost && i < WINDOW + K_NKIND; i++) {
		struct kop *o = &s->op[i];
		ssize_t ret;

		if (!o->repost)
			continue;
		ret = kop_post(s, o, o->kind);
		if (ret == -FI_EAGAIN)
			continue;
		if (ret)
			record_ms(s, o->kind, cf_now_ms() - t0);
		o->repost = false;
		s->nrepost--;
	}
}

static void one_round(struct kill_state *s)
{
	struct peer_link l;
	struct peer_name name;
	uint64_t t_kill, t0, echoes_at_kill;
	int status, i;
	char b;

	for (i = 0; i < WINDOW + K_NKIND; i++)
		s->op[i].after = false;
	cf_spawn_peer("kill_victim", &l);
	cf_send_name(l.wfd, &s->f.ep[0]);
	cf_read_name(l.rfd, &name);
	s->victim = cf_insert_name(&s->f, &name);
	cf_read_all(l.rfd, &s->key, sizeof(s->key), CF_WAIT_MS);
	cf_read_all(l.rfd, &s->raddr, sizeof(s->raddr), CF_WAIT_MS);
	/* The victim's receives are posted: traffic may start. */
	for (;;) {
		struct pollfd pfd = {l.rfd, POLLIN, 0};

		if (poll(&pfd, 1, 0) > 0)
			break;
		echo_step(s);
		dispatch(s, 0);
	}
	cf_read_all(l.rfd, &b, 1, CF_WAIT_MS);
	t_kill = cf_now_ms() + krand(s) % (KILL_DELAY_MAX_MS + 1);
	while (cf_now_ms() < t_kill) {
		window_fill(s);
		echo_step(s);
		dispatch(s, 0);
	}
	cf_assert(!kill(l.pid, SIGKILL), "kill %d: %s", (int)l.pid,
		  strerror(errno));
	status = cf_reap(&l, CF_WAIT_MS);
	t0 = cf_now_ms();
	cf_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL,
		  "round %d: the victim ended with status 0x%x before "
		  "the kill",
		  s->iter, status);
	echoes_at_kill = s->echoes;
	post_dead(s, t0);
	/* Undirected receives cannot know the victim died: cancelled. */
	for (i = 0; !s->directed && i < WINDOW; i++)
		if (s->op[i].busy && s->op[i].kind == K_TRECV)
			cf_ok(fi_cancel(&s->f.ep[0].ep->fid, &s->op[i].ctx));
	while (s->busy || s->nrepost) {
		if (cf_now_ms() - t0 > (uint64_t)KILL_BOUND_MS) {
			char kinds[64] = "";

			for (i = 0; i < WINDOW + K_NKIND; i++)
				if (s->op[i].busy || s->op[i].repost)
					snprintf(kinds + strlen(kinds),
						 sizeof(kinds) - strlen(kinds),
						 " %d", (int)s->op[i].kind);
			cf_assert(false,
				  "round %d: %d operation(s) to the dead peer "
				  "still under way %ld ms after its death "
				  "(kinds%s)",
				  s->iter, s->busy + s->nrepost, KILL_BOUND_MS,
				  kinds);
		}
		repost(s, t0);
		echo_step(s);
		dispatch(s, t0);
	}
	for (i = 0; i < WINDOW + K_NKIND; i++)
		cf_assert(!s->op[i].busy, "round %d: slot %d busy", s->iter, i);
	/* The bystander goes on: a few more echoes after the dead are done. */
	while (s->echoes < echoes_at_kill + 3) {
		cf_assert(cf_now_ms() - t0 <= CF_WAIT_MS,
			  "round %d: the bystander's echoes stopped after "
			  "the kill (%u since; the last one sent %d, echoed "
			  "%d)",
			  s->iter, (unsigned int)(s->echoes - echoes_at_kill),
			  s->e_sent, s->e_recvd);
		echo_step(s);
		dispatch(s, t0);
	}
	cf_ok(fi_av_remove(s->f.av, &s->victim, 1, 0));
	close(l.wfd);
	close(l.rfd);
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

static void report_ms(struct kill_state *s)
{
	int k;

	for (k = 0; k < K_NKIND; k++) {
		int n = s->nms[k];

		if (!n)
			continue;
		qsort(s->ms[k], (size_t)n, sizeof(uint32_t), cmp_u32);
		cf_note("%s to a dead peer: error after %u/%u/%u ms "
			"(min/median/max of %d)",
			kind_name[k], s->ms[k][0], s->ms[k][n / 2],
			s->ms[k][n - 1], n);
	}
}

static int case_proc_kill_random(const char *prov)
{
	struct kill_state *s = calloc(1, sizeof(*s));
	const char *env_seed = getenv("CF_KILL_SEED");
	const char *env_iters = getenv("CF_KILL_ITERS");
	int iters = env_iters ? atoi(env_iters) : KILL_ITERS_DEF;
	const char *env_limit = getenv("CF_CASE_TIMEOUT");
	uint64_t budget_ms = (uint64_t)(env_limit ? atoi(env_limit) : 60) *
			     1000 / 3, t_start;
	struct peer_link el;
	uint8_t zero = 0;
	int i, k, status;
	char b;

	cf_assert(s, "calloc");
	if (getenv("CF_KILL_BOUND_MS"))
		kill_bound_ms = atol(getenv("CF_KILL_BOUND_MS"));
	s->seed = env_seed ? (unsigned int)strtoul(env_seed, NULL, 0)
			   : (unsigned int)(cf_now_ms() ^ (uint64_t)getpid());
	cf_note("seed %u (CF_KILL_SEED=%u replays it), %d rounds", s->seed,
		s->seed, iters);
	s->caps = kill_caps(prov, &s->directed);
	/* tcp's own path between local peers: a socket.  Its kernel takes
	 * data for a peer that died until the end is read (FIN), so a send
	 * may be reported done (buffer free, fi_cq(3)) before one fails. */
	s->lenient = (!strcmp(prov, "tcp") && getenv("FI_TCP_SHM") &&
		      !strcmp(getenv("FI_TCP_SHM"), "0")) ||
		     /* udp's RDM: an eager send is done once copied into
		      * the send window, before any death is known. */
		     !strcmp(prov, "udp");
	/* verbs: the device takes an inject (no completion to wait for)
	 * until the connection is known dead: an unanswered packet is
	 * retried for some 0.5 s (FI_VERBS_ACK_TIMEOUT), or the peer's
	 * kernel says so.  Sends with a completion are not lenient: they
	 * complete at the device's acknowledgement. */
	s->lenient_inject = !strcmp(prov, "verbs");
	/* udp's contexts: the ICMP error of a death goes to one socket of
	 * the scalable endpoint, whose pair tells the others. */
	s->lenient_trecv = cf_contexts() && !strcmp(prov, "udp");
	if (!s->directed)
		cf_note("no FI_DIRECTED_RECV: receives from the victim are not "
			"directed, and cancelled");
	open_kill(&s->f, prov, s->caps);
	cf_mem_reg(&s->f, 0, &s->local, (size_t)(WINDOW + K_NKIND) * BIG,
		   FI_SEND | FI_RECV |
		       ((s->caps & FI_RMA) ? FI_READ | FI_WRITE : 0));
	for (i = 0; i < WINDOW + K_NKIND; i++) {
		s->op[i].buf = s->local.p + (size_t)i * BIG;
		s->op[i].res = s->op[i].buf + BIG - 64;
	}
	for (k = 0; k < K_NKIND; k++)
		s->ms[k] = calloc((size_t)iters + 1, sizeof(uint32_t));
	s->region_ref = malloc(RD_SPAN);
	cf_assert(s->region_ref, "malloc");
	cf_fill(s->region_ref, RD_SPAN, REGION_SEED);

	cf_spawn_peer("kill_echo", &el);
	cf_send_name(el.wfd, &s->f.ep[0]);
	s->echo = cf_recv_name(el.rfd, &s->f);
	cf_mem_reg(&s->f, 0, &s->em, ECHO_MAX, FI_SEND);
	cf_mem_reg(&s->f, 0, &s->er, ECHO_MAX, FI_RECV);

	/* Slow machines (an emulated VM) get fewer rounds, never fewer than
	 * 3: a third of the case's time limit is the budget. */
	t_start = cf_now_ms();
	for (s->iter = 0; s->iter < iters; s->iter++) {
		if (s->iter >= 3 && cf_now_ms() - t_start > budget_ms) {
			cf_note("stopped after %d rounds: %llu ms used", s->iter,
				(unsigned long long)(cf_now_ms() - t_start));
			break;
		}
		one_round(s);
	}

	/* The bystander ends on a 0-byte message, having seen every one. */
	while (s->e_busy)
		dispatch(s, 0);
	cf_post(&s->f, fi_send(s->f.ep[0].ep, &zero, 0, NULL, s->echo,
			       &s->esc));
	(void)cf_wait_ctx(&s->f, 0, &s->esc);
	cf_read_all(el.rfd, &b, 1, CF_WAIT_MS);
	status = cf_reap(&el, CF_WAIT_MS);
	cf_assert(WIFEXITED(status) && !WEXITSTATUS(status),
		  "the bystander ended with status 0x%x", status);
	cf_note("%u verified echoes with the bystander", s->echoes);
	if (s->late_done)
		cf_note("%u send(s) and inject(s) to a dead peer reported done "
			"before one failed (a socket or a device took them)",
			s->late_done);
	if (s->late_trecv)
		cf_note("%u directed receive(s) posted after a death took a "
			"message the victim sent before it, intact",
			s->late_trecv);
	report_ms(s);
	cf_expect_none(&s->f, 0, 50);
	cf_mem_free(&s->em);
	cf_mem_free(&s->er);
	cf_mem_free(&s->local);
	cf_close(&s->f);
	close(el.wfd);
	close(el.rfd);
	for (k = 0; k < K_NKIND; k++)
		free(s->ms[k]);
	free(s->region_ref);
	free(s);
	return 0;
}

const struct cf_case cf_cases_kill[] = {
    {"proc_kill_random",
     "three processes: a peer SIGKILLed at a random point of sends, "
     "rendezvous, receives, RMA and atomics; everything to it ends in an "
     "error within 2 s, a bystander's echoes go on",
     case_proc_kill_random},
    {NULL},
};
