/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Tests of the atomic operations engine.
 *
 * The reference results come from code written here per C type, from the
 * pseudo-code of fi_atomic(3): integer arithmetic in the type itself (or
 * its unsigned counterpart for wrapping), complex numbers as ordered pairs
 * of reals computed part by part.  It shares nothing with the engine,
 * which widens integers and uses C complex arithmetic.
 */
#define _GNU_SOURCE 1 /* memfd_create */

#include <criterion/criterion.h>

#include <complex.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sched.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#if defined(__x86_64__)
#include <cpuid.h>
#endif

#include "weft/util_atomic.h"

typedef unsigned __int128 u128_t;
typedef __int128 s128_t;

static const char *const op_names[] = {
    "MIN",	"MAX",	    "SUM",	"PROD",	    "LOR",
    "LAND",	"BOR",	    "BAND",	"LXOR",	    "BXOR",
    "READ",	"WRITE",    "CSWAP",	"CSWAP_NE", "CSWAP_LE",
    "CSWAP_LT", "CSWAP_GE", "CSWAP_GT", "MSWAP",
};

static const char *const class_names[] = {"base", "fetch", "compare"};

/* ---- what fi_atomic(3) allows -------------------------------------------- */

/*
 * One column per datatype, in enum order:
 *   i8 u8 i16 u16 i32 u32 i64 u64 flt dbl cflt cdbl ldbl cldbl i128 u128
 * 'x': the op's pseudo-code is meaningful C for that type.  Ordering ops
 * exclude complex types, bit ops exclude every floating type.
 */
#define ALL_TYPES "xxxxxxxxxxxxxxxx"
#define NOT_COMPLEX "xxxxxxxxxx..x.xx"
#define INTEGER "xxxxxxxx......xx"

static const struct {
	enum fi_op op;
	const char *types;
	bool base, fetch, compare;
} expected_valid[] = {
    {FI_MIN, NOT_COMPLEX, true, true, false},
    {FI_MAX, NOT_COMPLEX, true, true, false},
    {FI_SUM, ALL_TYPES, true, true, false},
    {FI_PROD, ALL_TYPES, true, true, false},
    {FI_LOR, ALL_TYPES, true, true, false},
    {FI_LAND, ALL_TYPES, true, true, false},
    {FI_BOR, INTEGER, true, true, false},
    {FI_BAND, INTEGER, true, true, false},
    {FI_LXOR, ALL_TYPES, true, true, false},
    {FI_BXOR, INTEGER, true, true, false},
    {FI_ATOMIC_READ, ALL_TYPES, false, true, false},
    {FI_ATOMIC_WRITE, ALL_TYPES, true, true, false},
    {FI_CSWAP, ALL_TYPES, false, false, true},
    {FI_CSWAP_NE, ALL_TYPES, false, false, true},
    {FI_CSWAP_LE, NOT_COMPLEX, false, false, true},
    {FI_CSWAP_LT, NOT_COMPLEX, false, false, true},
    {FI_CSWAP_GE, NOT_COMPLEX, false, false, true},
    {FI_CSWAP_GT, NOT_COMPLEX, false, false, true},
    {FI_MSWAP, INTEGER, false, false, true},
};

static bool expect_valid(int op, int dt, int cls)
{
	if (op < 0 || op >= FI_ATOMIC_OP_LAST || dt < 0 || dt > FI_UINT128 ||
	    cls < 0 || cls > UTIL_ATOMIC_COMPARE)
		return false;
	if (expected_valid[op].types[dt] != 'x')
		return false;
	return cls == UTIL_ATOMIC_BASE	  ? expected_valid[op].base
	       : cls == UTIL_ATOMIC_FETCH ? expected_valid[op].fetch
					  : expected_valid[op].compare;
}

Test(atomic_valid, table_matches_man_page)
{
	int op, dt, cls;

	for (op = 0; op < FI_ATOMIC_OP_LAST; op++)
		cr_assert_eq(expected_valid[op].op, op);
	for (op = -1; op <= FI_ATOMIC_OP_LAST + 1; op++)
		for (dt = -1; dt <= FI_UINT128 + 2; dt++)
			for (cls = -1; cls <= UTIL_ATOMIC_COMPARE + 1; cls++)
				cr_expect_eq(util_atomic_valid(op, dt, cls),
					     expect_valid(op, dt, cls),
					     "op %d dt %d class %d", op, dt,
					     cls);
	for (cls = 0; cls <= UTIL_ATOMIC_COMPARE; cls++) {
		cr_expect_not(util_atomic_valid(FI_SUM, FI_VOID, cls));
		cr_expect_not(util_atomic_valid(FI_NOOP, FI_INT32, cls));
	}
}

/* What 2.0 added (FI_DIFF = 19; FI_FLOAT16, FI_BFLOAT16, FI_FLOAT8_E4M3,
 * FI_FLOAT8_E5M2 = 16..19) weft does not apply: refused, for every class. */
Test(atomic_valid, api_2_0_additions_refused)
{
	enum util_atomic_class cls;
	int dt;

	for (cls = UTIL_ATOMIC_BASE; cls <= UTIL_ATOMIC_COMPARE; cls++) {
		cr_expect_not(util_atomic_valid((enum fi_op)19, FI_INT64, cls));
		for (dt = 16; dt <= 19; dt++)
			cr_expect_not(util_atomic_valid(
				FI_SUM, (enum fi_datatype)dt, cls));
	}
}

Test(atomic_valid, dt_sizes)
{
	cr_expect_eq(util_atomic_dt_size(FI_INT8), 1);
	cr_expect_eq(util_atomic_dt_size(FI_UINT8), 1);
	cr_expect_eq(util_atomic_dt_size(FI_INT16), 2);
	cr_expect_eq(util_atomic_dt_size(FI_UINT16), 2);
	cr_expect_eq(util_atomic_dt_size(FI_INT32), 4);
	cr_expect_eq(util_atomic_dt_size(FI_UINT32), 4);
	cr_expect_eq(util_atomic_dt_size(FI_INT64), 8);
	cr_expect_eq(util_atomic_dt_size(FI_UINT64), 8);
	cr_expect_eq(util_atomic_dt_size(FI_INT128), 16);
	cr_expect_eq(util_atomic_dt_size(FI_UINT128), 16);
	cr_expect_eq(util_atomic_dt_size(FI_FLOAT), 4);
	cr_expect_eq(util_atomic_dt_size(FI_DOUBLE), 8);
	cr_expect_eq(util_atomic_dt_size(FI_FLOAT_COMPLEX), 8);
	cr_expect_eq(util_atomic_dt_size(FI_DOUBLE_COMPLEX), 16);
	cr_expect_eq(util_atomic_dt_size(FI_LONG_DOUBLE), sizeof(long double));
	cr_expect_eq(util_atomic_dt_size(FI_LONG_DOUBLE_COMPLEX),
		     2 * sizeof(long double));
	cr_expect_eq(util_atomic_dt_size(FI_VOID), 0);
	cr_expect_eq(util_atomic_dt_size(FI_UINT128 + 1), 0);
	cr_expect_eq(util_atomic_dt_size(-1), 0);
}

/* Every combination: apply succeeds exactly when some class allows it. */
Test(atomic_valid, apply_rejects_invalid)
{
	_Alignas(64) unsigned char dst[64], src[64], cmp[64], res[64];
	unsigned char before[64];
	int op, dt, cls, ret, want;
	bool any;

	for (op = 0; op < FI_ATOMIC_OP_LAST; op++) {
		for (dt = 0; dt <= FI_UINT128; dt++) {
			any = false;
			for (cls = 0; cls <= UTIL_ATOMIC_COMPARE; cls++)
				any |= expect_valid(op, dt, cls);
			memset(dst, 0x11, sizeof(dst));
			memset(src, 0x22, sizeof(src));
			memset(cmp, 0x11, sizeof(cmp));
			memcpy(before, dst, sizeof(dst));
			want = any ? 0 : -FI_EOPNOTSUPP;
			ret = util_atomic_apply(op, dt, dst, src, cmp, res, 1);
			cr_expect_eq(ret, want, "%s dt %d: %d, want %d",
				     op_names[op], dt, ret, want);
			if (!any)
				cr_expect_arr_eq(dst, before, sizeof(dst),
						 "%s dt %d touched dst",
						 op_names[op], dt);
		}
	}
	cr_expect_eq(util_atomic_apply(FI_ATOMIC_OP_LAST, FI_INT32, dst, src,
				       cmp, res, 1),
		     -FI_EINVAL);
	cr_expect_eq(util_atomic_apply(FI_SUM, FI_VOID, dst, src, cmp, res, 1),
		     -FI_EINVAL);
	cr_expect_eq(
	    util_atomic_apply(FI_SUM, FI_UINT128 + 1, dst, src, cmp, res, 1),
	    -FI_EINVAL);
	cr_expect_eq(util_atomic_apply(-1, FI_INT32, dst, src, cmp, res, 1),
		     -FI_EINVAL);
}

Test(atomic_valid, apply_checks_buffers)
{
	uint64_t dst = 5, src = 7, cmp = 5, res = 0;

	/* count 0 is a no-op, even without buffers */
	cr_expect_eq(
	    util_atomic_apply(FI_SUM, FI_UINT64, NULL, NULL, NULL, NULL, 0), 0);
	cr_expect_eq(
	    util_atomic_apply(FI_SUM, FI_UINT64, NULL, &src, NULL, NULL, 1),
	    -FI_EINVAL);
	cr_expect_eq(
	    util_atomic_apply(FI_SUM, FI_UINT64, &dst, NULL, NULL, NULL, 1),
	    -FI_EINVAL);
	cr_expect_eq(
	    util_atomic_apply(FI_CSWAP, FI_UINT64, &dst, &src, NULL, &res, 1),
	    -FI_EINVAL);
	cr_expect_eq(util_atomic_apply(FI_ATOMIC_READ, FI_UINT64, &dst, NULL,
				       NULL, NULL, 1),
		     -FI_EINVAL);
	cr_expect_eq(util_atomic_apply_shared(NULL, FI_SUM, FI_UINT64, &dst,
					      &src, NULL, NULL, 1),
		     -FI_EINVAL);
	cr_expect_eq(dst, 5);
	/* READ ignores src; compare ops may skip the result */
	cr_expect_eq(util_atomic_apply(FI_ATOMIC_READ, FI_UINT64, &dst, NULL,
				       NULL, &res, 1),
		     0);
	cr_expect_eq(res, 5);
	cr_expect_eq(
	    util_atomic_apply(FI_CSWAP, FI_UINT64, &dst, &src, &cmp, NULL, 1),
	    0);
	cr_expect_eq(dst, 7);
}

/* ---- query ------------------------------------------------------------- */

Test(atomic_query, classes_and_counts)
{
	struct fi_atomic_attr attr;
	int op, dt, cls, ret;
	uint64_t flags[] = {0, FI_FETCH_ATOMIC, FI_COMPARE_ATOMIC};
	size_t size;

	for (op = 0; op < FI_ATOMIC_OP_LAST; op++) {
		for (dt = 0; dt <= FI_UINT128; dt++) {
			for (cls = 0; cls <= UTIL_ATOMIC_COMPARE; cls++) {
				attr.count = attr.size = 12345;
				ret = util_atomic_query(dt, op, 4096,
							flags[cls], &attr);
				size = util_atomic_dt_size(dt);
				if (!expect_valid(op, dt, cls)) {
					cr_expect_eq(ret, -FI_EOPNOTSUPP);
					cr_expect_eq(attr.count, 12345);
					continue;
				}
				cr_expect_eq(ret, 0, "%s dt %d %s",
					     op_names[op], dt,
					     class_names[cls]);
				cr_expect_eq(attr.size, size);
				cr_expect_eq(attr.count, 4096 / size);
			}
		}
	}
}

Test(atomic_query, flags_and_limits)
{
	struct fi_atomic_attr attr = {0};

	cr_expect_eq(util_atomic_query(FI_INT32, FI_CSWAP, 64,
				       FI_FETCH_ATOMIC | FI_COMPARE_ATOMIC,
				       &attr),
		     -FI_EINVAL);
	cr_expect_eq(util_atomic_query(FI_INT32, FI_SUM, 64, 0, NULL),
		     -FI_EINVAL);
	cr_expect_eq(util_atomic_query(FI_INT32, FI_SUM, 64, FI_TAGGED, &attr),
		     -FI_EOPNOTSUPP);
	cr_expect_eq(util_atomic_query(FI_INT32, FI_SUM, 64, FI_SEND, &attr),
		     -FI_EBADFLAGS);
	/* a limit below one element */
	cr_expect_eq(
	    util_atomic_query(FI_LONG_DOUBLE_COMPLEX, FI_SUM, 16, 0, &attr),
	    -FI_EOPNOTSUPP);
	cr_expect_eq(util_atomic_query(FI_INT32, FI_SUM, 3, 0, &attr),
		     -FI_EOPNOTSUPP);
	cr_expect_eq(util_atomic_query(FI_INT32, FI_SUM, 10, 0, &attr), 0);
	cr_expect_eq(attr.count, 2);
	cr_expect_eq(attr.size, 4);
	cr_expect_eq(util_atomic_query(FI_VOID, FI_SUM, 64, 0, &attr),
		     -FI_EOPNOTSUPP);
}

/* ---- reference implementations, per C type --------------------------- */

/*
 * A datatype as the tests see it: its values of interest, the reference
 * update of one element, and value equality (NaN equals NaN, -0 differs
 * from +0; long double padding is ignored).
 */
struct tdesc {
	enum fi_datatype dt;
	const char *name;
	size_t size;
	size_t npool;
	void (*pool)(size_t i, void *out);
	void (*ref)(enum fi_op op, void *dst, const void *src, const void *cmp);
	bool (*eq)(const void *a, const void *b);
	void (*show)(const void *a, char *buf, size_t len);
};

#define POOL_MAX 12

/* T: the type; UT: its unsigned counterpart; W: unsigned type for wrapping
 * arithmetic, at least as wide as T. */
#define REF_INT(name, T, UT, W, is_signed)                                     \
	static void pool_##name(size_t i, void *out)                           \
	{                                                                      \
		UT umax = (UT) ~(UT)0;                                         \
		T max = is_signed ? (T)(umax >> 1) : (T)umax;                  \
		T min = is_signed ? (T) ~(umax >> 1) : 0;                      \
		T v[POOL_MAX] = {                                              \
		    0,                                                         \
		    1,                                                         \
		    (T)-1,                                                     \
		    2,                                                         \
		    (T)-100,                                                   \
		    max,                                                       \
		    min,                                                       \
		    (T)(max - 1),                                              \
		    (T)(min + 1),                                              \
		    (T)(umax / 3),                                             \
		    (T)(umax / 3 * 2),                                         \
		    100,                                                       \
		};                                                             \
		memcpy(out, &v[i], sizeof(T));                                 \
	}                                                                      \
	static void ref_##name(enum fi_op op, void *dst, const void *srcp,     \
			       const void *cmpp)                               \
	{                                                                      \
		T o, s = 0, c = 0, r = 0;                                      \
		memcpy(&o, dst, sizeof(T));                                    \
		if (srcp)                                                      \
			memcpy(&s, srcp, sizeof(T));                           \
		if (cmpp)                                                      \
			memcpy(&c, cmpp, sizeof(T));                           \
		switch (op) {                                                  \
		case FI_MIN:                                                   \
			r = s < o ? s : o;                                     \
			break;                                                 \
		case FI_MAX:                                                   \
			r = s > o ? s : o;                                     \
			break;                                                 \
		case FI_SUM:                                                   \
			r = (T)(UT)((W)o + (W)s);                              \
			break;                                                 \
		case FI_PROD:                                                  \
			r = (T)(UT)((W)o * (W)s);                              \
			break;                                                 \
		case FI_LOR:                                                   \
			r = (o != 0) | (s != 0);                               \
			break;                                                 \
		case FI_LAND:                                                  \
			r = (o != 0) & (s != 0);                               \
			break;                                                 \
		case FI_LXOR:                                                  \
			r = (o != 0) ^ (s != 0);                               \
			break;                                                 \
		case FI_BOR:                                                   \
			r = (T)(o | s);                                        \
			break;                                                 \
		case FI_BAND:                                                  \
			r = (T)(o & s);                                        \
			break;                                                 \
		case FI_BXOR:                                                  \
			r = (T)(o ^ s);                                        \
			break;                                                 \
		case FI_ATOMIC_READ:                                           \
			r = o;                                                 \
			break;                                                 \
		case FI_ATOMIC_WRITE:                                          \
			r = s;                                                 \
			break;                                                 \
		case FI_CSWAP:                                                 \
			r = c == o ? s : o;                                    \
			break;                                                 \
		case FI_CSWAP_NE:                                              \
			r = c != o ? s : o;                                    \
			break;                                                 \
		case FI_CSWAP_LE:                                              \
			r = c <= o ? s : o;                                    \
			break;                                                 \
		case FI_CSWAP_LT:                                              \
			r = c < o ? s : o;                                     \
			break;                                                 \
		case FI_CSWAP_GE:                                              \
			r = c >= o ? s : o;                                    \
			break;                                                 \
		case FI_CSWAP_GT:                                              \
			r = c > o ? s : o;                                     \
			break;                                                 \
		case FI_MSWAP:                                                 \
			r = (T)((s & c) | (o & ~c));                           \
			break;                                                 \
		default:                                                       \
			cr_assert_fail("op %d", op);                           \
		}                                                              \
		memcpy(dst, &r, sizeof(T));                                    \
	}

REF_INT(i8, int8_t, uint8_t, uint64_t, 1)
REF_INT(u8, uint8_t, uint8_t, uint64_t, 0)
REF_INT(i16, int16_t, uint16_t, uint64_t, 1)
REF_INT(u16, uint16_t, uint16_t, uint64_t, 0)
REF_INT(i32, int32_t, uint32_t, uint64_t, 1)
REF_INT(u32, uint32_t, uint32_t, uint64_t, 0)
REF_INT(i64, int64_t, uint64_t, uint64_t, 1)
REF_INT(u64, uint64_t, uint64_t, uint64_t, 0)
REF_INT(i128, s128_t, u128_t, u128_t, 1)
REF_INT(u128, u128_t, u128_t, u128_t, 0)

static bool eq_bytes1(const void *a, const void *b)
{
	return !memcmp(a, b, 1);
}
static bool eq_bytes2(const void *a, const void *b)
{
	return !memcmp(a, b, 2);
}
static bool eq_bytes4(const void *a, const void *b)
{
	return !memcmp(a, b, 4);
}
static bool eq_bytes8(const void *a, const void *b)
{
	return !memcmp(a, b, 8);
}
static bool eq_bytes16(const void *a, const void *b)
{
	return !memcmp(a, b, 16);
}

static void show_hex(const void *a, size_t size, char *buf, size_t len)
{
	const unsigned char *p = a;
	size_t i, n = 0;

	buf[0] = '\0';
	/* most significant byte first (little-endian machines) */
	for (i = size; i-- > 0 && n + 3 < len;)
		n += snprintf(buf + n, len - n, "%02x", p[i]);
}

#define SHOW_INT(name, T)                                                      \
	static void show_##name(const void *a, char *buf, size_t len)          \
	{                                                                      \
		show_hex(a, sizeof(T), buf, len);                              \
	}
SHOW_INT(i8, int8_t)
SHOW_INT(u8, uint8_t)
SHOW_INT(i16, int16_t)
SHOW_INT(u16, uint16_t)
SHOW_INT(i32, int32_t)
SHOW_INT(u32, uint32_t)
SHOW_INT(i64, int64_t)
SHOW_INT(u64, uint64_t)
SHOW_INT(i128, s128_t)
SHOW_INT(u128, u128_t)

/* Same value: NaN matches NaN, and the sign of a zero counts. */
#define SAME_REAL(a, b)                                                        \
	((isnan(a) && isnan(b)) || ((a) == (b) && !signbit(a) == !signbit(b)))

#define REF_REAL(name, T, big, tiny)                                           \
	static void pool_##name(size_t i, void *out)                           \
	{                                                                      \
		T v[POOL_MAX] = {                                              \
		    0,	 -(T)0.0, 1,	-1,	     (T)2.5,	   (T)-3.75,   \
		    big, tiny,	  -big, (T)INFINITY, -(T)INFINITY, (T)NAN,     \
		};                                                             \
		memcpy(out, &v[i], sizeof(T));                                 \
	}                                                                      \
	static void ref_##name(enum fi_op op, void *dst, const void *srcp,     \
			       const void *cmpp)                               \
	{                                                                      \
		T o, s = 0, c = 0, r = 0;                                      \
		memcpy(&o, dst, sizeof(T));                                    \
		if (srcp)                                                      \
			memcpy(&s, srcp, sizeof(T));                           \
		if (cmpp)                                                      \
			memcpy(&c, cmpp, sizeof(T));                           \
		switch (op) {                                                  \
		case FI_MIN:                                                   \
			r = s < o ? s : o;                                     \
			break;                                                 \
		case FI_MAX:                                                   \
			r = s > o ? s : o;                                     \
			break;                                                 \
		case FI_SUM:                                                   \
			r = o + s;                                             \
			break;                                                 \
		case FI_PROD:                                                  \
			r = o * s;                                             \
			break;                                                 \
		case FI_LOR:                                                   \
			r = (o != 0) | (s != 0);                               \
			break;                                                 \
		case FI_LAND:                                                  \
			r = (o != 0) & (s != 0);                               \
			break;                                                 \
		case FI_LXOR:                                                  \
			r = (o != 0) ^ (s != 0);                               \
			break;                                                 \
		case FI_ATOMIC_READ:                                           \
			r = o;                                                 \
			break;                                                 \
		case FI_ATOMIC_WRITE:                                          \
			r = s;                                                 \
			break;                                                 \
		case FI_CSWAP:                                                 \
			r = c == o ? s : o;                                    \
			break;                                                 \
		case FI_CSWAP_NE:                                              \
			r = c != o ? s : o;                                    \
			break;                                                 \
		case FI_CSWAP_LE:                                              \
			r = c <= o ? s : o;                                    \
			break;                                                 \
		case FI_CSWAP_LT:                                              \
			r = c < o ? s : o;                                     \
			break;                                                 \
		case FI_CSWAP_GE:                                              \
			r = c >= o ? s : o;                                    \
			break;                                                 \
		case FI_CSWAP_GT:                                              \
			r = c > o ? s : o;                                     \
			break;                                                 \
		default:                                                       \
			cr_assert_fail("op %d", op);                           \
		}                                                              \
		memcpy(dst, &r, sizeof(T));                                    \
	}                                                                      \
	static bool eq_##name(const void *a, const void *b)                    \
	{                                                                      \
		T x, y;                                                        \
		memcpy(&x, a, sizeof(T));                                      \
		memcpy(&y, b, sizeof(T));                                      \
		return SAME_REAL(x, y);                                        \
	}                                                                      \
	static void show_##name(const void *a, char *buf, size_t len)          \
	{                                                                      \
		T x;                                                           \
		memcpy(&x, a, sizeof(T));                                      \
		snprintf(buf, len, "%La", (long double)x);                     \
	}

REF_REAL(flt, float, FLT_MAX, FLT_TRUE_MIN)
REF_REAL(dbl, double, DBL_MAX, DBL_TRUE_MIN)
REF_REAL(ldbl, long double, LDBL_MAX, LDBL_TRUE_MIN)

/*
 * Complex numbers as the man page defines them: an ordered pair (real,
 * imaginary) of R.  Values are small dyadic numbers, so that products are
 * exact whatever the evaluation (and fused multiply-adds) of either side.
 */
#define REF_CPLX(name, R)                                                      \
	static void pool_##name(size_t i, void *out)                           \
	{                                                                      \
		static const R v[POOL_MAX][2] = {                              \
		    {0, 0},	  {-0.0, 0}, {1, 0},	   {-1, 0},            \
		    {0, 1},	  {0, -0.0}, {2.5, -1.5},  {-3, 4},            \
		    {1024, 0.25}, {0, -2},   {-0.5, -0.5}, {7, 7},             \
		};                                                             \
		memcpy(out, v[i], 2 * sizeof(R));                              \
	}                                                                      \
	static void ref_##name(enum fi_op op, void *dst, const void *srcp,     \
			       const void *cmpp)                               \
	{                                                                      \
		R o[2], s[2] = {0, 0}, c[2] = {0, 0}, r[2] = {0, 0};           \
		bool ot, st, ceq;                                              \
		memcpy(o, dst, sizeof(o));                                     \
		if (srcp)                                                      \
			memcpy(s, srcp, sizeof(s));                            \
		if (cmpp)                                                      \
			memcpy(c, cmpp, sizeof(c));                            \
		ot = o[0] != 0 || o[1] != 0;                                   \
		st = s[0] != 0 || s[1] != 0;                                   \
		ceq = c[0] == o[0] && c[1] == o[1];                            \
		switch (op) {                                                  \
		case FI_SUM:                                                   \
			r[0] = o[0] + s[0];                                    \
			r[1] = o[1] + s[1];                                    \
			break;                                                 \
		case FI_PROD:                                                  \
			r[0] = o[0] * s[0] - o[1] * s[1];                      \
			r[1] = o[0] * s[1] + o[1] * s[0];                      \
			break;                                                 \
		case FI_LOR:                                                   \
			r[0] = ot || st;                                       \
			break;                                                 \
		case FI_LAND:                                                  \
			r[0] = ot && st;                                       \
			break;                                                 \
		case FI_LXOR:                                                  \
			r[0] = ot != st;                                       \
			break;                                                 \
		case FI_ATOMIC_READ:                                           \
			memcpy(r, o, sizeof(r));                               \
			break;                                                 \
		case FI_ATOMIC_WRITE:                                          \
			memcpy(r, s, sizeof(r));                               \
			break;                                                 \
		case FI_CSWAP:                                                 \
			memcpy(r, ceq ? s : o, sizeof(r));                     \
			break;                                                 \
		case FI_CSWAP_NE:                                              \
			memcpy(r, !ceq ? s : o, sizeof(r));                    \
			break;                                                 \
		default:                                                       \
			cr_assert_fail("op %d", op);                           \
		}                                                              \
		memcpy(dst, r, sizeof(r));                                     \
	}                                                                      \
	static bool eq_##name(const void *a, const void *b)                    \
	{                                                                      \
		R x[2], y[2];                                                  \
		memcpy(x, a, sizeof(x));                                       \
		memcpy(y, b, sizeof(y));                                       \
		return SAME_REAL(x[0], y[0]) && SAME_REAL(x[1], y[1]);         \
	}                                                                      \
	static void show_##name(const void *a, char *buf, size_t len)          \
	{                                                                      \
		R x[2];                                                        \
		memcpy(x, a, sizeof(x));                                       \
		snprintf(buf, len, "(%La, %La)", (long double)x[0],            \
			 (long double)x[1]);                                   \
	}

REF_CPLX(cflt, float)
REF_CPLX(cdbl, double)
REF_CPLX(cldbl, long double)

#define TDESC(dt, name, size, eq)                                              \
	{                                                                      \
		dt, #name, size, POOL_MAX, pool_##name, ref_##name, eq,        \
		    show_##name                                                \
	}

static const struct tdesc types[] = {
    TDESC(FI_INT8, i8, 1, eq_bytes1),
    TDESC(FI_UINT8, u8, 1, eq_bytes1),
    TDESC(FI_INT16, i16, 2, eq_bytes2),
    TDESC(FI_UINT16, u16, 2, eq_bytes2),
    TDESC(FI_INT32, i32, 4, eq_bytes4),
    TDESC(FI_UINT32, u32, 4, eq_bytes4),
    TDESC(FI_INT64, i64, 8, eq_bytes8),
    TDESC(FI_UINT64, u64, 8, eq_bytes8),
    TDESC(FI_FLOAT, flt, sizeof(float), eq_flt),
    TDESC(FI_DOUBLE, dbl, sizeof(double), eq_dbl),
    TDESC(FI_FLOAT_COMPLEX, cflt, 2 * sizeof(float), eq_cflt),
    TDESC(FI_DOUBLE_COMPLEX, cdbl, 2 * sizeof(double), eq_cdbl),
    TDESC(FI_LONG_DOUBLE, ldbl, sizeof(long double), eq_ldbl),
    TDESC(FI_LONG_DOUBLE_COMPLEX, cldbl, 2 * sizeof(long double), eq_cldbl),
    TDESC(FI_INT128, i128, 16, eq_bytes16),
    TDESC(FI_UINT128, u128, 16, eq_bytes16),
};

/* ---- every valid combination against the reference --------------------- */

#define GUARD 32
#define GUARD_BYTE 0x5a

/*
 * Run op on `count` elements of t at `offset` bytes past a 64-byte
 * boundary (offsets that break the type's alignment take the locked path)
 * and compare target and fetched values with the reference.  Element i
 * pairs pool values i / P and i % P, so count P * P covers every pair; the
 * compare operand equals the target value for a third of the elements.
 * Returns the number of mismatches (the first one is reported).
 */
static int run_combo(const struct tdesc *t, enum fi_op op,
		     enum util_atomic_class cls, size_t count, size_t offset)
{
	size_t sz = t->size, p = t->npool, i, bytes = count * sz;
	size_t alloc = GUARD + offset + bytes + GUARD;
	unsigned char *dst_buf = aligned_alloc(64, (alloc + 63) / 64 * 64);
	unsigned char *src = malloc(bytes), *cmp = malloc(bytes);
	unsigned char *res = malloc(bytes), *want = malloc(bytes);
	unsigned char *want_res = malloc(bytes), *dst;
	const void *srcp = src, *cmpp = NULL;
	void *resp = NULL;
	char a[128], b[128];
	int bad = 0, ret;

	cr_assert(dst_buf && src && cmp && res && want && want_res);
	memset(dst_buf, GUARD_BYTE, alloc);
	dst = dst_buf + GUARD + offset;
	for (i = 0; i < count; i++) {
		t->pool(i / p % p, dst + i * sz);
		t->pool(i % p, src + i * sz);
		if (i % 3 == 0)
			memcpy(cmp + i * sz, dst + i * sz, sz);
		else
			t->pool((i / p + i) % p, cmp + i * sz);
	}
	memset(res, 0xa5, bytes);

	/* the reference, element by element on a copy */
	memcpy(want, dst, bytes);
	memcpy(want_res, dst, bytes);
	for (i = 0; i < count; i++)
		t->ref(op, want + i * sz, src + i * sz,
		       cls == UTIL_ATOMIC_COMPARE ? cmp + i * sz : NULL);

	if (cls != UTIL_ATOMIC_BASE)
		resp = res;
	if (cls == UTIL_ATOMIC_COMPARE)
		cmpp = cmp;
	if (op == FI_ATOMIC_READ)
		srcp = NULL;
	ret = util_atomic_apply(op, t->dt, dst, srcp, cmpp, resp, count);
	cr_expect_eq(ret, 0, "%s %s %s: %d", t->name, op_names[op],
		     class_names[cls], ret);

	for (i = 0; i < count && !bad; i++) {
		if (!t->eq(dst + i * sz, want + i * sz)) {
			t->show(dst + i * sz, a, sizeof(a));
			t->show(want + i * sz, b, sizeof(b));
			cr_expect_fail("%s %s %s count %zu offset %zu "
				       "element %zu: target %s, want %s",
				       t->name, op_names[op], class_names[cls],
				       count, offset, i, a, b);
			bad++;
		} else if (resp && !t->eq(res + i * sz, want_res + i * sz)) {
			t->show(res + i * sz, a, sizeof(a));
			t->show(want_res + i * sz, b, sizeof(b));
			cr_expect_fail("%s %s %s count %zu offset %zu "
				       "element %zu: fetched %s, want %s",
				       t->name, op_names[op], class_names[cls],
				       count, offset, i, a, b);
			bad++;
		}
	}
	for (i = 0; i < GUARD + offset && !bad; i++)
		if (dst_buf[i] != GUARD_BYTE)
			bad++;
	for (i = GUARD + offset + bytes; i < alloc && !bad; i++)
		if (dst_buf[i] != GUARD_BYTE)
			bad++;
	cr_expect_eq(bad, 0, "%s %s %s count %zu offset %zu", t->name,
		     op_names[op], class_names[cls], count, offset);

	free(dst_buf);
	free(src);
	free(cmp);
	free(res);
	free(want);
	free(want_res);
	return bad;
}

static void run_class(enum util_atomic_class cls)
{
	static const size_t offsets[] = {0, 1, 4, 8};
	size_t t, k, n, runs = 0;
	size_t counts[] = {1, 5, POOL_MAX * POOL_MAX};
	int op;

	for (t = 0; t < WEFT_ARRAY_SIZE(types); t++) {
		cr_assert_eq(types[t].size, util_atomic_dt_size(types[t].dt),
			     "%s", types[t].name);
		for (op = 0; op < FI_ATOMIC_OP_LAST; op++) {
			if (!util_atomic_valid(op, types[t].dt, cls))
				continue;
			for (k = 0; k < WEFT_ARRAY_SIZE(offsets); k++)
				for (n = 0; n < WEFT_ARRAY_SIZE(counts); n++) {
					run_combo(&types[t], op, cls, counts[n],
						  offsets[k]);
					runs++;
				}
		}
	}
	cr_assert_gt(runs, 0);
}

Test(atomic_apply, every_base_combination, .timeout = 60)
{
	run_class(UTIL_ATOMIC_BASE);
}

Test(atomic_apply, every_fetch_combination, .timeout = 60)
{
	run_class(UTIL_ATOMIC_FETCH);
}

Test(atomic_apply, every_compare_combination, .timeout = 60)
{
	run_class(UTIL_ATOMIC_COMPARE);
}

/* ---- hand-checked cases ------------------------------------------------ */

Test(atomic_apply, integer_wrap)
{
	uint8_t u8 = 250, a8 = 10;
	int32_t i32 = INT32_MAX, a32 = 1;
	uint64_t u64 = 1ull << 63, m64 = 6, old = 0;
	u128_t u128 = ~(uint64_t)0, a128 = 1;
	s128_t s128 = -1, b128 = 2;
	int16_t i16 = -300, n16 = 200;

	cr_assert_eq(
	    util_atomic_apply(FI_SUM, FI_UINT8, &u8, &a8, NULL, NULL, 1), 0);
	cr_expect_eq(u8, 4);
	cr_assert_eq(
	    util_atomic_apply(FI_SUM, FI_INT32, &i32, &a32, NULL, NULL, 1), 0);
	cr_expect_eq(i32, INT32_MIN);
	cr_assert_eq(
	    util_atomic_apply(FI_PROD, FI_UINT64, &u64, &m64, NULL, &old, 1),
	    0);
	cr_expect_eq(u64, 0);
	cr_expect_eq(old, 1ull << 63);
	/* the carry crosses the two halves of a 16-byte element */
	cr_assert_eq(
	    util_atomic_apply(FI_SUM, FI_UINT128, &u128, &a128, NULL, NULL, 1),
	    0);
	cr_expect(u128 == (u128_t)1 << 64);
	cr_assert_eq(
	    util_atomic_apply(FI_PROD, FI_INT128, &s128, &b128, NULL, NULL, 1),
	    0);
	cr_expect(s128 == -2);
	cr_assert_eq(
	    util_atomic_apply(FI_MIN, FI_INT16, &i16, &n16, NULL, NULL, 1), 0);
	cr_expect_eq(i16, -300);
	cr_assert_eq(
	    util_atomic_apply(FI_MAX, FI_INT16, &i16, &n16, NULL, NULL, 1), 0);
	cr_expect_eq(i16, 200);
}

Test(atomic_apply, unsigned_128_order)
{
	/* 2^127 is above 1 as unsigned, below as signed */
	u128_t big = (u128_t)1 << 127, one = 1;
	u128_t d = big, r = 0;
	s128_t sd, sone = 1;

	cr_assert_eq(
	    util_atomic_apply(FI_MIN, FI_UINT128, &d, &one, NULL, &r, 1), 0);
	cr_expect(d == 1 && r == big);
	memcpy(&sd, &big, sizeof(sd));
	cr_assert_eq(
	    util_atomic_apply(FI_MAX, FI_INT128, &sd, &sone, NULL, NULL, 1), 0);
	cr_expect(sd == 1);
}

Test(atomic_apply, compare_and_fetch)
{
	int64_t d = 42, s = 7, c = 41, r = 0;
	uint32_t m = 0xf0f0f0f0, ms = 0x12345678, mask = 0x0000ffff, mr;

	/* mismatch: target kept, old value returned */
	cr_assert_eq(util_atomic_apply(FI_CSWAP, FI_INT64, &d, &s, &c, &r, 1),
		     0);
	cr_expect_eq(d, 42);
	cr_expect_eq(r, 42);
	c = 42;
	cr_assert_eq(util_atomic_apply(FI_CSWAP, FI_INT64, &d, &s, &c, &r, 1),
		     0);
	cr_expect_eq(d, 7);
	cr_expect_eq(r, 42);
	/* compare <= target: 5 <= 7 swaps, 8 <= 7 does not */
	c = 8;
	s = 100;
	cr_assert_eq(
	    util_atomic_apply(FI_CSWAP_LE, FI_INT64, &d, &s, &c, &r, 1), 0);
	cr_expect_eq(d, 7);
	c = 5;
	cr_assert_eq(
	    util_atomic_apply(FI_CSWAP_LE, FI_INT64, &d, &s, &c, &r, 1), 0);
	cr_expect_eq(d, 100);
	cr_expect_eq(r, 7);
	cr_assert_eq(
	    util_atomic_apply(FI_MSWAP, FI_UINT32, &m, &ms, &mask, &mr, 1), 0);
	cr_expect_eq(m, 0xf0f05678);
	cr_expect_eq(mr, 0xf0f0f0f0);
	/* fetch-add returns the old value */
	s = 3;
	cr_assert_eq(util_atomic_apply(FI_SUM, FI_INT64, &d, &s, NULL, &r, 1),
		     0);
	cr_expect_eq(r, 100);
	cr_expect_eq(d, 103);
}

Test(atomic_apply, float_nan_and_zero)
{
	double d = NAN, one = 1.0, nan = NAN, r = 0, z = 0.0, mz = -0.0;
	long double ld = -0.0L, lz = 0.0L, lnew = 5.0L;
	float f = 0.0f, fnan = NAN;

	/* MIN/MAX: a NaN on either side leaves the target as it was */
	cr_assert_eq(
	    util_atomic_apply(FI_MIN, FI_DOUBLE, &d, &one, NULL, &r, 1), 0);
	cr_expect(isnan(d) && isnan(r));
	d = 1.0;
	cr_assert_eq(
	    util_atomic_apply(FI_MAX, FI_DOUBLE, &d, &nan, NULL, NULL, 1), 0);
	cr_expect_eq(d, 1.0);
	/* CSWAP compares values: -0.0 matches +0.0, NaN matches nothing */
	cr_assert_eq(util_atomic_apply(FI_CSWAP, FI_LONG_DOUBLE, &ld, &lnew,
				       &lz, NULL, 1),
		     0);
	cr_expect_eq(ld, 5.0L);
	d = NAN;
	cr_assert_eq(
	    util_atomic_apply(FI_CSWAP, FI_DOUBLE, &d, &z, &nan, NULL, 1), 0);
	cr_expect(isnan(d));
	/* logical ops: NaN is true, the result is 1.0 */
	cr_assert_eq(
	    util_atomic_apply(FI_LOR, FI_FLOAT, &f, &fnan, NULL, NULL, 1), 0);
	cr_expect_eq(f, 1.0f);
	/* MIN of -0.0 into +0.0: not less, so +0.0 stays */
	d = 0.0;
	cr_assert_eq(
	    util_atomic_apply(FI_MIN, FI_DOUBLE, &d, &mz, NULL, NULL, 1), 0);
	cr_expect(d == 0.0 && !signbit(d));
}

Test(atomic_apply, complex_values)
{
	double complex d = 1.0 + 2.0 * I, s = 3.0 - 1.0 * I, r;
	long double complex ld = 2.0L * I, ls = 0;
	float complex f = 0, fs = 0;

	cr_assert_eq(
	    util_atomic_apply(FI_PROD, FI_DOUBLE_COMPLEX, &d, &s, NULL, &r, 1),
	    0);
	cr_expect(creal(d) == 5.0 && cimag(d) == 5.0);
	cr_expect(creal(r) == 1.0 && cimag(r) == 2.0);
	/* an imaginary-only value is true */
	cr_assert_eq(util_atomic_apply(FI_LOR, FI_LONG_DOUBLE_COMPLEX, &ld, &ls,
				       NULL, NULL, 1),
		     0);
	cr_expect(creall(ld) == 1.0L && cimagl(ld) == 0.0L);
	cr_assert_eq(util_atomic_apply(FI_LXOR, FI_FLOAT_COMPLEX, &f, &fs, NULL,
				       NULL, 1),
		     0);
	cr_expect(crealf(f) == 0.0f && cimagf(f) == 0.0f);
}

#if defined(__x86_64__)
static bool cpu_has_cx16(void)
{
	unsigned int a, b, c, d;

	return __get_cpuid(1, &a, &b, &c, &d) && (c & bit_CMPXCHG16B);
}
#endif

Test(atomic_apply, lock_free_paths)
{
	_Alignas(64) unsigned char buf[128] = {0};

	cr_expect(util_atomic_lock_free(FI_UINT8, buf + 1));
	cr_expect(util_atomic_lock_free(FI_UINT64, buf));
	cr_expect(util_atomic_lock_free(FI_UINT64, buf + 8));
	cr_expect_not(util_atomic_lock_free(FI_UINT64, buf + 4));
	cr_expect_not(util_atomic_lock_free(FI_INT32, buf + 2));
	cr_expect(util_atomic_lock_free(FI_FLOAT_COMPLEX, buf + 8));
	cr_expect_not(util_atomic_lock_free(FI_LONG_DOUBLE_COMPLEX, buf));
	cr_expect_not(util_atomic_lock_free(FI_DOUBLE_COMPLEX, buf + 8));
	cr_expect_not(util_atomic_lock_free(FI_VOID, buf));
#if defined(__x86_64__)
	cr_expect_eq(util_atomic_lock_free(FI_INT128, buf), cpu_has_cx16());
	cr_expect_eq(util_atomic_lock_free(FI_DOUBLE_COMPLEX, buf + 16),
		     cpu_has_cx16());
	cr_expect_eq(util_atomic_lock_free(FI_LONG_DOUBLE, buf),
		     cpu_has_cx16());
#endif
}

/* ---- several processes on one shared mapping -------------------------- */

/*
 * Each phase runs for a fixed wall time rather than a fixed count, so that
 * the children overlap even when the machine is busy and a child would
 * otherwise finish a short phase within one time slice.
 */
enum {
	NPROC = 4,
	NPHASE = 6,
	PHASE_MS = 100,
	SEEN_PER_CHILD = 1 << 20,
};

struct shared_area {
	uint32_t go;
	uint32_t arrived;
	int32_t i32;
	uint64_t u64;
	uint64_t cs;
	_Alignas(16) u128_t u128;
	/* 8 bytes past a 16-byte boundary: not lock-free */
	_Alignas(16) unsigned char dc_pad[8];
	double complex dc;
	long double complex ldc;
	struct util_atomic_locks locks;
	uint64_t done[NPHASE][NPROC];
	uint8_t seen[NPROC * SEEN_PER_CHILD];
};

/* Wait until every child has reached phase `phase` (1, 2, ...). */
static void barrier(struct shared_area *sh, uint32_t phase)
{
	__atomic_add_fetch(&sh->arrived, 1, __ATOMIC_ACQ_REL);
	while (__atomic_load_n(&sh->arrived, __ATOMIC_ACQUIRE) < phase * NPROC)
		sched_yield();
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Whether phase `phase` should run another iteration; counts it. */
static bool phase_more(struct shared_area *sh, int phase, int me, uint64_t end,
		       uint64_t cap)
{
	uint64_t n = sh->done[phase][me];

	if (n >= cap || ((n & 255) == 0 && now_ms() >= end))
		return false;
	sh->done[phase][me] = n + 1;
	return true;
}

/*
 * One tight loop per path, so that the children hammer the same element at
 * the same time: fetch-add, add, a CSWAP retry loop, the 16-byte
 * compare-and-swap, and the shared stripe locks.
 */
static void child_work(struct shared_area *sh, int me)
{
	uint64_t one = 1, old, cur, next, end;
	int32_t minus = -1;
	u128_t add = 1;
	double complex dinc = 1.0 + 2.0 * I;
	long double complex linc = 2.0L - 1.0L * I;
	int ph = 0;

	while (!__atomic_load_n(&sh->go, __ATOMIC_ACQUIRE))
		;
	barrier(sh, ++ph);
	end = now_ms() + PHASE_MS;
	while (phase_more(sh, ph - 1, me, end, SEEN_PER_CHILD)) {
		if (util_atomic_apply(FI_SUM, FI_UINT64, &sh->u64, &one, NULL,
				      &old, 1) ||
		    old >= NPROC * SEEN_PER_CHILD)
			_exit(2);
		/* each fetched value is distinct, so no two children write
		 * the same byte */
		sh->seen[old]++;
	}
	barrier(sh, ++ph);
	end = now_ms() + PHASE_MS;
	while (phase_more(sh, ph - 1, me, end, UINT64_MAX))
		if (util_atomic_apply(FI_SUM, FI_INT32, &sh->i32, &minus, NULL,
				      NULL, 1))
			_exit(3);
	barrier(sh, ++ph);
	end = now_ms() + PHASE_MS;
	while (phase_more(sh, ph - 1, me, end, UINT64_MAX)) {
		if (util_atomic_apply(FI_ATOMIC_READ, FI_UINT64, &sh->cs, NULL,
				      NULL, &cur, 1))
			_exit(4);
		for (;;) {
			next = cur + 1;
			if (util_atomic_apply(FI_CSWAP, FI_UINT64, &sh->cs,
					      &next, &cur, &old, 1))
				_exit(5);
			if (old == cur)
				break;
			cur = old;
		}
	}
	barrier(sh, ++ph);
	end = now_ms() + PHASE_MS;
	while (phase_more(sh, ph - 1, me, end, UINT64_MAX))
		if (util_atomic_apply(FI_SUM, FI_UINT128, &sh->u128, &add, NULL,
				      NULL, 1))
			_exit(6);
	barrier(sh, ++ph);
	end = now_ms() + PHASE_MS;
	while (phase_more(sh, ph - 1, me, end, UINT64_MAX))
		if (util_atomic_apply_shared(&sh->locks, FI_SUM,
					     FI_DOUBLE_COMPLEX, &sh->dc, &dinc,
					     NULL, NULL, 1))
			_exit(7);
	barrier(sh, ++ph);
	end = now_ms() + PHASE_MS;
	while (phase_more(sh, ph - 1, me, end, UINT64_MAX))
		if (util_atomic_apply_shared(&sh->locks, FI_SUM,
					     FI_LONG_DOUBLE_COMPLEX, &sh->ldc,
					     &linc, NULL, NULL, 1))
			_exit(8);
	_exit(0);
}

/* Iterations all children ran in one phase. */
static uint64_t phase_total(const struct shared_area *sh, int phase)
{
	uint64_t n = 0;
	int i;

	for (i = 0; i < NPROC; i++)
		n += sh->done[phase][i];
	return n;
}

Test(atomic_stress, processes_lose_no_update, .timeout = 120)
{
	struct shared_area *sh;
	pid_t pids[NPROC];
	int i, status;
	uint64_t n;
	const u128_t start128 = ((u128_t)1 << 64) - 1000;

	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE,
		  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	cr_assert_neq(sh, MAP_FAILED);
	/* the carry into the high half happens during the run */
	sh->u128 = start128;
	cr_assert_not(util_atomic_lock_free(FI_DOUBLE_COMPLEX, &sh->dc));
	cr_assert_not(util_atomic_lock_free(FI_LONG_DOUBLE_COMPLEX, &sh->ldc));

	for (i = 0; i < NPROC; i++) {
		pids[i] = fork();
		cr_assert_geq(pids[i], 0);
		if (pids[i] == 0)
			child_work(sh, i);
	}
	__atomic_store_n(&sh->go, 1, __ATOMIC_RELEASE);
	for (i = 0; i < NPROC; i++) {
		cr_assert_eq(waitpid(pids[i], &status, 0), pids[i]);
		cr_expect(WIFEXITED(status) && WEXITSTATUS(status) == 0,
			  "child %d status %#x", i, status);
	}

	n = phase_total(sh, 0);
	cr_expect_eq(sh->u64, n, "uint64 fetch-add: %llu, want %llu",
		     (unsigned long long)sh->u64, (unsigned long long)n);
	for (i = 0; i < (int)n; i++)
		if (sh->seen[i] != 1)
			break;
	cr_expect_eq(i, n, "fetched value %d seen %d times", i,
		     i < (int)n ? sh->seen[i] : 0);
	n = phase_total(sh, 1);
	cr_expect_eq(sh->i32, -(int64_t)n, "int32 add: %d, want -%llu", sh->i32,
		     (unsigned long long)n);
	n = phase_total(sh, 2);
	cr_expect_eq(sh->cs, n, "CSWAP loop: %llu, want %llu",
		     (unsigned long long)sh->cs, (unsigned long long)n);
	n = phase_total(sh, 3);
	cr_expect(sh->u128 == start128 + n, "uint128 lost updates");
	cr_expect_gt(n, 1000, "uint128 phase too short to carry");
	n = phase_total(sh, 4);
	cr_expect(creal(sh->dc) == n && cimag(sh->dc) == 2.0 * n,
		  "double complex: %g%+gi, want %llu", creal(sh->dc),
		  cimag(sh->dc), (unsigned long long)n);
	n = phase_total(sh, 5);
	cr_expect(creall(sh->ldc) == 2.0L * n && cimagl(sh->ldc) == -1.0L * n,
		  "long double complex: %Lg%+Lgi, want %llu", creall(sh->ldc),
		  cimagl(sh->ldc), (unsigned long long)n);
	munmap(sh, sizeof(*sh));
}

/*
 * The same memory mapped at a different address in each process: the
 * stripe lock must still be the same one.
 */
struct alias_area {
	uint32_t go;
	uint32_t arrived;
	struct util_atomic_locks locks;
	long double complex ldc;
	_Alignas(16) unsigned char dc_pad[8];
	double complex dc;
	uint64_t done[NPROC];
};

static void alias_child(int fd, const struct alias_area *inherited, int me)
{
	struct alias_area *al;
	long double complex linc = 1.0L + 1.0L * I;
	double complex dinc = -1.0;
	uint64_t end, n = 0;
	size_t page = sysconf(_SC_PAGESIZE);
	char *reserve;

	/* child i maps the memory i + 1 pages into a fresh reservation, so
	 * that no two processes see it at the same page number */
	reserve = mmap(NULL, (NPROC + 1) * page, PROT_NONE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (reserve == MAP_FAILED)
		_exit(9);
	al = mmap(reserve + (me + 1) * page, sizeof(*al),
		  PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd, 0);
	if (al == MAP_FAILED || al == inherited)
		_exit(9);
	while (!__atomic_load_n(&al->go, __ATOMIC_ACQUIRE))
		;
	__atomic_add_fetch(&al->arrived, 1, __ATOMIC_ACQ_REL);
	while (__atomic_load_n(&al->arrived, __ATOMIC_ACQUIRE) < NPROC)
		sched_yield();
	end = now_ms() + PHASE_MS;
	while ((n & 255) || now_ms() < end) {
		if (util_atomic_apply_shared(&al->locks, FI_SUM,
					     FI_LONG_DOUBLE_COMPLEX, &al->ldc,
					     &linc, NULL, NULL, 1) ||
		    util_atomic_apply_shared(&al->locks, FI_SUM,
					     FI_DOUBLE_COMPLEX, &al->dc, &dinc,
					     NULL, NULL, 1))
			_exit(10);
		n++;
	}
	al->done[me] = n;
	_exit(0);
}

Test(atomic_stress, locks_shared_across_aliases, .timeout = 60)
{
	struct alias_area *al;
	pid_t pids[NPROC];
	uint64_t n = 0;
	int fd, i, status;

	fd = memfd_create("weft-atomic-test", 0);
	cr_assert_geq(fd, 0);
	cr_assert_eq(ftruncate(fd, sizeof(*al)), 0);
	al = mmap(NULL, sizeof(*al), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	cr_assert_neq(al, MAP_FAILED);
	cr_assert_not(util_atomic_lock_free(FI_DOUBLE_COMPLEX, &al->dc));

	for (i = 0; i < NPROC; i++) {
		pids[i] = fork();
		cr_assert_geq(pids[i], 0);
		if (pids[i] == 0)
			alias_child(fd, al, i);
	}
	__atomic_store_n(&al->go, 1, __ATOMIC_RELEASE);
	for (i = 0; i < NPROC; i++) {
		cr_assert_eq(waitpid(pids[i], &status, 0), pids[i]);
		cr_expect(WIFEXITED(status) && WEXITSTATUS(status) == 0,
			  "child %d status %#x", i, status);
		n += al->done[i];
	}
	cr_expect(creall(al->ldc) == n && cimagl(al->ldc) == n,
		  "long double complex: %Lg%+Lgi, want %llu", creall(al->ldc),
		  cimagl(al->ldc), (unsigned long long)n);
	cr_expect(creal(al->dc) == -(double)n && cimag(al->dc) == 0,
		  "double complex: %g%+gi, want -%llu", creal(al->dc),
		  cimag(al->dc), (unsigned long long)n);
	munmap(al, sizeof(*al));
	close(fd);
}
