/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The registration cache: kept registrations are handed out again, and
 * memory the application unmaps, drops (MADV_DONTNEED), moves (mremap) or
 * frees is never served by an old registration.  The owner's reg and
 * dereg are counted here instead of going to a device.
 */
#define _GNU_SOURCE
#include <criterion/criterion.h>

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <rdma/fabric.h>

#include "weft/util_mr_cache.h"

#define MB (1024 * 1024)

static int regs, deregs;

static int fake_reg(void *owner, void *addr, size_t len, uint64_t access,
		    void **handle)
{
	(void)owner;
	(void)access;
	cr_assert_eq((uintptr_t)addr % 4096, 0, "registered range not paged");
	cr_assert_eq(len % 4096, 0);
	regs++;
	*handle = (void *)(uintptr_t)regs;
	return 0;
}

static void fake_dereg(void *owner, void *handle)
{
	(void)owner;
	(void)handle;
	deregs++;
}

static const struct util_mr_cache_ops ops = { fake_reg, fake_dereg };
static struct util_mr_cache cache;

/* What a lookup made now would see (the monitor may still be at work
 * right after munmap returns; lookups wait for it, as this does). */
static struct util_mr_cache_stats stats(void)
{
	struct util_mr_cache_stats st;

	util_mr_cache_stats(&cache, &st);
	return st;
}

static void setup(void)
{
	regs = deregs = 0;
	util_mr_cache_init(&cache, &ops, NULL, 16, 64 * MB);
	if (!util_mr_cache_watching())
		cr_skip_test("userfaultfd is not available here: the cache "
			     "keeps nothing");
}

static void teardown(void)
{
	cr_assert_eq(util_mr_cache_fini(&cache), 0, "entries still in use");
	cr_assert_eq(regs, deregs, "%d registrations, %d deregistrations",
		     regs, deregs);
}

static void *map(void *at, size_t len)
{
	void *p = mmap(at, len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS |
			       (at ? MAP_FIXED_NOREPLACE : 0),
		       -1, 0);

	cr_assert_neq(p, MAP_FAILED, "mmap");
	cr_assert(!at || p == at, "mmap did not map at the old address");
	memset(p, 1, len);
	return p;
}

static void get_put(void *p, size_t len, uint64_t access)
{
	struct util_mr_cache_entry *e;

	cr_assert_eq(util_mr_cache_get(&cache, p, len, access, &e), 0);
	util_mr_cache_put(&cache, e);
}

TestSuite(mr_cache, .init = setup, .fini = teardown);

Test(mr_cache, kept_and_served_again)
{
	char *p = map(NULL, MB);

	get_put(p, MB, FI_SEND);
	get_put(p, MB, FI_SEND);
	get_put(p + 4096 + 10, 20000, FI_SEND); /* covered */
	cr_assert_eq(regs, 1);
	cr_assert_eq(deregs, 0);
	cr_assert_eq(stats().hits, 2);
	get_put(p, MB, FI_SEND | FI_RECV); /* more access: a new one */
	cr_assert_eq(regs, 2);
	util_mr_cache_fini(&cache);
	munmap(p, MB);
	util_mr_cache_init(&cache, &ops, NULL, 16, 64 * MB);
}

Test(mr_cache, munmap_then_same_address)
{
	char *p = NULL, *q = MAP_FAILED;
	int tries;

	/* Between the munmap and the new mmap another mapping may take the
	 * hole (an allocator of this process: AddressSanitizer's does, while
	 * the cache's monitor thread handles the unmap).  Then again, at
	 * another address; the checks hold for each round. */
	for (tries = 0; tries < 8 && q == MAP_FAILED; tries++) {
		p = map(NULL, MB);
		get_put(p, MB, FI_SEND);
		cr_assert_eq(munmap(p, MB), 0);
		/* Once munmap has returned, the old registration is gone for
		 * lookups: a new mapping at the same address is registered
		 * anew. */
		cr_assert_eq(stats().invalidated, (uint64_t)tries + 1);
		q = mmap(p, MB, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1,
			 0);
		cr_assert(q != MAP_FAILED || errno == EEXIST, "mmap: %s",
			  strerror(errno));
	}
	if (q == MAP_FAILED)
		cr_skip_test("the old address was taken by another mapping "
			     "in each of %d rounds", tries);
	cr_assert_eq(q, p, "mmap did not map at the old address");
	memset(q, 1, MB);
	get_put(p, MB, FI_SEND);
	cr_assert_eq(regs, tries + 1, "the old registration served new memory");
	cr_assert_eq(deregs, tries);
	munmap(p, MB);
}

Test(mr_cache, dontneed_drops_it)
{
	char *p = map(NULL, MB);

	get_put(p, MB, FI_SEND);
	cr_assert_eq(madvise(p + 8192, 4096, MADV_DONTNEED), 0);
	cr_assert_eq(stats().invalidated, 1);
	get_put(p, MB, FI_SEND);
	cr_assert_eq(regs, 2);
	munmap(p, MB);
}

Test(mr_cache, mremap_moves_it)
{
	char *p = map(NULL, 2 * MB), *q;

	get_put(p, MB, FI_SEND);
	q = mremap(p, MB, 4 * MB, MREMAP_MAYMOVE);
	cr_assert_neq(q, MAP_FAILED);
	cr_assert_eq(stats().invalidated, 1);
	munmap(q, 4 * MB);
	munmap(p + MB, MB);
}

Test(mr_cache, free_of_a_large_block)
{
	/* Above glibc's mmap threshold: free unmaps it. */
	char *p;

#ifdef __SANITIZE_ADDRESS__
	cr_skip_test("AddressSanitizer's allocator keeps freed blocks mapped");
#endif
	p = malloc(8 * MB);

	cr_assert_not_null(p);
	memset(p, 2, 8 * MB);
	get_put(p, 8 * MB, FI_SEND);
	free(p);
	cr_assert_eq(stats().invalidated, 1);
}

Test(mr_cache, in_use_when_unmapped)
{
	struct util_mr_cache_entry *e;
	char *p = map(NULL, MB);

	cr_assert_eq(util_mr_cache_get(&cache, p, MB, FI_SEND, &e), 0);
	munmap(p, MB);
	stats();
	cr_assert(!e->valid);
	cr_assert_eq(deregs, 0, "deregistered while in use");
	util_mr_cache_put(&cache, e);
	cr_assert_eq(deregs, 1);
}

Test(mr_cache, bounded)
{
	char *p = map(NULL, 20 * 64 * 1024);
	int i;

	for (i = 0; i < 20; i++)
		get_put(p + i * 64 * 1024, 64 * 1024, FI_SEND);
	cr_assert_eq(regs, 20);
	cr_assert_eq(stats().entries, 16);
	cr_assert_eq(deregs, 4, "the least recently used go first");
	get_put(p + 19 * 64 * 1024, 64 * 1024, FI_SEND);
	cr_assert_eq(regs, 20);
	get_put(p, 64 * 1024, FI_SEND);
	cr_assert_eq(regs, 21, "the oldest was kept");
	util_mr_cache_fini(&cache);
	munmap(p, 20 * 64 * 1024);
	util_mr_cache_init(&cache, &ops, NULL, 16, 64 * MB);
}

Test(mr_cache, file_mapping_not_kept)
{
	const char *dir = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
	char path[4096];
	int fd;
	char *p;

	snprintf(path, sizeof(path), "%s/weft-mrcache-XXXXXX", dir);
	fd = mkstemp(path);

	cr_assert_geq(fd, 0);
	unlink(path);
	cr_assert_eq(ftruncate(fd, MB), 0);
	p = mmap(NULL, MB, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	cr_assert_neq(p, MAP_FAILED);
	close(fd);
	get_put(p, MB, FI_SEND);
	/* Not watchable: registered for the call, released at its put. */
	cr_assert_eq(regs, 1);
	cr_assert_eq(deregs, 1);
	munmap(p, MB);
}
