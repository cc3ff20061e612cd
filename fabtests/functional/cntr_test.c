// SPDX-License-Identifier: BSD-2-Clause
/*
 * fi_cntr_test: completions counted instead of queued.  Counters are bound
 * for sends, receives (and RMA writes when the provider has FI_RMA), the
 * CQs with FI_SELECTIVE_COMPLETION, and no operation asks for a CQ entry.
 * The client sends -I messages of every size (then writes them when RMA is
 * there); each side waits for its counter to reach the count, finds its
 * CQs empty and checks the data byte for byte.  Then the counter calls
 * themselves: set, add, adderr, seterr and a fi_cntr_wait that times out.
 */
#include "fn.h"

static const struct ft_prog prog = {
	.name = "fi_cntr_test",
	.summary = "counters instead of CQs for sends, receives and writes",
	.ep_type = FI_EP_RDM,
	.iters = 4,
	.window = 1,
	.sizes = "1,64,4k,64k,1m",
};

static struct fn_ep ep;
static size_t stride;
static int nmsg;

static size_t size_of(int i)
{
	return ft.opts.sizes[i % ft.opts.nsizes];
}

static char *slot(int i)
{
	return ep.buf + (size_t)i * stride;
}

static int cntr_reach(struct fid_cntr *cntr, uint64_t target,
		      const char *what)
{
	double start = ft_now();
	uint64_t v, errs;
	int ret;

	for (;;) {
		ret = fn_poll(&ep);
		if (ret)
			return ret;
		errs = fi_cntr_readerr(cntr);
		v = fi_cntr_read(cntr);
		FN_CHECK(!errs, "%s counter: %llu errors", what,
			 (unsigned long long)errs);
		if (v >= target)
			break;
		if (ft_now() - start > ft.opts.timeout) {
			ft_err("%s counter at %llu of %llu after %d s", what,
			       (unsigned long long)v,
			       (unsigned long long)target, ft.opts.timeout);
			return -FI_ETIMEDOUT;
		}
	}
	FN_CHECK(v == target, "%s counter at %llu, expected %llu", what,
		 (unsigned long long)v, (unsigned long long)target);
	return 0;
}

static int client(void)
{
	int i, ret = fn_wait_note(&ep, 'r');

	for (i = 0; !ret && i < nmsg; i++) {
		ft_fill(slot(i), size_of(i), i);
		ret = FN_POST(&ep, "fi_send",
			      fi_send(ep.ep, slot(i), size_of(i), ep.desc,
				      ep.peer, NULL));
	}
	if (!ret)
		ret = cntr_reach(ep.txcntr, nmsg, "send");
	/* the writes land where the messages did: not before they are checked */
	if (!ret)
		ret = fn_wait_note(&ep, 'v');
	for (i = 0; !ret && (ep.caps & FI_RMA) && i < nmsg; i++) {
		ft_fill(slot(i), size_of(i), 1000 + i);
		ret = FN_POST(&ep, "fi_write",
			      fi_write(ep.ep, slot(i), size_of(i), ep.desc,
				       ep.peer, ep.raddr + i * stride, ep.rkey,
				       NULL));
	}
	if (!ret && (ep.caps & FI_RMA))
		ret = cntr_reach(ep.txcntr, 2 * nmsg, "send + write");
	if (!ret)
		ret = fn_cq_quiet(&ep, &ep.tx, 10);
	return ret ? ret : fn_note('w');
}

static int server(void)
{
	int i, ret = 0;

	memset(ep.buf, 0, nmsg * stride);
	for (i = 0; !ret && i < nmsg; i++)
		ret = FN_POST(&ep, "fi_recv",
			      fi_recv(ep.ep, slot(i), size_of(i), ep.desc,
				      FI_ADDR_UNSPEC, NULL));
	if (!ret)
		ret = fn_note('r');
	if (!ret)
		ret = cntr_reach(ep.rxcntr, nmsg, "receive");
	for (i = 0; !ret && i < nmsg; i++)
		ret = ft_check(slot(i), size_of(i), i, "message");
	if (!ret)
		ret = fn_note('v');
	if (!ret)
		ret = fn_wait_note(&ep, 'w');
	for (i = 0; !ret && (ep.caps & FI_RMA) && i < nmsg; i++)
		ret = ft_check(slot(i), size_of(i), 1000 + i, "written data");
	if (!ret)
		ret = fn_cq_quiet(&ep, &ep.rx, 10);
	if (!ret)
		printf("%d messages%s counted and verified\n", nmsg,
		       ep.caps & FI_RMA ? " and writes" : "");
	return ret;
}

/* The counter calls, on a counter no operation uses any more. */
static int counter_calls(struct fid_cntr *c)
{
	uint64_t v;
	int ret;

	ret = fi_cntr_set(c, 5);
	v = fi_cntr_read(c);
	FN_CHECK(!ret && v == 5, "fi_cntr_set(5): %d, reads %llu", ret,
		 (unsigned long long)v);
	ret = fi_cntr_add(c, 3);
	v = fi_cntr_read(c);
	FN_CHECK(!ret && v == 8, "fi_cntr_add(3): %d, reads %llu", ret,
		 (unsigned long long)v);
	ret = fi_cntr_adderr(c, 2);
	v = fi_cntr_readerr(c);
	FN_CHECK(!ret && v == 2, "fi_cntr_adderr(2): %d, reads %llu", ret,
		 (unsigned long long)v);
	ret = fi_cntr_seterr(c, 0);
	v = fi_cntr_readerr(c);
	FN_CHECK(!ret && v == 0, "fi_cntr_seterr(0): %d, reads %llu", ret,
		 (unsigned long long)v);
	ret = fi_cntr_wait(c, 100, 10);
	FN_CHECK(ret == -FI_ETIMEDOUT || ret == -FI_ENOSYS ||
		 ret == -FI_EOPNOTSUPP, "fi_cntr_wait for 100 at 8: %s (%d), "
		 "expected a timeout", fi_strerror(-ret), ret);
	if (ret == -FI_ETIMEDOUT) {
		ret = fi_cntr_wait(c, 8, 1000);
		FN_CHECK(!ret, "fi_cntr_wait for 8 at 8: %s (%d)",
			 fi_strerror(-ret), ret);
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct fn_cfg cfg = { .caps = FI_MSG, .opt_caps = FI_RMA,
			      .counters = true };
	size_t max = 0;
	int i, ret;

	ft_parse(argc, argv, &prog);
	nmsg = ft.opts.iters * ft.opts.nsizes;
	if (nmsg > 256)
		nmsg = 256;
	for (i = 0; i < ft.opts.nsizes; i++)
		if (ft.opts.sizes[i] > max)
			max = ft.opts.sizes[i];
	stride = (max + 63) & ~(size_t)63;
	cfg.buf_size = nmsg * stride;
	ret = fn_setup(&ep, &cfg);
	if (!ret)
		ret = ft.server ? server() : client();
	if (!ret)
		ret = counter_calls(ft.server ? ep.txcntr : ep.rxcntr);
	return fn_exit(&ep, ret);
}
