/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Load on one RDM endpoint, over shm or tcp (FI_TCP_SHM chooses whether
 * tcp reaches the peers of this host through shared memory).
 *
 *   load PROV mt      one sender process, 4 threads on one FI_THREAD_SAFE
 *                     endpoint, 250000 tagged messages each (10^6), to one
 *                     receiver: each thread's sequence numbers arrive in
 *                     order, every payload's checksum holds, none is lost
 *                     or duplicated.  Prints the rate.
 *   load PROV unexp   100000 tagged messages (64 B, and a 1 MiB one every
 *                     10000th) sent before the receiver posts a receive:
 *                     the receiver's peak RSS stays under UNEXP_RSS_CAP,
 *                     then each message is received once, intact.
 *   load PROV peers   256 endpoints in 4 processes each exchange verified
 *                     messages with one server endpoint.
 *   load PROV fork    a process with registered memory and traffic in
 *                     flight forks; the child writes over its copy of the
 *                     buffers and exits (normally: the library's
 *                     destructors run in it); the parent's data stays, its
 *                     traffic goes on (sends, receives, RMA written into
 *                     its region), and again after a second fork.
 *
 * The receiver (or server) is this process; its peers are processes it
 * forks before it opens anything, told its address through a pipe.  Every
 * wait is bounded; children that outlive it are killed by PID.  Exit 0
 * pass, 77 no such provider, 1 fail.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>

#include "tcp_fix.h"
#include "proc_status.h"

#define DEADLINE_MS 150000 /* any single phase */

static const char *prov;
static const char *me = "receiver";

static void die(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "FAIL (%s, %s): ", prov, me);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static long status_kib(const char *field)
{
	return proc_status_kib(field);
}

static uint64_t mix(uint64_t a, uint64_t b)
{
	uint64_t x = a * 0x9e3779b97f4a7c15ULL ^ (b + 0x632be59bd9b4e019ULL);

	x ^= x >> 31;
	x *= 0xbf58476d1ce4e5b9ULL;
	return x ^ (x >> 29);
}

/* ---- processes and pipes ------------------------------------------------- */

#define MAX_KIDS 8
static pid_t kids[MAX_KIDS];
static int nkids;

static void kill_kids(void)
{
	int i;

	for (i = 0; i < nkids; i++)
		if (kids[i] > 0)
			kill(kids[i], SIGKILL);
}

/* Wait for every child; each must exit 0 within ms. */
static void reap_kids(int ms)
{
	uint64_t end = now_ms() + (uint64_t)ms;
	int i, st;
	pid_t r;

	for (i = 0; i < nkids; i++) {
		while ((r = waitpid(kids[i], &st, WNOHANG)) == 0 &&
		       now_ms() < end)
			usleep(1000);
		if (r != kids[i]) {
			kill_kids();
			die("child %d did not finish in time", (int)kids[i]);
		}
		kids[i] = 0;
		if (!WIFEXITED(st) || WEXITSTATUS(st))
			die("child %d failed (status %#x)", i, st);
	}
	nkids = 0;
}

static void put_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;
	ssize_t n;

	while (len) {
		n = write(fd, p, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			die("pipe write: %s", strerror(errno));
		p += n;
		len -= (size_t)n;
	}
}

static void get_all(int fd, void *buf, size_t len)
{
	char *p = buf;
	ssize_t n;
	struct pollfd pfd = { .fd = fd, .events = POLLIN };

	while (len) {
		if (poll(&pfd, 1, DEADLINE_MS) != 1)
			die("pipe: nothing within %d ms", DEADLINE_MS);
		n = read(fd, p, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			die("pipe read: %s", n ? strerror(errno) : "closed");
		p += n;
		len -= (size_t)n;
	}
}

/* A byte on fd, if one is there now. */
static int poll_byte(int fd)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };
	char c;

	if (poll(&pfd, 1, 0) == 1 && read(fd, &c, 1) == 1)
		return c;
	return -1;
}

struct addr {
	size_t len;
	char bytes[128];
};

/* ---- the fabric ----------------------------------------------------------- */

struct fix {
	struct fi_info *info;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_av *av;
};

struct ep {
	struct fid_ep *ep;
	struct fid_cq *cq;
	struct addr name;
};

static void fix_open(struct fix *f, bool thread_safe, bool rma)
{
	struct fi_info *hints = fi_allocinfo();
	struct fi_av_attr aa = { .type = FI_AV_TABLE };
	int ret;

	hints->ep_attr->type = FI_EP_RDM;
	hints->caps = FI_TAGGED | FI_MSG | (rma ? FI_RMA : 0);
	hints->tx_attr->msg_order = FI_ORDER_SAS;
	hints->rx_attr->msg_order = FI_ORDER_SAS;
	hints->domain_attr->threading = thread_safe ? FI_THREAD_SAFE :
						      FI_THREAD_DOMAIN;
	hints->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR |
				      FI_MR_ALLOCATED | FI_MR_PROV_KEY;
	hints->fabric_attr->prov_name = strdup(prov);
	if (strcmp(prov, "shm")) {
		hints->addr_format = FI_SOCKADDR_IN;
		ret = fi_getinfo(FI_VERSION(1, 17), "127.0.0.1", NULL,
				 FI_SOURCE, hints, &f->info);
	} else {
		ret = fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints,
				 &f->info);
	}
	fi_freeinfo(hints);
	if (ret) {
		printf("no %s RDM endpoint: %s\n", prov, fi_strerror(-ret));
		exit(77);
	}
	CHECK(fi_fabric(f->info->fabric_attr, &f->fabric, NULL));
	CHECK(fi_domain(f->fabric, f->info, &f->domain, NULL));
	CHECK(fi_av_open(f->domain, &aa, &f->av, NULL));
}

static void ep_open(struct fix *f, struct ep *e, size_t cq_size)
{
	struct fi_cq_attr ca = { .format = FI_CQ_FORMAT_TAGGED,
				 .size = cq_size };

	CHECK(fi_cq_open(f->domain, &ca, &e->cq, NULL));
	CHECK(fi_endpoint(f->domain, f->info, &e->ep, NULL));
	CHECK(fi_ep_bind(e->ep, &e->cq->fid, FI_TRANSMIT | FI_RECV));
	CHECK(fi_ep_bind(e->ep, &f->av->fid, 0));
	CHECK(fi_enable(e->ep));
	e->name.len = sizeof(e->name.bytes);
	CHECK(fi_getname(&e->ep->fid, e->name.bytes, &e->name.len));
}

static void ep_close(struct ep *e)
{
	CHECK(fi_close(&e->ep->fid));
	CHECK(fi_close(&e->cq->fid));
}

static void fix_close(struct fix *f)
{
	CHECK(fi_close(&f->av->fid));
	CHECK(fi_close(&f->domain->fid));
	CHECK(fi_close(&f->fabric->fid));
	fi_freeinfo(f->info);
}

static fi_addr_t av_add(struct fix *f, const struct addr *a)
{
	fi_addr_t fa;

	if (fi_av_insert(f->av, a->bytes, 1, &fa, 0, NULL) != 1)
		die("fi_av_insert");
	return fa;
}

/* One completion, or 0; an error completion fails the run. */
static int cq_take(struct fid_cq *cq, struct fi_cq_tagged_entry *e)
{
	ssize_t n = fi_cq_read(cq, e, 1);

	if (n == 1)
		return 1;
	if (n == -FI_EAVAIL) {
		struct fi_cq_err_entry err = { 0 };

		fi_cq_readerr(cq, &err, 0);
		die("error completion: %s (len %zu)", fi_strerror(err.err),
		    err.len);
	}
	if (n != -FI_EAGAIN)
		die("fi_cq_read: %s", fi_strerror((int)-n));
	return 0;
}

/* Fork a child running fn(arg, rd, wr) with pipes to and from it: *to is
 * where this process writes, *from where it reads. */
static void spawn(int (*fn)(int idx, int rd, int wr), int idx, int *to,
		  int *from)
{
	int a[2], b[2];
	pid_t pid;

	if (pipe(a) || pipe(b))
		die("pipe: %s", strerror(errno));
	fflush(NULL);
	pid = fork();
	if (pid < 0)
		die("fork: %s", strerror(errno));
	if (!pid) {
		close(a[1]);
		close(b[0]);
		_exit(fn(idx, a[0], b[1]));
	}
	close(a[0]);
	close(b[1]);
	kids[nkids++] = pid;
	*to = a[1];
	*from = b[0];
}

/* ---- mt: 10^6 messages from 4 threads -------------------------------------- */

#define MT_THREADS 4
#define MT_PER_THREAD 250000
#define MT_WINDOW 64

struct mt_msg {
	uint32_t thread, magic;
	uint64_t seq;
	uint64_t sum;
	uint64_t fill;
};

static struct ep mt_ep;
static fi_addr_t mt_dest;
static struct mt_msg mt_slot[MT_THREADS][MT_WINDOW];
static atomic_ulong mt_done[MT_THREADS];

/* Reap send completions, whoever's they are. */
static void mt_reap(void)
{
	struct fi_cq_tagged_entry e[16];
	ssize_t n;
	int i;

	n = fi_cq_read(mt_ep.cq, e, 16);
	if (n == -FI_EAGAIN)
		return;
	if (n < 0) {
		struct fi_cq_err_entry err = { 0 };

		fi_cq_readerr(mt_ep.cq, &err, 0);
		die("send failed: %s", fi_strerror(err.err));
	}
	for (i = 0; i < n; i++) {
		struct mt_msg *m = e[i].op_context;

		atomic_fetch_add(&mt_done[m->thread], 1);
	}
}

static void *mt_thread(void *arg)
{
	uint32_t t = (uint32_t)(uintptr_t)arg;
	uint64_t seq;
	ssize_t ret;

	for (seq = 0; seq < MT_PER_THREAD; seq++) {
		struct mt_msg *m = &mt_slot[t][seq % MT_WINDOW];

		while (seq - atomic_load(&mt_done[t]) >= MT_WINDOW)
			mt_reap();
		m->thread = t;
		m->magic = 0x10ad;
		m->seq = seq;
		m->fill = mix(seq, ~(uint64_t)t);
		m->sum = mix(t, seq) ^ m->fill;
		while ((ret = fi_tsend(mt_ep.ep, m, sizeof(*m), NULL, mt_dest,
				       t, m)) == -FI_EAGAIN)
			mt_reap();
		if (ret)
			die("fi_tsend: %s", fi_strerror((int)-ret));
	}
	while (atomic_load(&mt_done[t]) < MT_PER_THREAD)
		mt_reap();
	return NULL;
}

static int mt_sender(int idx, int rd, int wr)
{
	pthread_t th[MT_THREADS];
	struct addr peer;
	struct fix f;
	uintptr_t t;

	me = "sender";
	get_all(rd, &peer, sizeof(peer));
	fix_open(&f, true, false);
	ep_open(&f, &mt_ep, 4096);
	mt_dest = av_add(&f, &peer);
	for (t = 0; t < MT_THREADS; t++)
		if (pthread_create(&th[t], NULL, mt_thread, (void *)t))
			die("pthread_create");
	for (t = 0; t < MT_THREADS; t++)
		pthread_join(th[t], NULL);
	/* Stay until the receiver has it all. */
	get_all(rd, &t, 1);
	ep_close(&mt_ep);
	fix_close(&f);
	(void)idx;
	(void)wr;
	return 0;
}

#define MT_RX 256

static int run_mt(void)
{
	static struct mt_msg rbuf[MT_RX];
	uint64_t next[MT_THREADS] = { 0 }, total = 0, t0 = 0, t1, end;
	const uint64_t want = (uint64_t)MT_THREADS * MT_PER_THREAD;
	struct fi_cq_tagged_entry e;
	struct ep ep;
	struct fix f;
	int to, from, i;
	char go = 1;

	spawn(mt_sender, 0, &to, &from);
	fix_open(&f, false, false);
	ep_open(&f, &ep, 4096);
	for (i = 0; i < MT_RX; i++)
		CHECK(fi_trecv(ep.ep, &rbuf[i], sizeof(rbuf[i]), NULL,
			       FI_ADDR_UNSPEC, 0, ~0ULL, &rbuf[i]));
	put_all(to, &ep.name, sizeof(ep.name));
	end = now_ms() + DEADLINE_MS;
	while (total < want) {
		if (!cq_take(ep.cq, &e)) {
			if (now_ms() > end)
				die("%llu of %llu messages in %d ms",
				    (unsigned long long)total,
				    (unsigned long long)want, DEADLINE_MS);
			continue;
		}
		struct mt_msg *m = e.op_context;

		if (!t0)
			t0 = now_ms();
		if (e.len != sizeof(*m) || m->magic != 0x10ad ||
		    m->thread >= MT_THREADS || e.tag != m->thread)
			die("message %llu malformed (len %zu tag %#llx)",
			    (unsigned long long)total, e.len,
			    (unsigned long long)e.tag);
		if (m->seq != next[m->thread])
			die("thread %u: seq %llu, want %llu (lost, duplicated "
			    "or out of order)", m->thread,
			    (unsigned long long)m->seq,
			    (unsigned long long)next[m->thread]);
		if (m->fill != mix(m->seq, ~(uint64_t)m->thread) ||
		    m->sum != (mix(m->thread, m->seq) ^ m->fill))
			die("thread %u seq %llu: checksum", m->thread,
			    (unsigned long long)m->seq);
		next[m->thread]++;
		total++;
		memset(m, 0, sizeof(*m));
		CHECK(fi_trecv(ep.ep, m, sizeof(*m), NULL, FI_ADDR_UNSPEC, 0,
			       ~0ULL, m));
	}
	t1 = now_ms();
	/* Nothing more comes. */
	end = now_ms() + 200;
	while (now_ms() < end)
		if (cq_take(ep.cq, &e))
			die("a message past the %llu sent",
			    (unsigned long long)want);
	put_all(to, &go, 1);
	reap_kids(30000);
	printf("# mt %s%s: %llu messages from %d threads in %llu ms: %.0f "
	       "messages/s\n",
	       prov, getenv("FI_TCP_SHM") ? " FI_TCP_SHM=0" : "",
	       (unsigned long long)want, MT_THREADS,
	       (unsigned long long)(t1 - t0),
	       t1 > t0 ? want * 1000.0 / (double)(t1 - t0) : 0.0);
	for (i = 0; i < MT_RX; i++)
		fi_cancel(&ep.ep->fid, &rbuf[i]);
	ep_close(&ep);
	fix_close(&f);
	return 0;
}

/* ---- unexp: 100000 messages before any receive ----------------------------- */

#define UX_N 100000
#define UX_SMALL 64
#define UX_LARGE (1u << 20)
#define UX_LARGE_EVERY 10000
#define UNEXP_RSS_CAP_KIB (256 * 1024)

static bool ux_large(uint64_t i)
{
	return i % UX_LARGE_EVERY == UX_LARGE_EVERY - 1;
}

static void ux_fill(uint8_t *p, uint64_t i, size_t len)
{
	size_t k;

	for (k = 0; k + 8 <= len; k += 8) {
		uint64_t v = mix(i, k);

		memcpy(p + k, &v, 8);
	}
}

static int ux_sender(int idx, int rd, int wr)
{
	static uint8_t small[UX_N][UX_SMALL];
	static uint8_t large[UX_N / UX_LARGE_EVERY][UX_LARGE];
	struct fi_cq_tagged_entry e;
	uint64_t i, done = 0, stuck_since = 0, end;
	struct addr peer;
	struct ep ep;
	struct fix f;
	bool told = false;
	ssize_t ret;
	char c;

	me = "sender";
	get_all(rd, &peer, sizeof(peer));
	fix_open(&f, false, false);
	ep_open(&f, &ep, 4096);
	fi_addr_t dest = av_add(&f, &peer);

	end = now_ms() + DEADLINE_MS;
	for (i = 0; i < UX_N; i++) {
		void *buf = ux_large(i) ? large[i / UX_LARGE_EVERY] : small[i];
		size_t len = ux_large(i) ? UX_LARGE : UX_SMALL;

		ux_fill(buf, i, len);
		while ((ret = fi_tsend(ep.ep, buf, len, NULL, dest, i,
				       (void *)(uintptr_t)(i + 1))) ==
		       -FI_EAGAIN) {
			done += (uint64_t)cq_take(ep.cq, &e);
			if (!stuck_since)
				stuck_since = now_ms();
			/* Held back for a second: the receiver may start. */
			if (!told && now_ms() - stuck_since > 1000) {
				c = 'H';
				put_all(wr, &c, 1);
				told = true;
			}
			if (now_ms() > end)
				die("message %llu not taken", (unsigned long long)i);
		}
		if (ret)
			die("fi_tsend %llu: %s", (unsigned long long)i,
			    fi_strerror((int)-ret));
		stuck_since = 0;
		done += (uint64_t)cq_take(ep.cq, &e);
	}
	if (!told) {
		c = 'D';
		put_all(wr, &c, 1);
	}
	while (done < UX_N) {
		done += (uint64_t)cq_take(ep.cq, &e);
		if (now_ms() > end)
			die("%llu of %d sends completed", (unsigned long long)done,
			    UX_N);
	}
	get_all(rd, &c, 1);
	ep_close(&ep);
	fix_close(&f);
	(void)idx;
	return 0;
}

static int run_unexp(void)
{
	static uint8_t rbuf[UX_LARGE], want[UX_LARGE];
	struct fi_cq_tagged_entry e;
	long rss0, hwm_held, hwm_end;
	uint64_t i, end, t0;
	struct ep ep;
	struct fix f;
	int to, from, c;
	char go = 1;

	spawn(ux_sender, 0, &to, &from);
	fix_open(&f, false, false);
	ep_open(&f, &ep, 4096);
	rss0 = status_kib("VmRSS");
	put_all(to, &ep.name, sizeof(ep.name));
	/* Progress only, no receive, until the sender is done or held. */
	end = now_ms() + DEADLINE_MS;
	while ((c = poll_byte(from)) < 0) {
		if (cq_take(ep.cq, &e))
			die("a completion with no receive posted");
		if (now_ms() > end)
			die("the sender neither finished nor was held back");
	}
	/* A little more, for what was still on its way. */
	t0 = now_ms() + 200;
	while (now_ms() < t0)
		if (cq_take(ep.cq, &e))
			die("a completion with no receive posted");
	hwm_held = status_kib("VmHWM");
	for (i = 0; i < UX_N; i++) {
		size_t len = ux_large(i) ? UX_LARGE : UX_SMALL;

		CHECK(fi_trecv(ep.ep, rbuf, sizeof(rbuf), NULL, FI_ADDR_UNSPEC,
			       i, 0, rbuf));
		end = now_ms() + DEADLINE_MS;
		while (!cq_take(ep.cq, &e))
			if (now_ms() > end)
				die("message %llu never came",
				    (unsigned long long)i);
		ux_fill(want, i, len);
		if (e.op_context != rbuf || e.tag != i || e.len != len ||
		    memcmp(rbuf, want, len))
			die("message %llu: tag %#llx len %zu, or its bytes",
			    (unsigned long long)i, (unsigned long long)e.tag,
			    e.len);
	}
	/* Exactly once: nothing else is there. */
	CHECK(fi_trecv(ep.ep, rbuf, sizeof(rbuf), NULL, FI_ADDR_UNSPEC, 0,
		       ~0ULL, rbuf));
	end = now_ms() + 300;
	while (now_ms() < end)
		if (cq_take(ep.cq, &e))
			die("a message more (tag %#llx)",
			    (unsigned long long)e.tag);
	fi_cancel(&ep.ep->fid, rbuf);
	hwm_end = status_kib("VmHWM");
	put_all(to, &go, 1);
	reap_kids(30000);
	printf("# unexp %s%s: %d messages (%d of 1 MiB) before any receive "
	       "(sender %s): receiver RSS %ld KiB before, peak %ld KiB while "
	       "holding them, %ld KiB at the end (cap %d KiB)\n",
	       prov, getenv("FI_TCP_SHM") ? " FI_TCP_SHM=0" : "", UX_N,
	       UX_N / UX_LARGE_EVERY, c == 'H' ? "held back" : "done", rss0,
	       hwm_held, hwm_end, UNEXP_RSS_CAP_KIB);
	/* (A sanitizer's shadow memory and quarantine are no measure.) */
	if (!(getenv("WEFT_SANITIZERS") &&
	      !strcmp(getenv("WEFT_SANITIZERS"), "yes")) &&
	    (hwm_held > UNEXP_RSS_CAP_KIB || hwm_end > UNEXP_RSS_CAP_KIB))
		die("peak RSS %ld KiB over the cap", hwm_end);
	ep_close(&ep);
	fix_close(&f);
	return 0;
}

/* ---- peers: 256 endpoints to one ------------------------------------------ */

#define PR_PROCS 4
#define PR_PER_PROC 64
#define PR_PEERS (PR_PROCS * PR_PER_PROC)
#define PR_MSGS 4

struct pr_msg {
	uint32_t id, seq;
	uint64_t sum;
	struct addr from;
};

static uint64_t pr_sum(uint32_t id, uint32_t seq, uint64_t salt)
{
	return mix(id * 1000003ULL + seq, salt);
}

static int pr_client(int proc, int rd, int wr)
{
	static struct pr_msg out[PR_PER_PROC][PR_MSGS], in[PR_PER_PROC][PR_MSGS];
	static struct ep eps[PR_PER_PROC];
	int sent[PR_PER_PROC] = { 0 }, got[PR_PER_PROC] = { 0 };
	struct fi_cq_tagged_entry e;
	struct addr srv;
	struct fix f;
	fi_addr_t dest;
	uint64_t end;
	int k, s, left = PR_PER_PROC * PR_MSGS * 2;
	ssize_t ret;
	char c;

	me = "client";
	get_all(rd, &srv, sizeof(srv));
	fix_open(&f, false, false);
	for (k = 0; k < PR_PER_PROC; k++)
		ep_open(&f, &eps[k], 64);
	dest = av_add(&f, &srv);
	for (k = 0; k < PR_PER_PROC; k++) {
		uint32_t id = (uint32_t)(proc * PR_PER_PROC + k);

		for (s = 0; s < PR_MSGS; s++) {
			CHECK(fi_trecv(eps[k].ep, &in[k][s], sizeof(in[k][s]),
				       NULL, FI_ADDR_UNSPEC, id, 0,
				       &in[k][s]));
			out[k][s].id = id;
			out[k][s].seq = (uint32_t)s;
			out[k][s].sum = pr_sum(id, (uint32_t)s, 1);
			out[k][s].from = eps[k].name;
		}
	}
	end = now_ms() + DEADLINE_MS;
	while (left) {
		for (k = 0; k < PR_PER_PROC; k++) {
			uint32_t id = (uint32_t)(proc * PR_PER_PROC + k);

			if (sent[k] < PR_MSGS) {
				ret = fi_tsend(eps[k].ep, &out[k][sent[k]],
					       sizeof(out[k][0]), NULL, dest,
					       id, &out[k][sent[k]]);
				if (!ret)
					sent[k]++;
				else if (ret != -FI_EAGAIN)
					die("fi_tsend: %s",
					    fi_strerror((int)-ret));
			}
			while (cq_take(eps[k].cq, &e)) {
				struct pr_msg *m = e.op_context;

				left--;
				if (!(e.flags & FI_RECV))
					continue;
				s = (int)(m - in[k]);
				if (m->id != id || m->seq >= PR_MSGS ||
				    m->sum != pr_sum(id, m->seq, 2) ||
				    e.len != sizeof(*m))
					die("endpoint %u: bad reply", id);
				got[k]++;
			}
		}
		if (now_ms() > end)
			die("%d completions missing", left);
	}
	for (k = 0; k < PR_PER_PROC; k++)
		if (got[k] != PR_MSGS)
			die("endpoint %d: %d replies", k, got[k]);
	get_all(rd, &c, 1);
	for (k = 0; k < PR_PER_PROC; k++)
		ep_close(&eps[k]);
	fix_close(&f);
	(void)wr;
	return 0;
}

static int run_peers(void)
{
	static struct pr_msg rx[PR_PEERS * PR_MSGS], reply[PR_PEERS * PR_MSGS];
	static fi_addr_t who[PR_PEERS];
	static uint8_t seen[PR_PEERS][PR_MSGS];
	int to[PR_PROCS], from[PR_PROCS], i, nrx = 0, nreply = 0, next = 0;
	int done_tx = 0, want = PR_PEERS * PR_MSGS;
	struct fi_cq_tagged_entry e;
	struct ep ep;
	struct fix f;
	uint64_t end, t0;
	ssize_t ret;
	char go = 1;

	for (i = 0; i < PR_PEERS; i++)
		who[i] = FI_ADDR_NOTAVAIL;
	for (i = 0; i < PR_PROCS; i++)
		spawn(pr_client, i, &to[i], &from[i]);
	fix_open(&f, false, false);
	ep_open(&f, &ep, 8192);
	for (i = 0; i < want; i++)
		CHECK(fi_trecv(ep.ep, &rx[i], sizeof(rx[i]), NULL,
			       FI_ADDR_UNSPEC, 0, ~0ULL, &rx[i]));
	for (i = 0; i < PR_PROCS; i++)
		put_all(to[i], &ep.name, sizeof(ep.name));
	t0 = now_ms();
	end = t0 + DEADLINE_MS;
	while (nrx < want || done_tx < want) {
		while (next < nreply) {
			struct pr_msg *r = &reply[next];

			ret = fi_tsend(ep.ep, r, sizeof(*r), NULL, who[r->id],
				       r->id, r);
			if (ret == -FI_EAGAIN)
				break;
			if (ret)
				die("reply: %s", fi_strerror((int)-ret));
			next++;
		}
		if (!cq_take(ep.cq, &e)) {
			if (now_ms() > end)
				die("%d of %d messages, %d replies done", nrx,
				    want, done_tx);
			continue;
		}
		if (e.flags & FI_SEND) {
			done_tx++;
			continue;
		}
		struct pr_msg *m = e.op_context;

		if (e.len != sizeof(*m) || m->id >= PR_PEERS ||
		    m->seq >= PR_MSGS || e.tag != m->id ||
		    m->sum != pr_sum(m->id, m->seq, 1))
			die("message %d malformed", nrx);
		if (seen[m->id][m->seq]++)
			die("endpoint %u seq %u twice", m->id, m->seq);
		if (who[m->id] == FI_ADDR_NOTAVAIL)
			who[m->id] = av_add(&f, &m->from);
		reply[nreply].id = m->id;
		reply[nreply].seq = m->seq;
		reply[nreply].sum = pr_sum(m->id, m->seq, 2);
		nreply++;
		nrx++;
	}
	for (i = 0; i < PR_PROCS; i++)
		put_all(to[i], &go, 1);
	reap_kids(60000);
	printf("# peers %s%s: %d endpoints in %d processes, %d messages and "
	       "%d replies verified in %llu ms\n",
	       prov, getenv("FI_TCP_SHM") ? " FI_TCP_SHM=0" : "", PR_PEERS,
	       PR_PROCS, want, want, (unsigned long long)(now_ms() - t0));
	ep_close(&ep);
	fix_close(&f);
	return 0;
}

/* ---- fork with registered memory ------------------------------------------ */

#define FK_REGION (2u << 20)
#define FK_SEND_OFF (1u << 20)
#define FK_SEND_LEN (64u << 10)
#define FK_RMA_OFF (FK_REGION - (256u << 10))
#define FK_RMA_LEN 4096
#define FK_RECV_LEN (512u << 10)

struct fk_info {
	struct addr name;
	uint64_t addr, key;
};

static void fk_pattern(uint8_t *p, size_t len, uint64_t salt)
{
	ux_fill(p, salt, len);
}

static bool fk_check(const uint8_t *p, size_t len, uint64_t salt)
{
	static uint8_t want[FK_REGION];

	ux_fill(want, salt, len);
	return !memcmp(p, want, len);
}

/* The peer: receives what the forking process sends, sends it data and
 * writes into its region when told, twice. */
static int fk_peer(int idx, int rd, int wr)
{
	static uint8_t buf[FK_RECV_LEN], wbuf[FK_RMA_LEN];
	struct fi_cq_tagged_entry e;
	struct fk_info pi, mine;
	struct fix f;
	struct ep ep;
	fi_addr_t dest;
	int round;
	char c;

	me = "peer";
	fix_open(&f, false, true);
	ep_open(&f, &ep, 64);
	mine.name = ep.name;
	put_all(wr, &mine, sizeof(mine));
	get_all(rd, &pi, sizeof(pi));
	dest = av_add(&f, &pi.name);
	for (round = 0; round < 2; round++) {
		uint64_t end = now_ms() + DEADLINE_MS;

		/* Its send, posted before it forked. */
		CHECK(fi_trecv(ep.ep, buf, FK_SEND_LEN, NULL, FI_ADDR_UNSPEC,
			       10 + round, 0, buf));
		while (!cq_take(ep.cq, &e))
			if (now_ms() > end)
				die("round %d: its send never came", round);
		if (e.len != FK_SEND_LEN || !fk_check(buf, FK_SEND_LEN,
						      100 + round))
			die("round %d: its data damaged", round);
		/* Told: its child has come and gone. */
		get_all(rd, &c, 1);
		fk_pattern(buf, FK_RECV_LEN, 200 + round);
		fk_pattern(wbuf, FK_RMA_LEN, 300 + round);
		CHECK(fi_write(ep.ep, wbuf, FK_RMA_LEN, NULL, dest,
			       pi.addr + FK_RMA_OFF, pi.key, wbuf));
		while (!cq_take(ep.cq, &e))
			if (now_ms() > end)
				die("round %d: the write never completed",
				    round);
		CHECK(fi_tsend(ep.ep, buf, FK_RECV_LEN, NULL, dest,
			       20 + round, buf));
		while (!cq_take(ep.cq, &e))
			if (now_ms() > end)
				die("round %d: the send never completed",
				    round);
	}
	get_all(rd, &c, 1);
	ep_close(&ep);
	fix_close(&f);
	(void)idx;
	return 0;
}

/* Fork a child that writes over its copy of region and exits normally. */
static void fk_child_scribbles(uint8_t *region)
{
	pid_t pid;
	int st;
	uint64_t end = now_ms() + 30000;

	fflush(NULL);
	pid = fork();
	if (pid < 0)
		die("fork: %s", strerror(errno));
	if (!pid) {
		nkids = 0; /* its exit handlers leave the peer alone */
		memset(region, 0xee, FK_REGION);
		exit(region[FK_REGION - 1] == 0xee ? 0 : 3);
	}
	while (waitpid(pid, &st, WNOHANG) == 0) {
		if (now_ms() > end) {
			kill(pid, SIGKILL);
			die("the forked child did not exit");
		}
		usleep(1000);
	}
	if (!WIFEXITED(st) || WEXITSTATUS(st))
		die("the forked child failed (status %#x)", st);
}

static int run_fork(void)
{
	struct fi_cq_tagged_entry e;
	struct fk_info pi, mine;
	struct fid_mr *mr;
	uint8_t *region;
	struct ep ep;
	struct fix f;
	fi_addr_t dest;
	void *desc;
	int to, from, round, n;
	char go = 1;

	spawn(fk_peer, 0, &to, &from);
	fix_open(&f, false, true);
	ep_open(&f, &ep, 64);
	if (posix_memalign((void **)&region, 4096, FK_REGION))
		die("posix_memalign");
	memset(region, 0, FK_REGION);
	CHECK(fi_mr_reg(f.domain, region, FK_REGION,
			FI_SEND | FI_RECV | FI_READ | FI_WRITE |
				FI_REMOTE_READ | FI_REMOTE_WRITE,
			0, 0x4b1d, 0, &mr, NULL));
	if (f.info->domain_attr->mr_mode & FI_MR_ENDPOINT) {
		CHECK(fi_mr_bind(mr, &ep.ep->fid, 0));
		CHECK(fi_mr_enable(mr));
	}
	desc = fi_mr_desc(mr);
	get_all(from, &pi, sizeof(pi));
	dest = av_add(&f, &pi.name);
	mine.name = ep.name;
	mine.key = fi_mr_key(mr);
	mine.addr = (f.info->domain_attr->mr_mode & FI_MR_VIRT_ADDR) ?
			    (uint64_t)(uintptr_t)region :
			    0;
	put_all(to, &mine, sizeof(mine));
	for (round = 0; round < 2; round++) {
		uint64_t end = now_ms() + DEADLINE_MS;

		fk_pattern(region + FK_SEND_OFF, FK_SEND_LEN, 100 + round);
		memset(region, 0, FK_RECV_LEN);
		memset(region + FK_RMA_OFF, 0, FK_RMA_LEN);
		/* In flight across the fork: a receive into the region, and
		 * (round 0) a send from it the peer may not have taken yet. */
		CHECK(fi_trecv(ep.ep, region, FK_RECV_LEN, desc,
			       FI_ADDR_UNSPEC, 20 + round, 0, region));
		CHECK(fi_tsend(ep.ep, region + FK_SEND_OFF, FK_SEND_LEN, desc,
			       dest, 10 + round, region + FK_SEND_OFF));
		if (round == 1) {
			/* Round 1: fork once everything before completed. */
			n = 0;
			while (n < 1)
				n += cq_take(ep.cq, &e);
		}
		fk_child_scribbles(region);
		if (!fk_check(region + FK_SEND_OFF, FK_SEND_LEN, 100 + round))
			die("round %d: the child's writes reached the parent",
			    round);
		put_all(to, &go, 1);
		n = round == 1 ? 1 : 0;
		while (n < 2) {
			if (!cq_take(ep.cq, &e)) {
				if (now_ms() > end)
					die("round %d: %d of 2 completions",
					    round, n);
				continue;
			}
			n++;
			if (e.op_context == region &&
			    (e.len != FK_RECV_LEN ||
			     !fk_check(region, FK_RECV_LEN, 200 + round)))
				die("round %d: received data damaged", round);
		}
		/* The peer's write landed before its send (sent after the
		 * write completed). */
		if (!fk_check(region + FK_RMA_OFF, FK_RMA_LEN, 300 + round))
			die("round %d: the peer's RMA write is not in the "
			    "region", round);
		if (!fk_check(region + FK_SEND_OFF, FK_SEND_LEN, 100 + round))
			die("round %d: the sent data changed", round);
	}
	put_all(to, &go, 1);
	reap_kids(30000);
	printf("# fork %s%s: 2 forks with a registered region and traffic "
	       "in flight; parent data intact, sends, receives and RMA "
	       "writes went on\n",
	       prov, getenv("FI_TCP_SHM") ? " FI_TCP_SHM=0" : "");
	CHECK(fi_close(&mr->fid));
	ep_close(&ep);
	fix_close(&f);
	free(region);
	return 0;
}

int main(int argc, char **argv)
{
	struct rlimit rl;

	if (argc != 3) {
		fprintf(stderr, "usage: %s shm|tcp mt|unexp|peers|fork\n",
			argv[0]);
		return 2;
	}
	prov = argv[1];
	setvbuf(stdout, NULL, _IONBF, 0);
	/* 256 endpoints and their connections. */
	if (!getrlimit(RLIMIT_NOFILE, &rl) && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	atexit(kill_kids);
	if (!strcmp(argv[2], "mt"))
		return run_mt();
	if (!strcmp(argv[2], "unexp"))
		return run_unexp();
	if (!strcmp(argv[2], "peers"))
		return run_peers();
	if (!strcmp(argv[2], "fork"))
		return run_fork();
	fprintf(stderr, "unknown mode %s\n", argv[2]);
	return 2;
}
