/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * fi_mt_fanout: threads of one process sending large tagged messages
 * through one shared FI_THREAD_SAFE endpoint, each to a peer process of
 * its own, while the peers receive one message at a time (the shape of
 * an MPI program whose threads call MPI_Send concurrently).
 *
 * The sender forks -n receivers, then opens one RDM endpoint and one CQ
 * that its -n threads share.  For every size from 4 bytes to -S
 * (doubling), the threads meet at a barrier and thread i sends -I
 * messages to receiver i, each waited for before the next (the thread
 * reads the shared CQ until its own completion has been seen, by itself
 * or by another thread).  A receiver posts one receive at a time, busy
 * polls for it and checks every byte.  With -c K every process and
 * thread is bound to the first K CPUs, so the peers compete for them as
 * they do on a host running more ranks and threads than it has cores.
 *
 * It prints, per size, the average time of one send in thread 0, and
 * the whole run's wall time; timings are never pass/fail.  Only the
 * public API is used: any libfabric.so.1 on the library path serves.
 *
 * Exit status: 0 passed, 77 provider or capabilities missing, 1 failed
 * (a message missing or wrong, a wait past -T seconds), 2 usage.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_tagged.h>

#define NAME_MAX_LEN 256
#define MAX_PEERS 64

static const char *opt_prov = "shm";
static int opt_n = 3;
static size_t opt_max = 2u << 20;
static int opt_iters = 200;
static int opt_timeout = 120;
static int opt_cpus;

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t deadline_ns(void)
{
	return now_ns() + (uint64_t)opt_timeout * 1000000000u;
}

static void print_err(const char *who, const char *what, int ret)
{
	fprintf(stderr, "%s: %s: %s (%d)\n", who, what, fi_strerror(-ret), ret);
}

/* The byte at offset k of message j of a size. */
static inline uint8_t pattern(size_t k, int j, size_t size)
{
	return (uint8_t)(k * 7 + (size_t)j * 13 + size);
}

static void bind_cpus(void)
{
	cpu_set_t set;

	if (!opt_cpus)
		return;
	CPU_ZERO(&set);
	for (int i = 0; i < opt_cpus; i++)
		CPU_SET(i, &set);
	/* Best effort: without it the run is merely less crowded. */
	(void)sched_setaffinity(0, sizeof(set), &set);
}

static int pipe_io(int fd, void *buf, size_t len, int out)
{
	char *p = buf;
	uint64_t end = deadline_ns();

	while (len) {
		struct pollfd pfd = { .fd = fd, .events = out ? POLLOUT : POLLIN };
		uint64_t now = now_ns();
		ssize_t r;

		if (now >= end)
			return -1;
		if (poll(&pfd, 1, (int)((end - now) / 1000000u) + 1) <= 0)
			continue;
		r = out ? write(fd, p, len) : read(fd, p, len);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return -1;
		p += r;
		len -= (size_t)r;
	}
	return 0;
}

struct res {
	struct fi_info *info;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_cq *cq;
	struct fid_av *av;
	struct fid_ep *ep;
};

static void res_close(struct res *r)
{
	if (r->ep)
		fi_close(&r->ep->fid);
	if (r->av)
		fi_close(&r->av->fid);
	if (r->cq)
		fi_close(&r->cq->fid);
	if (r->domain)
		fi_close(&r->domain->fid);
	if (r->fabric)
		fi_close(&r->fabric->fid);
	if (r->info)
		fi_freeinfo(r->info);
}

/* 0, 77 when the provider offers nothing that fits, 1 on failure. */
static int res_open(struct res *r, enum fi_threading threading,
		    const char *who)
{
	struct fi_info *hints = fi_allocinfo();
	struct fi_cq_attr cq_attr = { .format = FI_CQ_FORMAT_TAGGED,
				      .wait_obj = FI_WAIT_NONE };
	struct fi_av_attr av_attr = { .type = FI_AV_TABLE };
	int ret;

	if (!hints)
		return 1;
	hints->ep_attr->type = FI_EP_RDM;
	hints->caps = FI_TAGGED;
	hints->mode = FI_CONTEXT | FI_CONTEXT2;
	hints->domain_attr->mr_mode = FI_MR_ALLOCATED | FI_MR_PROV_KEY |
		FI_MR_VIRT_ADDR;
	hints->domain_attr->threading = threading;
	hints->fabric_attr->prov_name = strdup(opt_prov);
	ret = fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints, &r->info);
	fi_freeinfo(hints);
	if (ret) {
		print_err(who, "fi_getinfo", ret);
		return ret == -FI_ENODATA ? 77 : 1;
	}
	ret = fi_fabric(r->info->fabric_attr, &r->fabric, NULL);
	if (!ret)
		ret = fi_domain(r->fabric, r->info, &r->domain, NULL);
	if (!ret)
		ret = fi_cq_open(r->domain, &cq_attr, &r->cq, NULL);
	if (!ret)
		ret = fi_av_open(r->domain, &av_attr, &r->av, NULL);
	if (!ret)
		ret = fi_endpoint(r->domain, r->info, &r->ep, NULL);
	if (!ret)
		ret = fi_ep_bind(r->ep, &r->cq->fid, FI_TRANSMIT | FI_RECV);
	if (!ret)
		ret = fi_ep_bind(r->ep, &r->av->fid, 0);
	if (!ret)
		ret = fi_enable(r->ep);
	if (ret) {
		print_err(who, "endpoint setup", ret);
		return 1;
	}
	return 0;
}

/* ---- receivers: one message at a time, every byte checked ---- */

static int receiver_main(int wfd, int rfd, int index)
{
	struct res r = { 0 };
	char name[NAME_MAX_LEN], who[32];
	size_t name_len = sizeof(name);
	struct fi_context2 ctx;
	uint8_t *buf = malloc(opt_max);
	int32_t status = 1;
	int ret;

	snprintf(who, sizeof(who), "receiver %d", index);
	bind_cpus();
	if (!buf)
		return 1;
	ret = res_open(&r, FI_THREAD_DOMAIN, who);
	if (ret) {
		status = ret;
		goto report;
	}
	ret = fi_getname(&r.ep->fid, name, &name_len);
	if (ret || name_len > sizeof(name)) {
		print_err(who, "fi_getname", ret ? ret : -FI_ETOOSMALL);
		goto report;
	}
	{
		uint32_t l = (uint32_t)name_len;
		int32_t ok = 0;

		if (pipe_io(wfd, &ok, sizeof(ok), 1) ||
		    pipe_io(wfd, &l, sizeof(l), 1) ||
		    pipe_io(wfd, name, name_len, 1))
			goto out;
	}
	for (size_t size = 4; size <= opt_max; size *= 2) {
		for (int j = 0; j < opt_iters; j++) {
			struct fi_cq_tagged_entry e;
			uint64_t end = deadline_ns();
			ssize_t n;

			do {
				ret = (int)fi_trecv(r.ep, buf, size, NULL,
						    FI_ADDR_UNSPEC, size, 0,
						    &ctx);
				if (ret == -FI_EAGAIN)
					(void)fi_cq_read(r.cq, &e, 0);
			} while (ret == -FI_EAGAIN && now_ns() < end);
			if (ret) {
				print_err(who, "fi_trecv", ret);
				goto report;
			}
			while ((n = fi_cq_read(r.cq, &e, 1)) == -FI_EAGAIN &&
			       now_ns() < end)
				;
			if (n != 1) {
				fprintf(stderr, "%s: size %zu message %d: %s\n",
					who, size, j,
					n == -FI_EAGAIN ? "never arrived" :
							  fi_strerror((int)-n));
				goto report;
			}
			if (e.len != size) {
				fprintf(stderr, "%s: size %zu message %d: %zu "
					"bytes arrived\n", who, size, j, e.len);
				goto report;
			}
			for (size_t k = 0; k < size; k++) {
				if (buf[k] != pattern(k, j, size)) {
					fprintf(stderr, "%s: size %zu message "
						"%d: byte %zu wrong\n", who,
						size, j, k);
					goto report;
				}
			}
		}
	}
	status = 0;
report:
	(void)pipe_io(wfd, &status, sizeof(status), 1);
	/* Stay until the sender is done with us: our endpoint must live
	 * until its last completion. */
	{
		int32_t bye;

		(void)pipe_io(rfd, &bye, sizeof(bye), 0);
	}
out:
	res_close(&r);
	free(buf);
	return status;
}

/* ---- the sender: -n threads on one endpoint and one CQ ---- */

struct sctx {
	struct fi_context2 fi;	/* first: op_context points here */
	atomic_int done;
	int err;
};

struct sender {
	struct res r;
	fi_addr_t peer[MAX_PEERS];
	pthread_barrier_t barrier;
	atomic_int failed;
};

struct worker {
	pthread_t thread;
	struct sender *s;
	int index;
	double secs[64];
	int ret;
};

/* Read the shared CQ once, marking whichever sends it reports done. */
static int sender_poll(struct sender *s)
{
	struct fi_cq_tagged_entry e[8];
	ssize_t n = fi_cq_read(s->r.cq, e, 8);

	if (n == -FI_EAGAIN)
		return 0;
	if (n == -FI_EAVAIL) {
		struct fi_cq_err_entry err = { 0 };

		if (fi_cq_readerr(s->r.cq, &err, 0) == 1 && err.op_context) {
			struct sctx *c = err.op_context;

			c->err = err.err ? err.err : FI_EIO;
			atomic_store(&c->done, 1);
			return 0;
		}
		return -FI_EAGAIN; /* another thread took it */
	}
	if (n < 0)
		return (int)n;
	for (ssize_t i = 0; i < n; i++)
		atomic_store(&((struct sctx *)e[i].op_context)->done, 1);
	return 0;
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct sender *s = w->s;
	uint8_t *buf = malloc(opt_max);
	struct sctx ctx;
	int si = 0, ret = 0;

	if (!buf) {
		w->ret = -FI_ENOMEM;
		atomic_store(&s->failed, 1);
	}
	for (size_t size = 4; size <= opt_max; size *= 2, si++) {
		uint64_t t0;

		pthread_barrier_wait(&s->barrier);
		if (atomic_load(&s->failed))
			break;
		t0 = now_ns();
		for (int j = 0; j < opt_iters && !ret; j++) {
			uint64_t end = deadline_ns();

			for (size_t k = 0; k < size; k++)
				buf[k] = pattern(k, j, size);
			atomic_store(&ctx.done, 0);
			ctx.err = 0;
			do {
				ret = (int)fi_tsend(s->r.ep, buf, size, NULL,
						    s->peer[w->index], size,
						    &ctx);
				if (ret == -FI_EAGAIN)
					(void)sender_poll(s);
			} while (ret == -FI_EAGAIN && now_ns() < end);
			if (ret) {
				fprintf(stderr, "thread %d: fi_tsend size %zu: "
					"%s\n", w->index, size,
					fi_strerror(-ret));
				break;
			}
			while (!atomic_load(&ctx.done) && now_ns() < end) {
				int r = sender_poll(s);

				if (r && r != -FI_EAGAIN) {
					ret = r;
					break;
				}
			}
			if (!ret && !atomic_load(&ctx.done))
				ret = -FI_ETIMEDOUT;
			else if (!ret && ctx.err)
				ret = -ctx.err;
			if (ret)
				fprintf(stderr, "thread %d: send size %zu "
					"message %d: %s\n", w->index, size, j,
					fi_strerror(-ret));
		}
		w->secs[si] = (double)(now_ns() - t0) / 1e9;
		if (ret) {
			atomic_store(&s->failed, 1);
			/* The others wait at the next barrier: meet them
			 * there for every size left. */
		}
	}
	w->ret = ret;
	free(buf);
	return NULL;
}

static void usage(const char *prog)
{
	fprintf(stderr,
		"usage: %s [-p PROV] [-n PEERS] [-S MAXSIZE] [-I ITERS] "
		"[-c CPUS] [-T SECONDS]\n"
		"  -p  provider (default shm)\n"
		"  -n  sending threads, one receiver process each (default 3)\n"
		"  -S  largest message, bytes (k/m suffixes; default 2m)\n"
		"  -I  messages per size and thread (default 200)\n"
		"  -c  bind every process and thread to the first CPUS cpus\n"
		"  -T  fail after this long waiting for one message "
		"(default 120)\n", prog);
}

static size_t parse_size(const char *s)
{
	char *end;
	unsigned long long v = strtoull(s, &end, 0);

	if (*end == 'k' || *end == 'K')
		v <<= 10;
	else if (*end == 'm' || *end == 'M')
		v <<= 20;
	return (size_t)v;
}

int main(int argc, char **argv)
{
	struct sender s = { 0 };
	struct worker w[MAX_PEERS] = { 0 };
	pid_t child[MAX_PEERS];
	int to_parent[MAX_PEERS], to_child[MAX_PEERS];
	int i, o, ret = 1, nchild = 0, unsupported = 0, started = 0;
	uint64_t t0;

	while ((o = getopt(argc, argv, "p:n:S:I:c:T:h")) != -1) {
		switch (o) {
		case 'p': opt_prov = optarg; break;
		case 'n': opt_n = atoi(optarg); break;
		case 'S': opt_max = parse_size(optarg); break;
		case 'I': opt_iters = atoi(optarg); break;
		case 'c': opt_cpus = atoi(optarg); break;
		case 'T': opt_timeout = atoi(optarg); break;
		default: usage(argv[0]); return o == 'h' ? 0 : 2;
		}
	}
	if (opt_n < 1 || opt_n > MAX_PEERS || opt_max < 4 || opt_iters < 1 ||
	    opt_timeout < 1 || opt_cpus < 0) {
		usage(argv[0]);
		return 2;
	}
	signal(SIGPIPE, SIG_IGN);
	/* Receivers first, before the library is touched here. */
	for (i = 0; i < opt_n; i++) {
		int up[2], down[2];

		if (pipe(up) || pipe(down)) {
			perror("pipe");
			goto out_children;
		}
		child[i] = fork();
		if (child[i] < 0) {
			perror("fork");
			goto out_children;
		}
		if (!child[i]) {
			close(up[0]);
			close(down[1]);
			_exit(receiver_main(up[1], down[0], i));
		}
		close(up[1]);
		close(down[0]);
		to_parent[i] = up[0];
		to_child[i] = down[1];
		nchild++;
	}
	bind_cpus();
	ret = res_open(&s.r, FI_THREAD_SAFE, "sender");
	if (ret) {
		unsupported = ret == 77;
		goto out_children;
	}
	ret = 1;
	for (i = 0; i < opt_n; i++) {
		char name[NAME_MAX_LEN];
		uint32_t len;
		int32_t ok;

		if (pipe_io(to_parent[i], &ok, sizeof(ok), 0) || ok) {
			unsupported = ok == 77;
			fprintf(stderr, "receiver %d did not start\n", i);
			goto out_res;
		}
		if (pipe_io(to_parent[i], &len, sizeof(len), 0) ||
		    len > sizeof(name) ||
		    pipe_io(to_parent[i], name, len, 0) ||
		    fi_av_insert(s.r.av, name, 1, &s.peer[i], 0, NULL) != 1) {
			fprintf(stderr, "receiver %d: no address\n", i);
			goto out_res;
		}
	}
	printf("library provider %s, %d threads on one FI_THREAD_SAFE "
	       "endpoint, %d receivers, %d messages per size%s\n",
	       s.r.info->fabric_attr->prov_name, opt_n, opt_n, opt_iters,
	       opt_cpus ? ", CPUs limited" : "");
	pthread_barrier_init(&s.barrier, NULL, (unsigned)opt_n);
	t0 = now_ns();
	for (i = 0; i < opt_n; i++) {
		w[i].s = &s;
		w[i].index = i;
		if (pthread_create(&w[i].thread, NULL, worker_main, &w[i]))
			break;
		started++;
	}
	if (started < opt_n) {
		/* The barrier would never fill: nothing else to do. */
		fprintf(stderr, "pthread_create failed\n");
		_exit(1);
	}
	for (i = 0; i < started; i++)
		pthread_join(w[i].thread, NULL);
	pthread_barrier_destroy(&s.barrier);
	ret = 0;
	for (i = 0; i < opt_n; i++)
		if (w[i].ret)
			ret = 1;
	{
		int si = 0;

		for (size_t size = 4; size <= opt_max; size *= 2, si++)
			if (size >= 4096)
				printf("%9zu bytes: %10.1f us per send\n", size,
				       w[0].secs[si] * 1e6 / opt_iters);
	}
	printf("total: %.2f s\n", (double)(now_ns() - t0) / 1e9);
	for (i = 0; i < opt_n; i++) {
		int32_t st = 1;

		if (pipe_io(to_parent[i], &st, sizeof(st), 0) || st) {
			fprintf(stderr, "receiver %d failed\n", i);
			ret = 1;
		}
	}
out_res:
	/* Let the receivers go, then close: nothing is in flight now. */
	for (i = 0; i < nchild; i++) {
		int32_t bye = 0;

		(void)pipe_io(to_child[i], &bye, sizeof(bye), 1);
	}
	res_close(&s.r);
out_children:
	for (i = 0; i < nchild; i++) {
		uint64_t end = deadline_ns();
		int st;

		close(to_child[i]);
		while (waitpid(child[i], &st, WNOHANG) == 0) {
			if (now_ns() >= end) {
				kill(child[i], SIGKILL);
				waitpid(child[i], &st, 0);
				ret = 1;
				break;
			}
			usleep(1000);
		}
		close(to_parent[i]);
	}
	if (ret && unsupported)
		return 77;
	return ret ? 1 : 0;
}
