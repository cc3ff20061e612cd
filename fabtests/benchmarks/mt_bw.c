// SPDX-License-Identifier: BSD-2-Clause
/*
 * fi_mt_bw: aggregate bandwidth of N threads, each driving its own endpoint
 * and completion queues in one shared domain (FI_THREAD_SAFE).  Thread i of
 * the client pairs with thread i of the server.  The row reports all
 * threads' transfers over the time of the slowest thread.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "ft.h"

static const struct ft_prog prog = {
	.name = "fi_mt_bw",
	.summary = "aggregate fi_send bandwidth of -n threads, one endpoint each",
	.ep_type = FI_EP_RDM,
	.caps = FI_MSG,
	.iters = 1000,
	.window = 64,
	.sizes = "all",
	.threads = true,
};

struct worker {
	pthread_t thread;
	struct ft_ep *e;
	size_t size;
	int iters;
	double secs;
	int ret;
};

static void *worker_main(void *arg)
{
	struct worker *w = arg;

	w->ret = ft_bandwidth(w->e, FT_XFER_MSG, w->size, w->iters, &w->secs);
	return NULL;
}

static int run_size(struct worker *w, int n, size_t size, int iters,
		    double *secs)
{
	int i, ret = 0, started = 0;

	ret = ft_sync();
	for (i = 0; i < n && !ret; i++) {
		w[i].size = size;
		w[i].iters = iters;
		w[i].ret = 0;
		ret = -pthread_create(&w[i].thread, NULL, worker_main, &w[i]);
		if (ret)
			ft_err("pthread_create: error %d", -ret);
		else
			started++;
	}
	*secs = 0;
	for (i = 0; i < started; i++) {
		pthread_join(w[i].thread, NULL);
		if (w[i].ret && !ret)
			ret = w[i].ret;
		if (w[i].secs > *secs)
			*secs = w[i].secs;
	}
	return ret;
}

int main(int argc, char **argv)
{
	struct ft_ep *eps = NULL;
	struct worker *w = NULL;
	int i, n, iters, ret;
	double secs;

	ft_parse(argc, argv, &prog);
	n = ft.opts.threads;
	ret = ft_init();
	if (ret)
		goto out;
	eps = calloc(n, sizeof(*eps));
	w = calloc(n, sizeof(*w));
	if (!eps || !w) {
		ret = -FI_ENOMEM;
		goto out;
	}
	ft.ep.no_oob = true;
	w[0].e = &ft.ep;
	for (i = 1; i < n && !ret; i++) {
		ret = ft_ep_setup(&eps[i], i);
		eps[i].no_oob = true;
		w[i].e = &eps[i];
	}
	for (i = 0; i < n && !ret; i++)
		ret = ft_bw_prepare(w[i].e, FT_XFER_MSG);
	if (ret)
		goto out_eps;
	if (!ft.opts.machine)
		printf("threads: %d\n", n);
	ft_report_header(NULL);
	for (i = 0; i < ft.opts.nsizes && !ret; i++) {
		iters = ft_iters_for(ft.opts.sizes[i]);
		ret = run_size(w, n, ft.opts.sizes[i], iters, &secs);
		if (!ret)
			ft_report(NULL, ft.opts.sizes[i], (uint64_t)iters * n,
				  secs, 1);
	}
out_eps:
	for (i = 1; i < n; i++)
		ft_ep_close(&eps[i]);
out:
	free(eps);
	free(w);
	return ft_exit(ret);
}
