/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * libFuzzer harness for the tcp frame parser (`make fuzz` builds and runs
 * it, `make check` replays its corpus through tests/fuzz/fuzz_replay.c).  Each input is parsed whole under several limit
 * sets, and every prefix of its first TCP_HDR_MAX + 1 bytes from a heap
 * buffer of exactly that size, so that AddressSanitizer sees any read
 * past avail.  Aborts when:
 *  - a result is neither a header length, 0 nor -FI_EPROTO, or a refusal
 *    comes without a reason;
 *  - an accepted header breaks a promise (tests/unit/tcp_proto_check.h);
 *  - a prefix is judged differently from the whole: a valid header's
 *    prefixes must all give 0, and once a prefix is refused every longer
 *    one must be.
 *
 * Built with -DFUZZ_SEEDS instead, it is a program that writes
 * one valid frame of each kind into the directory it is given, as the
 * starting corpus.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rdma/fi_errno.h>

#include "fuzz_util.h"
#include "tcp_proto.h"
#include "tcp_proto_check.h"


#define ALL_OPS                                                               \
	(TCP_OPS_DATA | TCP_OPBIT(TCP_OP_HELLO) | TCP_OPBIT(TCP_OP_HELLO_ACK))

static const struct tcp_proto_limits limits[] = {
	{ 1u << 20, ALL_OPS },
	{ 0, ALL_OPS },
	{ 64, TCP_OPS_DATA },
	{ ~0ULL, ALL_OPS },
	{ 1u << 16, TCP_OPBIT(TCP_OP_HELLO) },
	{ 1u << 16, TCP_OPBIT(TCP_OP_HELLO_ACK) },
};

static void fail(const char *what, size_t n, ssize_t r)
{
	fprintf(stderr, "fuzz_tcp_proto: %s (avail %zu, result %zd)\n", what,
		n, r);
	abort();
}

static ssize_t parse_exact(const uint8_t *data, size_t n,
			   const struct tcp_proto_limits *l,
			   struct tcp_frame *f, const char **why)
{
	uint8_t *copy = malloc(n ? n : 1);
	ssize_t r;

	if (!copy)
		abort();
	memcpy(copy, data, n);
	*why = NULL;
	r = tcp_frame_parse(copy, n, l, f, why);
	free(copy);
	if (r < 0 && (r != -FI_EPROTO || !*why))
		fail("bad refusal", n, r);
	if (r > 0 && (size_t)r > n)
		fail("header longer than avail", n, r);
	return r;
}

static void one_limit(const uint8_t *data, size_t size,
		      const struct tcp_proto_limits *l)
{
	struct tcp_frame f;
	const char *why, *bad;
	size_t n, top = size < TCP_HDR_MAX + 1 ? size : TCP_HDR_MAX + 1;
	ssize_t whole, r;
	int refused = 0;

	/* libFuzzer's own buffer is exactly size bytes long */
	whole = tcp_frame_parse(data, size, l, &f, &why);
	if (whole > 0) {
		bad = tcp_check_accepted(&f, whole, size, l);
		if (bad)
			fail(bad, size, whole);
	} else if (whole < 0 && whole != -FI_EPROTO) {
		fail("bad result", size, whole);
	}
	for (n = 0; n < top; n++) {
		r = parse_exact(data, n, l, &f, &why);
		if (r > 0 && r != whole)
			fail("prefix judged apart from the whole", n, r);
		if (refused && r != -FI_EPROTO)
			fail("refusal taken back by a longer prefix", n, r);
		if (r < 0) {
			refused = 1;
			if (whole >= 0)
				fail("prefix refused, whole not", n, r);
		}
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	size_t i;

	for (i = 0; i < sizeof(limits) / sizeof(limits[0]); i++)
		one_limit(data, size, &limits[i]);
	return 0;
}

#ifdef FUZZ_SEEDS
static int write_seed(const char *dir, int i, const void *buf, size_t len)
{
	char name[16];

	snprintf(name, sizeof(name), "seed-%02d", i);
	return fuzz_write_file(dir, name, buf, len);
}

int main(int argc, char **argv)
{
	static const struct fi_rma_iov iov[2] = { { 0x1000, 64, 1 },
						  { 0x9000, 32, 2 } };
	unsigned char b[TCP_HDR_MAX];
	size_t len[13];
	int i, rc = 0;

	if (argc != 2) {
		fprintf(stderr, "usage: %s corpus-dir\n", argv[0]);
		return 2;
	}
	for (i = 0; i < 13; i++) {
		memset(b, 0, sizeof(b));
		switch (i) {
		case 0: len[i] = tcp_put_hello(b, TCP_EPK_RDM, 16, 8); break;
		case 1: len[i] = tcp_put_hello(b, TCP_EPK_MSG, 0, 0); break;
		case 2: len[i] = tcp_put_hello_ack(b, 0, 4); break;
		case 3:
			len[i] = tcp_put_msg(b, TCP_OP_MSG, TCP_F_ACK_REQ, 0, 0,
					     1, 10);
			break;
		case 4:
			len[i] = tcp_put_msg(b, TCP_OP_TAGGED, TCP_F_CQ_DATA, 5,
					     6, 7, 0);
			break;
		case 5: len[i] = tcp_put_resp(b, TCP_OP_ACK, 1, 0, 0); break;
		case 6: len[i] = tcp_put_resp(b, TCP_OP_RESP, 2, 0, 64); break;
		case 7:
			len[i] = tcp_put_rma(b, TCP_OP_WRITE, TCP_F_CQ_DATA, 3,
					     4, iov, 2, 96);
			break;
		case 8:
			len[i] = tcp_put_rma(b, TCP_OP_READ_REQ, 0, 5, 0, iov,
					     1, 0);
			break;
		case 9:
			len[i] = tcp_put_atomic(b, 0, 6, 0x40, 1,
						TCP_ATOMIC_WRITE, FI_SUM,
						FI_INT32, 4, 16);
			break;
		case 10:
			len[i] = tcp_put_atomic(b, 0, 7, 0x40, 1,
						TCP_ATOMIC_FETCH, FI_MAX,
						FI_DOUBLE, 1, 8);
			break;
		case 11:
			len[i] = tcp_put_atomic(b, 0, 8, 0x40, 1,
						TCP_ATOMIC_COMPARE, FI_CSWAP,
						FI_UINT64, 2, 32);
			break;
		default:
			len[i] = tcp_put_hello_ack(b, FI_ECONNREFUSED, 0);
			break;
		}
		rc |= write_seed(argv[1], i, b, len[i]);
	}
	return rc;
}
#endif
