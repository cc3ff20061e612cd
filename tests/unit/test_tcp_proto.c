/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The tcp wire protocol's parser: every encoder round-trips, every
 * malformed header is refused for the right reason, no prefix of a frame
 * is ever accepted, and a bounded random-mutation loop keeps the parser's
 * promises.  Frames are parsed from buffers allocated to their exact size,
 * so that a sanitizer build catches any read past avail.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <rdma/fi_errno.h>

#include "weft/util_atomic.h"
#include "tcp_proto.h"
#include "tcp_proto_check.h"


#define BASE sizeof(struct tcp_base)
#define MAXP (1u << 20)
#define ALL_OPS                                                               \
	(TCP_OPS_DATA | TCP_OPBIT(TCP_OP_HELLO) | TCP_OPBIT(TCP_OP_HELLO_ACK))

static const struct tcp_proto_limits lim = {
	.max_payload = MAXP,
	.allowed_ops = ALL_OPS,
};

/* Offsets of fields in a frame, for patching. */
#define OFF(type, field) (BASE + offsetof(struct type, field))
#define B_FLAGS offsetof(struct tcp_base, flags)
#define B_HDR_LEN offsetof(struct tcp_base, hdr_len)
#define B_PAYLOAD offsetof(struct tcp_base, payload_len)

static void put16(unsigned char *b, size_t off, uint16_t v)
{
	v = htole16(v);
	memcpy(b + off, &v, sizeof(v));
}

static void put32(unsigned char *b, size_t off, uint32_t v)
{
	v = htole32(v);
	memcpy(b + off, &v, sizeof(v));
}

static void put64(unsigned char *b, size_t off, uint64_t v)
{
	v = htole64(v);
	memcpy(b + off, &v, sizeof(v));
}

/* Parse len bytes of b from a heap copy of exactly len bytes. */
static ssize_t parse_n(const unsigned char *b, size_t len,
		       const struct tcp_proto_limits *l, struct tcp_frame *f,
		       const char **why)
{
	unsigned char *copy = malloc(len ? len : 1);
	ssize_t r;

	cr_assert_not_null(copy);
	memcpy(copy, b, len);
	r = tcp_frame_parse(len ? copy : copy + 1, len, l, f, why);
	free(copy);
	return r;
}

/*
 * Every prefix of b[0..len) shorter than what the parser needs gives 0 or
 * -FI_EPROTO; a refusal is final (a longer prefix is refused too) and
 * only for a frame that is refused whole; a valid frame's prefixes all
 * give 0.  Returns the verdict on all len bytes.
 */
static ssize_t check_prefixes(const unsigned char *b, size_t len,
			      const struct tcp_proto_limits *l)
{
	struct tcp_frame f;
	const char *why;
	ssize_t whole, r;
	bool refused = false;
	size_t n;

	whole = parse_n(b, len, l, &f, &why);
	for (n = 0; n < len; n++) {
		r = parse_n(b, n, l, &f, &why);
		if (r > 0) {
			cr_assert_eq(r, whole, "prefix %zu accepted", n);
			cr_assert_leq((size_t)r, n);
			continue;
		}
		cr_assert(r == 0 || r == -FI_EPROTO, "prefix %zu: %zd", n, r);
		if (refused)
			cr_assert_eq(r, -FI_EPROTO, "prefix %zu un-refused", n);
		if (r == -FI_EPROTO) {
			refused = true;
			cr_assert_eq(whole, -FI_EPROTO);
		}
	}
	return whole;
}

/* Parse a complete header that must be valid; checks its prefixes. */
static void parse_ok(const unsigned char *b, size_t len, struct tcp_frame *f)
{
	const char *why = NULL;
	ssize_t r;

	cr_assert_eq(check_prefixes(b, len, &lim), (ssize_t)len);
	r = parse_n(b, len, &lim, f, &why);
	cr_assert_eq(r, (ssize_t)len, "refused: %s", why ? why : "?");
	cr_assert_eq(f->hdr_len, len);
}

/* A header that must be refused, with a reason that mentions `what`. */
static void parse_bad_l(const unsigned char *b, size_t len,
			const struct tcp_proto_limits *l, const char *what)
{
	struct tcp_frame f;
	const char *why = NULL;
	ssize_t r;

	r = parse_n(b, len, l, &f, &why);
	cr_assert_eq(r, -FI_EPROTO, "accepted (%zd), expected: %s", r, what);
	cr_assert_not_null(why);
	cr_assert(strstr(why, what), "reason \"%s\", expected \"%s\"", why,
		  what);
	check_prefixes(b, len, l);
}

static void parse_bad(const unsigned char *b, size_t len, const char *what)
{
	parse_bad_l(b, len, &lim, what);
}

/* ---- round trips ------------------------------------------------------ */

Test(tcp_proto, op_names)
{
	cr_assert_str_eq(tcp_op_str(TCP_OP_HELLO), "HELLO");
	cr_assert_str_eq(tcp_op_str(TCP_OP_MSG), "MSG");
	cr_assert_str_eq(tcp_op_str(TCP_OP_RESP), "RESP");
	cr_assert_str_eq(tcp_op_str(0), "unknown");
	cr_assert_str_eq(tcp_op_str(TCP_OP_MAX + 1), "unknown");
	cr_assert_str_eq(tcp_op_str(~0u), "unknown");
}

Test(tcp_proto, hello_round_trip)
{
	unsigned char b[TCP_HDR_MAX];
	struct tcp_frame f;
	size_t n;

	n = tcp_put_hello(b, TCP_EPK_RDM, 16, 0);
	parse_ok(b, n, &f);
	cr_assert_eq(f.op, TCP_OP_HELLO);
	cr_assert_eq(f.flags, 0);
	cr_assert_eq(f.payload_len, 16);
	cr_assert_eq(f.hello.version, TCP_PROTO_VERSION);
	cr_assert_eq(f.hello.ep_kind, TCP_EPK_RDM);
	cr_assert_eq(f.hello.addr_len, 16);
	cr_assert_eq(f.hello.cm_len, 0);

	n = tcp_put_hello(b, TCP_EPK_MSG, TCP_ADDR_MAX, TCP_CM_DATA_MAX);
	parse_ok(b, n, &f);
	cr_assert_eq(f.hello.ep_kind, TCP_EPK_MSG);
	cr_assert_eq(f.hello.addr_len, TCP_ADDR_MAX);
	cr_assert_eq(f.hello.cm_len, TCP_CM_DATA_MAX);
	cr_assert_eq(f.payload_len, TCP_ADDR_MAX + TCP_CM_DATA_MAX);

	/* An MSG endpoint may leave its address out. */
	n = tcp_put_hello(b, TCP_EPK_MSG, 0, 5);
	parse_ok(b, n, &f);
	cr_assert_eq(f.hello.addr_len, 0);
	cr_assert_eq(f.hello.cm_len, 5);
}

Test(tcp_proto, hello_ack_round_trip)
{
	unsigned char b[TCP_HDR_MAX];
	struct tcp_frame f;
	size_t n;

	n = tcp_put_hello_ack(b, 0, 7);
	parse_ok(b, n, &f);
	cr_assert_eq(f.op, TCP_OP_HELLO_ACK);
	cr_assert_eq(f.hello_ack.version, TCP_PROTO_VERSION);
	cr_assert_eq(f.hello_ack.status, 0);
	cr_assert_eq(f.payload_len, 7);

	n = tcp_put_hello_ack(b, FI_ECONNREFUSED, TCP_CM_DATA_MAX);
	parse_ok(b, n, &f);
	cr_assert_eq(f.hello_ack.status, FI_ECONNREFUSED);
	cr_assert_eq(f.payload_len, TCP_CM_DATA_MAX);

	n = tcp_put_hello_ack(b, UINT16_MAX, 0);
	parse_ok(b, n, &f);
	cr_assert_eq(f.hello_ack.status, UINT16_MAX);
}

Test(tcp_proto, msg_round_trip)
{
	unsigned char b[TCP_HDR_MAX];
	struct tcp_frame f;
	size_t n;

	n = tcp_put_msg(b, TCP_OP_MSG, TCP_F_CQ_DATA | TCP_F_ACK_REQ, 0,
			0x1122334455667788ULL, 0xdeadbeefcafe0001ULL, MAXP);
	cr_assert_eq(n, TCP_MSG_HDR_LEN);
	parse_ok(b, n, &f);
	cr_assert_eq(f.op, TCP_OP_MSG);
	cr_assert_eq(f.flags, TCP_F_CQ_DATA | TCP_F_ACK_REQ);
	cr_assert_eq(f.payload_len, MAXP);
	cr_assert_eq(f.msg.data, 0x1122334455667788ULL);
	cr_assert_eq(f.msg.tx_id, 0xdeadbeefcafe0001ULL);

	n = tcp_put_msg(b, TCP_OP_TAGGED, 0, 0xfedcba9876543210ULL, 0, 0, 0);
	parse_ok(b, n, &f);
	cr_assert_eq(f.op, TCP_OP_TAGGED);
	cr_assert_eq(f.flags, 0);
	cr_assert_eq(f.payload_len, 0);
	cr_assert_eq(f.msg.tag, 0xfedcba9876543210ULL);
}

Test(tcp_proto, resp_round_trip)
{
	unsigned char b[TCP_HDR_MAX];
	struct tcp_frame f;
	size_t n;

	n = tcp_put_resp(b, TCP_OP_ACK, 42, 0, 0);
	parse_ok(b, n, &f);
	cr_assert_eq(f.op, TCP_OP_ACK);
	cr_assert_eq(f.resp.tx_id, 42);
	cr_assert_eq(f.resp.status, 0);

	n = tcp_put_resp(b, TCP_OP_ACK, 43, FI_ETRUNC, 0);
	parse_ok(b, n, &f);
	cr_assert_eq(f.resp.status, FI_ETRUNC);

	n = tcp_put_resp(b, TCP_OP_RESP, ~0ULL, 0, MAXP);
	parse_ok(b, n, &f);
	cr_assert_eq(f.op, TCP_OP_RESP);
	cr_assert_eq(f.resp.tx_id, ~0ULL);
	cr_assert_eq(f.payload_len, MAXP);

	n = tcp_put_resp(b, TCP_OP_RESP, 1, FI_EACCES, 0);
	parse_ok(b, n, &f);
	cr_assert_eq(f.resp.status, FI_EACCES);
}

Test(tcp_proto, rma_round_trip)
{
	struct fi_rma_iov iov[TCP_RMA_IOV_MAX] = {
		{ .addr = 0x1000, .len = 100, .key = 7 },
		{ .addr = 0x7fff0000, .len = 0, .key = 8 },
		{ .addr = ~0ULL - 10, .len = 10, .key = ~0ULL },
		{ .addr = 0, .len = MAXP - 110, .key = 0 },
	};
	unsigned char b[TCP_HDR_MAX];
	struct tcp_frame f;
	size_t n, count, i;
	uint64_t sum;

	for (count = 1; count <= TCP_RMA_IOV_MAX; count++) {
		for (sum = 0, i = 0; i < count; i++)
			sum += iov[i].len;
		n = tcp_put_rma(b, TCP_OP_WRITE, TCP_F_CQ_DATA, 99, 5, iov,
				count, sum);
		cr_assert_eq(n, BASE + sizeof(struct tcp_rma) +
					count * sizeof(struct tcp_rma_iov));
		parse_ok(b, n, &f);
		cr_assert_eq(f.op, TCP_OP_WRITE);
		cr_assert_eq(f.flags, TCP_F_CQ_DATA);
		cr_assert_eq(f.rma.tx_id, 99);
		cr_assert_eq(f.rma.data, 5);
		cr_assert_eq(f.rma.iov_count, count);
		cr_assert_eq(f.rma.len, sum);
		cr_assert_eq(f.payload_len, sum);
		for (i = 0; i < count; i++) {
			cr_assert_eq(f.rma.iov[i].addr, iov[i].addr);
			cr_assert_eq(f.rma.iov[i].len, iov[i].len);
			cr_assert_eq(f.rma.iov[i].key, iov[i].key);
		}

		n = tcp_put_rma(b, TCP_OP_READ_REQ, 0, 100, 0, iov, count, 0);
		parse_ok(b, n, &f);
		cr_assert_eq(f.op, TCP_OP_READ_REQ);
		cr_assert_eq(f.rma.len, sum);
		cr_assert_eq(f.payload_len, 0);
		cr_assert_eq(f.rma.iov[count - 1].key, iov[count - 1].key);
	}
}

Test(tcp_proto, atomic_round_trip)
{
	unsigned char b[TCP_HDR_MAX];
	struct tcp_frame f;
	size_t n;

	n = tcp_put_atomic(b, 0, 1, 0x2000, 3, TCP_ATOMIC_WRITE, FI_SUM,
			   FI_INT32, 4, 16);
	parse_ok(b, n, &f);
	cr_assert_eq(f.op, TCP_OP_ATOMIC);
	cr_assert_eq(f.atomic.tx_id, 1);
	cr_assert_eq(f.atomic.addr, 0x2000);
	cr_assert_eq(f.atomic.key, 3);
	cr_assert_eq(f.atomic.kind, TCP_ATOMIC_WRITE);
	cr_assert_eq(f.atomic.op, FI_SUM);
	cr_assert_eq(f.atomic.datatype, FI_INT32);
	cr_assert_eq(f.atomic.count, 4);
	cr_assert_eq(f.atomic.dt_size, 4);

	n = tcp_put_atomic(b, 0, 2, 0, 0, TCP_ATOMIC_FETCH, FI_ATOMIC_READ,
			   FI_UINT64, 3, 24);
	parse_ok(b, n, &f);
	cr_assert_eq(f.atomic.kind, TCP_ATOMIC_FETCH);
	cr_assert_eq(f.atomic.dt_size, 8);

	n = tcp_put_atomic(b, 0, 3, 0, 0, TCP_ATOMIC_COMPARE, FI_CSWAP,
			   FI_DOUBLE, 2, 2 * 2 * sizeof(double));
	parse_ok(b, n, &f);
	cr_assert_eq(f.atomic.kind, TCP_ATOMIC_COMPARE);
	cr_assert_eq(f.atomic.count, 2);

	n = tcp_put_atomic(b, 0, 4, 0, 0, TCP_ATOMIC_WRITE, FI_ATOMIC_WRITE,
			   FI_LONG_DOUBLE_COMPLEX, 1,
			   util_atomic_dt_size(FI_LONG_DOUBLE_COMPLEX));
	parse_ok(b, n, &f);
	cr_assert_eq(f.atomic.dt_size,
		     util_atomic_dt_size(FI_LONG_DOUBLE_COMPLEX));
}

/* Trailing payload bytes do not change the verdict or the length. */
Test(tcp_proto, payload_bytes_follow)
{
	unsigned char b[TCP_HDR_MAX + 64];
	struct tcp_frame f;
	size_t n;

	memset(b, 0xa5, sizeof(b));
	n = tcp_put_msg(b, TCP_OP_MSG, 0, 0, 0, 1, 64);
	cr_assert_eq(parse_n(b, n + 64, &lim, &f, NULL), (ssize_t)n);
	cr_assert_eq(f.payload_len, 64);
}

/* ---- the base header -------------------------------------------------- */

Test(tcp_proto, base_checks)
{
	unsigned char b[TCP_HDR_MAX];
	struct tcp_proto_limits hs = {
		.max_payload = MAXP,
		.allowed_ops = TCP_OPBIT(TCP_OP_HELLO),
	};
	size_t n;

	n = tcp_put_msg(b, TCP_OP_MSG, 0, 0, 0, 0, 0);
	b[0] = 0;
	parse_bad(b, n, "unknown op");
	b[0] = TCP_OP_MAX + 1;
	parse_bad(b, n, "unknown op");
	b[0] = 0xff;
	parse_bad(b, n, "unknown op");

	n = tcp_put_msg(b, TCP_OP_MSG, 0, 0, 0, 0, 0);
	parse_bad_l(b, n, &hs, "not allowed");
	n = tcp_put_hello(b, TCP_EPK_MSG, 0, 0);
	parse_bad_l(b, n, &(struct tcp_proto_limits){ MAXP, TCP_OPS_DATA },
		    "not allowed");

	n = tcp_put_msg(b, TCP_OP_MSG, 0, 0, 0, 0, 0);
	b[offsetof(struct tcp_base, rsvd0)] = 1;
	parse_bad(b, n, "reserved");
	n = tcp_put_msg(b, TCP_OP_MSG, 0, 0, 0, 0, 0);
	put16(b, offsetof(struct tcp_base, rsvd1), 0x100);
	parse_bad(b, n, "reserved");

	n = tcp_put_msg(b, TCP_OP_MSG, 1u << 4, 0, 0, 0, 0);
	parse_bad(b, n, "unknown flag");
	n = tcp_put_msg(b, TCP_OP_MSG, 0x8000, 0, 0, 0, 0);
	parse_bad(b, n, "unknown flag");
}

Test(tcp_proto, flags_per_op)
{
	struct fi_rma_iov iov = { .addr = 1, .len = 8, .key = 1 };
	unsigned char b[TCP_HDR_MAX];
	size_t n;

	n = tcp_put_rma(b, TCP_OP_WRITE, TCP_F_ACK_REQ, 0, 0, &iov, 1, 8);
	parse_bad(b, n, "flag not valid");
	/* the collectives' class is an untagged message's alone */
	{
		struct tcp_frame f;

		n = tcp_put_msg(b, TCP_OP_MSG, TCP_F_COLL, 7, 0, 0, 0);
		parse_ok(b, n, &f);
		cr_assert_eq(f.flags, TCP_F_COLL);
	}
	n = tcp_put_msg(b, TCP_OP_TAGGED, TCP_F_COLL, 0, 0, 0, 0);
	parse_bad(b, n, "flag not valid");
	n = tcp_put_rma(b, TCP_OP_WRITE, TCP_F_COLL, 0, 0, &iov, 1, 8);
	parse_bad(b, n, "flag not valid");
	n = tcp_put_rma(b, TCP_OP_READ_REQ, TCP_F_CQ_DATA, 0, 0, &iov, 1, 0);
	parse_bad(b, n, "flag not valid");
	/* a commit is asked for by writes and atomics alone */
	{
		struct tcp_frame f;

		n = tcp_put_rma(b, TCP_OP_WRITE, TCP_F_CQ_DATA | TCP_F_COMMIT,
				0, 0, &iov, 1, 8);
		parse_ok(b, n, &f);
		cr_assert_eq(f.flags, TCP_F_CQ_DATA | TCP_F_COMMIT);
		n = tcp_put_atomic(b, TCP_F_COMMIT, 0, 0, 0, TCP_ATOMIC_WRITE,
				   FI_SUM, FI_INT32, 1, 4);
		parse_ok(b, n, &f);
		cr_assert_eq(f.flags, TCP_F_COMMIT);
	}
	n = tcp_put_rma(b, TCP_OP_READ_REQ, TCP_F_COMMIT, 0, 0, &iov, 1, 0);
	parse_bad(b, n, "flag not valid");
	n = tcp_put_msg(b, TCP_OP_MSG, TCP_F_COMMIT, 0, 0, 0, 0);
	parse_bad(b, n, "flag not valid");
	n = tcp_put_atomic(b, TCP_F_CQ_DATA, 0, 0, 0, TCP_ATOMIC_WRITE,
			   FI_SUM, FI_INT32, 1, 4);
	parse_bad(b, n, "flag not valid");
	n = tcp_put_atomic(b, TCP_F_ACK_REQ, 0, 0, 0, TCP_ATOMIC_WRITE,
			   FI_SUM, FI_INT32, 1, 4);
	parse_bad(b, n, "flag not valid");
	n = tcp_put_resp(b, TCP_OP_RESP, 0, 0, 0);
	put16(b, B_FLAGS, TCP_F_CQ_DATA);
	parse_bad(b, n, "flag not valid");
	n = tcp_put_resp(b, TCP_OP_ACK, 0, 0, 0);
	put16(b, B_FLAGS, TCP_F_ACK_REQ);
	parse_bad(b, n, "flag not valid");
	n = tcp_put_hello(b, TCP_EPK_RDM, 4, 0);
	put16(b, B_FLAGS, TCP_F_CQ_DATA);
	parse_bad(b, n, "flag not valid");
	n = tcp_put_hello_ack(b, 0, 0);
	put16(b, B_FLAGS, TCP_F_ACK_REQ);
	parse_bad(b, n, "flag not valid");
}

/*
 * A wrong hdr_len is refused from the 16 base bytes alone, even when it
 * claims more bytes than the buffer holds.
 */
Test(tcp_proto, hdr_len_exact)
{
	struct fi_rma_iov iov[2] = { { 0, 1, 0 }, { 0, 1, 0 } };
	unsigned char b[TCP_HDR_MAX];
	struct tcp_frame f;
	const char *why;
	size_t n, bad;

	n = tcp_put_msg(b, TCP_OP_MSG, 0, 0, 0, 0, 0);
	for (bad = 0; bad < 0x10000; bad += bad < 300 ? 1 : 997) {
		if (bad == n)
			continue;
		put16(b, B_HDR_LEN, (uint16_t)bad);
		cr_assert_eq(parse_n(b, BASE, &lim, &f, &why), -FI_EPROTO);
		cr_assert(strstr(why, "hdr_len"));
	}
	n = tcp_put_rma(b, TCP_OP_WRITE, 0, 0, 0, iov, 2, 2);
	for (bad = 0; bad < 300; bad++) {
		ssize_t r;

		put16(b, B_HDR_LEN, (uint16_t)bad);
		r = parse_n(b, BASE, &lim, &f, &why);
		if (bad > BASE + sizeof(struct tcp_rma) && bad <= TCP_HDR_MAX &&
		    (bad - BASE - sizeof(struct tcp_rma)) % 24 == 0)
			cr_assert_eq(r, 0, "hdr_len %zu", bad);
		else
			cr_assert_eq(r, -FI_EPROTO, "hdr_len %zu", bad);
	}
}

/* ---- per-op checks ---------------------------------------------------- */

Test(tcp_proto, hello_checks)
{
	unsigned char b[TCP_HDR_MAX];
	size_t n;

	n = tcp_put_hello(b, TCP_EPK_RDM, 16, 0);
	b[OFF(tcp_hello, magic)] ^= 1;
	parse_bad(b, n, "magic");
	n = tcp_put_hello(b, TCP_EPK_RDM, 16, 0);
	put16(b, OFF(tcp_hello, version), TCP_PROTO_VERSION + 1);
	parse_bad(b, n, "version");
	n = tcp_put_hello(b, TCP_EPK_RDM, 16, 0);
	put16(b, OFF(tcp_hello, version), 0);
	parse_bad(b, n, "version");
	/* Contexts are an RDM endpoint's (scalable endpoints). */
	n = tcp_put_hello_ctx(b, TCP_EPK_MSG, 0, 0, 1, 0);
	parse_bad(b, n, "contexts");
	n = tcp_put_hello_ctx(b, TCP_EPK_MSG, 0, 0, 0, 3);
	parse_bad(b, n, "contexts");
	n = tcp_put_hello(b, 0, 16, 0);
	parse_bad(b, n, "endpoint kind");
	n = tcp_put_hello(b, 3, 16, 0);
	parse_bad(b, n, "endpoint kind");
	n = tcp_put_hello(b, TCP_EPK_RDM, TCP_ADDR_MAX + 1, 0);
	parse_bad(b, n, "address too long");
	n = tcp_put_hello(b, TCP_EPK_RDM, 0, 4);
	parse_bad(b, n, "without an address");
	n = tcp_put_hello(b, TCP_EPK_RDM, 16, TCP_CM_DATA_MAX + 1);
	parse_bad(b, n, "connection data too long");
	n = tcp_put_hello(b, TCP_EPK_MSG, 16, 0);
	put64(b, B_PAYLOAD, 15);
	parse_bad(b, n, "longer than payload");
	n = tcp_put_hello(b, TCP_EPK_MSG, 16, 0);
	put64(b, B_PAYLOAD, ~0ULL);
	parse_bad(b, n, "connection data too long");
}

Test(tcp_proto, hello_ack_checks)
{
	unsigned char b[TCP_HDR_MAX];
	size_t n;

	n = tcp_put_hello_ack(b, 0, 0);
	put64(b, OFF(tcp_hello_ack, magic), TCP_PROTO_MAGIC + 1);
	parse_bad(b, n, "magic");
	n = tcp_put_hello_ack(b, 0, 0);
	put16(b, OFF(tcp_hello_ack, version), 2);
	parse_bad(b, n, "version");
	n = tcp_put_hello_ack(b, 0, 0);
	put16(b, OFF(tcp_hello_ack, rsvd), 0x8000);
	parse_bad(b, n, "reserved");
	n = tcp_put_hello_ack(b, 0x10000, 0);
	parse_bad(b, n, "status");
	n = tcp_put_hello_ack(b, ~0u, 0);
	parse_bad(b, n, "status");
	n = tcp_put_hello_ack(b, 0, TCP_CM_DATA_MAX + 1);
	parse_bad(b, n, "too long");
}

Test(tcp_proto, msg_checks)
{
	struct tcp_proto_limits none = { .max_payload = 0,
					 .allowed_ops = ALL_OPS };
	unsigned char b[TCP_HDR_MAX];
	struct tcp_frame f;
	size_t n;

	n = tcp_put_msg(b, TCP_OP_MSG, 0, 0, 0, 0, MAXP + 1);
	parse_bad(b, n, "payload too long");
	n = tcp_put_msg(b, TCP_OP_TAGGED, 0, 0, 0, 0, ~0ULL);
	parse_bad(b, n, "payload too long");
	n = tcp_put_msg(b, TCP_OP_TAGGED, 0, 0, 0, 0, 1);
	parse_bad_l(b, n, &none, "payload too long");
	n = tcp_put_msg(b, TCP_OP_TAGGED, 0, 0, 0, 0, 0);
	cr_assert_eq(parse_n(b, n, &none, &f, NULL), (ssize_t)n);
}

Test(tcp_proto, resp_checks)
{
	unsigned char b[TCP_HDR_MAX];
	size_t n;

	n = tcp_put_resp(b, TCP_OP_ACK, 1, 0, 1);
	parse_bad(b, n, "ACK: payload");
	n = tcp_put_resp(b, TCP_OP_ACK, 1, 0x10000, 0);
	parse_bad(b, n, "status");
	n = tcp_put_resp(b, TCP_OP_RESP, 1, ~0u, 0);
	parse_bad(b, n, "status");
	n = tcp_put_resp(b, TCP_OP_RESP, 1, 0, MAXP + 1);
	parse_bad(b, n, "payload too long");
	n = tcp_put_resp(b, TCP_OP_RESP, 1, FI_EACCES, 8);
	parse_bad(b, n, "failed request");
	n = tcp_put_resp(b, TCP_OP_RESP, 1, 0, 0);
	put32(b, OFF(tcp_resp, rsvd), 1);
	parse_bad(b, n, "reserved");
}

Test(tcp_proto, rma_checks)
{
	struct fi_rma_iov iov[TCP_RMA_IOV_MAX] = {
		{ .addr = 0, .len = 8, .key = 1 },
		{ .addr = 0, .len = 8, .key = 1 },
		{ .addr = 0, .len = 8, .key = 1 },
		{ .addr = 0, .len = 8, .key = 1 },
	};
	struct fi_rma_iov wrap[2] = {
		{ .addr = 0, .len = ~0ULL, .key = 0 },
		{ .addr = 0, .len = 2, .key = 0 },
	};
	struct fi_rma_iov edge = { .addr = ~0ULL - 7, .len = 9, .key = 0 };
	unsigned char b[TCP_HDR_MAX];
	size_t n;

	n = tcp_put_rma(b, TCP_OP_WRITE, 0, 0, 0, iov, 2, 16);
	put32(b, OFF(tcp_rma, iov_count), 0);
	parse_bad(b, n, "iov count");
	put32(b, OFF(tcp_rma, iov_count), TCP_RMA_IOV_MAX + 1);
	parse_bad(b, n, "iov count");
	put32(b, OFF(tcp_rma, iov_count), ~0u);
	parse_bad(b, n, "iov count");
	put32(b, OFF(tcp_rma, iov_count), 1);
	parse_bad(b, n, "does not match hdr_len");
	put32(b, OFF(tcp_rma, iov_count), 3);
	parse_bad(b, n, "does not match hdr_len");

	n = tcp_put_rma(b, TCP_OP_WRITE, 0, 0, 0, iov, 1, 8);
	put32(b, OFF(tcp_rma, rsvd), 1);
	parse_bad(b, n, "reserved");

	n = tcp_put_rma(b, TCP_OP_WRITE, 0, 0, 0, wrap, 2, 1);
	parse_bad(b, n, "overflow");
	n = tcp_put_rma(b, TCP_OP_READ_REQ, 0, 0, 0, wrap, 2, 0);
	parse_bad(b, n, "overflow");
	n = tcp_put_rma(b, TCP_OP_WRITE, 0, 0, 0, &edge, 1, 9);
	parse_bad(b, n, "wraps");
	/* a span that ends exactly at 2^64 counts as wrapping */
	edge.len = 8;
	n = tcp_put_rma(b, TCP_OP_WRITE, 0, 0, 0, &edge, 1, 8);
	parse_bad(b, n, "wraps");

	n = tcp_put_rma(b, TCP_OP_WRITE, 0, 0, 0, iov, 4, 31);
	parse_bad(b, n, "WRITE: payload");
	n = tcp_put_rma(b, TCP_OP_WRITE, 0, 0, 0, iov, 4, 33);
	parse_bad(b, n, "WRITE: payload");
	n = tcp_put_rma(b, TCP_OP_READ_REQ, 0, 0, 0, iov, 4, 32);
	parse_bad(b, n, "READ_REQ: payload");

	iov[3].len = MAXP - 23;
	n = tcp_put_rma(b, TCP_OP_WRITE, 0, 0, 0, iov, 4, MAXP + 1);
	parse_bad(b, n, "too long");
	n = tcp_put_rma(b, TCP_OP_READ_REQ, 0, 0, 0, iov, 4, 0);
	parse_bad(b, n, "too long");
}

Test(tcp_proto, atomic_checks)
{
	unsigned char b[TCP_HDR_MAX];
	size_t n;

	n = tcp_put_atomic(b, 0, 0, 0, 0, 3, FI_SUM, FI_INT32, 1, 4);
	parse_bad(b, n, "kind");
	n = tcp_put_atomic(b, 0, 0, 0, 0, 0xff, FI_SUM, FI_INT32, 1, 4);
	parse_bad(b, n, "kind");
	/* op outside its kind's list, op on a datatype it does not take */
	n = tcp_put_atomic(b, 0, 0, 0, 0, TCP_ATOMIC_WRITE, FI_CSWAP,
			   FI_INT32, 1, 4);
	parse_bad(b, n, "not valid");
	n = tcp_put_atomic(b, 0, 0, 0, 0, TCP_ATOMIC_WRITE, FI_ATOMIC_READ,
			   FI_INT32, 1, 4);
	parse_bad(b, n, "not valid");
	n = tcp_put_atomic(b, 0, 0, 0, 0, TCP_ATOMIC_COMPARE, FI_SUM,
			   FI_INT32, 1, 8);
	parse_bad(b, n, "not valid");
	n = tcp_put_atomic(b, 0, 0, 0, 0, TCP_ATOMIC_WRITE, FI_BOR, FI_FLOAT,
			   1, 4);
	parse_bad(b, n, "not valid");
	n = tcp_put_atomic(b, 0, 0, 0, 0, TCP_ATOMIC_WRITE, FI_SUM, 0xee, 1,
			   4);
	parse_bad(b, n, "not valid");
	n = tcp_put_atomic(b, 0, 0, 0, 0, TCP_ATOMIC_WRITE, 0xee, FI_INT32, 1,
			   4);
	parse_bad(b, n, "not valid");

	n = tcp_put_atomic(b, 0, 0, 0, 0, TCP_ATOMIC_WRITE, FI_SUM, FI_INT32,
			   0, 0);
	parse_bad(b, n, "count is zero");
	n = tcp_put_atomic(b, 0, 0, 0, 0, TCP_ATOMIC_WRITE, FI_SUM, FI_INT32,
			   2, 4);
	parse_bad(b, n, "count operands");
	n = tcp_put_atomic(b, 0, 0, 0, 0, TCP_ATOMIC_COMPARE, FI_CSWAP,
			   FI_INT32, 2, 8);
	parse_bad(b, n, "count operands");
	n = tcp_put_atomic(b, 0, 0, 0, 0, TCP_ATOMIC_FETCH, FI_SUM, FI_INT64,
			   ~0u, (uint64_t)~0u * 8);
	parse_bad(b, n, "too long");
	n = tcp_put_atomic(b, 0, 0, ~0ULL - 3, 0, TCP_ATOMIC_WRITE, FI_SUM,
			   FI_INT64, 1, 8);
	parse_bad(b, n, "wraps");
	n = tcp_put_atomic(b, 0, 0, 0, 0, TCP_ATOMIC_WRITE, FI_SUM, FI_INT32,
			   1, 4);
	b[OFF(tcp_atomic, rsvd)] = 1;
	parse_bad(b, n, "reserved");
}

/* ---- bounded random mutation ------------------------------------------ */

/* xorshift64*: fixed seed, so a failure is reproducible. */
static uint64_t rng_state = 0x9e3779b97f4a7c15ULL;

static uint64_t rnd(void)
{
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 0x2545f4914f6cdd1dULL;
}

static void check_accepted(const struct tcp_frame *f, ssize_t r,
			   size_t avail, const struct tcp_proto_limits *l)
{
	const char *bad = tcp_check_accepted(f, r, avail, l);

	cr_assert_null(bad, "accepted %s frame breaks its promise: %s",
		       tcp_op_str(f->op), bad);
}

#define SEEDS 14

static size_t make_seed(unsigned int i, unsigned char *b)
{
	static const struct fi_rma_iov iov[3] = {
		{ 0x1000, 64, 1 }, { 0x9000, 0, 2 }, { 0, 4096, 3 }
	};

	switch (i) {
	case 0: return tcp_put_hello(b, TCP_EPK_RDM, 16, 0);
	case 1: return tcp_put_hello(b, TCP_EPK_MSG, 0, 40);
	case 2: return tcp_put_hello_ack(b, 0, 8);
	case 3: return tcp_put_hello_ack(b, FI_ECONNREFUSED, 0);
	case 4: return tcp_put_msg(b, TCP_OP_MSG, TCP_F_ACK_REQ, 0, 0, 5, 100);
	case 5: return tcp_put_msg(b, TCP_OP_TAGGED, TCP_F_CQ_DATA, 9, 1, 0, 0);
	case 6: return tcp_put_resp(b, TCP_OP_ACK, 5, 0, 0);
	case 7: return tcp_put_resp(b, TCP_OP_RESP, 6, 0, 4096);
	case 8: return tcp_put_rma(b, TCP_OP_WRITE, 0, 7, 0, iov, 3, 4160);
	case 9: return tcp_put_rma(b, TCP_OP_READ_REQ, 0, 8, 0, iov, 1, 0);
	case 10:
		return tcp_put_atomic(b, 0, 9, 0x40, 1, TCP_ATOMIC_WRITE,
				      FI_BXOR, FI_UINT16, 8, 16);
	case 11:
		return tcp_put_atomic(b, 0, 10, 0x40, 1, TCP_ATOMIC_FETCH,
				      FI_MAX, FI_FLOAT, 2, 8);
	case 12:
		return tcp_put_atomic(b, 0, 11, 0x40, 1, TCP_ATOMIC_COMPARE,
				      FI_MSWAP, FI_UINT64, 1, 16);
	default:
		return tcp_put_rma(b, TCP_OP_WRITE, TCP_F_CQ_DATA, 12, 3, iov,
				   2, 64);
	}
}

static void mutate(unsigned char *b, size_t *len)
{
	static const uint64_t interesting[] = {
		0, 1, 2, 0x7f, 0x80, 0xff, 0x100, 0xffff, 0x10000,
		0x7fffffff, 0xffffffff, 1ULL << 32, ~0ULL, ~0ULL - 1,
		MAXP, MAXP + 1, TCP_HDR_MAX, TCP_MSG_HDR_LEN,
	};
	unsigned int k, rounds = 1 + rnd() % 3;
	size_t off, w;
	uint64_t v;

	for (k = 0; k < rounds; k++) {
		off = rnd() % TCP_HDR_MAX;
		switch (rnd() % 5) {
		case 0: /* one bit */
			b[off] ^= (unsigned char)(1u << (rnd() % 8));
			break;
		case 1: /* one byte */
			b[off] = (unsigned char)rnd();
			break;
		case 2: /* an interesting value over a field-sized run */
			w = (size_t)1 << (rnd() % 4);
			off &= ~(w - 1);
			if (off + w > TCP_HDR_MAX)
				break;
			v = htole64(interesting[rnd() % (sizeof(interesting) /
							 sizeof(*interesting))]);
			memcpy(b + off, &v, w);
			break;
		case 3: /* hdr_len or payload_len nudged */
			if (rnd() & 1)
				put16(b, B_HDR_LEN, (uint16_t)(*len + rnd() % 49 - 24));
			else
				put64(b, B_PAYLOAD, rnd() % (2 * MAXP));
			break;
		default: /* the buffer's length */
			*len = rnd() % (TCP_HDR_MAX + 1);
			break;
		}
	}
}

Test(tcp_proto, random_mutations, .timeout = 60)
{
	static const struct tcp_proto_limits limits[] = {
		{ MAXP, ALL_OPS },
		{ 0, ALL_OPS },
		{ 64, TCP_OPS_DATA },
		{ ~0ULL, ALL_OPS },
		{ MAXP, TCP_OPBIT(TCP_OP_HELLO) },
		{ MAXP, TCP_OPBIT(TCP_OP_HELLO_ACK) },
	};
	unsigned int accepted[TCP_OP_MAX + 1] = { 0 };
	unsigned char b[TCP_HDR_MAX];
	const struct tcp_proto_limits *l;
	struct tcp_frame f;
	const char *why;
	unsigned int iter, op;
	size_t len;
	ssize_t r;

	for (iter = 0; iter < 200000; iter++) {
		memset(b, 0, sizeof(b));
		len = make_seed(iter % SEEDS, b);
		/* usually the default limits; now and then another set */
		l = &limits[rnd() % 4 ? 0 : rnd() % 6];
		mutate(b, &len);
		why = NULL;
		r = parse_n(b, len, l, &f, &why);
		if (r > 0) {
			check_accepted(&f, r, len, l);
			accepted[f.op]++;
		} else if (r < 0) {
			cr_assert_eq(r, -FI_EPROTO);
			cr_assert_not_null(why);
		}
		if (iter % 32 == 0)
			check_prefixes(b, len, l);
	}
	for (op = 1; op <= TCP_OP_MAX; op++)
		cr_assert_gt(accepted[op], 0, "no %s accepted",
			     tcp_op_str(op));
}

/* A scalable endpoint's pairs say which they are and which they want. */
Test(tcp_proto, hello_contexts)
{
	unsigned char b[TCP_HDR_MAX + 16] = { 0 };
	struct tcp_frame f;
	const char *why = NULL;
	ssize_t n;

	n = (ssize_t)tcp_put_hello_ctx(b, TCP_EPK_RDM, 16, 0, 7, 255);
	n = tcp_frame_parse(b, (size_t)n, &lim, &f, &why);
	cr_assert_gt(n, 0, "parse: %s", why ? why : "");
	cr_assert_eq(f.hello.src_ctx, 7);
	cr_assert_eq(f.hello.dst_ctx, 255);
	n = (ssize_t)tcp_put_hello(b, TCP_EPK_RDM, 16, 0);
	n = tcp_frame_parse(b, (size_t)n, &lim, &f, &why);
	cr_assert_gt(n, 0);
	cr_assert_eq(f.hello.src_ctx, 0);
	cr_assert_eq(f.hello.dst_ctx, 0);
}
