/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * shm: messages whose sends completed survive their sender closing.
 *
 * A receiver with a small peer table (FI_SHM_MAX_PEERS=8) takes messages
 * from waves of sender processes.  Each sender sends COUNT tagged messages,
 * waits for their completions, closes everything and exits.  In a "quiet"
 * wave the receiver does not look at its queue until every sender of the
 * wave has exited; the next "busy" wave starts right away, so its senders
 * want peer entries whose previous holders' messages are still queued.
 * Every message must arrive exactly once, intact, with FI_SOURCE naming
 * its own sender.
 *
 * Uses only the public API.  Usage: sender_close SIZE (receiver), or
 * sender_close -s RECEIVER INDEX SIZE (a sender, started by the receiver).
 * Exit 0 pass, 77 no shm, 1 fail.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_tagged.h>

#include "shm_fix.h"

#define COUNT 3
#define WAVE 6
#define ROUNDS 3
#define NSEND (ROUNDS * 2 * WAVE)
#define SPINS 200000000L

/* The endpoint every process of this test opens. */
static int open_fix(struct shm_fix *f, const char *name)
{
	return shm_fix_open(f, FI_SOURCE, 1024, NSEND + 1, name);
}

static uint8_t pattern(int idx, int k, size_t j)
{
	return (uint8_t)(idx * 131 + k * 7 + j);
}

static void sender_name(char *buf, size_t len, int idx)
{
	snprintf(buf, len, "fi_shm://close-test.%d.%d", (int)getppid(), idx);
}

/* A sender: COUNT messages, their completions, close, exit. */
static int sender(const char *receiver, int idx, size_t size)
{
	struct fi_cq_tagged_entry e;
	char name[FI_NAME_MAX];
	fi_addr_t dest;
	struct shm_fix f;
	uint8_t *buf;
	long spins = 0;
	int k, done = 0, ret;
	size_t j;

	sender_name(name, sizeof(name), idx);
	CHECK(open_fix(&f, name));
	if (fi_av_insert(f.av, receiver, 1, &dest, 0, NULL) != 1)
		return 1;
	buf = malloc(size * COUNT);
	for (k = 0; k < COUNT; k++) {
		for (j = 0; j < size; j++)
			buf[k * size + j] = pattern(idx, k, j);
		while ((ret = (int)fi_tsend(f.ep, buf + k * size, size, NULL,
					    dest, (uint64_t)idx << 8 | k,
					    NULL)) == -FI_EAGAIN) {
			fi_cq_read(f.cq, &e, 1);
			if (++spins > SPINS)
				break;
		}
		CHECK(ret);
	}
	while (done < COUNT && spins++ < SPINS) {
		ret = (int)fi_cq_read(f.cq, &e, 1);
		if (ret == 1)
			done++;
		else if (ret != -FI_EAGAIN)
			return 2;
	}
	if (done != COUNT)
		return 3;
	shm_fix_close(&f);
	free(buf);
	return 0;
}

struct rx {
	struct shm_fix f;
	fi_addr_t addr[NSEND];
	uint8_t *buf;
	size_t size;
	int seen[NSEND][COUNT];
	int got;
};

/* Take the completions there are; -1 on a wrong one. */
static int harvest(struct rx *r)
{
	struct fi_cq_tagged_entry e;
	fi_addr_t src;
	int idx, k, ret;
	size_t j;

	for (;;) {
		ret = (int)fi_cq_readfrom(r->f.cq, &e, 1, &src);
		if (ret == -FI_EAGAIN)
			return 0;
		if (ret != 1) {
			fprintf(stderr, "fi_cq_readfrom: %s\n",
				fi_strerror(-ret));
			return -1;
		}
		idx = (int)(e.tag >> 8);
		k = (int)(e.tag & 0xff);
		if (idx >= NSEND || k >= COUNT || e.len != r->size ||
		    r->seen[idx][k]) {
			fprintf(stderr, "bad or repeated message tag %#llx "
				"len %zu\n", (unsigned long long)e.tag, e.len);
			return -1;
		}
		for (j = 0; j < r->size; j++) {
			if (((uint8_t *)e.buf)[j] != pattern(idx, k, j)) {
				fprintf(stderr, "message %d.%d: byte %zu "
					"differs\n", idx, k, j);
				return -1;
			}
		}
		if (src != r->addr[idx]) {
			fprintf(stderr, "message of sender %d reported from "
				"fi_addr %lld, expected %lld\n", idx,
				(long long)src, (long long)r->addr[idx]);
			return -1;
		}
		r->seen[idx][k] = 1;
		r->got++;
	}
}

/* Senders still running, stopped by their PIDs if the receiver fails. */
static pid_t live[WAVE * 2];

static void stop_senders(void)
{
	size_t i;

	for (i = 0; i < WAVE * 2; i++) {
		if (live[i] > 0 && waitpid(live[i], NULL, WNOHANG) == 0) {
			kill(live[i], SIGKILL);
			waitpid(live[i], NULL, 0);
		}
	}
}

static pid_t spawn(const char *self, const char *receiver, int idx,
		   size_t size)
{
	char sidx[16], ssize[32];
	pid_t pid;

	snprintf(sidx, sizeof(sidx), "%d", idx);
	snprintf(ssize, sizeof(ssize), "%zu", size);
	pid = fork();
	if (!pid) {
		execl(self, "sender_close", "-s", receiver, sidx, ssize,
		      (char *)NULL);
		_exit(127);
	}
	live[idx % (WAVE * 2)] = pid;
	return pid;
}

/* Reap one sender; it must have exited 0. */
static int reap(pid_t pid)
{
	int status;

	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
	    WEXITSTATUS(status)) {
		fprintf(stderr, "sender %d ended with status %#x\n", (int)pid,
			status);
		return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	char name[FI_NAME_MAX], self[4096];
	pid_t pids[WAVE];
	struct rx *r;
	size_t len;
	long spins;
	int i, w, round, ret, next = 0;

	if (argc == 5 && !strcmp(argv[1], "-s")) {
		alarm(60);
		return sender(argv[2], atoi(argv[3]), strtoul(argv[4], NULL, 0));
	}
	alarm(120);
	ret = (int)readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (ret <= 0)
		return 1;
	self[ret] = '\0';
	/* Few peer entries, so that waves of senders reuse them; room for
	 * a quiet wave's messages without the receiver reading its queue. */
	setenv("FI_SHM_MAX_PEERS", "8", 1);
	setenv("FI_SHM_BOUNCE_COUNT", "64", 1);
	atexit(stop_senders);
	r = calloc(1, sizeof(*r));
	r->size = argc > 1 ? strtoul(argv[1], NULL, 0) : 100;
	ret = open_fix(&r->f, NULL);
	if (ret) {
		fprintf(stderr, "no shm provider: %s\n", fi_strerror(-ret));
		return 77;
	}
	len = sizeof(name);
	CHECK(fi_getname(&r->f.ep->fid, name, &len));
	for (i = 0; i < NSEND; i++) {
		char sname[FI_NAME_MAX];

		snprintf(sname, sizeof(sname), "fi_shm://close-test.%d.%d",
			 (int)getpid(), i);
		if (fi_av_insert(r->f.av, sname, 1, &r->addr[i], 0, NULL) != 1)
			return 1;
	}
	r->buf = malloc(r->size * NSEND * COUNT);
	for (i = 0; i < NSEND * COUNT; i++)
		CHECK(fi_trecv(r->f.ep, r->buf + (size_t)i * r->size, r->size,
			       NULL, FI_ADDR_UNSPEC, 0, ~0ULL, NULL));

	for (round = 0; round < ROUNDS; round++) {
		/* Quiet wave: nobody reads the queue until they are gone. */
		for (w = 0; w < WAVE; w++)
			pids[w] = spawn(self, name, next++, r->size);
		for (w = 0; w < WAVE; w++)
			if (reap(pids[w]))
				return 1;
		/* Busy wave: the quiet wave's messages are still queued. */
		for (w = 0; w < WAVE; w++)
			pids[w] = spawn(self, name, next++, r->size);
		for (w = 0; w < WAVE; w++) {
			int status;

			while ((ret = waitpid(pids[w], &status, WNOHANG)) == 0)
				if (harvest(r) < 0)
					return 1;
			if (ret != pids[w] || !WIFEXITED(status) ||
			    WEXITSTATUS(status)) {
				fprintf(stderr, "sender %d ended with status "
					"%#x\n", (int)pids[w], status);
				return 1;
			}
		}
		for (spins = 0; r->got < next * COUNT && spins < SPINS / 10;
		     spins++)
			if (harvest(r) < 0)
				return 1;
		if (r->got != next * COUNT) {
			fprintf(stderr, "round %d: received %d of %d messages "
				"of %zu bytes\n", round, r->got, next * COUNT,
				r->size);
			return 1;
		}
	}
	printf("%d messages of %zu bytes from %d closing senders: each once, "
	       "intact, from its sender\n", NSEND * COUNT, r->size, NSEND);
	shm_fix_close(&r->f);
	free(r->buf);
	free(r);
	return 0;
}
