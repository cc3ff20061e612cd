/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * tcp: a connected (FI_EP_MSG) endpoint whose peer sends a malformed frame.
 *
 * A raw socket plays the client: it connects to a passive endpoint, says
 * HELLO with private data, and is accepted (FI_CONNREQ, fi_endpoint with
 * its handle, fi_accept).  Then it sends one good message, which must
 * arrive intact, and a frame with an unknown op.  The endpoint must close
 * that connection and say so: FI_SHUTDOWN on its EQ, and its receive still
 * posted completed with FI_ECANCELED; nothing else.  Then a second client
 * is accepted on the same passive endpoint, as if nothing happened.
 *
 * Uses the public API plus raw sockets on loopback; frames are built with
 * the encoders of tcp_proto.h.  Exit 0 pass, 77 no tcp, 1 fail.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>

#include "tcp_proto.h"

#include "tcp_fix.h"

static struct fi_info *info;
static struct fid_fabric *fabric;
static struct fid_domain *domain;
static struct fid_eq *eq;
static struct fid_pep *pep;
static struct sockaddr_in pep_addr;

static void send_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len) {
		ssize_t n = send(fd, p, len, MSG_NOSIGNAL);

		if (n <= 0)
			FAIL("send: %s", strerror(errno));
		p += n;
		len -= (size_t)n;
	}
}

/* Read len bytes within 5 s, driving the EQ (the endpoints' progress). */
static void recv_all(int fd, void *buf, size_t len)
{
	time_t end = time(NULL) + 5;
	char *p = buf;

	while (len && time(NULL) < end) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		uint32_t ev;
		char b[256];

		if (fi_eq_read(eq, &ev, b, sizeof(b), FI_PEEK) == -FI_EAGAIN)
			(void)0;
		if (poll(&pfd, 1, 1) == 1) {
			ssize_t n = recv(fd, p, len, 0);

			if (n <= 0)
				FAIL("recv: %s", n ? strerror(errno) : "closed");
			p += n;
			len -= (size_t)n;
		}
	}
	if (len)
		FAIL("nothing came back within 5 s");
}

/* The next EQ event within 5 s; -1 for an error entry. */
static int eq_wait(uint32_t *event, void *buf, size_t len)
{
	ssize_t n = fi_eq_sread(eq, event, buf, len, 5000, 0);

	if (n == -FI_EAVAIL)
		return -1;
	if (n < 0)
		FAIL("fi_eq_sread: %zd (%s)", n, fi_strerror((int)-n));
	return 0;
}

/* A raw client, accepted: returns its socket and the endpoint. */
static int accept_raw(struct fid_ep **ep, struct fid_cq *cq, void *rbuf,
		      size_t rlen, void *rctx)
{
	const char cm[] = "raw client";
	uint8_t hdr[TCP_HDR_MAX], ack[TCP_HDR_MAX];
	struct {
		struct fi_eq_cm_entry e;
		char data[256];
	} ev;
	uint32_t event;
	int fd;

	fd = socket(AF_INET, SOCK_STREAM, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&pep_addr,
			      sizeof(pep_addr)))
		FAIL("connect: %s", strerror(errno));
	send_all(fd, hdr, tcp_put_hello(hdr, TCP_EPK_MSG, 0, sizeof(cm)));
	send_all(fd, cm, sizeof(cm));
	if (eq_wait(&event, &ev, sizeof(ev)) || event != FI_CONNREQ)
		FAIL("no FI_CONNREQ");
	if (memcmp(ev.data, cm, sizeof(cm)))
		FAIL("FI_CONNREQ without the HELLO's private data");
	CHECK(fi_endpoint(domain, ev.e.info, ep, NULL));
	fi_freeinfo(ev.e.info);
	CHECK(fi_ep_bind(*ep, &eq->fid, 0));
	CHECK(fi_ep_bind(*ep, &cq->fid, FI_TRANSMIT | FI_RECV));
	CHECK(fi_enable(*ep));
	CHECK(fi_recv(*ep, rbuf, rlen, NULL, FI_ADDR_UNSPEC, rctx));
	CHECK(fi_accept(*ep, NULL, 0));
	if (eq_wait(&event, &ev, sizeof(ev)) || event != FI_CONNECTED ||
	    ev.e.fid != &(*ep)->fid)
		FAIL("no FI_CONNECTED for the accepted endpoint");
	/* HELLO_ACK: base + op header, no private data. */
	recv_all(fd, ack, sizeof(struct tcp_base) + sizeof(struct tcp_hello_ack));
	if (ack[0] != TCP_OP_HELLO_ACK)
		FAIL("the answer to HELLO is op %u", ack[0]);
	return fd;
}

/* Wait for the completion of ctx on cq; returns its error (0: success). */
static int cq_wait(struct fid_cq *cq, void *ctx, size_t *len)
{
	time_t end = time(NULL) + 5;
	struct fi_cq_msg_entry e;
	struct fi_cq_err_entry err;
	ssize_t n;

	while (time(NULL) < end) {
		n = fi_cq_read(cq, &e, 1);
		if (n == 1) {
			if (e.op_context != ctx)
				FAIL("completion for %p, not %p",
				     e.op_context, ctx);
			if (len)
				*len = e.len;
			return 0;
		}
		if (n == -FI_EAVAIL) {
			memset(&err, 0, sizeof(err));
			if (fi_cq_readerr(cq, &err, 0) != 1)
				FAIL("fi_cq_readerr failed");
			if (err.op_context != ctx)
				FAIL("error for %p, not %p", err.op_context,
				     ctx);
			return err.err;
		}
		if (n != -FI_EAGAIN)
			FAIL("fi_cq_read: %zd", n);
	}
	FAIL("no completion within 5 s");
}

int main(void)
{
	struct fi_info *hints = fi_allocinfo();
	struct fi_eq_attr ea = { .wait_obj = FI_WAIT_UNSPEC };
	struct fi_cq_attr ca = { .format = FI_CQ_FORMAT_MSG };
	uint8_t hdr[TCP_HDR_MAX], bad[TCP_HDR_MAX] = { 0 };
	char msg[] = "an honest message", rbuf[2][64], b[256];
	int rctx[2], fd, i, err;
	struct fid_cq *cq[2];
	struct fid_ep *ep[2];
	size_t len = sizeof(pep_addr), got;
	uint32_t event;

	hints->ep_attr->type = FI_EP_MSG;
	hints->caps = FI_MSG;
	hints->addr_format = FI_SOCKADDR_IN;
	hints->fabric_attr->prov_name = strdup("tcp");
	if (fi_getinfo(FI_VERSION(1, 17), "127.0.0.1", "0", FI_SOURCE, hints,
		       &info)) {
		printf("no tcp MSG endpoint on 127.0.0.1\n");
		return 77;
	}
	CHECK(fi_fabric(info->fabric_attr, &fabric, NULL));
	CHECK(fi_eq_open(fabric, &ea, &eq, NULL));
	CHECK(fi_domain(fabric, info, &domain, NULL));
	CHECK(fi_passive_ep(fabric, info, &pep, NULL));
	CHECK(fi_pep_bind(pep, &eq->fid, 0));
	CHECK(fi_listen(pep));
	CHECK(fi_getname(&pep->fid, &pep_addr, &len));
	for (i = 0; i < 2; i++)
		CHECK(fi_cq_open(domain, &ca, &cq[i], NULL));

	/* A good message, then a frame with an unknown op. */
	fd = accept_raw(&ep[0], cq[0], rbuf[0], sizeof(rbuf[0]), &rctx[0]);
	send_all(fd, hdr, tcp_put_msg(hdr, TCP_OP_MSG, 0, 0, 0, 0,
				      sizeof(msg)));
	send_all(fd, msg, sizeof(msg));
	err = cq_wait(cq[0], &rctx[0], &got);
	if (err || got != sizeof(msg) || memcmp(rbuf[0], msg, sizeof(msg)))
		FAIL("the good message did not arrive intact (err %d)", err);
	CHECK(fi_recv(ep[0], rbuf[0], sizeof(rbuf[0]), NULL, FI_ADDR_UNSPEC,
		      &rctx[0]));
	tcp_put_base(bad, 0x42, 0, sizeof(struct tcp_base), 0);
	send_all(fd, bad, sizeof(struct tcp_base));
	if (eq_wait(&event, b, sizeof(b)) || event != FI_SHUTDOWN ||
	    ((struct fi_eq_cm_entry *)b)->fid != &ep[0]->fid)
		FAIL("no FI_SHUTDOWN after a malformed frame");
	err = cq_wait(cq[0], &rctx[0], NULL);
	if (err != FI_ECANCELED)
		FAIL("the posted receive ended with %d, not FI_ECANCELED", err);
	if (fi_cq_read(cq[0], b, 1) != -FI_EAGAIN)
		FAIL("a completion too many");
	close(fd);
	CHECK(fi_close(&ep[0]->fid));

	/* The passive endpoint serves the next client as before. */
	fd = accept_raw(&ep[1], cq[1], rbuf[1], sizeof(rbuf[1]), &rctx[1]);
	send_all(fd, hdr, tcp_put_msg(hdr, TCP_OP_MSG, 0, 0, 0, 0,
				      sizeof(msg)));
	send_all(fd, msg, sizeof(msg));
	err = cq_wait(cq[1], &rctx[1], &got);
	if (err || got != sizeof(msg) || memcmp(rbuf[1], msg, sizeof(msg)))
		FAIL("the next client's message did not arrive (err %d)", err);
	close(fd);
	CHECK(fi_close(&ep[1]->fid));
	for (i = 0; i < 2; i++)
		CHECK(fi_close(&cq[i]->fid));
	CHECK(fi_close(&pep->fid));
	CHECK(fi_close(&domain->fid));
	CHECK(fi_close(&eq->fid));
	CHECK(fi_close(&fabric->fid));
	fi_freeinfo(info);
	fi_freeinfo(hints);
	printf("MSG endpoint: a malformed frame gave FI_SHUTDOWN and a "
	       "canceled receive; the next client was served\n");
	return 0;
}
