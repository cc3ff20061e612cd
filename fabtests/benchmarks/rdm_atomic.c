// SPDX-License-Identifier: BSD-2-Clause
/*
 * fi_rdm_atomic: latency and throughput of atomic operations, checking
 * results.  For every (operation, datatype, function) the provider reports
 * valid through fi_atomicvalid / fi_fetch_atomicvalid / fi_compare_atomicvalid
 * the client runs:
 *   lat: one operation at a time, operands varying per iteration; every
 *        fetched value must equal the value a local model predicts;
 *   bw:  a window of identical operations in flight (their order does not
 *        change the outcome).
 * After each run the server returns the target over the side channel and
 * the client compares it with the model, so base atomics ask for
 * FI_DELIVERY_COMPLETE: they must have been applied when they complete.
 * Fetching ones have by definition.  The server prints nothing.
 */
#include <complex.h>
#include <stdio.h>
#include <string.h>

#include "ft.h"

static const struct ft_prog prog = {
	.name = "fi_rdm_atomic",
	.summary = "latency and throughput of atomics, results checked",
	.ep_type = FI_EP_RDM,
	.caps = FI_MSG | FI_ATOMIC,
	.iters = 100,
	.window = 64,
	.sizes = "64",
	.op = "all",
	.ops_help = "all, or one of min max sum prod lor land bor band lxor\n"
		    "              bxor read write cswap cswap_ne cswap_le cswap_lt\n"
		    "              cswap_ge cswap_gt mswap",
};

static const char *const op_names[FI_ATOMIC_OP_LAST] = {
	[FI_MIN] = "min", [FI_MAX] = "max", [FI_SUM] = "sum",
	[FI_PROD] = "prod", [FI_LOR] = "lor", [FI_LAND] = "land",
	[FI_BOR] = "bor", [FI_BAND] = "band", [FI_LXOR] = "lxor",
	[FI_BXOR] = "bxor", [FI_ATOMIC_READ] = "read",
	[FI_ATOMIC_WRITE] = "write", [FI_CSWAP] = "cswap",
	[FI_CSWAP_NE] = "cswap_ne", [FI_CSWAP_LE] = "cswap_le",
	[FI_CSWAP_LT] = "cswap_lt", [FI_CSWAP_GE] = "cswap_ge",
	[FI_CSWAP_GT] = "cswap_gt", [FI_MSWAP] = "mswap",
};

static const char *const dt_names[FI_DATATYPE_LAST] = {
	[FI_INT8] = "int8", [FI_UINT8] = "uint8", [FI_INT16] = "int16",
	[FI_UINT16] = "uint16", [FI_INT32] = "int32", [FI_UINT32] = "uint32",
	[FI_INT64] = "int64", [FI_UINT64] = "uint64", [FI_FLOAT] = "float",
	[FI_DOUBLE] = "double", [FI_FLOAT_COMPLEX] = "float_complex",
	[FI_DOUBLE_COMPLEX] = "double_complex",
	[FI_LONG_DOUBLE] = "long_double",
	[FI_LONG_DOUBLE_COMPLEX] = "long_double_complex",
};

enum fn { FN_ATOMIC, FN_FETCH, FN_COMPARE };
static const char *const fn_names[] = { "atomic", "fetch", "compare" };

enum cls { CLS_SIGNED, CLS_UNSIGNED, CLS_FLOAT, CLS_COMPLEX };

/* A value of any datatype, widened. */
struct val {
	enum cls cls;
	uint64_t u;			/* integers: two's complement bits */
	long double complex c;		/* floats: real part only */
};

static enum cls dt_cls(int dt)
{
	switch (dt) {
	case FI_INT8: case FI_INT16: case FI_INT32: case FI_INT64:
		return CLS_SIGNED;
	case FI_UINT8: case FI_UINT16: case FI_UINT32: case FI_UINT64:
		return CLS_UNSIGNED;
	case FI_FLOAT: case FI_DOUBLE: case FI_LONG_DOUBLE:
		return CLS_FLOAT;
	default:
		return CLS_COMPLEX;
	}
}

static size_t dt_size(int dt)
{
	static const size_t sz[FI_DATATYPE_LAST] = {
		[FI_INT8] = 1, [FI_UINT8] = 1, [FI_INT16] = 2, [FI_UINT16] = 2,
		[FI_INT32] = 4, [FI_UINT32] = 4, [FI_INT64] = 8, [FI_UINT64] = 8,
		[FI_FLOAT] = sizeof(float), [FI_DOUBLE] = sizeof(double),
		[FI_FLOAT_COMPLEX] = sizeof(float complex),
		[FI_DOUBLE_COMPLEX] = sizeof(double complex),
		[FI_LONG_DOUBLE] = sizeof(long double),
		[FI_LONG_DOUBLE_COMPLEX] = sizeof(long double complex),
	};
	return sz[dt];
}

static struct val load(int dt, const void *p)
{
	struct val v = { .cls = dt_cls(dt) };

	switch (dt) {
	case FI_INT8: v.u = (uint64_t)(int64_t)*(const int8_t *)p; break;
	case FI_UINT8: v.u = *(const uint8_t *)p; break;
	case FI_INT16: v.u = (uint64_t)(int64_t)*(const int16_t *)p; break;
	case FI_UINT16: v.u = *(const uint16_t *)p; break;
	case FI_INT32: v.u = (uint64_t)(int64_t)*(const int32_t *)p; break;
	case FI_UINT32: v.u = *(const uint32_t *)p; break;
	case FI_INT64: case FI_UINT64: v.u = *(const uint64_t *)p; break;
	case FI_FLOAT: v.c = *(const float *)p; break;
	case FI_DOUBLE: v.c = *(const double *)p; break;
	case FI_LONG_DOUBLE: v.c = *(const long double *)p; break;
	case FI_FLOAT_COMPLEX: v.c = *(const float complex *)p; break;
	case FI_DOUBLE_COMPLEX: v.c = *(const double complex *)p; break;
	default: v.c = *(const long double complex *)p; break;
	}
	return v;
}

static void store(int dt, void *p, struct val v)
{
	switch (dt) {
	case FI_INT8: case FI_UINT8: *(uint8_t *)p = (uint8_t)v.u; break;
	case FI_INT16: case FI_UINT16: *(uint16_t *)p = (uint16_t)v.u; break;
	case FI_INT32: case FI_UINT32: *(uint32_t *)p = (uint32_t)v.u; break;
	case FI_INT64: case FI_UINT64: *(uint64_t *)p = v.u; break;
	case FI_FLOAT: *(float *)p = (float)creall(v.c); break;
	case FI_DOUBLE: *(double *)p = (double)creall(v.c); break;
	case FI_LONG_DOUBLE: *(long double *)p = creall(v.c); break;
	case FI_FLOAT_COMPLEX: *(float complex *)p = (float complex)v.c; break;
	case FI_DOUBLE_COMPLEX: *(double complex *)p = (double complex)v.c; break;
	default: *(long double complex *)p = v.c; break;
	}
}

/* Round-trip through the datatype, so the model wraps and rounds as it does. */
static struct val narrow(int dt, struct val v)
{
	char tmp[64];

	memset(tmp, 0, sizeof(tmp));
	store(dt, tmp, v);
	return load(dt, tmp);
}

static struct val mkval(int dt, int64_t x)
{
	struct val v = { .cls = dt_cls(dt), .u = (uint64_t)x, .c = x };

	return narrow(dt, v);
}

static bool is_zero(struct val a)
{
	return a.cls <= CLS_UNSIGNED ? !a.u : a.c == 0;
}

static bool equal(struct val a, struct val b)
{
	return a.cls <= CLS_UNSIGNED ? a.u == b.u : a.c == b.c;
}

/* a < b; complex values do not order */
static bool less(struct val a, struct val b)
{
	if (a.cls == CLS_SIGNED)
		return (int64_t)a.u < (int64_t)b.u;
	if (a.cls == CLS_UNSIGNED)
		return a.u < b.u;
	return creall(a.c) < creall(b.c);
}

static struct val from_bool(struct val t, bool b)
{
	t.u = b;
	t.c = b;
	return t;
}

/*
 * The target after one operation (man fi_atomic): t target, v operand,
 * c compare.  Returns false when the model has no meaning for the pair.
 */
static bool apply(int op, int dt, struct val t, struct val v, struct val c,
		  struct val *out)
{
	bool ints = t.cls <= CLS_UNSIGNED, cplx = t.cls == CLS_COMPLEX;
	struct val r = t;

	switch (op) {
	case FI_MIN:
		if (cplx)
			return false;
		r = less(v, t) ? v : t;
		break;
	case FI_MAX:
		if (cplx)
			return false;
		r = less(t, v) ? v : t;
		break;
	case FI_SUM:
		r.u = t.u + v.u;
		r.c = t.c + v.c;
		break;
	case FI_PROD:
		r.u = t.u * v.u;
		r.c = t.c * v.c;
		break;
	case FI_LOR:
		r = from_bool(t, !is_zero(t) || !is_zero(v));
		break;
	case FI_LAND:
		r = from_bool(t, !is_zero(t) && !is_zero(v));
		break;
	case FI_LXOR:
		r = from_bool(t, is_zero(t) != is_zero(v));
		break;
	case FI_BOR:
	case FI_BAND:
	case FI_BXOR:
	case FI_MSWAP:
		if (!ints)
			return false;
		if (op == FI_BOR)
			r.u = t.u | v.u;
		else if (op == FI_BAND)
			r.u = t.u & v.u;
		else if (op == FI_BXOR)
			r.u = t.u ^ v.u;
		else
			r.u = (v.u & c.u) | (t.u & ~c.u);
		break;
	case FI_ATOMIC_READ:
		break;
	case FI_ATOMIC_WRITE:
		r = v;
		break;
	case FI_CSWAP:
		r = equal(c, t) ? v : t;
		break;
	case FI_CSWAP_NE:
		r = !equal(c, t) ? v : t;
		break;
	case FI_CSWAP_LE:
	case FI_CSWAP_LT:
	case FI_CSWAP_GE:
	case FI_CSWAP_GT:
		if (cplx)
			return false;
		if (op == FI_CSWAP_LE)
			r = !less(t, c) ? v : t;
		else if (op == FI_CSWAP_LT)
			r = less(c, t) ? v : t;
		else if (op == FI_CSWAP_GE)
			r = !less(c, t) ? v : t;
		else
			r = less(t, c) ? v : t;
		break;
	default:
		return false;
	}
	*out = narrow(dt, r);
	return true;
}

static int64_t initial(int op)
{
	return op == FI_BOR || op == FI_BAND || op == FI_BXOR ||
	       op == FI_MSWAP ? 0x33 : 2;
}

/* Operand and compare value of iteration i; in bw runs i is always 0. */
static void operands(int op, int dt, int i, struct val model, struct val *v,
		     struct val *c)
{
	switch (op) {
	case FI_LOR: case FI_LAND: case FI_LXOR:
		*v = mkval(dt, (i + 1) % 2);
		break;
	case FI_BOR: case FI_BAND: case FI_BXOR: case FI_MSWAP:
		*v = mkval(dt, 0x5a ^ (i % 7));
		break;
	default:
		*v = mkval(dt, i % 3 + 1);
		break;
	}
	if (op == FI_CSWAP || op == FI_CSWAP_NE)
		*c = i % 2 ? model : mkval(dt, 7);
	else if (op == FI_MSWAP)
		*c = mkval(dt, i % 2 ? 0x0f : 0x71);
	else
		*c = mkval(dt, i % 4 + 1);
}

/* ---- side-channel commands the server serves ---- */

enum { CMD_END, CMD_RESET, CMD_GET };

struct cmd {
	int32_t cmd;
	int32_t dt;
	int64_t value;
};

static int serve(struct ft_ep *e)
{
	char *target = ft_rx_slot(e, 0);
	struct cmd c;
	int ret;

	for (;;) {
		ret = ft_oob_recv_progress(e, &c, sizeof(c));
		if (ret)
			return ret;
		switch (c.cmd) {
		case CMD_END:
			return 0;
		case CMD_RESET:
			memset(target, 0, 64);
			store(c.dt, target, mkval(c.dt, c.value));
			ret = ft_oob_send(&c, sizeof(c));
			break;
		case CMD_GET:
			ret = ft_oob_send(target, dt_size(c.dt));
			break;
		default:
			ft_err("unknown command %d from the client", c.cmd);
			return -FI_EINVAL;
		}
		if (ret)
			return ret;
	}
}

static int remote(int cmd, int dt, int64_t value, void *out)
{
	struct cmd c = { .cmd = cmd, .dt = dt, .value = value };
	int ret;

	ret = ft_oob_send(&c, sizeof(c));
	if (ret || cmd == CMD_END)
		return ret;
	if (cmd == CMD_GET)
		return ft_oob_recv_progress(&ft.ep, out, dt_size(dt));
	return ft_oob_recv_progress(&ft.ep, &c, sizeof(c));
}

/* ---- the client ---- */

static int post(struct ft_ep *e, enum fn fn, int op, int dt, int k)
{
	char *opnd = ft_tx_slot(e, k), *cmp = opnd + 128;
	char *res = ft_rx_slot(e, k);
	uint64_t raddr = ft_rx_slot_raddr(e, 0);
	void *ctx = &e->tx_ctx[k % e->nslots];
	struct fi_ioc ioc = { .addr = opnd, .count = 1 };
	struct fi_rma_ioc rma_ioc = { .addr = raddr, .count = 1, .key = e->rkey };
	struct fi_msg_atomic msg = {
		.msg_iov = &ioc, .desc = &e->desc, .iov_count = 1,
		.addr = e->peer, .rma_iov = &rma_ioc, .rma_iov_count = 1,
		.datatype = dt, .op = op, .context = ctx,
	};
	double start = 0, now;
	ssize_t ret;

	for (;;) {
		if (fn == FN_ATOMIC)
			ret = fi_atomicmsg(e->ep, &msg, FI_DELIVERY_COMPLETE |
					   (ft.opts.comp == FT_COMP_QUEUE ?
					    FI_COMPLETION : 0));
		else if (fn == FN_FETCH)
			ret = fi_fetch_atomic(e->ep, opnd, 1, e->desc, res,
					      e->desc, e->peer, raddr, e->rkey,
					      dt, op, ctx);
		else
			ret = fi_compare_atomic(e->ep, opnd, 1, e->desc, cmp,
						e->desc, res, e->desc, e->peer,
						raddr, e->rkey, dt, op, ctx);
		if (!ret)
			break;
		if (ret != -FI_EAGAIN) {
			ft_err("fi_%s %s/%s: %s (%zd)", fn == FN_ATOMIC ?
			       "atomicmsg" : fn == FN_FETCH ? "fetch_atomic" :
			       "compare_atomic", op_names[op], dt_names[dt],
			       fi_strerror((int)-ret), ret);
			return (int)ret;
		}
		ret = ft_progress(e);
		if (ret)
			return (int)ret;
		now = ft_now();
		if (!start)
			start = now;
		else if (now - start > ft.opts.timeout)
			return -FI_ETIMEDOUT;
	}
	e->tx_posted++;
	return 0;
}

static int check_target(int op, int dt, struct val model, const char *what)
{
	char buf[64];
	struct val got;
	int ret;

	ret = remote(CMD_GET, dt, 0, buf);
	if (ret)
		return ret;
	got = load(dt, buf);
	if (!equal(got, model)) {
		ft_err("%s/%s %s: target is %Lg%+Lgi (bits %llx), expected "
		       "%Lg%+Lgi (bits %llx)", op_names[op], dt_names[dt], what,
		       creall(got.c), cimagl(got.c),
		       (unsigned long long)got.u, creall(model.c),
		       cimagl(model.c), (unsigned long long)model.u);
		return -FI_EIO;
	}
	return 0;
}

static int run_lat(struct ft_ep *e, enum fn fn, int op, int dt, int iters,
		   double *secs)
{
	struct val model = mkval(dt, initial(op)), v, c, next, got;
	double start;
	int i, ret;

	ret = remote(CMD_RESET, dt, initial(op), NULL);
	if (ret)
		return ret;
	start = ft_now();
	for (i = 0; i < iters; i++) {
		operands(op, dt, i, model, &v, &c);
		store(dt, ft_tx_slot(e, 0), v);
		store(dt, ft_tx_slot(e, 0) + 128, c);
		if (!apply(op, dt, model, v, c, &next)) {
			ft_err("%s/%s: no model for this pair", op_names[op],
			       dt_names[dt]);
			return -FI_EINVAL;
		}
		ret = post(e, fn, op, dt, 0);
		if (!ret)
			ret = ft_wait_tx(e);
		if (ret)
			return ret;
		if (fn != FN_ATOMIC) {
			got = load(dt, ft_rx_slot(e, 0));
			if (!equal(got, model)) {
				ft_err("%s/%s %s: iteration %d fetched %Lg "
				       "(bits %llx), expected %Lg (bits %llx)",
				       op_names[op], dt_names[dt], fn_names[fn],
				       i, creall(got.c),
				       (unsigned long long)got.u,
				       creall(model.c),
				       (unsigned long long)model.u);
				return -FI_EIO;
			}
		}
		model = next;
	}
	*secs = ft_now() - start;
	return check_target(op, dt, model, fn == FN_ATOMIC ? "atomic lat" :
			    fn == FN_FETCH ? "fetch lat" : "compare lat");
}

static int run_bw(struct ft_ep *e, enum fn fn, int op, int dt, int iters,
		  double *secs)
{
	struct val model = mkval(dt, initial(op)), v, c;
	int W = e->nslots, done, n, k, ret;
	double start;

	ret = remote(CMD_RESET, dt, initial(op), NULL);
	if (ret)
		return ret;
	operands(op, dt, 0, model, &v, &c);
	for (k = 0; k < W; k++) {
		store(dt, ft_tx_slot(e, k), v);
		store(dt, ft_tx_slot(e, k) + 128, c);
	}
	for (k = 0; k < iters; k++)
		apply(op, dt, model, v, c, &model);
	start = ft_now();
	for (done = 0; done < iters; done += n) {
		n = iters - done < W ? iters - done : W;
		for (k = 0; k < n; k++) {
			ret = post(e, fn, op, dt, k);
			if (ret)
				return ret;
		}
		ret = ft_wait_tx(e);
		if (ret)
			return ret;
	}
	*secs = ft_now() - start;
	return check_target(op, dt, model, fn == FN_ATOMIC ? "atomic bw" :
			    fn == FN_FETCH ? "fetch bw" : "compare bw");
}

static int valid(struct ft_ep *e, enum fn fn, int op, int dt)
{
	size_t count = 0;
	int ret;

	if (fn == FN_ATOMIC)
		ret = fi_atomicvalid(e->ep, dt, op, &count);
	else if (fn == FN_FETCH)
		ret = fi_fetch_atomicvalid(e->ep, dt, op, &count);
	else
		ret = fi_compare_atomicvalid(e->ep, dt, op, &count);
	return !ret && count > 0;
}

/*
 * Latency then throughput of one combination.  A wrong result (-FI_EIO)
 * is counted and the next run goes on; anything else ends the test.
 */
static int run_one(struct ft_ep *e, enum fn fn, int op, int dt, int *wrong)
{
	int iters = ft.opts.iters, ret;
	char name[64];
	double secs;

	snprintf(name, sizeof(name), "%s/%s/%s lat", op_names[op],
		 dt_names[dt], fn_names[fn]);
	ret = run_lat(e, fn, op, dt, iters, &secs);
	if (!ret)
		ft_report(name, dt_size(dt), iters, secs, 1);
	else if (ret == -FI_EIO)
		(*wrong)++;
	else
		return ret;

	snprintf(name, sizeof(name), "%s/%s/%s bw", op_names[op],
		 dt_names[dt], fn_names[fn]);
	ret = run_bw(e, fn, op, dt, iters, &secs);
	if (!ret)
		ft_report(name, dt_size(dt), iters, secs, 1);
	else if (ret == -FI_EIO)
		(*wrong)++;
	else
		return ret;
	return 0;
}

static int client(struct ft_ep *e, int only)
{
	int op, dt, fn, ret = 0, ran = 0, wrong = 0;
	struct val dummy, t;

	ft_report_header("test");
	for (op = 0; op < FI_ATOMIC_OP_LAST && !ret; op++) {
		if (only >= 0 && op != only)
			continue;
		for (dt = 0; dt < FI_DATATYPE_LAST && !ret; dt++) {
			for (fn = FN_ATOMIC; fn <= FN_COMPARE && !ret; fn++) {
				if (!valid(e, fn, op, dt))
					continue;
				t = mkval(dt, 1);
				if (!apply(op, dt, t, t, t, &dummy)) {
					ft_err("%s/%s %s: reported valid but "
					       "has no meaning; not run",
					       op_names[op], dt_names[dt],
					       fn_names[fn]);
					continue;
				}
				ret = run_one(e, fn, op, dt, &wrong);
				ran += 2;
			}
		}
	}
	if (!ret && !ran) {
		fprintf(stderr, "%s: the provider reports no valid atomic "
			"for -o %s\n", prog.name, ft.opts.op);
		ret = -FI_ENODATA;
	}
	if (!ret && wrong) {
		ft_err("%d of %d runs gave wrong results", wrong, ran);
		ret = -FI_EIO;
	}
	remote(CMD_END, 0, 0, NULL);
	return ret;
}

int main(int argc, char **argv)
{
	int op, only = -1, ret;

	ft_parse(argc, argv, &prog);
	if (strcmp(ft.opts.op, "all")) {
		for (op = 0; op < FI_ATOMIC_OP_LAST; op++)
			if (!strcmp(ft.opts.op, op_names[op]))
				only = op;
		if (only < 0) {
			ft_err("unknown atomic operation '%s' (-h for the list)",
			       ft.opts.op);
			return 2;
		}
	}
	ret = ft_init();
	if (!ret)
		ret = ft.server ? serve(&ft.ep) : client(&ft.ep, only);
	return ft_exit(ret);
}
