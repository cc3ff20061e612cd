// SPDX-License-Identifier: BSD-2-Clause
/*
 * fi_inject_test: fi_inject and fi_tinject of every size class up to the
 * provider's inject_size.  The sender overwrites its buffer right after
 * each call returns (an injected buffer is the caller's again at once);
 * the receiver checks every message byte for byte.  Injected sends must
 * not write transmit completions.
 */
#include "fn.h"

static const struct ft_prog prog = {
	.name = "fi_inject_test",
	.summary = "fi_inject/fi_tinject up to inject_size, buffer reused at once",
	.ep_type = FI_EP_RDM,
	.iters = 1,
	.window = 1,
	.sizes = "1",
};

#define MAXN 64
static struct fn_ep ep;
static size_t sizes[MAXN];
static int nsizes;

/* 0, 1, powers of two and their neighbours, inject_size - 1, inject_size */
static void pick_sizes(size_t inject)
{
	size_t s;

	nsizes = 0;
	sizes[nsizes++] = 0;
	for (s = 1; s < inject && nsizes < MAXN - 4; s <<= 1) {
		sizes[nsizes++] = s;
		if (s > 2 && s + 1 < inject)
			sizes[nsizes++] = s + 1;
	}
	if (inject > 1 && sizes[nsizes - 1] != inject - 1)
		sizes[nsizes++] = inject - 1;
	sizes[nsizes++] = inject;
}

static int client(void)
{
	int k, i, ret = fn_wait_note(&ep, 'r');

	for (k = 0; !ret && k < 2; k++) {
		for (i = 0; !ret && i < nsizes; i++) {
			ft_fill(ep.buf, sizes[i], k * 100 + i);
			if (k)
				ret = FN_POST(&ep, "fi_tinject",
					      fi_tinject(ep.ep, ep.buf, sizes[i],
							 ep.peer, FT_TAG + i));
			else
				ret = FN_POST(&ep, "fi_inject",
					      fi_inject(ep.ep, ep.buf, sizes[i],
							ep.peer));
			/* the buffer is ours again */
			memset(ep.buf, 0xa5, sizes[i]);
		}
	}
	if (!ret)
		ret = fn_cq_quiet(&ep, &ep.tx, 20);
	return ret ? ret : fn_wait_note(&ep, 'd');
}

static int server(void)
{
	struct fi_context2 ctx[2 * MAXN];
	size_t stride = (sizes[nsizes - 1] + 63) & ~(size_t)63;
	bool seen[2 * MAXN] = { false };
	struct fn_comp c;
	int k, i, n, ret = 0;

	if (!stride)
		stride = 64;
	for (k = 0; !ret && k < 2; k++) {
		for (i = 0; !ret && i < nsizes; i++) {
			char *buf = ep.buf + (k * nsizes + i) * stride;

			ret = k ? FN_POST(&ep, "fi_trecv",
					  fi_trecv(ep.ep, buf, stride, ep.desc,
						   FI_ADDR_UNSPEC, FT_TAG + i,
						   0, &ctx[nsizes + i])) :
				  FN_POST(&ep, "fi_recv",
					  fi_recv(ep.ep, buf, stride, ep.desc,
						  FI_ADDR_UNSPEC, &ctx[i]));
		}
	}
	if (!ret)
		ret = fn_note('r');
	for (n = 0; !ret && n < 2 * nsizes; n++) {
		ret = fn_wait_ctx(&ep, &ep.rx, NULL, &c);
		if (ret)
			break;
		i = (struct fi_context2 *)c.ent.op_context - ctx;
		FN_CHECK(i >= 0 && i < 2 * nsizes && !seen[i], "completion "
			 "with unknown context %p", c.ent.op_context);
		seen[i] = true;
		k = i / nsizes;
		i %= nsizes;
		FN_CHECK(c.ent.len == sizes[i], "%s of %zu bytes completed "
			 "with length %zu", k ? "fi_tinject" : "fi_inject",
			 sizes[i], c.ent.len);
		ret = ft_check(ep.buf + (k * nsizes + i) * stride, sizes[i],
			       k * 100 + i, k ? "fi_tinject" : "fi_inject");
	}
	if (!ret)
		printf("fi_inject and fi_tinject of %d sizes up to %zu "
		       "verified\n", nsizes, sizes[nsizes - 1]);
	return ret ? ret : fn_note('d');
}

int main(int argc, char **argv)
{
	struct fn_cfg cfg = { .caps = FI_MSG | FI_TAGGED };
	size_t inject;
	int ret;

	ft_parse(argc, argv, &prog);
	cfg.buf_size = 4UL << 20;
	ret = fn_setup(&ep, &cfg);
	if (!ret) {
		inject = ep.info->tx_attr->inject_size;
		if (!inject) {
			fprintf(stderr, "%s: inject_size is 0\n", prog.name);
			ret = -FI_ENODATA;
		} else if (2 * MAXN * ((inject + 63) & ~(size_t)63) >
			   ep.buf_size) {
			inject = ep.buf_size / (2 * MAXN) - 64;
		}
		pick_sizes(inject);
	}
	if (!ret)
		ret = ft.server ? server() : client();
	return fn_exit(&ep, ret);
}
