/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Personalised all-to-all exchange, every byte checked: MPI_Alltoall with
 * 1 B to 256 KiB per pair of ranks, MPI_Alltoallv with a different count
 * for every (sender, receiver) pair (zero for some), and MPI_Ialltoall.
 * Each block's bytes depend on its sender, its receiver and the round,
 * so a block that lands in the wrong place is found.  Exit status 0 only
 * when every byte is right.
 */
#include "mpitest.h"

static const int blocks[] = { 1, 8, 100, 4096, 65536, 262144 };
#define NBLOCKS (int)(sizeof(blocks) / sizeof(blocks[0]))

static int rank, nranks;

static void check_block(const uint8_t *p, int len, int from, int round,
			const char *what)
{
	long bad = mt_verify(p, len, mt_seed(round, from, rank, len));

	if (bad >= 0)
		mt_fail("%s: block of %d B from rank %d, round %d: wrong byte "
			"at offset %ld", what, len, from, round, bad);
}

/* how much rank s sends to rank r in MPI_Alltoallv */
static int vcount(int s, int r, int round)
{
	return ((s * 3 + r * 5 + round) % 4) * 33333;
}

int main(int argc, char **argv)
{
	size_t max;
	uint8_t *sb, *rb;
	int *sc, *sd, *rc, *rd;

	mt_init(&argc, &argv, "alltoall", MPI_THREAD_SINGLE, NULL);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &nranks);
	max = (size_t)nranks * blocks[NBLOCKS - 1];
	if (max < (size_t)nranks * 3 * 33333)
		max = (size_t)nranks * 3 * 33333;
	sb = malloc(max);
	rb = malloc(max + 64);
	sc = malloc(4 * nranks * sizeof(int));
	if (!sb || !rb || !sc)
		mt_fail("out of memory");
	sd = sc + nranks;
	rc = sd + nranks;
	rd = rc + nranks;

	for (int b = 0; b < NBLOCKS; b++) {
		int len = blocks[b];

		for (int round = 0; round < 4; round++) {
			MPI_Request rq;

			for (int r = 0; r < nranks; r++)
				mt_fill(sb + (size_t)r * len, len,
					mt_seed(round, rank, r, len));
			memset(rb, 0xa5, (size_t)nranks * len + 64);
			if (round % 2 == 0) {
				MT_CHECK(MPI_Alltoall(sb, len, MPI_BYTE, rb, len,
						      MPI_BYTE, MPI_COMM_WORLD));
			} else {
				MT_CHECK(MPI_Ialltoall(sb, len, MPI_BYTE, rb, len,
						       MPI_BYTE, MPI_COMM_WORLD,
						       &rq));
				MT_CHECK(MPI_Wait(&rq, MPI_STATUS_IGNORE));
			}
			for (int r = 0; r < nranks; r++)
				check_block(rb + (size_t)r * len, len, r, round,
					    round % 2 ? "MPI_Ialltoall" :
					    "MPI_Alltoall");
			for (int i = 0; i < 64; i++)
				if (rb[(size_t)nranks * len + i] != 0xa5)
					mt_fail("MPI_Alltoall wrote past the "
						"receive buffer");
		}
	}

	for (int round = 0; round < 4; round++) {
		int so = 0, ro = 0;

		for (int r = 0; r < nranks; r++) {
			sc[r] = vcount(rank, r, round);
			sd[r] = so;
			so += sc[r];
			rc[r] = vcount(r, rank, round);
			rd[r] = ro;
			ro += rc[r];
			mt_fill(sb + sd[r], sc[r],
				mt_seed(10 + round, rank, r, sc[r]));
		}
		memset(rb, 0xa5, ro + 64);
		MT_CHECK(MPI_Alltoallv(sb, sc, sd, MPI_BYTE, rb, rc, rd, MPI_BYTE,
				       MPI_COMM_WORLD));
		for (int r = 0; r < nranks; r++)
			check_block(rb + rd[r], rc[r], r, 10 + round,
				    "MPI_Alltoallv");
		for (int i = 0; i < 64; i++)
			if (rb[ro + i] != 0xa5)
				mt_fail("MPI_Alltoallv wrote past the receive "
					"buffer");
	}
	MT_CHECK(MPI_Barrier(MPI_COMM_WORLD));
	if (rank == 0)
		printf("alltoall: %d ranks, blocks 1 to %d B and alltoallv: all "
		       "data checked\n", nranks, blocks[NBLOCKS - 1]);
	free(sb);
	free(rb);
	free(sc);
	MPI_Finalize();
	return 0;
}
