// SPDX-License-Identifier: BSD-2-Clause
/*
 * fi_raw_tcp_pingpong: the machine's TCP limit for the pingpong tests.
 * Plain sockets with TCP_NODELAY on the side-channel connection itself.
 * Each size runs with every way of moving the bytes the program knows,
 * and the best one is reported (a library that beats the limit shows a
 * way missing here):
 *   poll        non-blocking send and recv, both busy-polling;
 *   block       blocking send and recv: a side sleeps in the kernel
 *               while the socket is full or empty;
 *   block-send  blocking send, busy-polling recv;
 *   zerocopy    blocking send with MSG_ZEROCOPY (64 KiB and up, where
 *               the kernel has SO_ZEROCOPY), busy-polling recv; each
 *               send waits for its completion notice before the buffer
 *               is used again.
 * FT_RAW_TCP_METHOD=NAME runs one of them alone.  Each size's figures by
 * way go to stderr.  Same options and table as the fabric pingpongs (-p,
 * -e, -d, -f, -c, -t and -j do not apply).
 */
#include <errno.h>
#include <time.h>

#include <linux/errqueue.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "ft.h"

#ifndef SO_ZEROCOPY
#define SO_ZEROCOPY 60
#endif
#ifndef MSG_ZEROCOPY
#define MSG_ZEROCOPY 0x4000000
#endif

static const struct ft_prog prog = {
	.name = "fi_raw_tcp_pingpong",
	.summary = "latency of round trips over a plain TCP socket (TCP_NODELAY; the best of busy polling, blocking and MSG_ZEROCOPY)",
	.ep_type = FI_EP_MSG,
	.iters = 1000,
	.window = 1,
	.sizes = "all",
};

enum method { M_POLL, M_BLOCK, M_BLOCK_SEND, M_ZEROCOPY, M_COUNT };
static const char *const method_name[M_COUNT] = {
	"poll", "block", "block-send", "zerocopy",
};
#define ZEROCOPY_MIN 65536

static enum method method;
static bool zc_ok;	 /* SO_ZEROCOPY took */
static uint32_t zc_sent; /* zerocopy sends made, and noticed */
static uint32_t zc_done;
static char *txbuf, *rxbuf;

/* Wait for the kernel's notices of every zerocopy send made so far. */
static int zc_reap(void)
{
	char ctrl[128];
	struct msghdr mh = { .msg_control = ctrl };
	struct pollfd pfd = { .fd = ft.oob, .events = 0 };
	struct cmsghdr *cm;
	struct sock_extended_err *ee;

	while (zc_done != zc_sent) {
		mh.msg_controllen = sizeof(ctrl);
		if (recvmsg(ft.oob, &mh, MSG_ERRQUEUE) < 0) {
			if (errno != EAGAIN && errno != EINTR) {
				ft_err("recvmsg(MSG_ERRQUEUE): %s",
				       strerror(errno));
				return -FI_EIO;
			}
			/* POLLERR says a notice is queued. */
			(void)poll(&pfd, 1, 100);
			continue;
		}
		for (cm = CMSG_FIRSTHDR(&mh); cm; cm = CMSG_NXTHDR(&mh, cm)) {
			ee = (struct sock_extended_err *)CMSG_DATA(cm);
			if (ee->ee_origin == SO_EE_ORIGIN_ZEROCOPY &&
			    !ee->ee_errno)
				zc_done = ee->ee_data + 1;
		}
	}
	return 0;
}

static int send_all(const char *p, size_t len)
{
	int flags = MSG_NOSIGNAL;
	bool zc = method == M_ZEROCOPY && zc_ok && len >= ZEROCOPY_MIN;
	ssize_t n;

	if (method == M_POLL)
		flags |= MSG_DONTWAIT;
	if (zc)
		flags |= MSG_ZEROCOPY;
	while (len) {
		n = send(ft.oob, p, len, flags);
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			continue;
		if (n < 0 && errno == ENOBUFS && zc) {
			/* Out of notice memory: wait for the notices. */
			if (zc_reap())
				return -FI_EIO;
			continue;
		}
		if (n <= 0) {
			ft_err("send: %s", n ? strerror(errno) : "closed");
			return -FI_EIO;
		}
		if (zc)
			zc_sent++;
		p += n;
		len -= n;
	}
	return zc ? zc_reap() : 0;
}

static int recv_all(char *p, size_t len)
{
	double last = 0;
	ssize_t n;

	while (len) {
		n = recv(ft.oob, p, len,
			 method == M_BLOCK ? MSG_WAITALL : MSG_DONTWAIT);
		if (n > 0) {
			p += n;
			len -= n;
			last = 0;
			ft_alive();
			continue;
		}
		if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
			if (!last)
				last = ft_now();
			else if (ft_now() - last > ft.opts.timeout) {
				ft_err("recv: peer silent for %d s",
				       ft.opts.timeout);
				return -FI_ETIMEDOUT;
			}
			continue;
		}
		ft_err("recv: %s", n ? strerror(errno) : "peer closed");
		return -FI_EIO;
	}
	return 0;
}

static int pp_run(size_t size, int count, uint64_t base)
{
	return ft_raw_pingpong(size, count, base, txbuf, rxbuf, send_all, recv_all);
}

static int run(size_t size, int iters, double *secs)
{
	static uint64_t seq;
	static int only = -1;
	char line[256] = "";
	double t, best = 0;
	size_t used = 0;
	int m, ret;

	if (only == -1) {
		const char *e = getenv("FT_RAW_TCP_METHOD");

		only = M_COUNT;
		for (m = 0; e && *e && m < M_COUNT; m++)
			if (!strcmp(e, method_name[m]))
				only = m;
		if (e && *e && strcmp(e, "best") && only == M_COUNT) {
			ft_err("FT_RAW_TCP_METHOD=%s: poll, block, block-send, "
			       "zerocopy or best", e);
			return -FI_EINVAL;
		}
	}
	/* Both sides run the same ways in the same order. */
	for (m = 0; m < M_COUNT; m++) {
		if (only != M_COUNT && m != only)
			continue;
		if (only == M_COUNT && m == M_ZEROCOPY && size < ZEROCOPY_MIN)
			continue;
		method = (enum method)m;
		ret = ft_timed(pp_run, size, iters, &seq, true, &t);
		if (ret)
			return ret;
		if (!best || t < best)
			best = t;
		used += (size_t)snprintf(line + used, sizeof(line) - used,
					 " %s %.2f", method_name[m],
					 t * 1e6 / iters / 2);
		if (used >= sizeof(line))
			used = sizeof(line) - 1;
	}
	if (!ft.server)
		fprintf(stderr, "raw_tcp %zu B, usec/xfer:%s\n", size, line);
	*secs = best;
	return 0;
}

int main(int argc, char **argv)
{
	size_t max = 0;
	int i, ret;

	ft_parse(argc, argv, &prog);
	ft.label = "raw_tcp";
	for (i = 0; i < ft.opts.nsizes; i++)
		if (ft.opts.sizes[i] > max)
			max = ft.opts.sizes[i];
	txbuf = calloc(1, max + 1);
	rxbuf = calloc(1, max + 1);
	if (!txbuf || !rxbuf)
		return 1;
	ret = ft_oob_open();
	if (!ret) {
		int one = 1;

		zc_ok = !setsockopt(ft.oob, SOL_SOCKET, SO_ZEROCOPY, &one,
				    sizeof(one));
	}
	if (!ret)
		ret = ft_run_sizes(run, 2);
	free(txbuf);
	free(rxbuf);
	return ft_exit(ret);
}
