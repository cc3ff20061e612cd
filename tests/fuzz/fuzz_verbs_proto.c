/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * libFuzzer harness for the verbs provider's decoders (prov/verbs/
 * verbs_proto.c; `make fuzz` builds and runs it, `make check` replays its
 * corpus through tests/fuzz/fuzz_replay.c).  Each input goes to every
 * decoder, as what arrived in a receive buffer (an RDM message: header,
 * then per op the payload, an RTS or an ATOMIC request) and as the private
 * data of a connection (an MSG endpoint's, an RDM endpoint's).  The whole
 * input and each of its first PREFIX_MAX prefixes are decoded from heap
 * copies of exactly that size, so AddressSanitizer sees a read past them.
 * Aborts when:
 *  - a decoder returns what its contract does not allow (0 or the
 *    -FI_E* codes verbs_proto.h names), or a result points outside the
 *    bytes it was given;
 *  - what it accepted breaks a promise: a version other than ours, an RTS
 *    count out of range or segments past the end, an atomic of a kind or
 *    length it should have refused, a status outside 0..65535, an address
 *    that is not IPv4 or IPv6 or not covered by addr_len;
 *  - a prefix accepted is judged apart from a longer one (more bytes
 *    never take back an acceptance, nor change what was decoded);
 *  - decode(encode(x)) differs from x for an x that decoded.
 *
 * Built with -DFUZZ_SEEDS instead, it is a program that writes one valid
 * input of each kind into the directory it is given, as the starting
 * corpus.
 */
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <rdma/fi_errno.h>

#include "fuzz_util.h"
#include "verbs_proto.h"
#include "weft/util_atomic.h"
#include "weft/util_ifaddr.h"

/* Prefixes tried one by one: past every fixed-size struct. */
#define PREFIX_MAX 256

static void fail(const char *what, size_t n)
{
	fprintf(stderr, "fuzz_verbs_proto: %s (%zu bytes)\n", what, n);
	abort();
}

static int within(const void *p, size_t len, const uint8_t *buf, size_t n)
{
	const uint8_t *q = p;

	return q >= buf && q <= buf + n && len <= (size_t)(buf + n - q);
}

/* ---- MSG private data ---------------------------------------------------- */

struct cm_view {
	int ret;
	size_t off, len; /* the data, from the start */
	struct verbs_fence fence;
};

static struct cm_view cm_decode(const uint8_t *data, size_t n, int fence)
{
	uint8_t *buf = fuzz_exact(data, n);
	struct cm_view v = { 0 };
	const void *d;

	v.ret = verbs_cm_priv_decode(n ? buf : NULL, n, &d, &v.len,
				     fence ? &v.fence : NULL);
	if (v.ret && v.ret != -FI_EPROTO)
		fail("cm: bad result", n);
	if (v.ret && (d || v.len || v.fence.rkey))
		fail("cm: refused, yet data or a fence", n);
	if (!v.ret) {
		if (!within(d, v.len, buf, n))
			fail("cm: data outside the private data", n);
		v.off = (size_t)((const uint8_t *)d - buf);
		if (v.off != sizeof(struct verbs_cm_hdr) ||
		    buf[0] != VERBS_CM_VERSION)
			fail("cm: accepted what is not ours", n);
		if (v.fence.rkey && !(buf[1] & VERBS_CM_F_FENCE))
			fail("cm: a fence that was not offered", n);
	}
	free(buf);
	return v;
}

static void cm_roundtrip(const uint8_t *data, const struct cm_view *v,
			 size_t n)
{
	uint8_t *out = malloc(VERBS_CM_PRIV_BUF);
	struct cm_view w;
	int len;

	if (!out)
		abort();
	len = verbs_cm_priv_encode(out, data + v->off, v->len,
				   v->fence.rkey ? &v->fence : NULL);
	if (v->len > VERBS_CM_DATA_MAX) {
		/* Longer data (iWARP) arrives; ours never is. */
		if (len != -FI_EINVAL)
			fail("cm: encoded data above VERBS_CM_DATA_MAX", n);
		free(out);
		return;
	}
	if (len < 0 || (size_t)len > VERBS_CM_PRIV_BUF)
		fail("cm: encode failed", n);
	w = cm_decode(out, (size_t)len, 1);
	if (w.ret || w.len != v->len ||
	    memcmp(out + w.off, data + v->off, v->len) ||
	    w.fence.rkey != v->fence.rkey ||
	    (v->fence.rkey && w.fence.addr != v->fence.addr))
		fail("cm: decode(encode(x)) is not x", n);
	free(out);
}

static void msg_cm(const uint8_t *data, size_t size)
{
	struct cm_view whole = cm_decode(data, size, 1), v;
	size_t n, top = size < PREFIX_MAX ? size : PREFIX_MAX;
	int taken = 0;

	(void)cm_decode(data, size, 0);
	if (!whole.ret)
		cm_roundtrip(data, &whole, size);
	/* More bytes never take an acceptance back (the fence may come). */
	for (n = 0; n <= top; n++) {
		v = cm_decode(data, n, 1);
		if (taken && v.ret)
			fail("cm: refusal after a shorter prefix was taken", n);
		if (!v.ret) {
			taken = 1;
			if (v.len != whole.len || whole.ret)
				fail("cm: prefix judged apart from the whole",
				     n);
		}
	}
}

/* ---- RDM messages ---------------------------------------------------------- */

/* What every decoder made of n bytes (0: decoded). */
struct rdm_view {
	int hdr, payload, rts, amo;
	struct vrdm_hdr h;
	struct vrdm_rts r;
	struct vrdm_atomic a;
	size_t operands, compare; /* offsets, 0: none */
};

static struct rdm_view rdm_decode(const uint8_t *data, size_t n)
{
	uint8_t *buf = fuzz_exact(data, n);
	struct rdm_view v;
	const void *pl, *op, *cmp;
	uint32_t i;

	memset(&v, 0, sizeof(v));
	v.hdr = vrdm_hdr_decode(buf, n, &v.h);
	if (v.hdr && v.hdr != -FI_EPROTO)
		fail("hdr: bad result", n);
	if (v.hdr) {
		v.payload = v.rts = v.amo = -FI_EPROTO; /* not tried */
		free(buf);
		return v;
	}
	if (n < sizeof(v.h) || v.h.version != VRDM_VERSION)
		fail("hdr: accepted what is not ours", n);
	if (vrdm_status(&v.h) < 0 || vrdm_status(&v.h) > 65535 ||
	    (v.h.status < 65536 && vrdm_status(&v.h) != (int)v.h.status))
		fail("hdr: status out of range", n);

	v.payload = vrdm_payload_decode(buf, n, &v.h, &pl);
	if (v.payload && v.payload != -FI_EPROTO)
		fail("payload: bad result", n);
	if (!v.payload && (pl != buf + sizeof(v.h) || !within(pl, v.h.len, buf, n)))
		fail("payload: outside the message", n);

	v.rts = vrdm_rts_decode(buf, n, &v.r);
	if (v.rts && v.rts != -FI_EPROTO)
		fail("rts: bad result", n);
	if (!v.rts) {
		if (!v.r.count || v.r.count > VRDM_RTS_SEG_MAX ||
		    n < sizeof(v.h) + VRDM_RTS_LEN(v.r.count) ||
		    memcmp(&v.r, buf + sizeof(v.h), VRDM_RTS_LEN(v.r.count)))
			fail("rts: accepted what does not add up", n);
		for (i = v.r.count; i < VRDM_RTS_SEG_MAX; i++)
			if (v.r.seg[i].addr || v.r.seg[i].rkey ||
			    v.r.seg[i].len || v.r.seg[i].reserved)
				fail("rts: a segment that did not travel", n);
	}

	v.amo = vrdm_atomic_decode(buf, n, &v.h, &v.a, &op, &cmp);
	if (v.amo && v.amo != -FI_EINVAL && v.amo != -FI_EOPNOTSUPP)
		fail("atomic: bad result", n);
	if (v.amo && (op || cmp))
		fail("atomic: refused, yet operands", n);
	if (!v.amo) {
		size_t elem = util_atomic_dt_size(v.a.datatype);

		if (v.a.kind > VRDM_AMO_COMPARE || !elem || !v.h.len ||
		    v.h.len > VRDM_ATOMIC_MAX || v.h.len % elem)
			fail("atomic: accepted what does not add up", n);
		if ((v.a.op == FI_ATOMIC_READ) != !op ||
		    (v.a.kind == VRDM_AMO_COMPARE) != !!cmp)
			fail("atomic: operands of the wrong kind", n);
		if ((op && !within(op, v.h.len, buf, n)) ||
		    (cmp && !within(cmp, v.h.len, buf, n)))
			fail("atomic: operands outside the message", n);
		if (op && cmp && (const uint8_t *)cmp < (const uint8_t *)op +
								 v.h.len)
			fail("atomic: compare values over the operands", n);
		v.operands = op ? (size_t)((const uint8_t *)op - buf) : 0;
		v.compare = cmp ? (size_t)((const uint8_t *)cmp - buf) : 0;
	}
	free(buf);
	return v;
}

static int hdr_same(const struct vrdm_hdr *a, const struct vrdm_hdr *b)
{
	return a->version == b->version && a->op == b->op &&
	       a->flags == b->flags && a->status == b->status &&
	       a->credits == b->credits && a->tag == b->tag &&
	       a->data == b->data && a->tx_id == b->tx_id && a->len == b->len;
}

/* Encode what decoded, with the same bytes behind it, and decode again. */
static void rdm_roundtrip(const uint8_t *data, size_t size,
			  const struct rdm_view *v)
{
	uint8_t *out = malloc(size ? size : 1);
	struct vrdm_hdr h;
	struct rdm_view w;
	uint32_t i;

	if (!out)
		abort();
	memcpy(out, data, size); /* what follows the structs */
	vrdm_hdr_put(&h, v->h.op, v->h.flags, v->h.status, v->h.tag,
		     v->h.data, v->h.tx_id, v->h.len);
	memcpy(out, &h, sizeof(h));
	vrdm_hdr_put_credits(out, v->h.credits);
	if (!v->rts) {
		struct vrdm_rts r;

		memset(&r, 0, sizeof(r));
		r.count = v->r.count;
		r.cookie = v->r.cookie;
		for (i = 0; i < v->r.count; i++)
			vrdm_rts_put_seg(&r, i, v->r.seg[i].addr,
					 v->r.seg[i].rkey, v->r.seg[i].len);
		memcpy(out + sizeof(h), &r, VRDM_RTS_LEN(r.count));
	} else if (!v->amo) {
		struct vrdm_atomic a;

		vrdm_atomic_put(&a, v->a.addr, v->a.key, v->a.kind, v->a.op,
				v->a.datatype);
		memcpy(out + sizeof(h), &a, sizeof(a));
	}
	w = rdm_decode(out, size);
	if (w.hdr || !hdr_same(&w.h, &v->h))
		fail("hdr: decode(encode(x)) is not x", size);
	if (w.payload != v->payload)
		fail("payload: decode(encode(x)) is not x", size);
	if (!v->rts) {
		if (w.rts || w.r.count != v->r.count ||
		    w.r.cookie != v->r.cookie)
			fail("rts: decode(encode(x)) is not x", size);
		for (i = 0; i < v->r.count; i++)
			if (w.r.seg[i].addr != v->r.seg[i].addr ||
			    w.r.seg[i].rkey != v->r.seg[i].rkey ||
			    w.r.seg[i].len != v->r.seg[i].len)
				fail("rts: decode(encode(x)) is not x", size);
	} else if (!v->amo) {
		if (w.amo || w.a.addr != v->a.addr || w.a.key != v->a.key ||
		    w.a.kind != v->a.kind || w.a.op != v->a.op ||
		    w.a.datatype != v->a.datatype ||
		    w.operands != v->operands || w.compare != v->compare)
			fail("atomic: decode(encode(x)) is not x", size);
	}
	free(out);
}

/* A longer prefix keeps what a shorter one decoded. */
static void rdm_prefix(const struct rdm_view *shorter,
		       const struct rdm_view *v, size_t n)
{
	if (!shorter->hdr && (v->hdr || !hdr_same(&shorter->h, &v->h)))
		fail("hdr: a longer prefix judged apart", n);
	if (!shorter->payload && v->payload)
		fail("payload: a longer prefix refused", n);
	if (!shorter->rts &&
	    (v->rts || memcmp(&shorter->r, &v->r, sizeof(v->r))))
		fail("rts: a longer prefix judged apart", n);
	if (!shorter->amo &&
	    (v->amo || memcmp(&shorter->a, &v->a, sizeof(v->a)) ||
	     shorter->operands != v->operands ||
	     shorter->compare != v->compare))
		fail("atomic: a longer prefix judged apart", n);
}

static void rdm_msg(const uint8_t *data, size_t size)
{
	struct rdm_view whole = rdm_decode(data, size), prev, v;
	size_t n, top = size < PREFIX_MAX ? size : PREFIX_MAX;

	if (!whole.hdr)
		rdm_roundtrip(data, size, &whole);
	prev = rdm_decode(data, 0);
	for (n = 1; n <= top; n++) {
		v = rdm_decode(data, n);
		rdm_prefix(&prev, &v, n);
		prev = v;
	}
	rdm_prefix(&prev, &whole, size);
}

/* ---- RDM private data ---------------------------------------------------- */

static void rdm_cm(const uint8_t *data, size_t size)
{
	uint8_t *buf = fuzz_exact(data, size);
	struct vrdm_cm_priv pd, again, back;
	struct sockaddr_storage sa, sb;
	struct verbs_fence f, g;
	size_t alen;
	int ret;

	ret = vrdm_cm_priv_decode(size ? buf : NULL, size, &pd);
	free(buf);
	if (ret && ret != -FI_EPROTO)
		fail("cm_priv: bad result", size);
	if (ret)
		return;
	if (size < sizeof(pd) || pd.version != VRDM_VERSION)
		fail("cm_priv: accepted what is not ours", size);
	ret = vrdm_cm_priv_addr(&pd, &sa);
	if (ret && ret != -FI_EPROTO && ret != -FI_EADDRNOTAVAIL)
		fail("cm_priv addr: bad result", size);
	vrdm_cm_priv_fence(&pd, &f);
	if (ret) {
		static const struct sockaddr_storage zero;

		if (memcmp(&sa, &zero, sizeof(sa)))
			fail("cm_priv addr: refused, yet an address", size);
		return;
	}
	alen = pd.addr_len;
	if ((sa.ss_family != AF_INET && sa.ss_family != AF_INET6) ||
	    alen < util_sockaddr_len(&sa) || alen > sizeof(pd.addr) ||
	    memcmp(&sa, pd.addr, alen))
		fail("cm_priv addr: accepted what is no address", size);
	vrdm_cm_priv_put(&again, &sa, alen, f.rkey ? &f : NULL, pd.src_ctx,
			 pd.dst_ctx);
	if (vrdm_cm_priv_decode(&again, sizeof(again), &back) ||
	    vrdm_cm_priv_addr(&back, &sb) || memcmp(&sa, &sb, sizeof(sa)) ||
	    back.addr_len != pd.addr_len || back.src_ctx != pd.src_ctx ||
	    back.dst_ctx != pd.dst_ctx)
		fail("cm_priv: decode(encode(x)) is not x", size);
	vrdm_cm_priv_fence(&back, &g);
	if (g.rkey != f.rkey || (f.rkey && g.addr != f.addr))
		fail("cm_priv: fence: decode(encode(x)) is not x", size);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	msg_cm(data, size);
	rdm_msg(data, size);
	rdm_cm(data, size);
	return 0;
}

#ifdef FUZZ_SEEDS
/* A header of op with len, and extra bytes behind it. */
static size_t seed_msg(uint8_t *b, uint8_t op, uint16_t flags,
		       uint32_t status, uint64_t len, const void *extra,
		       size_t extra_len)
{
	struct vrdm_hdr h;

	vrdm_hdr_put(&h, op, flags, status, 7, 9, 0x100000002ULL, len);
	memcpy(b, &h, sizeof(h));
	vrdm_hdr_put_credits(b, 3);
	if (extra_len)
		memcpy(b + sizeof(h), extra, extra_len);
	return sizeof(h) + extra_len;
}

int main(int argc, char **argv)
{
	static uint8_t b[VRDM_BUF_SIZE], x[VRDM_BUF_SIZE];
	struct sockaddr_in6 s6 = { .sin6_family = AF_INET6,
				   .sin6_port = htons(4711) };
	struct sockaddr_in s4 = { .sin_family = AF_INET,
				  .sin_port = htons(4711),
				  .sin_addr.s_addr = htonl(0x7f000001) };
	struct verbs_fence fence = { 0x7f0012345000ULL, 0x1234 };
	struct vrdm_cm_priv pd;
	struct vrdm_rts rts;
	struct vrdm_atomic a;
	int len, rc = 0;
	size_t n;

	if (argc != 2) {
		fprintf(stderr, "usage: %s corpus-dir\n", argv[0]);
		return 2;
	}
	memset(x, 0x5a, sizeof(x));
	/* MSG private data: data only, data and a fence. */
	len = verbs_cm_priv_encode(b, "hello", 5, NULL);
	rc |= fuzz_write_file(argv[1], "seed-cm", b, (size_t)len);
	len = verbs_cm_priv_encode(b, "hello", 5, &fence);
	rc |= fuzz_write_file(argv[1], "seed-cm-fence", b, (size_t)len);
	/* RDM private data, IPv4 and IPv6, with a fence. */
	vrdm_cm_priv_put(&pd, &s4, sizeof(s4), &fence, 0, 0);
	rc |= fuzz_write_file(argv[1], "seed-priv-ipv4", &pd, sizeof(pd));
	vrdm_cm_priv_put(&pd, &s6, sizeof(s6), NULL, 3, 1);
	rc |= fuzz_write_file(argv[1], "seed-priv-ipv6", &pd, sizeof(pd));
	/* RDM messages. */
	n = seed_msg(b, VRDM_OP_MSG, VRDM_F_TAGGED | VRDM_F_CQ_DATA, 0, 16, x,
		     16);
	rc |= fuzz_write_file(argv[1], "seed-msg", b, n);
	memset(&rts, 0, sizeof(rts));
	rts.count = 2;
	rts.cookie = 42;
	vrdm_rts_put_seg(&rts, 0, 0x10000, 0x77, 100000);
	vrdm_rts_put_seg(&rts, 1, 0x90000, 0x78, 5000);
	n = seed_msg(b, VRDM_OP_RTS, 0, 0, 105000, &rts, VRDM_RTS_LEN(2));
	rc |= fuzz_write_file(argv[1], "seed-rts", b, n);
	n = seed_msg(b, VRDM_OP_FIN, 0, FI_ECANCELED, 0, NULL, 0);
	rc |= fuzz_write_file(argv[1], "seed-fin", b, n);
	n = seed_msg(b, VRDM_OP_ACK, 0, 0, 0, NULL, 0);
	rc |= fuzz_write_file(argv[1], "seed-ack", b, n);
	n = seed_msg(b, VRDM_OP_WDATA, 0, 0, 64, NULL, 0);
	rc |= fuzz_write_file(argv[1], "seed-wdata", b, n);
	n = seed_msg(b, VRDM_OP_CREDIT, 0, 0, 0, NULL, 0);
	rc |= fuzz_write_file(argv[1], "seed-credit", b, n);
	vrdm_atomic_put(&a, 0x20000, 0x99, VRDM_AMO_COMPARE, FI_CSWAP,
			FI_UINT64);
	memcpy(x, &a, sizeof(a));
	n = seed_msg(b, VRDM_OP_ATOMIC, 0, 0, 16, x, sizeof(a) + 32);
	rc |= fuzz_write_file(argv[1], "seed-atomic-cswap", b, n);
	vrdm_atomic_put(&a, 0x20000, 0x99, VRDM_AMO_FETCH, FI_SUM, FI_INT32);
	memcpy(x, &a, sizeof(a));
	n = seed_msg(b, VRDM_OP_ATOMIC, 0, 0, 8, x, sizeof(a) + 8);
	rc |= fuzz_write_file(argv[1], "seed-atomic-fetch", b, n);
	vrdm_atomic_put(&a, 0x20000, 0x99, VRDM_AMO_FETCH, FI_ATOMIC_READ,
			FI_DOUBLE);
	memcpy(x, &a, sizeof(a));
	n = seed_msg(b, VRDM_OP_ATOMIC, 0, 0, 8, x, sizeof(a));
	rc |= fuzz_write_file(argv[1], "seed-atomic-read", b, n);
	memset(x, 0x5a, sizeof(x));
	n = seed_msg(b, VRDM_OP_ATOMIC_RESP, 0, 0, 8, x, 8);
	rc |= fuzz_write_file(argv[1], "seed-atomic-resp", b, n);
	return rc;
}
#endif
