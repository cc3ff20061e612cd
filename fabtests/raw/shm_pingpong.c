// SPDX-License-Identifier: BSD-2-Clause
/*
 * fi_raw_shm_pingpong: the machine's shared-memory limit for the pingpong
 * tests.  One invocation forks a peer; the two processes share an
 * anonymous mapping holding each side's message buffer, each next to a
 * sequence number on its own cache line.  A transfer is one copy: the
 * sender's message already lies in the shared mapping (as an application
 * buffer that a single-copy transport such as CMA reads in place), the
 * sender publishes it with a release store of the sequence number, and
 * the peer busy-polls with acquire loads and copies the message into its
 * own buffer, from which it sends the reply the same way.  No library can
 * move a message between two processes with less: a copy into a shared
 * buffer and another out of it would be two.  At 64 bytes and below this
 * is a cache-line pingpong.  Run it without a server address.
 */
#include <signal.h>
#include <stdalign.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ft.h"

static const struct ft_prog prog = {
	.name = "fi_raw_shm_pingpong",
	.summary = "latency of round trips through a shared mapping between two processes",
	.ep_type = FI_EP_MSG,
	.iters = 1000,
	.window = 1,
	.sizes = "all",
};

struct chan {
	alignas(64) _Atomic uint64_t seq;
	alignas(64) char data[];
};

/* req: the initiator's message, rep: the peer's; each side's own buffer
 * is the one it sends from, and it copies the other's into it. */
static struct chan *req, *rep;
static bool child;
static pid_t parent;

static int wait_seq(struct chan *c, uint64_t want)
{
	unsigned spin = 0;
	double last = 0;

	while (atomic_load_explicit(&c->seq, memory_order_acquire) != want) {
		if (++spin & 1023)
			continue;
		if (!last)
			last = ft_now();
		else if (ft_now() - last > ft.opts.timeout) {
			ft_err("%s: peer silent for %d s", child ? "peer" :
			       "initiator", ft.opts.timeout);
			return -FI_ETIMEDOUT;
		}
		if (child && getppid() != parent) {
			ft_err("peer: the initiator exited");
			return -FI_EIO;
		}
	}
	return 0;
}

static int pp_run(size_t size, int count, uint64_t base)
{
	uint64_t j;
	int i, ret;

	for (i = 0; i < count; i++) {
		j = base + i + 1;
		if (!child) {
			if (ft.opts.verify)
				ft_fill(req->data, size, j);
			atomic_store_explicit(&req->seq, j, memory_order_release);
			ret = wait_seq(rep, j);
			if (ret)
				return ret;
			memcpy(req->data, rep->data, size);
			if (ft.opts.verify) {
				ret = ft_check(req->data, size, j ^ 0x5a5a,
					       "reply");
				if (ret)
					return ret;
			}
		} else {
			ret = wait_seq(req, j);
			if (ret)
				return ret;
			memcpy(rep->data, req->data, size);
			if (ft.opts.verify) {
				ret = ft_check(rep->data, size, j, "request");
				if (ret)
					return ret;
				ft_fill(rep->data, size, j ^ 0x5a5a);
			}
			atomic_store_explicit(&rep->seq, j, memory_order_release);
		}
	}
	return 0;
}

static uint64_t seq;

static int run(size_t size, int iters, double *secs)
{
	return ft_timed(pp_run, size, iters, &seq, false, secs);
}

/* The peer runs the same sizes without printing. */
static int peer(void)
{
	double secs;
	int i, ret = 0;

	for (i = 0; i < ft.opts.nsizes && !ret; i++)
		ret = run(ft.opts.sizes[i], ft_iters_for(ft.opts.sizes[i]),
			  &secs);
	return ret;
}

int main(int argc, char **argv)
{
	size_t max = 0, chan_size, len;
	int i, ret, status;
	pid_t pid;
	char *map;

	ft_parse(argc, argv, &prog);
	ft.label = "raw_shm";
	if (ft.opts.dst_addr) {
		ft_err("runs alone: it forks its peer (no server address)");
		return 2;
	}
	for (i = 0; i < ft.opts.nsizes; i++)
		if (ft.opts.sizes[i] > max)
			max = ft.opts.sizes[i];
	chan_size = (sizeof(struct chan) + max + 4095) & ~(size_t)4095;
	len = 2 * chan_size;
	map = mmap(NULL, len, PROT_READ | PROT_WRITE,
		   MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (map == MAP_FAILED) {
		ft_err("mmap of %zu bytes failed", len);
		return 1;
	}
	req = (struct chan *)map;
	rep = (struct chan *)(map + chan_size);

	fflush(stdout);
	parent = getpid();
	pid = fork();
	if (pid < 0) {
		ft_err("fork failed");
		return 1;
	}
	if (!pid) {
		child = true;
		_exit(peer() ? 1 : 0);
	}
	ret = ft_run_sizes(run, 2);
	if (ret)
		kill(pid, SIGTERM);
	if (waitpid(pid, &status, 0) == pid && !ret &&
	    !(WIFEXITED(status) && !WEXITSTATUS(status))) {
		ft_err("the peer process failed");
		ret = -FI_EIO;
	}
	munmap(map, len);
	return ft_exit(ret);
}
