/* SPDX-License-Identifier: BSD-2-Clause */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "weft/util_bufpool.h"

static struct util_bufpool *make_pool(size_t size, size_t align, size_t chunk,
				      size_t max, unsigned int flags)
{
	struct util_bufpool_attr attr = {
	    .name = "test",
	    .size = size,
	    .alignment = align,
	    .chunk_cnt = chunk,
	    .max_cnt = max,
	    .flags = flags,
	};
	struct util_bufpool *pool = NULL;

	cr_assert_eq(util_bufpool_create(&attr, &pool), 0);
	cr_assert_not_null(pool);
	return pool;
}

Test(bufpool, bad_attr)
{
	struct util_bufpool_attr attr = {.size = 0};
	struct util_bufpool *pool;

	cr_assert_eq(util_bufpool_create(&attr, &pool), -FI_EINVAL);
	attr.size = 16;
	attr.alignment = 48;
	cr_assert_eq(util_bufpool_create(&attr, &pool), -FI_EINVAL);
	attr.alignment = 0;
	attr.chunk_cnt = SIZE_MAX / 8;
	cr_assert_eq(util_bufpool_create(&attr, &pool), -FI_EINVAL);
	cr_assert_eq(util_bufpool_destroy(NULL), 0);
}

Test(bufpool, alignment_and_distinct_objects)
{
	struct util_bufpool *pool = make_pool(40, 0, 8, 0, 0);
	char *objs[100];
	int i, j;

	for (i = 0; i < 100; i++) {
		objs[i] = util_bufpool_get(pool);
		cr_assert_not_null(objs[i]);
		cr_assert_eq((uintptr_t)objs[i] % WEFT_CACHELINE, 0);
		memset(objs[i], i, 40);
	}
	/* No two objects overlap: each still holds its own pattern. */
	for (i = 0; i < 100; i++)
		for (j = 0; j < 40; j++)
			cr_assert_eq((unsigned char)objs[i][j], i);
	for (i = 0; i < 100; i++)
		util_bufpool_put(pool, objs[i]);
	cr_assert_eq(util_bufpool_inuse(pool), 0);
	cr_assert_eq(util_bufpool_destroy(pool), 0);
}

Test(bufpool, custom_alignment)
{
	struct util_bufpool *pool = make_pool(300, 256, 4, 0, 0);
	void *a = util_bufpool_get(pool), *b = util_bufpool_get(pool);

	cr_assert_eq((uintptr_t)a % 256, 0);
	cr_assert_eq((uintptr_t)b % 256, 0);
	/* 300 bytes rounded up to the alignment: objects 512 bytes apart. */
	cr_assert_geq(labs((long)((char *)b - (char *)a)), 512);
	util_bufpool_put(pool, a);
	util_bufpool_put(pool, b);
	cr_assert_eq(util_bufpool_destroy(pool), 0);
}

Test(bufpool, reuse_without_growth)
{
	struct util_bufpool *pool = make_pool(64, 0, 16, 0, 0);
	size_t cap;
	void *a, *b;
	int i;

	a = util_bufpool_get(pool);
	cap = util_bufpool_capacity(pool);
	cr_assert_geq(cap, 16);
	util_bufpool_put(pool, a);
	/* LIFO: the object just returned comes back, capacity is stable. */
	for (i = 0; i < 10000; i++) {
		b = util_bufpool_get(pool);
		cr_assert_eq(b, a);
		util_bufpool_put(pool, b);
	}
	cr_assert_eq(util_bufpool_capacity(pool), cap);
	cr_assert_eq(util_bufpool_destroy(pool), 0);
}

Test(bufpool, growth_and_limit)
{
	struct util_bufpool *pool = make_pool(64, 0, 4, 37, 0);
	void *objs[37];
	size_t cap = 0;
	int i, grew = 0;

	for (i = 0; i < 37; i++) {
		objs[i] = util_bufpool_get(pool);
		cr_assert_not_null(objs[i], "object %d", i);
		if (util_bufpool_capacity(pool) != cap) {
			grew++;
			cap = util_bufpool_capacity(pool);
		}
	}
	cr_assert_geq(grew, 1);
	cr_assert_eq(util_bufpool_capacity(pool), 37);
	cr_assert_eq(util_bufpool_inuse(pool), 37);
	cr_assert_null(util_bufpool_get(pool), "limit of 37 exceeded");
	cr_assert_null(util_bufpool_get(pool));

	util_bufpool_put(pool, objs[5]);
	cr_assert_eq(util_bufpool_get(pool), objs[5]);
	cr_assert_null(util_bufpool_get(pool));

	for (i = 0; i < 37; i++)
		util_bufpool_put(pool, objs[i]);
	cr_assert_eq(util_bufpool_destroy(pool), 0);
}

Test(bufpool, grows_over_many_chunks)
{
	/* Large objects: a chunk holds only a few, so this spans many. */
	struct util_bufpool *pool = make_pool(3000, 0, 1, 0, 0);
	void **objs = calloc(500, sizeof(*objs));
	int i;

	for (i = 0; i < 500; i++) {
		objs[i] = util_bufpool_get(pool);
		cr_assert_not_null(objs[i]);
		cr_assert_eq(util_bufpool_index(pool, objs[i]), (uint64_t)i);
		cr_assert_eq(util_bufpool_at(pool, (uint64_t)i), objs[i]);
		memset(objs[i], 0xa5, 3000);
	}
	for (i = 0; i < 500; i++)
		util_bufpool_put(pool, objs[i]);
	cr_assert_eq(util_bufpool_destroy(pool), 0);
	free(objs);
}

Test(bufpool, index_mapping)
{
	struct util_bufpool *pool = make_pool(24, 0, 8, 0, 0);
	void *objs[50];
	uint64_t idx;
	int i;

	for (i = 0; i < 50; i++) {
		objs[i] = util_bufpool_get(pool);
		idx = util_bufpool_index(pool, objs[i]);
		/* A fresh pool hands out indices in order. */
		cr_assert_eq(idx, (uint64_t)i);
		cr_assert_eq(util_bufpool_at(pool, idx), objs[i]);
	}
	/* Free objects and indices beyond the capacity do not resolve. */
	idx = util_bufpool_index(pool, objs[7]);
	util_bufpool_put(pool, objs[7]);
	cr_assert_null(util_bufpool_at(pool, idx));
	cr_assert_null(util_bufpool_at(pool, util_bufpool_capacity(pool)));
	cr_assert_null(util_bufpool_at(pool, UINT64_MAX));
	cr_assert_null(util_bufpool_at(pool, 1ULL << 40));
	/* Never-taken objects within the capacity do not resolve either. */
	if (util_bufpool_capacity(pool) > 50)
		cr_assert_null(util_bufpool_at(pool, 50));

	/* Taken again, the index resolves again to the same address. */
	cr_assert_eq(util_bufpool_get(pool), objs[7]);
	cr_assert_eq(util_bufpool_at(pool, idx), objs[7]);

	for (i = 0; i < 50; i++)
		util_bufpool_put(pool, objs[i]);
	cr_assert_eq(util_bufpool_destroy(pool), 0);
}

Test(bufpool, zero_flag)
{
	struct util_bufpool *pool = make_pool(128, 0, 4, 0, UTIL_BUFPOOL_ZERO);
	unsigned char *p = util_bufpool_get(pool);
	int i;

	memset(p, 0xff, 128);
	util_bufpool_put(pool, p);
	p = util_bufpool_get(pool);
	for (i = 0; i < 128; i++)
		cr_assert_eq(p[i], 0, "byte %d", i);
	util_bufpool_put(pool, p);
	cr_assert_eq(util_bufpool_destroy(pool), 0);
}

Test(bufpool, leak_detection)
{
	struct util_bufpool *pool = make_pool(64, 0, 8, 0, 0);
	void *a = util_bufpool_get(pool);
	void *b = util_bufpool_get(pool);
	void *c = util_bufpool_get(pool);

	util_bufpool_put(pool, b);
	cr_assert_eq(util_bufpool_inuse(pool), 2);
	(void)a;
	(void)c;
	cr_assert_eq(util_bufpool_destroy(pool), -FI_EBUSY);
}

Test(bufpool, random_get_put)
{
	struct util_bufpool *pool = make_pool(72, 0, 16, 1000, 0);
	void *held[1000];
	size_t nheld = 0, k;
	unsigned int seed = 12345;
	int i;

	for (i = 0; i < 200000; i++) {
		if (nheld < 1000 && (rand_r(&seed) % 3 || !nheld)) {
			held[nheld] = util_bufpool_get(pool);
			cr_assert_not_null(held[nheld]);
			cr_assert_eq(
			    util_bufpool_at(
				pool, util_bufpool_index(pool, held[nheld])),
			    held[nheld]);
			nheld++;
		} else {
			k = (size_t)rand_r(&seed) % nheld;
			util_bufpool_put(pool, held[k]);
			held[k] = held[--nheld];
		}
		cr_assert_eq(util_bufpool_inuse(pool), nheld);
	}
	cr_assert_leq(util_bufpool_capacity(pool), 1000);
	while (nheld)
		util_bufpool_put(pool, held[--nheld]);
	cr_assert_eq(util_bufpool_destroy(pool), 0);
}

Test(bufpool, limit_across_chunks)
{
	/* One 3000-byte object per page-sized chunk: ten chunks, no more. */
	struct util_bufpool *pool = make_pool(3000, 0, 1, 10, 0);
	void *objs[10];
	int i;

	for (i = 0; i < 10; i++) {
		objs[i] = util_bufpool_get(pool);
		cr_assert_not_null(objs[i]);
		cr_assert_eq(util_bufpool_at(pool, (uint64_t)i), objs[i]);
	}
	cr_assert_eq(util_bufpool_capacity(pool), 10);
	cr_assert_null(util_bufpool_get(pool));
	util_bufpool_put(pool, objs[3]);
	cr_assert_eq(util_bufpool_get(pool), objs[3]);
	for (i = 0; i < 10; i++)
		util_bufpool_put(pool, objs[i]);
	cr_assert_eq(util_bufpool_destroy(pool), 0);
}
