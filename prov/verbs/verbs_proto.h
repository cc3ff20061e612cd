/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * What the verbs provider puts on the wire, in one place:
 *
 *  - the private data of an MSG endpoint's connect, accept and reject
 *    (struct verbs_cm_hdr, then the application's data, then on iWARP a
 *    struct verbs_cm_fence; docs/verbs-cm.md);
 *  - the RDM protocol, version 3 (docs/verbs-protocol.md): the private
 *    data of a connect and accept (struct vrdm_cm_priv), and the header
 *    every SEND starts with (struct vrdm_hdr), followed for some ops by a
 *    struct vrdm_rts or a struct vrdm_atomic.
 *
 * Byte order.  The MSG private data is little-endian.  The RDM protocol
 * is in the byte order of the hosts, which must share it (RDMA addresses
 * and keys are host values anyway).
 *
 * This file holds the wire structs and the encoders (inline: they run for
 * every message).  verbs_proto.c holds the decoders: every field read from
 * a peer is checked there before the rest of the provider sees it.  Both
 * are pure: no I/O, no device call, no state, so they can be tested and
 * fuzzed alone (tests/fuzz/fuzz_verbs_proto.c).  A decoder reads no byte
 * at or past what it is told arrived, and returns 0 or -FI_E*.
 */
#ifndef WEFT_VERBS_PROTO_H
#define WEFT_VERBS_PROTO_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "weft/ofi.h"

/* A peer broke the protocol: the errno value (fi_errno.h of 1.17 leaves
 * FI_EPROTO out). */
#ifndef FI_EPROTO
#define FI_EPROTO EPROTO
#endif

struct sockaddr_storage;

/*
 * A peer's fence region, decoded (host order): where fence reads behind
 * our writes to it go (iWARP write fences, docs/verbs-protocol.md).
 * rkey 0: the peer has none, and nothing is fenced.
 */
struct verbs_fence {
	uint64_t addr;
	uint32_t rkey;
};

/* ---- MSG endpoints: private data of connect, accept, reject -------------- */

/*
 * rdma_cm carries 56 bytes of private data on an InfiniBand or RoCE
 * connect (more on accept and reject, and on iWARP) and pads it, so the
 * provider prefixes a header saying how much is the application's.  What
 * remains is what fi_connect, fi_accept and fi_reject take on every
 * device.
 */
#define VERBS_CM_PRIV_MAX 56
#define VERBS_CM_VERSION 1
struct verbs_cm_hdr {
	uint8_t version; /* VERBS_CM_VERSION */
	uint8_t flags;	 /* VERBS_CM_F_*; 0 from a sender that knows none */
	uint16_t len; /* bytes of application data that follow, little-endian */
};
_Static_assert(sizeof(struct verbs_cm_hdr) == 4, "verbs_cm_hdr is 4 bytes");
#define VERBS_CM_DATA_MAX (VERBS_CM_PRIV_MAX - sizeof(struct verbs_cm_hdr))
/*
 * The application's data is followed by the sender's fence region
 * (iWARP only, where private data is not limited to 56 bytes): where the
 * receiver's fence reads behind its writes go (docs/verbs-cm.md).
 */
#define VERBS_CM_F_FENCE 0x1
struct verbs_cm_fence {
	uint64_t addr; /* little-endian */
	uint32_t rkey; /* little-endian */
} __attribute__((packed));
_Static_assert(sizeof(struct verbs_cm_fence) == 12, "verbs_cm_fence is 12");
/* Room for the header, the application's data and the fence region. */
#define VERBS_CM_PRIV_BUF (VERBS_CM_PRIV_MAX + sizeof(struct verbs_cm_fence))

/*
 * Private data into out (VERBS_CM_PRIV_BUF bytes): the header, the len
 * bytes of data, and the fence region *fence when fence is not NULL (a
 * connect or accept on iWARP; NULL for a reject).  Its length, or
 * -FI_EINVAL when len is above VERBS_CM_DATA_MAX or data is missing.
 */
int verbs_cm_priv_encode(void *out, const void *data, size_t len,
			 const struct verbs_fence *fence);

/*
 * A peer's private data (priv_len bytes at priv, priv may be NULL): 0 with
 * *data and *len the application's part, and, when fence is not NULL,
 * *fence the sender's fence region (rkey 0 when it sent none or cut it
 * short).  -FI_EPROTO when it is not ours (shorter than the header,
 * another version, a length past priv_len): then *data is NULL, *len 0
 * and fence->rkey 0, so that callers may treat it as no data.
 */
int verbs_cm_priv_decode(const void *priv, size_t priv_len,
			 const void **data, size_t *len,
			 struct verbs_fence *fence);

/* ---- RDM endpoints ------------------------------------------------------- */

#define VRDM_VERSION 3

enum vrdm_op {
	VRDM_OP_MSG = 1,   /* eager message: header + payload */
	VRDM_OP_RTS = 2,   /* rendezvous: header + struct vrdm_rts */
	VRDM_OP_FIN = 3,   /* the receiver has read (or dropped) an RTS */
	VRDM_OP_ACK = 4,   /* delivery of an eager message (ACK_REQ) */
	VRDM_OP_HELLO = 5, /* first message of a connecting side */
	VRDM_OP_WDATA = 6, /* remote CQ data of the RDMA write before it */
	VRDM_OP_CREDIT = 7, /* only the credits field */
	VRDM_OP_ATOMIC = 8, /* header + struct vrdm_atomic + operands */
	VRDM_OP_ATOMIC_RESP = 9, /* status, and the fetched values */
};

#define VRDM_F_TAGGED (1u << 0)
#define VRDM_F_CQ_DATA (1u << 1)
#define VRDM_F_ACK_REQ (1u << 2)
#define VRDM_F_COLL (1u << 3) /* the collectives' own (UTIL_RDM_COLL) */

/* Every SEND starts with this.  Reserved fields are sent zero and not
 * looked at on receipt. */
struct vrdm_hdr {
	uint8_t version; /* VRDM_VERSION */
	uint8_t op;	 /* enum vrdm_op */
	uint16_t flags;	 /* VRDM_F_* */
	uint32_t status; /* FIN, ACK: 0 or a positive FI_E* */
	uint16_t credits; /* receive buffers the sender reposted for us */
	uint16_t reserved;
	uint32_t reserved2;
	uint64_t tag;
	uint64_t data;	/* remote CQ data; FIN: the sender's cookie */
	uint64_t tx_id; /* the sender's transmit id */
	uint64_t len;	/* message length */
};
_Static_assert(sizeof(struct vrdm_hdr) == 48, "vrdm_hdr is 48 bytes");

/* Segments of an RTS at most. */
#define VRDM_RTS_SEG_MAX 4

struct vrdm_seg {
	uint64_t addr;
	uint32_t rkey;
	uint32_t reserved;
	uint64_t len;
};
_Static_assert(sizeof(struct vrdm_seg) == 24, "vrdm_seg is 24 bytes");

/* Follows an RTS's header; only count segments travel. */
struct vrdm_rts {
	uint32_t count;	 /* segments, 1..VRDM_RTS_SEG_MAX */
	uint32_t cookie; /* echoed in FIN's data */
	struct vrdm_seg seg[VRDM_RTS_SEG_MAX];
};
_Static_assert(sizeof(struct vrdm_rts) == 8 + 24 * VRDM_RTS_SEG_MAX,
	       "vrdm_rts is 104 bytes");
/* Bytes of an RTS of count segments after the header. */
#define VRDM_RTS_LEN(count)                                                   \
	(offsetof(struct vrdm_rts, seg) + (count) * sizeof(struct vrdm_seg))

/*
 * An atomic the target applies: follows the header (whose len is the
 * bytes of target memory, whole elements, at most VRDM_ATOMIC_MAX), and is
 * followed by len bytes of operands (none for FI_ATOMIC_READ), then, for
 * compare atomics, len bytes of compare values.
 */
struct vrdm_atomic {
	uint64_t addr;	  /* target address (FI_MR_VIRT_ADDR) */
	uint32_t key;	  /* its registration's rkey */
	uint8_t kind;	  /* VRDM_AMO_* */
	uint8_t op;	  /* enum fi_op */
	uint8_t datatype; /* enum fi_datatype */
	uint8_t reserved;
};
_Static_assert(sizeof(struct vrdm_atomic) == 16, "vrdm_atomic is 16 bytes");

enum vrdm_amo_kind {
	VRDM_AMO_WRITE = 0,   /* fi_atomic */
	VRDM_AMO_FETCH = 1,   /* fi_fetch_atomic */
	VRDM_AMO_COMPARE = 2, /* fi_compare_atomic */
};

/* rdma_cm private data of a connect request, and of its accept. */
struct vrdm_cm_priv {
	uint8_t version; /* VRDM_VERSION */
	uint8_t reserved;
	uint16_t addr_len; /* bytes of addr used */
	uint8_t addr[28];  /* listening address, AV stored form */
	/* Where our 8-byte fence reads may go (iWARP write fences):
	 * rkey 0 when the sender has no such region. */
	uint64_t fence_addr;
	uint32_t fence_rkey;
	/* Behind a scalable endpoint: the sender's context and the one it
	 * wants at the listening address (0 and 0 between plain endpoints;
	 * peers before these fields sent zero). */
	uint16_t src_ctx;
	uint16_t dst_ctx;
} __attribute__((packed));
_Static_assert(sizeof(struct vrdm_cm_priv) == 48, "vrdm_cm_priv is 48 bytes");
_Static_assert(sizeof(struct vrdm_cm_priv) <= VERBS_CM_PRIV_MAX,
	       "fits an IB connect request");

/* Sizes both sides rely on. */
#define VRDM_EAGER_MAX 8192 /* payload of a MSG */
#define VRDM_BUF_SIZE 8256  /* a receive buffer: header + eager payload */
#define VRDM_ATOMIC_MAX 4096 /* bytes of target memory of one ATOMIC */
/* An atomic request with both vectors fills one buffer exactly. */
_Static_assert(sizeof(struct vrdm_hdr) + sizeof(struct vrdm_atomic) +
			       2 * VRDM_ATOMIC_MAX <= VRDM_BUF_SIZE,
	       "an atomic request fits a buffer");
/* Receive buffers each QP brings: SENDs a side may have unanswered. */
#define VRDM_CREDITS 64

/* ---- RDM encoders: fill what the caller sends ---------------------------- */

/* A header of op; credits 0 (post_* fill them in), reserved zero. */
static inline void vrdm_hdr_put(struct vrdm_hdr *h, uint8_t op,
				uint16_t flags, uint32_t status, uint64_t tag,
				uint64_t data, uint64_t tx_id, uint64_t len)
{
	*h = (struct vrdm_hdr){
		.version = VRDM_VERSION,
		.op = op,
		.flags = flags,
		.status = status,
		.tag = tag,
		.data = data,
		.tx_id = tx_id,
		.len = len,
	};
}

/* The credits of the header at the start of buf (any alignment). */
static inline void vrdm_hdr_put_credits(void *buf, uint16_t credits)
{
	memcpy((uint8_t *)buf + offsetof(struct vrdm_hdr, credits), &credits,
	       sizeof(credits));
}

/* Segment i of rts (zeroed by the caller first: reserved fields). */
static inline void vrdm_rts_put_seg(struct vrdm_rts *rts, uint32_t i,
				    uint64_t addr, uint32_t rkey,
				    uint64_t len)
{
	rts->seg[i].addr = addr;
	rts->seg[i].rkey = rkey;
	rts->seg[i].reserved = 0;
	rts->seg[i].len = len;
}

static inline void vrdm_atomic_put(struct vrdm_atomic *a, uint64_t addr,
				   uint32_t key, uint8_t kind, uint8_t op,
				   uint8_t datatype)
{
	*a = (struct vrdm_atomic){
		.addr = addr,
		.key = key,
		.kind = kind,
		.op = op,
		.datatype = datatype,
	};
}

/* Our private data: addr_len (at most 28) bytes of our name, our fence
 * region (NULL: none), our context and the one we connect to. */
static inline void vrdm_cm_priv_put(struct vrdm_cm_priv *pd,
				    const void *addr, size_t addr_len,
				    const struct verbs_fence *fence,
				    uint16_t src_ctx, uint16_t dst_ctx)
{
	memset(pd, 0, sizeof(*pd));
	pd->version = VRDM_VERSION;
	pd->addr_len = (uint16_t)addr_len;
	memcpy(pd->addr, addr, addr_len);
	if (fence) {
		pd->fence_addr = fence->addr;
		pd->fence_rkey = fence->rkey;
	}
	pd->src_ctx = src_ctx;
	pd->dst_ctx = dst_ctx;
}

/* ---- RDM decoders (verbs_proto.c) ---------------------------------------- */

/*
 * The header of a received message (avail bytes at buf): 0 with *h, or
 * -FI_EPROTO when fewer than its 48 bytes arrived or it is of another
 * version.  The op is not judged here: the per-op decoders below do, and
 * an unknown one is the receiver's to drop.
 */
int vrdm_hdr_decode(const void *buf, size_t avail, struct vrdm_hdr *h);

/*
 * MSG and ATOMIC_RESP: the h->len bytes of payload behind the header h
 * decoded from buf: 0 with *payload, or -FI_EPROTO when fewer arrived.
 */
int vrdm_payload_decode(const void *buf, size_t avail,
			const struct vrdm_hdr *h, const void **payload);

/*
 * RTS: 0 with *rts (its count segments, the others zero), or -FI_EPROTO
 * when the count is not 1..VRDM_RTS_SEG_MAX or its segments did not all
 * arrive.
 */
int vrdm_rts_decode(const void *buf, size_t avail, struct vrdm_rts *rts);

/*
 * ATOMIC (header h decoded from buf): 0 with *a, *operands (NULL for
 * FI_ATOMIC_READ) and *compare (NULL but for VRDM_AMO_COMPARE), each
 * h->len bytes, all of them within avail.  Else the status the answer
 * carries, negated: -FI_EOPNOTSUPP for a kind, op or datatype the kind
 * does not take, -FI_EINVAL for a request that does not add up (shorter
 * than its struct, len zero, above VRDM_ATOMIC_MAX or no whole number of
 * elements, operands missing).
 */
int vrdm_atomic_decode(const void *buf, size_t avail,
		       const struct vrdm_hdr *h, struct vrdm_atomic *a,
		       const void **operands, const void **compare);

/*
 * The status of a FIN, ACK or ATOMIC_RESP as an error for the engine: 0
 * or a positive FI_E* code; a value no FI_E* code has (65536 and above)
 * is FI_EIO.
 */
int vrdm_status(const struct vrdm_hdr *h);

/*
 * A peer's private data (len bytes at priv, priv may be NULL): 0 with *pd,
 * or -FI_EPROTO when it is shorter than struct vrdm_cm_priv or of another
 * version.  The address is not judged here (vrdm_cm_priv_addr).
 */
int vrdm_cm_priv_decode(const void *priv, size_t len,
			struct vrdm_cm_priv *pd);

/*
 * The sender's listening address in pd: 0 with *sa (its addr_len bytes,
 * zero padded), -FI_EPROTO when addr_len is not between the sizes of a
 * sockaddr_in and of addr, -FI_EADDRNOTAVAIL when it is not an IPv4 or
 * IPv6 socket address that addr_len covers (*sa zeroed then).
 */
int vrdm_cm_priv_addr(const struct vrdm_cm_priv *pd,
		      struct sockaddr_storage *sa);

/* The sender's fence region in pd (rkey 0: none). */
static inline void vrdm_cm_priv_fence(const struct vrdm_cm_priv *pd,
				      struct verbs_fence *fence)
{
	fence->addr = pd->fence_addr;
	fence->rkey = pd->fence_rkey;
}

#endif /* WEFT_VERBS_PROTO_H */
