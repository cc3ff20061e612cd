/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * tcp: a hostile or broken peer against an RDM endpoint.
 *
 * The target is a tcp FI_EP_RDM endpoint on 127.0.0.1 (FI_SOURCE, FI_RMA,
 * one registered region).  For each case a raw TCP socket connects to it
 * and sends frames built with the encoders of tcp_proto.h, some of them
 * broken on purpose (docs/tcp-protocol.md says what the target must do
 * with each).  After every case the target must still serve an honest
 * peer: a second tcp endpoint of this process sends it a tagged message,
 * which must arrive intact, and the target's CQ must hold nothing else.
 * The target must not leak the sockets of connections it dropped.
 *
 * Then the limits of docs/tcp-protocol.md ("What a peer can make an
 * endpoint hold"): headers announcing 2^63 and 2^64-1 bytes for every data
 * op close the connection with no allocation of that size (this program's
 * malloc watches the sizes asked for) and no growth of RSS; a peer that
 * reads nothing gets at most its share of the target's transmits (1000
 * sends of 1 MiB: the rest return -FI_EAGAIN, RSS stays), and the honest
 * peer's traffic goes on both ways meanwhile; 10000 connections that never
 * finish their handshake (half of them after half a HELLO) cost the target
 * at most FI_TCP_PENDING_MAX sockets while the honest peer's messages keep
 * flowing: their trip times are printed.
 *
 * Uses the public API, plus raw sockets on loopback.  Progress is manual:
 * reading the CQs drives both endpoints.  Exit 0 pass, 77 no tcp
 * provider, 1 fail.
 */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <malloc.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>

#include "tcp_proto.h"
#include "proc_status.h"

#define REGION 4096
#define MR_KEY 0x5eedULL
#define HONEST_TAG 0x484f4e0000ULL
#define CONN_TIMEOUT_MS 1500
#define WAIT_MS 5000
#define FLOOD 1000

struct node {
	struct fid_av *av;
	struct fid_cq *cq;
	struct fid_ep *ep;
	char addr[64];
	size_t addrlen;
};

static struct fi_info *info;
static struct fid_fabric *fabric;
static struct fid_domain *domain;
static struct fid_mr *mr;
static struct node tgt, hon;
static fi_addr_t tgt_from_hon;
static struct sockaddr_in tgt_sa;
static uint8_t region[REGION];
static int failures;
static const char *cur_case = "setup";
static int honest_seq;
static uint64_t honest_last_us; /* the last honest message's trip */

/* Pending handshakes the target keeps (FI_TCP_PENDING_MAX, set below). */
#define TCP_PENDING_CAP 1024

/* Send completions at the target for contexts in [stuck_lo, stuck_hi)
 * are counted, not kept (the half-open case). */
static char *stuck_lo, *stuck_hi;
static int stuck_done, stuck_err;

/* Completions seen at the target while driving progress. */
static struct fi_cq_tagged_entry tgt_seen[16];
static int tgt_nseen;
static struct fi_cq_err_entry tgt_err[16];
static int tgt_nerr;

static void fail(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "FAIL [%s]: ", cur_case);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	failures++;
}

#define CHECK(x)                                                              \
	do {                                                                  \
		int ret_ = (int)(x);                                          \
		if (ret_) {                                                   \
			fprintf(stderr, "%s:%d: %s: %s\n", __FILE__,          \
				__LINE__, #x, fi_strerror(-ret_));            \
			exit(1);                                              \
		}                                                             \
	} while (0)

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static uint64_t now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

/* ---- the endpoints ------------------------------------------------------ */

static void node_open(struct node *n)
{
	struct fi_cq_attr cq_attr = { .format = FI_CQ_FORMAT_TAGGED };
	struct fi_av_attr av_attr = { .type = FI_AV_MAP };

	CHECK(fi_cq_open(domain, &cq_attr, &n->cq, NULL));
	CHECK(fi_av_open(domain, &av_attr, &n->av, NULL));
	CHECK(fi_endpoint(domain, info, &n->ep, NULL));
	CHECK(fi_ep_bind(n->ep, &n->cq->fid, FI_TRANSMIT | FI_RECV));
	CHECK(fi_ep_bind(n->ep, &n->av->fid, 0));
	CHECK(fi_enable(n->ep));
	n->addrlen = sizeof(n->addr);
	CHECK(fi_getname(&n->ep->fid, n->addr, &n->addrlen));
}

static int setup(void)
{
	struct fi_info *hints = fi_allocinfo();
	int ret;

	hints->caps = FI_MSG | FI_TAGGED | FI_RMA | FI_SOURCE;
	hints->ep_attr->type = FI_EP_RDM;
	hints->addr_format = FI_SOCKADDR_IN;
	hints->domain_attr->data_progress = FI_PROGRESS_MANUAL;
	hints->domain_attr->control_progress = FI_PROGRESS_MANUAL;
	hints->fabric_attr->prov_name = strdup("tcp");
	ret = fi_getinfo(FI_VERSION(1, 17), "127.0.0.1", "0", FI_SOURCE, hints,
			 &info);
	if (ret) {
		/* Not every build takes manual progress: then automatic. */
		hints->domain_attr->data_progress = FI_PROGRESS_UNSPEC;
		hints->domain_attr->control_progress = FI_PROGRESS_UNSPEC;
		ret = fi_getinfo(FI_VERSION(1, 17), "127.0.0.1", "0",
				 FI_SOURCE, hints, &info);
	}
	fi_freeinfo(hints);
	if (ret) {
		fprintf(stderr, "no tcp provider on 127.0.0.1: %s\n",
			fi_strerror(-ret));
		return 77;
	}
	CHECK(fi_fabric(info->fabric_attr, &fabric, NULL));
	CHECK(fi_domain(fabric, info, &domain, NULL));
	CHECK(fi_mr_reg(domain, region, REGION,
			FI_REMOTE_READ | FI_REMOTE_WRITE, 0, MR_KEY, 0, &mr,
			NULL));
	node_open(&tgt);
	node_open(&hon);
	if (tgt.addrlen != sizeof(tgt_sa)) {
		fprintf(stderr, "target address: %zu bytes\n", tgt.addrlen);
		return 1;
	}
	memcpy(&tgt_sa, tgt.addr, sizeof(tgt_sa));
	if (fi_av_insert(hon.av, tgt.addr, 1, &tgt_from_hon, 0, NULL) != 1) {
		fprintf(stderr, "fi_av_insert failed\n");
		return 1;
	}
	return 0;
}

/* Drive both endpoints; what completes at the target is kept. */
static void progress(void)
{
	struct fi_cq_tagged_entry e;
	ssize_t n;

	n = fi_cq_read(tgt.cq, &e, 1);
	if (n == 1 && (char *)e.op_context >= stuck_lo &&
	    (char *)e.op_context < stuck_hi) {
		stuck_done++;
	} else if (n == 1) {
		if (tgt_nseen < 16)
			tgt_seen[tgt_nseen] = e;
		tgt_nseen++;
	} else if (n == -FI_EAVAIL) {
		struct fi_cq_err_entry err = { 0 };

		if (fi_cq_readerr(tgt.cq, &err, 0) == 1 &&
		    (char *)err.op_context >= stuck_lo &&
		    (char *)err.op_context < stuck_hi) {
			stuck_err++;
		} else if (err.op_context || err.err) {
			if (tgt_nerr < 16)
				tgt_err[tgt_nerr] = err;
			tgt_nerr++;
		}
	} else if (n != -FI_EAGAIN) {
		fail("fi_cq_read(target): %s", fi_strerror((int)-n));
	}
}

/* Progress for ms milliseconds. */
static void spin(int ms)
{
	uint64_t end = now_ms() + (uint64_t)ms;

	while (now_ms() < end) {
		progress();
		usleep(200);
	}
}

/* Nothing completed at the target that this case did not ask for. */
static void expect_quiet_target(void)
{
	int i;

	for (i = 0; i < tgt_nseen && i < 16; i++)
		fail("spurious completion at the target: flags %#llx len %zu "
		     "tag %#llx",
		     (unsigned long long)tgt_seen[i].flags, tgt_seen[i].len,
		     (unsigned long long)tgt_seen[i].tag);
	for (i = 0; i < tgt_nerr && i < 16; i++)
		fail("spurious error completion at the target: %s",
		     fi_strerror(tgt_err[i].err));
	tgt_nseen = tgt_nerr = 0;
}

/* The honest peer sends the target a tagged message: delivered intact,
 * and the target's CQ holds nothing else afterwards. */
static void honest_check(void)
{
	struct fi_cq_tagged_entry e;
	uint8_t sbuf[200], rbuf[256];
	uint64_t tag = HONEST_TAG | (uint64_t)++honest_seq;
	bool sent = false, got = false;
	uint64_t end, t0 = 0;
	ssize_t n;
	size_t i;
	int ret;

	expect_quiet_target();
	for (i = 0; i < sizeof(sbuf); i++)
		sbuf[i] = (uint8_t)(i * 7 + honest_seq);
	memset(rbuf, 0, sizeof(rbuf));
	CHECK(fi_trecv(tgt.ep, rbuf, sizeof(rbuf), NULL, FI_ADDR_UNSPEC, tag,
		       0, rbuf));
	end = now_ms() + WAIT_MS;
	while ((ret = (int)fi_tsend(hon.ep, sbuf, sizeof(sbuf), NULL,
				    tgt_from_hon, tag, sbuf)) == -FI_EAGAIN &&
	       now_ms() < end) {
		fi_cq_read(hon.cq, &e, 1);
		progress();
	}
	if (ret) {
		fail("honest fi_tsend: %s", fi_strerror(-ret));
		return;
	}
	t0 = now_us();
	while ((!sent || !got) && now_ms() < end) {
		n = fi_cq_read(hon.cq, &e, 1);
		if (n == 1 && e.op_context == sbuf) {
			sent = true;
		} else if (n == -FI_EAVAIL) {
			struct fi_cq_err_entry err = { 0 };

			fi_cq_readerr(hon.cq, &err, 0);
			fail("honest send failed: %s", fi_strerror(err.err));
			return;
		}
		progress();
		for (i = 0; i < (size_t)tgt_nseen && i < 16; i++) {
			if (tgt_seen[i].op_context != rbuf)
				continue;
			if (tgt_seen[i].tag != tag ||
			    tgt_seen[i].len != sizeof(sbuf) ||
			    memcmp(rbuf, sbuf, sizeof(sbuf)))
				fail("honest message damaged (len %zu)",
				     tgt_seen[i].len);
			got = true;
			honest_last_us = now_us() - t0;
			memmove(tgt_seen + i, tgt_seen + i + 1,
				(15 - i) * sizeof(*tgt_seen));
			tgt_nseen--;
			break;
		}
	}
	if (!sent || !got) {
		fail("honest message not %s within %d ms",
		     sent ? "delivered" : "sent", WAIT_MS);
		if (!got) {
			/* Take the receive back so it cannot match later. */
			fi_cancel(&tgt.ep->fid, rbuf);
			spin(50);
			tgt_nerr = 0;
		}
	}
	spin(20);
	expect_quiet_target();
	n = fi_cq_read(tgt.cq, &e, 1);
	if (n != -FI_EAGAIN)
		fail("target CQ not empty after the case: %zd", n);
	n = fi_cq_read(hon.cq, &e, 1);
	if (n != -FI_EAGAIN)
		fail("honest CQ not empty after the case: %zd", n);
}

/* ---- the raw peer ------------------------------------------------------- */

static int raw_connect(void)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	int one = 1;

	if (fd < 0 ||
	    connect(fd, (struct sockaddr *)&tgt_sa, sizeof(tgt_sa))) {
		perror("raw connect");
		exit(1);
	}
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return fd;
}

static void raw_send(int fd, const void *buf, size_t len)
{
	const char *p = buf;
	ssize_t n;

	while (len) {
		n = send(fd, p, len, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
			progress();
			continue;
		}
		if (n < 0) {
			fail("raw send: %s", strerror(errno));
			return;
		}
		p += n;
		len -= (size_t)n;
	}
}

/* Read exactly len bytes, driving progress meanwhile.  Returns 1, 0 when
 * the target closed the connection first, -1 on timeout. */
static int raw_recv(int fd, void *buf, size_t len, int ms)
{
	uint64_t end = now_ms() + (uint64_t)ms;
	char *p = buf;
	ssize_t n;

	while (len) {
		n = recv(fd, p, len, MSG_DONTWAIT);
		if (n > 0) {
			p += n;
			len -= (size_t)n;
			continue;
		}
		if (n == 0 || (errno != EAGAIN && errno != EINTR))
			return 0;
		if (now_ms() > end)
			return -1;
		progress();
		usleep(100);
	}
	return 1;
}

/* The target must close the connection (after whatever it still sends). */
static void expect_closed(int fd, const char *what)
{
	uint64_t end = now_ms() + WAIT_MS;
	char junk[256];
	ssize_t n;

	while (now_ms() < end) {
		n = recv(fd, junk, sizeof(junk), MSG_DONTWAIT);
		if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
			close(fd);
			return;
		}
		if (n > 0)
			continue;
		progress();
		usleep(100);
	}
	fail("%s: the target left the connection open", what);
	close(fd);
}

/* The target must keep the connection and send nothing. */
static void expect_open(int fd, const char *what)
{
	char c;
	ssize_t n;

	spin(30);
	n = recv(fd, &c, 1, MSG_DONTWAIT);
	if (n == 0 || (n < 0 && errno != EAGAIN))
		fail("%s: the target closed the connection", what);
	else if (n > 0)
		fail("%s: the target sent something unasked", what);
}

/* A version-1 HELLO_ACK with status, then the end of the connection
 * when status is not 0. */
static void expect_hello_ack(int fd, uint32_t status, const char *what)
{
	struct tcp_base b;
	struct tcp_hello_ack h;
	uint8_t buf[32];
	int r = raw_recv(fd, buf, sizeof(buf), WAIT_MS);

	if (r <= 0) {
		fail("%s: no HELLO_ACK (%s)", what,
		     r ? "timeout" : "connection closed");
		if (!r)
			close(fd);
		else
			expect_closed(fd, what);
		return;
	}
	memcpy(&b, buf, sizeof(b));
	memcpy(&h, buf + sizeof(b), sizeof(h));
	if (b.op != TCP_OP_HELLO_ACK || le16toh(b.hdr_len) != 32 ||
	    le64toh(b.payload_len) != 0 ||
	    le64toh(h.magic) != TCP_PROTO_MAGIC ||
	    le16toh(h.version) != TCP_PROTO_VERSION)
		fail("%s: malformed HELLO_ACK", what);
	else if (le32toh(h.status) != status)
		fail("%s: HELLO_ACK status %u, want %u", what,
		     le32toh(h.status), status);
	if (status)
		expect_closed(fd, what);
}

/* The address a raw peer claims: its own, as an RDM endpoint would. */
static void raw_addr(int fd, struct sockaddr_in *sa)
{
	socklen_t len = sizeof(*sa);

	getsockname(fd, (struct sockaddr *)sa, &len);
}

static size_t hello_frame(uint8_t *buf, int fd, uint16_t kind)
{
	struct sockaddr_in sa;
	size_t hl = tcp_put_hello(buf, kind, sizeof(sa), 0);

	raw_addr(fd, &sa);
	memcpy(buf + hl, &sa, sizeof(sa));
	return hl + sizeof(sa);
}

/* A connection past its handshake. */
static int raw_open(void)
{
	uint8_t buf[TCP_HDR_MAX + 64];
	int fd = raw_connect();

	raw_send(fd, buf, hello_frame(buf, fd, TCP_EPK_RDM));
	expect_hello_ack(fd, 0, "valid HELLO");
	return fd;
}

/* Read a RESP: 1 and its status and payload (up to cap bytes kept), or 0. */
static int read_resp(int fd, uint64_t tx_id, uint32_t *status, void *data,
		     size_t cap, size_t *len, const char *what)
{
	uint8_t buf[32], junk[512];
	struct tcp_base b;
	struct tcp_resp r;
	uint64_t plen, got = 0;

	if (raw_recv(fd, buf, sizeof(buf), WAIT_MS) != 1) {
		fail("%s: no RESP", what);
		return 0;
	}
	memcpy(&b, buf, sizeof(b));
	memcpy(&r, buf + sizeof(b), sizeof(r));
	plen = le64toh(b.payload_len);
	if (b.op != TCP_OP_RESP || le16toh(b.hdr_len) != 32 ||
	    le64toh(r.tx_id) != tx_id || plen > sizeof(junk)) {
		fail("%s: not the RESP expected (op %u, id %#llx)", what, b.op,
		     (unsigned long long)le64toh(r.tx_id));
		return 0;
	}
	if (raw_recv(fd, junk, plen, WAIT_MS) != 1) {
		fail("%s: RESP payload missing", what);
		return 0;
	}
	got = plen < cap ? plen : cap;
	if (data)
		memcpy(data, junk, got);
	*status = le32toh(r.status);
	*len = plen;
	return 1;
}

/* A READ_REQ of [addr, addr + len) under key: its RESP status, or -1. */
static long rma_read(int fd, uint64_t tx_id, uint64_t addr, uint64_t len,
		     uint64_t key, void *data, const char *what)
{
	struct fi_rma_iov iov = { addr, len, key };
	uint8_t buf[TCP_HDR_MAX];
	uint32_t status;
	size_t got;

	raw_send(fd, buf, tcp_put_rma(buf, TCP_OP_READ_REQ, 0, tx_id, 0, &iov,
				      1, 0));
	if (!read_resp(fd, tx_id, &status, data, len, &got, what))
		return -1;
	if (!status && got != len)
		fail("%s: RESP of %zu bytes, want %llu", what, got,
		     (unsigned long long)len);
	if (status && got)
		fail("%s: a failed RESP carries %zu bytes", what, got);
	return status;
}

static long rma_write(int fd, uint64_t tx_id, uint64_t addr,
		      const void *data, uint64_t len, uint64_t key,
		      const char *what)
{
	struct fi_rma_iov iov = { addr, len, key };
	uint8_t buf[TCP_HDR_MAX];
	uint32_t status;
	size_t got;

	raw_send(fd, buf, tcp_put_rma(buf, TCP_OP_WRITE, 0, tx_id, 0, &iov, 1,
				      len));
	raw_send(fd, data, len);
	if (!read_resp(fd, tx_id, &status, NULL, 0, &got, what))
		return -1;
	if (got)
		fail("%s: RESP to a WRITE carries %zu bytes", what, got);
	return status;
}

/* A good READ_REQ on fd works: the connection is still in step. */
static void expect_usable(int fd, const char *what)
{
	uint8_t data[64];
	char msg[128];
	int i;

	for (i = 0; i < 64; i++)
		region[100 + i] = (uint8_t)(i ^ 0x5a);
	snprintf(msg, sizeof(msg), "%s, then a valid READ_REQ", what);
	if (rma_read(fd, 0x600d, 100, 64, MR_KEY, data, msg) != 0)
		fail("%s: failed", msg);
	else if (memcmp(data, region + 100, 64))
		fail("%s: wrong data", msg);
}

/* Sockets this process holds (the target's included). */
static int count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	int n = 0;

	if (!d)
		return -1;
	while (readdir(d))
		n++;
	closedir(d);
	return n;
}

/* ---- the cases ---------------------------------------------------------- */

static void case_garbage(void)
{
	static const char junk[] =
		"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";
	uint8_t zeros[64] = { 0 };
	int fd = raw_connect();

	raw_send(fd, junk, sizeof(junk) - 1);
	expect_closed(fd, "HTTP request");
	fd = raw_connect();
	raw_send(fd, zeros, sizeof(zeros));
	expect_closed(fd, "zeros");
}

/* A HELLO made wrong by patch (offset into the frame, bytes). */
static void bad_hello(const char *what, size_t off, const void *val,
		      size_t len)
{
	uint8_t buf[TCP_HDR_MAX + 64];
	int fd = raw_connect();
	size_t n = hello_frame(buf, fd, TCP_EPK_RDM);

	memcpy(buf + off, val, len);
	raw_send(fd, buf, n);
	expect_hello_ack(fd, FI_EPROTO, what);
}

static void case_bad_hello(void)
{
	const size_t h = sizeof(struct tcp_base);
	uint64_t magic = htole64(0x3150435474666578ULL);
	uint16_t v2 = htole16(2), msg = htole16(TCP_EPK_MSG);
	uint16_t along = htole16(64);
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	struct sockaddr_in6 s6 = { .sin6_family = AF_INET6 };
	uint8_t buf[TCP_HDR_MAX + 64];
	size_t hl;
	int fd;

	bad_hello("HELLO with a wrong magic", h, &magic, sizeof(magic));
	bad_hello("HELLO of version 2", h + 8, &v2, sizeof(v2));
	bad_hello("HELLO from an MSG endpoint", h + 10, &msg, sizeof(msg));
	bad_hello("HELLO with addr_len past the payload", h + 12, &along,
		  sizeof(along));
	bad_hello("HELLO with an AF_UNIX address", 32, &sun, 16);
	/* An IPv6 family in 16 bytes: shorter than its sockaddr. */
	bad_hello("HELLO with a truncated AF_INET6 address", 32, &s6, 16);

	/* A whole IPv6 address, to an endpoint of FI_SOCKADDR_IN. */
	fd = raw_connect();
	s6.sin6_port = htons(9);
	s6.sin6_addr = in6addr_loopback;
	hl = tcp_put_hello(buf, TCP_EPK_RDM, sizeof(s6), 0);
	memcpy(buf + hl, &s6, sizeof(s6));
	raw_send(fd, buf, hl + sizeof(s6));
	expect_hello_ack(fd, FI_EPROTO, "HELLO with an AF_INET6 address");

	/* Contexts (scalable endpoints): a plain endpoint has only pair 0.
	 * A HELLO wanting another is refused; one from a pair of the
	 * peer's, wanting pair 0, is taken and the connection serves. */
	{
		struct sockaddr_in sa;

		fd = raw_connect();
		raw_addr(fd, &sa);
		hl = tcp_put_hello_ctx(buf, TCP_EPK_RDM, sizeof(sa), 0, 0, 5);
		memcpy(buf + hl, &sa, sizeof(sa));
		raw_send(fd, buf, hl + sizeof(sa));
		expect_hello_ack(fd, FI_ECONNREFUSED,
				 "HELLO wanting context 5 of a plain endpoint");
		fd = raw_connect();
		raw_addr(fd, &sa);
		hl = tcp_put_hello_ctx(buf, TCP_EPK_RDM, sizeof(sa), 0, 3, 0);
		memcpy(buf + hl, &sa, sizeof(sa));
		raw_send(fd, buf, hl + sizeof(sa));
		expect_hello_ack(fd, 0, "HELLO from context 3 of a peer");
		expect_usable(fd, "HELLO from context 3 of a peer");
		close(fd);
	}
}

/* A valid HELLO, then frame (len bytes): the target closes. */
static void bad_frame(const char *what, const void *frame, size_t len)
{
	int fd = raw_open();

	raw_send(fd, frame, len);
	expect_closed(fd, what);
}

static void case_bad_frames(void)
{
	uint8_t buf[TCP_HDR_MAX + 64];
	struct fi_rma_iov iov = { 0, 8, MR_KEY };
	size_t n;

	n = tcp_put_msg(buf, TCP_OP_TAGGED, 0, 1, 0, 0, 0);
	buf[4] = 48; /* hdr_len */
	bad_frame("TAGGED with hdr_len 48", buf, n);
	n = tcp_put_msg(buf, TCP_OP_TAGGED, 0, 1, 0, 0, 0);
	buf[4] = 16;
	bad_frame("TAGGED with hdr_len 16", buf, n);
	n = tcp_put_rma(buf, TCP_OP_READ_REQ, 0, 1, 0, &iov, 1, 0);
	buf[32] = 2; /* iov_count 2 in a header of one iov */
	bad_frame("READ_REQ whose hdr_len disagrees with iov_count", buf, n);

	n = tcp_put_msg(buf, TCP_OP_TAGGED, 0, 1, 0, 0, 0);
	buf[0] = 0x42;
	bad_frame("op 0x42", buf, n);
	buf[0] = 0;
	bad_frame("op 0", buf, n);
	n = tcp_put_hello(buf, TCP_EPK_RDM, 16, 0);
	memset(buf + n, 0, 16);
	bad_frame("a second HELLO", buf, n + 16);

	n = tcp_put_msg(buf, TCP_OP_TAGGED, 0, 1, 0, 0, 0);
	buf[1] = 1;
	bad_frame("rsvd0 set", buf, n);
	n = tcp_put_msg(buf, TCP_OP_TAGGED, 0, 1, 0, 0, 0);
	buf[6] = 0x80;
	bad_frame("rsvd1 set", buf, n);
	n = tcp_put_msg(buf, TCP_OP_TAGGED, 0x100, 1, 0, 0, 0);
	bad_frame("unknown flag", buf, n);
	n = tcp_put_resp(buf, TCP_OP_ACK, 1, 0, 0);
	buf[2] = TCP_F_ACK_REQ;
	bad_frame("ACK with ACK_REQ", buf, n);
	n = tcp_put_resp(buf, TCP_OP_RESP, 1, 0, 0);
	buf[28] = 1; /* tcp_resp.rsvd */
	bad_frame("RESP with its rsvd set", buf, n);
}

/* A receive takes a message whose sender went away before all of it
 * came: it fails (one error completion), it does not pass for a message. */
static void expect_cut_short(bool tagged, uint64_t tag, const char *what)
{
	static uint8_t rbuf[1 << 20];
	uint64_t end = now_ms() + WAIT_MS;

	if (tagged)
		CHECK(fi_trecv(tgt.ep, rbuf, sizeof(rbuf), NULL,
			       FI_ADDR_UNSPEC, tag, 0, rbuf));
	else
		CHECK(fi_recv(tgt.ep, rbuf, sizeof(rbuf), NULL,
			      FI_ADDR_UNSPEC, rbuf));
	while (!tgt_nseen && !tgt_nerr && now_ms() < end)
		progress();
	spin(20);
	if (tgt_nseen) {
		fail("%s: completed as a message of %zu bytes", what,
		     tgt_seen[0].len);
	} else if (!tgt_nerr) {
		fail("%s: its receive never completed", what);
		fi_cancel(&tgt.ep->fid, rbuf);
		spin(50);
	} else if (tgt_nerr > 1 || tgt_err[0].op_context != rbuf) {
		fail("%s: error completions for something else", what);
	}
	tgt_nseen = tgt_nerr = 0;
}

static void case_huge_msg(void)
{
	uint8_t buf[TCP_HDR_MAX];
	int fd = raw_open();

	/* 2^40 bytes announced (the largest message the target takes),
	 * 100 sent, then the sender goes away. */
	raw_send(fd, buf, tcp_put_msg(buf, TCP_OP_MSG, 0, 0, 0, 0,
				      (uint64_t)1 << 40));
	memset(buf, 0xee, sizeof(buf));
	raw_send(fd, buf, 100);
	spin(30);
	close(fd);
	spin(50);
	expect_cut_short(false, 0, "MSG of 2^40 bytes cut short");

	/* One byte more than that: refused as a frame. */
	fd = raw_open();
	raw_send(fd, buf, tcp_put_msg(buf, TCP_OP_TAGGED, 0, 7, 0, 0,
				      ((uint64_t)1 << 40) + 1));
	expect_closed(fd, "TAGGED of 2^40 + 1 bytes");
}

static void case_bad_rma(void)
{
	uint8_t data[64];
	long st;
	int fd = raw_open();

	memset(data, 0xab, sizeof(data));
	st = rma_write(fd, 11, 0, data, 8, 0xdeadbeef, "WRITE, unknown key");
	if (st == 0)
		fail("WRITE with an unknown key succeeded");
	expect_open(fd, "WRITE, unknown key");
	st = rma_read(fd, 12, 0, 8, 0xdeadbeef, data, "READ_REQ, unknown key");
	if (st == 0)
		fail("READ_REQ with an unknown key succeeded");
	expect_open(fd, "READ_REQ, unknown key");
	st = rma_read(fd, 13, REGION - 96, 200, MR_KEY, data,
		      "READ_REQ past the end of the region");
	if (st == 0)
		fail("READ_REQ past the end of the region succeeded");
	st = rma_read(fd, 14, (uint64_t)1 << 62, 8, MR_KEY, data,
		      "READ_REQ far past the region");
	if (st == 0)
		fail("READ_REQ far past the region succeeded");
	st = rma_write(fd, 15, REGION - 4, data, 8, MR_KEY,
		       "WRITE past the end of the region");
	if (st == 0)
		fail("WRITE past the end of the region succeeded");
	if (region[REGION - 4] == 0xab)
		fail("WRITE past the end of the region wrote");
	expect_usable(fd, "refused RMA");
	/* A good WRITE lands. */
	if (rma_write(fd, 16, 200, data, 64, MR_KEY, "valid WRITE") != 0 ||
	    memcmp(region + 200, data, 64))
		fail("valid WRITE after refused ones did not land");
	close(fd);
}

static void case_forged_answers(void)
{
	uint8_t buf[TCP_HDR_MAX + 100];
	size_t n;
	int fd = raw_open();

	/* Answers to requests the target never made: nothing completes.
	 * (Whether the connection then stays is the target's choice.) */
	raw_send(fd, buf, tcp_put_resp(buf, TCP_OP_RESP, 0x1234567890ULL, 0,
				       0));
	raw_send(fd, buf, tcp_put_resp(buf, TCP_OP_ACK, 0x77, 0, 0));
	raw_send(fd, buf, tcp_put_resp(buf, TCP_OP_ACK, 0, 0, 0));
	raw_send(fd, buf, tcp_put_resp(buf, TCP_OP_ACK, ~0ULL, 5, 0));
	n = tcp_put_resp(buf, TCP_OP_RESP, 0x4242, 0, 100);
	memset(buf + n, 0x11, 100);
	raw_send(fd, buf, n + 100);
	spin(50);
	expect_quiet_target();
	{
		char c;
		ssize_t r = recv(fd, &c, 1, MSG_DONTWAIT);

		if (r > 0)
			fail("forged answers: the target sent something");
		else if (r < 0 && errno == EAGAIN)
			expect_usable(fd, "forged answers");
	}
	close(fd);
}

static void case_truncated(void)
{
	uint8_t buf[TCP_HDR_MAX + 100];
	size_t n;
	int fd;

	/* Half a header. */
	fd = raw_open();
	n = tcp_put_msg(buf, TCP_OP_TAGGED, 0, 0xbad1, 0, 0, 50);
	raw_send(fd, buf, 20);
	spin(20);
	close(fd);
	/* A whole header, part of a small payload. */
	fd = raw_open();
	n = tcp_put_msg(buf, TCP_OP_TAGGED, 0, 0xbad2, 0, 0, 100);
	memset(buf + n, 0x33, 50);
	raw_send(fd, buf, n + 50);
	spin(20);
	close(fd);
	/* A large message, cut short after its header. */
	fd = raw_open();
	n = tcp_put_msg(buf, TCP_OP_TAGGED, 0, 0xbad3, 0, 0, 1 << 20);
	memset(buf + n, 0x44, 100);
	raw_send(fd, buf, n + 100);
	spin(20);
	close(fd);
	/* A READ_REQ missing its iov. */
	fd = raw_open();
	{
		struct fi_rma_iov iov = { 0, 8, MR_KEY };

		n = tcp_put_rma(buf, TCP_OP_READ_REQ, 0, 1, 0, &iov, 1, 0);
	}
	raw_send(fd, buf, n - 10);
	spin(20);
	close(fd);
	spin(50);
}

/* The cut-short large message (tag 0xbad3) is taken by a receive. */
static void case_truncated_taken(void)
{
	expect_cut_short(true, 0xbad3, "large TAGGED cut short");
}

static void case_silent(void)
{
	int fd = raw_connect();
	uint64_t t0 = now_ms();

	/* The endpoint serves others while this one says nothing. */
	honest_check();
	if (now_ms() - t0 > CONN_TIMEOUT_MS)
		fail("the target waited on a silent peer");
	expect_closed(fd, "a peer that never says HELLO");
	if (now_ms() - t0 < CONN_TIMEOUT_MS / 2)
		fail("a silent peer was dropped before its time");
}

static void case_flood(void)
{
	struct linger lg = { 1, 0 };
	int i, fd, before = count_fds(), after;
	size_t heap0 = mallinfo2().uordblks, heap1;

	for (i = 0; i < FLOOD; i++) {
		fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd < 0 || connect(fd, (struct sockaddr *)&tgt_sa,
				      sizeof(tgt_sa))) {
			fail("flood: connect %d: %s", i, strerror(errno));
			if (fd >= 0)
				close(fd);
			spin(10);
			continue;
		}
		/* Half end with a reset, half with a FIN. */
		if (i & 1)
			setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
		close(fd);
		if (i % 50 == 49)
			spin(1);
	}
	spin(300);
	after = count_fds();
	if (after > before + 2)
		fail("flood: the target holds %d more sockets", after - before);
	/* Nor memory: a closed connection is freed (the heap's count is 0
	 * where a sanitizer's allocator replaces it). */
	heap1 = mallinfo2().uordblks;
	if (heap0 && heap1 > heap0 + FLOOD * 64)
		fail("flood: the heap grew by %zu bytes over %d closed "
		     "connections", heap1 - heap0, FLOOD);
}

/* ---- giant announcements ------------------------------------------------- */

/*
 * The largest single allocation the process asked for since the last
 * reset: malloc, calloc and realloc of this program (and of the library it
 * loads) pass through here.  Not under AddressSanitizer, whose allocator
 * these would bypass.
 */
#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
#define WATCH_ALLOC 1
extern void *__libc_malloc(size_t size);
extern void *__libc_calloc(size_t n, size_t size);
extern void *__libc_realloc(void *p, size_t size);
static size_t alloc_max;

static void alloc_note(size_t size)
{
	if (size > __atomic_load_n(&alloc_max, __ATOMIC_RELAXED))
		__atomic_store_n(&alloc_max, size, __ATOMIC_RELAXED);
}

/* (Default visibility: the library's calls must find them.) */
#define WATCHED __attribute__((visibility("default")))

WATCHED void *malloc(size_t size)
{
	alloc_note(size);
	return __libc_malloc(size);
}

WATCHED void *calloc(size_t n, size_t size)
{
	alloc_note(size && n > SIZE_MAX / size ? SIZE_MAX : n * size);
	return __libc_calloc(n, size);
}

WATCHED void *realloc(void *p, size_t size)
{
	alloc_note(size);
	return __libc_realloc(p, size);
}
#endif

/* Resident memory of this process, in KiB (0 if unknown). */
static long rss_kib(const char *field)
{
	return proc_status_kib(field);
}

/* A header of frame (len bytes) announcing a payload it never sends: the
 * target closes the connection without trying to make room for it. */
static void giant_frame(const char *what, const void *frame, size_t len)
{
	int fd = raw_open();

	raw_send(fd, frame, len);
	expect_closed(fd, what);
}

static void case_giant(void)
{
	static const uint64_t lens[] = { (uint64_t)1 << 63, UINT64_MAX };
	static const char *const names[] = { "2^63", "2^64-1" };
	uint8_t buf[TCP_HDR_MAX];
	char what[96];
	long rss0 = rss_kib("VmRSS"), rss1;
	size_t i, n;

#ifdef WATCH_ALLOC
	__atomic_store_n(&alloc_max, 0, __ATOMIC_RELAXED);
#endif
	for (i = 0; i < 2; i++) {
		uint64_t L = lens[i];
		struct fi_rma_iov iov = { 0, L, MR_KEY };
		struct fi_rma_iov two[2] = { { 0, L, MR_KEY },
					     { 0, L, MR_KEY } };

#define GIANT(desc, expr)                                                     \
	do {                                                                  \
		snprintf(what, sizeof(what), "%s of %s bytes", desc,          \
			 names[i]);                                           \
		n = (expr);                                                   \
		giant_frame(what, buf, n);                                    \
	} while (0)
		GIANT("MSG", tcp_put_msg(buf, TCP_OP_MSG, 0, 0, 0, 0, L));
		GIANT("TAGGED", tcp_put_msg(buf, TCP_OP_TAGGED, 0, 9, 0, 0, L));
		/* What a rendezvous send with delivery-complete carries. */
		GIANT("TAGGED with ACK_REQ",
		      tcp_put_msg(buf, TCP_OP_TAGGED, TCP_F_ACK_REQ, 9, 0, 5,
				  L));
		GIANT("WRITE", tcp_put_rma(buf, TCP_OP_WRITE, 0, 1, 0, &iov, 1,
					   L));
		/* The lengths of two iovs that wrap 64 bits when added. */
		GIANT("WRITE of two iovs, each",
		      tcp_put_rma(buf, TCP_OP_WRITE, 0, 1, 0, two, 2, 16));
		GIANT("READ_REQ", tcp_put_rma(buf, TCP_OP_READ_REQ, 0, 2, 0,
					      &iov, 1, 0));
		GIANT("READ_REQ of two iovs, each",
		      tcp_put_rma(buf, TCP_OP_READ_REQ, 0, 2, 0, two, 2, 0));
		GIANT("ATOMIC payload",
		      tcp_put_atomic(buf, 0, 3, 0, MR_KEY, 0, FI_SUM, FI_UINT64,
				     1, L));
		GIANT("RESP", tcp_put_resp(buf, TCP_OP_RESP, 4, 0, L));
#undef GIANT
		/* Before the handshake: a HELLO announcing that much. */
		snprintf(what, sizeof(what), "HELLO of %s bytes", names[i]);
		L = htole64(L);
		bad_hello(what, 8, &L, sizeof(L));
	}
	rss1 = rss_kib("VmRSS");
	if (rss0 && rss1 > rss0 + 32 * 1024)
		fail("RSS grew by %ld KiB over the giant headers", rss1 - rss0);
#ifdef WATCH_ALLOC
	if (alloc_max > ((size_t)64 << 20))
		fail("an allocation of %zu bytes was attempted", alloc_max);
	printf("# giant headers: largest allocation %zu bytes, RSS %ld -> "
	       "%ld KiB\n", alloc_max, rss0, rss1);
#endif
}

/* ---- a peer that stops reading ------------------------------------------ */

#define HALF_OPEN_SENDS 1000
#define HALF_OPEN_LEN (1u << 20)

static fi_addr_t hon_from_tgt = FI_ADDR_NOTAVAIL;

/* The target sends the honest peer len bytes: they arrive intact. */
static void reverse_check(size_t len, const char *what)
{
	static uint8_t sbuf[HALF_OPEN_LEN], rbuf[HALF_OPEN_LEN];
	uint64_t tag = HONEST_TAG | 0xff000000ULL | (uint64_t)++honest_seq;
	uint64_t end = now_ms() + WAIT_MS;
	struct fi_cq_tagged_entry e;
	bool got = false, sent = false;
	size_t i;
	ssize_t n;
	int ret;

	for (i = 0; i < len; i++)
		sbuf[i] = (uint8_t)(i * 13 + honest_seq);
	memset(rbuf, 0, len);
	CHECK(fi_trecv(hon.ep, rbuf, len, NULL, FI_ADDR_UNSPEC, tag, 0, rbuf));
	while ((ret = (int)fi_tsend(tgt.ep, sbuf, len, NULL, hon_from_tgt, tag,
				    sbuf)) == -FI_EAGAIN &&
	       now_ms() < end) {
		progress();
		fi_cq_read(hon.cq, &e, 0);
	}
	if (ret) {
		fail("%s: the target's fi_tsend to the honest peer: %s", what,
		     fi_strerror(-ret));
		fi_cancel(&hon.ep->fid, rbuf);
		spin(50);
		fi_cq_read(hon.cq, &e, 1);
		return;
	}
	while ((!got || !sent) && now_ms() < end) {
		n = fi_cq_read(hon.cq, &e, 1);
		if (n == 1 && e.op_context == rbuf) {
			if (e.len != len || e.tag != tag || memcmp(rbuf, sbuf, len))
				fail("%s: damaged at the honest peer", what);
			got = true;
		} else if (n == -FI_EAVAIL) {
			struct fi_cq_err_entry err = { 0 };

			fi_cq_readerr(hon.cq, &err, 0);
			fail("%s: error at the honest peer: %s", what,
			     fi_strerror(err.err));
			got = true;
		}
		progress();
		for (i = 0; i < (size_t)tgt_nseen && i < 16; i++) {
			if (tgt_seen[i].op_context != sbuf)
				continue;
			sent = true;
			memmove(tgt_seen + i, tgt_seen + i + 1,
				(15 - i) * sizeof(*tgt_seen));
			tgt_nseen--;
			break;
		}
	}
	if (!got || !sent)
		fail("%s: not %s within %d ms", what,
		     got ? "completed at the target" : "delivered", WAIT_MS);
}

static void case_half_open(void)
{
	static uint8_t big[HALF_OPEN_LEN], small[64];
	static char ctx[HALF_OPEN_SENDS + 1];
	struct sockaddr_in sa;
	fi_addr_t stuck;
	long rss0, rss1, rss2;
	uint64_t end, quiet;
	int fd = raw_open(), accepted = 0, injected = 0, ret, i;

	raw_addr(fd, &sa);
	if (fi_av_insert(tgt.av, &sa, 1, &stuck, 0, NULL) != 1) {
		fail("fi_av_insert of the half-open peer");
		close(fd);
		return;
	}
	if (hon_from_tgt == FI_ADDR_NOTAVAIL &&
	    fi_av_insert(tgt.av, hon.addr, 1, &hon_from_tgt, 0, NULL) != 1) {
		fail("fi_av_insert of the honest peer at the target");
		close(fd);
		return;
	}
	stuck_lo = ctx;
	stuck_hi = ctx + sizeof(ctx);
	stuck_done = stuck_err = 0;
	memset(big, 0x5c, sizeof(big));
	rss0 = rss_kib("VmRSS");
	/* 1000 x 1 MiB to a peer that reads nothing: the target takes what
	 * its queue holds, then says -FI_EAGAIN (for 500 ms in a row). */
	quiet = now_ms() + 500;
	while (accepted < HALF_OPEN_SENDS && now_ms() < quiet) {
		ret = (int)fi_tsend(tgt.ep, big, sizeof(big), NULL, stuck, 0x51,
				    ctx + accepted);
		if (!ret) {
			accepted++;
			quiet = now_ms() + 500;
		} else if (ret == -FI_EAGAIN) {
			progress();
		} else {
			fail("fi_tsend to the half-open peer: %s",
			     fi_strerror(-ret));
			break;
		}
	}
	rss1 = rss_kib("VmRSS");
	if (accepted >= HALF_OPEN_SENDS)
		fail("all %d sends of 1 MiB taken by a peer that reads nothing",
		     accepted);
	/* Injects copy: past the queue's cap they must be refused too. */
	for (i = 0; i < 10000; i++) {
		ret = (int)fi_tinject(tgt.ep, small, sizeof(small), stuck, 0x52);
		if (!ret)
			injected++;
		else if (ret != -FI_EAGAIN)
			break;
		if (!(i & 63))
			progress();
	}
	rss2 = rss_kib("VmRSS");
	if (injected > 1024)
		fail("%d injects taken by a peer that reads nothing", injected);
	if (rss0 && (rss1 > rss0 + 64 * 1024 || rss2 > rss0 + 64 * 1024))
		fail("the sender's RSS grew from %ld to %ld / %ld KiB", rss0,
		     rss1, rss2);
	printf("# half-open peer: %d of %d sends of 1 MiB taken (%d done), "
	       "%d injects; RSS %ld -> %ld -> %ld KiB\n",
	       accepted, HALF_OPEN_SENDS, stuck_done, injected, rss0, rss1,
	       rss2);

	/* The other peers go on, both ways, eager and streamed. */
	honest_check();
	reverse_check(200, "small message to the honest peer");
	reverse_check(HALF_OPEN_LEN, "1 MiB to the honest peer");

	/* The peer goes away: every send taken completes, once. */
	close(fd);
	end = now_ms() + WAIT_MS;
	while (stuck_done + stuck_err < accepted && now_ms() < end)
		progress();
	spin(50);
	if (stuck_done + stuck_err != accepted)
		fail("%d sends taken, %d completed and %d failed", accepted,
		     stuck_done, stuck_err);
	stuck_lo = stuck_hi = NULL;
	fi_av_remove(tgt.av, &stuck, 1, 0);
}

/* ---- connections that never finish their handshake ---------------------- */

#define STALLED 10000
#define STALL_BATCH 250

static void case_stalled_handshakes(void)
{
	static int fds[STALLED];
	uint8_t hello[TCP_HDR_MAX + 64];
	uint64_t t, sum = 0, worst = 0, t0;
	int i, k, open = 0, rounds = 0, base = count_fds(), held, held_max = 0;
	uint64_t quiet_sum = 0;
	size_t hl;

	/* The honest peer's trip without an attack, to compare. */
	for (i = 0; i < 10; i++) {
		honest_check();
		quiet_sum += honest_last_us;
	}
	t0 = now_ms();
	for (i = 0; i < STALLED; i += STALL_BATCH) {
		for (k = i; k < i + STALL_BATCH; k++) {
			int fd = socket(AF_INET,
					SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC,
					0);

			fds[k] = fd;
			if (fd < 0) {
				fail("socket %d: %s", k, strerror(errno));
				break;
			}
			open++;
			if (connect(fd, (struct sockaddr *)&tgt_sa,
				    sizeof(tgt_sa)) &&
			    errno != EINPROGRESS) {
				fail("connect %d: %s", k, strerror(errno));
				continue;
			}
			/* Half of them send half a HELLO, and no more. */
			if (k & 1) {
				hl = hello_frame(hello, fd, TCP_EPK_RDM);
				(void)send(fd, hello, hl / 2,
					   MSG_NOSIGNAL | MSG_DONTWAIT);
			}
		}
		if (k < i + STALL_BATCH)
			break;
		/* The honest peer's messages flow meanwhile. */
		honest_check();
		t = honest_last_us;
		sum += t;
		rounds++;
		if (t > worst)
			worst = t;
		held = count_fds() - base - open;
		if (held > held_max)
			held_max = held;
	}
	printf("# %d stalled handshakes in %llu ms: honest message trip "
	       "%llu us mean (%llu us without the attack), %llu us worst over "
	       "%d rounds; the target held at most %d sockets more\n",
	       open, (unsigned long long)(now_ms() - t0),
	       (unsigned long long)(rounds ? sum / (uint64_t)rounds : 0),
	       (unsigned long long)(quiet_sum / 10), (unsigned long long)worst,
	       rounds, held_max);
	if (held_max > TCP_PENDING_CAP + 64)
		fail("the target held %d sockets of stalled handshakes "
		     "(cap %d)", held_max, TCP_PENDING_CAP);
	for (k = 0; k < open; k++)
		close(fds[k]);
	spin(300);
}

/* The same against an MSG passive endpoint: its FI_CONNREQ still comes. */
#define PEP_FLOOD 3000

static void pep_drive(struct fid_eq *eq, struct fi_eq_cm_entry *cm,
		      uint32_t *event)
{
	ssize_t n = fi_eq_read(eq, event, cm, sizeof(*cm) + 64, 0);

	if (n == -FI_EAVAIL) {
		struct fi_eq_err_entry err = { 0 };

		fi_eq_readerr(eq, &err, 0);
		fail("passive endpoint EQ error: %s", fi_strerror(err.err));
	} else if (n < 0 && n != -FI_EAGAIN) {
		fail("fi_eq_read: %s", fi_strerror((int)-n));
	} else if (n < 0) {
		*event = 0;
	}
}

static void case_pep_stalled(void)
{
	static int fds[PEP_FLOOD];
	struct fi_info *hints = fi_allocinfo(), *pinfo = NULL;
	struct fi_eq_attr eq_attr = { .wait_obj = FI_WAIT_NONE };
	struct {
		struct fi_eq_cm_entry e;
		uint8_t data[64];
	} cm;
	struct fid_pep *pep;
	struct fid_eq *eq;
	struct sockaddr_in sa;
	size_t salen = sizeof(sa);
	uint8_t buf[TCP_HDR_MAX + 64];
	uint32_t event = 0;
	uint64_t end;
	int i, k, open = 0, base, held, held_max = 0, fd;
	size_t hl;

	hints->ep_attr->type = FI_EP_MSG;
	hints->caps = FI_MSG;
	hints->addr_format = FI_SOCKADDR_IN;
	hints->fabric_attr->prov_name = strdup("tcp");
	if (fi_getinfo(FI_VERSION(1, 17), "127.0.0.1", "0", FI_SOURCE, hints,
		       &pinfo)) {
		fail("no tcp FI_EP_MSG on 127.0.0.1");
		fi_freeinfo(hints);
		return;
	}
	fi_freeinfo(hints);
	CHECK(fi_eq_open(fabric, &eq_attr, &eq, NULL));
	CHECK(fi_passive_ep(fabric, pinfo, &pep, NULL));
	CHECK(fi_pep_bind(pep, &eq->fid, 0));
	CHECK(fi_listen(pep));
	CHECK(fi_getname(&pep->fid, &sa, &salen));
	base = count_fds();
	for (i = 0; i < PEP_FLOOD; i += STALL_BATCH) {
		for (k = i; k < i + STALL_BATCH; k++) {
			fds[k] = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK |
							 SOCK_CLOEXEC, 0);
			if (fds[k] < 0) {
				fail("socket: %s", strerror(errno));
				break;
			}
			open++;
			if (connect(fds[k], (struct sockaddr *)&sa,
				    sizeof(sa)) && errno != EINPROGRESS)
				fail("connect: %s", strerror(errno));
		}
		if (k < i + STALL_BATCH)
			break;
		end = now_ms() + 50;
		while (now_ms() < end) {
			pep_drive(eq, &cm.e, &event);
			if (event)
				fail("an event from a connection that said "
				     "nothing: %u", event);
		}
		held = count_fds() - base - open;
		if (held > held_max)
			held_max = held;
	}
	/* An MSG HELLO during the flood: its FI_CONNREQ comes, with its
	 * data, and fi_reject answers it. */
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		fail("connect to the passive endpoint: %s", strerror(errno));
	} else {
		hl = tcp_put_hello(buf, TCP_EPK_MSG, 0, 5);
		memcpy(buf + hl, "hello", 5);
		raw_send(fd, buf, hl + 5);
		end = now_ms() + WAIT_MS;
		event = 0;
		while (event != FI_CONNREQ && now_ms() < end)
			pep_drive(eq, &cm.e, &event);
		if (event != FI_CONNREQ) {
			fail("no FI_CONNREQ within %d ms of the flood", WAIT_MS);
		} else {
			if (memcmp(cm.e.data, "hello", 5))
				fail("FI_CONNREQ without its data");
			CHECK(fi_reject(pep, cm.e.info->handle, NULL, 0));
			fi_freeinfo(cm.e.info);
			expect_hello_ack(fd, FI_ECONNREFUSED,
					 "MSG HELLO during a flood");
			fd = -1;
		}
		if (fd >= 0)
			close(fd);
	}
	printf("# %d stalled connections to a passive endpoint: it held at "
	       "most %d sockets more\n", open, held_max);
	if (held_max > TCP_PENDING_CAP + 64)
		fail("the passive endpoint held %d sockets (cap %d)", held_max,
		     TCP_PENDING_CAP);
	for (k = 0; k < open; k++)
		close(fds[k]);
	CHECK(fi_close(&pep->fid));
	CHECK(fi_close(&eq->fid));
	fi_freeinfo(pinfo);
}

struct bad_case {
	const char *name;
	void (*run)(void);
};

static const struct bad_case cases[] = {
	{ "garbage before HELLO", case_garbage },
	{ "malformed HELLO", case_bad_hello },
	{ "malformed frames", case_bad_frames },
	{ "MSG of 2^40 bytes, then close", case_huge_msg },
	{ "RMA the target refuses", case_bad_rma },
	{ "answers nobody asked for", case_forged_answers },
	{ "truncated frames, then close", case_truncated },
	{ "a truncated message taken by a receive", case_truncated_taken },
	{ "a peer that never sends", case_silent },
	{ "1000 connections opened and closed", case_flood },
	{ "headers announcing 2^63 and 2^64-1 bytes", case_giant },
	{ "a peer that stops reading", case_half_open },
	{ "10000 handshakes never finished", case_stalled_handshakes },
	{ "3000 handshakes never finished, passive endpoint",
	  case_pep_stalled },
};

int main(void)
{
	int ret, fds0;
	size_t i;

	setvbuf(stdout, NULL, _IONBF, 0);
	/* A silent peer is dropped after this; the default is longer. */
	setenv("FI_TCP_CONN_TIMEOUT", "1500", 0);
	setenv("FI_TCP_PENDING_MAX", "1024", 1);
	{
		/* The stalled-handshake case holds 10000 sockets. */
		struct rlimit rl;

		if (!getrlimit(RLIMIT_NOFILE, &rl) && rl.rlim_cur < rl.rlim_max) {
			rl.rlim_cur = rl.rlim_max;
			setrlimit(RLIMIT_NOFILE, &rl);
		}
	}
	ret = setup();
	if (ret)
		return ret;
	cur_case = "first contact";
	honest_check();
	fds0 = count_fds();
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int f = failures;

		cur_case = cases[i].name;
		cases[i].run();
		honest_check();
		if (count_fds() > fds0)
			fail("the target holds %d sockets more than before",
			     count_fds() - fds0);
		printf("%s %zu - %s\n", failures == f ? "ok" : "not ok",
		       i + 1, cases[i].name);
	}
	CHECK(fi_close(&tgt.ep->fid));
	CHECK(fi_close(&hon.ep->fid));
	CHECK(fi_close(&mr->fid));
	CHECK(fi_close(&tgt.av->fid));
	CHECK(fi_close(&hon.av->fid));
	CHECK(fi_close(&tgt.cq->fid));
	CHECK(fi_close(&hon.cq->fid));
	CHECK(fi_close(&domain->fid));
	CHECK(fi_close(&fabric->fid));
	fi_freeinfo(info);
	printf("%s: %d failure(s)\n", failures ? "FAIL" : "PASS", failures);
	return failures ? 1 : 0;
}
