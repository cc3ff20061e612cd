// SPDX-License-Identifier: BSD-2-Clause
/*
 * fi_raw_udp_pingpong: the machine's UDP limit for the DGRAM pingpong
 * tests.  One plain UDP socket per side, bound beside the side channel's
 * address, both sides busy-polling non-blocking recv; one datagram per
 * message, so sizes stop at 65507 bytes.  A lost datagram fails the run
 * after -T seconds.  Same options and table as the fabric pingpongs (-p,
 * -e, -d, -f, -c, -t and -j do not apply).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "ft.h"

#define UDP_MAX 65507

static const struct ft_prog prog = {
	.name = "fi_raw_udp_pingpong",
	.summary = "latency of round trips of UDP datagrams over plain sockets (busy polling)",
	.ep_type = FI_EP_DGRAM,
	.iters = 1000,
	.window = 1,
	.sizes = "1,8,64,256,1k,1472",
};

static char *txbuf, *rxbuf;
static int fd = -1;
static struct sockaddr_storage peer;
static socklen_t peerlen;

static int send_one(const char *buf, size_t len)
{
	ssize_t n;

	do
		n = sendto(fd, buf, len, MSG_DONTWAIT, (struct sockaddr *)&peer,
			   peerlen);
	while (n < 0 && (errno == EAGAIN || errno == EINTR));
	if (n != (ssize_t)len) {
		ft_err("sendto: %s", n < 0 ? strerror(errno) : "short");
		return -FI_EIO;
	}
	return 0;
}

static int recv_one(char *buf, size_t len)
{
	double last = 0;
	ssize_t n;

	for (;;) {
		/* One byte more: a longer datagram shows as such. */
		n = recv(fd, buf, len + 1, MSG_DONTWAIT);
		if (n >= 0) {
			if ((size_t)n != len) {
				ft_err("datagram of %zd bytes, want %zu", n, len);
				return -FI_EIO;
			}
			ft_alive();
			return 0;
		}
		if (errno != EAGAIN && errno != EINTR && errno != ECONNREFUSED) {
			ft_err("recv: %s", strerror(errno));
			return -FI_EIO;
		}
		if (!last)
			last = ft_now();
		else if (ft_now() - last > ft.opts.timeout) {
			ft_err("recv: no datagram for %d s (lost?)",
			       ft.opts.timeout);
			return -FI_ETIMEDOUT;
		}
	}
}

static int pp_run(size_t size, int count, uint64_t base)
{
	return ft_raw_pingpong(size, count, base, txbuf, rxbuf, send_one, recv_one);
}

static int run(size_t size, int iters, double *secs)
{
	static uint64_t seq;

	return ft_timed(pp_run, size, iters, &seq, true, secs);
}

/* A UDP socket on the side channel's local address; the two sides swap
 * their sockets' addresses over the side channel. */
static int udp_open(void)
{
	struct sockaddr_storage own;
	socklen_t len = sizeof(own);

	if (getsockname(ft.oob, (struct sockaddr *)&own, &len))
		return -FI_EIO;
	if (own.ss_family == AF_INET)
		((struct sockaddr_in *)&own)->sin_port = 0;
	else
		((struct sockaddr_in6 *)&own)->sin6_port = 0;
	fd = socket(own.ss_family, SOCK_DGRAM, 0);
	if (fd < 0 || bind(fd, (struct sockaddr *)&own, len) ||
	    getsockname(fd, (struct sockaddr *)&own, &len)) {
		ft_err("udp socket: %s", strerror(errno));
		return -FI_EIO;
	}
	peerlen = len;
	if (ft_oob_send(&own, sizeof(own)) || ft_oob_recv(&peer, sizeof(peer)))
		return -FI_EIO;
	return 0;
}

int main(int argc, char **argv)
{
	size_t max = 0;
	int i, n, ret;

	ft_parse(argc, argv, &prog);
	ft.label = "raw_udp";
	/* Sizes that do not fit one datagram are dropped, as the fabric
	 * pingpongs drop those over max_msg_size. */
	for (i = n = 0; i < ft.opts.nsizes; i++) {
		if (ft.opts.sizes[i] > UDP_MAX)
			continue;
		ft.opts.sizes[n++] = ft.opts.sizes[i];
		if (ft.opts.sizes[i] > max)
			max = ft.opts.sizes[i];
	}
	ft.opts.nsizes = n;
	if (!n) {
		ft_err("no requested size fits a datagram (%d bytes)", UDP_MAX);
		return ft_exit(-FI_EMSGSIZE);
	}
	txbuf = calloc(1, max + 1);
	rxbuf = calloc(1, max + 2);
	if (!txbuf || !rxbuf)
		return 1;
	ret = ft_oob_open();
	if (!ret)
		ret = udp_open();
	if (!ret)
		ret = ft_run_sizes(run, 2);
	if (fd >= 0)
		close(fd);
	free(txbuf);
	free(rxbuf);
	return ft_exit(ret);
}
