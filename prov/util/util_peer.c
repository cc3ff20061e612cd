/* SPDX-License-Identifier: BSD-2-Clause */
/* The peer map (weft/util_peer.h). */
#include "weft/util_peer.h"

#include <stdlib.h>
#include <string.h>

static uint64_t addr_hash(const void *addr, size_t len, uint32_t ctx)
{
	const unsigned char *p = addr;
	uint64_t h = 0xcbf29ce484222325ULL; /* FNV-1a */
	size_t i;

	for (i = 0; i < len; i++) {
		h ^= p[i];
		h *= 0x100000001b3ULL;
	}
	return h ^ ((uint64_t)ctx * 0x9e3779b97f4a7c15ULL);
}

int util_peer_map_init(struct util_peer_map *map,
		       const struct util_peer_map_attr *attr)
{
	memset(map, 0, sizeof(*map));
	map->attr = *attr;
	if (map->attr.peer_size < sizeof(struct util_peer))
		map->attr.peer_size = sizeof(struct util_peer);
	dlist_init(&map->list);
	return 0;
}

void util_peer_map_fini(struct util_peer_map *map)
{
	struct dlist_entry *e, *tmp;

	dlist_foreach_safe(&map->list, e, tmp) {
		struct util_peer *p = container_of(e, struct util_peer, entry);

		if (map->attr.peer_fini)
			map->attr.peer_fini(map->attr.ctx, p);
		free(p->addr);
		free(p);
	}
	dlist_init(&map->list);
	free(map->by_index);
	free(map->bucket);
	for (size_t i = 0; i < map->nctx_tab; i++)
		free(map->ctx_tab[i].by_index);
	free(map->ctx_tab);
	map->ctx_tab = NULL;
	map->nctx_tab = 0;
	map->by_index = NULL;
	map->bucket = NULL;
	map->nindex = map->nbucket = map->count = 0;
	map->fixed = NULL;
}

struct util_peer *util_peer_find(struct util_peer_map *map, const void *addr,
				 uint32_t ctx)
{
	uint64_t h;
	struct util_peer *p;

	if (!map->nbucket)
		return NULL;
	h = addr_hash(addr, map->attr.addr_len, ctx);
	for (p = map->bucket[h & (map->nbucket - 1)]; p; p = p->hash_next)
		if (p->hash == h && p->ctx == ctx &&
		    !memcmp(p->addr, addr, map->attr.addr_len))
			return p;
	return NULL;
}

static int grow_buckets(struct util_peer_map *map)
{
	size_t n = map->nbucket ? map->nbucket * 2 : 64, i;
	struct util_peer **b = calloc(n, sizeof(*b));

	if (!b)
		return -FI_ENOMEM;
	for (i = 0; i < map->nbucket; i++) {
		struct util_peer *p = map->bucket[i], *next;

		for (; p; p = next) {
			next = p->hash_next;
			p->hash_next = b[p->hash & (n - 1)];
			b[p->hash & (n - 1)] = p;
		}
	}
	free(map->bucket);
	map->bucket = b;
	map->nbucket = n;
	return 0;
}

static int peer_make(struct util_peer_map *map, const void *addr,
		     uint32_t ctx, fi_addr_t fi_addr, uint64_t serial,
		     struct util_peer **out)
{
	struct util_peer *p;
	size_t i;
	int ret;

	if (map->count + 1 > map->nbucket) {
		ret = grow_buckets(map);
		if (ret)
			return ret;
	}
	p = calloc(1, map->attr.peer_size);
	if (!p)
		return -FI_ENOMEM;
	p->addr = malloc(map->attr.addr_len ? map->attr.addr_len : 1);
	if (!p->addr) {
		free(p);
		return -FI_ENOMEM;
	}
	memcpy(p->addr, addr, map->attr.addr_len);
	p->hash = addr_hash(addr, map->attr.addr_len, ctx);
	p->ctx = ctx;
	p->fi_addr = fi_addr;
	p->serial = serial;
	dlist_init(&p->queued);
	dlist_init(&p->blocked);
	if (map->attr.peer_init) {
		ret = map->attr.peer_init(map->attr.ctx, p);
		if (ret) {
			free(p->addr);
			free(p);
			return ret;
		}
	}
	i = p->hash & (map->nbucket - 1);
	p->hash_next = map->bucket[i];
	map->bucket[i] = p;
	dlist_insert_tail(&p->entry, &map->list);
	map->count++;
	*out = p;
	return 0;
}

/* The cache of context ctx's peers, by AV index (grown to hold idx). */
static struct util_peer_cache *cache_of(struct util_peer_map *map,
					uint32_t ctx, uint32_t idx)
{
	struct util_peer_cache **tab = &map->by_index;
	size_t *ntab = &map->nindex;

	if (ctx) {
		if (ctx > map->nctx_tab) {
			struct util_peer_ctx_tab *t;
			size_t n = WEFT_MAX((size_t)ctx, map->nctx_tab * 2);

			t = realloc(map->ctx_tab, n * sizeof(*t));
			if (!t)
				return NULL;
			memset(t + map->nctx_tab, 0,
			       (n - map->nctx_tab) * sizeof(*t));
			map->ctx_tab = t;
			map->nctx_tab = n;
		}
		tab = &map->ctx_tab[ctx - 1].by_index;
		ntab = &map->ctx_tab[ctx - 1].nindex;
	}
	if (idx >= *ntab) {
		size_t n = WEFT_MAX((size_t)idx + 1, *ntab * 2);
		struct util_peer_cache *c;

		c = realloc(*tab, n * sizeof(*c));
		if (!c)
			return NULL;
		memset(c + *ntab, 0, (n - *ntab) * sizeof(*c));
		*tab = c;
		*ntab = n;
	}
	return &(*tab)[idx];
}

struct util_peer *util_peer_cached_ctx(struct util_peer_map *map,
				       fi_addr_t dest)
{
	struct util_av_slot *slot = util_av_slot_get(map->av, dest);
	uint32_t ctx = util_peer_ctx_of(map->av, dest);
	uint32_t idx = util_av_index(map->av, dest);
	struct util_peer_ctx_tab *t;

	if (!slot || !ctx || ctx > map->nctx_tab)
		return NULL;
	t = &map->ctx_tab[ctx - 1];
	if (idx < t->nindex && t->by_index[idx].serial == slot->serial)
		return t->by_index[idx].peer;
	return NULL;
}

int util_peer_get_slow(struct util_peer_map *map, fi_addr_t dest,
		       struct util_peer **out)
{
	struct util_av_slot *slot = util_av_slot_get(map->av, dest);
	uint32_t idx = util_av_index(map->av, dest);
	uint32_t ctx = util_peer_ctx_of(map->av, dest);
	const void *addr = util_av_addr(map->av, dest);
	struct util_peer_cache *c;
	struct util_peer *p;
	int ret;

	if (!slot || !addr)
		return -FI_EINVAL;
	c = cache_of(map, ctx, idx);
	if (!c)
		return -FI_ENOMEM;
	if (c->peer && c->serial == slot->serial) {
		*out = c->peer;
		return 0;
	}
	/* Completions name the endpoint, not its context. */
	dest &= map->av->addr_mask;
	p = util_peer_find(map, addr, ctx);
	if (p) {
		p->fi_addr = dest;
		p->serial = slot->serial;
		p->fresh = true;
	} else {
		ret = peer_make(map, addr, ctx, dest, slot->serial, &p);
		if (ret)
			return ret;
	}
	c->peer = p;
	c->serial = slot->serial;
	*out = p;
	return 0;
}

int util_peer_add(struct util_peer_map *map, const void *addr, uint32_t ctx,
		  struct util_peer **out)
{
	fi_addr_t fa = FI_ADDR_NOTAVAIL;
	struct util_av_slot *slot;
	struct util_peer *p = util_peer_find(map, addr, ctx);

	if (p) {
		*out = p;
		return 0;
	}
	if (map->av)
		fa = util_av_lookup_addr(map->av, addr);
	slot = map->av ? util_av_slot_get(map->av, fa) : NULL;
	return peer_make(map, addr, ctx, slot ? fa : FI_ADDR_NOTAVAIL,
			 slot ? slot->serial : 0, out);
}

fi_addr_t util_peer_src(struct util_peer_map *map, struct util_peer *peer)
{
	struct util_av_slot *slot;
	fi_addr_t fa;

	if (!map->av)
		return FI_ADDR_NOTAVAIL;
	if (peer->fi_addr != FI_ADDR_NOTAVAIL) {
		slot = util_av_slot_get(map->av, peer->fi_addr);
		if (weft_likely(slot && slot->serial == peer->serial))
			return peer->fi_addr;
	}
	/* The AV changed since: ask it again. */
	fa = util_av_lookup_addr(map->av, peer->addr);
	slot = util_av_slot_get(map->av, fa);
	peer->fi_addr = slot ? fa : FI_ADDR_NOTAVAIL;
	peer->serial = slot ? slot->serial : 0;
	return peer->fi_addr;
}
