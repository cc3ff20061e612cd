/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * One-sided communication, every byte checked, on a window of
 * MPI_Win_allocate and one of MPI_Win_create:
 *   fence epochs: MPI_Put of 8 B to 1 MiB into the next rank, MPI_Get of
 *     the same sizes from the previous rank, MPI_Accumulate (MPI_SUM on
 *     32-bit integers) by every rank into every rank;
 *   passive target: MPI_Put and MPI_Get under MPI_Win_lock exclusive and
 *     shared, MPI_Accumulate under a shared lock by every rank into rank
 *     0, and MPI_Fetch_and_op (+1) on one counter by every rank, whose
 *     fetched values must be each of 0 .. n*K-1 exactly once.
 * A rank reads its own window only inside an epoch of its own (a fence,
 * or a lock on itself).  Exit status 0 only when every check held.
 */
#include "mpitest.h"

#define PUTMAX 1048576		/* largest put/get */
#define ACCN 4096		/* integers accumulated into */
#define FOPS 50			/* fetch-and-ops per rank */
/* window layout */
#define OFF_PUT 0
#define OFF_ACC (2 * PUTMAX)
#define OFF_CNT (OFF_ACC + ACCN * 4)
#define WINSIZE (OFF_CNT + 64)

static const size_t sizes[] = { 8, 100, 4096, 65536, 300001, PUTMAX };
#define NSIZES (int)(sizeof(sizes) / sizeof(sizes[0]))

static int rank, nranks, next, prev;

static void check(const uint8_t *p, size_t len, uint64_t seed,
		  const char *what)
{
	long bad = mt_verify(p, len, seed);

	if (bad >= 0)
		mt_fail("%s of %zu B: wrong byte at offset %ld (0x%02x, "
			"expected 0x%02x)", what, len, bad, p[bad],
			mt_byte(seed, (size_t)bad));
}

static void fence_epochs(MPI_Win win, uint8_t *base, const char *kind)
{
	uint8_t *buf = malloc(PUTMAX);
	int32_t *acc = malloc(ACCN * 4);
	char what[64];

	if (!buf || !acc)
		mt_fail("out of memory");
	for (int s = 0; s < NSIZES; s++) {
		size_t len = sizes[s];

		/* put into the next rank's first half */
		MT_CHECK(MPI_Win_fence(0, win));
		memset(base + OFF_PUT, 0, 2 * PUTMAX);
		mt_fill(buf, len, mt_seed(20, len, rank, 0));
		MT_CHECK(MPI_Win_fence(0, win));
		MT_CHECK(MPI_Put(buf, (int)len, MPI_BYTE, next, OFF_PUT,
				 (int)len, MPI_BYTE, win));
		MT_CHECK(MPI_Win_fence(0, win));
		snprintf(what, sizeof(what), "%s: MPI_Put with fences", kind);
		check(base + OFF_PUT, len, mt_seed(20, len, prev, 0), what);
		for (size_t i = len; i < len + 8 && i < 2 * PUTMAX; i++)
			if (base[OFF_PUT + i])
				mt_fail("%s: MPI_Put of %zu B wrote byte %zu",
					kind, len, i);

		/* get the previous rank's second half */
		mt_fill(base + OFF_PUT + PUTMAX, len, mt_seed(21, len, rank, 0));
		memset(buf, 0, len);
		MT_CHECK(MPI_Win_fence(0, win));
		MT_CHECK(MPI_Get(buf, (int)len, MPI_BYTE, prev, OFF_PUT + PUTMAX,
				 (int)len, MPI_BYTE, win));
		MT_CHECK(MPI_Win_fence(0, win));
		snprintf(what, sizeof(what), "%s: MPI_Get with fences", kind);
		check(buf, len, mt_seed(21, len, prev, 0), what);
	}

	/* every rank adds into every rank */
	memset(base + OFF_ACC, 0, ACCN * 4);
	MT_CHECK(MPI_Win_fence(0, win));
	for (int t = 0; t < nranks; t++) {
		for (int i = 0; i < ACCN; i++)
			acc[i] = (rank + 1) * (i + 1) + t;
		MT_CHECK(MPI_Accumulate(acc, ACCN, MPI_INT32_T, t,
					OFF_ACC, ACCN, MPI_INT32_T, MPI_SUM,
					win));
		/* an origin buffer may change only after the epoch ends */
		MT_CHECK(MPI_Win_fence(0, win));
	}
	memcpy(acc, base + OFF_ACC, ACCN * 4);
	for (int i = 0; i < ACCN; i++) {
		int32_t want = nranks * (nranks + 1) / 2 * (i + 1) +
			nranks * rank;

		if (acc[i] != want)
			mt_fail("%s: MPI_Accumulate with fences: element %d is "
				"%d, expected %d", kind, i, acc[i], want);
	}
	MT_CHECK(MPI_Win_fence(0, win));
	free(buf);
	free(acc);
}

/* read my own window under a lock on myself */
static void read_own(MPI_Win win, void *dst, const void *src, size_t len)
{
	MT_CHECK(MPI_Win_lock(MPI_LOCK_SHARED, rank, 0, win));
	MT_CHECK(MPI_Win_sync(win));
	memcpy(dst, src, len);
	MT_CHECK(MPI_Win_unlock(rank, win));
}

static void write_own(MPI_Win win, void *dst, const void *src, size_t len)
{
	MT_CHECK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, rank, 0, win));
	if (src)
		memcpy(dst, src, len);
	else
		memset(dst, 0, len);
	MT_CHECK(MPI_Win_sync(win));
	MT_CHECK(MPI_Win_unlock(rank, win));
}

static void lock_epochs(MPI_Win win, uint8_t *base, const char *kind)
{
	uint8_t *buf = malloc(PUTMAX), *own = malloc(PUTMAX);
	int32_t *acc = malloc(ACCN * 4);
	int64_t *got = malloc(FOPS * sizeof(int64_t)), *all = NULL;
	char what[64];

	if (!buf || !own || !acc || !got)
		mt_fail("out of memory");
	for (int s = 0; s < NSIZES; s++) {
		size_t len = sizes[s];
		int shared = s % 2;

		write_own(win, base + OFF_PUT, NULL, 2 * PUTMAX);
		mt_fill(own, len, mt_seed(31, len, rank, 0));
		write_own(win, base + OFF_PUT + PUTMAX, own, len);
		MT_CHECK(MPI_Barrier(MPI_COMM_WORLD));

		/* put into the next rank */
		mt_fill(buf, len, mt_seed(30, len, rank, 0));
		MT_CHECK(MPI_Win_lock(shared ? MPI_LOCK_SHARED :
				      MPI_LOCK_EXCLUSIVE, next, 0, win));
		MT_CHECK(MPI_Put(buf, (int)len, MPI_BYTE, next, OFF_PUT,
				 (int)len, MPI_BYTE, win));
		MT_CHECK(MPI_Win_unlock(next, win));

		/* get from the previous rank */
		memset(buf, 0, len);
		MT_CHECK(MPI_Win_lock(shared ? MPI_LOCK_SHARED :
				      MPI_LOCK_EXCLUSIVE, prev, 0, win));
		MT_CHECK(MPI_Get(buf, (int)len, MPI_BYTE, prev,
				 OFF_PUT + PUTMAX, (int)len, MPI_BYTE, win));
		MT_CHECK(MPI_Win_unlock(prev, win));
		snprintf(what, sizeof(what), "%s: MPI_Get under a %s lock",
			 kind, shared ? "shared" : "exclusive");
		check(buf, len, mt_seed(31, len, prev, 0), what);

		MT_CHECK(MPI_Barrier(MPI_COMM_WORLD));
		read_own(win, own, base + OFF_PUT, len);
		snprintf(what, sizeof(what), "%s: MPI_Put under a %s lock",
			 kind, shared ? "shared" : "exclusive");
		check(own, len, mt_seed(30, len, prev, 0), what);
		MT_CHECK(MPI_Barrier(MPI_COMM_WORLD));
	}

	/* everyone adds into rank 0 under shared locks */
	write_own(win, base + OFF_ACC, NULL, ACCN * 4 + 64);
	MT_CHECK(MPI_Barrier(MPI_COMM_WORLD));
	for (int k = 0; k < 3; k++) {
		for (int i = 0; i < ACCN; i++)
			acc[i] = (rank + 1) * (i + 1) + k;
		MT_CHECK(MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win));
		MT_CHECK(MPI_Accumulate(acc, ACCN, MPI_INT32_T, 0, OFF_ACC,
					ACCN, MPI_INT32_T, MPI_SUM, win));
		MT_CHECK(MPI_Win_unlock(0, win));
	}
	/* and counts on one counter */
	for (int k = 0; k < FOPS; k++) {
		int64_t one = 1;

		MT_CHECK(MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win));
		MT_CHECK(MPI_Fetch_and_op(&one, &got[k], MPI_INT64_T, 0,
					  OFF_CNT, MPI_SUM, win));
		MT_CHECK(MPI_Win_unlock(0, win));
	}
	MT_CHECK(MPI_Barrier(MPI_COMM_WORLD));
	if (rank == 0) {
		int64_t cnt;
		char *seen;

		read_own(win, acc, base + OFF_ACC, ACCN * 4);
		for (int i = 0; i < ACCN; i++) {
			int32_t want = 3 * nranks * (nranks + 1) / 2 * (i + 1) +
				3 * nranks;

			if (acc[i] != want)
				mt_fail("%s: MPI_Accumulate under shared locks: "
					"element %d is %d, expected %d", kind,
					i, acc[i], want);
		}
		read_own(win, &cnt, base + OFF_CNT, sizeof(cnt));
		if (cnt != (int64_t)nranks * FOPS)
			mt_fail("%s: MPI_Fetch_and_op: the counter is %lld "
				"after %d additions", kind, (long long)cnt,
				nranks * FOPS);
		all = malloc((size_t)nranks * FOPS * sizeof(int64_t));
		seen = calloc((size_t)nranks * FOPS, 1);
		if (!all || !seen)
			mt_fail("out of memory");
		MT_CHECK(MPI_Gather(got, FOPS, MPI_INT64_T, all, FOPS,
				    MPI_INT64_T, 0, MPI_COMM_WORLD));
		for (int i = 0; i < nranks * FOPS; i++) {
			if (all[i] < 0 || all[i] >= nranks * FOPS ||
			    seen[all[i]]++)
				mt_fail("%s: MPI_Fetch_and_op fetched %lld twice "
					"or out of range (rank %d, op %d)",
					kind, (long long)all[i], i / FOPS,
					i % FOPS);
		}
		free(seen);
		free(all);
	} else {
		MT_CHECK(MPI_Gather(got, FOPS, MPI_INT64_T, NULL, FOPS,
				    MPI_INT64_T, 0, MPI_COMM_WORLD));
	}
	MT_CHECK(MPI_Barrier(MPI_COMM_WORLD));
	free(buf);
	free(own);
	free(acc);
	free(got);
}

int main(int argc, char **argv)
{
	uint8_t *base, *mem;
	MPI_Win win;

	mt_init(&argc, &argv, "rma", MPI_THREAD_SINGLE, NULL);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &nranks);
	next = (rank + 1) % nranks;
	prev = (rank + nranks - 1) % nranks;

	MT_CHECK(MPI_Win_allocate(WINSIZE, 1, MPI_INFO_NULL, MPI_COMM_WORLD,
				  &base, &win));
	MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN);
	memset(base, 0, WINSIZE);
	fence_epochs(win, base, "MPI_Win_allocate");
	lock_epochs(win, base, "MPI_Win_allocate");
	MT_CHECK(MPI_Win_free(&win));

	MT_CHECK(MPI_Alloc_mem(WINSIZE, MPI_INFO_NULL, &mem));
	memset(mem, 0, WINSIZE);
	MT_CHECK(MPI_Win_create(mem, WINSIZE, 1, MPI_INFO_NULL, MPI_COMM_WORLD,
				&win));
	MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN);
	fence_epochs(win, mem, "MPI_Win_create");
	lock_epochs(win, mem, "MPI_Win_create");
	MT_CHECK(MPI_Win_free(&win));
	MT_CHECK(MPI_Free_mem(mem));

	MT_CHECK(MPI_Barrier(MPI_COMM_WORLD));
	if (rank == 0)
		printf("rma: %d ranks, put/get 8 B to %d B, accumulate and "
		       "fetch-and-op, fences and locks: all checked\n", nranks,
		       PUTMAX);
	MPI_Finalize();
	return 0;
}
