/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * What the files of the shm endpoint share (shm_conn.c, shm_xp.c,
 * shm_rma.c, shm_ep.c); the rest of shm and the providers that embed it
 * go through shm.h.  The library exports none of these functions (the
 * version script, libfabric.map).
 */
#ifndef WEFT_SHM_EP_PRIV_H
#define WEFT_SHM_EP_PRIV_H

#include "shm.h"
#include "shm_queue.h"

/* shm_conn.c: connections */

/* The connection part of a peer (the engine's util_rdm_peer_part). */
static inline struct shm_conn *conn_of_peer(struct shm_xp *ep,
					    struct util_peer *peer)
{
	return util_rdm_peer_part(&ep->base, peer);
}

int shm_peer_init(struct util_rdm_xport *xp, struct util_peer *peer);
void shm_peer_fini(struct util_rdm_xport *xp, struct util_peer *peer);
bool shm_reaches(struct util_rdm_xport *xp, struct util_peer *peer);
void bell_make(struct shm_xp *ep);
void bell_remove(struct shm_xp *ep);
void conn_ring(struct shm_conn *c);

/* Publish a slot in c's queue, ringing its owner if it sleeps. */
static inline void conn_publish(struct shm_conn *c, struct shm_slot *s,
				uint64_t pos)
{
	/* Messages and RMA requests are ordered; answers are not. */
	if (s->op <= SHM_OP_RTS || s->op == SHM_OP_RMA)
		c->order_pos = pos + 1;
	shm_queue_publish(s, pos);
	atomic_store_explicit(c->claim, 0, memory_order_relaxed);
	if (shm_queue_wants_bell(c->map.queue))
		conn_ring(c);
}

bool peer_holder_dead(const struct shm_peer *p);
void buf_mark_reclaim(struct shm_map *m, struct shm_peer *p);
int conn_map(struct shm_xp *ep, struct shm_conn *c);
int conn_setup(struct shm_xp *ep, struct shm_conn *c, bool now);

/*
 * Make a connection usable for sending.  A load or two when it is: the
 * region's `gone` flag tells at once that its owner closed or was replaced.
 */
static inline int conn_ready(struct shm_xp *ep, struct shm_conn *c)
{
	if (weft_likely(c->claimed && !c->dead &&
			!atomic_load_explicit(&c->map.hdr->gone,
					      memory_order_relaxed)))
		return 0;
	return conn_setup(ep, c, false);
}

int owner_lock(struct shm_xp *ep);
void owner_relock(struct shm_xp *ep);
void owner_unmap(struct shm_xp *ep);
int conn_of_peer_ready_slow(struct shm_xp *ep, struct util_peer *peer,
			    struct shm_conn **out);

/*
 * The connection to peer, ready to send (shm_conn.c has the rest): on the
 * send path, so the usual case (claimed, alive, no new insert) costs a
 * few loads here, without a call into another file.
 */
static inline int conn_of_peer_ready(struct shm_xp *ep,
				     struct util_peer *peer,
				     struct shm_conn **out)
{
	struct shm_conn *c = conn_of_peer(ep, peer);

	if (weft_likely(!peer->fresh && c->claimed && !c->dead &&
			!atomic_load_explicit(&c->map.hdr->gone,
					      memory_order_relaxed) &&
			!shm_owner_died(c->map.queue))) {
		*out = c;
		return 0;
	}
	return conn_of_peer_ready_slow(ep, peer, out);
}
void check_peers(struct shm_xp *ep, bool now);

/*
 * The sender behind a slot's src: its entry in our peer table, as long as
 * the entry is held under the slot's generation (ACTIVE, or CLOSED with
 * slots still queued).  NULL when it is not: never another holder.
 */
struct shm_rxpeer *rxpeer_learn(struct shm_xp *ep, uint32_t src);

static inline struct shm_rxpeer *rxpeer_of(struct shm_xp *ep, uint32_t src)
{
	uint32_t idx = src & 0xffff, gen = src >> 16;

	/* An entry never learned has gen 0, which no claim makes. */
	if (weft_likely(gen && idx < ep->own.max_peers &&
			ep->rxpeers[idx].gen == gen))
		return &ep->rxpeers[idx];
	return rxpeer_learn(ep, src);
}

/* shm_xp.c: the transport */

/*
 * The status a peer reports in an ACK or RMA_RESP (aux): 0, or the
 * positive FI_E* it sent when that is below 65536; anything else, which
 * no weft peer sends, is FI_EIO.  Completions then carry a positive error
 * whatever the peer wrote.
 */
static inline int peer_status(uint32_t aux)
{
	return aux < 65536 ? (int)aux : FI_EIO;
}

int rma_req_check(struct shm_xp *ep, struct shm_conn *c,
		  const struct shm_rma_req *req, struct shm_bounce **ib);

/* Whether the peer holds our requests back (its entry's `hold`). */
static inline bool conn_held(struct shm_conn *c)
{
	return atomic_load_explicit(c->hold, memory_order_relaxed);
}

struct shm_slot *slot_claim(struct shm_conn *c, uint64_t *pos);
int send_ctrl_data(struct shm_xp *ep, struct shm_conn *c, uint16_t op,
		   uint64_t tag, uint32_t aux, uint64_t data, uint32_t len);
int buf_get_out(struct shm_xp *ep, struct shm_conn *reader, uint32_t *idx);
void bufs_out_reclaim(struct shm_xp *ep, struct shm_conn *reader);
void buf_put(struct shm_map *m, uint32_t idx);
void cma_unavailable(struct shm_xp *ep, int err);

/* shm_rma.c: RMA and atomics */

int shm_rma(struct util_rdm_xport *xp, struct util_rdm_tx *tx);
int chunks_continue(struct shm_xp *ep);
int handle_rma(struct shm_xp *ep, struct shm_slot *s, struct shm_rxpeer *rp);
void handle_rma_resp(struct shm_xp *ep, struct shm_slot *s);
void rma_event_in(struct shm_xp *ep, const struct shm_slot *s);

#endif /* WEFT_SHM_EP_PRIV_H */
