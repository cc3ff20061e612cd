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

void cf_read_all(int fd, void *buf, size_t len, int timeout_ms)
{
	uint64_t end = cf_now_ms() + timeout_ms;
	uint8_t *p = buf;
	ssize_t n;

	while (len) {
		struct pollfd pfd = {fd, POLLIN, 0};
		int left = (int)(end - cf_now_ms());

		cf_assert(cf_now_ms() < end, "peer said nothing for %d ms",
			  timeout_ms);
		if (poll(&pfd, 1, left) <= 0)
			continue;
		n = read(fd, p, len);
		if (n < 0 && errno == EINTR)
			continue;
		cf_assert(n > 0, "peer pipe closed (peer died?)");
		p += n;
		len -= (size_t)n;
	}
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

/* The target side: answer fill and check requests until told to quit. */
static void rma_target(struct cf_fix *f)
{
	struct rma_cmd cmd;
	struct cf_mem t;
	uint64_t end;
	char r;

	cf_mem_reg(f, 0, &t, RMA_REGION, FI_REMOTE_READ | FI_REMOTE_WRITE);
	cf_write_all(PEER_OUT, &t.key, sizeof(t.key));
	cf_write_all(PEER_OUT, &t.raddr, sizeof(t.raddr));
	for (;;) {
		await_fd(f, PEER_IN);
		cf_read_all(PEER_IN, &cmd, sizeof(cmd), CF_WAIT_MS);
		if (cmd.op == 'Q')
			break;
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
	cf_mem_free(&t);
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
			 !strcmp(role, "rma_target") ? FI_MSG | FI_RMA
						     : FI_MSG | FI_TAGGED);
	}
	cf_send_name(PEER_OUT, &f.ep[0]);
	peer = cf_recv_name(PEER_IN, &f);
	cf_mem_reg(&f, 0, &m, PP_MAX, FI_SEND | FI_RECV);
	if (!strcmp(role, "rma_target")) {
		rma_target(&f);
	} else if (!strcmp(role, "burst")) {
		struct fi_context2 sc[NBURST];
		struct cf_mem bm[NBURST];
		struct cf_comp c;
		char go;

		/* One message from the case first: the two have met. */
		post_recv(&f, peer, &m, 64, 0, &sc[0]);
		c = cf_wait_ctx(&f, 0, &sc[0]);
		cf_assert(!c.err, "burst: the first message: error %d", c.err);
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
	cf_read_all(l.rfd, &b, 1, CF_WAIT_MS);
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
	uint64_t key, raddr;
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

/*
 * After one message from us (so that the two have met), a peer sends a few
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

const struct cf_case cf_cases_proc[] = {
    {"proc_pingpong",
     "two processes: 1020 verified round trips, 1 B to "
     "1 MiB",
     case_proc_pingpong},
    {"proc_rma",
     "two processes: writes checked and reads filled by the "
     "target process, 1 B to 4 MiB",
     case_proc_rma},
    {"proc_sender_exits",
     "two processes: a peer's completed sends arrive, once, intact and "
     "from it, after it closed and exited",
     case_proc_sender_exits},
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
