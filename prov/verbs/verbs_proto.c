/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The verbs provider's decoders (verbs_proto.h, docs/verbs-protocol.md,
 * docs/verbs-cm.md), and the encoder of the MSG private data.
 *
 * Every field a peer sends passes through here before anything else reads
 * it.  Wire structs are copied out of the buffer with memcpy (private
 * data need not be aligned); no byte at or past what arrived is read.  No
 * I/O, no allocation, no state.
 */
#include "verbs_proto.h"

#include <endian.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include "weft/util_atomic.h"
#include "weft/util_ifaddr.h"

/* ---- MSG private data ---------------------------------------------------- */

int verbs_cm_priv_encode(void *out, const void *data, size_t len,
			 const struct verbs_fence *fence)
{
	struct verbs_cm_hdr hdr = { .version = VERBS_CM_VERSION,
				    .len = htole16((uint16_t)len) };
	struct verbs_cm_fence f;
	uint8_t *p = out;

	if (len > VERBS_CM_DATA_MAX || (len && !data))
		return -FI_EINVAL;
	if (fence)
		hdr.flags = VERBS_CM_F_FENCE;
	memcpy(p, &hdr, sizeof(hdr));
	if (len)
		memcpy(p + sizeof(hdr), data, len);
	len += sizeof(hdr);
	if (fence) {
		f.addr = htole64(fence->addr);
		f.rkey = htole32(fence->rkey);
		memcpy(p + len, &f, sizeof(f));
		len += sizeof(f);
	}
	return (int)len;
}

int verbs_cm_priv_decode(const void *priv, size_t priv_len,
			 const void **data, size_t *len,
			 struct verbs_fence *fence)
{
	const uint8_t *p = priv;
	struct verbs_cm_hdr hdr;
	struct verbs_cm_fence f;
	size_t n;

	*data = NULL;
	*len = 0;
	if (fence)
		*fence = (struct verbs_fence){ 0 };
	if (!priv || priv_len < sizeof(hdr))
		return -FI_EPROTO;
	memcpy(&hdr, p, sizeof(hdr));
	n = le16toh(hdr.len);
	if (hdr.version != VERBS_CM_VERSION || n > priv_len - sizeof(hdr))
		return -FI_EPROTO;
	/* A fence region cut short is none: the data stands. */
	if (fence && (hdr.flags & VERBS_CM_F_FENCE) &&
	    sizeof(f) <= priv_len - sizeof(hdr) - n) {
		memcpy(&f, p + sizeof(hdr) + n, sizeof(f));
		fence->addr = le64toh(f.addr);
		fence->rkey = le32toh(f.rkey);
	}
	*data = p + sizeof(hdr);
	*len = n;
	return 0;
}

/* ---- RDM messages -------------------------------------------------------- */

int vrdm_hdr_decode(const void *buf, size_t avail, struct vrdm_hdr *h)
{
	if (avail < sizeof(*h))
		return -FI_EPROTO;
	memcpy(h, buf, sizeof(*h));
	return h->version == VRDM_VERSION ? 0 : -FI_EPROTO;
}

int vrdm_payload_decode(const void *buf, size_t avail,
			const struct vrdm_hdr *h, const void **payload)
{
	/* Not sizeof(*h) + h->len: a peer's length near 2^64 would wrap
	 * it past the check. */
	if (avail < sizeof(*h) || h->len > avail - sizeof(*h))
		return -FI_EPROTO;
	*payload = (const uint8_t *)buf + sizeof(*h);
	return 0;
}

int vrdm_rts_decode(const void *buf, size_t avail, struct vrdm_rts *rts)
{
	const uint8_t *p = (const uint8_t *)buf + sizeof(struct vrdm_hdr);
	uint32_t count;

	if (avail < sizeof(struct vrdm_hdr) + VRDM_RTS_LEN(0))
		return -FI_EPROTO;
	memcpy(&count, p, sizeof(count));
	if (!count || count > VRDM_RTS_SEG_MAX ||
	    avail - sizeof(struct vrdm_hdr) < VRDM_RTS_LEN(count))
		return -FI_EPROTO;
	memset(rts, 0, sizeof(*rts));
	memcpy(rts, p, VRDM_RTS_LEN(count));
	return 0;
}

int vrdm_atomic_decode(const void *buf, size_t avail,
		       const struct vrdm_hdr *h, struct vrdm_atomic *a,
		       const void **operands, const void **compare)
{
	static const enum util_atomic_class cls[] = {
		[VRDM_AMO_WRITE] = UTIL_ATOMIC_BASE,
		[VRDM_AMO_FETCH] = UTIL_ATOMIC_FETCH,
		[VRDM_AMO_COMPARE] = UTIL_ATOMIC_COMPARE,
	};
	const uint8_t *p = (const uint8_t *)buf + sizeof(*h) + sizeof(*a);
	size_t elem, len = h->len, plen = 0;

	*operands = *compare = NULL;
	if (avail < sizeof(*h) + sizeof(*a))
		return -FI_EINVAL;
	memcpy(a, (const uint8_t *)buf + sizeof(*h), sizeof(*a));
	if (a->kind > VRDM_AMO_COMPARE ||
	    !util_atomic_valid(a->op, a->datatype, cls[a->kind]))
		return -FI_EOPNOTSUPP;
	elem = util_atomic_dt_size(a->datatype);
	if (!elem || !len || len > VRDM_ATOMIC_MAX || len % elem)
		return -FI_EINVAL;
	if (a->op != FI_ATOMIC_READ)
		plen = len;
	if (a->kind == VRDM_AMO_COMPARE)
		plen += len;
	if (avail - sizeof(*h) - sizeof(*a) < plen)
		return -FI_EINVAL;
	if (a->op != FI_ATOMIC_READ)
		*operands = p;
	if (a->kind == VRDM_AMO_COMPARE)
		*compare = p + (a->op != FI_ATOMIC_READ ? len : 0);
	return 0;
}

int vrdm_status(const struct vrdm_hdr *h)
{
	return h->status < 65536 ? (int)h->status : FI_EIO;
}

/* ---- RDM private data ---------------------------------------------------- */

int vrdm_cm_priv_decode(const void *priv, size_t len,
			struct vrdm_cm_priv *pd)
{
	if (!priv || len < sizeof(*pd))
		return -FI_EPROTO;
	memcpy(pd, priv, sizeof(*pd));
	return pd->version == VRDM_VERSION ? 0 : -FI_EPROTO;
}

int vrdm_cm_priv_addr(const struct vrdm_cm_priv *pd,
		      struct sockaddr_storage *sa)
{
	memset(sa, 0, sizeof(*sa));
	if (pd->addr_len > sizeof(pd->addr) ||
	    pd->addr_len < sizeof(struct sockaddr_in))
		return -FI_EPROTO;
	memcpy(sa, pd->addr, pd->addr_len);
	if ((sa->ss_family != AF_INET && sa->ss_family != AF_INET6) ||
	    pd->addr_len < util_sockaddr_len(sa)) {
		memset(sa, 0, sizeof(*sa));
		return -FI_EADDRNOTAVAIL;
	}
	return 0;
}
