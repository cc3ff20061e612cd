// SPDX-License-Identifier: BSD-2-Clause
/*
 * fabtests common helpers: options, setup, side channel, completions.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "ft.h"

struct ft_state ft = { .oob = -1 };

void ft_err(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", ft.prog ? ft.prog->name : "fabtests");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

double ft_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

const char *ft_ep_type_str(enum fi_ep_type type)
{
	switch (type) {
	case FI_EP_MSG:
		return "msg";
	case FI_EP_RDM:
		return "rdm";
	case FI_EP_DGRAM:
		return "dgram";
	default:
		return "unspec";
	}
}

/*
 * Watchdog.  Every wait in this file gives up after -T seconds without
 * progress, but a provider call that blocks and never returns (a blocking
 * CQ read that ignores its timeout) would still hang the run: a thread
 * ends the process once nothing has progressed for -T + 5 seconds.
 * Progress bumps a counter rather than reading the clock: ft_alive runs on
 * every completion, inside the timed loops, where a clock read can be a
 * system call (a VM whose clock source has no vDSO path).
 */
static _Atomic unsigned long ft_heartbeat;
/* The heartbeat the watchdog has seen stand still for -T seconds (0: none);
 * the waits compare it with the heartbeat instead of reading the clock. */
static _Atomic unsigned long ft_stalled_at;
static bool ft_watchdog_runs;

void ft_alive(void)
{
	atomic_fetch_add_explicit(&ft_heartbeat, 1, memory_order_relaxed);
}

static void *ft_watchdog(void *arg)
{
	long limit = ft.opts.timeout + 5, idle = 0;
	unsigned long last = 0, now;

	for (;;) {
		sleep(1);
		now = atomic_load_explicit(&ft_heartbeat, memory_order_relaxed);
		idle = now == last ? idle + 1 : 0;
		last = now;
		if (idle >= ft.opts.timeout)
			atomic_store_explicit(&ft_stalled_at, now,
					      memory_order_relaxed);
		if (idle > limit) {
			ft_err("watchdog: no progress for %ld s, a call into "
			       "the provider did not return", idle);
			_exit(1);
		}
	}
	return NULL;
}

void ft_watchdog_start(void)
{
	static bool started;
	pthread_t thread;

	ft_alive();
	if (started)
		return;
	started = true;
	if (pthread_create(&thread, NULL, ft_watchdog, NULL))
		ft_err("pthread_create(watchdog) failed; runs are not bounded");
	else
		pthread_detach(thread), ft_watchdog_runs = true;
}

/*
 * Whether a wait has seen no progress for -T seconds.  With the watchdog
 * running, that is its verdict on the heartbeat (two loads); without it,
 * the clock, from *since (0: start counting now).
 */
static bool ft_stalled(double *since)
{
	unsigned long at;

	if (ft_watchdog_runs) {
		at = atomic_load_explicit(&ft_stalled_at, memory_order_relaxed);
		return at && at == atomic_load_explicit(&ft_heartbeat,
							memory_order_relaxed);
	}
	if (!*since) {
		*since = ft_now();
		return false;
	}
	return ft_now() - *since > ft.opts.timeout;
}

/* ---- options ---- */

static void ft_usage(const struct ft_prog *prog, FILE *out)
{
	fprintf(out,
		"usage: %s [OPTIONS]            start the server\n"
		"       %s [OPTIONS] SERVER     start the client\n"
		"%s\n\n"
		"  -p PROV     provider (fi_info -l names, e.g. tcp, shm)\n"
		"  -e TYPE     endpoint type: msg, rdm or dgram (default %s)\n"
		"  -d DOMAIN   domain name\n"
		"  -f FABRIC   fabric name\n"
		"  -s ADDR     source address (server: where to listen)\n"
		"  -B PORT     server: side-channel port to listen on, 0 picks a\n"
		"              free one and reports it on stderr (default %s)\n"
		"  -P PORT     client: side-channel port to connect to (default %s)\n"
		"  -S SIZES    transfer size in bytes (k/m suffixes), a comma list,\n"
		"              or 'all': powers of two from 1 to 4m (default %s)\n"
		"  -I N        iterations per size (default %d; without -I, sizes\n"
		"              above 64k run proportionally fewer, at least 10)\n"
		"  -w N        warmup iterations (default 10)\n"
		"  -W N        window: operations in flight (default %d)\n"
		"  -j N        inject size: use fi_inject for sizes up to N\n"
		"              (default: the provider's inject_size)\n"
		"  -v          verify every received byte\n"
		"  -m          machine-readable output: one key=value line per size\n"
		"  -U          request FI_DELIVERY_COMPLETE\n"
		"  -t WAIT     completion wait object: none (busy poll, default),\n"
		"              unspec, fd or mutex_cond\n"
		"  -c COMP     completion type: queue (default) or counter\n"
		"  -T SECONDS  fail after this long without progress (default 30)\n",
		prog->name, prog->name, prog->summary,
		ft_ep_type_str(prog->ep_type), FT_DEFAULT_PORT,
		FT_DEFAULT_PORT, prog->sizes, prog->iters, prog->window);
	if (prog->ops_help)
		fprintf(out, "  -o OP       %s (default %s)\n", prog->ops_help,
			prog->op);
	if (prog->threads)
		fprintf(out, "  -n N        threads (default 2)\n");
	if (prog->ranks)
		fprintf(out, "  -n N        ranks: processes, one endpoint each; the\n"
			     "              client starts all but the server's\n"
			     "              (default 3)\n");
	fprintf(out,
		"  -h          this help\n\n"
		"Exit status: 0 passed, 77 the provider does not support the test,\n"
		"anything else failed.\n"
		"Machine-readable lines (-m) read, in this order:\n"
		"  test= prov= ep= bytes= iters= total_bytes= time_s= mb_per_s=\n"
		"  usec_per_xfer= mxfers_per_s=\n");
}

static int ft_parse_size(const char *s, size_t *size)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno || end == s)
		return -1;
	switch (*end) {
	case 'k':
	case 'K':
		v <<= 10;
		end++;
		break;
	case 'm':
	case 'M':
		v <<= 20;
		end++;
		break;
	case 'g':
	case 'G':
		v <<= 30;
		end++;
		break;
	}
	if (*end)
		return -1;
	*size = v;
	return 0;
}

static int ft_parse_sizes(const char *arg)
{
	char *copy, *tok, *save;
	size_t s;
	int ret = 0;

	ft.opts.nsizes = 0;
	ft.opts.sweep = !strcmp(arg, "all");
	if (ft.opts.sweep) {
		for (s = 1; s <= (4UL << 20); s <<= 1)
			ft.opts.sizes[ft.opts.nsizes++] = s;
		return 0;
	}
	copy = strdup(arg);
	if (!copy)
		return -1;
	for (tok = strtok_r(copy, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		if (ft.opts.nsizes == FT_MAX_SIZES || ft_parse_size(tok, &s)) {
			ret = -1;
			break;
		}
		ft.opts.sizes[ft.opts.nsizes++] = s;
	}
	free(copy);
	return ft.opts.nsizes ? ret : -1;
}

static bool ft_iters_given;

static int ft_parse_int(const char *s, int min, int *out)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 0);
	if (errno || end == s || *end || v < min || v > INT_MAX)
		return -1;
	*out = (int)v;
	return 0;
}

static void ft_bad(const char *what, const char *arg)
{
	ft_err("invalid %s '%s' (-h for help)", what, arg);
	exit(2);
}

#define FT_OPTSTRING "p:e:d:f:s:B:P:S:I:w:W:j:vmUt:c:o:T:n:h"

void ft_parse(int argc, char **argv, const struct ft_prog *prog)
{
	struct ft_opts *o = &ft.opts;
	size_t sz;
	int c;

	ft.prog = prog;
	memset(o, 0, sizeof(*o));
	o->ep_type = prog->ep_type;
	o->iters = prog->iters;
	o->warmup = 10;
	o->window = prog->window;
	o->inject = -1;
	o->wait_obj = FI_WAIT_NONE;
	o->comp = FT_COMP_QUEUE;
	o->op = prog->op;
	o->timeout = 30;
	o->threads = prog->ranks ? 3 : 2;
	o->src_port = FT_DEFAULT_PORT;
	o->dst_port = FT_DEFAULT_PORT;
	if (ft_parse_sizes(prog->sizes))
		ft_bad("default size", prog->sizes);

	while ((c = getopt(argc, argv, FT_OPTSTRING)) != -1) {
		switch (c) {
		case 'p':
			o->prov = optarg;
			break;
		case 'e':
			if (!strcmp(optarg, "msg"))
				o->ep_type = FI_EP_MSG;
			else if (!strcmp(optarg, "rdm"))
				o->ep_type = FI_EP_RDM;
			else if (!strcmp(optarg, "dgram"))
				o->ep_type = FI_EP_DGRAM;
			else
				ft_bad("endpoint type", optarg);
			break;
		case 'd':
			o->domain = optarg;
			break;
		case 'f':
			o->fabric = optarg;
			break;
		case 's':
			o->src_addr = optarg;
			break;
		case 'B':
			o->src_port = optarg;
			break;
		case 'P':
			o->dst_port = optarg;
			break;
		case 'S':
			if (ft_parse_sizes(optarg))
				ft_bad("size", optarg);
			break;
		case 'I':
			if (ft_parse_int(optarg, 1, &o->iters))
				ft_bad("iteration count", optarg);
			ft_iters_given = true;
			break;
		case 'w':
			if (ft_parse_int(optarg, 0, &o->warmup))
				ft_bad("warmup count", optarg);
			break;
		case 'W':
			if (ft_parse_int(optarg, 1, &o->window))
				ft_bad("window", optarg);
			break;
		case 'j':
			if (ft_parse_size(optarg, &sz))
				ft_bad("inject size", optarg);
			o->inject = (long)sz;
			break;
		case 'v':
			o->verify = true;
			break;
		case 'm':
			o->machine = true;
			break;
		case 'U':
			o->delivery = true;
			break;
		case 't':
			if (!strcmp(optarg, "none"))
				o->wait_obj = FI_WAIT_NONE;
			else if (!strcmp(optarg, "unspec"))
				o->wait_obj = FI_WAIT_UNSPEC;
			else if (!strcmp(optarg, "fd"))
				o->wait_obj = FI_WAIT_FD;
			else if (!strcmp(optarg, "mutex_cond"))
				o->wait_obj = FI_WAIT_MUTEX_COND;
			else
				ft_bad("wait object", optarg);
			break;
		case 'c':
			if (!strcmp(optarg, "queue"))
				o->comp = FT_COMP_QUEUE;
			else if (!strcmp(optarg, "counter"))
				o->comp = FT_COMP_COUNTER;
			else
				ft_bad("completion type", optarg);
			break;
		case 'o':
			if (!prog->ops_help)
				ft_bad("option", "-o");
			o->op = optarg;
			break;
		case 'T':
			if (ft_parse_int(optarg, 1, &o->timeout))
				ft_bad("timeout", optarg);
			break;
		case 'n':
			if ((!prog->threads && !prog->ranks) ||
			    ft_parse_int(optarg, prog->ranks ? 2 : 1,
					 &o->threads))
				ft_bad(prog->ranks ? "rank count" : "thread count",
				       optarg);
			break;
		case 'h':
			ft_usage(prog, stdout);
			exit(0);
		default:
			ft_usage(prog, stderr);
			exit(2);
		}
	}
	if (optind < argc)
		o->dst_addr = argv[optind++];
	if (optind < argc)
		ft_bad("argument", argv[optind]);
	ft.server = !o->dst_addr;
}

int ft_iters_for(size_t size)
{
	long n;

	if (ft_iters_given || size <= (64 << 10))
		return ft.opts.iters;
	n = (long)ft.opts.iters * (64 << 10) / (long)size;
	if (n < 10)
		n = 10;
	return n < ft.opts.iters ? (int)n : ft.opts.iters;
}

/* ---- side channel ---- */

static int ft_poll_fd(int fd, short events, int timeout_ms)
{
	struct pollfd pfd = { .fd = fd, .events = events };
	int ret;

	do {
		ret = poll(&pfd, 1, timeout_ms);
	} while (ret < 0 && errno == EINTR);
	if (ret < 0)
		return -errno;
	return ret;
}

static int ft_oob_listen(void)
{
	struct addrinfo hints = { .ai_family = AF_INET, .ai_socktype = SOCK_STREAM,
				  .ai_flags = AI_PASSIVE };
	struct addrinfo *ai;
	struct sockaddr_in sin;
	socklen_t len = sizeof(sin);
	int lfd, fd, ret, one = 1;

	ret = getaddrinfo(ft.opts.src_addr, ft.opts.src_port, &hints, &ai);
	if (ret) {
		ft_err("getaddrinfo(%s, %s): %s",
		       ft.opts.src_addr ? ft.opts.src_addr : "*",
		       ft.opts.src_port, gai_strerror(ret));
		return -FI_EINVAL;
	}
	lfd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (lfd < 0) {
		ret = -errno;
		goto err_free;
	}
	setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(lfd, ai->ai_addr, ai->ai_addrlen) || listen(lfd, 1)) {
		ret = -errno;
		ft_err("bind/listen on side-channel port %s: %s",
		       ft.opts.src_port, strerror(errno));
		goto err_close;
	}
	if (!strcmp(ft.opts.src_port, "0")) {
		getsockname(lfd, (struct sockaddr *)&sin, &len);
		fprintf(stderr, "listening on port %d\n", ntohs(sin.sin_port));
		fflush(stderr);
	}
	ret = ft_poll_fd(lfd, POLLIN, ft.opts.timeout * 1000);
	if (ret <= 0) {
		ft_err("no client connected within %d s", ft.opts.timeout);
		ret = ret ? ret : -FI_ETIMEDOUT;
		goto err_close;
	}
	fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
	if (fd < 0) {
		ret = -errno;
		ft_err("accept: %s", strerror(errno));
		goto err_close;
	}
	close(lfd);
	freeaddrinfo(ai);
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	ft.oob = fd;
	return 0;

err_close:
	close(lfd);
err_free:
	freeaddrinfo(ai);
	return ret;
}

static int ft_oob_connect(void)
{
	struct addrinfo hints = { .ai_family = AF_INET, .ai_socktype = SOCK_STREAM };
	struct addrinfo *ai;
	double deadline = ft_now() + ft.opts.timeout;
	int fd, ret, one = 1;

	ret = getaddrinfo(ft.opts.dst_addr, ft.opts.dst_port, &hints, &ai);
	if (ret) {
		ft_err("getaddrinfo(%s, %s): %s", ft.opts.dst_addr,
		       ft.opts.dst_port, gai_strerror(ret));
		return -FI_EINVAL;
	}
	for (;;) {
		fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd < 0) {
			ret = -errno;
			break;
		}
		if (!connect(fd, ai->ai_addr, ai->ai_addrlen)) {
			setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
			ft.oob = fd;
			ret = 0;
			break;
		}
		ret = -errno;
		close(fd);
		if ((ret != -ECONNREFUSED && ret != -ETIMEDOUT) ||
		    ft_now() > deadline) {
			ft_err("connect to %s port %s: %s", ft.opts.dst_addr,
			       ft.opts.dst_port, strerror(-ret));
			break;
		}
		usleep(50000);
	}
	freeaddrinfo(ai);
	return ret;
}

int ft_oob_send(const void *buf, size_t len)
{
	const char *p = buf;
	ssize_t n;

	while (len) {
		n = send(ft.oob, p, len, MSG_NOSIGNAL);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			ft_err("side channel send: %s",
			       n ? strerror(errno) : "closed");
			return -FI_EIO;
		}
		p += n;
		len -= n;
	}
	return 0;
}

static int ft_oob_recv_some(char *p, size_t len, size_t *got)
{
	ssize_t n;

	n = recv(ft.oob, p, len, MSG_DONTWAIT);
	if (n > 0) {
		*got += n;
		ft_alive();
		return 0;
	}
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return 0;
	ft_err("side channel recv: %s", n ? strerror(errno) : "peer closed");
	return -FI_EIO;
}

int ft_oob_recv(void *buf, size_t len)
{
	size_t got = 0;
	int ret;

	while (got < len) {
		ret = ft_poll_fd(ft.oob, POLLIN, ft.opts.timeout * 1000);
		if (ret <= 0) {
			ft_err("side channel: peer silent for %d s",
			       ft.opts.timeout);
			return ret ? ret : -FI_ETIMEDOUT;
		}
		ret = ft_oob_recv_some((char *)buf + got, len - got, &got);
		if (ret)
			return ret;
	}
	return 0;
}

int ft_oob_recv_progress(struct ft_ep *e, void *buf, size_t len)
{
	double last = ft_now();
	size_t got = 0, before;
	int ret;

	while (got < len) {
		ret = ft_progress(e);
		if (ret)
			return ret;
		ret = ft_poll_fd(ft.oob, POLLIN, 0);
		if (ret < 0)
			return ret;
		if (!ret) {
			if (ft_now() - last > ft.opts.timeout) {
				ft_err("side channel: peer silent for %d s",
				       ft.opts.timeout);
				return -FI_ETIMEDOUT;
			}
			continue;
		}
		before = got;
		ret = ft_oob_recv_some((char *)buf + got, len - got, &got);
		if (ret)
			return ret;
		if (got != before)
			last = ft_now();
	}
	return 0;
}

int ft_oob_open(void)
{
	ft_watchdog_start();
	return ft.server ? ft_oob_listen() : ft_oob_connect();
}

int ft_sync(void)
{
	char c = 's';
	int ret;

	ret = ft_oob_send(&c, 1);
	if (!ret)
		ret = ft_oob_recv(&c, 1);
	return ret;
}

/* ---- fabric setup ---- */

uint64_t ft_mr_access(uint64_t caps)
{
	uint64_t access = FI_SEND | FI_RECV;

	if (caps & (FI_RMA | FI_ATOMIC))
		access |= FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE;
	return access;
}

static int ft_alloc_hints(void)
{
	struct fi_info *h;

	h = fi_allocinfo();
	if (!h)
		return -FI_ENOMEM;
	h->caps = ft.prog->caps;
	/* FI_RX_CQ_DATA: remote CQ data of a write may consume a posted
	 * receive (verbs MSG); the RMA benchmarks post them then. */
	h->mode = FI_CONTEXT | FI_CONTEXT2 | FI_RX_CQ_DATA;
	h->ep_attr->type = ft.opts.ep_type;
	h->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR |
				  FI_MR_ALLOCATED | FI_MR_PROV_KEY;
	h->domain_attr->threading = ft.prog->threads ? FI_THREAD_SAFE :
						       FI_THREAD_DOMAIN;
	if (ft.opts.prov) {
		h->fabric_attr->prov_name = strdup(ft.opts.prov);
		if (!h->fabric_attr->prov_name)
			goto err;
	}
	if (ft.opts.fabric) {
		h->fabric_attr->name = strdup(ft.opts.fabric);
		if (!h->fabric_attr->name)
			goto err;
	}
	if (ft.opts.domain) {
		h->domain_attr->name = strdup(ft.opts.domain);
		if (!h->domain_attr->name)
			goto err;
	}
	if (ft.opts.delivery)
		h->tx_attr->op_flags |= FI_DELIVERY_COMPLETE;
	if (ft.opts.verify && ft.opts.ep_type == FI_EP_RDM)
		h->tx_attr->msg_order |= FI_ORDER_SAS;
	if (ft.opts.inject > 0)
		h->tx_attr->inject_size = (size_t)ft.opts.inject;
	if (ft.sep.count) {
		h->caps |= FI_NAMED_RX_CTX;
		h->ep_attr->tx_ctx_cnt = (size_t)ft.sep.count;
		h->ep_attr->rx_ctx_cnt = (size_t)ft.sep.count;
	}
	ft.hints = h;
	return 0;
err:
	fi_freeinfo(h);
	return -FI_ENOMEM;
}

/* fi_getinfo for this side; the MSG client aims at the server's address. */
static int ft_getinfo(const void *peer, size_t peer_len, uint32_t format)
{
	const char *node = NULL;
	uint64_t flags = 0;
	int ret;

	if (ft.server) {
		node = ft.opts.src_addr;
		flags = node ? FI_SOURCE : 0;
	} else if (ft.opts.ep_type == FI_EP_MSG) {
		ft.hints->addr_format = format;
		ft.hints->dest_addr = malloc(peer_len);
		if (!ft.hints->dest_addr)
			return -FI_ENOMEM;
		memcpy(ft.hints->dest_addr, peer, peer_len);
		ft.hints->dest_addrlen = peer_len;
	} else {
		node = ft.opts.dst_addr;
	}
	ret = fi_getinfo(FI_VERSION(1, 17), node, NULL, flags, ft.hints,
			 &ft.info);
	if (ret == -FI_ENODATA && node && !ft.server) {
		/* providers without IP addressing (shm) */
		ret = fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, ft.hints,
				 &ft.info);
	}
	return ret;
}

static int ft_open_pep(void **name, size_t *len)
{
	struct fi_eq_attr eq_attr = { .size = 64, .wait_obj = FI_WAIT_UNSPEC };
	int ret;

	ret = fi_eq_open(ft.fabric, &eq_attr, &ft.pep_eq, NULL);
	if (ret) {
		FT_ERR("fi_eq_open", ret);
		return ret;
	}
	ret = fi_passive_ep(ft.fabric, ft.info, &ft.pep, NULL);
	if (ret) {
		FT_ERR("fi_passive_ep", ret);
		return ret;
	}
	ret = fi_pep_bind(ft.pep, &ft.pep_eq->fid, 0);
	if (ret) {
		FT_ERR("fi_pep_bind", ret);
		return ret;
	}
	ret = fi_listen(ft.pep);
	if (ret) {
		FT_ERR("fi_listen", ret);
		return ret;
	}
	*len = 256;
	*name = calloc(1, *len);
	if (!*name)
		return -FI_ENOMEM;
	ret = fi_getname(&ft.pep->fid, *name, len);
	if (ret)
		FT_ERR("fi_getname(pep)", ret);
	return ret;
}

static int ft_open_fabric(void)
{
	int ret;

	ret = fi_fabric(ft.info->fabric_attr, &ft.fabric, NULL);
	if (ret) {
		FT_ERR("fi_fabric", ret);
		return ret;
	}
	ret = fi_domain(ft.fabric, ft.info, &ft.domain, NULL);
	if (ret)
		FT_ERR("fi_domain", ret);
	return ret;
}

/* Sizes beyond the endpoint's max_msg_size are dropped. */
static int ft_fix_sizes(void)
{
	size_t max_msg = ft.info->ep_attr->max_msg_size;
	int i, n = 0;

	ft.max_size = 0;
	for (i = 0; i < ft.opts.nsizes; i++) {
		if (ft.opts.sizes[i] > max_msg)
			continue;
		ft.opts.sizes[n++] = ft.opts.sizes[i];
		if (ft.opts.sizes[i] > ft.max_size)
			ft.max_size = ft.opts.sizes[i];
	}
	ft.opts.nsizes = n;
	if (!n) {
		ft_err("no requested size fits max_msg_size %zu", max_msg);
		return -FI_EMSGSIZE;
	}
	if (ft.opts.comp == FT_COMP_COUNTER)
		ft.inject_size = 0;
	else if (ft.opts.inject >= 0)
		ft.inject_size = (size_t)ft.opts.inject;
	else
		ft.inject_size = ft.info->tx_attr->inject_size;
	if (ft.inject_size > ft.info->tx_attr->inject_size)
		ft.inject_size = ft.info->tx_attr->inject_size;
	return 0;
}

struct ft_hello {
	int32_t status;
	uint32_t format;
	uint32_t name_len;
};

int ft_init(void)
{
	struct ft_hello hello = { 0 }, peer = { 0 };
	void *name = NULL;
	size_t name_len = 0;
	int ret;

	ret = ft_oob_open();
	if (ret)
		return ret;
	ret = ft_alloc_hints();
	if (ret)
		return ret;

	if (ft.server) {
		ret = ft_getinfo(NULL, 0, 0);
		if (!ret)
			ret = ft_open_fabric();
		if (!ret && ft.opts.ep_type == FI_EP_MSG)
			ret = ft_open_pep(&name, &name_len);
		hello.status = ret;
		hello.format = ret ? 0 : ft.info->addr_format;
		hello.name_len = ret ? 0 : (uint32_t)name_len;
		if (ft_oob_send(&hello, sizeof(hello)) ||
		    (hello.name_len && ft_oob_send(name, name_len))) {
			ret = ret ? ret : -FI_EIO;
			goto out;
		}
		if (ret)
			goto out_getinfo;
		ret = ft_oob_recv(&peer, sizeof(peer));
		if (ret)
			goto out;
		ret = peer.status;
		if (ret)
			goto out_peer;
	} else {
		ret = ft_oob_recv(&peer, sizeof(peer));
		if (ret)
			goto out;
		if (peer.name_len) {
			name_len = peer.name_len;
			name = calloc(1, name_len);
			if (!name || ft_oob_recv(name, name_len)) {
				ret = -FI_EIO;
				goto out;
			}
		}
		if (peer.status) {
			ret = peer.status;
			goto out_peer;
		}
		ret = ft_getinfo(name, name_len, peer.format);
		if (!ret)
			ret = ft_open_fabric();
		hello.status = ret;
		if (ft_oob_send(&hello, sizeof(hello))) {
			ret = ret ? ret : -FI_EIO;
			goto out;
		}
		if (ret)
			goto out_getinfo;
	}
	ret = ft_fix_sizes();
	if (!ret)
		ret = ft.sep.count ? ft_sep_setup(&ft.sep) :
				     ft_ep_setup(&ft.ep, 0);
	goto out;

out_getinfo:
	if (ret == -FI_ENODATA)
		fprintf(stderr, "%s: fi_getinfo: %s: provider %s has no %s "
			"endpoint with the capabilities this test needs\n",
			ft.prog->name, fi_strerror(FI_ENODATA),
			ft.opts.prov ? ft.opts.prov : "(any)",
			ft_ep_type_str(ft.opts.ep_type));
	else if (ret)
		FT_ERR("setup", ret);
	goto out;
out_peer:
	if (ret != -FI_ENODATA)
		ft_err("peer failed its setup: %s", fi_strerror(-ret));
out:
	free(name);
	return ret;
}

/* ---- endpoints ---- */

static int ft_wait_cm(struct fid_eq *eq, uint32_t want,
		      struct fi_eq_cm_entry *entry)
{
	struct fi_eq_err_entry err = { 0 };
	uint32_t event;
	ssize_t n;

	n = fi_eq_sread(eq, &event, entry, sizeof(*entry),
			ft.opts.timeout * 1000, 0);
	if (n == -FI_EAVAIL) {
		fi_eq_readerr(eq, &err, 0);
		ft_err("connection event: %s (%s)", fi_strerror(err.err),
		       fi_eq_strerror(eq, err.prov_errno, err.err_data, NULL, 0));
		return -err.err ? -err.err : -FI_EOTHER;
	}
	if (n < 0) {
		FT_ERR("fi_eq_sread", n);
		return (int)n;
	}
	if (event != want) {
		ft_err("fi_eq_sread: got event %u, expected %u", event, want);
		return -FI_EOTHER;
	}
	ft_alive();
	return 0;
}

/* A wait object the provider lacks makes the test "not supported". */
static int ft_wait_obj_error(const char *call, int ret)
{
	if (ft.opts.wait_obj != FI_WAIT_NONE &&
	    (ret == -FI_ENOSYS || ret == -FI_EOPNOTSUPP)) {
		fprintf(stderr, "%s: %s: %s: the provider does not support "
			"the wait object asked for (-t)\n", ft.prog->name,
			call, fi_strerror(-ret));
		return -FI_ENODATA;
	}
	FT_ERR(call, ret);
	return ret;
}

/* The CQs of an endpoint or context pair, and its counters (-c counter). */
static int ft_ep_open_comp(struct ft_ep *e)
{
	struct fi_cq_attr cq_attr = { 0 };
	struct fi_cntr_attr cntr_attr = { .events = FI_CNTR_EVENTS_COMP };
	int ret;

	cq_attr.format = FI_CQ_FORMAT_DATA;
	cq_attr.size = (size_t)e->nslots * 2 + 64;
	cq_attr.wait_obj = ft.opts.wait_obj;
	ret = fi_cq_open(ft.domain, &cq_attr, &e->txcq, NULL);
	if (!ret)
		ret = fi_cq_open(ft.domain, &cq_attr, &e->rxcq, NULL);
	if (ret)
		return ft_wait_obj_error("fi_cq_open", ret);
	if (ft.opts.comp != FT_COMP_COUNTER)
		return 0;
	cntr_attr.wait_obj = ft.opts.wait_obj;
	ret = fi_cntr_open(ft.domain, &cntr_attr, &e->txcntr, NULL);
	if (!ret)
		ret = fi_cntr_open(ft.domain, &cntr_attr, &e->rxcntr, NULL);
	if (ret)
		return ft_wait_obj_error("fi_cntr_open", ret);
	return 0;
}

/* Bind them: the transmit side's to e->ep, the receive side's to e->rx_ep. */
static int ft_ep_bind_comp(struct ft_ep *e)
{
	uint64_t sel = e->txcntr ? FI_SELECTIVE_COMPLETION : 0;
	int ret;

	ret = fi_ep_bind(e->ep, &e->txcq->fid, FI_TRANSMIT | sel);
	if (!ret)
		ret = fi_ep_bind(e->rx_ep, &e->rxcq->fid, FI_RECV | sel);
	if (!ret && e->txcntr)
		ret = fi_ep_bind(e->ep, &e->txcntr->fid,
				 FI_SEND | FI_WRITE | FI_READ);
	if (!ret && e->rxcntr)
		ret = fi_ep_bind(e->rx_ep, &e->rxcntr->fid, FI_RECV);
	if (ret)
		FT_ERR("fi_ep_bind", ret);
	return ret;
}

static int ft_ep_bind(struct ft_ep *e)
{
	struct fi_av_attr av_attr = { .type = FI_AV_UNSPEC, .count = 16 };
	struct fi_eq_attr eq_attr = { .size = 16, .wait_obj = FI_WAIT_UNSPEC };
	int ret;

	ret = ft_ep_open_comp(e);
	if (ret)
		return ret;
	if (ft.opts.ep_type == FI_EP_MSG && !ft.server) {
		ret = fi_eq_open(ft.fabric, &eq_attr, &e->eq, NULL);
		if (ret) {
			FT_ERR("fi_eq_open", ret);
			return ret;
		}
	} else if (ft.opts.ep_type != FI_EP_MSG) {
		ret = fi_av_open(ft.domain, &av_attr, &e->av, NULL);
		if (ret) {
			FT_ERR("fi_av_open", ret);
			return ret;
		}
	}

	ret = fi_endpoint(ft.domain, e->info, &e->ep, NULL);
	if (ret) {
		FT_ERR("fi_endpoint", ret);
		return ret;
	}
	e->rx_ep = e->ep;
	ret = ft_ep_bind_comp(e);
	if (ret)
		return ret;
	if (e->av)
		ret = fi_ep_bind(e->ep, &e->av->fid, 0);
	if (!ret && ft.opts.ep_type == FI_EP_MSG)
		ret = fi_ep_bind(e->ep, ft.server ? &ft.pep_eq->fid :
				 &e->eq->fid, 0);
	if (ret) {
		FT_ERR("fi_ep_bind", ret);
		return ret;
	}
	ret = fi_enable(e->ep);
	if (ret)
		FT_ERR("fi_enable", ret);
	return ret;
}

bool ft_rx_cq_data(void)
{
	return ft.info && ((ft.info->mode & FI_RX_CQ_DATA) ||
			   (ft.info->rx_attr &&
			    (ft.info->rx_attr->mode & FI_RX_CQ_DATA)));
}

int ft_slots(size_t *slot_size)
{
	size_t max_slots;
	int n = ft.opts.window;

	*slot_size = (ft.max_size + 63) & ~(size_t)63;
	if (*slot_size < 256)
		*slot_size = 256;
	max_slots = FT_MAX_BUF / (2 * *slot_size);
	if ((size_t)n > max_slots)
		n = max_slots ? (int)max_slots : 1;
	return n;
}

static int ft_ep_buffers(struct ft_ep *e)
{
	uint64_t mr_mode = ft.info->domain_attr->mr_mode;
	void *p;
	int ret;

	e->nslots = ft_slots(&e->slot_size);
	e->buf_size = 2 * (size_t)e->nslots * e->slot_size;
	ret = posix_memalign(&p, 4096, e->buf_size);
	if (ret)
		return -FI_ENOMEM;
	e->buf = p;
	memset(e->buf, 0, e->buf_size);
	e->tx_ctx = calloc(e->nslots, sizeof(*e->tx_ctx));
	e->rx_ctx = calloc(e->nslots, sizeof(*e->rx_ctx));
	if (!e->tx_ctx || !e->rx_ctx)
		return -FI_ENOMEM;

	/*
	 * Registered even when the provider does not ask for it: a descriptor
	 * lets it skip registering on every operation (large sends over
	 * tcp;ofi_rxm run several times slower without one).
	 */
	if (mr_mode & FI_MR_RAW) {
		fprintf(stderr, "%s: the provider needs raw memory keys "
			"(FI_MR_RAW), which these tests do not handle\n",
			ft.prog->name);
		return -FI_ENODATA;
	}
	ret = fi_mr_reg(ft.domain, e->buf, e->buf_size,
			ft_mr_access(ft.info->caps), 0, 0x100 + e->index, 0,
			&e->mr, NULL);
	if (ret) {
		FT_ERR("fi_mr_reg", ret);
		return ret;
	}
	e->desc = fi_mr_desc(e->mr);
	e->mr_key = fi_mr_key(e->mr);
	return 0;
}

static int ft_ep_connect(struct ft_ep *e)
{
	struct fi_eq_cm_entry entry;
	int ret;

	if (ft.server) {
		ret = fi_accept(e->ep, NULL, 0);
		if (ret) {
			FT_ERR("fi_accept", ret);
			return ret;
		}
		return ft_wait_cm(ft.pep_eq, FI_CONNECTED, &entry);
	}
	ret = fi_connect(e->ep, ft.info->dest_addr, NULL, 0);
	if (ret) {
		FT_ERR("fi_connect", ret);
		return ret;
	}
	return ft_wait_cm(e->eq, FI_CONNECTED, &entry);
}

/* Trade endpoint names over the side channel; the peer's goes into av. */
static int ft_exchange_names(struct fid *fid, struct fid_av *av,
			     fi_addr_t *peer)
{
	char name[256];
	uint32_t len32;
	size_t len = sizeof(name);
	int ret;

	ret = fi_getname(fid, name, &len);
	if (ret) {
		FT_ERR("fi_getname", ret);
		return ret;
	}
	len32 = (uint32_t)len;
	ret = ft_oob_send(&len32, sizeof(len32));
	if (!ret)
		ret = ft_oob_send(name, len);
	if (!ret)
		ret = ft_oob_recv(&len32, sizeof(len32));
	if (ret)
		return ret;
	if (len32 > sizeof(name)) {
		ft_err("peer address of %u bytes is too long", len32);
		return -FI_EINVAL;
	}
	ret = ft_oob_recv(name, len32);
	if (ret)
		return ret;
	ret = fi_av_insert(av, name, 1, peer, 0, NULL);
	if (ret != 1) {
		FT_ERR("fi_av_insert", ret);
		return ret < 0 ? ret : -FI_EINVAL;
	}
	return 0;
}

/*
 * Where the sequence numbers of endpoint `index`, the seeds of its data,
 * start: apart for each, so that data delivered to another thread's
 * endpoint or context pair fails -v (ft_pattern reads the low 8 bits of a
 * seed, on which index * 37 is one-to-one).
 */
static uint64_t ft_seq_start(int index)
{
	return (uint64_t)index * 37;
}

struct ft_rkey {
	uint64_t addr;
	uint64_t key;
};

/* Trade the address and key of the buffers, for RMA and atomics. */
static int ft_exchange_rkey(struct ft_ep *e)
{
	struct ft_rkey mine, theirs;
	int ret;

	mine.addr = (ft.info->domain_attr->mr_mode & FI_MR_VIRT_ADDR) ?
		    (uint64_t)(uintptr_t)e->buf : 0;
	mine.key = e->mr_key;
	ret = ft_oob_send(&mine, sizeof(mine));
	if (!ret)
		ret = ft_oob_recv(&theirs, sizeof(theirs));
	if (ret)
		return ret;
	e->raddr = theirs.addr;
	e->rkey = theirs.key;
	return 0;
}

int ft_ep_setup(struct ft_ep *e, int index)
{
	struct fi_eq_cm_entry entry;
	int ret;

	e->index = index;
	e->tx_seq = ft_seq_start(index);
	e->peer = FI_ADDR_UNSPEC;
	if (ft.opts.ep_type == FI_EP_MSG && ft.server) {
		ret = ft_wait_cm(ft.pep_eq, FI_CONNREQ, &entry);
		if (ret)
			return ret;
		e->info = entry.info;
	} else {
		e->info = fi_dupinfo(ft.info);
		if (!e->info)
			return -FI_ENOMEM;
	}
	e->nslots = 1;
	ret = ft_ep_buffers(e);
	if (ret)
		return ret;
	ret = ft_ep_bind(e);
	if (ret)
		return ret;
	if (ft.opts.ep_type == FI_EP_MSG) {
		ret = ft_ep_connect(e);
		e->peer = 0;
	} else {
		ret = ft_exchange_names(&e->ep->fid, e->av, &e->peer);
	}
	if (!ret)
		ret = ft_exchange_rkey(e);
	if (!ret)
		ret = ft_sync();
	return ret;
}

/* Bits of an fi_addr_t that name one of count receive contexts. */
static int ft_ctx_bits(int count)
{
	int bits = 0;

	while ((1 << bits) < count)
		bits++;
	return bits;
}

static int ft_sep_open(struct ft_sep *s)
{
	struct fi_av_attr av_attr = { .type = FI_AV_UNSPEC, .count = 16 };
	int ret;

	s->rx_ctx_bits = ft_ctx_bits(s->count);
	av_attr.rx_ctx_bits = s->rx_ctx_bits;
	ret = fi_av_open(ft.domain, &av_attr, &s->av, NULL);
	if (ret) {
		FT_ERR("fi_av_open", ret);
		return ret;
	}
	ret = fi_scalable_ep(ft.domain, ft.info, &s->sep, NULL);
	if (ret) {
		FT_ERR("fi_scalable_ep", ret);
		return ret;
	}
	ret = fi_scalable_ep_bind(s->sep, &s->av->fid, 0);
	if (ret) {
		FT_ERR("fi_scalable_ep_bind", ret);
		return ret;
	}
	ret = fi_enable(s->sep);
	if (ret)
		FT_ERR("fi_enable(sep)", ret);
	return ret;
}

/* Context pair i of s as the ft_ep e: its buffers, CQs and contexts. */
static int ft_sep_ctx_open(struct ft_sep *s, int i, struct ft_ep *e)
{
	int ret;

	e->index = i;
	e->tx_seq = ft_seq_start(i);
	e->peer = FI_ADDR_UNSPEC;
	ret = ft_ep_buffers(e);
	if (!ret)
		ret = ft_ep_open_comp(e);
	if (ret)
		return ret;
	ret = fi_tx_context(s->sep, i, NULL, &e->ep, NULL);
	if (ret) {
		FT_ERR("fi_tx_context", ret);
		return ret;
	}
	ret = fi_rx_context(s->sep, i, NULL, &e->rx_ep, NULL);
	if (ret) {
		FT_ERR("fi_rx_context", ret);
		return ret;
	}
	ret = ft_ep_bind_comp(e);
	if (ret)
		return ret;
	ret = fi_enable(e->ep);
	if (!ret)
		ret = fi_enable(e->rx_ep);
	if (ret)
		FT_ERR("fi_enable(context)", ret);
	return ret;
}

int ft_sep_setup(struct ft_sep *s)
{
	fi_addr_t peer;
	int i, ret;

	s->ctx = calloc(s->count, sizeof(*s->ctx));
	if (!s->ctx)
		return -FI_ENOMEM;
	ret = ft_sep_open(s);
	for (i = 0; i < s->count && !ret; i++)
		ret = ft_sep_ctx_open(s, i, &s->ctx[i]);
	if (!ret)
		ret = ft_exchange_names(&s->sep->fid, s->av, &peer);
	for (i = 0; i < s->count && !ret; i++) {
		/* One context needs no bits: its address is the endpoint's
		 * (fi_rx_addr would shift by 64). */
		s->ctx[i].peer = s->rx_ctx_bits ?
			fi_rx_addr(peer, i, s->rx_ctx_bits) : peer;
		ret = ft_exchange_rkey(&s->ctx[i]);
	}
	if (!ret)
		ret = ft_sync();
	return ret;
}

void ft_close_fid(struct fid *fid, const char *what)
{
	int ret;

	if (!fid)
		return;
	ret = fi_close(fid);
	if (ret)
		FT_ERR(what, ret);
}

void ft_ep_close(struct ft_ep *e)
{
	if (e->rx_ep && e->rx_ep != e->ep)
		ft_close_fid(&e->rx_ep->fid, "fi_close(rx context)");
	if (e->ep)
		ft_close_fid(&e->ep->fid, "fi_close(ep)");
	if (e->mr)
		ft_close_fid(&e->mr->fid, "fi_close(mr)");
	if (e->av)
		ft_close_fid(&e->av->fid, "fi_close(av)");
	if (e->txcntr)
		ft_close_fid(&e->txcntr->fid, "fi_close(cntr)");
	if (e->rxcntr)
		ft_close_fid(&e->rxcntr->fid, "fi_close(cntr)");
	if (e->txcq)
		ft_close_fid(&e->txcq->fid, "fi_close(cq)");
	if (e->rxcq)
		ft_close_fid(&e->rxcq->fid, "fi_close(cq)");
	if (e->eq)
		ft_close_fid(&e->eq->fid, "fi_close(eq)");
	if (e->info)
		fi_freeinfo(e->info);
	free(e->buf);
	free(e->tx_ctx);
	free(e->rx_ctx);
	memset(e, 0, sizeof(*e));
}

/* The contexts with their CQs first, then the scalable endpoint, its AV. */
void ft_sep_close(struct ft_sep *s)
{
	int i;

	for (i = 0; s->ctx && i < s->count; i++)
		ft_ep_close(&s->ctx[i]);
	if (s->sep)
		ft_close_fid(&s->sep->fid, "fi_close(sep)");
	if (s->av)
		ft_close_fid(&s->av->fid, "fi_close(av)");
	free(s->ctx);
	s->ctx = NULL;
	s->sep = NULL;
	s->av = NULL;
}

int ft_share_open(struct ft_share *sh, struct ft_ep *base, int count)
{
	struct ft_ep *v;
	int i, ret = 0;

	sh->count = count;
	sh->ep = calloc(count, sizeof(*sh->ep));
	sh->views = calloc(count, sizeof(*sh->views));
	if (!sh->ep || !sh->views)
		return -FI_ENOMEM;
	sh->ep[0] = base;
	base->share = sh;
	for (i = 1; i < count && !ret; i++) {
		v = &sh->views[i];
		v->index = i;
		v->tx_seq = ft_seq_start(i);
		v->ep = base->ep;
		v->rx_ep = base->rx_ep;
		v->peer = base->peer;
		v->share = sh;
		sh->ep[i] = v;
		ret = ft_ep_buffers(v);
	}
	return ret;
}

/* The views' own buffers; the endpoint stays base's. */
void ft_share_close(struct ft_share *sh)
{
	int i;

	for (i = 1; sh->views && i < sh->count; i++) {
		sh->views[i].ep = NULL;
		sh->views[i].rx_ep = NULL;
		ft_ep_close(&sh->views[i]);
	}
	if (sh->ep && sh->ep[0])
		sh->ep[0]->share = NULL;
	free(sh->views);
	free(sh->ep);
	sh->views = NULL;
	sh->ep = NULL;
}

void ft_fini(void)
{
	ft_sep_close(&ft.sep);
	ft_ep_close(&ft.ep);
	if (ft.pep)
		ft_close_fid(&ft.pep->fid, "fi_close(pep)");
	if (ft.pep_eq)
		ft_close_fid(&ft.pep_eq->fid, "fi_close(eq)");
	if (ft.domain)
		ft_close_fid(&ft.domain->fid, "fi_close(domain)");
	if (ft.fabric)
		ft_close_fid(&ft.fabric->fid, "fi_close(fabric)");
	if (ft.info)
		fi_freeinfo(ft.info);
	if (ft.hints)
		fi_freeinfo(ft.hints);
	ft.pep = NULL;
	ft.pep_eq = NULL;
	ft.domain = NULL;
	ft.fabric = NULL;
	ft.info = NULL;
	ft.hints = NULL;
	if (ft.oob >= 0)
		close(ft.oob);
	ft.oob = -1;
}

int ft_exit(int ret)
{
	/* let the peer finish reading before the side channel closes */
	if (ft.oob >= 0 && !ret)
		ft_sync();
	ft_fini();
	if (!ret)
		return 0;
	return ret == -FI_ENODATA ? FT_EXIT_NOTSUPP : 1;
}

/* ---- data ---- */

static inline uint8_t ft_pattern(uint64_t seed, size_t i)
{
	return (uint8_t)(seed * 251 + i + (i >> 8) * 3 + (i >> 16) * 5);
}

void ft_fill(void *buf, size_t len, uint64_t seed)
{
	uint8_t *p = buf;
	size_t i;

	for (i = 0; i < len; i++)
		p[i] = ft_pattern(seed, i);
}

int ft_check(const void *buf, size_t len, uint64_t seed, const char *what)
{
	const uint8_t *p = buf;
	size_t i;

	for (i = 0; i < len; i++) {
		if (p[i] != ft_pattern(seed, i)) {
			ft_err("verify failed: %s: byte %zu of %zu is 0x%02x, "
			       "expected 0x%02x", what, i, len, p[i],
			       ft_pattern(seed, i));
			return -FI_EIO;
		}
	}
	return 0;
}

/* ---- completions ---- */

static int ft_cq_error(struct fid_cq *cq, const char *which)
{
	struct fi_cq_err_entry err = { 0 };
	char buf[256];

	if (fi_cq_readerr(cq, &err, 0) < 0) {
		ft_err("fi_cq_readerr failed on the %s CQ", which);
		return -FI_EOTHER;
	}
	ft_err("%s completion error: %s (%d), provider: %s", which,
	       fi_strerror(err.err), err.err,
	       fi_cq_strerror(cq, err.prov_errno, err.err_data, buf,
			      sizeof(buf)));
	return err.err ? -err.err : -FI_EOTHER;
}

/* Up to FT_CQ_BATCH completions of cq into ent, *n of them (0: none yet);
 * waits up to timeout ms for the first (0: no wait). */
#define FT_CQ_BATCH 16
static int ft_cq_batch(struct fid_cq *cq, bool rx, int timeout,
		       struct fi_cq_data_entry *ent, ssize_t *n)
{
	if (timeout)
		*n = fi_cq_sread(cq, ent, FT_CQ_BATCH, NULL, timeout);
	else
		*n = fi_cq_read(cq, ent, FT_CQ_BATCH);
	if (*n >= 0)
		return 0;
	if (*n == -FI_EAGAIN || *n == -FI_ETIMEDOUT) {
		*n = 0;
		return 0;
	}
	if (*n == -FI_EAVAIL)
		return ft_cq_error(cq, rx ? "receive" : "transmit");
	FT_ERR(timeout ? "fi_cq_sread" : "fi_cq_read", *n);
	return (int)*n;
}

static int ft_read_cq(struct ft_ep *e, struct fid_cq *cq, bool rx, int timeout,
		      uint64_t *count)
{
	struct fi_cq_data_entry ent[FT_CQ_BATCH];
	ssize_t n, i;
	int ret;

	ret = ft_cq_batch(cq, rx, timeout, ent, &n);
	if (ret)
		return ret;
	for (i = 0; i < n; i++) {
		if (ent[i].flags & FI_REMOTE_CQ_DATA)
			e->last_cq_data = ent[i].data;
	}
	*count += n;
	return 0;
}

/* The member of a shared endpoint whose transmit (or receive) contexts
 * hold ctx, or NULL. */
static struct ft_ep *ft_share_owner(struct ft_share *sh, void *ctx, bool rx)
{
	struct fi_context2 *c = ctx, *first;
	int i;

	for (i = 0; i < sh->count; i++) {
		first = rx ? sh->ep[i]->rx_ctx : sh->ep[i]->tx_ctx;
		if (c >= first && c < first + sh->ep[i]->nslots)
			return sh->ep[i];
	}
	return NULL;
}

/* Read the shared CQ once, handing each completion to its member. */
static int ft_share_read_cq(struct ft_share *sh, struct fid_cq *cq, bool rx)
{
	struct fi_cq_data_entry ent[FT_CQ_BATCH];
	struct ft_ep *owner;
	ssize_t n, i;
	int ret;

	ret = ft_cq_batch(cq, rx, 0, ent, &n);
	for (i = 0; i < n && !ret; i++) {
		owner = ft_share_owner(sh, ent[i].op_context, rx);
		if (!owner) {
			ft_err("a completion of no thread's operation");
			return -FI_EOTHER;
		}
		atomic_fetch_add_explicit(rx ? &owner->rx_handed :
					       &owner->tx_handed,
					  1, memory_order_release);
	}
	return ret;
}

/* Progress of a member of a shared endpoint: whatever it reads goes to
 * its owner; it takes what the others handed it. */
static int ft_share_progress(struct ft_ep *e)
{
	struct ft_share *sh = e->share;
	int ret;

	ret = ft_share_read_cq(sh, sh->ep[0]->txcq, false);
	if (!ret)
		ret = ft_share_read_cq(sh, sh->ep[0]->rxcq, true);
	e->tx_done = atomic_load_explicit(&e->tx_handed, memory_order_acquire);
	e->rx_done = atomic_load_explicit(&e->rx_handed, memory_order_acquire);
	return ret;
}

static int ft_read_cntr(struct fid_cntr *cntr, uint64_t *val, const char *which)
{
	uint64_t errs = fi_cntr_readerr(cntr);

	if (errs) {
		ft_err("%s counter reports %llu failed operations", which,
		       (unsigned long long)errs);
		return -FI_EIO;
	}
	*val = fi_cntr_read(cntr);
	return 0;
}

static int ft_progress_wait(struct ft_ep *e, bool want_rx)
{
	uint64_t tx, rx;
	int ret, ms = ft.opts.wait_obj == FI_WAIT_NONE ? 0 : 100;

	if (e->share)
		return ft_share_progress(e);
	if (ft.opts.comp == FT_COMP_QUEUE) {
		/* Waiting for a receive with no transmit outstanding, the
		 * transmit CQ can only bring an error (of an injected send):
		 * look at it now and then, not on every turn of the loop,
		 * where reading it doubles the cost of each turn. */
		ret = 0;
		if (!want_rx || e->tx_done < e->tx_posted ||
		    !(++e->tx_idle_reads & 15))
			ret = ft_read_cq(e, e->txcq, false, want_rx ? 0 : ms,
					 &e->tx_done);
		if (!ret)
			ret = ft_read_cq(e, e->rxcq, true, want_rx ? ms : 0,
					 &e->rx_done);
		return ret;
	}
	/* counters; the CQs still carry errors and remote CQ data */
	ret = ft_read_cq(e, e->txcq, false, 0, &e->tx_cq_seen);
	if (!ret)
		ret = ft_read_cq(e, e->rxcq, true, 0, &e->rx_cq_seen);
	if (!ret && ms)
		fi_cntr_wait(want_rx ? e->rxcntr : e->txcntr,
			     want_rx ? e->rx_posted : e->tx_posted, ms);
	if (!ret)
		ret = ft_read_cntr(e->txcntr, &tx, "transmit");
	if (!ret)
		ret = ft_read_cntr(e->rxcntr, &rx, "receive");
	if (ret)
		return ret;
	e->tx_done = e->tx_cq_seen + tx;
	e->rx_done = e->rx_cq_seen + rx;
	return 0;
}

int ft_progress(struct ft_ep *e)
{
	return ft_progress_wait(e, false);
}

int ft_wait(struct ft_ep *e, uint64_t tx, uint64_t rx)
{
	uint64_t seen = e->tx_done + e->rx_done;
	double last = 0;
	unsigned spin = 0;
	int ret;

	while (e->tx_done < tx || e->rx_done < rx) {
		ret = ft_progress_wait(e, e->rx_done < rx);
		if (ret)
			return ret;
		if (e->tx_done + e->rx_done != seen) {
			seen = e->tx_done + e->rx_done;
			last = 0;
			ft_alive();
			continue;
		}
		if ((++spin & 255) && ft.opts.wait_obj == FI_WAIT_NONE)
			continue;
		if (ft_stalled(&last)) {
			ft_err("no progress for %d s: transmit %llu of %llu, "
			       "receive %llu of %llu completions",
			       ft.opts.timeout,
			       (unsigned long long)e->tx_done,
			       (unsigned long long)tx,
			       (unsigned long long)e->rx_done,
			       (unsigned long long)rx);
			return -FI_ETIMEDOUT;
		}
	}
	return 0;
}

/* ---- posting ---- */

/* The tag of endpoint e's tagged transfers: its own on a shared one. */
static uint64_t ft_tag(const struct ft_ep *e)
{
	return FT_TAG + (uint64_t)e->index;
}

/* Retry an operation that returned -FI_EAGAIN, driving progress. */
static int ft_retry(struct ft_ep *e, ssize_t ret, double *start,
		    const char *call)
{
	if (ret != -FI_EAGAIN) {
		FT_ERR(call, ret);
		return (int)ret;
	}
	ret = ft_progress(e);
	if (ret)
		return (int)ret;
	if (ft_stalled(start)) {
		ft_err("%s: -FI_EAGAIN for %d s", call, ft.opts.timeout);
		return -FI_ETIMEDOUT;
	}
	return 0;
}

int ft_post_recv(struct ft_ep *e, int slot, size_t len, bool tagged)
{
	void *ctx = &e->rx_ctx[slot % e->nslots];
	char *buf = ft_rx_slot(e, slot);
	double start = 0;
	ssize_t ret;

	for (;;) {
		if (tagged)
			ret = fi_trecv(e->rx_ep, buf, len, e->desc,
				       FI_ADDR_UNSPEC, ft_tag(e), 0, ctx);
		else
			ret = fi_recv(e->rx_ep, buf, len, e->desc,
				      FI_ADDR_UNSPEC, ctx);
		if (!ret)
			break;
		ret = ft_retry(e, ret, &start, tagged ? "fi_trecv" : "fi_recv");
		if (ret)
			return (int)ret;
	}
	e->rx_posted++;
	return 0;
}

int ft_post_send(struct ft_ep *e, int slot, size_t len, bool tagged)
{
	void *ctx = &e->tx_ctx[slot % e->nslots];
	char *buf = ft_tx_slot(e, slot);
	bool inject = len <= ft.inject_size;
	const char *call;
	double start = 0;
	ssize_t ret;

	for (;;) {
		if (tagged && inject) {
			call = "fi_tinject";
			ret = fi_tinject(e->ep, buf, len, e->peer, ft_tag(e));
		} else if (tagged) {
			call = "fi_tsend";
			ret = fi_tsend(e->ep, buf, len, e->desc, e->peer,
				       ft_tag(e), ctx);
		} else if (inject) {
			call = "fi_inject";
			ret = fi_inject(e->ep, buf, len, e->peer);
		} else {
			call = "fi_send";
			ret = fi_send(e->ep, buf, len, e->desc, e->peer, ctx);
		}
		if (!ret)
			break;
		ret = ft_retry(e, ret, &start, call);
		if (ret)
			return (int)ret;
	}
	if (!inject)
		e->tx_posted++;
	return 0;
}

static ssize_t ft_writemsg_dc(struct ft_ep *e, int slot, size_t len,
			      uint64_t raddr, void *ctx)
{
	struct iovec iov = { .iov_base = ft_tx_slot(e, slot), .iov_len = len };
	struct fi_rma_iov rma = { .addr = raddr, .len = len, .key = e->rkey };
	struct fi_msg_rma msg = {
		.msg_iov = &iov, .desc = &e->desc, .iov_count = 1,
		.addr = e->peer, .rma_iov = &rma, .rma_iov_count = 1,
		.context = ctx,
	};

	return fi_writemsg(e->ep, &msg, FI_DELIVERY_COMPLETE |
			   (ft.opts.comp == FT_COMP_QUEUE ? FI_COMPLETION : 0));
}

int ft_post_rma(struct ft_ep *e, int op, int slot, size_t len, uint64_t data)
{
	void *ctx = &e->tx_ctx[slot % e->nslots];
	uint64_t raddr = ft_rx_slot_raddr(e, slot);
	bool inject = false;
	const char *call;
	double start = 0;
	ssize_t ret;

	for (;;) {
		switch (op) {
		case FT_XFER_WRITE:
			if (ft.opts.delivery) {
				/* explicit: not every provider applies
				 * tx_attr->op_flags to fi_write */
				call = "fi_writemsg";
				ret = ft_writemsg_dc(e, slot, len, raddr, ctx);
				break;
			}
			call = "fi_write";
			ret = fi_write(e->ep, ft_tx_slot(e, slot), len, e->desc,
				       e->peer, raddr, e->rkey, ctx);
			break;
		case FT_XFER_WRITEDATA:
			inject = len <= ft.inject_size;
			if (inject) {
				call = "fi_inject_writedata";
				ret = fi_inject_writedata(e->ep,
							  ft_tx_slot(e, slot),
							  len, data, e->peer,
							  raddr, e->rkey);
			} else {
				call = "fi_writedata";
				ret = fi_writedata(e->ep, ft_tx_slot(e, slot),
						   len, e->desc, data, e->peer,
						   raddr, e->rkey, ctx);
			}
			break;
		default:
			call = "fi_read";
			ret = fi_read(e->ep, ft_rx_slot(e, slot), len, e->desc,
				      e->peer, raddr, e->rkey, ctx);
			break;
		}
		if (!ret)
			break;
		ret = ft_retry(e, ret, &start, call);
		if (ret)
			return (int)ret;
	}
	if (!inject)
		e->tx_posted++;
	return 0;
}

/* ---- results ---- */

static const char *ft_num_str(char *buf, size_t len, double v, double base)
{
	static const char suffix[] = " kmgt";
	int i = 0;

	while (v >= base && i < 4) {
		v /= base;
		i++;
	}
	if (!i)
		snprintf(buf, len, "%.0f", v);
	else
		snprintf(buf, len, "%.4g%c", v, suffix[i]);
	return buf;
}

static bool ft_named;

void ft_report_header(const char *first)
{
	ft_named = first != NULL;
	if (ft.opts.machine)
		return;
	if (first)
		printf("%-24s ", first);
	printf("%-10s %-8s %-8s %9s %10s %11s %11s\n", "bytes", "iters",
	       "total", "time", "MB/sec", "usec/xfer", "Mxfers/sec");
	fflush(stdout);
}

void ft_report(const char *name, size_t size, uint64_t iters, double secs,
	       int xfers_per_iter)
{
	double xfers = (double)iters * xfers_per_iter;
	double total = xfers * size;
	double mbps = secs > 0 ? total / secs / 1e6 : 0;
	double usec = xfers > 0 ? secs * 1e6 / xfers : 0;
	double rate = secs > 0 ? xfers / secs / 1e6 : 0;
	char b1[32], b2[32], b3[32];

	ft_alive();
	if (ft.opts.machine) {
		printf("test=%s%s%s prov=%s ep=%s bytes=%zu iters=%llu "
		       "total_bytes=%.0f time_s=%.6f mb_per_s=%.2f "
		       "usec_per_xfer=%.3f mxfers_per_s=%.4f\n",
		       ft.prog->name, name ? ":" : "", name ? name : "",
		       ft.info ? ft.info->fabric_attr->prov_name :
		       ft.label ? ft.label : "none",
		       ft_ep_type_str(ft.opts.ep_type), size,
		       (unsigned long long)iters, total, secs, mbps, usec, rate);
		fflush(stdout);
		return;
	}
	if (ft_named)
		printf("%-24s ", name ? name : "");
	printf("%-10s %-8s %-8s %8.3fs %10.2f %11.2f %11.4f\n",
	       ft_num_str(b1, sizeof(b1), (double)size, 1024),
	       ft_num_str(b2, sizeof(b2), (double)iters, 1000),
	       ft_num_str(b3, sizeof(b3), total, 1024), secs, mbps, usec, rate);
	fflush(stdout);
}

int ft_run_sizes(int (*fn)(size_t size, int iters, double *secs),
		 int xfers_per_iter)
{
	double secs;
	int i, n, ret;

	ft_report_header(NULL);
	for (i = 0; i < ft.opts.nsizes; i++) {
		n = ft_iters_for(ft.opts.sizes[i]);
		ret = fn(ft.opts.sizes[i], n, &secs);
		if (ret)
			return ret;
		ft_report(NULL, ft.opts.sizes[i], n, secs, xfers_per_iter);
	}
	return 0;
}
