// SPDX-License-Identifier: BSD-2-Clause
/*
 * fi_rdm_tagged_bw: bandwidth of windows of fi_tsend, acknowledged per
 * window.
 */
#include "ft.h"

static const struct ft_prog prog = {
	.name = "fi_rdm_tagged_bw",
	.summary = "bandwidth of windows of fi_tsend, acknowledged per window",
	.ep_type = FI_EP_RDM,
	.caps = FI_TAGGED,
	.iters = 1000,
	.window = 64,
	.sizes = "all",
};

static int run(size_t size, int iters, double *secs)
{
	return ft_bandwidth(&ft.ep, FT_XFER_TAGGED, size, iters, secs);
}

int main(int argc, char **argv)
{
	int ret;

	ft_parse(argc, argv, &prog);
	ret = ft_init();
	if (!ret)
		ret = ft_run_sizes(run, 1);
	return ft_exit(ret);
}
