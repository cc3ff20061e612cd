/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Collective reductions, every element checked against the value computed
 * here: MPI_Allreduce with MPI_SUM and MPI_MAX over 64-bit integers and
 * MPI_SUM over doubles holding exact small integers, for counts from 1 to
 * 256 Ki elements (2 MiB), in place and not; MPI_Iallreduce; MPI_Reduce
 * to each root in turn and MPI_Bcast of the result.  Exit status 0 only
 * when every element is right.
 */
#include "mpitest.h"

static const int counts[] = { 1, 3, 64, 1000, 4097, 65536, 262144 };
#define NCOUNTS (int)(sizeof(counts) / sizeof(counts[0]))

static int rank, nranks;

static long long val(int r, int i, int round)
{
	return (long long)r * 1000003 + (long long)i * 7 + round;
}

static long long maxval(int r, int i, int round)
{
	return (long long)((i * 31 + r * 17 + round) % 1009) - 500;
}

static void check_sum(const long long *v, int n, int round, const char *what)
{
	for (int i = 0; i < n; i++) {
		long long want = 0;

		for (int r = 0; r < nranks; r++)
			want += val(r, i, round);
		if (v[i] != want)
			mt_fail("%s of %d: element %d is %lld, expected %lld",
				what, n, i, v[i], want);
	}
}

int main(int argc, char **argv)
{
	int maxn = counts[NCOUNTS - 1];
	long long *a, *b;
	double *d, *e;

	mt_init(&argc, &argv, "allreduce", MPI_THREAD_SINGLE, NULL);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &nranks);
	a = malloc(maxn * sizeof(*a));
	b = malloc(maxn * sizeof(*b));
	d = malloc(maxn * sizeof(*d));
	e = malloc(maxn * sizeof(*e));
	if (!a || !b || !d || !e)
		mt_fail("out of memory");

	for (int c = 0; c < NCOUNTS; c++) {
		int n = counts[c];

		for (int round = 0; round < 3; round++) {
			MPI_Request rq;

			/* SUM, out of place */
			for (int i = 0; i < n; i++)
				a[i] = val(rank, i, round);
			memset(b, 0, n * sizeof(*b));
			MT_CHECK(MPI_Allreduce(a, b, n, MPI_LONG_LONG, MPI_SUM,
					       MPI_COMM_WORLD));
			check_sum(b, n, round, "MPI_Allreduce SUM");
			/* the send buffer is not written */
			for (int i = 0; i < n; i++)
				if (a[i] != val(rank, i, round))
					mt_fail("MPI_Allreduce wrote its send "
						"buffer at %d", i);

			/* SUM, in place */
			MT_CHECK(MPI_Allreduce(MPI_IN_PLACE, a, n, MPI_LONG_LONG,
					       MPI_SUM, MPI_COMM_WORLD));
			check_sum(a, n, round, "MPI_Allreduce SUM in place");

			/* MAX */
			for (int i = 0; i < n; i++)
				a[i] = maxval(rank, i, round);
			MT_CHECK(MPI_Allreduce(a, b, n, MPI_LONG_LONG, MPI_MAX,
					       MPI_COMM_WORLD));
			for (int i = 0; i < n; i++) {
				long long want = maxval(0, i, round);

				for (int r = 1; r < nranks; r++)
					if (maxval(r, i, round) > want)
						want = maxval(r, i, round);
				if (b[i] != want)
					mt_fail("MPI_Allreduce MAX of %d: element "
						"%d is %lld, expected %lld", n,
						i, b[i], want);
			}

			/* doubles holding small integers add up exactly */
			for (int i = 0; i < n; i++)
				d[i] = (double)(rank + 1) * (i % 1000) + round;
			MT_CHECK(MPI_Iallreduce(d, e, n, MPI_DOUBLE, MPI_SUM,
						MPI_COMM_WORLD, &rq));
			MT_CHECK(MPI_Wait(&rq, MPI_STATUS_IGNORE));
			for (int i = 0; i < n; i++) {
				double want = (double)nranks * (nranks + 1) / 2 *
					(i % 1000) + (double)nranks * round;

				if (e[i] != want)
					mt_fail("MPI_Iallreduce SUM of %d doubles: "
						"element %d is %.17g, expected "
						"%.17g", n, i, e[i], want);
			}
		}

		/* MPI_Reduce to each root, then MPI_Bcast from it */
		for (int root = 0; root < nranks; root++) {
			for (int i = 0; i < n; i++)
				a[i] = val(rank, i, root);
			memset(b, 0, n * sizeof(*b));
			MT_CHECK(MPI_Reduce(a, b, n, MPI_LONG_LONG, MPI_SUM, root,
					    MPI_COMM_WORLD));
			MT_CHECK(MPI_Bcast(b, n, MPI_LONG_LONG, root,
					   MPI_COMM_WORLD));
			check_sum(b, n, root, "MPI_Reduce+MPI_Bcast");
		}
	}
	MT_CHECK(MPI_Barrier(MPI_COMM_WORLD));
	if (rank == 0)
		printf("allreduce: %d ranks, counts 1 to %d: all results "
		       "right\n", nranks, maxn);
	free(a);
	free(b);
	free(d);
	free(e);
	MPI_Finalize();
	return 0;
}
