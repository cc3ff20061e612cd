// SPDX-License-Identifier: BSD-2-Clause
/*
 * Conformance cases for atomics: every (operation, datatype) pair the
 * provider calls valid through fi_atomicvalid, fi_fetch_atomicvalid or
 * fi_compare_atomicvalid is run against the target, over RDM endpoints
 * and over a connected MSG pair, and the target's new contents and the
 * fetched old values are compared with this file's own reference model of
 * fi_atomic(3); the domain's fi_query_atomic must say the same as the
 * endpoint.  An RDM endpoint must offer what Sandia OpenSHMEM checks for
 * at start-up.  One 64-bit location updated concurrently by initiators in
 * two threads, with every op the provider offers mixed, must lose no
 * update.
 *
 * The operands are small integers (and small complex numbers), so every
 * result is exact in every datatype and the model needs no rounding.
 */
#include "config.h"

#include <pthread.h>
#include <stdatomic.h>
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

static struct num load(int dt, const void *p)
{
	struct num n = {0};
	size_t sz = cf_dt_size(dt);

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
	size_t sz = cf_dt_size(dt);

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
	size_t sz = cf_dt_size(dt), n = count < NELEM ? count : NELEM, i;
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
				cf_assert(cf_dt_size(dt),
					  "datatype %d valid but "
					  "unknown to this suite",
					  dt);
				cf_expect(q || (attr.size == cf_dt_size(dt) &&
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
 * The same over a connected FI_EP_MSG pair: what its endpoints call valid
 * must work (a provider that maps MSG atomics onto a device offers only
 * what the device does).
 */
static int case_cm_atomic(const char *prov)
{
	static struct atom a;
	struct cf_fix *f = cf_msg_pair_open(prov, FI_MSG | FI_ATOMIC);

	a.f = f;
	atom_mem(&a);
	atom_table(&a);
	if (!a.tested)
		cf_skip("FI_EP_MSG: no (op, datatype) is valid");
	cf_note("FI_EP_MSG: %d (form, op, datatype) combinations checked, %d "
		"without a model",
		a.tested, a.unmodelled);
	atom_mem_free(&a);
	cf_msg_pair_close(f);
	return 0;
}

/*
 * What Sandia OpenSHMEM's OFI transport checks at start-up, on an LP64
 * host (int is FI_INT32; long and long long FI_INT64), before it runs at
 * all: atomic, fetching and compare-and-swap sums, atomic and fetching
 * swaps and fetches, and masked swap (its locks).  Each must be valid with
 * a count.  The reductions it checks too, but can do in software, are
 * reported when missing.
 */
static int case_atomic_shmem(const char *prov)
{
	static const int std_dt[] = {FI_INT32, FI_INT64};
	static const int ext_dt[] = {FI_FLOAT, FI_DOUBLE, FI_INT32, FI_INT64};
	static const struct {
		enum form form;
		int op;
		const int *dt;
		size_t ndt;
	} need[] = {
	    {F_ATOMIC, FI_SUM, std_dt, 2},
	    {F_FETCH, FI_SUM, std_dt, 2},
	    {F_COMPARE, FI_CSWAP, std_dt, 2},
	    {F_ATOMIC, FI_ATOMIC_WRITE, ext_dt, 4},
	    {F_FETCH, FI_ATOMIC_WRITE, ext_dt, 4},
	    {F_FETCH, FI_ATOMIC_READ, ext_dt, 4},
	    {F_COMPARE, FI_MSWAP, std_dt, 1},
	};
	static const int bit_dt[] = {FI_INT16, FI_INT32, FI_INT64};
	static const int cmp_dt[] = {FI_FLOAT,	FI_DOUBLE, FI_INT16,
				     FI_INT32,	FI_INT64,  FI_LONG_DOUBLE};
	static const int ari_dt[] = {FI_FLOAT,		FI_DOUBLE,
				     FI_FLOAT_COMPLEX,	FI_DOUBLE_COMPLEX,
				     FI_INT16,		FI_INT32,
				     FI_INT64,		FI_LONG_DOUBLE};
	static const struct {
		int op;
		const int *dt;
		size_t ndt;
	} soft[] = {
	    {FI_BAND, bit_dt, 3}, {FI_BOR, bit_dt, 3}, {FI_BXOR, bit_dt, 3},
	    {FI_MIN, cmp_dt, 6},  {FI_MAX, cmp_dt, 6}, {FI_SUM, ari_dt, 8},
	    {FI_PROD, ari_dt, 8},
	};
	struct cf_opts o = {.caps = FI_ATOMIC};
	struct cf_fix f;
	char what[96];
	size_t i, j;
	int missing = 0;

	cf_open(&f, prov, &o);
	for (i = 0; i < sizeof(need) / sizeof(need[0]); i++)
		for (j = 0; j < need[i].ndt; j++) {
			int op = need[i].op, dt = need[i].dt[j];

			cf_expect(valid_count(f.ep[0].ep, need[i].form, op, dt),
				  "%s is not valid: Sandia OpenSHMEM will not "
				  "start",
				  combo_str(need[i].form, op, dt, what,
					    sizeof(what)));
		}
	for (i = 0; i < sizeof(soft) / sizeof(soft[0]); i++)
		for (j = 0; j < soft[i].ndt; j++)
			if (!valid_count(f.ep[0].ep, F_ATOMIC, soft[i].op,
					 soft[i].dt[j]))
				missing++;
	if (missing)
		cf_note("%d reduction (op, datatype) pairs Sandia OpenSHMEM "
			"would do in software",
			missing);
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

/*
 * One 64-bit location, initiators in two threads at once, each driving
 * its own endpoint only (FI_THREAD_SAFE), the target's progress in the
 * main thread: endpoint 1 adds 1 (fi_atomic and fi_fetch_atomic FI_SUM);
 * endpoint 2 mixes in every other op on FI_UINT64 the provider offers,
 * chosen to commute with the sums: no-ops (FI_MIN of the largest value,
 * FI_MAX of 0, FI_BAND of all ones, FI_PROD of 1, a FI_CSWAP that never
 * matches, FI_CSWAP_LT of the largest value, fetches), bits above the
 * sums (FI_BOR, FI_MSWAP, FI_BXOR toggled), and an increment of 2^20 by
 * a FI_CSWAP loop.  The end value is then exact; an op applied as a
 * read-modify-write that is not atomic with another path (a device's
 * atomic against the target CPU's, two initiators' copies) loses sums.
 */
#define MIX_SUMS 2000
#define MIX_OPS 1200
#define MIX_CAS 64
#define MIX_WIN 16
#define MIX_INC (1ULL << 20)
#define MIX_BOR (1ULL << 40)
#define MIX_BXOR (1ULL << 56)
#define MIX_MSWAP (1ULL << 62)

struct mix_kind {
	enum form form;
	int op;
	uint64_t operand, compare;
	const char *name;
};

static const struct mix_kind mix_sum_kinds[] = {
    {F_ATOMIC, FI_SUM, 1, 0, "sum"},
    {F_FETCH, FI_SUM, 1, 0, "fetch sum"},
};

static const struct mix_kind mix_other_kinds[] = {
    {F_ATOMIC, FI_MIN, UINT64_MAX, 0, "min"},
    {F_ATOMIC, FI_MAX, 0, 0, "max"},
    {F_FETCH, FI_MIN, UINT64_MAX, 0, "fetch min"},
    {F_FETCH, FI_MAX, 0, 0, "fetch max"},
    {F_ATOMIC, FI_BAND, UINT64_MAX, 0, "band"},
    {F_ATOMIC, FI_PROD, 1, 0, "prod"},
    {F_ATOMIC, FI_BOR, MIX_BOR, 0, "bor"},
    {F_ATOMIC, FI_BXOR, MIX_BXOR, 0, "bxor"},
    {F_FETCH, FI_ATOMIC_READ, 0, 0, "read"},
    {F_COMPARE, FI_CSWAP, 0, 1ULL << 63, "cswap"},
    {F_COMPARE, FI_CSWAP_LT, 0, UINT64_MAX, "cswap_lt"},
    {F_COMPARE, FI_MSWAP, MIX_MSWAP, MIX_MSWAP, "mswap"},
};

/* Slots of a mixer's registered buffer, 8 bytes each: operand and
 * compare value of each kind, a result per op in flight, the increment's
 * operand and compare value. */
#define MIX_KINDS 16
enum {
	MIX_OPND = 0,
	MIX_CMP = MIX_OPND + MIX_KINDS,
	MIX_RES = MIX_CMP + MIX_KINDS,
	MIX_INC_OPND = MIX_RES + MIX_WIN + 1,
	MIX_INC_CMP,
	MIX_SLOTS,
};

struct mixer {
	struct cf_fix *f;
	int e; /* its endpoint */
	struct cf_mem mem;
	uint64_t raddr, key;
	const struct mix_kind *kind[MIX_KINDS];
	int nkind;
	int nops;		  /* to post, besides the CSWAP loop */
	bool cas;		  /* run the FI_CSWAP increment loop */
	struct fi_context2 ctx[MIX_WIN + 1];
	int slot_kind[MIX_WIN]; /* the kind a slot's op is, or -1 */
	/* results */
	int done_ops, cas_ok, bxor, bor, mswap;
	int err;
	char why[160];
	atomic_bool finished;
};

static uint64_t *mix_slot(struct mixer *m, int i)
{
	return (uint64_t *)m->mem.p + i;
}

/* Post an op of the mixer's kind ki, its result (if any) to slot. */
static ssize_t mix_post(struct mixer *m, int ki, int slot, void *ctx)
{
	const struct mix_kind *k = m->kind[ki];
	struct fid_ep *ep = m->f->ep[m->e].ep;
	fi_addr_t to = m->f->ep[0].addr;
	uint64_t *opnd = mix_slot(m, MIX_OPND + ki);
	uint64_t *cmpv = mix_slot(m, MIX_CMP + ki);

	if (k->form == F_ATOMIC)
		return fi_atomic(ep, opnd, 1, m->mem.desc, to, m->raddr, m->key,
				 FI_UINT64, k->op, ctx);
	if (k->form == F_FETCH)
		return fi_fetch_atomic(ep, opnd, 1, m->mem.desc,
				       mix_slot(m, MIX_RES + slot), m->mem.desc,
				       to, m->raddr, m->key, FI_UINT64, k->op,
				       ctx);
	return fi_compare_atomic(ep, opnd, 1, m->mem.desc, cmpv, m->mem.desc,
				 mix_slot(m, MIX_RES + slot), m->mem.desc, to,
				 m->raddr, m->key, FI_UINT64, k->op, ctx);
}

static void mix_fail(struct mixer *m, int err, const char *what)
{
	if (m->err)
		return;
	m->err = err;
	snprintf(m->why, sizeof(m->why), "endpoint %d: %s: %d (%s)", m->e,
		 what, err, fi_strerror(err < 0 ? -err : err));
}

/*
 * A window of ops of the mixer's kinds, round robin, and (cas) one
 * FI_CSWAP increment at a time in ctx[MIX_WIN], until nops are done and
 * MIX_CAS increments have taken.  Reads only its own endpoint's CQ.
 */
static void *mix_thread(void *p)
{
	struct mixer *m = p;
	struct fid_cq *cq = m->f->ep[m->e].cq;
	static const struct mix_kind inc = {F_COMPARE, FI_CSWAP, 0, 0, "inc"};
	uint64_t end = cf_now_ms() + 4 * CF_WAIT_MS, guess = 0;
	int posted = 0, out = 0, next = 0, i;
	bool cas_out = false;
	ssize_t ret;

	for (i = 0; i < MIX_WIN; i++)
		m->slot_kind[i] = -1;
	while (!m->err && (m->done_ops < m->nops ||
			   (m->cas && m->cas_ok < MIX_CAS) || out ||
			   cas_out)) {
		struct fi_cq_tagged_entry e;

		if (cf_now_ms() > end) {
			mix_fail(m, -FI_ETIMEDOUT, "not done in time");
			break;
		}
		for (i = 0; i < MIX_WIN && posted < m->nops; i++) {
			int k = next % m->nkind;

			if (m->slot_kind[i] >= 0)
				continue;
			ret = mix_post(m, k, i, &m->ctx[i]);
			if (ret == -FI_EAGAIN)
				break;
			if (ret) {
				mix_fail(m, (int)ret, m->kind[k]->name);
				break;
			}
			m->slot_kind[i] = k;
			if (m->kind[k]->op == FI_BXOR)
				m->bxor++;
			posted++;
			next++;
			out++;
		}
		if (m->cas && !cas_out && m->cas_ok < MIX_CAS) {
			*mix_slot(m, MIX_INC_CMP) = guess;
			*mix_slot(m, MIX_INC_OPND) = guess + MIX_INC;
			ret = fi_compare_atomic(
			    m->f->ep[m->e].ep, mix_slot(m, MIX_INC_OPND), 1,
			    m->mem.desc, mix_slot(m, MIX_INC_CMP), m->mem.desc,
			    mix_slot(m, MIX_RES + MIX_WIN), m->mem.desc,
			    m->f->ep[0].addr, m->raddr, m->key, FI_UINT64,
			    FI_CSWAP, &m->ctx[MIX_WIN]);
			if (!ret)
				cas_out = true;
			else if (ret != -FI_EAGAIN)
				mix_fail(m, (int)ret, inc.name);
		}
		ret = fi_cq_read(cq, &e, 1);
		if (ret == -FI_EAGAIN)
			continue;
		if (ret == -FI_EAVAIL) {
			struct fi_cq_err_entry ee = {0};

			ret = fi_cq_readerr(cq, &ee, 0);
			mix_fail(m, ret == 1 ? ee.err : (int)ret,
				 "error completion");
			break;
		}
		if (ret != 1) {
			mix_fail(m, (int)ret, "fi_cq_read");
			break;
		}
		if (e.op_context == &m->ctx[MIX_WIN]) {
			uint64_t got = *mix_slot(m, MIX_RES + MIX_WIN);

			cas_out = false;
			if (got == guess) {
				m->cas_ok++;
				guess += MIX_INC;
			} else {
				guess = got;
			}
			continue;
		}
		i = (int)((struct fi_context2 *)e.op_context - m->ctx);
		if (i < 0 || i >= MIX_WIN || m->slot_kind[i] < 0) {
			mix_fail(m, -FI_EOTHER, "completion of no posted op");
			break;
		}
		if (m->kind[m->slot_kind[i]]->op == FI_BOR)
			m->bor++;
		if (m->kind[m->slot_kind[i]]->op == FI_MSWAP)
			m->mswap++;
		m->slot_kind[i] = -1;
		m->done_ops++;
		out--;
	}
	atomic_store(&m->finished, true);
	return NULL;
}

static void mix_setup(struct mixer *m, struct cf_fix *f, int e,
		      const struct cf_mem *tgt, const struct mix_kind *kinds,
		      int nkinds, int nops)
{
	int k;

	m->f = f;
	m->e = e;
	m->raddr = tgt->raddr;
	m->key = tgt->key;
	m->nops = nops;
	atomic_init(&m->finished, false);
	cf_mem_reg(f, e, &m->mem, MIX_SLOTS * 8, FI_READ | FI_WRITE);
	for (k = 0; k < nkinds && m->nkind < MIX_KINDS; k++) {
		const struct mix_kind *mk = &kinds[k];

		if (!valid_count(f->ep[e].ep, mk->form, mk->op, FI_UINT64))
			continue;
		*mix_slot(m, MIX_OPND + m->nkind) = mk->operand;
		*mix_slot(m, MIX_CMP + m->nkind) = mk->compare;
		m->kind[m->nkind++] = mk;
	}
}

static int case_atomic_mixed(const char *prov)
{
	struct cf_opts o = {
	    .caps = FI_ATOMIC, .nep = 3, .threading = FI_THREAD_SAFE};
	static struct mixer sum, mix;
	struct fi_cq_tagged_entry e;
	char ran[256] = "";
	uint64_t want, got, end;
	pthread_t th[2];
	struct cf_mem tgt;
	struct cf_fix f;
	int k;

	cf_open(&f, prov, &o);
	if (!valid_count(f.ep[1].ep, F_ATOMIC, FI_SUM, FI_UINT64))
		cf_skip("FI_SUM on FI_UINT64 is not valid");
	cf_mem_reg(&f, 0, &tgt, 8, FI_REMOTE_READ | FI_REMOTE_WRITE);
	mix_setup(&sum, &f, 1, &tgt, mix_sum_kinds, 2, MIX_SUMS);
	mix_setup(&mix, &f, 2, &tgt, mix_other_kinds,
		  (int)(sizeof(mix_other_kinds) / sizeof(mix_other_kinds[0])),
		  MIX_OPS);
	mix.cas = valid_count(f.ep[2].ep, F_COMPARE, FI_CSWAP, FI_UINT64);
	if (!mix.nkind)
		mix.nops = 0;
	for (k = 0; k < mix.nkind; k++)
		snprintf(ran + strlen(ran), sizeof(ran) - strlen(ran), " %s",
			 mix.kind[k]->name);
	cf_note("endpoint 1 adds (%d ops); endpoint 2 mixes in%s%s", MIX_SUMS,
		mix.nkind ? ran : " nothing else",
		mix.cas ? ", and increments by FI_CSWAP" : "");
	cf_assert(!pthread_create(&th[0], NULL, mix_thread, &sum),
		  "pthread_create");
	cf_assert(!pthread_create(&th[1], NULL, mix_thread, &mix),
		  "pthread_create");
	/* The target's progress, for providers whose target applies them. */
	while (!atomic_load(&sum.finished) || !atomic_load(&mix.finished))
		(void)fi_cq_read(f.ep[0].cq, &e, 0);
	cf_mark("joining the initiators");
	pthread_join(th[0], NULL);
	pthread_join(th[1], NULL);
	cf_assert(!sum.err, "%s", sum.why);
	cf_assert(!mix.err, "%s", mix.why);
	want = (uint64_t)sum.done_ops + (uint64_t)mix.cas_ok * MIX_INC +
	       (mix.bor ? MIX_BOR : 0) + (mix.mswap ? MIX_MSWAP : 0) +
	       (mix.bxor % 2 ? MIX_BXOR : 0);
	end = cf_now_ms() + CF_WAIT_MS;
	while ((got = *(volatile uint64_t *)tgt.p) != want) {
		cf_assert(cf_now_ms() < end,
			  "the location is 0x%llx, want 0x%llx: the sums "
			  "(of 1, and increments of 2^20) short by %lld, the "
			  "bits above them 0x%llx instead of 0x%llx",
			  (unsigned long long)got, (unsigned long long)want,
			  (long long)((want & (MIX_BOR - 1)) -
				      (got & (MIX_BOR - 1))),
			  (unsigned long long)(got & ~(MIX_BOR - 1)),
			  (unsigned long long)(want & ~(MIX_BOR - 1)));
		(void)fi_cq_read(f.ep[0].cq, &e, 0);
	}
	cf_note("%d sums, %d mixed ops, %d FI_CSWAP increments: exact",
		sum.done_ops, mix.done_ops, mix.cas_ok);
	cf_mem_free(&sum.mem);
	cf_mem_free(&mix.mem);
	cf_mem_free(&tgt);
	cf_close(&f);
	return 0;
}

/*
 * Sandia OpenSHMEM's fetch (shmem_transport_fetch_atomic_nbi): an
 * fi_fetch_atomicmsg with FI_INJECT and FI_ATOMIC_READ whose operand is
 * one element at address NULL, never to be read; then an injected
 * fetching sum whose operand the caller overwrites as soon as the call
 * returns (FI_INJECT: the buffer is the caller's again).
 */
static int case_atomic_inject_fetch(const char *prov)
{
	struct cf_opts o = {.caps = FI_ATOMIC};
	struct fi_context2 ctx[2];
	struct cf_mem res, tm;
	struct cf_comp c;
	struct cf_fix f;
	uint64_t operand = 5, *r, *t;
	size_t count;
	struct fi_ioc ioc = {.addr = NULL, .count = 1};
	struct fi_ioc rioc;
	struct fi_rma_ioc rma;
	struct fi_msg_atomic m = {0};
	void *rdesc;

	cf_open(&f, prov, &o);
	if (fi_fetch_atomicvalid(f.ep[0].ep, FI_UINT64, FI_ATOMIC_READ,
				 &count) ||
	    fi_fetch_atomicvalid(f.ep[0].ep, FI_UINT64, FI_SUM, &count))
		cf_skip("64-bit fetching read or sum not offered");
	cf_mem_reg(&f, 0, &res, 2 * sizeof(uint64_t), FI_READ | FI_WRITE);
	cf_mem_reg(&f, 1, &tm, sizeof(uint64_t),
		   FI_REMOTE_READ | FI_REMOTE_WRITE);
	r = (uint64_t *)res.p;
	t = (uint64_t *)tm.p;
	*t = 40;
	rdesc = res.desc;
	rma.addr = tm.raddr;
	rma.count = 1;
	rma.key = tm.key;
	m.msg_iov = &ioc;
	m.iov_count = 1;
	m.addr = f.ep[1].addr;
	m.rma_iov = &rma;
	m.rma_iov_count = 1;
	m.datatype = FI_UINT64;
	m.op = FI_ATOMIC_READ;
	m.context = &ctx[0];
	rioc.addr = &r[0];
	rioc.count = 1;
	cf_post(&f, fi_fetch_atomicmsg(f.ep[0].ep, &m, &rioc, &rdesc, 1,
				       FI_INJECT | FI_COMPLETION));
	c = cf_wait_ctx(&f, 0, &ctx[0]);
	cf_assert(!c.err, "injected FI_ATOMIC_READ: error %d (%s)", c.err,
		  fi_strerror(c.err));
	cf_assert(r[0] == 40, "injected FI_ATOMIC_READ fetched %llu, not 40",
		  (unsigned long long)r[0]);
	ioc.addr = &operand;
	m.op = FI_SUM;
	m.context = &ctx[1];
	rioc.addr = &r[1];
	cf_post(&f, fi_fetch_atomicmsg(f.ep[0].ep, &m, &rioc, &rdesc, 1,
				       FI_INJECT | FI_COMPLETION));
	operand = 1000; /* the caller's again */
	c = cf_wait_ctx(&f, 0, &ctx[1]);
	cf_assert(!c.err, "injected fetching sum: error %d (%s)", c.err,
		  fi_strerror(c.err));
	cf_assert(r[1] == 40, "injected fetching sum fetched %llu, not 40",
		  (unsigned long long)r[1]);
	/* The fetch answered once the sum was applied: 40 + 5, not 1000. */
	cf_assert(*t == 45, "target holds %llu after the sum of 5, not 45",
		  (unsigned long long)*t);
	cf_mem_free(&res);
	cf_mem_free(&tm);
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
    {"atomic_mixed",
     "one 64-bit location, two initiator threads mixing FI_SUM with every "
     "other op offered: no update lost",
     case_atomic_mixed},
    {"atomic_inject_fetch",
     "fi_fetch_atomicmsg with FI_INJECT: FI_ATOMIC_READ with a NULL "
     "operand (Sandia OpenSHMEM), a sum whose operand is reused at once",
     case_atomic_inject_fetch},
    {"atomic_shmem",
     "the atomics Sandia OpenSHMEM requires at start-up are valid",
     case_atomic_shmem},
    {"cm_atomic",
     "FI_EP_MSG: every valid (op, datatype) of fi_atomic, fetch and "
     "compare against a reference model",
     case_cm_atomic},
    {NULL},
};
