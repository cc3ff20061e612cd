/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A client run under FI_HOOK by tests/hook/hooks.sh.  It imports a log
 * sink (fi_import_log) that prints every message the library logs on
 * stdout as "SINK <provider> <level> <message>", then, over the provider
 * named on its command line, with two RDM endpoints of one domain:
 *
 *   hook_client PROV xfer N    N tagged messages of 64 bytes from A to B,
 *                              each checked byte by byte; B reads them with
 *                              fi_cq_readfrom and checks the sender's
 *                              fi_addr_t and its own contexts; A's sends
 *                              complete with A's contexts.  Prints
 *                              "xfer ok N".
 *   hook_client PROV overlap   B posts two receives whose buffers overlap
 *                              and closes with both still posted (what the
 *                              debug hook reports); prints "overlap done".
 *   hook_client PROV overrun   B, on a CQ of 4 entries, posts 6 receives
 *                              of separate buffers, then closes with them
 *                              posted; prints "overrun done".
 *   hook_client PROV stx       a shared transmit context opened, the
 *                              domain closed before it (the provider
 *                              allows it); prints "stx done".
 *
 * Exit status: 0 when every check held, 1 otherwise (the reason on
 * stderr), 77 when the provider offers no matching fi_info.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_ext.h>
#include <rdma/fi_tagged.h>
#include <rdma/providers/fi_log.h>

#define MSG_LEN 64

static const char *const level_names[] = { "warn", "trace", "info",
					   "debug" };

static int sink_enabled(const struct fi_provider *prov,
			enum fi_log_level level, enum fi_log_subsys subsys,
			uint64_t flags)
{
	return level <= FI_LOG_TRACE;
}

static int sink_ready(const struct fi_provider *prov, enum fi_log_level level,
		      enum fi_log_subsys subsys, uint64_t flags,
		      uint64_t *showtime)
{
	return level <= FI_LOG_TRACE;
}

static void sink_log(const struct fi_provider *prov, enum fi_log_level level,
		     enum fi_log_subsys subsys, const char *func, int line,
		     const char *msg)
{
	size_t len = strlen(msg);

	printf("SINK %s %s %.*s\n", prov && prov->name ? prov->name : "?",
	       (unsigned)level < 4 ? level_names[level] : "?",
	       (int)(len && msg[len - 1] == '\n' ? len - 1 : len), msg);
}

static struct fi_ops_log sink_ops = {
	.size = sizeof(struct fi_ops_log),
	.enabled = sink_enabled,
	.ready = sink_ready,
	.log = sink_log,
};

static struct fid_logging sink = { .ops = &sink_ops };

#define CHECK(cond, ...)                                                       \
	do {                                                                   \
		if (!(cond)) {                                                 \
			fprintf(stderr, "hook_client: " __VA_ARGS__);          \
			fputc('\n', stderr);                                   \
			exit(1);                                               \
		}                                                              \
	} while (0)
#define OK(call)                                                               \
	do {                                                                   \
		int ret_ = (int)(call);                                        \
		CHECK(!ret_, "%s: %d (%s)", #call, ret_, fi_strerror(-ret_));  \
	} while (0)

struct side {
	struct fid_ep *ep;
	struct fid_cq *cq;
	fi_addr_t addr; /* in the shared AV */
};

static struct fi_info *info;
static struct fid_fabric *fabric;
static struct fid_domain *domain;
static struct fid_av *av;
static struct fid_mr *mr;
static char buf[2][1 << 16];

static bool is_loopback(const struct fi_info *fi)
{
	const struct sockaddr *sa = fi->src_addr;

	if (!sa || (fi->addr_format != FI_SOCKADDR_IN &&
		    fi->addr_format != FI_SOCKADDR))
		return false;
	return sa->sa_family == AF_INET &&
	       ((const struct sockaddr_in *)sa)->sin_addr.s_addr ==
		       htonl(INADDR_LOOPBACK);
}

static size_t cq_size = 64;

static void open_side(struct side *s)
{
	struct fi_cq_attr cq_attr = { .format = FI_CQ_FORMAT_TAGGED,
				      .size = cq_size };
	char name[256];
	size_t len = sizeof(name);

	OK(fi_endpoint(domain, info, &s->ep, s));
	CHECK(s->ep->fid.context == s, "endpoint context %p, not %p",
	      s->ep->fid.context, (void *)s);
	OK(fi_cq_open(domain, &cq_attr, &s->cq, s));
	OK(fi_ep_bind(s->ep, &s->cq->fid, FI_TRANSMIT | FI_RECV));
	OK(fi_ep_bind(s->ep, &av->fid, 0));
	OK(fi_enable(s->ep));
	OK(fi_getname(&s->ep->fid, name, &len));
	CHECK(fi_av_insert(av, name, 1, &s->addr, 0, NULL) == 1,
	      "fi_av_insert");
}

static void close_side(struct side *s)
{
	OK(fi_close(&s->ep->fid));
	OK(fi_close(&s->cq->fid));
}

/* One completion of `s`, waiting up to 10 s. */
static void wait_comp(struct side *s, struct fi_cq_tagged_entry *e,
		      fi_addr_t *src)
{
	time_t end = time(NULL) + 10;
	ssize_t n;

	do {
		n = src ? fi_cq_readfrom(s->cq, e, 1, src) :
			  fi_cq_read(s->cq, e, 1);
		if (n == 1)
			return;
		CHECK(n == -FI_EAGAIN, "fi_cq_read: %zd", n);
	} while (time(NULL) < end);
	CHECK(0, "no completion in 10 s");
}

static int xfer(int iters)
{
	struct side a, b;
	struct fi_context2 sctx, rctx;
	struct fi_cq_tagged_entry e;
	fi_addr_t src;
	int i, j;
	void *desc = fi_mr_desc(mr);

	open_side(&a);
	open_side(&b);
	for (i = 0; i < iters; i++) {
		for (j = 0; j < MSG_LEN; j++)
			buf[0][j] = (char)(i * 7 + j);
		memset(buf[1], 0, MSG_LEN);
		OK(fi_trecv(b.ep, buf[1], MSG_LEN, desc, FI_ADDR_UNSPEC, 0x77,
			    0, &rctx));
		while (fi_tsend(a.ep, buf[0], MSG_LEN, desc, b.addr, 0x77,
				&sctx) == -FI_EAGAIN)
			(void)fi_cq_read(a.cq, &e, 0);
		wait_comp(&b, &e, &src);
		CHECK(e.op_context == &rctx, "receive context %p, not %p",
		      e.op_context, (void *)&rctx);
		CHECK(src == a.addr, "fi_cq_readfrom: sender %llu, not %llu",
		      (unsigned long long)src, (unsigned long long)a.addr);
		CHECK(e.len == MSG_LEN && e.tag == 0x77,
		      "completion len %zu tag %llx", e.len,
		      (unsigned long long)e.tag);
		CHECK(!memcmp(buf[0], buf[1], MSG_LEN),
		      "message %d arrived changed", i);
		wait_comp(&a, &e, NULL);
		CHECK(e.op_context == &sctx, "send context %p, not %p",
		      e.op_context, (void *)&sctx);
	}
	close_side(&a);
	close_side(&b);
	printf("xfer ok %d\n", iters);
	return 0;
}

static int overlap(void)
{
	struct side b;
	struct fi_context2 c1, c2;
	void *desc = fi_mr_desc(mr);

	open_side(&b);
	OK(fi_trecv(b.ep, buf[1], 4096, desc, FI_ADDR_UNSPEC, 1, 0, &c1));
	OK(fi_trecv(b.ep, buf[1] + 1024, 4096, desc, FI_ADDR_UNSPEC, 2, 0,
		    &c2));
	close_side(&b);
	printf("overlap done\n");
	return 0;
}

static int overrun(void)
{
	struct side b;
	struct fi_context2 c[6];
	void *desc = fi_mr_desc(mr);
	int i;

	cq_size = 4;
	open_side(&b);
	for (i = 0; i < 6; i++)
		OK(fi_trecv(b.ep, buf[1] + i * 1024, 1024, desc,
			    FI_ADDR_UNSPEC, 1, 0, &c[i]));
	close_side(&b);
	printf("overrun done\n");
	return 0;
}

/* Closes the domain itself; returns with it gone. */
static int stx_first(void)
{
	struct fid_stx *stx;
	int ret;

	OK(fi_close(&mr->fid));
	OK(fi_close(&av->fid));
	ret = fi_stx_context(domain, NULL, &stx, NULL);
	if (ret) {
		printf("SKIP: fi_stx_context %d\n", ret);
		exit(77);
	}
	ret = fi_close(&domain->fid);
	if (ret == -FI_EBUSY) {
		/* refused: nothing for the hook to report */
		OK(fi_close(&stx->fid));
		OK(fi_close(&domain->fid));
		printf("stx refused\n");
		return 0;
	}
	CHECK(!ret, "fi_close(domain): %d", ret);
	OK(fi_close(&stx->fid));
	printf("stx done\n");
	return 0;
}

int main(int argc, char **argv)
{
	struct fi_info *hints, *list = NULL, *fi;
	struct fi_av_attr av_attr = { .type = FI_AV_TABLE };
	int ret;

	if (argc < 3) {
		fprintf(stderr, "usage: %s PROV xfer N | PROV overlap\n",
			argv[0]);
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	OK(fi_import_log(FI_VERSION(1, 17), 0, &sink));

	hints = fi_allocinfo();
	CHECK(hints, "fi_allocinfo");
	hints->fabric_attr->prov_name = strdup(argv[1]);
	hints->ep_attr->type = FI_EP_RDM;
	hints->caps = FI_TAGGED | FI_SOURCE;
	hints->mode = FI_CONTEXT | FI_CONTEXT2;
	hints->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR |
				      FI_MR_ALLOCATED | FI_MR_PROV_KEY;
	ret = fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints, &list);
	fi_freeinfo(hints);
	if (ret) {
		printf("SKIP: fi_getinfo %d\n", ret);
		return 77;
	}
	for (fi = list; fi && !is_loopback(fi); fi = fi->next)
		;
	info = fi_dupinfo(fi ? fi : list);
	fi_freeinfo(list);

	OK(fi_fabric(info->fabric_attr, &fabric, NULL));
	OK(fi_domain(fabric, info, &domain, NULL));
	OK(fi_av_open(domain, &av_attr, &av, NULL));
	OK(fi_mr_reg(domain, buf, sizeof(buf), FI_SEND | FI_RECV, 0, 0, 0, &mr,
		     NULL));
	if (!strcmp(argv[2], "stx")) {
		ret = stx_first();
		goto fabric;
	}
	if (!strcmp(argv[2], "xfer"))
		ret = xfer(argc > 3 ? atoi(argv[3]) : 10);
	else if (!strcmp(argv[2], "overrun"))
		ret = overrun();
	else
		ret = overlap();
	OK(fi_close(&mr->fid));
	OK(fi_close(&av->fid));
	OK(fi_close(&domain->fid));
fabric:
	OK(fi_close(&fabric->fid));
	fi_freeinfo(info);
	fi_close(&sink.fid);
	return ret;
}
