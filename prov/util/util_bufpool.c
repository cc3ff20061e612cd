/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Buffer pool.  See include/weft/util_bufpool.h for the contract.
 *
 * A chunk is one anonymous mapping of chunk_bytes (a power of two, at least
 * a page), aligned to chunk_bytes.  It starts with a header (owner, index of
 * its first object, a bitmap of taken objects), then per_chunk objects spaced
 * by stride.  Free objects are linked through their first word in a LIFO
 * stack, so a recently put (cache-warm) object is handed out next.
 */
#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "weft/util_bufpool.h"

#define UTIL_BUFPOOL_DEF_CHUNK 64
#define UTIL_BUFPOOL_LEAK_SHOW 8

struct util_bufpool_free {
	struct util_bufpool_free *next;
};

struct util_bufpool_chunk {
	uint64_t base;	 /* index of the first object */
	char *first;	 /* first object */
	uint64_t used[]; /* bit set: object taken */
};

struct util_bufpool {
	char name[32];
	size_t size;
	size_t align;	    /* object alignment, a power of two */
	size_t stride;	    /* size rounded up to the alignment */
	size_t chunk_bytes; /* power of two */
	size_t per_chunk;   /* objects in every chunk */
	size_t max_cnt;	    /* SIZE_MAX when unlimited */
	unsigned int flags;

	struct util_bufpool_free *free;
	size_t inuse;
	size_t capacity; /* objects placed on the free list so far */

	struct util_bufpool_chunk **chunks;
	size_t nchunks;
	size_t chunks_cap;
};

static size_t util_roundup(size_t n, size_t align)
{
	return (n + align - 1) & ~(align - 1);
}

static size_t util_pow2_ceil(size_t n)
{
	size_t p = 1;

	while (p < n)
		p <<= 1;
	return p;
}

static bool util_is_pow2(size_t n)
{
	return n && !(n & (n - 1));
}

/* Bytes before the first object of a chunk that holds cnt objects. */
static size_t util_bufpool_hdr_bytes(size_t cnt, size_t align)
{
	return util_roundup(sizeof(struct util_bufpool_chunk) +
				sizeof(uint64_t) * ((cnt + 63) / 64),
			    align);
}

int util_bufpool_create(const struct util_bufpool_attr *attr,
			struct util_bufpool **pool)
{
	struct util_bufpool *p;
	size_t align, want, cnt, page;

	if (!attr || !pool || !attr->size)
		return -FI_EINVAL;
	align = attr->alignment ? attr->alignment : WEFT_CACHELINE;
	if (!util_is_pow2(align) || attr->size > SIZE_MAX / 4)
		return -FI_EINVAL;
	align = WEFT_MAX(align, sizeof(struct util_bufpool_free));

	p = calloc(1, sizeof(*p));
	if (!p)
		return -FI_ENOMEM;
	snprintf(p->name, sizeof(p->name), "%s",
		 attr->name ? attr->name : "bufpool");
	p->size = attr->size;
	p->flags = attr->flags;
	p->align = align;
	p->stride = util_roundup(
	    WEFT_MAX(attr->size, sizeof(struct util_bufpool_free)), align);
	p->max_cnt = attr->max_cnt ? attr->max_cnt : SIZE_MAX;

	want = attr->chunk_cnt ? attr->chunk_cnt : UTIL_BUFPOOL_DEF_CHUNK;
	want = WEFT_MIN(want, p->max_cnt);
	if (want > (SIZE_MAX / 4) / p->stride) {
		free(p);
		return -FI_EINVAL;
	}
	page = (size_t)sysconf(_SC_PAGESIZE);
	p->chunk_bytes = util_pow2_ceil(util_bufpool_hdr_bytes(want, align) +
					want * p->stride);
	p->chunk_bytes = WEFT_MAX(p->chunk_bytes, page);

	/* Fill the chunk: as many objects as fit beside their header. */
	cnt = p->chunk_bytes / p->stride;
	while (cnt && util_bufpool_hdr_bytes(cnt, align) + cnt * p->stride >
			  p->chunk_bytes)
		cnt--;
	assert(cnt >= want);
	p->per_chunk = cnt;

	*pool = p;
	return 0;
}

/* Map chunk_bytes aligned to chunk_bytes: over-map, then trim both ends. */
static void *util_bufpool_map(size_t bytes)
{
	uintptr_t start, aligned;
	void *mem;

	mem = mmap(NULL, 2 * bytes, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (mem == MAP_FAILED)
		return NULL;
	start = (uintptr_t)mem;
	aligned = (start + bytes - 1) & ~(uintptr_t)(bytes - 1);
	if (aligned > start)
		munmap(mem, aligned - start);
	if (start + bytes > aligned)
		munmap((void *)(aligned + bytes), start + bytes - aligned);
	return (void *)aligned;
}

static int util_bufpool_grow(struct util_bufpool *p)
{
	struct util_bufpool_chunk *chunk, **chunks;
	struct util_bufpool_free *obj;
	size_t i, cnt, cap;

	if (p->capacity >= p->max_cnt)
		return -FI_ENOSPC;

	if (p->nchunks == p->chunks_cap) {
		cap = p->chunks_cap ? 2 * p->chunks_cap : 8;
		chunks = realloc(p->chunks, cap * sizeof(*chunks));
		if (!chunks)
			return -FI_ENOMEM;
		p->chunks = chunks;
		p->chunks_cap = cap;
	}

	chunk = util_bufpool_map(p->chunk_bytes);
	if (!chunk)
		return -FI_ENOMEM;
	/* The mapping is zero-filled: the used bitmap starts clear. */
	chunk->base = (uint64_t)p->nchunks * p->per_chunk;
	chunk->first =
	    (char *)chunk + util_bufpool_hdr_bytes(p->per_chunk, p->align);
	p->chunks[p->nchunks++] = chunk;

	/* Push in reverse so that the lowest index is handed out first. */
	cnt = WEFT_MIN(p->per_chunk, p->max_cnt - p->capacity);
	for (i = cnt; i-- > 0;) {
		obj =
		    (struct util_bufpool_free *)(chunk->first + i * p->stride);
		obj->next = p->free;
		p->free = obj;
	}
	p->capacity += cnt;
	return 0;
}

static struct util_bufpool_chunk *
util_bufpool_chunk_of(const struct util_bufpool *p, const void *obj)
{
	return (struct util_bufpool_chunk *)((uintptr_t)obj &
					     ~(uintptr_t)(p->chunk_bytes - 1));
}

static size_t util_bufpool_slot(const struct util_bufpool *p,
				const struct util_bufpool_chunk *chunk,
				const void *obj)
{
	return (size_t)((const char *)obj - chunk->first) / p->stride;
}

void *util_bufpool_get(struct util_bufpool *p)
{
	struct util_bufpool_chunk *chunk;
	struct util_bufpool_free *obj;
	size_t slot;

	if (weft_unlikely(!p->free) && util_bufpool_grow(p))
		return NULL;
	obj = p->free;
	p->free = obj->next;

	chunk = util_bufpool_chunk_of(p, obj);
	slot = util_bufpool_slot(p, chunk, obj);
	chunk->used[slot / 64] |= 1ULL << (slot % 64);
	p->inuse++;
	if (p->flags & UTIL_BUFPOOL_ZERO)
		memset(obj, 0, p->size);
	return obj;
}

void util_bufpool_put(struct util_bufpool *p, void *ptr)
{
	struct util_bufpool_chunk *chunk = util_bufpool_chunk_of(p, ptr);
	struct util_bufpool_free *obj = ptr;
	size_t slot = util_bufpool_slot(p, chunk, ptr);

	assert(chunk->used[slot / 64] & (1ULL << (slot % 64)));
	chunk->used[slot / 64] &= ~(1ULL << (slot % 64));
	p->inuse--;
	obj->next = p->free;
	p->free = obj;
}

uint64_t util_bufpool_index(const struct util_bufpool *p, const void *obj)
{
	const struct util_bufpool_chunk *chunk = util_bufpool_chunk_of(p, obj);

	return chunk->base + util_bufpool_slot(p, chunk, obj);
}

void *util_bufpool_at(const struct util_bufpool *p, uint64_t index)
{
	const struct util_bufpool_chunk *chunk;
	size_t slot;

	if (index >= p->capacity)
		return NULL;
	chunk = p->chunks[index / p->per_chunk];
	slot = index % p->per_chunk;
	if (!(chunk->used[slot / 64] & (1ULL << (slot % 64))))
		return NULL;
	return chunk->first + slot * p->stride;
}

size_t util_bufpool_inuse(const struct util_bufpool *p)
{
	return p->inuse;
}

size_t util_bufpool_capacity(const struct util_bufpool *p)
{
	return p->capacity;
}

int util_bufpool_destroy(struct util_bufpool *p)
{
	char shown[UTIL_BUFPOOL_LEAK_SHOW * 21 + 4] = "";
	size_t i, len = 0, nshown = 0;
	uint64_t idx;
	int ret = 0;

	if (!p)
		return 0;

	if (p->inuse) {
		for (idx = 0; idx < p->capacity; idx++) {
			if (!util_bufpool_at(p, idx))
				continue;
			if (nshown++ == UTIL_BUFPOOL_LEAK_SHOW) {
				snprintf(shown + len, sizeof(shown) - len,
					 " ...");
				break;
			}
			len +=
			    (size_t)snprintf(shown + len, sizeof(shown) - len,
					     " %llu", (unsigned long long)idx);
		}
		FI_WARN(&weft_core_prov, FI_LOG_CORE,
			"%s: %zu of %zu objects not returned at destroy, "
			"indices%s\n",
			p->name, p->inuse, p->capacity, shown);
		ret = -FI_EBUSY;
	}

	for (i = 0; i < p->nchunks; i++)
		munmap(p->chunks[i], p->chunk_bytes);
	free(p->chunks);
	free(p);
	return ret;
}
