// SPDX-License-Identifier: BSD-2-Clause
/*
 * fi_msg_pingpong: latency of fi_send/fi_recv round trips (one-way time per
 * transfer).
 */
#include "ft.h"

static const struct ft_prog prog = {
	.name = "fi_msg_pingpong",
	.summary = "latency of fi_send/fi_recv round trips (one-way time per transfer)",
	.ep_type = FI_EP_MSG,
	.caps = FI_MSG,
	.iters = 1000,
	.window = 64,
	.sizes = "all",
};

static int run(size_t size, int iters, double *secs)
{
	return ft_pingpong(&ft.ep, FT_XFER_MSG, size, iters, secs);
}

int main(int argc, char **argv)
{
	int ret;

	ft_parse(argc, argv, &prog);
	ret = ft_init();
	if (!ret)
		ret = ft_run_sizes(run, 2);
	return ft_exit(ret);
}
