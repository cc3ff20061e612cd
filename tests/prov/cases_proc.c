// SPDX-License-Identifier: BSD-2-Clause
/*
 * Two-process conformance cases: the case process starts this same
 * program in a peer role (fork + exec, "-R ROLE") and the two exchange
 * their endpoint names over a pair of pipes (fd 3 in, fd 4 out on the
 * peer's side), then talk over the provider only.  The peer dies with its
 * parent (PR_SET_PDEATHSIG) and on its own alarm; it is only ever stopped
 * by its PID.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>
#include <sys/prctl.h>
#include <sys/wait.h>

#include "conformance.h"
#include "proc.h"

#define PEER_ALARM_S 150

/* The pingpong schedule both sides follow: count messages of each size. */
static const struct {
	size_t len;
	int count;
} sched[] = {
    {1, 250}, {100, 250}, {4096, 250}, {70000, 250}, {1 << 20, 20},
};

#define NSCHED (sizeof(sched) / sizeof(sched[0]))

/* What the "burst" peer sends before it closes and exits. */
static const size_t burst_len[] = {100, 4096, 1000};
#define NBURST (sizeof(burst_len) / sizeof(burst_len[0]))
#define BURST_SEED 100
#define PP_MAX (1 << 20)
#define WARMUP 10

/* Make fd number want a copy of fd, inherited across exec. */
static void move_fd(int fd, int want)
{
	if (fd == want) {
		fcntl(fd, F_SETFD, 0);
		return;
	}
	if (dup2(fd, want) < 0)
		_exit(127);
}

void cf_spawn_peer(const char *role, struct peer_link *l)
{
	int down[2], up[2];

	cf_assert(!pipe2(down, O_CLOEXEC) && !pipe2(up, O_CLOEXEC), "pipe2");
	fflush(stdout);
	l->pid = fork();
	cf_assert(l->pid >= 0, "fork: %s", strerror(errno));
	if (!l->pid) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		/* Keep the ends apart from 3 and 4 before moving them there. */
		down[0] = fcntl(down[0], F_DUPFD_CLOEXEC, 10);
		up[1] = fcntl(up[1], F_DUPFD_CLOEXEC, 10);
		move_fd(down[0], PEER_IN);
		move_fd(up[1], PEER_OUT);
		execl(cf_self_exe, "conformance", "-p", cf_prov, "-R", role,
		      (char *)NULL);
		_exit(127);
	}
	close(down[0]);
	close(up[1]);
	l->wfd = down[1];
	l->rfd = up[0];
}

void cf_write_all(int fd, const void *buf, size_t len)
{
	const uint8_t *p = buf;
	ssize_t n;

	while (len) {
		n = write(fd, p, len);
		if (n < 0 && errno == EINTR)
			continue;
		cf_assert(n > 0, "write to peer pipe: %s", strerror(errno));
		p += n;
		len -= (size_t)n;
	}
}

static void read_all(struct cf_fix *f, int fd, void *buf, size_t len,
		     int timeout_ms)
{
	uint64_t end = cf_now_ms() + timeout_ms;
	uint8_t *p = buf;
	ssize_t n;

	while (len) {
		struct pollfd pfd = {fd, POLLIN, 0};
		int left = (int)(end - cf_now_ms());

		cf_assert(cf_now_ms() < end, "peer said nothing for %d ms",
			  timeout_ms);
		if (f)
			cf_progress(f);
		if (poll(&pfd, 1, f ? 1 : left) <= 0)
			continue;
		n = read(fd, p, len);
		if (n < 0 && errno == EINTR)
			continue;
		cf_assert(n > 0, "peer pipe closed (peer died?)");
		p += n;
		len -= (size_t)n;
	}
}

void cf_read_all(int fd, void *buf, size_t len, int timeout_ms)
{
	read_all(NULL, fd, buf, len, timeout_ms);
}

void cf_read_all_progress(struct cf_fix *f, int fd, void *buf, size_t len,
			  int timeout_ms)
{
	read_all(f, fd, buf, len, timeout_ms);
}

void cf_send_name(int fd, const struct cf_ep *e)
{
	uint32_t len = (uint32_t)e->namelen;

	cf_write_all(fd, &len, sizeof(len));
	cf_write_all(fd, e->name, len);
}

void cf_read_name(int fd, struct peer_name *n)
{
	cf_read_all(fd, &n->len, sizeof(n->len), CF_WAIT_MS);
	cf_assert(n->len > 0 && n->len <= sizeof(n->v), "peer name of %u bytes",
		  n->len);
	cf_read_all(fd, n->v, n->len, CF_WAIT_MS);
}

fi_addr_t cf_insert_name(struct cf_fix *f, const struct peer_name *n)
{
	fi_addr_t a;
	int ret;

	ret = fi_av_insert(f->av, n->v, 1, &a, 0, NULL);
	cf_assert(ret == 1, "fi_av_insert of the peer's name: %d", ret);
	return a;
}

/* Read the other side's name and insert it into our AV. */
fi_addr_t cf_recv_name(int fd, struct cf_fix *f)
{
	struct peer_name n;

	cf_read_name(fd, &n);
	return cf_insert_name(f, &n);
}

/* Wait for the peer to exit; its status must be 0 unless killed. */
int cf_reap(struct peer_link *l, int timeout_ms)
{
	uint64_t end = cf_now_ms() + timeout_ms;
	int status;

	for (;;) {
		pid_t w = waitpid(l->pid, &status, WNOHANG);

		if (w == l->pid)
			return status;
		if (cf_now_ms() > end) {
			kill(l->pid, SIGKILL);
			waitpid(l->pid, &status, 0);
			cf_fail("peer %d did not exit within %d ms",
				(int)l->pid, timeout_ms);
		}
		cf_sleep_ms(5);
	}
}

/* Odd-numbered messages go tagged (tag = their number), even ones not. */
static void post_recv(struct cf_fix *f, fi_addr_t peer, struct cf_mem *m,
		      size_t len, unsigned int seed, void *ctx)
{
	if (seed & 1)
		cf_post(f, fi_trecv(f->ep[0].ep, m->p, len, m->desc, peer, seed,
				    0, ctx));
	else
		cf_post(f, fi_recv(f->ep[0].ep, m->p, len, m->desc, peer, ctx));
}

static void post_send(struct cf_fix *f, fi_addr_t peer, struct cf_mem *m,
		      size_t len, unsigned int seed, void *ctx)
{
	if (seed & 1)
		cf_post(f, fi_tsend(f->ep[0].ep, m->p, len, m->desc, peer, seed,
				    ctx));
	else
		cf_post(f, fi_send(f->ep[0].ep, m->p, len, m->desc, peer, ctx));
}

/* One message out and its echo back, both verified. */
static void ping(struct cf_fix *f, fi_addr_t peer, struct cf_mem *sm,
		 struct cf_mem *rm, size_t len, unsigned int seed)
{
	struct fi_context2 sc, rc;
	struct cf_comp c;

	cf_fill(sm->p, len, seed);
	memset(rm->p, 0, len);
	post_recv(f, peer, rm, len, seed, &rc);
	post_send(f, peer, sm, len, seed, &sc);
	c = cf_wait_ctx(f, 0, &sc);
	cf_assert(!c.err, "ping %u (%zu bytes): send error %d (%s)", seed, len,
		  c.err, fi_strerror(c.err));
	c = cf_wait_ctx(f, 0, &rc);
	cf_assert(!c.err && c.len == len,
		  "ping %u (%zu bytes): echo err %d "
		  "len %zu",
		  seed, len, c.err, c.len);
	cf_check_fill(rm->p, len, seed, "echo from the peer process");
}

/* The peer's side: receive, verify, send the same bytes back. */
static void pong(struct cf_fix *f, fi_addr_t peer, struct cf_mem *m, size_t len,
		 unsigned int seed)
{
	struct fi_context2 sc, rc;
	struct cf_comp c;

	memset(m->p, 0, len);
	post_recv(f, peer, m, len, seed, &rc);
	c = cf_wait_ctx(f, 0, &rc);
	cf_assert(!c.err && c.len == len, "pong %u: err %d len %zu, want %zu",
		  seed, c.err, c.len, len);
	cf_check_fill(m->p, len, seed, "ping in the peer process");
	if (seed & 1)
		cf_assert(c.tag == seed, "pong %u: tag %llu", seed,
			  (unsigned long long)c.tag);
	post_send(f, peer, m, len, seed, &sc);
	c = cf_wait_ctx(f, 0, &sc);
	cf_assert(!c.err, "pong %u: send error %d", seed, c.err);
}

static void open_one(struct cf_fix *f, const char *prov, uint64_t caps)
{
	struct cf_opts o = {.caps = caps, .nep = 1, .no_insert = true};

	cf_open(f, prov, &o);
}

/* A request to the RMA target peer about its registered region. */
struct rma_cmd {
	char op; /* 'F' fill, 'C' check, 'Q' quit */
	uint32_t seed;
	uint64_t off;
	uint64_t len;
};

#define RMA_REGION ((4 << 20) + 64)

/* Drive progress until fd is readable; the peer may need us meanwhile. */
static void await_fd(struct cf_fix *f, int fd)
{
	uint64_t end = cf_now_ms() + CF_WAIT_MS;
	struct pollfd pfd = {fd, POLLIN, 0};

	while (poll(&pfd, 1, 0) <= 0) {
		cf_assert(cf_now_ms() < end,
			  "the other process said nothing "
			  "for %d ms",
			  CF_WAIT_MS);
		cf_progress(f);
	}
}

static bool holds_fill(const uint8_t *p, size_t len, unsigned int seed)
{
	uint8_t *want = malloc(len);
	bool ok;

	cf_fill(want, len, seed);
	ok = !memcmp(p, want, len);
	free(want);
	return ok;
}

/*
 * The guarded region of the RMA target: a 4 KiB registration with a guard
 * page of known fill on each side, for accesses that must be rejected.
 */
#define RMA_GUARDED 4096
#define RMA_GUARD_SEED 81

/* The target side: answer fill and check requests until told to quit. */
static void rma_target(struct cf_fix *f)
{
	struct rma_cmd cmd;
	struct cf_mem t, g, gone;
	uint8_t *area;
	uint64_t end;
	char r;

	cf_mem_reg(f, 0, &t, RMA_REGION, FI_REMOTE_READ | FI_REMOTE_WRITE);
	cf_write_all(PEER_OUT, &t.key, sizeof(t.key));
	cf_write_all(PEER_OUT, &t.raddr, sizeof(t.raddr));
	/* g registers only the middle page of area. */
	cf_assert(!posix_memalign((void **)&area, 4096, 3 * RMA_GUARDED),
		  "posix_memalign");
	cf_fill(area, 3 * RMA_GUARDED, RMA_GUARD_SEED);
	memset(&g, 0, sizeof(g));
	cf_ok(fi_mr_reg(f->domain, area + RMA_GUARDED, RMA_GUARDED,
			FI_REMOTE_READ | FI_REMOTE_WRITE, 0, 0xf00d, 0, &g.mr,
			NULL));
	if (f->info->domain_attr->mr_mode & FI_MR_ENDPOINT) {
		cf_ok(fi_mr_bind(g.mr, &f->ep[0].ep->fid, 0));
		cf_ok(fi_mr_enable(g.mr));
	}
	g.key = fi_mr_key(g.mr);
	g.raddr = t.raddr ? (uint64_t)(uintptr_t)(area + RMA_GUARDED) : 0;
	cf_mem_reg(f, 0, &gone, 4096, FI_REMOTE_READ | FI_REMOTE_WRITE);
	cf_mem_free(&gone);
	cf_write_all(PEER_OUT, &g.key, sizeof(g.key));
	cf_write_all(PEER_OUT, &g.raddr, sizeof(g.raddr));
	cf_write_all(PEER_OUT, &gone.key, sizeof(gone.key));
	for (;;) {
		await_fd(f, PEER_IN);
		cf_read_all(PEER_IN, &cmd, sizeof(cmd), CF_WAIT_MS);
		if (cmd.op == 'Q')
			break;
		if (cmd.op == 'G') {
			/* Guards and guarded buffer as they were filled. */
			r = holds_fill(area, 3 * RMA_GUARDED, RMA_GUARD_SEED)
				? 'Y'
				: 'N';
			cf_write_all(PEER_OUT, &r, 1);
			continue;
		}
		cf_assert(cmd.off + cmd.len <= RMA_REGION, "request past the "
							   "region");
		if (cmd.op == 'F') {
			cf_fill(t.p + cmd.off, cmd.len, cmd.seed);
			r = 'Y';
		} else {
			/* A write may land after its initiator completed. */
			end = cf_now_ms() + CF_WAIT_MS;
			while (!holds_fill(t.p + cmd.off, cmd.len, cmd.seed) &&
			       cf_now_ms() < end)
				cf_progress(f);
			r = holds_fill(t.p + cmd.off, cmd.len, cmd.seed) ? 'Y'
									 : 'N';
		}
		cf_write_all(PEER_OUT, &r, 1);
	}
	cf_ok(fi_close(&g.mr->fid));
	free(area);
	cf_mem_free(&t);
}

/*
 * Passive RMA: the target's registered region is guard, data, guard, then
 * PASSIVE_ATOMICS 64-bit words for atomics and a guard after them.
 */
#define PASSIVE_GUARD 64
#define PASSIVE_DATA (4 << 20)
#define PASSIVE_ATOMICS 8
#define PASSIVE_ATOMIC_OFF (PASSIVE_GUARD + PASSIVE_DATA + PASSIVE_GUARD)
#define PASSIVE_REGION (PASSIVE_ATOMIC_OFF + 8 * PASSIVE_ATOMICS + PASSIVE_GUARD)
#define PASSIVE_GUARD_BYTE 0xa5
#define PASSIVE_SEED 900

/* What the initiator expects the target's region to hold at the end. */
struct passive_want {
	uint32_t seed; /* of the data section */
	uint64_t word[PASSIVE_ATOMICS];
};

static bool all_bytes(const uint8_t *p, size_t len, uint8_t v)
{
	size_t i;

	for (i = 0; i < len; i++)
		if (p[i] != v)
			return false;
	return true;
}

/* The target's check of its region: 0, or which part is wrong (1..). */
static char passive_check(const uint8_t *r, const struct passive_want *w)
{
	uint64_t v;
	int i;

	if (!all_bytes(r, PASSIVE_GUARD, PASSIVE_GUARD_BYTE))
		return '1';
	if (!holds_fill(r + PASSIVE_GUARD, PASSIVE_DATA, w->seed))
		return '2';
	if (!all_bytes(r + PASSIVE_GUARD + PASSIVE_DATA, PASSIVE_GUARD,
		       PASSIVE_GUARD_BYTE))
		return '3';
	for (i = 0; i < PASSIVE_ATOMICS; i++) {
		memcpy(&v, r + PASSIVE_ATOMIC_OFF + 8 * i, 8);
		if (v != w->word[i])
			return (char)('a' + i);
	}
	if (!all_bytes(r + PASSIVE_ATOMIC_OFF + 8 * PASSIVE_ATOMICS,
		       PASSIVE_GUARD, PASSIVE_GUARD_BYTE))
		return '4';
	return 'Y';
}

/*
 * The passive target: register, hand out key and address, then block in
 * read() on the pipe, calling nothing of the library until the initiator
 * says what to expect ('C'); or, for a provider that needs our progress
 * ('P' first), make progress until then.
 */
static void rma_passive_target(struct cf_fix *f)
{
	struct passive_want w;
	struct cf_mem t;
	char op, r;

	cf_mem_reg(f, 0, &t, PASSIVE_REGION, FI_REMOTE_READ | FI_REMOTE_WRITE);
	memset(t.p, PASSIVE_GUARD_BYTE, PASSIVE_REGION);
	memset(t.p + PASSIVE_GUARD, 0, PASSIVE_DATA);
	memset(t.p + PASSIVE_ATOMIC_OFF, 0, 8 * PASSIVE_ATOMICS);
	cf_write_all(PEER_OUT, &t.key, sizeof(t.key));
	cf_write_all(PEER_OUT, &t.raddr, sizeof(t.raddr));
	/* Blocks in poll()/read(): no progress of ours from here on. */
	cf_read_all(PEER_IN, &op, 1, PEER_ALARM_S * 1000);
	if (op == 'P') {
		await_fd(f, PEER_IN);
		cf_read_all(PEER_IN, &op, 1, CF_WAIT_MS);
	}
	cf_assert(op == 'C', "passive target: unexpected request %c", op);
	cf_read_all(PEER_IN, &w, sizeof(w), CF_WAIT_MS);
	r = passive_check(t.p, &w);
	cf_write_all(PEER_OUT, &r, 1);
	cf_mem_free(&t);
}

/*
 * Injected writes into a process that has stopped calling the provider
 * (proc_inject_write_cntr): a region of INJ_WORDS 64-bit words and one
 * more, the sum, between two guards.  The case writes word i once, with
 * inj_value(i), and adds 1 to the sum with each injected atomic.
 */
#define INJ_WORDS 256
#define INJ_GUARD 64
#define INJ_SUM (INJ_GUARD + 8 * INJ_WORDS)
#define INJ_REGION (INJ_SUM + 8 + INJ_GUARD)

static uint64_t inj_value(size_t i)
{
	return 0x9e3779b97f4a7c15ull * (uint64_t)(i + 1);
}

/* 'Y' when the first n words hold their values, the others 0, the sum
 * na and the guards their byte; else which part is wrong ('1', 'w', 's',
 * '2'). */
static char inject_check(const uint8_t *r, size_t n, uint64_t na)
{
	uint64_t v;
	size_t i;

	if (!all_bytes(r, INJ_GUARD, PASSIVE_GUARD_BYTE))
		return '1';
	for (i = 0; i < INJ_WORDS; i++) {
		memcpy(&v, r + INJ_GUARD + 8 * i, 8);
		if (v != (i < n ? inj_value(i) : 0))
			return 'w';
	}
	memcpy(&v, r + INJ_SUM, 8);
	if (v != na)
		return 's';
	if (!all_bytes(r + INJ_SUM + 8, INJ_GUARD, PASSIVE_GUARD_BYTE))
		return '2';
	return 'Y';
}

/*
 * The target of injected writes: register the region, hand out its key
 * and address, make progress until the case starts ('S', after it met us
 * with a read), say so ('B') and block in read() on the pipe, calling
 * nothing of the library, until the case has seen its writes counted
 * ('P'); then make progress until it asks for the check ('C', with the
 * number of words written and of atomics) and answer 'Y' once the region
 * holds them
 * (they may land after their initiator counted them), or what is wrong.
 */
static void inject_target(struct cf_fix *f)
{
	uint64_t n, na, end;
	struct cf_mem t;
	char op, r;

	cf_mem_reg(f, 0, &t, INJ_REGION, FI_REMOTE_READ | FI_REMOTE_WRITE);
	memset(t.p, PASSIVE_GUARD_BYTE, INJ_REGION);
	memset(t.p + INJ_GUARD, 0, 8 * INJ_WORDS + 8);
	cf_write_all(PEER_OUT, &t.key, sizeof(t.key));
	cf_write_all(PEER_OUT, &t.raddr, sizeof(t.raddr));
	await_fd(f, PEER_IN);
	cf_read_all(PEER_IN, &op, 1, CF_WAIT_MS);
	cf_assert(op == 'S', "injected-writes target: unexpected request %c",
		  op);
	op = 'B';
	cf_write_all(PEER_OUT, &op, 1);
	/* Blocks in poll()/read(): no progress of ours from here on. */
	cf_read_all(PEER_IN, &op, 1, PEER_ALARM_S * 1000);
	cf_assert(op == 'P', "injected-writes target: unexpected request %c",
		  op);
	await_fd(f, PEER_IN);
	cf_read_all(PEER_IN, &op, 1, CF_WAIT_MS);
	cf_assert(op == 'C', "injected-writes target: unexpected request %c",
		  op);
	cf_read_all(PEER_IN, &n, sizeof(n), CF_WAIT_MS);
	cf_read_all(PEER_IN, &na, sizeof(na), CF_WAIT_MS);
	end = cf_now_ms() + CF_WAIT_MS;
	while ((r = inject_check(t.p, n, na)) != 'Y' && cf_now_ms() < end)
		cf_progress(f);
	cf_write_all(PEER_OUT, &r, 1);
	cf_mem_free(&t);
}

/*
 * The closing target: once the initiator writes in a loop ('G'), close
 * the MR while its writes land, overwrite the region, say so ('X'), make
 * progress (a stale key is refused by us where the initiator cannot tell
 * alone) until the initiator is done ('D'), and answer whether the region
 * changed after fi_close returned.
 *
 * Over iWARP the device checks the key per segment and does not wait at
 * ibv_dereg_mr for a segment it is placing (fi_verbs(7)): a write under
 * way may still change the region just after fi_close returns.  What it
 * promises is that nothing lands once a write with the stale key has
 * failed, since one connection's segments are placed in order.  There
 * the initiator says so ('F') after the first write after the close, and
 * the region is marked again before the check.
 */
#define CLOSER_REGION (4 << 20)
#define CLOSER_MARK 0x5a
#define CLOSER_ROUNDS 8

static void rma_closer_target(struct cf_fix *f)
{
	const bool iwarp = cf_iwarp(f);
	struct cf_mem t;
	char op, r;
	int round;

	for (round = 0; round < CLOSER_ROUNDS; round++) {
		cf_mem_reg(f, 0, &t, CLOSER_REGION,
			   FI_REMOTE_READ | FI_REMOTE_WRITE);
		cf_write_all(PEER_OUT, &t.key, sizeof(t.key));
		cf_write_all(PEER_OUT, &t.raddr, sizeof(t.raddr));
		await_fd(f, PEER_IN);
		cf_read_all(PEER_IN, &op, 1, CF_WAIT_MS);
		cf_assert(op == 'G', "closing target: unexpected request %c",
			  op);
		/* Writes land meanwhile, with no progress of ours; a
		 * different moment each round. */
		cf_sleep_ms(10 + 3 * round);
		cf_mem_close(&t);
		/* Ours alone from now on: mark it at once (a write still
		 * landing would undo the mark behind it). */
		memset(t.p, CLOSER_MARK, CLOSER_REGION);
		r = 'X';
		cf_write_all(PEER_OUT, &r, 1);
		if (iwarp) {
			await_fd(f, PEER_IN);
			cf_read_all(PEER_IN, &op, 1, CF_WAIT_MS);
			cf_assert(op == 'F',
				  "closing target: unexpected request %c", op);
			memset(t.p, CLOSER_MARK, CLOSER_REGION);
			r = 'M';
			cf_write_all(PEER_OUT, &r, 1);
		}
		await_fd(f, PEER_IN);
		cf_read_all(PEER_IN, &op, 1, CF_WAIT_MS);
		cf_assert(op == 'D', "closing target: unexpected request %c",
			  op);
		r = all_bytes(t.p, CLOSER_REGION, CLOSER_MARK) ? 'Y' : 'N';
		cf_write_all(PEER_OUT, &r, 1);
		free(t.p);
	}
}

/*
 * Messages larger than the eager limit, sent by a process that then stops
 * calling the provider (proc_rndv_passive_sender).
 */
static const size_t rndv_len[] = {65537, 1 << 20, 4 << 20};
#define NRNDV (sizeof(rndv_len) / sizeof(rndv_len[0]))
#define RNDV_SEED 3100

/*
 * The sender: post every message, say so ('S'), then block in read() on
 * the pipe, calling nothing of the library until the receiver is done
 * ('D'); or, for a provider that needs our progress ('P' first), make
 * progress until then.  Then its sends must all have completed ('Y').
 */
static void rndv_sender(struct cf_fix *f, fi_addr_t peer)
{
	struct fi_context2 sc[NRNDV];
	struct cf_mem m[NRNDV];
	struct cf_comp c;
	size_t i;
	char op, r = 'Y';

	for (i = 0; i < NRNDV; i++) {
		cf_mem_reg(f, 0, &m[i], rndv_len[i], FI_SEND);
		cf_fill(m[i].p, rndv_len[i], RNDV_SEED + (unsigned int)i);
		cf_post(f, fi_tsend(f->ep[0].ep, m[i].p, rndv_len[i],
				    m[i].desc, peer, RNDV_SEED + i, &sc[i]));
	}
	op = 'S';
	cf_write_all(PEER_OUT, &op, 1);
	/* Blocks in poll()/read(): no progress of ours from here on. */
	cf_read_all(PEER_IN, &op, 1, PEER_ALARM_S * 1000);
	if (op == 'P') {
		await_fd(f, PEER_IN);
		cf_read_all(PEER_IN, &op, 1, CF_WAIT_MS);
	}
	cf_assert(op == 'D', "rendezvous sender: unexpected request %c", op);
	for (i = 0; i < NRNDV; i++) {
		c = cf_wait_ctx(f, 0, &sc[i]);
		if (c.err)
			r = 'N';
		cf_mem_free(&m[i]);
	}
	cf_write_all(PEER_OUT, &r, 1);
}

/* What the "crossed" peer sends before it closes (proc_crossed_close). */
#define NCROSSED 6
#define CROSSED_SEED 3200

/*
 * The crossed peer: once told ('G'), send NCROSSED small tagged messages
 * (its first send opens a connection of its own, while the case's
 * connection to it still waits to be accepted), receive the case's
 * message, say so ('E'), close and exit.
 */
static void crossed_sender(struct cf_fix *f, fi_addr_t peer, struct cf_mem *m)
{
	struct fi_context2 sc[NCROSSED], rc;
	struct cf_mem sm[NCROSSED];
	struct cf_comp c;
	size_t i;
	char op;

	cf_read_all(PEER_IN, &op, 1, CF_WAIT_MS);
	cf_assert(op == 'G', "crossed peer: unexpected request %c", op);
	for (i = 0; i < NCROSSED; i++) {
		cf_mem_reg(f, 0, &sm[i], 8 << i, FI_SEND);
		cf_fill(sm[i].p, 8u << i, CROSSED_SEED + (unsigned int)i);
		cf_post(f, fi_tsend(f->ep[0].ep, sm[i].p, 8u << i, sm[i].desc,
				    peer, CROSSED_SEED + i, &sc[i]));
	}
	for (i = 0; i < NCROSSED; i++) {
		c = cf_wait_ctx(f, 0, &sc[i]);
		cf_assert(!c.err, "crossed peer: send %zu: error %d", i, c.err);
	}
	cf_post(f, fi_trecv(f->ep[0].ep, m->p, 64, m->desc, peer,
			    CROSSED_SEED - 1, 0, &rc));
	c = cf_wait_ctx(f, 0, &rc);
	cf_assert(!c.err && c.len == 64, "crossed peer: receive: err %d",
		  c.err);
	for (i = 0; i < NCROSSED; i++)
		cf_mem_free(&sm[i]);
	op = 'E';
	cf_write_all(PEER_OUT, &op, 1);
}

int cf_peer_main(const char *role, int argc, char **argv)
{
	struct cf_mem m;
	struct cf_fix f;
	fi_addr_t peer;
	unsigned int seed = 0;
	size_t s;
	int i;
	char b = 'D';

	(void)argc;
	(void)argv;
	cf_case_name = role;
	alarm(PEER_ALARM_S);
	if (cf_kill_is_role(role))
		return cf_kill_peer_main(role);
	if (cf_mr_cntr_is_role(role))
		return cf_mr_cntr_peer_main(role);
	if (cf_inject_is_role(role))
		return cf_inject_peer_main(role);
	if (cf_trigger_is_role(role))
		return cf_trigger_peer_main(role);
	if (cf_coll_is_role(role))
		return cf_coll_peer_main(role);
	if (cf_dgram_is_role(role))
		return cf_dgram_peer_main(role);
	if (cf_fence_is_role(role))
		return cf_fence_peer_main(role);
	if (cf_shared_av_is_role(role))
		return cf_shared_av_peer_main(role);
	if (!strcmp(role, "restart")) {
		/* Take over the name of a peer that was killed. */
		struct cf_opts o = {.caps = FI_MSG | FI_TAGGED, .nep = 1,
				    .no_insert = true};
		struct peer_name n;

		cf_read_name(PEER_IN, &n);
		o.name = n.v;
		o.namelen = n.len;
		cf_open(&f, cf_prov, &o);
	} else {
		open_one(&f, cf_prov,
			 !strcmp(role, "rma_target") ||
					 !strcmp(role, "rma_closer")
				 ? FI_MSG | FI_RMA
			 : !strcmp(role, "rma_passive") ||
					 !strcmp(role, "inject_target")
				 ? FI_MSG | FI_RMA | FI_ATOMIC
				 : FI_MSG | FI_TAGGED);
	}
	cf_send_name(PEER_OUT, &f.ep[0]);
	peer = cf_recv_name(PEER_IN, &f);
	cf_mem_reg(&f, 0, &m, PP_MAX, FI_SEND | FI_RECV);
	if (!strcmp(role, "rma_target")) {
		rma_target(&f);
	} else if (!strcmp(role, "rma_passive")) {
		rma_passive_target(&f);
	} else if (!strcmp(role, "rma_closer")) {
		rma_closer_target(&f);
	} else if (!strcmp(role, "inject_target")) {
		inject_target(&f);
	} else if (!strcmp(role, "rndv_sender")) {
		rndv_sender(&f, peer);
	} else if (!strcmp(role, "crossed")) {
		crossed_sender(&f, peer, &m);
	} else if (!strcmp(role, "burst")) {
		struct fi_context2 sc[NBURST];
		struct cf_mem bm[NBURST];
		struct cf_comp c;
		char go;

		/* One message from the case first, and one back: the two
		 * have met, both ways. */
		post_recv(&f, peer, &m, 64, 0, &sc[0]);
		c = cf_wait_ctx(&f, 0, &sc[0]);
		cf_assert(!c.err, "burst: the first message: error %d", c.err);
		cf_post(&f, fi_send(f.ep[0].ep, m.p, 64, m.desc, peer,
				    &sc[0]));
		c = cf_wait_ctx(&f, 0, &sc[0]);
		cf_assert(!c.err, "burst: the answer: error %d", c.err);
		cf_read_all(PEER_IN, &go, 1, CF_WAIT_MS);
		for (s = 0; s < NBURST; s++) {
			cf_mem_reg(&f, 0, &bm[s], burst_len[s], FI_SEND);
			cf_fill(bm[s].p, burst_len[s], BURST_SEED + s);
			post_send(&f, peer, &bm[s], burst_len[s],
				  BURST_SEED + (unsigned int)s, &sc[s]);
		}
		for (s = 0; s < NBURST; s++) {
			c = cf_wait_ctx(&f, 0, &sc[s]);
			cf_assert(!c.err, "burst send %zu: error %d", s, c.err);
		}
		for (s = 0; s < NBURST; s++)
			cf_mem_free(&bm[s]);
	} else if (!strcmp(role, "restart")) {
		/* Only what is sent to this process arrives here. */
		for (i = 0; i < WARMUP; i++)
			pong(&f, peer, &m, 4096, seed++);
		cf_expect_none(&f, 0, 50);
	} else if (!strcmp(role, "pong")) {
		for (s = 0; s < NSCHED; s++)
			for (i = 0; i < sched[s].count; i++)
				pong(&f, peer, &m, sched[s].len, seed++);
	} else if (!strcmp(role, "victim")) {
		for (i = 0; i < WARMUP; i++)
			pong(&f, peer, &m, 4096, seed++);
		cf_write_all(PEER_OUT, &b, 1);
		/* Keep the endpoint open until killed. */
		for (;;)
			pause();
	} else {
		cf_fail("unknown peer role %s", role);
	}
	cf_mem_free(&m);
	cf_close(&f);
	cf_write_all(PEER_OUT, &b, 1);
	return 0;
}

/*
 * 1020 round trips with a peer process at sizes from 1 byte to 1 MiB, each
 * message verified by the peer and its echo by us; the peer exits 0.
 */
static int case_proc_pingpong(const char *prov)
{
	struct peer_link l;
	struct cf_mem sm, rm;
	struct cf_fix f;
	fi_addr_t peer;
	unsigned int seed = 0;
	int i, status;
	size_t s;
	char b;

	open_one(&f, prov, FI_MSG | FI_TAGGED);
	cf_spawn_peer("pong", &l);
	cf_send_name(l.wfd, &f.ep[0]);
	peer = cf_recv_name(l.rfd, &f);
	cf_mem_reg(&f, 0, &sm, PP_MAX, FI_SEND);
	cf_mem_reg(&f, 0, &rm, PP_MAX, FI_RECV);
	for (s = 0; s < NSCHED; s++)
		for (i = 0; i < sched[s].count; i++)
			ping(&f, peer, &sm, &rm, sched[s].len, seed++);
	/* The peer's last echo completes when this side acknowledged it. */
	cf_read_all_progress(&f, l.rfd, &b, 1, CF_WAIT_MS);
	status = cf_reap(&l, CF_WAIT_MS);
	cf_assert(WIFEXITED(status) && !WEXITSTATUS(status),
		  "peer ended with status 0x%x", status);
	cf_expect_none(&f, 0, 50);
	cf_mem_free(&sm);
	cf_mem_free(&rm);
	cf_close(&f);
	close(l.wfd);
	close(l.rfd);
	return 0;
}

static char ask(struct cf_fix *f, struct peer_link *l, char op,
		unsigned int seed, uint64_t off, uint64_t len)
{
	struct rma_cmd cmd = {op, seed, off, len};
	char r;

	cf_write_all(l->wfd, &cmd, sizeof(cmd));
	await_fd(f, l->rfd);
	cf_read_all(l->rfd, &r, 1, CF_WAIT_MS);
	return r;
}

/*
 * Rejected RMA across processes (shm moves bulk data with CMA there): a
 * write and a read with a never-issued key, a closed registration's key,
 * one byte past the end, one byte before the start and a wrapping address,
 * against the target's guarded 4 KiB.  Each fails (post or completion),
 * and the target process finds its guards and buffer as they were.
 */
static void proc_rma_bad(struct cf_fix *f, struct peer_link *l,
			 fi_addr_t peer, struct cf_mem *lm, uint64_t gkey,
			 uint64_t graddr, uint64_t closed)
{
	const struct {
		const char *what;
		uint64_t key, addr;
	} bad[] = {
	    {"never-issued key", gkey ^ 0x5eed0000c0ffeeULL, graddr},
	    {"closed registration's key", closed, graddr},
	    {"one byte past the end", gkey, graddr + RMA_GUARDED - 63},
	    {"one byte before the start", gkey, graddr - 1},
	    {"a wrapping address", gkey, UINT64_MAX - 31},
	};
	struct fi_context2 ctx;
	struct cf_comp c;
	ssize_t ret;
	size_t i;
	int rd;

	cf_fill(lm->p, 64, 90);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		for (rd = 0; rd < 2; rd++) {
			cf_mark(rd ? "fi_read" : "fi_write");
			do {
				ret = rd ? fi_read(f->ep[0].ep, lm->p, 64,
						   lm->desc, peer, bad[i].addr,
						   bad[i].key, &ctx)
					 : fi_write(f->ep[0].ep, lm->p, 64,
						    lm->desc, peer, bad[i].addr,
						    bad[i].key, &ctx);
				if (ret == -FI_EAGAIN)
					cf_progress(f);
			} while (ret == -FI_EAGAIN);
			if (ret) {
				cf_note("%s with %s: post %zd",
					rd ? "read" : "write", bad[i].what,
					ret);
				continue;
			}
			c = cf_wait_ctx(f, 0, &ctx);
			cf_expect(c.err, "%s with %s: completed successfully",
				  rd ? "read" : "write", bad[i].what);
		}
		cf_expect(ask(f, l, 'G', 0, 0, 0) == 'Y',
			  "the target's guarded buffer changed after accesses "
			  "with %s",
			  bad[i].what);
	}
	/* Whether the path survives access errors is not promised. */
	cf_post(f, fi_write(f->ep[0].ep, lm->p, 64, lm->desc, peer, graddr,
			    gkey, &ctx));
	c = cf_wait_ctx(f, 0, &ctx);
	if (c.err)
		cf_note("a good write after bad ones: err %d (%s)", c.err,
			fi_strerror(c.err));
}

/*
 * RMA into another process's memory: writes checked by the target process
 * itself, reads of data the target process wrote, 1 byte to 4 MiB.
 */
static int case_proc_rma(const char *prov)
{
	static const size_t sizes[] = {1, 4096, 65537, 1 << 20, (4 << 20) - 3};
	struct fi_context2 ctx;
	struct peer_link l;
	struct cf_mem lm;
	struct cf_comp c;
	struct cf_fix f;
	uint64_t key, raddr, gkey, graddr, closed;
	fi_addr_t peer;
	int status;
	size_t i;
	char b;

	open_one(&f, prov, FI_MSG | FI_RMA);
	cf_spawn_peer("rma_target", &l);
	cf_send_name(l.wfd, &f.ep[0]);
	peer = cf_recv_name(l.rfd, &f);
	cf_read_all(l.rfd, &key, sizeof(key), CF_WAIT_MS);
	cf_read_all(l.rfd, &raddr, sizeof(raddr), CF_WAIT_MS);
	cf_read_all(l.rfd, &gkey, sizeof(gkey), CF_WAIT_MS);
	cf_read_all(l.rfd, &graddr, sizeof(graddr), CF_WAIT_MS);
	cf_read_all(l.rfd, &closed, sizeof(closed), CF_WAIT_MS);
	cf_mem_reg(&f, 0, &lm, 4 << 20, FI_READ | FI_WRITE);
	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		size_t len = sizes[i];

		cf_fill(lm.p, len, 500 + i);
		cf_post(&f, fi_write(f.ep[0].ep, lm.p, len, lm.desc, peer,
				     raddr + 5, key, &ctx));
		c = cf_wait_ctx(&f, 0, &ctx);
		cf_assert(!c.err, "write of %zu bytes: error %d (%s)", len,
			  c.err, fi_strerror(c.err));
		cf_assert(ask(&f, &l, 'C', 500 + i, 5, len) == 'Y',
			  "the target process does not see the %zu bytes "
			  "written",
			  len);
		cf_assert(ask(&f, &l, 'F', 600 + i, 5, len) == 'Y',
			  "the target process did not fill its region");
		memset(lm.p, 0, len);
		cf_post(&f, fi_read(f.ep[0].ep, lm.p, len, lm.desc, peer,
				    raddr + 5, key, &ctx));
		c = cf_wait_ctx(&f, 0, &ctx);
		cf_assert(!c.err, "read of %zu bytes: error %d (%s)", len,
			  c.err, fi_strerror(c.err));
		cf_check_fill(lm.p, len, 600 + i,
			      "data read from the other process");
	}
	proc_rma_bad(&f, &l, peer, &lm, gkey, graddr, closed);
	{
		struct rma_cmd q = {'Q', 0, 0, 0};

		cf_write_all(l.wfd, &q, sizeof(q));
	}
	cf_read_all(l.rfd, &b, 1, CF_WAIT_MS);
	status = cf_reap(&l, CF_WAIT_MS);
	cf_assert(WIFEXITED(status) && !WEXITSTATUS(status),
		  "peer ended with status 0x%x", status);
	cf_mem_free(&lm);
	cf_close(&f);
	close(l.wfd);
	close(l.rfd);
	return 0;
}

/* Wait for the one operation under way; false after CF_WAIT_MS. */
static bool passive_wait(struct cf_fix *f, void *ctx, struct cf_comp *c)
{
	if (!cf_poll(f, 0, c, CF_WAIT_MS))
		return false;
	cf_assert(c->ctx == ctx, "completion of another operation");
	return true;
}

/* An environment variable set to a false boolean ("0", "no", "false"). */
static bool env_false(const char *name)
{
	const char *v = getenv(name);

	return v && (!strcmp(v, "0") || !strcasecmp(v, "no") ||
		     !strcasecmp(v, "false") || !strcasecmp(v, "off"));
}

static bool env_true(const char *name)
{
	const char *v = getenv(name);

	return v && *v && !env_false(name);
}

/*
 * Whether RMA between two processes of this host may need the target's
 * progress: weft's shm (and tcp, which reaches peers of its host through
 * shm) moves it with CMA, unless told not to.
 */
static bool passive_may_need_target(const char *prov)
{
	if (env_true("FI_SHM_DISABLE_CMA"))
		return true;
	if (!strcmp(prov, "shm"))
		return false;
	return strcmp(prov, "tcp") || env_false("FI_TCP_SHM");
}

/*
 * One operation against the passive target.  Returns false when it did
 * not complete in time: then a provider that offers FI_PROGRESS_AUTO, or
 * shm and tcp between processes of this host (passive_may_need_target),
 * fail; others get a note and the target's progress.
 */
static bool passive_done(struct cf_fix *f, struct peer_link *l, void *ctx,
			 const char *what, size_t len, bool *helped)
{
	struct cf_comp c;

	if (!passive_wait(f, ctx, &c)) {
		cf_assert(f->info->domain_attr->data_progress !=
				  FI_PROGRESS_AUTO,
			  "%s of %zu bytes: no completion within %d ms while "
			  "the target process does not call the provider",
			  what, len, CF_WAIT_MS);
		cf_assert(passive_may_need_target(cf_prov),
			  "%s of %zu bytes: no completion within %d ms while "
			  "the target process does not call the provider",
			  what, len, CF_WAIT_MS);
		cf_assert(!*helped, "%s of %zu bytes: no completion", what,
			  len);
		cf_note("%s of %zu bytes needs the target's progress "
			"(data_progress is not FI_PROGRESS_AUTO)",
			what, len);
		cf_write_all(l->wfd, "P", 1);
		*helped = true;
		c = cf_wait_ctx(f, 0, ctx);
	}
	cf_assert(!c.err, "%s of %zu bytes: error %d (%s)", what, len, c.err,
		  fi_strerror(c.err));
	return true;
}

/*
 * One-sided RMA and atomics into a process that has stopped calling the
 * provider (it blocks in read() on a pipe): fi_write and fi_read from
 * 1 byte to 4 MiB, fi_atomic (FI_SUM), fi_fetch_atomic and
 * fi_compare_atomic each complete within CF_WAIT_MS; then the target
 * checks its region byte for byte, guard bytes included.
 */
static int case_proc_rma_passive(const char *prov)
{
	static const size_t sizes[] = {1, 4096, 65537, 1 << 20, PASSIVE_DATA};
	struct passive_want w = {0};
	struct fi_context2 ctx;
	struct peer_link l;
	struct cf_mem lm, rm, am;
	struct cf_fix f;
	uint64_t key, raddr, *a, *res;
	fi_addr_t peer;
	bool helped = false;
	int status, i;
	size_t k;
	char b;

	open_one(&f, prov, FI_MSG | FI_RMA | FI_ATOMIC);
	cf_spawn_peer("rma_passive", &l);
	cf_send_name(l.wfd, &f.ep[0]);
	peer = cf_recv_name(l.rfd, &f);
	cf_read_all(l.rfd, &key, sizeof(key), CF_WAIT_MS);
	cf_read_all(l.rfd, &raddr, sizeof(raddr), CF_WAIT_MS);
	cf_mem_reg(&f, 0, &lm, PASSIVE_DATA, FI_READ | FI_WRITE);
	cf_mem_reg(&f, 0, &rm, PASSIVE_DATA, FI_READ | FI_WRITE);
	cf_mem_reg(&f, 0, &am, 4096, FI_READ | FI_WRITE);
	a = (uint64_t *)am.p;
	res = a + 64;

	for (k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
		size_t len = sizes[k];
		unsigned int seed = PASSIVE_SEED + (unsigned int)k;

		cf_fill(lm.p, len, seed);
		cf_post(&f, fi_write(f.ep[0].ep, lm.p, len, lm.desc, peer,
				     raddr + PASSIVE_GUARD, key, &ctx));
		passive_done(&f, &l, &ctx, "fi_write", len, &helped);
		memset(rm.p, 0, len);
		cf_post(&f, fi_read(f.ep[0].ep, rm.p, len, rm.desc, peer,
				    raddr + PASSIVE_GUARD, key, &ctx));
		passive_done(&f, &l, &ctx, "fi_read", len, &helped);
		cf_check_fill(rm.p, len, seed, "data read back");
		w.seed = seed;
	}

	/* word 0: 100 x FI_SUM 1; word 1: fetch-add 5 twice; word 2:
	 * compare-swap 0 -> 42, then 0 -> 7 (no swap). */
	a[0] = 1;
	for (i = 0; i < 100; i++) {
		cf_post(&f, fi_atomic(f.ep[0].ep, &a[0], 1, am.desc, peer,
				      raddr + PASSIVE_ATOMIC_OFF, key,
				      FI_UINT64, FI_SUM, &ctx));
		passive_done(&f, &l, &ctx, "fi_atomic", 8, &helped);
	}
	w.word[0] = 100;
	a[1] = 5;
	for (i = 0; i < 2; i++) {
		res[0] = ~0ull;
		cf_post(&f, fi_fetch_atomic(f.ep[0].ep, &a[1], 1, am.desc,
					    &res[0], am.desc, peer,
					    raddr + PASSIVE_ATOMIC_OFF + 8, key,
					    FI_UINT64, FI_SUM, &ctx));
		passive_done(&f, &l, &ctx, "fi_fetch_atomic", 8, &helped);
		cf_expect(res[0] == (uint64_t)(5 * i),
			  "fi_fetch_atomic %d fetched %llu, want %d", i,
			  (unsigned long long)res[0], 5 * i);
	}
	w.word[1] = 10;
	for (i = 0; i < 2; i++) {
		a[2] = i ? 7 : 42; /* swap value */
		a[3] = 0;	   /* compare value */
		res[1] = ~0ull;
		cf_post(&f, fi_compare_atomic(f.ep[0].ep, &a[2], 1, am.desc,
					      &a[3], am.desc, &res[1], am.desc,
					      peer,
					      raddr + PASSIVE_ATOMIC_OFF + 16,
					      key, FI_UINT64, FI_CSWAP, &ctx));
		passive_done(&f, &l, &ctx, "fi_compare_atomic", 8, &helped);
		cf_expect(res[1] == (uint64_t)(i ? 42 : 0),
			  "fi_compare_atomic %d fetched %llu, want %d", i,
			  (unsigned long long)res[1], i ? 42 : 0);
	}
	w.word[2] = 42;

	cf_write_all(l.wfd, "C", 1);
	cf_write_all(l.wfd, &w, sizeof(w));
	cf_read_all(l.rfd, &b, 1, CF_WAIT_MS);
	cf_expect(b == 'Y',
		  "the target process found its region wrong (part %c: 1-4 "
		  "guards and data, a-h atomic words)",
		  b);
	cf_read_all(l.rfd, &b, 1, CF_WAIT_MS);
	status = cf_reap(&l, CF_WAIT_MS);
	cf_assert(WIFEXITED(status) && !WEXITSTATUS(status),
		  "peer ended with status 0x%x", status);
	cf_mem_free(&lm);
	cf_mem_free(&rm);
	cf_mem_free(&am);
	cf_close(&f);
	close(l.wfd);
	close(l.rfd);
	return 0;
}

/*
 * RMA issued after a message the target has not read: the target sleeps
 * (it blocks in read() on a pipe, calling nothing of the provider), so the
 * message waits in its queue.  Unless the application asked for RMA to
 * keep its order behind earlier sends (FI_ORDER_WAS, FI_ORDER_RAS),
 * nothing makes a write or a read wait for the target to read it: shm
 * (and tcp's peers of one host) move the data at once by CMA, as
 * libfabric 1.17's shm does ("fast RMA"); other providers get a note and
 * the target's progress.  A job whose ranks write to each other between
 * barriers of messages (fabtests' multinode test) spent most of its time
 * waiting so.  Then, on shm and tcp's peers of one host, an endpoint that
 * asks for those orders and gets them: a write issued after a message
 * the target has not read does not complete while the target sleeps, and
 * completes once it makes progress.  The target checks its region.
 */
static int case_proc_rma_after_send(const char *prov)
{
	static const size_t sizes[] = {8, 1024, 65537, PASSIVE_DATA};
	struct cf_opts oo = {.caps = FI_MSG | FI_RMA | FI_ATOMIC,
			     .nep = 1,
			     .no_insert = true,
			     .msg_order = FI_ORDER_SAS | FI_ORDER_WAS |
					  FI_ORDER_RAS};
	struct passive_want w = {0};
	struct fi_context2 ctx, sctx;
	struct peer_name name;
	struct peer_link l;
	struct cf_mem lm, rm, mm, olm, omm;
	struct cf_fix f, of;
	struct fi_info *oi;
	struct cf_comp c;
	uint64_t key, raddr;
	fi_addr_t peer, opeer;
	bool helped = false;
	int status, ret;
	size_t k;
	char b;

	open_one(&f, prov, FI_MSG | FI_RMA | FI_ATOMIC);
	cf_spawn_peer("rma_passive", &l);
	cf_send_name(l.wfd, &f.ep[0]);
	cf_read_name(l.rfd, &name);
	peer = cf_insert_name(&f, &name);
	cf_read_all(l.rfd, &key, sizeof(key), CF_WAIT_MS);
	cf_read_all(l.rfd, &raddr, sizeof(raddr), CF_WAIT_MS);
	cf_mem_reg(&f, 0, &lm, PASSIVE_DATA, FI_READ | FI_WRITE);
	cf_mem_reg(&f, 0, &rm, PASSIVE_DATA, FI_READ | FI_WRITE);
	cf_mem_reg(&f, 0, &mm, 64, FI_SEND);
	cf_fill(mm.p, 64, 1);

	for (k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
		size_t len = sizes[k];
		unsigned int seed = PASSIVE_SEED + 10 + (unsigned int)k;

		/* A message the target does not read (it posts no receive
		 * and calls nothing), then RMA.  (A provider whose
		 * connections need both sides, verbs, needs the target's
		 * progress for the first one.) */
		cf_post(&f, fi_send(f.ep[0].ep, mm.p, 64, mm.desc, peer,
				    &sctx));
		passive_done(&f, &l, &sctx, "a message to the sleeping target",
			     64, &helped);
		cf_fill(lm.p, len, seed);
		cf_post(&f, fi_write(f.ep[0].ep, lm.p, len, lm.desc, peer,
				     raddr + PASSIVE_GUARD, key, &ctx));
		passive_done(&f, &l, &ctx, "fi_write after a message", len,
			     &helped);
		memset(rm.p, 0, len);
		cf_post(&f, fi_read(f.ep[0].ep, rm.p, len, rm.desc, peer,
				    raddr + PASSIVE_GUARD, key, &ctx));
		passive_done(&f, &l, &ctx, "fi_read after a message", len,
			     &helped);
		cf_check_fill(rm.p, len, seed, "data read back");
		w.seed = seed;
	}

	/* The orders asked for and granted: the write waits its turn. */
	memset(&of, 0, sizeof(of));
	if (helped || passive_may_need_target(prov)) {
		cf_note("the target makes progress already: the ordered "
			"write is not checked");
	} else if (!(oi = cf_getinfo(prov, &oo, &ret))) {
		cf_assert(ret == -FI_ENODATA, "fi_getinfo: %d", ret);
		cf_note("FI_ORDER_WAS | FI_ORDER_RAS not offered: the ordered "
			"write is not checked");
	} else {
		fi_freeinfo(oi);
		cf_open(&of, prov, &oo);
		cf_assert((of.info->tx_attr->msg_order & FI_ORDER_WAS) &&
			  (of.info->tx_attr->msg_order & FI_ORDER_RAS),
			  "FI_ORDER_WAS | FI_ORDER_RAS asked for, not granted");
		opeer = cf_insert_name(&of, &name);
		cf_mem_reg(&of, 0, &olm, PASSIVE_DATA, FI_WRITE);
		cf_mem_reg(&of, 0, &omm, 64, FI_SEND);
		cf_fill(omm.p, 64, 2);
		cf_post(&of, fi_send(of.ep[0].ep, omm.p, 64, omm.desc, opeer,
				     &sctx));
		c = cf_wait_ctx(&of, 0, &sctx);
		cf_assert(!c.err, "a message to the sleeping target: err %d",
			  c.err);
		w.seed = PASSIVE_SEED + 20;
		cf_fill(olm.p, PASSIVE_DATA, w.seed);
		cf_post(&of, fi_write(of.ep[0].ep, olm.p, PASSIVE_DATA,
				      olm.desc, opeer, raddr + PASSIVE_GUARD,
				      key, &ctx));
		cf_mark("an ordered write behind a message not read");
		cf_assert(!cf_poll(&of, 0, &c, 300),
			  "with FI_ORDER_WAS, a write issued after a message "
			  "the target has not read completed (err %d) while "
			  "the target sleeps",
			  c.err);
		/* The target reads the messages now, then the write lands. */
		cf_write_all(l.wfd, "P", 1);
		c = cf_wait_ctx(&of, 0, &ctx);
		cf_assert(!c.err, "the ordered write: err %d (%s)", c.err,
			  fi_strerror(c.err));
	}

	cf_write_all(l.wfd, "C", 1);
	cf_write_all(l.wfd, &w, sizeof(w));
	cf_read_all(l.rfd, &b, 1, CF_WAIT_MS);
	cf_expect(b == 'Y',
		  "the target process found its region wrong (part %c: 1-4 "
		  "guards and data)",
		  b);
	cf_read_all(l.rfd, &b, 1, CF_WAIT_MS);
	status = cf_reap(&l, CF_WAIT_MS);
	cf_assert(WIFEXITED(status) && !WEXITSTATUS(status),
		  "peer ended with status 0x%x", status);
	if (of.ep[0].ep) {
		cf_mem_free(&olm);
		cf_mem_free(&omm);
		cf_close(&of);
	}
	cf_mem_free(&lm);
	cf_mem_free(&rm);
	cf_mem_free(&mm);
	cf_close(&f);
	close(l.wfd);
	close(l.rfd);
	return 0;
}

/*
 * MPICH's MPI_Put of a small value followed by MPI_Win_flush, as its
 * multi-threaded one-sided tests repeat it: fi_inject_write, then a wait
 * for the write counter to count it, before the next one; while the
 * target process calls nothing of the provider.  fi_inject_write has
 * fi_inject's completion semantics (fi_rma(3)): the write is complete
 * once injected, so it is counted without the target's progress (1.17's
 * tcp;ofi_rxm counts it when sent).  So does fi_inject_atomic
 * (fi_atomic(3)), which the case posts next, adding 1 to one word each
 * time (1.17's tcp counts those only when the target answers).  Then the
 * target makes progress: the writes land, each word once, the sum is the
 * number of atomics and the guards are intact (read back over the
 * provider where reads are ordered after writes, and checked by the
 * target in its own memory), and the counter ends at exactly the number
 * of writes and atomics, none in error: the target's answers count
 * nothing again.
 */
static int case_proc_inject_write_cntr(const char *prov)
{
	struct cf_opts o = {.caps = FI_MSG | FI_RMA | FI_ATOMIC, .nep = 1,
			    .no_insert = true,
			    .cntr_mask = 1u << CF_CNTR_WRITE};
	struct fi_context2 ctx;
	struct fid_cntr *wc;
	struct peer_link l;
	struct cf_mem rm;
	struct cf_comp c;
	struct cf_fix f;
	uint64_t key, raddr, v, end, n, nw, na;
	fi_addr_t peer;
	int status;
	size_t i;
	char b;

	cf_open(&f, prov, &o);
	wc = f.ep[0].cntr[CF_CNTR_WRITE];
	/* Within what the endpoint may hold toward one unanswering peer. */
	nw = f.info->tx_attr->size / 2;
	if (nw > INJ_WORDS)
		nw = INJ_WORDS;
	na = (nw + 1) / 2;
	cf_assert(nw > 0, "tx_attr->size %zu", f.info->tx_attr->size);
	cf_assert(f.info->tx_attr->inject_size >= 8,
		  "tx_attr->inject_size %zu", f.info->tx_attr->inject_size);
	cf_spawn_peer("inject_target", &l);
	cf_send_name(l.wfd, &f.ep[0]);
	peer = cf_recv_name(l.rfd, &f);
	cf_read_all(l.rfd, &key, sizeof(key), CF_WAIT_MS);
	cf_read_all(l.rfd, &raddr, sizeof(raddr), CF_WAIT_MS);
	cf_mem_reg(&f, 0, &rm, INJ_REGION, FI_READ);

	/* Meet the target while it still makes progress. */
	cf_post(&f, fi_read(f.ep[0].ep, rm.p, INJ_REGION, rm.desc, peer,
			    raddr, key, &ctx));
	c = cf_wait_ctx(&f, 0, &ctx);
	cf_assert(!c.err, "first fi_read: error %d (%s)", c.err,
		  fi_strerror(c.err));
	cf_expect(inject_check(rm.p, 0, 0) == 'Y',
		  "first fi_read: the region is not as registered");
	b = 'S';
	cf_write_all(l.wfd, &b, 1);
	cf_read_all(l.rfd, &b, 1, CF_WAIT_MS);
	cf_assert(b == 'B', "target: %c", b);

	for (i = 0; i < nw; i++) {
		v = inj_value(i);
		cf_post(&f, fi_inject_write(f.ep[0].ep, &v, 8, peer,
					    raddr + INJ_GUARD + 8 * i, key));
		v = ~0ull; /* the buffer is ours again */
		end = cf_now_ms() + CF_WAIT_MS;
		while ((n = fi_cntr_read(wc)) < i + 1) {
			cf_assert(!fi_cntr_readerr(wc),
				  "fi_inject_write %zu: counted in error "
				  "(%llu)",
				  i, (unsigned long long)fi_cntr_readerr(wc));
			cf_assert(cf_now_ms() < end,
				  "fi_inject_write %zu of 8 bytes: the write "
				  "counter reads %llu after %d ms while the "
				  "target process does not call the provider",
				  i, (unsigned long long)n, CF_WAIT_MS);
			cf_progress(&f);
		}
		cf_assert(n == i + 1, "fi_inject_write %zu: the write counter "
			  "reads %llu", i, (unsigned long long)n);
	}
	/* fi_inject_atomic has the same semantics (fi_atomic(3)). */
	for (i = 0; i < na; i++) {
		v = 1;
		cf_post(&f, fi_inject_atomic(f.ep[0].ep, &v, 1, peer,
					     raddr + INJ_SUM, key, FI_UINT64,
					     FI_SUM));
		v = ~0ull;
		end = cf_now_ms() + CF_WAIT_MS;
		while ((n = fi_cntr_read(wc)) < nw + i + 1) {
			cf_assert(!fi_cntr_readerr(wc),
				  "fi_inject_atomic %zu: counted in error "
				  "(%llu)",
				  i, (unsigned long long)fi_cntr_readerr(wc));
			cf_assert(cf_now_ms() < end,
				  "fi_inject_atomic %zu (FI_SUM, FI_UINT64): "
				  "the write counter reads %llu after %llu "
				  "writes and %d ms while the target process "
				  "does not call the provider",
				  i, (unsigned long long)n,
				  (unsigned long long)nw, CF_WAIT_MS);
			cf_progress(&f);
		}
		cf_assert(n == nw + i + 1, "fi_inject_atomic %zu: the write "
			  "counter reads %llu after %llu writes", i,
			  (unsigned long long)n, (unsigned long long)nw);
	}

	/* The target makes progress from here on. */
	b = 'P';
	cf_write_all(l.wfd, &b, 1);
	if (f.info->tx_attr->msg_order & (FI_ORDER_RAW | FI_ORDER_RMA_RAW)) {
		memset(rm.p, 0, INJ_REGION);
		cf_post(&f, fi_read(f.ep[0].ep, rm.p, INJ_REGION, rm.desc,
				    peer, raddr, key, &ctx));
		c = cf_wait_ctx(&f, 0, &ctx);
		cf_assert(!c.err, "fi_read after the writes: error %d (%s)",
			  c.err, fi_strerror(c.err));
		b = inject_check(rm.p, nw, na);
		cf_expect(b == 'Y',
			  "read back after %llu injected writes and %llu "
			  "atomics: part %c wrong (1, 2: guards, w: words, s: "
			  "sum)",
			  (unsigned long long)nw, (unsigned long long)na, b);
	}
	b = 'C';
	cf_write_all(l.wfd, &b, 1);
	cf_write_all(l.wfd, &nw, sizeof(nw));
	cf_write_all(l.wfd, &na, sizeof(na));
	/* Our progress goes on: what was reported complete when taken may
	 * still wait here for the peer's room (verbs' credits). */
	await_fd(&f, l.rfd);
	cf_read_all(l.rfd, &b, 1, CF_WAIT_MS + 5000);
	cf_expect(b == 'Y',
		  "the target found its region wrong after %llu injected "
		  "writes and %llu atomics: part %c (1, 2: guards, w: words, "
		  "s: sum)",
		  (unsigned long long)nw, (unsigned long long)na, b);
	/* Whatever the target answered is in; nothing counts again. */
	cf_expect_none(&f, 0, 300);
	n = fi_cntr_read(wc);
	cf_expect(n == nw + na, "the write counter reads %llu after %llu "
		  "injected writes and %llu atomics", (unsigned long long)n,
		  (unsigned long long)nw, (unsigned long long)na);
	n = fi_cntr_readerr(wc);
	cf_expect(!n, "%llu injected writes or atomics counted in error",
		  (unsigned long long)n);
	status = cf_reap(&l, CF_WAIT_MS);
	cf_assert(WIFEXITED(status) && !WEXITSTATUS(status),
		  "peer ended with status 0x%x", status);
	cf_mem_free(&rm);
	cf_close(&f);
	close(l.wfd);
	close(l.rfd);
	return 0;
}

/* Whether the peer has written a byte (without waiting). */
static bool pipe_ready(int fd)
{
	struct pollfd pfd = {fd, POLLIN, 0};

	return poll(&pfd, 1, 0) > 0;
}

/*
 * An MR closed by its process while another one writes into it: once
 * fi_close returns, the region never changes again, and writes with the
 * closed key complete in error.  Each write is 256 KiB, so that closes
 * meet writes under way.
 */
static int case_proc_rma_mr_close(const char *prov)
{
	const size_t len = CLOSER_REGION;
	struct fi_context2 ctx;
	struct peer_link l;
	struct cf_mem lm[2];
	struct cf_comp c;
	struct cf_fix f;
	uint64_t key, raddr, end;
	fi_addr_t peer;
	int status, n, failed, after, round, last_err = 0;
	bool iwarp;
	char b;

	open_one(&f, prov, FI_MSG | FI_RMA);
	iwarp = cf_iwarp(&f);
	if (iwarp)
		cf_note("%s: over iWARP a write under way may land just after "
			"fi_close(mr); checked from the first refused write on",
			prov);
	cf_spawn_peer("rma_closer", &l);
	cf_send_name(l.wfd, &f.ep[0]);
	peer = cf_recv_name(l.rfd, &f);
	cf_mem_reg(&f, 0, &lm[0], len, FI_WRITE);
	cf_mem_reg(&f, 0, &lm[1], len, FI_WRITE);
	cf_fill(lm[0].p, len, 1);
	cf_fill(lm[1].p, len, 2);

	for (round = 0; round < CLOSER_ROUNDS; round++) {
		cf_read_all(l.rfd, &key, sizeof(key), CF_WAIT_MS);
		cf_read_all(l.rfd, &raddr, sizeof(raddr), CF_WAIT_MS);
		/* Write until the target says it closed the MR: two
		 * patterns in turn, so that every write changes every
		 * byte. */
		end = cf_now_ms() + CF_WAIT_MS;
		for (n = 0; !pipe_ready(l.rfd); n++) {
			struct cf_mem *m = &lm[n & 1];

			cf_assert(cf_now_ms() < end,
				  "round %d: the target never closed its MR "
				  "(%d writes, last error %d)",
				  round, n, last_err);
			cf_post(&f, fi_write(f.ep[0].ep, m->p, len, m->desc,
					     peer, raddr, key, &ctx));
			/* (A write the close overtakes may fail.) */
			c = cf_wait_ctx(&f, 0, &ctx);
			last_err = c.err;
			/* The last round's writes with a closed key may have
			 * broken the connection (verbs: an access error puts
			 * the QP in error); the next transmits make a new
			 * one.  The first write of a round may meet that. */
			if (c.err && !n && round && cf_now_ms() < end &&
			    (c.err == FI_ECANCELED || c.err == FI_ECONNRESET ||
			     c.err == FI_ECONNABORTED)) {
				usleep(20000);
				n--;
				continue;
			}
			cf_assert(!c.err || n,
				  "round %d: the first write failed: %d (%s)",
				  round, c.err, fi_strerror(c.err));
			if (!n)
				cf_write_all(l.wfd, "G", 1);
		}
		cf_read_all(l.rfd, &b, 1, CF_WAIT_MS);
		cf_assert(b == 'X', "closing target said %c", b);
		/* The key is stale now: every write fails (the target makes
		 * progress from here on). */
		for (failed = 0, after = 0; after < 4; after++) {
			struct cf_mem *m = &lm[after & 1];

			cf_post(&f, fi_write(f.ep[0].ep, m->p, len, m->desc,
					     peer, raddr, key, &ctx));
			c = cf_wait_ctx(&f, 0, &ctx);
			if (c.err)
				failed++;
			if (iwarp && !after) {
				/* The target's device is past the writes
				 * under way at the close (see the target). */
				cf_write_all(l.wfd, "F", 1);
				await_fd(&f, l.rfd);
				cf_read_all(l.rfd, &b, 1, CF_WAIT_MS);
				cf_assert(b == 'M', "closing target said %c",
					  b);
			}
		}
		cf_expect(failed == after,
			  "round %d: %d of %d writes with the closed MR's key "
			  "succeeded",
			  round, after - failed, after);
		cf_write_all(l.wfd, "D", 1);
		await_fd(&f, l.rfd);
		cf_read_all(l.rfd, &b, 1, CF_WAIT_MS);
		cf_expect(b == 'Y',
			  "round %d: the target's region changed after "
			  "fi_close(mr) returned (%d writes before)",
			  round, n);
	}
	cf_read_all(l.rfd, &b, 1, CF_WAIT_MS);
	status = cf_reap(&l, CF_WAIT_MS);
	cf_assert(WIFEXITED(status) && !WEXITSTATUS(status),
		  "peer ended with status 0x%x", status);
	cf_mem_free(&lm[0]);
	cf_mem_free(&lm[1]);
	cf_close(&f);
	close(l.wfd);
	close(l.rfd);
	return 0;
}

/*
 * After one message from us and one back (so that the two have met both
 * ways), a peer sends a few
 * small messages, sees them complete, closes its endpoint and exits before
 * we even look: each message still arrives, once, intact, from that peer
 * (fi_cq_readfrom).  MPI_Finalize does this.  The messages are small
 * enough to be sent without the target's progress (at most 4 KiB, the
 * providers' inject sizes).
 */
static int case_proc_sender_exits(const char *prov)
{
	struct cf_opts o = {.caps = FI_MSG | FI_TAGGED | FI_SOURCE, .nep = 1,
			    .no_insert = true, .readfrom = true};
	struct fi_context2 rc[NBURST];
	struct cf_mem rm[NBURST], sm, pm;
	struct peer_link l;
	struct cf_comp c;
	struct cf_fix f;
	fi_addr_t peer;
	int status;
	size_t i;
	char b;

	cf_open(&f, prov, &o);
	cf_spawn_peer("burst", &l);
	cf_send_name(l.wfd, &f.ep[0]);
	peer = cf_recv_name(l.rfd, &f);
	cf_mem_reg(&f, 0, &sm, 64, FI_SEND);
	cf_mem_reg(&f, 0, &pm, 64, FI_RECV);
	cf_fill(sm.p, 64, 0);
	cf_post(&f, fi_send(f.ep[0].ep, sm.p, 64, sm.desc, peer, &rc[0]));
	c = cf_wait_ctx(&f, 0, &rc[0]);
	cf_assert(!c.err, "the first message: error %d", c.err);
	/* And one back: over a scalable endpoint's contexts the two ways
	 * go between other pairs, each its own connection, and verbs'
	 * connections need both sides' progress to be made. */
	cf_post(&f, fi_recv(f.ep[0].ep, pm.p, 64, pm.desc, peer, &rc[0]));
	c = cf_wait_ctx(&f, 0, &rc[0]);
	cf_assert(!c.err && c.len == 64, "the answer: error %d len %zu",
		  c.err, c.len);
	b = 'G';
	cf_write_all(l.wfd, &b, 1);
	/* From here on, nothing of ours runs until the peer is gone. */
	cf_read_all(l.rfd, &b, 1, CF_WAIT_MS);
	status = cf_reap(&l, CF_WAIT_MS);
	cf_assert(WIFEXITED(status) && !WEXITSTATUS(status),
		  "peer ended with status 0x%x", status);
	for (i = 0; i < NBURST; i++) {
		cf_mem_reg(&f, 0, &rm[i], burst_len[i], FI_RECV);
		post_recv(&f, peer, &rm[i], burst_len[i],
			  BURST_SEED + (unsigned int)i, &rc[i]);
	}
	for (i = 0; i < NBURST; i++) {
		c = cf_wait_ctx(&f, 0, &rc[i]);
		cf_assert(!c.err && c.len == burst_len[i],
			  "message %zu of the exited peer: err %d len %zu", i,
			  c.err, c.len);
		cf_check_fill(rm[i].p, burst_len[i], BURST_SEED + (unsigned int)i,
			      "message of a peer that exited");
		cf_expect(c.src == peer,
			  "message %zu reported from fi_addr %llu, not the "
			  "peer's %llu",
			  i, (unsigned long long)c.src,
			  (unsigned long long)peer);
	}
	cf_expect_none(&f, 0, 50);
	for (i = 0; i < NBURST; i++)
		cf_mem_free(&rm[i]);
	cf_mem_free(&sm);
	cf_mem_free(&pm);
	cf_close(&f);
	close(l.wfd);
	close(l.rfd);
	return 0;
}

/*
 * Send len bytes to a peer that died until the provider reports an error
 * (the call fails, or its completion is in error); sends reported done
 * before that are noted.  Every send must come back, and the error must
 * come within 5 s of retries.
 */
static void send_until_error(struct cf_fix *f, fi_addr_t peer,
			     struct cf_mem *m, size_t len, const char *what)
{
	uint64_t end = cf_now_ms() + 5000;
	struct fi_context2 ctx;
	struct cf_comp c;
	int done = 0;
	ssize_t ret;

	while (cf_now_ms() < end) {
		cf_mark("fi_send to a dead peer");
		ret = fi_send(f->ep[0].ep, m->p, len, m->desc, peer, &ctx);
		if (ret == -FI_EAGAIN) {
			cf_progress(f);
			continue;
		}
		if (ret)
			break;
		c = cf_wait_ctx(f, 0, &ctx);
		if (c.err)
			break;
		done++;
	}
	cf_assert(cf_now_ms() < end,
		  "%s: %d sends reported done over 5 s, none failed", what,
		  done);
	/* Over shared memory a peer's death is there to see: nothing may be
	 * reported sent to it (a socket's kernel may take data for a peer
	 * that died, so elsewhere this is only noted). */
	cf_assert(!done || strcmp(cf_prov, "shm"),
		  "%s: %d send(s) reported done to a dead peer", what, done);
	if (done)
		cf_note("%s: %d send(s) reported done before the death was "
			"noticed",
			what, done);
}

/* Start a victim peer, exchange names, warm up, then SIGKILL it. */
static fi_addr_t kill_victim(struct cf_fix *f, struct peer_link *l,
			     struct peer_name *name, struct cf_mem *sm,
			     struct cf_mem *rm)
{
	fi_addr_t peer;
	int i, status;
	char b;

	cf_spawn_peer("victim", l);
	cf_send_name(l->wfd, &f->ep[0]);
	cf_read_name(l->rfd, name);
	peer = cf_insert_name(f, name);
	for (i = 0; i < WARMUP; i++)
		ping(f, peer, sm, rm, 4096, i);
	cf_read_all(l->rfd, &b, 1, CF_WAIT_MS);
	cf_assert(!kill(l->pid, SIGKILL), "kill %d: %s", (int)l->pid,
		  strerror(errno));
	status = cf_reap(l, CF_WAIT_MS);
	cf_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL,
		  "peer ended with status 0x%x before being killed", status);
	close(l->wfd);
	close(l->rfd);
	return peer;
}

/*
 * A peer killed with SIGKILL while we talk to it: sends to it, small and
 * large, end in an error (never in silence), a receive from it can be
 * cancelled, and the endpoint closes.
 */
static int case_proc_peer_killed(const char *prov)
{
	struct fi_context2 rc;
	struct peer_name name;
	struct peer_link l;
	struct cf_mem sm, rm;
	struct cf_comp c;
	struct cf_fix f;
	fi_addr_t peer;
	ssize_t ret;

	open_one(&f, prov, FI_MSG | FI_TAGGED);
	cf_mem_reg(&f, 0, &sm, PP_MAX, FI_SEND);
	cf_mem_reg(&f, 0, &rm, PP_MAX, FI_RECV);
	peer = kill_victim(&f, &l, &name, &sm, &rm);

	cf_post(&f, fi_recv(f.ep[0].ep, rm.p, PP_MAX, rm.desc, peer, &rc));
	send_until_error(&f, peer, &sm, 64, "64-byte sends to the dead peer");
	send_until_error(&f, peer, &sm, PP_MAX, "1 MiB sends to the dead peer");
	ret = fi_cancel(&f.ep[0].ep->fid, &rc);
	cf_assert(!ret, "fi_cancel of a receive from the dead peer: %zd", ret);
	c = cf_wait_ctx(&f, 0, &rc);
	cf_assert(c.err == FI_ECANCELED,
		  "the cancelled receive completed with %d, not FI_ECANCELED",
		  c.err);
	/* Nothing more comes; meanwhile the provider may free what the
	 * dead peer held (tests/verbs/dead-peer.sh looks for that). */
	cf_expect_none(&f, 0, 200);
	cf_mem_free(&sm);
	cf_mem_free(&rm);
	cf_close(&f);
	return 0;
}

/*
 * The same death seen by an application that sleeps in fi_cq_sread (a CQ
 * with a wait object) and never polls: each send to the dead peer is
 * waited for there alone, and one of them must end in an error; no
 * fi_cq_sread may wait 2 s for nothing, since what the peer's death ends
 * must wake the sleeper.
 */
static int case_proc_peer_killed_sread(const char *prov)
{
	struct cf_opts o = {.caps = FI_MSG | FI_TAGGED,
			    .nep = 1,
			    .no_insert = true,
			    .cq_wait = FI_WAIT_UNSPEC};
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;
	struct fi_context2 ctx;
	struct peer_name name;
	struct peer_link l;
	struct cf_mem sm, rm;
	struct cf_fix f;
	uint64_t end, t0;
	fi_addr_t peer;
	int done = 0, failed = 0;
	ssize_t ret;

	cf_open(&f, prov, &o);
	cf_mem_reg(&f, 0, &sm, PP_MAX, FI_SEND);
	cf_mem_reg(&f, 0, &rm, PP_MAX, FI_RECV);
	peer = kill_victim(&f, &l, &name, &sm, &rm);
	end = cf_now_ms() + 5000;
	while (!failed && cf_now_ms() < end) {
		cf_mark("fi_send to a dead peer");
		ret = fi_send(f.ep[0].ep, sm.p, 64, sm.desc, peer, &ctx);
		if (ret == -FI_EAGAIN) {
			/* Room comes back with completions: sleep for one. */
			ret = fi_cq_sread(f.ep[0].cq, &e, 1, NULL, 100);
			cf_assert(ret != 1 || e.op_context != &ctx,
				  "a completion of a send never posted");
			if (ret == -FI_EAVAIL)
				failed = 1;
			continue;
		}
		if (ret) {
			failed = 1; /* refused at once: also an error */
			break;
		}
		cf_mark("fi_cq_sread for a send to a dead peer");
		t0 = cf_now_ms();
		ret = fi_cq_sread(f.ep[0].cq, &e, 1, NULL, 2000);
		cf_assert(ret != -FI_EAGAIN,
			  "fi_cq_sread slept %llu ms with a send to a dead "
			  "peer outstanding, and nothing woke it",
			  (unsigned long long)(cf_now_ms() - t0));
		if (ret == -FI_EAVAIL) {
			memset(&err, 0, sizeof(err));
			cf_assert(fi_cq_readerr(f.ep[0].cq, &err, 0) == 1,
				  "fi_cq_readerr after -FI_EAVAIL");
			cf_assert(err.op_context == &ctx,
				  "an error completion of something else: %d",
				  err.err);
			failed = 1;
		} else {
			cf_assert(ret == 1 && e.op_context == &ctx,
				  "fi_cq_sread: %zd", ret);
			done++;
		}
	}
	cf_assert(failed, "%d sends reported done over 5 s, none failed",
		  done);
	if (done)
		cf_note("%d send(s) reported done before the death was noticed",
			done);
	cf_mem_free(&sm);
	cf_mem_free(&rm);
	cf_close(&f);
	return 0;
}

/*
 * A peer killed with SIGKILL and a new process started under its name: once
 * the address is inserted again, the new process is reached, and gets only
 * what was sent to it (nothing sent to the dead one), verified.
 */
static int case_proc_peer_restart(const char *prov)
{
	struct peer_name name, name2;
	struct peer_link l, l2;
	struct cf_mem sm, rm;
	struct cf_fix f;
	fi_addr_t peer;
	int i, status;
	char b;

	open_one(&f, prov, FI_MSG | FI_TAGGED);
	cf_mem_reg(&f, 0, &sm, PP_MAX, FI_SEND);
	cf_mem_reg(&f, 0, &rm, PP_MAX, FI_RECV);
	peer = kill_victim(&f, &l, &name, &sm, &rm);
	send_until_error(&f, peer, &sm, 64, "64-byte sends to the dead peer");

	cf_spawn_peer("restart", &l2);
	cf_write_all(l2.wfd, &name.len, sizeof(name.len));
	cf_write_all(l2.wfd, name.v, name.len);
	cf_read_name(l2.rfd, &name2);
	cf_assert(name2.len == name.len && !memcmp(name2.v, name.v, name.len),
		  "the new process did not get the dead one's name");
	cf_send_name(l2.wfd, &f.ep[0]);
	cf_ok(fi_av_remove(f.av, &peer, 1, 0));
	peer = cf_insert_name(&f, &name2);
	for (i = 0; i < WARMUP; i++)
		ping(&f, peer, &sm, &rm, 4096, i);
	cf_read_all(l2.rfd, &b, 1, CF_WAIT_MS);
	status = cf_reap(&l2, CF_WAIT_MS);
	cf_assert(WIFEXITED(status) && !WEXITSTATUS(status),
		  "the new peer ended with status 0x%x", status);
	cf_expect_none(&f, 0, 50);
	cf_mem_free(&sm);
	cf_mem_free(&rm);
	cf_close(&f);
	close(l2.wfd);
	close(l2.rfd);
	return 0;
}

/*
 * Large messages (past every provider's eager limit: 64 KiB + 1 to
 * 4 MiB) from a process that posted them and then stopped calling the
 * provider: each receive completes, intact, within CF_WAIT_MS, where the
 * data can move without the sender (weft's shm, and tcp between processes
 * of this host, read it with CMA: passive_may_need_target).  Elsewhere
 * the sender is asked for its progress at once, with a note.  The
 * sender's sends complete afterwards.
 */
static int case_proc_rndv_passive_sender(const char *prov)
{
	struct fi_context2 rc[NRNDV];
	struct cf_mem rm[NRNDV];
	struct peer_link l;
	struct cf_comp c;
	struct cf_fix f;
	fi_addr_t peer;
	bool helped = false;
	int status;
	size_t i;
	char b;

	open_one(&f, prov, FI_MSG | FI_TAGGED);
	cf_spawn_peer("rndv_sender", &l);
	cf_send_name(l.wfd, &f.ep[0]);
	peer = cf_recv_name(l.rfd, &f);
	cf_read_all(l.rfd, &b, 1, CF_WAIT_MS);
	cf_assert(b == 'S', "rendezvous sender said %c", b);
	if (passive_may_need_target(prov)) {
		/* Over the network, the sender writes what the socket takes:
		 * it has to make progress. */
		cf_note("large messages need the sender's progress over %s",
			prov);
		cf_write_all(l.wfd, "P", 1);
		helped = true;
	}
	for (i = 0; i < NRNDV; i++) {
		cf_mem_reg(&f, 0, &rm[i], rndv_len[i], FI_RECV);
		memset(rm[i].p, 0, rndv_len[i]);
		cf_post(&f, fi_trecv(f.ep[0].ep, rm[i].p, rndv_len[i],
				     rm[i].desc, peer, RNDV_SEED + i, 0,
				     &rc[i]));
	}
	for (i = 0; i < NRNDV; i++) {
		cf_assert(cf_poll(&f, 0, &c, CF_WAIT_MS),
			  "receive of %zu bytes: no completion within %d ms "
			  "while the sending process %s",
			  rndv_len[i], CF_WAIT_MS,
			  helped ? "makes progress" :
				   "does not call the provider");
		cf_assert(c.ctx == &rc[i], "completion of another receive");
		cf_assert(!c.err && c.len == rndv_len[i],
			  "receive of %zu bytes: err %d len %zu", rndv_len[i],
			  c.err, c.len);
		cf_check_fill(rm[i].p, rndv_len[i], RNDV_SEED + (unsigned int)i,
			      "message of a sender that stopped calling");
	}
	cf_write_all(l.wfd, "D", 1);
	cf_read_all(l.rfd, &b, 1, CF_WAIT_MS);
	cf_expect(b == 'Y', "the sender's sends did not all complete");
	status = cf_reap(&l, CF_WAIT_MS);
	cf_assert(WIFEXITED(status) && !WEXITSTATUS(status),
		  "sender ended with status 0x%x", status);
	for (i = 0; i < NRNDV; i++)
		cf_mem_free(&rm[i]);
	cf_close(&f);
	close(l.wfd);
	close(l.rfd);
	return 0;
}

/*
 * Two connections between two endpoints, one each way, and the peer gone
 * before its own is accepted: we send first (our connection waits in the
 * peer's backlog), then the peer sends six messages, which opens its own
 * connection to us, reads ours, closes its endpoint and exits, all while
 * we call nothing.  Only then are receives directed to it posted (with
 * FI_DIRECTED_RECV): our connection to it ends as they wait, and its
 * messages are still in its connection, not accepted yet; every one must
 * arrive, none may fail as if the peer had sent nothing more.
 */
static int case_proc_crossed_close(const char *prov)
{
	struct cf_opts o = {.caps = FI_MSG | FI_TAGGED | FI_DIRECTED_RECV,
			    .nep = 1, .no_insert = true};
	struct fi_context2 sc, rc[NCROSSED];
	struct cf_mem sm, rm[NCROSSED];
	struct peer_link l;
	struct cf_comp c;
	struct cf_fix f;
	fi_addr_t peer;
	int status;
	size_t i;
	char b;

	/* Over verbs a connection is made by both sides' rdma_cm (the
	 * passive side accepts, the active side answers the reply): the
	 * peer's sends cannot complete while we call nothing, unless our
	 * progress is automatic.  Its messages must still all arrive. */
	if (!strcmp(prov, "verbs")) {
		o.data_progress = FI_PROGRESS_AUTO;
		cf_note("rdma_cm connections need both sides' progress: "
			"automatic progress asked for");
	}
	cf_open(&f, prov, &o);
	cf_spawn_peer("crossed", &l);
	cf_send_name(l.wfd, &f.ep[0]);
	peer = cf_recv_name(l.rfd, &f);
	cf_mem_reg(&f, 0, &sm, 64, FI_SEND);
	cf_fill(sm.p, 64, CROSSED_SEED - 1);
	cf_post(&f, fi_tsend(f.ep[0].ep, sm.p, 64, sm.desc, peer,
			     CROSSED_SEED - 1, &sc));
	b = 'G';
	cf_write_all(l.wfd, &b, 1);
	/* From here on, nothing of ours runs until the peer is gone. */
	cf_read_all(l.rfd, &b, 1, CF_WAIT_MS);
	cf_assert(b == 'E', "crossed peer said %c", b);
	status = cf_reap(&l, CF_WAIT_MS);
	cf_assert(WIFEXITED(status) && !WEXITSTATUS(status),
		  "peer ended with status 0x%x", status);
	for (i = 0; i < NCROSSED; i++) {
		cf_mem_reg(&f, 0, &rm[i], 8 << i, FI_RECV);
		cf_post(&f, fi_trecv(f.ep[0].ep, rm[i].p, 8u << i, rm[i].desc,
				     peer, CROSSED_SEED + i, 0, &rc[i]));
	}
	for (i = 0; i < NCROSSED; i++) {
		c = cf_wait_ctx(&f, 0, &rc[i]);
		cf_assert(!c.err && c.len == (8u << i),
			  "message %zu of the peer that closed: err %d (%s) "
			  "len %zu",
			  i, c.err, fi_strerror(c.err), c.len);
		cf_check_fill(rm[i].p, 8u << i, CROSSED_SEED + (unsigned int)i,
			      "message of the peer that closed");
	}
	c = cf_wait_ctx(&f, 0, &sc);
	cf_expect(!c.err, "our send to the peer: error %d", c.err);
	cf_expect_none(&f, 0, 50);
	for (i = 0; i < NCROSSED; i++)
		cf_mem_free(&rm[i]);
	cf_mem_free(&sm);
	cf_close(&f);
	close(l.wfd);
	close(l.rfd);
	return 0;
}

const struct cf_case cf_cases_proc[] = {
    {"proc_pingpong",
     "two processes: 1020 verified round trips, 1 B to "
     "1 MiB",
     case_proc_pingpong},
    {"proc_rma",
     "two processes: writes checked and reads filled by the "
     "target process, 1 B to 4 MiB",
     case_proc_rma},
    {"proc_rma_passive",
     "two processes: fi_write/fi_read 1 B to 4 MiB and atomics complete "
     "while the target does not call the provider; guards intact",
     case_proc_rma_passive},
    {"proc_inject_write_cntr",
     "two processes: each fi_inject_write is counted by the write counter "
     "while the target does not call the provider; then it lands, once",
     case_proc_inject_write_cntr},
    {"proc_rndv_passive_sender",
     "two processes: messages of 64 KiB + 1 to 4 MiB arrive while their "
     "sender does not call the provider",
     case_proc_rndv_passive_sender},
    {"proc_crossed_close",
     "two processes, a connection each way: the peer's messages arrive "
     "after it closed before its own connection was accepted",
     case_proc_crossed_close},
    {"proc_rma_after_send",
     "two processes: RMA after a message the sleeping target has not read "
     "completes at once (unless FI_ORDER_WAS asked: then it waits)",
     case_proc_rma_after_send},
    {"proc_rma_mr_close",
     "two processes: an MR closed under a peer's writes changes no more "
     "once fi_close returns; its key then fails",
     case_proc_rma_mr_close},
    {"proc_sender_exits",
     "two processes: a peer's completed sends arrive, once, intact and "
     "from it, after it closed and exited",
     case_proc_sender_exits},
    {"proc_peer_killed_sread",
     "two processes: the peer SIGKILLed while we sleep in fi_cq_sread "
     "for our sends to it: one fails, no wait runs out",
     case_proc_peer_killed_sread},
    {"proc_peer_killed",
     "two processes: peer SIGKILLed; sends to it end in an error, a "
     "receive from it cancels, the endpoint closes",
     case_proc_peer_killed},
    {"proc_peer_restart",
     "two processes: peer SIGKILLed and restarted under its name; "
     "reached again after the address is inserted again",
     case_proc_peer_restart},
    {NULL},
};
