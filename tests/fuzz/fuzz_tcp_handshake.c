/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * libFuzzer harness for tcp's connection handshake (docs/tcp-protocol.md,
 * "Connection set-up").  The first input byte picks the side and kind of
 * the endpoint; the rest is what arrives on the connection.  The bytes go
 * the way tcp_conn_read takes them: tcp_frame_parse with the ops the side
 * allows before the handshake, the payload staged whole, then the verdict
 * the endpoint acts on (tcp_hello_check for an acceptor, the status for
 * the connecting side); once accepted, what follows is parsed as data
 * frames.  Every buffer handed to the code under test is a heap copy of
 * exactly the bytes it may read, so AddressSanitizer sees a read past
 * them.  Aborts when:
 *  - a refusal has no reason, or a frame other than the one handshake
 *    frame the side allows gets past the parser;
 *  - an accepted RDM HELLO yields an address that is not an IPv4 or IPv6
 *    sockaddr covered by the bytes sent, or differs from them;
 *  - an accepted MSG HELLO's connection data does not fit what the
 *    endpoint keeps (TCP_CM_DATA_MAX), or address and data do not add up
 *    to the payload;
 *  - a HELLO_ACK is taken as accepted with a status, or as refused
 *    without one, or carries more connection data than allowed;
 *  - a HELLO or HELLO_ACK passes after the handshake.
 *
 * Built with -DFUZZ_SEEDS, it writes a starting corpus into the directory
 * it is given; with tests/fuzz/fuzz_replay.c, it replays files.
 */
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <rdma/fi_errno.h>

#include "fuzz_util.h"
#include "tcp_proto.h"
#include "weft/util_ifaddr.h"

/* The sides, as the first input byte (modulo 4) names them. */
enum side { RDM_ACCEPT, MSG_ACCEPT, RDM_CONNECT, MSG_CONNECT, SIDES };

#define MAX_PAYLOAD (1u << 20)

static void fail(const char *what, enum side side, const char *why)
{
	fprintf(stderr, "fuzz_tcp_handshake: side %d: %s (%s)\n", (int)side,
		what, why ? why : "-");
	abort();
}

static ssize_t parse(const uint8_t *p, size_t n, uint32_t ops,
		     struct tcp_frame *f, const char **why)
{
	struct tcp_proto_limits lim = { MAX_PAYLOAD, ops };
	uint8_t *c = fuzz_exact(p, n);
	ssize_t r;

	*why = NULL;
	r = tcp_frame_parse(c, n, &lim, f, why);
	free(c);
	return r;
}

static void accepted_hello(enum side side, const struct tcp_frame *f,
			   const uint8_t *payload,
			   const struct sockaddr_storage *sa)
{
	size_t alen = f->hello.addr_len, want;

	if (f->hello.addr_len + (uint64_t)f->hello.cm_len != f->payload_len)
		fail("address and data do not make the payload", side, NULL);
	if (f->hello.cm_len > TCP_CM_DATA_MAX)
		fail("connection data larger than kept", side, NULL);
	if (side == MSG_ACCEPT) {
		if (f->hello.ep_kind != TCP_EPK_MSG)
			fail("MSG acceptor took another kind", side, NULL);
		return;
	}
	if (f->hello.ep_kind != TCP_EPK_RDM)
		fail("RDM acceptor took another kind", side, NULL);
	if (sa->ss_family != AF_INET && sa->ss_family != AF_INET6)
		fail("accepted peer has no IP address", side, NULL);
	want = util_sockaddr_len(sa);
	if (alen < want || alen > sizeof(*sa))
		fail("accepted address not covered by its bytes", side, NULL);
	if (memcmp(sa, payload, want))
		fail("accepted address is not the one sent", side, NULL);
}

/* After the handshake: data frames only, each payload skipped. */
static void data_frames(enum side side, const uint8_t *p, size_t n)
{
	struct tcp_frame f;
	const char *why;
	ssize_t r;

	while (n) {
		r = parse(p, n, TCP_OPS_DATA, &f, &why);
		if (r < 0) {
			if (!why)
				fail("data frame refused without reason", side,
				     NULL);
			return;
		}
		if (r == 0)
			return;
		if (f.op == TCP_OP_HELLO || f.op == TCP_OP_HELLO_ACK)
			fail("handshake frame after the handshake", side, NULL);
		if ((size_t)r > n)
			fail("header longer than the input", side, NULL);
		p += r;
		n -= (size_t)r;
		if (f.payload_len >= n)
			return;
		p += f.payload_len;
		n -= (size_t)f.payload_len;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sockaddr_storage sa;
	struct tcp_frame f;
	enum side side;
	const char *why;
	uint8_t *payload;
	uint32_t ops;
	ssize_t r;
	int ok;

	if (!size)
		return 0;
	side = (enum side)(data[0] % SIDES);
	data++;
	size--;
	/* tcp_conn.c's allowed_ops before the handshake: an acceptor takes
	 * HELLO only, a connecting side HELLO_ACK only. */
	ops = side == RDM_ACCEPT || side == MSG_ACCEPT ?
		      TCP_OPBIT(TCP_OP_HELLO) :
		      TCP_OPBIT(TCP_OP_HELLO_ACK);
	r = parse(data, size, ops, &f, &why);
	if (r < 0) {
		if (!why)
			fail("frame refused without reason", side, NULL);
		return 0;
	}
	if (r == 0)
		return 0;
	if (!(ops & TCP_OPBIT(f.op)))
		fail("a frame the side does not allow passed", side, NULL);
	data += r;
	size -= (size_t)r;
	/* tcp_frame_start: the payload is staged whole before the verdict. */
	if (f.payload_len > size)
		return 0;
	payload = fuzz_exact(data, (size_t)f.payload_len);
	if (f.op == TCP_OP_HELLO) {
		why = tcp_hello_check(&f, payload,
				      side == MSG_ACCEPT ? TCP_EPK_MSG :
							   TCP_EPK_RDM,
				      &sa);
		ok = !why;
		if (ok)
			accepted_hello(side, &f, payload, &sa);
		else if (!*why)
			fail("HELLO refused with an empty reason", side, why);
	} else {
		if (f.payload_len > TCP_CM_DATA_MAX)
			fail("HELLO_ACK data larger than allowed", side, NULL);
		if (f.hello_ack.status >= 65536)
			fail("HELLO_ACK status out of range", side, NULL);
		ok = f.hello_ack.status == 0;
	}
	free(payload);
	if (ok)
		data_frames(side, data + f.payload_len,
			    size - (size_t)f.payload_len);
	return 0;
}

#ifdef FUZZ_SEEDS
static int write_seed(const char *dir, const char *name, enum side side,
		      const void *a, size_t alen, const void *b, size_t blen)
{
	char path[4096];
	uint8_t s = (uint8_t)side;
	FILE *fp;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fp = fopen(path, "wb");
	if (!fp || fwrite(&s, 1, 1, fp) != 1 || fwrite(a, 1, alen, fp) != alen ||
	    (blen && fwrite(b, 1, blen, fp) != blen) || fclose(fp)) {
		perror(path);
		return 1;
	}
	return 0;
}

/* A frame, then its payload, into buf; returns the length. */
static size_t frame(uint8_t *buf, size_t hl, const void *pl, size_t plen)
{
	memcpy(buf + hl, pl, plen);
	return hl + plen;
}

int main(int argc, char **argv)
{
	struct sockaddr_in in4 = { .sin_family = AF_INET,
				   .sin_port = htons(4711),
				   .sin_addr.s_addr = htonl(0x7f000001) };
	struct sockaddr_in6 in6 = { .sin6_family = AF_INET6,
				    .sin6_port = htons(4711) };
	static const char cm[] = "private data of fi_connect";
	uint8_t a[1024], b[256];
	size_t alen, blen;
	int rc = 0;

	if (argc != 2) {
		fprintf(stderr, "usage: %s corpus-dir\n", argv[0]);
		return 2;
	}
	in6.sin6_addr.s6_addr[15] = 1;
	alen = frame(a, tcp_put_hello(a, TCP_EPK_RDM, sizeof(in4), 0), &in4,
		     sizeof(in4));
	blen = tcp_put_msg(b, TCP_OP_MSG, 0, 0, 0, 0, 0);
	rc |= write_seed(argv[1], "rdm-hello-ipv4", RDM_ACCEPT, a, alen, b,
			 blen);
	alen = frame(a, tcp_put_hello(a, TCP_EPK_RDM, sizeof(in6), 0), &in6,
		     sizeof(in6));
	rc |= write_seed(argv[1], "rdm-hello-ipv6", RDM_ACCEPT, a, alen, b, 0);
	alen = frame(a, tcp_put_hello(a, TCP_EPK_MSG, 0, sizeof(cm)), cm,
		     sizeof(cm));
	rc |= write_seed(argv[1], "msg-hello-cm", MSG_ACCEPT, a, alen, b, 0);
	alen = frame(a, tcp_put_hello(a, TCP_EPK_MSG, 0, 0), cm, 0);
	rc |= write_seed(argv[1], "msg-hello-to-rdm", RDM_ACCEPT, a, alen, b,
			 0);
	alen = tcp_put_hello_ack(a, 0, 0);
	blen = tcp_put_resp(b, TCP_OP_ACK, 1, 0, 0);
	rc |= write_seed(argv[1], "rdm-ack-then-data", RDM_CONNECT, a, alen, b,
			 blen);
	alen = frame(a, tcp_put_hello_ack(a, 0, sizeof(cm)), cm, sizeof(cm));
	rc |= write_seed(argv[1], "msg-ack-cm", MSG_CONNECT, a, alen, b, 0);
	alen = frame(a, tcp_put_hello_ack(a, FI_ECONNREFUSED, sizeof(cm)), cm,
		     sizeof(cm));
	rc |= write_seed(argv[1], "msg-refused", MSG_CONNECT, a, alen, b, 0);
	alen = tcp_put_hello_ack(a, 0, 0);
	rc |= write_seed(argv[1], "ack-to-acceptor", RDM_ACCEPT, a, alen, b,
			 0);
	return rc;
}
#endif
