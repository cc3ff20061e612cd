// SPDX-License-Identifier: BSD-2-Clause
/*
 * shm over time: N processes in turn open an endpoint (shm, or tcp, which
 * reaches peers of its host through shm) and are SIGKILLed at a random
 * moment: during exec and initialisation, or while they send to a
 * long-lived peer (this process).  Checks:
 *
 *  - every child that was given the time exchanges a verified message
 *    with the long-lived peer: after a child killed before its exchange,
 *    the next one must complete it (then dies during its traffic);
 *  - the long-lived peer's own traffic stays correct (every message
 *    from a child verified, nothing sent to a dead one left hanging);
 *  - at the end, once a last child has opened an endpoint (its sweep ran)
 *    and closed it, /dev/shm holds no file of any dead child: no region
 *    whose header names one of them, no half-made region of theirs, and
 *    (shm, whose children's names start "kc<our pid>") no bell or region
 *    under their names.  (tcp's regions are named after addresses: their
 *    bells cannot be told apart from other processes', and are left to
 *    the sweep's own tests.)
 *
 * Usage: kill_cycles PROV N [SEED]   Exit 0 pass, 77 no PROV, 1 fail.
 * (kill_cycles -c ... is the child.)  Prints the seed and the time taken.
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_tagged.h>

#include "shm_layout.h"

#define TAG_HELLO 1ULL
#define TAG_REPLY 2ULL
#define TAG_TRAFFIC 3ULL
#define HELLO_LEN 4096
#define TRAFFIC_MAX (1 << 20)
#define NTRAFFIC 4
#define NHELLO 2
#define MAX_NAME 256
#define KILL_EARLY_MS 40 /* kills drawn in [0, this) from the spawn */
#define TRAFFIC_MS 20	 /* and in [0, this) after an exchange */
#define WAIT_MS 20000
#define MAGIC 0x6b696c6cu

#define FAIL(...)                                                              \
	do {                                                                   \
		fprintf(stderr, "kill_cycles: " __VA_ARGS__);                  \
		fprintf(stderr, "\n");                                         \
		exit(1);                                                       \
	} while (0)
#define CHECK(call)                                                            \
	do {                                                                   \
		int ret_ = (int)(call);                                        \
		if (ret_)                                                      \
			FAIL("%s:%d: %s: %s", __FILE__, __LINE__, #call,       \
			     fi_strerror(-ret_));                              \
	} while (0)

struct hello {
	uint32_t magic;
	uint32_t cycle;
	uint32_t namelen;
	uint8_t name[MAX_NAME];
};

struct fix {
	struct fi_info *info;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_av *av;
	struct fid_cq *cq;
	struct fid_ep *ep;
	uint8_t name[MAX_NAME];
	size_t namelen;
};

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void fill(uint8_t *p, size_t len, uint32_t seed)
{
	size_t j;

	for (j = 0; j < len; j++)
		p[j] = (uint8_t)(seed * 131 + j * 7 + (j >> 8) * 13 + 1);
}

static bool filled(const uint8_t *p, size_t len, uint32_t seed)
{
	size_t j;

	for (j = 0; j < len; j++)
		if (p[j] != (uint8_t)(seed * 131 + j * 7 + (j >> 8) * 13 + 1))
			return false;
	return true;
}

/* Regions of shm children are named "kc<parent pid>:~<random>". */
static int fix_open(struct fix *f, const char *prov, const char *shm_node)
{
	struct fi_av_attr av_attr = {.type = FI_AV_TABLE, .count = 64};
	struct fi_cq_attr cq_attr = {.format = FI_CQ_FORMAT_TAGGED,
				     .size = 256};
	struct fi_info *hints = fi_allocinfo();
	const char *node;
	int ret;

	hints->ep_attr->type = FI_EP_RDM;
	hints->caps = FI_TAGGED;
	hints->mode = FI_CONTEXT | FI_CONTEXT2;
	hints->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR |
				      FI_MR_ALLOCATED | FI_MR_PROV_KEY;
	hints->fabric_attr->prov_name = strdup(prov);
	node = strcmp(prov, "shm") ? "127.0.0.1" : shm_node;
	ret = fi_getinfo(FI_VERSION(1, 17), node, NULL, FI_SOURCE, hints,
			 &f->info);
	fi_freeinfo(hints);
	if (ret)
		return ret;
	if (f->info->domain_attr->mr_mode & FI_MR_LOCAL)
		FAIL("%s wants FI_MR_LOCAL: not handled here", prov);
	CHECK(fi_fabric(f->info->fabric_attr, &f->fabric, NULL));
	CHECK(fi_domain(f->fabric, f->info, &f->domain, NULL));
	CHECK(fi_av_open(f->domain, &av_attr, &f->av, NULL));
	CHECK(fi_cq_open(f->domain, &cq_attr, &f->cq, NULL));
	CHECK(fi_endpoint(f->domain, f->info, &f->ep, NULL));
	CHECK(fi_ep_bind(f->ep, &f->av->fid, 0));
	CHECK(fi_ep_bind(f->ep, &f->cq->fid, FI_TRANSMIT | FI_RECV));
	CHECK(fi_enable(f->ep));
	f->namelen = sizeof(f->name);
	CHECK(fi_getname(&f->ep->fid, f->name, &f->namelen));
	return 0;
}

static void fix_close(struct fix *f)
{
	CHECK(fi_close(&f->ep->fid));
	CHECK(fi_close(&f->cq->fid));
	CHECK(fi_close(&f->av->fid));
	CHECK(fi_close(&f->domain->fid));
	CHECK(fi_close(&f->fabric->fid));
	fi_freeinfo(f->info);
}

/* One completion within ms, or -FI_EAGAIN; errors come back as -err. */
static int cq_next(struct fix *f, struct fi_cq_tagged_entry *e, int ms)
{
	uint64_t end = now_ms() + (uint64_t)ms;
	struct fi_cq_err_entry err;
	ssize_t n;

	for (;;) {
		n = fi_cq_read(f->cq, e, 1);
		if (n == 1)
			return 0;
		if (n == -FI_EAVAIL) {
			memset(&err, 0, sizeof(err));
			if (fi_cq_readerr(f->cq, &err, 0) != 1)
				FAIL("fi_cq_readerr failed");
			e->op_context = err.op_context;
			e->flags = err.flags;
			return -err.err;
		}
		if (n != -FI_EAGAIN)
			FAIL("fi_cq_read: %zd", n);
		if (now_ms() >= end)
			return -FI_EAGAIN;
	}
}

static void unhex(const char *s, uint8_t *out, size_t *len)
{
	size_t n = strlen(s) / 2, i;
	unsigned int v;

	if (n > MAX_NAME)
		FAIL("address too long");
	for (i = 0; i < n; i++) {
		if (sscanf(s + 2 * i, "%2x", &v) != 1)
			FAIL("bad address");
		out[i] = (uint8_t)v;
	}
	*len = n;
}

/* ---- the child ------------------------------------------------------- */

static int child_main(const char *prov, const char *paddr, uint32_t cycle,
		      const char *node)
{
	static uint8_t tbuf[TRAFFIC_MAX];
	static const size_t tlen[] = {64, 4096, 65536, TRAFFIC_MAX};
	struct fi_context2 sctx, rctx;
	struct fi_cq_tagged_entry e;
	uint8_t pname[MAX_NAME], reply[HELLO_LEN];
	struct hello *h;
	uint8_t hbuf[HELLO_LEN];
	fi_addr_t parent;
	size_t plen;
	uint32_t i;
	struct fix f;
	char ok = 'E';
	int ret;

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	unhex(paddr, pname, &plen);
	if (fix_open(&f, prov, node))
		FAIL("child: no %s", prov);
	if (fi_av_insert(f.av, pname, 1, &parent, 0, NULL) != 1)
		FAIL("child: fi_av_insert of the parent");
	CHECK(fi_trecv(f.ep, reply, HELLO_LEN, NULL, parent, TAG_REPLY, 0,
		       &rctx));
	fill(hbuf, HELLO_LEN, cycle);
	h = (struct hello *)hbuf;
	h->magic = MAGIC;
	h->cycle = cycle;
	h->namelen = (uint32_t)f.namelen;
	memcpy(h->name, f.name, f.namelen);
	while ((ret = (int)fi_tsend(f.ep, hbuf, HELLO_LEN, NULL, parent,
				    TAG_HELLO, &sctx)) == -FI_EAGAIN)
		(void)fi_cq_read(f.cq, &e, 0);
	CHECK(ret);
	for (i = 0; i < 2; i++) {
		ret = cq_next(&f, &e, WAIT_MS);
		if (ret)
			FAIL("child %u: exchange: %s", cycle,
			     fi_strerror(-ret));
	}
	if (!filled(reply, HELLO_LEN, cycle + 1000000))
		FAIL("child %u: the reply differs", cycle);
	if (write(1, &ok, 1) != 1)
		FAIL("child: write");
	/* Traffic until killed. */
	for (i = 0;; i++) {
		size_t len = tlen[i % 4];

		fill(tbuf, len, (uint32_t)len);
		while ((ret = (int)fi_tsend(f.ep, tbuf, len, NULL, parent,
					    TAG_TRAFFIC, &sctx)) ==
		       -FI_EAGAIN)
			(void)fi_cq_read(f.cq, &e, 0);
		CHECK(ret);
		ret = cq_next(&f, &e, WAIT_MS);
		if (ret)
			FAIL("child %u: traffic: %s", cycle, fi_strerror(-ret));
	}
	return 0;
}

/* ---- the long-lived peer ---------------------------------------------- */

struct parent {
	const char *prov;
	const char *self;
	char hexname[2 * MAX_NAME + 1];
	char node[64];
	struct fix f;
	uint8_t hello[NHELLO][HELLO_LEN];
	struct fi_context2 hctx[NHELLO];
	uint8_t *traffic[NTRAFFIC];
	struct fi_context2 tctx[NTRAFFIC];
	uint8_t reply[HELLO_LEN];
	struct fi_context2 rctx;
	bool reply_busy;
	fi_addr_t child_addr;
	bool child_in_av;
	uint32_t cycle;
	bool exchanged;
	unsigned long ntraffic, nexchanged, nearly, nreply_err, nrecv_err;
	pid_t *pids;
};

static void post_hello(struct parent *p, int i)
{
	CHECK(fi_trecv(p->f.ep, p->hello[i], HELLO_LEN, NULL, FI_ADDR_UNSPEC,
		       TAG_HELLO, 0, &p->hctx[i]));
}

static void post_traffic(struct parent *p, int i)
{
	CHECK(fi_trecv(p->f.ep, p->traffic[i], TRAFFIC_MAX, NULL,
		       FI_ADDR_UNSPEC, TAG_TRAFFIC, 0, &p->tctx[i]));
}

static void on_hello(struct parent *p, int i, size_t len)
{
	struct hello h;
	int ret;

	uint8_t want[HELLO_LEN];

	memcpy(&h, p->hello[i], sizeof(h));
	if (len != HELLO_LEN || h.magic != MAGIC || h.namelen > MAX_NAME)
		FAIL("a bad hello (%zu bytes)", len);
	fill(want, HELLO_LEN, h.cycle);
	if (memcmp(p->hello[i] + sizeof(h), want + sizeof(h),
		   HELLO_LEN - sizeof(h)))
		FAIL("hello %u differs", h.cycle);
	post_hello(p, i);
	if (h.cycle != p->cycle)
		return; /* a dead child's, late */
	if (p->reply_busy)
		FAIL("child %u said hello twice", h.cycle);
	if (fi_av_insert(p->f.av, h.name, 1, &p->child_addr, 0, NULL) != 1)
		FAIL("fi_av_insert of child %u", h.cycle);
	p->child_in_av = true;
	fill(p->reply, HELLO_LEN, h.cycle + 1000000);
	while ((ret = (int)fi_tsend(p->f.ep, p->reply, HELLO_LEN, NULL,
				    p->child_addr, TAG_REPLY, &p->rctx)) ==
	       -FI_EAGAIN)
		;
	if (ret == -FI_ECONNRESET) /* killed already */
		return;
	CHECK(ret);
	p->reply_busy = true;
}

/* Handle one completion if there is one. */
static void progress(struct parent *p)
{
	struct fi_cq_tagged_entry e;
	int ret = cq_next(&p->f, &e, 0), i;

	if (ret == -FI_EAGAIN)
		return;
	if (e.op_context == &p->rctx) {
		p->reply_busy = false;
		if (ret)
			p->nreply_err++; /* the child died first */
		return;
	}
	for (i = 0; ret && i < NTRAFFIC; i++)
		if (e.op_context == &p->tctx[i]) {
			/* A large message whose sender died before we
			 * fetched it: it fails, the receive is ours again. */
			if (ret != -FI_ECONNRESET && ret != -FI_EIO)
				FAIL("a receive failed: %s",
				     fi_strerror(-ret));
			p->nrecv_err++;
			post_traffic(p, i);
			return;
		}
	if (ret)
		FAIL("a receive failed: %s", fi_strerror(-ret));
	for (i = 0; i < NHELLO; i++)
		if (e.op_context == &p->hctx[i]) {
			on_hello(p, i, e.len);
			return;
		}
	for (i = 0; i < NTRAFFIC; i++)
		if (e.op_context == &p->tctx[i]) {
			if (!filled(p->traffic[i], e.len, (uint32_t)e.len))
				FAIL("a message of %zu bytes from a child "
				     "differs",
				     e.len);
			p->ntraffic++;
			post_traffic(p, i);
			return;
		}
	FAIL("a completion of nothing posted");
}

static pid_t spawn(struct parent *p, int *rfd, bool clean)
{
	char cyc[16];
	int fds[2];
	pid_t pid;

	if (pipe2(fds, O_CLOEXEC))
		FAIL("pipe2");
	snprintf(cyc, sizeof(cyc), "%u", p->cycle);
	pid = fork();
	if (pid < 0)
		FAIL("fork");
	if (!pid) {
		dup2(fds[1], 1);
		execl(p->self, "kill_cycles", "-c", p->prov, p->hexname, cyc,
		      p->node, clean ? "clean" : "run", (char *)NULL);
		_exit(127);
	}
	close(fds[1]);
	*rfd = fds[0];
	return pid;
}

static unsigned int rnd(unsigned int *seed)
{
	*seed = *seed * 1103515245u + 12345u;
	return (*seed >> 16) & 0x7fff;
}

/* One child: spawned, killed at a random point (after its exchange when
 * `must`); returns whether it exchanged. */
static bool cycle_one(struct parent *p, unsigned int *seed, bool must)
{
	uint64_t t0 = now_ms(), kill_at;
	int rfd, status;
	pid_t pid;
	bool told = false;
	char b;

	p->exchanged = false;
	pid = spawn(p, &rfd, false);
	p->pids[p->cycle] = pid;
	kill_at = must ? UINT64_MAX : t0 + rnd(seed) % KILL_EARLY_MS;
	while (now_ms() < kill_at) {
		struct pollfd pfd = {rfd, POLLIN, 0};

		progress(p);
		if (!told && poll(&pfd, 1, 0) > 0) {
			if (read(rfd, &b, 1) != 1)
				FAIL("child %u (pid %d) ended before its "
				     "exchange",
				     p->cycle, (int)pid);
			told = true;
			if (kill_at == UINT64_MAX)
				kill_at = now_ms() + rnd(seed) % TRAFFIC_MS;
		}
		if (now_ms() - t0 > WAIT_MS)
			FAIL("child %u: no exchange within %d ms", p->cycle,
			     WAIT_MS);
	}
	kill(pid, SIGKILL);
	if (waitpid(pid, &status, 0) != pid)
		FAIL("waitpid");
	if (!WIFSIGNALED(status))
		FAIL("child %u ended with status 0x%x before it was killed",
		     p->cycle, status);
	close(rfd);
	/* What we sent it ends within the bound; nothing else waits on it. */
	t0 = now_ms();
	while (p->reply_busy) {
		if (now_ms() - t0 > 2000)
			FAIL("the reply to dead child %u still under way "
			     "after 2 s",
			     p->cycle);
		progress(p);
	}
	if (p->child_in_av)
		CHECK(fi_av_remove(p->f.av, &p->child_addr, 1, 0));
	p->child_in_av = false;
	if (told)
		p->nexchanged++;
	else
		p->nearly++;
	return told;
}

/* Whether pid is one of the dead children. */
static bool ours(const struct parent *p, long pid)
{
	uint32_t i;

	for (i = 0; i <= p->cycle; i++)
		if (p->pids[i] == pid)
			return true;
	return false;
}

/* Files in /dev/shm left by dead children; prints each. */
static int stale_files(const struct parent *p)
{
	char rprefix[64], nprefix[64], bprefix[64], path[512];
	struct dirent *d;
	int n = 0;
	DIR *dir;

	snprintf(rprefix, sizeof(rprefix), "weft-shm.%u.", (unsigned)geteuid());
	snprintf(nprefix, sizeof(nprefix), "weft-shm-new.%u.",
		 (unsigned)geteuid());
	snprintf(bprefix, sizeof(bprefix), "weft-bell.%u.",
		 (unsigned)geteuid());
	dir = opendir("/dev/shm");
	if (!dir)
		FAIL("opendir /dev/shm");
	while ((d = readdir(dir))) {
		const char *nm = d->d_name;
		bool stale = false;

		if (!strncmp(nm, nprefix, strlen(nprefix))) {
			stale = ours(p, strtol(nm + strlen(nprefix), NULL, 10));
		} else if (!strncmp(nm, bprefix, strlen(bprefix))) {
			stale = !strncmp(nm + strlen(bprefix), p->node,
					 strlen(p->node));
		} else if (!strncmp(nm, rprefix, strlen(rprefix))) {
			struct shm_region_hdr *h;
			int fd;

			stale = !strncmp(nm + strlen(rprefix), p->node,
					 strlen(p->node));
			snprintf(path, sizeof(path), "/dev/shm/%s", nm);
			fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
			if (fd < 0)
				continue;
			h = mmap(NULL, sizeof(*h), PROT_READ, MAP_SHARED, fd,
				 0);
			close(fd);
			if (h != MAP_FAILED) {
				stale |= h->magic == SHM_MAGIC &&
					 ours(p, h->pid);
				munmap(h, sizeof(*h));
			}
		}
		if (stale) {
			fprintf(stderr, "kill_cycles: stale: /dev/shm/%s\n",
				nm);
			n++;
		}
	}
	closedir(dir);
	return n;
}

/* A last child opens an endpoint (its sweep runs) and closes it. */
static void clean_child(struct parent *p)
{
	uint64_t t0 = now_ms();
	int rfd, status;
	pid_t pid = spawn(p, &rfd, true);

	p->pids[p->cycle] = pid;
	for (;;) {
		pid_t w = waitpid(pid, &status, WNOHANG);

		if (w == pid)
			break;
		progress(p);
		if (now_ms() - t0 > WAIT_MS) {
			kill(pid, SIGKILL);
			FAIL("the last child did not finish");
		}
	}
	close(rfd);
	if (!WIFEXITED(status) || WEXITSTATUS(status))
		FAIL("the last child ended with status 0x%x", status);
	while (p->reply_busy)
		progress(p);
	if (p->child_in_av)
		CHECK(fi_av_remove(p->f.av, &p->child_addr, 1, 0));
	p->child_in_av = false;
}

int main(int argc, char **argv)
{
	struct parent p = {0};
	unsigned int seed;
	uint64_t t0;
	uint32_t n, i;
	bool last = true;
	char pnode[64];
	int ret;

	if (argc == 7 && !strcmp(argv[1], "-c")) {
		if (!strcmp(argv[6], "clean")) {
			struct fix f;

			/* Opening sweeps; then it closes and exits. */
			if (fix_open(&f, argv[2], argv[5]))
				return 1;
			fix_close(&f);
			return 0;
		}
		return child_main(argv[2], argv[3],
				  (uint32_t)strtoul(argv[4], NULL, 10),
				  argv[5]);
	}
	if (argc < 3) {
		fprintf(stderr, "usage: kill_cycles PROV N [SEED]\n");
		return 2;
	}
	p.prov = argv[1];
	p.self = "/proc/self/exe";
	n = (uint32_t)strtoul(argv[2], NULL, 10);
	seed = argc > 3 ? (unsigned int)strtoul(argv[3], NULL, 0)
			: (unsigned int)(now_ms() ^ (uint64_t)getpid());
	snprintf(p.node, sizeof(p.node), "kc%d", (int)getpid());
	snprintf(pnode, sizeof(pnode), "kp%d", (int)getpid());
	ret = fix_open(&p.f, p.prov, pnode);
	if (ret) {
		printf("kill_cycles: no %s provider: %s\n", p.prov,
		       fi_strerror(-ret));
		return 77;
	}
	for (i = 0; i < p.f.namelen; i++)
		sprintf(p.hexname + 2 * i, "%02x", p.f.name[i]);
	p.pids = calloc(n + 1, sizeof(*p.pids));
	for (i = 0; i < NTRAFFIC; i++) {
		p.traffic[i] = malloc(TRAFFIC_MAX);
		post_traffic(&p, i);
	}
	for (i = 0; i < NHELLO; i++)
		post_hello(&p, i);
	printf("kill_cycles: %s, %u cycles, seed %u (kill_cycles %s %u %u "
	       "replays it)\n",
	       p.prov, n, seed, p.prov, n, seed);
	fflush(stdout);
	t0 = now_ms();
	for (p.cycle = 0; p.cycle < n; p.cycle++)
		last = cycle_one(&p, &seed, !last);
	/* KILL_CYCLES_NO_SWEEP: the check of the checker, which must then
	 * find what the last dead child left. */
	if (!getenv("KILL_CYCLES_NO_SWEEP"))
		clean_child(&p);
	ret = stale_files(&p);
	printf("kill_cycles: %s: %u cycles in %.1f s: %lu killed after their "
	       "exchange, %lu before it; %lu messages from children "
	       "verified, %lu cut by the death of their sender; %lu replies "
	       "ended in error; %d stale file(s)\n",
	       p.prov, n, (double)(now_ms() - t0) / 1000, p.nexchanged,
	       p.nearly, p.ntraffic, p.nrecv_err, p.nreply_err, ret);
	fflush(stdout);
	fix_close(&p.f);
	for (i = 0; i < NTRAFFIC; i++)
		free(p.traffic[i]);
	free(p.pids);
	return ret ? 1 : 0;
}
