// SPDX-License-Identifier: BSD-2-Clause
/*
 * fi_raw_memcpy_bw: the machine's memory-copy limit for the bandwidth
 * tests: memcpy between two buffers of each size, -I times, in one process.
 * The buffers are touched beforehand so page faults are not measured.
 * Run it without a server address.
 */
#include <stdlib.h>
#include <string.h>

#include "ft.h"

static const struct ft_prog prog = {
	.name = "fi_raw_memcpy_bw",
	.summary = "bandwidth of memcpy in one process",
	.ep_type = FI_EP_MSG,
	.iters = 1000,
	.window = 1,
	.sizes = "all",
};

static char *src, *dst;

static int run(size_t size, int iters, double *secs)
{
	int warmup = ft.opts.warmup < iters ? ft.opts.warmup : iters;
	double start;
	int i;

	if (ft.opts.verify)
		ft_fill(src, size, size);
	for (i = 0; i < warmup; i++)
		memcpy(dst, src, size);
	start = ft_now();
	for (i = 0; i < iters; i++) {
		memcpy(dst, src, size);
		/* keep the compiler from dropping repeated copies */
		__asm__ __volatile__("" : : "r"(dst) : "memory");
	}
	*secs = ft_now() - start;
	return ft.opts.verify ? ft_check(dst, size, size, "copy") : 0;
}

int main(int argc, char **argv)
{
	size_t max = 0;
	int i, ret;

	ft_parse(argc, argv, &prog);
	ft.label = "raw_memcpy";
	if (ft.opts.dst_addr) {
		ft_err("runs alone (no server address)");
		return 2;
	}
	for (i = 0; i < ft.opts.nsizes; i++)
		if (ft.opts.sizes[i] > max)
			max = ft.opts.sizes[i];
	if (posix_memalign((void **)&src, 4096, max + 1) ||
	    posix_memalign((void **)&dst, 4096, max + 1))
		return 1;
	memset(src, 1, max + 1);
	memset(dst, 2, max + 1);
	ret = ft_run_sizes(run, 1);
	free(src);
	free(dst);
	return ft_exit(ret);
}
