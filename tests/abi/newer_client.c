/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A program built against newer OFI headers than weft's (1.17), as its
 * binary looks to libfabric.so.1.  One source, built three times:
 *
 *   ABI_NODE  headers  binds fi_getinfo/dupinfo/freeinfo at  asks for API
 *   17        1.20     FABRIC_1.7                             1.20
 *   18        2.0      FABRIC_1.8, and fi_fabric2@FABRIC_1.8  2.0
 *   19        2.6      FABRIC_1.9, and fi_fabric2@FABRIC_1.8  2.6
 *
 * The structs that grew after 1.17 (fi_domain_attr, fi_mr_attr,
 * fi_cq_err_entry) are written out below as those headers lay them out:
 * the system's 1.17 struct, then what the newer releases appended.  The
 * other structs come from the system headers; the newer releases share
 * them.  No fi_info is made but by the bound entry points (no fi_allocinfo,
 * which would bind the default fi_dupinfo).
 *
 *   newer_client_<node> shm|tcp    tcp on 127.0.0.1 (newer-clients.sh sets
 *                                  FI_TCP_SHM=0: sockets, not shm)
 *
 * One line per check, "ok ..." or "not ok ..."; exit 0 when all pass, 1
 * otherwise, 77 when the provider has no RDM endpoint here.  The traffic
 * runs between the process and a forked child; alarm() bounds both.
 */
#include <assert.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <sys/socket.h>
#include <sys/wait.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>

#if ABI_NODE == 17
#define NODE "FABRIC_1.7"
#define API FI_VERSION(1, 20)
#elif ABI_NODE == 18
#define NODE "FABRIC_1.8"
#define API FI_VERSION(2, 0)
#elif ABI_NODE == 19
#define NODE "FABRIC_1.9"
#define API FI_VERSION(2, 6)
#else
#error "build with -DABI_NODE=17, 18 or 19"
#endif

/* The entry points as a program linked against those headers binds them. */
extern int abi_getinfo(uint32_t version, const char *node,
		       const char *service, uint64_t flags,
		       const struct fi_info *hints, struct fi_info **info);
extern struct fi_info *abi_dupinfo(const struct fi_info *info);
extern void abi_freeinfo(struct fi_info *info);
__asm__(".symver abi_getinfo, fi_getinfo@" NODE);
__asm__(".symver abi_dupinfo, fi_dupinfo@" NODE);
__asm__(".symver abi_freeinfo, fi_freeinfo@" NODE);
#if ABI_NODE >= 18
extern int abi_fabric2(struct fi_info *info, struct fid_fabric **fabric,
		       uint64_t flags, void *context);
__asm__(".symver abi_fabric2, fi_fabric2@FABRIC_1.8");
#endif

/* fi_domain_attr past tclass, as the node lays it out. */
struct tail {
	size_t max_ep_auth_key; /* 1.20, at 192 */
#if ABI_NODE >= 18
	uint32_t max_group_id; /* 2.0, at 200 */
#endif
#if ABI_NODE >= 19
	uint64_t max_cntr_value;     /* 2.5, at 208 */
	uint64_t max_err_cntr_value; /* 2.5, at 216 */
#endif
};

/*
 * The part every node shares is laid out as bytes, reached through the
 * system headers' struct: those may be 1.17's or newer, and the node's
 * layout must not follow them.
 */
struct client_domain_attr {
	unsigned char head[192]; /* 1.9 to 1.19: ends with tclass at 184 */
	struct tail t;
};
#define DOM_HEAD(c) ((struct fi_domain_attr *)(void *)(c)->head)

/* fi_mr_attr: 1.17's (80 bytes), then what 1.19 to 2.0 appended. */
struct client_mr_attr {
	unsigned char head[80]; /* 1.9 to 1.18: ends with device at 72 */
	void *hmem_data;	/* 1.19, at 80 */
#if ABI_NODE >= 18
	size_t page_size;	      /* 1.22, at 88 */
	const struct fid_mr *base_mr; /* 2.0, at 96 */
	size_t sub_mr_cnt;	      /* 2.0, at 104 */
#endif
};

/* fi_cq_err_entry from 1.20 on: 1.5's (80 bytes), then src_addr. */
struct client_cq_err_entry {
	unsigned char head[80]; /* 1.5 to 1.19: ends with err_data_size */
	fi_addr_t src_addr;	/* at 80 */
};
#define MR_HEAD(c) ((struct fi_mr_attr *)(void *)(c)->head)
#define ERR_HEAD(c) ((struct fi_cq_err_entry *)(void *)(c)->head)

#if UINTPTR_MAX == UINT64_MAX
static_assert(offsetof(struct fi_domain_attr, tclass) + sizeof(uint32_t) <=
		      192,
	      "the shared domain_attr");
static_assert(sizeof(struct client_domain_attr) ==
		      (ABI_NODE == 17 ? 200 : ABI_NODE == 18 ? 208 : 224),
	      "domain_attr of the node");
static_assert(offsetof(struct fi_mr_attr, device) + 8 == 80,
	      "the shared mr_attr");
static_assert(offsetof(struct fi_cq_err_entry, err_data_size) + 8 == 80,
	      "the shared cq_err_entry");
static_assert(sizeof(struct client_mr_attr) == (ABI_NODE == 17 ? 88 : 112),
	      "mr_attr of the node");
static_assert(offsetof(struct client_cq_err_entry, src_addr) == 80 &&
		      sizeof(struct client_cq_err_entry) == 88,
	      "cq_err_entry 1.20");
#endif

#define TAIL(info) (&((struct client_domain_attr *)(info)->domain_attr)->t)

/* What weft answers: no authorization keys, no groups, 64-bit counters. */
static const struct tail weft_tail = {
#if ABI_NODE >= 19
	.max_cntr_value = UINT64_MAX,
	.max_err_cntr_value = UINT64_MAX,
#endif
};

static bool tail_eq(const struct tail *a, const struct tail *b)
{
	return a->max_ep_auth_key == b->max_ep_auth_key
#if ABI_NODE >= 18
	       && a->max_group_id == b->max_group_id
#endif
#if ABI_NODE >= 19
	       && a->max_cntr_value == b->max_cntr_value &&
	       a->max_err_cntr_value == b->max_err_cntr_value
#endif
		;
}

#define NMSG 300
#define MAXMSG 65536
#define RMA_LEN 4096
#define SMALL 16 /* the receive a 64-byte message overflows */
#define CANARY 0x5ca1ab1e0ddba11ULL

static const char *prov;
static const char *who = "parent";
static int failures;

static void report(bool ok, const char *fmt, ...)
{
	va_list ap;

	printf("%s api %u.%u @%s %s %s: ", ok ? "ok" : "not ok",
	       FI_MAJOR(API), FI_MINOR(API), NODE, prov, who);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	failures += !ok;
}

/* A step that must succeed: without it nothing further can run. */
#define MUST(call)                                                             \
	do {                                                                   \
		int ret_ = (int)(call);                                        \
		if (ret_) {                                                    \
			report(false, "%s: %d (%s)", #call, ret_,              \
			       fi_strerror(ret_ < 0 ? -ret_ : ret_));          \
			exit(1);                                               \
		}                                                              \
	} while (0)

/* What fabtests' rdm pingpong asks for, in the bound fi_dupinfo(NULL). */
static struct fi_info *make_hints(void)
{
	struct fi_info *hints = abi_dupinfo(NULL);

	if (!hints || !hints->domain_attr || !hints->fabric_attr) {
		report(false, "fi_dupinfo(NULL) gave no attributes");
		exit(1);
	}
	hints->ep_attr->type = FI_EP_RDM;
	hints->caps = FI_MSG | FI_TAGGED | FI_RMA;
	hints->mode = FI_CONTEXT | FI_CONTEXT2;
	hints->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR |
				      FI_MR_ALLOCATED | FI_MR_PROV_KEY;
	hints->addr_format = strcmp(prov, "tcp") ? FI_FORMAT_UNSPEC :
						   FI_SOCKADDR_IN;
	hints->fabric_attr->prov_name = strdup(prov);
	return hints;
}

static int get_info(const struct fi_info *hints, struct fi_info **info)
{
	if (!strcmp(prov, "tcp"))
		return abi_getinfo(API, "127.0.0.1", NULL, FI_SOURCE, hints,
				   info);
	return abi_getinfo(API, NULL, NULL, 0, hints, info);
}

/* ---- fi_getinfo, fi_dupinfo, fi_fabric2 with the newer layouts -------- */

/* Every entry says the version asked for, and weft's values in the tail. */
static void check_getinfo(void)
{
	struct fi_info *hints = make_hints(), *info = NULL, *i;
	bool version_ok = true, tail_ok = true;
	int ret, n = 0;

	ret = get_info(hints, &info);
	abi_freeinfo(hints);
	if (ret == -FI_ENODATA) {
		printf("SKIP: no %s RDM endpoint here\n", prov);
		exit(77);
	}
	report(!ret, "fi_getinfo(%u.%u) of %s RDM: %d", FI_MAJOR(API),
	       FI_MINOR(API), prov, ret);
	if (ret)
		exit(1);
	for (i = info; i; i = i->next, n++) {
		version_ok &= i->fabric_attr->api_version == API;
		tail_ok &= tail_eq(TAIL(i), &weft_tail);
	}
	report(version_ok, "%d entries have fabric_attr->api_version %u.%u", n,
	       FI_MAJOR(API), FI_MINOR(API));
	report(tail_ok, "domain_attr tail: no auth keys%s%s",
	       ABI_NODE >= 18 ? ", no groups" : "",
	       ABI_NODE >= 19 ? ", counters up to UINT64_MAX" : "");
	abi_freeinfo(info);
}

/* Hints whose tail asks for what weft has not match nothing. */
static void check_tail_hint(const struct tail *ask, const char *what)
{
	struct fi_info *hints = make_hints(), *info = NULL;
	int ret;

	*TAIL(hints) = *ask;
	ret = get_info(hints, &info);
	report(ret == -FI_ENODATA && !info,
	       "hints with %s: %d (-FI_ENODATA expected)", what, ret);
	if (!ret)
		abi_freeinfo(info);
	abi_freeinfo(hints);
}

/*
 * fi_dupinfo of an fi_info whose domain_attr the program allocated itself,
 * exactly as large as its headers say: the copy keeps every tail field,
 * and weft reads nothing past the end (ASan would report the overflow).
 */
static void check_dupinfo(void)
{
	static const struct tail distinct = {
		.max_ep_auth_key = 0x1234,
#if ABI_NODE >= 18
		.max_group_id = 0x5678,
#endif
#if ABI_NODE >= 19
		.max_cntr_value = 0x1111222233334444ULL,
		.max_err_cntr_value = 0x5555666677778888ULL,
#endif
	};
	struct fi_info *src = make_hints(), *copy;
	struct fi_domain_attr *theirs = src->domain_attr;
	struct client_domain_attr *mine = calloc(1, sizeof(*mine));

	if (!mine)
		exit(1);
	char *name = (char *)"client-domain";

	/* through bytes: newer headers' struct is longer than the node's */
	memcpy(mine->head + offsetof(struct fi_domain_attr, name), &name,
	       sizeof(name));
	mine->t = distinct;
	src->domain_attr = DOM_HEAD(mine);
	copy = abi_dupinfo(src);
	src->domain_attr = theirs;
	abi_freeinfo(src);
	report(copy && copy->domain_attr->name != name &&
		       !strcmp(copy->domain_attr->name, "client-domain") &&
		       tail_eq(TAIL(copy), &distinct),
	       "fi_dupinfo keeps a %zu-byte domain_attr and its tail",
	       sizeof(*mine));
	abi_freeinfo(copy);
	free(mine);
}

#if ABI_NODE >= 18
/* fi_fabric2 defines no flags and needs an fi_info. */
static void check_fabric2_args(void)
{
	struct fi_info *hints = make_hints();
	struct fid_fabric *fabric = NULL;
	int r1 = abi_fabric2(hints, &fabric, 1, NULL);
	int r2 = abi_fabric2(NULL, &fabric, 0, NULL);

	report(r1 == -FI_EINVAL && r2 == -FI_EINVAL && !fabric,
	       "fi_fabric2 with flags: %d, without info: %d (-FI_EINVAL)", r1,
	       r2);
	abi_freeinfo(hints);
}
#endif

/* ---- two endpoints, one in each process -------------------------------- */

static struct fi_info *info;
static struct fid_fabric *fabric;
static struct fid_domain *domain;
static struct fid_av *av;
static struct fid_cq *txcq, *rxcq;
static struct fid_ep *ep;
static struct fid_mr *smr, *rmr;
static fi_addr_t peer;
static int sock; /* a socketpair to the other process */
static uint8_t sbuf[MAXMSG], rbuf[MAXMSG];

static void put(const void *p, size_t n)
{
	if (write(sock, p, n) != (ssize_t)n)
		exit(1);
}

static void get(void *p, size_t n)
{
	ssize_t r;

	for (; n; n -= (size_t)r, p = (char *)p + r) {
		r = read(sock, p, n);
		if (r <= 0) {
			report(false, "the other process went away");
			exit(1);
		}
	}
}

/*
 * Register with the program's own mr_attr (weft reads 1.17's part).  As
 * fabtests do, pick the key unless the domain says FI_MR_PROV_KEY: weft's
 * providers need none of the mr_mode bits offered.
 */
static void reg(void *buf, size_t len, uint64_t access, struct fid_mr **mr)
{
	static uint64_t next_key = 1;
	struct iovec iov = { buf, len };
	struct fi_mr_attr h = { .mr_iov = &iov, .iov_count = 1,
				.access = access };
	struct client_mr_attr a = { .hmem_data = NULL };

	if (!(info->domain_attr->mr_mode & FI_MR_PROV_KEY))
		h.requested_key = next_key++;
	/* through bytes: newer headers' struct is longer than 1.18's part */
	memcpy(a.head, &h, sizeof(a.head));
	MUST(fi_mr_regattr(domain, MR_HEAD(&a), 0, mr));
}

static void open_ep(void)
{
	struct fi_info *hints = make_hints();
	struct fi_av_attr aa = { .type = FI_AV_TABLE };
	struct fi_cq_attr ca = { .format = FI_CQ_FORMAT_TAGGED, .size = 256 };
	char name[256];
	size_t len = sizeof(name);

	MUST(get_info(hints, &info));
	abi_freeinfo(hints);
#if ABI_NODE >= 18
	MUST(abi_fabric2(info, &fabric, 0, NULL));
#else
	MUST(fi_fabric(info->fabric_attr, &fabric, NULL));
#endif
	MUST(fi_domain(fabric, info, &domain, NULL));
	MUST(fi_av_open(domain, &aa, &av, NULL));
	MUST(fi_cq_open(domain, &ca, &txcq, NULL));
	MUST(fi_cq_open(domain, &ca, &rxcq, NULL));
	MUST(fi_endpoint(domain, info, &ep, NULL));
	MUST(fi_ep_bind(ep, &av->fid, 0));
	MUST(fi_ep_bind(ep, &txcq->fid, FI_TRANSMIT));
	MUST(fi_ep_bind(ep, &rxcq->fid, FI_RECV));
	MUST(fi_enable(ep));
	reg(sbuf, sizeof(sbuf), FI_SEND | FI_WRITE, &smr);
	reg(rbuf, sizeof(rbuf), FI_RECV, &rmr);

	/* Trade addresses. */
	MUST(fi_getname(&ep->fid, name, &len));
	put(&len, sizeof(len));
	put(name, len);
	get(&len, sizeof(len));
	if (len > sizeof(name))
		exit(1);
	get(name, len);
	MUST(fi_av_insert(av, name, 1, &peer, 0, NULL) != 1);
}

static void close_ep(void)
{
	MUST(fi_close(&ep->fid));
	MUST(fi_close(&smr->fid));
	MUST(fi_close(&rmr->fid));
	MUST(fi_close(&rxcq->fid));
	MUST(fi_close(&txcq->fid));
	MUST(fi_close(&av->fid));
	MUST(fi_close(&domain->fid));
	MUST(fi_close(&fabric->fid));
	abi_freeinfo(info);
}

/* The next completion or error of cq: 1, or -FI_EAVAIL. */
static ssize_t next_comp(struct fid_cq *cq, struct fi_cq_tagged_entry *e)
{
	ssize_t r;

	while ((r = fi_cq_read(cq, e, 1)) == -FI_EAGAIN)
		;
	return r;
}

/* A completion that must be a success. */
static void wait_ok(struct fid_cq *cq, struct fi_cq_tagged_entry *e)
{
	struct client_cq_err_entry err = { .src_addr = 0 };
	ssize_t r = next_comp(cq, e);

	if (r == 1)
		return;
	if (r == -FI_EAVAIL && fi_cq_readerr(cq, ERR_HEAD(&err), 0) == 1)
		r = -ERR_HEAD(&err)->err;
	report(false, "a completion failed: %s", fi_strerror((int)-r));
	exit(1);
}

/* Byte j of message i: the child's (reply 0) or the parent's answer. */
static uint8_t pat(unsigned i, size_t j, unsigned reply)
{
	return (uint8_t)(j * 131 + (j >> 8) * 7 + i * 17 + reply * 101 + 1);
}

static void fill(uint8_t *b, size_t len, unsigned i, unsigned reply)
{
	for (size_t j = 0; j < len; j++)
		b[j] = pat(i, j, reply);
}

static bool same(const uint8_t *b, size_t len, unsigned i, unsigned reply)
{
	for (size_t j = 0; j < len; j++)
		if (b[j] != pat(i, j, reply))
			return false;
	return true;
}

/* The child sends NMSG tagged messages; the parent checks each, answers. */
static void pingpong(bool parent)
{
	static const size_t lens[] = { 1, 100, 4096, 20000, MAXMSG };
	void *sdesc = fi_mr_desc(smr), *rdesc = fi_mr_desc(rmr);
	struct fi_context2 sctx, rctx;
	struct fi_cq_tagged_entry e;
	unsigned i, bad = 0;

	for (i = 0; i < NMSG && !bad; i++) {
		size_t len = lens[i % 5];

		MUST(fi_trecv(ep, rbuf, MAXMSG, rdesc, peer, i, 0, &rctx));
		if (!parent) {
			fill(sbuf, len, i, 0);
			MUST(fi_tsend(ep, sbuf, len, sdesc, peer, i, &sctx));
			wait_ok(txcq, &e);
		}
		wait_ok(rxcq, &e);
		bad += e.op_context != &rctx || e.len != len || e.tag != i ||
		       !same(rbuf, len, i, !parent);
		if (parent) {
			fill(sbuf, len, i, 1);
			MUST(fi_tsend(ep, sbuf, len, sdesc, peer, i, &sctx));
			wait_ok(txcq, &e);
		}
	}
	report(!bad, "%u tagged messages of 1 B to 64 KiB %s, every byte checked",
	       i, parent ? "received and answered" : "sent, answers received");
}

/* The child writes RMA_LEN bytes into the parent's registered memory. */
static void rma_write(bool parent)
{
	static uint8_t target[RMA_LEN];
	struct fi_context2 ctx;
	struct fi_cq_tagged_entry e;
	uint64_t where[2]; /* address, key */
	struct fid_mr *mr;
	bool ok = false;
	time_t end;
	char c;

	if (!parent) {
		get(where, sizeof(where));
		fill(sbuf, RMA_LEN, 7777, 0);
		MUST(fi_write(ep, sbuf, RMA_LEN, fi_mr_desc(smr), peer,
			      where[0], where[1], &ctx));
		wait_ok(txcq, &e);
		report(e.op_context == &ctx, "fi_write completed");
		put("w", 1);
		return;
	}
	reg(target, sizeof(target), FI_REMOTE_WRITE, &mr);
	/* Offsets from 0 unless the domain says FI_MR_VIRT_ADDR. */
	where[0] = info->domain_attr->mr_mode & FI_MR_VIRT_ADDR ?
			   (uintptr_t)target : 0;
	where[1] = fi_mr_key(mr);
	put(where, sizeof(where));
	/* Poll the CQ (progress for the target side) until all of it came. */
	for (end = time(NULL) + 20; !ok && time(NULL) < end;) {
		ok = same(target, RMA_LEN, 7777, 0);
		(void)fi_cq_read(rxcq, &e, 1);
	}
	report(ok, "fi_write of %d bytes arrived, every byte checked", RMA_LEN);
	get(&c, 1); /* the child's completion came */
	MUST(fi_close(&mr->fid));
}

/*
 * A 64-byte message into a 16-byte receive.  The parent reads its error
 * completion into the 1.20 fi_cq_err_entry with a canary in src_addr and
 * a guard word after the entry: weft must say FI_ADDR_NOTAVAIL there (it
 * reports no source with errors) and write nothing past the 88 bytes.
 */
static void truncation(bool parent)
{
	struct {
		struct client_cq_err_entry e;
		uint64_t guard;
	} err = { .e = { .src_addr = CANARY }, .guard = CANARY };
	struct fi_cq_tagged_entry e;
	struct fi_context2 ctx;
	ssize_t r;
	char c;

	if (!parent) {
		get(&c, 1); /* the receive is posted */
		memset(sbuf, 0x42, 64);
		MUST(fi_send(ep, sbuf, 64, fi_mr_desc(smr), peer, &ctx));
		/* Success or error, the send's completion must come. */
		r = next_comp(txcq, &e);
		if (r == -FI_EAVAIL)
			r = fi_cq_readerr(txcq, ERR_HEAD(&err.e), 0);
		report(r == 1, "the overflowing send completed: %zd", r);
		return;
	}
	MUST(fi_recv(ep, rbuf, SMALL, fi_mr_desc(rmr), peer, &ctx));
	put("p", 1);
	r = next_comp(rxcq, &e);
	report(r == -FI_EAVAIL, "the short receive completes in error: %zd",
	       r);
	if (r != -FI_EAVAIL)
		return;
	r = fi_cq_readerr(rxcq, ERR_HEAD(&err.e), 0);
	report(r == 1 && ERR_HEAD(&err.e)->err == FI_ETRUNC &&
		       ERR_HEAD(&err.e)->op_context == &ctx &&
		       ERR_HEAD(&err.e)->olen == 64 - SMALL,
	       "fi_cq_readerr: %zd, err %d (FI_ETRUNC %d), olen %zu", r,
	       ERR_HEAD(&err.e)->err, FI_ETRUNC, ERR_HEAD(&err.e)->olen);
	report(err.e.src_addr == FI_ADDR_NOTAVAIL,
	       "err entry src_addr is FI_ADDR_NOTAVAIL: 0x%" PRIx64,
	       (uint64_t)err.e.src_addr);
	report(err.guard == CANARY, "nothing written past the 88-byte entry");
}

static pid_t child;

/* A parent that gives up does not leave its child behind. */
static void reap(void)
{
	if (child > 0) {
		kill(child, SIGKILL);
		waitpid(child, NULL, 0);
	}
}

static void traffic(void)
{
	int sv[2], status;
	bool parent;
	char c;

	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv))
		exit(1);
	fflush(stdout);
	child = fork();
	if (child < 0)
		exit(1);
	parent = child > 0;
	if (parent) {
		atexit(reap);
	} else {
		who = "child";
		failures = 0; /* the parent's are the parent's */
	}
	sock = sv[!parent];
	close(sv[parent]);

	open_ep();
	pingpong(parent);
	rma_write(parent);
	truncation(parent);
	put("d", 1); /* both sides are done before either closes */
	get(&c, 1);
	close_ep();
	close(sock);
	if (!parent)
		exit(failures ? 1 : 0);

	if (waitpid(child, &status, 0) != child)
		status = -1;
	child = 0;
	report(WIFEXITED(status) && WEXITSTATUS(status) == 0,
	       "child exit status 0x%x", status);
}

int main(int argc, char **argv)
{
	if (argc != 2 || (strcmp(argv[1], "shm") && strcmp(argv[1], "tcp"))) {
		fprintf(stderr, "usage: %s shm|tcp\n", argv[0]);
		return 2;
	}
	prov = argv[1];
	setvbuf(stdout, NULL, _IOLBF, 0);
	alarm(60); /* a hang anywhere, in either process, ends the test */

	check_getinfo();
	check_tail_hint(&(struct tail){ .max_ep_auth_key = 1 },
			"max_ep_auth_key 1");
#if ABI_NODE >= 18
	check_tail_hint(&(struct tail){ .max_group_id = 1 }, "max_group_id 1");
	check_fabric2_args();
#endif
	check_dupinfo();
	traffic();
	return failures ? 1 : 0;
}
