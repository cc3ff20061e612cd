/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Buffer pool: fixed-size objects handed out and taken back in O(1).
 *
 * The pool grows by chunks of memory, each holding many objects, up to an
 * optional limit; it never shrinks before it is destroyed.  util_bufpool_get
 * and util_bufpool_put touch only a free list, so the steady state (objects
 * recycled, no growth) performs no allocation and no system call.
 *
 * Every object has a stable index, 0 .. capacity-1, in the order the chunks
 * were added.  An index fits in a wire header (32 bits when max_cnt is below
 * 2^32) and util_bufpool_at maps it back to the object, rejecting indices that
 * are out of range or name a free object, so an index read from the network
 * can be trusted only as far as that check.
 *
 * Layout: objects are aligned to attr->alignment (a cache line by default)
 * and are spaced by their size rounded up to that alignment; no header sits
 * beside an object.  Chunks are aligned to their own power-of-two size, which
 * lets the pool find the chunk (and the index) of an object by masking its
 * address.
 *
 * Concurrency: a pool is not thread-safe.  The object that owns it (an
 * endpoint, a domain) serialises calls with its own lock.
 */
#ifndef WEFT_UTIL_BUFPOOL_H
#define WEFT_UTIL_BUFPOOL_H

#include <stddef.h>
#include <stdint.h>

#include "weft/core.h"

/* Objects returned by util_bufpool_get are zero-filled. */
#define UTIL_BUFPOOL_ZERO (1u << 0)

struct util_bufpool_attr {
	const char *name;   /* for leak reports; may be NULL */
	size_t size;	    /* bytes per object, > 0 */
	size_t alignment;   /* power of two; 0 means WEFT_CACHELINE */
	size_t chunk_cnt;   /* objects per growth step, at least; 0: 64 */
	size_t max_cnt;	    /* most objects the pool may hold; 0: no limit */
	unsigned int flags; /* UTIL_BUFPOOL_* */
};

struct util_bufpool;

/*
 * Create a pool.  Called at object setup; may block in the allocator.  No
 * memory for objects is allocated until the first get.  On success *pool is
 * set and owned by the caller until util_bufpool_destroy.
 * Returns 0, -FI_EINVAL for a bad attribute, or -FI_ENOMEM.
 */
int util_bufpool_create(const struct util_bufpool_attr *attr,
			struct util_bufpool **pool);

/*
 * Destroy a pool and free all its memory.  Objects still taken are leaks:
 * they are reported at warn level (count and the first indices) and freed
 * all the same, since the caller is tearing down.  Accepts NULL.
 * Returns 0, or -FI_EBUSY when objects were leaked.
 */
int util_bufpool_destroy(struct util_bufpool *pool);

/*
 * Take an object.  Fast path: pop of a free list, no allocation.  When the
 * free list is empty the pool grows by one chunk, which allocates (mmap) and
 * may block briefly.  The object's contents are undefined unless the pool
 * was created with UTIL_BUFPOOL_ZERO.  The caller owns the object until it
 * puts it back.  Returns NULL when the pool reached max_cnt or memory ran
 * out; callers usually turn that into -FI_EAGAIN.
 */
void *util_bufpool_get(struct util_bufpool *pool);

/*
 * Give an object back.  O(1), never allocates.  obj must have come from
 * util_bufpool_get on this pool and not been put since; a double put is a
 * bug and is caught by an assertion in debug builds.
 */
void util_bufpool_put(struct util_bufpool *pool, void *obj);

/* The index of an object taken from the pool.  O(1). */
uint64_t util_bufpool_index(const struct util_bufpool *pool, const void *obj);

/*
 * The object with this index if it is currently taken; NULL when the index
 * is beyond the pool's capacity or names a free object.  O(1).  Meant for
 * indices that came back over the wire.
 */
void *util_bufpool_at(const struct util_bufpool *pool, uint64_t index);

/* Objects currently taken (not put back). */
size_t util_bufpool_inuse(const struct util_bufpool *pool);

/*
 * Objects the pool holds memory for (taken or free), capped at max_cnt.
 * Indices run from 0 to capacity-1; callers walk them with util_bufpool_at,
 * e.g. to fail outstanding operations at close.
 */
size_t util_bufpool_capacity(const struct util_bufpool *pool);

#endif /* WEFT_UTIL_BUFPOOL_H */
