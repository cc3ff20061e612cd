// SPDX-License-Identifier: BSD-2-Clause
/*
 * fi_directed_recv: receives that name their source (FI_DIRECTED_RECV).
 * The client program opens two endpoints, A and B.  The server posts a
 * receive for B, then one for A (untagged and tagged, same tag), then
 * A sends, then B: each message must land in the receive naming its
 * sender, not in the first one posted.  A receive with FI_ADDR_UNSPEC
 * takes the next message from either.  Bytes are checked.
 */
#include "fn.h"

static const struct ft_prog prog = {
	.name = "fi_directed_recv",
	.summary = "receives directed at one source (FI_DIRECTED_RECV)",
	.ep_type = FI_EP_RDM,
	.iters = 1,
	.window = 1,
	.sizes = "64,64k",
};

static struct fn_cfg cfg = { .caps = FI_MSG | FI_TAGGED | FI_DIRECTED_RECV };
static struct fn_ep ep, ep_b;
static size_t stride;

enum { SEED_A = 1, SEED_B = 2, SEED_ANY = 3 };

static int send_one(struct fn_ep *e, bool tagged, size_t size, int seed)
{
	struct fn_comp c;
	int ret;

	ft_fill(e->buf, size, seed);
	ret = tagged ? FN_POST(e, "fi_tsend",
			       fi_tsend(e->ep, e->buf, size, e->desc, e->peer,
					FT_TAG, NULL)) :
		       FN_POST(e, "fi_send",
			       fi_send(e->ep, e->buf, size, e->desc, e->peer,
				       NULL));
	return ret ? ret : fn_wait_ctx(e, &e->tx, NULL, &c);
}

static int client_round(int r, size_t size)
{
	int k, ret = 0;

	for (k = 0; !ret && k < 2; k++) {
		ret = fn_wait_note(&ep, 'r');
		if (!ret)
			ret = send_one(&ep, k, size, r * 10 + SEED_A);
		if (!ret)
			ret = fn_wait_note(&ep, 'a');
		if (!ret)
			ret = send_one(&ep_b, k, size, r * 10 + SEED_B);
		if (!ret)
			ret = send_one(&ep, k, size, r * 10 + SEED_ANY);
		if (!ret)
			ret = fn_wait_note(&ep, 'd');
	}
	return ret;
}

static int post(bool tagged, int slot, size_t size, fi_addr_t src,
		struct fi_context2 *ctx)
{
	char *buf = ep.buf + slot * stride;

	memset(buf, 0, size);
	return tagged ? FN_POST(&ep, "fi_trecv",
				fi_trecv(ep.ep, buf, size, ep.desc, src,
					 FT_TAG, 0, &ctx[slot])) :
			FN_POST(&ep, "fi_recv",
				fi_recv(ep.ep, buf, size, ep.desc, src,
					&ctx[slot]));
}

static int expect(struct fi_context2 *ctx, int slot, size_t size, int seed,
		  const char *what)
{
	struct fn_comp c;
	int ret = fn_wait_ctx(&ep, &ep.rx, NULL, &c);

	if (ret)
		return ret;
	FN_CHECK(c.ent.op_context == &ctx[slot], "%s: message completed the "
		 "receive posted %s", what,
		 c.ent.op_context == &ctx[0] ? "for B" :
		 c.ent.op_context == &ctx[1] ? "for A" : "for any source");
	FN_CHECK(c.ent.len == size, "%s: length %zu", what, c.ent.len);
	return ft_check(ep.buf + slot * stride, size, seed, what);
}

/* B's message on the receive for B, A's second on the one for anyone. */
static int expect2(struct fi_context2 *ctx, size_t size, int seed)
{
	bool seen[3] = { false };
	struct fn_comp c;
	int n, slot, ret = 0;

	for (n = 0; !ret && n < 2; n++) {
		ret = fn_wait_ctx(&ep, &ep.rx, NULL, &c);
		if (ret)
			break;
		slot = (struct fi_context2 *)c.ent.op_context - ctx;
		FN_CHECK((slot == 0 || slot == 2) && !seen[slot],
			 "completion for context %p", c.ent.op_context);
		seen[slot] = true;
		FN_CHECK(c.ent.len == size, "length %zu", c.ent.len);
		ret = ft_check(ep.buf + slot * stride, size,
			       seed + (slot ? SEED_ANY : SEED_B),
			       slot ? "receive from any source (A's second "
			       "message expected)" : "receive directed at B");
	}
	return ret;
}

static int server_round(int r, size_t size, fi_addr_t a, fi_addr_t b)
{
	struct fi_context2 ctx[3];
	int k, ret = 0;

	for (k = 0; !ret && k < 2; k++) {
		ret = post(k, 0, size, b, ctx);
		if (!ret)
			ret = post(k, 1, size, a, ctx);
		if (!ret)
			ret = fn_note('r');
		if (!ret)
			ret = expect(ctx, 1, size, r * 10 + SEED_A,
				     "message from A");
		if (!ret)
			ret = post(k, 2, size, FI_ADDR_UNSPEC, ctx);
		if (!ret)
			ret = fn_note('a');
		/* two connections: the two may come in either order */
		if (!ret)
			ret = expect2(ctx, size, r * 10);
		if (!ret)
			ret = fn_note('d');
		if (!ret)
			printf("%-8zu %s directed receives verified\n", size,
			       k ? "tagged" : "untagged");
	}
	return ret;
}

int main(int argc, char **argv)
{
	struct fi_info *info;
	fi_addr_t a, b;
	size_t max = 0;
	int i, ret;

	ft_parse(argc, argv, &prog);
	for (i = 0; i < ft.opts.nsizes; i++)
		if (ft.opts.sizes[i] > max)
			max = ft.opts.sizes[i];
	stride = (max + 63) & ~(size_t)63;
	cfg.buf_size = 3 * stride;
	ret = fn_setup(&ep, &cfg);
	a = ep.peer;	/* the server's view of the client's endpoint A */
	/* B: a second endpoint of the client, with a fabric of its own */
	if (!ret && !ft.server) {
		ret = fn_getinfo_local(&cfg, &info, &ep_b.caps);
		if (!ret)
			ret = fn_open(&ep_b, &cfg, info);
	}
	ret = fn_agree(ret);
	if (!ret)
		ret = fn_agree(fn_exchange(ft.server ? &ep : &ep_b));
	b = ep.peer;
	if (!ret && ft.server && a == b) {
		ft_err("A and B got the same fi_addr_t");
		ret = -FI_EIO;
	}
	for (i = 0; !ret && i < ft.opts.nsizes; i++) {
		size_t size = ft.opts.sizes[i];

		ret = ft.server ? server_round(i, size, a, b) :
				  client_round(i, size);
	}
	fn_close(&ep_b);
	return fn_exit(&ep, ret);
}
