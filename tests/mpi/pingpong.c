/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Point-to-point between pairs of ranks, every byte checked: rank r and
 * rank r + n/2 are a pair (with two ranks on each of two hosts, pairs
 * cross hosts).  Sizes from 0 to 4 MiB, so both eager and rendezvous
 * protocols of the transport are used:
 *   - blocking ping-pong, several rounds per size;
 *   - both sides sending and receiving at once (MPI_Isend/MPI_Irecv);
 *   - unexpected messages: eight sends of mixed sizes, received only
 *     after a barrier and in reverse tag order;
 *   - MPI_ANY_SOURCE/MPI_ANY_TAG receives naming the right sender.
 * The receive buffer has a guard zone after the message that must stay
 * untouched, and status (source, tag, count) is checked.
 *
 * pingpong -b: a measurement instead (two ranks): one-way latency of 8 B
 * and streaming bandwidth of 1 MiB messages, printed as
 *   lat8_us <value>
 *   bw1m_MBps <value>
 * Exit status 0 only when every check held.
 */
#include "mpitest.h"

#define GUARD 64
#define TAG_PP 1
#define TAG_X 2
#define TAG_U 100
#define TAG_ANY 200

static const size_t sizes[] = {
	0, 1, 8, 63, 64, 1000, 4096, 8192, 16383, 65536, 65537,
	262144, 1048576, 1048576 + 3, 4194304,
};
#define NSIZES (sizeof(sizes) / sizeof(sizes[0]))

static uint8_t *sbuf, *rbuf;
static int rank, nranks, peer;

static void recv_check(size_t len, uint64_t seed, int src, int tag,
		       const char *what)
{
	MPI_Status st;
	long bad;
	int count;

	memset(rbuf, 0xa5, len + GUARD);
	MT_CHECK(MPI_Recv(rbuf, (int)len + GUARD, MPI_BYTE, src, tag,
			  MPI_COMM_WORLD, &st));
	MT_CHECK(MPI_Get_count(&st, MPI_BYTE, &count));
	if ((size_t)count != len || st.MPI_SOURCE != peer ||
	    (tag != MPI_ANY_TAG && st.MPI_TAG != tag))
		mt_fail("%s %zu B: status count %d source %d tag %d, "
			"expected %zu from %d", what, len, count,
			st.MPI_SOURCE, st.MPI_TAG, len, peer);
	bad = mt_verify(rbuf, len, seed);
	if (bad >= 0)
		mt_fail("%s %zu B from %d: wrong byte at offset %ld "
			"(0x%02x, expected 0x%02x)", what, len, peer, bad,
			rbuf[bad], mt_byte(seed, (size_t)bad));
	for (size_t i = len; i < len + GUARD; i++)
		if (rbuf[i] != 0xa5)
			mt_fail("%s %zu B from %d: byte %zu past the message "
				"was written", what, len, peer, i);
}

static void pingpong(void)
{
	int first = rank < peer;

	for (size_t s = 0; s < NSIZES; s++) {
		size_t len = sizes[s];
		int rounds = len >= 1048576 ? 4 : 20;

		for (int r = 0; r < rounds; r++) {
			uint64_t out = mt_seed(1, len, r, rank);
			uint64_t in = mt_seed(1, len, r, peer);

			mt_fill(sbuf, len, out);
			if (first) {
				MT_CHECK(MPI_Send(sbuf, (int)len, MPI_BYTE, peer,
						  TAG_PP, MPI_COMM_WORLD));
				recv_check(len, in, peer, TAG_PP, "pingpong");
			} else {
				recv_check(len, in, peer, TAG_PP, "pingpong");
				MT_CHECK(MPI_Send(sbuf, (int)len, MPI_BYTE, peer,
						  TAG_PP, MPI_COMM_WORLD));
			}
		}
	}
}

static void exchange(void)
{
	for (size_t s = 0; s < NSIZES; s++) {
		size_t len = sizes[s];
		uint64_t in = mt_seed(2, len, 0, peer);
		MPI_Request rq[2];
		MPI_Status st[2];
		long bad;
		int count;

		mt_fill(sbuf, len, mt_seed(2, len, 0, rank));
		memset(rbuf, 0xa5, len + GUARD);
		MT_CHECK(MPI_Irecv(rbuf, (int)len + GUARD, MPI_BYTE, peer, TAG_X,
				   MPI_COMM_WORLD, &rq[0]));
		MT_CHECK(MPI_Isend(sbuf, (int)len, MPI_BYTE, peer, TAG_X,
				   MPI_COMM_WORLD, &rq[1]));
		MT_CHECK(MPI_Waitall(2, rq, st));
		MT_CHECK(MPI_Get_count(&st[0], MPI_BYTE, &count));
		if ((size_t)count != len)
			mt_fail("exchange %zu B: received %d B", len, count);
		bad = mt_verify(rbuf, len, in);
		if (bad >= 0)
			mt_fail("exchange %zu B: wrong byte at offset %ld",
				len, bad);
		for (size_t i = len; i < len + GUARD; i++)
			if (rbuf[i] != 0xa5)
				mt_fail("exchange %zu B: byte %zu past the "
					"message was written", len, i);
	}
}

/* Eight messages sent before any receive is posted, received in reverse
 * order of their tags: the transport must hold unexpected eager and
 * rendezvous messages alike. */
static void unexpected(void)
{
	static const size_t us[8] = { 1, 4096, 1048576, 0, 65536, 17,
				      2097152, 300000 };
	uint8_t *bufs[8];
	MPI_Request rq[8];

	for (int k = 0; k < 8; k++) {
		bufs[k] = malloc(us[k] + 1);
		if (!bufs[k])
			mt_fail("out of memory");
		mt_fill(bufs[k], us[k], mt_seed(3, k, us[k], rank));
		MT_CHECK(MPI_Isend(bufs[k], (int)us[k], MPI_BYTE, peer,
				   TAG_U + k, MPI_COMM_WORLD, &rq[k]));
	}
	MT_CHECK(MPI_Barrier(MPI_COMM_WORLD));
	for (int k = 7; k >= 0; k--)
		recv_check(us[k], mt_seed(3, k, us[k], peer), peer, TAG_U + k,
			   "unexpected");
	MT_CHECK(MPI_Waitall(8, rq, MPI_STATUSES_IGNORE));
	for (int k = 0; k < 8; k++)
		free(bufs[k]);
}

/* Wildcard receives: the sender and the tag come from the status. */
static void wildcard(void)
{
	for (int k = 0; k < 6; k++) {
		size_t len = k % 2 ? 1048576 : 100 * (size_t)k;
		uint64_t in = mt_seed(4, k, len, peer);
		MPI_Request rq;
		MPI_Status st;
		int count;
		long bad;

		mt_fill(sbuf, len, mt_seed(4, k, len, rank));
		MT_CHECK(MPI_Isend(sbuf, (int)len, MPI_BYTE, peer, TAG_ANY + k,
				   MPI_COMM_WORLD, &rq));
		memset(rbuf, 0xa5, len + GUARD);
		MT_CHECK(MPI_Recv(rbuf, (int)len + GUARD, MPI_BYTE,
				  MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD,
				  &st));
		MT_CHECK(MPI_Get_count(&st, MPI_BYTE, &count));
		if (st.MPI_SOURCE != peer || st.MPI_TAG != TAG_ANY + k ||
		    (size_t)count != len)
			mt_fail("wildcard %d: source %d tag %d count %d, "
				"expected %d, %d, %zu", k, st.MPI_SOURCE,
				st.MPI_TAG, count, peer, TAG_ANY + k, len);
		bad = mt_verify(rbuf, len, in);
		if (bad >= 0)
			mt_fail("wildcard %zu B: wrong byte at offset %ld",
				len, bad);
		MT_CHECK(MPI_Wait(&rq, MPI_STATUS_IGNORE));
		/* the next round's wildcard must not catch this one's */
		MT_CHECK(MPI_Barrier(MPI_COMM_WORLD));
	}
}

static void bench(void)
{
	const int warm = 1000, iters = 20000, window = 32, bwrounds = 40;
	const size_t big = 1048576;
	MPI_Request rq[32];
	double t0 = 0, lat, bw;
	char ack = 0;

	if (nranks != 2)
		mt_fail("-b wants two ranks, not %d", nranks);
	for (int i = 0; i < warm + iters; i++) {
		if (i == warm) {
			MT_CHECK(MPI_Barrier(MPI_COMM_WORLD));
			t0 = MPI_Wtime();
		}
		if (rank == 0) {
			MT_CHECK(MPI_Send(sbuf, 8, MPI_BYTE, 1, 1, MPI_COMM_WORLD));
			MT_CHECK(MPI_Recv(rbuf, 8, MPI_BYTE, 1, 1, MPI_COMM_WORLD,
					  MPI_STATUS_IGNORE));
		} else {
			MT_CHECK(MPI_Recv(rbuf, 8, MPI_BYTE, 0, 1, MPI_COMM_WORLD,
					  MPI_STATUS_IGNORE));
			MT_CHECK(MPI_Send(sbuf, 8, MPI_BYTE, 0, 1, MPI_COMM_WORLD));
		}
	}
	lat = (MPI_Wtime() - t0) * 1e6 / (2.0 * iters);
	/* rank 0 streams windows of 1 MiB sends; rank 1 acknowledges each
	 * window with one byte */
	for (int r = 0; r < 4 + bwrounds; r++) {
		if (r == 4) {
			MT_CHECK(MPI_Barrier(MPI_COMM_WORLD));
			t0 = MPI_Wtime();
		}
		for (int w = 0; w < window; w++) {
			if (rank == 0)
				MT_CHECK(MPI_Isend(sbuf, (int)big, MPI_BYTE, 1, 2,
						   MPI_COMM_WORLD, &rq[w]));
			else
				MT_CHECK(MPI_Irecv(rbuf, (int)big, MPI_BYTE, 0, 2,
						   MPI_COMM_WORLD, &rq[w]));
		}
		MT_CHECK(MPI_Waitall(window, rq, MPI_STATUSES_IGNORE));
		if (rank == 0)
			MT_CHECK(MPI_Recv(&ack, 1, MPI_BYTE, 1, 3, MPI_COMM_WORLD,
					  MPI_STATUS_IGNORE));
		else
			MT_CHECK(MPI_Send(&ack, 1, MPI_BYTE, 0, 3, MPI_COMM_WORLD));
	}
	bw = (double)big * window * bwrounds / (MPI_Wtime() - t0) / 1e6;
	if (rank == 0) {
		printf("lat8_us %.2f\nbw1m_MBps %.0f\n", lat, bw);
		fflush(stdout);
	}
}

int main(int argc, char **argv)
{
	int do_bench = argc > 1 && !strcmp(argv[1], "-b");
	size_t max = sizes[NSIZES - 1] + GUARD;

	mt_init(&argc, &argv, "pingpong", MPI_THREAD_SINGLE, NULL);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &nranks);
	if (nranks % 2)
		mt_fail("needs an even number of ranks, not %d", nranks);
	peer = (rank + nranks / 2) % nranks;
	sbuf = malloc(max);
	rbuf = malloc(max);
	if (!sbuf || !rbuf)
		mt_fail("out of memory");
	if (do_bench) {
		memset(sbuf, 1, max);
		bench();
	} else {
		pingpong();
		exchange();
		unexpected();
		wildcard();
		MT_CHECK(MPI_Barrier(MPI_COMM_WORLD));
		if (rank == 0)
			printf("pingpong: %d ranks, %zu sizes up to %zu B: "
			       "all data checked\n", nranks, NSIZES,
			       sizes[NSIZES - 1]);
	}
	free(sbuf);
	free(rbuf);
	MPI_Finalize();
	return 0;
}
