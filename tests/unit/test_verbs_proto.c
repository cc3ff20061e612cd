/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The verbs wire format (prov/verbs/verbs_proto.[ch]): the encoders write
 * the bytes docs/verbs-protocol.md and docs/verbs-cm.md lay out, written
 * out here by hand from those tables, and the decoders give each refusal
 * the code its caller acts on.  The RDM protocol is in host byte order:
 * its byte strings are those of a little-endian host.
 */
#include <criterion/criterion.h>
#include <endian.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <rdma/fi_errno.h>

#include "verbs_proto.h"

static const struct verbs_fence fence = { 0x7f0012345000ULL, 0x1234 };

/* A heap copy of exactly n bytes, so that a sanitizer sees a read past. */
static void *exact(const void *p, size_t n)
{
	void *c = malloc(n ? n : 1);

	cr_assert(c);
	memcpy(c, p, n);
	return c;
}

static void skip_big_endian(void)
{
	if (__BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__)
		cr_skip_test("RDM byte strings are a little-endian host's");
}

Test(verbs_proto, cm_priv_bytes)
{
	static const uint8_t want[] = {
		1, 1, 5, 0, 'h', 'e', 'l', 'l', 'o',		/* hdr, data */
		0x00, 0x50, 0x34, 0x12, 0x00, 0x7f, 0, 0,	/* fence addr */
		0x34, 0x12, 0, 0,				/* its rkey */
	};
	uint8_t out[VERBS_CM_PRIV_BUF];
	struct verbs_fence f;
	const void *data;
	size_t len;
	void *in;

	cr_assert_eq(verbs_cm_priv_encode(out, "hello", 5, &fence),
		     (int)sizeof(want));
	cr_assert_arr_eq(out, want, sizeof(want));
	cr_assert_eq(verbs_cm_priv_encode(out, "hello", 5, NULL), 9);
	cr_assert_arr_eq(out, "\1\0\5\0hello", 9);
	cr_assert_eq(verbs_cm_priv_encode(out, NULL, 1, NULL), -FI_EINVAL);
	cr_assert_eq(verbs_cm_priv_encode(out, out, VERBS_CM_DATA_MAX + 1,
					  NULL),
		     -FI_EINVAL);

	in = exact(want, sizeof(want));
	cr_assert_eq(verbs_cm_priv_decode(in, sizeof(want), &data, &len, &f),
		     0);
	cr_assert_eq(len, 5);
	cr_assert_arr_eq(data, "hello", 5);
	cr_assert_eq(f.addr, fence.addr);
	cr_assert_eq(f.rkey, fence.rkey);
	/* The fence cut short: none, the data stands. */
	cr_assert_eq(verbs_cm_priv_decode(in, sizeof(want) - 1, &data, &len,
					  &f),
		     0);
	cr_assert_eq(len, 5);
	cr_assert_eq(f.rkey, 0);
	/* The data cut short, or another version: no data at all. */
	cr_assert_eq(verbs_cm_priv_decode(in, 8, &data, &len, &f),
		     -FI_EPROTO);
	cr_assert(!data && !len && !f.rkey);
	((uint8_t *)in)[0] = 2;
	cr_assert_eq(verbs_cm_priv_decode(in, sizeof(want), &data, &len,
					  NULL),
		     -FI_EPROTO);
	cr_assert_eq(verbs_cm_priv_decode(NULL, 0, &data, &len, NULL),
		     -FI_EPROTO);
	free(in);
}

Test(verbs_proto, rdm_hdr_bytes)
{
	static const uint8_t want[48] = {
		3, 1, 3, 0,			/* version, MSG, flags */
		0, 0, 0, 0,			/* status */
		5, 0, 0, 0, 0, 0, 0, 0,		/* credits, reserved */
		0x88, 0x77, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11, /* tag */
		0xcc, 0xbb, 0xaa, 0x99, 0, 0, 0, 0,		 /* data */
		8, 7, 6, 5, 4, 3, 2, 1,				 /* tx_id */
		16, 0, 0, 0, 0, 0, 0, 0,			 /* len */
	};
	struct vrdm_hdr h;
	uint8_t out[48];
	void *in;

	skip_big_endian();
	vrdm_hdr_put(&h, VRDM_OP_MSG, VRDM_F_TAGGED | VRDM_F_CQ_DATA, 0,
		     0x1122334455667788ULL, 0x99aabbcc, 0x0102030405060708ULL,
		     16);
	memcpy(out, &h, sizeof(h));
	vrdm_hdr_put_credits(out, 5);
	cr_assert_arr_eq(out, want, sizeof(want));

	in = exact(want, sizeof(want));
	cr_assert_eq(vrdm_hdr_decode(in, sizeof(want), &h), 0);
	cr_assert_eq(h.credits, 5);
	cr_assert_eq(h.len, 16);
	cr_assert_eq(vrdm_hdr_decode(in, sizeof(want) - 1, &h), -FI_EPROTO);
	((uint8_t *)in)[0] = 2; /* version 2: its peers are refused */
	cr_assert_eq(vrdm_hdr_decode(in, sizeof(want), &h), -FI_EPROTO);
	free(in);
}

Test(verbs_proto, rdm_status)
{
	struct vrdm_hdr h;

	vrdm_hdr_put(&h, VRDM_OP_FIN, 0, FI_ECANCELED, 0, 0, 0, 0);
	cr_assert_eq(vrdm_status(&h), FI_ECANCELED);
	h.status = 0x80000000u; /* no FI_E* code: not a negative errno */
	cr_assert_eq(vrdm_status(&h), FI_EIO);
	h.status = 65536;
	cr_assert_eq(vrdm_status(&h), FI_EIO);
}

Test(verbs_proto, rdm_payload)
{
	uint8_t buf[56];
	struct vrdm_hdr h;
	const void *p;

	vrdm_hdr_put(&h, VRDM_OP_MSG, 0, 0, 0, 0, 1, 8);
	memcpy(buf, &h, sizeof(h));
	cr_assert_eq(vrdm_payload_decode(buf, 56, &h, &p), 0);
	cr_assert_eq(p, buf + 48);
	cr_assert_eq(vrdm_payload_decode(buf, 55, &h, &p), -FI_EPROTO);
	h.len = ~0ULL; /* would wrap sizeof(h) + len */
	cr_assert_eq(vrdm_payload_decode(buf, 56, &h, &p), -FI_EPROTO);
}

Test(verbs_proto, rdm_rts_bytes)
{
	static const uint8_t want[8 + 48] = {
		2, 0, 0, 0, 42, 0, 0, 0,		/* count, cookie */
		0, 0x10, 0, 0, 0, 0, 0, 0, 0x77, 0, 0, 0, /* seg 0 */
		0, 0, 0, 0, 100, 0, 0, 0, 0, 0, 0, 0,
		0, 0x90, 0, 0, 0, 0, 0, 0, 0x78, 0, 0, 0, /* seg 1 */
		0, 0, 0, 0, 0x88, 0x13, 0, 0, 0, 0, 0, 0,
	};
	uint8_t buf[48 + sizeof(want)];
	struct vrdm_rts rts, got;
	uint32_t count = 5;

	skip_big_endian();
	memset(&rts, 0, sizeof(rts));
	rts.count = 2;
	rts.cookie = 42;
	vrdm_rts_put_seg(&rts, 0, 0x1000, 0x77, 100);
	vrdm_rts_put_seg(&rts, 1, 0x9000, 0x78, 5000);
	cr_assert_eq(VRDM_RTS_LEN(2), sizeof(want));
	cr_assert_arr_eq(&rts, want, sizeof(want));

	memset(buf, 0, 48);
	memcpy(buf + 48, want, sizeof(want));
	cr_assert_eq(vrdm_rts_decode(buf, sizeof(buf), &got), 0);
	cr_assert_eq(got.count, 2);
	cr_assert_eq(got.seg[1].len, 5000);
	cr_assert_eq(got.seg[2].addr, 0);
	cr_assert_eq(vrdm_rts_decode(buf, sizeof(buf) - 1, &got), -FI_EPROTO);
	memcpy(buf + 48, &count, sizeof(count));
	cr_assert_eq(vrdm_rts_decode(buf, sizeof(buf), &got), -FI_EPROTO);
}

Test(verbs_proto, rdm_atomic)
{
	static const uint8_t want[16] = {
		0, 0x20, 0, 0, 0, 0, 0, 0,	/* addr */
		0x99, 0, 0, 0,			/* key */
		VRDM_AMO_COMPARE, FI_CSWAP, FI_UINT64, 0,
	};
	uint8_t buf[48 + 16 + 16];
	const void *op, *cmp;
	struct vrdm_atomic a;
	struct vrdm_hdr h;

	skip_big_endian();
	vrdm_atomic_put(&a, 0x2000, 0x99, VRDM_AMO_COMPARE, FI_CSWAP,
			FI_UINT64);
	cr_assert_arr_eq(&a, want, sizeof(want));

	vrdm_hdr_put(&h, VRDM_OP_ATOMIC, 0, 0, 0, 0, 1, 8);
	memset(buf, 0, sizeof(buf));
	memcpy(buf, &h, sizeof(h));
	memcpy(buf + 48, want, sizeof(want));
	cr_assert_eq(vrdm_atomic_decode(buf, sizeof(buf), &h, &a, &op, &cmp),
		     0);
	cr_assert_eq(op, buf + 64);
	cr_assert_eq(cmp, buf + 72);
	/* The answer's status for each refusal. */
	cr_assert_eq(vrdm_atomic_decode(buf, sizeof(buf) - 1, &h, &a, &op,
					&cmp),
		     -FI_EINVAL);
	cr_assert(!op && !cmp);
	h.len = 12; /* not whole elements */
	cr_assert_eq(vrdm_atomic_decode(buf, sizeof(buf), &h, &a, &op, &cmp),
		     -FI_EINVAL);
	h.len = 8;
	buf[48 + 12] = 3; /* no such kind */
	cr_assert_eq(vrdm_atomic_decode(buf, sizeof(buf), &h, &a, &op, &cmp),
		     -FI_EOPNOTSUPP);
	buf[48 + 12] = VRDM_AMO_WRITE; /* no compare-swap in a plain atomic */
	cr_assert_eq(vrdm_atomic_decode(buf, sizeof(buf), &h, &a, &op, &cmp),
		     -FI_EOPNOTSUPP);
}

Test(verbs_proto, rdm_cm_priv)
{
	struct sockaddr_in s4 = {
		.sin_family = AF_INET,
		.sin_port = htons(4711),
		.sin_addr.s_addr = htonl(0x7f000001),
	};
	uint8_t want[48] = {
		3, 0, 16, 0,				/* version, addr_len */
		AF_INET, 0, 0x12, 0x67, 127, 0, 0, 1,	/* the address */
	};
	static const uint8_t tail[16] = {
		0x00, 0x50, 0x34, 0x12, 0x00, 0x7f, 0, 0, /* fence_addr */
		0x34, 0x12, 0, 0, 2, 1, 4, 3,	/* rkey, src_ctx, dst_ctx */
	};
	struct sockaddr_storage sa;
	struct vrdm_cm_priv pd;
	struct verbs_fence f;
	void *in;

	skip_big_endian();
	memcpy(want + 32, tail, sizeof(tail));
	vrdm_cm_priv_put(&pd, &s4, sizeof(s4), &fence, 0x0102, 0x0304);
	cr_assert_arr_eq(&pd, want, sizeof(want));

	in = exact(want, sizeof(want));
	cr_assert_eq(vrdm_cm_priv_decode(in, sizeof(want), &pd), 0);
	cr_assert_eq(vrdm_cm_priv_addr(&pd, &sa), 0);
	cr_assert_arr_eq(&sa, &s4, sizeof(s4));
	vrdm_cm_priv_fence(&pd, &f);
	cr_assert_eq(f.rkey, fence.rkey);
	cr_assert_eq(f.addr, fence.addr);
	cr_assert_eq(vrdm_cm_priv_decode(in, sizeof(want) - 1, &pd),
		     -FI_EPROTO);
	cr_assert_eq(vrdm_cm_priv_decode(NULL, 0, &pd), -FI_EPROTO);
	free(in);
	/* The conn request's refusals: another version, an address
	 * length out of range, not an IP address, one cut short. */
	want[0] = 2;
	cr_assert_eq(vrdm_cm_priv_decode(want, sizeof(want), &pd), -FI_EPROTO);
	want[0] = 3;
	want[2] = 29;
	cr_assert_eq(vrdm_cm_priv_decode(want, sizeof(want), &pd), 0);
	cr_assert_eq(vrdm_cm_priv_addr(&pd, &sa), -FI_EPROTO);
	want[2] = 16;
	want[4] = AF_UNIX;
	cr_assert_eq(vrdm_cm_priv_decode(want, sizeof(want), &pd), 0);
	cr_assert_eq(vrdm_cm_priv_addr(&pd, &sa), -FI_EADDRNOTAVAIL);
	want[4] = AF_INET6; /* 16 bytes do not cover a sockaddr_in6 */
	cr_assert_eq(vrdm_cm_priv_decode(want, sizeof(want), &pd), 0);
	cr_assert_eq(vrdm_cm_priv_addr(&pd, &sa), -FI_EADDRNOTAVAIL);
	cr_assert_eq(sa.ss_family, 0);
}
