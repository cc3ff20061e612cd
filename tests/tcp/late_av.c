/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Messages from a sender the receiver's AV does not name yet.
 *
 * Endpoint B knows A; A's AV is empty.  B sends tagged messages 0..3 to
 * A, which arrive unexpected and from an unknown source.  Then A inserts
 * B's address, B sends 4..7, and A posts eight receives directed to B
 * (FI_DIRECTED_RECV): they must take 0..7 in order, each once, and name B
 * as the source.  (An MPI job does this: a rank may send before its peer
 * has inserted its address, and MPI's ordering depends on the first
 * receive taking the first message.)  Each endpoint has its own AV.
 * Usage: late_av [-p PROVIDER] (default tcp).  Exit 0 pass, 77 when the
 * provider offers no such endpoint, 1 fail.
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

#define N 8
#define TAG 0x5eed

struct side {
	struct fid_ep *ep;
	struct fid_av *av;
	struct fid_cq *cq;
	char name[128];
	size_t namelen;
};

static struct fid_fabric *fabric;
static struct fid_domain *domain;

static void open_side(struct fi_info *info, struct side *s)
{
	struct fi_cq_attr ca = { .format = FI_CQ_FORMAT_TAGGED, .size = 64 };
	struct fi_av_attr aa = { .type = FI_AV_TABLE };

	CHECK(fi_endpoint(domain, info, &s->ep, NULL));
	CHECK(fi_av_open(domain, &aa, &s->av, NULL));
	CHECK(fi_cq_open(domain, &ca, &s->cq, NULL));
	CHECK(fi_ep_bind(s->ep, &s->av->fid, 0));
	CHECK(fi_ep_bind(s->ep, &s->cq->fid, FI_RECV | FI_TRANSMIT));
	CHECK(fi_enable(s->ep));
	s->namelen = sizeof(s->name);
	CHECK(fi_getname(&s->ep->fid, s->name, &s->namelen));
}

/* Read both CQs for a while: progress, collecting B's send completions. */
static int sent;
static void progress(struct side *a, struct side *b, int rounds)
{
	struct fi_cq_tagged_entry e;

	for (int i = 0; i < rounds; i++) {
		ssize_t r = fi_cq_read(a->cq, &e, 1);

		if (r == 1)
			FAIL("a completion at A before any receive was posted");
		r = fi_cq_read(b->cq, &e, 1);
		if (r == 1)
			sent++;
		else if (r != -FI_EAGAIN)
			FAIL("B's CQ: %zd (%s)", r, fi_strerror((int)-r));
	}
}

static void send_from_b(struct side *a, struct side *b, fi_addr_t to_a,
			int *vals, int first, int n)
{
	for (int i = first; i < first + n; i++) {
		ssize_t r;

		vals[i] = 1000 + i;
		while ((r = fi_tsend(b->ep, &vals[i], sizeof(int), NULL, to_a,
				     TAG, &vals[i])) == -FI_EAGAIN)
			progress(a, b, 1);
		CHECK(r);
	}
	/* until they are out and at A, unexpected there */
	time_t end = time(NULL) + 20;

	while (sent < first + n && time(NULL) < end)
		progress(a, b, 1);
	if (sent < first + n)
		FAIL("B's sends did not complete: %d of %d", sent, first + n);
	progress(a, b, 20000);
}

int main(int argc, char **argv)
{
	const char *prov = argc > 2 && !strcmp(argv[1], "-p") ? argv[2] : "tcp";
	struct fi_info *hints = fi_allocinfo(), *info;
	struct side a, b;
	fi_addr_t to_a, to_b;
	int vals[N], got[N];
	int ret;

	hints->ep_attr->type = FI_EP_RDM;
	hints->caps = FI_TAGGED | FI_DIRECTED_RECV | FI_SOURCE;
	hints->fabric_attr->prov_name = strdup(prov);
	if (!strcmp(prov, "tcp")) {
		hints->addr_format = FI_SOCKADDR_IN;
		ret = fi_getinfo(FI_VERSION(1, 17), "127.0.0.1", NULL,
				 FI_SOURCE, hints, &info);
	} else {
		ret = fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints, &info);
	}
	if (ret) {
		printf("no %s endpoint with FI_DIRECTED_RECV: %s\n", prov,
		       fi_strerror(-ret));
		return 77;
	}
	CHECK(fi_fabric(info->fabric_attr, &fabric, NULL));
	CHECK(fi_domain(fabric, info, &domain, NULL));
	open_side(info, &a);
	open_side(info, &b);
	if (fi_av_insert(b.av, a.name, 1, &to_a, 0, NULL) != 1)
		FAIL("fi_av_insert of A at B failed");

	send_from_b(&a, &b, to_a, vals, 0, N / 2);
	/* Only now A learns B's address. */
	if (fi_av_insert(a.av, b.name, 1, &to_b, 0, NULL) != 1)
		FAIL("fi_av_insert of B at A failed");
	send_from_b(&a, &b, to_a, vals, N / 2, N / 2);

	for (int i = 0; i < N; i++) {
		got[i] = -1;
		CHECK(fi_trecv(a.ep, &got[i], sizeof(int), NULL, to_b, TAG, 0,
			       &got[i]));
	}
	for (int k = 0; k < N; k++) {
		struct fi_cq_tagged_entry e;
		fi_addr_t src = FI_ADDR_NOTAVAIL;
		time_t end = time(NULL) + 20;
		ssize_t r;

		while ((r = fi_cq_readfrom(a.cq, &e, 1, &src)) == -FI_EAGAIN &&
		       time(NULL) < end)
			progress(&b, &b, 0);
		if (r != 1)
			FAIL("%d of %d messages received (%zd)", k, N, r);
		if (e.op_context != &got[k])
			FAIL("receive %d completed out of order",
			     (int)((int *)e.op_context - got));
		if (src != to_b)
			FAIL("message %d: source %llu, expected B (%llu)", k,
			     (unsigned long long)src, (unsigned long long)to_b);
	}
	for (int k = 0; k < N; k++)
		if (got[k] != 1000 + k)
			FAIL("receive %d took message %d: messages that came "
			     "before the AV named their sender were passed",
			     k, got[k] - 1000);
	CHECK(fi_close(&a.ep->fid));
	CHECK(fi_close(&b.ep->fid));
	CHECK(fi_close(&a.cq->fid));
	CHECK(fi_close(&b.cq->fid));
	CHECK(fi_close(&a.av->fid));
	CHECK(fi_close(&b.av->fid));
	CHECK(fi_close(&domain->fid));
	CHECK(fi_close(&fabric->fid));
	fi_freeinfo(info);
	fi_freeinfo(hints);
	printf("%s: %d messages from a sender named late, taken in order by "
	       "directed receives\n", prov, N);
	return 0;
}
