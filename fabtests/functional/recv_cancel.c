// SPDX-License-Identifier: BSD-2-Clause
/*
 * fi_recv_cancel: fi_cancel of a posted receive.  The server posts an
 * untagged and a tagged receive, cancels both: each must complete on the
 * receive CQ with FI_ECANCELED and its own context, and neither buffer may
 * be written afterwards.  Fresh receives then take the client's messages,
 * byte for byte.  A provider whose fi_cancel returns -FI_ENOSYS is "not
 * supported".
 */
#include "fn.h"

static const struct ft_prog prog = {
	.name = "fi_recv_cancel",
	.summary = "fi_cancel of posted receives completes with FI_ECANCELED",
	.ep_type = FI_EP_RDM,
	.iters = 1,
	.window = 1,
	.sizes = "1,64,4k,64k,1m",
};

static struct fn_ep ep;
static size_t stride;

static int client_round(int r, size_t size)
{
	struct fn_comp c;
	int ret;

	ret = fn_wait_note(&ep, 'r');
	if (ret)
		return ret;
	ft_fill(ep.buf, size, r * 2);
	ft_fill(ep.buf + stride, size, r * 2 + 1);
	ret = FN_POST(&ep, "fi_send", fi_send(ep.ep, ep.buf, size, ep.desc,
					      ep.peer, NULL));
	if (!ret)
		ret = FN_POST(&ep, "fi_tsend",
			      fi_tsend(ep.ep, ep.buf + stride, size, ep.desc,
				       ep.peer, FT_TAG, NULL));
	if (!ret)
		ret = fn_wait_ctx(&ep, &ep.tx, NULL, &c);
	if (!ret)
		ret = fn_wait_ctx(&ep, &ep.tx, NULL, &c);
	return ret ? ret : fn_wait_note(&ep, 'd');
}

static int check_untouched(const char *p, size_t len, const char *what)
{
	size_t i;

	for (i = 0; i < len; i++)
		FN_CHECK((unsigned char)p[i] == 0xcc, "%s: byte %zu of a "
			 "cancelled receive buffer was written", what, i);
	return 0;
}

static int server_round(int r, size_t size)
{
	struct fi_context2 ctx[4];
	char *cancelled = ep.buf + 2 * stride;
	struct fn_comp c;
	bool seen[2] = { false };
	int i, k, ret;

	memset(cancelled, 0xcc, 2 * stride);
	ret = FN_POST(&ep, "fi_recv",
		      fi_recv(ep.ep, cancelled, size, ep.desc, FI_ADDR_UNSPEC,
			      &ctx[0]));
	if (!ret)
		ret = FN_POST(&ep, "fi_trecv",
			      fi_trecv(ep.ep, cancelled + stride, size,
				       ep.desc, FI_ADDR_UNSPEC, FT_TAG, 0,
				       &ctx[1]));
	for (i = 0; !ret && i < 2; i++) {
		ret = (int)fi_cancel(&ep.ep->fid, &ctx[i]);
		if (ret == -FI_ENOSYS || ret == -FI_EOPNOTSUPP) {
			fprintf(stderr, "%s: fi_cancel: %s: not supported\n",
				ft.prog->name, fi_strerror(-ret));
			return -FI_ENODATA;
		}
		if (ret)
			FT_ERR("fi_cancel", ret);
	}
	for (k = 0; !ret && k < 2; k++) {
		ret = fn_next(&ep, &ep.rx, &c);
		if (ret)
			return ret;
		i = (struct fi_context2 *)(c.err ? c.errent.op_context :
					   c.ent.op_context) - ctx;
		FN_CHECK(c.err == FI_ECANCELED, "size %zu: cancelled receive "
			 "completed with %s (%d), expected FI_ECANCELED", size,
			 c.err ? fi_strerror(c.err) : "success", c.err);
		FN_CHECK(i >= 0 && i < 2 && !seen[i], "size %zu: cancel "
			 "completion for context %p, expected %p or %p", size,
			 c.errent.op_context, (void *)&ctx[0],
			 (void *)&ctx[1]);
		FN_CHECK(c.errent.flags & FI_RECV, "size %zu: cancel "
			 "completion without FI_RECV (flags 0x%llx)", size,
			 (unsigned long long)c.errent.flags);
		seen[i] = true;
	}
	if (ret)
		return ret;
	memset(ep.buf, 0, 2 * stride);
	ret = FN_POST(&ep, "fi_recv",
		      fi_recv(ep.ep, ep.buf, size, ep.desc, FI_ADDR_UNSPEC,
			      &ctx[2]));
	if (!ret)
		ret = FN_POST(&ep, "fi_trecv",
			      fi_trecv(ep.ep, ep.buf + stride, size, ep.desc,
				       FI_ADDR_UNSPEC, FT_TAG, 0, &ctx[3]));
	if (!ret)
		ret = fn_note('r');
	for (k = 0; !ret && k < 2; k++) {
		ret = fn_wait_ctx(&ep, &ep.rx, NULL, &c);
		if (ret)
			return ret;
		i = (struct fi_context2 *)c.ent.op_context - ctx - 2;
		FN_CHECK(i == 0 || i == 1, "size %zu: message completed on "
			 "context %p, not on a fresh receive", size,
			 c.ent.op_context);
		FN_CHECK(c.ent.len == size, "size %zu: length %zu", size,
			 c.ent.len);
		ret = ft_check(ep.buf + i * stride, size, r * 2 + i,
			       i ? "tagged message" : "message");
	}
	if (!ret)
		ret = check_untouched(cancelled, size, "fi_recv");
	if (!ret)
		ret = check_untouched(cancelled + stride, size, "fi_trecv");
	if (!ret)
		ret = fn_cq_quiet(&ep, &ep.rx, 10);
	return ret ? ret : fn_note('d');
}

int main(int argc, char **argv)
{
	struct fn_cfg cfg = { .caps = FI_MSG | FI_TAGGED };
	size_t max = 0;
	int i, ret;

	ft_parse(argc, argv, &prog);
	for (i = 0; i < ft.opts.nsizes; i++)
		if (ft.opts.sizes[i] > max)
			max = ft.opts.sizes[i];
	stride = (max + 63) & ~(size_t)63;
	cfg.buf_size = 4 * stride;
	ret = fn_setup(&ep, &cfg);
	for (i = 0; !ret && i < ft.opts.nsizes; i++) {
		size_t size = ft.opts.sizes[i];

		if (size > ep.info->ep_attr->max_msg_size)
			continue;
		ret = ft.server ? server_round(i, size) :
				  client_round(i, size);
		if (!ret && ft.server)
			printf("%-8zu 2 receives cancelled, 2 messages "
			       "verified\n", size);
	}
	return fn_exit(&ep, ret);
}
