/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Atomic operations engine: the contract is in weft/util_atomic.h.
 *
 * One element goes through one of three paths, chosen by its size and
 * address (util_atomic_width):
 *  - a native read-modify-write instruction (integer SUM and bitwise ops,
 *    READ and WRITE of up to 8 bytes),
 *  - a compare-and-swap loop around util_atomic_compute, which works on
 *    copies of the element in the C type of the datatype,
 *  - util_atomic_compute under a stripe lock, for elements no
 *    compare-and-swap covers.
 */
#include "weft/util_atomic.h"
#include "weft/lock.h"

#include <complex.h>
#include <sched.h>
#include <string.h>

#if defined(__x86_64__)
#include <cpuid.h>
#include <emmintrin.h>
#endif

#ifdef __SIZEOF_INT128__
#define UTIL_ATOMIC_HAVE_INT128 1
typedef __int128 util_wide_t;
typedef unsigned __int128 util_uwide_t;
#else
#define UTIL_ATOMIC_HAVE_INT128 0
typedef int64_t util_wide_t;
typedef uint64_t util_uwide_t;
#endif

#define UTIL_ATOMIC_ORDER __ATOMIC_SEQ_CST

/*
 * One element, in every representation the engine uses.  Locals of this
 * type are aligned for every element type, so the typed members and the
 * typed atomic builtins can be used on them directly.
 */
union util_atomic_val {
	uint8_t u8;
	uint16_t u16;
	uint32_t u32;
	uint64_t u64;
#if UTIL_ATOMIC_HAVE_INT128
	util_uwide_t u128;
#endif
	float f;
	double d;
	long double ld;
	float complex fc;
	double complex dc;
	long double complex ldc;
	unsigned char bytes[UTIL_ATOMIC_MAX_SIZE];
};

_Static_assert(sizeof(long double complex) <= UTIL_ATOMIC_MAX_SIZE,
	       "UTIL_ATOMIC_MAX_SIZE must hold the largest element");
_Static_assert(sizeof(struct util_atomic_locks) == 4 * UTIL_ATOMIC_LOCK_CNT,
	       "the lock table is plain 32-bit words");
/* Stripes are picked by address bits 4..11: within a 4 KiB page. */
_Static_assert(UTIL_ATOMIC_LOCK_CNT * 16 <= 4096,
	       "the stripe index must come from the page offset");

enum util_atomic_kind {
	UTIL_ATOMIC_KIND_NONE,
	UTIL_ATOMIC_KIND_INT,
	UTIL_ATOMIC_KIND_REAL,
	UTIL_ATOMIC_KIND_COMPLEX,
};

#define OPB(op) (1u << (op))

/* The ops of each class, as fi_atomic(3) lists them. */
#define UTIL_ATOMIC_BASE_OPS                                                   \
	(OPB(FI_MIN) | OPB(FI_MAX) | OPB(FI_SUM) | OPB(FI_PROD) |              \
	 OPB(FI_LOR) | OPB(FI_LAND) | OPB(FI_BOR) | OPB(FI_BAND) |             \
	 OPB(FI_LXOR) | OPB(FI_BXOR) | OPB(FI_ATOMIC_WRITE))
#define UTIL_ATOMIC_FETCH_OPS (UTIL_ATOMIC_BASE_OPS | OPB(FI_ATOMIC_READ))
#define UTIL_ATOMIC_COMPARE_OPS                                                \
	(OPB(FI_CSWAP) | OPB(FI_CSWAP_NE) | OPB(FI_CSWAP_LE) |                 \
	 OPB(FI_CSWAP_LT) | OPB(FI_CSWAP_GE) | OPB(FI_CSWAP_GT) |              \
	 OPB(FI_MSWAP))

/* Ops whose pseudo-code needs an ordering (<) or bit operations (|). */
#define UTIL_ATOMIC_ORDERED_OPS                                                \
	(OPB(FI_MIN) | OPB(FI_MAX) | OPB(FI_CSWAP_LE) | OPB(FI_CSWAP_LT) |     \
	 OPB(FI_CSWAP_GE) | OPB(FI_CSWAP_GT))
#define UTIL_ATOMIC_BIT_OPS                                                    \
	(OPB(FI_BOR) | OPB(FI_BAND) | OPB(FI_BXOR) | OPB(FI_MSWAP))

static const uint32_t util_atomic_class_ops[] = {
    [UTIL_ATOMIC_BASE] = UTIL_ATOMIC_BASE_OPS,
    [UTIL_ATOMIC_FETCH] = UTIL_ATOMIC_FETCH_OPS,
    [UTIL_ATOMIC_COMPARE] = UTIL_ATOMIC_COMPARE_OPS,
};

static const uint32_t util_atomic_kind_ops[] = {
    [UTIL_ATOMIC_KIND_NONE] = 0,
    [UTIL_ATOMIC_KIND_INT] = UTIL_ATOMIC_FETCH_OPS | UTIL_ATOMIC_COMPARE_OPS,
    [UTIL_ATOMIC_KIND_REAL] =
	(UTIL_ATOMIC_FETCH_OPS | UTIL_ATOMIC_COMPARE_OPS) &
	~UTIL_ATOMIC_BIT_OPS,
    [UTIL_ATOMIC_KIND_COMPLEX] =
	(UTIL_ATOMIC_FETCH_OPS | UTIL_ATOMIC_COMPARE_OPS) &
	~(UTIL_ATOMIC_BIT_OPS | UTIL_ATOMIC_ORDERED_OPS),
};

/* Kind of a datatype; NONE for values the engine does not handle. */
static enum util_atomic_kind util_atomic_kind(enum fi_datatype dt)
{
	switch (dt) {
	case FI_INT8:
	case FI_UINT8:
	case FI_INT16:
	case FI_UINT16:
	case FI_INT32:
	case FI_UINT32:
	case FI_INT64:
	case FI_UINT64:
		return UTIL_ATOMIC_KIND_INT;
	case FI_INT128:
	case FI_UINT128:
		return UTIL_ATOMIC_HAVE_INT128 ? UTIL_ATOMIC_KIND_INT
					       : UTIL_ATOMIC_KIND_NONE;
	case FI_FLOAT:
	case FI_DOUBLE:
	case FI_LONG_DOUBLE:
		return UTIL_ATOMIC_KIND_REAL;
	case FI_FLOAT_COMPLEX:
	case FI_DOUBLE_COMPLEX:
	case FI_LONG_DOUBLE_COMPLEX:
		return UTIL_ATOMIC_KIND_COMPLEX;
	default:
		return UTIL_ATOMIC_KIND_NONE;
	}
}

/* The class an op belongs to when applied: it fixes which operands it has. */
static enum util_atomic_class util_atomic_op_class(enum fi_op op)
{
	if (OPB(op) & UTIL_ATOMIC_COMPARE_OPS)
		return UTIL_ATOMIC_COMPARE;
	if (op == FI_ATOMIC_READ)
		return UTIL_ATOMIC_FETCH;
	return UTIL_ATOMIC_BASE;
}

bool util_atomic_valid(enum fi_op op, enum fi_datatype dt,
		       enum util_atomic_class cls)
{
	if ((unsigned int)op >= WEFT_ATOMIC_OP_COUNT ||
	    (unsigned int)cls > UTIL_ATOMIC_COMPARE)
		return false;
	return util_atomic_class_ops[cls] &
	       util_atomic_kind_ops[util_atomic_kind(dt)] & OPB(op);
}

size_t util_atomic_dt_size(enum fi_datatype dt)
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
		return 4;
	case FI_INT64:
	case FI_UINT64:
		return 8;
	case FI_INT128:
	case FI_UINT128:
		return UTIL_ATOMIC_HAVE_INT128 ? 16 : 0;
	case FI_FLOAT:
		return sizeof(float);
	case FI_DOUBLE:
		return sizeof(double);
	case FI_FLOAT_COMPLEX:
		return sizeof(float complex);
	case FI_DOUBLE_COMPLEX:
		return sizeof(double complex);
	case FI_LONG_DOUBLE:
		return sizeof(long double);
	case FI_LONG_DOUBLE_COMPLEX:
		return sizeof(long double complex);
	default:
		return 0;
	}
}

/* ---- CPU support ------------------------------------------------------- */

#define UTIL_ATOMIC_CPU_PROBED (1u << 0)
#define UTIL_ATOMIC_CPU_CAS16 (1u << 1)	 /* 16-byte compare-and-swap */
#define UTIL_ATOMIC_CPU_LOAD16 (1u << 2) /* aligned 16-byte loads atomic */

static unsigned int util_atomic_cpu;

/*
 * The CPU's 16-byte atomic support, probed on first use.  Concurrent first
 * calls probe twice and store the same value, which is harmless.
 */
static unsigned int util_atomic_cpu_features(void)
{
	unsigned int f = __atomic_load_n(&util_atomic_cpu, __ATOMIC_RELAXED);

	if (weft_likely(f))
		return f;
	f = UTIL_ATOMIC_CPU_PROBED;
#if defined(__x86_64__)
	{
		unsigned int a, b, c, d;

		if (__get_cpuid(1, &a, &b, &c, &d) && (c & bit_CMPXCHG16B)) {
			f |= UTIL_ATOMIC_CPU_CAS16;
			/* Intel SDM 9.1.1 and AMD APM 7.3.2: with AVX,
			 * aligned 16-byte MOVDQA is a single access. */
			if (c & bit_AVX)
				f |= UTIL_ATOMIC_CPU_LOAD16;
		}
	}
#endif
	__atomic_store_n(&util_atomic_cpu, f, __ATOMIC_RELAXED);
	return f;
}

/*
 * Width of the atomic access that covers an element of `size` bytes at
 * `addr`, or 0 when the element must be locked.  Depends only on size,
 * addr modulo 16 and the CPU, so every process agrees.
 */
static size_t util_atomic_width(size_t size, const void *addr)
{
	uintptr_t a = (uintptr_t)addr;

	switch (size) {
	case 1:
		return __atomic_always_lock_free(1, 0) ? 1 : 0;
	case 2:
		return __atomic_always_lock_free(2, 0) && !(a % 2) ? 2 : 0;
	case 4:
		return __atomic_always_lock_free(4, 0) && !(a % 4) ? 4 : 0;
	case 8:
		return __atomic_always_lock_free(8, 0) && !(a % 8) ? 8 : 0;
	case 16:
		return !(a % 16) && (util_atomic_cpu_features() &
				     UTIL_ATOMIC_CPU_CAS16)
			   ? 16
			   : 0;
	default:
		return 0;
	}
}

bool util_atomic_lock_free(enum fi_datatype dt, const void *addr)
{
	size_t size = util_atomic_dt_size(dt);

	return size && util_atomic_width(size, addr);
}

/* ---- atomic accesses by width ----------------------------------------- */

#if defined(__x86_64__)
/*
 * 16-byte compare-and-swap (lock cmpxchg16b; p 16-byte aligned).  On
 * failure *expected receives the current value.  Inline assembly rather
 * than __atomic on 16 bytes: those may call into libatomic, whose fallback
 * locks are private to a process.
 */
static bool util_atomic_cas16(void *p, union util_atomic_val *expected,
			      const union util_atomic_val *desired)
{
	uint64_t lo = expected->u64, hi;
	uint64_t dlo, dhi;
	bool ok;

	memcpy(&hi, expected->bytes + 8, 8);
	memcpy(&dlo, desired->bytes, 8);
	memcpy(&dhi, desired->bytes + 8, 8);
	__asm__ __volatile__("lock cmpxchg16b %1"
			     : "=@ccz"(ok), "+m"(*(volatile __m128i *)p),
			       "+a"(lo), "+d"(hi)
			     : "b"(dlo), "c"(dhi)
			     : "memory");
	memcpy(expected->bytes, &lo, 8);
	memcpy(expected->bytes + 8, &hi, 8);
	return ok;
}

/* Atomic 16-byte load of an aligned p. */
static void util_atomic_load16(void *p, union util_atomic_val *out)
{
	__m128i v;

	if (util_atomic_cpu_features() & UTIL_ATOMIC_CPU_LOAD16) {
		__asm__ __volatile__("movdqa %1, %0"
				     : "=x"(v)
				     : "m"(*(volatile __m128i *)p)
				     : "memory");
		memcpy(out->bytes, &v, 16);
		return;
	}
	/* A compare-and-swap of 0 by 0 returns the value either way. */
	memset(out, 0, sizeof(*out));
	util_atomic_cas16(p, out, out);
}
#else
/* util_atomic_width never returns 16 without a 16-byte CAS. */
static bool util_atomic_cas16(void *p, union util_atomic_val *expected,
			      const union util_atomic_val *desired)
{
	return false;
}

static void util_atomic_load16(void *p, union util_atomic_val *out)
{
}
#endif

/* Atomic load of the w-byte element at p (w from util_atomic_width). */
static void util_atomic_load(void *p, size_t w, union util_atomic_val *out)
{
	switch (w) {
	case 1:
		out->u8 = __atomic_load_n((uint8_t *)p, UTIL_ATOMIC_ORDER);
		break;
	case 2:
		out->u16 = __atomic_load_n((uint16_t *)p, UTIL_ATOMIC_ORDER);
		break;
	case 4:
		out->u32 = __atomic_load_n((uint32_t *)p, UTIL_ATOMIC_ORDER);
		break;
	case 8:
		out->u64 = __atomic_load_n((uint64_t *)p, UTIL_ATOMIC_ORDER);
		break;
	default:
		util_atomic_load16(p, out);
		break;
	}
}

/*
 * Replace the w-byte element at p by *desired if it still equals
 * *expected, bit for bit.  Returns true if it did; otherwise *expected
 * receives the current value.
 */
static bool util_atomic_cas(void *p, size_t w, union util_atomic_val *expected,
			    const union util_atomic_val *desired)
{
	switch (w) {
	case 1:
		return __atomic_compare_exchange_n(
		    (uint8_t *)p, &expected->u8, desired->u8, false,
		    UTIL_ATOMIC_ORDER, UTIL_ATOMIC_ORDER);
	case 2:
		return __atomic_compare_exchange_n(
		    (uint16_t *)p, &expected->u16, desired->u16, false,
		    UTIL_ATOMIC_ORDER, UTIL_ATOMIC_ORDER);
	case 4:
		return __atomic_compare_exchange_n(
		    (uint32_t *)p, &expected->u32, desired->u32, false,
		    UTIL_ATOMIC_ORDER, UTIL_ATOMIC_ORDER);
	case 8:
		return __atomic_compare_exchange_n(
		    (uint64_t *)p, &expected->u64, desired->u64, false,
		    UTIL_ATOMIC_ORDER, UTIL_ATOMIC_ORDER);
	default:
		return util_atomic_cas16(p, expected, desired);
	}
}

/*
 * Single-instruction read-modify-write of an unsigned type: SUM, BOR,
 * BAND, BXOR, ATOMIC_WRITE (exchange), and ATOMIC_READ for any other op.
 * Returns the old value.
 */
#define UTIL_ATOMIC_RMW_FN(type)                                               \
	static type util_atomic_rmw_##type(enum fi_op op, type *p, type v)     \
	{                                                                      \
		switch (op) {                                                  \
		case FI_SUM:                                                   \
			return __atomic_fetch_add(p, v, UTIL_ATOMIC_ORDER);    \
		case FI_BOR:                                                   \
			return __atomic_fetch_or(p, v, UTIL_ATOMIC_ORDER);     \
		case FI_BAND:                                                  \
			return __atomic_fetch_and(p, v, UTIL_ATOMIC_ORDER);    \
		case FI_BXOR:                                                  \
			return __atomic_fetch_xor(p, v, UTIL_ATOMIC_ORDER);    \
		case FI_ATOMIC_WRITE:                                          \
			return __atomic_exchange_n(p, v, UTIL_ATOMIC_ORDER);   \
		default:                                                       \
			return __atomic_load_n(p, UTIL_ATOMIC_ORDER);          \
		}                                                              \
	}

UTIL_ATOMIC_RMW_FN(uint8_t)
UTIL_ATOMIC_RMW_FN(uint16_t)
UTIL_ATOMIC_RMW_FN(uint32_t)
UTIL_ATOMIC_RMW_FN(uint64_t)

/*
 * Apply op to the w-byte element at p with one instruction if there is
 * one for it; *old receives the previous value.  Returns false, touching
 * nothing, when op needs a compare-and-swap loop.  Integer SUM on the
 * unsigned type of the same width is two's complement wrapping, right for
 * the signed types as well.
 */
static bool util_atomic_native(enum fi_op op, enum util_atomic_kind kind,
			       size_t w, void *p,
			       const union util_atomic_val *src,
			       union util_atomic_val *old)
{
	switch (op) {
	case FI_ATOMIC_READ:
		util_atomic_load(p, w, old);
		return true;
	case FI_ATOMIC_WRITE:
		break;
	case FI_SUM:
	case FI_BOR:
	case FI_BAND:
	case FI_BXOR:
		if (kind != UTIL_ATOMIC_KIND_INT)
			return false;
		break;
	default:
		return false;
	}

	switch (w) {
	case 1:
		old->u8 = util_atomic_rmw_uint8_t(op, p, src->u8);
		return true;
	case 2:
		old->u16 = util_atomic_rmw_uint16_t(op, p, src->u16);
		return true;
	case 4:
		old->u32 = util_atomic_rmw_uint32_t(op, p, src->u32);
		return true;
	case 8:
		old->u64 = util_atomic_rmw_uint64_t(op, p, src->u64);
		return true;
	default:
		return false;
	}
}

/* ---- computing one element -------------------------------------------- */

/*
 * The compute functions take copies of the target's old value, the
 * operand and the compare operand (zero when the op has none), and write
 * the new value into *out, which holds a copy of old on entry.  They
 * return false when the target keeps its value (failed compare, MIN/MAX
 * not taken, ATOMIC_READ).  Only valid (op, type) pairs reach them.
 */

/* An integer element, sign- or zero-extended to the widest type. */
static util_wide_t util_atomic_int_get(enum fi_datatype dt,
				       const union util_atomic_val *v)
{
	switch (dt) {
	case FI_INT8:
		return (int8_t)v->u8;
	case FI_UINT8:
		return v->u8;
	case FI_INT16:
		return (int16_t)v->u16;
	case FI_UINT16:
		return v->u16;
	case FI_INT32:
		return (int32_t)v->u32;
	case FI_UINT32:
		return v->u32;
	case FI_INT64:
		return (int64_t)v->u64;
	case FI_UINT64:
		return v->u64;
#if UTIL_ATOMIC_HAVE_INT128
	case FI_INT128:
	case FI_UINT128:
		return (util_wide_t)v->u128;
#endif
	default:
		return 0;
	}
}

/* Store the low bits of r as an element of `size` bytes. */
static void util_atomic_int_put(size_t size, union util_atomic_val *out,
				util_uwide_t r)
{
	switch (size) {
	case 1:
		out->u8 = (uint8_t)r;
		break;
	case 2:
		out->u16 = (uint16_t)r;
		break;
	case 4:
		out->u32 = (uint32_t)r;
		break;
	case 8:
		out->u64 = (uint64_t)r;
		break;
#if UTIL_ATOMIC_HAVE_INT128
	default:
		out->u128 = r;
		break;
#endif
	}
}

/* -1, 0 or 1 as a is below, equal to or above b, in dt's ordering. */
static int util_atomic_int_cmp(enum fi_datatype dt, util_wide_t a,
			       util_wide_t b)
{
	if (dt == FI_UINT128) {
		util_uwide_t ua = (util_uwide_t)a, ub = (util_uwide_t)b;

		return (ua > ub) - (ua < ub);
	}
	/* Narrower unsigned types are zero-extended: signed order is right. */
	return (a > b) - (a < b);
}

static bool util_atomic_int(enum fi_op op, enum fi_datatype dt,
			    const union util_atomic_val *old,
			    const union util_atomic_val *src,
			    const union util_atomic_val *cmp,
			    union util_atomic_val *out)
{
	util_wide_t o = util_atomic_int_get(dt, old);
	util_wide_t s = util_atomic_int_get(dt, src);
	util_wide_t c = util_atomic_int_get(dt, cmp);
	util_uwide_t uo = (util_uwide_t)o, us = (util_uwide_t)s;
	util_uwide_t uc = (util_uwide_t)c, r;

	switch (op) {
	case FI_MIN:
		if (util_atomic_int_cmp(dt, s, o) >= 0)
			return false;
		r = us;
		break;
	case FI_MAX:
		if (util_atomic_int_cmp(dt, s, o) <= 0)
			return false;
		r = us;
		break;
	case FI_SUM:
		r = uo + us;
		break;
	case FI_PROD:
		r = uo * us;
		break;
	case FI_LOR:
		r = o || s;
		break;
	case FI_LAND:
		r = o && s;
		break;
	case FI_LXOR:
		r = !o != !s;
		break;
	case FI_BOR:
		r = uo | us;
		break;
	case FI_BAND:
		r = uo & us;
		break;
	case FI_BXOR:
		r = uo ^ us;
		break;
	case FI_ATOMIC_WRITE:
		r = us;
		break;
	case FI_CSWAP:
		if (util_atomic_int_cmp(dt, c, o) != 0)
			return false;
		r = us;
		break;
	case FI_CSWAP_NE:
		if (util_atomic_int_cmp(dt, c, o) == 0)
			return false;
		r = us;
		break;
	case FI_CSWAP_LE:
		if (util_atomic_int_cmp(dt, c, o) > 0)
			return false;
		r = us;
		break;
	case FI_CSWAP_LT:
		if (util_atomic_int_cmp(dt, c, o) >= 0)
			return false;
		r = us;
		break;
	case FI_CSWAP_GE:
		if (util_atomic_int_cmp(dt, c, o) < 0)
			return false;
		r = us;
		break;
	case FI_CSWAP_GT:
		if (util_atomic_int_cmp(dt, c, o) <= 0)
			return false;
		r = us;
		break;
	case FI_MSWAP:
		r = (us & uc) | (uo & ~uc);
		break;
	default:
		return false;
	}
	util_atomic_int_put(util_atomic_dt_size(dt), out, r);
	return true;
}

/*
 * Real floating types: the man page's pseudo-code, in the C type, so
 * comparisons with a NaN are false.
 */
#define UTIL_ATOMIC_REAL_FN(name, type, m)                                     \
	static bool util_atomic_##name(                                        \
	    enum fi_op op, const union util_atomic_val *old,                   \
	    const union util_atomic_val *src,                                  \
	    const union util_atomic_val *cmp, union util_atomic_val *out)      \
	{                                                                      \
		type o = old->m, s = src->m, c = cmp->m;                       \
                                                                               \
		switch (op) {                                                  \
		case FI_MIN:                                                   \
			if (!(s < o))                                          \
				return false;                                  \
			out->m = s;                                            \
			return true;                                           \
		case FI_MAX:                                                   \
			if (!(s > o))                                          \
				return false;                                  \
			out->m = s;                                            \
			return true;                                           \
		case FI_SUM:                                                   \
			out->m = o + s;                                        \
			return true;                                           \
		case FI_PROD:                                                  \
			out->m = o * s;                                        \
			return true;                                           \
		case FI_LOR:                                                   \
			out->m = o || s;                                       \
			return true;                                           \
		case FI_LAND:                                                  \
			out->m = o && s;                                       \
			return true;                                           \
		case FI_LXOR:                                                  \
			out->m = !o != !s;                                     \
			return true;                                           \
		case FI_ATOMIC_WRITE:                                          \
			out->m = s;                                            \
			return true;                                           \
		case FI_CSWAP:                                                 \
			if (!(c == o))                                         \
				return false;                                  \
			out->m = s;                                            \
			return true;                                           \
		case FI_CSWAP_NE:                                              \
			if (!(c != o))                                         \
				return false;                                  \
			out->m = s;                                            \
			return true;                                           \
		case FI_CSWAP_LE:                                              \
			if (!(c <= o))                                         \
				return false;                                  \
			out->m = s;                                            \
			return true;                                           \
		case FI_CSWAP_LT:                                              \
			if (!(c < o))                                          \
				return false;                                  \
			out->m = s;                                            \
			return true;                                           \
		case FI_CSWAP_GE:                                              \
			if (!(c >= o))                                         \
				return false;                                  \
			out->m = s;                                            \
			return true;                                           \
		case FI_CSWAP_GT:                                              \
			if (!(c > o))                                          \
				return false;                                  \
			out->m = s;                                            \
			return true;                                           \
		default:                                                       \
			return false;                                          \
		}                                                              \
	}

UTIL_ATOMIC_REAL_FN(float, float, f)
UTIL_ATOMIC_REAL_FN(double, double, d)
UTIL_ATOMIC_REAL_FN(ldouble, long double, ld)

/* Complex types: no ordering; a value is true when either part is nonzero. */
#define UTIL_ATOMIC_COMPLEX_FN(name, type, m)                                  \
	static bool util_atomic_##name(                                        \
	    enum fi_op op, const union util_atomic_val *old,                   \
	    const union util_atomic_val *src,                                  \
	    const union util_atomic_val *cmp, union util_atomic_val *out)      \
	{                                                                      \
		type o = old->m, s = src->m, c = cmp->m;                       \
                                                                               \
		switch (op) {                                                  \
		case FI_SUM:                                                   \
			out->m = o + s;                                        \
			return true;                                           \
		case FI_PROD:                                                  \
			out->m = o * s;                                        \
			return true;                                           \
		case FI_LOR:                                                   \
			out->m = o || s;                                       \
			return true;                                           \
		case FI_LAND:                                                  \
			out->m = o && s;                                       \
			return true;                                           \
		case FI_LXOR:                                                  \
			out->m = !o != !s;                                     \
			return true;                                           \
		case FI_ATOMIC_WRITE:                                          \
			out->m = s;                                            \
			return true;                                           \
		case FI_CSWAP:                                                 \
			if (!(c == o))                                         \
				return false;                                  \
			out->m = s;                                            \
			return true;                                           \
		case FI_CSWAP_NE:                                              \
			if (!(c != o))                                         \
				return false;                                  \
			out->m = s;                                            \
			return true;                                           \
		default:                                                       \
			return false;                                          \
		}                                                              \
	}

UTIL_ATOMIC_COMPLEX_FN(cfloat, float complex, fc)
UTIL_ATOMIC_COMPLEX_FN(cdouble, double complex, dc)
UTIL_ATOMIC_COMPLEX_FN(cldouble, long double complex, ldc)

static bool util_atomic_compute(enum fi_op op, enum fi_datatype dt,
				const union util_atomic_val *old,
				const union util_atomic_val *src,
				const union util_atomic_val *cmp,
				union util_atomic_val *out)
{
	switch (dt) {
	case FI_FLOAT:
		return util_atomic_float(op, old, src, cmp, out);
	case FI_DOUBLE:
		return util_atomic_double(op, old, src, cmp, out);
	case FI_LONG_DOUBLE:
		return util_atomic_ldouble(op, old, src, cmp, out);
	case FI_FLOAT_COMPLEX:
		return util_atomic_cfloat(op, old, src, cmp, out);
	case FI_DOUBLE_COMPLEX:
		return util_atomic_cdouble(op, old, src, cmp, out);
	case FI_LONG_DOUBLE_COMPLEX:
		return util_atomic_cldouble(op, old, src, cmp, out);
	default:
		return util_atomic_int(op, dt, old, src, cmp, out);
	}
}

/* ---- locked elements --------------------------------------------------- */

static struct util_atomic_locks util_atomic_private_locks;

/*
 * The stripe of the element at addr: bits 4..11, the same in every
 * process that maps the page.
 */
static uint32_t *util_atomic_stripe(struct util_atomic_locks *locks,
				    const void *addr)
{
	return &locks->lock[((uintptr_t)addr >> 4) % UTIL_ATOMIC_LOCK_CNT];
}

/*
 * Take a stripe lock.  Critical sections are a few dozen instructions, so
 * spin, and yield the CPU once the holder has probably been preempted.
 */
static void util_atomic_lock(uint32_t *lock)
{
	unsigned int spins = 0;

	while (__atomic_exchange_n(lock, 1, __ATOMIC_ACQUIRE)) {
		while (__atomic_load_n(lock, __ATOMIC_RELAXED)) {
			if (++spins < 1024) {
				weft_cpu_relax();
			} else {
				sched_yield();
				spins = 0;
			}
		}
	}
}

static void util_atomic_unlock(uint32_t *lock)
{
	__atomic_store_n(lock, 0, __ATOMIC_RELEASE);
}

/* ---- applying --------------------------------------------------------- */

/*
 * Apply op to the element at dst; the operands are aligned copies (zero
 * when the op has none).  *old receives the value before the update.
 */
static void util_atomic_one(struct util_atomic_locks *locks, enum fi_op op,
			    enum fi_datatype dt, enum util_atomic_kind kind,
			    size_t size, void *dst,
			    const union util_atomic_val *src,
			    const union util_atomic_val *cmp,
			    union util_atomic_val *old)
{
	size_t w = util_atomic_width(size, dst);
	union util_atomic_val nv;
	uint32_t *lock;

	if (!w) {
		lock = util_atomic_stripe(locks, dst);
		util_atomic_lock(lock);
		memcpy(old->bytes, dst, size);
		nv = *old;
		if (util_atomic_compute(op, dt, old, src, cmp, &nv))
			memcpy(dst, nv.bytes, size);
		util_atomic_unlock(lock);
		return;
	}

	if (util_atomic_native(op, kind, w, dst, src, old))
		return;

	util_atomic_load(dst, w, old);
	do {
		nv = *old;
		if (!util_atomic_compute(op, dt, old, src, cmp, &nv))
			return;
	} while (!util_atomic_cas(dst, w, old, &nv));
}

int util_atomic_apply_shared(struct util_atomic_locks *locks, enum fi_op op,
			     enum fi_datatype dt, void *dst, const void *src,
			     const void *cmp, void *result, size_t count)
{
	enum util_atomic_kind kind = util_atomic_kind(dt);
	size_t size = util_atomic_dt_size(dt);
	union util_atomic_val s, c, old;
	enum util_atomic_class cls;
	size_t i, off;

	if (!locks || (unsigned int)op >= WEFT_ATOMIC_OP_COUNT ||
	    kind == UTIL_ATOMIC_KIND_NONE)
		return -FI_EINVAL;
	cls = util_atomic_op_class(op);
	if (!util_atomic_valid(op, dt, cls))
		return -FI_EOPNOTSUPP;
	if (!count)
		return 0;
	if (!dst || (op != FI_ATOMIC_READ && !src) ||
	    (cls == UTIL_ATOMIC_COMPARE && !cmp) ||
	    (op == FI_ATOMIC_READ && !result))
		return -FI_EINVAL;

	memset(&s, 0, sizeof(s));
	memset(&c, 0, sizeof(c));
	for (i = 0; i < count; i++) {
		off = i * size;
		if (op != FI_ATOMIC_READ)
			memcpy(s.bytes, (const char *)src + off, size);
		if (cls == UTIL_ATOMIC_COMPARE)
			memcpy(c.bytes, (const char *)cmp + off, size);
		util_atomic_one(locks, op, dt, kind, size, (char *)dst + off,
				&s, &c, &old);
		if (result)
			memcpy((char *)result + off, old.bytes, size);
	}
	return 0;
}

int util_atomic_apply(enum fi_op op, enum fi_datatype dt, void *dst,
		      const void *src, const void *cmp, void *result,
		      size_t count)
{
	return util_atomic_apply_shared(&util_atomic_private_locks, op, dt, dst,
					src, cmp, result, count);
}

int util_atomic_query(enum fi_datatype dt, enum fi_op op, size_t max_bytes,
		      uint64_t flags, struct fi_atomic_attr *attr)
{
	enum util_atomic_class cls = UTIL_ATOMIC_BASE;
	size_t size;

	if (!attr)
		return -FI_EINVAL;
	if (flags & ~(FI_FETCH_ATOMIC | FI_COMPARE_ATOMIC | FI_TAGGED))
		return -FI_EBADFLAGS;
	if ((flags & FI_FETCH_ATOMIC) && (flags & FI_COMPARE_ATOMIC))
		return -FI_EINVAL;
	if (flags & FI_TAGGED)
		return -FI_EOPNOTSUPP;
	if (flags & FI_FETCH_ATOMIC)
		cls = UTIL_ATOMIC_FETCH;
	else if (flags & FI_COMPARE_ATOMIC)
		cls = UTIL_ATOMIC_COMPARE;

	if (!util_atomic_valid(op, dt, cls))
		return -FI_EOPNOTSUPP;
	size = util_atomic_dt_size(dt);
	if (max_bytes < size)
		return -FI_EOPNOTSUPP;

	attr->size = size;
	attr->count = max_bytes / size;
	return 0;
}
