// SPDX-License-Identifier: BSD-2-Clause
/*
 * fi_unexpected_msg: messages that arrive before their receives are
 * posted.  The client sends one untagged and one tagged message of every
 * size, then tells the server, which drives progress a while longer and
 * only then posts its receives: the tagged ones in reverse order, so each
 * must be matched by tag out of the unexpected queue.  Lengths, tags and
 * bytes are checked.
 */
#include "fn.h"

static const struct ft_prog prog = {
	.name = "fi_unexpected_msg",
	.summary = "messages sent before the receives are posted",
	.ep_type = FI_EP_RDM,
	.iters = 1,
	.window = 1,
	.sizes = "1,64,4k,64k,1m",
};

static struct fn_ep ep;
static size_t stride;
static int nmsg;	/* per kind */

static char *slot(int kind, int i)
{
	return ep.buf + (size_t)(kind * nmsg + i) * stride;
}

static int client(void)
{
	struct fi_context2 *ctx = calloc(2 * nmsg, sizeof(*ctx));
	struct fn_comp c;
	int i, ret = ctx ? 0 : -FI_ENOMEM;

	for (i = 0; !ret && i < nmsg; i++) {
		size_t size = ft.opts.sizes[i];

		ft_fill(slot(0, i), size, i);
		ft_fill(slot(1, i), size, 1000 + i);
		ret = FN_POST(&ep, "fi_send",
			      fi_send(ep.ep, slot(0, i), size, ep.desc,
				      ep.peer, &ctx[i]));
		if (!ret)
			ret = FN_POST(&ep, "fi_tsend",
				      fi_tsend(ep.ep, slot(1, i), size, ep.desc,
					       ep.peer, FT_TAG + i,
					       &ctx[nmsg + i]));
	}
	if (!ret)
		ret = fn_note('p');
	for (i = 0; !ret && i < 2 * nmsg; i++)
		ret = fn_wait_ctx(&ep, &ep.tx, NULL, &c);
	free(ctx);
	return ret ? ret : fn_wait_note(&ep, 'd');
}

static int server(void)
{
	struct fi_context2 *ctx = calloc(2 * nmsg, sizeof(*ctx));
	struct fn_comp c;
	int i, k, ret = ctx ? 0 : -FI_ENOMEM;

	/* the messages are on their way or already here: no receive yet */
	if (!ret)
		ret = fn_wait_note(&ep, 'p');
	if (!ret)
		ret = fn_cq_quiet(&ep, &ep.rx, 200);
	for (i = nmsg - 1; !ret && i >= 0; i--)
		ret = FN_POST(&ep, "fi_trecv",
			      fi_trecv(ep.ep, slot(1, i), ft.opts.sizes[i],
				       ep.desc, FI_ADDR_UNSPEC, FT_TAG + i, 0,
				       &ctx[nmsg + i]));
	for (i = 0; !ret && i < nmsg; i++)
		ret = FN_POST(&ep, "fi_recv",
			      fi_recv(ep.ep, slot(0, i), stride, ep.desc,
				      FI_ADDR_UNSPEC, &ctx[i]));
	for (k = 0; !ret && k < 2 * nmsg; k++) {
		int n, kind;

		ret = fn_wait_ctx(&ep, &ep.rx, NULL, &c);
		if (ret)
			break;
		n = (struct fi_context2 *)c.ent.op_context - ctx;
		if (n < 0 || n >= 2 * nmsg || ctx[n].internal[7]) {
			ft_err("completion with unknown or repeated context %p",
			       c.ent.op_context);
			ret = -FI_EIO;
			break;
		}
		ctx[n].internal[7] = (void *)1;	/* ours again: seen */
		kind = n / nmsg;
		i = n % nmsg;
		if (c.ent.len != ft.opts.sizes[i] ||
		    (kind && c.ent.tag != FT_TAG + i) ||
		    !(c.ent.flags & FI_RECV)) {
			ft_err("%s message %d: length %zu tag 0x%llx flags "
			       "0x%llx, expected length %zu tag 0x%llx",
			       kind ? "tagged" : "untagged", i, c.ent.len,
			       (unsigned long long)c.ent.tag,
			       (unsigned long long)c.ent.flags,
			       ft.opts.sizes[i],
			       (unsigned long long)(FT_TAG + i));
			ret = -FI_EIO;
			break;
		}
		ret = ft_check(slot(kind, i), ft.opts.sizes[i],
			       kind * 1000 + i,
			       kind ? "tagged message" : "message");
	}
	free(ctx);
	if (!ret)
		printf("%d untagged and %d tagged unexpected messages "
		       "verified\n", nmsg, nmsg);
	return ret ? ret : fn_note('d');
}

int main(int argc, char **argv)
{
	struct fn_cfg cfg = { .caps = FI_MSG | FI_TAGGED };
	size_t max = 0;
	int i, ret;

	ft_parse(argc, argv, &prog);
	nmsg = ft.opts.nsizes;
	for (i = 0; i < nmsg; i++)
		if (ft.opts.sizes[i] > max)
			max = ft.opts.sizes[i];
	stride = (max + 63) & ~(size_t)63;
	cfg.buf_size = 2 * nmsg * stride;
	ret = fn_setup(&ep, &cfg);
	if (!ret && max > ep.info->ep_attr->max_msg_size) {
		ft_err("size %zu exceeds max_msg_size", max);
		ret = -FI_EINVAL;
	}
	if (!ret)
		ret = ft.server ? server() : client();
	return fn_exit(&ep, ret);
}
