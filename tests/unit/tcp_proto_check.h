/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * What a header accepted by tcp_frame_parse promises, checked again here
 * from the limits alone, without the parser's code: shared by the unit
 * test's mutation loop and the libFuzzer harness.
 */
#ifndef WEFT_TCP_PROTO_CHECK_H
#define WEFT_TCP_PROTO_CHECK_H

#include <stdbool.h>

#include "weft/util_atomic.h"
#include "tcp_proto.h"

static inline bool tcp_check_flags(unsigned int op, uint16_t flags)
{
	switch (op) {
	case TCP_OP_MSG:
		return !(flags & ~(TCP_F_CQ_DATA | TCP_F_ACK_REQ | TCP_F_COLL));
	case TCP_OP_TAGGED:
		return !(flags & ~(TCP_F_CQ_DATA | TCP_F_ACK_REQ));
	case TCP_OP_WRITE:
		return !(flags & ~(TCP_F_CQ_DATA | TCP_F_COMMIT));
	case TCP_OP_ATOMIC:
		return !(flags & ~TCP_F_COMMIT);
	default:
		return !flags;
	}
}

static inline const char *tcp_check_rma(const struct tcp_frame *f,
					const struct tcp_proto_limits *l)
{
	uint64_t sum = 0;
	uint32_t i;

	if (f->rma.iov_count < 1 || f->rma.iov_count > TCP_RMA_IOV_MAX)
		return "iov_count";
	if (f->hdr_len != sizeof(struct tcp_base) + sizeof(struct tcp_rma) +
				  f->rma.iov_count * sizeof(struct tcp_rma_iov))
		return "rma hdr_len";
	for (i = 0; i < f->rma.iov_count; i++) {
		if (__builtin_add_overflow(sum, f->rma.iov[i].len, &sum))
			return "iov sum overflows";
		if (f->rma.iov[i].addr + f->rma.iov[i].len <
		    f->rma.iov[i].addr)
			return "iov wraps";
	}
	if (sum != f->rma.len || sum > l->max_payload)
		return "rma len";
	if (f->payload_len != (f->op == TCP_OP_WRITE ? sum : 0))
		return "rma payload_len";
	return NULL;
}

static inline const char *tcp_check_atomic(const struct tcp_frame *f,
					   const struct tcp_proto_limits *l)
{
	static const enum util_atomic_class cls[] = {
		UTIL_ATOMIC_BASE, UTIL_ATOMIC_FETCH, UTIL_ATOMIC_COMPARE
	};
	unsigned __int128 want;

	if (f->atomic.kind > TCP_ATOMIC_COMPARE)
		return "atomic kind";
	if (!util_atomic_valid(f->atomic.op, f->atomic.datatype,
			       cls[f->atomic.kind]))
		return "atomic op/datatype";
	if (!f->atomic.dt_size ||
	    f->atomic.dt_size != util_atomic_dt_size(f->atomic.datatype))
		return "atomic dt_size";
	if (!f->atomic.count)
		return "atomic count";
	want = (unsigned __int128)f->atomic.count * f->atomic.dt_size *
	       (f->atomic.kind == TCP_ATOMIC_COMPARE ? 2 : 1);
	if (f->payload_len != want || want > l->max_payload)
		return "atomic payload_len";
	if ((unsigned __int128)f->atomic.addr +
		    (unsigned __int128)f->atomic.count * f->atomic.dt_size >
	    UINT64_MAX)
		return "atomic target wraps";
	return NULL;
}

/* NULL when the accepted frame f (parse result r of avail bytes) is sane. */
static inline const char *tcp_check_accepted(const struct tcp_frame *f,
					     ssize_t r, size_t avail,
					     const struct tcp_proto_limits *l)
{
	if (r <= 0 || (size_t)r > avail || (size_t)r != f->hdr_len ||
	    f->hdr_len > TCP_HDR_MAX)
		return "length";
	if (f->op < 1 || f->op > TCP_OP_MAX ||
	    !(l->allowed_ops & TCP_OPBIT(f->op)))
		return "op";
	if (!tcp_check_flags(f->op, f->flags))
		return "flags";
	switch (f->op) {
	case TCP_OP_HELLO:
		if (f->hello.version != TCP_PROTO_VERSION ||
		    (f->hello.ep_kind != TCP_EPK_RDM &&
		     f->hello.ep_kind != TCP_EPK_MSG) ||
		    f->hello.addr_len > TCP_ADDR_MAX ||
		    f->hello.cm_len > TCP_CM_DATA_MAX ||
		    (uint64_t)f->hello.addr_len + f->hello.cm_len !=
			    f->payload_len ||
		    (f->hello.ep_kind == TCP_EPK_RDM && !f->hello.addr_len))
			return "hello";
		return NULL;
	case TCP_OP_HELLO_ACK:
		if (f->hello_ack.version != TCP_PROTO_VERSION ||
		    f->hello_ack.status > UINT16_MAX ||
		    f->payload_len > TCP_CM_DATA_MAX)
			return "hello_ack";
		return NULL;
	case TCP_OP_MSG:
	case TCP_OP_TAGGED:
		return f->payload_len > l->max_payload ? "msg payload" : NULL;
	case TCP_OP_ACK:
	case TCP_OP_RESP:
		if (f->resp.status > UINT16_MAX ||
		    f->payload_len > l->max_payload ||
		    (f->op == TCP_OP_ACK && f->payload_len) ||
		    (f->resp.status && f->payload_len))
			return "resp";
		return NULL;
	case TCP_OP_WRITE:
	case TCP_OP_READ_REQ:
		return tcp_check_rma(f, l);
	default:
		return tcp_check_atomic(f, l);
	}
}

#endif /* WEFT_TCP_PROTO_CHECK_H */
