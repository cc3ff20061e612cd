/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Mercury 2.4's NA OFI plugin: an RPC with a bulk transfer, between a
 * listening server (rank 0) and a client (rank 1).
 *
 * Follows, in mercury-hpc/mercury v2.4.1, src/na/na_ofi.c:
 *   NA_OFI_PROV_TYPES (per protocol: prov_name, address format, progress,
 *     ep_attr->protocol, extra caps such as FI_MULTI_RECV, wait by fd),
 *   na_ofi_log_import / na_ofi_log_close (fi_import_log at load, fi_close
 *     of its own struct fid_logging at unload),
 *   na_ofi_prov_name_to_type ("tcp" means "tcp;ofi_rxm" before 1.18),
 *   na_ofi_check_protocol and na_ofi_getinfo (the two fi_getinfo calls:
 *     without and with the address information), na_ofi_parse_hostname_info
 *     (src_addr from the host, domain named after its interface),
 *     na_ofi_verify_info / na_ofi_match_provider (exact addr_format,
 *     prov_name and domain name; one entry per domain; CPU round robin),
 *   na_ofi_initialize (FI_MULTI_RECV required where used, FI_SOURCE_ERR),
 *     na_ofi_domain_open (manual progress when the provider has no wait fd,
 *     mr_key_size <= 8, cq_data_size >= 4), na_ofi_av_open (FI_AV_UNSPEC,
 *     rx_ctx_bits for SEP providers), na_ofi_basic_ep_open (CQ and AV
 *     binds, FI_OPT_MIN_MULTI_RECV get and set), na_ofi_eq_open (FI_WAIT_FD
 *     CQ, FI_AFFINITY when bound to one CPU), na_ofi_endpoint_get_src_addr
 *     (src_addrlen check, fi_getname, inserting itself),
 *   na_ofi_get_uri and na_ofi_str_to_raw_addr (fi_av_straddr, the URI, and
 *     parsing it back without libfabric), na_ofi_addr_map_insert,
 *   na_ofi_msg_init_unexpected (the source address in the unexpected
 *     message's header), na_ofi_msg_send (fi_senddata, tag in data),
 *     na_ofi_msg_recv (fi_recv), na_ofi_msg_multi_recv (fi_recvmsg
 *     FI_MULTI_RECV), na_ofi_tag_send / na_ofi_tag_recv (expected messages),
 *   na_ofi_mem_register (fi_mr_regattr, requested key unless FI_MR_PROV_KEY,
 *     fi_mr_bind + fi_mr_enable under FI_MR_ENDPOINT), na_ofi_mem_buf_register
 *     (FI_MR_LOCAL), na_ofi_rma_iov_translate, na_ofi_put / na_ofi_get
 *     (fi_writemsg FI_COMPLETION|FI_DELIVERY_COMPLETE, fi_readmsg
 *     FI_COMPLETION),
 *   na_ofi_cq_read / na_ofi_cq_readerr, na_ofi_poll_get_fd (FI_GETWAIT),
 *     na_ofi_poll_try_wait (fi_trywait), then epoll on the fd,
 *   na_ofi_op_cancel (fi_cancel of the posted unexpected receive at
 *     shutdown, then its FI_ECANCELED completion), na_ofi_finalize.
 *
 * NAME is the protocol of "ofi+NAME://": tcp, tcp;ofi_rxm, sockets, shm,
 * verbs;ofi_rxm (or verbs).  -a NODE is the host (127.0.0.1).
 */
#include "harness.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <sched.h>
#include <sys/epoll.h>

#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_ext.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>

#define NA_OFI_VERSION FI_VERSION(1, 13)	/* built against 1.17 headers */
#define MR_BASIC (FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY)
#define MSG_SIZE 4096				/* NA_OFI_MSG_SIZE */
#define TAG_MASK 0xFFFFFFFFULL
#define CQ_SIZE 131072
#define CQ_EVENTS 16
#define STR_ADDR 128				/* struct na_ofi_str_addr */
#define BULK (256 * 1024)

struct prov {
	const char *name, *alt;
	uint32_t addr_format;
	enum fi_progress progress;
	uint32_t protocol;
	uint64_t extra_caps;
	bool dom_iface, wait_fd, sep;
};

static const struct prov provs[] = {
	{ "shm", "sm", FI_ADDR_STR, FI_PROGRESS_MANUAL, FI_PROTO_SHM, 0,
	  false, false, false },
	{ "sockets", "", FI_SOCKADDR_IN, FI_PROGRESS_AUTO, FI_PROTO_SOCK_TCP,
	  FI_MULTI_RECV, true, true, true },
	{ "tcp", "tcp_exp", FI_SOCKADDR_IN, FI_PROGRESS_MANUAL, FI_PROTO_XNET,
	  FI_MULTI_RECV, true, true, false },
	{ "tcp;ofi_rxm", "tcp_rxm", FI_SOCKADDR_IN, FI_PROGRESS_MANUAL,
	  FI_PROTO_RXM, FI_MULTI_RECV, true, true, false },
	{ "verbs;ofi_rxm", "verbs", FI_SOCKADDR_IN, FI_PROGRESS_MANUAL,
	  FI_PROTO_RXM, FI_MULTI_RECV, false, true, false },
};

union raw_addr {
	struct sockaddr_in sin;
	char str[STR_ADDR];
};

struct op {
	int kind;
	int done, errs, err;
	uint64_t err_flags; /* the last error entry's flags */
	struct fi_cq_tagged_entry wc;
};

struct na {
	struct cl *c;
	const struct prov *p;
	struct fi_info *info;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_av *av;
	struct fid_ep *ep;
	struct fid_cq *cq;
	bool no_wait, multi_recv;
	int fd, epfd;
	union raw_addr self;
	size_t addrlen;
	fi_addr_t self_fi;
	int64_t next_key;
	struct op ops[6];	/* 0 unexpected recv, 1 send, 2 expected recv,
				   3 rma, 4 expected send */
};

/* The client's logger: warnings and worse, to stdout. */
static int log_enabled(const struct fi_provider *prov, enum fi_log_level level,
		       enum fi_log_subsys subsys, uint64_t flags)
{
	return level <= FI_LOG_WARN;
}

static int log_ready(const struct fi_provider *prov, enum fi_log_level level,
		     enum fi_log_subsys subsys, uint64_t flags,
		     uint64_t *showtime)
{
	return level <= FI_LOG_WARN;
}

static void log_msg(const struct fi_provider *prov, enum fi_log_level level,
		    enum fi_log_subsys subsys, const char *func, int line,
		    const char *msg)
{
	printf("[ofi log] %s:%d: %s", func, line, msg);
}

static struct fi_ops_log log_ops = {
	.size = sizeof(struct fi_ops),	/* as Mercury sets it */
	.enabled = log_enabled, .ready = log_ready, .log = log_msg,
};
static struct fid_logging log_fid = { .ops = NULL };

static const struct prov *prov_type(const char *name)
{
	size_t i;

	if (FI_VERSION_LT(fi_version(), FI_VERSION(1, 18)) &&
	    !strcmp(name, "tcp"))
		name = "tcp;ofi_rxm";
	for (i = 0; i < sizeof(provs) / sizeof(provs[0]); i++)
		if (!strcmp(provs[i].name, name) || !strcmp(provs[i].alt, name))
			return &provs[i];
	return NULL;
}

/* na_ofi_getinfo; info: the second call, with the address information */
static int getinfo(struct na *n, bool info, const void *src, size_t srclen,
		   struct fi_info **out)
{
	struct fi_info *hints = fi_allocinfo();
	int ret;

	hints->mode = FI_ASYNC_IOV | FI_CONTEXT;
	hints->ep_attr->type = FI_EP_RDM;
	hints->caps = FI_MSG | FI_TAGGED | FI_RMA | FI_DIRECTED_RECV;
	hints->tx_attr->msg_order = 0;
	hints->rx_attr->msg_order = 0;
	hints->tx_attr->comp_order = 0;
	hints->rx_attr->comp_order = 0;
	hints->tx_attr->op_flags = FI_INJECT_COMPLETE;
	hints->domain_attr->resource_mgmt = FI_RM_ENABLED;
	hints->domain_attr->mr_mode = MR_BASIC | FI_MR_LOCAL | FI_MR_ENDPOINT;
	hints->fabric_attr->prov_name = strdup(n->p->name);
	hints->ep_attr->protocol = n->p->protocol;
	hints->caps |= n->p->extra_caps;
	hints->domain_attr->control_progress = n->p->progress;
	hints->domain_attr->data_progress = n->p->progress;
	if (info) {
		/* tcp (FI_PROTO_XNET): listeners may hold many responses */
		if (!strcmp(n->p->name, "tcp")) {
			hints->tx_attr->size = n->c->rank == 0 ? 4096 : 512;
			hints->rx_attr->size = 512; /* multi-recv */
		}
		hints->addr_format = n->p->addr_format;
		hints->domain_attr->threading = FI_THREAD_SAFE;
		if (src) {
			hints->src_addr = malloc(srclen);
			memcpy(hints->src_addr, src, srclen);
			hints->src_addrlen = srclen;
		}
	}
	ret = fi_getinfo(NA_OFI_VERSION, NULL, NULL, 0, hints, out);
	fi_freeinfo(hints);
	return ret;
}

/* na_ofi_parse_hostname_info for FI_SOCKADDR_IN: the host's address and,
 * for providers whose domains are interfaces, the interface's name. */
static char *parse_host(struct na *n, struct sockaddr_in *sin)
{
	struct ifaddrs *ifa, *i;
	char *dom = NULL;

	memset(sin, 0, sizeof(*sin));
	sin->sin_family = AF_INET;
	if (inet_pton(AF_INET, n->c->node, &sin->sin_addr) != 1)
		cl_fail(n->c, "not an IPv4 address: %s", n->c->node);
	if (getifaddrs(&ifa))
		cl_fail(n->c, "getifaddrs: %s", strerror(errno));
	for (i = ifa; i; i = i->ifa_next)
		if (i->ifa_addr && i->ifa_addr->sa_family == AF_INET &&
		    ((struct sockaddr_in *)i->ifa_addr)->sin_addr.s_addr ==
		    sin->sin_addr.s_addr)
			break;
	if (!i)
		cl_fail(n->c, "no interface has %s", n->c->node);
	if (n->p->dom_iface)
		dom = strdup(i->ifa_name);
	freeifaddrs(ifa);
	return dom;
}

static void verify_info(struct na *n)
{
	struct cl *c = n->c;
	struct fi_info *list = NULL, *p, *pick[32];
	struct sockaddr_in sin;
	char *dom = NULL;
	const void *src = NULL;
	size_t srclen = 0, count = 0, i;
	cpu_set_t set;
	int ret, cpu = 0;

	/* na_ofi_check_protocol: no address information */
	ret = getinfo(n, false, NULL, 0, &list);
	if (ret)
		cl_skip(c, "fi_getinfo (check_protocol) for \"%s\", protocol %u: "
			"%d (%s)", n->p->name, n->p->protocol, ret,
			fi_strerror(-ret));
	for (p = list; p; p = p->next)
		if (!strcmp(p->fabric_attr->prov_name, n->p->name))
			break;
	if (!p)
		cl_skip(c, "no answer's prov_name is \"%s\" (first: \"%s\")",
			n->p->name, list->fabric_attr->prov_name);
	fi_freeinfo(list);
	list = NULL;

	if (n->p->addr_format == FI_SOCKADDR_IN) {
		dom = parse_host(n, &sin);
		src = &sin;
		srclen = sizeof(sin);
	}
	ret = getinfo(n, true, src, srclen, &list);
	if (ret)
		cl_skip(c, "fi_getinfo with addr_format %u, src %s: %d (%s)",
			n->p->addr_format, src ? c->node : "none", ret,
			fi_strerror(-ret));
	for (p = list; p; p = p->next) {
		if (p->addr_format != n->p->addr_format ||
		    strcmp(p->fabric_attr->prov_name, n->p->name) ||
		    (dom && strcmp(dom, p->domain_attr->name)))
			continue;
		for (i = 0; i < count; i++)
			if (!strcmp(pick[i]->domain_attr->name,
				    p->domain_attr->name))
				break;
		if (i == count && count < 32)
			pick[count++] = p;
	}
	if (!count)
		cl_skip(c, "no answer matches: addr_format %u, prov_name %s, "
			"domain %s (first answer: %u, %s, %s)", n->p->addr_format,
			n->p->name, dom ? dom : "any", list->addr_format,
			list->fabric_attr->prov_name, list->domain_attr->name);
	if (!sched_getaffinity(0, sizeof(set), &set))
		for (cpu = 0; cpu < CPU_SETSIZE && !CPU_ISSET(cpu, &set); cpu++)
			;
	n->info = fi_dupinfo(pick[count > 1 ? (size_t)cpu % count : 0]);
	fi_freeinfo(list);
	free(dom);
	if (n->info->addr_format == FI_SOCKADDR_IN && n->info->src_addr) {
		char ip[INET_ADDRSTRLEN] = "";

		inet_ntop(AF_INET,
			  &((struct sockaddr_in *)n->info->src_addr)->sin_addr,
			  ip, sizeof(ip));
		cl_note(c, "%zu candidate domain(s) for source %s; CPU %d takes "
			"%s, whose src_addr is %s", count, c->node, cpu,
			n->info->domain_attr->name, ip);
	}
	cl_note(c, "%s domain %s protocol %u caps %s",
		n->info->fabric_attr->prov_name, n->info->domain_attr->name,
		n->info->ep_attr->protocol,
		fi_tostr(&n->info->caps, FI_TYPE_CAPS));
}

static void open_all(struct na *n)
{
	struct cl *c = n->c;
	struct fi_domain_attr *da;
	struct fi_av_attr av_attr = { .type = FI_AV_UNSPEC };
	struct fi_cq_attr cq_attr = { 0 };
	cpu_set_t set;
	size_t old_min, len = sizeof(old_min), min = MSG_SIZE;
	int cpu = -1;

	if ((n->p->extra_caps & FI_MULTI_RECV) &&
	    !(n->info->caps & FI_MULTI_RECV))
		cl_fail(c, "FI_MULTI_RECV is not supported by provider");
	n->multi_recv = n->p->extra_caps & FI_MULTI_RECV;
	CL_CALL(c, fi_fabric(n->info->fabric_attr, &n->fabric, NULL));

	da = n->info->domain_attr;
	if (!n->p->wait_fd) {
		n->no_wait = true;
		da->control_progress = FI_PROGRESS_MANUAL;
		da->data_progress = FI_PROGRESS_MANUAL;
	}
	CL_CALL(c, fi_domain(n->fabric, n->info, &n->domain, NULL));
	if (da->mr_key_size > 8)
		cl_fail(c, "MR key size (%zu) is not supported", da->mr_key_size);
	if (da->cq_data_size < 4)
		cl_fail(c, "CQ data size (%zu) is not supported",
			da->cq_data_size);
	if (n->p->sep)
		av_attr.rx_ctx_bits = 8;
	CL_CALL(c, fi_av_open(n->domain, &av_attr, &n->av, NULL));

	if (MSG_SIZE > n->info->ep_attr->max_msg_size)
		cl_fail(c, "Msg size max (%d) larger than provider max (%zu)",
			MSG_SIZE, n->info->ep_attr->max_msg_size);
	CL_CALL(c, fi_endpoint(n->domain, n->info, &n->ep, NULL));
	if (!sched_getaffinity(0, sizeof(set), &set) && CPU_COUNT(&set) == 1)
		for (cpu = 0; cpu < CPU_SETSIZE && !CPU_ISSET(cpu, &set); cpu++)
			;
	if (!n->no_wait)
		cq_attr.wait_obj = FI_WAIT_FD;
	cq_attr.wait_cond = FI_CQ_COND_NONE;
	cq_attr.format = FI_CQ_FORMAT_TAGGED;
	cq_attr.size = CQ_SIZE;
	if (cpu >= 0) {
		cq_attr.flags = FI_AFFINITY;
		cq_attr.signaling_vector = cpu;
	}
	CL_CALL(c, fi_cq_open(n->domain, &cq_attr, &n->cq, NULL));
	CL_CALL(c, fi_ep_bind(n->ep, &n->cq->fid, FI_TRANSMIT | FI_RECV));
	CL_CALL(c, fi_ep_bind(n->ep, &n->av->fid, 0));
	if (n->multi_recv) {
		CL_CALL(c, fi_getopt(&n->ep->fid, FI_OPT_ENDPOINT,
				     FI_OPT_MIN_MULTI_RECV, &old_min, &len));
		CL_CALL(c, fi_setopt(&n->ep->fid, FI_OPT_ENDPOINT,
				     FI_OPT_MIN_MULTI_RECV, &min, sizeof(min)));
	}
	CL_CALL(c, fi_enable(n->ep));

	/* na_ofi_endpoint_get_src_addr */
	n->addrlen = n->p->addr_format == FI_ADDR_STR ? STR_ADDR :
		     sizeof(struct sockaddr_in);
	if (n->p->addr_format == FI_ADDR_STR ?
	    n->addrlen < n->info->src_addrlen :
	    n->addrlen != n->info->src_addrlen)
		cl_fail(c, "Address lengths do not match (expected %zu, got "
			"%zu)", n->addrlen, n->info->src_addrlen);
	memset(&n->self, 0, sizeof(n->self));
	CL_CALL(c, fi_getname(&n->ep->fid, &n->self, &n->addrlen));
	if (fi_av_insert(n->av, &n->self, 1, &n->self_fi, 0, NULL) != 1)
		cl_fail(c, "fi_av_insert of its own address failed");

	/* na_ofi_poll_get_fd */
	n->fd = -1;
	if (!n->no_wait) {
		struct epoll_event ev = { .events = EPOLLIN };

		CL_CALL(c, fi_control(&n->cq->fid, FI_GETWAIT, &n->fd));
		if (n->fd < 0)
			cl_fail(c, "FI_GETWAIT gave fd %d", n->fd);
		n->epfd = epoll_create1(0);
		if (epoll_ctl(n->epfd, EPOLL_CTL_ADD, n->fd, &ev))
			cl_fail(c, "epoll_ctl: %s", strerror(errno));
	}
}

/* na_ofi_get_uri: fi_av_straddr, "://" prefix dropped, the prov_name put
 * in front */
static void get_uri(struct na *n, char *uri, size_t max)
{
	char str[128] = "", *p;
	size_t len = sizeof(str);

	fi_av_straddr(n->av, &n->self, str, &len);
	if (len > sizeof(str))
		cl_fail(n->c, "fi_av_straddr() address truncated, addrlen: %zu",
			len);
	p = strstr(str, "://");
	p = p ? p + 3 : str;
	snprintf(uri, max, "%s://%s", n->p->name, p);
}

/* na_ofi_addr_lookup: the URI parsed without libfabric, then inserted */
static fi_addr_t lookup(struct na *n, const char *uri)
{
	struct cl *c = n->c;
	union raw_addr a;
	char prov[19] = "", ip[17];
	uint16_t port;
	fi_addr_t fa;

	if (sscanf(uri, "%16[^:]://", prov) != 1 || strcmp(prov, n->p->name))
		cl_fail(c, "Unrecognized provider type found from: %s", uri);
	memset(&a, 0, sizeof(a));
	if (n->p->addr_format == FI_ADDR_STR) {
		snprintf(a.str, sizeof(a.str), "fi_%.120s", uri);
	} else {
		a.sin.sin_family = AF_INET;
		if (sscanf(uri, "%*[^:]://%16[^:]:%hu", ip, &port) != 2 ||
		    inet_pton(AF_INET, ip, &a.sin.sin_addr) != 1)
			cl_fail(c, "Malformed address: %s", uri);
		a.sin.sin_port = htons(port);
	}
	if (fi_av_insert(n->av, &a, 1, &fa, 0, NULL) != 1)
		cl_fail(c, "fi_av_insert(%s) failed", uri);
	return fa;
}

/* na_ofi_cq_read and its processing; returns the events seen */
static int poll_cq(struct na *n)
{
	struct fi_cq_tagged_entry ev[CQ_EVENTS];
	struct fi_cq_err_entry err;
	ssize_t r, i;

	r = fi_cq_read(n->cq, ev, CQ_EVENTS);
	if (r == -FI_EAGAIN)
		return 0;
	if (r == -FI_EAVAIL) {
		memset(&err, 0, sizeof(err));
		r = fi_cq_readerr(n->cq, &err, 0);
		if (r < 0)
			cl_fail(n->c, "fi_cq_readerr() failed, rc: %zd", r);
		if (!err.op_context)
			cl_fail(n->c, "error event without context: %d", err.err);
		((struct op *)err.op_context)->errs++;
		((struct op *)err.op_context)->err = err.err;
		((struct op *)err.op_context)->err_flags = err.flags;
		return 1;
	}
	if (r < 0)
		cl_fail(n->c, "fi_cq_read() failed, rc: %zd (%s)", r,
			fi_strerror((int)-r));
	for (i = 0; i < r; i++) {
		struct op *o = ev[i].op_context;

		if (o < n->ops || o >= n->ops + 6)
			cl_fail(n->c, "event with a foreign context");
		o->done++;
		o->wc = ev[i];
	}
	return (int)r;
}

/* HG_Progress: poll, and when nothing came, block on the fd if
 * fi_trywait says it is safe */
static void progress(struct na *n, const char *what)
{
	struct epoll_event ev;
	struct fid *fids[1];
	int rc;

	cl_tick(n->c, what);
	if (poll_cq(n) || n->no_wait)
		return;
	fids[0] = &n->cq->fid;
	rc = fi_trywait(n->fabric, fids, 1);
	if (rc == -FI_EAGAIN)
		return;
	if (rc)
		cl_fail(n->c, "fi_trywait() failed, rc: %d (%s)", rc,
			fi_strerror(-rc));
	if (epoll_wait(n->epfd, &ev, 1, 100) < 0 && errno != EINTR)
		cl_fail(n->c, "epoll_wait: %s", strerror(errno));
}

static void progress_cb(void *n)
{
	progress(n, "the other rank at a barrier");
}

static void wait_op(struct na *n, int k, int want, const char *what)
{
	while (n->ops[k].done + n->ops[k].errs < want)
		progress(n, what);
	if (n->ops[k].errs)
		cl_fail(n->c, "%s completed in error: %d (%s)", what,
			n->ops[k].err, fi_strerror(n->ops[k].err));
}

#define POST(n, call, what)                                                   \
	do {                                                                  \
		ssize_t r_;                                                   \
		while ((r_ = (call)) == -FI_EAGAIN)                           \
			progress(n, what);                                    \
		if (r_)                                                       \
			cl_fail((n)->c, "%s: %zd (%s)", what, r_,             \
				fi_strerror((int)-r_));                       \
	} while (0)

struct mem {
	struct fid_mr *mr;
	void *desc;
	uint64_t key;
};

/* na_ofi_mem_register, NA_MEM_READWRITE */
static void mem_register(struct na *n, void *buf, size_t len, struct mem *m)
{
	struct cl *c = n->c;
	struct iovec iov = { .iov_base = buf, .iov_len = len };
	struct fi_mr_attr attr = {
		.mr_iov = &iov, .iov_count = 1,
		.access = FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE,
		.iface = FI_HMEM_SYSTEM,
	};

	attr.requested_key = (n->info->domain_attr->mr_mode & FI_MR_PROV_KEY) ?
			     0 : (uint64_t)++n->next_key;
	CL_CALL(c, fi_mr_regattr(n->domain, &attr, 0, &m->mr));
	if (n->info->domain_attr->mr_mode & FI_MR_ENDPOINT) {
		CL_CALL(c, fi_mr_bind(m->mr, &n->ep->fid, 0));
		CL_CALL(c, fi_mr_enable(m->mr));
	}
	m->key = fi_mr_key(m->mr);
	m->desc = fi_mr_desc(m->mr);
}

/* na_ofi_mem_buf_register: message buffers under FI_MR_LOCAL */
static void *buf_register(struct na *n, void *buf, size_t len, uint64_t access,
			  struct fid_mr **mr)
{
	*mr = NULL;
	if (!(n->info->domain_attr->mr_mode & FI_MR_LOCAL))
		return NULL;
	CL_CALL(n->c, fi_mr_reg(n->domain, buf, len, access, 0, 0, 0, mr,
				NULL));
	return fi_mr_desc(*mr);
}

struct rpc {			/* the RPC's input: the client's bulk handle */
	uint64_t addr, len, key;
	uint32_t tag;
};

static void server(struct na *n)
{
	struct cl *c = n->c;
	static char unexp[8 * MSG_SIZE], resp[MSG_SIZE];
	static char bulk[BULK];
	struct fid_mr *umr, *rmr;
	void *udesc, *rdesc;
	struct iovec iov;
	struct fi_msg msg = { 0 };
	struct mem m;
	struct rpc in;
	union raw_addr src;
	fi_addr_t client;
	char uri[256];
	const char *payload;
	size_t hdr = n->p->addr_format == FI_ADDR_STR ? STR_ADDR :
		     sizeof(struct sockaddr_in);

	get_uri(n, uri, sizeof(uri));
	cl_note(c, "listening at %s", uri);
	udesc = buf_register(n, unexp, sizeof(unexp), FI_RECV, &umr);
	rdesc = buf_register(n, resp, sizeof(resp), FI_SEND, &rmr);
	/* the unexpected receive HG posts */
	iov.iov_base = unexp;
	iov.iov_len = n->multi_recv ? sizeof(unexp) : MSG_SIZE;
	msg.msg_iov = &iov;
	msg.desc = &udesc;
	msg.iov_count = 1;
	msg.addr = FI_ADDR_UNSPEC;
	msg.context = &n->ops[0];
	if (n->multi_recv)
		POST(n, fi_recvmsg(n->ep, &msg, FI_MULTI_RECV),
		     "fi_recvmsg(FI_MULTI_RECV)");
	else	/* HG posts several; the second is canceled at the end */
		for (int k = 0; k < 2; k++)
			POST(n, fi_recv(n->ep, unexp + k * MSG_SIZE, MSG_SIZE,
					udesc, FI_ADDR_UNSPEC,
					&n->ops[k ? 5 : 0]), "fi_recv");
	cl_send(c, uri, strlen(uri) + 1);

	wait_op(n, 0, 1, "the RPC");
	payload = n->multi_recv ? n->ops[0].wc.buf : unexp;
	if (!payload || n->ops[0].wc.len != hdr + sizeof(in))
		cl_fail(c, "RPC of %zu bytes at %p, %zu expected",
			n->ops[0].wc.len, payload, hdr + sizeof(in));
	if (!(n->ops[0].wc.flags & FI_REMOTE_CQ_DATA) ||
	    n->ops[0].wc.data != (0x1234 & TAG_MASK))
		cl_fail(c, "RPC tag (CQ data) 0x%llx, flags 0x%llx",
			(unsigned long long)n->ops[0].wc.data,
			(unsigned long long)n->ops[0].wc.flags);
	/* na_ofi_cq_process_raw_src_addr: the sender from the header */
	memset(&src, 0, sizeof(src));
	memcpy(&src, payload, hdr);
	memcpy(&in, payload + hdr, sizeof(in));
	if (fi_av_insert(n->av, &src, 1, &client, 0, NULL) != 1)
		cl_fail(c, "fi_av_insert of the RPC's source failed");

	/* the handler: pull the client's bulk data, push a reply into it */
	mem_register(n, bulk, sizeof(bulk), &m);
	{
		struct fi_rma_iov riov = { .addr = in.addr, .len = in.len / 2,
					   .key = in.key };
		struct fi_msg_rma rma = {
			.msg_iov = &iov, .desc = &m.desc, .iov_count = 1,
			.addr = client, .rma_iov = &riov, .rma_iov_count = 1,
			.context = &n->ops[3],
		};

		iov.iov_base = bulk;
		iov.iov_len = in.len / 2;
		POST(n, fi_readmsg(n->ep, &rma, FI_COMPLETION), "fi_readmsg");
		wait_op(n, 3, 1, "HG_Bulk_transfer (pull)");
		cl_check(c, bulk, in.len / 2, 51, "pulled bulk data");
		cl_fill(bulk, in.len / 2, 52);
		riov.addr = in.addr + in.len / 2;
		POST(n, fi_writemsg(n->ep, &rma,
				    FI_COMPLETION | FI_DELIVERY_COMPLETE),
		     "fi_writemsg");
		wait_op(n, 3, 2, "HG_Bulk_transfer (push)");
	}
	/* the response, an expected message */
	cl_fill(resp, 300, 53);
	POST(n, fi_tsend(n->ep, resp, 300, rdesc, client, in.tag, &n->ops[4]),
	     "fi_tsend");
	wait_op(n, 4, 1, "the response's completion");

	/* HG_Finalize cancels the unexpected receive still posted: it ends
	 * with FI_ECANCELED, or (multi-recv) with its buffer released */
	{
		int k = n->multi_recv ? 0 : 5;
		struct op *o = &n->ops[k];

		CL_CALL(c, fi_cancel(&n->ep->fid, o));
		while (!o->errs && !(k == 0 && (o->wc.flags & FI_MULTI_RECV)))
			progress(n, "the canceled receive's completion");
		if (o->errs && o->err != FI_ECANCELED)
			cl_fail(c, "canceled receive ended with %d (%s)",
				o->err, fi_strerror(o->err));
		/* na_ofi_cq_process_error: from fi_version() 2.1 on (but on
		 * sockets) a multi-recv buffer's error completes it only
		 * with FI_MULTI_RECV; without it HG_Finalize waits forever */
		if (k == 0 && o->errs && !(o->wc.flags & FI_MULTI_RECV) &&
		    FI_VERSION_GE(fi_version(), FI_VERSION(2, 1)) &&
		    strcmp(n->p->name, "sockets") &&
		    !(o->err_flags & FI_MULTI_RECV))
			cl_fail(c, "the canceled multi-recv buffer's FI_ECANCELED "
				"has no FI_MULTI_RECV: Mercury waits for it");
	}
	cl_barrier_p(c, progress_cb, n);
	CL_CALL(c, fi_close(&m.mr->fid));
	if (umr)
		CL_CALL(c, fi_close(&umr->fid));
	if (rmr)
		CL_CALL(c, fi_close(&rmr->fid));
}

static void client(struct na *n)
{
	struct cl *c = n->c;
	static char sbuf[MSG_SIZE], rbuf[MSG_SIZE], bulk[BULK];
	struct fid_mr *smr, *rmr;
	void *sdesc, *rdesc;
	struct mem m;
	struct rpc in;
	char uri[256];
	fi_addr_t server;
	size_t hdr = n->p->addr_format == FI_ADDR_STR ? STR_ADDR :
		     sizeof(struct sockaddr_in);

	cl_recv(c, uri, sizeof(uri));
	server = lookup(n, uri);
	sdesc = buf_register(n, sbuf, sizeof(sbuf), FI_SEND, &smr);
	rdesc = buf_register(n, rbuf, sizeof(rbuf), FI_RECV, &rmr);
	cl_fill(bulk, BULK / 2, 51);
	memset(bulk + BULK / 2, 0, BULK / 2);
	mem_register(n, bulk, sizeof(bulk), &m);
	in.addr = (n->info->domain_attr->mr_mode & FI_MR_VIRT_ADDR) ?
		  (uint64_t)(uintptr_t)bulk : 0;
	in.len = BULK;
	in.key = m.key;
	in.tag = 77;
	/* the response's receive first, then the RPC: the header is our own
	 * address (no FI_SOURCE_ERR), the tag goes in the CQ data */
	POST(n, fi_trecv(n->ep, rbuf, sizeof(rbuf), rdesc, server, in.tag, 0,
			 &n->ops[2]), "fi_trecv");
	memcpy(sbuf, &n->self, hdr);
	memcpy(sbuf + hdr, &in, sizeof(in));
	POST(n, fi_senddata(n->ep, sbuf, hdr + sizeof(in), sdesc, 0x1234,
			    server, &n->ops[1]), "fi_senddata");
	wait_op(n, 1, 1, "the RPC's send completion");
	wait_op(n, 2, 1, "the response");
	if (n->ops[2].wc.len != 300)
		cl_fail(c, "response of %zu bytes", n->ops[2].wc.len);
	cl_check(c, rbuf, 300, 53, "response");
	cl_check(c, bulk + BULK / 2, BULK / 2, 52, "bulk data pushed back");
	cl_barrier_p(c, progress_cb, n);
	CL_CALL(c, fi_close(&m.mr->fid));
	if (smr)
		CL_CALL(c, fi_close(&smr->fid));
	if (rmr)
		CL_CALL(c, fi_close(&rmr->fid));
}

static void rank_main(struct cl *c)
{
	struct na n = { .c = c };
	int ret;

	/* na_ofi_log_import, at load */
	if (!getenv("FI_LOG_LEVEL") &&
	    !FI_VERSION_LT(fi_version(), FI_VERSION(1, 16))) {
		log_fid.ops = &log_ops;
		ret = fi_import_log(NA_OFI_VERSION, 0, &log_fid);
		if (ret) {
			cl_note(c, "fi_import_log() failed, rc: %d (%s)", ret,
				fi_strerror(-ret));
			log_fid.ops = NULL;
		}
	}
	cl_lib(c);
	if (FI_VERSION_LT(fi_version(), NA_OFI_VERSION))
		cl_skip(c, "runtime libfabric older than 1.13");
	n.p = prov_type(c->name);
	if (!n.p)
		cl_fail(c, "Protocol %s not supported", c->name);
	verify_info(&n);
	open_all(&n);
	if (c->rank == 0)
		server(&n);
	else
		client(&n);

	/* na_ofi_finalize */
	CL_CALL(c, fi_close(&n.ep->fid));
	CL_CALL(c, fi_close(&n.cq->fid));
	CL_CALL(c, fi_close(&n.av->fid));
	CL_CALL(c, fi_close(&n.domain->fid));
	CL_CALL(c, fi_close(&n.fabric->fid));
	fi_freeinfo(n.info);
	/* na_ofi_log_close, at unload */
	if (log_fid.ops)
		CL_CALL(c, fi_close(&log_fid.fid));
	cl_pass(c);
}

int main(int argc, char **argv)
{
	return cl_run(argc, argv, "mercury", rank_main);
}
