/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The frame every program of tests/clients runs in.  A program replays the
 * OFI calls one real client makes; the frame gives it two processes, a
 * channel between them for what the client's own runtime would carry (a
 * PMI modex, an RPC library's address string, an out-of-band socket), a
 * deadline, and one way to end:
 *
 *   prog [-v VARIANT] [-a NODE] NAME
 *
 * NAME is the provider name the client asks for (in its hints, its include
 * list or FI_PROVIDER, as that client does); NODE an address for clients
 * that take one (127.0.0.1 by default); VARIANT a version or mode of the
 * client.  The parent forks rank 0 (the server or listener) and rank 1 (the
 * client) before any fi_* call and never calls libfabric itself.  Each rank
 * ends with cl_pass(), cl_skip() or cl_fail(); the parent prints one last
 * line and exits with it:
 *
 *   PASS                      0   both ranks did what the client does
 *   SKIP: rank N: REASON      77  no answer to the client's hints (or the
 *                                 client's own selection refused every one)
 *   FAIL: rank N: REASON      1   anything else, a timeout included
 *
 * A rank that is still running at the deadline (CLIENTS_TIMEOUT seconds, 30
 * by default) is killed by its pid.
 */
#ifndef WEFT_TESTS_CLIENTS_HARNESS_H
#define WEFT_TESTS_CLIENTS_HARNESS_H

#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <rdma/fabric.h>
#include <rdma/fi_errno.h>

struct cl {
	int rank;		/* 0: server, listener, target; 1: client */
	int oob;		/* stream socket to the other rank */
	int verdict;		/* pipe to the parent: this rank's last word */
	const char *name;	/* the provider name asked for */
	const char *node;	/* -a */
	const char *variant;	/* -v, or "" */
	const char *client;	/* the program's name, for messages */
	struct timespec deadline;
};

static inline void cl_vend(struct cl *c, int code, const char *word,
			   const char *fmt, va_list ap)
{
	char msg[1024];
	int n;

	n = snprintf(msg, sizeof(msg), "%s: rank %d: ", word, c->rank);
	vsnprintf(msg + n, sizeof(msg) - n, fmt, ap);
	printf("[rank %d] %s\n", c->rank, msg);
	fflush(stdout);
	if (write(c->verdict, msg, strlen(msg)) < 0)
		perror("verdict");
	_exit(code);
}

__attribute__((noreturn, format(printf, 2, 3)))
static inline void cl_fail(struct cl *c, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	cl_vend(c, 1, "FAIL", fmt, ap);
	va_end(ap);
	_exit(1);
}

/* No provider answers the client's hints, or the client itself refuses
 * every answer: what the client would report as "no usable transport". */
__attribute__((noreturn, format(printf, 2, 3)))
static inline void cl_skip(struct cl *c, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	cl_vend(c, 77, "SKIP", fmt, ap);
	va_end(ap);
	_exit(77);
}

__attribute__((noreturn))
static inline void cl_pass(struct cl *c)
{
	printf("[rank %d] done\n", c->rank);
	fflush(stdout);
	_exit(0);
}

__attribute__((format(printf, 2, 3)))
static inline void cl_note(struct cl *c, const char *fmt, ...)
{
	va_list ap;

	printf("[rank %d] ", c->rank);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
}

/* A call that returns 0 or -FI_Exxx, failing the rank otherwise. */
#define CL_CALL(c, call)                                                      \
	do {                                                                  \
		long cl_r_ = (long)(call);                                    \
		if (cl_r_)                                                    \
			cl_fail((c), "%s returned %ld (%s)", #call, cl_r_,    \
				fi_strerror((int)-cl_r_));                    \
	} while (0)

static inline bool cl_expired(const struct cl *c)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return now.tv_sec > c->deadline.tv_sec ||
	       (now.tv_sec == c->deadline.tv_sec &&
		now.tv_nsec >= c->deadline.tv_nsec);
}

/* For the client's own polling loops: fail once the deadline has passed. */
static inline void cl_tick(struct cl *c, const char *what)
{
	if (cl_expired(c))
		cl_fail(c, "timed out waiting for %s", what);
}

static inline int cl_ms_left(const struct cl *c)
{
	struct timespec now;
	long ms;

	clock_gettime(CLOCK_MONOTONIC, &now);
	ms = (c->deadline.tv_sec - now.tv_sec) * 1000 +
	     (c->deadline.tv_nsec - now.tv_nsec) / 1000000;
	return ms > 0 ? (int)ms : 0;
}

/* ---- the channel between the ranks (length-prefixed messages) ---------- */

static inline void cl_io(struct cl *c, bool out, void *buf, size_t len,
			 const char *what)
{
	char *p = buf;

	while (len) {
		struct pollfd pfd = { .fd = c->oob,
				      .events = out ? POLLOUT : POLLIN };
		ssize_t n;
		int r = poll(&pfd, 1, cl_ms_left(c));

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			cl_fail(c, "timed out on the channel (%s)", what);
		n = out ? write(c->oob, p, len) : read(c->oob, p, len);
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n <= 0)
			cl_fail(c, "the other rank went away (%s)", what);
		p += n;
		len -= (size_t)n;
	}
}

static inline void cl_send(struct cl *c, const void *buf, size_t len)
{
	uint32_t l = (uint32_t)len;

	cl_io(c, true, &l, sizeof(l), "send");
	cl_io(c, true, (void *)buf, len, "send");
}

/* Receives one message into buf (at most max bytes); returns its length. */
static inline size_t cl_recv(struct cl *c, void *buf, size_t max)
{
	uint32_t l;

	cl_io(c, false, &l, sizeof(l), "receive");
	if (l > max)
		cl_fail(c, "channel message of %u bytes, at most %zu expected",
			l, max);
	cl_io(c, false, buf, l, "receive");
	return l;
}

/* Both ranks send, then receive: an allgather of two. */
static inline size_t cl_xchg(struct cl *c, const void *out, size_t outlen,
			     void *in, size_t max)
{
	cl_send(c, out, outlen);
	return cl_recv(c, in, max);
}

static inline void cl_barrier(struct cl *c)
{
	char b = 'b';

	cl_xchg(c, &b, 1, &b, 1);
}

/*
 * A barrier that keeps the fabric going while it waits, as MPI's finalize
 * and an RPC library's shutdown do: under manual progress, a message the
 * other rank still has to push out (an inject, a delivery-complete
 * acknowledgement) needs this rank to progress.
 */
static inline void cl_barrier_p(struct cl *c, void (*progress)(void *),
				void *arg)
{
	char b = 'b';
	uint32_t l = 1;

	cl_send(c, &b, 1);
	for (;;) {
		struct pollfd pfd = { .fd = c->oob, .events = POLLIN };

		if (poll(&pfd, 1, 1) > 0)
			break;
		progress(arg);
		cl_tick(c, "the other rank at a barrier");
	}
	cl_io(c, false, &l, sizeof(l), "barrier");
	cl_io(c, false, &b, 1, "barrier");
}

/* ---- data ---------------------------------------------------------------- */

static inline void cl_fill(void *buf, size_t len, unsigned seed)
{
	unsigned char *p = buf;
	size_t i;

	for (i = 0; i < len; i++)
		p[i] = (unsigned char)(seed * 131 + i * 7 + (i >> 8));
}

static inline void cl_check(struct cl *c, const void *buf, size_t len,
			    unsigned seed, const char *what)
{
	const unsigned char *p = buf;
	size_t i;

	for (i = 0; i < len; i++)
		if (p[i] != (unsigned char)(seed * 131 + i * 7 + (i >> 8)))
			cl_fail(c, "%s: byte %zu of %zu is 0x%02x, 0x%02x expected",
				what, i, len, p[i],
				(unsigned char)(seed * 131 + i * 7 + (i >> 8)));
}

/* Open MPI's MTL and BTL alike (opal/mca/common/ofi, common_ofi.c): whether
 * info b may stand in for a when one is picked among several. */
static inline bool cl_ompi_alike(const struct fi_info *a, const struct fi_info *b)
{
	return !strcmp(a->fabric_attr->prov_name, b->fabric_attr->prov_name) &&
	       !strcmp(a->fabric_attr->name, b->fabric_attr->name) &&
	       !(b->tx_attr->msg_order & ~a->tx_attr->msg_order) &&
	       !(b->tx_attr->op_flags & ~a->tx_attr->op_flags) &&
	       b->tx_attr->inject_size == a->tx_attr->inject_size &&
	       !(b->rx_attr->msg_order & ~a->rx_attr->msg_order) &&
	       !(b->rx_attr->op_flags & ~a->rx_attr->op_flags) &&
	       !(b->ep_attr->type & ~a->ep_attr->type) &&
	       !(b->ep_attr->mem_tag_format & ~a->ep_attr->mem_tag_format) &&
	       b->ep_attr->max_msg_size == a->ep_attr->max_msg_size &&
	       b->ep_attr->tx_ctx_cnt == a->ep_attr->tx_ctx_cnt &&
	       b->ep_attr->rx_ctx_cnt == a->ep_attr->rx_ctx_cnt &&
	       !(a->caps & ~b->caps) && !(a->mode & ~b->mode) &&
	       a->addr_format == b->addr_format;
}

/* Which libfabric.so.1 serves this process, and its version. */
static inline void cl_lib(struct cl *c)
{
	Dl_info dl;
	uint32_t v = fi_version();

	if (dladdr((void *)fi_getinfo, &dl) && dl.dli_fname)
		cl_note(c, "library %s, fi_version %u.%u", dl.dli_fname,
			FI_MAJOR(v), FI_MINOR(v));
}

/* ---- main ---------------------------------------------------------------- */

static inline int cl_usage(const char *prog)
{
	fprintf(stderr, "usage: %s [-v VARIANT] [-a NODE] NAME\n", prog);
	return 2;
}

/*
 * Forks the two ranks, each running fn, and waits for both.  Returns the
 * process exit status (0, 77 or 1) after printing the last line.
 */
static inline int cl_run(int argc, char **argv, const char *client,
			 void (*fn)(struct cl *))
{
	struct cl c = { .node = "127.0.0.1", .variant = "", .client = client };
	char verdict[2][1100] = { "", "" };
	int sv[2], vp[2][2], status[2] = { -1, -1 }, order[2] = { 0, 0 };
	bool echo[2];
	pid_t pid[2];
	const char *t = getenv("CLIENTS_TIMEOUT");
	int timeout = t && atoi(t) > 0 ? atoi(t) : 30;
	struct timespec start;
	int opt, r, i, done = 0;

	while ((opt = getopt(argc, argv, "v:a:")) != -1) {
		switch (opt) {
		case 'v':
			c.variant = optarg;
			break;
		case 'a':
			c.node = optarg;
			break;
		default:
			return cl_usage(argv[0]);
		}
	}
	if (optind != argc - 1)
		return cl_usage(argv[0]);
	c.name = argv[optind];

	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) || pipe(vp[0]) ||
	    pipe(vp[1])) {
		perror("socketpair/pipe");
		return 1;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	fflush(stdout);
	clock_gettime(CLOCK_MONOTONIC, &start);
	c.deadline = start;
	c.deadline.tv_sec += timeout;
	for (i = 0; i < 2; i++) {
		pid[i] = fork();
		if (pid[i] < 0) {
			perror("fork");
			if (i)
				kill(pid[0], SIGKILL);
			return 1;
		}
		if (pid[i] == 0) {
			c.rank = i;
			c.oob = sv[i];
			close(sv[!i]);
			c.verdict = vp[i][1];
			close(vp[0][0]);
			close(vp[1][0]);
			close(vp[!i][1]);
			fn(&c);
			cl_fail(&c, "returned without a verdict");
		}
	}
	close(sv[0]);
	close(sv[1]);
	close(vp[0][1]);
	close(vp[1][1]);

	/* Wait for both, up to the deadline plus a grace period. */
	while (done < 2) {
		struct timespec now;
		int st;
		pid_t w = waitpid(-1, &st, WNOHANG);

		if (w > 0) {
			for (i = 0; i < 2; i++)
				if (w == pid[i]) {
					status[i] = st;
					order[i] = ++done;
				}
			continue;
		}
		clock_gettime(CLOCK_MONOTONIC, &now);
		if (now.tv_sec - start.tv_sec > timeout + 5) {
			for (i = 0; i < 2; i++)
				if (status[i] == -1 && kill(pid[i], SIGKILL) == 0)
					snprintf(verdict[i], sizeof(verdict[i]),
						 "FAIL: rank %d: killed after %d s",
						 i, timeout + 5);
			while (done < 2 && (w = waitpid(-1, &st, 0)) > 0)
				for (i = 0; i < 2; i++)
					if (w == pid[i] && status[i] == -1) {
						status[i] = st;
						order[i] = ++done;
					}
			break;
		}
		usleep(20000);
	}
	for (i = 0; i < 2; i++) {
		if (!verdict[i][0]) {
			ssize_t n = read(vp[i][0], verdict[i],
					 sizeof(verdict[i]) - 1);

			verdict[i][n > 0 ? n : 0] = '\0';
		}
		if (!verdict[i][0]) {
			if (WIFSIGNALED(status[i]))
				snprintf(verdict[i], sizeof(verdict[i]),
					 "FAIL: rank %d: killed by signal %d", i,
					 WTERMSIG(status[i]));
			else if (!WIFEXITED(status[i]) || WEXITSTATUS(status[i]))
				snprintf(verdict[i], sizeof(verdict[i]),
					 "FAIL: rank %d: exit status %d", i,
					 WIFEXITED(status[i]) ?
					 WEXITSTATUS(status[i]) : -1);
		}
	}
	/* A failure wins over a skip, which wins over a pass.  A rank that
	 * fails because the other went away after skipping is a skip. */
	for (i = 0; i < 2; i++)
		if (!strncmp(verdict[i], "SKIP", 4)) {
			r = !strncmp(verdict[!i], "FAIL", 4) &&
			    !strstr(verdict[!i], "went away") ? !i : i;
			printf("%s\n", verdict[r]);
			return !strncmp(verdict[r], "SKIP", 4) ? 77 : 1;
		}
	/* Of two failures, the one that is not an echo of the other (the
	 * other rank gone, a channel or barrier timeout) says why; between
	 * equals, the first rank to end. */
	for (i = 0; i < 2; i++)
		echo[i] = strstr(verdict[i], "went away") ||
			  strstr(verdict[i], "on the channel") ||
			  strstr(verdict[i], "at a barrier");
	r = verdict[1][0] &&
	    (!verdict[0][0] || (echo[0] && !echo[1]) ||
	     (echo[0] == echo[1] && order[1] < order[0]));
	if (verdict[r][0]) {
		printf("%s\n", verdict[r]);
		return 1;
	}
	printf("PASS\n");
	return 0;
}

#endif /* WEFT_TESTS_CLIENTS_HARNESS_H */
