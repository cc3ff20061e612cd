// SPDX-License-Identifier: BSD-2-Clause
/*
 * fi_rdm_msg_rate: message rate: small fi_send with many operations in
 * flight.
 */
#include "ft.h"

static const struct ft_prog prog = {
	.name = "fi_rdm_msg_rate",
	.summary = "message rate: small fi_send with many operations in flight",
	.ep_type = FI_EP_RDM,
	.caps = FI_MSG,
	.iters = 10000,
	.window = 256,
	.sizes = "1,8,64,256",
};

static int run(size_t size, int iters, double *secs)
{
	return ft_bandwidth(&ft.ep, FT_XFER_MSG, size, iters, secs);
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
