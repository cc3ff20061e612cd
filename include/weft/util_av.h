/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Address vectors shared by every provider.
 *
 * A provider embeds nothing: it opens a util_av from its fi_av_open with a
 * static const struct util_av_ops that describes its addresses, and
 * converts the fid_av back with util_av_from_fid().  The AV implements the
 * whole of fi_av(3): FI_AV_MAP and FI_AV_TABLE, insert / insertsvc /
 * insertsym / remove / lookup / straddr, FI_SYNC_ERR, FI_AV_USER_ID,
 * asynchronous inserts reported on a bound EQ as FI_AV_COMPLETE events,
 * and named AVs shared between processes (util_av_open_shared,
 * docs/shared-av.md).
 *
 * Storage.  Each entry is a slot holding the address in its stored (binary,
 * canonical) form, then `priv_size` bytes of provider data.  Slots live in
 * chunks of growing size (64, 128, 256, ... entries) reached through a
 * fixed directory, so a slot never moves once allocated: util_av_addr() and
 * util_av_priv() are a few arithmetic operations and two loads, take no
 * lock and never allocate.  A hash table over the stored addresses serves
 * the reverse lookup (util_av_lookup_addr) for FI_SOURCE.
 *
 * fi_addr_t values.  FI_AV_TABLE: the slot index, assigned at the lowest
 * unused index (fi_av(3)), so 0, 1, 2, ... in insertion order while nothing
 * has been removed.  FI_AV_MAP: the slot index in the low 32 bits and a
 * 16-bit generation above it, so an fi_addr_t kept after fi_av_remove stays
 * invalid even when its slot is reused.  Both fit below the bits fi_rx_addr
 * uses for rx_ctx_bits (at most 16).
 *
 * The same address inserted again.  FI_AV_MAP: the insert answers the
 * fi_addr_t the address has already and counts one more reference;
 * fi_av_remove drops one, and the entry goes with the last.  A sender has
 * one fi_addr_t only, so directed receives and FI_SOURCE agree however
 * often an application inserts it (Open MPI's MTL, under
 * MPI_THREAD_MULTIPLE, may insert a peer from two threads at once).
 * FI_AV_TABLE (indices in insertion order) and inserts with FI_AV_USER_ID
 * (an id per insert) take a new entry each time.
 *
 * Address formats.  `addr_format` is the format the application exchanges
 * with fi_av_insert / fi_av_lookup / fi_av_straddr.  For binary formats the
 * stored form is that address, canonicalised by ->normalize.  For
 * FI_ADDR_STR the application passes strings ("fi_shm://name"); a provider
 * either keeps them as they are (the default: the string, NUL-padded to
 * addrlen bytes) or gives ->from_str / ->to_str to keep a binary form.
 *
 * Provider use:
 *
 *	static const struct util_av_ops tcp_av_ops = {
 *		.addr_format = FI_SOCKADDR_IN,
 *		.priv_size = sizeof(struct tcp_peer),
 *		.entry_fini = tcp_peer_drop,
 *	};
 *	fi_ops_domain.av_open:
 *		return util_av_open(&dom->util, attr, &tcp_av_ops, av, context);
 *	send:     peer = util_av_priv(av, dest_addr);  NULL: -FI_EINVAL
 *	FI_SOURCE: src = util_av_lookup_addr(av, &sin);
 *		   cq entry's src_addr = util_av_user_id(av, src)
 *	endpoint bind / close: util_av_get(av) / util_av_put(av)
 *
 * util_av_index() is dense (lowest free slot first), so a provider may keep
 * per-peer arrays indexed by it.
 */
#ifndef WEFT_UTIL_AV_H
#define WEFT_UTIL_AV_H

#include "weft/core.h" /* config.h before any system header */

#include <stdatomic.h>
#include <string.h>

#include "weft/ofi.h"

#include "weft/lock.h"
#include "weft/util_domain.h"
#include "weft/util_eq.h"

struct util_av;

/* Longest stored address (bytes) and default length of FI_ADDR_STR names. */
#define UTIL_AV_MAX_ADDRLEN 256
#define UTIL_AV_STR_ADDRLEN FI_NAME_MAX


/*
 * How a provider's addresses look.  Every callback may be NULL: the AV then
 * uses its default for addr_format (FI_SOCKADDR_IN, FI_SOCKADDR_IN6,
 * FI_SOCKADDR, FI_ADDR_STR); for other formats a NULL ->normalize is a
 * plain copy, ->to_str prints hex, ->resolve and ->from_str fail with
 * -FI_ENOSYS.  The address callbacks run without the AV lock, the entry
 * hooks with it; none may block except ->resolve (name resolution), and
 * none may call back into the AV.
 */
struct util_av_ops {
	/* The format fi_av_insert takes (FI_SOCKADDR_IN, ..., FI_ADDR_STR). */
	uint32_t addr_format;
	/*
	 * Bytes of one stored address, at most UTIL_AV_MAX_ADDRLEN; 0 for
	 * the format's default (sizeof the sockaddr, UTIL_AV_STR_ADDRLEN for
	 * FI_ADDR_STR).  For binary formats it is also the stride of the
	 * array passed to fi_av_insert.
	 */
	size_t addrlen;
	/* Bytes of provider data kept per entry (util_av_priv), zeroed. */
	size_t priv_size;
	/*
	 * FI_ADDR_STR, optional: what every address string of this provider
	 * begins with ("fi_shm://").  fi_av_insert takes the strings as
	 * fi_av(3) says, an array of char *, and also packed one after
	 * another as fi_getname gives them (what clients of upstream's
	 * providers pass); a buffer beginning with the prefix is the packed
	 * form.  Without a prefix only text that cannot be a pointer is
	 * (see util_av_insert).
	 */
	const char *str_prefix;

	/*
	 * Canonical stored form of a stored-form address `in` into `out`
	 * (addrlen bytes, may alias in): clears padding so that equal
	 * addresses compare equal byte for byte.  Returns 0, or -FI_EINVAL
	 * for an address that is malformed (wrong family, ...).
	 */
	int (*normalize)(const struct util_av *av, const void *in, void *out);
	/* Real size of a stored address (<= addrlen), for fi_av_lookup. */
	size_t (*addr_size)(const struct util_av *av, const void *addr);
	/*
	 * Resolve node/service (fi_getinfo(3) meaning) into one stored
	 * address.  May block on name resolution.  Returns 0, -FI_EINVAL
	 * for names that cannot be resolved, or another -FI_Exxx.
	 */
	int (*resolve)(const struct util_av *av, const char *node,
		       const char *service, void *addr);
	/*
	 * Print a stored address the snprintf way: write at most len bytes
	 * including the NUL, return the length of the whole string (without
	 * NUL), or a negative -FI_Exxx.
	 */
	int (*to_str)(const struct util_av *av, const void *addr, char *buf,
		      size_t len);
	/* Parse an FI_ADDR_STR string into a stored address: 0 / -FI_EINVAL. */
	int (*from_str)(const struct util_av *av, const char *str, void *addr);

	/*
	 * Optional: called after an entry is added (priv is zeroed), under
	 * the AV lock, before the fi_addr_t reaches the application.  A
	 * failure fails that one address.  entry_fini is called when it is
	 * removed or the AV closes.  Neither may block.
	 */
	int (*entry_init)(struct util_av *av, fi_addr_t fi_addr,
			  const void *addr, void *priv);
	void (*entry_fini)(struct util_av *av, fi_addr_t fi_addr,
			   const void *addr, void *priv);
};

/* Ready-made descriptions for plain socket addresses and FI_ADDR_STR. */
extern const struct util_av_ops util_av_sockaddr_in_ops;
extern const struct util_av_ops util_av_sockaddr_in6_ops;
extern const struct util_av_ops util_av_sockaddr_ops;
/* The description of a domain's socket addresses: IPv6 for
 * FI_SOCKADDR_IN6, else IPv4 (tcp, udp, verbs). */
static inline const struct util_av_ops *
util_av_sockaddr_ops_of(uint32_t addr_format)
{
	return addr_format == FI_SOCKADDR_IN6 ? &util_av_sockaddr_in6_ops :
						&util_av_sockaddr_in_ops;
}
extern const struct util_av_ops util_av_str_ops;

/* Slot header; the stored address follows, then the provider data. */
struct util_av_slot {
	uint32_t hash_next; /* next slot index in its bucket, or UINT32_MAX */
	uint16_t gen;       /* FI_AV_MAP generation, bumped on each reuse */
	uint8_t used;
	uint8_t has_user_id;
	uint32_t refs;      /* FI_AV_MAP: inserts of this address, less removes */
	uint64_t user_id;   /* FI_AV_USER_ID */
	uint64_t serial;    /* this insert's, unique in the process: caches
			     * keyed by index tell a reused slot apart */
};

#define UTIL_AV_CHUNK0_SHIFT 6
#define UTIL_AV_CHUNKS 26
/* Highest slot index + 1: the chunk directory covers 64 * (2^26 - 1). */
#define UTIL_AV_MAX_ENTRIES ((uint32_t)1 << 31)

struct util_av {
	struct fid_av av_fid;
	struct util_domain *domain;
	const struct fi_provider *prov;
	struct util_av_ops ops; /* the provider's, defaults filled in */
	enum fi_av_type type;
	uint64_t flags;   /* fi_av_attr.flags */
	uint64_t addr_mask; /* strips fi_rx_addr's rx context bits */
	int rx_ctx_bits;
	size_t addrlen;   /* stored bytes per address */
	size_t addr_off;  /* offset of the address in a slot */
	size_t priv_off;  /* offset of the provider data in a slot */
	size_t slot_size;
	atomic_int ref;   /* endpoints bound */
	struct weft_lock lock;
	struct fid_eq *eq; /* fi_av_bind: inserts complete as events */

	/* Slots.  Read without the lock by util_av_addr/util_av_priv. */
	char *chunk[UTIL_AV_CHUNKS];
	/* Below here: under the lock. */
	uint32_t next_idx;  /* slots [0, next_idx) have been used */
	uint32_t count;     /* live entries */
	/* Inserts ever made, read without the lock: an endpoint holding
	 * messages from senders it could not name yet looks again when it
	 * changes. */
	atomic_uint_fast64_t inserts;
	uint64_t *free_map; /* bit set: slot below next_idx is free */
	size_t free_words;
	size_t free_hint;   /* no free bit in words below this */
	uint32_t free_count;
	uint32_t *bucket;   /* reverse map: slot index chains by hash */
	uint32_t bucket_mask;
	/* A named AV (FI_SHARED_AV): the object shared with the node's
	 * other processes (prov/util/util_av_shm.h), else NULL. */
	struct util_av_shm *shm;
};

static inline struct util_av *util_av_from_fid(struct fid_av *av_fid)
{
	return container_of(av_fid, struct util_av, av_fid);
}

/*
 * Open an AV on a domain for fi_av_open.  Called by the provider's
 * fi_ops_domain.av_open with the application's attr; `ops` must outlive
 * the AV (a static const table).  FI_AV_UNSPEC picks the domain's av_type,
 * else FI_AV_TABLE, and writes the choice back into attr->type.  Named /
 * shared AVs (attr->name, FI_READ) are refused: -FI_ENOSYS.  Takes a
 * reference on the domain.  May allocate; does not block.  On success
 * *av_fid is the AV (closed with fi_close) and 0 is returned; else
 * -FI_EINVAL (bad attr), -FI_ENOSYS, -FI_ENOMEM.
 */
int util_av_open(struct util_domain *domain, struct fi_av_attr *attr,
		 const struct util_av_ops *ops, struct fid_av **av_fid,
		 void *context);

/*
 * util_av_open for a provider that offers FI_SHARED_AV: attr->name opens
 * the named AV of this user on this node, created if it does not exist
 * (fi_av(3)), and FI_READ in attr->flags opens an existing one read-only
 * (-FI_ENOENT if there is none; its inserts and removes fail with
 * -FI_EACCES).  Every process sees an entry at the same fi_addr_t, and an
 * entry another process adds later when it is first used.  attr->map_addr
 * plays no part (fi_addr_t values do not depend on it); 0 is answered
 * with the object's address in this process.  Object, checks and
 * cleanup: prov/util/util_av_shm.c.  More returns: -FI_EACCES (the
 * object is another user's), -FI_EINVAL (it is no AV of these
 * addresses), -FI_EBUSY (too many processes have it open).
 */
int util_av_open_shared(struct util_domain *domain, struct fi_av_attr *attr,
			const struct util_av_ops *ops, struct fid_av **av_fid,
			void *context);

/*
 * Endpoints bound to the AV hold a reference so that fi_close(av) answers
 * -FI_EBUSY while they are open.  Called from the provider's ep bind/close.
 */
static inline void util_av_get(struct util_av *av)
{
	atomic_fetch_add_explicit(&av->ref, 1, memory_order_relaxed);
}

static inline void util_av_put(struct util_av *av)
{
	atomic_fetch_sub_explicit(&av->ref, 1, memory_order_release);
}

/* Slot index of an fi_addr_t, without validation. */
static inline uint32_t util_av_index(const struct util_av *av,
				     fi_addr_t fi_addr)
{
	return (uint32_t)(fi_addr & av->addr_mask);
}

/* Slot `idx` if its chunk exists; NULL otherwise.  No lock, no allocation. */
static inline struct util_av_slot *util_av_slot_at(const struct util_av *av,
						   uint32_t idx)
{
	uint64_t v = (uint64_t)idx + (1u << UTIL_AV_CHUNK0_SHIFT);
	unsigned int k = 63 - __builtin_clzll(v) - UTIL_AV_CHUNK0_SHIFT;
	uint64_t off = v - ((uint64_t)1 << (k + UTIL_AV_CHUNK0_SHIFT));
	char *chunk;

	if (weft_unlikely(idx >= UTIL_AV_MAX_ENTRIES))
		return NULL;
	chunk = av->chunk[k];
	if (weft_unlikely(!chunk))
		return NULL;
	return (struct util_av_slot *)(chunk + off * av->slot_size);
}

/*
 * A named AV: the entries other processes added since this one last
 * looked, and then the live slot fi_addr names, or NULL.  Takes the AV
 * lock; the miss path of util_av_slot_get, never called with the lock
 * held.
 */
struct util_av_slot *util_av_shm_slot(const struct util_av *av,
				      fi_addr_t fi_addr);

/*
 * What this process knows: the live slot an fi_addr_t names, or NULL if
 * it was never returned, has been removed, or (FI_AV_MAP) names an older
 * generation of its slot.
 * Data path: O(1), no lock, no allocation.  The answer stays valid until
 * the application removes the address (fi_av(3): operations racing with
 * fi_av_remove are undefined).
 */
static inline struct util_av_slot *
util_av_slot_get_local(const struct util_av *av, fi_addr_t fi_addr)
{
	struct util_av_slot *slot;

	if (weft_unlikely(fi_addr == FI_ADDR_NOTAVAIL))
		return NULL;
	slot = util_av_slot_at(av, util_av_index(av, fi_addr));
	if (weft_unlikely(!slot || !slot->used))
		return NULL;
	/* FI_AV_TABLE: the generation bits must be 0. */
	if (weft_unlikely(((fi_addr & av->addr_mask) >> 32) !=
			  (av->type == FI_AV_MAP ? slot->gen : 0)))
		return NULL;
	return slot;
}

/* util_av_slot_get_local, and on a miss of a named AV what another process
 * inserted since this one last looked (util_av_shm_slot).  Data path. */
static inline struct util_av_slot *util_av_slot_get(const struct util_av *av,
						    fi_addr_t fi_addr)
{
	struct util_av_slot *slot = util_av_slot_get_local(av, fi_addr);

	if (weft_unlikely(!slot) && weft_unlikely(av->shm != NULL))
		return util_av_shm_slot(av, fi_addr);
	return slot;
}

/*
 * The stored address of a live fi_addr_t (addrlen bytes, canonical form),
 * or NULL if fi_addr is not valid.  Data path, see util_av_slot_get.
 */
static inline void *util_av_addr(const struct util_av *av, fi_addr_t fi_addr)
{
	struct util_av_slot *slot = util_av_slot_get(av, fi_addr);

	return slot ? (char *)slot + av->addr_off : NULL;
}

/* The provider data (ops.priv_size bytes) of a live fi_addr_t, or NULL. */
static inline void *util_av_priv(const struct util_av *av, fi_addr_t fi_addr)
{
	struct util_av_slot *slot = util_av_slot_get(av, fi_addr);

	return slot ? (char *)slot + av->priv_off : NULL;
}

/*
 * What completions report as the source of fi_addr: the FI_AV_USER_ID the
 * application gave at insert, else fi_addr itself.  Data path, no lock.
 */
static inline fi_addr_t util_av_user_id(const struct util_av *av,
					fi_addr_t fi_addr)
{
	struct util_av_slot *slot = util_av_slot_get(av, fi_addr);

	return slot && slot->has_user_id ? slot->user_id : fi_addr;
}

/*
 * Reverse lookup for FI_SOURCE: the fi_addr_t under which the stored-form
 * address `addr` (addrlen bytes, as util_av_addr returns; for the default
 * FI_ADDR_STR storage a NUL-terminated string) is inserted, or
 * FI_ADDR_NOTAVAIL.  If the address was inserted more than once
 * (fi_av(3) leaves duplicates undefined), one of its entries answers.  Receive path: takes the AV lock (per the
 * domain's threading), hashes the address, O(1) average, no allocation.
 */
fi_addr_t util_av_lookup_addr(struct util_av *av, const void *addr);

/*
 * Insert one stored-form address from inside the provider (e.g. a peer
 * that connected to us and is not in the AV yet).  Same rules as
 * fi_av_insert for one address.  Takes the lock, may allocate.  Returns 0
 * and *fi_addr, or -FI_EINVAL / -FI_ENOMEM / -FI_ENOSPC.
 */
int util_av_insert_addr(struct util_av *av, const void *addr,
			fi_addr_t *fi_addr);

#endif /* WEFT_UTIL_AV_H */
