/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * libfabric's own fabtests, as the common code drives OFI for four tests:
 *   -v rdm        fi_rdm: an RDM greeting
 *   -v rma_bw     fi_rma_bw: keys exchanged in-band, fi_write, fi_read and
 *                 fi_writedata (the target sees FI_REMOTE_CQ_DATA)
 *   -v cm_data    fi_cm_data: MSG connections carrying data, one rejected
 *                 and one accepted per size, fi_shutdown on both sides
 *   -v multinode  fi_multinode (rma method): names in 256-byte slots,
 *                 fi_write to every rank, itself included
 *
 * Follows, in ofiwg/libfabric v1.17.1, fabtests/:
 *   common/shared.c: ft_getinfo and ft_read_addr_opts (FT_FIVERSION 1.9,
 *     FI_SOURCE on the server, the server's node and service on the
 *     client), ft_open_fabric_res and ft_open_domain_res (fabric, EQ with
 *     FI_WAIT_UNSPEC, domain), ft_alloc_ep_res / ft_alloc_active_res (CQ
 *     format from FI_TAGGED, FI_WAIT_NONE, tx/rx sizes, the AV from the
 *     info's av_type), ft_enable_ep (EQ for MSG, AV, CQs FI_TRANSMIT and
 *     FI_RECV), ft_alloc_msgs and ft_reg_mr (fi_mr_regattr with key 0xC0DE,
 *     fi_mr_bind + fi_mr_enable under FI_MR_ENDPOINT, registration only
 *     under FI_MR_LOCAL or RMA), ft_init_av_dst_addr (in-band address
 *     exchange; NULL fi_addr for FI_AV_TABLE on the server), ft_exchange_keys,
 *     ft_sync, ft_spin_for_comp (fi_cq_read of one, fi_cq_readerr),
 *     ft_start_server / ft_server_connect / ft_client_connect,
 *     ft_close_fids (close order);
 *   include/shared.h: INIT_OPTS (mr_mode FI_MR_LOCAL|FI_MR_ENDPOINT|
 *     FI_MR_ALLOCATED|FI_MR_PROV_KEY|FI_MR_VIRT_ADDR);
 *   functional/rdm.c, benchmarks/rma_bw.c (FI_MSG|FI_RMA, FI_RM_ENABLED,
 *     FI_THREAD_DOMAIN, FI_TC_BULK_DATA), functional/cm_data.c (fi_getopt
 *     FI_OPT_CM_DATA_SIZE, fi_reject with data, fi_accept with data,
 *     FI_ECONNREFUSED with err_data, FI_SHUTDOWN read from the local EQ,
 *     -FI_EINVAL past the maximum), multinode/src/core.c.
 * The server's service is "0" (its port is read back with fi_getname) for
 * socket providers, and a name unique to the run for shm.
 *
 * NAME is the provider (-p).
 */
#include "harness.h"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_rma.h>

#define FT_FIVERSION FI_VERSION(1, 9)
#define FT_MR_KEY 0xC0DE
#define FT_MAX_CTRL_MSG 256
#define CTRL 256		/* RMA lands past the control messages */
#define XFER 4096
#define MR_MODE (FI_MR_LOCAL | FI_MR_ENDPOINT | FI_MR_ALLOCATED | \
		 FI_MR_PROV_KEY | FI_MR_VIRT_ADDR)

struct ft {
	struct cl *c;
	struct fi_info *hints, *fi, *fi_pep;
	struct fid_fabric *fabric;
	struct fid_eq *eq;
	struct fid_domain *domain;
	struct fid_pep *pep;
	struct fid_ep *ep;
	struct fid_cq *txcq, *rxcq;
	struct fid_av *av;
	struct fid_mr *mr;
	void *desc;
	char *buf, *tx_buf, *rx_buf;
	size_t tx_size, rx_size;
	fi_addr_t remote;
	uint64_t tx_seq, rx_seq, tx_cq_cntr, rx_cq_cntr;
	char service[32];
};

static bool is_shm(struct ft *f)
{
	return !strcmp(f->c->name, "shm");
}

/* ft_getsrcaddr: the client's -s, resolved into hints->src_addr */
static void ft_getsrcaddr(struct ft *f)
{
	struct fi_info *info;
	int ret;

	ret = fi_getinfo(FT_FIVERSION, f->c->node, NULL, FI_SOURCE, f->hints,
			 &info);
	if (ret == -FI_ENODATA)
		cl_skip(f->c, "fi_getinfo for the source address: -FI_ENODATA");
	if (ret)
		cl_fail(f->c, "fi_getinfo for the source address: %d (%s)",
			ret, fi_strerror(-ret));
	f->hints->addr_format = info->addr_format;
	free(f->hints->src_addr);
	f->hints->src_addr = malloc(info->src_addrlen);
	memcpy(f->hints->src_addr, info->src_addr, info->src_addrlen);
	f->hints->src_addrlen = info->src_addrlen;
	fi_freeinfo(info);
}

/*
 * ft_getinfo as runfabtests drives it: the server "-s NODE -B SERVICE"
 * binds (FI_SOURCE); the client "-s NODE -P SERVICE NODE" takes its own
 * source from NODE and resolves the server.
 */
static int ft_getinfo(struct ft *f, bool server, struct fi_info **info)
{
	if (!f->hints->ep_attr->type)
		f->hints->ep_attr->type = FI_EP_RDM;
	if (!server)
		ft_getsrcaddr(f);
	return fi_getinfo(FT_FIVERSION, f->c->node, f->service,
			  server ? FI_SOURCE : 0, f->hints, info);
}

static void getinfo_or_skip(struct ft *f, bool server, struct fi_info **info)
{
	int ret = ft_getinfo(f, server, info);

	if (ret == -FI_ENODATA)
		cl_skip(f->c, "fi_getinfo: -FI_ENODATA");
	if (ret)
		cl_fail(f->c, "fi_getinfo: %d (%s)", ret, fi_strerror(-ret));
}

static void open_fabric_res(struct ft *f, struct fi_info *info)
{
	struct fi_eq_attr eq_attr = { .wait_obj = FI_WAIT_UNSPEC };

	CL_CALL(f->c, fi_fabric(info->fabric_attr, &f->fabric, NULL));
	CL_CALL(f->c, fi_eq_open(f->fabric, &eq_attr, &f->eq, NULL));
}

static void alloc_active_res(struct ft *f, size_t av_size)
{
	struct cl *c = f->c;
	struct fi_cq_attr cq_attr = { .wait_obj = FI_WAIT_NONE };
	struct fi_av_attr av_attr = { .type = FI_AV_MAP, .count = av_size };

	cq_attr.format = (f->fi->caps & FI_TAGGED) ? FI_CQ_FORMAT_TAGGED :
			 FI_CQ_FORMAT_CONTEXT;
	cq_attr.size = f->fi->tx_attr->size;
	CL_CALL(c, fi_cq_open(f->domain, &cq_attr, &f->txcq, &f->txcq));
	cq_attr.size = f->fi->rx_attr->size;
	CL_CALL(c, fi_cq_open(f->domain, &cq_attr, &f->rxcq, &f->rxcq));
	if (!f->av && f->fi->ep_attr->type == FI_EP_RDM) {
		if (f->fi->domain_attr->av_type != FI_AV_UNSPEC)
			av_attr.type = f->fi->domain_attr->av_type;
		CL_CALL(c, fi_av_open(f->domain, &av_attr, &f->av, NULL));
	}
	CL_CALL(c, fi_endpoint(f->domain, f->fi, &f->ep, NULL));
}

static void reg_mr(struct ft *f)
{
	struct cl *c = f->c;
	struct iovec iov = { .iov_base = f->buf,
			     .iov_len = f->tx_size + f->rx_size };
	struct fi_mr_attr attr = { .mr_iov = &iov, .iov_count = 1,
				   .requested_key = FT_MR_KEY,
				   .iface = FI_HMEM_SYSTEM };
	uint64_t caps = f->fi->caps;

	if (!(f->fi->domain_attr->mr_mode & FI_MR_LOCAL) &&
	    !(caps & (FI_RMA | FI_ATOMIC)))
		return;
	if (f->fi->domain_attr->mr_mode & FI_MR_LOCAL) {
		if (caps & (FI_MSG | FI_TAGGED))
			attr.access |= FI_SEND | FI_RECV;
		if (caps & (FI_RMA | FI_ATOMIC))
			attr.access |= FI_READ | FI_WRITE | FI_REMOTE_READ |
				       FI_REMOTE_WRITE;
	} else {
		attr.access = FI_REMOTE_READ | FI_REMOTE_WRITE;
	}
	CL_CALL(c, fi_mr_regattr(f->domain, &attr, 0, &f->mr));
	f->desc = fi_mr_desc(f->mr);
	if (f->fi->domain_attr->mr_mode & FI_MR_ENDPOINT) {
		CL_CALL(c, fi_mr_bind(f->mr, &f->ep->fid, 0));
		CL_CALL(c, fi_mr_enable(f->mr));
	}
}

static void cq_err(struct ft *f, struct fid_cq *cq, const char *what)
{
	struct fi_cq_err_entry e = { 0 };

	fi_cq_readerr(cq, &e, 0);
	cl_fail(f->c, "%s: error completion %d (%s)", what, e.err,
		fi_strerror(e.err));
}

/* ft_spin_for_comp */
static void get_comp(struct ft *f, struct fid_cq *cq, uint64_t *cur,
		     uint64_t total, const char *what)
{
	struct fi_cq_tagged_entry comp;	/* room for any format */
	ssize_t r;

	while (*cur < total) {
		r = fi_cq_read(cq, &comp, 1);
		if (r > 0) {
			(*cur)++;
		} else if (r == -FI_EAVAIL) {
			cq_err(f, cq, what);
		} else if (r != -FI_EAGAIN) {
			cl_fail(f->c, "%s: fi_cq_read %zd (%s)", what, r,
				fi_strerror((int)-r));
		}
		cl_tick(f->c, what);
	}
}

/* ft_progress: what a -FI_EAGAIN calls before trying again */
static void ft_progress(struct ft *f, struct fid_cq *cq, uint64_t *cnt,
			const char *what)
{
	struct fi_cq_tagged_entry comp;
	ssize_t r = fi_cq_read(cq, &comp, 1);

	if (r > 0)
		(*cnt)++;
	else if (r == -FI_EAVAIL)
		cq_err(f, cq, what);
}

#define POST(f, call, cq, cnt, what)                                          \
	do {                                                                  \
		ssize_t r_;                                                   \
		while ((r_ = (call)) == -FI_EAGAIN) {                         \
			ft_progress(f, (f)->cq, &(f)->cnt, what);             \
			cl_tick((f)->c, what);                                \
		}                                                             \
		if (r_)                                                       \
			cl_fail((f)->c, "%s: %zd (%s)", what, r_,             \
				fi_strerror((int)-r_));                       \
	} while (0)

static void post_rx(struct ft *f, size_t size)
{
	POST(f, fi_recv(f->ep, f->rx_buf, size, f->desc, FI_ADDR_UNSPEC,
			&f->rx_buf), rxcq, rx_cq_cntr, "fi_recv");
	f->rx_seq++;
}

/* ft_tx: send and wait for its completion */
static void tx(struct ft *f, size_t size)
{
	POST(f, fi_send(f->ep, f->tx_buf, size, f->desc, f->remote,
			&f->tx_buf), txcq, tx_cq_cntr, "fi_send");
	f->tx_seq++;
	get_comp(f, f->txcq, &f->tx_cq_cntr, f->tx_seq, "a send");
}

/* ft_rx: wait for the posted receive, post the next */
static void rx(struct ft *f)
{
	get_comp(f, f->rxcq, &f->rx_cq_cntr, f->rx_seq, "a receive");
	post_rx(f, FT_MAX_CTRL_MSG > f->rx_size ? FT_MAX_CTRL_MSG : f->rx_size);
}

static void enable_ep_recv(struct ft *f)
{
	struct cl *c = f->c;

	if (f->fi->ep_attr->type == FI_EP_MSG)
		CL_CALL(c, fi_ep_bind(f->ep, &f->eq->fid, 0));
	if (f->av)
		CL_CALL(c, fi_ep_bind(f->ep, &f->av->fid, 0));
	CL_CALL(c, fi_ep_bind(f->ep, &f->txcq->fid, FI_TRANSMIT));
	CL_CALL(c, fi_ep_bind(f->ep, &f->rxcq->fid, FI_RECV));
	CL_CALL(c, fi_enable(f->ep));
	/* ft_alloc_msgs */
	f->tx_size = f->rx_size = XFER;
	if (!f->buf)
		f->buf = aligned_alloc(4096, f->tx_size + f->rx_size);
	memset(f->buf, 0, f->tx_size + f->rx_size);
	f->rx_buf = f->buf;
	f->tx_buf = f->buf + f->rx_size;
	f->mr = NULL;
	f->desc = NULL;
	reg_mr(f);
	if (f->fi->caps & (FI_MSG | FI_TAGGED))
		post_rx(f, f->rx_size);
}

/* The server's service: port 0 read back, or a name for shm. */
static void publish(struct ft *f, struct fid *fid)
{
	char addr[128];
	size_t len = sizeof(addr);

	if (!is_shm(f)) {
		CL_CALL(f->c, fi_getname(fid, addr, &len));
		if (((struct sockaddr *)addr)->sa_family == AF_INET)
			snprintf(f->service, sizeof(f->service), "%u",
				 ntohs(((struct sockaddr_in *)addr)->sin_port));
		else if (((struct sockaddr *)addr)->sa_family == AF_INET6)
			snprintf(f->service, sizeof(f->service), "%u",
				 ntohs(((struct sockaddr_in6 *)addr)->sin6_port));
		else
			cl_fail(f->c, "fi_getname: address family %d",
				((struct sockaddr *)addr)->sa_family);
	}
	cl_send(f->c, f->service, strlen(f->service) + 1);
}

/* ft_init_fabric for RDM, with ft_init_av */
static void init_fabric_rdm(struct ft *f)
{
	struct cl *c = f->c;
	char temp[FT_MAX_CTRL_MSG];
	size_t len;

	if (c->rank == 1)
		cl_recv(c, f->service, sizeof(f->service));
	getinfo_or_skip(f, c->rank == 0, &f->fi);
	open_fabric_res(f, f->fi);
	CL_CALL(c, fi_domain(f->fabric, f->fi, &f->domain, NULL));
	alloc_active_res(f, 1);
	enable_ep_recv(f);
	if (c->rank == 0) {
		publish(f, &f->ep->fid);
		get_comp(f, f->rxcq, &f->rx_cq_cntr, f->rx_seq,
			 "the client's address");
		memcpy(temp, f->rx_buf, FT_MAX_CTRL_MSG);
		if (fi_av_insert(f->av, temp, 1,
				 f->fi->domain_attr->av_type == FI_AV_TABLE ?
				 NULL : &f->remote, 0, NULL) != 1)
			cl_fail(c, "fi_av_insert of the client's address");
		post_rx(f, f->rx_size);
		if (f->fi->domain_attr->av_type == FI_AV_TABLE)
			f->remote = 0;
		tx(f, 1);
	} else {
		if (fi_av_insert(f->av, f->fi->dest_addr, 1, &f->remote, 0,
				 NULL) != 1)
			cl_fail(c, "fi_av_insert of the server's address");
		len = FT_MAX_CTRL_MSG;
		CL_CALL(c, fi_getname(&f->ep->fid, f->tx_buf, &len));
		tx(f, len);
		rx(f);
	}
}

static void sync_(struct ft *f)
{
	if (f->c->rank == 1) {
		tx(f, 1);
		rx(f);
	} else {
		rx(f);
		tx(f, 1);
	}
}

static void close_fids(struct ft *f)
{
	struct cl *c = f->c;

	if (f->fi && (f->fi->domain_attr->mr_mode & FI_MR_ENDPOINT) && f->mr) {
		CL_CALL(c, fi_close(&f->mr->fid));
		f->mr = NULL;
	}
	if (f->ep)
		CL_CALL(c, fi_close(&f->ep->fid));
	if (f->pep)
		CL_CALL(c, fi_close(&f->pep->fid));
	if (f->rxcq)
		CL_CALL(c, fi_close(&f->rxcq->fid));
	if (f->txcq)
		CL_CALL(c, fi_close(&f->txcq->fid));
	if (f->mr)
		CL_CALL(c, fi_close(&f->mr->fid));
	if (f->av)
		CL_CALL(c, fi_close(&f->av->fid));
	if (f->domain)
		CL_CALL(c, fi_close(&f->domain->fid));
	if (f->eq)
		CL_CALL(c, fi_close(&f->eq->fid));
	if (f->fabric)
		CL_CALL(c, fi_close(&f->fabric->fid));
}

static void rdm(struct ft *f)
{
	static const char greeting[] = "Hello from Client!";

	f->hints->ep_attr->type = FI_EP_RDM;
	f->hints->caps = FI_MSG;
	f->hints->mode = FI_CONTEXT;
	f->hints->domain_attr->mr_mode = MR_MODE;
	init_fabric_rdm(f);
	/* ft_send_recv_greeting */
	if (f->c->rank == 1) {
		memcpy(f->tx_buf, greeting, sizeof(greeting));
		tx(f, sizeof(greeting));
	} else {
		rx(f);
		if (strcmp(f->rx_buf, greeting))
			cl_fail(f->c, "greeting \"%.32s\"", f->rx_buf);
	}
}

static void rma_bw(struct ft *f)
{
	struct cl *c = f->c;
	struct fi_rma_iov mine, peer;
	int i;

	f->hints->caps = FI_MSG | FI_RMA;
	f->hints->domain_attr->resource_mgmt = FI_RM_ENABLED;
	f->hints->mode = FI_CONTEXT;
	f->hints->domain_attr->threading = FI_THREAD_DOMAIN;
	f->hints->addr_format = FI_FORMAT_UNSPEC;
	f->hints->domain_attr->mr_mode = MR_MODE;
	f->hints->tx_attr->tclass = FI_TC_BULK_DATA;
	init_fabric_rdm(f);

	/* ft_exchange_keys */
	mine.addr = (f->fi->domain_attr->mr_mode & FI_MR_VIRT_ADDR) ?
		    (uint64_t)(uintptr_t)f->rx_buf : 0;
	mine.key = fi_mr_key(f->mr);
	mine.len = f->rx_size;
	memcpy(f->tx_buf, &mine, sizeof(mine));
	tx(f, sizeof(mine));
	get_comp(f, f->rxcq, &f->rx_cq_cntr, f->rx_seq, "the peer's key");
	memcpy(&peer, f->rx_buf, sizeof(peer));
	post_rx(f, f->rx_size);
	sync_(f);

	/* write: both ways, into the peer's receive buffer past the bytes
	 * the control messages land on; small ones injected */
	if (64 < f->fi->tx_attr->inject_size) {
		cl_fill(f->tx_buf, 64, 79 + c->rank);
		POST(f, fi_inject_write(f->ep, f->tx_buf, 64, f->remote,
					peer.addr + 128, peer.key),
		     txcq, tx_cq_cntr, "fi_inject_write");
	}
	cl_fill(f->tx_buf + CTRL, XFER - CTRL, 80 + c->rank);
	for (i = 0; i < 4; i++) {
		POST(f, fi_write(f->ep, f->tx_buf + CTRL, XFER - CTRL, f->desc,
				 f->remote, peer.addr + CTRL, peer.key,
				 &f->tx_buf), txcq, tx_cq_cntr, "fi_write");
		f->tx_seq++;
	}
	get_comp(f, f->txcq, &f->tx_cq_cntr, f->tx_seq, "the writes");
	sync_(f);
	if (64 < f->fi->tx_attr->inject_size)
		cl_check(c, f->rx_buf + 128, 64, 79 + !c->rank,
			 "fi_inject_write data");
	cl_check(c, f->rx_buf + CTRL, XFER - CTRL, 80 + !c->rank,
		 "fi_write data");
	/* read: what we wrote, back into our own transmit buffer */
	memset(f->tx_buf, 0, XFER);
	POST(f, fi_read(f->ep, f->tx_buf + CTRL, XFER - CTRL, f->desc,
			f->remote, peer.addr + CTRL, peer.key, &f->tx_buf),
	     txcq, tx_cq_cntr, "fi_read");
	f->tx_seq++;
	get_comp(f, f->txcq, &f->tx_cq_cntr, f->tx_seq, "the read");
	cl_check(c, f->tx_buf + CTRL, XFER - CTRL, 80 + c->rank,
		 "fi_read data");
	sync_(f);
	/* writedata, client to server: the server counts a completion on its
	 * receive CQ (no receive consumed without FI_RX_CQ_DATA) */
	if (c->rank == 1) {
		cl_fill(f->tx_buf + CTRL, XFER - CTRL, 82);
		POST(f, fi_writedata(f->ep, f->tx_buf + CTRL, XFER - CTRL,
				     f->desc, 0xD47A, f->remote,
				     peer.addr + CTRL, peer.key, &f->tx_buf),
		     txcq, tx_cq_cntr, "fi_writedata");
		f->tx_seq++;
		get_comp(f, f->txcq, &f->tx_cq_cntr, f->tx_seq,
			 "the writedata");
	} else {
		if (f->fi->rx_attr->mode & FI_RX_CQ_DATA)
			post_rx(f, 0);
		else
			f->rx_seq++;
		get_comp(f, f->rxcq, &f->rx_cq_cntr, f->rx_seq,
			 "the writedata's remote completion");
		cl_check(c, f->rx_buf + CTRL, XFER - CTRL, 82,
			 "fi_writedata data");
	}
	sync_(f);
}

static void multinode(struct ft *f)
{
	struct cl *c = f->c;
	char my_name[FT_MAX_CTRL_MSG], names[2][256];
	struct fi_rma_iov remote, iovs[2];
	fi_addr_t addrs[2];
	size_t len = sizeof(my_name);
	int i;

	f->hints->ep_attr->type = FI_EP_RDM;
	f->hints->mode = FI_CONTEXT;
	f->hints->domain_attr->mr_mode = MR_MODE;
	f->hints->caps = FI_MSG | FI_RMA;
	if (is_shm(f))
		snprintf(f->service, sizeof(f->service), "%d-%d", getppid(),
			 c->rank);
	getinfo_or_skip(f, true, &f->fi);
	open_fabric_res(f, f->fi);
	CL_CALL(c, fi_domain(f->fabric, f->fi, &f->domain, NULL));
	alloc_active_res(f, 2);
	/* ft_enable_ep, then ft_alloc_msgs without a receive */
	CL_CALL(c, fi_ep_bind(f->ep, &f->av->fid, 0));
	CL_CALL(c, fi_ep_bind(f->ep, &f->txcq->fid, FI_TRANSMIT));
	CL_CALL(c, fi_ep_bind(f->ep, &f->rxcq->fid, FI_RECV));
	CL_CALL(c, fi_enable(f->ep));
	f->tx_size = f->rx_size = XFER;
	f->buf = aligned_alloc(4096, 2 * XFER);
	memset(f->buf, 0, 2 * XFER);
	f->rx_buf = f->buf;
	f->tx_buf = f->buf + XFER;
	reg_mr(f);
	CL_CALL(c, fi_getname(&f->ep->fid, my_name, &len));
	memset(names, 0, sizeof(names));
	memcpy(names[c->rank], my_name, len);
	cl_xchg(c, names[c->rank], 256, names[!c->rank], 256);
	for (i = 0; i < 2; i++)
		if (fi_av_insert(f->av, names[i], 1, &addrs[i], 0, NULL) != 1)
			cl_fail(c, "unable to insert all addresses into AV table");
	remote.addr = (f->fi->domain_attr->mr_mode & FI_MR_VIRT_ADDR) ?
		      (uint64_t)(uintptr_t)f->rx_buf : 0;
	remote.key = fi_mr_key(f->mr);
	remote.len = f->rx_size;
	iovs[c->rank] = remote;
	cl_xchg(c, &remote, sizeof(remote), &iovs[!c->rank], sizeof(remote));
	/* each rank writes XFER / 2 bytes at its own slot of every rx buffer */
	cl_fill(f->tx_buf, XFER / 2, 90 + c->rank);
	for (i = 0; i < 2; i++) {
		POST(f, fi_write(f->ep, f->tx_buf, XFER / 2, f->desc, addrs[i],
				 iovs[i].addr + (XFER / 2) * c->rank,
				 iovs[i].key, &f->tx_buf), txcq, tx_cq_cntr,
		     "fi_write");
		f->tx_seq++;
	}
	get_comp(f, f->txcq, &f->tx_cq_cntr, f->tx_seq, "the writes");
	cl_barrier(c);	/* pm_barrier */
	/* A completed write is in the target's memory once the target has
	 * progressed (manual progress): look while progressing. */
	for (i = 0; i < 2;) {
		struct fi_cq_tagged_entry e;

		if (cl_expired(c)) {
			cl_check(c, f->rx_buf + (XFER / 2) * i, XFER / 2,
				 90 + i, "the slot written by each rank");
			break;
		}
		fi_cq_read(f->rxcq, &e, 1);
		fi_cq_read(f->txcq, &e, 1);
		if (f->rx_buf[(XFER / 2) * i] ==
		    (char)((90 + i) * 131) &&
		    f->rx_buf[(XFER / 2) * (i + 1) - 1] ==
		    (char)((90 + i) * 131 + (XFER / 2 - 1) * 7 +
			   ((XFER / 2 - 1) >> 8))) {
			cl_check(c, f->rx_buf + (XFER / 2) * i, XFER / 2,
				 90 + i, "the slot written by each rank");
			i++;
		}
	}
	cl_barrier(c);
}

static void eq_err(struct ft *f, ssize_t r, const char *what)
{
	struct fi_eq_err_entry e = { 0 };

	if (r == -FI_EAVAIL) {
		fi_eq_readerr(f->eq, &e, 0);
		cl_fail(f->c, "%s: EQ error %d (%s)", what, e.err,
			fi_strerror(e.err));
	}
	cl_fail(f->c, "%s: fi_eq_sread %zd (%s)", what, r, fi_strerror((int)-r));
}

/* read_shutdown_event: FI_SHUTDOWN on our own EQ after our fi_shutdown */
static void read_shutdown(struct ft *f, struct fi_eq_cm_entry *entry)
{
	uint32_t event;
	ssize_t r = fi_eq_sread(f->eq, &event, entry, sizeof(*entry), 3000, 0);

	if (r == -FI_EAGAIN || r == -FI_ETIMEDOUT)
		cl_fail(f->c, "no FI_SHUTDOWN on the local EQ within 3 s after "
			"fi_shutdown");
	if (r < 0)
		eq_err(f, r, "shutdown");
	if (event != FI_SHUTDOWN || entry->fid != &f->ep->fid)
		cl_fail(f->c, "Unexpected CM event %u fid %p (ep %p)", event,
			(void *)entry->fid, (void *)f->ep);
}

static void close_active(struct ft *f)
{
	CL_CALL(f->c, fi_close(&f->ep->fid));
	CL_CALL(f->c, fi_close(&f->rxcq->fid));
	CL_CALL(f->c, fi_close(&f->txcq->fid));
	if (f->mr)
		CL_CALL(f->c, fi_close(&f->mr->fid));
	f->ep = NULL;
	f->rxcq = f->txcq = NULL;
	f->mr = NULL;
}

static void cm_data(struct ft *f)
{
	struct cl *c = f->c;
	size_t cm_size, opt_size = sizeof(cm_size), i;
	struct fi_eq_cm_entry *entry;
	struct fi_eq_err_entry err;
	char *data;
	uint32_t event;
	ssize_t r;

	f->hints->ep_attr->type = FI_EP_MSG;
	f->hints->caps = FI_MSG;
	f->hints->domain_attr->mr_mode = MR_MODE;
	if (c->rank == 0) {
		/* ft_start_server, then the maximum cm data size */
		getinfo_or_skip(f, true, &f->fi_pep);
		open_fabric_res(f, f->fi_pep);
		CL_CALL(c, fi_passive_ep(f->fabric, f->fi_pep, &f->pep, NULL));
		CL_CALL(c, fi_pep_bind(f->pep, &f->eq->fid, 0));
		CL_CALL(c, fi_listen(f->pep));
		CL_CALL(c, fi_getopt(&f->pep->fid, FI_OPT_ENDPOINT,
				     FI_OPT_CM_DATA_SIZE, &cm_size, &opt_size));
		publish(f, &f->pep->fid);
	} else {
		cl_recv(c, f->service, sizeof(f->service));
		CL_CALL(c, fi_getinfo(FT_FIVERSION, c->node, f->service, 0,
				      f->hints, &f->fi));
		open_fabric_res(f, f->fi);
		CL_CALL(c, fi_domain(f->fabric, f->fi, &f->domain, NULL));
		alloc_active_res(f, 1);
		enable_ep_recv(f);
		CL_CALL(c, fi_getopt(&f->ep->fid, FI_OPT_ENDPOINT,
				     FI_OPT_CM_DATA_SIZE, &cm_size, &opt_size));
	}
	cl_note(c, "cm data size %zu", cm_size);
	data = calloc(1, cm_size + 1);
	entry = calloc(1, sizeof(*entry) + cm_size);
	cl_barrier(c);	/* the test's own socket sync */
	for (i = 1; i <= cm_size; i <<= 1) {
		if (c->rank == 0) {
			int k;

			for (k = 0; k < 2; k++) {	/* reject, then accept */
				memset(entry, 0, sizeof(*entry) + i);
				r = fi_eq_sread(f->eq, &event, entry,
						sizeof(*entry) + i, -1, 0);
				if (r != (ssize_t)(sizeof(*entry) + i))
					eq_err(f, r, "listen");
				if (event != FI_CONNREQ)
					cl_fail(c, "Unexpected CM event %u", event);
				cl_check(c, entry->data, i, (unsigned)i,
					 "connection request data");
				f->fi = entry->info;
				cl_fill(data, i, (unsigned)i + 1);
				if (!k) {
					CL_CALL(c, fi_reject(f->pep, f->fi->handle,
							     data, i));
					fi_freeinfo(f->fi);
					f->fi = NULL;
					continue;
				}
				CL_CALL(c, fi_domain(f->fabric, f->fi, &f->domain,
						     NULL));
				alloc_active_res(f, 1);
				enable_ep_recv(f);
				CL_CALL(c, fi_accept(f->ep, data, i));
				memset(entry, 0, sizeof(*entry));
				r = fi_eq_sread(f->eq, &event, entry,
						sizeof(*entry), -1, 0);
				if (r != sizeof(*entry))
					eq_err(f, r, "accept");
				if (event != FI_CONNECTED ||
				    entry->fid != &f->ep->fid)
					cl_fail(c, "Unexpected CM event %u", event);
				fi_shutdown(f->ep, 0);
				read_shutdown(f, entry);
				close_active(f);
				CL_CALL(c, fi_close(&f->domain->fid));
				f->domain = NULL;
				fi_freeinfo(f->fi);
				f->fi = NULL;
			}
		} else {
			/* client_expect_reject */
			cl_fill(data, i, (unsigned)i);
			CL_CALL(c, fi_connect(f->ep, f->fi->dest_addr, data, i));
			r = fi_eq_sread(f->eq, &event, entry, sizeof(*entry), -1,
					0);
			if (r != -FI_EAVAIL)
				cl_fail(c, "connect of a rejected request: %zd, "
					"event %u", r, event);
			memset(&err, 0, sizeof(err));
			if (fi_eq_readerr(f->eq, &err, 0) != sizeof(err))
				cl_fail(c, "fi_eq_readerr");
			if (err.err != FI_ECONNREFUSED)
				cl_fail(c, "rejected with %d, FI_ECONNREFUSED "
					"expected", err.err);
			if (err.err_data_size != i)
				cl_fail(c, "reject data of %zu bytes, %zu sent",
					err.err_data_size, i);
			cl_check(c, err.err_data, i, (unsigned)i + 1,
				 "reject data");
			/* client_open_new_ep, client_expect_accept */
			CL_CALL(c, fi_close(&f->ep->fid));
			CL_CALL(c, fi_endpoint(f->domain, f->fi, &f->ep, NULL));
			if (f->mr)
				CL_CALL(c, fi_close(&f->mr->fid));
			f->mr = NULL;
			enable_ep_recv(f);
			CL_CALL(c, fi_connect(f->ep, f->fi->dest_addr, data, i));
			r = fi_eq_sread(f->eq, &event, entry,
					sizeof(*entry) + i, -1, 0);
			if (r != (ssize_t)(sizeof(*entry) + i))
				eq_err(f, r, "connect");
			if (event != FI_CONNECTED || entry->fid != &f->ep->fid)
				cl_fail(c, "Unexpected CM event %u", event);
			cl_check(c, entry->data, i, (unsigned)i + 1,
				 "accept data");
			fi_shutdown(f->ep, 0);
			read_shutdown(f, entry);
			CL_CALL(c, fi_close(&f->ep->fid));
			CL_CALL(c, fi_endpoint(f->domain, f->fi, &f->ep, NULL));
			if (f->mr)
				CL_CALL(c, fi_close(&f->mr->fid));
			f->mr = NULL;
			enable_ep_recv(f);
		}
		cl_barrier(c);
	}
	if (c->rank == 1) {
		r = fi_connect(f->ep, f->fi->dest_addr, data, cm_size + 1);
		if (r != -FI_EINVAL)
			cl_fail(c, "fi_connect with %zu bytes of data (maximum "
				"%zu): %zd, -FI_EINVAL expected", cm_size + 1,
				cm_size, r);
	}
	free(data);
	free(entry);
}

static void rank_main(struct cl *c)
{
	struct ft f = { .c = c };

	cl_lib(c);
	f.hints = fi_allocinfo();
	f.hints->fabric_attr->prov_name = strdup(c->name);
	if (is_shm(&f))
		snprintf(f.service, sizeof(f.service), "%d", getppid());
	else
		snprintf(f.service, sizeof(f.service), "0");
	if (!strcmp(c->variant, "rma_bw"))
		rma_bw(&f);
	else if (!strcmp(c->variant, "cm_data"))
		cm_data(&f);
	else if (!strcmp(c->variant, "multinode"))
		multinode(&f);
	else if (!strcmp(c->variant, "rdm") || !*c->variant)
		rdm(&f);
	else
		cl_fail(c, "no test %s", c->variant);
	cl_barrier(c);
	close_fids(&f);
	fi_freeinfo(f.fi);
	fi_freeinfo(f.fi_pep);
	fi_freeinfo(f.hints);
	free(f.buf);
	cl_pass(c);
}

int main(int argc, char **argv)
{
	return cl_run(argc, argv, "fabtests", rank_main);
}
