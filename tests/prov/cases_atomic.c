// SPDX-License-Identifier: BSD-2-Clause
/*
 * Conformance case for atomics: every (operation, datatype) pair the
 * provider calls valid through fi_atomicvalid, fi_fetch_atomicvalid or
 * fi_compare_atomicvalid is run against the target, and the target's new
 * contents and the fetched old values are compared with this file's own
 * reference model of fi_atomic(3); the domain's fi_query_atomic must say
 * the same as the endpoint.
 *
 * The operands are small integers (and small complex numbers), so every
 * result is exact in every datatype and the model needs no rounding.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conformance.h"

#define NELEM 6
#define MAX_DT_SIZE 32

/* Operands chosen so comparisons go every way and logic sees zeros. */
static const int t_re[NELEM] = {5, 2, 7, 0, 0, 9};
static const int t_im[NELEM] = {1, 0, 2, 0, 0, 1};
static const int o_re[NELEM] = {3, 6, 0, 0, 4, 9};
static const int o_im[NELEM] = {2, 1, 0, 0, 1, 1};
static const int c_re[NELEM] = {5, 1, 9, 0, 2, 9};
static const int c_im[NELEM] = {1, 0, 0, 0, 0, 1};

/* One element of any datatype, widened. */
struct num {
	unsigned __int128 u; /* integers: the bits, zero-extended */
	__int128 s;	     /* integers: the value, sign-extended */
	long double re, im;  /* floating and complex types */
};

enum kind { K_NONE, K_SINT, K_UINT, K_REAL, K_CPLX };

static enum kind dt_kind(int dt)
{
	switch (dt) {
	case FI_INT8:
	case FI_INT16:
	case FI_INT32:
	case FI_INT64:
	case FI_INT128:
		return K_SINT;
	case FI_UINT8:
	case FI_UINT16:
	case FI_UINT32:
	case FI_UINT64:
	case FI_UINT128:
		return K_UINT;
	case FI_FLOAT:
	case FI_DOUBLE:
	case FI_LONG_DOUBLE:
		return K_REAL;
	case FI_FLOAT_COMPLEX:
	case FI_DOUBLE_COMPLEX:
	case FI_LONG_DOUBLE_COMPLEX:
		return K_CPLX;
	default:
		return K_NONE;
	}
}

static size_t dt_size(int dt)
{
	switch (dt) {
	case FI_INT8:
	case FI_UINT8:
		return 1;
	case FI_INT16:
	case FI_UINT16:
		return 2;
	case FI_INT32:
	case FI_UINT32:
	case FI_FLOAT:
		return 4;
	case FI_INT64:
	case FI_UINT64:
	case FI_DOUBLE:
	case FI_FLOAT_COMPLEX:
		return 8;
	case FI_INT128:
	case FI_UINT128:
	case FI_DOUBLE_COMPLEX:
	case FI_LONG_DOUBLE:
		return 16;
	case FI_LONG_DOUBLE_COMPLEX:
		return 32;
	default:
		return 0;
	}
}

static struct num load(int dt, const void *p)
{
	struct num n = {0};
	size_t sz = dt_size(dt);

	switch (dt_kind(dt)) {
	case K_SINT:
	case K_UINT:
		memcpy(&n.u, p, sz); /* little-endian: low bytes first */
		n.s = (__int128)n.u;
		if (dt_kind(dt) == K_SINT && sz < 16) {
			unsigned int sh = (unsigned int)(128 - 8 * sz);

			n.s = (__int128)(n.u << sh) >> sh;
		}
		break;
	case K_REAL:
		if (dt == FI_FLOAT)
			n.re = *(const float *)p;
		else if (dt == FI_DOUBLE)
			n.re = *(const double *)p;
		else
			n.re = *(const long double *)p;
		break;
	case K_CPLX:
		if (dt == FI_FLOAT_COMPLEX) {
			n.re = ((const float *)p)[0];
			n.im = ((const float *)p)[1];
		} else if (dt == FI_DOUBLE_COMPLEX) {
			n.re = ((const double *)p)[0];
			n.im = ((const double *)p)[1];
		} else {
			n.re = ((const long double *)p)[0];
			n.im = ((const long double *)p)[1];
		}
		break;
	default:
		break;
	}
	return n;
}

static void store(int dt, void *p, const struct num *n)
{
	size_t sz = dt_size(dt);

	memset(p, 0, sz);
	switch (dt_kind(dt)) {
	case K_SINT:
	case K_UINT:
		memcpy(p, &n->u, sz);
		break;
	case K_REAL:
		if (dt == FI_FLOAT)
			*(float *)p = (float)n->re;
		else if (dt == FI_DOUBLE)
			*(double *)p = (double)n->re;
		else
			*(long double *)p = n->re;
		break;
	case K_CPLX:
		if (dt == FI_FLOAT_COMPLEX) {
			((float *)p)[0] = (float)n->re;
			((float *)p)[1] = (float)n->im;
		} else if (dt == FI_DOUBLE_COMPLEX) {
			((double *)p)[0] = (double)n->re;
			((double *)p)[1] = (double)n->im;
		} else {
			((long double *)p)[0] = n->re;
			((long double *)p)[1] = n->im;
		}
		break;
	default:
		break;
	}
}

static struct num mknum(int dt, int re, int im)
{
	struct num n = {0};

	n.s = re;
	n.u = (unsigned __int128)n.s;
	n.re = re;
	n.im = dt_kind(dt) == K_CPLX ? im : 0;
	return n;
}

/* Equal after a round trip through the datatype's storage. */
static bool num_eq(int dt, const struct num *a, const struct num *b)
{
	uint8_t x[MAX_DT_SIZE], y[MAX_DT_SIZE];
	struct num p, q;

	store(dt, x, a);
	store(dt, y, b);
	p = load(dt, x);
	q = load(dt, y);
	if (dt_kind(dt) == K_SINT || dt_kind(dt) == K_UINT)
		return p.u == q.u;
	return p.re == q.re && p.im == q.im;
}

static bool truth(int dt, const struct num *n)
{
	if (dt_kind(dt) == K_SINT || dt_kind(dt) == K_UINT)
		return n->u != 0;
	return n->re != 0 || n->im != 0;
}

/* a < b as the datatype orders; complex numbers have no order. */
static int cmp(int dt, const struct num *a, const struct num *b)
{
	switch (dt_kind(dt)) {
	case K_SINT:
		return a->s < b->s ? -1 : a->s > b->s;
	case K_UINT:
		return a->u < b->u ? -1 : a->u > b->u;
	default:
		return a->re < b->re ? -1 : a->re > b->re;
	}
}

static struct num from_bool(int dt, bool v)
{
	return mknum(dt, v, 0);
}

static struct num from_bits(unsigned __int128 u)
{
	struct num n = {0};

	n.u = u;
	n.s = (__int128)u;
	return n;
}

/*
 * fi_atomic(3) applied to one element: addr[i] op buf[i] (compare[i]).
 * Returns false when the model has no meaning for the pair (bitwise ops
 * on floating types, ordering of complex numbers).
 */
static bool model(int dt, int op, const struct num *addr, const struct num *buf,
		  const struct num *compare, struct num *out)
{
	enum kind k = dt_kind(dt);
	bool integer = k == K_SINT || k == K_UINT;
	int c;

	*out = *addr;
	switch (op) {
	case FI_MIN:
	case FI_MAX:
		if (k == K_CPLX)
			return false;
		c = cmp(dt, buf, addr);
		if ((op == FI_MIN && c < 0) || (op == FI_MAX && c > 0))
			*out = *buf;
		return true;
	case FI_SUM:
		if (integer) {
			*out = from_bits(addr->u + buf->u);
		} else {
			out->re = addr->re + buf->re;
			out->im = addr->im + buf->im;
		}
		return true;
	case FI_PROD:
		if (integer) {
			*out = from_bits(addr->u * buf->u);
		} else {
			out->re = addr->re * buf->re - addr->im * buf->im;
			out->im = addr->re * buf->im + addr->im * buf->re;
		}
		return true;
	case FI_LOR:
		*out = from_bool(dt, truth(dt, addr) || truth(dt, buf));
		return true;
	case FI_LAND:
		*out = from_bool(dt, truth(dt, addr) && truth(dt, buf));
		return true;
	case FI_LXOR:
		*out = from_bool(dt, truth(dt, addr) != truth(dt, buf));
		return true;
	case FI_BOR:
	case FI_BAND:
	case FI_BXOR:
		if (!integer)
			return false;
		*out = from_bits(op == FI_BOR	 ? addr->u | buf->u
				 : op == FI_BAND ? addr->u & buf->u
						 : addr->u ^ buf->u);
		return true;
	case FI_ATOMIC_READ:
		return true;
	case FI_ATOMIC_WRITE:
		*out = *buf;
		return true;
	case FI_CSWAP:
		if (num_eq(dt, compare, addr))
			*out = *buf;
		return true;
	case FI_CSWAP_NE:
		if (!num_eq(dt, compare, addr))
			*out = *buf;
		return true;
	case FI_CSWAP_LE:
	case FI_CSWAP_LT:
	case FI_CSWAP_GE:
	case FI_CSWAP_GT:
		if (k == K_CPLX)
			return false;
		c = cmp(dt, compare, addr);
		if ((op == FI_CSWAP_LE && c <= 0) ||
		    (op == FI_CSWAP_LT && c < 0) ||
		    (op == FI_CSWAP_GE && c >= 0) ||
		    (op == FI_CSWAP_GT && c > 0))
			*out = *buf;
		return true;
	case FI_MSWAP:
		if (!integer)
			return false;
		*out =
		    from_bits((buf->u & compare->u) | (addr->u & ~compare->u));
		return true;
	default:
		return false;
	}
}

enum form { F_ATOMIC, F_FETCH, F_COMPARE };

static const char *const form_name[] = {"fi_atomic", "fi_fetch_atomic",
					"fi_compare_atomic"};

/* "fi_fetch_atomic FI_SUM on FI_INT32" (fi_tostr's buffer is reused). */
static const char *combo_str(enum form form, int op, int dt, char *s,
			     size_t len)
{
	int n = snprintf(s, len, "%s %s on ", form_name[form],
			 fi_tostr(&op, FI_TYPE_ATOMIC_OP));

	snprintf(s + n, len - (size_t)n, "%s",
		 fi_tostr(&dt, FI_TYPE_ATOMIC_TYPE));
	return s;
}

/* Endpoint 0 of f applies atomics to buffers of endpoint 1. */
struct atom {
	struct cf_fix *f;
	struct cf_mem tgt, opnd, cmpv, res;
	int tested, unmodelled;
};

static void num_str(int dt, const struct num *n, char *s, size_t len)
{
	if (dt_kind(dt) == K_SINT)
		snprintf(s, len, "%lld", (long long)n->s);
	else if (dt_kind(dt) == K_UINT)
		snprintf(s, len, "%llu", (unsigned long long)n->u);
	else if (dt_kind(dt) == K_REAL)
		snprintf(s, len, "%Lg", n->re);
	else
		snprintf(s, len, "%Lg%+Lgi", n->re, n->im);
}

/* Run one form of one (op, datatype) over count elements and check it. */
static void run_one(struct atom *a, enum form form, int op, int dt,
		    size_t count)
{
	struct cf_fix *f = a->f;
	size_t sz = dt_size(dt), n = count < NELEM ? count : NELEM, i;
	struct num want[NELEM], old[NELEM];
	struct fi_context2 ctx;
	uint64_t end;
	struct cf_comp c;
	char what[128], s1[64], s2[64];

	combo_str(form, op, dt, what, sizeof(what));
	for (i = 0; i < n; i++) {
		struct num t = mknum(dt, t_re[i], t_im[i]);
		struct num o = mknum(dt, o_re[i], o_im[i]);
		struct num cv = mknum(dt, c_re[i], c_im[i]);

		store(dt, a->tgt.p + i * sz, &t);
		store(dt, a->opnd.p + i * sz, &o);
		store(dt, a->cmpv.p + i * sz, &cv);
		old[i] = t;
		if (!model(dt, op, &t, &o, &cv, &want[i])) {
			cf_note("%s: provider calls it valid; fi_atomic(3) "
				"gives it no meaning, not checked",
				what);
			a->unmodelled++;
			return;
		}
	}
	memset(a->res.p, 0xee, NELEM * MAX_DT_SIZE);

	switch (form) {
	case F_ATOMIC:
		cf_post(f, fi_atomic(f->ep[0].ep, a->opnd.p, n, a->opnd.desc,
				     f->ep[1].addr, a->tgt.raddr, a->tgt.key,
				     dt, op, &ctx));
		break;
	case F_FETCH:
		cf_post(f, fi_fetch_atomic(f->ep[0].ep, a->opnd.p, n,
					   a->opnd.desc, a->res.p, a->res.desc,
					   f->ep[1].addr, a->tgt.raddr,
					   a->tgt.key, dt, op, &ctx));
		break;
	case F_COMPARE:
		cf_post(f,
			fi_compare_atomic(
			    f->ep[0].ep, a->opnd.p, n, a->opnd.desc, a->cmpv.p,
			    a->cmpv.desc, a->res.p, a->res.desc, f->ep[1].addr,
			    a->tgt.raddr, a->tgt.key, dt, op, &ctx));
		break;
	}
	c = cf_wait_ctx(f, 0, &ctx);
	cf_assert(!c.err, "%s: error %d (%s)", what, c.err, fi_strerror(c.err));
	cf_check_flags(&c, FI_ATOMIC, what);
	if (form != F_ATOMIC) {
		for (i = 0; i < n; i++) {
			struct num got = load(dt, a->res.p + i * sz);

			num_str(dt, &got, s1, sizeof(s1));
			num_str(dt, &old[i], s2, sizeof(s2));
			cf_assert(num_eq(dt, &got, &old[i]),
				  "%s: element %zu fetched %s, old value was "
				  "%s",
				  what, i, s1, s2);
		}
	}
	/* The target may lag the initiator's completion: poll it. */
	end = cf_now_ms() + CF_WAIT_MS;
	for (;;) {
		for (i = 0; i < n; i++) {
			struct num got = load(dt, a->tgt.p + i * sz);

			if (!num_eq(dt, &got, &want[i]))
				break;
		}
		if (i == n)
			break;
		if (cf_now_ms() > end) {
			struct num got = load(dt, a->tgt.p + i * sz);
			struct num o = mknum(dt, o_re[i], o_im[i]);
			char s3[64];

			num_str(dt, &got, s1, sizeof(s1));
			num_str(dt, &want[i], s2, sizeof(s2));
			num_str(dt, &o, s3, sizeof(s3));
			cf_fail("%s: target element %zu is %s, want %s "
				"(old %d, operand %s, compare %d)",
				what, i, s1, s2, t_re[i], s3, c_re[i]);
		}
		cf_progress(f);
	}
	a->tested++;
}

static const uint64_t form_flags[] = {0, FI_FETCH_ATOMIC, FI_COMPARE_ATOMIC};

/* Whether ep calls (form, op, dt) valid: its count, or 0. */
static size_t valid_count(struct fid_ep *ep, enum form form, int op, int dt)
{
	size_t count = 0;
	int ret;

	cf_mark("fi_*atomicvalid");
	if (form == F_ATOMIC)
		ret = fi_atomicvalid(ep, dt, op, &count);
	else if (form == F_FETCH)
		ret = fi_fetch_atomicvalid(ep, dt, op, &count);
	else
		ret = fi_compare_atomicvalid(ep, dt, op, &count);
	return ret ? 0 : count;
}

/*
 * Every (form, op, datatype): the domain's fi_query_atomic must agree with
 * the endpoint's valid call (fi_atomic(3): both report what the provider
 * supports, the count as the endpoint allows), and what is valid is run
 * and checked.
 */
static void atom_table(struct atom *a)
{
	struct cf_fix *f = a->f;
	struct fi_atomic_attr attr;
	int dt, op, form, q;
	char what[96];
	size_t count;

	for (dt = FI_INT8; dt <= FI_UINT128; dt++) {
		for (op = FI_MIN; op < FI_ATOMIC_OP_LAST; op++) {
			for (form = F_ATOMIC; form <= F_COMPARE; form++) {
				count = valid_count(f->ep[0].ep, form, op, dt);
				memset(&attr, 0, sizeof(attr));
				cf_mark("fi_query_atomic");
				q = fi_query_atomic(f->domain, dt, op, &attr,
						    form_flags[form]);
				combo_str(form, op, dt, what, sizeof(what));
				cf_expect(!q == !!count,
					  "%s: fi_query_atomic %d, the "
					  "endpoint's count %zu",
					  what, q, count);
				if (!count)
					continue;
				cf_assert(dt_size(dt),
					  "datatype %d valid but "
					  "unknown to this suite",
					  dt);
				cf_expect(q || (attr.size == dt_size(dt) &&
						attr.count == count),
					  "%s: fi_query_atomic size %zu count "
					  "%zu, the endpoint's count %zu",
					  what, attr.size, attr.count, count);
				run_one(a, form, op, dt, count);
			}
		}
	}
}

static void atom_mem(struct atom *a)
{
	cf_mem_reg(a->f, 1, &a->tgt, NELEM * MAX_DT_SIZE,
		   FI_REMOTE_READ | FI_REMOTE_WRITE);
	cf_mem_reg(a->f, 0, &a->opnd, NELEM * MAX_DT_SIZE, FI_READ | FI_WRITE);
	cf_mem_reg(a->f, 0, &a->cmpv, NELEM * MAX_DT_SIZE, FI_READ | FI_WRITE);
	cf_mem_reg(a->f, 0, &a->res, NELEM * MAX_DT_SIZE, FI_READ | FI_WRITE);
}

static void atom_mem_free(struct atom *a)
{
	cf_mem_free(&a->tgt);
	cf_mem_free(&a->opnd);
	cf_mem_free(&a->cmpv);
	cf_mem_free(&a->res);
}

static int case_atomic(const char *prov)
{
	struct cf_opts o = {.caps = FI_ATOMIC};
	static struct cf_fix f;
	static struct atom a;

	cf_open(&f, prov, &o);
	a.f = &f;
	atom_mem(&a);
	atom_table(&a);
	/* Nothing completes at the target of atomics without RMA events. */
	cf_expect_none(&f, 1, 20);
	cf_expect_none(&f, 0, 0);
	if (!a.tested)
		cf_skip("no (op, datatype) is valid");
	cf_note("%d (form, op, datatype) combinations checked, %d without a "
		"model",
		a.tested, a.unmodelled);
	atom_mem_free(&a);
	cf_close(&f);
	return 0;
}

/*
 * Atomic SUM from two initiators on one counter in flight at once: the
 * updates must all land, none lost (atomicity across initiators).
 */
static int case_atomic_contend(const char *prov)
{
	struct cf_opts o = {.caps = FI_ATOMIC, .nep = 3};
	static struct fi_context2 ctx[2][200];
	struct cf_mem tgt, one[2];
	struct cf_fix f;
	size_t count = 0;
	uint64_t end, v;
	int i, e;

	cf_open(&f, prov, &o);
	if (fi_atomicvalid(f.ep[1].ep, FI_UINT64, FI_SUM, &count) || !count)
		cf_skip("FI_SUM on FI_UINT64 is not valid");
	cf_mem_reg(&f, 0, &tgt, 8, FI_REMOTE_READ | FI_REMOTE_WRITE);
	for (e = 0; e < 2; e++) {
		cf_mem_reg(&f, e + 1, &one[e], 8, FI_READ | FI_WRITE);
		*(uint64_t *)one[e].p = 1 + e * 1000;
	}
	for (i = 0; i < 200; i++)
		for (e = 0; e < 2; e++)
			cf_post(&f, fi_atomic(f.ep[e + 1].ep, one[e].p, 1,
					      one[e].desc, f.ep[0].addr,
					      tgt.raddr, tgt.key, FI_UINT64,
					      FI_SUM, &ctx[e][i]));
	for (i = 0; i < 200; i++)
		for (e = 0; e < 2; e++) {
			struct cf_comp c = cf_wait_ctx(&f, e + 1, &ctx[e][i]);

			cf_assert(!c.err, "atomic %d of ep%d: error %d", i,
				  e + 1, c.err);
		}
	end = cf_now_ms() + CF_WAIT_MS;
	while ((v = *(volatile uint64_t *)tgt.p) != 200 * 1002) {
		cf_assert(cf_now_ms() < end,
			  "sum is %llu, want %d: updates "
			  "lost",
			  (unsigned long long)v, 200 * 1002);
		cf_progress(&f);
	}
	cf_mem_free(&tgt);
	cf_mem_free(&one[0]);
	cf_mem_free(&one[1]);
	cf_close(&f);
	return 0;
}

const struct cf_case cf_cases_atomic[] = {
    {"atomic",
     "every valid (op, datatype) of fi_atomic, fetch and "
     "compare against a reference model",
     case_atomic},
    {"atomic_contend", "FI_SUM from two initiators, no update lost",
     case_atomic_contend},
    {NULL},
};
