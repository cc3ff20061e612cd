/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Conformance cases for wait objects: fi_cq_sread that sleeps until its
 * timeout and wakes for an arrival (fi_cq(3)), a CQ's FI_WAIT_FD object in
 * the application's own epoll set behind fi_trywait (fi_poll(3),
 * fi_control FI_GETWAIT in fi_cq(3) and fi_eq(3)), and fi_cntr_wait woken
 * by a counted arrival (fi_cntr(3)).
 *
 * The sender is a second thread that posts from endpoint 0 after 100 ms
 * and drives that endpoint alone, by reading its CQ, while the main thread
 * blocks for endpoint 1; the fixture asks for FI_THREAD_SAFE.
 */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/time.h>

#include "conformance.h"

/* Above this share of wall time in CPU, a blocking call is spinning. */
#define WAIT_CPU_MAX_PCT 30
/* How long a blocking call may take to see an arrival. */
#define WAIT_WAKE_MS 5000
#define WAIT_MSG_LEN 1000

/* CPU time (user + system) of the calling thread, in microseconds. */
static uint64_t thread_cpu_us(void)
{
	struct rusage ru;

	if (getrusage(RUSAGE_THREAD, &ru))
		cf_fail("getrusage(RUSAGE_THREAD): %s", strerror(errno));
	return (uint64_t)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000 +
	       (uint64_t)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec);
}

static unsigned int cpu_pct(uint64_t cpu_us, uint64_t wall_ms)
{
	return wall_ms ? (unsigned int)(cpu_us / 10 / wall_ms) : 0;
}

/*
 * Whether the provider opens a CQ with this wait object at all, on a
 * fabric and domain of its own: a refusal is a skip, not a failure.
 */
static int cq_wait_offered(const char *prov, const struct cf_opts *o,
			   enum fi_wait_obj wait_obj)
{
	struct fi_cq_attr attr = {
	    .size = 64,
	    .format = FI_CQ_FORMAT_TAGGED,
	    .wait_obj = wait_obj,
	};
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fi_info *info;
	struct fid_cq *cq;
	int ret;

	info = cf_getinfo(prov, o, &ret);
	if (ret == -FI_ENODATA)
		cf_skip("fi_getinfo -61 for caps [FI_MSG]%s",
			o->threading == FI_THREAD_SAFE ? " with FI_THREAD_SAFE"
						       : "");
	cf_assert(!ret, "fi_getinfo: %d (%s)", ret, fi_strerror(-ret));
	cf_ok(fi_fabric(info->fabric_attr, &fabric, NULL));
	cf_ok(fi_domain(fabric, info, &domain, NULL));
	cf_mark("fi_cq_open with the wait object to probe");
	ret = fi_cq_open(domain, &attr, &cq, NULL);
	if (!ret)
		cf_ok(fi_close(&cq->fid));
	cf_ok(fi_close(&domain->fid));
	cf_ok(fi_close(&fabric->fid));
	fi_freeinfo(info);
	return ret;
}

/*
 * The other side: after delay_ms, send WAIT_MSG_LEN bytes from endpoint 0
 * to endpoint 1 and drive endpoint 0 by reading its CQ (only its CQ) until
 * the send completes.  No cf_* call that harvests every CQ is made here.
 */
struct sender {
	struct cf_fix *f;
	struct cf_mem *sm;
	int delay_ms;
	struct fi_context2 ctx;
	uint64_t posted_at; /* cf_now_ms() once fi_send returned 0 */
	ssize_t post_ret;
	ssize_t comp_ret; /* 1, or the error of the send completion */
	void *comp_ctx;
	atomic_bool done;
};

static void *sender_thread(void *p)
{
	struct sender *s = p;
	struct fid_cq *cq = s->f->ep[0].cq;
	uint64_t end;
	struct fi_cq_tagged_entry e;

	cf_sleep_ms(s->delay_ms);
	end = cf_now_ms() + CF_WAIT_MS;
	while ((s->post_ret =
		    fi_send(s->f->ep[0].ep, s->sm->p, WAIT_MSG_LEN, s->sm->desc,
			    s->f->ep[1].addr, &s->ctx)) == -FI_EAGAIN &&
	       cf_now_ms() < end)
		(void)fi_cq_read(cq, &e, 0);
	s->posted_at = cf_now_ms();
	while (!s->post_ret && cf_now_ms() < end) {
		ssize_t n = fi_cq_read(cq, &e, 1);

		if (n == -FI_EAGAIN)
			continue;
		if (n == -FI_EAVAIL) {
			struct fi_cq_err_entry ee = {0};

			n = fi_cq_readerr(cq, &ee, 0);
			s->comp_ret = n == 1 ? -ee.err : n;
			s->comp_ctx = ee.op_context;
			break;
		}
		s->comp_ret = n;
		if (n == 1)
			s->comp_ctx = e.op_context;
		break;
	}
	atomic_store(&s->done, true);
	return NULL;
}

static void sender_start(struct sender *s, pthread_t *th, struct cf_fix *f,
			 struct cf_mem *sm, int delay_ms)
{
	memset(s, 0, sizeof(*s));
	s->f = f;
	s->sm = sm;
	s->delay_ms = delay_ms;
	s->comp_ret = -FI_ETIMEDOUT;
	atomic_init(&s->done, false);
	cf_assert(!pthread_create(th, NULL, sender_thread, s),
		  "pthread_create");
}

/* Join the sender (it ends by itself within CF_WAIT_MS) and check it. */
static void sender_join(struct sender *s, pthread_t th)
{
	cf_mark("joining the sending thread");
	pthread_join(th, NULL);
	cf_assert(!s->post_ret, "fi_send from endpoint 0: %zd (%s)",
		  s->post_ret, fi_strerror((int)-s->post_ret));
	cf_assert(s->comp_ret == 1 && s->comp_ctx == &s->ctx,
		  "send completion on endpoint 0: %zd (%s), context %p",
		  s->comp_ret,
		  s->comp_ret < 0 ? fi_strerror((int)-s->comp_ret) : "entry",
		  s->comp_ctx);
}

/* The received entry: our receive, WAIT_MSG_LEN bytes of seed. */
static void check_recv(const struct fi_cq_tagged_entry *e, void *ctx,
		       struct cf_mem *rm, unsigned int seed, const char *what)
{
	cf_assert(e->op_context == ctx, "%s: context %p, want the receive's %p",
		  what, e->op_context, ctx);
	cf_assert(e->len == WAIT_MSG_LEN, "%s: len %zu, want %d", what, e->len,
		  WAIT_MSG_LEN);
	cf_assert((e->flags & (FI_RECV | FI_MSG)) == (FI_RECV | FI_MSG),
		  "%s: flags [%s] lack FI_RECV|FI_MSG", what,
		  cf_flags_str(e->flags));
	cf_check_fill(rm->p, WAIT_MSG_LEN, seed, what);
}

/*
 * fi_trywait on the CQ until it says blocking is safe, reading the CQ after
 * each -FI_EAGAIN, as fi_poll(3) prescribes.  An entry read so is returned
 * in *e (1) if e is given; without e the CQ must have nothing to read.
 * Returns 0 once fi_trywait says 0, -FI_EAGAIN if it never does within
 * budget_ms; *again counts the -FI_EAGAIN answers.
 */
static ssize_t trywait_settle(struct cf_fix *f, struct fid_cq *cq,
			      struct fi_cq_tagged_entry *e, int *again,
			      int budget_ms, const char *what)
{
	struct fid *fids[1] = {&cq->fid};
	uint64_t end = cf_now_ms() + budget_ms;
	struct fi_cq_tagged_entry tmp;
	ssize_t n;
	int ret;

	*again = 0;
	for (;;) {
		cf_mark("fi_trywait");
		ret = fi_trywait(f->fabric, fids, 1);
		if (!ret)
			return 0;
		cf_assert(ret == -FI_EAGAIN,
			  "%s: fi_trywait on the CQ: %d (%s), want 0 or "
			  "-FI_EAGAIN",
			  what, ret, fi_strerror(-ret));
		(*again)++;
		n = fi_cq_read(cq, e ? e : &tmp, 1);
		if (n == 1 && e)
			return 1;
		cf_assert(n == -FI_EAGAIN,
			  "%s: fi_cq_read after fi_trywait -FI_EAGAIN: %zd, "
			  "want nothing to read",
			  what, n);
		if (cf_now_ms() >= end)
			return -FI_EAGAIN;
		cf_sleep_ms(1);
	}
}

/*
 * fi_cq_sread(300 ms) on a CQ with nothing coming (a receive is posted,
 * nobody sends): -FI_EAGAIN after about 300 ms (fi_cq(3) RETURN VALUES),
 * with the thread's CPU time well below the wall time.  FI_WAIT_UNSPEC
 * lets the provider spin (fi_cq(3): "the most appropriate or highest
 * performing wait object"), so there the CPU share is only reported; a
 * CQ with FI_WAIT_FD, where the provider offers it, must sleep on it.
 */
static void sread_sleeps(const char *prov, enum fi_wait_obj wait_obj)
{
	struct cf_opts o = {.caps = FI_MSG, .cq_wait = wait_obj};
	const char *wname =
	    wait_obj == FI_WAIT_FD ? "FI_WAIT_FD" : "FI_WAIT_UNSPEC";
	struct fi_cq_tagged_entry e;
	struct fi_context2 rc;
	uint64_t t0, wall, cpu0, cpu;
	bool polled = false;
	struct cf_mem rm;
	struct cf_fix f;
	unsigned int pct;
	int again;
	ssize_t ret;

	cf_open(&f, prov, &o);
	cf_mem_reg(&f, 1, &rm, WAIT_MSG_LEN, FI_RECV);
	cf_post(&f, fi_recv(f.ep[1].ep, rm.p, WAIT_MSG_LEN, rm.desc,
			    FI_ADDR_UNSPEC, &rc));
	/* Let endpoint setup settle before measuring. */
	cf_expect_none(&f, 1, 50);
	/*
	 * fi_poll(3): fi_trywait says -FI_EAGAIN "if blocking could hang the
	 * application".  A provider that says so with nothing to read has
	 * to be polled (shm: peers write to shared memory, no fd is woken),
	 * and its fi_cq_sread may spin.
	 */
	if (wait_obj == FI_WAIT_FD &&
	    trywait_settle(&f, f.ep[1].cq, NULL, &again, 200,
			   "FI_WAIT_FD, nothing sent") == -FI_EAGAIN) {
		polled = true;
		cf_note("FI_WAIT_FD: fi_trywait -FI_EAGAIN for 200 ms with "
			"nothing to read: the CQ must be polled");
	}
	cpu0 = thread_cpu_us();
	t0 = cf_now_ms();
	cf_mark("fi_cq_sread(300 ms) with nothing coming");
	ret = fi_cq_sread(f.ep[1].cq, &e, 1, NULL, 300);
	wall = cf_now_ms() - t0;
	cpu = thread_cpu_us() - cpu0;
	cf_assert(ret == -FI_EAGAIN,
		  "%s: fi_cq_sread(300 ms) with nothing coming: %zd (%s), "
		  "want -FI_EAGAIN",
		  wname, ret, ret < 0 ? fi_strerror((int)-ret) : "entries");
	cf_assert(wall >= 280 && wall < 2000,
		  "%s: fi_cq_sread(300 ms) returned after %llu ms", wname,
		  (unsigned long long)wall);
	pct = cpu_pct(cpu, wall);
	cf_note("%s: fi_cq_sread(300 ms) took %llu ms, %llu us of CPU (%u%%)",
		wname, (unsigned long long)wall, (unsigned long long)cpu, pct);
	if (wait_obj == FI_WAIT_FD && !polled)
		cf_expect(pct < WAIT_CPU_MAX_PCT,
			  "FI_WAIT_FD: fi_cq_sread(300 ms) used %u%% of a CPU "
			  "(%llu us in %llu ms), want < %d%%: it spins instead "
			  "of sleeping on its fd",
			  pct, (unsigned long long)cpu,
			  (unsigned long long)wall, WAIT_CPU_MAX_PCT);
	cf_expect_none(&f, 1, 20);
	cf_mem_free(&rm);
	cf_close(&f);
}

static int case_cq_sread_sleeps(const char *prov)
{
	struct cf_opts o = {.caps = FI_MSG};
	int ret;

	sread_sleeps(prov, FI_WAIT_UNSPEC);
	ret = cq_wait_offered(prov, &o, FI_WAIT_FD);
	if (ret)
		cf_note("no FI_WAIT_FD CQ (fi_cq_open: %d, %s): the provider "
			"may have to poll",
			ret, fi_strerror(-ret));
	else
		sread_sleeps(prov, FI_WAIT_FD);
	return 0;
}

/*
 * fi_cq_sread(5 s) blocks for a message that endpoint 0 sends 100 ms
 * later from a second thread: it returns that receive's entry, the data
 * intact, soon after the send and well before its timeout.  sread itself
 * has to drive endpoint 1's progress.
 */
/*
 * fi_cq_sread wakes for a message sent 100 ms in.  With `sharer`, another
 * endpoint of the same domain was bound to the receiving CQ and closed
 * first: whatever fd the two had in common must still wake the CQ.
 */
static int sread_wakes(const char *prov, bool sharer)
{
	struct cf_opts o = {.caps = FI_MSG,
			    .threading = FI_THREAD_SAFE,
			    .cq_wait = FI_WAIT_UNSPEC};
	struct fi_cq_tagged_entry e = {0};
	struct fi_context2 rc;
	struct cf_mem sm, rm;
	struct sender s;
	struct cf_fix f;
	uint64_t t0, took;
	pthread_t th;
	ssize_t ret;

	cf_open(&f, prov, &o);
	cf_mem_reg(&f, 0, &sm, WAIT_MSG_LEN, FI_SEND);
	cf_mem_reg(&f, 1, &rm, WAIT_MSG_LEN, FI_RECV);
	cf_fill(sm.p, WAIT_MSG_LEN, 71);
	if (sharer) {
		struct fid_ep *x, *xsrx = NULL;

		cf_mark("a third endpoint on endpoint 1's CQ, then closed");
		cf_ok(fi_endpoint(f.domain, f.info, &x, NULL));
		if (f.stx)
			cf_ok(fi_ep_bind(x, &f.stx->fid, 0));
		if (f.ep[0].srx) {
			cf_ok(fi_srx_context(f.domain, f.info->rx_attr, &xsrx,
					     NULL));
			cf_ok(fi_ep_bind(x, &xsrx->fid, 0));
		}
		cf_ok(fi_ep_bind(x, &f.ep[1].cq->fid, FI_TRANSMIT | FI_RECV));
		cf_ok(fi_ep_bind(x, &f.av->fid, 0));
		cf_ok(fi_enable(x));
		cf_ok(fi_close(&x->fid));
		if (xsrx)
			cf_ok(fi_close(&xsrx->fid));
	}
	cf_post(&f, fi_recv(f.ep[1].ep, rm.p, WAIT_MSG_LEN, rm.desc,
			    FI_ADDR_UNSPEC, &rc));
	/* t0 before the thread starts its 100 ms: a busy host may run
	 * this thread again only well after the other began them. */
	t0 = cf_now_ms();
	sender_start(&s, &th, &f, &sm, 100);
	cf_mark("fi_cq_sread(5 s) while endpoint 0 sends");
	ret = fi_cq_sread(f.ep[1].cq, &e, 1, NULL, WAIT_WAKE_MS);
	took = cf_now_ms() - t0;
	sender_join(&s, th);
	cf_assert(ret == 1,
		  "fi_cq_sread(5 s) while endpoint 0 sends after 100 ms: %zd "
		  "(%s) after %llu ms",
		  ret, ret < 0 ? fi_strerror((int)-ret) : "entries",
		  (unsigned long long)took);
	check_recv(&e, &rc, &rm, 71, "entry returned by fi_cq_sread");
	cf_assert(took >= 80,
		  "fi_cq_sread returned the entry after %llu ms, before the "
		  "send 100 ms in",
		  (unsigned long long)took);
	cf_assert(took < WAIT_WAKE_MS / 2,
		  "fi_cq_sread returned the entry only after %llu ms (sent "
		  "100 ms in)",
		  (unsigned long long)took);
	cf_note("fi_cq_sread returned after %llu ms (send at 100 ms)",
		(unsigned long long)took);
	cf_expect_none(&f, 1, 50);
	cf_expect_none(&f, 0, 20);
	cf_mem_free(&sm);
	cf_mem_free(&rm);
	cf_close(&f);
	return 0;
}

static int case_cq_sread_wakes(const char *prov)
{
	return sread_wakes(prov, false);
}

static int case_cq_sread_shared(const char *prov)
{
	return sread_wakes(prov, true);
}

/*
 * The first message between two new endpoints, sent by a second thread
 * while the main thread blocks in fi_cq_sread on the receiver's CQ, over
 * and over with new endpoints: where the first send opens a connection
 * (tcp between sockets), the sleeper's progress of the domain may see
 * the new socket at once, before the sending thread returns, and must
 * find it in a state it can handle.  No round may crash, and each
 * returns the entry.
 */
#define FIRST_SEND_ROUNDS 300
#define FIRST_SEND_MIN 10 /* rounds run whatever the time */
#define FIRST_SEND_BUDGET_MS 20000

static int case_cq_sread_first_send(const char *prov)
{
	struct cf_opts o = {.caps = FI_MSG,
			    .threading = FI_THREAD_SAFE,
			    .cq_wait = FI_WAIT_UNSPEC};
	struct fi_cq_tagged_entry e;
	struct fi_context2 rc;
	struct cf_mem sm, rm;
	struct sender s;
	struct cf_fix f;
	pthread_t th;
	ssize_t ret;
	int round, tries, rounds = FIRST_SEND_ROUNDS;
	uint64_t until = cf_now_ms() + FIRST_SEND_BUDGET_MS;

	/* A verbs connection (rdma_cm, then a QP) costs far more than a
	 * socket's, and the race this looks for is of sockets. */
	if (!strcmp(prov, "verbs"))
		rounds = FIRST_SEND_ROUNDS / 10;
	/* On a loaded host (or over contexts, where each round opens
	 * scalable endpoints) fewer rounds fit: stop at the budget. */
	for (round = 0; round < rounds &&
			(round < FIRST_SEND_MIN || cf_now_ms() < until);
	     round++) {
		memset(&e, 0, sizeof(e));
		cf_open(&f, prov, &o);
		cf_mem_reg(&f, 0, &sm, WAIT_MSG_LEN, FI_SEND);
		cf_mem_reg(&f, 1, &rm, WAIT_MSG_LEN, FI_RECV);
		cf_fill(sm.p, WAIT_MSG_LEN, 77 + round);
		cf_post(&f, fi_recv(f.ep[1].ep, rm.p, WAIT_MSG_LEN, rm.desc,
				    FI_ADDR_UNSPEC, &rc));
		/* At once, or once the sleeper is likely asleep. */
		sender_start(&s, &th, &f, &sm, round & 1);
		cf_mark("fi_cq_sread(5 s) while a new endpoint sends its "
			"first message");
		/* A slow connection (a loaded host) is no failure: the
		 * entry must come, each wait may time out. */
		tries = 0;
		do
			ret = fi_cq_sread(f.ep[1].cq, &e, 1, NULL,
					  WAIT_WAKE_MS);
		while (ret == -FI_EAGAIN && ++tries < 4);
		sender_join(&s, th);
		cf_assert(ret == 1,
			  "round %d: fi_cq_sread while the first message "
			  "comes: %zd (%s)",
			  round, ret,
			  ret < 0 ? fi_strerror((int)-ret) : "entries");
		check_recv(&e, &rc, &rm, 77 + round,
			   "entry returned by fi_cq_sread");
		cf_mem_free(&sm);
		cf_mem_free(&rm);
		cf_close(&f);
	}
	if (round < rounds)
		cf_note("%d of %d rounds within %d ms", round, rounds,
			FIRST_SEND_BUDGET_MS);
	return 0;
}

/*
 * A CQ with FI_WAIT_FD: fi_control(FI_GETWAIT) gives an fd the application
 * puts in its own epoll set.  fi_trywait says blocking is safe while
 * nothing is pending; epoll_wait(5 s) wakes for a message sent 100 ms
 * later; fi_cq_read then returns it (reading, fi_trywait and epoll_wait
 * again if the first read comes too early, as fi_poll(3) shows); after
 * draining, fi_trywait says blocking is safe again.
 */
static int case_cq_wait_fd_epoll(const char *prov)
{
	struct cf_opts o = {
	    .caps = FI_MSG, .threading = FI_THREAD_SAFE, .cq_wait = FI_WAIT_FD};
	struct fi_cq_tagged_entry e = {0};
	struct epoll_event ev, out[4];
	uint64_t t0, woke = 0, end;
	int fd = -1, epfd, ret, again, wakes = 0, reads = 0, n;
	struct fi_context2 rc;
	struct cf_mem sm, rm;
	struct fid_cq *cq;
	struct sender s;
	struct cf_fix f;
	pthread_t th;
	ssize_t got = -FI_EAGAIN;

	ret = cq_wait_offered(prov, &o, FI_WAIT_FD);
	if (ret)
		cf_skip("fi_cq_open with FI_WAIT_FD: %d (%s)", ret,
			fi_strerror(-ret));
	cf_open(&f, prov, &o);
	cq = f.ep[1].cq;
	cf_mark("fi_control(FI_GETWAIT)");
	ret = fi_control(&cq->fid, FI_GETWAIT, &fd);
	cf_assert(!ret, "fi_control(FI_GETWAIT) on a FI_WAIT_FD CQ: %d (%s)",
		  ret, fi_strerror(-ret));
	cf_assert(fd >= 0, "fi_control(FI_GETWAIT) gave fd %d", fd);
	epfd = epoll_create1(EPOLL_CLOEXEC);
	cf_assert(epfd >= 0, "epoll_create1: %s", strerror(errno));
	/* fi_cq(3): the provider may mark it readable, writable or in error;
	 * writable would leave no way to block, so readable is what counts. */
	ev.events = EPOLLIN | EPOLLPRI;
	ev.data.fd = fd;
	cf_assert(!epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev),
		  "epoll_ctl(EPOLL_CTL_ADD) of the CQ's fd %d: %s", fd,
		  strerror(errno));

	cf_mem_reg(&f, 0, &sm, WAIT_MSG_LEN, FI_SEND);
	cf_mem_reg(&f, 1, &rm, WAIT_MSG_LEN, FI_RECV);
	cf_fill(sm.p, WAIT_MSG_LEN, 73);
	cf_post(&f, fi_recv(f.ep[1].ep, rm.p, WAIT_MSG_LEN, rm.desc,
			    FI_ADDR_UNSPEC, &rc));
	cf_expect_none(&f, 1, 20);
	if (trywait_settle(&f, cq, NULL, &again, 2000, "before the send"))
		cf_skip("fi_trywait on the FI_WAIT_FD CQ: -FI_EAGAIN for 2 s "
			"with nothing to read; the provider never lets the "
			"application block on the fd (fi_poll(3): \"blocking "
			"could hang the application\")");
	if (again)
		cf_note("before the send: fi_trywait -FI_EAGAIN %d time(s) "
			"with nothing pending",
			again);

	/* t0 before the thread starts its 100 ms: a busy host may run
	 * this thread again only well after the other began them. */
	t0 = cf_now_ms();
	sender_start(&s, &th, &f, &sm, 100);
	end = t0 + WAIT_WAKE_MS;
	/* Block, read, and block again after a read that finds nothing. */
	for (;;) {
		int left = (int)(end > cf_now_ms() ? end - cf_now_ms() : 0);

		cf_mark("epoll_wait on the CQ's fd");
		n = epoll_wait(epfd, out, 4, left);
		if (n < 0 && errno == EINTR)
			continue;
		cf_assert(n >= 0, "epoll_wait: %s", strerror(errno));
		cf_assert(n > 0,
			  "epoll_wait on the CQ's fd: no wake-up within %d ms "
			  "(send posted %s, %d wake-up(s) before)",
			  WAIT_WAKE_MS,
			  atomic_load(&s.done) || s.posted_at ? "" : "not yet",
			  wakes);
		cf_assert(out[0].data.fd == fd, "epoll_wait: foreign fd %d",
			  out[0].data.fd);
		wakes++;
		if (!woke)
			woke = cf_now_ms() - t0;
		cf_mark("fi_cq_read after epoll_wait");
		got = fi_cq_read(cq, &e, 1);
		reads++;
		if (got != -FI_EAGAIN)
			break;
		cf_assert(cf_now_ms() < end,
			  "no entry within %d ms: %d wake-up(s), each read "
			  "-FI_EAGAIN",
			  WAIT_WAKE_MS, wakes);
		/* fi_trywait may find the entry on its way: read it then. */
		got = trywait_settle(&f, cq, &e, &again, 2000,
				     "after a wake-up with nothing to read");
		if (got == 1) {
			reads++;
			break;
		}
		cf_assert(!got,
			  "after a wake-up with nothing to read: fi_trywait "
			  "-FI_EAGAIN %d times in 2 s, each read -FI_EAGAIN",
			  again);
		got = -FI_EAGAIN;
	}
	sender_join(&s, th);
	cf_assert(got == 1, "fi_cq_read after the CQ's fd woke: %zd (%s)", got,
		  got < 0 ? fi_strerror((int)-got) : "entries");
	check_recv(&e, &rc, &rm, 73, "entry read after epoll_wait");
	cf_note("epoll_wait first woke after %llu ms (send at 100 ms), "
		"%d wake-up(s) and %d read(s) to the entry",
		(unsigned long long)woke, wakes, reads);
	cf_expect(wakes == 1 || woke >= 80,
		  "the CQ's fd woke epoll_wait %llu ms in, before the send",
		  (unsigned long long)woke);

	/* Drained: nothing more, and blocking is safe again. */
	cf_mark("fi_cq_read of the drained CQ");
	got = fi_cq_read(cq, &e, 1);
	cf_assert(got == -FI_EAGAIN, "fi_cq_read after the entry: %zd", got);
	got = trywait_settle(&f, cq, NULL, &again, 2000, "after draining");
	cf_assert(!got,
		  "after draining: fi_trywait -FI_EAGAIN %d times in 2 s, "
		  "each read -FI_EAGAIN",
		  again);
	if (again)
		cf_note("after draining: fi_trywait -FI_EAGAIN %d time(s) "
			"first",
			again);
	cf_assert(!close(epfd), "close of the epoll set: %s", strerror(errno));
	cf_expect_none(&f, 1, 50);
	cf_expect_none(&f, 0, 20);
	cf_mem_free(&sm);
	cf_mem_free(&rm);
	cf_close(&f);
	return 0;
}

/*
 * A receive counter with FI_WAIT_UNSPEC: fi_cntr_wait(1, 300 ms) with
 * nothing coming returns -FI_ETIMEDOUT after about 300 ms (fi_cntr(3)),
 * the CPU share noted; fi_cntr_wait(1, 5 s) returns 0 soon after endpoint
 * 0 sends from a second thread 100 ms later, the counter at 1 and the
 * data intact.
 */
static int case_cntr_wait_wakes(const char *prov)
{
	struct cf_opts o = {.caps = FI_MSG,
			    .threading = FI_THREAD_SAFE,
			    .cq_wait = FI_WAIT_UNSPEC,
			    .cntr_mask = 1 << CF_CNTR_RECV};
	struct fi_context2 rc;
	struct cf_mem sm, rm;
	struct fid_cntr *rx;
	uint64_t t0, took, cpu0, cpu;
	struct sender s;
	struct cf_comp c;
	struct cf_fix f;
	pthread_t th;
	int ret;

	cf_open(&f, prov, &o);
	rx = f.ep[1].cntr[CF_CNTR_RECV];
	cf_mem_reg(&f, 0, &sm, WAIT_MSG_LEN, FI_SEND);
	cf_mem_reg(&f, 1, &rm, WAIT_MSG_LEN, FI_RECV);
	cf_fill(sm.p, WAIT_MSG_LEN, 75);
	cf_post(&f, fi_recv(f.ep[1].ep, rm.p, WAIT_MSG_LEN, rm.desc,
			    FI_ADDR_UNSPEC, &rc));

	/* Nothing coming: a timeout, not a success. */
	cpu0 = thread_cpu_us();
	t0 = cf_now_ms();
	cf_mark("fi_cntr_wait(1, 300 ms) with nothing coming");
	ret = fi_cntr_wait(rx, 1, 300);
	took = cf_now_ms() - t0;
	cpu = thread_cpu_us() - cpu0;
	cf_assert(ret == -FI_ETIMEDOUT,
		  "fi_cntr_wait(1, 300 ms) with nothing coming: %d (%s), "
		  "want -FI_ETIMEDOUT",
		  ret, fi_strerror(-ret));
	cf_assert(took >= 280 && took < 2000,
		  "fi_cntr_wait(1, 300 ms) returned after %llu ms",
		  (unsigned long long)took);
	cf_note("fi_cntr_wait(1, 300 ms) took %llu ms, %llu us of CPU (%u%%)",
		(unsigned long long)took, (unsigned long long)cpu,
		cpu_pct(cpu, took));
	cf_assert(fi_cntr_read(rx) == 0 && fi_cntr_readerr(rx) == 0,
		  "counter %llu, errors %llu after the timeout",
		  (unsigned long long)fi_cntr_read(rx),
		  (unsigned long long)fi_cntr_readerr(rx));

	/* The arrival wakes it. */
	/* t0 before the thread starts its 100 ms: a busy host may run
	 * this thread again only well after the other began them. */
	t0 = cf_now_ms();
	sender_start(&s, &th, &f, &sm, 100);
	cf_mark("fi_cntr_wait(1, 5 s) while endpoint 0 sends");
	ret = fi_cntr_wait(rx, 1, WAIT_WAKE_MS);
	took = cf_now_ms() - t0;
	sender_join(&s, th);
	cf_assert(!ret,
		  "fi_cntr_wait(1, 5 s) while endpoint 0 sends after 100 ms: "
		  "%d (%s) after %llu ms, counter %llu",
		  ret, fi_strerror(-ret), (unsigned long long)took,
		  (unsigned long long)fi_cntr_read(rx));
	cf_assert(fi_cntr_read(rx) == 1,
		  "fi_cntr_wait returned 0 with the counter at %llu, want 1",
		  (unsigned long long)fi_cntr_read(rx));
	cf_check_fill(rm.p, WAIT_MSG_LEN, 75, "message counted by the wait");
	cf_assert(took >= 80,
		  "fi_cntr_wait returned after %llu ms, before the send "
		  "100 ms in",
		  (unsigned long long)took);
	cf_assert(took < WAIT_WAKE_MS / 2,
		  "fi_cntr_wait returned only after %llu ms (sent 100 ms in)",
		  (unsigned long long)took);
	cf_note("fi_cntr_wait returned after %llu ms (send at 100 ms)",
		(unsigned long long)took);
	/* The receive's CQ entry is there too, once. */
	c = cf_wait_ctx(&f, 1, &rc);
	cf_assert(!c.err && c.len == WAIT_MSG_LEN,
		  "receive entry: err %d len %zu", c.err, c.len);
	cf_expect_none(&f, 1, 50);
	cf_expect_none(&f, 0, 20);
	cf_assert(fi_cntr_read(rx) == 1 && fi_cntr_readerr(rx) == 0,
		  "counter %llu, errors %llu at the end, want 1 and 0",
		  (unsigned long long)fi_cntr_read(rx),
		  (unsigned long long)fi_cntr_readerr(rx));
	cf_mem_free(&sm);
	cf_mem_free(&rm);
	cf_close(&f);
	return 0;
}

const struct cf_case cf_cases_wait[] = {
    {"cq_sread_sleeps",
     "fi_cq_sread(300 ms), nothing coming: -FI_EAGAIN after ~300 ms, "
     "CPU share (noted; FI_WAIT_FD < 30% unless fi_trywait says poll)",
     case_cq_sread_sleeps},
    {"cq_sread_wakes",
     "fi_cq_sread(5 s) returns a message a second thread sends 100 ms "
     "later",
     case_cq_sread_wakes},
    {"cq_sread_shared",
     "fi_cq_sread wakes for an arrival after another endpoint of the "
     "domain bound to the same CQ was closed",
     case_cq_sread_shared},
    {"cq_sread_first_send",
     "fi_cq_sread blocks while a second thread sends the first message "
     "of new endpoints, 300 rounds",
     case_cq_sread_first_send},
    {"cq_wait_fd_epoll",
     "FI_WAIT_FD CQ: FI_GETWAIT fd in an app epoll set, fi_trywait, "
     "wake-up by an arrival, fi_trywait 0 after draining",
     case_cq_wait_fd_epoll},
    {"cntr_wait_wakes",
     "fi_cntr_wait: -FI_ETIMEDOUT after 300 ms; woken by a message "
     "sent 100 ms later",
     case_cntr_wait_wakes},
    {NULL},
};
