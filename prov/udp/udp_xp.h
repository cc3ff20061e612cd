/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * udp's transport for the RDM engine (weft/util_rdm.h): one UDP socket per
 * endpoint, named by its socket address as a datagram endpoint is, and a
 * small header before each datagram's payload (docs/udp-protocol.md).
 *
 * Two modes share the code:
 *  - unreliable (FI_EP_DGRAM under the name "sockets"): a message is one
 *    datagram, sent once; a lost one is never received.  No rendezvous,
 *    no RMA, no delivery acknowledgement.
 *  - reliable (FI_EP_RDM, "udp" and "udp;ofi_rxd"): per-peer sequence
 *    numbers over packets of a message, a send window, cumulative and
 *    selective acknowledgements, retransmission on timeout (timers looked
 *    at in progress), duplicates dropped, in-order delivery to the engine.
 *    Messages up to eager_max are copied into the peer's send ring and
 *    complete at once; larger ones are sent from the user's buffer and
 *    complete when every packet is acknowledged.
 */
#ifndef WEFT_PROV_UDP_XP_H
#define WEFT_PROV_UDP_XP_H

#include "udp.h"

#include <assert.h>
#include <stddef.h>
#include <stdint.h>

#include "weft/util_rdm.h"

#define UDPX_MAGIC 0x5746 /* "FW" on the wire, little-endian */
#define UDPX_VERSION 1

/* Packet types. */
enum {
	UDPX_MSG = 1,  /* first (or only) packet of a message */
	UDPX_DATA = 2, /* the next packet of the message in progress */
	UDPX_DACK = 3, /* delivery acknowledgement of a message (tx_id) */
	UDPX_ACK = 4,  /* acknowledgement only: no sequence number */
	/* RMA and atomics (reliable only): a request's first packet, its
	 * body (remote ranges, operands, written bytes) going on in DATA
	 * packets; the target answers with a DACK (status) or RESPs. */
	UDPX_WRITE = 5,
	UDPX_READ = 6,
	UDPX_ATOMIC = 7,
	UDPX_RESP = 8, /* read data or fetched values: tx_id, offset in tag */
	/* Scalable endpoints: no context dst_ctx here (pair 0 answers a
	 * sequenced packet for a context past the count); data names it. */
	UDPX_NOCTX = 9,
};

/* An atomic request's tag: ranges, op, datatype and kind. */
#define UDPX_AT_WRITE 1
#define UDPX_AT_FETCH 2
#define UDPX_AT_COMPARE 3
#define UDPX_RMA_TAG(n, op, dt, kind)                                          \
	((uint64_t)(n) | (uint64_t)(op) << 8 | (uint64_t)(dt) << 16 |          \
	 (uint64_t)(kind) << 24)
/* Bytes of one atomic operand vector (and of its results). */
#define UDPX_ATOMIC_MAX 4096

/* Packet flags. */
#define UDPX_F_TAGGED (1u << 0)
#define UDPX_F_COLL (1u << 1) /* the engine's own class (UTIL_RDM_COLL) */
#define UDPX_F_CQ_DATA (1u << 2)
#define UDPX_F_DC (1u << 3) /* the sender waits for a DACK */
#define UDPX_F_REL (1u << 4) /* sequenced: seq, base, ack, sack hold */
#define UDPX_F_ACK_NOW (1u << 5) /* acknowledge without delay */

/* Every datagram starts with it; fields in the host's order, which is
 * little-endian on every host weft builds for (a byte-swapped magic is
 * refused). */
struct udpx_hdr {
	uint16_t magic;
	uint8_t version;
	uint8_t type;
	uint16_t flags;
	/* Contexts of scalable endpoints (0: a plain endpoint's).  The
	 * kernel steers a datagram to the socket of dst_ctx by this byte
	 * (UDPX_DST_CTX_OFF, udp_sep.c); src_ctx names the sender's. */
	uint8_t dst_ctx;
	uint8_t src_ctx;
	uint32_t epoch; /* the sending endpoint's, random at open */
	uint32_t seq;	/* this packet's, in the sender's stream to us */
	uint32_t base;	/* the oldest seq the sender still keeps */
	uint32_t ack;	/* every seq before it, of our stream, arrived */
	uint64_t sack;	/* bit i: seq ack + 1 + i arrived */
	uint64_t tag;
	uint64_t data;	/* remote CQ data; a DACK's status */
	uint64_t len;	/* the whole message */
	uint64_t tx_id; /* the sender's, echoed by a DACK */
};
static_assert(sizeof(struct udpx_hdr) == 64, "udpx_hdr is 64 bytes");
#define UDPX_DST_CTX_OFF 6
static_assert(offsetof(struct udpx_hdr, dst_ctx) == UDPX_DST_CTX_OFF,
	      "dst_ctx where udp_sep.c's filter reads it");
/* A remote range on the wire: addr, len, key, u64 each. */
static_assert(sizeof(struct fi_rma_iov) == 24, "fi_rma_iov is 24 bytes");

/* A datagram endpoint's largest message: a datagram that fits an
 * Ethernet frame, as the raw endpoint's. */
#define UDPX_DGRAM_MAX (UDP_MAX_MSG - sizeof(struct udpx_hdr))
#define UDPX_DGRAM_INJECT UDPX_DGRAM_MAX
/* Bytes fi_inject carries on a reliable endpoint. */
#define UDPX_INJECT 4096

struct udpx_params {
	size_t eager_max;   /* reliable: copied and complete at once */
	size_t mtu;	    /* 0: the interface's */
	size_t unexp_max;
	uint32_t drop;	    /* FI_UDP_TEST_DROP: drop every drop-th datagram */
	uint32_t rto_ms;    /* first retransmission timeout */
	uint32_t retry_ms;  /* a peer silent this long has failed */
	uint32_t ack_us;    /* acknowledgements wait at most this long */
};
extern struct udpx_params udpx_params;
void udp_params_init(void);

/* Open an engine endpoint over udp: reliable (FI_EP_RDM) or not. */
int udpx_ep_open(struct fid_domain *domain, struct fi_info *info,
		 bool reliable, struct fid_ep **ep, void *context);

/*
 * Scalable endpoints (udp_sep.c): context pair i is an engine endpoint
 * whose socket shares the scalable endpoint's address with the other
 * pairs' (SO_REUSEPORT); a filter the kernel runs on each datagram hands
 * it to the socket of its dst_ctx.  At most UDP_SEP_MAX_CTX pairs.
 */
#define UDP_SEP_MAX_CTX 256
struct udp_sep;
int udp_sep_open(struct fid_domain *domain, struct fi_info *info,
		 struct fid_ep **sep, void *context);
/* Pair ctx's engine endpoint (reliable or not, as the info's type). */
int udpx_pair_open(struct fid_domain *domain, struct fi_info *info,
		   struct udp_sep *sep, uint32_t ctx, struct util_rdm_ep **ep);
/* Pair ctx's socket, bound to the scalable endpoint's address (the first
 * one picks it), and the filter that steers datagrams to it; -FI_E*. */
int udp_sep_socket(struct udp_sep *sep, uint32_t ctx, const struct fi_info *info,
		   uint32_t addr_format, struct sockaddr_storage *name,
		   socklen_t *namelen);
/* Pair ctx's socket closes. */
void udp_sep_socket_close(struct udp_sep *sep, uint32_t ctx, int fd);
struct util_rdm_sep *udp_sep_base(struct udp_sep *sep);
/*
 * What one pair learns for all: the kernel hands an ICMP error to the
 * socket of the group its hash picks, not to the sender's.  A note (its
 * first member a struct dlist_entry) goes to the inbox of every other
 * pair that listens (udp_sep_listen); udp_sep_unlisten at a pair's close,
 * after which nothing is posted to it.  Notes a pair did not take are
 * freed by udp_sep_unlisten.
 */
/* The addresses that refused datagrams (ICMP port unreachable), from
 * fd's error queue (IP_RECVERR), at most max; or from each socket of the
 * scalable endpoint's group. */
size_t udpx_errq_take(int fd, struct sockaddr_storage *out, size_t max);
size_t udp_sep_errq(struct udp_sep *sep, struct sockaddr_storage *out,
		    size_t max);
void udp_sep_listen(struct udp_sep *sep, uint32_t ctx);
void udp_sep_unlisten(struct udp_sep *sep, uint32_t ctx);
void udp_sep_tell(struct udp_sep *sep, uint32_t from, const void *note,
		  size_t len);
/* n notes were taken from pair ctx's inbox. */
void udp_sep_taken(struct udp_sep *sep, uint32_t ctx, uint32_t n);
#define UDP_SEP_NOTES 64 /* notes a pair may have waiting */

/* The endpoint socket both kinds of endpoint use: bound to info's source
 * address (port 0: the kernel's pick), its name in *name.  Returns the fd
 * or -FI_E*. */
int udp_socket_open(const struct fi_info *info, uint32_t addr_format,
		    struct sockaddr_storage *name, socklen_t *namelen);

/* fi_getname of either kind. */
int udp_name_copy(const struct sockaddr_storage *name, socklen_t namelen,
		  void *addr, size_t *addrlen);

#endif /* WEFT_PROV_UDP_XP_H */
