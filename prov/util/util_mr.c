/* SPDX-License-Identifier: BSD-2-Clause */
/* Memory registration key map and the minimal MR object (weft/util_mr.h). */
#include "weft/util_trigger.h"
#include "weft/util_mr.h"

#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "weft/ofi.h"

#include "weft/stubs.h"
#include "weft/util_getinfo.h"
#include "weft/util_pmem.h"

/* Pieces of one committed range (a vectored registration's). */
#define UTIL_MR_COMMIT_IOV 16

struct util_mr_entry {
	struct util_mr_entry *next; /* bucket chain */
	uint64_t key;
	uint64_t access;
	uint64_t base; /* peers' address of byte 0 */
	uint64_t len;  /* total bytes */
	void *owner;
	/* Counters bound with fi_mr_bind, or NULL. */
	struct util_cntr *cntr_write, *cntr_read;
	size_t iov_count;
	struct iovec iov[];
};

/* What counters bound to e count (util_mr_pub.events). */
static uint64_t mr_events(const struct util_mr_entry *e)
{
	return (e->cntr_write ? FI_REMOTE_WRITE : 0) |
	       (e->cntr_read ? FI_REMOTE_READ : 0);
}

/* Drop what counters e had bound; the map's lock not held. */
static void mr_unbind_all(struct util_mr_entry *e)
{
	if (e->cntr_write)
		util_cntr_mr_put(e->cntr_write);
	if (e->cntr_read)
		util_cntr_mr_put(e->cntr_read);
}

/* A bijection of 64-bit values that spreads every input bit. */
static inline uint64_t mr_mix(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ULL;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebULL;
	x ^= x >> 31;
	return x;
}

static inline struct util_mr_entry **mr_bucket(struct util_mr_map *map,
					       uint64_t key)
{
	return &map->bucket[mr_mix(key) & map->bucket_mask];
}

static struct util_mr_entry *mr_find(struct util_mr_map *map, uint64_t key)
{
	struct util_mr_entry *e;

	for (e = *mr_bucket(map, key); e; e = e->next)
		if (e->key == key)
			return e;
	return NULL;
}

static int mr_resize(struct util_mr_map *map, size_t nbuckets)
{
	struct util_mr_entry **old = map->bucket, *e, *next;
	size_t i, n = map->bucket ? map->bucket_mask + 1 : 0;

	map->bucket = calloc(nbuckets, sizeof(*map->bucket));
	if (!map->bucket) {
		map->bucket = old;
		return -FI_ENOMEM;
	}
	map->bucket_mask = nbuckets - 1;
	for (i = 0; i < n; i++) {
		for (e = old[i]; e; e = next) {
			next = e->next;
			e->next = *mr_bucket(map, e->key);
			*mr_bucket(map, e->key) = e;
		}
	}
	free(old);
	return 0;
}

static void mr_seed(struct util_mr_map *map)
{
	struct timespec ts;
	size_t got = 0;
	ssize_t n;

	while (got < sizeof(map->key_seed)) {
		n = getrandom((char *)map->key_seed + got,
			      sizeof(map->key_seed) - got, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	if (got == sizeof(map->key_seed))
		return;
	/* No getrandom: keys stay unique, only less unpredictable. */
	FI_WARN(map->prov, FI_LOG_MR,
		"getrandom failed; MR keys seeded from the clock\n");
	clock_gettime(CLOCK_MONOTONIC, &ts);
	map->key_seed[0] ^= mr_mix((uint64_t)ts.tv_nsec ^ (uint64_t)getpid());
	map->key_seed[1] ^= mr_mix((uint64_t)ts.tv_sec ^ (uintptr_t)map);
	map->key_seed[2] ^= mr_mix(map->key_seed[0] + map->key_seed[1]);
}

/*
 * Next provider key: a keyed bijection of a counter, so two counter values
 * never give the same key.  Lock held.
 */
static uint64_t mr_next_key(struct util_mr_map *map)
{
	uint64_t key;

	do {
		key = mr_mix(mr_mix(map->key_next++ ^ map->key_seed[0]) +
			     map->key_seed[1]) ^
		      map->key_seed[2];
	} while (key == FI_KEY_NOTAVAIL || mr_find(map, key));
	return key;
}

/* Lock held: tell the publisher about e (one iovec only). */
static void mr_publish(struct util_mr_map *map, const struct util_mr_entry *e)
{
	struct util_mr_pub reg = {
		.key = e->key,
		.access = e->access,
		.base = e->base,
		.len = e->len,
		.addr = e->iov[0].iov_base,
		.events = mr_events(e),
	};

	if (map->pub && e->iov_count == 1)
		map->pub->publish(map->pub, &reg);
}

int util_mr_map_attach(struct util_mr_map *map, struct util_mr_publisher *pub)
{
	struct util_mr_entry *e;
	size_t i;

	weft_lock(&map->lock);
	if (map->pub) {
		weft_unlock(&map->lock);
		return map->pub == pub ? 0 : -FI_EBUSY;
	}
	map->pub = pub;
	for (i = 0; map->bucket && i <= map->bucket_mask; i++)
		for (e = map->bucket[i]; e; e = e->next)
			mr_publish(map, e);
	weft_unlock(&map->lock);
	return 0;
}

void util_mr_map_detach(struct util_mr_map *map, struct util_mr_publisher *pub)
{
	struct util_mr_entry *e;
	size_t i;

	weft_lock(&map->lock);
	if (map->pub == pub) {
		/* Registrations may outlive the publisher: withdraw them
		 * now, as their close would have. */
		for (i = 0; map->bucket && i <= map->bucket_mask; i++)
			for (e = map->bucket[i]; e; e = e->next)
				if (e->iov_count == 1)
					pub->withdraw(pub, e->key);
		map->pub = NULL;
	}
	weft_unlock(&map->lock);
}

struct util_mr_publisher *util_mr_map_publisher(struct util_mr_map *map)
{
	struct util_mr_publisher *pub;

	weft_lock(&map->lock);
	pub = map->pub;
	weft_unlock(&map->lock);
	return pub;
}

int util_mr_map_atomic_lock(struct util_mr_map *map)
{
	struct util_mr_publisher *pub = util_mr_map_publisher(map);

	return pub && pub->atomic_lock ? pub->atomic_lock(pub) : 0;
}

void util_mr_map_atomic_unlock(struct util_mr_map *map)
{
	struct util_mr_publisher *pub = util_mr_map_publisher(map);

	if (pub && pub->atomic_unlock)
		pub->atomic_unlock(pub);
}

int util_mr_map_init(struct util_mr_map *map, const struct fi_provider *prov,
		     int mr_mode, size_t iov_limit, bool needs_lock)
{
	int ret;

	memset(map, 0, sizeof(*map));
	atomic_init(&map->counted, 0);
	map->prov = prov ? prov : &weft_core_prov;
	map->mr_mode = util_mr_mode_bits(mr_mode);
	map->iov_limit = iov_limit ? iov_limit : UTIL_MR_IOV_LIMIT;
	mr_seed(map);
	ret = weft_lock_init(&map->lock, needs_lock);
	if (ret)
		return ret;
	ret = mr_resize(map, 64);
	if (ret)
		goto err_destroy_lock;
	return 0;

err_destroy_lock:
	weft_lock_destroy(&map->lock);
	return ret;
}

void util_mr_map_fini(struct util_mr_map *map)
{
	struct util_mr_entry *e, *next;
	size_t i;

	for (i = 0; map->bucket && i <= map->bucket_mask; i++) {
		for (e = map->bucket[i]; e; e = next) {
			next = e->next;
			mr_unbind_all(e);
			free(e);
		}
	}
	free(map->bucket);
	map->bucket = NULL;
	map->count = 0;
	weft_lock_destroy(&map->lock);
}

/* What a registration must be, whether peers reach it or not; its base
 * and length as peers address it in *base and *total. */
static int mr_attr_check(const struct util_mr_map *map,
			 const struct fi_mr_attr *attr, uint64_t *base,
			 uint64_t *total_out)
{
	uint64_t total = 0;
	size_t i;

	if (!attr || !attr->iov_count || attr->iov_count > map->iov_limit ||
	    !attr->mr_iov)
		return -FI_EINVAL;
	if (attr->access & ~UTIL_MR_ACCESS) {
		FI_WARN(map->prov, FI_LOG_MR, "unknown access bits %#llx\n",
			(unsigned long long)(attr->access & ~UTIL_MR_ACCESS));
		return -FI_EINVAL;
	}
	for (i = 0; i < attr->iov_count; i++) {
		if (attr->mr_iov[i].iov_len > UINT64_MAX - total)
			return -FI_EINVAL;
		total += attr->mr_iov[i].iov_len;
		/* Local memory itself may not wrap either. */
		if (attr->mr_iov[i].iov_len >
		    UINTPTR_MAX - (uintptr_t)attr->mr_iov[i].iov_base)
			return -FI_EINVAL;
	}

	*base = map->mr_mode & FI_MR_VIRT_ADDR ?
			(uint64_t)(uintptr_t)attr->mr_iov[0].iov_base :
			attr->offset;
	/* The peers' range [base, base + total) must not wrap. */
	if (total > UINT64_MAX - *base)
		return -FI_EINVAL;
	*total_out = total;
	return 0;
}

int util_mr_map_check(const struct util_mr_map *map,
		      const struct fi_mr_attr *attr)
{
	uint64_t base, total;

	return mr_attr_check(map, attr, &base, &total);
}

int util_mr_map_insert(struct util_mr_map *map, const struct fi_mr_attr *attr,
		       void *owner, uint64_t *key)
{
	struct util_mr_entry *e;
	uint64_t total, base;
	int ret;

	if (!key)
		return -FI_EINVAL;
	ret = mr_attr_check(map, attr, &base, &total);
	if (ret)
		return ret;

	e = malloc(sizeof(*e) + attr->iov_count * sizeof(e->iov[0]));
	if (!e)
		return -FI_ENOMEM;
	e->access = attr->access;
	e->base = base;
	e->len = total;
	e->owner = owner;
	e->cntr_write = NULL;
	e->cntr_read = NULL;
	e->iov_count = attr->iov_count;
	memcpy(e->iov, attr->mr_iov, attr->iov_count * sizeof(e->iov[0]));

	weft_lock(&map->lock);
	if (map->mr_mode & FI_MR_PROV_KEY) {
		e->key = mr_next_key(map);
	} else if (mr_find(map, attr->requested_key)) {
		weft_unlock(&map->lock);
		FI_INFO(map->prov, FI_LOG_MR, "key %#llx is in use\n",
			(unsigned long long)attr->requested_key);
		ret = -FI_ENOKEY;
		goto err_free_entry;
	} else {
		e->key = attr->requested_key;
	}
	if (map->count + 1 > map->bucket_mask + 1 &&
	    mr_resize(map, (map->bucket_mask + 1) * 2)) {
		weft_unlock(&map->lock);
		ret = -FI_ENOMEM;
		goto err_free_entry;
	}
	e->next = *mr_bucket(map, e->key);
	*mr_bucket(map, e->key) = e;
	map->count++;
	*key = e->key;
	mr_publish(map, e);
	weft_unlock(&map->lock);
	return 0;

err_free_entry:
	free(e);
	return ret;
}

int util_mr_map_remove(struct util_mr_map *map, uint64_t key)
{
	struct util_mr_entry **link, *e;

	weft_lock(&map->lock);
	for (link = mr_bucket(map, key); (e = *link); link = &e->next) {
		if (e->key == key) {
			*link = e->next;
			map->count--;
			if (mr_events(e))
				atomic_fetch_sub(&map->counted, 1);
			__atomic_add_fetch(&map->gen, 1, __ATOMIC_RELEASE);
			if (map->pub && e->iov_count == 1)
				map->pub->withdraw(map->pub, key);
			weft_unlock(&map->lock);
			/* Found by no target from here on: its counters
			 * may go. */
			mr_unbind_all(e);
			free(e);
			return 0;
		}
	}
	weft_unlock(&map->lock);
	return -FI_ENOKEY;
}

int util_mr_map_bind_cntr(struct util_mr_map *map, uint64_t key,
			  struct util_cntr *cntr, uint64_t flags)
{
	struct util_mr_entry *e;
	int refs, i, ret = 0;

	if (!cntr || !flags || (flags & ~UTIL_MR_CNTR_EVENTS))
		return -FI_EINVAL;
	/* A reference per event counted, taken outside the lock (the
	 * counter's progress may run the targets, which take it), given
	 * back if unused. */
	refs = !!(flags & FI_REMOTE_WRITE) + !!(flags & FI_REMOTE_READ);
	for (i = 0; i < refs; i++)
		util_cntr_mr_get(cntr);

	weft_lock(&map->lock);
	e = mr_find(map, key);
	if (!e) {
		ret = -FI_ENOKEY;
	} else if (((flags & FI_REMOTE_WRITE) && e->cntr_write) ||
		   ((flags & FI_REMOTE_READ) && e->cntr_read)) {
		ret = -FI_EALREADY;
	} else {
		if (!mr_events(e))
			atomic_fetch_add(&map->counted, 1);
		if (flags & FI_REMOTE_WRITE)
			e->cntr_write = cntr;
		if (flags & FI_REMOTE_READ)
			e->cntr_read = cntr;
		refs = 0;
		if (map->pub && map->pub->events && e->iov_count == 1)
			map->pub->events(map->pub, key, mr_events(e));
	}
	weft_unlock(&map->lock);

	while (refs--)
		util_cntr_mr_put(cntr);
	return ret;
}

void util_mr_map_count(struct util_mr_map *map, const struct fi_rma_iov *rma,
		       size_t n, uint64_t events)
{
	struct util_mr_entry *e;
	struct util_cntr *w, *r;
	size_t i, j;

	weft_lock(&map->lock);
	for (i = 0; i < n; i++) {
		if (!rma[i].len)
			continue; /* no byte: nothing shown or changed */
		for (j = 0; j < i; j++)
			if (rma[j].len && rma[j].key == rma[i].key)
				break;
		if (j < i)
			continue; /* this registration counted already */
		e = mr_find(map, rma[i].key);
		if (!e)
			continue;
		w = events & FI_REMOTE_WRITE ? e->cntr_write : NULL;
		r = events & FI_REMOTE_READ ? e->cntr_read : NULL;
		if (w)
			util_cntr_inc(w);
		if (r && r != w)
			util_cntr_inc(r);
	}
	weft_unlock(&map->lock);
}

void *util_mr_map_lookup(struct util_mr_map *map, uint64_t key)
{
	struct util_mr_entry *e;
	void *owner;

	weft_lock(&map->lock);
	e = mr_find(map, key);
	owner = e ? e->owner : NULL;
	weft_unlock(&map->lock);
	return owner;
}

/* Lock held.  See util_mr_map_verify_iov. */
static int mr_verify_locked(struct util_mr_map *map, uint64_t key,
			    uint64_t addr, size_t len, uint64_t access,
			    struct iovec *iov, size_t *iov_count)
{
	struct util_mr_entry *e = mr_find(map, key);
	uint64_t off, left = len, seg, take;
	size_t i, n = 0;

	if (!e)
		return -FI_ENOKEY;
	if ((e->access & access) != access || (access & ~UTIL_MR_ACCESS))
		return -FI_EACCES;
	/* off <= e->len and len <= e->len - off, without computing addr + len */
	if (addr < e->base)
		return -FI_EINVAL;
	off = addr - e->base;
	if (off > e->len || (uint64_t)len > e->len - off)
		return -FI_EINVAL;

	for (i = 0; i < e->iov_count && left; i++) {
		seg = e->iov[i].iov_len;
		if (off >= seg) {
			off -= seg;
			continue;
		}
		if (n == *iov_count)
			return -FI_ETOOSMALL;
		take = WEFT_MIN(seg - off, left);
		iov[n].iov_base = (char *)e->iov[i].iov_base + off;
		iov[n].iov_len = (size_t)take;
		n++;
		left -= take;
		off = 0;
	}
	*iov_count = n;
	return 0;
}

int util_mr_map_verify_iov(struct util_mr_map *map, uint64_t key,
			   uint64_t addr, size_t len, uint64_t access,
			   struct iovec *iov, size_t *iov_count)
{
	int ret;

	if (!iov_count || (*iov_count && !iov))
		return -FI_EINVAL;
	weft_lock(&map->lock);
	ret = mr_verify_locked(map, key, addr, len, access, iov, iov_count);
	weft_unlock(&map->lock);
	return ret;
}

size_t util_mr_map_commit(struct util_mr_map *map,
			  const struct fi_rma_iov *rma, size_t count)
{
	struct iovec iov[UTIL_MR_COMMIT_IOV];
	size_t i, n, total = 0;

	weft_lock(&map->lock);
	for (i = 0; i < count; i++) {
		struct util_mr_entry *e = mr_find(map, rma[i].key);
		int ret;

		n = UTIL_MR_COMMIT_IOV;
		if (!e || !(e->access & FI_RMA_PMEM) || !rma[i].len)
			continue;
		ret = mr_verify_locked(map, rma[i].key, rma[i].addr,
				       rma[i].len, 0, iov, &n);
		if (ret == -FI_ETOOSMALL) {
			/* More pieces than iov holds: all of them, which
			 * holds the range. */
			util_pmem_flush(map->prov, e->iov, e->iov_count);
		} else if (!ret) {
			util_pmem_flush(map->prov, iov, n);
		} else {
			continue;
		}
		total += rma[i].len;
	}
	weft_unlock(&map->lock);
	return total;
}

/* Local address of byte `off` of a registration (off <= e->len). */
static void *mr_point(const struct util_mr_entry *e, uint64_t off)
{
	size_t i;

	for (i = 0; i < e->iov_count; i++) {
		if (off < e->iov[i].iov_len)
			return (char *)e->iov[i].iov_base + off;
		off -= e->iov[i].iov_len;
	}
	return (char *)e->iov[e->iov_count - 1].iov_base +
	       e->iov[e->iov_count - 1].iov_len;
}

int util_mr_map_verify(struct util_mr_map *map, uint64_t key, uint64_t addr,
		       size_t len, uint64_t access, void **local)
{
	struct iovec iov;
	size_t n = 1;
	int ret;

	if (!local)
		return -FI_EINVAL;
	weft_lock(&map->lock);
	ret = mr_verify_locked(map, key, addr, len, access, &iov, &n);
	if (!ret && !n) {
		/* len 0: where the range would start, inside or at the end */
		struct util_mr_entry *e = mr_find(map, key);

		iov.iov_base = mr_point(e, addr - e->base);
	}
	weft_unlock(&map->lock);
	if (!ret)
		*local = iov.iov_base;
	return ret;
}

/* ---- the MR object ----------------------------------------------------- */

static int util_mr_close(struct fid *fid)
{
	struct util_mr *mr = container_of(fid, struct util_mr, mr_fid.fid);
	int ret;

	ret = mr->access & UTIL_MR_REMOTE_ACCESS ?
		      util_mr_map_remove(mr->map, mr->mr_fid.key) :
		      0;
	if (ret)
		FI_WARN(mr->domain->prov, FI_LOG_MR,
			"closing MR: key %#llx was not in the map\n",
			(unsigned long long)mr->mr_fid.key);
	util_domain_put(mr->domain);
	free(mr);
	return 0;
}

/*
 * fi_mr_bind: a counter of the same domain, for FI_REMOTE_WRITE and/or
 * FI_REMOTE_READ (fi_mr(3)).  Registrations here are the domain's, not an
 * endpoint's (no FI_MR_ENDPOINT), so nothing else binds.
 */
static int util_mr_bind(struct fid *fid, struct fid *bfid, uint64_t flags)
{
	struct util_mr *mr = container_of(fid, struct util_mr, mr_fid.fid);
	struct util_cntr *cntr;
	int ret;

	if (!bfid || bfid->fclass != FI_CLASS_CNTR)
		return weft_no_bind(fid, bfid, flags);
	if (!flags || (flags & ~UTIL_MR_CNTR_EVENTS)) {
		FI_WARN(mr->domain->prov, FI_LOG_MR,
			"fi_mr_bind of a counter: flags %#llx; a registration "
			"counts FI_REMOTE_WRITE and FI_REMOTE_READ only\n",
			(unsigned long long)flags);
		return -FI_EBADFLAGS;
	}
	cntr = util_cntr_of(container_of(bfid, struct fid_cntr, fid));
	if (cntr->domain != mr->domain) {
		FI_WARN(mr->domain->prov, FI_LOG_MR,
			"fi_mr_bind: the counter belongs to another domain\n");
		return -FI_EINVAL;
	}
	ret = util_mr_map_bind_cntr(mr->map, mr->mr_fid.key, cntr, flags);
	if (ret == -FI_EALREADY)
		FI_WARN(mr->domain->prov, FI_LOG_MR,
			"fi_mr_bind: key %#llx counts that event into a "
			"counter already\n",
			(unsigned long long)mr->mr_fid.key);
	return ret;
}

static int util_mr_control(struct fid *fid, int command, void *arg)
{
	/* fi_mr_enable: a util MR is usable as soon as it is registered. */
	return command == FI_ENABLE ? 0 : -FI_ENOSYS;
}

static const struct fi_ops util_mr_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = util_mr_close,
	.bind = util_mr_bind,
	.control = util_mr_control,
	.ops_open = weft_no_ops_open,
	.tostr = weft_no_tostr,
	.ops_set = weft_no_ops_set,
};

int util_mr_regattr(struct util_domain *domain, struct util_mr_map *map,
		    const struct fi_mr_attr *attr, uint64_t flags,
		    struct fid_mr **mr_fid)
{
	struct fi_mr_attr pmem_attr;
	struct fi_eq_entry entry;
	struct util_mr *mr;
	int ret;

	if (!domain || !map || !attr || !mr_fid)
		return -FI_EINVAL;
	if (flags & ~UTIL_MR_FLAGS) {
		FI_WARN(domain->prov, FI_LOG_MR, "unknown MR flags %#llx\n",
			(unsigned long long)(flags & ~UTIL_MR_FLAGS));
		return -FI_EBADFLAGS;
	}
	if (attr->iface != FI_HMEM_SYSTEM) {
		FI_WARN(domain->prov, FI_LOG_MR,
			"only host memory can be registered\n");
		return -FI_ENOSYS;
	}
	if (!attr->iov_count || attr->iov_count > map->iov_limit)
		return -FI_EINVAL;

	mr = calloc(1, sizeof(*mr) + attr->iov_count * sizeof(mr->iov[0]));
	if (!mr)
		return -FI_ENOMEM;
	mr->mr_fid.fid.fclass = FI_CLASS_MR;
	mr->mr_fid.fid.context = attr->context;
	mr->mr_fid.fid.ops = (struct fi_ops *)&util_mr_fi_ops;
	mr->mr_fid.mem_desc = mr;
	mr->domain = domain;
	mr->map = map;
	mr->access = attr->access;
	mr->flags = flags;
	mr->iface = attr->iface;
	mr->iov_count = attr->iov_count;
	memcpy(mr->iov, attr->mr_iov, attr->iov_count * sizeof(mr->iov[0]));
	/* The flag rides in the entry's access (UTIL_MR_ACCESS). */
	if (flags & FI_RMA_PMEM) {
		pmem_attr = *attr;
		pmem_attr.access |= FI_RMA_PMEM;
		attr = &pmem_attr;
	}

	/*
	 * A key is for peers: a registration they cannot reach takes none
	 * (FI_KEY_NOTAVAIL), so it cannot collide with one they can, and a
	 * requested key stays free.  Clients register every local buffer
	 * with requested key 0 (aws-ofi-nccl without FI_RMA); libfabric does
	 * the same from 2.2 on.
	 */
	if (attr->access & UTIL_MR_REMOTE_ACCESS) {
		ret = util_mr_map_insert(map, attr, mr, &mr->mr_fid.key);
		if (ret)
			goto err_free_mr;
	} else {
		ret = util_mr_map_check(map, attr);
		if (ret)
			goto err_free_mr;
		mr->mr_fid.key = FI_KEY_NOTAVAIL;
	}
	util_domain_get(domain);
	*mr_fid = &mr->mr_fid;

	if (domain->eq && (domain->eq_flags & FI_REG_MR)) {
		memset(&entry, 0, sizeof(entry));
		entry.fid = &mr->mr_fid.fid;
		entry.context = attr->context;
		if (fi_eq_write(domain->eq, FI_MR_COMPLETE, &entry,
				sizeof(entry), 0) < 0)
			FI_WARN(domain->prov, FI_LOG_MR,
				"cannot write FI_MR_COMPLETE\n");
	}
	return 0;

err_free_mr:
	free(mr);
	return ret;
}

int util_mr_regv(struct util_domain *domain, struct util_mr_map *map,
		 const struct iovec *iov, size_t count, uint64_t access,
		 uint64_t offset, uint64_t requested_key, uint64_t flags,
		 struct fid_mr **mr_fid, void *context)
{
	struct fi_mr_attr attr = {
		.mr_iov = iov,
		.iov_count = count,
		.access = access,
		.offset = offset,
		.requested_key = requested_key,
		.context = context,
		.iface = FI_HMEM_SYSTEM,
	};

	if (count && !iov)
		return -FI_EINVAL;
	return util_mr_regattr(domain, map, &attr, flags, mr_fid);
}

int util_mr_reg(struct util_domain *domain, struct util_mr_map *map,
		const void *buf, size_t len, uint64_t access, uint64_t offset,
		uint64_t requested_key, uint64_t flags, struct fid_mr **mr_fid,
		void *context)
{
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };

	return util_mr_regv(domain, map, &iov, 1, access, offset,
			    requested_key, flags, mr_fid, context);
}

/* ---- domains whose registrations are a util_mr_map ---------------------- */

int util_mr_domain_init(struct util_mr_domain *domain,
			struct util_fabric *fabric, const struct fi_info *info,
			void *context)
{
	int ret;

	ret = util_domain_init(&domain->util, fabric, info, context);
	if (ret)
		return ret;
	/* Targets look registrations up from their progress threads. */
	ret = util_mr_map_init(&domain->mr_map, fabric->prov,
			       info->domain_attr->mr_mode, 0,
			       util_domain_progress_needs_lock(&domain->util));
	if (ret) {
		util_domain_fini(&domain->util);
		return ret;
	}
	domain->util.domain_fid.fid.ops = &util_mr_domain_fi_ops;
	domain->util.domain_fid.mr = &util_mr_domain_mr_ops;
	return 0;
}

int util_mr_domain_open(const struct util_prov *uprov,
			struct fid_fabric *fabric_fid, struct fi_info *info,
			struct fi_ops_domain *ops,
			struct fid_domain **domain_fid, void *context)
{
	struct util_fabric *fabric =
		container_of(fabric_fid, struct util_fabric, fabric_fid);
	const char *name = uprov->info->domain_attr->name;
	struct util_mr_domain *domain;
	int ret;

	if (!info || !info->domain_attr)
		return -FI_EINVAL;
	if (info->domain_attr->name && name &&
	    strcmp(info->domain_attr->name, name))
		return -FI_EINVAL;
	ret = util_prov_check_domain(uprov, info);
	if (ret)
		return ret;
	domain = calloc(1, sizeof(*domain));
	if (!domain)
		return -FI_ENOMEM;
	ret = util_mr_domain_init(domain, fabric, info, context);
	if (ret) {
		free(domain);
		return ret;
	}
	domain->util.domain_fid.ops = ops;
	*domain_fid = &domain->util.domain_fid;
	return 0;
}

int util_mr_domain_close(struct fid *fid)
{
	struct util_mr_domain *domain =
		container_of(fid, struct util_mr_domain, util.domain_fid.fid);
	int ret;

	ret = util_domain_fini(&domain->util);
	if (ret)
		return ret;
	util_mr_map_fini(&domain->mr_map);
	free(domain);
	return 0;
}

static int mr_domain_reg(struct fid *fid, const void *buf, size_t len,
			 uint64_t access, uint64_t offset,
			 uint64_t requested_key, uint64_t flags,
			 struct fid_mr **mr, void *context)
{
	struct util_mr_domain *d =
		container_of(fid, struct util_mr_domain, util.domain_fid.fid);

	return util_mr_reg(&d->util, &d->mr_map, buf, len, access, offset,
			   requested_key, flags, mr, context);
}

static int mr_domain_regv(struct fid *fid, const struct iovec *iov,
			  size_t count, uint64_t access, uint64_t offset,
			  uint64_t requested_key, uint64_t flags,
			  struct fid_mr **mr, void *context)
{
	struct util_mr_domain *d =
		container_of(fid, struct util_mr_domain, util.domain_fid.fid);

	return util_mr_regv(&d->util, &d->mr_map, iov, count, access, offset,
			    requested_key, flags, mr, context);
}

static int mr_domain_regattr(struct fid *fid, const struct fi_mr_attr *attr,
			     uint64_t flags, struct fid_mr **mr)
{
	struct util_mr_domain *d =
		container_of(fid, struct util_mr_domain, util.domain_fid.fid);

	return util_mr_regattr(&d->util, &d->mr_map, attr, flags, mr);
}

struct fi_ops_mr util_mr_domain_mr_ops = {
	.size = sizeof(struct fi_ops_mr),
	.reg = mr_domain_reg,
	.regv = mr_domain_regv,
	.regattr = mr_domain_regattr,
};

struct fi_ops util_mr_domain_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = util_mr_domain_close,
	.bind = util_domain_bind,
	.control = util_domain_control,
	.ops_open = weft_no_ops_open,
	.tostr = weft_no_tostr,
	.ops_set = weft_no_ops_set,
};
