/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Atomic operations engine: the target side of fi_atomic(3).
 *
 * A provider that receives an atomic request (shm: a peer's message on the
 * inbound ring; tcp and verbs RDM: a protocol message) checks the key and
 * bounds of the target memory and, with util_atomic_valid, that the op is
 * allowed in the class the request came from (util_atomic_apply knows only
 * the op), then calls util_atomic_apply to update the memory.  The engine
 * knows nothing of transports, keys or completions.
 *
 * Which operation is valid for which datatype (fi_atomic(3) lists the ops
 * per class; the datatypes follow from the pseudo-code of each op, read as
 * C on that type):
 *
 *   op                     class               datatypes
 *   MIN MAX                base, fetch         integer, real floating
 *   SUM PROD               base, fetch         all
 *   LOR LAND LXOR          base, fetch         all (complex: nonzero if
 *                                              either part is nonzero)
 *   BOR BAND BXOR          base, fetch         integer
 *   ATOMIC_WRITE           base, fetch         all
 *   ATOMIC_READ            fetch               all
 *   CSWAP CSWAP_NE         compare             all
 *   CSWAP_LE LT GE GT      compare             integer, real floating
 *   MSWAP                  compare             integer
 *
 * "integer" is FI_INT8 .. FI_UINT64 and FI_INT128/FI_UINT128 (the latter
 * only where the compiler has __int128); "real floating" is FI_FLOAT,
 * FI_DOUBLE and FI_LONG_DOUBLE; the complex types are FI_FLOAT_COMPLEX,
 * FI_DOUBLE_COMPLEX and FI_LONG_DOUBLE_COMPLEX.
 *
 * Arithmetic is that of the C type: integer SUM and PROD wrap modulo 2^n
 * (signed types too, as two's complement); logical ops store 1 or 0 of the
 * type.  Floating-point comparisons are IEEE value comparisons, as in the
 * man page's pseudo-code: MIN and MAX leave the target unchanged when
 * either value is a NaN ("if (buf < addr)" is false); CSWAP treats -0.0 and
 * +0.0 as equal and never matches a NaN target; FI_LONG_DOUBLE is the
 * compiler's long double (x86-64: 80-bit extended in 16 bytes).
 *
 * Atomicity.  Each element is updated atomically; nothing spans elements
 * (fi_atomic(3): "atomicity is only guaranteed for each data type
 * operation").  How, for an element of s bytes at address a:
 *
 *  - lock-free: s is 1, 2, 4 or 8 and a is a multiple of s, or s is 16, a
 *    is a multiple of 16 and the CPU has a 16-byte compare-and-swap
 *    (x86-64 cmpxchg16b).  SUM, BOR, BAND, BXOR on integers up to 8 bytes
 *    and READ/WRITE up to 8 bytes are single atomic instructions; the rest
 *    are compare-and-swap loops.  These are atomic against any other
 *    update of the element through this engine from any thread of any
 *    process that maps it, and a plain aligned load of up to 8 bytes sees
 *    either the old or the new value.  A 16-byte
 *    ATOMIC_READ is one load on CPUs that guarantee aligned 16-byte loads
 *    are atomic (x86-64 with AVX), and a compare-and-swap otherwise, which
 *    needs the memory to be writable.
 *
 *  - locked: everything else, that is FI_LONG_DOUBLE_COMPLEX (32 bytes)
 *    always, and any element whose address is not a multiple of its size
 *    (FI_DOUBLE_COMPLEX needs only 8-byte alignment in C, so it is often
 *    here).  The element is read, computed and written under one spinlock
 *    of a struct util_atomic_locks, chosen by bits 4..11 of a.  Those bits
 *    are the offset within a page, so every process that maps the same
 *    memory picks the same lock whatever address it maps it at.
 *    util_atomic_apply uses a table private to the calling process: locked
 *    elements are then atomic among the threads of that process only.
 *    util_atomic_apply_shared takes a table that the caller places in
 *    memory shared by every process that may update the same target
 *    memory; then locked elements are atomic across those processes.  A
 *    process killed inside the few instructions of a locked update leaves
 *    that lock held and later updates of the same stripe wait for ever.
 *    Plain loads and stores by the application are not ordered with a
 *    locked update.
 *
 * Whether an element takes the lock-free path depends only on the datatype,
 * the element's address modulo 16 and the CPU, so every process on a node
 * agrees on it.  Updates are atomic with respect to updates of the same
 * element with the same datatype; one memory location updated as two
 * datatypes of which one is locked is not covered.
 *
 * In weft's providers the target endpoint applies the atomics addressed to
 * it, serialised by its own progress, so the cross-process case arises only
 * when two processes' targets expose the same shared memory.
 * fi_atomic(3) leaves results undefined when several actors update the
 * same memory at the same time; the engine goes further for lock-free
 * elements and for locked elements under a shared table.
 */
#ifndef WEFT_UTIL_ATOMIC_H
#define WEFT_UTIL_ATOMIC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "weft/ofi.h"

#include "weft/core.h"

/* The three families of fi_atomic(3), each with its own list of ops. */
enum util_atomic_class {
	UTIL_ATOMIC_BASE,    /* fi_atomic: update, nothing returned */
	UTIL_ATOMIC_FETCH,   /* fi_fetch_atomic: update, return old value */
	UTIL_ATOMIC_COMPARE, /* fi_compare_atomic: conditional swap */
};

/* The largest element (FI_LONG_DOUBLE_COMPLEX), in bytes. */
#define UTIL_ATOMIC_MAX_SIZE 32

/*
 * Lock stripes for the elements that cannot be updated lock-free.  Plain
 * 32-bit words, all zero when unlocked and no pointers, so the table may
 * live in a shared mapping (zero-filled, e.g. in a provider's shared
 * region, whose own layout carries the version).  Stripe i serves the
 * elements whose address has bits 4..11 equal to i.
 */
#define UTIL_ATOMIC_LOCK_CNT 256

struct util_atomic_locks {
	uint32_t lock[UTIL_ATOMIC_LOCK_CNT];
};

/*
 * Whether `op` on `dt` is one of the combinations that fi_atomic(3) allows
 * for class `cls` (see the table above).  Any value outside the enums,
 * including FI_VOID and FI_NOOP, gives false.  Pure; callable anywhere.
 */
bool util_atomic_valid(enum fi_op op, enum fi_datatype dt,
		       enum util_atomic_class cls);

/*
 * Size in bytes of one element of `dt` as this build lays it out, or 0 for
 * a datatype the engine does not handle.
 */
size_t util_atomic_dt_size(enum fi_datatype dt);

/*
 * Whether an element of `dt` at `addr` is updated lock-free (see above).
 * For tests and for providers that want to report it; false for an
 * invalid datatype.
 */
bool util_atomic_lock_free(enum fi_datatype dt, const void *addr);

/*
 * Apply `op` to the `count` elements of `dt` at `dst` (target memory),
 * element by element, each atomically as described above, with locked
 * elements serialised by the calling process's private lock table.
 *
 *  src     the operand, count elements; ignored for FI_ATOMIC_READ (may be
 *          NULL there), required otherwise.  For compare ops it is the
 *          value swapped in.
 *  cmp     the compare operand (compare ops: the value compared with the
 *          target, or MSWAP's mask); required for compare ops, ignored
 *          otherwise.
 *  result  if not NULL, receives the value each element held just before
 *          this update (fetch and compare classes); required for
 *          FI_ATOMIC_READ.
 *
 * src, cmp and result need no alignment; result must not overlap dst.  The
 * op's class is implied by the op (compare ops are the CSWAPs and MSWAP).
 * May be called from any thread; never blocks except to spin on a locked
 * stripe.  count 0 does nothing.
 *
 * Returns 0; -FI_EINVAL for an op or datatype outside the enums or a
 * required buffer that is NULL (nothing is touched); -FI_EOPNOTSUPP for a
 * combination that no class allows (e.g. FI_BOR on FI_FLOAT).
 */
int util_atomic_apply(enum fi_op op, enum fi_datatype dt, void *dst,
		      const void *src, const void *cmp, void *result,
		      size_t count);

/*
 * util_atomic_apply with the lock table `locks`, which every process
 * updating the same target memory must share (see above).  `locks` must be
 * zero-filled before first use and stay mapped while any process uses it.
 * Same arguments and returns as util_atomic_apply; -FI_EINVAL also for a
 * NULL `locks`.
 */
int util_atomic_apply_shared(struct util_atomic_locks *locks, enum fi_op op,
			     enum fi_datatype dt, void *dst, const void *src,
			     const void *cmp, void *result, size_t count);

/*
 * fi_query_atomic for a provider's fi_ops_domain.query_atomic: whether
 * `op` on `dt` is supported in the class that `flags` selects (0: base,
 * FI_FETCH_ATOMIC: fetch, FI_COMPARE_ATOMIC: compare), and its attributes.
 * `max_bytes` is the provider's limit on the target bytes one request of
 * that class may cover (e.g. its inject size); attr->count becomes
 * max_bytes / size, and attr->size the element size.  attr is written only
 * on success.  Providers' fi_atomicvalid and friends can call this with
 * the matching flags and return attr.count.
 *
 * Returns 0; -FI_EINVAL for a NULL attr or both FI_FETCH_ATOMIC and
 * FI_COMPARE_ATOMIC; -FI_EBADFLAGS for any other flag bit; -FI_EOPNOTSUPP
 * for an unsupported combination, for FI_TAGGED (weft does not target
 * tagged receive buffers), or when max_bytes is below one element.
 */
int util_atomic_query(enum fi_datatype dt, enum fi_op op, size_t max_bytes,
		      uint64_t flags, struct fi_atomic_attr *attr);

#endif /* WEFT_UTIL_ATOMIC_H */
