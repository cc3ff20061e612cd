/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * shm: unexpected messages are bounded, and none is lost.
 *
 * A sender process injects 100000 tagged messages of SIZE bytes before the
 * receiver posts any receive.  The receiver only drives progress, with
 * FI_SHM_UNEXP_MAX set to 1 MiB, until the sender reports that it is held
 * back (or done); then it receives every message in order and checks each
 * byte.  Throughout, the receiver's resident memory may grow by no more
 * than the bound plus a fixed allowance for its own pools: without a bound
 * it would hold every message.  Before it posts a receive, the receiver
 * also sends a 1 MiB message to the sender and waits for its completion:
 * the answers that completion needs must get through while the receiver
 * holds its senders back.  And it receives one message from a second
 * sender process before any of the first one's: holding back a sender
 * that floods must not hold back the others.
 *
 * Uses only the public API.  Usage: unexp_bound SIZE (receiver), or
 * unexp_bound -s RECEIVER SIZE (the sender, started by the receiver, which
 * reports on fd 3).  Exit 0 pass, 77 no shm, 1 fail.
 */
#include <fcntl.h>
#include <stdbool.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_tagged.h>

#include "shm_fix.h"

#define NMSG 100000
#define LIMIT (1 << 20)
/* Pools, CQ and allocator slack beside the bound. */
#define ALLOWANCE (8 << 20)
/* Consecutive -FI_EAGAIN that mean the receiver holds the sender back. */
#define BLOCKED_STREAK 200000L
#define WINDOW 256
#define REPORT_FD 3
#define BIG (1 << 20)
#define BIG_TAG (1ULL << 40)
#define OTHER_TAG (1ULL << 41)

/* The endpoint every process of this test opens. */
static int open_fix(struct shm_fix *f)
{
	return shm_fix_open(f, 0, 4 * WINDOW, 4, NULL);
}

static void fill(uint8_t *buf, size_t len, uint32_t i)
{
	size_t j;

	for (j = 0; j < len; j++)
		buf[j] = (uint8_t)(i * 2654435761u >> 13) + (uint8_t)j;
}

static void report(char c)
{
	if (write(REPORT_FD, &c, 1) != 1)
		exit(4);
}

/* The second sender: one message, then it closes and exits. */
static int other_sender(const char *receiver, size_t size)
{
	struct fi_cq_tagged_entry e;
	uint8_t *buf = malloc(size);
	fi_addr_t dest;
	struct shm_fix f;
	int ret;

	CHECK(open_fix(&f));
	if (fi_av_insert(f.av, receiver, 1, &dest, 0, NULL) != 1)
		return 1;
	fill(buf, size, 424242);
	while ((ret = (int)fi_tinject(f.ep, buf, size, dest, OTHER_TAG)) ==
	       -FI_EAGAIN)
		fi_cq_read(f.cq, &e, 1);
	CHECK(ret);
	shm_fix_close(&f);
	free(buf);
	return 0;
}

static int sender(const char *receiver, size_t size)
{
	struct fi_cq_tagged_entry e;
	uint8_t *buf = malloc(size), *big = malloc(BIG), *want = malloc(BIG);
	char name[FI_NAME_MAX];
	bool blocked = false;
	int got_big = 0;
	fi_addr_t dest;
	struct shm_fix f;
	long streak;
	uint32_t i, n;
	size_t len = sizeof(name);
	int ret;

	CHECK(open_fix(&f));
	CHECK(fi_getname(&f.ep->fid, name, &len));
	n = (uint32_t)len;
	if (write(REPORT_FD, &n, sizeof(n)) != sizeof(n) ||
	    write(REPORT_FD, name, len) != (ssize_t)len)
		return 4;
	if (fi_av_insert(f.av, receiver, 1, &dest, 0, NULL) != 1)
		return 1;
	CHECK(fi_trecv(f.ep, big, BIG, NULL, FI_ADDR_UNSPEC, BIG_TAG, 0, NULL));
	for (i = 0; i < NMSG; i++) {
		fill(buf, size, i);
		streak = 0;
		while ((ret = (int)fi_tinject(f.ep, buf, size, dest, i)) ==
		       -FI_EAGAIN) {
			if (fi_cq_read(f.cq, &e, 1) == 1)
				got_big++;
			if (++streak == BLOCKED_STREAK && !blocked) {
				blocked = true;
				report('B');
			}
		}
		CHECK(ret);
	}
	report('D');
	for (streak = 0; !got_big && streak < 1000000000L; streak++)
		if (fi_cq_read(f.cq, &e, 1) == 1)
			got_big++;
	fill(want, BIG, 7);
	if (got_big != 1 || memcmp(big, want, BIG))
		return 5;
	shm_fix_close(&f);
	free(buf);
	free(big);
	free(want);
	return 0;
}

/* Resident bytes of this process. */
static size_t rss(void)
{
	unsigned long size, res = 0;
	FILE *fp = fopen("/proc/self/statm", "r");

	if (fp) {
		if (fscanf(fp, "%lu %lu", &size, &res) != 2)
			res = 0;
		fclose(fp);
	}
	return res * (size_t)sysconf(_SC_PAGESIZE);
}

struct rx {
	struct shm_fix f;
	pid_t child, other;
	size_t size, rss0, peak;
	bool no_rss; /* resident memory is not watched (sanitizers) */
	uint8_t *bufs;
	uint8_t *want;
	uint32_t posted, got;
	long polls;
};

static void fail(struct rx *r, const char *what)
{
	fprintf(stderr, "%s\n", what);
	kill(r->child, SIGKILL);
	waitpid(r->child, NULL, 0);
	if (r->other > 0 && waitpid(r->other, NULL, WNOHANG) == 0) {
		kill(r->other, SIGKILL);
		waitpid(r->other, NULL, 0);
	}
	exit(1);
}

/* Drive progress, watch memory, check completions in order. */
static void poll_rx(struct rx *r)
{
	struct fi_cq_tagged_entry e;
	uint8_t *b;
	size_t now;
	int ret;

	/* Under AddressSanitizer freed memory stays in its quarantine and
	 * every allocation grows by its redzones: resident memory says
	 * nothing about the bound there, the rest of the test still runs. */
	if (!r->no_rss && !(++r->polls & 1023)) {
		now = rss();
		if (now > r->peak)
			r->peak = now;
		if (now > r->rss0 + LIMIT + ALLOWANCE) {
			fprintf(stderr, "after %u of %u messages received, "
				"resident memory grew by %zu bytes (bound %d)\n",
				r->got, NMSG, now - r->rss0, LIMIT);
			fail(r, "unexpected messages are not bounded");
		}
	}
	ret = (int)fi_cq_read(r->f.cq, &e, 1);
	if (ret == -FI_EAGAIN)
		return;
	if (ret != 1)
		fail(r, "fi_cq_read failed");
	b = r->bufs + (size_t)(r->got % WINDOW) * r->size;
	if (e.tag != r->got || e.len != r->size || e.buf != b) {
		fprintf(stderr, "completion %u: tag %llu len %zu\n", r->got,
			(unsigned long long)e.tag, e.len);
		fail(r, "messages out of order or resized");
	}
	fill(r->want, r->size, r->got);
	if (memcmp(b, r->want, r->size))
		fail(r, "payload differs");
	r->got++;
}

int main(int argc, char **argv)
{
	char name[FI_NAME_MAX], sname[FI_NAME_MAX], self[4096], lim[32], c = 0;
	struct fi_cq_tagged_entry e;
	struct pollfd pfd;
	int pipefd[2], ret, status;
	struct rx r = { 0 };
	fi_addr_t peer;
	pid_t other;
	uint8_t *big;
	uint32_t n;
	size_t len;

	if (argc == 4 && !strcmp(argv[1], "-s")) {
		alarm(120);
		return sender(argv[2], strtoul(argv[3], NULL, 0));
	}
	if (argc == 4 && !strcmp(argv[1], "-o")) {
		alarm(120);
		return other_sender(argv[2], strtoul(argv[3], NULL, 0));
	}
	alarm(150);
	ret = (int)readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (ret <= 0)
		return 1;
	self[ret] = '\0';
	snprintf(lim, sizeof(lim), "%d", LIMIT);
	setenv("FI_SHM_UNEXP_MAX", lim, 1);
	r.size = argc > 1 ? strtoul(argv[1], NULL, 0) : 64;
	ret = open_fix(&r.f);
	if (ret) {
		fprintf(stderr, "no shm provider: %s\n", fi_strerror(-ret));
		return 77;
	}
	len = sizeof(name);
	CHECK(fi_getname(&r.f.ep->fid, name, &len));
	r.bufs = malloc(r.size * WINDOW);
	r.want = malloc(r.size);
	memset(r.bufs, 0, r.size * WINDOW);
	big = malloc(BIG);
	fill(big, BIG, 7);
	r.rss0 = rss();
	r.no_rss = getenv("WEFT_SANITIZERS") &&
		   !strcmp(getenv("WEFT_SANITIZERS"), "yes");
	if (r.no_rss)
		printf("resident memory not watched: built with sanitizers\n");

	if (pipe(pipefd))
		return 1;
	r.child = fork();
	if (!r.child) {
		char ssize[32];

		close(pipefd[0]);
		if (dup2(pipefd[1], REPORT_FD) < 0)
			_exit(127);
		snprintf(ssize, sizeof(ssize), "%zu", r.size);
		execl(self, "unexp_bound", "-s", name, ssize, (char *)NULL);
		_exit(127);
	}
	close(pipefd[1]);
	if (read(pipefd[0], &n, sizeof(n)) != sizeof(n) || n > sizeof(sname) ||
	    read(pipefd[0], sname, n) != n ||
	    fi_av_insert(r.f.av, sname, 1, &peer, 0, NULL) != 1)
		fail(&r, "no name from the sender");
	fcntl(pipefd[0], F_SETFL, O_NONBLOCK);

	/* No receive posted: everything that arrives is unexpected. */
	pfd.fd = pipefd[0];
	pfd.events = POLLIN;
	while (!c) {
		poll_rx(&r);
		if (poll(&pfd, 1, 0) == 1 && read(pipefd[0], &c, 1) != 1)
			fail(&r, "sender ended before sending");
	}
	/* Our own transfer completes while our senders are held back. */
	CHECK(fi_tsend(r.f.ep, big, BIG, NULL, peer, BIG_TAG, big));
	do {
		ret = (int)fi_cq_read(r.f.cq, &e, 1);
		if (ret != -FI_EAGAIN && (ret != 1 || e.op_context != big))
			fail(&r, "the 1 MiB send failed");
	} while (ret != 1);
	/* A second sender is not held back by the first: its message is
	 * received before any of the first one's. */
	r.other = other = fork();
	if (!other) {
		char ssize[32];

		snprintf(ssize, sizeof(ssize), "%zu", r.size);
		execl(self, "unexp_bound", "-o", name, ssize, (char *)NULL);
		_exit(127);
	}
	CHECK(fi_trecv(r.f.ep, r.want, r.size, NULL, FI_ADDR_UNSPEC, OTHER_TAG,
		       0, r.want));
	do {
		ret = (int)fi_cq_read(r.f.cq, &e, 1);
		if (ret != -FI_EAGAIN && (ret != 1 || e.op_context != r.want ||
					  e.len != r.size))
			fail(&r, "the second sender's message went wrong");
	} while (ret != 1);
	fill(big, r.size, 424242);
	if (memcmp(r.want, big, r.size))
		fail(&r, "the second sender's message differs");
	if (waitpid(other, &status, 0) != other || !WIFEXITED(status) ||
	    WEXITSTATUS(status))
		fail(&r, "the second sender failed");
	r.other = 0;
	/* Receive them all, in order, a window of receives at a time. */
	while (r.got < NMSG) {
		while (r.posted < NMSG && r.posted - r.got < WINDOW) {
			ret = (int)fi_trecv(r.f.ep,
					    r.bufs + (size_t)(r.posted % WINDOW) *
							     r.size,
					    r.size, NULL, FI_ADDR_UNSPEC, 0,
					    ~0ULL, NULL);
			if (ret == -FI_EAGAIN)
				break;
			if (ret)
				fail(&r, "fi_trecv failed");
			r.posted++;
		}
		poll_rx(&r);
	}
	if (waitpid(r.child, &status, 0) != r.child || !WIFEXITED(status) ||
	    WEXITSTATUS(status)) {
		fprintf(stderr, "sender ended with status %#x\n", status);
		return 1;
	}
	printf("%d unexpected messages of %zu bytes received in order, "
	       "intact; sender %s\n", NMSG, r.size,
	       c == 'B' ? "held back" : "never held back");
	if (!r.no_rss)
		printf("resident memory grew by at most %zu KiB (bound %d "
		       "KiB)\n", (r.peak > r.rss0 ? r.peak - r.rss0 : 0) >> 10,
		       LIMIT >> 10);
	shm_fix_close(&r.f);
	free(big);
	free(r.bufs);
	free(r.want);
	return 0;
}
