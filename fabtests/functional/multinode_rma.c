// SPDX-License-Identifier: BSD-2-Clause
/*
 * fi_multinode_rma: -n ranks (processes) of one job write into each
 * other's memory between barriers made of messages, in the call sequence
 * of the multinode test of upstream's fabtests in its RMA mode.
 *
 * Each rank opens an RDM endpoint (FI_MSG | FI_RMA, mode FI_CONTEXT,
 * mr_mode FI_MR_LOCAL | FI_MR_ENDPOINT | basic map), a transmit CQ and a
 * receive CQ of the endpoint's tx and rx sizes (context format, no wait
 * object), an AV for -n addresses, and one registration bound to the
 * endpoint: a receive slot per rank, then a transmit slot per rank.  Ranks
 * other than 0 set up after rank 0 has; then they swap endpoint names
 * (each inserted in rank order, its own included) and the address and key
 * of their receive slots.  Then, for each size of -S and each pattern
 * (full_mesh, ring, gather, broadcast), -I iterations of:
 *
 *  - fi_write of that size to each target the pattern gives (full_mesh:
 *    every rank, this one included), from transmit slot [target] into
 *    receive slot [this rank] of the target, at most -W under way;
 *    -FI_EAGAIN is retried after a read of the transmit CQ;
 *  - waiting, on the transmit CQ alone, for every write's completion;
 *  - a barrier: -n receives, then a 0-byte send to every rank (this one
 *    included), each retried on -FI_EAGAIN after a read of its CQ; then
 *    waiting for the sends' completions on the transmit CQ and for -n
 *    receive completions on the receive CQ.  With -o tagged (the default,
 *    as that test does since libfabric 1.18) the endpoint also has
 *    FI_TAGGED and the barrier is tagged: fi_trecv of the barrier tag with
 *    no buffer (256 bytes) and no context, naming rank i as its source
 *    (which counts only with FI_DIRECTED_RECV, not asked for), and
 *    fi_tsend without buffer or context; receive completions must carry
 *    the tag.  With -o untagged (as in 1.17): fi_recv into the first
 *    receive slot, any source, and fi_send, each with a context of its
 *    own.  The barrier counts messages: a rank that is ahead may have one
 *    of its next barrier's messages taken by this one, and the counts
 *    still add up.
 *
 * Beyond what that test checks: after each pattern every rank holds, in
 * its receive slot [source], what each source wrote there in the last
 * iteration (checked byte for byte, with progress, once all ranks are
 * done), no completion is in error, and no stray one comes at the end.
 * A wait that sees no completion for -T seconds fails, naming the counts
 * it reached.  Waits poll the CQ as that test does, but yield the CPU
 * between empty reads: ranks may outnumber cores.
 *
 * The server is rank 0; the client is rank 1 and starts ranks 2 .. n-1
 * itself (fork), so the pair the matrix runner starts is the whole job.
 * The side channel is the job's out-of-band channel: the client relays
 * its children's part of every exchange.
 */
#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ft.h"

static const struct ft_prog prog = {
	.name = "fi_multinode_rma",
	.summary = "-n ranks write into each other between barriers of "
		   "messages (RDM)",
	.ep_type = FI_EP_RDM,
	.caps = FI_MSG | FI_RMA,
	.iters = 100,
	.window = 64,
	.sizes = "1k",
	.op = "tagged",
	.ops_help = "barrier messages: tagged or untagged",
	.ranks = true,
};

#define MN_BARRIER_TAG 0x5CA1AB1EULL

#define MN_CTRL 256 /* a slot holds at least this (barrier receives) */
#define MN_NAME 256

enum mn_pattern { MN_MESH, MN_RING, MN_GATHER, MN_BCAST, MN_NPATTERNS };
static const char *const mn_pattern_name[MN_NPATTERNS] = {
	"full_mesh", "ring", "gather", "broadcast",
};

struct mn_rkey {
	uint64_t addr;
	uint64_t key;
	uint64_t len;
};

static struct {
	int nranks, rank;
	int up_fd;		/* ranks >= 2: to rank 1 */
	int *child_fd;		/* rank 1: [rank] to ranks 2 .. n-1 */
	pid_t *child_pid;
	struct fi_info *info;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_av *av;
	struct fid_cq *txcq, *rxcq;
	struct fid_ep *ep;
	struct fid_mr *mr;
	void *desc;
	char *buf, *rx_buf, *tx_buf;
	size_t size, slot, buf_size;
	int window;
	fi_addr_t *addr;
	struct mn_rkey *rkey;
	struct fi_context *tx_ctx, *bar_tx_ctx, *bar_rx_ctx;
	uint64_t tx_seq, tx_done, rx_seq, rx_done;
	const char *where;	/* what a wait waits for, for its report */
	int pattern, iter;
	bool tagged;		/* -o tagged: the barrier is tagged */
} mn = { .up_fd = -1 };

/* ---- the job's out-of-band channel ---------------------------------------- */

static int fd_write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;
	ssize_t n;

	while (len) {
		n = send(fd, p, len, MSG_NOSIGNAL);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			ft_err("rank %d: job channel send: %s", mn.rank,
			       n ? strerror(errno) : "closed");
			return -FI_EIO;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

static int fd_read_all(int fd, void *buf, size_t len)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };
	char *p = buf;
	ssize_t n;
	int ret;

	while (len) {
		ret = poll(&pfd, 1, ft.opts.timeout * 1000);
		if (ret < 0 && errno == EINTR)
			continue;
		if (ret <= 0) {
			ft_err("rank %d: job channel silent for %d s", mn.rank,
			       ft.opts.timeout);
			return -FI_ETIMEDOUT;
		}
		n = recv(fd, p, len, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			ft_err("rank %d: job channel closed", mn.rank);
			return -FI_EIO;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* Every rank's item, in rank order, to every rank. */
static int pm_allgather(const void *mine, void *all, size_t size)
{
	char *a = all;
	int k, ret = 0;

	if (mn.rank == 0) {
		memcpy(a, mine, size);
		ret = ft_oob_recv(a + size, (size_t)(mn.nranks - 1) * size);
		if (!ret)
			ret = ft_oob_send(a, (size_t)mn.nranks * size);
		return ret;
	}
	if (mn.rank > 1) {
		ret = fd_write_all(mn.up_fd, mine, size);
		return ret ? ret : fd_read_all(mn.up_fd, a, (size_t)mn.nranks * size);
	}
	memcpy(a + size, mine, size);
	for (k = 2; k < mn.nranks && !ret; k++)
		ret = fd_read_all(mn.child_fd[k], a + (size_t)k * size, size);
	if (!ret)
		ret = ft_oob_send(a + size, (size_t)(mn.nranks - 1) * size);
	if (!ret)
		ret = ft_oob_recv(a, (size_t)mn.nranks * size);
	for (k = 2; k < mn.nranks && !ret; k++)
		ret = fd_write_all(mn.child_fd[k], a, (size_t)mn.nranks * size);
	return ret;
}

/* The worst status of all ranks, to all. */
static int pm_agree(int status)
{
	int32_t mine = status, *all;
	int k, ret;

	all = calloc((size_t)mn.nranks, sizeof(*all));
	if (!all)
		return -FI_ENOMEM;
	ret = pm_allgather(&mine, all, sizeof(mine));
	for (k = 0; !ret && k < mn.nranks; k++)
		if (all[k] && (!status || all[k] != -FI_ENODATA))
			status = all[k];
	free(all);
	return ret ? ret : status;
}

static int pm_barrier(void)
{
	return pm_agree(0);
}

/* Rank 1 starts ranks 2 .. n-1, each on a socket pair of its own. */
static int start_ranks(void)
{
	int k, sv[2];
	pid_t pid;

	mn.child_fd = calloc((size_t)mn.nranks, sizeof(*mn.child_fd));
	mn.child_pid = calloc((size_t)mn.nranks, sizeof(*mn.child_pid));
	if (!mn.child_fd || !mn.child_pid)
		return -FI_ENOMEM;
	fflush(stdout);
	fflush(stderr);
	for (k = 2; k < mn.nranks; k++) {
		if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv))
			return -errno;
		pid = fork();
		if (pid < 0)
			return -errno;
		if (!pid) {
			/* A rank of the job: its channel is the pair; it
			 * dies with the client. */
			prctl(PR_SET_PDEATHSIG, SIGKILL);
			close(sv[0]);
			close(ft.oob);
			ft.oob = -1;
			for (int j = 2; j < k; j++)
				close(mn.child_fd[j]);
			mn.up_fd = sv[1];
			mn.rank = k;
			return 0;
		}
		close(sv[1]);
		mn.child_fd[k] = sv[0];
		mn.child_pid[k] = pid;
	}
	return 0;
}

/* Rank 1: its children's statuses, folded into ret; none is left. */
static int reap_ranks(int ret)
{
	int k, status;
	double end = ft_now() + ft.opts.timeout;

	for (k = 2; mn.child_pid && k < mn.nranks; k++) {
		pid_t w;

		if (!mn.child_pid[k])
			continue;
		while (!(w = waitpid(mn.child_pid[k], &status, WNOHANG)) &&
		       ft_now() < end)
			usleep(10000);
		if (w != mn.child_pid[k]) {
			kill(mn.child_pid[k], SIGKILL);
			waitpid(mn.child_pid[k], &status, 0);
			ft_err("rank %d did not exit", k);
			ret = ret ? ret : -FI_ETIMEDOUT;
			continue;
		}
		if (!WIFEXITED(status) || WEXITSTATUS(status)) {
			ft_err("rank %d ended with status 0x%x", k, status);
			if (!ret)
				ret = WIFEXITED(status) &&
						      WEXITSTATUS(status) ==
							      FT_EXIT_NOTSUPP ?
					      -FI_ENODATA :
					      -FI_EIO;
		}
	}
	return ret;
}

/* ---- the endpoint, as the test sets it up ----------------------------------- */

static int mn_getinfo(void)
{
	struct fi_info *hints = fi_allocinfo();
	const char *node;
	uint64_t flags = 0;
	int ret;

	if (!hints)
		return -FI_ENOMEM;
	hints->ep_attr->type = FI_EP_RDM;
	hints->caps = FI_MSG | FI_RMA | (mn.tagged ? FI_TAGGED : 0);
	hints->mode = FI_CONTEXT;
	hints->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_ENDPOINT |
				      FI_MR_VIRT_ADDR | FI_MR_ALLOCATED |
				      FI_MR_PROV_KEY;
	if (ft.opts.prov)
		hints->fabric_attr->prov_name = strdup(ft.opts.prov);
	if (ft.opts.domain)
		hints->domain_attr->name = strdup(ft.opts.domain);
	if (ft.opts.fabric)
		hints->fabric_attr->name = strdup(ft.opts.fabric);
	/* As that test's ranks do: the first binds the source address, the
	 * others name it as the destination. */
	if (mn.rank == 0) {
		node = ft.opts.src_addr;
		flags = node ? FI_SOURCE : 0;
	} else {
		node = ft.opts.dst_addr;
	}
	ret = fi_getinfo(FI_VERSION(1, 17), node, NULL, flags, hints,
			 &mn.info);
	if (ret == -FI_ENODATA && node && mn.rank)
		ret = fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints,
				 &mn.info);
	fi_freeinfo(hints);
	if (ret && ret != -FI_ENODATA)
		FT_ERR("fi_getinfo", ret);
	return ret;
}

static int mn_open(void)
{
	struct fi_cq_attr cq_attr = { .format = mn.tagged ?
						FI_CQ_FORMAT_TAGGED :
						FI_CQ_FORMAT_CONTEXT,
				      .wait_obj = FI_WAIT_NONE };
	struct fi_av_attr av_attr = { .count = (size_t)mn.nranks };
	struct fi_mr_attr mr_attr = { 0 };
	struct iovec iov;
	int ret;

	ret = fi_fabric(mn.info->fabric_attr, &mn.fabric, NULL);
	if (ret)
		goto err;
	ret = fi_domain(mn.fabric, mn.info, &mn.domain, NULL);
	if (ret)
		goto err;
	cq_attr.size = mn.info->tx_attr->size;
	ret = fi_cq_open(mn.domain, &cq_attr, &mn.txcq, NULL);
	if (ret)
		goto err;
	cq_attr.size = mn.info->rx_attr->size;
	ret = fi_cq_open(mn.domain, &cq_attr, &mn.rxcq, NULL);
	if (ret)
		goto err;
	if (mn.info->domain_attr->av_type != FI_AV_UNSPEC)
		av_attr.type = mn.info->domain_attr->av_type;
	ret = fi_av_open(mn.domain, &av_attr, &mn.av, NULL);
	if (ret)
		goto err;
	ret = fi_endpoint(mn.domain, mn.info, &mn.ep, NULL);
	if (ret)
		goto err;
	ret = fi_ep_bind(mn.ep, &mn.av->fid, 0);
	if (!ret)
		ret = fi_ep_bind(mn.ep, &mn.txcq->fid, FI_TRANSMIT);
	if (!ret)
		ret = fi_ep_bind(mn.ep, &mn.rxcq->fid, FI_RECV);
	if (!ret)
		ret = fi_enable(mn.ep);
	if (ret)
		goto err;

	/* Receive slots, then transmit slots; one registration. */
	mn.slot = ft.max_size > MN_CTRL ? ft.max_size : MN_CTRL;
	mn.buf_size = 2 * mn.slot * (size_t)mn.nranks;
	mn.buf = calloc(1, mn.buf_size);
	if (!mn.buf)
		return -FI_ENOMEM;
	mn.rx_buf = mn.buf;
	mn.tx_buf = mn.buf + mn.slot * (size_t)mn.nranks;
	iov.iov_base = mn.buf;
	iov.iov_len = mn.buf_size;
	mr_attr.mr_iov = &iov;
	mr_attr.iov_count = 1;
	mr_attr.access = FI_SEND | FI_RECV | FI_READ | FI_WRITE |
			 FI_REMOTE_READ | FI_REMOTE_WRITE;
	mr_attr.requested_key = 0xC0DE;
	ret = fi_mr_regattr(mn.domain, &mr_attr, 0, &mn.mr);
	if (ret)
		goto err;
	mn.desc = fi_mr_desc(mn.mr);
	if (mn.info->domain_attr->mr_mode & FI_MR_ENDPOINT) {
		ret = fi_mr_bind(mn.mr, &mn.ep->fid, 0);
		if (!ret)
			ret = fi_mr_enable(mn.mr);
		if (ret)
			goto err;
	}
	return 0;
err:
	FT_ERR("setting up the endpoint", ret);
	return ret;
}

static void mn_close(void)
{
	if (mn.mr)
		ft_close_fid(&mn.mr->fid, "mr");
	if (mn.ep)
		ft_close_fid(&mn.ep->fid, "endpoint");
	if (mn.av)
		ft_close_fid(&mn.av->fid, "av");
	if (mn.rxcq)
		ft_close_fid(&mn.rxcq->fid, "rx cq");
	if (mn.txcq)
		ft_close_fid(&mn.txcq->fid, "tx cq");
	if (mn.domain)
		ft_close_fid(&mn.domain->fid, "domain");
	if (mn.fabric)
		ft_close_fid(&mn.fabric->fid, "fabric");
	fi_freeinfo(mn.info);
	free(mn.buf);
}

/* Names and receive slots of every rank (every rank takes part in both
 * exchanges, whatever failed here). */
static int mn_exchange(void)
{
	char name[MN_NAME] = { 0 }, *names;
	struct mn_rkey mine = { 0 };
	size_t len = sizeof(name);
	int k, ret, err;

	names = calloc((size_t)mn.nranks, MN_NAME);
	mn.addr = calloc((size_t)mn.nranks, sizeof(*mn.addr));
	mn.rkey = calloc((size_t)mn.nranks, sizeof(*mn.rkey));
	if (!names || !mn.addr || !mn.rkey)
		exit(1);
	err = fi_getname(&mn.ep->fid, name, &len);
	if (err)
		FT_ERR("fi_getname", err);
	ret = pm_allgather(name, names, MN_NAME);
	for (k = 0; !ret && !err && k < mn.nranks; k++) {
		ret = fi_av_insert(mn.av, names + (size_t)k * MN_NAME, 1,
				   &mn.addr[k], 0, NULL);
		if (ret != 1) {
			ft_err("rank %d: fi_av_insert of rank %d: %d", mn.rank,
			       k, ret);
			ret = -FI_EINVAL;
		} else {
			ret = 0;
		}
	}
	free(names);
	if (ret)
		return ret;
	mine.addr = mn.info->domain_attr->mr_mode & FI_MR_VIRT_ADDR ?
			    (uint64_t)(uintptr_t)mn.rx_buf :
			    0;
	mine.key = fi_mr_key(mn.mr);
	mine.len = mn.slot * (size_t)mn.nranks;
	ret = pm_allgather(&mine, mn.rkey, sizeof(mine));
	/* Each rank writes into its own slot of the others'. */
	for (k = 0; !ret && k < mn.nranks; k++)
		mn.rkey[k].addr += mn.slot * (uint64_t)mn.rank;
	return ret ? ret : err;
}

/* ---- the patterns ------------------------------------------------------------ */

/* The next rank this one writes to after cur (-1: none yet); -1 at the
 * end. */
static int next_target(int pattern, int cur)
{
	int n = mn.nranks, me = mn.rank;

	switch (pattern) {
	case MN_MESH:
		return cur + 1 < n ? cur + 1 : -1;
	case MN_RING:
		return cur < 0 ? (me + 1) % n : -1;
	case MN_GATHER:
		return cur < 0 && me ? 0 : -1;
	default: /* broadcast */
		if (me)
			return -1;
		return cur + 1 < n ? (cur < 0 ? 1 : cur + 1) : -1;
	}
}

/* Whether src writes to dst in a pattern. */
static bool writes_to(int pattern, int src, int dst)
{
	switch (pattern) {
	case MN_MESH:
		return true;
	case MN_RING:
		return (src + 1) % mn.nranks == dst;
	case MN_GATHER:
		return src && !dst;
	default:
		return !src && dst;
	}
}

static uint64_t fill_seed(int pattern, int src, int dst, int iter)
{
	return ((uint64_t)mn.size << 40) ^ ((uint64_t)pattern << 36) ^
	       ((uint64_t)src << 28) ^ ((uint64_t)dst << 20) ^ (uint64_t)iter;
}

/* ---- completions --------------------------------------------------------------- */

static void mn_report(void)
{
	ft_err("rank %d: %s, %s iteration %d: transmits %llu of %llu "
	       "completed, receives %llu of %llu",
	       mn.rank, mn.where, mn_pattern_name[mn.pattern], mn.iter,
	       (unsigned long long)mn.tx_done, (unsigned long long)mn.tx_seq,
	       (unsigned long long)mn.rx_done, (unsigned long long)mn.rx_seq);
}

/* Read one completion of cq into its count: 1, 0 (none), or an error. */
static int mn_read(struct fid_cq *cq)
{
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err = { 0 };
	ssize_t ret;

	ret = fi_cq_read(cq, &e, 1);
	if (ret == 1) {
		if (mn.tagged && cq == mn.rxcq && e.tag != MN_BARRIER_TAG) {
			ft_err("rank %d: a barrier message of tag %#llx",
			       mn.rank, (unsigned long long)e.tag);
			mn_report();
			return -FI_EIO;
		}
		if (cq == mn.txcq)
			mn.tx_done++;
		else
			mn.rx_done++;
		ft_alive();
		return 1;
	}
	if (ret == -FI_EAGAIN)
		return 0;
	if (ret == -FI_EAVAIL && fi_cq_readerr(cq, &err, 0) == 1) {
		ft_err("rank %d: %s completion in error: %s (%d)", mn.rank,
		       cq == mn.txcq ? "a transmit" : "a receive",
		       fi_strerror(err.err), err.err);
		mn_report();
		return -FI_EIO;
	}
	FT_ERR("fi_cq_read", ret);
	return (int)ret;
}

/* Until *done reaches want, reading cq alone; -T bounds a stall. */
static int mn_wait(struct fid_cq *cq, uint64_t *done, uint64_t want,
		   const char *what)
{
	double last = ft_now();
	int ret;

	mn.where = what;
	while (*done < want) {
		ret = mn_read(cq);
		if (ret < 0)
			return ret;
		if (ret) {
			last = ft_now();
			continue;
		}
		if (ft_now() - last > ft.opts.timeout) {
			ft_err("rank %d: no completion for %d s", mn.rank,
			       ft.opts.timeout);
			mn_report();
			return -FI_ETIMEDOUT;
		}
		sched_yield();
	}
	return 0;
}

/* Post with call, retrying -FI_EAGAIN after a read of cq. */
#define MN_POST(cq, what, call)                                             \
	({                                                                  \
		double mn_t_ = ft_now();                                    \
		ssize_t mn_r_;                                              \
		mn.where = (what);                                          \
		while ((mn_r_ = (call)) == -FI_EAGAIN) {                    \
			int mn_c_ = mn_read(cq);                            \
			if (mn_c_ < 0) {                                    \
				mn_r_ = mn_c_;                              \
				break;                                      \
			}                                                   \
			if (mn_c_)                                          \
				mn_t_ = ft_now();                           \
			if (ft_now() - mn_t_ > ft.opts.timeout) {           \
				mn_report();                                \
				mn_r_ = -FI_ETIMEDOUT;                      \
				break;                                      \
			}                                                   \
		}                                                           \
		if (mn_r_)                                                  \
			FT_ERR(what, mn_r_);                                \
		(int)mn_r_;                                                 \
	})

/* ---- one pattern ---------------------------------------------------------------- */

static int mn_barrier(void)
{
	int k, ret;

	for (k = 0; k < mn.nranks; k++) {
		ret = mn.tagged ?
			MN_POST(mn.rxcq, "posting a barrier receive",
				fi_trecv(mn.ep, NULL, MN_CTRL, NULL,
					 mn.addr[k], MN_BARRIER_TAG, 0,
					 NULL)) :
			MN_POST(mn.rxcq, "posting a barrier receive",
				fi_recv(mn.ep, mn.rx_buf, mn.slot, mn.desc,
					FI_ADDR_UNSPEC, &mn.bar_rx_ctx[k]));
		if (ret)
			return ret;
		mn.rx_seq++;
	}
	for (k = 0; k < mn.nranks; k++) {
		ret = mn.tagged ?
			MN_POST(mn.txcq, "posting a barrier send",
				fi_tsend(mn.ep, NULL, 0, NULL, mn.addr[k],
					 MN_BARRIER_TAG, NULL)) :
			MN_POST(mn.txcq, "posting a barrier send",
				fi_send(mn.ep, mn.tx_buf, 0, mn.desc,
					mn.addr[k], &mn.bar_tx_ctx[k]));
		if (ret)
			return ret;
		mn.tx_seq++;
	}
	ret = mn_wait(mn.txcq, &mn.tx_done, mn.tx_seq,
		      "waiting for the barrier's sends");
	if (!ret)
		ret = mn_wait(mn.rxcq, &mn.rx_done, mn.rx_seq,
			      "waiting for the barrier's messages");
	return ret;
}

static int mn_iteration(int pattern, int iter)
{
	int target = -1, window = mn.window, ret;
	char *src;

	for (;;) {
		/* Writes, at most a window of them... */
		while (window && (target = next_target(pattern, target)) >= 0) {
			src = mn.tx_buf + mn.slot * (size_t)target;
			ft_fill(src, mn.size,
				fill_seed(pattern, mn.rank, target, iter));
			ret = MN_POST(mn.txcq, "fi_write",
				      fi_write(mn.ep, src, mn.size, mn.desc,
					       mn.addr[target],
					       mn.rkey[target].addr,
					       mn.rkey[target].key,
					       &mn.tx_ctx[window - 1]));
			if (ret)
				return ret;
			mn.tx_seq++;
			window--;
		}
		/* ... then all of their completions. */
		ret = mn_wait(mn.txcq, &mn.tx_done, mn.tx_seq,
			      "waiting for the writes");
		if (ret)
			return ret;
		if (target < 0)
			break;
		window = mn.window;
	}
	return mn_barrier();
}

/* What the others wrote here in a pattern's last iteration. */
static int mn_check(int pattern)
{
	double end = ft_now() + ft.opts.timeout;
	int src, bad = -1;
	uint8_t *want;

	want = malloc(mn.size);
	if (!want)
		return -FI_ENOMEM;
	for (;;) {
		bad = -1;
		for (src = 0; src < mn.nranks && bad < 0; src++) {
			if (!writes_to(pattern, src, mn.rank))
				continue;
			ft_fill(want, mn.size,
				fill_seed(pattern, src, mn.rank,
					  ft.opts.iters - 1));
			if (memcmp(want, mn.rx_buf + mn.slot * (size_t)src,
				   mn.size))
				bad = src;
		}
		if (bad < 0 || ft_now() > end)
			break;
		/* A write may still be on its way in: progress. */
		if (mn_read(mn.rxcq) < 0 || mn_read(mn.txcq) < 0)
			break;
		sched_yield();
	}
	free(want);
	if (bad >= 0) {
		ft_err("rank %d: %s: what rank %d wrote here in the last "
		       "iteration is not there",
		       mn.rank, mn_pattern_name[pattern], bad);
		return -FI_EIO;
	}
	return 0;
}

/* Every pattern with writes of mn.size bytes. */
static int mn_run_size(void)
{
	int pattern, iter, ret = 0;

	for (pattern = 0; pattern < MN_NPATTERNS && !ret; pattern++) {
		mn.pattern = pattern;
		for (iter = 0; iter < ft.opts.iters && !ret; iter++) {
			mn.iter = iter;
			ret = mn_iteration(pattern, iter);
		}
		/* Every rank is done with the pattern: what they wrote is
		 * here. */
		ret = pm_agree(ret);
		if (!ret)
			ret = pm_agree(mn_check(pattern));
		if (!ret && mn.rank == 0)
			printf("%s: %d ranks, %d iterations of %zu-byte writes "
			       "and barriers, data checked\n",
			       mn_pattern_name[pattern], mn.nranks,
			       ft.opts.iters, mn.size);
	}
	return ret;
}

static int mn_run(void)
{
	uint64_t rx0, tx0;
	int si, ret = 0;

	for (si = 0; si < ft.opts.nsizes && !ret; si++) {
		mn.size = ft.opts.sizes[si];
		if (mn.size <= mn.info->ep_attr->max_msg_size)
			ret = mn_run_size();
	}
	if (ret)
		return ret;
	/* Nothing more comes. */
	rx0 = mn.rx_done;
	tx0 = mn.tx_done;
	for (double end = ft_now() + 0.05; ft_now() < end;) {
		if (mn_read(mn.rxcq) < 0 || mn_read(mn.txcq) < 0)
			return -FI_EIO;
	}
	if (mn.rx_done != rx0 || mn.tx_done != tx0) {
		ft_err("rank %d: %llu stray receive and %llu transmit "
		       "completions at the end",
		       mn.rank, (unsigned long long)(mn.rx_done - rx0),
		       (unsigned long long)(mn.tx_done - tx0));
		return -FI_EIO;
	}
	return 0;
}

/* ---- main ---------------------------------------------------------------------- */

static int mn_rank_main(void)
{
	int ret, nr;

	mn.tx_ctx = calloc((size_t)mn.window, sizeof(*mn.tx_ctx));
	mn.bar_tx_ctx = calloc((size_t)mn.nranks, sizeof(*mn.bar_tx_ctx));
	mn.bar_rx_ctx = calloc((size_t)mn.nranks, sizeof(*mn.bar_rx_ctx));
	if (!mn.tx_ctx || !mn.bar_tx_ctx || !mn.bar_rx_ctx)
		return -FI_ENOMEM;
	/* Same job on every rank: -n agrees. */
	{
		int32_t mine = mn.nranks, *all = calloc((size_t)mn.nranks,
							sizeof(*all));

		if (!all)
			return -FI_ENOMEM;
		ret = pm_allgather(&mine, all, sizeof(mine));
		for (nr = 0; !ret && nr < mn.nranks; nr++)
			if (all[nr] != mn.nranks) {
				ft_err("rank %d runs with -n %d, rank 0 with "
				       "-n %d", nr, all[nr], mn.nranks);
				ret = -FI_EINVAL;
			}
		free(all);
		if (ret)
			return ret;
	}
	/* The others set up once rank 0 has (its agreement below releases
	 * them, or tells them it failed). */
	if (mn.rank) {
		ret = pm_barrier();
		if (ret)
			return ret;
	}
	ret = mn_getinfo();
	if (!ret)
		ret = mn_open();
	if (!mn.rank) {
		ret = pm_agree(ret);
		if (ret)
			return ret;
	}
	ret = pm_agree(ret);
	if (!ret)
		ret = pm_agree(mn_exchange());
	if (!ret)
		ret = mn_run();
	return ret;
}

int main(int argc, char **argv)
{
	int ret;

	ft_parse(argc, argv, &prog);
	mn.nranks = ft.opts.threads;
	mn.rank = ft.server ? 0 : 1;
	mn.window = ft.opts.window;
	if (!strcmp(ft.opts.op, "tagged")) {
		mn.tagged = true;
	} else if (strcmp(ft.opts.op, "untagged")) {
		ft_err("-o %s: tagged or untagged", ft.opts.op);
		return 2;
	}
	for (ret = 0; ret < ft.opts.nsizes; ret++)
		if (ft.opts.sizes[ret] > ft.max_size)
			ft.max_size = ft.opts.sizes[ret];
	/* The ranks are forked before any thread runs (the watchdog):
	 * threads do not survive fork(), and a child of a threaded parent
	 * may inherit a lock another thread held (an allocator's, under
	 * ASan), and hang on it. */
	ret = 0;
	if (mn.rank == 1) {
		ret = start_ranks();
		if (ret) {
			FT_ERR("starting the ranks", ret);
			mn.nranks = 2;
		}
	}
	if (mn.rank > 1) {
		ft_watchdog_start();
	} else if (ft_oob_open()) {
		/* Our ranks see their channel end, and go. */
		for (int k = 2; mn.rank == 1 && mn.child_fd && k < mn.nranks;
		     k++)
			if (mn.child_pid[k])
				close(mn.child_fd[k]);
		if (mn.rank == 1)
			reap_ranks(1);
		return 1;
	}
	/* A rank set up alone fails alone: every exchange agrees first. */
	ret = ret ? ret : mn_rank_main();
	if (mn.rank != 0 && mn.rank != 1) {
		/* A child rank: the others learnt its status. */
		mn_close();
		_exit(!ret ? 0 : ret == -FI_ENODATA ? FT_EXIT_NOTSUPP : 1);
	}
	mn_close();
	if (mn.rank == 1)
		ret = reap_ranks(ret);
	if (ft.oob >= 0) {
		/* Rank 0 and rank 1 settle on one verdict. */
		int32_t mine = ret, peer = 0;

		if (!ft_oob_send(&mine, sizeof(mine)) &&
		    !ft_oob_recv(&peer, sizeof(peer)) && peer && !ret)
			ret = peer;
	}
	if (!ret)
		return 0;
	return ret == -FI_ENODATA ? FT_EXIT_NOTSUPP : 1;
}
