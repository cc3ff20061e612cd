/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * fi_rdm_conn_scale: what connecting many peers to one RDM endpoint costs.
 *
 * One process, the target, opens an RDM endpoint with a CQ and an AV and
 * posts N tagged receives.  A child process opens N endpoints in one
 * fabric and domain, inserts the target's address (handed over a pipe) and
 * sends one small tagged message from each endpoint.  The target reports:
 *
 *   - the wall time from the child's first send to the N-th receive
 *     completion at the target (CLOCK_MONOTONIC is shared by both
 *     processes): the time to connect N peers;
 *   - its own resident memory (/proc/self/statm and VmRSS) before the
 *     first connection and after all N peers are connected and idle;
 *     memory per idle peer = delta / N.
 *
 * The child is another process, so its memory never counts.  After the
 * measurement the child keeps its endpoints open until told to exit, then
 * both close everything.  Only the public API is used: any libfabric.so.1
 * on the library path serves the same binary.
 *
 * Exit status: 0 passed, 77 provider or capabilities missing, 1 failed
 * (a message missing or wrong, a wait past the time limit), 2 usage.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_tagged.h>

#define MSG_MAGIC 0x5743534eu	/* checked in every payload */
#define NAME_MAX_LEN 256
#define PEER_QUEUE_SIZE 16

struct msg {
	uint32_t magic;
	uint32_t index;
};

/* Pipe words, child <-> target. */
enum {
	CMD_ABORT = 0,
	CMD_GO = 1,
	CMD_EXIT = 2,
	ST_READY = 10,
	ST_SENT = 11,
	ST_FAILED = 12,
	ST_UNSUPPORTED = 13,
};

struct report {
	int32_t status;
	int32_t pad;
	uint64_t t0_ns;	/* child's clock just before its first send */
};

static const char *opt_prov = "tcp";
static const char *opt_node = "127.0.0.1";
static int opt_n = 256;
static int opt_timeout = 30;
static int opt_idle_ms = 200;
static int opt_cq_per_ep;

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t deadline(void)
{
	return now_ns() + (uint64_t)opt_timeout * 1000000000u;
}

/* Full read/write over a pipe, bounded by the time limit. */
static int pipe_write(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len) {
		ssize_t r = write(fd, p, len);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return -1;
		p += r;
		len -= (size_t)r;
	}
	return 0;
}

static int pipe_read(int fd, void *buf, size_t len)
{
	char *p = buf;
	uint64_t end = deadline();

	while (len) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		uint64_t now = now_ns();
		int r;

		if (now >= end)
			return -2;
		r = poll(&pfd, 1, (int)((end - now) / 1000000u) + 1);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -1;
		if (r == 0)
			continue;
		ssize_t n = read(fd, p, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

static int send_word(int fd, int32_t w)
{
	return pipe_write(fd, &w, sizeof(w));
}

static int recv_word(int fd, int32_t *w)
{
	return pipe_read(fd, w, sizeof(*w));
}

/* Resident memory of this process: statm pages in bytes, VmRSS in bytes. */
static int rss_read(uint64_t *statm_bytes, uint64_t *vmrss_bytes)
{
	unsigned long size, resident;
	char line[256];
	FILE *f;
	int found = 0;

	f = fopen("/proc/self/statm", "r");
	if (!f)
		return -1;
	if (fscanf(f, "%lu %lu", &size, &resident) != 2) {
		fclose(f);
		return -1;
	}
	fclose(f);
	*statm_bytes = (uint64_t)resident * (uint64_t)sysconf(_SC_PAGESIZE);

	f = fopen("/proc/self/status", "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		unsigned long kb;

		if (sscanf(line, "VmRSS: %lu kB", &kb) == 1) {
			*vmrss_bytes = (uint64_t)kb * 1024u;
			found = 1;
			break;
		}
	}
	fclose(f);
	return found ? 0 : -1;
}

static void raise_fd_limit(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}

/* peer_side: the child's endpoints ask for small queues -- each sends one
 * message -- so that N of them fit in memory over any provider (rxm sizes
 * its buffer pools by them).  The target keeps the provider's defaults:
 * its memory is what is measured. */
static struct fi_info *make_hints(int peer_side)
{
	struct fi_info *hints = fi_allocinfo();

	if (!hints)
		return NULL;
	hints->ep_attr->type = FI_EP_RDM;
	hints->caps = FI_TAGGED;
	hints->mode = FI_CONTEXT | FI_CONTEXT2;
	hints->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_ALLOCATED |
		FI_MR_PROV_KEY | FI_MR_VIRT_ADDR;
	hints->domain_attr->threading = FI_THREAD_DOMAIN;
	hints->fabric_attr->prov_name = strdup(opt_prov);
	if (peer_side) {
		hints->tx_attr->size = PEER_QUEUE_SIZE;
		hints->rx_attr->size = PEER_QUEUE_SIZE;
	}
	return hints;
}

/* 0, -FI_ENODATA when nothing fits, another negative code on failure. */
static int get_info(int peer_side, struct fi_info **info)
{
	struct fi_info *hints = make_hints(peer_side);
	int ret;

	if (!hints)
		return -FI_ENOMEM;
	ret = fi_getinfo(FI_VERSION(1, 17), opt_node, NULL, FI_SOURCE, hints,
			 info);
	fi_freeinfo(hints);
	return ret;
}

static void print_err(const char *what, int ret)
{
	fprintf(stderr, "%s: %s (%d)\n", what, fi_strerror(-ret), ret);
}

static void print_cq_err(struct fid_cq *cq, const char *who)
{
	struct fi_cq_err_entry err = { 0 };

	if (fi_cq_readerr(cq, &err, 0) > 0)
		fprintf(stderr, "%s: completion error: %s (prov %d: %s)\n",
			who, fi_strerror(err.err), err.prov_errno,
			fi_cq_strerror(cq, err.prov_errno, err.err_data,
				       NULL, 0));
	else
		fprintf(stderr, "%s: completion error (unreadable)\n", who);
}

/* Memory registration where the provider asks for it (FI_MR_LOCAL). */
static int reg_buf(struct fid_domain *domain, struct fi_info *info, void *buf,
		   size_t len, uint64_t access, struct fid_mr **mr, void **desc)
{
	int ret;

	*mr = NULL;
	*desc = NULL;
	if (!(info->domain_attr->mr_mode & FI_MR_LOCAL))
		return 0;
	ret = fi_mr_reg(domain, buf, len, access, 0, 0, 0, mr, NULL);
	if (ret)
		return ret;
	*desc = fi_mr_desc(*mr);
	return 0;
}

/* Progress only: nothing is expected on the CQ at the callers' points. */
static void cq_progress(struct fid_cq *cq)
{
	struct fi_cq_tagged_entry e;

	(void)fi_cq_read(cq, &e, 1);
}

/* ---- child: N endpoints, one message each ---- */

struct child {
	struct fi_info *info;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_av *av;
	struct fid_cq **cq;	/* one shared, or one per endpoint (-c) */
	int ncq;
	struct fid_ep **ep;
	struct msg *buf;
	struct fid_mr *mr;
	void *desc;
	struct fi_context2 *ctx;
	int nep;
};

static void child_close(struct child *c)
{
	for (int i = 0; i < c->nep; i++)
		fi_close(&c->ep[i]->fid);
	if (c->mr)
		fi_close(&c->mr->fid);
	for (int i = 0; i < c->ncq; i++)
		fi_close(&c->cq[i]->fid);
	if (c->av)
		fi_close(&c->av->fid);
	if (c->domain)
		fi_close(&c->domain->fid);
	if (c->fabric)
		fi_close(&c->fabric->fid);
	if (c->info)
		fi_freeinfo(c->info);
	free(c->ep);
	free(c->cq);
	free(c->buf);
	free(c->ctx);
}

/* Drain the child's CQs; returns completions read or a negative error. */
static int child_poll(struct child *c)
{
	int n = 0;

	for (int i = 0; i < c->ncq; i++) {
		struct fi_cq_tagged_entry e[16];
		ssize_t r = fi_cq_read(c->cq[i], e, 16);

		if (r == -FI_EAGAIN)
			continue;
		if (r == -FI_EAVAIL) {
			print_cq_err(c->cq[i], "child");
			return -1;
		}
		if (r < 0) {
			print_err("child: fi_cq_read", (int)r);
			return -1;
		}
		n += (int)r;
	}
	return n;
}

static int child_main(int rfd, int wfd)
{
	struct child c = { 0 };
	struct fi_cq_attr cq_attr = { 0 };
	struct fi_av_attr av_attr = { 0 };
	char name[NAME_MAX_LEN];
	uint32_t name_len;
	fi_addr_t target = FI_ADDR_UNSPEC;
	struct report rep = { .status = ST_FAILED };
	int32_t cmd;
	int ret, done, posted;
	uint64_t end;

	if (pipe_read(rfd, &name_len, sizeof(name_len)) ||
	    name_len == 0 || name_len > sizeof(name) ||
	    pipe_read(rfd, name, name_len))
		return 1;	/* the target gave up: nothing to report */

	/* The rxm layer of other implementations posts thousands of 16 KiB
	 * bounce buffers per endpoint (over 30 MiB): N of those would not
	 * fit.  The child's endpoints only send 8 bytes, so their bounce
	 * buffers can be small; the eager limit stays at its default, which
	 * both sides of a connection must agree on.  The target keeps the
	 * defaults.  Set in the child only, before the library reads its
	 * parameters, and never over a value the user chose. */
	setenv("FI_OFI_RXM_BUFFER_SIZE", "256", 0);
	setenv("FI_OFI_RXM_EAGER_LIMIT", "16384", 0);
	/* Likewise weft's shm regions, one per endpoint and reserved whole
	 * (about 7 MiB by default): N of those would not fit in /dev/shm
	 * either.  The child's hold a few slots and small buffers. */
	setenv("FI_SHM_QUEUE_SLOTS", "64", 0);
	setenv("FI_SHM_MAX_PEERS", "16", 0);
	setenv("FI_SHM_BOUNCE_COUNT", "2", 0);
	setenv("FI_SHM_BOUNCE_SIZE", "4096", 0);

	ret = get_info(1, &c.info);
	if (ret) {
		print_err("child: fi_getinfo", ret);
		send_word(wfd, ret == -FI_ENODATA ? ST_UNSUPPORTED : ST_FAILED);
		return 1;
	}
	c.ep = calloc((size_t)opt_n, sizeof(*c.ep));
	c.buf = calloc((size_t)opt_n, sizeof(*c.buf));
	c.ctx = calloc((size_t)opt_n, sizeof(*c.ctx));
	c.cq = calloc((size_t)opt_n, sizeof(*c.cq));
	if (!c.ep || !c.buf || !c.ctx || !c.cq)
		goto fail;

	ret = fi_fabric(c.info->fabric_attr, &c.fabric, NULL);
	if (ret) {
		print_err("child: fi_fabric", ret);
		goto fail;
	}
	ret = fi_domain(c.fabric, c.info, &c.domain, NULL);
	if (ret) {
		print_err("child: fi_domain", ret);
		goto fail;
	}
	cq_attr.format = FI_CQ_FORMAT_TAGGED;
	cq_attr.size = opt_cq_per_ep ? 16 : (size_t)opt_n + 64;
	cq_attr.wait_obj = FI_WAIT_NONE;
	for (int i = 0; i < (opt_cq_per_ep ? opt_n : 1); i++) {
		ret = fi_cq_open(c.domain, &cq_attr, &c.cq[i], NULL);
		if (ret) {
			print_err("child: fi_cq_open", ret);
			goto fail;
		}
		c.ncq++;
	}
	av_attr.type = c.info->domain_attr->av_type;
	av_attr.count = 1;
	ret = fi_av_open(c.domain, &av_attr, &c.av, NULL);
	if (ret) {
		print_err("child: fi_av_open", ret);
		goto fail;
	}
	for (int i = 0; i < opt_n; i++) {
		c.buf[i].magic = MSG_MAGIC;
		c.buf[i].index = (uint32_t)i;
	}
	ret = reg_buf(c.domain, c.info, c.buf, (size_t)opt_n * sizeof(*c.buf),
		      FI_SEND, &c.mr, &c.desc);
	if (ret) {
		print_err("child: fi_mr_reg", ret);
		goto fail;
	}
	for (int i = 0; i < opt_n; i++) {
		ret = fi_endpoint(c.domain, c.info, &c.ep[i], NULL);
		if (ret) {
			fprintf(stderr, "child: endpoint %d of %d: ", i, opt_n);
			print_err("fi_endpoint", ret);
			goto fail;
		}
		c.nep++;
		ret = fi_ep_bind(c.ep[i], &c.cq[opt_cq_per_ep ? i : 0]->fid,
				 FI_TRANSMIT | FI_RECV);
		if (!ret)
			ret = fi_ep_bind(c.ep[i], &c.av->fid, 0);
		if (!ret)
			ret = fi_enable(c.ep[i]);
		if (ret) {
			fprintf(stderr, "child: endpoint %d of %d: ", i, opt_n);
			print_err("bind/enable", ret);
			goto fail;
		}
	}
	ret = fi_av_insert(c.av, name, 1, &target, 0, NULL);
	if (ret != 1) {
		print_err("child: fi_av_insert", ret < 0 ? ret : -FI_EINVAL);
		goto fail;
	}

	/* Ready: the target takes its baseline, then says go. */
	if (send_word(wfd, ST_READY) || recv_word(rfd, &cmd))
		goto out;
	if (cmd != CMD_GO)
		goto out;

	rep.t0_ns = now_ns();
	end = deadline();
	posted = done = 0;
	while (posted < opt_n) {
		ssize_t r = fi_tsend(c.ep[posted], &c.buf[posted],
				     sizeof(c.buf[posted]), c.desc, target,
				     (uint64_t)posted, &c.ctx[posted]);

		if (r == 0) {
			posted++;
			continue;
		}
		if (r != -FI_EAGAIN) {
			fprintf(stderr, "child: send %d: ", posted);
			print_err("fi_tsend", (int)r);
			goto report;
		}
		ret = child_poll(&c);
		if (ret < 0)
			goto report;
		done += ret;
		if (now_ns() > end) {
			fprintf(stderr, "child: sends not accepted in %d s\n",
				opt_timeout);
			goto report;
		}
	}
	while (done < opt_n) {
		ret = child_poll(&c);
		if (ret < 0)
			goto report;
		done += ret;
		if (now_ns() > end) {
			fprintf(stderr, "child: %d of %d sends completed in %d s\n",
				done, opt_n, opt_timeout);
			goto report;
		}
	}
	rep.status = ST_SENT;
report:
	if (pipe_write(wfd, &rep, sizeof(rep)))
		goto out;
	if (rep.status != ST_SENT)
		goto out;

	/* Connected and idle until told to exit; keep progressing. */
	for (;;) {
		struct pollfd pfd = { .fd = rfd, .events = POLLIN };
		int r = poll(&pfd, 1, 10);

		if (r > 0) {
			if (recv_word(rfd, &cmd))
				cmd = CMD_ABORT;
			break;
		}
		if (child_poll(&c) < 0) {
			cmd = CMD_ABORT;
			break;
		}
	}
	child_close(&c);
	return cmd == CMD_EXIT ? 0 : 1;

fail:
	send_word(wfd, ST_FAILED);
out:
	child_close(&c);
	return 1;
}

/* ---- target ---- */

static void usage(const char *prog)
{
	fprintf(stderr,
		"usage: %s [-p PROVIDER] [-n PEERS] [-c] [-a ADDRESS] [-T SECONDS] [-i IDLE_MS]\n"
		"  -p  provider (default tcp)\n"
		"  -n  peers to connect (default 256)\n"
		"  -c  one CQ per peer endpoint (default: the peers share one)\n"
		"  -a  loopback address both sides bind to (default 127.0.0.1)\n"
		"  -T  seconds any wait may take before failing (default 30)\n"
		"  -i  milliseconds of idle progress before the second memory\n"
		"      reading (default 200)\n",
		prog);
}

static const char *library_path(void)
{
	Dl_info dli;

	if (dladdr((void *)fi_getinfo, &dli) && dli.dli_fname)
		return dli.dli_fname;
	return "(unknown)";
}

static void print_mem(const char *label, uint64_t bytes)
{
	if (bytes >= 1024u * 1024u)
		printf("%s%.1f MiB", label, (double)bytes / (1024.0 * 1024.0));
	else
		printf("%s%.1f KiB", label, (double)bytes / 1024.0);
}

int main(int argc, char **argv)
{
	int p2c[2], c2p[2];
	pid_t pid;
	int opt, status, result = 1, child_reaped = 0;
	struct fi_info *info = NULL;
	struct fid_fabric *fabric = NULL;
	struct fid_domain *domain = NULL;
	struct fid_av *av = NULL;
	struct fid_cq *cq = NULL;
	struct fid_ep *ep = NULL;
	struct fid_mr *mr = NULL;
	void *desc = NULL;
	struct msg *rbuf = NULL;
	struct fi_context2 *rctx = NULL;
	char *seen = NULL;
	struct fi_cq_attr cq_attr = { 0 };
	struct fi_av_attr av_attr = { 0 };
	char name[NAME_MAX_LEN];
	size_t name_len = sizeof(name);
	uint32_t name_len32;
	uint64_t statm0, vm0, statm1, vm1, t1 = 0, end;
	struct report rep;
	int32_t word;
	int ret, got = 0;

	while ((opt = getopt(argc, argv, "p:n:ca:T:i:h")) != -1) {
		switch (opt) {
		case 'p':
			opt_prov = optarg;
			break;
		case 'n':
			opt_n = atoi(optarg);
			break;
		case 'c':
			opt_cq_per_ep = 1;
			break;
		case 'a':
			opt_node = optarg;
			break;
		case 'T':
			opt_timeout = atoi(optarg);
			break;
		case 'i':
			opt_idle_ms = atoi(optarg);
			break;
		default:
			usage(argv[0]);
			return opt == 'h' ? 0 : 2;
		}
	}
	if (optind != argc || opt_n < 1 || opt_n > 65536 || opt_timeout < 1 ||
	    opt_idle_ms < 0) {
		usage(argv[0]);
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	raise_fd_limit();
	signal(SIGPIPE, SIG_IGN);

	/* Fork before either side touches the library. */
	if (pipe(p2c) || pipe(c2p)) {
		perror("pipe");
		return 1;
	}
	pid = fork();
	if (pid < 0) {
		perror("fork");
		return 1;
	}
	if (pid == 0) {
		close(p2c[1]);
		close(c2p[0]);
		/* a watchdog in case a provider call never returns */
		alarm((unsigned)opt_timeout * 4u + 10u);
		_exit(child_main(p2c[0], c2p[1]));
	}
	close(p2c[0]);
	close(c2p[1]);
	alarm((unsigned)opt_timeout * 4u + 10u);

	printf("library: %s (fi_version %u.%u)\n", library_path(),
	       FI_MAJOR(fi_version()), FI_MINOR(fi_version()));

	ret = get_info(0, &info);
	if (ret) {
		print_err("fi_getinfo", ret);
		result = ret == -FI_ENODATA ? 77 : 1;
		goto out;
	}
	printf("provider: %s, fabric %s, domain %s, peers %d\n",
	       info->fabric_attr->prov_name, info->fabric_attr->name,
	       info->domain_attr->name, opt_n);

	ret = fi_fabric(info->fabric_attr, &fabric, NULL);
	if (ret) {
		print_err("fi_fabric", ret);
		goto out;
	}
	ret = fi_domain(fabric, info, &domain, NULL);
	if (ret) {
		print_err("fi_domain", ret);
		goto out;
	}
	cq_attr.format = FI_CQ_FORMAT_TAGGED;
	cq_attr.size = (size_t)opt_n + 64;
	cq_attr.wait_obj = FI_WAIT_NONE;
	ret = fi_cq_open(domain, &cq_attr, &cq, NULL);
	if (ret) {
		print_err("fi_cq_open", ret);
		goto out;
	}
	av_attr.type = info->domain_attr->av_type;
	av_attr.count = (size_t)opt_n;
	ret = fi_av_open(domain, &av_attr, &av, NULL);
	if (ret) {
		print_err("fi_av_open", ret);
		goto out;
	}
	ret = fi_endpoint(domain, info, &ep, NULL);
	if (ret) {
		print_err("fi_endpoint", ret);
		goto out;
	}
	ret = fi_ep_bind(ep, &cq->fid, FI_TRANSMIT | FI_RECV);
	if (!ret)
		ret = fi_ep_bind(ep, &av->fid, 0);
	if (!ret)
		ret = fi_enable(ep);
	if (ret) {
		print_err("bind/enable", ret);
		goto out;
	}
	ret = fi_getname(&ep->fid, name, &name_len);
	if (ret || name_len == 0 || name_len > sizeof(name)) {
		print_err("fi_getname", ret ? ret : -FI_ETOOSMALL);
		goto out;
	}

	/* Receives and their buffers exist (and are touched) before the
	 * baseline, so the delta is the connections' alone. */
	rbuf = calloc((size_t)opt_n, sizeof(*rbuf));
	rctx = calloc((size_t)opt_n, sizeof(*rctx));
	seen = calloc((size_t)opt_n, 1);
	if (!rbuf || !rctx || !seen) {
		fprintf(stderr, "out of memory\n");
		goto out;
	}
	ret = reg_buf(domain, info, rbuf, (size_t)opt_n * sizeof(*rbuf),
		      FI_RECV, &mr, &desc);
	if (ret) {
		print_err("fi_mr_reg", ret);
		goto out;
	}
	end = deadline();
	for (int i = 0; i < opt_n; i++) {
		for (;;) {
			ssize_t r = fi_trecv(ep, &rbuf[i], sizeof(rbuf[i]), desc,
					     FI_ADDR_UNSPEC, (uint64_t)i, 0,
					     &rctx[i]);
			if (r == 0)
				break;
			if (r != -FI_EAGAIN || now_ns() > end) {
				fprintf(stderr, "receive %d: ", i);
				print_err("fi_trecv", (int)r);
				goto out;
			}
			cq_progress(cq);
		}
	}

	name_len32 = (uint32_t)name_len;
	if (pipe_write(p2c[1], &name_len32, sizeof(name_len32)) ||
	    pipe_write(p2c[1], name, name_len)) {
		fprintf(stderr, "pipe to the child failed\n");
		goto out;
	}
	ret = recv_word(c2p[0], &word);
	if (ret || word != ST_READY) {
		if (!ret && word == ST_UNSUPPORTED) {
			fprintf(stderr, "the child found no provider\n");
			result = 77;
		} else {
			fprintf(stderr, "the child did not get ready%s\n",
				ret == -2 ? " in time" : "");
		}
		goto out;
	}

	/* Baseline: the endpoint is up, its receives posted, nobody
	 * connected yet. */
	if (rss_read(&statm0, &vm0)) {
		fprintf(stderr, "cannot read /proc/self/statm or status\n");
		goto out;
	}
	if (send_word(p2c[1], CMD_GO))
		goto out;

	end = deadline();
	while (got < opt_n) {
		struct fi_cq_tagged_entry e[16];
		ssize_t r = fi_cq_read(cq, e, 16);

		if (r == -FI_EAGAIN) {
			if (now_ns() > end) {
				fprintf(stderr, "%d of %d messages arrived in %d s\n",
					got, opt_n, opt_timeout);
				goto out;
			}
			continue;
		}
		if (r == -FI_EAVAIL) {
			print_cq_err(cq, "target");
			goto out;
		}
		if (r < 0) {
			print_err("fi_cq_read", (int)r);
			goto out;
		}
		for (ssize_t k = 0; k < r; k++) {
			struct fi_context2 *ctx = e[k].op_context;
			long i = ctx - rctx;

			if (i < 0 || i >= opt_n || seen[i] ||
			    !(e[k].flags & FI_RECV) || e[k].tag != (uint64_t)i ||
			    e[k].len != sizeof(struct msg) ||
			    rbuf[i].magic != MSG_MAGIC ||
			    rbuf[i].index != (uint32_t)i) {
				fprintf(stderr,
					"wrong completion: receive %ld tag %" PRIu64
					" len %zu flags 0x%" PRIx64 "\n",
					i, (uint64_t)e[k].tag, e[k].len,
					(uint64_t)e[k].flags);
				goto out;
			}
			seen[i] = 1;
			got++;
		}
	}
	t1 = now_ns();

	ret = pipe_read(c2p[0], &rep, sizeof(rep));
	if (ret || rep.status != ST_SENT) {
		fprintf(stderr, "the child's sends did not all complete\n");
		goto out;
	}

	/* Idle: keep progressing a while so handshakes settle, then read. */
	end = now_ns() + (uint64_t)opt_idle_ms * 1000000u;
	while (now_ns() < end) {
		struct fi_cq_tagged_entry e;
		ssize_t r = fi_cq_read(cq, &e, 1);

		if (r > 0 || r == -FI_EAVAIL) {
			fprintf(stderr, "unexpected completion while idle\n");
			goto out;
		}
		usleep(1000);
	}
	if (rss_read(&statm1, &vm1)) {
		fprintf(stderr, "cannot read /proc/self/statm or status\n");
		goto out;
	}

	printf("connect %d peers: %.1f ms\n", opt_n,
	       (double)(int64_t)(t1 - rep.t0_ns) / 1e6);
	{
		int64_t d = (int64_t)(statm1 - statm0);
		int64_t dv = (int64_t)(vm1 - vm0);

		printf("memory per connected idle peer: %.1f KiB (target RSS %s",
		       (double)d / 1024.0 / opt_n, d < 0 ? "-" : "+");
		print_mem("", (uint64_t)(d < 0 ? -d : d));
		printf(")\n");
		printf("target RSS: statm %" PRIu64 " -> %" PRIu64
		       " KiB, VmRSS %" PRIu64 " -> %" PRIu64 " KiB (%+.1f KiB per peer)\n",
		       statm0 / 1024u, statm1 / 1024u, vm0 / 1024u,
		       vm1 / 1024u, (double)dv / 1024.0 / opt_n);
	}

	/* Tell the child to exit and wait for it, progressing meanwhile. */
	send_word(p2c[1], CMD_EXIT);
	end = deadline();
	for (;;) {
		pid_t w = waitpid(pid, &status, WNOHANG);

		if (w == pid) {
			child_reaped = 1;
			break;
		}
		if (now_ns() > end) {
			fprintf(stderr, "the child did not exit in %d s\n",
				opt_timeout);
			goto out;
		}
		cq_progress(cq);
		usleep(1000);
	}
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		fprintf(stderr, "the child failed (status 0x%x)\n", status);
		goto out;
	}
	result = 0;

out:
	if (!child_reaped) {
		send_word(p2c[1], CMD_ABORT);
		close(p2c[1]);
		p2c[1] = -1;
		end = now_ns() + 5000000000u;
		while (waitpid(pid, &status, WNOHANG) == 0) {
			if (now_ns() > end) {
				kill(pid, SIGKILL);
				waitpid(pid, &status, 0);
				break;
			}
			usleep(1000);
		}
	}
	if (ep)
		fi_close(&ep->fid);
	if (mr)
		fi_close(&mr->fid);
	if (cq)
		fi_close(&cq->fid);
	if (av)
		fi_close(&av->fid);
	if (domain)
		fi_close(&domain->fid);
	if (fabric)
		fi_close(&fabric->fid);
	if (info)
		fi_freeinfo(info);
	free(rbuf);
	free(rctx);
	free(seen);
	if (p2c[1] >= 0)
		close(p2c[1]);
	close(c2p[0]);
	return result;
}
