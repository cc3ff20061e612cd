/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * tcp RDM endpoints of several processes of one host: the peers that have
 * a region are reached through shared memory, the others (FI_TCP_SHM=0)
 * through sockets, behind one AV and one matching queue.  Driven by
 * local-peers.sh, which starts the processes and looks at /dev/shm; the
 * processes meet through files in a directory (written whole: a temporary
 * name, then rename).
 *
 *   local_peers server DIR N   one endpoint serving clients c0..c<N-1>
 *                              and the victim "v"
 *   local_peers client DIR ID  client cID: tagged messages of 8 B, 4 KiB,
 *                              64 KiB and 1 MiB to the server, first to
 *                              directed receives, then to FI_ADDR_UNSPEC
 *                              ones; checks the replies; then an RMA
 *                              write, read and 64-bit fetch-add into the
 *                              server's memory
 *   local_peers victim DIR     "v": publishes its address and sleeps
 *                              until it is killed, with the server's
 *                              sends to it outstanding
 *   local_peers restart DIR    "v2": an endpoint at v's address again
 *                              (77 and DIR/v2.skip when the port is taken)
 *   local_peers idle DIR NAME  an endpoint that publishes its address and
 *                              sleeps until it is killed
 *   local_peers probe tcp|shm  opens and closes one endpoint of that
 *                              provider (which sweeps stale regions)
 *
 * Every process writes DIR/NAME.addr (its fi_getname address) and
 * DIR/NAME.info ("pid port-in-hex").  The server writes DIR/srv.*, then
 * DIR/go (with DIR/mr: the key and address of its RMA memory) once every
 * client is in its AV, DIR/v.armed once its sends to the victim are
 * outstanding, DIR/v.failed once they completed in error, DIR/done when
 * every exchange is checked; after DIR/finish (the script's) it says
 * goodbye to each client and exits.  Exit 0 pass, 1 fail, 77 skip.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/stat.h>

#include <rdma/fabric.h>
#include <rdma/fi_atomic.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>

#include "tcp_fix.h"

#define MAXC 16
#define NSIZES 4
#define ROUNDS 2
#define K (NSIZES * ROUNDS) /* messages per client and phase */
#define MAXMSG (1u << 20)
#define SLICE 16384 /* each client's part of the server's RMA memory */
#define HANG_S 120 /* bound on any wait: past it the test fails */

enum {
	TAG_A = 1, /* to directed receives */
	TAG_B, /* to FI_ADDR_UNSPEC receives */
	TAG_R, /* replies */
	TAG_DONE, /* a client's RMA is finished */
	TAG_BYE,
	TAG_V, /* to and from the victim's address */
};

static const size_t sizes[NSIZES] = { 8, 4096, 65536, MAXMSG };

static const char *dir;
static struct fi_info *info;
static struct fid_fabric *fabric;
static struct fid_domain *domain;
static struct fid_av *av;
static struct fid_cq *rxcq, *txcq;
static struct fid_ep *ep;
static time_t deadline;

/* ---- files in DIR ------------------------------------------------------- */

static void path_of(char *p, size_t n, const char *name)
{
	snprintf(p, n, "%s/%s", dir, name);
}

static void put_file(const char *name, const void *data, size_t len)
{
	char p[512], tmp[520];
	FILE *f;

	path_of(p, sizeof(p), name);
	snprintf(tmp, sizeof(tmp), "%s.tmp", p);
	f = fopen(tmp, "w");
	if (!f || fwrite(data, 1, len, f) != len || fclose(f) ||
	    rename(tmp, p))
		FAIL("cannot write %s: %s", p, strerror(errno));
}

/* The file's bytes (up to max), or -1 when it is not there yet. */
static ssize_t get_file(const char *name, void *data, size_t max)
{
	char p[512];
	FILE *f;
	size_t n;

	path_of(p, sizeof(p), name);
	f = fopen(p, "r");
	if (!f)
		return -1;
	n = fread(data, 1, max, f);
	fclose(f);
	return (ssize_t)n;
}

static bool have_file(const char *name)
{
	char p[512];
	struct stat st;

	path_of(p, sizeof(p), name);
	return !stat(p, &st);
}

static void check_time(const char *what)
{
	if (time(NULL) > deadline)
		FAIL("no progress within %d s: %s", HANG_S, what);
}

static void nap(void)
{
	struct timespec ts = { 0, 200000 };

	nanosleep(&ts, NULL);
}

/* ---- the endpoint -------------------------------------------------------- */

/* fi_getinfo for a tcp RDM endpoint on 127.0.0.1 (port 0: any). */
static int get_info(const char *prov, unsigned port, struct fi_info **out)
{
	struct fi_info *hints = fi_allocinfo();
	char service[16];
	int ret;

	hints->ep_attr->type = FI_EP_RDM;
	hints->caps = FI_TAGGED | FI_MSG | FI_RMA | FI_ATOMIC |
		      FI_DIRECTED_RECV | FI_SOURCE;
	hints->addr_format = strcmp(prov, "shm") ? FI_SOCKADDR_IN : 0;
	hints->domain_attr->mr_mode = FI_MR_VIRT_ADDR | FI_MR_ALLOCATED |
				      FI_MR_PROV_KEY | FI_MR_ENDPOINT;
	hints->fabric_attr->prov_name = strdup(prov);
	snprintf(service, sizeof(service), "%u", port);
	if (strcmp(prov, "shm"))
		ret = fi_getinfo(FI_VERSION(1, 17), "127.0.0.1",
				 port ? service : NULL, FI_SOURCE, hints, out);
	else
		ret = fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints, out);
	fi_freeinfo(hints);
	return ret;
}

static void open_ep(const char *prov, unsigned port)
{
	struct fi_av_attr aa = { .type = FI_AV_TABLE };
	struct fi_cq_attr ca = { .format = FI_CQ_FORMAT_TAGGED, .size = 1024 };
	int ret;

	ret = get_info(prov, port, &info);
	if (ret) {
		printf("no %s RDM endpoint on 127.0.0.1: %s\n", prov,
		       fi_strerror(-ret));
		exit(77);
	}
	CHECK(fi_fabric(info->fabric_attr, &fabric, NULL));
	CHECK(fi_domain(fabric, info, &domain, NULL));
	CHECK(fi_av_open(domain, &aa, &av, NULL));
	CHECK(fi_endpoint(domain, info, &ep, NULL));
	CHECK(fi_cq_open(domain, &ca, &rxcq, NULL));
	CHECK(fi_cq_open(domain, &ca, &txcq, NULL));
	CHECK(fi_ep_bind(ep, &av->fid, 0));
	CHECK(fi_ep_bind(ep, &rxcq->fid, FI_RECV));
	CHECK(fi_ep_bind(ep, &txcq->fid, FI_TRANSMIT));
}

/* Enable and publish NAME.addr and NAME.info. */
static void publish(const char *name, struct sockaddr_in *out)
{
	struct sockaddr_in sin;
	size_t len = sizeof(sin);
	char buf[64], file[64];
	int n;

	CHECK(fi_enable(ep));
	CHECK(fi_getname(&ep->fid, &sin, &len));
	if (len != sizeof(sin) || sin.sin_family != AF_INET ||
	    sin.sin_addr.s_addr != htonl(INADDR_LOOPBACK))
		FAIL("%s: fi_getname is not 127.0.0.1 (%zu bytes)", name, len);
	snprintf(file, sizeof(file), "%s.addr", name);
	put_file(file, &sin, len);
	n = snprintf(buf, sizeof(buf), "%d %x\n", (int)getpid(),
		     ntohs(sin.sin_port));
	snprintf(file, sizeof(file), "%s.info", name);
	put_file(file, buf, (size_t)n);
	if (out)
		*out = sin;
}

static fi_addr_t insert_file(const char *name)
{
	char file[64];
	struct sockaddr_in sin;
	fi_addr_t a;

	snprintf(file, sizeof(file), "%s.addr", name);
	while (get_file(file, &sin, sizeof(sin)) != sizeof(sin)) {
		check_time(file);
		nap();
	}
	if (fi_av_insert(av, &sin, 1, &a, 0, NULL) != 1)
		FAIL("fi_av_insert of %s failed", name);
	return a;
}

static void close_ep(void)
{
	CHECK(fi_close(&ep->fid));
	CHECK(fi_close(&rxcq->fid));
	CHECK(fi_close(&txcq->fid));
	CHECK(fi_close(&av->fid));
	CHECK(fi_close(&domain->fid));
	CHECK(fi_close(&fabric->fid));
	fi_freeinfo(info);
}

/* ---- messages ------------------------------------------------------------ */

/* Byte j of message seq of client c (from == 0) or of the reply to it. */
static uint8_t pat(unsigned c, unsigned seq, size_t j, unsigned from)
{
	return (uint8_t)(j * 131 + (j >> 8) * 7 + c * 29 + seq * 17 +
			 from * 101 + 1);
}

/* Bytes 0 and 1 say whose message it is: 0x40 | client (0x80 | client
 * for the server's), and seq. */
static void fill(uint8_t *b, size_t len, unsigned c, unsigned seq,
		 unsigned from)
{
	size_t j;

	b[0] = (uint8_t)((from ? 0x80 : 0x40) | c);
	b[1] = (uint8_t)seq;
	for (j = 2; j < len; j++)
		b[j] = pat(c, seq, j, from);
}

static bool intact(const uint8_t *b, size_t len, unsigned c, unsigned seq,
		   unsigned from)
{
	size_t j;

	if (len < 2 || b[0] != (uint8_t)((from ? 0x80 : 0x40) | c) ||
	    b[1] != (uint8_t)seq)
		return false;
	for (j = 2; j < len; j++)
		if (b[j] != pat(c, seq, j, from))
			return false;
	return true;
}

/* One operation in flight: its completion finds it by context. */
struct op {
	int kind;
	unsigned client, seq, idx;
	uint8_t *buf;
	size_t len;
	bool done;
	int err;
	fi_addr_t src;
	size_t got;
	struct op *all_next; /* every op made, freed at exit */
};

static struct op *all_ops;

static void (*on_rx)(struct op *o);
static void (*on_tx)(struct op *o);

/* Read both CQs once; ops are marked done (and handed on). */
static int poll_cqs(void)
{
	struct fi_cq_tagged_entry e[8];
	fi_addr_t src[8];
	struct fi_cq_err_entry ee;
	int n = 0, k;
	ssize_t r;

	r = fi_cq_readfrom(rxcq, e, 8, src);
	if (r == -FI_EAVAIL) {
		memset(&ee, 0, sizeof(ee));
		if (fi_cq_readerr(rxcq, &ee, 0) == 1) {
			struct op *o = ee.op_context;

			o->done = true;
			o->err = ee.err ? ee.err : FI_EOTHER;
			if (on_rx)
				on_rx(o);
			n++;
		}
	} else if (r > 0) {
		for (k = 0; k < r; k++) {
			struct op *o = e[k].op_context;

			o->done = true;
			o->got = e[k].len;
			o->src = src[k];
			if (on_rx)
				on_rx(o);
		}
		n += (int)r;
	} else if (r != -FI_EAGAIN) {
		FAIL("fi_cq_readfrom: %zd (%s)", r, fi_strerror((int)-r));
	}
	r = fi_cq_read(txcq, e, 8);
	if (r == -FI_EAVAIL) {
		memset(&ee, 0, sizeof(ee));
		if (fi_cq_readerr(txcq, &ee, 0) == 1) {
			struct op *o = ee.op_context;

			o->done = true;
			o->err = ee.err ? ee.err : FI_EOTHER;
			if (on_tx)
				on_tx(o);
			n++;
		}
	} else if (r > 0) {
		for (k = 0; k < r; k++) {
			struct op *o = e[k].op_context;

			o->done = true;
			if (on_tx)
				on_tx(o);
		}
		n += (int)r;
	} else if (r != -FI_EAGAIN) {
		FAIL("fi_cq_read: %zd (%s)", r, fi_strerror((int)-r));
	}
	return n;
}

/* Post a tagged send; -FI_EAGAIN is retried with progress.  Returns 0 or
 * the call's error. */
static int tsend(struct op *o, fi_addr_t to, uint64_t tag)
{
	ssize_t r;

	o->done = false;
	o->err = 0;
	while ((r = fi_tsend(ep, o->buf, o->len, NULL, to, tag, o)) ==
	       -FI_EAGAIN) {
		check_time("fi_tsend keeps returning -FI_EAGAIN");
		if (!poll_cqs())
			nap();
	}
	return (int)r;
}

static void trecv(struct op *o, fi_addr_t from, uint64_t tag)
{
	ssize_t r;

	o->done = false;
	o->err = 0;
	while ((r = fi_trecv(ep, o->buf, o->len, NULL, from, tag, 0, o)) ==
	       -FI_EAGAIN) {
		check_time("fi_trecv keeps returning -FI_EAGAIN");
		poll_cqs();
	}
	CHECK(r);
}

static void wait_op(struct op *o, const char *what)
{
	while (!o->done) {
		check_time(what);
		if (!poll_cqs())
			nap();
	}
}

/* The ops a process made are its until it exits: freed then, so that a
 * leak checker sees only the library's. */
static void free_ops(void)
{
	struct op *o;

	while ((o = all_ops)) {
		all_ops = o->all_next;
		free(o->buf);
		free(o);
	}
}

static struct op *new_op(int kind, unsigned c, unsigned seq, size_t len)
{
	struct op *o = calloc(1, sizeof(*o));

	if (!o || !(o->buf = malloc(len ? len : 1)))
		FAIL("out of memory");
	if (!all_ops)
		atexit(free_ops);
	o->all_next = all_ops;
	all_ops = o;
	o->kind = kind;
	o->client = c;
	o->seq = seq;
	o->len = len;
	return o;
}

/* ---- the server ---------------------------------------------------------- */

struct client {
	fi_addr_t addr;
	struct op *a[K]; /* directed receives, in posting order */
	unsigned got_a, got_b;
	int last_b; /* seq of its last FI_ADDR_UNSPEC message, by posting */
	struct op *done_rx;
	bool replied, finished;
	struct op *reply[K];
};

static unsigned nclients;
static struct client cl[MAXC];
static struct op **bops; /* the FI_ADDR_UNSPEC receives, in posting order */
static unsigned nb_done;
static uint8_t *rma_mem;

static void srv_rx(struct op *o)
{
	struct client *c = &cl[o->client];

	if (o->kind == TAG_A) {
		if (o->err)
			FAIL("c%u: directed receive %u failed: %s", o->client,
			     o->seq, fi_strerror(o->err));
		if (o->src != c->addr)
			FAIL("c%u: directed receive %u: source %" PRIu64
			     ", inserted as %" PRIu64,
			     o->client, o->seq, (uint64_t)o->src,
			     (uint64_t)c->addr);
		if (o->got != o->len || !intact(o->buf, o->got, o->client,
						 o->seq, 0))
			FAIL("c%u: directed receive %u: %zu bytes of %zu, or "
			     "not its message (order or data)",
			     o->client, o->seq, o->got, o->len);
		c->got_a++;
	} else if (o->kind == TAG_B) {
		unsigned who, seq;

		nb_done++;
		if (o->err)
			FAIL("receive %u from any source failed: %s", o->idx,
			     fi_strerror(o->err));
		who = o->buf[0] & 0x3f;
		seq = o->buf[1];
		if (!(o->buf[0] & 0x40) || who >= nclients)
			FAIL("receive %u from any source: no client's message",
			     o->idx);
		if (o->src != cl[who].addr)
			FAIL("receive %u: message of c%u, but fi_cq_readfrom "
			     "says source %" PRIu64 " (c%u is %" PRIu64 ")",
			     o->idx, who, (uint64_t)o->src, who,
			     (uint64_t)cl[who].addr);
		if (seq < K || seq >= 2 * K ||
		    o->got != sizes[seq % NSIZES] ||
		    !intact(o->buf, o->got, who, seq, 0))
			FAIL("receive %u: c%u seq %u, %zu bytes: data wrong",
			     o->idx, who, seq, o->got);
		o->client = who;
		o->seq = seq;
		cl[who].got_b++;
		/* Order is checked when all are in (completions of
		 * rendezvous messages may come in another order). */
	} else if (o->kind == TAG_DONE) {
		if (o->err)
			FAIL("c%u: its DONE failed: %s", o->client,
			     fi_strerror(o->err));
	}
}

static void srv_tx(struct op *o)
{
	if (o->kind == TAG_R && o->err)
		FAIL("c%u: reply %u failed: %s", o->client, o->seq,
		     fi_strerror(o->err));
	if (o->kind == TAG_BYE && o->err)
		FAIL("c%u: goodbye failed: %s", o->client,
		     fi_strerror(o->err));
}

/* Per client, the FI_ADDR_UNSPEC receives it took, in posting order, hold
 * its messages in the order it sent them. */
static void check_b_order(void)
{
	unsigned i, c;

	for (c = 0; c < nclients; c++)
		cl[c].last_b = K - 1;
	for (i = 0; i < nclients * K; i++) {
		struct op *o = bops[i];

		if ((int)o->seq != cl[o->client].last_b + 1)
			FAIL("c%u: receive %u (posted after the one that got "
			     "seq %d) got seq %u: out of order",
			     o->client, i, cl[o->client].last_b, o->seq);
		cl[o->client].last_b = (int)o->seq;
	}
}

static void send_replies(unsigned c)
{
	unsigned s;

	for (s = 0; s < K; s++) {
		struct op *o = new_op(TAG_R, c, s, sizes[s % NSIZES]);

		fill(o->buf, o->len, c, s, 1);
		CHECK(tsend(o, cl[c].addr, TAG_R));
		cl[c].reply[s] = o;
	}
	cl[c].replied = true;
}

static void check_rma(unsigned c)
{
	uint8_t *s = rma_mem + (size_t)c * SLICE;
	uint64_t v;
	size_t j;

	for (j = 0; j < SLICE / 2; j++)
		if (s[j] != pat(c, 200, j, 0))
			FAIL("c%u: byte %zu of its RMA write is wrong here", c,
			     j);
	for (j = SLICE / 2; j < SLICE; j++)
		if (s[j] != pat(c, 201, j, 1))
			FAIL("c%u: byte %zu it could only read changed", c, j);
	memcpy(&v, rma_mem + (size_t)nclients * SLICE + c * 8, 8);
	if (v != 1000 + c + 7)
		FAIL("c%u: counter %" PRIu64 " after its fetch-add of 7, "
		     "expected %u",
		     c, v, 1000 + c + 7);
}

static double since(const struct timespec *t0)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)(t.tv_sec - t0->tv_sec) +
	       (double)(t.tv_nsec - t0->tv_nsec) / 1e9;
}

static int server(unsigned n)
{
	struct sockaddr_in vaddr, v2addr;
	struct fid_mr *mr;
	fi_addr_t va;
	struct op *vbig[2], *vsmall[2], *vrx, *vlate = NULL, *v2tx = NULL;
	unsigned v2tries = 0;
	struct timespec t_arm;
	size_t mrsize;
	uint64_t mrinfo[3];
	unsigned c, i, finished = 0;
	int vstate = 0; /* 1 armed, 2 failed, 3 restart settled */
	bool bposted = false, v2skip = false;

	nclients = n;
	open_ep("tcp", 0);
	publish("srv", NULL);
	on_rx = srv_rx;
	on_tx = srv_tx;

	/* Memory the clients write, read and add to. */
	mrsize = (size_t)n * SLICE + (size_t)n * 8;
	rma_mem = calloc(1, mrsize);
	if (!rma_mem)
		FAIL("out of memory");
	for (c = 0; c < n; c++) {
		uint64_t v = 1000 + c;
		size_t j;

		for (j = SLICE / 2; j < SLICE; j++)
			rma_mem[(size_t)c * SLICE + j] = pat(c, 201, j, 1);
		memcpy(rma_mem + (size_t)n * SLICE + c * 8, &v, 8);
	}
	CHECK(fi_mr_reg(domain, rma_mem, mrsize,
			FI_REMOTE_READ | FI_REMOTE_WRITE, 0, 0x51, 0, &mr,
			NULL));
	if (info->domain_attr->mr_mode & FI_MR_ENDPOINT) {
		CHECK(fi_mr_bind(mr, &ep->fid, 0));
		CHECK(fi_mr_enable(mr));
	}
	mrinfo[0] = fi_mr_key(mr);
	mrinfo[1] = (info->domain_attr->mr_mode & FI_MR_VIRT_ADDR) ?
			    (uint64_t)(uintptr_t)rma_mem :
			    0;
	mrinfo[2] = n;

	for (c = 0; c < n; c++) {
		char name[16];

		snprintf(name, sizeof(name), "c%u", c);
		cl[c].addr = insert_file(name);
	}
	va = insert_file("v");
	if (get_file("v.addr", &vaddr, sizeof(vaddr)) != sizeof(vaddr))
		FAIL("v.addr went away");

	/* Directed receives for every client's first phase, and for what
	 * comes from the victim's address (its successor's message). */
	for (c = 0; c < n; c++) {
		for (i = 0; i < K; i++) {
			cl[c].a[i] = new_op(TAG_A, c, i, sizes[i % NSIZES]);
			trecv(cl[c].a[i], cl[c].addr, TAG_A);
		}
		cl[c].done_rx = new_op(TAG_DONE, c, 0, 8);
		trecv(cl[c].done_rx, cl[c].addr, TAG_DONE);
	}
	vrx = new_op(TAG_V, MAXC, 0, 4096);
	trecv(vrx, va, TAG_V);
	put_file("mr", mrinfo, sizeof(mrinfo));
	put_file("go", "", 0);

	/* Sends to the victim that stay outstanding: it never reads them. */
	for (i = 0; i < 2; i++) {
		vsmall[i] = new_op(TAG_V, MAXC, i, 8);
		fill(vsmall[i]->buf, 8, MAXC & 0x3f, i, 1);
		CHECK(tsend(vsmall[i], va, TAG_V));
		vbig[i] = new_op(TAG_V, MAXC, 10 + i, MAXMSG);
		fill(vbig[i]->buf, MAXMSG, MAXC & 0x3f, 10 + i, 1);
		CHECK(tsend(vbig[i], va, TAG_V));
	}

	while (vstate < 3 || finished < n) {
		check_time("serving");
		if (!poll_cqs())
			nap();
		switch (vstate) {
		case 0:
			/* Eager sends complete when copied out; the 1 MiB
			 * ones wait for the victim. */
			if (!vsmall[0]->done || !vsmall[1]->done)
				break;
			if (vsmall[0]->err || vsmall[1]->err)
				FAIL("eager send to the live victim failed");
			if (vbig[0]->done || vbig[1]->done)
				FAIL("a 1 MiB send to the victim completed "
				     "though it reads nothing");
			clock_gettime(CLOCK_MONOTONIC, &t_arm);
			put_file("v.armed", "", 0);
			vstate = 1;
			break;
		case 1:
			if (!vbig[0]->done || !vbig[1]->done)
				break;
			if (!vbig[0]->err || !vbig[1]->err)
				FAIL("a send to the killed victim completed "
				     "without an error");
			printf("sends to the killed victim failed (%s) %.1f s "
			       "after they were posted\n",
			       fi_strerror(vbig[0]->err), since(&t_arm));
			/* A receive directed to a dead peer fails. */
			wait_op(vrx, "the directed receive for the victim");
			if (!vrx->err)
				FAIL("the directed receive for the killed "
				     "victim completed without an error");
			printf("the directed receive for the killed victim "
			       "failed (%s)\n", fi_strerror(vrx->err));
			/* A new send to the dead peer fails too. */
			vlate = new_op(TAG_V, MAXC, 20, 4096);
			fill(vlate->buf, 4096, MAXC & 0x3f, 20, 1);
			i = (unsigned)-tsend(vlate, va, TAG_V);
			if (i) {
				vlate->done = true;
				vlate->err = (int)i;
			}
			wait_op(vlate, "a send to the dead victim");
			if (!vlate->err)
				FAIL("a send to the dead victim succeeded");
			put_file("v.failed", "", 0);
			vstate = 2;
			break;
		case 2:
			if (have_file("v2.skip")) {
				v2skip = true;
				vstate = 3;
				break;
			}
			if (get_file("v2.addr", &v2addr, sizeof(v2addr)) !=
			    sizeof(v2addr))
				break;
			if (memcmp(&v2addr, &vaddr, sizeof(vaddr)))
				FAIL("the victim's successor is at another "
				     "address");
			/* A receive directed to its address takes its
			 * message, once the address is live again: until a
			 * message came from it, such a receive fails as
			 * the dead peer's did, and is posted again. */
			vrx = new_op(TAG_V, MAXC, 0, 4096);
			trecv(vrx, va, TAG_V);
			wait_op(vrx, "the successor's message");
			if (vrx->err == FI_ECONNRESET && ++v2tries < 500) {
				usleep(10000);
				break;
			}
			if (vrx->err || vrx->src != va || vrx->got != 4096 ||
			    !intact(vrx->buf, 4096, 1, 30, 0))
				FAIL("the successor's message: %s, source %"
				     PRIu64 " (%" PRIu64 "), %zu bytes",
				     fi_strerror(vrx->err), (uint64_t)vrx->src,
				     (uint64_t)va, vrx->got);
			/* And sends to that address work again, at once: a
			 * message came from it. */
			v2tx = new_op(TAG_V, MAXC, 31, 65536);
			fill(v2tx->buf, 65536, 1, 31, 1);
			i = (unsigned)-tsend(v2tx, va, TAG_V);
			if (i)
				FAIL("send to the successor: %s",
				     fi_strerror((int)i));
			wait_op(v2tx, "a send to the successor");
			if (v2tx->err)
				FAIL("send to the successor: %s",
				     fi_strerror(v2tx->err));
			printf("the successor at the victim's address got a "
			       "send\n");
			vstate = 3;
			break;
		}
		if (!bposted) {
			unsigned all = 0;

			for (c = 0; c < n; c++)
				all += cl[c].got_a;
			if (all == n * K) {
				/* The second phase: from any source. */
				bops = calloc(n * K, sizeof(*bops));
				for (i = 0; bops && i < n * K; i++) {
					bops[i] = new_op(TAG_B, MAXC, 0,
							 MAXMSG);
					bops[i]->idx = i;
					trecv(bops[i], FI_ADDR_UNSPEC, TAG_B);
				}
				bposted = true;
			}
		}
		if (bposted && nb_done == n * K && !cl[0].replied) {
			check_b_order();
			for (c = 0; c < n; c++)
				send_replies(c);
		}
		for (c = 0; c < n; c++) {
			if (cl[c].finished || !cl[c].done_rx->done)
				continue;
			if (!cl[c].replied)
				FAIL("c%u: DONE before its replies", c);
			check_rma(c);
			cl[c].finished = true;
			finished++;
		}
	}
	for (c = 0; c < n; c++)
		for (i = 0; i < K; i++)
			wait_op(cl[c].reply[i], "replies");
	printf("server: %u clients, %u messages each, checked; the victim's "
	       "sends failed; %s\n",
	       n, 2 * K,
	       v2skip ? "its successor skipped" :
			"its successor reached");
	put_file("done", "", 0);
	while (!have_file("finish")) {
		check_time("waiting for finish");
		if (!poll_cqs())
			nap();
	}
	for (c = 0; c < n; c++) {
		struct op *o = new_op(TAG_BYE, c, 0, 8);

		fill(o->buf, 8, c, 99, 1);
		CHECK(tsend(o, cl[c].addr, TAG_BYE));
		wait_op(o, "goodbye");
	}
	CHECK(fi_close(&mr->fid));
	close_ep();
	return 0;
}

/* ---- a client ------------------------------------------------------------ */

static void wait_file(const char *name)
{
	while (!have_file(name)) {
		check_time(name);
		if (!poll_cqs())
			nap();
	}
}

static int client(unsigned c)
{
	struct op *snd[2 * K], *rep[K], *bye, *done, *rma;
	struct fid_mr *lmr = NULL;
	void *ldesc = NULL;
	uint64_t mrinfo[3], key, base, add = 7, old = 0;
	uint8_t *local;
	fi_addr_t srv;
	char name[16];
	unsigned s, n;
	struct fi_msg_rma wmsg;
	struct fi_rma_iov riov;
	struct iovec iov;

	snprintf(name, sizeof(name), "c%u", c);
	open_ep("tcp", 0);
	publish(name, NULL);
	srv = insert_file("srv");
	wait_file("go");
	if (get_file("mr", mrinfo, sizeof(mrinfo)) != sizeof(mrinfo))
		FAIL("no mr file");
	key = mrinfo[0];
	base = mrinfo[1];
	n = (unsigned)mrinfo[2];

	for (s = 0; s < K; s++) {
		rep[s] = new_op(TAG_R, c, s, sizes[s % NSIZES]);
		trecv(rep[s], srv, TAG_R);
	}
	bye = new_op(TAG_BYE, c, 0, 8);
	trecv(bye, srv, TAG_BYE);
	for (s = 0; s < 2 * K; s++) {
		snd[s] = new_op(s < K ? TAG_A : TAG_B, c, s,
				sizes[s % NSIZES]);
		fill(snd[s]->buf, snd[s]->len, c, s, 0);
		CHECK(tsend(snd[s], srv, s < K ? TAG_A : TAG_B));
	}
	for (s = 0; s < 2 * K; s++) {
		wait_op(snd[s], "sends");
		if (snd[s]->err)
			FAIL("c%u: send %u failed: %s", c, s,
			     fi_strerror(snd[s]->err));
	}
	for (s = 0; s < K; s++) {
		wait_op(rep[s], "replies");
		if (rep[s]->err || rep[s]->got != rep[s]->len ||
		    rep[s]->src != srv ||
		    !intact(rep[s]->buf, rep[s]->got, c, s, 1))
			FAIL("c%u: reply %u wrong (%s, %zu bytes)", c, s,
			     fi_strerror(rep[s]->err), rep[s]->got);
	}

	/* RMA once the victim is dead: the server serves on. */
	wait_file("v.failed");
	local = calloc(1, SLICE + 8);
	if (!local)
		FAIL("out of memory");
	if (info->domain_attr->mr_mode & FI_MR_LOCAL) {
		CHECK(fi_mr_reg(domain, local, SLICE + 8, FI_READ | FI_WRITE,
				0, 0x100 + c, 0, &lmr, NULL));
		ldesc = fi_mr_desc(lmr);
	}
	for (size_t j = 0; j < SLICE / 2; j++)
		local[j] = pat(c, 200, j, 0);
	rma = new_op(0, c, 0, 0);
	iov.iov_base = local;
	iov.iov_len = SLICE / 2;
	riov.addr = base + (uint64_t)c * SLICE;
	riov.len = SLICE / 2;
	riov.key = key;
	wmsg = (struct fi_msg_rma){ .msg_iov = &iov, .desc = &ldesc,
				    .iov_count = 1, .addr = srv,
				    .rma_iov = &riov, .rma_iov_count = 1,
				    .context = rma };
	CHECK(fi_writemsg(ep, &wmsg, FI_COMPLETION | FI_DELIVERY_COMPLETE));
	wait_op(rma, "RMA write");
	if (rma->err)
		FAIL("c%u: RMA write: %s", c, fi_strerror(rma->err));
	memset(local, 0, SLICE);
	rma->done = false;
	CHECK(fi_read(ep, local, SLICE, ldesc, srv,
		      base + (uint64_t)c * SLICE, key, rma));
	wait_op(rma, "RMA read");
	if (rma->err)
		FAIL("c%u: RMA read: %s", c, fi_strerror(rma->err));
	for (size_t j = 0; j < SLICE; j++)
		if (local[j] != (j < SLICE / 2 ? pat(c, 200, j, 0) :
						 pat(c, 201, j, 1)))
			FAIL("c%u: RMA read: byte %zu wrong", c, j);
	rma->done = false;
	CHECK(fi_fetch_atomic(ep, &add, 1, NULL, &old, NULL, srv,
			      base + (uint64_t)n * SLICE + c * 8, key,
			      FI_UINT64, FI_SUM, rma));
	wait_op(rma, "fetch-add");
	if (rma->err || old != 1000 + c)
		FAIL("c%u: fetch-add: %s, fetched %" PRIu64 ", expected %u",
		     c, fi_strerror(rma->err), old, 1000 + c);

	done = new_op(TAG_DONE, c, 0, 8);
	fill(done->buf, 8, c, 98, 0);
	CHECK(tsend(done, srv, TAG_DONE));
	wait_op(done, "DONE");
	wait_op(bye, "goodbye");
	if (bye->err || !intact(bye->buf, 8, c, 99, 1))
		FAIL("c%u: goodbye wrong", c);
	if (lmr)
		CHECK(fi_close(&lmr->fid));
	close_ep();
	free(local);
	printf("c%u: %u messages sent, %u replies, RMA write, read and "
	       "fetch-add checked\n",
	       c, 2 * K, K);
	return 0;
}

/* ---- the victim, its successor, idle endpoints, probes ------------------ */

static void sleep_until_killed(void)
{
	for (;;) {
		check_time("waiting to be killed");
		sleep(1);
	}
}

static int restart(void)
{
	struct sockaddr_in sin;
	struct op *m, *r;
	fi_addr_t srv;
	int ret;

	if (get_file("v.addr", &sin, sizeof(sin)) != sizeof(sin))
		FAIL("no v.addr");
	open_ep("tcp", 0);
	/* The victim's address: its port again. */
	ret = fi_setname(&ep->fid, &sin, sizeof(sin));
	if (ret) {
		char why[128];
		int n = snprintf(why, sizeof(why),
				 "port %u cannot be bound again: %s\n",
				 ntohs(sin.sin_port), fi_strerror(-ret));

		put_file("v2.skip", why, (size_t)n);
		printf("%s", why);
		return 77;
	}
	publish("v2", NULL);
	srv = insert_file("srv");
	r = new_op(TAG_V, 1, 31, 65536);
	trecv(r, srv, TAG_V);
	m = new_op(TAG_V, 1, 30, 4096);
	fill(m->buf, 4096, 1, 30, 0);
	CHECK(tsend(m, srv, TAG_V));
	wait_op(m, "the successor's send");
	if (m->err)
		FAIL("v2: send: %s", fi_strerror(m->err));
	wait_op(r, "the server's send to the successor");
	if (r->err || r->got != 65536 || !intact(r->buf, 65536, 1, 31, 1))
		FAIL("v2: the server's message is wrong");
	close_ep();
	printf("v2: at the victim's address, both ways\n");
	return 0;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	deadline = time(NULL) + HANG_S;
	if (argc == 3 && !strcmp(argv[1], "probe")) {
		/* Opening an endpoint sweeps what dead processes left. */
		open_ep(argv[2], 0);
		CHECK(fi_enable(ep));
		close_ep();
		return 0;
	}
	if (argc < 3)
		FAIL("usage: local_peers server|client|victim|restart|idle "
		     "DIR [N|ID|NAME], or probe tcp|shm");
	dir = argv[2];
	if (!strcmp(argv[1], "server") && argc == 4) {
		unsigned n = (unsigned)atoi(argv[3]);

		if (!n || n > MAXC)
			FAIL("1 to %d clients", MAXC);
		return server(n);
	}
	if (!strcmp(argv[1], "client") && argc == 4)
		return client((unsigned)atoi(argv[3]));
	if (!strcmp(argv[1], "victim")) {
		open_ep("tcp", 0);
		publish("v", NULL);
		sleep_until_killed();
	}
	if (!strcmp(argv[1], "idle") && argc == 4) {
		open_ep("tcp", 0);
		publish(argv[3], NULL);
		sleep_until_killed();
	}
	if (!strcmp(argv[1], "restart"))
		return restart();
	FAIL("unknown role %s", argv[1]);
}
