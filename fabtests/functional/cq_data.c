// SPDX-License-Identifier: BSD-2-Clause
/*
 * fi_cq_data: remote CQ data reaches the target's receive completion with
 * FI_REMOTE_CQ_DATA, for fi_senddata, fi_tsenddata and (when the provider
 * has FI_RMA) fi_writedata; a plain fi_send carries no such flag.  Every
 * payload is checked byte for byte.
 */
#include "fn.h"

static const struct ft_prog prog = {
	.name = "fi_cq_data",
	.summary = "remote CQ data delivered with FI_REMOTE_CQ_DATA",
	.ep_type = FI_EP_RDM,
	.iters = 1,
	.window = 1,
	.sizes = "1,64,4k,64k,1m",
};

enum { OP_SENDDATA, OP_TSENDDATA, OP_SEND, OP_WRITEDATA, OP_COUNT };
static const char *const op_name[] = { "fi_senddata", "fi_tsenddata",
				       "fi_send", "fi_writedata" };

static struct fn_ep ep;
static size_t stride;
static uint64_t mask;

static uint64_t data_of(int i, int op)
{
	return (0x5eedc0de00000000ULL | ((uint64_t)i << 8) | (uint64_t)op) &
	       mask;
}

static int client_round(int i, size_t size)
{
	struct fi_context2 ctx[OP_COUNT];
	struct fn_comp c;
	int op, n = 0, ret;

	ret = fn_wait_note(&ep, 'r');
	if (ret)
		return ret;
	for (op = 0; op < OP_COUNT; op++) {
		char *buf = ep.buf + op * stride;

		if (op == OP_WRITEDATA && !(ep.caps & FI_RMA))
			continue;
		ft_fill(buf, size, i * OP_COUNT + op);
		switch (op) {
		case OP_SENDDATA:
			ret = FN_POST(&ep, "fi_senddata",
				      fi_senddata(ep.ep, buf, size, ep.desc,
						  data_of(i, op), ep.peer,
						  &ctx[op]));
			break;
		case OP_TSENDDATA:
			ret = FN_POST(&ep, "fi_tsenddata",
				      fi_tsenddata(ep.ep, buf, size, ep.desc,
						   data_of(i, op), ep.peer,
						   FT_TAG, &ctx[op]));
			break;
		case OP_SEND:
			ret = FN_POST(&ep, "fi_send",
				      fi_send(ep.ep, buf, size, ep.desc,
					      ep.peer, &ctx[op]));
			break;
		default:
			ret = FN_POST(&ep, "fi_writedata",
				      fi_writedata(ep.ep, buf, size, ep.desc,
						   data_of(i, op), ep.peer,
						   ep.raddr + op * stride,
						   ep.rkey, &ctx[op]));
			break;
		}
		if (ret)
			return ret;
		n++;
	}
	while (n--) {
		ret = fn_wait_ctx(&ep, &ep.tx, NULL, &c);
		if (ret)
			return ret;
	}
	return fn_wait_note(&ep, 'd');
}

static int server_round(int i, size_t size)
{
	struct fi_context2 ctx[OP_COUNT];
	bool seen[OP_COUNT] = { false };
	struct fn_comp c;
	int op, n = 3, ret;

	memset(ep.buf, 0, OP_COUNT * stride);
	ret = FN_POST(&ep, "fi_recv",
		      fi_recv(ep.ep, ep.buf + OP_SENDDATA * stride, size,
			      ep.desc, FI_ADDR_UNSPEC, &ctx[OP_SENDDATA]));
	if (!ret)
		ret = FN_POST(&ep, "fi_trecv",
			      fi_trecv(ep.ep, ep.buf + OP_TSENDDATA * stride,
				       size, ep.desc, FI_ADDR_UNSPEC, FT_TAG,
				       0, &ctx[OP_TSENDDATA]));
	if (!ret)
		ret = FN_POST(&ep, "fi_recv",
			      fi_recv(ep.ep, ep.buf + OP_SEND * stride, size,
				      ep.desc, FI_ADDR_UNSPEC, &ctx[OP_SEND]));
	if (!ret)
		ret = fn_note('r');
	if (ret)
		return ret;
	if (ep.caps & FI_RMA)
		n++;
	while (n--) {
		ret = fn_wait_ctx(&ep, &ep.rx, NULL, &c);
		if (ret)
			return ret;
		if (c.ent.flags & FI_REMOTE_WRITE)
			op = OP_WRITEDATA;
		else
			op = (struct fi_context2 *)c.ent.op_context - ctx;
		FN_CHECK(op >= 0 && op < OP_COUNT && !seen[op],
			 "size %zu: completion with unknown context %p "
			 "(flags 0x%llx)", size, c.ent.op_context,
			 (unsigned long long)c.ent.flags);
		seen[op] = true;
		if (op == OP_SEND) {
			FN_CHECK(!(c.ent.flags & FI_REMOTE_CQ_DATA),
				 "size %zu: fi_send completed with "
				 "FI_REMOTE_CQ_DATA", size);
		} else {
			FN_CHECK(c.ent.flags & FI_REMOTE_CQ_DATA,
				 "size %zu: %s completed without "
				 "FI_REMOTE_CQ_DATA (flags 0x%llx)", size,
				 op_name[op], (unsigned long long)c.ent.flags);
			FN_CHECK(c.ent.data == data_of(i, op),
				 "size %zu: %s delivered data 0x%llx, "
				 "expected 0x%llx", size, op_name[op],
				 (unsigned long long)c.ent.data,
				 (unsigned long long)data_of(i, op));
		}
		if (op != OP_WRITEDATA)
			FN_CHECK(c.ent.len == size,
				 "size %zu: %s completed with length %zu",
				 size, op_name[op], c.ent.len);
		ret = ft_check(ep.buf + op * stride, size, i * OP_COUNT + op,
			       op_name[op]);
		if (ret)
			return ret;
	}
	return fn_note('d');
}

int main(int argc, char **argv)
{
	struct fn_cfg cfg = { .caps = FI_MSG | FI_TAGGED, .opt_caps = FI_RMA,
			      .cq_data = true };
	size_t max = 0;
	int i, ret;

	ft_parse(argc, argv, &prog);
	for (i = 0; i < ft.opts.nsizes; i++)
		if (ft.opts.sizes[i] > max)
			max = ft.opts.sizes[i];
	stride = (max + 63) & ~(size_t)63;
	cfg.buf_size = OP_COUNT * stride;
	ret = fn_setup(&ep, &cfg);
	if (!ret) {
		size_t n = ep.info->domain_attr->cq_data_size;

		mask = n >= 8 ? ~0ULL : (1ULL << (8 * n)) - 1;
	}
	for (i = 0; !ret && i < ft.opts.nsizes; i++) {
		size_t size = ft.opts.sizes[i];

		if (size > ep.info->ep_attr->max_msg_size)
			continue;
		ret = ft.server ? server_round(i, size) :
				  client_round(i, size);
		if (!ret && ft.server)
			printf("%-8zu %s%s: data and payload verified\n", size,
			       "senddata tsenddata send",
			       ep.caps & FI_RMA ? " writedata" : "");
	}
	return fn_exit(&ep, ret);
}
