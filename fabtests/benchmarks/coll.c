/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * fi_coll: the collectives of fi_collective(3) among -n processes that
 * may run on different hosts, each result checked, each operation's
 * latency reported.
 *
 * Every rank is started on its own: fi_coll -n N -r R [-s ADDR] ... .
 * Rank 0 listens on a TCP socket for the job's out-of-band exchange
 * (-O HOST -P PORT; port 0 picks one and prints "listening on port N" on
 * stderr, as the other fabtests servers do); the others connect to it,
 * send their endpoint names and get everyone's back in rank order.  Each
 * rank opens an RDM endpoint with FI_COLLECTIVE (-p PROVIDER; -s ADDR: its
 * source address, FI_SOURCE), an EQ, a CQ and an FI_AV_TABLE AV, inserts
 * the names in rank order, makes an AV set of the whole AV (stride 1)
 * and joins it, waiting for FI_JOIN_COMPLETE on the EQ.  Then -I
 * iterations of: fi_barrier; fi_broadcast from rank i % n; fi_allreduce
 * FI_SUM of FI_INT64 and FI_MAX of FI_DOUBLE; fi_allgather; fi_alltoall;
 * fi_reduce_scatter FI_SUM; fi_scatter and fi_gather from rank i % n;
 * -S elements each (a member's block).  Every element of every result is
 * checked.  Rank 0 prints the mean latency of each operation in
 * microseconds (what the rank saw from the post to its completion).
 *
 * Exit status: 0 passed, 77 provider or FI_COLLECTIVE missing, 1 failed
 * (a wrong element, an error completion, a wait past -T seconds), 2
 * usage.  Only the public API is used.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_collective.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>

#define NAME_LEN 256
#define MAX_RANKS 256

enum op { OP_BARRIER, OP_BCAST, OP_SUM, OP_MAX, OP_ALLGATHER, OP_ALLTOALL,
	  OP_REDSCAT, OP_SCATTER, OP_GATHER, NOPS };

static const char *const op_name[NOPS] = {
	"barrier", "broadcast", "allreduce_sum", "allreduce_max", "allgather",
	"alltoall", "reduce_scatter", "scatter", "gather",
};

static struct {
	const char *prov, *src, *oob_host;
	int port, n, rank, iters, timeout;
	size_t count;
} opt = { .port = 0, .n = 0, .rank = -1, .iters = 100, .timeout = 30,
	  .count = 4 };

static struct {
	struct fi_info *info;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_eq *eq;
	struct fid_cq *cq;
	struct fid_av *av;
	struct fid_ep *ep;
	struct fid_av_set *set;
	struct fid_mc *mc;
	fi_addr_t coll;
	double lat[NOPS];
	long runs[NOPS];
} c;

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int fail(const char *what, long ret)
{
	fprintf(stderr, "rank %d: %s: %ld (%s)\n", opt.rank, what, ret,
		fi_strerror((int)-ret));
	return ret == -FI_ENODATA ? 77 : 1;
}

/* ---- the out-of-band exchange --------------------------------------------- */

static int io_all(int fd, void *buf, size_t len, bool out)
{
	struct pollfd p = { .fd = fd, .events = out ? POLLOUT : POLLIN };
	char *b = buf;
	ssize_t k;

	while (len) {
		if (poll(&p, 1, opt.timeout * 1000) <= 0)
			return -1;
		k = out ? send(fd, b, len, MSG_NOSIGNAL) : recv(fd, b, len, 0);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return -1;
		b += k;
		len -= (size_t)k;
	}
	return 0;
}

/* Rank 0: every other rank's name, by rank; then all of them to each. */
static int oob_root(char *names)
{
	struct sockaddr_storage ss;
	struct addrinfo hints = { .ai_family = AF_INET,
				  .ai_socktype = SOCK_STREAM,
				  .ai_flags = AI_PASSIVE }, *ai;
	socklen_t sl = sizeof(ss);
	int fds[MAX_RANKS], lfd, one = 1, i, r;
	char port[16];
	uint32_t who;

	snprintf(port, sizeof(port), "%d", opt.port);
	if (getaddrinfo(opt.oob_host, port, &hints, &ai))
		return -1;
	lfd = socket(ai->ai_family, SOCK_STREAM, 0);
	setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (lfd < 0 || bind(lfd, ai->ai_addr, ai->ai_addrlen) ||
	    listen(lfd, MAX_RANKS) ||
	    getsockname(lfd, (struct sockaddr *)&ss, &sl)) {
		freeaddrinfo(ai);
		return -1;
	}
	freeaddrinfo(ai);
	fprintf(stderr, "listening on port %d\n",
		ntohs(((struct sockaddr_in *)&ss)->sin_port));
	for (i = 1; i < opt.n; i++) {
		struct pollfd p = { .fd = lfd, .events = POLLIN };
		int fd;

		if (poll(&p, 1, opt.timeout * 1000) <= 0)
			return -1;
		fd = accept(lfd, NULL, NULL);
		if (fd < 0 || io_all(fd, &who, sizeof(who), false) ||
		    who == 0 || who >= (uint32_t)opt.n ||
		    io_all(fd, names + who * NAME_LEN, NAME_LEN, false))
			return -1;
		fds[who] = fd;
	}
	close(lfd);
	for (r = 1; r < opt.n; r++)
		if (io_all(fds[r], names, (size_t)opt.n * NAME_LEN, true))
			return -1;
	for (r = 1; r < opt.n; r++)
		close(fds[r]);
	return 0;
}

static int oob_member(char *names)
{
	struct addrinfo hints = { .ai_family = AF_INET,
				  .ai_socktype = SOCK_STREAM }, *ai;
	double end = now() + opt.timeout;
	uint32_t me = (uint32_t)opt.rank;
	char port[16];
	int fd = -1;

	snprintf(port, sizeof(port), "%d", opt.port);
	if (getaddrinfo(opt.oob_host, port, &hints, &ai))
		return -1;
	/* Rank 0 may not listen yet. */
	while (now() < end) {
		fd = socket(ai->ai_family, SOCK_STREAM, 0);
		if (fd >= 0 && !connect(fd, ai->ai_addr, ai->ai_addrlen))
			break;
		close(fd);
		fd = -1;
		usleep(50000);
	}
	freeaddrinfo(ai);
	if (fd < 0 || io_all(fd, &me, sizeof(me), true) ||
	    io_all(fd, names + me * NAME_LEN, NAME_LEN, true) ||
	    io_all(fd, names, (size_t)opt.n * NAME_LEN, false))
		return -1;
	close(fd);
	return 0;
}

/* ---- waiting --------------------------------------------------------------- */

static int wait_comp(void *ctx)
{
	struct fi_cq_tagged_entry e;
	double end = now() + opt.timeout;
	ssize_t r;

	while (now() < end) {
		r = fi_cq_read(c.cq, &e, 1);
		if (r == 1) {
			if (e.op_context != ctx || !(e.flags & FI_COLLECTIVE)) {
				fprintf(stderr, "rank %d: a completion for "
					"%p, flags %#llx\n", opt.rank,
					e.op_context,
					(unsigned long long)e.flags);
				return -1;
			}
			return 0;
		}
		if (r == -FI_EAVAIL) {
			struct fi_cq_err_entry ee = { 0 };

			fi_cq_readerr(c.cq, &ee, 0);
			return fail("an error completion", -ee.err);
		}
		if (r != -FI_EAGAIN)
			return fail("fi_cq_read", r);
		sched_yield();
	}
	fprintf(stderr, "rank %d: no completion within %d s\n", opt.rank,
		opt.timeout);
	return -1;
}

static int wait_join(void)
{
	struct fi_eq_entry e;
	double end = now() + opt.timeout;
	uint32_t ev;
	ssize_t r;

	while (now() < end) {
		r = fi_eq_read(c.eq, &ev, &e, sizeof(e), 0);
		if (r == (ssize_t)sizeof(e) && ev == FI_JOIN_COMPLETE &&
		    e.fid == &c.mc->fid)
			return 0;
		if (r != -FI_EAGAIN)
			return fail("fi_eq_read (join)", r < 0 ? r : -FI_EIO);
		sched_yield();
	}
	fprintf(stderr, "rank %d: no FI_JOIN_COMPLETE within %d s\n",
		opt.rank, opt.timeout);
	return -1;
}

/* ---- set-up ----------------------------------------------------------------- */

static int setup(void)
{
	struct fi_info *hints = fi_allocinfo();
	struct fi_cq_attr cqa = { .format = FI_CQ_FORMAT_TAGGED,
				  .size = 1024 };
	struct fi_eq_attr eqa = { .wait_obj = FI_WAIT_UNSPEC };
	struct fi_av_attr ava = { .type = FI_AV_TABLE };
	int ret;

	if (!hints)
		return -FI_ENOMEM;
	hints->ep_attr->type = FI_EP_RDM;
	hints->caps = FI_MSG | FI_COLLECTIVE;
	hints->mode = FI_CONTEXT | FI_CONTEXT2;
	hints->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR |
				      FI_MR_ALLOCATED | FI_MR_PROV_KEY;
	if (opt.prov)
		hints->fabric_attr->prov_name = strdup(opt.prov);
	ret = fi_getinfo(FI_VERSION(1, 17), opt.src, NULL,
			 opt.src ? FI_SOURCE : 0, hints, &c.info);
	fi_freeinfo(hints);
	if (ret)
		return ret;
	ava.count = (size_t)opt.n;
	if ((ret = fi_fabric(c.info->fabric_attr, &c.fabric, NULL)) ||
	    (ret = fi_domain(c.fabric, c.info, &c.domain, NULL)) ||
	    (ret = fi_eq_open(c.fabric, &eqa, &c.eq, NULL)) ||
	    (ret = fi_cq_open(c.domain, &cqa, &c.cq, NULL)) ||
	    (ret = fi_av_open(c.domain, &ava, &c.av, NULL)) ||
	    (ret = fi_endpoint(c.domain, c.info, &c.ep, NULL)) ||
	    (ret = fi_ep_bind(c.ep, &c.av->fid, 0)) ||
	    (ret = fi_ep_bind(c.ep, &c.eq->fid, 0)) ||
	    (ret = fi_ep_bind(c.ep, &c.cq->fid, FI_TRANSMIT | FI_RECV)) ||
	    (ret = fi_enable(c.ep)))
		return ret;
	return 0;
}

static int join(void)
{
	char *names = calloc((size_t)opt.n, NAME_LEN);
	struct fi_av_set_attr sa = { .count = (size_t)opt.n, .start_addr = 0,
				     .end_addr = (fi_addr_t)opt.n - 1,
				     .stride = 1 };
	size_t len = NAME_LEN;
	fi_addr_t a;
	int ret, i;

	if (!names)
		return -FI_ENOMEM;
	ret = fi_getname(&c.ep->fid, names + (size_t)opt.rank * NAME_LEN,
			 &len);
	if (ret)
		return fail("fi_getname", ret);
	if (opt.rank ? oob_member(names) : oob_root(names)) {
		fprintf(stderr, "rank %d: the out-of-band exchange failed\n",
			opt.rank);
		free(names);
		return 1;
	}
	for (i = 0; i < opt.n; i++) {
		ret = fi_av_insert(c.av, names + (size_t)i * NAME_LEN, 1, &a, 0,
				   NULL);
		if (ret != 1 || a != (fi_addr_t)i)
			break;
	}
	free(names);
	if (i < opt.n)
		return fail("fi_av_insert", ret < 0 ? ret : -FI_EIO);
	if ((ret = fi_av_set(c.av, &sa, &c.set, NULL)) ||
	    (ret = fi_av_set_addr(c.set, &a)) ||
	    (ret = fi_join_collective(c.ep, a, c.set, 0, &c.mc, NULL)))
		return fail("fi_av_set / fi_join_collective", ret);
	ret = wait_join();
	c.coll = fi_mc_addr(c.mc);
	return ret;
}

/* ---- the operations --------------------------------------------------------- */

static int64_t val(int rank, int k, size_t i, int it)
{
	return (int64_t)rank * 1000003 + (int64_t)k * 1009 + (int64_t)i +
	       (int64_t)it * 7;
}

#define POST(call)                                                             \
	do {                                                                   \
		ssize_t r_;                                                    \
		while ((r_ = (call)) == -FI_EAGAIN)                            \
			(void)fi_cq_read(c.cq, NULL, 0);                       \
		if (r_)                                                        \
			return fail(#call, r_);                                \
	} while (0)

#define CHECK(cond, ...)                                                       \
	do {                                                                   \
		if (!(cond)) {                                                 \
			fprintf(stderr, "rank %d: ", opt.rank);                \
			fprintf(stderr, __VA_ARGS__);                          \
			fputc('\n', stderr);                                   \
			return 1;                                              \
		}                                                              \
	} while (0)

/* The completion of an operation posted at t0, timed: 0, or 1. */
static int done(enum op o, void *ctx, double t0)
{
	if (wait_comp(ctx))
		return 1;
	c.lat[o] += now() - t0;
	c.runs[o]++;
	return 0;
}

static int iteration(int it, int64_t *a, int64_t *b, double *d, double *e)
{
	int n = opt.n, me = opt.rank, root = it % n, j, k;
	size_t cnt = opt.count, i, nb = cnt * (size_t)n;
	struct fi_context2 ctx;
	double t0;

	t0 = now();
	POST(fi_barrier(c.ep, c.coll, &ctx));
	if (done(OP_BARRIER, &ctx, t0))
		return 1;

	for (i = 0; i < cnt; i++)
		a[i] = me == root ? val(root, 0, i, it) : -1;
	t0 = now();
	POST(fi_broadcast(c.ep, a, cnt, NULL, c.coll, (fi_addr_t)root,
			  FI_INT64, 0, &ctx));
	if (done(OP_BCAST, &ctx, t0))
		return 1;
	for (i = 0; i < cnt; i++)
		CHECK(a[i] == val(root, 0, i, it), "broadcast element %zu", i);

	for (i = 0; i < cnt; i++)
		a[i] = val(me, 1, i, it);
	t0 = now();
	POST(fi_allreduce(c.ep, a, cnt, NULL, b, NULL, c.coll, FI_INT64,
			  FI_SUM, 0, &ctx));
	if (done(OP_SUM, &ctx, t0))
		return 1;
	for (i = 0; i < cnt; i++) {
		int64_t want = 0;

		for (k = 0; k < n; k++)
			want += val(k, 1, i, it);
		CHECK(b[i] == want, "allreduce sum element %zu", i);
	}

	for (i = 0; i < cnt; i++)
		d[i] = (double)((me * 7 + (int)i + it) % (n + 3));
	t0 = now();
	POST(fi_allreduce(c.ep, d, cnt, NULL, e, NULL, c.coll, FI_DOUBLE,
			  FI_MAX, 0, &ctx));
	if (done(OP_MAX, &ctx, t0))
		return 1;
	for (i = 0; i < cnt; i++) {
		double want = 0;

		for (k = 0; k < n; k++)
			if ((double)((k * 7 + (int)i + it) % (n + 3)) > want)
				want = (double)((k * 7 + (int)i + it) % (n + 3));
		CHECK(e[i] == want, "allreduce max element %zu", i);
	}

	for (i = 0; i < cnt; i++)
		a[i] = val(me, 2, i, it);
	t0 = now();
	POST(fi_allgather(c.ep, a, cnt, NULL, b, NULL, c.coll, FI_INT64, 0,
			  &ctx));
	if (done(OP_ALLGATHER, &ctx, t0))
		return 1;
	for (j = 0; j < n; j++)
		for (i = 0; i < cnt; i++)
			CHECK(b[j * cnt + i] == val(j, 2, i, it),
			      "allgather block %d element %zu", j, i);

	for (j = 0; j < n; j++)
		for (i = 0; i < cnt; i++)
			a[j * cnt + i] = val(me, 10 + j, i, it);
	t0 = now();
	POST(fi_alltoall(c.ep, a, cnt, NULL, b, NULL, c.coll, FI_INT64, 0,
			 &ctx));
	if (done(OP_ALLTOALL, &ctx, t0))
		return 1;
	for (j = 0; j < n; j++)
		for (i = 0; i < cnt; i++)
			CHECK(b[j * cnt + i] == val(j, 10 + me, i, it),
			      "alltoall block %d element %zu", j, i);

	for (i = 0; i < nb; i++)
		a[i] = val(me, 3, i, it);
	t0 = now();
	POST(fi_reduce_scatter(c.ep, a, cnt, NULL, b, NULL, c.coll, FI_INT64,
			       FI_SUM, 0, &ctx));
	if (done(OP_REDSCAT, &ctx, t0))
		return 1;
	for (i = 0; i < cnt; i++) {
		int64_t want = 0;

		for (k = 0; k < n; k++)
			want += val(k, 3, (size_t)me * cnt + i, it);
		CHECK(b[i] == want, "reduce_scatter element %zu", i);
	}

	for (i = 0; i < nb; i++)
		a[i] = val(root, 4, i, it);
	t0 = now();
	POST(fi_scatter(c.ep, a, cnt, NULL, b, NULL, c.coll, (fi_addr_t)root,
			FI_INT64, 0, &ctx));
	if (done(OP_SCATTER, &ctx, t0))
		return 1;
	for (i = 0; i < cnt; i++)
		CHECK(b[i] == val(root, 4, (size_t)me * cnt + i, it),
		      "scatter element %zu", i);

	for (i = 0; i < cnt; i++)
		a[i] = val(me, 5, i, it);
	t0 = now();
	POST(fi_gather(c.ep, a, cnt, NULL, b, NULL, c.coll, (fi_addr_t)root,
		       FI_INT64, 0, &ctx));
	if (done(OP_GATHER, &ctx, t0))
		return 1;
	for (j = 0; me == root && j < n; j++)
		for (i = 0; i < cnt; i++)
			CHECK(b[j * cnt + i] == val(j, 5, i, it),
			      "gather block %d element %zu", j, i);
	return 0;
}

static void usage(const char *argv0)
{
	fprintf(stderr,
		"usage: %s -n RANKS -r RANK [-p PROVIDER] [-s SRC_ADDR] "
		"[-O OOB_HOST] [-P OOB_PORT] [-I ITERS] [-S COUNT] "
		"[-T SECONDS]\n",
		argv0);
}

int main(int argc, char **argv)
{
	int64_t *a, *b;
	double *d, *e;
	int ch, ret, it;

	while ((ch = getopt(argc, argv, "n:r:p:s:O:P:I:S:T:h")) != -1) {
		switch (ch) {
		case 'n': opt.n = atoi(optarg); break;
		case 'r': opt.rank = atoi(optarg); break;
		case 'p': opt.prov = optarg; break;
		case 's': opt.src = optarg; break;
		case 'O': opt.oob_host = optarg; break;
		case 'P': opt.port = atoi(optarg); break;
		case 'I': opt.iters = atoi(optarg); break;
		case 'S': opt.count = (size_t)atol(optarg); break;
		case 'T': opt.timeout = atoi(optarg); break;
		default: usage(argv[0]); return 2;
		}
	}
	if (opt.n < 1 || opt.n > MAX_RANKS || opt.rank < 0 ||
	    opt.rank >= opt.n || !opt.count || opt.iters < 1 ||
	    (opt.rank && !opt.port)) {
		usage(argv[0]);
		return 2;
	}
	ret = setup();
	if (ret)
		return fail("setting up", ret);
	ret = join();
	if (ret)
		return ret;
	a = calloc(opt.count * (size_t)opt.n, sizeof(*a));
	b = calloc(opt.count * (size_t)opt.n, sizeof(*b));
	d = calloc(opt.count, sizeof(*d));
	e = calloc(opt.count, sizeof(*e));
	if (!a || !b || !d || !e)
		return 1;
	for (it = 0; it < opt.iters; it++) {
		ret = iteration(it, a, b, d, e);
		if (ret)
			return ret;
	}
	/* Nobody closes while another still waits for its messages. */
	{
		struct fi_context2 ctx;

		POST(fi_barrier(c.ep, c.coll, &ctx));
		if (wait_comp(&ctx))
			return 1;
	}
	if (!opt.rank) {
		printf("%d ranks, %d iterations, %zu elements per member\n",
		       opt.n, opt.iters, opt.count);
		printf("%-16s %12s\n", "operation", "usec");
		for (it = 0; it < NOPS; it++)
			printf("%-16s %12.2f\n", op_name[it],
			       c.lat[it] / (double)c.runs[it] * 1e6);
	}
	free(a);
	free(b);
	free(d);
	free(e);
	fi_close(&c.mc->fid);
	fi_close(&c.set->fid);
	fi_close(&c.ep->fid);
	fi_close(&c.av->fid);
	fi_close(&c.cq->fid);
	fi_close(&c.eq->fid);
	fi_close(&c.domain->fid);
	fi_close(&c.fabric->fid);
	fi_freeinfo(c.info);
	return 0;
}
