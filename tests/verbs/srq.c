/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Shared receive contexts on verbs MSG endpoints, in one process: a
 * passive endpoint accepts two connections whose endpoints share one
 * fi_srx_context, each with its own CQ.
 *
 *  1. Messages from both peers land in buffers posted to the srx; each
 *     completion is on the CQ of the endpoint that received it, with a
 *     context that was posted, and the data is the sender's.
 *  2. A message larger than the next posted buffer: FI_ETRUNC with that
 *     receive's context.
 *  3. fi_close of the srx while endpoints use it: -FI_EBUSY.  Once they
 *     are closed, receives still posted are reported FI_ECANCELED, each
 *     once, with their contexts.
 *
 * Usage: srq IP (FI_VERBS_DEVICE_NAME picks the device).  Exit 0 pass,
 * 77 skip, 1 fail.
 */
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <netinet/in.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_eq.h>

#define NMSG 3	      /* per peer */
#define BUF 64	      /* bytes of a receive buffer */
#define NCANCEL 3

static int failures;

static void fail(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	printf("FAIL: ");
	vprintf(fmt, ap);
	printf("\n");
	va_end(ap);
	failures++;
}

#define CHECK(call)                                                        \
	do {                                                               \
		int ret_ = (int)(call);                                    \
		if (ret_) {                                                \
			printf("FAIL: %s: %s (%d)\n", #call,               \
			       fi_strerror(-ret_), ret_);                  \
			exit(1);                                           \
		}                                                          \
	} while (0)

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

struct cm_ev {
	uint32_t event;
	struct fi_eq_cm_entry entry;
	char data[64];
};

/*
 * Next event of eq (10 s at most); exits on an error event.  other: the
 * EQ of the other side, peeked meanwhile so that its connection
 * management moves too.
 */
static void eq_next(struct fid_eq *eq, struct fid_eq *other,
		    struct cm_ev *ev)
{
	double end = now() + 10;
	struct cm_ev peek;
	ssize_t n;

	memset(ev, 0, sizeof(*ev));
	while (now() < end) {
		fi_eq_read(other, &peek.event, &peek.entry,
			   sizeof(peek.entry) + sizeof(peek.data), FI_PEEK);
		n = fi_eq_read(eq, &ev->event, &ev->entry,
			       sizeof(ev->entry) + sizeof(ev->data), 0);
		if (n > 0)
			return;
		if (n == -FI_EAVAIL) {
			struct fi_eq_err_entry err = { 0 };

			fi_eq_readerr(eq, &err, 0);
			printf("FAIL: EQ error %d (%s)\n", err.err,
			       fi_strerror(err.err));
			exit(1);
		}
		if (n != -FI_EAGAIN) {
			printf("FAIL: fi_eq_read: %zd\n", n);
			exit(1);
		}
	}
	printf("FAIL: no EQ event in 10 s\n");
	exit(1);
}

/* One entry of cq, success or error, within 10 s; 1 if an entry, 0 if
 * none came (wait false: only what is there now). */
static int cq_next(struct fid_cq *cq, struct fi_cq_data_entry *e,
		   struct fi_cq_err_entry *err, bool wait)
{
	double end = now() + 10;
	ssize_t n;

	do {
		n = fi_cq_read(cq, e, 1);
		if (n == 1) {
			err->err = 0;
			return 1;
		}
		if (n == -FI_EAVAIL) {
			memset(err, 0, sizeof(*err));
			if (fi_cq_readerr(cq, err, 0) != 1) {
				printf("FAIL: fi_cq_readerr\n");
				exit(1);
			}
			return 1;
		}
		if (n != -FI_EAGAIN) {
			printf("FAIL: fi_cq_read: %zd\n", n);
			exit(1);
		}
	} while (wait && now() < end);
	return 0;
}

int main(int argc, char **argv)
{
	struct fi_info *hints, *info, *cinfo;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_eq *seq, *ceq;
	struct fid_pep *pep;
	struct fid_ep *srx, *sep[2] = { 0 }, *cep[2];
	struct fid_cq *scq[2], *ccq[2];
	struct fid_mr *mr;
	struct fi_cq_attr cq_attr = { .format = FI_CQ_FORMAT_DATA,
				      .size = 64 };
	struct fi_eq_attr eq_attr = { .wait_obj = FI_WAIT_NONE };
	struct fi_rx_attr rx_attr = { 0 };
	struct sockaddr_in sa;
	size_t salen = sizeof(sa);
	char port[16];
	static char rbuf[NMSG * 2 + 1 + NCANCEL][BUF];
	static char sbuf[2][NMSG + 1][BUF];
	int rctx[NMSG * 2 + 1 + NCANCEL];
	bool seen[NMSG * 2 + 1 + NCANCEL] = { 0 };
	struct fi_cq_data_entry e;
	struct fi_cq_err_entry err;
	struct cm_ev ev;
	void *desc;
	int i, j, got, k, nconn, canceled;
	int order[2]; /* sep[order[p]] is the server side of peer p */

	if (argc != 2) {
		fprintf(stderr, "usage: %s IP\n", argv[0]);
		return 2;
	}
	hints = fi_allocinfo();
	hints->ep_attr->type = FI_EP_MSG;
	hints->ep_attr->rx_ctx_cnt = FI_SHARED_CONTEXT;
	hints->caps = FI_MSG;
	hints->mode = ~0ULL;
	hints->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR |
				      FI_MR_ALLOCATED | FI_MR_PROV_KEY;
	hints->fabric_attr->prov_name = strdup("verbs");
	if (fi_getinfo(FI_VERSION(1, 17), argv[1], NULL, FI_SOURCE, hints,
		       &info)) {
		printf("SKIP: no verbs MSG info with shared receive contexts on %s\n",
		       argv[1]);
		return 77;
	}
	if (info->ep_attr->rx_ctx_cnt != FI_SHARED_CONTEXT ||
	    info->domain_attr->max_ep_srx_ctx < 1)
		fail("fi_info: rx_ctx_cnt %zu, max_ep_srx_ctx %zu",
		     info->ep_attr->rx_ctx_cnt,
		     info->domain_attr->max_ep_srx_ctx);
	printf("domain %s\n", info->domain_attr->name);
	CHECK(fi_fabric(info->fabric_attr, &fabric, NULL));
	CHECK(fi_domain(fabric, info, &domain, NULL));
	CHECK(fi_eq_open(fabric, &eq_attr, &seq, NULL));
	CHECK(fi_eq_open(fabric, &eq_attr, &ceq, NULL));
	CHECK(fi_mr_reg(domain, rbuf, sizeof(rbuf) + 0, FI_RECV | FI_SEND, 0,
			0, 0, &mr, NULL));
	desc = fi_mr_desc(mr);

	rx_attr.size = 16;
	CHECK(fi_srx_context(domain, &rx_attr, &srx, NULL));
	for (i = 0; i < 2; i++) {
		CHECK(fi_cq_open(domain, &cq_attr, &scq[i], NULL));
		CHECK(fi_cq_open(domain, &cq_attr, &ccq[i], NULL));
	}

	CHECK(fi_passive_ep(fabric, info, &pep, NULL));
	CHECK(fi_pep_bind(pep, &seq->fid, 0));
	CHECK(fi_listen(pep));
	CHECK(fi_getname(&pep->fid, &sa, &salen));
	snprintf(port, sizeof(port), "%u", ntohs(sa.sin_port));

	hints->ep_attr->rx_ctx_cnt = 0;
	CHECK(fi_getinfo(FI_VERSION(1, 17), argv[1], port, 0, hints, &cinfo));
	for (i = 0; i < 2; i++) {
		char who = (char)('A' + i);

		CHECK(fi_endpoint(domain, cinfo, &cep[i], NULL));
		CHECK(fi_ep_bind(cep[i], &ceq->fid, 0));
		CHECK(fi_ep_bind(cep[i], &ccq[i]->fid, FI_TRANSMIT | FI_RECV));
		CHECK(fi_enable(cep[i]));
		CHECK(fi_connect(cep[i], cinfo->dest_addr, &who, 1));
	}
	/* Server side: the connection requests in whatever order, and the
	 * first connection's FI_CONNECTED may come before the second
	 * request. */
	for (nconn = 0, k = 0; nconn < 2;) {
		struct fid_ep *ep;
		int p;

		eq_next(seq, ceq, &ev);
		if (ev.event == FI_CONNECTED && k < nconn) {
			k++;
			continue;
		}
		if (ev.event != FI_CONNREQ) {
			printf("FAIL: server event %u, not FI_CONNREQ\n",
			       ev.event);
			return 1;
		}
		p = ev.data[0] - 'A';
		if (p < 0 || p > 1) {
			printf("FAIL: connection request data '%c'\n",
			       ev.data[0]);
			return 1;
		}
		CHECK(fi_endpoint(domain, ev.entry.info, &ep, NULL));
		fi_freeinfo(ev.entry.info);
		CHECK(fi_ep_bind(ep, &seq->fid, 0));
		CHECK(fi_ep_bind(ep, &scq[nconn]->fid, FI_TRANSMIT | FI_RECV));
		CHECK(fi_ep_bind(ep, &srx->fid, 0));
		CHECK(fi_enable(ep));
		if (fi_recv(ep, rbuf[0], BUF, desc, 0, NULL) != -FI_EOPNOTSUPP)
			fail("fi_recv on an endpoint bound to an srx");
		CHECK(fi_accept(ep, NULL, 0));
		sep[nconn] = ep;
		order[p] = nconn;
		nconn++;
	}
	for (i = 0; i < 2; i++) {
		if (k < 2) {
			eq_next(seq, ceq, &ev);
			if (ev.event != FI_CONNECTED)
				fail("server event %u, not FI_CONNECTED",
				     ev.event);
			k++;
		}
		eq_next(ceq, seq, &ev);
		if (ev.event != FI_CONNECTED)
			fail("client event %u, not FI_CONNECTED", ev.event);
	}
	if (fi_close(&srx->fid) != -FI_EBUSY)
		fail("fi_close of an srx in use is not -FI_EBUSY");

	/* 1. Both peers' messages into the shared receives. */
	for (i = 0; i < NMSG * 2; i++)
		CHECK(fi_recv(srx, rbuf[i], BUF, desc, 0, &rctx[i]));
	for (j = 0; j < NMSG; j++)
		for (i = 0; i < 2; i++) {
			snprintf(sbuf[i][j], BUF, "peer %c message %d",
				 'A' + i, j);
			CHECK(fi_inject(cep[i], sbuf[i][j],
					strlen(sbuf[i][j]) + 1, 0));
		}
	for (got = 0; got < NMSG * 2;) {
		int any = 0;

		for (k = 0; k < 2; k++) { /* k: peer */
			int s = order[k];

			for (i = 0; i < 2; i++)
				cq_next(ccq[i], &e, &err, false);
			if (!cq_next(scq[s], &e, &err, false))
				continue;
			any = 1;
			got++;
			if (err.err) {
				fail("peer %c: error completion %d",
				     'A' + k, err.err);
				continue;
			}
			j = (int)((int *)e.op_context - rctx);
			if (j < 0 || j >= NMSG * 2 || seen[j]) {
				fail("peer %c: context %p not one posted once",
				     'A' + k, e.op_context);
				continue;
			}
			seen[j] = true;
			if (!(e.flags & FI_RECV) || e.buf != rbuf[j])
				fail("flags %#llx buf %p (want %p)",
				     (unsigned long long)e.flags, e.buf,
				     (void *)rbuf[j]);
			if (strncmp(rbuf[j], "peer ", 5) ||
			    rbuf[j][5] != 'A' + k ||
			    e.len != strlen(rbuf[j]) + 1)
				fail("peer %c: on its CQ came \"%.20s\" (%zu B)",
				     'A' + k, rbuf[j], e.len);
		}
		if (!any) {
			static double end;

			if (!end)
				end = now() + 10;
			if (now() > end) {
				fail("%d of %d messages arrived", got,
				     NMSG * 2);
				break;
			}
		}
	}
	/* In order per peer: the data of each peer's messages. */
	for (k = 0; k < 2; k++) {
		int n = 0;

		for (j = 0; j < NMSG * 2; j++)
			if (rbuf[j][5] == 'A' + k) {
				char want[BUF];

				snprintf(want, sizeof(want),
					 "peer %c message %d", 'A' + k, n++);
				if (strcmp(rbuf[j], want))
					fail("\"%s\", want \"%s\"", rbuf[j],
					     want);
			}
		if (n != NMSG)
			fail("peer %c: %d messages", 'A' + k, n);
	}
	if (!failures)
		printf("ok: %d messages from two peers through one srx\n",
		       NMSG * 2);

	/* 2. Truncation: 8 bytes posted, 32 sent by peer B. */
	i = NMSG * 2;
	CHECK(fi_recv(srx, rbuf[i], 8, desc, 0, &rctx[i]));
	memset(sbuf[1][NMSG], 'x', 32);
	CHECK(fi_inject(cep[1], sbuf[1][NMSG], 32, 0));
	for (;;) {
		cq_next(ccq[1], &e, &err, false);
		if (cq_next(scq[order[1]], &e, &err, false))
			break;
	}
	if (err.op_context != &rctx[i])
		fail("too small a buffer: context %p, want %p", err.op_context,
		     (void *)&rctx[i]);
	else if (err.err == FI_ETRUNC)
		printf("ok: truncation reported FI_ETRUNC\n");
	else if (err.err == FI_EIO && err.prov_errno == 2 /* LOC_QP_OP */ &&
		 !strncmp(info->domain_attr->name, "rxe", 3))
		/* Soft-RoCE (rxe) of some kernels completes a receive too small
		 * for its message as a local QP operation error, not a
		 * length error: nothing says it was a truncation. */
		printf("ok: truncation reported FI_EIO (rxe: IBV_WC_LOC_QP_OP_ERR)\n");
	else
		fail("too small a buffer: err %d (%s) prov_errno %d, want FI_ETRUNC",
		     err.err, fi_strerror(err.err), err.prov_errno);
	seen[i] = true;

	/* 3. Receives still posted when the srx closes. */
	for (i = NMSG * 2 + 1; i < NMSG * 2 + 1 + NCANCEL; i++)
		CHECK(fi_recv(srx, rbuf[i], BUF, desc, 0, &rctx[i]));
	for (i = 0; i < 2; i++) {
		CHECK(fi_close(&cep[i]->fid));
		CHECK(fi_close(&sep[i]->fid));
	}
	CHECK(fi_close(&srx->fid));
	canceled = 0;
	for (i = 0; i < 2; i++)
		while (cq_next(scq[i], &e, &err, false)) {
			if (!err.err)
				continue;
			j = (int)((int *)err.op_context - rctx);
			if (err.err != FI_ECANCELED || j < NMSG * 2 + 1 ||
			    j >= NMSG * 2 + 1 + NCANCEL || seen[j]) {
				fail("at close: err %d context %p", err.err,
				     err.op_context);
				continue;
			}
			if (!(err.flags & FI_RECV))
				fail("canceled receive without FI_RECV");
			seen[j] = true;
			canceled++;
		}
	if (canceled != NCANCEL)
		fail("%d of %d posted receives reported FI_ECANCELED",
		     canceled, NCANCEL);
	else
		printf("ok: %d receives FI_ECANCELED at close\n", NCANCEL);

	for (i = 0; i < 2; i++) {
		CHECK(fi_close(&scq[i]->fid));
		CHECK(fi_close(&ccq[i]->fid));
	}
	CHECK(fi_close(&pep->fid));
	CHECK(fi_close(&mr->fid));
	CHECK(fi_close(&seq->fid));
	CHECK(fi_close(&ceq->fid));
	CHECK(fi_close(&domain->fid));
	CHECK(fi_close(&fabric->fid));
	fi_freeinfo(cinfo);
	fi_freeinfo(info);
	fi_freeinfo(hints);
	printf("%s\n", failures ? "FAIL" : "PASS");
	return failures ? 1 : 0;
}
