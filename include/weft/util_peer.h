/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The peer map: fi_addr_t -> peer -> connection, made on first use.
 *
 * One map per endpoint, owned by the RDM engine (util_rdm.h).  A peer is
 * a remote endpoint as this endpoint knows it: its address (in the AV's
 * stored form), the fi_addr that names it, the state of the transport's
 * connection to it, and the transmits the engine queues while the
 * transport cannot take them (connecting, socket full, queue full).  The
 * transport's own per-peer state follows the struct in the same
 * allocation: a transport asks for peer_size bytes and embeds
 * struct util_peer first.
 *
 *  data path:  util_peer_get(map, dest)  AV index -> cached peer, checked
 *              against the AV insert's serial: a few loads, no lock
 *  first use:  looked up by address (a peer that connected to us earlier
 *              is found again), else made (->peer_init)
 *  arrivals:   util_peer_find / util_peer_add by address, for senders that
 *              are not (or not yet) in the AV
 *
 * Peers live as long as the map: an fi_av_remove / insert of the same
 * address finds the same peer (its `fresh` flag tells the transport that a
 * new insert now names it, e.g. to look for a restarted process).
 *
 * Contexts.  A scalable endpoint (util_rdm_sep) has one address and
 * several contexts, each reached on its own: a peer is an address and the
 * index of a context behind it (`ctx`, 0 for a plain endpoint).  Sending,
 * the index comes from fi_rx_addr's bits (the AV's rx_ctx_bits); arriving,
 * the transport names the sending context.  The peers of context 0 are
 * cached by AV index as before; those of other contexts in a table per
 * context, made on first use.
 */
#ifndef WEFT_UTIL_PEER_H
#define WEFT_UTIL_PEER_H

#include "weft/core.h"

#include "weft/list.h"
#include "weft/util_av.h"

struct util_rdm_xport;

enum util_peer_state {
	UTIL_PEER_IDLE,	      /* no connection (yet, or any more) */
	UTIL_PEER_CONNECTING, /* the transport is making one */
	UTIL_PEER_CONNECTED,
	UTIL_PEER_FAILED,     /* the last attempt failed, or the peer died */
};

struct util_peer {
	struct dlist_entry entry; /* map->list */
	struct util_peer *hash_next;
	uint64_t hash;
	fi_addr_t fi_addr; /* AV entry naming it, or FI_ADDR_NOTAVAIL */
	uint64_t serial; /* that entry's insert serial (util_av_slot) */
	uint8_t state; /* enum util_peer_state, the transport's to set */
	bool fresh; /* a new AV insert names it; the transport clears it */
	/* Engine: transmits waiting for the transport, in order. */
	struct dlist_entry queued; /* struct util_rdm_tx.waiting */
	struct dlist_entry blocked; /* on the engine's list while queued */
	bool draining; /* the engine is handing the queue over */
	uint32_t ntx; /* the engine's transmits to it, not finished */
	/* Engine: of those, the ones a transport holds now (handed over,
	 * not done), the collectives' own transfers aside: a transmit
	 * posted with FI_FENCE waits at the head of `queued` until none is
	 * left (util_rdm.h, fences). */
	uint32_t nflight;
	/* Engine: the transport found it dead (util_rdm_fail_peer) and has
	 * not reached it since: receives directed to it fail. */
	bool gone;
	void *addr; /* map->addr_len bytes, the AV's stored form */
	uint32_t ctx; /* the context of the endpoint at addr (above) */
	/* The RDM engine's: the transport that reaches it (util_rdm.h). */
	struct util_rdm_xport *xp;
};

struct util_peer_map_attr {
	size_t peer_size; /* >= sizeof(struct util_peer) */
	size_t addr_len;  /* bytes of an address (the AV's stored form) */
	/* Optional: set up / tear down the transport's part.  init may fail
	 * (the peer is not made); neither may block. */
	int (*peer_init)(void *ctx, struct util_peer *peer);
	void (*peer_fini)(void *ctx, struct util_peer *peer);
	void *ctx;
};

struct util_peer_cache {
	struct util_peer *peer;
	uint64_t serial;
};

struct util_peer_map {
	struct util_peer_map_attr attr;
	struct util_av *av; /* bound AV, or NULL */
	struct util_peer *fixed; /* connected endpoints: the one peer */
	struct util_peer_cache *by_index; /* [AV index], context 0 */
	size_t nindex;
	/* Contexts 1 and up (fi_rx_addr): [ctx - 1], grown on first use. */
	struct util_peer_ctx_tab {
		struct util_peer_cache *by_index;
		size_t nindex;
	} *ctx_tab;
	size_t nctx_tab;
	struct util_peer **bucket; /* by address hash */
	size_t nbucket; /* power of two */
	size_t count;
	struct dlist_entry list; /* struct util_peer.entry */
};

int util_peer_map_init(struct util_peer_map *map,
		       const struct util_peer_map_attr *attr);
/* Every peer is given to ->peer_fini and freed. */
void util_peer_map_fini(struct util_peer_map *map);

/* The AV whose fi_addrs util_peer_get takes (at bind). */
static inline void util_peer_map_set_av(struct util_peer_map *map,
					struct util_av *av)
{
	map->av = av;
	if (map->attr.addr_len == 0 && av)
		map->attr.addr_len = av->addrlen;
}

int util_peer_get_slow(struct util_peer_map *map, fi_addr_t dest,
		       struct util_peer **out);

/* The context fi_rx_addr put in dest's high bits (0: none). */
static inline uint32_t util_peer_ctx_of(const struct util_av *av,
					fi_addr_t dest)
{
	return av->rx_ctx_bits ?
		       (uint32_t)(dest >> (64 - av->rx_ctx_bits)) : 0;
}

/*
 * The peer dest names: 0 and *out, or -FI_EINVAL (dest is not a live AV
 * entry, or there is no AV) or -FI_ENOMEM.  A map with a fixed peer
 * (connected endpoints) returns it for any dest.
 */
static inline int util_peer_get(struct util_peer_map *map, fi_addr_t dest,
				struct util_peer **out)
{
	struct util_av_slot *slot;
	uint32_t idx;

	if (map->fixed) {
		*out = map->fixed;
		return 0;
	}
	if (weft_unlikely(!map->av))
		return -FI_EINVAL;
	slot = util_av_slot_get(map->av, dest);
	if (weft_unlikely(!slot))
		return -FI_EINVAL;
	idx = util_av_index(map->av, dest);
	if (weft_likely(idx < map->nindex &&
			map->by_index[idx].serial == slot->serial &&
			!util_peer_ctx_of(map->av, dest))) {
		*out = map->by_index[idx].peer;
		return 0;
	}
	return util_peer_get_slow(map, dest, out);
}

struct util_peer *util_peer_cached_ctx(struct util_peer_map *map,
				       fi_addr_t dest);

/*
 * The peer dest names if the map has met it under that AV entry, else
 * NULL; never makes one.
 */
static inline struct util_peer *util_peer_cached(struct util_peer_map *map,
						 fi_addr_t dest)
{
	struct util_av_slot *slot;
	uint32_t idx;

	if (map->fixed)
		return map->fixed;
	if (!map->av || !(slot = util_av_slot_get(map->av, dest)))
		return NULL;
	if (util_peer_ctx_of(map->av, dest))
		return util_peer_cached_ctx(map, dest);
	idx = util_av_index(map->av, dest);
	if (idx < map->nindex && map->by_index[idx].serial == slot->serial)
		return map->by_index[idx].peer;
	return NULL;
}

/* The peer with stored-form address addr, context ctx, or NULL. */
struct util_peer *util_peer_find(struct util_peer_map *map, const void *addr,
				 uint32_t ctx);

/*
 * The peer with address addr, context ctx, made if there is none (its
 * fi_addr is the AV's entry for the address, if any: without the context,
 * which completions do not report).  0 and *out, or -FI_ENOMEM or
 * ->peer_init's error.
 */
int util_peer_add(struct util_peer_map *map, const void *addr, uint32_t ctx,
		  struct util_peer **out);

/*
 * What a completion reports as the peer's source address: its AV entry if
 * that still names it (looked up again when the AV changed), else
 * FI_ADDR_NOTAVAIL.
 */
fi_addr_t util_peer_src(struct util_peer_map *map, struct util_peer *peer);

#endif /* WEFT_UTIL_PEER_H */
