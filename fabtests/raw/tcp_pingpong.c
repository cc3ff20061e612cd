// SPDX-License-Identifier: BSD-2-Clause
/*
 * fi_raw_tcp_pingpong: the machine's TCP limit for the pingpong tests.
 * Plain sockets with TCP_NODELAY, both sides busy-polling non-blocking
 * recv, on the side-channel connection itself.  Same options and table as
 * the fabric pingpongs (-p, -e, -d, -f, -c, -t and -j do not apply).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "ft.h"

static const struct ft_prog prog = {
	.name = "fi_raw_tcp_pingpong",
	.summary = "latency of round trips over a plain TCP socket (TCP_NODELAY, busy polling)",
	.ep_type = FI_EP_MSG,
	.iters = 1000,
	.window = 1,
	.sizes = "all",
};

static char *txbuf, *rxbuf;

static int send_all(const char *p, size_t len)
{
	ssize_t n;

	while (len) {
		n = send(ft.oob, p, len, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			continue;
		if (n <= 0) {
			ft_err("send: %s", n ? strerror(errno) : "closed");
			return -FI_EIO;
		}
		p += n;
		len -= n;
	}
	return 0;
}

static int recv_all(char *p, size_t len)
{
	double last = 0;
	ssize_t n;

	while (len) {
		n = recv(ft.oob, p, len, MSG_DONTWAIT);
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

	return ft_timed(pp_run, size, iters, &seq, true, secs);
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
	if (!ret)
		ret = ft_run_sizes(run, 2);
	free(txbuf);
	free(rxbuf);
	return ft_exit(ret);
}
