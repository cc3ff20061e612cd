// SPDX-License-Identifier: BSD-2-Clause
/*
 * fi_rma_bw: bandwidth of windows of RMA operations.  write and read are
 * one-sided: the target only drives progress; writedata also raises a
 * completion at the target, which acknowledges each window.
 */
#include <string.h>

#include "ft.h"

static const struct ft_prog prog = {
	.name = "fi_rma_bw",
	.summary = "bandwidth of RMA write, write with immediate data, or read",
	.ep_type = FI_EP_RDM,
	.caps = FI_MSG | FI_RMA,
	.iters = 1000,
	.window = 64,
	.sizes = "all",
	.op = "write",
	.ops_help = "write, writedata or read",
};

static enum ft_xfer kind;

static int run(size_t size, int iters, double *secs)
{
	return ft_bandwidth(&ft.ep, kind, size, iters, secs);
}

int main(int argc, char **argv)
{
	int ret;

	ft_parse(argc, argv, &prog);
	if (!strcmp(ft.opts.op, "write")) {
		kind = FT_XFER_WRITE;
		/* the target checks the data once the initiator is done */
		if (ft.opts.verify)
			ft.opts.delivery = true;
	} else if (!strcmp(ft.opts.op, "writedata")) {
		kind = FT_XFER_WRITEDATA;
	} else if (!strcmp(ft.opts.op, "read")) {
		kind = FT_XFER_READ;
	} else {
		ft_err("unknown operation '%s' (write, writedata or read)",
		       ft.opts.op);
		return 2;
	}
	ret = ft_init();
	if (!ret && kind == FT_XFER_WRITEDATA &&
	    ft.info->domain_attr->cq_data_size < 4) {
		ft_err("provider carries %zu bytes of CQ data, writedata needs 4",
		       ft.info->domain_attr->cq_data_size);
		ret = -FI_ENODATA;
	}
	if (!ret)
		ret = ft_run_sizes(run, 1);
	return ft_exit(ret);
}
