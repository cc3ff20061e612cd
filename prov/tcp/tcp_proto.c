/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The tcp wire protocol's one parser (tcp_proto.h, docs/tcp-protocol.md).
 *
 * Every field a peer sends passes through here before anything else reads
 * it.  The parser works in two steps so that a peer cannot make us wait on
 * garbage: as soon as the 16 base bytes are there, the op, the reserved
 * fields, the flags and hdr_len are judged (hdr_len must be the op's exact
 * size); only then do we wait for the rest of the header, at most
 * TCP_HDR_MAX bytes.  A verdict depends only on the bytes it looked at, so
 * a prefix of a frame is refused only if the whole frame would be.
 *
 * Wire structs are copied out of the buffer with memcpy (the buffer need
 * not be aligned) and converted with le*toh; no byte at or past buf +
 * avail is read.  No I/O, no allocation, no state.
 */
#include "tcp_proto.h"

#include <errno.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <sys/socket.h>

#include "weft/ofi.h"

#include "weft/util_atomic.h"
#include "weft/util_ifaddr.h"

/*
 * libfabric 1.17's fi_errno.h lists FI_EPROTO but leaves it commented out;
 * its value there would be EPROTO, as for the other errno-based codes.
 */

#define BASE_LEN sizeof(struct tcp_base)
#define RMA_HDR_LEN (BASE_LEN + sizeof(struct tcp_rma))

static const char *const op_names[] = {
	[TCP_OP_HELLO] = "HELLO",	    [TCP_OP_HELLO_ACK] = "HELLO_ACK",
	[TCP_OP_MSG] = "MSG",		    [TCP_OP_TAGGED] = "TAGGED",
	[TCP_OP_ACK] = "ACK",		    [TCP_OP_WRITE] = "WRITE",
	[TCP_OP_READ_REQ] = "READ_REQ",	    [TCP_OP_ATOMIC] = "ATOMIC",
	[TCP_OP_RESP] = "RESP",
};

const char *tcp_op_str(unsigned int op)
{
	if (op < 1 || op > TCP_OP_MAX)
		return "unknown";
	return op_names[op];
}

/*
 * The flags each op may carry.  Remote CQ data travels in a data field,
 * which only MSG, TAGGED and the RMA header have; a READ_REQ has the field
 * but fi_read carries no remote CQ data.  Only a message can ask for an
 * ACK: RMA and atomics are always answered with RESP, after a commit
 * when a write or an atomic asks for one.
 */
static uint16_t op_flags(unsigned int op)
{
	switch (op) {
	case TCP_OP_MSG:
		return TCP_F_CQ_DATA | TCP_F_ACK_REQ | TCP_F_COLL;
	case TCP_OP_TAGGED:
		return TCP_F_CQ_DATA | TCP_F_ACK_REQ;
	case TCP_OP_WRITE:
		return TCP_F_CQ_DATA | TCP_F_COMMIT;
	case TCP_OP_ATOMIC:
		return TCP_F_COMMIT;
	default:
		return 0;
	}
}

/* The exact header length of each op; RMA ops by their iov count. */
static bool hdr_len_ok(unsigned int op, size_t hdr_len)
{
	switch (op) {
	case TCP_OP_HELLO:
		return hdr_len == BASE_LEN + sizeof(struct tcp_hello);
	case TCP_OP_HELLO_ACK:
		return hdr_len == BASE_LEN + sizeof(struct tcp_hello_ack);
	case TCP_OP_MSG:
	case TCP_OP_TAGGED:
		return hdr_len == TCP_MSG_HDR_LEN;
	case TCP_OP_ACK:
	case TCP_OP_RESP:
		return hdr_len == BASE_LEN + sizeof(struct tcp_resp);
	case TCP_OP_WRITE:
	case TCP_OP_READ_REQ:
		return hdr_len > RMA_HDR_LEN && hdr_len <= TCP_HDR_MAX &&
		       (hdr_len - RMA_HDR_LEN) % sizeof(struct tcp_rma_iov) ==
			       0;
	case TCP_OP_ATOMIC:
		return hdr_len == BASE_LEN + sizeof(struct tcp_atomic);
	default:
		return false;
	}
}

/* Step one: the 16 base bytes alone.  NULL when they are acceptable. */
static const char *check_base(const struct tcp_base *b,
			      const struct tcp_proto_limits *lim)
{
	unsigned int op = b->op;
	uint16_t flags = le16toh(b->flags);

	if (op < 1 || op > TCP_OP_MAX)
		return "unknown op";
	if (!(lim->allowed_ops & TCP_OPBIT(op)))
		return "op not allowed on this connection now";
	if (b->rsvd0 || b->rsvd1)
		return "reserved field of base header not zero";
	if (flags & ~TCP_F_ALL)
		return "unknown flag";
	if (flags & ~op_flags(op))
		return "flag not valid for this op";
	if (!hdr_len_ok(op, le16toh(b->hdr_len)))
		return "hdr_len is not the op's header length";
	return NULL;
}

static const char *parse_hello(const unsigned char *p, struct tcp_frame *f)
{
	struct tcp_hello h;
	uint16_t kind, addr_len;

	memcpy(&h, p, sizeof(h));
	if (le64toh(h.magic) != TCP_PROTO_MAGIC)
		return "HELLO: bad magic";
	if (le16toh(h.version) != TCP_PROTO_VERSION)
		return "HELLO: unsupported protocol version";
	kind = le16toh(h.ep_kind);
	if (kind != TCP_EPK_RDM && kind != TCP_EPK_MSG)
		return "HELLO: unknown endpoint kind";
	if (kind == TCP_EPK_MSG && (h.src_ctx || h.dst_ctx))
		return "HELLO: contexts of an MSG endpoint";
	addr_len = le16toh(h.addr_len);
	if (addr_len > TCP_ADDR_MAX)
		return "HELLO: address too long";
	if (addr_len > f->payload_len)
		return "HELLO: address longer than payload";
	/* An RDM acceptor names the connecting side by this address. */
	if (kind == TCP_EPK_RDM && !addr_len)
		return "HELLO: RDM endpoint without an address";
	if (f->payload_len - addr_len > TCP_CM_DATA_MAX)
		return "HELLO: connection data too long";
	f->hello.version = TCP_PROTO_VERSION;
	f->hello.ep_kind = kind;
	f->hello.addr_len = addr_len;
	f->hello.cm_len = (uint16_t)(f->payload_len - addr_len);
	f->hello.src_ctx = h.src_ctx;
	f->hello.dst_ctx = h.dst_ctx;
	return NULL;
}

static const char *parse_hello_ack(const unsigned char *p,
				   struct tcp_frame *f)
{
	struct tcp_hello_ack h;
	uint32_t status;

	memcpy(&h, p, sizeof(h));
	if (le64toh(h.magic) != TCP_PROTO_MAGIC)
		return "HELLO_ACK: bad magic";
	if (le16toh(h.version) != TCP_PROTO_VERSION)
		return "HELLO_ACK: unsupported protocol version";
	if (h.rsvd)
		return "HELLO_ACK: reserved field not zero";
	status = le32toh(h.status);
	if (status > UINT16_MAX)
		return "HELLO_ACK: status out of range";
	if (f->payload_len > TCP_CM_DATA_MAX)
		return "HELLO_ACK: connection data too long";
	f->hello_ack.version = TCP_PROTO_VERSION;
	f->hello_ack.status = status;
	return NULL;
}

static const char *parse_msg(const unsigned char *p,
			     const struct tcp_proto_limits *lim,
			     struct tcp_frame *f)
{
	struct tcp_msg m;

	memcpy(&m, p, sizeof(m));
	if (f->payload_len > lim->max_payload)
		return "MSG/TAGGED: payload too long";
	f->msg.tag = le64toh(m.tag);
	f->msg.data = le64toh(m.data);
	f->msg.tx_id = le64toh(m.tx_id);
	return NULL;
}

/* ACK and RESP.  A failed request is answered without data. */
static const char *parse_resp(const unsigned char *p,
			      const struct tcp_proto_limits *lim,
			      struct tcp_frame *f)
{
	struct tcp_resp r;
	uint32_t status;

	memcpy(&r, p, sizeof(r));
	if (r.rsvd)
		return "ACK/RESP: reserved field not zero";
	status = le32toh(r.status);
	if (status > UINT16_MAX)
		return "ACK/RESP: status out of range";
	if (f->op == TCP_OP_ACK && f->payload_len)
		return "ACK: payload not empty";
	if (f->payload_len > lim->max_payload)
		return "RESP: payload too long";
	if (status && f->payload_len)
		return "RESP: payload on a failed request";
	f->resp.tx_id = le64toh(r.tx_id);
	f->resp.status = status;
	return NULL;
}

/*
 * WRITE and READ_REQ.  The iov count must agree with hdr_len, which step
 * one already bounded to 1..TCP_RMA_IOV_MAX iovs.  No iov may wrap the
 * address space, so the target's bounds checks (addr + len) cannot wrap.
 */
static const char *parse_rma(const unsigned char *p,
			     const struct tcp_proto_limits *lim,
			     struct tcp_frame *f)
{
	struct tcp_rma r;
	struct tcp_rma_iov w;
	uint32_t i, count;
	uint64_t sum = 0;

	memcpy(&r, p, sizeof(r));
	p += sizeof(r);
	if (r.rsvd)
		return "RMA: reserved field not zero";
	count = le32toh(r.iov_count);
	if (count < 1 || count > TCP_RMA_IOV_MAX)
		return "RMA: iov count out of range";
	if (f->hdr_len != RMA_HDR_LEN + count * sizeof(struct tcp_rma_iov))
		return "RMA: iov count does not match hdr_len";
	for (i = 0; i < count; i++, p += sizeof(w)) {
		memcpy(&w, p, sizeof(w));
		f->rma.iov[i].addr = le64toh(w.addr);
		f->rma.iov[i].len = le64toh(w.len);
		f->rma.iov[i].key = le64toh(w.key);
		if (f->rma.iov[i].addr + f->rma.iov[i].len <
		    f->rma.iov[i].addr)
			return "RMA: iov wraps the address space";
		if (__builtin_add_overflow(sum, f->rma.iov[i].len, &sum))
			return "RMA: iov lengths overflow";
	}
	if (sum > lim->max_payload)
		return "RMA: length too long";
	if (f->op == TCP_OP_WRITE && f->payload_len != sum)
		return "WRITE: payload is not the iovs' length";
	if (f->op == TCP_OP_READ_REQ && f->payload_len)
		return "READ_REQ: payload not empty";
	f->rma.tx_id = le64toh(r.tx_id);
	f->rma.data = le64toh(r.data);
	f->rma.iov_count = count;
	f->rma.len = sum;
	return NULL;
}

static const enum util_atomic_class atomic_class[] = {
	[TCP_ATOMIC_WRITE] = UTIL_ATOMIC_BASE,
	[TCP_ATOMIC_FETCH] = UTIL_ATOMIC_FETCH,
	[TCP_ATOMIC_COMPARE] = UTIL_ATOMIC_COMPARE,
};

/*
 * ATOMIC: the payload is count operands, then for compare count compare
 * values; the target span (count elements at addr) may not wrap.
 */
static const char *parse_atomic(const unsigned char *p,
				const struct tcp_proto_limits *lim,
				struct tcp_frame *f)
{
	struct tcp_atomic a;
	uint64_t addr, span, want;
	uint32_t count;
	size_t dt_size;

	memcpy(&a, p, sizeof(a));
	if (a.rsvd)
		return "ATOMIC: reserved field not zero";
	if (a.kind > TCP_ATOMIC_COMPARE)
		return "ATOMIC: unknown kind";
	if (!util_atomic_valid((enum fi_op)a.op, (enum fi_datatype)a.datatype,
			       atomic_class[a.kind]))
		return "ATOMIC: op and datatype not valid for this kind";
	dt_size = util_atomic_dt_size((enum fi_datatype)a.datatype);
	if (!dt_size)
		return "ATOMIC: datatype not supported";
	count = le32toh(a.count);
	if (!count)
		return "ATOMIC: count is zero";
	if (__builtin_mul_overflow((uint64_t)count, (uint64_t)dt_size, &span))
		return "ATOMIC: length overflows";
	want = span;
	if (a.kind == TCP_ATOMIC_COMPARE &&
	    __builtin_mul_overflow(span, (uint64_t)2, &want))
		return "ATOMIC: length overflows";
	if (want > lim->max_payload)
		return "ATOMIC: payload too long";
	if (f->payload_len != want)
		return "ATOMIC: payload is not count operands";
	addr = le64toh(a.addr);
	if (addr + span < addr)
		return "ATOMIC: target wraps the address space";
	f->atomic.tx_id = le64toh(a.tx_id);
	f->atomic.addr = addr;
	f->atomic.key = le64toh(a.key);
	f->atomic.kind = a.kind;
	f->atomic.op = a.op;
	f->atomic.datatype = a.datatype;
	f->atomic.count = count;
	f->atomic.dt_size = dt_size;
	return NULL;
}

/* Step two: the whole header is there (hdr_len bytes at p - BASE_LEN). */
static const char *parse_op(const unsigned char *p,
			    const struct tcp_proto_limits *lim,
			    struct tcp_frame *f)
{
	switch (f->op) {
	case TCP_OP_HELLO:
		return parse_hello(p, f);
	case TCP_OP_HELLO_ACK:
		return parse_hello_ack(p, f);
	case TCP_OP_MSG:
	case TCP_OP_TAGGED:
		return parse_msg(p, lim, f);
	case TCP_OP_ACK:
	case TCP_OP_RESP:
		return parse_resp(p, lim, f);
	case TCP_OP_WRITE:
	case TCP_OP_READ_REQ:
		return parse_rma(p, lim, f);
	case TCP_OP_ATOMIC:
		return parse_atomic(p, lim, f);
	default: /* check_base let no other op through */
		return "unknown op";
	}
}

ssize_t tcp_frame_parse(const void *buf, size_t avail,
			const struct tcp_proto_limits *lim,
			struct tcp_frame *f, const char **why)
{
	const unsigned char *p = buf;
	struct tcp_frame t = { 0 };
	struct tcp_base b;
	const char *bad;

	if (avail < BASE_LEN)
		return 0;
	memcpy(&b, p, sizeof(b));
	bad = check_base(&b, lim);
	if (bad)
		goto refuse;
	t.op = b.op;
	t.flags = le16toh(b.flags);
	t.hdr_len = le16toh(b.hdr_len);
	t.payload_len = le64toh(b.payload_len);
	if (avail < t.hdr_len)
		return 0;
	bad = parse_op(p + BASE_LEN, lim, &t);
	if (bad)
		goto refuse;
	*f = t;
	return (ssize_t)t.hdr_len;
refuse:
	if (why)
		*why = bad;
	return -FI_EPROTO;
}

const char *tcp_hello_check(const struct tcp_frame *f, const void *payload,
			    uint16_t ep_kind, struct sockaddr_storage *sa)
{
	size_t alen = f->hello.addr_len;

	memset(sa, 0, sizeof(*sa));
	if (f->op != TCP_OP_HELLO)
		return "not a HELLO";
	if (f->hello.ep_kind != ep_kind)
		return "HELLO from another endpoint type";
	if (ep_kind != TCP_EPK_RDM)
		return NULL; /* MSG: the address, if any, is not used */
	if (alen < sizeof(sa_family_t) || alen > sizeof(*sa))
		return "HELLO: address of no known size";
	memcpy(sa, payload, alen);
	if ((sa->ss_family != AF_INET && sa->ss_family != AF_INET6) ||
	    alen < util_sockaddr_len(sa)) {
		memset(sa, 0, sizeof(*sa));
		return "HELLO: not an IP address";
	}
	return NULL;
}
