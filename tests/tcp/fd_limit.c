/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * An RDM endpoint with no file descriptor left refuses new peers and
 * serves the ones it has.
 *
 * The target (the parent) enables its endpoint, then lowers its
 * RLIMIT_NOFILE so that only ROOM more descriptors can be opened.  A
 * child opens NPEERS endpoints (more than ROOM), and each sends one tagged
 * message to the target, then, a while later, a second one.  A sender's
 * first message follows its HELLO without waiting for the answer (sends
 * complete without the target's progress), so a refused peer's send may
 * be reported sent and never arrive; one after the refusal came fails
 * with FI_EMFILE (a CQ error entry, or fi_tsend's own return), and no
 * send may fail otherwise.  Some sends must fail so; the target must
 * receive both messages of each peer it took (some), and nothing of the
 * others.  Then the child runs out of descriptors itself: a send from an
 * endpoint of its that has no connection yet fails with FI_EMFILE, and
 * the peers already connected send a third message, which arrives.  The
 * target's log line naming the limit is checked by fd-limit.sh.
 *
 * Usage: fd_limit.  Exit 0 pass, 77 without tcp, 1 fail.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
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
#include <rdma/fi_tagged.h>

#include "tcp_fix.h"

#define NPEERS 24
#define ROOM 6
#define ROUND2 0x100u
#define ROUND3 0x200u
#define WAIT_S 20

struct report {
	int32_t ok, emfile, other;
	int32_t own_emfile; /* the child's own limit gave FI_EMFILE */
	uint32_t okmask;
};

static struct fi_info *info;
static struct fid_fabric *fabric;
static struct fid_domain *domain;

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void open_domain(void)
{
	struct fi_info *hints = fi_allocinfo();
	int ret;

	hints->ep_attr->type = FI_EP_RDM;
	hints->caps = FI_TAGGED;
	hints->fabric_attr->prov_name = strdup("tcp");
	ret = fi_getinfo(FI_VERSION(1, 17), "127.0.0.1", NULL, FI_SOURCE,
			 hints, &info);
	fi_freeinfo(hints);
	if (ret == -FI_ENODATA) {
		printf("SKIP: no tcp RDM endpoint\n");
		exit(77);
	}
	CHECK(ret);
	CHECK(fi_fabric(info->fabric_attr, &fabric, NULL));
	CHECK(fi_domain(fabric, info, &domain, NULL));
}

static struct fid_ep *open_ep(struct fid_cq *cq, struct fid_av *av)
{
	struct fid_ep *ep;

	CHECK(fi_endpoint(domain, info, &ep, NULL));
	CHECK(fi_ep_bind(ep, &av->fid, 0));
	CHECK(fi_ep_bind(ep, &cq->fid, FI_RECV | FI_TRANSMIT));
	CHECK(fi_enable(ep));
	return ep;
}

static void open_cq_av(struct fid_cq **cq, struct fid_av **av)
{
	struct fi_cq_attr ca = { .format = FI_CQ_FORMAT_TAGGED, .size = 256 };
	struct fi_av_attr aa = { .type = FI_AV_TABLE };

	CHECK(fi_cq_open(domain, &ca, cq, NULL));
	CHECK(fi_av_open(domain, &aa, av, NULL));
}

/* The child's sends of one round from the endpoints in mask; each
 * endpoint's result in res (0, or the positive error). */
static void send_round(struct fid_ep **ep, struct fid_cq *cq, fi_addr_t to,
		       uint32_t mask, uint32_t tagbit, int *res)
{
	static uint32_t payload[NPEERS];
	struct fi_context ctx[NPEERS];
	int pending = 0;
	double end = now_s() + WAIT_S;

	for (int i = 0; i < NPEERS; i++) {
		ssize_t r;

		if (!(mask & (1u << i)))
			continue;
		payload[i] = (uint32_t)i | tagbit;
		do {
			r = fi_tsend(ep[i], &payload[i], sizeof(payload[i]),
				     NULL, to, payload[i], &ctx[i]);
			if (r == -FI_EAGAIN) {
				struct fi_cq_tagged_entry e;

				if (fi_cq_read(cq, &e, 1) == 1) {
					res[(struct fi_context *)e.op_context -
					    ctx] = 0;
					pending--;
				}
			}
		} while (r == -FI_EAGAIN && now_s() < end);
		if (r) {
			res[i] = (int)-r;
			continue;
		}
		res[i] = -1;
		pending++;
	}
	while (pending > 0 && now_s() < end) {
		struct fi_cq_tagged_entry e;
		struct fi_cq_err_entry err = { 0 };
		ssize_t r = fi_cq_read(cq, &e, 1);

		if (r == 1) {
			res[(struct fi_context *)e.op_context - ctx] = 0;
			pending--;
		} else if (r == -FI_EAVAIL && fi_cq_readerr(cq, &err, 0) == 1) {
			res[(struct fi_context *)err.op_context - ctx] =
				err.err ? err.err : FI_EOTHER;
			pending--;
		} else if (r != -FI_EAGAIN) {
			FAIL("child: fi_cq_read: %zd", r);
		}
	}
	if (pending > 0)
		FAIL("child: %d sends neither completed nor failed in %d s",
		     pending, WAIT_S);
}

static int fd_top(void);

/* No descriptor left in this process: fill every free number below the
 * highest open one, and make that the limit. */
static void fds_exhaust(void)
{
	struct rlimit rl;
	int top = fd_top(), fd;

	while ((fd = open("/dev/null", O_RDONLY)) >= 0 && fd < top)
		;
	if (fd >= 0)
		close(fd);
	if (getrlimit(RLIMIT_NOFILE, &rl))
		FAIL("getrlimit");
	rl.rlim_cur = (rlim_t)top;
	if (setrlimit(RLIMIT_NOFILE, &rl))
		FAIL("setrlimit");
}

/* One send from ep that must fail with FI_EMFILE, at once or in the CQ. */
static bool send_emfile(struct fid_ep *ep, struct fid_cq *cq, fi_addr_t to)
{
	static uint32_t v = 0xff | ROUND3;
	struct fi_context ctx;
	double end = now_s() + WAIT_S;
	ssize_t r;

	r = fi_tsend(ep, &v, sizeof(v), NULL, to, v, &ctx);
	if (r)
		return r == -FI_EMFILE;
	while (now_s() < end) {
		struct fi_cq_tagged_entry e;
		struct fi_cq_err_entry err = { 0 };

		r = fi_cq_read(cq, &e, 1);
		if (r == 1)
			return false;
		if (r == -FI_EAVAIL && fi_cq_readerr(cq, &err, 0) == 1)
			return err.err == FI_EMFILE;
	}
	return false;
}

static int child(int rfd, int wfd)
{
	struct fid_ep *ep[NPEERS], *lone;
	struct fid_cq *cq;
	struct fid_av *av;
	char name[256];
	size_t len;
	fi_addr_t to;
	int res[NPEERS];
	struct report rep = { 0 };
	char go;

	open_domain();
	open_cq_av(&cq, &av);
	for (int i = 0; i < NPEERS; i++)
		ep[i] = open_ep(cq, av);
	lone = open_ep(cq, av);
	if (read(rfd, &len, sizeof(len)) != sizeof(len) || len > sizeof(name) ||
	    read(rfd, name, len) != (ssize_t)len)
		FAIL("child: no address from the target");
	if (fi_av_insert(av, name, 1, &to, 0, NULL) != 1)
		FAIL("child: fi_av_insert");

	send_round(ep, cq, to, (1u << NPEERS) - 1, 0, res);
	/* (A reset may overtake the refusal's answer on its way.) */
	for (int i = 0; i < NPEERS; i++)
		if (res[i] && res[i] != FI_EMFILE && res[i] != FI_ECONNRESET) {
			fprintf(stderr, "child: peer %d, first send: %s\n", i,
				fi_strerror(res[i]));
			rep.other++;
		} else if (res[i] == FI_EMFILE) {
			rep.emfile++;
		}
	/* Progress a while: the refusals come back meanwhile (and stand
	 * for a second, TCP_REFUSED_MS). */
	for (double end = now_s() + 0.3; now_s() < end;) {
		struct fi_cq_tagged_entry e;

		(void)fi_cq_read(cq, &e, 1);
	}
	send_round(ep, cq, to, (1u << NPEERS) - 1, ROUND2, res);
	for (int i = 0; i < NPEERS; i++) {
		if (res[i] == 0) {
			rep.ok++;
			rep.okmask |= 1u << i;
		} else if (res[i] == FI_EMFILE) {
			rep.emfile++;
		} else {
			fprintf(stderr, "child: peer %d, second send: %s\n", i,
				fi_strerror(res[i]));
			rep.other++;
		}
	}
	/* Now this process has no descriptor left. */
	fds_exhaust();
	rep.own_emfile = send_emfile(lone, cq, to);
	send_round(ep, cq, to, rep.okmask, ROUND3, res);
	for (int i = 0; i < NPEERS; i++)
		if ((rep.okmask & (1u << i)) && res[i] && res[i] != FI_EMFILE) {
			fprintf(stderr, "child: peer %d, third send: %s\n", i,
				fi_strerror(res[i]));
			rep.other++;
		}
	if (write(wfd, &rep, sizeof(rep)) != sizeof(rep))
		return 1;
	/* Stay until the target has read everything. */
	(void)!read(rfd, &go, 1);
	for (int i = 0; i < NPEERS; i++)
		fi_close(&ep[i]->fid);
	fi_close(&lone->fid);
	fi_close(&cq->fid);
	fi_close(&av->fid);
	fi_close(&domain->fid);
	fi_close(&fabric->fid);
	fi_freeinfo(info);
	return 0;
}

/* The highest descriptor open in this process, plus one. */
static int fd_top(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *de;
	int top = 0;

	if (!d)
		FAIL("opendir /proc/self/fd");
	while ((de = readdir(d)))
		if (atoi(de->d_name) + 1 > top)
			top = atoi(de->d_name) + 1;
	closedir(d);
	return top;
}

int main(void)
{
	int to_child[2], to_parent[2];
	struct fid_ep *ep;
	struct fid_cq *cq;
	struct fid_av *av;
	char name[256];
	size_t len = sizeof(name);
	uint32_t buf[3 * NPEERS];
	struct fi_context ctx[3 * NPEERS];
	uint32_t got1 = 0, got2 = 0, got3 = 0;
	struct report rep;
	struct rlimit rl;
	bool have_rep = false;
	double end, quiet = 0;
	pid_t pid;
	int st;

	/* Descriptors inherited from the caller would leave holes below
	 * the limit. */
	closefrom(3);
	setenv("FI_TCP_SHM", "0", 1); /* every peer over TCP */
	if (pipe(to_child) || pipe(to_parent))
		FAIL("pipe");
	pid = fork();
	if (pid < 0)
		FAIL("fork");
	if (pid == 0) {
		close(to_child[1]);
		close(to_parent[0]);
		exit(child(to_child[0], to_parent[1]));
	}
	close(to_child[0]);
	close(to_parent[1]);

	open_domain();
	open_cq_av(&cq, &av);
	ep = open_ep(cq, av);
	CHECK(fi_getname(&ep->fid, name, &len));
	for (int i = 0; i < 3 * NPEERS; i++)
		CHECK(fi_trecv(ep, &buf[i], sizeof(buf[i]), NULL,
			       FI_ADDR_UNSPEC, 0, ~0ULL, &ctx[i]));

	/* Room for ROOM more descriptors, no more. */
	if (getrlimit(RLIMIT_NOFILE, &rl))
		FAIL("getrlimit");
	rl.rlim_cur = (rlim_t)(fd_top() + ROOM);
	if (setrlimit(RLIMIT_NOFILE, &rl))
		FAIL("setrlimit");
	if (write(to_child[1], &len, sizeof(len)) != sizeof(len) ||
	    write(to_child[1], name, len) != (ssize_t)len)
		FAIL("write to the child");

	end = now_s() + 2 * WAIT_S + 5;
	while (now_s() < end) {
		struct fi_cq_tagged_entry e;
		struct pollfd pfd = { .fd = to_parent[0], .events = POLLIN };
		ssize_t r = fi_cq_read(cq, &e, 1);

		if (r == 1) {
			uint32_t v = *(uint32_t *)e.buf;
			uint32_t bit = 1u << (v & 0xff);

			if ((v & 0xff) >= NPEERS || v != e.tag)
				FAIL("target: a message it cannot place: %#x",
				     v);
			uint32_t *got = v & ROUND3 ? &got3 :
					v & ROUND2 ? &got2 : &got1;

			if (*got & bit)
				FAIL("target: message %#x twice", v);
			*got |= bit;
		} else if (r != -FI_EAGAIN) {
			FAIL("target: fi_cq_read: %zd (%s)", r,
			     fi_strerror((int)-r));
		}
		if (!have_rep && poll(&pfd, 1, 0) == 1) {
			if (read(to_parent[0], &rep, sizeof(rep)) !=
			    sizeof(rep))
				FAIL("the child failed");
			have_rep = true;
		}
		/* Done when every peer it took sent both; a refused peer's
		 * send reported sent before its refusal came never arrives. */
		if (have_rep && got1 == rep.okmask && got2 == rep.okmask &&
		    got3 == rep.okmask)
			break;
		if (have_rep && got1 && got1 == got2 && got1 == got3) {
			if (!quiet)
				quiet = now_s() + 2;
			if (now_s() > quiet)
				break;
		}
	}
	/* Let the child close. */
	(void)!write(to_child[1], "x", 1);
	if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) ||
	    WEXITSTATUS(st))
		FAIL("the child failed");
	if (!have_rep)
		FAIL("no report from the child");
	printf("%d peers: second sends completed %d; sends failed with "
	       "FI_EMFILE %d, otherwise %d\n",
	       NPEERS, rep.ok, rep.emfile, rep.other);
	if (rep.other)
		FAIL("sends failed otherwise than with FI_EMFILE");
	if (!rep.emfile)
		FAIL("no send failed with FI_EMFILE");
	if (!got1 || got1 != got2 || got1 != got3 || (got1 & ~rep.okmask))
		FAIL("target: got first messages %#x, second ones %#x, third "
		     "ones %#x; the peers whose second send completed are %#x",
		     got1, got2, got3, rep.okmask);
	if (!rep.own_emfile)
		FAIL("a send needing a descriptor the child did not have did "
		     "not fail with FI_EMFILE");
	printf("the target took %d peers\n", __builtin_popcount(got1));
	fi_close(&ep->fid);
	fi_close(&cq->fid);
	fi_close(&av->fid);
	fi_close(&domain->fid);
	fi_close(&fabric->fid);
	fi_freeinfo(info);
	printf("PASS\n");
	return 0;
}
