// SPDX-License-Identifier: BSD-2-Clause
/*
 * fi_mt_bw: aggregate bandwidth of N threads in one shared domain
 * (FI_THREAD_SAFE), each driving an endpoint and completion queues of its
 * own: a plain endpoint each (-o ep), or one context pair each of a single
 * scalable endpoint (-o sep: transmit and receive context i, sending to the
 * peer's receive context i); or all on one endpoint and its CQs (-o shared:
 * tagged messages, a tag per thread).  Thread i of the client pairs with
 * thread i of the server.  The row reports all threads' transfers over the
 * time of the slowest thread.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ft.h"

/* Not const: -o shared asks for FI_TAGGED in place of FI_MSG. */
static struct ft_prog prog = {
	.name = "fi_mt_bw",
	.summary = "aggregate fi_send bandwidth of -n threads, an endpoint or a\n"
		   "context pair of one scalable endpoint each, or one endpoint\n"
		   "for all (fi_tsend)",
	.ep_type = FI_EP_RDM,
	.caps = FI_MSG,
	.iters = 1000,
	.window = 64,
	.sizes = "all",
	.op = "ep",
	.ops_help = "ep: an endpoint per thread; sep: one scalable endpoint\n"
		    "              (RDM), transmit and receive context i for thread i;\n"
		    "              shared: one endpoint and its CQs for all threads,\n"
		    "              tagged messages (RDM, -c queue)",
	.threads = true,
};

enum mode {
	MODE_EP,
	MODE_SEP,
	MODE_SHARED,
};

struct worker {
	pthread_t thread;
	struct ft_ep *e;
	enum ft_xfer kind;
	size_t size;
	int iters;
	double secs;
	int ret;
};

static void *worker_main(void *arg)
{
	struct worker *w = arg;

	w->ret = ft_bandwidth(w->e, w->kind, w->size, w->iters, &w->secs);
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

/* -o: the mode, or -1 after a usage error. */
static int parse_mode(void)
{
	static const char *const names[] = {
		[MODE_EP] = "ep", [MODE_SEP] = "sep", [MODE_SHARED] = "shared",
	};
	int mode;

	for (mode = MODE_EP; mode <= MODE_SHARED; mode++)
		if (!strcmp(ft.opts.op, names[mode]))
			break;
	if (mode > MODE_SHARED) {
		ft_err("unknown mode '%s' (ep, sep or shared)", ft.opts.op);
		return -1;
	}
	if (mode != MODE_EP && ft.opts.ep_type != FI_EP_RDM) {
		ft_err("-o %s: RDM endpoints only (-e rdm)", ft.opts.op);
		return -1;
	}
	if (mode == MODE_SHARED && ft.opts.comp != FT_COMP_QUEUE) {
		ft_err("-o shared: completions by queue only (-c queue)");
		return -1;
	}
	return mode;
}

/* -o ep: ft.ep for thread 0, endpoints of their own for the others. */
static int open_eps(struct ft_ep *eps, struct worker *w, int n)
{
	int i, ret = 0;

	w[0].e = &ft.ep;
	for (i = 1; i < n && !ret; i++) {
		ret = ft_ep_setup(&eps[i], i);
		w[i].e = &eps[i];
	}
	return ret;
}

/* -o shared: ft.ep for thread 0, views of it for the others. */
static int share_ep(struct ft_share *sh, struct worker *w, int n)
{
	int i, ret;

	ret = ft_share_open(sh, &ft.ep, n);
	for (i = 0; i < n && !ret; i++)
		w[i].e = sh->ep[i];
	return ret;
}

/* -o sep: context pair i of the scalable endpoint for thread i. */
static void use_contexts(struct worker *w, int n)
{
	int i;

	for (i = 0; i < n; i++)
		w[i].e = &ft.sep.ctx[i];
}

static void print_setup(enum mode mode, int n)
{
	if (ft.opts.machine)
		return;
	if (mode == MODE_SEP)
		printf("threads: %d, one scalable endpoint, a context pair "
		       "each\n", n);
	else if (mode == MODE_SHARED)
		printf("threads: %d, one endpoint for all\n", n);
	else
		printf("threads: %d\n", n);
}

int main(int argc, char **argv)
{
	static const char *const row_name[] = {
		[MODE_SEP] = "sep", [MODE_SHARED] = "shared",
	};
	struct ft_share share = { 0 };
	struct ft_ep *eps = NULL;
	struct worker *w = NULL;
	enum ft_xfer kind = FT_XFER_MSG;
	int i, n, iters, mode, ret;
	double secs;

	ft_parse(argc, argv, &prog);
	n = ft.opts.threads;
	mode = parse_mode();
	if (mode < 0)
		return 2;
	if (mode == MODE_SEP)
		ft.sep.count = n;
	if (mode == MODE_SHARED) {
		prog.caps = FI_TAGGED;
		kind = FT_XFER_TAGGED;
	}
	ret = ft_init();
	if (ret)
		goto out;
	eps = calloc(n, sizeof(*eps));
	w = calloc(n, sizeof(*w));
	if (!eps || !w) {
		ret = -FI_ENOMEM;
		goto out;
	}
	if (mode == MODE_SEP)
		use_contexts(w, n);
	else if (mode == MODE_SHARED)
		ret = share_ep(&share, w, n);
	else
		ret = open_eps(eps, w, n);
	for (i = 0; i < n && !ret; i++) {
		w[i].kind = kind;
		w[i].e->no_oob = true;
		ret = ft_bw_prepare(w[i].e, kind);
	}
	if (ret)
		goto out_eps;
	print_setup(mode, n);
	ft_report_header(NULL);
	for (i = 0; i < ft.opts.nsizes && !ret; i++) {
		iters = ft_iters_for(ft.opts.sizes[i]);
		ret = run_size(w, n, ft.opts.sizes[i], iters, &secs);
		if (!ret)
			ft_report(row_name[mode], ft.opts.sizes[i],
				  (uint64_t)iters * n, secs, 1);
	}
out_eps:
	ft_share_close(&share);
	for (i = 1; i < n; i++)
		ft_ep_close(&eps[i]);
out:
	free(eps);
	free(w);
	return ft_exit(ret);
}
