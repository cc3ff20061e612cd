/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The tcp provider's wire protocol, version 1 (docs/tcp-protocol.md).
 *
 * Every frame is a 16-byte base header, an op-specific header whose size
 * the op fixes (plus, for RMA, an array of remote iovs whose count it
 * carries), then payload_len bytes of payload.  Every integer is
 * little-endian.  hdr_len in the base header is the total header length
 * (base + op header + iov array) and must be exactly what the op implies.
 *
 * This file holds the wire structs and the encoders (pure functions that
 * fill a buffer).  tcp_proto.c holds the one parser: every field read from
 * a peer is checked there, before any other code sees it.  Neither does any
 * I/O, so both can be tested and fuzzed alone.
 */
#ifndef WEFT_TCP_PROTO_H
#define WEFT_TCP_PROTO_H

#include <assert.h>
#include <endian.h>
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/types.h>

#include "weft/ofi.h"

/* A peer broke the protocol: the errno value (fi_errno.h of 1.17 leaves
 * FI_EPROTO out). */
#ifndef FI_EPROTO
#define FI_EPROTO EPROTO
#endif

#define TCP_PROTO_MAGIC 0x3150435474666577ULL /* "weftTCP1" */
#define TCP_PROTO_VERSION 1

/* Ops (tcp_base.op). */
enum tcp_op {
	TCP_OP_HELLO = 1,     /* first frame of the connecting side */
	TCP_OP_HELLO_ACK = 2, /* the accepting side's answer */
	TCP_OP_MSG = 3,	      /* a message (FI_MSG) */
	TCP_OP_TAGGED = 4,    /* a tagged message (FI_TAGGED) */
	TCP_OP_ACK = 5,	      /* delivery of a message that asked for it */
	TCP_OP_WRITE = 6,     /* RMA write: payload is the data */
	TCP_OP_READ_REQ = 7,  /* RMA read request */
	TCP_OP_ATOMIC = 8,    /* atomic: payload is operands [+ compare] */
	TCP_OP_RESP = 9,      /* answer to WRITE, READ_REQ, ATOMIC */
	TCP_OP_MAX = TCP_OP_RESP,
};

#define TCP_OPBIT(op) (1u << (op))
/* Ops a connection accepts once its handshake is over. */
#define TCP_OPS_DATA                                                          \
	(TCP_OPBIT(TCP_OP_MSG) | TCP_OPBIT(TCP_OP_TAGGED) |                   \
	 TCP_OPBIT(TCP_OP_ACK) | TCP_OPBIT(TCP_OP_WRITE) |                    \
	 TCP_OPBIT(TCP_OP_READ_REQ) | TCP_OPBIT(TCP_OP_ATOMIC) |              \
	 TCP_OPBIT(TCP_OP_RESP))

/* Frame flags (tcp_base.flags). */
#define TCP_F_CQ_DATA (1u << 0) /* data carries remote CQ data */
#define TCP_F_ACK_REQ (1u << 1) /* MSG/TAGGED: answer with ACK */
#define TCP_F_COLL (1u << 2)	/* MSG: the collectives' own (UTIL_RDM_COLL) */
/* WRITE, ATOMIC: make FI_RMA_PMEM ranges durable before the RESP. */
#define TCP_F_COMMIT (1u << 3)
#define TCP_F_ALL (TCP_F_CQ_DATA | TCP_F_ACK_REQ | TCP_F_COLL | TCP_F_COMMIT)

/* HELLO ep_type */
enum tcp_ep_kind {
	TCP_EPK_RDM = 1,
	TCP_EPK_MSG = 2,
};

/* Atomic kinds (tcp_atomic.kind). */
enum tcp_atomic_kind {
	TCP_ATOMIC_WRITE = 0,
	TCP_ATOMIC_FETCH = 1,
	TCP_ATOMIC_COMPARE = 2,
};

#define TCP_RMA_IOV_MAX 4   /* remote iovs in one WRITE or READ_REQ */
#define TCP_CM_DATA_MAX 256 /* private data of HELLO / HELLO_ACK */
#define TCP_ADDR_MAX 128    /* a sender's address in HELLO */
/* Context pairs of a scalable endpoint (HELLO's src_ctx, dst_ctx). */
#define TCP_MAX_CTX 256

struct tcp_base {
	uint8_t op;
	uint8_t rsvd0;
	uint16_t flags;
	uint16_t hdr_len; /* base + op header + iovs */
	uint16_t rsvd1;
	uint64_t payload_len;
};

struct tcp_hello {
	uint64_t magic;
	uint16_t version;
	uint16_t ep_kind;  /* enum tcp_ep_kind */
	uint16_t addr_len; /* payload: the sender's address, then cm data */
	/* RDM, scalable endpoints: the sender's context pair and the one it
	 * wants at the address it connected to (0: a plain endpoint's). */
	uint8_t src_ctx;
	uint8_t dst_ctx;
};

struct tcp_hello_ack {
	uint64_t magic;
	uint16_t version;
	uint16_t rsvd;
	uint32_t status; /* 0: accepted; else a positive FI_E* (refused) */
};

struct tcp_msg {
	uint64_t tag;
	uint64_t data;
	uint64_t tx_id;
};

struct tcp_resp { /* ACK and RESP */
	uint64_t tx_id;
	uint32_t status; /* 0, or a positive FI_E* */
	uint32_t rsvd;
};

struct tcp_rma_iov {
	uint64_t addr;
	uint64_t len;
	uint64_t key;
};

struct tcp_rma { /* WRITE and READ_REQ; iov_count tcp_rma_iov follow */
	uint64_t tx_id;
	uint64_t data;
	uint32_t iov_count;
	uint32_t rsvd;
};

struct tcp_atomic {
	uint64_t tx_id;
	uint64_t addr;
	uint64_t key;
	uint8_t kind; /* enum tcp_atomic_kind */
	uint8_t op;   /* enum fi_op */
	uint8_t datatype; /* enum fi_datatype */
	uint8_t rsvd;
	uint32_t count; /* elements; payload: operands [then compare values] */
};

static_assert(sizeof(struct tcp_base) == 16, "wire layout");
static_assert(sizeof(struct tcp_hello) == 16, "wire layout");
static_assert(sizeof(struct tcp_hello_ack) == 16, "wire layout");
static_assert(sizeof(struct tcp_msg) == 24, "wire layout");
static_assert(sizeof(struct tcp_resp) == 16, "wire layout");
static_assert(sizeof(struct tcp_rma_iov) == 24, "wire layout");
static_assert(sizeof(struct tcp_rma) == 24, "wire layout");
static_assert(sizeof(struct tcp_atomic) == 32, "wire layout");

/* The longest header of any frame. */
#define TCP_HDR_MAX                                                           \
	(sizeof(struct tcp_base) + sizeof(struct tcp_rma) +                   \
	 TCP_RMA_IOV_MAX * sizeof(struct tcp_rma_iov))
#define TCP_MSG_HDR_LEN (sizeof(struct tcp_base) + sizeof(struct tcp_msg))

/* What a connection's owner allows a peer to send. */
struct tcp_proto_limits {
	uint64_t max_payload; /* MSG/TAGGED/WRITE/RESP payload, READ length */
	uint32_t allowed_ops; /* TCP_OPBIT()s accepted in this state */
};

/* A frame header as the parser decoded and checked it (host order). */
struct tcp_frame {
	uint8_t op;
	uint16_t flags;
	size_t hdr_len;
	uint64_t payload_len;
	union {
		struct {
			uint16_t version;
			uint16_t ep_kind;
			uint16_t addr_len; /* <= payload_len, <= TCP_ADDR_MAX */
			uint16_t cm_len; /* payload_len - addr_len */
			uint8_t src_ctx, dst_ctx; /* RDM: 0 for MSG */
		} hello;
		struct {
			uint16_t version;
			uint32_t status;
		} hello_ack;
		struct {
			uint64_t tag, data, tx_id;
		} msg;
		struct {
			uint64_t tx_id;
			uint32_t status;
		} resp; /* ACK and RESP */
		struct {
			uint64_t tx_id, data;
			uint32_t iov_count; /* 1..TCP_RMA_IOV_MAX */
			struct fi_rma_iov iov[TCP_RMA_IOV_MAX];
			uint64_t len; /* sum of iov lens (== payload for WRITE) */
		} rma;
		struct {
			uint64_t tx_id, addr, key;
			uint8_t kind, op, datatype;
			uint32_t count;
			size_t dt_size; /* bytes of one element */
		} atomic;
	};
};

/*
 * Decode and check the frame header at the start of buf (avail bytes
 * there).  Returns the header length (> 0) with f filled when the whole
 * header is there and valid; 0 when more bytes are needed (nothing
 * decided yet); -FI_EPROTO when the header is malformed or not allowed by
 * lim, with a static string saying why in *why (when why is non-NULL).
 * Reads no byte at or past buf + avail.
 */
ssize_t tcp_frame_parse(const void *buf, size_t avail,
			const struct tcp_proto_limits *lim,
			struct tcp_frame *f, const char **why);

/*
 * The acceptor's verdict on a HELLO that tcp_frame_parse accepted (f),
 * whose f->payload_len payload bytes are at payload: NULL when a connection
 * from that peer may be taken by an endpoint of kind ep_kind (TCP_EPK_*),
 * else a static string saying why not.  For an RDM HELLO the sender's
 * address is checked to be an IPv4 or IPv6 sockaddr that its addr_len
 * covers, and is copied, zero padded, into *sa; *sa is zeroed for MSG.
 * Pure: reads payload and f alone, no byte past addr_len.
 */
struct sockaddr_storage;
const char *tcp_hello_check(const struct tcp_frame *f, const void *payload,
			    uint16_t ep_kind, struct sockaddr_storage *sa);

/* Name of an op, for logs ("MSG", ... "unknown"). */
const char *tcp_op_str(unsigned int op);

/* ---- encoders: fill buf (at least TCP_HDR_MAX bytes), return hdr_len --- */

static inline void tcp_put_base(void *buf, uint8_t op, uint16_t flags,
				size_t hdr_len, uint64_t payload_len)
{
	struct tcp_base b = {
		.op = op,
		.flags = htole16(flags),
		.hdr_len = htole16((uint16_t)hdr_len),
		.payload_len = htole64(payload_len),
	};

	memcpy(buf, &b, sizeof(b));
}

static inline size_t tcp_put_msg(void *buf, uint8_t op, uint16_t flags,
				 uint64_t tag, uint64_t data, uint64_t tx_id,
				 uint64_t payload_len)
{
	struct tcp_msg m = {
		.tag = htole64(tag),
		.data = htole64(data),
		.tx_id = htole64(tx_id),
	};

	tcp_put_base(buf, op, flags, TCP_MSG_HDR_LEN, payload_len);
	memcpy((char *)buf + sizeof(struct tcp_base), &m, sizeof(m));
	return TCP_MSG_HDR_LEN;
}

static inline size_t tcp_put_hello_ctx(void *buf, uint16_t ep_kind,
				       uint16_t addr_len, uint16_t cm_len,
				       uint8_t src_ctx, uint8_t dst_ctx)
{
	struct tcp_hello h = {
		.magic = htole64(TCP_PROTO_MAGIC),
		.version = htole16(TCP_PROTO_VERSION),
		.ep_kind = htole16(ep_kind),
		.addr_len = htole16(addr_len),
		.src_ctx = src_ctx,
		.dst_ctx = dst_ctx,
	};
	size_t len = sizeof(struct tcp_base) + sizeof(h);

	tcp_put_base(buf, TCP_OP_HELLO, 0, len, (uint64_t)addr_len + cm_len);
	memcpy((char *)buf + sizeof(struct tcp_base), &h, sizeof(h));
	return len;
}

/* HELLO of a plain endpoint (contexts 0). */
static inline size_t tcp_put_hello(void *buf, uint16_t ep_kind,
				   uint16_t addr_len, uint16_t cm_len)
{
	return tcp_put_hello_ctx(buf, ep_kind, addr_len, cm_len, 0, 0);
}

static inline size_t tcp_put_hello_ack(void *buf, uint32_t status,
				       uint16_t cm_len)
{
	struct tcp_hello_ack h = {
		.magic = htole64(TCP_PROTO_MAGIC),
		.version = htole16(TCP_PROTO_VERSION),
		.status = htole32(status),
	};
	size_t len = sizeof(struct tcp_base) + sizeof(h);

	tcp_put_base(buf, TCP_OP_HELLO_ACK, 0, len, cm_len);
	memcpy((char *)buf + sizeof(struct tcp_base), &h, sizeof(h));
	return len;
}

/* ACK (no payload) or RESP (payload: read data or fetched values). */
static inline size_t tcp_put_resp(void *buf, uint8_t op, uint64_t tx_id,
				  uint32_t status, uint64_t payload_len)
{
	struct tcp_resp r = {
		.tx_id = htole64(tx_id),
		.status = htole32(status),
	};
	size_t len = sizeof(struct tcp_base) + sizeof(r);

	tcp_put_base(buf, op, 0, len, payload_len);
	memcpy((char *)buf + sizeof(struct tcp_base), &r, sizeof(r));
	return len;
}

/* WRITE (payload_len = the data) or READ_REQ (payload_len 0). */
static inline size_t tcp_put_rma(void *buf, uint8_t op, uint16_t flags,
				 uint64_t tx_id, uint64_t data,
				 const struct fi_rma_iov *iov, size_t count,
				 uint64_t payload_len)
{
	struct tcp_rma r = {
		.tx_id = htole64(tx_id),
		.data = htole64(data),
		.iov_count = htole32((uint32_t)count),
	};
	char *p = (char *)buf + sizeof(struct tcp_base);
	size_t i;

	assert(count >= 1 && count <= TCP_RMA_IOV_MAX);
	memcpy(p, &r, sizeof(r));
	p += sizeof(r);
	for (i = 0; i < count; i++) {
		struct tcp_rma_iov w = {
			.addr = htole64(iov[i].addr),
			.len = htole64(iov[i].len),
			.key = htole64(iov[i].key),
		};

		memcpy(p, &w, sizeof(w));
		p += sizeof(w);
	}
	tcp_put_base(buf, op, flags, (size_t)(p - (char *)buf), payload_len);
	return (size_t)(p - (char *)buf);
}

static inline size_t tcp_put_atomic(void *buf, uint16_t flags,
				    uint64_t tx_id, uint64_t addr,
				    uint64_t key, uint8_t kind, uint8_t op,
				    uint8_t datatype, uint32_t count,
				    uint64_t payload_len)
{
	struct tcp_atomic a = {
		.tx_id = htole64(tx_id),
		.addr = htole64(addr),
		.key = htole64(key),
		.kind = kind,
		.op = op,
		.datatype = datatype,
		.count = htole32(count),
	};
	size_t len = sizeof(struct tcp_base) + sizeof(a);

	tcp_put_base(buf, TCP_OP_ATOMIC, flags, len, payload_len);
	memcpy((char *)buf + sizeof(struct tcp_base), &a, sizeof(a));
	return len;
}

#endif /* WEFT_TCP_PROTO_H */
