/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A registration cache that notices freed memory.
 *
 * Registering memory with an RDMA device pins its pages and costs a
 * system call and page-table walks: too slow to do for every large send
 * from a buffer the application did not register.  The cache keeps such
 * registrations and hands them out again for the same (or a covered)
 * range.  A kept registration is only right while the range still has
 * the pages it pinned: once the application unmaps the memory (free of a
 * large block, heap trimming, munmap, mremap) or drops its pages
 * (madvise MADV_DONTNEED), a new allocation at the same address has other
 * pages, and a device writing through the old registration would write
 * into memory the process no longer sees.
 *
 * So every cached range is watched with userfaultfd(2), registered in
 * write-protect mode without protecting anything (no fault is ever taken
 * on it) and only for the events UNMAP, REMOVE and REMAP.  The kernel
 * holds the unmapping thread until a monitor thread of this library has
 * read the event; the monitor reads it under the caches' lock and marks
 * every entry overlapping the range invalid before letting go of the
 * lock, so that no lookup made after munmap returned can find the old
 * registration.  Invalid entries are deregistered by the cache's owner,
 * at its next call, once nobody uses them.
 *
 * Where userfaultfd is not available (a seccomp filter, an old kernel) or
 * a range cannot be watched (a file mapping, a range another userfaultfd
 * watches), registrations are not kept: each get registers and the last
 * put deregisters.  Correct, only slower.
 *
 * Thread safety: a cache may be used from several threads; its calls take
 * the process-wide lock the monitor takes.  They are for the paths that
 * move large messages, not for every small one.
 */
#ifndef WEFT_UTIL_MR_CACHE_H
#define WEFT_UTIL_MR_CACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "weft/list.h"

/* What the cache asks its owner (a verbs domain: ibv_reg_mr). */
struct util_mr_cache_ops {
	/* Register [addr, addr + len) for access (the owner's flags);
	 * *handle is what get hands out.  0 or -FI_E*. */
	int (*reg)(void *owner, void *addr, size_t len, uint64_t access,
		   void **handle);
	void (*dereg)(void *owner, void *handle);
};

struct util_mr_cache_entry {
	struct dlist_entry entry; /* cache->live (LRU: most recent first) or
				   * cache->dead */
	uintptr_t start, end;	  /* page-aligned range registered */
	uint64_t access;
	void *handle;
	unsigned int refs; /* gets not put back */
	bool valid;	   /* the range still has the pages registered */
	bool kept;	   /* watched, so kept after the last put */
};

struct util_mr_cache {
	const struct util_mr_cache_ops *ops;
	void *owner;
	size_t max_entries; /* kept registrations; the least recently used
			     * unused one goes first */
	size_t max_bytes;
	size_t entries, bytes;
	struct dlist_entry live;
	struct dlist_entry dead; /* invalid, still in use */
	struct dlist_entry caches; /* in the process-wide list */
	/* Figures (util_mr_cache_stats reads them). */
	uint64_t hits, misses, invalidated;
};

/*
 * Start a cache (max_entries 0: keep nothing).  Never fails: without
 * userfaultfd the cache keeps nothing.
 */
void util_mr_cache_init(struct util_mr_cache *cache,
			const struct util_mr_cache_ops *ops, void *owner,
			size_t max_entries, size_t max_bytes);

/*
 * A registration covering [addr, addr + len) with at least `access`:
 * a kept one, or a new one.  Returns 0 and *entry ((*entry)->handle is
 * the owner's), or the error of ops->reg.  Each get wants its put.
 */
int util_mr_cache_get(struct util_mr_cache *cache, const void *addr,
		      size_t len, uint64_t access,
		      struct util_mr_cache_entry **entry);
void util_mr_cache_put(struct util_mr_cache *cache,
		       struct util_mr_cache_entry *entry);

/* Deregister everything (entries still in use are the caller's bug:
 * they are deregistered anyway, and counted in the return). */
size_t util_mr_cache_fini(struct util_mr_cache *cache);

/*
 * The cache's figures, read under the lock the monitor takes: what it
 * reads is what a lookup made now would see (entries' valid flags too).
 */
struct util_mr_cache_stats {
	uint64_t hits, misses, invalidated;
	size_t entries, bytes;
};
void util_mr_cache_stats(struct util_mr_cache *cache,
			 struct util_mr_cache_stats *stats);

/* Whether ranges can be watched here (userfaultfd works). */
bool util_mr_cache_watching(void);

#endif /* WEFT_UTIL_MR_CACHE_H */
