// SPDX-License-Identifier: BSD-2-Clause
/*
 * fi_av_xfer: AV changes while traffic flows.  Three rounds of a burst of
 * messages and a burst of replies.  In round 1 the server removes the
 * client from its AV after half of the burst has arrived (the rest is in
 * flight), inserts it again and replies through the new fi_addr_t; in
 * round 2 the client does the same with the server's address before it
 * sends.  fi_av_lookup must give back the inserted address.  Every message
 * is checked byte for byte.
 */
#include "fn.h"

static const struct ft_prog prog = {
	.name = "fi_av_xfer",
	.summary = "AV remove and reinsert of a peer while traffic flows",
	.ep_type = FI_EP_RDM,
	.iters = 1,
	.window = 1,
	.sizes = "1,64,4k,64k,1m",
};

#define ROUNDS 3
static struct fn_ep ep;
static size_t stride;
static int nmsg;

static size_t size_of(int i)
{
	return ft.opts.sizes[i % ft.opts.nsizes];
}

static char *slot(int rx, int i)
{
	return ep.buf + (size_t)(rx * nmsg + i) * stride;
}

static int reinsert(void)
{
	char name[256], again[256];
	size_t len = sizeof(name), len2 = sizeof(again);
	fi_addr_t old = ep.peer;
	int ret;

	ret = fi_av_lookup(ep.av, ep.peer, name, &len);
	if (ret) {
		FT_ERR("fi_av_lookup", ret);
		return ret;
	}
	ret = fi_av_remove(ep.av, &ep.peer, 1, 0);
	if (ret) {
		FT_ERR("fi_av_remove", ret);
		return ret;
	}
	ret = fi_av_insert(ep.av, name, 1, &ep.peer, 0, NULL);
	if (ret != 1) {
		FT_ERR("fi_av_insert", ret);
		return ret < 0 ? ret : -FI_EINVAL;
	}
	ret = fi_av_lookup(ep.av, ep.peer, again, &len2);
	if (ret) {
		FT_ERR("fi_av_lookup", ret);
		return ret;
	}
	FN_CHECK(len2 == len && !memcmp(name, again, len), "fi_av_lookup "
		 "after reinsertion gives another address");
	fprintf(stderr, "peer removed and reinserted: fi_addr %llu -> %llu\n",
		(unsigned long long)old, (unsigned long long)ep.peer);
	return 0;
}

static int post_recvs(struct fi_context2 *ctx)
{
	int i, ret = 0;

	memset(slot(1, 0), 0, nmsg * stride);
	for (i = 0; !ret && i < nmsg; i++)
		ret = FN_POST(&ep, "fi_recv",
			      fi_recv(ep.ep, slot(1, i), size_of(i), ep.desc,
				      FI_ADDR_UNSPEC, &ctx[i]));
	return ret;
}

static int send_all(int seed, struct fi_context2 *ctx)
{
	struct fn_comp c;
	int i, ret = 0;

	for (i = 0; !ret && i < nmsg; i++) {
		ft_fill(slot(0, i), size_of(i), seed + i);
		ret = FN_POST(&ep, "fi_send",
			      fi_send(ep.ep, slot(0, i), size_of(i), ep.desc,
				      ep.peer, &ctx[i]));
	}
	for (i = 0; !ret && i < nmsg; i++)
		ret = fn_wait_ctx(&ep, &ep.tx, NULL, &c);
	return ret;
}

/*
 * Receive the burst (matched in order, completed in any order: a large
 * message may finish after a small one behind it); call mid() when half
 * of it has completed.
 */
static int recv_all(int seed, struct fi_context2 *ctx, int (*mid)(void))
{
	bool seen[64] = { false };
	struct fn_comp c;
	int i, k, ret = 0;

	for (k = 0; !ret && k < nmsg; k++) {
		if (mid && k == nmsg / 2) {
			ret = mid();
			if (ret)
				break;
		}
		ret = fn_wait_ctx(&ep, &ep.rx, NULL, &c);
		if (ret)
			break;
		i = (struct fi_context2 *)c.ent.op_context - ctx;
		FN_CHECK(i >= 0 && i < nmsg && !seen[i], "completion with "
			 "unknown context %p", c.ent.op_context);
		seen[i] = true;
		FN_CHECK(c.ent.len == size_of(i), "message %d: length %zu, "
			 "expected %zu", i, c.ent.len, size_of(i));
		ret = ft_check(slot(1, i), size_of(i), seed + i, "message");
	}
	return ret;
}

static int round_trip(int r)
{
	struct fi_context2 tx[64], rx[64];
	int ret;

	if (ft.server) {
		ret = post_recvs(rx);
		if (!ret)
			ret = fn_note('r');
		if (!ret)
			ret = recv_all(r * 1000, rx, r == 1 ? reinsert : NULL);
		if (!ret)
			ret = send_all(r * 1000 + 500, tx);
	} else {
		ret = post_recvs(rx);
		if (!ret)
			ret = fn_wait_note(&ep, 'r');
		if (!ret && r == 2)
			ret = reinsert();
		if (!ret)
			ret = send_all(r * 1000, tx);
		if (!ret)
			ret = recv_all(r * 1000 + 500, rx, NULL);
	}
	return ret ? ret : fn_agree(0);
}

int main(int argc, char **argv)
{
	struct fn_cfg cfg = { .caps = FI_MSG };
	size_t max = 0;
	int i, ret;

	ft_parse(argc, argv, &prog);
	nmsg = 2 * ft.opts.nsizes;
	if (nmsg > 64)
		nmsg = 64;
	for (i = 0; i < ft.opts.nsizes; i++)
		if (ft.opts.sizes[i] > max)
			max = ft.opts.sizes[i];
	stride = (max + 63) & ~(size_t)63;
	cfg.buf_size = 2 * nmsg * stride;
	ret = fn_setup(&ep, &cfg);
	for (i = 0; !ret && i < ROUNDS; i++) {
		ret = round_trip(i);
		if (!ret && ft.server)
			printf("round %d: %d messages each way verified%s\n", i,
			       nmsg, i == 1 ? ", server reinserted the client" :
			       i == 2 ? ", client reinserted the server" : "");
	}
	return fn_exit(&ep, ret);
}
