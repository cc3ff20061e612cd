// SPDX-License-Identifier: BSD-2-Clause
/*
 * fi_rpc: a storage RPC client and server, in the shape the RPC layers of
 * storage systems use libfabric:
 *
 *  - fi_getinfo(FI_VERSION(1, 13)) for an RDM endpoint with FI_MSG |
 *    FI_TAGGED | FI_RMA | FI_DIRECTED_RECV (FI_MULTI_RECV for -o multi),
 *    mode FI_CONTEXT | FI_ASYNC_IOV, FI_THREAD_SAFE, manual progress for
 *    data and control, FI_ADDR_STR when the provider is shm;
 *  - one CQ of FI_WAIT_FD: each side sleeps in poll(2) on the CQ's fd
 *    (fi_control FI_GETWAIT) after fi_trywait says it may, never spins;
 *  - the client sends each request (its endpoint name, the address, key
 *    and length of a registered buffer to read and of one to write) by a
 *    two-entry iov: tagged (-o tagged) into the server's tagged receives,
 *    or untagged (-o multi) into the server's FI_MULTI_RECV buffers;
 *  - the server inserts the client's name in its AV on first contact,
 *    pulls the bulk data with fi_read, checks every byte, pushes an answer
 *    with fi_write (FI_DELIVERY_COMPLETE), then replies by a tagged message
 *    the client receives with a receive directed at the server; the
 *    client checks every byte of the answer;
 *  - -I RPCs, -W of them in flight, bulk sizes cycling through -S.  Keys
 *    and remote addresses follow the mr_mode fi_getinfo returned
 *    (FI_MR_PROV_KEY, FI_MR_VIRT_ADDR).
 *
 * -o tagged-kill and -o multi-kill: after the -I RPCs, the server stops
 * (it prints "server stalled, pid N" and no longer calls into the
 * library); the client puts -W RPCs and one large message in flight,
 * prints "rpcs in flight" and waits.  Whoever runs the test then kills
 * the server with SIGKILL.  The client learns of the death from the side
 * channel closing and must, within KILL_BOUND seconds: see every pending
 * send complete (with an error, or successfully if the data had left),
 * get an error for a new request to the dead server (a completion or the
 * post itself), and get FI_ECANCELED for its reply receives after
 * fi_cancel.  Anything still pending then is a hang, and fails the test.
 * The server's own exit status does not count in this mode.
 *
 * Exit status: 0 passed, 77 not supported (no such endpoint, no
 * FI_WAIT_FD), anything else failed.
 */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "ft.h"

static const struct ft_prog prog = {
	.name = "fi_rpc",
	.summary = "RPCs with bulk data pulled and pushed by RMA, sleeping "
		   "on the CQ fd; a killed server",
	.ep_type = FI_EP_RDM,
	.iters = 500,
	.window = 8,
	.sizes = "1,4k,64k,1m",
	.op = "tagged",
	.ops_help = "request path: tagged, multi, tagged-kill or multi-kill",
};

#define REQ_TAG 0x100000000ULL
#define REPLY_TAG 0x200000000ULL
#define BIG_TAG 0x300000000ULL
#define RPC_MAGIC 0x72706331u	/* "rpc1" */
#define NAME_MAX_LEN 256
#define MAX_CLIENTS 8
#define KILL_BOUND 5		/* seconds from the server's death */
#define BIG_SIZE (16UL << 20)	/* the large message in flight at the kill */
#define MULTI_BUF (64UL << 10)

struct rpc_req {
	uint32_t magic;
	uint32_t id;
	uint64_t size;
	uint64_t in_addr, in_key;	/* the server reads this */
	uint64_t out_addr, out_key;	/* and writes its answer here */
	uint32_t name_len;		/* the client's name follows */
	uint32_t pad;
};

struct rpc_reply {
	uint32_t magic;
	uint32_t id;
	int32_t status;			/* 0, or -FI_EIO: bulk data wrong */
	uint32_t pad;
};

#define REQ_MAX (sizeof(struct rpc_req) + NAME_MAX_LEN)

enum op_kind {
	OP_SEND,	/* client: a request; server: a reply */
	OP_RECV,	/* client: a reply */
	OP_REQ,		/* server: a request buffer (multi or tagged) */
	OP_READ,
	OP_WRITE,
	OP_BIG,
	OP_PROBE,
};

/* The context of every operation (mode FI_CONTEXT). */
struct op {
	struct fi_context fctx;
	enum op_kind kind;
	int slot;
	bool pending;
	int err;		/* positive FI_Exxx of its completion */
};

struct slot {
	bool busy;
	uint32_t id;
	size_t size;
	char *in, *out;		/* client: bulk buffers; server: one bulk buffer */
	char *msg;		/* the request or the reply */
	struct iovec iov[2];	/* FI_ASYNC_IOV: live until completion */
	void *descs[2];
	struct op send, recv, rma;
	bool sent, replied;
	/* server */
	struct rpc_req req;
	fi_addr_t client;
};

static struct {
	bool kill_mode, multi;
	struct fi_info *info;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_av *av;
	struct fid_cq *cq;
	struct fid_ep *ep;
	struct fid_mr *mr;
	void *desc;
	char *buf;
	size_t buf_size;
	uint64_t key;
	int cq_fd;
	bool virt;
	size_t iov_limit;
	char name[NAME_MAX_LEN];
	size_t name_len;
	fi_addr_t server;
	size_t max_size;
	int nslots;
	struct slot *slots;
	/* server: requests waiting for a free slot */
	struct rpc_req *backlog;
	fi_addr_t *backlog_from;
	int nbacklog;
	int nreqbufs;
	char *reqbufs;
	size_t reqbuf_size;
	struct op *reqops;
	struct {
		char name[NAME_MAX_LEN];
		size_t len;
		fi_addr_t addr;
	} clients[MAX_CLIENTS];
	int nclients;
	/* the kill test */
	struct op big, probe;
	char *bigbuf;
	/* counts */
	unsigned long done, served, sleeps, busy, timeouts;
	uint64_t bytes;
} r;

static inline uint64_t rpc_seed_in(uint32_t id) { return 2ULL * id + 1; }
static inline uint64_t rpc_seed_out(uint32_t id) { return 2ULL * id + 2; }

static uint64_t raddr_of(const void *p)
{
	return r.virt ? (uint64_t)(uintptr_t)p : (uint64_t)((const char *)p - r.buf);
}

/* ---- setup ---- */

static struct fi_info *rpc_hints(bool with_source)
{
	struct fi_info *h = fi_allocinfo();
	bool shm = ft.opts.prov && !strncasecmp(ft.opts.prov, "shm", 3);

	if (!h)
		return NULL;
	h->caps = FI_MSG | FI_TAGGED | FI_RMA | FI_DIRECTED_RECV;
	if (with_source)
		h->caps |= FI_SOURCE;
	if (r.multi) {
		h->caps |= FI_MULTI_RECV;
		h->rx_attr->op_flags = FI_MULTI_RECV;
	}
	h->mode = FI_CONTEXT | FI_ASYNC_IOV;
	h->ep_attr->type = FI_EP_RDM;
	h->domain_attr->threading = FI_THREAD_SAFE;
	h->domain_attr->control_progress = FI_PROGRESS_MANUAL;
	h->domain_attr->data_progress = FI_PROGRESS_MANUAL;
	h->domain_attr->av_type = FI_AV_MAP;
	h->domain_attr->resource_mgmt = FI_RM_ENABLED;
	h->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_ALLOCATED |
				  FI_MR_VIRT_ADDR | FI_MR_PROV_KEY;
	if (shm)
		h->addr_format = FI_ADDR_STR;
	if (ft.opts.prov)
		h->fabric_attr->prov_name = strdup(ft.opts.prov);
	if (ft.opts.domain)
		h->domain_attr->name = strdup(ft.opts.domain);
	if (ft.opts.fabric)
		h->fabric_attr->name = strdup(ft.opts.fabric);
	return h;
}

static int rpc_getinfo(void)
{
	const char *node = ft.server || !ft.opts.src_addr ? ft.opts.src_addr : NULL;
	bool shm = ft.opts.prov && !strncasecmp(ft.opts.prov, "shm", 3);
	struct fi_info *h;
	int ret, pass;

	if (shm)
		node = NULL;	/* shm names are not host addresses */
	for (pass = 0; pass < 2; pass++) {
		h = rpc_hints(pass == 0);
		if (!h)
			return -FI_ENOMEM;
		ret = fi_getinfo(FI_VERSION(1, 13), node, NULL,
				 node ? FI_SOURCE : 0, h, &r.info);
		fi_freeinfo(h);
		if (ret != -FI_ENODATA)
			break;
	}
	if (ret == -FI_ENODATA)
		fprintf(stderr, "%s: fi_getinfo(1.13): provider %s has no RDM "
			"endpoint for these hints\n", prog.name,
			ft.opts.prov ? ft.opts.prov : "(any)");
	else if (ret)
		FT_ERR("fi_getinfo", ret);
	return ret;
}

static int rpc_layout(void)
{
	size_t per_slot, off = 0;
	int i;

	r.max_size = 0;
	for (i = 0; i < ft.opts.nsizes; i++)
		if (ft.opts.sizes[i] > r.max_size)
			r.max_size = ft.opts.sizes[i];
	if (r.max_size > r.info->ep_attr->max_msg_size) {
		ft_err("size %zu is above max_msg_size %zu", r.max_size,
		       r.info->ep_attr->max_msg_size);
		return -FI_EINVAL;
	}
	r.nslots = ft.server ? 2 * ft.opts.window : ft.opts.window;
	r.slots = calloc(r.nslots, sizeof(*r.slots));
	if (!r.slots)
		return -FI_ENOMEM;
	per_slot = 2 * ((r.max_size + 63) & ~(size_t)63) + 3 * REQ_MAX;
	r.nreqbufs = r.multi ? 2 : 2 * ft.opts.window;
	r.reqbuf_size = r.multi ? MULTI_BUF : REQ_MAX;
	r.buf_size = per_slot * r.nslots + r.nreqbufs * r.reqbuf_size;
	if (!ft.server && r.kill_mode)
		r.buf_size += BIG_SIZE;
	if (posix_memalign((void **)&r.buf, 4096, r.buf_size))
		return -FI_ENOMEM;
	memset(r.buf, 0, r.buf_size);
	for (i = 0; i < r.nslots; i++) {
		struct slot *s = &r.slots[i];

		s->in = r.buf + off;
		off += (r.max_size + 63) & ~(size_t)63;
		s->out = r.buf + off;
		off += (r.max_size + 63) & ~(size_t)63;
		s->msg = r.buf + off;
		off += 3 * REQ_MAX;
		s->send.kind = OP_SEND;
		s->recv.kind = OP_RECV;
		s->rma.kind = OP_READ;
		s->send.slot = s->recv.slot = s->rma.slot = i;
	}
	r.reqbufs = r.buf + off;
	off += r.nreqbufs * r.reqbuf_size;
	r.bigbuf = r.buf + off;
	r.reqops = calloc(r.nreqbufs, sizeof(*r.reqops));
	r.backlog = calloc(4 * ft.opts.window, sizeof(*r.backlog));
	r.backlog_from = calloc(4 * ft.opts.window, sizeof(*r.backlog_from));
	if (!r.reqops || !r.backlog || !r.backlog_from)
		return -FI_ENOMEM;
	for (i = 0; i < r.nreqbufs; i++) {
		r.reqops[i].kind = OP_REQ;
		r.reqops[i].slot = i;
	}
	r.big.kind = OP_BIG;
	r.probe.kind = OP_PROBE;
	return 0;
}

static int rpc_open(void)
{
	struct fi_cq_attr cq_attr = {
		.format = FI_CQ_FORMAT_TAGGED,
		.size = 1024,
		.wait_obj = FI_WAIT_FD,
	};
	struct fi_av_attr av_attr = { .type = FI_AV_MAP, .count = 64 };
	uint64_t access = FI_SEND | FI_RECV | FI_READ | FI_WRITE |
			  FI_REMOTE_READ | FI_REMOTE_WRITE;
	int ret;

	ret = fi_fabric(r.info->fabric_attr, &r.fabric, NULL);
	if (ret) {
		FT_ERR("fi_fabric", ret);
		return ret;
	}
	ret = fi_domain(r.fabric, r.info, &r.domain, NULL);
	if (ret) {
		FT_ERR("fi_domain", ret);
		return ret;
	}
	ret = fi_cq_open(r.domain, &cq_attr, &r.cq, NULL);
	if (ret == -FI_ENOSYS || ret == -FI_EOPNOTSUPP || ret == -FI_EINVAL) {
		fprintf(stderr, "%s: the provider has no FI_WAIT_FD CQ (%s)\n",
			prog.name, fi_strerror(-ret));
		return -FI_ENODATA;
	}
	if (ret) {
		FT_ERR("fi_cq_open", ret);
		return ret;
	}
	ret = fi_control(&r.cq->fid, FI_GETWAIT, &r.cq_fd);
	if (ret) {
		FT_ERR("fi_control(FI_GETWAIT)", ret);
		return ret;
	}
	ret = fi_av_open(r.domain, &av_attr, &r.av, NULL);
	if (ret) {
		FT_ERR("fi_av_open", ret);
		return ret;
	}
	ret = fi_endpoint(r.domain, r.info, &r.ep, NULL);
	if (ret) {
		FT_ERR("fi_endpoint", ret);
		return ret;
	}
	ret = fi_ep_bind(r.ep, &r.cq->fid, FI_TRANSMIT | FI_RECV);
	if (!ret)
		ret = fi_ep_bind(r.ep, &r.av->fid, 0);
	if (ret) {
		FT_ERR("fi_ep_bind", ret);
		return ret;
	}
	ret = fi_enable(r.ep);
	if (ret) {
		FT_ERR("fi_enable", ret);
		return ret;
	}
	if (r.multi) {
		size_t min = REQ_MAX;

		ret = fi_setopt(&r.ep->fid, FI_OPT_ENDPOINT,
				FI_OPT_MIN_MULTI_RECV, &min, sizeof(min));
		if (ret) {
			FT_ERR("fi_setopt(FI_OPT_MIN_MULTI_RECV)", ret);
			return ret;
		}
	}
	ret = fi_mr_reg(r.domain, r.buf, r.buf_size, access, 0, 0x5eed, 0,
			&r.mr, NULL);
	if (ret) {
		FT_ERR("fi_mr_reg", ret);
		return ret;
	}
	r.desc = fi_mr_desc(r.mr);
	r.key = fi_mr_key(r.mr);
	if (r.key == FI_KEY_NOTAVAIL) {
		ft_err("the MR key does not fit 64 bits (mr_key_size %zu)",
		       r.info->domain_attr->mr_key_size);
		return -FI_ENODATA;
	}
	r.virt = !!(r.info->domain_attr->mr_mode & FI_MR_VIRT_ADDR);
	r.iov_limit = r.info->tx_attr->iov_limit;
	r.name_len = sizeof(r.name);
	ret = fi_getname(&r.ep->fid, r.name, &r.name_len);
	if (ret) {
		FT_ERR("fi_getname", ret);
		return ret;
	}
	return 0;
}

/* ---- completions and sleeping on the CQ fd ---- */

static int handle(struct op *op, const struct fi_cq_tagged_entry *ent,
		  fi_addr_t src, int err);

static int drain(void)
{
	struct fi_cq_tagged_entry ent[16];
	fi_addr_t src[16];
	ssize_t n;
	int i, ret, total = 0;

	for (;;) {
		n = fi_cq_readfrom(r.cq, ent, 16, src);
		if (n == -FI_EAGAIN)
			return total;
		if (n == -FI_EAVAIL) {
			struct fi_cq_err_entry e = { 0 };

			n = fi_cq_readerr(r.cq, &e, 0);
			if (n == -FI_EAGAIN)
				continue;
			if (n < 0) {
				FT_ERR("fi_cq_readerr", n);
				return (int)n;
			}
			struct fi_cq_tagged_entry te = {
				.op_context = e.op_context,
				.flags = e.flags,
				.len = e.len,
				.buf = e.buf,
				.tag = e.tag,
			};
			ret = handle(e.op_context, &te, FI_ADDR_NOTAVAIL,
				     e.err ? e.err : FI_EIO);
			if (ret)
				return ret;
			total++;
			continue;
		}
		if (n < 0) {
			FT_ERR("fi_cq_readfrom", n);
			return (int)n;
		}
		ft_alive();
		for (i = 0; i < n; i++) {
			ret = handle(ent[i].op_context, &ent[i], src[i], 0);
			if (ret)
				return ret;
			total++;
		}
	}
}

/*
 * Handle what the CQ holds; when it holds nothing, sleep on its fd (and
 * on extra_fd, when >= 0) for up to ms milliseconds, as fi_trywait allows.
 * Returns the count of completions handled, or < 0.
 */
static int progress(int ms, int extra_fd, bool *extra_ready)
{
	struct fid *fids[1] = { &r.cq->fid };
	struct pollfd pfd[2] = {
		{ .fd = r.cq_fd, .events = POLLIN },
		{ .fd = extra_fd, .events = POLLIN },
	};
	int ret;

	ret = drain();
	if (ret)
		return ret;
	ret = fi_trywait(r.fabric, fids, 1);
	if (ret == -FI_EAGAIN) {
		/* Progress is due: no sleep, but look at extra_fd. */
		r.busy++;
		ms = 0;
		pfd[0].fd = -1;
	} else if (ret) {
		FT_ERR("fi_trywait", ret);
		return ret;
	} else {
		r.sleeps++;
	}
	do {
		ret = poll(pfd, extra_fd >= 0 ? 2 : 1, ms);
	} while (ret < 0 && errno == EINTR);
	if (ret < 0) {
		ret = -errno;
		ft_err("poll on the CQ fd: %s", strerror(errno));
		return ret;
	}
	if (!ret && ms)
		r.timeouts++;
	if (extra_fd >= 0 && (pfd[1].revents & (POLLIN | POLLHUP | POLLERR)))
		*extra_ready = true;
	return drain();
}

/* Post, retrying -FI_EAGAIN while handling completions; bounded by -T. */
#define POST(what, call) ({						\
	ssize_t r_;							\
	double t_ = ft_now();						\
	for (;;) {							\
		r_ = (call);						\
		if (r_ != -FI_EAGAIN)					\
			break;						\
		r_ = progress(10, -1, NULL);				\
		if (r_ < 0)						\
			break;						\
		if (ft_now() - t_ > ft.opts.timeout) {			\
			r_ = -FI_ETIMEDOUT;				\
			break;						\
		}							\
	}								\
	if (r_ < 0 && !r.kill_mode)					\
		FT_ERR(what, r_);					\
	(int)(r_ < 0 ? r_ : 0);						\
})

/*
 * Wait until *cond holds, sleeping on the CQ fd.  Nothing handled for -T
 * seconds is a hang: the fd never woke although work was pending.
 */
static int wait_until(bool (*cond)(void), const char *what)
{
	double last = ft_now();
	int ret, left;

	while (!cond()) {
		left = (int)((last + ft.opts.timeout - ft_now()) * 1000);
		if (left <= 0) {
			ft_err("%s: nothing completed for %d s (slept %lu "
			       "times on the CQ fd, %lu timed out): the fd "
			       "never woke", what, ft.opts.timeout, r.sleeps,
			       r.timeouts);
			return -FI_ETIMEDOUT;
		}
		ret = progress(left, -1, NULL);
		if (ret < 0)
			return ret;
		if (ret > 0)
			last = ft_now();
	}
	return 0;
}

/* ---- the server ---- */

static int post_reqbuf(int i)
{
	struct op *op = &r.reqops[i];
	char *buf = r.reqbufs + (size_t)i * r.reqbuf_size;

	op->pending = true;
	if (r.multi) {
		struct iovec iov = { .iov_base = buf, .iov_len = r.reqbuf_size };
		struct fi_msg msg = {
			.msg_iov = &iov,
			.desc = &r.desc,
			.iov_count = 1,
			.addr = FI_ADDR_UNSPEC,
			.context = op,
		};

		return POST("fi_recvmsg(FI_MULTI_RECV)",
			    fi_recvmsg(r.ep, &msg, FI_MULTI_RECV));
	}
	return POST("fi_trecv", fi_trecv(r.ep, buf, r.reqbuf_size, r.desc,
					 FI_ADDR_UNSPEC, REQ_TAG, 0, op));
}

static int client_addr(const char *name, size_t len, fi_addr_t *addr)
{
	int i, ret;

	for (i = 0; i < r.nclients; i++)
		if (r.clients[i].len == len &&
		    !memcmp(r.clients[i].name, name, len)) {
			*addr = r.clients[i].addr;
			return 0;
		}
	if (r.nclients == MAX_CLIENTS) {
		ft_err("more than %d clients", MAX_CLIENTS);
		return -FI_ENOSPC;
	}
	ret = fi_av_insert(r.av, name, 1, addr, 0, NULL);
	if (ret != 1) {
		FT_ERR("fi_av_insert(client)", ret < 0 ? ret : -FI_EINVAL);
		return ret < 0 ? ret : -FI_EINVAL;
	}
	memcpy(r.clients[r.nclients].name, name, len);
	r.clients[r.nclients].len = len;
	r.clients[r.nclients].addr = *addr;
	r.nclients++;
	return 0;
}

static int start_rpc(const struct rpc_req *req, fi_addr_t from)
{
	struct slot *s = NULL;
	int i;

	for (i = 0; i < r.nslots; i++)
		if (!r.slots[i].busy) {
			s = &r.slots[i];
			break;
		}
	if (!s) {
		if (r.nbacklog == 4 * ft.opts.window) {
			ft_err("more requests than the client may have in "
			       "flight");
			return -FI_EIO;
		}
		r.backlog[r.nbacklog] = *req;
		r.backlog_from[r.nbacklog++] = from;
		return 0;
	}
	s->busy = true;
	s->req = *req;
	s->id = req->id;
	s->size = req->size;
	s->client = from;
	s->rma.kind = OP_READ;
	s->rma.pending = true;
	memset(s->in, 0, s->size);
	return POST("fi_read", fi_read(r.ep, s->in, s->size, r.desc, from,
				       req->in_addr, req->in_key, &s->rma));
}

static int take_request(const char *data, size_t len, fi_addr_t src)
{
	struct rpc_req req;
	fi_addr_t from;
	int ret;

	if (len < sizeof(req)) {
		ft_err("request of %zu bytes", len);
		return -FI_EIO;
	}
	memcpy(&req, data, sizeof(req));
	if (req.magic != RPC_MAGIC || req.name_len > NAME_MAX_LEN ||
	    len != sizeof(req) + req.name_len || req.size > r.max_size) {
		ft_err("malformed request (magic %#x, %zu bytes, name %u, "
		       "size %" PRIu64 ")", req.magic, len, req.name_len,
		       req.size);
		return -FI_EIO;
	}
	ret = client_addr(data + sizeof(req), req.name_len, &from);
	if (ret)
		return ret;
	if (src != FI_ADDR_NOTAVAIL && src != FI_ADDR_UNSPEC && src != from) {
		ft_err("request %u: FI_SOURCE gave address %#" PRIx64
		       ", the client's name maps to %#" PRIx64, req.id,
		       (uint64_t)src, (uint64_t)from);
		return -FI_EIO;
	}
	return start_rpc(&req, from);
}

static int server_handle(struct op *op, const struct fi_cq_tagged_entry *ent,
			 fi_addr_t src, int err)
{
	struct slot *s = op->kind == OP_REQ ? NULL : &r.slots[op->slot];
	struct rpc_reply *rep;
	int ret;

	if (err) {
		ft_err("server: %s completed with %s",
		       op->kind == OP_REQ ? "a request receive" :
		       op->kind == OP_READ ? "fi_read" :
		       op->kind == OP_WRITE ? "fi_write" : "a reply",
		       fi_strerror(err));
		return -err;
	}
	switch (op->kind) {
	case OP_REQ:
		if (ent->len) {
			ret = take_request(ent->buf, ent->len, src);
			if (ret)
				return ret;
		}
		if (!r.multi || (ent->flags & FI_MULTI_RECV)) {
			op->pending = false;
			return post_reqbuf(op->slot);
		}
		return 0;
	case OP_READ:
		ret = ft_check(s->in, s->size, rpc_seed_in(s->id),
			       "bulk data read from the client");
		rep = (struct rpc_reply *)s->msg;
		rep->magic = RPC_MAGIC;
		rep->id = s->id;
		rep->status = ret;
		r.bytes += s->size;
		ft_fill(s->out, s->size, rpc_seed_out(s->id));
		{
			struct iovec iov = { .iov_base = s->out,
					     .iov_len = s->size };
			struct fi_rma_iov rma = { .addr = s->req.out_addr,
						  .len = s->size,
						  .key = s->req.out_key };
			struct fi_msg_rma msg = {
				.msg_iov = &iov,
				.desc = &r.desc,
				.iov_count = 1,
				.addr = s->client,
				.rma_iov = &rma,
				.rma_iov_count = 1,
				.context = &s->rma,
			};

			s->rma.kind = OP_WRITE;
			return POST("fi_writemsg",
				    fi_writemsg(r.ep, &msg,
						FI_COMPLETION |
						FI_DELIVERY_COMPLETE));
		}
	case OP_WRITE:
		s->rma.pending = false;
		return POST("fi_tsend",
			    fi_tsend(r.ep, s->msg, sizeof(struct rpc_reply),
				     r.desc, s->client, REPLY_TAG | s->id,
				     &s->send));
	case OP_SEND:
		s->busy = false;
		r.served++;
		if (r.nbacklog) {
			struct rpc_req req = r.backlog[0];
			fi_addr_t from = r.backlog_from[0];

			r.nbacklog--;
			memmove(r.backlog, r.backlog + 1,
				r.nbacklog * sizeof(*r.backlog));
			memmove(r.backlog_from, r.backlog_from + 1,
				r.nbacklog * sizeof(*r.backlog_from));
			return start_rpc(&req, from);
		}
		return 0;
	default:
		ft_err("server: unexpected completion (context %p)", (void *)op);
		return -FI_EIO;
	}
}

static bool all_served(void)
{
	return r.served >= (unsigned long)ft.opts.iters;
}

static int run_server(void)
{
	bool note = false;
	double t0;
	char c;
	int i, ret;

	for (i = 0; i < r.nreqbufs; i++) {
		ret = post_reqbuf(i);
		if (ret)
			return ret;
	}
	/* The client may connect now. */
	ret = ft_oob_send(&r.name_len, sizeof(r.name_len));
	if (!ret)
		ret = ft_oob_send(r.name, r.name_len);
	if (!ret)
		ret = wait_until(all_served, "server");
	if (ret)
		return ret;
	/* Wait for the client's note, still answering the CQ. */
	t0 = ft_now();
	while (!note) {
		ret = progress(ft.opts.timeout * 1000, ft.oob, &note);
		if (ret < 0)
			return ret;
		if (!note && ft_now() - t0 > ft.opts.timeout) {
			ft_err("server: the client sent no note within %d s",
			       ft.opts.timeout);
			return -FI_ETIMEDOUT;
		}
	}
	ret = ft_oob_recv(&c, 1);
	if (ret)
		return ret;
	printf("server: %lu RPCs, %" PRIu64 " bulk bytes read and checked, "
	       "as many written; %lu sleeps on the CQ fd, fi_trywait busy "
	       "%lu times\n", r.served, r.bytes, r.sleeps, r.busy);
	fflush(stdout);
	if (!r.sleeps) {
		ft_err("server: fi_trywait never let it sleep on the CQ fd");
		return -FI_EIO;
	}
	if (c == 's') {
		/* The kill test: stop calling into the library, and wait
		 * for SIGKILL (the watchdog ends a run nobody kills). */
		fprintf(stderr, "server stalled, pid %ld\n", (long)getpid());
		fflush(stderr);
		c = 'S';
		ft_oob_send(&c, 1);
		for (;;)
			pause();
	}
	if (c != 'd') {
		ft_err("server: note '%c' from the client", c);
		return -FI_EIO;
	}
	return 0;
}

/* ---- the client ---- */

static int issue(uint32_t id, size_t size)
{
	struct slot *s = NULL;
	struct rpc_req *req;
	int i, ret;

	for (i = 0; i < r.nslots; i++)
		if (!r.slots[i].busy) {
			s = &r.slots[i];
			break;
		}
	if (!s) {
		ft_err("client: no free slot");
		return -FI_EIO;
	}
	s->busy = true;
	s->id = id;
	s->size = size;
	s->sent = s->replied = false;
	ft_fill(s->in, size, rpc_seed_in(id));
	memset(s->out, 0, size);
	/* The reply receive first, directed at the server. */
	s->recv.pending = true;
	s->recv.err = 0;
	ret = POST("fi_trecv", fi_trecv(r.ep, s->msg + REQ_MAX,
					sizeof(struct rpc_reply), r.desc,
					r.server, REPLY_TAG | id, 0, &s->recv));
	if (ret)
		return ret;
	req = (struct rpc_req *)s->msg;
	*req = (struct rpc_req){
		.magic = RPC_MAGIC,
		.id = id,
		.size = size,
		.in_addr = raddr_of(s->in),
		.in_key = r.key,
		.out_addr = raddr_of(s->out),
		.out_key = r.key,
		.name_len = (uint32_t)r.name_len,
	};
	s->iov[0].iov_base = req;
	s->iov[0].iov_len = sizeof(*req);
	s->descs[0] = s->descs[1] = r.desc;
	if (r.iov_limit >= 2) {
		/* the name from a buffer of its own: a second iov entry */
		s->iov[1].iov_base = s->msg + 2 * REQ_MAX;
		memcpy(s->iov[1].iov_base, r.name, r.name_len);
		s->iov[1].iov_len = r.name_len;
	} else {
		memcpy(s->msg + sizeof(*req), r.name, r.name_len);
		s->iov[0].iov_len += r.name_len;
	}
	s->send.pending = true;
	s->send.err = 0;
	if (r.multi) {
		struct fi_msg msg = {
			.msg_iov = s->iov,
			.desc = s->descs,
			.iov_count = r.iov_limit >= 2 ? 2 : 1,
			.addr = r.server,
			.context = &s->send,
		};

		return POST("fi_sendmsg", fi_sendmsg(r.ep, &msg, FI_COMPLETION));
	} else {
		struct fi_msg_tagged msg = {
			.msg_iov = s->iov,
			.desc = s->descs,
			.iov_count = r.iov_limit >= 2 ? 2 : 1,
			.addr = r.server,
			.tag = REQ_TAG,
			.context = &s->send,
		};

		return POST("fi_tsendmsg",
			    fi_tsendmsg(r.ep, &msg, FI_COMPLETION));
	}
}

static int finish(struct slot *s)
{
	const struct rpc_reply *rep = (const void *)(s->msg + REQ_MAX);
	int ret;

	if (rep->magic != RPC_MAGIC || rep->id != s->id) {
		ft_err("RPC %u: reply magic %#x id %u", s->id, rep->magic,
		       rep->id);
		return -FI_EIO;
	}
	if (rep->status) {
		ft_err("RPC %u: the server found the bulk data wrong (%s)",
		       s->id, fi_strerror(-rep->status));
		return -FI_EIO;
	}
	ret = ft_check(s->out, s->size, rpc_seed_out(s->id),
		       "answer the server wrote");
	if (ret)
		return ret;
	r.bytes += s->size;
	s->busy = false;
	r.done++;
	return 0;
}

static int client_handle(struct op *op, const struct fi_cq_tagged_entry *ent,
			 fi_addr_t src, int err)
{
	struct slot *s;

	(void)src;
	op->pending = false;
	op->err = err;
	if (op->kind == OP_BIG || op->kind == OP_PROBE)
		return 0;
	if (op->kind != OP_SEND && op->kind != OP_RECV) {
		ft_err("client: unexpected completion (context %p)", (void *)op);
		return -FI_EIO;
	}
	s = &r.slots[op->slot];
	if (err) {
		if (r.kill_mode)
			return 0;
		ft_err("RPC %u: the %s completed with %s", s->id,
		       op->kind == OP_SEND ? "request" : "reply receive",
		       fi_strerror(err));
		return -err;
	}
	if (op->kind == OP_SEND) {
		s->sent = true;
	} else {
		if (ent->len != sizeof(struct rpc_reply) ||
		    ent->tag != (REPLY_TAG | s->id)) {
			ft_err("RPC %u: reply of %zu bytes, tag %#" PRIx64,
			       s->id, (size_t)ent->len, ent->tag);
			return -FI_EIO;
		}
		s->replied = true;
	}
	if (s->sent && s->replied && s->busy)
		return finish(s);
	return 0;
}

static uint32_t next_id;

static bool window_free(void)
{
	int i, busy = 0;

	for (i = 0; i < r.nslots; i++)
		busy += r.slots[i].busy;
	return busy < ft.opts.window;
}

static bool all_done(void)
{
	return r.done >= (unsigned long)ft.opts.iters;
}

static int client_rpcs(void)
{
	int ret;

	while (next_id < (uint32_t)ft.opts.iters) {
		ret = wait_until(window_free, "client");
		if (ret)
			return ret;
		ret = issue(next_id, ft.opts.sizes[next_id % ft.opts.nsizes]);
		if (ret)
			return ret;
		next_id++;
	}
	return wait_until(all_done, "client");
}

static int outstanding(int *sends, int *recvs)
{
	int i;

	*sends = r.big.pending + r.probe.pending;
	*recvs = 0;
	for (i = 0; i < r.nslots; i++) {
		*sends += r.slots[i].send.pending;
		*recvs += r.slots[i].recv.pending;
	}
	return *sends + *recvs;
}

/* The server is stalled, then killed: errors, never a hang. */
static int client_kill(void)
{
	bool closed = false;
	size_t big = BIG_SIZE;
	double t0, deadline;
	int i, ret, sends, recvs, errs = 0, canceled = 0, replies = 0;
	char c = 's';

	ret = ft_oob_send(&c, 1);
	if (!ret)
		ret = ft_oob_recv(&c, 1);
	if (ret)
		return ret;
	if (c != 'S') {
		ft_err("client: note '%c' from the server", c);
		return -FI_EIO;
	}
	for (i = 0; i < ft.opts.window; i++) {
		ret = issue(next_id, ft.opts.sizes[next_id % ft.opts.nsizes]);
		if (ret)
			return ret;
		next_id++;
	}
	if (big > r.info->ep_attr->max_msg_size)
		big = r.info->ep_attr->max_msg_size;
	r.big.pending = true;
	ret = POST("fi_tsend(large)", fi_tsend(r.ep, r.bigbuf, big, r.desc,
					       r.server, BIG_TAG, &r.big));
	if (ret)
		return ret;
	fprintf(stderr, "rpcs in flight: %d, and a message of %zu bytes\n",
		ft.opts.window, big);
	fflush(stderr);

	/* The side channel closes when the server dies. */
	t0 = ft_now();
	while (!closed) {
		ret = progress(1000, ft.oob, &closed);
		if (ret < 0)
			return ret;
		if (closed) {
			char b;

			closed = recv(ft.oob, &b, 1, MSG_DONTWAIT) == 0;
		}
		if (ft_now() - t0 > ft.opts.timeout) {
			ft_err("client: the server was not killed within %d s",
			       ft.opts.timeout);
			return -FI_ETIMEDOUT;
		}
	}
	t0 = ft_now();
	deadline = t0 + KILL_BOUND;
	/* Pending sends end, one way or the other. */
	for (;;) {
		outstanding(&sends, &recvs);
		if (!sends)
			break;
		if (ft_now() > deadline)
			goto hang;
		ret = progress(100, -1, NULL);
		if (ret < 0)
			return ret;
	}
	/* A new request to the dead server fails. */
	r.probe.pending = true;
	r.probe.err = 0;
	for (;;) {
		ret = (int)fi_tsend(r.ep, r.bigbuf, 64, r.desc, r.server,
				    REQ_TAG, &r.probe);
		if (ret != -FI_EAGAIN)
			break;
		if (ft_now() > deadline)
			goto hang;
		ret = progress(100, -1, NULL);
		if (ret < 0)
			return ret;
	}
	if (ret) {
		r.probe.pending = false;
		r.probe.err = -ret;
		printf("client: a request to the dead server: fi_tsend "
		       "returned %s\n", fi_strerror(-ret));
	}
	while (r.probe.pending) {
		if (ft_now() > deadline)
			goto hang;
		ret = progress(100, -1, NULL);
		if (ret < 0)
			return ret;
	}
	if (!r.probe.err) {
		ft_err("client: a request to the dead server completed "
		       "successfully");
		return -FI_EIO;
	}
	/* The reply receives: cancelled. */
	for (i = 0; i < r.nslots; i++)
		if (r.slots[i].recv.pending) {
			ret = fi_cancel(&r.ep->fid, &r.slots[i].recv);
			if (ret && ret != -FI_ENOENT) {
				FT_ERR("fi_cancel", ret);
				return ret;
			}
		}
	for (;;) {
		outstanding(&sends, &recvs);
		if (!recvs)
			break;
		if (ft_now() > deadline)
			goto hang;
		ret = progress(100, -1, NULL);
		if (ret < 0)
			return ret;
	}
	for (i = 0; i < r.nslots; i++) {
		struct slot *s = &r.slots[i];

		if (!s->busy)
			continue;
		errs += s->send.err != 0;
		if (s->recv.err == FI_ECANCELED)
			canceled++;
		else if (!s->recv.err)
			replies++;
	}
	errs += r.big.err != 0;
	printf("client: the server died; within %.1f s: %d sends failed "
	       "(the large one %s), the new request failed with %s, %d reply "
	       "receives cancelled\n", ft_now() - t0, errs,
	       r.big.err ? fi_strerror(r.big.err) : "completed",
	       fi_strerror(r.probe.err), canceled);
	if (replies) {
		ft_err("client: %d replies from a stalled server", replies);
		return -FI_EIO;
	}
	if (canceled < ft.opts.window)
		printf("client: %d reply receives failed with other errors\n",
		       ft.opts.window - canceled);
	return 0;

hang:
	outstanding(&sends, &recvs);
	ft_err("client: %d s after the server died, %d sends and %d "
	       "receives are still pending (large message %s, new request "
	       "%s): a hang", KILL_BOUND, sends, recvs,
	       r.big.pending ? "pending" : "done",
	       r.probe.pending ? "pending" : "done");
	return -FI_ETIMEDOUT;
}

static int run_client(void)
{
	size_t len;
	char c = 'd';
	int ret;

	ret = ft_oob_recv(&len, sizeof(len));
	if (!ret && (len == 0 || len > NAME_MAX_LEN)) {
		ft_err("server name of %zu bytes", len);
		ret = -FI_EIO;
	}
	if (!ret)
		ret = ft_oob_recv(r.slots[0].msg, len);
	if (ret)
		return ret;
	ret = fi_av_insert(r.av, r.slots[0].msg, 1, &r.server, 0, NULL);
	if (ret != 1) {
		FT_ERR("fi_av_insert(server)", ret < 0 ? ret : -FI_EINVAL);
		return ret < 0 ? ret : -FI_EINVAL;
	}
	ret = client_rpcs();
	if (ret)
		return ret;
	printf("client: %lu RPCs of %d in flight, %" PRIu64 " bulk bytes "
	       "each way checked; %lu sleeps on the CQ fd, fi_trywait busy "
	       "%lu times\n", r.done, ft.opts.window, r.bytes, r.sleeps,
	       r.busy);
	fflush(stdout);
	if (r.kill_mode)
		return client_kill();
	return ft_oob_send(&c, 1);
}

static int handle(struct op *op, const struct fi_cq_tagged_entry *ent,
		  fi_addr_t src, int err)
{
	if (!op) {
		ft_err("a completion without a context (%s)",
		       err ? fi_strerror(err) : "success");
		return -FI_EIO;
	}
	return ft.server ? server_handle(op, ent, src, err) :
			   client_handle(op, ent, src, err);
}

static int agree(int ret)
{
	int32_t mine = ret, theirs = 0;

	if (ft_oob_send(&mine, sizeof(mine)) ||
	    ft_oob_recv(&theirs, sizeof(theirs)))
		return ret ? ret : -FI_EIO;
	if (theirs && !ret)
		ft_err("the peer failed: %s", fi_strerror(-theirs));
	if (ret && ret != -FI_ENODATA)
		return ret;
	return theirs && theirs != -FI_ENODATA ? theirs : (ret ? ret : theirs);
}

static void rpc_close(void)
{
	if (r.ep)
		fi_close(&r.ep->fid);
	if (r.mr)
		fi_close(&r.mr->fid);
	if (r.av)
		fi_close(&r.av->fid);
	if (r.cq)
		fi_close(&r.cq->fid);
	if (r.domain)
		fi_close(&r.domain->fid);
	if (r.fabric)
		fi_close(&r.fabric->fid);
	fi_freeinfo(r.info);
}

int main(int argc, char **argv)
{
	int ret;

	ft_parse(argc, argv, &prog);
	r.multi = !strncmp(ft.opts.op, "multi", 5);
	r.kill_mode = strstr(ft.opts.op, "-kill") != NULL;
	if (strcmp(ft.opts.op, "tagged") && strcmp(ft.opts.op, "multi") &&
	    strcmp(ft.opts.op, "tagged-kill") &&
	    strcmp(ft.opts.op, "multi-kill")) {
		fprintf(stderr, "%s: unknown -o %s\n", prog.name, ft.opts.op);
		return 2;
	}
	ret = ft_oob_open();
	if (ret)
		return 1;
	ret = agree(rpc_getinfo());
	if (!ret)
		ret = rpc_layout();
	if (!ret)
		ret = rpc_open();
	ret = agree(ret);
	if (!ret)
		ret = ft.server ? run_server() : run_client();
	if (!r.kill_mode)
		ret = agree(ret);
	rpc_close();
	if (ret == -FI_ENODATA)
		return FT_EXIT_NOTSUPP;
	if (!ret)
		printf("%s: pass\n", ft.server ? "server" : "client");
	return ret ? 1 : 0;
}
