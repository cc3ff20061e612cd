/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Memory registration: the key map every provider keeps per domain, and a
 * minimal MR object for providers whose registrations are only a key and
 * a range of memory (shm, tcp).
 *
 * The key map.  A registration is a list of iovecs, access bits and a key.
 * Peers address a registration as one contiguous range starting at `base`:
 * the virtual address of the first iovec under FI_MR_VIRT_ADDR, else the
 * registration's offset (0 for offset-based addressing, fi_mr(3)); the
 * iovecs follow each other in that range.  Keys:
 *  - FI_MR_PROV_KEY: the map picks a 64-bit key.  Keys come from a keyed
 *    permutation of a counter seeded once from getrandom(2): unpredictable
 *    to peers, never FI_KEY_NOTAVAIL, never handed out twice in the life
 *    of the map (removal does not make a key reusable).
 *  - otherwise the application's requested key, -FI_ENOKEY if it is in use.
 * Lookups hash the key: O(1) average, no allocation.
 *
 * Provider use:
 *
 *	struct shm_domain { struct util_domain util; struct util_mr_map mr_map; };
 *	domain open:  util_mr_map_init(&d->mr_map, prov, d->util.mr_mode, 0,
 *				       util_domain_needs_lock(&d->util));
 *	fi_ops_mr.reg: return util_mr_reg(&d->util, &d->mr_map, buf, len, ...);
 *	RMA target:   ret = util_mr_map_verify(&d->mr_map, key, addr, len,
 *				       FI_REMOTE_WRITE, &local);
 *	domain close: util_mr_map_fini(&d->mr_map);
 *
 * A provider with its own MR object (verbs: an ibv_mr per registration)
 * uses the map alone, with its object as the owner.
 */
#ifndef WEFT_UTIL_MR_H
#define WEFT_UTIL_MR_H

#include <stdatomic.h>
#include <sys/uio.h>

#include "weft/ofi.h"

#include "weft/core.h"
#include "weft/lock.h"
#include "weft/util_cntr.h"
#include "weft/util_domain.h"

/* Access bits a registration may carry.  FI_RMA_PMEM (fi_mr(3) names it
 * a registration flag; given as access it means the same) marks memory
 * whose writes a commit makes durable (util_mr_map_commit). */
#define UTIL_MR_ACCESS                                                         \
	(FI_SEND | FI_RECV | FI_READ | FI_WRITE | FI_REMOTE_READ |             \
	 FI_REMOTE_WRITE | FI_COLLECTIVE | FI_RMA_PMEM)
/* Registration flags the util MR accepts. */
#define UTIL_MR_FLAGS (FI_RMA_EVENT | FI_HMEM_DEVICE_ONLY | FI_RMA_PMEM)
/* The access that peers use, and that a registration needs a key for. */
#define UTIL_MR_REMOTE_ACCESS (FI_REMOTE_READ | FI_REMOTE_WRITE)
/* What a counter bound to a registration counts (fi_mr_bind). */
#define UTIL_MR_CNTR_EVENTS (FI_REMOTE_READ | FI_REMOTE_WRITE)
/* Default most iovecs in one registration (domain mr_iov_limit). */
#define UTIL_MR_IOV_LIMIT 4

struct util_mr_entry;

/*
 * What a registration looks like to a publisher: a transport that lets
 * peers reach registered memory without this process (shm's table of
 * registrations, prov/shm/shm_mrt.c).  One contiguous local range.
 */
struct util_mr_pub {
	uint64_t key;
	uint64_t access;
	uint64_t base; /* peers' address of byte 0 */
	uint64_t len;
	void *addr; /* local address of byte 0 */
	/* FI_REMOTE_WRITE / FI_REMOTE_READ: accesses that counters bound
	 * to it count (fi_mr_bind), which whoever moves data without us
	 * must report; 0 for most. */
	uint64_t events;
};

/*
 * A publisher attached to a map (util_mr_map_attach).  publish is called,
 * under the map's lock, for every single-iovec registration added, and for
 * those already there at attach time; withdraw for each of them when it is
 * removed, before util_mr_map_remove returns: once it returns, no peer may
 * touch the memory any more.  events (optional) is called, under the
 * map's lock, when counters are bound to a published registration:
 * `events` is util_mr_pub.events anew.  atomic_lock/atomic_unlock
 * (optional) bracket every atomic the target applies itself, so that
 * atomics peers apply directly and the target's own are serialised.
 */
struct util_mr_publisher {
	void (*publish)(struct util_mr_publisher *pub,
			const struct util_mr_pub *reg);
	void (*withdraw)(struct util_mr_publisher *pub, uint64_t key);
	void (*events)(struct util_mr_publisher *pub, uint64_t key,
		       uint64_t events);
	int (*atomic_lock)(struct util_mr_publisher *pub); /* 0 or -FI_E* */
	void (*atomic_unlock)(struct util_mr_publisher *pub);
};

struct util_mr_map {
	const struct fi_provider *prov;
	int mr_mode;      /* FI_MR_BASIC / FI_MR_SCALABLE already expanded */
	size_t iov_limit;
	struct weft_lock lock;
	/* key generator (FI_MR_PROV_KEY) */
	uint64_t key_seed[3];
	uint64_t key_next;
	/* key -> entry */
	struct util_mr_entry **bucket;
	size_t bucket_mask;
	size_t count;
	struct util_mr_publisher *pub; /* or NULL */
	/* Bumped by every removal: whoever holds memory a key named, past
	 * the call that checked it, looks here before touching it again. */
	uint64_t gen;
	/* Registrations with a counter bound (fi_mr_bind): while there are
	 * none, targets skip util_mr_map_count. */
	atomic_uint counted;
};

static inline uint64_t util_mr_map_gen(const struct util_mr_map *map)
{
	return __atomic_load_n(&map->gen, __ATOMIC_ACQUIRE);
}

/* An mr_mode as bits: FI_MR_BASIC is FI_MR_VIRT_ADDR | FI_MR_ALLOCATED |
 * FI_MR_PROV_KEY, FI_MR_SCALABLE none of them (fi_mr(3)). */
static inline int util_mr_mode_bits(int mr_mode)
{
	if (mr_mode == FI_MR_BASIC)
		return FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY;
	if (mr_mode == FI_MR_SCALABLE)
		return 0;
	return mr_mode;
}

/*
 * Initialise an empty map for a domain's mr_mode (FI_MR_BASIC means
 * FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY, FI_MR_SCALABLE
 * means none of them).  iov_limit 0 means UTIL_MR_IOV_LIMIT.  The lock is
 * taken per `needs_lock` (util_domain_needs_lock of the domain).  Called
 * from the provider's domain open; does not block.  Returns 0, -FI_ENOMEM
 * or what initialising the lock returned.
 */
int util_mr_map_init(struct util_mr_map *map, const struct fi_provider *prov,
		     int mr_mode, size_t iov_limit, bool needs_lock);

/* Free the map and whatever registrations are still in it. */
void util_mr_map_fini(struct util_mr_map *map);

/*
 * Add a registration: attr->mr_iov / iov_count (copied), access, offset
 * and requested_key, and `owner`, an opaque pointer returned by lookups
 * (the provider's MR object).  Validates the access bits (-FI_EINVAL for
 * unknown ones), the iov count (-FI_EINVAL for 0 or over iov_limit) and
 * that the range peers address does not wrap around 2^64 (-FI_EINVAL).
 * Control path: takes the lock, allocates.  Returns 0 and *key, or
 * -FI_ENOKEY (requested key in use), -FI_EINVAL, -FI_ENOMEM.
 */
/* The checks util_mr_map_insert makes, for a registration that takes no
 * key (no remote access): 0 or -FI_EINVAL. */
int util_mr_map_check(const struct util_mr_map *map,
		      const struct fi_mr_attr *attr);
int util_mr_map_insert(struct util_mr_map *map, const struct fi_mr_attr *attr,
		       void *owner, uint64_t *key);

/* Remove the registration under key: 0 or -FI_ENOKEY. */
int util_mr_map_remove(struct util_mr_map *map, uint64_t key);

/*
 * The owner given at insert for key, or NULL (not registered).  Takes the
 * lock; O(1) average; no allocation.
 */
void *util_mr_map_lookup(struct util_mr_map *map, uint64_t key);

/*
 * Target side of an RMA or atomic: check that a peer may access len bytes
 * at addr (its address, in the map's addressing mode) of the registration
 * under key with `access` (FI_REMOTE_READ, FI_REMOTE_WRITE, ... all of
 * which the registration must grant), and translate the range into local
 * memory.  iov holds *iov_count entries on input; on success it receives
 * the local pieces and *iov_count their number (0 for len 0).  Bounds
 * checks never overflow: addr + len is never computed.  Data path: takes
 * the lock (per threading), no allocation, never blocks.  Returns 0,
 * -FI_ENOKEY (no such key), -FI_EACCES (access not granted), -FI_EINVAL
 * (range outside the registration), -FI_ETOOSMALL (more pieces than iov
 * holds).
 */
int util_mr_map_verify_iov(struct util_mr_map *map, uint64_t key,
			   uint64_t addr, size_t len, uint64_t access,
			   struct iovec *iov, size_t *iov_count);

/*
 * FI_COMMIT_COMPLETE at the target, after an RMA write or atomic into the
 * count ranges rma landed: the bytes of those that lie in registrations
 * made with FI_RMA_PMEM are flushed from the CPU caches
 * (util_pmem_flush, weft/util_pmem.h); other ranges have nothing to make
 * durable, and ranges that name no registration (closed since) are
 * passed over.  Data path of commits only: takes the lock, no
 * allocation, never blocks.  Returns the bytes flushed.
 */
size_t util_mr_map_commit(struct util_mr_map *map,
			  const struct fi_rma_iov *rma, size_t count);

/*
 * util_mr_map_verify_iov for a range that must be contiguous in local
 * memory: *local is where it starts.  Same returns; a range that spans two
 * iovecs of a vectored registration gets -FI_ETOOSMALL.
 */
int util_mr_map_verify(struct util_mr_map *map, uint64_t key, uint64_t addr,
		       size_t len, uint64_t access, void **local);

/*
 * fi_mr_bind of a counter: the registration under key counts into cntr
 * the remote operations that write it (FI_REMOTE_WRITE in flags: RMA
 * writes and atomics) and those that read it (FI_REMOTE_READ: RMA reads,
 * and fetching and compare atomics, whose old values go back to the
 * initiator).  A registration counts each event into one counter, which
 * may count both.  Takes the counter's references (util_cntr_mr_get);
 * removing the registration drops them.  Control path; must not be
 * called with a lock the targets' progress takes.  Returns 0, -FI_ENOKEY
 * (no such registration), -FI_EALREADY (that event is counted already)
 * or -FI_EINVAL (flags other than those two, or none).
 */
int util_mr_map_bind_cntr(struct util_mr_map *map, uint64_t key,
			  struct util_cntr *cntr, uint64_t flags);

/* Whether any registration of the map has a counter bound: targets call
 * util_mr_map_count only then, so nothing is paid otherwise. */
static inline bool util_mr_map_counting(struct util_mr_map *map)
{
	return atomic_load_explicit(&map->counted, memory_order_relaxed) != 0;
}

/*
 * Target side: an operation that did `events` (FI_REMOTE_WRITE,
 * FI_REMOTE_READ, or both: util_rdm_mr_events) to the ranges rma[0..n)
 * succeeded, its data in place.  Each registration those ranges name
 * counts it once (however many of the ranges it holds) into the counters
 * bound to it for those events, a counter bound for both once.  Ranges
 * of no bytes, and keys without a registration or without counters,
 * count nothing.  Data path: takes the lock, no allocation.
 */
void util_mr_map_count(struct util_mr_map *map, const struct fi_rma_iov *rma,
		       size_t n, uint64_t events);

/*
 * Attach a publisher (at most one; -FI_EBUSY if another is attached) and
 * publish what is registered already; util_mr_map_detach withdraws what
 * is still registered and detaches it.  util_mr_map_publisher returns the
 * attached one, or NULL.  Control path.
 */
int util_mr_map_attach(struct util_mr_map *map, struct util_mr_publisher *pub);
void util_mr_map_detach(struct util_mr_map *map, struct util_mr_publisher *pub);
struct util_mr_publisher *util_mr_map_publisher(struct util_mr_map *map);

/*
 * Bracket an atomic applied by the target to registered memory (the
 * publisher's lock, if it has one; nothing otherwise).  The lock returns
 * 0, or -FI_E* when it could not be had (the atomic then fails, and no
 * unlock follows).
 */
int util_mr_map_atomic_lock(struct util_mr_map *map);
void util_mr_map_atomic_unlock(struct util_mr_map *map);

/*
 * The minimal MR object.  fi_mr_desc returns the util_mr itself, so a
 * provider that receives a desc can read the registration back;
 * fi_mr_key returns the map's key.  fi_close removes the key and drops
 * the domain reference.
 */
struct util_mr {
	struct fid_mr mr_fid;
	struct util_domain *domain;
	struct util_mr_map *map;
	uint64_t access;
	uint64_t flags;
	enum fi_hmem_iface iface;
	size_t iov_count;
	struct iovec iov[];
};

/*
 * fi_mr_regattr for providers that use struct util_mr: validates attr
 * (access bits, flags, iov count, FI_HMEM_SYSTEM memory only: -FI_ENOSYS
 * otherwise), inserts into map, takes a domain reference, and when the
 * domain's EQ was bound with FI_REG_MR reports FI_MR_COMPLETE on it.
 * Called from the provider's fi_ops_mr; may allocate, never blocks.
 * Returns 0 and *mr_fid, or -FI_EINVAL, -FI_EBADFLAGS, -FI_ENOKEY,
 * -FI_ENOSYS, -FI_ENOMEM.
 */
int util_mr_regattr(struct util_domain *domain, struct util_mr_map *map,
		    const struct fi_mr_attr *attr, uint64_t flags,
		    struct fid_mr **mr_fid);

/* fi_mr_regv and fi_mr_reg in terms of util_mr_regattr. */
int util_mr_regv(struct util_domain *domain, struct util_mr_map *map,
		 const struct iovec *iov, size_t count, uint64_t access,
		 uint64_t offset, uint64_t requested_key, uint64_t flags,
		 struct fid_mr **mr_fid, void *context);
int util_mr_reg(struct util_domain *domain, struct util_mr_map *map,
		const void *buf, size_t len, uint64_t access, uint64_t offset,
		uint64_t requested_key, uint64_t flags, struct fid_mr **mr_fid,
		void *context);

static inline struct util_mr *util_mr_from_fid(struct fid_mr *mr_fid)
{
	return container_of(mr_fid, struct util_mr, mr_fid);
}

/*
 * A domain whose registrations live in a util_mr_map: providers that move
 * data in software (shm, tcp) embed it first in their domain.  Its MR ops
 * and fid ops serve as the domain's; util_mr_domain_close undoes
 * util_mr_domain_init and frees the allocation the domain begins.
 */
struct util_mr_domain {
	struct util_domain util;
	struct util_mr_map mr_map;
};

int util_mr_domain_init(struct util_mr_domain *domain,
			struct util_fabric *fabric, const struct fi_info *info,
			void *context);
int util_mr_domain_close(struct fid *fid);

/*
 * fi_domain of a provider whose domain is a util_mr_domain and nothing
 * more (shm): refuses an info that names a domain other than the one of
 * the provider's first candidate (-FI_EINVAL) or asks what no candidate
 * offers (util_prov_check_domain: -FI_ENODATA), then allocates and
 * initialises the domain with `ops` as its fi_ops_domain; fi_close frees
 * it.  Returns 0 and *domain_fid, or -FI_EINVAL, -FI_ENODATA, -FI_ENOMEM.
 * Does not block.
 */
struct util_prov;
int util_mr_domain_open(const struct util_prov *uprov,
			struct fid_fabric *fabric_fid, struct fi_info *info,
			struct fi_ops_domain *ops,
			struct fid_domain **domain_fid, void *context);
extern struct fi_ops_mr util_mr_domain_mr_ops;
extern struct fi_ops util_mr_domain_fi_ops;

static inline struct util_mr_domain *util_mr_domain_of(struct util_domain *d)
{
	return container_of(d, struct util_mr_domain, util);
}

#endif /* WEFT_UTIL_MR_H */
