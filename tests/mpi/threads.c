/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * MPI_THREAD_MULTIPLE: several threads of every rank exchange tagged
 * messages with every other rank at once, each thread on its own tag.
 * Every message carries (sender, thread, sequence number) and a payload
 * whose bytes depend on them; sizes cycle from 8 B to 1 MiB.
 *   phase 1: each thread posts its receives from each peer in order;
 *     MPI's ordering of one (sender, tag) makes the k-th receive hold the
 *     k-th message, so a lost, doubled or reordered message is found;
 *   phase 2: each thread receives with MPI_ANY_SOURCE on its own tag and
 *     must see from each peer each sequence number once, in order;
 *   phase 3: the threads of each rank probe (MPI_Improbe/MPI_Mrecv) for
 *     any message on their tag.
 * Fails when MPI_Init_thread does not provide MPI_THREAD_MULTIPLE.  Exit
 * status 0 only when every message arrived once, intact.
 */
#include <pthread.h>

#include "mpitest.h"

#define NTHREADS 4
#define NMSG 40
#define HDR 16

static const size_t sizes[] = { 8 + HDR, 200, 5000, 70000, 1048576, 33 };
#define NSIZES (sizeof(sizes) / sizeof(sizes[0]))

static int rank, nranks;

static size_t msg_len(int seq, int phase)
{
	return sizes[(seq + phase) % NSIZES];
}

static uint64_t msg_seed(int from, int to, int th, int seq, int phase)
{
	return mt_seed(phase * 64 + th, from, to, seq);
}

static void make_msg(uint8_t *p, int to, int th, int seq, int phase)
{
	size_t len = msg_len(seq, phase);
	int32_t h[4] = { rank, th, seq, phase };

	memcpy(p, h, HDR);
	mt_fill(p + HDR, len - HDR, msg_seed(rank, to, th, seq, phase));
}

/* the sender of a message that came; checks it all */
static void check_msg(const uint8_t *p, int count, int from, int th,
		      int seq, int phase)
{
	int32_t h[4];
	size_t len;
	long bad;

	memcpy(h, p, HDR);
	if (from >= 0 && h[0] != from)
		mt_fail("thread %d phase %d: message from rank %d says it is "
			"from %d", th, phase, from, h[0]);
	from = h[0];
	if (h[1] != th || h[3] != phase)
		mt_fail("thread %d phase %d: message of thread %d phase %d "
			"from rank %d", th, phase, h[1], h[3], from);
	if (h[2] != seq)
		mt_fail("thread %d phase %d: from rank %d came message %d, "
			"expected %d (lost, doubled or out of order)", th,
			phase, from, h[2], seq);
	len = msg_len(seq, phase);
	if ((size_t)count != len)
		mt_fail("thread %d phase %d: message %d from %d has %d B, "
			"expected %zu", th, phase, seq, from, count, len);
	bad = mt_verify(p + HDR, len - HDR,
			msg_seed(from, rank, th, seq, phase));
	if (bad >= 0)
		mt_fail("thread %d phase %d: message %d from %d: wrong byte at "
			"offset %ld", th, phase, seq, from, bad + HDR);
}

static uint8_t **alloc_msgs(int n)
{
	uint8_t **v = calloc(n, sizeof(*v));

	for (int i = 0; v && i < n; i++)
		if (!(v[i] = malloc(sizes[4])))
			return NULL;
	if (!v)
		mt_fail("out of memory");
	return v;
}

static void free_msgs(uint8_t **v, int n)
{
	for (int i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

/* sends of NMSG messages to every peer, on this thread's tag */
static void post_sends(uint8_t **sb, MPI_Request *rq, int th, int phase,
		       int tag)
{
	int k = 0;

	for (int seq = 0; seq < NMSG; seq++)
		for (int p = 0; p < nranks; p++) {
			if (p == rank)
				continue;
			make_msg(sb[k], p, th, seq, phase);
			MT_CHECK(MPI_Isend(sb[k], (int)msg_len(seq, phase),
					   MPI_BYTE, p, tag, MPI_COMM_WORLD,
					   &rq[k]));
			k++;
		}
}

static void *thread_main(void *arg)
{
	int th = (int)(intptr_t)arg;
	int n = NMSG * (nranks - 1);
	uint8_t **sb = alloc_msgs(n), **rb = alloc_msgs(n);
	MPI_Request *srq = malloc(n * sizeof(*srq));
	MPI_Request *rrq = malloc(n * sizeof(*rrq));
	MPI_Status *st = malloc(n * sizeof(*st));
	int *next = calloc(nranks, sizeof(int));

	if (!sb || !rb || !srq || !rrq || !st || !next)
		mt_fail("out of memory");

	/* phase 1: receives by source, posted before the sends */
	{
		int k = 0;

		for (int seq = 0; seq < NMSG; seq++)
			for (int p = 0; p < nranks; p++) {
				if (p == rank)
					continue;
				MT_CHECK(MPI_Irecv(rb[k], (int)sizes[4], MPI_BYTE,
						   p, th, MPI_COMM_WORLD,
						   &rrq[k]));
				k++;
			}
		post_sends(sb, srq, th, 1, th);
		MT_CHECK(MPI_Waitall(n, rrq, st));
		k = 0;
		for (int seq = 0; seq < NMSG; seq++)
			for (int p = 0; p < nranks; p++) {
				int count;

				if (p == rank)
					continue;
				MT_CHECK(MPI_Get_count(&st[k], MPI_BYTE, &count));
				if (st[k].MPI_SOURCE != p || st[k].MPI_TAG != th)
					mt_fail("thread %d: status source %d "
						"tag %d, expected %d, %d", th,
						st[k].MPI_SOURCE, st[k].MPI_TAG,
						p, th);
				check_msg(rb[k], count, p, th, seq, 1);
				k++;
			}
		MT_CHECK(MPI_Waitall(n, srq, MPI_STATUSES_IGNORE));
	}

	/* phase 2: any source, on a tag of this thread's */
	post_sends(sb, srq, th, 2, 100 + th);
	for (int i = 0; i < n; i++) {
		MPI_Status s;
		int count;

		MT_CHECK(MPI_Recv(rb[0], (int)sizes[4], MPI_BYTE, MPI_ANY_SOURCE,
				  100 + th, MPI_COMM_WORLD, &s));
		MT_CHECK(MPI_Get_count(&s, MPI_BYTE, &count));
		if (s.MPI_SOURCE < 0 || s.MPI_SOURCE >= nranks ||
		    s.MPI_SOURCE == rank)
			mt_fail("thread %d: any-source receive from rank %d", th,
				s.MPI_SOURCE);
		check_msg(rb[0], count, s.MPI_SOURCE, th,
			  next[s.MPI_SOURCE]++, 2);
	}
	for (int p = 0; p < nranks; p++)
		if (p != rank && next[p] != NMSG)
			mt_fail("thread %d: %d messages from rank %d, expected "
				"%d", th, next[p], p, NMSG);
	MT_CHECK(MPI_Waitall(n, srq, MPI_STATUSES_IGNORE));

	/* phase 3: matched probe and receive */
	memset(next, 0, nranks * sizeof(int));
	post_sends(sb, srq, th, 3, 200 + th);
	for (int i = 0; i < n;) {
		MPI_Message m;
		MPI_Status s;
		int flag = 0, count;

		MT_CHECK(MPI_Improbe(MPI_ANY_SOURCE, 200 + th, MPI_COMM_WORLD,
				     &flag, &m, &s));
		if (!flag)
			continue;
		MT_CHECK(MPI_Get_count(&s, MPI_BYTE, &count));
		MT_CHECK(MPI_Mrecv(rb[0], count, MPI_BYTE, &m, &s));
		check_msg(rb[0], count, s.MPI_SOURCE, th, next[s.MPI_SOURCE]++,
			  3);
		i++;
	}
	MT_CHECK(MPI_Waitall(n, srq, MPI_STATUSES_IGNORE));

	free_msgs(sb, n);
	free_msgs(rb, n);
	free(srq);
	free(rrq);
	free(st);
	free(next);
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t t[NTHREADS];
	int provided;

	mt_init(&argc, &argv, "threads", MPI_THREAD_MULTIPLE, &provided);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &nranks);
	if (provided != MPI_THREAD_MULTIPLE)
		mt_fail("MPI_Init_thread provides thread level %d, not "
			"MPI_THREAD_MULTIPLE (%d)", provided,
			MPI_THREAD_MULTIPLE);
	if (nranks < 2)
		mt_fail("needs two ranks or more");
	for (int i = 0; i < NTHREADS; i++)
		if (pthread_create(&t[i], NULL, thread_main, (void *)(intptr_t)i))
			mt_fail("pthread_create failed");
	for (int i = 0; i < NTHREADS; i++)
		pthread_join(t[i], NULL);
	MT_CHECK(MPI_Barrier(MPI_COMM_WORLD));
	if (rank == 0)
		printf("threads: %d ranks x %d threads, %d messages per thread "
		       "and peer in 3 phases: none lost, doubled or wrong\n",
		       nranks, NTHREADS, NMSG);
	MPI_Finalize();
	return 0;
}
