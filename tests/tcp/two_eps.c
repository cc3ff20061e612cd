/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * tcp: two RDM endpoints of one process over one address family.
 *
 * Opens two endpoints on NODE (127.0.0.1, or ::1 for FI_SOCKADDR_IN6),
 * sends tagged messages of several sizes both ways, and checks the data,
 * the lengths and that FI_SOURCE names the sender.  Then one endpoint
 * sends to itself.  Uses only the public API.
 * Usage: two_eps [-6].  Exit 0 pass, 77 no tcp over that family, 1 fail.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_tagged.h>

#include "tcp_fix.h"

struct side {
	struct fid_ep *ep;
	struct fid_cq *cq, *txcq;
	fi_addr_t self; /* its own address in the shared AV */
};

static struct fid_fabric *fabric;
static struct fid_domain *domain;
static struct fid_av *av;

static void open_side(struct fi_info *info, struct side *s)
{
	struct fi_cq_attr ca = { .format = FI_CQ_FORMAT_TAGGED, .size = 64 };
	char name[128];
	size_t len = sizeof(name);

	CHECK(fi_endpoint(domain, info, &s->ep, NULL));
	CHECK(fi_cq_open(domain, &ca, &s->cq, NULL));
	CHECK(fi_cq_open(domain, &ca, &s->txcq, NULL));
	CHECK(fi_ep_bind(s->ep, &av->fid, 0));
	CHECK(fi_ep_bind(s->ep, &s->cq->fid, FI_RECV));
	CHECK(fi_ep_bind(s->ep, &s->txcq->fid, FI_TRANSMIT));
	CHECK(fi_enable(s->ep));
	CHECK(fi_getname(&s->ep->fid, name, &len));
	if (fi_av_insert(av, name, 1, &s->self, 0, NULL) != 1)
		FAIL("fi_av_insert failed");
}

/* Wait for the completion of ctx on cq, reading o's CQs for progress. */
static struct fi_cq_tagged_entry wait_ctx(struct fid_cq *cq, struct side *o,
					  void *ctx, fi_addr_t *src)
{
	struct fi_cq_tagged_entry e;
	time_t end = time(NULL) + 20;
	fi_addr_t from = FI_ADDR_NOTAVAIL;
	ssize_t n;

	while (time(NULL) < end) {
		n = fi_cq_readfrom(cq, &e, 1, &from);
		if (n == 1) {
			if (e.op_context != ctx)
				FAIL("completion for %p, expected %p",
				     e.op_context, ctx);
			if (src)
				*src = from;
			return e;
		}
		if (n != -FI_EAGAIN)
			FAIL("fi_cq_readfrom: %zd (%s)", n, fi_strerror((int)-n));
		if (o) {
			struct fi_cq_tagged_entry x;

			n = fi_cq_read(o->txcq, &x, 0);
			n = fi_cq_read(o->cq, &x, 0);
			(void)n;
		}
	}
	FAIL("no completion within 20 s");
}

static void xfer(struct side *a, struct side *b, size_t len, int seed)
{
	char *sbuf = malloc(len + 1), *rbuf = malloc(len + 1);
	int sc, rc;
	fi_addr_t src;
	struct fi_cq_tagged_entry e;
	size_t i;

	for (i = 0; i < len; i++)
		sbuf[i] = (char)(seed + i * 7);
	memset(rbuf, 0, len + 1);
	CHECK(fi_trecv(b->ep, rbuf, len, NULL, FI_ADDR_UNSPEC, 42, 0, &rc));
	/* -FI_EAGAIN (a connection being made): progress, try again. */
	for (i = 0; i < 10000000; i++) {
		struct fi_cq_tagged_entry x;
		ssize_t r = fi_tsend(a->ep, sbuf, len, NULL, b->self, 42, &sc);

		if (r != -FI_EAGAIN) {
			CHECK(r);
			break;
		}
		r = fi_cq_read(a->txcq, &x, 0);
		r = fi_cq_read(b->cq, &x, 0);
		(void)r;
	}
	e = wait_ctx(b->cq, a, &rc, &src);
	if (e.len != len || memcmp(sbuf, rbuf, len))
		FAIL("%zu bytes: data or length wrong (len %zu)", len, e.len);
	if (src != a->self)
		FAIL("%zu bytes: source %llu, expected %llu", len,
		     (unsigned long long)src, (unsigned long long)a->self);
	wait_ctx(a->txcq, b, &sc, NULL);
	free(sbuf);
	free(rbuf);
}

/* Large messages that arrive before their receives: buffered, or (past
 * FI_TCP_UNEXP_MAX) left in the socket until a receive takes them. */
static void unexpected(struct side *a, struct side *b)
{
	enum { N = 3, LEN = 200000 };
	static char sbuf[N][LEN], rbuf[N][LEN];
	int sc[N], rc[N], i, k;
	size_t j;

	for (i = 0; i < N; i++) {
		for (j = 0; j < LEN; j++)
			sbuf[i][j] = (char)(i * 31 + j * 13);
		memset(rbuf[i], 0, LEN);
		for (k = 0; k < 10000000; k++) {
			struct fi_cq_tagged_entry x;
			ssize_t r = fi_tsend(a->ep, sbuf[i], LEN, NULL, b->self,
					     (uint64_t)i, &sc[i]);

			if (r != -FI_EAGAIN) {
				CHECK(r);
				break;
			}
			r = fi_cq_read(a->txcq, &x, 0);
			r = fi_cq_read(b->cq, &x, 0);
			(void)r;
		}
	}
	/* Let them arrive before any receive is there. */
	for (k = 0; k < 2000; k++) {
		struct fi_cq_tagged_entry x;
		ssize_t r = fi_cq_read(b->cq, &x, 0);

		r = fi_cq_read(a->txcq, &x, 0);
		(void)r;
	}
	for (i = N - 1; i >= 0; i--)
		CHECK(fi_trecv(b->ep, rbuf[i], LEN, NULL, FI_ADDR_UNSPEC,
			       (uint64_t)i, 0, &rc[i]));
	/* Completions in any order: each once, each intact. */
	for (k = 0; k < N; k++) {
		struct fi_cq_tagged_entry e;
		time_t end = time(NULL) + 20;
		ssize_t r;

		while ((r = fi_cq_read(b->cq, &e, 1)) == -FI_EAGAIN &&
		       time(NULL) < end) {
			struct fi_cq_tagged_entry x;

			r = fi_cq_read(a->txcq, &x, 0);
			(void)r;
		}
		if (r != 1)
			FAIL("unexpected messages: %d of %d received", k, N);
		i = (int *)e.op_context - rc;
		if (i < 0 || i >= N || e.len != LEN ||
		    memcmp(sbuf[i], rbuf[i], LEN))
			FAIL("unexpected message %d: data or length wrong", i);
		rc[i] = -1;
	}
	for (k = 0; k < N; k++) {
		struct fi_cq_tagged_entry e;
		time_t end = time(NULL) + 20;
		ssize_t r;

		while ((r = fi_cq_read(a->txcq, &e, 1)) == -FI_EAGAIN &&
		       time(NULL) < end)
			;
		if (r != 1)
			FAIL("unexpected messages: %d of %d sends completed", k,
			     N);
	}
}

int main(int argc, char **argv)
{
	bool v6 = argc > 1 && !strcmp(argv[1], "-6");
	size_t sizes[] = { 0, 1, 4096, 70000, 1 << 20 };
	struct fi_av_attr aa = { .type = FI_AV_TABLE };
	struct fi_info *hints = fi_allocinfo(), *info;
	struct side a, b;
	size_t i;
	int ret;

	hints->ep_attr->type = FI_EP_RDM;
	hints->caps = FI_TAGGED | FI_SOURCE;
	hints->addr_format = v6 ? FI_SOCKADDR_IN6 : FI_SOCKADDR_IN;
	hints->fabric_attr->prov_name = strdup("tcp");
	ret = fi_getinfo(FI_VERSION(1, 17), v6 ? "::1" : "127.0.0.1", NULL,
			 FI_SOURCE, hints, &info);
	if (ret) {
		printf("no tcp endpoint over %s: %s\n", v6 ? "::1" : "127.0.0.1",
		       fi_strerror(-ret));
		return 77;
	}
	CHECK(fi_fabric(info->fabric_attr, &fabric, NULL));
	CHECK(fi_domain(fabric, info, &domain, NULL));
	CHECK(fi_av_open(domain, &aa, &av, NULL));
	open_side(info, &a);
	open_side(info, &b);
	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		xfer(&a, &b, sizes[i], (int)i);
		xfer(&b, &a, sizes[i], (int)i + 100);
		xfer(&a, &a, sizes[i], (int)i + 200);
	}
	unexpected(&a, &b);
	CHECK(fi_close(&a.ep->fid));
	CHECK(fi_close(&b.ep->fid));
	CHECK(fi_close(&a.cq->fid));
	CHECK(fi_close(&b.cq->fid));
	CHECK(fi_close(&a.txcq->fid));
	CHECK(fi_close(&b.txcq->fid));
	CHECK(fi_close(&av->fid));
	CHECK(fi_close(&domain->fid));
	CHECK(fi_close(&fabric->fid));
	fi_freeinfo(info);
	fi_freeinfo(hints);
	printf("tcp over %s: both ways and to itself, %zu sizes, data and "
	       "sources right\n", v6 ? "IPv6" : "IPv4",
	       sizeof(sizes) / sizeof(sizes[0]));
	return 0;
}
