// SPDX-License-Identifier: BSD-2-Clause
/*
 * fi_flood: many messages without pacing.  The client posts every message
 * of a size as fast as the provider takes them, reusing a buffer as soon as
 * its send completes; the server keeps only a few receives posted and
 * reposts each as it completes, so most messages wait in the provider's
 * unexpected queue.  Every message must arrive exactly once, in order, with
 * its own bytes.
 */
#include "fn.h"

static const struct ft_prog prog = {
	.name = "fi_flood",
	.summary = "many small messages without pacing, nothing lost",
	.ep_type = FI_EP_RDM,
	.iters = 2000,
	.window = 256,
	.sizes = "1,64,4k",
};

#define MAX_SIZE (64UL << 10)
#define RX_SLOTS 16

static struct fn_ep ep;
static size_t stride;

/* -I messages of each size up to 4k (at least 1000: a flood), fewer above. */
static int count_for(size_t size)
{
	long n = ft.opts.iters < 1000 ? 1000 : ft.opts.iters;

	if (size > 4096)
		n = n * 4096 / (long)size;
	return n < 100 ? 100 : (int)n;
}

static int client_round(int r, size_t size, int n)
{
	int nslots = ft.opts.window, i, busy = 0, ret = 0;
	struct fi_context2 *ctx = calloc(nslots, sizeof(*ctx));
	struct fn_comp c;
	int *free_slot = calloc(nslots, sizeof(int));

	if (!ctx || !free_slot)
		ret = -FI_ENOMEM;
	for (i = 0; i < nslots; i++)
		free_slot[i] = nslots - 1 - i;
	for (i = 0; !ret && i < n; i++) {
		int s;

		if (busy == nslots) {
			ret = fn_wait_ctx(&ep, &ep.tx, NULL, &c);
			if (ret)
				break;
			free_slot[nslots - busy--] =
				(struct fi_context2 *)c.ent.op_context - ctx;
		}
		s = free_slot[nslots - 1 - busy++];
		ft_fill(ep.buf + s * stride, size, r * 100000 + i);
		ret = FN_POST(&ep, "fi_send",
			      fi_send(ep.ep, ep.buf + s * stride, size, ep.desc,
				      ep.peer, &ctx[s]));
	}
	while (!ret && busy--)
		ret = fn_wait_ctx(&ep, &ep.tx, NULL, &c);
	free(ctx);
	free(free_slot);
	return ret ? ret : fn_wait_note(&ep, 'd');
}

static int post(int s, int *idx, int *posted, size_t size,
		struct fi_context2 *ctx)
{
	idx[s] = (*posted)++;
	return FN_POST(&ep, "fi_recv",
		       fi_recv(ep.ep, ep.buf + s * stride, size, ep.desc,
			       FI_ADDR_UNSPEC, &ctx[s]));
}

static int server_round(int r, size_t size, int n)
{
	struct fi_context2 ctx[RX_SLOTS];
	int idx[RX_SLOTS], posted = 0, got = 0, s, ret = 0;
	struct fn_comp c;

	for (s = 0; !ret && s < RX_SLOTS && posted < n; s++)
		ret = post(s, idx, &posted, size, ctx);
	while (!ret && got < n) {
		ret = fn_wait_ctx(&ep, &ep.rx, NULL, &c);
		if (ret)
			break;
		s = (struct fi_context2 *)c.ent.op_context - ctx;
		FN_CHECK(s >= 0 && s < RX_SLOTS, "unknown context %p",
			 c.ent.op_context);
		FN_CHECK(c.ent.len == size, "message %d of %d: length %zu, "
			 "expected %zu", idx[s], n, c.ent.len, size);
		ret = ft_check(ep.buf + s * stride, size, r * 100000 + idx[s],
			       "message");
		if (ret) {
			ft_err("message %d of %d (%d received)", idx[s], n, got);
			break;
		}
		got++;
		if (posted < n)
			ret = post(s, idx, &posted, size, ctx);
	}
	if (!ret)
		ret = fn_cq_quiet(&ep, &ep.rx, 10);
	return ret ? ret : fn_note('d');
}

int main(int argc, char **argv)
{
	struct fn_cfg cfg = { .caps = FI_MSG };
	int i, n, tested = 0, ret;
	size_t size;

	ft_parse(argc, argv, &prog);
	stride = MAX_SIZE;
	cfg.buf_size = (size_t)(ft.opts.window > RX_SLOTS ? ft.opts.window :
				RX_SLOTS) * stride;
	ret = fn_setup(&ep, &cfg);
	for (i = 0; !ret && i < ft.opts.nsizes; i++) {
		size = ft.opts.sizes[i];
		if (size > MAX_SIZE || size > ep.info->ep_attr->max_msg_size)
			continue;
		n = count_for(size);
		ret = ft.server ? server_round(i, size, n) :
				  client_round(i, size, n);
		if (!ret && ft.server)
			printf("%-8zu %d messages, all received in order and "
			       "verified\n", size, n);
		tested++;
	}
	if (!ret && !tested) {
		ft_err("no size up to %lu bytes to test", MAX_SIZE);
		ret = -FI_EINVAL;
	}
	return fn_exit(&ep, ret);
}
