// SPDX-License-Identifier: BSD-2-Clause
/*
 * fi_raw_tcp_bw: the machine's TCP stream limit for the bandwidth tests.
 * The client writes -I messages back to back on a plain socket
 * (TCP_NODELAY, non-blocking, busy polling); the server reads them and
 * answers one byte when the last has arrived.  Time runs until that answer.
 * Message i is written from, and read into, buffer slot i mod the window,
 * as the fabric bandwidth benchmarks do: at 1 MiB their 32 slots do not fit
 * the caches, and a stream that reused one buffer would measure the caches
 * instead.  -W 1 gives that stream.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "ft.h"

static const struct ft_prog prog = {
	.name = "fi_raw_tcp_bw",
	.summary = "bandwidth of a plain TCP stream (TCP_NODELAY, busy polling)",
	.ep_type = FI_EP_MSG,
	.iters = 1000,
	.window = 64,
	.sizes = "all",
};

static char *buf;
static size_t slot_size;
static int nslots;

static char *slot(int i)
{
	return buf + (size_t)(i % nslots) * slot_size;
}

static int xfer(char *p, size_t len, bool out)
{
	double last = 0;
	ssize_t n;

	while (len) {
		n = out ? send(ft.oob, p, len, MSG_NOSIGNAL | MSG_DONTWAIT) :
			  recv(ft.oob, p, len, MSG_DONTWAIT);
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
				ft_err("%s: no progress for %d s",
				       out ? "send" : "recv", ft.opts.timeout);
				return -FI_ETIMEDOUT;
			}
			continue;
		}
		ft_err("%s: %s", out ? "send" : "recv",
		       n ? strerror(errno) : "peer closed");
		return -FI_EIO;
	}
	return 0;
}

static int bw_run(size_t size, int count, uint64_t base)
{
	char ack = 'a';
	int i, ret = 0;

	for (i = 0; i < count && !ret; i++) {
		if (ft.server) {
			ret = xfer(slot(i), size, false);
			if (!ret && ft.opts.verify)
				ret = ft_check(slot(i), size, base + i,
					       "stream data");
		} else {
			if (ft.opts.verify)
				ft_fill(slot(i), size, base + i);
			ret = xfer(slot(i), size, true);
		}
	}
	if (!ret)
		ret = xfer(&ack, 1, ft.server);
	return ret;
}

static int run(size_t size, int iters, double *secs)
{
	static uint64_t seq;

	return ft_timed(bw_run, size, iters, &seq, true, secs);
}

int main(int argc, char **argv)
{
	int i, ret;

	ft_parse(argc, argv, &prog);
	ft.label = "raw_tcp";
	ft.max_size = 0;
	for (i = 0; i < ft.opts.nsizes; i++)
		if (ft.opts.sizes[i] > ft.max_size)
			ft.max_size = ft.opts.sizes[i];
	nslots = ft_slots(&slot_size);
	buf = calloc(nslots, slot_size);
	if (!buf)
		return 1;
	ret = ft_oob_open();
	if (!ret)
		ret = ft_run_sizes(run, 1);
	free(buf);
	return ft_exit(ret);
}
