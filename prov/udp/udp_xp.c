/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * udp's transport for the RDM engine (udp_xp.h, docs/udp-protocol.md):
 * sends, arrivals, the reliable protocol's windows, acknowledgements and
 * timers, and the endpoints it makes (FI_EP_DGRAM under "sockets",
 * FI_EP_RDM under "udp" and "udp;ofi_rxd").
 *
 * Reliable mode, per peer.  Sending: packets take sequence numbers in
 * [una, snd_nxt) (una: the oldest not acknowledged); those in [una,
 * snd_out) went out at least once.  A packet of an eager message keeps
 * its bytes in the peer's send ring until acknowledged; one of a large
 * message names the user's buffer (tx->iov at an offset), which is held
 * until the last packet is acknowledged (util_rdm_tx_done).  Receiving:
 * packets in [dlv_nxt, dlv_nxt + UDPX_WIN) are taken; the one at dlv_nxt
 * goes to the engine at once when nothing waits before it, the others
 * are copied into rslot until their turn.  rcv_nxt is the first sequence
 * number not yet here, which every packet we send acknowledges, with a
 * bitmap of the 64 after it.  Timers (retransmission, delayed
 * acknowledgement, a silent peer's deadline) are looked at in progress,
 * for the peers on ep->active; an endpoint about to sleep arms a timerfd
 * for the earliest.
 */
#include "udp_xp.h"

#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/random.h>
#include <sys/timerfd.h>
#include <time.h>
#include <linux/errqueue.h>
#include <unistd.h>

#include "weft/stubs.h"
#include "weft/util_coll.h"
#include "weft/util_ifaddr.h"
#include "weft/util_atomic.h"
#include "weft/util_iov.h"
#include "weft/util_mr.h"

#define UDPX_WIN 256 /* packets a peer may have unacknowledged */
#define UDPX_WIN_DACK 16 /* of them kept for delivery acknowledgements */
#define UDPX_DACK_MAX 64 /* acknowledgements waiting for the window */
#define UDPX_RING (256u << 10) /* eager bytes per peer until acknowledged */
#define UDPX_BATCH 16 /* datagrams per recvmmsg */
#define UDPX_RX_BUF 65536
#define UDPX_ACK_EVERY 32 /* packets received before an ack goes at once */
#define UDPX_RTO_MAX_MS 1000
#define UDPX_SOCKBUF (4u << 20)
/* A peer found gone: sends to it fail this long, then try it again. */
#define UDPX_DEAD_MS 500
/* While receives wait for one peer only, the peers are probed this
 * often: one that went away is told by ICMP. */
#define UDPX_PROBE_MS 100

struct udpx_ep;

/* A message arriving in several packets (the engine's stash). */
struct udpx_stash {
	struct udpx_peer *peer; /* still arriving from it; NULL: all here */
	size_t len, got;
	uint64_t tx_id;
	bool dc;
	bool fetched, discarded;
	int error;
	void *cookie;
	size_t want;
	size_t iov_count;
	struct iovec iov[UTIL_RDM_IOV_MAX];
	/* Unexpected: the bytes so far, in a buffer of cap bytes grown as
	 * they come (len is the peer's word until they do). */
	uint8_t *data;
	size_t cap;
};

struct udpx_slot {
	struct udpx_hdr hdr;
	struct util_rdm_tx *tx; /* large message: payload from tx->iov */
	const uint8_t *copy;	/* eager: payload in the send ring */
	uint64_t ring_end;	/* the ring's head after this message */
	size_t off;
	uint32_t plen;
	bool last; /* the tx's last packet */
	bool sacked;
	bool fast; /* retransmitted on a hole already */
	uint64_t sent_ns;
	/* An answer's last packet: its udpx_resp, freed when acknowledged
	 * (NULL in every slot not in use). */
	void *own;
};

/* An answer carrying data (read data, fetched values), cut into RESP
 * packets as the window allows. */
struct udpx_resp {
	struct dlist_entry entry;
	uint64_t tx_id;
	size_t len, off;
	uint8_t data[];
};

/* An RMA or atomic request arriving (the target's side): its head (the
 * remote ranges, an atomic's operands) is gathered in pre, a write's
 * bytes go straight to the target's memory. */
struct udpx_rin {
	uint8_t type; /* UDPX_WRITE, UDPX_READ, UDPX_ATOMIC */
	uint8_t akind, op, dt;
	uint32_t nrma;
	bool cq_data;
	bool answered;
	int status; /* positive FI_E* */
	uint64_t data, tx_id, gen;
	size_t len, got, pre_len;
	size_t nlocal;
	struct fi_rma_iov rma[UTIL_RDM_IOV_MAX];
	struct iovec local[UTIL_RDM_IOV_MAX * 2];
	uint8_t pre[];
};

struct udpx_peer {
	struct util_peer peer; /* first */
	struct dlist_entry active;
	bool on_active;
	/* sending */
	uint32_t una, snd_out, snd_nxt;
	size_t inflight; /* payload bytes in [una, snd_nxt) */
	struct udpx_slot slot[UDPX_WIN];
	uint8_t *ring;
	uint64_t ring_head, ring_tail;
	struct util_rdm_tx *cur_tx; /* a large message being cut */
	size_t cur_off;
	/* An RMA request's head (ranges, operands) in the send ring: cut
	 * before a write's bytes. */
	const uint8_t *cur_pre;
	size_t cur_pre_len;
	uint64_t cur_pre_end;
	struct dlist_entry resp; /* udpx_resp: answers waiting for the window */
	uint32_t rma_wait; /* requests to it waiting for their answer */
	uint64_t last_ack_ns; /* when una last moved */
	uint32_t rto_ms;
	uint32_t ndack, dack_max;
	struct udpx_dack {
		uint64_t tx_id;
		int err;
	} *dack; /* delivery acknowledgements waiting for the window */
	/* receiving */
	bool rx_known;
	uint32_t rx_epoch;
	uint32_t dlv_nxt, rcv_nxt;
	uint32_t nstored, rx_unacked;
	struct {
		uint8_t *pkt;
		size_t len;
	} rslot[UDPX_WIN];
	struct udpx_stash *cur;
	struct udpx_rin *rin; /* a request arriving */
	bool stalled; /* the engine refused the packet at dlv_nxt */
	/* Failed (no answer, or nobody at its port): sends fail with it
	 * until it is heard from again, or dead_until passed. */
	int dead_err;
	uint64_t dead_until;
	bool ack_due;
	uint64_t ack_at;
};

struct udpx_ep {
	struct util_rdm_ep rdm; /* first */
	struct util_rdm_xport xp;
	bool reliable;
	uint8_t ctx; /* a scalable endpoint's pair: its index (else 0) */
	struct udp_sep *sep; /* that scalable endpoint, or NULL */
	int fd, epfd, tfd;
	bool timer_armed;
	bool icmp; /* an ICMP error waits in the socket's error queue */
	uint64_t probe_at;
	uint64_t errq_at; /* a pair: the group's error queues, next */
	/* RMA requests waiting for an answer, all peers: while any do, the
	 * peers are probed as for directed receives (a dead one is told). */
	uint32_t rma_wait;
	struct sockaddr_storage name;
	socklen_t namelen;
	uint32_t epoch;
	size_t pkt_max; /* payload bytes of one packet */
	size_t win_bytes;
	uint32_t ndrop;
	uint64_t now;
	struct dlist_entry active;
	struct udpx_peer *last_peer;
	struct util_bufpool *stash_pool;
	struct mmsghdr rmsg[UDPX_BATCH];
	struct iovec riov[UDPX_BATCH];
	struct sockaddr_storage rsrc[UDPX_BATCH];
	uint8_t *rbuf;
};

struct udpx_params udpx_params = {
	.eager_max = 65536,
	.unexp_max = 64u << 20,
	.rto_ms = 20,
	.retry_ms = 120000,
	.ack_us = 500,
};

static inline struct udpx_ep *udpx_ep_of(struct util_rdm_xport *xp)
{
	return container_of(xp, struct udpx_ep, xp);
}

static inline struct udpx_peer *udpx_peer_of(struct util_peer *peer)
{
	return container_of(peer, struct udpx_peer, peer);
}

static inline bool seq_lt(uint32_t a, uint32_t b)
{
	return (int32_t)(a - b) < 0;
}

static void active_add(struct udpx_ep *ep, struct udpx_peer *p)
{
	if (!p->on_active) {
		dlist_insert_tail(&p->active, &ep->active);
		p->on_active = true;
	}
}

/* Sends to a failed peer fail, for a while. */
static void stale_drop(struct udpx_ep *ep, struct udpx_peer *p);

static inline int peer_dead(struct udpx_ep *ep, struct udpx_peer *p)
{
	if (weft_likely(!p->dead_err))
		return 0;
	/* A new insert of its address: maybe a new process there.  The
	 * refusals still waiting for that address are the old one's. */
	if (p->peer.fresh) {
		p->peer.fresh = false;
		p->dead_err = 0;
		stale_drop(ep, p);
		return 0;
	}
	if (weft_now_ns() < p->dead_until)
		return -p->dead_err;
	p->dead_err = 0;
	return 0;
}

/* ---- the wire ----------------------------------------------------------- */

/* A packet to peer (its context: the endpoint's that takes it). */
static inline void hdr_init(struct udpx_ep *ep, struct udpx_hdr *h,
			    const struct util_peer *peer, uint8_t type,
			    uint16_t flags)
{
	memset(h, 0, sizeof(*h));
	h->magic = UDPX_MAGIC;
	h->version = UDPX_VERSION;
	h->type = type;
	h->flags = flags;
	h->dst_ctx = (uint8_t)peer->ctx;
	h->src_ctx = ep->ctx;
	h->epoch = ep->epoch;
}

/* The class and flags of the engine's header, as packet flags. */
static inline uint16_t hdr_flags(const struct util_rdm_hdr *hdr)
{
	return (uint16_t)((hdr->op == UTIL_RDM_TAGGED ? UDPX_F_TAGGED : 0) |
			  (hdr->op == UTIL_RDM_COLL ? UDPX_F_COLL : 0) |
			  ((hdr->flags & UTIL_RDM_CQ_DATA) ? UDPX_F_CQ_DATA :
							     0) |
			  ((hdr->flags & UTIL_RDM_ACK_REQ) ? UDPX_F_DC : 0));
}

/* One datagram out.  FI_UDP_TEST_DROP drops every n-th here, as a lossy
 * network would (the caller believes it sent). */
static int xmit(struct udpx_ep *ep, const void *dest, struct iovec *iov,
		size_t n)
{
	struct msghdr mh = {
		.msg_name = (void *)dest,
		.msg_namelen = (socklen_t)util_sockaddr_len(dest),
		.msg_iov = iov,
		.msg_iovlen = n,
	};
	ssize_t r;

	if (weft_unlikely(udpx_params.drop) &&
	    ++ep->ndrop % udpx_params.drop == 0)
		return 0;
	do
		r = sendmsg(ep->fd, &mh, MSG_DONTWAIT | MSG_NOSIGNAL);
	/* An ICMP error of an earlier datagram: not this one's (its
	 * address waits in the error queue). */
	while (weft_unlikely(r < 0) &&
	       (errno == ECONNREFUSED ? (ep->icmp = true) : errno == EINTR));
	return weft_likely(r >= 0) ? 0 : udp_errno(errno);
}

/* ---- reliable: sending -------------------------------------------------- */

static void ack_fill(struct udpx_peer *p, struct udpx_hdr *h)
{
	uint64_t sack = 0;
	unsigned int i;

	h->ack = p->rcv_nxt;
	if (p->nstored)
		for (i = 0; i < 64; i++) {
			uint32_t s = p->rcv_nxt + 1 + i;

			if ((int32_t)(s - p->dlv_nxt) >= UDPX_WIN)
				break;
			if (p->rslot[s % UDPX_WIN].pkt)
				sack |= (uint64_t)1 << i;
		}
	h->sack = sack;
}

static int xmit_slot(struct udpx_ep *ep, struct udpx_peer *p,
		     struct udpx_slot *s)
{
	struct iovec iov[1 + UTIL_RDM_IOV_MAX];
	size_t n = 1;
	int ret;

	s->hdr.base = p->una;
	ack_fill(p, &s->hdr);
	iov[0].iov_base = &s->hdr;
	iov[0].iov_len = sizeof(s->hdr);
	if (s->plen && s->copy) {
		iov[1].iov_base = (void *)s->copy;
		iov[1].iov_len = s->plen;
		n = 2;
	} else if (s->plen) {
		n += util_iov_slice(s->tx->iov, s->tx->iov_count, s->off,
				    s->plen, iov + 1);
	}
	ret = xmit(ep, p->peer.addr, iov, n);
	if (!ret) {
		s->sent_ns = ep->now;
		p->ack_due = false; /* it carried our acknowledgement */
		p->rx_unacked = 0;
	}
	return ret;
}

static void send_ack(struct udpx_ep *ep, struct udpx_peer *p)
{
	struct udpx_hdr h;
	struct iovec iov = { &h, sizeof(h) };

	hdr_init(ep, &h, &p->peer, UDPX_ACK, UDPX_F_REL);
	h.base = p->una;
	ack_fill(p, &h);
	if (!xmit(ep, p->peer.addr, &iov, 1)) {
		p->ack_due = false;
		p->rx_unacked = 0;
	}
}

/* Room for one more packet of plen bytes (data: the DACKs' reserve left). */
static inline bool win_room(struct udpx_ep *ep, struct udpx_peer *p,
			    size_t plen, bool data)
{
	uint32_t used = p->snd_nxt - p->una;

	if (used >= (data ? UDPX_WIN - UDPX_WIN_DACK : UDPX_WIN))
		return false;
	return used == 0 || p->inflight + plen <= ep->win_bytes;
}

static struct udpx_slot *slot_new(struct udpx_ep *ep, struct udpx_peer *p,
				  uint8_t type, uint16_t flags)
{
	struct udpx_slot *s = &p->slot[p->snd_nxt % UDPX_WIN];

	if (p->una == p->snd_nxt)
		p->last_ack_ns = ep->now;
	hdr_init(ep, &s->hdr, &p->peer, type, flags | UDPX_F_REL);
	s->hdr.seq = p->snd_nxt++;
	s->tx = NULL;
	s->copy = NULL;
	s->ring_end = 0;
	s->off = 0;
	s->plen = 0;
	s->last = false;
	s->sacked = false;
	s->fast = false;
	s->sent_ns = 0;
	return s;
}

/* Cut what waits into packets as the window allows, and send what was
 * not sent yet. */
static bool pump_rma(struct udpx_ep *ep, struct udpx_peer *p);
static bool resp_cut(struct udpx_ep *ep, struct udpx_peer *p);

static void pump(struct udpx_ep *ep, struct udpx_peer *p)
{
	struct udpx_slot *s;

	while (p->cur_tx) {
		struct util_rdm_tx *tx = p->cur_tx;
		size_t plen = WEFT_MIN(tx->hdr.len - p->cur_off, ep->pkt_max);

		if (weft_unlikely(tx->kind != UTIL_RDM_TX_SEND)) {
			if (!pump_rma(ep, p))
				break;
			continue;
		}
		if (!win_room(ep, p, plen, true))
			break;
		if (p->cur_off == 0) {
			s = slot_new(ep, p, UDPX_MSG, hdr_flags(&tx->hdr));
			if (tx->flags & FI_DELIVERY_COMPLETE)
				s->hdr.flags |= UDPX_F_DC;
			s->hdr.tag = tx->hdr.tag;
			s->hdr.data = tx->hdr.data;
			s->hdr.len = tx->hdr.len;
			s->hdr.tx_id = tx->hdr.tx_id;
		} else {
			s = slot_new(ep, p, UDPX_DATA, 0);
		}
		s->tx = tx;
		s->off = p->cur_off;
		s->plen = (uint32_t)plen;
		p->inflight += plen;
		p->cur_off += plen;
		if (p->cur_off == tx->hdr.len) {
			/* The sender waits for this one's acknowledgement. */
			s->last = true;
			s->hdr.flags |= UDPX_F_ACK_NOW;
			/* Done at the DACK, not at this one's ack. */
			if (tx->flags & FI_DELIVERY_COMPLETE)
				s->hdr.flags |= UDPX_F_DC;
			p->cur_tx = NULL;
		}
	}
	while (p->ndack && win_room(ep, p, 0, false)) {
		s = slot_new(ep, p, UDPX_DACK, 0);
		s->hdr.tx_id = p->dack[0].tx_id;
		s->hdr.data = (uint64_t)(int64_t)p->dack[0].err;
		s->hdr.flags |= UDPX_F_ACK_NOW;
		memmove(p->dack, p->dack + 1, --p->ndack * sizeof(p->dack[0]));
	}
	while (weft_unlikely(!dlist_empty(&p->resp)) && resp_cut(ep, p))
		;
	while (p->snd_out != p->snd_nxt) {
		if (xmit_slot(ep, p, &p->slot[p->snd_out % UDPX_WIN]))
			break;
		p->snd_out++;
	}
	if (p->una != p->snd_nxt || p->cur_tx || p->ndack)
		active_add(ep, p);
}

/* Bytes of the send ring for an eager message, or NULL (full). */
static uint8_t *ring_take(struct udpx_peer *p, size_t len, uint64_t *end)
{
	uint64_t head = p->ring_head;
	size_t pos;

	if (!p->ring) {
		p->ring = malloc(UDPX_RING);
		if (!p->ring)
			return NULL;
	}
	if (p->ring_tail == head)
		head = p->ring_head = p->ring_tail = 0;
	pos = head % UDPX_RING;
	if (pos + len > UDPX_RING) /* no wrap inside a message */
		head += UDPX_RING - pos;
	if (head + len - p->ring_tail > UDPX_RING)
		return NULL;
	pos = head % UDPX_RING;
	p->ring_head = head + len;
	*end = p->ring_head;
	return p->ring + pos;
}

static int rel_send_eager(struct udpx_ep *ep, struct udpx_peer *p,
			  const struct util_rdm_hdr *hdr,
			  const struct iovec *iov, size_t count)
{
	size_t len = hdr->len, npk, off, plen, k;
	struct udpx_slot *s;
	uint64_t end = 0;
	uint8_t *buf = NULL;
	int ret;

	if (p->cur_tx)
		return -FI_EAGAIN; /* in order behind it */
	ret = peer_dead(ep, p);
	if (ret)
		return ret;
	ep->now = weft_now_ns();
	npk = len ? (len + ep->pkt_max - 1) / ep->pkt_max : 1;
	if (p->snd_nxt - p->una + npk > UDPX_WIN - UDPX_WIN_DACK ||
	    (p->una != p->snd_nxt && p->inflight + len > ep->win_bytes))
		return -FI_EAGAIN;
	if (len) {
		buf = ring_take(p, len, &end);
		if (!buf)
			return -FI_EAGAIN;
		util_iov_copy_from(buf, iov, count, 0, len);
	}
	for (k = 0, off = 0; k < npk; k++, off += plen) {
		plen = WEFT_MIN(len - off, ep->pkt_max);
		if (k == 0) {
			s = slot_new(ep, p, UDPX_MSG, hdr_flags(hdr));
			s->hdr.tag = hdr->tag;
			s->hdr.data = hdr->data;
			s->hdr.len = len;
			s->hdr.tx_id = hdr->tx_id;
		} else {
			s = slot_new(ep, p, UDPX_DATA, 0);
		}
		s->copy = buf ? buf + off : NULL;
		s->plen = (uint32_t)plen;
		s->ring_end = end;
		p->inflight += plen;
	}
	pump(ep, p);
	return 0;
}

/* ---- reliable: RMA and atomics, the initiator's side -------------------- */

/* The next packet of the RMA request being cut: its head from the send
 * ring, then a write's bytes from the user's buffer.  Whether one went. */
static bool pump_rma(struct udpx_ep *ep, struct udpx_peer *p)
{
	struct util_rdm_tx *tx = p->cur_tx;
	size_t total = p->cur_pre_len +
		       (tx->kind == UTIL_RDM_TX_WRITE ? tx->hdr.len : 0);
	size_t off = p->cur_off, plen;
	struct udpx_slot *s;
	uint8_t type, akind;

	plen = WEFT_MIN((off < p->cur_pre_len ? p->cur_pre_len : total) - off,
			ep->pkt_max);
	if (!win_room(ep, p, plen, true))
		return false;
	if (off == 0) {
		type = tx->kind == UTIL_RDM_TX_WRITE ? UDPX_WRITE :
		       tx->kind == UTIL_RDM_TX_READ  ? UDPX_READ :
						       UDPX_ATOMIC;
		akind = tx->kind == UTIL_RDM_TX_ATOMIC	     ? UDPX_AT_WRITE :
			tx->kind == UTIL_RDM_TX_FETCH_ATOMIC ? UDPX_AT_FETCH :
							       UDPX_AT_COMPARE;
		s = slot_new(ep, p, type,
			     type == UDPX_WRITE &&
					     (tx->hdr.flags & UTIL_RDM_CQ_DATA) ?
				     UDPX_F_CQ_DATA :
				     0);
		s->hdr.tag = type == UDPX_ATOMIC ?
				     UDPX_RMA_TAG(tx->rma_count, tx->atomic_op,
						  tx->datatype, akind) :
				     UDPX_RMA_TAG(tx->rma_count, 0, 0, 0);
		s->hdr.data = tx->hdr.data;
		s->hdr.len = total;
		s->hdr.tx_id = tx->hdr.tx_id;
	} else {
		s = slot_new(ep, p, UDPX_DATA, 0);
	}
	if (off < p->cur_pre_len) {
		s->copy = p->cur_pre + off;
		s->ring_end = p->cur_pre_end;
	} else {
		s->tx = tx;
		s->off = off - p->cur_pre_len;
	}
	s->plen = (uint32_t)plen;
	p->inflight += plen;
	p->cur_off += plen;
	if (p->cur_off == total) {
		/* Done at the target's answer, not at the acknowledgement. */
		s->hdr.flags |= UDPX_F_ACK_NOW;
		p->cur_tx = NULL;
	}
	return true;
}

/* The next packet of the first answer waiting; whether one went. */
static bool resp_cut(struct udpx_ep *ep, struct udpx_peer *p)
{
	struct udpx_resp *r = container_of(p->resp.next, struct udpx_resp,
					   entry);
	size_t plen = WEFT_MIN(r->len - r->off, ep->pkt_max);
	struct udpx_slot *s;

	if (!win_room(ep, p, plen, true))
		return false;
	s = slot_new(ep, p, UDPX_RESP, 0);
	s->hdr.tx_id = r->tx_id;
	s->hdr.tag = r->off;
	s->hdr.len = r->len;
	s->copy = r->data + r->off;
	s->plen = (uint32_t)plen;
	p->inflight += plen;
	r->off += plen;
	if (r->off == r->len) {
		dlist_remove(&r->entry);
		s->last = true;
		s->own = r;
		s->hdr.flags |= UDPX_F_ACK_NOW;
	}
	return true;
}

/* Acknowledged: packets before ack left the window; the bitmap says
 * which after it arrived.  A hole before arrivals is sent again now. */
static void acks_in(struct udpx_ep *ep, struct udpx_peer *p, uint32_t ack,
		    uint64_t sack)
{
	struct udpx_slot *s;
	unsigned int i;

	if (seq_lt(p->una, ack) && !seq_lt(p->snd_out, ack)) {
		while (p->una != ack) {
			s = &p->slot[p->una % UDPX_WIN];
			p->inflight -= s->plen;
			if (s->ring_end)
				p->ring_tail = s->ring_end;
			p->una++;
			if (weft_unlikely(s->own)) {
				free(s->own);
				s->own = NULL;
			} else if (s->last && !(s->hdr.flags & UDPX_F_DC)) {
				struct util_rdm_tx *tx = s->tx;

				s->tx = NULL;
				util_rdm_tx_done(&ep->rdm, tx, 0);
			}
			s->tx = NULL;
		}
		p->last_ack_ns = ep->now;
		p->rto_ms = udpx_params.rto_ms;
	}
	if (!sack || p->una == p->snd_out)
		return;
	for (i = 0; i < 64; i++) {
		uint32_t q = ack + 1 + i;

		if (!seq_lt(q, p->snd_out))
			break;
		if ((sack >> i) & 1 && !seq_lt(q, p->una))
			p->slot[q % UDPX_WIN].sacked = true;
	}
	s = &p->slot[p->una % UDPX_WIN];
	if (!s->fast && !s->sacked && p->una == ack) {
		s->fast = true;
		xmit_slot(ep, p, s);
	}
}

/* Forget what we were sending to p: held transmits go back to the engine,
 * which fails them (util_rdm_fail_peer). */
static void resp_drop(struct udpx_peer *p)
{
	struct dlist_entry *e;
	uint32_t q;

	for (q = p->una; q != p->snd_nxt; q++) {
		free(p->slot[q % UDPX_WIN].own);
		p->slot[q % UDPX_WIN].own = NULL;
	}
	while (!dlist_empty(&p->resp)) {
		e = p->resp.next;
		dlist_remove(e);
		free(container_of(e, struct udpx_resp, entry));
	}
}

static void tx_reset(struct udpx_ep *ep, struct udpx_peer *p)
{
	uint32_t q;

	ep->rma_wait -= p->rma_wait;
	p->rma_wait = 0;
	resp_drop(p);
	for (q = p->una; q != p->snd_nxt; q++)
		p->slot[q % UDPX_WIN].tx = NULL;
	p->una = p->snd_out = p->snd_nxt;
	p->inflight = 0;
	p->ring_head = p->ring_tail = 0;
	p->cur_tx = NULL;
	p->ndack = 0;
}

static void stash_place(struct udpx_ep *ep, struct udpx_stash *st,
			const uint8_t *payload, size_t plen);

/* The message p was sending will not end: its receive fails with err. */
static void cur_fail(struct udpx_ep *ep, struct udpx_peer *p, int err)
{
	struct udpx_stash *st = p->cur;

	if (!st)
		return;
	st->error = err;
	st->dc = false;
	st->got = st->len - 1;
	stash_place(ep, st, (const uint8_t *)"", 1);
}

static void peer_fail(struct udpx_ep *ep, struct udpx_peer *p, int err)
{
	char buf[64] = "";
	size_t len = sizeof(buf);

	fi_av_straddr(&ep->rdm.base.av->av_fid, p->peer.addr, buf, &len);
	FI_WARN(&udp_prov, FI_LOG_EP_DATA,
		"peer %s: %s; its transmits fail\n", buf, fi_strerror(err));
	tx_reset(ep, p);
	/* The message it was sending will not end: its receive fails. */
	cur_fail(ep, p, err);
	p->dead_err = err;
	p->dead_until = ep->now + UDPX_DEAD_MS * 1000000ull;
	util_rdm_fail_peer(&ep->rdm, &p->peer, err);
}

/*
 * ICMP errors (IP_RECVERR): a datagram found nobody at a peer's port.  A
 * peer we wait on (packets unacknowledged) fails at once, as a closed
 * connection would.
 */
/* Nobody at key's port (ICMP): every context of the endpoint that was
 * there, of those we wait for, has failed. */
static void refused(struct udpx_ep *ep, const struct sockaddr_in6 *key)
{
	struct util_peer_map *map = &ep->rdm.peers;
	struct dlist_entry *e;

	dlist_foreach(&map->list, e) {
		struct util_peer *peer =
			container_of(e, struct util_peer, entry);
		struct udpx_peer *p = udpx_peer_of(peer);

		if (memcmp(peer->addr, key, map->attr.addr_len))
			continue;
		if (p->una != p->snd_nxt || p->cur_tx || p->ndack ||
		    p->rma_wait || util_rdm_rx_directed(&ep->rdm))
			peer_fail(ep, p, FI_ECONNREFUSED);
	}
}

/* A scalable endpoint's pair: what another pair learnt (udp_sep_tell). */
struct udpx_note {
	struct dlist_entry entry; /* first */
	struct sockaddr_in6 key;  /* refused */
};

/* (except: refusals of that address are of an endpoint there before,
 * and dropped) */
static void notes_take(struct udpx_ep *ep, const void *except)
{
	struct util_rdm_sep *sep = udp_sep_base(ep->sep);
	struct dlist_entry *e;
	uint32_t taken = 0;

	util_rdm_inbox_hush(sep, ep->ctx);
	while ((e = util_rdm_inbox_take(sep, ep->ctx))) {
		struct udpx_note *n = container_of(e, struct udpx_note, entry);

		if (!except ||
		    memcmp(except, &n->key, ep->rdm.peers.attr.addr_len))
			refused(ep, &n->key);
		free(n);
		taken++;
	}
	if (taken)
		udp_sep_taken(ep->sep, ep->ctx, taken);
}

size_t udpx_errq_take(int fd, struct sockaddr_storage *out, size_t max)
{
	struct sockaddr_storage sa;
	char cbuf[512];
	struct msghdr mh;
	struct cmsghdr *cm;
	size_t n = 0;

	while (n < max) {
		memset(&mh, 0, sizeof(mh));
		mh.msg_name = &sa;
		mh.msg_namelen = sizeof(sa);
		mh.msg_control = cbuf;
		mh.msg_controllen = sizeof(cbuf);
		if (recvmsg(fd, &mh, MSG_ERRQUEUE | MSG_DONTWAIT) < 0)
			break;
		for (cm = CMSG_FIRSTHDR(&mh); cm; cm = CMSG_NXTHDR(&mh, cm)) {
			struct sock_extended_err ee;

			if (!((cm->cmsg_level == IPPROTO_IP &&
			       cm->cmsg_type == IP_RECVERR) ||
			      (cm->cmsg_level == IPPROTO_IPV6 &&
			       cm->cmsg_type == IPV6_RECVERR)))
				continue;
			memcpy(&ee, CMSG_DATA(cm), sizeof(ee));
			if (ee.ee_errno == ECONNREFUSED) {
				out[n++] = sa;
				break;
			}
		}
	}
	return n;
}

/* The ICMP errors waiting: in our socket's error queue, or a scalable
 * endpoint's pair's in any of the group's (the kernel picks one by hash,
 * udp_sep.c), whose other pairs are told. */
static void icmp_drain(struct udpx_ep *ep, const void *except);

/* p's address names a new endpoint: ICMP errors and notes about it that
 * wait are dropped (the others taken). */
static void stale_drop(struct udpx_ep *ep, struct udpx_peer *p)
{
	if (!ep->reliable)
		return;
	if (ep->sep)
		notes_take(ep, p->peer.addr);
	icmp_drain(ep, p->peer.addr);
}

static void icmp_drain(struct udpx_ep *ep, const void *except)
{
	struct sockaddr_storage sa[16];
	struct util_peer_map *map = &ep->rdm.peers;
	struct sockaddr_in6 key;
	size_t n, i;

	ep->icmp = false;
	if (map->attr.addr_len > sizeof(key))
		return;
	do {
		n = ep->sep ? udp_sep_errq(ep->sep, sa, 16) :
			      udpx_errq_take(ep->fd, sa, 16);
		for (i = 0; i < n; i++) {
			memset(&key, 0, sizeof(key));
			memcpy(&key, &sa[i], map->attr.addr_len);
			if (ep->rdm.base.av && ep->rdm.base.av->ops.normalize &&
			    ep->rdm.base.av->ops.normalize(ep->rdm.base.av,
							   &key, &key))
				continue;
			if (except && !memcmp(except, &key, map->attr.addr_len))
				continue;
			refused(ep, &key);
			if (ep->sep) {
				struct udpx_note note = {.key = key};

				udp_sep_tell(ep->sep, ep->ctx, &note,
					     sizeof(note));
			}
		}
	} while (n == 16);
}

/* ---- reliable: receiving ------------------------------------------------ */

static inline struct udpx_stash *stash_of(const void *stash)
{
	struct udpx_stash *st;

	memcpy(&st, stash, sizeof(st));
	return st;
}

static void stash_free(struct udpx_ep *ep, struct udpx_stash *st)
{
	free(st->data);
	util_bufpool_put(ep->stash_pool, st);
}

static int dack_queue(struct udpx_ep *ep, struct udpx_peer *p,
		      uint64_t tx_id, int err)
{
	if (p->ndack == p->dack_max) {
		uint32_t n = p->dack_max ? 2 * p->dack_max : UDPX_DACK_MAX;
		struct udpx_dack *d = realloc(p->dack, n * sizeof(*d));

		if (!d) {
			FI_WARN(&udp_prov, FI_LOG_EP_DATA,
				"no memory for a delivery acknowledgement: "
				"its sender's transmit will fail\n");
			return -FI_ENOMEM;
		}
		p->dack = d;
		p->dack_max = n;
	}
	p->dack[p->ndack].tx_id = tx_id;
	p->dack[p->ndack++].err = err;
	pump(ep, p);
	return 0;
}

/* Every byte of a message in several packets is here. */
static void stash_complete(struct udpx_ep *ep, struct udpx_stash *st)
{
	struct udpx_peer *p = st->peer;

	p->cur = NULL;
	st->peer = NULL;
	if (st->discarded) {
		stash_free(ep, st);
	} else if (st->fetched) {
		if (st->dc)
			dack_queue(ep, p, st->tx_id, st->error);
		util_rdm_fetch_done(&ep->rdm, st->cookie, st->error);
		stash_free(ep, st);
	}
	/* else: unexpected, kept until a receive takes it */
}

/* Room for need bytes of an unexpected message, doubling up to its
 * length; on failure its bytes are dropped and its receive fails. */
static void stash_grow(struct udpx_stash *st, size_t need)
{
	size_t cap = WEFT_MIN(WEFT_MAX(WEFT_MAX(2 * st->cap, need),
				       (size_t)UDPX_RX_BUF),
			      st->len);
	uint8_t *d = realloc(st->data, cap);

	if (!d) {
		free(st->data);
		st->data = NULL;
		st->error = FI_ENOMEM;
		return;
	}
	st->data = d;
	st->cap = cap;
}

static void stash_place(struct udpx_ep *ep, struct udpx_stash *st,
			const uint8_t *payload, size_t plen)
{
	plen = WEFT_MIN(plen, st->len - st->got);
	if (st->fetched) {
		if (st->got < st->want)
			util_iov_copy_to(st->iov, st->iov_count, st->got,
					 payload,
					 WEFT_MIN(plen, st->want - st->got));
	} else if (!st->discarded && !st->error && plen) {
		/* Unexpected: kept as the bytes come. */
		if (st->got + plen > st->cap)
			stash_grow(st, st->got + plen);
		if (!st->error)
			memcpy(st->data + st->got, payload, plen);
	}
	st->got += plen;
	if (st->got == st->len)
		stash_complete(ep, st);
}

/* ---- reliable: RMA and atomics, the target's side ----------------------- */

static inline struct util_mr_map *ep_mr_map(struct udpx_ep *ep)
{
	return &util_mr_domain_of(ep->rdm.base.domain)->mr_map;
}

/* A remote operation on our memory succeeded: the counters bound to the
 * registrations it named count it (fi_mr_bind). */
static void count_target(struct udpx_ep *ep, const struct fi_rma_iov *rma,
			 size_t n, uint32_t kind, enum fi_op op)
{
	struct util_mr_map *map = ep_mr_map(ep);

	if (util_mr_map_counting(map))
		util_mr_map_count(map, rma, n, util_rdm_mr_events(kind, op));
}

static size_t rma_len(const struct fi_rma_iov *rma, size_t n)
{
	size_t i, len = 0;

	for (i = 0; i < n; i++)
		len += rma[i].len;
	return len;
}

/* Answer with data (read data, fetched values): r is the answer's, its
 * data filled; len 0 or an error goes as a DACK. */
static void answer(struct udpx_ep *ep, struct udpx_peer *p, uint64_t tx_id,
		   int err, struct udpx_resp *r)
{
	if (err || !r || !r->len) {
		free(r);
		dack_queue(ep, p, tx_id, err);
		return;
	}
	r->tx_id = tx_id;
	r->off = 0;
	dlist_insert_tail(&r->entry, &p->resp);
	pump(ep, p);
}

static struct udpx_resp *resp_new(size_t len)
{
	struct udpx_resp *r = malloc(sizeof(*r) + len);

	if (r)
		r->len = len;
	return r;
}

static void read_in(struct udpx_ep *ep, struct udpx_peer *p,
		    struct udpx_rin *in)
{
	size_t len = rma_len(in->rma, in->nrma);
	struct udpx_resp *r = NULL;
	int ret = 0;

	if (!(ep->rdm.base.caps & FI_RMA))
		ret = -FI_EOPNOTSUPP;
	if (!ret)
		ret = util_rdm_target_iov(ep_mr_map(ep), in->rma, in->nrma,
					  FI_REMOTE_READ, in->local,
					  UTIL_RDM_IOV_MAX * 2, &in->nlocal);
	if (!ret && len) {
		/* The bytes as they are now, kept until acknowledged. */
		r = resp_new(len);
		if (r)
			util_iov_copy_from(r->data, in->local, in->nlocal, 0,
					   len);
		else
			ret = -FI_ENOMEM;
	}
	if (!ret) {
		count_target(ep, in->rma, in->nrma, UTIL_RDM_TX_READ,
			     WEFT_ATOMIC_OP_COUNT);
		util_rdm_remote_event(&ep->rdm, FI_REMOTE_READ, len, 0);
	}
	answer(ep, p, in->tx_id, -ret, r);
}

static void atomic_in(struct udpx_ep *ep, struct udpx_peer *p,
		      struct udpx_rin *in)
{
	size_t len = rma_len(in->rma, in->nrma);
	size_t head = in->nrma * sizeof(struct fi_rma_iov);
	size_t elem = util_atomic_dt_size((enum fi_datatype)in->dt);
	struct util_mr_map *map = ep_mr_map(ep);
	uint64_t access = FI_REMOTE_WRITE;
	struct udpx_resp *r = NULL;
	int ret = 0;

	if (!elem || len % elem || len > UDPX_ATOMIC_MAX ||
	    in->akind < UDPX_AT_WRITE || in->akind > UDPX_AT_COMPARE ||
	    in->pre_len !=
		    head + len * (in->akind == UDPX_AT_COMPARE ? 2 : 1))
		ret = -FI_EINVAL;
	if (!ret && in->akind != UDPX_AT_WRITE) {
		access |= FI_REMOTE_READ;
		r = resp_new(len);
		if (!r)
			ret = -FI_ENOMEM;
	}
	if (!ret)
		ret = util_rdm_target_iov(map, in->rma, in->nrma, access,
					  in->local, UTIL_RDM_IOV_MAX * 2,
					  &in->nlocal);
	/* Peers of this host may apply atomics to the same memory
	 * themselves (shm's registration table): take their lock. */
	if (!ret)
		ret = util_mr_map_atomic_lock(map);
	if (!ret) {
		ret = util_rdm_target_atomic(
			(enum fi_op)in->op, (enum fi_datatype)in->dt,
			in->local, in->nlocal, in->pre + head,
			in->akind == UDPX_AT_COMPARE ? in->pre + head + len :
						       NULL,
			r ? r->data : NULL);
		util_mr_map_atomic_unlock(map);
	}
	if (!ret) {
		count_target(ep, in->rma, in->nrma,
			     in->akind == UDPX_AT_WRITE ? UTIL_RDM_TX_ATOMIC :
			     in->akind == UDPX_AT_FETCH ?
							  UTIL_RDM_TX_FETCH_ATOMIC :
							  UTIL_RDM_TX_COMPARE_ATOMIC,
			     (enum fi_op)in->op);
		util_rdm_remote_event(&ep->rdm, FI_REMOTE_WRITE, len, 0);
	}
	answer(ep, p, in->tx_id, -ret, r);
}

/* A request's head is here: check and translate its ranges; a read or
 * an atomic is served now. */
static void rin_ready(struct udpx_ep *ep, struct udpx_peer *p,
		      struct udpx_rin *in)
{
	int ret;

	memcpy(in->rma, in->pre, in->nrma * sizeof(struct fi_rma_iov));
	switch (in->type) {
	case UDPX_READ:
		read_in(ep, p, in);
		in->answered = true;
		return;
	case UDPX_ATOMIC:
		atomic_in(ep, p, in);
		in->answered = true;
		return;
	}
	if (!(ep->rdm.base.caps & FI_RMA)) {
		in->status = FI_EOPNOTSUPP;
		return;
	}
	if (rma_len(in->rma, in->nrma) != in->len - in->pre_len) {
		in->status = FI_EINVAL;
		return;
	}
	ret = util_rdm_target_iov(ep_mr_map(ep), in->rma, in->nrma,
				  FI_REMOTE_WRITE, in->local,
				  UTIL_RDM_IOV_MAX * 2, &in->nlocal);
	in->status = -ret;
	in->gen = util_mr_map_gen(ep_mr_map(ep));
}

/* Every byte of the request is here. */
static void rin_end(struct udpx_ep *ep, struct udpx_peer *p,
		    struct udpx_rin *in)
{
	p->rin = NULL;
	if (!in->answered) {
		if (!in->status && in->type == UDPX_WRITE) {
			count_target(ep, in->rma, in->nrma, UTIL_RDM_TX_WRITE,
				     WEFT_ATOMIC_OP_COUNT);
			util_rdm_remote_event(
				&ep->rdm,
				FI_REMOTE_WRITE |
					(in->cq_data ? FI_REMOTE_CQ_DATA : 0),
				in->len - in->pre_len, in->data);
		}
		dack_queue(ep, p, in->tx_id, in->status);
	}
	free(in);
}

/* The next bytes of the request arriving. */
static void rin_place(struct udpx_ep *ep, struct udpx_peer *p,
		      const uint8_t *payload, size_t plen)
{
	struct udpx_rin *in = p->rin;
	size_t k;

	plen = WEFT_MIN(plen, in->len - in->got);
	if (in->got < in->pre_len) {
		k = WEFT_MIN(plen, in->pre_len - in->got);
		memcpy(in->pre + in->got, payload, k);
		in->got += k;
		payload += k;
		plen -= k;
		if (in->got == in->pre_len)
			rin_ready(ep, p, in);
	}
	if (plen) {
		if (!in->status &&
		    util_mr_map_gen(ep_mr_map(ep)) != in->gen) {
			/* A registration changed: still there? */
			in->status = -util_rdm_target_iov(
				ep_mr_map(ep), in->rma, in->nrma,
				FI_REMOTE_WRITE, in->local,
				UTIL_RDM_IOV_MAX * 2, &in->nlocal);
			in->gen = util_mr_map_gen(ep_mr_map(ep));
		}
		if (!in->status)
			util_iov_copy_to(in->local, in->nlocal,
					 in->got - in->pre_len, payload, plen);
		in->got += plen;
	}
	if (in->got == in->len)
		rin_end(ep, p, in);
}

/* A request's first packet.  0, or -FI_EAGAIN (no memory now: offered
 * again later). */
static int rin_start(struct udpx_ep *ep, struct udpx_peer *p,
		     const struct udpx_hdr *h, const uint8_t *payload,
		     size_t plen)
{
	uint32_t n = (uint32_t)(h->tag & 0xff);
	size_t head = n * sizeof(struct fi_rma_iov), pre = head;
	struct udpx_rin *in;
	bool bad = false;

	if (weft_unlikely(p->rin)) { /* the one before was cut short */
		free(p->rin);
		p->rin = NULL;
	}
	if (h->type != UDPX_WRITE)
		pre = h->len; /* a read's or an atomic's body is its head */
	if (!n || n > UTIL_RDM_IOV_MAX || head > h->len ||
	    (h->type == UDPX_READ && h->len != head) ||
	    (h->type == UDPX_ATOMIC && h->len > head + 2 * UDPX_ATOMIC_MAX)) {
		bad = true;
		pre = 0;
	}
	in = calloc(1, sizeof(*in) + pre);
	if (!in)
		return -FI_EAGAIN;
	in->type = h->type;
	in->nrma = n;
	in->op = (uint8_t)(h->tag >> 8);
	in->dt = (uint8_t)(h->tag >> 16);
	in->akind = (uint8_t)(h->tag >> 24);
	in->cq_data = h->flags & UDPX_F_CQ_DATA;
	in->data = h->data;
	in->tx_id = h->tx_id;
	in->len = h->len;
	in->pre_len = pre;
	in->status = bad ? FI_EINVAL : 0;
	p->rin = in;
	rin_place(ep, p, payload, plen);
	return 0;
}

/*
 * Whether an answer (DACK, RESP) naming tx may complete it.  Not while
 * tx is still being cut into packets: an honest target answers once the
 * whole request or message is in, and completing tx then would leave
 * pump() cutting a transmit the engine already took back.  Nor a send
 * that waits for no DACK: its last packet's acknowledgement completes
 * it, which would complete it a second time (or another transmit that
 * took its place).  Such an answer is forged, or of a broken peer, and
 * is dropped.
 */
static bool answer_due(const struct udpx_peer *p, const struct util_rdm_tx *tx)
{
	if (p->cur_tx == tx)
		return false;
	return tx->kind != UTIL_RDM_TX_SEND ||
	       (tx->hdr.flags & UTIL_RDM_ACK_REQ) ||
	       (tx->flags & FI_DELIVERY_COMPLETE);
}

static void rma_answered(struct udpx_ep *ep, struct udpx_peer *p)
{
	if (p->rma_wait) {
		p->rma_wait--;
		ep->rma_wait--;
	}
}

/* Read data or fetched values for one of our requests. */
static void resp_in(struct udpx_ep *ep, struct udpx_peer *p,
		    const struct udpx_hdr *h, const uint8_t *payload,
		    size_t plen)
{
	struct util_rdm_tx *tx = util_rdm_tx_of(&ep->rdm, h->tx_id);

	if (!tx || tx->peer != &p->peer || h->len != tx->hdr.len ||
	    h->tag > h->len || plen > h->len - h->tag || !answer_due(p, tx))
		return; /* late, early, or not ours */
	if (tx->kind == UTIL_RDM_TX_READ)
		util_iov_copy_to(tx->iov, tx->iov_count, h->tag, payload, plen);
	else if (tx->kind == UTIL_RDM_TX_FETCH_ATOMIC ||
		 tx->kind == UTIL_RDM_TX_COMPARE_ATOMIC)
		util_iov_copy_to(tx->res_iov, tx->res_count, h->tag, payload,
				 plen);
	else
		return;
	/* Packets come in order: the last one completes it. */
	if (h->tag + plen == h->len) {
		rma_answered(ep, p);
		util_rdm_tx_done(&ep->rdm, tx, 0);
	}
}

/* A DACK's status: 0, or the positive FI_E* the peer sent when below
 * 65536; anything else, which no weft peer sends, is FI_EIO, so that the
 * completion carries a valid error whatever the peer wrote. */
static inline int dack_status(uint64_t data)
{
	return data < 65536 ? (int)data : FI_EIO;
}

static void msg_fill(struct udpx_ep *ep, const struct udpx_hdr *h,
		     struct util_rdm_msg *msg)
{
	memset(msg, 0, sizeof(*msg));
	msg->op = (h->flags & UDPX_F_TAGGED) ? UTIL_RDM_TAGGED :
		  (h->flags & UDPX_F_COLL)   ? UTIL_RDM_COLL :
					       UTIL_RDM_MSG;
	msg->flags = ((h->flags & UDPX_F_CQ_DATA) ? UTIL_RDM_CQ_DATA : 0) |
		     ((h->flags & UDPX_F_DC) ? UTIL_RDM_ACK_REQ : 0);
	msg->tag = h->tag;
	msg->data = h->data;
	msg->len = h->len;
	msg->tx_id = h->tx_id;
	msg->src = FI_ADDR_NOTAVAIL;
}

/* A packet's turn came: hand it to the engine.  0 (taken) or -FI_EAGAIN
 * (the engine cannot take it now: offer it again later). */
static int deliver(struct udpx_ep *ep, struct udpx_peer *p,
		   const struct udpx_hdr *h, const uint8_t *payload,
		   size_t plen)
{
	struct util_rdm_msg msg;
	struct udpx_stash *st;
	struct util_rdm_tx *tx;
	int ret;

	switch (h->type) {
	case UDPX_DATA:
		if (p->cur)
			stash_place(ep, p->cur, payload, plen);
		else if (p->rin)
			rin_place(ep, p, payload, plen);
		return 0;
	case UDPX_WRITE:
	case UDPX_READ:
	case UDPX_ATOMIC:
		return rin_start(ep, p, h, payload, plen);
	case UDPX_RESP:
		resp_in(ep, p, h, payload, plen);
		return 0;
	case UDPX_DACK:
		tx = util_rdm_tx_of(&ep->rdm, h->tx_id);
		if (tx && tx->peer == &p->peer && answer_due(p, tx)) {
			if (tx->kind != UTIL_RDM_TX_SEND)
				rma_answered(ep, p);
			util_rdm_tx_done(&ep->rdm, tx, dack_status(h->data));
		}
		return 0;
	case UDPX_MSG:
		break;
	default:
		return 0;
	}
	if (weft_unlikely(p->cur)) {
		/* The message before was cut short: a broken sender. */
		p->cur->error = FI_EIO;
		p->cur->got = p->cur->len - 1;
		stash_place(ep, p->cur, payload, 1);
	}
	if (weft_unlikely(plen > h->len))
		return 0;
	msg_fill(ep, h, &msg);
	msg.reply = p;
	if (ep->rdm.base.caps & (FI_SOURCE | FI_DIRECTED_RECV)) {
		msg.src = util_peer_src(&ep->rdm.peers, &p->peer);
		msg.src_raw = p->peer.addr;
		msg.src_raw_len = ep->rdm.peers.attr.addr_len;
	}
	if (weft_likely(plen == h->len)) {
		msg.payload = payload;
		ret = util_rdm_msg_arrived(&ep->xp, &msg);
		return ret == -FI_EAGAIN ? ret : 0;
	}
	st = util_bufpool_get(ep->stash_pool);
	if (!st)
		return -FI_EAGAIN;
	memset(st, 0, sizeof(*st));
	st->peer = p;
	st->len = h->len;
	st->tx_id = h->tx_id;
	st->dc = h->flags & UDPX_F_DC;
	msg.stash = &st;
	msg.stash_len = sizeof(st);
	msg.stash_hold = st->len;
	p->cur = st;
	ret = util_rdm_msg_arrived(&ep->xp, &msg);
	if (ret == -FI_EAGAIN) {
		p->cur = NULL;
		util_bufpool_put(ep->stash_pool, st);
		return ret;
	}
	if (ret && !st->fetched)
		st->discarded = true;
	/* Unexpected: its bytes are kept as they come (stash_place), not
	 * in a buffer of the length the first packet claims, which no byte
	 * backs yet. */
	stash_place(ep, st, payload, plen);
	return 0;
}

/* Packets kept for their turn go to the engine, in order. */
static void rx_drain(struct udpx_ep *ep, struct udpx_peer *p)
{
	for (;;) {
		unsigned int i = p->dlv_nxt % UDPX_WIN;
		uint8_t *pkt = p->rslot[i].pkt;

		if (!pkt)
			break;
		if (deliver(ep, p, (const struct udpx_hdr *)pkt,
			    pkt + sizeof(struct udpx_hdr),
			    p->rslot[i].len - sizeof(struct udpx_hdr)) ==
		    -FI_EAGAIN) {
			p->stalled = true;
			active_add(ep, p);
			return;
		}
		free(pkt);
		p->rslot[i].pkt = NULL;
		p->nstored--;
		p->dlv_nxt++;
	}
	p->stalled = false;
}

static void rx_reset(struct udpx_ep *ep, struct udpx_peer *p)
{
	unsigned int i;

	for (i = 0; i < UDPX_WIN; i++) {
		free(p->rslot[i].pkt);
		p->rslot[i].pkt = NULL;
	}
	p->nstored = 0;
	p->stalled = false;
	free(p->rin);
	p->rin = NULL;
	cur_fail(ep, p, FI_ECONNRESET);
}

/* The note that a packet came: acknowledged soon, or at once. */
static inline void ack_note(struct udpx_ep *ep, struct udpx_peer *p,
			    bool now)
{
	if (now || ++p->rx_unacked >= UDPX_ACK_EVERY) {
		p->ack_at = ep->now;
	} else if (!p->ack_due) {
		p->ack_at = ep->now + udpx_params.ack_us * 1000ull;
	}
	p->ack_due = true;
	active_add(ep, p);
}

/* The peer an arrival came from: context ctx of the endpoint at sa
 * (made at its first packet). */
static struct udpx_peer *peer_from(struct udpx_ep *ep,
				   const struct sockaddr_storage *sa,
				   uint32_t ctx)
{
	struct util_peer_map *map = &ep->rdm.peers;
	struct sockaddr_in6 key;
	struct util_peer *peer;
	size_t alen = map->attr.addr_len;

	if (alen > sizeof(key))
		return NULL;
	memset(&key, 0, sizeof(key));
	memcpy(&key, sa, alen);
	if (ep->rdm.base.av && ep->rdm.base.av->ops.normalize &&
	    ep->rdm.base.av->ops.normalize(ep->rdm.base.av, &key, &key))
		return NULL;
	if (weft_likely(ep->last_peer && ep->last_peer->peer.ctx == ctx &&
			!memcmp(ep->last_peer->peer.addr, &key, alen)))
		return ep->last_peer;
	peer = util_peer_find(map, &key, ctx);
	if (!peer && util_peer_add(map, &key, ctx, &peer))
		return NULL;
	ep->last_peer = udpx_peer_of(peer);
	return ep->last_peer;
}

static void rel_in(struct udpx_ep *ep, uint8_t *buf, size_t n,
		   const struct sockaddr_storage *sa)
{
	const struct udpx_hdr *h = (const struct udpx_hdr *)buf;
	size_t plen = n - sizeof(*h);
	struct udpx_peer *p = peer_from(ep, sa, h->src_ctx);
	uint32_t seq = h->seq;
	unsigned int i;

	if (!p)
		return;
	if (weft_unlikely(!p->rx_known || p->rx_epoch != h->epoch)) {
		if (p->rx_known) {
			/* A new endpoint at that address: nothing of the
			 * old one's streams goes on. */
			rx_reset(ep, p);
			if (p->una != p->snd_nxt || p->cur_tx)
				peer_fail(ep, p, FI_ECONNRESET);
		}
		p->rx_known = true;
		p->rx_epoch = h->epoch;
		p->dlv_nxt = p->rcv_nxt = h->base;
	}
	if (weft_unlikely(p->peer.gone || p->dead_err)) {
		p->dead_err = 0;
		util_rdm_peer_back(&p->peer);
	}
	acks_in(ep, p, h->ack, h->sack);
	if (h->type == UDPX_ACK)
		return;
	if (seq_lt(seq, p->dlv_nxt) ||
	    (int32_t)(seq - p->dlv_nxt) >= UDPX_WIN) {
		ack_note(ep, p, true); /* a duplicate: our ack was lost */
		return;
	}
	i = seq % UDPX_WIN;
	if (p->rslot[i].pkt) {
		ack_note(ep, p, true);
		return;
	}
	if (weft_likely(seq == p->dlv_nxt && !p->nstored && !p->stalled)) {
		if (deliver(ep, p, h, buf + sizeof(*h), plen) != -FI_EAGAIN) {
			p->dlv_nxt++;
			p->rcv_nxt = p->dlv_nxt;
			ack_note(ep, p, h->flags & UDPX_F_ACK_NOW);
			return;
		}
	}
	/* Out of order, or refused: kept for its turn. */
	p->rslot[i].pkt = malloc(n);
	if (!p->rslot[i].pkt)
		return; /* sent again later */
	memcpy(p->rslot[i].pkt, buf, n);
	p->rslot[i].len = n;
	p->nstored++;
	while (p->rslot[p->rcv_nxt % UDPX_WIN].pkt &&
	       (int32_t)(p->rcv_nxt - p->dlv_nxt) < UDPX_WIN)
		p->rcv_nxt++;
	ack_note(ep, p, seq != p->dlv_nxt || (h->flags & UDPX_F_ACK_NOW));
	if (seq == p->dlv_nxt)
		rx_drain(ep, p);
	else
		active_add(ep, p);
}

/* ---- unreliable --------------------------------------------------------- */

static int dgram_send(struct udpx_ep *ep, struct util_peer *peer,
		      const struct util_rdm_hdr *hdr, const struct iovec *iov,
		      size_t count)
{
	struct iovec v[1 + UTIL_RDM_IOV_MAX];
	struct udpx_hdr h;

	if (hdr->flags & UTIL_RDM_ACK_REQ)
		return -FI_EOPNOTSUPP; /* nothing is acknowledged */
	if (hdr->len > UDPX_DGRAM_MAX)
		return -FI_EMSGSIZE;
	hdr_init(ep, &h, peer, UDPX_MSG, hdr_flags(hdr));
	h.tag = hdr->tag;
	h.data = hdr->data;
	h.len = hdr->len;
	v[0].iov_base = &h;
	v[0].iov_len = sizeof(h);
	util_iov_assign(v + 1, iov, count);
	return xmit(ep, peer->addr, v, count + 1);
}

static void dgram_in(struct udpx_ep *ep, const uint8_t *buf, size_t n,
		     const struct sockaddr_storage *sa)
{
	const struct udpx_hdr *h = (const struct udpx_hdr *)buf;
	struct util_av *av = ep->rdm.base.av;
	struct util_rdm_msg msg;
	struct sockaddr_in6 key;

	if (h->type != UDPX_MSG || h->len != n - sizeof(*h))
		return;
	msg_fill(ep, h, &msg);
	msg.flags &= ~UTIL_RDM_ACK_REQ;
	msg.payload = buf + sizeof(*h);
	if ((ep->rdm.base.caps & (FI_SOURCE | FI_DIRECTED_RECV)) && av &&
	    av->addrlen <= sizeof(key)) {
		memset(&key, 0, sizeof(key));
		memcpy(&key, sa, av->addrlen);
		if (!av->ops.normalize || !av->ops.normalize(av, &key, &key)) {
			msg.src = util_av_lookup_addr(av, &key);
			msg.src_raw = &key;
			msg.src_raw_len = av->addrlen;
		}
	}
	/* Refused (no room for it unexpected): lost, as datagrams are. */
	util_rdm_msg_arrived(&ep->xp, &msg);
}

/* ---- the transport's ops ------------------------------------------------ */

static int udpx_send_eager(struct util_rdm_xport *xp, struct util_peer *peer,
			   const struct util_rdm_hdr *hdr,
			   const struct iovec *iov, void **desc,
			   size_t iov_count)
{
	struct udpx_ep *ep = udpx_ep_of(xp);

	(void)desc;
	if (!ep->reliable)
		return dgram_send(ep, peer, hdr, iov, iov_count);
	return rel_send_eager(ep, udpx_peer_of(peer), hdr, iov, iov_count);
}

static int udpx_send_rndv(struct util_rdm_xport *xp, struct util_rdm_tx *tx)
{
	struct udpx_ep *ep = udpx_ep_of(xp);
	struct udpx_peer *p = udpx_peer_of(tx->peer);

	if (!ep->reliable)
		return -FI_EMSGSIZE; /* one datagram at most */
	int ret;

	if (p->cur_tx)
		return -FI_EAGAIN;
	ret = peer_dead(ep, p);
	if (ret)
		return ret;
	ep->now = weft_now_ns();
	p->cur_tx = tx;
	p->cur_off = 0;
	pump(ep, p);
	return 0;
}

/*
 * RMA and atomics: the request's head (the remote ranges, an atomic's
 * operands and compare values) is copied into the send ring, then cut
 * into packets as a large message is, a write's bytes after it from the
 * user's buffer.  Done at the target's answer: a DACK (writes, errors)
 * or the last RESP.
 */
static int udpx_rma(struct util_rdm_xport *xp, struct util_rdm_tx *tx)
{
	struct udpx_ep *ep = udpx_ep_of(xp);
	struct udpx_peer *p = udpx_peer_of(tx->peer);
	size_t head = tx->rma_count * sizeof(struct fi_rma_iov), len = head;
	uint64_t end = 0;
	uint8_t *buf;
	int ret;

	if (!ep->reliable)
		return -FI_EOPNOTSUPP;
	if (p->cur_tx)
		return -FI_EAGAIN; /* in order behind it */
	ret = peer_dead(ep, p);
	if (ret)
		return ret;
	if (tx->kind >= UTIL_RDM_TX_ATOMIC)
		len += tx->hdr.len *
		       (tx->kind == UTIL_RDM_TX_COMPARE_ATOMIC ? 2 : 1);
	ep->now = weft_now_ns();
	buf = ring_take(p, len, &end);
	if (!buf)
		return -FI_EAGAIN;
	memcpy(buf, tx->rma_iov, head);
	if (tx->kind >= UTIL_RDM_TX_ATOMIC) {
		/* FI_ATOMIC_READ has no operand: zeros in its place. */
		if (tx->iov_count)
			util_iov_copy_from(buf + head, tx->iov, tx->iov_count,
					   0, tx->hdr.len);
		else
			memset(buf + head, 0, tx->hdr.len);
		if (tx->kind == UTIL_RDM_TX_COMPARE_ATOMIC)
			util_iov_copy_from(buf + head + tx->hdr.len,
					   tx->cmp_iov, tx->cmp_count, 0,
					   tx->hdr.len);
	}
	p->cur_tx = tx;
	p->cur_off = 0;
	p->cur_pre = buf;
	p->cur_pre_len = len;
	p->cur_pre_end = end;
	p->rma_wait++;
	ep->rma_wait++;
	pump(ep, p);
	return 0;
}

static int udpx_fetch(struct util_rdm_xport *xp, const void *stash,
		      const struct iovec *iov, void **desc, size_t iov_count,
		      size_t len, void *cookie)
{
	struct udpx_ep *ep = udpx_ep_of(xp);
	struct udpx_stash *st = stash_of(stash);
	int err;

	(void)desc;
	if (!st->peer) {
		err = st->error;
		if (!err)
			util_iov_copy_to(iov, iov_count, 0, st->data, len);
		stash_free(ep, st);
		return -err;
	}
	st->fetched = true;
	st->cookie = cookie;
	st->want = len;
	st->iov_count = util_iov_slice(iov, iov_count, 0, len, st->iov);
	if (st->data) {
		util_iov_copy_to(st->iov, st->iov_count, 0, st->data,
				 WEFT_MIN(st->got, len));
		free(st->data);
		st->data = NULL;
	}
	return -FI_EINPROGRESS;
}

static void udpx_discard(struct util_rdm_xport *xp, const void *stash)
{
	struct udpx_ep *ep = udpx_ep_of(xp);
	struct udpx_stash *st = stash_of(stash);

	if (!st->peer) {
		stash_free(ep, st);
		return;
	}
	st->discarded = true;
	free(st->data);
	st->data = NULL;
}

static int udpx_ack(struct util_rdm_xport *xp, void *reply, uint64_t tx_id,
		    int err)
{
	struct udpx_ep *ep = udpx_ep_of(xp);

	if (!ep->reliable || !reply)
		return 0;
	ep->now = weft_now_ns();
	return dack_queue(ep, reply, tx_id, err);
}

/* The timers of the active peers; how many things they did. */
static int timers(struct udpx_ep *ep)
{
	struct dlist_entry *e, *tmp;
	int n = 0;

	dlist_foreach_safe(&ep->active, e, tmp) {
		struct udpx_peer *p = container_of(e, struct udpx_peer, active);

		if (p->stalled)
			rx_drain(ep, p);
		pump(ep, p);
		if (p->ack_due && ep->now >= p->ack_at) {
			send_ack(ep, p);
			n++;
		}
		if (p->una != p->snd_out) {
			struct udpx_slot *s = &p->slot[p->una % UDPX_WIN];
			uint32_t q;

			if (ep->now - s->sent_ns >= p->rto_ms * 1000000ull) {
				if (ep->now - p->last_ack_ns >=
				    udpx_params.retry_ms * 1000000ull) {
					peer_fail(ep, p, FI_ETIMEDOUT);
					n++;
					continue;
				}
				for (q = p->una; q != p->snd_out; q++) {
					s = &p->slot[q % UDPX_WIN];
					if (!s->sacked && xmit_slot(ep, p, s))
						break;
				}
				p->rto_ms = WEFT_MIN(p->rto_ms * 2,
						     UDPX_RTO_MAX_MS);
				n++;
			}
		}
		if (p->una == p->snd_nxt && !p->cur_tx && !p->ndack &&
		    !p->ack_due && !p->stalled && !p->nstored &&
		    dlist_empty(&p->resp)) {
			dlist_remove(&p->active);
			p->on_active = false;
		}
	}
	return n;
}

/* Receives wait for one peer: an ACK to each peer heard from, so that
 * one that went away is told (icmp_drain). */
static void probe(struct udpx_ep *ep)
{
	struct dlist_entry *e;

	ep->probe_at = ep->now + UDPX_PROBE_MS * 1000000ull;
	dlist_foreach(&ep->rdm.peers.list, e) {
		struct udpx_peer *p =
			container_of(e, struct udpx_peer, peer.entry);

		if (p->rx_known && !p->dead_err)
			send_ack(ep, p);
	}
}

/*
 * A packet of another context's, or an answer that there is none.  Pair
 * 0 takes what the group's filter finds no socket for: a sequenced packet
 * for a context past the scalable endpoint's count (or, at a plain
 * endpoint, for any context but 0) is answered NOCTX
 * (its sender's transmits to it fail, as a refused connection); others
 * (a context not opened yet) are dropped, and sent again.
 */
static void noctx(struct udpx_ep *ep, const struct udpx_hdr *h,
		  const struct sockaddr_storage *sa)
{
	struct util_rdm_sep *sep = ep->rdm.sep;
	struct util_peer_map *map = &ep->rdm.peers;
	struct sockaddr_in6 key;
	struct util_peer *peer;
	struct udpx_hdr a;
	struct iovec iov = {&a, sizeof(a)};

	if (!ep->reliable)
		return;
	if (h->type == UDPX_NOCTX) {
		/* (Context 0 is always there; the answer echoes our epoch:
		 * a guess is not enough to fail a peer.) */
		if (h->dst_ctx != ep->ctx || !h->data || h->data > UINT32_MAX ||
		    (uint32_t)h->tag != ep->epoch ||
		    map->attr.addr_len > sizeof(key))
			return;
		memset(&key, 0, sizeof(key));
		memcpy(&key, sa, map->attr.addr_len);
		if (ep->rdm.base.av && ep->rdm.base.av->ops.normalize &&
		    ep->rdm.base.av->ops.normalize(ep->rdm.base.av, &key, &key))
			return;
		peer = util_peer_find(map, &key, (uint32_t)h->data);
		if (peer) {
			struct udpx_peer *p = udpx_peer_of(peer);

			if (p->una != p->snd_nxt || p->cur_tx || p->ndack ||
			    p->rma_wait)
				peer_fail(ep, p, FI_ECONNREFUSED);
		}
		return;
	}
	/* (A plain endpoint has context 0 only: it answers too.) */
	if (ep->ctx || (sep && h->dst_ctx < sep->npair) ||
	    !(h->flags & UDPX_F_REL))
		return;
	memset(&a, 0, sizeof(a));
	a.magic = UDPX_MAGIC;
	a.version = UDPX_VERSION;
	a.type = UDPX_NOCTX;
	a.dst_ctx = h->src_ctx;
	a.epoch = ep->epoch;
	a.data = h->dst_ctx;
	a.tag = h->epoch; /* the sender's, which it checks */
	(void)xmit(ep, sa, &iov, 1);
}

static int udpx_progress(struct util_rdm_xport *xp)
{
	struct udpx_ep *ep = udpx_ep_of(xp);
	int n = 0, k, i, round;

	if (ep->reliable)
		ep->now = weft_now_ns();
	if (weft_unlikely(ep->sep) &&
	    util_rdm_inbox_ready(udp_sep_base(ep->sep), ep->ctx))
		notes_take(ep, NULL);
	for (round = 0; round < 4; round++) {
		for (i = 0; i < UDPX_BATCH; i++)
			ep->rmsg[i].msg_hdr.msg_namelen = sizeof(ep->rsrc[i]);
		k = recvmmsg(ep->fd, ep->rmsg, UDPX_BATCH, MSG_DONTWAIT, NULL);
		if (k <= 0) {
			if (k < 0 && errno == ECONNREFUSED) {
				ep->icmp = true;
				continue;
			}
			if (k < 0 && errno == EINTR)
				continue;
			break;
		}
		for (i = 0; i < k; i++) {
			uint8_t *buf = ep->rbuf + (size_t)i * UDPX_RX_BUF;
			size_t len = ep->rmsg[i].msg_len;
			const struct udpx_hdr *h = (const void *)buf;

			if (len < sizeof(*h) || h->magic != UDPX_MAGIC ||
			    h->version != UDPX_VERSION)
				continue; /* not ours */
			if (weft_unlikely(h->dst_ctx != ep->ctx ||
					  h->type == UDPX_NOCTX)) {
				noctx(ep, h, &ep->rsrc[i]);
				continue;
			}
			if (ep->reliable && (h->flags & UDPX_F_REL))
				rel_in(ep, buf, len, &ep->rsrc[i]);
			else if (!ep->reliable && !(h->flags & UDPX_F_REL))
				dgram_in(ep, buf, len, &ep->rsrc[i]);
		}
		n += k;
		if (k < UDPX_BATCH)
			break;
	}
	/* A pair of a scalable endpoint that waits for peers looks at the
	 * group's error queues now and then: the one with its peer's ICMP
	 * error may be another pair's, which nobody drives. */
	if (weft_unlikely(ep->sep) && ep->reliable &&
	    (!dlist_empty(&ep->active) || util_rdm_rx_directed(&ep->rdm) ||
	     ep->rma_wait) &&
	    ep->now >= ep->errq_at) {
		ep->errq_at = ep->now + UDPX_PROBE_MS * 1000000ull;
		ep->icmp = true;
	}
	if (weft_unlikely(ep->icmp) && ep->reliable)
		icmp_drain(ep, NULL);
	if (ep->reliable &&
	    (util_rdm_rx_directed(&ep->rdm) || ep->rma_wait) &&
	    ep->now >= ep->probe_at)
		probe(ep);
	if (ep->reliable && !dlist_empty(&ep->active))
		n += timers(ep);
	return n;
}

static int udpx_wait_fd(struct util_rdm_xport *xp)
{
	return udpx_ep_of(xp)->epfd;
}

/* About to sleep: the timerfd rings at the earliest timer. */
static int udpx_arm(struct util_rdm_xport *xp)
{
	struct udpx_ep *ep = udpx_ep_of(xp);
	struct itimerspec its = { 0 };
	struct dlist_entry *e;
	uint64_t first = UINT64_MAX;

	if (!ep->reliable)
		return 0;
	ep->now = weft_now_ns();
	dlist_foreach(&ep->active, e) {
		struct udpx_peer *p = container_of(e, struct udpx_peer, active);

		if (p->ack_due)
			first = WEFT_MIN(first, p->ack_at);
		if (p->una != p->snd_out)
			first = WEFT_MIN(first,
					 p->slot[p->una % UDPX_WIN].sent_ns +
						 p->rto_ms * 1000000ull);
		if (p->stalled || p->snd_out != p->snd_nxt)
			first = WEFT_MIN(first, ep->now + 1000000ull);
	}
	if (util_rdm_rx_directed(&ep->rdm) || ep->rma_wait)
		first = WEFT_MIN(first, ep->probe_at);
	/* A pair that waits for peers looks at its group's error queues
	 * (udpx_progress) asleep too. */
	if (ep->sep && (first != UINT64_MAX || !dlist_empty(&ep->active)))
		first = WEFT_MIN(first, WEFT_MAX(ep->errq_at, ep->now + 1000));
	if (first == UINT64_MAX && !ep->timer_armed)
		return udpx_progress(xp);
	if (first != UINT64_MAX) {
		uint64_t d = first > ep->now ? first - ep->now : 1000;

		its.it_value.tv_sec = (time_t)(d / 1000000000u);
		its.it_value.tv_nsec = (long)(d % 1000000000u);
	}
	timerfd_settime(ep->tfd, 0, &its, NULL);
	ep->timer_armed = first != UINT64_MAX;
	return udpx_progress(xp);
}

static int udpx_peer_init(struct util_rdm_xport *xp, struct util_peer *peer)
{
	struct udpx_peer *p = udpx_peer_of(peer);

	(void)xp;
	/* A context the header's byte cannot name (fi_rx_addr allows 16
	 * bits): no such context, rather than another one. */
	if (peer->ctx >= UDP_SEP_MAX_CTX)
		return -FI_EINVAL;
	memset((char *)p + sizeof(p->peer), 0, sizeof(*p) - sizeof(p->peer));
	dlist_init(&p->active);
	dlist_init(&p->resp);
	p->rto_ms = udpx_params.rto_ms;
	return 0;
}

static void udpx_peer_fini(struct util_rdm_xport *xp, struct util_peer *peer)
{
	struct udpx_ep *ep = udpx_ep_of(xp);
	struct udpx_peer *p = udpx_peer_of(peer);
	unsigned int i;

	if (p->on_active)
		dlist_remove(&p->active);
	if (ep->last_peer == p)
		ep->last_peer = NULL;
	for (i = 0; i < UDPX_WIN; i++)
		free(p->rslot[i].pkt);
	resp_drop(p);
	free(p->rin);
	if (p->cur) {
		p->cur->peer = NULL;
		if (p->cur->discarded || p->cur->fetched)
			stash_free(ep, p->cur);
		else
			p->cur->error = FI_ECONNRESET;
	}
	free(p->ring);
	free(p->dack);
}

/* Packets that never went out yet (the socket was full). */
static bool udpx_lingering(struct util_rdm_xport *xp)
{
	struct udpx_ep *ep = udpx_ep_of(xp);
	struct dlist_entry *e;

	dlist_foreach(&ep->active, e) {
		struct udpx_peer *p = container_of(e, struct udpx_peer, active);

		if (p->snd_out != p->snd_nxt || p->cur_tx || p->ndack ||
		    !dlist_empty(&p->resp))
			return true;
	}
	return false;
}

static const struct util_rdm_transport udpx_transport = {
	.send_eager = udpx_send_eager,
	.send_rndv = udpx_send_rndv,
	.fetch = udpx_fetch,
	.discard = udpx_discard,
	.ack = udpx_ack,
	.rma = udpx_rma,
	.progress = udpx_progress,
	.wait_fd = udpx_wait_fd,
	.arm = udpx_arm,
	.peer_size = sizeof(struct udpx_peer),
	.peer_init = udpx_peer_init,
	.peer_fini = udpx_peer_fini,
	.lingering = udpx_lingering,
};

/* ---- endpoints ---------------------------------------------------------- */

static void udpx_free(struct udpx_ep *ep)
{
	if (ep->tfd >= 0)
		close(ep->tfd);
	if (ep->epfd >= 0)
		close(ep->epfd);
	if (ep->fd >= 0 && ep->sep)
		udp_sep_socket_close(ep->sep, ep->ctx, ep->fd);
	else if (ep->fd >= 0)
		close(ep->fd);
	util_bufpool_destroy(ep->stash_pool);
	free(ep->rbuf);
	free(ep);
}

static int udpx_close(struct fid *fid)
{
	struct udpx_ep *ep =
		container_of(fid, struct udpx_ep, rdm.base.ep_fid.fid);
	struct dlist_entry *e;

	util_rdm_ep_linger(&ep->rdm);
	if (ep->sep)
		udp_sep_unlisten(ep->sep, ep->ctx);
	weft_lock(util_rdm_lock(&ep->rdm));
	ep->now = weft_now_ns();
	dlist_foreach(&ep->rdm.peers.list, e) {
		struct udpx_peer *p = container_of(e, struct udpx_peer,
						   peer.entry);

		if (!ep->reliable)
			break;
		/* What arrived is acknowledged, what we held fails. */
		if (p->ack_due)
			send_ack(ep, p);
		if (p->una != p->snd_nxt || p->cur_tx || p->rma_wait) {
			tx_reset(ep, p);
			util_rdm_fail_peer(&ep->rdm, &p->peer, FI_ECANCELED);
		}
	}
	weft_unlock(util_rdm_lock(&ep->rdm));
	util_rdm_ep_fini(&ep->rdm);
	udpx_free(ep);
	return 0;
}

static int udpx_getname(fid_t fid, void *addr, size_t *addrlen)
{
	struct udpx_ep *ep =
		container_of(fid, struct udpx_ep, rdm.base.ep_fid.fid);

	return udp_name_copy(&ep->name, ep->namelen, addr, addrlen);
}

/* Before fi_enable: the socket moves to addr (a process that comes back
 * under its old name). */
static int udpx_setname(fid_t fid, void *addr, size_t addrlen)
{
	struct udpx_ep *ep =
		container_of(fid, struct udpx_ep, rdm.base.ep_fid.fid);
	struct udp_domain *domain = container_of(
		util_mr_domain_of(ep->rdm.base.domain), struct udp_domain,
		base);
	struct epoll_event ev = { .events = EPOLLIN };
	struct fi_info info = { .src_addr = addr, .src_addrlen = addrlen };
	struct sockaddr_storage name;
	socklen_t namelen;
	int fd, i = 1;

	if (!addr || addrlen < sizeof(struct sockaddr_in) ||
	    addrlen > sizeof(name))
		return -FI_EINVAL;
	if (ep->rdm.base.enabled || ep->sep)
		return -FI_EOPBADSTATE; /* (a pair: its scalable endpoint's) */
	fd = udp_socket_open(&info, domain->addr_format, &name, &namelen);
	if (fd < 0)
		return fd;
	if (ep->reliable)
		setsockopt(fd, name.ss_family == AF_INET6 ? IPPROTO_IPV6 :
							  IPPROTO_IP,
			   name.ss_family == AF_INET6 ? IPV6_RECVERR :
							IP_RECVERR,
			   &i, sizeof(i));
	ev.data.fd = fd;
	if (epoll_ctl(ep->epfd, EPOLL_CTL_ADD, fd, &ev)) {
		i = weft_errno(errno);
		close(fd);
		return i;
	}
	epoll_ctl(ep->epfd, EPOLL_CTL_DEL, ep->fd, NULL);
	close(ep->fd);
	ep->fd = fd;
	ep->name = name;
	ep->namelen = namelen;
	return 0;
}

static struct fi_ops udpx_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = udpx_close,
	.bind = util_rdm_ep_bind,
	.control = util_rdm_ep_control,
	.ops_open = weft_no_ops_open,
	.tostr = weft_no_tostr,
	.ops_set = weft_no_ops_set,
};

static struct fi_ops_cm udpx_cm_ops = {
	.size = sizeof(struct fi_ops_cm),
	.setname = udpx_setname,
	.getname = udpx_getname,
	.getpeer = weft_no_getpeer,
	.connect = weft_no_connect,
	.listen = weft_no_listen,
	.accept = weft_no_accept,
	.reject = weft_no_reject,
	.shutdown = weft_no_shutdown,
	.join = util_coll_join,
};

static struct fi_ops_cm udpx_dgram_cm_ops = {
	.size = sizeof(struct fi_ops_cm),
	.setname = weft_no_setname,
	.getname = udpx_getname,
	.getpeer = weft_no_getpeer,
	.connect = weft_no_connect,
	.listen = weft_no_listen,
	.accept = weft_no_accept,
	.reject = weft_no_reject,
	.shutdown = weft_no_shutdown,
	.join = weft_no_join,
};

/* The MTU of the interface that has addr, or 0. */
static size_t iface_mtu(const struct sockaddr_storage *addr)
{
	struct ifaddrs *ifa, *i;
	struct ifreq ifr;
	size_t mtu = 0;
	int fd;

	if (getifaddrs(&ifa))
		return 0;
	for (i = ifa; i; i = i->ifa_next) {
		if (!i->ifa_addr || i->ifa_addr->sa_family != addr->ss_family)
			continue;
		if (addr->ss_family == AF_INET &&
		    ((const struct sockaddr_in *)i->ifa_addr)->sin_addr.s_addr !=
			    ((const struct sockaddr_in *)addr)->sin_addr.s_addr)
			continue;
		if (addr->ss_family == AF_INET6 &&
		    memcmp(&((const struct sockaddr_in6 *)i->ifa_addr)->sin6_addr,
			   &((const struct sockaddr_in6 *)addr)->sin6_addr,
			   sizeof(struct in6_addr)))
			continue;
		memset(&ifr, 0, sizeof(ifr));
		snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", i->ifa_name);
		fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
		if (fd >= 0 && !ioctl(fd, SIOCGIFMTU, &ifr) && ifr.ifr_mtu > 0)
			mtu = (size_t)ifr.ifr_mtu;
		if (fd >= 0)
			close(fd);
		break;
	}
	freeifaddrs(ifa);
	return mtu;
}

/* Payload bytes of one reliable packet: what the interface's frames
 * carry, past the IP and UDP headers and ours. */
static size_t pkt_max_of(const struct sockaddr_storage *name)
{
	size_t ip = name->ss_family == AF_INET6 ? 48 : 28;
	size_t mtu = udpx_params.mtu ? udpx_params.mtu : iface_mtu(name);

	if (!mtu)
		mtu = 1500;
	mtu = WEFT_MIN(mtu, (size_t)65535);
	if (mtu < ip + sizeof(struct udpx_hdr) + 64)
		mtu = ip + sizeof(struct udpx_hdr) + 64;
	return WEFT_MIN(mtu - ip, (size_t)65507) - sizeof(struct udpx_hdr);
}

static int udpx_setup(struct udpx_ep *ep, const struct fi_info *info,
		      uint32_t addr_format)
{
	struct epoll_event ev = { .events = EPOLLIN };
	struct util_bufpool_attr pa = {
		.name = "udp stash",
		.size = sizeof(struct udpx_stash),
	};
	int sz = UDPX_SOCKBUF, i;
	socklen_t sl = sizeof(sz);

	ep->fd = ep->sep ? udp_sep_socket(ep->sep, ep->ctx, info, addr_format,
					  &ep->name, &ep->namelen) :
			   udp_socket_open(info, addr_format, &ep->name,
					   &ep->namelen);
	if (ep->fd < 0)
		return ep->fd;
	if (ep->reliable) {
		setsockopt(ep->fd, SOL_SOCKET, SO_RCVBUF, &sz, sizeof(sz));
		setsockopt(ep->fd, SOL_SOCKET, SO_SNDBUF, &sz, sizeof(sz));
		if (getsockopt(ep->fd, SOL_SOCKET, SO_RCVBUF, &sz, &sl))
			sz = 212992;
		/* Nobody at a peer's port: told by ICMP (icmp_drain). */
		i = 1;
		if (ep->name.ss_family == AF_INET6)
			setsockopt(ep->fd, IPPROTO_IPV6, IPV6_RECVERR, &i,
				   sizeof(i));
		else
			setsockopt(ep->fd, IPPROTO_IP, IP_RECVERR, &i,
				   sizeof(i));
		ep->pkt_max = pkt_max_of(&ep->name);
		/* The peer's buffer is taken to be as ours: fill half of it. */
		ep->win_bytes = WEFT_MAX((size_t)sz / 4, ep->pkt_max);
	}
	ep->epfd = epoll_create1(EPOLL_CLOEXEC);
	ep->tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	if (ep->epfd < 0 || ep->tfd < 0)
		return weft_errno(errno);
	ev.data.fd = ep->fd;
	if (epoll_ctl(ep->epfd, EPOLL_CTL_ADD, ep->fd, &ev))
		return weft_errno(errno);
	ev.data.fd = ep->tfd;
	if (epoll_ctl(ep->epfd, EPOLL_CTL_ADD, ep->tfd, &ev))
		return weft_errno(errno);
	ep->rbuf = malloc((size_t)UDPX_BATCH * UDPX_RX_BUF);
	if (!ep->rbuf)
		return -FI_ENOMEM;
	for (i = 0; i < UDPX_BATCH; i++) {
		ep->riov[i].iov_base = ep->rbuf + (size_t)i * UDPX_RX_BUF;
		ep->riov[i].iov_len = UDPX_RX_BUF;
		ep->rmsg[i].msg_hdr.msg_iov = &ep->riov[i];
		ep->rmsg[i].msg_hdr.msg_iovlen = 1;
		ep->rmsg[i].msg_hdr.msg_name = &ep->rsrc[i];
	}
	if (getrandom(&ep->epoch, sizeof(ep->epoch), GRND_NONBLOCK) !=
	    sizeof(ep->epoch))
		ep->epoch = (uint32_t)weft_now_ns() ^ ((uint32_t)getpid() << 16);
	if (!ep->epoch)
		ep->epoch = 1;
	return util_bufpool_create(&pa, &ep->stash_pool);
}

static int ep_open(struct fid_domain *domain_fid, struct fi_info *info,
		   bool reliable, struct udp_sep *sep, uint32_t ctx,
		   struct udpx_ep **out, void *context)
{
	struct udp_domain *domain = container_of(
		domain_fid, struct udp_domain, base.util.domain_fid);
	struct util_rdm_ep_attr attr = {
		.unexp_inline = 256,
		.peer_addr_len = domain->addr_format == FI_SOCKADDR_IN6 ?
					 sizeof(struct sockaddr_in6) :
					 sizeof(struct sockaddr_in),
	};
	struct udpx_ep *ep;
	int ret;

	udp_params_init();
	if (!reliable && info->ep_attr &&
	    info->ep_attr->max_msg_size > UDPX_DGRAM_MAX)
		return -FI_EINVAL;
	ep = calloc(1, sizeof(*ep));
	if (!ep)
		return -FI_ENOMEM;
	ep->fd = ep->epfd = ep->tfd = -1;
	ep->reliable = reliable;
	ep->sep = sep;
	ep->ctx = (uint8_t)ctx;
	dlist_init(&ep->active);
	ep->xp.ops = &udpx_transport;
	ep->xp.eager_max = reliable ? udpx_params.eager_max : UDPX_DGRAM_MAX;
	attr.xport = &ep->xp;
	attr.inject_max = reliable ? UDPX_INJECT : UDPX_DGRAM_INJECT;
	attr.atomic_max = reliable ? UDPX_ATOMIC_MAX : 0;
	attr.unexp_max = udpx_params.unexp_max;
	ret = udpx_setup(ep, info, domain->addr_format);
	if (ret) {
		udpx_free(ep);
		return ret;
	}
	ret = util_rdm_ep_init(&ep->rdm, &domain->base.util, info, &attr,
			       context);
	if (ret) {
		udpx_free(ep);
		return ret;
	}
	ep->rdm.base.ep_fid.fid.ops = &udpx_fi_ops;
	ep->rdm.base.ep_fid.cm = reliable ? &udpx_cm_ops : &udpx_dgram_cm_ops;
	*out = ep;
	return 0;
}

int udpx_ep_open(struct fid_domain *domain, struct fi_info *info,
		 bool reliable, struct fid_ep **ep_fid, void *context)
{
	struct udpx_ep *ep;
	int ret = ep_open(domain, info, reliable, NULL, 0, &ep, context);

	if (!ret)
		*ep_fid = &ep->rdm.base.ep_fid;
	return ret;
}

int udpx_pair_open(struct fid_domain *domain, struct fi_info *info,
		   struct udp_sep *sep, uint32_t ctx, struct util_rdm_ep **out)
{
	struct udpx_ep *ep;
	struct epoll_event ev = {.events = EPOLLIN};
	int ret;

	if (ctx >= UDP_SEP_MAX_CTX)
		return -FI_EINVAL;
	ret = ep_open(domain, info, info->ep_attr->type == FI_EP_RDM, sep,
		      ctx, &ep, NULL);
	if (ret)
		return ret;
	/* Notes of the other pairs wake it (udp_sep_tell). */
	ev.data.fd = util_rdm_inbox_bell(udp_sep_base(sep), ctx);
	if (ev.data.fd < 0 ||
	    epoll_ctl(ep->epfd, EPOLL_CTL_ADD, ev.data.fd, &ev)) {
		ret = ev.data.fd < 0 ? ev.data.fd : weft_errno(errno);
		fi_close(&ep->rdm.base.ep_fid.fid);
		return ret;
	}
	udp_sep_listen(sep, ctx);
	*out = &ep->rdm;
	return 0;
}
