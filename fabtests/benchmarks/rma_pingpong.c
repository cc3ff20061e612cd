// SPDX-License-Identifier: BSD-2-Clause
/*
 * fi_rma_pingpong: latency of RMA writes with immediate data; each side
 * answers the other's write once its target completion arrives.
 */
#include <string.h>

#include "ft.h"

static const struct ft_prog prog = {
	.name = "fi_rma_pingpong",
	.summary = "latency of fi_writedata round trips (one-way time per transfer)",
	.ep_type = FI_EP_RDM,
	.caps = FI_MSG | FI_RMA,
	.iters = 1000,
	.window = 64,
	.sizes = "all",
	.op = "writedata",
	.ops_help = "writedata",
};

static int run(size_t size, int iters, double *secs)
{
	return ft_pingpong(&ft.ep, FT_XFER_WRITEDATA, size, iters, secs);
}

int main(int argc, char **argv)
{
	int ret;

	ft_parse(argc, argv, &prog);
	if (strcmp(ft.opts.op, "writedata")) {
		ft_err("unknown operation '%s' (writedata)", ft.opts.op);
		return 2;
	}
	ret = ft_init();
	if (!ret && ft.info->domain_attr->cq_data_size < 4) {
		ft_err("provider carries %zu bytes of CQ data, writedata needs 4",
		       ft.info->domain_attr->cq_data_size);
		ret = -FI_ENODATA;
	}
	if (!ret)
		ret = ft_run_sizes(run, 2);
	return ft_exit(ret);
}
