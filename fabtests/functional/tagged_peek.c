// SPDX-License-Identifier: BSD-2-Clause
/*
 * fi_tagged_peek: FI_PEEK, FI_CLAIM and FI_DISCARD on tagged messages that
 * wait in the unexpected queue.  The client sends tags 1 to 4; the server
 *   - peeks tag 1 (retrying FI_ENOMSG until it has arrived), peeks a tag
 *     never sent (FI_ENOMSG), peeks tag 1 again (a peek leaves it queued);
 *   - claims tag 2 with FI_PEEK | FI_CLAIM, then receives it by FI_CLAIM;
 *   - claims tag 3, then drops it with FI_CLAIM | FI_DISCARD;
 *   - drops tag 4 with FI_PEEK | FI_DISCARD;
 *   - peeks tags 3 and 4 (gone: FI_ENOMSG) and receives tag 1.
 * Lengths, tags and the received bytes are checked.
 */
#include "fn.h"

static const struct ft_prog prog = {
	.name = "fi_tagged_peek",
	.summary = "FI_PEEK, FI_CLAIM and FI_DISCARD on tagged receives",
	.ep_type = FI_EP_RDM,
	.iters = 1,
	.window = 1,
	.sizes = "1,64,4k,64k,1m",
};

#define NTAGS 4
static struct fn_ep ep;
static size_t stride;

static uint64_t tag_of(int t)
{
	return FT_TAG + t;
}

static int client_round(int r, size_t size)
{
	struct fi_context2 ctx[NTAGS];
	struct fn_comp c;
	int t, ret = 0;

	for (t = 1; !ret && t <= NTAGS; t++) {
		char *buf = ep.buf + (t - 1) * stride;

		ft_fill(buf, size, r * 10 + t);
		ret = FN_POST(&ep, "fi_tsend",
			      fi_tsend(ep.ep, buf, size, ep.desc, ep.peer,
				       tag_of(t), &ctx[t - 1]));
	}
	if (!ret)
		ret = fn_note('p');
	for (t = 0; !ret && t < NTAGS; t++)
		ret = fn_wait_ctx(&ep, &ep.tx, NULL, &c);
	return ret ? ret : fn_wait_note(&ep, 'd');
}

/* fi_trecvmsg of tag t with flags; returns the completion's FI_Exxx. */
static int trecvmsg(int t, void *buf, size_t len, uint64_t flags,
		    struct fi_context2 *ctx, struct fn_comp *c)
{
	struct iovec iov = { .iov_base = buf, .iov_len = len };
	struct fi_msg_tagged msg = {
		.msg_iov = buf ? &iov : NULL,
		.desc = buf ? &ep.desc : NULL,
		.iov_count = buf ? 1 : 0,
		.addr = FI_ADDR_UNSPEC,
		.tag = tag_of(t),
		.ignore = 0,
		.context = ctx,
	};
	void *got;
	int ret;

	ret = FN_POST(&ep, "fi_trecvmsg", fi_trecvmsg(ep.ep, &msg, flags));
	if (!ret)
		ret = fn_next(&ep, &ep.rx, c);
	if (ret)
		return ret;
	got = c->err ? c->errent.op_context : c->ent.op_context;
	FN_CHECK(got == ctx, "tag %d flags 0x%llx: completion for context "
		 "%p, expected %p", t, (unsigned long long)flags, got,
		 (void *)ctx);
	return c->err;
}

static int peek_found(int t, size_t size, uint64_t flags,
		      struct fi_context2 *ctx, bool retry)
{
	double start = ft_now();
	struct fn_comp c;
	int err;

	for (;;) {
		err = trecvmsg(t, NULL, 0, FI_PEEK | flags, ctx, &c);
		if (err != FI_ENOMSG || !retry)
			break;
		if (ft_now() - start > ft.opts.timeout) {
			ft_err("tag %d never arrived", t);
			return -FI_ETIMEDOUT;
		}
	}
	if (err < 0)
		return err;
	FN_CHECK(!err, "peek of tag %d: %s (%d), expected a match", t,
		 fi_strerror(err), err);
	/* a discarded message may report no length */
	FN_CHECK((c.ent.len == size || (flags & FI_DISCARD)) &&
		 c.ent.tag == tag_of(t),
		 "peek of tag %d: length %zu tag 0x%llx, expected %zu 0x%llx",
		 t, c.ent.len, (unsigned long long)c.ent.tag, size,
		 (unsigned long long)tag_of(t));
	return 0;
}

static int peek_absent(int t)
{
	struct fi_context2 ctx;
	struct fn_comp c;
	int err = trecvmsg(t, NULL, 0, FI_PEEK, &ctx, &c);

	if (err < 0)
		return err;
	FN_CHECK(err == FI_ENOMSG, "peek of tag %d: %s (%d), expected "
		 "FI_ENOMSG", t, err ? fi_strerror(err) : "a match", err);
	return 0;
}

static int recv_check(int r, int t, size_t size, uint64_t flags,
		      struct fi_context2 *ctx)
{
	char *buf = ep.buf + (t - 1) * stride;
	struct fn_comp c;
	int err;

	memset(buf, 0, size);
	err = trecvmsg(t, buf, size, flags, ctx, &c);
	if (err < 0)
		return err;
	FN_CHECK(!err, "receive of tag %d: %s (%d)", t, fi_strerror(err), err);
	FN_CHECK(c.ent.len == size && c.ent.tag == tag_of(t),
		 "receive of tag %d: length %zu tag 0x%llx", t, c.ent.len,
		 (unsigned long long)c.ent.tag);
	return ft_check(buf, size, r * 10 + t, "received message");
}

static int server_round(int r, size_t size)
{
	struct fi_context2 ctx[NTAGS + 1];
	struct fn_comp c;
	int err, ret;

	ret = fn_wait_note(&ep, 'p');
	if (!ret)
		ret = peek_found(1, size, 0, &ctx[0], true);
	if (!ret)
		ret = peek_absent(NTAGS + 1);
	if (!ret)
		ret = peek_found(1, size, 0, &ctx[0], false);
	/* claim, then receive the claimed message */
	if (!ret)
		ret = peek_found(2, size, FI_CLAIM, &ctx[2], true);
	if (!ret)
		ret = recv_check(r, 2, size, FI_CLAIM, &ctx[2]);
	/* claim, then discard */
	if (!ret)
		ret = peek_found(3, size, FI_CLAIM, &ctx[3], true);
	if (!ret) {
		err = trecvmsg(3, NULL, 0, FI_CLAIM | FI_DISCARD, &ctx[3], &c);
		ret = err < 0 ? err : 0;
		FN_CHECK(!err, "FI_CLAIM | FI_DISCARD of tag 3: %s (%d)",
			 fi_strerror(err), err);
	}
	/* peek and discard in one */
	if (!ret)
		ret = peek_found(4, size, FI_DISCARD, &ctx[4], true);
	if (!ret)
		ret = peek_absent(3);
	if (!ret)
		ret = peek_absent(4);
	if (!ret)
		ret = recv_check(r, 1, size, 0, &ctx[1]);
	if (!ret)
		ret = fn_cq_quiet(&ep, &ep.rx, 10);
	return ret ? ret : fn_note('d');
}

int main(int argc, char **argv)
{
	struct fn_cfg cfg = { .caps = FI_TAGGED };
	size_t max = 0;
	int i, ret;

	ft_parse(argc, argv, &prog);
	for (i = 0; i < ft.opts.nsizes; i++)
		if (ft.opts.sizes[i] > max)
			max = ft.opts.sizes[i];
	stride = (max + 63) & ~(size_t)63;
	cfg.buf_size = NTAGS * stride;
	ret = fn_setup(&ep, &cfg);
	for (i = 0; !ret && i < ft.opts.nsizes; i++) {
		size_t size = ft.opts.sizes[i];

		if (size > ep.info->ep_attr->max_msg_size)
			continue;
		ret = ft.server ? server_round(i, size) :
				  client_round(i, size);
		if (!ret && ft.server)
			printf("%-8zu peek, claim, discard verified\n", size);
	}
	return fn_exit(&ep, ret);
}
