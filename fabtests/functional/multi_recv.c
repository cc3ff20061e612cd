// SPDX-License-Identifier: BSD-2-Clause
/*
 * fi_multi_recv: one FI_MULTI_RECV buffer takes many messages.  For every
 * size, the client sends N messages into a buffer of exactly N * size
 * bytes (FI_OPT_MIN_MULTI_RECV is 1, so it is released when full).  Each
 * completion must point inside the buffer, after the previous message,
 * with the right length and bytes; the buffer's release is flagged
 * FI_MULTI_RECV exactly once, on the last message or on an entry of its
 * own, and nothing lands in the buffer after it.  A second buffer posted
 * behind the first takes the next messages.
 */
#include "fn.h"

static const struct ft_prog prog = {
	.name = "fi_multi_recv",
	.summary = "FI_MULTI_RECV buffers filled by many messages",
	.ep_type = FI_EP_RDM,
	.iters = 8,
	.window = 1,
	.sizes = "1,64,4k,64k",
};

#define NBUF 2
/* Largest message this test sends; larger -S sizes are skipped. */
#define MAX_SIZE (256UL << 10)

static struct fn_ep ep;

static int set_min(struct fid_ep *e)
{
	size_t min = 1;
	int ret;

	ret = fi_setopt(&e->fid, FI_OPT_ENDPOINT, FI_OPT_MIN_MULTI_RECV, &min,
			sizeof(min));
	if (ret == -FI_ENOPROTOOPT || ret == -FI_ENOSYS) {
		fprintf(stderr, "%s: FI_OPT_MIN_MULTI_RECV not supported\n",
			ft.prog->name);
		return -FI_ENODATA;
	}
	if (ret)
		FT_ERR("fi_setopt(FI_OPT_MIN_MULTI_RECV)", ret);
	return ret;
}

static int client_round(int r, size_t size, int n)
{
	struct fn_comp c;
	int i, ret;

	ret = fn_wait_note(&ep, 'r');
	for (i = 0; !ret && i < NBUF * n; i++) {
		char *buf = ep.buf + (size_t)(i % 4) * size;

		if (i >= 4) {
			ret = fn_wait_ctx(&ep, &ep.tx, NULL, &c);
			if (ret)
				return ret;
		}
		ft_fill(buf, size, r * 1000 + i);
		ret = FN_POST(&ep, "fi_send", fi_send(ep.ep, buf, size, ep.desc,
						      ep.peer, NULL));
	}
	for (i = NBUF * n < 4 ? NBUF * n : 4; !ret && i > 0; i--)
		ret = fn_wait_ctx(&ep, &ep.tx, NULL, &c);
	return ret ? ret : fn_wait_note(&ep, 'd');
}

static int server_round(int r, size_t size, int n)
{
	struct fi_context2 ctx[NBUF];
	struct iovec iov[NBUF];
	struct fi_msg msg[NBUF];
	size_t len = size * n, next[NBUF] = { 0 };
	bool released[NBUF] = { false };
	int b, got = 0, ret;
	struct fn_comp c;

	memset(ep.buf, 0xee, NBUF * len);
	for (b = 0; b < NBUF; b++) {
		iov[b].iov_base = ep.buf + b * len;
		iov[b].iov_len = len;
		msg[b] = (struct fi_msg){ .msg_iov = &iov[b], .desc = &ep.desc,
					  .iov_count = 1,
					  .addr = FI_ADDR_UNSPEC,
					  .context = &ctx[b] };
		ret = FN_POST(&ep, "fi_recvmsg(FI_MULTI_RECV)",
			      fi_recvmsg(ep.ep, &msg[b], FI_MULTI_RECV));
		if (ret)
			return ret;
	}
	ret = fn_note('r');
	while (!ret && (!released[NBUF - 1] || got < NBUF * n)) {
		char *p;

		ret = fn_wait_ctx(&ep, &ep.rx, NULL, &c);
		if (ret)
			return ret;
		b = (struct fi_context2 *)c.ent.op_context - ctx;
		FN_CHECK(b >= 0 && b < NBUF, "completion with unknown "
			 "context %p", c.ent.op_context);
		FN_CHECK(!released[b], "size %zu: buffer %d completed after "
			 "its FI_MULTI_RECV release", size, b);
		FN_CHECK(b == 0 || released[0] || !c.ent.len,
			 "size %zu: buffer %d used before buffer 0 was full",
			 size, b);
		if (c.ent.len) {
			p = c.ent.buf;
			FN_CHECK(c.ent.len == size, "size %zu: message %d "
				 "completed with length %zu", size, got,
				 c.ent.len);
			FN_CHECK(p == (char *)iov[b].iov_base + next[b],
				 "size %zu: message %d at offset %td of buffer "
				 "%d, expected %zu", size, got,
				 p - (char *)iov[b].iov_base, b, next[b]);
			ret = ft_check(p, size, r * 1000 + got, "message");
			if (ret)
				return ret;
			next[b] += size;
			got++;
		}
		if (c.ent.flags & FI_MULTI_RECV) {
			FN_CHECK(next[b] == len, "size %zu: buffer %d released "
				 "with %zu of %zu bytes used", size, b, next[b],
				 len);
			released[b] = true;
		}
	}
	if (!ret)
		ret = fn_cq_quiet(&ep, &ep.rx, 10);
	return ret ? ret : fn_note('d');
}

int main(int argc, char **argv)
{
	struct fn_cfg cfg = { .caps = FI_MSG | FI_MULTI_RECV,
			      .set_opts = set_min };
	int i, n = 0, ret;
	size_t size;

	ft_parse(argc, argv, &prog);
	cfg.buf_size = NBUF * MAX_SIZE * ft.opts.iters;
	ret = fn_setup(&ep, &cfg);
	for (i = 0; !ret && i < ft.opts.nsizes; i++) {
		size = ft.opts.sizes[i];
		if (size > MAX_SIZE || size > ep.info->ep_attr->max_msg_size)
			continue;
		ret = ft.server ? server_round(i, size, ft.opts.iters) :
				  client_round(i, size, ft.opts.iters);
		if (!ret && ft.server)
			printf("%-8zu %d buffers of %d messages verified\n",
			       size, NBUF, ft.opts.iters);
		n++;
	}
	if (!ret && !n) {
		ft_err("no size up to %lu bytes to test", MAX_SIZE);
		ret = -FI_EINVAL;
	}
	return fn_exit(&ep, ret);
}
